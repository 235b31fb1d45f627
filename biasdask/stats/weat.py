"""The numbers of WEAT-style tests on small word sets (Caliskan et al. 2017; Lauscher & Glavaš 2019 eqs. 1-3).

- :func:`similarity_matrix`: cosine similarity, or the *negative* Euclidean distance between unit
  vectors. Lauscher & Glavaš 2019 (footnote 3) flips the direction of the test for a distance (p = P[s_i < s]); biasdask
  negates the distance instead, so that for both measures larger means more similar, s(X, Y, A, B) > 0
  means X is closer to A than Y is, and the same one-sided rule (p = P[s_i >= s] for s > 0) applies. The
  distance is taken between unit-length vectors, as XWEAT does, so it is a monotone function of the cosine
  (|â - b̂|² = 2 - 2 cos) and the two measures rank pairs identically.
- :func:`word_association`: s(w, A, B) = mean_a f(w, a) - mean_b f(w, b) for each row w (eq. 2).
- :func:`weat_statistic`: s(X, Y, A, B) = Σ_x s(x, A, B) - Σ_y s(y, A, B) (eq. 1).
- :func:`weat_effect_size`: (mean_X s - mean_Y s) / sd_{X∪Y} s with the sample SD, ddof = 1 (eq. 3; the
  convention that reproduces Caliskan et al.'s published values).
- :func:`career_family_effect`: Lewis & Lupyan 2020's career/family IAT effect size per language, with
  their averaging over translations and their grammatical-gender convention.

Permutation p-values are the engine's (:mod:`biasdask.engine.permutation`): it takes the per-word
scores s_x, s_y computed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from biasdask.errors import MissingWordsError
from biasdask.stats.linalg import matmul_t

__all__ = [
    "SIMILARITIES",
    "CareerFamilyEffect",
    "CareerFamilyRun",
    "career_family_effect",
    "similarity_matrix",
    "weat_effect_size",
    "weat_scores",
    "weat_statistic",
    "word_association",
    "word_vectors",
]

SIMILARITIES: tuple[str, ...] = ("cosine", "euclidean")


def _matrix(vectors: ArrayLike, what: str) -> NDArray[np.float64]:
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"{what}: expected a non-empty 2-D array of vectors, got shape {m.shape}")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if not np.all(norms > 0):
        raise ValueError(f"{what}: zero vectors have no direction (rows {np.flatnonzero(norms[:, 0] == 0).tolist()})")
    return m / norms


def similarity_matrix(w: ArrayLike, a: ArrayLike, similarity: str = "cosine") -> NDArray[np.float64]:
    """Similarities f(w_i, a_j) between the rows of ``w`` and of ``a``.

    Parameters
    ----------
    w, a
        Raw vectors, shapes (n, D) and (m, D); no zero rows.
    similarity
        ``"cosine"``: ŵ · â. ``"euclidean"``: -|ŵ - â|, the negative Euclidean distance between the unit
        vectors (so that larger is more similar; see the module docstring).

    Returns
    -------
    numpy.ndarray
        Shape (n, m), float64.
    """
    wu = _matrix(w, "w")
    return _similarities(wu, _unit_attributes(a, "a", wu.shape[1]), similarity)


def _unit_attributes(a: ArrayLike, name: str, dim: int) -> NDArray[np.float64]:
    au = _matrix(a, name)
    if au.shape[1] != dim:
        raise ValueError(f"dimension mismatch: w has {dim}, {name} has {au.shape[1]}")
    return au


def _similarities(wu: NDArray[np.float64], au: NDArray[np.float64], similarity: str) -> NDArray[np.float64]:
    """:func:`similarity_matrix` of unit rows (one product: each entry is computed on its own, so a block
    of rows or columns gives the bits of separate calls)."""
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown similarity {similarity!r}; choose from {list(SIMILARITIES)}")
    cosines = matmul_t(wu, au)
    return cosines if similarity == "cosine" else -np.sqrt(np.maximum(2.0 - 2.0 * cosines, 0.0))


def _associations(wu: NDArray[np.float64], a: ArrayLike, b: ArrayLike, similarity: str) -> NDArray[np.float64]:
    au, bu = _unit_attributes(a, "a", wu.shape[1]), _unit_attributes(b, "b", wu.shape[1])
    sim = _similarities(wu, np.concatenate([au, bu]), similarity)
    return sim[:, : len(au)].mean(axis=1) - sim[:, len(au) :].mean(axis=1)


def word_association(w: ArrayLike, a: ArrayLike, b: ArrayLike, similarity: str = "cosine") -> NDArray[np.float64]:
    """s(w, A, B) = mean_a f(w, a) - mean_b f(w, b) for each row of ``w`` (Lauscher & Glavaš 2019 eq. 2).

    Parameters
    ----------
    w
        Vectors of the words to score, shape (n, D).
    a, b
        Vectors of the two attribute sets, shapes (n_a, D) and (n_b, D).
    similarity
        ``"cosine"`` or ``"euclidean"`` (see :func:`similarity_matrix`).

    Returns
    -------
    numpy.ndarray
        Shape (n,), float64.
    """
    return _associations(_matrix(w, "w"), a, b, similarity)


def weat_scores(
    x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike, similarity: str = "cosine"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-word associations of both target sets: ``(s(x, A, B) for x in X, s(y, A, B) for y in Y)``."""
    xu, yu = _matrix(x, "w"), _matrix(y, "w")
    s = _associations(np.concatenate([xu, yu]), a, b, similarity)
    return s[: len(xu)], s[len(xu) :]


