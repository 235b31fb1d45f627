"""The debiasing formulas on small random vectors: their defining properties."""

from __future__ import annotations

import numpy as np
import pytest

from biasdask.stats.debias import equalize, neutralize, project_out


@pytest.fixture()
def data():
    rng = np.random.default_rng(3)
    g = rng.normal(size=12)
    return rng.normal(size=(30, 12)), g, g / np.linalg.norm(g)


def test_project_out_removes_exactly_the_component_along_g(data):
    v, g, gu = data
    out = project_out(v, 5 * g)  # the length of g does not matter
    np.testing.assert_allclose(out @ gu, 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1) ** 2 + (v @ gu) ** 2, np.linalg.norm(v, axis=1) ** 2)
    np.testing.assert_allclose(project_out(out, g), out, atol=1e-12)  # a projection: idempotent
    other = v[:5] - np.outer(v[:5] @ gu, gu)
    np.testing.assert_allclose(out[:5], other, atol=1e-12)


def test_neutralize_unit_rows_neutral_ones_orthogonal(data):
    v, g, gu = data
    v = v.copy()
    v[3] = 0
    v[4] = 2.5 * gu  # parallel to g: nothing is left of it
    mask = np.arange(30) % 2 == 0
    out = neutralize(v, g, mask)
    assert out.shape == v.shape and out.dtype == np.float64
    np.testing.assert_array_equal(out[3], 0)
    np.testing.assert_array_equal(out[4], 0)
    rest = np.setdiff1d(np.arange(30), [3, 4])
    np.testing.assert_allclose(np.linalg.norm(out[rest], axis=1), 1)
    np.testing.assert_allclose(out[mask] @ gu, 0, atol=1e-12)
    specific = ~mask & (np.arange(30) != 3)
    np.testing.assert_allclose(out[specific], v[specific] / np.linalg.norm(v[specific], axis=1, keepdims=True))
    assert np.all(np.abs(out[specific] @ gu) > 1e-3)
    np.testing.assert_allclose(neutralize(v[5:7], g), neutralize(v[5:7], g, [True, True]))


def test_equalize_gives_unit_vectors_differing_only_along_g(data):
    v, g, gu = data
    a, b = v[0], v[1]
    a2, b2 = equalize(a, b, g)
    np.testing.assert_allclose([np.linalg.norm(a2), np.linalg.norm(b2)], 1)
    diff = a2 - b2
    np.testing.assert_allclose(diff - (diff @ gu) * gu, 0, atol=1e-12)
    # each word stays on its own side of g
    assert np.sign((a2 - b2) @ gu) == np.sign((a / np.linalg.norm(a) - b / np.linalg.norm(b)) @ gu)
    # the common part is the rejection of the mean of the unit vectors
    mu = (a / np.linalg.norm(a) + b / np.linalg.norm(b)) / 2
    np.testing.assert_allclose((a2 + b2) / 2, mu - (mu @ gu) * gu, atol=1e-12)
    # every vector orthogonal to g is equidistant from the two
    w = neutralize(v[2:], g)
    np.testing.assert_allclose(np.linalg.norm(w - a2, axis=1), np.linalg.norm(w - b2, axis=1), atol=1e-12)
    b3, a3 = equalize(b, a, g)  # symmetric in the order of the pair
    np.testing.assert_allclose(a3, a2, atol=1e-12)
    np.testing.assert_allclose(b3, b2, atol=1e-12)


def test_bad_input(data):
    v, g, _ = data
    with pytest.raises(ValueError, match="non-zero"):
        project_out(v, np.zeros(12))
    with pytest.raises(ValueError, match="shape"):
        neutralize(v[:, :5], g)
    with pytest.raises(ValueError, match="one flag per row"):
        neutralize(v, g, [True])
    with pytest.raises(ValueError, match="zero vector"):
        equalize(np.zeros(12), v[0], g)
