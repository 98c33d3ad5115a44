"""Read an allocator-snapshot pickle in a child process, so a hostile pickle costs only that file.

Unpickling runs C code on the file's structure: a pickle that names no global can still crash the
process (a deeply nested tuple hashed as a dict key overflows the C stack) or hang it (tuples that
share halves hash in 2^depth steps); see :mod:`.unpickle`. When the bytes cannot rule that out
(:func:`~.unpickle.tuple_nesting_bound` above :data:`~.unpickle.IN_PROCESS_NESTING`, which is every
real snapshot of some size), the pickle is sent to ``python -m tb_plugin.artifacts.snapshot_child`` on stdin;
the child (:func:`~.snapshot_child.child_main`) unpickles and parses it and answers the packed columns (:func:`~.snapshot.pack_snapshot`:
a JSON header and flat arrays) as raw arrays on stdout (:mod:`.answer`). This process never unpickles the file. The
child's crash (a signal), its time limit (:func:`time_limit_s`) or its error message becomes the
file's :class:`SnapshotError`. The child's memory is returned to the system when it exits.
"""

from __future__ import annotations

import signal
import struct
import threading
import time
from typing import IO, TYPE_CHECKING, Callable, Iterable, Sequence, cast

from .child_pipes import (  # noqa: F401 - (MEMORY_FLOOR_BYTES, start_child: imported from here)
    MEMORY_FLOOR_BYTES,
    PIPE,
    SHARED_CHILD,
    ChildProcess,
    close_answer,
    close_status,
    end_child,
    memory_cap_bytes,
    read_exact,
    said_status,
    start_child,
    take_answer,
)
from .child_terms import EXIT_AGAIN, EXIT_REFUSED, STREAMED, apply_limits, limit_cpu_from_now  # noqa: F401 - for the children

BASE_TIME_S = 30.0  # the child's time limit: this much, plus PER_MB_TIME_S for each MB of pickle
PER_MB_TIME_S = 2.0  # real snapshots parse at ~0.03 s per MB; 60× headroom for a slow, busy machine
MEMORY_PER_BYTE = 16  # the child's address space per byte of pickle (a bare pickle.load of a snapshot: ~13×)


if TYPE_CHECKING:
    import subprocess

    from .forked import ForkedMain

# ``subprocess`` is imported by the functions that start or await a child, not here: the report command forks its
# early reader child after importing this module, and the forked path needs none of it (~3 ms before the fork)

_Child = ChildProcess  # (the names this module's code and its tests use)
_read_exact = read_exact
_end = end_child


class SnapshotError(Exception):
    """The file is not a readable allocator snapshot. The message is shown as is."""


def time_limit_s(size: int) -> float:
    """How long the child may take on a pickle of ``size`` bytes (s): wall clock, and CPU time."""
    return BASE_TIME_S + PER_MB_TIME_S * size / 1e6


def memory_limit_bytes(size: int) -> int:
    """The child's address-space limit (``RLIMIT_AS``) for a pickle of ``size`` bytes:
    :data:`MEMORY_PER_BYTE` × ``size``, at least :data:`MEMORY_FLOOR_BYTES`, at most :func:`memory_cap_bytes`."""
    return min(max(MEMORY_FLOOR_BYTES, MEMORY_PER_BYTE * int(size)), memory_cap_bytes())


def cpu_limit_for(size: int) -> None:
    """In a reader child, before a file of ``size`` bytes: it may use :func:`time_limit_s` more seconds of CPU
    time than the child has used so far (SIGXCPU ends the child past it: that file's error)."""
    limit_cpu_from_now(time_limit_s(size))


def _crash_message(returncode: int, size_limit: int, cpu_s: float) -> str:
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    if name in ("SIGXCPU", "SIGKILL", "SIGALRM"):
        of_what = " of CPU time" if name != "SIGALRM" else ""  # SIGALRM: the child's own wall-clock bound
        return (
            f"reading this pickle took more than {cpu_s:.0f} s{of_what}, the limit for its size: "
            "it is not a memory snapshot (a hostile or corrupt file?)"
        )
    return (
        f"reading this pickle crashed the reader ({name}): it is not a memory snapshot (values nested too "
        f"deeply, or more than {size_limit >> 20} MB of memory, the reader's limit for its size: a hostile "
        "or corrupt file?)"
    )


