"""HTTP headers the plugin adds itself: the download name of a trace and the anti-framing headers.

``content_disposition`` builds an ASCII-only header (RFC 6266 / RFC 5987) for any file name, so a
name with CJK, emoji, quotes or CR/LF can neither break the response nor inject a header.
``with_frame_headers`` wraps a WSGI app so that every answer says it may be framed only by its own
origin (the plugin's UI is an iframe of TensorBoard's page, which is the same origin).
"""

from __future__ import annotations

import re
import urllib.parse

FALLBACK_NAME = "trace.json"  # when nothing printable is left of the file name
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # CR, LF, NUL, …: never part of a header or a saved name
_SPECIAL = re.compile(r'["\\]')  # would end or escape the quoted string: removed from the fallback
_NOT_ASCII = re.compile(r"[^\x20-\x7e]")  # replaced by "_" in the fallback

# Anti-clickjacking: old browsers read X-Frame-Options, current ones the CSP directive.
FRAME_HEADERS = (("X-Frame-Options", "SAMEORIGIN"), ("Content-Security-Policy", "frame-ancestors 'self'"))


def content_disposition(name: str) -> str:
    """``attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded UTF-8>``.

    Control characters (CR, LF, …) are dropped from both forms; the fallback also drops ``"`` and
    ``\\`` and shows every non-ASCII character as ``_``. The value is pure ASCII, so a header
    injection or a latin-1 encoding error is impossible."""
    clean = _CONTROL.sub("", name).strip() or FALLBACK_NAME
    fallback = _NOT_ASCII.sub("_", _SPECIAL.sub("", clean)) or FALLBACK_NAME
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{urllib.parse.quote(clean, safe='')}"


def with_frame_headers(app):
    """The WSGI ``app`` with :data:`FRAME_HEADERS` set on every response (replacing any it set)."""
    names = {k.lower() for k, _ in FRAME_HEADERS}

    def framed(environ, start_response):
        def start(status, headers, exc_info=None):
            kept = [(k, v) for k, v in headers if k.lower() not in names]
            # a route's own CSP (memory_html_image: default-src 'none'; sandbox) keeps its directives
            own = "; ".join(
                v for k, v in headers if k.lower() == "content-security-policy" and "frame-ancestors" not in v
            )
            added = [
                (k, f"{own}; {v}" if own and k.lower() == "content-security-policy" else v) for k, v in FRAME_HEADERS
            ]
            return start_response(status, kept + added, exc_info)

        return app(environ, start)

    return framed
