"""Recording what a method did, for tests: after each call of ``owner.name`` the value ``pick(self)``
is appended to a list the test reads."""

from __future__ import annotations

from typing import Any, Callable


def record_after(monkeypatch: Any, owner: type, name: str, pick: Callable[[Any], Any] = lambda self: self) -> list:
    """Patch ``owner.name`` (a method) so that each call, once it returns, appends ``pick(self)`` to the
    returned list; the real method still runs and its result is returned."""
    seen: list = []
    real = getattr(owner, name)

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        seen.append(pick(self))
        return out

    monkeypatch.setattr(owner, name, spy)
    return seen


def blocking_waits(monkeypatch: Any) -> list[int]:
    """Patch ``os.waitpid`` so that each blocking call (no ``WNOHANG``) appends its pid to the returned
    list; the real call still runs."""
    import os

    seen: list[int] = []
    real = os.waitpid

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        if not options & os.WNOHANG:
            seen.append(pid)
        return real(pid, options)

    monkeypatch.setattr(os, "waitpid", waitpid)
    return seen
