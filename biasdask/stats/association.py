"""Association of words with two attribute sets (the full-vocabulary test's u; Lauscher & Glavaš 2019 eq. 2).

u(w) = mean_a cos(w, a) - mean_b cos(w, b) = ŵ · (mean_a â - mean_b b̂), so over a whole vocabulary the
association is one matrix-vector product with the *attribute direction* followed by a division by the
word norms.

The per-word association is a choice (:data:`ASSOCIATIONS`); each is computed by the same compiled
matrix-vector kernel, one pass over a block of raw word vectors, with > 0 meaning "closer to A":

- ``"cosine"``: u(w) above (the full-vocabulary test's), the default.
- ``"euclidean"``: the relative norm distance of one word (the summand of Garg et al. 2018's RND),
  ``|ŵ - mean_b b̂| - |ŵ - mean_a â|`` on unit vectors: > 0 when ŵ is closer to A's mean (RND's
  summand is ``|s - mean A| - |s - mean B|``, the opposite sign).
- ``"ripa"``: RIPA (Ethayarajh et al. 2019), ``w · r`` with the raw word vector w and the relational
  vector ``r = mean_i (a_i - b_i) / |a_i - b_i|`` of PAIRED attribute words (WEFE's RIPA averages the
  per-pair scores, which is the same number, as the score is linear in r).
- ``"semaxis"``: SemAxis (An et al. 2018; sweater's ``semaxis`` with ``l = 0``), ``cos(w, v)`` with the
  axis ``v = mean_a a - mean_b b`` of the raw attribute vectors.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.linalg import dot
from biasdask.stats.simd import ROW_DOTS, row_dot, row_dots

__all__ = [
    "ASSOCIATIONS",
    "LINEAR_ASSOCIATIONS",
    "associate",
    "Association",
    "association",
    "association_axes",
    "attribute_direction",
    "linear_directions",
    "pair_associations",
    "unit_rows",
]


#: The per-word associations (the study option ``associations``); ``"cosine"`` is the full-vocabulary test's u.
Association = Literal["cosine", "euclidean", "ripa", "semaxis"]
ASSOCIATIONS: tuple[str, ...] = ("cosine", "euclidean", "ripa", "semaxis")


def unit_rows(vectors: ArrayLike) -> NDArray[np.float64]:
    """Each vector (last axis) scaled to unit length, as float64.

    The one normalisation of the stats layer's direction-based measures. A vector of length zero has
    no direction: it is refused, never silently kept as the origin (which would pull a mean towards
    0). Per-word passes over a vocabulary do not use this: their kernels score a zero vector NaN.

    Raises
    ------
    ValueError
        A scalar, or a vector of zero or non-finite length.

    Examples
    --------
    >>> unit_rows([[3.0, 4.0], [0.0, 2.0]]).tolist()
    [[0.6, 0.8], [0.0, 1.0]]
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim == 0:
        raise ValueError("expected vectors, got a scalar")
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} vector(s) have zero or non-finite length; their direction is undefined")
    return v / norms


def attribute_direction(a_vectors: ArrayLike, b_vectors: ArrayLike) -> NDArray[np.float64]:
    """The vector ``mean_a â - mean_b b̂`` whose dot product with ŵ is u(w).

    Parameters
    ----------
    a_vectors, b_vectors
        Raw vectors of the attribute words found in the vocabulary, shape (n_a, D) and (n_b, D), or a
        batch of pairs of sets, shape (..., n_a, D) and (..., n_b, D); a zero vector has no direction
        and is refused (ValueError).

    Returns
    -------
    numpy.ndarray
        Shape (D,) (or (..., D) for a batch), float64.
    """
    a = unit_rows(a_vectors)
    b = unit_rows(b_vectors)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-2] == 0 or b.shape[-2] == 0:
        raise ValueError("both attribute sets need at least one vector")
    return a.mean(axis=-2) - b.mean(axis=-2)


#: The associations linear in an attribute direction δ: u(w) = v_w · δ with v_w = ŵ (``cosine``,
#: ``semaxis``) or the raw w (``ripa``); see :func:`linear_directions`.
LINEAR_ASSOCIATIONS: tuple[str, ...] = ("cosine", "ripa", "semaxis")


