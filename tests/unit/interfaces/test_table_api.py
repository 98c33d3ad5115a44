"""Table routes: server-side paging, sorting, search, CSV, call stacks, and parameter validation."""

from __future__ import annotations

import csv
import io
import shutil

import pytest
from conftest import loaded_registry, sample

from tb_plugin import api

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    (root / "resnet").mkdir()
    shutil.copy(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"), root / "resnet")
    (root / "cpu").mkdir()
    shutil.copy(sample("torch213_cpu/worker0.1795324943899052487.pt.trace.json"), root / "cpu")
    return loaded_registry(root)


R = {"run": "resnet", "worker": "worker0", "span": "1"}
C = {"run": "cpu", "worker": "worker0", "span": "1"}


def test_operator_paging_and_default_sort(registry):
    code, doc = api.operators(registry, dict(R, limit="5"))
    assert code == 200 and doc["default_sort"] == "device_self_us" and doc["sort"] == "device_self_us"
    assert [r["name"] for r in doc["rows"][:3]] == [
        "aten::cudnn_convolution_backward_weight",
        "aten::cudnn_convolution_backward_input",
        "aten::cudnn_convolution",
    ]
    assert len(doc["rows"]) == 5 and doc["total_rows"] == 76
    _, page2 = api.operators(registry, dict(R, limit="5", offset="5"))
    assert page2["rows"][0]["device_self_us"] <= doc["rows"][-1]["device_self_us"]
    assert doc["top"]["device_self_us"][0] == {"name": "aten::cudnn_convolution_backward_weight", "value": 142461.0}
    assert doc["top"]["device_self_us"][-1]["name"] == "Other"


def test_cpu_only_default_sort_is_host_self(registry):
    _, doc = api.operators(registry, C)
    assert doc["default_sort"] == "host_self_us" and not doc["has_device"]
    values = [r["host_self_us"] for r in doc["rows"]]
    assert values == sorted(values, reverse=True)


def test_search_sort_ascending_and_csv(registry):
    _, doc = api.operators(registry, dict(R, search="CONV", sort="calls", order="asc"))
    assert doc["rows"] and all("conv" in r["name"].lower() for r in doc["rows"])
    assert [r["calls"] for r in doc["rows"]] == sorted(r["calls"] for r in doc["rows"])
    code, text = api.operators(registry, dict(R, search="conv", sort="calls", order="asc"), as_csv=True)
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][:2] == ["name", "calls"]
    assert [row[0] for row in table[1:]] == [r["name"] for r in doc["rows"]]


def test_call_stacks_and_frames(registry):
    _, doc = api.operators(registry, dict(R, search="aten::conv2d", limit="1"))
    code, stacks = api.operator_stacks(registry, dict(R, key=doc["rows"][0]["key"]))
    assert code == 200 and stacks["stacks"]
    with_frames = [s for s in stacks["stacks"] if s["frames"]]
    frames = with_frames[0]["frames"]
    assert frames[-1]["file"].endswith(".py") and isinstance(frames[-1]["line"], int)
    assert frames[0]["text"].startswith("resnet50_profiler_api.py(")  # outermost first
    assert sum(s["calls"] for s in stacks["stacks"]) == doc["rows"][0]["calls"]
    # the stacks split the row: each of its times is the sum over its stacks (µs)
    for k in ("host_self_us", "host_total_us", "device_self_us", "device_total_us"):
        assert sum(s[k] for s in stacks["stacks"]) == pytest.approx(doc["rows"][0][k], rel=1e-9, abs=1e-6), k
    totals = [s["device_total_us"] for s in stacks["stacks"]]
    assert totals == sorted(totals, reverse=True) and len(stacks["stacks"]) >= 2


def test_kernel_groupings_and_op_search(registry):
    _, doc = api.kernels(registry, dict(R, group_by="kernel_op_config", op_search="addmm"))
    assert doc["rows"] and all("addmm" in r["op"] for r in doc["rows"])
    assert doc["rows"][0]["grid"].startswith("[")
    _, by_name = api.kernels(registry, R)
    assert by_name["rows"][0]["total_us"] == 80756.0 and by_name["tensor_core"]["tensor_core_us"] == 0


def test_modules_route(registry):
    assert api.modules(registry, R)[1]["modules"] is None
    assert api.modules(registry, C)[1]["modules"][0]["name"] == "Sequential_0"


@pytest.mark.parametrize(
    "args",
    [
        dict(R, group_by="nope"),
        dict(R, sort="__class__"),
        dict(R, order="sideways"),
        dict(R, limit="100000"),
        dict(R, offset="-1"),
        dict(R, limit="ten"),
    ],
)
def test_bad_parameters_are_400(registry, args):
    assert api.operators(registry, args)[0] == 400


def test_unknown_file_is_404(registry):
    assert api.kernels(registry, {"run": "..", "worker": "worker0", "span": "1"})[0] == 404
    assert api.operator_stacks(registry, dict(R, key="999999"))[0] == 404
