"""What a loaded trace file holds beyond the Overview, as the flags the UI shows tabs by (``runs``).

Both are cheap (no curve, tree or other derived index is built): they are computed when a file loads.
"""

from __future__ import annotations

from ..trace.model import Trace
from .memory import device_rows
from .modules import module_events


def file_contents(trace: Trace) -> dict[str, bool]:
    """``has_memory``: some ``[memory]`` event names a device the tool places (the ``memory`` route
    then lists it); ``has_modules``: the trace has module events (``modules`` is then a tree, not null)."""
    return {"has_memory": bool(device_rows(trace)), "has_modules": bool(module_events(trace)[0].any())}
