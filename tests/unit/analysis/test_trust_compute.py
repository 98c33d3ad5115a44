"""Tensor-core kernels of 2023–2026, AMP advice only when it applies, AMD
architectures, SM efficiency on ROCm. Known answers by construction (tests/synth/compute.py)
plus the public samples that showed each problem."""

from __future__ import annotations

import re

import pytest

from tb_plugin.analysis.tensor_cores import (
    NOT_TENSOR_CORE,
    TENSOR_CORE_FAMILIES,
    TENSOR_CORE_KERNEL_MARKERS_LEGACY,
    uses_tensor_cores,
)


def tensor_core_family(kernel_name: str) -> str | None:
    """The family (a key of TENSOR_CORE_FAMILIES, or "legacy") a kernel name matches, or None: a test
    diagnostic (the package only asks :func:`uses_tensor_cores`)."""
    if re.search("|".join(f"(?:{p})" for p in NOT_TENSOR_CORE.values()), kernel_name):
        return None
    if any(m in kernel_name for m in TENSOR_CORE_KERNEL_MARKERS_LEGACY):
        return "legacy"
    for family, (pattern, _) in TENSOR_CORE_FAMILIES.items():
        if re.search(pattern, kernel_name, re.DOTALL):
            return family
    return None


# ---------------------------------------------------------------- item 1: tensor-core kernel names

#: family → real kernel names (from ../shared/samples where one exists, else spelled as the libraries do).
FAMILY_EXAMPLES = {
    "nvjet": [
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
        "nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_TNT",
        "nvjet_sm90_tst_128x128_64x4_1x2_h_bz_TNN",
    ],
    "xmma": [
        # hta/trace_diff (A100, TF32)
        "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_"
        "tensor16x8x8_execute_kernel__5x_cudnn",
        "sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cgasize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm120_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_execute_kernel__5x_cublas",
    ],
    "sm_arch_gemm": [
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
        "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, "
        "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative>>>>",
        "void deep_gemm::sm90_fp8_gemm_1d2d_impl<0u, 4096u, 7168u, 128u, 128u, 128u, 8u, 5u, 128u, 1u, false>()",
        "void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaFwdKernelTmaWarpspecialized<cute::tuple<"
        "cute::C<256>, cute::C<128>, cute::C<128> >>>(Params)",
    ],
    "tensorop": [
        # tracelens/h100
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
        "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
        "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_256x128x128_"
        "1x1x1_0_tnn_align32_o_vs32_2sm",
        "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x1x1_0_tnn_align8_warpspecialized",
    ],
    "mma_instruction": [
        "void gemm_kernel_wgmma<128, 256, 64, __nv_bfloat16>(Params)",
        "my_tcgen05_gemm_persistent_kernel",
        "fused_moe_kernel_imma_int8",
        "void marlin::Marlin<256, 4, 8, 8, 4, 8>(int4 const*, int4 const*, int4*, int4 const*, int, int, int, int)_mma",
    ],
    "block_scaled_fp8_fp4": [
        "void cublasLt::blockScaledGemm_MxE4m3_MxE4m3_bf16(Params)",
        "gemm_MxE2m1_MxE2m1_f32_kernel",
        "void scaled_mm_e4m3_e5m2_rowwise_gemm_kernel(Params)",
    ],
    "attention": [
        # tracelens/h100 (FlashAttention 2 in PyTorch), tracelens/mi300 (Triton on ROCm)
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
        "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
        "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
        "attn_fwd",
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
        "cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        "void flash::FlashAttnFwdSm90<Flash_fwd_kernel_traits>(Params)",
    ],
    "amd_tensile_mfma": [
        # hta/amd_trace (MI250), tracelens/mi300 (hipBLASLt)
        "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_"
        "GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA8_LPB8_LPM0_LRVW4_LWPMn1_MIAV0_MIWT1_1_MO40",
        "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_"
        "CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1",
        "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT",
        "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_GRVW8_GSU1_ISA90a",
    ],
    "amd_mfma": [
        "void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, 256, 128, 128, true, 4>",
        "_ZN5aiter24fmoe_bf16_g1u1_mfma_kernelEv",
    ],
    "miopen_xdlops": [
        "igemm_fwd_gtcx2_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x4x1_1x4x1x32_tb1x8x4x1_1x4x1x32",
        "igemm_bwd_gtcx3_nhwc_bf16_bx0_ex0_bt256x128x32_wt32x32x8_ws2x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x1x1_1x4x1x64",
    ],
    "amd_ck_xdl": [
        "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor>>",
        "ck::DeviceGemmXdlSplitKCShuffle<ck::half_t, ck::half_t, float>",
    ],
}

