"""Association of words with two attribute sets (SPEC §1; seed 000 eq. u, seed 002 eq. 2).

u(w) = mean_a cos(w, a) - mean_b cos(w, b) = ŵ · (mean_a â - mean_b b̂), so over a whole vocabulary the
association is one matrix-vector product with the *attribute direction* followed by a division by the
word norms.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray


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
        Raw vectors of the attribute words found in the vocabulary, shape (n_a, D) and (n_b, D); a zero
        vector has no direction and is refused (ValueError).

    Returns
    -------
    numpy.ndarray
        Shape (D,), float64.
    """
    a = unit_rows(a_vectors)
    b = unit_rows(b_vectors)
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise ValueError("both attribute sets need at least one vector")
    return a.mean(axis=0) - b.mean(axis=0)


# reassoc + contract let the compiler vectorise the sum (3x a plain loop, as fast as BLAS sgemv) and
# nothing else: NaN and zero-norm handling keep their IEEE meaning. The summation order then follows
# the CPU's vector width, so u can differ in its last float32 bit between CPU types (as with any BLAS);
# on one type of machine it is identical whatever the workers or chunks.
@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _association_kernel(vectors, norms, direction, out):
    for i in range(vectors.shape[0]):
        if norms[i] > 0:
            acc = 0.0
            for j in range(vectors.shape[1]):
                acc += vectors[i, j] * direction[j]
            out[i] = acc / norms[i]
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
    next blocks (measured: 1.6x a plain read of the store with OpenBLAS, ~1.1x with this loop).
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    out = np.empty(vectors.shape[0], dtype=np.float32)
    _association_kernel(vectors, np.asarray(norms, dtype=np.float64), np.asarray(direction, dtype=np.float64), out)
    return out
