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

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from biasdask._calls import keyword_api
from biasdask.engine.placebo import SPREAD_METHOD, is_spread
from biasdask.errors import BiasdaskError
from biasdask.io.fs import Locatable, Location, as_location, redact
from biasdask.io.results import cube_label, embedding_url, embeddings_of, open_cube
from biasdask.lexicon import languages as catalog
from biasdask.stats.bootstrap import ResamplingMethod
from biasdask.stats.meta import MetaRegressionResult, RandomEffectsResult, meta_regression, random_effects
from biasdask.stats.multitest import CORRECTIONS, adjust_pvalues, first_threshold, min_permutations
from biasdask.stats.reliability import PAIR_FIELDS, intraclass_correlation, measure_note, pairwise_correlations

__all__ = [
    "RETEST_VARIABLES",
    "MetaAnalysis",
    "adjusted_pvalues",
    "correction_warning",
    "families",
    "meta_analysis",
    "retest_reliability",
    "retest_table",
]


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


# ----------------------------------------------------------------------------------------------------
# Test-retest across embeddings

#: what each variable of :func:`retest_reliability`'s Dataset holds
RETEST_VARIABLES = {
    "n": "languages with a finite d under both embeddings of the pair",
    "pearson": "Pearson's r of the languages' d between the two embeddings",
    "pearson_ci_low": "lower bound of the bootstrap interval of r (languages resampled in pairs)",
    "pearson_ci_high": "upper bound of the bootstrap interval of r",
    "spearman": "Spearman's rho of the languages' d between the two embeddings",
    "spearman_ci_low": "lower bound of the bootstrap interval of rho",
    "spearman_ci_high": "upper bound of the bootstrap interval of rho",
    "note": "why a correlation or its interval is NaN ('' otherwise)",
    "n_languages": "languages with a finite d under the embedding",
    "icc": "ICC(2,1) of d across every embedding (two-way random effects, absolute agreement; Shrout & Fleiss 1979)",
    "icc_ci_low": "lower bound of the F-based interval of the ICC (McGraw & Wong 1996)",
    "icc_ci_high": "upper bound of the F-based interval of the ICC",
    "icc_p_value": "p-value of F = MSR / MSE against ICC = 0 (one-sided)",
    "icc_n": "languages with a finite d under every embedding",
    "icc_note": "why the ICC or its interval is NaN ('' otherwise)",
}


def _place_text(place: xr.Dataset | Locatable, position: int) -> str:
    """How a results store was given, secrets removed (a Dataset: its position)."""
    if isinstance(place, xr.Dataset):
        return str(position)
    if isinstance(place, Location):
        return redact(place.url)
    if isinstance(place, (str, os.PathLike)):
        return redact(str(os.fspath(place)))
    return redact(str(place.root))  # an fsspec mapper


def _store_name(place: xr.Dataset | Locatable, position: int) -> str:
    """A results store's name in :func:`retest_reliability`: its last path component without ``.zarr``
    (``runs/cc.zarr`` is ``cc``); a Dataset's, its position."""
    name = _place_text(place, position).rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".zarr") or str(position)


def _embeddings(place: object) -> dict[str, xr.Dataset | Locatable] | None:
    """The cubes of a study of several embeddings by name, where ``place`` is one (its results store, or
    the tree :func:`biasdask.open_results` reads from it); else None."""
    if isinstance(place, xr.DataTree):
        return {str(name): child.to_dataset() for name, child in place.children.items()}
    if not isinstance(place, (str, os.PathLike, Location)):
        return None
    loc = as_location(place)
    names = embeddings_of(loc)
    return {name: Location(embedding_url(loc.url, name), loc.storage_options) for name in names} or None


