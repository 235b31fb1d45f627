"""Reliability over a finished study: do its scoring rules and its tests agree?

Du, Fang & Nguyen 2021 call it inter-rater consistency: different scoring rules applied to the same
words should tell the same story. :func:`agreement` answers it from what a run has already stored
(the cube and the per-word scores), without reading the vectors again:

- **word by word**: per language and full-vocabulary test, Pearson's r over the vocabulary between the
  per-word scores u under each pair of associations (cosine, SemAxis, RIPA, euclidean), from mergeable
  moments of the stored scores (:func:`biasdask.stats.score_correlation`);
- **across languages, between associations**: the languages' d of ``gender`` against ``gender.ripa``
  (and every other pair), per test and weighting;
- **across languages, between the tests of one family**: WEAT's d of the classic test run on a
  language's sets (``weat7``, ``xweat7`` or ``career_family``) against the set-level metrics RND, RNSB,
  MAC, ECT and NAS on the same sets, each turned so that larger means more bias.

The across-language figures are :func:`biasdask.stats.paired_correlation`'s: Pearson and Spearman with
bootstrap intervals over the languages, taken in the order of their codes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from biasdask.errors import IncompleteStoreError
from biasdask.io import results as rs
from biasdask.io.fs import Locatable
from biasdask.stats.bootstrap import ResamplingMethod
from biasdask.stats.reliability import (
    PAIR_FIELDS,
    ItemMoments,
    check_bootstrap,
    item_moments,
    measure_note,
    merge_item_moments,
    paired_correlation,
    pairwise_correlations,
    score_correlation,
)
from biasdask.stats.setmetrics import METRICS

__all__ = [
    "AGREEMENT_VARIABLES",
    "MEASURES",
    "agreement",
    "agreement_table",
    "consistency_tests",
    "has_agreement",
]

#: The full-vocabulary test whose per-word scores a results store keeps (``scores/<language>``).
SCORED_TEST = "gender"

#: A test family's measures on one language's sets: name -> (the sign that turns its value so that larger
#: means more bias, ``signed`` (towards A, negative towards B) or ``magnitude`` (no direction), what it is).
MEASURES: dict[str, tuple[int, str, str]] = {
    "d": (
        1,
        "signed",
        "WEAT's effect size d of the classic test on the language's sets (weat7, xweat7 or career_family): > 0 when "
        "X goes with A (math with male terms; for career_family male terms with career)",
    ),
    "rnd": (
        -1,
        "signed",
        "minus the relative norm distance (Garg et al. 2018): > 0 when S is nearer A's mean than B's",
    ),
    "rnsb": (1, "magnitude", "RNSB (Sweeney & Najafian 2019), a KL divergence >= 0: larger is more bias, no direction"),
    "mac": (
        -1,
        "magnitude",
        "minus MAC (Manzini et al. 2019): larger when S is nearer the attribute words, no direction",
    ),
    "ect": (
        -1,
        "magnitude",
        "minus ECT (Dev & Phillips 2019): larger when S ranks less alike towards A and B, no direction",
    ),
    "nas": (1, "signed", "NAS (Caliskan et al. 2017): > 0 when S leans towards A"),
}

_PAIR_TEXT = {
    "n": "languages with a value under both",
    "pearson": "Pearson's r over languages",
    "pearson_ci_low": "lower end of the bootstrap interval of Pearson's r (languages resampled)",
    "pearson_ci_high": "upper end of the bootstrap interval of Pearson's r",
    "spearman": "Spearman's rho over languages (Pearson's r of the average ranks)",
    "spearman_ci_low": "lower end of the bootstrap interval of Spearman's rho",
    "spearman_ci_high": "upper end of the bootstrap interval of Spearman's rho",
    "note": "why a value or interval is NaN ('' otherwise)",
}

AGREEMENT_VARIABLES: dict[str, str] = {
    "word_pearson": "Pearson's r over the vocabulary between the per-word scores u of two associations",
    "word_ci_low": "lower end of r's Fisher-z interval (words as independent draws: too narrow over a vocabulary)",
    "word_ci_high": "upper end of r's Fisher-z interval",
    "word_n": "words with a score under every association of the test",
    "word_n_skipped": "words left out for a missing score (excluded from the targets, or a zero vector)",
    "word_note": "why the per-word correlation is NaN ('' otherwise)",
    **{f"association_{k}": f"d between two associations: {v}" for k, v in _PAIR_TEXT.items()},
    **{f"measure_{k}": f"two measures of one test family on the same sets: {v}" for k, v in _PAIR_TEXT.items()},
    "measure_value": "each language's value of a measure, turned by measure_sign (larger: more bias)",
    "measure_test": "the classic test whose d is the language's measure d ('' when none ran on its sets)",
    "measure_sets": "the word sets of the language's set-level metrics (the cube's word_sets)",
}


# ----------------------------------------------------------------------------------------------
# What a cube holds to compare


def _association_labels(cube: xr.Dataset) -> dict[str, dict[str, str]]:
    """Full-vocabulary test -> {association: cube label}, for the tests run with two associations or more."""
    found: dict[str, dict[str, str]] = {}
    for label in (str(t) for t in cube["test"].values):
        test, association = rs.split_label(label)
        if test in rs.FULL_VOCABULARY_TESTS:
            found.setdefault(test, {})[association] = label
    return {test: labels for test, labels in found.items() if len(labels) >= 2}


def _measure_tests(cube: xr.Dataset) -> tuple[list[str], list[str]]:
    """(the cube's set-level metrics, its classic tests with an effect size d)."""
    labels = [str(t) for t in cube["test"].values]
    metrics = [m for m in METRICS if m in labels]
    classic = [t for t in labels if t not in METRICS and rs.split_label(t).test not in rs.FULL_VOCABULARY_TESTS]
    return metrics, classic


def _measures(cube: xr.Dataset) -> list[str]:
    metrics, classic = _measure_tests(cube)
    return [m for m in MEASURES if m in metrics or (m == "d" and metrics and classic)]


def has_agreement(cube: xr.Dataset) -> bool:
    """Whether a results cube has two scoring rules or two measures of one family to compare."""
    return bool(_association_labels(cube)) or len(_measures(cube)) >= 2


def consistency_tests(cube: xr.Dataset) -> list[str]:
    """The tests of a results cube with a Cronbach's α or a split-half reliability (the cube variables
    ``cronbach_alpha``, ``split_half``) in some cell, in the cube's order."""
    names = [v for v in ("cronbach_alpha", "split_half") if v in cube]
    if not names:
        return []
    held = np.isfinite(cube[names].to_array().astype(np.float64)).any(dim=["variable", "language", "method"])
    return [str(t) for t, has in zip(cube["test"].values, held.values) if has]


# ----------------------------------------------------------------------------------------------
# Word by word, from the stored per-word scores


def _score_variable(association: str) -> str:
    return "u" if association == "cosine" else f"u_{association}"


def _word_moments(scores: xr.Dataset, names: Sequence[str]) -> ItemMoments:
    """The moments of the columns ``names`` of a language's stored scores, read a stored chunk at a time
    in this process; bit-identical whatever the chunks (:class:`~biasdask.stats.ItemMoments`)."""
    n = scores.sizes["word"]
    chunks = scores[names[0]].chunks
    step = max(1, chunks[0][0] if chunks else n)
    parts = []
    for start in range(0, n, step):
        block = scores[list(names)].isel(word=slice(start, start + step)).compute(scheduler="synchronous")
        rows = np.column_stack([np.asarray(block[name].values, dtype=np.float64) for name in names])
        parts.append(item_moments(rows, start=start))
    return merge_item_moments(*parts) if parts else item_moments(np.empty((0, len(names))))


def _word_figures(
    loc: Locatable, language: str, associations: Sequence[str], ran: Sequence[str], level: float
) -> dict[str, Any]:
    """One language's per-word correlations between the associations ``ran`` of its test: (k, k) arrays
    over ``associations`` (NaN for the others), the words used and skipped (-1: none computed), a note."""
    k = len(associations)
    out: dict[str, Any] = {name: np.full((k, k), np.nan) for name in ("word_pearson", "word_ci_low", "word_ci_high")}
    out.update(word_n=-1, word_n_skipped=-1, word_note="")
    try:
        scores = rs.open_scores(loc, language=language)
    except IncompleteStoreError:
        out["word_note"] = "no per-word scores stored for the language (save_scores: false, or the language failed)"
        return out
    stored = [a for a in associations if a in ran and _score_variable(a) in scores]
    absent = [a for a in associations if a in ran and a not in stored]
    if absent:
        out["word_note"] = f"no stored per-word scores of {', '.join(absent)}"
    if len(stored) < 2:
        return out
    res = score_correlation(_word_moments(scores, [_score_variable(a) for a in stored]), labels=stored, ci_level=level)
    at = [list(associations).index(a) for a in stored]
    for name, values in (("word_pearson", res.correlation), ("word_ci_low", res.ci_low), ("word_ci_high", res.ci_high)):
        out[name][np.ix_(at, at)] = values
    out["word_n"], out["word_n_skipped"] = res.n, res.n_skipped
    if res.n < 3 and not out["word_note"]:
        out["word_note"] = f"{res.n} word(s) with every association's score: a correlation needs at least 3"
    return out


# ----------------------------------------------------------------------------------------------
# Across languages


def _pair_fields(result: Any) -> dict[str, Any]:
    return {**{f: getattr(result, f) for f in PAIR_FIELDS}, "note": result.note}


def _cells(cube: xr.Dataset, variable: str, test: str, method: str, languages: Sequence[str]) -> np.ndarray:
    """A cube variable of one (test, method) over ``languages``, NaN where not finite."""
    values = np.asarray(cube[variable].sel({"test": test, "method": method}).sel(language=list(languages)).values)
    values = values.astype(np.float64)
    return np.where(np.isfinite(values), values, np.nan)


_IAT_SETS = re.compile(r"iat:([a-z,]+):(\S+) \((\w+)\)")


def _same_sets(metric_sets: str, test_sets: str) -> bool:
    """Whether a classic test's word sets (``word_sets``) hold a set-level metric's: the same lists
    (``weat7``, ``xweat7:de``), or the IAT's lists of one language and model of which the metric's
    (``iat:career:fr (cc)``) are a part (``iat:career,family:fr (cc)``)."""
    if not metric_sets or metric_sets == "study":
        return False
    if metric_sets == test_sets:
        return True
    mine, theirs = _IAT_SETS.fullmatch(metric_sets), _IAT_SETS.fullmatch(test_sets)
    if mine is None or theirs is None or mine.groups()[1:] != theirs.groups()[1:]:
        return False
    return set(mine[1].split(",")) <= set(theirs[1].split(","))


def _language_measures(cube: xr.Dataset, languages: Sequence[str], measures: Sequence[str]) -> dict[str, Any]:
    """Each language's measures (turned by their sign), the classic test giving its d, and its sets."""
    metrics, classic = _measure_tests(cube)
    method = str(cube["method"].values[0])  # a classic cell repeats its values in every method
    values = np.full((len(languages), len(measures)), np.nan)
    tests, sets = [""] * len(languages), [""] * len(languages)
    for j, measure in enumerate(measures):
        if measure != "d":
            values[:, j] = MEASURES[measure][0] * _cells(cube, "statistic", measure, method, languages)
    for i, language in enumerate(languages) if "word_sets" in cube else ():
        cell = cube.sel({"language": language, "method": method})
        sets[i] = next((s for m in metrics if (s := str(cell["word_sets"].sel(test=m).values))), "")
        tests[i] = next((t for t in classic if _same_sets(sets[i], str(cell["word_sets"].sel(test=t).values))), "")
        if "d" in measures and tests[i]:
            d = float(cell["effect_size"].sel(test=tests[i]).values)
            values[i, list(measures).index("d")] = d if np.isfinite(d) else np.nan
    return {
        "measure_value": values,
        "measure_test": np.array(tests, dtype=str),
        "measure_sets": np.array(sets, dtype=str),
    }


def _measure_pairs(values: np.ndarray, measures: Sequence[str], options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The correlations of every pair of measures over languages; a signed measure paired with one
    without a direction enters as its distance from no bias, |value|."""
    out = []
    for i, j in itertools.combinations(range(len(measures)), 2):
        x, y = values[:, i], values[:, j]
        kinds = MEASURES[measures[i]][1], MEASURES[measures[j]][1]
        if kinds[0] != kinds[1]:
            x, y = (np.abs(x), y) if kinds[0] == "signed" else (x, np.abs(y))
        out.append(_pair_fields(paired_correlation(x, y, **options)))
    return out


def _association_pairs(
    cube: xr.Dataset,
    labels: Mapping[str, str],
    associations: Sequence[str],
    method: str,
    languages: Sequence[str],
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The correlations of the languages' d between every pair of ``associations`` in one (test, method)."""
    nan = np.full(len(languages), np.nan)
    columns = {
        a: _cells(cube, "effect_size", labels[a], method, languages) if a in labels else nan for a in associations
    }
    return [_pair_fields(r) for r in pairwise_correlations(columns, **options).results]


# ----------------------------------------------------------------------------------------------
# The Dataset


def agreement(
    results: Locatable,
    *,
    seed: int | None = None,
    ci_level: float = 0.95,
    ci_method: ResamplingMethod = "BCa",
    n_resamples: int = 9999,
) -> xr.Dataset:
    """Agreement across scoring rules and across the tests of one family, from a finished study's
    results store (its cube and per-word scores; the vectors are not read).

    - ``word_*`` (language, vocabulary_test, association_pair): Pearson's r over the vocabulary between the
      per-word scores u of two associations, with its Fisher-z interval and n
      (:func:`biasdask.stats.score_correlation`), from the stored per-word scores (``save_scores``),
      which the store keeps for ``gender``; bit-identical whatever the chunks they were computed and
      stored in.
    - ``association_*`` (vocabulary_test, method, association_pair): the Pearson and Spearman correlations of the
      languages' d under two associations (``gender`` against ``gender.ripa``), with bootstrap
      intervals over languages and n (:func:`biasdask.stats.paired_correlation`). Every association
      counts u > 0 as closer to A, so the d's share their sign.
    - ``measure_*`` (measure_pair): the same between the measures of one test family on each
      language's sets: d of the classic test on the sets of the language's set-level metrics
      (``weat7`` in English, ``xweat7`` in de, es, hr, it, ru, tr, ``career_family`` elsewhere) and
      RND, RNSB, MAC, ECT, NAS, each turned by its ``measure_sign`` so that larger means more bias
      (``measure_kind`` ``signed``: towards A; ``magnitude``: without a direction). A signed measure
      paired with a magnitude enters as its absolute value. ``measure_value`` (language, measure) holds the
      values, ``measure_test`` and ``measure_sets`` (language) where they come from.

    The languages are resampled in the order of their codes, and every pair with ``seed``, so a pair's
    figures depend on its two columns and the seed alone. The dims ``language`` and ``method`` are the
    cube's, in its order; ``vocabulary_test`` names the full-vocabulary tests run under several
    associations (``gender``, ``context``), so that the Dataset, stored in the child group
    ``reliability/agreement``, opens with the cube in one ``xarray.open_datatree``.

    Parameters
    ----------
    results
        A results store: path, URL, :class:`~biasdask.Location` or fsspec mapper.
    seed
        ``SeedSequence`` entropy of the bootstrap; default: the study's seed.
    ci_level
        Confidence level of every interval.
    ci_method
        ``"BCa"`` or ``"percentile"``: the bootstrap interval over languages.
    n_resamples
        Bootstrap resamples.

    Returns
    -------
    xarray.Dataset
        Each variable's ``description`` says what it holds; the Dataset's attrs hold the options, and
        ``directions`` says which way each measure counts bias. :func:`agreement_table` makes it a long
        table.

    Raises
    ------
    ValueError, TypeError
        A bad ``seed``, ``ci_level``, ``ci_method`` or ``n_resamples``; a Dataset instead of a store.
    BiasdaskError
        No results store at ``results`` (IncompleteStoreError: one whose creation never finished).

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(300))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> url = "memory://examples/agreement/r.zarr"
    >>> _ = biasdask.run({"output": url, "languages": {"en": {"store": emb, "a": ["he", "man"], "b": ["she", "woman"]}},
    ...                   "tests": ["gender"], "associations": ["cosine", "ripa"], "methods": ["uniform"],
    ...                   "n_permutations": 9, "placebo": False, "seed": 1})
    >>> figures = biasdask.agreement(url, n_resamples=99)
    >>> pair = figures.sel({"language": "en", "vocabulary_test": "gender", "association_pair": "cosine vs ripa"})
    >>> int(pair["word_n"]), round(float(pair["word_pearson"]), 3)
    (304, 0.983)
    """
    if isinstance(results, xr.Dataset):
        raise TypeError("agreement: give the results store (path or URL): the per-word agreement reads its scores")
    cube = rs.open_cube(results)
    seed = int(cube.attrs.get("seed", 0)) if seed is None else seed
    check_bootstrap(ci_level, ci_method, n_resamples, seed)
    options: dict[str, Any] = dict(
        seed=int(seed), ci_level=float(ci_level), ci_method=ci_method, n_resamples=int(n_resamples)
    )
    order = [str(v) for v in cube["language"].values]  # the cube's, as the child group's dim shares it
    languages = sorted(order)
    methods = [str(v) for v in cube["method"].values]
    labels = _association_labels(cube)
    associations = list(dict.fromkeys(a for ran in labels.values() for a in ran))
    words = {
        (language, test): _word_figures(results, language, associations, list(ran), options["ci_level"])
        for language in languages
        for test, ran in labels.items()
        if test == SCORED_TEST
    }
    by_association = {
        (test, method): _association_pairs(cube, ran, associations, method, languages, options)
        for test, ran in labels.items()
        for method in methods
    }
    measures = _measures(cube)
    per_language = _language_measures(cube, languages, measures)
    by_measure = _measure_pairs(per_language["measure_value"], measures, options)
    ds = _dataset(order, list(labels), methods, associations, measures, words, by_association, by_measure)
    at = [languages.index(language) for language in order]
    for name, values in per_language.items():
        dims = ("language", "measure") if name == "measure_value" else ("language",)
        ds[name] = (dims, values[at], {"description": AGREEMENT_VARIABLES[name]})
    ds.attrs.update(_attrs(options))
    return ds


_NOT_STORED = f"the results store keeps the per-word scores of {SCORED_TEST} only"


def _word_variables(
    languages: Sequence[str],
    tests: Sequence[str],
    associations: Sequence[str],
    words: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, np.ndarray]:
    """The word_* variables (language, vocabulary_test, association_pair)."""
    at = [(associations.index(a), associations.index(b)) for a, b in itertools.combinations(associations, 2)]
    shape = (len(languages), len(tests), len(at))
    out: dict[str, np.ndarray] = {
        name: np.full(shape, np.nan) for name in ("word_pearson", "word_ci_low", "word_ci_high")
    }
    out.update(word_n=np.full(shape, -1, dtype=np.int64), word_n_skipped=np.full(shape, -1, dtype=np.int64))
    out["word_note"] = np.full(shape, _NOT_STORED, dtype=object)
    for (li, language), (ti, test) in itertools.product(enumerate(languages), enumerate(tests)):
        figures = words.get((language, test))
        if figures is None:
            continue
        for name in ("word_pearson", "word_ci_low", "word_ci_high"):
            out[name][li, ti] = [figures[name][i, j] for i, j in at]
        for name in ("word_n", "word_n_skipped", "word_note"):
            out[name][li, ti] = figures[name]
    out["word_note"] = out["word_note"].astype(str)
    return out


def _pair_variables(prefix: str, cells: np.ndarray) -> dict[str, np.ndarray]:
    """``<prefix>_n``, ``<prefix>_pearson``, ..., ``<prefix>_note`` from an object array of pair-field
    mappings (:func:`_pair_fields`)."""
    out = {}
    for field in (*PAIR_FIELDS, "note"):
        dtype = np.int64 if field == "n" else str if field == "note" else np.float64
        out[f"{prefix}_{field}"] = np.array([cell[field] for cell in cells.ravel()], dtype=dtype).reshape(cells.shape)
    return out


def _dataset(
    languages: list[str],
    tests: list[str],
    methods: list[str],
    associations: list[str],
    measures: list[str],
    words: Mapping[tuple[str, str], Mapping[str, Any]],
    by_association: Mapping[tuple[str, str], list[dict[str, Any]]],
    by_measure: list[dict[str, Any]],
) -> xr.Dataset:
    a_pairs = list(itertools.combinations(associations, 2))
    m_pairs = list(itertools.combinations(measures, 2))
    cells = np.empty((len(tests), len(methods), len(a_pairs)), dtype=object)
    for (ti, test), (mi, method) in itertools.product(enumerate(tests), enumerate(methods)):
        for pi, pair in enumerate(by_association[test, method]):
            cells[ti, mi, pi] = pair
    measure_cells = np.empty(len(m_pairs), dtype=object)
    measure_cells[:] = by_measure
    dims = {
        "word": ("language", "vocabulary_test", "association_pair"),
        "association": ("vocabulary_test", "method", "association_pair"),
        "measure": ("measure_pair",),
    }
    variables = {
        **{k: (dims["word"], v) for k, v in _word_variables(languages, tests, associations, words).items()},
        **{k: (dims["association"], v) for k, v in _pair_variables("association", cells).items()},
        **{k: (dims["measure"], v) for k, v in _pair_variables("measure", measure_cells).items()},
    }
    return xr.Dataset(
        {k: (d, v, {"description": AGREEMENT_VARIABLES[k]}) for k, (d, v) in variables.items()},
        coords={
            "language": languages,
            "vocabulary_test": tests,
            "method": methods,
            "association_pair": [f"{a} vs {b}" for a, b in a_pairs],
            "association_first": ("association_pair", [a for a, _ in a_pairs]),
            "association_second": ("association_pair", [b for _, b in a_pairs]),
            "measure": measures,
            "measure_sign": ("measure", [MEASURES[m][0] for m in measures]),
            "measure_kind": ("measure", [MEASURES[m][1] for m in measures]),
            "measure_description": ("measure", [MEASURES[m][2] for m in measures]),
            "measure_pair": [f"{a} vs {b}" for a, b in m_pairs],
            "measure_first": ("measure_pair", [a for a, _ in m_pairs]),
            "measure_second": ("measure_pair", [b for _, b in m_pairs]),
        },
    )


def _attrs(options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "description": "agreement across scoring rules (associations) and across the measures of one test family",
        **options,
        "languages": "resampled in the order of their codes; a pair of columns uses the languages with both values",
        "directions": (
            "every association counts u > 0 (and d > 0) as closer to A, the first attribute set; each measure is "
            "multiplied by measure_sign so that larger means more bias: towards A for a signed measure (d, -rnd, "
            "nas), in magnitude for one without a direction (rnsb, -mac, -ect); a signed measure paired with a "
            "magnitude enters as |value|"
        ),
    }


# ----------------------------------------------------------------------------------------------
# As a table


def agreement_table(figures: xr.Dataset) -> pd.DataFrame:
    """:func:`agreement`'s Dataset as a long table: one row per (test, method, over, between, measure),
    ``over`` ``languages`` (a correlation of the languages' values) or ``words: <language>`` (over that
    language's vocabulary), ``measure`` ``pearson`` or ``spearman``; the columns ``estimate``,
    ``ci_low``, ``ci_high``, ``n`` and ``note``. The rows of the measures of one family have the test
    ``same sets`` and the method ``none``, per-word rows the method ``none`` (u has no weighting)."""
    rows: list[tuple[Any, ...]] = []
    f = figures
    for test, method, pair in itertools.product(
        *(map(str, f[d].values) for d in ("vocabulary_test", "method", "association_pair"))
    ):
        cell = f.sel({"vocabulary_test": test, "method": method, "association_pair": pair})
        rows += _correlation_rows("association", cell, (test, method, "languages", pair))
    for test, language, pair in itertools.product(
        *(map(str, f[d].values) for d in ("vocabulary_test", "language", "association_pair"))
    ):
        c = f.sel({"vocabulary_test": test, "language": language, "association_pair": pair})
        estimate = (float(c["word_pearson"]), float(c["word_ci_low"]), float(c["word_ci_high"]))
        rows.append(
            (
                test,
                "none",
                f"words: {language}",
                pair,
                "pearson",
                *estimate,
                int(c["word_n"]),
                str(c["word_note"].values),
            )
        )
    for pair in map(str, f["measure_pair"].values):
        rows += _correlation_rows("measure", f.sel({"measure_pair": pair}), ("same sets", "none", "languages", pair))
    columns = ["test", "method", "over", "between", "measure", "estimate", "ci_low", "ci_high", "n", "note"]
    return pd.DataFrame(rows, columns=columns).set_index(columns[:5])


def _correlation_rows(prefix: str, cell: xr.Dataset, key: tuple[str, ...]) -> list[tuple[Any, ...]]:
    note, n = str(cell[f"{prefix}_note"].values), int(cell[f"{prefix}_n"])
    return [
        (*key, m, *(float(cell[f"{prefix}_{m}{end}"]) for end in ("", "_ci_low", "_ci_high")), n, measure_note(note, m))
        for m in ("pearson", "spearman")
    ]
