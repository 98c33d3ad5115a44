"""The spare reader child a live registry keeps started ahead (:mod:`tb_plugin.artifacts.spare`):
a large snapshot's first read takes it (field by field the whole-file reference, protocols 2-5) under
that file's limits; a dead spare gives way to a fresh child; refusals and the memo bomb's second,
streamed reading hold; no spare is kept when nothing awaits a read, and none outlives its registry or
its process."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

import pytest
from fuzz_files import memo_index_pickle
from method_spy import record_after
from synth.snapshot_writer import write_snapshot_pickle
from test_early_reader import SMALL_SHARED, _write, report_outputs, small_files_logdir
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import isolated, spare
from tb_plugin.artifacts.snapshot import load_snapshot, parse_pickle
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry


@pytest.fixture
def logdir(tmp_path, monkeypatch):
    """A logdir folder, the shared child's size lowered, and every reader child started recorded."""
    root = small_files_logdir(tmp_path, monkeypatch, isolated)
    started: list[isolated.Started] = record_after(monkeypatch, isolated.Started, "__init__")
    yield root, started
    spare.end_spare()


def _registry(root, cache: bool = False) -> RunRegistry:
    reg = RunRegistry(str(root), cache=ParseCache() if cache else None)
    reg.keep_spare_reader()
    reg.scan()
    return reg


def _load(reg: RunRegistry):
    (art,) = [a for a in reg.artifacts() if a.entry.kind == "snapshot" and (a.entry.size or 0) > SMALL_SHARED]
    reg.load_artifact(art)
    return art


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("protocol", (2, 3, 4, 5))
def test_the_spare_answers_the_whole_file_reference(logdir, protocol):
    root, started = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000, protocol)
    assert len(data) > SMALL_SHARED
    reg = _registry(root)
    pid = spare.spare_pid()
    assert pid is not None  # a large snapshot awaits its first read
    art = _load(reg)
    assert art.state == "ready", art.error
    assert [s.from_spare for s in started] == [True] and started[0].child.pid == pid
    assert started[0].child.returncode == 0 and spare.spare_pid() is None  # used once; nothing else waits
    assert_same(art.views.snapshot, parse_pickle(data, stream=True))
    assert_same(art.views.snapshot, load_snapshot(data))
    reg.stop()


def test_the_spare_reads_under_the_files_limits(logdir):
    spare.keep_spare()
    size = 5 << 20
    got = isolated.Started(size, [])  # acknowledged: it waits for the file's bytes
    try:
        assert got.from_spare
        with open(f"/proc/{got.child.pid}/limits") as f:
            limits = {line[:26].strip(): line[26:].split() for line in f}
        assert int(limits["Max address space"][0]) == isolated.memory_limit_bytes(size)
        assert int(limits["Max address space"][0]) < isolated.memory_cap_bytes()
        assert int(limits["Max cpu time"][0]) <= int(isolated.time_limit_s(size)) + 1 + 60  # (+ its start's)
    finally:
        got.kill()


def test_a_dead_spare_gives_way_to_a_fresh_child(logdir):
    root, started = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000)
    reg = _registry(root)
    pid = spare.spare_pid()
    os.kill(pid, signal.SIGKILL)
    art = _load(reg)
    assert art.state == "ready", art.error
    assert [s.from_spare for s in started] == [False] and started[0].child.pid != pid
    assert _gone(pid)  # reaped
    assert_same(art.views.snapshot, load_snapshot(data))
    reg.stop()


def test_a_spare_that_gets_no_acknowledged_terms_is_ended(logdir, monkeypatch):
    spare.keep_spare()
    pid = spare.spare_pid()
    monkeypatch.setattr(spare, "ACCEPTED", b"?")  # never what it answers
    assert spare.take_spare(["100", str(1 << 30), "30"]) is None
    assert _gone(pid) and spare.spare_pid() is None


def test_a_refused_file_gives_the_usual_message(logdir):
    root, started = logdir
    data = pickle.dumps([print] + [f"{i:01000d}" for i in range(3000)], protocol=4)
    (root / "job" / "bad.pickle").write_bytes(data)
    art = _load(_registry(root))
    assert started[0].from_spare and art.state == "error" and "refused to load global" in art.error


def test_a_memo_bomb_on_the_spare_is_sent_again_to_a_streaming_child(logdir):
    root, started = logdir
    data = memo_index_pickle(750_000_000) + bytes(2 << 20)  # a 6 GB memo: MemoryError under the file's limit
    (root / "job" / "bomb.pickle").write_bytes(data)
    art = _load(_registry(root))
    assert art.state == "ready", art.error
    assert [s.mode for s in started] == [[], [isolated.STREAMED]] and started[0].from_spare
    assert art.views.snapshot.devices[0].size.tolist() == [8, 8]


