"""Cross-lingual alignment (Lauscher & Glavaš 2019 §3) of stored embeddings by orthogonal Procrustes.

- :func:`fit_alignment`: the orthogonal map between two stores over a bilingual dictionary
  (:func:`biasdask.stats.procrustes.procrustes_map`);
- :func:`align`: the aligned source store, written chunk by chunk as a Dask graph, for
  :func:`biasdask.engine.weat.cross_lingual_weat`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

import dask
import dask.array as da
import fsspec
import numpy as np
import xarray as xr
from distributed import Client, as_completed

from biasdask._calls import keyword_api
from biasdask.engine.cluster import active_client
from biasdask.engine.scores import read_rows
from biasdask.engine.words import store_language
from biasdask.errors import BiasdaskError, MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.io.fs import Locatable, Location, as_location
from biasdask.io.store import (
    check_replaceable,
    finish_store,
    open_embeddings,
    prepare_store,
    remove_store,
    write_block,
)
from biasdask.io.wordfiles import read_word_pairs
from biasdask.progress import progress_bar
from biasdask.stats.procrustes import apply_map, procrustes_map

__all__ = ["Alignment", "align", "fit_alignment"]


@dataclass(frozen=True)
class Alignment:
    """An orthogonal map between two embedding spaces, learnt from a bilingual dictionary.

    Attributes
    ----------
    matrix
        W, shape (D_target, D_source): a source row vector v maps to ``v @ W.T``.
    pairs
        The dictionary pairs (source word, target word) found in both stores, which W was fitted on.
    missing
        The pairs left out because a word is absent from its store (or stored as a zero vector).
    unit_length
        Whether W was fitted on unit-length vectors.
    """

    matrix: np.ndarray
    pairs: tuple[tuple[str, str], ...]
    missing: tuple[tuple[str, str], ...]
    unit_length: bool


def _dictionary_pairs(dictionary: Iterable[tuple[str, str]] | Locatable):
    if isinstance(dictionary, (str, os.PathLike, Location, fsspec.FSMap)):
        return read_word_pairs(dictionary)
    pairs = [tuple(p) for p in dictionary]
    bad = [p for p in pairs if len(p) != 2]
    if bad or not pairs:
        raise BiasdaskError(f"dictionary: expected (source word, target word) pairs, got {bad[:1] or 'none'}")
    return pairs


def fit_alignment(
    source: Embeddings,
    target: Embeddings,
    dictionary: Iterable[tuple[str, str]] | Locatable,
    *,
    unit_length: bool = True,
    client: Client | None | bool = None,
) -> Alignment:
    """Learn the orthogonal map W = U Vᵀ (U Σ Vᵀ = SVD(X_Tᵀ X_S)) from the source space to the target space.

    Parameters
    ----------
    source, target
        Embeddings in any form :func:`biasdask.as_embeddings` accepts (stores, Datasets...).
    dictionary
        (source word, target word) pairs, or the location (path, URL, :class:`~biasdask.Location`) of a
        two-column text file (one pair per line, tab- or space-separated; ``.gz`` etc. decompressed by
        name).
    unit_length
        Fit on unit-length vectors (Smith et al. 2017, XWEAT); else on the raw vectors.
    client
        Dask client that reads the dictionary rows (default: the current one, else this process);
        ``False`` reads them in this process.

    Returns
    -------
    Alignment

    Raises
    ------
    MissingWordsError
        No pair has both words in the stores.
    InputFormatError
        A dictionary file line without exactly two words (names the line).
    """
    src = as_embeddings(source)
    tgt = as_embeddings(target)
    pairs = _dictionary_pairs(dictionary)
    if client is False:
        return _fit(src, tgt, pairs, unit_length, None)
    with contextlib.nullcontext(active_client(client)) as c:
        return _fit(src, tgt, pairs, unit_length, c)


def _fit(
    src: xr.Dataset, tgt: xr.Dataset, pairs: list[tuple[str, str]], unit_length: bool, client: Client | None
) -> Alignment:
    sv = read_rows(src, [s for s, _ in pairs], client)
    tv = read_rows(tgt, [t for _, t in pairs], client)
    used = tuple(p for p in pairs if p[0] in sv and p[1] in tv)
    used_set = set(used)
    missing = tuple(p for p in pairs if p not in used_set)
    if not used:
        raise MissingWordsError(
            f"dictionary: no pair has both words in the stores ({store_language(src)} -> {store_language(tgt)}); "
            f"first pairs: {pairs[:5]}"
        )
    xs = np.array([sv[s] for s, _ in used])
    xt = np.array([tv[t] for _, t in used])
    if unit_length:
        xs /= np.linalg.norm(xs, axis=1, keepdims=True)
        xt /= np.linalg.norm(xt, axis=1, keepdims=True)
    return Alignment(matrix=procrustes_map(xs, xt), pairs=used, missing=missing, unit_length=unit_length)


def _write_aligned_block(dest: Location, start: int, words: np.ndarray, block: np.ndarray, w: np.ndarray) -> int:
    """Map one chunk of source rows through W, write it as chunk ``start`` of ``dest``; return its zero rows."""
    aligned = apply_map(block, w).astype(np.float32)
    norms = np.sqrt(np.square(aligned, dtype=np.float64).sum(axis=1)).astype(np.float32)
    write_block(dest, start, words, aligned, norms)
    return int(np.count_nonzero(norms == 0))


@keyword_api("align(source, target, dictionary, output, unit_length=...)", renamed={"dest": "output"})
def align(
    source: Embeddings,
    target: Embeddings,
    dictionary: Iterable[tuple[str, str]] | Locatable,
    output: Locatable,
    *,
    unit_length: bool = True,
    client: Client | None | bool = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Align the source store to the target space by orthogonal Procrustes and write it as a new store.

    W is learnt by :func:`fit_alignment` over the dictionary pairs found in both stores; every chunk of
    source vectors v becomes ``v @ W.T`` in one Dask task that writes the matching chunk of ``output``
    (the store layout, chunked as the source). Words, ranks and the source's attrs are kept;
    ``norm`` is the length of the aligned vector (the source's length, as W is orthogonal). The attrs
    gain ``aligned_to`` (the target's language), ``aligned_to_source``, ``alignment_pairs`` and
    ``alignment_method``; the completion marker is written last, and a failed run leaves no store.

    Parameters
    ----------
    source, target
        Embeddings in any form :func:`biasdask.as_embeddings` accepts (the workers must be able to read
        the source's chunks).
    dictionary
        (source word, target word) pairs, or the path/URL of a two-column file (see
        :func:`fit_alignment`).
    output
        Where to write the aligned store: a path, fsspec URL, :class:`~biasdask.Location` or fsspec
        mapper; an existing biasdask store there is replaced.
    unit_length
        Fit W on unit-length vectors (Smith et al. 2017, XWEAT).
    client
        Dask client (default: the current one, else this process); ``False``, or a
        ``memory://`` destination, computes and writes in this process.
    progress
        Show a progress bar over the chunks.

    Returns
    -------
    xarray.Dataset
        The aligned store, opened.

    Raises
    ------
    MissingWordsError
        No dictionary pair is in both stores.
    StoreConflictError
        ``output`` holds something that is not a biasdask store.

    Examples
    --------
    Rotate Spanish vectors onto English ones with a bilingual dictionary (orthogonal Procrustes):

    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> en_words = ["man", "woman", "king", "queen", "house"]
    >>> en = biasdask.as_embeddings(rng.standard_normal((5, 4)), en_words, language="en")
    >>> rotation = np.linalg.qr(rng.standard_normal((4, 4)))[0]
    >>> es_words = ["hombre", "mujer", "rey", "reina", "casa"]
    >>> es = biasdask.as_embeddings(en.vectors.values @ rotation.T, es_words, language="es")
    >>> aligned = biasdask.align(es, en, list(zip(es_words, en_words)), "memory://examples/align/es.zarr", progress=False)
    >>> unit = en.vectors.values / np.linalg.norm(en.vectors.values, axis=1, keepdims=True)
    >>> nearest = (aligned.vectors.values @ unit.T).argmax(axis=1)
    >>> [en_words[i] for i in nearest]
    ['man', 'woman', 'king', 'queen', 'house']
    """
    src = as_embeddings(source)
    tgt = as_embeddings(target)
    pairs = _dictionary_pairs(dictionary)
    loc = as_location(output, "output").absolute()  # absolute, for workers elsewhere in the file tree
    check_replaceable(loc)
    if client is False or fsspec.core.split_protocol(loc.url)[0] == "memory":
        return _align(src, tgt, pairs, loc, unit_length, None, progress)
    with contextlib.nullcontext(active_client(client)) as c:
        return _align(src, tgt, pairs, loc, unit_length, c, progress)


