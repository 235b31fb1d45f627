"""How reliable a bias measurement is: test-retest across embeddings, agreement across scoring rules, and
the internal consistency of a test's words (Du, Fang & Nguyen 2021).

Test-retest and agreement between rules (:func:`paired_correlation`, :func:`pairwise_correlations`,
:func:`intraclass_correlation`)
    The languages' effect sizes under two embeddings (corpora, training seeds) or two scoring rules are
    paired observations, one pair per language. Their Pearson and Spearman correlations come with a
    bootstrap interval over languages (the pairs resampled together, ``scipy.stats.bootstrap`` with
    ``paired=True``, BCa by default); ICC(2,1) across k embeddings (Shrout & Fleiss 1979) with the
    F-based interval of McGraw & Wong 1996 asks whether the values themselves agree, not only their order.

Internal consistency (:func:`cronbach_alpha`, :func:`split_half`, :func:`leave_one_out`; the three of one
test by :func:`internal_consistency`)
    The items are the attribute words (or the base pairs of a direction), the cases the target words
    (or the whole vocabulary). Item j's score for target w is cos(w, a_j) for a word of A and
    −cos(w, b_j) for a word of B, so that every item is larger when w leans towards A and their mean
    over A and over B is the association s(w) = mean_A cos − mean_B cos; for base pairs item j is
    cos(w, a_j) − cos(w, b_j) (or the association of any rule with that pair alone). These are the
    "gender base pairs as items, target words as cases" of Du, Fang & Nguyen 2021.

The vocabulary in one pass (:class:`ItemMoments`)
    Every statistic of the items (α, item-total correlations, split halves, the correlation of two
    rules' per-word scores) is a function of the items' count, means and centred cross-products, which
    a pass over the vocabulary gathers chunk by chunk and merges. The sums are bit-identical whatever
    the chunking, the merge order and the CPU: see :class:`ItemMoments`.

Every sum here is an explicit loop (numba, no fast-math) or ``numpy.add.reduce`` along the last axis of a
C-ordered array: no BLAS (``@``, ``dot``, ``cov``, ``corrcoef``), whose kernels round differently on
different CPUs.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from biasdask.stats.bootstrap import RESAMPLING_METHODS, ResamplingMethod, bootstrap_bounds
from biasdask.stats.checks import check_count, check_level, check_seed
from biasdask.stats.weat import weat_effect_size

__all__ = [
    "MOMENT_BLOCK",
    "PAIR_FIELDS",
    "CronbachAlpha",
    "InternalConsistency",
    "IntraclassCorrelation",
    "ItemMoments",
    "LeaveOneOut",
    "MomentTotals",
    "PairedCorrelation",
    "PairwiseCorrelations",
    "ScoreCorrelation",
    "SplitHalf",
    "check_bootstrap",
    "cronbach_alpha",
    "internal_consistency",
    "intraclass_correlation",
    "item_moments",
    "leave_one_out",
    "measure_note",
    "merge_item_moments",
    "paired_correlation",
    "pairwise_correlations",
    "score_correlation",
    "split_half",
    "vocabulary_effect_size",
]

MOMENT_BLOCK = 1024
"""Rows of a vocabulary per leaf of :class:`ItemMoments`' summation tree (rows 0-1023, 1024-2047, ...)."""


# ----------------------------------------------------------------------------------------------
# Argument checks


def check_bootstrap(ci_level: float, ci_method: str, n_resamples: int, seed: int) -> None:
    """Check the options of a bootstrap over paired values (:func:`paired_correlation`'s): TypeError or
    ValueError naming the first bad one."""
    check_level(ci_level)
    if ci_method not in RESAMPLING_METHODS:
        raise ValueError(f"ci_method must be one of {', '.join(RESAMPLING_METHODS)}; got {ci_method!r}")
    check_count(n_resamples, "n_resamples", 1)
    check_seed(seed)


