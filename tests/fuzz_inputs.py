"""Hostile trace inputs for the fuzz tests (``tests/integration/test_fuzz.py``) and the long fuzz run
(``benchmarks/fuzz_long.py``).

Everything here is deterministic given a ``random.Random``: a seeded mutation fuzzer over real
traces from ../shared/samples (byte flips, truncation, splices, gzip of garbage, …) and structural
generators (deep nesting, huge numbers, NaN/Infinity literals, wrong types per field, duplicate keys,
invalid UTF-8, a BOM). :func:`exercise` is the property under test: a trace file's bytes either
load and analyse, or fail with :class:`~tb_plugin.trace.errors.TraceReadError`.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import threading
from pathlib import Path
from typing import Callable, Iterator

from synth.events import complete

REPO = Path(__file__).resolve().parent.parent
SAMPLES = Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))

# Small real traces, one per producer/format (kineto 2021, HTA/Triton, ROCm, Composer, Lightning, torch 2.x CPU).
SEED_FILES = (
    "kineto/gpu_metrics_input.json",
    "hta/triton_example/triton_example.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "composer/rank_0.trace.json",
    "lightning/0_trace.json",
    "torch213_cpu/worker0.1795324943899052487.pt.trace.json",
)

PER_INPUT_SECONDS = 20.0  # a generous bound: every seed input loads and analyses in well under a second


def seed_documents() -> list[tuple[str, bytes]]:
    """``(name, decompressed JSON bytes)`` of the seed traces that exist."""
    out = []
    for rel in SEED_FILES:
        path = SAMPLES / rel
        if path.exists():
            data = path.read_bytes()
            out.append((rel, gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data))
    return out


# --------------------------------------------------------------------------------------------
# The property
# --------------------------------------------------------------------------------------------


def exercise(data: bytes, tmpdir: Path | None = None) -> str:
    """Decode ``data`` (through a real file when ``tmpdir`` is given, so gzip and reading are covered)
    and run every analysis. Returns ``"ok"`` or ``"error"`` (a :class:`TraceReadError`); any other
    exception propagates."""
    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file
    from tb_plugin.registry.views import FileViews
    from tb_plugin.trace.decode import decode_trace
    from tb_plugin.trace.errors import TraceReadError

    try:
        if tmpdir is not None:
            path = Path(tmpdir) / "fuzz.pt.trace.json"
            path.write_bytes(data)
            trace = load_trace_file(str(path))
        else:
            trace = decode_trace(data)
        compute_overview(trace)
    except TraceReadError as exc:
        assert str(exc), "TraceReadError without a message"
        return "error"
    analyse(trace, FileViews)
    return "ok"


def analyse(trace, views_cls) -> None:
    """Every per-file view the UI and the CLI compute."""
    views = views_cls(trace)
    views.compute_all()
    for group in ("operator", "input_shape", "call_stack"):
        rows = views.operators(group)
        if rows:
            views.stacks(group, 0)
    views.kernels("kernel_op_config")
    meta = views.timeline_meta()
    end = meta["end_us"] if isinstance(meta["end_us"], (int, float)) else 1000.0
    views.timeline_window(0.0, float(end) if end == end else 1000.0, 800)
    views.timeline_search("a", False)
    views.timeline_range(0.0, float(end) if end == end else 1000.0, None, 1000)
    views.timeline_search("a.*", True)
    if len(trace.events):
        views.event(0)
        views.event(len(trace.events) - 1)
    views.insights()
    views.memory_summary()
    for curve in views.memory_curves():
        views.memory_stats(curve["device"])
        views.memory_stats(curve["device"], 0.0, 1e6)
    views.memory_pairs()


class Hang(Exception):
    """An input ran past its time bound."""


def time_bound(seconds: float):
    """Context manager: raise :class:`Hang` when the body runs longer than ``seconds`` (main thread,
    POSIX only; elsewhere a no-op)."""
    import contextlib

    @contextlib.contextmanager
    def bound():
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_alarm(signum, frame):
            raise Hang(f"input ran longer than {seconds} s")

        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    return bound()


# --------------------------------------------------------------------------------------------
# Mutations of real traces
# --------------------------------------------------------------------------------------------

_INTERESTING = [
    b"",
    b"0",
    b"-1",
    b"1e400",
    b"-1e400",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"null",
    b"true",
    b'"x"',
    b"[]",
    b"{}",
    b"[[[[",
    b"]]]]",
    b"{{{{",
    b"}}}}",
    b"1180591620717411303424",
    b"-9223372036854775809",
    b"18446744073709551616",
    b'"\\ud800"',
    b"\xff\xfe",
    b"\xc3\x28",
    b"\xef\xbb\xbf",
    b"\x00",
    b",",
    b":",
    b'"',
    b"\\",
    b"1.7976931348623157e308",
    b"4.9e-324",
]


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One to a few random byte-level mutations."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            buf += rng.choice(_INTERESTING)
            continue
        op = rng.randrange(8)
        i = rng.randrange(len(buf))
        if op == 0:  # flip a bit
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # random byte
            buf[i] = rng.randrange(256)
        elif op == 2:  # delete a run
            del buf[i : i + rng.randint(1, 64)]
        elif op == 3:  # insert an interesting token
            buf[i:i] = rng.choice(_INTERESTING)
        elif op == 4:  # duplicate a run
            j = min(len(buf), i + rng.randint(1, 256))
            buf[i:i] = buf[i:j]
        elif op == 5:  # replace a JSON token-ish byte with another structural byte
            buf[i] = rng.choice(b'[]{}",:0-eE.')
        elif op == 6:  # overwrite a number-looking run
            buf[i : i + rng.randint(1, 8)] = rng.choice(_INTERESTING)
        else:  # swap two runs
            j = rng.randrange(len(buf))
            a, b = sorted((i, j))
            n = min(rng.randint(1, 32), b - a)
            buf[a : a + n], buf[b : b + n] = buf[b : b + n], buf[a : a + n]
    return bytes(buf)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def gzip_garbage(rng: random.Random, data: bytes) -> bytes:
    """Gzip files that lie: garbage after the magic, a truncated stream, flipped compressed bytes,
    a valid gzip of non-JSON, concatenated members."""
    kind = rng.randrange(5)
    if kind == 0:
        return b"\x1f\x8b" + rng.randbytes(rng.randint(0, 200))
    if kind == 1:
        z = gzip.compress(data, compresslevel=1)
        return z[: rng.randrange(2, len(z))]
    if kind == 2:
        z = bytearray(gzip.compress(data, compresslevel=1))
        for _ in range(rng.randint(1, 4)):
            z[rng.randrange(10, len(z))] ^= 1 << rng.randrange(8)
        return bytes(z)
    if kind == 3:
        return gzip.compress(rng.randbytes(rng.randint(0, 4096)))
    half = rng.randrange(len(data) + 1)
    return gzip.compress(data[:half]) + gzip.compress(data[half:]) + rng.choice([b"", b"\x00\x00", b"junk"])


# --------------------------------------------------------------------------------------------
# Structural mutations (parse the seed, change fields, serialise by hand)
# --------------------------------------------------------------------------------------------

_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "s", "bp")
_ARG_KEYS = (
    "correlation",
    "External id",
    "external id",
    "device",
    "stream",
    "grid",
    "block",
    "blocks per SM",
    "est. achieved occupancy %",
    "Bytes",
    "Addr",
    "Total Allocated",
    "Total Reserved",
    "Device Type",
    "Device Id",
    "name",
    "registers per thread",
    "shared memory",
    "Input Dims",
    "Input dims",
    "Call stack",
    "flops",
    "Python id",
    "Python parent id",
    "Input type",
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "dtype",
    "Group size",
    "Process Group Name",
    "epoch",
    "batch",
    "value",
    "labels",
)
# JSON *text* of odd values (some are not valid JSON for json.dumps: NaN, 1e400, deep nesting)
_ODD_VALUES = [
    "[1,2,3]",
    '"x"',
    '{"a":1}',
    "null",
    "true",
    "false",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    str(2**70),
    str(-(2**70)),
    str(2**64),
    "-0",
    "0.5",
    "1e-400",
    '""',
    '"\\u0000"',
    '"\\ud800"',
    "[]",
    "{}",
    "[[[]]]",
    '"1e400"',
    '"NaN"',
    "12345678901234567890123",
    '"X"',
    '"B"',
    '"E"',
    '"M"',
    '"C"',
    '"i"',
    '"s"',
    '"f"',
    '"kernel"',
    '"cpu_op"',
    '"ProfilerStep#1"',
    '"[memory]"',
    '"process_name"',
    '"Kernel"',
    '"gpu_memcpy"',
    '"ac2g"',
    '"fwdbwd"',
    '"cuda_runtime"',
    '"nccl:all_reduce"',
    '"Operator"',
    "3",
    "-3",
    "1700000000000000",
    '[1, "a", null]',
    "[1e400, 2, 3]",
    '["a","b","c"]',
]


_ODD_DEVICES = '[{"id":1e400,"totalGlobalMem":"x"},{"id":"0","numSms":2e308},3,null]'


_NOT_JSON = {
    "NaN",
    "Infinity",
    "-Infinity",
    '"\\ud800"',
}  # literals some writers emit; strict JSON (and msgspec) rejects them
_VALID_ODD = [v for v in _ODD_VALUES if v not in _NOT_JSON]


def _dump(value) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


def _dump_event(ev: dict, overrides: dict[str, str], dup: str | None) -> str:
    parts = []
    for k, v in ev.items():
        parts.append(f"{_dump(k)}:{overrides.pop(k) if k in overrides else _dump(v)}")
    for k, text in overrides.items():
        parts.append(f"{_dump(k)}:{text}")
    if dup is not None:  # a duplicate key: same name, another value
        parts.append(dup)
    return "{" + ",".join(parts) + "}"


def _events_of(doc) -> list:
    if isinstance(doc, dict):
        evs = doc.get("traceEvents")
        return evs if isinstance(evs, list) else []
    return doc if isinstance(doc, list) else []


def deep_nesting(depth: int, opener: str = "[") -> str:
    closer = "]" if opener == "[" else "}"
    if opener == "[":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + closer * depth


def structural(rng: random.Random, doc, max_events: int = 400) -> bytes:
    """Re-serialise a (parsed) seed trace with hostile field values, keys and layout."""
    events = [e for e in _events_of(doc) if isinstance(e, dict)]
    if len(events) > max_events:
        start = rng.randrange(len(events) - max_events + 1)
        events = events[start : start + max_events]
    texts = []
    # most documents stay valid JSON so the odd values reach the analyses; some carry NaN/Infinity
    # literals (read after a rewrite, with a warning) or 100k-deep nesting (the whole document fails)
    hostile = rng.random() < 0.15
    odd = _ODD_VALUES if hostile else _VALID_ODD
    n_bad = rng.randint(1, max(1, len(events) // 4 or 1))
    bad = set(rng.sample(range(len(events)), min(n_bad, len(events)))) if events else set()
    for i, ev in enumerate(events):
        ev = dict(ev)
        overrides: dict[str, str] = {}
        dup = None
        if i in bad:
            for _ in range(rng.randint(1, 3)):
                what = rng.randrange(6)
                field = rng.choice(_FIELDS)
                if what <= 1:
                    overrides[field] = rng.choice(odd)
                elif what == 2:  # an odd args value
                    args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
                    parts = [f"{_dump(k)}:{_dump(v)}" for k, v in args.items()]
                    parts.append(f"{_dump(rng.choice(_ARG_KEYS))}:{rng.choice(odd)}")
                    overrides["args"] = "{" + ",".join(parts) + "}"
                    ev.pop("args", None)
                elif what == 3:  # duplicate key
                    dup = f"{_dump(field)}:{rng.choice(odd)}"
                elif what == 4:  # drop a field
                    ev.pop(field, None)
                else:  # deep nesting inside args
                    depth = rng.choice([10, 1000, 100_000] if hostile else [10, 100, 500])
                    overrides["args"] = '{"Input Dims":' + deep_nesting(depth) + "}"
                    ev.pop("args", None)
        texts.append(_dump_event(ev, overrides, dup))
    body = "[" + ",".join(texts) + "]"
    layout = rng.randrange(6)
    if layout == 0 and isinstance(doc, dict):
        top = {k: v for k, v in doc.items() if k != "traceEvents"}
        head = ",".join(f"{_dump(k)}:{_dump(v)}" for k, v in top.items())
        out = "{" + head + ("," if head else "") + '"traceEvents":' + body + "}"
    elif layout == 1:  # odd top-level facts
        field = rng.choice(
            [
                "deviceProperties",
                "distributedInfo",
                "baseTimeNanoseconds",
                "schemaVersion",
                "computeProperties",
                "traceName",
                "displayTimeUnit",
            ]
        )
        value = rng.choice(odd + [_ODD_DEVICES])
        out = "{" + _dump(field) + ":" + value + ',"traceEvents":' + body + "}"
    elif layout == 2:  # array form, maybe without its closing bracket
        out = body if rng.random() < 0.5 else body[:-1]
    elif layout == 3:  # duplicate traceEvents keys
        out = '{"traceEvents":[],"traceEvents":' + body + "}"
    elif layout == 4:  # a BOM and whitespace
        out = "\ufeff  \n" + '{"traceEvents":' + body + "}"
    else:
        out = '{"traceEvents":' + body + "}"
    data = out.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:  # invalid UTF-8 somewhere
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + data[i:]
    return data


def handmade(rng: random.Random) -> bytes:
    """Small documents built from scratch around one hostile feature."""
    kind = rng.randrange(12)
    if kind == 0:
        return b'{"traceEvents":' + deep_nesting(100_000).encode() + b"}"
    if kind == 1:
        return deep_nesting(rng.choice([1000, 100_000]), "{").encode()
    if kind == 2:
        return (
            '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,'
            '"dur":2,"args":{"Input Dims":' + deep_nesting(100_000) + "}}]}"
        ).encode()
    if kind == 3:
        field = rng.choice(("ts", "dur", "pid", "tid", "name", "cat", "args", "ph", "id"))
        value = rng.choice(_ODD_VALUES)
        ev = complete("aten::mm", "cpu_op", 10, 5, **{"External id": 3})
        return ('{"traceEvents":[' + _dump_event(ev, {field: value}, None) + "]}").encode()
    if kind == 4:
        return b"\xef\xbb\xbf" + rng.choice([b"", b"[", b"{", b'{"traceEvents":[]}', b"[]"])
    if kind == 5:
        return rng.randbytes(rng.randint(0, 512))
    if kind == 6:
        return gzip.compress(rng.randbytes(rng.randint(0, 512)))
    if kind == 7:
        return rng.choice(
            [
                b"",
                b" ",
                b"\n\t ",
                b"null",
                b"0",
                b'"trace"',
                b"[",
                b"{",
                b"]",
                b"}",
                b"[null]",
                b"[1,2,3]",
                b'{"traceEvents":null}',
                b'{"traceEvents":{}}',
                b'{"traceEvents":[1]}',
                b'{"traceEvents":[[]]}',
                b'{"traceEvents":["x"]}',
                b'{"traceEvents":[{}]}',
                b"[{}",
                b"[{},",
                b'[{"ph":"X"',
                b"\x1f\x8b",
                b"\x1f",
                b"NaN",
                b"[NaN]",
                b'{"traceEvents":[{"ph":"X","ts":NaN,"dur":Infinity}]}',
            ]
        )
    if kind == 8:  # B/E pairs with odd values
        ev = lambda ph, ts: {
            "ph": ph,
            "name": rng.choice(["a", "b", None, 3]),
            "pid": rng.choice([1, "1", None]),
            "tid": rng.choice([1, "1", [1]]),
            "ts": ts,
        }
        evs = [ev(rng.choice("BE"), rng.choice([1, 2, 3, None, "x", 1e300, -1e300])) for _ in range(rng.randint(1, 30))]
        return _dump({"traceEvents": evs}).encode()
    if kind == 9:  # memory events with odd values
        evs = [
            {
                "ph": "i",
                "name": "[memory]",
                "pid": 1,
                "tid": 1,
                "ts": rng.choice([1, 2, "x", None, 1e300]),
                "args": {
                    k: rng.choice([1, -1, 2**70, "x", None, [1], 1e300, -1e300])
                    for k in ("Bytes", "Addr", "Total Allocated", "Total Reserved", "Device Type", "Device Id")
                },
            }
            for _ in range(rng.randint(1, 30))
        ]
        evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0, "dur": 100})
        return _dump({"traceEvents": evs}).encode()
    if kind == 10:  # counters and flows with odd values
        evs = [
            {
                "ph": rng.choice(["C", "s", "f", "t"]),
                "cat": rng.choice(["fwdbwd", "ac2g", None]),
                "name": rng.choice(["gpu", "x", 1]),
                "id": rng.choice([1, "a", 2**70, None, 1e400 if False else 1.5]),
                "pid": 1,
                "tid": 1,
                "ts": rng.choice([1, "2", None, 1e300]),
                "args": rng.choice([{"value": 1e308}, {"a": "x"}, [], 3, {"v": 2**70}]),
            }
            for _ in range(rng.randint(1, 30))
        ]
        return _dump({"traceEvents": evs}).encode()
    # kind 11: kernels and runtime with odd correlation/stream/grid
    evs = []
    for i in range(rng.randint(1, 20)):
        corr = rng.choice([i, -1, 2**70, "x", None, 1.5])
        evs.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": i * 10,
                "dur": 2,
                "args": {"correlation": corr, "External id": rng.choice([1, None, "q"])},
            }
        )
        evs.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": rng.choice([0, -1, 2**31, "x"]),
                "tid": rng.choice([7, "stream 7"]),
                "ts": i * 10 + rng.choice([1, -1e6, 1e15]),
                "dur": rng.choice([1, 0, -5, 1e300]),
                "args": {
                    "correlation": corr,
                    "device": rng.choice([0, -1, 2**40, "x"]),
                    "stream": rng.choice([7, "x", None]),
                    "grid": rng.choice([[1, 2, 3], [1], "x", [1e300, 1, 1]]),
                    "block": rng.choice([[1, 1, 1], None, 5]),
                    "blocks per SM": rng.choice([1, "x", -1]),
                    "est. achieved occupancy %": rng.choice([50, 1e300, "x"]),
                },
            }
        )
    evs.append(
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}
    )
    return _dump(
        {"traceEvents": evs},
    ).encode()


# --------------------------------------------------------------------------------------------
# One stream of inputs
# --------------------------------------------------------------------------------------------


def inputs(rng: random.Random, seeds: list[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
    """An endless stream of ``(label, bytes)`` hostile inputs."""
    parsed = []
    for name, data in seeds:
        try:
            parsed.append((name, json.loads(data)))
        except ValueError:
            pass
    small = [(name, data) for name, data in seeds]
    while True:
        r = rng.random()
        if r < 0.30 and small:
            name, data = rng.choice(small)
            yield f"bytes:{name}", mutate_bytes(rng, data)
        elif r < 0.40 and small:
            name, data = rng.choice(small)
            yield f"truncate:{name}", truncate(rng, data)
        elif r < 0.48 and small:
            name, data = rng.choice(small)
            yield f"gzip:{name}", gzip_garbage(rng, data[: rng.randint(0, len(data))])
        elif r < 0.80 and parsed:
            name, doc = rng.choice(parsed)
            yield f"struct:{name}", structural(rng, doc)
        else:
            yield "handmade", handmade(rng)


def run_for(
    rng: random.Random,
    budget: Callable[[int], bool],
    tmpdir: Path,
    per_input: float = PER_INPUT_SECONDS,
    on_unhandled: Callable[[str, bytes, BaseException], None] | None = None,
) -> dict:
    """Feed inputs while ``budget(tried)`` is true. Returns the counts."""
    seeds = seed_documents()
    counts = {"tried": 0, "ok": 0, "error": 0, "unhandled": 0}
    for label, data in inputs(rng, seeds):
        if not budget(counts["tried"]):
            break
        counts["tried"] += 1
        try:
            with time_bound(per_input):
                # every other input goes through a real file (gzip detection, reading); others straight to decode
                result = exercise(data, tmpdir if counts["tried"] % 2 else None)
            counts[result] += 1
        except Exception as exc:
            counts["unhandled"] += 1
            if on_unhandled is not None:
                on_unhandled(label, data, exc)
    return counts


def save_crash(directory: Path, label: str, data: bytes, exc: BaseException) -> Path:
    """Keep a crashing input for reproduction."""
    import hashlib
    import traceback

    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = directory / f"crash-{digest}.bin"
    path.write_bytes(data)
    (directory / f"crash-{digest}.txt").write_text(
        f"{label}\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    )
    return path


__all__ = [
    "SEED_FILES",
    "exercise",
    "inputs",
    "run_for",
    "seed_documents",
    "save_crash",
    "time_bound",
    "Hang",
    "mutate_bytes",
    "truncate",
    "gzip_garbage",
    "structural",
    "handmade",
    "deep_nesting",
]
