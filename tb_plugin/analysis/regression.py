"""The CI regression gate's statistics: is an experiment's per-step metric worse than the baseline's
by more than a threshold *and* by more than the step-to-step noise?

Definitions (µs; ``kinetoscope diff BASE EXP --fail-on METRIC=+T``):

- **Samples**: one value per kept step on each side (``step_time``: the Overview's step total;
  ``kernel:NAME``: the kernel time of the step, :mod:`.step_metrics`). The gate compares these
  distributions, never one average.
- **Delta**: ``median(experiment) − median(baseline)`` (µs); **delta %**: the delta over the
  baseline median × 100 (None when the baseline median is 0).
- **Noise interval**: a percentile bootstrap of the delta of medians: :data:`RESAMPLES` times, each
  side's steps are resampled with replacement (seeded: :data:`SEED`, so a run is reproducible) and
  the difference of the resampled medians is taken; the interval is the central
  :data:`CONFIDENCE` share of those differences (2.5th to 97.5th percentile, µs). ``interval_pct``
  is that interval over the baseline median × 100.
- **Status** of one check with threshold ``T`` (``T`` % of the baseline median, or ``T`` µs):
  *regression* when the delta exceeds ``+T`` and the whole interval lies above 0; *improvement* when
  the delta is below ``−T`` and the whole interval lies below 0; *within_noise* when the delta is
  beyond ``±T`` but the interval holds 0 (the step times are too noisy to tell); *unchanged*
  otherwise (within the threshold); *too_few_steps* when a side has fewer than
  :data:`MIN_STEPS` steps (the noise cannot be estimated: never a regression).
- **Verdict**: *regression* when any check is a regression, else *improvement* when any check is an
  improvement, else *no_regression*.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
MIN_STEPS = 3
_CHUNK_VALUES = 1 << 21  # resampled values drawn at once per side (16 MiB of float64)
STEP_TIME = "step_time"
KERNEL_PREFIX = "kernel:"
MAX_THRESHOLD = 1e9  # the largest threshold accepted (% or µs)
MAX_STEP_US = 1e12  # a step longer than this (11.6 days) is a corrupt profile
_THRESHOLD = re.compile(r"^\+?(\d+(?:\.\d*)?|\.\d+)\s*(%|us|µs)$")


@dataclasses.dataclass(frozen=True)
class FailOn:
    """One ``--fail-on`` rule: the metric (``step_time`` or ``kernel:NAME``) and its threshold."""

    metric: str
    value: float
    unit: str  # "%" (of the baseline median) or "us"

    @property
    def kernel(self) -> str | None:
        """The kernel name (substring) of a ``kernel:NAME`` rule, else None."""
        return self.metric[len(KERNEL_PREFIX) :] if self.metric.startswith(KERNEL_PREFIX) else None

    def label(self) -> str:
        return f"{self.metric}=+{self.value:g}{'%' if self.unit == '%' else 'us'}"


def parse_fail_on(text: str) -> FailOn:
    """``step_time=+5%`` / ``kernel:NAME=+10%`` / ``step_time=+300us`` → :class:`FailOn`. The kernel
    name may itself hold ``=`` (the threshold follows the last one). Raises ValueError with what is
    valid."""
    metric, sep, threshold = text.rpartition("=")
    if not sep or not metric:
        raise ValueError(f"--fail-on {text!r}: expected METRIC=+THRESHOLD, e.g. step_time=+5% or kernel:NAME=+10%")
    if metric != STEP_TIME and not (metric.startswith(KERNEL_PREFIX) and len(metric) > len(KERNEL_PREFIX)):
        raise ValueError(f"--fail-on {text!r}: unknown metric {metric!r}; valid: {STEP_TIME}, {KERNEL_PREFIX}NAME")
    m = _THRESHOLD.match(threshold.strip())
    if m is None:
        raise ValueError(
            f"--fail-on {text!r}: the threshold {threshold!r} must be a non-negative "
            f"percentage or duration, e.g. +5% or +300us"
        )
    value = float(m.group(1))
    if not math.isfinite(value) or value > MAX_THRESHOLD:  # 400 digits read as +inf: a gate that passes anything
        raise ValueError(f"--fail-on {text!r}: the threshold must be a finite number up to {MAX_THRESHOLD:g}")
    return FailOn(metric, value, "%" if m.group(2) == "%" else "us")


def sample_problem(values: np.ndarray, positive: bool = False) -> str | None:
    """Why per-step durations (µs) cannot be compared, or None: a NaN or infinite value, a negative one
    (or with ``positive``, for whole steps, a zero one: the decoder takes an unusable duration as 0 µs),
    or one above :data:`MAX_STEP_US` (a corrupt profile; its median would pass any gate)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values <= 0 if positive else values < 0) | (values > MAX_STEP_US)
    if not bad.any():
        return None
    first = float(values[np.argmax(bad)])
    return (
        f"{int(bad.sum())} of {len(values)} step durations are not finite, {'not positive' if positive else 'negative'}"
        f" or above {MAX_STEP_US:g} us (the first: {first!r}): a corrupt profile, not compared"
    )


