"""Exact time arithmetic: µs → integer ticks of 2^-k µs, counted from an origin.

Absolute trace timestamps are float64 µs; near 7e12 µs two neighbouring values are 2^-10 µs
(≈ 0.98 ns) apart, so a midpoint, a length or a running sum computed on them can round onto the next
edge. Subtracting an origin taken from the same timestamps is exact (the difference is a multiple of
their spacing and far smaller than them), and scaling by a power of two is exact. So on the tick grid
every edge is an integer held exactly in a float64 (below 2^52), and every length, sum and comparison
of ticks is exact; ticks ÷ 2^k gives µs back exactly. ``k`` is the largest with
``span · 2^k ≤ 2^51`` (at most 40: 2^-40 µs ≈ 1e-6 ps): e.g. k = 31 for a 1 s window. An edge that
is not on the grid (only with small timestamps, such as a trace whose clock starts at 0) is rounded to
the nearest tick.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

MAX_BITS = 40


@dataclasses.dataclass(frozen=True)
class TickScale:
    origin_us: float
    per_us: float  # ticks per µs, a power of two

    def ticks(self, us) -> np.ndarray:
        """Integer ticks (as float64) of absolute times in µs."""
        return np.rint((np.asarray(us, dtype=np.float64) - self.origin_us) * self.per_us)

    def ticks_in_place(self, us: np.ndarray) -> np.ndarray:
        """:meth:`ticks` of a float64 array of µs, computed in that array (overwritten) and returned."""
        us -= self.origin_us
        us *= self.per_us
        return np.rint(us, out=us)

    def us(self, ticks) -> np.ndarray:
        """µs (lengths or times relative to the origin) of tick counts; exact below 2^53 ticks."""
        return np.asarray(ticks, dtype=np.float64) / self.per_us


def tick_scale(lo_us: float, hi_us: float) -> TickScale:
    """The finest grid on which ``[lo, hi]`` (µs) spans at most 2^51 ticks, counted from ``lo``."""
    span = float(hi_us) - float(lo_us)
    bits = MAX_BITS
    if span > 0 and math.isfinite(span):
        bits = min(MAX_BITS, 51 - math.frexp(span)[1])  # span < 2^e
    return TickScale(float(lo_us), math.ldexp(1.0, bits))
