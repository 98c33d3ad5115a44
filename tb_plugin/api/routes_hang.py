"""The Hang view's routes: a run's flight-recorder verdict (``hang``) and one rank's entries with
their frames (``hang_entries``), both from :mod:`tb_plugin.registry.hang`."""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError
from ..registry.hang import rank_entries
from ..registry.interface import Registry
from .params import Args, integer, param
from .routes import Answer, route


def _records(registry: Registry, run: str) -> tuple[list[Any], list[Any]]:
    got = registry.hang_records(run)
    if got is None:
        raise NotFoundError(f"no flight-recorder dump in run {run!r}")
    return got


@route
def hang(registry: Registry, args: Args) -> Answer:
    """The run's hang document (docs/http_api.md): verdict, groups, findings, unreadable dumps."""
    run = param(args, "run")
    _records(registry, run)
    doc = registry.hang(run)
    if doc is None:  # the dumps went away between the two calls
        raise NotFoundError(f"no flight-recorder dump in run {run!r}")
    return 200, dict(doc, state="ready", run=run)


@route
def hang_entries(registry: Registry, args: Args) -> Answer:
    """The newest entries of one rank's dump, with their frames when recorded."""
    run = param(args, "run")
    rank = integer(args, "rank", 0, 0, 1 << 24)
    got = rank_entries(_records(registry, run)[0], rank)
    if got is None:
        raise NotFoundError(f"no readable dump of rank {rank} in run {run!r}")
    return 200, dict(got, state="ready", run=run)


__all__ = ["hang", "hang_entries"]
