"""Module loggers that import :mod:`logging` when first used.

``logging`` (with ``traceback``, ``string`` and the rest it imports) is ~3 ms of a cold
``kinetoscope report``'s imports, before a trace byte is decoded, and a report that goes well never
logs. A module's ``logger = module_logger(__name__)`` is the same ``logging.getLogger(__name__)``
(same name, level, handlers and records, so ``caplog`` sees them) once anything is asked of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging


class _Deferred:
    """Stands for ``logging.getLogger(name)``, made on the first attribute asked of it."""

    __slots__ = ("_name", "_logger")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self._name)
        return getattr(self._logger, attribute)


def module_logger(name: str) -> logging.Logger:
    """The logger named ``name``, :mod:`logging` imported when it is first used."""
    return cast("logging.Logger", _Deferred(name))
