"""Which files are traces, and how a file name splits into worker and span.

- Trace files are ``*.pt.trace.json`` and ``*.pt.trace.json.gz``; any other ``*.json``/``*.json.gz``
  is a trace when its first 64 KB sniff as a Chrome trace (see :mod:`.sniff`).
- **Worker**: strip the longest matching suffix of :data:`TRACE_SUFFIXES`. If the rest ends in
  ``.<digits>``, the digits are the *span key* and what precedes them is the worker
  (``worker0.1623143089861`` → worker ``worker0``); otherwise the whole rest is the worker.
- **Span**: the 1-based position of a file among its worker's files, as a string. Files are ordered by
  span key as a number; files without a key come first (then by name).
"""

from __future__ import annotations

import re

TRACE_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".json.gz", ".json")
CERTAIN_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
CANDIDATE_SUFFIXES = (".json", ".json.gz")
_SPAN_KEY = re.compile(r"^(.*)\.(\d+)$")
# finetuning-scheduler MemProfiler output (see tb_plugin/artifacts/memprofiler.py)
STATS_FILE = re.compile(r"^rank_(\d+)_memory_stats\.(yaml|yml|pickle)$")
LOG_FILE = re.compile(r"^fsdp_mem_.*\.log$")


def is_certain_trace(name: str) -> bool:
    return name.endswith(CERTAIN_TRACE_SUFFIXES)


def is_candidate(name: str) -> bool:
    """``*.json``/``*.json.gz`` that is not a certain trace: sniff it."""
    return name.endswith(CANDIDATE_SUFFIXES) and not is_certain_trace(name)


def split_worker(file_name: str) -> tuple[str, int | None]:
    """``(worker, span_key)`` from a base file name."""
    stem = file_name
    for suffix in TRACE_SUFFIXES:  # longest first
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    m = _SPAN_KEY.match(stem)
    if m and m.group(1):
        return m.group(1), int(m.group(2))
    return stem, None


def assign_spans(file_names: list[str]) -> dict[str, tuple[str, str]]:
    """Map each base file name to ``(worker, span)`` for the files of one run."""
    by_worker: dict[str, list[tuple[int | None, str]]] = {}
    for name in file_names:
        worker, key = split_worker(name)
        by_worker.setdefault(worker, []).append((key, name))
    out = {}
    for worker, files in by_worker.items():
        files.sort(key=lambda kn: (kn[0] is not None, kn[0] if kn[0] is not None else 0, kn[1]))
        for position, (_, name) in enumerate(files, start=1):
            out[name] = (worker, str(position))
    return out


SNAPSHOT_SUFFIXES = (".pickle", ".pkl")
TIMELINE_EXPORT_SUFFIXES = (".raw.json.gz", ".raw.json", ".raw.gz")


def artifact_kind(name: str) -> str | None:
    """``"snapshot"`` for allocator snapshot pickles, ``"memory_timeline"`` for raw
    ``export_memory_timeline`` files, ``"memprofiler_stats"``/``"memprofiler_log"`` for
    finetuning-scheduler MemProfiler files (``rank_<r>_memory_stats.yaml``, ``fsdp_mem_*.log``), else
    None (``[times, sizes]`` JSON is found by sniffing)."""
    memprof = file_kind(name)
    if memprof is not None:
        return memprof
    if name.endswith(SNAPSHOT_SUFFIXES):
        return "snapshot"
    if name.endswith(TIMELINE_EXPORT_SUFFIXES):
        return "memory_timeline"
    return None


def file_kind(name: str) -> str | None:
    """``"memprofiler_stats"`` for ``rank_<r>_memory_stats.{yaml,pickle}``, ``"memprofiler_log"`` for
    ``fsdp_mem_*.log``, else None."""
    if STATS_FILE.match(name):
        return "memprofiler_stats"
    if LOG_FILE.match(name):
        return "memprofiler_log"
    return None
