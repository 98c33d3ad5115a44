"""``kinetoscope``: headless reports from the same analyses as the TensorBoard tab.

    kinetoscope report LOGDIR [--run RUN] [--json] [--no-cache] [--executor local|dask://HOST:PORT]
    kinetoscope diff BASE EXP [--fail-on step_time=+5%] [--fail-on kernel:NAME=+10%] [--json]
    kinetoscope serve LOGDIR [--host 127.0.0.1] [--port 6006] [--path-prefix /p] [--allow-host NAME]
    kinetoscope mcp LOGDIR  (the MCP server: mcp.py) | kinetoscope hang DIR [--json]  (hang.py)

Prints a readable table (or, with ``--json``, the document described in docs/GUIDE.md). Progress goes to stderr,
one line per rank. The exit status is 1 when any trace file failed to load or the logdir holds no trace (nor
memory artifact), 2 for bad arguments (a logdir or path that does not exist or cannot be read, an unknown run,
worker or span). ``diff`` with ``--fail-on`` is the CI regression gate (gate.py, tb_plugin/analysis/regression.py):
exit 3 when a rule's per-step change exceeds both its threshold and the noise. ``serve`` runs the tab without
TensorBoard (serve.py, tb_plugin/standalone.py). The per-rank work (parse, reduce to aggregates) runs on the executor
(tb_plugin/registry/executors): the local process pool by default, or a Dask cluster (``--executor`` or
``$KINETOSCOPE_EXECUTOR``).

One module per command (report.py, diff.py, serve.py, mcp.py, hang.py; gate.py for ``diff --fail-on``), and
the text output's helpers (tables.py, advice.py, graphs.py, path.py, progress.py). This module holds the
argument table of every command and dispatches: a command's module is imported only when it runs.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
import threading

from .. import __version__

# Only what parsing the command line needs is imported here: each command imports its own modules
# (numpy, the analyses, the registry: ~0.2 s cold), so that a bad argument, ``--help`` or a missing
# logdir answers before any of them is loaded.
ENV_VAR = "KINETOSCOPE_EXECUTOR"  # registry/executors: the executor's environment variable (checked by a test)


def main(argv: list[str] | None = None, whole_process: bool = False) -> int:
    """Run one command; its exit status. The CLI's one error mapping: a
    :class:`~tb_plugin.errors.KinetoscopeError` from any command is its message on stderr, exit status 2.
    ``whole_process``: the command is all this process does (:func:`entry`), so ``report`` may tune the
    process-wide garbage collector; called from Python (tests, notebooks) it leaves it alone."""
    from ..errors import CLI_EXIT_STATUS, KinetoscopeError

    try:
        return _command(argv, whole_process)
    except KinetoscopeError as exc:
        sys.stderr.write(f"kinetoscope: {exc.message}\n")
        return CLI_EXIT_STATUS


def _command(argv: list[str] | None, whole_process: bool = False) -> int:
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
    mcp = sub.add_parser("mcp", help="serve the Model Context Protocol over stdio (for coding agents)")
    mcp.add_argument("logdir", help="directory or fsspec URL (s3://, gs://, az://)")
    mcp.add_argument(
        "--ui-url",
        default=None,  # None: mcp_tools.DEFAULT_UI_URL (imported only by the mcp command)
        help="the tab's page, for the answers' links (default: TensorBoard on localhost:6006)",
    )
    mcp.add_argument("--wait", type=float, default=20.0, help="seconds a tool waits for a file still loading")
    mcp.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")
    hang = sub.add_parser("hang", help="why a job hung: read the NCCL/Gloo flight-recorder dumps in DIR")
    hang.add_argument("dir", help="the folder of one job's dumps (any file names; local or fsspec URL)")
    hang.add_argument("--json", action="store_true", help="print JSON instead of the verdict")
    hang.add_argument(
        "--executor",
        default=None,
        help=f"where the dumps are read: local or dask://HOST:PORT (default ${ENV_VAR} or local)",
    )
    args = parser.parse_args(argv)
    args.whole_process = whole_process
    from ..settings import Settings

    settings = Settings.from_env()  # the one read of the KINETOSCOPE_* variables, passed down
    # each command's module, imported only for that command
    if whole_process and args.command != "report":
        gc.enable()  # (disabled by entry: only the report's first imports go without it)
    if args.command == "report":
        from .report import command
    elif args.command == "diff":
        from .diff import command
    elif args.command == "serve":
        from .serve import command
    elif args.command == "mcp":
        from .mcp import command
    else:
        from .hang import command
    return command(args, parser, settings)


def entry() -> int:
    """The ``kinetoscope`` command (setup.py): :func:`main`, then the collector frozen as the process exits.

    When nothing but the main thread is left, the process ends here (:func:`_exit_now`); otherwise
    (a thread still running) main's status is returned to the interpreter's usual exit."""
    _numeric_libraries_one_thread()
    # no collection while the command line and the first modules are imported (argparse, msgspec, the
    # storage modules: ~4 ms of the 35 MB V100 sample's cold report, none of it garbage): ``report``
    # enables the collector once its imports are frozen (cli/report.py), the other commands at once
    gc.disable()
    try:
        status = main(whole_process=True)
    finally:
        gc.enable()
    gc.freeze()  # its passes over every object at interpreter exit cost ~30 ms of a cold report
    if threading.active_count() == 1:
        _exit_now(status)
    return status


def _numeric_libraries_one_thread() -> None:
    """One thread for the numeric libraries of this process and the children it starts, unless the
    caller's environment names a count (before numpy is imported). numpy's OpenBLAS otherwise starts a
    thread per core at its import, which spins waiting for work that never comes (no analysis calls a
    BLAS routine) until the first fork shuts it down: on 2 cores a cold report of the 35 MB V100 sample
    spent ~15-20 ms of CPU in it, beside the early read's child. The reader children already get the
    same settings (artifacts/child_pipes.ONE_THREAD)."""
    from ..artifacts.child_pipes import ONE_THREAD
    from ..settings import default_environment

    default_environment(ONE_THREAD)


def _exit_now(status: int) -> None:
    """End the process with ``status`` as the interpreter would, without its teardown: the ``atexit``
    functions run and stdout/stderr are flushed (a failed flush is exit status 120, as Python's own),
    then ``os._exit`` skips freeing every module and object one by one (~8 ms of a cold report)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``), or a stream closed by the caller
            status = status or 120
    os._exit(status)
