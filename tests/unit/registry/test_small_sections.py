"""A small trace's sections on two cores (registry/executors/small_sections.py): from
``SPLIT_ABOVE_ITEMS`` events up to the large traces' split, a forked child computes the distributed and
graphs sections while this process computes the others and the parse cache's writes run on their
thread. The aggregate, and the cache a later report reads, equal a serial run's."""

from __future__ import annotations

import os

import pytest
from test_section_fork import SAMPLE, aggregate_through, text, views

from tb_plugin.registry.executors import sections, small_sections, task
from tb_plugin.registry.report import rank_aggregate

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


def test_the_small_split_takes_the_sizes_the_large_one_leaves(monkeypatch):
    monkeypatch.setattr(small_sections, "can_fork_beside", lambda: True)
    split, large = small_sections.SPLIT_ABOVE_ITEMS, sections.FORK_ABOVE_ITEMS
    monkeypatch.setattr(small_sections, "a_core_idle", lambda: True)
    assert [small_sections.worth_splitting(n) for n in (split - 1, split, large - 1, large)] == [
        False,
        True,
        True,
        False,  # (the large traces' split from there)
    ]
    monkeypatch.setattr(small_sections, "a_core_idle", lambda: False)  # every core busy: no child
    assert not small_sections.worth_splitting(split)
    monkeypatch.setattr(small_sections, "a_core_idle", lambda: True)
    monkeypatch.setattr(small_sections, "can_fork_beside", lambda: False)  # one core, another thread, no memory
    assert not small_sections.worth_splitting(split)


@pytest.mark.parametrize(
    ("loadavg", "cores", "idle"),
    [("0.50 0.40 0.30 1/200 999\n", 2, True), ("3.1 3.0 2.9 2/200 999\n", 2, False), ("4 4 4 3/90 9\n", 4, True)],
)
def test_a_core_is_idle_when_fewer_threads_run_than_cores(tmp_path, monkeypatch, loadavg, cores, idle):
    real_open = open
    fake = tmp_path / "loadavg"
    fake.write_text(loadavg)
    monkeypatch.setattr(
        "builtins.open", lambda path, *a, **k: real_open(fake if path == "/proc/loadavg" else path, *a, **k)
    )
    monkeypatch.setattr(small_sections, "default_workers", lambda: cores)
    assert small_sections.a_core_idle() is idle


def test_without_the_load_file_a_core_counts_as_idle(monkeypatch):
    def missing(path, *a, **k):
        raise FileNotFoundError(path)

    monkeypatch.setattr("builtins.open", missing)
    assert small_sections.a_core_idle()


@pytest.mark.parametrize("tables", [True, False])  # (without the tables: no graphs section, the child's other one)
def test_the_child_computes_the_small_sections_and_the_aggregate_is_the_serial_one(tables):
    serial = rank_aggregate(views(), tables)
    fork = small_sections.split(views(), tables)
    forked = aggregate_through(fork, tables)
    assert fork.pid is None and text(forked) == text(serial) and list(forked) == list(serial)


def _split_here(monkeypatch) -> list[frozenset[str]]:
    """Every small split reduce_rank makes, by its child's sections (this sample is under the threshold)."""
    made: list[frozenset[str]] = []
    real = sections.SectionFork.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self.child)

    monkeypatch.setattr(small_sections, "worth_splitting", lambda items: True)
    monkeypatch.setattr(sections.SectionFork, "__init__", init)
    return made


def test_a_rank_split_small_is_cached_on_the_writes_thread(tmp_path, monkeypatch, runner_threads_fork_safe):
    serial = task.reduce_rank(
        task.RankJob(key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), tables=True)
    )
    made = _split_here(monkeypatch)
    job = task.RankJob(
        key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), cache_dir=str(tmp_path), tables=True
    )
    first = task.reduce_rank(job)
    assert made == [small_sections.SMALL_CHILD_SECTIONS]
    assert first.error is None and not first.from_cache
    monkeypatch.setattr(task, "ResultCache", lambda *a: None)  # (the parse cache, not the results)
    again = task.reduce_rank(job)
    assert again.error is None and again.from_cache  # the writes' thread wrote the parse cache
    for result in (first, again):
        assert result.aggregate is not None and serial.aggregate is not None
        assert text(task.received_aggregate(result.aggregate)) == text(task.received_aggregate(serial.aggregate))


def test_a_small_split_whose_child_dies_is_computed_here(monkeypatch, runner_threads_fork_safe):
    parent = os.getpid()
    real = sections.run_sections

    def dies_in_child(chosen, items, memos=None):
        if os.getpid() != parent:
            os._exit(3)
        return real(chosen, items, memos)

    serial = task.reduce_rank(
        task.RankJob(key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), tables=True)
    )
    made = _split_here(monkeypatch)
    monkeypatch.setattr(sections, "run_sections", dies_in_child)
    split = task.reduce_rank(task.RankJob(key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), tables=True))
    assert made and split.error is None and split.aggregate is not None and serial.aggregate is not None
    assert text(task.received_aggregate(split.aggregate)) == text(task.received_aggregate(serial.aggregate))
