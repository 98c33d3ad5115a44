"""The timeline's band choice (:func:`~tb_plugin.analysis.snapshot.largest_first_met`): the same set, and
the same largest size left out, as a stable sort by size, largest first, would give (ties: the first met)."""

from __future__ import annotations

import numpy as np
import pytest

from tb_plugin.analysis.snapshot import largest_first_met


def _by_stable_sort(sizes: np.ndarray, k: int) -> tuple[list[int], int | None]:
    by_size = np.argsort(-sizes, kind="stable")
    left = by_size[k:]
    return sorted(by_size[:k].tolist()), (int(sizes[left].max()) if len(left) else None)


@pytest.mark.parametrize("seed", range(12))
def test_the_k_largest_first_met_are_a_stable_sorts_first(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    sizes = rng.integers(0, [3, 50, 1 << 40][seed % 3], size=n, dtype=np.int64)  # many ties, some, none
    for k in (0, 1, 2, 7, 200, n - 1, n, n + 1):
        if k < 0:
            continue
        places, left_max = largest_first_met(sizes.copy(), k)
        assert (places.tolist(), left_max) == _by_stable_sort(sizes, k)


def test_all_equal_sizes_take_the_first_met():
    places, left_max = largest_first_met(np.full(10, 5, dtype=np.int64), 3)
    assert places.tolist() == [0, 1, 2] and left_max == 5
    places, left_max = largest_first_met(np.array([1, 9, 9, 3, 9], dtype=np.int64), 2)
    assert places.tolist() == [1, 2] and left_max == 9
    places, left_max = largest_first_met(np.array([1, 9, 8, 3, 9], dtype=np.int64), 2)
    assert places.tolist() == [1, 4] and left_max == 8
