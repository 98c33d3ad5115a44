"""The reader child's whole read from the pipe (:mod:`tb_plugin.artifacts.snapshot_child`) and the stacks
keyed a run of entries at a time (:meth:`~tb_plugin.artifacts.snapshot_stacks.Interner.stack_ids_of`):
the same snapshot as before, field by field; a whole read that runs out of memory is sent again to a
streaming child; the bound still counts every byte of the file."""

from __future__ import annotations

import io
import pickle
import random

import numpy as np
import pytest
from fuzz_files import memo_index_pickle
from synth.snapshot_writer import write_snapshot_pickle
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import snapshot_child, whole_read
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot, load_snapshot_blocks, parse_pickle
from tb_plugin.artifacts.snapshot_stacks import _BUCKET_LISTS, Interner, stack_ids


def _frame(i: int) -> dict:
    return {"filename": f"f{i % 7}.py", "line": i % 5, "name": f"n{i % 3}"}


def _odd_frames(rng: random.Random, n: int) -> list:
    """Entries' frame lists: shared objects, equal contents in distinct lists, empty, missing, tuples,
    lengths 1-12, and now and then a list that only the one-by-one reader reads (odd types)."""
    shared = [[_frame(rng.randrange(40)) for _ in range(rng.randrange(1, 6))] for _ in range(5)]
    out: list = []
    for _ in range(n):
        kind = rng.randrange(10)
        if kind == 0:
            out.append(rng.choice(shared))
        elif kind == 1:
            out.append(rng.choice([None, [], ()]))
        elif kind == 2:
            out.append(tuple(_frame(rng.randrange(40)) for _ in range(rng.randrange(1, 4))))
        else:
            out.append([_frame(rng.randrange(40)) for _ in range(rng.randrange(1, 13))])
    return out


ODD = [
    [{"filename": "a.py", "line": 1}],  # a field missing: read with defaults
    [{"filename": "a.py", "line": [1, 2], "name": "x"}],  # an unhashable field: kept as its text
    "not frames",
    {"filename": "a.py", "line": 1, "name": "x"},  # a dict where the list should be
    [1, 2, 3],
    [{"filename": "a.py", "line": 1, "name": "x"}, "junk"],
]


@pytest.mark.parametrize("seed", range(6))
def test_stacks_keyed_at_once_equal_one_by_one(seed):
    rng = random.Random(seed)
    runs = [_odd_frames(rng, rng.randrange(1, 3000)) for _ in range(4)]
    if seed % 2:  # odd lists in some runs: that run is read one by one, the numbering carries on
        runs[1] = runs[1] + [rng.choice(ODD)] + runs[1][:50]
    if seed >= 3:  # every entry with a stack: the lists' ids in one pass
        runs = [[f for f in frames if f] or [[_frame(1)]] for frames in runs]
    _assert_keyed_at_once(runs)
    if not seed % 2:
        assert Interner().stack_ids_of(tuple(runs[0])) is not None  # (the keyed path, not the fallback)


def _assert_keyed_at_once(runs: list[list]) -> None:
    """Each run's stack ids (int32 buffers) and the interned stacks equal the one-by-one reader's."""
    at_once, one_by_one = Interner(), Interner()
    for frames in runs:
        got = stack_ids(tuple(frames), at_once.stack_of)
        want = np.array([one_by_one.stack_of(f) if f else -1 for f in frames], dtype=np.int32)
        assert np.array_equal(np.frombuffer(got, dtype=np.int32), want)
    assert (at_once.stacks, at_once.frames) == (one_by_one.stacks, one_by_one.frames)


def _dict_frames(rng: random.Random, dicts: list[dict], n: int) -> list:
    """Entries' frame lists, a list each (some empty), made of the shared frame ``dicts`` (PyTorch's dumps),
    among them stacks that differ only where their sampled keys do not look (their first frame)."""
    stacks = [[rng.choice(dicts) for _ in range(rng.randrange(1, 12))] for _ in range(60)]
    stacks += [[d, *stacks[-1][1:]] for d in dicts[:5] if len(stacks[-1]) > 1]
    return [list(rng.choice(stacks)) if rng.random() < 0.7 else [] for _ in range(n)]


