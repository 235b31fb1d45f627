"""Set-level bias metrics of WEFE and sweater: RND, RNSB, MAC, ECT and NAS, and their relabelling null.

Every metric takes the words of a set S (rows of ``s``; "neutral" words such as WEAT-7's math
terms) and two group sets A and B (rows of ``a``, ``b``; e.g. male and female terms), in sweater's
argument order ``(S, A, B)``. Vectors are used as given (raw, not normalised, as in WEFE's and
sweater's defaults).

- :func:`rnd`: relative norm distance (Garg et al. 2018), Σ_s ‖s - mean A‖ - ‖s - mean B‖ (sweater's
  sum; WEFE reports the mean, i.e. this divided by |S|). Positive: S is closer to B.
- :func:`rnsb`: relative negative sentiment bias (Sweeney & Najafian 2019): a logistic regression
  (liblinear's L2-regularised primal solver, C = 1, intercept penalised, tolerance 1e-4: LiblineaR's
  type 0 as sweater calls it, scikit-learn's ``solver="liblinear"``) trained on all of A (label 0)
  versus B (label 1); p(s) = P(B | s), normalised over S; the KL divergence (natural log) from the
  uniform distribution. Zero: no word of S leans more to B than another. The fit is liblinear's
  trust-region Newton method step for step (:func:`_tron`), with this package's fixed-order sums and
  its own exp and log (:mod:`biasdask.stats.elementary`): liblinear's BLAS calls and the C library's
  exp would make the last bits depend on the CPU.
- :func:`mac`: mean average cosine distance (Manzini et al. 2019; WEFE's definition), the mean over
  every target word t and every attribute set of mean_a (1 - cos(t, a)). sweater's ``mac`` is the mean
  cosine *similarity* with one attribute set, i.e. 1 - this.
- :func:`ect`: embedding coherence test (Dev & Phillips 2019): Spearman's ρ between cos(s, mean A) and
  cos(s, mean B) over S. 1: S ranks the same way towards both groups (no bias).
- :func:`nas_scores`, :func:`nas`: normalised association score (Caliskan et al. 2017, sweater's
  ``nas``): per word (mean_a cos(s, a) - mean_b cos(s, b)) / sd of its cosines with A ∪ B (sample SD,
  ddof = 1, R's ``sd``); :func:`nas` is their mean over S. Positive: S leans to A.

A metric that is undefined on its words (ECT on one word or on words sharing one vector, NAS of a word
whose cosines with A ∪ B do not vary) is NaN, and so is its p-value
(:func:`biasdask.stats.permutation.permutation_pvalue`): undefined is not significant.

Null (:func:`relabel_null`, :func:`exact_relabel_null`): the groups' words are exchangeable. Each
permutation i draws a split of the pooled rows of A ∪ B into groups of |A| and |B| rows from
``SeedSequence(seed, spawn_key=(i,))`` and recomputes the metric, so permutation i depends only on
(seed, i); with few enough splits all are enumerated. MAC has no such null: averaging over all sets, it
is the same for every relabelling.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray
from scipy.stats import spearmanr

from biasdask.stats.association import unit_rows
from biasdask.stats.elementary import exp_scalar, log_scalar
from biasdask.stats.linalg import lane_dot, matmul_t, matvec

__all__ = [
    "METRICS",
    "NULL_METRICS",
    "ect",
    "exact_relabel_null",
    "mac",
    "n_relabellings",
    "nas",
    "nas_scores",
    "NullMetric",
    "relabel_null",
    "rnd",
    "rnd_terms",
    "rnsb",
    "rnsb_probabilities",
]

NullMetric = Literal["rnd", "rnsb", "ect", "nas"]
METRICS: tuple[str, ...] = ("rnd", "rnsb", "mac", "ect", "nas")
"""The set-level metrics, by their study test names."""
NULL_METRICS: tuple[str, ...] = ("rnd", "rnsb", "ect", "nas")
"""The metrics with a relabelling null (not MAC, which every relabelling leaves unchanged)."""


def _rows(x: ArrayLike, what: str) -> NDArray[np.float64]:
    m = np.asarray(x, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"{what}: expected a non-empty 2-D array of word vectors, got shape {m.shape}")
    return m


def _cosines(s: NDArray[np.float64], a: NDArray[np.float64]) -> NDArray[np.float64]:
    """cos(s_i, a_j) for every row pair, shape (|s|, |a|)."""
    return matmul_t(unit_rows(s), unit_rows(a))


def rnd_terms(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Per word of S: ‖s - mean A‖ - ‖s - mean B‖ (Euclidean, raw vectors)."""
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    return np.linalg.norm(s - a.mean(axis=0), axis=1) - np.linalg.norm(s - b.mean(axis=0), axis=1)


