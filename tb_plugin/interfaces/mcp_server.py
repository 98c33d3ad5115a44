"""``kinetoscope mcp LOGDIR``: the Model Context Protocol over stdio, for coding agents (docs/mcp.md).

Read-only and confined to the logdir like the plugin: arguments name runs, workers, spans and event
rows of the registry, never a path. The logdir is scanned and loaded in the background (the
tab's loader); a tool asked about a file that is still loading waits up to ``--wait`` seconds, then
answers an error saying how far loading is. A bad argument answers an error listing the valid values
(never a traceback). The answers are :class:`~.mcp_tools.Tools`', the tools and their schemas
:mod:`.mcp_app`'s. This module imports neither ``mcp`` nor ``pydantic``: ``kinetoscope`` runs without
the ``[mcp]`` extra.
"""

from __future__ import annotations

import argparse
import sys

from ..settings import Settings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mcp`` subcommand of ``kinetoscope`` (cli.py)."""
    p = sub.add_parser("mcp", help="serve the Model Context Protocol over stdio (for coding agents)")
    p.add_argument("logdir", help="directory or fsspec URL (s3://, gs://, az://)")
    p.add_argument(
        "--ui-url",
        default=None,  # None: mcp_tools.DEFAULT_UI_URL (imported only by the mcp command)
        help="the tab's page, for the answers' links (default: TensorBoard on localhost:6006)",
    )
    p.add_argument("--wait", type=float, default=20.0, help="seconds a tool waits for a file still loading")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")


def run(args: argparse.Namespace, settings: Settings | None = None) -> int:
    """Serve until stdin closes. 2 when the ``mcp`` package is missing or the logdir cannot be opened."""
    from ..errors import KinetoscopeError
    from .mcp_tools import DEFAULT_UI_URL

    ui_url = DEFAULT_UI_URL if args.ui_url is None else args.ui_url
    try:
        from .mcp_app import build_server  # needs the mcp extra (and pydantic): imported only here

        server = build_server(args.logdir, ui_url, args.wait, not args.no_cache, settings)
    except ImportError as exc:
        sys.stderr.write(f"kinetoscope: the MCP server needs the mcp package: pip install 'kinetoscope[mcp]' ({exc})\n")
        return 2
    except KinetoscopeError as exc:
        sys.stderr.write(f"kinetoscope: {exc}\n")
        return 2
    server.run("stdio")
    return 0
