"""finetuning-scheduler's MemProfiler output (its ``memprofiler/`` folder): the stats YAML and the
FSDP text reports. The allocator snapshots it writes (``cuda_alloc_rank_<key>.pickle``) are ordinary
allocator snapshots (:mod:`.snapshot`).

Files of one folder, per rank ``r``:

- ``rank_<r>_memory_stats.yaml``: a mapping from a *snapshot key* ``<rank>.<function>.<iteration>.<phase>``
  (``0.training_step.2.start``; phase ``start`` or ``end`` of the profiled call) to that snapshot's values:
  the keys of ``torch.cuda.memory_stats()`` (``allocated_bytes.all.current`` … in bytes, ``allocation.all.peak``
  … as counts), ``rss``/``vms`` of the process (bytes), and the forward-hook attributes
  ``rss_pre_forward``, ``rss_post_forward``, ``rss_diff``, ``npp_pre_forward``, ``npp_post_forward``,
  ``npp_diff`` (bytes; *npp* = bytes of non-parameter tensors packed by the saved-tensors hook, an upper
  bound of activation memory; ``None`` when the hook did not run).
  PyYAML's default dumper writes the top-level ``defaultdict`` as
  ``!!python/object/apply:collections.defaultdict`` with the entries under ``dictitems``. That one tag is
  read as the plain mapping of its ``dictitems`` by a :class:`yaml.SafeLoader` subclass; every other
  Python tag is refused, and no Python object is ever constructed.
- ``rank_<r>_memory_stats.pickle``: the same stats pickled. Not read (unpickling runs code); the YAML
  form is.
- ``fsdp_mem_rank_<r>_<function>_<iteration>.log``: FSDP memory tracker reports, shown as text.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import numpy as np

from ..storage.naming import STATS_FILE

MAX_STATS_BYTES = 16 << 20  # a stats file is a few KB per snapshot; larger is not a MemProfiler file
MAX_SNAPSHOTS = 2000
MAX_VALUES = 400_000  # values sent in all (a 16 MiB file holds about this many; aliases cannot multiply it)
MAX_DEPTH = 64  # nesting levels of the YAML document (a stats file has 4)
MAX_LOG_BYTES = 1 << 20  # text reports are shown up to this many bytes

SNAP_KEY = re.compile(r"^(\d+)\.([A-Za-z_][\w]*)\.(\d+)\.(start|end)$")

#: The values the table and chart show first: (key, label, unit). Units: "bytes" or "count".
HEADLINE = (
    ("allocated_bytes.all.current", "CUDA allocated", "bytes"),
    ("allocated_bytes.all.peak", "CUDA allocated, peak", "bytes"),
    ("reserved_bytes.all.current", "CUDA reserved", "bytes"),
    ("reserved_bytes.all.peak", "CUDA reserved, peak", "bytes"),
    ("active_bytes.all.peak", "CUDA active, peak", "bytes"),
    ("rss", "Process RSS", "bytes"),
    ("vms", "Process VMS", "bytes"),
    ("npp_pre_forward", "Non-param packed, pre-forward", "bytes"),
    ("npp_post_forward", "Non-param packed, post-forward", "bytes"),
    ("npp_diff", "Non-param packed, forward delta", "bytes"),
    ("rss_pre_forward", "RSS pre-forward", "bytes"),
    ("rss_post_forward", "RSS post-forward", "bytes"),
    ("rss_diff", "RSS forward delta", "bytes"),
    ("allocation.all.current", "CUDA allocations (live)", "count"),
    ("num_alloc_retries", "cudaMalloc retries", "count"),
    ("num_ooms", "Out-of-memory errors", "count"),
)


class MemProfilerError(Exception):
    """Not a readable MemProfiler file (the message says why)."""


@functools.cache
def _yaml_kit() -> tuple:
    """``(yaml, _Loader, _OPEN, _CLOSE)``, made on first use: PyYAML's import is ~8 ms of every start
    of a process that reads no MemProfiler file (``memprofiler.yaml`` and the others still resolve).

    ``_Loader``: libyaml's C parser when PyYAML was built with it (~10× faster: a 16 MiB file in
    seconds, not 87 s), else the pure-Python one; both construct with SafeConstructor only, plus one
    tag: the ``defaultdict`` PyYAML's default dumper writes, read as a mapping."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # chosen at run time

    class _Loader(base):
        pass

    _Loader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.defaultdict", _defaultdict)
    # the default factory (``!!python/name:builtins.dict ''``) is only a name here: read it as text
    _Loader.add_constructor("tag:yaml.org,2002:python/name:builtins.dict", lambda loader, node: "builtins.dict")
    return (
        yaml,
        _Loader,
        (yaml.SequenceStartEvent, yaml.MappingStartEvent),
        (yaml.SequenceEndEvent, yaml.MappingEndEvent),
    )


