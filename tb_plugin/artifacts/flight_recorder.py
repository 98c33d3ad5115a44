"""PyTorch flight-recorder dumps (the per-rank ring buffer of collectives that NCCL, and Gloo in recent
versions, write on a timeout) read into compact per-rank records.

A dump is recognized by its content (:func:`~tb_plugin.storage.sniff.looks_like_flight_recorder`): a pickle
(protocols 2–5) or JSON of a dict with ``version`` and ``pg_config`` or ``entries``. Pickles are read by the
restricted reader (:func:`~.unpickle.restricted_loads`: containers and scalars only, every global refused) in
a child process under the snapshot reader's memory and CPU limits for each dump's size (:func:`read_pickles`,
:func:`~.isolated.cpu_limit_for`): a job's dumps share one child; a dump that crashes it or runs out of time is that file's
error and the child is started again for the others. JSON is read here by orjson.

:func:`extract` turns the dump's dict into a :data:`Record`: numpy columns (one item per entry; int64,
−1 where a value is missing or of the wrong type; ``is_p2p`` bool), sent from the child packed
(:func:`pack_record`)::

    {"version": str, "rank": int | None, "rank_from": "field" | "name" | None,
     "pg_config": {name: {"desc": str, "ranks": [int] | None}},
     "pg_status": {pg_id (str): [last enqueued, started, completed]  (collective seq ids, -1: none)},
     "entries": {"record_id", "pg_id", "seq", "p2p_seq", "is_p2p", "created_ns", "started_ns",
                 "completed_ns" (ns; -1: not recorded), "timeout_ms", "stack" (index in "stacks" or -1),
                 and, as indices into "vocab"[column]: "pg_name", "pg_desc", "op", "state",
                 "sizes" (input and output sizes as JSON text), "dtypes" (same)},
     "vocab": {column: [distinct values]}, "stacks": [["name (file:line)", ...], ...]}

Strings are cut to :data:`MAX_TEXT` characters, values of the wrong type become None (−1 in a column).
"""

from __future__ import annotations

import gc
import operator
import re
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any, Iterable, cast

import numpy as np
import orjson

from ..storage.sniff import looks_like_flight_recorder as looks_like_dump  # noqa: F401 - the recognizer
from . import expansion
from .isolated import apply_limits, cpu_limit_for, memory_limit_bytes, start_child, time_limit_s
from .unpickle import RefusedPickle, restricted_loads

MAX_TEXT = 200  # characters kept of any string from a dump (names, ops, frames)
MAX_FRAMES = 32  # frames kept per entry (innermost first, as recorded)
MAX_RANK = 1 << 24  # ranks and group members at or above are not ranks (bounds what a dump can make us list)
MAX_GROUP_RANKS = 1 << 17  # ranks kept of one pg_config entry
STATES = ("scheduled", "started", "completed")
CODED = ("pg_name", "pg_desc", "op", "state", "sizes", "dtypes")  # entry columns kept as indices into "vocab"
_TRAILING_NUMBER = re.compile(r"(\d{1,9})(?:\.[A-Za-z]+)?$")
_LEN = struct.Struct("<Q")

Record = dict  # the compact per-rank dump (see the module docstring)


class DumpError(Exception):
    """The file is not a readable flight-recorder dump. The message is shown as is."""


def rank_from_name(name: str) -> int | None:
    """The trailing number of a file name (``nccl_trace_rank_12`` → 12, ``fr_rank_3.json`` → 3)."""
    m = _TRAILING_NUMBER.search(name)
    return int(m.group(1)) if m and int(m.group(1)) < MAX_RANK else None


def _text(value) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) else None


def _int(value) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        return int(value)
    return None


