"""The fixed costs of a cold ``kinetoscope report`` cut without changing any answer: the local file
system without fsspec (storage/local.py, same answers as fsspec's LocalFileSystem), imports left to
the commands that need them, analysis-cache writes without fsync, the raw-events fsync moved to the
deferred write, heap trims only for large traces, the collector frozen before the process exits, and large
arrays served from the heap (glibc's mmap threshold raised)."""

from __future__ import annotations

import gc
import gzip
import json
import os
import subprocess
import sys

import pytest
from conftest import sample

from tb_plugin.registry import parse as parse_mod
from tb_plugin.registry import report as report_mod
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.results import ResultCache
from tb_plugin.storage import private_files
from tb_plugin.storage.local import LocalFS, is_plain_local, strip_protocol
from tb_plugin.storage.remote import open_logdir, url_to_fs
from tb_plugin.trace import heap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _tree(root):
    """Nested folders, a gzip trace, a symlink to a file, a symlink to a folder, a dangling link and a
    hard link: what a logdir listing meets."""
    (root / "run" / "deep").mkdir(parents=True)
    (root / "run" / "deep" / "w0.1.pt.trace.json").write_text('{"traceEvents": []}')
    (root / "run" / "w1.2.pt.trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    (root / "top.json").write_text("[1, 2, 3]")
    os.symlink(root / "top.json", root / "run" / "link.json")
    os.symlink(root / "run" / "deep", root / "dirlink")
    os.symlink(root / "missing", root / "dangling")
    os.link(root / "top.json", root / "hard.json")


def test_local_fs_answers_as_fsspec(tmp_path):
    """find/info/exists/isfile/isdir/size/cat_file/unstrip_protocol equal fsspec's LocalFileSystem's
    on a tree with symlinks (to a file, to a folder, dangling) and a hard link."""
    fsspec_local = pytest.importorskip("fsspec.implementations.local").LocalFileSystem()
    _tree(tmp_path)
    ours = LocalFS()
    root = str(tmp_path)
    assert ours.find(root, detail=True) == fsspec_local.find(root, detail=True)
    assert ours.find(root) == fsspec_local.find(root)
    assert len(ours.find(root)) == 7  # the dangling link and the folder link are listed, not descended
    for rel in ("top.json", "run", "run/link.json", "dirlink", "dangling", "hard.json", "nope"):
        p = os.path.join(root, rel)
        assert ours.exists(p) == fsspec_local.exists(p), rel
        assert ours.isfile(p) == fsspec_local.isfile(p), rel
        assert ours.isdir(p) == fsspec_local.isdir(p), rel
        if fsspec_local.exists(p):
            assert ours.info(p) == fsspec_local.info(p), rel
            assert ours.size(p) == fsspec_local.size(p), rel
    f = os.path.join(root, "top.json")
    for start, end in ((None, None), (0, 4), (2, None), (-3, None), (1, -1)):
        assert ours.cat_file(f, start=start, end=end) == fsspec_local.cat_file(f, start=start, end=end)
    for spelled in (root, root + "/", "file://" + root):
        assert ours.unstrip_protocol(spelled) == fsspec_local.unstrip_protocol(spelled)
        assert strip_protocol(spelled) == fsspec_local._strip_protocol(spelled)
    assert ours.find(f) == fsspec_local.find(f)  # a file: itself


def test_plain_local_paths_and_the_rest(tmp_path, monkeypatch):
    """Paths and file:// URLs open as fsspec would (same fs kind and root); other spellings go to fsspec."""
    import fsspec

    monkeypatch.chdir(tmp_path)
    for url in (str(tmp_path), "rel/dir", "./rel", ".", "file://" + str(tmp_path), str(tmp_path) + "/"):
        assert is_plain_local(url), url
        fs, path = url_to_fs(url)
        assert isinstance(fs, LocalFS)
        assert path == fsspec.core.url_to_fs(url)[1], url
        assert open_logdir(url)[1] == (path.rstrip("/") or "/")
    for url in ("s3://bucket/x", "file:rel", "memory://x", "simplecache::file:///tmp", "data:,abc"):
        assert not is_plain_local(url), url
    assert not isinstance(url_to_fs("memory://x/y")[0], LocalFS)


def _cli_in_child(tmp_path, argv: list[str], unwanted: str):
    """``cli.main(argv)`` in a fresh interpreter: (exit status, the imported modules for which the
    expression ``unwanted`` (of ``m``, a module name) is true, the finished process)."""
    code = (
        "import sys, tb_plugin.cli as c\n"
        f"status = c.main({argv!r})\n"
        f"bad = sorted(m for m in list(sys.modules) if {unwanted})\n"
        "sys.stderr.write(f'STATUS {status} BAD {bad}\\n')\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    line = next(x for x in got.stderr.splitlines() if x.startswith("STATUS "))
    status, bad = line[len("STATUS ") :].split(" BAD ", 1)
    return int(status), bad, got


def test_cold_report_imports_no_fsspec_nor_other_commands(tmp_path):
    """A local ``report --json`` never imports fsspec, the MCP tools, the diff gate, the diff, the Memory
    view's pair index or the memory artifacts' views (their modules cost a cold report ~50 ms of
    imports), nor ``multiprocessing`` and ``socket`` (a pool's, ~4 ms), nor ``logging`` and
    ``concurrent.futures`` (~4 ms: the module loggers are made when first used, tb_plugin/logs.py) nor the
    report's records (types only, ~3 ms); its answer is complete."""
    run = tmp_path / "logs"
    run.mkdir()
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]
    (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    status, bad, got = _cli_in_child(
        tmp_path,
        ["report", str(run), "--json"],
        (
            "m in ('fsspec', 'tb_plugin.interfaces.mcp_tools', 'tb_plugin.cli.gate', 'tb_plugin.analysis.diff', "
            "'tb_plugin.registry.memory_events', 'tb_plugin.registry.artifact_views', 'tb_plugin.artifacts.snapshot', "
            "'multiprocessing', 'socket', 'logging', 'concurrent.futures', 'tb_plugin.registry.records')"
        ),
    )
    assert (status, bad) == (0, "[]"), got.stderr
    assert json.loads(got.stdout)["runs"][0]["workers"][0]["error"] is None


@pytest.mark.corpus
def test_cold_report_of_a_real_trace_imports_no_masked_arrays(tmp_path):
    """A cold ``report --json`` of the 35 MB V100 sample never imports ``numpy.ma`` (~6 ms of CPU before
    this session: numpy 2.4's ``np.unique``, ``np.percentile`` and ``np.median`` import or ask it; the
    analyses call ``trace/uniques`` instead)."""
    run = tmp_path / "logs"
    run.mkdir()
    name = "worker0.1623143089861.pt.trace.json.gz"
    (run / name).write_bytes(sample(f"kineto/resnet50_num_workers_0/{name}").read_bytes())
    status, bad, got = _cli_in_child(
        tmp_path, ["report", str(run), "--json"], "m == 'numpy.ma' or m.startswith('numpy.ma.')"
    )
    assert (status, bad) == (0, "[]"), got.stderr
    assert json.loads(got.stdout)["runs"][0]["workers"][0]["error"] is None


def test_missing_logdir_answers_before_the_heavy_imports(tmp_path):
    """``report`` on a missing local logdir exits 2 without importing numpy, the registry or any
    analysis, nor ``dataclasses`` (its ``inspect``, ~6 ms: the settings are a plain immutable class): the command's
    start-up is the interpreter's and argparse's."""
    status, bad, got = _cli_in_child(
        tmp_path,
        ["report", str(tmp_path / "missing")],
        (
            "m in ('numpy', 'orjson', 'fsspec', 'dataclasses', 'inspect') or "
            "m.startswith(('tb_plugin.analysis', 'tb_plugin.registry', 'tb_plugin.trace'))"
        ),
    )
    assert (status, bad) == (2, "[]"), got.stderr
    assert "no such directory" in got.stderr


def test_cli_names_the_executors_variable():
    """cli/__init__.py spells the executor's environment variable itself (no registry import for ``--help``)."""
    from tb_plugin import cli
    from tb_plugin.registry import executors

    assert cli.ENV_VAR == executors.ENV_VAR


def test_analysis_cache_entries_skip_fsync_parse_cache_keeps_it(tmp_path, monkeypatch):
    """ResultCache.put renames without fsync (and reads back the same value); write_atomic's default
    still fsyncs."""
    synced = []
    real = os.fsync
    monkeypatch.setattr(private_files.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    cache = ParseCache(str(tmp_path / "c"))
    results = ResultCache(cache, "file:///x", "1:2")
    results.put("view:x", {"a": [1.5, 2]})
    assert synced == []
    assert results.get("view:x") == (True, {"a": [1.5, 2]})
    private_files.write_atomic(str(tmp_path / "c" / "y"), lambda f: f.write(b"y"))
    assert len(synced) == 1


def test_deferred_parse_fsyncs_the_raw_events_in_the_deferred_call(tmp_path, monkeypatch):
    """With ``deferred``, parse_entry renames the raw-events file now and its fsync is the deferred
    call's first step (before the columns' entry); without, it is fsynced before the rename."""
    trace_path = tmp_path / "w.1.pt.trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]
    trace_path.write_text(json.dumps({"traceEvents": events}))
    calls = []
    monkeypatch.setattr(parse_mod, "fsync_path", lambda p: calls.append(("fsync_path", p)))
    monkeypatch.setattr(private_files.os, "fsync", lambda fd: calls.append(("fsync", fd)))
    cache = ParseCache(str(tmp_path / "c"))
    deferred: list = []
    size = trace_path.stat().st_size
    trace, hit = parse_mod.parse_entry(LocalFS(), str(trace_path), "u", "v", size, cache, None, deferred)
    assert not hit and calls == [] and len(deferred) == 1
    assert os.path.getsize(trace.meta["events_file"]) == trace.meta["events_bytes"] > 0
    deferred[0]()
    assert calls[0] == ("fsync_path", trace.meta["events_file"]) and calls[1][0] == "fsync"  # then the npz
    calls.clear()
    parse_mod.parse_entry(LocalFS(), str(trace_path), "u2", "v", size, cache)  # no deferred: fsynced at once
    assert calls and calls[0][0] == "fsync"


def test_heap_trims_only_for_large_traces(monkeypatch):
    """release_after asks malloc_trim only from TRIM_ABOVE_EVENTS events and memory events on."""
    asked = []
    monkeypatch.setattr(heap, "release_freed_memory", lambda: asked.append(1) or True)
    assert heap.release_after(heap.TRIM_ABOVE_EVENTS - 1) is False and asked == []
    assert heap.release_after(heap.TRIM_ABOVE_EVENTS) is True and asked == [1]


def test_collect_before_the_trim_only_for_large_traces(monkeypatch):
    """collect_and_release_after runs a full cyclic collection, then the trim, from TRIM_ABOVE_EVENTS on;
    below it does neither."""
    calls = []
    monkeypatch.setattr(heap.gc, "collect", lambda *a: calls.append("collect") or 0)
    monkeypatch.setattr(heap, "release_freed_memory", lambda: calls.append("trim") or True)
    assert heap.collect_and_release_after(heap.TRIM_ABOVE_EVENTS - 1) is False and calls == []
    assert heap.collect_and_release_after(heap.TRIM_ABOVE_EVENTS) is True and calls == ["collect", "trim"]


def test_parse_entry_collects_before_its_last_trim(tmp_path, monkeypatch):
    """A parsed (not cached) file ends with collect_and_release_after of its events + memory events;
    a cache hit only trims (release_after)."""
    trace_path = tmp_path / "w.1.pt.trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(7)]
    trace_path.write_text(json.dumps({"traceEvents": events}))
    collected, trimmed = [], []
    monkeypatch.setattr(parse_mod, "collect_and_release_after", collected.append)
    monkeypatch.setattr(parse_mod, "release_after", trimmed.append)
    cache = ParseCache(str(tmp_path / "c"))
    size = trace_path.stat().st_size
    trace, hit = parse_mod.parse_entry(LocalFS(), str(trace_path), "u", "v", size, cache)
    assert not hit and len(trace.events) == 7 and collected == [7]
    collected.clear()
    trimmed.clear()
    _, hit = parse_mod.parse_entry(LocalFS(), str(trace_path), "u", "v", size, cache)
    assert hit and collected == [] and trimmed == [7]


def test_rank_aggregate_trims_by_trace_size(monkeypatch):
    """rank_aggregate passes the trace's events + memory events to release_after after each section."""
    seen = []
    monkeypatch.setattr(report_mod, "release_after", seen.append)

    class Views:
        class trace:
            events, memory = [0] * 7, [0] * 5
            derived: dict = {}

        rank_reduce = staticmethod(dict)
        insights = staticmethod(lambda: None)

    monkeypatch.setattr(report_mod, "report_insights", lambda found: {})
    report_mod.rank_aggregate(Views(), False)
    assert seen == [12, 12]


def test_entry_freezes_the_collector(monkeypatch, tmp_path):
    """``kinetoscope`` (cli.entry) runs main as the whole process, freezes the collector and ends the
    process with main's status (here recorded instead); with another thread still running it returns
    the status to the interpreter's own exit; main() called directly freezes nothing."""
    import threading

    from tb_plugin import cli

    calls, ended = [], []
    monkeypatch.setattr(cli, "main", lambda **kw: calls.append(kw) or 7)
    monkeypatch.setattr(cli, "_exit_now", ended.append)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    gc.unfreeze()
    try:
        assert cli.entry() == 7
        assert gc.get_freeze_count() > 0
        assert calls == [{"whole_process": True}] and ended == [7]
        monkeypatch.setattr(threading, "active_count", lambda: 2)  # a thread left: the interpreter's exit
        assert cli.entry() == 7 and ended == [7]
    finally:
        gc.unfreeze()


def test_the_command_keeps_one_thread_for_numeric_libraries():
    """``kinetoscope`` (cli.entry) sets one thread for OpenBLAS (and OpenMP, MKL) before anything imports
    numpy, in its own environment and so its children's, unless the caller named a count; numpy imported
    by the command then starts no OpenBLAS thread (its import starts one per core otherwise)."""
    probe = (  # main replaced: the environment entry() leaves, then numpy imported under it
        "import os, sys, threading\n"
        "import tb_plugin.cli as c\n"
        "def main(whole_process):\n"
        "    print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'))\n"
        "    import numpy\n"
        "    print(len(os.listdir('/proc/self/task')))\n"
        "    return 0\n"
        "c.main = main\n"
        "sys.exit(c.entry())\n"
    )
    base = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    for preset, expected in ((None, "1 1"), ("3", "3 1")):
        env = dict(base, PYTHONPATH=REPO, **({"OPENBLAS_NUM_THREADS": preset} if preset else {}))
        got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
        assert got.returncode == 0, got.stderr
        lines = got.stdout.splitlines()
        assert lines[0] == expected, got.stdout
        if preset is None and os.path.isdir("/proc/self/task"):
            assert lines[1] == "1", got.stdout  # numpy's import started no thread


def test_whole_process_report_freezes_its_imports(tmp_path):
    """``kinetoscope report`` as the whole process (``python -m tb_plugin.cli``) collects with the
    objects of its imports frozen and ends with the collector on and its answer complete; ``cli.main``
    called from Python leaves the caller's collector as it was (nothing frozen, still enabled)."""
    run = tmp_path / "logs"
    run.mkdir()
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]
    (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    probe = (  # the collector's state when the registry scans the logdir (after the imports), and at the end
        "import gc, sys\n"
        "import tb_plugin.cli as c, tb_plugin.registry.runs as runs\n"
        "scan = runs.RunRegistry.scan\n"
        "def spy(self):\n"
        "    sys.stderr.write('FROZEN %d ENABLED %s\\n' % (gc.get_freeze_count(), gc.isenabled()))\n"
        "    return scan(self)\n"
        "runs.RunRegistry.scan = spy\n"
        f"status = c.main({['report', str(run), '--json']!r}, whole_process=WHOLE)\n"
        "sys.stderr.write('STATUS %d ENABLED %s\\n' % (status, gc.isenabled()))\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    for whole in (True, False):
        got = subprocess.run(
            [sys.executable, "-c", probe.replace("WHOLE", str(whole))],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        frozen = next(x for x in got.stderr.splitlines() if x.startswith("FROZEN "))
        assert (int(frozen.split()[1]) > 10_000) == whole, got.stderr
        assert frozen.endswith("ENABLED True") and "STATUS 0 ENABLED True" in got.stderr, got.stderr
        assert json.loads(got.stdout)["runs"][0]["workers"][0]["error"] is None


def test_entry_pauses_the_collector_until_the_commands_imports_are_made(tmp_path):
    """``kinetoscope`` (cli.entry) runs the command line's first imports without the collector: ``report``
    enables it once its imports are frozen (before it scans the logdir), any other command before it
    starts; it is on when the command returns."""
    run = tmp_path / "logs"
    run.mkdir()
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]
    (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    probe = (
        "import gc, os, sys\n"
        "import tb_plugin.cli as c, tb_plugin.cli.hang as hang, tb_plugin.artifacts.early as early\n"
        "import tb_plugin.registry.runs as runs\n"
        "say = lambda what: sys.stderr.write('%s %s\\n' % (what, gc.isenabled()))\n"
        "start, scan = early.start, runs.RunRegistry.scan\n"
        "early.start = lambda *a, **k: (say('EARLY'), start(*a, **k))[1]\n"
        "runs.RunRegistry.scan = lambda self: (say('SCAN'), scan(self))[1]\n"
        "hang.command = lambda *a: (say('HANG'), 0)[1]\n"
        "c._exit_now = lambda status: (say('EXIT'), sys.stderr.flush(), os._exit(status))\n"
        "sys.argv = ['kinetoscope'] + sys.argv[1:]\n"
        "c.entry()\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    for argv, expected in (
        (["report", str(run), "--json"], ["EARLY False", "SCAN True", "EXIT True"]),
        (["hang", str(run)], ["HANG True", "EXIT True"]),
    ):
        got = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=120)
        assert got.returncode == 0, got.stderr
        said = [x for x in got.stderr.splitlines() if x.split(" ")[0] in ("EARLY", "SCAN", "HANG", "EXIT")]
        assert said == expected, got.stderr


def test_the_command_ends_with_its_status_and_its_output_flushed(tmp_path):
    """``python -m tb_plugin.cli report --json`` (ended by os._exit after the atexit functions) prints its
    whole answer and exits 0; a logdir without traces still exits 1."""
    run = tmp_path / "logs"
    run.mkdir()
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]
    (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    env = dict(os.environ, PYTHONPATH=REPO, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "tb_plugin.cli", "report"]
    got = subprocess.run([*cmd, str(run), "--json"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["runs"][0]["workers"][0]["error"] is None
    (tmp_path / "empty").mkdir()
    got = subprocess.run(
        [*cmd, str(tmp_path / "empty")], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert got.returncode == 1 and "no trace files" in got.stderr


def test_streamed_parse_trims_only_files_large_before_streaming(tmp_path, monkeypatch):
    """A file streamed only for the cores (below STREAM_ABOVE_BYTES) is trimmed by the trace-size rule
    (release_after); one above it gives its chunks' pages back as before."""
    path = tmp_path / "w.1.pt.trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(50)]
    path.write_text(json.dumps({"traceEvents": events}))
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")  # stream this small file
    trims, after = [], []
    monkeypatch.setattr(parse_mod, "release_freed_memory", lambda: trims.append(1) or True)
    monkeypatch.setattr(parse_mod, "release_after", lambda items: after.append(items))
    assert len(parse_mod.load_trace_file(str(path)).events) == 50
    assert trims == [] and after == [50]
    monkeypatch.setattr(parse_mod, "STREAM_ABOVE_BYTES", 0)  # as if it were above the old threshold
    after.clear()
    parse_mod.load_trace_file(str(path))
    assert trims == [1] and after == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_report_serves_large_arrays_from_the_heap():
    """``kinetoscope report`` sets glibc's mmap threshold to 1 GiB before its analyses (trace/heap.py):
    a 64 MB array freed and allocated again then reuses the heap's pages, where glibc's default (at most
    32 MiB) maps and zero-fills fresh ones each time (measured here as minor page faults)."""
    code = r"""
import resource, sys, numpy as np
sys.path.insert(0, sys.argv[1])
from tb_plugin.trace import heap
if sys.argv[2] == "1":
    assert heap.tune_allocator()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.ones(8 << 20); del a      # 64 MB
before = faults()
for _ in range(5):
    a = np.ones(8 << 20); del a
print(faults() - before)
"""
    tuned, default = (
        int(subprocess.run([sys.executable, "-c", code, REPO, flag], capture_output=True, text=True, check=True).stdout)
        for flag in ("1", "0")
    )
    assert tuned < 100 < default  # 5 × 64 MB: ~16 000 faults of 4 KiB (or ~160 of 2 MiB) without


def test_host_name_is_the_socket_modules():
    """The rank results' host name without ``socket`` is the one ``socket.gethostname`` gives."""
    import socket

    from tb_plugin.registry.executors.task import host_name

    assert host_name() == socket.gethostname()


def test_pool_worker_known_without_importing_multiprocessing(monkeypatch):
    """A process that never imported ``multiprocessing`` is no pool worker; where it is imported, its own
    ``parent_process`` answers (a worker decodes on one core)."""
    import multiprocessing
    import types

    from tb_plugin.trace import decode_stream

    monkeypatch.delenv("KINETOSCOPE_DECODE_WORKERS", raising=False)
    assert decode_stream._in_pool_worker() is False  # the test process: multiprocessing imported, no parent
    monkeypatch.setitem(sys.modules, "multiprocessing", types.SimpleNamespace(parent_process=lambda: object()))
    assert decode_stream._in_pool_worker() is True
    assert decode_stream.current().decode_workers is None and decode_stream.default_workers() == 1
    monkeypatch.delitem(sys.modules, "multiprocessing")
    assert decode_stream._in_pool_worker() is False
    assert multiprocessing.parent_process() is None
