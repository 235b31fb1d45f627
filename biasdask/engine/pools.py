"""Permutation pools: several weightings of one set of items tested on common splits, as plain functions.

:func:`prepare_pools` groups the rows of x (weightings) that can share splits and prepares each group
(:func:`biasdask.stats.permutation.prepare_test`); :func:`pools_batch` computes the null statistics of
permutations [start, stop) of every row; :func:`finish_pools` turns the batches into one result per row.
None of them needs Dask: :func:`biasdask.permutation_test` runs them as ``dask.delayed`` tasks, a study
(:mod:`biasdask.study.stream`) as the tasks of its stream. :func:`batch_plan` cuts the permutations into
batches of about ``biasdask.batch-duration`` at a :class:`KernelRate`, which :func:`measured_rate` measures
in this process (a worker measures it as it joins, :class:`biasdask.engine.cluster.WarmKernels`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from biasdask._dask_config import seconds
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
from biasdask.stats.resampling import Alternative

__all__ = [
    "CONSERVATIVE_RATE",
    "KernelRate",
    "Pool",
    "PoolsSummary",
    "batch_plan",
    "default_batch_size",
    "finish_pools",
    "measured_rate",
    "pools_batch",
    "pools_summary",
    "prepare_pools",
]


class Pool(NamedTuple):
    """The rows of x (weightings) that share splits, and their prepared tests."""

    rows: list[int]
    tests: PreparedTests


class PoolsSummary(NamedTuple):
    """What a batch plan needs of a list of :class:`Pool` (:func:`pools_summary`)."""

    n_values: int
    """Pooled values summed over the groups' rows (the length of one pass)."""
    n_rows: int
    n_permutations: int
    exact: bool


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
    """This process's :class:`KernelRate`, measured once: batches of the kernel on pools of
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
        The workers' :class:`KernelRate` (:func:`biasdask.engine.permutation.kernel_rate`); default :data:`CONSERVATIVE_RATE`.

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


def prepare_pools(
    x: np.ndarray,
    y: np.ndarray | int,
    n_permutations: int,
    alternative: Alternative,
    seed: int | None,
    effect_x: np.ndarray | int | None = None,
    effect_y: np.ndarray | int | None = None,
) -> list[Pool]:
    """The rows of ``x`` (weightings) grouped by shared splits, each group prepared
    (:func:`biasdask.stats.permutation.prepare_test` of rows) with the same seed: usually one group; a
    weighting zero where the others are not (``frequency``) gets its own."""
    seed = resolve_seed(seed)
    return [
        Pool(
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


def pools_summary(pools: list[Pool]) -> PoolsSummary:
    """What a batch plan needs to know of ``pools``."""
    work = sum(p.n_values * len(rows) for rows, p in pools)
    rows = sum(len(r) for r, _ in pools)
    return PoolsSummary(work, rows, pools[0].tests.n_permutations, pools[0].tests.exact)


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


def pools_batch(pools: list[Pool], start: int, stop: int) -> np.ndarray:
    """Null statistics of permutations [start, stop) of every row, shape (rows, stop - start), rows in
    the order of ``x`` given to :func:`prepare_pools` (NaN in the rows of an exact group)."""
    n_rows = sum(len(r) for r, _ in pools)
    out = np.empty((n_rows, stop - start))
    for rows, prep in pools:  # an exact group's splits are all enumerated by finish_pools instead
        out[rows] = np.nan if prep.exact else null_batch(prep, start, stop)
    return out


def finish_pools(pools: list[Pool], *batches: np.ndarray, return_null: bool = False) -> list[PermutationTestResult]:
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
