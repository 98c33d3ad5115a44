"""Long fuzz run: the generators of ``tests/fuzz_inputs.py`` and ``tests/fuzz_files.py`` for N
seconds, in one process per core.

    python benchmarks/fuzz_long.py --seconds 300 [--jobs 2] [--kinds traces,files] [--seed 1] [--crashes fuzz-crashes/]

``traces``: hostile trace bytes (byte mutations, truncation and gzip garbage over real traces from
../shared/samples, hostile field values and layouts, deep nesting, huge numbers, NaN/Infinity,
duplicate keys, invalid UTF-8, a BOM); the property: it loads and every analysis runs, or it fails
with ``TraceReadError``. ``files``: hostile files of every kind (deep- and doubling-tuple pickles,
memo-shared frames, shared-reference pickles (one annotation dict or one segment referenced up to
340,000 times), memo-index pickles (a shared history entry, then ``LONG_BINPUT`` up to 2³²−1),
wrong-typed snapshots, zero pickles, whitespace/bracket/export gzip bombs,
quadratic B/E, big integers, deep args, nested modules, odd and formula names, hostile YAML) in a
logdir served through the plugin's real routes; the property: each file loads or is its own error,
every route answers 200/400/404 with ``nosniff``, and a good run beside them keeps answering.

Jobs are split between the kinds. Nothing may be raised, no input may run past its time bound, and
no worker process may die (a crash: the input it was on is left in ``--crashes`` as
``current-<pid>.bin``). Unhandled inputs are saved (``crash-<sha1>.bin`` and ``.txt`` with the
traceback). It prints the peak resident memory of the parent, of the busiest worker and of the
largest process any worker started (a snapshot or flight-recorder reader child) against the bound in
docs/SECURITY.md ("Fuzzing"): the reader children's address-space cap, the memory-budget setting
(``artifacts/isolated.memory_cap_bytes``, 1536 MB by default). Last line: ``tried=… ok=… errors=…
unhandled=… crashes=… inputs_per_s=… peak_rss_mb=…``; the exit status is 1 if any input was unhandled,
crashed a worker, or a process's peak passed the bound.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def hwm_mb() -> float:
    """This process's own peak resident memory (``VmHWM``, MB)."""
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM:")).split()[1]) / 1024


def children_peak_mb() -> float:
    """The largest peak resident memory of the processes this one started and reaped (MB; Linux's
    ``ru_maxrss`` of ``RUSAGE_CHILDREN``, an upper bound: it includes what a child had before ``exec``)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _worker(kind: str, seed: int, seconds: float, crashes: str) -> dict:
    warnings.simplefilter("ignore")  # numpy's overflow warnings on hostile numbers are expected
    import fuzz_inputs as F

    deadline = time.monotonic() + seconds
    report = lambda label, data, exc: print(
        f"UNHANDLED {label}: {type(exc).__name__}: {str(exc)[:200]} -> {F.save_crash(Path(crashes), label, data, exc)}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="kinetoscope-fuzz-") as tmp:
        if kind == "traces":
            counts = F.run_for(
                random.Random(seed), lambda n: time.monotonic() < deadline, Path(tmp), on_unhandled=report
            )
        else:
            counts = _files_for(random.Random(seed), deadline, Path(tmp), Path(crashes), report)
    return {**counts, "hwm_mb": hwm_mb(), "children_mb": children_peak_mb()}


def _files_for(rng: random.Random, deadline: float, tmp: Path, crashes: Path, report) -> dict:
    import fuzz_files as FF
    import fuzz_inputs as F

    os.environ.update(FF.fuzz_environment())
    FF.shorten_snapshot_time_limit()
    counts = {"tried": 0, "ok": 0, "error": 0, "unhandled": 0}
    crashes.mkdir(parents=True, exist_ok=True)
    current = crashes / f"current-{os.getpid()}.bin"  # left behind only if this process dies on it
    for label, name, data in FF.hostile_files(rng):
        if time.monotonic() >= deadline:
            break
        counts["tried"] += 1
        current.write_bytes(name.encode() + b"\n" + data)
        try:
            with F.time_bound(120.0), tempfile.TemporaryDirectory(dir=tmp) as one:
                states = FF.exercise_files([(name, data)], Path(one))
            counts["error" if "error" in states.values() else "ok"] += 1
        except Exception as exc:
            counts["unhandled"] += 1
            report(f"{label}:{name}", data, exc)
    current.unlink(missing_ok=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--crashes", default="fuzz-crashes", help="where crashing inputs are saved")
    parser.add_argument("--kinds", default="traces,files", help="comma-separated: traces, files")
    args = parser.parse_args(argv)
    import fuzz_inputs as F

    kinds = [k for k in args.kinds.split(",") if k in ("traces", "files")] or ["traces"]
    seeds = F.seed_documents()
    print(
        f"fuzzing {'+'.join(kinds)} for {args.seconds:.0f} s with {args.jobs} processes, seed {args.seed}, "
        f"{len(seeds)} seed traces: {', '.join(name for name, _ in seeds)}",
        flush=True,
    )
    if "traces" in kinds and not seeds:
        print(f"no seed traces under {F.SAMPLES}", file=sys.stderr)
        return 2
    from tb_plugin.artifacts.isolated import memory_cap_bytes

    bound_mb = memory_cap_bytes() / (1 << 20)
    peaks = {"workers": 0.0, "their_children": 0.0}
    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    total = {"tried": 0, "ok": 0, "error": 0, "unhandled": 0, "crashes": 0}
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs), mp_context=ctx) as pool:
        futures = [
            pool.submit(_worker, kinds[i % len(kinds)], args.seed * 1000 + i, args.seconds, args.crashes)
            for i in range(max(1, args.jobs))
        ]
        for i, future in enumerate(futures):
            try:
                result = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                total["crashes"] += 1  # a worker died (a signal): its input is current-<pid>.bin
                continue
            print(
                f"  job {i} ({kinds[i % len(kinds)]}): tried={result['tried']} ok={result['ok']} "
                f"errors={result['error']} unhandled={result['unhandled']}",
                flush=True,
            )
            for k in ("tried", "ok", "error", "unhandled"):
                total[k] += result[k]
            peaks["workers"] = max(peaks["workers"], result["hwm_mb"])
            peaks["their_children"] = max(peaks["their_children"], result["children_mb"])
    elapsed = time.monotonic() - started
    peak = max(hwm_mb(), *peaks.values())
    print(
        f"peak RSS (MB): parent {hwm_mb():.0f}, workers {peaks['workers']:.0f}, reader children"
        f" {peaks['their_children']:.0f}, all reaped children {children_peak_mb():.0f}; bound {bound_mb:.0f}"
        f" (docs/SECURITY.md, Fuzzing): {'under' if peak <= bound_mb else 'OVER'}"
    )
    print(
        f"tried={total['tried']} ok={total['ok']} errors={total['error']} unhandled={total['unhandled']} "
        f"crashes={total['crashes']} inputs_per_s={total['tried'] / elapsed:.1f} seconds={elapsed:.0f}"
        f" peak_rss_mb={peak:.0f}"
    )
    return 1 if total["unhandled"] or total["crashes"] or peak > bound_mb else 0


if __name__ == "__main__":
    sys.exit(main())
