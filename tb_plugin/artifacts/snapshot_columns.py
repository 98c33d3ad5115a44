"""History entries as columns, and the value rules every snapshot field is read with.

:func:`trace_columns` turns a run of history entries (dicts) into :class:`DeviceTrace` columns;
:class:`StreamedTraces` does it batch by batch while :mod:`.pickle_stream` reads the file, so the
entries' dicts are never all alive; :class:`Interner` keeps each distinct stack and frame once.

The batches' columns are :class:`array.array` buffers built by C-level passes (``map``,
``operator.itemgetter`` with the file's own key strings, ``struct.pack``), so the reader child
(:mod:`.drain`) answers without importing numpy; a column whose values ``array`` does not take as they
are (text, floats in an integer field, integers beyond 64 bits) is converted by numpy as before, and
:func:`joined` makes a device's numpy arrays in the parent.
"""

from __future__ import annotations

import collections
import itertools
import operator
import struct
import sys
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast, overload

if TYPE_CHECKING:
    import numpy as np

ACTIONS = (
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "snapshot",
    "oom",
    "free",
    "other",
)
_ACTION_CODE = {a: i for i, a in enumerate(ACTIONS)}
_SEGMENT_CODES = [_ACTION_CODE[a] for a in ("segment_alloc", "segment_free", "segment_map", "segment_unmap")]


class DeviceTrace:
    """One device's history: parallel arrays, in recorded order. A plain class, not a dataclass: the
    reader child, which imports this module, imports no ``dataclasses`` (nor its ``inspect``)."""

    def __init__(self, action: np.ndarray, addr: np.ndarray, size: np.ndarray, time: np.ndarray, stack: np.ndarray):
        self.action = action  # uint8 code into ACTIONS
        self.addr = addr  # int64
        self.size = size  # int64 bytes
        self.time = time  # float64 µs, NaN when the snapshot has no time_us
        self.stack = stack  # int32 index into Snapshot.stacks (-1: no frames)


_FIELDS = ("action", "addr", "size", "time", "stack")


def _field(entries: list[dict], key: str) -> list:
    try:
        return list(map(operator.itemgetter(key), entries))  # the common case, every entry has it: C speed
    except KeyError:  # (some lack it: None for those, still one C-level pass)
        pass
    try:
        return list(map(dict.get, entries, itertools.repeat(key)))
    except TypeError:  # (not all dicts)
        return [e.get(key) for e in entries]


def _action_codes(entries: list[dict], names: list | None = None) -> array:
    """uint8 codes into ACTIONS of the entries' ``action`` (given as ``names`` when already read)."""
    names = _field(entries, "action") if names is None else names
    try:
        uniq = set(names)
    except TypeError:  # a list or dict where the action's name should be: an "other" entry
        names = [a if isinstance(a, str) else None for a in names]
        uniq = set(names)
    other = _ACTION_CODE["other"]
    table = {a: _ACTION_CODE.get(a, other) if isinstance(a, str) else other for a in uniq}  # (not text: "other")
    return array("B", bytes(map(table.__getitem__, names)))  # (bytes: its length found once)


# the int64 typecode: C ``long`` where it is 8 bytes (its conversion reads a multi-digit int directly;
# ``long long``'s, in CPython 3.11, byte by byte)
INT64 = "l" if array("l").itemsize == 8 else "q"
_NAN = float("nan")
_NONE_NAN = {None: _NAN}  # (``get(v, v)``: None as NaN, any other value as it is)
_NONE_ZERO = {None: 0}


def _packed(typecode: str, values: list) -> array:
    """``array(typecode, values)`` for ``i``, ``l``, ``q`` and ``d``: the same values taken, the same refused
    (``struct``'s conversion, without ``array``'s argument parsing per item: ~half the instructions),
    :data:`_PACKED` values at a time (their argument tuple is all that lives beside the array)."""
    out = array(typecode, _ZERO) * len(values)
    for at in range(0, len(values), _PACKED):
        part = values[at : at + _PACKED]
        struct.pack_into(f"{len(part)}{typecode}", out, at * out.itemsize, *part)
    return out


_PACKED = 4096
_ZERO = (0,)
_REFUSED = (struct.error, TypeError, OverflowError)  # (struct's error for a value array refuses)


