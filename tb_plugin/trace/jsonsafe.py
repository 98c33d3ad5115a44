"""JSON that never refuses a value read from a file.

orjson refuses three things a trace, YAML or pickle can hold: integers outside 64 bits, nesting
deeper than 254 levels, and strings with lone surrogates (``"\\ud800"``). :func:`jsonable` turns each
into a value: an integer outside [−2⁶³, 2⁶⁴) becomes its decimal string (hexadecimal past 4,000 digits), a container nested more than
:data:`MAX_DEPTH` levels below the root becomes a short text marker, and a lone surrogate becomes
U+FFFD; keys that are not text become text. :func:`dumps` tries orjson first and sanitizes only when it refuses, so ordinary documents
cost nothing extra. The parse-cache header, every JSON response and the CLI's ``--json`` use it.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable

import orjson

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


def _key(k: Any) -> str:
    """A mapping key as text (as orjson's OPT_NON_STR_KEYS writes numbers; None as "null")."""
    if isinstance(k, str):
        return _text(k)
    if k is None or isinstance(k, bool):
        return orjson.dumps(k).decode()
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
    if isinstance(obj, (dict, list, tuple, set, frozenset)) or (
        dataclasses.is_dataclass(obj) and not isinstance(obj, type)
    ):
        if depth <= 0:
            return DEEP_MARKER
        if isinstance(obj, dict):
            return {_key(k): jsonable(v, depth - 1) for k, v in obj.items()}
        if isinstance(obj, (list, tuple, set, frozenset)):
            return [jsonable(v, depth - 1) for v in obj]
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
    return orjson.loads(dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY, default=str))


def dumps(obj: Any, option: int = 0, default: Callable[[Any], Any] | None = None) -> bytes:
    """``orjson.dumps(obj)``, or of :func:`jsonable` ``(obj)`` when orjson refuses ``obj``."""
    try:
        return orjson.dumps(obj, option=option, default=default)
    except TypeError:
        return orjson.dumps(jsonable(obj), option=option, default=default)


__all__ = ["DEEP_MARKER", "MAX_DEPTH", "clean", "dumps", "int_text", "jsonable"]
