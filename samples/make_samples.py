"""Write the project's synthetic demo traces into samples/ with synth.traces.

Each folder is a TensorBoard run; each file is named like the files torch.profiler's
tensorboard_trace_handler writes (``<worker>.<timestamp>.pt.trace.json.gz``). Next to each trace,
``<file>.expected.json`` holds the answers known by construction (synth.expected_overview).

The output is deterministic: rerunning gives byte-identical files.

Usage (from the repository root):
    python samples/make_samples.py [--out samples]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
)  # the synthesizers

from synth.fts import write_memprofiler
from synth.traces import SynthSpec, expected_overview, synthesize, write_trace

#: what the two single-worker samples share: 4 steps of a 4-layer model, Python stacks recorded
_ONE_WORKER: dict = {"steps": 4, "layers": 4, "with_python_stack": True}
#: folder -> [(file name, spec)]. Timestamps in names are fixed so reruns are identical.
SAMPLES: dict[str, list[tuple[str, SynthSpec]]] = {
    "synthetic_resnet": [
        (
            "worker0.1751410836000.pt.trace.json.gz",
            SynthSpec(style="pytorch2", seed=1, with_cuda_graph=True, with_driver_launch=True, **_ONE_WORKER),
        ),
    ],
    "synthetic_ddp": [
        (
            f"rank{r}.1751410900000.pt.trace.json.gz",
            SynthSpec(style="pytorch2", steps=3, seed=2, ranks=2, rank=r, layers=3),
        )
        for r in range(2)
    ],
    "synthetic_kineto2021": [
        (
            "worker0.1623143089861.pt.trace.json.gz",
            SynthSpec(style="kineto2021", seed=3, backward_thread=True, tail="truncated", **_ONE_WORKER),
        ),
    ],
}


def write_samples(out: str) -> list[str]:
    """Write every sample and its expected answers under out; returns the written paths."""
    written = []
    for folder, files in SAMPLES.items():
        d = os.path.join(out, folder)
        os.makedirs(d, exist_ok=True)
        for name, spec in files:
            path = os.path.join(d, name)
            write_trace(synthesize(spec), path)
            exp_path = path + ".expected.json"
            with open(exp_path, "w") as f:
                json.dump(expected_overview(spec), f, indent=1, sort_keys=True)
                f.write("\n")
            written += [path, exp_path]
    # a finetuning-scheduler MemProfiler folder (known values: synth.fts)
    folder = write_memprofiler(os.path.join(out, "fts_memprofiler"))
    written += [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    for p in write_samples(args.out):
        print(f"{os.path.relpath(p)}  {os.path.getsize(p)} bytes")


if __name__ == "__main__":
    main()