def _floats(values: list) -> array:
    """float64 column; None becomes NaN. Numbers (``int``, ``float``, ``bool``) as ``array`` reads them
    (correctly rounded, as numpy); other values by numpy's own conversion (``_floats_numpy``)."""
    try:
        return _packed("d", values)
    except _REFUSED:
        pass
    try:  # (None among numbers: an entry without ``time_us``)
        return _packed("d", list(map(_NONE_NAN.get, values, values)))
    except _REFUSED:
        return _numpy_column(_floats_numpy(values), "d")


def _ints(values: list) -> array:
    """int64 column; missing or odd values become 0. Integers in int64 as ``array`` takes them; None as 0;
    other values (text, floats, integers beyond 64 bits) by numpy's conversion as before (``_ints_numpy``)."""
    try:
        return _packed(INT64, values)
    except _REFUSED:
        pass
    try:
        return _packed(INT64, list(map(_NONE_ZERO.get, values, values)))
    except _REFUSED:
        return _numpy_column(_ints_numpy(values), INT64)


def _numpy_column(values: np.ndarray, typecode: str) -> array:
    out = array(typecode)
    out.frombytes(values.tobytes())
    return out


def _floats_numpy(values: list) -> np.ndarray:
    import numpy as np

    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([v if isinstance(v, (int, float)) else np.nan for v in values], dtype=np.float64)