def _numbers(values: ArrayLike, name: str, ndim: int) -> NDArray[np.float64]:
    """``values`` as a C-ordered float64 array of ``ndim`` dimensions; NaN allowed (missing), ±inf not."""
    arr = np.asarray(values)
    if arr.ndim != ndim:
        what = "1-D array" if ndim == 1 else "2-D array"
        raise ValueError(f"{name} must be a {what}, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if np.isinf(arr).any():
        raise ValueError(f"{name} holds infinite values; mark a missing value with NaN")
    return arr


def _table(data: ArrayLike | Mapping[str, ArrayLike], name: str) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """(labels, values of shape (n, k)) of a mapping label -> column or a 2-D array (columns labelled
    "0", "1", ...)."""
    if isinstance(data, Mapping):
        labels = tuple(str(key) for key in data)
        columns = [_numbers(column, f"{name}[{label!r}]", 1) for label, column in zip(labels, data.values())]
        sizes = {column.size for column in columns}
        if len(sizes) > 1:
            raise ValueError(
                f"the columns of {name} must have one length (one value per language), got {sorted(sizes)}"
            )
        n = sizes.pop() if sizes else 0
        table = np.empty((n, len(columns)))
        for j, column in enumerate(columns):
            table[:, j] = column
        return labels, table
    table = _numbers(data, name, 2)
    return tuple(str(j) for j in range(table.shape[1])), table


# ----------------------------------------------------------------------------------------------
# Correlations from sums in a fixed order


def _pearson(x: NDArray, y: NDArray) -> NDArray:
    """Pearson's r along the last axis (two passes, sums by ``np.add.reduce``); NaN where x or y is constant."""
    n = x.shape[-1]
    dx = x - (np.add.reduce(x, axis=-1, keepdims=True) / n)
    dy = y - (np.add.reduce(y, axis=-1, keepdims=True) / n)
    sxy = np.add.reduce(dx * dy, axis=-1)
    sxx = np.add.reduce(dx * dx, axis=-1)
    syy = np.add.reduce(dy * dy, axis=-1)
    constant = (x.max(axis=-1) == x.min(axis=-1)) | (y.max(axis=-1) == y.min(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = sxy / np.sqrt(sxx * syy)  # √(s²·s²) is s exactly: r of x with itself is 1
    return np.where(constant, np.nan, np.clip(r, -1.0, 1.0))


def _spearman(x: NDArray, y: NDArray) -> NDArray:
    """Spearman's ρ along the last axis: Pearson's r of the average ranks."""
    return _pearson(stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1))


@dataclass(frozen=True)
class PairedCorrelation:
    """The correlations of paired values, e.g. the languages' effect sizes under two embeddings
    (:func:`paired_correlation`).

    Attributes
    ----------
    n : int
        Pairs used (those with both values present).
    pearson, pearson_ci_low, pearson_ci_high : float
        Pearson's r and its bootstrap interval at ``ci_level``.
    spearman, spearman_ci_low, spearman_ci_high : float
        Spearman's ρ (Pearson's r of the average ranks) and its bootstrap interval.
    ci_level : float
        Confidence level of both intervals.
    ci_method : str
        ``"BCa"`` or ``"percentile"``.
    n_resamples : int
        Bootstrap resamples (0 when none were drawn).
    seed : int
        The ``SeedSequence`` entropy of the resamples.
    note : str
        Why a value or interval is NaN; empty otherwise.
    """

    n: int
    pearson: float
    pearson_ci_low: float
    pearson_ci_high: float
    spearman: float
    spearman_ci_low: float
    spearman_ci_high: float
    ci_level: float
    ci_method: str
    n_resamples: int
    seed: int
    note: str = ""


def _resampled(correlation: Callable, x: NDArray, y: NDArray, index: NDArray, axis: int = -1) -> NDArray:
    """``correlation`` of the pairs ``index`` (resamples of the pairs' positions along the last axis)."""
    return correlation(x[index], y[index])


def _paired(
    x: NDArray, y: NDArray, *, ci_level: float, ci_method: str, n_resamples: int, seed: int
) -> PairedCorrelation:
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
    n = int(x.size)
    base: dict[str, Any] = dict(n=n, ci_level=ci_level, ci_method=ci_method, seed=seed)
    nan = math.nan
    no_interval: dict[str, Any] = dict(
        pearson_ci_low=nan, pearson_ci_high=nan, spearman_ci_low=nan, spearman_ci_high=nan
    )
    if n < 3:
        note = f"{n} pair(s) with both values: a correlation needs at least 3"
        return PairedCorrelation(pearson=nan, spearman=nan, n_resamples=0, note=note, **no_interval, **base)
    pearson, spearman = float(_pearson(x, y)), float(_spearman(x, y))
    if math.isnan(pearson):
        note = "one of the two has the same value for every pair: the correlation is undefined"
        return PairedCorrelation(pearson=nan, spearman=nan, n_resamples=0, note=note, **no_interval, **base)

    intervals: dict[str, Any] = {}
    notes = []
    for name, correlation in (("pearson", _pearson), ("spearman", _spearman)):
        statistic = functools.partial(_resampled, correlation, x, y)
        low, high, _, note = bootstrap_bounds(
            (np.arange(n),), statistic, ci_level=ci_level, ci_method=ci_method, n_resamples=n_resamples, seed=seed
        )
        if not note and np.isnan([low, high]).any():
            note = "some resamples repeat too few pairs to have a spread: the interval is undefined"
        if note:  # no interval rather than a degenerate one
            notes.append(f"{name}: {note}")
        bounds = (math.nan, math.nan) if note else (float(low), float(high))
        intervals[f"{name}_ci_low"], intervals[f"{name}_ci_high"] = bounds
    return PairedCorrelation(
        pearson=pearson, spearman=spearman, n_resamples=n_resamples, note="; ".join(notes), **intervals, **base
    )


def paired_correlation(
    x: ArrayLike,
    y: ArrayLike,
    *,
    seed: int,
    ci_level: float = 0.95,
    ci_method: ResamplingMethod = "BCa",
    n_resamples: int = 9999,
) -> PairedCorrelation:
    """Pearson and Spearman correlations of paired values with bootstrap intervals over the pairs.

    Test-retest: ``x`` and ``y`` are the languages' effect sizes under two embeddings (two corpora,
    two training seeds). Agreement between scoring rules or between tests of one family: the
    languages' d under each. A language missing from either (NaN) is left out; ``n`` counts the rest.

    The interval resamples the languages with replacement, each keeping its pair of values
    (``scipy.stats.bootstrap`` with ``paired=True``), from
    ``numpy.random.default_rng(SeedSequence(seed))``: a function of the data and the seed alone. BCa
    (Efron 1987; the default) rather than percentile: a correlation's bootstrap distribution is skewed
    and its estimate biased (towards 0, the more so the nearer ±1 and the fewer the languages, here
    25-35), which BCa corrects to second order and the percentile interval does not; its acceleration
    is the jackknife over languages, defined from 3 pairs on.

    Parameters
    ----------
    x, y
        Paired values, shape (n,); NaN marks a missing value.
    seed
        Non-negative integer.
    ci_level
        Confidence level of the intervals.
    ci_method
        ``"BCa"`` or ``"percentile"``.
    n_resamples
        Bootstrap resamples.

    Returns
    -------
    PairedCorrelation
        NaN correlations with a ``note`` for fewer than 3 complete pairs or a constant side; NaN
        intervals with a ``note`` when the resamples give no interval (every one the same value).

    Raises
    ------
    ValueError, TypeError
        Arrays of other shapes or lengths, infinite or non-numeric values, a bad ``ci_level``,
        ``ci_method``, ``n_resamples`` or ``seed``.

    Examples
    --------
    >>> cc = [0.32, 0.82, 0.19, -0.15, 0.39, 0.01, 0.12, 0.12, 0.56, 0.60, float("nan")]
    >>> wiki = [0.64, 0.85, 0.67, 0.35, 0.63, 0.22, 0.50, 0.19, 0.34, 0.47, 0.42]
    >>> res = paired_correlation(cc, wiki, seed=1, n_resamples=999)
    >>> res.n, round(res.pearson, 3), round(res.spearman, 3)
    (10, 0.579, 0.498)
    >>> res.ci_method, res.pearson_ci_low < res.pearson < res.pearson_ci_high
    ('BCa', True)
    """
    check_bootstrap(ci_level, ci_method, n_resamples, seed)
    xs, ys = _numbers(x, "x", 1), _numbers(y, "y", 1)
    if xs.size != ys.size:
        raise ValueError(f"x and y must be paired (one value each per language), got lengths {xs.size} and {ys.size}")
    return _paired(xs, ys, ci_level=float(ci_level), ci_method=ci_method, n_resamples=int(n_resamples), seed=int(seed))


def measure_note(note: str, measure: str) -> str:
    """The part of a :class:`PairedCorrelation`'s ``note`` about ``measure`` (``pearson`` or
    ``spearman``): the note without the other measure's part, and without the measure's name.

    Examples
    --------
    >>> measure_note("pearson: no interval; spearman: no spread", "spearman")
    'no spread'
    >>> measure_note("3 pair(s) with both values", "pearson")
    '3 pair(s) with both values'
    """
    parts = note.split("; ")
    named = [p for p in parts if p.split(": ", 1)[0] in ("pearson", "spearman")]
    if len(named) != len(parts):  # a note about the pair as a whole
        return note
    return "; ".join(p.split(": ", 1)[1] for p in named if p.startswith(f"{measure}: "))


PAIR_FIELDS = (
    "n",
    "pearson",
    "pearson_ci_low",
    "pearson_ci_high",
    "spearman",
    "spearman_ci_low",
    "spearman_ci_high",
)
"""The numeric fields of a :class:`PairedCorrelation` (what :meth:`PairwiseCorrelations.matrix` takes)."""


@dataclass(frozen=True)
class PairwiseCorrelations:
    """The correlations between every pair of k columns (:func:`pairwise_correlations`).

    Attributes
    ----------
    labels : tuple of str
        The columns' names (the mapping's keys, or "0", "1", ... for an array).
    pairs : tuple of (int, int)
        The pairs (i, j), i < j, in the order (0, 1), (0, 2), ..., (1, 2), ...
    results : tuple of PairedCorrelation
        One per pair, in the order of ``pairs``.
    n_present : tuple of int
        Values present (not NaN) in each column.
    """

    labels: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]
    results: tuple[PairedCorrelation, ...]
    n_present: tuple[int, ...]

    def get(self, first: str, second: str) -> PairedCorrelation:
        """The result of the pair of columns named ``first`` and ``second`` (in either order)."""
        for (i, j), result in zip(self.pairs, self.results):
            if {self.labels[i], self.labels[j]} == {first, second} and first != second:
                return result
        raise KeyError(f"no pair ({first!r}, {second!r}) among the columns {list(self.labels)}")

    def matrix(self, field: str) -> NDArray:
        """A field of every pair as a symmetric (k, k) array, e.g. ``matrix("spearman")``.

        The diagonal holds 1 for ``pearson`` and ``spearman``, NaN for the interval bounds, and for
        ``n`` the column's values present.
        """
        if field not in PAIR_FIELDS:
            raise ValueError(f"field must be one of {', '.join(PAIR_FIELDS)}; got {field!r}")
        k = len(self.labels)
        if field == "n":
            out: NDArray = np.zeros((k, k), dtype=np.int64)
            for i in range(k):
                out[i, i] = self.n_present[i]
        else:
            out = np.full((k, k), 1.0 if field in ("pearson", "spearman") else np.nan)
        for (i, j), result in zip(self.pairs, self.results):
            out[i, j] = out[j, i] = getattr(result, field)
        return out


def pairwise_correlations(
    data: ArrayLike | Mapping[str, ArrayLike],
    *,
    seed: int,
    ci_level: float = 0.95,
    ci_method: ResamplingMethod = "BCa",
    n_resamples: int = 9999,
) -> PairwiseCorrelations:
    """:func:`paired_correlation` between every pair of k columns.

    Parameters
    ----------
    data
        One row per language, one column per embedding (or scoring rule, or test): a 2-D array
        (n, k), or a mapping from the columns' names to 1-D arrays of one length. NaN marks a missing
        value; each pair uses the languages present in both of its columns.
    seed, ci_level, ci_method, n_resamples
        As in :func:`paired_correlation`. Every pair uses the same ``seed``, so a pair's result does
        not depend on which other columns are given.

    Returns
    -------
    PairwiseCorrelations

    Raises
    ------
    ValueError, TypeError
        Fewer than 2 columns, columns of different lengths, and as :func:`paired_correlation`.

    Examples
    --------
    >>> nan = float("nan")
    >>> effects = {
    ...     "subt": [-0.24, 1.20, 0.99, -0.08, 0.60, 0.27, 0.44, 0.51, 0.34, nan],
    ...     "wiki": [0.64, 0.85, 0.67, 0.35, 0.63, 0.22, 0.50, 0.19, 0.34, 0.47],
    ...     "cc": [0.32, 0.82, 0.19, -0.15, 0.39, 0.01, 0.12, 0.12, 0.56, 0.60],
    ... }
    >>> res = pairwise_correlations(effects, seed=0, n_resamples=999)
    >>> res.pairs
    ((0, 1), (0, 2), (1, 2))
    >>> res.get("wiki", "subt").n, round(res.get("cc", "wiki").spearman, 3)
    (9, 0.498)
    >>> res.matrix("n").tolist()
    [[9, 9, 9], [9, 10, 10], [9, 10, 10]]
    """
    check_bootstrap(ci_level, ci_method, n_resamples, seed)
    labels, table = _table(data, "data")
    k = table.shape[1]
    if k < 2:
        raise ValueError(f"pairwise correlations need at least 2 columns, got {k}")
    pairs = tuple(itertools.combinations(range(k), 2))
    options: dict[str, Any] = dict(
        ci_level=float(ci_level), ci_method=ci_method, n_resamples=int(n_resamples), seed=int(seed)
    )
    results = tuple(_paired(table[:, i], table[:, j], **options) for i, j in pairs)
    present = tuple(int(np.count_nonzero(~np.isnan(table[:, j]))) for j in range(k))
    return PairwiseCorrelations(labels=labels, pairs=pairs, results=results, n_present=present)


# ----------------------------------------------------------------------------------------------
# ICC(2,1)


@dataclass(frozen=True)
class IntraclassCorrelation:
    """ICC(2,1) of n targets rated by k raters (:func:`intraclass_correlation`).

    Attributes
    ----------
    icc : float
        ICC(2,1) = (MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n): two-way random effects,
        absolute agreement, single rater (Shrout & Fleiss 1979; McGraw & Wong 1996's ICC(A,1)).
    ci_low, ci_high : float
        Its F-based interval at ``ci_level`` (McGraw & Wong 1996, Table 7, case 2A).
    f_statistic, df1, df2, p_value : float, int, int, float
        F = MSR / MSE with (n − 1, (n − 1)(k − 1)) degrees of freedom, and its p-value against
        ICC = 0 (one-sided).
    ms_targets, ms_raters, ms_error : float
        MSR (between targets), MSC (between raters) and MSE (residual) of the two-way ANOVA.
    n, k : int
        Targets used (those with every rater's value) and raters.
    n_dropped : int
        Targets left out for a missing value.
    labels : tuple of str
        The raters' names.
    ci_level : float
        Confidence level of the interval.
    note : str
        Why a value is NaN; empty otherwise.
    """

    icc: float
    ci_low: float
    ci_high: float
    f_statistic: float
    df1: int
    df2: int
    p_value: float
    ms_targets: float
    ms_raters: float
    ms_error: float
    n: int
    k: int
    n_dropped: int
    labels: tuple[str, ...]
    ci_level: float
    note: str = ""


def intraclass_correlation(
    data: ArrayLike | Mapping[str, ArrayLike], *, ci_level: float = 0.95
) -> IntraclassCorrelation:
    """ICC(2,1) across k raters with its F-based confidence interval.

    For test-retest across embeddings the targets are the languages and the raters the embeddings
    (corpora or training seeds) of a study: the ICC asks whether an embedding trained otherwise would
    give the *same* effect sizes, where a correlation asks only whether it would order the languages
    alike. A rater that shifts every d by a constant lowers ICC(2,1) (absolute agreement) but not the
    correlations.

    With Y (n × k), row means ``ȳ_i·``, column means ``ȳ_·j`` and grand mean ȳ:
    ``MSR = k Σ_i (ȳ_i· − ȳ)² / (n − 1)``, ``MSC = n Σ_j (ȳ_·j − ȳ)² / (k − 1)``,
    ``MSE = Σ_ij (y_ij − ȳ_i· − ȳ_·j + ȳ)² / ((n − 1)(k − 1))``. The interval (McGraw & Wong 1996) is
    [n (MSR − F_L MSE) / (F_L (k MSC + (kn − k − n) MSE) + n MSR),
    n (F_U MSR − MSE) / (k MSC + (kn − k − n) MSE + n F_U MSR)] with
    F_L = F_{1−α/2}(n − 1, ν), F_U = F_{1−α/2}(ν, n − 1), a = k ICC / (n (1 − ICC)),
    b = 1 + k ICC (n − 1) / (n (1 − ICC)) and ν = (a MSC + b MSE)² / ((a MSC)² / (k − 1) +
    (b MSE)² / ((n − 1)(k − 1))).

    Parameters
    ----------
    data
        One row per target (language), one column per rater (embedding): a 2-D array (n, k) or a
        mapping from the raters' names to 1-D arrays of one length. A target with a missing value
        (NaN) in any column is left out.
    ci_level
        Confidence level of the interval.

    Returns
    -------
    IntraclassCorrelation
        NaN with a ``note`` for fewer than 2 complete targets, or no variation at all; a NaN interval
        with a ``note`` when MSE is 0.

    Raises
    ------
    ValueError, TypeError
        Fewer than 2 raters, columns of different lengths, infinite or non-numeric values, a bad
        ``ci_level``.

    Examples
    --------
    Shrout & Fleiss 1979's Table 2 (6 targets, 4 judges), whose ICC(2,1) they give as 0.29:

    >>> ratings = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> res = intraclass_correlation(ratings)
    >>> round(res.icc, 2), round(res.ci_low, 3), round(res.ci_high, 3), (res.df1, res.df2)
    (0.29, 0.019, 0.761, (5, 15))
    """
    level = check_level(ci_level)
    labels, table = _table(data, "data")
    k = table.shape[1]
    if k < 2:
        raise ValueError(f"an intraclass correlation needs at least 2 raters (columns), got {k}")
    complete = ~np.isnan(table).any(axis=1)
    y = np.ascontiguousarray(table[complete])
    n = int(y.shape[0])
    df1, df2 = n - 1, (n - 1) * (k - 1)
    nan = math.nan
    base: dict[str, Any] = dict(
        n=n, k=k, n_dropped=int(table.shape[0] - n), labels=labels, ci_level=level, df1=df1, df2=df2
    )
    if n < 2:
        note = f"{n} target(s) with every rater's value: an ICC needs at least 2"
        ms: dict[str, Any] = dict(ms_targets=nan, ms_raters=nan, ms_error=nan)
        return IntraclassCorrelation(
            icc=nan, ci_low=nan, ci_high=nan, f_statistic=nan, p_value=nan, note=note, **ms, **base
        )
    row_means = np.add.reduce(y, axis=1) / k
    col_means = np.add.reduce(np.ascontiguousarray(y.T), axis=1) / n
    grand = float(np.add.reduce(row_means)) / n
    msr = k * float(np.add.reduce(np.square(row_means - grand))) / df1
    msc = n * float(np.add.reduce(np.square(col_means - grand))) / (k - 1)
    residual = y - row_means[:, None] - col_means[None, :] + grand
    mse = float(np.add.reduce(np.square(residual).ravel())) / df2
    ms = dict[str, Any](ms_targets=msr, ms_raters=msc, ms_error=mse)
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    if not denominator > 0:
        note = "every value is the same: the ICC is undefined"
        return IntraclassCorrelation(
            icc=nan, ci_low=nan, ci_high=nan, f_statistic=nan, p_value=nan, note=note, **ms, **base
        )
    icc = (msr - mse) / denominator
    # residuals of data without interaction are rounding errors, a few ulps of the values
    if not mse > (8 * np.finfo(float).eps) ** 2 * float(np.add.reduce(np.square(y).ravel())) / y.size:
        note = "no residual variation (MSE = 0): the F statistic and the interval are undefined"
        return IntraclassCorrelation(
            icc=icc, ci_low=nan, ci_high=nan, f_statistic=nan, p_value=nan, note=note, **ms, **base
        )
    f_statistic = msr / mse
    p_value = float(stats.f.sf(f_statistic, df1, df2))
    q = 1.0 - (1.0 - level) / 2.0
    a = k * icc / (n * (1.0 - icc))
    b = 1.0 + k * icc * (n - 1) / (n * (1.0 - icc))
    nu = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / df2)
    f_low, f_high = float(stats.f.ppf(q, n - 1, nu)), float(stats.f.ppf(q, nu, n - 1))
    spread = k * msc + (k * n - k - n) * mse
    ci_low = n * (msr - f_low * mse) / (f_low * spread + n * msr)
    ci_high = n * (f_high * msr - mse) / (spread + n * f_high * msr)
    return IntraclassCorrelation(
        icc=icc, ci_low=ci_low, ci_high=ci_high, f_statistic=f_statistic, p_value=p_value, **ms, **base
    )