def _named_results(
    results: Sequence[xr.Dataset | Locatable] | Mapping[str, xr.Dataset | Locatable] | Locatable | xr.DataTree,
) -> dict[str, xr.Dataset]:
    """The cubes of ``results``, opened, by name."""
    one = results if isinstance(results, (xr.Dataset, xr.DataTree, str, os.PathLike, Location)) else None
    if one is None and isinstance(results, Sequence) and len(results) == 1:
        one = results[0]
    several = _embeddings(one) if one is not None else None
    if several is not None:
        results = several
    elif isinstance(results, (xr.Dataset, xr.DataTree, str, os.PathLike, Location)):
        raise BiasdaskError(
            "retest_reliability: give the results of several embeddings (a list, or a mapping name -> results, or "
            "the results store of a study of several embeddings); got one"
        )
    if isinstance(results, Mapping):
        places = {str(name): place for name, place in results.items()}
    else:
        items = list(results)
        names = [_store_name(place, i) for i, place in enumerate(items)]
        if len(set(names)) < len(names):  # runs/cc/results.zarr, runs/wiki/results.zarr: the paths as given
            names = [_place_text(place, i) for i, place in enumerate(items)]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise BiasdaskError(f"retest_reliability: the same results given twice: {', '.join(twice)}")
        places = dict(zip(names, items))
    if len(places) < 2:
        raise BiasdaskError(
            f"retest_reliability: needs the results of at least 2 embeddings, got {len(places)}"
            + (f" ({', '.join(places)})" if places else "")
        )
    cubes = {}
    for name, place in places.items():
        cube = place if isinstance(place, xr.Dataset) else open_cube(place)
        missing = [v for v in ("effect_size", "language", "method", "test") if v not in cube.variables]
        if missing:
            raise BiasdaskError(f"retest_reliability: {name} is no results cube (it has no {', '.join(missing)})")
        cubes[name] = cube
    return cubes


def _in_common(cubes: Mapping[str, xr.Dataset], dim: str, chosen: str | Sequence[str] | None) -> list[str]:
    """The labels of ``dim`` (``test``, ``method``) of every cube, in the first cube's order; or ``chosen``,
    each of which every cube must have."""
    have = {name: [str(v) for v in cube[dim].values] for name, cube in cubes.items()}
    if chosen is not None:
        wanted = [chosen] if isinstance(chosen, str) else [str(c) for c in chosen]
        for label in wanted:
            lacking = [name for name, labels in have.items() if label not in labels]
            if lacking:
                name = lacking[0]
                raise BiasdaskError(
                    f"retest_reliability: no {dim} {label!r} in the results {name} (has {', '.join(have[name])})"
                )
        return list(dict.fromkeys(wanted))
    first = next(iter(have.values()))
    common = [label for label in first if all(label in labels for labels in have.values())]
    if not common:
        listed = "; ".join(f"{name} has {', '.join(labels) or 'none'}" for name, labels in have.items())
        raise BiasdaskError(f"retest_reliability: no {dim} in every one of the results ({listed})")
    return common


def _effect_sizes(
    cubes: Mapping[str, xr.Dataset], languages: list[str], test: str, method: str
) -> dict[str, np.ndarray]:
    """Each cube's d of one (test, method) over ``languages`` (NaN where it has none, or none finite)."""
    columns = {}
    for name, cube in cubes.items():
        cells = cube["effect_size"].sel({"test": test, "method": method})
        cells = cells.assign_coords(language=[str(v) for v in cells["language"].values])
        values = np.asarray(cells.reindex(language=languages).values, dtype=np.float64)
        columns[name] = np.where(np.isfinite(values), values, np.nan)
    return columns


def _retest_cell(columns: Mapping[str, np.ndarray], options: Mapping[str, object]) -> dict[str, object]:
    """The variables of one (test, method): each pair's correlations (a list per variable), the ICC's."""
    pairwise = pairwise_correlations(columns, **options)  # type: ignore[arg-type]
    cell: dict[str, object] = {v: [getattr(r, v) for r in pairwise.results] for v in PAIR_FIELDS}
    cell["note"] = [r.note for r in pairwise.results]
    cell["n_languages"] = list(pairwise.n_present)
    icc = intraclass_correlation(columns, ci_level=float(options["ci_level"]))  # type: ignore[arg-type]
    cell.update(
        icc=icc.icc,
        icc_ci_low=icc.ci_low,
        icc_ci_high=icc.ci_high,
        icc_p_value=icc.p_value,
        icc_n=icc.n,
        icc_note=icc.note,
    )
    return cell


