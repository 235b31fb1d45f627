"""The placebo null of a full-vocabulary test on a stored vocabulary.

The dummy-language null of the full-vocabulary test is false for any attribute pair of a real embedding
(table/chair rejects as firmly as he/she). The placebo comparison asks whether the observed statistic
exceeds that of random attribute sets of the same sizes and word frequencies: each attribute word is
replaced by a word of about its frequency rank (:func:`biasdask.stats.placebo.rank_neighbourhoods`:
within a factor 2 of it by default, widened where fewer than 50 candidates lie there, the window used
recorded), drawn from the word-like tokens (letters of the attribute words' scripts,
:mod:`biasdask.lexicon.scripts`) of the vocabulary the test scores, minus the attribute words and every
known gendered word (:func:`gendered_words`, plus the caller's ``exclude``; :func:`placebo_candidates`),
and the test's statistic is recomputed for
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
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from biasdask.engine.scores import as_terms, attribute_set, attribute_vectors, nfc, positions, stored_rows, word_index
from biasdask.errors import BiasdaskError, PlaceboUnavailableError
from biasdask.io.fs import Location
from biasdask.io.store import read_words, stored_vectors
from biasdask.lexicon import AttributeTerm, bolukbasi, context_words, iat_words, languages
from biasdask.lexicon.scripts import scripts_of, word_like
from biasdask.stats.association import linear_directions
from biasdask.stats.bootstrap import attribute_bootstrap_interval
from biasdask.stats.effect import effect_size
from biasdask.stats.placebo import (
    DEFAULT_MATCH,
    LinearMoments,
    PlaceboMatch,
    RankWindows,
    VocabularySample,
    draw_from_windows,
    euclidean_statistics,
    evaluate_moments,
    moment_rows,
    placebo_summary,
    rank_neighbourhoods,
)

__all__ = [
    "PlaceboPlan",
    "PlaceboResult",
    "attribute_placebo",
    "frequent_tokens",
    "gendered_words",
    "iat_placebo",
    "is_spread",
    "placebo_candidates",
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
    """A test's statistics against its placebo distribution (:func:`placebo_test`, :func:`attribute_placebo`).

    The claim rests on the effect size d (scale-free: its placebo p is ``p_value``); the statistic s,
    which grows with the distance between the two attribute sets, has its own p beside it
    (``p_value_statistic``). A test without an effect size (a set-level metric) rests on its statistic:
    ``p_value`` and ``z`` are then the statistic's.

    Attributes
    ----------
    p_value : ndarray, shape (K,)
        Per weighting: (1 + #placebo d at least as extreme as the observed d)/(P + 1) for that
        weighting's resolved alternative (two-sided: about the placebo mean). d is the same for every
        weighting; the alternatives may differ.
    z : float
        (d - mean)/SD of the placebo pairs' d (ddof 1).
    effect_size_percentile : float
        The observed d's percentile among the placebo pairs' d (ties count half).
    p_value_statistic, z_statistic : ndarray, shape (K,)
        The same for each weighting's statistic s against the placebo pairs' s.
    statistics : ndarray, shape (P, K)
        The placebo statistics s of each draw and weighting.
    effect_sizes : ndarray, shape (P,)
        The placebo pairs' d.
    n : int
        P, the placebo pairs drawn.
    words : ndarray of str, shape (P, n_a + n_b), or None
        Each placebo pair's words, A' then B' (None where not looked up: a study's).
    observed_statistic, observed_effect_size
        The test's own s (per weighting) and d, computed like the placebo pairs' (from the same
        moments), so that they are compared like with like.
    rank_ratio : float
        The largest factor between a placebo word's frequency rank and its attribute word's allowed by
        the windows drawn from (the ``rank_ratio`` asked for, unless a window was widened).
    windows : str
        Each attribute word's window of ranks (:meth:`biasdask.stats.placebo.RankWindows.describe`).
    interval : dict
        The interval fields of the test's d (:func:`_interval`): over its resampled attribute words, or
        the attribute-word spread; empty without ``ci_level``.
    """

    p_value: np.ndarray
    z: float
    effect_size_percentile: float
    p_value_statistic: np.ndarray
    z_statistic: np.ndarray
    statistics: np.ndarray
    effect_sizes: np.ndarray
    n: int
    words: np.ndarray | None
    observed_statistic: np.ndarray
    observed_effect_size: float
    rank_ratio: float = float("nan")
    windows: str = ""
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
        return dataclasses.replace(out, rank_ratio=self.rank_ratio, windows=self.windows, interval=self.interval)

    def fields(self, k: int = 0) -> dict[str, float | int | str]:
        """The result and cube fields of weighting ``k`` (``p_value_placebo``, ``z_placebo``, ...)."""
        return {
            "p_value_placebo": float(self.p_value[k]),
            "z_placebo": float(self.z),
            "effect_size_placebo_percentile": self.effect_size_percentile,
            "p_value_placebo_statistic": float(self.p_value_statistic[k]),
            "z_placebo_statistic": float(self.z_statistic[k]),
            "n_placebo": self.n,
            "placebo_rank_ratio": self.rank_ratio,
            "placebo_windows": self.windows,
        }


#: the names of :meth:`PlaceboResult.fields`
PLACEBO_FIELDS: tuple[str, ...] = (
    "p_value_placebo",
    "z_placebo",
    "effect_size_placebo_percentile",
    "p_value_placebo_statistic",
    "z_placebo_statistic",
    "n_placebo",
    "placebo_rank_ratio",
    "placebo_windows",
)


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
    labels : tuple of str
        That token of each attribute word (for the record of the windows).
    n_a : int
        The attribute words of A used.
    attribute_rows, forbidden_rows : ndarray of int
        The rows of the attribute words' tokens; the rows no placebo word may take (those, the known
        gendered words and the caller's exclusions).
    ranks : ndarray of int or None
        Each row's frequency rank (None: row + 1, a store's).
    read_rows : callable
        Sorted rows → their float32 vectors (reads only the chunks that hold them).
    read_words : callable
        Sorted rows → their words (only the rows a window may reach are read).
    match : PlaceboMatch
        Which tokens may be drawn and the rank windows.
    scripts : frozenset of str
        The scripts of the attribute words' letters (word-like tokens of these may be drawn).
    va, vb : ndarray
        The attribute vectors the test's own direction is made of.
    """

    kind: str
    attribute_ranks: tuple[int, ...]
    labels: tuple[str, ...]
    n_a: int
    attribute_rows: np.ndarray
    forbidden_rows: np.ndarray
    ranks: np.ndarray | None
    read_rows: Callable[[np.ndarray], np.ndarray]
    read_words: Callable[[np.ndarray], Sequence[str]]
    match: PlaceboMatch
    scripts: frozenset[str]
    va: np.ndarray
    vb: np.ndarray


