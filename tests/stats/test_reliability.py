"""Reliability: correlations and their intervals against scipy, ICC(2,1) against pingouin and Shrout &
Fleiss 1979, α and split halves against brute force, the item moments bit for bit under any chunking,
and the IAT reference data (Lewis & Lupyan 2020's table and vectors)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from biasdask.stats.reliability import (
    MOMENT_BLOCK,
    ItemMoments,
    cronbach_alpha,
    internal_consistency,
    intraclass_correlation,
    item_moments,
    leave_one_out,
    merge_item_moments,
    paired_correlation,
    pairwise_correlations,
    score_correlation,
    split_half,
)

CORPORA = {"subt": "lang_es_sub", "wiki": "lang_es_wiki", "cc": "lang_es_wiki_cc"}  # column of the table
CAREER = ["executive", "management", "professional", "corporation", "salary", "office", "business", "career"]
FAMILY = ["home", "parents", "children", "family", "cousins", "marriage", "wedding", "relatives"]
MALE = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
FEMALE = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]


# ----------------------------------------------------------------------------------------------
# Oracles written here


def average_ranks(values):
    """Ranks 1..n, ties given their mean rank (plain numpy)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def numpy_correlations(x, y):
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    return int(keep.sum()), np.corrcoef(x, y)[0, 1], np.corrcoef(average_ranks(x), average_ranks(y))[0, 1]


def brute_alpha(x):
    k = x.shape[1]
    return k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / x.sum(axis=1).var(ddof=1))


def scipy_pearson(x, y, axis=-1):
    return stats.pearsonr(x, y, axis=axis).statistic


def scipy_spearman(x, y, axis=-1):
    return stats.pearsonr(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis).statistic


def iat_table(shared_data):
    import pandas as pd

    table = pd.read_csv(shared_data / "iat" / "published_effect_sizes.csv")  # "NA" reads as NaN
    return {name: table[column].to_numpy(dtype=float) for name, column in CORPORA.items()}


def read_vec(path):
    rows = path.read_bytes().split(b"\n")[1:]
    fields = [row.split(b" ") for row in rows if row]
    return {f[0].decode(): np.array([float(v) for v in f[1:] if v]) for f in fields}


def unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# ----------------------------------------------------------------------------------------------
# Test-retest: correlations of paired values


@pytest.mark.parametrize("n", [5, 20, 60])
def test_point_values_are_scipys_and_missing_pairs_are_dropped(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    y = 0.6 * x + rng.normal(size=n)
    y[1] = np.round(y[2], 1)  # a tie for the ranks
    y[2] = y[1]
    x[0], y[3] = np.nan, np.nan
    res = paired_correlation(x, y, seed=0, n_resamples=99)
    keep = ~(np.isnan(x) | np.isnan(y))
    assert res.n == n - 2 == keep.sum()
    assert res.pearson == pytest.approx(stats.pearsonr(x[keep], y[keep]).statistic, abs=1e-13)
    assert res.spearman == pytest.approx(stats.spearmanr(x[keep], y[keep]).statistic, abs=1e-13)


@pytest.mark.parametrize("ci_method", ["BCa", "percentile"])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_interval_is_scipys_paired_bootstrap_over_languages(ci_method, level):
    rng = np.random.default_rng(7)
    x = rng.normal(size=24)
    y = 0.5 * x + rng.normal(scale=0.8, size=24)
    res = paired_correlation(x, y, seed=11, ci_method=ci_method, ci_level=level, n_resamples=2999)
    for statistic, low, high in [
        (scipy_pearson, res.pearson_ci_low, res.pearson_ci_high),
        (scipy_spearman, res.spearman_ci_low, res.spearman_ci_high),
    ]:
        oracle = stats.bootstrap(
            (x, y),
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=2999,
            confidence_level=level,
            method=ci_method,
            rng=np.random.default_rng(np.random.SeedSequence(11)),
        ).confidence_interval
        assert (low, high) == pytest.approx((oracle.low, oracle.high), abs=1e-10)
    assert (res.ci_method, res.ci_level, res.n_resamples, res.seed, res.note) == (ci_method, level, 2999, 11, "")


def test_interval_is_seeded_and_covers_the_population_correlation():
    # bivariate normal with ρ = 0.5, 30 "languages", 300 replications (coverage SE 0.013)
    rng = np.random.default_rng(2024)
    covered = 0
    for rep in range(300):
        x = rng.normal(size=30)
        y = 0.5 * x + math.sqrt(0.75) * rng.normal(size=30)
        res = paired_correlation(x, y, seed=rep, n_resamples=999)
        covered += res.pearson_ci_low <= 0.5 <= res.pearson_ci_high
    assert 0.90 <= covered / 300 <= 0.99
    a = paired_correlation(x, y, seed=5, n_resamples=999)
    b = paired_correlation(x, y, seed=5, n_resamples=999)
    c = paired_correlation(x, y, seed=6, n_resamples=999)
    assert a == b and (a.pearson_ci_low, a.spearman_ci_high) != (c.pearson_ci_low, c.spearman_ci_high)


@pytest.mark.parametrize(
    "x, y, note",
    [
        ([1.0, 2.0], [2.0, 1.0], "at least 3"),
        ([1.0, 2.0, np.nan, 4.0], [1.0, np.nan, 3.0, 2.0], "at least 3"),
        ([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0], "same value"),
        ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0], "spearman: every resample gives the same value"),
        ([0.1, 0.7, 0.3, 0.2, 0.9], [0.2, 1.4, 0.6, 0.4, 1.8], "pearson: every resample gives the same value"),
    ],
)
def test_degenerate_pairs_give_nan_with_a_note(x, y, note):
    res = paired_correlation(x, y, seed=0, n_resamples=199)
    assert note in res.note
    assert math.isnan(res.spearman_ci_low) and math.isnan(res.spearman_ci_high)
    assert math.isnan(res.pearson_ci_low) and math.isnan(res.pearson_ci_high)
    if "every resample" in note:  # y = 2x: r and ρ are 1 exactly, in every resample too
        assert res.pearson == res.spearman == 1.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(x=[1.0, 2, 3], y=[1.0, 2]), ValueError, "paired"),
        (dict(x=[[1.0, 2, 3]], y=[1.0, 2, 3]), ValueError, "1-D"),
        (dict(x=[1.0, np.inf, 3], y=[1.0, 2, 3]), ValueError, "infinite"),
        (dict(x=["a", "b", "c"], y=[1.0, 2, 3]), TypeError, "numbers"),
        (dict(ci_level=1.0), ValueError, "ci_level"),
        (dict(ci_level="0.9"), TypeError, "ci_level"),
        (dict(ci_method="basic"), ValueError, "ci_method"),
        (dict(n_resamples=0), ValueError, "n_resamples"),
        (dict(n_resamples=10.0), TypeError, "n_resamples"),
        (dict(seed=-1), ValueError, "seed"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, match):
    call = dict(x=[1.0, 2.0, 3.0, 5.0], y=[2.0, 1.0, 4.0, 3.0], seed=0) | kwargs
    with pytest.raises(error, match=match):
        paired_correlation(call.pop("x"), call.pop("y"), **call)


