"""One trace event as the synthesizers write it (µs)."""

from __future__ import annotations

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy")
DEVICE_WORK_CATEGORIES = (*DEVICE_CATEGORIES, "gpu_memset")


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


def work(name: str, cat: str, ts: float, dur: float, default_stream: int = 7, **args) -> dict:
    """A complete (``"X"``) event with no ``args`` key when ``args`` is empty: kernels, copies and memsets
    on pid 0 and their ``stream`` arg's tid (``default_stream`` without one), host work on pid 1, tid 1."""
    device = cat in DEVICE_WORK_CATEGORIES
    ev = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0 if device else 1,
        "tid": args.get("stream", default_stream) if device else 1,
        "ts": ts,
        "dur": dur,
    }
    if args:
        ev["args"] = args
    return ev


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


def table(text: str) -> list[list[str]]:
    """The rows of a text table, one a line, its cells split on ``|`` and stripped (blank lines skipped):
    known answers written as aligned columns rather than one literal per value."""
    return [[cell.strip() for cell in line.split("|")] for line in text.splitlines() if line.strip()]


def host_ops(text: str, with_args: bool = True) -> list[dict]:
    """Host events (pid 1; an empty ``args`` unless not ``with_args``: then none) from a :func:`table` of
    ``name | cat | ts | dur [| tid]`` rows (µs; the thread is 1 where the row names none)."""
    events = []
    for name, cat, ts, dur, *tid in table(text):
        ev = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": int(tid[0]) if tid else 1}
        events.append(dict(ev, ts=_num(ts), dur=_num(dur), **({"args": {}} if with_args else {})))
    return events


def _num(text: str) -> int | float:
    """A cell's number as written: ``10`` an int, ``10.0`` a float."""
    return float(text) if "." in text else int(text)
