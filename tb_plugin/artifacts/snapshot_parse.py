"""An unpickled allocator snapshot parsed into column batches, and the packed form written from them.

:func:`parse_object` is the one parse of a snapshot's object (layouts: :mod:`.snapshot`'s docstring):
each device's history as column batches (:func:`~.snapshot_columns.trace_columns`: ``array``
buffers), the segments' blocks, the interned stacks and frames. :func:`~.snapshot.parse_snapshot`
joins the batches into numpy arrays; the reader child (:mod:`.snapshot_child`) writes them as they
are (:func:`answer_object`, :mod:`.answer`'s layout), so it never imports numpy.
"""

from __future__ import annotations

import itertools
import operator
import sys
from array import array
from typing import IO, Any, Callable

from ..trace import jsonsafe
from .packed_arrays import INT64
from .snapshot_columns import _FIELDS, StreamedTraces, _int, _list, _scalar, joined_rows, trace_columns
from .snapshot_stacks import Interner

_SLICE = 1 << 16  # history entries turned into columns at a time, when the history was read whole
_FREED = 4 * _SLICE  # ... and how many of them a reader child frees once turned into columns,
_FIRST = 1 << 14  # ... this many at a time
FORMAT = 2  # the packed form's ``format`` (the parse cache's and the reader child's answer)


class Parsed:
    """A snapshot's parse before its columns are joined: ``devices`` maps a device to its history's
    column batches (:func:`~.snapshot_columns.trace_columns`; devices with no entries left out). A plain
    class, not a dataclass: the reader child imports no ``dataclasses`` (nor its ``inspect``)."""

    def __init__(
        self,
        devices: dict[int, list[dict]],
        segments: list[dict],
        interner: Interner,
        annotations: list[dict],
        layout: str,
    ) -> None:
        self.devices = devices
        self.segments = segments  # as Snapshot.segments
        self.interner = interner  # the stacks and frames, in the order met (histories first, then the blocks)
        self.annotations = annotations  # cleaned (jsonsafe.clean)
        self.layout = layout


def not_a_snapshot(message: str) -> Exception:
    """The parse's refusal (:class:`~.isolated.SnapshotError`, imported only then)."""
    from .isolated import SnapshotError

    return SnapshotError(message)


def _whole_history(entries: list, stack_of: Callable[[Any], int], free: bool) -> list[dict]:
    """A history read whole as column batches of :data:`_SLICE` entries (small transients). ``free``:
    ``entries`` is only the caller's, and its first :data:`_FREED` entries are turned into columns
    :data:`_FIRST` at a time and dropped at once: the memory they free holds the parse's transients
    and the columns, so that the parse adds little to the peak of the read (freeing them all would
    cost ~1 s per 10⁶ entries, the interpreter's deallocation)."""
    if set(map(type, entries)) - {dict}:  # (the common case, dicts only, checked at C speed)
        entries = [e for e in entries if isinstance(e, dict)]
    batches = []
    i = 0
    while i < len(entries):
        freeing = free and i < _FREED
        step = _FIRST if freeing else _SLICE
        batches.append(trace_columns(entries[i : i + step], stack_of))
        if freeing:
            entries[i : i + step] = itertools.repeat(None, len(entries[i : i + step]))
        i += step
    return batches


