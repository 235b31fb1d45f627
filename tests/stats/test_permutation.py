"""The compiled permutation kernel: RNG, uniform splits, exact and sampled p-values, normal approximation.

Oracles: numpy's SeedSequence, a pure-Python xoshiro256**, exact combinatorics, brute-force enumeration
in exact (Fraction) arithmetic, scipy.stats.permutation_test / hypergeom / kstest / chisquare.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from biasdask.stats import permutation as perm
from biasdask.stats import rng as prng
from biasdask.stats.permutation import (
    PermutationTestResult,
    hypergeometric_cdf,
    null_batch,
    permutation_test_local,
    prepare_test,
)

# ---------------------------------------------------------------------------------------------
# Random numbers


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32, 2**64 + 7, 2**200 + 3])
def test_seed_state_is_numpy_seedsequence_child(seed):
    _, entropy = perm._seed_entropy(seed)
    pool = np.empty(4, dtype=np.uint64)
    out = np.empty(4, dtype=np.uint64)
    children = np.random.SeedSequence(seed).spawn(3)
    for i in (0, 1, 2, 999, 2**32 + 5):
        prng.seed_state(entropy, i, pool, out)
        expected = np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(4, np.uint64)
        np.testing.assert_array_equal(out, expected)
        if i < 3:
            np.testing.assert_array_equal(out, children[i].generate_state(4, np.uint64))


def _xoshiro_reference(state: list[int], n: int) -> list[int]:
    """xoshiro256** as published by Blackman & Vigna (prng.di.unimi.it/xoshiro256starstar.c)."""
    mask = 2**64 - 1

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & mask

    s = list(state)
    out = []
    for _ in range(n):
        out.append(rotl((s[1] * 5) & mask, 7) * 9 & mask)
        t = (s[1] << 17) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_xoshiro256starstar_matches_reference():
    s = np.array([1, 2, 3, 4], dtype=np.uint64)
    got = [int(prng.next_u64(s)) for _ in range(6)]
    assert got[:4] == [11520, 0, 1509978240, 1215971899390074240]
    assert got == _xoshiro_reference([1, 2, 3, 4], 6)
    state = [0x0123456789ABCDEF, 0xFEDCBA9876543210, 0xDEADBEEFCAFEBABE, 0x0F1E2D3C4B5A6978]
    s = np.array(state, dtype=np.uint64)
    assert [int(prng.next_u64(s)) for _ in range(100)] == _xoshiro_reference(state, 100)


def test_bounded_integers_are_uniform_and_in_range():
    s = np.array(np.random.SeedSequence(7).generate_state(4, np.uint64))
    draws = np.array([prng.bounded(s, 6) for _ in range(30000)])
    assert draws.min() == 0 and draws.max() == 5
    assert stats.chisquare(np.bincount(draws, minlength=6)).pvalue > 1e-3
    # For this range a quarter of the raw draws are rejected, exercising the rejection loop.
    r = 2**31 + 2**30 + 1
    draws = np.array([prng.bounded(s, r) for _ in range(20000)])
    assert draws.min() >= 0 and draws.max() < r
    assert stats.chisquare(np.bincount(draws * 8 // r, minlength=8)).pvalue > 1e-3
    assert max(prng.bounded(s, 2**32) for _ in range(200)) > 2**31


@pytest.mark.parametrize("population, successes, draws", [(20, 7, 12), (50, 25, 25), (1000, 600, 500), (100, 3, 90)])
def test_hypergeometric_table_matches_scipy(population, successes, draws):
    k_min, cdf = hypergeometric_cdf(population, successes, draws)
    ks = np.arange(k_min, k_min + cdf.size)
    expected = stats.hypergeom.cdf(ks, population, successes, draws)
    np.testing.assert_allclose(cdf, expected, rtol=1e-10, atol=1e-25)
    assert cdf[-1] == 1.0
    # Everything cut from the table is negligible.
    assert stats.hypergeom.cdf(k_min - 1, population, successes, draws) < 1e-25


def test_hypergeometric_table_large_population_is_normalised():
    k_min, cdf = hypergeometric_cdf(4_000_000, 2_000_000, 2_000_000)
    assert cdf[-1] == 1.0 and np.all(np.diff(cdf) >= 0)
    median = k_min + np.searchsorted(cdf, 0.5)
    assert abs(median - 1_000_000) <= 1
    assert cdf.size < 50_000  # trimmed to the mass that matters (sd = 500)


# ---------------------------------------------------------------------------------------------
# Uniform splits: pools of distinct powers of two, so each s identifies its split exactly.


def _subset_ids(prep, m: int) -> np.ndarray:
    s = null_batch(prep, 0, m)
    # Σ_{X_i} of nonzero items: an integer for powers of two, up to the float32 rounding of the
    # centred residuals.
    sums = (s + prep.total + prep.n_values * prep.centre) / 2
    assert np.all(np.abs(sums - np.round(sums)) < 1e-3)
    return np.round(sums).astype(np.int64)


def _chisquare_over_subsets(ids: np.ndarray, expected: dict[int, float]) -> float:
    observed = np.array([np.count_nonzero(ids == key) for key in expected])
    assert observed.sum() == ids.size, "a split outside the support was drawn"
    exp = np.array(list(expected.values())) * ids.size
    return stats.chisquare(observed, exp).pvalue


@pytest.mark.parametrize("n_x", [5, 2, 8])
def test_splits_are_uniform(n_x):
    """All C(10, n_x) splits of 10 values, each drawn equally often (bits path at 5, Floyd at 2 and 8)."""
    values = (2.0 ** np.arange(10)).astype(np.float32)
    prep = prepare_test(values[:n_x], values[n_x:], n_permutations=10, seed=11)
    assert not prep.exact and prep.k_cdf.size == 1
    assert bool(prng.use_floyd(10, n_x)) == (n_x != 5)
    n_splits = math.comb(10, n_x)
    ids = _subset_ids(prep, n_splits * 200)
    uniform = {sum(2**j for j in c): 1 / n_splits for c in itertools.combinations(range(10), n_x)}
    assert _chisquare_over_subsets(ids, uniform) > 1e-3


def test_dummy_splits_are_uniform():
    """Zeros in X and Y: hypergeometric k, then a uniform k-subset of the 10 nonzero values."""
    values = (2.0 ** np.arange(10)).astype(np.float32)
    x = np.concatenate([values[:5], [0, 0]])
    y = np.concatenate([values[5:], [0, 0]])
    prep = prepare_test(x, y, n_permutations=10, seed=12)
    assert prep.n_values == 10 and prep.n_zero == 4 and prep.k_cdf.size == 5
    total = math.comb(14, 7)
    expected = {}
    for k in range(3, 8):
        for c in itertools.combinations(range(10), k):
            expected[sum(2**j for j in c)] = math.comb(4, 7 - k) / total
    assert sum(expected.values()) == pytest.approx(1.0)
    ids = _subset_ids(prep, total * 50)
    assert _chisquare_over_subsets(ids, expected) > 1e-3


def test_dummy_language_splits_are_uniform():
    """y given as a count of dummy zeros (the full-vocabulary test): |X| = 6 real values, |Y| = 4 zeros."""
    values = (2.0 ** np.arange(6)).astype(np.float32)
    prep = prepare_test(values, 4, n_permutations=10, seed=13)
    total = math.comb(10, 6)
    expected = {}
    for k in range(2, 7):
        for c in itertools.combinations(range(6), k):
            expected[sum(2**j for j in c)] = math.comb(4, 6 - k) / total
    ids = _subset_ids(prep, total * 200)
    assert _chisquare_over_subsets(ids, expected) > 1e-3


# ---------------------------------------------------------------------------------------------
# Exact enumeration against brute force in exact arithmetic


def _brute_force(x, y, alternative):
    """p-value and every split's s, enumerating index combinations of the materialised pool."""
    items = [Fraction(float(v)) for v in np.concatenate([np.asarray(x, np.float32), np.asarray(y, np.float32)])]
    n_x = len(x)
    m = len(items)
    total = sum(items)
    observed = 2 * sum(items[:n_x]) - total
    mean = Fraction(n_x - (m - n_x), m) * total
    splits = []
    for c in itertools.combinations(range(m), n_x):
        splits.append(2 * sum(items[j] for j in c) - total)
    if alternative == "greater":
        hits = sum(s >= observed for s in splits)
    elif alternative == "less":
        hits = sum(s <= observed for s in splits)
    else:
        hits = sum(abs(s - mean) >= abs(observed - mean) for s in splits)
    return hits / len(splits), sorted(float(s) for s in splits)