def _align(src, tgt, pairs, dest: Location, unit_length, client, progress) -> xr.Dataset:
    alignment = _fit(src, tgt, pairs, unit_length, client)
    w = alignment.matrix
    vectors = da.asarray(src["vectors"].data)
    chunk = max(vectors.chunks[0])
    vectors = vectors.rechunk({0: chunk, 1: -1})
    words = np.asarray(src["word"].values).astype(object)
    n_words = int(src.sizes["word"])
    prepare_store(
        dest,
        language=store_language(src),
        source=str(src.attrs.get("source", "")),
        format=str(src.attrs.get("format", "")),
        dim=int(w.shape[0]),
        chunk_words=chunk,
        n_words=n_words,
    )
    try:
        tasks = [
            dask.delayed(_write_aligned_block, pure=True)(
                dest, k * chunk, words[k * chunk : (k + 1) * chunk], vectors.blocks[k], w
            )
            for k in range(vectors.numblocks[0])
        ]
        with progress_bar(progress, total=len(tasks), desc="align", unit="chunk") as bar:
            if client is None:
                zeros = []
                for task in tasks:
                    zeros.append(task.compute(scheduler="sync"))
                    bar.update()
            else:
                futures = client.compute(tasks)
                for _ in as_completed(futures, loop=client.loop):
                    bar.update()
                zeros = client.gather(futures)
        finish_store(
            dest,
            {
                **{k: src.attrs[k] for k in ("n_duplicates", "n_invalid_utf8") if k in src.attrs},
                "n_words": n_words,
                "n_zero_vectors": int(sum(zeros)),
                "aligned_to": store_language(tgt),
                "aligned_to_source": str(tgt.attrs.get("source", "")),
                "alignment_pairs": len(alignment.pairs),
                "alignment_method": (
                    "orthogonal Procrustes: W = U V^T, U S V^T = SVD(X_T^T X_S) over the dictionary pairs "
                    + ("of unit-length vectors" if unit_length else "of raw vectors")
                    + "; aligned vector = W v"
                ),
            },
        )
    except BaseException:
        remove_store(dest)
        raise
    return open_embeddings(dest)
