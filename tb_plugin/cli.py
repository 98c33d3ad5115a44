"""``kinetoscope``: headless reports from the same analyses as the TensorBoard tab.

    kinetoscope report LOGDIR [--run RUN] [--json] [--no-cache] [--executor local|dask://HOST:PORT]
    kinetoscope diff BASE EXP [--fail-on step_time=+5%] [--fail-on kernel:NAME=+10%] [--json]
    kinetoscope serve LOGDIR [--host 127.0.0.1] [--port 6006] [--path-prefix /p] [--allow-host NAME]
    kinetoscope mcp LOGDIR  (MCP server: interfaces/mcp_server.py) | kinetoscope hang DIR [--json]  (cli_hang.py)

Prints a readable table (or, with ``--json``, the document described in docs/GUIDE.md). Progress goes to stderr,
one line per rank. The exit status is 1 when any trace file failed to load or the logdir holds no trace (nor
memory artifact), 2 for bad arguments (a logdir or path that does not exist or cannot be read, an unknown run,
worker or span). ``diff`` with ``--fail-on`` is the CI regression gate (tb_plugin/analysis/regression.py):
exit 3 when a rule's per-step change exceeds both its threshold and the noise. ``serve`` runs the tab without
TensorBoard (tb_plugin/standalone.py). The per-rank work (parse, reduce to aggregates) runs on the executor
(tb_plugin/registry/executors): the local process pool by default, or a Dask cluster (``--executor`` or
``$KINETOSCOPE_EXECUTOR``).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import TYPE_CHECKING, TextIO

from . import __version__, cli_hang
from .errors import CLI_EXIT_STATUS, KinetoscopeError
from .interfaces import mcp_server
from .settings import Settings
from .storage.local import is_plain_local, strip_protocol

# Only what parsing the command line needs is imported here: each command imports its own modules
# (numpy, the analyses, the registry: ~0.2 s cold), so that a bad argument, ``--help`` or a missing
# logdir answers before any of them is loaded.
ENV_VAR = "KINETOSCOPE_EXECUTOR"  # registry/executors: the executor's environment variable (checked by a test)
if TYPE_CHECKING:
    from .registry.runs import RunRegistry


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status. The CLI's one error mapping: a
    :class:`~tb_plugin.errors.KinetoscopeError` from any command is its message on stderr, exit status 2."""
    try:
        return _command(argv)
    except KinetoscopeError as exc:
        sys.stderr.write(f"kinetoscope: {exc.message}\n")
        return CLI_EXIT_STATUS


