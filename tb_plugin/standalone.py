"""``kinetoscope serve LOGDIR``: the tab without TensorBoard, a Flask app mounting the plugin's route table.

URL layout (``PREFIX`` is ``--path-prefix``, "" by default), the same as inside TensorBoard so that
the frontend's relative URLs resolve unchanged:

- ``PREFIX/``: the page. Like TensorBoard's ``data/plugin_entry.html``, it sets
  ``<base href="data/plugin/kinetoscope/">`` and runs ``import("./index.js").then(m => m.render())``;
  relative, so a reverse proxy that strips the prefix works too. ``PREFIX`` alone redirects there.
- ``PREFIX/data/plugin/kinetoscope/<route>``: every route of :meth:`KinetoscopePlugin.get_plugin_apps`
  (``/static/*`` becomes ``/static/<name>``), answered by the plugin's own WSGI apps, streaming kept.

Security headers: every answer carries ``X-Content-Type-Options: nosniff``, ``X-Frame-Options:
SAMEORIGIN`` and a CSP with ``frame-ancestors 'self'`` (the plugin's ``http_headers``); the page
carries TensorBoard's own HTML CSP (script allowed by its SHA-256) plus that directive. Every error
answers JSON with those headers, never an HTML page: an unknown path or method (404/405) and any
other HTTP error (Flask), an exception (the outer WSGI layer), and a malformed or oversized request
(waitress's own errors, :class:`_JsonErrorTask`). A request whose ``Host`` is not a loopback name, the
``--host`` given or an ``--allow-host`` name is refused (403), so a DNS-rebinding page cannot read the
traces. Served by waitress (a bounded pool of :data:`THREADS` threads, :data:`CONNECTION_LIMIT`
connections, idle ones closed after :data:`CHANNEL_TIMEOUT_S`, no ``Server`` header). Binds to
loopback unless ``--host`` says otherwise, and says so on start.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sys
from typing import Iterable, TextIO

import flask
import orjson
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers
from werkzeug.exceptions import HTTPException

from .http_headers import FRAME_HEADERS
from .plugin import PLUGIN_NAME, KinetoscopePlugin
from .settings import Settings

ROUTE_BASE = f"/data/plugin/{PLUGIN_NAME}"  # as in TensorBoard: the frontend's <base href>
_SCRIPT = 'import("./index.js").then((m) => void m.render());'
_PAGE = (
    '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Kinetoscope: PyTorch Profiler</title>'
    f'<base href="{ROUTE_BASE[1:]}/"></head>\n<body><script type="module">{_SCRIPT}</script></body></html>\n'
)
_SCRIPT_SHA256 = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode("ascii")
_PREFIX = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")  # binding to every interface names no host a browser would send
THREADS = 8  # waitress worker threads: requests answered at once
CONNECTION_LIMIT = 500  # open connections at most (more wait in the listen backlog); idle ones use no thread
CHANNEL_TIMEOUT_S = 30  # a connection idle (or a request stalled) this long is closed
MAX_REQUEST_BODY_BYTES = 1 << 20  # every route is a GET; a body is never needed
MAX_REQUEST_HEADER_BYTES = 64 << 10


def allowed_hosts(host: str, extra=()) -> frozenset:
    """The ``Host`` names a request may carry: the loopback names, the bound ``host`` (unless a
    wildcard) and the ``--allow-host`` names, lower-case."""
    names = set(LOOPBACK) | {h.lower().strip("[]") for h in extra if h}
    if host not in WILDCARDS:
        names.add(host.lower().strip("[]"))
    return frozenset(names)


def host_name(header: str) -> str:
    """``example.org:6006`` → ``example.org``; ``[::1]:6006`` → ``::1``; lower-case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _json_error(status: int, reason: str, message: str) -> tuple[str, list[tuple[str, str]], bytes]:
    body = orjson.dumps({"error": message})
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("X-Content-Type-Options", "nosniff"),
        *FRAME_HEADERS,
    ]
    return f"{status} {reason}", headers, body


