"""Inference over a whole results cube: p-values corrected for multiple testing over families of cells,
and a pooled effect across languages (:func:`meta_analysis`).

A study tests one hypothesis per cell. The family a correction runs over is the languages of one
weighting (``method``) × test label (a test with its association: ``gender``, ``gender.ripa``): the
question "in which languages does this test find bias?". A classic test or set-level metric has no
weighting and repeats its one result in every ``method`` cell: it is one family of languages, counted
once, and its adjusted p-values are repeated like its values. The correction (study key ``correction``)
is Holm's by default (family-wise error rate under any dependence), or Benjamini-Hochberg /
Benjamini-Yekutieli (false discovery rate); see :mod:`biasdask.stats.multitest`. A cell without a
p-value (empty, or an undefined statistic) is not a hypothesis tested and does not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from biasdask._calls import keyword_api
from biasdask.engine.placebo import SPREAD_METHOD, is_spread
from biasdask.errors import BiasdaskError
from biasdask.io.results import cube_label
from biasdask.lexicon import languages as catalog
from biasdask.stats.meta import MetaRegressionResult, RandomEffectsResult, meta_regression, random_effects
from biasdask.stats.multitest import CORRECTIONS, adjust_pvalues, first_threshold, min_permutations

__all__ = ["MetaAnalysis", "adjusted_pvalues", "correction_warning", "families", "meta_analysis"]


def _has_weighting(cube: xr.Dataset, test: str) -> bool:
    """Whether a test's cells differ by weighting (a classic test's are copies: weighting ``none``)."""
    if "t_method" not in cube:
        return True
    weightings = {str(w) for w in np.asarray(cube["t_method"].sel({"test": test}).values).ravel() if str(w)}
    return weightings != {"none"}


def families(cube: xr.Dataset) -> list[tuple[str, tuple[str, ...]]]:
    """The families of a cube: (test label, the methods whose cells it covers). A test with a weighting
    has one family per method; a test without one (its cells copies across methods) has one family
    covering every method, counted once."""
    methods = tuple(str(m) for m in cube["method"].values)
    out: list[tuple[str, tuple[str, ...]]] = []
    for test in (str(t) for t in cube["test"].values):
        if _has_weighting(cube, test):
            out += [(test, (m,)) for m in methods]
        else:
            out.append((test, methods))
    return out


def adjusted_pvalues(cube: xr.Dataset, variable: str = "p_value", *, correction: str = "holm") -> xr.DataArray:
    """``variable`` adjusted over each family of :func:`families` (``correction`` ``none``: a copy).

    Parameters
    ----------
    cube : xarray.Dataset
        A results cube (dims ``language``, ``method``, ``test``).
    variable : str
        The p-values to adjust.
    correction : {"holm", "bh", "by", "none"}
        The correction (:func:`biasdask.stats.multitest.adjust_pvalues`).

    Returns
    -------
    xarray.DataArray
        Shaped like ``cube[variable]``; NaN where it is NaN.

    Examples
    --------
    Holm over the three languages of each weighting (a real cube comes from :func:`biasdask.open_results`):

    >>> import numpy as np
    >>> import xarray as xr
    >>> dims = ("language", "method", "test")
    >>> cube = xr.Dataset(
    ...     {"p_value": (dims, [[[0.01], [0.02]], [[0.04], [0.03]], [[0.20], [0.01]]])},
    ...     coords={"language": ["de", "en", "fr"], "method": ["uniform", "zipf"], "test": ["gender"]})
    >>> np.round(adjusted_pvalues(cube).sel({"test": "gender"}).values, 3).tolist()
    [[0.03, 0.04], [0.08, 0.04], [0.2, 0.03]]
    """
    if correction not in (*CORRECTIONS, "none"):
        raise ValueError(f"correction must be one of {', '.join((*CORRECTIONS, 'none'))}; got {correction!r}")
    p = cube[variable].transpose("language", "method", "test")
    out = np.full(p.shape, np.nan)
    values = np.asarray(p.values, dtype=np.float64)
    method_index = {str(m): j for j, m in enumerate(cube["method"].values)}
    test_index = {str(t): k for k, t in enumerate(cube["test"].values)}
    for test, methods in families(cube):
        k = test_index[test]
        first = method_index[methods[0]]
        column = values[:, first, k]
        adjusted = column.copy() if correction == "none" else adjust_pvalues(column, method=correction)  # type: ignore[arg-type]
        for m in methods:
            out[:, method_index[m], k] = adjusted
    return xr.DataArray(out, dims=p.dims, coords=p.coords).transpose(*cube[variable].dims)


def correction_warning(n_languages: int, n_permutations: int, *, correction: str, alpha: float) -> str | None:
    """Why a study's sampled p-values cannot pass its correction, or None: with ``n_languages`` per family,
    the smallest sampled p, 1/(n_permutations + 1), must be at most the family's first threshold.

    Examples
    --------
    >>> print(correction_warning(26, 99, correction="holm", alpha=0.05))  # doctest: +NORMALIZE_WHITESPACE
    with 26 languages per family, holm at alpha = 0.05 rejects only p <= 0.00192, and the smallest p of
    99 permutations is 1/100 = 0.01: no cell can be significant after correction; use n_permutations >= 519
    """
    if correction == "none" or n_languages < 1:
        return None
    threshold = first_threshold(n_languages, alpha, correction)  # type: ignore[arg-type]
    if 1.0 / (n_permutations + 1) <= threshold:
        return None
    need = min_permutations(n_languages, alpha, correction)  # type: ignore[arg-type]
    return (
        f"with {n_languages} languages per family, {correction} at alpha = {alpha:g} rejects only p <= {threshold:.3g}, "
        f"and the smallest p of {n_permutations} permutations is 1/{n_permutations + 1} = "
        f"{1.0 / (n_permutations + 1):.3g}: no cell can be significant after correction; use n_permutations >= {need}"
    )


@dataclass(frozen=True)
class MetaAnalysis:
    """A pooled effect size of one test across the languages of a results cube (:func:`meta_analysis`).

    Attributes
    ----------
    test, method : str
        The cube cells pooled: one test label, under one weighting.
    pooled : RandomEffectsResult
        The random-effects model (:func:`biasdask.stats.random_effects`): ``estimate``, ``se``,
        ``ci_low``, ``ci_high``, ``pi_low``, ``pi_high``, ``tau2``, ``q``, ``i2``...
    studies : pandas.DataFrame
        One row per language used: ``effect_size``, ``se``, ``ci_low``, ``ci_high`` (its own interval),
        ``variance`` (what SE² is: ``bootstrap``, ``attribute-word spread``, or ``standard error`` when the
        cube does not say) and ``weight`` (its share of the pooled estimate).
    dropped : tuple of str
        Languages left out, each with why (no effect size, no standard error, or an attribute-word spread
        left out).
    regression : MetaRegressionResult or None
        The meta-regression on ``covariate``, when asked for.
    covariate : str
        The moderator's name ("" without one).
    note : str
        Which languages' SE² is the attribute-word spread, and what that means for the pooled estimate
        ("" when none is).
    """

    test: str
    method: str
    pooled: RandomEffectsResult
    studies: pd.DataFrame
    dropped: tuple[str, ...]
    regression: MetaRegressionResult | None = None
    covariate: str = ""
    note: str = ""


#: what the pooling says of languages whose SE is the attribute-word spread
SPREAD_NOTE = (
    "{who}: one attribute word a side, so SE² is the variance of the attribute-word spread (of d over random "
    "words of the attribute words' frequencies), not a sampling variance; it is usually larger than a resampling "
    "of several words would give, so the pooled interval errs wide, τ² and the prediction interval narrow"
)


def _cell_arrays(cells: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """d, SE(d), the interval's bounds and what the interval is (``ci_method``), per language of one test's
    cells: NaN (or "") where the cube has no such variable."""
    d = np.asarray(cells["effect_size"].values, dtype=np.float64)

    def numbers(name: str) -> np.ndarray:
        return np.asarray(cells[name].values, dtype=np.float64) if name in cells else np.full(d.shape, np.nan)

    why = (
        np.asarray(cells["ci_method"].values, dtype=object)
        if "ci_method" in cells
        else np.full(d.shape, "", dtype=object)
    )
    return d, numbers("effect_size_se"), numbers("effect_size_ci_low"), numbers("effect_size_ci_high"), why


@keyword_api("meta_analysis(results, test=..., method=..., estimator=..., ci_level=...)", renamed={"level": "ci_level"})
def meta_analysis(
    results: xr.Dataset,
    *,
    test: str,
    method: str | None = None,
    association: str | None = None,
    estimator: Literal["DL", "REML", "PM"] = "REML",
    hartung_knapp: bool = False,
    ci_level: float = 0.95,
    covariate: str | Mapping[str, object] | None = None,
    spreads: bool = True,
) -> MetaAnalysis:
    """Pool one test's effect size d across the languages of a cube with a random-effects model.

    Each language contributes its d and the variance SE(d)² of its cell's interval
    (``effect_size_se``): for the classic tests a bootstrap of the target words' scores, for a
    full-vocabulary test a bootstrap of its attribute words, or with one attribute word a side the
    variance of the attribute-word spread (the placebo pairs' d; ``note`` says so, and why it is no
    sampling variance). A language without either is left out and named in ``dropped``.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube (:func:`biasdask.open_results`).
    test : str
        The test label (``career_family``, ``weat7``, ``gender``...).
    method : str, optional
        The weighting (default: the cube's first; a classic test is the same in every one).
    association : str, optional
        With a full-vocabulary test, its association (``gender`` with ``"ripa"`` is the label
        ``gender.ripa``).
    estimator : {"DL", "REML", "PM"}
        τ² estimator (DerSimonian & Laird 1986, REML as metafor's default, Paule & Mandel 1982).
    hartung_knapp : bool
        Hartung & Knapp 2001's variance and t intervals.
    ci_level : float
        Confidence level of the pooled intervals.
    covariate : str or mapping, optional
        A meta-regression moderator: a column of the language catalog (``family``, ``branch``;
        :func:`biasdask.lexicon.languages`) or a mapping language -> value of one's own.
    spreads : bool
        Pool the languages whose interval is an attribute-word spread (default); False leaves them out,
        named in ``dropped``.

    Returns
    -------
    MetaAnalysis

    Examples
    --------
    A cube of four languages' d and standard errors (a real one comes from :func:`biasdask.open_results`):

    >>> import xarray as xr
    >>> import biasdask
    >>> dims = ("language", "method", "test")
    >>> cube = xr.Dataset(
    ...     {"effect_size": (dims, [[[0.9]], [[1.3]], [[0.4]], [[1.1]]]),
    ...      "effect_size_se": (dims, [[[0.3]], [[0.35]], [[0.25]], [[0.4]]])},
    ...     coords={"language": ["de", "en", "fr", "ja"], "method": ["uniform"], "test": ["career_family"]})
    >>> meta = biasdask.meta_analysis(cube, test="career_family")
    >>> round(meta.pooled.estimate, 3), round(meta.pooled.tau2, 3), round(meta.pooled.i2, 2)
    (0.868, 0.08, 0.44)
    """
    label = cube_label(test, association) if association else test
    tests = [str(t) for t in results["test"].values]
    if label not in tests:
        raise BiasdaskError(f"meta_analysis: no test {label!r} in the results (has {', '.join(tests)})")
    methods = [str(m) for m in results["method"].values]
    method = method or methods[0]
    if method not in methods:
        raise BiasdaskError(f"meta_analysis: no method {method!r} in the results (has {', '.join(methods)})")
    cells = results.sel({"test": label, "method": method})
    languages = [str(v) for v in cells["language"].values]
    d, se, low, high, why = _cell_arrays(cells)
    spread = np.array([is_spread(str(w)) for w in why], dtype=bool)
    keep = np.isfinite(d) & np.isfinite(se) & (se > 0) & (spreads | ~spread)

    def reason(e: float, w: str, s: bool) -> str:
        if not np.isfinite(e):
            return "no effect size"
        if s and not spreads:
            return "an attribute-word spread, not a sampling variance"
        return "no interval" + (": " + str(w).removeprefix("none: ") if str(w) else "")

    dropped = tuple(f"{lang} ({reason(e, w, s)})" for lang, e, k, w, s in zip(languages, d, keep, why, spread) if not k)
    if keep.sum() < 2:
        raise BiasdaskError(
            f"meta_analysis: {label} ({method}) has {int(keep.sum())} language(s) with an effect size and a standard "
            f"error; at least 2 are needed" + (f" (left out: {', '.join(dropped)})" if dropped else "")
        )
    try:
        pooled = random_effects(
            d[keep], se[keep] ** 2, estimator=estimator, hartung_knapp=hartung_knapp, ci_level=ci_level
        )
    except ValueError as exc:
        raise BiasdaskError(f"meta_analysis: {label} ({method}): {exc}") from None
    used = [lang for lang, k in zip(languages, keep) if k]
    studies = pd.DataFrame(
        {
            "effect_size": d[keep],
            "se": se[keep],
            "ci_low": low[keep],
            "ci_high": high[keep],
            "variance": [
                SPREAD_METHOD if s else "bootstrap" if "bootstrap" in str(w) else "standard error"
                for w, s in zip(why[keep], spread[keep])
            ],
            "weight": pooled.weights,
        },
        index=pd.Index(used, name="language"),
    )
    spread_languages = [lang for lang, k, s in zip(languages, keep, spread) if k and s]
    who = "every language" if len(spread_languages) == len(used) else ", ".join(spread_languages)
    note = SPREAD_NOTE.format(who=who) if spread_languages else ""
    regression, name = None, ""
    if covariate is not None:
        values, name = _covariate(covariate, used)
        try:
            regression = meta_regression(
                d[keep],
                se[keep] ** 2,
                {name: values},
                estimator=estimator,
                hartung_knapp=hartung_knapp,
                ci_level=ci_level,
            )
        except ValueError as exc:
            raise BiasdaskError(f"meta_analysis: the meta-regression on {name}: {exc}") from None
    return MetaAnalysis(label, method, pooled, studies, dropped, regression, name, note)


def _covariate(covariate: str | Mapping[str, object], languages: list[str]) -> tuple[np.ndarray, str]:
    if isinstance(covariate, str):
        table = catalog().set_index("code")
        if covariate not in table.columns or covariate in ("male", "female", "name"):
            raise BiasdaskError(
                f"meta_analysis: covariate {covariate!r} is not a column of the language catalog "
                "(family, branch); or give a mapping language -> value"
            )
        values = [table[covariate].get(lang) for lang in languages]
        return np.array(values, dtype=object), covariate
    missing = [lang for lang in languages if lang not in covariate]
    if missing:
        raise BiasdaskError(f"meta_analysis: the covariate has no value for {', '.join(missing)}")
    values = [covariate[lang] for lang in languages]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)
    return np.array(values, dtype=np.float64 if numeric else object), "covariate"