def linear_directions(kind: Association, a_vectors: ArrayLike, b_vectors: ArrayLike) -> NDArray[np.float64]:
    """The direction δ of a linear association (u(w) = v_w · δ), for one pair of sets or a batch.

    Parameters
    ----------
    kind
        ``"cosine"`` (δ = mean_a â - mean_b b̂, v_w = ŵ), ``"semaxis"`` (δ = the unit axis
        (mean_a a - mean_b b) / |...|, v_w = ŵ) or ``"ripa"`` (δ = mean_i (a_i - b_i)/|a_i - b_i| over
        paired rows, v_w = w raw).
    a_vectors, b_vectors
        Raw attribute vectors, shape (n_a, D) and (n_b, D), or batches (..., n_a, D) and (..., n_b, D).

    Returns
    -------
    numpy.ndarray
        Shape (D,) or (..., D), float64; for one pair the row :func:`association_axes` returns, bit for
        bit.

    Raises
    ------
    ValueError
        ``"euclidean"`` (not linear in a direction) or an unknown kind, and the errors of
        :func:`association_axes`.

    Examples
    --------
    >>> linear_directions("cosine", [[2.0, 0.0]], [[0.0, 3.0]]).tolist()
    [1.0, -1.0]
    """
    if kind == "cosine":
        return attribute_direction(a_vectors, b_vectors)
    if kind not in LINEAR_ASSOCIATIONS:
        raise ValueError(f"association {kind!r} is not linear in a direction; linear ones: {list(LINEAR_ASSOCIATIONS)}")
    a = np.asarray(a_vectors, dtype=np.float64)
    b = np.asarray(b_vectors, dtype=np.float64)
    a = a[None, :] if a.ndim == 1 else a
    b = b[None, :] if b.ndim == 1 else b
    if a.shape[-2] == 0 or b.shape[-2] == 0:
        raise ValueError("both attribute sets need at least one vector")
    if kind == "ripa":
        if a.shape != b.shape:
            raise ValueError(
                f"ripa pairs the i-th word of A with the i-th of B: A has {a.shape[-2]} words, B {b.shape[-2]}"
            )
        return unit_rows(a - b).mean(axis=-2)
    unit_rows(np.concatenate([a, b], axis=-2))  # refuses zero vectors, as the other associations do
    return unit_rows(a.mean(axis=-2) - b.mean(axis=-2))


@njit(cache=True, nogil=True)
def _association_kernel(vectors, norms, direction, out):  # pragma: no cover (compiled)
    for i in range(vectors.shape[0]):
        if norms[i] > 0:
            out[i] = row_dot(vectors, i, direction) / norms[i]
        else:
            out[i] = np.nan


def association(vectors: NDArray, norms: NDArray, direction: NDArray) -> NDArray[np.float32]:
    """u for a block of words: ``(vectors @ direction) / norms``; NaN where the norm is 0.

    Parameters
    ----------
    vectors
        Raw vectors, shape (n, D), float32.
    norms
        Their L2 lengths, shape (n,).
    direction
        The attribute direction from :func:`attribute_direction`.

    Returns
    -------
    numpy.ndarray
        Shape (n,), float32, accumulated in float64.

    Notes
    -----
    A compiled single-threaded loop rather than BLAS: Dask already runs one block per thread, and a
    multithreaded BLAS called from several of them at once competes with the decompression of the
    next blocks (docs/benchmarks.md). Each word's dot product is summed in the lane order of
    :mod:`biasdask.stats.linalg`, its eight lanes one vector (:func:`biasdask.stats.simd.row_dot`), so u
    is the same to the bit on any CPU.
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    out = np.empty(vectors.shape[0], dtype=np.float32)
    _association_kernel(vectors, np.asarray(norms, dtype=np.float64), np.asarray(direction, dtype=np.float64), out)
    return out


def association_axes(kind: Association, a_vectors: ArrayLike, b_vectors: ArrayLike) -> NDArray[np.float64]:
    """The vectors a block of words is projected on for association ``kind`` (see the module docstring).

    Parameters
    ----------
    kind
        One of :data:`ASSOCIATIONS`.
    a_vectors, b_vectors
        Raw vectors of the attribute words, shape (n_a, D) and (n_b, D). ``"ripa"`` pairs row i of A
        with row i of B, so it needs n_a = n_b and no pair of identical vectors.

    Returns
    -------
    numpy.ndarray
        Shape (k, D), float64: ``"cosine"`` the attribute direction (:func:`attribute_direction`);
        ``"euclidean"`` the means of the unit attribute vectors of A and of B; ``"ripa"`` the
        relational vector r; ``"semaxis"`` the unit axis v / |v|.

    Raises
    ------
    ValueError
        An unknown kind, an empty set or a zero vector; for ``"ripa"`` sets of different sizes
        (unpaired words) or a pair of identical vectors; for ``"semaxis"`` equal means.
    """
    if kind in LINEAR_ASSOCIATIONS:
        a = np.atleast_2d(np.asarray(a_vectors, dtype=np.float64))
        b = np.atleast_2d(np.asarray(b_vectors, dtype=np.float64))
        return linear_directions(kind, a, b)[None, :]
    if kind == "euclidean":
        a = np.atleast_2d(np.asarray(a_vectors, dtype=np.float64))
        b = np.atleast_2d(np.asarray(b_vectors, dtype=np.float64))
        if a.shape[0] == 0 or b.shape[0] == 0:
            raise ValueError("both attribute sets need at least one vector")
        return np.stack([unit_rows(a).mean(axis=0), unit_rows(b).mean(axis=0)])
    raise ValueError(f"unknown association {kind!r}; choose from {list(ASSOCIATIONS)}")


def associate(kind: Association, vectors: NDArray, norms: NDArray, axes: NDArray) -> NDArray[np.float32]:
    """The association ``kind`` of a block of words; NaN where the norm is 0.

    Parameters
    ----------
    kind
        One of :data:`ASSOCIATIONS`.
    vectors
        Raw vectors, shape (n, D), float32.
    norms
        Their L2 lengths, shape (n,).
    axes
        From :func:`association_axes` for the same ``kind``.

    Returns
    -------
    numpy.ndarray
        Shape (n,), float32; ``"cosine"`` is exactly :func:`association`.
    """
    if kind in ("cosine", "semaxis"):
        return association(vectors, norms, axes[0])
    if kind == "ripa":  # the raw vector's projection: divide by 1, not by the norm
        return association(vectors, (np.asarray(norms) > 0).astype(np.float64), axes[0])
    if kind == "euclidean":
        to_a, to_b = (association(vectors, norms, m) for m in axes)
        return _euclidean(to_a, to_b, axes)
    raise ValueError(f"unknown association {kind!r}; choose from {list(ASSOCIATIONS)}")


def _euclidean(projection_a: NDArray, projection_b: NDArray, axes: NDArray) -> NDArray[np.float32]:
    """The euclidean association from the projections (float32) of the unit words on the two means ``axes``."""
    # |ŵ - m|^2 = 1 - 2 ŵ·m + |m|^2 for a unit ŵ, so two projections give both distances
    to_a, to_b = (
        np.sqrt(np.maximum(1.0 - 2.0 * projection.astype(np.float64) + dot(m, m), 0.0))
        for projection, m in zip((projection_a, projection_b), axes)
    )
    return (to_b - to_a).astype(np.float32)


@njit(cache=True, nogil=True)
def _directions_kernel(vectors, norms, directions, out):  # pragma: no cover (compiled)
    k = directions.shape[0]
    dots = np.empty(k)
    for i in range(vectors.shape[0]):
        if norms[i] > 0:
            p = 0
            while p + ROW_DOTS <= k:
                row_dots(vectors, i, directions, p, dots)
                p += ROW_DOTS
            for q in range(p, k):
                dots[q] = row_dot(vectors, i, directions[q])
            for q in range(k):
                out[i, q] = dots[q] / norms[i]
        else:
            out[i, :] = np.nan


def _associations(vectors: NDArray, norms: NDArray, directions: NDArray) -> NDArray[np.float32]:
    """:func:`association` of a block of words with each row of ``directions`` (shape (k, D)), in one
    pass over the words: shape (n, k), column j the bits of ``association(vectors, norms, directions[j])``."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    out = np.empty((vectors.shape[0], len(directions)), dtype=np.float32)
    directions = np.ascontiguousarray(directions, dtype=np.float64)
    _directions_kernel(vectors, np.asarray(norms, dtype=np.float64), directions, out)
    return out


