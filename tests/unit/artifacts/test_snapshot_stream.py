"""The streaming snapshot reader: the same snapshot as the whole-object path on
synthesized and real snapshots in pickle protocols 2–5, history handed off in batches, hostile pickles
refused, and the streamed writer the benchmark uses."""

from __future__ import annotations

import io
import pickle
import pickletools

import numpy as np
import pytest
from conftest import sample
from synth.snapshot import LAYOUTS, replay_peak, synthesize_snapshot
from synth.snapshot_writer import write_snapshot_pickle

from tb_plugin.analysis.snapshot import device_summary
from tb_plugin.artifacts import pickle_stream
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot, parse_pickle, parse_pickle_whole
from tb_plugin.artifacts.unpickle import RefusedPickle, restricted_loads

PROTOCOLS = (2, 3, 4, 5)
REAL = ("mem_snapshot.pickle", "memory_forward_bf16_128.pickle")


def assert_same(a, b):
    """Every field of two parsed snapshots equal (columns by value and dtype, NaN = NaN)."""
    assert (a.layout, a.has_time, a.frames, a.stacks) == (b.layout, b.has_time, b.frames, b.stacks)
    assert (a.segments, a.annotations, a.ooms, a.segment_streams) == (
        b.segments,
        b.annotations,
        b.ooms,
        b.segment_streams,
    )
    assert sorted(a.devices) == sorted(b.devices)
    for dev in a.devices:
        for field in ("action", "addr", "size", "time", "stack"):
            x, y = getattr(a.devices[dev], field), getattr(b.devices[dev], field)
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (dev, field)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_streamed_equals_whole_on_synthesized(layout, protocol):
    # 2 600 entries: three APPENDS batches; frames repeat (400 call sites), so the frame-list cache is hit
    obj = synthesize_snapshot(layout, entries=2600, frames=5, windows_paths=protocol == 3)
    data = pickle.dumps(obj, protocol=protocol)
    streamed = parse_pickle(data, stream=True)  # (protocols 2-3 are read whole unless asked)
    assert_same(streamed, parse_pickle_whole(data))
    assert_same(parse_pickle(data), streamed)
    if layout in ("current", "no_time"):
        assert len(streamed.devices[0].action) == len(obj["device_traces"][0])
        assert device_summary(streamed, 0)["peak_active_bytes"] == replay_peak(obj) > 0


@pytest.mark.corpus
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", REAL)
def test_streamed_equals_whole_on_real_snapshots(name, protocol):
    obj = pickle.loads(sample(f"memory_snapshots/{name}").read_bytes())  # plain containers; trusted here
    data = pickle.dumps(obj, protocol=protocol)
    snap = load_snapshot(data)  # in the reader child, as the server reads it
    assert_same(snap, parse_pickle_whole(data))
    assert_same(parse_pickle(data, stream=True), snap)
    assert device_summary(snap, 0)["peak_active_bytes"] == replay_peak(obj) > 0  # memory_viz's peak


@pytest.mark.corpus
@pytest.mark.parametrize("name", REAL)
def test_real_frame_lists_are_read_once_per_stack(name):
    """PyTorch shares frame dicts (memo references), so a stack repeated after its first writing is the
    same bytes: about two list objects per distinct stack (the first, with its dicts written out, and
    the cached one; a list that a protocol-4 FRAME boundary splits is read plainly), not one per entry;
    and every history entry equals pickle.load's."""
    data = sample(f"memory_snapshots/{name}").read_bytes()
    kept = []
    obj = pickle_stream.read(data, lambda target, items: "action" in items[0] and (kept.extend(items) or True))
    assert obj["device_traces"][0] == []  # handed off, not kept
    plain = pickle.loads(data)["device_traces"][0]
    assert kept == plain
    by_stack = {}
    for e in kept:
        by_stack.setdefault(tuple((f["filename"], f["line"], f["name"]) for f in e["frames"]), set()).add(
            id(e["frames"])
        )
    lists = sum(len(ids) for ids in by_stack.values())
    assert by_stack and lists <= 2 * len(by_stack) + data.count(b"\x95") < len([e for e in kept if e["frames"]])


