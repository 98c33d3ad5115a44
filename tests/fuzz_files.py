"""Hostile files of every kind the logdir can hold, served through the plugin's real routes
(``tests/integration/test_fuzz.py`` samples them; ``benchmarks/fuzz_long.py --kinds files`` runs them for minutes).

The shapes are the ones the hardening review used to crash, stall or exhaust the server:
pickles of deeply nested or doubling tuples, snapshots whose entries share one huge frame list,
snapshots that reference one dict or segment hundreds of thousands of times, or ask for a huge memo slot,
snapshot fields of every wrong type, whitespace and ``[`` gzip bombs, bombed memory exports, zero
pickles, quadratic B/E pairs, integers above 64 bits in every metadata slot, args nested 300 deep,
3 000 nested ``nn.Module`` events, non-Latin-1 and formula-like names, MemProfiler YAML with huge
integers and deep nesting. :func:`exercise_files` is the property: every file loads or becomes its
own error, every route answers JSON (or CSV) with ``nosniff`` and a status of 200/400/404, and a
good trace beside the hostile ones keeps answering.
"""

from __future__ import annotations

import json
import pickle
import random
import struct
import types
import zlib
from pathlib import Path
from typing import Iterator

from fuzz_inputs import deep_nesting
from synth.events import complete

GOOD_TRACE = {
    "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        complete("aten::mm", "cpu_op", 10, 50, **{"External id": 1}),
    ]
}
FORMULA_NAMES = ("=cmd|'/C calc'!A0", "+SUM(1,2)", "-2+3", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x")')
ODD_NAMES = ("工作-😀", "a\nb", "<img src=x onerror=alert(1)>", "\u202eevil", "x" * 5000) + FORMULA_NAMES


def gzip_bomb(megabytes: int, fill: bytes = b"\0") -> bytes:
    """A valid gzip file of ``megabytes`` MiB of ``fill``, about 1000× smaller, built in a second or two:
    one deflate block of 1 MiB after a full flush does not depend on what came before, so it repeats."""
    chunk = fill * ((1 << 20) // len(fill))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    final = c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(chunk, crc)
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        + first
        + again * (megabytes - 1)
        + final
        + struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)
    )


# -- pickles, opcode by opcode ------------------------------------------------------------------
_PROTO, _EMPTY_DICT, _EMPTY_LIST, _MARK, _STOP = b"\x80\x04", b"}", b"]", b"(", b"."


