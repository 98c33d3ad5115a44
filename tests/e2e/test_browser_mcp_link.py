"""The ``link`` of ``kinetoscope mcp``'s answers opens the same view in the tab: a real TensorBoard on
samples/, headless Debian chromium at the link of a top_operators answer for a worker that is not the
run's first, and of an insights answer; and through ``kinetoscope serve`` (``--ui-url`` its root)."""

from __future__ import annotations

import pytest
from conftest import REPO

from tb_plugin.interfaces.mcp_tools import Tools
from tb_plugin.registry.runs import RunRegistry
from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import wait_all_ready
from tests.e2e.test_browser_serve import serve


@pytest.fixture
def registry():
    """A started RunRegistry over samples/, as ``kinetoscope mcp`` answers from."""
    registry = RunRegistry(str(REPO / "samples"))
    registry.start()
    yield registry
    registry.stop()


def open_link(browser, link: str, testid: str):
    """A new page at an answer's ``link``, once ``[data-testid=testid]`` shows."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(link)
    page.locator(f'[data-testid="{testid}"]').wait_for(timeout=60_000)
    return page


def test_answer_links_open_the_view_and_file(browser, tmp_path, registry):
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(REPO / "samples", cache) as base:
        wait_all_ready(base, "synthetic_ddp", 2)
        tools = Tools(registry, ui_url=base + "/data/plugin_entry.html?name=kinetoscope")
        ops = tools.top_operators("synthetic_ddp", worker="rank1", limit=3)
        page = open_link(browser, ops["link"], "operator-view")
        assert page.locator('[data-testid="run-select"]').input_value() == "synthetic_ddp"
        assert page.locator('[data-testid="worker-select"]').input_value() == "rank1"
        assert page.locator('[data-testid="tab-operator"]').get_attribute("aria-selected") == "true"
        # the table shows the answer's top operator (same sort: device self time)
        page.get_by_text(ops["rows"][0]["name"], exact=True).first.wait_for(timeout=60_000)
        ins = tools.insights("synthetic_resnet")
        page.goto(ins["link"])
        page.reload()  # a new hash on the same page: reloaded as an agent's click would open it
        page.locator('[data-testid="insights-page"]').wait_for(timeout=60_000)
        assert page.locator('[data-testid="run-select"]').input_value() == "synthetic_resnet"
        page.close()


def test_links_open_the_view_through_kinetoscope_serve(browser, tmp_path, registry):
    cache = tmp_path / "cache"
    cache.mkdir()
    with serve(f"kinetoscope serve {REPO / 'samples'} --port 6006", tmp_path, cache) as (base, _):
        tools = Tools(registry, ui_url=base + "/")
        kernels = tools.top_kernels("synthetic_resnet", group_by="op", limit=1)
        page = open_link(browser, kernels["link"], "tab-kernel")
        assert page.locator('[data-testid="tab-kernel"]').get_attribute("aria-selected") == "true"
        assert page.locator('[data-testid="run-select"]').input_value() == "synthetic_resnet"
        page.close()
