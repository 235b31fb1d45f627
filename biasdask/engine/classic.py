"""The classic tests on stored embeddings: WEAT, XWEAT, the career/family IAT, and cross-lingual WEAT.

Each test reads from the Zarr store only the rows of the words it needs, computes the per-word
associations with :mod:`biasdask.stats.weat`, and hands them to the same permutation engine as the
full-vocabulary test (:func:`biasdask.engine.permutation.permutation_test`), which enumerates every split
when C(|X| + |Y|, |X|) is at most the requested number of permutations (``exact=True``).

- :func:`weat`: WEAT on any four word sets, cosine or Euclidean; ``attributes_from`` (or
  :func:`cross_lingual_weat`) takes the attribute vectors from a second, aligned store.
- :func:`career_family_test`: Lewis & Lupyan 2020's career/family IAT with their translation averaging and
  grammatical-gender convention.
- :func:`run_cell`, :func:`tests_for_language`: the test labels of a study (``weat1``..``weat10``,
  ``xweat1``..``xweat10``, ``career_family``) and the languages they apply to.
- :func:`fit_alignment`, :func:`align`: orthogonal Procrustes between two stores over a bilingual
  dictionary, and the aligned source store written as a Dask graph.

Coverage. For every word set the result records how many of its words were found. A set of which less
than ``min_coverage`` (default 80%, XWEAT's rule) was found makes the test raise :class:`CoverageError`
(a :class:`~biasdask.errors.MissingWordsError`) naming the missing words, so that a study records the cell
as skipped instead of scoring it on a handful of words. A word whose stored vector is zero has no
direction and counts as missing.

Precision. Stores hold float32. The rows a test reads are widened to float64 through their shortest
round-trip decimal, which is exactly the number printed in the source file whenever it had at most six
significant digits (fastText and GloVe print four or five); the published numbers (Caliskan et al.,
Lewis & Lupyan) were computed from those decimals, and effect sizes are reproduced to 1e-12 instead of the
~1e-7 a plain float32 -> float64 cast gives. For other values the widening moves a number by less than
half a float32 unit in the last place, i.e. it changes nothing the data can tell apart. The permutation
engine keeps the per-word scores as float32 for the statistic and its null (as for full vocabularies), so
``statistic`` agrees with a float64 computation to about 1e-7 relative; ``effect_size`` is float64.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import dask
import dask.array as da
import fsspec
import numpy as np
import xarray as xr
from distributed import Client, as_completed

from biasdask.engine.cluster import active_client
from biasdask.engine.permutation import Alternative, permutation_test
from biasdask.engine.scores import as_dataset, read_rows
from biasdask.errors import BiasdaskError, InputFormatError, MissingWordsError
from biasdask.io.embeddings import Embeddings
from biasdask.io.store import (
    check_replaceable,
    finish_store,
    open_embeddings,
    prepare_store,
    remove_store,
    write_block,
)
from biasdask.lexicon import available_tests, iat_categories, iat_languages, iat_words, weat_test, xweat_test
from biasdask.progress import progress_bar
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.procrustes import procrustes_map
from biasdask.stats.weat import SIMILARITIES, career_family_effect, weat_scores

__all__ = [
    "DEFAULT_MIN_COVERAGE",
    "Alignment",
    "ClassicTestResult",
    "CoverageError",
    "SetCoverage",
    "align",
    "career_family_test",
    "cross_lingual_weat",
    "fit_alignment",
    "run_cell",
    "tests_for_language",
    "weat",
]

DEFAULT_MIN_COVERAGE = 0.8
"""XWEAT's threshold: a test runs only if at least 80% of each of its word sets is in the vocabulary."""

_ROLES = ("x", "y", "a", "b")

_CONVENTIONS = {
    "cosine": (
        "f(w, a) = cos(w, a); s = sum_X s(x) - sum_Y s(y) with s(w) = mean_A f - mean_B f, so s > 0 means X is "
        "more associated with A (and Y with B); effect size with the sample SD (ddof = 1)"
    ),
    "euclidean": (
        "f(w, a) = -|w/|w| - a/|a||, minus the Euclidean distance of the unit vectors, so s > 0 means X is "
        "closer to A (and Y to B), as with cosine; p = P[s_i >= s] here is seed 002's P[s_i < s] (footnote 3) "
        "on the distance itself; effect size with the sample SD (ddof = 1)"
    ),
}
_CAREER_FAMILY_CONVENTION = (
    "Lewis & Lupyan 2020: a word's vector is the mean over its translations of the mean of its tokens' raw "
    "vectors; s(w) = mean cos(w, career) - mean cos(w, family); d = (mean_male s - mean_female s) / SD "
    "(ddof = 1). With grammatical gender, male s come from the masculine+neutral forms, female s from the "
    "feminine+neutral forms, SD is the mean of the two runs' SDs, and the permutation test splits the pool "
    "of those male and female s"
)