def pair_associations(kind: Association, vectors: NDArray, norms: NDArray, pair_axes: NDArray) -> NDArray[np.float64]:
    """The association ``kind`` of a block of words with each base pair on its own: the items whose
    agreement over a vocabulary is the internal consistency of the pairs.

    Parameters
    ----------
    kind
        One of :data:`ASSOCIATIONS`.
    vectors, norms
        As for :func:`associate`.
    pair_axes
        Shape (k, m, D): pair j's :func:`association_axes` (of its two words alone).

    Returns
    -------
    numpy.ndarray
        Shape (n, k), float64: column j is :func:`associate` with pair j's axes (float32, as u), widened;
        NaN where the norm is 0.

    Examples
    --------
    >>> axes = np.stack([association_axes("cosine", [[1.0, 0.0]], [[0.0, 1.0]]),
    ...                  association_axes("cosine", [[1.0, 1.0]], [[-1.0, 1.0]])])
    >>> pair_associations("cosine", np.array([[2.0, 0.0]], np.float32), np.array([2.0]), axes).round(4).tolist()
    [[1.0, 1.4142]]
    """
    pair_axes = np.asarray(pair_axes, dtype=np.float64)
    if kind in ("cosine", "semaxis", "ripa"):
        if kind == "ripa":  # the raw vector's projection, as in associate
            norms = (np.asarray(norms) > 0).astype(np.float64)
        return _associations(vectors, norms, pair_axes[:, 0]).astype(np.float64)
    if kind == "euclidean":  # both means of every pair in one pass
        projections = _associations(vectors, norms, pair_axes.reshape(-1, pair_axes.shape[-1]))
        out = np.empty((projections.shape[0], len(pair_axes)))
        for j, axes in enumerate(pair_axes):
            out[:, j] = _euclidean(projections[:, 2 * j], projections[:, 2 * j + 1], axes)
        return out
    raise ValueError(f"unknown association {kind!r}; choose from {list(ASSOCIATIONS)}")
