"""Record real flight-recorder dumps of a hung job: 4 CPU processes, Gloo backend, one rank skips a
collective.

The job has the world group and two subgroups, ``pair_a`` (ranks 0, 1) and ``pair_b`` (ranks 2, 3),
created with ``new_group(..., group_desc=...)``. Each rank runs :data:`HEALTHY_STEPS` healthy steps
(an all_reduce on its pair, an all_gather and a broadcast on the world group, a send/recv between
ranks 0 and 1); with ``--traces`` the last one runs under the profiler (``rank<r>.1.pt.trace.json``; the
committed sample keeps only the dumps, so that the sample traces stay the same set). Then rank :data:`SKIPPING_RANK` skips the next
``pair_b`` all_reduce and goes on to the world all_reduce. The others' collectives time out after
:data:`TIMEOUT_S` seconds; every rank then writes its flight-recorder buffer
(``torch._C._distributed_c10d._dump_fr_trace``: the pickle that ``TORCH_FR_DUMP_TEMP_FILE`` gets on
a timeout) to ``nccl_trace_rank_<r>`` and its JSON form to ``json/fr_rank_<r>.json``.
``RECORDED.json`` says what was injected and which torch recorded it.

Usage (needs torch, e.g. ``pip install torch==2.13.0`` CPU build, in its own environment):
    python samples/record_flight_recorder.py [--out samples/fr_gloo_skip]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform

WORLD = 4
SKIPPING_RANK = 3
HEALTHY_STEPS = 3
TIMEOUT_S = 4.0
BUFFER_ENTRIES = 64  # small ring buffer: the dumps stay a few KB


def _worker(rank: int, out: str, port: int, traces: bool) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCH_FR_BUFFER_SIZE=str(BUFFER_ENTRIES))
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=TIMEOUT_S)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timeout)
    pair_a = dist.new_group([0, 1], timeout=timeout, group_desc="pair_a")
    pair_b = dist.new_group([2, 3], timeout=timeout, group_desc="pair_b")
    mine = pair_a if rank < 2 else pair_b

    def step() -> None:
        t = torch.full((256,), float(rank))
        dist.all_reduce(t, group=mine)
        gathered = [torch.empty(64) for _ in range(WORLD)]
        dist.all_gather(gathered, torch.full((64,), float(rank)))
        dist.broadcast(t, src=0)
        if rank == 0:
            dist.send(torch.ones(32), dst=1)
        elif rank == 1:
            dist.recv(torch.empty(32), src=0)

    for _ in range(HEALTHY_STEPS - 1):
        step()
    if traces:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            step()
        prof.export_chrome_trace(os.path.join(out, f"rank{rank}.1.pt.trace.json"))
    else:
        step()
    error = None
    try:
        if rank != SKIPPING_RANK:  # the injected fault: rank 3 never enters this pair_b all_reduce
            dist.all_reduce(torch.ones(128), group=mine)
        dist.all_reduce(torch.ones(512))  # the world all_reduce that every rank reaches next
    except Exception as exc:  # the timeout
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    dump = torch._C._distributed_c10d._dump_fr_trace(True, True, False)
    with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb") as f:
        f.write(dump)
    os.makedirs(os.path.join(out, "json"), exist_ok=True)  # the same buffer in the JSON form: a run of its own
    with open(os.path.join(out, "json", f"fr_rank_{rank}.json"), "w") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace_json(True, False).decode())
    with open(os.path.join(out, f".error_{rank}"), "w") as f:
        f.write(error or "")
    os._exit(0)  # do not wait for peers still stuck in a collective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fr_gloo_skip"))
    parser.add_argument("--port", type=int, default=29517)
    parser.add_argument("--traces", action="store_true", help="also profile the last healthy step of each rank")
    args = parser.parse_args()
    import torch
    import torch.multiprocessing as mp

    os.makedirs(args.out, exist_ok=True)
    procs = [
        mp.get_context("spawn").Process(target=_worker, args=(r, args.out, args.port, args.traces))
        for r in range(WORLD)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    errors = {}
    for r in range(WORLD):
        path = os.path.join(args.out, f".error_{r}")
        if os.path.exists(path):
            with open(path) as f:
                errors[str(r)] = f.read() or None
            os.remove(path)
    recorded = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "backend": "gloo",
        "world_size": WORLD,
        "groups": {"pair_a": [0, 1], "pair_b": [2, 3]},
        "buffer_entries": BUFFER_ENTRIES,
        "timeout_s": TIMEOUT_S,
        "healthy_steps": HEALTHY_STEPS,
        "injected": f"rank {SKIPPING_RANK} skipped the all_reduce of pair_b after {HEALTHY_STEPS} healthy steps, "
        "then entered the world all_reduce",
        "expected": {
            "root_cause": {"group_desc": "pair_b", "missing_ranks": [SKIPPING_RANK], "op": "all_reduce"},
            "explained": {"group": "world (name 0)", "missing_ranks": [2]},
        },
        "exceptions_by_rank": errors,
    }
    with open(os.path.join(args.out, "RECORDED.json"), "w") as f:
        json.dump(recorded, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
