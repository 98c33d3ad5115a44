"""The ``distributed`` answer holds its documented 2 MB bound at 256 ranks × 400 steps: per-rank step
rows and critical-path details are paged (``?rank=``, ``offset``, ``limit``; ``?step=``), each answer
says what it left out (``steps_total``, ``critical_path_total``, ``by_rank_other``, ``detailed``), and
paging returns the rest.

The scale input is the real 8-rank DLRM view (its rows and path, as the registry caches it) grown to
256 ranks (rank ``r`` = DLRM rank ``r % 8``) with 400 steps each and a path crossing every rank in every
step: the shape the reviewer measured at 18.8 MB, without parsing 256 × 400 steps on a CI machine.
"""

from __future__ import annotations

import copy
import json
import shutil

import pytest
from conftest import loaded_registry, sample

from tb_plugin import api
from tb_plugin.api.distributed_pages import MAX_PATH_RANKS

RANKS, STEPS = 256, 400
BOUND = 2 * 1000 * 1000  # docs/http_api.md: 2 MB


def _size(doc: dict) -> int:
    return len(json.dumps(doc).encode())


def _scaled(doc: dict) -> dict:
    """``doc`` (8 ranks, one step) grown to RANKS ranks × STEPS steps."""
    view = doc["view"]
    base = {r["rank"]: r for r in view["ranks"]}
    rows = []
    for r in range(RANKS):
        row = copy.deepcopy(base[r % 8])
        (step,) = row["steps"]
        row.update(rank=r, worker=f"worker{r}", steps=[dict(step, step=str(10 + k)) for k in range(STEPS)])
        rows.append(row)
    (path,) = view["critical_path"]
    share = path["length_us"] / RANKS
    steps = [
        dict(copy.deepcopy(path), step=str(10 + k), by_rank=[{"rank": r, "us": share} for r in range(RANKS)])
        for k in range(STEPS)
    ]
    arrivals = [dict(a, rank=r) for r in range(RANKS) for a in view["arrivals"][r % 8 : r % 8 + 1]]
    return dict(
        doc, files=RANKS, ranks_loaded=RANKS, view=dict(view, ranks=rows, critical_path=steps, arrivals=arrivals)
    )


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dlrm")
    shutil.copytree(sample("dlrm_8ranks"), tmp / "job")
    reg = loaded_registry(tmp)
    whole = _scaled(reg.distributed("job", "1"))
    reg.distributed = lambda run, span="1": whole  # the registry's cached view, at scale
    return reg, whole


def _get(reg, **q) -> dict:
    code, doc = api.distributed(reg, {"run": "job", **{k: str(v) for k, v in q.items()}})
    assert code == 200
    return doc


@pytest.mark.corpus
def test_answer_is_bounded_and_says_what_it_left_out(scaled):
    reg, whole = scaled
    assert _size(whole) > 9 * BOUND  # what the route answered before: ~19 MB
    doc = _get(reg)
    assert _size(doc) <= BOUND, _size(doc)
    view = doc["view"]
    assert len(view["ranks"]) == RANKS and all("steps" not in r and r["steps_total"] == STEPS for r in view["ranks"])
    # the per-step means stay (the rank table and charts draw them)
    assert view["ranks"][3]["total_us"] == whole["view"]["ranks"][3]["total_us"]
    assert view["rank_steps"] is None and view["critical_path_total"] == STEPS
    path = view["critical_path"]
    assert len(path) == STEPS and [s["detailed"] for s in path] == [True] + [False] * (STEPS - 1)
    assert "segments" in path[0] and "segments" not in path[1] and "top_items" not in path[1]
    for s in path:  # the ranks of most time, the rest summed: Σ by_rank + other = the step's length
        assert len(s["by_rank"]) == MAX_PATH_RANKS and s["by_rank_other"]["ranks"] == RANKS - MAX_PATH_RANKS
        assert sum(r["us"] for r in s["by_rank"]) + s["by_rank_other"]["us"] == pytest.approx(s["length_us"])


@pytest.mark.corpus
def test_paging_returns_the_rest(scaled):
    reg, whole = scaled
    # one step's detail on request, as the whole view has it
    doc = _get(reg, step=209)
    assert _size(doc) <= BOUND
    got = [s for s in doc["view"]["critical_path"] if s["detailed"]]
    want = next(s for s in whole["view"]["critical_path"] if s["step"] == "209")
    assert [s["step"] for s in got] == ["209"]
    for key in ("segments", "top_items", "collectives", "length_us", "by_category"):
        assert got[0][key] == want[key]
    # a rank's per-step rows, page by page, are all of them in order
    rows, offset = [], 0
    while True:
        page = _get(reg, rank=77, offset=offset, limit=150)
        assert _size(page) <= BOUND
        part = page["view"]["rank_steps"]
        assert part["rank"] == 77 and part["found"] and part["total"] == STEPS and part["offset"] == offset
        if not part["rows"]:
            break
        rows += part["rows"]
        offset += len(part["rows"])
    assert rows == whole["view"]["ranks"][77]["steps"]
    assert _get(reg, rank=999)["view"]["rank_steps"] == {
        "rank": 999,
        "found": False,
        "total": 0,
        "offset": 0,
        "rows": [],
    }


@pytest.mark.corpus
def test_bad_paging_arguments_are_400(scaled):
    reg, _ = scaled
    for q in ({"rank": "x"}, {"offset": "-1"}, {"limit": "0"}, {"limit": "100000"}):
        code, doc = api.distributed(reg, {"run": "job", **q})
        assert code == 400 and "error" in doc
