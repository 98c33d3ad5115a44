"""Giving freed heap memory back to the operating system.

glibc keeps what a process frees in its malloc arenas: numpy arrays under its (dynamic, up to 32 MiB)
mmap threshold live on the heap, so a parse that concatenates many small column chunks into large
columns keeps the chunks' pages as well (a 4.5 GB trace: 1.7 GB of columns held 3 GB of RSS after
finishing). ``malloc_trim(0)`` returns the free pages of every arena. :func:`gc_paused` keeps the
cyclic collector from walking the decoder's many short-lived objects.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import gc
import os
import sys
from collections.abc import Iterator

from .proc_status import status_bytes

_trim = _mallopt = None
if sys.platform.startswith("linux"):
    try:
        # the process's own symbols, libc's among them (find_library("c") ran `ldconfig -p`, a subprocess
        # at every start of every process that imports this)
        _libc = ctypes.CDLL(None)
        _trim = getattr(_libc, "malloc_trim", None)
        _mallopt = getattr(_libc, "mallopt", None)
    except OSError:
        _trim = _mallopt = None

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# glibc serves an allocation above its mmap threshold (dynamic, at most 32 MiB) with a fresh mmap, whose
# pages the kernel zero-fills at first touch, and unmaps it when freed: a column of a 6.7 M-event trace
# (54 MB) and every temporary of its size are faulted in anew each time (4.5 GB trace: system time 16 s
# against 2 s for the 0.9 GB one). Served from the heap, freed blocks are reused; release_after still
# gives them back between steps. Cold report, 4.5 GB trace, best of 3: 46.5 s → 43.9 s (0.9 GB: 8.4 → 8.3 s).
MMAP_THRESHOLD_BYTES = 1 << 30
TRIM_THRESHOLD_BYTES = 1 << 30  # free heap top kept before glibc gives it back by itself


def tune_allocator() -> bool:
    """Large blocks from the heap, not one mmap each (see :data:`MMAP_THRESHOLD_BYTES`), and no huge-page
    advice on numpy's arrays (:func:`no_huge_page_advice`); for the processes Kinetoscope owns (the CLI,
    its servers), never a library user's. True when the allocator's thresholds are set."""
    no_huge_page_advice()
    if _mallopt is None:
        return False
    try:
        return bool(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
            _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
        )
    except Exception:
        return False


def no_huge_page_advice() -> bool:
    """Stop numpy from advising ``MADV_HUGEPAGE`` on each array of 4 MiB or more; True when it could be
    told. Where transparent huge pages are ``madvise`` (with ``defrag`` ``madvise``, the common default),
    each first touch of such an array's 2 MiB pages may wait for the kernel to compact memory: in system
    time that grows faster than the bytes (the finish's concatenation of 42 columns, 4.5 GB trace: 2.62 s
    of CPU against 0.43 s for the 0.9 GB one, 6.0x for 5.0x the events; alone, 11.4 M-row columns
    concatenated: 2.6-5.6 s of system time advised, 1.4 s not). Values are unchanged: advice only. A
    user's own ``NUMPY_MADVISE_HUGEPAGE`` is left as it is; numpy not yet imported reads it at its import
    (so this never imports numpy: the paths without it stay without it)."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ and "numpy" not in sys.modules:
        return False  # the user's choice, or ours made earlier: numpy's import applies it
    if "numpy" not in sys.modules:
        os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"
        return True
    if os.environ.get("NUMPY_MADVISE_HUGEPAGE") not in (None, "0"):
        return False  # the user asked numpy for the advice
    np_mod = sys.modules["numpy"]
    multiarray = getattr(getattr(np_mod, "_core", None) or getattr(np_mod, "core", None), "multiarray", None)
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is None:
        return False
    setter(False)
    return True


def release_freed_memory() -> bool:
    """Return free heap pages to the OS (glibc ``malloc_trim(0)``); True when it could be asked."""
    if _trim is None:
        return False
    try:
        _trim(0)
    except Exception:
        return False
    _trimmed_to[0] = anon_resident_bytes()
    return True


# this process's anonymous resident bytes right after its last trim (0: unknown), which release_if_grown
# measures growth from (a forked child starts from its parent's figure: its pages are the parent's then)
_trimmed_to = [0]


def anon_resident_bytes() -> int:
    """This process's anonymous resident memory (``RssAnon`` of ``/proc/self/status``), bytes; 0 where
    it cannot be read."""
    return status_bytes(b"RssAnon:") or 0


