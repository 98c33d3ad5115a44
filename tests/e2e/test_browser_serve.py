"""``kinetoscope serve`` in headless Debian chromium: the README's two commands (at the root and under
``--path-prefix``) start the standalone server, and the Overview renders the same GPU utilization as
the analysis run headless, with every request staying under the served prefix."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import build_logdir, free_port, running
from tests.e2e.helpers import check_overview, shown_utilization

ROOT = Path(__file__).resolve().parents[2]
RUN, WORKER, SPAN = "resnet50", "worker0", "1"


def readme_serve_commands() -> list[str]:
    """The ``kinetoscope serve`` lines of the README's "Standalone server" section, as written."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Standalone server", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip().startswith("kinetoscope serve")]


@contextlib.contextmanager
def serve(command: str, cwd: Path, cache: Path):
    """Run a README command (``kinetoscope`` → this checkout's CLI, port 6006 → a free one); yields
    (base URL with the prefix, the server's stderr so far)."""
    port = free_port()
    args = shlex.split(command.replace("--port 6006", f"--port {port}"))
    assert args[:2] == ["kinetoscope", "serve"]
    env = dict(os.environ, KINETOSCOPE_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    log_path = cwd / f"serve-{port}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tb_plugin.cli", *args[1:]], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    prefix = args[args.index("--path-prefix") + 1] if "--path-prefix" in args else ""
    base = f"http://127.0.0.1:{port}{prefix}"
    with running(proc, base + "/"):
        yield base, log_path.read_text()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """``runs/`` (the README's logdir) holding the browser tests' logdir, and a cache folder."""
    root = tmp_path_factory.mktemp("serve")
    build_logdir(root / "runs", SAMPLES)
    (root / "cache").mkdir()
    return root


@pytest.fixture(scope="module")
def expected_utilization(workdir) -> str:
    return shown_utilization(workdir / "runs", RUN, WORKER, SPAN)


def test_the_readme_names_both_commands():
    assert readme_serve_commands() == [
        "kinetoscope serve runs/ --port 6006",
        "kinetoscope serve runs/ --port 6006 --path-prefix /profiler",
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("which", [0, 1], ids=["root", "path_prefix"])
def test_overview_renders_through_serve(browser, workdir, artifacts, expected_utilization, which):
    with serve(readme_serve_commands()[which], workdir, workdir / "cache") as (base, started):
        assert "bound to loopback 127.0.0.1" in started, started
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(base + "/")
        check_overview(page, RUN, WORKER, SPAN, expected_utilization)
        page.screenshot(path=str(artifacts / f"serve_overview_{which}.png"), full_page=True)
        # every request stayed on the server and under the prefix (the UI's relative URLs resolve there)
        assert requests and all(r.startswith(base + "/") for r in requests), requests
        assert any(r.startswith(base + "/data/plugin/kinetoscope/overview?") for r in requests), requests
        # the selection is in the page's own hash: a reload (or a shared link) keeps it
        assert f"run={RUN}" in page.url
        page.reload()
        page.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=60_000)
        assert page.locator('[data-testid="run-select"]').input_value() == RUN
        page.close()
        with urllib.request.urlopen(base + "/") as r:  # the page's own security headers
            assert r.headers["X-Frame-Options"] == "SAMEORIGIN"
            assert "frame-ancestors 'self'" in r.headers["Content-Security-Policy"]
            assert r.headers["X-Content-Type-Options"] == "nosniff"
