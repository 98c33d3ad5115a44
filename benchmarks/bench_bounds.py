"""How long the hostile-input bounds take to answer, in wall time: the figures the tests do not assert.

    python benchmarks/bench_bounds.py

Each case is a hostile input the tests feed (tests/fuzz_files.py builds them) and the behaviour they
check; here only the time to the answer is printed (machine load changes it: give ``uptime`` with it):

- ``yaml_aliases_s``: a 3 MB MemProfiler YAML whose aliases would expand to 2·10⁸ values, capped;
- ``begin_end_s``: 60 000 unmatched ``B``/``E`` events paired (linear; ~110 s when it was quadratic);
- ``whitespace_bomb_s``: 2 MB of gzip inflating to 2 GiB of spaces, refused after the first 8 MiB;
- ``bracket_bomb_s``: 1 GiB of ``[`` in 1 MB of gzip, refused at a 64 MiB limit;
- ``endless_hash_s``: a pickle whose hashing never ends, stopped by the reader's 2 s limit.

Last line: ``yaml_aliases_s=… begin_end_s=… whitespace_bomb_s=… bracket_bomb_s=… endless_hash_s=…``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
from fuzz_files import begin_end_trace, doubling_tuple_pickle, gzip_bomb  # noqa: E402

from tb_plugin.artifacts import isolated, memprofiler  # noqa: E402
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot  # noqa: E402
from tb_plugin.registry.parse import load_trace_file  # noqa: E402
from tb_plugin.trace.errors import TraceReadError  # noqa: E402


def _seconds(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _refused(call, error: type) -> None:
    try:
        call()
    except error:
        return
    raise AssertionError("the hostile input was accepted")


def main() -> None:
    figures = {}
    values = "{" + ", ".join(f"k{j}: {j}" for j in range(2000)) + "}"
    aliases = (
        f"0.training_step.0.start: &v {values}\n" + "".join(f"0.training_step.{i}.end: *v\n" for i in range(1, 100_000))
    ).encode()
    figures["yaml_aliases_s"] = _seconds(lambda: memprofiler.load_stats("rank_0_memory_stats.yaml", aliases))
    with tempfile.TemporaryDirectory() as tmp:
        paired = Path(tmp, "be.pt.trace.json")
        paired.write_bytes(begin_end_trace(60_000))
        figures["begin_end_s"] = _seconds(lambda: load_trace_file(str(paired)))
        spaces = Path(tmp, "w.pt.trace.json.gz")
        spaces.write_bytes(gzip_bomb(2048, b" "))
        figures["whitespace_bomb_s"] = _seconds(lambda: _refused(lambda: load_trace_file(str(spaces)), TraceReadError))
        brackets = Path(tmp, "bomb.pt.trace.json.gz")
        brackets.write_bytes(gzip_bomb(1024, b"["))
        os.environ["KINETOSCOPE_MAX_TRACE_BYTES"] = str(64 << 20)
        figures["bracket_bomb_s"] = _seconds(lambda: _refused(lambda: load_trace_file(str(brackets)), TraceReadError))
    isolated.BASE_TIME_S = 2.0
    endless = doubling_tuple_pickle(60)
    figures["endless_hash_s"] = _seconds(lambda: _refused(lambda: load_snapshot(endless), SnapshotError))
    print(" ".join(f"{k}={v:.2f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