# ----------------------------------------------------------------------------------------------
# Item moments over a vocabulary, mergeable and bit-identical


@njit(cache=True, nogil=True)
def _leaf_kernel(x, complete, bounds, counts, means, comoments):  # pragma: no cover
    # Leaf b: rows bounds[b]..bounds[b + 1] of x, those with ``complete`` set, in row order: their
    # count, then the mean (first pass), then Σ (x - mean)(x - mean)ᵀ (second pass). No fast-math:
    # every sum is added in row order, as written.
    k = x.shape[1]
    for b in range(bounds.shape[0] - 1):
        lo, hi = bounds[b], bounds[b + 1]
        n = 0
        for i in range(lo, hi):
            if complete[i]:
                n += 1
                for j in range(k):
                    means[b, j] += x[i, j]
        counts[b, 0] = n
        counts[b, 1] = (hi - lo) - n
        if n == 0:
            continue
        for j in range(k):
            means[b, j] /= n
        for i in range(lo, hi):
            if complete[i]:
                for j in range(k):
                    dj = x[i, j] - means[b, j]
                    for m in range(j, k):
                        comoments[b, j, m] += dj * (x[i, m] - means[b, m])
        for j in range(k):
            for m in range(j):
                comoments[b, j, m] = comoments[b, m, j]