def __getattr__(name: str):
    if name in ("yaml", "_Loader", "_OPEN", "_CLOSE"):
        return _yaml_kit()[("yaml", "_Loader", "_OPEN", "_CLOSE").index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _defaultdict(loader, node):
    yaml = _yaml_kit()[0]
    if not isinstance(node, yaml.MappingNode):
        raise MemProfilerError("the top-level defaultdict is not a mapping")
    for key_node, value_node in node.value:
        if loader.construct_object(key_node) == "dictitems":
            if not isinstance(value_node, yaml.MappingNode):
                raise MemProfilerError("the defaultdict's dictitems is not a mapping")
            return loader.construct_mapping(value_node, deep=True)
    return {}


def _index(digits: str) -> int | str:
    """A rank or iteration of a file or snapshot name: an int, or (more than 18 digits) its decimal text."""
    return int(digits) if len(digits) <= 18 else digits


def _order(index: int | str) -> tuple:
    """Sort key of an :func:`_index`: numbers first, by value; then the long ones, by length and text."""
    return (0, index, "") if isinstance(index, int) else (1, len(index), index)


_NOT_A_NUMBER = object()


def _number(value):
    """A stats value as kept: None, a float, an int of 64 bits, or an integer beyond 64 bits as a
    float (bytes and counts stay numbers for the charts and the peaks); anything else (text, lists,
    an integer beyond the float range) is :data:`_NOT_A_NUMBER`."""
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**63) <= value < 2**63:
            return value
        try:
            return float(value)
        except OverflowError:
            return _NOT_A_NUMBER
    return _NOT_A_NUMBER