EXACT_CASES = {
    "floats": (np.array([0.31, -1.2, 2.5, 0.77, 1.1, -0.4]), np.array([0.2, 0.9, -0.6, 1.4, -2.2])),
    "ties": (np.array([1.0, 2.0, 2.0, 3.0, 0.0]), np.array([2.0, 1.0, 0.0, 3.0, 1.0, 2.0])),
    "zeros-in-both": (np.array([0.5, 0.0, 1.5, -0.25, 0.0]), np.array([0.0, 0.75, -1.0, 0.0])),
}


@pytest.mark.parametrize("case", sorted(EXACT_CASES))
@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_exact_pvalue_equals_brute_force(case, alternative):
    x, y = (v.astype(np.float32) for v in EXACT_CASES[case])  # stored exactly: no centring
    res = permutation_test_local(x, y, n_permutations=10**6, alternative=alternative, return_null=True)
    p, splits = _brute_force(x, y, alternative)
    assert res.exact and res.n_permutations == math.comb(len(x) + len(y), len(x))
    assert res.p_value == float(p)
    np.testing.assert_allclose(np.sort(res.null_distribution), splits, rtol=0, atol=1e-12)


def test_exact_dummy_count_equals_brute_force():
    x = np.array([0.5, -0.2, 1.25, 0.0, 0.75], dtype=np.float32)
    for alternative in ("greater", "less", "two-sided"):
        res = permutation_test_local(x, 4, n_permutations=200, alternative=alternative, return_null=True)
        p, splits = _brute_force(x, np.zeros(4), alternative)
        assert res.exact and res.n_permutations == 126 and res.null_distribution.size == 126
        assert res.p_value == float(p)
        np.testing.assert_allclose(np.sort(res.null_distribution), splits, atol=1e-12)


