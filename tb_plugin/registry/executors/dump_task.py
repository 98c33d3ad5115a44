"""The executors' task for flight-recorder dumps (:func:`.task.reduce_rank` of a ``flight_recorder``
job): read a batch of one job's dump files into compact records
(:mod:`tb_plugin.artifacts.flight_recorder`); the batch's pickles share one bounded reader child. A
bad file is that file's error."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from ...storage.fs import open_logdir
from ...storage.remote import StorageError
from ...trace.errors import TraceReadError
from ..parse import read_bytes

BATCH_FILES = 128  # dumps per task: one reader child each (its start-up, ~0.2 s of CPU, shared by the batch)


def read_dump_batch(batch: Iterable[tuple[str, str, int]]) -> dict[str, dict[str, Any]]:
    """key → record, or ``{"error": message}``, for each ``(key, url, size)`` of ``batch``."""
    from ...artifacts.flight_recorder import DumpError, read_pickles

    records: dict[str, dict[str, Any]] = {}

    def files() -> Iterator[tuple[str, bytes]]:
        for key, url, size in batch:
            try:
                fs, path = open_logdir(url)
                data = read_bytes(fs, path, size, json_document=False)
            except (TraceReadError, StorageError, OSError, ValueError) as exc:
                records[key] = {"error": str(exc)}
                continue
            yield key, bytes(data)

    for key, got in read_pickles(files()).items():
        records[key] = {"error": str(got)} if isinstance(got, DumpError) else got
    return records
