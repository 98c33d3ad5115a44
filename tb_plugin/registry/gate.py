"""The CI regression gate's document (``kinetoscope diff BASE EXP --fail-on …``): per rule the
per-step samples of both sides, compared by :mod:`..analysis.regression`, and the operators and
kernels that explain the difference (from :mod:`..analysis.diff`). No arithmetic here beyond
selecting and ordering."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis import regression
from ..analysis.diff import kernel_diff, op_diff_flat
from ..analysis.step_metrics import kernel_step_times, matching_kernel_names

if TYPE_CHECKING:
    from ..analysis.diff_records import DiffField
    from ..trace.model import Trace
    from .records import GateDocument, GateExplain
    from .states import FileState
    from .views import FileViews

TOP_EXPLAIN = 10  # operators and kernels listed as the explanation


class GateError(ValueError):
    """A rule that cannot be checked on these traces (a kernel name that matches no kernel, step
    durations that are not finite or negative)."""


def _samples(rule: regression.FailOn, state: FileState, views: FileViews) -> np.ndarray:
    if rule.kernel is None:  # the Overview's step totals: the numbers the tab shows
        assert state.overview is not None, "the gate compares two loaded files"
        return np.array([s["total_us"] for s in state.overview["steps"]], dtype=np.float64)
    return kernel_step_times(views.trace, rule.kernel)


def gate_document(
    rules: list[regression.FailOn],
    base_state: FileState,
    base_views: FileViews,
    exp_state: FileState,
    exp_views: FileViews,
) -> GateDocument:
    """``verdict``, ``method``, ``checks`` (one per rule, :func:`..analysis.regression.compare`) and
    ``explain`` (the top operators by change of self time per average step, the top kernels by change
    of time per average step). Raises :class:`GateError` for a kernel rule matching no kernel on
    either side (the message lists a few kernel names that are there)."""
    checks = []
    for rule in rules:
        if rule.kernel is not None:
            names = {
                side: matching_kernel_names(v.trace, rule.kernel)
                for side, v in (("baseline", base_views), ("experiment", exp_views))
            }
            if not names["baseline"] and not names["experiment"]:
                some = sorted(set(matching_kernel_names(base_views.trace, "")))[:5]
                raise GateError(
                    f"--fail-on {rule.metric}: no kernel name contains {rule.kernel!r} in either trace"
                    f"{'; some kernels there: ' + ', '.join(some) if some else ' (they have no kernels)'}"
                )
        samples = [_samples(rule, base_state, base_views), _samples(rule, exp_state, exp_views)]
        for side, values in zip(("baseline", "experiment"), samples):
            if problem := regression.sample_problem(values, positive=rule.kernel is None):
                raise GateError(f"--fail-on {rule.metric}: {side}: {problem}")
        check = regression.compare(rule, *samples)
        if rule.kernel is not None:
            check["kernels_matched"] = names
        checks.append(check)
    return {
        "verdict": regression.verdict(checks),
        "method": regression.method(),
        "checks": checks,
        "explain": explain(base_views.trace, exp_views.trace),
    }


def explain(base_trace: Trace, exp_trace: Trace, limit: int = TOP_EXPLAIN) -> GateExplain:
    """The operator nodes (path, status) with the largest change of self time (device self time where
    the node has device time, else host self time; µs per average step; self times do not count a
    child's change twice), and the kernels with the largest change of time per average step."""
    rows: list[dict[str, Any]] = []
    for r in op_diff_flat(base_trace, exp_trace):
        has_device = r["baseline"]["device_total_us"] > 0 or r["experiment"]["device_total_us"] > 0
        key: DiffField = "device_self_us" if has_device else "host_self_us"
        rows.append(
            {
                "path": r["path"],
                "status": r["status"],
                "compared": key,
                "baseline_us": r["baseline"][key],
                "experiment_us": r["experiment"][key],
                "delta_us": r["delta"][key],
            }
        )
    rows.sort(key=lambda r: -abs(r["delta_us"]))
    kernels = [
        {
            "name": k["name"],
            "status": k["status"],
            "baseline_per_step_us": k["baseline_per_step_us"],
            "experiment_per_step_us": k["experiment_per_step_us"],
            "delta_per_step_us": k["delta_per_step_us"],
        }
        for k in kernel_diff(base_trace, exp_trace)[:limit]
    ]
    return {"operators": rows[:limit], "kernels": kernels}