def parse_object(obj: Any, streamed: StreamedTraces | None = None, consume: bool = False) -> Parsed:
    """The snapshot in the unpickled ``obj`` (see :func:`~.snapshot.parse_snapshot`: ``streamed``,
    ``consume``); :class:`~.isolated.SnapshotError` when it is not one."""
    interner = streamed.interner if streamed is not None else Interner()
    stack_of = interner.stack_of
    traces_raw: Any  # the device traces as the file has them (checked below)
    if isinstance(obj, list):
        layout, segments_raw, traces_raw, annotations = "segments-only", obj, [], []
    elif isinstance(obj, dict) and ("segments" in obj or "device_traces" in obj):
        layout = "snapshot"
        segments_raw = obj.get("segments") or []
        traces_raw = obj.get("device_traces") or []
        annotations = _list(obj.get("external_annotations")) + _list(obj.get("user_metadata"))
    else:
        raise not_a_snapshot(
            "not a CUDA allocator snapshot: expected a dict with 'segments'/'device_traces' or a list of segments"
        )
    if not isinstance(segments_raw, list) or not isinstance(traces_raw, list):
        raise not_a_snapshot("not a CUDA allocator snapshot: 'segments' and 'device_traces' must be lists")
    devices: dict[int, list[dict]] = {}
    # histories first (a streamed read interned their stacks while reading), then the segments' blocks
    for dev in range(len(traces_raw)):  # (not enumerate: its tuple would hold one more reference)
        entries = traces_raw[dev]
        batches = streamed.of(entries) if streamed is not None else None
        if batches is None:
            if not isinstance(entries, list):
                continue
            # given away, and referred to by this list alone (and ``entries``, and getrefcount's argument)
            free = consume and sys.getrefcount(entries) == 3
            batches = _whole_history(entries, stack_of, free)
        if batches and sum(b["n"] for b in batches):
            devices[dev] = batches
    segments = [_segment(seg, stack_of) for seg in segments_raw if isinstance(seg, dict)]
    # frame fields and annotations are kept as written: integers beyond 64 bits become decimal strings and
    # nesting deeper than jsonsafe.MAX_DEPTH a marker now, so a snapshot reads the same from the cache
    annotations = _cleaned([a for a in annotations if isinstance(a, dict)])
    return Parsed(devices, segments, interner, annotations, layout)


def _cleaned(values: list) -> list:
    """:func:`~tb_plugin.trace.jsonsafe.clean` of ``values``, or ``values`` itself where that is equal
    (:func:`~tb_plugin.trace.jsonsafe.plain_values`: no orjson imported for it)."""
    return values if jsonsafe.plain_values(values) else jsonsafe.clean(values)


def _plain_frames(frames: list[dict]) -> bool:
    """:func:`~tb_plugin.trace.jsonsafe.plain_values` of the interner's frames (each a dict of
    ``filename``, ``line``, ``name``, as it builds them) in C-level passes: text without lone
    surrogates for the file and function, an integer within 64 bits for the line."""
    if not frames:
        return True
    texts = list(map(operator.itemgetter("filename"), frames)) + list(map(operator.itemgetter("name"), frames))
    lines = list(map(operator.itemgetter("line"), frames))
    if set(map(type, texts)) != {str} or set(map(type, lines)) != {int}:
        return False
    try:
        "".join(texts).encode("utf-8")  # (any surrogate code point refused, as orjson refuses it)
    except UnicodeEncodeError:
        return False
    return jsonsafe.plain_values(min(lines)) and jsonsafe.plain_values(max(lines))


def _segment(seg: dict, stack_of: Callable[[Any], int]) -> dict:
    """One segment record (Snapshot.segments) of the file's segment dict."""
    blocks = []
    next_address = _int(seg.get("address", 0))  # a block without "address" follows the one before it
    for b in _list(seg.get("blocks")):
        if not isinstance(b, dict):
            continue
        address = _int(b.get("address", next_address))
        size = _int(b.get("size", 0))
        blocks.append(
            {
                "address": address,
                "size": size,
                "requested_size": _int(b.get("requested_size", size)),
                "state": str(b.get("state", "")),
                "stack": stack_of(b.get("frames")),
            }
        )
        next_address = _int(address + size)
    return {
        "device": _int(seg.get("device", 0)),
        "address": _int(seg.get("address", 0)),
        "total_size": _int(seg.get("total_size", 0)),
        "stream": _scalar(seg.get("stream")),
        "segment_type": _scalar(seg.get("segment_type")),
        "blocks": blocks,
    }


def packed_header(
    segments: list[dict],
    frames: list[dict],
    annotations: list[dict],
    has_time: bool,
    layout: str,
    devices: list[int],
    ooms: list[dict],
    segment_streams: list[dict],
) -> dict:
    """The packed form's JSON header (the arrays: :func:`stack_arrays` and each device's columns)."""
    return {
        "format": FORMAT,
        "segments": segments,
        "frames": frames,
        "annotations": annotations,
        "has_time": has_time,
        "layout": layout,
        "devices": sorted(devices),
        "ooms": ooms,
        "segment_streams": segment_streams,
    }


