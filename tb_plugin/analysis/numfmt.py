"""Fixed-point text of a number, rounded by the one rule the frontend uses too (``util/format.ts``
``roundHalfAway``), so ``kinetoscope report`` and the UI show the same digits for the same value.

The rule: take the value's shortest round-trip decimal representation (Python's ``repr``,
JavaScript's ``String(x)``; both give the same digits for a finite double) and round that decimal
half away from zero at ``digits`` decimals. So 2.25 → "2.3", 56.25 → "56.3", -0.125 → "-0.13" and
1.005 (stored as 1.00499999999999989…) → "1.01". Python's own ``format(x, ".1f")`` rounds the exact
binary value half to even (2.25 → "2.2"), and JavaScript's ``toFixed`` rounds it half up; neither
matches the other nor what the number reads as. A result of zero carries no sign ("0.0", never "-0.0").
"""

from __future__ import annotations

import decimal
import math

_CONTEXT = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)  # ROUND_HALF_UP is half away from zero


def fixed(value: float, digits: int, sign: bool = False) -> str:
    """``value`` with exactly ``digits`` decimals by the rule above; ``sign`` adds "+" to a value
    that is not negative. NaN and infinities come back as Python writes them ("nan", "inf")."""
    value = float(value)
    if not math.isfinite(value):
        return f"{value:+}" if sign else str(value)
    d = decimal.Decimal(repr(value)).quantize(decimal.Decimal(1).scaleb(-digits), context=_CONTEXT)
    if d.is_zero():
        d = d.copy_abs()
    text = f"{d:f}"
    return f"+{text}" if sign and not text.startswith("-") else text


def decimal_text(value: float, digits: int = 3) -> str:
    """A number as short text, for raw floats shown as they are (CSV cells, event arguments): an integral
    value as an integer ("3"); else ``digits`` decimals (more below 1, so three significant digits stay:
    0.0123 → "0.0123") by :func:`fixed`, trailing zeros dropped (2.30303 → "2.303", 99.99999999999991 →
    "100", 262422.46700000024 → "262422.467"). Same as ``util/format.ts`` ``formatDecimal``."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return str(int(value))
    a = abs(value)
    d = digits if a >= 1 else min(15, max(digits, 2 - math.floor(math.log10(a))))
    text = fixed(value, d)
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def duration(us: float) -> str:
    """µs as text in the unit that reads best, as the UI's ``formatDuration`` writes it: below 1 ms in
    µs (2 decimals below 10 µs, none above: "7.25 µs", "812 µs"), below 1 s in ms and above in s, with
    2 decimals ("123.46 ms", "1.50 s"), all by :func:`fixed`'s rounding rule."""
    us = float(us)
    size = abs(us)
    if size < 10:
        return f"{fixed(us, 2)} µs"
    if size < 1e3:  # grouped as the UI groups: 999.5 rounds to "1,000 µs"
        return f"{int(fixed(us, 0)):,} µs"
    if size < 1e6:
        return f"{fixed(us / 1e3, 2)} ms"
    return f"{fixed(us / 1e6, 2)} s"
