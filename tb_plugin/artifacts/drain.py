"""History entries turned into columns while the C unpickler is still reading (a reader child's whole read).

A bare ``pickle.load`` of a snapshot peaks holding every history entry's dict (its key table and
its ``addr``/``size``/``time_us`` integers: ~0.4 KB each). The reader child hands the unpickler its input
through a counting stream (:mod:`.snapshot_child`); every :data:`STEP_BYTES` read, :meth:`Drain.step`
turns the entries appended so far to each history list into columns (:class:`~.snapshot_columns.StreamedTraces`'
batches), removes them from the list and empties their dicts, so the memory they held is reused by
the entries read next: the child's peak stays under ``pickle.load``'s. The entries' frame dicts are
emptied too once their stacks are keyed (with a frame list per entry, as PyTorch writes them, they are
most of what a history holds), until a frame list or dict is met twice (:meth:`Drain._clear_frames`).

The history lists are found among the lists the unpickler creates (:func:`gc.get_objects` of the
generations not frozen: what was built since the last step, which freezes them): a list whose first
item is a dict with an ``action`` key, when it is met or (met empty) some steps later.

An emptied dict is still in the unpickler's memo: a file that refers to an entry again (``BINGET``;
PyTorch never does) would find it empty. :meth:`Drain.finish` tells: every emptied dict is referred
to by nothing but this object once the unpickler is gone (its reference count), so is every emptied
frame list and dict, every drained list is an item of ``device_traces`` once; otherwise :class:`Redo`
(the child has the file read again by the streaming reader, which keeps such files right).
"""

from __future__ import annotations

import collections
import gc
import itertools
import operator
import sys
from typing import Any, Callable, Iterable

STEP_BYTES = 1 << 18  # pickle bytes read between two steps (the entries drained while still in the caches)
# a list created empty is watched for its first entries: at the next step, then WATCHED_STEPS times more, once
# every LOOK_STEPS steps' bytes (the child's: 3-4 MiB in all, as when a step was a MiB and a list was watched 4)
WATCHED_STEPS = 3
LOOK_STEPS = 4
MAX_HISTORIES = 256  # history lists (one per device) beyond which the file is streamed instead
_TAILS = (1 << 10, 1 << 12)  # the last objects of a step's new ones where the entry appended last is looked for first
DICTS_CHECKED = 1 << 16  # frame dicts whose sharing is looked for before they are emptied (then: finish)


class Redo(Exception):
    """An emptied entry is referred to again, or a drained list is not (once) a device's history: the
    file is to be read again by the streaming reader."""


def _history_starts(lists: list[list]) -> list[list]:
    """The lists of ``lists`` whose first item is a dict with an ``action`` key (C-level steps only)."""
    full = list(itertools.compress(lists, lists))
    firsts = list(map(operator.itemgetter(0), full))
    dicts = list(map(operator.is_, map(type, firsts), itertools.repeat(dict)))
    full, firsts = list(itertools.compress(full, dicts)), list(itertools.compress(firsts, dicts))
    return list(itertools.compress(full, map(operator.contains, firsts, itertools.repeat("action"))))


def _frame_lists(frames: list) -> tuple[list, bool]:
    """The lists among a batch's ``frames`` fields that hold frames, and whether one of them is held by
    more than the memo, its entry, ``frames`` and the returned list (met twice, or held elsewhere)."""
    full = list(itertools.compress(frames, frames))  # (an empty list holds nothing; it may be watched)
    lists = list(itertools.compress(full, map(operator.is_, map(type, full), itertools.repeat(list))))
    del full
    # (each held by its entry, ``frames``, ``lists`` and getrefcount's argument at least: 4; +1 the memo)
    return lists, not _each_of(list(map(sys.getrefcount, lists)), 5, 4)


def _each_of(refs: list[int], *counts: int) -> bool:
    """Whether each of the reference counts ``refs`` is one of ``counts`` (the usual one first): a
    ``list.count`` pass while some are left (a small int found is the same object: a few instructions
    an item, where ``max`` or ``sum`` compare or add numbers). Each count is at least the least of
    ``counts`` (the caller's own references)."""
    left = len(refs)
    for count in counts:
        left -= refs.count(count)
        if not left:
            break
    return not left


def _each_held(objects: Iterable[Any], count: int) -> bool:
    """Whether each of ``objects`` has the reference count ``count`` (getrefcount's argument counted; no
    object fewer): :func:`_each_of` a chunk at a time, so the counts are never a list as long as a history."""
    left = iter(objects)
    while refs := list(map(sys.getrefcount, itertools.islice(left, _CHUNK))):
        if refs.count(count) != len(refs):
            return False
    return True


_CHUNK = 1 << 16  # reference counts taken at a time by _each_held


