#!/usr/bin/env python3
"""Reference numbers from the incumbent (torch-tb-profiler 0.4.3), for tests and a timing baseline.

Run this with the python of a separate virtualenv that has ``torch-tb-profiler==0.4.3`` installed
(see benchmarks/INCUMBENT.md). Nothing of the incumbent is copied here: this script imports the
installed package and calls its own loading path for one worker's trace file, exactly what
``torch_tb_profiler.profiler.loader.RunLoader._process_data`` does per file:

    data = RunProfileData.parse(worker, span, path, cache_dir)     # read + json + EventParser + analyze
    profile = RunGenerator(worker, span, data).generate_run_profile()

(we skip RunLoader itself because it only picks files named ``<worker>[.<span>].pt.trace.json[.gz]``
inside a run directory and loads them in forked processes).

Every file is loaded in its own child process; the parent measures the child's wall time and peak
RSS (``os.wait4`` rusage, ru_maxrss). The child also times its parse and generate phases.

Output: one JSON object keyed by the file path relative to --root (default /work/shared/samples),
plus one ``_meta`` key. Per file (units µs unless named otherwise):

    steps[]:        name, start_us, end_us and the breakdown kernel_us, memcpy_us, memset_us,
                    communication_us, runtime_us, dataloader_us, cpu_exec_us, other_us, total_us
                    (the incumbent's unrounded OverallParser numbers; start/end are the step bounds
                    after its device-side adjustment and tail trim)
    avg_step:       the same categories averaged over the kept steps (unrounded)
    avg_step_displayed: what the Overview shows (value rounded to µs, pct rounded to 0.01)
    gpus[]:         id, name, memory, memory_bytes, compute_capability, utilization_pct,
                    sm_efficiency_pct, achieved_occupancy_pct, tensor_core_pct (unrounded, None when
                    the incumbent has no value) and ``displayed`` (the GPU Summary strings)
    recommendations[]: the texts (with the incumbent's HTML links), recommendations_html: as shown
    timing:         wall_s (child process, incl. imports), parse_s (= read_json_s + process_s, i.e.
                    RunProfileData.parse), generate_s (RunGenerator), peak_rss_mb (child's ru_maxrss)
    error:          set instead of the numbers when the incumbent fails on the file

Usage (from the repo root):

    /work/venv-incumbent/bin/python benchmarks/incumbent_reference.py \
        --out tests/data/incumbent_reference.json FILE_OR_GLOB...
"""

import argparse
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

DEFAULT_ROOT = "/work/shared/samples"

# our names <- incumbent ProfileRole names (torch_tb_profiler.profiler.event_parser.ProfileRole)
ROLE_FIELDS = [
    ("kernel_us", "Kernel"),
    ("memcpy_us", "Memcpy"),
    ("memset_us", "Memset"),
    ("communication_us", "Communication"),
    ("runtime_us", "Runtime"),
    ("dataloader_us", "DataLoader"),
    ("cpu_exec_us", "CpuOp"),
    ("other_us", "Other"),
    ("total_us", "Total"),
]
# our names <- names in the incumbent's Overview "performance" block
DISPLAY_NAMES = {
    "Kernel": "kernel",
    "Memcpy": "memcpy",
    "Memset": "memset",
    "Communication": "communication",
    "Runtime": "runtime",
    "DataLoader": "dataloader",
    "CPU Exec": "cpu_exec",
    "Other": "other",
}


def _num(x):
    """Keep ints as ints and floats as floats (full precision); convert numpy scalars."""
    if x is None:
        return None
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x
    if hasattr(x, "item"):
        return x.item()
    return x


def _worker_and_span(path):
    from torch_tb_profiler import consts

    base = os.path.basename(path)
    m = consts.WORKER_PATTERN.match(base)
    if not m:
        # RunLoader would skip such a file; we still load it, naming the worker after the file.
        return base, None, False
    span = m.group(2)
    return m.group(1), (span[1:] if span else None), True


