"""The test-selection rules (tests/conftest.py, docs/TESTING.md): without the sample corpus its tests
are skipped with one summary line naming how to enable them; in CI a missing corpus is an error; a
test that reads the corpus without the ``corpus`` mark fails instead of skipping."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

PROBE = """
import pytest
from conftest import sample

@pytest.mark.corpus
def test_marked():
    sample("kineto")

def test_plain():
    assert True
"""
UNMARKED = """
from conftest import sample

def test_unmarked():
    sample("kineto")
"""


def _pytest(tmp_path, source: str, *args: str, **env) -> subprocess.CompletedProcess:
    """pytest on one test module written into ``tests/`` (so the real conftest applies), without the
    corpus unless ``env`` says otherwise; ``args``: more pytest arguments."""
    module = REPO / "tests" / f"test_zz_probe_{os.getpid()}_{tmp_path.name}.py"
    module.write_text(source)
    try:
        full = {k: v for k, v in os.environ.items() if k != "CI"}
        full.update(KINETOSCOPE_SAMPLES=str(tmp_path / "no-corpus"), PYTHONPATH=str(REPO), **env)
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(module)],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=full,
            timeout=300,
        )
    finally:
        module.unlink()


@pytest.mark.parametrize("jobs", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_missing_corpus_skips_its_tests_with_one_line(tmp_path, jobs):
    """Also when pytest-xdist workers collect (the full suite runs in 2 processes)."""
    done = _pytest(tmp_path, PROBE, *jobs)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "sample corpus" in line]
    assert len(lines) == 1 and lines[0].startswith("1 tests skipped: they read the sample corpus"), done.stdout
    assert "KINETOSCOPE_SAMPLES" in lines[0] and "1 passed, 1 skipped" in done.stdout


def test_missing_corpus_in_ci_is_an_error(tmp_path):
    done = _pytest(tmp_path, PROBE, CI="true")
    assert done.returncode != 0
    assert "CI is set but the sample corpus is missing" in done.stdout + done.stderr


def test_a_corpus_read_without_the_mark_fails(tmp_path):
    done = _pytest(tmp_path, UNMARKED)
    assert done.returncode == 1
    assert "is not marked @pytest.mark.corpus" in done.stdout


@pytest.mark.e2e  # the test command in a subprocess: its setup check imports every test package
def test_run_tests_runs_only_the_test_ids_given(tmp_path):
    """``./run_tests.sh --fast TEST_ID`` runs that test alone (the frontend stage and tests/ are left out;
    ``--fast`` also leaves out the Node, Azurite and chromium setup)."""
    done = subprocess.run(
        ["bash", str(REPO / "run_tests.sh"), "--fast", "tests/unit/interfaces/test_cli_version.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "== frontend" not in done.stdout and "1 passed" in done.stdout, done.stdout


def test_every_module_naming_the_corpus_is_marked():
    """A test module that takes the corpus path from conftest marks its tests ``corpus`` (else, without the
    corpus, its tests fail on a missing file instead of being skipped); helpers and conftests are not tests."""
    unmarked = [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "tests").rglob("test_*.py"))
        if ".azurite" not in path.parts
        and re.search(r"from (tests\.)?conftest import [^\n]*\bSAMPLES\b", text := path.read_text())
        and "mark.corpus" not in text
    ]
    assert unmarked == []
