"""A trace and an allocator snapshot of the same process (rank 0, GPU 0, one wall clock), with the
allocating operator, step, module and frame of every allocation known by construction.

Trace (µs as written; wall clock = ts + BASE_NS / 1000), thread 1 (forward) and 2 (autograd):
- ``ProfilerStep#1`` [1000, 2000): ``nn.Module: Linear_0`` [1010, 1210) ⊃ ``aten::linear`` [1020,
  1120) ⊃ ``aten::addmm`` [1030, 1080); ``nn.Module: ReLU_0`` [1300, 1400) ⊃ ``aten::relu`` [1310,
  1360); a ``## backward ##`` annotation [1450, 1850) on thread 1 while thread 2 runs
  ``autograd::engine::evaluate_function: AddmmBackward0`` [1500, 1700) ⊃ ``aten::mm`` [1510, 1560).
- ``ProfilerStep#2`` [2000, 3000): ``nn.Module: Linear_0`` [2010, 2210) ⊃ ``aten::linear`` ⊃
  ``aten::addmm`` [2030, 2080); ``aten::empty`` [2500, 2510) (no module).

Snapshot history (times wall clock): A 4 MiB in addmm (step 1, Linear_0); B 2 MiB in relu (step 1,
ReLU_0); D 16 MiB in relu, freed at 1600 (not alive at the peak); C 8 MiB in mm (thread 2 entered it
last; step 1, no module); E 1 MiB in addmm (step 2); F 32 MiB in empty (step 2); G 64 KiB at 2900
(inside ProfilerStep#2 only: no operator); H 512 KiB at 5000 (after the trace): the peak. Then F and
a 2 MiB block allocated before the history are freed; the dump holds a 3 MiB block from before the
history too. Alive at the peak: A B C E F G H + 2 MiB + 3 MiB.
"""

from __future__ import annotations

from .events import host_ops

MIB = 1 << 20
BASE_NS = 1_751_410_836_000_000_000
BASE_US = BASE_NS // 1000


def paired_trace(rank: int = 0) -> dict:
    """The trace described in the module docstring (a Kineto JSON object)."""
    ev = host_ops(
        """
        ProfilerStep#1                                      | user_annotation | 1000 | 1000
        nn.Module: Linear_0                                 | python_function | 1010 |  200
        aten::linear                                        | cpu_op          | 1020 |  100
        aten::addmm                                         | cpu_op          | 1030 |   50
        nn.Module: ReLU_0                                   | python_function | 1300 |  100
        aten::relu                                          | cpu_op          | 1310 |   50
        ## backward ##                                      | user_annotation | 1450 |  400
        autograd::engine::evaluate_function: AddmmBackward0 | cpu_op          | 1500 |  200 | 2
        aten::mm                                            | cpu_op          | 1510 |   50 | 2
        ProfilerStep#2                                      | user_annotation | 2000 | 1000
        nn.Module: Linear_0                                 | python_function | 2010 |  200
        aten::linear                                        | cpu_op          | 2020 |  100
        aten::addmm                                         | cpu_op          | 2030 |   50
        aten::empty                                         | cpu_op          | 2500 |   10
        """
    )
    return {
        "schemaVersion": 1,
        "baseTimeNanoseconds": BASE_NS,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 80 * 1024 * MIB}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "traceEvents": ev,
    }


def frame(line: int, name: str, filename: str = "/work/train/model.py") -> list[dict]:
    return [
        {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"},
        {"filename": filename, "line": line, "name": name},
    ]


# (label, bytes, trace ts of the alloc, ts of its free or None, frames' line, function)
ALLOCS = [
    ("A", 4 * MIB, 1040, None, 10, "linear_fwd"),
    ("B", 2 * MIB, 1320, None, 20, "relu_fwd"),
    ("D", 16 * MIB, 1330, 1600, 21, "relu_tmp"),
    ("C", 8 * MIB, 1520, None, 30, "mm_bwd"),
    ("E", 1 * MIB, 2040, None, 10, "linear_fwd"),
    ("F", 32 * MIB, 2505, 5100, 40, "empty"),
    ("G", 64 << 10, 2900, None, 50, "loose"),
    ("H", 512 << 10, 5000, None, 60, "late"),
]
EARLY = 2 * MIB  # a block allocated before the history, freed at 5200 (after the peak)
WEIGHTS = 3 * MIB  # a block allocated before the history, held at the dump

#: the blocks no operator, step or module of the trace can hold: H (after the trace), EARLY + WEIGHTS
_UNPLACED = {"(outside the trace)": 512 << 10, "(before history)": 5 * MIB}
EXPECTED_BY_OPERATOR = {
    "aten::addmm": 5 * MIB,
    "aten::relu": 2 * MIB,
    "aten::mm": 8 * MIB,
    "aten::empty": 32 * MIB,
    "(no operator)": 64 << 10,
    **_UNPLACED,
}
EXPECTED_BY_STEP = {
    "ProfilerStep#1": 14 * MIB,
    "ProfilerStep#2": 33 * MIB + (64 << 10),
    **_UNPLACED,
}
EXPECTED_BY_MODULE = {
    "Linear_0": 5 * MIB,
    "ReLU_0": 2 * MIB,
    "(no module)": 40 * MIB + (64 << 10),
    **_UNPLACED,
}
EXPECTED_BY_FRAME = {
    "/work/train/model.py:10:linear_fwd": 5 * MIB,
    "/work/train/model.py:20:relu_fwd": 2 * MIB,
    "/work/train/model.py:30:mm_bwd": 8 * MIB,
    "/work/train/model.py:40:empty": 32 * MIB,
    "/work/train/model.py:50:loose": 64 << 10,
    "/work/train/model.py:60:late": 512 << 10,
    "/work/train/train.py:12:build_model": 3 * MIB,
    "/work/train/train.py:13:load_state": 2 * MIB,
}
EXPECTED_PEAK = sum(EXPECTED_BY_OPERATOR.values())


def paired_snapshot(shift_us: int = 0) -> dict:
    """The snapshot described in the module docstring (``shift_us`` moves every time on the wall clock)."""
    events = []
    for k, (_, size, ts, free_ts, line, name) in enumerate(ALLOCS):
        addr = 0x10000000 + k * 0x4000000
        events.append((ts, {"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": frame(line, name)}))
        if free_ts is not None:
            for action in ("free_requested", "free_completed"):
                events.append(
                    (free_ts, {"action": action, "addr": addr, "size": size, "stream": 0, "frames": frame(line, name)})
                )
    early = frame(13, "load_state", "/work/train/train.py")
    for action in ("free_requested", "free_completed"):
        events.append((5200, {"action": action, "addr": 0x7000000, "size": EARLY, "stream": 0, "frames": early}))
    history = []
    for ts, e in sorted(events, key=lambda p: p[0]):
        history.append(dict(e, time_us=BASE_US + ts + shift_us))
    blocks = [
        {
            "address": 0x8000000,
            "size": WEIGHTS,
            "requested_size": WEIGHTS,
            "state": "active_allocated",
            "frames": frame(12, "build_model", "/work/train/train.py"),
        }
    ]
    segments = [
        {
            "device": 0,
            "address": 0x8000000,
            "total_size": 4 * MIB,
            "stream": 0,
            "segment_type": "large",
            "blocks": blocks,
        }
    ]
    return {"segments": segments, "device_traces": [history]}
