"""Which kernels use tensor cores, and which operators could.

A kernel uses tensor cores when its name contains one of :data:`TENSOR_CORE_KERNEL_MARKERS`. The
first group is the list torch-tb-profiler uses (Volta/Turing cuDNN and cuBLAS names); the second
adds Ampere and Hopper names (we differ: the incumbent misses them).
"""

from __future__ import annotations

import re

TENSOR_CORE_KERNEL_MARKERS_LEGACY = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688",
)
TENSOR_CORE_KERNEL_MARKERS_MODERN = (
    "sm80_xmma", "sm86_xmma", "sm89_xmma", "sm90_xmma", "sm100_xmma", "wgmma", "hgmma", "bf16gemm",
    "s16816", "h16816", "tensorop",
)
TENSOR_CORE_KERNEL_MARKERS = TENSOR_CORE_KERNEL_MARKERS_LEGACY + TENSOR_CORE_KERNEL_MARKERS_MODERN
_CUTLASS_TENSOROP = re.compile(r"cutlass.*(tensorop|_tc_|wgmma|sm90|sm80)", re.IGNORECASE)

#: Operators that autocast runs in fp16/bf16 and that tensor cores can serve (with backward nodes).
TENSOR_CORE_ELIGIBLE_OPS = (
    "aten::conv", "aten::cudnn_convolution", "aten::_convolution", "aten::convolution",
    "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul", "aten::mm", "aten::mv",
    "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm", "aten::chain_matmul",
    "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell",
    "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell",
    "aten::convolution_backward", "aten::cudnn_convolution_backward", "aten::cudnn_convolution_transpose_backward",
)
_ELIGIBLE_BACKWARD = re.compile(
    r"^(autograd::engine::evaluate_function: )?"
    r"(Cudnn|Mkldnn)?(Convolution|ConvolutionTranspose|Addmm|Mm|Bmm|Baddbmm|Addbmm|Mv|Addmv|Addr|Prelu|Linear|Matmul)"
    r"Backward\d*$"
)


def uses_tensor_cores(kernel_name: str) -> bool:
    """Whether a kernel name says it runs on tensor cores."""
    return any(m in kernel_name for m in TENSOR_CORE_KERNEL_MARKERS) or bool(_CUTLASS_TENSOROP.search(kernel_name))


def is_tensor_core_eligible_op(op_name: str) -> bool:
    """Whether an operator (or its autograd backward node) can run on tensor cores."""
    if op_name.startswith(TENSOR_CORE_ELIGIBLE_OPS):
        return True
    return bool(_ELIGIBLE_BACKWARD.search(op_name))
