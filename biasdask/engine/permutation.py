"""Permutation tests whose batches are ordinary Dask tasks.

:func:`permutation_test` validates the inputs and computes s, the effect size and the closed-form
null moments in this process (:func:`biasdask.stats.permutation.prepare_test`). When the number of
distinct splits is at most ``n_permutations`` it enumerates them all here (cheap by construction).
A test whose estimated work is below ``biasdask.in-process-threshold`` (``dask.config``) samples its
permutations here too. Otherwise the permutation indices 0..m-1 are cut into batches [start, stop),
each batch one ``dask.delayed`` task computing its statistics with the compiled kernel
(:func:`biasdask.stats.permutation.null_batch`, which releases the GIL), all computed with
``dask.compute`` on the active scheduler: the ``client`` given, else the current ``distributed``
client, else Dask's default (threads). The p-value is computed from the whole null in index order.
Permutation i depends only on (seed, i), so the result is bit-identical whatever the scheduler, the
number of workers, the batch size, or tasks re-run after a worker is lost.

:func:`permutation_test` of a 2-D ``x`` does the same for several weightings of the same items on
common splits (one pass of the kernel per split evaluates them all). Its pieces (:func:`prepare_pools`,
:func:`batch_plan`, :func:`pools_batch`, :func:`finish_pools`) are plain functions, which a study run
(:mod:`biasdask.study.run`) submits as the tasks of its stream.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass

import dask
import numpy as np
from distributed import Client
from numpy.typing import ArrayLike

from biasdask._calls import keyword_api
from biasdask._dask_config import seconds
from biasdask.engine.cluster import active_client, compute, n_slots
from biasdask.stats.permutation import (
    PermutationTestResult,
    PreparedTests,
    exact_null,
    finish_test,
    null_batch,
    prepare_test,
    resolve_seed,
    shared_split_groups,
)
from biasdask.stats.resampling import Alternative, Resampling
from biasdask.stats.resampling import resampling as resampling_options

__all__ = ["KernelRate", "batch_plan", "default_batch_size", "kernel_rate", "measured_rate", "permutation_test"]


@dataclass(frozen=True)
class KernelRate:
    """What one permutation of a pool costs the compiled kernel on one core: a fixed part (seeding, the
    subset draw) plus a pass over the pool, per pooled value of each weighting evaluated on the split.

    Attributes
    ----------
    per_permutation
        Seconds per permutation whatever the pool.
    per_value
        Seconds per pooled value and weighting.
    """

    per_permutation: float
    per_value: float

    def seconds(self, n_values: int) -> float:
        """Seconds of one permutation of ``n_values`` pooled values (summed over the weightings)."""
        return self.per_permutation + self.per_value * n_values


#: a slow core's rate (benchmarks/permutation.py: 0.14 ns per pooled value on a free core, 0.27 ns on a
#: loaded one): what plans use before a rate is measured, and the in-process threshold's estimate
CONSERVATIVE_RATE = KernelRate(per_permutation=2e-6, per_value=3e-10)
#: the pools :func:`measured_rate` times: items per weighting of the large one, and of the small one
_RATE_ITEMS, _RATE_SMALL_ITEMS = 2**19, 256


@functools.cache
def measured_rate() -> KernelRate:
    """This process's :class:`KernelRate`, measured once (about 30 ms): batches of the kernel on pools of
    two weightings, as a study's families have, of 256 and 524,288 items against a dummy language, the
    best of three of each. Worker processes measure it as they join (:class:`~biasdask.engine.cluster.WarmKernels`).
    """
    rng = np.random.default_rng(0)

    def best(n_items: int, n_permutations: int) -> float:
        u = rng.normal(0.0, 0.05, n_items).astype(np.float32)
        pools = prepare_pools(np.stack([u, u * np.float32(0.5)]), n_items, 1_000_000, "two-sided", 0, effect_x=u)
        pools_batch(pools, 0, 1)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            pools_batch(pools, 0, n_permutations)
            times.append((time.perf_counter() - start) / n_permutations)
        return min(times)

    small, large = best(_RATE_SMALL_ITEMS, 400), best(_RATE_ITEMS, 16)
    per_value = max(0.0, (large - small) / (2 * (_RATE_ITEMS - _RATE_SMALL_ITEMS)))
    return KernelRate(per_permutation=max(small - 2 * _RATE_SMALL_ITEMS * per_value, 0.0), per_value=per_value)


def kernel_rate(client: Client | None = None) -> KernelRate:
    """The kernel rate of the workers that run the batches: the median over ``client``'s workers of
    :func:`measured_rate` (measured as each joined, or now), or this process's without a distributed
    client (Dask's threads run here)."""
    c = active_client(client)
    if c is None:
        return measured_rate()
    rates = list(c.run(measured_rate).values())
    if not rates:
        return CONSERVATIVE_RATE
    return KernelRate(
        per_permutation=statistics.median(r.per_permutation for r in rates),
        per_value=statistics.median(r.per_value for r in rates),
    )


def default_batch_size(n_values: int, n_permutations: int, n_slots: int, rate: KernelRate | None = None) -> int:
    """Permutations per task: about ``biasdask.batch-duration`` of work, and at least two batches per slot
    unless that would leave a batch less than ``biasdask.min-batch-duration`` of work.

    Parameters
    ----------
    n_values
        Nonzero pooled values (the length of each pass).
    n_permutations
        Permutations to sample.
    n_slots
        Worker threads available.
    rate
        The workers' :class:`KernelRate` (:func:`kernel_rate`); default :data:`CONSERVATIVE_RATE`.

    Examples
    --------
    Two weightings of 2,000,000 words at 0.15 ns per value and 2 µs per permutation (0.6 ms a
    permutation), 10,000 permutations: on 2 threads batches of 1 s; on 256 threads batches of 50 ms, not
    the 20 permutations (12 ms) an even spread would give.

    >>> rate = KernelRate(per_permutation=2e-6, per_value=1.5e-10)
    >>> default_batch_size(4_000_000, 10_000, 2, rate), default_batch_size(4_000_000, 10_000, 256, rate)
    (1661, 83)
    """
    per_permutation = (rate or CONSERVATIVE_RATE).seconds(n_values)
    by_time = max(1, int(seconds("batch-duration") / per_permutation))
    by_floor = max(1, int(seconds("min-batch-duration") / per_permutation))
    by_spread = max(-(-n_permutations // (2 * max(1, n_slots))), by_floor)
    return max(1, min(by_time, by_spread, n_permutations))


@keyword_api("permutation_test(x, y, resampling=Resampling(...))")
def permutation_test(
    x: ArrayLike,
    y: ArrayLike | int,
    *,
    resampling: Resampling | None = None,
    client: Client | None = None,
    return_null: bool = False,
    effect_x: ArrayLike | int | None = None,
    effect_y: ArrayLike | int | None = None,
    progress: bool | None = None,
) -> PermutationTestResult | list[PermutationTestResult]:
    """Permutation test of s = Σx - Σy with batches of permutations as Dask tasks.

    Parameters
    ----------
    x
        Scores t of X, 1-D (kept as float32, the precision of stored scores); or 2-D, one row per
        weighting of the same items, all tested on common splits (one pass of the kernel per split
        evaluates every row; rows zero at different items get their own pass). Row w's result is bit
        for bit the 1-D test of ``x[w]`` with the same seed.
    y
        Scores of Y (with as many rows as ``x``), or an ``int`` n meaning n dummy items scoring 0 (the
        dummy language of the full-vocabulary test).
    resampling
        :class:`~biasdask.Resampling`: ``n_permutations`` splits sampled uniformly without replacement
        (every split enumerated when ``C(|X|+|Y|, |X|)`` is at most that, ``exact=True``), the
        ``alternative`` (``"two-sided"``: ``|s_i - E s_i|`` against ``|s - E s_i|``; ``"auto"`` is the
        full-vocabulary test's rule, whose type-I rate is about 2α), the ``seed`` (permutation i draws
        from ``SeedSequence(seed, spawn_key=(i,))``) and ``batch_size`` (permutations per task; default
        about ``biasdask.batch-duration`` of work and at least two tasks per worker thread; without it a
        test of less than ``biasdask.in-process-threshold`` of estimated work runs in this thread).
        Default ``Resampling()``.
    client
        Dask client to run on; default the current ``distributed`` client, else Dask's default
        scheduler (threads). No cluster is started here.
    return_null
        Keep the null distribution (float64) in the result.
    effect_x, effect_y
        Unweighted scores u for the effect size when x, y are weighted scores t (default x and y;
        an ``int`` means that many zeros; shared by every row).
    progress
        Show a progress bar of finished batches (default: only when stderr is a terminal).

    Returns
    -------
    PermutationTestResult
        ``statistic``, ``pvalue``, ``effect_size`` (ddof = 1), ``z_score``, ``p_value_normal``,
        ``null_mean``, ``null_std``, ``n_permutations``, ``exact``, ``alternative`` (resolved),
        ``n_x``, ``n_y``, ``seed``, ``null_distribution``; a list of them, one per row, for a 2-D ``x``.

    Raises
    ------
    ValueError
        Empty groups, non-finite scores, or more permutations than biasdask allows.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.normal(1.0, 1, 30), rng.normal(0.0, 1, 30)
    >>> res = biasdask.permutation_test(x, y, resampling=biasdask.Resampling(n_permutations=9999, seed=1))
    >>> round(res.statistic, 2), round(res.pvalue, 2), round(res.effect_size, 2)
    (18.07, 0.01, 0.65)

    (``scipy.stats.permutation_test`` of the same difference of sums, with 9,999 splits of its own, gives
    0.0116.)

    Against a dummy language of zeros (an integer ``y`` is its size):

    >>> res = biasdask.permutation_test(x, 30, resampling=biasdask.Resampling(n_permutations=999, alternative="greater", seed=1))
    >>> bool(res.pvalue < 0.01)
    True
    """
    options = resampling_options(resampling)
    xs = np.asarray(x)
    one = xs.ndim == 1
    ys = y if isinstance(y, (int, np.integer)) else np.asarray(y)
    if one:
        xs = xs[None]
        ys = ys if isinstance(ys, (int, np.integer)) else ys[None]
    pools = prepare_pools(xs, ys, options.n_permutations, options.alternative, options.seed, effect_x, effect_y)
    work, _, m, exact = pools_summary(pools)
    if exact:
        results = finish_pools(pools, return_null=return_null)
    elif options.batch_size is None and m * CONSERVATIVE_RATE.seconds(work) < seconds("in-process-threshold"):
        results = finish_pools(pools, pools_batch(pools, 0, m), return_null=return_null)
    else:
        # One key for the prepared pools, shared by every batch (sent once to each worker that needs
        # it); pure=True names it by content, so a re-run reuses nothing but identical data.
        shared = dask.delayed(pools, pure=True, traverse=False)
        batch = dask.delayed(pools_batch, pure=True)
        rate = None if options.batch_size else kernel_rate(client)
        parts = [batch(shared, a, b) for a, b in batch_plan(work, m, options.batch_size, n_slots(client), rate)]
        nulls = compute(*parts, client=client, progress=progress, desc="permutations")
        results = finish_pools(pools, *nulls, return_null=return_null)
    return results[0] if one else results


# ----------------------------------------------------------------------------------------------
# Several weightings of one set of items on common splits: the pieces of a study's task stream
# (biasdask.study.run), each a plain function that a Dask task (or a thread) runs.


def prepare_pools(
    x: np.ndarray,
    y: np.ndarray | int,
    n_permutations: int,
    alternative: Alternative,
    seed: int | None,
    effect_x: np.ndarray | int | None = None,
    effect_y: np.ndarray | int | None = None,
) -> list[tuple[list[int], PreparedTests]]:
    """The rows of ``x`` (weightings) grouped by shared splits, each group prepared
    (:func:`biasdask.stats.permutation.prepare_test` of rows) with the same seed: usually one group; a
    weighting zero where the others are not (``frequency``) gets its own."""
    seed = resolve_seed(seed)
    return [
        (
            rows,
            prepare_test(
                x[rows],
                y if isinstance(y, (int, np.integer)) else y[rows],
                n_permutations,
                alternative,
                seed,
                effect_x,
                effect_y,
            ),
        )
        for rows in shared_split_groups(x, y)
    ]


def pools_summary(pools: list[tuple[list[int], PreparedTests]]) -> tuple[int, int, int, bool]:
    """(pooled values summed over the groups' rows, rows, permutations, exact): what a batch plan needs."""
    work = sum(p.n_values * len(rows) for rows, p in pools)
    rows = sum(len(r) for r, _ in pools)
    return work, rows, pools[0][1].n_permutations, pools[0][1].exact


def batch_plan(
    n_values: int,
    n_permutations: int,
    batch_size: int | None = None,
    n_slots: int = 1,
    rate: KernelRate | None = None,
) -> list[tuple[int, int]]:
    """Permutation index ranges [start, stop) of the batch tasks of one test (or one group of tests).

    ``n_values`` counts the pooled values of every weighting evaluated on each split (the length of
    one pass). Without ``batch_size``: :func:`default_batch_size` at ``rate``, i.e. about
    ``biasdask.batch-duration`` of work per task and at least two tasks per slot of ``n_slots``, none
    under ``biasdask.min-batch-duration``.
    """
    size = batch_size or default_batch_size(n_values, n_permutations, n_slots, rate)
    return [(start, min(n_permutations, start + size)) for start in range(0, n_permutations, size)]


def pools_batch(pools: list[tuple[list[int], PreparedTests]], start: int, stop: int) -> np.ndarray:
    """Null statistics of permutations [start, stop) of every row, shape (rows, stop - start), rows in
    the order of ``x`` given to :func:`prepare_pools` (NaN in the rows of an exact group)."""
    n_rows = sum(len(r) for r, _ in pools)
    out = np.empty((n_rows, stop - start))
    for rows, prep in pools:  # an exact group's splits are all enumerated by finish_pools instead
        out[rows] = np.nan if prep.exact else null_batch(prep, start, stop)
    return out


def finish_pools(
    pools: list[tuple[list[int], PreparedTests]], *batches: np.ndarray, return_null: bool = False
) -> list[PermutationTestResult]:
    """One result per row from the batches in permutation order (exact groups ignore them: every split
    is enumerated here).

    Raises
    ------
    ValueError
        When the batches of a sampled group do not hold exactly its permutations.
    """
    n_rows = sum(len(r) for r, _ in pools)
    results: list[PermutationTestResult | None] = [None] * n_rows
    nulls = np.concatenate(batches, axis=1) if batches else None
    for rows, prep in pools:
        if not prep.exact and (nulls is None or nulls.shape[1] != prep.n_permutations):
            raise ValueError(
                f"batches hold {0 if nulls is None else nulls.shape[1]} permutations, not {prep.n_permutations}"
            )
        weights = None
        if prep.exact:
            group_nulls, weights = exact_null(prep)
        for w, row in enumerate(rows):
            null = group_nulls[w] if prep.exact else nulls[row]
            results[row] = finish_test(prep.tests[w], null, weights, return_null)
    return results
