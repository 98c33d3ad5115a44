"""``kinetoscope hang DIR [--json]``: why a job hung, from the flight-recorder dumps in DIR
(tb_plugin/registry/hang.py builds the document). Exit status: 3 when there is any finding or an
unreadable dump, 0 with none, 2 when nothing could be read or the arguments are wrong (argparse's own
status), so a CI job or a restart agent can act on it. Also prints the hang section of ``report``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from ..settings import Settings

if TYPE_CHECKING:
    from ..registry.records import HangDocument, RunReport

# the registry, orjson and the analyses are imported by :func:`run` only: the text report, which prints
# the hang section (:func:`print_report_hang`), pays nothing for the command

# the keys of a finding in the JSON answer, in order (the document's own extra keys follow)
FINDING_KEYS = (
    "kind",
    "pg_name",
    "pg_desc",
    "pg_id",
    "op",
    "collective_seq_id",
    "sizes",
    "dtype",
    "ranks_present",
    "missing_ranks",
    "detail",
)


def command(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: Settings) -> int:
    """``kinetoscope hang`` (its arguments: cli/__init__.py)."""
    return run(args)


def run(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print the verdict (or JSON) of ``args.dir``; the exit status of the module docstring."""
    import sys

    import orjson

    from ..registry import hang
    from ..registry.executors import open_executor
    from ..storage.remote import StorageError
    from ..trace import jsonsafe

    out, err = out or sys.stdout, err or sys.stderr

    try:
        doc = hang.folder_document(
            args.dir,
            open_executor(args.executor, warn=lambda m: err.write(f"kinetoscope: {m}\n")),
            warn=lambda m: err.write(f"kinetoscope: {m}\n"),
        )
    except (hang.HangError, StorageError, OSError) as exc:
        err.write(f"kinetoscope: {exc}\n")
        return 2
    if not doc["ranks"]:
        err.write(f"kinetoscope: none of the {doc['dumps']} dumps in {args.dir} could be read\n")
        for u in doc["unreadable"]:
            err.write(f"  {u['path']}: {u['error']}\n")
        if args.json:
            out.write(jsonsafe.dumps(json_document(doc), option=orjson.OPT_INDENT_2).decode() + "\n")
        return 2
    if args.json:
        out.write(jsonsafe.dumps(json_document(doc), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print_document(doc, out)
    return 3 if doc["findings"] or doc["unreadable"] else 0


def json_document(doc: HangDocument) -> dict:
    """The ``--json`` answer: ``ranks``, ``groups``, ``findings`` (the issue's keys first), ``unreadable``,
    ``verdict``, ``traces``."""
    findings = [
        {**{k: f.get(k) for k in FINDING_KEYS}, **{k: v for k, v in f.items() if k not in FINDING_KEYS}}
        for f in doc["findings"]
    ]
    return {
        "folder": doc.get("folder"),
        "verdict": doc["verdict"],
        "ranks": doc["ranks"],
        "groups": doc["groups"],
        "findings": findings,
        "unreadable": doc["unreadable"],
        "traces": doc["traces"],
    }


def print_document(doc: HangDocument, out: TextIO, indent: str = "") -> None:
    """The verdict, then per group its stuck instance, then the unreadable dumps."""
    guessed = [r["rank"] for r in doc["ranks"] if r["rank_from"] == "name"]
    out.write(
        f"{indent}{len(doc['ranks'])} dumps read ({_ranks(r['rank'] for r in doc['ranks'])})"
        + (f"; rank taken from the file name for {len(guessed)}" if guessed else "")
        + "\n"
    )
    out.write(f"{indent}verdict:\n")
    for n, text in enumerate(doc["verdict"], start=1):
        out.write(f"{indent}  {n}. {text}\n")
    for n, f in enumerate(doc["findings"], start=1):
        if f.get("trace_ranks"):
            t = doc["traces"]
            out.write(
                f"{indent}  traces of finding {n}: "
                + ", ".join(f"rank {r} {t[str(r)]['path']}" for r in f["trace_ranks"][:4])
                + "\n"
            )
        if f.get("trace_note"):  # what the traces say of it (registry/hang.py links them by group and Seq)
            out.write(f"{indent}  in the traces, finding {n}: {f['trace_note']}\n")
    for g in doc["groups"]:
        stuck = g.get("stuck")
        where = f"{g['pg_desc'] or '-'} (pg {g['pg_name']}, {len(g['ranks'])} ranks)"
        if stuck:
            out.write(
                f"{indent}group {where}: stuck at {stuck['op'] or '?'} #{stuck['collective_seq_id']}, present "
                f"{_ranks(stuck['ranks_present'])}, missing {_ranks(stuck['missing_ranks']) or '-'}\n"
            )
        else:
            out.write(f"{indent}group {where}: no rank behind\n")
    for u in doc["unreadable"]:
        out.write(
            f"{indent}unreadable: {u['path']} (rank {u['rank'] if u['rank'] is not None else '?'}): {u['error']}\n"
        )


def print_report_hang(run: RunReport, out: TextIO) -> None:
    """``kinetoscope report``'s hang section of a run (its ``hang`` key: the verdict and findings)."""
    doc = run.get("hang")
    if not doc:
        return
    out.write(f"\n== run {run['name']}  flight-recorder dumps: {doc['dumps']}\n")
    for n, text in enumerate(doc["verdict"], start=1):
        out.write(f"   {n}. {text}\n")


def _ranks(ranks) -> str:
    return ", ".join(str(r) for r in ranks)