def _memory_rows(vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.asarray(vectors[rows], dtype=np.float32)


def _memory_words(words: np.ndarray, rows: np.ndarray) -> Sequence[str]:
    return words[rows]


def _stored_words(loc: Location, rows: np.ndarray) -> Sequence[str]:
    return read_words(loc, rows)


def _word_reader(emb: xr.Dataset) -> Callable[[np.ndarray], Sequence[str]]:
    """Rows → words of ``emb``: its own words, else read from its store."""
    if "word" in emb.coords:
        return functools.partial(_memory_words, np.asarray(emb["word"].values).astype(object))
    stored = stored_vectors(emb["vectors"].data)
    if stored is None:
        raise BiasdaskError("placebo: the embedding has neither its words nor a store to read them from")
    return functools.partial(_stored_words, stored.location)


def plan_placebo(
    emb: xr.Dataset,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    used: tuple[Sequence[str], Sequence[str]],
    association: str,
    exclude: Iterable[str] = (),
    match: PlaceboMatch = DEFAULT_MATCH,
    attribute_vectors: tuple[np.ndarray, np.ndarray] | None = None,
) -> PlaceboPlan:
    """The :class:`PlaceboPlan` of a full-vocabulary test of ``emb`` with attribute words ``a``, ``b``
    (``used``: the labels of those found, as its scores record them), its words looked up in the
    vocabulary's index; ``match``: how placebo words are chosen; ``attribute_vectors``: the test's
    (default: read)."""
    tokens = [nfc(group) for group in _term_tokens(a, used[0]) + _term_tokens(b, used[1])]
    flat = [tok for group in tokens for tok in group]
    forbidden = placebo_forbidden(emb, exclude, flat)
    first_row = {word: int(row) for word, row in zip(flat, positions(emb, flat)) if row >= 0}
    stored = stored_vectors(emb["vectors"].data)
    ranks = None if stored is not None else np.asarray(emb["rank"].values, dtype=np.int64)
    attribute_ranks, labels = [], []
    for group in tokens:
        rows = [first_row[t] for t in group if t in first_row]
        row = min(rows) if rows else 0
        labels.append(next((t for t in group if first_row.get(t) == row), group[0]))
        attribute_ranks.append(1 if not rows else row + 1 if ranks is None else int(ranks[row]))
    if stored is not None:
        reader: Callable = functools.partial(_stored_rows, stored.location, stored.chunk, emb.sizes["dim"])
    else:
        reader = functools.partial(_memory_rows, np.asarray(emb["vectors"].values))
    va, vb = attribute_vectors if attribute_vectors is not None else _observed_vectors(emb, a, b, association)
    return PlaceboPlan(
        kind=association,
        attribute_ranks=tuple(attribute_ranks),
        labels=tuple(labels),
        n_a=len(used[0]),
        attribute_rows=np.array(sorted(first_row.values()), dtype=np.int64),
        forbidden_rows=_forbidden_rows(emb, forbidden),
        ranks=ranks,
        read_rows=reader,
        read_words=_word_reader(emb),
        match=match,
        scripts=scripts_of(flat),
        va=np.asarray(va),
        vb=np.asarray(vb),
    )


def placebo_forbidden(emb: xr.Dataset, exclude: Iterable[str], attribute_tokens: Iterable[str]) -> list[str]:
    """The words no placebo pair of ``emb`` may draw: its language's gendered words, ``exclude`` and the
    test's attribute tokens (NFC)."""
    words = set(gendered_words(str(emb.attrs.get("language", "")))) | set(exclude) | set(attribute_tokens)
    return sorted(nfc(words))


def _forbidden_rows(emb: xr.Dataset, words: Sequence[str]) -> np.ndarray:
    """Every row that holds one of ``words``, in row order."""
    if "word" not in emb.coords:  # a store opened without its words: its words are unique, each has one row
        rows = positions(emb, words)
        return np.sort(rows[rows >= 0]).astype(np.int64)
    return np.flatnonzero(word_index(emb).isin(words)).astype(np.int64)


def _stored_rows(loc: Location, chunk: int, dim: int, rows: np.ndarray) -> np.ndarray:
    return stored_rows(loc, chunk, rows, dim)


class PlaceboRun(NamedTuple):
    """What :func:`run_placebo` returns."""

    result: PlaceboResult
    draws: np.ndarray
    """The rows of each draw, (P, n_a + n_b)."""


def placebo_candidates(
    attribute_ranks: Sequence[int],
    usable: np.ndarray,
    ranks: np.ndarray | None,
    read_words: Callable[[np.ndarray], Sequence[str]],
    *,
    match: PlaceboMatch,
    scripts: Iterable[str],
) -> tuple[np.ndarray, RankWindows]:
    """The rows a placebo word may be drawn from, and each attribute word's window among them
    (:func:`biasdask.stats.placebo.rank_neighbourhoods`, as indices into the rows returned).

    A row may be drawn when ``usable`` (a scored word that is no attribute, gendered or excluded word)
    and, with ``match.words == "letters"``, word-like in ``scripts``
    (:func:`biasdask.lexicon.scripts.word_like`). Only the words a window can reach are read: in a
    vocabulary in rank order, the ranks within ``match.rank_ratio`` of each attribute word's, the factor
    doubled until they hold ``match.min_candidates`` candidates (so the nearest that many in log rank,
    where a window widens, are all among them).

    Raises
    ------
    PlaceboUnavailableError
        No more candidates than attribute words.
    """
    n = usable.size
    k = len(attribute_ranks)
    need = max(match.min_candidates, k)
    letters = match.words == "letters"
    allowed = frozenset(scripts)
    state = np.full(n, -1, dtype=np.int8)  # -1 not looked at, 0 not a candidate, 1 a candidate

    def classify(rows: np.ndarray) -> None:
        rows = rows[state[rows] < 0]
        if rows.size == 0:
            return
        ok = usable[rows]
        if letters and ok.any():
            ok[ok] = word_like(read_words(rows[ok]), allowed)
        state[rows] = ok

    in_order = ranks is None or np.array_equal(ranks, np.arange(1, n + 1))
    if not in_order:  # ranks out of row order: every row may be drawn
        classify(np.arange(n))
    for r in attribute_ranks if in_order else ():
        factor = match.rank_ratio
        while True:
            lo, hi = max(0, math.ceil(r / factor) - 1), min(n, math.floor(r * factor))
            classify(np.arange(lo, hi))
            if (state[lo:hi] == 1).sum() >= need or (lo == 0 and hi == n):
                break
            factor *= 2.0
    candidates = np.flatnonzero(state == 1)
    if candidates.size < k + 1:
        raise PlaceboUnavailableError(f"placebo: {candidates.size} candidate words, too few for {k} attribute words")
    candidate_ranks = candidates + 1 if ranks is None else ranks[candidates]
    windows = rank_neighbourhoods(
        list(attribute_ranks), candidate_ranks, ratio=match.rank_ratio, min_size=match.min_candidates
    )
    return candidates, windows


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
    usable = finite.copy()
    usable[plan.forbidden_rows[plan.forbidden_rows < n_words]] = False
    ranks = None if plan.ranks is None else plan.ranks[:n_words]
    candidates, windows = placebo_candidates(
        plan.attribute_ranks, usable, ranks, plan.read_words, match=plan.match, scripts=plan.scripts
    )
    draws = candidates[draw_from_windows(windows, n=n, seed=seed)]
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
    interval = _interval(
        moments, plan.va, plan.vb, plan.kind, seed, ci_level, placebo.effect_size, _reported_effect_size(u)
    )
    recorded = dict(rank_ratio=float(windows.ratio.max()), windows=windows.describe(plan.labels))
    return PlaceboRun(dataclasses.replace(out, **recorded, interval=interval), draws)


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
    match: PlaceboMatch = DEFAULT_MATCH,
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
    match
        Which tokens may be drawn, and the rank windows (:class:`~biasdask.stats.placebo.PlaceboMatch`).
    ci_level
        Also an interval of d at this level (None: none): over the resampled attribute words, or the
        attribute-word spread with one word a side (:func:`_interval`).

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
        match=match,
    )
    u, t = np.asarray(sc["u"].values), np.asarray(sc["t"].values)
    found, draws = run_placebo(plan, u, t, moments, n=n, seed=seed, alternative=alternative, ci_level=ci_level)
    words = np.asarray(sc["word"].values).astype(object)
    return dataclasses.replace(found, words=words[draws])


