"""Bias tests on stored embeddings, built from the scores graph and the permutation engine.

Nothing numeric lives here: u and t come from :mod:`biasdask.engine.scores`, the test from
:func:`biasdask.engine.permutation.permutation_test`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from distributed import Client

from biasdask._calls import keyword_api
from biasdask.engine.cluster import compute
from biasdask.engine.permutation import permutation_test
from biasdask.engine.scores import Method, scores, scores_and_moments
from biasdask.engine.words import word_list
from biasdask.errors import BiasdaskError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.stats.association import Association
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options


def _finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


@keyword_api("full_vocabulary_test(emb, a, b, method=..., resampling=Resampling(...))")
def full_vocabulary_test(
    emb: Embeddings,
    a: Sequence[str],
    b: Sequence[str],
    *,
    method: Method = "uniform",
    resampling: Resampling | None = None,
    other: Embeddings | None = None,
    other_a: Sequence[str] | None = None,
    other_b: Sequence[str] | None = None,
    max_words: int | None = None,
    exclude_attributes: bool = False,
    exclude_words: str | Sequence[str] = (),
    dedupe_vectors: bool = False,
    client: Client | None = None,
    return_null: bool = False,
    progress: bool | None = None,
    association: Association = "cosine",
) -> PermutationTestResult:
    """The full-vocabulary test: the whole vocabulary against an equally sized unbiased dummy language.

    X is every word in use (zero vectors and excluded words left out), Y a dummy language of ``|X|`` words
    with u ≡ 0, s = Σ_X t. With ``other`` the test is pairwise instead: Y is a second real language,
    both truncated to the same N (the smaller vocabulary, or ``max_words``) so the Zipf weights match.

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
    other, other_a, other_b
        The second language of a pairwise test and its attribute words (default: ``a``, ``b``).
    max_words
        Keep the ``max_words`` most frequent words.
    exclude_attributes, exclude_words
        Leave the attribute words, or a given list (or a package list by name: ``"gender_specific"``),
        out of the targets.
    dedupe_vectors
        Score each distinct vector once (a word sharing an earlier word's vector is left out).
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

    Returns
    -------
    PermutationTestResult
        ``statistic`` s, ``pvalue``, ``effect_size`` (on u, ddof = 1), ``z_score``, ``p_value_normal``,
        ``null_mean``, ``null_std``, ``n_permutations``, ``exact``.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.full_vocabulary_test(emb, ["he"], ["she"], method="zipf",
    ...                                     resampling=biasdask.Resampling(n_permutations=999, seed=1))
    >>> res.n_permutations, bool(0 < res.pvalue <= 1)
    (999, True)

    With a placebo null of 200 random word pairs of the same frequency ranks:

    >>> options = biasdask.Resampling(n_permutations=999, placebo=200, seed=1)
    >>> res = biasdask.full_vocabulary_test(emb, ["he", "man"], ["she", "woman"], resampling=options)
    >>> res.n_placebo, bool(0 < res.p_value_placebo <= 1)
    (200, True)
    """
    a, b = word_list(a, "a"), word_list(b, "b")
    other_a = None if other_a is None else word_list(other_a, "other_a")
    other_b = None if other_b is None else word_list(other_b, "other_b")
    options = resampling_options(resampling)
    placebo = options.placebo
    emb = as_embeddings(emb)
    if other is not None:
        other = as_embeddings(other)
        n_common = min(emb.sizes["word"], other.sizes["word"], max_words or np.iinfo(np.int64).max)
        max_words = int(n_common)
    opts = dict(
        max_words=max_words,
        exclude_attributes=exclude_attributes,
        exclude_words=exclude_words,
        dedupe_vectors=dedupe_vectors,
        association=association,
    )
    if placebo and other is not None:
        raise BiasdaskError("placebo: the placebo null compares attribute pairs within one language; give no other")
    if placebo:  # the placebo's moments are gathered in the pass that scores the words
        sx, moments = scores_and_moments(emb, a, b, methods=[method], client=client, **opts)
        u_x, t_x = sx["u"].values, sx["t"].values[0]
    else:
        sx = scores(emb, a, b, methods=[method], **opts)
        u_x, t_x = compute(sx["u"].data, sx["t"].data[0], client=client)
    keep = np.isfinite(u_x)
    if not keep.any():
        raise BiasdaskError(f"language {emb.attrs.get('language', '?')!r}: no word has a usable vector")
    if other is None:
        y: np.ndarray | int = int(keep.sum())
        effect_y = None
    else:
        sy = scores(other, other_a or a, other_b or b, methods=[method], **opts)
        u_y, t_y = compute(sy["u"].data, sy["t"].data[0], client=client)
        keep_y = np.isfinite(u_y)
        y, effect_y = t_y[keep_y], u_y[keep_y]
    res = permutation_test(
        t_x[keep],
        y,
        resampling=options,
        client=client,
        return_null=return_null,
        effect_x=u_x[keep],
        effect_y=effect_y,
        progress=progress,
    )
    if not placebo:
        return res
    from biasdask.engine.placebo import placebo_test

    found = placebo_test(
        emb,
        sx,
        moments,
        a,
        b,
        n=int(placebo),
        seed=res.seed,
        alternative=res.alternative,
        exclude=options.placebo_exclude,
        match=options.placebo_match,
    )
    return dataclasses.replace(res, **found.fields(), **found.interval)
