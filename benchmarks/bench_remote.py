"""A large remote trace read and parsed through the streamed path (storage/remote_blocks.py), ranges
read one at a time vs :data:`~tb_plugin.storage.remote_blocks.CONCURRENCY` at once, against the real
emulators of tests/emulators.py, in one run, with the bare download as the floor.

    python benchmarks/bench_remote.py TRACE [--backends s3,gcs,azure] [--latency-ms 100] [--mb-s 0]

For each backend the trace is uploaded, then, with no added delay and then with one:
  floor    one GET of the whole object (``fs.cat_file``), the least one connection can take;
  read     the object through :class:`RemoteBlocks` (ranges + gunzip when gzip), no decode;
  parse    ``registry.parse.load_trace_file(url)``: read + streamed decode, the registry's real path;
each ``seq`` (1 range in flight) and ``conc`` (CONCURRENCY in flight). The emulators run on loopback,
so a WAN is modelled by patching the backend's file class ``_fetch_range`` (every ranged GET) to sleep
``--latency-ms`` (default 100) plus ``bytes / --mb-s`` (a per-connection bandwidth, default 0: none)
before it; the floor gets the same delay once. Each figure: the best of ``BENCH_REPEAT`` (default 2)
runs, each in a fresh process (``seq`` and ``conc`` alternated).

gcp-storage-emulator serves one request at a time (a plain ``http.server.HTTPServer``, HTTP/1.0):
concurrent ranges queue there, and were slower than sequential ones in every run, so its ``conc``
figures say nothing of real GCS; moto and Azurite serve requests concurrently.

Last line: ``key=value`` figures, ``<backend>_<what>_<seq|conc>[_lat]_s``, ``<backend>_rss_<seq|conc>_mb``
(the parsing process's peak RSS, decode workers apart, the larger of all its runs) and ``loadavg``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from benchmarks._common import run_child  # noqa: E402

REPEAT = int(os.environ.get("BENCH_REPEAT", "2"))


CHILD = r"""
import json, sys, time
from unittest import mock
sys.path[:0] = [sys.argv[1]]
from bench_remote import Delay
import fsspec
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.storage import remote_blocks
url, what, k, latency_s, bytes_per_s = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
fs, path = fsspec.core.url_to_fs(url)
size = fs.size(path)
with fs.open(path, "rb") as f:
    delay = Delay(type(f), latency_s, bytes_per_s)
t = time.perf_counter()
with mock.patch.object(remote_blocks, "CONCURRENCY", k, create=True), delay:
    if what == "floor":  # one GET of the whole object, delayed once
        delay.wait(size)
        n = len(fs.cat_file(path))
    elif what == "read":
        n = sum(len(b) for b in remote_blocks.RemoteBlocks(fs, path, size))
    else:
        n = len(load_trace_file(url).events)
