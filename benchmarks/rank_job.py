"""Build an N-rank job out of the 8 real DLRM ranks (for tests/integration/test_executor_dask.py and
benchmarks/bench_executor.py).

Each DLRM rank file (from the sample corpus: ``$KINETOSCOPE_SAMPLES``, else ``../shared/samples``) is
played ``C`` times back to back once (``repeated_text``); rank ``r`` of the job is the repeated file of
DLRM rank ``r % 8``, written as ``worker{r}_step_12.<ts>.pt.trace.json``
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
import gzip
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.environ.get("KINETOSCOPE_SAMPLES") or os.path.join(os.path.dirname(REPO), "shared", "samples")
DLRM = os.path.join(SAMPLES, "dlrm_8ranks")
MARKER = '"traceEvents": ['
# args that link events by number (host op to kernel, python frames): offset per copy so copies never share one
LINK_ARGS = ("External id", "correlation", "Ev Idx", "Record function id", "Python id", "Python parent id")
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def repeated_text(src: str, copies: int = 1) -> str:
    """The trace file ``src`` (``.gz`` or plain JSON) with its profiled window played ``copies`` times back
    to back, as JSON text: the other top-level keys first, then ``"traceEvents": [`` and one compact event
    a line (:func:`repeated_pieces`)."""
    return "".join(repeated_pieces(src, copies))


def write_repeated(src: str, dst: str, copies: int) -> None:
    """:func:`repeated_text` written to ``dst`` piece by piece (gzip-compressed when it ends in ``.gz``):
    the output is never held whole, so 30 or 150 copies of a 35 MB trace are cheap in memory."""
    with gzip.open(dst, "wt", encoding="utf-8") if dst.endswith(".gz") else open(dst, "w", encoding="utf-8") as f:
        for piece in repeated_pieces(src, copies):
            f.write(piece)


def repeated_pieces(src: str, copies: int):
    """The text of :func:`repeated_text`, in pieces: copy ``c`` is shifted by ``c`` times (window length
    + 1 ms), its link ids by ``c`` times one more than the largest id, its ``ProfilerStep#N`` by ``c``
    step counts; metadata (``ph: M``) events appear once. A test and benchmark input builder, not
    analysis: it loops over events."""
    with gzip.open(src, "rb") if src.endswith(".gz") else open(src, "rb") as f:
        head = json.load(f)
    events = head.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    starts = [e["ts"] for e in body if _number(e.get("ts"))]
    ends = [e["ts"] + (e.get("dur") if _number(e.get("dur")) else 0) for e in body if _number(e.get("ts"))]
    window_us = max(ends) - min(starts) + 1000 if starts else 0  # + 1 ms between copies
    ids = [e["id"] for e in body if isinstance(e.get("id"), int)]
    ids += [v for e in body for k, v in (e.get("args") or {}).items() if k in LINK_ARGS and isinstance(v, int)]
    id_step = max(ids, default=0) + 1
    steps = [int(m.group(1)) for e in body if (m := PROFILER_STEP.match(str(e.get("name", ""))))]
    step_step = max(steps) - min(steps) + 1 if steps else 0
    yield json.dumps(head)[:-1] + (", " if head else "") + MARKER + "\n"
    sep = ""
    for e in meta:
        yield sep + json.dumps(e, separators=(",", ":"))
        sep = ",\n"
    for c in range(copies):
        for e in body:
            if c:
                e = dict(e)
                if _number(e.get("ts")):
                    e["ts"] = e["ts"] + c * window_us
                if isinstance(e.get("id"), int):
                    e["id"] += c * id_step
                if e.get("args"):
                    e["args"] = {
                        k: v + c * id_step if k in LINK_ARGS and isinstance(v, int) else v for k, v in e["args"].items()
                    }
                m = PROFILER_STEP.match(str(e.get("name", "")))
                if m:
                    e["name"] = f"ProfilerStep#{int(m.group(1)) + c * step_step}"
            yield sep + json.dumps(e, separators=(",", ":"))
            sep = ",\n"
    yield "\n]}"


def build_rank_job(out: str, ranks: int = 64, copies: int = 1, groups: bool = False) -> list[str]:
    """Write the job into ``out`` (created); returns the file paths, rank order."""
    sources = sorted(glob.glob(os.path.join(DLRM, "*.pt.trace.json")))
    if len(sources) != 8:
        raise FileNotFoundError(f"expected the 8 DLRM ranks in {DLRM}")
    os.makedirs(out, exist_ok=True)
    scaled = [repeated_text(src, copies) for src in sources]
    paths = []
    for r in range(ranks):
        text = scaled[r % 8]
        cut = text.index(MARKER)  # repeated_text writes the head keys, then the events
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
    return [
        {"pg_name": "0", "pg_desc": "default_pg", "ranks": list(range(ranks)), "pg_size": ranks},
        {"pg_name": str(1 + rank // BLOCK), "pg_desc": "mesh_ep", "ranks": block, "pg_size": len(block)},
    ]


def _with_groups(body: str, rank: int, ranks: int) -> str:
    """``body`` (repeated_text's one event a line) with process-group args on every NCCL kernel."""
    world, block = _groups(rank, ranks)
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if '"ncclKernel' not in line or '"cat":"kernel"' not in line:
            continue
        comma = line.endswith(",")
        event = json.loads(line.rstrip(","))
        g = world if "AllReduce" in event["name"] else block
        event["args"].update(
            {
                "Process Group Name": g["pg_name"],
                "Process Group Description": g["pg_desc"],
                "Process Group Ranks": str(g["ranks"]),
                "Group size": g["pg_size"],
            }
        )
        lines[i] = json.dumps(event, separators=(",", ":")) + ("," if comma else "")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write a trace played COPIES times back to back (write_repeated).")
    ap.add_argument("source", help="a trace file (.json or .json.gz)")
    ap.add_argument("out", help="the file to write (gzip-compressed when it ends in .gz)")
    ap.add_argument("--copies", type=int, required=True)
    a = ap.parse_args()
    write_repeated(a.source, a.out, a.copies)