def _child(argv: list[str], stdin: int | IO[bytes] = PIPE, status: bool = False) -> _Child:
    try:  # (three pipes, or stdin a file: stdin is then None and never written)
        return cast(_Child, start_child("tb_plugin.artifacts.snapshot_child", argv, stdin=stdin, status=status))
    except OSError as exc:
        raise SnapshotError(f"cannot start the process that reads snapshots: {exc}") from None


def _read_to_end(f: IO[bytes]) -> bytearray:
    """All of ``f`` in one ``bytearray`` (the answer's arrays are views of it, writable as
    ``np.load``'s were; joined once, as ``read()`` joins its chunks)."""
    return bytearray().join(iter(lambda: f.read(1 << 20), b""))


def _read_bytes(f: IO[bytes]) -> bytes:
    return f.read()


def _collect(child: _Child) -> tuple[dict, list]:
    out: dict[str, bytes | bytearray] = {}
    readers = [
        threading.Thread(target=lambda name, f, read: out.__setitem__(name, read(f)), args=item, daemon=True)
        for item in (("stdout", child.stdout, _read_to_end), ("stderr", child.stderr, _read_bytes))
    ]
    for t in readers:
        t.start()
    return out, readers


def parse_in_child(data: bytes) -> tuple[dict, dict]:
    """The packed snapshot (header, arrays) of the pickle ``data``, parsed in a child process.

    Raises :class:`SnapshotError` with the child's message, or saying that it crashed
    (with the signal's name) or ran out of time or memory."""
    return parse_blocks_in_child([data], len(data), again=[data])


def parse_blocks_in_child(blocks: Iterable, size: int, again: Iterable | None = None) -> tuple[dict, dict]:
    """:func:`parse_in_child` of the pickle that ``blocks`` (bytes-like) make up, written to the child
    as they come: this process holds one block at a time, never the file. ``size``: the pickle's
    size in bytes (the child's buffer and limits; a guess for a gzip file: the child grows it). An
    exception from ``blocks`` (a read error, a bound) ends the child and is raised as it is.
    ``again``: the same blocks once more (e.g. ``blocks`` itself when it can be iterated twice), sent
    to a second child that streams them when the first one's whole read ran out of memory
    (:data:`~.child_terms.EXIT_AGAIN`); None: that is the file's error."""
    return _or_streamed(lambda: _parse_blocks(blocks, size, []), size, again)


def parse_started(started: Started, size: int, again: Iterable | None) -> tuple[dict, dict]:
    """:func:`parse_blocks_in_child` of a child already reading the file (:func:`start_on_file`)."""
    return _or_streamed(lambda: finish(started), size, again)


def _or_streamed(answer: Callable[[], tuple[dict, dict]], size: int, again: Iterable | None) -> tuple[dict, dict]:
    """``answer()``, or when that child's whole read ran out of memory, ``again`` read by a streaming child."""
    try:
        return answer()
    except _Again:
        if again is None:
            raise SnapshotError(
                f"reading this pickle needed more than {memory_limit_bytes(size) >> 20} MB of memory, the "
                "reader's limit for its size: not a memory snapshot (a hostile or corrupt file?)"
            ) from None
        return _parse_blocks(again, size, [STREAMED])


class _Again(Exception):
    """The child's whole read ran out of memory: the file is to be sent again, streamed."""