def _ints_numpy(values: list) -> np.ndarray:
    import numpy as np

    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        out = np.zeros(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            try:
                out[i] = int(v)
            except (TypeError, ValueError, OverflowError):
                pass
        return out


@overload
def _int(value: Any, default: int = 0) -> int: ...
@overload
def _int(value: Any, default: None) -> int | None: ...
def _int(value: Any, default: int | None = 0) -> int | None:
    """``value`` as an int64 (as ``int()`` reads numbers and numeric text), else ``default``: for text,
    containers, None, NaN and integers beyond 64 bits (no address or size is that large)."""
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return out if -(2**63) <= out < 2**63 else default


def _list(value: Any) -> list:
    """``value`` when it is a list (or tuple), else empty: a wrong type holds no entries."""
    return list(value) if isinstance(value, (list, tuple)) else []


def _scalar(value: Any) -> Any:
    """A descriptive field (``stream``, ``segment_type``) kept as written when it is a number or text;
    an integer beyond 64 bits as its decimal string; a container or other object as None."""
    if value is None or isinstance(value, (str, bool, float)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    return None


class Interner:
    """Stacks and frames, each distinct one once: ``stack_of(raw frames list)`` is its stack index."""

    def __init__(self) -> None:
        self.stacks: list[list[int]] = []
        self.stack_ids: dict[tuple, int] = {}
        self.frames: list[dict] = []
        self.frame_ids: dict[tuple, int] = {}
        # id(raw frames list) -> (the list, kept alive so its id is not reused; stack). A pickle memo (and
        # the streaming reader's frame-list cache) lets many entries share one list: each distinct list
        # object is read once. Emptied when large: a list not shared is then read again, never wrongly.
        self.by_identity: dict[int, tuple[Any, int]] = {}
        # stack_ids_of's: id(a list met several times in a run) -> its stack, the lists kept alive beside
        self.shared_ids: dict[int, int] = {}
        self.shared_lists: list = []
        # _FRAME_FIELDS with a file's own key strings (see own_keys), once one is met
        self.frame_fields: operator.itemgetter | None = None
        # _by_dicts' table (after key_by_dicts): a frame list's sampled key (_sampled_keys) -> its bucket: the
        # copies of the distinct lists met with that key, then _ANY, and their stacks, then _NEW; the copies
        # keep their dicts alive (ids unique while keys). Lists looked up, and new (key, stack)s, so far.
        self.by_dicts: dict[tuple, tuple[list, list[int]]] | None = None
        self.dict_lists = self.dict_misses = 0

    def key_by_dicts(self) -> None:
        """Key frame lists by their dicts' identities from here on, where the caller has found a file's
        frame dicts shared (PyTorch's dumps: one dict object per distinct frame, a list per entry):
        :meth:`_by_dicts`."""
        if self.by_dicts is None:
            self.by_dicts = {}

    def own_keys(self, frames: list) -> None:
        """Key frames by the key strings of the first frame dict among ``frames`` (entries' frame lists)
        from here on: a dict finds its own key object by identity, where an equal string is compared
        byte by byte (a file whose dicts do not share their key strings is keyed as before)."""
        if self.frame_fields is not None:
            return
        first = next(filter(None, frames), None)
        frame = first[0] if isinstance(first, list) else None
        if type(frame) is dict:
            self.frame_fields = operator.itemgetter(*map(own_key(frame).get, _FRAME_NAMES, _FRAME_NAMES))

    def stack_of(self, raw_frames) -> int:
        if not raw_frames:
            return -1
        seen = self.by_identity.get(id(raw_frames))
        if seen is not None and seen[0] is raw_frames:
            return seen[1]
        sid = self._intern(raw_frames)
        if len(self.by_identity) > _IDENTITY_KEPT:
            self.by_identity.clear()
        self.by_identity[id(raw_frames)] = (raw_frames, sid)
        return sid

    def _intern(self, raw_frames) -> int:
        try:
            key = tuple(map(_FRAME_FIELDS, raw_frames))
        except (KeyError, TypeError):
            try:
                key = tuple((f.get("filename", ""), f.get("line", 0), f.get("name", "")) for f in raw_frames)
            except (AttributeError, TypeError):  # not a list of frame dicts
                return -1
        return self._intern_key(key)

    def _intern_key(self, key: tuple) -> int:
        """The stack index of ``key`` (its frames' ``(filename, line, name)``), new frames and stack added."""
        stack_ids, frame_ids = self.stack_ids, self.frame_ids
        try:
            got = stack_ids.get(key)
        except TypeError:  # a list or dict as a frame field: kept as its text
            key = tuple(
                tuple(v if v is None or isinstance(v, (str, int, float)) else repr(v)[:500] for v in f) for f in key
            )
            got = stack_ids.get(key)
        if got is None:
            got = stack_ids[key] = len(self.stacks)
            ids = []
            for frame in key:
                fid = frame_ids.get(frame)
                if fid is None:
                    fid = frame_ids[frame] = len(self.frames)
                    self.frames.append({"filename": frame[0], "line": frame[1], "name": frame[2]})
                ids.append(fid)
            self.stacks.append(ids)
        return got

    def stack_ids_of(self, frames: Sequence[Any], distinct: bool | None = None) -> array | None:
        """int32 stack index per item of ``frames`` (entries' raw frame lists; −1: empty), as
        :meth:`stack_of` gives one by one, with no Python step per entry: each distinct list object
        is keyed once (C-level ``map``), its stack found in one dict lookup (the empty key ``()``
        gives −1); only stacks not met before take a step each. None when a list is not a list of
        frame dicts with hashable fields (then :meth:`stack_of`, one by one, which reads those too).
        ``distinct``: whether no list with frames is met twice, when the caller knows (else counted)."""
        # an object met k times in ``frames`` is held by k entries and k times by ``frames`` (and by
        # getrefcount's argument): ≥ 2k + 1 references. No list with frames over 4: each is met once
        # (PyTorch's layout: each entry its own list), keyed as it comes (a list keyed twice would give
        # the same stack: the count only spares work). Empty ones give () → −1 however often met
        known = self.shared_ids
        if known and distinct is not True:  # (lists shared in earlier runs: most runs find all of theirs)
            got = self._looked_up(known, frames)
            if _NEW not in got:
                return _packed("i", got)
        elif distinct is None:
            distinct = max(map(sys.getrefcount, itertools.compress(frames, frames)), default=0) <= 4
        if distinct:
            try:
                return _packed("i", self._keyed(frames if isinstance(frames, list) else list(frames)))
            except (KeyError, TypeError):  # not frame dicts, a field missing, an unhashable field
                return None
        # each list object with frames once, in the order first met (alive while ``frames`` is: ids unique)
        full = list(itertools.compress(frames, map(bool, frames)))
        firsts = dict(zip(map(id, full), full))
        try:
            by_id = dict(zip(firsts, self._keyed(list(firsts.values()))))
        except (KeyError, TypeError):
            return None
        if len(firsts) * 4 <= len(full):  # lists met 4 times each or more: kept for the runs to come
            if len(known) + len(firsts) > _IDENTITY_KEPT:
                known.clear()
                self.shared_lists.clear()
            known.update(by_id)
            self.shared_lists += firsts.values()  # (alive while their ids are keys)
        return _packed("i", self._looked_up(by_id, frames))

    @staticmethod
    def _looked_up(table: dict[int, int], frames: Sequence[Any]) -> list[int]:
        """``table``'s stack for each item of ``frames`` by its id, −1 for an empty (falsy) item, :data:`_NEW`
        for one not in it. Only the items with frames are looked up (``compress`` tests the others in C,
        without a call each: ~30 ns less an entry than an id, a test and a default for each)."""
        got = list(map(table.get, map(id, itertools.compress(frames, frames)), itertools.repeat(_NEW)))
        if len(got) == len(frames):
            return got
        spread = [-1] * len(frames)
        collections.deque(map(spread.__setitem__, itertools.compress(range(len(frames)), frames), got), maxlen=0)
        return spread

    def _keyed(self, lists: list) -> list[int]:
        """The stack index of each of ``lists`` (distinct frame lists), :data:`_KEYED` at a time (their
        keys: ~0.6 KB each); stacks not met before are added in the order met."""
        self.stack_ids.setdefault((), -1)  # (an empty list: no stack)
        fields = _FRAME_FIELDS if self.frame_fields is None else self.frame_fields
        # only the lists with frames are keyed (most entries of a history may have none: each made a map
        # object, an empty key and a lookup for its −1); the others are −1, as their empty key gives
        full = list(itertools.compress(lists, lists))
        out: list[int] = []
        for at in range(0, len(full), _KEYED):
            part = full[at : at + _KEYED]
            out += self._by_content(part, fields) if self.by_dicts is None else self._by_dicts(part, fields)
        if len(full) == len(lists):
            return out
        spread = [-1] * len(lists)
        collections.deque(map(spread.__setitem__, itertools.compress(range(len(lists)), lists), out), maxlen=0)
        return spread

    def _by_content(self, part: list, fields: operator.itemgetter) -> list[int]:
        """The stack index of each of ``part`` (frame lists) by their frames' ``fields``."""
        try:  # (most runs meet no new stack: each key looked up as it is made, and freed)
            return list(map(self.stack_ids.__getitem__, map(tuple, map(map, itertools.repeat(fields), part))))
        except KeyError:  # (a new stack, or a frame without a field: the keys made again, kept)
            return self._with_new(list(map(tuple, map(map, itertools.repeat(fields), part))))

    def _by_dicts(self, part: list, fields: operator.itemgetter) -> list[int]:
        """:meth:`_by_content` of ``part``, each list first looked up by its length and middle dict's id
        (:func:`_sampled_keys`: a key of every frame's fields, or of every dict's id, costs a step per frame:
        PyTorch's stacks hold ~40) among the distinct lists met with that key (at most
        :data:`_BUCKET_LISTS`; ``list.index``: list comparisons in C, identity first, item by item); the
        others keyed by content and added. Given up for good once most lists need their content (the dicts are not
        shared: each list would pay both): most lists bring a new (key, stack)."""
        table = cast(dict, self.by_dicts)
        try:
            keys = _sampled_keys(part)
        except (TypeError, IndexError, KeyError):  # (not lists: by content, which tells)
            return self._by_content(part, fields)
        buckets = list(map(table.get, keys, itertools.repeat(_EMPTY_BUCKET)))
        at = map(list.index, map(operator.itemgetter(0), buckets), part)  # (_ANY, last: every list found)
        got = list(map(operator.getitem, map(operator.itemgetter(1), buckets), at))
        new = list(itertools.compress(range(len(got)), map(operator.eq, got, itertools.repeat(_NEW))))
        self.dict_lists += len(part)
        if not new:
            return got
        stacks = self._by_content(list(map(part.__getitem__, new)), fields)
        collections.deque(map(got.__setitem__, new, stacks), maxlen=0)
        # each new (key, stack)'s first list, for its key's bucket (a step per distinct stack met)
        firsts = dict(
            zip(zip(map(keys.__getitem__, reversed(new)), map(got.__getitem__, reversed(new))), reversed(new))
        )
        self.dict_misses += len(firsts)  # (lists of new dicts: each its own key)
        # (past the first lists, which all bring theirs: in all, or in this part alone)
        past_trial = self.dict_lists >= _SAMPLED_TRIAL
        if past_trial and (2 * self.dict_misses > self.dict_lists or 2 * len(firsts) > len(part)):
            self.by_dicts = None
            return got
        if len(table) + len(firsts) > _IDENTITY_KEPT:
            table.clear()
        for (key, stack), i in firsts.items():
            reps, ids = table.get(key) or table.setdefault(key, ([_ANY], [_NEW]))
            if stack not in ids and len(ids) <= _BUCKET_LISTS:  # (a full bucket's others: by content each time)
                reps.insert(-1, list(part[i]))
                ids.insert(-1, stack)
        return got

    def _with_new(self, keys: list[tuple]) -> list[int]:
        """The stack index of each of ``keys``, some not met before: added in the order met."""
        got = list(map(self.stack_ids.get, keys, itertools.repeat(_NEW)))
        i = _index(got, _NEW, 0)
        while i >= 0:  # a step per stack not met before (a later copy of one finds it added)
            got[i] = self._intern_key(keys[i])
            i = _index(got, _NEW, i + 1)
        return got


_FRAME_NAMES = ("filename", "line", "name")
_FRAME_FIELDS = operator.itemgetter(*_FRAME_NAMES)


def _sampled_keys(lists: list) -> list[tuple]:
    """Per list (of frame dicts), its length and the id of its middle dict. Equal lists of shared dicts have
    equal keys; a key tells nothing more (the caller compares the lists). More dicts sampled split PyTorch's
    stacks no finer (its sample's 145 stacks: 61 keys with one, 62 with four, each dict's id a step) and cost
    more than the comparisons they spare (400 ns a list, against 500 ns with four)."""
    lens = list(map(len, lists))
    return list(zip(lens, map(id, map(operator.getitem, lists, map(operator.rshift, lens, itertools.repeat(1))))))


def own_key(entry: dict) -> dict:
    """Each key of ``entry`` by itself: ``own_key(entry).get(name, name)`` is the file's own string for
    ``name`` (an entry's dicts share the unpickler's key objects; a lookup by that object is an identity test)."""
    return dict(zip(entry, entry))


_IDENTITY_KEPT = 100_000
_KEYED = 4096  # frame lists keyed at a time by Interner.stack_ids_of
_NEW = -2  # Interner._keyed: a key not met before
_SAMPLED_TRIAL = 4 * _KEYED  # lists Interner._by_dicts looks up before it may give up
_BUCKET_LISTS = 16  # distinct lists a sampled key holds (a lookup compares at most this many)


class _Anything:
    """Equal to anything: a bucket's last item, where ``list.index`` stops when no list is equal."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


_ANY = _Anything()
_EMPTY_BUCKET: tuple[list, list[int]] = ([_ANY], [_NEW])  # (never added to: a new key gets its own)
_EMPTY_OR_NEW = (-1, _NEW)  # (indexed by bool(frames): no stack; not met before)


def _index(items: list, value: int, start: int) -> int:
    """``items.index(value, start)``, −1 when absent."""
    try:
        return items.index(value, start)
    except ValueError:
        return -1


def _stack_ids(frames: list, stack_of, distinct: bool | None = None) -> array:
    """int32 stack index per entry's frames (−1: none); a list read before is found by identity here
    (what :meth:`Interner.stack_of` does first) without a call. ``distinct``: see :meth:`Interner.stack_ids_of`."""
    known = getattr(stack_of, "__self__", None)
    if isinstance(known, Interner):
        got = known.stack_ids_of(frames, distinct)
        if got is not None:
            return got
    table: dict[int, tuple[Any, int]] = known.by_identity if isinstance(known, Interner) else {}
    get = table.get
    return array(
        "i", [(s[1] if (s := get(id(f))) is not None and s[0] is f else stack_of(f)) if f else -1 for f in frames]
    )


def _rows_of(codes: bytes, code: int) -> list[int]:
    """The positions of the byte ``code`` in ``codes`` (a step per one found: oom and segment
    entries, each given a record by the caller)."""
    rows = []
    at = codes.find(code)
    while at >= 0:
        rows.append(at)
        at = codes.find(code, at + 1)
    return rows


_SAME: dict = {}  # (``_SAME.get(name, name)``: no entry to take key strings from)
_SEGMENT_BYTES = bytes(1 if i in _SEGMENT_CODES else 0 for i in range(256))  # (bytes.translate: segment codes as 1)


def trace_columns(entries: list[dict], stack_of, frames: list | None = None, distinct: bool | None = None) -> dict:
    """Columns of a run of history entries (dicts): the :class:`DeviceTrace` fields, ``timed`` (any
    ``time_us``), and the rows (in ``entries``) of ``ooms`` and ``segment_streams``. ``frames``: the
    entries' ``frames`` fields when the caller has read them already (``distinct``: no list of them met
    twice, when the caller knows: :meth:`Interner.stack_ids_of`)."""
    # a field at a time (one C-level pass each: faster than one pass of 5-tuples and their transpose)
    own = own_key(entries[0]).get if entries and type(entries[0]) is dict else _SAME.get
    actions, addrs = _field(entries, own("action", "action")), _field(entries, own("addr", "addr"))
    sizes, times = _field(entries, own("size", "size")), _field(entries, own("time_us", "time_us"))
    frames = _field(entries, own("frames", "frames")) if frames is None else frames
    timed = times.count(None) != len(times)
    cols = {
        "action": _action_codes(entries, actions),
        "addr": _ints(addrs),
        "size": _ints(sizes),
        "time": _floats(times) if timed else array("d", [_NAN]) * len(entries),
        "stack": _stack_ids(frames, stack_of, distinct),
    }
    codes = cols["action"].tobytes()
    ooms = [
        {
            "index": i,
            "stream": _scalar(entries[i].get("stream")),
            "device_free": _int(entries[i].get("device_free", entries[i].get("addr")), None),
        }
        for i in _rows_of(codes, _ACTION_CODE["oom"])
    ]
    streams = [
        {"index": i, "stream": _scalar(entries[i].get("stream"))} for i in _rows_of(codes.translate(_SEGMENT_BYTES), 1)
    ]
    return {"cols": cols, "timed": timed, "ooms": ooms, "segment_streams": streams, "n": len(entries)}


class StreamedTraces:
    """The ``on_rows`` of :func:`~.pickle_stream.read`: a list whose first batch are dicts with an
    ``action`` key is a device's history; each batch becomes columns (:func:`trace_columns`) as it
    is read, and its dicts are dropped. Non-dict items are dropped, as ``parse_snapshot`` does."""

    def __init__(self) -> None:
        self.interner = Interner()
        self.batches: dict[int, tuple[list, list[dict]]] = {}  # id(the list) -> (the list, its batches)

    def __call__(self, target: list, items: list) -> bool:
        got = self.batches.get(id(target))
        if got is None:
            if target or "action" not in items[0]:
                return False
            got = self.batches[id(target)] = (target, [])
        rows = [x for x in items if isinstance(x, dict)]
        if rows:
            got[1].append(trace_columns(rows, self.interner.stack_of))
        return True

    def of(self, entries: Any) -> list[dict] | None:
        got = self.batches.get(id(entries))
        return got[1] if got is not None and got[0] is entries else None


def joined(batches: list[dict], dev: int) -> tuple[DeviceTrace, list, list, bool]:
    """One device's trace from its batches: (trace as numpy arrays, ooms, segment_streams, timed)."""
    import numpy as np

    # field by field, each batch's array dropped once joined: the columns are never all there twice
    trace = DeviceTrace(
        **{f: np.concatenate([np.frombuffer(b["cols"].pop(f), _DTYPES[f]) for b in batches]) for f in _FIELDS}
    )
    return (trace, *joined_rows(batches, dev))


_DTYPES = {"action": "u1", "addr": "i8", "size": "i8", "time": "f8", "stack": "i4"}


def joined_rows(batches: list[dict], dev: int) -> tuple[list, list, bool]:
    """A device's ooms and segment_streams (each row's index in the device's whole history) and
    whether any entry is timed, from its batches."""
    offsets = [0, *itertools.accumulate(b["n"] for b in batches)]
    ooms = [dict(o, device=dev, index=o["index"] + off) for b, off in zip(batches, offsets) for o in b["ooms"]]
    streams = [
        dict(s, device=dev, index=s["index"] + off) for b, off in zip(batches, offsets) for s in b["segment_streams"]
    ]
    return ooms, streams, any(b["timed"] for b in batches)