# --------------------------------------------------------------------------------------------------
# Results and coverage


@dataclass(frozen=True)
class SetCoverage:
    """Which words of one word set an embedding has.

    Attributes
    ----------
    role
        ``x``, ``y`` (targets), ``a``, ``b`` (attributes).
    name
        Name of the set (``"Math"``, ``"career"``...).
    requested
        The distinct words asked for, in order.
    found
        Those with a non-zero vector in the embedding.
    missing
        Those absent from the vocabulary or stored as a zero vector.
    """

    role: str
    name: str
    requested: tuple[str, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def fraction(self) -> float:
        """Share of the requested words that were found (1.0 for an empty request)."""
        return len(self.found) / len(self.requested) if self.requested else 1.0

    def describe(self) -> str:
        """One-line summary: ``X (Math) 7/8 found, missing: calculus``."""
        text = f"{self.role.upper()} ({self.name}) {len(self.found)}/{len(self.requested)} found"
        return text + (f", missing: {', '.join(self.missing)}" if self.missing else "")


class CoverageError(MissingWordsError):
    """A word set of a test falls below the coverage threshold; the test was not run.

    Attributes
    ----------
    test
        The test label (``"weat3"``, ``"xweat5"``, ``"career_family"``, or ``"weat"``).
    language
        Language of the words.
    coverage
        Role -> :class:`SetCoverage` of every set of the test.
    min_coverage
        The threshold that was applied.
    """

    def __init__(
        self,
        message: str,
        test: str = "",
        language: str = "",
        coverage: Mapping[str, SetCoverage] | None = None,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
    ) -> None:
        super().__init__(message)
        self.test = test
        self.language = language
        self.coverage = dict(coverage or {})
        self.min_coverage = min_coverage

    def __reduce__(self):  # keep the attributes across processes (Dask, multiprocessing)
        return (type(self), (str(self), self.test, self.language, self.coverage, self.min_coverage))

    @property
    def missing(self) -> dict[str, tuple[str, ...]]:
        """Role -> missing words, for the sets below the threshold (or with no word found)."""
        return {
            r: c.missing for r, c in self.coverage.items() if c.fraction < self.min_coverage or not c.found
        }

    def cell_values(self) -> dict[str, float | int | bool]:
        """The results-cube variables of the skipped cell: NaN numbers, and how many words each set had."""
        values: dict[str, float | int | bool] = dict.fromkeys(
            ("statistic", "effect_size", "p_value", "z_score", "p_value_normal", "null_mean", "null_std"), math.nan
        )
        values.update(n_permutations=-1, exact=False)
        values.update({f"n_{r}": len(c.found) for r, c in self.coverage.items()})
        return values


@dataclass(frozen=True, kw_only=True)
class ClassicTestResult(PermutationTestResult):
    """Outcome of a classic test: the permutation test's numbers plus what the test was run on.

    The numeric attributes are inherited from :class:`~biasdask.stats.permutation.PermutationTestResult`
    (``statistic`` s, ``pvalue``, ``effect_size`` d, ``z_score``, ``p_value_normal``, ``null_mean``,
    ``null_std``, ``n_permutations``, ``exact``, ``alternative`` as resolved, ``n_x``, ``n_y``, ``seed``,
    ``null_distribution``).

    Attributes
    ----------
    n_a, n_b
        Attribute words found.
    test
        Test label (``"weat7"``, ``"xweat1"``, ``"career_family"``; ``"weat"`` for ad hoc word sets).
    language
        Language of the target words (``"xx->yy"`` for a cross-lingual test: targets xx, attributes yy).
    similarity
        ``"cosine"`` or ``"euclidean"``.
    convention
        How s, its sign and the effect size are defined (the direction convention for a distance).
    coverage
        Role (``x``, ``y``, ``a``, ``b``) -> :class:`SetCoverage`.
    """

    n_a: int
    n_b: int
    test: str
    language: str
    similarity: str
    convention: str
    coverage: dict[str, SetCoverage]

    def cell_values(self) -> dict[str, float | int | bool]:
        """The variables of one results-cube cell (SPEC §2), named as :func:`biasdask.io.results` stores them."""
        return {
            "statistic": self.statistic,
            "effect_size": self.effect_size,
            "p_value": self.pvalue,
            "z_score": self.z_score,
            "p_value_normal": self.p_value_normal,
            "null_mean": self.null_mean,
            "null_std": self.null_std,
            "n_permutations": self.n_permutations,
            "exact": self.exact,
            "n_x": self.n_x,
            "n_y": self.n_y,
            "n_a": self.n_a,
            "n_b": self.n_b,
        }


def _result(res: PermutationTestResult, coverage: dict[str, SetCoverage], **extra) -> ClassicTestResult:
    values = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)}
    values.update(n_a=len(coverage["a"].found), n_b=len(coverage["b"].found), coverage=coverage)
    values.update(extra)  # may override the permutation test's numbers (e.g. career_family's effect size)
    return ClassicTestResult(**values)


