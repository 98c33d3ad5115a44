"""The notebook API (``import kinetoscope``, tb_plugin/interfaces/notebook.py): the README's example
runs on samples/, and every table equals ``kinetoscope report --json``'s numbers on every sample
(one code path: the registry's views and registry/report.py)."""

from __future__ import annotations

import json
import re
import sys

import orjson
import pytest
from conftest import REPO, cli_json

sys.path.insert(0, str(REPO / "tb_plugin" / "public"))  # what setup.py's package_dir maps as "kinetoscope"

import kinetoscope

from tb_plugin.interfaces import queries
from tb_plugin.registry.report import report_insights
from tb_plugin.trace import jsonsafe

SAMPLES = REPO / "samples"


def plain(doc):
    """JSON values as the report prints them (NaN → null, tuples → lists)."""
    return orjson.loads(jsonsafe.dumps(doc))


def readme_block(heading: str) -> str:
    """The first ```python block under the README's ``## heading``."""
    text = (REPO / "README.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def report_doc():
    return cli_json("report", "samples")


def workers(doc):
    return [(run["name"], w) for run in doc["runs"] for w in run["workers"]]


def test_readme_example_runs_on_samples(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    exec(compile(readme_block("Notebook API"), "README.md", "exec"), namespace)
    t, ops = namespace["t"], namespace["ops"]
    assert type(ops).__name__ == "DataFrame" and "host_self_us" in ops.columns
    assert namespace["d"]["steps"]["category"].tolist()[0] == "total_us"
    # the printed average step is the Overview's (synthetic_resnet: 913.78125 µs by construction)
    assert t.overview()["average"]["total_us"] == pytest.approx(913.78125)
    assert "913.78125" in capsys.readouterr().out


def test_tables_equal_report_json_on_every_sample(report_doc, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_TABLES", "records")
    pairs = workers(report_doc)
    assert len(pairs) == 11  # 5 synthetic/CPU traces + the 6 H200 traces of samples/gpu_*
    for run, w in pairs:
        t = kinetoscope.load(str(SAMPLES / run), worker=w["worker"], span=w["span"])
        assert plain(t.overview()) == w["overview"], run
        ops = t.operators()
        assert plain([{k: r[k] for k in w["operators"][0]} for r in ops]) == w["operators"], run
        kernels = t.kernels()
        assert plain([{k: r[k] for k in (w["kernels"] or [{}])[0]} for r in kernels]) == w["kernels"], run
        assert plain(t.modules()) == plain(queries.module_rows(w["modules"])), run
        mem = t.memory()
        assert plain({"devices": mem["devices"], "top_operators": mem["top_operators"]}) == w["memory"], run
        assert plain(report_insights(t.insights())) == w["insights"], run
        graphs, want = t.graphs(), w["graphs"]
        assert plain(graphs["summary"]["accounting"]) == want["cuda_graphs"]["accounting"], run
        assert plain(graphs["graphs"]) == [
            {k: v for k, v in g.items() if k != "kernels"} for g in want["cuda_graphs"]["graph_list"]
        ], run
        assert plain(graphs["compile_steps"]) == (want["compiled"] or {}).get("steps", []), run
    ddp = next(r for r in report_doc["runs"] if r["name"] == "synthetic_ddp")["distributed"]
    assert plain(kinetoscope.load_run(str(SAMPLES / "synthetic_ddp")).distributed()) == ddp


def test_known_values_and_groupings():
    """Values known by construction (samples/README.md) and the three operator groupings."""
    t = kinetoscope.load(str(SAMPLES / "synthetic_resnet"))
    expected = json.loads(next((SAMPLES / "synthetic_resnet").glob("*.expected.json")).read_text())
    assert t.overview()["average"]["kernel_us"] == pytest.approx(expected["average"]["kernel_us"])
    by_name = t.operators()
    by_shape = t.operators(group_by="shape")
    by_stack = t.operators(group_by="stack")
    assert "input_shape" in by_shape.columns and "input_shape" not in by_name.columns
    assert "call_stack" in by_stack.columns
    # a grouping splits rows, never time: the totals agree
    for df in (by_shape, by_stack):
        assert df["host_self_us"].sum() == pytest.approx(by_name["host_self_us"].sum())
        assert df["device_self_us"].sum() == pytest.approx(by_name["device_self_us"].sum())
    assert t.kernels(group_by="op")["total_us"].sum() == pytest.approx(t.kernels()["total_us"].sum())
    assert t.memory_stats("GPU0")["allocation_bytes"].max() > 0


def test_graphs_tables():
    """samples/gpu_cudagraph: 3 replays of one graph captured before profiling; gpu_compile: regions."""
    g = kinetoscope.load(str(SAMPLES / "gpu_cudagraph")).graphs()
    assert g["summary"]["replays"] == 3 and g["graphs"]["status"].tolist() == ["no_capture"]
    assert len(g["replays"]) == 3 and g["graph_kernels"]["calls"].sum() == 816
    assert [a["rule"] for a in g["advice"]] == ["graphs.capture_missing"]
    c = kinetoscope.load(str(SAMPLES / "gpu_compile")).graphs()
    assert c["summary"]["replays"] == 0 and len(c["graphs"]) == 0
    assert c["compile_steps"]["recompilations"].tolist() == [0, 0, 0]
    assert c["triton_kernels"]["name"].str.startswith("triton_").all()


def test_records_without_pandas(monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_TABLES", "records")
    t = kinetoscope.load(str(SAMPLES / "synthetic_resnet" / "worker0.1751410836000.pt.trace.json.gz"))
    rows = t.operators()
    assert isinstance(rows, list) and isinstance(rows[0], dict) and "device_self_us" in rows[0]


def test_bad_arguments_say_what_is_valid(tmp_path):
    with pytest.raises(kinetoscope.Invalid, match=r"workers rank0 \(span 1\), rank1"):
        kinetoscope.load(str(SAMPLES / "synthetic_ddp"), worker="rank7")
    with pytest.raises(kinetoscope.Invalid, match="span '3'"):
        kinetoscope.load(str(SAMPLES / "synthetic_ddp"), worker="rank0", span=3)
    with pytest.raises(kinetoscope.Invalid, match="run 'synthetic_resnet'"):
        kinetoscope.load(str(SAMPLES))  # a logdir of runs, not a run
    t = kinetoscope.load(str(SAMPLES / "synthetic_resnet"))
    with pytest.raises(kinetoscope.Invalid, match="name, shape, stack"):
        t.operators(group_by="shapes")
    with pytest.raises(kinetoscope.Invalid, match="GPU0"):
        t.memory_stats("GPU9")
    with pytest.raises(kinetoscope.LoadError, match="does not exist"):
        kinetoscope.load(str(tmp_path / "nothing"))
    bad = tmp_path / "worker0.1.pt.trace.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(kinetoscope.LoadError, match="worker0.1.pt.trace.json"):
        kinetoscope.load(str(bad))


@pytest.mark.emulator
def test_bucket_urls_give_the_local_numbers(monkeypatch, tmp_path):
    """A run directory and one trace file on S3 (moto on loopback): the same tables as the local copy."""
    from emulators import Emulator, clear_fsspec_instances

    emu = Emulator("s3").start()
    try:
        emu.apply_env(monkeypatch)
        emu.make_bucket()
        emu.upload(SAMPLES / "synthetic_ddp", "ddp")
        clear_fsspec_instances()
        monkeypatch.setenv("KINETOSCOPE_TABLES", "records")
        local = kinetoscope.load(str(SAMPLES / "synthetic_ddp"), worker="rank1")
        remote = kinetoscope.load(emu.url("ddp"), worker="rank1")
        assert remote.operators() == local.operators() and remote.overview() == local.overview()
        one = kinetoscope.load(emu.url("ddp/rank0.1751410900000.pt.trace.json.gz"))
        assert one.worker == "rank0" and one.kernels() == kinetoscope.load(str(SAMPLES / "synthetic_ddp")).kernels()
        assert plain(kinetoscope.load_run(emu.url("ddp")).distributed()) == plain(
            kinetoscope.load_run(str(SAMPLES / "synthetic_ddp")).distributed()
        )
        with pytest.raises(kinetoscope.LoadError, match="does not exist"):
            kinetoscope.load(emu.url("nothing-here"))
    finally:
        emu.kill()
        clear_fsspec_instances()


def test_loads_go_through_the_parse_cache():
    """A second load of a file (a new registry, as in a new notebook kernel) reads the parse cache;
    ``cache=False`` neither reads nor writes it."""
    path = str(SAMPLES / "torch_cpu_cnn")
    assert kinetoscope.load(path, cache=False).state.from_cache is False
    assert kinetoscope.load(path).state.from_cache is False  # parsed, written to the cache
    again = kinetoscope.load(path)
    assert again.state.from_cache is True
    assert again.operators().equals(kinetoscope.load(path, cache=False).operators())


def test_empty_tables_keep_their_documented_columns(tmp_path):
    """A trace with no memory events, no steps and no kernels: every table still has its columns, so
    ``df["peak_allocated_bytes"]`` is an empty column, not a KeyError."""
    trace = tmp_path / "worker0.1.pt.trace.json"
    trace.write_text(
        json.dumps(
            {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
        )
    )
    t = kinetoscope.load(str(trace), cache=False)
    memory = t.memory()
    assert list(memory["devices"].columns) == queries.MEMORY_DEVICE_COLUMNS and len(memory["devices"]) == 0
    assert memory["devices"]["peak_allocated_bytes"].tolist() == []
    assert list(memory["top_operators"].columns) == queries.MEMORY_TOP_COLUMNS
    assert list(t.kernels().columns) == queries.kernel_columns("kernel") and len(t.kernels()) == 0
    assert list(t.modules().columns) == queries.MODULE_COLUMNS
    assert set(queries.STEP_COLUMNS) <= set(t.steps().columns)
    diff = kinetoscope.diff(t, t)
    assert list(diff["kernels"].columns) == queries.DIFF_KERNEL_COLUMNS and len(diff["kernels"]) == 0
    assert list(diff["steps"].columns) == queries.DIFF_STEP_COLUMNS
    assert list(diff["operators"].columns) == queries.DIFF_OPERATOR_COLUMNS and len(diff["operators"]) == 1
    files = kinetoscope.load_run(str(tmp_path), cache=False).files()
    assert list(files.columns) == queries.FILE_COLUMNS and files["worker"].tolist() == ["worker0"]
