"""The TensorBoard plugin: frontend metadata and the route table. Each route is a few lines.

TensorBoard loads ``index.js`` (our built frontend, ``static/index.js``) into the plugin iframe,
whose base URL is ``data/plugin/kinetoscope/``; every other request of the UI is relative to it.
"""

from __future__ import annotations

import logging
import mimetypes
import os

import orjson
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from . import api
from .errors import KinetoscopeError, NoLogdirError, NotFoundError, UnreadableFileError, http_answer
from .http_headers import content_disposition, with_frame_headers
from .registry.cache import ParseCache
from .registry.interface import Registry
from .registry.multi import MultiRegistry, parse_logdir_spec
from .registry.runs import RunRegistry
from .settings import Settings
from .storage.remote import describe_error
from .trace import jsonsafe
from .trace.heap import tune_allocator

logger = logging.getLogger(__name__)
PLUGIN_NAME = "kinetoscope"
STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")
FIRST_SCAN_WAIT_S = 3.0
MEMORY_IMAGE_TYPE = "image/png"  # the only type memory_html_image answers with
TRACE_FILE_CHUNK = 1 << 20  # bytes per read when streaming an original trace file


class KinetoscopePlugin(base_plugin.TBPlugin):
    """PyTorch Profiler tab: Overview of the profiler traces under the logdir."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext, settings: Settings | None = None) -> None:
        """``settings``: the ``KINETOSCOPE_*`` settings (default: read from the environment, once)."""
        settings = Settings.from_env() if settings is None else settings
        tune_allocator()  # TensorBoard's process serves the tab: large arrays from the heap (trace/heap.py)
        self._logdir = context.logdir or ""
        flags = context.flags
        reload_interval = getattr(flags, "reload_interval", None) or 10.0
        spec = getattr(flags, "logdir_spec", None) or ""
        self._registry: Registry | None = None
        if self._logdir:  # a local path or a cloud URL (s3://, gs://, az://, abfs://, …)
            self._registry = RunRegistry(
                self._logdir, cache=ParseCache(settings.cache_dir), reload_interval=reload_interval, settings=settings
            ).start()
        elif spec:  # name1:path1,name2:path2: one registry per logdir
            self._registry = MultiRegistry(
                parse_logdir_spec(spec),
                cache=ParseCache(settings.cache_dir),
                reload_interval=reload_interval,
                settings=settings,
            ).start()
        self._static = {name for name in os.listdir(STATIC_DIR)} if os.path.isdir(STATIC_DIR) else set()

    def close(self) -> None:
        """Stop the registry's threads (scanner, loader, artifacts) and its spare reader child: a standalone
        server that could not listen ends its app this way."""
        if self._registry is not None:
            self._registry.stop()

    # -- TBPlugin interface -------------------------------------------------------------------
    def get_plugin_apps(self):
        """Every route, each answering with X-Frame-Options/CSP frame-ancestors (``http_headers``)."""
        return {route: with_frame_headers(app) for route, app in self._routes().items()}

    def _routes(self):
        return {
            "/index.js": _guarded(self._serve_index_js),
            "/static/*": _guarded(self._serve_static),
            "/runs": _guarded(self._serve_runs),
            "/overview": self._registry_route(api.overview),
            "/operators": self._registry_route(api.operators),
            "/operators.csv": self._registry_route(api.operators, as_csv=True),
            "/operator_stacks": self._registry_route(api.operator_stacks),
            "/kernels": self._registry_route(api.kernels),
            "/kernels.csv": self._registry_route(api.kernels, as_csv=True),
            "/modules": self._registry_route(api.modules),
            "/timeline_meta": self._registry_route(api.timeline_meta),
            "/timeline": self._registry_route(api.timeline),
            "/timeline_search": self._registry_route(api.timeline_search),
            "/timeline_range": self._registry_route(api.timeline_range),
            "/timeline_event": self._registry_route(api.timeline_event),
            "/trace_file": _guarded(self._serve_trace_file),
            "/memory": self._registry_route(api.memory),
            "/memory_events": self._registry_route(api.memory_events),
            "/memory_events.csv": self._registry_route(api.memory_events, as_csv=True),
            "/memory_stats": self._registry_route(api.memory_stats),
            "/memory_stats.csv": self._registry_route(api.memory_stats, as_csv=True),
            "/snapshot": self._registry_route(api.snapshot),
            "/snapshot_timeline": self._registry_route(api.snapshot_timeline),
            "/snapshot_segments": self._registry_route(api.snapshot_segments),
            "/snapshot_allocations": self._registry_route(api.snapshot_allocations),
            "/snapshot_stack": self._registry_route(api.snapshot_stack),
            "/snapshot_oom": self._registry_route(api.snapshot_oom),
            "/snapshot_ranks": self._registry_route(api.snapshot_ranks),
            "/snapshot_attribution": self._registry_route(api.snapshot_attribution),
            "/memory_html": self._registry_route(api.memory_html),
            "/memory_html_image": _guarded(self._serve_memory_html_image),
            "/memory_timeline_export": self._registry_route(api.memory_timeline_export),
            "/memprofiler_stats": self._registry_route(api.memprofiler_stats),
            "/memprofiler_log": self._registry_route(api.memprofiler_log),
            "/distributed": self._registry_route(api.distributed),
            "/hang": self._registry_route(api.hang),
            "/hang_entries": self._registry_route(api.hang_entries),
            "/critical_path": self._registry_route(api.critical_path),
            "/insights": self._registry_route(api.insights),
            "/graphs": self._registry_route(api.graphs),
            "/graph_replays": self._registry_route(api.graph_replays),
            "/diff": self._registry_route(api.diff),
        }

    def is_active(self) -> bool:
        if self._registry is None:
            return False
        self._registry.wait_scanned(FIRST_SCAN_WAIT_S)
        return bool(self._registry.files()) or self._registry.error is not None  # the tab shows the error

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="PyTorch Profiler")

    # -- routes -------------------------------------------------------------------------------
    def _serve_index_js(self, request):
        return self._static_file(request, "index.js")

    def _serve_static(self, request):
        name = request.path.rsplit("/static/", 1)[-1]
        return self._static_file(request, name)

    def _serve_runs(self, request):
        if self._registry is None:
            return _json(request, 200, {"logdir": "", "loading": {"files_total": 0, "files_done": 0}, "runs": []})
        self._registry.wait_scanned(FIRST_SCAN_WAIT_S)
        return _json(request, *api.runs(self._registry))

    def _serve_trace_file(self, request):
        """The original trace file of a (run, worker, span), for "Download trace" and Perfetto."""
        if self._registry is None:
            raise NoLogdirError()
        state = self._registry.find(
            request.args.get("run", ""), request.args.get("worker", ""), request.args.get("span", "")
        )
        if state is None:  # the path comes from the registry, never from the request
            raise NotFoundError("no such trace")
        f = None
        try:
            f = self._registry.fs_of(state).open(state.entry.path, "rb")
            first = f.read(TRACE_FILE_CHUNK)
        except Exception as exc:  # a deleted object or a dropped connection: one request's problem
            if f is not None:
                f.close()

            message = self._registry.client_message_of(state, describe_error(exc))  # no absolute path
            raise UnreadableFileError(f"cannot read {state.entry.rel}: {message}") from None

        def chunks():  # streamed: a gigabyte trace is never held in memory for a download
            try:
                chunk = first
                while chunk:
                    yield chunk
                    chunk = f.read(TRACE_FILE_CHUNK)
            finally:
                f.close()

        response = wrappers.Response(chunks(), content_type="application/octet-stream", direct_passthrough=True)
        response.headers["Content-Disposition"] = content_disposition(state.entry.name)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    def _serve_memory_html_image(self, request):
        """The PNG extracted from an ``export_memory_timeline`` HTML file: ``image/png``, ``nosniff``, a
        CSP that allows nothing (``default-src 'none'; sandbox``) and ``inline`` with a ``.png`` name. The
        bytes start with the PNG signature (checked when extracted); none of the file's HTML is sent."""
        if self._registry is None:
            raise NoLogdirError()
        status, png = api.memory_html_image(self._registry, request.args)
        if not isinstance(png, bytes):  # not ready yet, or an error: its JSON document
            return _json(request, status, png)
        response = wrappers.Response(png, content_type=MEMORY_IMAGE_TYPE)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response.headers["Content-Disposition"] = 'inline; filename="memory_timeline.png"'
        response.headers["Cache-Control"] = "no-store"
        return response

    def _registry_route(self, handler, as_csv: bool = False):
        """A route answering ``handler(registry, request.args)`` as JSON (CSV text with ``as_csv``)."""

        def serve(request):
            if self._registry is None:
                raise NoLogdirError()
            status, doc = (
                handler(self._registry, request.args, as_csv=True) if as_csv else handler(self._registry, request.args)
            )
            if as_csv and isinstance(doc, str):
                return http_util.Respond(request, doc, "text/csv", code=status)
            return _json(request, status, doc)

        return _guarded(serve)

    # -- helpers ------------------------------------------------------------------------------
    def _static_file(self, request, name: str):
        if name not in self._static:  # a fixed whitelist: no path from the URL reaches the disk
            return http_util.Respond(request, "not found", "text/plain", code=404)
        with open(os.path.join(STATIC_DIR, name), "rb") as f:
            body = f.read()
        content_type = (
            "text/javascript"
            if name.endswith((".js", ".mjs"))
            else (mimetypes.guess_type(name)[0] or "application/octet-stream")
        )
        return http_util.Respond(request, body, content_type)


MAX_ERROR_CHARS = 500  # characters of an exception's text in a 500 answer


def _guarded(serve):
    """A WSGI route of ``serve(request)`` that never lets an exception reach TensorBoard (whose answer
    would be an HTML 500 page). A :class:`~.errors.KinetoscopeError` (no logdir, no such trace, one
    raised by a route handler outside ``api.routes.route``) is answered with its status and document
    (:func:`~.errors.http_answer`); any other exception is a bug: a JSON 500 ``{"error": ...}``, logged
    once with its traceback."""

    @wrappers.Request.application
    def route(request):
        try:
            return serve(request)
        except KinetoscopeError as exc:
            return _json(request, *http_answer(exc))
        except Exception as exc:  # an analysis bug must stay one view's problem
            logger.exception("%s failed", request.path)
            text = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
            return _json(request, 500, {"error": f"internal error computing this view: {text}"})

    return route


def _json(request, status: int, doc) -> wrappers.Response:
    """A JSON answer (with ``X-Content-Type-Options: nosniff``); values orjson refuses (integers
    beyond 64 bits, deep nesting, lone surrogates) are written as :mod:`.jsonsafe` says."""
    body = jsonsafe.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return http_util.Respond(request, body, "application/json", code=status)