def rnd(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """Relative norm distance Σ_s ‖s - mean A‖ - ‖s - mean B‖ (Garg et al. 2018; sweater's ``rnd_es``).

    Examples
    --------
    >>> rnd([[0.0, 1.0]], [[0.0, 0.0]], [[0.0, 2.0]])
    0.0
    """
    return float(rnd_terms(s, a, b).sum())


# liblinear's trust-region Newton method (Lin, Weng & Keerthi 2008) for L2-regularised logistic
# regression, as scikit-learn 1.x ships it (tron.cpp, linear.cpp's l2r_lr_fun): the same steps,
# constants and stopping rules; BLAS's dot, nrm2 and axpy become lane-order sums and elementwise
# updates, exp and log this package's.
_ETA = (1e-4, 0.25, 0.75)  # actual/predicted reduction thresholds
_SIGMA = (0.25, 0.5, 4.0)  # trust region shrink and growth factors
_LOGISTIC_TOL = 1e-4
_LOGISTIC_MAX_ITER = 10_000


@njit(cache=True, nogil=True)
def _xv(x, v, out):  # pragma: no cover (compiled)
    for i in range(x.shape[0]):
        total = 0.0
        for j in range(x.shape[1]):
            if x[i, j] != 0.0:  # liblinear stores the nonzero features only
                total += v[j] * x[i, j]
        out[i] = total


@njit(cache=True, nogil=True)
def _xtv(x, v, out):  # pragma: no cover (compiled)
    out[:] = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] != 0.0:
                out[j] += v[i] * x[i, j]


@njit(cache=True, nogil=True)
def _norm(v):  # pragma: no cover (compiled)
    return np.sqrt(lane_dot(v, v))


@njit(cache=True, nogil=True)
def _loss(x, y, w, z):  # pragma: no cover (compiled)
    _xv(x, w, z)
    f = 0.0
    for j in range(w.shape[0]):
        f += w[j] * w[j]
    f /= 2.0
    for i in range(y.shape[0]):
        yz = y[i] * z[i]
        if yz >= 0:
            f += log_scalar(1.0 + exp_scalar(-yz))
        else:
            f += -yz + log_scalar(1.0 + exp_scalar(yz))
    return f


@njit(cache=True, nogil=True)
def _gradient(x, y, w, z, d, g):  # pragma: no cover (compiled)
    for i in range(y.shape[0]):
        z[i] = 1.0 / (1.0 + exp_scalar(-y[i] * z[i]))
        d[i] = z[i] * (1.0 - z[i])
        z[i] = (z[i] - 1.0) * y[i]
    _xtv(x, z, g)
    for j in range(w.shape[0]):
        g[j] = w[j] + g[j]


@njit(cache=True, nogil=True)
def _hessian_times(x, d, s, out, work):  # pragma: no cover (compiled)
    _xv(x, s, work)
    for i in range(work.shape[0]):
        work[i] = d[i] * work[i]
    _xtv(x, work, out)
    for j in range(s.shape[0]):
        out[j] = s[j] + out[j]


@njit(cache=True, nogil=True)
def _trcg(x, d_diag, delta, g, s, r, work):  # pragma: no cover (compiled)
    n = g.shape[0]
    d = np.empty(n)
    hd = np.empty(n)
    for j in range(n):
        s[j] = 0.0
        r[j] = -g[j]
        d[j] = r[j]
    cgtol = 0.1 * _norm(g)
    rtr = lane_dot(r, r)
    while _norm(r) > cgtol:
        _hessian_times(x, d_diag, d, hd, work)
        alpha = rtr / lane_dot(d, hd)
        for j in range(n):
            s[j] += alpha * d[j]
        if _norm(s) > delta:  # the step leaves the trust region: back to its boundary
            alpha = -alpha
            for j in range(n):
                s[j] += alpha * d[j]
            std, sts, dtd = lane_dot(s, d), lane_dot(s, s), lane_dot(d, d)
            dsq = delta * delta
            rad = np.sqrt(std * std + dtd * (dsq - sts))
            alpha = (dsq - sts) / (std + rad) if std >= 0 else (rad - std) / dtd
            for j in range(n):
                s[j] += alpha * d[j]
            alpha = -alpha
            for j in range(n):
                r[j] += alpha * hd[j]
            return
        alpha = -alpha
        for j in range(n):
            r[j] += alpha * hd[j]
        rnew = lane_dot(r, r)
        beta = rnew / rtr
        for j in range(n):
            d[j] = beta * d[j] + r[j]
        rtr = rnew


