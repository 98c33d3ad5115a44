"""``kinetoscope serve`` under held connections: how long a normal request takes to answer while N
connections each hold half a request ("slowloris"), and how many threads the server runs meanwhile.

    python benchmarks/bench_serve_held.py [--held 400]

The test (``tests/e2e/test_serve_waitress.py``) asserts the behaviour: the request is answered and
the thread count stays at the pool. This prints the figure; the last line is
``held=… answer_s=… threads=…``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import print_figures  # noqa: E402
from tb_plugin.standalone import ROUTE_BASE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--held", type=int, default=400, help="connections holding half a request")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp, "logs", "r")
        run.mkdir(parents=True)
        event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
        (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": [event]}))
        env = dict(os.environ, PYTHONPATH=str(REPO), KINETOSCOPE_CACHE_DIR=str(Path(tmp, "cache")))
        cmd = [sys.executable, "-m", "tb_plugin.cli", "serve", str(run.parent), "--port", "0"]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
        held: list[socket.socket] = []
        try:
            port = int(re.search(r":(\d+)/", proc.stderr.readline()).group(1))  # type: ignore[union-attr]
            for _ in range(args.held):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
                held.append(s)
            started = time.monotonic()
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                s.sendall(f"GET {ROUTE_BASE}/runs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
                first = s.recv(64)
                while s.recv(65536):
                    pass
            answer_s = time.monotonic() - started
            threads = len(os.listdir(f"/proc/{proc.pid}/task"))
            status = first.split(b"\r\n")[0].decode("latin-1")
            print(f"status line: {status}")
            print_figures(held=(args.held, 0), answer_s=answer_s, threads=(threads, 0))
        finally:
            for s in held:
                s.close()
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
