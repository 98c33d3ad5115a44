"""Where a cold ``kinetoscope report --json`` holds its memory: the main process's VmRSS and VmHWM (MB) at
the boundaries of one file's task (``registry/executors/task.py``: ``parse_entry``, ``open_views``,
``rank_aggregate``), the report run in this process as the command runs it.

    KINETOSCOPE_CACHE_DIR=EMPTY_DIR python benchmarks/bench_report_phases.py LOGDIR [--stacks] > report.json

Give it an empty cache dir for a cold run (the parse cache and the analysis cache would answer otherwise).
The phase lines go to stderr, the report to stdout (``cmp`` it with another code base's). Figures, not
assertions; the sections forked to a child (``registry/executors/sections.py``) are not in these figures.
``--stacks``: from the start of ``rank_aggregate`` (the decode workers and the sections' child are forked
by then: a thread started earlier would keep them from being forks), a thread samples this process's RSS
every 20 ms and prints (stderr) the main thread's two innermost frames at every new maximum over 20 MB.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PHASES = ("parse_entry", "open_views", "rank_aggregate")


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) // 1024
    return out


def _say(tag: str) -> dict[str, int]:
    st = _status()
    sys.stderr.write(f"[phase] {tag}: RSS {st['VmRSS']} MB, HWM {st['VmHWM']} MB\n")
    sys.stderr.flush()
    return st


def _wrapped(name: str, f: Callable[..., Any], seen: dict[str, int], stacks: bool) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        _say(f"before {name}")
        if stacks and name == "rank_aggregate":
            from benchmarks.bench_sections import _sample_stacks  # (stdout holds the report: frames to stderr)

            sampler = threading.Thread(
                target=_sample_stacks, args=(threading.get_ident(), threading.Event(), sys.stderr), daemon=True
            )
            sampler.start()
        try:
            return f(*args, **kwargs)
        finally:
            seen[name] = _say(f"after {name}")["VmRSS"]

    return call


def main() -> int:
    import tb_plugin.registry.executors.task as task
    from tb_plugin import cli

    argv = [a for a in sys.argv[1:] if a != "--stacks"]

    seen: dict[str, int] = {}
    for name in PHASES:
        setattr(task, name, _wrapped(name, getattr(task, name), seen, "--stacks" in sys.argv[1:]))
    status = cli.main(["report", "--json", *argv])
    end = _say("end")
    # the closing name=value line on stderr: stdout holds the report
    figures = " ".join(f"after_{k}_rss_mb={v}" for k, v in seen.items())
    sys.stderr.write(f"{figures} peak_rss_mb={end['VmHWM']}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
