"""Issue 14, items 1–4: tensor-core kernels of 2023–2026, AMP advice only when it applies, AMD
architectures, SM efficiency on ROCm. Known answers by construction (tb_plugin/synth_compute.py)
plus the public samples that showed each problem."""

from __future__ import annotations

import pytest

from tb_plugin.analysis.tensor_cores import (
    NOT_TENSOR_CORE,
    TENSOR_CORE_FAMILIES,
    tensor_core_family,
    uses_tensor_cores,
)

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
    assert set(NOT_TENSOR_CORE) == {"simt", "fp32_attention_pre_ampere"}