def test_history_is_handed_off_in_batches():
    obj = synthesize_snapshot("current", entries=2500, frames=3)
    batches = []
    got = pickle_stream.read(
        pickle.dumps(obj), lambda target, items: "action" in items[0] and (batches.append(list(items)) or True)
    )
    assert [len(b) for b in batches] == [1000, 1000, len(obj["device_traces"][0]) - 2000]
    assert got["device_traces"] == [[]] and got["segments"] == obj["segments"]
    assert [e for b in batches for e in b] == obj["device_traces"][0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_benchmark_writer_writes_the_synthesized_snapshot(protocol):
    f = io.BytesIO()
    write_snapshot_pickle(f, 2300, frames=4, protocol=protocol)
    expected = synthesize_snapshot("current", entries=2300, frames=4)
    assert pickle.loads(f.getvalue()) == expected
    assert_same(parse_pickle(f.getvalue(), stream=True), parse_pickle(pickle.dumps(expected, protocol=protocol)))


def test_a_shared_history_entry_is_read_whole():
    entry = {"action": "alloc", "addr": 4096, "size": 100, "stream": 0, "frames": [], "time_us": 5}
    obj = {"segments": [], "device_traces": [[entry, dict(entry, addr=8192)], [entry]]}
    data = pickle.dumps(obj)
    with pytest.raises(pickle_stream.SharedEntry):
        pickle_stream.read(data, lambda target, items: "action" in items[0])
    snap = parse_pickle(data)
    assert_same(snap, parse_pickle_whole(data))
    assert snap.devices[1].addr.tolist() == [4096]


@pytest.mark.parametrize(
    "data, message",
    [
        (pickle.dumps(print, protocol=2), "refused to load global '__builtin__.print'"),  # GLOBAL (Python 2 name)
        (pickle.dumps(print, protocol=5), "refused to load global 'builtins.print'"),  # STACK_GLOBAL
        (b"\x80\x04N)R.", "refused opcode REDUCE"),  # a call without a global
        (b"\x80\x04}\x94N\x8c\x01x\x94b.", "refused opcode BUILD"),
        (b"\x80\x05\x97.", "refused opcode NEXT_BUFFER"),
        (b"\x80\x04]\x94(K\x01K\x02", "not a readable pickle"),  # truncated: no APPENDS, no STOP
        (b"\x80\x04h\x07.", "not a readable pickle"),  # a memo slot never written
        (b"\x80\x04\x8c\xffabc.", "not a readable pickle"),  # a string longer than the file
        (b"\x80\x09N.", "unsupported pickle protocol"),
        (b"\x80\x04(K\x01K\x02K\x03u.", "not a readable pickle"),  # SETITEMS without a dict
    ],
)
def test_hostile_pickles_are_refused(data, message):
    with pytest.raises(RefusedPickle, match=message):
        pickle_stream.read(data)
    with pytest.raises(SnapshotError, match=message):
        parse_pickle(data, stream=True)


@pytest.mark.corpus
def test_the_reader_child_imports_this_package_not_one_in_the_working_folder(tmp_path, monkeypatch):
    """``python -m`` puts the working folder first on the path: a ``tb_plugin`` there must not run."""
    fake = tmp_path / "tb_plugin" / "artifacts"
    fake.mkdir(parents=True)
    (tmp_path / "tb_plugin" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "snapshot.py").write_text("raise SystemExit(99)\n")
    monkeypatch.chdir(tmp_path)
    data = sample("memory_snapshots/mem_snapshot.pickle").read_bytes()
    assert device_summary(load_snapshot(data), 0)["peak_active_bytes"] == replay_peak(pickle.loads(data))


def test_reopen_takes_the_summary_from_the_parse_cache(tmp_path, monkeypatch):
    """The summary (its alloc/free matching sorts the whole history) is kept beside the columns: a
    reopen answers it without computing it; a summary written by other analysis code is not used."""
    from tb_plugin.analysis import snapshot as snap_analysis
    from tb_plugin.registry import artifacts
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.runs import RunRegistry

    run = tmp_path / "job"
    run.mkdir()
    (run / "snapshot.pickle").write_bytes(pickle.dumps(synthesize_snapshot("current", entries=400, frames=2)))
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))

    def opened():
        reg = RunRegistry(str(tmp_path), cache=ParseCache())
        reg.scan()
        (art,) = [a for a in reg.artifacts() if a.entry.rel.endswith("snapshot.pickle")]
        reg.load_artifact(art)
        assert art.state == "ready", art.error
        return art.views.summary()

    first = opened()
    monkeypatch.setattr(snap_analysis, "device_summary", lambda *a: 1 / 0)
    assert opened() == first and first["devices"][0]["peak_active_bytes"] > 0
    monkeypatch.setattr(artifacts, "ANALYSIS_VERSION", "other code")  # another version's summary: computed again
    monkeypatch.setattr(snap_analysis, "device_summary", lambda snap, device: {"recomputed": device})
    assert opened()["devices"] == [{"recomputed": 0}]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_value_ending_in_the_setitems_byte_before_another_opcode(protocol):
    """The tight dict loop stops at an opcode it leaves to the main loop; a value whose last byte is
    0x75 (SETITEMS' byte: 117, a memo index 117, an address ending in it) just before must not be
    taken for the dict's end."""
    keys = [f"k{i}" for i in range(130)]  # new key text (left to the main loop) right after each value
    entries = [
        {
            "action": "alloc",
            "addr": 0x7575,
            keys[i]: 1,
            "size": 117,
            f"s{i}": 2,
            "stream": 0,
            "time_us": 1.5,
            "frames": [],
        }
        for i in range(130)
    ]
    obj = {"segments": [], "device_traces": [entries], "external_annotations": [{"k": keys, "v": 117.0}]}
    data = pickle.dumps(obj, protocol=protocol)
    assert pickle_stream.read(data) == obj
    kept = []
    pickle_stream.read(data, lambda target, items: "action" in items[0] and (kept.extend(items) or True))
    assert kept == entries
    assert_same(parse_pickle(data, stream=True), parse_pickle_whole(data))


