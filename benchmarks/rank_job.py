"""Build an N-rank job out of the 8 real DLRM ranks (for tests/test_executor_dask.py and
benchmarks/bench_executor.py).

Each DLRM rank file goes through ``../shared/tools/scale_trace.py --copies C`` once; rank ``r`` of
the job is the scaled file of DLRM rank ``r % 8``, written as ``worker{r}_step_12.<ts>.pt.trace.json``
with its ``distributedInfo`` patched to ``rank = r`` and ``world_size = N``, so the file name and the
trace agree on the rank. Rank ``r`` and ``r + 8`` then carry the same kernels: the job is structurally
real (every rank has the same collectives in the same order) but its timings repeat every 8 ranks.

With ``groups=True`` every NCCL kernel also carries process-group args, so the groups and the
cross-rank critical path are exercised at scale: all-reduce kernels run on group ``"0"``
(``default_pg``, every rank of the job) and send/recv (all-to-all) kernels on the 8-rank group of
their block (rank ``r`` is in group ``str(1 + r // 8)``, ``mesh_ep``, ranks ``8·(r // 8)…+7``); each
rank's ``distributedInfo.pg_config`` lists its two groups.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
SCALE_TRACE = os.path.join(SHARED, "tools", "scale_trace.py")
DLRM = os.path.join(SHARED, "samples", "dlrm_8ranks")
MARKER = '"traceEvents": ['


def build_rank_job(out: str, ranks: int = 64, copies: int = 1, groups: bool = False) -> list[str]:
    """Write the job into ``out`` (created); returns the file paths, rank order."""
    sources = sorted(glob.glob(os.path.join(DLRM, "*.pt.trace.json")))
    if len(sources) != 8:
        raise FileNotFoundError(f"expected the 8 DLRM ranks in {DLRM}")
    os.makedirs(out, exist_ok=True)
    scaled = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, src in enumerate(sources):
            dst = os.path.join(tmp, f"rank{i}.json")
            subprocess.run([sys.executable, SCALE_TRACE, src, dst, "--copies", str(copies)], check=True)
            with open(dst, encoding="utf-8") as f:
                scaled.append(f.read())
    paths = []
    for r in range(ranks):
        text = scaled[r % 8]
        cut = text.index(MARKER)  # scale_trace writes the head keys, then the events
        head = json.loads(text[:cut].rstrip().rstrip(",") + "}")
        head["distributedInfo"] = dict(head.get("distributedInfo") or {}, rank=r, world_size=ranks)
        body = text[cut:]
        if groups:
            head["distributedInfo"]["pg_config"] = [dict(g, ranks=list(g["ranks"])) for g in _groups(r, ranks)]
            body = _with_groups(body, r, ranks)
        path = os.path.join(out, f"worker{r}_step_12.{1694128201545 + r}.pt.trace.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(head)[:-1] + ", " + body)
        paths.append(path)
    return paths


BLOCK = 8  # ranks per send/recv group with groups=True


def _groups(rank: int, ranks: int) -> list[dict]:
    """The two process groups of ``rank`` (``pg_config`` entries: ``pg_name``, ``pg_desc``, ``ranks``,
    ``pg_size``): ``"0"`` over the world, and its block's send/recv group."""
    lo = rank // BLOCK * BLOCK
    block = list(range(lo, min(lo + BLOCK, ranks)))
    return [{"pg_name": "0", "pg_desc": "default_pg", "ranks": list(range(ranks)), "pg_size": ranks},
            {"pg_name": str(1 + rank // BLOCK), "pg_desc": "mesh_ep", "ranks": block, "pg_size": len(block)}]


def _with_groups(body: str, rank: int, ranks: int) -> str:
    """``body`` (scale_trace's one event a line) with process-group args on every NCCL kernel."""
    world, block = _groups(rank, ranks)
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if '"ncclKernel' not in line or '"cat":"kernel"' not in line:
            continue
        comma = line.endswith(",")
        event = json.loads(line.rstrip(","))
        g = world if "AllReduce" in event["name"] else block
        event["args"].update({"Process Group Name": g["pg_name"], "Process Group Description": g["pg_desc"],
                              "Process Group Ranks": str(g["ranks"]), "Group size": g["pg_size"]})
        lines[i] = json.dumps(event, separators=(",", ":")) + ("," if comma else "")
    return "\n".join(lines)
