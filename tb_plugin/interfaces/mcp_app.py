"""The MCP server of ``kinetoscope mcp`` (:mod:`.mcp_server`): the tools, their JSON schemas (from the
annotations below) and descriptions, on :class:`~.mcp_tools.Tools`. Needs the ``[mcp]`` extra."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import typing
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Optional

import orjson
from pydantic import Field

from ..errors import KinetoscopeError
from ..registry.cache import ParseCache
from ..registry.runs import RunRegistry
from ..settings import MIN_MCP_MAX_ANSWER_BYTES, Settings
from ..storage.remote import is_local_fs
from . import mcp_bound
from .mcp_tools import DEFAULT_UI_URL, Tools
from .queries import Invalid

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

logger = logging.getLogger(__name__)

Run = Annotated[str, Field(description="run name as list_runs gives it ('.' for traces directly in the logdir)")]
Worker = Annotated[Optional[str], Field(description="worker (rank) name; default: the run's first")]
Span = Annotated[Optional[str], Field(description="span ('1', '2', … by trace timestamp); default: 1")]
Limit = Annotated[int, Field(ge=1, le=200, description="rows to answer (top-N); rows_total and rest count the others")]


Page = Annotated[
    int,
    Field(ge=0, le=1_000_000, description="page of an answer too large for one (0 first; paging.next says the next)"),
]


def _answer(method: Callable[..., dict[str, Any]], max_answer_bytes: int | None = None) -> Callable[..., Any]:
    """``method`` as a tool: its document bounded, paged and put in the envelope (:mod:`.mcp_bound`),
    answered as compact JSON text (and the same document as structured content); a
    :class:`~tb_plugin.errors.KinetoscopeError`
    (and anything unexpected) become an MCP tool error with a short message, never a traceback.
    The tool gains the ``page`` argument. ``max_answer_bytes``: the bound (default: the environment's)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent

    @functools.wraps(method)
    def tool(*args: Any, page: int = 0, **kwargs: Any) -> Any:
        try:
            doc = mcp_bound.bounded(method(*args, **kwargs), page, max_answer_bytes)
        except KinetoscopeError as exc:  # the MCP server's one error mapping: the message as the tool error
            raise ToolError(mcp_bound.cut_text(exc.message)) from None
        except Exception as exc:  # an analysis bug on one odd file: that call's error, not a crash
            logger.debug("tool %s failed", method.__name__, exc_info=True)
            raise ToolError(f"internal error: {type(exc).__name__}: {exc}"[:500]) from None
        text = orjson.dumps(doc).decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=doc)

    hints = typing.get_type_hints(method, include_extras=True)  # the annotations are text here (__future__)
    signature = inspect.signature(method)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    tool.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*params, inspect.Parameter("page", inspect.Parameter.KEYWORD_ONLY, default=0, annotation=Page)],
        return_annotation=dict[str, Any],
    )
    tool.__annotations__ = dict(hints, page=Page, **{"return": dict[str, Any]})
    del tool.__wrapped__  # the schema is read from __signature__
    tool.__doc__ = f"{method.__doc__ or ''} {mcp_bound.UNTRUSTED_NOTE}"
    return tool


