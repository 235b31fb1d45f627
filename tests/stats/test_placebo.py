"""The placebo core: rank-matched draws, moments of linear associations against brute force over every
word, the weighted effect size, and the placebo p-value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasdask.stats.association import association_axes, linear_directions
from biasdask.stats.effect import effect_size
from biasdask.stats.permutation import permutation_pvalue
from biasdask.stats.placebo import (
    PlaceboMatch,
    draw_from_windows,
    evaluate_moments,
    linear_moments,
    merge_moments,
    moment_rows,
    placebo_summary,
    rank_matched_words,
    rank_neighbourhoods,
    remove_rows,
    weighted_effect_size,
)
from biasdask.stats.weights import frequency_weights, zipf_weights


def _vocabulary(rng, n, dim):
    """Anisotropic vectors (a common mean direction, as real embeddings have) with frequency ranks 1..n."""
    common = rng.normal(size=dim)
    return rng.normal(size=(n, dim)) * rng.uniform(0.2, 2.0, size=dim) + 0.8 * common


def _weights(rng, n):
    """uniform, zipf and a frequency weighting with words lacking a frequency (weight 0)."""
    freq = rng.lognormal(size=n) / np.arange(1, n + 1)
    freq[rng.uniform(size=n) < 0.1] = np.nan
    return np.stack([np.ones(n), zipf_weights(np.arange(1, n + 1), n), frequency_weights(freq)])


def _brute(v, z, delta, keep=None):
    """s, d and the weighted effect size by scoring every word."""
    keep = np.ones(len(v), dtype=bool) if keep is None else keep
    u = v[keep] @ delta
    zk = z[:, keep]
    s = zk @ u
    d = effect_size(u, int(keep.sum()))
    dw = [weighted_effect_size(u, zk[k], np.zeros_like(u), zk[k]) for k in range(len(z))]
    return s, d, np.array(dw)


@pytest.mark.parametrize("kind", ["cosine", "ripa", "semaxis"])
@pytest.mark.parametrize("dim", [8, 23, 50])
def test_moments_equal_brute_force_over_every_word(kind, dim):
    rng = np.random.default_rng(dim)
    n = 3000
    raw = _vocabulary(rng, n, dim)
    v = moment_rows(kind, raw)
    z = _weights(rng, n)
    chunks = [slice(0, 700), slice(700, 1901), slice(1901, n)]
    moments = merge_moments(*(linear_moments(v[c], z[:, c]) for c in chunks))
    # 12 random attribute pairs of 3 + 3 words (paired rows for ripa)
    idx = np.array([rng.choice(n, size=6, replace=False) for _ in range(12)])
    directions = linear_directions(kind, raw[idx[:, :3]], raw[idx[:, 3:]])
    got = evaluate_moments(moments, directions)
    assert got.statistic.shape == (12, 3) and got.effect_size.shape == (12,) and got.n.tolist() == [n] * 12
    for p in range(12):
        s, d, dw = _brute(v, z, directions[p])
        assert got.statistic[p] == pytest.approx(s, rel=1e-9, abs=1e-12)
        assert got.effect_size[p] == pytest.approx(d, rel=1e-9)
        assert got.effect_size_weighted[p] == pytest.approx(dw, rel=1e-8)


def test_uniform_weighted_effect_size_equals_d():
    rng = np.random.default_rng(5)
    v = moment_rows("cosine", _vocabulary(rng, 2000, 16))
    z = _weights(rng, 2000)
    st = evaluate_moments(linear_moments(v, z), rng.normal(size=(30, 16)))
    assert st.effect_size_weighted[:, 0] == pytest.approx(st.effect_size, rel=1e-11)


def test_weighted_effect_size_has_the_sign_of_s_where_d_does_not():
    # frequent words lean to A, the long tail to B: zipf's s > 0 while the unweighted mean (and d) < 0
    n, dim = 5000, 4
    rng = np.random.default_rng(8)
    v = moment_rows("cosine", rng.normal(size=(n, dim)) + np.array([0.0, 0.0, 0.0, 3.0]))
    v[:50, 0] += 2.0
    v[50:, 0] -= 0.1
    v = moment_rows("cosine", v)
    z = np.stack([np.ones(n), zipf_weights(np.arange(1, n + 1), n)])
    st = evaluate_moments(linear_moments(v, z), np.array([1.0, 0.0, 0.0, 0.0]))
    assert st.statistic[0, 1] > 0 > st.effect_size[0]
    assert np.sign(st.effect_size_weighted[0]).tolist() == np.sign(st.statistic[0]).tolist() == [-1.0, 1.0]


def test_weighted_effect_size_variance_is_numpys_reliability_weighted_variance():
    rng = np.random.default_rng(3)
    ux, uy = rng.normal(0.3, 1.0, 40), rng.normal(0.0, 2.0, 25)
    zx, zy = rng.uniform(0, 2, 40), rng.uniform(0, 1, 25)
    mx, my = np.average(ux, weights=zx), np.average(uy, weights=zy)
    pooled_var = np.cov(np.concatenate([ux, uy]), aweights=np.concatenate([zx, zy]), ddof=1)
    assert weighted_effect_size(ux, zx, uy, zy) == pytest.approx((mx - my) / math.sqrt(pooled_var), rel=1e-12)
    # unit weights: the project's effect size d (ddof 1)
    assert weighted_effect_size(ux, np.ones(40), uy, np.ones(25)) == pytest.approx(effect_size(ux, uy), rel=1e-12)
    # a batch along leading axes
    batch = weighted_effect_size(np.stack([ux, -ux]), zx, uy, zy)
    assert batch.shape == (2,) and batch[0] == pytest.approx(weighted_effect_size(ux, zx, uy, zy), rel=1e-15)


def test_weighted_effect_size_degenerate_cases_are_nan():
    assert math.isnan(weighted_effect_size([1.0, 1.0], [1, 1], [1.0], [1]))  # no spread
    assert math.isnan(weighted_effect_size([1.0, 2.0], [0, 0], [1.0], [1]))  # X weighs nothing
    assert math.isnan(weighted_effect_size([1.0], [1], [0.0], [0]))
    with pytest.raises(ValueError, match="non-negative"):
        weighted_effect_size([1.0], [-1], [0.0], [1])


@pytest.mark.parametrize("per_draw", [False, True])
def test_excluding_words_equals_brute_force_without_them(per_draw):
    rng = np.random.default_rng(21)
    n, dim, p, m = 1500, 12, 6, 4
    raw = _vocabulary(rng, n, dim)
    v = moment_rows("cosine", raw)
    z = _weights(rng, n)
    moments = linear_moments(v, z)
    rows = (
        rng.choice(n, size=(p, m), replace=False)
        if per_draw
        else np.broadcast_to(rng.choice(n, m, replace=False), (p, m))
    )
    directions = linear_directions("cosine", raw[rows[:, :2]], raw[rows[:, 2:]])
    if per_draw:
        got = evaluate_moments(moments, directions, exclude_v=v[rows], exclude_z=np.moveaxis(z[:, rows], 0, 1))
    else:
        got = evaluate_moments(moments, directions, exclude_v=v[rows[0]], exclude_z=z[:, rows[0]])
        removed = evaluate_moments(remove_rows(moments, v[rows[0]], z[:, rows[0]]), directions)
        np.testing.assert_allclose(removed.statistic, got.statistic, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(removed.effect_size, got.effect_size, rtol=1e-12)
    assert got.n.tolist() == [n - m] * p
    for i in range(p):
        keep = np.ones(n, dtype=bool)
        keep[rows[i]] = False
        s, d, dw = _brute(v, z, directions[i], keep)
        assert got.statistic[i] == pytest.approx(s, rel=1e-9)
        assert got.effect_size[i] == pytest.approx(d, rel=1e-9)
        assert got.effect_size_weighted[i] == pytest.approx(dw, rel=1e-8)


def test_remove_rows_matches_the_moments_of_the_rest():
    rng = np.random.default_rng(4)
    v, z = rng.normal(size=(300, 7)), rng.uniform(size=(2, 300))
    whole = linear_moments(v, z)
    rest = remove_rows(whole, v[:10], z[:, :10])
    direct = linear_moments(v[10:], z[:, 10:])
    assert rest.n == 290
    for name in ("sum_v", "sum_vv", "sum_zv", "sum_zvv", "sum_z", "sum_z2"):
        np.testing.assert_allclose(getattr(rest, name), getattr(direct, name), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="shapes"):
        remove_rows(whole, v[:3])  # weights missing


def test_merge_in_chunk_order_is_reproducible_and_equals_one_block():
    rng = np.random.default_rng(6)
    v, z = rng.normal(size=(1000, 9)), rng.uniform(size=(3, 1000))
    parts = [linear_moments(v[i : i + 128], z[:, i : i + 128]) for i in range(0, 1000, 128)]
    a, b = merge_moments(*parts), merge_moments(*parts)
    np.testing.assert_array_equal(a.sum_zvv, b.sum_zvv)
    one = linear_moments(v, z)
    np.testing.assert_allclose(a.sum_zvv, one.sum_zvv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.sum_vv, a.sum_vv.T, rtol=0, atol=0)  # symmetric exactly
    assert a.n == 1000 and a.n_weightings == 3 and a.dim == 9
    with pytest.raises(ValueError, match="different shapes"):
        merge_moments(parts[0], linear_moments(v[:5]))


def test_moment_argument_checks():
    with pytest.raises(ValueError, match="non-finite"):
        linear_moments([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="shape"):
        linear_moments(np.ones((3, 2)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        linear_moments(np.ones((3, 2)), -np.ones((1, 3)))
    m = linear_moments(np.eye(3), np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"shape \(P, 3\)"):
        evaluate_moments(m, np.ones(4))
    with pytest.raises(ValueError, match="exclude_z"):
        evaluate_moments(m, np.ones(3), exclude_v=np.eye(3)[:1])
    with pytest.raises(ValueError, match="linear"):
        moment_rows("euclidean", np.eye(3))


@pytest.mark.parametrize("kind", ["cosine", "ripa", "semaxis"])
def test_batched_directions_are_association_axes_bit_for_bit(kind):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(5, 4, 10)), rng.normal(size=(5, 4, 10))
    batch = linear_directions(kind, a, b)
    for i in range(5):
        np.testing.assert_array_equal(batch[i], association_axes(kind, a[i], b[i])[0])
    with pytest.raises(ValueError, match="not linear"):
        linear_directions("euclidean", a, b)


# ----------------------------------------------------------------------------------------------
# Rank-matched draws


def _window_by_brute_force(r, cand, ratio, size):
    """Oracle: the candidates within the ratio, or the ``size`` nearest in log rank (ties: more frequent)."""
    within = np.flatnonzero((cand * ratio >= r) & (cand <= r * ratio))
    if within.size >= size:
        return set(within.tolist())
    dist = np.abs(np.log10(cand) - np.log10(r))
    order = np.lexsort((cand, dist))  # by distance, then by rank
    return set(order[:size].tolist())


def test_windows_hold_the_ranks_within_the_ratio_or_the_nearest_in_log_rank():
    rng = np.random.default_rng(2)
    cand = rng.choice(np.arange(1, 100_000), size=5000, replace=False)
    ranks = np.array([1, 7, 150, 2222, 99_999])
    for ratio, size in ((2.0, 30), (1.05, 30), (1.0, 1), (3.0, 400)):
        windows = rank_neighbourhoods(ranks, cand, ratio=ratio, min_size=size)
        for j, r in enumerate(ranks):
            members = windows.members(j)
            # at least as many candidates as attribute words (5), so that a draw can give each its own
            assert set(members.tolist()) == _window_by_brute_force(r, cand, ratio, max(size, 5)), (ratio, size, r)
            assert windows.low[j] == cand[members].min() and windows.high[j] == cand[members].max()
            assert windows.ratio[j] == pytest.approx(max(windows.high[j] / r, r / windows.low[j]))
            assert windows.ratio[j] <= ratio or members.size == max(size, 5)  # widened only to reach the size
    text = windows.describe(["a", "b", "c", "d", "e"])
    assert text.startswith("a (rank 1): ranks ") and "; e (rank 99999): ranks " in text


def test_candidates_exactly_as_far_in_log_rank_come_more_frequent_first():
    """A window widened to its nearest candidates grows towards the nearer side in log rank; c · c' = r²
    puts c and c' equally far from r, and the tie goes to the more frequent word, whatever the rounding
    of a logarithm (the distance is compared as the ratio max(c/r, r/c))."""
    cand = np.array([20, 5, 40, 3, 1250, 800, 2000, 500])
    widened = rank_neighbourhoods([10, 1000], cand, ratio=1.0, min_size=4)
    assert sorted(widened.members(0).tolist()) == [0, 1, 2, 3]
    assert sorted(widened.members(1).tolist()) == [4, 5, 6, 7]
    # rank 12: log10(48) - log10(12) rounds below log10(12) - log10(3), yet 3 and 48 are as far
    assert rank_neighbourhoods([12], [48, 3, 100], ratio=1.0, min_size=1).members(0).tolist() == [1]


def test_rank_matched_draws_are_distinct_matched_and_reproducible():
    rng = np.random.default_rng(0)
    cand = np.sort(rng.choice(np.arange(1, 50_000), size=8000, replace=False))
    ranks = np.array([12, 15, 15, 300, 4000, 20, 16, 14])  # windows overlap at the top
    draws = rank_matched_words(ranks, cand, n=2000, seed=42, ratio=1.5, min_candidates=10)
    assert draws.shape == (2000, 8) and draws.dtype == np.intp
    assert all(len(set(row)) == 8 for row in draws.tolist())
    windows = rank_neighbourhoods(ranks, cand, ratio=1.5, min_size=10)
    for j in range(8):
        assert set(draws[:, j].tolist()) <= set(windows.members(j).tolist())
    again = rank_matched_words(ranks, cand, n=2000, seed=42, ratio=1.5, min_candidates=10)
    np.testing.assert_array_equal(draws, again)
    np.testing.assert_array_equal(draws, draw_from_windows(windows, n=2000, seed=42))
    np.testing.assert_array_equal(draws[:300], draw_from_windows(windows, n=300, seed=42))
    assert not np.array_equal(draws, draw_from_windows(windows, n=2000, seed=43))


def test_a_single_word_is_replaced_uniformly_within_its_window():
    from scipy.stats import chisquare

    cand = np.arange(1, 1000)
    draws = rank_matched_words([500], cand, n=20_000, seed=3, ratio=1.01, min_candidates=8)[:, 0]
    counts = np.bincount(draws, minlength=cand.size)
    window = rank_neighbourhoods([500], cand, ratio=1.01, min_size=8).members(0)
    assert set(np.flatnonzero(counts).tolist()) == set(window.tolist()) and window.size == 10  # ranks 496-505
    assert chisquare(counts[window]).pvalue > 0.001


def test_the_later_words_of_a_draw_are_uniform_over_what_is_left():
    # two words sharing a window of 3: every ordered pair of distinct candidates is equally likely
    from scipy.stats import chisquare

    draws = rank_matched_words([5, 5], np.array([4, 5, 6, 50, 60]), n=30_000, seed=5, ratio=1.3, min_candidates=3)
    pairs = draws[:, 0] * 3 + draws[:, 1]
    counts = np.bincount(pairs, minlength=9)[[1, 2, 3, 5, 6, 7]]
    assert np.all(draws[:, 0] != draws[:, 1]) and chisquare(counts).pvalue > 0.001


def test_window_smaller_than_the_attribute_words_grows_to_their_number():
    draws = rank_matched_words([5, 5, 5, 5], np.arange(1, 100), n=50, seed=1, ratio=1.0, min_candidates=2)
    assert all(len(set(r)) == 4 for r in draws.tolist())
    assert set(draws.ravel().tolist()) == {3, 4, 5, 6}  # ranks 4-7: the 4 nearest to 5 in log rank


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(ranks=[0], candidate_ranks=[1, 2], n=1, seed=0), ValueError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=0, seed=0), ValueError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=1, seed=-1), ValueError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=1, seed=None), TypeError),
        (dict(ranks=[1.5], candidate_ranks=[1, 2], n=1, seed=0), TypeError),
        (dict(ranks=[1, 2, 3], candidate_ranks=[1, 2], n=1, seed=0), ValueError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=1, seed=0, ratio=0.5), ValueError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=1, seed=0, ratio="2"), TypeError),
        (dict(ranks=[1], candidate_ranks=[1, 2], n=1, seed=0, min_candidates=0), ValueError),
    ],
)
def test_rank_matched_words_checks_its_arguments(kwargs, error):
    with pytest.raises(error):
        rank_matched_words(kwargs.pop("ranks"), kwargs.pop("candidate_ranks"), **kwargs)


def test_placebo_match_checks_its_settings():
    assert PlaceboMatch(words="any", rank_ratio=3, min_candidates=10).rank_ratio == 3.0
    for kwargs, error in (
        (dict(words="tokens"), ValueError),
        (dict(rank_ratio=0.9), ValueError),
        (dict(rank_ratio=float("inf")), ValueError),
        (dict(min_candidates=2.5), TypeError),
    ):
        with pytest.raises(error):
            PlaceboMatch(**kwargs)


# ----------------------------------------------------------------------------------------------
# Placebo p-value


def test_placebo_summary_by_hand_and_against_the_permutation_pvalue():
    rng = np.random.default_rng(7)
    placebo = rng.normal(size=999)
    obs = 2.1
    for alt in ("greater", "less", "two-sided"):
        res = placebo_summary(obs, placebo, alternative=alt)
        expected = permutation_pvalue(placebo, obs, alt, placebo.mean(), 0.0)
        assert float(res.p_value) == pytest.approx(expected, rel=1e-15)
    res = placebo_summary(obs, placebo, alternative="greater")
    assert float(res.z) == pytest.approx((obs - placebo.mean()) / placebo.std(ddof=1), rel=1e-12)
    assert float(res.percentile) == pytest.approx(100 * np.mean(placebo < obs), rel=1e-12)
    assert int(res.n) == 999


def test_placebo_two_sided_is_measured_from_the_placebo_mean():
    placebo = np.array([10.0, 11.0, 12.0, 13.0, 14.0])  # mean 12
    # 10.5 is 1.5 from the centre: 10, 14 are at least as far -> (1 + 2)/6
    assert float(placebo_summary(10.5, placebo).p_value) == pytest.approx(3 / 6)
    assert float(placebo_summary(20.0, placebo, alternative="less").p_value) == pytest.approx(1.0)


def test_placebo_percentile_counts_ties_half():
    res = placebo_summary(1.0, [0.0, 1.0, 1.0, 2.0], alternative="greater")
    assert float(res.percentile) == pytest.approx(100 * (1 + 0.5 * 2) / 4)
    assert float(res.p_value) == pytest.approx((1 + 3) / 5)


def test_placebo_summary_is_vectorised_over_cells_with_their_own_alternatives():
    rng = np.random.default_rng(12)
    placebo = rng.normal(size=(500, 3, 2))
    placebo[::7, 1, 0] = np.nan  # undefined draws of one cell are left out
    obs = rng.normal(size=(3, 2)) * 2
    alts = np.array([["greater", "less"], ["two-sided", "greater"], ["less", "two-sided"]])
    res = placebo_summary(obs, placebo, alternative=alts)
    for i in range(3):
        for j in range(2):
            col = placebo[:, i, j]
            col = col[np.isfinite(col)]
            one = placebo_summary(obs[i, j], col, alternative=alts[i, j])
            assert res.p_value[i, j] == one.p_value and res.z[i, j] == pytest.approx(float(one.z), rel=1e-12)
            assert res.n[i, j] == col.size
    assert res.n[1, 0] == 500 - len(range(0, 500, 7))


def test_nan_observed_gives_nan_placebo_results():
    res = placebo_summary([np.nan, 0.5], np.ones((10, 2)) * [[0.0, 1.0]], alternative="greater")
    assert np.isnan(res.p_value[0]) and np.isnan(res.z[0]) and np.isnan(res.percentile[0])
    assert res.p_value[1] == pytest.approx(11 / 11)
    assert np.isnan(res.z[1])  # a placebo distribution without spread has no z
    assert np.isnan(placebo_summary(1.0, [np.nan, np.nan]).p_value)


def test_placebo_summary_checks_its_arguments():
    with pytest.raises(ValueError, match="shape"):
        placebo_summary([1.0, 2.0], np.zeros((5, 3)))
    with pytest.raises(ValueError, match="alternative"):
        placebo_summary(1.0, np.zeros(5), alternative="auto")


def test_accumulated_moments_are_the_moments_whatever_the_blocks():
    """The study's moments (gathered block by block in the scoring pass) equal linear_moments' on the
    words kept, and are bit-identical however the rows are split into blocks."""
    from biasdask.stats.placebo import MomentAccumulator

    rng = np.random.default_rng(5)
    w = rng.normal(size=(3000, 12)).astype(np.float32)
    norms = np.linalg.norm(w.astype(np.float64), axis=1)
    z = rng.random((2, 3000))
    keep = rng.random(3000) > 0.1

    def gathered(kind, block):
        acc = MomentAccumulator(kind, 12, 2, step=1, rows=3000)
        for lo in range(0, 3000, block):
            acc.add(lo, w[lo : lo + block], norms[lo : lo + block], z[:, lo : lo + block], keep[lo : lo + block])
        return acc.moments()

    for kind in ("cosine", "ripa"):
        one, other = gathered(kind, 1024), gathered(kind, 77)
        exact = linear_moments(moment_rows(kind, w[keep].astype(np.float64)), z[:, keep])
        for name in ("sum_v", "sum_vv", "sum_zv", "sum_z", "sum_z2"):
            np.testing.assert_array_equal(getattr(one, name), getattr(other, name))
            np.testing.assert_allclose(getattr(one, name), getattr(exact, name), rtol=1e-10, atol=1e-10)
        assert one.n == exact.n == keep.sum() and one.sampled == one.n


def _sampled_vocabulary(kind, n, dim, gram_words, seed):
    """An anisotropic vocabulary of n words, uniform and Zipf weights, and what a MomentAccumulator of
    ``kind`` gathers from it with a sample of about ``gram_words`` rows."""
    from biasdask.stats.placebo import MomentAccumulator, gram_step

    rng = np.random.default_rng(seed)
    w = (2.0 * rng.normal(size=dim) + rng.normal(size=(n, dim)) * np.linspace(2.0, 0.3, dim)).astype(np.float32)
    z = np.stack([np.ones(n), 1.0 / np.arange(1, n + 1)])
    step = gram_step(n, gram_words)
    acc = MomentAccumulator(kind, dim, 2, step=step, rows=n)
    acc.add(0, w, np.linalg.norm(w.astype(np.float64), axis=1), z, np.ones(n, bool))
    return rng, w, z, step, acc.moments()


def test_a_sampled_gram_gives_d_within_a_fraction_of_a_percent_and_s_exactly():
    """A vocabulary larger than the sample: every step-th row's Gram, scaled, gives d within 1 % of the
    exact d of random directions; s, which does not use the Gram, is exact."""
    n, dim = 120_000, 10
    rng, w, z, step, sampled = _sampled_vocabulary("cosine", n, dim, 30_000, seed=8)
    assert sampled.n_gram == len(range(0, n, step)) < n
    exact = linear_moments(moment_rows("cosine", w), z)
    directions = rng.normal(size=(50, dim)) * 0.1
    got, want = evaluate_moments(sampled, directions), evaluate_moments(exact, directions)
    np.testing.assert_allclose(got.statistic, want.statistic, rtol=1e-9)
    np.testing.assert_allclose(got.effect_size, want.effect_size, rtol=0.01)
    assert np.isnan(got.effect_size_weighted).all()  # the weighted Gram is not gathered


def _euclidean_oracle(w, z, keep, a_rows, b_rows):
    """s per weighting and d of the euclidean association of each pair, word by word in float64."""
    unit = w.astype(np.float64) / np.linalg.norm(w.astype(np.float64), axis=1, keepdims=True)
    s, d = [], []
    for ia, ib in zip(a_rows, b_rows):
        ma, mb = unit[ia].mean(axis=0), unit[ib].mean(axis=0)
        u = (np.linalg.norm(unit - mb, axis=1) - np.linalg.norm(unit - ma, axis=1))[keep]
        s.append(z[:, keep] @ u)
        d.append(effect_size(u, u.size))
    return np.array(s), np.array(d)


def test_euclidean_statistics_on_the_whole_sample_are_the_test_word_by_word_and_block_free():
    """With every row sampled the euclidean statistics are the test's own (oracle: numpy, word by word);
    the sample is bit-identical however a chunk's rows are split into blocks, and chunks merge into the
    sample of the whole."""
    from biasdask.stats.placebo import MomentAccumulator, euclidean_statistics

    rng = np.random.default_rng(6)
    n, dim = 3000, 12
    w = (1.5 * rng.normal(size=dim) + rng.normal(size=(n, dim))).astype(np.float32)
    norms = np.linalg.norm(w.astype(np.float64), axis=1)
    z = np.stack([np.ones(n), 1.0 / np.arange(1, n + 1)])
    keep = rng.random(n) > 0.1

    def gathered(block, lo=0, hi=n):
        acc = MomentAccumulator("euclidean", dim, 2, step=1, rows=hi - lo)
        for at in range(lo, hi, block):
            end = min(at + block, hi)
            acc.add(at, w[at:end], norms[at:end], z[:, at:end], keep[at:end])
        return acc.moments()

    one, other = gathered(1000), gathered(77)
    merged = merge_moments(*(gathered(50, lo, lo + 1000) for lo in range(0, n, 1000)))
    for name in ("rows", "unit", "z", "sum_z", "sum_z2"):
        np.testing.assert_array_equal(getattr(one, name), getattr(other, name))
        np.testing.assert_allclose(getattr(one, name), getattr(merged, name), rtol=1e-12)
    assert one.n == one.sampled == keep.sum()
    pairs = rng.permutation(np.flatnonzero(keep))[:100].reshape(20, 5)  # distinct words of X, as drawn
    a_rows, b_rows = pairs[:, :3], pairs[:, 3:]
    words = np.concatenate([w[a_rows.ravel()], w[b_rows.ravel()]]).astype(np.float64)
    at_a, at_b = np.arange(60).reshape(20, 3), 60 + np.arange(40).reshape(20, 2)
    got = euclidean_statistics(one, words, at_a, at_b)
    s, d = _euclidean_oracle(w, z, keep, a_rows, b_rows)
    np.testing.assert_allclose(got.statistic, s, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.effect_size, d, rtol=1e-9)
    assert np.all(np.sign(got.effect_size_weighted) == np.sign(got.statistic))
    # a pair's own words left out of X, exactly
    ex = np.concatenate([a_rows, b_rows], axis=1)
    left = euclidean_statistics(one, words, at_a, at_b, exclude_rows=ex, exclude_z=z[:, ex].transpose(1, 0, 2))
    for i in range(0, 20, 5):
        rest = keep.copy()
        rest[ex[i]] = False
        s_i, d_i = _euclidean_oracle(w, z, rest, a_rows[i : i + 1], b_rows[i : i + 1])
        np.testing.assert_allclose(left.statistic[i], s_i[0], rtol=1e-9, atol=1e-9)
        assert left.effect_size[i] == pytest.approx(d_i[0], rel=1e-9)
        assert left.n[i] == keep.sum() - 5


def test_euclidean_statistics_on_a_sample_keep_the_placebo_pairs_apart():
    """A vocabulary larger than the sample: the estimates of s and d from every step-th row differ from
    the exact ones by a small fraction of their spread between attribute pairs (what a placebo
    comparison ranks)."""
    from biasdask.stats.placebo import euclidean_statistics

    n = 100_000
    rng, w, z, step, sample = _sampled_vocabulary("euclidean", n, 10, 25_000, seed=9)
    assert sample.sampled == len(range(0, n, step)) < n and sample.n == n
    a_rows, b_rows = rng.integers(0, n, size=(40, 1)), rng.integers(0, n, size=(40, 1))
    words = np.concatenate([w[a_rows.ravel()], w[b_rows.ravel()]]).astype(np.float64)
    got = euclidean_statistics(sample, words, np.arange(40)[:, None], 40 + np.arange(40)[:, None])
    s, d = _euclidean_oracle(w, z, np.ones(n, bool), a_rows, b_rows)
    assert np.abs(got.statistic - s).max(axis=0) @ [1, 1] < 0.05 * (s.std(axis=0) @ [1, 1])
    assert np.abs(got.effect_size - d).max() < 0.05 * d.std()
