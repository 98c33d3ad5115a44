"""The answers of ``kinetoscope mcp``'s tools (docs/mcp.md), one method each, on a started registry.

Compact by design: units are in the field names (``_us``, ``_bytes``, ``_pct``, ``_gbps``), tables are
top-N with ``rows_total`` and the ``rest`` left out, and every answer carries a ``link``: the URL of
the same view in the tab (its hash state: ``run``, ``worker``, ``span``, ``view``; docs/mcp.md). The
numbers are the registry's views and :mod:`tb_plugin.registry.report`'s, as ``kinetoscope report
--json`` prints them. Arguments only select registry entries (never a path): the tools read nothing
outside the logdir. A bad argument raises :class:`~.queries.Invalid` saying what is valid; a file
still loading raises :class:`NotLoaded` with the progress.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import orjson

from ..analysis.overview import Overview
from ..registry import graph_siblings, report, report_distributed
from ..registry.graph_siblings import sibling_capture_tables
from ..registry.interface import Registry
from ..registry.records import DistributedResult
from ..registry.states import ERROR, READY, FileState
from ..trace import jsonsafe
from . import queries
from .queries import Invalid

DEFAULT_UI_URL = "http://localhost:6006/data/plugin_entry.html?name=kinetoscope"
MAX_TEXT = 2000  # characters of one string value in an answer (call stacks, event args)


class NotLoaded(Invalid):
    """The file asked for is still loading (or failed to load): the message says which and how far."""


def _plain(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as plain JSON values (numpy scalars, NaN → null, odd strings made text), strings cut
    at :data:`MAX_TEXT` characters (a call stack, an event's args)."""
    plain: dict[str, Any] = _cut(orjson.loads(jsonsafe.dumps(doc)))
    return plain


def _cut(value: Any) -> Any:
    """Strings longer than :data:`MAX_TEXT` cut (the rest counted), inside dicts and lists too."""
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"… ({len(value) - MAX_TEXT} more characters)"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value


TOP_RUNTIME_CALLS = 10  # rows of the runtime-calls table in the overview and insights answers
MAX_NAME = 160  # characters of an operator or kernel name in the critical_path answer


def _path_brief(path: dict[str, Any], limit: int) -> dict[str, Any]:
    """One step's critical path, compact: lengths, shares, the ``limit`` longest segments (host ones with
    their enclosing ``annotation``), the ``limit`` items of most time (work grouped by name), the time
    the host was blocked on the device, and the three collectives that waited longest for a late rank
    (names cut at :data:`MAX_NAME`)."""

    def name(text: str) -> str:
        return text if len(text) <= MAX_NAME else text[:MAX_NAME] + "…"

    keep = ("rank", "category", "at_us", "dur_us", "late_rank", "wait_us", "annotation")
    segments = [dict({k: s[k] for k in keep if k in s}, name=name(s["name"])) for s in path["segments"][:limit]]
    late = [
        {
            "rank": c["rank"],
            "late_rank": c["late_rank"],
            "wait_us": c["wait_us"],
            "name": name(c["name"]),
            "late_work": None
            if c.get("late_work") is None
            else dict(c["late_work"], name=name(c["late_work"]["name"])),
        }
        for c in path["collectives"][:3]
    ]
    ranks = sorted(path["by_rank"], key=lambda r: -r["us"])
    return {
        "step": path["step"],
        "length_us": path["length_us"],
        "by_category": path["by_category"],
        "by_category_pct": path["by_category_pct"],
        "by_rank": ranks[:8],
        "ranks_total": len(ranks),
        "segments": segments,
        "late": late,
        "host_blocked_us": path.get("host_blocked_us", 0.0),
        "top_items": [dict(i, name=name(i["name"])) for i in (path.get("top_items") or [])[:limit]],
        "truncated": path["truncated"],
    }