def test_pairwise_correlations_of_the_published_table_are_numpys(shared_data):
    table = iat_table(shared_data)
    res = pairwise_correlations(table, seed=3, n_resamples=999)
    assert res.labels == ("subt", "wiki", "cc") and res.pairs == ((0, 1), (0, 2), (1, 2))
    for (i, j), pair in zip(res.pairs, res.results):
        n, pearson, spearman = numpy_correlations(table[res.labels[i]], table[res.labels[j]])
        assert pair.n == n
        assert abs(pair.pearson - pearson) < 1e-9 and abs(pair.spearman - spearman) < 1e-9
        assert pair.pearson_ci_low < pair.pearson < pair.pearson_ci_high
        assert pair.spearman_ci_low < pair.spearman < pair.spearman_ci_high
        assert pair == paired_correlation(table[res.labels[i]], table[res.labels[j]], seed=3, n_resamples=999)
    # the languages with a value: 27 subtitles, 32 Wikipedia, 29 Common Crawl (26 of them with subtitles)
    assert res.get("cc", "subt").n == 26 and res.get("wiki", "cc").n == 29 and res.get("subt", "wiki").n == 27
    matrix = res.matrix("spearman")
    assert matrix[0, 2] == matrix[2, 0] == res.get("subt", "cc").spearman and np.all(np.diag(matrix) == 1.0)
    assert res.matrix("n").tolist() == [[27, 27, 26], [27, 32, 29], [26, 29, 29]]
    assert np.isnan(np.diag(res.matrix("pearson_ci_low"))).all()
    with pytest.raises(KeyError, match="no pair"):
        res.get("cc", "cc")
    with pytest.raises(ValueError, match="field"):
        res.matrix("slope")


def test_pairwise_correlations_of_an_array_and_bad_tables():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(12, 3))
    res = pairwise_correlations(data, seed=0, n_resamples=199)
    assert res.labels == ("0", "1", "2") and res.n_present == (12, 12, 12)
    assert res.results[1] == paired_correlation(data[:, 0], data[:, 2], seed=0, n_resamples=199)
    with pytest.raises(ValueError, match="at least 2 columns"):
        pairwise_correlations(data[:, :1], seed=0)
    with pytest.raises(ValueError, match="one length"):
        pairwise_correlations({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0]}, seed=0)


# ----------------------------------------------------------------------------------------------
# ICC(2,1)

SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float
)


