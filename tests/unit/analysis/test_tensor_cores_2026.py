"""Tensor cores on 2026 hardware: block-scaled MX/NV FP4/FP8 GEMMs (trtllm-gen), MIOpen XDLOPS
convolutions; not MIOpen's elementwise SubTensorOp nor FP8 quantize kernels; the share's denominator
(kernels launched inside any operator or record_function range); attention operators are eligible.
Known answers by construction (tests/synth/compute.py's builder, the kernel names as the libraries
spell them)."""

from __future__ import annotations

import pytest
from synth import compute as sc

from tb_plugin.analysis.tensor_cores import is_tensor_core_eligible_op, uses_tensor_cores

TRTLLM_MX_FP4 = (
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x512u2_s4_et128x8_m256x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100f"
)
TRTLLM_BF16_MX = (
    "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x8x256u2_s6_et128x8_m128x8x64_cga1x1x1_16dp256b_TN_transOut_schedS_sm100f"
)
TRTLLM_FP8 = "bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a"
MIOPEN_XDLOPS = [
    "igemm_fwd_gtcx2_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x4x1_1x4x1x32_tb1x8x4x1_1x4x1x32",
    "igemm_bwd_gtcx3_nhwc_bf16_bx0_ex0_bt256x128x32_wt32x32x8_ws2x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x1x1_1x4x1x64_mh",
    "igemm_wrw_gtcx_nchw_fp32_bx0_ex0_bt128x128x16_wt32x32x2_ws1x1_wr2x2_ta1x4x1x1_1x4x1x32_tb1x4x1x1_1x4x1x32",
    "gridwise_convolution_implicit_gemm_v4r4_xdlops_nchw_kcyx_nkhw",
]
SUBTENSOR_OP = "SubTensorOpWithScalar1d"
FP8_QUANTIZE = (
    "void fbgemm_gpu::_compute_FP8_quantize_cuda_kernel<float>(at::GenericPackedTensorAccessor<float const, "
    "1ul, at::RestrictPtrTraits, long>, int, int, float, float, float*)"
)
FP8_QPARAM = "void fbgemm_gpu::_get_FP8_qparam_cuda_kernel<float>(float const*, int, int, float*, bool)"


@pytest.mark.parametrize(
    "name",
    [
        TRTLLM_MX_FP4,
        TRTLLM_BF16_MX,
        TRTLLM_FP8,
        *MIOPEN_XDLOPS,
        "void fbgemm_gpu::f8f8bf16_rowwise_gemm<cutlass::float_e4m3_t>(Params)",
    ],
)
def test_2026_tensor_core_kernels(name):
    assert uses_tensor_cores(name)


@pytest.mark.parametrize(
    "name",
    [
        SUBTENSOR_OP,
        "SubTensorOpWithSubTensor2d",
        FP8_QUANTIZE,
        FP8_QPARAM,
        "igemm_fwd_gtc_nchw_fp32_bx0_ex1_bt128x128x16",  # MIOpen's non-XDLOPS igemm
        "naive_conv_fwd_nchw_float_double_float",
    ],
)
def test_2026_not_tensor_core(name):
    assert not uses_tensor_cores(name)


@pytest.mark.parametrize(
    "op",
    [
        "aten::_cudnn_attention_backward",
        "aten::_cudnn_attention_forward",
        "aten::_flash_attention_forward",
        "aten::_flash_attention_backward",
        "aten::_efficient_attention_forward",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "vllm::unified_attention_with_output",
        "ScaledDotProductFlashAttentionBackward0",
        "autograd::engine::evaluate_function: ScaledDotProductCudnnAttentionBackward0",
    ],
)
def test_attention_ops_are_tensor_core_eligible(op):
    assert is_tensor_core_eligible_op(op)


@pytest.mark.parametrize("op", ["aten::softmax", "aten::_softmax_backward_data", "aten::layer_norm"])
def test_other_ops_are_not_eligible(op):
    assert not is_tensor_core_eligible_op(op)


def _overview(doc, tmp_path):
    from conftest import write_json

    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    return compute_overview(load_trace_file(str(write_json(tmp_path / "t.pt.trace.json", doc))))


def _kernel_rows(doc, tmp_path):
    from conftest import write_json

    from tb_plugin.analysis.kernels import kernel_rows
    from tb_plugin.registry.parse import load_trace_file

    return kernel_rows(load_trace_file(str(write_json(tmp_path / "k.pt.trace.json", doc))), "kernel_op_config")