def weat_statistic(s_x: ArrayLike, s_y: ArrayLike) -> float:
    """s(X, Y, A, B) = Σ_x s(x, A, B) - Σ_y s(y, A, B) (Lauscher & Glavaš 2019 eq. 1)."""
    return float(np.sum(s_x, dtype=np.float64) - np.sum(s_y, dtype=np.float64))


def weat_effect_size(s_x: ArrayLike, s_y: ArrayLike, ddof: int = 1) -> float:
    """(mean_X s - mean_Y s) / sd_{X∪Y} s (Lauscher & Glavaš 2019 eq. 3), by default with the sample SD (ddof = 1).

    Returns NaN when the pooled SD is 0 or undefined (fewer than ddof + 1 words).
    """
    sx = np.asarray(s_x, dtype=np.float64)
    sy = np.asarray(s_y, dtype=np.float64)
    if sx.size == 0 or sy.size == 0:
        raise ValueError("both target sets need at least one score")
    pooled = np.concatenate([sx, sy])
    if pooled.size <= ddof:
        return float("nan")
    sd = pooled.std(ddof=ddof)
    return float((sx.mean() - sy.mean()) / sd) if sd > 0 else float("nan")


@dataclass(frozen=True)
class CareerFamilyRun:
    """One pass of the career/family computation over a subset of the translations.

    Attributes
    ----------
    forms
        Which grammatical forms entered: ``"all"``, ``"masculine"`` (M and N) or ``"feminine"`` (F and N).
    words
        For each category, the English words that had at least one token in the embedding, in order.
    missing
        For each category, the English words none of whose tokens was found.
    s
        For each target category, s(w) = mean cos with the first attribute category - mean cos with the
        second, aligned with ``words``.
    sd
        Sample SD (``ddof``) of s over both target categories together.
    """

    forms: str
    words: dict[str, tuple[str, ...]]
    missing: dict[str, tuple[str, ...]]
    s: dict[str, NDArray[np.float64]]
    sd: float


@dataclass(frozen=True)
class CareerFamilyEffect:
    """Lewis & Lupyan 2020's career/family effect size in one language and embedding.

    Attributes
    ----------
    effect_size
        d = (mean s over the first target category - mean s over the second) / SD; with grammatical
        gender, the first mean comes from the masculine run, the second from the feminine run, and SD is
        the mean of the two runs' SDs.
    grammatical_gender
        Whether the translations carry grammatical gender (M/F forms), i.e. whether two runs were made.
    runs
        ``(all,)`` or ``(masculine, feminine)``.
    s_x, s_y
        The per-word scores behind the two means (first target category, second target category).
    """

    effect_size: float
    grammatical_gender: bool
    runs: tuple[CareerFamilyRun, ...]
    s_x: NDArray[np.float64]
    s_y: NDArray[np.float64]


def word_vectors(
    entries: Sequence[tuple[str, str, str, str, Sequence[str]]], vectors: Mapping[str, ArrayLike]
) -> dict[tuple[str, str], NDArray[np.float64]]:
    """(category, word) -> mean over translations of (mean of the raw vectors of that translation's tokens)."""
    per_translation: dict[tuple[str, str], dict[str, list[NDArray[np.float64]]]] = {}
    for category, word, _gender, translation_id, tokens in entries:
        found = [np.asarray(vectors[t], dtype=np.float64) for t in tokens if t in vectors]
        translations = per_translation.setdefault((category, word), {})
        if found:
            translations.setdefault(translation_id, []).extend(found)
    return {
        key: np.mean([np.mean(tok, axis=0) for tok in translations.values()], axis=0)
        for key, translations in per_translation.items()
        if translations
    }


