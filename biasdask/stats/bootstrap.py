"""Intervals for effect sizes: over the target words of a set test, and over the attribute words of a
full-vocabulary test.

Set tests (:func:`bootstrap_effect_size`)
    Sampling model: the target words X and Y (e.g. WEAT's flowers and insects) are samples from the
    populations of words that could stand for each concept; the attribute words are held fixed. The
    estimand is the population value of d = (mean u_X - mean u_Y) / sd(u over X ∪ Y, ddof 1):
    θ = δ / sqrt(1 + pqδ²), δ = (μ_X - μ_Y)/σ the standardised difference (σ² the mean of the two
    sets' variances), p = n_X/n, q = n_Y/n. In a sample d is the monotone function
    d = g·sqrt((n - 1)/((n - 2) + (n_X n_Y/n) g²)) of Hedges' g (the difference over the pooled
    within-set SD), so an interval for δ maps to one for θ.

    The default, ``"studentized"``, is a bootstrap-t (Efron & Tibshirani 1993, ch. 12) of g: each
    resample draws every set from a normal distribution with the set's own mean and SD (a parametric
    bootstrap, so sets of unequal spread stay unequal), t* = (g* - g)/SE(g*) with Hedges & Olkin
    1985's SE(g)² = n/(n_X n_Y) + g²/(2(n - 2)), and the interval [g - t*₁₋α/₂ SE(g), g - t*α/₂ SE(g)]
    is mapped to θ. Why not the resampling of words: with 8 words a set (WEAT's sizes) a resample
    repeats words, so its SD is biased low and takes few values, and every interval built on it
    undercovers where |d| is large (|d| < sqrt(n(n - 1)/(n_X n_Y)), 1.94 for 8 + 8 words, and its
    sampling distribution piles up against the bound). Measured on WEAT-like data (50-dimensional
    Gaussian vectors, 8 + 8 targets, fixed attributes; ``tests/stats/test_bootstrap.py``), the 95 %
    BCa interval of the resampled words covers 0.96 at d = 0, 0.92 at 0.9, 0.87-0.90 at 1.4-1.6 (where
    WEAT 1 sits) and 0.56 at 1.89 (400 replicates each); the studentized interval 0.94-0.95 at every d
    from 0 to 1.89 (4,000 replicates each). Its limit is the normal model: with heavy-tailed or skewed
    scores (t with 5 degrees of freedom, χ² with 4) it covers 0.95-0.97 at δ = 0, 0.92-0.93 at δ = 2
    (d = 1.41) and 0.87-0.90 at δ = 4 (d = 1.79), where the intervals that resample words do worse
    even on normal-like scores (BCa: 0.80 at d = 1.79). ``"BCa"`` (Efron 1987) and ``"percentile"`` resample the
    words (``scipy.stats.bootstrap``), X and Y apart, with replacement.

Full-vocabulary tests (:func:`attribute_bootstrap_interval`)
    There the "sample" of the dummy-language test is the vocabulary itself (N in the millions): a
    bootstrap over its words would give an interval of width ~1/√N around d, which says nothing about
    how d depends on the handful of words chosen to stand for *male* and *female*. The sampling model
    is therefore over the attribute words: A and B are samples of the words that could express each
    concept, resampled separately with replacement (RIPA's pairs are resampled as pairs); the
    vocabulary, its weights and the dummy language are fixed. Each resample's direction
    δ* = mean â* - mean b̂* (per association, :func:`biasdask.stats.association.linear_directions`) gives
    d* and the weighted effect sizes from the vocabulary's moments (:mod:`biasdask.stats.placebo`)
    without another pass over the words; the interval is ``scipy.stats.bootstrap``'s BCa (its
    acceleration from leave-one-out jackknives of each set in turn). With one word on a side (the
    catalog's single translation of *male* and *female*) there is nothing to resample: the interval
    is NaN and ``note`` says why.

Every interval is seeded: ``numpy.random.default_rng(SeedSequence(seed))``, so it is a function of its
data and seed alone. Degenerate data (a set of one word, no spread, every resample giving the same value)
give NaN intervals with a ``note``, never an error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from biasdask._calls import deprecated, keyword_api
from biasdask.stats.association import LINEAR_ASSOCIATIONS, Association, linear_directions
from biasdask.stats.checks import check_level
from biasdask.stats.placebo import (
    LinearMoments,
    VocabularySample,
    euclidean_statistics,
    unweighted_effect_sizes,
    weighted_statistics,
)

__all__ = [
    "INTERVAL_METHODS",
    "AttributeInterval",
    "IntervalAliases",
    "EffectSizeInterval",
    "attribute_bootstrap_interval",
    "bootstrap_bounds",
    "bootstrap_effect_size",
    "IntervalMethod",
    "RESAMPLING_METHODS",
    "ResamplingMethod",
    "studentized_bounds",
]

IntervalMethod = Literal["studentized", "BCa", "percentile"]
INTERVAL_METHODS: tuple[str, ...] = ("studentized", "BCa", "percentile")
ResamplingMethod = Literal["BCa", "percentile"]
#: the methods that resample the data (:func:`bootstrap_bounds`, :func:`attribute_bootstrap_interval`)
RESAMPLING_METHODS: tuple[str, ...] = ("BCa", "percentile")

_GATHER_BYTES = 32 * 2**20  # resampled attribute vectors held at once
#: the keywords of the confidence level and the kind of interval in earlier releases
_RENAMED = {"level": "ci_level", "method": "ci_method"}


class IntervalAliases:
    """Gives an interval the deprecated attributes ``level`` and ``method``: its ``ci_level`` and ``ci_method``."""

    @property
    def level(self) -> float:
        """Deprecated: :attr:`ci_level`."""
        deprecated(f"{type(self).__name__}.level is deprecated; use .ci_level")
        return self.ci_level  # type: ignore[attr-defined]

    @property
    def method(self) -> str:
        """Deprecated: :attr:`ci_method`."""
        deprecated(f"{type(self).__name__}.method is deprecated; use .ci_method")
        return self.ci_method  # type: ignore[attr-defined]


@dataclass(frozen=True)
class EffectSizeInterval(IntervalAliases):
    """A bootstrap interval of a set test's effect size (:func:`bootstrap_effect_size`).

    Attributes
    ----------
    effect_size : float
        d of the data (ddof 1).
    ci_low, ci_high : float
        The interval at ``ci_level``; NaN when undefined (see ``note``).
    se : float
        Bootstrap standard error (SD of the bootstrap distribution, ddof 1).
    ci_level : float
        Confidence level.
    ci_method : str
        ``"studentized"``, ``"BCa"`` or ``"percentile"``.
    n_resamples : int
        Bootstrap resamples (0 when none were drawn).
    seed : int
        The SeedSequence entropy used.
    note : str
        Why the interval is NaN; empty otherwise.
    """

    effect_size: float
    ci_low: float
    ci_high: float
    se: float
    ci_level: float
    ci_method: str
    n_resamples: int
    seed: int
    note: str = ""


@dataclass(frozen=True)
class AttributeInterval(IntervalAliases):
    """Intervals of a full-vocabulary test's effect sizes over resampled attribute words
    (:func:`attribute_bootstrap_interval`).

    Attributes
    ----------
    effect_size, ci_low, ci_high, se : float
        The unweighted d of the observed attribute sets, its interval at ``ci_level`` and bootstrap SE.
    effect_size_weighted, weighted_ci_low, weighted_ci_high, weighted_se : ndarray, shape (K,)
        The same for each weighting's weighted effect size.
    ci_level, ci_method, n_resamples, seed, note
        As in :class:`EffectSizeInterval`.
    """

    effect_size: float
    ci_low: float
    ci_high: float
    se: float
    effect_size_weighted: np.ndarray
    weighted_ci_low: np.ndarray
    weighted_ci_high: np.ndarray
    weighted_se: np.ndarray
    ci_level: float
    ci_method: str
    n_resamples: int
    seed: int
    note: str = ""


def _check_options(
    ci_level: float, ci_method: str, n_resamples: int, seed: int, methods: tuple[str, ...] = INTERVAL_METHODS
) -> None:
    check_level(ci_level)
    if ci_method not in methods:
        raise ValueError(f"ci_method must be one of {', '.join(methods)}; got {ci_method!r}")
    for name, value, low in (("n_resamples", n_resamples, 1), ("seed", seed, 0)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value}")


def bootstrap_bounds(
    data: tuple[NDArray, ...],
    statistic: Callable[..., NDArray],
    *,
    ci_level: float,
    ci_method: str,
    n_resamples: int,
    seed: int,
    batch: int | None = None,
) -> tuple[NDArray, NDArray, NDArray, str]:
    """:func:`scipy.stats.bootstrap` of a vectorised ``statistic`` along the last axis of ``data``, seeded by
    ``seed``: (low, high, se, note), the bounds NaN and ``note`` saying why where every resample gives the
    same value (no evidence of certainty) or scipy finds the distribution degenerate."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(divide="ignore", invalid="ignore"):
            res = stats.bootstrap(
                data,
                statistic,
                n_resamples=int(n_resamples),
                batch=batch,
                vectorized=True,
                axis=-1,
                confidence_level=float(ci_level),
                method=ci_method,
                rng=rng,
            )
    low, high = np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)
    se = np.asarray(res.standard_error)
    # every resample giving the same value is no evidence of certainty: no interval (not a 0-wide one)
    flat = ~(se > 0)
    low, high = np.where(flat, np.nan, low), np.where(flat, np.nan, high)
    degenerate = flat.any() or any(issubclass(w.category, stats.DegenerateDataWarning) for w in caught)
    note = (
        "every resample gives the same value, or some give none (they repeat too few cases): the interval is undefined"
        if degenerate
        else ""
    )
    return low, high, se, note


