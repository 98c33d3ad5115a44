"""A real ``tensorboard --logdir s3://bucket/`` (moto), ``gs://bucket/`` (gcp-storage-emulator) and
``az://container/`` (Azurite), each emulator on loopback, in headless Debian chromium: the Overview
shows the same GPU Utilization as the local analysis, and a trace uploaded while TensorBoard runs
appears in the run selector after a rescan (``--reload_interval 2``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import SAMPLES

from tb_plugin.registry.runs import RunRegistry
from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import plugin_frame

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from emulators import Emulator

pytestmark = [pytest.mark.corpus, pytest.mark.emulator]  # the sample corpus (docs/TESTING.md), storage emulators

V100 = SAMPLES / "kineto" / "resnet50_num_workers_0"
WORKER, SPAN = "worker0", "1"


def _expected_utilization() -> str:
    reg = RunRegistry(str(V100.parent))
    reg.scan()
    st = reg.load(reg.find(V100.name, WORKER, SPAN))
    return f"{st.overview['gpus'][0]['utilization_pct']:.2f} %"


@pytest.mark.parametrize("backend", ["s3", "gcs", "azure"])
def test_overview_from_bucket_and_new_trace_appears(backend, browser, tmp_path, artifacts):
    expected = _expected_utilization()
    emu = Emulator(backend).start()
    try:
        emu.make_bucket()
        emu.upload(V100, "v100")
        env = dict(emu.env, AWS_MAX_ATTEMPTS="2")
        with tensorboard(emu.url() + "/", tmp_path, env=env, extra_args=["--load_fast=false"]) as base:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(base + "/#kinetoscope")
            frame = plugin_frame(page)
            frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
            frame.select_option('[data-testid="run-select"]', "v100")
            frame.select_option('[data-testid="worker-select"]', WORKER)
            frame.select_option('[data-testid="span-select"]', SPAN)
            util = frame.locator('[data-testid="gpu-utilization"]').first
            util.wait_for(timeout=90_000)
            assert util.inner_text().strip() == expected
            page.screenshot(path=str(artifacts / f"overview_{backend}.png"), full_page=True)

            src = next(V100.glob("*.gz"))
            emu.fs().put_file(str(src), f"{emu.bucket}/uploaded_later/{src.name}")
            options = frame.locator('[data-testid="run-select"] option[value="uploaded_later"]')
            options.wait_for(state="attached", timeout=60_000)
            frame.select_option('[data-testid="run-select"]', "uploaded_later")
            frame.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=90_000)
    finally:
        emu.kill()
