"""Bias against frequency (Valentini et al. 2022) on stores: frequency profiles and the context-word test.

The formulas live in :mod:`biasdask.stats.frequency`.

- :func:`frequency_profile`: per-word scores (from :func:`biasdask.engine.scores.scores` or a results
  store's ``scores/<language>``) binned by log10 frequency rank or by wordfreq's observed frequency,
  with count, mean, SD and effect size per bin for u and every weighting's t, as an xarray Dataset;
  :func:`frequency_profiles` for every language of a results store. :func:`profile_for_plot` turns one
  of its scores into the :class:`~biasdask.stats.frequency.BinProfile` that
  :func:`biasdask.plot.plot_frequency_profile` draws.
- :func:`context_scores`, :func:`context_test`: Valentini et al. 2022's female and male context words as the
  attribute sets of the full-vocabulary test (test label :data:`CONTEXT_TEST`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import xarray as xr
from distributed import Client
from numpy.typing import ArrayLike

from biasdask._calls import keyword_api
from biasdask.engine.bias_tests import full_vocabulary_test
from biasdask.engine.scores import Method, check_frequency_language, observed_frequencies, scores
from biasdask.engine.scores import scores as _scores
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings
from biasdask.io.fs import Locatable, as_location
from biasdask.io.results import open_cube, open_scores, scores_done
from biasdask.lexicon import context_words
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.stats.association import Association
from biasdask.stats.frequency import BinProfile, bin_profile, frequency_bin_edges, rank_bin_edges
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.resampling import Resampling

__all__ = [
    "CONTEXT_TEST",
    "context_scores",
    "context_test",
    "frequency_profile",
    "frequency_profiles",
    "profile_for_plot",
]

CONTEXT_TEST = "context"
"""Test label of Valentini et al. 2022's context-word test in a results cube."""


def _score_names(ds: xr.Dataset) -> list[str]:
    names = ["u", *sorted(str(v) for v in ds.data_vars if str(v).startswith("u_"))]  # other associations' u
    if "t" in ds and "method" in ds["t"].dims:
        names += [f"t_{m}" for m in map(str, ds["method"].values)]
    return names


@keyword_api("frequency_profile(scores, bins=..., by=..., language=..., a=..., b=...)")
def frequency_profile(
    scores: Embeddings,
    *,
    bins: float | ArrayLike | None = None,
    by: Literal["rank", "frequency"] = "rank",
    language: str | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
) -> xr.Dataset:
    """Per-word bias binned by log10 frequency rank or observed frequency (Valentini et al. 2022, Figure 1, Table 3).

    For u and for each method's t: the number of words in each bin, their mean, sample SD (ddof = 1)
    and effect size mean / SD (:func:`biasdask.stats.frequency.bin_profile`). Words with a NaN score
    (zero vectors, excluded words) are left out.

    Parameters
    ----------
    scores
        A Dataset with ``u`` (word), optionally ``t`` (method, word), and ``rank`` (word): the output of
        :func:`biasdask.engine.scores.scores` or of :func:`biasdask.io.results.open_scores`; or the
        location of a results store (URL, :class:`~biasdask.Location` or fsspec mapper), whose ``scores/<language>`` is opened (``language`` required); or, with
        ``a`` and ``b``, an embedding in any form :func:`biasdask.as_embeddings` accepts, whose
        scores (uniform and zipf) are computed first.
    bins
        Bin width in log10 units (default 1 for ranks, as in Valentini et al. 2022's Figure 1; 0.5 for frequencies,
        as in their Table 3), or explicit increasing edges (ranks or frequencies).
    by
        ``"rank"``: by frequency rank, bins [lo, hi) up to N = the largest rank, the last bin [lo, N].
        ``"frequency"``: by wordfreq's observed frequency of each word, bins (lo, hi], the first
        [lo, hi]; words wordfreq does not know are left out.
    language
        wordfreq language (``by="frequency"``; default the scores' ``language`` attribute), and the
        language to open when ``scores`` is a URL.
    a, b
        Attribute words, when ``scores`` is an embedding.

    Returns
    -------
    xarray.Dataset
        Dims ``score`` (``"u"``, ``"u_<association>"`` for each further association the scores hold,
        ``"t_<method>"``...) and ``bin``; variables ``count`` (int64),
        ``mean``, ``sd``, ``effect_size`` (float64, NaN where undefined), all (score, bin), and
        ``n_outside`` (score): words left out. Coordinates ``lower``, ``upper`` (bin edges, in ranks or
        frequencies) and ``label`` (e.g. ``"10-99"``) along ``bin``. Attributes ``by``, ``closed``
        (which side of a bin is closed), ``language``, ``n_words``, ``sd_ddof`` = 1.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> profile = biasdask.frequency_profile(emb, a=["he"], b=["she"])
    >>> profile["count"].sel(score="u").values.tolist()
    [9, 90, 900, 1005]
    """
    if by not in ("rank", "frequency"):
        raise BiasdaskError(f"frequency_profile: by must be 'rank' or 'frequency', not {by!r}")
    if a is not None or b is not None:
        if a is None or b is None:
            raise BiasdaskError("frequency_profile: a and b go together (the attribute words of an embedding)")
        scores = _scores(scores, a, b)
    elif not isinstance(scores, xr.Dataset):
        if language is None:
            raise BiasdaskError("frequency_profile: give the language of the scores to open from a results store")

        scores = open_scores(scores, language=language)
    missing = [v for v in ("u", "rank") if v not in scores.variables]
    if missing:
        raise BiasdaskError(f"frequency_profile: the scores have no {', '.join(missing)}")
    names = _score_names(scores)
    wanted = [v for v in ("u", "t", "rank", *(n for n in names if n.startswith("u_"))) if v in scores.variables]
    loaded = scores[wanted].compute()  # one pass over a lazy scores graph
    values = {"u": np.asarray(loaded["u"].values, dtype=np.float64)}
    for name in names[1:]:
        score = loaded[name] if name.startswith("u_") else loaded["t"].sel({"method": name[2:]})
        values[name] = np.asarray(score.values, dtype=np.float64)
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
        words = np.asarray(loaded["word"].values).astype(object)
        check_frequency_language(lang, words[np.isfinite(values["u"])])
        keys = observed_frequencies(words, lang)
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
            "description": "per-bin count, mean, sample SD and mean/SD of per-word bias (Valentini et al. 2022)",
        },
    )


