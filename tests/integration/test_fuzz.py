"""Hostile input: every file either loads and analyses, or fails alone with a clear message.

Bounded fuzzing for CI (hypothesis plus a seeded mutation fuzzer over real traces; the long run is
``benchmarks/fuzz_long.py``), regressions for each crash the fuzzers found, and the odd things a
logdir can hold (0-byte files, directories named like traces, symlink loops, FIFOs, sockets,
dangling symlinks), through the registry, the ``runs`` route and ``kinetoscope report``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import shutil
import socket

import fuzz_inputs as F
import numpy as np
import pytest
from conftest import sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tb_plugin import api
from tb_plugin.cli.report import run_report
from tb_plugin.registry.runs import ERROR, READY, RunRegistry
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.errors import TraceReadError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy on hostile numbers
MUTATIONS = int(
    os.environ.get("KINETOSCOPE_FUZZ_MUTATIONS", "1000")
)  # a count, not a time window: ~18 s on 2 idle cores
HYPOTHESIS = settings(
    max_examples=int(os.environ.get("KINETOSCOPE_FUZZ_EXAMPLES", "150")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
TRIED = {"hypothesis": 0, "mutation": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    yield
    line = (
        f"fuzz: {TRIED['hypothesis'] + TRIED['mutation']} inputs tried "
        f"({TRIED['hypothesis']} hypothesis, {TRIED['mutation']} seeded mutations), 0 unhandled"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print("\n" + line)
    else:  # pragma: no cover
        print(line)


def _check(data: bytes, tmp_path=None, kind: str = "hypothesis") -> str:
    TRIED[kind] += 1
    with F.time_bound(F.PER_INPUT_SECONDS):
        return F.exercise(data, tmp_path)


# --------------------------------------------------------------------------------------------
# Bounded fuzzing
# --------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_seeded_mutations_of_real_traces(tmp_path):
    """Byte flips, truncation, gzip garbage, hostile field values and layouts over six real traces."""
    assert len(F.seed_documents()) == len(F.SEED_FILES), "a seed trace is missing from ../shared/samples"
    failures = []
    counts = F.run_for(
        random.Random(20240611),
        lambda n: n < MUTATIONS,
        tmp_path,
        on_unhandled=lambda label, data, exc: failures.append((label, data[:200], repr(exc))),
    )
    TRIED["mutation"] += counts["tried"]
    assert not failures, failures[:3]
    assert counts["tried"] == MUTATIONS and counts["ok"] >= 5 and counts["error"] >= 5, counts


@HYPOTHESIS
@given(st.binary(max_size=4096))
def test_arbitrary_bytes(data):
    assert _check(data) in ("ok", "error")


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "X",
            "B",
            "E",
            "i",
            "M",
            "C",
            "s",
            "f",
            "kernel",
            "cpu_op",
            "cuda_runtime",
            "[memory]",
            "ProfilerStep#1",
            "process_name",
            "gpu_memcpy",
            "ac2g",
            "fwdbwd",
            "Operator",
            "Kernel",
        ]
    ),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
_ARG_KEYS = st.sampled_from(F._ARG_KEYS)


def _event_strategy():
    base = {
        "ph": st.sampled_from(["X", "X", "X", "B", "E", "i", "M", "C", "s", "f"]) | _JSON,
        "cat": st.sampled_from(
            [
                "kernel",
                "cpu_op",
                "cuda_runtime",
                "gpu_memcpy",
                "user_annotation",
                "python_function",
                "Kernel",
                "Operator",
                "cpu_instant_event",
            ]
        )
        | _JSON,
        "name": st.sampled_from(
            ["aten::mm", "ProfilerStep#1", "k", "[memory]", "cudaLaunchKernel", "process_name", "nccl:all_reduce"]
        )
        | _JSON,
        "pid": st.integers(0, 3) | _JSON,
        "tid": st.integers(0, 3) | _JSON,
        "ts": st.floats(0, 1e4) | _JSON,
        "dur": st.floats(0, 1e3) | _JSON,
        "id": st.integers(0, 4) | _JSON,
        "args": st.dictionaries(_ARG_KEYS, _JSON, max_size=6) | _JSON,
    }
    return st.fixed_dictionaries({}, optional=base)


@HYPOTHESIS
@given(
    st.lists(_event_strategy(), max_size=25),
    st.sampled_from(["object", "array", "cut"]),
    st.dictionaries(
        st.sampled_from(
            [
                "deviceProperties",
                "distributedInfo",
                "baseTimeNanoseconds",
                "schemaVersion",
                "computeProperties",
                "displayTimeUnit",
            ]
        ),
        _JSON,
        max_size=3,
    ),
)
def test_events_with_wrong_types_per_field(events, form, top):
    text = json.dumps(events)
    if form == "object":
        data = json.dumps(dict(top, traceEvents=events)).encode()
    else:
        data = (text if form == "array" else text[:-1]).encode()
    assert _check(data) in ("ok", "error")


@pytest.mark.corpus
@HYPOTHESIS
@given(
    st.sampled_from(range(len(F.SEED_FILES))),
    st.randoms(use_true_random=False),
    st.sampled_from(["bytes", "truncate", "gzip", "struct", "handmade"]),
)
def test_hypothesis_driven_mutations(tmp_path, index, rng, how):
    seeds = F.seed_documents()
    name, data = seeds[index % len(seeds)]
    if how == "bytes":
        data = F.mutate_bytes(rng, data)
    elif how == "truncate":
        data = F.truncate(rng, data)
    elif how == "gzip":
        data = F.gzip_garbage(rng, data)
    elif how == "struct":
        data = F.structural(rng, json.loads(data), max_events=200)
    else:
        data = F.handmade(rng)
    assert _check(data, tmp_path if how == "gzip" else None) in ("ok", "error")


# --------------------------------------------------------------------------------------------
# Regressions: each input crashed the parser or an analysis before it was fixed
# --------------------------------------------------------------------------------------------


def _doc(*events, **top) -> bytes:
    return json.dumps(dict(top, traceEvents=list(events))).encode()


def _ev(**fields) -> dict:
    ev = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
    ev.update(fields)
    return ev


def _step_and(*events) -> bytes:
    return _doc(_ev(cat="user_annotation", name="ProfilerStep#1", ts=0, dur=1000), *events)


def _error(data: bytes) -> str:
    with pytest.raises(TraceReadError) as info:
        decode_trace(data)
    return str(info.value)


@pytest.mark.parametrize("depth", [1000, 5000, 100_000])
def test_deep_nesting_is_a_clear_error(depth):
    nested = b"[" * depth + b"]" * depth
    assert "nested too deeply" in _error(b'{"traceEvents":' + nested + b"}")
    assert "nested too deeply" in _error(b'[{"ph":"X","args":{"Input Dims":' + nested + b"}}]")
    assert "nested too deeply" in _error(b'{"a":' * depth + b"1" + b"}" * depth)


def test_moderate_nesting_in_args_is_kept_as_text():
    nested = "[" * 500 + "]" * 500
    data = _step_and(_ev()).replace(b'"dur": 5}', b'"dur": 5, "args": {"Input Dims": ' + nested.encode() + b"}}", 1)
    assert F.exercise(data) == "ok"


def test_invalid_utf8():
    assert "invalid UTF-8" in _error(b'{"traceName":"\xc3\x28","traceEvents":[]}')
    # inside one event: that event is skipped with a warning, the rest loads
    data = _step_and(_ev(name="BAD"), _ev(name="good", ts=20)).replace(b"BAD", b"\xff\xfe")
    trace = decode_trace(data)
    assert "good" in trace.strings
    assert any("could not be decoded" in w for w in trace.warnings)
    assert F.exercise(data) == "ok"


def test_numbers_out_of_range():
    # 1e400 does not fit a float: the event is skipped; 2**70 does not fit an int64: the column says -1
    data = _step_and(
        _ev(name="huge"), _ev(name="big", ts=2**70, dur=2**70, args={"correlation": 2**70, "External id": -(2**70)})
    )
    data = data.replace(
        b'"name": "huge", "pid": 1, "tid": 1, "ts": 10', b'"name": "huge", "pid": 1, "tid": 1, "ts": 1e400'
    )
    trace = decode_trace(data)
    assert any("could not be decoded" in w for w in trace.warnings)
    assert F.exercise(data) == "ok"
    trace = decode_trace(_step_and(_ev(ts=1e35), _ev(dur=1e35), _ev(ts=2**70, dur=2**70)))
    assert any("1 duration events had no usable 'ts'" in w for w in trace.warnings)  # beyond any real clock
    assert any("1 complete ('X') events had no 'dur' (or an unusable one" in w for w in trace.warnings)
    # huge but finite times no longer overflow the timeline pyramid into an endless loop
    assert F.exercise(_step_and(_ev(ts=1e29, dur=1e29), _ev(ts=-1e29, dur=1e29))) == "ok"
    assert F.exercise(_step_and(_ev(ts=1e308, dur=1e308), _ev(ts=-1e308))) == "ok"


@pytest.mark.corpus
def test_nan_and_infinity_literals_in_args_keep_every_event_and_metric():
    """Bare NaN/Infinity (Python's json.dumps writes them) no longer fail the file: they are quoted,
    read back as the non-finite floats they stand for, and named in one warning; the same words
    inside strings are left alone."""
    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.views import FileViews

    raw = gzip.decompress(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz").read_bytes())
    # the same words inside strings, escaped quotes included, must survive untouched
    clean = raw.replace(b"step;resnet50", b'step \\"NaN\\": -Infinity\\\\;resnet50')
    assert clean != raw and b"NaN" in clean
    args = clean.count(b'"args": {')
    hostile = clean.replace(b'"args": {', b'"args": {"loss": NaN, "grad norm": -Infinity, "scale": Infinity, ')
    with pytest.raises(Exception):
        json.loads(hostile, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # really not JSON
    a, b = decode_trace(clean), decode_trace(hostile)
    assert (
        b.warnings
        == [
            f"{3 * args} bare NaN/Infinity literals (not valid JSON) were read as the non-finite numbers they stand for"
        ]
        + a.warnings
    )
    assert args > 50_000 and len(b.events) == len(a.events) == a.meta["event_count"] > 40_000
    assert b.strings == a.strings and any('"NaN": -Infinity\\;' in s for s in b.strings)
    for key, col in a.events.columns.items():
        assert np.array_equal(col, b.events.columns[key], equal_nan=col.dtype.kind == "f"), key
    assert compute_overview(b) == compute_overview(a)
    va, vb = FileViews(a), FileViews(b)
    assert vb.operators("operator") == va.operators("operator") and len(va.operators("operator")) > 50
    assert vb.kernels("kernel") == va.kernels("kernel") and len(va.kernels("kernel")) > 20

    # an arg that is analysed: read as NaN / inf (floats) or missing (ints), the event is kept
    doc = _step_and(_ev(args={"flops": 1, "External id": 7}), _ev(name="k", ts=20, args={"flops": 2}))
    doc = doc.replace(b'"flops": 1', b'"flops": NaN').replace(b'"External id": 7', b'"External id": -Infinity')
    doc = doc.replace(b'"flops": 2', b'"flops": Infinity')
    trace = decode_trace(doc)
    flops = trace.events.columns["flops"][np.argsort(trace.events.ts)]
    assert np.isnan(flops[1]) and flops[2] == np.inf and len(trace.events) == 3
    assert trace.events.columns["external_id"].max() == -1
    assert F.exercise(doc) == "ok"
    # the array form, also cut off mid-event: both repairs apply
    trace = decode_trace(b'[{"ph":"X","name":"x","ts":1,"dur":NaN},{"ph":"X","name":"y","ts":3,"dur":1},{"ph"')
    assert len(trace.events) == 2 and trace.events.dur.tolist() == [0.0, 1.0]
    assert any("recovered 2 complete events" in w for w in trace.warnings)
    assert any(w.startswith("1 bare NaN/Infinity") for w in trace.warnings)


_NONFINITE_TEXT = st.lists(
    st.sampled_from(['"', "\\", "NaN", "-Infinity", "Infinity", " ", "a", ":", ","]), max_size=12
).map("".join)
_WITH_NONFINITE = st.recursive(
    st.one_of(st.floats(), _NONFINITE_TEXT, st.integers(-5, 5), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_NONFINITE_TEXT, inner, max_size=4)),
    max_leaves=20,
)


def _as_quoted(value):
    if isinstance(value, float) and not np.isfinite(value):
        return "NaN" if np.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_as_quoted(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_quoted(v) for k, v in value.items()}
    return value


@HYPOTHESIS
@given(_WITH_NONFINITE, st.sampled_from([(5, 0), (7, 256), (1 << 20, 0), (1 << 20, 256)]))
def test_quote_nonfinite_touches_only_literals_outside_strings(value, block_few):
    """Every block size and both escape checks (one by one, vectorized): the result is JSON whose
    literals became strings and whose strings are unchanged."""
    from tb_plugin.trace import nonfinite

    text = json.dumps(value).encode()  # allow_nan: bare NaN/Infinity/-Infinity
    saved = nonfinite.BLOCK_BYTES, nonfinite._FEW
    nonfinite.BLOCK_BYTES, nonfinite._FEW = block_few
    try:
        quoted = nonfinite.quote_nonfinite(text)
    finally:
        nonfinite.BLOCK_BYTES, nonfinite._FEW = saved
    expected = _as_quoted(value)
    if quoted is None:  # there was no literal outside strings
        assert json.loads(text, parse_constant=lambda c: pytest.fail(f"literal {c} missed")) == expected
    else:
        out, count = quoted
        assert json.loads(out, parse_constant=lambda c: pytest.fail(f"literal {c} left")) == expected
        assert count == out.count(b'"NaN"') + out.count(b'"Infinity"') + out.count(b'"-Infinity"') - (
            text.count(b'"NaN"') + text.count(b'"Infinity"') + text.count(b'"-Infinity"')
        )


def test_malformed_json_near_a_nan_in_a_string_is_still_an_error():
    # the parser stops at a real syntax error, not at a literal: no rewrite is attempted
    assert "invalid JSON" in _error(b'{"traceEvents":[{"ph":"X","name":"NaN","ts":1,,}]}')
    # literals where no value may stand stay invalid once quoted
    assert "invalid JSON" in _error(b'{"traceEvents":[{"ph":"X","ts":NaN NaN}]}')


@pytest.mark.parametrize(
    "field,value",
    [
        ("ts", [1, 2, 3]),
        ("dur", "x"),
        ("pid", {"a": 1}),
        ("tid", [1]),
        ("args", 3),
        ("name", 7),
        ("cat", [1]),
        ("ph", {"x": 1}),
        ("ph", [1]),
        ("dur", [1, 2, 3]),
        ("id", {"a": 1}),
    ],
)
def test_wrong_type_in_every_event(field, value):
    events = [_ev(**{field: value}, ts=i * 10) if field != "ts" else _ev(ts=value) for i in range(5)]
    events += [
        {
            "ph": "i",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 11,
            field: value,
            "args": {"Bytes": [1, 2, 3], "Addr": [1, 2, 3], "Device Type": [0, 0, 0], "Device Id": [0]},
        }
        for _ in range(3)
    ]
    assert F.exercise(_step_and(*events)) in ("ok", "error")


def test_odd_kernel_args():
    k = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5}
    events = [
        dict(k, args={"grid": [2**62, 2**62, 2**62], "correlation": 1, "stream": 7, "device": 0}),
        dict(k, args={"grid": [1e300, 1, 1], "block": 5, "correlation": [1, 2, 3], "device": 2**40}),
        dict(k, args={"grid": "abc", "blocks per SM": "x", "est. achieved occupancy %": 1e300}),
    ]
    assert F.exercise(_step_and(*events)) == "ok"


def test_duplicate_keys_bom_and_cut_array():
    assert F.exercise(b'{"traceEvents":[],"traceEvents":' + _step_and(_ev())[15:]) == "ok"
    assert F.exercise(b"\xef\xbb\xbf" + _step_and(_ev(), _ev(ts=20))) == "ok"
    assert F.exercise(json.dumps([_ev(), _ev(ts=20)]).encode()[:-30]) == "ok"
    assert F.exercise(b'[{"ph":"X","ts":1,"dur":1,"ts":[1],"dur":"x"}]') in ("ok", "error")


def test_gzip_of_garbage(tmp_path):
    for data in (
        b"\x1f\x8b",
        b"\x1f\x8b\x08\x00" + b"\x00" * 50,
        gzip.compress(os.urandom(1000)),
        gzip.compress(b"")[:-4],
        gzip.compress(_step_and(_ev())) + b"trailing junk",
    ):
        assert _check(data, tmp_path, "mutation") == "error"


# --------------------------------------------------------------------------------------------
# Odd things in a logdir
# --------------------------------------------------------------------------------------------


@pytest.fixture
def odd_logdir(tmp_path):
    run = tmp_path / "run1"
    (run / "x.pt.trace.json").mkdir(parents=True)  # a directory named like a trace
    (run / "x.pt.trace.json" / "inner.txt").write_text("not a trace")
    (run / "sub").mkdir()
    os.symlink("..", run / "sub" / "loop")  # a directory loop
    os.symlink("loop2.pt.trace.json", run / "loop1.pt.trace.json")  # a symlink loop named like a trace
    os.symlink("loop1.pt.trace.json", run / "loop2.pt.trace.json")
    os.symlink("missing.json", run / "dangling.pt.trace.json")
    os.mkfifo(run / "fifo.pt.trace.json")  # opening it for reading would block forever
    os.mkfifo(run / "fifo.json")  # a candidate name: the sniffer must not open it either
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(run / "sock.pt.trace.json"))
    (run / "empty.pt.trace.json").write_bytes(b"")
    (run / "junk.pt.trace.json").write_bytes(b"\x00\x01garbage")
    shutil.copy(sample("composer/rank_0.trace.json"), run / "good.pt.trace.json")
    yield tmp_path
    sock.close()


@pytest.mark.corpus
def test_registry_lists_and_loads_an_odd_logdir(odd_logdir):
    reg = RunRegistry(str(odd_logdir))
    with F.time_bound(120):  # a hang guard: opening a FIFO would block forever
        reg.scan()
    assert reg.error is None
    states = {st.entry.rel: st for st in reg.files()}
    # non-regular files (directories, FIFOs, sockets, dangling or looping links) are skipped
    assert set(states) == {"run1/empty.pt.trace.json", "run1/junk.pt.trace.json", "run1/good.pt.trace.json"}
    for state in states.values():
        with F.time_bound(60):
            reg.load(state)
    assert states["run1/good.pt.trace.json"].state == READY
    assert states["run1/empty.pt.trace.json"].state == ERROR
    assert states["run1/empty.pt.trace.json"].error == "file is empty (0 bytes)"
    assert states["run1/junk.pt.trace.json"].state == ERROR
    assert "not a JSON trace" in states["run1/junk.pt.trace.json"].error
    # the runs route carries every file's error
    code, doc = api.runs(reg)
    assert code == 200
    text = json.dumps(doc)
    assert "run1/empty.pt.trace.json" in text and "file is empty (0 bytes)" in text
    assert "run1/junk.pt.trace.json" in text and "not a JSON trace" in text


@pytest.mark.corpus
def test_report_names_each_bad_file_and_reason(odd_logdir):
    out, err = io.StringIO(), io.StringIO()
    with F.time_bound(120):
        code = run_report(str(odd_logdir), None, True, False, out, err)
    assert code == 1
    lines = [line for line in err.getvalue().splitlines() if line.startswith("kinetoscope: ")]
    assert "kinetoscope: run1/empty.pt.trace.json: file is empty (0 bytes)" in lines
    assert any(line.startswith("kinetoscope: run1/junk.pt.trace.json: not a JSON trace") for line in lines)
    assert len(lines) == 2, lines
    doc = json.loads(out.getvalue())
    assert {w["path"] for r in doc["runs"] for w in r["workers"]} == {
        "run1/empty.pt.trace.json",
        "run1/junk.pt.trace.json",
        "run1/good.pt.trace.json",
    }


def _listed_then_removed(tmp_path):
    """A registry that has listed one real trace, and that file's state; the file is gone since."""
    path = tmp_path / "w.pt.trace.json"
    shutil.copy(sample("composer/rank_0.trace.json"), path)
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (st,) = reg.files()
    path.unlink()
    return reg, st, path


@pytest.mark.corpus
def test_file_replaced_by_a_directory_after_listing(tmp_path):
    reg, st, path = _listed_then_removed(tmp_path)
    path.mkdir()
    reg.load(st)
    assert st.state == ERROR and st.error.startswith("cannot read file"), st.error


@pytest.mark.corpus
def test_file_removed_after_listing(tmp_path):
    reg, st, _ = _listed_then_removed(tmp_path)
    reg.load(st)
    assert st.state == ERROR and st.error.startswith("cannot read file"), st.error