def pingouin_icc2(table, level=0.95):
    pd = pytest.importorskip("pandas")
    pg = pytest.importorskip("pingouin")
    n, k = table.shape
    long = pd.DataFrame(
        {
            "target": np.repeat(np.arange(n), k),
            "rater": np.tile(np.arange(k), n),
            "score": table.ravel(),
        }
    )
    out = pg.intraclass_corr(long, targets="target", raters="rater", ratings="score")
    # ICC(2,1): "ICC2" in pingouin before 0.6, McGraw & Wong's "ICC(A,1)" since
    return out[out["Type"].isin(["ICC2", "ICC(A,1)"])].iloc[0]


def test_icc_reproduces_shrout_and_fleiss_table_2():
    res = intraclass_correlation(SHROUT_FLEISS)
    assert round(res.icc, 2) == 0.29  # Shrout & Fleiss 1979, Table 4, ICC(2,1)
    assert (res.n, res.k, res.df1, res.df2, res.n_dropped) == (6, 4, 5, 15, 0)


@pytest.mark.parametrize("dataset", ["shrout_fleiss", "offset_raters", "iat"])
def test_icc_is_pingouins(dataset, request):
    if dataset == "shrout_fleiss":
        table = SHROUT_FLEISS
    elif dataset == "offset_raters":
        rng = np.random.default_rng(5)
        table = rng.normal(size=(40, 1)) + rng.normal(scale=0.7, size=(40, 5)) + [0.0, 0.3, -0.2, 0.5, 0.1]
    else:
        columns = iat_table(request.getfixturevalue("shared_data"))
        table = np.column_stack(list(columns.values()))
        table = table[~np.isnan(table).any(axis=1)]
        assert table.shape == (26, 3)
    oracle = pingouin_icc2(table)
    res = intraclass_correlation(table)
    assert res.icc == pytest.approx(oracle["ICC"], abs=1e-12)
    assert res.f_statistic == pytest.approx(oracle["F"], rel=1e-12)
    assert (res.df1, res.df2) == (oracle["df1"], oracle["df2"])
    assert res.p_value == pytest.approx(oracle["pval"], rel=1e-9, abs=1e-300)
    # pingouin rounds its interval to 2 decimals
    assert [round(res.ci_low, 2), round(res.ci_high, 2)] == pytest.approx(list(oracle["CI95"]), abs=1e-12)


