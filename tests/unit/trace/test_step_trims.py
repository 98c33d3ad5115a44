"""The steps inside a very large trace's sections give freed heap pages back (trace/heap.trimmed_steps):
only inside ``trimmed_steps`` of at least STEP_TRIM_ABOVE_ITEMS events, after a memo is made (not when
it is read back) and after each pass and level of op_tree.roll_up, whose sums stay the same; the
report's sections open it with ``trim`` (this process), never in the section child (``trim=False``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tb_plugin.analysis import op_tree as ot
from tb_plugin.registry import report as report_mod
from tb_plugin.trace import heap
from tb_plugin.trace.decode import decode_trace

BIG = heap.STEP_TRIM_ABOVE_ITEMS


@pytest.fixture
def trims(monkeypatch):
    """The malloc_trim calls made (heap._trim recorded, not called)."""
    asked: list[int] = []
    monkeypatch.setattr(heap, "_trim", lambda pad: asked.append(pad) or 1)
    return asked


def test_steps_trim_only_inside_for_very_large_traces(trims):
    assert heap.release_after_step() is False and trims == []  # outside: nothing
    with heap.trimmed_steps(BIG - 1):
        assert heap.release_after_step() is False and trims == []
    with heap.trimmed_steps(BIG):
        assert heap.release_after_step() is True and trims == [0]
        with heap.trimmed_steps(0):  # (the section child's) nested: off, then the outer setting again
            assert heap.release_after_step() is False
        assert heap.release_after_step() is True and trims == [0, 0]
    assert heap.release_after_step() is False and trims == [0, 0]


def test_the_setting_is_restored_after_an_error(trims):
    with pytest.raises(ValueError), heap.trimmed_steps(BIG):
        raise ValueError
    assert heap.release_after_step() is False and trims == []


def test_another_thread_never_sees_the_setting_and_interleaved_exits_restore_their_own(trims):
    """A server computes sections in several threads: one's trimmed_steps must not turn trims on (or, at its
    exit, leave them on) in another."""
    import threading

    entered, leave_a, seen = threading.Event(), threading.Event(), []

    def a():
        with heap.trimmed_steps(BIG):
            entered.set()
            leave_a.wait(10)
        seen.append(("a after", heap.release_after_step()))

    ta = threading.Thread(target=a)
    ta.start()
    assert entered.wait(10)
    seen.append(("main while a is inside", heap.release_after_step()))
    with heap.trimmed_steps(BIG):  # entered while a's is open, left after a's exit
        leave_a.set()
        ta.join(10)
        seen.append(("main inside", heap.release_after_step()))
    seen.append(("main after", heap.release_after_step()))
    assert sorted(seen) == [
        ("a after", False),
        ("main after", False),
        ("main inside", True),
        ("main while a is inside", False),
    ]
    assert trims == [0]


def _trace():
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(5)]
    return decode_trace(json.dumps({"traceEvents": events}).encode())


def test_a_memo_made_trims_and_a_memo_read_does_not(trims):
    trace = _trace()
    with heap.trimmed_steps(BIG):
        assert trace.memo("k", lambda: 7) == 7 and trims == [0]
        assert trace.memo("k", lambda: 8) == 7 and trims == [0]  # kept: nothing made, nothing freed
    assert trace.memo("k2", lambda: 9) == 9 and trims == [0]  # outside the sections' steps


def test_roll_up_trims_each_pass_and_level_and_sums_the_same(trims):
    """A chain 0 <- 1 <- 2 <- 3 and a second root 4 <- 5: sums as without the trims (every row's
    subtree), one trim per climbing pass and per level inside trimmed_steps, none outside."""
    parent = np.array([-1, 0, 1, 2, -1, 4])
    rows = np.arange(6)
    values = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    want = values.copy()
    ot.roll_up([want], rows, parent)
    assert trims == [] and want.tolist() == [15.0, 14.0, 12.0, 8.0, 48.0, 32.0]
    got = values.copy()
    with heap.trimmed_steps(BIG):
        ot.roll_up([got], rows, parent)
    assert got.tobytes() == want.tobytes()
    assert len(trims) == 3 + 4  # three climbing passes (depths 1-3), then the levels 3, 2, 1 and 0


def test_run_sections_trims_steps_only_where_it_trims_sections(monkeypatch, trims):
    """This process's sections (trim) open trimmed_steps with the trace's items; the section child's
    (trim=False) do not; after them the steps trim no more."""
    monkeypatch.setattr(report_mod, "release_after", lambda items: False)  # (the sections' own trims)
    inside = [("a", heap.release_after_step), ("b", heap.release_after_step)]
    assert report_mod.run_sections(inside, BIG, trim=False) == {"a": False, "b": False} and trims == []
    assert report_mod.run_sections(inside, BIG - 1) == {"a": False, "b": False} and trims == []
    assert report_mod.run_sections(inside, BIG) == {"a": True, "b": True} and trims == [0, 0]
    assert heap.release_after_step() is False


def test_untrimmed_sections_keep_their_freed_pages(monkeypatch, trims):
    """A section named ``untrimmed`` neither trims its steps nor is trimmed after; the others are, before
    and after it (the section child of a very large trace: its insights and overview keep theirs)."""
    after: list[str] = []
    monkeypatch.setattr(report_mod, "release_after", lambda items: after.append("trim") or True)
    sections = [("distributed", heap.release_after_step), ("insights", heap.release_after_step)]
    sections.append(("overview", heap.release_after_step))
    got = report_mod.run_sections(sections, BIG, untrimmed=frozenset({"insights"}))
    assert got == {"distributed": True, "insights": False, "overview": True}
    assert trims == [0, 0] and after == ["trim", "trim"]
    from tb_plugin.registry.executors.sections import UNTRIMMED_CHILD_SECTIONS

    assert UNTRIMMED_CHILD_SECTIONS == {"insights", "overview"}


@pytest.fixture
def resident(monkeypatch):
    """This process's anonymous resident bytes as the test sets them (heap.anon_resident_bytes)."""
    now = [0]
    monkeypatch.setattr(heap, "anon_resident_bytes", lambda: now[0])
    monkeypatch.setattr(heap, "_trimmed_to", [0])
    return now


