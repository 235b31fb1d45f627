"""Pure numbers (numpy, numba, scipy): no I/O, no Dask, no xarray.

The inference core is re-exported here, imported lazily (so that importing one module of the package
does not load the others); everything else is imported from its module.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "random_effects": "biasdask.stats.meta",
    "meta_regression": "biasdask.stats.meta",
    "adjust_pvalues": "biasdask.stats.multitest",
    "first_threshold": "biasdask.stats.multitest",
    "min_permutations": "biasdask.stats.multitest",
    "bootstrap_effect_size": "biasdask.stats.bootstrap",
    "attribute_bootstrap_interval": "biasdask.stats.bootstrap",
    "rank_matched_words": "biasdask.stats.placebo",
    "linear_moments": "biasdask.stats.placebo",
    "merge_moments": "biasdask.stats.placebo",
    "evaluate_moments": "biasdask.stats.placebo",
    "euclidean_statistics": "biasdask.stats.placebo",
    "weighted_effect_size": "biasdask.stats.placebo",
    "placebo_summary": "biasdask.stats.placebo",
    "paired_correlation": "biasdask.stats.reliability",
    "pairwise_correlations": "biasdask.stats.reliability",
    "intraclass_correlation": "biasdask.stats.reliability",
    "cronbach_alpha": "biasdask.stats.reliability",
    "split_half": "biasdask.stats.reliability",
    "leave_one_out": "biasdask.stats.reliability",
    "internal_consistency": "biasdask.stats.reliability",
    "vocabulary_effect_size": "biasdask.stats.reliability",
    "item_moments": "biasdask.stats.reliability",
    "merge_item_moments": "biasdask.stats.reliability",
    "score_correlation": "biasdask.stats.reliability",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'biasdask.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