def _ranks(value) -> list[int] | None:
    """``pg_config``'s ranks: a list of ints or its text (``"[0, 1]"``); None when unknown or empty."""
    if isinstance(value, str):
        value = _rank_text(value) if len(value) < 1 << 20 else None
    if not isinstance(value, (list, tuple)):
        return None
    try:  # all plain integers (PyTorch's form): at C speed
        arr = np.array(value[:MAX_GROUP_RANKS])
        if arr.dtype == np.int64 and arr.ndim == 1:
            return np.unique(arr[(arr >= 0) & (arr < MAX_RANK)]).tolist() or None
    except (TypeError, ValueError, OverflowError):
        pass
    ranks = sorted({v for v in (_int(v) for v in value[:MAX_GROUP_RANKS]) if v is not None and 0 <= v < MAX_RANK})
    return ranks or None


def _rank_text(value: str) -> list:
    """The ranks in ``pg_config``'s text form (``"[0, 1, 2]"``), as JSON when it is a list of them."""
    try:
        got = orjson.loads(value)
        if isinstance(got, list):
            return got
    except orjson.JSONDecodeError:
        pass
    return [_int(v) for v in value.strip("[] ").split(",") if v.strip()]


def _json_text(value) -> str:
    """Sizes or dtypes as compact JSON text (the key that mismatches compare); ``?`` when unreadable."""
    try:
        return orjson.dumps(value).decode()[:MAX_TEXT]
    except (TypeError, orjson.JSONEncodeError):
        return "?"


def _stack(frames, stacks: dict[tuple, int]) -> int:
    if not isinstance(frames, list) or not frames:
        return -1
    lines = []
    for f in frames[:MAX_FRAMES]:
        if isinstance(f, dict):
            lines.append(
                f"{_text(f.get('name')) or '?'} ({_text(f.get('filename')) or '?'}:{_int(f.get('line')) or 0})"
            )
    key = tuple(lines)
    return stacks.setdefault(key, len(stacks)) if key else -1


_INT_FIELDS = (
    ("record_id", "record_id"),
    ("pg_id", "pg_id"),
    ("seq", "collective_seq_id"),
    ("p2p_seq", "p2p_seq_id"),
    ("created_ns", "time_created_ns"),
    ("started_ns", "time_discovered_started_ns"),
    ("completed_ns", "time_discovered_completed_ns"),
    ("timeout_ms", "timeout_ms"),
)


_FIELDS = tuple(f for _, f in _INT_FIELDS) + (
    "is_p2p",
    "process_group",
    "profiling_name",
    "state",
    "input_sizes",
    "output_sizes",
    "input_dtypes",
    "output_dtypes",
    "frames",
)
_GET = operator.itemgetter(*_FIELDS)


def _columns(entries: list[dict]) -> list:
    """One list per field of :data:`_FIELDS` (None where an entry lacks it): a C-speed transpose when
    every entry has every field, else one ``get`` per entry and field."""
    if not entries:
        return [[] for _ in _FIELDS]
    try:
        return [list(c) for c in zip(*map(_GET, entries))]
    except KeyError:
        return [[e.get(f) for e in entries] for f in _FIELDS]


def _int_column(values: list) -> np.ndarray:
    """int64 of ``values`` (-1 for None or anything not an integer); whole-list fast path."""
    try:
        arr = np.array(values)
        if arr.dtype == np.int64 and arr.ndim == 1:  # all plain integers (floats, text, None: one by one)
            return arr
    except (TypeError, ValueError, OverflowError):
        pass
    return np.array([-1 if (x := _int(v)) is None else x for v in values], dtype=np.int64)


def _group_key(value):
    """``process_group`` as (name, description) texts."""
    if not isinstance(value, (list, tuple)):
        return (None, None)
    return (_text(value[0]) if len(value) > 0 else None, _text(value[1]) if len(value) > 1 else None)


def _codes(values: list, clean) -> tuple[np.ndarray, list]:
    """(index of each value in the vocabulary, the vocabulary of ``clean(value)``): each distinct value
    is cleaned once; values that cannot be hashed (lists) are all cleaned first."""
    seen: dict = {}
    try:
        raw = [seen.setdefault(v, len(seen)) for v in values]
    except TypeError:  # a list among them: clean every value, then number the clean ones
        values, seen, clean = [clean(v) for v in values], {}, (lambda v: v)
        raw = [seen.setdefault(v, len(seen)) for v in values]
    vocab: dict = {}
    lut = np.array([vocab.setdefault(clean(v), len(vocab)) for v in seen] or [0], dtype=np.int64)
    return lut[np.array(raw, dtype=np.int64)] if raw else np.zeros(0, np.int64), list(vocab)