def frequency_profiles(
    results: Locatable,
    *,
    languages: Sequence[str] | None = None,
    bins: float | ArrayLike | None = None,
    by: Literal["rank", "frequency"] = "rank",
) -> dict[str, xr.Dataset]:
    """:func:`frequency_profile` of every language of a results store whose per-word scores are complete.

    Parameters
    ----------
    results
        A results store (URL, :class:`~biasdask.Location` or fsspec mapper).
    languages
        Languages to profile (default: all of the store's languages with complete ``scores/<language>``).
    bins, by
        As in :func:`frequency_profile` (``by="frequency"`` uses each language's own wordfreq list).

    Returns
    -------
    dict
        Language -> profile Dataset, in the store's language order; ready for
        :func:`biasdask.plot.plot_frequency_profile`.
    """
    loc = as_location(results)
    if languages is None:
        cube = open_cube(loc)
        languages = [str(x) for x in cube["language"].values if scores_done(loc, str(x))]
    return {lang: frequency_profile(loc, bins=bins, by=by, language=lang) for lang in languages}


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
# Valentini et al. 2022's context words as a test


def _context_words(exclude_context: bool) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    cw = context_words()
    return cw.female, cw.male, (*cw.female, *cw.male) if exclude_context else ()


def context_scores(
    emb: Embeddings,
    *,
    methods: Iterable[str] = ("uniform", "zipf"),
    exclude_context: bool = True,
    max_words: int | None = None,
    association: Association = "cosine",
) -> xr.Dataset:
    """Per-word female bias of Valentini et al. 2022 (their eq. 1) over a whole vocabulary: the input of their Figure 1.

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
        Leave the 16 context words out of the targets (their u is NaN), as Valentini et al. 2022's Table 3 does.
    max_words
        Use only the most frequent ``max_words`` words.
    association
        The per-word association (:func:`biasdask.engine.scores.scores`); cosine is Valentini et al. 2022's u.
    """
    female, male, excluded = _context_words(exclude_context)
    return scores(
        emb,
        female,
        male,
        methods=methods,
        vocabulary=Vocabulary(max_words=max_words, exclude_words=excluded),
        association=association,
    )


def context_test(
    emb: Embeddings,
    *,
    method: Method = "uniform",
    resampling: Resampling | None = None,
    exclude_context: bool = True,
    max_words: int | None = None,
    client: Client | None = None,
    return_null: bool = False,
    progress: bool | None = None,
    association: Association = "cosine",
) -> PermutationTestResult:
    """Valentini et al. 2022's female/male context words as a named test (label :data:`CONTEXT_TEST`).

    The full-vocabulary test (:func:`biasdask.engine.bias_tests.full_vocabulary_test`) with
    A = Valentini et al. 2022's female context words and B = its male ones: X is the vocabulary (without the 16
    context words by default), Y an equally sized dummy language with u = 0, s = sum_X t. s > 0 means
    the vocabulary leans female on average, s < 0 male; Valentini et al. 2022 report that embeddings give frequent
    words male bias, which the ``"zipf"`` weighting stresses. Pair it with :func:`frequency_profile` of
    :func:`context_scores` to see where in the frequency range the bias sits.

    Parameters
    ----------
    emb
        An English embedding Dataset or store URL.
    method
        ``"uniform"``, ``"zipf"`` or ``"frequency"``.
    resampling, max_words, client, return_null, progress
        As in :func:`~biasdask.engine.bias_tests.full_vocabulary_test`.
    exclude_context
        Leave the context words out of X.
    association
        The per-word association (:func:`biasdask.engine.scores.scores`); ``"ripa"`` pairs the i-th
        female context word with the i-th male one (female/male, woman/man, ...).

    Returns
    -------
    PermutationTestResult
    """
    female, male, excluded = _context_words(exclude_context)
    return full_vocabulary_test(
        emb,
        female,
        male,
        method=method,
        resampling=resampling,
        vocabulary=Vocabulary(max_words=max_words, exclude_words=excluded),
        client=client,
        return_null=return_null,
        progress=progress,
        association=association,
    )