def _pstr(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def _deep_tuple(depth: int) -> bytes:
    return b")" + b"\x85" * depth


def _snapshot_with(entry: bytes) -> bytes:
    return (
        _PROTO
        + _EMPTY_DICT
        + _MARK
        + _pstr("segments")
        + _EMPTY_LIST
        + _pstr("device_traces")
        + _EMPTY_LIST
        + _EMPTY_LIST
        + entry
        + b"a"
        + b"a"
        + b"u"
        + _STOP
    )


def deep_tuple_pickle(where: str, depth: int) -> bytes:
    """A tuple nested ``depth`` deep as a dict key, an entry's ``action`` or a frame's ``filename``."""
    if where == "key":
        return _PROTO + _EMPTY_DICT + _deep_tuple(depth) + b"K\x01s" + _STOP
    if where == "action":
        return _snapshot_with(_EMPTY_DICT + _MARK + _pstr("action") + _deep_tuple(depth) + _pstr("size") + b"K\x08u")
    frame = (
        _EMPTY_DICT
        + _MARK
        + _pstr("filename")
        + _deep_tuple(depth)
        + _pstr("line")
        + b"K\x01"
        + _pstr("name")
        + _pstr("f")
        + b"u"
    )
    return _snapshot_with(
        _EMPTY_DICT
        + _MARK
        + _pstr("action")
        + _pstr("alloc")
        + _pstr("size")
        + b"K\x08"
        + _pstr("frames")
        + _EMPTY_LIST
        + frame
        + b"a"
        + b"u"
    )


def doubling_tuple_pickle(levels: int) -> bytes:
    """``t(k+1) = (t(k), t(k))`` through the memo, as a dict key: 2^levels steps to hash."""
    body = b")\x94" + b"0"
    for k in range(levels):
        body += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86\x94" + b"0"
    return _PROTO + _EMPTY_DICT + body + b"h" + bytes([levels]) + b"K\x01s" + _STOP


def shared_frames_pickle(entries: int, frames: int) -> bytes:
    """``entries`` history entries that all reference ONE list of ``frames`` frames (the pickle memo
    keeps the file small: the review's 420 KB file had 200 000 entries and 10 000 frames)."""
    shared = [{"filename": f"/src/model_{i % 97}.py", "line": i, "name": f"fn_{i}"} for i in range(frames)]
    trace = [
        {
            "action": "alloc" if i % 2 == 0 else "free_completed",
            "addr": 4096 * (i // 2),
            "size": 512,
            "stream": 0,
            "time_us": i,
            "frames": shared,
        }
        for i in range(entries)
    ]
    return pickle.dumps({"segments": [], "device_traces": [trace]})


def _memo_get(slot: int) -> bytes:
    return b"h" + bytes([slot]) if slot < 256 else b"j" + struct.pack("<I", slot)


def shared_annotation_pickle(keys: int, refs: int) -> bytes:
    """The review's 952 KB file: one ``keys``-key annotation dict referenced ``refs`` times by BINGET,
    written without any MARK (EMPTY_DICT + SETITEM, EMPTY_LIST + APPEND), 3 bytes per reference."""
    body = (
        _PROTO
        + _EMPTY_DICT
        + b"\x94"
        + _pstr("segments")
        + _EMPTY_LIST
        + b"s"
        + _pstr("device_traces")
        + _EMPTY_LIST
        + b"s"
        + _pstr("external_annotations")
        + _EMPTY_LIST
        + b"\x94"
    )  # memo 0: top, 1: the list
    body += _EMPTY_DICT + b"\x94" + b"".join(_pstr(f"k{i}") + b"K\x01s" for i in range(keys)) + b"a"  # memo 2
    return body + (_memo_get(2) + b"a") * (refs - 1) + b"s" + _STOP


def shared_segment_pickle(blocks: int, refs: int) -> bytes:
    """The review's second file: one segment dict with ``blocks`` blocks referenced ``refs`` times."""
    block = (
        _EMPTY_DICT
        + _pstr("size")
        + b"K\x08s"
        + _pstr("address")
        + b"K\x00s"
        + _pstr("state")
        + _pstr("active_allocated")
        + b"s"
    )
    body = (
        _PROTO
        + _EMPTY_DICT
        + b"\x94"
        + _pstr("device_traces")
        + _EMPTY_LIST
        + b"s"
        + _pstr("segments")
        + _EMPTY_LIST
        + b"\x94"
    )  # memo 0: top, 1: the segments
    body += _EMPTY_DICT + b"\x94" + _pstr("blocks") + _EMPTY_LIST + (block + b"a") * blocks + b"s" + b"a"  # memo 2
    return body + (_memo_get(2) + b"a") * (refs - 1) + b"s" + _STOP


def memo_index_pickle(index: int) -> bytes:
    """The review's 89-byte file: a history entry referenced twice (the reader used to fall back to
    ``pickle``'s unpickler for it), then ``LONG_BINPUT index`` (that unpickler resizes its memo to it)."""
    entry = _EMPTY_DICT + b"\x94" + _pstr("action") + _pstr("alloc") + b"s" + _pstr("size") + b"K\x08s"
    return (
        _PROTO
        + _EMPTY_DICT
        + _pstr("segments")
        + _EMPTY_LIST
        + b"s"
        + _pstr("device_traces")
        + _EMPTY_LIST
        + _EMPTY_LIST
        + entry
        + b"a"
        + b"h\x00a"
        + b"r"
        + struct.pack("<I", index)
        + b"a"
        + b"s"
        + _STOP
    )


_WRONG = [None, "x", -1, 2**70, -(2**80), 1e308, float("nan"), [], [1, 2], {}, {"a": 1}, True, b"\xff", ("t",), 3.5]


def hostile_snapshot(rng: random.Random) -> bytes:
    """A snapshot dict with a wrong type in some fields of segments, blocks, entries and frames."""

    def val(good):
        return rng.choice(_WRONG) if rng.random() < 0.3 else good

    frames = [{"filename": val("/a.py"), "line": val(3), "name": val("f")} for _ in range(rng.randint(0, 3))]
    blocks = [
        {
            "address": val(4096),
            "size": val(512),
            "requested_size": val(500),
            "state": val("active_allocated"),
            "frames": val(frames),
        }
        for _ in range(rng.randint(0, 3))
    ]
    segments = [
        {
            "device": val(0),
            "address": val(4096),
            "total_size": val(2 << 20),
            "stream": val(0),
            "segment_type": val("large"),
            "blocks": val(blocks),
        }
        for _ in range(rng.randint(0, 3))
    ]
    entries = [
        val(
            {
                "action": val(rng.choice(["alloc", "free_completed", "segment_alloc", "oom"])),
                "addr": val(4096 * i),
                "size": val(512),
                "stream": val(0),
                "time_us": val(i),
                "frames": val(frames),
            }
        )
        for i in range(rng.randint(0, 20))
    ]
    doc = {
        "segments": val(segments),
        "device_traces": val([entries, val([])]),
        "external_annotations": val([{"stage": val("x"), "time_us": val(1)}]),
        "allocator_settings": val({"a": 1}),
    }
    return pickle.dumps(val(doc) if rng.random() < 0.1 else doc)


# -- traces -------------------------------------------------------------------------------------
def _trace(events: list, **top) -> bytes:
    return json.dumps(dict(top, traceEvents=events + GOOD_TRACE["traceEvents"])).encode()


def big_integer_trace(rng: random.Random) -> bytes:
    big = rng.choice([2**64, 2**64 + 1, 2**200, -(2**70), 10**40])
    slot = rng.randrange(5)
    if slot == 0:
        return _trace([], distributedInfo={"rank": big, "world_size": 2, "backend": "nccl"})
    if slot == 1:
        return _trace([], deviceProperties=[{"id": big, "name": "GPU", "totalGlobalMem": big}])
    if slot == 2:
        return _trace([], baseTimeNanoseconds=big)
    if slot == 3:
        return _trace([{"ph": "M", "name": "clock_sync_timestamp_us", "pid": 1, "tid": 1, "args": {"value": big}}])
    return _trace(
        [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::add",
                "pid": 1,
                "tid": 1,
                "ts": 20,
                "dur": 5,
                "args": {"big": big, "External id": big, "Sequence number": big},
            }
        ]
    )


def deep_args_trace(depth: int) -> bytes:
    """An op whose args nest ``depth`` deep (the text is spliced in: json.dumps would recurse)."""
    doc = _trace(
        [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::deep",
                "pid": 1,
                "tid": 1,
                "ts": 20,
                "dur": 5,
                "args": {"deep": "@DEEP@"},
            }
        ]
    )
    return doc.replace(b'"@DEEP@"', deep_nesting(depth).encode())