def stack_arrays(stacks: list[list[int]]) -> tuple[array, array]:
    """The interned stacks as ``stack_lengths`` (int64 frames per stack) and ``stack_frames`` (int32
    frame indices, the stacks one after the other)."""
    return array(INT64, map(len, stacks)), array("i", itertools.chain.from_iterable(stacks))


def packed(parsed: Parsed) -> tuple[dict, dict[str, list]]:
    """The packed form of ``parsed`` as :func:`~.snapshot.pack_snapshot` gives it, each array as the
    list of its batches' buffers (:func:`~.answer.write_answer` writes them one after the other)."""
    ooms: list[dict] = []
    segment_streams: list[dict] = []
    has_time = False
    for dev, batches in parsed.devices.items():
        dev_ooms, dev_streams, timed = joined_rows(batches, dev)
        ooms += dev_ooms
        segment_streams += dev_streams
        has_time = has_time or timed
    frames = parsed.interner.frames
    frames = frames if _plain_frames(frames) else jsonsafe.clean(frames)
    header = packed_header(
        parsed.segments,
        frames,
        parsed.annotations,
        has_time,
        parsed.layout,
        list(parsed.devices),
        ooms,
        segment_streams,
    )
    arrays: dict[str, list] = {
        f"{d}.{f}": [b["cols"][f] for b in batches] for d, batches in parsed.devices.items() for f in _FIELDS
    }
    lengths, stack_frames = stack_arrays(parsed.interner.stacks)
    arrays["stack_lengths"], arrays["stack_frames"] = [lengths], [stack_frames]
    return header, arrays


def answer_object(obj: Any, memory: int, streamed: StreamedTraces | None, out: IO[bytes] | None = None) -> int:
    """In the reader child (:mod:`.snapshot_child`): write the packed snapshot of the object a whole
    read from the pipe built (``streamed``: its histories turned into columns while reading,
    :mod:`.drain`) to stdout (``out``), then end the process; a refused file's message to stderr
    (:data:`~.child_terms.EXIT_REFUSED`). Its :class:`MemoryError` is raised (the pipe is consumed:
    the parent sends the file again)."""
    from .answer import write_answer
    from .child_terms import EXIT_REFUSED, child_exit

    # (``obj`` stays referred to here: the child ends by child_exit, its millions of objects never freed)
    try:
        header, arrays = packed(parse_object(obj, streamed, consume=True))
        body = header_json(header)
    except MemoryError:
        raise
    except Exception as exc:
        from .isolated import SnapshotError  # (imported only here: the refusals that :mod:`.snapshot` lists)

        # (orjson's JSONEncodeError is a TypeError)
        if not isinstance(exc, (SnapshotError, TypeError, ValueError, OverflowError, RecursionError)):
            raise
        sys.stderr.write(refusal(exc, memory))
        return EXIT_REFUSED
    out = sys.stdout.buffer if out is None else out
    write_answer(out, body, arrays)
    out.flush()
    # the answer is written: the millions of objects a whole read built are not freed one by one, and the
    # status is said first (a parent waiting on it takes the answer before the kernel frees this memory)
    child_exit(0)


def header_json(header: dict) -> bytes:
    """The packed header (:func:`packed`'s) as JSON that reads back as ``jsonsafe.dumps``'s: by the
    standard library's encoder where it may be (no NaN or infinity, no lone surrogate, nothing but JSON's
    types; the header's integers are within 64 bits and its keys text by construction, the frames and
    annotations :func:`_cleaned`), else by ``jsonsafe.dumps`` (orjson imported then)."""
    import json

    try:
        text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # (UnicodeEncodeError is a ValueError)
        import orjson

        return jsonsafe.dumps(header, option=orjson.OPT_SERIALIZE_NUMPY)


def refusal(exc: BaseException, memory: int) -> str:
    """The reader child's message for a refused file (``memory``: its address-space limit, bytes)."""
    from .isolated import SnapshotError

    if isinstance(exc, SnapshotError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return (
            f"reading this pickle needed more than {memory >> 20} MB of memory, the reader's limit for its "
            "size: not a memory snapshot (a hostile or corrupt file?)"
        )
    return f"not a memory snapshot: {type(exc).__name__}: {exc}"