def _json_texts(pairs: Iterable, budget: int | None) -> list[str]:
    """:func:`_json_text` of each pair; ``budget``: the most JSON characters written for them all (a list
    shared by memo references is written again for each entry that refers to it: past the budget the
    dump is a :class:`DumpError` naming the bound)."""
    if budget is None:
        return list(map(_json_text, pairs))
    out = []
    for value in pairs:
        try:
            text = orjson.dumps(value).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = "?"
        budget -= len(text)
        if budget < 0:
            raise DumpError(
                "this dump's sizes and dtypes expand past the bound for its size through shared references "
                f"({expansion.OBJECTS_PER_BYTE} characters per byte, at least {expansion.OBJECTS_FLOOR:,}): "
                "not a flight-recorder dump (a hostile or corrupt file?)"
            )
        out.append(text[:MAX_TEXT])
    return out


def extract(dump: Any, name: str = "", size: int | None = None) -> Record:
    """The :data:`Record` of a loaded dump (a dict); ``name``: the file name, for the rank when the
    dump has no ``rank``; ``size``: the pickle's size in bytes when it was unpickled (shared references
    then bound the texts written, :func:`_json_texts`). Raises :class:`DumpError` when ``dump`` is not a
    flight-recorder dump."""
    if not isinstance(dump, dict) or "version" not in dump or not ("entries" in dump or "pg_config" in dump):
        raise DumpError("not a flight-recorder dump: expected a dict with 'version' and 'entries' or 'pg_config'")
    rank_from: str | None
    rank, rank_from = _int(dump.get("rank")), "field"
    if rank is not None and not 0 <= rank < MAX_RANK:
        rank = None
    if rank is None:
        rank, rank_from = rank_from_name(name), "name"
    if rank is None:
        rank_from = None
    pg_config = {}
    raw_config = dump.get("pg_config")
    for key, cfg in raw_config.items() if isinstance(raw_config, dict) else ():
        if isinstance(key, (str, int)) and isinstance(cfg, dict):
            pg_config[str(key)[:MAX_TEXT]] = {"desc": _text(cfg.get("desc")) or "", "ranks": _ranks(cfg.get("ranks"))}
    pg_status = {}
    raw_status = dump.get("pg_status")
    for key, st in raw_status.items() if isinstance(raw_status, dict) else ():
        if isinstance(key, (str, int)) and isinstance(st, dict):
            got = [
                _int(st.get(k))
                for k in ("last_enqueued_collective", "last_started_collective", "last_completed_collective")
            ]
            pg_status[str(key)[:MAX_TEXT]] = [-1 if v is None else v for v in got]
    raw = dump.get("entries")
    entries = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
    stacks: dict[tuple, int] = {}
    field = dict(zip(_FIELDS, _columns(entries)))  # the raw values, one list per field
    cols = {k: _int_column(field[f]) for k, f in _INT_FIELDS}
    for k in ("started_ns", "completed_ns"):
        cols[k][cols[k] == 0] = -1  # 0 in the JSON form: not recorded
    cols["is_p2p"] = np.array([v is True for v in field["is_p2p"]], dtype=bool)
    vocab = {}
    groups = _codes(field["process_group"], _group_key)
    for k, i in (("pg_name", 0), ("pg_desc", 1)):
        parts: dict = {}
        lut = [parts.setdefault(key[i], len(parts)) for key in groups[1]]
        cols[k] = np.array(lut or [0], dtype=np.int64)[groups[0]] if entries else np.zeros(0, np.int64)
        vocab[k] = list(parts)
    cols["op"], vocab["op"] = _codes(field["profiling_name"], _text)
    cols["state"], vocab["state"] = _codes(field["state"], lambda v: v if v in STATES else None)
    budget = None if size is None else expansion.object_limit(size)
    sizes = _json_texts(zip(field["input_sizes"], field["output_sizes"]), budget)
    dtypes = _json_texts(zip(field["input_dtypes"], field["output_dtypes"]), budget)
    cols["sizes"], vocab["sizes"] = _codes(sizes, str)
    cols["dtypes"], vocab["dtypes"] = _codes(dtypes, str)
    cols["stack"] = np.array([_stack(f, stacks) if f else -1 for f in field["frames"]], dtype=np.int64)
    return {
        "version": _text(dump.get("version"))
        if not isinstance(dump.get("version"), (int, float))
        else str(dump.get("version")),
        "rank": rank,
        "rank_from": rank_from,
        "pg_config": pg_config,
        "pg_status": pg_status,
        "entries": cols,
        "vocab": vocab,
        "stacks": [list(s) for s in stacks],
    }


