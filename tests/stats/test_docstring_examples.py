"""The Examples sections of the inference modules run as doctests; their public names."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "biasdask.stats.bootstrap",
    "biasdask.stats.checks",
    "biasdask.stats.meta",
    "biasdask.stats.multitest",
    "biasdask.stats.placebo",
    "biasdask.stats.reliability",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_the_inference_core_is_public_in_biasdask_stats():
    import biasdask.stats as bs
    from biasdask.stats.meta import random_effects

    assert bs.random_effects is random_effects
    for name in bs.__all__:
        assert callable(getattr(bs, name)), name
    with pytest.raises(AttributeError, match="no attribute"):
        bs.no_such_function  # noqa: B018
