"""The early read (storage/early_read.py): a logdir's one gzip trace read by a forked child while the
command line imports. The bytes claimed are the ones the registry would read; no child where it cannot
pay or the answer would not be used (several traces, plain JSON, a large file, a cached parse, another
thread, one core); a file changed since the start, a failed read or an unclaimed child leave nothing
behind and the registry reads (and reports errors) as before; the whole command's report is the same."""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import subprocess
import sys
import threading

import pytest

from tb_plugin.registry.parse import load_trace_file
from tb_plugin.storage import early_read as er
from tb_plugin.storage.local import LocalFS
from tb_plugin.storage.read import read_trace_bytes
from tb_plugin.trace.errors import TraceReadError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd here")


def alone_but_for_earlier_tests(monkeypatch) -> None:
    """Threads that earlier tests of this process left running do not count; one started here does."""
    earlier = set(threading.enumerate())
    # (the module is skipped without memory files: only the thread test is relaxed)
    monkeypatch.setattr(er, "may_fork_alone", lambda: set(threading.enumerate()) <= earlier)


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(er, "_second_core", lambda: True)
    alone_but_for_earlier_tests(monkeypatch)
    yield
    er._end()


def trace_bytes(n: int = 300) -> bytes:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 5}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(n)
    ]
    return json.dumps({"traceEvents": events}).encode()


def logdir(tmp_path, *names: str, data: bytes | None = None):
    run = tmp_path / "logs"
    (run / "sub").mkdir(parents=True)
    for name in names:
        raw = trace_bytes() if data is None else data
        (run / "sub" / name).write_bytes(gzip.compress(raw) if name.endswith(".gz") and data is None else raw)
    return run


def test_the_claimed_bytes_are_the_registrys(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.1.pt.trace.json.gz", "notes.txt")
    path = str(run / "sub" / "w.1.pt.trace.json.gz")
    er.start(str(run))
    assert er._pending is not None and er._pending.real == path
    got = er.claim(path)
    assert got is not None and bytes(got) == bytes(read_trace_bytes(LocalFS(), path))
    assert er.claim(path) is None  # claimed once
    assert er._pending is None


def test_a_trace_file_given_as_the_logdir(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    path = str(logdir(tmp_path, "w.1.pt.trace.json.gz") / "sub" / "w.1.pt.trace.json.gz")
    er.start(path)
    got = er.claim(path)
    assert got is not None and bytes(got) == bytes(read_trace_bytes(LocalFS(), path))


@pytest.mark.parametrize(
    "names", [("a.pt.trace.json.gz", "b.pt.trace.json.gz"), ("a.pt.trace.json",), ("notes.txt",), ()]
)
def test_no_child_but_for_one_gzip_trace(tmp_path, monkeypatch, names):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    er.start(str(logdir(tmp_path, *names)))
    assert er._pending is None


def test_no_child_for_a_large_file_one_core_another_thread_or_a_cached_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.pt.trace.json.gz")
    path = run / "sub" / "w.pt.trace.json.gz"
    monkeypatch.setattr(er, "MAX_GZIP_BYTES", path.stat().st_size - 1)  # streamed by the registry
    er.start(str(run))
    assert er._pending is None
    monkeypatch.undo()
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    alone_but_for_earlier_tests(monkeypatch)
    monkeypatch.setattr(er, "_second_core", lambda: False)
    er.start(str(run))
    assert er._pending is None
    monkeypatch.setattr(er, "_second_core", lambda: True)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        er.start(str(run))
    finally:
        stop.set()
        other.join()
    assert er._pending is None
    monkeypatch.setattr(er, "cached_entry_exists", lambda p, st: p == str(path))
    er.start(str(run))
    assert er._pending is None
    er.start(str(run), cached=False)  # --no-cache: the cache is not read
    assert er._pending is not None


def test_no_fork_now_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.pt.trace.json.gz")

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(er.os, "fork", no_fork)
    er.start(str(run))
    assert er._pending is None


def test_a_file_changed_since_the_start_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.pt.trace.json.gz")
    path = run / "sub" / "w.pt.trace.json.gz"
    er.start(str(run))
    pid = er._pending.reading.pid
    path.write_bytes(gzip.compress(trace_bytes(400)))
    assert er.claim(str(path)) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped
    trace = load_trace_file(str(path), fs=LocalFS())
    assert len(trace.events) == 400


def test_a_failed_read_leaves_the_error_to_the_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.pt.trace.json.gz", data=gzip.compress(trace_bytes())[:-20])  # cut off
    path = str(run / "sub" / "w.pt.trace.json.gz")
    er.start(str(run))
    assert er._pending is not None
    with pytest.raises(TraceReadError, match="truncated"):
        load_trace_file(path, fs=LocalFS())  # (claims the failed child's nothing, then reads)
    assert er._pending is None


def test_an_unclaimed_child_is_ended_at_exit(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.pt.trace.json.gz")
    er.start(str(run))
    pid = er._pending.reading.pid
    er._end()
    assert er._pending is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_the_commands_report_is_the_same_with_the_early_read(tmp_path):
    run = logdir(tmp_path, "w.1.pt.trace.json.gz")
    probe = (  # the command as the console script runs it, with the read counted
        "import sys\n"
        "from tb_plugin.storage import early_read as er\n"
        "er._second_core = lambda: True\n"
        "claim = er.claim_both\n"
        "def spy(path):\n"
        "    got = claim(path)\n"
        "    sys.stderr.write('CLAIMED %s SPLIT %s ON DISK %s\\n' % (got[0] is not None, got[1] is not None, got[2] is not None))\n"
        "    return got\n"
        "er.claim_both = spy\n"
        "import tb_plugin.registry.parse as parse\n"
        "parse.claim_early_read = spy\n"
        f"sys.argv = ['kinetoscope', 'report', {str(run)!r}, '--json']\n"
        "from tb_plugin.cli import entry\n"
        "entry()\n"
    )
    outputs = []
    for early in (True, False):
        env = dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / f"cache{early}"))
        code = probe if early else probe.replace("er._second_core = lambda: True", "er._second_core = lambda: False")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert got.returncode == 0, got.stderr
        # (split by the child, early_split.py, into a file of the cache's folder that becomes the events file)
        assert f"CLAIMED {early} SPLIT {early} ON DISK {early}" in got.stderr, got.stderr
        outputs.append(got.stdout)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])


