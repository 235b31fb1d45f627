"""The cells of a study: which tests apply to a language, one test run on one language, and the
variables a finished (or skipped) test writes into the results cube.

- :func:`tests_for_language`: the classic test labels (``weat1``..``weat10``, ``xweat1``..``xweat10``,
  ``career_family``) that apply to a language.
- :func:`run_cell`: one classic test or set-level metric of a study on one language's store.
- :func:`cell_words`: the vocabulary tokens whose rows :func:`run_cell` reads (a study's task reads
  only those).
- :func:`cell_values`: the ONE builder of a cube cell's variables (SPEC §2) from any test result.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Literal

from distributed import Client

from biasdask.engine.permutation import Alternative
from biasdask.engine.weat import DEFAULT_MIN_COVERAGE, ClassicTestResult, CoverageError, career_family_test, weat
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings
from biasdask.lexicon import available_tests, iat_languages, iat_words, weat_test, xweat_test

__all__ = ["cell_values", "cell_words", "run_cell", "tests_for_language"]

_NUMBERS = ("statistic", "effect_size", "p_value", "z_score", "p_value_normal", "null_mean", "null_std")


def cell_values(result, **extra) -> dict[str, float | int | bool | str]:
    """The variables of one results-cube cell (SPEC §2), named as :mod:`biasdask.io.results` stores them.

    Parameters
    ----------
    result
        A :class:`~biasdask.stats.permutation.PermutationTestResult` (the full-vocabulary tests), a
        :class:`~biasdask.engine.weat.ClassicTestResult` (classic tests, set-level metrics), a
        :class:`~biasdask.engine.grammatical.GenderFormsResult` (BAD, MWEAT: the t-test's p-value as
        ``p_value``, no permutation fields), or a :class:`~biasdask.engine.weat.CoverageError` (a
        skipped cell: NaN numbers, and how many words each set had).
    **extra
        Further variables (``weighting``, ``note``...), or overrides (``n_a``, ``n_b``).

    Returns
    -------
    dict
        ``alternative`` (as resolved; not for a skipped cell), ``statistic``, ``effect_size``,
        ``p_value``, ``z_score``, ``p_value_normal``, ``null_mean``, ``null_std`` (NaN where the test has
        none), ``n_permutations`` (-1 where it has none), ``exact``, ``n_x``, ``n_y``, ``n_a``, ``n_b``
        (-1 where unknown), then ``extra``.
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
            "p_value": result.pvalue,
            **{name: getattr(result, name, math.nan) for name in _NUMBERS[3:]},
            "n_permutations": getattr(result, "n_permutations", -1),
            "exact": getattr(result, "exact", False),
            "n_x": result.n_x,
            "n_y": result.n_y,
            "n_a": getattr(result, "n_a", -1),
            "n_b": getattr(result, "n_b", -1),
        }
    values.update(extra)
    return values


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


def cell_words(
    test: str,
    language: str,
    *,
    model: Literal["cc", "wiki", "subt"] = "cc",
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
) -> list[str]:
    """The vocabulary tokens whose rows :func:`run_cell` reads for ``test`` in ``language`` (same
    parameters): :func:`run_cell` on a store cut down to these rows gives the same result. Empty for
    a test that does not apply (:func:`run_cell` says why).

    Examples
    --------
    >>> cell_words("weat7", "en")[:3]
    ['math', 'algebra', 'geometry']
    """
    from biasdask.engine.setmetrics import SET_METRICS, set_metric_sets

    tests = available_tests()
    if test in SET_METRICS:
        if set_metric_words is not None:
            return [w for words in set_metric_words for w in words]
        sets = set_metric_sets(language, model)
        if sets in ("weat7", "xweat7"):
            ws = weat_test(7) if sets == "weat7" else xweat_test(language, 7)
            return [*ws.x, *ws.a, *ws.b]
        test = sets or test
    if test == "career_family":
        with contextlib.suppress(BiasdaskError):
            return [t for e in iat_words(model, language) for t in e.tokens]
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
        :func:`cell_values` gives the cube's variables.

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
