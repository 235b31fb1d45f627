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

from biasdask._calls import keyword_api
from biasdask.engine.cluster import active_client, compute, n_slots
from biasdask.engine.placebo import attribute_placebo, iat_placebo
from biasdask.engine.scores import read_rows
from biasdask.engine.weat import (
    DEFAULT_MIN_COVERAGE,
    ClassicTestResult,
    check_coverage,
    iat_coverage,
    set_coverage,
    word_sets,
)
from biasdask.engine.words import store_language
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.io.fs import Locatable
from biasdask.lexicon import (
    WordSets,
    available_tests,
    iat_categories,
    iat_languages,
    iat_words,
    weat_test,
    xweat_test,
)
from biasdask.stats import setmetrics as sm
from biasdask.stats.permutation import normal_pvalue, permutation_pvalue, resolve_seed
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options
from biasdask.stats.weat import word_vectors

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
    "(liblinear's L2-regularised fit, C = 1, as scikit-learn's solver='liblinear') trained on all of A (0) vs B (1) "
    "(Sweeney & Najafian 2019; "
    "WEFE trains on an 80% holdout by default). " + _NULL,
    "mac": "MAC = mean over the words s of S and the sets A, B of mean (1 - cos(s, a)), WEFE's definition "
    "(sweater's mac(S, A) is the mean cosine similarity with A alone); no null: it averages over both groups, so "
    "relabelling their words does not change it (exactly when |A| = |B|); the p-value is NaN",
    "ect": "ECT = Spearman's ρ between cos(s, mean A) and cos(s, mean B) over S (Dev & Phillips 2019); "
    "1: no bias. " + _NULL,
    "nas": "NAS = mean over S of (mean_a cos(s, a) - mean_b cos(s, b)) / sd(cos(s, A ∪ B)), sample SD "
    "(ddof = 1), sweater's nas per word; > 0: S leans to A. " + _NULL,
}


def _resolve(alternative: str, statistic: float, centre: float) -> str:
    if alternative != "auto":
        return alternative
    return "greater" if statistic > centre else "less" if statistic < centre else "two-sided"


def _value(metric: str, m: dict[str, np.ndarray]) -> float:
    if metric == "mac":
        return sm.mac([m["x"]], [m["a"], m["b"]])
    return getattr(sm, metric)(m["x"], m["a"], m["b"])


def _null(metric, m, options: Resampling, seed, client, progress) -> tuple[np.ndarray, bool]:
    n_permutations, batch_size = options.n_permutations, options.batch_size
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
    resampling: Resampling,
    client,
    return_null,
    progress,
    test,
    language,
) -> ClassicTestResult:
    seed = resolve_seed(resampling.seed)
    alternative = resampling.alternative
    statistic = _value(metric, matrices)
    values = dict(z_score=math.nan, p_value_normal=math.nan, null_mean=math.nan, null_std=math.nan)
    pvalue, exact, m, null = math.nan, False, 0, None
    resolved = alternative if alternative != "auto" else "two-sided"
    if metric in sm.NULL_METRICS:
        null, exact = _null(metric, matrices, resampling, seed, client, progress)
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
        p_value=pvalue,
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


