"""The placebo null of a full-vocabulary test on a stored vocabulary.

The dummy-language null of the full-vocabulary test is false for any attribute pair of a real embedding
(table/chair rejects as firmly as he/she). The placebo comparison asks whether the observed statistic
exceeds that of random attribute sets of the same sizes and word frequencies: each attribute word is
replaced by a word of about its frequency rank (:func:`biasdask.stats.placebo.rank_matched_words`),
drawn from the vocabulary the test scores minus the attribute words and every known gendered word
(:func:`gendered_words`, plus the caller's ``exclude``), and the test's statistic is recomputed for
each placebo pair from moments of the target words gathered in the pass that scores them
(:class:`biasdask.stats.placebo.MomentAccumulator`, :func:`biasdask.engine.scores.scores_and_moments`,
merged in chunk order, so results are the same on any scheduler). For ``euclidean``, not linear in a
direction, each placebo pair's u is computed explicitly on a systematic sample of the target words
gathered in the same pass (:func:`biasdask.stats.placebo.euclidean_statistics`), the observed pair's
statistics on the same sample.

Every placebo pair is scored on the observed test's own targets X: when the test leaves its attribute
words out of X, they stay out, and each placebo pair's words leave X too (exactly, from the moments);
the weights of the other words are those of the observed test.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from biasdask.engine.scores import as_terms, attribute_set, attribute_vectors, nfc, positions, stored_rows, word_index
from biasdask.errors import BiasdaskError, PlaceboUnavailableError
from biasdask.io.fs import Location
from biasdask.io.store import stored_vectors
from biasdask.lexicon import AttributeTerm, bolukbasi, context_words, iat_words, languages
from biasdask.stats.association import linear_directions
from biasdask.stats.bootstrap import attribute_bootstrap_interval
from biasdask.stats.placebo import (
    DEFAULT_WINDOW,
    LinearMoments,
    VocabularySample,
    euclidean_statistics,
    evaluate_moments,
    moment_rows,
    placebo_summary,
    rank_matched_words,
)

__all__ = [
    "PlaceboPlan",
    "PlaceboResult",
    "attribute_placebo",
    "frequent_tokens",
    "gendered_words",
    "iat_placebo",
    "placebo_test",
    "plan_placebo",
    "run_placebo",
    "summarise",
    "weights_from_scores",
    "placebo_forbidden",
    "PlaceboRun",
]


@dataclass(frozen=True)
class PlaceboResult:
    """A full-vocabulary test's statistics against its placebo distribution (:func:`placebo_test`).

    Attributes
    ----------
    p_value, z : ndarray, shape (K,)
        Per weighting: (1 + #placebo at least as extreme)/(P + 1), two-sided about the placebo mean
        for a two-sided alternative; (s - mean)/SD of the placebo statistics (ddof 1).
    effect_size_percentile : float
        The observed d's percentile among the placebo pairs' d (ties count half).
    statistics : ndarray, shape (P, K)
        The placebo statistics s of each draw and weighting.
    effect_sizes : ndarray, shape (P,)
        The placebo pairs' d.
    n : int
        P, the placebo pairs drawn.
    words : ndarray of str, shape (P, n_a + n_b), or None
        Each placebo pair's words, A' then B' (None where not looked up: a study's).
    observed_statistic, observed_effect_size
        The test's own s (per weighting) and d, from the same moments.
    interval : dict
        The interval fields of the test's d over its resampled attribute words
        (:func:`biasdask.stats.bootstrap.attribute_bootstrap_interval`, BCa, seeded like the draws):
        ``effect_size_ci_low``, ``effect_size_ci_high``, ``effect_size_se``, ``ci_level``,
        ``ci_method``; empty without ``ci_level``.
    """

    p_value: np.ndarray
    z: np.ndarray
    effect_size_percentile: float
    statistics: np.ndarray
    effect_sizes: np.ndarray
    n: int
    words: np.ndarray | None
    observed_statistic: np.ndarray
    observed_effect_size: float
    interval: dict = dataclasses.field(default_factory=dict)

    def with_alternative(self, alternative: str | Sequence[str]) -> PlaceboResult:
        """The same draws summarised for another (resolved) alternative."""
        out = summarise(
            self.observed_statistic,
            self.observed_effect_size,
            self.statistics,
            self.effect_sizes,
            self.words,
            alternative,
        )
        return dataclasses.replace(out, interval=self.interval)


@functools.lru_cache(maxsize=64)
def gendered_words(language: str) -> frozenset[str]:
    """Words known to carry gender in ``language``, which no placebo may use: the catalog's translations
    of *male* and *female*, the IAT's male and female terms (every model's translations), and in
    English Bolukbasi et al. 2016's gender-specific words and pairs and Valentini et al.'s context words."""
    words: set[str] = set()
    catalog = languages()
    for _, row in catalog[catalog["code"] == language].iterrows():
        words.update(str(row["male"]).split() + str(row["female"]).split())
    for model in ("cc", "wiki", "subt"):
        try:
            entries = iat_words(model, language)
        except BiasdaskError:
            continue
        words.update(t for e in entries if e.category in ("male", "female") for t in e.tokens)
    if language == "en":
        lists = bolukbasi()
        words.update(lists.gender_specific_full)
        words.update(w for pair in (*lists.definitional_pairs, *lists.equalize_pairs) for w in pair)
        context = context_words()
        words.update((*context.female, *context.male))
    return frozenset(words)


def weights_from_scores(u: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The weights z of each weighting (rows of ``t`` = z·u as float32 scores hold them), recovered as
    t/u in float64; a word whose u is exactly 0 keeps weight 1 in a row equal to u (``uniform``), else 0."""
    u64 = np.asarray(u, dtype=np.float64)
    t64 = np.atleast_2d(np.asarray(t, dtype=np.float64))
    nonzero = u64 != 0
    out = np.empty_like(t64)
    for k, row in enumerate(t64):
        fill = 1.0 if np.array_equal(row, u64) else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            out[k] = np.where(nonzero, row / np.where(nonzero, u64, 1.0), fill)
    return out