def test_then_writes_beside_the_bytes_and_a_failing_then_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.1.pt.trace.json.gz")
    path = str(run / "sub" / "w.1.pt.trace.json.gz")

    def then(data, fd):  # (in the child) its bytes, reversed, into its own file
        os.write(fd, bytes(data)[::-1])

    def failing(data, fd):
        os.write(fd, b"half")
        raise MemoryError

    expected = bytes(read_trace_bytes(LocalFS(), path))
    for make, wrote in ((lambda: then, expected[::-1]), (lambda: failing, None)):
        er.start(str(run), then=make)
        got, after, on_disk = er.claim_both(path)
        assert on_disk is None  # (no folder given: a memory file)
        assert got is not None and bytes(got) == expected
        assert (after if after is None else bytes(after)) == wrote


def test_a_corrupt_stream_is_reported_in_zlibs_words(tmp_path, monkeypatch):
    """The child inflates with ISA-L (when installed), whose errors say less: its failure leaves the read to
    the registry, whose message is zlib's."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    packed = gzip.compress(trace_bytes(3000))
    bad = packed[:100] + bytes(b ^ 0x5A for b in packed[100:140]) + packed[140:]
    run = logdir(tmp_path, "w.pt.trace.json.gz", data=bad)
    path = str(run / "sub" / "w.pt.trace.json.gz")
    with pytest.raises(TraceReadError) as alone:
        load_trace_file(path, fs=LocalFS())  # no child: the registry's own read
    er.start(str(run))
    assert er._pending is not None
    with pytest.raises(TraceReadError) as after_child:
        load_trace_file(path, fs=LocalFS())
    assert str(after_child.value) == str(alone.value) and "corrupt gzip data" in str(alone.value)
    assert er._pending is None


def test_the_commands_split_is_imported_by_the_child():
    """The command line's ``then`` (cli/report.py) imports the split's modules (msgspec, ~13 ms) only when
    the child calls it, after its inflate: the child is forked before them."""
    code = (
        "import sys\n"
        "import tb_plugin.cli.report as r\n"
        "then = r._split_writer()\n"
        "print('tb_plugin.trace.early_split' in sys.modules, 'msgspec' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO)
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert got.stdout.split() == ["False", "False"], got.stderr


def test_then_writes_into_an_unnamed_file_of_then_dir(tmp_path, monkeypatch):
    """With a folder (the parse cache's), what ``then`` writes lies in an unnamed file there, handed to the
    claimer open (its bytes those mapped); without one, or a folder that cannot hold it, in memory."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.1.pt.trace.json.gz")
    path = str(run / "sub" / "w.1.pt.trace.json.gz")
    folder = tmp_path / "cache"
    folder.mkdir()

    def then(data, fd):  # (in the child) its bytes, reversed, into its own file
        os.write(fd, bytes(data)[::-1])

    expected = bytes(read_trace_bytes(LocalFS(), path))[::-1]
    er.start(str(run), then=lambda: then, then_dir=str(folder))
    got = er.claim_both(path)
    assert got.then is not None and bytes(got.then) == expected
    assert got.then_file is not None and os.pread(got.then_file, len(expected) + 1, 0) == expected
    assert os.readlink(f"/proc/self/fd/{got.then_file}").startswith(str(folder))  # (an unnamed file there)
    assert list(folder.iterdir()) == []
    os.close(got.then_file)
    for then_dir in (None, str(tmp_path / "missing")):
        er.start(str(run), then=lambda: then, then_dir=then_dir)
        got = er.claim_both(path)
        assert got.then is not None and bytes(got.then) == expected and got.then_file is None


