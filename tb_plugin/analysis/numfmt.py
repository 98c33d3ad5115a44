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
