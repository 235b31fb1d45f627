"""biasdask's own products, solves and decompositions (biasdask.stats.linalg) and exp/log
(biasdask.stats.elementary): their documented order of operations, bit for bit against plain Python
re-implementations, and their values against numpy, scipy and mpmath."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from biasdask.stats import elementary as el
from biasdask.stats import linalg as la


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Products through the compiled kernels, or through their numpy twin for small sizes: the same bits."""
    monkeypatch.setattr(la, "NUMPY_TERMS", 0 if request.param == "compiled" else 2**40)
    return request.param


def lane_oracle(x, y) -> float:
    """The lane order written out: term k in lane k mod 8, lanes in index order, a fixed tree."""
    lanes = [0.0] * 8
    for k, (a, b) in enumerate(zip(x, y)):
        lanes[k % 8] += float(a) * float(b)
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))


def row_oracle(v) -> np.ndarray:
    """The Gram matrix with each entry summed over the rows in order."""
    d = v.shape[1]
    g = [[0.0] * d for _ in range(d)]
    for row in v.tolist():
        for p in range(d):
            for q in range(d):
                g[p][q] += row[p] * row[q]
    return np.array(g)


def _data(rng, shape, scale=1.0):
    x = rng.normal(0.0, scale, shape) * np.exp(rng.uniform(-8, 8, shape))  # many magnitudes: order matters
    if x.size:
        x.flat[rng.integers(0, x.size, max(1, x.size // 20))] = -0.0
    return x


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 23, 300, 301])
def test_dot_matvec_rowdot_matmul_follow_the_lane_order_bit_for_bit(n, path):
    rng = np.random.default_rng(n)
    a, b = _data(rng, (5, n)), _data(rng, (n, 4))
    assert la.dot(a[0], b[:, 0]) == lane_oracle(a[0], b[:, 0])
    got = la.matmul(a, b)
    want = np.array([[lane_oracle(a[i], b[:, j]) for j in range(4)] for i in range(5)])
    assert got.tobytes() == want.tobytes()
    assert la.matvec(a, b[:, 1]).tobytes() == want[:, 1].tobytes()
    assert la.matmul_t(a, np.ascontiguousarray(b.T)).tobytes() == want.tobytes()
    c = _data(rng, (5, n))
    assert la.rowdot(a, c).tobytes() == np.array([lane_oracle(a[i], c[i]) for i in range(5)]).tobytes()
    x32 = a.astype(np.float32)
    assert la.matvec(x32, b[:, 2]).tobytes() == np.array([lane_oracle(r, b[:, 2]) for r in x32]).tobytes()


@pytest.mark.parametrize(("m", "n", "width"), [(1, 1, 5), (2, 2, 8), (67, 131, 300), (3, 130, 17)])
def test_the_tiled_product_equals_the_lane_order_on_every_tile_and_edge(m, n, width, path):
    rng = np.random.default_rng(m * n)
    a, b = _data(rng, (m, width)), _data(rng, (n, width))
    got = la.matmul_t(a, b)
    for i in range(m):
        for j in range(n):
            assert got[i, j] == lane_oracle(a[i], b[j]), (i, j)
    assert np.allclose(got, a @ b.T, rtol=1e-12, atol=1e-300 + 1e-12 * np.abs(a).max() * np.abs(b).max() * width)


@pytest.mark.parametrize(("n", "d"), [(1, 1), (5, 3), (130, 7), (257, 12), (300, 45), (129, 301)])
def test_the_gram_matrix_sums_each_entry_over_the_rows_in_order(n, d, path):
    v = _data(np.random.default_rng(d), (n, d))
    g = la.gram(v)
    assert g.tobytes() == row_oracle(v).tobytes()
    assert np.array_equal(g, g.T)


def test_solve_inv_slogdet_match_numpy():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(7, 7))
    b = rng.normal(size=(7, 3))
    np.testing.assert_allclose(la.solve(a, b), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(la.solve(a, b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(la.inv(a), np.linalg.inv(a), rtol=1e-11, atol=1e-12)
    sign, logdet = la.slogdet(a)
    want = np.linalg.slogdet(a)
    assert sign == want.sign and logdet == pytest.approx(want.logabsdet, rel=1e-13)
    assert la.slogdet(np.ones((3, 3))) == (0.0, -math.inf)
    with pytest.raises(np.linalg.LinAlgError):
        la.solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0])
    with pytest.raises(ValueError, match="square"):
        la.solve(np.ones((2, 3)), [1.0, 1.0])


@pytest.mark.parametrize("shape", [(1, 1), (6, 3), (3, 6), (20, 50), (50, 50)])
def test_svd_decomposes_like_lapack(shape):
    a = np.random.default_rng(shape[0]).normal(size=shape)
    u, s, vt = la.svd(a)
    k = min(shape)
    assert u.shape == (shape[0], k) and s.shape == (k,) and vt.shape == (k, shape[1])
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12, atol=1e-13 * s[0])
    assert np.all(np.diff(s) <= 0)
    np.testing.assert_allclose((u * s) @ vt, a, atol=1e-12 * s[0])
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(vt @ vt.T, np.eye(k), atol=1e-12)


