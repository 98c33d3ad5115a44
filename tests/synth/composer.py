"""Synthetic Composer profiler traces (the ``JSONTraceHandler`` array form) with known answers.

Per rank, a top-level JSON array of Chrome events on one thread (pid = rank):

- metadata ``M`` events: ``process_name``, ``thread_name``, ``global_rank``,
  ``clock_sync_timestamp_us`` (``{"value": µs}``) and ``clock_sync_error_bound``;
- per batch ``b`` (``{epoch: 0, batch: b}`` args): ``dataloader/train`` B/E (``load_us``), then
  ``event/batch`` B/E (``compute_us``; its E carries the next batch number, as Composer's does) holding
  ``event/forward`` (first half) and ``event/backward`` (second half) B/E pairs;
- system profiler ``C`` counters sampled at each batch start: ``cpu`` ``{cpu_percent}``, ``memory``
  ``{used, percent}``, ``disk`` ``{read_bytes, write_bytes}`` and ``network`` ``{bytes_sent,
  bytes_recv}`` (the series are named ``<event>/<arg>``); values in :func:`counter_value`.

**Clocks.** Every rank runs the same schedule in true time: batch ``b`` starts loading at
``T0 + b·(load_us + compute_us)`` µs, and the ranks synced at ``SYNC_TRUE_US`` (before ``T0``). Rank
``r``'s clock reads true time + ``offsets[r]``: all its timestamps, ``clock_sync_timestamp_us``
included, carry that offset. Aligned on ``clock_sync_timestamp_us`` the ranks coincide; on raw
timestamps they are ``offsets[r] − min(offsets)`` apart.
"""

from __future__ import annotations

import json

T0_US = 1_700_000_000_000_000.0  # true time of the first batch's load (µs)
SYNC_TRUE_US = T0_US - 500.0  # the barrier after which every rank read its clock


def counter_value(series: str, batch: int, rank: int) -> float:
    """The value of a counter series at batch ``batch`` of rank ``rank`` (bytes, percent)."""
    return {
        "cpu/cpu_percent": 20.0 + 5.0 * batch + rank,
        "memory/used": float((8 << 30) + (64 << 20) * batch),
        "memory/percent": 25.0 + 0.5 * batch,
        "disk/read_bytes": float((1 << 20) * 10 * batch),
        "disk/write_bytes": float((1 << 20) * batch),
        "network/bytes_sent": float(5_000_000 * batch),
        "network/bytes_recv": float(7_000_000 * batch),
    }[series]


SERIES = (
    "cpu/cpu_percent",
    "memory/used",
    "memory/percent",
    "disk/read_bytes",
    "disk/write_bytes",
    "network/bytes_sent",
    "network/bytes_recv",
)


def composer_trace(
    rank: int = 0, batches: int = 4, load_us: float = 300.0, compute_us: float = 700.0, offset_us: float = 0.0
) -> list[dict]:
    """The events of one rank, ``offset_us`` ahead of true time."""
    tid = 100 + rank

    def ev(name, ph, ts, args, cat=""):
        return {"name": name, "cat": cat, "ph": ph, "ts": ts + offset_us, "pid": rank, "tid": tid, "args": args}

    meta_ts = SYNC_TRUE_US
    events = [
        ev("process_name", "M", meta_ts, {"name": f"Rank {rank} training loop process"}),
        ev("thread_name", "M", meta_ts, {"name": "Training Loop"}),
        ev("global_rank", "M", meta_ts, {"value": rank}),
        ev("clock_sync_timestamp_us", "M", meta_ts, {"value": SYNC_TRUE_US + offset_us}),
        ev("clock_sync_error_bound", "M", meta_ts, {"value": 4}),
    ]
    for b in range(batches):
        t = T0_US + b * (load_us + compute_us)
        a = {"epoch": 0, "batch": b}
        c0 = t + load_us
        events += [
            ev("dataloader/train", "B", t, a, "dataloader"),
            ev("dataloader/train", "E", c0, a, "dataloader"),
            ev("event/batch", "B", c0, a, "event"),
            ev("event/forward", "B", c0 + 1, a, "event"),
            ev("event/forward", "E", c0 + compute_us / 2, a, "event"),
            ev("event/backward", "B", c0 + compute_us / 2, a, "event"),
            ev("event/backward", "E", c0 + compute_us - 1, a, "event"),
            ev("event/batch", "E", c0 + compute_us, {"epoch": 0, "batch": b + 1}, "event"),
        ]
        by_event: dict[str, dict] = {}
        for series in SERIES:
            name, arg = series.split("/")
            by_event.setdefault(name, {})[arg] = counter_value(series, b, rank)
        events += [ev(name, "C", t, args, name) for name, args in by_event.items()]
    return events


def dumps(events: list[dict], close: bool = True) -> bytes:
    """Composer's file form: one event per line in a top-level array (``close=False``: no ``]``)."""
    return ("[\n" + ",\n".join(json.dumps(e) for e in events) + ("\n]\n" if close else ",\n")).encode()


def write_ranks(folder, offsets=(0.0, 2500.0, -1300.0), **kwargs) -> list[str]:
    """Write ``rank<r>.1.pt.trace.json`` per offset into ``folder``; returns the paths."""
    import os

    os.makedirs(folder, exist_ok=True)
    paths = []
    for rank, off in enumerate(offsets):
        path = os.path.join(os.fspath(folder), f"rank{rank}.1.pt.trace.json")
        with open(path, "wb") as f:
            f.write(dumps(composer_trace(rank=rank, offset_us=off, **kwargs)))
        paths.append(path)
    return paths
