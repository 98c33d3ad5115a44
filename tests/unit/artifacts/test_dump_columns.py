"""Flight-recorder dump columns (:func:`tb_plugin.artifacts.flight_recorder.extract`): the C-speed paths
(whole-column conversions, JSON texts in one pass, ranks as JSON) give the values the one-by-one rules
give, also when some values are of the wrong type."""

from __future__ import annotations

from tb_plugin.artifacts import flight_recorder as fr


def _entry(i: int, **over) -> dict:
    entry = {
        "record_id": i,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": i + 1,
        "p2p_seq_id": 0,
        "profiling_name": "nccl:all_reduce",
        "time_created_ns": 1000 * i,
        "input_sizes": [[4096]],
        "input_dtypes": ["BFloat16"],
        "output_sizes": [[4096]],
        "output_dtypes": ["BFloat16"],
        "state": "completed",
        "time_discovered_started_ns": 1000 * i + 10,
        "time_discovered_completed_ns": 1000 * i + 500,
        "timeout_ms": 600000,
        "is_p2p": False,
        "frames": [],
    }
    entry.update(over)
    return entry


def test_columns_of_plain_and_odd_values():
    entries = [
        _entry(0),
        _entry(1, time_discovered_completed_ns=None, state="started", is_p2p=True),
        _entry(2, input_sizes=[[2**70]], time_discovered_started_ns="12"),  # not JSON: "?"; numeric text
        _entry(3, output_sizes=[[8, 4096]], timeout_ms=True),
    ]
    rec = fr.extract({"version": "2.10", "rank": 3, "entries": entries})
    cols, vocab = rec["entries"], rec["vocab"]
    assert cols["completed_ns"].tolist() == [500, -1, 2500, 3500]
    assert cols["started_ns"].tolist() == [10, 1010, 12, 3010]
    assert cols["timeout_ms"].tolist() == [600000, 600000, 600000, 1]
    assert cols["is_p2p"].tolist() == [False, True, False, False]
    assert [vocab["sizes"][i] for i in cols["sizes"]] == ["[[[4096]],[[4096]]]", "[[[4096]],[[4096]]]", "?"] + [
        "[[[4096]],[[8,4096]]]"
    ]
    assert [vocab["state"][i] for i in cols["state"]] == ["completed", "started", "completed", "completed"]
    assert vocab["dtypes"] == ['[["BFloat16"],["BFloat16"]]'] and cols["dtypes"].tolist() == [0, 0, 0, 0]
    assert [vocab["op"][i] for i in cols["op"]] == ["nccl:all_reduce"] * 4


def test_group_ranks_in_every_written_form():
    dump = {
        "version": "2.10",
        "entries": [],
        "pg_config": {
            "0": {"desc": "default_pg", "ranks": "[3, 1, 2, 0]"},
            "1": {"desc": "tp", "ranks": [5, 4, 4, -1, 1 << 30]},
            "2": {"desc": "odd", "ranks": [True, "7", 2.0, None]},
            "3": {"desc": "text", "ranks": "0,1"},
            "4": {"desc": "none", "ranks": "[]"},
        },
    }
    cfg = fr.extract(dump)["pg_config"]
    assert cfg["0"]["ranks"] == [0, 1, 2, 3]
    assert cfg["1"]["ranks"] == [4, 5]  # negative and past MAX_RANK dropped
    assert cfg["2"]["ranks"] == [1, 7]  # a bool is an int, numeric text is read, a float is not a rank
    assert cfg["3"]["ranks"] == [0, 1]
    assert cfg["4"]["ranks"] is None


def test_a_dump_whose_shared_sizes_amplify_is_refused_by_the_bound():
    """One entry dict with a 10,000-item size list referenced 100,000 times (2-3 bytes each): 5 GB of
    JSON text if each entry's sizes were written out; the reader child stops at the bound."""
    import pickle

    entry = _entry(0, input_sizes=[list(range(10_000))])
    data = pickle.dumps({"version": "2.10", "rank": 0, "entries": [entry] * 100_000}, protocol=4)
    assert len(data) < 400_000
    out = fr.read_pickles([("amplified", data), ("good", pickle.dumps({"version": "2.10", "entries": [_entry(0)]}))])
    assert isinstance(out["amplified"], fr.DumpError)
    assert "expand past the bound for its size through shared references" in str(out["amplified"])
    assert out["good"]["entries"]["seq"].tolist() == [1]
    small = pickle.dumps({"version": "2.10", "entries": [entry] * 3}, protocol=4)  # the same shape, small
    assert fr.read_pickles([("small", small)])["small"]["entries"]["seq"].tolist() == [1, 1, 1]