def _check_coverage(coverage: dict[str, SetCoverage], min_coverage: float, test: str, language: str) -> None:
    if not 0.0 <= min_coverage <= 1.0:
        raise BiasdaskError(f"min_coverage must be between 0 and 1, got {min_coverage}")
    low = [c for c in coverage.values() if c.fraction < min_coverage or not c.found]
    if low:
        detail = "; ".join(c.describe() for c in low)
        raise CoverageError(
            f"{test} ({language}) skipped: coverage below {min_coverage:.0%}: {detail}",
            test,
            language,
            coverage,
            min_coverage,
        )


# --------------------------------------------------------------------------------------------------
# Reading the rows a test needs


def _coverage(role: str, name: str, words: Sequence[str], vectors: Mapping[str, np.ndarray]) -> SetCoverage:
    requested = tuple(dict.fromkeys(words))
    return SetCoverage(
        role=role,
        name=name,
        requested=requested,
        found=tuple(w for w in requested if w in vectors),
        missing=tuple(w for w in requested if w not in vectors),
    )


def _language(emb: xr.Dataset) -> str:
    return str(emb.attrs.get("language", "?"))


# --------------------------------------------------------------------------------------------------
# WEAT


def weat(
    emb: Embeddings,
    x: Sequence[str] | str,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    similarity: Literal["cosine", "euclidean"] = "cosine",
    n_permutations: int = 9999,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    storage_options: dict | None = None,
    *,
    attributes_from: Embeddings | None = None,
    names: Sequence[str] | None = None,
    test: str = "weat",
    batch_size: int | None = None,
    progress: bool | None = None,
) -> ClassicTestResult:
    """The Word Embedding Association Test (Caliskan et al. 2017; seed 002 eqs. 1-3) on a stored embedding.

    s(X, Y, A, B) = Σ_x s(x, A, B) - Σ_y s(y, A, B), s(w, A, B) = mean_a f(w, a) - mean_b f(w, b); the
    p-value comes from the permutation engine over the equal-size splits of X ∪ Y (exact when
    C(|X| + |Y|, |X|) <= ``n_permutations``); d uses the sample SD.

    Parameters
    ----------
    emb
        A store URL, Dataset (:func:`biasdask.open_embeddings`), DataArray (word, dim) or gensim
        ``KeyedVectors`` (see :func:`biasdask.as_embeddings`); only the rows of the four sets are read.
    x, y
        Target words; or ``x`` alone the name of a lexicon test (``"weat7"``; ``"xweat7"`` in the
        embedding's ``language``), whose four sets and names are then used.
    a, b
        Attribute words.
    similarity
        ``"cosine"``, or ``"euclidean"``: f = minus the distance between unit vectors, so the direction
        of the test is the same as with cosine (s > 0: X closer to A), which is seed 002's flipped
        direction for a distance (footnote 3). ``result.convention`` states it.
    n_permutations
        Number of random splits; all splits are enumerated when there are at most this many.
    alternative
        ``"two-sided"`` (default), ``"greater"``, ``"less"``, or ``"auto"`` (the direction of the sign of
        s, chosen after seeing s; type-I rate about 2α).
    seed
        Integer seed of the sampled permutations.
    client
        Dask client (default: the current ``distributed`` client, else Dask's default scheduler; no
        cluster is started).
    min_coverage
        Each set must have at least this share of its words in the embedding, else
        :class:`CoverageError`.
    return_null
        Keep the null distribution in the result.
    storage_options
        fsspec options for store URLs.
    attributes_from
        A second store, aligned with ``emb`` (:func:`align`), from which the attribute words A, B are
        read: a cross-lingual WEAT with targets of ``emb``'s language.
    names
        Names of the four sets (for messages and coverage); default ``X``, ``Y``, ``A``, ``B``.
    test
        Label recorded in the result and in error messages.
    batch_size
        Permutations per Dask task (default chosen by the engine).
    progress
        Show a progress bar for the permutations.

    Returns
    -------
    ClassicTestResult

    Raises
    ------
    CoverageError
        A set has less than ``min_coverage`` of its words (or none) in the embedding; names them.
    BiasdaskError
        Unknown similarity, or ``attributes_from`` of another dimension.
    """
    if similarity not in SIMILARITIES:
        raise BiasdaskError(f"unknown similarity {similarity!r}; choose from {list(SIMILARITIES)}")
    emb = as_dataset(emb, storage_options)
    if isinstance(x, str):
        if (y, a, b) != (None, None, None):
            raise BiasdaskError(f"weat: x={x!r} names a lexicon test; give no y, a, b with it")
        name = x
        sets = weat_test(name) if name.startswith("weat") else xweat_test(_language(emb), name)
        x, y, a, b = sets.x, sets.y, sets.a, sets.b
        names = names or (sets.x_name, sets.y_name, sets.a_name, sets.b_name)
        test = name if test == "weat" else test
    elif y is None or a is None or b is None:
        raise BiasdaskError("weat: give the four word sets x, y, a, b (or the name of a lexicon test as x)")
    attr_emb = emb if attributes_from is None else as_dataset(attributes_from, storage_options)
    if attr_emb.sizes["dim"] != emb.sizes["dim"]:
        raise BiasdaskError(
            f"attributes_from has dimension {attr_emb.sizes['dim']}, the target store {emb.sizes['dim']}: "
            "the spaces must be aligned (biasdask.align)"
        )
    language = _language(emb)
    if attributes_from is not None:
        language = f"{language}->{_language(attr_emb)}"
    labels = tuple(names) if names is not None else ("X", "Y", "A", "B")
    if len(labels) != 4:
        raise BiasdaskError(f"names: expected four set names, got {len(labels)}")
    with contextlib.nullcontext(active_client(client)) as c:
        if attributes_from is None:
            tv = av = read_rows(emb, [*x, *y, *a, *b], c)
        else:
            tv, av = read_rows(emb, [*x, *y], c), read_rows(attr_emb, [*a, *b], c)
        sets = dict(zip(_ROLES, (x, y, a, b)))
        coverage = {
            role: _coverage(role, label, sets[role], tv if role in "xy" else av)
            for role, label in zip(_ROLES, labels)
        }
        _check_coverage(coverage, min_coverage, test, language)
        matrices = {r: np.array([(tv if r in "xy" else av)[w] for w in coverage[r].found]) for r in _ROLES}
        s_x, s_y = weat_scores(matrices["x"], matrices["y"], matrices["a"], matrices["b"], similarity)
        res = permutation_test(
            s_x,
            s_y,
            n_permutations=n_permutations,
            alternative=alternative,
            seed=seed,
            client=c,
            batch_size=batch_size,
            return_null=return_null,
            progress=progress,
        )
    return _result(
        res, coverage, test=test, language=language, similarity=similarity, convention=_CONVENTIONS[similarity]
    )


