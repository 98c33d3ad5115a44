"""A fresh Python virtualenv: ``pip install .`` (no Node needed) next to torch-tb-profiler 0.4.3.

Both plugins must load in the same TensorBoard and both tabs must serve the same logdir; our code
must not print warnings at start-up. Needs the package registry (pip) like the rest of CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
import venv
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES

from tests.e2e.conftest import free_port, wait_http


@pytest.fixture(scope="module")
def side_by_side_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=True)
    py = root / "bin" / "python"
    src = tmp_path_factory.mktemp("src") / "kinetoscope"
    # install from a copy without frontend/node_modules: proves no Node is needed
    skip = shutil.ignore_patterns("node_modules", ".git", "*.egg-info", "__pycache__", "build")

    def ignore(folder, names):  # tests/e2e/artifacts (screenshots), never tb_plugin/artifacts (a package)
        return set(skip(folder, names)) | ({"artifacts"} if Path(folder).name == "e2e" else set())

    shutil.copytree(REPO, src, ignore=ignore)
    # the installed package, not this checkout (run_tests.sh puts the checkout first on PYTHONPATH)
    env = dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, PATH=f"{root / 'bin'}:/usr/bin:/bin")
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(src), "torch-tb-profiler==0.4.3"], check=True, env=env, timeout=900
    )
    return py, env


@pytest.mark.corpus
def test_both_tabs_work_in_one_tensorboard(side_by_side_env, tmp_path):
    py, env = side_by_side_env
    logdir = tmp_path / "logdir" / "resnet"
    logdir.mkdir(parents=True)
    shutil.copy(SAMPLES / "kineto" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz", logdir)
    port = free_port()
    log = tmp_path / "tb.log"
    env = dict(env, KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache"), PYTHONWARNINGS="default")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(py),
                "-m",
                "tensorboard.main",
                "--logdir",
                str(tmp_path / "logdir"),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/data/plugins_listing", timeout=120)
        listing = json.load(urllib.request.urlopen(base + "/data/plugins_listing"))
        assert listing["kinetoscope"]["tab_name"] == "PyTorch Profiler"
        assert "pytorch_profiler" in listing
        assert listing["kinetoscope"]["enabled"]
        ours = theirs = None
        for _ in range(300):
            ours = json.load(urllib.request.urlopen(base + "/data/plugin/kinetoscope/runs"))
            theirs = json.load(urllib.request.urlopen(base + "/data/plugin/pytorch_profiler/runs"))
            if ours["loading"]["files_done"] == 1 and theirs.get("runs"):
                break
            time.sleep(0.5)
        assert [r["name"] for r in ours["runs"]] == ["resnet"]
        assert theirs["runs"] == ["resnet"]
        doc = json.load(
            urllib.request.urlopen(base + "/data/plugin/kinetoscope/overview?run=resnet&worker=worker0&span=1")
        )
        assert doc["gpus"][0]["utilization_pct"] == pytest.approx(55.5141, abs=1e-3)
        with urllib.request.urlopen(base + "/data/plugin/kinetoscope/index.js") as r:
            assert r.status == 200 and b"render" in r.read()
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text(errors="replace")
    ours_warnings = [line for line in text.splitlines() if "tb_plugin" in line and "Warning" in line]
    assert ours_warnings == [], ours_warnings


def test_install_publishes_the_notebook_api_without_test_code(side_by_side_env, tmp_path):
    """``pip install .`` gives ``import kinetoscope`` (setup.py maps tb_plugin/public/kinetoscope) and the
    ``kinetoscope mcp`` subcommand, and puts no test code (tests/, synth/) into site-packages."""
    py, env = side_by_side_env
    code = (
        "import json, os, kinetoscope, tb_plugin; site = os.path.dirname(os.path.dirname(tb_plugin.__file__)); "
        "t = kinetoscope.load(os.environ['RUN']); "
        "print(json.dumps({'file': kinetoscope.__file__, 'site': site, 'avg': t.overview()['average']['total_us'], "
        "'test_dirs': sorted(d for d in os.listdir(site) if d in ('tests', 'synth', 'samples'))}))"
    )
    out = subprocess.run(
        [str(py), "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=dict(env, RUN=str(REPO / "samples" / "synthetic_resnet"), KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache")),
    )
    doc = json.loads(out.stdout)
    assert doc["file"].startswith(doc["site"]) and doc["avg"] == 913.78125 and doc["test_dirs"] == []
    walked = [p for p in Path(doc["site"], "tb_plugin").rglob("*") if "test" in p.name or "synth" in p.name]
    assert walked == []
    helped = subprocess.run(
        [str(Path(py).parent / "kinetoscope"), "mcp", "--help"], capture_output=True, text=True, env=env, timeout=120
    )
    assert helped.returncode == 0 and "--ui-url" in helped.stdout
