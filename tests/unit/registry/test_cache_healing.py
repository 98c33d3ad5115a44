"""The parse cache heals and stays private."""

from __future__ import annotations

import glob
import json
import os
import stat
import subprocess
import sys
import threading

import pytest
from synth.traces import SynthSpec, synthesize, write_trace

from tb_plugin import api
from tb_plugin.registry import cache as cache_mod
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.storage.private_files import open_regular, sweep_temps


def _logdir(tmp_path, mode=None):
    run = tmp_path / "logs" / "run"
    run.mkdir(parents=True)
    path = run / "w.pt.trace.json"
    write_trace(synthesize(SynthSpec(steps=2, with_memory=True)), path)
    if mode is not None:
        os.chmod(path, mode)
    return tmp_path / "logs", path


def _overview(logdir, cache_dir):
    reg = RunRegistry(str(logdir), cache=ParseCache(str(cache_dir)))
    reg.scan()
    (state,) = reg._files.values()
    reg.load(state)
    code, doc = api.overview(reg, {"run": "run", "worker": state.worker, "span": state.span})
    assert doc.get("state") == "ready", doc
    return reg, code, doc


def _entries(cache_dir, pattern):
    return sorted(glob.glob(os.path.join(str(cache_dir), "*", "*", pattern)))


@pytest.mark.parametrize("pattern", ["[0-9a-f]" * 64 + ".arrays", "*.events.bin"])
def test_zero_length_and_fifo_entries_are_misses_and_rewritten(tmp_path, pattern):
    logdir, _ = _logdir(tmp_path)
    cache_dir = tmp_path / "cache"
    _, code, first = _overview(logdir, cache_dir)
    assert code == 200
    (entry,) = _entries(cache_dir, pattern)
    size = os.path.getsize(entry)
    open(entry, "wb").close()  # zero bytes: (as an npz) np.load raised EOFError, "internal error" at every restart
    _, code, again = _overview(logdir, cache_dir)
    assert code == 200 and json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert os.path.getsize(entry) == size  # rewritten whole
    os.unlink(entry)
    os.mkfifo(entry)  # a FIFO blocked the request thread forever
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(zip(("reg", "code", "doc"), _overview(logdir, cache_dir))), daemon=True
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "a FIFO in the cache blocked the load"
    assert result["code"] == 200 and json.dumps(result["doc"], sort_keys=True) == json.dumps(first, sort_keys=True)


def test_derived_blob_of_zero_bytes_is_a_miss(tmp_path):
    logdir, _ = _logdir(tmp_path)
    cache_dir = tmp_path / "cache"
    reg, _, _ = _overview(logdir, cache_dir)
    reg.views(reg._files[next(iter(reg._files))]).compute_all()  # writes the derived *.<kind>.arrays blobs
    blobs = [p for p in _entries(cache_dir, "*.*.arrays")]
    assert blobs
    for blob in blobs:
        open(blob, "wb").close()
    for p in blobs:
        assert cache_mod._read_entry(p) is None and not os.path.exists(p)  # a miss, and removed


def test_open_regular_refuses_fifo_and_symlink_without_blocking(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(str(fifo))
    (tmp_path / "real").write_bytes(b"x")
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(OSError):
        open_regular(str(tmp_path / "link"))
    with open_regular(str(tmp_path / "real")) as f:
        assert f.read() == b"x"


def test_deeply_nested_sniff_index_does_not_remove_the_tab(tmp_path):
    logdir, _ = _logdir(tmp_path)
    cache_dir = tmp_path / "cache"
    reg, _, _ = _overview(logdir, cache_dir)
    store = reg._sniff._store
    with open(store, "w") as f:
        f.write("[" * 100_000 + "]" * 100_000)  # RecursionError in json.load at plugin construction
    _, code, doc = _overview(logdir, cache_dir)
    assert code == 200
    (logdir / "run" / "other.json").write_text("{}")  # a name that must be sniffed: the index is rewritten
    reg = RunRegistry(str(logdir), cache=ParseCache(str(cache_dir)))
    reg.scan()
    with open(store) as f:
        index = json.load(f)
    assert isinstance(index, dict) and any(key.endswith("other.json") or "other.json\0" in key for key in index)


def test_cache_files_are_private(tmp_path):
    logdir, trace = _logdir(tmp_path, mode=0o600)
    cache_dir = tmp_path / "cache"
    os.umask(0o022)
    _overview(logdir, cache_dir)
    files = [p for p in glob.glob(os.path.join(str(cache_dir), "**"), recursive=True) if os.path.isfile(p)]
    assert any(p.endswith(".events.bin") for p in files) and any(p.endswith(".arrays") for p in files)
    for p in files:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    for d in [p for p in glob.glob(os.path.join(str(cache_dir), "*", "**"), recursive=True) if os.path.isdir(p)]:
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d


def test_temp_files_of_killed_parses_are_swept_at_start(tmp_path):
    """A temp file named after a process that no longer runs is removed when a cache opens; one of
    a live process (a CLI writing beside the server) is kept."""
    logdir, _ = _logdir(tmp_path)
    cache_dir = tmp_path / "cache"
    _overview(logdir, cache_dir)
    (entry,) = _entries(cache_dir, "*.events.bin")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = os.path.join(os.path.dirname(entry), f".{os.path.basename(entry)}.{dead_pid}.140.tmp")
    live = os.path.join(os.path.dirname(entry), f".{os.path.basename(entry)}.{os.getppid()}.140.tmp")
    for p in (stale, live):
        with open(p, "wb") as f:
            f.write(b"\0" * 4096)
    assert sweep_temps(str(cache_dir)) == 1
    assert not os.path.exists(stale) and os.path.exists(live)


def test_kill_9_during_a_parse_leaves_nothing_after_the_next_start(tmp_path):
    """The review's case end to end: a parse killed with SIGKILL mid-write; the next process's cache
    removes the temp file."""
    logdir, trace = _logdir(tmp_path)
    cache_dir = tmp_path / "cache"
    code = (
        "import sys, time, os\n"
        "from tb_plugin.registry.parse import parse_entry\n"
        "from tb_plugin.registry.cache import ParseCache\n"
        "import fsspec, tb_plugin.registry.parse as r\n"
        "real = r.load_trace_file\n"
        "def slow(*a, **k):\n"
        "    k['events_sink'].write(b'x' * 1000); print('writing', flush=True); time.sleep(60)\n"
        "r.load_trace_file = slow\n"
        f"parse_entry(fsspec.filesystem('file'), {str(trace)!r}, 'u', 'v', 1, ParseCache({str(cache_dir)!r}))\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    child.kill()
    child.wait()
    assert len(_temps(cache_dir)) == 1
    cache_mod._SWEPT.clear()
    ParseCache(str(cache_dir))
    assert _temps(cache_dir) == []


def _temps(root):
    return [name for _, _, files in os.walk(root) for name in files if name.endswith(".tmp")]
