"""The loader is a collaborator of the registry (registry/loader.py): built from a :class:`Listing`
record alone, without a registry, it loads, queues and reports errors through what the record gives
it; it reads no attribute it did not set itself, and nothing in registry/ writes an object's
``__dict__``."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path

from tb_plugin.registry.loader import Listing, TraceLoader
from tb_plugin.registry.states import ERROR, QUEUED, READY, FileState
from tb_plugin.storage.fs import list_files, open_logdir
from tb_plugin.storage.sniff import SniffCache

REGISTRY = Path(__file__).resolve().parents[3] / "tb_plugin" / "registry"


def _trace(steps: int) -> dict:
    """A CPU trace of ``steps`` profiler steps of 100 µs, each with one 40 µs operator."""
    events = []
    for i in range(steps):
        t = 1000.0 + 100.0 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": t, "dur": 100.0})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t + 10, "dur": 40.0})
    for e in events:
        e.update(pid=1, tid=1)
    return {"schemaVersion": 1, "traceEvents": events}


def _listing(logdir: Path) -> tuple[Listing, dict[str, FileState]]:
    fs, root = open_logdir(str(logdir))
    files = {
        e.rel: FileState(entry=e, worker=e.name.split(".")[0], span="1")
        for e in list_files(fs, root, SniffCache(None))
        if e.kind == "trace"
    }
    lock = threading.RLock()
    listing = Listing(
        files=files,
        lock=lock,
        wake=threading.Condition(lock),
        stop=threading.Event(),
        fs=fs,
        fs_error=None,
        cache=None,
        settings=None,
        reload_interval=1.0,
        client_message=lambda message: "[client] " + message,
    )
    return listing, files


def test_a_loader_built_from_a_listing_alone_loads_and_queues(tmp_path):
    (tmp_path / "w0.1.pt.trace.json").write_text(json.dumps(_trace(3)))
    (tmp_path / "w1.1.pt.trace.json").write_text(json.dumps(_trace(5)))
    (tmp_path / "w2.1.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X", "ts": ')  # truncated
    listing, files = _listing(tmp_path)
    loader = TraceLoader(listing)
    by_path = sorted(files.values(), key=lambda s: s.entry.rel)
    with listing.lock:
        loader.requeue(by_path)
    assert loader.queue_positions() == {st.entry.rel: i for i, st in enumerate(by_path)}
    w0, w1, w2 = by_path
    loader.want(w1)  # the wanted file goes first; no load loop runs, so nothing starts
    assert loader.queue_positions()[w1.entry.rel] == 0 and w1.state == QUEUED

    loader.load(w1)
    assert w1.state == READY and w1.overview is not None
    assert len(w1.overview["steps"]) == 5 and w1.overview["average"]["total_us"] == 100.0
    assert loader.views(w1).overview() is w1.overview
    assert list(loader.memory_in_use()) == [w1.entry.rel]

    loader.ensure_loaded(w2)
    assert w2.state == ERROR and w2.error is not None and w2.error.startswith("[client] ")
    assert w0.entry.rel in loader.queue_positions() and w1.entry.rel not in loader.queue_positions()

    with listing.lock:  # the registry dropped the file: its kept views go
        loader.forget(w1.entry.rel, reload_lock=True)
    assert loader.memory_in_use() == {}


def _self_attributes(cls: ast.ClassDef) -> tuple[set[str], set[str]]:
    """``(assigned, read)``: the ``self.<name>`` a class assigns and reads, its methods and properties
    counted as assigned."""
    assigned = {f.name for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    read: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (assigned if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    return assigned, read


def test_the_loader_reads_only_what_it_set_itself():
    """No attribute the registry would have to provide (the partial-class pattern): every ``self.x``
    the loader reads it assigns itself, or is one of its methods."""
    tree = ast.parse((REGISTRY / "loader.py").read_text())
    (loader,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TraceLoader"]
    assigned, read = _self_attributes(loader)
    assert read - assigned == set()
    bases = [ast.unparse(b) for b in loader.bases]
    assert bases == [], "the loader is a collaborator, not a base class of the registry"


def test_nothing_in_the_registry_writes_an_objects_dict():
    """No ``self.__dict__`` writes and no ``setattr`` in registry/ (the executors' spawn helper saves and
    restores ``__main__``'s own module globals, which is not an object's state)."""
    found = []
    for path in sorted(REGISTRY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr":
                found.append(f"{path.name}:{node.lineno} setattr")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                target = ast.unparse(node.value)
                if target.endswith("__dict__"):
                    found.append(f"{path.name}:{node.lineno} {target}[…] =")
    assert found == []
