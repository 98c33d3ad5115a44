"""HTTP hardening through the plugin's own WSGI apps.

* ``trace_file`` of files named with CJK + emoji, quotes, backslashes and CR/LF: 200, the file's
  bytes, an ASCII ``Content-Disposition`` whose ``filename*`` decodes back to the name;
* every CSV route on a trace whose op, kernel and module names start with ``=``, ``+``, ``-``, ``@``,
  tab and CR: those cells get a leading ``'``, numbers stay numbers;
* per-file errors name logdir-relative paths, never the logdir's absolute path nor a symlink target;
* every route answers with ``X-Frame-Options: SAMEORIGIN`` and ``frame-ancestors 'self'``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import time
import urllib.parse
from pathlib import Path

import pytest
from synth.traces import SynthSpec, synthesize
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_plugin.api.paging import csv_cell, to_csv
from tb_plugin.http_headers import content_disposition
from tb_plugin.plugin import KinetoscopePlugin
from tb_plugin.registry.runs import RunRegistry, relative_paths

UNICODE_NAME = "工作-😀.pt.trace.json"
NASTY_NAME = 'a"b\\c\r\nX-Evil: 1.pt.trace.json'  # quote, backslash, CR/LF and a would-be header
PREFIXES = ("=", "+", "-", "@", "\t", "\r")
SECRET_DIR = "outside-KS-SECRET"


def _prefixed(names: list[str]) -> dict[str, str]:
    """Each distinct name → the same name behind one of the formula characters, in turn."""
    return {n: PREFIXES[i % len(PREFIXES)] + n for i, n in enumerate(sorted(set(names)))}


def formula_trace() -> tuple[dict, dict[str, str]]:
    """A synthesized pytorch2 trace (with memory events and python stacks) whose operator, kernel
    and module names all start with a formula character; returns it and old name → new name."""
    trace = synthesize(SynthSpec(steps=3, with_python_stack=True))
    events = trace["traceEvents"]
    ops = [e["name"] for e in events if e.get("cat") == "cpu_op"]
    kernels = [e["name"] for e in events if e.get("cat") == "kernel"]
    modules = [
        e["name"][len("nn.Module: ") :]
        for e in events
        if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")
    ]
    renamed = {**_prefixed(ops), **_prefixed(kernels)}
    mods = _prefixed(modules)
    for e in events:
        if e.get("cat") in ("cpu_op", "kernel"):
            e["name"] = renamed[e["name"]]
        elif e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "):
            e["name"] = "nn.Module: " + mods[e["name"][len("nn.Module: ") :]]
    return trace, renamed


def _plugin(logdir: Path, reload_interval: float = 2.0) -> dict:
    ctx = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(reload_interval=reload_interval))
    return KinetoscopePlugin(ctx).get_plugin_apps()


def _get(apps: dict, route: str, **query):
    return Client(apps["/" + route]).get("/" + route, query_string=query)


def _workers(apps: dict, run: str) -> dict[str, dict]:
    doc = json.loads(_get(apps, "runs").data)
    return {w["worker"]: w for r in doc["runs"] if r["name"] == run for w in r["workers"]}


def _wait_ready(apps: dict, sel: dict) -> None:
    deadline = time.time() + 120
    while time.time() < deadline:
        doc = json.loads(_get(apps, "overview", **sel).data)
        if doc.get("state") in ("ready", "error"):
            assert doc["state"] == "ready", doc
            return
        time.sleep(0.1)
    raise AssertionError(f"{sel} never loaded")


# --- item 9: Content-Disposition -----------------------------------------------------------------
@pytest.mark.parametrize(
    "name, fallback",
    [
        (UNICODE_NAME, "__-_.pt.trace.json"),
        (NASTY_NAME, "abcX-Evil: 1.pt.trace.json"),
        ("café.json", "caf_.json"),
        ("plain.pt.trace.json", "plain.pt.trace.json"),
        ("\r\n", "trace.json"),
    ],
)
def test_content_disposition_is_ascii_with_an_rfc5987_name(name, fallback):
    value = content_disposition(name)
    value.encode("ascii")  # raises if not
    assert "\r" not in value and "\n" not in value
    head, star = value.split("; filename*=UTF-8''")
    assert head == f'attachment; filename="{fallback}"'
    expected = name.replace("\r", "").replace("\n", "").strip() or "trace.json"
    assert urllib.parse.unquote(star, errors="strict") == expected


def test_trace_file_serves_non_latin1_and_crlf_names(tmp_path):
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    raw = json.dumps(synthesize(SynthSpec(steps=2))).encode()
    (logdir / "run" / UNICODE_NAME).write_bytes(raw)
    (logdir / "run" / NASTY_NAME).write_bytes(raw + b" ")  # different bytes: the right file is served
    apps = _plugin(logdir)
    workers = _workers(apps, "run")
    assert set(workers) == {"工作-😀", 'a"b\\c\r\nX-Evil: 1'}, workers
    for worker, disk_name, body in (("工作-😀", UNICODE_NAME, raw), ('a"b\\c\r\nX-Evil: 1', NASTY_NAME, raw + b" ")):
        r = _get(apps, "trace_file", run="run", worker=worker, span="1")
        assert r.status_code == 200 and r.data == body
        assert r.headers["Content-Type"] == "application/octet-stream"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert "X-Evil" not in r.headers
        cd = r.headers["Content-Disposition"]
        star = cd.split("filename*=UTF-8''", 1)[1]
        assert urllib.parse.unquote(star) == disk_name.replace("\r", "").replace("\n", "")
        assert r.headers["X-Frame-Options"] == "SAMEORIGIN"
        assert r.headers["Content-Security-Policy"] == "frame-ancestors 'self'"


# --- item 11: CSV formula injection --------------------------------------------------------------
def test_csv_cell_escapes_formula_strings_only():
    for p in PREFIXES:
        assert csv_cell(p + "SUM(A1)") == "'" + p + "SUM(A1)"
    for v in (-3, 0, 7, True, "aten::mm", "GPU0", "[[1, 2], []]", "'quoted", ""):
        assert csv_cell(v) == v
    assert csv_cell(-2.5) == "-2.5"  # a float is written by the one rounding rule, not quoted
    assert csv_cell(None) == ""
    text = to_csv([{"name": '=HYPERLINK("x")', "v": -3, "w": -0.5, "s": "-1"}], ["name", "v", "w", "s"])
    assert text.splitlines() == ["name,v,w,s", '"\'=HYPERLINK(""x"")",-3,-0.5,\'-1']


def _csv(apps: dict, route: str, **query) -> list[dict[str, str]]:
    r = _get(apps, route, **query)
    assert r.status_code == 200, (route, r.data[:300])
    assert r.headers["Content-Type"].startswith("text/csv")
    assert r.headers["X-Frame-Options"] == "SAMEORIGIN"
    return list(csv.DictReader(io.StringIO(r.data.decode("utf-8"), newline="")))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# every CSV route with each grouping; column → which names it holds
CSV_CASES = [
    ("operators.csv", {"group_by": "operator"}, "name", "op"),
    ("operators.csv", {"group_by": "input_shape"}, "name", "op"),
    ("operators.csv", {"group_by": "call_stack"}, "name", "op"),
    ("kernels.csv", {"group_by": "kernel"}, "name", "kernel"),
    ("kernels.csv", {"group_by": "kernel_op_config"}, "name", "kernel"),
    ("kernels.csv", {"group_by": "kernel_op_config"}, "op", "op"),
    ("memory_events.csv", {}, "op", "op"),
    ("memory_stats.csv", {"device": "GPU0"}, "name", "op"),
]


def test_every_csv_route_escapes_formula_names(tmp_path):
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    trace, renamed = formula_trace()
    (logdir / "run" / "w.pt.trace.json").write_text(json.dumps(trace))
    apps = _plugin(logdir)
    sel = {"run": "run", "worker": "w", "span": "1"}
    _wait_ready(apps, sel)
    cats = {e["name"]: e["cat"] for e in trace["traceEvents"] if e.get("cat") in ("cpu_op", "kernel")}
    kinds = {
        "op": {n for n, c in cats.items() if c == "cpu_op"},
        "kernel": {n for n, c in cats.items() if c == "kernel"},
    }
    unrenamed = {e["name"] for e in trace["traceEvents"] if isinstance(e.get("name"), str)} - set(renamed.values())
    assert not any(n.startswith(PREFIXES) for n in unrenamed)
    seen: dict[str, set[str]] = {}  # route → the formula characters it escaped
    for route, extra, column, kind in CSV_CASES:
        rows = _csv(apps, route, **sel, **extra)
        assert rows, (route, extra)
        cells = [r[column] for r in rows if r[column]]
        assert cells, (route, column)
        kept = [c for c in cells if not c.startswith("'")]  # annotations ('## forward ##') keep their names
        assert set(kept) <= unrenamed, (route, column, set(kept) - unrenamed)
        escaped = {c[1:] for c in cells if c.startswith("'")}
        assert escaped <= kinds[kind], (route, column, escaped - kinds[kind])  # exactly the name, behind "'"
        seen.setdefault(route, set()).update(c[0] for c in escaped)
        for r in rows:  # nothing starts like a formula unless it is a number (-3 is not a formula)
            for key, cell in r.items():
                assert not cell.startswith(PREFIXES) or _is_number(cell), (route, key, cell)
        # a numeric column stays numeric (the first one after the names)
        numeric = next(k for k in rows[0] if k in ("calls", "size_bytes"))
        assert all(_is_number(r[numeric]) for r in rows), (route, numeric)
    assert len(seen) == 4 and seen["memory_events.csv"], seen  # only two operators allocate here
    assert all(seen[route] == set(PREFIXES) for route in ("operators.csv", "kernels.csv", "memory_stats.csv")), seen
    # the JSON routes keep the names as they are (only CSV is escaped)
    doc = json.loads(_get(apps, "operators", **sel, limit="1000").data)
    assert {r["name"] for r in doc["rows"]} <= set(renamed.values()) | unrenamed
    assert any(r["name"].startswith("=") for r in doc["rows"])


# --- item 12: relative paths in per-file errors, anti-framing headers ----------------------------
def test_relative_paths_replaces_every_spelling_of_the_root():
    msg = "[Errno 2] No such file or directory: '/real/logs/run/a.json' (/tmp/l/run/b.json, /tmp/logs2/x)"
    assert relative_paths(msg, ("/tmp/l", "/real/logs")) == (
        "[Errno 2] No such file or directory: 'run/a.json' (run/b.json, /tmp/logs2/x)"
    )
    assert relative_paths("/tmp/l/run/a.json", ("/tmp/l/",), "name") == "name/run/a.json"
    assert relative_paths("/x/y", ("/",)) == "/x/y"


def test_per_file_errors_name_logdir_relative_paths(tmp_path):
    real = tmp_path / "real-logdir"
    outside = tmp_path / SECRET_DIR
    (real / "run").mkdir(parents=True)
    outside.mkdir()
    os.symlink(real, tmp_path / "logdir")  # the logdir as given is itself a symlink
    logdir = tmp_path / "logdir"
    body = json.dumps(synthesize(SynthSpec(steps=2)))
    for name in ("swapped.pt.trace.json", "gone.pt.trace.json", "ok.pt.trace.json"):
        (real / "run" / name).write_text(body)
    (outside / "swapped.pt.trace.json").write_text(body)
    reg = RunRegistry(str(logdir))
    reg.scan()
    states = {s.entry.rel: s for s in reg.files()}
    os.unlink(real / "run" / "swapped.pt.trace.json")
    os.symlink(outside / "swapped.pt.trace.json", real / "run" / "swapped.pt.trace.json")
    os.unlink(real / "run" / "gone.pt.trace.json")
    for st in states.values():
        reg.load(st)
    swapped, gone = states["run/swapped.pt.trace.json"].error, states["run/gone.pt.trace.json"].error
    assert swapped == (
        "cannot read file: [Errno 13] run/swapped.pt.trace.json resolves to a path outside the "
        "logdir (replaced by a symbolic link after it was listed?): not read"
    ), swapped
    assert gone == "cannot read file: [Errno 2] No such file or directory: 'run/gone.pt.trace.json'", gone
    assert states["run/ok.pt.trace.json"].error is None
    for msg in (swapped, gone):
        assert str(tmp_path) not in msg and SECRET_DIR not in msg


def test_routes_hide_absolute_paths_and_carry_frame_headers(tmp_path):
    logdir, outside = tmp_path / "logdir", tmp_path / SECRET_DIR
    (logdir / "run").mkdir(parents=True)
    outside.mkdir()
    body = json.dumps(synthesize(SynthSpec(steps=2)))
    (logdir / "run" / "w.pt.trace.json").write_text(body)
    (outside / "w.pt.trace.json").write_text(body)
    apps = _plugin(logdir, reload_interval=600)  # no rescan drops the swapped file before the request
    sel = {"run": "run", "worker": "w", "span": "1"}
    _wait_ready(apps, sel)
    # w is loaded, then swapped for an outside symlink: the download refuses it without naming paths
    os.unlink(logdir / "run" / "w.pt.trace.json")
    os.symlink(outside / "w.pt.trace.json", logdir / "run" / "w.pt.trace.json")
    r = _get(apps, "trace_file", **sel)
    assert r.status_code == 502, r.data
    error = json.loads(r.data)["error"]
    assert error.startswith(
        "cannot read run/w.pt.trace.json: access denied: [Errno 13] run/w.pt.trace.json "
        "resolves to a path outside the logdir"
    ), error
    assert str(tmp_path) not in error and SECRET_DIR not in error
    # every route, whatever its answer, carries the anti-framing headers
    for route in apps:
        path = route.replace("*", "index.js")
        r = Client(apps[route]).get(path, query_string=sel)
        assert r.headers.get("X-Frame-Options") == "SAMEORIGIN", route
        assert r.headers.get("Content-Security-Policy") == "frame-ancestors 'self'", route
        assert r.headers.get("X-Content-Type-Options") == "nosniff", route
