"""``kinetoscope serve`` without a browser (tb_plugin/standalone.py): every route of the plugin's table
is mounted with the plugin's security headers, unknown paths answer JSON, the streamed trace download
is the file's bytes, the Overview route gives the numbers of ``kinetoscope report --json``, and the
start message says who can connect."""

from __future__ import annotations

import io
import json
import shutil
import socket
import threading

import pytest
from conftest import SAMPLES, settled

from tb_plugin.cli import report as cli_report
from tb_plugin.standalone import ROUTE_BASE, create_app, listen_message, normalize_prefix, serve_forever

RESNET = SAMPLES / "kineto" / "resnet50_num_workers_0"
BERT = SAMPLES / "tracelens" / "h100" / "gaunernst_bert-small-uncased__1016001.json.gz"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    shutil.copytree(RESNET, root / "resnet50")
    (root / "h100").mkdir()
    shutil.copy(BERT, root / "h100" / "bert.1.pt.trace.json.gz")
    (root / "broken").mkdir()
    (root / "broken" / "empty.pt.trace.json").write_bytes(b"")
    return root


@pytest.fixture(scope="module")
def client(logdir, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    return create_app(str(logdir), "/p").test_client()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _headers_ok(r) -> None:
    assert r.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert "frame-ancestors 'self'" in r.headers["Content-Security-Policy"]
    assert r.headers["X-Content-Type-Options"] == "nosniff"


def _ready(client, route: str, query: str) -> dict:
    return settled(client, f"/p{ROUTE_BASE}/{route}?{query}", sleep_s=0.2)


def test_prefixes():
    assert [normalize_prefix(p) for p in ("", "/", "p", "/p", "/p/", "/a/b/")] == ["", "", "/p", "/p", "/p", "/a/b"]
    for bad in ("/a b", "/a?b", "/a#b", "a//b", "/a\\b"):
        with pytest.raises(ValueError, match="path-prefix"):
            normalize_prefix(bad)


@pytest.mark.corpus
def test_every_route_is_mounted_with_the_plugin_headers(client):
    plugin = client.application.kinetoscope_plugin
    routes = plugin.get_plugin_apps()
    assert len(routes) > 30
    for route in routes:
        path = route.replace("/*", "/index.js")
        r = client.get(f"/p{ROUTE_BASE}{path}")  # no parameters: a JSON 4xx, the page, or the bundle
        _headers_ok(r)
        assert r.status_code < 500, (route, r.status_code, r.data[:200])
        assert r.mimetype != "text/html", route
    page = client.get("/p/")
    _headers_ok(page)
    assert page.status_code == 200 and b'<base href="data/plugin/kinetoscope/">' in page.data
    assert "script-src" in page.headers["Content-Security-Policy"]
    bare = client.get("/p")
    assert bare.status_code == 308 and bare.headers["Location"] == "p/"
    for r in (
        client.get("/"),
        client.get("/p/nope"),
        client.get(f"/p{ROUTE_BASE}/nope"),
        client.post(f"/p{ROUTE_BASE}/runs"),
    ):
        _headers_ok(r)
        assert r.status_code in (404, 405) and r.is_json and "error" in r.get_json()


@pytest.mark.corpus
def test_the_overview_route_equals_the_report(client, logdir):
    """The numbers the page shows through ``serve`` are ``kinetoscope report --json``'s."""
    out, err = io.StringIO(), io.StringIO()
    assert cli_report.run_report(str(logdir), None, True, False, out, err) == 1  # the broken file
    report = json.loads(out.getvalue())
    compared = 0
    for run in report["runs"]:
        for w in run["workers"]:
            served = _ready(client, "overview", f"run={run['name']}&worker={w['worker']}&span={w['span']}")
            if w["error"]:
                assert "error" in served or served.get("state") == "error", served
                continue
            for key in ("steps", "average", "gpus", "recommendations"):
                assert served[key] == w["overview"][key], (run["name"], key)
            compared += 1
    assert compared == 3


@pytest.mark.corpus
def test_the_trace_download_streams_the_file(client, logdir):
    name = sorted(p.name for p in (logdir / "resnet50").iterdir())[0]
    worker, span = "worker0", "1"
    r = client.get(f"/p{ROUTE_BASE}/trace_file?run=resnet50&worker={worker}&span={span}")
    _headers_ok(r)
    assert r.status_code == 200 and r.data == (logdir / "resnet50" / name).read_bytes()


def test_the_start_message_says_who_can_connect():
    assert "bound to loopback 127.0.0.1: only this machine" in listen_message("127.0.0.1", 6006, "")
    assert listen_message("127.0.0.1", 6006, "/p").startswith("Kinetoscope at http://127.0.0.1:6006/p/ ")
    assert "anyone who can reach this port" in listen_message("0.0.0.0", 6006, "")
    assert "http://[::1]:6006/" in listen_message("::1", 6006, "")


def test_bad_arguments_and_a_taken_port(tmp_path):
    before = set(threading.enumerate())
    err = io.StringIO()
    assert serve_forever(str(tmp_path / "missing"), "127.0.0.1", 6006, "", err) == 2 and "no such" in err.getvalue()
    err = io.StringIO()
    assert serve_forever(str(tmp_path), "127.0.0.1", 6006, "/a b", err) == 2 and "path-prefix" in err.getvalue()
    err = io.StringIO()
    assert serve_forever(str(tmp_path), "127.0.0.1", 70000, "", err) == 2 and "--port" in err.getvalue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        err = io.StringIO()
        assert serve_forever(str(tmp_path), "127.0.0.1", s.getsockname()[1], "", err) == 1
        assert "cannot listen" in err.getvalue()
    # the server's worker threads and the registry's are ended, not left running in the process
    started = [t for t in threading.enumerate() if t not in before]
    for t in started:
        t.join(10)
    assert [t.name for t in started if t.is_alive()] == []