def nested_modules_trace(depth: int) -> bytes:
    """``depth`` ``nn.Module`` events each inside the one before (python_function events)."""
    events = [
        {
            "ph": "X",
            "cat": "python_function",
            "name": f"nn.Module: Layer_{i}",
            "pid": 1,
            "tid": 1,
            "ts": 10 + i * 0.001,
            "dur": 80 - i * 0.002,
            "args": {"Python id": i + 1, "Python parent id": i},
        }
        for i in range(depth)
    ]
    return _trace(events)


def begin_end_trace(n: int) -> bytes:
    events = [{"ph": "B", "name": f"b{i}", "pid": 1, "tid": 1, "ts": i} for i in range(n)]
    events += [{"ph": "E", "name": f"e{i}", "pid": 1, "tid": 1, "ts": n + i} for i in range(n)]
    return _trace(events)


def named_trace(rng: random.Random) -> bytes:
    names = rng.sample(ODD_NAMES, 4)
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": names[0],
            "pid": 1,
            "tid": 1,
            "ts": 20,
            "dur": 10,
            "args": {"External id": 9, "Input Dims": [[1, 2]], "Call stack": names[1]},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": names[2],
            "pid": 0,
            "tid": 7,
            "ts": 22,
            "dur": 5,
            "args": {"correlation": 5, "device": 0, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 21,
            "dur": 1,
            "args": {"correlation": 5, "External id": 9},
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": f"nn.Module: {names[3]}",
            "pid": 1,
            "tid": 1,
            "ts": 15,
            "dur": 30,
            "args": {"Python id": 1},
        },
        {
            "ph": "i",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 25,
            "args": {
                "Bytes": 512,
                "Addr": 4096,
                "Total Allocated": 512,
                "Total Reserved": 2048,
                "Device Type": 1,
                "Device Id": 0,
            },
        },
    ]
    return _trace(events)