def _d(u_x: NDArray, u_y: NDArray, axis: int = -1) -> NDArray:
    """d along ``axis`` (ddof 1), NaN where the pooled SD is 0."""
    pooled = np.concatenate([u_x, u_y], axis=axis)
    sd = pooled.std(axis=axis, ddof=1)
    diff = u_x.mean(axis=axis) - u_y.mean(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.nan)


def _hedges_se(g: NDArray, n_x: int, n_y: int) -> NDArray:
    """Hedges & Olkin 1985's large-sample SE of the standardised difference g."""
    n = n_x + n_y
    return np.sqrt(n / (n_x * n_y) + g * g / (2.0 * (n - 2)))


def _theta(delta: NDArray, n_x: int, n_y: int) -> NDArray:
    """The population d of a standardised difference δ with the sets' shares p, q: δ / sqrt(1 + pqδ²)."""
    pq = n_x * n_y / float(n_x + n_y) ** 2
    return delta / np.sqrt(1.0 + pq * delta * delta)


def studentized_bounds(
    u_x: ArrayLike, u_y: ArrayLike, *, seed: int, ci_level: float = 0.95, n_resamples: int = 9999
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The studentized bootstrap interval of d along the last axis (see the module docstring).

    Every leading index is a data set of its own (e.g. the replicates of a simulation); they share
    the resamples' normal draws, so each row's interval is the one :func:`bootstrap_effect_size` gives
    that row alone with the same seed.

    Parameters
    ----------
    u_x, u_y
        Per-word values, shapes (..., n_x) and (..., n_y) with n_x, n_y ≥ 2 (leading axes broadcast).
    seed, ci_level, n_resamples
        As in :func:`bootstrap_effect_size`.

    Returns
    -------
    (low, high, se) : tuple of ndarray
        The interval of d at ``ci_level`` and the SD (ddof 1) of the resamples' d, shaped like the leading
        axes; NaN where the values do not vary within both sets (g undefined or infinite).

    Examples
    --------
    >>> low, high, se = studentized_bounds([[0.9, 1.4, 0.2, 1.1], [0.1, 0.2, 0.3, 0.4]],
    ...                                    [0.1, -0.3, 0.4, 0.0], seed=1, n_resamples=999)
    >>> low.shape, bool(np.all(low < high))
    ((2,), True)
    """
    _check_options(ci_level, "studentized", n_resamples, seed)
    x, y = np.asarray(u_x, dtype=np.float64), np.asarray(u_y, dtype=np.float64)
    n_x, n_y = x.shape[-1], y.shape[-1]
    if min(n_x, n_y) < 2:
        raise ValueError(f"the studentized interval needs 2 words a set at least, got {n_x} and {n_y}")
    n = n_x + n_y
    mean_x, mean_y = x.mean(axis=-1), y.mean(axis=-1)
    var_x = np.square(x - mean_x[..., None]).sum(axis=-1) / (n_x - 1)
    var_y = np.square(y - mean_y[..., None]).sum(axis=-1) / (n_y - 1)
    mean_x, mean_y, var_x, var_y = np.broadcast_arrays(mean_x, mean_y, var_x, var_y)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    z_x, z_y = rng.standard_normal((int(n_resamples), n_x)), rng.standard_normal((int(n_resamples), n_y))
    # a normal resample of a set is its mean + SD × z: only z's mean and sum of squares about it matter
    zbar_x, zbar_y = z_x.mean(axis=1), z_y.mean(axis=1)
    ss_x = np.square(z_x - zbar_x[:, None]).sum(axis=1)
    ss_y = np.square(z_y - zbar_y[:, None]).sum(axis=1)
    sd_x, sd_y = np.sqrt(var_x)[..., None], np.sqrt(var_y)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        within = np.sqrt(((n_x - 1) * var_x + (n_y - 1) * var_y) / (n - 2))
        g = (mean_x - mean_y) / within
        diff = (mean_x - mean_y)[..., None] + sd_x * zbar_x - sd_y * zbar_y
        within_ss = var_x[..., None] * ss_x + var_y[..., None] * ss_y
        g_star = diff / np.sqrt(within_ss / (n - 2))
        t_star = (g_star - g[..., None]) / _hedges_se(g_star, n_x, n_y)
        d_star = diff / np.sqrt((within_ss + (n_x * n_y / n) * diff * diff) / (n - 1))
    alpha = (1.0 - float(ci_level)) / 2.0
    defined = np.isfinite(g)
    t_safe = np.where(defined[..., None], t_star, 0.0)
    t_low, t_high = np.quantile(t_safe, [alpha, 1.0 - alpha], axis=-1)
    se_g = _hedges_se(g, n_x, n_y)
    low = np.where(defined, _theta(g - t_high * se_g, n_x, n_y), np.nan)
    high = np.where(defined, _theta(g - t_low * se_g, n_x, n_y), np.nan)
    se = np.where(defined, np.where(defined[..., None], d_star, 0.0).std(axis=-1, ddof=1), np.nan)
    return low, high, se


def _values(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of per-word values, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


@keyword_api("bootstrap_effect_size(u_x, u_y, seed=..., ci_level=..., ci_method=...)", renamed=_RENAMED)
def bootstrap_effect_size(
    u_x: ArrayLike,
    u_y: ArrayLike,
    *,
    seed: int,
    ci_level: float = 0.95,
    ci_method: IntervalMethod = "studentized",
    n_resamples: int = 9999,
) -> EffectSizeInterval:
    """A bootstrap interval for d = (mean u_X - mean u_Y) / sd(u_X ∪ u_Y, ddof 1).

    Parameters
    ----------
    u_x, u_y
        Per-word values of the target sets X and Y (e.g. WEAT's s(w, A, B) of each target word).
    seed
        Non-negative integer; the interval is a function of the data and the seed.
    ci_level
        Confidence level.
    ci_method
        ``"studentized"`` (the default: a bootstrap-t of a normal model of each set, which keeps its
        coverage up to the largest d; see the module docstring), ``"BCa"`` (bias-corrected and
        accelerated, Efron 1987) or ``"percentile"`` (these two resample the words).
    n_resamples
        Bootstrap resamples.

    Returns
    -------
    EffectSizeInterval
        NaN interval (with a ``note``) for a set of one word, a pooled SD of 0, values that do not
        vary within the sets (studentized), or a degenerate bootstrap distribution.

    Raises
    ------
    ValueError, TypeError
        Non-finite or non-numeric values, a bad ``ci_level``, ``ci_method``, ``n_resamples`` or ``seed``.

    Examples
    --------
    >>> res = bootstrap_effect_size([0.9, 1.4, 0.2, 1.1, 0.8], [0.1, -0.3, 0.4, 0.0, -0.2], seed=1,
    ...                             n_resamples=999)
    >>> round(res.effect_size, 4), res.ci_method, res.ci_low < res.effect_size < res.ci_high
    (1.5181, 'studentized', True)
    """
    _check_options(ci_level, ci_method, n_resamples, seed)
    ux, uy = _values(u_x, "u_x"), _values(u_y, "u_y")
    d = float(_d(ux, uy)) if ux.size and uy.size else math.nan
    base: dict[str, Any] = dict(effect_size=d, ci_level=float(ci_level), ci_method=ci_method, seed=int(seed))
    note = ""
    if min(ux.size, uy.size) < 2:
        note = (
            f"a target set of {min(ux.size, uy.size)} word(s) cannot be resampled: at least 2 on each side are needed"
        )
    elif math.isnan(d):
        note = "the per-word values have no spread (pooled SD 0): d and its interval are undefined"
    elif ci_method == "studentized" and not (np.ptp(ux) > 0 or np.ptp(uy) > 0):
        note = "the per-word values do not vary within the target sets: the studentized interval is undefined"
    if note:
        return EffectSizeInterval(ci_low=math.nan, ci_high=math.nan, se=math.nan, n_resamples=0, note=note, **base)
    if ci_method == "studentized":
        low, high, se = studentized_bounds(ux, uy, seed=seed, ci_level=ci_level, n_resamples=n_resamples)
    else:
        low, high, se, note = bootstrap_bounds(
            (ux, uy), _d, ci_level=ci_level, ci_method=ci_method, n_resamples=n_resamples, seed=seed
        )
    return EffectSizeInterval(
        ci_low=float(low), ci_high=float(high), se=float(se), n_resamples=int(n_resamples), note=note, **base
    )


@keyword_api("attribute_bootstrap_interval(moments, a_vectors, b_vectors, seed=..., ci_level=...)", renamed=_RENAMED)
def attribute_bootstrap_interval(
    moments: LinearMoments | VocabularySample,
    a_vectors: ArrayLike,
    b_vectors: ArrayLike,
    *,
    seed: int,
    association: Association = "cosine",
    ci_level: float = 0.95,
    ci_method: ResamplingMethod = "BCa",
    n_resamples: int = 1999,
) -> AttributeInterval:
    """Intervals of a full-vocabulary test's d and weighted effect sizes over resampled attribute words.

    Parameters
    ----------
    moments
        The moments of the test's words X (:func:`biasdask.stats.placebo.linear_moments`, with the
        ``v_w`` of ``association``), or for ``"euclidean"`` their sample
        (:class:`biasdask.stats.placebo.VocabularySample`, each resample's statistics estimated on it by
        :func:`biasdask.stats.placebo.euclidean_statistics`); fixed across resamples.
    a_vectors, b_vectors
        Raw vectors of the attribute words found, shapes (n_a, D) and (n_b, D) (row i of A paired with
        row i of B for ``"ripa"``).
    seed
        Non-negative integer.
    association
        ``"cosine"``, ``"semaxis"``, ``"ripa"`` or ``"euclidean"`` (with a sample).
    ci_level, n_resamples
        As in :func:`bootstrap_effect_size`.
    ci_method
        ``"BCa"`` (the default; its jackknife leaves out one attribute word, or pair, at a time) or
        ``"percentile"``.

    Returns
    -------
    AttributeInterval
        With fewer than 2 words on a side (pairs for RIPA) every interval is NaN and ``note`` says so.

    Raises
    ------
    ValueError
        ``"euclidean"`` without a sample (or a sample for another association), vectors of the wrong
        dimension, bad options.

    Examples
    --------
    >>> from biasdask.stats.placebo import linear_moments, moment_rows
    >>> rng = np.random.default_rng(0)
    >>> vocab = rng.normal(size=(2000, 6)) + [1.0, 0, 0, 0, 0, 0]
    >>> m = linear_moments(moment_rows("cosine", vocab), np.ones((1, 2000)))
    >>> a, b = vocab[:4] + [0, 1.0, 0, 0, 0, 0], vocab[4:8]
    >>> res = attribute_bootstrap_interval(m, a, b, seed=3, n_resamples=499)
    >>> res.ci_low < res.effect_size < res.ci_high, res.weighted_ci_low.shape
    (True, (1,))
    >>> attribute_bootstrap_interval(m, a[:1], b, seed=3).note[:40]
    'a side has 1 attribute word(s): resampli'
    """
    _check_options(ci_level, ci_method, n_resamples, seed, RESAMPLING_METHODS)
    sample = moments if isinstance(moments, VocabularySample) else None
    linear = moments if isinstance(moments, LinearMoments) else None
    if (sample is not None) != (association == "euclidean"):
        raise ValueError(
            f"association {association!r} needs "
            + ("a VocabularySample of its words" if association == "euclidean" else "the LinearMoments of its words")
        )
    if association not in (*LINEAR_ASSOCIATIONS, "euclidean"):
        raise ValueError(f"unknown association {association!r}")
    a = np.asarray(a_vectors, dtype=np.float64)
    b = np.asarray(b_vectors, dtype=np.float64)
    for name, x in (("a_vectors", a), ("b_vectors", b)):
        if x.ndim != 2 or x.shape[1] != moments.dim:
            raise ValueError(f"{name} must have shape (n, {moments.dim}), got {x.shape}")
    k_all = moments.n_weightings
    # without the weighted Gram: d's interval only
    k = k_all if linear is None or linear.sum_zvv is not None else 0
    words = np.concatenate([a, b])
    if sample is not None:
        found = euclidean_statistics(sample, words, np.arange(a.shape[0]), a.shape[0] + np.arange(b.shape[0]))
        d, dw = float(found.effect_size[0]), found.effect_size_weighted[0]
    else:
        assert linear is not None
        observed = linear_directions(association, a, b)[None, :]
        d = float(unweighted_effect_sizes(linear, observed)[0])
        dw = np.array([weighted_statistics(linear, observed, j)[1][0] for j in range(k_all)])
    base: dict[str, Any] = dict(
        effect_size=d, effect_size_weighted=dw, ci_level=float(ci_level), ci_method=ci_method, seed=int(seed)
    )
    smallest = min(a.shape[0], b.shape[0])
    if smallest < 2:
        nan, nans = math.nan, np.full(k_all, np.nan)
        return AttributeInterval(
            ci_low=nan,
            ci_high=nan,
            se=nan,
            weighted_ci_low=nans,
            weighted_ci_high=nans.copy(),
            weighted_se=nans.copy(),
            n_resamples=0,
            note=f"a side has {smallest} attribute word(s): resampling the attribute words needs at least 2 on "
            "each side, so no interval",
            **base,
        )
    paired = association == "ripa"
    rows = 1 + k  # row 0: d; row 1 + j: weighting j's weighted effect size

    def directions(idx_a: NDArray, idx_b: NDArray | None) -> NDArray:
        if paired:
            return linear_directions(association, a[idx_a], b[idx_a])
        return linear_directions(association, a[idx_a], b[idx_b])

    def statistic(*samples: NDArray, axis: int = -1) -> NDArray:
        idx = [np.asarray(s).astype(np.intp) for s in samples]
        lead = idx[0].shape[1:-1]
        out = np.empty((rows, *lead))
        if sample is not None:  # every row resamples alike (the data are broadcast): one evaluation for all
            flat = [i[0].reshape(-1, i.shape[-1]) for i in idx]
            found = euclidean_statistics(sample, words, flat[0], a.shape[0] + flat[1])
            out[0] = found.effect_size.reshape(lead)
            for r in range(1, rows):
                out[r] = found.effect_size_weighted[:, r - 1].reshape(lead)
            return out
        assert linear is not None
        for r in range(rows):
            flat = [i[r].reshape(-1, i.shape[-1]) for i in idx]
            delta = directions(flat[0], None if paired else flat[1])
            values = unweighted_effect_sizes(linear, delta) if r == 0 else weighted_statistics(linear, delta, r - 1)[1]
            out[r] = values.reshape(lead)
        return out

    data: tuple[NDArray, ...] = (np.broadcast_to(np.arange(a.shape[0]), (rows, a.shape[0])),)
    if not paired:
        data += (np.broadcast_to(np.arange(b.shape[0]), (rows, b.shape[0])),)
    n_max = max(a.shape[0], b.shape[0])
    batch = max(1, _GATHER_BYTES // (8 * n_max * moments.dim))
    low, high, se, note = bootstrap_bounds(
        data, statistic, ci_level=ci_level, ci_method=ci_method, n_resamples=n_resamples, seed=seed, batch=batch
    )
    missing = np.full(k_all - k, np.nan)
    return AttributeInterval(
        ci_low=float(low[0]),
        ci_high=float(high[0]),
        se=float(se[0]),
        weighted_ci_low=np.r_[low[1:], missing],
        weighted_ci_high=np.r_[high[1:], missing],
        weighted_se=np.r_[se[1:], missing],
        n_resamples=int(n_resamples),
        note=note,
        **base,
    )
