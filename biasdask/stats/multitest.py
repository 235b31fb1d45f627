"""Multiple-testing corrections over a family of p-values, and what they demand of a permutation test.

- ``"holm"``: Holm 1979, step-down Bonferroni; controls the family-wise error rate under any
  dependence. Adjusted p_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)).
- ``"bh"``: Benjamini & Hochberg 1995, step-up; controls the false discovery rate for independent or
  positively dependent p-values. Adjusted p_(i) = min_{j ≥ i} min(1, m p_(j) / j).
- ``"by"``: Benjamini & Yekutieli 2001, BH times c(m) = Σ_{i=1..m} 1/i; controls the false discovery
  rate under any dependence.

p_(1) ≤ ... ≤ p_(m) are the family's sorted p-values and m its size. A NaN p-value (a test whose
statistic is undefined) is not a hypothesis tested: it stays NaN and does not count in m.

A sampled permutation p-value is never below 1/(n + 1) with n permutations (Phipson & Smyth 2010), so
a family can only reject anything when 1/(n + 1) is at most its first threshold, the bound the
smallest p-value must meet (:func:`first_threshold`); :func:`min_permutations` gives the n that can.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["CORRECTIONS", "adjust_pvalues", "first_threshold", "min_permutations", "Correction"]

Correction = Literal["holm", "bh", "by"]
CORRECTIONS: tuple[str, ...] = ("holm", "bh", "by")
"""The corrections: Holm (family-wise error), Benjamini-Hochberg and Benjamini-Yekutieli (false
discovery rate)."""


def _check_method(method: str) -> None:
    if method not in CORRECTIONS:
        raise ValueError(f"method must be one of {', '.join(CORRECTIONS)}; got {method!r}")


def adjust_pvalues(p: ArrayLike, *, method: Correction = "holm") -> NDArray[np.float64]:
    """Adjusted p-values of one family (all of ``p``, whatever its shape).

    Parameters
    ----------
    p
        p-values in [0, 1], any shape; NaN marks a test without a p-value.
    method
        ``"holm"`` (default), ``"bh"`` or ``"by"`` (see the module docstring).

    Returns
    -------
    numpy.ndarray
        float64, the shape of ``p``: each finite p-value adjusted over the m finite ones (monotone in
        p, at least p, at most 1), NaN where ``p`` is NaN. Reject at level α where adjusted ≤ α.

    Raises
    ------
    ValueError
        A p-value outside [0, 1] or infinite, an unknown method.
    TypeError
        Non-numeric input.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03, float("nan")]).tolist()
    [0.03, 0.06, 0.06, nan]
    >>> adjust_pvalues([0.01, 0.04, 0.03], method="bh").tolist()
    [0.03, 0.04, 0.04]
    """
    _check_method(method)
    arr = np.asarray(p)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"p-values must be numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    finite = ~np.isnan(arr)
    values = arr[finite]
    if np.any((values < 0) | (values > 1)):
        bad = values[(values < 0) | (values > 1)][0]
        raise ValueError(f"p-values must lie in [0, 1] (NaN for none); got {bad}")
    out = np.full(arr.shape, np.nan)
    m = values.size
    if m == 0:
        return out
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    i = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - i + 1) * ranked))
    else:
        factor = float(np.sum(1.0 / i)) if method == "by" else 1.0
        adjusted = np.minimum.accumulate(np.minimum(1.0, m * factor * ranked / i)[::-1])[::-1]
    result = np.empty(m)
    result[order] = adjusted
    out[finite] = result
    return out


def _check_family(k: int, alpha: float) -> None:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"the family size must be an integer, got {k!r}")
    if k < 1:
        raise ValueError(f"the family size must be at least 1, got {k}")
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise TypeError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")


def _threshold(k: int, alpha: float, method: str) -> Fraction:
    # alpha as the decimal it was written as (0.05 is 1/20, not the binary float above it)
    a = Fraction(repr(float(alpha)))
    if method == "by":
        return a / (k * sum(Fraction(1, i) for i in range(1, k + 1)))
    return a / k


def first_threshold(k: int, alpha: float, method: Correction = "holm") -> float:
    """The bound the smallest p-value of a family of ``k`` must meet to be rejected at ``alpha``.

    Holm and BH: α/k; BY: α/(k c(k)), c(k) = Σ_{i=1..k} 1/i. For Holm a family in which no p-value
    meets it rejects nothing. BH and BY can still reject when many p-values are small together (BH
    rejects all k when all are at most α), so for them this is the bound for a single strong effect.

    Examples
    --------
    >>> first_threshold(26, 0.05)
    0.0019230769230769232
    """
    _check_method(method)
    _check_family(k, alpha)
    return float(_threshold(int(k), alpha, method))


def min_permutations(k: int, alpha: float, method: Correction = "holm") -> int:
    """The fewest permutations n for which the smallest sampled p-value 1/(n + 1) meets
    :func:`first_threshold` (exact rational arithmetic, so no rounding moves the bound).

    Examples
    --------
    With 26 languages, Holm at 0.05 needs 519 permutations: 1/520 = 0.05/26.

    >>> min_permutations(26, 0.05)
    519
    >>> min_permutations(26, 0.05, "by")
    2004
    """
    _check_method(method)
    _check_family(k, alpha)
    # 1/(n + 1) <= t  <=>  n >= 1/t - 1
    return max(0, math.ceil(1 / _threshold(int(k), alpha, method)) - 1)
