"""User-supplied regular expressions with a hard bound on time and memory (ReDoS).

A search pattern comes from the URL, so it must not be able to stall or exhaust the server:

* **Syntax** is Python's ``re`` syntax: the pattern is parsed by ``re``'s own parser first, which
  also yields its structure without running it.
* **Compile size**: the ``regex`` engine unrolls counted repeats when it compiles, so
  ``(?:(?:(?:a{100}){100}){100}){100}`` (40 characters) would need gigabytes. The parsed pattern's
  *unrolled size* (each counted repeat multiplies its body by its largest finite count) must stay
  under :data:`MAX_UNROLLED`, which keeps compiling under ~0.1 s.
* **Match time**: matching runs in the ``regex`` engine with its ``timeout=`` (it releases the GIL
  while it runs), under one deadline of :data:`SEARCH_SECONDS` for all the strings of one search.
  An exponential-backtracking pattern such as ``(a|aa)+$`` fails with :class:`RegexTimeout`.
"""

from __future__ import annotations

import re
import time
from typing import Iterable

try:  # Python 3.11+
    from re import _constants as _sre_constants  # type: ignore[attr-defined]  # (private: no stubs)
    from re import _parser as _sre_parse  # type: ignore[attr-defined]  # (private: no stubs)
except ImportError:  # pragma: no cover - Python 3.9/3.10
    import sre_constants as _sre_constants
    import sre_parse as _sre_parse

SEARCH_SECONDS = 1.0  # the most one search may spend matching, all strings together
MAX_UNROLLED = 100_000  # largest unrolled pattern size accepted (about 0.06 s to compile)
_REPEATS = {_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT}
if hasattr(_sre_constants, "POSSESSIVE_REPEAT"):
    _REPEATS.add(_sre_constants.POSSESSIVE_REPEAT)


class RegexTimeout(ValueError):
    """Matching took longer than the time bound (a :class:`ValueError`: the request is at fault)."""


def compile_bounded(pattern: str, flags: int = re.IGNORECASE):
    """A compiled ``regex`` pattern; :class:`ValueError` with a clear reason when ``pattern`` is
    invalid or would unroll past :data:`MAX_UNROLLED`. ``flags``: ``re`` flags (IGNORECASE, …)."""
    try:
        parsed = _sre_parse.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None
    size = _unrolled_size(parsed.data if hasattr(parsed, "data") else parsed)
    if size > MAX_UNROLLED:
        raise ValueError(
            f"regular expression too large: its counted repeats unroll to about {size:,} "
            f"elements (at most {MAX_UNROLLED:,})"
        )
    import regex  # here, not at the top: only a regex search needs it (~6 ms of every start)

    rx_flags = (
        regex.V0
        | (regex.IGNORECASE if flags & re.IGNORECASE else 0)
        | (regex.MULTILINE if flags & re.MULTILINE else 0)
        | (regex.DOTALL if flags & re.DOTALL else 0)
    )
    try:
        return regex.compile(pattern, rx_flags)
    except (regex.error, OverflowError, RecursionError, MemoryError) as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None


def _unrolled_size(items, depth: int = 0) -> int:
    """Elements of a parsed pattern once counted repeats are unrolled (capped, never overflowing)."""
    if depth > 200:
        return MAX_UNROLLED + 1
    total = 0
    for op, av in items:
        if op in _REPEATS:
            low, high, body = av
            count = high if high != _sre_constants.MAXREPEAT else low
            total += _unrolled_size(body, depth + 1) * max(int(count), 1)
        elif op == _sre_constants.SUBPATTERN:
            total += _unrolled_size(av[-1], depth + 1)
        elif op == _sre_constants.BRANCH:
            total += sum(_unrolled_size(branch, depth + 1) for branch in av[1])
        elif op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT):
            total += _unrolled_size(av[1], depth + 1)
        elif hasattr(_sre_constants, "ATOMIC_GROUP") and op == _sre_constants.ATOMIC_GROUP:
            total += _unrolled_size(av, depth + 1)
        elif op == _sre_constants.GROUPREF_EXISTS:
            total += sum(_unrolled_size(part, depth + 1) for part in av[1:] if part is not None)
        else:
            total += 1
        if total > MAX_UNROLLED:
            return total
    return total


def matching(rx, strings: Iterable[tuple[int, str]], seconds: float = SEARCH_SECONDS) -> list[int]:
    """Ids of the ``(id, text)`` pairs whose text ``rx`` finds a match in, all within ``seconds``;
    raises :class:`RegexTimeout` past it."""
    deadline = time.monotonic() + seconds
    search = rx.search
    out = []
    try:
        for i, text in strings:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if search(text, timeout=left, concurrent=True) is not None:
                out.append(i)
    except TimeoutError:
        raise RegexTimeout(
            f"the regular expression took longer than {seconds:g} s to match; simplify it "
            "(nested or overlapping repeats such as (a|aa)+ backtrack exponentially)"
        ) from None
    return out
