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
# export_memory_timeline's HTML form (Composer: rank{r}.{batch}.pt.trace.memory.html)
MEMORY_HTML_SUFFIX = ".memory.html"
# the export_memory_timeline forms written next to a trace: <stem><suffix> belongs to <stem>.pt.trace.json[.gz]
MEMORY_EXPORT_SUFFIXES = (
    ".pt.trace.memory.raw.json.gz",
    ".pt.trace.memory.raw.json",
    ".pt.trace.memory.json.gz",
    ".pt.trace.memory.json",
    ".pt.trace.memory.html",
)
_COMPOSER_STEM = re.compile(r"^rank(\d+)\.(\d+)$")
_RANK = re.compile(r"(?<![a-z0-9])rank[_-]?(\d+)(?![0-9])", re.IGNORECASE)


_OOM = re.compile(r"(?<![a-z])oom(?![a-z])", re.IGNORECASE)


def names_oom(name: str) -> bool:
    """True for a file whose name says it was dumped on an OOM (``oom`` as a word: ``rank0_oom.pickle``,
    ``snapshot-OOM.pkl``; not ``zoom``/``room``)."""
    return bool(_OOM.search(name))


def companion_traces(name: str) -> tuple[str, ...]:
    """The trace file names a memory export belongs to: ``rank0.3.pt.trace.memory.html`` →
    ``("rank0.3.pt.trace.json", "rank0.3.pt.trace.json.gz")``; ``()`` for any other name."""
    for suffix in MEMORY_EXPORT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            return (stem + ".pt.trace.json", stem + ".pt.trace.json.gz")
    return ()


def composer_rank_batch(name: str) -> tuple[int, int] | None:
    """``(rank, batch)`` of a Composer memory export ``rank{rank}.{batch}.pt.trace.memory.*``, else None."""
    for suffix in MEMORY_EXPORT_SUFFIXES:
        if name.endswith(suffix):
            m = _COMPOSER_STEM.match(name[: -len(suffix)])
            return (int(m.group(1)), int(m.group(2))) if m and len(m.group(1)) < 10 else None
    return None


def snapshot_rank(rel: str) -> tuple[str, int] | None:
    """``(group, rank)`` of a per-rank file: the first ``rank<N>`` (also ``rank_<N>``, ``rank-<N>``,
    any case) of the file name, else of its folder's name; ``group`` is ``rel`` with those digits
    replaced by ``*`` (the files of one job at one moment share it). None when neither names a rank."""
    parts = rel.split("/")
    for k in (len(parts) - 1, len(parts) - 2):
        if k < 0:
            break
        m = _RANK.search(parts[k])
        if m and len(m.group(1)) < 10:
            parts[k] = parts[k][: m.start(1)] + "*" + parts[k][m.end(1) :]
            return "/".join(parts), int(m.group(1))
    return None


_NO_EXTENSION = re.compile(r"^[^.]*$|\.\d+$")  # "nccl_trace_rank_3", "dump.12": no extension of a known kind
DUMP_SUFFIXES = (".pkl", ".pickle", ".json", ".bin", ".dump")


def may_be_flight_recorder(name: str) -> bool:
    """True for a file name a flight-recorder dump may have (they are written under any name, by default
    ``nccl_trace_rank_<r>``): no extension, or ``.pkl``/``.pickle``/``.json``/``.bin``/``.dump``. Such a
    file's head is sniffed (:func:`~.sniff.looks_like_flight_recorder`)."""
    return bool(_NO_EXTENSION.search(name)) or name.endswith(DUMP_SUFFIXES)


def artifact_kind(name: str) -> str | None:
    """``"snapshot"`` for allocator snapshot pickles, ``"memory_timeline"`` for raw
    ``export_memory_timeline`` files, ``"memory_html"`` for its HTML form (``*.memory.html``: a PNG in an
    ``<img>``), ``"memprofiler_stats"``/``"memprofiler_log"`` for
    finetuning-scheduler MemProfiler files (``rank_<r>_memory_stats.yaml``, ``fsdp_mem_*.log``), else
    None (``[times, sizes]`` JSON is found by sniffing)."""
    memprof = file_kind(name)
    if memprof is not None:
        return memprof
    if name.endswith(SNAPSHOT_SUFFIXES):
        return "snapshot"
    if name.endswith(TIMELINE_EXPORT_SUFFIXES):
        return "memory_timeline"
    if name.endswith(MEMORY_HTML_SUFFIX):
        return "memory_html"
    return None


def file_kind(name: str) -> str | None:
    """``"memprofiler_stats"`` for ``rank_<r>_memory_stats.{yaml,pickle}``, ``"memprofiler_log"`` for
    ``fsdp_mem_*.log``, else None."""
    if STATS_FILE.match(name):
        return "memprofiler_stats"
    if LOG_FILE.match(name):
        return "memprofiler_log"
    return None