def release_if_grown(growth: int) -> bool:
    """:func:`release_freed_memory` once this process's anonymous resident memory has grown by ``growth``
    bytes or more since its last trim (or where it cannot be read); else nothing (False). Freed pages
    below that are left to the next steps, which take them again without a page fault."""
    now = anon_resident_bytes()
    if now and now < _trimmed_to[0]:
        _trimmed_to[0] = now  # (freed and given back otherwise since: growth counts from here)
    if now and _trimmed_to[0] and now - _trimmed_to[0] < growth:
        return False
    return release_freed_memory()


# the steps of a trace's parse and analyses give freed heap pages back (release_after) only for a trace of
# at least this many events and memory events: below, a step frees a few MB, and the trim plus the page
# faults of the next step's allocations cost more (~30 ms in 10 calls on the 57 k-event V100 sample)
TRIM_ABOVE_EVENTS = 500_000


def release_after(trace_items: int) -> bool:
    """:func:`release_freed_memory` after a step of the work on a trace of ``trace_items`` events and
    memory events, when that is at least :data:`TRIM_ABOVE_EVENTS`; else nothing (False)."""
    return release_freed_memory() if trace_items >= TRIM_ABOVE_EVENTS else False


def collect_and_release_after(trace_items: int) -> bool:
    """:func:`release_after` preceded by a full cyclic collection, for the end of a parse of at least
    :data:`TRIM_ABOVE_EVENTS` events: the collector, paused while the batches decode (:func:`gc_paused`),
    has not yet freed the parse's reference cycles, and the heap pages they hold stay resident until it
    does (a 4.5 GB trace: 47 MB, 1056 → 1009 MB after the parse, against none given back by the trim
    alone). Else nothing (False)."""
    if trace_items < TRIM_ABOVE_EVENTS:
        return False
    gc.collect()
    return release_freed_memory()


# Inside the sections of a trace of at least this many events and memory events, each analysis step
# (a memo made, a level of ``op_tree.roll_up``) gives its freed heap pages back too: its columns' temporaries
# are then 32 MB or more (4 M rows of 8 bytes: glibc's own largest mmap threshold, whose blocks it unmaps
# at their free; tune_allocator keeps them on the heap instead). Freed but not reused within a section they
# stayed resident: a 4.5 GB trace's operators section peaked with ~0.4 GB of them, its memory section ~0.2 GB.
STEP_TRIM_ABOVE_ITEMS = 4_000_000
# Steps that trim lazily (trimmed_steps' ``growth``) give their freed pages back only once the process
# has grown this much since its last trim: where the process tree is not at its peak, a step's freed
# temporaries are taken again by the next steps without a page fault each (this VM: ~2.5 µs a page,
# the host's included). The section child's distributed section of the 4.5 GB trace: 664 000 faults and
# 1.6 s of system time with a trim after every step; trimmed lazily, the cold report 29.64 s against
# 30.19 s by the medians of 9 runs in turns, the process tree at once 1945 against 1985 MB (that section
# ends before the tree's peak, and its end still gives back everything: docs/PERFORMANCE.md).
STEP_TRIM_GROWTH_BYTES = 128 << 20
# The trace's events and memory events while trimmed_steps is open, else 0; and the growth its steps
# trim after. Context variables, so that a server's threads (each its own context) never see another's
# setting, and each exit restores its own.
_step_items: contextvars.ContextVar[int] = contextvars.ContextVar("step_items", default=0)
_step_growth: contextvars.ContextVar[int] = contextvars.ContextVar("step_growth", default=0)


@contextlib.contextmanager
def trimmed_steps(trace_items: int, growth: int = 0) -> Iterator[None]:
    """Within it (in this thread), :func:`release_after_step` gives freed heap pages back (for a trace
    of ``trace_items`` events and memory events, from :data:`STEP_TRIM_ABOVE_ITEMS` on): after every step,
    or with ``growth`` (bytes) once the process has grown that much since its last trim
    (:func:`release_if_grown`); the setting before it is restored at its end."""
    token = _step_items.set(trace_items)
    grown = _step_growth.set(growth)
    try:
        yield
    finally:
        _step_growth.reset(grown)
        _step_items.reset(token)


def release_after_step() -> bool:
    """:func:`release_freed_memory` after one step of an analysis inside :func:`trimmed_steps` of a trace
    of at least :data:`STEP_TRIM_ABOVE_ITEMS` events (lazily: :func:`release_if_grown`, where it says a
    growth); else nothing (False)."""
    if _step_items.get() < STEP_TRIM_ABOVE_ITEMS:
        return False
    growth = _step_growth.get()
    return release_if_grown(growth) if growth else release_freed_memory()


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused for one batch: decoding allocates tens of thousands of
    acyclic objects (events, args, tuples), whose collection passes cost ~20% of the decode's CPU;
    nothing here makes a cycle, and reference counting still frees everything."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
