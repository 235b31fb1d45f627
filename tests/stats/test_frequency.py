"""Per-bin frequency profiles (Valentini et al. 2022) against naive per-bin loops and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biasdask.stats import frequency as fq


def _naive_profile(scores, keys, edges, closed):
    """Oracle: one boolean mask per bin, numpy mean/std on each (outermost bins closed on both sides)."""
    n_bins = len(edges) - 1
    out = {"count": [], "mean": [], "sd": [], "effect_size": []}
    finite = np.isfinite(scores)
    for i in range(n_bins):
        lo, hi = edges[i], edges[i + 1]
        if closed == "left":
            mask = (keys >= lo) & ((keys < hi) | ((i == n_bins - 1) & (keys == hi)))
        else:
            mask = ((keys > lo) | ((i == 0) & (keys == lo))) & (keys <= hi)
        vals = scores[mask & finite]
        out["count"].append(len(vals))
        out["mean"].append(np.mean(vals) if len(vals) else np.nan)
        sd = np.std(vals, ddof=1) if len(vals) >= 2 else np.nan
        out["sd"].append(sd)
        out["effect_size"].append(np.mean(vals) / sd if len(vals) >= 2 and sd > 0 else np.nan)
    return {k: np.array(v, dtype=float) for k, v in out.items()}


def _assert_matches(prof, oracle):
    np.testing.assert_array_equal(prof.count, oracle["count"])
    for name in ("mean", "sd", "effect_size"):
        np.testing.assert_allclose(getattr(prof, name), oracle[name], rtol=1e-9, atol=1e-12, equal_nan=True)


def test_rank_bin_edges():
    np.testing.assert_array_equal(fq.rank_bin_edges(2_000_000), [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 2e6])
    np.testing.assert_array_equal(fq.rank_bin_edges(1000), [1, 10, 100, 1000])
    np.testing.assert_array_equal(fq.rank_bin_edges(5), [1, 5])
    np.testing.assert_allclose(fq.rank_bin_edges(1000, step=0.5), 10 ** np.arange(0, 3.01, 0.5))
    with pytest.raises(ValueError, match="two words"):
        fq.rank_bin_edges(1)
    with pytest.raises(ValueError, match="step"):
        fq.rank_bin_edges(100, step=0)


def test_profile_by_rank_matches_naive_loop_over_many_draws():
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 5000))
        step = float(rng.choice([0.25, 0.5, 1.0]))
        scores = rng.normal(rng.uniform(-1, 1), rng.uniform(0.01, 2), size=n).astype(np.float32)
        scores[rng.random(n) < 0.05] = np.nan  # e.g. zero vectors
        ranks = rng.permutation(np.arange(1, n + 1))
        prof = fq.profile_by_rank(scores, ranks, step=step)
        edges = fq.rank_bin_edges(n, step)
        _assert_matches(prof, _naive_profile(scores.astype(np.float64), ranks, edges, "left"))
        assert prof.count.sum() + prof.n_outside == n
        assert prof.n_outside == int(np.isnan(scores).sum())
        assert prof.key == "rank" and prof.closed == "left"


def test_profile_by_rank_agrees_with_scipy_binned_statistic():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=123_456)
    prof = fq.profile_by_rank(scores)  # file order: ranks 1..N
    ranks = np.arange(1, len(scores) + 1)
    for stat, ours in (("count", prof.count), ("mean", prof.mean), ("std", None)):
        fn = (lambda v: np.std(v, ddof=1)) if stat == "std" else stat
        ref = stats.binned_statistic(ranks, scores, statistic=fn, bins=prof.edges).statistic
        np.testing.assert_allclose(prof.sd if ours is None else ours, ref, rtol=1e-9)
    np.testing.assert_array_equal(prof.count, [9, 90, 900, 9000, 90000, 123_456 - 99_999])


def test_profile_by_frequency_matches_naive_loop_and_seed_table_edges():
    # Valentini et al. 2022, Table 3: frequencies from 10^2 to 10^8.12 in half decades, [10^2, 10^2.5], (10^2.5, 10^3], ...
    edges = fq.frequency_bin_edges([100.0, 10**8.12], step=0.5)
    np.testing.assert_allclose(edges, np.append(10 ** np.arange(2, 8.01, 0.5), 10**8.12))
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(10, 3000))
        freqs = np.floor(10 ** rng.uniform(2, 7, size=n))
        freqs[rng.random(n) < 0.1] = 0  # no frequency known
        freqs[:3] = [100, 10**2.5, 1000]  # values on the edges
        scores = rng.normal(size=n)
        prof = fq.profile_by_frequency(scores, freqs, step=0.5)
        keys = np.where(freqs > 0, freqs, np.nan)
        _assert_matches(prof, _naive_profile(scores, keys, prof.edges, "right"))
        assert prof.count.sum() + prof.n_outside == n
        assert prof.n_outside == int((freqs == 0).sum())
    # 10^2.5 belongs to the first bin, (10^2.5, 10^3] starts just above it.
    on_edge = fq.frequency_bin_edges([100.0, 1000.0], step=0.5)[1]
    assert on_edge == pytest.approx(10**2.5)
    prof = fq.profile_by_frequency([1.0, 2.0, 3.0], [100.0, on_edge, 1000.0], step=0.5)
    np.testing.assert_array_equal(prof.count, [2, 1])
    assert prof.labels() == ["[10^2, 10^2.5]", "(10^2.5, 10^3]"]


def test_hand_computed_profile_and_undefined_bins():
    # Ranks 1..12: bins 1-9 and 10-12; one NaN score in the second bin, one word alone in a bin.
    scores = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 4, np.nan, 6], dtype=float)
    prof = fq.profile_by_rank(scores)
    np.testing.assert_array_equal(prof.count, [9, 2])
    np.testing.assert_allclose(prof.mean, [5.0, 5.0])
    np.testing.assert_allclose(prof.sd, [np.sqrt(7.5), np.sqrt(2.0)])
    np.testing.assert_allclose(prof.effect_size, [5 / np.sqrt(7.5), 5 / np.sqrt(2.0)])
    assert prof.labels() == ["1-9", "10-12"]
    single = fq.bin_profile([3.0, 4.0, 4.0], [1, 5, 6], [1, 2, 4, 10])
    np.testing.assert_array_equal(single.count, [1, 0, 2])
    assert np.isnan(single.sd[0]) and np.isnan(single.mean[1]) and np.isnan(single.effect_size[2])  # SD = 0


def test_bin_profile_validates_input():
    with pytest.raises(ValueError, match="strictly increasing"):
        fq.bin_profile([1.0, 2.0], [1, 2], [1, 1])
    with pytest.raises(ValueError, match="same length|one length"):
        fq.bin_profile([1.0, 2.0], [1], [1, 2])
    with pytest.raises(ValueError, match="positive"):
        fq.profile_by_frequency([1.0], [0.0])