def cross_lingual_weat(
    target_emb: Embeddings,
    attribute_emb: Embeddings,
    x: Sequence[str],
    y: Sequence[str],
    a: Sequence[str],
    b: Sequence[str],
    **kwargs,
) -> ClassicTestResult:
    """Cross-lingual WEAT (seed 002 §3): targets X, Y from one language, attributes A, B from another.

    The two stores must share one space, e.g. the source store written by :func:`align` and its
    target store. Same as ``weat(target_emb, x, y, a, b, attributes_from=attribute_emb, **kwargs)``;
    ``result.language`` reads ``"<targets>-><attributes>"``.
    """
    return weat(target_emb, x, y, a, b, attributes_from=attribute_emb, **kwargs)


# --------------------------------------------------------------------------------------------------
# Career/family IAT (Lewis & Lupyan 2020)


def career_family_test(
    emb: Embeddings,
    language: str | None = None,
    model: Literal["cc", "wiki", "subt"] = "cc",
    n_permutations: int = 9999,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    storage_options: dict | None = None,
    *,
    batch_size: int | None = None,
    progress: bool | None = None,
) -> ClassicTestResult:
    """Lewis & Lupyan 2020's career/family IAT test in one language, on a stored embedding.

    Targets male / female (X, Y), attributes career / family (A, B), eight English words each, through
    their translations (:func:`biasdask.lexicon.iat_words`). The effect size is Lewis & Lupyan's d
    (:func:`biasdask.stats.weat.career_family_effect`: translation averaging, and for a language whose
    translations carry grammatical gender the masculine run for male, the feminine run for female and
    the mean of the two runs' SDs), which reproduces their published values. The statistic and p-value
    come from the permutation engine over the per-word scores behind that d: s of the male words and s of
    the female words (with grammatical gender: male s of the masculine run and female s of the feminine
    run), split into equal groups as in WEAT. In a language without grammatical gender the engine's own
    d equals the published one.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL; only the rows of the translation tokens are read.
    language
        Language code of the translations (default: the store's ``language`` attribute).
    model
        Which translation lists: ``"cc"`` (fastText Common Crawl, the embeddings of seed 000), ``"wiki"``
        or ``"subt"``; Lewis & Lupyan chose tokens per model.
    n_permutations, alternative, seed, client, return_null, storage_options, batch_size, progress
        As in :func:`weat`.
    min_coverage
        Each category must have at least this share of its eight English words found (a word is found
        when a token of one of its translations is in the embedding; a word without a translation is
        missing), else :class:`CoverageError`.

    Returns
    -------
    ClassicTestResult
        ``test="career_family"``, ``similarity="cosine"``; coverage roles ``x`` male, ``y`` female,
        ``a`` career, ``b`` family, with the English words.

    Raises
    ------
    CoverageError
        A category below ``min_coverage``.
    BiasdaskError
        No translations for ``language`` with ``model``.
    """
    emb = as_dataset(emb, storage_options)
    language = language or _language(emb)
    entries = iat_words(model, language)
    categories = iat_categories()
    with contextlib.nullcontext(active_client(client)) as c:
        vectors = read_rows(emb, [t for e in entries for t in e.tokens], c)
        covered = {e.word for e in entries if any(t in vectors for t in e.tokens)}
        coverage = {}
        for role, category in zip(_ROLES, ("male", "female", "career", "family")):
            words = categories[category]
            coverage[role] = SetCoverage(
                role=role,
                name=category,
                requested=words,
                found=tuple(w for w in words if w in covered),
                missing=tuple(w for w in words if w not in covered),
            )
        _check_coverage(coverage, min_coverage, "career_family", language)
        effect = career_family_effect(entries, vectors)
        res = permutation_test(
            effect.s_x,
            effect.s_y,
            n_permutations=n_permutations,
            alternative=alternative,
            seed=seed,
            client=c,
            batch_size=batch_size,
            return_null=return_null,
            progress=progress,
        )
    return _result(
        res,
        coverage,
        effect_size=effect.effect_size,
        test="career_family",
        language=language,
        similarity="cosine",
        convention=_CAREER_FAMILY_CONVENTION,
    )