# -- the stream -----------------------------------------------------------------------------------
def hostile_files(rng: random.Random) -> Iterator[tuple[str, str, bytes]]:
    """An endless stream of ``(label, file name, bytes)``; the name decides how the logdir reads it."""
    while True:
        k = rng.randrange(18)
        if k == 0:
            where, depth = rng.choice(["key", "action", "filename"]), rng.choice([1000, 100_000, 1_000_000])
            yield f"deep-tuple-{where}-{depth}", "snap_snapshot.pickle", deep_tuple_pickle(where, depth)
        elif k == 1:
            levels = rng.choice([16, 24, 40, 64])
            yield f"doubling-tuple-{levels}", "dbl_snapshot.pickle", doubling_tuple_pickle(levels)
        elif k == 2:
            entries = rng.choice([2000, 20_000, 200_000])
            yield f"shared-frames-{entries}", "shared_snapshot.pickle", shared_frames_pickle(entries, 2000)
        elif k == 15:
            keys, refs = rng.choice([(2000, 300_000), (200, 30_000), (2, 100)])
            yield f"shared-annotation-{keys}x{refs}", "ann_snapshot.pickle", shared_annotation_pickle(keys, refs)
        elif k == 16:
            blocks, refs = rng.choice([(1000, 340_000), (100, 3000), (1, 10)])
            yield f"shared-segment-{blocks}x{refs}", "seg_snapshot.pickle", shared_segment_pickle(blocks, refs)
        elif k == 17:
            index = rng.choice([750_000_000, 2**32 - 1, 300, 3])
            yield f"memo-index-{index}", "memo_snapshot.pickle", memo_index_pickle(index)
        elif k == 3:
            yield "hostile-snapshot", "odd_snapshot.pickle", hostile_snapshot(rng)
        elif k == 4:
            yield "zero-pickle", "zero_snapshot.pickle", b"\0" * rng.choice([1, 1 << 20])
        elif k == 5:
            mb = rng.choice([16, 64, 512])
            yield f"whitespace-bomb-{mb}", "w.pt.trace.json.gz", gzip_bomb(mb, b" ")
        elif k == 6:
            yield "bracket-bomb", "b.pt.trace.json.gz", gzip_bomb(rng.choice([64, 512]), b"[")
        elif k == 7:
            yield "export-bomb", "memory_timeline.raw.json.gz", gzip_bomb(rng.choice([64, 512]), b"[")
        elif k == 8:
            n = rng.choice([1000, 20_000, 60_000])
            yield f"begin-end-{n}", "be.pt.trace.json", begin_end_trace(n)
        elif k == 9:
            yield "big-integers", "big.pt.trace.json", big_integer_trace(rng)
        elif k == 10:
            yield "deep-args", "deep.pt.trace.json", deep_args_trace(rng.choice([300, 1000]))
        elif k == 11:
            yield "nested-modules", "mods.pt.trace.json", nested_modules_trace(rng.choice([300, 3000]))
        elif k == 12:
            yield "odd-names", rng.choice(["工作-😀.pt.trace.json", "n.pt.trace.json"]), named_trace(rng)
        elif k == 13:
            big = rng.choice([2**64, 2**200, -(2**70)])
            yaml = (
                f"0.training_step.1.start:\n  allocated_bytes.all.current: {big}\n"
                f"  reserved_bytes.all.peak: {rng.choice([1, big])}\n"
            ).encode()
            yield "yaml-big-int", "rank_0_memory_stats.yaml", yaml
        else:
            depth = rng.choice([100, 10_000, 100_000])
            yield f"yaml-deep-{depth}", "rank_0_memory_stats.yaml", ("a: " + "[" * depth + "]" * depth).encode()


# -- the property ---------------------------------------------------------------------------------
_TRACE_ROUTES = (
    "/overview",
    "/operators",
    "/operators.csv",
    "/operator_stacks",
    "/kernels",
    "/kernels.csv",
    "/modules",
    "/timeline_meta",
    "/timeline",
    "/timeline_search",
    "/timeline_event",
    "/memory",
    "/memory_events",
    "/memory_events.csv",
    "/memory_stats",
    "/memory_stats.csv",
    "/insights",
    "/distributed",
    "/critical_path",
    "/trace_file",
)
_ARTIFACT_ROUTES = (
    "/snapshot",
    "/snapshot_timeline",
    "/snapshot_segments",
    "/snapshot_allocations",
    "/snapshot_stack",
    "/memory_timeline_export",
    "/memprofiler_stats",
    "/memprofiler_log",
)


