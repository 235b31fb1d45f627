"""BAD test (its eq. 4-5), MWEAT (eq. 3) and the paired t-test, on constructed embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biasdask.stats import grammatical as gr


def _cos(u, v):
    return float(np.dot(u, v) / np.sqrt(np.dot(u, u) * np.dot(v, v)))


def _s_group(w, group):  # eq. 5, word by word
    return sum(_cos(w, g) for g in group) / len(group)


def _unit(v):
    return v / np.linalg.norm(v)


def test_bad_statistic_is_equation_4_and_5():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 12)), rng.normal(size=(6, 12))
    a, b = rng.normal(size=(4, 12)), 3 * rng.normal(size=(4, 12))
    expected_masc = [_s_group(xi, a) for xi in x]
    expected_fem = [_s_group(yi, b) for yi in y]
    res = gr.bad_test(x, y, a, b)
    np.testing.assert_allclose(res.masculine, expected_masc, atol=1e-12)
    np.testing.assert_allclose(res.feminine, expected_fem, atol=1e-12)
    assert res.statistic == pytest.approx(sum(expected_masc) - sum(expected_fem))
    assert gr.bad_statistic(x, y, a, b) == pytest.approx(res.statistic)
    np.testing.assert_allclose(res.bias, np.subtract(expected_masc, expected_fem))
    np.testing.assert_allclose(gr.group_association(x, a), expected_masc, atol=1e-12)


def test_paired_t_test_equals_scipy_and_the_textbook_formula():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(9, 8)), rng.normal(size=(9, 8))
    a, b = rng.normal(size=(3, 8)), rng.normal(size=(3, 8))
    res = gr.bad_test(x, y, a, b)
    ref = stats.ttest_rel(res.masculine, res.feminine)
    assert res.t_statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    d = res.masculine - res.feminine
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    assert res.t_statistic == pytest.approx(t, rel=1e-10)
    assert res.p_value == pytest.approx(2 * stats.t.sf(abs(t), len(d) - 1), rel=1e-10)
    assert res.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    greater = gr.bad_test(x, y, a, b, alternative="greater")
    assert greater.p_value == pytest.approx(stats.t.sf(t, len(d) - 1), rel=1e-10)
    assert greater.alternative == "greater"


def _gendered_space(rng, dim=60):
    """A masculine axis e0, a feminine axis e1, the other axes, and 5 attribute forms around each axis.

    Noise and target stems live in the other axes with a total length of about 0.3 and 1.
    """
    eye = np.eye(dim)
    m_axis, f_axis, rest = eye[0], eye[1], eye[2:]
    a = m_axis + 0.3 * rng.normal(size=(5, dim - 2)) @ rest / np.sqrt(dim - 2)
    b = f_axis + 0.3 * rng.normal(size=(5, dim - 2)) @ rest / np.sqrt(dim - 2)
    return m_axis, f_axis, rest, a, b


def _stems(rng, n, rest):
    return rng.normal(size=(n, rest.shape[0])) @ rest / np.sqrt(rest.shape[0])


def test_bad_planted_masculine_bias_is_significant():
    rng = np.random.default_rng(2)
    m_axis, f_axis, rest, a, b = _gendered_space(rng)
    n = 20
    stems = _stems(rng, n, rest)
    # Masculine forms lean towards the masculine attributes far more than feminine forms towards theirs.
    x = stems + 1.2 * m_axis + 0.1 * rng.normal(size=stems.shape)
    y = stems + 0.3 * f_axis + 0.1 * rng.normal(size=stems.shape)
    res = gr.bad_test(x, y, a, b)
    assert res.statistic > 0 and np.all(res.bias > 0)
    assert res.t_statistic > 0 and res.p_value < 1e-6
    flipped = gr.bad_test(y, x, b, a)  # roles swapped: a feminine bias
    assert flipped.statistic == pytest.approx(-res.statistic) and flipped.t_statistic < 0


def test_bad_without_difference_rejects_at_the_nominal_rate():
    """No planted difference: each target's two forms are equally close to their own gender's attributes.

    Over 400 constructed embeddings the two-sided paired t-test at 5 % must reject about 5 % of the time
    (binomial 99.9 % range for n = 400 is roughly 2 %-9.5 %).
    """
    rejected = 0
    for seed in range(400):
        rng = np.random.default_rng(1000 + seed)
        m_axis, f_axis, rest, a, b = _gendered_space(rng, dim=30)
        stems = _stems(rng, 15, rest)
        x = stems + 0.6 * m_axis + 0.3 * rng.normal(size=stems.shape)
        y = stems + 0.6 * f_axis + 0.3 * rng.normal(size=stems.shape)
        rejected += gr.bad_test(x, y, a, b).p_value < 0.05
    assert 8 <= rejected <= 38, rejected


def test_bad_unmarked_word_reduces_to_weat_association():
    """An adjective with no gender mark (e.g. *inteligente*) is the same vector in X and Y."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(4, 10))
    a, b = rng.normal(size=(3, 10)), rng.normal(size=(3, 10))
    res = gr.bad_test(w, w, a, b)
    np.testing.assert_allclose(res.bias, gr.weat_association(w, a, b), atol=1e-12)


