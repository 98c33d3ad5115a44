"""Shared test helpers. Real traces are read from ../shared/samples (never copied into the repo)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own parse-cache directory."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def sample(rel: str) -> Path:
    path = SAMPLES / rel
    if not path.exists():
        pytest.fail(f"shared sample missing: {path} (tests need ../shared/samples)")
    return path


def sample_ranks(rel: str) -> list[tuple]:
    """``(rank, worker, trace)`` for each ``*.pt.trace.json`` of the sample folder ``rel``, in file-name
    order (worker ``w<i>``), as distributed_view takes them."""
    import glob

    from tb_plugin.analysis.distributed import rank_of_info
    from tb_plugin.trace.decode import decode_trace

    ranks = []
    for i, f in enumerate(sorted(glob.glob(str(sample(rel) / "*.pt.trace.json")))):
        tr = decode_trace(open(f, "rb").read())
        ranks.append((rank_of_info(tr.distributed, f, i)[0], f"w{i}", tr))
    return ranks


def settled(client, url: str, sleep_s: float = 0.1) -> dict:
    """The JSON a Flask test ``client`` gets at ``url`` once it is no longer loading or queued (600 tries)."""
    import time

    for _ in range(600):
        doc = client.get(url).get_json()
        if doc.get("state") not in ("loading", "queued"):
            return doc
        time.sleep(sleep_s)
    raise AssertionError(f"{url} still loading")


def loaded_registry(root: Path, **kwargs):
    """A RunRegistry over ``root`` (``kwargs`` as RunRegistry takes them), scanned, every file loaded."""
    from tb_plugin.registry.runs import RunRegistry

    reg = RunRegistry(str(root), **kwargs)
    reg.scan()
    for st in reg.files():
        reg.load(st)
    return reg


def diff_query(base_run: str, exp_run: str, worker: str = "worker0", span: str = "1") -> dict:
    """The ``diff`` route's query comparing span ``span`` of ``worker`` in two runs."""
    return {"base_run": base_run, "base_worker": worker, "base_span": span,
            "exp_run": exp_run, "exp_worker": worker, "exp_span": span}


def write_json(path: Path, doc, gz: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def x(name, cat, ts, dur, pid=1, tid=1, **args):
    """A complete ('X') event."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = {k.replace("_", " ") if k not in ("correlation", "device", "stream") else k: v for k, v in args.items()}
    return ev


def run_async(fn, *args):
    """``anyio.run(fn, *args)`` on a thread of its own: an event loop a browser test left running on
    this thread (Playwright's sync API) would make ``anyio.run`` refuse to start."""
    import concurrent.futures

    import anyio

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()
