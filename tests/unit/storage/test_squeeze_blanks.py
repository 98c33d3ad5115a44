"""The whitespace squeeze of inflated JSON: the same bytes as the regular expression on every input,
with the expression skipped when no run is long enough (and a window read whole only when its sampled
bytes are all whitespace); and the per-rank job reads the files beside a
trace (Inductor's kernel_information.json) inside its own folder, with no refusal."""

from __future__ import annotations

import logging
import random

import pytest

from tb_plugin.storage import inflate

RUN = inflate.BLANK_RUN_BYTES


@pytest.mark.parametrize(
    "pad",
    [b" " * (3 * RUN), b" \n" * RUN, b"\t" * (RUN + 1), b" " * (RUN - 1), b"\r\n" * (RUN // 2 + 7), b""],
)
def test_the_squeeze_equals_the_expression_on_padding(pad):
    doc = b'{"traceEvents":[' + pad + b'{"ph": "X"}]}' + pad
    for data in (doc, bytearray(doc)):
        got = inflate.squeeze_blanks(data)
        assert got == inflate._BLANK_RUN.sub(b" ", data)
    shrunk = len(inflate.squeeze_blanks(doc)) < len(doc)
    assert shrunk == (len(pad) >= RUN)


def test_the_squeeze_equals_the_expression_on_random_runs():
    rng = random.Random(7)
    for _ in range(200):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.5:
                parts.append(b"x" * rng.randint(0, RUN + 10))
            else:
                unit = bytes(rng.choice(b" \t\r\n") for _ in range(rng.randint(1, 3)))
                parts.append(unit * rng.randint(0, RUN))
        data = b"".join(parts)
        assert inflate.squeeze_blanks(data) == inflate._BLANK_RUN.sub(b" ", data)


def test_windows_blank_at_every_sampled_byte_but_not_all_through():
    """Whitespace windows with one other byte off the sampled positions (read whole, not squeezed) and
    long runs at every offset (squeezed): the same bytes as the expression."""
    rng = random.Random(11)
    for _ in range(60):
        data = bytearray(b" " * (4 * RUN))
        for _ in range(rng.randint(0, 3)):
            at = rng.randrange(len(data))
            data[at if at % (inflate._PROBE_BYTES // inflate._SAMPLES) else at + 1] = ord("x")
        data = b"x" * rng.randint(0, RUN) + bytes(data)
        assert inflate.squeeze_blanks(data) == inflate._BLANK_RUN.sub(b" ", data)


def test_a_trace_without_long_runs_comes_back_as_it_is():
    data = b'{"traceEvents": [\n  {"ph": "X", "name": "a"},\n' * 5000 + b"]}"
    assert inflate.squeeze_blanks(data) is data


def test_the_rank_job_reads_kernel_information_beside_its_trace_without_a_refusal(tmp_path, caplog):
    from conftest import write_json, x

    from tb_plugin.registry.executors.task import RankJob, reduce_rank

    trace = write_json(
        tmp_path / "w.1.pt.trace.json",
        {"traceEvents": [x("ProfilerStep#1", "user_annotation", 0, 100), x("aten::mm", "cpu_op", 10, 50)]},
    )
    write_json(tmp_path / "kernel_information.json", {"triton_poi_fused_add_0": {"pre_grad_nodes": ["add"]}})
    job = RankJob(key="w.1.pt.trace.json", url=str(trace), version="v", size=trace.stat().st_size)
    with caplog.at_level(logging.WARNING):
        result = reduce_rank(job)
    assert result.error is None and result.aggregate is not None
    assert not [r for r in caplog.records if "refused" in r.getMessage()]
