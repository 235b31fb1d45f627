"""Permutation test of s = Σ_X t - Σ_Y t: compiled kernel, exact enumeration, p-values.

Pure numbers (numpy, numba, scipy); :mod:`biasdask.engine.permutation` runs the batches on Dask and
:func:`permutation_test_local` runs them in this process.

Pool and zeros
    X ∪ Y is pooled; items whose score is exactly 0 (the dummy language of the full-vocabulary test, and any zero
    scores in X or Y) contribute nothing to either sum, so they are removed from the pool and only
    counted. A uniformly random split (X_i, Y_i) with |X_i| = |X| then reduces to: k = the number of
    nonzero items landing in X_i, drawn from the exact hypergeometric distribution
    Hypergeom(M = |X| + |Y|, n nonzero items, |X| draws), and a uniformly random k-subset of the n
    nonzero items. With no zeros, k = |X| and this is the ordinary split. Because zeros are removed
    wherever they are, ``y=n`` (an int) and ``y=np.zeros(n)`` give the same pool and bit-identical
    results.

Centring
    Scores are read in float64. Unless float32 holds every one of them exactly (then c = 0 and nothing
    is lost), the nonzero ones are centred on their mean c (in float64) before they are stored as
    float32 residuals r = t - c: with k nonzero items in X_i,
    s_i = (2k - n)·c + (2 Σ_{X_i} r - Σ r), n the number of nonzero items, the last bracket summed by
    the kernel and the first term added in float64. Scores with a large common offset (1e6 + 0.01·ε)
    thus keep their differences, which a float32 copy of t itself would round away.

Statistic
    s_i = Σ_{X_i} t - Σ_{Y_i} t = 2 Σ_{X_i} t - T, with T the pool total. The pool stays float32; each
    masked sum accumulates in float64 over 64 lanes (pool item j goes to lane j mod 64, added in index
    order) that are then summed pairwise in a fixed tree. t·1 and t·0 are exact, so the order of every
    floating-point operation is fixed by the data alone: results are bit-identical on any machine,
    whatever the batch size, group size or worker count. The observed s is computed by the same
    kernel on the observed split.

Randomness
    Permutation i (0-based) uses its own stream: a xoshiro256** generator whose 256-bit state is
    ``numpy.random.SeedSequence(seed, spawn_key=(i,)).generate_state(4, np.uint64)`` (the same as
    ``SeedSequence(seed).spawn(m)[i]``), computed here in compiled code (tested against numpy). In
    that stream, in order: one uniform double u = (x >> 11)·2⁻⁵³ picks k by inverse CDF (only when k
    is random); then the k-subset. Bounded integers in [0, r) use Lemire's multiply-shift with
    rejection on the top 32 bits of a draw (unbiased for r ≤ 2³²). Subsets near n/2 fill ⌈n/64⌉
    random words (p = 1/2 per item), then clear (or set) uniformly chosen set (unset) items by
    rejection until exactly k are set: given its size c, the random set is uniform over c-subsets, and
    removing (adding) a uniformly chosen member keeps it uniform. Far from n/2, Floyd's algorithm
    picks the smaller of the subset and its complement directly. A permutation depends only on
    (seed, i), never on which batch or worker computes it.

Several weightings
    The weightings of a language (t_w = z_w·u over the same items) can share every split
    (:func:`prepare_test` of rows, :func:`null_batch`, :func:`exact_null`): one seed, one draw of split i,
    and the kernel sums each row of a (k × n) pool on the same mask in one pass over the pool, each row
    exactly as it would be summed alone, so row w's null is bit-identical to the single test of row w
    with that seed (common random numbers). Rows must be zero at the same items
    (:func:`shared_split_groups` groups them); a ``frequency`` row, zero for words without an observed
    frequency, has another pool and its own pass.

Speed
    Thirty-two permutations share each pass over a block of 4096 pool values (converted to float64
    once per block and kept in L1), so the pool is read from memory once per 32 permutations. Eight
    lanes at a time are added by a merge-masked vector add driven by a byte of the mask
    (:mod:`biasdask.stats.simd`); hot loops index with uint64, which spares numba's negative-index
    fix-up. Zeros cost nothing. With k rows a pass costs about k single-row passes less the shared draw
    of the split: each row must add its values in its own fixed order to stay bit-identical to a
    single-row run, so its masked adds cannot be shared. The measurements behind these choices, and
    the alternatives they ruled out (subset-sum tables, rows fused in one loop), are in
    docs/benchmarks.md.

p-values
    Exact (when C(M, |X|) ≤ n_permutations and C(M, |X|) ≤ :data:`MAX_EXACT_SPLITS`, the bound that
    keeps an enumeration's arrays near 100 MB; larger tests are sampled): every split is enumerated, p = #{s_i ≥ s}/C(M, |X|) with
    the observed split among them. Sampled (m permutations): p = (1 + #{s_i ≥ s})/(m + 1) for
    ``"greater"``, (1 + #{s_i ≤ s})/(m + 1) for ``"less"``, and (1 + #{|s_i - E| ≥ |s - E|})/(m + 1)
    for ``"two-sided"``, E the closed-form null mean. ``"auto"`` is the original full-vocabulary study's rule: ``"greater"`` if
    s > 0, ``"less"`` if s < 0, and ``"two-sided"`` if s = 0. Comparisons allow a tie tolerance of
    2⁻⁴⁰ times the L1 norm of the residuals plus 2⁻⁵⁰·n·|c| (as scipy allows a relative 100 ε), so
    splits equal in exact arithmetic count as ties despite rounding. The normal approximation uses the closed-form mean
    and SD of :func:`biasdask.stats.effect.null_moments`.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, replace
from typing import Any, TypeGuard, cast

import numpy as np
from numba import njit
from numpy.typing import ArrayLike
from scipy.special import ndtr

from biasdask._calls import PValueAlias
from biasdask.stats import permutation_numpy
from biasdask.stats.effect import effect_size, null_moments
from biasdask.stats.resampling import ALTERNATIVES
from biasdask.stats.rng import POOL_SIZE as _POOL_SIZE
from biasdask.stats.rng import U64 as _U
from biasdask.stats.rng import bounded as _bounded
from biasdask.stats.rng import next_u64 as _next
from biasdask.stats.rng import rotl as _rotl
from biasdask.stats.rng import seed_state as _seed_state
from biasdask.stats.rng import use_floyd as _use_floyd
from biasdask.stats.simd import merge_add_block

__all__ = [
    "ALTERNATIVES",
    "MAX_EXACT_SPLITS",
    "PermutationTestResult",
    "PreparedTest",
    "PreparedTests",
    "exact_null",
    "finish_test",
    "hypergeometric_cdf",
    "normal_pvalue",
    "null_batch",
    "permutation_pvalue",
    "permutation_test_local",
    "permutation_tests_local",
    "prepare_test",
    "resolve_seed",
    "shared_split_groups",
    "MAX_PERMUTATIONS",
]

#: the most permutations a test may ask for: p-values resolve 1e-8, and a null distribution of this
#: size (kept to write the results) already takes 400 MB
MAX_PERMUTATIONS = 100_000_000


_GROUP = 32  # permutations per pass over a block of the pool
_BLOCK_WORDS = 64  # mask words per block: 4096 pool items, 32 KiB as float64
_TIE_SCALE = 2.0**-40  # tie tolerance relative to the L1 norm of the pool
_CENTRE_TIE_SCALE = 2.0**-50  # tie tolerance for the float64 rounding of the centre's term

MAX_EXACT_SPLITS = 2**22
"""Largest number of splits enumerated exactly (~100 MB of statistics and weights); beyond it a test
samples ``n_permutations`` splits even when asked for more than there are."""


@dataclass(frozen=True)
class PermutationTestResult(PValueAlias):
    """Outcome of a permutation test (names follow ``scipy.stats.permutation_test``).

    Attributes
    ----------
    statistic : float
        s = Σ_X t - Σ_Y t.
    p_value : float
        Permutation p-value for ``alternative`` (exact or sampled, see ``exact``).
    effect_size : float
        (mean u_X - mean u_Y) / sd_{X∪Y} u, sample SD (ddof = 1).
    z_score, p_value_normal : float
        (s - null_mean) / null_std and its tail probability for ``alternative`` (two-sided: twice
        the smaller tail).
    null_mean, null_std : float
        Closed-form mean and SD of the permutation null (sampling without replacement).
    n_permutations : int
        Splits evaluated: C(|X|+|Y|, |X|) when exact, else the number sampled.
    exact : bool
        Whether every split was enumerated.
    alternative : str
        The resolved alternative: ``"greater"``, ``"less"`` or ``"two-sided"``.
    n_x, n_y : int
        |X| and |Y| (dummy zeros included).
    seed : int
        The SeedSequence entropy actually used (drawn from the OS when none was given).
    null_distribution : ndarray or None
        The s_i (float64) when requested: sampled ones in permutation order, or all C(M, |X|) splits
        when exact (grouped by the number of nonzero items in X_i, combinations in lexicographic
        order, each repeated once per placement of the zeros).
    p_value_placebo, z_placebo, effect_size_placebo_percentile : float
        d against the d of random attribute pairs of the same word frequencies (with ``placebo``):
        (1 + #placebo d at least as extreme)/(P + 1), (d - mean)/SD of the placebo d, and d's
        percentile among them; NaN without a placebo. d is scale-free, so this is the placebo answer a
        claim rests on (a test without an effect size, a set-level metric: its statistic's).
    p_value_placebo_statistic, z_placebo_statistic : float
        The same for the statistic s, which grows with the distance between the two attribute sets.
    n_placebo : int
        P, the placebo pairs (0 without).
    placebo_rank_ratio : float
        The largest factor between a placebo word's frequency rank and its attribute word's that the
        draws' windows allowed; ``placebo_windows`` each attribute word's window of ranks.
    effect_size_ci_low, effect_size_ci_high, effect_size_se : float
        An interval of d at ``ci_level`` and its standard error (classic tests: a bootstrap of the
        target words; a full-vocabulary test with ``placebo``: of the attribute words, or with one word a
        side the attribute-word spread, which is no confidence interval); NaN where there is none
        (``ci_method`` says which, or why none).
    ci_level : float
        The interval's confidence level (NaN when none was made).
    ci_method : str
        How the interval was made, or why there is none.
    """

    statistic: float
    p_value: float
    effect_size: float
    z_score: float
    p_value_normal: float
    null_mean: float
    null_std: float
    n_permutations: int
    exact: bool
    alternative: str
    n_x: int
    n_y: int
    seed: int
    null_distribution: np.ndarray | None = None
    p_value_placebo: float = float("nan")
    z_placebo: float = float("nan")
    effect_size_placebo_percentile: float = float("nan")
    p_value_placebo_statistic: float = float("nan")
    z_placebo_statistic: float = float("nan")
    n_placebo: int = 0
    placebo_rank_ratio: float = float("nan")
    placebo_windows: str = ""
    effect_size_ci_low: float = float("nan")
    effect_size_ci_high: float = float("nan")
    effect_size_se: float = float("nan")
    ci_level: float = float("nan")
    ci_method: str = ""


@dataclass(frozen=True)
class PreparedTest:
    """Everything the batches of one test need; built once by :func:`prepare_test`.

    Attributes
    ----------
    values : ndarray of float32
        The nonzero pooled scores (those of X first) minus ``centre``, zero-padded to a multiple of 64.
    n_values : int
        Number of nonzero pooled scores.
    n_x, n_y : int
        Group sizes including zeros.
    k_min : int
        Smallest number of nonzero items X_i can hold.
    k_cdf : ndarray of float64
        CDF of k - k_min (hypergeometric, last entry exactly 1); length 1 when k is fixed.
    total : float
        Σ of the stored residuals ``values``, as the kernel sums it.
    statistic : float
        Observed s, as the kernel sums it.
    tolerance : float
        Tie tolerance for the p-value comparisons.
    null_mean, null_std : float
        Closed-form null moments.
    effect_size : float
        Effect size (ddof = 1).
    alternative : str
        Resolved alternative.
    seed : int
        SeedSequence entropy.
    entropy : ndarray of uint64
        ``seed`` as 32-bit words (lowest first), zero-padded to at least 4, stored in uint64.
    n_permutations : int
        Requested number of permutations.
    exact : bool
        Whether the test enumerates all splits.
    centre : float
        c, the float64 mean of the nonzero pooled scores, subtracted before float32 storage (0 when
        float32 holds every score exactly).
    """

    values: np.ndarray
    n_values: int
    n_x: int
    n_y: int
    k_min: int
    k_cdf: np.ndarray
    total: float
    statistic: float
    tolerance: float
    null_mean: float
    null_std: float
    effect_size: float
    alternative: str
    seed: int
    entropy: np.ndarray
    n_permutations: int
    exact: bool
    centre: float = 0.0

    @property
    def n_zero(self) -> int:
        """Pooled items equal to 0 (kept out of ``values``)."""
        return self.n_x + self.n_y - self.n_values


# ----------------------------------------------------------------------------------------------
# Compiled pieces. Hot loops index with uint64: numba then emits no negative-index fix-up, which
# would otherwise keep LLVM from vectorising them.


@njit(cache=True)
def _popcount(x):
    x = x - ((x >> _U(1)) & _U(0x5555555555555555))
    x = (x & _U(0x3333333333333333)) + ((x >> _U(2)) & _U(0x3333333333333333))
    x = (x + (x >> _U(4))) & _U(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * _U(0x0101010101010101)) >> _U(56))


@njit(cache=True)
def _is_set(mask, j):
    return (mask[j >> 6] >> _U(j & 63)) & _U(1)


@njit(cache=True)
def _draw_subset(s, n, k, mask):
    """Set exactly k uniformly chosen bits among the first n of ``mask`` (others cleared)."""
    n_words = (n + 63) // 64
    tail = n % 64
    if _use_floyd(n, k):
        for w in range(n_words):
            mask[w] = _U(0)
        smaller = min(k, n - k)
        for j in range(n - smaller, n):
            r = _bounded(s, j + 1)
            if _is_set(mask, r):
                r = j
            mask[r >> 6] |= _U(1) << _U(r & 63)
        if smaller != k:
            for w in range(n_words):
                mask[w] = ~mask[w]
            if tail:
                mask[n_words - 1] &= (_U(1) << _U(tail)) - _U(1)
        return
    # _next inlined with the state in locals: calling it (state through the array) costs ~10% of
    # the whole kernel's throughput (measured with benchmarks/permutation.py).
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    count = 0
    for w in range(n_words):
        word = _rotl(s1 * _U(5), 7) * _U(9)
        t = s1 << _U(17)
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 45)
        if w == n_words - 1 and tail:
            word &= (_U(1) << _U(tail)) - _U(1)
        mask[w] = word
        count += _popcount(word)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    while count > k:
        r = _bounded(s, n)
        if _is_set(mask, r):
            mask[r >> 6] ^= _U(1) << _U(r & 63)
            count -= 1
    while count < k:
        r = _bounded(s, n)
        if not _is_set(mask, r):
            mask[r >> 6] |= _U(1) << _U(r & 63)
            count += 1


@njit(cache=True)
def _reduce_lanes(acc):
    """Sum of 64 lanes by a fixed pairwise tree."""
    lanes = acc.copy()
    width = 32
    while width >= 1:
        for lane in range(width):
            lanes[lane] += lanes[lane + width]
        width //= 2
    return lanes[0]


@njit(cache=True, nogil=True, boundscheck=False)
def _masked_sums(values, masks, count, out):
    """out[g, w] = Σ_j values[w, j]·bit_j(masks[g]) for g < count and each row w of ``values``;
    lane j mod 64, index order, fixed tree.

    The pool is walked in blocks of ``_BLOCK_WORDS`` words, converted to float64 once per block and
    reused by all ``count`` masks, so memory traffic per permutation falls with ``count``. Every row
    (weighting) is summed by the same loop, in the same order, as if it were alone: a row's sums do
    not depend on the other rows.

    Eight lanes at a time take their bits as one byte of the mask word and add by a merge-masked vector
    add, the 64 lanes held in registers over the block (:func:`biasdask.stats.simd.merge_add_block`),
    on AVX-512 and AVX2 alike, with the same values added in the same order as a loop that moves each bit
    to the sign of the word for a masked load (benchmarks/permutation.py compares them).
    """
    n_rows = values.shape[0]
    n_words = values.shape[1] // 64
    acc = np.zeros((count, n_rows, 64))
    bl = np.empty(_BLOCK_WORDS * 64)
    for wb in range(0, n_words, _BLOCK_WORDS):
        we = min(n_words, wb + _BLOCK_WORDS)
        base = _U(wb) * _U(64)
        for row in range(n_rows):  # one row's block at a time: it stays in L1 for all the masks
            for j in range((we - wb) * 64):
                bl[_U(j)] = np.float64(values[row, base + _U(j)])
            for g in range(count):
                merge_add_block(acc[g, row], bl, masks[g], _U(wb), _U(we))
    for g in range(count):
        for row in range(n_rows):
            out[g, row] = _reduce_lanes(acc[g, row])


@njit(cache=True, nogil=True)
def _null_sums(values, n, k_min, k_cdf, entropy, start, stop, group, out, out_k):
    """out[i - start, w] = Σ_{X_i} values[w] and out_k[i - start] = k for the permutations i in
    [start, stop): one split per permutation, shared by every row w of ``values``."""
    n_words = values.shape[1] // 64
    masks = np.zeros((group, max(n_words, 1)), dtype=np.uint64)
    pool = np.empty(_POOL_SIZE, dtype=np.uint64)
    state = np.empty(4, dtype=np.uint64)
    random_k = k_cdf.shape[0] > 1
    for g0 in range(start, stop, group):
        g1 = min(stop, g0 + group)
        for i in range(g0, g1):
            _seed_state(entropy, i, pool, state)
            k = k_min
            if random_k:
                u = np.float64(_next(state) >> _U(11)) * 2.0**-53
                k = k_min + np.searchsorted(k_cdf, u, side="right")
            out_k[i - start] = k
            _draw_subset(state, n, k, masks[i - g0])
        _masked_sums(values, masks, g1 - g0, out[g0 - start : g1 - start])


@njit(cache=True)
def _exact_sums(values, n, ks, group, out_sums, out_k):
    """out_sums[p, w] = Σ_{S} values[w] over every k-subset S of the n items, k in ``ks``;
    combinations in lexicographic order, grouped by k. ``out_k`` receives each subset's k."""
    n_words = values.shape[1] // 64
    masks = np.zeros((group, max(n_words, 1)), dtype=np.uint64)
    idx = np.empty(max(n, 1), dtype=np.int64)
    pos = 0
    filled = 0
    for k in ks:
        for j in range(k):
            idx[j] = j
        while True:
            row = masks[filled]
            row[:] = 0
            for j in range(k):
                row[idx[j] >> 6] |= _U(1) << _U(idx[j] & 63)
            out_k[pos + filled] = k
            filled += 1
            if filled == group:
                _masked_sums(values, masks, filled, out_sums[pos : pos + filled])
                pos += filled
                filled = 0
            j = k - 1
            while j >= 0 and idx[j] == n - k + j:
                j -= 1
            if j < 0:
                break
            idx[j] += 1
            for i in range(j + 1, k):
                idx[i] = idx[i - 1] + 1
    if filled:
        _masked_sums(values, masks, filled, out_sums[pos : pos + filled])


# ----------------------------------------------------------------------------------------------
# Python side.


def _seed_entropy(seed: int | None) -> tuple[int, np.ndarray]:
    """The seed actually used and its SeedSequence entropy words, padded as for a spawned child."""
    if seed is None:
        seed = secrets.randbits(32 * _POOL_SIZE)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    words = []
    rest = seed
    while True:
        words.append(rest & 0xFFFFFFFF)
        rest >>= 32
        if rest == 0:
            break
    words += [0] * (_POOL_SIZE - len(words))
    return seed, np.array(words, dtype=np.uint64)


def resolve_seed(seed: int | None) -> int:
    """``seed`` checked (a non-negative integer), or fresh entropy from the OS when it is None."""
    return _seed_entropy(seed)[0]


def _scores(values: ArrayLike, name: str) -> np.ndarray:
    """The scores as float64 (centred before any float32 copy is made)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of scores, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] is {arr[bad[0]]}: scores must be finite")
    return arr


def _is_count(y: object) -> TypeGuard[int | np.integer]:
    return isinstance(y, (int, np.integer)) and not isinstance(y, (bool, np.bool_))


def hypergeometric_cdf(population: int, successes: int, draws: int) -> tuple[int, np.ndarray]:
    """CDF table of Hypergeom(population, successes, draws) as (k_min, cdf).

    Weights are built from the mode outwards with the exact ratio
    p(k+1)/p(k) = (K - k)(n - k) / ((k + 1)(N - K - n + k + 1)) (N = population, K = successes,
    n = draws) and cut where they fall below 1e-30 of the mode's (far below the 2⁻⁵³ resolution of
    the uniform draw), then normalised; the last entry is exactly 1.
    """
    lo = max(0, draws - (population - successes))
    hi = min(successes, draws)
    if lo == hi:
        return lo, np.ones(1)
    mode = (draws + 1) * (successes + 1) // (population + 2)
    mode = min(max(mode, lo), hi)
    rest = population - successes - draws
    # Weights fall below the cut within ~12 SD of the mode; 60 SD (+60) bounds the work for huge pools.
    var = draws * successes / population * (population - successes) / population
    reach = int(60 * math.sqrt(var * (population - draws) / max(population - 1, 1))) + 60
    lo, hi = max(lo, mode - reach), min(hi, mode + reach)
    up_k = np.arange(mode, hi, dtype=np.float64)
    up = np.cumprod((successes - up_k) * (draws - up_k) / ((up_k + 1) * (rest + up_k + 1)))
    down_k = np.arange(mode - 1, lo - 1, -1, dtype=np.float64)
    down = np.cumprod((down_k + 1) * (rest + down_k + 1) / ((successes - down_k) * (draws - down_k)))
    cut = 1e-30
    up = up[: np.searchsorted(-up, -cut, side="right")]
    down = down[: np.searchsorted(-down, -cut, side="right")]
    weights = np.concatenate([down[::-1], [1.0], up])
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    cdf[-1] = 1.0
    return mode - down.size, cdf


def _resolve_alternative(alternative: str, statistic: float) -> str:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}; got {alternative!r}")
    if alternative != "auto":
        return alternative
    if statistic > 0:
        return "greater"
    if statistic < 0:
        return "less"
    return "two-sided"


def prepare_test(
    x: ArrayLike,
    y: ArrayLike | int,
    n_permutations: int = 9999,
    alternative: str = "two-sided",
    seed: int | None = None,
    effect_x: ArrayLike | int | None = None,
    effect_y: ArrayLike | int | None = None,
) -> PreparedTest | PreparedTests:
    """Validate the inputs and compute everything except the null distribution, for one test or for
    the tests of several weightings that share every split.

    Parameters
    ----------
    x
        Scores of X: shape (|X|,) for one test, or (k, |X|) for k weightings (one row each).
    y
        Scores of Y, shape (|Y|,) or (k, |Y|), or an ``int`` n of dummy zero items (shared by all rows).
    n_permutations, alternative, seed
        As in :func:`permutation_test_local`; one seed for all rows (``None`` draws one).
    effect_x, effect_y
        Unweighted scores u of X and Y for the effect sizes, shared by all rows (default: each row's
        own scores).

    Returns
    -------
    PreparedTest or PreparedTests
        For rows: row w's test is exactly the one-row test of row w with the same seed, and its null
        (:func:`null_batch`, :func:`exact_null`) is bit-identical to that test's.

    Raises
    ------
    ValueError
        Empty groups, non-finite scores, a bad ``alternative``, ``seed`` or ``n_permutations``; rows
        whose zero items differ (group them with :func:`shared_split_groups`).
    """
    if np.ndim(x) > 2:
        raise ValueError(f"x must be 1-D (one test) or 2-D (one row per weighting), got shape {np.shape(x)}")
    if np.ndim(x) == 2:
        return _prepare_rows(x, y, n_permutations, alternative, seed, effect_x, effect_y)
    return _prepare_row(x, y, n_permutations, alternative, seed, effect_x, effect_y)


def _prepare_row(
    x: ArrayLike,
    y: ArrayLike | int,
    n_permutations: int,
    alternative: str,
    seed: int | None,
    effect_x: ArrayLike | int | None,
    effect_y: ArrayLike | int | None,
) -> PreparedTest:
    xs = _scores(x, "x")
    if _is_count(y):
        if y < 1:
            raise ValueError(f"y as a count of dummy zero items must be >= 1, got {y}")
        ys = np.empty(0, dtype=np.float64)
        n_y = int(y)
    else:
        ys = _scores(y, "y")
        n_y = ys.size
    n_x = xs.size
    if n_x == 0 or n_y == 0:
        raise ValueError(f"both groups need at least one item (|x| = {n_x}, |y| = {n_y})")
    if isinstance(n_permutations, (bool, np.bool_)) or not isinstance(n_permutations, (int, np.integer)):
        raise ValueError(f"n_permutations must be an integer, got {n_permutations!r}")
    if not 1 <= n_permutations <= MAX_PERMUTATIONS:
        raise ValueError(f"n_permutations must be between 1 and {MAX_PERMUTATIONS:,}, got {n_permutations}")
    used_seed, entropy = _seed_entropy(seed)

    x_nz = xs[xs != 0]
    pool = np.concatenate([x_nz, ys[ys != 0]])
    n_values = pool.size
    if n_values > 2**32:
        raise ValueError(f"at most 2**32 nonzero scores can be pooled, got {n_values}")
    # Scores that float32 holds exactly (the engine's stored t) lose nothing in storage: no centre,
    # and sums of their float32 copies stay exact. Others are centred first.
    lossless = bool(np.array_equal(pool.astype(np.float32), pool))
    centre = 0.0 if lossless or not n_values else float(pool.mean())
    residuals = (pool - centre).astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(residuals))
    if bad.size:
        raise ValueError(f"pooled score {pool[bad[0]]} minus the pool mean {centre} does not fit in float32")
    values = np.zeros(-(-n_values // 64) * 64, dtype=np.float32)
    values[:n_values] = residuals
    masks = np.zeros((2, max(values.size // 64, 1)), dtype=np.uint64)
    _fill_prefix(masks[0], x_nz.size)
    _fill_prefix(masks[1], n_values)
    small = _numpy_kernels(n_values, 2, _masked_sums)
    if small is not None:
        sums = small.masked_sums(values, small.bits_of(masks, values.size))[:, None]
    else:
        sums = np.empty((2, 1))
        _masked_sums(values[None, :], masks, 2, sums)
    total = float(sums[1, 0])
    statistic = float(_statistics(sums[:1, 0], np.array([x_nz.size]), total, n_values, centre)[0])

    k_min, k_cdf = hypergeometric_cdf(n_x + n_y, n_values, n_x)
    null_mean, null_std = null_moments(pool, n_x + n_y - n_values, n_x, n_y)
    tolerance = _TIE_SCALE * float(np.abs(residuals, dtype=np.float64).sum())
    tolerance += _CENTRE_TIE_SCALE * n_values * abs(centre)
    # The effect size uses the scores as given (not their float32 copies).
    u_x = np.asarray(x, dtype=np.float64) if effect_x is None else effect_x
    u_y = (n_y if _is_count(y) else np.asarray(y, dtype=np.float64)) if effect_y is None else effect_y
    for name, u, n in (("effect_x", u_x, n_x), ("effect_y", u_y, n_y)):
        if not _is_count(u) and np.size(u) != n:
            raise ValueError(f"{name} has {np.size(u)} values but its group has {n} items")
    return PreparedTest(
        values=values,
        n_values=n_values,
        n_x=n_x,
        n_y=n_y,
        k_min=k_min,
        k_cdf=k_cdf,
        total=total,
        statistic=statistic,
        tolerance=tolerance,
        null_mean=null_mean,
        null_std=null_std,
        effect_size=effect_size(u_x, u_y),
        alternative=_resolve_alternative(alternative, statistic),
        seed=used_seed,
        entropy=entropy,
        n_permutations=int(n_permutations),
        exact=_n_splits_at_most(n_x, n_y, min(int(n_permutations), MAX_EXACT_SPLITS)),
        centre=centre,
    )


def _numpy_kernels(n_values: int, n_sums: int, kernel):
    """:mod:`biasdask.stats.permutation_numpy` for a small job while ``kernel`` is not loaded, else None.

    Small tests then skip numba's start-up, paid once per process; the sums are bit-identical.
    """
    return permutation_numpy if permutation_numpy.use_numpy(n_values, n_sums, kernel) else None


def _statistics(sums: np.ndarray, ks: np.ndarray, total: float, n_values: int, centre: float) -> np.ndarray:
    """s_i = (2 Σ_{X_i} r - Σ r) + (2 k_i - n)·c from the kernel's residual sums (float64)."""
    return (2.0 * sums - total) + (2 * np.asarray(ks, dtype=np.int64) - n_values).astype(np.float64) * centre


def _n_splits_at_most(n_x: int, n_y: int, limit: int) -> bool:
    """Whether C(n_x + n_y, n_x) <= limit, without building the (possibly huge) binomial."""
    count = 1
    for j in range(1, min(n_x, n_y) + 1):
        count = count * (max(n_x, n_y) + j) // j
        if count > limit:
            return False
    return True


def _fill_prefix(mask: np.ndarray, count: int) -> None:
    full, rest = divmod(count, 64)
    mask[:full] = np.uint64(0xFFFFFFFFFFFFFFFF)
    if rest:
        mask[full] = np.uint64((1 << rest) - 1)


def null_batch(prep: PreparedTest | PreparedTests, start: int, stop: int, group: int = _GROUP) -> np.ndarray:
    """Statistics s_i (float64) of the sampled permutations i in [start, stop): shape (stop - start,)
    for one test, (k, stop - start) for the k rows of a :class:`PreparedTests`.

    Each permutation depends only on (seed, i): any partition of the indices into batches, and any
    ``group`` (permutations sharing a pass over the pool), gives bit-identical values. One split per
    permutation evaluates every row in one pass over the pool; row w equals the one-row test's null
    bit for bit.
    """
    values, tests = _rows_of(prep)
    sums, ks = _sampled_sums(values, tests[0], start, stop, group)
    out = np.stack([_statistics(sums[:, w], ks, t.total, t.n_values, t.centre) for w, t in enumerate(tests)])
    return out[0] if isinstance(prep, PreparedTest) else out


def _rows_of(prep: PreparedTest | PreparedTests) -> tuple[np.ndarray, tuple[PreparedTest, ...]]:
    """The pooled values, one row per test, and the tests."""
    if isinstance(prep, PreparedTest):
        return prep.values[None, :], (prep,)
    return prep.values, prep.tests


def _sampled_sums(
    values: np.ndarray, prep: PreparedTest, start: int, stop: int, group: int
) -> tuple[np.ndarray, np.ndarray]:
    small = _numpy_kernels(prep.n_values, stop - start, _null_sums) if values.shape[0] == 1 and stop <= 2**32 else None
    if small is not None:
        sums, ks = small.null_sums(values[0], prep.n_values, prep.k_min, prep.k_cdf, prep.entropy, start, stop)
        return sums[:, None], ks
    sums = np.empty((stop - start, values.shape[0]))
    ks = np.empty(stop - start, dtype=np.int64)
    _null_sums(values, prep.n_values, prep.k_min, prep.k_cdf, prep.entropy, start, stop, group, sums, ks)
    return sums, ks


def exact_null(prep: PreparedTest | PreparedTests) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct split: (s of each subset of nonzero items placed in X_i, its multiplicity); the
    statistics have shape (splits,) for one test, (k, splits) for the k rows of a :class:`PreparedTests`.

    The multiplicity of a subset of k nonzero items is C(n_zero, |X| - k), the number of ways to place
    the zeros; the multiplicities sum to C(|X| + |Y|, |X|).
    """
    values, tests = _rows_of(prep)
    sums, sub_k, weights = _exact_sums_of(values, tests[0])
    nulls = np.stack([_statistics(sums[:, w], sub_k, t.total, t.n_values, t.centre) for w, t in enumerate(tests)])
    return (nulls[0] if isinstance(prep, PreparedTest) else nulls), weights


def _exact_sums_of(values: np.ndarray, prep: PreparedTest) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo = max(0, prep.n_x - prep.n_zero)
    ks = np.arange(lo, min(prep.n_values, prep.n_x) + 1, dtype=np.int64)
    per_k = np.array([math.comb(prep.n_values, int(k)) for k in ks], dtype=np.int64)
    count = int(per_k.sum())
    small = _numpy_kernels(prep.n_values, count, _exact_sums) if values.shape[0] == 1 else None
    if small is not None:
        sums, sub_k = small.exact_sums(values[0], prep.n_values, ks)
        sums = sums[:, None]
    else:
        sums = np.empty((count, values.shape[0]))
        sub_k = np.empty(count, dtype=np.int64)
        _exact_sums(values, prep.n_values, ks, _GROUP, sums, sub_k)
    weights = np.array([math.comb(prep.n_zero, prep.n_x - int(k)) for k in ks], dtype=np.int64)
    return sums, sub_k, weights[sub_k - lo]


# ----------------------------------------------------------------------------------------------
# Several weightings on one split.


@dataclass(frozen=True)
class PreparedTests:
    """Tests of several weightings t_w = z_w·u of the same items that share every split.

    Built by :func:`prepare_test` of rows. The rows share the seed and the items that are zero, hence the
    pool's size, the distribution of k and, for permutation i, the split itself; one pass of the kernel
    over ``values`` evaluates every row on it (:func:`null_batch`, :func:`exact_null`).

    Attributes
    ----------
    values : ndarray of float32, shape (k, n_padded)
        Row w is ``tests[w].values`` (the pooled residuals of weighting w).
    tests : tuple of PreparedTest
        One per row, as :func:`prepare_test` builds it for that row alone, but with an empty
        ``values`` (the data lives once, in ``values`` above).
    """

    values: np.ndarray
    tests: tuple[PreparedTest, ...]

    @property
    def exact(self) -> bool:
        """Whether the tests enumerate every split (the same for all rows)."""
        return self.tests[0].exact

    @property
    def n_values(self) -> int:
        """Nonzero pooled items (the same for all rows)."""
        return self.tests[0].n_values

    @property
    def n_permutations(self) -> int:
        """Permutations asked for."""
        return self.tests[0].n_permutations


def _rows(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must be a 2-D array with one row of scores per weighting, got shape {arr.shape}")
    return arr


def shared_split_groups(x: ArrayLike, y: ArrayLike | int) -> list[list[int]]:
    """Rows of ``x`` (and ``y``) grouped by the items that are zero, in order of first row.

    Rows of one group have the same nonzero items, so :func:`prepare_test` can evaluate them on the
    same splits with results bit-identical to one test per row. A weighting that is zero where another
    is not (``frequency`` gives words without an observed frequency weight 0) has another pool and
    needs its own pass.
    """
    xs = _rows(x, "x")
    ys = None if _is_count(y) else _rows(y, "y")
    groups: dict[bytes, list[int]] = {}
    for w in range(xs.shape[0]):
        key = np.packbits(xs[w] != 0).tobytes()
        if ys is not None:
            key += b"/" + np.packbits(ys[w] != 0).tobytes()
        groups.setdefault(key, []).append(w)
    return list(groups.values())


def _prepare_rows(
    x: ArrayLike,
    y: ArrayLike | int,
    n_permutations: int,
    alternative: str,
    seed: int | None,
    effect_x: ArrayLike | int | None,
    effect_y: ArrayLike | int | None,
) -> PreparedTests:
    xs = _rows(x, "x")
    ys: Any = y if _is_count(y) else _rows(y, "y")  # a count of dummy zeros, or a (weightings × items) array
    if not _is_count(ys) and ys.shape[0] != xs.shape[0]:
        raise ValueError(f"x has {xs.shape[0]} rows (weightings) but y has {ys.shape[0]}")
    if len(shared_split_groups(xs, ys)) > 1:
        raise ValueError("the rows of x (or y) are zero at different items, so they cannot share splits")
    seed, _ = _seed_entropy(seed)
    tests = [
        _prepare_row(xs[w], ys if _is_count(ys) else ys[w], n_permutations, alternative, seed, effect_x, effect_y)
        for w in range(xs.shape[0])
    ]
    values = np.stack([t.values for t in tests])
    empty = np.empty(0, dtype=np.float32)
    return PreparedTests(values=values, tests=tuple(replace(t, values=empty) for t in tests))


def permutation_pvalue(
    null: np.ndarray,
    statistic: float,
    alternative: str,
    null_mean: float,
    tolerance: float,
    weights: np.ndarray | None = None,
) -> float:
    """p-value of ``statistic`` against a null sample (``weights=None``) or a full enumeration.

    Sampled: (1 + #{s_i at least as extreme})/(m + 1) (Phipson & Smyth 2010). Enumerated:
    Σ weights of splits at least as extreme / Σ weights (the observed split is among them).
    ``alternative`` is ``"greater"``, ``"less"`` or ``"two-sided"`` (|s_i - E| vs |s - E|, E =
    ``null_mean``); ties within ``tolerance`` count as at least as extreme.

    An undefined statistic (NaN: e.g. ECT on one word, NAS of a word with no spread), or for
    ``"two-sided"`` an undefined null mean, gives NaN: undefined is not significant (no split is
    "at least as extreme" as NaN, which would otherwise give the smallest p).
    """
    null = np.asarray(null, dtype=np.float64)
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be greater, less or two-sided; got {alternative!r}")
    if math.isnan(statistic) or (alternative == "two-sided" and math.isnan(null_mean)):
        return math.nan
    if alternative == "greater":
        hit = null >= statistic - tolerance
    elif alternative == "less":
        hit = null <= statistic + tolerance
    else:
        hit = np.abs(null - null_mean) >= abs(statistic - null_mean) - tolerance
    if weights is None:
        return (1.0 + int(np.count_nonzero(hit))) / (null.size + 1.0)
    return int(weights[hit].sum()) / int(weights.sum())


def normal_pvalue(statistic: float, mean: float, sd: float, alternative: str) -> tuple[float, float]:
    """z = (s - mean)/sd and its tail probability for ``alternative`` (two-sided: 2 × smaller tail).

    NaN for both when ``sd`` is 0 (every split gives the same s) or when s or the mean is NaN.
    """
    if not sd > 0.0 or math.isnan(statistic) or math.isnan(mean):
        return math.nan, math.nan
    z = (statistic - mean) / sd
    if alternative == "greater":
        return z, float(ndtr(-z))
    if alternative == "less":
        return z, float(ndtr(z))
    return z, min(1.0, 2.0 * float(ndtr(-abs(z))))


def finish_test(
    prep: PreparedTest,
    null: np.ndarray,
    weights: np.ndarray | None = None,
    return_null: bool = False,
) -> PermutationTestResult:
    """Assemble the result from the prepared test and its null (sampled, or exact with ``weights``)."""
    pvalue = permutation_pvalue(null, prep.statistic, prep.alternative, prep.null_mean, prep.tolerance, weights)
    z, p_normal = normal_pvalue(prep.statistic, prep.null_mean, prep.null_std, prep.alternative)
    exact = weights is not None
    if return_null:
        distribution = np.repeat(null, weights) if weights is not None else np.asarray(null, dtype=np.float64)
    else:
        distribution = None
    return PermutationTestResult(
        statistic=prep.statistic,
        p_value=pvalue,
        effect_size=prep.effect_size,
        z_score=z,
        p_value_normal=p_normal,
        null_mean=prep.null_mean,
        null_std=prep.null_std,
        n_permutations=int(weights.sum()) if weights is not None else int(np.asarray(null).size),
        exact=exact,
        alternative=prep.alternative,
        n_x=prep.n_x,
        n_y=prep.n_y,
        seed=prep.seed,
        null_distribution=distribution,
    )


def permutation_test_local(
    x: ArrayLike,
    y: ArrayLike | int,
    n_permutations: int = 9999,
    alternative: str = "two-sided",
    seed: int | None = None,
    return_null: bool = False,
    effect_x: ArrayLike | int | None = None,
    effect_y: ArrayLike | int | None = None,
) -> PermutationTestResult:
    """Permutation test of s = Σx - Σy computed in this process (no Dask).

    Same results, bit for bit, as :func:`biasdask.engine.permutation.permutation_test` with the same
    seed.

    Parameters
    ----------
    x
        Scores t of X (1-D; centred in float64, then stored as float32).
    y
        Scores of Y, or an ``int`` n for n dummy items scoring 0.
    n_permutations
        Permutations to sample; if C(|X|+|Y|, |X|) is not larger (and at most
        :data:`MAX_EXACT_SPLITS`), every split is enumerated instead.
    alternative
        ``"two-sided"`` (default), ``"greater"``, ``"less"``, or ``"auto"`` (the full-vocabulary test's original rule: the
        tail that s points to, chosen after seeing s; its type-I rate is about 2α).
    seed
        SeedSequence entropy (non-negative int); ``None`` draws one and reports it in the result.
    return_null
        Keep the null distribution in the result.
    effect_x, effect_y
        Unweighted scores u for the effect size when x, y are weighted (default: x and y).

    Returns
    -------
    PermutationTestResult
    """
    prep = _prepare_row(x, y, n_permutations, alternative, seed, effect_x, effect_y)
    if prep.exact:
        null, weights = exact_null(prep)
        return finish_test(prep, null, weights, return_null)
    return finish_test(prep, null_batch(prep, 0, prep.n_permutations), None, return_null)


def permutation_tests_local(
    x: ArrayLike,
    y: ArrayLike | int,
    n_permutations: int = 9999,
    alternative: str = "two-sided",
    seed: int | None = None,
    return_null: bool = False,
    effect_x: ArrayLike | int | None = None,
    effect_y: ArrayLike | int | None = None,
) -> list[PermutationTestResult]:
    """Permutation tests of several weightings (rows of ``x``) on common splits, in this process.

    Result w is bit-identical to :func:`permutation_test_local` of row w with the same ``seed``: rows
    with the same zero items (:func:`shared_split_groups`) share each split, evaluated in one pass
    over the pool; a row zero elsewhere gets its own pass with the same seed. Parameters as in
    :func:`prepare_test` and :func:`permutation_test_local`.

    Returns
    -------
    list of PermutationTestResult
        One per row of ``x``, in order.
    """
    xs = _rows(x, "x")
    seed = resolve_seed(seed)
    results: list[PermutationTestResult | None] = [None] * xs.shape[0]
    for rows in shared_split_groups(xs, y):
        ys = y if _is_count(y) else _rows(y, "y")[rows]
        prep = _prepare_rows(xs[rows], ys, n_permutations, alternative, seed, effect_x, effect_y)
        if prep.exact:
            nulls, weights = exact_null(prep)
        else:
            nulls, weights = null_batch(prep, 0, prep.n_permutations), None
        for w, row in enumerate(rows):
            results[row] = finish_test(prep.tests[w], nulls[w], weights, return_null)
    return cast(list[PermutationTestResult], results)  # every row is in one group