class Started:
    """A reader child started on one pickle, its output collected by threads (see :func:`finish`): the
    spare child (:func:`~.spare.keep_spare`) when one is ready and the pickle comes through a pipe, else a fresh one."""

    def __init__(
        self, size: int, mode: list[str], stdin: int | IO[bytes] = PIPE, fresh_stdin: IO[bytes] | None = None
    ) -> None:
        """``fresh_stdin``: with ``stdin`` a pipe, the file a fresh child reads as its stdin when no spare
        is ready (the spare's pipe is then the caller's to fill: :func:`_parse_file`)."""
        self.limit = time_limit_s(size)  # s, wall clock and CPU time
        self.memory = memory_limit_bytes(size)  # bytes of address space
        self.mode = mode
        terms = [str(size), str(self.memory), str(self.limit), *mode]
        spare = None
        if stdin == PIPE:
            from .spare import take_spare  # (imported here: it builds on this module)

            spare = take_spare(terms)
        self.from_spare = spare is not None
        self.child = spare or _child(terms, stdin if fresh_stdin is None else fresh_stdin, status=True)
        self.out, self.readers = _collect(self.child)
        self.deadline = time.monotonic() + self.limit

    def kill(self) -> None:
        """End the child (its answer unwanted) and reap it."""
        self.child.kill()
        self.child.wait()
        close_status(self.child)
        close_answer(self.child)
        for t in self.readers:
            t.join()

    def completed(self) -> subprocess.CompletedProcess:
        """The child's exit status, answer and messages, once it has exited (its output read to the end):
        :class:`subprocess.TimeoutExpired` past the deadline (the child left running)."""
        import subprocess

        child = self.child
        for t in self.readers:  # its pipes end when it closes them or exits (Popen.wait with a timeout polls)
            t.join(max(0.0, self.deadline - time.monotonic()))
        code = said_status(child, self.deadline)  # (said once its output is whole: it may still be exiting)
        if code is None:
            code = child.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        for t in self.readers:
            t.join()
        out = self.out
        answer = take_answer(child, out.get("stdout", b""))  # (its memory file, where it wrote into one)
        return subprocess.CompletedProcess(child.args, code, answer, out.get("stderr", b""))


class ForkedStarted(Started):
    """A reader child forked on a local file (:class:`~.forked.ForkedReader`), under the limits of
    :class:`Started`; its answer is read from memory files once it exits (no threads)."""

    def __init__(self, file: IO[bytes], size: int, forked_main: ForkedMain) -> None:
        from .forked import ForkedReader

        self.limit = time_limit_s(size)
        self.memory = memory_limit_bytes(size)
        self.mode = []
        self.from_spare = False
        self.forked = ForkedReader(file.fileno(), [str(size), str(self.memory), str(self.limit)], forked_main)
        self.child = cast(_Child, self.forked)
        self.out, self.readers = {}, []
        self.deadline = time.monotonic() + self.limit

    def kill(self) -> None:
        super().kill()
        self.forked.close()

    def completed(self) -> subprocess.CompletedProcess:
        import subprocess

        code = self.forked.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        out, err = self.forked.answer()
        return subprocess.CompletedProcess(self.forked.args, code, out, err)


def start_on_file(file: IO[bytes], size: int, forked_main: ForkedMain | None = None) -> Started:
    """A reader child reading the pickle in ``file`` (a local file of ``size`` bytes, opened by the
    caller) as its stdin, before this process is ready for the answer (:mod:`.early`). ``forked_main``
    (:func:`~.snapshot_child.forked_main`): the child is forked from this process and runs it where a fork
    may be made (:func:`~.forked.can_fork`), else it is a fresh interpreter."""
    if forked_main is not None:
        from .forked import can_fork

        if can_fork():
            return ForkedStarted(file, size, forked_main)
    return Started(size, [], stdin=file)


def parse_file_in_child(file: IO[bytes], size: int, again: Iterable | None = None) -> tuple[dict, dict]:
    """:func:`parse_blocks_in_child` of the pickle in the local ``file`` (``size`` bytes, opened by
    :func:`~.file_send.open_pickle`), never held in this process: the spare child, when one is ready, gets
    its bytes through its pipe from one 1 MiB buffer (:func:`~.file_send.send_file`), else a fresh child reads
    the file as its stdin. ``again``: as :func:`parse_blocks_in_child`'s."""
    return _or_streamed(lambda: _parse_file(file, size), size, again)


def _parse_file(file: IO[bytes], size: int) -> tuple[dict, dict]:
    from .file_send import send_file

    started = Started(size, [], fresh_stdin=file)
    if not started.from_spare:  # (a fresh child reads the file itself)
        return finish(started)
    return _fed(started, lambda stdin: send_file(file, stdin.fileno(), size, started.deadline))


def _parse_blocks(blocks: Iterable, size: int, mode: list[str]) -> tuple[dict, dict]:
    from .file_send import SendTimeout

    started = Started(size, mode)

    def feed(stdin: IO[bytes]) -> None:
        for block in blocks:
            stdin.write(block)
            if time.monotonic() > started.deadline:
                raise SendTimeout()

    return _fed(started, feed)