def test_changing_a_shared_empty_list_through_the_memo_changes_no_other_list():
    """Empty lists after which a key follows are one shared object (memory: one per free entry
    otherwise). A hostile pickle that appends to one later through a memo reference (pickle never
    writes that) changes a copy, never the other entries' lists."""
    obj = {"x": [{"k": [], "m": 1}, {"k": [], "m": 2}, {"k": [], "m": 3}]}
    data = pickle.dumps(obj, protocol=4)
    assert pickle_stream.read(data) == obj
    slots, memo, prev = [], 0, None
    for op, _, _ in pickletools.genops(data):
        if op.name == "MEMOIZE":
            if prev == "EMPTY_LIST":
                slots.append(memo)
            memo += 1
        prev = op.name
    hostile = data[:-1] + b"h" + bytes([slots[2]]) + b"K\x07a0."  # BINGET the 2nd dict's list, APPEND 7, POP
    assert pickle.loads(hostile)["x"][1]["k"] == [7]
    got = pickle_stream.read(hostile)
    assert [d["k"] for d in got["x"]] == [[], [], []]


@pytest.mark.corpus
@pytest.mark.parametrize("protocol", (2, 3))
@pytest.mark.parametrize("name", REAL)
def test_protocol_2_3_frame_lists_are_read_once_per_stack(name, protocol):
    """Protocols 2-3 number every memo slot (BINPUT), so no two frame lists are the same bytes; keyed
    without those numbers, a repeated stack is still about two list objects (the first, with its dicts
    written out, and the cached one), not one per entry; every entry equals pickle.load's."""
    obj = pickle.loads(sample(f"memory_snapshots/{name}").read_bytes())
    data = pickle.dumps(obj, protocol=protocol)
    kept = []
    got = pickle_stream.read(data, lambda target, items: "action" in items[0] and (kept.extend(items) or True))
    assert got["device_traces"][0] == [] and kept == obj["device_traces"][0]
    by_stack = {}
    for e in kept:
        stack = tuple((f["filename"], f["line"], f["name"]) for f in e["frames"])
        by_stack.setdefault(stack, set()).add(id(e["frames"]))
    lists = sum(len(ids) for ids in by_stack.values())
    assert by_stack and lists <= 2 * len(by_stack) < len([e for e in kept if e["frames"]])


def test_put_numbers_are_sequential_only_as_pickle_writes_them():
    from struct import pack

    from tb_plugin.artifacts.pickle_puts import sequential

    assert sequential(b"r" + pack("<I", 300) + b"r" + pack("<I", 301), 2, 300)
    assert not sequential(b"r" + pack("<I", 300) + b"r" + pack("<I", 301), 2, 299)
    assert not sequential(b"r" + pack("<I", 301) + b"r" + pack("<I", 300), 2, 300)  # the same slots, swapped
    assert sequential(b"q\xfer\x00\x01\x00\x00", 2, 254) is False  # 255 is still a BINPUT
    assert sequential(b"q\xfeq\xff", 2, 254) and sequential(b"q\xffr\x00\x01\x00\x00", 2, 255)
    assert not sequential(b"r\x0a\x00\x00\x00", 1, 10)  # a LONG_BINPUT pickle would not write for slot 10


