"""The phase benchmark's ratio table (benchmarks/bench_phases.py ``--baseline``): the workers' phases
summed over the workers, phases only one run has left out. No timing is measured here."""

from __future__ import annotations

from benchmarks.bench_phases import Phase, ratios


def _p(cpu: float) -> Phase:
    return Phase(1, cpu, cpu, 0.0, cpu)


def test_workers_summed_and_phases_of_one_run_left_out():
    base = {
        "main": {"finish": _p(1.0), "sections": _p(2.0)},
        "worker 1": {"decode_span": _p(3.0)},
        "worker 2": {"decode_span": _p(4.0), "scan_range": _p(0.5)},
    }
    this = {
        "main": {"finish": _p(5.0)},
        "worker 1": {"decode_span": _p(20.0), "scan_range": _p(1.0)},
        "worker 2": {"decode_span": _p(15.0), "scan_range": _p(1.5)},
        "section child": {"sections": _p(9.0)},
    }
    assert ratios(base, this) == [
        ("main: finish", 1.0, 5.0),
        ("workers: decode_span", 7.0, 35.0),
        ("workers: scan_range", 0.5, 2.5),
    ]
