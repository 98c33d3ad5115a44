"""What a new user trips over on the command line: exit status and messages
for a logdir or diff path that is not there, a bad worker or span, and the progress lines."""

from __future__ import annotations

import io
import os

import pytest
from conftest import write_json, x

from tb_plugin.cli import main
from tb_plugin.cli.report import run_report


def _run(tmp_path, name="run", workers=("w0", "w1"), spans=(5,)):
    """A run folder with one tiny trace per worker and span (span = the file's timestamp order)."""
    folder = tmp_path / name
    for w in workers:
        for s in spans:
            write_json(folder / f"{w}.{s}.pt.trace.json", {"traceEvents": [x("aten::add", "cpu_op", 0, 10)]})
    return folder


def test_report_on_a_missing_logdir_is_status_2_and_says_so():
    out, err = io.StringIO(), io.StringIO()
    assert run_report("/nonexistent/kinetoscope-logdir", None, False, False, out, err) == 2
    assert err.getvalue() == "kinetoscope: /nonexistent/kinetoscope-logdir: no such directory\n"
    assert out.getvalue() == ""


def test_report_on_an_unreadable_logdir_is_status_2(tmp_path, monkeypatch):
    _run(tmp_path)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if str(p) == str(tmp_path) else real(p, mode))
    err = io.StringIO()
    assert run_report(str(tmp_path), None, False, False, io.StringIO(), err) == 2
    assert "cannot be read (permission denied)" in err.getvalue()


def test_report_on_an_empty_logdir_is_status_1(tmp_path):
    (tmp_path / "nothing").write_text("not a trace")
    err = io.StringIO()
    assert run_report(str(tmp_path), None, False, False, io.StringIO(), err) == 1
    assert f"no trace files under {tmp_path}" in err.getvalue()


def test_report_of_one_trace_file_still_works(tmp_path):
    folder = _run(tmp_path, workers=("w0",))
    out = io.StringIO()
    assert run_report(str(folder / "w0.5.pt.trace.json"), None, False, False, out, io.StringIO()) == 0
    assert "worker w0" in out.getvalue()


def test_progress_lines_on_the_local_pool_carry_no_host_pid(tmp_path):
    _run(tmp_path)
    err = io.StringIO()
    assert run_report(str(tmp_path), None, False, False, io.StringIO(), err) == 0
    lines = [line for line in err.getvalue().splitlines() if line.startswith("[")]
    assert lines and all(line.endswith(" s") for line in lines), lines
    assert all(f":{os.getpid()}" not in line and "(" not in line for line in lines), lines


def test_diff_of_a_missing_path_says_it_does_not_exist(tmp_path, capsys):
    good = _run(tmp_path)
    assert main(["diff", str(tmp_path / "nope"), str(good), "--no-cache"]) == 2
    assert capsys.readouterr().err == f"kinetoscope: {tmp_path / 'nope'} does not exist\n"


@pytest.mark.parametrize("flag", ["--exp-worker", "--base-worker"])
def test_diff_with_a_bad_worker_lists_the_workers_and_spans(tmp_path, capsys, flag):
    good = _run(tmp_path, spans=(5, 9))
    assert main(["diff", str(good), str(good), flag, "rank7", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"kinetoscope: no trace for worker 'rank7', span '1' in {good}; "
        "the workers and spans there: w0 (spans 1, 2); w1 (spans 1, 2)\n"
    )


def test_diff_with_a_bad_span_lists_the_spans(tmp_path, capsys):
    good = _run(tmp_path, workers=("w0",))
    assert main(["diff", str(good), str(good), "--base-span", "3", "--no-cache"]) == 2
    assert "span '3'" in capsys.readouterr().err


def test_diff_of_a_folder_without_traces(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["diff", str(tmp_path / "empty"), str(tmp_path / "empty"), "--no-cache"]) == 2
    assert "no trace files directly in" in capsys.readouterr().err


def test_diff_of_two_good_runs_still_works(tmp_path, capsys):
    good = _run(tmp_path)
    assert main(["diff", str(good), str(good), "--exp-worker", "w1", "--no-cache"]) == 0
    assert "baseline:" in capsys.readouterr().out
