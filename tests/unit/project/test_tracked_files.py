"""What the repository tracks: no symbolic link (a worktree's link to a shared install, once committed,
made every clone's setup fail with ELOOP) and none of the folders the setup installs into."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INSTALLED = ("tests/.azurite", "frontend/node_modules")  # filled by run_tests.sh's setup, never committed


def _tracked() -> list[tuple[str, str]]:
    """(mode, path) of every file git tracks here."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [(line.split()[0], line.split("\t", 1)[1]) for line in out.splitlines()]


def test_no_symbolic_link_is_tracked():
    links = [path for mode, path in _tracked() if mode == "120000"]
    assert links == []


def test_no_installed_folder_is_tracked():
    tracked = [path for _, path in _tracked() if any(path == d or path.startswith(d + "/") for d in INSTALLED)]
    assert tracked == []
