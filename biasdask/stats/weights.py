"""Word weights Z of the weighted score t(w) = Z(rank(w), N) · u(w).

- ``uniform`` (Method 1 of the full-vocabulary test): Z = 1.
- ``zipf`` (Method 2): Z(k, N) = (1/k) / H_N with H_N = Σ_{n=1..N} 1/n.
- ``frequency``: the observed relative frequency, renormalised to sum 1 over words that have one;
  words without a frequency get 0.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["METHODS", "frequency_weights", "harmonic_number", "zipf_weights"]


METHODS = ("uniform", "zipf", "frequency")


@functools.lru_cache(maxsize=64)
def harmonic_number(n: int) -> float:
    """H_n = Σ_{k=1..n} 1/k, summed from the small terms up for accuracy (cached: every chunk of a
    vocabulary's Zipf weights needs the same H_N)."""
    if n < 1:
        raise ValueError(f"harmonic number needs n >= 1, got {n}")
    return float(np.sum(1.0 / np.arange(n, 0, -1, dtype=np.float64)))


def zipf_weights(ranks: ArrayLike, n: int) -> NDArray[np.float64]:
    """Z(k, N) = (1/k) / H_N for the given 1-based frequency ranks."""
    k = np.asarray(ranks, dtype=np.float64)
    if k.size and (k.min() < 1 or k.max() > n):
        raise ValueError(f"ranks must lie in 1..{n}")
    return (1.0 / k) / harmonic_number(n)


def frequency_weights(frequencies: ArrayLike) -> NDArray[np.float64]:
    """Observed frequencies renormalised to sum 1; missing (NaN) or non-positive ones become 0."""
    f = np.asarray(frequencies, dtype=np.float64)
    f = np.where(np.isfinite(f) & (f > 0), f, 0.0)
    total = f.sum()
    if total <= 0:
        raise ValueError("no word has an observed frequency")
    return f / total
