"""WEAT, XWEAT, the career/family IAT and cross-lingual WEAT on stored embeddings, with word-set coverage.

Each test reads from the Zarr store only the rows of the words it needs, computes the per-word
associations with :mod:`biasdask.stats.weat`, and hands them to the same permutation engine as the
full-vocabulary test (:func:`biasdask.engine.permutation.permutation_test`), which enumerates every split
when C(|X| + |Y|, |X|) is at most the requested number of permutations (``exact=True``).

- :func:`weat`: WEAT on any four word sets, cosine or Euclidean; ``attributes_from`` (or
  :func:`cross_lingual_weat`) takes the attribute vectors from a second, aligned store
  (:func:`biasdask.engine.alignment.align`).
- :func:`career_family_test`: Lewis & Lupyan 2020's career/family IAT with their translation averaging and
  grammatical-gender convention.
- :class:`SetCoverage`, :class:`CoverageError`, :class:`ClassicTestResult`: what a test was run on (also
  used by the set-level metrics, :mod:`biasdask.engine.setmetrics`).

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
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import xarray as xr
from distributed import Client

from biasdask._calls import keyword_api, word_list
from biasdask.engine.cluster import active_client
from biasdask.engine.permutation import permutation_test
from biasdask.engine.placebo import attribute_placebo, iat_placebo
from biasdask.engine.scores import read_rows
from biasdask.engine.words import store_language
from biasdask.errors import BiasdaskError, BiasdaskTypeError, MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.io.fs import Locatable, Location
from biasdask.io.wordfiles import read_word_sets
from biasdask.lexicon import WordSets, iat_categories, iat_words, weat_test, xweat_test
from biasdask.stats.bootstrap import bootstrap_effect_size
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.reliability import InternalConsistency, internal_consistency
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options
from biasdask.stats.weat import (
    SIMILARITIES,
    career_family_effect,
    career_family_items,
    weat_effect_size,
    weat_items,
    weat_scores,
    weat_statistic,
)

__all__ = [
    "DEFAULT_MIN_COVERAGE",
    "ClassicTestResult",
    "CoverageError",
    "SetCoverage",
    "effect_size_interval",
    "career_family_consistency",
    "career_family_test",
    "cross_lingual_weat",
    "weat",
    "is_word_set_file",
    "word_sets",
    "CI_RESAMPLES",
    "check_coverage",
    "iat_coverage",
    "set_coverage",
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
        "closer to A (and Y to B), as with cosine; p = P[s_i >= s] here is Lauscher & Glavaš 2019's P[s_i < s] (footnote 3) "
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
    tokens
        Word -> the vocabulary tokens that stand for it, where they differ from the word itself (a
        translated IAT word: ``{"man": ("homme",)}``).
    """

    role: str
    name: str
    requested: tuple[str, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]
    tokens: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def used(self) -> tuple[str, ...]:
        """The words found, each followed by its tokens where they differ: ``man (homme)``."""
        return tuple(
            f"{w} ({', '.join(self.tokens[w])})" if self.tokens.get(w, (w,)) != (w,) else w for w in self.found
        )

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
        return {r: c.missing for r, c in self.coverage.items() if c.fraction < self.min_coverage or not c.found}


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

    The interval fields (``effect_size_ci_low``...) hold a bootstrap interval of d over the target
    words X and Y, resampled apart with replacement, the attribute words fixed
    (:func:`biasdask.stats.bootstrap.bootstrap_effect_size`: a studentized bootstrap of a normal model of
    each set's scores, seeded by the test's ``seed``).

    ``consistency`` (WEAT, XWEAT, career/family; None for the set-level metrics) says how well the
    attribute words agree: Cronbach's α with the words of A and B as items and the target words as
    cases, the split-half reliability of A and B (seeded by the test's ``seed``) and the range of d
    leaving out one attribute word at a time
    (:class:`~biasdask.stats.reliability.InternalConsistency`).
    """

    n_a: int
    n_b: int
    test: str
    language: str
    similarity: str
    convention: str
    coverage: dict[str, SetCoverage]
    consistency: InternalConsistency | None = None


def _result(res: PermutationTestResult, coverage: dict[str, SetCoverage], **extra) -> ClassicTestResult:
    values = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)}
    values.update(n_a=len(coverage["a"].found), n_b=len(coverage["b"].found), coverage=coverage)
    values.update(extra)  # may override the permutation test's numbers (e.g. career_family's effect size)
    return ClassicTestResult(**values)


#: resamples of a classic test's bootstrap interval
CI_RESAMPLES = 9999


def effect_size_interval(
    s_x: np.ndarray, s_y: np.ndarray, *, seed: int, ci_level: float | None, effect_size: float | None = None
) -> dict[str, float | str]:
    """The interval fields of a :class:`ClassicTestResult` from its per-word scores (nothing for
    ``ci_level`` None). ``effect_size``: the test's own d, when it is not d of ``s_x``, ``s_y`` (Lewis &
    Lupyan's two-run d of a language with grammatical gender): then no interval, saying why."""
    if ci_level is None:
        return {}
    interval = bootstrap_effect_size(s_x, s_y, seed=seed, ci_level=ci_level, n_resamples=CI_RESAMPLES)
    if effect_size is not None and not math.isclose(interval.effect_size, effect_size, rel_tol=1e-12, abs_tol=1e-15):
        return {
            "ci_level": float(ci_level),
            "ci_method": "none: the effect size of two runs (grammatical gender) is not resampled",
        }
    if interval.note:
        return {"ci_level": float(ci_level), "ci_method": f"none: {interval.note}"}
    return {
        "effect_size_ci_low": interval.ci_low,
        "effect_size_ci_high": interval.ci_high,
        "effect_size_se": interval.se,
        "ci_level": float(ci_level),
        "ci_method": f"{interval.ci_method} bootstrap of the target words' scores ({interval.n_resamples} resamples)",
    }


def check_coverage(coverage: dict[str, SetCoverage], min_coverage: float, test: str, language: str) -> None:
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


def set_coverage(role: str, name: str, words: Sequence[str], vectors: Mapping[str, np.ndarray]) -> SetCoverage:
    requested = tuple(dict.fromkeys(words))
    return SetCoverage(
        role=role,
        name=name,
        requested=requested,
        found=tuple(w for w in requested if w in vectors),
        missing=tuple(w for w in requested if w not in vectors),
    )


def iat_coverage(
    role: str, category: str, words: Sequence[str], entries, vectors: Mapping[str, np.ndarray]
) -> SetCoverage:
    """Which English words of an IAT ``category`` have a translation token in ``vectors`` (``entries``:
    :func:`biasdask.lexicon.iat_words`), with the tokens found for each."""
    tokens: dict[str, list[str]] = {}
    for e in entries:
        if e.category == category:
            found = tokens.setdefault(e.word, [])
            found += [t for t in e.tokens if t in vectors and t not in found]
    return SetCoverage(
        role=role,
        name=category,
        requested=tuple(words),
        found=tuple(w for w in words if tokens.get(w)),
        missing=tuple(w for w in words if not tokens.get(w)),
        tokens={w: tuple(ts) for w, ts in tokens.items() if ts},
    )


# --------------------------------------------------------------------------------------------------
# WEAT


def is_word_set_file(test: object) -> bool:
    """Whether a ``test=`` argument names a file of word sets (a :class:`~biasdask.Location`, a path, a
    URL, a name ending in ``.json``) rather than a lexicon test (``"weat7"``)."""
    if isinstance(test, (Location, os.PathLike)):
        return True
    return isinstance(test, str) and ("/" in test or "://" in test or test.endswith(".json"))


def word_sets(
    function: str, sets: WordSets | None, test: str | Locatable | None, emb: xr.Dataset, roles: str = "xyab"
) -> WordSets:
    """The word sets of a call: ``sets``; the lexicon test named ``test`` (``"weat7"``; ``"xweat7"`` in
    the embedding's language); or the file ``test`` names in WEATHub's layout
    (:func:`biasdask.io.wordfiles.read_word_sets`, its ``{language}`` the embedding's); each set checked
    as a list of words, those of ``roles`` not empty."""
    if isinstance(sets, str):
        raise BiasdaskTypeError(
            f"{function}: a test name or word set file goes in test=: {function}(emb, test={sets!r})"
        )
    if sets is not None and test is not None:
        raise BiasdaskError(f"{function}: give the word sets or the name of a lexicon test (test=), not both")
    if is_word_set_file(test):
        sets = read_word_sets(cast(Locatable, test), language=emb.attrs.get("language"))
    elif test is not None:
        sets = weat_test(test) if str(test).startswith("weat") else xweat_test(store_language(emb), test)
    if not isinstance(sets, WordSets):
        raise BiasdaskTypeError(
            f"{function}: the word sets go in one WordSets: {function}(emb, WordSets(x, y, a, b)), "
            f"or name a lexicon test: {function}(emb, test='weat7')"
        )
    sets = dataclasses.replace(sets, **{role: word_list(getattr(sets, role), role) for role in _ROLES})
    empty = [role for role in roles if not getattr(sets, role)]
    if empty:
        raise BiasdaskError(f"{function}: the WordSets has no words in {', '.join(empty)}")
    return sets


@keyword_api("weat(emb, WordSets(x, y, a, b), resampling=Resampling(...)) or weat(emb, test='weat7')")
def weat(
    emb: Embeddings,
    sets: WordSets | None = None,
    *,
    test: str | Locatable | None = None,
    similarity: Literal["cosine", "euclidean"] = "cosine",
    resampling: Resampling | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    attributes_from: Embeddings | None = None,
    progress: bool | None = None,
    ci_level: float | None = 0.95,
) -> ClassicTestResult:
    """The Word Embedding Association Test (Caliskan et al. 2017; Lauscher & Glavaš 2019 eqs. 1-3) on a stored embedding.

    s(X, Y, A, B) = Σ_x s(x, A, B) - Σ_y s(y, A, B), s(w, A, B) = mean_a f(w, a) - mean_b f(w, b); the
    p-value comes from the permutation engine over the equal-size splits of X ∪ Y (exact when
    ``C(|X| + |Y|, |X|) <= n_permutations``); d uses the sample SD.

    Parameters
    ----------
    emb
        A store (URL, :class:`~biasdask.Location` or fsspec mapper), Dataset
        (:func:`biasdask.open_embeddings`), DataArray (word, dim) or gensim ``KeyedVectors`` (see
        :func:`biasdask.as_embeddings`); only the rows of the four sets are read.
    sets
        The target words X, Y and attribute words A, B, with their names and the test's label
        (:class:`~biasdask.lexicon.WordSets`).
    test
        Instead of ``sets``, the name of a lexicon test: ``"weat7"`` (Caliskan et al.'s lists,
        :func:`biasdask.lexicon.weat_test`) or ``"xweat7"`` (its XWEAT translation into the embedding's
        ``language``, :func:`biasdask.lexicon.xweat_test`); or a file of word sets in WEATHub's layout
        (Mukherjee et al. 2023), as a path, URL or :class:`~biasdask.Location`, whose ``{language}`` is
        filled with the embedding's (:func:`biasdask.read_word_sets`).
    similarity
        ``"cosine"``, or ``"euclidean"``: f = minus the distance between unit vectors, so the direction
        of the test is the same as with cosine (s > 0: X closer to A), which is Lauscher & Glavaš 2019's flipped
        direction for a distance (footnote 3). ``result.convention`` states it.
    resampling
        :class:`~biasdask.Resampling` (default ``Resampling()``): ``n_permutations`` random splits (all
        enumerated when there are at most this many), ``alternative`` (``"two-sided"`` by default;
        ``"auto"`` takes the side of s after seeing it, type-I rate about 2α), ``seed`` (bit-identical
        results on any scheduler; ``None`` draws one, recorded in the result's ``seed``),
        ``batch_size``, and ``placebo``: also compare d with that of P = ``placebo`` WEATs whose attribute
        words are replaced by random words of about the same frequency ranks (never a test word, a known
        gendered word or a word of ``placebo_exclude``; word-like tokens as ``placebo_words`` says;
        :func:`biasdask.engine.placebo.attribute_placebo`): ``p_value_placebo``, ``z_placebo``,
        ``effect_size_placebo_percentile`` of the result, and s's ``p_value_placebo_statistic``. A
        cross-lingual test draws its placebo words from the attributes' store (``attributes_from``).
    client
        Dask client (default: the current ``distributed`` client, else Dask's default scheduler; no
        cluster is started).
    min_coverage
        Each set must have at least this share of its words in the embedding, else
        :class:`CoverageError`.
    return_null
        Keep the null distribution in the result.
    attributes_from
        A second store, aligned with ``emb`` (:func:`align`), from which the attribute words A, B are
        read: a cross-lingual WEAT with targets of ``emb``'s language.
    progress
        Show a progress bar for the permutations.
    ci_level
        Confidence level of the effect size's bootstrap interval (``effect_size_ci_low``,
        ``effect_size_ci_high``: a studentized bootstrap of X and Y, seeded by the result's ``seed``); None
        for none.

    Returns
    -------
    ClassicTestResult

    Raises
    ------
    CoverageError
        A set has less than ``min_coverage`` of its words (or none) in the embedding; names them.
    BiasdaskError
        Unknown similarity, or ``attributes_from`` of another dimension.
    BiasdaskTypeError
        Word sets given otherwise than as a :class:`~biasdask.lexicon.WordSets` (the message shows the form).

    Examples
    --------
    A lexicon test by name, on random vectors that hold its words:

    >>> import numpy as np
    >>> import biasdask
    >>> from biasdask.lexicon import weat_test
    >>> t = weat_test(7)
    >>> words = [*t.x, *t.y, *t.a, *t.b, *(f"w{i}" for i in range(500))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.weat(emb, test="weat7", resampling=biasdask.Resampling(seed=1))
    >>> res.n_x, res.n_y, res.exact
    (8, 8, False)

    Word lists of your own:

    >>> sets = biasdask.WordSets(t.x, t.y, t.a, t.b, x_name="Math", y_name="Arts")
    >>> res = biasdask.weat(emb, sets, resampling=biasdask.Resampling(n_permutations=999, seed=1))
    >>> bool(res.effect_size_ci_low <= res.effect_size <= res.effect_size_ci_high)
    True
    """
    options = resampling_options(resampling)
    if similarity not in SIMILARITIES:
        raise BiasdaskError(f"unknown similarity {similarity!r}; choose from {list(SIMILARITIES)}")
    emb = as_embeddings(emb)
    sets = word_sets("weat", sets, test, emb)
    x, y, a, b = sets.x, sets.y, sets.a, sets.b
    labels, test = sets.names, sets.test
    attr_emb = emb if attributes_from is None else as_embeddings(attributes_from)
    if attr_emb.sizes["dim"] != emb.sizes["dim"]:
        raise BiasdaskError(
            f"attributes_from has dimension {attr_emb.sizes['dim']}, the target store {emb.sizes['dim']}: "
            "the spaces must be aligned (biasdask.align)"
        )
    language = store_language(emb)
    if attributes_from is not None:
        language = f"{language}->{store_language(attr_emb)}"
    with contextlib.nullcontext(active_client(client)) as c:
        if attributes_from is None:
            tv = av = read_rows(emb, [*x, *y, *a, *b], c)
        else:
            tv, av = read_rows(emb, [*x, *y], c), read_rows(attr_emb, [*a, *b], c)
        sets = dict(zip(_ROLES, (x, y, a, b)))
        coverage = {
            role: set_coverage(role, label, sets[role], tv if role in "xy" else av)
            for role, label in zip(_ROLES, labels)
        }
        check_coverage(coverage, min_coverage, test, language)
        matrices = {r: np.array([(tv if r in "xy" else av)[w] for w in coverage[r].found]) for r in _ROLES}
        s_x, s_y = weat_scores(matrices["x"], matrices["y"], matrices["a"], matrices["b"], similarity)
        res = permutation_test(s_x, s_y, resampling=options, client=c, return_null=return_null, progress=progress)
    consistency = internal_consistency(
        weat_items(matrices["x"], matrices["y"], matrices["a"], matrices["b"], similarity),
        n_a=len(coverage["a"].found),
        n_x=len(coverage["x"].found),
        seed=res.seed,
        words=[*coverage["a"].found, *coverage["b"].found],
    )
    extra = {}
    if options.placebo:  # placebo attribute words from the attributes' language (cross-lingual: attributes_from)

        def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
            px, py = weat_scores(matrices["x"], matrices["y"], a_rows, b_rows, similarity)
            return weat_statistic(px, py), weat_effect_size(px, py)

        found = attribute_placebo(
            attr_emb,
            coverage["a"].found,
            coverage["b"].found,
            statistic,
            target_words=[*coverage["x"].found, *coverage["y"].found],
            n=int(options.placebo),
            seed=res.seed,
            alternative=res.alternative,
            exclude=options.placebo_exclude,
            match=options.placebo_match,
        )
        extra = found.fields()
    return _result(
        res,
        coverage,
        test=test,
        language=language,
        similarity=similarity,
        convention=_CONVENTIONS[similarity],
        consistency=consistency,
        **effect_size_interval(s_x, s_y, seed=res.seed, ci_level=ci_level),
        **extra,
    )


def cross_lingual_weat(
    target_emb: Embeddings, attribute_emb: Embeddings, sets: WordSets, **kwargs: Any
) -> ClassicTestResult:
    """Cross-lingual WEAT (Lauscher & Glavaš 2019 §3): targets X, Y from one language, attributes A, B from another.

    The two stores must share one space, e.g. the source store written by :func:`align` and its
    target store. Same as ``weat(target_emb, sets, attributes_from=attribute_emb, **kwargs)``;
    ``result.language`` reads ``"<targets>-><attributes>"``.
    """
    return weat(target_emb, sets, attributes_from=attribute_emb, **kwargs)


# --------------------------------------------------------------------------------------------------
# Career/family IAT (Lewis & Lupyan 2020)


@keyword_api(
    "career_family_test(emb, language=..., iat_model=..., resampling=Resampling(...))", renamed={"model": "iat_model"}
)
def career_family_test(
    emb: Embeddings,
    *,
    language: str | None = None,
    iat_model: Literal["cc", "wiki", "subt"] = "cc",
    resampling: Resampling | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    progress: bool | None = None,
    ci_level: float | None = 0.95,
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
    iat_model
        Which translation lists: ``"cc"`` (fastText Common Crawl, Grave et al. 2018), ``"wiki"``
        or ``"subt"``; Lewis & Lupyan chose tokens per model.
    resampling, client, return_null, progress, ci_level
        As in :func:`weat`; in particular a ``seed`` of None (the default) draws a fresh seed, recorded
        in the result's ``seed``. A language with grammatical gender has no interval (its d is not a d of
        the scores that are resampled; ``ci_method`` says so). With ``placebo``, each career and family
        term is replaced by a random word matched in rank to its most frequent token
        (:func:`biasdask.engine.placebo.attribute_placebo`; ``emb`` must be the whole vocabulary).
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
        No translations for ``language`` with ``iat_model``.

    Examples
    --------
    Lewis & Lupyan 2020's career/family test on French vectors (random here) holding its words:

    >>> import numpy as np
    >>> import biasdask
    >>> from biasdask.lexicon import iat_words
    >>> tokens = sorted({token for t in iat_words("cc", "fr") for token in t.tokens})
    >>> words = tokens + [f"w{i}" for i in range(100)]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="fr")
    >>> res = biasdask.career_family_test(emb, resampling=biasdask.Resampling(n_permutations=999, seed=1))
    >>> res.n_permutations
    999
    """
    options = resampling_options(resampling)
    emb = as_embeddings(emb)
    language = language or store_language(emb)
    entries = iat_words(iat_model, language)
    categories = iat_categories()
    with contextlib.nullcontext(active_client(client)) as c:
        vectors = read_rows(emb, [t for e in entries for t in e.tokens], c)
        coverage = {
            role: iat_coverage(role, category, categories[category], entries, vectors)
            for role, category in zip(_ROLES, ("male", "female", "career", "family"))
        }
        check_coverage(coverage, min_coverage, "career_family", language)
        effect = career_family_effect(entries, vectors)
        res = permutation_test(
            effect.s_x, effect.s_y, resampling=options, client=c, return_null=return_null, progress=progress
        )
    extra = {}
    if options.placebo:
        extra = _career_family_placebo(emb, entries, coverage, vectors, effect, res, options)
    return _result(
        res,
        coverage,
        effect_size=effect.effect_size,
        consistency=career_family_consistency(entries, vectors, seed=res.seed),
        **extra,
        test="career_family",
        language=language,
        similarity="cosine",
        convention=_CAREER_FAMILY_CONVENTION,
        **effect_size_interval(
            effect.s_x, effect.s_y, seed=res.seed, ci_level=ci_level, effect_size=effect.effect_size
        ),
    )


def career_family_consistency(entries, vectors: Mapping[str, np.ndarray], *, seed: int) -> InternalConsistency:
    """The internal consistency of a career/family test's attribute words: α and the split halves of the
    career and family words as items of the target words (:func:`~biasdask.stats.weat.career_family_items`),
    and Lewis & Lupyan's d recomputed without each attribute word in turn."""
    found = career_family_items(entries, vectors, order=iat_categories())
    kept_a, kept_b = set(found.words_a), set(found.words_b)

    def effect_size(a_index: np.ndarray, b_index: np.ndarray) -> float:
        left_out = (kept_a - {found.words_a[i] for i in a_index}) | (kept_b - {found.words_b[i] for i in b_index})
        kept = [e for e in entries if not (e.category in ("career", "family") and e.word in left_out)]
        return career_family_effect(kept, vectors).effect_size

    return internal_consistency(
        found.items, n_a=len(found.words_a), effect_size=effect_size, seed=seed, words=[*found.words_a, *found.words_b]
    )


def _career_family_placebo(emb, entries, coverage, vectors, effect, res, options: Resampling) -> dict:
    """The placebo fields of a career/family test: its career and family terms replaced by random words."""
    targets = [tuple(e) for e in entries if e.category in ("male", "female")]

    def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
        names = [f"\0{role}{i}" for role, rows in (("a", a_rows), ("b", b_rows)) for i in range(len(rows))]
        placebo_terms = [("career" if name[1] == "a" else "family", name, "N", "0", (name,)) for name in names]
        placebo_vectors = {**vectors, **dict(zip(names, [*a_rows, *b_rows]))}
        eff = career_family_effect([*targets, *placebo_terms], placebo_vectors)
        return weat_statistic(eff.s_x, eff.s_y), eff.effect_size

    found = iat_placebo(
        emb,
        entries,
        coverage,
        statistic,
        (weat_statistic(effect.s_x, effect.s_y), effect.effect_size),
        n=int(options.placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=options.placebo_exclude,
        match=options.placebo_match,
    )
    return found.fields()
