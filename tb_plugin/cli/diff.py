"""``kinetoscope diff BASE EXP [--fail-on step_time=+5%] [--fail-on kernel:NAME=+10%] [--json]``: a baseline
trace against an experiment (tb_plugin/registry/report.py's diff document), as JSON or text; with
``--fail-on`` the CI regression gate (gate.py). Exit status: 2 for a side that names nothing loadable
(a missing path, no trace, an unknown worker or span), 1 for a side that fails to load."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..settings import Settings


def command(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: Settings) -> int:
    """``kinetoscope diff`` (its arguments: cli/__init__.py); a ``--fail-on`` rule that does not parse is
    argparse's error (exit 2)."""
    from ..analysis.regression import parse_fail_on  # diff only, like gate.py (fewer imports for report)

    try:
        args.rules = [parse_fail_on(text) for text in args.fail_on]
    except ValueError as exc:
        parser.error(str(exc))
    return run_diff(args, sys.stdout, sys.stderr, settings)


class _PickError(Exception):
    """A diff side that names nothing loadable: the message, and the exit status (2: a bad argument)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _pick(target: str, worker: str | None, span: str, use_cache: bool, settings: Settings | None = None):
    """The loaded FileState of a file or of a run directory's worker/span, and its registry. Raises
    :class:`_PickError` when the path does not exist, names no trace, or the worker/span is not there
    (its message lists the workers and spans that are)."""
    from ..registry.cache import ParseCache
    from ..registry.runs import RunRegistry
    from ..storage.remote import url_to_fs

    fs, path = url_to_fs(target)
    if not fs.exists(path):
        raise _PickError(f"{target} does not exist", 2)
    is_file = fs.isfile(path)
    root = target.rsplit("/", 1)[0] if is_file else target
    cache_dir = None if settings is None else settings.cache_dir
    registry = RunRegistry(root or ".", cache=ParseCache(cache_dir) if use_cache else None, settings=settings)
    registry.scan()
    if registry.error is not None:
        raise _PickError(f"{target}: {registry.error}", 2)
    files = [st for st in registry.files() if st.run == "."]
    if is_file:
        files = [st for st in files if st.entry.name == path.rsplit("/", 1)[-1]]
        if not files:
            raise _PickError(f"{target} is not a trace file (*.pt.trace.json[.gz])", 2)
    else:
        if not files:
            raise _PickError(f"no trace files directly in {target} (give a run directory or a trace file)", 2)
        chosen = worker or files[0].worker
        picked = [st for st in files if st.worker == chosen and st.span == span]
        if not picked:
            spans: dict[str, set[str]] = {}
            for st in files:
                spans.setdefault(st.worker, set()).add(st.span)
            there = "; ".join(
                f"{w} (span{'s' if len(s) > 1 else ''} {', '.join(sorted(s, key=_span_key))})"
                for w, s in sorted(spans.items())
            )
            raise _PickError(
                f"no trace for worker {chosen!r}, span {span!r} in {target}; the workers and spans there: {there}", 2
            )
        files = picked
    state = registry.load(files[0])
    if state.error:
        raise _PickError(f"{state.entry.rel}: {state.error}", 1)
    return registry, state


def _span_key(span: str):
    return (0, int(span), "") if span.isdigit() else (1, 0, span)


def run_diff(args, out: TextIO, err: TextIO, settings: Settings | None = None) -> int:
    import orjson

    from ..analysis.numfmt import fixed
    from ..analysis.overview import CATEGORY_KEYS
    from ..registry import report
    from ..trace import jsonsafe
    from . import gate as cli_gate
    from .tables import labels

    try:
        base_reg, base = _pick(args.base, args.base_worker, args.base_span, not args.no_cache, settings)
        exp_reg, exp = _pick(args.exp, args.exp_worker, args.exp_span, not args.no_cache, settings)
    except _PickError as exc:
        err.write(f"kinetoscope: {exc}\n")
        if getattr(args, "rules", None) and args.json:  # a CI job's gate.json says why there is no verdict
            out.write(jsonsafe.dumps({"verdict": "error", "error": str(exc)}).decode() + "\n")
        return exc.status
    if getattr(args, "rules", None):
        return cli_gate.run_gate(args, base_reg, base, exp_reg, exp, out, err)
    doc = {
        "baseline": base.entry.path,
        "experiment": exp.entry.path,
        **report.diff_document(base, base_reg.views(base), exp, exp_reg.views(exp)),
    }
    if args.json:
        out.write(jsonsafe.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    steps = doc["steps"]
    out.write(f"baseline:   {doc['baseline']}\nexperiment: {doc['experiment']}\n")
    out.write(f"{'Category':<15}{'baseline µs':>14}{'experiment µs':>15}{'delta µs':>12}{'delta %':>9}\n")
    for key, label in zip(["total_us"] + CATEGORY_KEYS, ["Step"] + labels()):
        rel = steps["relative_pct"][key]
        out.write(
            f"{label:<15}{fixed(steps['baseline'][key], 1):>14}{fixed(steps['experiment'][key], 1):>15}"
            f"{fixed(steps['delta'][key], 1):>12}{'' if rel is None else f'{fixed(rel, 1):>8}%':>9}\n"
        )
    wf = doc["waterfall"]
    out.write(
        f"\nTop-level operators {fixed(wf['rows_us'], 1, sign=True)} µs + not in them "
        f"{fixed(wf['remainder_us'], 1, sign=True)} µs = step {fixed(wf['total_us'], 1, sign=True)} µs\n"
    )
    out.write(
        "\nLargest operator changes (per average step; verdict on host total, "
        f"changes within {fixed(doc['thresholds']['change_us'], 0)} µs or "
        f"{fixed(doc['thresholds']['change_pct'], 0)} % are unchanged):\n"
    )
    for row in sorted(doc["operators"], key=lambda r: -abs(r["change_us"]))[:15]:
        out.write(
            f"  {row['status']:<9} {cli_gate.path_text(row)}: host {fixed(row['delta']['host_total_us'], 1, sign=True)} µs, "
            f"device {fixed(row['delta']['device_total_us'], 1, sign=True)} µs\n"
        )
    return 0