# A node of the summation tree: (rows used, rows skipped for a NaN, mean, centred comoment).
_Moments = tuple[int, int, NDArray[np.float64], NDArray[np.float64]]


def _leaves(x: NDArray[np.float64], bounds: Sequence[int]) -> list[_Moments]:
    """The moments of the row ranges ``bounds[b]:bounds[b + 1]`` of ``x``, each on its own."""
    n_leaves, k = len(bounds) - 1, x.shape[1]
    counts = np.zeros((n_leaves, 2), dtype=np.int64)
    means = np.zeros((n_leaves, k))
    comoments = np.zeros((n_leaves, k, k))
    complete = ~np.isnan(x).any(axis=1)
    _leaf_kernel(x, complete, np.asarray(bounds, dtype=np.int64), counts, means, comoments)
    return [
        (int(counts[b, 0]), int(counts[b, 1]), means[b] if counts[b, 0] else np.full(k, np.nan), comoments[b])
        for b in range(n_leaves)
    ]


def _combine(left: _Moments, right: _Moments) -> _Moments:
    """The moments of two disjoint sets of rows (Chan, Golub & LeVeque 1979), left one first."""
    n_l, skip_l, mean_l, m2_l = left
    n_r, skip_r, mean_r, m2_r = right
    if n_r == 0:
        return n_l, skip_l + skip_r, mean_l, m2_l
    if n_l == 0:
        return n_r, skip_l + skip_r, mean_r, m2_r
    n = n_l + n_r
    delta = mean_r - mean_l
    mean = mean_l + delta * (n_r / n)
    comoment = (m2_l + m2_r) + np.multiply.outer(delta, delta) * (n_l * n_r / n)
    return n, skip_l + skip_r, mean, comoment


def _insert(nodes: dict[tuple[int, int], _Moments], level: int, index: int, moments: _Moments) -> None:
    """Put a complete node into ``nodes``, combining it with its sibling (and theirs) while present."""
    while (level, index ^ 1) in nodes:
        sibling = nodes.pop((level, index ^ 1))
        moments = _combine(sibling, moments) if index & 1 else _combine(moments, sibling)
        level, index = level + 1, index >> 1
    nodes[(level, index)] = moments


@dataclass(frozen=True)
class MomentTotals:
    """The moments of every row of an :class:`ItemMoments` (:meth:`ItemMoments.totals`).

    Attributes
    ----------
    n : int
        Rows used: those with no NaN item score.
    n_skipped : int
        Rows left out for a NaN item score.
    mean : ndarray, shape (k,)
        The items' means (NaN without rows).
    comoment : ndarray, shape (k, k)
        Σ (x − mean)(x − mean)ᵀ over the rows used; ``comoment / (n − 1)`` is the sample covariance.
    """

    n: int
    n_skipped: int
    mean: np.ndarray
    comoment: np.ndarray

    @property
    def k(self) -> int:
        """The number of items."""
        return int(self.mean.shape[0])

    @property
    def covariance(self) -> NDArray[np.float64]:
        """The items' sample covariance matrix (ddof = 1); NaN for fewer than 2 rows."""
        if self.n < 2:
            return np.full_like(self.comoment, np.nan)
        return self.comoment / (self.n - 1)


@dataclass(frozen=True, eq=False)
class ItemMoments:
    """The count, means and centred cross-products of k per-row scores (items) over a set of rows of a
    vocabulary, mergeable across chunks: :func:`item_moments` makes one from a chunk of rows,
    :func:`merge_item_moments` merges them, :meth:`totals` gives the moments of all their rows.

    What it promises: the totals are a function of the rows' values and their global indices alone,
    bit for bit, whatever the chunks the rows came in, the order and grouping of the merges (any tree),
    the process and the CPU. The rows are summed in leaves of ``block`` rows aligned on the global row
    index (rows 0 to block − 1, then block to 2·block − 1, ...), each leaf in two passes in row order
    (its mean, then its centred cross-products) by one compiled loop without fast-math; the leaves are
    combined by the pairwise update of Chan, Golub & LeVeque 1979 along a fixed binary tree over the leaf
    index (leaves 2i and 2i + 1 into node i of the next level, and so on), a missing subtree counting as
    empty. A chunk whose rows do not fill a leaf keeps those rows (at most 2 · (block − 1) of them) until
    a merge completes the leaf. Two ``ItemMoments`` with different ``block`` give different bits (and
    refuse to merge); a different ``block`` changes the last bits only (the sums are exact to rounding).

    Rows with a NaN score (a word without a vector) are left out and counted (``n_skipped``).

    Attributes
    ----------
    k : int
        Items (columns).
    block : int
        Rows per leaf.
    ranges : tuple of (int, int)
        The global row ranges [start, stop) held, sorted and disjoint.
    nodes : tuple
        The complete nodes of the tree: ``(level, index, n, n_skipped, mean, comoment)``.
    pieces : tuple of (int, ndarray)
        Rows of leaves not yet complete: ``(first global row, rows)``, sorted.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal(size=(5000, 3)) + rng.normal(size=(5000, 1))
    >>> whole = item_moments(scores).totals()
    >>> parts = [item_moments(scores[a:b], start=a) for a, b in [(0, 1700), (1700, 1701), (1701, 5000)]]
    >>> merged = merge_item_moments(*parts).totals()
    >>> merged.n, bool(np.array_equal(merged.comoment, whole.comoment))
    (5000, True)
    """

    k: int
    block: int
    ranges: tuple[tuple[int, int], ...]
    nodes: tuple[tuple[int, int, int, int, np.ndarray, np.ndarray], ...]
    pieces: tuple[tuple[int, np.ndarray], ...]

    @property
    def n_rows(self) -> int:
        """Rows held, with those skipped for a NaN."""
        return sum(stop - start for start, stop in self.ranges)

    def totals(self) -> MomentTotals:
        """The moments of every row held (the leaves still incomplete computed from the rows present)."""
        nodes = {(level, index): (n, skip, mean, m2) for level, index, n, skip, mean, m2 in self.nodes}
        for leaf, group in _by_leaf(self.pieces, self.block):
            rows = _joined(group)
            _insert(nodes, 0, leaf, _leaves(rows, [0, rows.shape[0]])[0])
        while len(nodes) > 1:
            level = min(lv for lv, _ in nodes)
            for index in sorted(i for lv, i in nodes if lv == level):
                if (level, index) not in nodes:  # combined with its sibling already
                    continue
                moments = nodes.pop((level, index))
                if (level, index ^ 1) in nodes:
                    _insert(nodes, level, index, moments)
                else:  # an absent sibling holds no rows: the node goes up alone
                    _insert(nodes, level + 1, index >> 1, moments)
        if not nodes:
            return MomentTotals(n=0, n_skipped=0, mean=np.full(self.k, np.nan), comoment=np.zeros((self.k, self.k)))
        n, skipped, mean, comoment = next(iter(nodes.values()))
        return MomentTotals(n=n, n_skipped=skipped, mean=mean.copy(), comoment=comoment.copy())