def test_no_spare_without_a_large_uncached_snapshot(logdir):
    root, started = logdir
    (root / "job" / "small.pickle").write_bytes(pickle.dumps({"device_traces": []}, protocol=4))
    _registry(root)
    assert spare.spare_pid() is None
    _write(root / "job" / "snapshot.pickle", 15_000)
    reg = _registry(root, cache=True)
    assert spare.spare_pid() is not None
    art = _load(reg)  # read, and written to the parse cache
    assert art.state == "ready" and spare.spare_pid() is None
    _registry(root, cache=True)  # the cache holds it: no spare
    assert spare.spare_pid() is None


def test_the_spare_is_ended_when_its_registry_stops(logdir):
    root, _ = logdir
    _write(root / "job" / "snapshot.pickle", 15_000)
    reg = _registry(root)
    pid = spare.spare_pid()
    assert pid is not None and not _gone(pid)
    reg.stop()
    assert _gone(pid) and spare.spare_pid() is None


def test_the_spare_is_ended_at_exit(tmp_path):
    """A process that keeps a spare and exits without stopping anything leaves no child behind."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    script = "from tb_plugin.artifacts import spare; spare.keep_spare(); print(spare.spare_pid())"
    done = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=repo), capture_output=True, check=True
    )
    assert _gone(int(done.stdout))


def test_a_started_registry_reads_its_first_snapshot_with_the_spare(logdir):
    """``start()`` (the plugin's, ``serve``'s and the MCP server's registry) keeps the spare before its
    first listing; its artifact thread's read takes it; ``stop()`` leaves no reader child."""
    import time

    root, started = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000)
    reg = RunRegistry(str(root), cache=None, reload_interval=60).start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            a.state in ("ready", "error") for a in reg.artifacts() if a.entry.kind == "snapshot"
        ):
            time.sleep(0.05)
        art = _load(reg)
        assert art.state == "ready", art.error
        assert [s.from_spare for s in started] == [True]
        assert_same(art.views.snapshot, load_snapshot(data))
    finally:
        reg.stop()
    assert spare.spare_pid() is None


def test_a_registry_with_nothing_to_read_leaves_anothers_spare(logdir, tmp_path):
    """Two live registries in one process (a ``--logdir_spec``): the one with no large snapshot does not
    end the spare the other keeps; the spare ends when neither wants it."""
    root, _ = logdir
    _write(root / "job" / "snapshot.pickle", 15_000)
    other = tmp_path / "other"
    other.mkdir()
    wants = _registry(root)
    pid = spare.spare_pid()
    idle = _registry(other)
    idle.scan()
    assert spare.spare_pid() == pid
    idle.stop()
    assert spare.spare_pid() == pid
    wants.stop()
    assert spare.spare_pid() is None and _gone(pid)


def test_several_snapshots_each_take_a_spare_started_beside_the_read_before(logdir):
    """Three large snapshots (a job's ranks): each read takes a spare, the next one started while the
    one before was read; none is left after the last."""
    root, started = logdir
    datas = [_write(root / "job" / f"rank{r}.pickle", 15_000 + r) for r in range(3)]
    reg = _registry(root)
    arts = sorted((a for a in reg.artifacts() if a.entry.kind == "snapshot"), key=lambda a: a.entry.rel)
    for art, data in zip(arts, datas):
        reg.load_artifact(art)
        assert art.state == "ready", art.error
        assert_same(art.views.snapshot, parse_pickle(data, stream=True))
    assert [s.from_spare for s in started] == [True, True, True]
    assert len({s.child.pid for s in started}) == 3 and spare.spare_pid() is None
    reg.stop()


def test_the_report_commands_spare_reads_what_the_early_child_does_not(logdir, monkeypatch):
    """The report command: the first large snapshot has its early child (:mod:`tb_plugin.artifacts.early`),
    the others each take a spare; none is kept for the early child's file."""
    from tb_plugin.artifacts import early

    root, started = logdir
    monkeypatch.setattr(early, "SHARED_MAX_BYTES", SMALL_SHARED)
    _write(root / "job" / "a.pickle", 15_000)
    early.start(str(root))
    assert early.has_child(str(root / "job" / "a.pickle"))
    try:
        reg = _registry(root)
        assert spare.spare_pid() is None  # only the early child's file awaits
        datas = [_write(root / "job" / f"{name}.pickle", 15_001) for name in ("b", "c")]
        reg.scan()
        assert spare.spare_pid() is not None
        arts = sorted((a for a in reg.artifacts() if a.entry.kind == "snapshot"), key=lambda a: a.entry.rel)
        for art in arts:
            reg.load_artifact(art)
            assert art.state == "ready", art.error
        assert [s.from_spare for s in started] == [False, True, True]  # (the early child's stdin is the file)
        for art, data in zip(arts[1:], datas):
            assert_same(art.views.snapshot, load_snapshot(data))
        assert spare.spare_pid() is None
    finally:
        early._end_all()