@pytest.mark.parametrize("long_puts", (False, True))
def test_a_repeated_frame_list_whose_put_overwrites_an_old_slot_is_read_as_pickle_reads_it(long_puts, monkeypatch):
    """A hostile protocol-2 pickle: the third copy of a stack (the same key as the cached one) PUTs its
    list into the slot of the text 'alloc'; the next entry's action, a BINGET of that slot, is then that
    list (as pickle.load reads it), not the text: the cache is not used for PUTs that are not sequential."""
    frames = [{"filename": "x.py", "line": 1, "name": "f"}, {"filename": "y.py", "line": 2, "name": "g"}]
    pad = [f"pad{i}" for i in range(300)] if long_puts else []  # memo slots past 255: LONG_BINPUTs
    obj = {"pad": pad, "device_traces": [[{"action": "alloc", "frames": list(frames)} for _ in range(4)]]}
    data = bytearray(pickle.dumps(obj, protocol=2))
    ops = list(pickletools.genops(bytes(data)))
    alloc_slot = next(ops[i + 1][1] for i, (op, arg, _) in enumerate(ops) if arg == "alloc")
    frame_puts = [
        ops[i + 1]
        for i, (op, _, _) in enumerate(ops)
        if op.name == "EMPTY_LIST"
        and ops[i + 2][0].name in ("MARK", "EMPTY_DICT", "BINGET", "LONG_BINGET")
        and ops[i + 1][0].name.endswith("PUT")
    ][-4:]
    op, _, pos = frame_puts[2]
    data[pos + 1 : pos + (2 if op.name == "BINPUT" else 5)] = (
        alloc_slot.to_bytes(1, "little") if op.name == "BINPUT" else alloc_slot.to_bytes(4, "little")
    )
    hostile = bytes(data)
    expected = pickle.loads(hostile)
    assert expected["device_traces"][0][3]["action"] == frames  # the list, through the overwritten slot
    assert pickle_stream.read(hostile) == expected
    kept = []
    pickle_stream.read(hostile, lambda target, items: "action" in items[0] and (kept.extend(items) or True))
    assert kept == expected["device_traces"][0]
    from tb_plugin.artifacts import pickle_puts

    with monkeypatch.context() as patched:
        patched.setattr(pickle_puts, "sequential", lambda *a: True)  # the check left out: the cached list is taken
        assert pickle_stream.read(hostile) != expected
    if long_puts:  # LONG_BINPUTs: the second copy is a template; the third matches it but for its PUT number
        monkeypatch.setattr(pickle_puts, "_template_hit", lambda bucket, raw, base: bucket[0][3])
        assert pickle_stream.read(hostile) != expected


def test_a_template_matches_only_the_same_bytes_with_the_put_numbers_shifted():
    from struct import pack

    from tb_plugin.artifacts.pickle_puts import _template_hit

    def frame_list(base, line=7):  # ] PUT ( } PUT ( 'line' K line u } PUT ( ... u e: three PUTs
        put = [b"r" + pack("<I", base + k) for k in range(3)]
        return b"]" + put[0] + b"(}" + put[1] + b"(h\x05K" + bytes([line]) + b"u}" + put[2] + b"(h\x05K\x08ue"

    first = frame_list(1000)
    offsets = [2, 9, 21]
    assert [first[o : o + 4] for o in offsets] == [pack("<I", 1000 + k) for k in range(3)]
    bucket = [(int.from_bytes(first, "little"), 1000, sum(1 << (8 * o) for o in offsets), "cached")]
    as_int = lambda raw: int.from_bytes(raw, "little")
    assert _template_hit(bucket, as_int(frame_list(5000)), 5000) == "cached"
    assert _template_hit(bucket, as_int(frame_list(300)), 300) == "cached"
    assert _template_hit(bucket, as_int(frame_list(5000)), 5001) is None  # numbered from another slot
    assert _template_hit(bucket, as_int(frame_list(5000, line=9)), 5000) is None  # another frame
    skipped = frame_list(5000)[:21] + pack("<I", 5003) + frame_list(5000)[25:]  # the last PUT one slot on
    assert _template_hit(bucket, as_int(skipped), 5000) is None


@pytest.mark.parametrize("data", [b"not a pickle", b"\x01x", b"'x", b"\\x", b"\xfe"])
def test_an_unknown_opcode_reads_as_the_c_unpicklers_refusal(data):
    """A file the streaming reader refuses for an unknown opcode is refused in the words the restricted
    C unpickler's refusal uses (a reader child may meet it with either reader)."""
    with pytest.raises(RefusedPickle) as c_reader:
        restricted_loads(data)
    with pytest.raises(RefusedPickle) as streamed:
        pickle_stream.read(data)
    assert str(streamed.value) == str(c_reader.value)
    assert str(streamed.value).startswith("not a readable pickle: UnpicklingError: invalid load key, '")
