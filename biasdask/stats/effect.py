"""Effect size and the closed-form moments of the permutation null.

Both accept the second group as an ``int`` n, meaning n items whose value is exactly 0 (the full-vocabulary
dummy language), and never materialise those zeros.

- :func:`effect_size`: d = (mean_X u - mean_Y u) / sd_{X∪Y} u with the **sample** SD (ddof = 1), the
  convention that reproduces Caliskan et al. 2017.
- :func:`pool_variance`: the population variance (ddof = 0) of a pool of values plus n zeros.
- :func:`null_moments`: mean and SD of s_i = Σ_{X_i} t - Σ_{Y_i} t over uniformly random splits of the
  pool into |X| and |Y| items without replacement: E s_i = (|X| - |Y|)/M · Σ pool and
  Var s_i = 4 |X| |Y| σ² / (M - 1), with M = |X| + |Y| and σ² the population variance of the pool.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["effect_size", "null_moments", "pool_variance"]


def _group(values: ArrayLike | int) -> tuple[np.ndarray, int]:
    """Nonzero-free view of a group: (its values as float64, number of implicit zeros)."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        return np.empty(0, dtype=np.float64), int(values)
    return np.asarray(values, dtype=np.float64).ravel(), 0


def pool_variance(values: ArrayLike, n_zero: int = 0) -> tuple[float, float]:
    """Mean and population variance (ddof = 0) of ``values`` together with ``n_zero`` zeros.

    Two passes over ``values`` (mean first, then squared deviations), so the result is accurate even
    when the mean is large compared to the spread; the zeros contribute ``n_zero * mean**2``. A pool
    whose items are all equal has variance exactly 0 (the rounded mean would otherwise leave a tiny
    positive or zero remainder depending on the values).

    Parameters
    ----------
    values
        The explicit values (any float dtype; accumulated in float64).
    n_zero
        Number of additional items equal to 0.

    Returns
    -------
    mean, variance : float
        NaN for an empty pool.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    m = v.size + int(n_zero)
    if m == 0:
        return math.nan, math.nan
    if v.size and v.min() == v.max() and (n_zero == 0 or v[0] == 0):
        return float(v[0]), 0.0
    mean = float(v.sum()) / m
    ss = float(np.square(v - mean).sum()) + int(n_zero) * mean * mean
    return mean, ss / m


def effect_size(u_x: ArrayLike | int, u_y: ArrayLike | int) -> float:
    """Effect size d = (mean u_X - mean u_Y) / sd(u over X ∪ Y, ddof = 1).

    Parameters
    ----------
    u_x, u_y
        The (unweighted) scores of the two groups, or an ``int`` n for n items scoring 0.

    Returns
    -------
    float
        NaN when the pooled SD is 0 or undefined (fewer than two items, or all items equal).
    """
    vx, zx = _group(u_x)
    vy, zy = _group(u_y)
    n_x, n_y = vx.size + zx, vy.size + zy
    m = n_x + n_y
    if n_x == 0 or n_y == 0 or m < 2:
        return math.nan
    mean_x = float(vx.sum()) / n_x
    mean_y = float(vy.sum()) / n_y
    _, var0 = pool_variance(np.concatenate([vx, vy]), zx + zy)
    var1 = var0 * m / (m - 1)
    if not var1 > 0.0:
        return math.nan
    return (mean_x - mean_y) / math.sqrt(var1)


def null_moments(pool: ArrayLike, n_zero: int, n_x: int, n_y: int) -> tuple[float, float]:
    """Mean and SD of the permutation null of s = Σ_X t - Σ_Y t (sampling without replacement).

    Parameters
    ----------
    pool
        The pooled nonzero values of X ∪ Y (zeros may be included here or counted in ``n_zero``).
    n_zero
        Number of pooled items equal to 0 that are not in ``pool``.
    n_x, n_y
        |X| and |Y|; ``pool.size + n_zero`` must equal ``n_x + n_y``.

    Returns
    -------
    mean, sd : float
        E s_i = (n_x - n_y)/M · Σ pool and sd = sqrt(4 n_x n_y σ² / (M - 1)).
    """
    v = np.asarray(pool, dtype=np.float64).ravel()
    m = n_x + n_y
    if v.size + n_zero != m:
        raise ValueError(f"pool has {v.size + n_zero} items but n_x + n_y = {m}")
    if m < 2:
        return math.nan, math.nan
    total = float(v.sum())
    _, var = pool_variance(v, n_zero)
    mean = (n_x - n_y) / m * total
    return mean, math.sqrt(4.0 * n_x * n_y * var / (m - 1))