@pytest.mark.parametrize("deferred", [False, True])
def test_the_split_on_disk_becomes_the_events_file(tmp_path, monkeypatch, deferred):
    """The early split written into an unnamed file of the cache's folder is put in place as the parse
    cache's events file (the same bytes as the decode writes without it), and nothing is written through
    the side file's writer; the cached trace reads back the same."""
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.parse import parse_entry
    from tb_plugin.storage.writer import BackgroundWriter
    from tb_plugin.trace.early_split import write_split

    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.1.pt.trace.json.gz", data=gzip.compress(trace_bytes(7_000)))
    path = str(run / "sub" / "w.1.pt.trace.json.gz")
    size = os.path.getsize(path)
    written: list[int] = []
    real_write = BackgroundWriter.write
    monkeypatch.setattr(
        BackgroundWriter, "write", lambda self, chunk: written.append(len(chunk)) or real_write(self, chunk)
    )

    def parse(folder: str, early: bool):
        cache = ParseCache(str(tmp_path / folder))
        if early:
            er.start(str(run), then=lambda: write_split, then_dir=str(tmp_path / folder))
            assert er._pending is not None and er._pending.reading.then_on_disk
        later: list = []
        trace, hit = parse_entry(LocalFS(), path, "u", "v", size, cache, None, later if deferred else None)
        for write in later:
            write()
        assert not hit and er._pending is None
        return trace, cache

    ref, _ = parse("ref", False)
    assert sum(written) == len(open(ref.meta["events_file"], "rb").read()) > 0
    written.clear()
    got, cache = parse("cache", True)
    assert written == []  # (the decode only counted the offsets)
    events = open(got.meta["events_file"], "rb").read()
    assert events == open(ref.meta["events_file"], "rb").read() and got.meta["events_bytes"] == len(events)
    assert sorted(p.name for p in pathlib.Path(got.meta["events_file"]).parent.iterdir() if p.suffix == ".tmp") == []
    back = cache.get("u", "v")
    assert back is not None and back.meta["events_file"] == got.meta["events_file"]
    assert (back.events.ts == ref.events.ts).all() and len(back.events) == len(ref.events)


def test_a_failed_events_write_closes_the_split_file(tmp_path, monkeypatch):
    """When the events file cannot be written (its rename fails), the trace is still parsed (without the full
    event args, as for an unwritable cache) and the split's file taken by the writer is closed."""
    from tb_plugin.registry import parse as parse_mod
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.trace.early_split import write_split

    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = logdir(tmp_path, "w.1.pt.trace.json.gz", data=gzip.compress(trace_bytes(3_000)))
    path = str(run / "sub" / "w.1.pt.trace.json.gz")
    cache = ParseCache(str(tmp_path / "cache"))
    real_write_atomic = parse_mod.write_atomic

    def failing(target, write, durable=True):
        if target.endswith(".events.bin"):
            real_write_atomic(target + ".x", write, durable)  # (the parse runs, then the rename fails)
            raise PermissionError(target)
        return real_write_atomic(target, write, durable)

    monkeypatch.setattr(parse_mod, "write_atomic", failing)
    before = set(os.listdir("/proc/self/fd"))
    er.start(str(run), then=lambda: write_split, then_dir=str(tmp_path / "cache"))
    assert er._pending is not None and er._pending.reading.then_on_disk
    trace, hit = parse_mod.parse_entry(LocalFS(), path, "u", "v", os.path.getsize(path), cache)
    assert not hit and len(trace.events) == 3_000 and "events_file" not in trace.meta
    assert set(os.listdir("/proc/self/fd")) <= before  # (the split's file closed, not leaked)