# --------------------------------------------------------------------------------------------------
# Study cells


def tests_for_language(language: str, model: str | None = None) -> list[str]:
    """The classic test labels that apply to ``language``.

    Parameters
    ----------
    language
        A language code.
    model
        With an IAT model (``cc``, ``wiki``, ``subt``), ``career_family`` is listed only when that model
        has translations for ``language``; by default, when any model has.

    Returns
    -------
    list of str
        ``weat1``..``weat10`` for English, ``xweat1``..``xweat10`` for de, es, hr, it, ru, tr,
        ``career_family`` for the languages with IAT translations, in that order.
    """
    tests = [t for t, langs in available_tests().items() if language in langs]
    if model is not None and "career_family" in tests and language not in iat_languages(model):
        tests.remove("career_family")
    return tests


def run_cell(
    test: str,
    emb: Embeddings,
    *,
    language: str,
    n_permutations: int = 9999,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    similarity: Literal["cosine", "euclidean"] = "cosine",
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    model: Literal["cc", "wiki", "subt"] = "cc",
    return_null: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
    storage_options: dict | None = None,
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
) -> ClassicTestResult:
    """Run one classic test of a study on one language's store.

    Parameters
    ----------
    test
        ``weat1``..``weat10`` (English), ``xweat1``..``xweat10`` (de, es, hr, it, ru, tr; XWEAT's
        translations), ``career_family`` (languages with IAT translations for ``model``), or a set-level
        metric ``rnd``, ``rnsb``, ``mac``, ``ect``, ``nas`` (:func:`biasdask.engine.setmetrics.run_set_cell`).
    emb
        The language's embedding Dataset or store URL.
    language
        The language code (selects the word lists).
    n_permutations, alternative, seed, similarity, client, min_coverage, return_null, batch_size, progress, storage_options
        As in :func:`weat`.
    model
        IAT translation lists for ``career_family`` (``cc`` for Common Crawl stores).
    set_metric_words
        The words (S, A, B) of a set-level metric, when the study names them.

    Returns
    -------
    ClassicTestResult
        :meth:`ClassicTestResult.cell_values` gives the cube's variables.

    Raises
    ------
    CoverageError
        The cell must be recorded as skipped (its message names the missing words).
    BiasdaskError
        An unknown test, a test that does not apply to ``language``, or ``career_family`` with a
        similarity other than cosine (Lewis & Lupyan's measure).
    """
    from biasdask.engine.setmetrics import SET_METRICS, run_set_cell

    if test in SET_METRICS:
        return run_set_cell(
            test, emb, language=language, n_permutations=n_permutations, alternative=alternative, seed=seed,
            client=client, min_coverage=min_coverage, model=model, return_null=return_null, batch_size=batch_size,
            progress=progress, storage_options=storage_options, set_metric_words=set_metric_words,
        )
    tests = available_tests()
    if test not in tests:
        raise BiasdaskError(f"unknown test {test!r}; choose from {sorted(tests)}")
    if language not in tests[test]:
        raise BiasdaskError(f"test {test!r} does not apply to language {language!r} (it applies to {list(tests[test])})")
    common = dict(
        n_permutations=n_permutations,
        alternative=alternative,
        seed=seed,
        client=client,
        min_coverage=min_coverage,
        return_null=return_null,
        storage_options=storage_options,
        batch_size=batch_size,
        progress=progress,
    )
    if test == "career_family":
        if similarity != "cosine":
            raise BiasdaskError(f"test 'career_family' is defined with cosine similarity, not {similarity!r}")
        return career_family_test(emb, language, model, **common)
    sets = weat_test(test) if test.startswith("weat") else xweat_test(language, test)
    return weat(
        emb,
        sets.x,
        sets.y,
        sets.a,
        sets.b,
        similarity,
        names=(sets.x_name, sets.y_name, sets.a_name, sets.b_name),
        test=test,
        **common,
    )


