"""Effect size (ddof = 1) and closed-form null moments against numpy and brute-force oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from biasdask.stats.effect import effect_size, null_moments, pool_variance


def _numpy_effect(u_x: np.ndarray, u_y: np.ndarray) -> float:
    both = np.concatenate([u_x, u_y])
    return (u_x.mean() - u_y.mean()) / both.std(ddof=1)


@pytest.mark.parametrize("n_x, n_y, shift", [(5, 7, 0.3), (40, 40, -1.2), (3, 200, 2.0)])
def test_effect_size_matches_numpy_ddof1(n_x, n_y, shift):
    rng = np.random.default_rng(n_x * 1000 + n_y)
    u_x = rng.normal(shift, 1.0, n_x)
    u_y = rng.normal(0.0, 2.0, n_y)
    assert effect_size(u_x, u_y) == pytest.approx(_numpy_effect(u_x, u_y), rel=1e-12)


def test_effect_size_dummy_zeros_are_not_materialised_but_equal():
    rng = np.random.default_rng(1)
    u_x = rng.normal(0.05, 0.1, 1000) + 1e3  # large mean: needs the two-pass variance
    assert effect_size(u_x, 1000) == pytest.approx(_numpy_effect(u_x, np.zeros(1000)), rel=1e-10)
    assert effect_size(u_x, np.int64(7)) == pytest.approx(_numpy_effect(u_x, np.zeros(7)), rel=1e-10)


def test_effect_size_is_not_the_population_sd_version():
    u_x, u_y = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5])
    both = np.concatenate([u_x, u_y])
    ddof0 = (u_x.mean() - u_y.mean()) / both.std(ddof=0)
    assert effect_size(u_x, u_y) != pytest.approx(ddof0)
    assert effect_size(u_x, u_y) == pytest.approx(ddof0 * math.sqrt(4 / 5))


def test_effect_size_degenerate_is_nan():
    assert math.isnan(effect_size(np.ones(3), np.ones(4)))
    assert math.isnan(effect_size(np.zeros(3), 4))


def test_pool_variance_with_zeros():
    v = np.array([1.0, 5.0, -2.0, 7.5])
    mean, var = pool_variance(v, 6)
    full = np.concatenate([v, np.zeros(6)])
    assert mean == pytest.approx(full.mean())
    assert var == pytest.approx(full.var(ddof=0))


@pytest.mark.parametrize(
    "pool, n_zero, n_x",
    [
        ([0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 3.0, 0.2], 0, 3),
        ([0.3, -1.2, 2.5, 0.7, 1.1], 4, 5),  # dummy zeros, |X| = |Y|
        ([1.0, 2.0, 3.0], 6, 2),
    ],
)
def test_null_moments_equal_enumeration_of_all_splits(pool, n_zero, n_x):
    """Mean and SD of s over every split, brute force, equal the closed form."""
    items = np.concatenate([np.asarray(pool, dtype=np.float64), np.zeros(n_zero)])
    m = items.size
    n_y = m - n_x
    total = items.sum()
    s = np.array([2 * items[list(c)].sum() - total for c in itertools.combinations(range(m), n_x)])
    mean, sd = null_moments(pool, n_zero, n_x, n_y)
    assert mean == pytest.approx(s.mean(), abs=1e-12)
    assert sd == pytest.approx(s.std(ddof=0), rel=1e-12)


def test_null_moments_reject_inconsistent_sizes():
    with pytest.raises(ValueError, match="n_x \\+ n_y"):
        null_moments([1.0, 2.0], 0, 2, 2)


@pytest.mark.parametrize("value", [0.1, 0.7, 2.2, 1e6 + 0.1, 1 / 3])
@pytest.mark.parametrize("n", [3, 5, 7, 10])
def test_constant_pool_effect_size_is_always_nan(value, n):
    """All items equal: d is NaN, whatever the rounding of the mean (main gave 0.0, NaN or ±0.93)."""
    assert math.isnan(effect_size(np.full(n, value), np.full(n + 1, value)))
    mean, var = pool_variance(np.full(n, value))
    assert var == 0.0 and mean == value
    assert null_moments(np.full(2 * n, value), 0, n, n)[1] == 0.0
