"""``kinetoscope serve`` on waitress (hardening round three, item 4): a Host allowlist against DNS
rebinding, JSON errors with the security headers from every layer, no ``Server`` header, and held
connections that cost no thread and block no other request."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest
from conftest import REPO

from tb_plugin.standalone import ROUTE_BASE, allowed_hosts, create_app, host_name


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logs")
    (logdir / "r").mkdir()
    (logdir / "r" / "w.1.pt.trace.json").write_text(
        json.dumps(
            {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
        )
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), KINETOSCOPE_CACHE_DIR=str(tmp_path_factory.mktemp("cache")))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tb_plugin.cli",
            "serve",
            str(logdir),
            "--port",
            "0",
            "--allow-host",
            "profiler.internal",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stderr.readline()
    port = int(re.search(r":(\d+)/", line).group(1))
    yield proc, port
    proc.kill()
    proc.wait()


def _raw(port: int, request: bytes) -> tuple[int, dict, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _get(port: int, host: str, path: str = f"{ROUTE_BASE}/runs") -> tuple[int, dict, bytes]:
    return _raw(port, f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())


def _secure(headers: dict) -> None:
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "SAMEORIGIN"
    assert "server" not in headers


def test_host_allowlist(server):
    _, port = server
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "profiler.internal", f"[::1]:{port}"):
        status, headers, body = _get(port, host)
        assert status == 200, (host, body)
        _secure(headers)
    status, headers, body = _get(port, f"attacker.example:{port}")  # DNS rebinding: refused, no run list
    assert status == 403 and "allow-host" in json.loads(body)["error"] and b"runs" not in body
    _secure(headers)
    assert allowed_hosts("0.0.0.0") == frozenset(("127.0.0.1", "localhost", "::1"))
    assert "10.0.0.5" in allowed_hosts("10.0.0.5") and host_name("[::1]:80") == "::1" and host_name("A.b:1") == "a.b"


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000000\r\n\r\n", 413),
    ],
    ids=["malformed", "body-too-large"],
)
def test_server_level_errors_are_json_with_the_headers(server, request_bytes, status):
    _, port = server
    got, headers, body = _raw(port, request_bytes)
    assert got == status and headers["content-type"] == "application/json", body[:200]
    assert "error" in json.loads(body)
    _secure(headers)


def test_app_level_errors_are_json_with_the_headers():
    app = create_app("/nonexistent-logdir-for-test")
    app.add_url_rule("/boom", "boom", lambda: 1 / 0)
    client = app.test_client()
    for path, status in (("/boom", 500), ("/nope", 404)):
        r = client.get(path)
        assert r.status_code == status and r.is_json and r.headers["X-Content-Type-Options"] == "nosniff"


def test_held_connections_cost_no_thread_and_block_no_request(server):
    """400 connections that sent half a request: a normal request still answers (the socket's 30 s
    timeout in ``_raw`` is the hang guard; the time it takes is printed by
    ``benchmarks/bench_serve_held.py``), and the server's thread count stays at its pool (the
    development server had started one thread per connection)."""
    proc, port = server
    held = []
    try:
        for _ in range(400):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
            held.append(s)
        status, _, _ = _get(port, "localhost")
        assert status == 200
        threads = len(os.listdir(f"/proc/{proc.pid}/task"))
        assert threads < 40, threads
    finally:
        for s in held:
            s.close()
