"""The performance guard's rule (benchmarks/check.py): a judged figure more than 25 % above its accepted
value is a regression; every judged figure has an accepted value. No timing is measured here."""

from __future__ import annotations

import json

from benchmarks import check


def test_more_than_a_quarter_worse_is_flagged():
    accepted = {"a": {"value": 2.0}, "b": {"value": 100.0}, "c": {"value": 1.0}}
    worse = check.judge({"a": 2.5, "b": 125.1, "c": 0.5, "new": 9.0}, accepted)
    assert [line.split(":")[0] for line in worse] == ["b"]  # 1.25x is still accepted; lower is better


def test_every_judged_figure_has_an_accepted_value():
    with open(check.ACCEPTED) as f:
        accepted = json.load(f)
    judged = {prefix + name for _, _, names, _, prefix in check.BENCHES for name in names}
    assert judged == set(accepted["figures"])
    assert all(fig["value"] > 0 for fig in accepted["figures"].values())
    assert {"date", "load", "commit"} <= set(accepted["measured"])
