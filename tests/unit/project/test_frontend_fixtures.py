"""The frontend's fixtures are the server's real answers: regenerating them (frontend/scripts/
make_fixtures.py, on the shared samples) gives the committed files byte for byte, so a server change
that the UI tests have not seen fails here."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import REPO, SAMPLES

SCRIPT = REPO / "frontend" / "scripts" / "make_fixtures.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_fixtures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.corpus
def test_committed_fixtures_equal_the_server_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_SAMPLES", str(SAMPLES))
    make = _script()
    docs = make.build(tmp_path)
    assert len(docs) >= 27
    stale = [
        rel
        for rel, doc in docs.items()
        if not (make.FIXTURES / rel).exists() or (make.FIXTURES / rel).read_text(encoding="utf-8") != make.text(doc)
    ]
    assert stale == [], f"stale frontend fixtures, run python {SCRIPT.relative_to(REPO)}: {stale}"


def test_the_check_fails_on_a_stale_fixture(tmp_path, monkeypatch):
    """--check is not a rubber stamp: a fixture edited by hand is named."""
    make = _script()
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    monkeypatch.setattr(make, "FIXTURES", fixtures)
    monkeypatch.setattr(make, "build", lambda tmp: {"a.json": {"x": 1}, "b/c.json": {"y": [1, 2]}})
    assert make.main([]) == 0 and make.main(["--check"]) == 0
    assert json.loads((fixtures / "b" / "c.json").read_text()) == {"y": [1, 2]}
    (fixtures / "a.json").write_text('{"x": 2}\n')
    assert make.main(["--check"]) == 1