@pytest.mark.parametrize("kept", (50, 100_000))
def test_lists_of_shared_dicts_keyed_by_their_identities(monkeypatch, kept):
    """Once told the frame dicts are shared, the lists are found among those met with the same sampled key
    (their length and four dicts' ids): the same stacks as one by one, lists that differ where the key does
    not look told apart, a bound on the table (``kept``) empties it, never a wrong stack; the lists kept hold
    the file's dicts (alive: their ids unique); lists of new dicts give the lookup up and are keyed by
    content as before."""
    monkeypatch.setattr("tb_plugin.artifacts.snapshot_stacks._IDENTITY_KEPT", kept)
    monkeypatch.setattr("tb_plugin.artifacts.snapshot_stacks._SAMPLED_TRIAL", 3000)
    rng = random.Random(3)
    dicts = [_frame(i) for i in range(40)] + [dict(_frame(i)) for i in range(10)]  # (equal frames, other dicts)
    runs = [_dict_frames(rng, dicts, rng.randrange(500, 6000)) for _ in range(4)]
    at_once, one_by_one = Interner(), Interner()
    at_once.key_by_dicts()
    for frames in runs:
        got = np.frombuffer(at_once.stack_ids_of(frames, distinct=True), dtype=np.int32)
        assert got.tolist() == [one_by_one.stack_of(f) if f else -1 for f in frames]
        assert at_once.by_dicts is not None  # (not given up: the dicts are shared)
    assert (at_once.stacks, at_once.frames) == (one_by_one.stacks, one_by_one.frames)
    table = at_once.by_dicts
    assert 0 < len(table) and max(len(reps) for reps, _ in table.values()) > 2  # (a key with two lists)
    kept_dicts = {id(d) for reps, _ in table.values() for rep in reps[:-1] for d in rep}
    assert kept_dicts <= {id(d) for d in dicts}
    # two stacks the sampled key cannot tell apart (they differ in their first frame only), met in turns
    a, b = [dicts[0], *dicts[1:5]], [dicts[9], *dicts[1:5]]
    both = Interner()
    both.key_by_dicts()
    turns = [list(a), list(b), list(b), list(a)] * 3
    got = np.frombuffer(both.stack_ids_of(turns, distinct=True), dtype=np.int32).tolist()
    assert got == [0, 1, 1, 0] * 3 and [len(reps) for reps, _ in both.by_dicts.values()] == [3]
    got = np.frombuffer(both.stack_ids_of([list(b), list(a)], distinct=True), dtype=np.int32).tolist()
    assert got == [1, 0]  # (found in the bucket, in either order)
    # more such stacks than a key holds: the others keyed by content each time, as right
    many = [[d, *dicts[1:5]] for d in dicts[10:40]]
    got = np.frombuffer(both.stack_ids_of([list(m) for m in many * 2], distinct=True), dtype=np.int32).tolist()
    assert got == list(range(2, 32)) * 2
    assert [len(reps) for reps, _ in both.by_dicts.values()] == [_BUCKET_LISTS + 1]
    own = [[_frame(rng.randrange(40)) for _ in range(4)] for _ in range(5000)]  # a dict per frame: not shared
    got = np.frombuffer(at_once.stack_ids_of(own, distinct=True), dtype=np.int32)
    assert got.tolist() == [one_by_one.stack_of(f) for f in own]
    assert at_once.by_dicts is None
    assert at_once.stack_ids_of([[_frame(1)], ODD[0]], distinct=True) is None  # (odd lists: one by one, as before)


@pytest.mark.parametrize("kept", (10, 100_000))
def test_lists_met_again_in_later_runs_are_found_by_identity(monkeypatch, kept):
    """A layout whose entries share a few lists (and many have none): the lists met in a run are kept by
    identity for the runs after it; a bound on them (``kept``) empties the table, never a wrong stack."""
    monkeypatch.setattr("tb_plugin.artifacts.snapshot_stacks._IDENTITY_KEPT", kept)
    rng = random.Random(7)
    shared = [[_frame(rng.randrange(40)) for _ in range(rng.randrange(1, 6))] for _ in range(30)]
    runs = [
        [rng.choice(shared) if rng.random() < 0.4 else rng.choice([None, [], ()]) for _ in range(2000)]
        for _ in range(3)
    ]
    runs.append(runs[0][:100] + [[_frame(99)]] + shared[:5])  # a new stack later
    runs += [[rng.choice(shared) for _ in range(500)], [rng.choice([None, [], ()]) for _ in range(500)]]  # all, none
    _assert_keyed_at_once(runs)
    interner = Interner()
    for frames in runs[:2]:
        interner.stack_ids_of(frames)
    assert interner.shared_ids or kept == 10  # (kept for the next run unless the bound emptied it)


