"""CUDA caching-allocator snapshots (``torch.cuda.memory._dump_snapshot``) as columns.

Layouts accepted (all that PyTorch has written):
- a dict with ``segments`` and ``device_traces`` (one list of entries per device), optionally
  ``allocator_settings`` and ``external_annotations`` (current);
- the same with empty ``device_traces`` (history not recorded);
- a bare list of segments (``torch.cuda.memory_snapshot()``);
- entries without ``time_us`` (older): the timeline then runs on the entry index.
Entry actions: ``alloc``, ``free_requested``, ``free_completed`` (older: ``free``), ``segment_alloc``,
``segment_free``, ``segment_map``, ``segment_unmap``, ``snapshot``, ``oom``.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import struct
import sys
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import orjson

from ..trace import jsonsafe
from . import expansion, pickle_stream, whole_read
from .answer import write_answer
from .child_terms import EXIT_REFUSED, child_exit
from .isolated import (
    SHARED_CHILD,
    SHARED_MAX_BYTES,
    SnapshotError,
    Started,
    cpu_limit_for,
    parse_blocks_in_child,
    parse_file_in_child,
    parse_in_child,
    parse_started,
    read_many_in_child,
    read_shared,
    unpack_answer,
)
from .snapshot_columns import (  # noqa: F401 - imported from here by the analyses
    _FIELDS,
    ACTIONS,
    DeviceTrace,
    StreamedTraces,
    _int,
    _list,
    _scalar,
    joined,
    trace_columns,
)
from .snapshot_parse import FORMAT, packed_header, parse_object, refusal, stack_arrays
from .unpickle import PICKLE_OPCODES, RefusedPickle, load_whole, restricted_loads


@dataclasses.dataclass
class Snapshot:
    devices: dict[int, DeviceTrace]
    segments: list[dict]  # {device, address, total_size, stream, segment_type, blocks: [{address, size, state, stack}]}
    stacks: list[list[int]]  # interned stacks: lists of indices into ``frames``
    annotations: list[dict]  # external_annotations / user_metadata
    has_time: bool
    layout: str
    frames: list[dict] = dataclasses.field(default_factory=list)  # unique {filename, line, name}
    # per ``oom`` entry: {device, index (its row in that device's trace), device_free (bytes CUDA reported
    # free; PyTorch writes it instead of ``addr``), stream}
    ooms: list[dict] = dataclasses.field(default_factory=list)
    # per segment_alloc/segment_free/segment_map/segment_unmap entry: {device, index, stream}
    segment_streams: list[dict] = dataclasses.field(default_factory=list)

    def stack_frames(self, index: int) -> list[dict] | None:
        if not 0 <= index < len(self.stacks):
            return None
        return [self.frames[i] for i in self.stacks[index]]


def load_snapshot(data: bytes) -> Snapshot:
    """The snapshot in the pickle ``data``, read in a child process under limits (:mod:`.isolated`):
    no snapshot is ever unpickled in this process."""
    _check_first_byte(data)
    if SHARED_CHILD and len(data) <= SHARED_MAX_BYTES:  # a small file: the shared child, started once
        got = read_shared(data, "snapshot")
        if isinstance(got, SnapshotError):
            raise got
        return _unpacked(unpack_answer(got))
    return _unpacked(parse_in_child(data))


def load_snapshot_blocks(blocks: Iterable, size: int, started: Started | None = None) -> Snapshot:
    """:func:`load_snapshot` of the pickle that ``blocks`` (bytes-like, in order) make up, written to the
    reader child block by block (:func:`~.isolated.parse_blocks_in_child`): this process never holds
    the file. ``size``: the file's size in bytes. ``started``: a child already reading that file
    (:mod:`.early`): its answer (``blocks`` are read only if it asks for the file again, streamed)."""
    again = None if isinstance(blocks, Iterator) else blocks  # iterable twice: sent again if need be
    if started is not None:
        return _unpacked(parse_started(started, size, again))
    it = iter(blocks)
    head: list = []
    total = 0
    for block in it:  # the first SHARED_MAX_BYTES (inflated): a small file goes to the shared child
        head.append(block)
        total += len(block)
        if total > SHARED_MAX_BYTES:
            break
    else:
        return load_snapshot(b"".join(head))
    _check_first_byte(head[0])
    return _unpacked(parse_blocks_in_child(itertools.chain(head, it), max(size, total), again))


def load_snapshot_file(file: IO[bytes], size: int, again: Iterable | None = None) -> Snapshot:
    """:func:`load_snapshot_blocks` of the pickle in the local ``file`` (``size`` bytes:
    :func:`~.file_send.open_pickle`), which the reader child reads without this process holding any of it
    (:func:`~.isolated.parse_file_in_child`); ``again``: the file's blocks, sent to a streaming child if the
    whole read runs out of memory."""
    return _unpacked(parse_file_in_child(file, size, again))


def load_snapshots(datas: Sequence[bytes]) -> list[Snapshot | SnapshotError]:
    """:func:`load_snapshot` of each pickle in ``datas``, all read by one child (its start paid once;
    :func:`~.isolated.read_many_in_child`): the snapshot or that file's :class:`SnapshotError`."""
    out: list[Snapshot | SnapshotError] = [None] * len(datas)  # type: ignore[list-item]
    todo = []
    for i, data in enumerate(datas):
        try:
            _check_first_byte(data)
            todo.append(i)
        except SnapshotError as exc:
            out[i] = exc
    for i, got in zip(todo, read_many_in_child([datas[i] for i in todo], "snapshot")):
        try:
            out[i] = got if isinstance(got, SnapshotError) else _unpacked(unpack_answer(got))
        except SnapshotError as exc:
            out[i] = exc
    return out


