"""How much faster MemProfiler stats load with libyaml's C loader than with the pure-Python one.

    python benchmarks/bench_yaml_loader.py [--snapshots 1200] [--values 60]

Builds a stats file of ``--snapshots`` × ``--values`` entries (about 2.5 MB at the defaults, the
defaultdict tag as MemProfiler writes it), times ``yaml.load`` with the loader ``load_stats`` uses
and with a pure-Python loader of the same constructors, and prints
``bytes=… c_s=… python_s=… ratio=…`` (the C loader's share of the Python loader's time; ~0.25 measured).
tests/unit/registry/test_request_bounds.py checks that the C loader is the one used.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tb_plugin.artifacts import memprofiler


def stats_yaml(snapshots: int, values: int) -> bytes:
    """A MemProfiler stats document: ``snapshots`` keys of ``values`` counters each."""
    doc = {
        f"0.training_step.{i}.start": {f"allocated_bytes.all.v{j}": i * 1000 + j for j in range(values)}
        for i in range(snapshots)
    }
    return yaml.dump(collections.defaultdict(dict, doc)).encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshots", type=int, default=1200)
    ap.add_argument("--values", type=int, default=60)
    a = ap.parse_args()
    if not getattr(yaml, "__with_libyaml__", False):
        sys.exit("PyYAML here is built without libyaml: nothing to compare")
    data = stats_yaml(a.snapshots, a.values)

    class PurePython(yaml.SafeLoader):
        pass

    PurePython.yaml_constructors = memprofiler._Loader.yaml_constructors
    seconds = {}
    for name, loader in (("c", memprofiler._Loader), ("python", PurePython)):
        started = time.perf_counter()
        yaml.load(data, Loader=loader)
        seconds[name] = time.perf_counter() - started
    print(
        f"bytes={len(data)} c_s={seconds['c']:.3f} python_s={seconds['python']:.3f} "
        f"ratio={seconds['c'] / seconds['python']:.2f}"
    )


if __name__ == "__main__":
    main()