def retest_reliability(
    results: Sequence[xr.Dataset | Locatable] | Mapping[str, xr.Dataset | Locatable] | Locatable | xr.DataTree,
    *,
    test: str | Sequence[str] | None = None,
    method: str | Sequence[str] | None = None,
    seed: int = 0,
    ci_level: float = 0.95,
    ci_method: ResamplingMethod = "BCa",
    n_resamples: int = 9999,
) -> xr.Dataset:
    """Test-retest reliability of the languages' effect sizes across embeddings: do several embeddings
    of the same languages (corpora such as Common Crawl, Wikipedia and subtitles, or training seeds)
    give the same d?

    For every test and weighting in all the results, the languages' d under each pair of embeddings
    are paired observations: their Pearson and Spearman correlations
    (:func:`biasdask.stats.paired_correlation`) with bootstrap intervals over languages, ``n`` the
    languages with a finite d under both. ICC(2,1) across all the embeddings
    (:func:`biasdask.stats.intraclass_correlation`; Shrout & Fleiss 1979) over the languages with a
    finite d under every one, with McGraw & Wong 1996's interval, asks whether the values themselves
    agree, not only their order: an embedding that shifts every d lowers it, not the correlations.

    The results of one embedding each are those of a study of several embeddings (its results store,
    whose embeddings name the results), or several stores (one study per embedding, of the same
    tests). Languages are matched by code and taken in the order of their codes, so a pair's result
    depends on its two stores alone, not on the others given or their order; a language missing from
    one store only leaves the pairs with that store (and the ICC). A classic test (no weighting: its cells are copies across methods) is computed
    once and repeated in every method, as in the cube.

    Parameters
    ----------
    results : results store, sequence or mapping of results
        The results store of a study of several embeddings (its path/URL, or the tree
        :func:`biasdask.open_results` reads from it), each embedding named by its name in the study; or
        results cubes (:func:`biasdask.open_results`) or the stores' paths/URLs: a list, each named
        by its store (``runs/cc.zarr`` is ``cc``; the whole path when two names clash; a Dataset by its
        position, ``"0"``, ``"1"``...), or a mapping name -> cube or store.
    test : str or sequence of str, optional
        The test labels (``career_family``, ``gender``, ``gender.ripa``...); default: those in every
        one of the results.
    method : str or sequence of str, optional
        The weightings; default: those in every one of the results.
    seed : int
        ``SeedSequence`` entropy of the bootstrap; every pair and cell resamples with it, so a pair's
        result does not depend on the other embeddings given.
    ci_level : float
        Confidence level of every interval.
    ci_method : {"BCa", "percentile"}
        The bootstrap interval of the correlations.
    n_resamples : int
        Bootstrap resamples.

    Returns
    -------
    xarray.Dataset
        The dims ``test``, ``method``, ``pair`` (labelled ``"cc vs wiki"``, with the coordinates
        ``first`` and ``second``) and ``embedding``; per (test, method, pair) ``n``, ``pearson``,
        ``pearson_ci_low``, ``pearson_ci_high``, ``spearman``, ``spearman_ci_low``,
        ``spearman_ci_high`` and ``note``; per (test, method) ``icc``, ``icc_ci_low``, ``icc_ci_high``,
        ``icc_p_value``, ``icc_n`` and ``icc_note``; per (test, method, embedding) ``n_languages``. Each
        variable's ``description`` attribute says what it holds; the Dataset's attributes hold
        ``ci_level``, ``ci_method``, ``n_resamples`` and ``seed``. :func:`retest_table` makes it a
        long table (one row per correlation or ICC).

    Raises
    ------
    BiasdaskError
        Fewer than 2 results, one that is no results cube, or a test or method not in every one.
    ValueError
        A bad ``ci_level``, ``ci_method``, ``n_resamples`` or ``seed``.

    Examples
    --------
    Career/family d of six languages under two corpora (real cubes come from :func:`biasdask.open_results`):

    >>> import xarray as xr
    >>> import biasdask
    >>> def cube(d):
    ...     return xr.Dataset({"effect_size": (("language", "method", "test"), [[[v]] for v in d])},
    ...                       coords={"language": ["ar", "da", "de", "el", "es", "fa"], "method": ["uniform"],
    ...                               "test": ["career_family"]})
    >>> rel = biasdask.retest_reliability({"wiki": cube([0.64, 0.85, 0.67, 0.35, 0.63, 0.22]),
    ...                                    "cc": cube([0.32, 0.82, 0.19, -0.15, 0.39, 0.01])}, n_resamples=999)
    >>> cell = rel.sel({"test": "career_family", "method": "uniform", "pair": "wiki vs cc"})
    >>> int(cell["n"]), round(float(cell["pearson"]), 3), round(float(cell["spearman"]), 3)
    (6, 0.871, 0.714)
    >>> round(float(rel["icc"].sel({"test": "career_family", "method": "uniform"})), 3)
    0.543
    """
    options = dict(seed=seed, ci_level=ci_level, ci_method=ci_method, n_resamples=n_resamples)
    cubes = _named_results(results)
    tests, methods = _in_common(cubes, "test", test), _in_common(cubes, "method", method)
    names = list(cubes)
    languages = sorted({str(v) for cube in cubes.values() for v in cube["language"].values})
    cells: dict[tuple[str, str], dict[str, object]] = {}
    for t in tests:
        weighted = any(_has_weighting(cube, t) for cube in cubes.values())
        for m in methods:
            if weighted or m == methods[0]:
                cells[t, m] = _retest_cell(_effect_sizes(cubes, languages, t, m), options)
            else:
                cells[t, m] = cells[t, methods[0]]
    return _retest_dataset(cells, tests, methods, names, options)