class Unhandled(AssertionError):
    """A route answered 5xx, without nosniff, or with a body that is not what it says."""


def _plugin_over(logdir: Path, cache_dir: Path):
    """The plugin's real route table over a registry this thread loads (no background threads)."""
    from tb_plugin.plugin import KinetoscopePlugin
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.runs import RunRegistry

    plugin = KinetoscopePlugin.__new__(KinetoscopePlugin)
    plugin._registry = RunRegistry(str(logdir), cache=ParseCache(str(cache_dir)))
    plugin._static = set()
    plugin._registry.scan()
    return plugin


def _get(client, route: str, query: dict) -> tuple[int, object]:
    resp = client.get("/data/plugin/kinetoscope" + route, query_string=query)
    body = resp.get_data()
    if resp.status_code >= 500 and route != "/trace_file":
        raise Unhandled(f"{route} {query}: {resp.status_code} {body[:300]!r}")
    if resp.headers.get("X-Content-Type-Options") != "nosniff":
        raise Unhandled(f"{route}: no nosniff header")
    ctype = resp.headers.get("Content-Type", "")
    if "json" in ctype:
        return resp.status_code, json.loads(body)
    if route.endswith(".csv") and resp.status_code == 200 and "csv" not in ctype:
        raise Unhandled(f"{route}: CSV answered as {ctype}")
    return resp.status_code, body


def exercise_files(files: list[tuple[str, bytes]], tmpdir: Path) -> dict:
    """Put ``files`` in run ``hostile`` beside run ``good`` (one good trace), load everything as the
    server does, and request every route for every file. Returns ``{file name: "ok" | "error"}``;
    raises :class:`Unhandled` (or any exception) when the property fails."""
    from werkzeug.test import Client
    from werkzeug.wrappers import Response

    logdir = tmpdir / "logdir"
    (logdir / "hostile").mkdir(parents=True)
    (logdir / "good").mkdir()
    (logdir / "good" / "g.pt.trace.json").write_text(json.dumps(GOOD_TRACE))
    for name, data in files:
        (logdir / "hostile" / name).write_bytes(data)
    plugin = _plugin_over(logdir, tmpdir / "cache")
    reg = plugin._registry
    apps = plugin.get_plugin_apps()

    def app(environ, start_response):
        route = environ["PATH_INFO"].removeprefix("/data/plugin/kinetoscope")
        handler = apps.get(route)
        return (handler or Response("no route", 404))(environ, start_response)

    client = Client(app)
    for state in list(reg._files.values()):
        reg.load(state)
    for art in reg.artifacts():
        reg.load_artifact(art)
    out = {}
    for state in list(reg._files.values()):
        query = {"run": state.run, "worker": state.worker, "span": state.span}
        for route in _TRACE_ROUTES:
            extra = {"start_us": "0", "end_us": "1000", "width_px": "400", "q": "a", "row": "0", "limit": "50"}
            _get(client, route, dict(query, **extra))
        out[state.entry.name] = "error" if state.error else "ok"
    for art in reg.artifacts():
        query = {"run": art.run, "path": art.entry.rel, "width_px": "200", "stack": "0", "limit": "20"}
        for route in _ARTIFACT_ROUTES:
            _get(client, route, query)
        out[art.entry.name] = "error" if art.error else "ok"
    good = reg.find("good", *next((s.worker, s.span) for s in reg._files.values() if s.run == "good"))
    code, doc = _get(client, "/overview", {"run": "good", "worker": good.worker, "span": good.span})
    if code != 200 or doc.get("state") != "ready":
        raise Unhandled(f"the good run stopped answering: {code} {str(doc)[:300]}")
    return out


def fuzz_environment() -> dict:
    """Environment bounds for a fuzz process: a 256 MiB read limit (bombs stop early) and a 3 s
    limit on the snapshot reader (the doubling tuple hangs until it)."""
    return {"KINETOSCOPE_MAX_TRACE_BYTES": str(256 << 20)}


def shorten_snapshot_time_limit(seconds: float = 3.0) -> None:
    from tb_plugin.artifacts import isolated

    isolated.BASE_TIME_S = seconds
    isolated.PER_MB_TIME_S = 0.5


__all__ = [
    "exercise_files",
    "hostile_files",
    "gzip_bomb",
    "Unhandled",
    "fuzz_environment",
    "shorten_snapshot_time_limit",
    "types",
]
