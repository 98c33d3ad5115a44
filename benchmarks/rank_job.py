"""Build an N-rank job out of the 8 real DLRM ranks (for tests/test_executor_dask.py and
benchmarks/bench_executor.py).

Each DLRM rank file goes through ``../shared/tools/scale_trace.py --copies C`` once; rank ``r`` of
the job is the scaled file of DLRM rank ``r % 8``, written as ``worker{r}_step_12.<ts>.pt.trace.json``
with its ``distributedInfo`` patched to ``rank = r`` and ``world_size = N``, so the file name and the
trace agree on the rank. Rank ``r`` and ``r + 8`` then carry the same kernels: the job is structurally
real (every rank has the same collectives in the same order) but its timings repeat every 8 ranks.
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


def build_rank_job(out: str, ranks: int = 64, copies: int = 1) -> list[str]:
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
        path = os.path.join(out, f"worker{r}_step_12.{1694128201545 + r}.pt.trace.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(head)[:-1] + ", " + text[cut:])
        paths.append(path)
    return paths