def to_columns(record: Record) -> Record:
    """``record`` with its entry columns as numpy arrays (int64, -1 for None, times in ns; ``is_p2p``
    bool): a job's many records stay compact (no Python object per value)."""
    cols = record["entries"]
    out = {}
    for k, values in cols.items():
        if isinstance(values, np.ndarray):
            out[k] = values
        elif k == "is_p2p":
            out[k] = np.array(values, dtype=bool)
        else:
            out[k] = np.array([-1 if v is None else v for v in values] if None in values else values, dtype=np.int64)
    return dict(record, entries=out)


def pack_record(record: Record) -> bytes:
    """``record`` as bytes: an 8-byte length, a JSON header (everything but the entry columns, and each
    column's dtype and length), then the columns' raw bytes (little-endian int64 or bool)."""
    cols = {k: np.ascontiguousarray(v, dtype=bool if k == "is_p2p" else "<i8") for k, v in record["entries"].items()}
    head = orjson.dumps(
        {
            **{k: v for k, v in record.items() if k != "entries"},
            "columns": [[k, v.dtype.str, len(v)] for k, v in cols.items()],
        }
    )
    return _LEN.pack(len(head)) + head + b"".join(v.tobytes() for v in cols.values())


def unpack_record(body: bytes) -> Record:
    """The record :func:`pack_record` packed; its columns are read-only views of ``body``."""
    (n,) = _LEN.unpack_from(body)
    head = orjson.loads(body[_LEN.size : _LEN.size + n])
    offset, cols = _LEN.size + n, {}
    for name, dtype, length in head.pop("columns"):
        dt = np.dtype(dtype)
        if dt not in (np.dtype("<i8"), np.dtype(bool)) or offset + dt.itemsize * length > len(body):
            raise DumpError("the dump reader answered unreadable data")
        cols[name] = np.frombuffer(body, dtype=dt, count=length, offset=offset)
        offset += dt.itemsize * length
    return dict(head, entries=cols)


def read_json(data: bytes, name: str = "") -> Record:
    """The :data:`Record` of a dump in its JSON form."""
    try:
        dump = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DumpError(f"not readable JSON: {exc}") from None
    return extract(dump, name)


def _parse_one(data: bytes, name: str) -> Record:
    """Load and extract one dump: JSON here, a pickle with the restricted reader (call it in the child)."""
    if data[:1] == b"\x80":
        try:
            return extract(restricted_loads(data), name, len(data))
        except RefusedPickle as exc:
            raise DumpError(str(exc)) from None
    return read_json(data, name)


def read_pickles(files: Iterable[tuple[str, bytes]]) -> dict[str, Record | DumpError]:
    """Each ``(name, bytes)`` read in one child process: name → :data:`Record`, or the file's
    :class:`DumpError`. JSON dumps are read here. A pickle that crashes the child or runs past its
    time limit is its own error; the child is started again for the rest."""
    out: dict[str, Record | DumpError] = {}
    pending: list[tuple[str, bytes]] = []
    for name, data in files:
        if data[:1] == b"\x80":
            pending.append((name, data))
        else:
            try:
                out[name] = read_json(data, name)
            except DumpError as exc:
                out[name] = exc
    while pending:
        answered = _run_child(pending, out)
        if answered < len(pending):  # the child died or timed out on this file
            name, data = pending[answered]
            if name not in out:
                out[name] = DumpError(
                    "reading this pickle crashed the reader or ran out of time: it is not a "
                    "flight-recorder dump (a hostile or corrupt file?)"
                )
            answered += 1
        pending = pending[answered:]
    return out


