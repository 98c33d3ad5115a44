"""A synthetic finetuning-scheduler MemProfiler folder with known values (for tests and the demo).

Layout written under ``<out>/memprofiler/``, per rank ``r``, function ``training_step``, and each
profiled iteration ``i`` (the default MemProfiler schedule profiles iteration 2 after one warm-up
iteration; :func:`write_memprofiler` takes the iterations):

- ``rank_<r>_memory_stats.yaml``: snapshot key ``<r>.training_step.<i>.<start|end>`` → values, dumped
  with PyYAML's default dumper from a ``defaultdict`` (so the file starts with the
  ``!!python/object/apply:collections.defaultdict`` tag, as MemProfiler's files do);
- ``cuda_alloc_rank_<r>.training_step.<i>.<start|end>.pickle``: an allocator snapshot
  (:mod:`synth.snapshot`);
- ``fsdp_mem_rank_<r>_training_step_<i>.log``: a text report.

The values follow a simple model of one FSDP fine-tuning step (bytes unless noted):

- CUDA allocated at a step's start = 512 MiB + 16 MiB·r + 4 MiB·(i − first); at its end 64 MiB more
  (gradients kept until the optimizer step of the next call);
- allocated peak = that start value + 1400 MiB at the first start, then + 1500 MiB (never decreases);
- reserved = 2048 MiB + 32 MiB·r at a start, 128 MiB more at an end; its peak never decreases;
- process RSS = 3.5 GiB + 100 MiB·r + 12 MiB·i (+ 6 MiB at an end), VMS 40 GiB;
- the hook values are 0 at a start (MemProfiler resets them after each ``end`` snapshot) and at an end
  ``npp_post_forward`` = ``npp_diff`` = 700 MiB + 8 MiB·r, ``rss_pre_forward`` = the start RSS,
  ``rss_post_forward`` = RSS, ``rss_diff`` = their difference.
"""

from __future__ import annotations

import collections
import os
import pickle

import yaml

from .snapshot import synthesize_snapshot

MiB = 1 << 20
GiB = 1 << 30
FUNCTION = "training_step"
_STATS = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
_POOLS = ("all", "large_pool", "small_pool")


