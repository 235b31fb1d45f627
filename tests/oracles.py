"""scipy oracles the reliability tests share: correlations and their paired bootstrap intervals."""

from __future__ import annotations

import numpy as np
from scipy import stats


def pearson(x, y, axis=-1):
    """Pearson's r along ``axis`` (scipy)."""
    return stats.pearsonr(x, y, axis=axis).statistic


def spearman(x, y, axis=-1):
    """Spearman's rho along ``axis``: Pearson's r of the ranks (scipy)."""
    return stats.pearsonr(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis).statistic


def paired_bootstrap(x, y, statistic, *, n_resamples: int, seed: int, level: float = 0.95):
    """scipy's paired BCa bootstrap interval of ``statistic(x, y)``, drawn from ``SeedSequence(seed)``."""
    return stats.bootstrap(
        (x, y),
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=level,
        method="BCa",
        rng=np.random.default_rng(np.random.SeedSequence(seed)),
    ).confidence_interval
