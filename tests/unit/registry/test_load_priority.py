"""The file a user looks at is parsed first, its progress moves, and the runs document
says how many files are queued before each file."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
from conftest import sample

from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.states import LOADING, QUEUED, READY

NW0 = "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def _logdir(tmp_path, n: int = 5):
    for i in range(n):
        (tmp_path / f"r{i}").mkdir()
        events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 0, "dur": 10}]
        (tmp_path / f"r{i}" / "w.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    return reg


def _spans(reg) -> dict[str, dict]:
    return {r["name"]: r["workers"][0]["spans"][0] for r in reg.runs_document()["runs"]}


def test_a_wanted_file_goes_first_and_the_runs_document_counts_the_files_before_each(tmp_path):
    reg = _logdir(tmp_path)
    spans = _spans(reg)
    assert [spans[f"r{i}"]["queued_before"] for i in range(5)] == [0, 1, 2, 3, 4]
    assert reg.runs_document()["loading"]["files_queued"] == 5
    reg.want(reg.find("r3", "w", "1"))
    spans = _spans(reg)  # the document is rebuilt: the queue changed
    assert [spans[f"r{i}"]["queued_before"] for i in range(5)] == [1, 2, 3, 0, 4]
    reg.want(reg.find("r4", "w", "1"))  # the latest wanted goes first
    assert [_spans(reg)[f"r{i}"]["queued_before"] for i in range(5)] == [2, 3, 4, 1, 0]
    state, wanted = reg._loader._next_queued()
    assert (state.run, wanted) == ("r4", True)
    reg.load(state)
    reg.load(reg.find("r0", "w", "1"))
    spans = _spans(reg)
    assert spans["r4"]["queued_before"] is None and spans["r0"]["queued_before"] is None
    assert [spans[f"r{i}"]["queued_before"] for i in (1, 2, 3)] == [1, 2, 0]
    assert reg.runs_document()["loading"] == {"files_total": 5, "files_done": 2, "files_queued": 3}


def test_a_wanted_file_is_loaded_while_the_loader_is_busy_with_another(tmp_path, monkeypatch):
    """The loader thread is stuck parsing r0; the wanted r3 is loaded meanwhile by the second thread."""
    reg = _logdir(tmp_path)
    release = threading.Event()
    parse = reg._loader._parse

    def slow_parse(state, report, *rest):
        if state.run == "r0":
            release.wait(30)
        return parse(state, report, *rest)

    monkeypatch.setattr(reg._loader, "_parse", slow_parse)
    reg.start()
    try:
        r0, r3 = reg.find("r0", "w", "1"), reg.find("r3", "w", "1")
        deadline = time.monotonic() + 10
        while r0.state != LOADING and time.monotonic() < deadline:
            time.sleep(0.01)
        assert r0.state == LOADING and r3.state == QUEUED
        reg.want(r3)
        while r3.state != READY and time.monotonic() < deadline:
            time.sleep(0.01)
        assert r3.state == READY and r0.state == LOADING  # r3 did not wait for r0
        assert [reg.find(f"r{i}", "w", "1").state for i in (1, 2, 4)] == [QUEUED] * 3
    finally:
        release.set()
        reg.stop()


@pytest.mark.corpus
def test_progress_moves_while_a_file_parses_and_the_runs_document_serves_it(tmp_path):
    (tmp_path / "nw0").mkdir()
    shutil.copy(sample(NW0), tmp_path / "nw0")
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    state = reg.find("nw0", "worker0", "1")
    seen: list[float] = []
    served: list[tuple[str, float]] = []

    def progress(fraction: float) -> None:
        seen.append(fraction)
        if 0.3 < fraction < 0.9 and not served:
            reg._runs_doc = None  # as if the UI polled now
            span = _spans(reg)["nw0"]
            served.append((span["state"], span["progress"]))

    reg.load(state, progress)
    assert state.state == READY and state.progress == 1.0
    assert seen == sorted(seen) and seen[-1] == 0.9  # parsing is the first 90 % of a load
    assert len([f for f in seen if 0.2 < f < 0.9]) >= 5, seen  # events decoded in steps (75k events)
    assert served and served[0][0] == "loading" and 0.3 < served[0][1] < 0.9


@pytest.mark.corpus
def test_progress_moves_while_a_process_pool_parses_a_batch(tmp_path, monkeypatch):
    """Files parsed in the background pool show the pool's progress (it read 0 % for a whole batch)."""
    from tb_plugin.registry import loader
    from tb_plugin.registry.cache import ParseCache

    shutil.copytree(sample("kineto/resnet50_num_workers_0"), tmp_path / "logs" / "nw0")
    monkeypatch.setattr(loader, "parallel_workers", lambda sizes: 2)
    reg = RunRegistry(str(tmp_path / "logs"), cache=ParseCache(str(tmp_path / "cache")))
    reg.scan()
    files = reg.files()
    assert len(files) == 2
    seen: list[tuple[str, float]] = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            reg._runs_doc = None  # as if the UI polled now
            spans = reg.runs_document()["runs"][0]["workers"][0]["spans"]
            seen.extend((s["state"], s["progress"]) for s in spans)
            time.sleep(0.02)

    watcher = threading.Thread(target=poll)
    watcher.start()
    try:
        assert reg.parse_in_parallel(files) == 2
    finally:
        done.set()
        watcher.join()
    moving = {p for state, p in seen if state == "loading" and 0.0 < p < 0.9}
    assert len(moving) >= 4, sorted(moving)
    assert all(st.state == QUEUED and st.progress == 0.9 for st in files)  # parsed into the cache, then loaded
    reg.load(files[0])
    assert files[0].state == READY and files[0].from_cache and files[0].progress == 1.0


@pytest.mark.corpus
def test_a_wanted_file_whose_pool_job_has_not_started_leaves_the_batch(tmp_path, monkeypatch):
    """Five files in one pool batch of 2 workers: r4's job waits in the pool; wanting r4 takes it out
    (queued again, its lock free, first in line) and the pool never parses it."""
    from tb_plugin.registry import loader
    from tb_plugin.registry.cache import ParseCache

    for i in range(5):
        (tmp_path / "logs" / f"r{i}").mkdir(parents=True)
        shutil.copy(sample(NW0), tmp_path / "logs" / f"r{i}")
    monkeypatch.setattr(loader, "parallel_workers", lambda sizes: 2)
    cache = ParseCache(str(tmp_path / "cache"))
    reg = RunRegistry(str(tmp_path / "logs"), cache=cache)
    reg.scan()
    files = reg.files()
    worker = threading.Thread(target=reg.parse_in_parallel, args=(files,))
    worker.start()
    deadline = time.monotonic() + 60
    while reg._loader._batch_pool is None and time.monotonic() < deadline:
        time.sleep(0.005)
    r4 = reg.find("r4", "worker0", "1")
    assert r4.state == LOADING
    reg.want(r4)
    assert r4.state == QUEUED and not r4.lock.locked() and reg.queue_positions()["r4/" + NW0.rsplit("/", 1)[1]] == 0
    worker.join(120)
    url = lambda st: reg.fs.unstrip_protocol(st.entry.path)
    assert [cache.has(url(st), st.entry.version) for st in files] == [True] * 4 + [False]
    assert [st.state for st in files] == [QUEUED] * 5 and not any(st.lock.locked() for st in files)
    reg.load(r4)
    assert r4.state == READY and not r4.from_cache