def test_icc_against_the_anova_written_here_at_another_level():
    rng = np.random.default_rng(9)
    y = rng.normal(size=(15, 1)) + rng.normal(scale=0.5, size=(15, 3)) + [0.0, 0.4, -0.1]
    n, k = y.shape
    grand = y.mean()
    msr = k * ((y.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((y.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    sse = ((y - grand) ** 2).sum() - (n - 1) * msr - (k - 1) * msc
    mse = sse / ((n - 1) * (k - 1))
    icc = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    a, b = k * icc / (n * (1 - icc)), 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    fl, fu = stats.f.ppf(0.95, n - 1, v), stats.f.ppf(0.95, v, n - 1)
    low = n * (msr - fl * mse) / (fl * (k * msc + (k * n - k - n) * mse) + n * msr)
    high = n * (fu * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fu * msr)
    res = intraclass_correlation({"cc": y[:, 0], "wiki": y[:, 1], "subt": y[:, 2]}, ci_level=0.9)
    assert (res.icc, res.ci_low, res.ci_high) == pytest.approx((icc, low, high), rel=1e-12)
    assert (res.ms_targets, res.ms_raters, res.ms_error) == pytest.approx((msr, msc, mse), rel=1e-12)
    assert res.labels == ("cc", "wiki", "subt") and res.ci_level == 0.9


def test_icc_counts_an_offset_rater_as_disagreement_and_drops_incomplete_targets():
    rng = np.random.default_rng(1)
    x = rng.normal(size=30)
    same = intraclass_correlation(np.column_stack([x, x + rng.normal(scale=0.1, size=30)]))
    shifted = intraclass_correlation(np.column_stack([x, x + 1.0 + rng.normal(scale=0.1, size=30)]))
    assert same.icc > 0.98 and shifted.icc < 0.6  # the correlations are the same for both
    with_gap = np.column_stack([x, x + 0.1, x - 0.2])
    with_gap[[3, 8], [0, 2]] = np.nan
    res = intraclass_correlation(with_gap)
    assert (res.n, res.n_dropped) == (28, 2)
    assert res.icc == intraclass_correlation(np.delete(with_gap, [3, 8], axis=0)).icc


def test_icc_degenerate_data():
    assert "at least 2" in intraclass_correlation([[1.0, 2.0], [np.nan, 1.0]]).note
    assert "same" in intraclass_correlation(np.ones((4, 3))).note
    exact = intraclass_correlation([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]])  # rater 2 = rater 1 + 1
    assert "MSE = 0" in exact.note and math.isnan(exact.ci_low) and 0 < exact.icc < 1
    with pytest.raises(ValueError, match="at least 2 raters"):
        intraclass_correlation(np.ones((4, 1)))


# ----------------------------------------------------------------------------------------------
# Item moments: one pass, merged in any order, bit for bit


def random_partition(rng, n_rows, n_parts):
    cuts = np.sort(rng.choice(np.arange(1, n_rows), size=n_parts - 1, replace=False))
    return list(zip(np.r_[0, cuts], np.r_[cuts, n_rows]))


def merge_as_tree(rng, parts):
    parts = list(parts)
    while len(parts) > 1:
        i = int(rng.integers(len(parts) - 1))
        a, b = parts[i], parts[i + 1]
        parts[i : i + 2] = [merge_item_moments(b, a) if rng.random() < 0.5 else merge_item_moments(a, b)]
    return parts[0]


@pytest.fixture(scope="module")
def vocabulary_scores():
    """10,000 words × 6 items, far from 0 (cancellation in raw sums), some words without a vector."""
    rng = np.random.default_rng(42)
    true = rng.normal(size=(10_000, 1))
    x = 100.0 + true + rng.normal(scale=[0.5, 0.7, 1.0, 1.5, 0.8, 3.0], size=(10_000, 6))
    x[rng.choice(10_000, 37, replace=False), rng.integers(0, 6, 37)] = np.nan
    return x


def test_item_moments_equal_the_one_shot_computation(vocabulary_scores):
    x = vocabulary_scores
    keep = ~np.isnan(x).any(axis=1)
    totals = item_moments(x).totals()
    assert (totals.n, totals.n_skipped, totals.k) == (keep.sum(), 10_000 - keep.sum(), 6)
    centred = x[keep] - x[keep].mean(axis=0)
    assert np.allclose(totals.mean, x[keep].mean(axis=0), rtol=1e-14, atol=0)
    assert np.abs(totals.comoment - centred.T @ centred).max() < 1e-12 * np.abs(centred.T @ centred).max()
    assert np.allclose(totals.covariance, np.cov(x[keep].T), rtol=1e-12, atol=0)
    assert cronbach_alpha(x).alpha == pytest.approx(brute_alpha(x[keep]), abs=1e-12)


def test_item_moments_are_bit_identical_whatever_the_chunks_and_merges(vocabulary_scores):
    x = vocabulary_scores
    whole = item_moments(x).totals()
    rng = np.random.default_rng(0)
    partitions = [
        [(0, 10_000)],
        [(a, min(a + MOMENT_BLOCK, 10_000)) for a in range(0, 10_000, MOMENT_BLOCK)],  # aligned on leaves
        [(a, min(a + 1, 10_000)) for a in range(0, 3000)] + [(3000, 10_000)],  # single rows
        *(random_partition(rng, 10_000, n) for n in (2, 7, 50, 400)),
    ]
    for partition in partitions:
        parts = [item_moments(x[a:b], start=a) for a, b in partition]
        for merged in (
            merge_item_moments(*parts),
            merge_item_moments(*parts[::-1]),
            merge_as_tree(rng, parts),
            merge_as_tree(rng, [merge_item_moments(p) for p in rng.permutation(np.array(parts, dtype=object))]),
        ):
            totals = merged.totals()
            assert (totals.n, totals.n_skipped) == (whole.n, whole.n_skipped)
            assert np.array_equal(totals.mean, whole.mean) and np.array_equal(totals.comoment, whole.comoment)
            assert merged.ranges == ((0, 10_000),) and merged.n_rows == 10_000
    # a state holds moments of complete leaves and at most the rows of two partial leaves per gap
    state = merge_item_moments(*[item_moments(x[a:b], start=a) for a, b in random_partition(rng, 10_000, 9)])
    assert sum(rows.shape[0] for _, rows in state.pieces) < MOMENT_BLOCK
    assert _same_alpha(cronbach_alpha(state), cronbach_alpha(x))


def _same_alpha(a, b):
    return all(
        np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
        for f in ("alpha", "item_variance", "item_rest_correlation", "alpha_if_deleted")
    )


def test_item_moments_with_gaps_and_other_leaves():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3000, 3))
    first, last, middle = (
        item_moments(x[:1000]),
        item_moments(x[2000:], start=2000),
        item_moments(x[1000:2000], start=1000),
    )
    gap = merge_item_moments(first, last)
    assert gap.ranges == ((0, 1000), (2000, 3000)) and gap.totals().n == 2000
    assert np.allclose(gap.totals().comoment, item_moments(np.r_[x[:1000], x[2000:]]).totals().comoment, rtol=1e-12)
    filled = merge_item_moments(gap, middle).totals()
    assert np.array_equal(filled.comoment, item_moments(x).totals().comoment)
    small = merge_item_moments(*[item_moments(x[a : a + 100], start=a, block=64) for a in range(0, 3000, 100)])
    assert np.allclose(small.totals().comoment, item_moments(x).totals().comoment, rtol=1e-12)
    with pytest.raises(ValueError, match="more than one"):
        merge_item_moments(first, item_moments(x[999:1500], start=999))
    with pytest.raises(ValueError, match="different items or leaves"):
        merge_item_moments(first, item_moments(x[1000:2000], start=1000, block=64))
    with pytest.raises(ValueError, match="different items or leaves"):
        merge_item_moments(first, item_moments(x[1000:2000, :2], start=1000))
    with pytest.raises(ValueError, match="at least one"):
        merge_item_moments()
    with pytest.raises(TypeError, match="ItemMoments"):
        merge_item_moments(first, x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        item_moments(x, start=-1)
    with pytest.raises(ValueError, match="infinite"):
        item_moments(np.array([[1.0, np.inf]]))
    empty = item_moments(np.empty((0, 3))).totals()
    assert empty.n == 0 and np.isnan(empty.mean).all()
    assert isinstance(first, ItemMoments) and first.k == 3 and first.block == MOMENT_BLOCK


# ----------------------------------------------------------------------------------------------
# Cronbach's alpha


def test_alpha_and_item_statistics_are_the_brute_force_ones():
    rng = np.random.default_rng(8)
    true = rng.normal(size=(80, 1))
    x = np.hstack([true + rng.normal(scale=s, size=(80, 1)) for s in (0.5, 1.0, 2.0, 0.8)])
    x = np.hstack([x, rng.normal(size=(80, 1))])
    res = cronbach_alpha(x)
    assert res.alpha == pytest.approx(brute_alpha(x), abs=1e-13)
    total = x.sum(axis=1)
    for j in range(5):
        rest = total - x[:, j]
        assert res.item_total_correlation[j] == pytest.approx(np.corrcoef(x[:, j], total)[0, 1], abs=1e-13)
        assert res.item_rest_correlation[j] == pytest.approx(np.corrcoef(x[:, j], rest)[0, 1], abs=1e-13)
        assert res.alpha_if_deleted[j] == pytest.approx(brute_alpha(np.delete(x, j, axis=1)), abs=1e-13)
    assert np.allclose(res.item_variance, x.var(axis=0, ddof=1), rtol=1e-13)
    assert res.total_variance == pytest.approx(total.var(ddof=1), rel=1e-13)
    assert int(np.argmax(res.alpha_if_deleted)) == 4 and res.item_rest_correlation[4] < 0.2
    pg = pytest.importorskip("pingouin")
    import pandas as pd

    assert res.alpha == pytest.approx(pg.cronbach_alpha(pd.DataFrame(x))[0], abs=1e-12)


def test_alpha_of_parallel_items_is_the_spearman_brown_prophecy():
    # k items with equal variances and equal covariances: α = k r / (1 + (k - 1) r) exactly
    k, r = 6, 0.3
    cov = np.full((k, k), r) + (1 - r) * np.eye(k)
    x = np.random.default_rng(0).normal(size=(500, k))
    x = (x - x.mean(axis=0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(x.T))).T @ np.linalg.cholesky(cov).T
    assert cronbach_alpha(x).alpha == pytest.approx(k * r / (1 + (k - 1) * r), abs=1e-12)


def test_alpha_degenerate():
    assert "at least 2" in cronbach_alpha(np.ones((5, 1))).note
    assert "at least 2" in cronbach_alpha([[1.0, 2.0]]).note
    flat = cronbach_alpha(np.ones((5, 3)))
    assert math.isnan(flat.alpha) and "no variance" in flat.note
    res = cronbach_alpha([[1.0, 2.0], [2.0, 2.5], [np.nan, 1.0], [3.0, 3.0]])
    assert (res.n, res.n_skipped) == (3, 1) and math.isnan(res.alpha_if_deleted[0])


# ----------------------------------------------------------------------------------------------
# Split halves


def brute_split_half(a_items, b_items, splits):
    rs = []
    for a1, b1 in splits:
        a2 = [j for j in range(a_items.shape[1]) if j not in a1]
        b2 = [j for j in range(b_items.shape[1]) if j not in b1]
        s1, s2 = a_items[:, list(a1)].mean(axis=1), a_items[:, a2].mean(axis=1)
        if b_items.shape[1]:
            s1, s2 = s1 - b_items[:, list(b1)].mean(axis=1), s2 - b_items[:, b2].mean(axis=1)
        rs.append(np.corrcoef(s1, s2)[0, 1])
    r = float(np.mean(rs))
    return 2 * r / (1 + r), r, rs


def cell_cosines(seed=0, n_targets=16, n_a=5, n_b=4):
    rng = np.random.default_rng(seed)
    lean = rng.normal(size=(n_targets, 1))
    cos_a = 0.3 + 0.1 * lean + 0.1 * rng.normal(size=(n_targets, n_a))
    cos_b = 0.3 - 0.05 * lean + 0.1 * rng.normal(size=(n_targets, n_b))
    return cos_a, cos_b


def test_split_half_enumerates_every_split_like_brute_force():
    cos_a, cos_b = cell_cosines()
    items = np.hstack([cos_a, -cos_b])
    res = split_half(items, n_a=5, seed=0)
    splits = list(itertools.product(itertools.combinations(range(5), 2), itertools.combinations(range(4), 2)))
    reliability, r, rs = brute_split_half(cos_a, cos_b, splits)
    assert res.exact and res.n_splits == len(splits) == 60
    assert res.reliability == pytest.approx(reliability, abs=1e-12) and res.correlation == pytest.approx(r, abs=1e-12)
    low, high = np.quantile(rs, [0.025, 0.975])
    assert res.reliability_low == pytest.approx(2 * low / (1 + low), abs=1e-12)
    assert res.reliability_high == pytest.approx(2 * high / (1 + high), abs=1e-12)
    assert res == split_half(item_moments(items), n_a=5, seed=0)


def test_split_half_draws_the_documented_random_splits():
    cos_a, cos_b = cell_cosines(seed=1, n_targets=30, n_a=12, n_b=10)
    items = np.hstack([cos_a, -cos_b])
    res = split_half(items, n_a=12, seed=7, n_splits=300)
    splits = []
    for i in range(300):
        rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(i,)))
        splits.append((rng.permutation(12)[:6], rng.permutation(10)[:5]))
    reliability, r, _ = brute_split_half(cos_a, cos_b, splits)
    assert not res.exact and res.n_splits == 300
    assert res.reliability == pytest.approx(reliability, abs=1e-12) and res.correlation == pytest.approx(r, abs=1e-12)
    assert split_half(items, n_a=12, seed=8, n_splits=300).reliability != res.reliability