def _by_leaf(
    pieces: Sequence[tuple[int, NDArray[np.float64]]], block: int
) -> list[tuple[int, list[tuple[int, NDArray[np.float64]]]]]:
    """The pieces grouped by leaf, leaves and pieces in row order."""
    by_leaf: dict[int, list[tuple[int, NDArray[np.float64]]]] = {}
    for first, rows in sorted(pieces, key=lambda piece: piece[0]):
        by_leaf.setdefault(first // block, []).append((first, rows))
    return sorted(by_leaf.items())


def _joined(group: list[tuple[int, NDArray[np.float64]]]) -> NDArray[np.float64]:
    return group[0][1] if len(group) == 1 else np.concatenate([rows for _, rows in group])


def _build(
    k: int,
    block: int,
    ranges: Sequence[tuple[int, int]],
    nodes: dict[tuple[int, int], _Moments],
    pieces: Sequence[tuple[int, NDArray[np.float64]]],
) -> ItemMoments:
    """An ItemMoments from its parts; the leaves that the pieces now fill are computed and inserted."""
    kept: list[tuple[int, NDArray[np.float64]]] = []
    for leaf, group in _by_leaf(pieces, block):
        if sum(rows.shape[0] for _, rows in group) == block:  # disjoint rows of one leaf: they fill it
            _insert(nodes, 0, leaf, _leaves(_joined(group), [0, block])[0])
        else:
            kept.extend(group)
    return ItemMoments(
        k=k,
        block=block,
        ranges=tuple(ranges),
        nodes=tuple((level, index, *moments) for (level, index), moments in sorted(nodes.items())),
        pieces=tuple(kept),
    )


def item_moments(scores: ArrayLike, *, start: int = 0, block: int = MOMENT_BLOCK) -> ItemMoments:
    """The mergeable moments of a chunk of rows: one row per word (or target), one column per item.

    Parameters
    ----------
    scores
        Shape (rows, k): e.g. the k base pairs' associations of each word of a chunk of the
        vocabulary, or the per-word scores of k scoring rules. NaN marks a row to leave out.
    start
        The global index of the chunk's first row (its position in the vocabulary). Chunks merged
        together must not overlap.
    block
        Rows per leaf of the summation tree (see :class:`ItemMoments`); every chunk of one pass must use
        the same.

    Returns
    -------
    ItemMoments

    Raises
    ------
    ValueError, TypeError
        ``scores`` not 2-D, without columns, infinite or non-numeric; a negative ``start``; ``block`` < 1.

    Examples
    --------
    >>> m = item_moments([[1.0, 2.0], [3.0, 5.0], [float("nan"), 1.0]]).totals()
    >>> m.n, m.n_skipped, m.mean.tolist(), m.comoment.tolist()
    (2, 1, [2.0, 3.5], [[2.0, 3.0], [3.0, 4.5]])
    """
    x = _numbers(scores, "scores", 2)
    start = check_count(start, "start", 0)
    block = check_count(block, "block", 1)
    rows, k = x.shape
    if k < 1:
        raise ValueError("scores must have at least one column (item)")
    stop = start + rows
    full: list[int] = []  # leaves the chunk fills
    pieces: list[tuple[int, NDArray[np.float64]]] = []
    for leaf in range(start // block, -(-stop // block)):
        lo, hi = max(start, leaf * block), min(stop, (leaf + 1) * block)
        if hi - lo == block:
            full.append(leaf)
        elif hi > lo:
            pieces.append((lo, x[lo - start : hi - start].copy()))
    nodes: dict[tuple[int, int], _Moments] = {}
    if full:
        bounds = [leaf * block - start for leaf in full] + [(full[-1] + 1) * block - start]
        for leaf, moments in zip(full, _leaves(x, bounds)):
            _insert(nodes, 0, leaf, moments)
    return _build(k, block, [(start, stop)] if rows else [], nodes, pieces)


def merge_item_moments(*parts: ItemMoments) -> ItemMoments:
    """The moments of the rows of all ``parts`` (disjoint chunks of one pass), in any order or grouping.

    Raises
    ------
    ValueError
        No parts, parts of different k or ``block``, or parts holding the same row.

    Examples
    --------
    >>> x = np.arange(12.0).reshape(6, 2) ** 2
    >>> a, b = item_moments(x[:4], block=4), item_moments(x[4:], start=4, block=4)
    >>> merge_item_moments(b, a).totals().n
    6
    """
    if not parts:
        raise ValueError("merge_item_moments needs at least one ItemMoments")
    for part in parts:
        if not isinstance(part, ItemMoments):
            raise TypeError(f"merge_item_moments merges ItemMoments, got {type(part).__name__}")
    k, block = parts[0].k, parts[0].block
    if any(p.k != k or p.block != block for p in parts):
        shapes = sorted({(p.k, p.block) for p in parts})
        raise ValueError(f"moments of different items or leaves cannot be merged: (k, block) = {shapes}")
    ranges: list[tuple[int, int]] = []
    for start, stop in sorted(r for p in parts for r in p.ranges):
        if ranges and start < ranges[-1][1]:
            raise ValueError(f"rows {start}-{min(stop, ranges[-1][1]) - 1} are in more than one of the merged parts")
        if ranges and start == ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], stop)
        else:
            ranges.append((start, stop))
    nodes: dict[tuple[int, int], _Moments] = {}
    for level, index, *moments in sorted((node for p in parts for node in p.nodes), key=lambda node: node[:2]):
        _insert(nodes, level, index, tuple(moments))  # type: ignore[arg-type]
    return _build(k, block, ranges, nodes, [piece for p in parts for piece in p.pieces])


def _totals(items: ArrayLike | ItemMoments) -> MomentTotals:
    return (items if isinstance(items, ItemMoments) else item_moments(items)).totals()


# ----------------------------------------------------------------------------------------------
# Internal consistency


@dataclass(frozen=True)
class CronbachAlpha:
    """Cronbach's α of k items over n cases, with the items' diagnostics (:func:`cronbach_alpha`).

    Attributes
    ----------
    alpha : float
        α = k / (k − 1) · (1 − Σ_j s_j² / s_T²), sample variances (ddof = 1) of the items and of the
        total T = Σ_j x_j.
    n : int
        Cases used (rows with every item's score).
    k : int
        Items.
    n_skipped : int
        Cases left out for a missing (NaN) score.
    item_variance : ndarray, shape (k,)
        s_j².
    total_variance : float
        s_T².
    item_total_correlation : ndarray, shape (k,)
        Pearson's r of each item with the total T.
    item_rest_correlation : ndarray, shape (k,)
        Pearson's r of each item with the total of the other items (the corrected item-total
        correlation): an item that does not measure what the others measure has a low or negative one.
    alpha_if_deleted : ndarray, shape (k,)
        α of the other k − 1 items (NaN for k = 2).
    note : str
        Why α is NaN; empty otherwise.
    """

    alpha: float
    n: int
    k: int
    n_skipped: int
    item_variance: np.ndarray
    total_variance: float
    item_total_correlation: np.ndarray
    item_rest_correlation: np.ndarray
    alpha_if_deleted: np.ndarray
    note: str = ""


def _alpha(k: int, sum_variances: float, total_variance: float) -> float:
    if k < 2 or not total_variance > 0:
        return math.nan
    return k / (k - 1) * (1.0 - sum_variances / total_variance)


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.nan


def cronbach_alpha(items: ArrayLike | ItemMoments) -> CronbachAlpha:
    """Cronbach's α (Cronbach 1951) with item-total correlations and α if an item is deleted.

    Parameters
    ----------
    items
        Item scores, shape (n cases, k items), or their :class:`ItemMoments` (e.g. merged over a
        vocabulary). For a test's attribute words as items and its target words as cases, item j's
        score for target w is cos(w, a_j) for the words of A and −cos(w, b_j) for those of B; for base
        pairs, the pair's association (e.g. cos(w, a_j) − cos(w, b_j)). A case with a NaN score is
        left out. α describes the unweighted sum of the items; with ``|A| ≠ |B|`` the association
        ``mean_A − mean_B`` weighs them ``1/|A|`` and ``1/|B|`` (:func:`split_half` measures that composite).

    Returns
    -------
    CronbachAlpha
        NaN α with a ``note`` for fewer than 2 items or cases, or a total without variance.

    Raises
    ------
    ValueError, TypeError
        As :func:`item_moments`.

    Notes
    -----
    Every variance and covariance comes from the centred cross-product matrix C of the items
    (Σ over cases of (x − x̄)(x − x̄)ᵀ): s_j² = C_jj / (n − 1), s_T² = Σ_jl C_jl / (n − 1), and the sums
    over its entries are exactly rounded (``math.fsum``), so they do not depend on an order.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> true = rng.normal(size=(300, 1))
    >>> scores = np.hstack([true + rng.normal(size=(300, 4)), rng.normal(size=(300, 1))])
    >>> res = cronbach_alpha(scores)
    >>> round(res.alpha, 3), res.item_rest_correlation.round(2).tolist()
    (0.703, [0.6, 0.59, 0.6, 0.61, -0.09])
    >>> round(float(res.alpha_if_deleted[4]), 3)  # the unrelated fifth item lowers α
    0.813
    """
    totals = _totals(items)
    n, k, c = totals.n, totals.k, totals.comoment
    nan = np.full(k, np.nan)
    base: dict[str, Any] = dict(n=n, k=k, n_skipped=totals.n_skipped)
    if n < 2 or k < 2:
        note = f"{n} case(s) and {k} item(s): α needs at least 2 of each"
        vectors = dict(item_total_correlation=nan, item_rest_correlation=nan.copy(), alpha_if_deleted=nan.copy())
        return CronbachAlpha(
            alpha=math.nan, item_variance=nan.copy(), total_variance=math.nan, note=note, **vectors, **base
        )
    diagonal = [float(c[j, j]) for j in range(k)]
    total = math.fsum(c.ravel().tolist())
    sum_diagonal = math.fsum(diagonal)
    others = [np.delete(np.arange(k), j) for j in range(k)]
    with_total = [math.fsum(c[j].tolist()) for j in range(k)]
    with_rest = [math.fsum(c[j, others[j]].tolist()) for j in range(k)]
    rest = [math.fsum(c[np.ix_(others[j], others[j])].ravel().tolist()) for j in range(k)]
    item_total = [_ratio(with_total[j], math.sqrt(max(diagonal[j] * total, 0.0))) for j in range(k)]
    item_rest = [_ratio(with_rest[j], math.sqrt(max(diagonal[j] * rest[j], 0.0))) for j in range(k)]
    if_deleted = [_alpha(k - 1, math.fsum(diagonal[:j] + diagonal[j + 1 :]), rest[j]) for j in range(k)]
    alpha = _alpha(k, sum_diagonal, total)
    return CronbachAlpha(
        alpha=alpha,
        item_variance=np.array(diagonal) / (n - 1),
        total_variance=total / (n - 1),
        item_total_correlation=np.array(item_total),
        item_rest_correlation=np.array(item_rest),
        alpha_if_deleted=np.array(if_deleted),
        note="" if not math.isnan(alpha) else "the total of the items has no variance: α is undefined",
        **base,
    )


