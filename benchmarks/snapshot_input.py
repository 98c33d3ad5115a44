"""Build a PyTorch-shaped allocator snapshot for the benchmarks: any size, written as it is generated.

    python benchmarks/snapshot_input.py OUT.pickle [--entries 1000000] [--frames 8] [--protocol 4]
                                        [--shared-frames | --shared-dicts]

The shape ``torch.cuda.memory._snapshot()`` pickles: ``{"segments", "device_traces": [[entry, ...]],
"allocator_settings", "external_annotations"}``, each history entry a dict (``action``, ``addr``, ``size``,
``stream``, ``time_us``, ``frames``). By default each entry that has a stack holds its own list of
``--frames`` frame dicts (``filename``, ``line``, ``name``), as PyTorch's dumps do, while the strings in
them are shared objects (pickled once, referred to by memo index): 400 call sites. ``--shared-frames``
writes the variant whose entries with the same stack share one list object (the layout the first
streaming-reader figures were taken on: a smaller file, a cheaper ``pickle.load``). ``--shared-dicts`` writes
the layout of the PyTorch 2.x dumps in ``../shared/samples/memory_snapshots``: a list per entry whose frame
dicts are shared, one dict object per distinct frame (409 dicts for 108 493 frames there). All three
unpickle to equal objects. Protocols 2-5 (4 and 5 write frames of >= 64 KB, as CPython's pickler does).

The encoder is ``tests/synth/snapshot_writer.py`` (the tests' known-answer snapshots); this is its
command line, and :func:`build` the call the benchmark scripts make. About 104 bytes per entry with 8
frames (protocol 4, distinct frames); a bare ``pickle.load`` needs ~12x the file's size in memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(
    path: str, entries: int, frames: int = 8, protocol: int = 4, shared_frames: bool = False, shared_dicts: bool = False
) -> int:
    """Write the snapshot to ``path``; its size in bytes."""
    tests = os.path.join(REPO, "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from synth.snapshot_writer import write_snapshot_pickle

    with open(path, "wb") as f:
        write_snapshot_pickle(
            f, entries, frames=frames, protocol=protocol, shared_frames=shared_frames, shared_dicts=shared_dicts
        )
    return os.path.getsize(path)


def layout_name(shared_frames: bool, shared_dicts: bool) -> str:
    """The layout's words in the benchmarks' output."""
    if shared_frames:
        return "shared frame lists"
    return "a list per entry, shared frame dicts" if shared_dicts else "a list per entry, its own frame dicts"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the pickle to write")
    parser.add_argument("--entries", type=int, default=1_000_000, help="history entries (default 1,000,000)")
    parser.add_argument("--frames", type=int, default=8, help="frames per stack (default 8)")
    parser.add_argument("--protocol", type=int, default=4, choices=(2, 3, 4, 5))
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--shared-frames", action="store_true", help="entries with one stack share its list")
    layout.add_argument("--shared-dicts", action="store_true", help="a list per entry, its frame dicts shared")
    args = parser.parse_args(argv)
    t = time.perf_counter()
    size = build(args.out, args.entries, args.frames, args.protocol, args.shared_frames, args.shared_dicts)
    print(
        f"{args.out}: {args.entries} entries, {args.frames} frames, protocol {args.protocol}, "
        f"{layout_name(args.shared_frames, args.shared_dicts)}, {size / 1e6:.1f} MB "
        f"({time.perf_counter() - t:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
