"""Write the frontend's test fixtures (frontend/src/__fixtures__) from the server's real answers on the
shared samples (../shared/samples, or $KINETOSCOPE_SAMPLES) and the repo's samples/.

Each fixture is what a route of tb_plugin/api.py answers (docs/http_api.md) on a logdir this script
lays out in a temporary folder; only the absolute ``logdir`` of ``runs`` is replaced by a fixed string
and, for large tables, the page asked for is small (``limit``). Hand-written fixtures (the mixed-state
``runs.json``, ``rounding_cases.json`` and ``number_text_cases.json``) are not made here.

    python frontend/scripts/make_fixtures.py            # rewrite the fixtures
    python frontend/scripts/make_fixtures.py --check    # exit 1 and name the fixtures that are stale

tests/unit/project/test_frontend_fixtures.py runs the check.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "frontend" / "src" / "__fixtures__"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from tb_plugin import api  # noqa: E402
from tb_plugin.registry.runs import RunRegistry  # noqa: E402
from conftest import load_everything  # noqa: E402


def samples() -> Path:
    return Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))


class Evil:
    """Pickles as a call of ``posix.system``: the snapshot loader must refuse it."""

    def __reduce__(self):
        return (os.system, ("true",))


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)


def _registry(root: Path) -> RunRegistry:
    return load_everything(RunRegistry(str(root)))


def _ok(answer) -> dict:
    status, doc = answer
    if status != 200:
        raise SystemExit(f"route answered {status}: {doc}")
    return doc


def _runs(reg: RunRegistry, logdir: str) -> dict:
    return dict(reg.runs_document(), logdir=logdir)


def build(tmp: Path) -> dict[str, object]:
    """Every generated fixture: path under __fixtures__ → document."""
    s, out = samples(), {}
    # kineto ResNet-50 (tables, overview)
    kin = tmp / "kineto"
    shutil.copytree(s / "kineto" / "resnet50_num_workers_0", kin / "resnet50_num_workers_0")
    reg = _registry(kin)
    sel = {"run": "resnet50_num_workers_0", "worker": "worker0", "span": "1"}
    out["overview_resnet50.json"] = _ok(api.overview(reg, sel))
    ops = _ok(api.operators(reg, dict(sel, limit="5")))
    out["operators_resnet50.json"] = ops
    out["kernels_resnet50.json"] = _ok(api.kernels(reg, dict(sel, limit="5")))
    conv = _ok(api.operators(reg, dict(sel, search="aten::conv2d", limit="1000")))
    key = next(r["key"] for r in conv["rows"] if r["name"] == "aten::conv2d")
    out["operator_stacks_conv2d.json"] = _ok(api.operator_stacks(reg, dict(sel, key=str(key), group_by="operator")))
    # H100 BERT (modules, insights)
    h100 = tmp / "h100"
    _copy(s / "tracelens" / "h100" / "gaunernst_bert-small-uncased__1016001.json.gz", h100 / "bert" / "w.1.pt.trace.json.gz")
    reg = _registry(h100)
    bert = {"run": "bert", "worker": "w", "span": "1"}
    out["modules_bert.json"] = _ok(api.modules(reg, bert))
    out["distributed/insights_h100.json"] = _ok(api.insights(reg, bert))
    # DLRM, 8 ranks (distributed); a second file of rank 0 is span 2, the real "no view" answer
    dl = tmp / "dlrm"
    shutil.copytree(s / "dlrm_8ranks", dl / "job")
    _copy(s / "dlrm_8ranks" / "worker0_step_12.1694128201545.pt.trace.json", dl / "job" / "worker0_step_12.1694128299999.pt.trace.json")
    reg = _registry(dl)
    out["distributed/distributed_dlrm.json"] = _ok(api.distributed(reg, {"run": "job", "span": "1"}))
    out["distributed/distributed_null.json"] = _ok(api.distributed(reg, {"run": "job", "span": "2"}))
    rank0 = {"run": "job", "worker": "worker0_step_12", "span": "1"}
    out["distributed/critical_path_dlrm_rank4.json"] = _ok(api.critical_path(reg, {"run": "job", "worker": "worker4_step_12",
                                                                                     "span": "1"}))
    out["distributed/overview_dlrm_rank0.json"] = _ok(api.overview(reg, rank0))
    out["distributed/insights_dlrm_rank0.json"] = _ok(api.insights(reg, rank0))
    # a synthesized FSDP + TP job on a 2 × 2 mesh (tests/synth/comm.py fsdp_tp_docs): four process groups
    from synth.comm import fsdp_tp_docs

    for r, doc in enumerate(fsdp_tp_docs()):
        (tmp / "fsdp" / "job").mkdir(parents=True, exist_ok=True)
        (tmp / "fsdp" / "job" / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))
    out["distributed/distributed_fsdp_tp.json"] = _ok(api.distributed(_registry(tmp / "fsdp"), {"run": "job", "span": "1"}))
    # one rank of it alone (rank 3): its own groups and critical path (single_rank)
    (tmp / "fsdp1" / "one").mkdir(parents=True)
    (tmp / "fsdp1" / "one" / "rank3.pt.trace.json").write_text(json.dumps(fsdp_tp_docs()[3]))
    out["distributed/distributed_single_rank.json"] = _ok(api.distributed(_registry(tmp / "fsdp1"), {"run": "one", "span": "1"}))
    # Diff: ResNet-50 with 0 and 4 DataLoader workers, and a Composer trace
    dd = tmp / "dlog"
    shutil.copytree(s / "kineto" / "resnet50_num_workers_0", dd / "nw0")
    shutil.copytree(s / "kineto" / "resnet50_num_workers_4", dd / "nw4")
    _copy(s / "composer" / "rank_0.trace.json", dd / "composer" / "rank0.1.pt.trace.json")
    reg = _registry(dd)
    out["diff/runs.json"] = _runs(reg, "/tmp/dlog")
    q = {"base_run": "nw0", "base_worker": "worker0", "base_span": "1", "exp_run": "nw4", "exp_worker": "worker0",
         "exp_span": "1"}
    out["diff/diff_root.json"] = _ok(api.diff(reg, q))
    out["diff/diff_l1.json"] = _ok(api.diff(reg, dict(q, path=json.dumps(["ProfilerStep"]))))
    out["diff/diff_l2.json"] = _ok(api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "enumerate(DataLoader)"]))))
    out["diff/overview_composer.json"] = _ok(api.overview(reg, {"run": "composer", "worker": "rank0", "span": "1"}))
    # Memory: a trace with [memory] events, a memory-timeline export, snapshots (one refused), MemProfiler
    mem = tmp / "memfx" / "logdir"
    _copy(s / "tracelens" / "h100" / "gaunernst_bert-small-uncased__1016001.json.gz", mem / "bert" / "w.1.pt.trace.json.gz")
    _copy(s / "hta" / "memory_analysis" / "memory_timeline.raw.gz", mem / "mt" / "memory_timeline.raw.gz")
    _copy(s / "memory_snapshots" / "memory_forward_bf16_128.pickle", mem / "snap" / "memory_forward_bf16_128.pickle")
    (mem / "snap" / "evil.pickle").write_bytes(pickle.dumps(Evil(), protocol=0))
    shutil.copytree(REPO / "samples" / "fts_memprofiler", mem / "fts_memprofiler")
    reg = _registry(mem)
    out["memory/runs.json"] = _runs(reg, "/tmp/memfx/logdir")
    out["memory/memory.json"] = _ok(api.memory(reg, dict(bert, width_px="10")))
    out["memory/memory_events.json"] = _ok(api.memory_events(reg, dict(bert, device="GPU0", limit="20")))
    out["memory/memory_stats.json"] = _ok(api.memory_stats(reg, dict(bert, device="GPU0")))
    out["memory/memory_timeline_export.json"] = _ok(api.memory_timeline_export(reg, {"run": "mt", "path": "mt/memory_timeline.raw.gz"}))
    stats = "fts_memprofiler/memprofiler/rank_1_memory_stats.yaml"
    out["memory/memprofiler_stats_rank1.json"] = _ok(api.memprofiler_stats(reg, {"run": "fts_memprofiler", "path": stats}))
    snap = {"run": "snap", "path": "snap/memory_forward_bf16_128.pickle"}
    out["memory/snapshot.json"] = _ok(api.snapshot(reg, snap))
    out["memory/snapshot_error.json"] = _ok(api.snapshot(reg, {"run": "snap", "path": "snap/evil.pickle"}))
    out["memory/snapshot_timeline.json"] = _ok(api.snapshot_timeline(reg, dict(snap, device="0", width_px="300")))
    out["memory/snapshot_segments.json"] = _ok(api.snapshot_segments(reg, dict(snap, device="0")))
    allocations = _ok(api.snapshot_allocations(reg, dict(snap, device="0", limit="20")))
    out["memory/snapshot_allocations.json"] = allocations
    out["memory/snapshot_attribution.json"] = _ok(api.snapshot_attribution(reg, dict(snap, device="0")))
    out["memory/snapshot_stack.json"] = _ok(api.snapshot_stack(reg, dict(snap, stack=str(allocations["rows"][0]["stack"]))))
    return out


def text(doc) -> str:
    return json.dumps(doc, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 when stale")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("KINETOSCOPE_CACHE_DIR", os.path.join(tmp, "cache"))
        docs = build(Path(tmp))
    stale = []
    for rel, doc in docs.items():
        path = FIXTURES / rel
        new = text(doc)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != new:
                stale.append(rel)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
    if stale:
        print("stale fixtures (run python frontend/scripts/make_fixtures.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
