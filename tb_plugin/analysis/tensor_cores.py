"""Which kernels use tensor cores (NVIDIA) or matrix cores (AMD MFMA/WMMA), and which operators could.

A kernel uses tensor cores when its name matches one of the families of :data:`TENSOR_CORE_FAMILIES`
and none of :data:`NOT_TENSOR_CORE`. Matching is token-aware: a marker such as ``mma`` counts only
where it is not part of a longer word (``gamma``, ``comma``, ``MmaPipelined`` of a SIMT CUTLASS
kernel do not match). The first family is torch-tb-profiler's own substring list, kept verbatim so
that its Volta/Turing samples read the same; the others are ours (we differ: the incumbent knows
no kernel newer than 2021, so it reads 0 % on Ampere/Hopper/Blackwell/ROCm GEMMs).
"""

from __future__ import annotations

import re

import numpy as np

#: torch-tb-profiler's list (Volta/Turing cuDNN and cuBLAS names), plain substrings.
TENSOR_CORE_KERNEL_MARKERS_LEGACY = (
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
)

# ``(?<![A-Za-z])`` / ``(?![A-Za-z])``: the marker is a token of its own, delimited by ``_``, digits,
# ``:``, ``<``… or the ends of the name, never by letters.
_B, _E = r"(?<![A-Za-z])", r"(?![A-Za-z])"
#: What a GEMM/attention kernel calls itself (used where a marker alone is too weak, e.g. ``e4m3``).
#: ``gemm`` inside ``fbgemm`` (FBGEMM's namespace, its FP8 quantize kernels among others) is not a GEMM word;
#: ``bmm`` is one as a token of its own (TensorRT-LLM's trtllm-gen ``bmm_MxE4m3_MxE2m1…_sm100f``).
_MATMUL_WORD = (
    r"(?:(?<!fb)gemm|GEMM|Gemm|matmul|Matmul|(?<![A-Za-z])(?:wg|h|i|x|u)?mma(?![A-Za-z])|MMA"
    r"|(?<![A-Za-z])bmm(?![A-Za-z])|[Cc]onv(?!ert|ex)"
    r"|fprop|dgrad|wgrad|fmha|Fmha|attn|Attn|attention|Attention)"
)
#: A Hopper/Blackwell architecture token: sm90, sm90a, sm_100, and CamelCase Sm100 (Sm100FmhaFwdKernel,
#: MainloopSm90TmaGmmaWarpSpecialized).
#: The ``a``/``f`` suffixes are the arch-specific and family-specific targets (sm90a, sm100a, sm100f).
_SM_HOPPER_PLUS = rf"(?:{_B}[Ss]m|(?<=[a-z])Sm)_?(?:9\d|1[0-2]\d)[af]?(?![0-9a-z])"

