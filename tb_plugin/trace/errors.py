"""Errors that make a file unreadable as a trace (everything else becomes a warning)."""


class TraceReadError(Exception):
    """The file cannot be read as a trace at all. The message is shown to the user as is."""
