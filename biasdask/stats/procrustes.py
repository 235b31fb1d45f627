"""Orthogonal Procrustes alignment of two embedding spaces (Lauscher & Glavaš 2019 §3; Smith et al. 2017).

Given the vectors of the dictionary pairs, one pair per row, X_S (source language) and X_T (target
language), the orthogonal map W that minimises Σ_i |W x_S,i - x_T,i|² is W = U Vᵀ where U Σ Vᵀ is the SVD of
X_Tᵀ X_S. W acts on column vectors (W x_S ≈ x_T); on a matrix of row vectors the map is ``X @ W.T``
(:func:`apply_map`). The same W is ``scipy.linalg.orthogonal_procrustes(X_S, X_T)[0].T``.

Whether to normalise (unit length, mean-centring) before fitting is the caller's choice; Smith et al. and
XWEAT fit on unit-length vectors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.linalg import matmul, matmul_t, matvec, svd

__all__ = ["apply_map", "procrustes_map"]


def procrustes_map(source: ArrayLike, target: ArrayLike) -> NDArray[np.float64]:
    """The orthogonal map W = U Vᵀ, U Σ Vᵀ = SVD(X_Tᵀ X_S), that sends source rows onto target rows.

    Parameters
    ----------
    source
        X_S, shape (n, D_S): the source-language vectors of the n dictionary pairs.
    target
        X_T, shape (n, D_T): the target-language vectors of the same pairs, row by row.

    Returns
    -------
    numpy.ndarray
        W, shape (D_T, D_S), float64, with orthonormal rows or columns (orthogonal when D_S = D_T).
    """
    xs = np.asarray(source, dtype=np.float64)
    xt = np.asarray(target, dtype=np.float64)
    if xs.ndim != 2 or xt.ndim != 2 or xs.shape[0] != xt.shape[0] or xs.shape[0] == 0:
        raise ValueError(
            f"source and target must be 2-D with the same (non-zero) number of rows, got {xs.shape} and {xt.shape}"
        )
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(xt))):
        raise ValueError("source and target vectors must be finite")
    u, _, vt = svd(matmul(xt.T, xs))
    return matmul(u, vt)


def apply_map(vectors: ArrayLike, w: ArrayLike) -> NDArray[np.float64]:
    """Map row vectors of the source space into the target space: ``vectors @ w.T``.

    Parameters
    ----------
    vectors
        Shape (n, D_S) (or (D_S,) for one vector).
    w
        The map from :func:`procrustes_map`, shape (D_T, D_S).

    Returns
    -------
    numpy.ndarray
        Shape (n, D_T) (or (D_T,)), float64.
    """
    v = np.asarray(vectors, dtype=np.float64)
    return matvec(w, v) if v.ndim == 1 else matmul_t(v, w)
