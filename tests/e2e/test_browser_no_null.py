"""No ``null``, ``NaN``, ``undefined``, ``Infinity`` or ``[object Object]`` on the screen (
"Acceptance"): every tab of every trace file (and every memory artifact) of every sample, in the real
TensorBoard and headless Debian chromium.

The new-user checks add, on every view: no name with an object address (`` at 0x…``), no action link
taller than one line, no table cell whose content runs past its right edge into its neighbour (at the
1,500 px the issue was measured at).

Layout checks add, on every one of those views (:data:`_LAYOUT_JS`): no time axis runs
negative (each chart's time axes, as ECharts laid them out, from the ``data-time-axes`` test hook of
charts/timeAxes.ts; the Trace view's window from its test hook), no table row is taller than its
content needs because a name wrapped (a name cell spans one line; a row more than 2.5× the table's
median height holds multi-line content: a stack, a code block), and no warning banner is about events
without a duration or Composer's own categories (those are "About this file" notes).

The logdir is a temporary copy of ../shared/samples (under ``shared/``) and of the repo's samples/
(under ``repo/``): the confinement rules refuse symlinks to elsewhere. One TensorBoard, one browser
page; each (file, tab) is opened through the iframe's hash (``#run=&worker=&span=&view=``, as a
reload does), waited on until no request is in flight and no loading line is shown, and its visible
text (``innerText``, plus every table cell's text) is searched. Every failure is listed in one
assertion message, with the words around each hit.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, plugin_frame

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

BAD = re.compile(r"\b(null|NaN|undefined|Infinity)\b|\[object Object\]")
# a Python object's address left in a name ("<built-in method softmax of Tensor object at 0x7cbd…>")
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# Lines that say a view is still on its way (frontend/src: RemoteStatus, FileProgress, TraceView …)
LOADING = re.compile(r"Loading\b|Parsing\b|loading…")
FILE_TABS = ("overview", "operator", "kernel", "module", "trace", "memory", "insights", "diff")
RUN_TABS = ("distributed", "diff")  # views of a run, not of a file: visited with the run's first file
FILE_TABS = tuple(t for t in FILE_TABS if t not in RUN_TABS)
# Other groupings of the tables (their columns differ: op, grid, block, shapes, stacks), with the
# run's first file: {view: (select test id, values)}
GROUPINGS = {
    "operator": ("op-group-by", ("input_shape", "call_stack")),
    "kernel": ("kernel-group-by", ("kernel_op_config",)),
}
SETTLE_QUIET_S = 0.5  # no request in flight and no loading line for this long: the tab has rendered
TAB_TIMEOUT_S = 60.0

# Hits known on the code before their fixes, each with the item that removes it: (pattern over
# the failure line, item). Known hits alone make the test xfail; a known pattern that no longer matches
# anything fails the test (strict), so the entry is removed when the fix is merged.
KNOWN: list[tuple[re.Pattern, str]] = []  # none left: item 15 ("Distributed: null, rank 0 of null") is fixed


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy every file (writable copies: the samples are read-only) keeping relative paths."""
    for root, _, files in os.walk(src):
        for name in files:
            rel = Path(root, name).relative_to(src)
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(root, name), dst / rel)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("all_samples")
    _copy_tree(SAMPLES, root / "shared")
    _copy_tree(REPO / "samples", root / "repo")
    return root


def _wait_all_loaded(base: str, timeout: float = 300.0) -> dict:
    """The ``runs`` document once no file is queued or loading (every file ready or failed)."""
    deadline = time.time() + timeout
    while True:
        doc = api(base, "runs")
        spans = [s for r in doc["runs"] for w in r["workers"] for s in w["spans"]]
        arts = [a for r in doc["runs"] for a in r.get("artifacts", [])]
        if spans and all(s["state"] in ("ready", "error") for s in spans):
            return doc
        if time.time() > deadline:
            pending = [s["path"] for s in spans if s["state"] not in ("ready", "error")]
            raise TimeoutError(f"files still loading after {timeout} s: {pending[:10]} ({len(arts)} artifacts)")
        time.sleep(0.5)


