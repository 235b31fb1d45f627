"""biasdask: social bias in word embeddings of many languages, over whole vocabularies, on Dask.

The public names are imported lazily, so ``import biasdask`` and ``biasdask --help`` stay
fast; each one lives in exactly one module, named below. Importing the package registers its defaults
(``biasdask.yaml``) under the ``biasdask`` key of ``dask.config``.
"""

from __future__ import annotations

import importlib
from typing import Any

from biasdask import (
    _dask_config,  # noqa: F401  (registers the "biasdask" namespace of dask.config)
    _interrupt,  # noqa: F401  (first: Ctrl-C while the command imports the rest is one line)
    _numba_cache,  # noqa: F401  (compiled kernels are cached per user, not in the package)
)
from biasdask._version import __version__

_EXPORTS = {
    "ingest": "biasdask.engine.ingest",
    "open_embeddings": "biasdask.io.store",
    "as_embeddings": "biasdask.io.embeddings",
    "scores": "biasdask.engine.scores",
    "permutation_test": "biasdask.engine.permutation",
    "permutation_tests": "biasdask.engine.permutation",
    "full_vocabulary_test": "biasdask.engine.bias_tests",
    "pairwise_vocabulary_test": "biasdask.engine.bias_tests",
    "attribute_sensitivity": "biasdask.engine.robustness",
    "pair_consistency": "biasdask.engine.consistency",
    "weat": "biasdask.engine.weat",
    "career_family_test": "biasdask.engine.weat",
    "align": "biasdask.engine.alignment",
    "debias": "biasdask.engine.debias",
    "set_metric_test": "biasdask.engine.setmetrics",
    "run": "biasdask.study.run",
    "open_results": "biasdask.io.results",
    "open_scores": "biasdask.io.results",
    "top_words": "biasdask.report",
    "get_client": "biasdask.engine.cluster",
    "direction": "biasdask.engine.directions",
    "direct_bias": "biasdask.engine.directions",
    "indirect_bias": "biasdask.engine.directions",
    "frequency_profile": "biasdask.engine.frequency",
    "load_config": "biasdask.study.config",
    "meta_analysis": "biasdask.study.inference",
    "retest_reliability": "biasdask.study.inference",
    "agreement": "biasdask.study.reliability",
    "Resampling": "biasdask.stats.resampling",
    "Vocabulary": "biasdask.lexicon.vocabulary",
    "WordSets": "biasdask.lexicon",
    "read_word_sets": "biasdask.io.wordfiles",
    "Location": "biasdask.io.fs",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'biasdask' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
