"""A file writer that writes in a background thread, so parsing never waits on the disk."""

from __future__ import annotations

import queue
import threading

QUEUED_CHUNKS = 8  # chunks waiting to be written at most (each is one decode batch, a few MB)


class BackgroundWriter:
    """Wraps an open binary file: :meth:`write` queues the bytes and returns; a thread writes them in
    order (file writes release the GIL, so they overlap the decoding that holds it). :meth:`close`
    waits for every queued write and raises the first write error, if any. ``name`` is the file's."""

    def __init__(self, file) -> None:
        self.file = file
        self.name = getattr(file, "name", None)
        # the trace file's real path when its raw events may be left in it (see trace/decode_stream.py)
        self.in_place_path: str | None = None
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED_CHUNKS)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="kinetoscope-writer", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
            if self._error is None:
                try:
                    self.file.write(chunk)
                except BaseException as exc:  # reported by close(); later chunks are dropped
                    self._error = exc

    def write(self, chunk: bytes) -> int:
        if self._error is not None:
            raise self._error
        self._queue.put(chunk)
        return len(chunk)

    def rewind(self) -> None:
        """Empty the file and start over (a decoder that gave up half way and decodes again)."""
        self.close()
        self.file.seek(0)
        self.file.truncate()
        self._thread = threading.Thread(target=self._drain, name="kinetoscope-writer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Flush the queue into the file (the file itself stays open: its owner closes it)."""
        if self._thread.is_alive():
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