class Drain:
    """The ``on_read`` of a reader child's counting stream (see the module docstring)."""

    def __init__(self, step_bytes: int = STEP_BYTES, watch: Callable[[int], None] | None = None) -> None:
        self.step_bytes = step_bytes
        self.watch = watch  # called with the bytes read at each step (whole_read.Projection.check: may raise)
        self.next_at = step_bytes
        self.streamed: Any = None  # a StreamedTraces, once a history is found
        self.histories: list[list] = []
        self.drained = 0  # entries drained, all histories
        self.shells: list[dict] = []  # the entries' emptied dicts
        # their frame lists, kept: freeing the memo then frees nothing (the child ends by os._exit)
        self.frames: list[list] = []
        self.watched: collections.deque[list[list]] = collections.deque(maxlen=WATCHED_STEPS)
        self.last: list[list] = []  # the lists met empty at the last step
        self.pending: list[list] = []  # the lists met empty before, since the watched ones were last looked at
        self.look_at = LOOK_STEPS * step_bytes  # the pickle bytes read at the next look at them
        self.clearing = True  # the drained entries' frame dicts are emptied too (see _clear_frames)
        self.cleared: list[list] = []  # the frame lists whose dicts were emptied
        self.dicts_checked = 0  # frame dicts whose references were counted before emptying
        gc.freeze()  # (the objects of this process so far: not the unpickler's)

    def step(self, count: int) -> None:
        """After each read: ``count`` bytes read so far."""
        if count < self.next_at:
            return
        self.next_at = count + self.step_bytes
        if self.watch is not None:
            self.watch(count)
        new = gc.get_objects()  # (all but the frozen: what was built since the last step)
        gc.freeze()  # the next step sees only what is built after this one
        # the lists that are empty or start with an entry-like dict (the unpickler builds no list or
        # dict subclass) in one comprehension: CPython 3.11 specialises its exact-type tests (~20 ns an
        # object) where ``map(isinstance, new, repeat(list))`` and ``compress`` take two C calls (~45 ns),
        # and each entry's frame list (10 objects an entry: the entry, its list, 8 frames) is dropped here
        fresh = itertools.islice(new, self._fresh_from(new), None)
        lists = [o for o in fresh if type(o) is list and (not o or (type(o[0]) is dict and "action" in o[0]))]
        del new, fresh
        # the lists met empty (most of them entries' empty frame lists) are looked at again once every
        # LOOK_STEPS steps' bytes, not every step: each is looked at WATCHED_STEPS times, as many as before
        look = count >= self.look_at
        if look:
            self.look_at = count + LOOK_STEPS * self.step_bytes
        self._find((lists, self.last, self.pending, *self.watched) if look else (lists, self.last))
        # (a list the last step came in the middle of, an entry's frame list, is full now: not kept, it would
        # be held here when its entry is drained, and taken for a shared one)
        self.pending += itertools.filterfalse(None, self.last)
        self.last = list(itertools.filterfalse(None, lists))
        if look:
            for group in self.watched:
                group[:] = itertools.filterfalse(None, group)
            self.watched.append(list(itertools.filterfalse(None, self.pending)))
            self.pending = []
        for history in self.histories:
            self._drain(history)

    def _fresh_from(self, new: list) -> int:
        """Where the search for histories starts in ``new`` (what was built since the last step, in the order
        built): after the entry appended last to a known history, if built since. What comes before it is
        that history's entries and their frame lists (the pickler writes a device's history whole, then the
        next), passed over without a look at each (ids only: their memory is not read)."""
        lasts = [h[-1] for h in self.histories if h]  # (the entries appended since the last step, not drained)
        if not lasts:
            return 0
        back = len(new)
        for window in (*_TAILS, len(new)):  # (the batch being read follows it: most steps find it in the tail)
            ids = list(map(id, new[-window:]))
            ids.reverse()  # (searched from the end)
            for last in lasts:
                try:
                    back = min(back, ids.index(id(last)))
                except ValueError:  # (before the tail, or built before the last step)
                    pass
            if back < len(new) or window >= len(new):
                break
        return len(new) - back

    def _find(self, groups: Iterable[list[list]]) -> None:
        """The histories among ``groups`` of lists (new ones, and ones met empty: their first item tells)
        added to :attr:`histories` (a method: no group stays referred to by a variable while draining)."""
        for group in groups:
            for items in _history_starts(group):
                if not any(items is h for h in self.histories):
                    if len(self.histories) >= MAX_HISTORIES:  # (a crafted file: each new list a scan of these)
                        raise Redo(f"more than {MAX_HISTORIES} history lists")
                    self.histories.append(items)

    def _drain(self, history: list) -> None:
        """The entries in ``history`` as columns; they leave the list, their dicts emptied."""
        if not history:
            return
        from .snapshot_columns import StreamedTraces, _field, trace_columns  # (numpy-free: see that module)
        from .snapshot_stacks import own_key

        if self.streamed is None:
            self.streamed = StreamedTraces()
        items = history[:]
        del history[:]
        try:  # (each item a dict with ``frames``: no other type the restricted unpickler builds takes a text key)
            key = own_key(items[0]).get("frames", "frames") if type(items[0]) is dict else "frames"  # (the file's)
            frames = list(map(operator.itemgetter(key), items))
        except (KeyError, TypeError):
            if set(map(type, items)) - {dict}:  # (StreamedTraces drops what is not a dict, as the parse does)
                items = [e for e in items if type(e) is dict]
            if not items:
                return
            frames = _field(items, "frames")
        # referred to by ``items``, the memo and getrefcount's argument alone: nothing else holds them yet
        refs = list(map(sys.getrefcount, items))
        held = not _each_of(refs, 3, 2)  # (at least ``items`` and the argument)
        # (an entry emptied at an earlier step and met again in a history is held by ``shells`` too: empty)
        if held and not all(itertools.compress(items, map(operator.lt, itertools.repeat(3), refs))):
            raise Redo("an emptied history entry is referred to again")
        batches = self.streamed.batches.setdefault(id(history), (history, []))[1]
        lists, shared = _frame_lists(frames) if self.clearing else ([], None)
        self.streamed.interner.own_keys(frames)
        # (no list met twice: its stack keyed as it comes, without looking for copies of it)
        batches.append(
            trace_columns(items, self.streamed.interner.stack_of, frames, None if shared is None else not shared)
        )
        self.drained += len(items)
        if held:  # held elsewhere already (a shared entry): kept whole
            kept = list(map(operator.ge, itertools.repeat(3), refs))
            items, frames = list(itertools.compress(items, kept)), list(itertools.compress(frames, kept))
            lists, shared = _frame_lists(frames) if self.clearing else ([], None)
        self.frames.append(frames)
        if self.clearing:
            self._clear_frames(lists, bool(shared))
        collections.deque(map(dict.clear, items), maxlen=0)
        self.shells += items

    def _clear_frames(self, lists: list, shared: bool) -> None:
        """Empty the frame dicts of a drained batch's frame ``lists`` (:func:`_frame_lists`; ``shared``:
        one is held elsewhere too) (their stacks are keyed: most of what a history with
        a frame list per entry holds) while no frame list (and, in the first :data:`DICTS_CHECKED`
        frames, no frame dict) has been met twice; from the first one met twice (a shared list, a list
        held elsewhere in the object, a dict in two lists) on, none is. :meth:`finish` checks every
        emptied list and dict: a file that refers to one again is read again (:class:`Redo`)."""
        # unshared: a dict held by the memo, its list and ``dicts`` (+1: getrefcount's argument; 3 without the memo)
        if not shared and self.dicts_checked < DICTS_CHECKED:  # (a layout that shares dicts shows it early)
            dicts = list(itertools.chain.from_iterable(lists))
            self.dicts_checked += len(dicts)
            shared = not _each_of(list(map(sys.getrefcount, dicts)), 4, 3)
            del dicts
        if shared:
            self.clearing = False
            self.streamed.interner.key_by_dicts()  # (met twice: a dict likely, a list perhaps; it tells)
            # (a frame emptied here, met again, is empty; and a list of other things may hold one)
            dicts = list(itertools.chain.from_iterable(lists))
            if self.cleared and not (set(map(type, dicts)) <= {dict} and all(dicts)):
                raise Redo("an emptied frame is referred to again")
            return
        self.cleared += lists  # (checked by finish, emptied or not)
        try:
            collections.deque(map(dict.clear, itertools.chain.from_iterable(lists)), maxlen=0)
        except TypeError:  # a frame that is not a dict: the rest of the file keeps its frames
            self.clearing = False

    def finish(self, obj: Any) -> None:
        """After the load (the unpickler and its memo freed): the rest of each history drained, then
        checked (the module docstring); :class:`Redo` when the columns may differ from the file's."""
        self.watched.clear()  # (a list met empty at the last step, filled since, is not a history's)
        self.last, self.pending = [], []
        for history in self.histories:
            self._drain(history)
        if not self.histories:
            return

        # each referred to by ``shells`` and getrefcount's argument alone: no part of the object holds it
        # (kept, not freed: the child ends without freeing them, ~8 ms of deallocation at 200 000 entries)
        if not _each_held(self.shells, 2):
            raise Redo("a history entry is referred to twice")
        # each emptied frame list held by ``cleared`` and its batch's ``frames`` alone (and the argument: 3),
        # each of its dicts by that list alone (2): nothing in the object refers to them
        cleared, self.cleared = self.cleared, []
        dicts = itertools.chain.from_iterable(cleared)
        if not (_each_held(cleared, 3) and _each_held(dicts, 2)):
            raise Redo("an emptied frame is referred to again")
        del cleared, dicts
        traces = obj.get("device_traces") if isinstance(obj, dict) else None
        if not isinstance(traces, list):
            raise Redo("a history outside device_traces")
        # the stacks are numbered in the order met: the drained histories must be the first with entries
        ours = {id(h) for h in self.histories}
        in_order = [t for t in traces if id(t) in ours or (isinstance(t, list) and t)]
        if [id(t) for t in in_order[: len(self.histories)]] != [id(h) for h in self.histories]:
            raise Redo("a device's history before a drained one")
        del in_order
        for history in self.histories:
            # held by device_traces once, self.histories, the batches' tuple, this loop and the argument
            if sys.getrefcount(history) != 5:
                raise Redo("a history list is not one device's")