#: Kernels that are NOT on tensor cores although a naive substring test would say so.
NOT_TC_EXAMPLES = [
    "void at::native::batch_norm_collect_statistics_kernel<float, float, float, 512>(at::GenericPackedTensorAccessor)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::gamma_kernel_cuda(float)"
    "::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, gamma, at::detail::Array<char*, 2>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<comma_separated_functor>>(int)",
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda"
    "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}>>(int)",
    # an FP8 cast is not a GEMM
    "void at::native::vectorized_elementwise_kernel<4, at::native::float8_copy_kernel_cuda(at::TensorIteratorBase&)"
    "::{lambda(float)#1}, std::array<char*, 2ul> >(int, c10::Float8_e4m3fn)",
    # SIMT (FP32 pipes): cuBLAS ffma xmma, CUTLASS simt, classic sgemm, xformers FP32 attention for pre-Ampere
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
    "ampere_sgemm_128x64_nn",
    "volta_sgemm_128x64_nn",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm50(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm50>)",
    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<OpClassSimt>>>(Params)",
    "void at::native::foo_kernel<c10::TensorOptions>(int)",
    "void at::native::convert_kernel<float>(int)",
    # Triton kernels: the name does not say
    "triton_poi_fused_add_cos_sin_0",
    "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1_MAC",
    "void vllm::paged_attention_v1_kernel<unsigned short, unsigned short, 128, 16, 128>",
]


@pytest.mark.parametrize("family", sorted(TENSOR_CORE_FAMILIES))
def test_each_family_is_recognized(family):
    examples = FAMILY_EXAMPLES[family]
    assert examples, family
    for name in examples:
        assert uses_tensor_cores(name), name
        assert tensor_core_family(name) in (family, "legacy") or tensor_core_family(name) in TENSOR_CORE_FAMILIES, name


@pytest.mark.parametrize("family", sorted(TENSOR_CORE_FAMILIES))
def test_each_family_matches_on_its_own(family):
    """Every family pattern matches at least one of its examples by itself (no family is dead weight)."""
    import re

    pattern = TENSOR_CORE_FAMILIES[family][0]
    assert any(re.search(pattern, n) for n in FAMILY_EXAMPLES[family]), family


@pytest.mark.parametrize("name", NOT_TC_EXAMPLES)
def test_not_tensor_core(name):
    assert not uses_tensor_cores(name), (name, tensor_core_family(name))


def test_families_are_commented():
    for family, (pattern, comment) in TENSOR_CORE_FAMILIES.items():
        assert pattern and len(comment) > 20, family
    assert set(NOT_TENSOR_CORE) == {"simt", "fp32_attention_pre_ampere", "miopen_elementwise", "fp8_quantize"}


# ---------------------------------------------------------------- helpers


def _overview(doc, tmp_path, name="t.pt.trace.json"):
    from conftest import write_json

    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    trace = load_trace_file(str(write_json(tmp_path / name, doc)))
    return compute_overview(trace), trace


def _amp(ov):
    return [r for r in ov["recommendations"] if "mixed precision" in r]


# ---------------------------------------------------------------- item 2: AMP advice only when it applies


def test_bf16_nvjet_no_amp_and_known_tensor_core_share(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.bf16_nvjet(), tmp_path)
    (gpu,) = ov["gpus"]
    assert gpu["tensor_core_pct"] == pytest.approx(75.0)
    assert _amp(ov) == []


def test_fp8_blackwell_no_amp(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.fp8_blackwell(), tmp_path)
    assert ov["gpus"][0]["tensor_core_pct"] == pytest.approx(50.0)
    assert _amp(ov) == []


def test_fp32_sgemm_gets_amp_with_the_fp32_figure(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.fp32_sgemm(), tmp_path)
    assert ov["gpus"][0]["tensor_core_pct"] == 0.0
    (advice,) = _amp(ov)
    assert "300 µs" in advice and "compute capability 8.0" in advice and "tensor cores" in advice