def test_mweat_is_equation_3():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(5, 7)), rng.normal(size=(4, 7))  # eq. 3 does not need pairs
    a, b = rng.normal(size=(3, 7)), rng.normal(size=(2, 7))
    sx = sum(_s_group(xi, a) - _s_group(xi, b) for xi in x)
    sy = sum(_s_group(yi, a) - _s_group(yi, b) for yi in y)
    expected = abs(abs(sx) - abs(sy))
    assert gr.mweat_statistic(x, y, a, b) == pytest.approx(expected)
    assert gr.mweat_statistic(y, x, a, b) == pytest.approx(expected)  # symmetric in X, Y
    assert gr.mweat_statistic(x, y, b, a) == pytest.approx(expected)  # and in A, B


def test_mweat_known_answer_and_paired_t_test():
    """Exact construction: A = {e0}, B = {e1}; x_i at angle theta from e0, y_i at angle phi from e1.

    Then s(x_i, A, B) = cos(theta), s(y_i, A, B) = -cos(phi) and eq. 3 gives n |cos(theta) - cos(phi)|.
    With theta = phi the grammatical-gender associations cancel (MWEAT = 0) although every masculine
    form differs from its feminine form, which the paired t-test sees.
    """
    dim, n = 40, 10
    eye = np.eye(dim)
    a, b = eye[[0]], eye[[1]]

    def forms(theta, phi, jitter):
        x = np.array([np.cos(theta + jitter[i]) * eye[0] + np.sin(theta + jitter[i]) * eye[2 + i] for i in range(n)])
        y = np.array([np.cos(phi) * eye[1] + np.sin(phi) * eye[2 + n + i] for i in range(n)])
        return x, y

    x, y = forms(np.pi / 3, np.pi / 4, np.zeros(n))
    assert gr.mweat_statistic(x, y, a, b) == pytest.approx(n * abs(np.cos(np.pi / 3) - np.cos(np.pi / 4)))

    jitter = np.linspace(-0.05, 0.05, n)
    x, y = forms(np.pi / 3, np.pi / 3, jitter)
    res = gr.mweat_test(x, y, a, b)
    np.testing.assert_allclose(res.masculine, np.cos(np.pi / 3 + jitter), atol=1e-12)
    np.testing.assert_allclose(res.feminine, -np.cos(np.pi / 3), atol=1e-12)
    assert res.statistic == pytest.approx(abs(np.cos(np.pi / 3 + jitter).sum() - n * np.cos(np.pi / 3)), abs=1e-12)
    assert res.statistic < 0.01
    ref = stats.ttest_rel(res.masculine, res.feminine)
    assert (res.t_statistic, res.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    assert res.p_value < 1e-10


def test_mweat_no_difference_is_not_significant():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(4, 25)), rng.normal(size=(4, 25))
    x = rng.normal(size=(30, 25))
    y = x + 0.01 * rng.normal(size=x.shape)  # the two forms are (almost) the same vector
    res = gr.mweat_test(x, y, a, b)
    assert res.statistic < 0.05
    assert res.p_value > 0.05


def test_input_validation():
    rng = np.random.default_rng(6)
    v = rng.normal(size=(3, 5))
    with pytest.raises(ValueError, match="X and Y must have the same number"):
        gr.bad_test(v, v[:2], v, v)
    with pytest.raises(ValueError, match="A and B must have the same number"):
        gr.bad_test(v, v, v, v[:2])
    with pytest.raises(ValueError, match="X and Y must have the same number"):
        gr.mweat_test(v, v[:2], v, v)
    with pytest.raises(ValueError, match="zero"):
        gr.bad_test(np.zeros((3, 5)), v, v, v)
    with pytest.raises(ValueError, match="different dimensions"):
        gr.bad_test(v, v, rng.normal(size=(3, 4)), rng.normal(size=(3, 4)))