def _run_child(files: list[tuple[str, bytes]], out: dict) -> int:
    """Send ``files`` to a new child; put its answers into ``out``; the number of files answered."""
    try:
        child = start_child("tb_plugin.artifacts.flight_recorder", [], stderr=subprocess.DEVNULL)
    except OSError as exc:
        for name, _ in files:
            out[name] = DumpError(f"cannot start the process that reads dumps: {exc}")
        return len(files)
    answers: list[tuple[bool, bytes]] = []
    progress = threading.Condition()

    def read_answers() -> None:
        f = cast(IO[bytes], child.stdout)  # (a pipe: never None)
        while True:
            head = f.read(_LEN.size + 1)
            if len(head) < _LEN.size + 1:
                break
            (n,) = _LEN.unpack(head[1:])
            body = f.read(n)
            if len(body) < n:
                break
            with progress:
                answers.append((head[:1] == b"\x00", body))
                progress.notify_all()
        with progress:
            progress.notify_all()

    def write_files() -> None:
        stdin = cast(IO[bytes], child.stdin)  # (a pipe: never None)
        try:
            for name, data in files:
                label = name.encode("utf-8", "replace")
                stdin.write(_LEN.pack(len(label)) + label + _LEN.pack(len(data)))
                stdin.write(data)
            stdin.close()
        except (BrokenPipeError, OSError):
            pass

    threads = [threading.Thread(target=fn, daemon=True) for fn in (read_answers, write_files)]
    for t in threads:
        t.start()
    done = 0
    while done < len(files):  # each file has its own time limit, from the previous answer on
        deadline = time.monotonic() + time_limit_s(len(files[done][1]))
        with progress:
            while len(answers) <= done and threads[0].is_alive() and time.monotonic() < deadline:
                progress.wait(min(1.0, max(0.0, deadline - time.monotonic())))
            got = answers[done:]
        if not got:
            break
        for ok, body in got:
            name = files[done][0]
            if ok:
                out[name] = unpack_record(body)
            else:
                out[name] = DumpError(body.decode("utf-8", "replace"))
            done += 1
    if child.poll() is None:
        child.kill()
    child.wait()
    return done


def child_main() -> int:
    """The reader child: ``(name length, name, size, bytes)`` frames on stdin, one answer frame per file
    on stdout (status byte 0 and the record's JSON, or 1 and the error message)."""
    gc.disable()  # a dump is a tree of fresh containers: collected once per dump below, not while it loads
    gc.freeze()  # what the imports made is never collected: a collection then costs ~1 ms, not ~10
    src, dst = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = src.read(_LEN.size)
        if len(head) < _LEN.size:
            return 0
        name = src.read(_LEN.unpack(head)[0]).decode("utf-8", "replace")
        (size,) = _LEN.unpack(src.read(_LEN.size))
        data = src.read(size)
        apply_limits(memory_limit_bytes(size), None)  # this dump's memory limit (MemoryError: its error)
        cpu_limit_for(size)
        try:
            body, status = pack_record(_parse_one(data, name)), b"\x00"
        except DumpError as exc:
            body, status = str(exc).encode(), b"\x01"
        except Exception as exc:
            body, status = f"not a readable dump: {type(exc).__name__}: {exc}".encode()[:2000], b"\x01"
        dst.write(status + _LEN.pack(len(body)) + body)
        dst.flush()
        del data, body
        gc.collect(0)  # a dump's containers are freed as it is dropped; a pickle that makes a cycle is
        # collected here (the youngest generation: the objects made since; a full collection would also
        # empty the interpreter's free lists, which the next dump then fills again)


if __name__ == "__main__":
    sys.exit(child_main())