#: how ``ci_method`` begins for the interval of a full-vocabulary test with one attribute word a side
SPREAD_METHOD = "attribute-word spread"


def is_spread(ci_method: str) -> bool:
    """Whether a cell's interval (by its ``ci_method``) is the attribute-word spread, not a confidence
    interval."""
    return str(ci_method).startswith(SPREAD_METHOD)


def _reported_effect_size(u: np.ndarray) -> float:
    """The test's d as its result reports it: from the scored words' u against as many zeros."""
    finite = u[np.isfinite(u)]
    return effect_size(finite, int(finite.size))


def _interval(
    moments: LinearMoments | VocabularySample,
    va: np.ndarray,
    vb: np.ndarray,
    kind: str,
    seed: int,
    ci_level: float | None,
    placebo_d: np.ndarray,
    reported: float,
) -> dict:
    """The interval fields of a full-vocabulary test's d, centred on its ``reported`` d.

    With two attribute words a side or more: a bootstrap over the resampled attribute words (a
    confidence interval), computed from the moments (whose d differs from the reported, exact d where
    the Gram is sampled) and moved by the difference. With one word a side (nothing to resample) or
    resamples too alike: the attribute-word spread, d minus the quantiles of the placebo pairs' d about
    their mean, [d - q(1+ci_level)/2, d - q(1-ci_level)/2]: how far d moves when the attribute words are
    replaced by random words of their frequencies. That is no confidence interval of d (d is exact given
    the embedding and the words); ``ci_method`` says which it is."""
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
            "effect_size_ci_low": reported - float(high),
            "effect_size_ci_high": reported - float(low),
            "effect_size_se": float(centred.std(ddof=1)),
            "ci_level": float(ci_level),
            "ci_method": (
                f"{SPREAD_METHOD}: d minus the quantiles of the centred d of {spread.size} rank-matched placebo "
                f"pairs, how far d moves when the attribute words are replaced by random words of their "
                f"frequencies; not a confidence interval ({found.note})"
            ),
        }
    shift = reported - found.effect_size
    return {
        "effect_size_ci_low": found.ci_low + shift,
        "effect_size_ci_high": found.ci_high + shift,
        "effect_size_se": found.se,
        "ci_level": float(ci_level),
        "ci_method": f"{found.ci_method} bootstrap of the attribute words ({found.n_resamples} resamples)",
    }