def guarded(app, hosts: frozenset):
    """The WSGI app ``app`` behind the Host allowlist, answering a JSON 500 (with the security
    headers) for any exception it raises before its response starts."""

    def wsgi(environ, start_response):
        host = environ.get("HTTP_HOST")
        if host is not None and host_name(host) not in hosts:
            status, headers, body = _json_error(
                403,
                "Forbidden",
                "this server does not answer for that Host (start it with --allow-host NAME to add a name)",
            )
            start_response(status, headers)
            return [body]
        try:
            return app(environ, start_response)
        except Exception:
            status, headers, body = _json_error(500, "Internal Server Error", "internal error")
            start_response(status, headers, sys.exc_info())
            return [body]

    return wsgi


def normalize_prefix(prefix: str) -> str:
    """``"p"``, ``"/p"``, ``"/p/"`` → ``"/p"``; ``""`` or ``"/"`` → ``""``. Raises ValueError for a
    prefix with characters a URL path cannot hold as they are (space, ``?``, ``#``, ``\\``)."""
    clean = "/" + prefix.strip("/") if prefix.strip("/") else ""
    if not _PREFIX.match(clean) or "//" in clean:
        raise ValueError(f"--path-prefix {prefix!r}: use a URL path such as /profiler (letters, digits, . _ ~ - and /)")
    return clean


class KinetoscopeApp(flask.Flask):
    """The standalone server's Flask app; ``kinetoscope_plugin``: the plugin (and its registry)
    behind the routes, for tests and embedding."""

    kinetoscope_plugin: KinetoscopePlugin


def create_app(
    logdir: str,
    path_prefix: str = "",
    reload_interval: float = 10.0,
    hosts: frozenset = frozenset(LOOPBACK),
    settings: Settings | None = None,
) -> KinetoscopeApp:
    """The Flask app serving the page and the plugin's routes for ``logdir`` under ``path_prefix``,
    answering only requests whose ``Host`` is one of ``hosts`` (:func:`allowed_hosts`). ``settings``:
    the ``KINETOSCOPE_*`` settings (default: read from the environment)."""
    prefix = normalize_prefix(path_prefix)
    flags = argparse.Namespace(reload_interval=reload_interval, logdir_spec="")
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=logdir, flags=flags), settings)
    app = KinetoscopeApp(__name__, static_folder=None)
    app.kinetoscope_plugin = plugin  # for tests and embedding: the registry behind the routes

    @app.route(prefix + "/", endpoint="page")
    def page():
        response = http_util.Respond(flask.request, _PAGE, "text/html", csp_scripts_sha256s=[_SCRIPT_SHA256])
        response.headers["Content-Security-Policy"] += ";frame-ancestors 'self'"
        return response

    if prefix:  # "/p" → "/p/" (relative, like Flask's own slash redirect, but kept behind a proxy too)
        app.add_url_rule(
            prefix, "bare", lambda: flask.Response(status=308, headers={"Location": prefix.rsplit("/", 1)[-1] + "/"})
        )

    for route, wsgi in plugin.get_plugin_apps().items():
        rule = ROUTE_BASE + (route[:-2] + "/<path:_name>" if route.endswith("/*") else route)
        app.add_url_rule(prefix + rule, f"plugin{route}", _mounted(wsgi))

    @app.errorhandler(HTTPException)
    def http_error(exc):
        if exc.code in (404, 405):
            return flask.jsonify(error=f"{exc.code} {exc.name}: no route {flask.request.path}"), exc.code
        return flask.jsonify(error=f"{exc.code} {exc.name}"), exc.code

    @app.errorhandler(Exception)
    def internal_error(exc):
        return flask.jsonify(error="internal error"), 500

    @app.after_request
    def security_headers(response):
        response.headers["X-Content-Type-Options"] = "nosniff"
        for name, value in FRAME_HEADERS:
            if name.lower() == "content-security-policy":
                if "frame-ancestors" not in response.headers.get(name, ""):
                    old = response.headers.get(name)
                    response.headers[name] = f"{old};{value}" if old else value
            else:
                response.headers[name] = value
        return response

    app.wsgi_app = guarded(app.wsgi_app, hosts)  # type: ignore[method-assign]  # Flask's way to wrap the WSGI app
    return app