#: family name → (pattern, comment). One list, one place; each family has a test in tests/unit/analysis/test_trust_compute.py.
TENSOR_CORE_FAMILIES: dict[str, tuple[str, str]] = {
    "nvjet": (
        rf"{_B}nvjet_",
        "cuBLASLt's JIT GEMMs on Hopper/Blackwell (nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT, nvjet_sm90_…)",
    ),
    "xmma": (
        rf"{_B}sm\d{{2,3}}a?_xmma_",
        "cuBLAS/cuDNN xmma kernels of any architecture (sm80_xmma_…, sm90_xmma_gemm_bf16bf16…, sm100_xmma_…)",
    ),
    "sm_arch_gemm": (
        rf"^(?=.*{_SM_HOPPER_PLUS})(?=.*{_MATMUL_WORD})",
        "CUTLASS/cuBLAS/DeepGEMM GEMMs and attention built for Hopper (sm90) or Blackwell (sm100, sm120): "
        "cutlass3x_sm90_…gemm, Sm100FmhaFwdKernel, deep_gemm::sm90_fp8_gemm…",
    ),
    "tensorop": (
        r"tensorop|TensorOp(?!tions)",
        "CUTLASS tensor-op kernels (cutlass_80_tensorop_…, cutlass3x_sm100_bstensorop_…, OpClassTensorOp)",
    ),
    "mma_instruction": (
        rf"{_B}(?:wgmma|hgmma|hmma|imma|dmma|qmma|omma|mma|wmma|umma|tcgen05|utcmma){_E}",
        "names that spell the tensor-core instruction: wgmma (Hopper), tcgen05/umma (Blackwell), "
        "hmma/imma/mma (Volta–Ada), wmma (warp MMA, also AMD RDNA3)",
    ),
    "block_scaled_fp8_fp4": (
        rf"^(?=.*(?i:{_B}(?:mx)?(?:u?e4m3|e5m2|e2m1|ue8m0|nvf4|mxf4|mxf8|fp4|fp8)(?:fn|fnuz)?(?![A-Za-z])))"
        rf"(?=.*{_MATMUL_WORD})",
        "FP8/FP4 (block-scaled MxE4m3, MxE2m1, ue8m0, e4m3, e5m2) GEMMs and attention: only with a "
        "GEMM/attention word, so an FP8 cast kernel is not one",
    ),
    "attention": (
        r"(?i:fmha|flash_?(?:fwd|bwd|attn)|flashattn|flash_attention)|(?<![A-Za-z])_?attn_(?:fwd|bwd)",
        "flash/fused attention: fmha_* (xformers, cuDNN, AITER), flash_fwd*/flash_bwd* (FlashAttention), "
        "FlashAttnFwdSm90, Triton attn_fwd/attn_bwd (ROCm)",
    ),
    "amd_tensile_mfma": (
        r"^Cijk_.*(?:_MI\d+x\d+x\d+|_MFMA)",
        "AMD Tensile/hipBLASLt GEMMs that use MFMA: Cijk_… with MI16x16x1, MI32x32x8… in the name",
    ),
    "amd_mfma": (
        rf"(?i:{_B}mfma)",
        "AMD kernels named after MFMA (paged_attention_ll4mi_QKV_mfma16_kernel, CK mfma kernels)",
    ),
    "miopen_xdlops": (
        r"(?<![A-Za-z])igemm_\w*?gtcx\d?(?![a-z])",
        "MIOpen's implicit-GEMM convolutions on XDLOPS (MFMA): igemm_fwd_gtcx2_nhwc_…, "
        "igemm_bwd_gtcx3_…, igemm_wrw_gtcx_… (gtcx = the XDLOPS generation; gtc without x is not)",
    ),
    "amd_ck_xdl": (
        rf"^(?=.*(?i:xdl(?:ops)?)(?![a-z]))(?=.*{_MATMUL_WORD})",
        "AMD Composable Kernel GEMMs (kernel_gemm_xdl_cshuffle_v3, DeviceGemmXdl…): XDL = MFMA",
    ),
}

#: Names that say the kernel runs on the ordinary FP32 pipes even though a family matched
#: (cuBLAS ``sm80_xmma_gemm_f32f32_f32f32_f32_…_ffma_…``, CUTLASS ``cutlass_80_simt_sgemm…``,
#: xformers' FP32 attention for pre-Ampere GPUs ``fmha_cutlassF_f32_…_sm50``).
NOT_TENSOR_CORE: dict[str, str] = {
    "simt": rf"(?i:{_B}(?:ffma|simt){_E})",
    "fp32_attention_pre_ampere": r"fmha_cutlass[FB]_f32_.*_sm(?:50|70|75)(?![0-9])",
    # MIOpen's elementwise tensor ops (SubTensorOpWithScalar1d, SubTensorOpWithSubTensor2d…): "TensorOp"
    # there is an operation on a tensor, not CUTLASS's tensor-op class
    "miopen_elementwise": r"SubTensorOp",
    # FP8 casts and scale computations (fbgemm_gpu::_compute_FP8_quantize_cuda_kernel, _get_FP8_qparam_cuda_kernel)
    "fp8_quantize": r"(?i:fp8_quantize|fp8_qparam)",
}

_TC = re.compile("|".join(f"(?:{p})" for p, _ in TENSOR_CORE_FAMILIES.values()), re.DOTALL)
#: Cheap first test: every family needs one of these (lower-cased) substrings.
_LITERALS = (
    "nvjet",
    "xmma",
    "sm",
    "tensorop",
    "mma",
    "tcgen05",
    "e4m3",
    "e5m2",
    "e2m1",
    "ue8m0",
    "nvf4",
    "mxf",
    "fp4",
    "fp8",
    "fmha",
    "flash",
    "attn",
    "cijk_",
    "mfma",
    "xdl",
    "gtcx",
)
_NOT_TC = re.compile("|".join(f"(?:{p})" for p in NOT_TENSOR_CORE.values()))

