"""One trace event as the synthesizers write it (µs)."""

from __future__ import annotations

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy")


def complete(name: str, cat: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    """A complete (``"X"``) event: device work (kernels, copies) on pid 0 and its ``stream`` arg's
    tid (7 without one), host work on pid 1 and thread ``tid``; ``args`` become the event's args."""
    device = cat in DEVICE_CATEGORIES
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0 if device else 1,
        "tid": args.get("stream", 7) if device else tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def memory_instant(ts: float, **args) -> dict:
    """A ``[memory]`` instant event on the host (pid 1, tid 1) whose args are ``args`` (``Bytes``,
    ``Addr``, ``Total Allocated``, ``Total Reserved``, ``Device Type``, ``Device Id``; bytes)."""
    return {
        "ph": "i",
        "s": "t",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": args,
    }