def _mounted(wsgi):
    """A Flask view answering with the plugin's WSGI app (its status, headers and streamed body)."""

    def view(**_):
        return wrappers.Response.from_app(wsgi, flask.request.environ)

    return view


def listen_message(host: str, port: int, prefix: str) -> str:
    """What ``serve`` prints on start: the URL, and who can connect."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}{prefix}/"
    if host in LOOPBACK:
        return (
            f"Kinetoscope at {url} (bound to loopback {host}: only this machine can connect; "
            f"--host 0.0.0.0 to listen on every interface)"
        )
    return (
        f"Kinetoscope at {url} (bound to {host}: anyone who can reach this port can read the traces; "
        f"there is no authentication)"
    )


def serve_forever(
    logdir: str,
    host: str,
    port: int,
    path_prefix: str,
    err: TextIO,
    allow_hosts: Iterable[str] = (),
    settings: Settings | None = None,
) -> int:
    """Run the server (waitress) until interrupted. 2 for a local logdir that is not a directory, a bad
    prefix or port; 1 when the address cannot be bound. ``allow_hosts``: more ``Host`` names to answer;
    ``settings``: the CLI's (default: read from the environment)."""
    from waitress.server import create_server
    from waitress.task import ThreadedTaskDispatcher

    from .trace.heap import tune_allocator

    tune_allocator()  # a process of our own: large arrays from the heap (trace/heap.py)
    try:
        prefix = normalize_prefix(path_prefix)
    except ValueError as exc:
        err.write(f"kinetoscope: {exc}\n")
        return 2
    if "://" not in logdir and not os.path.isdir(logdir):
        err.write(f"kinetoscope: {logdir}: no such directory\n")
        return 2
    if not 0 <= port <= 65535:
        err.write(f"kinetoscope: --port {port}: must be 0..65535\n")
        return 2
    app = create_app(logdir, prefix, hosts=allowed_hosts(host, allow_hosts), settings=settings)
    # waitress starts its worker threads before it binds: with the dispatcher ours, a failed bind ends them
    # (and the registry's threads) instead of leaving them running in a process that goes on
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(THREADS)
    try:
        server = create_server(
            app,
            _dispatcher=dispatcher,
            host=host,
            port=port,
            threads=THREADS,
            connection_limit=CONNECTION_LIMIT,
            channel_timeout=CHANNEL_TIMEOUT_S,
            ident="",
            max_request_body_size=MAX_REQUEST_BODY_BYTES,
            max_request_header_size=MAX_REQUEST_HEADER_BYTES,
            clear_untrusted_proxy_headers=True,
        )
    except (OSError, ValueError) as exc:
        dispatcher.shutdown()
        app.kinetoscope_plugin.close()
        err.write(f"kinetoscope: cannot listen on {host}:{port}: {exc}\n")
        return 1
    server.channel_class = _JsonErrorChannel
    err.write(listen_message(host, server.effective_port, prefix) + "\n")
    err.flush()
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def _waitress_json_errors():
    """waitress's channel whose own errors (a malformed request, a header or body over its bound, an
    exception in the app after its response started) answer JSON with the security headers."""
    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    class JsonErrorTask(ErrorTask):
        def execute(self):
            error = self.request.error
            status, headers, body = _json_error(error.code, error.reason, f"{error.code} {error.reason}")
            self.status = status
            self.response_headers.extend(h for h in headers if h[0] != "Content-Length")
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonErrorChannel(HTTPChannel):
        error_task_class = JsonErrorTask

    return JsonErrorChannel


try:
    _JsonErrorChannel = _waitress_json_errors()
except ImportError:  # waitress is the serve extra; create_app (tests, embedding) works without it
    _JsonErrorChannel = None