def _fed(started: Started, feed: Callable[[IO[bytes]], object]) -> tuple[dict, dict]:
    """The answer (:func:`finish`) of the child of ``started`` once ``feed`` wrote the pickle into its stdin
    (closed then). The child's early end (a refused file, a crash) is for its answer to tell; past the
    deadline (:class:`~.file_send.SendTimeout`) or on any other error of ``feed`` (the file's: too big,
    unreadable) the child is ended, not left running."""
    from .file_send import SendTimeout

    child = started.child
    try:
        try:
            feed(child.stdin)
        except BrokenPipeError:
            pass
        finally:
            try:
                child.stdin.close()
            except BrokenPipeError:
                pass
    except SendTimeout:
        started.kill()
        raise SnapshotError(_too_slow(started.limit)) from None
    except BaseException:
        started.kill()
        raise
    return finish(started)


def _too_slow(limit: float) -> str:
    return (
        f"reading this pickle took more than {limit:.0f} s, the limit for its size: "
        "it is not a memory snapshot (a hostile or corrupt file?)"
    )


def finish(started: Started) -> tuple[dict, dict]:
    """The packed snapshot the child of ``started`` answers once it ends (its input all given):
    :class:`SnapshotError` for a refused file, a crash or the time limit; :class:`_Again` when its
    whole read ran out of memory (the file is to be sent again, streamed)."""
    import subprocess

    try:
        done = started.completed()
    except subprocess.TimeoutExpired:
        started.kill()
        raise SnapshotError(_too_slow(started.limit)) from None
    except BaseException:
        started.kill()
        raise
    if done.returncode == EXIT_AGAIN and not started.mode:
        raise _Again()
    if done.returncode == EXIT_REFUSED:
        raise SnapshotError(done.stderr.decode("utf-8", "replace").strip()[-2000:])
    if done.returncode < 0:
        raise SnapshotError(_crash_message(done.returncode, started.memory, started.limit))
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise SnapshotError(f"the snapshot reader failed (exit status {done.returncode}): {tail[0][:500]}")
    return unpack_answer(done.stdout)


# Many small files, one child (a job's flight-recorder dumps, a folder of snapshots): the child's start
# (~0.1 s) is paid once. The parent writes each file as an 8-byte little-endian length and its bytes; the
# child answers each in order with one status byte (0: read, 1: refused, the payload is the message),
# an 8-byte length and the payload. A child that dies (a signal, a limit) ends the file it was reading;
# the files after it go to a fresh child.
_LEN = struct.Struct("<Q")


def _frames(raw: bytes) -> list[tuple[int, bytes]]:
    got, pos = [], 0
    while pos + 1 + _LEN.size <= len(raw):
        status, n = raw[pos], _LEN.unpack_from(raw, pos + 1)[0]
        start = pos + 1 + _LEN.size
        if start + n > len(raw):
            break
        got.append((status, raw[start : start + n]))
        pos = start + n
    return got


def read_many_in_child(datas: Sequence[bytes], mode: str) -> list[bytes | SnapshotError]:
    """Each file of ``datas`` read by one bounded child in ``mode`` (``"snapshot"``: the packed
    snapshot's answer (:mod:`.answer`); ``"plain"``: the restricted reader's value as JSON), in order: the payload, or
    the file's :class:`SnapshotError`. The child's address space is sized from the largest file
    (:func:`memory_limit_bytes`), its CPU and wall time from all of them (:func:`time_limit_s` each)."""
    import subprocess

    answers: list[bytes | SnapshotError] = []
    rest = list(datas)
    while rest:
        memory = memory_limit_bytes(max(len(d) for d in rest))
        limit = sum(time_limit_s(len(d)) for d in rest)
        child = _child(["0", str(memory), str(limit), mode])
        out, readers = _collect(child)
        deadline = time.monotonic() + limit
        timed_out = False
        try:
            for data in rest:
                child.stdin.write(_LEN.pack(len(data)))
                child.stdin.write(data)
            child.stdin.close()
        except BrokenPipeError:
            pass
        except BaseException:  # ``datas``' own error: the child is not left waiting for the rest
            child.kill()
            child.wait()
            raise
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            timed_out = True
        for t in readers:
            t.join()
        done = _frames(out.get("stdout", b""))[: len(rest)]
        answers += [
            payload if status == 0 else SnapshotError(payload.decode("utf-8", "replace")) for status, payload in done
        ]
        rest = rest[len(done) :]
        if not rest:
            break
        if timed_out:
            error = SnapshotError(
                f"reading these pickles took more than {limit:.0f} s, the limit for their "
                "sizes: not memory snapshots (a hostile or corrupt file?)"
            )
        elif child.returncode < 0:
            error = SnapshotError(_crash_message(child.returncode, memory, limit))
        else:
            tail = out.get("stderr", b"").decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            error = SnapshotError(f"the snapshot reader failed (exit status {child.returncode}): {tail[0][:500]}")
        answers.append(error)  # the file the child was reading when it ended
        rest = rest[1:]
    return answers


