"""Run registry, headless report and HTTP API on a logdir with good and bad files."""

from __future__ import annotations

import io
import json
import os
import shutil
import time

import pytest
from conftest import sample, write_json
from synth.traces import CATEGORY_KEYS

from tb_plugin import api
from tb_plugin.cli import main
from tb_plugin.cli.report import run_report
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import ERROR, READY, RunRegistry

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)


@pytest.fixture
def logdir(tmp_path):
    shutil.copy(sample("kineto/gpu_metrics_input.json"), tmp_path / "gpu_metrics_input.json")
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(
        sample("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"), good / "worker0.100.pt.trace.json.gz"
    )
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.pt.trace.json").write_bytes(b"")
    (bad / "cut.pt.trace.json.gz").write_bytes(
        __import__("gzip").compress(sample("kineto/gpu_metrics_input.json").read_bytes())[:3000]
    )
    return tmp_path


def _load_all(reg):
    reg.scan()
    for st in reg.files():
        reg.load(st)
    return {st.entry.rel: st for st in reg.files()}


def test_bad_files_fail_alone(logdir):
    states = _load_all(RunRegistry(str(logdir)))
    assert states["good/worker0.100.pt.trace.json.gz"].state == READY
    assert states["gpu_metrics_input.json"].state == READY
    assert states["bad/empty.pt.trace.json"].state == ERROR
    assert "empty (0 bytes)" in states["bad/empty.pt.trace.json"].error
    assert "gzip stream is truncated" in states["bad/cut.pt.trace.json.gz"].error


def test_new_and_changed_files_are_picked_up(logdir):
    reg = RunRegistry(str(logdir))
    _load_all(reg)
    write_json(
        logdir / "late" / "w.5.pt.trace.json",
        {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10}]},
    )
    reg.scan()
    assert reg.find("late", "w", "1") is not None
    st = reg.load(reg.find("late", "w", "1"))
    assert st.overview["average"]["total_us"] == 10
    time.sleep(0.01)
    write_json(
        logdir / "late" / "w.5.pt.trace.json",
        {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 25}]},
    )
    os.utime(logdir / "late" / "w.5.pt.trace.json", (time.time() + 5, time.time() + 5))
    reg.scan()
    st = reg.find("late", "w", "1")
    assert st.state == "queued"  # changed: read again
    assert reg.load(st).overview["average"]["total_us"] == 25


def test_background_threads_load_everything(logdir):
    reg = RunRegistry(str(logdir), reload_interval=1).start()
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            snap = reg.runs_document()
            if snap["loading"]["files_done"] == snap["loading"]["files_total"] == 4:
                break
            time.sleep(0.1)
        assert snap["loading"] == {"files_total": 4, "files_done": 4, "files_queued": 0}
        assert [r["name"] for r in snap["runs"]] == [".", "bad", "good"]
    finally:
        reg.stop()


def test_cli_json_document_and_exit_status(logdir, capsys):
    code = main(["report", str(logdir), "--json", "--no-cache"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # two files failed
    runs = {r["name"]: r for r in out["runs"]}
    good = runs["good"]["workers"][0]
    assert (good["worker"], good["span"], good["error"]) == ("worker0", "1", None)
    ov = good["overview"]
    assert set(ov) >= {"steps", "average", "gpus", "recommendations"}
    step_keys = {"step", "total_us", *CATEGORY_KEYS}
    assert step_keys <= set(ov["steps"][0])
    assert {"id", "name", "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct"} <= set(
        ov["gpus"][0]
    )
    bad = {w["path"]: w for w in runs["bad"]["workers"]}
    assert bad["bad/empty.pt.trace.json"]["overview"] is None
    assert "0 bytes" in bad["bad/empty.pt.trace.json"]["error"]


def test_cli_table_and_run_filter(logdir):
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(logdir), "good", False, True, out, err) == 0
    text = out.getvalue()
    assert "run good  worker worker0  span 1" in text and "Kernel" in text and "bad" not in text
    assert run_report(str(logdir), "nope", False, True, out, err) == 2


def test_cache_makes_second_load_skip_parsing(logdir):
    cache = ParseCache()
    first = _load_all(RunRegistry(str(logdir), cache=cache))
    second = _load_all(RunRegistry(str(logdir), cache=cache))
    rel = "good/worker0.100.pt.trace.json.gz"
    assert not first[rel].from_cache and second[rel].from_cache
    assert second[rel].overview == first[rel].overview


def test_api_overview_states_and_validation(logdir):
    reg = RunRegistry(str(logdir))
    reg.scan()
    assert api.overview(reg, {"run": "good", "worker": "worker0"})[0] == 400
    assert api.overview(reg, {"run": "../../etc", "worker": "passwd", "span": "1"})[0] == 404
    code, doc = api.overview(reg, {"run": "good", "worker": "worker0", "span": "1"})
    assert code == 200 and doc == {"state": "queued", "progress": 0.0}
    _load_all(reg)
    code, doc = api.overview(reg, {"run": "good", "worker": "worker0", "span": "1"})
    assert doc["state"] == "ready" and doc["gpus"][0]["id"] == 2  # MI250 trace: kernels on device 2
    code, doc = api.overview(reg, {"run": "bad", "worker": "empty", "span": "1"})
    assert (code, doc["state"]) == (200, "error") and "0 bytes" in doc["error"]


def test_report_is_identical_fresh_and_from_cache(capsys):
    """String ids must not depend on the process (hash seed): a cached parse equals a fresh one."""
    logdir = str(sample("dlrm_8ranks"))
    assert main(["report", logdir, "--json", "--no-cache"]) == 0
    fresh = capsys.readouterr().out
    assert main(["report", logdir, "--json"]) == 0  # parsed in worker processes into the cache
    first = capsys.readouterr().out
    assert main(["report", logdir, "--json"]) == 0  # read back from the cache
    again = capsys.readouterr().out
    assert fresh == first == again


def test_runs_document_is_rebuilt_exactly_when_what_it_shows_changes(logdir):
    reg = RunRegistry(str(logdir))
    states = _load_all(reg)
    first = reg.runs_document()
    assert reg.runs_document() is first  # nothing changed: the cached document
    good = states["good/worker0.100.pt.trace.json.gz"]
    good.progress = 0.5  # progress alone is not worth a rebuild once nothing loads
    assert reg.runs_document() is first
    good.warnings.append("a warning added in place")  # an in-place change is seen too
    second = reg.runs_document()
    rows = [f for r in second["runs"] for w in r["workers"] for f in w["spans"]]
    assert second is not first and any("a warning added in place" in f["warnings"] for f in rows)
    good.state = ERROR
    assert reg.runs_document() is not second
