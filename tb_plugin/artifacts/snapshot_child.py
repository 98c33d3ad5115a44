"""The reader child of :mod:`.isolated` (``python -m tb_plugin.artifacts.snapshot_child``): limits first, then
the pickle on stdin read before anything else is imported.

A pickle of protocol 4 or 5 (PyTorch's) whose whole object fits the child's address-space limit
(:func:`~.whole_read.fits`) is unpickled by CPython's C unpickler (restricted) straight from the pipe,
frame by frame, as a bare ``pickle.load`` of the file reads it: the file's bytes are never held beside
the object. Every 256 KiB read, :class:`~.drain.Drain` turns the history entries appended so far into
columns and empties their dicts, so the child peaks under ``pickle.load``; the columns are
``array.array`` buffers, written as the answer as they are (:func:`~.snapshot_parse.answer_object`):
that path never imports numpy.
The bytes read cannot be read again: a :class:`MemoryError` on that path (a file that expands more
than estimated, a memo bomb) or a drained entry referred to again (:class:`~.drain.Redo`) ends the
child with :data:`~.child_terms.EXIT_AGAIN`, and the parent sends the file once more to a child told to stream it
(:data:`~.child_terms.STREAMED`: :mod:`.pickle_stream`, which never builds the whole object). Other pickles are read
into one buffer first, as :func:`~.snapshot.parse_pickle` reads bytes. A spare child (:mod:`.spare`) imports
first and takes its file's terms and limits from stdin (:func:`_spare_terms`), then reads as above. A
child forked from ``kinetoscope report`` (:mod:`.forked`) runs :func:`forked_main`: the same, with its
standard streams pointed at the file and at two memory files first.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Callable, NoReturn, Protocol, cast

from . import expansion, whole_read
from .child_terms import (
    ACCEPTED,
    ANSWER_ARG,
    BATCH_MODES,
    EXIT_AGAIN,
    EXIT_REFUSED,
    SPARE,
    SPARE_START_CPU_S,
    STATUS_ARG,
    STREAMED,
    answer_into,
    answer_to_memory,
    apply_limits,
    child_exit,
    end_after,
    limit_cpu_from_now,
    tell_exit_status,
)
from .drain import Drain, Redo
from .unpickle import RefusedPickle, load_whole

LATER_BYTES = 256 << 20  # address space later imports may take (numpy maps ~130 MB: only for a column of odd values)


class _Stream(Protocol):
    """A buffered binary stream (stdin's ``BufferedReader``)."""

    def read(self, n: int = -1, /) -> bytes: ...

    def readinto(self, buffer, /) -> int | None: ...

    def readline(self) -> bytes: ...

    def peek(self, n: int = 0, /) -> bytes: ...


class _Counted:
    """A binary stream handed to the unpickler, counting the bytes it takes (the object bound is per
    byte). ``peek`` lets the C unpickler prefetch where a pickle has no frames."""

    def __init__(self, stream: _Stream, on_read: Callable[[int], None] | None = None) -> None:
        self._stream = stream
        self.count = 0
        self._on_read = on_read  # called with the count before each read (the unpickler's state is whole then)

    def read(self, n: int = -1) -> bytes:
        if self._on_read is not None:
            self._on_read(self.count)
        got = self._stream.read(n)
        self.count += len(got)
        return got

    def readinto(self, buffer) -> int:
        got = self._stream.readinto(buffer) or 0
        self.count += got
        return got

    def readline(self) -> bytes:
        got = self._stream.readline()
        self.count += len(got)
        return got

    def peek(self, n: int = 0) -> bytes:
        return self._stream.peek(n)

    def drain(self) -> None:
        """Read (and count) what follows the pickle: the bound counts the file's every byte, as before."""
        while self.read(1 << 20):
            pass


def piped(stdin: _Stream, size: int, later: int = LATER_BYTES) -> bool:
    """Whether the pickle on ``stdin`` (``size`` bytes, the parent's figure) is read whole from the pipe:
    protocol 4 or 5 (frames: the unpickler reads each in one call) and its object fits (``later``: the
    address space the imports still to come take)."""
    head = stdin.peek(2)[:2]  # (nothing consumed)
    # (histories drained; tried at the least expansion measured, then watched: whole_read.Projection)
    fits = whole_read.fits(size, later, per_byte=whole_read.DRAINED_LEAST_PER_BYTE)
    return len(head) == 2 and head[0] == 0x80 and head[1] >= 4 and fits


def read_piped(stdin: _Stream, drain: Drain | None = None) -> tuple[object, int]:
    """The object on ``stdin`` by the restricted C unpickler, and the bytes read; bounded after memo
    expansion (:func:`~.whole_read.check_snapshot`: :class:`~.expansion.TooManyObjects`). ``drain``: its
    histories are turned into columns while reading (:mod:`.drain`; :class:`~.drain.Redo` when that may
    differ from the file)."""
    counted = _Counted(stdin, None if drain is None else drain.step)
    obj = load_whole(counted)
    counted.drain()
    if drain is not None:
        drain.finish(obj)
    whole_read.check_snapshot(obj, counted.count, drain.drained if drain is not None else 0)
    return obj, counted.count


def _spare_terms(stdin: _Stream) -> list[str] | None:
    """In a spare child (:data:`~.child_terms.SPARE`): import what reading and answering a file import,
    then wait for one file's terms on stdin (a line: size, address-space limit, CPU/wall limit, mode or
    ``-``), take its limits and say so (:data:`~.child_terms.ACCEPTED` on stdout). The terms as
    ``child_main``'s arguments, or None when none came (the parent ended, or sent something else)."""
    from . import answer, snapshot_parse  # noqa: F401 - (what a whole read from the pipe imports; no numpy)

    line = stdin.readline()  # (the parent's one short line; a spare reads nothing else before it)
    terms = line.decode("ascii", "replace").split()
    if len(terms) != 4 or not all(t.isdigit() for t in terms[:2]) or terms[3] not in ("-", STREAMED):
        return None
    try:
        memory, wall_s = int(terms[1]), float(terms[2])
    except ValueError:
        return None
    if not 0 < wall_s < 1e7:  # (a finite time limit)
        return None
    apply_limits(memory, None)  # (only ever lowered: the spare started under the largest limit any child gets)
    limit_cpu_from_now(wall_s)
    end_after(wall_s)
    sys.stdout.buffer.write(ACCEPTED)
    sys.stdout.buffer.flush()
    return terms[:3] + ([] if terms[3] == "-" else [terms[3]])


def child_main(argv: list[str]) -> int:
    """``argv``: the pickle's size, the address-space limit (bytes), the CPU-time limit (s), and
    optionally a mode (:data:`~.child_terms.BATCH_MODES`, :data:`~.child_terms.STREAMED`, or
    :data:`~.child_terms.SPARE`: the terms come later, on stdin). Alone: read a pickle from stdin and write
    its packed snapshot (:mod:`.answer`) to stdout (exit status :data:`~.child_terms.EXIT_REFUSED` for a refused file, the
    message on stderr; :data:`~.child_terms.EXIT_AGAIN`, see the module docstring)."""
    memory = int(argv[1]) if len(argv) > 1 else 1 << 40
    mode = argv[3] if len(argv) > 3 else ""
    batch = mode in BATCH_MODES
    wall_s = float(argv[2]) if len(argv) > 2 else 3600.0  # the parent's deadline (a batch: all its files')
    spare = mode == SPARE
    apply_limits(memory, SPARE_START_CPU_S if spare else None if batch else wall_s)  # a batch: per file
    end_after(wall_s)  # (a spare: how long it waits for a file)
    gc.disable()  # the reader builds containers that all stay alive until it ends: collecting finds nothing
    if batch:
        from .snapshot import batch_main

        batch_main(mode, memory)
        return 0
    stdin = cast(_Stream, sys.stdin.buffer)  # (a BufferedReader: it peeks)
    if spare:
        terms = _spare_terms(stdin)
        if terms is None:
            return 0
        argv, memory, mode = terms, int(terms[1]), terms[3] if len(terms) > 3 else ""
    answer_to_memory()  # (a spare: after its acknowledgement on the pipe)
    size = int(argv[0]) if argv and argv[0].isdigit() else 0
    later = 0 if spare else LATER_BYTES
    if mode != STREAMED and piped(stdin, size, later):
        try:
            drain = Drain(watch=whole_read.Projection(size, later).check)
            obj, _ = read_piped(stdin, drain)
            from .snapshot_parse import answer_object

            return answer_object(obj, memory, drain.streamed)
        except (MemoryError, Redo):  # the pipe is consumed: the parent sends the file again (nothing on stdout yet)
            child_exit(EXIT_AGAIN)
        except (RefusedPickle, expansion.TooManyObjects) as exc:
            sys.stderr.write(str(exc))
            return EXIT_REFUSED
    from .snapshot import answer_stdin

    return answer_stdin(argv[:1], memory, stream=True if mode == STREAMED else None)


def _close_inherited(first: int) -> None:
    """Close every descriptor from ``first`` on: those listed in ``/proc/self/fd`` (a loop to the descriptor
    limit can be a million ``close`` calls where ``close_range`` is missing), else a range to that limit."""
    try:
        listed = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        os.closerange(first, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)
        return
    for fd in listed:
        if fd >= first:
            try:
                os.close(fd)
            except OSError:  # (the listing's own descriptor, closed already)
                pass


def forked_main(argv: list[str], stdin_fd: int, out_fd: int, err_fd: int, status_fd: int) -> NoReturn:
    """In a child forked from a nearly empty parent (:class:`~.forked.ForkedReader`): :func:`child_main`
    of ``argv`` with ``stdin_fd`` (the file, from its current offset) as stdin and ``out_fd``, ``err_fd``
    as stdout and stderr, then the process ends with its exit status, said first on ``status_fd``
    (:func:`~.child_terms.child_exit`; never the parent's exit handlers or buffers). The parent's other
    descriptors are closed, its signal handlers for the limits' signals reset (the limits end the child
    as they end a started one), and an uncaught error is a traceback on stderr and exit status 1, as in
    a started child."""
    code = 1
    try:
        for fd, std in ((stdin_fd, 0), (out_fd, 1), (err_fd, 2), (status_fd, 3)):
            os.dup2(fd, std)
        _close_inherited(4)
        tell_exit_status(3)
        import io
        import signal

        for sig in ("SIGALRM", "SIGXCPU", "SIGTERM"):
            if hasattr(signal, sig):
                signal.signal(getattr(signal, sig), signal.SIG_DFL)
        from .child_pipes import one_thread_here  # (imported by the parent already)

        one_thread_here()
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)))
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)))
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "wb", closefd=False)), errors="backslashreplace")
        code = child_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        child_exit(code)  # (its output flushed first)


if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1].startswith(STATUS_ARG):  # its exit status said on that pipe first
        tell_exit_status(int(sys.argv[1][len(STATUS_ARG) :]))
        args = sys.argv[2:]
        if args[:1] and args[0].startswith(ANSWER_ARG):  # its answer written into that memory file
            answer_into(int(args.pop(0)[len(ANSWER_ARG) :]))
        child_exit(child_main(args))
    sys.exit(child_main(sys.argv[1:]))