def b200_mx_step() -> dict:
    """B200, one 1000 µs step: two trtllm-gen block-scaled GEMMs (300 + 180 µs, MX FP4 weights) under
    ``aten::mm``-like ops, an FP8 quantize kernel (100 µs) and an elementwise add (420 µs). Tensor-core
    share (300 + 180) / 1000 = 48 %."""
    return sc.build(
        sc.B200,
        [
            Op("trtllm::fp4_bmm", 10, 20, [sc.BF16, "c10::Float4_e2m1fn_x2"], [K(TRTLLM_MX_FP4, 20, 300)]),
            Op("trtllm::fp4_bmm", 40, 20, [sc.BF16, "c10::Float4_e2m1fn_x2"], [K(TRTLLM_BF16_MX, 320, 180)]),
            Op("fbgemm::quantize_fp8_per_tensor", 70, 20, [sc.BF16], [K(FP8_QUANTIZE, 500, 100)]),
            Op("aten::add", 100, 20, [sc.BF16, sc.BF16, "Scalar"], [K(sc.ELEMENTWISE, 600, 420)]),
        ],
        step_us=1100.0,
    )


K, Op = sc.Kernel, sc.Op


def test_blackwell_block_scaled_share(tmp_path):
    ov = _overview(b200_mx_step(), tmp_path)
    assert ov["gpus"][0]["tensor_core_pct"] == pytest.approx(48.0)


def mi300_resnet_step() -> dict:
    """MI300X ResNet-like step: an XDLOPS forward conv (166 µs) and backward conv (100 µs), MIOpen's
    SubTensorOp elementwise (200 µs) and batch-norm/other kernels (534 µs): share 266 / 1000 = 26.6 %."""
    return sc.build(
        sc.MI300X,
        [
            Op("aten::cudnn_convolution", 10, 10, [sc.FP16, sc.FP16], [K(MIOPEN_XDLOPS[0], 20, 166)]),
            Op("aten::convolution_backward", 30, 10, [sc.FP16, sc.FP16], [K(MIOPEN_XDLOPS[1], 200, 100)]),
            Op("aten::add_", 50, 10, [sc.FP16, sc.FP16, "Scalar"], [K(SUBTENSOR_OP, 300, 200)]),
            Op("aten::native_batch_norm", 70, 10, [sc.FP16], [K("MIOpenBatchNormFwdTrainSpatial", 500, 534)]),
        ],
        kernel_device=2,
        step_us=1100.0,
        top={"roctracer_version": 4},
    )


def test_miopen_xdlops_share(tmp_path):
    ov = _overview(mi300_resnet_step(), tmp_path)
    (gpu,) = ov["gpus"]
    assert gpu["vendor"] == "AMD" and gpu["tensor_core_pct"] == pytest.approx(26.6)


def test_denominator_is_every_kernel_launched_inside_a_range(tmp_path):
    """The share's denominator: kernels launched inside an operator or a record_function range
    (``ProfilerStep#N`` included). Here one 420 µs elementwise kernel is launched from a user annotation
    only, and a 500 µs GEMM is launched before the first step (inside no range): the first counts, the
    second does not. Share = 480 ÷ (480 + 100 + 420) = 48 %."""
    doc = b200_mx_step()
    events = doc["traceEvents"]
    for e in events:
        if e["name"] == "aten::add":
            e["cat"] = "user_annotation"
            e["name"] = "## my_region ##"
    events += [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": -900,
            "dur": 1,
            "args": {"correlation": 9999},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": sc.NVJET,
            "pid": 0,
            "tid": 7,
            "ts": -800,
            "dur": 500,
            "args": {"device": 0, "stream": 7, "correlation": 9999},
        },
    ]
    assert _overview(doc, tmp_path)["gpus"][0]["tensor_core_pct"] == pytest.approx(48.0)


def test_fp32_attention_counts_as_eligible_in_the_kernel_table(tmp_path):
    doc = sc.build(
        sc.H100,
        [
            Op(
                "aten::_scaled_dot_product_efficient_attention",
                10,
                20,
                [sc.FP32, sc.FP32, sc.FP32],
                [K("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float>)", 20, 300)],
            ),
        ],
    )
    (row,) = [r for r in _kernel_rows(doc, tmp_path) if "fmha" in r["name"]]
    assert row["tc_eligible"] is True
