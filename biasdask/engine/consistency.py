"""The internal consistency of a full-vocabulary test's base pairs, over a whole stored vocabulary.

Each base pair (a_j, b_j) gives every word of the vocabulary its own association, the test's association
with that pair alone (for cosine, cos(w, a_j) − cos(w, b_j)): these are the items, the words the cases
(Du, Fang & Nguyen 2021). The tasks that compute u gather the items' moments in the same read
(:class:`biasdask.stats.reliability.ItemMoments`); merged in chunk order, they give the same bits however
the vocabulary is chunked and wherever the tasks run. A study's ``gender`` cells of base pairs report the
same figures (``cronbach_alpha``, ``split_half``, and for cosine and RIPA the range of d leaving out
one pair).
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
from distributed import Client

from biasdask._calls import keyword_api
from biasdask.engine.cluster import compute
from biasdask.engine.scores import ChunkMoments, attributes_graph, pair_axes, scores_graph
from biasdask.errors import BiasdaskError, BiasdaskTypeError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.stats.association import ASSOCIATIONS, Association
from biasdask.stats.reliability import (
    InternalConsistency,
    internal_consistency,
    merge_item_moments,
    vocabulary_effect_size,
)

__all__ = ["LINEAR_IN_PAIRS", "pair_consistency", "pairs_consistency"]

#: the associations whose u is the mean of the pairs' items (when every pair is found), so that d without
#: a pair follows from the items' moments
LINEAR_IN_PAIRS = ("cosine", "ripa")


def pairs_consistency(
    gathered: Sequence[ChunkMoments], labels: Sequence[str], association: str, *, seed: int, n_splits: int = 5000
) -> InternalConsistency:
    """The internal consistency of base pairs from what the scores tasks gathered (in chunk order): α and
    the split halves of the pairs' items, and for a :data:`LINEAR_IN_PAIRS` association d of the pairs'
    mean association leaving out each pair (:func:`biasdask.stats.reliability.vocabulary_effect_size`)."""
    items = merge_item_moments(*(g.items for g in gathered if g.items is not None))
    effect_size = vocabulary_effect_size(items, n_a=None) if association in LINEAR_IN_PAIRS else None
    return internal_consistency(
        items, n_a=None, seed=seed, words=list(labels), effect_size=effect_size, n_splits=n_splits
    )


def _pairs(pairs: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """The words of A and of B of base pairs given as ``[(a, b), ...]``."""
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise BiasdaskTypeError(f"pairs: expected a list of word pairs [(a, b), ...], got {pairs!r}")
    for i, pair in enumerate(pairs):
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise BiasdaskError(f"pairs[{i}]: expected a pair of two words (a, b), got {pair!r}")
        if not all(isinstance(w, str) and w for w in pair) or pair[0] == pair[1]:
            raise BiasdaskError(f"pairs[{i}]: expected two different words, got {pair!r}")
    if len(pairs) < 2:
        raise BiasdaskError(f"the internal consistency of base pairs needs at least 2 pairs, got {len(pairs)}")
    a, b = [str(p[0]) for p in pairs], [str(p[1]) for p in pairs]
    for side, words in (("first", a), ("second", b)):
        repeated = sorted({w for w in words if words.count(w) > 1})
        if repeated:
            raise BiasdaskError(f"pairs: {', '.join(map(repr, repeated))} is the {side} word of more than one pair")
    return a, b


@keyword_api("pair_consistency(emb, [(a, b), ...], seed=..., association=..., vocabulary=Vocabulary(...))")
def pair_consistency(
    emb: Embeddings,
    pairs: Sequence[Sequence[str]],
    *,
    seed: int,
    association: Association = "cosine",
    vocabulary: Vocabulary | None = None,
    n_splits: int = 5000,
    client: Client | None = None,
) -> InternalConsistency:
    """How well the base pairs of a full-vocabulary test agree over the whole vocabulary: Cronbach's α
    with each pair's association as an item and the words as cases, and the split-half reliability of
    the pairs (Spearman-Brown corrected), from one pass over the vectors.

    Parameters
    ----------
    emb
        An embedding in any form :func:`biasdask.as_embeddings` accepts (a store is read chunk by chunk).
    pairs
        The base pairs ``[(a, b), ...]`` (e.g. Bolukbasi et al. 2016's definitional pairs,
        :func:`biasdask.lexicon.bolukbasi`, as (male, female)), at least 2. A pair with a word the
        vocabulary lacks (or a zero vector) is left out.
    seed
        Seeds the random splits when the pairs have more distinct splits than ``n_splits`` (a study's
        gender cell uses its family's seed, :func:`biasdask.study.plan.family_seed`).
    association
        The test's per-word association (``cosine``, ``euclidean``, ``ripa``, ``semaxis``): each item is
        the association with one pair alone.
    vocabulary
        The words that are cases (:class:`~biasdask.Vocabulary`), as for :func:`biasdask.scores`.
    n_splits
        As in :func:`biasdask.stats.split_half`.
    client
        Dask client (default: the current one, else Dask's default scheduler).

    Returns
    -------
    InternalConsistency
        ``alpha`` (items in the order of the pairs in use), ``split_half``, and for ``cosine`` and
        ``ripa`` (whose u is the mean of the pairs' items) ``leave_one_out``: the full-vocabulary test's
        d of the pairs' mean association without each pair in turn (None for the others).

    Raises
    ------
    BiasdaskError
        (a ``ValueError``) Fewer than 2 pairs, a pair of one word twice or not two words, a word in more
        than one pair, an unknown association, fewer than 2 pairs found.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["he", "she", "man", "woman", "boy", "girl", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> res = biasdask.pair_consistency(emb, [("he", "she"), ("man", "woman"), ("boy", "girl")], seed=1)
    >>> res.alpha.k, res.alpha.n, res.split_half.exact
    (3, 2006, True)
    """
    a, b = _pairs(pairs)
    if association not in ASSOCIATIONS:
        raise BiasdaskError(f"unknown association {association!r}; choose from {list(ASSOCIATIONS)}")
    emb = as_embeddings(emb)
    (attributes,) = dask.compute(attributes_graph(emb, a, b, association), scheduler="sync")
    found = pair_axes(association, a, b, attributes.a, attributes.b)
    if len(found.labels) < 2:
        raise BiasdaskError(
            f"the internal consistency of base pairs needs at least 2 pairs found; found {found.labels}, "
            f"left out {found.dropped}"
        )
    graph = scores_graph(
        emb,
        a,
        b,
        methods=("uniform",),
        association=association,
        vocabulary=vocabulary,
        attributes=attributes,
        pair_axes=found.axes,
    )
    assert graph.moments is not None
    (pieces,) = compute(graph.moments, client=client)
    return pairs_consistency(
        [moments for _, moments in pieces], found.labels, association, seed=seed, n_splits=n_splits
    )