class _InFlight:
    """Counts the page's requests in flight (fetches of plugin routes included)."""

    def __init__(self, page) -> None:
        self.n = 0
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, _req) -> None:
        self.n += 1

    def _end(self, _req) -> None:
        self.n = max(0, self.n - 1)


_TEXT_JS = """() => {
  const cells = [...document.querySelectorAll('td, th')].map((c) => c.innerText);
  return [document.body.innerText, cells.join('\\n')].join('\\n');
}"""


# Layout problems of the view on screen: one line each
_LAYOUT_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('[data-time-axes]')) {
    for (const [lo, hi] of JSON.parse(el.dataset.timeAxes || '[]')) {
      if (lo < -1e-9) out.push(`negative time axis ${lo}…${hi} on ${el.getAttribute('aria-label') || el.dataset.testid}`);
    }
  }
  const tl = window.__kinetoscopeTimeline;
  const win = tl && tl.getWindow ? tl.getWindow() : null;
  if (win && win.start < -1e-6) out.push(`Trace window starts at ${win.start} µs`);
  for (const name of document.querySelectorAll('td .elided, td .cell-name')) {
    if (!name.offsetParent) continue;
    const lh = parseFloat(getComputedStyle(name).lineHeight) || 1.4 * parseFloat(getComputedStyle(name).fontSize);
    if (name.getBoundingClientRect().height > 1.6 * lh) out.push(`name on ${Math.round(name.getBoundingClientRect().height / lh)} lines: ${name.textContent.slice(0, 80)}`);
  }
  for (const table of document.querySelectorAll('table')) {
    const rows = [...table.querySelectorAll(':scope > tbody > tr')].filter((r) => r.offsetParent);
    if (rows.length < 3) continue;
    const hs = rows.map((r) => r.getBoundingClientRect().height).sort((a, b) => a - b);
    const median = hs[Math.floor(hs.length / 2)];
    for (const r of rows) {
      const h = r.getBoundingClientRect().height;
      if (h > 2.5 * median && !r.querySelector('pre, .cell-stack, .cell-code, ul, table, details[open], canvas, .chart')) {
        out.push(`table row ${Math.round(h)} px against a median of ${Math.round(median)} px: ${r.innerText.slice(0, 80).replace(/\\s+/g, ' ')}`);
      }
    }
  }
  // issue "what a new user trips over": action links on one line; no table cell whose content runs
  // past its right edge into its neighbour (content a cell clips, or scrolls, is not counted)
  for (const a of document.querySelectorAll('.link-button, td a')) {
    if (!a.offsetParent) continue;
    const cs = getComputedStyle(a);
    const lh = parseFloat(cs.lineHeight) || 1.4 * parseFloat(cs.fontSize);
    if (a.getBoundingClientRect().height > 1.6 * lh) out.push(`action link on ${Math.round(a.getBoundingClientRect().height / lh)} lines: ${a.innerText.slice(0, 60)}`);
  }
  for (const td of document.querySelectorAll('td')) {
    if (!td.offsetParent || getComputedStyle(td).overflowX !== 'visible') continue;
    if (td.scrollWidth > td.clientWidth + 1) out.push(`cell content runs ${td.scrollWidth - td.clientWidth} px into the next cell: ${td.innerText.slice(0, 80).replace(/\\s+/g, ' ')}`);
  }
  for (const w of document.querySelectorAll('[data-testid="warnings"]')) {
    if (/no duration|without a duration|unrecognized categor/i.test(w.textContent)) out.push(`warning banner: ${w.textContent.slice(0, 120)}`);
  }
  return out;
}"""


def _settle(page, frame, inflight: _InFlight) -> tuple[str, bool]:
    """Wait until the view is quiet; returns (its visible text, whether it settled in time)."""
    deadline = time.time() + TAB_TIMEOUT_S
    quiet_since = None
    text = ""
    while time.time() < deadline:
        page.wait_for_timeout(100)
        try:
            text = frame.evaluate(_TEXT_JS)
        except Exception:  # the frame is re-rendering
            quiet_since = None
            continue
        if inflight.n == 0 and not LOADING.search(text):
            quiet_since = quiet_since or time.time()
            if time.time() - quiet_since >= SETTLE_QUIET_S:
                return text, True
        else:
            quiet_since = None
    return text, False


def _main(text: str) -> str:
    """The start of what the view shows below the toolbar (for the log of visited views)."""
    for tab in ("\nDiff\n",):
        if tab in text:
            text = text.split(tab, 1)[1]
    return text[:400]


def _hits(text: str) -> list[str]:
    """Each bad word with up to 40 characters around it, on one line."""
    out = []
    for m in (*BAD.finditer(text), *ADDRESS.finditer(text)):
        context = text[max(0, m.start() - 40) : m.end() + 40].replace("\n", " ⏎ ")
        out.append(f"{m.group(0)!r} in …{context}…")
    return sorted(set(out))


def _go(frame, **params) -> None:
    frame.evaluate("(h) => { location.hash = h; }", "#" + urllib.parse.urlencode(params))


def test_no_null_on_any_tab_of_any_sample(browser, logdir, tmp_path, artifacts):
    failures: list[str] = []
    visited: list[str] = []
    with tensorboard(logdir, tmp_path) as base:
        runs = _wait_all_loaded(base)["runs"]
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1000}))
        inflight = _InFlight(page)
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)

        def check(where: str, view: str) -> None:
            text, settled = _settle(page, frame, inflight)
            visited.append(f"{where} [{view}] {len(text)} chars: {_main(text)!r}")
            if not settled:
                failures.append(
                    f"{where} [{view}]: did not finish loading in {TAB_TIMEOUT_S:.0f} s (shows: {_main(text)[:200]!r})"
                )
            for hit in _hits(text):
                failures.append(f"{where} [{view}]: {hit}")
            layout = None
            for _ in range(3):
                try:
                    layout = frame.evaluate(_LAYOUT_JS)
                    break
                except Exception:  # the frame re-rendered under us: read again
                    page.wait_for_timeout(200)
            if layout is None:
                layout = ["layout could not be read"]
            for problem in layout:
                failures.append(f"{where} [{view}]: {problem}")

        def visit(where: str, view: str, groupings: bool = False, **sel) -> None:
            # a view absent from the tabs (no Module tab without module information…) is still what a
            # user sees who switches files while on it: the hash shows it, and it must read well too
            _go(frame, **sel, **({"view": view} if view != "overview" else {}))
            check(where, view)
            if groupings and view in GROUPINGS:
                test_id, values = GROUPINGS[view]
                select = f'[data-testid="{test_id}"]'
                if frame.locator(select).count() and frame.locator(select).is_enabled():
                    for value in values:
                        frame.select_option(select, value)
                        check(where, f"{view} by {value}")

        for run in runs:
            name = run["name"]
            files = [(w["worker"], s["span"], s["path"], s["state"]) for w in run["workers"] for s in w["spans"]]
            for i, (worker, span, path, state) in enumerate(files):
                views = FILE_TABS + (RUN_TABS if i == 0 else ())
                if state != "ready":
                    views = ("overview",)
                for view in views:
                    visit(path, view, groupings=i == 0, run=name, worker=worker, span=span)
            if run.get("artifacts"):
                sel = {"run": name}
                if files:
                    sel.update(worker=files[0][0], span=files[0][1])
                visit(f"{name} (artifacts)", "snapshots", **sel)
                options = frame.eval_on_selector_all(
                    '[data-testid="artifact-select"] option', "os => os.map(o => o.value)"
                )
                for value in options[1:]:
                    frame.select_option('[data-testid="artifact-select"]', value)
                    check(value, "snapshots")
        page.screenshot(path=str(artifacts / "no_null_last_view.png"), full_page=True)
        page.close()
    (artifacts / "no_null_visited.txt").write_text("\n".join(visited) + "\n")
    assert len(visited) > 100, visited
    unknown = [f for f in failures if not any(p.search(f) for p, _ in KNOWN)]
    assert not unknown, f"{len(unknown)} problems over {len(visited)} views:\n  " + "\n  ".join(unknown)
    gone = [item for p, item in KNOWN if not any(p.search(f) for f in failures)]
    assert not gone, f"fixed ({', '.join(gone)}): remove its entry from KNOWN"
    if failures:
        pytest.xfail(
            f"known {', '.join(sorted({i for _, i in KNOWN}))}: {len(failures)} known hits:\n  " + "\n  ".join(failures)
        )
