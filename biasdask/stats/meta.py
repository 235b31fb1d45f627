"""Random-effects meta-analysis and mixed-effects meta-regression of per-study effects.

The model: study i reports an effect y_i with a known sampling variance v_i, and
y_i = x_iᵀβ + u_i + e_i with u_i ~ N(0, τ²) (between-study heterogeneity) and e_i ~ N(0, v_i). For
:func:`random_effects` x_i = 1 and β is the pooled effect μ; :func:`meta_regression` adds moderators.
The numbers follow R's metafor (Viechtbauer 2010), which this module reproduces on its BCG example.

τ² estimators (``method``)
    - ``"DL"``: DerSimonian & Laird 1986, the method-of-moments estimator
      τ² = max(0, (Q_E − (k − p)) / tr P), P the residual-maker of the fixed-effects weights 1/v_i
      (for p = 1: (Q − (k − 1)) / (Σw − Σw²/Σw)).
    - ``"REML"``: restricted maximum likelihood (Viechtbauer 2005), by Fisher scoring as metafor
      does: started at the Hedges (HE) estimate, step
      Δ = (yᵀPPy − tr P) / tr(PP) with P = W − WX(XᵀWX)⁻¹XᵀW, W = diag(1/(v_i + τ²)); a step that
      would make τ² negative stops at 0 (τ² is truncated there, as metafor truncates it), and a step
      that would lower the restricted likelihood (an overshoot past its maximum) is halved until it
      does not; iterated until |Δ| ≤ 1e-5, metafor's threshold, so that τ̂² is
      metafor's to the last digit (0.313243325980895 on the BCG data); the exact root of the REML
      equation differs by less than the threshold (on BCG with latitude: τ̂² 0.076355 against
      0.076348, QM 16.3571 against 16.3582). As in metafor, τ² = 0 is taken when the restricted
      likelihood is larger there than at the converged value.
    - ``"PM"``: Paule & Mandel 1982, the τ² at which the generalised Q statistic
      Σ w_i(τ²)(y_i − x_iᵀβ̂(τ²))² equals its expectation k − p (0 when Q at τ² = 0 is already below),
      found by Brent's method to a relative 1e-12.

Inference
    β̂ = (XᵀWX)⁻¹XᵀWy with W = diag(1/(v_i + τ̂²)), Var β̂ = (XᵀWX)⁻¹, Wald z-tests and normal
    intervals. With ``hartung_knapp=True`` (Hartung & Knapp 2001; Sidik & Jonkman 2002) Var β̂ is
    multiplied by s² = Σ w_i (y_i − x_iᵀβ̂)² / (k − p) and tests and intervals use Student's t with
    k − p degrees of freedom (the moderator test an F(m, k − p)). s² is **not** truncated at 1:
    metafor's ``test="knha"``, its default; the "ad hoc" variant that never lets the interval
    shrink below the Wald one is metafor's ``test="adhoc"`` and is not offered.

Heterogeneity
    Cochran's Q (Q_E with moderators) always uses the fixed-effects weights 1/v_i, with a χ²(k − p)
    test. I² = τ̂² / (τ̂² + ṽ) and H² = τ̂²/ṽ + 1 with the "typical" sampling variance
    ṽ = (k − p) / tr P (metafor's definition; for DL without moderators it equals the familiar
    max(0, (Q − (k − 1))/Q)). I² and R² are fractions (0.9212 for metafor's 92.12 %).

Prediction interval (:func:`random_effects`)
    μ̂ ± t_{k−2, (1+level)/2} · sqrt(SE(μ̂)² + τ̂²), the interval of Higgins, Thompson & Spiegelhalter
    2009 recommended by Riley et al. 2011 (metafor's ``predict(..., pi.type="Riley")``): k − 2
    degrees of freedom because μ and τ² are both estimated. metafor's default ``predict`` uses the
    normal quantile (k − 1 degrees of freedom under Hartung-Knapp), which is too narrow for the few
    studies (languages) a meta-analysis here has. SE(μ̂) is the Hartung-Knapp one when that is chosen.
    Undefined (NaN) for k = 2.

Missing values
    Studies whose effect, variance or covariate is NaN are dropped (their number is recorded as
    ``n_dropped``; ``weights`` keeps their place, as NaN). After dropping, at least 2 studies (more
    than the number of coefficients for a meta-regression) are needed, else ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from biasdask._calls import deprecated, keyword_api
from biasdask.stats.elementary import log
from biasdask.stats.linalg import dot, inv, matmul, matrix_rank, matvec, slogdet, solve

__all__ = [
    "METHODS",
    "EstimatorAliases",
    "MetaRegressionResult",
    "RandomEffectsResult",
    "meta_regression",
    "random_effects",
    "Method",
]

Method = Literal["DL", "REML", "PM"]
METHODS: tuple[str, ...] = ("DL", "REML", "PM")
#: the keywords of the estimator and the confidence level in earlier releases
_RENAMED = {"method": "estimator", "level": "ci_level"}


class EstimatorAliases:
    """Gives a result the deprecated attributes ``method`` and ``level``: its ``estimator`` and ``ci_level``."""

    @property
    def method(self) -> str:
        """Deprecated: :attr:`estimator`."""
        deprecated(f"{type(self).__name__}.method is deprecated; use .estimator")
        return self.estimator  # type: ignore[attr-defined]

    @property
    def level(self) -> float:
        """Deprecated: :attr:`ci_level`."""
        deprecated(f"{type(self).__name__}.level is deprecated; use .ci_level")
        return self.ci_level  # type: ignore[attr-defined]


"""The τ² estimators: DerSimonian-Laird, restricted maximum likelihood, Paule-Mandel."""

_REML_TOL = 1e-5  # metafor's control$threshold
_REML_MAX_ITER = 100
_PM_RTOL = 1e-12


@dataclass(frozen=True)
class RandomEffectsResult(EstimatorAliases):
    """A random-effects meta-analysis (:func:`random_effects`).

    Attributes
    ----------
    estimate, se : float
        The pooled effect μ̂ and its standard error (Hartung-Knapp's when chosen).
    statistic, p_value : float
        z (t under Hartung-Knapp) = estimate / se and its two-sided p-value.
    ci_low, ci_high : float
        Confidence interval for μ at ``level``.
    pi_low, pi_high : float
        Prediction interval at ``level`` for the effect of a new study (t with k − 2 degrees of
        freedom; NaN for k = 2).
    tau2 : float
        Estimated between-study variance τ̂².
    q, q_p_value : float
        Cochran's Q (fixed-effects weights) and its χ²(k − 1) p-value.
    i2, h2 : float
        I² (a fraction) and H².
    k, df : int
        Studies used, and k − 1 (the degrees of freedom of Q, and of t under Hartung-Knapp).
    n_dropped : int
        Studies dropped for a NaN effect or variance.
    weights : ndarray
        The random-effects weights 1/(v_i + τ̂²) normalised to sum 1, in input order, NaN for
        dropped studies.
    estimator : str
        The τ² estimator: ``"DL"``, ``"REML"`` or ``"PM"``.
    hartung_knapp : bool
        Whether the Hartung-Knapp-Sidik-Jonkman variance and t distribution were used.
    ci_level : float
        Confidence level of both intervals.
    """

    estimate: float
    se: float
    statistic: float
    p_value: float
    ci_low: float
    ci_high: float
    pi_low: float
    pi_high: float
    tau2: float
    q: float
    q_p_value: float
    i2: float
    h2: float
    k: int
    df: int
    n_dropped: int
    weights: np.ndarray
    estimator: str
    hartung_knapp: bool
    ci_level: float


@dataclass(frozen=True)
class MetaRegressionResult(EstimatorAliases):
    """A mixed-effects meta-regression (:func:`meta_regression`).

    Attributes
    ----------
    names : tuple of str
        Coefficient names: ``"intercept"``, then one per moderator column (``"name[level]"`` for the
        indicator of a category).
    coefficients, se, statistic, p_values, ci_low, ci_high : ndarray
        Per coefficient: β̂, its standard error, z (t under Hartung-Knapp), two-sided p-value and
        confidence interval at ``level``.
    covariance : ndarray
        Var β̂, shape (p, p).
    tau2 : float
        Residual between-study variance τ̂² (not explained by the moderators).
    qe, qe_p_value : float
        Test of residual heterogeneity: Q_E (fixed-effects weights) and its χ²(k − p) p-value.
    qm, qm_p_value : float
        Omnibus test of the moderators (every coefficient but the intercept is 0): the Wald χ²(m),
        or under Hartung-Knapp the F(m, k − p) statistic (the Wald statistic divided by m), as
        metafor reports it.
    qm_df : tuple of int
        (m,) for χ², (m, k − p) for F.
    r2 : float
        Proportion of τ² explained, max(0, (τ̂²_RE − τ̂²) / τ̂²_RE), τ̂²_RE from the model without
        moderators fitted to the same studies with the same method (0 when τ̂²_RE = 0; metafor's R²).
    i2, h2 : float
        Residual I² (a fraction) and H².
    k, p, df : int
        Studies used, coefficients, and k − p.
    n_dropped : int
        Studies dropped for a NaN effect, variance or covariate.
    estimator, hartung_knapp, ci_level
        As in :class:`RandomEffectsResult`.
    """

    names: tuple[str, ...]
    coefficients: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    p_values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    covariance: np.ndarray
    tau2: float
    qe: float
    qe_p_value: float
    qm: float
    qm_p_value: float
    qm_df: tuple[int, ...]
    r2: float
    i2: float
    h2: float
    k: int
    p: int
    df: int
    n_dropped: int
    estimator: str
    hartung_knapp: bool
    ci_level: float


# ----------------------------------------------------------------------------------------------
# Argument checks


def _vector(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _check_options(method: str, hartung_knapp: bool, level: float) -> None:
    if method not in METHODS:
        raise ValueError(f"estimator must be one of {', '.join(METHODS)}; got {method!r}")
    if not isinstance(hartung_knapp, (bool, np.bool_)):
        raise TypeError(f"hartung_knapp must be True or False, got {hartung_knapp!r}")
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.floating, np.integer)):
        raise TypeError(f"ci_level must be a number in (0, 1), got {level!r}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"ci_level must lie strictly between 0 and 1, got {level}")


def _check_studies(y: NDArray, v: NDArray) -> None:
    """Effects and variances of the kept studies: finite, variances positive."""
    if not np.all(np.isfinite(y)):
        raise ValueError("effects must be finite (NaN marks a missing study; ±inf is not allowed)")
    bad = np.flatnonzero(~(np.isfinite(v) & (v > 0)))
    if bad.size:
        raise ValueError(f"sampling variances must be positive and finite; got {v[bad[0]]}")


# ----------------------------------------------------------------------------------------------
# The fit


def _quadratic_form(y: NDArray, m: NDArray) -> float:
    """yᵀ M y."""
    return dot(y, matvec(m, y))


def _residual_maker(w: NDArray, x: NDArray) -> NDArray:
    """P = W − WX(XᵀWX)⁻¹XᵀW for weights w."""
    wx = x * w[:, None]
    return np.diag(w) - matmul(wx, solve(matmul(x.T, wx), wx.T))


def _qe(y: NDArray, w: NDArray, x: NDArray) -> float:
    """Σ w_i (y_i − x_iᵀβ̂_w)², β̂_w the weighted least-squares fit."""
    wx = x * w[:, None]
    beta = solve(matmul(x.T, wx), matvec(wx.T, y))
    r = y - matvec(x, beta)
    return float(np.sum(w * r * r))


def _reml_loglik(tau2: float, y: NDArray, v: NDArray, x: NDArray) -> float:
    """Restricted log-likelihood up to a constant."""
    w = 1.0 / (v + tau2)
    _, logdet = slogdet(matmul(x.T, x * w[:, None]))
    return -0.5 * (float(np.sum(log(v + tau2))) + logdet + _qe(y, w, x))


def _tau2_dl(y: NDArray, v: NDArray, x: NDArray) -> float:
    k, p = x.shape
    p_fe = _residual_maker(1.0 / v, x)
    return max(0.0, (_quadratic_form(y, p_fe) - (k - p)) / float(np.trace(p_fe)))


def _tau2_pm(y: NDArray, v: NDArray, x: NDArray) -> float:
    k, p = x.shape
    target = float(k - p)
    excess = lambda t: _qe(y, 1.0 / (v + t), x) - target  # noqa: E731
    if excess(0.0) <= 0.0:
        return 0.0
    # Q(τ²) falls to 0 as τ² grows: double an upper bound until it is below the target
    hi = max(float(np.var(y)), float(np.max(v)), 1e-12)
    while excess(hi) > 0.0:
        hi *= 2.0
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=_PM_RTOL, maxiter=500))


def _tau2_reml(y: NDArray, v: NDArray, x: NDArray) -> float:
    k, p = x.shape
    # Hedges' estimator as the start (metafor's default for REML)
    p_ols = np.eye(k) - matmul(x, solve(matmul(x.T, x), x.T))
    tau2 = max(0.0, (_quadratic_form(y, p_ols) - float(np.trace(p_ols * v[None, :]))) / (k - p))
    for _ in range(_REML_MAX_ITER):
        pm = _residual_maker(1.0 / (v + tau2), x)
        py = matvec(pm, y)
        step = (dot(py, py) - float(np.trace(pm))) / float(np.sum(pm * pm))
        if tau2 == 0.0 and step <= 0.0:  # the likelihood falls from the boundary: τ² = 0
            break
        new = max(tau2 + step, 0.0)  # a step past 0 stops on the boundary (metafor truncates at 0 likewise)
        # a Fisher step may overshoot the maximum (and then oscillate about it): halve it until the
        # restricted likelihood does not fall
        current = _reml_loglik(tau2, y, v, x)
        while _reml_loglik(new, y, v, x) < current and abs(new - tau2) > _REML_TOL:
            new = tau2 + (new - tau2) / 2.0
        step, tau2 = new - tau2, new
        if abs(step) <= _REML_TOL:
            break
    else:
        raise ValueError(
            f"REML: Fisher scoring did not converge in {_REML_MAX_ITER} iterations; try estimator='PM' or 'DL'"
        )
    if tau2 > 0.0 and _reml_loglik(0.0, y, v, x) > _reml_loglik(tau2, y, v, x):
        return 0.0
    return tau2


_ESTIMATORS = {"DL": _tau2_dl, "REML": _tau2_reml, "PM": _tau2_pm}


@dataclass(frozen=True)
class _Fit:
    beta: NDArray
    cov: NDArray
    tau2: float
    w: NDArray
    qe: float
    i2: float
    h2: float
    crit: float
    df: int


def _fit(y: NDArray, v: NDArray, x: NDArray, method: str, hartung_knapp: bool, level: float) -> _Fit:
    k, p = x.shape
    tau2 = _ESTIMATORS[method](y, v, x)
    w = 1.0 / (v + tau2)
    wx = x * w[:, None]
    cov = inv(matmul(x.T, wx))
    beta = matvec(cov, matvec(wx.T, y))
    if hartung_knapp:
        r = y - matvec(x, beta)
        cov = cov * (float(np.sum(w * r * r)) / (k - p))
        crit = float(stats.t.ppf(0.5 + level / 2.0, k - p))
    else:
        crit = float(stats.norm.ppf(0.5 + level / 2.0))
    p_fe = _residual_maker(1.0 / v, x)
    qe = max(0.0, _quadratic_form(y, p_fe))
    typical = (k - p) / float(np.trace(p_fe))
    return _Fit(beta, cov, tau2, w, qe, tau2 / (typical + tau2), tau2 / typical + 1.0, crit, k - p)


def _two_sided(statistic: NDArray | float, hartung_knapp: bool, df: int) -> NDArray:
    z = np.abs(np.asarray(statistic, dtype=np.float64))
    return 2.0 * (stats.t.sf(z, df) if hartung_knapp else stats.norm.sf(z))


@keyword_api("random_effects(effects, variances, estimator=..., ci_level=...)", renamed=_RENAMED)
def random_effects(
    effects: ArrayLike,
    variances: ArrayLike,
    *,
    estimator: Method = "DL",
    hartung_knapp: bool = False,
    ci_level: float = 0.95,
) -> RandomEffectsResult:
    """Pool per-study effects with a random-effects model.

    Parameters
    ----------
    effects
        Effect of each study (e.g. each language's effect size), 1-D; NaN marks a missing study.
    variances
        Their sampling variances (squared standard errors), same length, positive; NaN drops the
        study.
    estimator
        τ² estimator: ``"DL"`` (DerSimonian & Laird 1986), ``"REML"`` (Viechtbauer 2005) or ``"PM"``
        (Paule & Mandel 1982); see the module docstring.
    hartung_knapp
        Use the Hartung-Knapp-Sidik-Jonkman variance (not truncated at the Wald one) and Student's t
        with k − 1 degrees of freedom for the test and the confidence interval.
    ci_level
        Confidence level of the confidence and prediction intervals.

    Returns
    -------
    RandomEffectsResult

    Raises
    ------
    ValueError
        Arrays of different lengths or not 1-D, a non-positive or infinite variance, an infinite
        effect, fewer than 2 studies left after dropping NaNs, a bad ``method`` or ``level``.
    TypeError
        Non-numeric arrays, a ``hartung_knapp`` that is not a bool.

    Examples
    --------
    Three studies with log risk ratios and their variances; their spread is within sampling error, so
    τ̂² = 0 and the estimate is the inverse-variance weighted mean:

    >>> res = random_effects([-0.9, -1.6, -1.4], [0.33, 0.19, 0.42])
    >>> round(res.estimate, 4), round(res.tau2, 4), round(res.q, 4)
    (-1.3567, 0.0, 0.9481)
    >>> res.k, res.df
    (3, 2)
    >>> res.ci_low < res.estimate < res.ci_high
    True
    """
    method, level = estimator, ci_level
    _check_options(method, hartung_knapp, level)
    y_all, v_all = _vector(effects, "effects"), _vector(variances, "variances")
    if y_all.size != v_all.size:
        raise ValueError(f"effects has {y_all.size} values but variances has {v_all.size}")
    keep = ~(np.isnan(y_all) | np.isnan(v_all))
    y, v = y_all[keep], v_all[keep]
    if y.size < 2:
        raise ValueError(f"a meta-analysis needs at least 2 studies with an effect and a variance, got {y.size}")
    _check_studies(y, v)
    k = y.size
    level = float(level)
    fit = _fit(y, v, np.ones((k, 1)), method, bool(hartung_knapp), level)
    estimate = float(fit.beta[0])
    se = math.sqrt(float(fit.cov[0, 0]))
    statistic = estimate / se if se > 0 else math.nan
    if k > 2:
        half = float(stats.t.ppf(0.5 + level / 2.0, k - 2)) * math.sqrt(se * se + fit.tau2)
        pi_low, pi_high = estimate - half, estimate + half
    else:
        pi_low = pi_high = math.nan
    weights = np.full(y_all.size, np.nan)
    weights[keep] = fit.w / fit.w.sum()
    return RandomEffectsResult(
        estimate=estimate,
        se=se,
        statistic=statistic,
        p_value=float(_two_sided(statistic, bool(hartung_knapp), k - 1)),
        ci_low=estimate - fit.crit * se,
        ci_high=estimate + fit.crit * se,
        pi_low=pi_low,
        pi_high=pi_high,
        tau2=fit.tau2,
        q=fit.qe,
        q_p_value=float(stats.chi2.sf(fit.qe, k - 1)),
        i2=fit.i2,
        h2=fit.h2,
        k=k,
        df=k - 1,
        n_dropped=int(y_all.size - k),
        weights=weights,
        estimator=method,
        hartung_knapp=bool(hartung_knapp),
        ci_level=level,
    )


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def _covariate_columns(covariates: ArrayLike | Mapping[str, ArrayLike], n: int) -> list[tuple[str, np.ndarray]]:
    """The moderators as named 1-D columns: numeric (float, NaN missing) or categorical (object)."""
    if isinstance(covariates, Mapping):
        if not covariates:
            raise ValueError("covariates: the mapping names no covariate")
        items = [(str(name), np.asarray(col)) for name, col in covariates.items()]
        for name, col in items:
            if col.ndim != 1:
                raise ValueError(f"covariate {name!r} must be 1-D, got shape {col.shape}")
    else:
        arr = np.asarray(covariates)
        if arr.ndim == 1:
            items = [("x", arr)]
        elif arr.ndim == 2 and arr.dtype.kind in "biuf":
            items = [(f"x{j + 1}", arr[:, j]) for j in range(arr.shape[1])]
        elif arr.ndim == 2:
            raise TypeError("categorical covariates go one per column: pass a mapping {name: 1-D array}")
        else:
            raise ValueError(f"covariates must be 1-D or 2-D, got shape {arr.shape}")
    columns = []
    for name, col in items:
        if col.shape[0] != n:
            raise ValueError(f"covariate {name!r} has {col.shape[0]} values but there are {n} studies")
        if col.dtype.kind in "biuf":
            columns.append((name, col.astype(np.float64)))
        elif col.dtype.kind in "OUS":
            columns.append((name, col.astype(object)))
        else:
            raise TypeError(f"covariate {name!r}: numbers or categories (strings) expected, got dtype {col.dtype}")
    return columns


def _design(columns: list[tuple[str, np.ndarray]], keep: NDArray) -> tuple[NDArray, tuple[str, ...]]:
    """Intercept plus one column per numeric covariate and one indicator per non-reference category."""
    parts, names = [np.ones(int(keep.sum()))], ["intercept"]
    for name, col in columns:
        col = col[keep]
        if col.dtype == object:
            levels = sorted({str(c) for c in col})
            for level in levels[1:]:  # the first level (sorted) is the reference
                parts.append(np.array([str(c) == level for c in col], dtype=np.float64))
                names.append(f"{name}[{level}]")
        else:
            parts.append(col)
            names.append(name)
    return np.column_stack(parts), tuple(names)


@keyword_api("meta_regression(effects, variances, covariates, estimator=..., ci_level=...)", renamed=_RENAMED)
def meta_regression(
    effects: ArrayLike,
    variances: ArrayLike,
    covariates: ArrayLike | Mapping[str, ArrayLike],
    *,
    estimator: Method = "DL",
    hartung_knapp: bool = False,
    ci_level: float = 0.95,
) -> MetaRegressionResult:
    """Mixed-effects meta-regression: per-study effects on one or more study-level moderators.

    Parameters
    ----------
    effects, variances
        As in :func:`random_effects`.
    covariates
        The moderators, one value per study: a 1-D array (one moderator, named ``"x"``), a 2-D
        numeric array (one column each, ``"x1"``, ``"x2"``...), or a mapping ``{name: 1-D array}``.
        A numeric column enters as it is (NaN drops the study); a column of strings (or other
        objects) is categorical: one 0/1 indicator per level except the first in sorted order, the
        reference (None or NaN drops the study). An intercept is always added.
    estimator
        τ² estimator: ``"DL"`` (the default, as for :func:`random_effects`; metafor's is REML),
        ``"REML"`` or ``"PM"``, each generalised to moderators (see the module docstring).
    hartung_knapp
        Scale Var β̂ by the Hartung-Knapp factor; t(k − p) tests and intervals, F(m, k − p) for QM.
    ci_level
        Confidence level of the coefficients' intervals.

    Returns
    -------
    MetaRegressionResult

    Raises
    ------
    ValueError
        Mismatched lengths, bad variances, no more studies than coefficients, or a design matrix
        without full column rank (a constant or collinear moderator among the studies kept).
    TypeError
        Non-numeric effects or variances, a 2-D array of categories.

    Examples
    --------
    >>> res = meta_regression([0.1, 0.3, 0.2, 0.6, 0.5], [0.01, 0.02, 0.015, 0.01, 0.02],
    ...                       {"latitude": [10.0, 20.0, 15.0, 40.0, 35.0]}, estimator="DL")
    >>> res.names
    ('intercept', 'latitude')
    >>> round(float(res.coefficients[1]), 4), res.tau2
    (0.0162, 0.0)
    """
    method, level = estimator, ci_level
    _check_options(method, hartung_knapp, level)
    y_all, v_all = _vector(effects, "effects"), _vector(variances, "variances")
    if y_all.size != v_all.size:
        raise ValueError(f"effects has {y_all.size} values but variances has {v_all.size}")
    columns = _covariate_columns(covariates, y_all.size)
    keep = ~(np.isnan(y_all) | np.isnan(v_all))
    for _, col in columns:
        keep &= ~np.array([_is_missing(c) for c in col]) if col.dtype == object else ~np.isnan(col)
    y, v = y_all[keep], v_all[keep]
    _check_studies(y, v)
    x, names = _design(columns, keep)
    k, p = x.shape
    if k <= p:
        raise ValueError(f"a meta-regression with {p} coefficients needs more than {p} studies, got {k}")
    if not np.all(np.isfinite(x)):
        raise ValueError("covariates must be finite (NaN marks a missing value)")
    if matrix_rank(x) < p:
        raise ValueError(
            f"the design matrix ({', '.join(names)}) is rank deficient over the {k} studies kept: "
            "a moderator is constant or collinear with others"
        )
    level = float(level)
    hk = bool(hartung_knapp)
    fit = _fit(y, v, x, method, hk, level)
    se = np.sqrt(np.diag(fit.cov))
    statistic = fit.beta / se
    m = p - 1
    b = fit.beta[1:]
    wald = dot(b, solve(fit.cov[1:, 1:], b))
    if hk:
        qm_df: tuple[int, ...] = (m, k - p)
        qm, qm_p = wald / m, float(stats.f.sf(wald / m, m, k - p))
    else:
        qm, qm_p, qm_df = wald, float(stats.chi2.sf(wald, m)), (m,)
    tau2_re = _ESTIMATORS[method](y, v, np.ones((k, 1)))
    r2 = max(0.0, (tau2_re - fit.tau2) / tau2_re) if tau2_re > 0 else 0.0
    return MetaRegressionResult(
        names=names,
        coefficients=fit.beta,
        se=se,
        statistic=statistic,
        p_values=_two_sided(statistic, hk, k - p),
        ci_low=fit.beta - fit.crit * se,
        ci_high=fit.beta + fit.crit * se,
        covariance=fit.cov,
        tau2=fit.tau2,
        qe=fit.qe,
        qe_p_value=float(stats.chi2.sf(fit.qe, k - p)),
        qm=qm,
        qm_p_value=qm_p,
        qm_df=qm_df,
        r2=r2,
        i2=fit.i2,
        h2=fit.h2,
        k=k,
        p=p,
        df=k - p,
        n_dropped=int(y_all.size - k),
        estimator=method,
        hartung_knapp=hk,
        ci_level=level,
    )