@keyword_api("set_metric_test(emb, WordSets(x=s, a=a, b=b), metric=..., resampling=Resampling(...))")
def set_metric_test(
    emb: Embeddings,
    sets: WordSets | None = None,
    *,
    metric: Literal["rnd", "rnsb", "mac", "ect", "nas"],
    test: str | Locatable | None = None,
    resampling: Resampling | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    return_null: bool = False,
    progress: bool | None = None,
) -> ClassicTestResult:
    """One set-level metric on three word sets of a stored embedding, with its relabelling p-value.

    Parameters
    ----------
    emb
        A store (URL, :class:`~biasdask.Location` or fsspec mapper), Dataset, DataArray or gensim
        ``KeyedVectors`` (:func:`biasdask.as_embeddings`); only the rows of the three sets are read.
    sets
        A :class:`~biasdask.lexicon.WordSets` whose ``x`` is S, the words whose association is measured
        (e.g. math terms; MAC's target set; recorded as ``x``, ``n_x``, in the result and the cube), and
        whose ``a``, ``b`` are the two groups (e.g. male and female terms; MAC's attribute sets); its
        ``y`` is not used, so a WEAT's sets measure its X against A and B.
    metric
        ``"rnd"``, ``"rnsb"``, ``"mac"``, ``"ect"`` or ``"nas"`` (see :mod:`biasdask.stats.setmetrics`);
        also the result's label.
    test
        Instead of ``sets``, the name of a lexicon test (``"weat7"``, ``"xweat7"``) or a file of word sets
        in WEATHub's layout (as :func:`biasdask.weat` takes it), whose X, A and B are used.
    resampling
        :class:`~biasdask.Resampling`: ``n_permutations`` relabellings sampled (all enumerated when
        ``C(|A| + |B|, |A|)`` is at most this); ``alternative``: ``"two-sided"``
        (``|v_i - mean null| >= |v - mean null|``), ``"greater"``, ``"less"``, or ``"auto"`` (the side of
        the null mean the value lies on, chosen after seeing it); ``seed`` of the relabellings
        (bit-identical results on any scheduler; ``None`` draws one, recorded in the result's ``seed``);
        ``batch_size``; ``placebo``: also compare the value with P = ``placebo`` values of the metric
        whose group words A and B are replaced by random words of about the same frequency ranks (S
        fixed; never a test word, a known gendered word or a word of ``placebo_exclude``;
        :func:`biasdask.engine.placebo.attribute_placebo`), seeded by the test's seed:
        ``p_value_placebo``, ``z_placebo`` of the result (two-sided about the placebo mean unless
        ``alternative`` says a side).
    client
        Dask client (default: the current one, else Dask's default scheduler).
    min_coverage
        Each set must have at least this share of its words in the embedding, else
        :class:`~biasdask.engine.weat.CoverageError`.
    return_null, progress
        As in :func:`biasdask.engine.weat.weat`.

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
    >>> res = biasdask.set_metric_test(emb, w, metric="rnd", resampling=biasdask.Resampling(n_permutations=999, seed=1))
    >>> res.n_x, res.n_permutations, bool(0 < res.p_value <= 1)
    (8, 999, True)
    """
    _check_metric(metric)
    options = resampling_options(resampling)
    emb = as_embeddings(emb)
    sets = word_sets("set_metric_test", sets, test, emb, roles="xab")
    s, a, b = sets.x, sets.a, sets.b
    language = store_language(emb)
    labels = (sets.x_name, sets.a_name, sets.b_name)
    test = metric
    with contextlib.nullcontext(active_client(client)) as c:
        vectors = read_rows(emb, [*s, *a, *b], c)
        sets = dict(zip(_ROLES, (s, a, b)))
        coverage = {role: set_coverage(role, label, sets[role], vectors) for role, label in zip(_ROLES, labels)}
        check_coverage(coverage, min_coverage, test, language)
        matrices = {r: np.array([vectors[w] for w in coverage[r].found]) for r in _ROLES}
        res = _test(
            metric,
            matrices,
            coverage,
            resampling=options,
            client=c,
            return_null=return_null,
            progress=progress,
            test=test,
            language=language,
        )
    if not options.placebo:
        return res

    def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
        return _value(metric, {"x": matrices["x"], "a": a_rows, "b": b_rows}), math.nan

    found = attribute_placebo(
        emb,
        coverage["a"].found,
        coverage["b"].found,
        statistic,
        target_words=coverage["x"].found,
        n=int(options.placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=options.placebo_exclude,
        match=options.placebo_match,
    )
    return _with_placebo(res, found)


def _iat_set_metric_test(emb, metric, language, iat_model, min_coverage, common) -> ClassicTestResult:
    entries = iat_words(iat_model, language)
    categories = iat_categories()
    with contextlib.nullcontext(active_client(common["client"])) as c:
        vectors = read_rows(emb, [t for e in entries for t in e.tokens], c)
        wv = word_vectors(entries, vectors)
        coverage, matrices = {}, {}
        for role, category in zip(_ROLES, ("career", "male", "female")):
            coverage[role] = iat_coverage(role, category, categories[category], entries, vectors)
            matrices[role] = np.array([wv[(category, w)] for w in coverage[role].found])
        check_coverage(coverage, min_coverage, metric, language)
        res = _test(metric, matrices, coverage, **{**common, "client": c}, test=metric, language=language)
    options = common["resampling"]
    if not options.placebo:
        return res

    def statistic(a_rows: np.ndarray, b_rows: np.ndarray) -> tuple[float, float]:
        return _value(metric, {"x": matrices["x"], "a": a_rows, "b": b_rows}), math.nan

    found = iat_placebo(  # each male and female term replaced by a word of its most frequent token's rank
        emb,
        entries,
        coverage,
        statistic,
        (_value(metric, matrices), math.nan),
        n=int(options.placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=options.placebo_exclude,
        match=options.placebo_match,
    )
    return _with_placebo(res, found)


def set_metric_sets(language: str, iat_model: str = "cc") -> str | None:
    """Which word sets the set metrics use in ``language``: ``"weat7"`` (English), ``"xweat7"`` (de, es,
    hr, it, ru, tr), ``"career_family"`` (other languages with IAT translations for ``iat_model``), or None."""
    tests = available_tests()
    if language in tests["weat7"]:
        return "weat7"
    if language in tests["xweat7"]:
        return "xweat7"
    if language in iat_languages(iat_model):
        return "career_family"
    return None


def run_set_cell(
    test: str,
    emb: Embeddings,
    *,
    language: str,
    resampling: Resampling | None = None,
    client: Client | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    iat_model: Literal["cc", "wiki", "subt"] = "cc",
    return_null: bool = False,
    progress: bool = False,
    set_metric_words: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None,
) -> ClassicTestResult:
    """Run the study test ``rnd``, ``rnsb``, ``mac``, ``ect`` or ``nas`` on ``language``'s gender word sets.

    The sets are the study's ``set_metric_words`` (S, A, B) when given, else :func:`set_metric_sets`'s;
    ``iat_model`` chooses the IAT translations where those are used. Other parameters
    as in :func:`biasdask.study.cells.run_cell`.

    Raises
    ------
    CoverageError
        The cell must be recorded as skipped (its message names the missing words).
    BiasdaskError
        An unknown metric, or a language without gender word sets.
    """
    _check_metric(test)
    emb = as_embeddings(emb)
    common = dict(resampling=resampling_options(resampling), client=client, return_null=return_null, progress=progress)
    if set_metric_words is not None:
        s, a, b = set_metric_words
        sets = WordSets(s, (), a, b, x_name="S")
        return set_metric_test(emb, sets, metric=test, min_coverage=min_coverage, **common)
    sets = set_metric_sets(language, iat_model)
    if sets is None:
        raise BiasdaskError(f"test {test!r}: no gender word sets for language {language!r}")
    if sets == "career_family":
        return _iat_set_metric_test(emb, test, language, iat_model, min_coverage, common)
    ws = weat_test(7) if sets == "weat7" else xweat_test(language, 7)
    return set_metric_test(emb, ws, metric=test, min_coverage=min_coverage, **common)


def _with_placebo(res, found):
    """``res`` with the placebo comparison of its one statistic (a set-level metric has no effect size, so
    its placebo p is its statistic's)."""
    return dataclasses.replace(res, **found.fields())