def load_stats(name: str, data: bytes) -> dict:
    """Parse a ``rank_<r>_memory_stats.yaml`` file.

    Returns ``{"rank", "snapshots": [{"key", "rank", "function", "iteration", "phase", "values"}],
    "warnings"}``, snapshots ordered by function, iteration, then start before end. ``values`` keeps
    numbers (bytes or counts as written; beyond 64 bits as floats) and ``None``; other values are
    dropped with a warning, as are entries whose key is not a snapshot key."""
    m = STATS_FILE.match(name)
    if m and m.group(2) == "pickle":
        raise MemProfilerError(
            "pickled MemProfiler stats are not read (unpickling can run code); "
            "the YAML form is (MemProfilerCfg dump_memorystats_yaml: true)"
        )
    if len(data) > MAX_STATS_BYTES:
        raise MemProfilerError(
            f"{len(data)} bytes is more than a MemProfiler stats file holds (limit {MAX_STATS_BYTES} bytes)"
        )
    yaml, loader = _yaml_kit()[:2]
    try:
        _check_depth(data)
        doc = yaml.load(data, Loader=loader)
    except MemProfilerError:
        raise
    except yaml.YAMLError as exc:
        raise MemProfilerError(f"invalid YAML: {' '.join(str(exc).split())[:300]}") from None
    except RecursionError:
        raise MemProfilerError("invalid YAML: nested too deeply") from None
    if not isinstance(doc, dict):
        raise MemProfilerError(f"expected a mapping of snapshot keys, found {type(doc).__name__}")
    snapshots: list[dict[str, Any]] = []
    bad_keys: list[str] = []
    dropped = 0
    filtered: dict[int, tuple[dict, dict, int]] = {}  # id(values) -> (values, kept alive; kept; dropped)
    for key, values in doc.items():
        km = SNAP_KEY.match(str(key))
        if km is None or not isinstance(values, dict):
            bad_keys.append(str(key))
            continue
        seen = filtered.get(id(values))  # YAML aliases (*a) let many keys share one mapping: filter it once
        if seen is None or seen[0] is not values:
            seen = filtered[id(values)] = (values, *_numbers(values))
        kept = seen[1]
        dropped += seen[2]
        snapshots.append(
            {
                "key": str(key),
                "rank": _index(km.group(1)),
                "function": km.group(2),
                "iteration": _index(km.group(3)),
                "phase": km.group(4),
                "values": kept,
            }
        )
    warnings = []
    if bad_keys:
        warnings.append(
            f"skipped {len(bad_keys)} entries whose key is not <rank>.<function>.<iteration>."
            f"<start|end> with a mapping of values: {', '.join(repr(k[:80]) for k in bad_keys[:5])}"
        )
    if dropped:
        warnings.append(f"skipped {dropped} values that are not numbers")
    if not snapshots:
        raise MemProfilerError(
            "no MemProfiler snapshots (keys like 0.training_step.2.start) in this file"
            + (f"; {warnings[0]}" if warnings else "")
        )
    if len(snapshots) > MAX_SNAPSHOTS:
        warnings.append(f"showing the first {MAX_SNAPSHOTS} of {len(snapshots)} snapshots")
    snapshots.sort(key=lambda s: (s["function"], _order(s["iteration"]), s["phase"] != "start", _order(s["rank"])))
    snapshots = snapshots[:MAX_SNAPSHOTS]
    total = np.cumsum([len(s["values"]) for s in snapshots])
    fit = max(1, int(np.searchsorted(total, MAX_VALUES, side="right")))
    if fit < len(snapshots):  # aliases can repeat one big mapping: the answer stays near the file's size
        warnings.append(f"showing the first {fit} of {len(snapshots)} snapshots ({MAX_VALUES} values at most)")
        snapshots = snapshots[:fit]
    if len(snapshots[0]["values"]) > MAX_VALUES:
        snapshots[0] = dict(snapshots[0], values=dict(itertools.islice(snapshots[0]["values"].items(), MAX_VALUES)))
    return {"rank": _index(m.group(1)) if m else None, "snapshots": snapshots, "warnings": warnings}


def _numbers(values: dict) -> tuple[dict, int]:
    """``(the numeric and null values of one snapshot, how many others were dropped)``."""
    kept = {}
    for stat, value in values.items():
        value = _number(value)
        if value is not _NOT_A_NUMBER:
            kept[str(stat)] = value
    return kept, len(values) - len(kept)


def _check_depth(data: bytes) -> None:
    """Refuse documents nested deeper than :data:`MAX_DEPTH` before they are composed: libyaml's
    composer recurses in C (a few thousand levels crash the process). Walks the parser's events,
    which keep no recursion."""
    yaml, loader, opens, closes = _yaml_kit()
    depth = 0
    for event in yaml.parse(data, Loader=loader):
        if isinstance(event, opens):
            depth += 1
            if depth > MAX_DEPTH:
                raise MemProfilerError(f"invalid YAML: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, closes):
            depth -= 1


def load_log(data: bytes, size: int) -> dict:
    """A text report: ``{"text", "size_bytes", "truncated"}``; ``data`` is the file's first bytes
    (at most :data:`MAX_LOG_BYTES` are kept), ``size`` its full size. Invalid UTF-8 is replaced."""
    shown = data[:MAX_LOG_BYTES]
    if b"\0" in shown[:8192]:
        raise MemProfilerError("binary data, not a text report")
    return {"text": shown.decode("utf-8", errors="replace"), "size_bytes": int(size), "truncated": size > len(shown)}
