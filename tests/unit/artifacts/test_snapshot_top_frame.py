"""An allocation's "Top frame" is the user's code, never the stack unwinder's or the
caching allocator's frame (``??:0:torch::unwind::unwind()`` was shown for most allocations)."""

from __future__ import annotations

import pytest
from conftest import SAMPLES

from tb_plugin.analysis.snapshot import device_summary, top_frame
from tb_plugin.artifacts.snapshot import load_snapshot

UNWIND = {"filename": "??", "line": 0, "name": "torch::unwind::unwind()"}
GATHER = {"filename": "memory_snapshot.cpp", "line": 0, "name": "torch::cuda::(anonymous namespace)::gather_with_cpp()"}
ALLOC = {
    "filename": "CUDACachingAllocator.cpp",
    "line": 0,
    "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)",
}
EMPTY = {"filename": "??", "line": 0, "name": "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"}
BMM = {
    "filename": "RegisterCUDA.cpp",
    "line": 0,
    "name": "at::(anonymous namespace)::wrapper_CUDA_bmm(at::Tensor const&)",
}
LIB_PY = {"filename": "/venv/lib/python3.12/site-packages/torch/functional.py", "line": 407, "name": "einsum"}
USER_PY = {"filename": "/home/me/train.py", "line": 12, "name": "forward"}


def test_native_stack_skips_unwinder_and_allocator():
    assert top_frame([UNWIND, GATHER, ALLOC, EMPTY, BMM]) == BMM


def test_python_frame_preferred_and_user_code_before_installed_packages():
    assert top_frame([UNWIND, ALLOC, BMM, LIB_PY, USER_PY]) == USER_PY
    assert top_frame([UNWIND, ALLOC, BMM, LIB_PY]) == LIB_PY


def test_only_internal_frames_fall_back_to_the_first():
    assert top_frame([UNWIND, ALLOC]) == UNWIND
    assert top_frame([]) is None


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["mem_snapshot.pickle", "memory_forward_bf16_128.pickle"])
def test_real_snapshots_show_no_unwinder_frame(name):
    snap = load_snapshot((SAMPLES / "memory_snapshots" / name).read_bytes())
    frames = [r["frame"] for d in snap.devices for r in device_summary(snap, d)["largest"] if r["frame"]]
    assert frames, name
    bad = [f for f in frames if "torch::unwind" in f or "CUDACachingAllocator" in f or f.startswith("??")]
    assert not bad, bad
    if name == "mem_snapshot.pickle":
        # 5 of its largest live blocks come from a backward bmm with no Python frame: the op, not the unwinder
        assert sum("create_out" in f or "bmm" in f for f in frames) >= 1
        assert any(f.endswith("trace_peak_memory.py:7:custom_softmax") for f in frames)