@pytest.mark.parametrize(
    "types",
    [
        ["c10::BFloat16", "c10::BFloat16"],
        ["c10::Half", "c10::Half"],
        ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn"],
        None,
    ],
)
def test_no_amp_when_inputs_are_not_fp32(types, tmp_path):
    """A reduced-precision (or untyped) GEMM on a non-tensor-core kernel: AMP would change nothing."""
    from synth import compute as sc

    doc = sc.fp32_sgemm(mm_types=types or ["float", "float"])
    if types is None:
        for e in doc["traceEvents"]:
            e.get("args", {}).pop("Input type", None)
    ov, _ = _overview(doc, tmp_path)
    assert _amp(ov) == []


def test_no_amp_when_tensor_cores_already_run(tmp_path):
    """FP32 mm on sgemm, but another GEMM of the same GPU runs on tensor cores: silent."""
    from synth import compute as sc

    doc = sc.fp32_sgemm(device=sc.H100)
    doc["traceEvents"] += sc.bf16_nvjet()["traceEvents"][1:4]  # the BF16 mm, its launch and nvjet kernel
    for e in doc["traceEvents"][-3:]:
        e["ts"] += 2000
        if "correlation" in e.get("args", {}):
            e["args"]["correlation"] += 1000
        e["args"]["External id"] += 1000
    doc["traceEvents"][0]["dur"] = 3000
    ov, _ = _overview(doc, tmp_path)
    assert ov["gpus"][0]["tensor_core_pct"] > 0
    assert _amp(ov) == []


# ---------------------------------------------------------------- item 3: AMD architectures


def test_amd_device_reports_architecture_not_capability(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.rocm_geometry(), tmp_path)
    (gpu,) = ov["gpus"]
    assert gpu["id"] == 2 and gpu["name"] == "AMD Instinct MI300X VF"
    assert (gpu["vendor"], gpu["architecture"], gpu["compute_capability"]) == ("AMD", "gfx94x", None)


def test_amd_amp_advice_speaks_of_matrix_cores(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.fp32_sgemm(device=sc.MI300X, gemm=sc.TENSILE_MAC), tmp_path)
    (advice,) = _amp(ov)
    assert "matrix cores (architecture gfx94x)" in advice and "compute capability" not in advice


def test_amd_9_0_without_a_telling_name_stays_silent(tmp_path):
    """9.0 is gfx906 (no MFMA) or gfx908/gfx90a (MFMA): with the name "AMD Radeon Graphics" we cannot
    tell, so no advice (the old rule read 9.0 as a CUDA capability ≥ 7)."""
    from synth import compute as sc

    ov, _ = _overview(sc.fp32_sgemm(device=sc.MI250_GENERIC, gemm=sc.TENSILE_MAC), tmp_path)
    gpu = ov["gpus"][0]
    assert (gpu["vendor"], gpu["architecture"], gpu["compute_capability"]) == ("AMD", "gfx90x", None)
    assert _amp(ov) == []


@pytest.mark.corpus
def test_amd_samples(tmp_path):
    from conftest import sample

    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    mi300 = compute_overview(
        load_trace_file(str(sample("tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz")))
    )
    (gpu,) = mi300["gpus"]
    assert (gpu["vendor"], gpu["architecture"], gpu["compute_capability"]) == ("AMD", "gfx94x", None)
    assert gpu["tensor_core_pct"] > 50  # hipBLASLt MFMA GEMMs and Triton attention
    mi250 = compute_overview(load_trace_file(str(sample("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"))))
    (gpu,) = mi250["gpus"]
    assert (gpu["vendor"], gpu["architecture"], gpu["compute_capability"]) == ("AMD", "gfx90x", None)
    assert gpu["tensor_core_pct"] > 0  # Tensile MI16x16x1 GEMMs
    assert _amp(mi250) == []  # the old rule advised AMP here ("compute capability 9.0")


@pytest.mark.corpus
def test_nvidia_samples_keep_compute_capability():
    from conftest import sample

    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    ov = compute_overview(load_trace_file(str(sample("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"))))
    gpu = ov["gpus"][0]
    assert (gpu["vendor"], gpu["compute_capability"], gpu["architecture"]) == ("NVIDIA", "9.0", None)


# ---------------------------------------------------------------- item 4: SM efficiency on ROCm


