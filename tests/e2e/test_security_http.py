"""Security review, HTTP side: a real TensorBoard on loopback, hostile parameters on every route.

* path traversal: ``..``, absolute paths, URL-encoded and double-encoded forms, NUL bytes, very long
  values, and symlinks inside the logdir that point outside it; no answer ever holds the secret;
* pickles: a malicious allocator snapshot is refused through the HTTP route and never runs;
* response size: every route, with the largest parameters allowed, stays under the bound that
  docs/http_api.md states for it (on the 0.9 MB DLRM sample and a real allocator snapshot);
* headers: every answer carries ``X-Content-Type-Options: nosniff``; HTML carries TensorBoard's CSP.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import sample
from synth.fts import write_memprofiler
from synth.memory_html import png, torch_memory_html

from tests.e2e.conftest import tensorboard

SECRET = "KINETOSCOPE-SECRET-5f1c9e"
PLUGIN = "/data/plugin/kinetoscope"
RUN, WORKER, SPAN = "dlrm", "worker0_step_12", "1"
SNAP_RUN, SNAP_PATH = "snap", "snap/mem_snapshot.pickle"
EXPORT_PATH = "snap/memory_timeline.raw.gz"
EVIL_PATH = "snap/evil.pickle"
STATS_PATH = "snap/memprofiler/rank_0_memory_stats.yaml"
LOG_PATH = "snap/memprofiler/fsdp_mem_rank_0_training_step_2.log"
HTML_PATH = "snap/rank0.1.pt.trace.memory.html"


class _Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sec")
    logdir, outside = root / "logdir", root / "outside"
    (logdir / RUN).mkdir(parents=True)
    (logdir / SNAP_RUN).mkdir()
    (outside / "secretrun").mkdir(parents=True)
    shutil.copy(
        sample("dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json"),
        logdir / RUN / "worker0_step_12.1694128201545.pt.trace.json",
    )
    shutil.copy(sample("memory_snapshots/mem_snapshot.pickle"), logdir / SNAP_PATH)
    shutil.copy(sample("hta/memory_analysis/memory_timeline.raw.gz"), logdir / EXPORT_PATH)
    write_memprofiler(logdir / SNAP_RUN, ranks=1, snapshots=False)
    (logdir / HTML_PATH).write_bytes(torch_memory_html(png(5, 3)))
    marker = root / "pwned"
    (logdir / EVIL_PATH).write_bytes(pickle.dumps({"segments": [], "device_traces": [[_Evil(str(marker))]]}))
    # the secret: a valid trace whose op name is the secret, and a plain secret file, all outside
    secret_trace = {
        "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": SECRET, "pid": 1, "tid": 1, "ts": 0, "dur": 5}]
    }
    for p in (outside / "secret.pt.trace.json", outside / "secretrun" / "w.pt.trace.json"):
        p.write_text(json.dumps(secret_trace))
    (outside / "secret.txt").write_text(SECRET)
    (outside / "secret.pickle").write_bytes(pickle.dumps({"segments": [], "device_traces": [], "x": SECRET}))
    os.symlink(outside, logdir / "linkdir")  # a symlinked directory pointing out
    os.symlink(outside / "secret.pt.trace.json", logdir / RUN / "leak.pt.trace.json")  # a file pointing out
    os.symlink(outside / "secret.pickle", logdir / SNAP_RUN / "leak.pickle")
    os.symlink(outside / "secret.txt", logdir / RUN / "leak2.json")
    cache = root / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        env = {"base": base, "logdir": logdir, "outside": outside, "marker": marker}
        _wait_ready(base)
        yield env


def get(base: str, route: str, query: str | dict = "") -> tuple[int, bytes, dict]:
    """GET a plugin route; ``query`` is a raw (already encoded) string or a dict to encode."""
    if isinstance(query, dict):
        query = urllib.parse.urlencode(query)
    url = f"{base}{PLUGIN}/{route}" + (f"?{query}" if query else "")
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def get_settled(base: str, route: str, query: dict, wait_s: float = 120.0) -> tuple[int, bytes, dict]:
    """GET a route that loads its file in the background on first request: ask again while it is loading."""
    deadline = time.time() + wait_s
    while True:
        code, body, headers = get(base, route, query)
        if code != 200 or time.time() > deadline:
            return code, body, headers
        try:
            state = json.loads(body).get("state")
        except (ValueError, AttributeError):
            return code, body, headers
        if state not in ("loading", "queued"):
            return code, body, headers
        time.sleep(0.3)


def _wait_ready(base: str) -> None:
    q = {"run": RUN, "worker": WORKER, "span": SPAN}
    deadline = time.time() + 120
    while time.time() < deadline:
        code, body, _ = get(base, "overview", q)
        if code == 200 and json.loads(body).get("state") == "ready":
            return
        time.sleep(0.3)
    raise AssertionError(f"DLRM trace never loaded: {body[:300]!r}")


FILE = {"run": RUN, "worker": WORKER, "span": SPAN}
SNAP = {"run": SNAP_RUN, "path": SNAP_PATH}
# every route that takes a lookup parameter, with valid values for all of them
ROUTES = {
    **dict.fromkeys(
        "overview operators operators.csv kernels kernels.csv modules timeline_meta timeline trace_file".split(), FILE
    ),
    "timeline_search": dict(FILE, q="a"),
    "timeline_range": dict(FILE, start_us="0", end_us="1000"),
    "operator_stacks": dict(FILE, key="0"),
    "timeline_event": dict(FILE, row="0"),
    **dict.fromkeys(("memory", "memory_events", "memory_events.csv", "insights"), FILE),
    **dict.fromkeys(("memory_stats", "memory_stats.csv"), dict(FILE, device="GPU0")),
    **dict.fromkeys(("snapshot", "snapshot_timeline", "snapshot_segments", "snapshot_allocations"), SNAP),
    **dict.fromkeys(("snapshot_oom", "snapshot_ranks"), SNAP),
    "snapshot_stack": dict(SNAP, stack="0"),
    "memory_timeline_export": {"run": SNAP_RUN, "path": EXPORT_PATH},
    **dict.fromkeys(("memory_html", "memory_html_image"), {"run": SNAP_RUN, "path": HTML_PATH}),
    "memprofiler_stats": {"run": SNAP_RUN, "path": STATS_PATH},
    "memprofiler_log": {"run": SNAP_RUN, "path": LOG_PATH},
    "distributed": {"run": RUN},
    "diff": {f"{s}_{k}": v for s in ("base", "exp") for k, v in FILE.items()},
}
LOOKUP_PARAMS = {
    "run",
    "worker",
    "span",
    "path",
    "key",
    "row",
    "stack",
    "base_run",
    "base_worker",
    "base_span",
    "exp_run",
    "exp_worker",
    "exp_span",
}


def hostile_values(env) -> list[str]:
    """Raw (already URL-encoded) hostile values for one parameter."""
    outside = str(env["outside"])
    plain = [
        "..",
        "../..",
        "../outside/secret.txt",
        "../../outside/secret.pt.trace.json",
        f"{outside}/secret.txt",
        f"{outside}/secret.pt.trace.json",
        "/etc/passwd",
        "linkdir",
        "linkdir/secretrun",
        "linkdir/secretrun/w",
        f"{RUN}/leak.pt.trace.json",
        "leak",
        "leak2",
        f"{SNAP_RUN}/leak.pickle",
        f"{RUN}/../linkdir",
        "..\\..\\outside\\secret.txt",
        "file:///etc/passwd",
        "x" * 10_000,
        "1e3",
        "-1",
        "0x10",
    ]
    encoded = [urllib.parse.quote(v, safe="") for v in plain]
    return encoded + [
        "%2e%2e%2f%2e%2e%2foutside%2fsecret.txt",
        "%252e%252e%252f%252e%252e%252foutside%252fsecret.txt",
        "..%2f..%2foutside%2fsecret.txt",
        "%2e%2e",
        "%252e%252e",
        "%00",
        f"{RUN}%00",
        "..%00",
        "%c0%ae%c0%ae%2f",
        "%2fetc%2fpasswd",
        "linkdir%2fsecretrun",
    ]


def _no_secret(route: str, body: bytes, env, echoed: str = "") -> None:
    """The secret never leaks; the outside directory's path appears only where the request named it
    (an error message quoting the parameter, in JSON answered with nosniff)."""
    assert SECRET.encode() not in body, route
    if str(env["outside"]) not in echoed:
        assert str(env["outside"]).encode() not in body, route


@pytest.mark.corpus
def test_listing_hides_symlinks_that_point_outside(env):
    code, body, _ = get(env["base"], "runs")
    assert code == 200
    _no_secret("runs", body, env)
    doc = json.loads(body)
    names = {r["name"] for r in doc["runs"]}
    assert names == {RUN, SNAP_RUN}, names
    paths = {s["path"] for r in doc["runs"] for w in r["workers"] for s in w["spans"]}
    paths |= {a["path"] for r in doc["runs"] for a in r["artifacts"]}
    assert not any("leak" in p or "linkdir" in p for p in paths), paths


@pytest.mark.corpus
def test_every_lookup_parameter_resists_traversal(env):
    checked = 0
    for route, params in ROUTES.items():
        for key in params:
            if key not in LOOKUP_PARAMS:
                continue
            for value in hostile_values(env):
                others = urllib.parse.urlencode({k: v for k, v in params.items() if k != key})
                code, body, headers = get(env["base"], route, f"{others}&{key}={value}")
                assert code in (400, 404), (route, key, value[:60], code, body[:200])
                _no_secret(route, body, env, urllib.parse.unquote(value))
                assert headers.get("X-Content-Type-Options") == "nosniff", (route, headers)
                checked += 1
    assert checked > 1000
    assert not env["marker"].exists()


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name",
    [
        "../plugin.py",
        "..%2fplugin.py",
        "%2e%2e%2fplugin.py",
        "%252e%252e%252fplugin.py",
        "..%2f..%2f..%2f..%2fetc%2fpasswd",
        "%2fetc%2fpasswd",
        "index.js%00.txt",
        "...",
        "__init__.py",
        "x" * 5000,
    ],
)
def test_static_serves_only_whitelisted_files(env, name):
    code, body, headers = get(env["base"], f"static/{name}")
    assert code == 404 and b"import" not in body and b"root:" not in body
    assert headers.get("X-Content-Type-Options") == "nosniff"
    code, body, headers = get(env["base"], "index.js")
    assert code == 200 and headers["Content-Type"].startswith("text/javascript")


@pytest.mark.corpus
def test_trace_file_serves_only_listed_traces(env):
    code, body, headers = get(env["base"], "trace_file", FILE)
    assert code == 200 and headers["Content-Type"] == "application/octet-stream"
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Content-Disposition"].startswith("attachment")
    assert body == (env["logdir"] / RUN / "worker0_step_12.1694128201545.pt.trace.json").read_bytes()
    for worker in ("leak", "leak2", "../outside/secret", "linkdir", "%2e%2e%2fsecret"):
        code, body, _ = get(env["base"], "trace_file", dict(FILE, worker=worker))
        assert code == 404 and SECRET.encode() not in body


@pytest.mark.corpus
def test_malicious_pickle_is_refused_over_http_and_never_runs(env):
    marker: Path = env["marker"]
    code, body, headers = get_settled(env["base"], "snapshot", {"run": SNAP_RUN, "path": EVIL_PATH})
    doc = json.loads(body)
    assert code == 200 and doc["state"] == "error" and "refused to load global" in doc["error"], doc
    assert "posix.system" in doc["error"] or "os.system" in doc["error"]
    for route in ("snapshot_timeline", "snapshot_segments", "snapshot_allocations", "snapshot_stack"):
        code, body, _ = get(env["base"], route, {"run": SNAP_RUN, "path": EVIL_PATH})
        assert json.loads(body)["state"] == "error"
    time.sleep(0.5)
    assert not marker.exists(), "the pickle ran code"
    code, body, _ = get(env["base"], "runs")
    arts = {a["path"]: a for r in json.loads(body)["runs"] for a in r["artifacts"]}
    assert arts[EVIL_PATH]["state"] == "error" and "refused" in arts[EVIL_PATH]["error"]


# --- response size -------------------------------------------------------------------------------
MB = 1 << 20
BIG = {"limit": "1000", "offset": "0", "width_px": "10000"}
# route → (extra parameters at their largest, byte bound stated in docs/http_api.md)
SIZE_CASES = {
    "runs": ({}, 1 * MB),
    "overview": ({}, 2 * MB),
    "operators": (dict(BIG, group_by="input_shape"), 2 * MB),
    "operators.csv": ({"group_by": "input_shape"}, 8 * MB),
    "operator_stacks": ({"key": "0", "group_by": "operator"}, 2 * MB),
    "kernels": (dict(BIG, group_by="kernel_op_config"), 2 * MB),
    "kernels.csv": ({"group_by": "kernel_op_config"}, 8 * MB),
    "modules": ({}, 2 * MB),
    "timeline_meta": ({}, 1 * MB),
    "timeline": ({"width_px": "10000"}, 16 * MB),
    "timeline_search": ({"q": ".", "regex": "1"}, 1 * MB),
    "timeline_range": ({"start_us": "-1e12", "end_us": "1e12", "top": "1000"}, 1 * MB),
    "timeline_event": ({"row": "0"}, 1 * MB),
    "memory": ({"width_px": "10000"}, 2 * MB),
    "memory_events": (BIG, 1 * MB),
    "memory_events.csv": ({}, 8 * MB),
    "memory_stats": (dict(BIG, device="GPU0"), 1 * MB),
    "memory_stats.csv": ({"device": "GPU0"}, 8 * MB),
    "insights": ({}, 2 * MB),
    "distributed": ({}, 2 * MB),
    "critical_path": ({}, 16 * MB),
    "diff": ({}, 4 * MB),
}
SNAP_SIZE_CASES = {
    "snapshot": ({}, 1 * MB),
    "snapshot_timeline": ({"width_px": "10000"}, 8 * MB),
    "snapshot_segments": ({}, 8 * MB),
    "snapshot_allocations": ({"limit": "10000"}, 4 * MB),
    "snapshot_stack": ({"stack": "0"}, 1 * MB),
    "snapshot_oom": ({"top": "1000", "last_n": "10000000"}, 2 * MB),
    "snapshot_ranks": ({}, 1 * MB),
    "memory_timeline_export": ({"path": EXPORT_PATH}, 2 * MB),
    "memprofiler_stats": ({"path": STATS_PATH}, 16 * MB),
    "memprofiler_log": ({"path": LOG_PATH}, 2 * MB),
    "memory_html": ({"path": HTML_PATH}, 1 * MB),
}


@pytest.mark.corpus
def test_every_route_answers_within_its_bound(env):
    sizes = {}
    for route, (extra, bound) in SIZE_CASES.items():
        params = dict(ROUTES.get(route, FILE), **extra)
        if route == "diff":
            params = dict(ROUTES["diff"], path="[]")
        if route == "runs":
            params = {}
        code, body, headers = get(env["base"], route, params)
        assert code == 200, (route, body[:300])
        assert headers.get("X-Content-Type-Options") == "nosniff", route
        sizes[route] = len(body)
        assert len(body) <= bound, (route, len(body), bound)
        if not route.endswith(".csv") and route not in ("runs", "distributed", "operator_stacks"):
            assert json.loads(body).get("state") == "ready", (route, body[:200])
    for route, (extra, bound) in SNAP_SIZE_CASES.items():
        code, body, headers = get_settled(env["base"], route, dict(SNAP, **extra))
        assert code == 200 and json.loads(body)["state"] == "ready", (route, body[:300])
        assert headers.get("X-Content-Type-Options") == "nosniff", route
        sizes[route] = len(body)
        assert len(body) <= bound, (route, len(body), bound)
    # structural caps behind those bounds
    _, body, _ = get(env["base"], "timeline_search", dict(FILE, q=".", regex="1"))
    doc = json.loads(body)
    assert doc["total"] > 1000 and len(doc["rows"]) == 1000
    for route in ("operators", "kernels", "memory_events"):
        _, body, _ = get(env["base"], route, dict(FILE, limit="1000"))
        assert len(json.loads(body)["rows"]) <= 1000
        code, _, _ = get(env["base"], route, dict(FILE, limit="1001"))
        assert code == 400, route
    _, body, _ = get(env["base"], "kernels", dict(FILE, limit="1000"))
    assert len(json.loads(body)["top"]) <= 11
    code, _, _ = get(env["base"], "snapshot_allocations", dict(SNAP, limit="10001"))
    assert code == 400
    code, _, _ = get(env["base"], "timeline", dict(FILE, width_px="10001"))
    assert code == 400
    print("response sizes (bytes):", json.dumps(sizes, indent=1))


@pytest.mark.corpus
def test_html_pages_carry_tensorboard_csp(env):
    for path in ("/", "/data/plugin_entry.html?name=kinetoscope"):
        with urllib.request.urlopen(env["base"] + path, timeout=30) as r:
            assert r.headers["Content-Type"].startswith("text/html")
            csp = r.headers["Content-Security-Policy"]
            assert csp and "script-src" in csp and "object-src 'none'" in csp
            assert r.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.corpus
def test_catastrophic_regex_is_refused(env):
    # exponential backtracking on the trace's own op names: stopped by the 1 s bound (CPU time of the
    # regex engine; the wall time it takes: benchmarks/bench_timeline.py)
    code, body, _ = get(env["base"], "timeline_search", dict(FILE, q="(\\w|\\w\\w)+$", regex="1"))
    assert code == 400 and b"took longer than 1 s" in body, body
    # counted repeats that would unroll to 10^8 elements: refused before compiling
    code, body, _ = get(env["base"], "timeline_search", dict(FILE, q="(?:(?:(?:a{100}){100}){100}){100}", regex="1"))
    assert code == 400 and b"too large" in body, body
    for pattern in ("(a+)+$", "(\\w*a)*b", "(x+x+)+y", "(a)\\1"):  # once refused by a heuristic: now bounded
        code, body, _ = get(env["base"], "timeline_search", dict(FILE, q=pattern, regex="1"))
        assert code == 200, (pattern, body)
    code, body, _ = get(env["base"], "timeline_search", dict(FILE, q="aten::(add|mul)_?", regex="1"))
    assert code == 200 and json.loads(body)["total"] > 0
    code, body, _ = get(env["base"], "operator_stacks", dict(FILE, key="0"))
    doc = json.loads(body)
    assert code == 200 and len(doc["stacks"]) <= 200 and doc["total_stacks"] >= len(doc["stacks"])


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    """A real TensorBoard on odd but valid inputs (see tests/integration/test_odd_inputs.py)."""
    from tests.integration.test_odd_inputs import BASE_SNAPSHOT, BIG, _deep, _x

    root = tmp_path_factory.mktemp("odd")
    logdir, cache = root / "logdir", root / "cache"
    cache.mkdir()
    for run, doc in {
        "args": {"traceEvents": [_x("big", 0, 10, Big=BIG), _x("deep", 20, 10, Deep=_deep(300))]},
        "top": {
            "distributedInfo": {"rank": 0, "world_size": BIG},
            "baseTimeNanoseconds": BIG,
            "deviceProperties": [{"id": 0, "name": "G", "totalGlobalMem": BIG}],
            "traceEvents": [
                _x("aten::mm", 0, 10),
                {"ph": "M", "name": "clock_sync_timestamp_us", "pid": 1, "args": {"value": BIG}},
            ],
        },
        "mods": {
            "traceEvents": [_x(f"nn.Module: M_{i}", i, 10_000 - 2 * i, cat="python_function") for i in range(3000)]
        },
    }.items():
        (logdir / run).mkdir(parents=True)
        (logdir / run / "w.1.pt.trace.json").write_text(json.dumps(doc))
    (logdir / "mem").mkdir()
    (logdir / "mem" / "rank_0_memory_stats.yaml").write_text(f"0.training_step.2.start:\n  rss: {BIG}\n")
    snap = dict(BASE_SNAPSHOT, device_traces=[[1, "x"] + BASE_SNAPSHOT["device_traces"][0], ["only", "junk"]])
    snap["segments"] = [dict(BASE_SNAPSHOT["segments"][0], stream=BIG, address="x")]
    (logdir / "mem" / "odd.pickle").write_bytes(pickle.dumps(snap))
    with tensorboard(logdir, cache) as base:
        deadline = time.time() + 120
        for run in ("args", "top", "mods"):
            while time.time() < deadline:
                code, body, _ = get(base, "overview", {"run": run, "worker": "w", "span": "1"})
                if code == 200 and json.loads(body).get("state") in ("ready", "error"):
                    break
                time.sleep(0.3)
        # The snapshot loads in the background on its first request (a reader child): wait for its answer,
        # so the test's single requests see "ready" on a slow machine too.
        get_settled(base, "snapshot", {"run": "mem", "path": "mem/odd.pickle"}, wait_s=max(1.0, deadline - time.time()))
        yield base


def test_odd_inputs_answer_json(odd):
    """Big integers, 300-deep args, 3 000 nested modules, a lone surrogate, wrong-typed snapshot fields:
    every answer is JSON with nosniff, values where the input is valid, a 400 for a bad parameter."""
    big = str(2**70 + 1)
    file = {"worker": "w", "span": "1"}
    diff = {f"{s}_{k}": v for s in ("base", "exp") for k, v in dict(file, run="args").items()}
    snap = {"run": "mem", "path": "mem/odd.pickle"}
    answers = {}
    for key, route, query in [
        ("big", "timeline_event", dict(file, run="args", row="0")),
        ("deep", "timeline_event", dict(file, run="args", row="1")),
        ("top", "overview", dict(file, run="top")),
        ("meta", "timeline_meta", dict(file, run="top")),
        ("mods", "modules", dict(file, run="mods")),
        ("yaml", "memprofiler_stats", {"run": "mem", "path": "mem/rank_0_memory_stats.yaml"}),
        ("surrogate", "diff", dict(diff, path='["\\ud800"]')),
        ("nested", "diff", dict(diff, path="[" * 3000)),
        ("snap", "snapshot", snap),
        ("timeline", "snapshot_timeline", snap),
        ("segments", "snapshot_segments", snap),
        ("allocs", "snapshot_allocations", snap),
        ("junk_device", "snapshot_timeline", dict(snap, device="1")),
    ]:
        code, body, headers = get(odd, route, query)
        assert headers["Content-Type"].startswith("application/json"), (route, body[:300])
        assert headers["X-Content-Type-Options"] == "nosniff"
        answers[key] = (code, json.loads(body))
    assert answers["big"][0] == 200 and answers["big"][1]["args"]["Big"] == big
    assert answers["deep"][0] == 200 and "not shown" in json.dumps(answers["deep"][1]["args"])
    assert answers["top"][0] == 200 and answers["top"][1]["configuration"]["distributed"]["world_size"] == big
    assert answers["meta"][1]["base_time_ns"] == big
    assert answers["mods"][0] == 200 and answers["mods"][1]["modules"][0]["name"] == "M_0"
    assert answers["yaml"][0] == 200 and answers["yaml"][1]["snapshots"][0]["values"]["rss"] == float(2**70 + 1)
    assert answers["surrogate"][0] == answers["nested"][0] == 400
    for key in ("snap", "timeline", "segments", "allocs"):
        assert answers[key][0] == 200 and answers[key][1]["state"] == "ready", answers[key]
    assert answers["segments"][1]["segments"][0]["stream"] == big
    assert answers["segments"][1]["segments"][0]["address"] == 0
    assert answers["junk_device"] == (400, {"error": "no history for device 1; recorded: [0]"})
