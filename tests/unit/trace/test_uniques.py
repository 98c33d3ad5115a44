"""``trace/uniques.py`` gives numpy's ``np.unique`` and ``np.percentile`` results, bit for bit, and imports
no ``numpy.ma`` (the reason it exists)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tb_plugin.trace.uniques import median, percentile, setdiff, unique_values


def _same(ours: object, theirs: object) -> None:
    """Equal dtype, shape and bytes (so -0.0 against 0.0 and NaN payloads count)."""
    a, b = np.asarray(ours), np.asarray(theirs)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert a.tobytes() == b.tobytes()
    assert type(ours) is type(theirs)


def _arrays(rng: np.random.Generator) -> list[np.ndarray]:
    """Integer arrays of narrow and wide spans (both paths), negatives and -1 sentinels, floats with
    duplicates, signed zeros, infinities and NaNs, other dtypes, empty and one-element arrays."""
    out: list[np.ndarray] = [
        np.zeros(0, dtype=np.int32),
        np.zeros(0),
        np.array([7], dtype=np.int64),
        np.array([-1, -1, 3, 0, 3, -1], dtype=np.int32),
        np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max, 0], dtype=np.int64),
        np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, 5], dtype=np.int32),
        np.array([0.0, -0.0, 1.0, -0.0, 0.0]),
        np.array([-0.0, 0.0]),
        np.array([np.nan, 1.0, np.nan, -np.inf, np.inf, 2.0]),
        np.array([np.nan, np.nan]),
        np.array([3, 1, 3, 2], dtype=np.uint8),
        np.array([True, False, True]),
        np.array(["b", "a", "b"]),
        np.arange(12, dtype=np.int16).reshape(3, 4) % 5,
    ]
    for n in (1, 2, 3, 10, 101, 5000):
        out.append(rng.integers(-1, 40, n).astype(np.int32))  # name ids with the -1 sentinel
        out.append(rng.integers(0, 10**12, n))  # a wide span: the sort
        out.append(rng.integers(-50, 50, n).astype(np.float64) / 4)  # float duplicates
        out.append(rng.exponential(30.0, n))  # durations (µs)
        out.append(rng.exponential(30.0, n).astype(np.float32))
        zeros = np.where(rng.random(n) < 0.5, 0.0, -0.0)
        zeros[rng.random(n) < 0.1] = np.nan
        out.append(zeros)
    return out


def test_unique_values_is_numpys_unique():
    for a in _arrays(np.random.default_rng(3)):
        _same(unique_values(a), np.unique(a))


def test_setdiff_is_numpys_setdiff1d():
    arrays = _arrays(np.random.default_rng(5))
    for a, b in zip(arrays, arrays[1:] + arrays[:1]):
        if a.dtype.kind in "iuf" and b.dtype.kind in "iuf":
            _same(setdiff(a, b), np.setdiff1d(a, b))
            _same(setdiff(a, a[: len(a) // 2]), np.setdiff1d(a, a[: len(a) // 2]))


def test_unique_values_of_a_list_and_leaves_its_input_alone():
    values = [5, 3, 5, -1]
    _same(unique_values(values), np.unique(values))
    a = np.array([3.0, 1.0, 3.0])
    unique_values(a)
    assert a.tolist() == [3.0, 1.0, 3.0]


@pytest.mark.parametrize("q", [0, 1, 5, 25, 33.3, 50, 66.7, 95, 99, 99.9, 100, 50.0, 95.0])
def test_percentile_is_numpys_percentile(q):
    for a in _arrays(np.random.default_rng(4)):
        if a.size == 0 or a.dtype.kind not in "iuf":
            continue
        _same(percentile(a, q), np.percentile(a, q))


def test_median_is_numpys_median():
    for a in _arrays(np.random.default_rng(6)):
        if a.size and a.dtype.kind in "iuf":
            _same(median(a), np.median(a))


def test_percentile_leaves_its_input_alone():
    a = np.array([5.0, 1.0, 3.0, 2.0])
    assert float(percentile(a, 50)) == 2.5
    assert a.tolist() == [5.0, 1.0, 3.0, 2.0]


def test_neither_imports_numpy_ma():
    code = (
        "import sys, numpy as np\n"
        "from tb_plugin.trace.uniques import median, percentile, setdiff, unique_values\n"
        "unique_values(np.array([3, 1, 3])); unique_values(np.array([0.5, np.nan, 0.5]))\n"
        "percentile(np.arange(10.0), 95); percentile(np.arange(10), 50)\n"
        "median(np.array([3.0, 1.0, np.nan])); median(np.arange(4.0));"
        " setdiff(np.array([3.0, 1.0]), np.array([1.0])); setdiff(np.array([3, 1]), np.array([1]))\n"
        "assert 'numpy.ma' not in sys.modules, 'imported'\n"
        "np.unique(np.array([3, 1, 3]))\n"
        "print('numpy.ma' in sys.modules)\n"  # the check can fail: numpy's own unique imports it
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
