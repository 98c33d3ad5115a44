"""``kinetoscope report``'s per-rank progress on stderr."""

from __future__ import annotations

from typing import TextIO


class ProgressBar:
    """Per-rank progress on stderr: a line per finished rank, or a one-line bar on a terminal. With
    ``show_host`` (a Dask cluster) each line says which host and process ran the rank; on the local
    pool that is always this machine, so it is left out."""

    WIDTH = 30

    def __init__(self, stream: TextIO, total: int, show_host: bool = False) -> None:
        self.stream, self.total, self.show_host = stream, total, show_host
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def rank(self, done: int, total: int, result) -> None:
        """One rank finished (any order)."""
        what = f"failed: {result.error}" if result.error else f"{result.seconds:.2f} s"
        if not self.tty:
            host, _, pid = result.where.rpartition(":")
            where = f" (on host {host}, process {pid})" if self.show_host and host else ""
            self.stream.write(f"[{done}/{total}] {result.key}: {what}{where}\n")
            return
        fraction = done / max(total, 1)
        filled = int(self.WIDTH * fraction)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {int(100 * fraction):3d}%  "
            f"{done}/{self.total} {result.key[-50:]}\x1b[K"
        )
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.total:
            self.stream.write("\n")
