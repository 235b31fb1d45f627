"""The full-vocabulary test on stored embeddings: a language against a dummy language, or against another language.

Nothing numeric lives here: u and t come from :mod:`biasdask.engine.scores`, the test from
:func:`biasdask.engine.permutation.permutation_test`, the placebo comparison from
:mod:`biasdask.engine.placebo`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from distributed import Client

from biasdask._calls import deprecated, keyword_api, word_list
from biasdask.engine.cluster import compute
from biasdask.engine.permutation import permutation_test
from biasdask.engine.placebo import placebo_test
from biasdask.engine.scores import VOCABULARY_KEYWORDS, Method, scores, scores_and_moments
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.lexicon.vocabulary import vocabulary as vocabulary_options
from biasdask.stats.association import Association
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options

__all__ = ["full_vocabulary_test", "pairwise_vocabulary_test"]


@keyword_api(
    "full_vocabulary_test(emb, a, b, method=..., resampling=Resampling(...), vocabulary=Vocabulary(...))",
    gathered=VOCABULARY_KEYWORDS,
)
def full_vocabulary_test(
    emb: Embeddings,
    a: Sequence[str],
    b: Sequence[str],
    *,
    method: Method = "uniform",
    resampling: Resampling | None = None,
    vocabulary: Vocabulary | None = None,
    client: Client | None = None,
    return_null: bool = False,
    progress: bool | None = None,
    association: Association = "cosine",
    other: Embeddings | None = None,
    other_a: Sequence[str] | None = None,
    other_b: Sequence[str] | None = None,
) -> PermutationTestResult:
    """The full-vocabulary test: the whole vocabulary against an equally sized unbiased dummy language.

    X is every word in use (zero vectors and excluded words left out), Y a dummy language of ``|X|`` words
    with u ≡ 0, s = Σ_X t. Against a second real language instead, see :func:`pairwise_vocabulary_test`.

    Parameters
    ----------
    emb
        The embedding of language X: a store (URL, :class:`~biasdask.Location` or fsspec mapper), Dataset,
        DataArray (word, dim) or gensim ``KeyedVectors`` (see :func:`biasdask.as_embeddings`).
    a, b
        Attribute words in language X (e.g. translations of *male*, *female*).
    method
        ``"uniform"``, ``"zipf"`` or ``"frequency"``.
    resampling
        :class:`~biasdask.Resampling` (default ``Resampling()``): ``n_permutations`` (an exact enumeration
        is used when it is smaller), ``alternative`` (``"two-sided"`` by default; ``"auto"`` is the
        full-vocabulary test's original rule: the tail s points to, chosen after seeing s, type-I rate
        about 2α), ``seed`` (the same seed gives bit-identical results on any scheduler and number of
        workers; ``None`` draws one, recorded in the result's ``seed``), ``batch_size``, and
        ``placebo``: also compare d with that of P = ``placebo`` random attribute pairs of the same sizes
        and word frequencies (:mod:`biasdask.engine.placebo`; single-language tests): the result's
        ``p_value_placebo``, ``z_placebo`` and ``effect_size_placebo_percentile`` answer whether the
        association is larger than that of a random pair of words, which the dummy-language p-value
        does not (``p_value_placebo_statistic`` compares s instead). Seeded by the test's seed. The same
        pass gives an interval of d centred on it (``effect_size_ci_low``, ``effect_size_ci_high``,
        ``effect_size_se``, 95 %): a BCa bootstrap of the attribute words, or with one word a side the
        attribute-word spread (how far d moves when the attribute words are replaced by random words of
        their frequencies; ``ci_method`` says which). ``placebo_exclude``: words no placebo pair may
        use, besides the attribute words and the known gendered words; ``placebo_words``,
        ``placebo_rank_ratio``, ``placebo_min_candidates``: which tokens may be drawn, and from which
        window of ranks (recorded in ``placebo_windows``, ``placebo_rank_ratio``).
    vocabulary
        :class:`~biasdask.Vocabulary` (default ``Vocabulary()``): which words are targets
        (``max_words``, ``exclude_attributes``, ``exclude_words``, ``dedupe_vectors``).
    client
        Dask client; default the current ``distributed`` client, else Dask's default scheduler
        (threads). No cluster is started.
    return_null
        Keep the sampled null distribution in the result.
    progress
        Show progress bars (default: only when stderr is a terminal).
    association
        The per-word association u that t weights: ``"cosine"`` (the full-vocabulary test), ``"euclidean"``,
        ``"ripa"`` (a and b paired by position) or ``"semaxis"``; see
        :func:`biasdask.engine.scores.scores`. The dummy language has u = 0 whichever is chosen.
    other, other_a, other_b
        Deprecated: :func:`pairwise_vocabulary_test` takes a second language.

    Returns
    -------
    PermutationTestResult
        ``statistic`` s, ``p_value``, ``effect_size`` (on u, ddof = 1), ``z_score``, ``p_value_normal``,
        ``null_mean``, ``null_std``, ``n_permutations``, ``exact``.

    Examples
    --------
    >>> import itertools
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> filler = ["".join(letters) for letters in itertools.product("bdfgklmn", repeat=4)][:2000]
    >>> words = ["he", "she", "man", "woman", *filler]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.full_vocabulary_test(emb, ["he"], ["she"], method="zipf",
    ...                                     resampling=biasdask.Resampling(n_permutations=999, seed=1))
    >>> res.n_permutations, bool(0 < res.p_value <= 1)
    (999, True)

    With a placebo null of 200 random word pairs of the same frequency ranks:

    >>> options = biasdask.Resampling(n_permutations=999, placebo=200, seed=1)
    >>> res = biasdask.full_vocabulary_test(emb, ["he", "man"], ["she", "woman"], resampling=options)
    >>> res.n_placebo, bool(0 < res.p_value_placebo <= 1)
    (200, True)
    """
    common = dict(
        method=method,
        resampling=resampling,
        vocabulary=vocabulary,
        client=client,
        return_null=return_null,
        progress=progress,
        association=association,
    )
    if other is not None or other_a is not None or other_b is not None:
        deprecated(
            "full_vocabulary_test(): other=, other_a=, other_b= are deprecated; "
            "use pairwise_vocabulary_test(emb, other, a, b, other_a=..., other_b=...)",
            stacklevel=4,  # the caller of the checked call
        )
        if other is None:
            raise BiasdaskError("full_vocabulary_test: other_a and other_b belong to a second language: give other")
        return pairwise_vocabulary_test(emb, other, a, b, other_a=other_a, other_b=other_b, **common)  # type: ignore[arg-type]
    a, b = word_list(a, "a"), word_list(b, "b")
    options = resampling_options(resampling)
    emb = as_embeddings(emb)
    opts = dict(vocabulary=vocabulary_options(vocabulary), association=association)
    if options.placebo:  # the placebo's moments are gathered in the pass that scores the words
        sx, moments = scores_and_moments(emb, a, b, methods=[method], client=client, **opts)
        u_x, t_x = sx["u"].values, sx["t"].values[0]
    else:
        sx = scores(emb, a, b, methods=[method], **opts)
        u_x, t_x = compute(sx["u"].data, sx["t"].data[0], client=client)
    keep = _usable(u_x, emb)
    res = permutation_test(
        t_x[keep],
        int(keep.sum()),
        resampling=options,
        client=client,
        return_null=return_null,
        effect_x=u_x[keep],
        progress=progress,
    )
    if not options.placebo:
        return res
    found = placebo_test(
        emb,
        sx,
        moments,
        a,
        b,
        n=int(options.placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=options.placebo_exclude,
        match=options.placebo_match,
    )
    return dataclasses.replace(res, **found.fields(), **found.interval)


@keyword_api(
    "pairwise_vocabulary_test(emb, other, a, b, other_a=..., other_b=..., method=..., resampling=Resampling(...))"
)
def pairwise_vocabulary_test(
    emb: Embeddings,
    other: Embeddings,
    a: Sequence[str],
    b: Sequence[str],
    *,
    other_a: Sequence[str] | None = None,
    other_b: Sequence[str] | None = None,
    method: Method = "uniform",
    resampling: Resampling | None = None,
    vocabulary: Vocabulary | None = None,
    client: Client | None = None,
    return_null: bool = False,
    progress: bool | None = None,
    association: Association = "cosine",
) -> PermutationTestResult:
    """The full-vocabulary test of one language against another: Y is a second real language, not a dummy.

    X is every word in use of ``emb``, Y every word in use of ``other``, both cut to the same N (the
    smaller vocabulary, or ``vocabulary.max_words``) so that the Zipf weights match; s = Σ_X t - Σ_Y t.

    Parameters
    ----------
    emb, other
        The embeddings of languages X and Y (any form :func:`biasdask.as_embeddings` accepts).
    a, b
        Attribute words in language X.
    other_a, other_b
        Attribute words in language Y (default: ``a``, ``b``).
    method, resampling, vocabulary, client, return_null, progress, association
        As in :func:`full_vocabulary_test` (``resampling.placebo`` does not apply: the placebo compares
        attribute pairs within one language).

    Returns
    -------
    PermutationTestResult

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", *(f"w{i}" for i in range(1000))]
    >>> x = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> y = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.pairwise_vocabulary_test(x, y, ["he"], ["she"], resampling=biasdask.Resampling(seed=1))
    >>> res.n_x == res.n_y == 1002
    True
    """
    a, b = word_list(a, "a"), word_list(b, "b")
    other_a = a if other_a is None else word_list(other_a, "other_a")
    other_b = b if other_b is None else word_list(other_b, "other_b")
    options = resampling_options(resampling)
    if options.placebo:
        raise BiasdaskError("placebo: the placebo null compares attribute pairs within one language; give no other")
    emb, other = as_embeddings(emb), as_embeddings(other)
    words = vocabulary_options(vocabulary)
    n_common = min(emb.sizes["word"], other.sizes["word"], words.max_words or np.iinfo(np.int64).max)
    opts = dict(methods=[method], vocabulary=words.replace(max_words=int(n_common)), association=association)
    sx, sy = scores(emb, a, b, **opts), scores(other, other_a, other_b, **opts)
    u_x, t_x, u_y, t_y = compute(sx["u"].data, sx["t"].data[0], sy["u"].data, sy["t"].data[0], client=client)
    keep, keep_y = _usable(u_x, emb), np.isfinite(u_y)
    return permutation_test(
        t_x[keep],
        t_y[keep_y],
        resampling=options,
        client=client,
        return_null=return_null,
        effect_x=u_x[keep],
        effect_y=u_y[keep_y],
        progress=progress,
    )


def _usable(u: np.ndarray, emb) -> np.ndarray:
    """The words with a usable vector (finite u); an error naming the language when there is none."""
    keep = np.isfinite(u)
    if not keep.any():
        raise BiasdaskError(f"language {emb.attrs.get('language', '?')!r}: no word has a usable vector")
    return keep