def test_pvalue_rules():
    null = np.array([1.0, 2.0, 3.0, 4.0, -2.0])
    # Sampled: (1 + #{at least as extreme}) / (m + 1), never 0.
    assert perm.permutation_pvalue(null, 3.0, "greater", 0.0, 0.0) == (1 + 2) / 6
    assert perm.permutation_pvalue(null, 3.0, "less", 0.0, 0.0) == (1 + 4) / 6
    assert perm.permutation_pvalue(null, 9.0, "greater", 0.0, 0.0) == 1 / 6
    # Two-sided compares distances from the null mean E, not |s|.
    assert perm.permutation_pvalue(null, 3.0, "two-sided", 1.0, 0.0) == (1 + 3) / 6  # |-2 - 1|, |4 - 1|, |3 - 1|
    # Enumerated: weighted share of the splits, the observed one included.
    weights = np.array([1, 1, 2, 1, 3])
    assert perm.permutation_pvalue(null, 3.0, "greater", 0.0, 0.0, weights) == 3 / 8
    # Ties within the tolerance count as at least as extreme; beyond it they do not.
    assert perm.permutation_pvalue(np.array([3.0 - 1e-13]), 3.0, "greater", 0.0, 1e-12) == 1.0
    assert perm.permutation_pvalue(np.array([3.0 - 1e-11]), 3.0, "greater", 0.0, 1e-12) == 0.5


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_an_undefined_statistic_has_an_undefined_p_value(alternative):
    # NaN compares false with every s_i: counted as "nothing at least as extreme" it would give the
    # smallest p, 1/(m + 1) sampled and 0 enumerated
    null = np.array([1.0, 2.0, 3.0, np.nan])
    assert math.isnan(perm.permutation_pvalue(null, math.nan, alternative, 2.0, 0.0))
    assert math.isnan(perm.permutation_pvalue(null, math.nan, alternative, 2.0, 0.0, np.ones(4, dtype=np.int64)))
    assert all(math.isnan(v) for v in perm.normal_pvalue(math.nan, 0.0, 1.0, alternative))
    assert all(math.isnan(v) for v in perm.normal_pvalue(1.0, math.nan, 1.0, alternative))