@dataclass(frozen=True)
class SplitHalf:
    """Split-half reliability of a test's attribute words (or base pairs) (:func:`split_half`).

    Attributes
    ----------
    reliability : float
        The Spearman-Brown corrected reliability 2 r̄ / (1 + r̄) of the mean correlation r̄.
    correlation : float
        r̄: the mean over splits of the correlation, across cases, of the two halves' associations.
    reliability_low, reliability_high : float
        2.5 % and 97.5 % quantiles of r over the splits, Spearman-Brown corrected: how much the
        estimate depends on the split (not a confidence interval).
    n : int
        Cases used.
    n_splits : int
        Splits averaged over (those with a defined r).
    exact : bool
        Whether every split was enumerated (else ``n_splits`` random splits).
    seed : int
        The seed of the random splits.
    note : str
        Why a value is NaN, or which side was held fixed; empty otherwise.
    """

    reliability: float
    correlation: float
    reliability_low: float
    reliability_high: float
    n: int
    n_splits: int
    exact: bool
    seed: int
    note: str = ""


def _spearman_brown(r: float | NDArray) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(r) > -1.0, 2.0 * np.asarray(r) / (1.0 + np.asarray(r)), np.nan)


def _quadratic(left: NDArray, matrix: NDArray, right: NDArray) -> NDArray:
    """Σ_j Σ_l left[s, j] matrix[j, l] right[s, l] for each row s, summed along fixed axes (rows in
    batches of about a million terms)."""
    k = matrix.shape[0]
    out = np.empty(left.shape[0])
    step = max(1, 2**20 // (k * k))
    for lo in range(0, left.shape[0], step):
        terms = left[lo : lo + step, :, None] * matrix[None, :, :] * right[lo : lo + step, None, :]
        out[lo : lo + step] = np.add.reduce(np.add.reduce(terms, axis=2), axis=1)
    return out


def _no_split_half(note: str, **fields: Any) -> SplitHalf:
    nan = math.nan
    return SplitHalf(
        reliability=nan, correlation=nan, reliability_low=nan, reliability_high=nan, n_splits=0, note=note, **fields
    )


def split_half(
    items: ArrayLike | ItemMoments,
    *,
    seed: int,
    n_a: int | None = None,
    n_splits: int = 5000,
) -> SplitHalf:
    """Split-half reliability of the attribute sets, Spearman-Brown corrected, averaged over splits.

    Each split divides A into halves A₁, A₂ (sizes ``⌊|A|/2⌋`` and the rest) and likewise B; each half gives
    every case w the association s_h(w) = mean over A_h of the item scores + mean over B_h (with B's item
    scores −cos(w, b), this is mean_{A_h} cos − mean_{B_h} cos), and r is the correlation of s₁ and s₂
    across the cases. The reliability of the full-length association is the Spearman-Brown correction
    2 r̄ / (1 + r̄) (Spearman 1910; Brown 1910) of the mean r̄ over splits (correcting each split's r
    before averaging would let one split with r near −1 dominate). Every r is computed from the items'
    centred cross-products C, r = w₁ᵀCw₂ / √(w₁ᵀCw₁ · w₂ᵀCw₂) with w_h the halves' weights, so a
    vocabulary's :class:`ItemMoments` give it without another pass.

    When there are at most ``n_splits`` distinct splits (``C(|A|, ⌊|A|/2⌋) · C(|B|, ⌊|B|/2⌋)``), all are
    enumerated (``exact``); otherwise split i draws A₁ and then B₁ (the first ⌊m/2⌋ of a permutation,
    without replacement) from ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(i,)))``, so the
    first splits are the same whatever ``n_splits``. A side of one word is held fixed: its word is in
    both halves, and the reliability is that of the other side's words.

    Parameters
    ----------
    items
        Item scores (n cases, k items), or their :class:`ItemMoments`: the first ``n_a`` columns are
        A's items, the others B's (see :func:`cronbach_alpha` for the item scores).
    seed
        Non-negative integer (used when the splits are drawn).
    n_a
        The number of A's items; None when all items form one list (the base pairs of a direction,
        each item a pair's association).
    n_splits
        Random splits to average over, or the largest number of distinct splits to enumerate.

    Returns
    -------
    SplitHalf
        NaN with a ``note`` when no side has 2 items, fewer than 3 cases, or no split has a defined r.

    Raises
    ------
    ValueError, TypeError
        ``n_a`` not in 1..k − 1, bad ``seed`` or ``n_splits``, and as :func:`item_moments`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> true = rng.normal(size=(50, 1))
    >>> scores = np.hstack([true + rng.normal(size=(50, 8)), -true + rng.normal(size=(50, 8))])
    >>> scores[:, 8:] *= -1  # B's items are -cos(w, b)
    >>> res = split_half(scores, n_a=8, seed=0)
    >>> res.exact, res.n_splits, round(res.reliability, 3), round(cronbach_alpha(scores).alpha, 3)
    (True, 4900, 0.937, 0.935)
    """
    seed = check_seed(seed)
    n_splits = check_count(n_splits, "n_splits", 1)
    totals = _totals(items)
    k, n, c = totals.k, totals.n, totals.comoment
    if n_a is None:
        sides = [np.arange(k)]
    else:
        n_a = check_count(n_a, "n_a", 1)
        if n_a >= k:
            raise ValueError(f"n_a must leave at least one of the {k} items to B, got {n_a}")
        sides = [np.arange(n_a), np.arange(n_a, k)]
    base: dict[str, Any] = dict(n=n, seed=seed)
    splittable = [side for side in sides if side.size >= 2]
    note = ""
    if not splittable or n < 3:
        note = (
            f"{n} case(s): a correlation across cases needs at least 3"
            if splittable
            else "no side has 2 items to split"
        )
        return _no_split_half(note, exact=False, **base)
    if len(splittable) < len(sides):
        note = "a side of one item is in both halves: the reliability is that of the other side's items"
    distinct = math.prod(math.comb(side.size, side.size // 2) for side in splittable)
    exact = distinct <= n_splits
    if exact:
        per_side = [itertools.combinations(side.tolist(), side.size // 2) for side in splittable]
        choices: list[tuple[tuple[int, ...], ...]] = list(itertools.product(*per_side))
    else:
        choices = []
        for i in range(n_splits):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
            choices.append(tuple(tuple(side[rng.permutation(side.size)[: side.size // 2]]) for side in splittable))
    first = np.zeros((len(choices), k))
    second = np.zeros((len(choices), k))
    for side in sides:
        if side.size < 2:
            first[:, side] = second[:, side] = 1.0
    for s, halves in enumerate(choices):
        for side, half in zip(splittable, halves):
            in_first = np.isin(side, half)
            first[s, side[in_first]] = 1.0 / in_first.sum()
            second[s, side[~in_first]] = 1.0 / (~in_first).sum()
    cross, var_1, var_2 = _quadratic(first, c, second), _quadratic(first, c, first), _quadratic(second, c, second)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(cross / np.sqrt(var_1 * var_2), -1.0, 1.0)
    r = r[(var_1 > 0) & (var_2 > 0)]
    if r.size == 0:
        return _no_split_half("no split has halves that vary across cases", exact=exact, **base)
    mean = float(np.add.reduce(r)) / r.size
    low, high = np.quantile(r, [0.025, 0.975])
    return SplitHalf(
        reliability=float(_spearman_brown(mean)),
        correlation=mean,
        reliability_low=float(_spearman_brown(low)),
        reliability_high=float(_spearman_brown(high)),
        n_splits=int(r.size),
        exact=exact,
        note=note,
        **base,
    )


@dataclass(frozen=True)
class LeaveOneOut:
    """A statistic with each attribute word (or base pair) left out in turn (:func:`leave_one_out`).

    Attributes
    ----------
    statistic : float
        The statistic with every word.
    values : ndarray
        The statistic without word j: A's words, then B's (one per pair when paired); NaN where the
        word is the only one on its side.
    low, high : float
        The range of ``values``.
    most_influential : int
        The index (into ``values``) of the word whose removal moves the statistic most (the first of
        equals); −1 when no value is defined.
    word : str
        That word's name (its index when no names were given).
    shift : float
        ``values[most_influential] − statistic``.
    note : str
        Why no value is defined; empty otherwise.
    """

    statistic: float
    values: np.ndarray
    low: float
    high: float
    most_influential: int
    word: str
    shift: float
    note: str = ""


def leave_one_out(
    statistic: Callable[[NDArray[np.intp], NDArray[np.intp]], float],
    *,
    n_a: int,
    n_b: int,
    paired: bool = False,
    words: Sequence[str] | None = None,
) -> LeaveOneOut:
    """The range of a statistic (e.g. d) over leaving out one attribute word at a time, naming the word
    that moves it most (Antoniak & Mimno 2021: one seed word can decide a result).

    Parameters
    ----------
    statistic
        ``statistic(a_index, b_index)`` → the statistic computed with the words ``a_index`` of A and
        ``b_index`` of B (integer arrays, increasing). It can score per-target cosines (a WEAT cell)
        or evaluate a vocabulary's moments for a direction (a full-vocabulary cell): whatever the cell
        computes, from the words it is given.
    n_a, n_b
        The words of A and of B.
    paired
        Leave out the pairs (a_j, b_j) instead (base pairs, RIPA): ``n_a == n_b`` and the statistic is
        called with the same index array twice.
    words
        Names of the words (A's then B's, n_a + n_b of them) or of the pairs (n_a), for ``word``.

    Returns
    -------
    LeaveOneOut

    Raises
    ------
    ValueError, TypeError
        Sizes below 1, ``paired`` with n_a ≠ n_b, ``words`` of another length, a statistic that does
        not return one number.

    Examples
    --------
    WEAT's d from each target's cosines with A and B (targets 0-3 are X, 4-7 Y):

    >>> from biasdask.stats.weat import weat_effect_size
    >>> rng = np.random.default_rng(3)
    >>> cos_a, cos_b = rng.normal(0.3, 0.1, (8, 4)), rng.normal(0.2, 0.1, (8, 3))
    >>> cos_a[:4] += 0.1
    >>> def d(ia, ib):
    ...     s = cos_a[:, ia].mean(axis=1) - cos_b[:, ib].mean(axis=1)
    ...     return weat_effect_size(s[:4], s[4:])
    >>> res = leave_one_out(d, n_a=4, n_b=3, words=["he", "man", "boy", "son", "she", "woman", "girl"])
    >>> round(res.statistic, 3), round(res.low, 3), round(res.high, 3), res.word
    (1.125, 0.712, 1.422, 'he')
    """
    if not callable(statistic):
        raise TypeError(f"statistic must be callable as statistic(a_index, b_index), got {type(statistic).__name__}")
    n_a, n_b = check_count(n_a, "n_a", 1), check_count(n_b, "n_b", 1)
    if paired and n_a != n_b:
        raise ValueError(f"paired words need as many words in A as in B, got {n_a} and {n_b}")
    size = n_a if paired else n_a + n_b
    if words is not None:
        if isinstance(words, str) or len(words) != size:
            what = "pairs" if paired else "words of A and B"
            raise ValueError(f"words must name the {size} {what}, got {words!r}")
        names = [str(word) for word in words]
    else:
        names = [str(j) for j in range(size)]

    def evaluate(a_index: NDArray[np.intp], b_index: NDArray[np.intp]) -> float:
        value = statistic(a_index, b_index)
        if np.ndim(value) != 0:
            raise TypeError(f"statistic must return one number, got {value!r}")
        return float(value)

    a_all, b_all = np.arange(n_a), np.arange(n_b)
    full = evaluate(a_all, b_all)
    values = np.full(size, np.nan)
    for j in range(size):
        if paired:
            if n_a > 1:
                kept = np.delete(a_all, j)
                values[j] = evaluate(kept, kept)
        elif j < n_a:
            if n_a > 1:
                values[j] = evaluate(np.delete(a_all, j), b_all)
        elif n_b > 1:
            values[j] = evaluate(a_all, np.delete(b_all, j - n_a))
    moved = np.abs(values - full)
    if np.isnan(moved).all():
        note = "no word can be left out (one word a side) or the statistic is undefined without each"
        nan = math.nan
        return LeaveOneOut(full, values, low=nan, high=nan, most_influential=-1, word="", shift=nan, note=note)
    most = int(np.nanargmax(moved))
    return LeaveOneOut(
        statistic=full,
        values=values,
        low=float(np.nanmin(values)),
        high=float(np.nanmax(values)),
        most_influential=most,
        word=names[most],
        shift=float(values[most] - full),
    )


@dataclass(frozen=True)
class InternalConsistency:
    """How well the attribute words (or base pairs) of one test agree (:func:`internal_consistency`).

    Attributes
    ----------
    alpha : CronbachAlpha
        Cronbach's α of the items over the cases.
    split_half : SplitHalf
        The Spearman-Brown corrected split-half reliability of the attribute sets.
    leave_one_out : LeaveOneOut or None
        The effect size d leaving out each attribute word (or pair) in turn; None without cases to
        compute d from (a vocabulary's moments).
    n_a : int or None
        The items of A (the first ones, then B's); None when the items are base pairs.
    """

    alpha: CronbachAlpha
    split_half: SplitHalf
    leave_one_out: LeaveOneOut | None
    n_a: int | None


def _composite_d(items: NDArray[np.float64], n_a: int | None, n_x: int) -> Callable:
    """d of the association the items make, s(w) = mean of A's items + mean of B's items (B's items are
    −cos(w, b)) or the mean of the pairs' items, X the first ``n_x`` cases."""

    def d(a_index: NDArray[np.intp], b_index: NDArray[np.intp]) -> float:
        if n_a is None:
            s = items[:, a_index].mean(axis=1)
        else:
            s = items[:, a_index].mean(axis=1) + items[:, n_a + b_index].mean(axis=1)
        return weat_effect_size(s[:n_x], s[n_x:])

    return d


def vocabulary_effect_size(
    items: ItemMoments, *, n_a: int | None
) -> Callable[[NDArray[np.intp], NDArray[np.intp]], float]:
    """The full-vocabulary test's d of the association the items make, from their moments over a
    vocabulary: ``effect_size(a_index, b_index)`` for :func:`internal_consistency` (d without a word or
    pair, with no second pass over the vectors).

    The association with the items ``a_index`` of A and ``b_index`` of B is the composite s = Σ_j w_j x_j
    with ``w_j = 1/len(a_index)`` on A's and ``1/len(b_index)`` on B's (for pairs, ``n_a`` None,
    ``1/len(a_index)`` on the pairs kept): the test's u when u is linear in the attribute vectors (cosine, RIPA). Against a dummy
    language of as many words scoring 0, d = s̄ / √((wᵀCw + n s̄²/2) / (2n − 1)) with s̄ = wᵀμ, C the
    centred cross-products and n the words used (:func:`biasdask.stats.effect.effect_size`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(0.1, 1.0, size=(1000, 3))
    >>> d = vocabulary_effect_size(item_moments(x), n_a=None)
    >>> s = x[:, [0, 2]].mean(axis=1)
    >>> pooled = np.r_[s, np.zeros(1000)]
    >>> bool(np.isclose(d(np.array([0, 2]), np.array([0, 2])), s.mean() / pooled.std(ddof=1)))
    True
    """
    if not isinstance(items, ItemMoments):
        raise TypeError(f"items must be ItemMoments, got {type(items).__name__}")
    totals = items.totals()
    k, n = totals.k, totals.n
    if n_a is not None and not 1 <= n_a < k:
        raise ValueError(f"n_a must be in 1..{k - 1}, got {n_a}")

    def d(a_index: NDArray[np.intp], b_index: NDArray[np.intp]) -> float:
        w = np.zeros(k)
        if n_a is None:
            w[a_index] = 1.0 / len(a_index)
        else:
            w[a_index] = 1.0 / len(a_index)
            w[n_a + np.asarray(b_index)] = 1.0 / len(b_index)
        mean = math.fsum((w * totals.mean).tolist())
        spread = math.fsum((np.multiply.outer(w, w) * totals.comoment).ravel().tolist())
        variance = (spread + n * mean * mean / 2.0) / (2 * n - 1) if n > 0 else math.nan
        return mean / math.sqrt(variance) if variance > 0 else math.nan

    return d


def internal_consistency(
    items: ArrayLike | ItemMoments,
    *,
    seed: int,
    n_a: int | None,
    n_x: int | None = None,
    effect_size: Callable[[NDArray[np.intp], NDArray[np.intp]], float] | None = None,
    words: Sequence[str] | None = None,
    n_splits: int = 5000,
) -> InternalConsistency:
    """The internal consistency of a test's attribute words (Du, Fang & Nguyen 2021): Cronbach's α
    (:func:`cronbach_alpha`), the split-half reliability (:func:`split_half`) and the range of d leaving
    out one word (or pair) at a time (:func:`leave_one_out`), in one call.

    Parameters
    ----------
    items
        Item scores, shape (n cases, k items): for a WEAT-style test the target words X then Y as cases
        and the attribute words of A then B as items, cos(w, a_j) for A's and −cos(w, b_j) for B's
        (:func:`biasdask.stats.weat.weat_items`); for base pairs one column per pair, its association.
        Or their :class:`ItemMoments` gathered over a vocabulary (no ``n_x``: no d).
    seed
        Seeds the random splits (non-negative integer).
    n_a
        A's items (the first ``n_a`` columns); None when the items are base pairs (one list).
    n_x
        The first ``n_x`` cases are X, the others Y: d is WEAT's effect size of the association the
        items make, s(w) = mean of A's items + mean of B's items (mean_A cos − mean_B cos), or the mean
        of the pairs' items.
    effect_size
        Instead of ``n_x``: ``effect_size(a_index, b_index)`` → d with the words ``a_index`` of A and
        ``b_index`` of B (for pairs the same index twice), when the test's d is not WEAT's of these items
        (Lewis & Lupyan's career/family d with its grammatical-gender runs).
    words
        Names of the items (A's then B's, or the pairs), for the word :func:`leave_one_out` names.
    n_splits
        As in :func:`split_half`.

    Returns
    -------
    InternalConsistency

    Raises
    ------
    ValueError, TypeError
        ``n_x`` and ``effect_size`` both given, ``n_x`` without cases (moments) or not leaving a case
        to Y, and as :func:`cronbach_alpha`, :func:`split_half` and :func:`leave_one_out`.

    Examples
    --------
    WEAT's items for 4 + 4 targets and 3 + 3 attribute words (random cosines here):

    >>> rng = np.random.default_rng(1)
    >>> cos_a, cos_b = rng.normal(0.3, 0.1, (8, 3)), rng.normal(0.2, 0.1, (8, 3))
    >>> cos_a[:4] += 0.1
    >>> res = internal_consistency(np.hstack([cos_a, -cos_b]), n_a=3, n_x=4, seed=0,
    ...                            words=["he", "man", "boy", "she", "woman", "girl"])
    >>> res.split_half.exact, res.split_half.n_splits, res.leave_one_out.word
    (True, 9, 'girl')
    >>> round(res.alpha.alpha, 3), round(res.leave_one_out.statistic, 3)
    (0.403, 0.888)
    """
    seed = check_seed(seed)
    if n_x is not None and effect_size is not None:
        raise ValueError("give n_x (WEAT's d of the items) or effect_size (the test's own d), not both")
    table = items if isinstance(items, ItemMoments) else _numbers(items, "items", 2)
    k = table.k if isinstance(table, ItemMoments) else table.shape[1]
    if n_a is not None:
        n_a = check_count(n_a, "n_a", 1)
        if n_a >= k:
            raise ValueError(f"n_a must leave at least one of the {k} items to B, got {n_a}")
    if n_x is not None:
        if isinstance(table, ItemMoments):
            raise ValueError("n_x needs the items' scores case by case, not their moments")
        n_x = check_count(n_x, "n_x", 1)
        if n_x >= table.shape[0]:
            raise ValueError(f"n_x must leave at least one of the {table.shape[0]} cases to Y, got {n_x}")
        effect_size = _composite_d(table, n_a, n_x)
    moments = table if isinstance(table, ItemMoments) else item_moments(table)
    loo = None
    if effect_size is not None:
        paired = n_a is None
        n_b = k if n_a is None else k - n_a
        loo = leave_one_out(effect_size, n_a=k if n_a is None else n_a, n_b=n_b, paired=paired, words=words)
    return InternalConsistency(
        alpha=cronbach_alpha(moments),
        split_half=split_half(moments, seed=seed, n_a=n_a, n_splits=n_splits),
        leave_one_out=loo,
        n_a=n_a,
    )


# ----------------------------------------------------------------------------------------------
# Agreement of scoring rules over a vocabulary


@dataclass(frozen=True)
class ScoreCorrelation:
    """Pearson correlations between k per-word scores over a vocabulary (:func:`score_correlation`).

    Attributes
    ----------
    correlation : ndarray, shape (k, k)
        r between the scores of rules i and j (1 on the diagonal; NaN where a score does not vary).
    ci_low, ci_high : ndarray, shape (k, k)
        Fisher-z intervals tanh(atanh r ∓ z_{(1+level)/2} / √(n − 3)) at ``ci_level``,
        treating the words as independent draws (NaN on the diagonal and for n ≤ 3).
    n : int
        Words used (those with every rule's score).
    n_skipped : int
        Words left out for a missing (NaN) score.
    labels : tuple of str
        The rules' names.
    ci_level : float
        Confidence level of the intervals.
    """

    correlation: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n: int
    n_skipped: int
    labels: tuple[str, ...]
    ci_level: float


def score_correlation(
    scores: ArrayLike | ItemMoments,
    *,
    labels: Sequence[str] | None = None,
    ci_level: float = 0.95,
) -> ScoreCorrelation:
    """How closely k scoring rules agree word by word: the Pearson correlations of their per-word
    scores over a vocabulary, from the moments of one pass.

    For the agreement of the rules' effect sizes across languages (a rank correlation with a bootstrap
    interval), pass the languages' d under each rule to :func:`pairwise_correlations`.

    Parameters
    ----------
    scores
        Per-word scores, shape (n words, k rules) (e.g. u under cosine, SemAxis, RIPA, euclidean), or
        their :class:`ItemMoments` merged over a vocabulary's chunks. A word with a NaN score under
        any rule is left out.
    labels
        The rules' names (default "0", "1", ...).
    ci_level
        Confidence level of the Fisher-z intervals. Over a vocabulary of millions of words they are a
        few thousandths wide: the words are not independent draws, and the informative uncertainty is
        the spread of the correlation between languages.

    Returns
    -------
    ScoreCorrelation

    Raises
    ------
    ValueError, TypeError
        ``labels`` of another length, a bad ``ci_level``, and as :func:`item_moments`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> u = rng.normal(size=10_000)
    >>> rules = np.column_stack([u, 2 * u + rng.normal(size=10_000), rng.normal(size=10_000)])
    >>> res = score_correlation(rules, labels=["cosine", "ripa", "noise"])
    >>> res.correlation.round(3).tolist()[0], res.n
    ([1.0, 0.894, 0.013], 10000)
    """
    level = check_level(ci_level)
    totals = _totals(scores)
    k, n, c = totals.k, totals.n, totals.comoment
    if labels is None:
        names = tuple(str(j) for j in range(k))
    else:
        names = tuple(str(label) for label in labels)
        if isinstance(labels, str) or len(names) != k:
            raise ValueError(f"labels must name the {k} rules, got {labels!r}")
    squares = np.diagonal(c).copy()
    flat = squares == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(c / np.sqrt(np.multiply.outer(squares, squares)), -1.0, 1.0)
    r[flat[:, None] | flat[None, :]] = np.nan
    np.fill_diagonal(r, np.where(flat, np.nan, 1.0))
    if n < 2:
        r[:] = np.nan
    low, high = np.full((k, k), np.nan), np.full((k, k), np.nan)
    if n > 3:
        half = float(special.ndtri(1.0 - (1.0 - level) / 2.0)) / math.sqrt(n - 3)
        for i, j in itertools.permutations(range(k), 2):
            if not math.isnan(r[i, j]):  # math's atanh and tanh: numpy's may be vectorised per CPU
                z = math.atanh(r[i, j]) if abs(r[i, j]) < 1.0 else math.copysign(math.inf, r[i, j])
                low[i, j], high[i, j] = math.tanh(z - half), math.tanh(z + half)
    return ScoreCorrelation(
        correlation=r, ci_low=low, ci_high=high, n=n, n_skipped=totals.n_skipped, labels=names, ci_level=level
    )