hwm_mb = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) / 1024
print(json.dumps({"s": time.perf_counter() - t, "n": n, "requests": delay.requests, "hwm_mb": hwm_mb}))
"""


class Delay:
    """Sleep ``latency_s + bytes / bytes_per_s`` before each ranged GET of ``cls`` (a WAN model)."""

    def __init__(self, cls, latency_s: float, bytes_per_s: float) -> None:
        self.cls, self.latency_s, self.bytes_per_s = cls, latency_s, bytes_per_s
        self.requests = 0

    def wait(self, n: int) -> None:
        self.requests += 1
        time.sleep(self.latency_s + (n / self.bytes_per_s if self.bytes_per_s else 0.0))

    def __enter__(self):
        real = self.cls._fetch_range
        delay = self

        def slow(f, start, end):
            delay.wait(max(0, min(end, f.size) - start))
            return real(f, start, end)

        self._patch = mock.patch.object(self.cls, "_fetch_range", slow)
        self._patch.start()
        return self

    def __exit__(self, *exc) -> None:
        self._patch.stop()


def measure(backend: str, trace: Path, latency_s: float, bytes_per_s: float, concurrency: int) -> dict:
    """Seconds for each figure on ``backend`` (best of REPEAT runs, each in a fresh process, the
    sequential and concurrent runs alternated)."""
    from emulators import Emulator, clear_fsspec_instances

    out: dict[str, float] = {}
    emu = Emulator(backend).start()
    try:
        env = dict(os.environ, **emu.env)
        with mock.patch.dict(os.environ, emu.env):
            emu.make_bucket()
            clear_fsspec_instances()
            t = time.perf_counter()
            emu.fs().put_file(str(trace), f"{emu.bucket}/bench/{trace.name}")
            print(f"[{backend}] uploaded in {time.perf_counter() - t:.1f} s", flush=True)
        url = emu.url(f"bench/{trace.name}")
        counts = {}
        for lat in (False, True):
            suffix = "_lat" if lat else ""
            args = [str(latency_s if lat else 0.0), str(bytes_per_s if lat else 0.0)]
            for what, modes in (
                ("floor", (("", 1),)),
                ("read", (("_seq", 1), ("_conc", concurrency))),
                ("parse", (("_seq", 1), ("_conc", concurrency))),
            ):
                for _ in range(REPEAT):
                    for mode, k in modes:
                        res = run_child(
                            CHILD, [str(REPO / "benchmarks"), url, what, str(k), *args], env=env, cwd=str(REPO)
                        )
                        key = f"{what}{mode}{suffix}"
                        out[key] = min(out.get(key, float("inf")), res["s"])
                        assert counts.setdefault(what, res["n"]) == res["n"], (what, res, counts)
                        if what == "read":
                            out[f"gets{mode}"] = res["requests"]
                        if what == "parse":  # the main process's peak RSS (decode workers apart)
                            out[f"rss{mode}_mb"] = max(out.get(f"rss{mode}_mb", 0), res["hwm_mb"])
            print(
                f"[{backend}] {'with delay' if lat else 'no delay'}: floor {out['floor' + suffix]:.2f} s, read "
                f"{out['read_seq' + suffix]:.2f} / {out['read_conc' + suffix]:.2f} s, read+parse "
                f"{out['parse_seq' + suffix]:.2f} / {out['parse_conc' + suffix]:.2f} s (seq / conc)",
                flush=True,
            )
        print(
            f"[{backend}] {counts['floor'] / 1e6:.0f} MB, {out['gets_seq']} ranged GETs, {counts['parse']} events; "
            f"read+parse peak RSS {out['rss_seq_mb']:.0f} / {out['rss_conc_mb']:.0f} MB (seq / conc)",
            flush=True,
        )
    finally:
        emu.kill()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--backends", default="s3,gcs,azure")
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--mb-s", type=float, default=0.0, help="per-connection bandwidth of the WAN model (0: none)")
    args = ap.parse_args()
    from tb_plugin.storage import remote_blocks

    concurrency = getattr(remote_blocks, "CONCURRENCY", 1)
    trace = Path(args.trace).resolve()
    print(
        f"{trace.name}: {trace.stat().st_size / 1e6:.0f} MB, ranges of {remote_blocks.RANGE_BYTES >> 20} MiB, "
        f"{concurrency} in flight (conc) vs 1 (seq); delay: {args.latency_ms:.0f} ms per GET"
        + (f" + bytes at {args.mb_s:.0f} MB/s per connection" if args.mb_s else ""),
        flush=True,
    )
    figures = {}
    for backend in args.backends.split(","):
        res = measure(backend, trace, args.latency_ms / 1e3, args.mb_s * 1e6, concurrency)
        print(f"\n[{backend}] seconds    | floor (1 GET) | read seq | read conc | read+parse seq | read+parse conc")
        for suffix, label in (("", "no delay  "), ("_lat", "with delay")):
            print(
                f"[{backend}] {label} | {res['floor' + suffix]:13.2f} | {res['read_seq' + suffix]:8.2f} | "
                f"{res['read_conc' + suffix]:9.2f} | {res['parse_seq' + suffix]:14.2f} | "
                f"{res['parse_conc' + suffix]:15.2f}\n",
                flush=True,
            )
        figures.update(
            {
                f"{backend}_{k}" if k.endswith("_mb") else f"{backend}_{k}_s": v
                for k, v in res.items()
                if not k.startswith("gets")
            }
        )
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(" ".join(f"{k}={v:.2f}" for k, v in figures.items()) + f" concurrency={concurrency} loadavg={load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