def _career_family_run(
    forms: str,
    entries: Sequence[tuple[str, str, str, str, Sequence[str]]],
    vectors: Mapping[str, ArrayLike],
    targets: tuple[str, str],
    attributes: tuple[str, str],
    ddof: int,
) -> CareerFamilyRun:
    wv = word_vectors(entries, vectors)
    categories = targets + attributes
    listed = {c: list(dict.fromkeys(w for cat, w, *_ in entries if cat == c)) for c in categories}
    words = {c: tuple(w for w in listed[c] if (c, w) in wv) for c in categories}
    missing = {c: tuple(w for w in listed[c] if (c, w) not in wv) for c in categories}
    empty = [c for c in categories if not words[c]]
    if empty:
        detail = "; ".join(f"{c}: {', '.join(missing[c]) or '(no translations given)'}" for c in empty)
        raise MissingWordsError(f"career/family test ({forms} forms): no word of category {detail} was found")
    a = np.array([wv[(attributes[0], w)] for w in words[attributes[0]]])
    b = np.array([wv[(attributes[1], w)] for w in words[attributes[1]]])
    s = {c: word_association(np.array([wv[(c, w)] for w in words[c]]), a, b) for c in targets}
    pooled = np.concatenate([s[targets[0]], s[targets[1]]])
    sd = float(pooled.std(ddof=ddof)) if pooled.size > ddof else float("nan")
    return CareerFamilyRun(forms=forms, words=words, missing=missing, s=s, sd=sd)


def career_family_effect(
    entries: Iterable[tuple[str, str, str, str, Sequence[str]]],
    vectors: Mapping[str, ArrayLike],
    *,
    targets: tuple[str, str] = ("male", "female"),
    attributes: tuple[str, str] = ("career", "family"),
    ddof: int = 1,
) -> CareerFamilyEffect:
    """Lewis & Lupyan 2020's career/family effect size, computed exactly as they did.

    A word's vector is the mean of its translations' vectors, and a translation's vector the mean of the
    raw (not normalised) vectors of its tokens found in the embedding; s(w) = mean cos(w, career) -
    mean cos(w, family); d = (mean_male s - mean_female s) / sd over all target words (ddof = 1). When
    the translations carry grammatical gender (some entry is M or F), the computation runs twice, once
    over the masculine and neutral forms and once over the feminine and neutral forms, and
    d = (male mean of the masculine run - female mean of the feminine run) / mean of the two runs' SDs.

    Parameters
    ----------
    entries
        ``(category, word, gender, translation_id, tokens)`` tuples, e.g.
        :func:`biasdask.lexicon.iat_words`; gender is ``M``, ``F`` or ``N``.
    vectors
        Token -> raw vector, for the tokens present in the embedding (absent tokens are skipped).
    targets, attributes
        The category names: targets (X, Y) and attributes (A, B).
    ddof
        Delta degrees of freedom of the SD (1 reproduces the published values).

    Returns
    -------
    CareerFamilyEffect

    Raises
    ------
    MissingWordsError
        When no word of some category has a token in ``vectors`` (in some run).
    """
    entries = [(c, w, g, t, tuple(tok)) for c, w, g, t, tok in entries]
    bad = sorted({g for _, _, g, _, _ in entries} - {"M", "F", "N"})
    if bad:
        raise ValueError(f"unknown grammatical gender(s) {bad}: expected M, F or N")
    gendered = any(g != "N" for _, _, g, _, _ in entries)
    if not gendered:
        run = _career_family_run("all", entries, vectors, targets, attributes, ddof)
        s_x, s_y = run.s[targets[0]], run.s[targets[1]]
        runs: tuple[CareerFamilyRun, ...] = (run,)
        sd = run.sd
    else:
        masc = _career_family_run("masculine", [e for e in entries if e[2] != "F"], vectors, targets, attributes, ddof)
        fem = _career_family_run("feminine", [e for e in entries if e[2] != "M"], vectors, targets, attributes, ddof)
        s_x, s_y = masc.s[targets[0]], fem.s[targets[1]]
        runs = (masc, fem)
        sd = (masc.sd + fem.sd) / 2
    d = float((s_x.mean() - s_y.mean()) / sd) if sd > 0 else float("nan")
    return CareerFamilyEffect(effect_size=d, grammatical_gender=gendered, runs=runs, s_x=s_x, s_y=s_y)