def _retest_dataset(
    cells: Mapping[tuple[str, str], Mapping[str, object]],
    tests: list[str],
    methods: list[str],
    names: list[str],
    options: Mapping[str, object],
) -> xr.Dataset:
    pairs = list(itertools.combinations(names, 2))

    def stack(variable: str, dtype: Any) -> np.ndarray:
        return np.array([[cells[t, m][variable] for m in methods] for t in tests], dtype=dtype)

    by_pair, by_cell = ("test", "method", "pair"), ("test", "method")
    data_vars: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        v: (by_pair, stack(v, np.int64 if v == "n" else np.float64)) for v in PAIR_FIELDS
    }
    data_vars["note"] = (by_pair, stack("note", object).astype(str))
    data_vars["n_languages"] = (("test", "method", "embedding"), stack("n_languages", np.int64))
    for v in ("icc", "icc_ci_low", "icc_ci_high", "icc_p_value"):
        data_vars[v] = (by_cell, stack(v, np.float64))
    data_vars["icc_n"] = (by_cell, stack("icc_n", np.int64))
    data_vars["icc_note"] = (by_cell, stack("icc_note", object).astype(str))
    ds = xr.Dataset(
        {v: (dims, values, {"description": RETEST_VARIABLES[v]}) for v, (dims, values) in data_vars.items()},
        coords={
            "test": tests,
            "method": methods,
            "pair": [f"{a} vs {b}" for a, b in pairs],
            "first": ("pair", [a for a, _ in pairs]),
            "second": ("pair", [b for _, b in pairs]),
            "embedding": names,
        },
        attrs={
            "description": "test-retest reliability of the languages' effect sizes d across embeddings",
            **{k: options[k] for k in ("ci_level", "ci_method", "n_resamples", "seed")},
        },
    )
    return ds


def retest_table(reliability: xr.Dataset) -> pd.DataFrame:
    """:func:`retest_reliability`'s Dataset as a long table: one row per (test, method, between,
    measure), ``measure`` one of ``pearson``, ``spearman`` (between a pair of embeddings) and ``icc``
    (between all), with the columns ``estimate``, ``ci_low``, ``ci_high``, ``n`` and ``note``."""
    rows = []
    everyone = ", ".join(str(e) for e in reliability["embedding"].values)
    for t in (str(v) for v in reliability["test"].values):
        for m in (str(v) for v in reliability["method"].values):
            cell = reliability.sel({"test": t, "method": m})
            for pair in (str(p) for p in reliability["pair"].values):
                c = cell.sel({"pair": pair})
                for measure in ("pearson", "spearman"):
                    bounds = (float(c[f"{measure}_ci_low"]), float(c[f"{measure}_ci_high"]))
                    note = measure_note(str(c["note"].values), measure)
                    rows.append((t, m, pair, measure, float(c[measure]), *bounds, int(c["n"]), note))
            bounds = (float(cell["icc_ci_low"]), float(cell["icc_ci_high"]))
            rows.append(
                (t, m, everyone, "icc", float(cell["icc"]), *bounds, int(cell["icc_n"]), str(cell["icc_note"].values))
            )
    columns = ["test", "method", "between", "measure", "estimate", "ci_low", "ci_high", "n", "note"]
    return pd.DataFrame(rows, columns=columns).set_index(["test", "method", "between", "measure"])