#: Operators that autocast runs in fp16/bf16 and that tensor cores can serve (with backward nodes).
TENSOR_CORE_ELIGIBLE_OPS = (
    "aten::conv",
    "aten::cudnn_convolution",
    "aten::_convolution",
    "aten::convolution",
    "aten::prelu",
    "aten::addmm",
    "aten::addmv",
    "aten::addr",
    "aten::matmul",
    "aten::mm",
    "aten::mv",
    "aten::linear",
    "aten::addbmm",
    "aten::baddbmm",
    "aten::bmm",
    "aten::chain_matmul",
    "aten::linalg_multi_dot",
    "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell",
    "aten::lstm_cell",
    "aten::gru_cell",
    "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell",
    "aten::convolution_backward",
    "aten::cudnn_convolution_backward",
    "aten::cudnn_convolution_transpose_backward",
    # attention: its kernels are GEMMs on tensor cores (FlashAttention, memory-efficient, cuDNN, vLLM's)
    "aten::scaled_dot_product",
    "aten::_scaled_dot_product",
    "aten::_flash_attention",
    "aten::_efficient_attention",
    "aten::_cudnn_attention",
    "vllm::unified_attention",
)
_ELIGIBLE_BACKWARD = re.compile(
    r"^(autograd::engine::evaluate_function: )?"
    r"((Cudnn|Mkldnn)?(Convolution|ConvolutionTranspose|Addmm|Mm|Bmm|Baddbmm|Addbmm|Mv|Addmv|Addr|Prelu|Linear|Matmul)"
    r"|ScaledDotProduct(Flash|Efficient|Cudnn|FusedAttentionOverrideable)?Attention)Backward\d*$"
)


def uses_tensor_cores(kernel_name: str) -> bool:
    """Whether a kernel name says it runs on tensor cores (NVIDIA) or matrix cores (AMD)."""
    low = kernel_name.lower()
    legacy = any(m in kernel_name for m in TENSOR_CORE_KERNEL_MARKERS_LEGACY)
    if not legacy and not any(m in low for m in _LITERALS):
        return False
    if _NOT_TC.search(kernel_name):
        return False
    return legacy or bool(_TC.search(kernel_name))


def is_tensor_core_eligible_op(op_name: str) -> bool:
    """Whether an operator (or its autograd backward node) can run on tensor cores."""
    if op_name.startswith(TENSOR_CORE_ELIGIBLE_OPS):
        return True
    return bool(_ELIGIBLE_BACKWARD.search(op_name))


#: ``Input type`` entries of a reduced-precision tensor: FP16, BF16 and the FP8/FP4 types
#: (``c10::Half``, ``c10::BFloat16``, ``c10::Float8_e4m3fn``, ``c10::Float8_e5m2``, ``c10::Float4_e2m1fn_x2``).
_LOW_PRECISION_TYPE = re.compile(r"Half|BFloat16|Float8|Float4|half|bfloat16|float8|float4")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def is_fp32_input_types(types_text: str) -> bool:
    """Whether an operator's ``Input type`` list (as text, e.g. ``['float', 'float', 'Scalar']``) says it
    computes in FP32: at least one ``float`` tensor and no FP16/BF16/FP8/FP4 one."""
    types = [a or b for a, b in _QUOTED.findall(types_text)]
    return "float" in types and not any(_LOW_PRECISION_TYPE.search(t) for t in types)


def fp32_eligible_kernel_us_by_device(trace, ops) -> dict[int, float]:
    """Per device: kernel time (µs) launched inside tensor-core-eligible operators whose inputs are FP32
    (:func:`is_fp32_input_types`). Operators without ``Input type`` (``record_shapes`` off) count as
    not FP32: their precision is unknown. Backward nodes carry no types; the ``aten::`` ops they run do."""
    from ..trace.categories import Kind
    from .launch_context import device_work_inside

    ev = trace.events
    lookup = np.zeros(len(trace.strings) + 1, dtype=bool)
    lookup[trace.name_ids(is_fp32_input_types)] = True
    fp32_ops = ops & trace.name_mask(is_tensor_core_eligible_op) & lookup[ev.input_types]
    kernels = (ev.kind == Kind.KERNEL) & device_work_inside(trace, fp32_ops)
    devices, inverse = np.unique(ev.device[kernels], return_inverse=True)
    totals = np.bincount(inverse, weights=ev.dur[kernels], minlength=len(devices))
    return {int(d): float(t) for d, t in zip(devices, totals)}