def test_split_half_of_base_pairs_and_of_a_fixed_side():
    rng = np.random.default_rng(4)
    pairs = rng.normal(size=(200, 1)) + rng.normal(size=(200, 7))  # 7 base pairs as one list
    res = split_half(pairs, seed=0)
    splits = [(c, ()) for c in itertools.combinations(range(7), 3)]
    assert res.exact and res.n_splits == 35
    assert res.reliability == pytest.approx(brute_split_half(pairs, np.zeros((200, 0)), splits)[0], abs=1e-12)
    cos_a, cos_b = cell_cosines(seed=2, n_a=6, n_b=1)
    fixed = split_half(np.hstack([cos_a, -cos_b]), n_a=6, seed=0)
    splits = [(c, (0,)) for c in itertools.combinations(range(6), 3)]
    rs = []
    for a1, _ in splits:
        a2 = [j for j in range(6) if j not in a1]
        rs.append(np.corrcoef(cos_a[:, list(a1)].mean(1) - cos_b[:, 0], cos_a[:, a2].mean(1) - cos_b[:, 0])[0, 1])
    assert fixed.correlation == pytest.approx(np.mean(rs), abs=1e-12) and "both halves" in fixed.note
    assert "no side" in split_half(np.hstack([cos_a[:, :1], -cos_b]), n_a=1, seed=0).note
    assert "at least 3" in split_half(pairs[:2], seed=0).note
    with pytest.raises(ValueError, match="n_a"):
        split_half(pairs, n_a=7, seed=0)
    with pytest.raises(ValueError, match="n_splits"):
        split_half(pairs, seed=0, n_splits=0)


