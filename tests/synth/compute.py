"""Small synthesized GPU traces with known tensor-core shares, AMP advice and SM efficiency (
items 1–4): BF16/FP8 GEMMs on Hopper/Blackwell kernels, FP32 GEMMs on SIMT kernels, and ROCm traces
whose launch geometry is spelled the ways ROCm writes it.

One step, ``ProfilerStep#1`` over ``[0, step_us]`` µs on pid 1/tid 1. Each :class:`Op` is a ``cpu_op``
with ``Input type``; each of its :class:`Kernel` s gets a launch call (``cuda_runtime``) 1 µs into the
op and a ``kernel`` event on ``pid = device``, linked by ``correlation``. Times are µs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

H100 = {
    "id": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85018279936,
    "computeMajor": 9,
    "computeMinor": 0,
    "numSms": 132,
    "warpSize": 32,
    "maxThreadsPerBlock": 1024,
}
B200 = {
    "id": 0,
    "name": "NVIDIA B200",
    "totalGlobalMem": 191510855680,
    "computeMajor": 10,
    "computeMinor": 0,
    "numSms": 148,
    "warpSize": 32,
    "maxThreadsPerBlock": 1024,
}
A100 = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "totalGlobalMem": 85197848576,
    "computeMajor": 8,
    "computeMinor": 0,
    "numSms": 108,
    "warpSize": 32,
    "maxThreadsPerBlock": 1024,
}
#: As ROCm writes it: the visible GPU is id 0 here while its kernels carry its physical index (2).
MI300X = {
    "id": 0,
    "name": "AMD Instinct MI300X VF",
    "totalGlobalMem": 205571227648,
    "computeMajor": 9,
    "computeMinor": 4,
    "numSms": 304,
    "warpSize": 64,
    "maxThreadsPerBlock": 1024,
}
#: MI250 as ROCm 6.2 names it (hta/amd_trace): the name does not say Instinct.
MI250_GENERIC = {
    "id": 0,
    "name": "AMD Radeon Graphics",
    "totalGlobalMem": 68702699520,
    "computeMajor": 9,
    "computeMinor": 0,
    "numSms": 104,
    "warpSize": 64,
    "maxThreadsPerBlock": 1024,
}

BF16, FP16, FP32 = "c10::BFloat16", "c10::Half", "float"
FP8 = "c10::Float8_e4m3fn"

NVJET = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT"
SM100_BLOCK_SCALED = (
    "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_"
    "256x128x128_1x1x1_0_tnn_align32_o_vs32_2sm"
)
SGEMM = "ampere_sgemm_128x64_nn"
ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"
)
TENSILE_MFMA = (
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_"
    "ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1"
)
TENSILE_MAC = "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1_MAC"


@dataclasses.dataclass
class Kernel:
    name: str
    ts: float
    dur: float
    launch: str = "cudaLaunchKernel"
    grid: list[int] | None = None
    block: list[int] | None = None
    blocks_per_sm: float | None = None
    grid_on_kernel: bool = True  # False: only the launch call carries grid/block (ROCm 6.2)


@dataclasses.dataclass
class Op:
    name: str
    ts: float
    dur: float
    input_types: list[str] | None
    kernels: list[Kernel] = dataclasses.field(default_factory=list)


def _event(cat: str, name: str, ts: float, dur: float, args: dict, pid: int = 1, tid: int = 1) -> dict:
    """A complete (``"X"``) event (µs): host work on pid 1, tid 1 unless told."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def build(
    device: dict,
    ops: list[Op],
    *,
    kernel_device: int | None = None,
    step_us: float = 1000.0,
    top: dict[str, Any] | None = None,
) -> dict:
    """The trace document. ``kernel_device``: the device index kernels carry (default: ``device["id"]``)."""
    dev = device["id"] if kernel_device is None else kernel_device
    events = [_event("user_annotation", "ProfilerStep#1", 0.0, step_us, {"External id": 1})]
    corr = 100
    for i, op in enumerate(ops):
        ext = 10 + i
        args: dict[str, Any] = {"External id": ext}
        if op.input_types is not None:
            args["Input type"] = op.input_types
        events.append(_event("cpu_op", op.name, op.ts, op.dur, args))
        for j, k in enumerate(op.kernels):
            corr += 1
            geometry = {}
            if k.grid is not None:
                geometry["grid"] = k.grid
            if k.block is not None:
                geometry["block"] = k.block
            call_args = {"External id": ext, "correlation": corr, **geometry}
            events.append(_event("cuda_runtime", k.launch, op.ts + 1 + j, 0.5, call_args))
            kargs: dict[str, Any] = {"External id": ext, "device": dev, "stream": 7, "correlation": corr}
            if k.grid_on_kernel:
                kargs.update(geometry)
            if k.blocks_per_sm is not None:
                kargs["blocks per SM"] = k.blocks_per_sm
            events.append(_event("kernel", k.name, k.ts, k.dur, kargs, pid=dev, tid=7))
    doc = {"schemaVersion": 1, "deviceProperties": [device], "traceEvents": events}
    doc.update(top or {})
    return doc


