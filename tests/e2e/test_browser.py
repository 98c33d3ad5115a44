"""Drive the real TensorBoard in headless Debian chromium: the Overview renders real numbers.

Covers ``--path_prefix`` and a prefix-stripping reverse proxy (the way JupyterHub and SageMaker
serve TensorBoard), so every URL the frontend requests must be relative.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import build_logdir, free_port, tensorboard
from tests.e2e.helpers import check_overview, plugin_frame, shown_utilization

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

RUN, WORKER, SPAN = "resnet50", "worker0", "1"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return build_logdir(tmp_path_factory.mktemp("logdir"), SAMPLES)


@pytest.fixture(scope="module")
def expected_utilization(logdir) -> str:
    """The value the UI must show, from the same analysis run headless."""
    return shown_utilization(logdir, RUN, WORKER, SPAN)


def _open_overview(page, url: str, expected: str, shot):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url + "/#kinetoscope")
    frame = plugin_frame(page)
    chart = check_overview(frame, RUN, WORKER, SPAN, expected)
    assert chart.locator("canvas, svg").count() >= 1
    page.screenshot(path=str(shot), full_page=True)
    # nothing left the machine, and every plugin request stayed under the served prefix
    assert all(r.startswith(url.split("/", 3)[0] + "//" + url.split("/", 3)[2]) for r in requests), requests
    return frame


def test_overview_under_path_prefix(browser, logdir, tmp_path, artifacts, expected_utilization):
    with tensorboard(logdir, tmp_path, path_prefix="/some/prefix") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        frame = _open_overview(page, base, expected_utilization, artifacts / "overview_path_prefix.png")
        # the selection lives in the iframe's hash: a reload keeps it
        assert "run=resnet50" in frame.url
        page.reload()
        frame = plugin_frame(page)
        frame.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=60_000)
        assert frame.locator('[data-testid="run-select"]').input_value() == RUN
        # a broken file is a per-file error card; the rest of the UI keeps working
        frame.select_option('[data-testid="run-select"]', "broken")
        card = frame.locator('[data-testid="error-card"]').first
        card.wait_for(timeout=60_000)
        assert "0 bytes" in card.inner_text()
        assert frame.locator('[data-testid="run-select"]').is_visible()
        page.close()


class _StrippingProxy(http.server.BaseHTTPRequestHandler):
    """Forwards ``/user/me/proxy/6006/<rest>`` to TensorBoard's ``/<rest>`` (jupyter-server-proxy style)."""

    prefix = "/user/me/proxy/6006"
    upstream = ""

    def do_GET(self):
        if not self.path.startswith(self.prefix + "/"):
            self.send_error(404, "outside the proxied prefix")
            return
        try:
            with urllib.request.urlopen(self.upstream + self.path[len(self.prefix) :], timeout=60) as r:
                body, status, headers = r.read(), r.status, r.headers
        except urllib.error.HTTPError as e:
            body, status, headers = e.read(), e.code, e.headers
        self.send_response(status)
        for k, v in headers.items():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_overview_behind_reverse_proxy(browser, logdir, tmp_path, artifacts, expected_utilization):
    with tensorboard(logdir, tmp_path) as base:
        handler = type("Proxy", (_StrippingProxy,), {"upstream": base})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_port}{_StrippingProxy.prefix}"
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open_overview(page, url, expected_utilization, artifacts / "overview_reverse_proxy.png")
            page.close()
        finally:
            server.shutdown()


def test_pytorch2_runtime_is_shown(logdir, tmp_path):
    """The HTTP route itself (no browser): a PyTorch 2.x trace has non-zero Runtime."""
    with tensorboard(logdir, tmp_path) as base:
        url = base + "/data/plugin/kinetoscope/overview?run=h100&worker=bert&span=1"
        for _ in range(300):
            doc = json.load(urllib.request.urlopen(url))
            if doc["state"] == "ready":
                break
            __import__("time").sleep(0.2)
        assert doc["state"] == "ready"
        assert doc["average"]["runtime_us"] > 100