def _unpacked(packed: tuple[dict, dict]) -> Snapshot:
    snap = unpack_snapshot(*packed)
    if snap is None:
        raise SnapshotError("the snapshot reader answered an unknown format")
    return snap


def _check_first_byte(data) -> None:
    if bytes(data[:1]) not in PICKLE_OPCODES:  # e.g. a sparse file's zero bytes: refused before any work
        raise SnapshotError(
            f"not a pickle: it starts with byte {bytes(data[:1]).hex() or '(none: empty)'}, which no pickle starts with"
        )


def parse_pickle(data: bytes, stream: bool | None = None) -> Snapshot:
    """Read (restricted) and parse ``data`` in this process: only for pickles that :func:`load_snapshot`
    has cleared, or inside the child of :mod:`.isolated`. ``stream`` None: in a reader child whose
    address-space limit holds the whole object (:func:`~.whole_read.fits`), ``pickle``'s C unpickler,
    restricted (:func:`_read_whole`); otherwise, or when that runs out of memory, the streaming reader
    (:mod:`.pickle_stream`: the histories become columns batch by batch while reading, their dicts
    never all alive). ``stream`` True: streamed; False: the streaming reader's whole value."""
    return _parse_owned([data], stream)


def _parse_owned(box: list, stream: bool | None = None) -> Snapshot:
    """:func:`parse_pickle` of ``box``'s one item, which it takes out: the pickle's bytes are freed once
    read, before the parse (a whole read that runs out of memory reads them again, streamed)."""
    if stream is None and whole_read.fits(len(box[0])):
        try:
            obj = _read_whole(box[0])
        except MemoryError:  # past the child's address space: read again by the streaming reader
            obj = None
        else:
            box.clear()
            return parse_snapshot(obj)  # (its MemoryError, past the estimate's margin: the file's error)
    return parse_snapshot(*_read_streamed(box.pop(), stream))


def _read_whole(data: bytes) -> Any:
    """The object in ``data`` by ``pickle``'s C unpickler, restricted (:func:`~.unpickle.load_whole`:
    it sizes its memo from the file, so ``LONG_BINPUT 750000000`` is a :class:`MemoryError` under the
    child's limit), bounded after memo expansion by :func:`~.whole_read.check_snapshot`."""
    try:
        obj = load_whole(data)
        whole_read.check_snapshot(obj, len(data))
    except (RefusedPickle, expansion.TooManyObjects) as exc:
        raise SnapshotError(str(exc)) from None
    return obj


