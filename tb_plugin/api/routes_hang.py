"""The Hang view's routes: a run's flight-recorder verdict (``hang``) and one rank's entries with
their frames (``hang_entries``), both from :mod:`tb_plugin.registry.hang`."""

from __future__ import annotations

from ..registry.hang import rank_entries
from ..registry.interface import Registry
from .params import NotFound, integer, param
from .routes import Args, route


def _records(registry: Registry, run: str):
    got = registry.hang_records(run)
    if got is None:
        raise NotFound(f"no flight-recorder dump in run {run!r}")
    return got


@route
def hang(registry: Registry, args: Args):
    """The run's hang document (docs/http_api.md): verdict, groups, findings, unreadable dumps."""
    run = param(args, "run")
    _records(registry, run)
    doc = registry.hang(run)
    if doc is None:  # its dumps went away since
        raise NotFound(f"no flight-recorder dump in run {run!r}")
    return 200, dict(doc, state="ready", run=run)


@route
def hang_entries(registry: Registry, args: Args):
    """The newest entries of one rank's dump, with their frames when recorded."""
    run = param(args, "run")
    rank = integer(args, "rank", 0, 0, 1 << 24)
    got = rank_entries(_records(registry, run)[0], rank)
    if got is None:
        raise NotFound(f"no readable dump of rank {rank} in run {run!r}")
    return 200, dict(got, state="ready", run=run)


__all__ = ["hang", "hang_entries"]
