"""Stacks and frames interned: each distinct stack of a snapshot once, as indices into its distinct frames.

:class:`Interner` keys a frame list by its frames' ``(filename, line, name)``; :meth:`Interner.stack_ids_of`
does it for a run of history entries in C-level passes (each distinct list object once; where frame dicts are
shared, as PyTorch writes one dict per distinct frame, by a sampled key of their identities and a comparison
of the lists, :meth:`Interner._by_dicts`), and :func:`stack_ids` falls back to one list at a time for odd
values. The reader child (:mod:`.drain`) and the parent's parse (:mod:`.snapshot_parse`) share it; no numpy.
"""

from __future__ import annotations

import collections
import itertools
import operator
import sys
from array import array
from collections.abc import Sequence
from typing import Any, cast

from .packed_arrays import packed


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
        # keep their dicts alive (ids unique while keys). Lists looked up, new (key, stack)s, and copies kept.
        self.by_dicts: dict[tuple, tuple[list, list[int]]] | None = None
        self.dict_lists = self.dict_new_keys = self.dict_copies = 0

    def key_by_dicts(self) -> None:
        """Look frame lists up by their dicts' identities from here on (:meth:`_by_dicts`), where the caller
        has found a file's frame dicts shared (PyTorch's dumps: one dict object per distinct frame)."""
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
                return packed("i", got)
        elif distinct is None:
            distinct = max(map(sys.getrefcount, itertools.compress(frames, frames)), default=0) <= 4
        if distinct:
            try:
                return packed("i", self._keyed(frames if isinstance(frames, list) else list(frames)))
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
        return packed("i", self._looked_up(by_id, frames))

    @staticmethod
    def _looked_up(table: dict[int, int], frames: Sequence[Any]) -> list[int]:
        """``table``'s stack for each item of ``frames`` by its id, −1 for an empty (falsy) item, :data:`_NEW`
        for one not in it. Only the items with frames are looked up (``compress`` tests the others in C,
        without a call each: ~30 ns less an entry than an id, a test and a default for each)."""
        return _spread(
            list(map(table.get, map(id, itertools.compress(frames, frames)), itertools.repeat(_NEW))), frames
        )

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
        return _spread(out, lists)

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
        others keyed by content and added. Given up for good once most lists bring a new (key, stack), in
        all or in one part (the dicts are not shared: each list would pay both keys)."""
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
        self.dict_new_keys += len(firsts)  # (lists of new dicts: each its own key)
        # (past the first lists, which all bring theirs: in all, or in this part alone)
        past_trial = self.dict_lists >= _SAMPLED_TRIAL
        if past_trial and (2 * self.dict_new_keys > self.dict_lists or 2 * len(firsts) > len(part)):
            self.by_dicts = None
            return got
        if self.dict_copies + len(firsts) > _IDENTITY_KEPT:  # (emptied when large: never a wrong stack)
            table.clear()
            self.dict_copies = 0
        for (key, stack), i in firsts.items():
            reps, ids = table.get(key) or table.setdefault(key, ([_ANY], [_NEW]))
            if stack not in ids and len(ids) <= _BUCKET_LISTS:  # (a full bucket's others: by content each time)
                reps.insert(-1, list(part[i]))
                ids.insert(-1, stack)
                self.dict_copies += 1
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


def _spread(got: list[int], items: Sequence[Any]) -> list[int]:
    """``got`` (a value per truthy item of ``items``, in order) spread over ``items``: −1 for each falsy one
    (an entry without frames); ``got`` itself where every item is truthy."""
    if len(got) == len(items):
        return got
    spread = [-1] * len(items)
    collections.deque(map(spread.__setitem__, itertools.compress(range(len(items)), items), got), maxlen=0)
    return spread


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


def _index(items: list, value: int, start: int) -> int:
    """``items.index(value, start)``, −1 when absent."""
    try:
        return items.index(value, start)
    except ValueError:
        return -1


def stack_ids(frames: list, stack_of, distinct: bool | None = None) -> array:
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