def test_two_sided_needs_a_defined_centre():
    null = np.array([1.0, 2.0, 3.0])
    assert math.isnan(perm.permutation_pvalue(null, 1.0, "two-sided", math.nan, 0.0))
    assert perm.permutation_pvalue(null, 1.0, "greater", math.nan, 0.0) == 1.0  # one-sided needs no centre
    with pytest.raises(ValueError, match="alternative"):
        perm.permutation_pvalue(null, math.nan, "auto", 2.0, 0.0)


def test_finish_test_gives_nan_p_and_z_for_a_nan_statistic():
    prep = dataclasses.replace(
        perm.prepare_test(np.array([1.0, 2.0, 3.0]), 3, 20, "greater", seed=1), statistic=math.nan
    )
    res = perm.finish_test(prep, perm.null_batch(prep, 0, 20))
    assert math.isnan(res.p_value) and math.isnan(res.z_score) and math.isnan(res.p_value_normal)
    null, weights = perm.exact_null(prep)
    assert math.isnan(perm.finish_test(prep, null, weights).p_value)


def test_exact_switches_on_at_the_number_of_splits():
    x, y = np.arange(1.0, 6.0), np.arange(6.0, 10.0)  # C(9, 5) = 126
    assert permutation_test_local(x, y, n_permutations=126, seed=1).exact
    assert not permutation_test_local(x, y, n_permutations=125, seed=1).exact