def snapshot_values(rank: int, iteration: int, phase: str, first: int = 2) -> dict:
    """The values of one snapshot, per the model in the module docstring."""
    start_alloc = 512 * MiB + 16 * MiB * rank + 4 * MiB * (iteration - first)
    end = phase == "end"
    alloc = start_alloc + (64 * MiB if end else 0)
    alloc_peak = start_alloc + (1400 * MiB if (iteration == first and not end) else 1500 * MiB)
    reserved = 2048 * MiB + 32 * MiB * rank + (128 * MiB if end else 0)
    reserved_peak = 2048 * MiB + 32 * MiB * rank + (0 if (iteration == first and not end) else 128 * MiB)
    rss_start = int(3.5 * GiB) + 100 * MiB * rank + 12 * MiB * iteration
    rss = rss_start + (6 * MiB if end else 0)
    npp = 700 * MiB + 8 * MiB * rank
    values: dict = {
        "npp_pre_forward": 0,
        "npp_post_forward": npp if end else 0,
        "npp_diff": npp if end else 0,
        "rss_pre_forward": rss_start if end else 0,
        "rss_post_forward": rss if end else 0,
        "rss_diff": rss - rss_start if end else 0,
        "rss": rss,
        "vms": 40 * GiB,
    }
    count = 900 + 10 * rank + (120 if end else 0)
    current = {
        "allocation": count,
        "segment": 40 + rank,
        "active": count,
        "inactive_split": 12,
        "allocated_bytes": alloc,
        "reserved_bytes": reserved,
        "active_bytes": alloc,
        "inactive_split_bytes": 6 * MiB,
        "requested_bytes": alloc - 2 * MiB,
    }
    peak = {
        "allocation": count + 800,
        "segment": 44 + rank,
        "active": count + 800,
        "inactive_split": 30,
        "allocated_bytes": alloc_peak,
        "reserved_bytes": reserved_peak,
        "active_bytes": alloc_peak,
        "inactive_split_bytes": 20 * MiB,
        "requested_bytes": alloc_peak - 2 * MiB,
    }
    for stat in _STATS:
        cur, pk = current[stat], peak[stat]
        total = 50 * cur * iteration  # cumulative allocations since the start of the process
        parts = {
            "all": (cur, pk, total, total - cur),
            "large_pool": (cur * 3 // 4, pk * 3 // 4, total * 3 // 4, total * 3 // 4 - cur * 3 // 4),
        }
        parts["small_pool"] = tuple(a - b for a, b in zip(parts["all"], parts["large_pool"]))
        for pool in _POOLS:
            for metric, v in zip(("current", "peak", "allocated", "freed"), parts[pool]):
                values[f"{stat}.{pool}.{metric}"] = int(v)
    values.update(
        {
            "max_split_size": -1,
            "num_alloc_retries": 0,
            "num_ooms": 0,
            "num_sync_all_streams": 0,
            "num_device_alloc": 44 + rank,
            "num_device_free": 0,
            "oversize_allocations.current": 0,
            "oversize_allocations.peak": 0,
            "oversize_allocations.allocated": 0,
            "oversize_allocations.freed": 0,
            "oversize_segments.current": 0,
            "oversize_segments.peak": 0,
            "oversize_segments.allocated": 0,
            "oversize_segments.freed": 0,
        }
    )
    return values


def expected_stats(rank: int, iterations=(2,)) -> dict[str, dict]:
    """Snapshot key → values for one rank's YAML file."""
    return {
        f"{rank}.{FUNCTION}.{i}.{phase}": snapshot_values(rank, i, phase, first=iterations[0])
        for i in iterations
        for phase in ("start", "end")
    }


def _report(rank: int, iteration: int) -> str:
    """A text report in the spirit of an FSDP memory tracker dump (made-up module sizes, MiB)."""
    v = snapshot_values(rank, iteration, "end")
    lines = [
        f"Iteration {iteration} {FUNCTION} Peak FSDP memory stats: ",
        "-" * 80,
        f"cuda:{rank} peak: {v['allocated_bytes.all.peak'] / MiB:.2f} MiB",
        f"  Parameter: {256 + 8 * rank:.2f} MiB",
        f"  Gradient: {256 + 8 * rank:.2f} MiB",
        f"  Optimstate: {512 + 16 * rank:.2f} MiB",
        f"  Activation: {v['npp_post_forward'] / MiB:.2f} MiB",
        "-" * 80,
        f"Iteration {iteration} {FUNCTION} Modulewise FSDP memory stats: ",
        "-" * 80,
    ]
    for depth, module in enumerate(("model", "model.layers.0", "model.layers.1", "model.output")):
        lines.append(
            f"{'  ' * min(depth, 1)}{module}: pre-forward {100 + 10 * depth:.2f} MiB, "
            f"post-forward {180 + 20 * depth:.2f} MiB, peak-backward {220 + 25 * depth:.2f} MiB"
        )
    lines.append("-" * 80)
    return "\n".join(lines) + "\n"


def write_memprofiler(out: str | os.PathLike, ranks: int = 2, iterations=(2,), snapshots: bool = True) -> str:
    """Write ``<out>/memprofiler/`` (see the module docstring); returns the folder's path."""
    folder = os.path.join(os.fspath(out), "memprofiler")
    os.makedirs(folder, exist_ok=True)
    for rank in range(ranks):
        stats = collections.defaultdict(dict)  # as MemProfiler keeps them: the dump carries the python tag
        for key, values in expected_stats(rank, iterations).items():
            stats[key].update(values)
        with open(os.path.join(folder, f"rank_{rank}_memory_stats.yaml"), "w", newline="") as f:
            yaml.dump(stats, f)
        for i in iterations:
            with open(os.path.join(folder, f"fsdp_mem_rank_{rank}_{FUNCTION}_{i}.log"), "w", newline="") as f:
                f.write(_report(rank, i))
            if snapshots:
                for phase in ("start", "end"):
                    snap = synthesize_snapshot(entries=120, seed=100 * rank + 10 * i + (phase == "end"))
                    name = f"cuda_alloc_rank_{rank}.{FUNCTION}.{i}.{phase}.pickle"
                    with open(os.path.join(folder, name), "wb") as f:
                        pickle.dump(snap, f, protocol=4)
    return folder


if __name__ == "__main__":  # python -m synth.fts OUT_DIR
    import sys

    print(write_memprofiler(sys.argv[1] if len(sys.argv) > 1 else "fts_demo"))
