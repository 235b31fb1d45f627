"""The cells of a study: which tests apply to a language, one test run on one language, and the
variables a finished (or skipped) test writes into the results cube.

- :func:`tests_for_language`: the classic test labels (``weat1``..``weat10``, ``xweat1``..``xweat10``,
  ``career_family``) that apply to a language.
- :func:`run_cell`: one classic test or set-level metric of a study on one language's store.
- :func:`cell_words`: the vocabulary tokens whose rows :func:`run_cell` reads (a study's task reads
  only those).
- :func:`cell_word_sets`: where a cell's word sets come from (``weat7``, ``xweat7:de``, ...), recorded
  with it so that cells of one test column built from different lists are not compared unawares;
  :func:`file_word_sets` for a test of the study's ``word_sets`` files (``weathub.weat7:ar``).
- :func:`cell_values`: the one builder of a cube cell's variables from any test result.
- :func:`consistency_values`: the variables of a cell's internal consistency.
- :func:`store_values`: the variables that record which embedding store a language's cells read.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Literal

from distributed import Client

from biasdask.engine.placebo import PLACEBO_FIELDS
from biasdask.engine.setmetrics import SET_METRICS, run_set_cell, set_metric_sets
from biasdask.engine.weat import DEFAULT_MIN_COVERAGE, ClassicTestResult, CoverageError, career_family_test, weat
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings
from biasdask.io.store import StoreIdentity
from biasdask.lexicon import WordSets, available_tests, iat_languages, iat_words, weat_test, xweat_test
from biasdask.stats.reliability import InternalConsistency
from biasdask.stats.resampling import Resampling

__all__ = [
    "cell_values",
    "cell_word_sets",
    "cell_words",
    "consistency_values",
    "coverage_values",
    "file_word_sets",
    "run_cell",
    "store_values",
    "tests_for_language",
]

_NUMBERS = ("statistic", "effect_size", "p_value", "z_score", "p_value_normal", "null_mean", "null_std")


def _joined(words: Sequence[str]) -> str:
    return ", ".join(words)


def coverage_values(coverage) -> dict[str, str | float]:
    """The words a classic cell used and missed, by role (``x``, ``y`` targets; ``a``, ``b`` attributes;
    :class:`~biasdask.engine.weat.SetCoverage` each), as the cube's text variables, and the share of
    its target words found (``target_coverage``)."""

    def side(roles: str) -> str:
        return "; ".join(
            f"{r.upper()}: {_joined(coverage[r].missing)}" for r in roles if r in coverage and coverage[r].missing
        )

    targets = [coverage[r] for r in "xy" if r in coverage]
    requested = sum(len(c.requested) for c in targets)
    values: dict[str, str | float] = {
        f"{kind}_words_{r}": _joined(coverage[r].used()) if r in coverage else ""
        for kind, roles in (("target", "xy"), ("attribute", "ab"))
        for r in roles
    }
    values["missing_target_words"] = side("xy")
    values["missing_attribute_words"] = side("ab")
    values["target_coverage"] = sum(len(c.found) for c in targets) / requested if requested else math.nan
    return values


def cell_word_sets(
    test: str,
    language: str,
    *,
    iat_model: str = "cc",
    attribute_set: str = "catalog",
    set_metric_words: object = None,
) -> str:
    """Where the word sets of a cell come from, as the cube's ``word_sets`` variable records it.

    ``weat7`` (Caliskan et al. 2017's lists, English), ``xweat7:de`` (their translation by Lauscher &
    Glavaš 2019), ``iat:career,family:fr (cc)`` (Lewis & Lupyan 2020's IAT translations of that model),
    ``study`` (words the study names); a full-vocabulary cell (``gender``, ``context``...) records its
    attribute words' source (``catalog``, ``iat``, ``explicit``). Cells of one test with different sources
    measured different words: their values are not on one scale.

    Examples
    --------
    >>> cell_word_sets("rnd", "de"), cell_word_sets("rnd", "fr"), cell_word_sets("weat7", "en")
    ('xweat7:de', 'iat:career:fr (cc)', 'weat7')
    """
    if test in SET_METRICS:
        if set_metric_words is not None:
            return "study"
        sets = set_metric_sets(language, iat_model)
        if sets is None:
            return ""
        test = {"weat7": "weat7", "xweat7": "xweat7", "career_family": "career"}[sets]
    if test == "career_family":
        return f"iat:career,family:{language} ({iat_model})"
    if test == "career":
        return f"iat:career:{language} ({iat_model})"
    if test.startswith("xweat"):
        return f"{test}:{language}"
    if test.startswith("weat"):
        return test
    return attribute_set


def file_word_sets(sets: WordSets) -> str:
    """Where the word sets of a cell of a test of the study's ``word_sets`` files come from, as the cube's
    ``word_sets`` variable records it: the test and the language of its file (``weathub.weat7:ar``), as
    :func:`cell_word_sets` records a translation of a lexicon test; the study's canonical form names
    the file (:func:`biasdask.study.wordsets.canonical_word_sets`).

    Examples
    --------
    >>> file_word_sets(WordSets(["math"], ["art"], ["he"], ["she"], test="weathub.weat7", language="ar"))
    'weathub.weat7:ar'
    """
    return f"{sets.test}:{sets.language}"


def store_values(identity: StoreIdentity | None) -> dict[str, str]:
    """The cube variables that record which embedding store a language's cells were computed from
    (``identity``: :func:`biasdask.io.store.embedding_identity`): ``store_fingerprint`` (the store's
    content fingerprint) and ``store_source`` (the file it was ingested from); empty strings for an
    embedding held in memory (None), and an empty fingerprint for a store written before stores had one."""
    if identity is None:
        return {"store_fingerprint": "", "store_source": ""}
    return {"store_fingerprint": identity.fingerprint or "", "store_source": str(identity.source.get("url") or "")}


def cell_values(result, **extra) -> dict[str, float | int | bool | str]:
    """The variables of one results-cube cell, named as :mod:`biasdask.io.results` stores them.

    Parameters
    ----------
    result
        A :class:`~biasdask.stats.permutation.PermutationTestResult` (the full-vocabulary tests), a
        :class:`~biasdask.engine.weat.ClassicTestResult` (classic tests, set-level metrics), a
        :class:`~biasdask.engine.grammatical.GenderFormsResult` (BAD, MWEAT: the t-test's p-value as
        ``p_value``, no permutation fields), or a :class:`~biasdask.engine.weat.CoverageError` (a
        skipped cell: NaN numbers, and how many words each set had).
    **extra
        Further variables (``t_method``, ``note``...), or overrides (``n_a``, ``n_b``).

    Returns
    -------
    dict
        ``alternative`` (as resolved; not for a skipped cell), ``statistic``, ``effect_size``,
        ``p_value``, ``z_score``, ``p_value_normal``, ``null_mean``, ``null_std`` (NaN where the test has
        none), ``n_permutations`` (-1 where it has none), ``exact``, ``n_x``, ``n_y``, ``n_a``, ``n_b``
        (-1 where unknown); for a result with word sets (classic tests, set metrics, a skipped cell) the
        words used and missed (:func:`coverage_values`); then ``extra``.
    """
    if isinstance(result, CoverageError):
        values: dict = dict.fromkeys(_NUMBERS, math.nan)
        values.update(n_permutations=-1, exact=False)
        values.update({f"n_{r}": len(c.found) for r, c in result.coverage.items()})
    else:
        values = {
            "alternative": result.alternative,
            "statistic": result.statistic,
            "effect_size": result.effect_size,
            "p_value": result.p_value,
            **{name: getattr(result, name, math.nan) for name in _NUMBERS[3:]},
            "n_permutations": getattr(result, "n_permutations", -1),
            "exact": getattr(result, "exact", False),
            "n_x": result.n_x,
            "n_y": result.n_y,
            "n_a": getattr(result, "n_a", -1),
            "n_b": getattr(result, "n_b", -1),
        }
    if getattr(result, "coverage", None):
        values.update(coverage_values(result.coverage))
    for name in ("effect_size_ci_low", "effect_size_ci_high", "effect_size_se", "ci_level", "ci_method"):
        if hasattr(result, name):
            values[name] = getattr(result, name)
    if getattr(result, "n_placebo", 0):
        values.update({name: getattr(result, name) for name in PLACEBO_FIELDS})
    if getattr(result, "consistency", None) is not None:
        values.update(consistency_values(result.consistency))
    values.update(extra)
    return values


def consistency_values(consistency: InternalConsistency) -> dict[str, float | str]:
    """The cube variables of a cell's internal consistency: ``cronbach_alpha``, ``split_half`` and, where
    d was recomputed without each attribute word, ``effect_size_loo_low``, ``effect_size_loo_high``,
    ``loo_word`` (``he (A)``; a pair as ``he/she``) and ``effect_size_without_loo_word``."""
    n_a = consistency.n_a
    values: dict[str, float | str] = {
        "cronbach_alpha": consistency.alpha.alpha,
        "split_half": consistency.split_half.reliability,
    }
    loo = consistency.leave_one_out
    if loo is not None and loo.most_influential >= 0:
        side = "" if n_a is None else " (A)" if loo.most_influential < n_a else " (B)"
        values.update(
            effect_size_loo_low=loo.low,
            effect_size_loo_high=loo.high,
            loo_word=f"{loo.word}{side}",
            effect_size_without_loo_word=float(loo.values[loo.most_influential]),
        )
    return values


def tests_for_language(language: str, iat_model: str | None = None) -> list[str]:
    """The classic test labels that apply to ``language``.

    Parameters
    ----------
    language
        A language code.
    iat_model
        With an IAT model (``cc``, ``wiki``, ``subt``), ``career_family`` is listed only when that model
        has translations for ``language``; by default, when any model has.

    Returns
    -------
    list of str
        ``weat1``..``weat10`` for English, ``xweat1``..``xweat10`` for de, es, hr, it, ru, tr,
        ``career_family`` for the languages with IAT translations, in that order.
    """
    tests = [t for t, langs in available_tests().items() if language in langs]
    if iat_model is not None and "career_family" in tests and language not in iat_languages(iat_model):
        tests.remove("career_family")
    return tests


def cell_words(
    test: str,
    language: str,
    *,
    iat_model: Literal["cc", "wiki", "subt"] = "cc",
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
    sets: WordSets | None = None,
) -> list[str]:
    """The vocabulary tokens whose rows :func:`run_cell` reads for ``test`` in ``language`` (same
    parameters): :func:`run_cell` on a store cut down to these rows gives the same result. Empty for
    a test that does not apply (:func:`run_cell` says why).

    Examples
    --------
    >>> cell_words("weat7", "en")[:3]
    ['math', 'algebra', 'geometry']
    """
    if sets is not None:
        return [*sets.x, *sets.y, *sets.a, *sets.b]
    tests = available_tests()
    if test in SET_METRICS:
        if set_metric_words is not None:
            return [w for words in set_metric_words for w in words]
        sets = set_metric_sets(language, iat_model)
        if sets in ("weat7", "xweat7"):
            ws = weat_test(7) if sets == "weat7" else xweat_test(language, 7)
            return [*ws.x, *ws.a, *ws.b]
        test = sets or test
    if test == "career_family":
        with contextlib.suppress(BiasdaskError):
            return [t for e in iat_words(iat_model, language) for t in e.tokens]
        return []
    if test not in tests or language not in tests[test]:
        return []
    sets = weat_test(test) if test.startswith("weat") else xweat_test(language, test)
    return [*sets.x, *sets.y, *sets.a, *sets.b]


def run_cell(
    test: str,
    emb: Embeddings,
    *,
    language: str,
    resampling: Resampling | None = None,
    similarity: Literal["cosine", "euclidean"] = "cosine",
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    iat_model: Literal["cc", "wiki", "subt"] = "cc",
    return_null: bool = False,
    progress: bool = False,
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
    ci_level: float | None = 0.95,
    sets: WordSets | None = None,
) -> ClassicTestResult:
    """Run one classic test of a study on one language's store.

    Parameters
    ----------
    test
        ``weat1``..``weat10`` (English), ``xweat1``..``xweat10`` (de, es, hr, it, ru, tr; XWEAT's
        translations), ``career_family`` (languages with IAT translations for ``iat_model``), or a set-level
        metric ``rnd``, ``rnsb``, ``mac``, ``ect``, ``nas`` (:func:`biasdask.engine.setmetrics.run_set_cell`).
    emb
        The language's embedding Dataset or store URL.
    language
        The language code (selects the word lists).
    resampling, similarity, client, min_coverage, return_null, progress
        As in :func:`weat`; ``resampling.placebo`` asks for the placebo comparison of :func:`weat`,
        :func:`career_family_test` and :func:`~biasdask.engine.setmetrics.set_metric_test` (``emb``
        must then be the whole vocabulary, where the placebo words are drawn).
    iat_model
        IAT translation lists for ``career_family`` (``cc`` for Common Crawl stores).
    set_metric_words
        The words (S, A, B) of a set-level metric, when the study names them.
    ci_level
        Confidence level of the effect size's bootstrap interval (WEAT, XWEAT, career_family; the
        set-level metrics have no effect size); None for none.
    sets
        The word sets of a test of the study's ``word_sets`` files (:mod:`biasdask.study.wordsets`): a
        WEAT on them, whatever ``test`` is called.

    Returns
    -------
    ClassicTestResult
        :func:`cell_values` gives the cube's variables.

    Raises
    ------
    CoverageError
        The cell must be recorded as skipped (its message names the missing words).
    BiasdaskError
        An unknown test, a test that does not apply to ``language``, or ``career_family`` with a
        similarity other than cosine (Lewis & Lupyan's measure).
    """
    if test in SET_METRICS:
        return run_set_cell(
            test,
            emb,
            language=language,
            resampling=resampling,
            client=client,
            min_coverage=min_coverage,
            iat_model=iat_model,
            return_null=return_null,
            progress=progress,
            set_metric_words=set_metric_words,
        )
    common = dict(
        resampling=resampling,
        client=client,
        min_coverage=min_coverage,
        return_null=return_null,
        progress=progress,
        ci_level=ci_level,
    )
    if sets is not None:
        return weat(emb, sets, similarity=similarity, **common)
    tests = available_tests()
    if test not in tests:
        raise BiasdaskError(f"unknown test {test!r}; choose from {sorted(tests)}")
    if language not in tests[test]:
        raise BiasdaskError(
            f"test {test!r} does not apply to language {language!r} (it applies to {list(tests[test])})"
        )
    if test == "career_family":
        if similarity != "cosine":
            raise BiasdaskError(f"test 'career_family' is defined with cosine similarity, not {similarity!r}")
        return career_family_test(emb, language=language, iat_model=iat_model, **common)
    sets = weat_test(test) if test.startswith("weat") else xweat_test(language, test)
    return weat(emb, sets, similarity=similarity, **common)