class Tools:
    """The tools over one registry (scanning and loading in the background)."""

    def __init__(self, registry: Registry, ui_url: str = DEFAULT_UI_URL, wait_s: float = 20.0) -> None:
        self.registry, self.ui_url, self.wait_s = registry, ui_url, wait_s

    # -- shared ---------------------------------------------------------------------------------
    def link(self, view: str | None = None, **keys: Any) -> str:
        """The tab's URL for ``view`` and the hash keys (``run``, ``worker``, ``span``, diff sides…)."""
        params = {k: str(v) for k, v in keys.items() if v is not None}
        if view and view != "overview":
            params["view"] = view
        return f"{self.ui_url}#{urlencode(params)}"

    def _overview(self, st: FileState) -> Overview:
        """The Overview of a loaded file (:func:`~tb_plugin.registry.report.overview_document`)."""
        doc = report.overview_document(self.registry, st)
        if doc is None:  # a loaded file has one; a file reloading since has not yet
            raise NotLoaded(f"{st.entry.rel} is loading again: call again shortly")
        return doc

    def _file(self, run: str | None, worker: str | None, span: str | None) -> FileState:
        """The loaded file; waits up to ``wait_s`` for it (asking the loader for it first)."""
        self.registry.wait_scanned(self.wait_s)
        if self.registry.error is not None:
            raise Invalid(f"the logdir cannot be listed: {self.registry.error}")
        st = queries.find_file(self.registry, run, worker, span)
        deadline = time.monotonic() + self.wait_s
        self.registry.want(st)
        while st.state not in (READY, ERROR) and time.monotonic() < deadline:
            time.sleep(0.05)
        if st.state == ERROR:
            raise NotLoaded(f"{st.entry.rel} failed to load: {st.error}")
        if st.state != READY:
            doc = self.registry.runs_document()["loading"]
            raise NotLoaded(
                f"{st.entry.rel} is still loading ({st.state}, {st.progress:.0%}); "
                f"{doc['files_done']} of {doc['files_total']} files of the logdir are loaded: call again shortly"
            )
        return st

    def _where(self, st: FileState) -> dict[str, str]:
        return {"run": st.run, "worker": st.worker, "span": st.span}

    def _file_answer(self, st: FileState, view: str, /, **fields: Any) -> dict[str, Any]:
        """A per-file tool's answer: the file (run, worker, span), ``fields``, then the link to ``view``."""
        return _plain(dict(self._where(st), **fields, link=self.link(view, **self._where(st))))

    # -- tools ----------------------------------------------------------------------------------
    def list_runs(self) -> dict[str, Any]:
        self.registry.wait_scanned(self.wait_s)
        doc = self.registry.runs_document()
        runs = [
            {
                "run": r["name"],
                "workers": [
                    {
                        "worker": w["worker"],
                        "spans": [
                            {k: s[k] for k in ("span", "state", "progress", "error", "size_bytes")} for s in w["spans"]
                        ],
                    }
                    for w in r["workers"]
                ],
                "memory_artifacts": len(r["artifacts"]),
                "link": self.link(run=r["name"]),
            }
            for r in doc["runs"]
        ]
        return _plain(
            {
                "logdir": self.registry.logdir,
                "loading": doc["loading"],
                "still_loading": doc["loading"]["files_done"] < doc["loading"]["files_total"],
                "errors": doc["errors"],
                "runs": runs,
                "link": self.link(),
            }
        )

    def overview(self, run: str, worker: str | None = None, span: str | None = None) -> dict[str, Any]:
        st = self._file(run, worker, span)
        ov = self._overview(st)
        return self._file_answer(
            st,
            "overview",
            steps=len(ov["steps"]),
            average_step=ov["average"],
            configuration=ov["configuration"],
            gpus=ov["gpus"],
            **report.advice_document(ov, TOP_RUNTIME_CALLS),
            warnings=st.warnings,
        )

    def top_operators(
        self,
        run: str,
        worker: str | None = None,
        span: str | None = None,
        group_by: str = "name",
        sort: str | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        st = self._file(run, worker, span)
        views = self.registry.views(st)
        g = queries.grouping(group_by, queries.OPERATOR_GROUPS, "group_by")
        sort = sort or ("device_self_us" if views.has_device else "host_self_us")
        doc = queries.top_rows(queries.operators(views, g), sort, limit, queries.operator_columns(g))
        return self._file_answer(st, "operator", group_by=group_by, **doc)

    def top_kernels(
        self,
        run: str,
        worker: str | None = None,
        span: str | None = None,
        group_by: str = "name",
        sort: str = "total_us",
        limit: int = 10,
    ) -> dict[str, Any]:
        st = self._file(run, worker, span)
        views = self.registry.views(st)
        g = queries.grouping(group_by, queries.KERNEL_GROUPS, "group_by")
        doc = queries.top_rows(queries.kernels(views, g), sort, limit, queries.kernel_columns(g))
        return self._file_answer(
            st,
            "kernel",
            group_by=group_by,
            **doc,
            tensor_core=views.tensor_core_split(),
        )

    def top_modules(
        self,
        run: str,
        worker: str | None = None,
        span: str | None = None,
        sort: str = "host_total_us",
        limit: int = 10,
        max_depth: int = 1,
    ) -> dict[str, Any]:
        st = self._file(run, worker, span)
        rows = [r for r in queries.module_rows(self.registry.views(st).modules()) if r["depth"] < max_depth]
        doc = queries.top_rows(rows, sort, limit, queries.MODULE_COLUMNS)
        return self._file_answer(st, "module", max_depth=max_depth, **doc)

    def memory(self, run: str, worker: str | None = None, span: str | None = None, limit: int = 10) -> dict[str, Any]:
        st = self._file(run, worker, span)
        doc = self.registry.views(st).memory_summary()
        ops = doc["top_operators"]
        return self._file_answer(
            st,
            "memory",
            devices=doc["devices"],
            top_operators=ops[:limit],
            top_operators_total=len(ops),
        )

    def insights(self, run: str, worker: str | None = None, span: str | None = None) -> dict[str, Any]:
        st = self._file(run, worker, span)
        found = self.registry.views(st).insights()
        syncs = found["syncs"]
        return self._file_answer(
            st,
            "insights",
            **report.report_insights(found),
            syncs=dict({k: v for k, v in syncs.items() if k != "by_operator"}, by_operator=syncs["by_operator"][:5]),
            **report.advice_document(self._overview(st), TOP_RUNTIME_CALLS),
        )

    def graphs(self, run: str, worker: str | None = None, span: str | None = None, limit: int = 10) -> dict[str, Any]:
        """CUDA graph replays (per graph: status, note, its ``limit`` longest kernel groups; the first
        ``limit`` replays) and torch.compile regions (``limit`` longest Triton kernels), as the report."""
        st = self._file(run, worker, span)
        found = graph_siblings.graphs_report(
            self.registry.views(st), max_replays=limit, others=lambda: sibling_capture_tables(self.registry, st)
        )
        cuda, compiled = found["cuda_graphs"], found["compiled"]
        graph_list = [
            dict(g, kernels=g["kernels"][:limit], kernels_total=len(g["kernels"])) for g in cuda["graph_list"]
        ]
        compiled_cut = (
            None
            if compiled is None
            else dict(
                compiled,
                triton_kernels=compiled["triton_kernels"][:limit],
                triton_kernels_total=len(compiled["triton_kernels"]),
            )
        )
        return self._file_answer(
            st,
            "kernel",
            cuda_graphs=dict(cuda, graph_list=graph_list),
            compiled=compiled_cut,
        )

    def _run_distributed(self, run: str, span: str) -> tuple[DistributedResult, str]:
        """The run's distributed result and its Distributed tab link; Invalid for an unknown run."""
        self.registry.wait_scanned(self.wait_s)
        runs = queries.layout(self.registry)
        if run not in runs:
            raise Invalid(f"no run {run!r}; {queries.describe(runs)}")
        return self.registry.distributed(run, str(span)), self.link("distributed", run=run, span=span)

    def distributed(self, run: str, span: str = "1", limit: int = 10) -> dict[str, Any]:
        result, link = self._run_distributed(run, span)
        summary = report_distributed.distributed_summary(result)
        advice = self.registry.span_advice(run, str(span))
        if summary is None:
            return _plain(
                {
                    "run": run,
                    "span": span,
                    "reason": result["reason"],
                    "messages": result["messages"],
                    "notes": result.get("notes", []),
                    "recommendations": advice,
                    "link": link,
                }
            )
        collectives = queries.top_rows(
            [dict(c) for c in summary["collectives"]],
            "transfer_us",
            limit,
            list(report_distributed.summary_columns().collectives),
        )
        return _plain(
            dict(
                summary,
                run=run,
                span=span,
                ranks=summary["ranks"][: max(limit, 64)],
                ranks_total=len(summary["ranks"]),
                collectives=collectives,
                arrivals=sorted(summary["arrivals"], key=lambda e: -e["wait_total_us"])[:limit],
                recommendations=advice,
                link=link,
            )
        )

    def critical_path(self, run: str, span: str = "1", step: str | None = None, limit: int = 5) -> dict[str, Any]:
        result, link = self._run_distributed(run, span)
        paths = report_distributed.run_critical_path(result)
        if not paths:
            return _plain(
                {"run": run, "span": span, "steps_total": 0, "messages": result["messages"][:5], "link": link}
            )
        names = [p["step"] for p in paths]
        if step is not None and str(step) not in names:
            raise Invalid(f"no step {step!r} in run {run!r} at span {span}; steps: {', '.join(names[:20])}")
        chosen = (
            next(p for p in paths if p["step"] == str(step))
            if step is not None
            else max(paths, key=lambda p: p["length_us"])
        )
        longest = sorted(paths, key=lambda p: -p["length_us"])[:10]
        return _plain(
            {
                "run": run,
                "span": span,
                "cross_rank": result["view"] is not None,
                "steps_total": len(paths),
                "steps": [{"step": p["step"], "length_us": p["length_us"]} for p in longest],
                "step": _path_brief(chosen, limit),
                "link": link,
            }
        )

    def diff(
        self,
        base_run: str,
        exp_run: str,
        base_worker: str | None = None,
        base_span: str | None = None,
        exp_worker: str | None = None,
        exp_span: str | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        b, e = self._file(base_run, base_worker, base_span), self._file(exp_run, exp_worker, exp_span)
        doc = report.diff_document(b, self.registry.views(b), e, self.registry.views(e))
        ops = sorted(doc["operators"], key=lambda r: -abs(r["delta"][r["compared"]]))
        kernels = sorted(doc["kernels"], key=lambda r: -abs(r["delta_per_step_us"]))
        keys = {f"{side}_{k}": v for side, st in (("base", b), ("exp", e)) for k, v in self._where(st).items()}
        return _plain(
            {
                "baseline": self._where(b),
                "experiment": self._where(e),
                "steps": doc["steps"],
                "thresholds": doc["thresholds"],
                "operators": ops[:limit],
                "operators_total": len(ops),
                "kernels": kernels[:limit],
                "kernels_total": len(kernels),
                "link": self.link(
                    "diff", **self._where(b), **keys, diff_for=orjson.dumps([b.run, b.worker, b.span]).decode()
                ),
            }
        )

    def hang(self, run: str, limit: int = 10) -> dict[str, Any]:
        """Why the run's job hung, from its flight-recorder dumps (:mod:`tb_plugin.registry.hang`): the
        verdict (root cause first), the first ``limit`` findings without their long fields, the
        unreadable dumps."""
        self.registry.wait_scanned(self.wait_s)
        runs = sorted({a.run for a in self.registry.artifacts() if a.entry.kind == "flight_recorder"})
        if run not in runs:
            raise Invalid(f"run {run!r} has no flight-recorder dump; runs with dumps: {', '.join(runs) or 'none'}")
        doc = self.registry.hang(run)
        if doc is None:  # the dumps went away since the listing
            raise Invalid(f"run {run!r} has no flight-recorder dump")
        keep = (
            "kind",
            "pg_name",
            "pg_desc",
            "op",
            "collective_seq_id",
            "ranks_present",
            "missing_ranks",
            "root_cause",
            "explained_by",
            "since_s",
            "trace_ranks",
            "trace_note",
            "sentence",
        )
        findings = [{k: f.get(k) for k in keep} for f in doc["findings"][:limit]]
        return _plain(
            {
                "run": run,
                "dumps": doc["dumps"],
                "ranks_read": len(doc["ranks"]),
                "verdict": doc["verdict"],
                "findings": findings,
                "findings_total": len(doc["findings"]),
                "unreadable": doc["unreadable"][:limit],
                "link": self.link("hang", run=run),
            }
        )

    def search_timeline(
        self,
        run: str,
        query: str,
        worker: str | None = None,
        span: str | None = None,
        regex: bool = False,
        limit: int = 20,
    ) -> dict[str, Any]:
        st = self._file(run, worker, span)
        if not query or len(query) > 500:
            raise Invalid("query must be 1 to 500 characters")
        try:
            found = self.registry.views(st).timeline_search(query, regex)
        except ValueError as exc:  # a bad or too slow regular expression
            raise Invalid(str(exc)) from None
        cols = [k for k in ("rows", "name", "start_us", "dur_us", "track") if k in found]
        matches = [
            dict(zip(["row" if c == "rows" else c for c in cols], vals))
            for vals in zip(*(found[c][:limit] for c in cols))
        ]
        return self._file_answer(
            st,
            "trace",
            query=query,
            regex=regex,
            total=found["total"],
            matches=matches,
        )

    def event(self, run: str, row: int, worker: str | None = None, span: str | None = None) -> dict[str, Any]:
        st = self._file(run, worker, span)
        doc = self.registry.views(st).event(row)
        if doc is None:
            raise Invalid(
                f"row must be an event index from search_timeline, 0 to "
                f"{len(self.registry.views(st).trace.events) - 1} (got {row})"
            )
        return self._file_answer(
            st,
            "trace",
            **doc,
            call_stack=[p["name"] for p in doc["parents"]] + [doc["name"]],
        )