def load_one(path):
    """Load one trace file through the incumbent, in this process. Returns a JSON-able dict."""
    import torch_tb_profiler  # noqa: F401
    from torch_tb_profiler.profiler import overall_parser
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    # The step bounds are local to EventParser; observe them where OverallParser receives them.
    captured = {}
    orig_aggregate = overall_parser.OverallParser.aggregate

    def aggregate(self, steps, role_ranges):
        captured["steps"] = list(steps)
        return orig_aggregate(self, steps, role_ranges)

    overall_parser.OverallParser.aggregate = aggregate

    worker, span, name_matches = _worker_and_span(path)
    cache_dir = tempfile.mkdtemp(prefix="incumbent-cache-")
    # RunProfileData.parse(worker, span, path, cache_dir) is exactly these two calls; we make them
    # one by one to time reading+json apart from the incumbent's processing.
    t0 = time.perf_counter()
    trace_path, trace_json = RunProfileData._preprocess_file(path, cache_dir)
    t_read = time.perf_counter()
    data = RunProfileData.from_json(worker, span, trace_json)
    data.trace_file_path = trace_path
    t1 = time.perf_counter()
    profile = RunGenerator(worker, span, data).generate_run_profile()
    t2 = time.perf_counter()
    _remove_if_empty(cache_dir)  # (after the timing: each run left an empty folder in /tmp)

    def costs_dict(costs):
        return {ours: _num(costs.costs[getattr(ProfileRole, role)]) for ours, role in ROLE_FIELDS}

    steps = []
    bounds = captured.get("steps") or []
    for i, costs in enumerate(data.steps_costs):
        row = {"name": data.steps_names[i]}
        if i < len(bounds):
            row["start_us"] = _num(bounds[i][0])
            row["end_us"] = _num(bounds[i][1])
        row.update(costs_dict(costs))
        steps.append(row)

    overview = profile.overview
    perf = overview["performance"][0]
    avg_displayed = {"total_us": perf["value"]}
    for child in perf["children"]:
        key = DISPLAY_NAMES[child["name"]]
        avg_displayed[key + "_us"] = child["value"]
        avg_displayed[key + "_pct"] = child["extra"]

    gm = data.gpu_metrics_parser
    gpus = []
    for gpu_id in sorted(gm.gpu_ids):
        info = RunGenerator._get_gpu_info(data.device_props, gpu_id) or {}
        util = gm.gpu_utilization[gpu_id]
        sm = gm.avg_approximated_sm_efficiency_per_device[gpu_id]
        occ = gm.avg_occupancy_per_device[gpu_id]
        tc = data.tc_ratio[gpu_id]
        gpus.append(
            {
                "id": gpu_id,
                "name": info.get("Name"),
                "memory": info.get("Memory"),
                "memory_bytes": info.get("Memory Raw"),
                "compute_capability": info.get("Compute Capability"),
                # incumbent keeps utilization/SM efficiency/TC as fractions, occupancy already in %
                "utilization_pct": None if util is None else _num(util) * 100,
                "sm_efficiency_pct": None if sm is None else _num(sm) * 100,
                "achieved_occupancy_pct": None if occ is None else _num(occ),
                "tensor_core_pct": None if tc is None else _num(tc) * 100,
                "utilization": _num(util),
                "sm_efficiency": _num(sm),
                "tensor_core_ratio": _num(tc),
            }
        )
    # The GPU Summary block exactly as the Overview shows it (strings, rounded to 0.01).
    if profile.gpu_summary:
        cur = None
        for item in profile.gpu_summary:
            title, value = item["title"], item["value"]
            if title.startswith("GPU ") and title.endswith(":"):
                gid = int(title[4:-1])
                cur = next((g for g in gpus if g["id"] == gid), None)
                if cur is not None:
                    cur["displayed"] = {}
            elif title != "<hr/>" and cur is not None:
                cur["displayed"][title] = value

    return {
        "worker": worker,
        "span": span,
        "run_loader_would_pick_it": name_matches,
        "has_runtime": profile.has_runtime,
        "has_kernel": profile.has_kernel,
        "has_communication": profile.has_communication,
        "has_memcpy_or_memset": profile.has_memcpy_or_memset,
        "device_type": "GPU" if (profile.has_runtime or profile.has_kernel or profile.has_memcpy_or_memset) else "CPU",
        "used_devices": [_num(d) for d in data.used_devices],
        "views": [v.display_name for v in profile.views],
        "steps": steps,
        "avg_step": costs_dict(data.avg_costs),
        "avg_step_displayed": avg_displayed,
        "gpus": gpus,
        "tc_eligible_ops_kernel_ratio": _num(data.tc_eligible_ops_kernel_ratio),
        "recommendations": list(data.recommendations),
        "recommendations_html": overview["recommendations"],
        "timing": {"read_json_s": t_read - t0, "process_s": t1 - t_read, "parse_s": t1 - t0, "generate_s": t2 - t1},
    }


