"""Odd file names, downloads and framing in headless Debian chromium against a real TensorBoard.

* A run whose trace file is named ``工作-😀.pt.trace.json``: the plugin loads inside TensorBoard (with
  its anti-framing headers on every answer), "Download trace" saves the file under its own name with
  its exact bytes, and "Open in Perfetto" fetches ``trace_file`` (200) and hands the bytes over
  (ui.perfetto.dev is played by a local stub page, as in test_browser_timeline.py) with no page error.
* A page of another origin cannot frame a plugin route (X-Frame-Options / frame-ancestors), while
  the same page can frame a TensorBoard route without those headers (the control).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.request
from pathlib import Path

from synth.traces import SynthSpec, synthesize

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, plugin_frame, select_file
from tests.e2e.test_browser_timeline import HOOK, PERFETTO_STUB

NAME = "工作-😀.pt.trace.json"
WORKER = "工作-😀"
SEL = {"run": "run", "worker": WORKER, "span": "1"}
PLUGIN = "/data/plugin/kinetoscope"


def _logdir(root: Path) -> bytes:
    (root / "run").mkdir(parents=True)
    raw = json.dumps(synthesize(SynthSpec(steps=2))).encode()
    (root / "run" / NAME).write_bytes(raw)
    return raw


def _bundle_reads_filename_star(base: str) -> bool:
    """Whether the served bundle parses RFC 5987 ``filename*`` (frontend/src/timeline/api.ts)."""
    with urllib.request.urlopen(f"{base}{PLUGIN}/index.js", timeout=30) as r:
        return b"filename\\*=UTF-8" in r.read()


def test_unicode_trace_name_download_and_perfetto(browser, tmp_path):
    raw = _logdir(tmp_path / "logdir")
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(tmp_path / "logdir", cache) as base:
        api(base, "timeline_meta", **SEL)
        context = enable_test_hooks(
            browser.new_context(viewport={"width": 1500, "height": 1100}, accept_downloads=True)
        )
        context.route(
            "https://ui.perfetto.dev/**",
            lambda route: route.fulfill(status=200, content_type="text/html", body=PERFETTO_STUB),
        )
        errors: list[str] = []
        plugin_answers: list[tuple[str, int, dict]] = []
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "response", lambda r: plugin_answers.append((r.url, r.status, r.all_headers())) if PLUGIN in r.url else None
        )
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)  # the plugin still loads inside TensorBoard's page
        select_file(frame, **SEL)
        frame.click('[data-testid="trace-tab"]')
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)

        # "Download trace": saved under its own name (from filename*), the exact bytes
        with page.expect_download(timeout=30_000) as info:
            frame.click('[data-testid="trace-download"]')
        download = info.value
        assert download.failure() is None
        assert download.suggested_filename == NAME
        assert Path(download.path()).read_bytes() == raw

        # "Open in Perfetto": trace_file fetched with 200, the bytes handed over, no error shown
        with context.expect_page() as popup_info:
            frame.click('[data-testid="open-perfetto"]')
        popup = popup_info.value
        popup.wait_for_function("() => window.received !== null", timeout=30_000)
        got = popup.evaluate("window.received")
        assert got["bytes"] == len(raw) and got["head"] == list(raw[:2])
        assert got["title"] == f"run / {WORKER} / 1"
        # the rebuilt bundle reads filename*; the one before it, the ASCII fallback of the header
        assert got["fileName"] == (NAME if _bundle_reads_filename_star(base) else "__-_.pt.trace.json")
        frame.wait_for_function("() => !document.body.innerText.includes('Opening Perfetto')", timeout=10_000)
        assert "HTTP " not in frame.inner_text("body") and "did not answer" not in frame.inner_text("body")

        fetched = [(u, s) for u, s, _ in plugin_answers if "/trace_file?" in u]
        assert fetched and all(s == 200 for _, s in fetched), fetched
        assert errors == [], errors
        # every plugin answer the UI received carried the anti-framing headers
        assert len(plugin_answers) > 5
        for url, _, headers in plugin_answers:
            assert headers.get("x-frame-options") == "SAMEORIGIN", url
            assert headers.get("content-security-policy") == "frame-ancestors 'self'", url
        context.close()


EVIL = """<!doctype html><title>evil</title>
<iframe id="plugin" src="{base}/data/plugin/kinetoscope/runs"></iframe>
<iframe id="control" src="{base}/data/plugins_listing"></iframe>"""


@contextlib.contextmanager
def other_origin(html: str):
    """A page served from another loopback port (another origin; loopback, so Chrome's private
    network rules do not interfere); yields its URL."""
    body = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_other_origins_cannot_frame_plugin_routes(browser, tmp_path):
    _logdir(tmp_path / "logdir")
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(tmp_path / "logdir", cache) as base, other_origin(EVIL.format(base=base)) as evil:
        assert not evil.startswith(base)
        page = browser.new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(evil, wait_until="load")
        # the control: a TensorBoard route (without X-Frame-Options) is framed and shows its JSON
        assert "kinetoscope" in page.frame_locator("#control").locator("body").inner_text(timeout=10_000)
        # the plugin route is refused by the browser: its JSON never reaches that frame
        child = page.query_selector("#plugin").content_frame()
        assert child is not None and not child.url.startswith(base), child.url
        assert '"runs"' not in page.frame_locator("#plugin").locator("body").inner_text(timeout=10_000)
        assert any("frame-ancestors" in m or "X-Frame-Options" in m for m in console), console
        page.close()