def test_the_report_command_prints_the_same_with_spares(tmp_path):
    """``kinetoscope report DIR --json`` on three large snapshots: with the early child and spares, with
    spares alone (``--run .``: no early child), and from the parse cache, the same output."""
    root = tmp_path / "logdir"
    root.mkdir()
    for r in range(3):
        with open(root / f"rank{r}.pickle", "wb") as f:
            write_snapshot_pickle(f, 45_000 + r, frames=8, protocol=4)
    outs = report_outputs(root, tmp_path / "cache")
    assert outs[0] == outs[1] == outs[2] == outs[3] and outs[0].count(b'"peak_active_bytes"') >= 3


@pytest.mark.parametrize("line", [b"x 1 2 -\n", b"100 1073741824 nan -\n", b"100 1073741824 30 snapshot\n", b"\n"])
def test_a_spare_given_malformed_terms_ends_without_reading(line):
    """Terms that do not parse (a size that is no number, an unbounded time, a batch mode, none) end the
    spare with nothing written: no acknowledgement, so its parent starts a fresh child."""
    from tb_plugin.artifacts.child_pipes import start_child

    child = start_child("tb_plugin.artifacts.snapshot_child", ["0", str(1 << 30), "60", "spare"])
    out, _ = child.communicate(line + b"\x80\x04N.", timeout=60)
    assert child.returncode == 0 and out == b""


def test_a_fork_made_while_a_spare_waits_does_not_hold_its_input_open(logdir):
    """A process forked while the spare waits (a decode worker) holds the null device where the spare's
    stdin was: the spare sees its file's end when its parent closes that pipe, not when the fork exits."""
    spare.keep_spare()
    fd = spare._spare[0].stdin.fileno()
    pid = os.fork()
    if pid == 0:  # the fork: exit status 0 when the descriptor is the null device
        os._exit(0 if os.readlink(f"/proc/self/fd/{fd}") == os.devnull else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")  # (this process's pipe is untouched)


@pytest.mark.parametrize("from_spare", (True, False))
@pytest.mark.parametrize("protocol", (2, 4))
def test_a_started_childs_answer_comes_in_its_memory_file(logdir, from_spare, protocol):
    """A started reader child with a status pipe (the spare, after its acknowledgement; a fresh child)
    writes its answer into a memory file its parent maps: the same bytes as a child's answer through
    its stdout pipe, and the file closed once taken."""
    import mmap

    from conftest import REPO

    root, _ = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000, protocol)
    terms = [str(len(data)), str(isolated.memory_limit_bytes(len(data))), "600"]
    piped = subprocess.run(  # (no status pipe: the answer on stdout)
        [sys.executable, "-m", "tb_plugin.artifacts.snapshot_child", *terms],
        input=data,
        capture_output=True,
        check=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO),
    ).stdout
    if from_spare:
        spare.keep_spare()
    else:
        spare.end_spare()
    got = isolated.Started(len(data), [])
    assert got.from_spare == from_spare and got.child.answer_fd is not None
    got.child.stdin.write(data)
    got.child.stdin.close()
    done = got.completed()
    assert done.returncode == 0 and isinstance(done.stdout, mmap.mmap)
    assert bytes(done.stdout) == piped and got.child.answer_fd is None


@pytest.mark.parametrize("cached", (True, False))
@pytest.mark.parametrize("large", (True, False))
def test_a_registry_that_keeps_a_spare_imports_the_snapshot_load_ahead(tmp_path, large, cached):
    """A registry whose listing holds a large snapshot awaiting its first read imports what that read
    imports (the views, their analyses) while it waits; one with nothing to read does not. Nothing imports
    ``zipfile``, with a parse cache or without (its array files are not zip archives)."""
    from conftest import REPO

    root = tmp_path / "logdir" / "job"
    root.mkdir(parents=True)
    _write(root / "snapshot.pickle", 70_000 if large else 2_000)  # (over / under the shared child's 4 MiB)
    script = (
        "import sys\n"
        "from tb_plugin.registry.cache import ParseCache\n"
        "from tb_plugin.registry.runs import RunRegistry\n"
        "reg = RunRegistry(sys.argv[1], cache=ParseCache() if sys.argv[2] == 'True' else None)\n"
        "reg.keep_spare_reader()\n"
        "reg.scan()\n"
        "print('tb_plugin.registry.artifact_views' in sys.modules, 'tb_plugin.analysis.snapshot' in sys.modules,"
        " 'zipfile' in sys.modules)\n"
        "reg.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root.parent), str(cached)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache")),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(large)] * 2 + ["False"]
