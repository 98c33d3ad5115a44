"""A file writer that writes in a background thread, so parsing never waits on the disk."""

from __future__ import annotations

import queue
import threading

QUEUED_CHUNKS = 8  # hand-offs waiting to be written at most (each HANDOFF_BYTES or one larger chunk)
# Chunks reach the thread in lists of about this many bytes: a decode batch is ~1 MB, and each hand-off
# wakes the thread, which then takes the GIL from the decoder (31 hand-offs for a 35 MB trace, now 9)
HANDOFF_BYTES = 4 << 20


class BackgroundWriter:
    """Wraps an open binary file: :meth:`write` queues the bytes and returns; a thread writes them in
    order (file writes release the GIL, so they overlap the decoding that holds it). :meth:`close`
    waits for every queued write and raises the first write error, if any. ``name`` is the file's."""

    def __init__(self, file) -> None:
        self.file = file
        self.name = getattr(file, "name", None)
        # the trace file's real path when its raw events may be left in it (see trace/decode_stream.py)
        self.in_place_path: str | None = None
        # (descriptor, bytes): an unnamed file that already holds what this writer would have written, taken
        # in place of the file it writes (the early reader's split on disk: registry/parse.py links it)
        self.taken: tuple[int, int] | None = None
        self._queue: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=QUEUED_CHUNKS)
        self._pending: list[bytes] = []  # chunks not handed to the thread yet
        self._pending_bytes = 0
        self._origin = _position(file)  # where the first chunk goes in the file (None: not seekable)
        self._given = 0  # bytes taken by :meth:`write` since then
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="kinetoscope-writer", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            chunks = self._queue.get()
            if chunks is None:
                return
            if self._error is None:
                try:
                    for chunk in chunks:
                        self.file.write(chunk)
                except BaseException as exc:  # reported by close(); later chunks are dropped
                    self._error = exc

    def can_take(self) -> bool:
        """Whether nothing has been written here and the file starts where this writer does (offset 0)."""
        return self._origin == 0 and self._given == 0 and self.taken is None

    def take(self, fd: int, length: int) -> None:
        """The first ``length`` bytes of the open file ``fd`` are this writer's bytes (nothing is written
        here): the file's owner puts that file in place of its own (:func:`~.private_files.put_in_place`)."""
        self.taken = (fd, length)

    def write(self, chunk: bytes) -> int:
        if self._error is not None:
            raise self._error
        self._pending.append(chunk)
        self._pending_bytes += len(chunk)
        self._given += len(chunk)
        if self._pending_bytes >= HANDOFF_BYTES:
            self._hand_off()
        return len(chunk)

    def _hand_off(self) -> None:
        """Queue the pending chunks for the thread (waits while QUEUED_CHUNKS hand-offs are queued)."""
        if self._pending:
            self._queue.put(self._pending)
            self._pending = []
            self._pending_bytes = 0

    def rewind(self) -> None:
        """Empty the file and start over (a decoder that gave up half way and decodes again)."""
        self._pending = []
        self._pending_bytes = 0
        self.close()
        self.file.seek(0)
        self.file.truncate()
        self._origin, self._given = 0, 0
        self._thread = threading.Thread(target=self._drain, name="kinetoscope-writer", daemon=True)
        self._thread.start()

    def tell(self) -> int:
        """Where in the file the next chunk written will go (as a file's ``tell``, whether or not the
        thread has written the earlier ones yet); OSError when the file is not seekable."""
        if self._origin is None:
            raise OSError("the file is not seekable")
        return self._origin + self._given

    def close(self) -> None:
        """Flush the pending chunks and the queue into the file (the file itself stays open: its owner
        closes it)."""
        if self._thread.is_alive():
            self._hand_off()
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: stop the thread, keep the original error
            try:
                self.close()
            except BaseException:
                pass


def _position(file) -> int | None:
    try:
        return file.tell()
    except (AttributeError, OSError, ValueError):
        return None
