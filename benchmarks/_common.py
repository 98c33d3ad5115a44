"""Pieces the benchmark scripts share: running a measured child script, a plain HTTP GET, client
threads that hammer a server for a while, and percentiles.

Nothing here is timed itself; the scripts decide what they measure.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A venv holding only setup.py's install_requires (like the peers' venvs and a user's ``pip install .``): the
# development venv's .pth files (the editable install's finder) add ~15 ms to every interpreter's start
KINETOSCOPE_VENV = "/work/venv-kinetoscope/bin/python"


def kinetoscope_python() -> str:
    """The python a whole ``kinetoscope`` process is timed with: :data:`KINETOSCOPE_VENV` when there is one,
    else this one (it runs the checkout's tb_plugin either way, by ``PYTHONPATH``)."""
    return KINETOSCOPE_VENV if os.path.exists(KINETOSCOPE_VENV) else sys.executable


# The start of a child script that opens one file's folder as a logdir: argv[1] is the file,
# argv[2] the repo root. Defines path and reg (scanned, nothing loaded yet).
CHILD_REGISTRY = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin import api
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.cache import ParseCache
path = sys.argv[1]
reg = RunRegistry(os.path.dirname(path), cache=ParseCache())
reg.scan()
"""


# Prepend to a child script that reports its peak memory: ``hwm_mb()`` is the process's own peak RSS
# (VmHWM, MB). ``ru_maxrss`` would not do: Linux carries the parent's peak across ``exec``.
HWM = r"""
def hwm_mb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) / 1024
"""


def run_child(
    script: str, args: list[str], env: dict | None = None, cwd: str | None = None, tree_memory: bool = False
) -> dict:
    """Run ``python -c script *args`` in a fresh process (in ``cwd``); its last stdout line, parsed as JSON.
    With ``tree_memory``, also ``tree_pss_mb``: the peak of the anonymous memory the process and its
    descendants held together (:class:`benchmarks.tree_memory.TreeMemory`)."""
    cmd = [sys.executable, "-c", script, *args]
    if not tree_memory:
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=cwd)
        return json.loads(out.stdout.strip().splitlines()[-1])
    from benchmarks.tree_memory import TreeMemory

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    with TreeMemory(proc.pid) as tree:
        stdout, stderr = proc.communicate()
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, stdout, stderr)
    got = json.loads(stdout.strip().splitlines()[-1])
    got["tree_pss_mb"] = tree.peak_mb
    return got


def print_figures(**figures: float | tuple[float, int]) -> None:
    """Print the line a benchmark ends with, ``name=value`` space-separated for scripts to read: a
    plain number with 3 decimals, ``(value, digits)`` with ``digits`` decimals."""
    parts = []
    for name, fig in figures.items():
        value, digits = fig if isinstance(fig, tuple) else (fig, 3)
        parts.append(f"{name}={value:.{digits}f}")
    print(" ".join(parts))


def get(url: str, timeout: float = 60.0) -> tuple[int, bytes]:
    """GET url: (HTTP status, body); an HTTP error status is an answer, not an exception."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def hammer(
    clients: int,
    seconds: float,
    routes: list[str],
    pick: Callable[[int, random.Random, int], tuple[str, str]],
    judge: Callable[[str, int, bytes], str | None],
    seed: Callable[[int], int] = lambda i: i,
    together: bool = False,
) -> dict:
    """``clients`` threads that each GET urls for ``seconds`` (wall).

    pick(client, rnd, n) gives the n-th request's (route, url); judge(route, status, body) says why an
    answer is an error, or None. A request that raises (reset, timeout) is an error too. seed(client)
    seeds each client's random.Random; together: the clients start at one barrier.
    Returns {"latencies": {route: [s]}, "errors": ["route url: why"]}.
    """
    latencies: dict[str, list[float]] = {r: [] for r in routes}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    start = threading.Barrier(clients) if together else None

    def client(i: int) -> None:
        rnd = random.Random(seed(i))
        mine: dict[str, list[float]] = {r: [] for r in routes}
        bad: list[str] = []
        if start is not None:
            start.wait()
        n = 0
        while time.perf_counter() < deadline:
            route, url = pick(i, rnd, n)
            n += 1
            t = time.perf_counter()
            try:
                status, body = get(url)
                why = judge(route, status, body)
            except Exception as exc:  # a reset connection or a timeout is an error, not a crash
                why = f"{type(exc).__name__}: {exc}"
            mine[route].append(time.perf_counter() - t)
            if why:
                bad.append(f"{route} {url}: {why}")
        with lock:
            for r, v in mine.items():
                latencies[r].extend(v)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    return {"latencies": latencies, "errors": errors}


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values, nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]
