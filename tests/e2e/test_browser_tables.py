"""Drive the real TensorBoard in headless Debian chromium: the Operator and GPU Kernel tables.

The Operator view's default sort, server-side search, row -> call stack -> frame expansion, and "go to
source", whose message must reach the top TensorBoard page (``window.parent.parent`` of the plugin
iframe) as ``{filename, line: line - 1}``, with the values the ``operator_stacks`` route returns.
"""

from __future__ import annotations

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import build_logdir, tensorboard
from tests.e2e.helpers import api, open_plugin, open_tab, select_file

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

RUN, WORKER, SPAN = "resnet50", "worker0", "1"
CAPTURE = "window.__posted=[];window.addEventListener('message',e=>window.__posted.push(e.data))"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return build_logdir(tmp_path_factory.mktemp("logdir"), SAMPLES)


def _first_cell(frame, table: str) -> str:
    cell = frame.locator(f'[data-testid="{table}"] [data-testid="table-row"] td[data-col="name"]').first
    cell.wait_for(timeout=90_000)
    return cell.inner_text().strip()


def test_operator_and_kernel_views(browser, logdir, tmp_path, artifacts):
    with tensorboard(logdir, tmp_path) as base:
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.add_init_script(CAPTURE)
        frame = open_plugin(page, base)
        select_file(frame, RUN, WORKER, SPAN)
        frame.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=90_000)

        # Operator view: default sort is device self time
        frame.click('[data-testid="tab-operator"]')
        assert _first_cell(frame, "operator-table") == "aten::cudnn_convolution_backward_weight"
        assert frame.locator('[data-testid="operator-table"] th.sorted').get_attribute("data-col") == "device_self_us"
        assert "view=operator" in frame.url
        frame.locator('[data-testid="donut-device-self"] canvas').first.wait_for(timeout=30_000)
        page.screenshot(path=str(artifacts / "operator_view.png"), full_page=True)

        # server-side search, then the aten::conv2d row's call stacks
        frame.fill('[data-testid="op-search"]', "conv2d")
        row = frame.locator(
            '[data-testid="table-row"]', has=frame.locator('td[data-col="name"]', has_text="aten::conv2d")
        ).first
        frame.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=table-row] td[data-col=name]')]"
            ".every(td => td.textContent.toLowerCase().includes('conv2d'))",
            timeout=30_000,
        )
        row.wait_for(timeout=30_000)
        key = row.get_attribute("data-key")
        csv = frame.locator('[data-testid="csv-link"]').get_attribute("href")
        assert csv.startswith("operators.csv?") and "search=conv2d" in csv and "offset" not in csv
        row.locator('[data-testid="op-expand"]').click()

        stacks = api(base, "operator_stacks", run=RUN, worker=WORKER, span=SPAN, key=key, group_by="operator")["stacks"]
        index = next(i for i, s in enumerate(stacks) if s["frames"])
        target = next(f for f in stacks[index]["frames"] if f["file"] and f["line"] is not None)

        stack = frame.locator('[data-testid="stack"]').nth(index)
        stack.wait_for(timeout=30_000)
        stack.locator('[data-testid="stack-expand"]').click()
        stack.locator('[data-testid="frame"]').first.wait_for(timeout=30_000)
        assert stack.locator('[data-testid="frame"]').count() == len(stacks[index]["frames"])
        stack.locator('[data-testid="goto-source"]').first.click()
        frame.locator('[data-testid="toast"]').wait_for(timeout=10_000)
        assert f"{target['file']}:{target['line']}" in frame.locator('[data-testid="toast"]').inner_text()
        page.wait_for_function("() => window.__posted.length > 0", timeout=10_000)
        posted = page.evaluate("window.__posted")
        assert {"filename": target["file"], "line": target["line"] - 1} in posted, posted
        page.screenshot(path=str(artifacts / "operator_stacks.png"), full_page=True)

        # GPU Kernel view: the top kernel by total time
        frame.click('[data-testid="tab-kernel"]')
        assert "dgrad_engine" in _first_cell(frame, "kernel-table")
        assert "view=kernel" in frame.url
        frame.locator('[data-testid="donut-tensor-core"] canvas').first.wait_for(timeout=30_000)
        page.screenshot(path=str(artifacts / "kernel_view.png"), full_page=True)

        # resnet50 has no module information: no Module tab
        assert frame.locator('[data-testid="tab-module"]').count() == 0
        page.close()


def test_module_view(browser, logdir, tmp_path, artifacts):
    """The BERT trace has modules: tree table and flame graph show the same root and numbers."""
    with tensorboard(logdir, tmp_path) as base:
        modules = api(base, "modules", run="h100", worker="bert", span="1")["modules"]
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        frame = open_plugin(page, base, "h100")
        open_tab(frame, "tab-module", 90_000)
        first = frame.locator('[data-testid="module-row"]').first
        first.wait_for(timeout=30_000)
        assert modules[0]["name"] in first.inner_text()
        block = frame.locator('[data-testid="flame-block"][data-id="0"]')
        assert block.inner_text().strip() == modules[0]["name"]
        frame.locator('[data-testid="flame-block"][data-id="0/0"]').click()
        assert "focused" in (frame.locator('[data-testid="module-row"][data-id="0/0"]').get_attribute("class") or "")
        page.screenshot(path=str(artifacts / "module_view.png"), full_page=True)
        page.close()