def build_server(
    logdir: str,
    ui_url: str = DEFAULT_UI_URL,
    wait_s: float = 20.0,
    use_cache: bool = True,
    settings: Settings | None = None,
) -> MCPServer:
    """The MCPServer over ``logdir`` with its registry started (scanning and loading in the background).
    ``settings``: the ``KINETOSCOPE_*`` settings (default: read from the environment, once)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    settings = Settings.from_env() if settings is None else settings
    cache = ParseCache(settings.cache_dir) if use_cache else None
    registry = RunRegistry(logdir, cache=cache, settings=settings)
    if registry.error is not None:
        raise Invalid(f"{registry.logdir}: {registry.error}")
    if is_local_fs(registry.fs) and not os.path.exists(registry.root):
        raise Invalid(f"{registry.logdir}: no such directory")
    registry.start()
    t = Tools(registry, ui_url, wait_s)
    server = MCPServer(
        "kinetoscope",
        instructions=(
            "PyTorch profiler traces under one logdir. Start with list_runs; then overview, top_operators, "
            "top_kernels, top_modules, memory, insights, graphs for one run/worker/span; distributed for a run's ranks; "
            "critical_path for what held each step back; "
            "diff for two traces; search_timeline then event for single events. Times are µs, sizes bytes. "
            "Each answer has a link that opens the same view in the TensorBoard tab. " + mcp_bound.UNTRUSTED_NOTE
        ),
    )
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    bound = max(MIN_MCP_MAX_ANSWER_BYTES, settings.mcp_max_answer_bytes)

    def add(fn: Callable[..., dict[str, Any]]) -> None:
        server.add_tool(_answer(fn, bound), annotations=read_only)

    def list_runs() -> dict[str, Any]:
        """Runs, workers and spans under the logdir with each file's load state (queued, loading, ready,
        error) and progress; still_loading says whether the background load is done."""
        return t.list_runs()

    def overview(run: Run, worker: Worker = None, span: Span = None) -> dict[str, Any]:
        """One trace's Overview: step count, the average step split into kernel, memcpy, memset,
        communication, runtime, dataloader, CPU exec and other (µs), GPU utilization, SM efficiency,
        occupancy and tensor-core share (%), recommendations."""
        return t.overview(run, worker, span)

    def top_operators(
        run: Run,
        worker: Worker = None,
        span: Span = None,
        group_by: Literal["name", "shape", "stack"] = "name",
        sort: Annotated[
            Optional[str],
            Field(
                description=(
                    "column: calls, host_self_us, host_total_us, device_self_us, device_total_us, "
                    "tc_self_pct, tc_total_pct, flops, tflops_per_s; default device_self_us "
                    "(host_self_us without GPU)"
                )
            ),
        ] = None,
        limit: Limit = 10,
    ) -> dict[str, Any]:
        """The operators with the most time (the Operator tab), per name, per input shape or per call
        stack: calls, host and device self/total µs (device: the kernels they launched)."""
        return t.top_operators(run, worker, span, group_by, sort, limit)

    def top_kernels(
        run: Run,
        worker: Worker = None,
        span: Span = None,
        group_by: Literal["name", "op", "graph"] = "name",
        sort: Annotated[
            str,
            Field(
                description=("column: calls, total_us, mean_us, min_us, max_us, blocks_per_sm, achieved_occupancy_pct")
            ),
        ] = "total_us",
        limit: Limit = 10,
    ) -> dict[str, Any]:
        """The GPU kernels with the most time (the GPU Kernel tab), per name, per launching operator and
        launch configuration, or per name and CUDA graph (``graph``: None outside graph replays): calls, total/mean/min/max µs, blocks per SM, occupancy, tensor cores."""
        return t.top_kernels(run, worker, span, group_by, sort, limit)

    def top_modules(
        run: Run,
        worker: Worker = None,
        span: Span = None,
        sort: Annotated[
            str,
            Field(
                description=(
                    "column: occurrences, operators, host_self_us, host_total_us, device_self_us, device_total_us"
                )
            ),
        ] = "host_total_us",
        limit: Limit = 10,
        max_depth: Annotated[int, Field(ge=1, le=64, description="module levels (1: top level)")] = 1,
    ) -> dict[str, Any]:
        """The nn.Module tree's nodes with the most time (the Module tab), down to max_depth levels."""
        return t.top_modules(run, worker, span, sort, limit, max_depth)

    def memory(run: Run, worker: Worker = None, span: Span = None, limit: Limit = 10) -> dict[str, Any]:
        """Memory peaks per device (allocated, reserved bytes; when, µs) and the operators that allocate most."""
        return t.memory(run, worker, span, limit)

    def insights(run: Run, worker: Worker = None, span: Span = None) -> dict[str, Any]:
        """Why the GPU waits: idle time split into host wait, short gaps and other (µs), launch delay
        percentiles split into launch overhead and queueing, exposed communication and copies, syncs."""
        return t.insights(run, worker, span)

    def graphs(run: Run, worker: Worker = None, span: Span = None, limit: Limit = 10) -> dict[str, Any]:
        """CUDA graph replays and torch.compile regions: replays per graph (kernels, gaps, host launch µs),
        whether a capture in the trace attributes the replayed kernels to operators (status, note), the
        kernel time in operators vs unattributed; compiled regions' time, Triton kernels by region,
        recompilations and graph breaks per step; advice with the µs it addresses."""
        return t.graphs(run, worker, span, limit)

    def distributed(
        run: Run, span: Annotated[str, Field(description="span, default 1")] = "1", limit: Limit = 10
    ) -> dict[str, Any]:
        """A multi-rank run: per rank computation, overlap, communication, transfer and sync µs;
        collectives with bytes and algorithm/bus bandwidth (GB/s); stragglers with their evidence."""
        return t.distributed(run, span, limit)

    def critical_path(
        run: Run,
        span: Annotated[str, Field(description="span, default 1")] = "1",
        step: Annotated[Optional[str], Field(description="step name; default the longest")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> dict[str, Any]:
        """Which work held each step back: the critical path across the run's ranks (one rank: its own),
        its length (= the step's time, µs), share by category (kernel, cpu, communication, waiting) and by
        rank, the longest segments, and the collectives that waited for a late rank with that rank's work."""
        return t.critical_path(run, span, step, limit)

    def diff(
        base_run: Run,
        exp_run: Run,
        base_worker: Worker = None,
        base_span: Span = None,
        exp_worker: Worker = None,
        exp_span: Span = None,
        limit: Limit = 10,
    ) -> dict[str, Any]:
        """Baseline vs experiment: the average step per category (µs, delta, %), and the operators and
        kernels that changed most (per average step)."""
        return t.diff(base_run, exp_run, base_worker, base_span, exp_worker, exp_span, limit)

    def hang(run: Run, limit: Limit = 10) -> dict[str, Any]:
        """Why a job hung, from the NCCL/Gloo flight-recorder dumps in the run's folder: the verdict
        sentences (root cause first: the rank missing from the earliest stuck collective of a group),
        findings (missing ranks, mismatched sizes/dtypes/ops, not started/completed, ranks without a
        dump) and the unreadable dumps."""
        return t.hang(run, limit)

    def search_timeline(
        run: Run,
        query: Annotated[str, Field(description="substring of event names (or a regex)")],
        worker: Worker = None,
        span: Span = None,
        regex: bool = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 20,
    ) -> dict[str, Any]:
        """Timeline events whose name matches: row (for event), name, start_us (from the trace start), dur_us."""
        return t.search_timeline(run, query, worker, span, regex, limit)

    def event(
        run: Run,
        row: Annotated[int, Field(ge=0, description="an event row from search_timeline")],
        worker: Worker = None,
        span: Span = None,
    ) -> dict[str, Any]:
        """One timeline event: name, category, start_us, dur_us, args, the enclosing operators
        (call_stack, outermost first) and flows (launch ↔ kernel)."""
        return t.event(run, row, worker, span)

    for fn in (
        list_runs,
        overview,
        top_operators,
        top_kernels,
        top_modules,
        memory,
        insights,
        graphs,
        distributed,
        critical_path,
        diff,
        hang,
        search_timeline,
        event,
    ):
        add(fn)
    return server
