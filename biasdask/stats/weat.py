"""The numbers of WEAT-style tests on small word sets (Caliskan et al. 2017; Lauscher & Glavaš 2019 eqs. 1-3).

- :func:`similarity_matrix`: cosine similarity, or the *negative* Euclidean distance between unit
  vectors. Lauscher & Glavaš 2019 (footnote 3) flips the direction of the test for a distance (p = P[s_i < s]); biasdask
  negates the distance instead, so that for both measures larger means more similar, s(X, Y, A, B) > 0
  means X is closer to A than Y is, and the same one-sided rule (p = P[s_i >= s] for s > 0) applies. The
  distance is taken between unit-length vectors, as XWEAT does, so it is a monotone function of the cosine
  (|â - b̂|² = 2 - 2 cos) and the two measures rank pairs identically.
- :func:`word_association`: s(w, A, B) = mean_a f(w, a) - mean_b f(w, b) for each row w (eq. 2).
- :func:`weat_statistic`: s(X, Y, A, B) = Σ_x s(x, A, B) - Σ_y s(y, A, B) (eq. 1).
- :func:`weat_items`: the attribute words as items of the target words (their internal consistency).
- :func:`weat_effect_size`: (mean_X s - mean_Y s) / sd_{X∪Y} s with the sample SD, ddof = 1 (eq. 3; the
  convention that reproduces Caliskan et al.'s published values).
- :func:`career_family_effect`: Lewis & Lupyan 2020's career/family IAT effect size per language, with
  their averaging over translations and their grammatical-gender convention.
- :func:`career_family_items`: its attribute words as items of its target words, with those vectors.

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
    "CareerFamilyItems",
    "CareerFamilyRun",
    "career_family_effect",
    "career_family_items",
    "similarity_matrix",
    "weat_effect_size",
    "weat_items",
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


def weat_items(
    x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike, similarity: str = "cosine"
) -> NDArray[np.float64]:
    """The attribute words as items of the target words: f(w, a_j) for A's words, then −f(w, b_j) for
    B's, one row per word of X then of Y (shape (|X| + |Y|, |A| + |B|)); the mean of A's items plus the
    mean of B's is s(w, A, B) (:func:`word_association`). What
    :func:`biasdask.stats.reliability.internal_consistency` takes for a WEAT-style test.

    Examples
    --------
    >>> weat_items([[1.0, 0.0]], [[0.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]], [[0.0, 2.0]]).round(3).tolist()
    [[1.0, 0.707, -0.0], [0.0, 0.707, -1.0]]
    """
    wu = np.concatenate([_matrix(x, "w"), _matrix(y, "w")])
    dim = wu.shape[1]
    return np.hstack(
        [
            _similarities(wu, _unit_attributes(a, "a", dim), similarity),
            -_similarities(wu, _unit_attributes(b, "b", dim), similarity),
        ]
    )


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
    runs = tuple(
        _career_family_run(forms, run, vectors, targets, attributes, ddof) for forms, run in _runs(_entries(entries))
    )
    gendered = len(runs) == 2
    s_x, s_y = runs[0].s[targets[0]], runs[-1].s[targets[1]]
    sd = (runs[0].sd + runs[1].sd) / 2 if gendered else runs[0].sd
    d = float((s_x.mean() - s_y.mean()) / sd) if sd > 0 else float("nan")
    return CareerFamilyEffect(effect_size=d, grammatical_gender=gendered, runs=runs, s_x=s_x, s_y=s_y)


_Entry = tuple[str, str, str, str, tuple[str, ...]]


def _entries(entries: Iterable[tuple[str, str, str, str, Sequence[str]]]) -> list[_Entry]:
    """IAT translations as tuples, their grammatical genders checked."""
    out = [(c, w, g, t, tuple(tok)) for c, w, g, t, tok in entries]
    bad = sorted({g for _, _, g, _, _ in out} - {"M", "F", "N"})
    if bad:
        raise ValueError(f"unknown grammatical gender(s) {bad}: expected M, F or N")
    return out


def _runs(entries: list[_Entry]) -> list[tuple[str, list[_Entry]]]:
    """Lewis & Lupyan's runs: every form, or with grammatical gender the masculine and neutral forms
    (the first target category's run) and the feminine and neutral ones (the second's)."""
    if all(g == "N" for _, _, g, _, _ in entries):
        return [("all", entries)]
    return [("masculine", [e for e in entries if e[2] != "F"]), ("feminine", [e for e in entries if e[2] != "M"])]


@dataclass(frozen=True)
class CareerFamilyItems:
    """The attribute words of the career/family test as items of its target words (:func:`career_family_items`).

    Attributes
    ----------
    items
        Shape (n_x + n_y, n_a + n_b): cos(w, a_j) for the words of the first attribute category, then
        −cos(w, b_j) for the second's; rows the words of the first target category, then the second's.
    n_x
        Words of the first target category (the first rows).
    words_a, words_b
        The attribute words (English glosses) of the columns.
    """

    items: NDArray[np.float64]
    n_x: int
    words_a: tuple[str, ...]
    words_b: tuple[str, ...]


def career_family_items(
    entries: Iterable[tuple[str, str, str, str, Sequence[str]]],
    vectors: Mapping[str, ArrayLike],
    *,
    targets: tuple[str, str] = ("male", "female"),
    attributes: tuple[str, str] = ("career", "family"),
    order: Mapping[str, Sequence[str]] | None = None,
) -> CareerFamilyItems:
    """The attribute words of Lewis & Lupyan 2020's career/family test as items of its target words, with
    the vectors of :func:`career_family_effect`: a word's vector the mean of its translations', and with
    grammatical gender the first target category's words and the attributes of the masculine run, the
    second's of the feminine run, so that the mean of a row's items over each attribute category is
    that word's s. An attribute word is an item when every run has it. ``order``: the words of each
    category in the order of the rows and columns (e.g. :func:`biasdask.lexicon.iat_categories`);
    by default the order of their first translation in ``entries``.

    Raises
    ------
    MissingWordsError
        No word of a category found (in some run).
    """
    checked = _entries(entries)
    runs = [word_vectors(run, vectors) for _, run in _runs(checked)]
    listed: dict[str, list[str]] = {}
    for category, word, *_ in checked:
        if word not in listed.setdefault(category, []):
            listed[category].append(word)
    if order is not None:
        listed = {c: [w for w in order.get(c, ()) if w in words] for c, words in listed.items()}
    columns = [tuple(w for w in listed.get(c, []) if all((c, w) in wv for wv in runs)) for c in attributes]
    blocks = []
    for target, wv in zip(targets, (runs[0], runs[-1])):
        rows = [wv[(target, w)] for w in listed.get(target, []) if (target, w) in wv]
        empty = [c for c, words in zip((target, *attributes), (rows, *columns)) if not len(words)]
        if empty:
            raise MissingWordsError(f"career/family test: no word of category {', '.join(empty)} was found")
        a, b = (np.array([wv[(c, w)] for w in words]) for c, words in zip(attributes, columns))
        blocks.append(np.hstack([similarity_matrix(rows, a), -similarity_matrix(rows, b)]))
    return CareerFamilyItems(np.concatenate(blocks), len(blocks[0]), columns[0], columns[1])