def _command(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="kinetoscope", description="PyTorch profiler trace reports")
    parser.add_argument("--version", action="version", version=f"kinetoscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="Overview of every trace under a logdir")
    report.add_argument("logdir", help="directory or fsspec URL (s3://, gs://, az://)")
    report.add_argument("--run", help="only this run (its path relative to the logdir; '.' for the root)")
    report.add_argument("--json", action="store_true", help="print JSON instead of tables")
    report.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")
    report.add_argument(
        "--executor",
        default=None,
        help=f"where the per-rank work runs: 'local' (process pool, the default) or "
        f"dask://HOST:PORT (a Dask scheduler); default ${ENV_VAR} or local",
    )
    diff = sub.add_parser("diff", help="compare a baseline trace with an experiment")
    diff.add_argument("base", help="a trace file or a run directory (local or bucket URL)")
    diff.add_argument("exp", help="a trace file or a run directory (local or bucket URL)")
    for side in ("base", "exp"):
        diff.add_argument(f"--{side}-worker", help="worker (default: the first)")
        diff.add_argument(f"--{side}-span", default="1", help="span (default: 1)")
    diff.add_argument("--json", action="store_true", help="print JSON instead of tables")
    diff.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")
    diff.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="METRIC=+T",
        help="CI gate: exit 3 when METRIC (step_time or kernel:NAME) grows by more than T "
        "(e.g. +5%% or +300us) and beyond the step-to-step noise; repeatable",
    )
    serve = sub.add_parser("serve", help="serve the tab's UI and routes without TensorBoard (waitress)")
    serve.add_argument("logdir", help="directory or fsspec URL (s3://, gs://, az://)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=6006, help="port (default 6006)")
    serve.add_argument("--path-prefix", default="", help="serve under this URL path, e.g. /profiler")
    serve.add_argument("--allow-host", action="append", default=[], metavar="NAME", help="also answer this Host name")
    mcp_server.add_parser(sub)
    cli_hang.add_parser(sub, ENV_VAR)
    args = parser.parse_args(argv)
    settings = Settings.from_env()  # the one read of the KINETOSCOPE_* variables, passed down
    if args.command == "mcp":
        return mcp_server.run(args, settings)
    if args.command == "hang":
        return cli_hang.run(args)
    if args.command == "diff":
        from .analysis.regression import parse_fail_on  # diff only, like cli_gate (fewer imports for report)

        try:
            args.rules = [parse_fail_on(text) for text in args.fail_on]
        except ValueError as exc:
            parser.error(str(exc))
        return run_diff(args, sys.stdout, sys.stderr, settings)
    if args.command == "serve":
        try:
            from .standalone import serve_forever
        except ModuleNotFoundError as exc:
            if exc.name not in ("flask", "waitress"):
                raise
            sys.stderr.write(f"kinetoscope: serve needs {exc.name}: pip install 'kinetoscope[serve]'\n")
            return 1
        return serve_forever(
            args.logdir, args.host, args.port, args.path_prefix, sys.stderr, args.allow_host, settings=settings
        )
    return run_report(
        args.logdir,
        args.run,
        args.json,
        not args.no_cache,
        sys.stdout,
        sys.stderr,
        executor=args.executor,
        settings=settings,
    )


class _PickError(Exception):
    """A diff side that names nothing loadable: the message, and the exit status (2: a bad argument)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _pick(target: str, worker: str | None, span: str, use_cache: bool, settings: Settings | None = None):
    """The loaded FileState of a file or of a run directory's worker/span, and its registry. Raises
    :class:`_PickError` when the path does not exist, names no trace, or the worker/span is not there
    (its message lists the workers and spans that are)."""
    from .registry.cache import ParseCache
    from .registry.runs import RunRegistry
    from .storage.remote import url_to_fs

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

    from . import cli_gate
    from .analysis.numfmt import fixed
    from .analysis.overview import CATEGORY_KEYS
    from .cli_tables import labels
    from .registry import report
    from .trace import jsonsafe

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


def run_report(
    logdir: str,
    run: str | None,
    as_json: bool,
    use_cache: bool,
    out: TextIO,
    err: TextIO,
    executor: str | None = None,
    settings: Settings | None = None,
) -> int:
    # a missing local logdir is answered before the registry, numpy and the analyses are imported
    problem = _local_logdir_problem(strip_protocol(logdir)) if is_plain_local(logdir) else None
    if problem is not None:
        err.write(f"kinetoscope: {logdir}: {problem}\n")
        return 2
    import orjson

    from .registry import report
    from .registry.cache import ParseCache
    from .registry.runs import RunRegistry
    from .registry.states import ERROR
    from .storage.remote import is_local_fs
    from .trace import jsonsafe

    settings = Settings.from_env() if settings is None else settings
    cache = ParseCache(settings.cache_dir) if use_cache else None
    executor = executor or settings.executor
    registry = RunRegistry(logdir, cache=cache, executor=executor, settings=settings)
    if registry.fs is not None and is_local_fs(registry.fs) and not is_plain_local(logdir):
        problem = _local_logdir_problem(registry.root)  # a local spelling only fsspec resolves
    if problem is not None:
        err.write(f"kinetoscope: {logdir}: {problem}\n")
        return 2
    registry.scan()
    if registry.error is not None:  # missing extra, no credentials, access denied, missing bucket
        err.write(f"kinetoscope: {registry.logdir}: {registry.error}\n")
        return 2
    files = [st for st in registry.files() if run is None or st.run == run]
    if run is not None and not files and not registry.artifacts(run):  # a run of snapshots only is a run too
        err.write(f"kinetoscope: no run named {run!r} under {registry.logdir}\n")
        return 2
    _analyse(registry, files, executor, err)
    doc, failed_artifacts = report.report_document(registry, files, run)
    if as_json:
        out.write(jsonsafe.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from .cli_tables import print_tables  # the text tables only

        print_tables(doc, out)
    failed = [st for st in files if st.state == ERROR] + failed_artifacts
    for st in failed:
        err.write(f"kinetoscope: {st.entry.rel}: {st.error}\n")
    if not files and not registry.artifacts():
        err.write(f"kinetoscope: no trace files under {registry.logdir}\n")
        return 1  # an existing logdir with nothing to report: a CI job must notice
    return 1 if failed else 0


def _local_logdir_problem(root: str) -> str | None:
    """Why the local logdir ``root`` (a path) cannot be reported on (missing, not a directory, unreadable), or None."""
    if not os.path.exists(root):
        return "no such directory"
    if not os.path.isdir(root):
        return None if os.path.isfile(root) else "not a directory or a file"
    return None if os.access(root, os.R_OK | os.X_OK) else "cannot be read (permission denied)"


def _analyse(registry: RunRegistry, files: list, executor: str | None, err: TextIO) -> None:
    """Every file's per-rank task on the chosen executor, one progress line per rank on ``err``."""
    if not files:
        return
    from .registry.executors import LocalExecutor, open_executor
    from .trace import heap

    heap.tune_allocator()  # this process's large arrays from the heap (trace/heap.py)
    warn = lambda message: err.write(f"kinetoscope: {message}\n")
    chosen = open_executor(executor, warn)
    from .cli_progress import ProgressBar

    bar = ProgressBar(err, len(files), show_host=not isinstance(chosen, LocalExecutor))
    try:
        registry.analyse(files, chosen, tables=True, progress=bar.rank, warn=warn)
    finally:
        chosen.close()
    bar.done()
    where = (
        (f"{chosen.used_workers} worker processes" if chosen.used_workers else "this process")
        if isinstance(chosen, LocalExecutor)
        else chosen.description
    )
    err.write(f"analysed {len(files)} files on {where}\n")


def entry() -> int:
    """The ``kinetoscope`` command (setup.py): :func:`main`, then the collector frozen as the process exits."""
    status = main()
    gc.freeze()  # its passes over every object at interpreter exit cost ~30 ms of a cold report
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
