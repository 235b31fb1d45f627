"""Inference over a whole results cube: p-values corrected for multiple testing over families of cells.

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

import numpy as np
import xarray as xr

from biasdask.stats.multitest import CORRECTIONS, adjust_pvalues, first_threshold, min_permutations

__all__ = ["adjusted_pvalues", "correction_warning", "families"]


def _has_weighting(cube: xr.Dataset, test: str) -> bool:
    """Whether a test's cells differ by weighting (a classic test's are copies: weighting ``none``)."""
    if "weighting" not in cube:
        return True
    weightings = {str(w) for w in np.asarray(cube["weighting"].sel({"test": test}).values).ravel() if str(w)}
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
    >>> import biasdask
    >>> cube = biasdask.open_results("results.zarr")  # doctest: +SKIP
    >>> adjusted_pvalues(cube, correction="bh").sel({"test": "gender", "method": "zipf"})  # doctest: +SKIP
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
