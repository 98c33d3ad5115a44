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
carries TensorBoard's own HTML CSP (script allowed by its SHA-256) plus that directive. Unknown paths
and methods answer JSON (404/405), never an HTML page. Binds to loopback unless ``--host`` says
otherwise, and says so on start.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
from typing import TextIO

import flask
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .http_headers import FRAME_HEADERS
from .plugin import PLUGIN_NAME, KinetoscopePlugin

ROUTE_BASE = f"/data/plugin/{PLUGIN_NAME}"  # as in TensorBoard: the frontend's <base href>
_SCRIPT = 'import("./index.js").then((m) => void m.render());'
_PAGE = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Kinetoscope: PyTorch Profiler</title>"
         f"<base href=\"{ROUTE_BASE[1:]}/\"></head>\n<body><script type=\"module\">{_SCRIPT}</script></body></html>\n")
_SCRIPT_SHA256 = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode("ascii")
_PREFIX = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def normalize_prefix(prefix: str) -> str:
    """``"p"``, ``"/p"``, ``"/p/"`` → ``"/p"``; ``""`` or ``"/"`` → ``""``. Raises ValueError for a
    prefix with characters a URL path cannot hold as they are (space, ``?``, ``#``, ``\\``)."""
    clean = "/" + prefix.strip("/") if prefix.strip("/") else ""
    if not _PREFIX.match(clean) or "//" in clean:
        raise ValueError(f"--path-prefix {prefix!r}: use a URL path such as /profiler (letters, digits, . _ ~ - and /)")
    return clean


def create_app(logdir: str, path_prefix: str = "", reload_interval: float = 10.0) -> flask.Flask:
    """The Flask app serving the page and the plugin's routes for ``logdir`` under ``path_prefix``."""
    prefix = normalize_prefix(path_prefix)
    flags = argparse.Namespace(reload_interval=reload_interval, logdir_spec="")
    plugin = KinetoscopePlugin(base_plugin.TBContext(logdir=logdir, flags=flags))
    app = flask.Flask(__name__, static_folder=None)
    app.kinetoscope_plugin = plugin  # for tests and embedding: the registry behind the routes

    @app.route(prefix + "/", endpoint="page")
    def page():
        response = http_util.Respond(flask.request, _PAGE, "text/html", csp_scripts_sha256s=[_SCRIPT_SHA256])
        response.headers["Content-Security-Policy"] += ";frame-ancestors 'self'"
        return response

    if prefix:  # "/p" → "/p/" (relative, like Flask's own slash redirect, but kept behind a proxy too)
        app.add_url_rule(prefix, "bare", lambda: flask.Response(
            status=308, headers={"Location": prefix.rsplit("/", 1)[-1] + "/"}))

    for route, wsgi in plugin.get_plugin_apps().items():
        rule = ROUTE_BASE + (route[:-2] + "/<path:_name>" if route.endswith("/*") else route)
        app.add_url_rule(prefix + rule, f"plugin{route}", _mounted(wsgi))

    @app.errorhandler(404)
    @app.errorhandler(405)
    def not_routed(exc):
        return flask.jsonify(error=f"{exc.code} {exc.name}: no route {flask.request.path}"), exc.code

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
        return (f"Kinetoscope at {url} (bound to loopback {host}: only this machine can connect; "
                f"--host 0.0.0.0 to listen on every interface)")
    return (f"Kinetoscope at {url} (bound to {host}: anyone who can reach this port can read the traces; "
            f"there is no authentication)")


def serve_forever(logdir: str, host: str, port: int, path_prefix: str, err: TextIO) -> int:
    """Run the server until interrupted. 2 for a local logdir that is not a directory, a bad prefix or
    port; 1 when the address cannot be bound."""
    from werkzeug.serving import make_server

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
    app = create_app(logdir, prefix)
    try:
        server = make_server(host, port, app, threaded=True)
    except (OSError, SystemExit) as exc:  # werkzeug exits when the port is taken
        err.write(f"kinetoscope: cannot listen on {host}:{port}: {exc}\n")
        return 1
    err.write(listen_message(host, server.server_port, prefix) + "\n")
    err.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