# ----------------------------------------------------------------------------------------------
# Leave one out


def weat_d(s_x, s_y):
    pooled = np.r_[s_x, s_y]
    return (s_x.mean() - s_y.mean()) / pooled.std(ddof=1)


def test_leave_one_out_is_the_brute_force_range_and_names_the_word():
    cos_a, cos_b = cell_cosines(seed=5, n_targets=12, n_a=4, n_b=3)
    cos_a[:, 2] += np.linspace(0.5, -0.5, 12)  # a word that tracks the X/Y split
    names = ["a0", "a1", "a2", "a3", "b0", "b1", "b2"]

    def d(ia, ib):
        s = cos_a[:, ia].mean(axis=1) - cos_b[:, ib].mean(axis=1)
        return weat_d(s[:6], s[6:])

    res = leave_one_out(d, n_a=4, n_b=3, words=names)
    brute = []
    for j in range(7):
        ia = [i for i in range(4) if i != j] if j < 4 else list(range(4))
        ib = [i for i in range(3) if i != j - 4] if j >= 4 else list(range(3))
        s = cos_a[:, ia].mean(axis=1) - cos_b[:, ib].mean(axis=1)
        brute.append(weat_d(s[:6], s[6:]))
    assert res.statistic == pytest.approx(d(np.arange(4), np.arange(3)), abs=0)
    assert np.allclose(res.values, brute, rtol=0, atol=1e-14)
    most = int(np.argmax(np.abs(np.array(brute) - res.statistic)))
    assert (res.most_influential, res.word, res.shift) == (most, names[most], res.values[most] - res.statistic)
    assert res.word == "a2" and (res.low, res.high) == (min(brute), max(brute))