def _scipy_p(x, y, alternative, n_resamples, rng):
    res = stats.permutation_test(
        (np.asarray(x, np.float64), np.asarray(y, np.float64)),
        lambda a, b, axis: a.sum(axis=axis) - b.sum(axis=axis),
        permutation_type="independent",
        vectorized=True,
        n_resamples=n_resamples,
        alternative=alternative,
        rng=rng,
    )
    return res.pvalue


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_exact_pvalue_equals_scipy_enumeration(alternative):
    rng = np.random.default_rng(3)
    x = rng.normal(0.4, 1.0, 5).astype(np.float32)
    y = rng.normal(0.0, 1.0, 6).astype(np.float32)
    ours = permutation_test_local(x, y, n_permutations=1000, alternative=alternative)
    assert ours.exact
    assert ours.p_value == pytest.approx(_scipy_p(x, y, alternative, 1000, 0), rel=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_sampled_pvalue_agrees_with_scipy(alternative):
    rng = np.random.default_rng(4)
    shift = 0.75 if alternative == "greater" else -0.75
    x = rng.normal(shift, 1.0, 12).astype(np.float32)
    y = rng.normal(0.0, 1.0, 14).astype(np.float32)
    m = 4999
    ours = permutation_test_local(x, y, n_permutations=m, alternative=alternative, seed=5)
    theirs = _scipy_p(x, y, alternative, m, 6)
    assert not ours.exact and ours.n_permutations == m
    assert 0.005 < theirs < 0.3  # a p-value where Monte Carlo error is meaningful
    se = math.sqrt(2 * theirs * (1 - theirs) / m)
    assert abs(ours.p_value - theirs) < 4 * se


# ---------------------------------------------------------------------------------------------
# Behaviour under the null and the closed-form moments


@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
@pytest.mark.parametrize("n_zero", [0, 15])
def test_pvalues_are_uniform_under_the_null(alternative, n_zero):
    """X a uniformly random split of a pool: the permutation p-value is uniform (KS test)."""
    rng = np.random.default_rng(8 + n_zero)
    m = 99
    pvalues = []
    for i in range(300):
        pool = np.concatenate([rng.standard_normal(15), np.zeros(n_zero)]).astype(np.float32)
        order = rng.permutation(pool.size)
        x, y = pool[order[:12]], pool[order[12:]]
        pvalues.append(permutation_test_local(x, y, n_permutations=m, alternative=alternative, seed=i).p_value)
    pvalues = np.array(pvalues)
    # (1 + b)/(m + 1) is uniform on {1/(m+1), ..., 1}; compare with the continuous uniform on
    # (0, 1] shifted by half a step.
    assert stats.kstest(pvalues - 0.5 / (m + 1), "uniform").pvalue > 1e-3


@pytest.mark.parametrize("dummy", [True, False])
def test_sampled_null_moments_match_closed_form(dummy):
    rng = np.random.default_rng(9)
    x = rng.gamma(2.0, 1.0, 500).astype(np.float32)
    y = 700 if dummy else rng.normal(0.5, 2.0, 300).astype(np.float32)
    m = 20000
    res = permutation_test_local(x, y, n_permutations=m, seed=10, return_null=True)
    null = res.null_distribution
    assert abs(null.mean() - res.null_mean) < 4 * res.null_std / math.sqrt(m)
    assert null.std() == pytest.approx(res.null_std, rel=0.03)
    n_x, n_y = x.size, (y if dummy else y.size)
    pool = np.concatenate([x, np.zeros(y) if dummy else y]).astype(np.float64)
    assert res.null_mean == pytest.approx((n_x - n_y) / (n_x + n_y) * pool.sum(), rel=1e-12)
    sd = math.sqrt(4 * n_x * n_y * pool.var() / (n_x + n_y - 1))
    assert res.null_std == pytest.approx(sd, rel=1e-12)


def test_statistic_effect_size_and_normal_approximation():
    rng = np.random.default_rng(11)
    x = rng.normal(0.1, 1.0, 300).astype(np.float32)
    y = rng.normal(0.0, 1.0, 250).astype(np.float32)
    res = permutation_test_local(x, y, n_permutations=500, alternative="greater", seed=1)
    assert res.statistic == pytest.approx(x.sum(dtype=np.float64) - y.sum(dtype=np.float64), rel=1e-12, abs=1e-9)
    both = np.concatenate([x, y]).astype(np.float64)
    assert res.effect_size == pytest.approx((x.mean(dtype=np.float64) - y.mean(dtype=np.float64)) / both.std(ddof=1))
    z = (res.statistic - res.null_mean) / res.null_std
    assert res.z_score == pytest.approx(z)
    assert res.p_value_normal == pytest.approx(stats.norm.sf(z))
    two = permutation_test_local(x, y, n_permutations=500, alternative="two-sided", seed=1)
    assert two.p_value_normal == pytest.approx(2 * stats.norm.sf(abs(z)))
    less = permutation_test_local(x, y, n_permutations=500, alternative="less", seed=1)
    assert less.p_value_normal == pytest.approx(stats.norm.cdf(z))


def test_auto_alternative_follows_the_sign_of_s():
    auto = dict(seed=1, alternative="auto")
    assert permutation_test_local([3.0, 2.0, 4.0], [1.0, 0.5, 0.2], **auto).alternative == "greater"
    assert permutation_test_local([-3.0, -2.0, -4.0], 3, **auto).alternative == "less"
    zero = permutation_test_local([1.0, -1.0], [2.0, -2.0], **auto)
    assert zero.statistic == 0 and zero.alternative == "two-sided" and zero.p_value == 1.0


def test_weighted_scores_use_the_unweighted_effect_size():
    t_x, u_x = np.array([0.5, 0.25, 0.1]), np.array([1.0, 0.5, 0.4])
    res = permutation_test_local(t_x, 3, effect_x=u_x, seed=1)
    both = np.concatenate([u_x, np.zeros(3)])
    assert res.effect_size == pytest.approx(u_x.mean() / both.std(ddof=1))
    assert res.statistic == pytest.approx(0.85)


# ---------------------------------------------------------------------------------------------
# Reproducibility and the dummy-language path


def test_null_is_bit_identical_whatever_the_batches_and_groups():
    rng = np.random.default_rng(12)
    prep = prepare_test(rng.standard_normal(3000).astype(np.float32), 2500, n_permutations=400, seed=99)
    whole = null_batch(prep, 0, 400)
    pieces = np.concatenate([null_batch(prep, a, b) for a, b in [(0, 1), (1, 37), (37, 250), (250, 400)]])
    np.testing.assert_array_equal(whole, pieces)
    for group in (1, 3, 64):
        np.testing.assert_array_equal(whole, null_batch(prep, 0, 400, group=group))
    assert np.unique(whole).size == whole.size


def test_same_seed_same_result_and_reported_seed_reproduces():
    x = np.random.default_rng(13).standard_normal(200).astype(np.float32)
    first = permutation_test_local(x, 150, n_permutations=300, return_null=True)
    again = permutation_test_local(x, 150, n_permutations=300, seed=first.seed, return_null=True)
    np.testing.assert_array_equal(first.null_distribution, again.null_distribution)
    other = permutation_test_local(x, 150, n_permutations=300, seed=first.seed + 1, return_null=True)
    assert not np.array_equal(first.null_distribution, other.null_distribution)


def test_dummy_count_equals_materialised_zeros():
    """y = n and y = np.zeros(n) pool identically (zeros are skipped wherever they are): bit-identical;
    and the null equals a plain numpy permutation null of the materialised pool in distribution."""
    rng = np.random.default_rng(14)
    x = (rng.standard_normal(400) + 0.05).astype(np.float32)
    a = permutation_test_local(x, 400, n_permutations=3000, seed=21, return_null=True)
    b = permutation_test_local(x, np.zeros(400), n_permutations=3000, seed=21, return_null=True)
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
    assert (a.statistic, a.p_value, a.effect_size, a.z_score) == (b.statistic, b.p_value, b.effect_size, b.z_score)
    pool = np.concatenate([x, np.zeros(400, np.float32)]).astype(np.float64)
    oracle = np.empty(3000)
    for i in range(oracle.size):
        p = rng.permutation(pool)
        oracle[i] = p[:400].sum() - p[400:].sum()
    assert stats.ks_2samp(a.null_distribution, oracle).pvalue > 1e-3


def test_masked_sums_equal_numpy_across_blocks():
    """Several blocks, the 4-word unrolled loop, leftover words and a partial last word; three rows
    (weightings) summed on the same masks, each as if alone."""
    rng = np.random.default_rng(15)
    n = 64 * perm._BLOCK_WORDS * 2 + 6 * 64 + 37
    values = np.zeros((3, -(-n // 64) * 64), dtype=np.float32)
    values[:, :n] = rng.standard_normal((3, n))
    masks = rng.integers(0, 2**64, size=(5, values.shape[1] // 64), dtype=np.uint64)
    masks[:, -1] &= np.uint64((1 << 37) - 1)
    out = np.empty((5, 3))
    perm._masked_sums(values, masks, 5, out)
    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little").astype(bool)
    expected = [[values[w, row].astype(np.float64).sum() for w in range(3)] for row in bits]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    for w in range(3):
        alone = np.empty((5, 1))
        perm._masked_sums(values[w : w + 1].copy(), masks, 5, alone)
        np.testing.assert_array_equal(alone[:, 0], out[:, w])


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(x=[1.0, np.nan], y=3), r"x\[1\] is nan"),
        (dict(x=[], y=3), "at least one item"),
        (dict(x=[1.0], y=[]), "at least one item"),
        (dict(x=[1.0], y=0), ">= 1"),
        (dict(x=[[1.0]], y=3), "1-D"),
        (dict(x=["a"], y=3), "numbers"),
        (dict(x=[1.0], y=3, alternative="bigger"), "alternative"),
        (dict(x=[1.0], y=3, seed=-1), "seed"),
        (dict(x=[1.0], y=3, n_permutations=0), "n_permutations"),
    ],
)
def test_bad_input_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        permutation_test_local(**kwargs)


def test_result_is_frozen():
    res = permutation_test_local([1.0, 2.0], 2, seed=1)
    assert isinstance(res, PermutationTestResult)
    with pytest.raises(AttributeError):
        res.p_value = 0.5


# ---------------------------------------------------------------------------------------------
# Scores with a large common offset: centred in float64 before float32 storage.


def _offset_case(n, shift, seed):
    rng = np.random.default_rng(seed)
    return 1e6 + 0.01 * rng.standard_normal(n) + shift, 1e6 + 0.01 * rng.standard_normal(n)


def _scipy_sum_difference(x, y, alternative, n_resamples):
    return stats.permutation_test(
        (x, y),
        lambda a, b, axis: a.sum(axis=axis) - b.sum(axis=axis),
        vectorized=True,
        n_resamples=n_resamples,
        alternative=alternative,
        random_state=3,
    )


def test_offset_scores_match_scipy_sampled():
    """x = 1e6 + 0.01 N(0,1) + 0.02 vs y = 1e6 + 0.01 N(0,1), 30 each (the audit's case)."""
    x, y = _offset_case(30, 0.02, 0)
    ours = permutation_test_local(x, y, n_permutations=9999, alternative="greater", seed=1)
    theirs = _scipy_sum_difference(x, y, "greater", 9999)
    exact_s = math.fsum(x) - math.fsum(y)
    assert ours.statistic == pytest.approx(exact_s, rel=1e-6)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-6)
    # s is ~6 null SDs out: both give the smallest possible p, 1/(m + 1).
    assert ours.p_value == theirs.pvalue == 1e-4
    assert ours.effect_size == pytest.approx((x.mean() - y.mean()) / np.concatenate([x, y]).std(ddof=1), rel=1e-9)


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_offset_scores_match_scipy_exact(alternative):
    """6 + 6 items (924 splits), enumerated by both; the float32 copy of t would tie most splits."""
    x, y = _offset_case(6, 0.01, 4)
    ours = permutation_test_local(x, y, n_permutations=10**4, alternative=alternative, return_null=True)
    theirs = _scipy_sum_difference(x, y, alternative, np.inf)
    assert ours.exact and ours.n_permutations == 924
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-12)
    # Every split's s against float64 brute force.
    pool = np.concatenate([x, y])
    total = math.fsum(pool)
    brute = sorted(2 * math.fsum(pool[list(c)]) - total for c in itertools.combinations(range(12), 6))
    np.testing.assert_allclose(np.sort(ours.null_distribution), brute, rtol=0, atol=1e-7)


def test_offset_scores_with_dummy_zeros_match_brute_force():
    """Centring with zeros in the pool: k varies, s_i = (2k - n)c + residual part."""
    x = 1e3 + np.array([0.0011, -0.0023, 0.0031, 0.0007, -0.0002])
    res = permutation_test_local(x, 4, n_permutations=200, alternative="greater", return_null=True)
    pool = np.concatenate([x, np.zeros(4)])
    total = math.fsum(pool)
    brute = sorted(2 * math.fsum(pool[list(c)]) - total for c in itertools.combinations(range(9), 5))
    assert res.exact
    np.testing.assert_allclose(np.sort(res.null_distribution), brute, rtol=0, atol=1e-8)
    sampled = permutation_test_local(x, 4, n_permutations=20, alternative="greater", seed=3, return_null=True)
    assert not sampled.exact
    # Every sampled s is one of the splits' s.
    assert np.all(np.min(np.abs(sampled.null_distribution[:, None] - np.array(brute)[None]), axis=1) < 1e-8)


def test_enumeration_only_within_the_memory_bound():
    """14 + 14 items have C(28, 14) = 4e7 splits: asking 1e8 permutations samples, never enumerates."""
    rng = np.random.default_rng(2)
    prep = prepare_test(rng.standard_normal(14), rng.standard_normal(14), n_permutations=perm.MAX_PERMUTATIONS, seed=1)
    assert not prep.exact
    assert perm.MAX_EXACT_SPLITS < math.comb(28, 14) <= perm.MAX_PERMUTATIONS
    # Within the bound, enumeration as before.
    assert prepare_test(
        rng.standard_normal(8), rng.standard_normal(8), n_permutations=perm.MAX_PERMUTATIONS, seed=1
    ).exact


def test_default_alternative_is_two_sided():
    res = permutation_test_local([3.0, 2.0, 4.0, 5.0], [1.0, 0.5, 0.2, 0.1], seed=1)
    assert res.alternative == "two-sided"


def test_type_one_error_rates_under_a_true_null():
    """Calibration (README): under a true null, greater/less/two-sided p are uniform (rate ≈ α);
    auto picks the tail after seeing s, so its rate is ≈ 2α."""
    rng = np.random.default_rng(123)
    m, n_tests, alpha = 199, 1000, 0.05
    p = {alt: [] for alt in ("greater", "less", "two-sided", "auto")}
    for i in range(n_tests):
        pool = rng.standard_normal(40)
        x, y = pool[:20], pool[20:]
        for alt in p:
            p[alt].append(permutation_test_local(x, y, n_permutations=m, alternative=alt, seed=i).p_value)
    rates = {alt: float(np.mean(np.array(v) <= alpha)) for alt, v in p.items()}
    for alt in ("greater", "less", "two-sided"):
        assert stats.kstest(np.array(p[alt]) - 0.5 / (m + 1), "uniform").pvalue > 1e-3
        assert abs(rates[alt] - alpha) < 0.025
    assert 0.075 < rates["auto"] < 0.13  # about 2α; README reports the measured rate
    print(f"type-I rates at alpha={alpha}: {rates}")


# ---------------------------------------------------------------------------------------------
# Several weightings on one split


def _weightings(rng, n):
    """u and three weightings of it, the third zero where the others are not (as 'frequency' is)."""
    u = (rng.standard_normal(n) * 0.05).astype(np.float32)
    zipf = (u * (1.0 / np.arange(1, n + 1) / 3.0)).astype(np.float32)
    freq = (u * rng.uniform(0, 1e-3, n)).astype(np.float32)
    freq[rng.random(n) < 0.2] = 0
    return u, np.stack([u, zipf, freq])


@pytest.mark.parametrize("y", ["dummy", "scores"])
def test_several_weightings_equal_one_test_each(y):
    rng = np.random.default_rng(21)
    u, t = _weightings(rng, 3000)
    ys = 3000 if y == "dummy" else np.stack([rng.standard_normal(1000)] * 3).astype(np.float32)
    got = perm.permutation_tests_local(t, ys, 700, seed=5, return_null=True, effect_x=u if y == "dummy" else None)
    for w in range(3):
        alone = perm.permutation_test_local(
            t[w], ys if y == "dummy" else ys[w], 700, seed=5, return_null=True, effect_x=u if y == "dummy" else None
        )
        np.testing.assert_array_equal(got[w].null_distribution, alone.null_distribution)
        for field in ("statistic", "p_value", "effect_size", "z_score", "null_mean", "null_std", "seed", "exact"):
            assert getattr(got[w], field) == getattr(alone, field), field


def test_weightings_share_each_split():
    """Common random numbers: a row that is exactly twice another has exactly twice its null, split by
    split (separate random splits would give another sample)."""
    rng = np.random.default_rng(22)
    x = (rng.standard_normal(5000) * 0.05).astype(np.float32)
    prep = perm.prepare_test(np.stack([x, 2 * x]), 5000, 300, seed=9)
    nulls = perm.null_batch(prep, 0, 300)
    np.testing.assert_array_equal(nulls[1], 2 * nulls[0])
    assert nulls.shape == (2, 300)
    np.testing.assert_array_equal(nulls[:, 100:200], perm.null_batch(prep, 100, 200))


def test_several_weightings_exact():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((3, 6))
    y = rng.standard_normal((3, 5))
    got = perm.permutation_tests_local(x, y, 9999, seed=1, return_null=True)
    for w in range(3):
        alone = perm.permutation_test_local(x[w], y[w], 9999, seed=1, return_null=True)
        assert got[w].exact and alone.exact
        np.testing.assert_array_equal(got[w].null_distribution, alone.null_distribution)
        assert got[w].p_value == alone.p_value


def test_shared_split_groups_and_refusal():
    rng = np.random.default_rng(24)
    _, t = _weightings(rng, 500)
    assert perm.shared_split_groups(t, 500) == [[0, 1], [2]]
    with pytest.raises(ValueError, match="zero at different items"):
        perm.prepare_test(t, 500, 99, seed=1)
    with pytest.raises(ValueError, match="2-D"):
        perm.prepare_test(t[None], 500, 99, seed=1)
    # one row is one test: the same null as that row among others
    one, rows = perm.prepare_test(t[0], 500, 99, seed=1), perm.prepare_test(t[:2], 500, 99, seed=1)
    assert isinstance(one, perm.PreparedTest) and isinstance(rows, perm.PreparedTests)
    np.testing.assert_array_equal(perm.null_batch(one, 0, 99), perm.null_batch(rows, 0, 99)[0])
