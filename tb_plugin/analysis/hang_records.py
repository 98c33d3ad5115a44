"""The typed rows of the hang document that analysis/hang.py ``analyse`` makes: plain dicts at run
time. Apart from analysis/hang.py so that the registry's records name them without importing the
hang modules (they load only for flight-recorder dumps)."""

from __future__ import annotations

from typing import Any, TypedDict


class DumpRankRow(TypedDict):
    """One dump read (:func:`analyse`'s ``ranks``): its rank and what it records."""

    rank: int
    path: str | None  # the dump's logdir-relative path
    rank_from: str | None  # "field" (the dump's own rank) or "name" (its file name)
    version: str | None  # the dump format's version
    entries: int  # its ring buffer's entries
    states_tracked: bool  # it records collectives' states (started)
    timing: bool  # it records start or completion times
    wrapped: bool  # its ring buffer wrapped (its oldest record_id above 0)
    pg_status: dict[str, Any]  # process group → its last enqueued/started/completed sequence numbers


class UnreadableDump(TypedDict):
    """A dump that could not be read, or a second dump of a rank (:func:`analyse`'s ``unreadable``)."""

    path: str | None
    rank: int | None  # None when neither the dump nor its name says
    error: str