def test_leave_one_out_of_pairs_and_of_single_words():
    rng = np.random.default_rng(6)
    pair_scores = rng.normal(size=(50, 5)) + np.arange(5) ** 2
    calls = []

    def mean_score(ia, ib):
        calls.append((ia.tolist(), ib.tolist()))
        return float(pair_scores[:, ia].mean())

    res = leave_one_out(mean_score, n_a=5, n_b=5, paired=True, words=list("vwxyz"))
    assert all(a == b and len(a) == 4 for a, b in calls[1:]) and res.word == "z"
    assert np.allclose(res.values, [np.delete(pair_scores, j, axis=1).mean() for j in range(5)])
    single = leave_one_out(lambda ia, ib: 1.0 + len(ib), n_a=1, n_b=3)
    assert math.isnan(single.values[0]) and single.values[1:].tolist() == [3.0, 3.0, 3.0] and single.word == "1"
    none = leave_one_out(lambda ia, ib: 1.0, n_a=1, n_b=1)
    assert none.most_influential == -1 and "one word a side" in none.note
    with pytest.raises(ValueError, match="paired"):
        leave_one_out(mean_score, n_a=5, n_b=4, paired=True)
    with pytest.raises(ValueError, match="words must name"):
        leave_one_out(mean_score, n_a=5, n_b=5, paired=True, words=["x"] * 10)
    with pytest.raises(TypeError, match="one number"):
        leave_one_out(lambda ia, ib: np.ones(2), n_a=2, n_b=2)
    with pytest.raises(TypeError, match="callable"):
        leave_one_out(pair_scores, n_a=2, n_b=2)  # type: ignore[arg-type]


def test_internal_consistency_of_a_cell_is_the_three_oracles_at_once():
    pg = pytest.importorskip("pingouin")
    import pandas as pd

    cos_a, cos_b = cell_cosines(seed=9, n_targets=14, n_a=5, n_b=4)
    cos_a[:7] += 0.05
    items = np.hstack([cos_a, -cos_b])
    names = ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3"]
    res = internal_consistency(items, n_a=5, n_x=7, seed=3, words=names)
    assert res.alpha.alpha == pytest.approx(pg.cronbach_alpha(pd.DataFrame(items))[0], abs=1e-12)
    splits = list(itertools.product(itertools.combinations(range(5), 2), itertools.combinations(range(4), 2)))
    assert res.split_half.exact and res.split_half.n_splits == len(splits) == 60
    assert res.split_half.reliability == pytest.approx(brute_split_half(cos_a, cos_b, splits)[0], abs=1e-12)
    brute = []
    for j in range(9):
        a = np.delete(cos_a, j, axis=1) if j < 5 else cos_a
        b = np.delete(cos_b, j - 5, axis=1) if j >= 5 else cos_b
        s = a.mean(axis=1) - b.mean(axis=1)
        brute.append(weat_d(s[:7], s[7:]))
    s = cos_a.mean(axis=1) - cos_b.mean(axis=1)
    loo = res.leave_one_out
    assert loo is not None and loo.statistic == pytest.approx(weat_d(s[:7], s[7:]), abs=1e-14)
    assert np.allclose(loo.values, brute, rtol=0, atol=1e-14)
    assert loo.word == names[int(np.argmax(np.abs(np.array(brute) - loo.statistic)))]
    # the same figures from the items' moments (no d without the cases), and a seed only for random splits
    moments = internal_consistency(item_moments(items), n_a=5, seed=3)
    assert _same_alpha(moments.alpha, res.alpha) and moments.split_half == res.split_half
    assert moments.leave_one_out is None and (moments.n_a, res.n_a) == (5, 5)


