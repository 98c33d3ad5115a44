"""The settings record: every ``KINETOSCOPE_*`` environment variable, read in this module only.

The entry points (the TensorBoard plugin, the CLI, ``kinetoscope serve``, the MCP server, the notebook
API) build one :class:`Settings` with :meth:`Settings.from_env` (or take one given explicitly) and pass
it down: to the registry (the memory budget, the executor), the parse cache (its directory) and the MCP
answer bound. The loader's limits (bytes per trace, the streaming threshold, decode workers), which run
inside worker processes too, use :func:`current`: the environment as it is when no entry point is in
between (a library call). No other module reads these variables (``tests/unit/project/test_settings.py``).
The table of settings, with units and defaults, is in docs/GUIDE.md ("Settings").
"""

from __future__ import annotations

import os
from typing import Literal, Mapping, MutableMapping

DEFAULT_MEMORY_BUDGET_MB = 1536.0
DEFAULT_MCP_MAX_ANSWER_BYTES = 32 << 10
MIN_MCP_MAX_ANSWER_BYTES = 4096
TableForm = Literal["dataframe", "records"]

# setting → its environment variable
ENV_NAMES = {
    "memory_budget_mb": "KINETOSCOPE_MEMORY_BUDGET_MB",
    "max_trace_bytes": "KINETOSCOPE_MAX_TRACE_BYTES",
    "stream_above_bytes": "KINETOSCOPE_STREAM_ABOVE_BYTES",
    "decode_workers": "KINETOSCOPE_DECODE_WORKERS",
    "cache_dir": "KINETOSCOPE_CACHE_DIR",
    "executor": "KINETOSCOPE_EXECUTOR",
    "mcp_max_answer_bytes": "KINETOSCOPE_MCP_MAX_ANSWER_BYTES",
    "tables": "KINETOSCOPE_TABLES",
}


class Settings:
    """What the environment configures; ``None`` means the built-in default, computed where it is used
    (it depends on the machine: its memory, its cores, the platform's cache directory). Immutable; equal
    and hashed by its values. A plain class, not a dataclass: ``dataclasses`` imports ``inspect`` (with
    ``ast``, ``dis``, ``tokenize``: ~6 ms of CPU), and every command builds its settings first, before it
    has anything else to import. (A ``NamedTuple`` would cost as little, but equals and unpacks as a tuple.)"""

    __slots__ = tuple(ENV_NAMES)  # the settings, in the constructor's order

    memory_budget_mb: float  # MB of loaded traces' views kept in memory
    max_trace_bytes: int | None  # bytes one trace may read or decompress to (None: 1/8 of memory)
    stream_above_bytes: int | None  # bytes above which a trace is decoded as a stream
    decode_workers: int | None  # processes decoding one streamed trace (None: the usable cores)
    cache_dir: str | None  # the parse cache's directory (None: the platform's user cache)
    executor: str | None  # where per-rank work runs: "local" or "dask://HOST:PORT" (None: local)
    mcp_max_answer_bytes: int  # bytes of one MCP answer (compact JSON)
    tables: TableForm  # the notebook API's tables: pandas DataFrames, or lists of dicts

    def __init__(
        self,
        memory_budget_mb: float = DEFAULT_MEMORY_BUDGET_MB,
        max_trace_bytes: int | None = None,
        stream_above_bytes: int | None = None,
        decode_workers: int | None = None,
        cache_dir: str | None = None,
        executor: str | None = None,
        mcp_max_answer_bytes: int = DEFAULT_MCP_MAX_ANSWER_BYTES,
        tables: TableForm = "dataframe",
    ) -> None:
        values = (
            memory_budget_mb,
            max_trace_bytes,
            stream_above_bytes,
            decode_workers,
            cache_dir,
            executor,
            mcp_max_answer_bytes,
            tables,
        )
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the settings are immutable: cannot assign to {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"the settings are immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if isinstance(other, Settings) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"

    def __reduce__(self) -> tuple:
        return (Settings, self._values())  # (pickled through the constructor: no attribute is assigned)

    @property
    def memory_budget_bytes(self) -> int:
        return int(self.memory_budget_mb * (1 << 20))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default ``os.environ``) gives; a malformed value is the default."""
        env = os.environ if environ is None else environ

        def raw(name: str) -> str:
            return env.get(ENV_NAMES[name], "").strip()

        tables: TableForm = "records" if raw("tables") == "records" else "dataframe"
        return cls(
            memory_budget_mb=_positive_float(raw("memory_budget_mb")) or DEFAULT_MEMORY_BUDGET_MB,
            max_trace_bytes=_positive_int(raw("max_trace_bytes")),
            stream_above_bytes=int(raw("stream_above_bytes")) if raw("stream_above_bytes").isdigit() else None,
            decode_workers=max(1, int(raw("decode_workers"))) if raw("decode_workers").isdigit() else None,
            cache_dir=raw("cache_dir") or None,
            executor=raw("executor") or None,
            mcp_max_answer_bytes=_positive_int(raw("mcp_max_answer_bytes")) or DEFAULT_MCP_MAX_ANSWER_BYTES,
            tables=tables,
        )


def current() -> Settings:
    """The settings of a call that no entry point configured: the environment as it is now."""
    return Settings.from_env()


def usable_cores() -> int:
    """The cores this process may run on (its affinity: ``taskset``, a container's cpuset), else all; ≥ 1.
    What ``decode_workers`` defaults to, and whether a second core may take an early read."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_environment(values: Mapping[str, str], environ: MutableMapping[str, str] | None = None) -> None:
    """Each of ``values`` set in ``environ`` (default ``os.environ``: this process and the children it
    starts) where the caller's environment does not name it already. The command line's one write of
    its own environment: the numeric libraries' thread counts, before numpy is imported (cli.entry)."""
    env = os.environ if environ is None else environ
    for name, value in values.items():
        env.setdefault(name, value)


def _positive_float(text: str) -> float | None:
    try:
        value = float(text) if text else 0.0
    except ValueError:
        return None
    return value if 0 < value < float("inf") else None


def _positive_int(text: str) -> int | None:
    """``text`` as a positive integer (``1e8`` allowed), else None (empty, malformed, infinite, ≤ 0)."""
    value = _positive_float(text)
    return int(value) if value is not None and value >= 1 else None


__all__ = ["ENV_NAMES", "Settings", "current", "default_environment"]
