"""Bias against frequency: per-bin profiles of a per-word score (Valentini et al. 2022).

Words are grouped into bins of log10 frequency rank (Valentini et al. 2022, Figure 1: the most frequent words in the
leftmost bin) or of log10 observed frequency (their Table 3 and Figures 2-3). For every bin the
profile gives the number of words, the mean score, its sample SD (ddof = 1) and the effect size mean/SD,
"Cohen's d of the bin's mean under the null hypothesis of no bias on average" (Valentini et al. 2022, §2). The score
is any per-word array, typically the association u or a weighted score t; call once per score.

Bin conventions:

- by rank (:func:`rank_bin_edges`): edges 10^0, 10^step, 10^(2 step), ... up to N, plus a last bin that
  ends at N; bins are [lo, hi) except the last, which is [lo, N]. With step 1 and N = 2,000,000:
  ranks 1-9, 10-99, ..., 10^5-999,999, 10^6-2,000,000.
- by observed frequency (:func:`frequency_bin_edges`): edges on a log10 grid of the given step from
  below the smallest frequency, the last edge being the largest frequency; bins are (lo, hi] except the
  first, which is [lo, hi], as in Valentini et al. 2022's Table 3 ([10^2, 10^2.5], (10^2.5, 10^3], ..., (10^6, 10^8.12]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.elementary import exp10, log10

__all__ = [
    "BinProfile",
    "bin_profile",
    "frequency_bin_edges",
    "profile_by_frequency",
    "profile_by_rank",
    "rank_bin_edges",
]


@dataclass(frozen=True)
class BinProfile:
    """Per-bin summary of a per-word score.

    Attributes
    ----------
    edges : ndarray, shape (n_bins + 1,)
        Bin edges in the units of ``key`` (ranks or frequencies), increasing.
    count : ndarray of int64, shape (n_bins,)
        Words in each bin with a finite score.
    mean, sd, effect_size : ndarray of float64, shape (n_bins,)
        Mean score, sample SD (ddof = 1) and mean / SD per bin; NaN where undefined (empty bin, a
        single word, or SD = 0).
    key : {"rank", "frequency"}
        What the words were binned by.
    closed : {"left", "right"}
        Which side of each bin is closed (the outermost bins are closed on both sides).
    n_outside : int
        Words left out: non-finite score, or a key outside [edges[0], edges[-1]] (e.g. no frequency).
    """

    edges: NDArray[np.float64]
    count: NDArray[np.int64]
    mean: NDArray[np.float64]
    sd: NDArray[np.float64]
    effect_size: NDArray[np.float64]
    key: str
    closed: str
    n_outside: int

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return len(self.count)

    @property
    def log10_edges(self) -> NDArray[np.float64]:
        """log10 of the edges (the x axis of Valentini et al. 2022's figures)."""
        return np.array([log10(e) for e in self.edges])

    def labels(self) -> list[str]:
        """Human-readable bin labels: rank ranges such as ``"10-99"`` or frequency intervals in log10."""
        if self.key == "rank":
            lo = np.ceil(self.edges[:-1]).astype(np.int64)
            hi = np.ceil(self.edges[1:]).astype(np.int64) - 1
            hi[-1] = int(np.floor(self.edges[-1]))
            return [f"{a:,}-{b:,}" if b > a else f"{a:,}" for a, b in zip(lo, hi)]
        logs = self.log10_edges
        return [f"{'[' if i == 0 else '('}10^{a:.3g}, 10^{b:.3g}]" for i, (a, b) in enumerate(zip(logs[:-1], logs[1:]))]

    def as_dict(self) -> dict[str, NDArray]:
        """The arrays as a plain dict (edges, count, mean, sd, effect_size)."""
        return {
            "edges": self.edges,
            "count": self.count,
            "mean": self.mean,
            "sd": self.sd,
            "effect_size": self.effect_size,
        }


def _pow10(exponents: NDArray[np.floating]) -> NDArray[np.float64]:
    # Correctly rounded, so exact on exact powers of ten (an edge 10^3 must be 1000.0, or a word of rank
    # 1000 falls into the wrong bin), and the same on every CPU (the C library's pow and numpy's are not).
    return np.array([exp10(e) for e in exponents])


def rank_bin_edges(n_words: int, step: float = 1.0) -> NDArray[np.float64]:
    """Edges 10^0, 10^step, ... <= ``n_words``, plus ``n_words`` itself if it is not on the grid.

    Parameters
    ----------
    n_words : int
        N, the largest rank.
    step : float
        Width of a bin in log10 units (1 = decades, 0.5 = half decades).
    """
    if n_words < 2:
        raise ValueError(f"binning ranks needs at least two words, got n_words={n_words}")
    if not step > 0:
        raise ValueError(f"step must be > 0, got {step}")
    n_steps = int(np.floor(log10(n_words) / step + 1e-12))
    edges = _pow10(np.arange(n_steps + 1) * step)
    edges = edges[edges <= n_words]
    if edges[-1] < n_words:
        edges = np.append(edges, float(n_words))
    return edges


def frequency_bin_edges(frequencies: ArrayLike, step: float = 0.5) -> NDArray[np.float64]:
    """Log10 grid of the given step from at or below the smallest positive frequency, ending at the largest.

    Parameters
    ----------
    frequencies : array_like
        Observed frequencies (counts or relative); zeros and non-finite values are ignored.
    step : float
        Width of a bin in log10 units (Valentini et al. 2022, Table 3, uses 0.5).
    """
    if not step > 0:
        raise ValueError(f"step must be > 0, got {step}")
    f = np.asarray(frequencies, dtype=np.float64)
    f = f[np.isfinite(f) & (f > 0)]
    if f.size == 0:
        raise ValueError("no word has a positive finite frequency")
    lo_log, hi_log = log10(f.min()), log10(f.max())
    start = np.floor(lo_log / step + 1e-12) * step
    logs = start + np.arange(int(np.ceil((hi_log - start) / step)) + 1) * step
    logs = logs[logs < hi_log]
    if logs.size == 0:  # every word has the same frequency, on the grid: one bin ending there
        logs = np.array([hi_log - step])
    edges = np.append(_pow10(logs), f.max())
    edges[0] = min(edges[0], f.min())  # guard against 10**log10(x) rounding just above x
    return edges


def bin_profile(
    scores: ArrayLike,
    keys: ArrayLike,
    edges: ArrayLike,
    *,
    closed: str = "left",
    key: str = "rank",
) -> BinProfile:
    """Count, mean, SD (ddof = 1) and mean/SD of ``scores`` in bins of ``keys``.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Per-word score (u or t). Non-finite scores (e.g. zero vectors) are left out.
    keys : array_like, shape (n,)
        What to bin by (rank or frequency) for each word.
    edges : array_like, shape (n_bins + 1,)
        Strictly increasing bin edges; words whose key is outside [edges[0], edges[-1]] are left out.
    closed : {"left", "right"}
        ``"left"``: bins [lo, hi), the last one [lo, hi]; ``"right"``: bins (lo, hi], the first [lo, hi].
    key : str
        Recorded in the result (``"rank"`` or ``"frequency"``).
    """
    x = np.asarray(scores, dtype=np.float64)
    k = np.asarray(keys, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    if x.ndim != 1 or x.shape != k.shape:
        raise ValueError(f"scores and keys must be 1-D of one length, got shapes {x.shape} and {k.shape}")
    if e.ndim != 1 or len(e) < 2 or not np.all(np.diff(e) > 0):
        raise ValueError("edges must be a strictly increasing 1-D array of at least two values")
    if closed not in ("left", "right"):
        raise ValueError(f"closed must be 'left' or 'right', got {closed!r}")
    n_bins = len(e) - 1
    if closed == "left":
        idx = np.searchsorted(e, k, side="right") - 1
        idx[k == e[-1]] = n_bins - 1
    else:
        idx = np.searchsorted(e, k, side="left") - 1
        idx[k == e[0]] = 0
    keep = np.isfinite(x) & (idx >= 0) & (idx < n_bins)
    idx, x = idx[keep], x[keep]

    count = np.bincount(idx, minlength=n_bins).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(idx, weights=x, minlength=n_bins) / count
        # Two-pass variance: sums of squared deviations from each bin's own mean.
        ss = np.bincount(idx, weights=(x - mean[idx]) ** 2, minlength=n_bins)
        sd = np.where(count >= 2, np.sqrt(ss / (count - 1)), np.nan)
        effect = np.where(sd > 0, mean / sd, np.nan)
    return BinProfile(
        edges=e,
        count=count,
        mean=mean,
        sd=sd,
        effect_size=effect,
        key=key,
        closed=closed,
        n_outside=int((~keep).sum()),
    )


def profile_by_rank(
    scores: ArrayLike,
    ranks: ArrayLike | None = None,
    *,
    step: float = 1.0,
    edges: ArrayLike | None = None,
) -> BinProfile:
    """Profile of ``scores`` over bins of log10 frequency rank (Valentini et al. 2022, Figure 1).

    Parameters
    ----------
    scores : array_like, shape (N,)
        Per-word score in any order matching ``ranks``.
    ranks : array_like, shape (N,), optional
        Frequency rank of each word (1 = most frequent); default 1..N (scores in file order).
    step : float
        Bin width in log10 units for the default edges (:func:`rank_bin_edges` with N = max rank).
    edges : array_like, optional
        Explicit rank edges instead.
    """
    x = np.asarray(scores)
    r = np.arange(1, x.shape[0] + 1) if ranks is None else np.asarray(ranks)
    if edges is None:
        edges = rank_bin_edges(int(r.max()), step)
    return bin_profile(x, r, edges, closed="left", key="rank")


def profile_by_frequency(
    scores: ArrayLike,
    frequencies: ArrayLike,
    *,
    step: float = 0.5,
    edges: ArrayLike | None = None,
) -> BinProfile:
    """Profile of ``scores`` over bins of log10 observed frequency (Valentini et al. 2022, Table 3, Figures 2-3).

    Words without a frequency (0 or NaN) are left out and counted in ``n_outside``.

    Parameters
    ----------
    scores : array_like, shape (N,)
    frequencies : array_like, shape (N,)
        Observed frequency of each word (counts, or relative frequencies such as wordfreq's).
    step : float
        Bin width in log10 units for the default edges (:func:`frequency_bin_edges`).
    edges : array_like, optional
        Explicit frequency edges instead.
    """
    f = np.asarray(frequencies, dtype=np.float64)
    if edges is None:
        edges = frequency_bin_edges(f, step)
    f = np.where(f > 0, f, np.nan)
    return bin_profile(scores, f, edges, closed="right", key="frequency")
