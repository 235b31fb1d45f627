"""The placebo null of a full-vocabulary test on a stored vocabulary.

The dummy-language null of the full-vocabulary test is false for any attribute pair of a real embedding
(table/chair rejects as firmly as he/she). The placebo comparison asks whether the observed statistic
exceeds that of random attribute sets of the same sizes and word frequencies: each attribute word is
replaced by a word of about its frequency rank (:func:`biasdask.stats.placebo.rank_matched_words`),
drawn from the vocabulary the test scores minus the attribute words and every known gendered word
(:func:`gendered_words`, plus the caller's ``exclude``), and the test's statistic is recomputed for
each placebo pair from moments of the target words gathered in one pass
(:func:`biasdask.stats.placebo.linear_moments`, merged in chunk order, so results are the same on any
scheduler). Linear associations only (``cosine``, ``semaxis``, ``ripa``).

Every placebo pair is scored on the observed test's own targets X: when the test leaves its attribute
words out of X, they stay out, and each placebo pair's words leave X too (exactly, from the moments);
the weights of the other words are those of the observed test.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dask
import numpy as np
import pandas as pd
import xarray as xr

from biasdask.errors import BiasdaskError
from biasdask.lexicon import AttributeTerm, bolukbasi, context_words, iat_words, languages
from biasdask.stats.association import LINEAR_ASSOCIATIONS, linear_directions
from biasdask.stats.bootstrap import attribute_bootstrap_interval
from biasdask.stats.placebo import (
    LinearMoments,
    evaluate_moments,
    linear_moments,
    merge_moments,
    moment_rows,
    placebo_summary,
    rank_matched_words,
)

__all__ = ["PlaceboResult", "attribute_placebo", "gendered_words", "placebo_test", "summarise", "weights_from_scores"]


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
    words : ndarray of str, shape (P, n_a + n_b)
        Each placebo pair's words, A' then B'.
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
    words: np.ndarray
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


def _chunk_moments(vectors: np.ndarray, u: np.ndarray, t: np.ndarray, kind: str) -> LinearMoments:
    """Task: the moments of the words of one chunk that the test scores (finite u)."""
    keep = np.isfinite(u)
    rows = (
        moment_rows(kind, np.asarray(vectors, dtype=np.float64)[keep])
        if keep.any()
        else np.empty((0, vectors.shape[1]))
    )
    return linear_moments(rows, weights_from_scores(u[keep], t[:, keep]) if keep.any() else np.empty((t.shape[0], 0)))


def _term_tokens(words: Sequence[str | AttributeTerm], used: Iterable[str]) -> list[list[str]]:
    terms = {w.label if isinstance(w, AttributeTerm) else str(w): w for w in words}
    out = []
    for label in used:
        term = terms[label]
        out.append([tok for tr in term.translations for tok in tr] if isinstance(term, AttributeTerm) else [label])
    return out


def placebo_test(
    emb: xr.Dataset,
    sc: xr.Dataset | None,
    u: np.ndarray,
    t: np.ndarray,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    n: int,
    seed: int,
    alternative: str | Sequence[str],
    exclude: Iterable[str] = (),
    client=None,
    used: tuple[Sequence[str], Sequence[str]] | None = None,
    association: str | None = None,
    ci_level: float | None = 0.95,
) -> PlaceboResult:
    """The placebo distribution of a full-vocabulary test whose scores are ``sc`` (:func:`biasdask.scores`,
    computed: ``u`` and ``t`` (K, N) its values, the words of the test those with finite u).

    Parameters
    ----------
    emb
        The embedding the scores come from (its vectors are read once more, chunk by chunk).
    sc
        The scores Dataset (attributes ``used_a``, ``used_b``, ``association``); None when ``used``
        and ``association`` are given (the words and ranks then come from ``emb``).
    u, t
        Its computed u (N,) and t (K, N).
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
    client
        Dask client (default: the current one, else Dask's default scheduler).
    ci_level
        Also an interval of d over the resampled attribute words at this level (None: none).

    Raises
    ------
    BiasdaskError
        A non-linear association (``euclidean``), or too few candidate words.
    """
    kind = str(association or sc.attrs.get("association", "cosine"))
    if kind not in LINEAR_ASSOCIATIONS:
        raise BiasdaskError(
            f"placebo: association {kind!r} is not linear in a direction; the placebo null needs "
            f"one of {', '.join(LINEAR_ASSOCIATIONS)}"
        )
    n_words = u.size
    source = sc if sc is not None else emb.isel(word=slice(0, n_words))
    words = np.asarray(source["word"].values).astype(object)
    ranks = np.asarray(source["rank"].values, dtype=np.int64)
    used_a, used_b = (
        (list(used[0]), list(used[1])) if used is not None else (list(sc.attrs["used_a"]), list(sc.attrs["used_b"]))
    )
    tokens = _term_tokens(a, used_a) + _term_tokens(b, used_b)
    forbidden = set(gendered_words(str(emb.attrs.get("language", "")))) | set(exclude)
    forbidden.update(tok for group in tokens for tok in group)
    emb = emb.isel(word=slice(0, n_words))  # the words the scores cover (max_words)
    position = {w: i for i, w in reversed(list(enumerate(words)))}
    attribute_rows = [position[tok] for group in tokens for tok in group if tok in position]
    # a test that left its attribute words out of X: each placebo pair leaves its own words out likewise
    excluded_attributes = bool(attribute_rows) and not np.isfinite(u[attribute_rows]).any()
    attribute_ranks = []
    for group in tokens:
        found = [position[tok] for tok in group if tok in position]
        attribute_ranks.append(int(ranks[min(found)]) if found else 1)
    candidates = np.flatnonzero(np.isfinite(u) & ~pd.Index(words).isin(list(forbidden)))
    if candidates.size < len(tokens) + 1:
        raise BiasdaskError(f"placebo: {candidates.size} candidate words, too few for {len(tokens)} attribute words")
    draws = candidates[rank_matched_words(attribute_ranks, ranks[candidates], n=n, seed=seed)]  # (P, k) rows
    rows_needed = np.unique(draws)
    vectors = emb["vectors"]
    picked = np.asarray(vectors.isel(word=rows_needed).values, dtype=np.float64)
    lookup = {int(r): i for i, r in enumerate(rows_needed)}
    placebo_vectors = picked[np.vectorize(lookup.__getitem__)(draws)]  # (P, k, D)
    n_a = len(used_a)
    directions = linear_directions(kind, placebo_vectors[:, :n_a], placebo_vectors[:, n_a:])

    data = emb["vectors"].data
    if not hasattr(data, "to_delayed"):
        import dask.array as da

        data = da.from_array(np.asarray(data), chunks=(65536, -1))
    chunks = np.cumsum((0, *data.chunks[0]))
    blocks = data.to_delayed().ravel()
    parts = [
        dask.delayed(_chunk_moments)(block, u[lo:hi], t[:, lo:hi], kind)
        for block, lo, hi in zip(blocks, chunks[:-1], chunks[1:])
        if lo < n_words
    ]
    from biasdask.engine.cluster import compute

    moments = merge_moments(*compute(*parts, client=client))
    exclude_v = exclude_z = None
    if excluded_attributes:
        exclude_v = np.stack([moment_rows(kind, v) for v in placebo_vectors])
        exclude_z = (
            weights_from_scores(u[draws.ravel()], t[:, draws.ravel()])
            .reshape(t.shape[0], *draws.shape)
            .transpose(1, 0, 2)
        )
    placebo = evaluate_moments(moments, directions, exclude_v=exclude_v, exclude_z=exclude_z)
    va, vb = _observed_vectors(emb, a, b, kind)
    observed = evaluate_moments(moments, linear_directions(kind, va, vb))
    out = summarise(
        observed.statistic[0],
        float(observed.effect_size[0]),
        placebo.statistic,
        placebo.effect_size,
        words[draws],
        alternative,
    )
    return dataclasses.replace(out, interval=_interval(moments, va, vb, kind, seed, ci_level))


def _interval(
    moments: LinearMoments, va: np.ndarray, vb: np.ndarray, kind: str, seed: int, level: float | None
) -> dict:
    """The interval fields of a full-vocabulary test's d over its resampled attribute words."""
    if level is None:
        return {}
    found = attribute_bootstrap_interval(moments, va, vb, seed=seed, association=kind, level=level)
    if found.note:
        return {"ci_level": float(level), "ci_method": f"none: {found.note}"}
    return {
        "effect_size_ci_low": found.ci_low,
        "effect_size_ci_high": found.ci_high,
        "effect_size_se": found.se,
        "ci_level": float(level),
        "ci_method": f"{found.method} bootstrap of the attribute words ({found.n_resamples} resamples)",
    }


def summarise(
    observed_s: np.ndarray,
    observed_d: float,
    statistics: np.ndarray,
    effect_sizes: np.ndarray,
    words: np.ndarray,
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
    from biasdask.engine.scores import _attribute_vectors, as_terms, attribute_set

    set_a, set_b = attribute_set(emb, a, "A"), attribute_set(emb, b, "B")
    return _attribute_vectors(kind, as_terms(a), as_terms(b), set_a, set_b, str(emb.attrs.get("language", "?")))


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
) -> PlaceboResult:
    """The placebo distribution of a test on word sets (WEAT, a set-level metric): ``statistic(A, B)``
    (the test's value and its effect size, NaN for none, given the attribute rows) with rank-matched
    random words in place of the attribute words ``a_words``, ``b_words``; the target words stay. Each
    placebo set's words come from the vocabulary minus the test's words (``target_words`` too), the known
    gendered words and ``exclude``, and zero vectors.

    Raises
    ------
    BiasdaskError
        Too few candidate words.
    """
    words = np.asarray(emb["word"].values).astype(object)
    ranks = np.asarray(emb["rank"].values, dtype=np.int64)
    norms = np.asarray(emb["norm"].values, dtype=np.float64) if "norm" in emb else np.ones(words.size)
    position = {w: i for i, w in reversed(list(enumerate(words)))}
    forbidden = set(gendered_words(str(emb.attrs.get("language", "")))) | set(exclude)
    forbidden.update(a_words, b_words, target_words)
    candidates = np.flatnonzero((norms > 0) & ~pd.Index(words).isin(list(forbidden)))
    attribute = [*a_words, *b_words]
    if candidates.size < len(attribute) + 1:
        raise BiasdaskError(f"placebo: {candidates.size} candidate words, too few for {len(attribute)} attribute words")
    attribute_ranks = [int(ranks[position[w]]) for w in attribute]
    draws = candidates[rank_matched_words(attribute_ranks, ranks[candidates], n=n, seed=seed)]
    rows_needed = np.unique(np.concatenate([draws.ravel(), [position[w] for w in attribute]]))
    picked = np.asarray(emb["vectors"].isel(word=rows_needed).values, dtype=np.float64)
    lookup = {int(r): i for i, r in enumerate(rows_needed)}
    vectors = picked[np.vectorize(lookup.__getitem__)(draws)]  # (P, k, D)
    n_a = len(a_words)
    statistics = np.empty((n, 1))
    effect_sizes = np.empty(n)
    for i, draw in enumerate(vectors):
        statistics[i, 0], effect_sizes[i] = statistic(draw[:n_a], draw[n_a:])
    own = picked[[lookup[position[w]] for w in attribute]]
    observed, observed_d = statistic(own[:n_a], own[n_a:])
    return summarise(np.array([observed]), observed_d, statistics, effect_sizes, words[draws], [alternative])
