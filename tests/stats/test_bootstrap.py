"""Bootstrap intervals: coverage of the set-test interval, the attribute bootstrap against its exact
distribution (every resample enumerated, d by brute force over every word), degenerate cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from biasdask.stats.association import linear_directions
from biasdask.stats.bootstrap import attribute_bootstrap_interval, bootstrap_effect_size, studentized_bounds
from biasdask.stats.effect import effect_size
from biasdask.stats.placebo import linear_moments, moment_rows, weighted_effect_size
from biasdask.stats.weights import zipf_weights

# WEAT-like data: 50-dimensional Gaussian vectors, 8 + 8 targets, 8 + 8 fixed attribute vectors; the target
# words of X are shifted by c along the attributes' direction, so d grows with c towards its bound.
_DIM, _SETS = 50, 8
_ATTRIBUTES = np.random.default_rng(12345).standard_normal((2 * _SETS, _DIM))


def _word_scores(vectors: np.ndarray) -> np.ndarray:
    """s(w, A, B) = mean cos(w, a) - mean cos(w, b) of each row (written out, not the package's)."""
    unit = vectors / np.sqrt(np.square(vectors).sum(axis=-1, keepdims=True))
    att = _ATTRIBUTES / np.sqrt(np.square(_ATTRIBUTES).sum(axis=1, keepdims=True))
    cosines = unit @ att.T
    return cosines[..., :_SETS].mean(axis=-1) - cosines[..., _SETS:].mean(axis=-1)


def _targets(shift: float, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    att = _ATTRIBUTES / np.sqrt(np.square(_ATTRIBUTES).sum(axis=1, keepdims=True))
    direction = att[:_SETS].mean(axis=0) - att[_SETS:].mean(axis=0)
    direction /= np.sqrt(np.square(direction).sum())
    x = _word_scores(rng.standard_normal((*shape, _DIM)) + shift * direction)
    return x, _word_scores(rng.standard_normal((*shape, _DIM)))


def _population_d(shift: float) -> float:
    # d of 200,000 + 200,000 words: the estimand (μ_X - μ_Y) / sqrt(mean within-set variance + Δ²/4) to ±0.005
    x, y = _targets(shift, np.random.default_rng(1), (200_000,))
    pooled = np.concatenate([x, y])
    return float((x.mean() - y.mean()) / pooled.std(ddof=1))


def test_studentized_interval_covers_weat_d_up_to_its_bound():
    # 400 replicates at each of 7 values of d from 0 to 1.89 (the bound is 1.94): a coverage of 0.93
    # would be measured at 0.905 or more in 97.5 % of such runs (SE 0.013), and 0.93 or more over all
    # 2,800 (SE 0.005). Measured with 4,000 replicates: 0.953, 0.948, 0.952, 0.942, 0.940, 0.940, 0.942.
    # The 95 % BCa interval of the resampled words (``ci_method="BCa"``) covers 0.89 at d = 1.42, 0.87 at
    # 1.56 and 0.55 at 1.89 on these data, and fails this test.
    coverage = {}
    for shift in (0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 6.0):  # d = 0, 0.90, 1.42, 1.57, 1.67, 1.79, 1.89
        theta = _population_d(shift)
        x, y = _targets(shift, np.random.default_rng(int(100 * shift) + 7), (400, _SETS))
        low, high, _ = studentized_bounds(x, y, seed=3)
        coverage[round(theta, 2)] = float(np.mean((low <= theta) & (theta <= high)))
        assert np.all(low > -2) and np.all(high < 2)  # within d's range, like d itself
    assert min(coverage.values()) >= 0.905 and np.mean(list(coverage.values())) >= 0.93, coverage


def test_studentized_bounds_are_the_single_set_interval_row_by_row():
    x, y = _targets(2.0, np.random.default_rng(4), (3, _SETS))
    low, high, se = studentized_bounds(x, y, seed=8, n_resamples=999)
    for i in range(3):
        one = bootstrap_effect_size(x[i], y[i], seed=8, n_resamples=999)
        assert (one.ci_low, one.ci_high, one.se) == pytest.approx((low[i], high[i], se[i]), rel=1e-12)
        assert one.ci_low < one.effect_size < one.ci_high and one.ci_method == "studentized"


def test_studentized_interval_is_the_normal_theory_interval_for_normal_data():
    # Oracle: for normal sets of equal variance the exact interval of δ inverts the noncentral t
    # distribution of g·sqrt(n_x n_y / n) (Hedges & Olkin 1985; scipy.special.nctdtrinc); mapped to
    # d's population value it is what the studentized bootstrap approximates (to ±0.05 with 8 + 8).
    from scipy import special

    rng = np.random.default_rng(21)
    x, y = rng.normal(1.2, 1.0, 8), rng.normal(0.0, 1.0, 8)
    within = np.sqrt((np.square(x - x.mean()).sum() + np.square(y - y.mean()).sum()) / 14)
    scale = math.sqrt(8 * 8 / 16)
    t = (x.mean() - y.mean()) / within * scale
    exact = [special.nctdtrinc(14, q, t) / scale for q in (0.975, 0.025)]
    theta = [e / math.sqrt(1 + e * e / 4) for e in exact]
    res = bootstrap_effect_size(x, y, seed=2)
    assert (res.ci_low, res.ci_high) == pytest.approx(theta, abs=0.05)


def test_interval_is_reproducible_and_seeded():
    rng = np.random.default_rng(1)
    x, y = rng.normal(0.4, 1, 12), rng.normal(0, 1, 9)
    a = bootstrap_effect_size(x, y, seed=5, n_resamples=2000)
    b = bootstrap_effect_size(x, y, seed=5, n_resamples=2000)
    c = bootstrap_effect_size(x, y, seed=6, n_resamples=2000)
    assert (a.ci_low, a.ci_high, a.se) == (b.ci_low, b.ci_high, b.se)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.effect_size == pytest.approx(effect_size(x, y), rel=1e-12)
    assert (
        a.ci_method == "studentized" and a.ci_level == 0.95 and a.n_resamples == 2000 and a.seed == 5 and a.note == ""
    )
    bca = bootstrap_effect_size(x, y, seed=5, n_resamples=2000, ci_method="BCa")
    pct = bootstrap_effect_size(x, y, seed=5, n_resamples=2000, ci_method="percentile", ci_level=0.9)
    assert bca.ci_method == "BCa" and pct.ci_method == "percentile" and pct.ci_low != bca.ci_low
    assert pct.ci_high - pct.ci_low < bca.ci_high - bca.ci_low + 0.5  # a 90 % interval, same resamples
    narrow = bootstrap_effect_size(x, y, seed=5, n_resamples=2000, ci_level=0.8)
    assert a.ci_low < narrow.ci_low < narrow.ci_high < a.ci_high


@pytest.mark.parametrize(
    "x, y, note",
    [
        ([1.0], [0.0, 0.5, 0.2], "cannot be resampled"),
        ([1.0, 2.0], [0.5], "cannot be resampled"),
        ([0.3, 0.3], [0.3, 0.3, 0.3], "no spread"),
        ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], "do not vary within"),
    ],
)
def test_degenerate_sets_give_nan_intervals_with_a_note(x, y, note):
    res = bootstrap_effect_size(x, y, seed=0, n_resamples=200)
    assert math.isnan(res.ci_low) and math.isnan(res.ci_high)
    assert note in res.note
    if note.startswith("do not"):  # the words resampled: every resample gives the same d
        bca = bootstrap_effect_size(x, y, seed=0, n_resamples=200, ci_method="BCa")
        assert math.isnan(bca.ci_low) and "same value" in bca.note


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(seed=-1), ValueError),
        (dict(seed=None), TypeError),
        (dict(seed=0, ci_level=1.0), ValueError),
        (dict(seed=0, ci_method="basic"), ValueError),
        (dict(seed=0, n_resamples=0), ValueError),
    ],
)
def test_bootstrap_checks_its_arguments(kwargs, error):
    with pytest.raises(error):
        bootstrap_effect_size([1.0, 2.0], [0.0, 1.0], **kwargs)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_effect_size([1.0, np.nan], [0.0, 1.0], seed=0)


