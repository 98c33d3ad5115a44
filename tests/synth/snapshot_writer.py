"""Write :func:`~synth.snapshot.synthesize_snapshot`'s ``current`` layout as a pickle, streaming.

For the gigabyte benchmarks: the object itself would need ~13× the file's size in memory, so the
history is encoded as it is generated (:func:`~synth.snapshot.history_entries`). The file unpickles
to an object equal to ``synthesize_snapshot("current", ...)`` with the same arguments (keys in another
order: ``device_traces`` is written before ``segments``, whose blocks are the ones live at the end).
Encoding follows CPython's pickler for the types a snapshot holds (strings memoized and referenced
again with BINGET/LONG_BINGET, containers memoized, batches of 1000, protocol 4+ in frames of ≥ 64 KB).
"""

from __future__ import annotations

import random
import struct

from synth.snapshot import history_entries, live_segments

_BATCH = 1000
_SMALL = [b"K" + bytes([i]) for i in range(256)]
_FRAME_BYTES = 1 << 16
_FRAME_PARTS = 4096  # pieces buffered before the size is looked at


class _Encoder:
    def __init__(self, f, protocol: int, shared_frames: bool = False, shared_dicts: bool = False) -> None:
        if not 2 <= protocol <= 5:
            raise ValueError("protocols 2-5")
        self.f, self.protocol = f, protocol
        # id(string) -> (its memo index, it, the BINGET that refers to it): by identity, as pickle does
        self.strings: dict[int, tuple[int, str, bytes]] = {}
        self.memo_len = 0
        self.out: list[bytes] = []
        self.frame_lists: dict[tuple, tuple[bytes, int]] = {}  # frames -> (bytes, memo entries they add)
        # shared_frames: a repeated stack is one list object, referred to again by its memo index
        self.shared: dict[tuple, int] | None = {} if shared_frames else None
        # shared_dicts: a frame met before is one dict object, referred to again by its memo index
        self.dicts: dict[tuple, bytes] | None = {} if shared_dicts else None

    def _w(self, b: bytes) -> None:
        self.out.append(b)

    def _memoize(self) -> None:
        i = self.memo_len
        self.memo_len += 1
        if self.protocol >= 4:
            self._w(b"\x94")
        else:
            self._w(b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i))

    def flush(self, final: bool = False) -> None:
        """Write what is buffered (as one FRAME in protocol 4+) once it is 64 KB or more, or at the end."""
        if not self.out or (len(self.out) < _FRAME_PARTS and not final):
            return
        body = b"".join(self.out)
        if len(body) < _FRAME_BYTES and not final:
            self.out = [body]
            return
        if self.protocol >= 4 and not final:
            self.f.write(b"\x95" + struct.pack("<Q", len(body)))
        self.f.write(body)
        self.out = []

    def value(self, x) -> None:
        t = type(x)
        if t is str:
            got = self.strings.get(id(x))
            if got is not None:
                self.out.append(got[2])
                return
        elif t is int and 0 <= x < 256:
            self.out.append(_SMALL[x])
            return
        if x is None:
            self._w(b"N")
        elif x is True or x is False:
            self._w(b"\x88" if x else b"\x89")
        elif isinstance(x, int):
            if 0 <= x < 256:
                self._w(b"K" + bytes([x]))
            elif 0 <= x < 65536:
                self._w(b"M" + struct.pack("<H", x))
            elif -(2**31) <= x < 2**31:
                self._w(b"J" + struct.pack("<i", x))
            else:
                raw = x.to_bytes((x.bit_length() >> 3) + 1, "little", signed=True)
                if x < 0 and len(raw) > 1 and raw[-1] == 0xFF and raw[-2] & 0x80:
                    raw = raw[:-1]
                self._w(b"\x8a" + bytes([len(raw)]) + raw)
        elif isinstance(x, float):
            self._w(b"G" + struct.pack(">d", x))
        elif isinstance(x, str):
            raw = x.encode("utf-8", "surrogatepass")
            self._w(
                b"\x8c" + bytes([len(raw)]) + raw
                if self.protocol >= 4 and len(raw) < 256
                else b"X" + struct.pack("<I", len(raw)) + raw
            )
            i = self.memo_len
            self.strings[id(x)] = (i, x, b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
            self._memoize()
        elif isinstance(x, tuple) and len(x) <= 3:
            if not x:
                self._w(b")")
                return
            for v in x:
                self.value(v)
            self._w(b"\x84\x85\x86\x87"[len(x) : len(x) + 1])
            self._memoize()
        elif isinstance(x, list):
            self._w(b"]")
            self._memoize()
            self._batches(x, lambda v: self.value(v), b"a", b"e")
        elif isinstance(x, dict):
            self._w(b"}")
            self._memoize()
            self._batches(list(x.items()), lambda kv: (self.value(kv[0]), self.value(kv[1])), b"s", b"u")
        else:
            raise TypeError(f"cannot write {type(x).__name__}")

    def _batches(self, items: list, write, one: bytes, many: bytes) -> None:
        for k in range(0, len(items), _BATCH):
            batch = items[k : k + _BATCH]
            if len(batch) == 1:
                write(batch[0])
                self._w(one)
                continue
            self._w(b"(")
            for item in batch:
                write(item)
            self._w(many)

    def frames(self, frames: list[dict]) -> None:
        """A frame list: after its strings were written once (protocol 4+: no memo index in the bytes),
        the same bytes each time."""
        key = tuple((f["filename"], f["line"], f["name"]) for f in frames)
        if self.shared is not None:
            i = self.shared.get(key)
            if i is not None:
                self._w(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
                return
            self.shared[key] = self.memo_len  # the list's own memo entry comes first (value: "]" MEMOIZE)
            self.value(frames)
            return
        if self.dicts is not None:  # (a list of its own, its dicts written once: PyTorch's dumps)
            self._w(b"]")
            self._memoize()
            self._batches(frames, self._frame_dict, b"a", b"e")
            return
        got = self.frame_lists.get(key) if self.protocol >= 4 else None
        if got is not None:
            self._w(got[0])
            self.memo_len += got[1]
            return
        start, n, before = len(self.out), len(self.strings), self.memo_len
        self.value(frames)
        if len(self.strings) == n:  # no new string: the bytes are the same next time
            self.frame_lists[key] = (b"".join(self.out[start:]), self.memo_len - before)

    def _frame_dict(self, frame: dict) -> None:
        """One frame of a list (``shared_dicts``): the dict the first time, its memo index after."""
        assert self.dicts is not None
        key = (frame["filename"], frame["line"], frame["name"])
        got = self.dicts.get(key)
        if got is not None:
            self._w(got)
            return
        i = self.memo_len  # (the dict's own memo entry comes first: "}" MEMOIZE)
        self.value(frame)
        self.dicts[key] = b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i)

    def entry(self, e: dict) -> None:
        self._w(b"}")
        self._memoize()
        self._w(b"(")
        value = self.value
        for k, v in e.items():
            value(k)
            if k == "frames" and v:
                self.frames(v)
            else:
                value(v)
        self._w(b"u")


def write_snapshot_pickle(
    f,
    entries: int,
    frames: int = 8,
    protocol: int = 4,
    with_oom: bool = True,
    seed: int = 0,
    windows_paths: bool = False,
    shared_frames: bool = False,
    shared_dicts: bool = False,
) -> None:
    """Write to the binary file ``f`` the pickle of ``synthesize_snapshot("current", entries, frames,
    windows_paths, with_oom, seed)`` (see the module's docstring), holding one batch at a time.

    Each history entry unpickles with its own list of frame dicts (as PyTorch's dumps do; the strings
    are shared); ``shared_frames``: entries with the same stack share one list object instead (the
    same values, a smaller file and a cheaper load); ``shared_dicts``: each entry its own list whose frame
    dicts are shared, one object per distinct frame (the layout of the PyTorch 2.x dumps in
    ``../shared/samples/memory_snapshots``: 409 dicts for 108 493 frames)."""
    if shared_frames and shared_dicts:
        raise ValueError("shared frame lists or shared frame dicts, not both")
    enc = _Encoder(f, protocol, shared_frames, shared_dicts)
    f.write(b"\x80" + bytes([protocol]))
    rng = random.Random(seed)
    live: list[tuple[int, int]] = []
    enc._w(b"}")
    enc._memoize()
    enc._w(b"(")
    enc.value("device_traces")
    enc._w(b"]")
    enc._memoize()
    enc._w(b"]")
    enc._memoize()
    batch = 0
    for e in history_entries(rng, entries, frames, windows_paths, with_oom, live):
        if batch == 0:
            enc._w(b"(")
        enc.entry(e)
        batch += 1
        if batch == _BATCH:
            enc._w(b"e")
            batch = 0
        enc.flush()
    if batch:
        enc._w(b"e")  # (a last batch of one is written with MARK too: any batch is valid)
    enc._w(b"a")  # the history into device_traces
    base = 0x7F0000000000
    segments = live_segments(rng, live, frames, windows_paths, base)
    for key, value in (
        ("segments", segments),
        ("allocator_settings", {}),
        ("external_annotations", [{"device": 0, "stage": "forward", "name": "step 1"}]),
    ):
        enc.value(key)
        enc.value(value)
    enc._w(b"u.")
    enc.flush()
    enc.flush(final=True)
