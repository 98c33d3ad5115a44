"""Where the per-rank work runs: the local process pool (default) or a Dask cluster.

Chosen by ``kinetoscope report --executor SPEC`` or, for any process (TensorBoard included), the
``KINETOSCOPE_EXECUTOR`` environment variable. SPEC is ``local`` (a pool sized to the cores and
memory, none for small jobs), ``local:N`` (N processes) or ``dask://HOST[:PORT]`` (port 8786 by
default; ``tcp://`` and ``tls://`` addresses are passed to Dask as they are). When Dask is
not installed, the scheduler cannot be reached within a few seconds or has no workers, the message
says so and the local process pool runs the ranks instead.
"""

from __future__ import annotations

from typing import Callable

from ...settings import ENV_NAMES, current
from .base import Executor, Progress, run_ranks
from .local import LocalExecutor
from .task import RankJob, RankResult, reduce_rank

ENV_VAR = ENV_NAMES["executor"]
DEFAULT_DASK_PORT = 8786

__all__ = [
    "ENV_VAR",
    "Executor",
    "LocalExecutor",
    "Progress",
    "RankJob",
    "RankResult",
    "dask_address",
    "executor_spec",
    "is_remote",
    "open_executor",
    "reduce_rank",
    "run_ranks",
]


def executor_spec(spec: str | None = None) -> str:
    """The executor asked for: ``spec``, else ``$KINETOSCOPE_EXECUTOR``, else ``local``."""
    return (spec or current().executor or "local").strip()


def is_remote(spec: str | None = None) -> bool:
    return executor_spec(spec).split(":", 1)[0] != "local"


def dask_address(spec: str) -> str | None:
    """``dask://host:port`` → ``tcp://host:port`` (None when ``spec`` is no Dask address)."""
    for scheme in ("dask://", "tcp://", "tls://"):
        if spec.startswith(scheme):
            rest = spec[len(scheme) :].rstrip("/")
            if not rest:
                return None
            if ":" not in rest.rsplit("]", 1)[-1]:
                rest = f"{rest}:{DEFAULT_DASK_PORT}"
            return ("tls://" if scheme == "tls://" else "tcp://") + rest
    return None


def open_executor(spec: str | None = None, warn: Callable[[str], object] | None = None) -> Executor:
    """The executor for ``spec`` (see the module docstring). Never fails: any problem with a remote
    executor is reported through ``warn`` and the local process pool is returned instead."""
    spec = executor_spec(spec)
    say = warn or (lambda _msg: None)
    if spec == "local":
        return LocalExecutor()
    if spec.startswith("local:"):
        count = spec[len("local:") :]
        if count.isdigit() and int(count) >= 1:
            return LocalExecutor(workers=int(count))
        say(f"executor {spec}: expected local:N with N ≥ 1; using the local process pool")
        return LocalExecutor()
    address = dask_address(spec)
    if address is None:
        say(f"unknown executor {spec!r} (expected 'local' or dask://HOST:PORT); using the local process pool")
        return LocalExecutor()
    from .dask import DaskExecutor  # imports distributed only when constructed

    try:
        return DaskExecutor(address)
    except ImportError:
        say(
            f"executor {spec}: Dask is not installed here (pip install 'kinetoscope[dask]'); "
            "using the local process pool"
        )
    except Exception as exc:  # unreachable, refused, TLS, no workers
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        say(f"executor {spec}: cannot use the Dask scheduler at {address} ({detail}); using the local process pool")
    return LocalExecutor()