def read_pickles(datas: Sequence[bytes]) -> list[object | SnapshotError]:
    """The value of each pickle in ``datas``, read by the restricted streaming reader
    (:mod:`.pickle_stream`: builtin containers and scalars only; at most :func:`~.expansion.object_limit`
    objects after shared references are expanded) in one child process under the limits of
    :func:`read_many_in_child`, or that file's :class:`SnapshotError`. Values come back as JSON
    (:func:`~tb_plugin.trace.jsonsafe.clean`: tuples as lists, keys as text, big integers as text).
    For many small files (a job's flight-recorder dumps): this process never unpickles them."""
    import orjson

    out: list[object | SnapshotError] = []
    for got in read_many_in_child(datas, "plain"):
        if isinstance(got, SnapshotError):
            out.append(got)
            continue
        try:
            out.append(orjson.loads(got))
        except orjson.JSONDecodeError as exc:
            out.append(SnapshotError(f"the pickle reader answered unreadable data: {exc}"))
    return out


def unpack_answer(payload: bytes | bytearray) -> tuple[dict, dict]:
    """(header, arrays) of the child's answer (:mod:`.answer`; the arrays are views of ``payload``);
    :class:`SnapshotError` when it does not read."""
    from .answer import read_answer  # (here: this module is imported before numpy by :mod:`.early`)

    try:
        return read_answer(payload)
    except (ValueError, TypeError) as exc:  # (orjson.JSONDecodeError is a ValueError)
        raise SnapshotError(f"the snapshot reader answered unreadable data: {exc}") from None


# One reader child kept for small files: its start (~0.1 s, seconds on a busy machine) is paid once
# for a logdir of many small snapshots or dumps. It runs under the limits of a SHARED_MAX_BYTES file
# (address space) and, before each file, that file's CPU time (see snapshot._batch); a file that
# crashes it or runs out of time ends it, and the next file starts a fresh one.
SHARED_MAX_BYTES = 4 << 20  # files up to this size are read by the shared child
_shared_lock = threading.Lock()
_shared: list[_Child] = []  # the live shared child, if any


def read_shared(data: bytes, mode: str) -> bytes | bytearray | SnapshotError:
    """:func:`read_many_in_child` of one small file (up to :data:`SHARED_MAX_BYTES`) on the shared
    child: the payload or the file's :class:`SnapshotError`. One file at a time (a lock)."""
    import subprocess

    limit = time_limit_s(len(data))
    with _shared_lock:
        if _shared and (_shared[0].poll() is not None or _shared[0].args[-1] != mode):
            _end(_shared.pop())
        if not _shared:
            memory = memory_limit_bytes(SHARED_MAX_BYTES)
            child = _child([str(SHARED_MAX_BYTES), str(memory), str(limit), mode])
            child.stderr.close()
            _shared.append(child)
        child = _shared[0]
        try:
            child.stdin.write(_LEN.pack(len(data)) + bytes(data))
            child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        deadline = time.monotonic() + limit
        head = _read_exact(child.stdout.fileno(), 1 + _LEN.size, deadline)
        payload = None if head is None else _read_exact(child.stdout.fileno(), _LEN.unpack_from(head, 1)[0], deadline)
        if head is not None and payload is not None:
            return payload if head[0] == 0 else SnapshotError(payload.decode("utf-8", "replace"))
        timed_out = time.monotonic() >= deadline
        if not timed_out:  # its output ended: it is exiting
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        _end(_shared.pop())
        if timed_out:
            return SnapshotError(
                f"reading this pickle took more than {limit:.0f} s, the limit for its size: "
                "it is not a memory snapshot (a hostile or corrupt file?)"
            )
        return SnapshotError(
            _crash_message(child.returncode, memory_limit_bytes(SHARED_MAX_BYTES), limit)
            if (child.returncode or 0) < 0
            else f"the snapshot reader failed (exit status {child.returncode})"
        )
