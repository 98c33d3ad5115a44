"""``kinetoscope serve LOGDIR [--host 127.0.0.1] [--port 6006] [--path-prefix /p] [--allow-host NAME]``: the
tab's UI and routes without TensorBoard, on waitress (tb_plugin/standalone.py). Exit status 1 when the
``[serve]`` extra (flask, waitress) is missing."""

from __future__ import annotations

import argparse
import sys

from ..settings import Settings


def command(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: Settings) -> int:
    """Serve until interrupted (its arguments: cli/__init__.py)."""
    try:
        from ..standalone import serve_forever
    except ModuleNotFoundError as exc:
        if exc.name not in ("flask", "waitress"):
            raise
        sys.stderr.write(f"kinetoscope: serve needs {exc.name}: pip install 'kinetoscope[serve]'\n")
        return 1
    return serve_forever(
        args.logdir, args.host, args.port, args.path_prefix, sys.stderr, args.allow_host, settings=settings
    )
