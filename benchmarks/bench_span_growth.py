"""Whether a decode worker's work per event grows with the file: equal units sampled evenly over two traces.

    python benchmarks/bench_span_growth.py LARGER --baseline SMALLER [--units 24] [--rounds 4]

Most of a large cold report's CPU is its decode workers' ``decode_span`` (one unit of 4 × 2,500 events
read from the file, decoded into columns, placed, its answer pickled for the main process). This takes
``--units`` units at evenly spaced points of each trace (each unit's events located by
``ranges.scan_range`` on a window there, as the first pass locates them), then, in ``--rounds`` rounds
taken in turns (the baseline first, then the larger trace, then the other way round), in this one
process: every unit's ``decode_span`` and its answer's ``pickle.dumps`` (the worker's side), then the
answer's ``pickle.loads`` and ``decode_stream.merge`` into one builder (the main process's side).

Printed per trace: the units' events and bytes, the interned keys and pickled answer bytes per unit
(counts: the load does not move them), and the CPU (user + system) per event of each side, the best
and the median of the rounds. Last line: each ratio, larger over baseline (1.00: nothing a worker or a
merge does per event grows with the file), and the load averages at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import statistics
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tb_plugin.trace import decode_stream, decode_workers, ranges
from tb_plugin.trace.columns import ColumnBuilder
from tb_plugin.trace.events import BATCH_EVENTS
from tb_plugin.trace.heap import gc_paused

UNIT_EVENTS = 4 * BATCH_EVENTS  # decode_stream.UNIT_BATCHES batches: one unit of the second pass
WINDOW_BYTES = 32 << 20  # bytes scanned at each sample point: more than one unit's events


@dataclass
class Unit:
    """One unit's events: their file offsets and lengths (bytes)."""

    offsets: np.ndarray
    lengths: np.ndarray


def sample_units(path: str, count: int) -> list[Unit]:
    """``count`` units of :data:`UNIT_EVENTS` events, from evenly spaced points of the file (the events
    array must start within its first 5 %)."""
    size = os.path.getsize(path)
    units = []
    for i in range(count):
        start = int(size * (0.05 + 0.9 * i / max(count - 1, 1)))
        found = ranges.scan_range(path, 0, start, min(start + WINDOW_BYTES, size - 1), False, 16 << 20)
        if not found.get("ok") or len(found["offsets"]) < UNIT_EVENTS:
            raise SystemExit(f"{path}: no {UNIT_EVENTS} events found at byte {start}")
        units.append(Unit(found["offsets"][:UNIT_EVENTS], found["lengths"][:UNIT_EVENTS]))
    return units


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_round(path: str, units: list[Unit]) -> tuple[float, float, list[int], list[int]]:
    """The worker's and the main process's CPU seconds over ``units``; each unit's keys and answer bytes."""
    answers, keys = [], []
    start = _cpu()
    for unit in units:
        state = decode_workers._decode_span(path, 0, unit.offsets, unit.lengths, [BATCH_EVENTS] * 4)
        keys.append(len(state["keys"]))
        answers.append(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    worker = _cpu() - start
    into = ColumnBuilder(decode_workers._NullSink())
    start = _cpu()
    for body in answers:
        with gc_paused():
            state = pickle.loads(body)
            decode_stream.merge(into, state, 0)
    return worker, _cpu() - start, keys, [len(body) for body in answers]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", help="the larger trace (a plain .json file)")
    parser.add_argument("--baseline", required=True, help="the smaller trace")
    parser.add_argument("--units", type=int, default=24, help="units sampled from each trace")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, each trace once a round, in turns")
    args = parser.parse_args(argv)
    load_before = _load()
    traces = {"baseline": args.baseline, "larger": args.trace}
    units = {name: sample_units(path, args.units) for name, path in traces.items()}
    events = {name: sum(len(u.offsets) for u in got) for name, got in units.items()}
    cpu: dict[str, dict[str, list[float]]] = {name: {"worker": [], "merge": []} for name in traces}
    counts: dict[str, tuple[list[int], list[int]]] = {}
    for r in range(args.rounds):
        for name in list(traces) if r % 2 == 0 else list(traces)[::-1]:
            worker, merge, keys, sizes = one_round(traces[name], units[name])
            cpu[name]["worker"].append(worker / events[name] * 1e6)
            cpu[name]["merge"].append(merge / events[name] * 1e6)
            counts[name] = (keys, sizes)
    for name, path in traces.items():
        keys, sizes = counts[name]
        data = sum(int(u.lengths.sum()) for u in units[name])
        print(
            f"{name}: {path}: {len(units[name])} units, {events[name]} events, {data / events[name]:.1f} bytes an event;"
            f" {statistics.mean(keys):.1f} keys and {statistics.mean(sizes) / 1e6:.3f} MB of answer a unit;"
            + "".join(
                f" {side} {min(v):.2f} µs an event (median {statistics.median(v):.2f})" for side, v in cpu[name].items()
            )
        )
    ratio = {
        side: (
            min(cpu["larger"][side]) / min(cpu["baseline"][side]),
            statistics.median(cpu["larger"][side]) / statistics.median(cpu["baseline"][side]),
        )
        for side in ("worker", "merge")
    }
    print(
        " ".join(f"{side}_cpu_per_event_ratio={best:.3f} (median {med:.3f})" for side, (best, med) in ratio.items())
        + f" keys_ratio={statistics.mean(counts['larger'][0]) / statistics.mean(counts['baseline'][0]):.3f}"
        + f" answer_bytes_ratio={statistics.mean(counts['larger'][1]) / statistics.mean(counts['baseline'][1]):.3f}"
        + f" load={load_before} -> {_load()}"
    )
    return 0


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
