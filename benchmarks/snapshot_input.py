"""Build a PyTorch-shaped allocator snapshot for the benchmarks: any size, written as it is generated.

    python benchmarks/snapshot_input.py OUT.pickle [--entries 1000000] [--frames 8] [--protocol 4]
                                        [--shared-frames | --shared-dicts | --from-recording [PICKLE]]

The shape ``torch.cuda.memory._snapshot()`` pickles: ``{"segments", "device_traces": [[entry, ...]],
"allocator_settings", "external_annotations"}``, each history entry a dict (``action``, ``addr``, ``size``,
``stream``, ``time_us``, ``frames``). By default each entry that has a stack holds its own list of
``--frames`` frame dicts (``filename``, ``line``, ``name``), as PyTorch's dumps do, while the strings in
them are shared objects (pickled once, referred to by memo index): 400 call sites. ``--shared-frames``
writes the variant whose entries with the same stack share one list object (the layout the first
streaming-reader figures were taken on: a smaller file, a cheaper ``pickle.load``). ``--shared-dicts`` writes
the layout of the PyTorch 2.x dumps in ``../shared/samples/memory_snapshots``: a list per entry whose frame
dicts are shared, one dict object per distinct frame (409 dicts for 108 493 frames there). All three
unpickle to equal objects. ``--from-recording`` repeats a real recording's history instead (default: that
PyTorch 2.x sample; its frees carry their allocation's stack, in the same list: :func:`build_from_recording`). Protocols 2-5 (4 and 5 write frames of >= 64 KB, as CPython's pickler does).

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


# A PyTorch 2.x recording in ../shared/samples (CUDA, bf16 forward: 2 811 entries, 38 frames a stack, 145 stacks)
RECORDING = os.path.join(
    os.path.dirname(REPO), "shared", "samples", "memory_snapshots", "memory_forward_bf16_128.pickle"
)


def build_from_recording(path: str, entries: int, recording: str = RECORDING, protocol: int = 4) -> int:
    """Write to ``path`` a snapshot of about ``entries`` history entries made of a real recording's (a local
    file this benchmark trusts): its history repeated, each repeat's entries new dicts with the addresses
    and times moved on, each repeat's frame lists new lists (an allocation and its frees keep sharing theirs,
    as recorded) of the recording's own frame dicts (PyTorch writes each distinct frame once); its segments
    and annotations as recorded. Its size in bytes."""
    import pickle

    with open(recording, "rb") as f:
        rec = pickle.load(f)
    history = max(rec["device_traces"], key=len)
    span = max(e["addr"] for e in history) - min(e["addr"] for e in history) + (1 << 30)
    period = history[-1]["time_us"] - history[0]["time_us"] + 1
    out: list[dict] = []
    for r in range(max(1, -(-entries // len(history)))):
        lists: dict[int, list] = {}  # id(a recorded list) -> this repeat's copy
        for e in history:
            frames = e["frames"]
            copy = lists.setdefault(id(frames), list(frames))
            out.append(dict(e, frames=copy, addr=e["addr"] + r * span, time_us=e["time_us"] + r * period))
    scaled = dict(rec, device_traces=[out])
    with open(path, "wb") as f:
        pickle.dump(scaled, f, protocol=protocol)
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
    layout.add_argument(
        "--from-recording", nargs="?", const=RECORDING, metavar="PICKLE", help="a real recording's history repeated"
    )
    args = parser.parse_args(argv)
    t = time.perf_counter()
    if args.from_recording:
        size = build_from_recording(args.out, args.entries, args.from_recording, args.protocol)
        kind = f"from {os.path.basename(args.from_recording)}"
    else:
        size = build(args.out, args.entries, args.frames, args.protocol, args.shared_frames, args.shared_dicts)
        kind = f"{args.frames} frames, {layout_name(args.shared_frames, args.shared_dicts)}"
    print(
        f"{args.out}: {args.entries} entries, {kind}, protocol {args.protocol}, {size / 1e6:.1f} MB ({time.perf_counter() - t:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
