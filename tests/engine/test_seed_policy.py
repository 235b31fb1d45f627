"""Every test function without a seed draws a fresh one, records it, and reproduces itself with it."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import biasdask

WORDS = ["he", "she", "man", "woman", "math", "art", "x1", "x2", "y1", "y2", *(f"w{i}" for i in range(300))]
A, B = ["he", "man"], ["she", "woman"]


@pytest.fixture(scope="module")
def emb():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(WORDS), 8)).astype(np.float32)
    return xr.DataArray(vectors, dims=("word", "dim"), coords={"word": WORDS}, attrs={"language": "en"})


def _values(result):
    if isinstance(result, xr.Dataset):
        return {k: result[k].values.tolist() for k in result.data_vars}, result.attrs["seed"]
    return (result.statistic, result.p_value), result.seed


CALLS = {
    "permutation_test": lambda e, seed=None: biasdask.permutation_test(
        np.arange(60.0) % 7, np.arange(40.0) % 5, resampling=biasdask.Resampling(n_permutations=99, seed=seed)
    ),
    "full_vocabulary_test": lambda e, seed=None: biasdask.full_vocabulary_test(
        e, A, B, resampling=biasdask.Resampling(n_permutations=99, seed=seed)
    ),
    "weat": lambda e, seed=None: biasdask.weat(
        e,
        biasdask.WordSets(["x1", "x2", "math"], ["y1", "y2", "art"], A, B),
        resampling=biasdask.Resampling(n_permutations=99, seed=seed),
    ),
    "set_metric_test": lambda e, seed=None: biasdask.set_metric_test(
        e,
        biasdask.WordSets(["x1", "x2", "math", "art"], (), A, B),
        metric="rnd",
        resampling=biasdask.Resampling(n_permutations=99, seed=seed),
    ),
    "attribute_sensitivity": lambda e, seed=None: biasdask.attribute_sensitivity(
        e, A, B, resampling=biasdask.Resampling(n_permutations=99, seed=seed), progress=False
    ),
}


@pytest.mark.parametrize("name", CALLS)
def test_no_seed_draws_a_fresh_one_that_reproduces_the_result(emb, name):
    first, seed = _values(CALLS[name](emb))
    second, other = _values(CALLS[name](emb))
    assert seed != other  # a fresh seed each time (128 bits of entropy: never equal by chance)
    again, same = _values(CALLS[name](emb, seed=seed))
    assert same == seed and again == first
