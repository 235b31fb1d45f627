"""The full-vocabulary test on embeddings, against a numpy reference."""

import numpy as np
import pytest

from biasdask import Resampling
from biasdask.engine.bias_tests import full_vocabulary_test, pairwise_vocabulary_test
from biasdask.io.embeddings import as_embeddings
from tests.stores import unit


def _language(n, seed, shift):
    """An in-memory embedding (writing a store is not what these tests are about; tests/io/test_embeddings.py
    shows the in-memory and stored forms give the same bits)."""
    rng = np.random.default_rng(seed)
    vec = rng.standard_normal((n, 8)) + shift * np.eye(8)[0]
    vec[0], vec[1] = np.eye(8)[0] * 3, -np.eye(8)[0] * 3
    vec[5] = 0.0
    words = ["male", "female"] + [f"w{i}" for i in range(2, n)]
    vec32 = vec.astype(np.float32)
    return as_embeddings(vec32, words, language="en"), vec32.astype(np.float64)


def _u(vec):
    with np.errstate(invalid="ignore"):
        return unit(vec) @ (unit(vec[0]) - unit(vec[1]))


@pytest.mark.parametrize("method", ["uniform", "zipf"])
def test_against_dummy_language_matches_numpy(tmp_path, method, dask_client):
    url, vec = _language(300, 1, 0.3)
    u = _u(vec)
    keep = np.isfinite(u)
    z = np.ones(300) if method == "uniform" else (1 / np.arange(1, 301)) / np.sum(1 / np.arange(1, 301))
    res = full_vocabulary_test(
        url,
        ["male"],
        ["female"],
        method=method,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999, seed=4, alternative="greater"),
    )
    assert res.n_x == res.n_y == 299  # the zero vector is left out
    assert res.statistic == pytest.approx(np.sum((z * u)[keep]), rel=1e-5)
    pooled = np.concatenate([u[keep], np.zeros(299)])
    assert res.effect_size == pytest.approx(u[keep].mean() / pooled.std(ddof=1), rel=1e-5)
    if method == "uniform":  # 299 words all leaning one way: far in the tail
        assert res.p_value == pytest.approx(1 / 1000) and res.z_score > 3
    else:  # Zipf weights put the mass on a few top words: sampled and normal p agree
        assert abs(res.p_value - res.p_value_normal) < 0.05


def test_pairwise_two_languages_truncated_to_same_n(tmp_path, dask_client):
    a, va = _language(300, 1, 0.3)
    b, vb = _language(200, 2, 0.0)
    res = pairwise_vocabulary_test(
        a,
        b,
        ["male"],
        ["female"],
        method="zipf",
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999, seed=4),
    )
    z = (1 / np.arange(1, 201)) / np.sum(1 / np.arange(1, 201))
    ta, tb = z * _u(va[:200]), z * _u(vb)
    assert res.n_x == res.n_y == 199
    assert res.statistic == pytest.approx(np.nansum(ta) - np.nansum(tb), rel=1e-5)
    ua, ub = _u(va[:200]), _u(vb)
    ua, ub = ua[np.isfinite(ua)], ub[np.isfinite(ub)]
    d = (ua.mean() - ub.mean()) / np.concatenate([ua, ub]).std(ddof=1)
    assert res.effect_size == pytest.approx(d, rel=1e-5)