# ----------------------------------------------------------------------------------------------
# Over attribute words


def _vocab(seed, n=1500, dim=10):
    rng = np.random.default_rng(seed)
    vocab = rng.normal(size=(n, dim)) + 2.0 * rng.normal(size=dim)
    z = np.stack([np.ones(n), zipf_weights(np.arange(1, n + 1), n)])
    return rng, vocab, z


def _exact_distribution(kind, vocab, z, a, b):
    """d and the zipf-weighted effect size of every equally likely ordered resample, by brute force."""
    v = moment_rows(kind, vocab)
    if kind == "ripa":
        combos = [(c, c) for c in itertools.product(range(len(a)), repeat=len(a))]
    else:
        combos = itertools.product(
            itertools.product(range(len(a)), repeat=len(a)), itertools.product(range(len(b)), repeat=len(b))
        )
    d, dw = [], []
    for ia, ib in combos:
        u = v @ linear_directions(kind, a[list(ia)], b[list(ib)])
        d.append(effect_size(u, len(u)))
        dw.append(weighted_effect_size(u, z[1], np.zeros_like(u), z[1]))
    return np.array(d), np.array(dw)


@pytest.mark.parametrize("kind", ["cosine", "semaxis", "ripa"])
def test_attribute_percentile_interval_matches_the_exact_bootstrap_distribution(kind):
    rng, vocab, z = _vocab(11)
    n = 4 if kind == "ripa" else 3  # 4^4 pair resamples, 3^3 x 3^3 otherwise
    a = vocab[:n] + rng.normal(size=10)
    b = vocab[n : 2 * n]
    exact_d, exact_dw = _exact_distribution(kind, vocab, z, a, b)
    m = linear_moments(moment_rows(kind, vocab), z)
    res = attribute_bootstrap_interval(m, a, b, seed=2, association=kind, ci_method="percentile", n_resamples=20000)
    for values, low, high in (
        (exact_d, res.ci_low, res.ci_high),
        (exact_dw, res.weighted_ci_low[1], res.weighted_ci_high[1]),
    ):
        # each bound is the exact distribution's 2.5 % (97.5 %) quantile, up to sampling error (±0.01);
        # a bound on an atom of the distribution matches it to rounding (moments vs brute force)
        eps = 1e-9 * np.abs(values).max()
        for bound, q in ((low, 0.025), (high, 0.975)):
            assert np.mean(values < bound - eps) <= q + 0.01 and np.mean(values <= bound + eps) >= q - 0.01
    assert res.se == pytest.approx(exact_d.std(), rel=0.05)
    # the uniform weighting's weighted effect size is d, resample by resample
    assert res.weighted_ci_low[0] == pytest.approx(res.ci_low, rel=1e-9)
    assert res.weighted_se[0] == pytest.approx(res.se, rel=1e-9)
    u = moment_rows(kind, vocab) @ linear_directions(kind, a, b)
    assert res.effect_size == pytest.approx(effect_size(u, len(u)), rel=1e-9)


