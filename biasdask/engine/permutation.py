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

:func:`permutation_tests` does the same for several weightings of the same items on common splits
(one pass of the kernel per split evaluates them all), with the plain functions of
:mod:`biasdask.engine.pools`. :func:`kernel_rate` is the workers' rate that sizes the batches.
"""

from __future__ import annotations

import statistics

import dask
import numpy as np
from distributed import Client
from numpy.typing import ArrayLike

from biasdask._calls import deprecated, keyword_api
from biasdask._dask_config import seconds
from biasdask.engine.cluster import active_client, compute, n_slots
from biasdask.engine.pools import (
    CONSERVATIVE_RATE,
    KernelRate,
    batch_plan,
    finish_pools,
    measured_rate,
    pools_batch,
    pools_summary,
    prepare_pools,
)
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options

__all__ = ["kernel_rate", "permutation_test", "permutation_tests"]


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
) -> PermutationTestResult:
    """Permutation test of s = Σx - Σy with batches of permutations as Dask tasks.

    Parameters
    ----------
    x
        Scores t of X, 1-D (kept as float32, the precision of stored scores). Several weightings of
        the same items, tested on common splits: :func:`permutation_tests`.
    y
        Scores of Y, or an ``int`` n meaning n dummy items scoring 0 (the dummy language of the
        full-vocabulary test).
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
        an ``int`` means that many zeros).
    progress
        Show a progress bar of finished batches (default: only when stderr is a terminal).

    Returns
    -------
    PermutationTestResult
        ``statistic``, ``p_value``, ``effect_size`` (ddof = 1), ``z_score``, ``p_value_normal``,
        ``null_mean``, ``null_std``, ``n_permutations``, ``exact``, ``alternative`` (resolved),
        ``n_x``, ``n_y``, ``seed``, ``null_distribution``.

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
    >>> round(res.statistic, 2), round(res.p_value, 2), round(res.effect_size, 2)
    (18.07, 0.01, 0.65)

    (``scipy.stats.permutation_test`` of the same difference of sums, with 9,999 splits of its own, gives
    0.0116.)

    Against a dummy language of zeros (an integer ``y`` is its size):

    >>> res = biasdask.permutation_test(x, 30, resampling=biasdask.Resampling(n_permutations=999, alternative="greater", seed=1))
    >>> bool(res.p_value < 0.01)
    True
    """
    xs = np.asarray(x)
    if xs.ndim == 2:
        deprecated(
            "permutation_test(): a 2-D x is deprecated; use permutation_tests(x, y, ...), which returns a list",
            stacklevel=4,  # the caller of the checked call
        )
        return permutation_tests(  # type: ignore[return-value]
            xs,
            y,
            resampling=resampling,
            client=client,
            return_null=return_null,
            effect_x=effect_x,
            effect_y=effect_y,
            progress=progress,
        )
    if xs.ndim != 1:
        raise ValueError(f"x must be 1-D (one score per item), got shape {xs.shape}")
    ys = y if isinstance(y, (int, np.integer)) else np.asarray(y)[None]
    (result,) = _run_pools(xs[None], ys, resampling, client, return_null, effect_x, effect_y, progress)
    return result


@keyword_api("permutation_tests(x, y, resampling=Resampling(...))")
def permutation_tests(
    x: ArrayLike,
    y: ArrayLike | int,
    *,
    resampling: Resampling | None = None,
    client: Client | None = None,
    return_null: bool = False,
    effect_x: ArrayLike | int | None = None,
    effect_y: ArrayLike | int | None = None,
    progress: bool | None = None,
) -> list[PermutationTestResult]:
    """:func:`permutation_test` of several weightings of the same items, on common splits.

    One pass of the kernel per split evaluates every row (rows zero at different items get their own
    pass); row w's result is bit for bit the 1-D test of ``x[w]`` with the same seed.

    Parameters
    ----------
    x
        Scores t, 2-D: one row per weighting of the same items.
    y
        Scores of Y with as many rows as ``x``, or an ``int`` n (n dummy items scoring 0).
    resampling, client, return_null, effect_x, effect_y, progress
        As in :func:`permutation_test` (``effect_x`` and ``effect_y`` shared by every row).

    Returns
    -------
    list of PermutationTestResult
        One per row of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> u = np.random.default_rng(0).normal(0.1, 1, 40)
    >>> x = np.stack([u, u / np.arange(1, 41)])  # uniform and Zipf-like weightings of the same words
    >>> res = biasdask.permutation_tests(x, 40, resampling=biasdask.Resampling(n_permutations=999, seed=1), effect_x=u)
    >>> len(res), res[0].seed == res[1].seed, res[0].effect_size == res[1].effect_size
    (2, True, True)
    """
    xs = np.asarray(x)
    if xs.ndim != 2:
        raise ValueError(f"x must be 2-D (one row per weighting), got shape {xs.shape}")
    ys = y if isinstance(y, (int, np.integer)) else np.asarray(y)
    return _run_pools(xs, ys, resampling, client, return_null, effect_x, effect_y, progress)


def _run_pools(
    xs: np.ndarray, ys, resampling, client, return_null, effect_x, effect_y, progress
) -> list[PermutationTestResult]:
    """The results of every row of ``xs``: enumerated or sampled here when cheap, else batches as tasks."""
    options = resampling_options(resampling)
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
    return results