# --------------------------------------------------------------------------------------------------
# Cross-lingual alignment (seed 002 §3)


@dataclass(frozen=True)
class Alignment:
    """An orthogonal map between two embedding spaces, learnt from a bilingual dictionary.

    Attributes
    ----------
    matrix
        W, shape (D_target, D_source): a source row vector v maps to ``v @ W.T``.
    pairs
        The dictionary pairs (source word, target word) found in both stores, which W was fitted on.
    missing
        The pairs left out because a word is absent from its store (or stored as a zero vector).
    unit_length
        Whether W was fitted on unit-length vectors.
    """

    matrix: np.ndarray
    pairs: tuple[tuple[str, str], ...]
    missing: tuple[tuple[str, str], ...]
    unit_length: bool


def _read_dictionary(path: str, storage_options: dict | None) -> list[tuple[str, str]]:
    """Pairs of a two-column dictionary file: tab-separated, or else separated by ASCII spaces."""
    from biasdask.io.formats import display_url, storage_options_for

    shown = display_url(path)
    try:
        with fsspec.open(path, "rb", compression="infer", **storage_options_for(path, storage_options)) as f:
            data = f.read()
    except FileNotFoundError:
        raise InputFormatError(f"{shown}: no such dictionary file") from None
    pairs = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.rstrip(b"\r")
        if not line.strip(b" \t"):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise InputFormatError(f"{shown}:{lineno}: not valid UTF-8") from None
        fields = text.split("\t") if "\t" in text else [f for f in text.split(" ") if f]
        if len(fields) != 2 or not all(fields):
            raise InputFormatError(f"{shown}:{lineno}: expected two words (source, target), got {len(fields)} field(s)")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise InputFormatError(f"{shown}: the dictionary holds no word pairs")
    return pairs


