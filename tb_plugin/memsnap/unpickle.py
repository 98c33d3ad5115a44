"""A restricted unpickler: builtin containers and scalars only.

Allocator snapshots are plain dicts, lists, tuples, strings and numbers. Any pickle that names a
global (a class or a function: the way a pickle runs code) is refused with a clear error, before
anything is imported or called.
"""

from __future__ import annotations

import io
import pickle


class RefusedPickle(Exception):
    """The pickle needs a global that is not allowed."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D102 - the only gate
        raise RefusedPickle(
            f"refused to load global '{module}.{name}': only plain containers and scalars are allowed in "
            "memory snapshots (this file may run code when unpickled)"
        )


def restricted_loads(data: bytes):
    """Unpickle ``data`` admitting only builtin containers and scalars."""
    try:
        return _Restricted(io.BytesIO(data)).load()
    except RefusedPickle:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            MemoryError, RecursionError) as exc:
        raise RefusedPickle(f"not a readable pickle: {type(exc).__name__}: {exc}") from None