def _read_streamed(data: bytes | bytearray, stream: bool | None = None) -> tuple[Any, StreamedTraces | None]:
    """The object in ``data`` with its histories as columns; a file that shares a history entry
    (:class:`~.pickle_stream.SharedEntry`) is read whole by the same reader without handing its
    entries on (then no columns yet: None), and so is any pickle when ``stream`` is False. Never
    ``pickle``'s own unpickler. The value is refused past :func:`~.expansion.object_limit` objects after
    shared references are expanded (:func:`~.expansion.check`)."""
    streamed: StreamedTraces | None = StreamedTraces()
    try:
        try:
            if stream is False:
                raise pickle_stream.SharedEntry("read whole")
            obj = pickle_stream.read(data, streamed)
        except pickle_stream.SharedEntry:
            obj, streamed = pickle_stream.read(data), None
        expansion.check(obj, len(data))
    except (RefusedPickle, expansion.TooManyObjects) as exc:
        raise SnapshotError(str(exc)) from None
    return obj, streamed


def parse_pickle_whole(data: bytes) -> Snapshot:
    """:func:`parse_pickle` the way it was first written: ``pickle``'s own unpickler (restricted)
    builds the whole object, then it is parsed. The reference the streamed read is tested and
    benchmarked against."""
    try:
        obj = restricted_loads(data)
    except RefusedPickle as exc:
        raise SnapshotError(str(exc)) from None
    return parse_snapshot(obj)


def parse_snapshot(obj: Any, streamed: StreamedTraces | None = None, consume: bool = False) -> Snapshot:
    """The snapshot in the unpickled ``obj``; ``streamed``: the histories already turned into
    columns while reading (:func:`parse_pickle`), for the lists that hold them. ``consume``: ``obj``
    is the caller's to give away (a reader child's whole read): the parse frees history entries as it
    goes (:func:`~.snapshot_parse._whole_history`), and ``obj``'s histories are gone after it. The
    parse is :func:`~.snapshot_parse.parse_object`'s; here each device's batches become numpy arrays."""
    parsed = parse_object(obj, streamed, consume)
    devices: dict[int, DeviceTrace] = {}
    ooms: list[dict] = []
    segment_streams: list[dict] = []
    has_time = False
    for dev, batches in parsed.devices.items():
        devices[dev], dev_ooms, dev_streams, timed = joined(batches, dev)
        ooms += dev_ooms
        segment_streams += dev_streams
        has_time = has_time or timed
    interner = parsed.interner
    return Snapshot(
        devices,
        parsed.segments,
        interner.stacks,
        parsed.annotations,
        has_time,
        parsed.layout,
        jsonsafe.clean(interner.frames),
        ooms,
        segment_streams,
    )


def pack_snapshot(snap: Snapshot) -> tuple[dict, dict]:
    """A snapshot as a JSON header plus flat arrays, for the parse cache (the reader child's answer
    holds the same: :func:`~.snapshot_parse.packed`)."""
    header = packed_header(
        snap.segments,
        snap.frames,
        snap.annotations,
        snap.has_time,
        snap.layout,
        list(snap.devices),
        snap.ooms,
        snap.segment_streams,
    )
    arrays = {f"{d}.{f}": getattr(t, f) for d, t in snap.devices.items() for f in _FIELDS}
    lengths, frames = stack_arrays(snap.stacks)
    arrays["stack_lengths"] = np.frombuffer(lengths, dtype=np.int64)
    arrays["stack_frames"] = np.frombuffer(frames, dtype=np.int32)
    return header, arrays


def unpack_snapshot(header: dict, arrays: dict) -> Snapshot | None:
    if header.get("format") != FORMAT:
        return None
    devices = {int(d): DeviceTrace(**{f: arrays[f"{d}.{f}"] for f in _FIELDS}) for d in header["devices"]}
    flat = arrays["stack_frames"].tolist()
    bounds = np.concatenate([[0], np.cumsum(arrays["stack_lengths"])]).tolist()
    stacks = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return Snapshot(
        devices,
        header["segments"],
        stacks,
        header["annotations"],
        header["has_time"],
        header["layout"],
        header["frames"],
        header.get("ooms") or [],
        header.get("segment_streams") or [],
    )