def test_svd_of_a_rank_deficient_matrix_completes_the_singular_vectors():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(10, 3)) @ rng.normal(size=(3, 6))
    u, s, vt = la.svd(a)
    assert la.matrix_rank(a) == np.linalg.matrix_rank(a) == 3
    assert np.all(s[3:] < 1e-13 * s[0])
    np.testing.assert_allclose(u.T @ u, np.eye(6), atol=1e-12)
    np.testing.assert_allclose((u * s) @ vt, a, atol=1e-12 * s[0])
    pairs = np.concatenate([a[:2], -a[:2]])  # the shape of a PCA of definitional pairs: ± rows
    assert la.matrix_rank(pairs) == 2
    with pytest.raises(np.linalg.LinAlgError):
        la.svd([[np.nan, 1.0]])


def _ulps(got: float, exact: mpmath.mpf) -> float:
    return abs(float((mpmath.mpf(got) - exact) / math.ulp(float(exact))))


def test_exp_and_log_are_within_one_ulp():
    mpmath.mp.prec = 120
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(-745, 709, 400), rng.uniform(-1, 1, 200), [1e-20, -1e-20, 0.5, 709.7]])
    for x, e in zip(xs, el.exp(xs)):
        assert _ulps(e, mpmath.exp(mpmath.mpf(x))) < 1.0, x
    ys = np.concatenate(
        [np.exp(rng.uniform(-740, 709, 400)), rng.uniform(0.5, 2, 200), [5e-324, 2.0**-1030, 1.0 + 2**-52]]
    )
    for y, lg in zip(ys, el.log(ys)):
        if y != 1.0:
            assert _ulps(lg, mpmath.log(mpmath.mpf(y))) < 1.0, y
    assert el.exp(0.0) == 1.0 and el.log(1.0) == 0.0 and el.log(2.0) == math.log(2.0)
    assert el.exp(710.0) == math.inf and el.exp(-746.0) == 0.0 and math.isnan(el.exp(math.nan))
    assert el.log(0.0) == -math.inf and math.isnan(el.log(-1.0)) and el.log(math.inf) == math.inf


def test_power_and_the_decimal_powers_of_ten():
    x = np.array([0.0, 0.25, 1.0, 3.0])
    np.testing.assert_allclose(el.power(x, 0.8), x**0.8, rtol=4e-16)
    assert el.power(x, 1.0).tolist() == x.tolist() and el.power(0.0, 0.0) == 1.0
    assert [el.exp10(k) for k in range(-5, 23)] == [float(f"1e{k}") for k in range(-5, 23)]
    assert [el.log10(10.0**k) for k in range(23)] == [float(k) for k in range(23)]
    assert el.exp10(0.5) == float(mpmath.mpf(10) ** mpmath.mpf(0.5))