@pytest.mark.parametrize("empty_share", (0.0, 0.67, 1.0))
def test_distinct_lists_among_empty_ones_keyed_at_once_equal_one_by_one(empty_share):
    """PyTorch's layout (each entry its own list; many entries with none): only the lists with frames are
    keyed, the empty ones (``[]``, ``()``, None) are −1 in their places, the stacks numbered as one by one."""
    rng = random.Random(11)
    runs = [
        [
            rng.choice([[], (), None]) if rng.random() < empty_share else [_frame(rng.randrange(60)) for _ in range(8)]
            for _ in range(rng.randrange(1, 5000))
        ]
        for _ in range(3)
    ]
    _assert_keyed_at_once(runs)
    at_once, one_by_one = Interner(), Interner()
    for frames in runs:  # (told the lists are distinct, as the drain tells it)
        got = np.frombuffer(at_once.stack_ids_of(frames, distinct=True), dtype=np.int32)
        assert got.tolist() == [one_by_one.stack_of(f) if f else -1 for f in frames]
    assert (at_once.stacks, at_once.frames) == (one_by_one.stacks, one_by_one.frames)


def test_an_odd_list_falls_back_to_one_by_one():
    for odd in ODD:
        assert Interner().stack_ids_of(([_frame(1)], odd)) is None


def _snapshot_pickle(tmp_path, entries: int, protocol: int) -> bytes:
    path = tmp_path / "snap.pickle"
    with open(path, "wb") as f:
        write_snapshot_pickle(f, entries, frames=8, protocol=protocol, shared_frames=False)
    return path.read_bytes()


@pytest.mark.parametrize("protocol", (2, 4, 5))  # (2: read into one buffer first, as before)
def test_a_large_snapshot_through_the_child_equals_the_streamed_read(tmp_path, protocol):
    data = _snapshot_pickle(tmp_path, 45_000, protocol)
    assert len(data) > 4 << 20  # not the shared child's: a child of its own, read from the pipe (4, 5)
    assert_same(load_snapshot(data), parse_pickle(data, stream=True))


def test_the_pipe_is_read_whole_only_for_protocol_4_and_5_that_fit(monkeypatch):
    monkeypatch.setattr(whole_read, "fits", lambda size, later=0, per_byte=0: True)
    small = {"segments": [], "device_traces": [[]]}
    for protocol, piped in ((2, False), (3, False), (4, True), (5, True)):
        assert snapshot_child.piped(io.BufferedReader(io.BytesIO(pickle.dumps(small, protocol=protocol))), 99) == piped
    monkeypatch.setattr(whole_read, "fits", lambda size, later=0, per_byte=0: False)
    assert not snapshot_child.piped(io.BufferedReader(io.BytesIO(pickle.dumps(small, protocol=4))), 99)


def test_the_bound_counts_every_byte_read_from_the_pipe():
    data = pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "size": 1}] * 3]}, protocol=4)
    stream = io.BufferedReader(io.BytesIO(data + bytes(1000)))  # bytes after the pickle count too
    obj, count = snapshot_child.read_piped(stream)
    assert count == len(data) + 1000 and obj == pickle.loads(data)


def test_a_memo_bomb_read_from_the_pipe_is_sent_again_to_a_streaming_child():
    # LONG_BINPUT 750 000 000: the C unpickler asks for a 6 GB memo, a MemoryError under the child's limit
    # after the pipe is consumed; the file goes again to a child that streams it (padded: a child of its own)
    data = memo_index_pickle(750_000_000) + bytes(5 << 20)
    assert load_snapshot(data).devices[0].size.tolist() == [8, 8]
    blocks = iter([data[: 3 << 20], data[3 << 20 :]])  # read once only: it cannot be sent again
    with pytest.raises(SnapshotError, match="needed more than .* MB of memory"):
        load_snapshot_blocks(blocks, len(data))


def test_the_pipe_asks_for_the_drained_reads_address_space(monkeypatch):
    asked = []
    monkeypatch.setattr(whole_read, "fits", lambda size, later=0, per_byte=0: asked.append(per_byte) or True)
    head = pickle.dumps({"device_traces": [[]]}, protocol=4)
    assert snapshot_child.piped(io.BufferedReader(io.BytesIO(head)), 99)
    assert (
        asked == [whole_read.DRAINED_LEAST_PER_BYTE] and whole_read.DRAINED_LEAST_PER_BYTE < whole_read.WHOLE_PER_BYTE
    )