def test_attribute_bca_interval_is_seeded_and_brackets_d():
    rng, vocab, z = _vocab(4, dim=20)
    m = linear_moments(moment_rows("cosine", vocab), z)
    a, b = vocab[:6] + rng.normal(size=20), vocab[6:14]
    one = attribute_bootstrap_interval(m, a, b, seed=9, n_resamples=999)
    two = attribute_bootstrap_interval(m, a, b, seed=9, n_resamples=999)
    assert (one.ci_low, one.ci_high) == (two.ci_low, two.ci_high)
    np.testing.assert_array_equal(one.weighted_ci_high, two.weighted_ci_high)
    assert one.ci_method == "BCa" and one.ci_low < one.effect_size < one.ci_high
    assert one.effect_size_weighted.shape == (2,) and one.note == ""


def test_one_attribute_word_gives_nan_with_a_reason():
    _, vocab, z = _vocab(5)
    m = linear_moments(moment_rows("cosine", vocab), z)
    res = attribute_bootstrap_interval(m, vocab[:1], vocab[1:2], seed=0)
    assert math.isnan(res.ci_low) and np.isnan(res.weighted_ci_high).all() and res.n_resamples == 0
    assert "needs at least 2 on each side" in res.note
    assert math.isfinite(res.effect_size)  # the point estimate is still defined


def test_attribute_bootstrap_checks_its_arguments():
    _, vocab, z = _vocab(6)
    m = linear_moments(moment_rows("cosine", vocab), z)
    with pytest.raises(ValueError, match="needs a VocabularySample"):
        attribute_bootstrap_interval(m, vocab[:2], vocab[2:4], seed=0, association="euclidean")
    with pytest.raises(ValueError, match="shape"):
        attribute_bootstrap_interval(m, vocab[:2, :5], vocab[2:4], seed=0)
    with pytest.raises(ValueError, match="pairs"):
        attribute_bootstrap_interval(m, vocab[:2], vocab[2:5], seed=0, association="ripa")