def _term_tokens(words: Sequence[str | AttributeTerm], used: Iterable[str]) -> list[list[str]]:
    terms = {w.label if isinstance(w, AttributeTerm) else str(w): w for w in words}
    out = []
    for label in used:
        term = terms[label]
        out.append([tok for tr in term.translations for tok in tr] if isinstance(term, AttributeTerm) else [label])
    return out


@dataclass(frozen=True)
class PlaceboPlan:
    """What the placebo draws of one full-vocabulary test need, found in its vocabulary without reading
    vectors (:func:`plan_placebo`); :func:`run_placebo` evaluates it in a task.

    Attributes
    ----------
    kind : str
        The association.
    attribute_ranks : tuple of int
        The frequency rank of each attribute word used (its most frequent token), A then B.
    n_a : int
        The attribute words of A used.
    attribute_rows, forbidden_rows : ndarray of int
        The rows of the attribute words' tokens; the rows within ``spans`` no placebo word may take
        (those, the known gendered words and the caller's exclusions).
    spans : ndarray of int, shape (m, 2)
        The rows [lo, hi) a draw may take: around each attribute word's row, as many rows as its
        neighbourhood and every forbidden word could fill (words beyond them cannot be drawn, so they
        are not looked up: one scan of a few slices instead of the whole vocabulary).
    ranks : ndarray of int or None
        Each row's frequency rank (None: row + 1, a store's).
    read_rows : callable
        Sorted rows → their float32 vectors (reads only the chunks that hold them).
    va, vb : ndarray
        The attribute vectors the test's own direction is made of.
    """

    kind: str
    attribute_ranks: tuple[int, ...]
    n_a: int
    attribute_rows: np.ndarray
    forbidden_rows: np.ndarray
    spans: np.ndarray
    ranks: np.ndarray | None
    read_rows: Callable[[np.ndarray], np.ndarray]
    va: np.ndarray
    vb: np.ndarray


def _reach(rows: Sequence[int], n: int, reach: int) -> np.ndarray:
    """The union of the row ranges [row - reach, row + reach] within [0, n), as sorted disjoint spans."""
    spans: list[list[int]] = []
    for row in sorted(rows):
        lo, hi = max(0, row - reach), min(n, row + reach + 1)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    return np.array(spans, dtype=np.int64).reshape(-1, 2)