def bootstrap_delta_interval(
    base: np.ndarray, exp: np.ndarray, resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED
) -> tuple[float, float]:
    """The percentile-bootstrap interval (µs) of ``median(exp) − median(base)`` (module docstring)."""
    rng = np.random.default_rng(seed)
    b = np.asarray(base, dtype=np.float64)
    e = np.asarray(exp, dtype=np.float64)
    rows = max(1, _CHUNK_VALUES // max(len(b), len(e)))  # resamples per chunk: bounded memory
    diffs = []
    for first in range(0, resamples, rows):
        k = min(rows, resamples - first)
        b_med = np.median(b[rng.integers(0, len(b), size=(k, len(b)))], axis=1)
        e_med = np.median(e[rng.integers(0, len(e), size=(k, len(e)))], axis=1)
        diffs.append(e_med - b_med)
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(np.concatenate(diffs), [tail, 100.0 - tail])
    return float(lo), float(hi)


def _pct(value: float, of: float) -> float | None:
    return 100.0 * value / of if of else None


def compare(rule: FailOn, base: np.ndarray, exp: np.ndarray) -> dict:
    """One check: both sides' step counts and medians (µs), the delta with its interval (µs and %),
    the threshold and the status (module docstring)."""
    base = np.asarray(base, dtype=np.float64)
    exp = np.asarray(exp, dtype=np.float64)
    doc: dict[str, Any] = {
        "metric": rule.metric,
        "rule": rule.label(),
        "threshold": rule.value,
        "threshold_unit": rule.unit,
        "baseline_steps": int(len(base)),
        "experiment_steps": int(len(exp)),
        "baseline_median_us": None,
        "experiment_median_us": None,
        "delta_us": None,
        "delta_pct": None,
        "interval_us": None,
        "interval_pct": None,
        "status": "too_few_steps",
    }
    if len(base) == 0 or len(exp) == 0:
        return doc
    b_med, e_med = float(np.median(base)), float(np.median(exp))
    delta = e_med - b_med
    doc.update(baseline_median_us=b_med, experiment_median_us=e_med, delta_us=delta, delta_pct=_pct(delta, b_med))
    if min(len(base), len(exp)) < MIN_STEPS:
        return doc
    lo, hi = bootstrap_delta_interval(base, exp)
    doc["interval_us"] = [lo, hi]
    doc["interval_pct"] = None if not b_med else [_pct(lo, b_med), _pct(hi, b_med)]
    if rule.unit == "%":
        change = doc["delta_pct"] if b_med else (np.inf if delta > 0 else -np.inf if delta < 0 else 0.0)
    else:
        change = delta
    if change > rule.value:
        doc["status"] = "regression" if lo > 0 else "within_noise"
    elif change < -rule.value:
        doc["status"] = "improvement" if hi < 0 else "within_noise"
    else:
        doc["status"] = "unchanged"
    return doc


def verdict(checks: list[dict]) -> str:
    """``regression`` / ``improvement`` / ``no_regression`` over the checks (module docstring)."""
    statuses = {c["status"] for c in checks}
    if "regression" in statuses:
        return "regression"
    return "improvement" if "improvement" in statuses else "no_regression"


def method() -> dict:
    """The test, for the JSON document (the numbers are this module's constants)."""
    return {
        "statistic": "difference of medians of the per-step values (µs)",
        "interval": "percentile bootstrap",
        "resamples": RESAMPLES,
        "confidence": CONFIDENCE,
        "seed": SEED,
        "min_steps": MIN_STEPS,
        "rule": "a regression when the delta exceeds the threshold and the whole interval lies above 0",
    }
