"""The set-level metrics of WEFE and sweater (RND, RNSB, MAC, ECT, NAS) as classic tests on stored embeddings.

:func:`set_metric_test` reads the rows of three word sets (words S, gender groups A, B; sweater's
``S_words``, ``A_words``, ``B_words``), checks their coverage with WEAT's rule
(:class:`~biasdask.engine.weat.CoverageError` below ``min_coverage``), computes the metric with
:mod:`biasdask.stats.setmetrics` (MAC: target set S, attribute sets A and B), and its null by
relabelling the words of A ∪ B: each batch of permutations is one Dask task
(:func:`biasdask.stats.setmetrics.relabel_null`), permutation i seeded by
``SeedSequence(seed, spawn_key=(i,))``, so the result is the same whatever the scheduler and batch
size; every split is enumerated (in this process) when C(|A| + |B|, |A|) <= ``n_permutations``. MAC
has no null (relabelling leaves it unchanged): its p-value is NaN and the convention says so.

In a study (:func:`run_set_cell`) the tests ``rnd``, ``rnsb``, ``mac``, ``ect`` and ``nas`` run on the
gender word sets of each language (:func:`set_metric_sets`): in English WEAT-7's, S = its math terms
(X), A, B = male, female terms, exactly sweater's glove_math example, whose published values the cells
reproduce; XWEAT-7's translations in de, es, hr, it, ru, tr; elsewhere Lewis & Lupyan's IAT words
(S = career, A, B = male, female; a word's vector the mean over its translations, all grammatical forms).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import dask
import numpy as np
from distributed import Client

from biasdask.engine.cluster import active_client, compute, n_slots
from biasdask.engine.permutation import Alternative
from biasdask.engine.scores import as_dataset, read_rows
from biasdask.engine.weat import DEFAULT_MIN_COVERAGE, ClassicTestResult, _check_coverage, _coverage, iat_coverage
from biasdask.engine.words import _language, word_list
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings
from biasdask.lexicon import available_tests, iat_categories, iat_languages, iat_words, weat_test, xweat_test
from biasdask.stats import setmetrics as sm
from biasdask.stats.permutation import ALTERNATIVES, normal_pvalue, permutation_pvalue
from biasdask.stats.weat import _word_vectors

__all__ = ["SET_METRICS", "run_set_cell", "set_metric_sets", "set_metric_test"]

SET_METRICS: tuple[str, ...] = sm.METRICS
"""Study test names of the set-level metrics."""

_ROLES = ("x", "a", "b")  # S is recorded as x (n_x), so that cells read like WEAT's
_NULL = (
    "p-value: the words of A and B relabelled at random (splits of A ∪ B into |A| and |B| words), the metric "
    "recomputed for each split; (b+1)/(m+1) when sampled, exact when every split is enumerated"
)
_CONVENTIONS = {
    "rnd": "RND = Σ_{s in S} ‖s - mean A‖ - ‖s - mean B‖, raw vectors (Garg et al. 2018; sweater's "
    "sum, WEFE reports it divided by |S|); > 0: S closer to B. " + _NULL,
    "rnsb": "RNSB = KL(p ‖ uniform) in nats, p(s) = P(B | s) normalised over S, from a logistic regression "
    "(scikit-learn liblinear, C = 1, random_state = 0) trained on all of A (0) vs B (1) (Sweeney & Najafian 2019; "
    "WEFE trains on an 80% holdout by default). " + _NULL,
    "mac": "MAC = mean over the words s of S and the sets A, B of mean (1 - cos(s, a)), WEFE's definition "
    "(sweater's mac(S, A) is the mean cosine similarity with A alone); no null: it averages over both groups, so "
    "relabelling their words does not change it (exactly when |A| = |B|); the p-value is NaN",
    "ect": "ECT = Spearman's ρ between cos(s, mean A) and cos(s, mean B) over S (Dev & Phillips 2019); "
    "1: no bias. " + _NULL,
    "nas": "NAS = mean over S of (mean_a cos(s, a) - mean_b cos(s, b)) / sd(cos(s, A ∪ B)), sample SD "
    "(ddof = 1), sweater's nas per word; > 0: S leans to A. " + _NULL,
}


def _seed(seed: int | None) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise BiasdaskError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _resolve(alternative: str, statistic: float, centre: float) -> str:
    if alternative not in ALTERNATIVES:
        raise BiasdaskError(f"alternative must be one of {', '.join(ALTERNATIVES)}; got {alternative!r}")
    if alternative != "auto":
        return alternative
    return "greater" if statistic > centre else "less" if statistic < centre else "two-sided"


def _value(metric: str, m: dict[str, np.ndarray]) -> float:
    if metric == "mac":
        return sm.mac([m["x"]], [m["a"], m["b"]])
    return getattr(sm, metric)(m["x"], m["a"], m["b"])


def _null(metric, m, n_permutations, seed, client, batch_size, progress) -> tuple[np.ndarray, bool]:
    s = m["x"]
    if sm.n_relabellings(len(m["a"]), len(m["b"])) <= n_permutations:
        return sm.exact_relabel_null(metric, s, m["a"], m["b"]), True
    if batch_size is None:
        batch_size = max(1, -(-n_permutations // (2 * max(1, n_slots(client)))))
    task = dask.delayed(sm.relabel_null, pure=True)
    parts = [
        task(metric, s, m["a"], m["b"], seed, start, min(n_permutations, start + batch_size))
        for start in range(0, n_permutations, batch_size)
    ]
    return np.concatenate(compute(*parts, client=client, progress=progress, desc="permutations")), False


def _test(
    metric,
    matrices,
    coverage,
    *,
    n_permutations,
    alternative,
    seed,
    client,
    return_null,
    batch_size,
    progress,
    test,
    language,
) -> ClassicTestResult:
    seed = _seed(seed)
    _resolve(alternative, 0.0, 0.0)  # a bad alternative fails before any work
    statistic = _value(metric, matrices)
    values = dict(z_score=math.nan, p_value_normal=math.nan, null_mean=math.nan, null_std=math.nan)
    pvalue, exact, m, null = math.nan, False, 0, None
    resolved = alternative if alternative != "auto" else "two-sided"
    if metric in sm.NULL_METRICS:
        if not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
            raise BiasdaskError(f"n_permutations must be a positive integer, got {n_permutations!r}")
        null, exact = _null(metric, matrices, int(n_permutations), seed, client, batch_size, progress)
        mean, sd = float(null.mean()), float(null.std(ddof=1)) if null.size > 1 else math.nan
        resolved = _resolve(alternative, statistic, mean)
        tolerance = 1e-9 * max(1.0, abs(statistic))
        weights = np.ones(null.size, dtype=np.int64) if exact else None
        pvalue = permutation_pvalue(null, statistic, resolved, mean, tolerance, weights)
        z, p_normal = normal_pvalue(statistic, mean, sd, resolved)
        values = dict(z_score=z, p_value_normal=p_normal, null_mean=mean, null_std=sd)
        m = int(null.size)
    return ClassicTestResult(
        statistic=statistic,
        pvalue=pvalue,
        effect_size=math.nan,
        n_permutations=m,
        exact=exact,
        alternative=resolved,
        n_x=len(matrices["x"]),
        n_y=0,
        seed=seed,
        null_distribution=null if return_null else None,
        n_a=len(matrices["a"]),
        n_b=len(matrices["b"]),
        test=test,
        language=language,
        similarity="euclidean" if metric == "rnd" else "cosine",
        convention=_CONVENTIONS[metric],
        coverage=coverage,
        **values,
    )


def _check_metric(metric: str) -> None:
    if metric not in SET_METRICS:
        raise BiasdaskError(f"unknown set metric {metric!r}; choose from {list(SET_METRICS)}")


def set_metric_test(
    emb: Embeddings,
    metric: Literal["rnd", "rnsb", "mac", "ect", "nas"],
    s: Sequence[str],
    a: Sequence[str],
    b: Sequence[str],
    n_permutations: int = 9999,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    storage_options: dict | None = None,
    *,
    names: Sequence[str] | None = None,
    test: str | None = None,
    batch_size: int | None = None,
    progress: bool | None = None,
    placebo: int | None = None,
    placebo_exclude: Sequence[str] = (),
) -> ClassicTestResult:
    """One set-level metric on three word sets of a stored embedding, with its relabelling p-value.

    Parameters
    ----------
    emb
        A store URL, Dataset, DataArray or gensim ``KeyedVectors`` (:func:`biasdask.as_embeddings`); only
        the rows of the three sets are read.
    metric
        ``"rnd"``, ``"rnsb"``, ``"mac"``, ``"ect"`` or ``"nas"`` (see :mod:`biasdask.stats.setmetrics`).
    s
        The words whose association is measured (e.g. math terms); MAC's target set. Recorded as ``x``
        (``n_x``) in the result and the cube.
    a, b
        The two groups (e.g. male and female terms); MAC's attribute sets.
    n_permutations
        Relabellings sampled; all are enumerated when ``C(|A| + |B|, |A|)`` is at most this.
    alternative
        ``"two-sided"`` (``|v_i - mean null| >= |v - mean null|``), ``"greater"``, ``"less"``, or ``"auto"``
        (the side of the null mean the value lies on, chosen after seeing it).
    seed
        Non-negative integer seed of the relabellings (bit-identical results on any scheduler). ``None``
        (the default) draws a fresh seed, recorded in the result's ``seed``: pass it back to reproduce the
        result bit for bit.
    client
        Dask client (default: the current one, else Dask's default scheduler).
    min_coverage
        Each set must have at least this share of its words in the embedding, else
        :class:`~biasdask.engine.weat.CoverageError`.
    return_null, storage_options, batch_size, progress
        As in :func:`biasdask.engine.weat.weat`.
    names
        Names of the three sets (for messages and coverage); default ``S``, ``A``, ``B``.
    test
        Label recorded in the result (default the metric's name).
    placebo, placebo_exclude
        Also compare the value with P = ``placebo`` values of the metric whose group words A and B are
        replaced by random words of about the same frequency ranks (S fixed; never a test word or a known
        gendered word; :func:`biasdask.engine.placebo.attribute_placebo`), seeded by the test's seed:
        ``p_value_placebo``, ``z_placebo`` of the result (two-sided about the placebo mean unless
        ``alternative`` says a side). ``placebo_exclude``: words no placebo set may use.

    Returns
    -------
    ClassicTestResult
        ``statistic`` is the metric's value; ``effect_size`` is NaN (none is defined); for MAC the
        p-value and null moments are NaN and ``n_permutations`` is 0. ``n_y`` is 0.

    Examples
    --------
    RND of WEAT 7's math words against its male and female terms (on the GloVe 840B rows of Caliskan et
    al.'s tests this is sweater's published -1.147534; random vectors here):

    >>> import numpy as np
    >>> import biasdask
    >>> from biasdask.lexicon import weat_test
    >>> w = weat_test(7)
    >>> words = [*w.x, *w.a, *w.b]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.set_metric_test(emb, "rnd", w.x, w.a, w.b, n_permutations=999, seed=1)
    >>> res.n_x, res.n_permutations, bool(0 < res.pvalue <= 1)
    (8, 999, True)
    """
    _check_metric(metric)
    s, a, b = word_list(s, "s"), word_list(a, "a"), word_list(b, "b")
    emb = as_dataset(emb, storage_options)
    language = _language(emb)
    labels = tuple(names) if names is not None else ("S", "A", "B")
    test = test or metric
    with contextlib.nullcontext(active_client(client)) as c:
        vectors = read_rows(emb, [*s, *a, *b], c)
        sets = dict(zip(_ROLES, (s, a, b)))
        coverage = {role: _coverage(role, label, sets[role], vectors) for role, label in zip(_ROLES, labels)}
        _check_coverage(coverage, min_coverage, test, language)
        matrices = {r: np.array([vectors[w] for w in coverage[r].found]) for r in _ROLES}
        res = _test(
            metric,
            matrices,
            coverage,
            n_permutations=n_permutations,
            alternative=alternative,
            seed=seed,
            client=c,
            return_null=return_null,
            batch_size=batch_size,
            progress=progress,
            test=test,
            language=language,
        )
    if not placebo:
        return res
    from biasdask.engine.placebo import attribute_placebo

    def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
        return _value(metric, {"x": matrices["x"], "a": a_rows, "b": b_rows}), math.nan

    found = attribute_placebo(
        emb,
        coverage["a"].found,
        coverage["b"].found,
        statistic,
        target_words=coverage["x"].found,
        n=int(placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=placebo_exclude,
    )
    return _with_placebo(res, found)


def _iat_set_metric_test(
    emb, metric, language, model, min_coverage, common, placebo=None, placebo_exclude=()
) -> ClassicTestResult:
    entries = iat_words(model, language)
    categories = iat_categories()
    with contextlib.nullcontext(active_client(common["client"])) as c:
        vectors = read_rows(emb, [t for e in entries for t in e.tokens], c)
        wv = _word_vectors(entries, vectors)
        coverage, matrices = {}, {}
        for role, category in zip(_ROLES, ("career", "male", "female")):
            coverage[role] = iat_coverage(role, category, categories[category], entries, vectors)
            matrices[role] = np.array([wv[(category, w)] for w in coverage[role].found])
        _check_coverage(coverage, min_coverage, metric, language)
        res = _test(metric, matrices, coverage, **{**common, "client": c}, test=metric, language=language)
    if not placebo:
        return res
    from biasdask.engine.placebo import iat_placebo

    def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
        return _value(metric, {"x": matrices["x"], "a": a_rows, "b": b_rows}), math.nan

    found = iat_placebo(  # each male and female term replaced by a word of its most frequent token's rank
        emb,
        entries,
        coverage,
        statistic,
        (_value(metric, matrices), math.nan),
        n=int(placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=placebo_exclude,
    )
    return _with_placebo(res, found)


def set_metric_sets(language: str, model: str = "cc") -> str | None:
    """Which word sets the set metrics use in ``language``: ``"weat7"`` (English), ``"xweat7"`` (de, es,
    hr, it, ru, tr), ``"career_family"`` (other languages with IAT translations for ``model``), or None."""
    tests = available_tests()
    if language in tests["weat7"]:
        return "weat7"
    if language in tests["xweat7"]:
        return "xweat7"
    if language in iat_languages(model):
        return "career_family"
    return None


def run_set_cell(
    test: str,
    emb: Embeddings,
    *,
    language: str,
    n_permutations: int = 9999,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    model: Literal["cc", "wiki", "subt"] = "cc",
    return_null: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
    storage_options: dict | None = None,
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
    placebo: int | None = None,
    placebo_exclude: Sequence[str] = (),
) -> ClassicTestResult:
    """Run the study test ``rnd``, ``rnsb``, ``mac``, ``ect`` or ``nas`` on ``language``'s gender word sets.

    The sets are the study's ``set_metric_words`` (S, A, B) when given, else :func:`set_metric_sets`'s;
    ``model`` chooses the IAT translations where those are used. Other parameters
    as in :func:`biasdask.engine.cells.run_cell`.

    Raises
    ------
    CoverageError
        The cell must be recorded as skipped (its message names the missing words).
    BiasdaskError
        An unknown metric, or a language without gender word sets.
    """
    _check_metric(test)
    emb = as_dataset(emb, storage_options)
    common = dict(
        n_permutations=n_permutations,
        alternative=alternative,
        seed=seed,
        client=client,
        return_null=return_null,
        batch_size=batch_size,
        progress=progress,
    )
    placebos = dict(placebo=placebo, placebo_exclude=placebo_exclude)
    if set_metric_words is not None:
        s, a, b = set_metric_words
        return set_metric_test(emb, test, s, a, b, min_coverage=min_coverage, test=test, **common, **placebos)
    sets = set_metric_sets(language, model)
    if sets is None:
        raise BiasdaskError(f"test {test!r}: no gender word sets for language {language!r}")
    if sets == "career_family":
        return _iat_set_metric_test(emb, test, language, model, min_coverage, common, **placebos)
    ws = weat_test(7) if sets == "weat7" else xweat_test(language, 7)
    return set_metric_test(
        emb,
        test,
        ws.x,
        ws.a,
        ws.b,
        min_coverage=min_coverage,
        names=(ws.x_name, ws.a_name, ws.b_name),
        test=test,
        **common,
        **placebos,
    )


def _with_placebo(res, found):
    """``res`` with the placebo comparison of its one statistic (a set-level metric has no effect size)."""
    return dataclasses.replace(
        res, p_value_placebo=float(found.p_value[0]), z_placebo=float(found.z[0]), n_placebo=found.n
    )
