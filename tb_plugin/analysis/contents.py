"""What a loaded trace file holds beyond the Overview, as flags the UI shows tabs by (``runs``)."""

from __future__ import annotations


def file_contents(memory_curves: list[dict], modules: list[dict] | None) -> dict[str, bool]:
    """``has_memory``: the trace has ``[memory]`` events on some device (one curve per device);
    ``has_modules``: it has a module hierarchy (``module_tree`` is not None)."""
    return {"has_memory": len(memory_curves) > 0, "has_modules": modules is not None}
