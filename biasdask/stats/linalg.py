"""Products, solves and decompositions whose every bit is fixed by the data, not by the CPU.

numpy's ``@``, ``dot``, ``einsum`` with BLAS, ``linalg.norm`` of a whole vector and ``linalg.solve``,
``inv``, ``slogdet``, ``svd``, ``matrix_rank`` call BLAS and LAPACK, which choose their kernels when
they load, by CPU (OpenBLAS: ``OPENBLAS_CORETYPE`` Haswell, SkylakeX, Zen...), and sum in an order
that follows the kernel's vector width and blocking: the last bits of a product then depend on the
machine. Every number biasdask returns is computed here instead, in an order defined below, by
numba kernels compiled without fast-math flags: LLVM may vectorise them but neither reorders a sum
nor fuses a multiply and an add, so an SSE2, AVX2 or AVX-512 machine computes the same roundings.

Orders
    - :func:`dot`, :func:`matvec`, :func:`rowdot`, :func:`matmul` (*lane order*): term k of a dot
      product goes to lane k mod 8; each lane adds its terms in order of k from 0; the lanes are
      combined as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). So ``matmul(a, b)[i, j]`` is
      ``dot(a[i], b[:, j])`` and ``matvec(a, x)[i]`` is ``dot(a[i], x)``, bit for bit.
    - :func:`gram` (*row order*): entry (p, q) of vᵀv adds v[i, p] · v[i, q] over the rows i in order,
      as a plain loop would; the matrix is exactly symmetric.
    - :func:`solve`, :func:`inv`, :func:`slogdet`: Gaussian elimination with partial pivoting (the
      first row with the largest absolute pivot), rows eliminated in order, then back substitution.
    - :func:`svd`, :func:`matrix_rank`: one-sided Jacobi (Hestenes 1958) with cyclic sweeps over the
      column pairs in order until every pair is orthogonal to √m ulp, singular values sorted (stable)
      in decreasing order; they are accurate to a few ulp relative to the largest.

The speed of BLAS is kept where it matters: the Gram matrix and the products of many rows run tiles
of vector lanes written as LLVM IR (:mod:`biasdask.stats.simd`). Small products (at most
:data:`NUMPY_TERMS` terms) are summed in the same order by numpy instead, so that a call on a few words
does not pay numba's start-up (about 0.5 s in a fresh process); both give the same bits (tested).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.elementary import log_scalar
from biasdask.stats.simd import dot_tile, gram_tile

__all__ = [
    "NUMPY_TERMS",
    "dot",
    "gram",
    "inv",
    "lane_dot",
    "matmul",
    "matmul_t",
    "matrix_rank",
    "matvec",
    "rowdot",
    "slogdet",
    "solve",
    "svd",
]

_LANES = 8
NUMPY_TERMS = 2**18
"""Products of at most this many multiply-adds are summed by numpy (in the same order)."""
_ROW_BLOCK = 128  # rows of v per pass of the Gram tiles (300 KB at 300 dimensions: in L2)
_COL_BLOCK = 64  # rows of b per pass of the product tiles
_JACOBI_SWEEPS = 80


@njit(cache=True, nogil=True, inline="always")
def lane_dot(x, y):  # pragma: no cover (compiled)
    """Σ x[k]·y[k] in lane order (read as float64), for 1-D arrays of one length."""
    n = x.shape[0]
    m = n - n % _LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for k in range(0, m, _LANES):
        a0 += np.float64(x[k]) * np.float64(y[k])
        a1 += np.float64(x[k + 1]) * np.float64(y[k + 1])
        a2 += np.float64(x[k + 2]) * np.float64(y[k + 2])
        a3 += np.float64(x[k + 3]) * np.float64(y[k + 3])
        a4 += np.float64(x[k + 4]) * np.float64(y[k + 4])
        a5 += np.float64(x[k + 5]) * np.float64(y[k + 5])
        a6 += np.float64(x[k + 6]) * np.float64(y[k + 6])
        a7 += np.float64(x[k + 7]) * np.float64(y[k + 7])
    r = n - m
    if r > 0:
        a0 += np.float64(x[m]) * np.float64(y[m])
    if r > 1:
        a1 += np.float64(x[m + 1]) * np.float64(y[m + 1])
    if r > 2:
        a2 += np.float64(x[m + 2]) * np.float64(y[m + 2])
    if r > 3:
        a3 += np.float64(x[m + 3]) * np.float64(y[m + 3])
    if r > 4:
        a4 += np.float64(x[m + 4]) * np.float64(y[m + 4])
    if r > 5:
        a5 += np.float64(x[m + 5]) * np.float64(y[m + 5])
    if r > 6:
        a6 += np.float64(x[m + 6]) * np.float64(y[m + 6])
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@njit(cache=True, nogil=True)
def _matvec(a, x, out):  # pragma: no cover (compiled)
    for i in range(a.shape[0]):
        out[i] = lane_dot(a[i], x)


@njit(cache=True, nogil=True)
def _rowdot(a, b, out):  # pragma: no cover (compiled)
    for i in range(a.shape[0]):
        out[i] = lane_dot(a[i], b[i])


@njit(cache=True, nogil=True)
def _matmul_t(a, b, out):  # pragma: no cover (compiled)
    """out[i, j] = dot(a[i], b[j]) in lane order, by 2 x 2 tiles over blocks of b's rows."""
    m, n = a.shape[0], b.shape[0]
    if a.shape[1] == 0:  # empty rows: every dot product is 0 (and the tile reads at least one term)
        out[:] = 0.0
        return
    m2, n2 = m - m % 2, n - n % 2
    for j0 in range(0, n2, _COL_BLOCK):
        j1 = min(n2, j0 + _COL_BLOCK)
        for i in range(0, m2, 2):
            for j in range(j0, j1, 2):
                dot_tile(a, b, i, j, out)
    for i in range(m):  # the last row and column when m or n is odd
        for j in range(n2 if i < m2 else 0, n):
            out[i, j] = lane_dot(a[i], b[j])