def test_rocm_sm_efficiency_known_answer(tmp_path):
    from synth import compute as sc

    ov, _ = _overview(sc.rocm_geometry(), tmp_path)
    (gpu,) = ov["gpus"]
    assert gpu["sm_efficiency_pct"] == pytest.approx(sc.ROCM_SM_EFFICIENCY_PCT)
    assert gpu["kernel_us_without_geometry"] == pytest.approx(sc.ROCM_KERNEL_US_WITHOUT_GEOMETRY)


def test_rocm_kernel_blocks(tmp_path):
    """Work-item grids of hipExtModuleLaunchKernel are divided by the block; hipModuleLaunchKernel's are
    blocks already; a kernel without grid borrows its launch's; none at all is unknown (NaN)."""
    import numpy as np
    from synth import compute as sc

    from tb_plugin.trace.categories import Kind
    from tb_plugin.trace.geometry import kernel_blocks

    _, trace = _overview(sc.rocm_geometry(), tmp_path)
    rows = np.flatnonzero(trace.events.kind == Kind.KERNEL)
    rows = rows[np.argsort(trace.events.ts[rows])]
    blocks = kernel_blocks(trace)[rows]
    assert blocks[:3].tolist() == [200.0, 50.0, 25.0] and np.isnan(blocks[3])


def test_rocm_sm_efficiency_counter_leaves_out_unknown_time(tmp_path):
    from synth import compute as sc

    from tb_plugin.analysis.counters import counters

    _, trace = _overview(sc.rocm_geometry(), tmp_path)
    (sm,) = [c for c in counters(trace, 0.0, 1000.0, 10) if c["name"].endswith("Est. SM Efficiency")]
    assert sm["values"] == pytest.approx([0, 1, 1, 0, 0.5, 0.5, 0, 0.25, 0, 0])


@pytest.mark.corpus
def test_sm_efficiency_samples_before_after():
    """hta/amd_trace: kernels carry no grid (only their launches do): the old rule gave null; now
    every kernel's geometry is known. tracelens/mi300: the deviceProperties id (0) differs from the
    kernels' device (2): the old rule found no SM count and gave null."""
    from conftest import sample

    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    for rel in (
        "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    ):
        (gpu,) = compute_overview(load_trace_file(str(sample(rel))))["gpus"]
        assert gpu["sm_efficiency_pct"] is not None and 0 < gpu["sm_efficiency_pct"] <= gpu["utilization_pct"], rel
        assert gpu["kernel_us_without_geometry"] == 0.0, rel


def test_cli_report_labels_amd_architecture(tmp_path):
    import io

    from conftest import write_json
    from synth import compute as sc

    from tb_plugin.cli.report import run_report

    write_json(tmp_path / "logs" / "rocm" / "w.pt.trace.json", sc.rocm_geometry())
    write_json(tmp_path / "logs" / "a100" / "w.pt.trace.json", sc.fp32_sgemm())
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path / "logs"), None, False, False, out, err) == 0
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip().startswith("GPU ")]
    amd = next(ln for ln in lines if "MI300X" in ln)
    nvidia = next(ln for ln in lines if "A100" in ln)
    assert "(AMD, architecture gfx94x)" in amd and "compute capability" not in amd
    assert "leaves out 0.100 ms of kernel time without launch geometry" in amd and "matrix cores" in amd
    assert "(NVIDIA, compute capability 8.0)" in nvidia and "tensor cores 0.00%" in nvidia


def test_kernel_table_and_split_use_the_same_list(tmp_path):
    """The Kernels table's tensor_cores column and the tensor-core split read the one list."""
    from synth import compute as sc

    from tb_plugin.analysis.kernels import kernel_rows, tensor_core_split

    _, trace = _overview(sc.bf16_nvjet(), tmp_path)
    assert tensor_core_split(trace) == {"tensor_core_us": 300.0, "other_us": 100.0}
    rows = {r["name"]: r["tensor_cores"] for r in kernel_rows(trace)}
    assert rows == {sc.NVJET: True, sc.ELEMENTWISE: False}


def test_family_and_predicate_agree():
    names = [n for ns in FAMILY_EXAMPLES.values() for n in ns] + NOT_TC_EXAMPLES
    assert all(bool(tensor_core_family(n)) == uses_tensor_cores(n) for n in names)