def _dictionary_pairs(dictionary: Iterable[tuple[str, str]] | str | Path, storage_options: dict | None):
    if isinstance(dictionary, (str, Path)):
        return _read_dictionary(str(dictionary), storage_options)
    pairs = [tuple(p) for p in dictionary]
    bad = [p for p in pairs if len(p) != 2]
    if bad or not pairs:
        raise BiasdaskError(f"dictionary: expected (source word, target word) pairs, got {bad[:1] or 'none'}")
    return pairs


def fit_alignment(
    source: Embeddings,
    target: Embeddings,
    dictionary: Iterable[tuple[str, str]] | str | Path,
    *,
    unit_length: bool = True,
    client: Client | None | bool = None,
    storage_options: dict | None = None,
) -> Alignment:
    """Learn the orthogonal map W = U Vᵀ (U Σ Vᵀ = SVD(X_Tᵀ X_S)) from the source space to the target space.

    Parameters
    ----------
    source, target
        Embedding Datasets or store URLs.
    dictionary
        (source word, target word) pairs, or the path/URL of a two-column text file (one pair per line,
        tab- or space-separated; ``.gz`` etc. decompressed by name).
    unit_length
        Fit on unit-length vectors (Smith et al. 2017, XWEAT); else on the raw vectors.
    client
        Dask client that reads the dictionary rows (default: the current one, else this process);
        ``False`` reads them in this process.
    storage_options
        fsspec options for URLs.

    Returns
    -------
    Alignment

    Raises
    ------
    MissingWordsError
        No pair has both words in the stores.
    InputFormatError
        A dictionary file line without exactly two words (names the line).
    """
    src = as_dataset(source, storage_options)
    tgt = as_dataset(target, storage_options)
    pairs = _dictionary_pairs(dictionary, storage_options)
    if client is False:
        return _fit(src, tgt, pairs, unit_length, None)
    with contextlib.nullcontext(active_client(client)) as c:
        return _fit(src, tgt, pairs, unit_length, c)


def _fit(
    src: xr.Dataset, tgt: xr.Dataset, pairs: list[tuple[str, str]], unit_length: bool, client: Client | None
) -> Alignment:
    sv = read_rows(src, [s for s, _ in pairs], client)
    tv = read_rows(tgt, [t for _, t in pairs], client)
    used = tuple(p for p in pairs if p[0] in sv and p[1] in tv)
    used_set = set(used)
    missing = tuple(p for p in pairs if p not in used_set)
    if not used:
        raise MissingWordsError(
            f"dictionary: no pair has both words in the stores ({_language(src)} -> {_language(tgt)}); "
            f"first pairs: {pairs[:5]}"
        )
    xs = np.array([sv[s] for s, _ in used])
    xt = np.array([tv[t] for _, t in used])
    if unit_length:
        xs /= np.linalg.norm(xs, axis=1, keepdims=True)
        xt /= np.linalg.norm(xt, axis=1, keepdims=True)
    return Alignment(matrix=procrustes_map(xs, xt), pairs=used, missing=missing, unit_length=unit_length)


def _write_aligned_block(
    dest: str, storage_options: dict | None, start: int, words: np.ndarray, block: np.ndarray, w: np.ndarray
) -> int:
    """Map one chunk of source rows through W, write it as chunk ``start`` of ``dest``; return its zero rows."""
    aligned = (np.asarray(block, dtype=np.float64) @ w.T).astype(np.float32)
    norms = np.sqrt(np.square(aligned, dtype=np.float64).sum(axis=1)).astype(np.float32)
    write_block(dest, storage_options, start, words, aligned, norms)
    return int(np.count_nonzero(norms == 0))