@njit(cache=True, nogil=True)
def _gram(v, g):  # pragma: no cover (compiled)
    """g += vᵀv, each entry over the rows in order; the upper triangle by tiles, mirrored."""
    n, d = v.shape
    full = d - d % _LANES
    tiled = d - d % 4 if full else 0
    for i0 in range(0, n, _ROW_BLOCK):
        i1 = min(n, i0 + _ROW_BLOCK)
        for p0 in range(0, tiled, 4):
            for q0 in range(p0 - p0 % _LANES, full, _LANES):
                gram_tile(g, v, p0, q0, i0, i1)
        for i in range(i0, i1):  # what the tiles leave: columns from ``full`` on, rows from ``tiled`` on
            for p in range(d):
                vp = v[i, p]
                start = full if p < tiled else p
                for q in range(start, d):
                    g[p, q] += vp * v[i, q]
    for p in range(d):
        for q in range(p):
            g[p, q] = g[q, p]


def _lane_sum(terms: NDArray[np.float64]) -> NDArray[np.float64]:
    """The lane-order sum of ``terms`` along the last axis (numpy's twin of :func:`lane_dot`)."""
    n = terms.shape[-1]
    stop = n - n % _LANES
    steps = np.ascontiguousarray(
        np.moveaxis(terms[..., :stop].reshape(*terms.shape[:-1], stop // _LANES, _LANES), -2, 0)
    )
    lanes = np.zeros((*terms.shape[:-1], _LANES))
    for block in steps:  # each lane's terms in order of k
        lanes += block
    lanes[..., : n - stop] += terms[..., stop:]
    return ((lanes[..., 0] + lanes[..., 1]) + (lanes[..., 2] + lanes[..., 3])) + (
        (lanes[..., 4] + lanes[..., 5]) + (lanes[..., 6] + lanes[..., 7])
    )


def _float_matrix(a: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    return arr


def dot(x: ArrayLike, y: ArrayLike) -> float:
    """Σ x_k y_k in lane order.

    Examples
    --------
    >>> dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    32.0
    """
    xs, ys = np.ravel(np.asarray(x, dtype=np.float64)), np.ravel(np.asarray(y, dtype=np.float64))
    if xs.shape != ys.shape:
        raise ValueError(f"dot of vectors of lengths {xs.size} and {ys.size}")
    if xs.size <= NUMPY_TERMS:
        return float(_lane_sum(xs * ys))
    return float(_dot(xs, ys))


@njit(cache=True, nogil=True)
def _dot(x, y):  # pragma: no cover (compiled)
    return lane_dot(x, y)


def matvec(a: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    """``a @ x`` for a matrix (rows of float32 or float64, read as float64) and a vector: row i is
    ``dot(a[i], x)``."""
    arr = np.asarray(a)
    if arr.dtype != np.float32:
        arr = arr.astype(np.float64, copy=False)
    arr = np.ascontiguousarray(arr)
    vec = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != 2 or vec.ndim != 1 or arr.shape[1] != vec.shape[0]:
        raise ValueError(f"matvec of shapes {arr.shape} and {vec.shape}")
    if arr.size <= NUMPY_TERMS:
        return _lane_sum(arr.astype(np.float64) * vec)
    out = np.empty(arr.shape[0])
    _matvec(arr, vec, out)
    return out


def rowdot(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """``dot(a[i], b[i])`` for each row i of two matrices of one shape."""
    x, y = _float_matrix(a, "a"), _float_matrix(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"rowdot of shapes {x.shape} and {y.shape}")
    if x.size <= NUMPY_TERMS:
        return _lane_sum(x * y)
    out = np.empty(x.shape[0])
    _rowdot(x, y, out)
    return out


def matmul(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """``a @ b`` in lane order: entry (i, j) is ``dot(a[i], b[:, j])``. 1-D operands act as in
    ``numpy.matmul`` (a row or a column vector, dropped from the result).

    Examples
    --------
    >>> matmul([[1.0, 2.0], [3.0, 4.0]], [[5.0], [6.0]]).tolist()
    [[17.0], [39.0]]
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.ndim == 1 and y.ndim == 1:
        return np.asarray(dot(x, y))
    if y.ndim == 1:
        return matvec(x, y)
    if x.ndim == 1:
        return matvec(np.ascontiguousarray(y.T), x)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
        raise ValueError(f"matmul of shapes {x.shape} and {y.shape}")
    return matmul_t(x, np.ascontiguousarray(y.T))


def matmul_t(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """``a @ b.T`` in lane order: entry (i, j) is ``dot(a[i], b[j])`` (rows of equal length)."""
    x, y = _float_matrix(a, "a"), _float_matrix(b, "b")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"rows of lengths {x.shape[1]} and {y.shape[1]}")
    if x.shape[0] * y.size <= NUMPY_TERMS:
        return _lane_sum(x[:, None, :] * y[None, :, :])
    out = np.empty((x.shape[0], y.shape[0]))
    _matmul_t(x, y, out)
    return out


def gram(v: ArrayLike) -> NDArray[np.float64]:
    """vᵀv, each entry summed over the rows of ``v`` in order (exactly symmetric).

    Examples
    --------
    >>> gram([[1.0, 2.0], [3.0, 4.0]]).tolist()
    [[10.0, 14.0], [14.0, 20.0]]
    """
    rows = _float_matrix(v, "v")
    g = np.zeros((rows.shape[1], rows.shape[1]))
    if rows.shape[0] * rows.shape[1] ** 2 <= NUMPY_TERMS and rows.shape[0] <= 64:
        for row in rows:  # each entry over the rows in order
            g += np.outer(row, row)
        return g
    _gram(rows, g)
    return g


# ----------------------------------------------------------------------------------------------
# Solves


@njit(cache=True, nogil=True)
def _lu(a, b):  # pragma: no cover (compiled)
    """Gaussian elimination of ``a`` (in place) with partial pivoting, applied to the columns of ``b``;
    returns the sign of the row permutation (0 for a singular matrix)."""
    n = a.shape[0]
    sign = 1.0
    for k in range(n):
        pivot = k
        for i in range(k + 1, n):
            if abs(a[i, k]) > abs(a[pivot, k]):
                pivot = i
        if a[pivot, k] == 0.0:
            return 0.0
        if pivot != k:
            sign = -sign
            for j in range(n):
                a[k, j], a[pivot, j] = a[pivot, j], a[k, j]
            for j in range(b.shape[1]):
                b[k, j], b[pivot, j] = b[pivot, j], b[k, j]
        for i in range(k + 1, n):
            factor = a[i, k] / a[k, k]
            a[i, k] = 0.0
            for j in range(k + 1, n):
                a[i, j] -= factor * a[k, j]
            for j in range(b.shape[1]):
                b[i, j] -= factor * b[k, j]
    return sign


@njit(cache=True, nogil=True)
def _back(u, b):  # pragma: no cover (compiled)
    n = u.shape[0]
    for c in range(b.shape[1]):
        for i in range(n - 1, -1, -1):
            total = b[i, c]
            for j in range(i + 1, n):
                total -= u[i, j] * b[j, c]
            b[i, c] = total / u[i, i]


def _square(a: ArrayLike) -> NDArray[np.float64]:
    arr = _float_matrix(a, "a").copy()
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"a square matrix is needed, got shape {arr.shape}")
    return arr


def solve(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """x with a x = b (``b`` a vector or a matrix of columns).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``a`` is singular.

    Examples
    --------
    >>> solve([[2.0, 1.0], [1.0, 3.0]], [3.0, 5.0]).tolist()
    [0.8, 1.4]
    """
    u = _square(a)
    rhs = np.asarray(b, dtype=np.float64)
    vector = rhs.ndim == 1
    cols = np.array(rhs.reshape(rhs.shape[0], -1), dtype=np.float64, order="C")
    if cols.shape[0] != u.shape[0]:
        raise ValueError(f"solve of shapes {u.shape} and {rhs.shape}")
    if _lu(u, cols) == 0.0:
        raise np.linalg.LinAlgError("Singular matrix")
    _back(u, cols)
    return cols[:, 0] if vector else cols


def inv(a: ArrayLike) -> NDArray[np.float64]:
    """The inverse of a square matrix (:func:`solve` of the identity)."""
    n = np.shape(a)[0]
    return solve(a, np.eye(n))


def slogdet(a: ArrayLike) -> tuple[float, float]:
    """(sign, log |det a|) from the elimination's pivots; (0, -inf) for a singular matrix."""
    u = _square(a)
    sign = _lu(u, np.empty((u.shape[0], 0)))
    if sign == 0.0:
        return 0.0, -math.inf
    diagonal = np.diag(u)
    sign *= float(np.prod(np.sign(diagonal)))
    return sign, float(_sum_logs(np.abs(diagonal)))


@njit(cache=True, nogil=True)
def _sum_logs(x):  # pragma: no cover (compiled)
    total = 0.0
    for i in range(x.shape[0]):
        total += log_scalar(x[i])
    return total


# ----------------------------------------------------------------------------------------------
# Singular value decomposition


@njit(cache=True, nogil=True)
def _jacobi(w, v, floor):  # pragma: no cover (compiled)
    """One-sided Jacobi on the rows of ``w`` (n rows of length m: the columns of A), rotating the rows
    of ``v`` (n x n, the identity at the start) alike, until every pair of rows is orthogonal to
    √m ulp; rows of squared length below ``floor`` count as zero (rounding noise)."""
    n = w.shape[0]
    tol = math.sqrt(w.shape[1]) * 2.0**-52
    for _ in range(_JACOBI_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                alpha = lane_dot(w[p], w[p])
                beta = lane_dot(w[q], w[q])
                if alpha <= floor or beta <= floor:
                    continue
                gamma = lane_dot(w[p], w[q])
                if abs(gamma) <= tol * math.sqrt(alpha) * math.sqrt(beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                if abs(zeta) > 1e150:
                    t = 0.5 / zeta
                else:
                    t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                    if zeta < 0.0:
                        t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for k in range(w.shape[1]):
                    wp, wq = w[p, k], w[q, k]
                    w[p, k] = c * wp - s * wq
                    w[q, k] = s * wp + c * wq
                for k in range(n):
                    vp, vq = v[p, k], v[q, k]
                    v[p, k] = c * vp - s * vq
                    v[q, k] = s * vp + c * vq
        if not rotated:
            return True
    return False


@njit(cache=True, nogil=True)
def _complete(u, rank):  # pragma: no cover (compiled)
    """Rows ``rank``... of ``u`` (orthonormal rows before them) filled with unit vectors orthogonal to all
    before: Gram-Schmidt, twice, of the standard basis vectors e_0, e_1, ... in order."""
    m = u.shape[1]
    row = rank
    candidate = 0
    while row < u.shape[0] and candidate < m:
        for k in range(m):
            u[row, k] = 0.0
        u[row, candidate] = 1.0
        candidate += 1
        for _ in range(2):
            for r in range(row):
                proj = lane_dot(u[r], u[row])
                for k in range(m):
                    u[row, k] -= proj * u[r, k]
        length = math.sqrt(lane_dot(u[row], u[row]))
        if length > 0.5:  # well clear of the span of the rows before
            for k in range(m):
                u[row, k] /= length
            row += 1


def svd(a: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The thin singular value decomposition a = u diag(s) vt (``numpy.linalg.svd`` with
    ``full_matrices=False``), by one-sided Jacobi.

    Returns
    -------
    u : ndarray, shape (m, k)
    s : ndarray, shape (k,)
        Decreasing, k = min(m, n).
    vt : ndarray, shape (k, n)
        The columns of u belonging to zero singular values are completed to an orthonormal set in a
        fixed way (Gram-Schmidt of the standard basis); signs are those the rotations give.

    Raises
    ------
    numpy.linalg.LinAlgError
        Non-finite entries, or no convergence.

    Examples
    --------
    >>> u, s, vt = svd([[3.0, 0.0], [0.0, -2.0]])
    >>> s.tolist(), bool(np.allclose(u * s @ vt, [[3.0, 0.0], [0.0, -2.0]]))
    ([3.0, 2.0], True)
    """
    x = _float_matrix(a, "a")
    if not np.all(np.isfinite(x)):
        raise np.linalg.LinAlgError("SVD of a matrix with non-finite entries")
    if x.shape[0] < x.shape[1]:
        u, s, vt = svd(x.T)
        return np.ascontiguousarray(vt.T), s, np.ascontiguousarray(u.T)
    m, n = x.shape
    w = np.ascontiguousarray(x.T)  # the columns of a, as rows
    v = np.eye(n)
    # a column shorter than m ulp of the whole matrix is rounding noise: not rotated, and its singular
    # vector is completed like that of a zero singular value
    floor = (m * 2.0**-52) ** 2 * float(np.sum(np.square(x)))
    if not _jacobi(w, v, floor):
        raise np.linalg.LinAlgError("SVD: Jacobi rotations did not converge")
    norms = np.sqrt(np.array([dot(row, row) for row in w]))
    order = np.argsort(-norms, kind="stable")
    s, w, v = norms[order], w[order], v[order]
    rank = int(np.count_nonzero(s * s > floor))
    w[:rank] /= s[:rank, None]
    _complete(w, rank)
    return np.ascontiguousarray(w.T), s, v


def matrix_rank(a: ArrayLike) -> int:
    """The number of singular values above ``s.max() * max(m, n) * eps`` (numpy's default tolerance)."""
    x = _float_matrix(a, "a")
    if x.size == 0:
        return 0
    s = svd(x)[1]
    return int(np.count_nonzero(s > s[0] * max(x.shape) * np.finfo(np.float64).eps))
