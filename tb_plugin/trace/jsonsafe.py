"""JSON that never refuses a value read from a file.

orjson refuses three things a trace, YAML or pickle can hold: integers outside 64 bits, nesting
deeper than 254 levels, and strings with lone surrogates (``"\\ud800"``). :func:`jsonable` turns each
into a value: an integer outside [−2⁶³, 2⁶⁴) becomes its decimal string (hexadecimal past 4,000 digits), a container nested more than
:data:`MAX_DEPTH` levels below the root becomes a short text marker, and a lone surrogate becomes
U+FFFD; keys that are not text become text. :func:`dumps` tries orjson first and sanitizes only when it refuses, so ordinary documents
cost nothing extra. The parse-cache header, every JSON response and the CLI's ``--json`` use it.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

# orjson and dataclasses are imported where used: a snapshot's reader child keeps its values with
# :func:`plain_values` and writes its answer without either (~15 ms of imports: orjson's own import
# brings dataclasses, inspect, datetime and uuid)

MAX_DEPTH = 200  # containers nested deeper below the document root are replaced by DEEP_MARKER
DEEP_MARKER = f"(nested more than {MAX_DEPTH} levels deep: not shown)"
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson writes as a number
MAX_DECIMAL_DIGITS = 4000  # larger integers are written in hexadecimal (Python's own limit: 4300 digits)
_DECIMAL_BITS = int(MAX_DECIMAL_DIGITS * 3.3219)  # bits of the smallest MAX_DECIMAL_DIGITS-digit numbers, about


def _text(s: str) -> str:
    """``s`` with lone surrogates as U+FFFD (a valid pair is kept as its character)."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def int_text(value: int) -> str:
    """An integer as text: decimal, or hexadecimal (``0x…``, ``-0x…``) past :data:`MAX_DECIMAL_DIGITS`
    digits, where Python refuses a decimal conversion (and would take quadratic time)."""
    if value.bit_length() <= _DECIMAL_BITS:
        return str(value)
    return f"{'-' if value < 0 else ''}0x{abs(value):x}"


_CONSTANT_KEYS = {None: "null", True: "true", False: "false"}  # (as orjson writes them)


def _key(k: Any) -> str:
    """A mapping key as text (as orjson's OPT_NON_STR_KEYS writes numbers; None as "null")."""
    if isinstance(k, str):
        return _text(k)
    if k is None or isinstance(k, bool):
        return _CONSTANT_KEYS[k]
    return int_text(k) if isinstance(k, int) else _text(str(k))


def jsonable(obj: Any, depth: int = MAX_DEPTH) -> Any:
    """A copy of ``obj`` that orjson accepts (see the module docstring); ``depth``: the container
    levels left before a subtree is replaced by :data:`DEEP_MARKER`. Recursion is bounded by it."""
    if isinstance(obj, str):
        return _text(obj)
    if isinstance(obj, bool) or obj is None or isinstance(obj, float):
        return obj
    if isinstance(obj, int):
        return obj if _INT_MIN <= obj <= _INT_MAX else int_text(obj)
    # (a dataclass instance: what ``dataclasses.is_dataclass`` tests, without importing it for other values)
    if isinstance(obj, (dict, list, tuple, set, frozenset)) or (
        hasattr(type(obj), "__dataclass_fields__") and not isinstance(obj, type)
    ):
        if depth <= 0:
            return DEEP_MARKER
        if isinstance(obj, dict):
            return {_key(k): jsonable(v, depth - 1) for k, v in obj.items()}
        if isinstance(obj, (list, tuple, set, frozenset)):
            return [jsonable(v, depth - 1) for v in obj]
        import dataclasses

        return {f.name: jsonable(getattr(obj, f.name), depth - 1) for f in dataclasses.fields(obj)}
    np = sys.modules.get("numpy")  # (not imported: no value is a numpy array; a snapshot's reader child has none)
    if np is not None and isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biuf" and obj.ndim < depth:
            return obj
        return jsonable(obj.tolist(), depth)
    return obj  # numpy scalars and the rest: orjson (or the caller's default) decides


def clean(obj: Any) -> Any:
    """``obj`` as it reads back from :func:`dumps` (NaN as None, tuples as lists, keys as text, big
    integers as text): for values a parse keeps that the parse cache stores as JSON, so a file reads
    the same parsed and from the cache."""
    import orjson

    return orjson.loads(dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY, default=str))


def plain_values(obj: Any, budget: int = 100_000) -> bool:
    """Whether :func:`clean` returns ``obj`` as it is (an equal value): ``obj`` holds only lists of, and
    dicts with text keys of, text without lone surrogates, integers within orjson's 64 bits (no bool
    taken for one), finite floats, bools and None, nested no deeper than :data:`MAX_DEPTH`. False also
    past ``budget`` values (a large value is left to :func:`clean`). One pass, without orjson."""
    left = [budget]
    try:
        return _plain(obj, MAX_DEPTH, left)
    except UnicodeEncodeError:
        return False


def _plain(obj: Any, depth: int, left: list[int]) -> bool:
    left[0] -= 1
    if left[0] < 0:
        return False
    kind = type(obj)
    if kind is str:
        obj.encode("utf-8")  # (a lone surrogate: UnicodeEncodeError, the caller's False)
        return True
    if kind is int:
        return _INT_MIN <= obj <= _INT_MAX
    if kind is float:
        return obj - obj == 0.0  # (finite: NaN and infinities give NaN)
    if obj is None or kind is bool:
        return True
    if depth <= 0:
        return False
    if kind is list:
        return all(_plain(v, depth - 1, left) for v in obj)
    if kind is dict:
        return all(type(k) is str and _plain(k, depth, left) and _plain(v, depth - 1, left) for k, v in obj.items())
    return False


def dumps(obj: Any, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """``orjson.dumps(obj)``, or of :func:`jsonable` ``(obj)`` when orjson refuses ``obj``."""
    import orjson

    try:
        return orjson.dumps(obj, option=option, default=default)
    except TypeError:
        return orjson.dumps(jsonable(obj), option=option, default=default)


__all__ = ["DEEP_MARKER", "MAX_DEPTH", "clean", "dumps", "int_text", "jsonable", "plain_values"]
