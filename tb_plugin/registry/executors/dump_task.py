"""The executors' task for flight-recorder dumps: read a batch of one job's dump files and return
their compact records (:mod:`tb_plugin.artifacts.flight_recorder`); the batch's pickles share one
bounded reader child. Like :func:`.task.reduce_rank`, it never raises: a bad file is that file's error."""

from __future__ import annotations

import os
import socket
import time

from ...storage.fs import open_logdir
from ...storage.remote import StorageError
from ...trace.errors import TraceReadError
from ..parse import read_bytes

BATCH_FILES = 64  # dumps per task: one reader child each (its start-up, ~0.1 s, shared by the batch)


def read_dump_batch(job):
    """A :class:`~.task.RankResult` whose ``aggregate`` is ``{"records": {key: record or {"error": msg}}}``
    for ``job.batch`` (``(key, url, size)`` triples)."""
    from ...artifacts.flight_recorder import DumpError, read_pickles
    from .task import RankResult

    started = time.perf_counter()
    result = RankResult(key=job.key, where=f"{socket.gethostname()}:{os.getpid()}")
    records: dict[str, dict] = {}

    def files():
        for key, url, size in job.batch:
            try:
                fs, path = open_logdir(url)
                data = read_bytes(fs, path, size, json_document=False)
            except (TraceReadError, StorageError, OSError, ValueError) as exc:
                records[key] = {"error": str(exc)}
                continue
            yield key, bytes(data)

    for key, got in read_pickles(files()).items():
        records[key] = {"error": str(got)} if isinstance(got, DumpError) else got
    result.aggregate = {"records": records}
    result.seconds = time.perf_counter() - started
    return result
