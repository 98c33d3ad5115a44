"""Long fuzz run: the generators of ``tests/fuzz_inputs.py`` for N seconds, in one process per core.

    python benchmarks/fuzz_long.py --seconds 600 [--jobs 4] [--seed 1] [--crashes fuzz-crashes/]

Every input is a hostile trace file (byte mutations, truncation and gzip garbage over real traces
from ../shared/samples, hostile field values and layouts, deep nesting, huge numbers, NaN/Infinity,
duplicate keys, invalid UTF-8, a BOM). The property: it loads and every analysis runs, or it fails
with ``TraceReadError``; nothing else is raised and no input runs past its time bound. Crashing
inputs are saved (``crash-<sha1>.bin`` and ``.txt`` with the traceback). Last line:
``tried=… ok=… trace_read_errors=… unhandled=… inputs_per_s=…``; the exit status is 1 if any
input was unhandled.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def _worker(seed: int, seconds: float, crashes: str) -> dict:
    warnings.simplefilter("ignore")  # numpy's overflow warnings on hostile numbers are expected
    import fuzz_inputs as F

    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix="kinetoscope-fuzz-") as tmp:
        return F.run_for(random.Random(seed), lambda n: time.monotonic() < deadline, Path(tmp),
                         on_unhandled=lambda label, data, exc: print(
                             f"UNHANDLED {label}: {type(exc).__name__}: {str(exc)[:200]} -> "
                             f"{F.save_crash(Path(crashes), label, data, exc)}", flush=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--crashes", default="fuzz-crashes", help="where crashing inputs are saved")
    args = parser.parse_args(argv)
    import fuzz_inputs as F

    seeds = F.seed_documents()
    print(f"fuzzing for {args.seconds:.0f} s with {args.jobs} processes, seed {args.seed}, "
          f"{len(seeds)} seed traces: {', '.join(name for name, _ in seeds)}", flush=True)
    if not seeds:
        print(f"no seed traces under {F.SAMPLES}", file=sys.stderr)
        return 2
    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(args.jobs) as pool:
        results = pool.starmap(_worker, [(args.seed * 1000 + i, args.seconds, args.crashes) for i in range(args.jobs)])
    elapsed = time.monotonic() - started
    total = {k: sum(r[k] for r in results) for k in ("tried", "ok", "error", "unhandled")}
    print(f"tried={total['tried']} ok={total['ok']} trace_read_errors={total['error']} "
          f"unhandled={total['unhandled']} inputs_per_s={total['tried'] / elapsed:.1f} seconds={elapsed:.0f}")
    return 1 if total["unhandled"] else 0


if __name__ == "__main__":
    sys.exit(main())