def _stdin(argv: list[str]) -> bytearray:
    """All of stdin, read into one buffer of the size in ``argv[0]`` (reading to the end would hold the
    chunks and their join: twice the file), grown by a quarter when more comes (a gzip file's guess)."""
    size = int(argv[0]) if argv and argv[0].isdigit() else 1 << 20
    buf = bytearray(max(size, 1))
    got = 0
    while True:
        if got == len(buf):  # full: grown only if more comes
            more = sys.stdin.buffer.read(1 << 16)
            if not more:
                break
            buf += more
            buf += bytes(len(buf) // 4)
            got += len(more)
        with memoryview(buf) as view:
            n = sys.stdin.buffer.readinto(view[got:])  # type: ignore[union-attr]  # (a BufferedReader)
        if not n:
            break
        got += n
    del buf[got:]
    return buf


def _packed_answer(data) -> bytes:
    """The answer (:mod:`.answer`: JSON header and raw arrays) of the snapshot in the pickle ``data``."""
    header, arrays = pack_snapshot(parse_pickle(data))
    out = io.BytesIO()
    write_answer(out, jsonsafe.dumps(header, option=orjson.OPT_SERIALIZE_NUMPY), arrays)
    return out.getvalue()


def _plain_json(data) -> bytes:
    """The restricted reader's value of the pickle ``data`` as JSON (:func:`~..trace.jsonsafe.clean`'s form)."""
    try:
        obj = pickle_stream.read(data)
        expansion.check(obj, len(data))
    except (RefusedPickle, expansion.TooManyObjects) as exc:
        raise SnapshotError(str(exc)) from None
    return jsonsafe.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS, default=str)


_REFUSALS = (SnapshotError, orjson.JSONEncodeError, TypeError, ValueError, OverflowError, RecursionError, MemoryError)


def batch_main(mode: str, memory: int) -> None:
    """Answer each length-prefixed pickle on stdin (see :func:`~.isolated.read_many_in_child`)."""
    read_one = _packed_answer if mode == "snapshot" else _plain_json
    length = struct.Struct("<Q")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(length.size)
        if len(head) < length.size:
            return
        data = stdin.read(length.unpack(head)[0])
        cpu_limit_for(len(data))
        try:
            status, payload = 0, read_one(data)
        except _REFUSALS as exc:
            status, payload = 1, refusal(exc, memory).encode()
        del data
        stdout.write(bytes([status]) + length.pack(len(payload)))
        stdout.write(payload)
        stdout.flush()


def _answer(read: Callable[[], Snapshot], memory: int) -> int:
    """In the reader child: write the packed snapshot that ``read`` gives (:mod:`.answer`) to stdout, then end
    the process; a refused file's message to stderr (:data:`~.child_terms.EXIT_REFUSED`). (A whole read
    from the pipe answers by :func:`~.snapshot_parse.answer_object`.)"""
    try:  # the file's bytes (and the reader's memo) are freed before the columns are joined and written
        header, arrays = pack_snapshot(read())
        body = jsonsafe.dumps(header, option=orjson.OPT_SERIALIZE_NUMPY)
    except _REFUSALS as exc:
        sys.stderr.write(refusal(exc, memory))
        return EXIT_REFUSED
    write_answer(sys.stdout.buffer, body, arrays)  # each array's memory written as it is
    sys.stdout.buffer.flush()
    child_exit(0)  # the answer is written: the millions of objects a whole read built are not freed one by one


def answer_stdin(argv: list[str], memory: int, stream: bool | None) -> int:
    """:func:`_answer` for the pickle on stdin, read into one buffer first (``argv[0]``: its size), then
    :func:`parse_pickle` with ``stream``."""
    return _answer(lambda: _parse_owned([_stdin(argv)], stream), memory)