def _remove_if_empty(folder):
    """The incumbent's cache folder removed when nothing was written into it (a local trace is read in place)."""
    try:
        os.rmdir(folder)
    except OSError:
        pass


def incumbent_profile(path):
    """One file through the incumbent as its RunLoader does it (read, parse, generate the views):
    (RunProfileData, RunProfile, the trace's JSON document, wall seconds of those steps). Imports the incumbent, so only the
    incumbent's virtualenv can call it."""
    import torch_tb_profiler  # noqa: F401
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    worker, span, _ = _worker_and_span(path)
    cache_dir = tempfile.mkdtemp(prefix="incumbent-cache-")
    t0 = time.perf_counter()
    trace_path, trace_json = RunProfileData._preprocess_file(path, cache_dir)
    data = RunProfileData.from_json(worker, span, trace_json)
    data.trace_file_path = trace_path
    profile = RunGenerator(worker, span, data).generate_run_profile()
    seconds = time.perf_counter() - t0
    _remove_if_empty(cache_dir)  # (a remote file's download is kept: data.trace_file_path points at it)
    return data, profile, trace_json, seconds


def load_run(folder):
    """The incumbent's whole load of one run folder, as its plugin does it when the run appears: the
    plugin's file cache (``io.Cache``, which starts a ``multiprocessing`` manager process), then
    ``RunLoader.load()`` (a spawned process per worker file that parses it, generates the views and
    the distributed data and sends them back through a queue; then the spans' distributed profiles).
    Returns {(worker, span): profile class name}; raises when a file the loader picks gave no profile
    (a file that fails is only logged by the loader, and left out of the run)."""
    from torch_tb_profiler import consts, io
    from torch_tb_profiler.profiler.loader import RunLoader

    picked = [
        f for f in os.listdir(folder) if consts.WORKER_PATTERN.match(f) and os.path.isfile(os.path.join(folder, f))
    ]
    run = RunLoader(os.path.basename(os.path.normpath(folder)), folder, io.Cache()).load()
    profiles = {key: type(profile).__name__ for key, profile in run.profiles.items()}
    loaded = sum(name == "RunProfile" for name in profiles.values())
    if not picked or loaded != len(picked):
        raise RuntimeError(
            f"the incumbent loaded {loaded} profiles from {len(picked)} trace files in {folder}: {profiles}"
        )
    return profiles


def child_main(path, result_path):
    try:
        result = load_one(path)
    except BaseException as ex:  # record, don't fight
        import traceback

        result = {
            "error": f"{type(ex).__name__}: {ex}",
            "traceback_tail": traceback.format_exc().strip().splitlines()[-6:],
        }
    with open(result_path, "w") as f:
        json.dump(result, f)


def run_in_child(path, timeout=None):
    fd, result_path = tempfile.mkstemp(suffix=".json", prefix="incumbent-result-")
    os.close(fd)
    err_path = result_path + ".stderr"
    with open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", path, result_path],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        with open(result_path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        with open(err_path, "rb") as f:
            tail = f.read().decode("utf-8", "replace").strip().splitlines()[-6:]
        result = {"error": f"child exited with {proc.returncode} and no result", "stderr_tail": tail}
    finally:
        for p in (result_path, err_path):
            if os.path.exists(p):
                os.unlink(p)
    timing = result.setdefault("timing", {})
    timing["wall_s"] = wall
    timing["peak_rss_mb"] = rusage.ru_maxrss / 1024.0  # Linux: KiB
    return result


def expand(patterns):
    files = []
    for pat in patterns:
        matches = sorted(glob.glob(pat)) or [pat]
        for m in matches:
            if os.path.isdir(m):
                files.extend(sorted(os.path.join(m, f) for f in os.listdir(m) if os.path.isfile(os.path.join(m, f))))
            else:
                files.append(m)
    return files