#: placebo pairs at least behind an attribute-word spread
_MIN_SPREAD = 20


def summarise(
    observed_s: np.ndarray,
    observed_d: float,
    statistics: np.ndarray,
    effect_sizes: np.ndarray,
    words: np.ndarray | None,
    alternative: str | Sequence[str],
) -> PlaceboResult:
    """The :class:`PlaceboResult` of observed statistics (one per weighting) and d against placebo ones:
    d's p for each weighting's alternative, s's beside it (d's are s's where there is no d)."""
    observed_s = np.asarray(observed_s, dtype=np.float64)
    k = observed_s.shape[0]
    alternatives = np.broadcast_to(np.asarray(alternative), (k,))
    on_s = placebo_summary(observed_s, statistics, alternative=alternatives)
    has_d = not (math.isnan(observed_d) and np.all(np.isnan(effect_sizes)))
    if has_d:
        d_draws = np.repeat(np.asarray(effect_sizes, dtype=np.float64)[:, None], k, axis=1)
        on_d = placebo_summary(np.full(k, observed_d), d_draws, alternative=alternatives)
        p, z = on_d.p_value, float(on_d.z[0]) if k else math.nan
    else:
        p, z = on_s.p_value, float(on_s.z[0]) if k else math.nan
    percentile = placebo_summary(observed_d, effect_sizes, alternative="two-sided").percentile
    return PlaceboResult(
        p_value=p,
        z=z,
        effect_size_percentile=float(percentile),
        p_value_statistic=on_s.p_value,
        z_statistic=on_s.z,
        statistics=statistics,
        effect_sizes=effect_sizes,
        n=int(statistics.shape[0]),
        words=words,
        observed_statistic=observed_s,
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
    match: PlaceboMatch = DEFAULT_MATCH,
    observed: tuple[float, float] | None = None,
) -> PlaceboResult:
    """The placebo distribution of a test on word sets (WEAT, career_family, a set-level metric):
    ``statistic(A, B)`` (the test's value and its effect size, NaN for none, given the attribute rows)
    with rank-matched random words in place of the attribute words ``a_words``, ``b_words``; the target
    words stay. Each placebo set's words come from the vocabulary minus the test's words
    (``target_words`` too), the known gendered words and ``exclude``, and zero vectors, chosen as
    ``match`` says (:func:`placebo_candidates`).

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
    usable = norms > 0
    usable[own_rows[own_rows >= 0]] = False
    usable[forbidden_rows[forbidden_rows >= 0]] = False
    ranks = np.asarray(emb["rank"].values, dtype=np.int64)
    candidates, windows = placebo_candidates(
        [int(ranks[r]) for r in own_rows], usable, ranks, _word_reader(emb), match=match, scripts=scripts_of(attribute)
    )
    draws = candidates[draw_from_windows(windows, n=n, seed=seed)]
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
    found = summarise(
        np.array([observed[0]]), observed[1], statistics, effect_sizes, words.reshape(draws.shape), [alternative]
    )
    return dataclasses.replace(found, rank_ratio=float(windows.ratio.max()), windows=windows.describe(attribute))


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
    match: PlaceboMatch = DEFAULT_MATCH,
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
        match=match,
        observed=observed,
    )
