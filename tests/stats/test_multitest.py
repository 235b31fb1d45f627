"""Holm, Benjamini-Hochberg and Benjamini-Yekutieli against statsmodels and scipy; the permutation bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from biasdask.stats.multitest import adjust_pvalues, first_threshold, min_permutations

SM_NAMES = {"holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}


def _pvalues(rng, m):
    """A mix of null and strong effects, with ties and exact 0 and 1."""
    p = np.concatenate([rng.uniform(size=m - m // 4), rng.uniform(0, 1e-3, size=m // 4)])
    p[:3] = [0.0, 1.0, p[5]]
    return rng.permutation(p)


@pytest.mark.parametrize("method", ["holm", "bh", "by"])
@pytest.mark.parametrize("m", [1, 2, 7, 26, 500])
def test_matches_statsmodels(method, m):
    from statsmodels.stats.multitest import multipletests

    p = _pvalues(np.random.default_rng(m), m) if m > 2 else np.array([0.02, 0.5][:m])
    expected = multipletests(p, method=SM_NAMES[method])[1]
    assert adjust_pvalues(p, method=method) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("method", ["bh", "by"])
def test_matches_scipy_false_discovery_control(method):
    p = _pvalues(np.random.default_rng(4), 60)
    assert adjust_pvalues(p, method=method) == pytest.approx(false_discovery_control(p, method=method), rel=1e-12)


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert adjust_pvalues([0.04, 0.01, 0.03], method="holm").tolist() == pytest.approx([0.06, 0.03, 0.06])


@pytest.mark.parametrize("method", ["holm", "bh", "by"])
def test_nan_stays_nan_and_does_not_count_in_the_family(method):
    from statsmodels.stats.multitest import multipletests

    p = _pvalues(np.random.default_rng(9), 26)
    with_nan = np.insert(p, [0, 5, 26], np.nan)
    got = adjust_pvalues(with_nan, method=method)
    assert np.isnan(got[[0, 6, 28]]).all()
    finite = ~np.isnan(with_nan)
    assert got[finite] == pytest.approx(multipletests(p, method=SM_NAMES[method])[1], rel=1e-12, abs=1e-15)
    assert np.isnan(adjust_pvalues([np.nan, np.nan], method=method)).all()
    assert adjust_pvalues(np.empty(0), method=method).shape == (0,)


@pytest.mark.parametrize("method", ["holm", "bh", "by"])
def test_any_shape_is_one_family(method):
    p = _pvalues(np.random.default_rng(2), 24).reshape(2, 3, 4)
    p[1, 2, 3] = np.nan
    got = adjust_pvalues(p, method=method)
    assert got.shape == (2, 3, 4)
    flat = adjust_pvalues(p.ravel(), method=method).reshape(2, 3, 4)
    np.testing.assert_array_equal(got, flat)


@pytest.mark.parametrize("method", ["holm", "bh", "by"])
def test_monotone_bounded_and_not_below_p(method):
    p = _pvalues(np.random.default_rng(11), 200)
    adj = adjust_pvalues(p, method=method)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj <= 1.0) and np.all(adj >= p)


@pytest.mark.parametrize(
    "bad, error", [([0.1, 1.5], ValueError), ([-0.1], ValueError), ([np.inf], ValueError), (["0.1"], TypeError)]
)
def test_bad_pvalues_are_refused(bad, error):
    with pytest.raises(error):
        adjust_pvalues(bad)


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="holm, bh, by"):
        adjust_pvalues([0.1], method="bonferroni")


def test_first_threshold():
    assert first_threshold(26, 0.05) == pytest.approx(0.05 / 26, rel=1e-15)
    assert first_threshold(26, 0.05, "bh") == pytest.approx(0.05 / 26, rel=1e-15)
    c = sum(1 / i for i in range(1, 27))
    assert first_threshold(26, 0.05, "by") == pytest.approx(0.05 / (26 * c), rel=1e-14)


@pytest.mark.parametrize(
    "k, alpha, method, n",
    [
        (26, 0.05, "holm", 519),
        (1, 0.05, "holm", 19),
        (10, 0.01, "bh", 999),
        (26, 0.05, "by", 2004),
        (3, 0.05, "holm", 59),
    ],
)
def test_min_permutations_is_the_smallest_that_reaches_the_threshold(k, alpha, method, n):
    assert min_permutations(k, alpha, method) == n
    t = first_threshold(k, alpha, method)
    # the smallest sampled p with n permutations passes the first threshold, with n - 1 it does not
    smallest = lambda m: 1 / (m + 1)  # noqa: E731
    assert smallest(n) <= t * (1 + 1e-12)
    assert smallest(n - 1) > t
    # and with n permutations a p of 1/(n + 1) survives Holm's correction in a family where it stands alone
    if method == "holm":
        p = np.full(k, 0.9)
        p[0] = 1 / (n + 1)
        assert adjust_pvalues(p)[0] <= alpha + 1e-15
        p[0] = 1 / n
        assert adjust_pvalues(p)[0] > alpha


@pytest.mark.parametrize(
    "args, error",
    [
        ((0, 0.05), ValueError),
        ((26, 1.0), ValueError),
        ((26, 0), ValueError),
        ((2.5, 0.05), TypeError),
        ((True, 0.05), TypeError),
        ((26, "a"), TypeError),
    ],
)
def test_family_arguments_are_checked(args, error):
    with pytest.raises(error):
        min_permutations(*args)
    with pytest.raises(error):
        first_threshold(*args)


def test_min_permutations_uses_exact_arithmetic():
    # in binary floating point 1/(0.01/73) is a hair above 7300, which would ask for one permutation too many
    assert math.ceil(1 / (0.01 / 73)) - 1 == 7300
    assert min_permutations(73, 0.01) == 7299
    assert 1 / 7300 == pytest.approx(0.01 / 73, rel=1e-15)