MB = 1 << 20


def test_a_lazy_step_trims_only_past_its_growth_since_the_last_trim(trims, resident):
    resident[0] = 500 * MB
    assert heap.release_freed_memory() is True and trims == [0]  # a full trim: growth counts from 500 MB
    resident[0] = 627 * MB
    assert heap.release_if_grown(128 * MB) is False and trims == [0]  # 127 MB grown: left to the next steps
    resident[0] = 628 * MB
    assert heap.release_if_grown(128 * MB) is True and trims == [0, 0]
    resident[0] = 700 * MB  # (the trim measured 700 MB after it: from there)
    heap.release_freed_memory()
    resident[0] = 600 * MB  # shrunk below it (freed and given back otherwise): growth counts from 600 MB
    assert heap.release_if_grown(128 * MB) is False
    resident[0] = 727 * MB
    assert heap.release_if_grown(128 * MB) is False and trims == [0, 0, 0]
    resident[0] = 728 * MB
    assert heap.release_if_grown(128 * MB) is True and trims == [0, 0, 0, 0]


def test_a_lazy_step_trims_where_nothing_is_known(trims, resident):
    """No trim yet, or no resident figure (no /proc): every lazy step trims, as a plain one."""
    resident[0] = 900 * MB
    assert heap.release_if_grown(128 * MB) is True and trims == [0]  # no trim before it
    resident[0] = 0
    assert heap.release_if_grown(128 * MB) is True and trims == [0, 0]


def test_trimmed_steps_growth_makes_its_steps_lazy_and_is_restored(trims, resident):
    resident[0] = 500 * MB
    heap.release_freed_memory()
    resident[0] = 560 * MB
    with heap.trimmed_steps(BIG, 128 * MB):
        assert heap.release_after_step() is False  # lazily: 60 MB grown
        with heap.trimmed_steps(BIG):  # nested, not lazy: every step
            assert heap.release_after_step() is True
        resident[0] = 600 * MB
        assert heap.release_after_step() is False  # lazily again, from the last trim's 560 MB
    assert heap.release_after_step() is False and trims == [0, 0]  # outside: nothing


def test_lazily_trimmed_sections_trim_their_steps_past_the_growth_and_their_end_fully(monkeypatch, trims, resident):
    """A section named ``lazily_trimmed`` trims its steps only past STEP_TRIM_GROWTH_BYTES of growth and is
    trimmed fully after; the others trim every step (the section child of a very large trace: its
    distributed section, sections.LAZILY_TRIMMED_CHILD_SECTIONS)."""
    after: list[str] = []
    monkeypatch.setattr(report_mod, "release_after", lambda items: after.append("trim") or True)
    resident[0] = 800 * MB
    heap.release_freed_memory()
    resident[0] = 800 * MB + heap.STEP_TRIM_GROWTH_BYTES - 1
    sections = [("distributed", heap.release_after_step), ("insights", heap.release_after_step)]
    got = report_mod.run_sections(sections, BIG, lazily_trimmed=frozenset({"distributed"}))
    assert got == {"distributed": False, "insights": True} and trims == [0, 0] and after == ["trim", "trim"]
    from tb_plugin.registry.executors.sections import LAZILY_TRIMMED_CHILD_SECTIONS

    assert LAZILY_TRIMMED_CHILD_SECTIONS == {"distributed"}


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_the_resident_figure_is_this_process_s():
    with open("/proc/self/status") as f:
        listed = next(int(line.split()[1]) << 10 for line in f if line.startswith("RssAnon:"))
    got = heap.anon_resident_bytes()
    assert got > 0 and abs(got - listed) < 64 * MB  # (read a moment apart)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_a_status_field_in_bytes_and_none_for_a_missing_one():
    from tb_plugin.trace.proc_status import status_bytes

    with open("/proc/self/status") as f:
        listed = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))
    got = status_bytes(b"VmSize:")
    assert got is not None and got % 1024 == 0 and abs(got - listed) < 64 * MB
    assert status_bytes(b"NoSuchField:") is None