def parser(description):
    """An argument parser with the arguments every incumbent script takes: the files, --root and --out."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="trace files, directories or globs")
    ap.add_argument("--root", default=DEFAULT_ROOT, help="keys are paths relative to this (default %(default)s)")
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    return ap


def sample_key(path, root):
    """A file's key in the results: its path relative to root, or its absolute path when outside root."""
    key = os.path.relpath(os.path.abspath(path), root)
    return os.path.abspath(path) if key.startswith("..") else key


def load_each(args, load):
    """Yield ``(key, result)`` for each file ``args.files`` names (paths or globs), keyed by its path
    relative to ``args.root``: ``load(path, key)``'s document, or ``{"error": ...}`` where it raised
    (recorded, not fought)."""
    for path in expand(args.files):
        key = sample_key(path, args.root)
        print(f"loading {key} ...", file=sys.stderr, flush=True)
        try:
            yield key, load(path, key)
        except Exception as ex:
            yield key, {"error": f"{type(ex).__name__}: {ex}"}


def collect(args, m, load, summary, breaks=('},{"name"',)):
    """Load each file as :func:`load_each` does, print ``summary(result)`` (or its error) for each, and
    write the results under ``_meta`` ``m`` as compact JSON with a line break after the comma of each of
    ``breaks`` (one row a line: diffable). Returns the exit status."""
    results = {"_meta": m}
    for key, r in load_each(args, load):
        results[key] = r
        print("  " + ("FAILED: " + r["error"] if "error" in r else summary(r)), file=sys.stderr, flush=True)
    text = json.dumps(results, indent=None, separators=(",", ":"), sort_keys=False)
    for b in breaks:
        text = text.replace(b, b[:2] + "\n" + b[2:])
    write_output(text, args.out)
    return 0


def write_output(text, out):
    """Write text and a newline to the file out (making its folder), or print it when out is None."""
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


def meta(generated_by="benchmarks/incumbent_reference.py", note=None):
    """The ``_meta`` of a script's output: the script, the date, the versions, the machine and ``note``."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("torch-tb-profiler", "pandas", "numpy", "tensorboard"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {
        "generated_by": generated_by,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "packages": versions,
        "machine": f"{os.cpu_count()} cpus, {platform.platform()}",
        "note": note
        or "Numbers are the incumbent's unrounded internals unless named *_displayed/displayed. "
        "timing is machine-dependent. Keys other than _meta are paths relative to the samples root.",
    }


def main():
    ap = parser(__doc__)
    ap.add_argument("--merge", action="store_true", help="update an existing --out file instead of replacing it")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="load each file N times (each in a fresh process) and keep the fastest run's timing",
    )
    ap.add_argument("--child", nargs=2, metavar=("PATH", "RESULT"), help=argparse.SUPPRESS)
    ap.add_argument(
        "--run-loader",
        metavar="FOLDER",
        help="load FOLDER as the incumbent's plugin does (io.Cache, RunLoader.load) and exit: "
        "bench_peers.py times this whole process",
    )
    args = ap.parse_args()

    if args.run_loader:
        print(load_run(args.run_loader), file=sys.stderr)
        return 0
    if args.child:
        child_main(*args.child)
        return 0

    results = {}
    if args.merge and args.out and os.path.exists(args.out):
        with open(args.out) as f:
            results = json.load(f)
    results["_meta"] = meta()
    for path in expand(args.files):
        key = sample_key(path, args.root)
        print(f"loading {key} ...", file=sys.stderr, flush=True)
        runs = [run_in_child(path) for _ in range(max(1, args.repeat))]
        r = min(runs, key=lambda x: x["timing"]["wall_s"])  # least disturbed run
        if len(runs) > 1:
            r["timing"]["runs"] = len(runs)
            r["timing"]["wall_s_all"] = [x["timing"]["wall_s"] for x in runs]
            r["timing"]["peak_rss_mb_all"] = [x["timing"]["peak_rss_mb"] for x in runs]
        t = r["timing"]
        status = (
            "FAILED: " + r["error"] if "error" in r else "{} steps, {} GPUs".format(len(r["steps"]), len(r["gpus"]))
        )
        print(
            "  {:.2f} s wall, {:.0f} MB peak RSS, {}".format(t["wall_s"], t["peak_rss_mb"], status),
            file=sys.stderr,
            flush=True,
        )
        results[key] = r

    text = json.dumps(results, indent=1, sort_keys=False)
    write_output(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