@njit(cache=True, nogil=True)
def _tron(x, y, eps, max_iter):  # pragma: no cover (compiled)
    """The weights minimising ½|w|² + Σ log(1 + exp(-y_i w·x_i)) (y = ±1), by liblinear's TRON."""
    n, n_samples = x.shape[1], x.shape[0]
    w, w_new, g, s, r = np.zeros(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    z, d_diag, work = np.empty(n_samples), np.empty(n_samples), np.empty(n_samples)
    f = _loss(x, y, w, z)
    _gradient(x, y, w, z, d_diag, g)
    delta = _norm(g)
    gnorm1 = delta
    search = not delta <= eps * gnorm1
    iteration = 1
    while iteration <= max_iter and search:
        _trcg(x, d_diag, delta, g, s, r, work)
        for j in range(n):
            w_new[j] = w[j] + s[j]
        gs = lane_dot(g, s)
        prered = -0.5 * (gs - lane_dot(s, r))
        fnew = _loss(x, y, w_new, z)
        actred = f - fnew
        snorm = _norm(s)
        if iteration == 1:
            delta = min(delta, snorm)
        if fnew - f - gs <= 0:
            alpha = _SIGMA[2]
        else:
            alpha = max(_SIGMA[0], -0.5 * (gs / (fnew - f - gs)))
        if actred < _ETA[0] * prered:
            delta = min(max(alpha, _SIGMA[0]) * snorm, _SIGMA[1] * delta)
        elif actred < _ETA[1] * prered:
            delta = max(_SIGMA[0] * delta, min(alpha * snorm, _SIGMA[1] * delta))
        elif actred < _ETA[2] * prered:
            delta = max(_SIGMA[0] * delta, min(alpha * snorm, _SIGMA[2] * delta))
        else:
            delta = max(delta, min(alpha * snorm, _SIGMA[2] * delta))
        if actred > _ETA[0] * prered:
            iteration += 1
            w[:] = w_new
            f = fnew
            _gradient(x, y, w, z, d_diag, g)
            if _norm(g) <= eps * gnorm1:
                break
        if f < -1.0e32:
            break
        if abs(actred) <= 0 and prered <= 0:
            break
        if abs(actred) <= 1.0e-12 * abs(f) and abs(prered) <= 1.0e-12 * abs(f):
            break
    return w


@njit(cache=True, nogil=True)
def _sigmoid(z):  # pragma: no cover (compiled)
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        out[i] = 1.0 / (1.0 + exp_scalar(-z[i]))
    return out


@njit(cache=True, nogil=True)
def _kl_from_uniform(p):  # pragma: no cover (compiled)
    n = p.shape[0]
    total = 0.0
    for i in range(n):
        if p[i] > 0.0:
            total += p[i] * log_scalar(p[i] * n)
    return total


def rnsb_probabilities(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """P(B | s) for each word of S from a logistic regression trained on A (0) versus B (1).

    liblinear's L2-regularised logistic regression (C = 1, an intercept feature of 1 penalised with
    the weights, tolerance 1e-4: scikit-learn's ``LogisticRegression(solver="liblinear")``), fitted by
    its trust-region Newton method (see the module docstring).
    """
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    features = np.ascontiguousarray(np.hstack([np.concatenate([a, b]), np.ones((len(a) + len(b), 1))]))
    labels = np.concatenate([-np.ones(len(a)), np.ones(len(b))])
    eps = _LOGISTIC_TOL * max(min(len(a), len(b)), 1) / len(labels)  # liblinear's primal tolerance
    w = _tron(features, labels, eps, _LOGISTIC_MAX_ITER)
    return _sigmoid(matvec(s, w[:-1]) + w[-1])


def rnsb(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """KL divergence (nats) of the normalised P(B | s) over S from the uniform distribution."""
    p = rnsb_probabilities(s, a, b)
    return float(_kl_from_uniform(p / p.sum()))


def mac(targets: Sequence[ArrayLike], attributes: Sequence[ArrayLike]) -> float:
    """Mean average cosine distance (Manzini et al. 2019, WEFE's ``MAC``).

    The mean over every word t of every target set and every attribute set A_j of mean_a (1 - cos(t, a)).

    Parameters
    ----------
    targets
        Target sets (e.g. male terms, female terms), each an array of word vectors.
    attributes
        Attribute sets (e.g. math terms, arts terms).
    """
    t = np.concatenate([_rows(x, "target set") for x in targets])
    per_set = [1.0 - _cosines(t, _rows(x, "attribute set")).mean(axis=1) for x in attributes]
    return float(np.mean(per_set))


def ect(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's ρ between cos(s, mean A) and cos(s, mean B) over the words of S (Dev & Phillips 2019).

    NaN (no p-value) when it is undefined: S of one word, or words of S sharing one vector (each word's
    cosine is summed in the same order, so equal vectors give equal cosines; a matrix product may
    differ in the last bit between rows and rank rounding noise as ρ = ±1).
    """
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    unit = unit_rows(s)
    to_a = (unit * unit_rows(a.mean(axis=0))).sum(axis=1)
    to_b = (unit * unit_rows(b.mean(axis=0))).sum(axis=1)
    if len(unit) < 2 or np.all(to_a == to_a[0]) or np.all(to_b == to_b[0]):
        return math.nan  # spearmanr says the same, with a warning
    return float(spearmanr(to_a, to_b).statistic)


def nas_scores(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Per word of S: (mean_a cos(s, a) - mean_b cos(s, b)) / sd(cos(s, A ∪ B)), ddof = 1."""
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    ca, cb = _cosines(s, a), _cosines(s, b)
    sd = np.concatenate([ca, cb], axis=1).std(axis=1, ddof=1)
    return (ca.mean(axis=1) - cb.mean(axis=1)) / sd


def nas(s: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """Mean over S of the normalised association scores (:func:`nas_scores`)."""
    return float(nas_scores(s, a, b).mean())


_GROUP_METRICS: dict[str, Callable[..., float]] = {"rnd": rnd, "rnsb": rnsb, "ect": ect, "nas": nas}


def _metric(name: str) -> Callable[..., float]:
    if name not in _GROUP_METRICS:
        raise ValueError(f"no relabelling null for metric {name!r}; metrics with one: {list(NULL_METRICS)}")
    return _GROUP_METRICS[name]


def n_relabellings(n_a: int, n_b: int) -> int:
    """Number of distinct splits of |A| + |B| pooled words into groups of |A| and |B|."""
    return math.comb(n_a + n_b, n_a)


def relabel_null(
    metric: NullMetric, s: ArrayLike, a: ArrayLike, b: ArrayLike, seed: int, start: int, stop: int
) -> NDArray[np.float64]:
    """The metric under permutations ``start``..``stop - 1`` of the group labels of A ∪ B.

    Permutation i takes a uniformly random split of the pooled rows (A's rows, then B's) into |A| and
    |B| rows, drawn from ``SeedSequence(seed, spawn_key=(i,))``; each group keeps the pooled order, so
    the observed split gives the observed value bit for bit.
    """
    fn = _metric(metric)
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    pool = np.concatenate([a, b])
    out = np.empty(stop - start, dtype=np.float64)
    for k, i in enumerate(range(start, stop)):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
        in_a = np.zeros(len(pool), dtype=bool)
        in_a[rng.permutation(len(pool))[: len(a)]] = True
        out[k] = fn(s, pool[in_a], pool[~in_a])
    return out


def exact_relabel_null(metric: NullMetric, s: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """The metric for every split of A ∪ B into |A| and |B| words (A's indices in lexicographic order)."""
    fn = _metric(metric)
    s, a, b = _rows(s, "S"), _rows(a, "A"), _rows(b, "B")
    pool = np.concatenate([a, b])
    out = []
    for chosen in itertools.combinations(range(len(pool)), len(a)):
        in_a = np.zeros(len(pool), dtype=bool)
        in_a[list(chosen)] = True
        out.append(fn(s, pool[in_a], pool[~in_a]))
    return np.asarray(out, dtype=np.float64)
