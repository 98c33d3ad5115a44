"""``kinetoscope report LOGDIR [--run RUN] [--json] [--no-cache] [--executor local|dask://HOST:PORT]``: the
report document of every trace under a logdir (tb_plugin/registry/report.py), as JSON or as text tables
(tables.py), with one progress line per rank on stderr (progress.py). Exit status: 1 when any trace
file failed to load or the logdir holds no trace (nor memory artifact), 2 for a logdir that does not
exist or cannot be read, or an unknown run."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
from typing import TYPE_CHECKING, Iterator, TextIO

from ..settings import Settings
from ..storage.local import is_plain_local, strip_protocol

# the registry, numpy and the analyses are imported by run_report, after the logdir is found to exist
if TYPE_CHECKING:
    from ..registry.runs import RunRegistry


def command(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: Settings) -> int:
    """``kinetoscope report`` (its arguments: cli/__init__.py)."""
    import sys

    return run_report(
        args.logdir,
        args.run,
        args.json,
        not args.no_cache,
        sys.stdout,
        sys.stderr,
        executor=args.executor,
        settings=settings,
        whole_process=getattr(args, "whole_process", False),
    )


def run_report(
    logdir: str,
    run: str | None,
    as_json: bool,
    use_cache: bool,
    out: TextIO,
    err: TextIO,
    executor: str | None = None,
    settings: Settings | None = None,
    whole_process: bool = False,
) -> int:
    """``kinetoscope report``: the report of ``logdir`` on ``out`` (JSON or tables), progress and errors on
    ``err``; the exit status. ``whole_process``: this report is all the process does (the command line),
    so the collector may be tuned for it (:func:`_imports_frozen`)."""
    # a missing local logdir is answered before the registry, numpy and the analyses are imported
    problem = _local_logdir_problem(strip_protocol(logdir)) if is_plain_local(logdir) else None
    if problem is not None:
        err.write(f"kinetoscope: {logdir}: {problem}\n")
        return 2
    # a child reads a large snapshot, another the one gzip trace, while this process imports; the snapshot's
    # first, before the early trace reader's imports (the command line: forked, no interpreter to start)
    if is_plain_local(logdir) and run is None:
        from ..artifacts.early import start as start_early_reader

        start_early_reader(strip_protocol(logdir), cached=use_cache, fork=whole_process)
        chosen = executor or (settings or Settings.from_env()).executor or "local"
        if whole_process and chosen.startswith("local"):  # (a fork: the command line, parsing here)
            from ..storage.early_read import start as start_early_read

            start_early_read(
                strip_protocol(logdir), cached=use_cache, then=_split_writer, then_dir=_cache_folder(use_cache)
            )
    with _imports_frozen(whole_process):
        import orjson

        from ..registry import report
        from ..registry.cache import ParseCache
        from ..registry.runs import RunRegistry
        from ..registry.states import ERROR
        from ..storage.remote import is_local_fs
        from ..trace import jsonsafe

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
    registry.keep_spare_reader()  # the large snapshots the early child does not read: no child start each
    files = [st for st in registry.files() if run is None or st.run == run]
    if run is not None and not files and not registry.artifacts(run):  # a run of snapshots only is a run too
        err.write(f"kinetoscope: no run named {run!r} under {registry.logdir}\n")
        return 2
    _analyse(registry, files, executor, err)
    doc, failed_artifacts = report.report_document(registry, files, run)
    if as_json:
        out.write(jsonsafe.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from .tables import print_tables  # the text tables only

        print_tables(doc, out)
    failed = [st for st in files if st.state == ERROR] + failed_artifacts
    for st in failed:
        err.write(f"kinetoscope: {st.entry.rel}: {st.error}\n")
    if not files and not registry.artifacts():
        err.write(f"kinetoscope: no trace files under {registry.logdir}\n")
        return 1  # an existing logdir with nothing to report: a CI job must notice
    return 1 if failed else 0


@contextlib.contextmanager
def _imports_frozen(whole_process: bool) -> Iterator[None]:
    """With ``whole_process``: the collector paused while the registry, numpy and the analyses are imported
    (~48 000 tracked objects, none of them garbage), then everything made so far frozen (``gc.freeze``: it
    lives until the process ends), so that later collections pass only over what the parse and the
    analyses make (a full one ran during the critical path), and the collector enabled (``entry`` paused
    it before the command line's first imports). A cold report of the 35 MB V100 sample: the
    collector's 143 passes took 31-39 ms, now 90 passes 7.5-8 ms (load 3). Called from Python
    (``whole_process`` False) the caller's collector is left alone."""
    if not whole_process:
        yield
        return
    from ..trace.heap import gc_paused

    with gc_paused():
        yield
        gc.freeze()
    gc.enable()  # (entry disabled it before this command's first imports: then gc_paused left it so)


def _cache_folder(use_cache: bool) -> str | None:
    """The parse cache's folder (made when missing), where the early split's file may lie on disk and become
    the trace's events file; None without the cache, or when it cannot be made."""
    if not use_cache:
        return None
    from ..storage.cache_keys import cache_root
    from ..storage.private_files import make_private_dir

    try:
        root = cache_root()
        make_private_dir(root)
    except OSError:
        return None
    return root


def _split_writer():
    """What the early reader's child does once it has read the trace: split it into joined batches
    (trace/early_split.py), which this process's decode then takes instead of splitting it itself."""
    return _write_split


def _write_split(doc, fd: int) -> bool:
    """:func:`~tb_plugin.trace.early_split.write_split`, imported by the child after its inflate (msgspec:
    ~13 ms): this process forks the child that much sooner, and imports them later for its own decode."""
    from ..trace.early_split import write_split

    return write_split(doc, fd)


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
    from ..registry.executors import LocalExecutor, open_executor
    from ..registry.interface import RankRun
    from ..trace import heap

    heap.tune_allocator()  # this process's large arrays from the heap (trace/heap.py)
    warn = lambda message: err.write(f"kinetoscope: {message}\n")
    chosen = open_executor(executor, warn)
    from .progress import ProgressBar

    bar = ProgressBar(err, len(files), show_host=not isinstance(chosen, LocalExecutor))
    try:
        registry.analyse(files, chosen, RankRun(tables=True, progress=bar.rank, warn=warn))
    finally:
        chosen.close()
    bar.done()
    where = (
        (f"{chosen.used_workers} worker processes" if chosen.used_workers else "this process")
        if isinstance(chosen, LocalExecutor)
        else chosen.description
    )
    err.write(f"analysed {len(files)} files on {where}\n")
