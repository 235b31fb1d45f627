"""The placebo null: frequency-matched random attribute words, their statistics from moments, and the
placebo p-value.

The dummy-language null of the full-vocabulary test is false for any attribute pair of a real embedding
(table/chair rejects as firmly as he/she). The placebo comparison asks instead whether the observed
statistic exceeds that of random attribute sets of the same sizes and word frequencies.

Drawing the placebo words (:func:`rank_neighbourhoods`, :func:`rank_matched_words`)
    Each attribute word, of 1-based frequency rank r, has a window of candidates: those whose ranks lie
    within a factor ``ratio`` of r (default 2: r/2 to 2r, which by Zipf's law is frequencies within a
    factor of 2), widened where fewer than ``min_size`` (default 50) lie there to the ``min_size``
    nearest in log10 rank (ties to the more frequent word); the window used is recorded
    (:class:`RankWindows`). A draw replaces every attribute word by a candidate of its window, taken in
    the given order, each uniformly among the window's candidates not yet used in that draw, so no
    word appears twice in one draw (A' ∪ B' are distinct words). The candidates are the caller's: the
    vocabulary minus the study's attribute words and known gendered words, and by default only
    word-like tokens (:func:`biasdask.lexicon.word_like`). Draw i uses row i of one
    ``numpy.random.Generator(PCG64(SeedSequence(seed)))`` stream of uniforms, so the first n draws are
    the same whatever the number asked for.

Statistics of many pairs at once (:func:`linear_moments`, :func:`evaluate_moments`)
    A linear association is u(w) = v_w · δ with v_w = ŵ (``cosine``, ``semaxis``) or the raw w
    (``ripa``) and δ the pair's direction (:func:`biasdask.stats.association.linear_directions`). With
    weights z_k (one row per weighting k) the sums over the words X of the test
    S1_k = Σ z_kw v_w, S2_k = Σ z_kw v_w v_wᵀ, Σ z_k, Σ z_k², and unweighted N, Σ v_w, Σ v_w v_wᵀ give
    for any δ, without another pass over the vocabulary:

    - s_k = Σ_X z u = S1_k · δ (Y, the dummy language, scores 0);
    - d = mean_X u / sd(u over X ∪ Y, ddof 1), Y = N zeros, from Σ u = (Σ v)·δ and
      Σ u² = δᵀ(Σ v vᵀ)δ: exactly :func:`biasdask.stats.effect.effect_size` of the test;
    - the weighted effect size (:func:`weighted_effect_size`) over the same 2N pooled values, Y
      carrying copies of X's weights, from s_k, δᵀS2_kδ, Σ z_k and Σ z_k².

Large vocabularies (:class:`MomentAccumulator`)
    The Gram Σ v vᵀ costs N·D²/2 multiply-adds, several times the association pass itself at 300
    dimensions. A study therefore gathers N, Σ v, S1_k, Σ z_k and Σ z_k² exactly in the pass that
    computes u (one compiled loop over each block of rows, no reassociation, so the sums are the same
    whatever the chunks are processed by), and Σ v vᵀ over a systematic sample of X only: every
    ``step``-th row of the vocabulary (by frequency rank) that X holds, scaled by N / (rows sampled)
    where d needs Σ u². With at most :data:`GRAM_WORDS` rows sampled (all of a vocabulary of that size
    or less, exactly) the relative error of d's SD is about 1/√(2 · 32,768) ≈ 0.4 %, far below the
    spread of d between attribute pairs; s_k, and so every placebo p-value and z, stay exact. S2_k is
    not gathered (no weighted effect size for placebo pairs).

The euclidean association (:class:`VocabularySample`, :func:`euclidean_statistics`)
    u(w) = |ŵ - m_B| - |ŵ - m_A| is not linear in a direction, so no moments give it for any pair. The
    accumulator keeps instead the sampled rows themselves (the same systematic sample, with their
    weights), and each pair's u is computed on them explicitly; every sum over X is estimated as
    N / (rows sampled) times the sample's (exact up to :data:`GRAM_WORDS` words). The observed pair is
    evaluated on the same sample, so a placebo comparison ranks like with like.

Placebo p-value (:func:`placebo_summary`)
    p = (1 + #{placebo statistics at least as extreme as the observed})/(P + 1) (Phipson & Smyth 2010),
    z = (s - mean)/SD (ddof 1) of the placebo statistics, and the observed value's percentile among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.association import LINEAR_ASSOCIATIONS, Association, unit_rows
from biasdask.stats.checks import check_count, check_seed
from biasdask.stats.linalg import gram, matmul, matmul_t, matvec, rowdot

__all__ = [
    "DEFAULT_MATCH",
    "DEFAULT_MIN_CANDIDATES",
    "DEFAULT_RANK_RATIO",
    "GRAM_WORDS",
    "LinearMoments",
    "MomentAccumulator",
    "MomentStatistics",
    "PLACEBO_WORDS",
    "PlaceboMatch",
    "PlaceboSummary",
    "RankWindows",
    "VocabularySample",
    "draw_from_windows",
    "euclidean_statistics",
    "evaluate_moments",
    "gram_step",
    "linear_moments",
    "merge_moments",
    "moment_rows",
    "placebo_summary",
    "rank_matched_words",
    "rank_neighbourhoods",
    "remove_rows",
    "weighted_effect_size",
    "Alternative",
    "unweighted_effect_sizes",
    "weighted_statistics",
]

DEFAULT_RANK_RATIO = 2.0
"""A placebo word's frequency rank lies within this factor of its attribute word's (r/2 to 2r: within
0.3 decades of frequency, by Zipf's law), unless its window is widened (:data:`DEFAULT_MIN_CANDIDATES`)."""

DEFAULT_MIN_CANDIDATES = 50
"""Candidates an attribute word's window holds at least: where fewer lie within the rank ratio (at the
top of a vocabulary: ranks 9-34 for a rank-17 word), the window widens to the 50 nearest in log rank."""

GRAM_WORDS = 32_768
"""Rows of a vocabulary at most whose v vᵀ a study sums (a systematic sample; see :func:`gram_step`)."""

Alternative = Literal["greater", "less", "two-sided"]
_PLACEBO_ALTERNATIVES = ("greater", "less", "two-sided")

PlaceboWords = Literal["letters", "any"]
PLACEBO_WORDS: tuple[str, ...] = ("letters", "any")
"""Which tokens a placebo word may be: ``letters``, the word-like tokens of the attribute words' scripts
(:func:`biasdask.lexicon.scripts.word_like`: letters and combining marks only, no digits, punctuation or
symbols); ``any``, every token."""


def _rank_ratio(value: float, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number of at least 1, got {value!r}")
    if not (np.isfinite(value) and value >= 1.0):
        raise ValueError(f"{name} must be a finite number of at least 1, got {value}")
    return float(value)


def _ranks(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of ranks, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise TypeError(f"{name} must hold integer frequency ranks, got dtype {arr.dtype}")
    if arr.size and arr.min() < 1:
        raise ValueError(f"{name} are 1-based frequency ranks; got {arr.min()}")
    return arr.astype(np.float64)


@dataclass(frozen=True)
class PlaceboMatch:
    """How a placebo word is matched to the attribute word it replaces.

    Attributes
    ----------
    words : {"letters", "any"}
        The tokens that may be drawn (:data:`PLACEBO_WORDS`).
    rank_ratio : float
        A placebo word's frequency rank lies within this factor of its attribute word's
        (:func:`rank_neighbourhoods`), ≥ 1.
    min_candidates : int
        A window holds at least this many candidates, widened where fewer lie within the ratio.

    Examples
    --------
    >>> PlaceboMatch()
    PlaceboMatch(words='letters', rank_ratio=2.0, min_candidates=50)
    """

    words: PlaceboWords = "letters"
    rank_ratio: float = DEFAULT_RANK_RATIO
    min_candidates: int = DEFAULT_MIN_CANDIDATES

    def __post_init__(self) -> None:
        if self.words not in PLACEBO_WORDS:
            raise ValueError(f"words must be one of {', '.join(PLACEBO_WORDS)}; got {self.words!r}")
        object.__setattr__(self, "rank_ratio", _rank_ratio(self.rank_ratio, "rank_ratio"))
        object.__setattr__(self, "min_candidates", check_count(self.min_candidates, "min_candidates", 1))


DEFAULT_MATCH = PlaceboMatch()
"""The default :class:`PlaceboMatch`: word-like tokens, ranks within a factor 2, 50 candidates at least."""


# ----------------------------------------------------------------------------------------------
# Drawing rank-matched placebo words


@dataclass(frozen=True)
class RankWindows:
    """The frequency-rank window of each attribute word: the candidates a placebo word replacing it is
    drawn from (:func:`rank_neighbourhoods`).

    Each window is a run of the candidates sorted by rank: ``order[start[j]:stop[j]]`` (:meth:`members`).

    Attributes
    ----------
    order : ndarray of int
        Indices into the candidate ranks, sorted by rank (stable: equal ranks keep their order).
    start, stop : ndarray of int, shape (k,)
        Each attribute word's run in ``order``.
    rank : ndarray of int, shape (k,)
        The attribute words' ranks.
    low, high : ndarray of int, shape (k,)
        The smallest and the largest rank in each window.
    ratio : ndarray of float, shape (k,)
        The largest factor between a window's ranks and its word's, max(high/r, r/low): at most the
        ``ratio`` asked for, larger where the window was widened to reach ``min_size`` candidates.
    """

    order: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ratio: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """The candidates in each window."""
        return self.stop - self.start

    def members(self, j: int) -> np.ndarray:
        """The candidates (indices into the candidate ranks) of window ``j``, by rank."""
        return self.order[self.start[j] : self.stop[j]]

    def describe(self, labels: Sequence[str]) -> str:
        """Each window as text, e.g. ``"he (rank 17): ranks 9-34; she (rank 62): ranks 31-124"``."""
        return "; ".join(
            f"{label} (rank {r}): ranks {lo}-{hi}"
            for label, r, lo, hi in zip(labels, self.rank.tolist(), self.low.tolist(), self.high.tolist())
        )


def rank_neighbourhoods(
    ranks: ArrayLike,
    candidate_ranks: ArrayLike,
    *,
    ratio: float = DEFAULT_RANK_RATIO,
    min_size: int = DEFAULT_MIN_CANDIDATES,
) -> RankWindows:
    """Each attribute word's window of candidates: the ranks within a factor ``ratio`` of its own,
    widened to the ``min_size`` nearest in log10 rank where fewer lie within it.

    Parameters
    ----------
    ranks
        1-based frequency ranks of the attribute words, shape (k,).
    candidate_ranks
        1-based frequency ranks of the candidate words, shape (c,), c ≥ k.
    ratio
        The window of a word of rank r is [r / ratio, r · ratio] (ratio ≥ 1).
    min_size
        Candidates a window holds at least (at most c): a narrower window is widened, symmetrically in
        log rank, to the ``min_size`` candidates nearest in log10 rank (among candidates equally far,
        the more frequent first). At least k, so that a draw can give every attribute word its own.

    Returns
    -------
    RankWindows

    Raises
    ------
    ValueError
        Fewer candidates than attribute words, ``ratio`` < 1, ``min_size`` < 1, non-positive ranks.

    Examples
    --------
    >>> w = rank_neighbourhoods([100, 3], np.arange(1, 1000), ratio=1.5, min_size=5)
    >>> w.low.tolist(), w.high.tolist(), w.sizes.tolist(), w.ratio.tolist()
    ([67, 2], [150, 6], [84, 5], [1.5, 2.0])
    """
    r = _ranks(ranks, "ranks")
    c = _ranks(candidate_ranks, "candidate_ranks")
    min_size = check_count(min_size, "min_size", 1)
    ratio = _rank_ratio(ratio, "ratio")
    if c.size < r.size:
        raise ValueError(f"{r.size} attribute words need at least {r.size} candidates, got {c.size}")
    size = min(max(min_size, r.size), c.size)
    order = np.argsort(c, kind="stable")
    by_rank = c[order]
    start = np.empty(r.size, dtype=np.intp)
    stop = np.empty(r.size, dtype=np.intp)
    for j, rank in enumerate(r):
        lo = int(np.searchsorted(by_rank, rank / ratio, side="left"))
        hi = int(np.searchsorted(by_rank, rank * ratio, side="right"))
        if hi - lo < size:  # widen to the nearest ``size`` in log rank, growing towards the nearer side
            # the distance in log rank compared as the ratio it grows with: a division is correctly
            # rounded on every CPU, a logarithm is not
            lo = hi = int(np.searchsorted(by_rank, rank))
            while hi - lo < size:
                if hi == c.size or (lo > 0 and rank / by_rank[lo - 1] <= by_rank[hi] / rank):
                    lo -= 1
                else:
                    hi += 1
        start[j], stop[j] = lo, hi
    low = by_rank[start].astype(np.int64)
    high = by_rank[stop - 1].astype(np.int64)
    return RankWindows(
        order=order,
        start=start,
        stop=stop,
        rank=r.astype(np.int64),
        low=low,
        high=high,
        ratio=np.maximum(high / r, r / low),
    )


def rank_matched_words(
    ranks: ArrayLike,
    candidate_ranks: ArrayLike,
    *,
    n: int,
    seed: int,
    ratio: float = DEFAULT_RANK_RATIO,
    min_candidates: int = DEFAULT_MIN_CANDIDATES,
) -> NDArray[np.intp]:
    """``n`` placebo draws, each replacing every attribute word by a distinct candidate of its rank window:
    :func:`draw_from_windows` of :func:`rank_neighbourhoods`.

    Parameters
    ----------
    ranks
        1-based frequency ranks of the attribute words (A's, then B's), shape (k,).
    candidate_ranks
        1-based frequency ranks of the words a placebo may use (the vocabulary minus the study's
        attribute words and known gendered words, word-like tokens only by default), shape (c,).
    n
        Number of draws P.
    seed
        Non-negative integer (the cell's seed); the draws are a function of it alone.
    ratio, min_candidates
        The rank windows (:func:`rank_neighbourhoods`): ranks within a factor ``ratio`` of the
        attribute word's, widened to at least ``min_candidates`` candidates.

    Returns
    -------
    numpy.ndarray
        Indices into ``candidate_ranks``, shape (n, k): draw i replaces attribute word j by candidate
        ``out[i, j]``; the k words of a draw are distinct.

    Raises
    ------
    ValueError
        Fewer candidates than attribute words, non-positive ranks, ``n`` < 1, a negative seed.
    TypeError
        Non-integer ranks, ``n`` or ``seed``.

    Examples
    --------
    >>> draws = rank_matched_words([3, 40], np.arange(1, 200), n=4, seed=7, ratio=1.1, min_candidates=5)
    >>> draws.shape
    (4, 2)
    >>> bool(np.all(draws[:, 0] < 6) and np.all(np.abs(draws[:, 1] - 39) <= 4))
    True
    """
    windows = rank_neighbourhoods(ranks, candidate_ranks, ratio=ratio, min_size=min_candidates)
    return draw_from_windows(windows, n=n, seed=seed)


def draw_from_windows(windows: RankWindows, *, n: int, seed: int) -> NDArray[np.intp]:
    """``n`` draws of one candidate per window, distinct within a draw (:func:`rank_matched_words`).

    Word j of a draw is uniform over its window minus the words already chosen for words 0..j-1 of
    that draw (a window holds at least k candidates, so one is left). Row i of the uniforms is row i of
    ``Generator(PCG64(SeedSequence(seed))).random((n, k))``: asking for more draws keeps the first ones.

    Returns
    -------
    numpy.ndarray
        Indices into the candidate ranks the windows were made of, shape (n, k).
    """
    seed = check_seed(seed)
    n = check_count(n, "n", 1)
    k = windows.start.size
    uniforms = np.random.default_rng(np.random.SeedSequence(seed)).random((n, k))
    positions = np.empty((n, k), dtype=np.intp)  # positions in ``windows.order``
    for j in range(k):
        lo, hi = int(windows.start[j]), int(windows.stop[j])
        earlier = np.sort(positions[:, :j], axis=1)
        taken = (earlier >= lo) & (earlier < hi)
        n_free = (hi - lo) - taken.sum(axis=1)
        at = lo + np.minimum((uniforms[:, j] * n_free).astype(np.intp), n_free - 1)
        # the choice-th free position: step over the taken positions at or before it, in increasing order
        for m in range(j):
            at += taken[:, m] & (earlier[:, m] <= at)
        positions[:, j] = at
    return windows.order[positions]


# ----------------------------------------------------------------------------------------------
# Moments of a linear association


def moment_rows(kind: Association, vectors: ArrayLike) -> NDArray[np.float64]:
    """The v_w of association ``kind`` for raw word vectors: ŵ (``cosine``, ``semaxis``) or w (``ripa``).

    Zero vectors (u = NaN, left out of every test) must be left out by the caller; :func:`unit_rows`
    refuses them.
    """
    if kind not in LINEAR_ASSOCIATIONS:
        raise ValueError(f"association {kind!r} is not linear in a direction; linear ones: {list(LINEAR_ASSOCIATIONS)}")
    if kind == "ripa":
        return np.asarray(vectors, dtype=np.float64)
    return unit_rows(vectors)


@dataclass(frozen=True)
class LinearMoments:
    """Sums over a set of words that give the statistics of any attribute direction (float64).

    Attributes
    ----------
    n : int
        Words N.
    sum_v : ndarray, shape (D,)
        Σ v_w.
    sum_vv : ndarray, shape (D, D)
        Σ v_w v_wᵀ over the ``n_gram`` words sampled (all N unless gathered by a
        :class:`MomentAccumulator` from a larger vocabulary).
    sum_zv : ndarray, shape (K, D)
        Σ z_kw v_w per weighting k.
    sum_zvv : ndarray, shape (K, D, D), or None
        Σ z_kw v_w v_wᵀ (None: not gathered; the weighted effect sizes are then NaN).
    sum_z, sum_z2 : ndarray, shape (K,)
        Σ z_kw and Σ z_kw².
    n_gram : int or None
        The words whose v_w v_wᵀ ``sum_vv`` holds (None: all N).
    """

    n: int
    sum_v: np.ndarray
    sum_vv: np.ndarray
    sum_zv: np.ndarray
    sum_zvv: np.ndarray | None
    sum_z: np.ndarray
    sum_z2: np.ndarray
    n_gram: int | None = None

    @property
    def n_weightings(self) -> int:
        """K, the number of weightings."""
        return int(self.sum_z.shape[0])

    @property
    def dim(self) -> int:
        """D, the vector dimension."""
        return int(self.sum_v.shape[0])

    @property
    def sampled(self) -> int:
        """The words in ``sum_vv``."""
        return self.n if self.n_gram is None else self.n_gram

    def weightings(self, rows: Sequence[int]) -> LinearMoments:
        """The moments of the weightings ``rows`` only."""
        rows = list(rows)
        return replace(
            self,
            sum_zv=self.sum_zv[rows],
            sum_zvv=None if self.sum_zvv is None else self.sum_zvv[rows],
            sum_z=self.sum_z[rows],
            sum_z2=self.sum_z2[rows],
        )


def linear_moments(v: ArrayLike, z: ArrayLike | None = None) -> LinearMoments:
    """The moments of a block of words (e.g. one chunk of a vocabulary).

    Parameters
    ----------
    v
        The words' v_w (:func:`moment_rows`), shape (n, D); read as float64.
    z
        Their weights, shape (K, n) (one row per weighting), or None for no weighting (K = 0).

    Returns
    -------
    LinearMoments

    Raises
    ------
    ValueError
        Non-finite vectors or weights, negative weights, mismatched shapes.

    Notes
    -----
    Σ z v vᵀ is computed as BᵀB with B = √z·v (:func:`biasdask.stats.linalg.gram`, n·D²/2
    multiply-adds), once for the unweighted sums and for every weighting whose weights are all 1.
    Every sum is in a fixed order, so the moments are the same to the bit on any CPU.

    Examples
    --------
    >>> m = linear_moments([[1.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [0.5, 0.25]])
    >>> m.n, m.sum_v.tolist(), m.sum_zv.tolist(), m.sum_z2.tolist()
    (2, [1.0, 2.0], [[1.0, 2.0], [0.5, 0.5]], [2.0, 0.3125])
    """
    rows = np.asarray(v, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"v must be 2-D (words × dimensions), got shape {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("v holds non-finite values; leave zero vectors and missing words out")
    n, dim = rows.shape
    weights = np.empty((0, n)) if z is None else np.asarray(z, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[1] != n:
        raise ValueError(f"z must have shape (K, {n}) (one row of weights per weighting), got {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("weights must be finite and non-negative")
    sum_vv = gram(rows)
    sum_zvv = np.empty((weights.shape[0], dim, dim))
    for k, zk in enumerate(weights):
        # a uniform weighting (z = 1) has the unweighted sums, bit for bit: computed once
        sum_zvv[k] = sum_vv if np.all(zk == 1.0) else gram(rows * np.sqrt(zk)[:, None])
    return LinearMoments(
        n=n,
        sum_v=rows.sum(axis=0),
        sum_vv=sum_vv,
        sum_zv=matmul(weights, rows),
        sum_zvv=sum_zvv,
        sum_z=weights.sum(axis=1),
        sum_z2=np.square(weights).sum(axis=1),
    )


def _check_compatible(a: LinearMoments, b: LinearMoments) -> None:
    if a.sum_zv.shape != b.sum_zv.shape or (a.sum_zvv is None) != (b.sum_zvv is None):
        raise ValueError(
            f"moments of different shapes: {a.n_weightings} weightings of dimension {a.dim} and "
            f"{b.n_weightings} of dimension {b.dim}, or one without the weighted Gram"
        )


def merge_moments(*parts: LinearMoments | VocabularySample) -> LinearMoments | VocabularySample:
    """The moments of the union of disjoint blocks of words, summed left to right (samples of a
    non-linear association, :class:`VocabularySample`, are concatenated in order).

    Floating-point addition is not associative: to get bit-identical moments whatever the scheduler,
    merge the chunks' moments in chunk order (``merge_moments(*chunks)``, or folding
    ``merge_moments(total, chunk)`` chunk after chunk).
    """
    if not parts:
        raise ValueError("merge_moments needs at least one LinearMoments")
    if any(isinstance(p, VocabularySample) for p in parts):
        return _merge_samples(parts)
    linear = [p for p in parts if isinstance(p, LinearMoments)]
    total = linear[0]
    for part in linear[1:]:
        _check_compatible(total, part)
        sampled = total.n_gram is not None or part.n_gram is not None
        total = LinearMoments(
            n=total.n + part.n,
            sum_v=total.sum_v + part.sum_v,
            sum_vv=total.sum_vv + part.sum_vv,
            sum_zv=total.sum_zv + part.sum_zv,
            sum_zvv=None if total.sum_zvv is None or part.sum_zvv is None else total.sum_zvv + part.sum_zvv,
            sum_z=total.sum_z + part.sum_z,
            sum_z2=total.sum_z2 + part.sum_z2,
            n_gram=total.sampled + part.sampled if sampled else None,
        )
    return total


def _merge_samples(parts: Sequence) -> VocabularySample:
    if not all(isinstance(p, VocabularySample) for p in parts):
        raise ValueError("cannot merge a VocabularySample with LinearMoments")
    first = parts[0]
    if any(p.n_weightings != first.n_weightings or p.dim != first.dim for p in parts):
        raise ValueError("samples of different shapes: their weightings or dimensions differ")
    sum_z, sum_z2 = first.sum_z, first.sum_z2
    for p in parts[1:]:  # left to right, like the moments
        sum_z, sum_z2 = sum_z + p.sum_z, sum_z2 + p.sum_z2
    return VocabularySample(
        n=sum(p.n for p in parts),
        rows=np.concatenate([p.rows for p in parts]),
        unit=np.concatenate([p.unit for p in parts]),
        z=np.concatenate([p.z for p in parts], axis=1),
        sum_z=sum_z,
        sum_z2=sum_z2,
    )


def remove_rows(moments: LinearMoments, v: ArrayLike, z: ArrayLike | None = None) -> LinearMoments:
    """``moments`` without the terms of the words ``v`` (weights ``z``), which must be among them.

    The exact subtraction of their terms: equal to the moments of the remaining words up to
    floating-point rounding. Use it once for a fixed set of words (e.g. attribute words that a study
    excludes from X); words that change with every placebo draw are better passed to
    :func:`evaluate_moments` as ``exclude_v``/``exclude_z``. Moments with a sampled Gram (from a
    :class:`MomentAccumulator`) are refused: which of the words the sample holds is not known here.
    """
    if moments.n_gram is not None or moments.sum_zvv is None:
        raise ValueError("remove_rows needs moments with the whole Gram (from linear_moments)")
    part = linear_moments(v, z)
    _check_compatible(moments, part)
    if part.n > moments.n:
        raise ValueError(f"cannot remove {part.n} words from moments of {moments.n}")
    assert part.sum_zvv is not None
    return LinearMoments(
        n=moments.n - part.n,
        sum_v=moments.sum_v - part.sum_v,
        sum_vv=moments.sum_vv - part.sum_vv,
        sum_zv=moments.sum_zv - part.sum_zv,
        sum_zvv=moments.sum_zvv - part.sum_zvv,
        sum_z=moments.sum_z - part.sum_z,
        sum_z2=moments.sum_z2 - part.sum_z2,
    )


def gram_step(n_words: int, gram_words: int = GRAM_WORDS) -> int:
    """The step of the systematic sample of a vocabulary of ``n_words`` whose Gram a study sums: rows
    0, step, 2·step... (1: every row, for ``n_words`` ≤ ``gram_words``).

    Examples
    --------
    >>> gram_step(30_000), gram_step(2_000_000)
    (1, 62)
    """
    if gram_words < 1:
        raise ValueError(f"gram_words must be positive, got {gram_words}")
    return max(1, -(-int(n_words) // int(gram_words)))


@njit(cache=True, nogil=True)
def _sums_kernel(vectors, norms, weights, keep, unit, linear, first, step, sums, sample, taken):  # pragma: no cover
    # Row after row into per-dimension accumulators: no reduction is reassociated and no product fused
    # with its sum, so the sums are the same whatever the blocks the rows come in and whatever the CPU. sums: row 0 Σv, rows 1..K Σz_k v (``linear``
    # only), then the counts: sums[K + 1, :K] Σz_k, sums[K + 2, :K] Σz_k², sums[K + 1, K] N.
    k_w, dim = weights.shape[0], vectors.shape[1]
    n_taken = taken[0]
    for i in range(vectors.shape[0]):
        if not keep[i]:
            continue
        c = 1.0 / norms[i] if unit else 1.0
        if linear:
            for j in range(dim):
                sums[0, j] += vectors[i, j] * c
        for k in range(k_w):
            if linear:
                wk = weights[k, i] * c
                for j in range(dim):
                    sums[1 + k, j] += vectors[i, j] * wk
            sums[k_w + 1, k] += weights[k, i]
            sums[k_w + 2, k] += weights[k, i] * weights[k, i]
        sums[k_w + 1, k_w] += 1.0
        if (first + i) % step == 0:
            for j in range(dim):
                sample[n_taken, j] = vectors[i, j] * c
            n_taken += 1
    taken[0] = n_taken


@dataclass(frozen=True)
class VocabularySample:
    """A systematic sample of a vocabulary's words X for an association that is not linear in a
    direction (``euclidean``), gathered by a :class:`MomentAccumulator`: every ``step``-th row of the
    vocabulary that X holds, with its unit vector and weights (:func:`euclidean_statistics`).

    Attributes
    ----------
    n : int
        Words N of X (all of them, not only those sampled).
    rows : ndarray of int, shape (n_s,)
        The vocabulary rows sampled, increasing.
    unit : ndarray, shape (n_s, D)
        Their unit vectors ŵ (float64).
    z : ndarray, shape (K, n_s)
        Their weights per weighting.
    sum_z, sum_z2 : ndarray, shape (K,)
        Σ z_k and Σ z_k² over all of X (exact).
    """

    n: int
    rows: np.ndarray
    unit: np.ndarray
    z: np.ndarray
    sum_z: np.ndarray
    sum_z2: np.ndarray

    @property
    def n_weightings(self) -> int:
        """K, the number of weightings."""
        return int(self.sum_z.shape[0])

    @property
    def dim(self) -> int:
        """D, the vector dimension."""
        return int(self.unit.shape[1])

    @property
    def sampled(self) -> int:
        """The words sampled."""
        return int(self.rows.shape[0])

    def weightings(self, rows: Sequence[int]) -> VocabularySample:
        """The sample with the weightings ``rows`` only."""
        rows = list(rows)
        return replace(self, z=self.z[rows], sum_z=self.sum_z[rows], sum_z2=self.sum_z2[rows])


class MomentAccumulator:
    """The moments of a vocabulary's words X gathered block by block in the pass that scores them
    (see the module docstring): exact N, Σ v, Σ z v, Σ z, Σ z²; Σ v vᵀ over every ``step``-th row.
    For ``euclidean`` (not linear in a direction) the sampled rows themselves, with their weights:
    a :class:`VocabularySample`.

    Parameters
    ----------
    kind
        The association: v_w = w / |w| (``cosine``, ``semaxis``, ``euclidean``) or w (``ripa``).
    dim, n_weightings
        D and K.
    step
        The sample's step (:func:`gram_step`); rows are sampled by their index in the vocabulary.
    rows
        The rows that will be added at most (room for the sample).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> w = rng.normal(size=(100, 4)).astype(np.float32)
    >>> norms = np.linalg.norm(w.astype(np.float64), axis=1)
    >>> acc = MomentAccumulator("cosine", 4, 1, step=1, rows=100)
    >>> acc.add(0, w[:60], norms[:60], np.ones((1, 60)), np.ones(60, bool))
    >>> acc.add(60, w[60:], norms[60:], np.ones((1, 40)), np.ones(40, bool))
    >>> m, exact = acc.moments(), linear_moments(moment_rows("cosine", w), np.ones((1, 100)))
    >>> m.n, bool(np.allclose(m.sum_vv, exact.sum_vv)), bool(np.allclose(m.sum_zv, exact.sum_zv))
    (100, True, True)
    """

    def __init__(self, kind: Association, dim: int, n_weightings: int, *, step: int, rows: int) -> None:
        if kind not in (*LINEAR_ASSOCIATIONS, "euclidean"):
            raise ValueError(f"unknown association {kind!r}")
        if step < 1:
            raise ValueError(f"step must be positive, got {step}")
        self.unit, self.step, self.k = kind != "ripa", int(step), int(n_weightings)
        self.linear = kind in LINEAR_ASSOCIATIONS
        self._sums = np.zeros((n_weightings + 3, max(dim, n_weightings + 1)))
        self._dim = dim
        self._sample = np.empty((-(-int(rows) // self.step) + 1, dim))
        self._taken = np.zeros(1, dtype=np.int64)
        self._rows: list[np.ndarray] = []
        self._z: list[np.ndarray] = []

    def add(self, start: int, vectors: NDArray, norms: NDArray, weights: NDArray, keep: NDArray) -> None:
        """Add the rows ``keep`` of a block of raw vectors (float32, rows ``start``... of the
        vocabulary), with their L2 norms (> 0 where kept) and weights (K, rows)."""
        keep = np.asarray(keep, dtype=np.bool_)
        weights = np.asarray(weights, dtype=np.float64)
        _sums_kernel(
            np.asarray(vectors, dtype=np.float32),
            np.asarray(norms, dtype=np.float64),
            weights,
            keep,
            self.unit,
            self.linear,
            int(start),
            self.step,
            self._sums,
            self._sample,
            self._taken,
        )
        if not self.linear:  # the kernel's sampling rule, for the rows' indices and weights
            taken = np.flatnonzero(keep & ((int(start) + np.arange(keep.size)) % self.step == 0))
            self._rows.append(int(start) + taken)
            self._z.append(weights[:, taken])

    def moments(self) -> LinearMoments | VocabularySample:
        """The :class:`LinearMoments` of the rows added (``sum_zvv`` None; ``n_gram`` the rows sampled),
        or for ``euclidean`` the :class:`VocabularySample`."""
        k, dim, sums = self.k, self._dim, self._sums
        sample = self._sample[: int(self._taken[0])]
        if not self.linear:
            return VocabularySample(
                n=int(sums[k + 1, k]),
                rows=np.concatenate([np.empty(0, np.int64), *self._rows]),
                unit=sample.copy(),
                z=np.concatenate([np.empty((k, 0)), *self._z], axis=1),
                sum_z=sums[k + 1, :k].copy(),
                sum_z2=sums[k + 2, :k].copy(),
            )
        return LinearMoments(
            n=int(sums[k + 1, k]),
            sum_v=sums[0, :dim].copy(),
            sum_vv=gram(sample),
            sum_zv=sums[1 : k + 1, :dim].copy(),
            sum_zvv=None,
            sum_z=sums[k + 1, :k].copy(),
            sum_z2=sums[k + 2, :k].copy(),
            n_gram=int(sample.shape[0]),
        )


@dataclass(frozen=True)
class MomentStatistics:
    """Statistics of P attribute directions against a dummy language (:func:`evaluate_moments`).

    Attributes
    ----------
    statistic : ndarray, shape (P, K)
        s_k = Σ_X z_k u.
    effect_size : ndarray, shape (P,)
        d = mean_X u / sd(u over X and N zeros, ddof 1); NaN when that SD is 0.
    effect_size_weighted : ndarray, shape (P, K)
        The weighted effect size (:func:`weighted_effect_size`) with the dummy's copies of the
        weights; its sign is that of s_k; NaN when the weighted SD is 0 or undefined.
    n : ndarray of int, shape (P,)
        The words of X for each direction (fewer when words were excluded).
    """

    statistic: np.ndarray
    effect_size: np.ndarray
    effect_size_weighted: np.ndarray
    n: np.ndarray


def _dot(directions: NDArray, vector: NDArray) -> NDArray:
    """δ_p · v for each row p (:func:`biasdask.stats.linalg.matvec`)."""
    return matvec(directions, vector)


def _quadratic(directions: NDArray, matrix: NDArray) -> NDArray:
    """δ_pᵀ M δ_p for each row p."""
    return rowdot(matmul(directions, matrix), directions)


def _ratio(num: NDArray, den: NDArray) -> NDArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def unweighted_effect_sizes(moments: LinearMoments, directions: NDArray, exclude: tuple | None = None) -> NDArray:
    """d for each direction (rows of ``directions``); ``exclude`` as in :func:`evaluate_moments`."""
    total = _dot(directions, moments.sum_v)
    squares = _quadratic(directions, moments.sum_vv)
    if moments.n_gram is not None:  # Σ u² over X from the sample's
        squares = squares * (moments.n / moments.n_gram) if moments.n_gram else np.full_like(squares, np.nan)
    n = np.full(directions.shape[0], float(moments.n))
    if exclude is not None:
        u_ex = exclude[0]
        total = total - u_ex.sum(axis=1)
        squares = squares - np.square(u_ex).sum(axis=1)
        n = n - u_ex.shape[1]
    return _effect_size_from_sums(total, squares, n)


def _effect_size_from_sums(total: NDArray, squares: NDArray, n: NDArray) -> NDArray:
    """d of X's u against N zeros from Σ_X u, Σ_X u² and N."""
    pooled = 2.0 * n
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = (squares - total * total / pooled) / (pooled - 1.0)
        return _ratio(total / n, variance)


def weighted_statistics(
    moments: LinearMoments, directions: NDArray, k: int, exclude: tuple | None = None
) -> tuple[NDArray, NDArray]:
    """(s_k, weighted effect size) for each direction and weighting ``k``; ``exclude`` as in
    :func:`evaluate_moments`."""
    s = _dot(directions, moments.sum_zv[k])
    if moments.sum_zvv is None:  # not gathered: s only
        s = s - ((exclude[1][:, k, :] * exclude[0]).sum(axis=1) if exclude is not None else 0.0)
        return s, np.full(directions.shape[0], np.nan)
    squares = _quadratic(directions, moments.sum_zvv[k])
    sum_z = np.full(directions.shape[0], moments.sum_z[k])
    sum_z2 = np.full(directions.shape[0], moments.sum_z2[k])
    if exclude is not None:
        u_ex, z_ex = exclude
        zk = z_ex[:, k, :]
        s = s - (zk * u_ex).sum(axis=1)
        squares = squares - (zk * u_ex * u_ex).sum(axis=1)
        sum_z = sum_z - zk.sum(axis=1)
        sum_z2 = sum_z2 - np.square(zk).sum(axis=1)
    return s, _weighted_from_sums(s, squares, sum_z, sum_z2)


def _weighted_from_sums(s: NDArray, squares: NDArray, sum_z: NDArray, sum_z2: NDArray) -> NDArray:
    """The weighted effect size of X's u against N zeros with X's weights, from s = Σ z u, Σ z u²,
    Σ z and Σ z²."""
    v1, v2 = 2.0 * sum_z, 2.0 * sum_z2
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = (squares - s * s / v1) / (v1 - v2 / v1)
        return _ratio(s / sum_z, variance)


def _directions(moments: LinearMoments, directions: ArrayLike) -> NDArray[np.float64]:
    d = np.asarray(directions, dtype=np.float64)
    d = d[None, :] if d.ndim == 1 else d
    if d.ndim != 2 or d.shape[1] != moments.dim:
        raise ValueError(f"directions must have shape (P, {moments.dim}), got {np.shape(directions)}")
    return d


def _exclusion(moments, d, exclude_v, exclude_z) -> tuple | None:
    if exclude_v is None:
        if exclude_z is not None:
            raise ValueError("exclude_z needs exclude_v")
        return None
    ex = np.asarray(exclude_v, dtype=np.float64)
    ex = np.broadcast_to(ex, (d.shape[0], *ex.shape)) if ex.ndim == 2 else ex
    if ex.ndim != 3 or ex.shape[0] != d.shape[0] or ex.shape[2] != moments.dim:
        raise ValueError(
            f"exclude_v must have shape (m, {moments.dim}) or (P, m, {moments.dim}), got {np.shape(exclude_v)}"
        )
    m = ex.shape[1]
    k = moments.n_weightings
    if exclude_z is None:
        if k:
            raise ValueError("exclude_z (the excluded words' weights) is needed when the moments have weightings")
        zs = np.empty((d.shape[0], 0, m))
    else:
        zs = np.asarray(exclude_z, dtype=np.float64)
        zs = np.broadcast_to(zs, (d.shape[0], *zs.shape)) if zs.ndim == 2 else zs
        if zs.shape != (d.shape[0], k, m):
            raise ValueError(f"exclude_z must have shape ({k}, {m}) or (P, {k}, {m}), got {np.shape(exclude_z)}")
    if m >= moments.n:
        raise ValueError(f"cannot exclude {m} of {moments.n} words")
    return rowdot(ex.reshape(-1, moments.dim), np.repeat(d, m, axis=0)).reshape(d.shape[0], m), zs


def evaluate_moments(
    moments: LinearMoments,
    directions: ArrayLike,
    *,
    exclude_v: ArrayLike | None = None,
    exclude_z: ArrayLike | None = None,
) -> MomentStatistics:
    """s, d and the weighted effect size of the full-vocabulary test for each attribute direction.

    Parameters
    ----------
    moments
        The moments of the test's words X (:func:`linear_moments`, :func:`merge_moments`).
    directions
        δ of each attribute pair, shape (P, D) or (D,)
        (:func:`biasdask.stats.association.linear_directions`).
    exclude_v, exclude_z
        Words to leave out of X for each direction, exactly (e.g. the placebo pair's own words when
        the study excludes attribute words): their v_w, shape (m, D) for all directions or (P, m, D)
        per direction, and their weights, shape (K, m) or (P, K, m). The dummy language shrinks with
        X (N - m zeros); the other words keep their weights.

    Returns
    -------
    MomentStatistics
        ``statistic`` (P, K), ``effect_size`` (P,), ``effect_size_weighted`` (P, K), ``n`` (P,).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> v = moment_rows("cosine", rng.normal(size=(1000, 5)))
    >>> u = v @ np.array([0.3, -0.1, 0.0, 0.2, 0.0])
    >>> from biasdask.stats.effect import effect_size
    >>> st = evaluate_moments(linear_moments(v), [0.3, -0.1, 0.0, 0.2, 0.0])
    >>> bool(np.isclose(st.effect_size[0], effect_size(u, 1000), rtol=1e-12))
    True
    """
    d = _directions(moments, directions)
    exclude = _exclusion(moments, d, exclude_v, exclude_z)
    k = moments.n_weightings
    statistic = np.empty((d.shape[0], k))
    weighted = np.empty((d.shape[0], k))
    for j in range(k):
        statistic[:, j], weighted[:, j] = weighted_statistics(moments, d, j, exclude)
    n = moments.n - (0 if exclude is None else exclude[0].shape[1])
    return MomentStatistics(
        statistic=statistic,
        effect_size=unweighted_effect_sizes(moments, d, exclude),
        effect_size_weighted=weighted,
        n=np.full(d.shape[0], n, dtype=np.int64),
    )


def euclidean_statistics(
    sample: VocabularySample,
    words: ArrayLike,
    a_index: ArrayLike,
    b_index: ArrayLike,
    *,
    exclude_rows: ArrayLike | None = None,
    exclude_z: ArrayLike | None = None,
) -> MomentStatistics:
    """s, d and the weighted effect size of the full-vocabulary test with the ``euclidean`` association
    for each pair of attribute sets, estimated on a systematic sample of its words.

    u(w) = |ŵ - m_B| - |ŵ - m_A|, m the mean unit vector of a set, is not linear in a direction: each
    pair's u is computed explicitly on the sampled words (|ŵ - m|² = 1 - 2 ŵ·m + |m|², ŵ·m the mean of
    the projections on the set's words, one matrix product for all the words of all the pairs), and
    every sum over X is estimated by (N / n_s) times the sum over the n_s words sampled: exact when
    the sample holds all of X (a vocabulary of at most :data:`GRAM_WORDS` words). A placebo comparison
    computes the observed pair's statistics the same way, so it compares like with like.

    Parameters
    ----------
    sample
        The sample of the test's words X (:class:`MomentAccumulator` with ``"euclidean"``).
    words
        Raw vectors of the attribute words of all the pairs, shape (W, D).
    a_index, b_index
        Rows of ``words`` making each pair's A and B, shapes (P, n_a) and (P, n_b) (or 1-D for one pair).
    exclude_rows, exclude_z
        Words to leave out of X for each pair (e.g. the placebo pair's own words): their vocabulary rows,
        shape (P, m), and weights, shape (P, K, m), as in :func:`evaluate_moments`.

    Returns
    -------
    MomentStatistics

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> w = rng.normal(size=(300, 4))
    >>> acc = MomentAccumulator("euclidean", 4, 1, step=1, rows=300)
    >>> acc.add(0, w.astype(np.float32), np.linalg.norm(w.astype(np.float32), axis=1), np.ones((1, 300)),
    ...         np.ones(300, bool))
    >>> st = euclidean_statistics(acc.moments(), w[:2], [0], [1])
    >>> from biasdask.stats.association import associate, association_axes
    >>> u = associate("euclidean", w.astype(np.float32), np.linalg.norm(w, axis=1), association_axes(
    ...     "euclidean", w[:1], w[1:2]))
    >>> bool(np.isclose(st.statistic[0, 0], u.sum(dtype=np.float64), rtol=1e-5))
    True
    """
    unit = unit_rows(words)
    a_idx = np.atleast_2d(np.asarray(a_index, dtype=np.intp))
    b_idx = np.atleast_2d(np.asarray(b_index, dtype=np.intp))
    if unit.ndim != 2 or unit.shape[1] != sample.dim:
        raise ValueError(f"words must have shape (W, {sample.dim}), got {np.shape(words)}")
    if a_idx.shape[0] != b_idx.shape[0] or 0 in a_idx.shape or 0 in b_idx.shape:
        raise ValueError(
            f"a_index and b_index need the same pairs and words on both sides, got {a_idx.shape}, {b_idx.shape}"
        )
    if min(a_idx.min(), b_idx.min()) < 0 or max(a_idx.max(), b_idx.max()) >= unit.shape[0]:
        raise ValueError(f"a_index and b_index must be rows of words (0 to {unit.shape[0] - 1})")
    n_pairs, k = a_idx.shape[0], sample.n_weightings
    exclude = None
    if exclude_rows is not None:
        ex = np.asarray(exclude_rows, dtype=np.int64).reshape(n_pairs, -1)
        zs = np.asarray(exclude_z if exclude_z is not None else np.empty((n_pairs, 0, ex.shape[1])), dtype=np.float64)
        if zs.shape != (n_pairs, k, ex.shape[1]):
            raise ValueError(f"exclude_z must have shape ({n_pairs}, {k}, {ex.shape[1]}), got {zs.shape}")
        exclude = ex, zs
    projections = matmul_t(sample.unit, unit)  # (n_s, W): ŵ·â
    squared = [rowdot(m, m) for m in (unit[a_idx].mean(axis=1), unit[b_idx].mean(axis=1))]
    skip = np.full((n_pairs, 0), -1, dtype=np.int64)
    n = np.full(n_pairs, sample.n, dtype=np.int64)
    sum_z, sum_z2 = np.broadcast_to(sample.sum_z, (n_pairs, k)), np.broadcast_to(sample.sum_z2, (n_pairs, k))
    if exclude is not None:
        skip = _sample_positions(sample.rows, exclude[0])
        n = n - exclude[0].shape[1]
        sum_z, sum_z2 = sum_z - exclude[1].sum(axis=2), sum_z2 - np.square(exclude[1]).sum(axis=2)
    sums = np.zeros((2 + 2 * k, n_pairs))
    _euclidean_kernel(  # type: ignore[call-arg]
        projections,
        np.ascontiguousarray(a_idx, dtype=np.int64),
        np.ascontiguousarray(b_idx, dtype=np.int64),
        *squared,
        np.ascontiguousarray(sample.z, dtype=np.float64),
        skip,
        sums,
    )
    sums = sums.T
    sampled = sample.sampled - (skip >= 0).sum(axis=1)
    size = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(sampled > 0, size / sampled, np.nan)
    effect = _effect_size_from_sums(scale * sums[:, 0], scale * sums[:, 1], size)
    statistic = scale[:, None] * sums[:, 2 : 2 + k]
    weighted = np.empty((n_pairs, k))
    for j in range(k):
        weighted[:, j] = _weighted_from_sums(statistic[:, j], scale * sums[:, 2 + k + j], sum_z[:, j], sum_z2[:, j])
    return MomentStatistics(statistic=statistic, effect_size=effect, effect_size_weighted=weighted, n=n)


@njit(cache=True, nogil=True)
def _euclidean_kernel(projections, a_idx, b_idx, squared_a, squared_b, z, skip, sums):  # pragma: no cover
    # The sampled words in order, all pairs at each (no sum reassociated, no product fused with its sum:
    # each of a pair's sums adds its words in row order; the loops over pairs vectorise): u = |ŵ - m_B| - |ŵ - m_A| from the mean
    # projection on each set's words; sums[:, p] = Σu, Σu², Σz_k u..., Σz_k u²...; a pair's ``skip``
    # positions (-1: none) add nothing (u = 0 there).
    n_s, n_pairs, k_w = projections.shape[0], a_idx.shape[0], z.shape[0]
    n_a, n_b = a_idx.shape[1], b_idx.shape[1]
    flat = skip.ravel()
    order = np.argsort(flat, kind="mergesort")
    at = 0
    while at < order.size and flat[order[at]] < 0:
        at += 1
    to_a, to_b, u = np.empty(n_pairs), np.empty(n_pairs), np.empty(n_pairs)
    for i in range(n_s):
        row = projections[i]
        for p in range(n_pairs):
            to_a[p] = row[a_idx[p, 0]]
            to_b[p] = row[b_idx[p, 0]]
        for j in range(1, n_a):
            for p in range(n_pairs):
                to_a[p] += row[a_idx[p, j]]
        for j in range(1, n_b):
            for p in range(n_pairs):
                to_b[p] += row[b_idx[p, j]]
        for p in range(n_pairs):
            u[p] = np.sqrt(max(1.0 - 2.0 * (to_b[p] / n_b) + squared_b[p], 0.0)) - np.sqrt(
                max(1.0 - 2.0 * (to_a[p] / n_a) + squared_a[p], 0.0)
            )
        while at < order.size and flat[order[at]] == i:
            u[order[at] // skip.shape[1]] = 0.0
            at += 1
        total, squares = sums[0], sums[1]
        for p in range(n_pairs):
            total[p] += u[p]
            squares[p] += u[p] * u[p]
        for k in range(k_w):
            zk, weighted, weighted_squares = z[k, i], sums[2 + k], sums[2 + k_w + k]
            for p in range(n_pairs):
                zu = zk * u[p]
                weighted[p] += zu
                weighted_squares[p] += zu * u[p]


def _sample_positions(sampled: NDArray, rows: NDArray) -> NDArray:
    """The position in the sorted ``sampled`` rows of each of ``rows`` (-1 where not sampled)."""
    if sampled.size == 0:
        return np.full(rows.shape, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sampled, rows), sampled.size - 1)
    return np.where(sampled[at] == rows, at, -1).astype(np.int64)


def weighted_effect_size(u_x: ArrayLike, z_x: ArrayLike, u_y: ArrayLike, z_y: ArrayLike) -> NDArray[np.float64] | float:
    """The weighted effect size of two groups: (μ_X - μ_Y) / σ_w, along the last axis.

    μ_X = Σ z_x u_x / Σ z_x and μ_Y likewise; σ_w² = Σ z (u - μ)² / (V1 - V2/V1) over the pooled values
    of X ∪ Y, μ their weighted mean, V1 = Σ z and V2 = Σ z² over the pool (reliability weights: with
    all weights 1 this is the sample variance, ddof 1, and the result is the unweighted effect size d).
    In the full-vocabulary test Y is the dummy language, u_y = 0 with z_y = z_x, so μ_Y = 0 and the
    sign is that of s = Σ z_x u_x.

    Parameters
    ----------
    u_x, z_x
        Values and non-negative weights of X, the same shape (..., n_x).
    u_y, z_y
        Values and weights of Y, shape (..., n_y) (leading axes broadcast with X's).

    Returns
    -------
    float or ndarray
        NaN where a group's weights sum to 0 or σ_w² is not positive.

    Examples
    --------
    >>> weighted_effect_size([1.0, 2.0, 3.0], [1, 1, 1], [0.0, 0.5], [1, 1])  # unit weights: d (ddof 1)
    1.4532958974404493
    >>> float(weighted_effect_size([0.1, -0.5], [0.9, 0.1], [0.0, 0.0], [0.9, 0.1])) > 0  # s > 0
    True
    """
    ux, zx = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (u_x, z_x)))
    uy, zy = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (u_y, z_y)))
    if np.any(zx < 0) or np.any(zy < 0) or not (np.all(np.isfinite(zx)) and np.all(np.isfinite(zy))):
        raise ValueError("weights must be finite and non-negative")
    sx, sy = zx.sum(axis=-1), zy.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mx = (zx * ux).sum(axis=-1) / sx
        my = (zy * uy).sum(axis=-1) / sy
        v1 = sx + sy
        mu = (sx * mx + sy * my) / v1
        ss = (zx * np.square(ux - mu[..., None])).sum(axis=-1) + (zy * np.square(uy - mu[..., None])).sum(axis=-1)
        v2 = np.square(zx).sum(axis=-1) + np.square(zy).sum(axis=-1)
        variance = ss / (v1 - v2 / v1)
        out = np.where((sx > 0) & (sy > 0), _ratio(mx - my, variance), np.nan)
    return float(out) if out.ndim == 0 else out


# ----------------------------------------------------------------------------------------------
# Placebo p-value, z and percentile


@dataclass(frozen=True)
class PlaceboSummary:
    """The observed statistic against its placebo distribution (:func:`placebo_summary`).

    Attributes
    ----------
    p_value : ndarray
        (1 + #{placebo values at least as extreme})/(P + 1).
    z : ndarray
        (observed - mean)/SD of the placebo values (ddof 1); NaN when the SD is 0.
    percentile : ndarray
        100 × (#{placebo < observed} + ½ #{placebo = observed}) / P.
    mean, sd : ndarray
        The placebo distribution's mean and SD (ddof 1).
    n : ndarray of int
        P, the finite placebo values used.
    """

    p_value: np.ndarray
    z: np.ndarray
    percentile: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    n: np.ndarray


def placebo_summary(
    observed: ArrayLike,
    placebo: ArrayLike,
    *,
    alternative: Alternative | ArrayLike = "two-sided",
) -> PlaceboSummary:
    """The placebo p-value, z and percentile of each cell's observed statistic.

    Parameters
    ----------
    observed
        The cells' statistics, any shape S.
    placebo
        Their placebo statistics, shape (P, *S) (draws along the first axis); NaN values (an undefined
        statistic for some draw) are left out of their cell.
    alternative
        ``"greater"``, ``"less"`` or ``"two-sided"`` (a string, or an array of them broadcast to S):
        the cell's alternative, as resolved for its permutation test. Two-sided compares
        |placebo - c| ≥ |observed - c| with c the mean of the cell's placebo values.

    Returns
    -------
    PlaceboSummary
        Arrays of shape S. Where ``observed`` is NaN, or no placebo value is finite, all are NaN.

    Raises
    ------
    ValueError
        Mismatched shapes, an unknown alternative.

    Examples
    --------
    >>> res = placebo_summary(2.5, [0.1, -0.3, 3.0, 0.2], alternative="greater")
    >>> float(res.p_value), float(res.percentile)
    (0.4, 75.0)
    """
    obs = np.asarray(observed, dtype=np.float64)
    draws = np.asarray(placebo, dtype=np.float64)
    if draws.shape[1:] != obs.shape or draws.ndim < 1:
        raise ValueError(
            f"placebo must have shape (P, *{obs.shape}) for observed of shape {obs.shape}, got {draws.shape}"
        )
    alt = np.asarray(alternative)
    unknown = set(np.unique(alt).tolist()) - set(_PLACEBO_ALTERNATIVES)
    if unknown:
        raise ValueError(f"alternative must be one of {', '.join(_PLACEBO_ALTERNATIVES)}; got {sorted(unknown)}")
    alt = np.broadcast_to(alt, obs.shape)
    # the draws along the last, contiguous axis: each statistic's sums then round the same way whatever
    # the others beside it (a sum along axis 0 of (P, K) would depend on K)
    draws = np.ascontiguousarray(np.moveaxis(draws, 0, -1))
    obs_, valid = obs[..., None], np.isfinite(draws)
    n = valid.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(valid, draws, 0.0).sum(axis=-1) / n
        dev = np.where(valid, draws - mean[..., None], 0.0)
        sd = np.sqrt((dev * dev).sum(axis=-1) / (n - 1))
        greater = (valid & (draws >= obs_)).sum(axis=-1)
        less = (valid & (draws <= obs_)).sum(axis=-1)
        two = (valid & (np.abs(draws - mean[..., None]) >= np.abs(obs - mean)[..., None])).sum(axis=-1)
        hits = np.where(alt == "greater", greater, np.where(alt == "less", less, two))
        p = (1.0 + hits) / (n + 1.0)
        z = np.where(sd > 0, (obs - mean) / sd, np.nan)
        below = (valid & (draws < obs_)).sum(axis=-1)
        ties = (valid & (draws == obs_)).sum(axis=-1)
        percentile = 100.0 * (below + 0.5 * ties) / n
    undefined = np.isnan(obs) | (n == 0)
    nan = np.where(undefined, np.nan, 0.0)
    return PlaceboSummary(
        p_value=p + nan,
        z=z + nan,
        percentile=percentile + nan,
        mean=mean,
        sd=np.where(n > 1, sd, np.nan),
        n=n,
    )