def align(
    source: Embeddings,
    target: Embeddings,
    dictionary: Iterable[tuple[str, str]] | str | Path,
    dest: str,
    *,
    unit_length: bool = True,
    storage_options: dict | None = None,
    client: Client | None | bool = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Align the source store to the target space by orthogonal Procrustes and write it as a new store.

    W is learnt by :func:`fit_alignment` over the dictionary pairs found in both stores; every chunk of
    source vectors v becomes ``v @ W.T`` in one Dask task that writes the matching chunk of ``dest``
    (the store layout of SPEC §2, chunked as the source). Words, ranks and the source's attrs are kept;
    ``norm`` is the length of the aligned vector (the source's length, as W is orthogonal). The attrs
    gain ``aligned_to`` (the target's language), ``aligned_to_source``, ``alignment_pairs`` and
    ``alignment_method``; the completion marker is written last, and a failed run leaves no store.

    Parameters
    ----------
    source, target
        Embedding Datasets or store URLs (the workers must be able to read the source's chunks).
    dictionary
        (source word, target word) pairs, or the path/URL of a two-column file (see
        :func:`fit_alignment`).
    dest
        Path or fsspec URL of the aligned store; an existing biasdask store there is replaced.
    unit_length
        Fit W on unit-length vectors (Smith et al. 2017, XWEAT).
    storage_options
        fsspec options of every URL.
    client
        Dask client (default: the current one, else this process); ``False``, or a
        ``memory://`` destination, computes and writes in this process.
    progress
        Show a progress bar over the chunks.

    Returns
    -------
    xarray.Dataset
        The aligned store, opened.

    Raises
    ------
    MissingWordsError
        No dictionary pair is in both stores.
    StoreConflictError
        ``dest`` holds something that is not a biasdask store.
    """
    src = as_dataset(source, storage_options)
    tgt = as_dataset(target, storage_options)
    pairs = _dictionary_pairs(dictionary, storage_options)
    dest = str(dest)
    protocol = fsspec.core.split_protocol(dest)[0] or "file"
    if protocol in ("file", "local"):
        dest = fsspec.core.strip_protocol(dest)  # absolute, for workers elsewhere in the file tree
    check_replaceable(dest, storage_options)
    if client is False or protocol == "memory":
        return _align(src, tgt, pairs, dest, unit_length, storage_options, None, progress)
    with contextlib.nullcontext(active_client(client)) as c:
        return _align(src, tgt, pairs, dest, unit_length, storage_options, c, progress)


def _align(src, tgt, pairs, dest, unit_length, storage_options, client, progress) -> xr.Dataset:
    alignment = _fit(src, tgt, pairs, unit_length, client)
    w = alignment.matrix
    vectors = da.asarray(src["vectors"].data)
    chunk = max(vectors.chunks[0])
    vectors = vectors.rechunk({0: chunk, 1: -1})
    words = np.asarray(src["word"].values).astype(object)
    n_words = int(src.sizes["word"])
    prepare_store(
        dest,
        storage_options,
        language=_language(src),
        source=str(src.attrs.get("source", "")),
        format=str(src.attrs.get("format", "")),
        dim=int(w.shape[0]),
        chunk_words=chunk,
        n_words=n_words,
    )
    try:
        tasks = [
            dask.delayed(_write_aligned_block, pure=True)(
                dest, storage_options, k * chunk, words[k * chunk : (k + 1) * chunk], vectors.blocks[k], w
            )
            for k in range(vectors.numblocks[0])
        ]
        with progress_bar(progress, total=len(tasks), desc="align", unit="chunk") as bar:
            if client is None:
                zeros = []
                for task in tasks:
                    zeros.append(task.compute(scheduler="sync"))
                    bar.update()
            else:
                futures = client.compute(tasks)
                for _ in as_completed(futures, loop=client.loop):
                    bar.update()
                zeros = client.gather(futures)
        finish_store(
            dest,
            storage_options,
            {
                **{k: src.attrs[k] for k in ("n_duplicates", "n_invalid_utf8") if k in src.attrs},
                "n_words": n_words,
                "n_zero_vectors": int(sum(zeros)),
                "aligned_to": _language(tgt),
                "aligned_to_source": str(tgt.attrs.get("source", "")),
                "alignment_pairs": len(alignment.pairs),
                "alignment_method": (
                    "orthogonal Procrustes: W = U V^T, U S V^T = SVD(X_T^T X_S) over the dictionary pairs "
                    + ("of unit-length vectors" if unit_length else "of raw vectors")
                    + "; aligned vector = W v"
                ),
            },
        )
    except BaseException:
        remove_store(dest, storage_options)
        raise
    return open_embeddings(dest, storage_options)