def _memory_rows(vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.asarray(vectors[rows], dtype=np.float32)


def plan_placebo(
    emb: xr.Dataset,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    used: tuple[Sequence[str], Sequence[str]],
    association: str,
    exclude: Iterable[str] = (),
    attribute_vectors: tuple[np.ndarray, np.ndarray] | None = None,
) -> PlaceboPlan:
    """The :class:`PlaceboPlan` of a full-vocabulary test of ``emb`` with attribute words ``a``, ``b``
    (``used``: the labels of those found, as its scores record them), its words looked up in the
    vocabulary's index; ``attribute_vectors``: the test's (default: read).

    """
    tokens = [nfc(group) for group in _term_tokens(a, used[0]) + _term_tokens(b, used[1])]
    flat = [tok for group in tokens for tok in group]
    forbidden = placebo_forbidden(emb, exclude, flat)
    n_words = emb.sizes["word"]
    first_row = {word: int(row) for word, row in zip(flat, positions(emb, flat)) if row >= 0}
    stored = stored_vectors(emb["vectors"].data)
    ranks = None if stored is not None else np.asarray(emb["rank"].values, dtype=np.int64)
    attribute_ranks, representatives = [], []
    for group in tokens:
        rows = [first_row[t] for t in group if t in first_row]
        row = min(rows) if rows else 0
        representatives.append(row)
        attribute_ranks.append(1 if not rows else row + 1 if ranks is None else int(ranks[row]))
    spans = _reach(representatives, n_words, DEFAULT_WINDOW + len(forbidden) + len(flat) + 1)
    if ranks is not None and not np.array_equal(ranks, np.arange(1, ranks.size + 1)):
        spans = np.array([[0, n_words]])  # ranks out of row order: every row may be drawn
    forbidden_rows = _rows_within(emb, forbidden, spans)
    if stored is not None:
        reader: Callable = functools.partial(_stored_rows, stored.location, stored.chunk, emb.sizes["dim"])
    else:
        reader = functools.partial(_memory_rows, np.asarray(emb["vectors"].values))
    va, vb = attribute_vectors if attribute_vectors is not None else _observed_vectors(emb, a, b, association)
    return PlaceboPlan(
        kind=association,
        attribute_ranks=tuple(attribute_ranks),
        n_a=len(used[0]),
        attribute_rows=np.array(sorted(first_row.values()), dtype=np.int64),
        forbidden_rows=forbidden_rows,
        spans=spans,
        ranks=ranks,
        read_rows=reader,
        va=np.asarray(va),
        vb=np.asarray(vb),
    )


def placebo_forbidden(emb: xr.Dataset, exclude: Iterable[str], attribute_tokens: Iterable[str]) -> list[str]:
    """The words no placebo pair of ``emb`` may draw: its language's gendered words, ``exclude`` and the
    test's attribute tokens (NFC)."""
    words = set(gendered_words(str(emb.attrs.get("language", "")))) | set(exclude) | set(attribute_tokens)
    return sorted(nfc(words))


def _rows_within(emb: xr.Dataset, words: Sequence[str], spans: np.ndarray) -> np.ndarray:
    """The rows inside ``spans`` (sorted disjoint [lo, hi)) that hold one of ``words``, in row order."""
    if "word" not in emb.coords:  # a store opened without its words: its words are unique, each has one row
        rows = np.sort(positions(emb, words))
        inside = np.zeros(rows.size, dtype=bool)
        for lo, hi in spans:
            inside |= (rows >= lo) & (rows < hi)
        return rows[inside].astype(np.int64)
    index = word_index(emb)
    return np.concatenate(
        [lo + np.flatnonzero(index[lo:hi].isin(words)) for lo, hi in spans] or [np.empty(0, np.int64)]
    )


def _stored_rows(loc: Location, chunk: int, dim: int, rows: np.ndarray) -> np.ndarray:
    return stored_rows(loc, chunk, rows, dim)


class PlaceboRun(NamedTuple):
    """What :func:`run_placebo` returns."""

    result: PlaceboResult
    draws: np.ndarray
    """The rows of each draw, (P, n_a + n_b)."""


def run_placebo(
    plan: PlaceboPlan,
    u: np.ndarray,
    t: np.ndarray,
    moments: LinearMoments | VocabularySample,
    *,
    n: int,
    seed: int,
    alternative: str | Sequence[str],
    ci_level: float | None = 0.95,
) -> PlaceboRun:
    """The placebo distribution of the test ``plan`` describes, from its computed scores (``u`` (N,),
    ``t`` (K, N): the words of the test are those with finite u) and the ``moments`` of its words;
    also the rows of each draw (P, n_a + n_b).

    Raises
    ------
    BiasdaskError
        Too few candidate words.
    """
    n_words = u.size
    finite = np.isfinite(u)
    attribute_rows = plan.attribute_rows[plan.attribute_rows < n_words]
    # a test that left its attribute words out of X: each placebo pair leaves its own words out likewise
    excluded_attributes = bool(attribute_rows.size) and not finite[attribute_rows].any()
    allowed = np.zeros(n_words, dtype=bool)
    for lo, hi in plan.spans:
        allowed[lo:hi] = finite[lo:hi]
    allowed[plan.forbidden_rows[plan.forbidden_rows < n_words]] = False
    candidates = np.flatnonzero(allowed)
    k = len(plan.attribute_ranks)
    if candidates.size < k + 1:
        raise PlaceboUnavailableError(f"placebo: {candidates.size} candidate words, too few for {k} attribute words")
    ranks = candidates + 1 if plan.ranks is None else plan.ranks[candidates]
    # a vocabulary smaller than a neighbourhood: the whole of it is every word's neighbourhood
    window = min(DEFAULT_WINDOW, candidates.size)
    draws = candidates[rank_matched_words(list(plan.attribute_ranks), ranks, n=n, seed=seed, window=window)]
    rows_needed, where = np.unique(draws, return_inverse=True)
    picked = np.asarray(plan.read_rows(rows_needed), dtype=np.float64)
    exclude_z = None
    if excluded_attributes:
        exclude_z = (
            weights_from_scores(u[draws.ravel()], t[:, draws.ravel()])
            .reshape(t.shape[0], *draws.shape)
            .transpose(1, 0, 2)
        )
    if isinstance(moments, VocabularySample):  # euclidean: each pair's u on the sampled words
        at = where.reshape(draws.shape)
        placebo = euclidean_statistics(
            moments,
            picked,
            at[:, : plan.n_a],
            at[:, plan.n_a :],
            exclude_rows=draws if excluded_attributes else None,
            exclude_z=exclude_z,
        )
        observed = euclidean_statistics(
            moments,
            np.concatenate([plan.va, plan.vb]),
            np.arange(len(plan.va)),
            len(plan.va) + np.arange(len(plan.vb)),
        )
    else:
        placebo_vectors = picked[where.reshape(draws.shape)]  # (P, k, D)
        directions = linear_directions(plan.kind, placebo_vectors[:, : plan.n_a], placebo_vectors[:, plan.n_a :])
        exclude_v = np.stack([moment_rows(plan.kind, v) for v in placebo_vectors]) if excluded_attributes else None
        placebo = evaluate_moments(moments, directions, exclude_v=exclude_v, exclude_z=exclude_z)
        observed = evaluate_moments(moments, linear_directions(plan.kind, plan.va, plan.vb))
    out = summarise(
        observed.statistic[0], float(observed.effect_size[0]), placebo.statistic, placebo.effect_size, None, alternative
    )
    interval = _interval(moments, plan.va, plan.vb, plan.kind, seed, ci_level, placebo.effect_size)
    return PlaceboRun(dataclasses.replace(out, interval=interval), draws)


def placebo_test(
    emb: xr.Dataset,
    sc: xr.Dataset,
    moments: LinearMoments | VocabularySample,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    n: int,
    seed: int,
    alternative: str | Sequence[str],
    exclude: Iterable[str] = (),
    ci_level: float | None = 0.95,
) -> PlaceboResult:
    """The placebo distribution of a full-vocabulary test whose scores, computed, are ``sc`` and whose
    words' moments are ``moments`` (both from :func:`biasdask.engine.scores.scores_and_moments`).

    Parameters
    ----------
    emb
        The embedding the scores come from (the placebo words' vectors are read from it).
    sc
        The computed scores Dataset (``u``, ``t``; attributes ``used_a``, ``used_b``, ``association``).
    moments
        The moments of the test's words, gathered with its scores.
    a, b
        The attribute words the scores were made with.
    n
        Placebo pairs P.
    seed
        The draws' seed.
    alternative
        The resolved alternative of each weighting's test (or one for all).
    exclude
        Further words no placebo may use.
    ci_level
        Also an interval of d over the resampled attribute words at this level (None: none).

    Raises
    ------
    BiasdaskError
        Too few candidate words.
    """
    plan = plan_placebo(
        emb,
        a,
        b,
        used=(list(sc.attrs["used_a"]), list(sc.attrs["used_b"])),
        association=str(sc.attrs.get("association", "cosine")),
        exclude=exclude,
    )
    u, t = np.asarray(sc["u"].values), np.asarray(sc["t"].values)
    found, draws = run_placebo(plan, u, t, moments, n=n, seed=seed, alternative=alternative, ci_level=ci_level)
    words = np.asarray(sc["word"].values).astype(object)
    return dataclasses.replace(found, words=words[draws])


def _interval(
    moments: LinearMoments | VocabularySample,
    va: np.ndarray,
    vb: np.ndarray,
    kind: str,
    seed: int,
    ci_level: float | None,
    placebo_d: np.ndarray,
) -> dict:
    """The interval fields of a full-vocabulary test's d: a bootstrap over its resampled attribute
    words; where there is none (one word on a side: nothing to resample; resamples too alike), d plus
    the spread of the placebo pairs' d about their mean (a basic interval over rank-matched attribute
    words)."""
    if ci_level is None:
        return {}
    found = attribute_bootstrap_interval(moments, va, vb, seed=seed, association=kind, ci_level=ci_level)
    if found.note:
        spread = placebo_d[np.isfinite(placebo_d)]
        if spread.size < _MIN_SPREAD:
            return {"ci_level": float(ci_level), "ci_method": f"none: {found.note}"}
        centred = spread - spread.mean()
        low, high = np.quantile(centred, [(1 - ci_level) / 2, (1 + ci_level) / 2])
        return {
            "effect_size_ci_low": found.effect_size - float(high),
            "effect_size_ci_high": found.effect_size - float(low),
            "effect_size_se": float(centred.std(ddof=1)),
            "ci_level": float(ci_level),
            "ci_method": (
                f"placebo spread: d plus the spread of the d of {spread.size} rank-matched placebo pairs "
                f"(no bootstrap: {found.note})"
            ),
        }
    return {
        "effect_size_ci_low": found.ci_low,
        "effect_size_ci_high": found.ci_high,
        "effect_size_se": found.se,
        "ci_level": float(ci_level),
        "ci_method": f"{found.ci_method} bootstrap of the attribute words ({found.n_resamples} resamples)",
    }


#: placebo pairs at least behind a placebo-spread interval
_MIN_SPREAD = 20


def summarise(
    observed_s: np.ndarray,
    observed_d: float,
    statistics: np.ndarray,
    effect_sizes: np.ndarray,
    words: np.ndarray | None,
    alternative: str | Sequence[str],
) -> PlaceboResult:
    """The :class:`PlaceboResult` of observed statistics (one per weighting) and d against placebo ones."""
    summary = placebo_summary(observed_s, statistics, alternative=np.asarray(alternative))
    d = placebo_summary(observed_d, effect_sizes, alternative="two-sided")
    return PlaceboResult(
        p_value=summary.p_value,
        z=summary.z,
        effect_size_percentile=float(d.percentile),
        statistics=statistics,
        effect_sizes=effect_sizes,
        n=int(statistics.shape[0]),
        words=words,
        observed_statistic=np.asarray(observed_s, dtype=np.float64),
        observed_effect_size=observed_d,
    )


def _observed_vectors(emb, a, b, kind) -> tuple[np.ndarray, np.ndarray]:
    """The attribute vectors the test's own direction is made of, as the scores used them."""
    set_a, set_b = attribute_set(emb, a, "A"), attribute_set(emb, b, "B")
    return attribute_vectors(kind, as_terms(a), as_terms(b), set_a, set_b, str(emb.attrs.get("language", "?")))


def attribute_placebo(
    emb: xr.Dataset,
    a_words: Sequence[str],
    b_words: Sequence[str],
    statistic: Callable[[np.ndarray, np.ndarray], tuple[float, float]],
    *,
    target_words: Iterable[str],
    n: int,
    seed: int,
    alternative: str,
    exclude: Iterable[str] = (),
    observed: tuple[float, float] | None = None,
) -> PlaceboResult:
    """The placebo distribution of a test on word sets (WEAT, career_family, a set-level metric):
    ``statistic(A, B)`` (the test's value and its effect size, NaN for none, given the attribute rows)
    with rank-matched random words in place of the attribute words ``a_words``, ``b_words``; the target
    words stay. Each placebo set's words come from the vocabulary minus the test's words
    (``target_words`` too), the known gendered words and ``exclude``, and zero vectors.

    ``observed``: the test's own (value, effect size) when its attribute vectors are not the rows of
    ``a_words`` and ``b_words`` (Lewis & Lupyan's terms average their translations; the words given
    are then each term's most frequent token, whose rank the placebo word matches); default
    ``statistic`` of those rows.

    Raises
    ------
    BiasdaskError
        Too few candidate words.
    """

    attribute = [*a_words, *b_words]
    forbidden = sorted(set(gendered_words(str(emb.attrs.get("language", "")))) | set(exclude) | set(target_words))
    found = positions(emb, [*attribute, *forbidden])
    own_rows, forbidden_rows = found[: len(attribute)], found[len(attribute) :]
    norms = np.asarray(emb["norm"].values, dtype=np.float64) if "norm" in emb else np.ones(emb.sizes["word"])
    allowed = norms > 0
    allowed[own_rows[own_rows >= 0]] = False
    allowed[forbidden_rows[forbidden_rows >= 0]] = False
    candidates = np.flatnonzero(allowed)
    if candidates.size < len(attribute) + 1:
        raise PlaceboUnavailableError(
            f"placebo: {candidates.size} candidate words, too few for {len(attribute)} attribute words"
        )
    ranks = np.asarray(emb["rank"].values, dtype=np.int64)
    window = min(DEFAULT_WINDOW, candidates.size)
    draws = candidates[
        rank_matched_words([int(ranks[r]) for r in own_rows], ranks[candidates], n=n, seed=seed, window=window)
    ]
    rows_needed, where = np.unique(np.concatenate([draws.ravel(), own_rows]), return_inverse=True)
    picked = np.asarray(emb["vectors"].isel(word=rows_needed).values, dtype=np.float64)
    vectors = picked[where[: draws.size].reshape(draws.shape)]  # (P, k, D)
    n_a = len(a_words)
    statistics = np.empty((n, 1))
    effect_sizes = np.empty(n)
    for i, draw in enumerate(vectors):
        statistics[i, 0], effect_sizes[i] = statistic(draw[:n_a], draw[n_a:])
    if observed is None:
        own = picked[where[draws.size :]]
        observed = statistic(own[:n_a], own[n_a:])
    words = np.asarray(emb["word"].isel(word=rows_needed).values).astype(object)[where[: draws.size]]
    return summarise(
        np.array([observed[0]]), observed[1], statistics, effect_sizes, words.reshape(draws.shape), [alternative]
    )


def frequent_tokens(emb: xr.Dataset, groups: Sequence[Sequence[str]]) -> list[str]:
    """The most frequent token in ``emb`` (its first row) of each group of tokens, e.g. the tokens found
    of each IAT word's translations: the word a placebo word replacing the term is matched to."""

    rows = positions(emb, [t for group in groups for t in group])
    out, at = [], 0
    for group in groups:
        part = rows[at : at + len(group)]
        at += len(group)
        out.append(group[int(np.argmin(np.where(part >= 0, part, np.iinfo(np.intp).max)))])
    return out


def iat_placebo(
    emb: xr.Dataset,
    entries: Sequence,
    coverage: dict,
    statistic: Callable[[np.ndarray, np.ndarray], tuple[float, float]],
    observed: tuple[float, float],
    *,
    n: int,
    seed: int,
    alternative: str,
    exclude: Iterable[str] = (),
) -> PlaceboResult:
    """:func:`attribute_placebo` of a test on Lewis & Lupyan's translated IAT terms (``entries``,
    :func:`biasdask.lexicon.iat_words`): the terms found in roles ``a`` and ``b`` of ``coverage`` are
    replaced by random words matched to their most frequent tokens; no word of any translation is drawn."""
    return attribute_placebo(
        emb,
        frequent_tokens(emb, [coverage["a"].tokens[w] for w in coverage["a"].found]),
        frequent_tokens(emb, [coverage["b"].tokens[w] for w in coverage["b"].found]),
        statistic,
        target_words=[t for e in entries for t in e.tokens],
        n=n,
        seed=seed,
        alternative=alternative,
        exclude=exclude,
        observed=observed,
    )
