"""The numpy twin of the permutation kernels gives the compiled kernels' sums bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasdask.stats import permutation as perm
from biasdask.stats import permutation_numpy as twin


def _compiled_null(prep, start, stop):
    sums = np.empty((stop - start, 1))
    ks = np.empty(stop - start, dtype=np.int64)
    perm._null_sums(
        prep.values[None, :], prep.n_values, prep.k_min, prep.k_cdf, prep.entropy, start, stop, 16, sums, ks
    )
    return sums[:, 0], ks


def _prep(rng, n_x, n_y, zeros, seed, offset=0.0):
    x = rng.standard_normal(n_x) + offset
    y = rng.standard_normal(n_y) + offset
    if zeros:
        x[rng.random(n_x) < 0.4] = 0
        y[rng.random(n_y) < 0.6] = 0
    return perm.prepare_test(x, y, 999, "two-sided", seed)


@pytest.mark.parametrize(
    ("n_x", "n_y", "zeros", "seed"),
    [
        (8, 8, False, 1),  # WEAT size: random bits and fix-up
        (2, 60, False, 7),  # Floyd's algorithm (small subset)
        (60, 3, False, 7),  # Floyd on the complement
        (25, 25, True, 2**100 + 3),  # random k (zeros), a seed of more than four 32-bit words
        (70, 58, False, 5),  # two mask words, tail bits
        (1, 1, True, 0),
    ],
)
def test_null_sums_equal_the_kernel(n_x, n_y, zeros, seed):
    rng = np.random.default_rng(n_x * 1000 + n_y)
    prep = _prep(rng, n_x, n_y, zeros, seed, offset=1e3 if zeros else 0.0)
    expected = _compiled_null(prep, 13, 700)
    got = twin.null_sums(prep.values, prep.n_values, prep.k_min, prep.k_cdf, prep.entropy, 13, 700)
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[0].tobytes() == expected[0].tobytes()  # signed zeros too


def test_masked_sums_equal_the_kernel():
    rng = np.random.default_rng(3)
    for n in (1, 17, 64, 100, 128):
        values = np.zeros(-(-n // 64) * 64, dtype=np.float32)
        values[:n] = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
        masks = rng.integers(0, 2**63, size=(9, values.size // 64), dtype=np.uint64)
        masks[0] = 0
        expected = np.empty((9, 1))
        perm._masked_sums(values[None, :], masks, 9, expected)
        got = twin.masked_sums(values, twin.bits_of(masks, values.size))
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize(("n_x", "n_y", "n_zero_x"), [(4, 4, 0), (6, 6, 0), (5, 3, 2), (3, 3, 3), (1, 7, 0)])
def test_exact_sums_equal_the_kernel(n_x, n_y, n_zero_x):
    rng = np.random.default_rng(n_x + 10 * n_y)
    x = rng.standard_normal(n_x)
    x[:n_zero_x] = 0
    prep = perm.prepare_test(x, rng.standard_normal(n_y), 10**6, "two-sided", 1)
    lo = max(0, prep.n_x - prep.n_zero)
    ks = np.arange(lo, min(prep.n_values, prep.n_x) + 1, dtype=np.int64)
    count = sum(math.comb(prep.n_values, int(k)) for k in ks)
    sums = np.empty((count, 1))
    sub_k = np.empty(count, dtype=np.int64)
    perm._exact_sums(prep.values[None, :], prep.n_values, ks, 16, sums, sub_k)
    got_sums, got_k = twin.exact_sums(prep.values, prep.n_values, ks)
    np.testing.assert_array_equal(got_k, sub_k)
    assert got_sums.tobytes() == sums.tobytes()


def test_public_results_identical_on_either_path(monkeypatch):
    """permutation_test_local through numpy (as in a fresh process) and through the compiled kernel."""
    rng = np.random.default_rng(11)
    cases = [
        (rng.standard_normal(8), rng.standard_normal(8), 9999),
        (rng.standard_normal(6), rng.standard_normal(6), 9999),
    ]
    cases.append((np.r_[rng.standard_normal(10), np.zeros(5)], 12, 2000))
    for x, y, m in cases:
        monkeypatch.setattr(twin, "use_numpy", lambda n_values, n_sums, kernel: True)
        a = perm.permutation_test_local(x, y, m, seed=5, return_null=True)
        monkeypatch.setattr(twin, "use_numpy", lambda n_values, n_sums, kernel: False)
        b = perm.permutation_test_local(x, y, m, seed=5, return_null=True)
        assert a.exact == b.exact
        assert (a.statistic, a.p_value, a.null_distribution.tobytes()) == (
            b.statistic,
            b.p_value,
            b.null_distribution.tobytes(),
        )


def test_numpy_only_while_the_kernel_is_not_loaded():
    class Kernel:
        signatures: list = []

    assert twin.use_numpy(16, 9999, Kernel)
    assert not twin.use_numpy(twin.MAX_VALUES + 1, 9999, Kernel)
    assert not twin.use_numpy(16, twin.MAX_SUMS + 1, Kernel)
    Kernel.signatures = ["(float32[::1],)"]
    assert not twin.use_numpy(16, 9999, Kernel)
