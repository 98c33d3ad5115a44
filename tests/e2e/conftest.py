"""Browser-test fixtures: a real TensorBoard with the plugin, and headless Debian chromium."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("KINETOSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).parent / "artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer: {last}")


@contextlib.contextmanager
def running(proc: subprocess.Popen, ready_url: str):
    """Wait until the server ``proc`` answers at ``ready_url``, then yield; on the way out terminate it
    (killed when it has not exited after 10 s)."""
    try:
        wait_http(ready_url)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def tensorboard(
    logdir: Path | str | None,
    cache_dir: Path,
    path_prefix: str = "",
    env: dict | None = None,
    extra_args: list[str] | None = None,
    procs: list | None = None,
):
    """Run ``tensorboard`` on a free loopback port; yields its base URL (with the prefix). ``env``:
    extra environment variables (e.g. an emulator's endpoint); ``extra_args``: extra flags; ``procs``:
    a list the server's ``Popen`` is appended to (to watch its memory). Without ``logdir``, the logdirs
    come in ``extra_args`` (``--logdir_spec``)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "tensorboard.main",
        *(["--logdir", str(logdir)] if logdir is not None else []),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--reload_interval",
        "2",
    ]
    if path_prefix:
        cmd += ["--path_prefix", path_prefix]
    cmd += extra_args or []
    env = dict(os.environ, **(env or {}), KINETOSCOPE_CACHE_DIR=str(cache_dir))
    log = open(cache_dir / "tensorboard.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if procs is not None:
        procs.append(proc)
    base = f"http://127.0.0.1:{port}{path_prefix}"
    try:
        with running(proc, base + "/data/plugins_listing"):
            yield base
    finally:
        log.close()


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Debian chromium is required for browser tests: apt-get install chromium ({CHROMIUM} missing)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


BERT_H100 = Path("tracelens") / "h100" / "gaunernst_bert-small-uncased__1016001.json.gz"


def sample_logdir(tmp_path: Path, run: str, *sources: Path, name: str | None = None) -> tuple[Path, Path]:
    """``tmp_path/logdir`` with the sample files ``sources`` (relative to the samples folder) copied
    into the run folder ``run`` (as ``name`` when given, else under their own names), and an empty
    ``tmp_path/cache``: the arguments of ``tensorboard``."""
    from conftest import SAMPLES

    logdir = tmp_path / "logdir"
    (logdir / run).mkdir(parents=True)
    for src in sources:
        shutil.copy(SAMPLES / src, logdir / run / (name or src.name))
    cache = tmp_path / "cache"
    cache.mkdir()
    return logdir, cache


def build_logdir(root: Path, samples: Path) -> Path:
    """Two resnet spans, a PyTorch 2.x H100 trace, and a broken file."""
    (root / "resnet50").mkdir(parents=True)
    for f in sorted((samples / "kineto" / "resnet50_num_workers_0").glob("*.gz")):
        shutil.copy(f, root / "resnet50" / f.name)
    (root / "h100").mkdir()
    shutil.copy(samples / BERT_H100, root / "h100" / "bert.1.pt.trace.json.gz")
    (root / "broken").mkdir()
    (root / "broken" / "empty.pt.trace.json").write_bytes(b"")
    return root
