"""The one error root: every error an interface answers is a :class:`KinetoscopeError`, which carries
its HTTP status and a public message that is safe to show (no traceback, no absolute path, no secret).

Each interface maps these errors to its own form in one place: the HTTP routes to a status and a JSON
``{"error": message}`` document (:func:`http_answer`, used by ``api.routes.route`` and the plugin's
WSGI guard), the MCP server to a tool error with the message, the CLI to exit status 2 and the message
on stderr. Anything that is not a ``KinetoscopeError`` is a bug: HTTP 500, an "internal error".

A file that is still loading is not an error: the routes answer its state (``{"state": "loading"}``,
HTTP 200) and the client polls.
"""

from __future__ import annotations

from typing import Any, ClassVar

CLI_EXIT_STATUS = 2  # the CLI's exit status for any KinetoscopeError (a bad argument or input)


class KinetoscopeError(Exception):
    """An error with an HTTP ``status`` and a public ``message`` (plain text, shown as is)."""

    status: ClassVar[int] = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def document(self) -> dict[str, Any]:
        """The JSON body of the HTTP answer: ``{"error": message}``."""
        return {"error": self.message}


class InvalidArgumentError(KinetoscopeError, ValueError):
    """A missing or malformed parameter or argument (HTTP 400). A ``ValueError`` too, for callers that
    catch the built-in."""

    status = 400


class NotFoundError(KinetoscopeError):
    """The arguments name nothing the logdir holds: no such run, file, row or stack (HTTP 404)."""

    status = 404


class NoLogdirError(NotFoundError):
    """The server was started without a logdir, so no run exists (HTTP 404)."""

    def __init__(self) -> None:
        super().__init__("TensorBoard was started without --logdir")


class PermissionDeniedError(KinetoscopeError):
    """The storage refused access to the logdir or a file (HTTP 403)."""

    status = 403


class UnreadableFileError(KinetoscopeError):
    """One file could not be read or loaded: a deleted object, a dropped connection, a file that is
    not a trace (HTTP 502: the storage behind the server failed, not the request)."""

    status = 502


class BudgetExceededError(KinetoscopeError):
    """The input is larger than a configured bound allows (HTTP 413)."""

    status = 413


def http_answer(error: KinetoscopeError) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON document of ``error``: the one error → HTTP mapping."""
    return error.status, error.document()


__all__ = [
    "CLI_EXIT_STATUS",
    "BudgetExceededError",
    "InvalidArgumentError",
    "KinetoscopeError",
    "NoLogdirError",
    "NotFoundError",
    "PermissionDeniedError",
    "UnreadableFileError",
    "http_answer",
]
