"""Debiasing formulas: removing a direction from vectors (Bolukbasi et al. 2016's hard debiasing).

With g a unit bias direction (e.g. :func:`biasdask.stats.directions.pca_direction` of the definitional
pairs) and ``drop(v) = v - <v, g> g`` (the rejection of v from g):

- :func:`project_out`: ``drop(v)`` for every row, lengths otherwise kept (the linear map I - g g^T);
- :func:`neutralize`: Bolukbasi's *neutralise* step as debiaswe implements it: every row is scaled to
  unit length (the algorithm works on a normalised embedding), the rows of neutral words lose their g
  component and are scaled to unit length again; zero vectors stay zero;
- :func:`equalize`: Bolukbasi's *equalise* step for one pair (a, b) of unit vectors: with
  mu = (a + b) / 2, y = drop(mu) and z = sqrt(1 - |y|^2), a' = y + z g and b' = y - z g, z taking
  the sign of <a - b, g> of the pair *before* neutralisation (``side``), so that each word stays on
  the side it had. (debiaswe takes it after neutralisation, where a pair whose words are not
  gender-specific has <a - b, g> = 0 up to rounding, and lands on a side at random.) a' and b' are unit vectors that differ
  only along g, so every vector orthogonal to g (every neutralised word) is equidistant from them.

Functions take arrays of shape (n, D) and never embedding stores; results are float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.linalg import dot, matvec

__all__ = ["equalize", "neutralize", "project_out"]


def _unit(g: ArrayLike) -> NDArray[np.float64]:
    g = np.asarray(g, dtype=np.float64)
    n = np.sqrt(dot(g, g)) if g.ndim == 1 else np.nan
    if g.ndim != 1 or not np.isfinite(n) or n == 0:
        raise ValueError(f"the direction must be a non-zero finite vector, got shape {g.shape} and length {n}")
    return g / n


def _check(vectors: ArrayLike, g: NDArray[np.float64]) -> NDArray[np.float64]:
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != g.shape[0]:
        raise ValueError(f"expected vectors of shape (n, {g.shape[0]}), got {v.shape}")
    return v


def project_out(vectors: ArrayLike, g: ArrayLike) -> NDArray[np.float64]:
    """Remove the component along ``g`` from every row: ``v - <v, ĝ> ĝ``.

    Parameters
    ----------
    vectors : array_like, shape (n, D)
    g : array_like, shape (D,)
        The direction (any non-zero length).

    Returns
    -------
    ndarray, shape (n, D)
        Rows orthogonal to ``g``; a row's length shrinks by its component along ``g`` only.

    Examples
    --------
    >>> project_out([[3.0, 4.0]], [1.0, 0.0])
    array([[0., 4.]])
    """
    gu = _unit(g)
    v = _check(vectors, gu)
    return v - np.outer(matvec(v, gu), gu)


def neutralize(vectors: ArrayLike, g: ArrayLike, neutral: ArrayLike | None = None) -> NDArray[np.float64]:
    """Bolukbasi's neutralise step on a normalised embedding (debiaswe's ``debias``, first loop).

    Parameters
    ----------
    vectors : array_like, shape (n, D)
        Raw vectors.
    g : array_like, shape (D,)
        The bias direction.
    neutral : array_like of bool, shape (n,), optional
        Rows to neutralise (default: all); the others (gender-specific words) are only scaled to unit
        length.

    Returns
    -------
    ndarray, shape (n, D)
        Unit rows; the neutral ones have a zero component along ``g``. Zero rows stay zero, and so does
        a neutral row parallel to ``g`` (nothing of it is left).

    Examples
    --------
    >>> neutralize([[3.0, 4.0], [2.0, 0.0]], [1.0, 0.0], neutral=[True, False])
    array([[0., 1.],
           [1., 0.]])
    """
    gu = _unit(g)
    v = _check(vectors, gu)
    mask = np.ones(len(v), dtype=bool) if neutral is None else np.asarray(neutral, dtype=bool)
    if mask.shape != (len(v),):
        raise ValueError(f"neutral must have one flag per row ({len(v)}), got shape {mask.shape}")
    out = _scale_to_unit(v)
    out[mask] = _scale_to_unit(out[mask] - np.outer(matvec(out[mask], gu), gu))
    return out


def _scale_to_unit(v: NDArray[np.float64]) -> NDArray[np.float64]:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    # A rejection this short is rounding noise of a vector parallel to g: it has no direction left.
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 1e-12)


def equalize(
    a: ArrayLike, b: ArrayLike, g: ArrayLike, *, side: tuple[ArrayLike, ArrayLike] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bolukbasi's equalise step for one pair (debiaswe's ``debias``, second loop).

    Parameters
    ----------
    a, b : array_like, shape (D,)
        The pair's vectors (scaled to unit length here, as in the normalised embedding).
    g : array_like, shape (D,)
        The bias direction.
    side : (array_like, array_like), optional
        The pair's vectors before neutralisation, whose <â - b̂, ĝ> gives each word its side (default:
        ``a`` and ``b``).

    Returns
    -------
    (ndarray, ndarray)
        a' = y + z ĝ and b' = y - z ĝ, with y = mu - <mu, ĝ> ĝ, mu = (â + b̂) / 2 and
        z = ±sqrt(1 - |y|^2), positive when <â - b̂, ĝ> >= 0 (â, b̂ of ``side`` when given).

    Examples
    --------
    >>> a2, b2 = equalize([1.0, 1.0], [-1.0, 3.0], [1.0, 0.0])
    >>> bool(np.isclose(a2 @ [0.0, 1.0], b2 @ [0.0, 1.0])), float(np.linalg.norm(a2))
    (True, 1.0)
    """
    gu = _unit(g)
    pair = _check(np.stack([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)]), gu)
    norms = np.linalg.norm(pair, axis=1, keepdims=True)
    if not np.all(norms > 0):
        raise ValueError("an equalise pair holds a zero vector")
    au, bu = pair / norms
    mu = (au + bu) / 2
    y = mu - dot(mu, gu) * gu
    z = np.sqrt(max(0.0, 1.0 - dot(y, y)))
    if side is not None:
        ref = np.stack([np.asarray(v, dtype=np.float64) for v in side])
        ref_norms = np.linalg.norm(ref, axis=1, keepdims=True)
        if not np.all(ref_norms > 0):
            raise ValueError("an equalise pair holds a zero vector")
        au_side, bu_side = ref / ref_norms
    else:
        au_side, bu_side = au, bu
    if dot(au_side - bu_side, gu) < 0:
        z = -z
    return y + z * gu, y - z * gu
