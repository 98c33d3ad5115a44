"""A batch's raw events as the ranged parse's first pass placed them: their count and lengths known, the
batch not split into raw events again unless one is asked for.

The ranged parse's first pass splits each range of the file into raw events (``_RAW_LIST``, in
:func:`.ranges.scan_range`) to place them; the second pass reads a unit's events back from the file and
decodes each batch. Split again there, the batch's raw events serve only their lengths (the events side
file's offsets) unless an event is not a plain object (a counter, a failed decode): on the 0.3 GB trace
the second split was ~0.2 s of the decode workers' CPU (~45 ms per 60 MB of events), which the
whole-document and streamed decodes (one split) never pay. :class:`PlacedRaws` gives the first pass's
lengths, and the split's raw events only when they are asked for; where the batch's decode does not
agree with the placement (another count of events, or a placed event that is not an object there: the
file changed between the passes), it splits the batch and gives what the split gives."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import numpy as np

from .events import _RAW_LIST


class PlacedRaws(Sequence[msgspec.Raw]):
    """The raw events of ``joined`` (``[`` + the events as the file has them + ``]``) that start at
    ``starts`` (byte positions in ``joined``) and are ``lengths`` bytes long."""

    def __init__(self, joined: bytes | memoryview, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.joined = joined
        self.starts = np.asarray(starts, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self._raws: list[msgspec.Raw] | None = None

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: Any) -> Any:
        return self.split()[i]

    def __iter__(self) -> Iterator[msgspec.Raw]:
        return iter(self.split())

    def split(self) -> list[msgspec.Raw]:
        """The batch split into its raw events (once); from then on, their count and lengths are the
        split's."""
        if self._raws is None:
            self._raws = _RAW_LIST.decode(self.joined)
            self.lengths = np.fromiter(map(len, self._raws), dtype=np.int64, count=len(self._raws))
        return self._raws

    def settle(self, events: Sequence[Any]) -> None:
        """After the batch's decode into ``events``: split it unless the placement agrees (as many events,
        each placed event starting with ``{`` and ending with ``}`` where it is placed)."""
        if self._raws is None and not self._agrees(len(events)):
            self.split()

    def _agrees(self, count: int) -> bool:
        if count != len(self.lengths):
            return False
        if not count:
            return True
        ends = self.starts + self.lengths - 1
        if self.starts.min() < 1 or (self.lengths < 2).any() or ends.max() >= len(self.joined) - 1:
            return False
        text = np.frombuffer(self.joined, dtype=np.uint8)
        return bool((text[self.starts] == ord("{")).all() and (text[ends] == ord("}")).all())


def raw_lengths(raws: Sequence[Any]) -> np.ndarray:
    """Each raw event's length in bytes (a :class:`PlacedRaws` knows them without a split)."""
    if isinstance(raws, PlacedRaws):
        return raws.lengths
    return np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
