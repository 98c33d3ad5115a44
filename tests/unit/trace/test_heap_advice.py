"""The processes Kinetoscope owns ask numpy for no huge-page advice (trace/heap.py,
``no_huge_page_advice``): whether numpy was imported before ``tune_allocator`` or after, and never
against a user's own ``NUMPY_MADVISE_HUGEPAGE``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

CODE = r"""
import sys
sys.path.insert(0, sys.argv[1])
mode = sys.argv[2]
if mode == "numpy first":
    import numpy
from tb_plugin.trace import heap
if mode != "untuned":
    heap.tune_allocator()
import numpy as np
core = getattr(np, "_core", None) or np.core
print(core.multiarray._get_madvise_hugepage())
"""


def _advice(mode: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run(
        [sys.executable, "-c", CODE, REPO, mode], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy advises huge pages on Linux only")
def test_tuned_processes_ask_numpy_for_no_huge_page_advice():
    if _advice("untuned") != "True":
        pytest.skip("numpy gives no huge-page advice here by default (old kernel or numpy)")
    assert _advice("numpy first") == "False"  # told through numpy's switch
    assert _advice("numpy after") == "False"  # told through the variable numpy reads at its import


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy advises huge pages on Linux only")
def test_a_users_own_choice_is_kept():
    assert _advice("numpy first", NUMPY_MADVISE_HUGEPAGE="1") == "True"
    assert _advice("numpy after", NUMPY_MADVISE_HUGEPAGE="1") == "True"
