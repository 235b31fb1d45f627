"""The Examples sections of the inference modules run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["biasdask.stats.bootstrap", "biasdask.stats.meta", "biasdask.stats.multitest", "biasdask.stats.placebo"]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
