"""Logdir URLs as they may be shown: credentials removed, and the schemes this project reads.

A logdir may be written with credentials in it (``ftp://user:password@host/``, an Azure SAS token
in the query string). Every place that shows or logs a logdir (the ``runs`` route, the MCP
``list_runs`` tool, error messages, the notebook's ``repr``, the server's log) shows
:func:`redact` of it: the user-info part and query values become ``***``. :func:`check_scheme`
refuses a URL of any scheme but the documented ones before anything is opened.
"""

from __future__ import annotations

import re

# the documented schemes (README: "Remote logdirs"); a plain path or file:// is local
ACCEPTED_SCHEMES = ("file", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#@]*)@")
_QUERY_VALUE = re.compile(r"([?&][^=&#]+=)[^&#]*")
_AZURE = ("az", "abfs", "abfss", "adl")  # container@account names a container, not a user: only a password is hidden


def redact(text: str) -> str:
    """``text`` (a logdir or a message holding one) with URL credentials replaced by ``***``: the
    user-info before ``@`` (for Azure URLs, where ``container@account`` is no secret, only a
    ``:password`` in it) and every query value."""

    def userinfo(m: re.Match) -> str:
        scheme, info = m.group(1), m.group(2)
        if scheme[:-3].lower() in _AZURE and ":" not in info:
            return m.group(0)
        return f"{scheme}***@"

    out = []
    for word in re.split(r"(\s+)", str(text)):
        if "://" in word:
            word = _USERINFO.sub(userinfo, word)
            word = _QUERY_VALUE.sub(r"\1***", word)
        out.append(word)
    return "".join(out)


def check_scheme(url: str) -> str | None:
    """Why the logdir ``url`` is refused (a scheme this project does not read), or None."""
    m = _SCHEME.match(str(url))
    if m is None and "::" not in str(url):
        return None
    scheme = m.group(1).lower() if m else str(url).split("::", 1)[0]
    if m is not None and scheme in ACCEPTED_SCHEMES and "::" not in str(url):
        return None
    return f"unsupported URL scheme {scheme!r} in {redact(url)!r}: use a local path or " + ", ".join(
        f"{s}://" for s in ACCEPTED_SCHEMES if s != "file"
    )
