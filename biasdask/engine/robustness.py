"""Robustness of a full-vocabulary finding to its attribute words: leave one attribute word out.

For each attribute word (of A, then of B) the scores are built without it, all of them computed in
one Dask computation (each left-out word its own graph of one matrix-vector product per chunk of the
store), then the full-vocabulary test is run on each with the same seed, so the rows differ only by the
attribute set. The first row (``left_out = ""``) is the test with every attribute word.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from distributed import Client

from biasdask._calls import keyword_api, word_list
from biasdask.engine.cluster import compute
from biasdask.engine.permutation import permutation_test
from biasdask.engine.scores import (
    VOCABULARY_KEYWORDS,
    as_terms,
    attribute_set,
    excluded_targets,
    first_of_each_vector,
    scores,
    vector_hashes,
)
from biasdask.errors import MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.lexicon import AttributeTerm
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.lexicon.vocabulary import vocabulary as vocabulary_options
from biasdask.stats.permutation import resolve_seed
from biasdask.stats.resampling import Resampling
from biasdask.stats.resampling import resampling as resampling_options

__all__ = ["attribute_sensitivity"]


@keyword_api(
    "attribute_sensitivity(emb, a, b, method=..., resampling=Resampling(...), vocabulary=Vocabulary(...))",
    gathered=VOCABULARY_KEYWORDS,
)
def attribute_sensitivity(
    emb: Embeddings,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    method: str = "uniform",
    resampling: Resampling | None = None,
    vocabulary: Vocabulary | None = None,
    client: Client | None = None,
    progress: bool = True,
) -> xr.Dataset:
    """The full-vocabulary test re-run leaving out each attribute word in turn.

    Parameters
    ----------
    emb
        An embedding in any form :func:`biasdask.as_embeddings` accepts (a store's URL,
        :class:`~biasdask.Location` or fsspec mapper; a Dataset, DataArray or ``KeyedVectors``).
    a, b
        Attribute words (or :class:`~biasdask.lexicon.AttributeTerm`, e.g. from
        :func:`biasdask.lexicon.iat_attribute_terms`). Words absent from the vocabulary or stored as
        zero vectors are not tested (they would change nothing).
    method
        ``"uniform"``, ``"zipf"`` or ``"frequency"``.
    resampling
        As for :func:`biasdask.full_vocabulary_test` (its ``placebo`` is not used); every row uses the
        same seed. A seed of ``None`` (the default) draws a fresh seed, recorded in the result's ``seed``
        attr: pass it back to reproduce the result bit for bit.
    vocabulary
        As for :func:`biasdask.scores`. With ``exclude_attributes`` a left-out word is still excluded
        from the targets, so the targets are the same in every row.
    client
        Dask client; default the current ``distributed`` client, else Dask's default scheduler
        (threads). No cluster is started.
    progress
        Show progress bars.

    Returns
    -------
    xarray.Dataset
        Dimension ``left_out`` (``""`` = none left out, then each attribute word) with coordinate
        ``side`` (``"A"``, ``"B"``, ``""``); variables ``statistic`` (s), ``effect_size`` (d),
        ``z_score`` (z), ``p_value`` (p), ``n_a``, ``n_b``. A word whose set has no other usable word
        gets NaN (and n = -1). Attrs: ``language``, ``method``, ``alternative``, ``seed``,
        ``n_permutations``.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", "he", "she", "man", "woman", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> sens = biasdask.attribute_sensitivity(emb, ["he", "man", "male"], ["she", "woman", "female"],
    ...                                       resampling=biasdask.Resampling(n_permutations=99, seed=1))
    >>> sens.sizes["left_out"], list(sens.data_vars)[:4]
    (7, ['statistic', 'effect_size', 'z_score', 'p_value'])

    With the IAT's terms of a language, ``a, b = biasdask.lexicon.iat_attribute_terms("cc", "fr")``, and
    ``biasdask.plot.plot_attribute_sensitivity(sens)`` draws the rows.
    """
    options = resampling_options(resampling)
    words = vocabulary_options(vocabulary)
    terms_a, terms_b = as_terms(word_list(a, "a")), as_terms(word_list(b, "b"))
    emb = as_embeddings(emb)
    used_a, used_b = attribute_set(emb, terms_a, "A").used, attribute_set(emb, terms_b, "B").used
    # The same targets in every row: with exclude_attributes all the attribute words are excluded, and
    # the words sharing an earlier word's vector are found once (one hashing pass, not one per row).
    base_excluded = sorted(excluded_targets(terms_a, terms_b, words))
    if words.dedupe_vectors and emb.attrs.get("n_duplicate_vectors") != 0:
        shared = ~first_of_each_vector(vector_hashes(emb).compute())
        base_excluded += [str(w) for w in np.asarray(emb["word"].values)[shared]]
    variants: list[tuple[str, str, list[AttributeTerm], list[AttributeTerm]]] = [("", "", terms_a, terms_b)]
    variants += [(w, "A", [t for t in terms_a if t.label != w], terms_b) for w in used_a]
    variants += [(w, "B", terms_a, [t for t in terms_b if t.label != w]) for w in used_b]
    opts = dict(methods=[method], vocabulary=Vocabulary(max_words=words.max_words, exclude_words=base_excluded))
    graphs: list[xr.Dataset | None] = []
    for _, _, va, vb in variants:
        try:
            graphs.append(scores(emb, va, vb, **opts))
        except MissingWordsError:  # the left-out word was its set's only usable word
            graphs.append(None)
    seed = resolve_seed(options.seed)
    options = options.replace(seed=seed)
    n = len(variants)
    out = {k: np.full(n, math.nan) for k in ("statistic", "effect_size", "z_score", "p_value")}
    n_a, n_b = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    live = [i for i, g in enumerate(graphs) if g is not None]
    arrays = compute(*[x for i in live for x in (graphs[i]["u"].data, graphs[i]["t"].data[0])], client=client)
    for j, i in enumerate(live):
        u, t = arrays[2 * j], arrays[2 * j + 1]
        keep = np.isfinite(u)
        res = permutation_test(
            t[keep],
            int(keep.sum()),
            resampling=options,
            client=client,
            effect_x=u[keep],
            progress=progress,
        )
        out["statistic"][i], out["effect_size"][i] = res.statistic, res.effect_size
        out["z_score"][i], out["p_value"][i] = res.z_score, res.p_value
        n_a[i], n_b[i] = graphs[i].attrs["n_a"], graphs[i].attrs["n_b"]
    ds = xr.Dataset(
        {**{k: ("left_out", v) for k, v in out.items()}, "n_a": ("left_out", n_a), "n_b": ("left_out", n_b)},
        coords={"left_out": [v[0] for v in variants], "side": ("left_out", [v[1] for v in variants])},
    )
    ds.attrs.update(
        language=str(emb.attrs.get("language", "")),
        method=method,
        alternative=options.alternative,
        seed=seed,
        n_permutations=options.n_permutations,
    )
    return ds