def _elementwise_add(dtype: str, kernel_ts: float, kernel_dur: float, blocks: int, **kernel: Any) -> Op:
    """``aten::add`` [300, 400] µs of two ``dtype`` tensors and a scalar, on one elementwise kernel of
    ``blocks`` blocks of 128 threads over [``kernel_ts``, ``kernel_ts + kernel_dur``]."""
    add = Kernel(ELEMENTWISE, kernel_ts, kernel_dur, grid=[blocks, 1, 1], block=[128, 1, 1], **kernel)
    return Op("aten::add", 300, 100, [dtype, dtype, "Scalar"], [add])


def bf16_nvjet() -> dict:
    """H100, BF16: ``aten::mm`` on an nvjet GEMM (300 µs) and ``aten::add`` on an elementwise kernel
    (100 µs). Tensor-core share 300 / 400 = 75 %; no AMP advice (the inputs are BF16 and the GEMM is on
    tensor cores already)."""
    return build(
        H100,
        [
            Op(
                "aten::mm",
                100,
                200,
                [BF16, BF16],
                [Kernel(NVJET, 150, 300, grid=[132, 1, 1], block=[384, 1, 1], blocks_per_sm=1.0)],
            ),
            _elementwise_add(BF16, 500, 100, 264, blocks_per_sm=2.0),
        ],
        top={"cuda_runtime_version": 12040},
    )


def fp8_blackwell() -> dict:
    """B200, FP8: ``aten::_scaled_mm`` on a block-scaled CUTLASS GEMM (200 µs) and a BF16 add (200 µs).
    Tensor-core share 50 %; no AMP advice."""
    return build(
        B200,
        [
            Op(
                "aten::_scaled_mm",
                100,
                100,
                [FP8, FP8, "float", "float", "", "", "ScalarType"],
                [Kernel(SM100_BLOCK_SCALED, 150, 200, grid=[148, 1, 1], block=[256, 1, 1])],
            ),
            _elementwise_add(BF16, 400, 200, 148),
        ],
    )


def fp32_sgemm(device: dict = A100, gemm: str = SGEMM, mm_types: list[str] | None = None) -> dict:
    """FP32 ``aten::mm`` on a SIMT GEMM (300 µs) plus an FP32 ``aten::add`` (100 µs, not eligible): AMP
    advice on a GPU with tensor/matrix cores, naming 300 µs."""
    types = mm_types or [FP32, FP32]
    return build(
        device,
        [
            Op("aten::mm", 100, 200, types, [Kernel(gemm, 150, 300, grid=[108, 1, 1], block=[256, 1, 1])]),
            _elementwise_add(FP32, 500, 100, 108),
        ],
    )


#: :func:`rocm_geometry`'s known answers.
ROCM_SM_EFFICIENCY_PCT = 100.0 * (200 * 1.0 + 200 * 0.5 + 100 * 0.25) / (1000 - 100)
ROCM_KERNEL_US_WITHOUT_GEOMETRY = 100.0


def rocm_geometry() -> dict:
    """An MI300X-like ROCm trace (100 CUs) whose SM efficiency is known by construction, window [0, 1000]:

    - ``hipExtModuleLaunchKernel`` grid [51200, 1, 1] work-items, block 256 → 200 work-groups → 2 per CU,
      min(1, 2) = 1 over [100, 300];
    - ``hipModuleLaunchKernel`` grid [50, 1, 1] (blocks, as HIP's gridDimX) → 0.5 over [400, 600];
    - ``hipLaunchKernel`` with grid [25, 1, 1] on the launch call only → 0.25 over [700, 800];
    - a kernel with no geometry anywhere over [850, 950]: left out.

    SM efficiency = (200·1 + 200·0.5 + 100·0.25) ÷ (1000 − 100) = 36.11 %; 100 µs without geometry.
    Kernels carry device 2 while ``deviceProperties`` lists the GPU as id 0 (ROCm does).
    """
    mi = dict(MI300X, numSms=100)
    return build(
        mi,
        [
            Op(
                "aten::mm",
                50,
                40,
                [FP32, FP32],
                [
                    Kernel(
                        TENSILE_MFMA, 100, 200, launch="hipExtModuleLaunchKernel", grid=[51200, 1, 1], block=[256, 1, 1]
                    )
                ],
            ),
            Op(
                "aten::_flash_attention_forward",
                350,
                40,
                [BF16, BF16, BF16],
                [Kernel("attn_fwd", 400, 200, launch="hipModuleLaunchKernel", grid=[50, 1, 1], block=[256, 1, 1])],
            ),
            Op(
                "aten::add",
                650,
                40,
                [FP32, FP32, "Scalar"],
                [
                    Kernel(
                        ELEMENTWISE,
                        700,
                        100,
                        launch="hipLaunchKernel",
                        grid=[25, 1, 1],
                        block=[128, 1, 1],
                        grid_on_kernel=False,
                    )
                ],
            ),
            Op(
                "aten::copy_", 820, 20, [FP32, FP32, "Bool"], [Kernel("copyBuffer", 850, 100, launch="hipLaunchKernel")]
            ),
        ],
        kernel_device=2,
        top={"roctracer_version": 4.1, "hip_runtime_version": 60443483},
    )