def test_internal_consistency_of_base_pairs_and_a_test_of_its_own_d():
    rng = np.random.default_rng(12)
    pairs = rng.normal(size=(40, 4)) + rng.normal(size=(40, 1))
    res = internal_consistency(pairs, n_a=None, n_x=20, seed=0, words=["p", "q", "r", "s"])
    assert res.alpha.k == 4 and res.split_half.n_splits == 6  # {p, q} | {r, s} and the others
    brute = [weat_d(np.delete(pairs, j, 1).mean(1)[:20], np.delete(pairs, j, 1).mean(1)[20:]) for j in range(4)]
    assert res.leave_one_out is not None and np.allclose(res.leave_one_out.values, brute, rtol=0, atol=1e-14)
    calls = []

    def own(ia, ib):
        calls.append((ia.tolist(), ib.tolist()))
        return float(len(ia) + 10 * len(ib))

    mine = internal_consistency(pairs, n_a=1, effect_size=own, seed=0).leave_one_out
    assert mine is not None and mine.statistic == 31.0 and calls[0] == ([0], [0, 1, 2])
    assert math.isnan(mine.values[0]) and mine.values[1:].tolist() == [21.0, 21.0, 21.0]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_a": 2, "n_x": 3, "effect_size": lambda ia, ib: 0.0}, ValueError, "not both"),
        ({"n_a": 4}, ValueError, "leave at least one"),
        ({"n_a": 0}, ValueError, "at least 1"),
        ({"n_a": 2, "n_x": 6}, ValueError, "to Y"),
        ({"n_a": 2, "n_x": 0}, ValueError, "at least 1"),
        ({"n_a": 2, "seed": -1}, ValueError, "non-negative"),
        ({"n_a": 2, "seed": 1.5}, TypeError, "integer"),
        ({"n_a": 2, "n_x": 3, "words": ["x"]}, ValueError, "words must name"),
    ],
)
def test_internal_consistency_refuses_bad_arguments(kwargs, error, match):
    items = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(error, match=match):
        internal_consistency(items, **{"seed": 0, **kwargs})
    with pytest.raises(ValueError, match="moments"):
        internal_consistency(item_moments(items), n_a=2, n_x=3, seed=0)
    with pytest.raises(ValueError, match="2-D"):
        internal_consistency(items[0], n_a=2, seed=0)


# ----------------------------------------------------------------------------------------------
# Agreement of scoring rules over a vocabulary


def test_score_correlation_is_numpys_from_merged_chunks():
    rng = np.random.default_rng(12)
    u = rng.normal(size=6000)
    rules = np.column_stack([u, 0.9 * u + 0.3 * rng.normal(size=6000), -u + rng.normal(size=6000), np.ones(6000)])
    rules[[5, 77], [1, 2]] = np.nan
    merged = merge_item_moments(*[item_moments(rules[a : a + 700], start=a) for a in range(0, 6000, 700)])
    res = score_correlation(merged, labels=["cosine", "ripa", "semaxis", "flat"], ci_level=0.9)
    keep = ~np.isnan(rules).any(axis=1)
    expected = np.corrcoef(rules[keep, :3].T)
    assert (res.n, res.n_skipped) == (5998, 2)
    assert np.allclose(res.correlation[:3, :3], expected, rtol=0, atol=1e-13)
    assert np.isnan(res.correlation[3]).all() and np.isnan(res.correlation[:, 3]).all()
    z, half = np.arctanh(expected[0, 1]), stats.norm.ppf(0.95) / math.sqrt(5998 - 3)
    assert (res.ci_low[0, 1], res.ci_high[0, 1]) == pytest.approx((np.tanh(z - half), np.tanh(z + half)), abs=1e-13)
    assert np.isnan(np.diag(res.ci_low)).all() and res.labels[2] == "semaxis"
    whole = score_correlation(rules, labels=res.labels, ci_level=0.9)
    assert np.array_equal(res.correlation, whole.correlation, equal_nan=True)
    with pytest.raises(ValueError, match="labels"):
        score_correlation(rules, labels=["a", "b"])


# ----------------------------------------------------------------------------------------------
# The IAT reference vectors: career/family in English, three corpora


@pytest.mark.parametrize("corpus", ["wiki", "cc", "subt"])
def test_internal_consistency_of_the_english_career_family_cell(corpus, shared_data):
    vectors = read_vec(shared_data / "iat" / corpus / "en.vec")
    targets = unit(np.array([vectors[w] for w in MALE + FEMALE]))
    cos_a = targets @ unit(np.array([vectors[w] for w in CAREER])).T
    cos_b = targets @ unit(np.array([vectors[w] for w in FAMILY])).T

    def d(ia, ib):
        s = cos_a[:, ia].mean(axis=1) - cos_b[:, ib].mean(axis=1)
        return weat_d(s[:8], s[8:])

    res = leave_one_out(d, n_a=8, n_b=8, words=CAREER + FAMILY)
    published = iat_table(shared_data)[corpus][4]  # row 4 of the table: English
    assert abs(res.statistic - published) < 1e-9
    assert res.low <= published <= res.high and res.word in CAREER + FAMILY
    items = np.hstack([cos_a, -cos_b])
    alpha = cronbach_alpha(items)
    assert alpha.alpha == pytest.approx(brute_alpha(items), abs=1e-12) and alpha.n == 16 and alpha.k == 16
    half = split_half(items, n_a=8, seed=0)
    splits = list(itertools.product(itertools.combinations(range(8), 4), itertools.combinations(range(8), 4)))
    assert half.exact and half.n_splits == 4900
    assert half.reliability == pytest.approx(brute_split_half(cos_a, cos_b, splits)[0], abs=1e-12)
