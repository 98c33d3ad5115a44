"""`./run_tests.sh` sets itself up: its dry run says what is present and what it
would install, without installing or running anything, and `.ci/run` calls exactly that command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# each test runs ./run_tests.sh in a subprocess, whose setup check imports every test package: end to end
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]


def _dry(tmp_path, **env):
    full = dict(os.environ, **env)
    return subprocess.run(
        ["bash", str(ROOT / "run_tests.sh"), "--setup-dry-run"], capture_output=True, text=True, env=full, timeout=120
    )


def test_script_parses():
    assert subprocess.run(["bash", "-n", str(ROOT / "run_tests.sh")]).returncode == 0
    assert subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")]).returncode == 0


# what the test runner itself writes at the root, maybe while this test runs (another pytest-xdist process)
RUNNER_CACHES = {".pytest_cache", ".hypothesis", ".benchmarks", ".mypy_cache"}


def _root_entries() -> list[str]:
    return sorted(p.name for p in ROOT.iterdir() if p.name not in RUNNER_CACHES)


def test_dry_run_names_every_prerequisite_and_changes_nothing(tmp_path):
    before = _root_entries()
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    azurite = tmp_path / "az" / "node_modules" / ".bin"
    azurite.mkdir(parents=True)
    (azurite / "azurite-blob").write_text("#!/bin/sh\n")
    (azurite / "azurite-blob").chmod(0o755)
    done = _dry(tmp_path, KINETOSCOPE_CHROMIUM=str(fake), KINETOSCOPE_AZURITE_DIR=str(tmp_path / "az"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "== setup: install what is missing"
    assert "setup: present: python test extras .[test,s3,gcs,azure,dask]" in lines  # this machine has them
    assert f"setup: present: chromium at {fake}" in lines
    assert f"setup: present: azurite in {tmp_path / 'az'}" in lines
    assert any(line.startswith(("setup: present: node ", "setup: would install nodejs")) for line in lines)
    assert any("frontend/node_modules" in line for line in lines)
    assert "==" not in "".join(lines[1:])  # no test stage ran
    assert _root_entries() == before


def test_missing_chromium_is_installed_as_root_or_named_otherwise(tmp_path):
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "id").write_text("#!/bin/sh\necho 1000\n")  # not root
    (shim / "id").chmod(0o755)
    done = _dry(tmp_path, KINETOSCOPE_CHROMIUM=str(tmp_path / "none"), PATH=f"{shim}:{os.environ['PATH']}")
    assert done.returncode == 0
    assert "setup: missing chromium: run as root on Debian/Ubuntu, or: sudo apt-get install chromium" in done.stdout
    if os.geteuid() == 0 and subprocess.run(["sh", "-c", "command -v apt-get"], capture_output=True).returncode == 0:
        done = _dry(tmp_path, KINETOSCOPE_CHROMIUM=str(tmp_path / "none"))
        assert (
            "setup: would install chromium: sh -c apt-get update -qq && apt-get install -y -qq chromium" in done.stdout
        )


def test_ci_calls_the_readme_command():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == "./run_tests.sh"
    assert not any("pip install" in c or "azurite" in c or "chromium" in c for c in commands)
    assert "./run_tests.sh" in (ROOT / "README.md").read_text()
