"""Per-word association u and weighted scores t over a whole stored vocabulary, as Dask graphs.

One matrix-vector product per chunk of the store's ``vectors`` (``dask.array.map_blocks``), never a
Python loop over words. Weights come from :mod:`biasdask.stats.weights`.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from distributed import Client

from biasdask.errors import BiasdaskError, BiasdaskTypeError, MissingWordsError
from biasdask.stats.association import association, attribute_direction
from biasdask.stats.weights import METHODS, frequency_weights, zipf_weights


def as_dataset(emb: xr.Dataset | str, storage_options: dict | None = None) -> xr.Dataset:
    """An embedding Dataset, opening ``emb`` with ``open_embeddings`` when it is a URL."""
    if isinstance(emb, xr.Dataset):
        return emb
    from biasdask.io.store import open_embeddings

    return open_embeddings(str(emb), storage_options=storage_options)


def word_list(words: Iterable[str], name: str) -> Iterable[str]:
    """``words``, refusing a ``str``: it is not a word list (``"male"`` would be m, a, l, e)."""
    if isinstance(words, (str, bytes)):
        raise BiasdaskTypeError(f"{name}: expected a list of words, got the string {words!r} (write [{words!r}])")
    return words


def positions(emb: xr.Dataset, words: Sequence[str]) -> np.ndarray:
    """Row of each of ``words`` in the vocabulary (its first occurrence), -1 where absent.

    One vectorised scan of the store's ``word`` index for the few words asked for: building a hash
    table of the whole vocabulary instead (``pd.Index.get_indexer``) takes seconds at 2,000,000 words.
    """
    index = emb.indexes.get("word")
    if not isinstance(index, pd.Index):
        index = pd.Index(np.asarray(emb["word"].values).astype(object))
    # stores hold NFC words (ingest normalises them): "mâle" typed decomposed is found too
    words = [unicodedata.normalize("NFC", str(w)) for w in word_list(words, "words")]
    rows = np.flatnonzero(index.isin(words)) if words else np.empty(0, np.intp)
    found: dict[str, int] = {}
    for word, row in zip(index[rows], rows):
        found.setdefault(str(word), int(row))
    return np.array([found.get(w, -1) for w in words], dtype=np.intp)


def lookup(emb: xr.Dataset, words: Sequence[str], label: str) -> tuple[np.ndarray, list[str]]:
    """Positions of ``words`` in the vocabulary, and the words that are absent.

    Raises
    ------
    MissingWordsError
        When none of ``words`` is in the vocabulary; the message names them.
    """
    words = list(dict.fromkeys(words))
    pos = positions(emb, words)
    missing = [w for w, p in zip(words, pos) if p < 0]
    found = pos[pos >= 0]
    if found.size == 0:
        language = emb.attrs.get("language", "?")
        raise MissingWordsError(f"attribute set {label}: none of {words} is in the vocabulary of language {language!r}")
    return found, missing


def read_rows(emb: xr.Dataset, words: Iterable[str], client: Client | None = None) -> dict[str, np.ndarray]:
    """Word -> float64 vector for those of ``words`` that the store holds with a non-zero vector.

    Only the chunks holding these rows are read, in one Dask computation on ``client`` (in this
    process when None). Rows are widened from float32 through their shortest round-trip decimal,
    which is exactly the number printed in the source file whenever it had at most six significant
    digits (fastText and GloVe print four or five): published numbers computed from those decimals
    are then reproduced to 1e-12, where a plain cast gives ~1e-7. Other values move by less than half
    a float32 unit in the last place.
    """
    words = list(dict.fromkeys(words))
    pos = positions(emb, words)
    present = pos >= 0
    if not present.any():
        return {}
    order = np.argsort(pos[present], kind="stable")
    rows = emb["vectors"].isel(word=pos[present][order]).data
    if isinstance(rows, da.Array):
        rows = rows.compute(scheduler="sync") if client is None else client.compute(rows, sync=True)
    rows = np.asarray(rows, dtype=np.float32).astype(str).astype(np.float64)
    found = [w for w, p in zip(words, present) if p]
    return {found[i]: rows[k] for k, i in enumerate(order) if np.any(rows[k])}


@functools.lru_cache(maxsize=4)
def _frequency_table(language: str) -> dict[str, float]:
    import wordfreq

    return wordfreq.get_frequency_dict(language, wordlist="best")


def _observed_frequencies(words: np.ndarray, language: str) -> np.ndarray:
    table = _frequency_table(language)
    return np.array([table.get(str(w), np.nan) for w in words], dtype=np.float64)


def check_frequency_language(language: str) -> None:
    """Raise unless ``wordfreq`` has a frequency list for ``language``."""
    import wordfreq

    if language not in wordfreq.available_languages(wordlist="best"):
        known = ", ".join(sorted(wordfreq.available_languages(wordlist="best")))
        raise BiasdaskError(f"method 'frequency': wordfreq has no frequency list for language {language!r} (it has: {known})")


def scores(
    emb: xr.Dataset | str,
    a: Sequence[str],
    b: Sequence[str],
    methods: Iterable[str] = ("uniform", "zipf"),
    *,
    max_words: int | None = None,
    exclude_attributes: bool = False,
    exclude_words: Iterable[str] = (),
    frequency_language: str | None = None,
    storage_options: dict | None = None,
) -> xr.Dataset:
    """Per-word association u and weighted scores t of a stored embedding (lazy, dask-backed).

    Parameters
    ----------
    emb
        A Dataset from :func:`biasdask.open_embeddings`, or its URL.
    a, b
        Attribute words (e.g. the translations of *male* and *female*). Absent ones are skipped and
        recorded in ``attrs["missing_a"]`` / ``attrs["missing_b"]``.
    methods
        Any of ``"uniform"``, ``"zipf"``, ``"frequency"`` (SPEC §1).
    max_words
        Use only the ``max_words`` most frequent words (the top of the file); N is then ``max_words``.
    exclude_attributes
        Exclude the attribute words themselves from the targets (their u becomes NaN).
    exclude_words
        Further words to exclude from the targets (e.g. explicitly gendered words).
    frequency_language
        wordfreq language code for ``"frequency"`` (default: the store's ``language`` attribute).
    storage_options
        fsspec options when ``emb`` is a URL.

    Returns
    -------
    xarray.Dataset
        ``u`` (word) float32, ``t`` (method, word) float32, coordinates ``word``, ``rank`` and
        ``method``. Zero vectors and excluded words have NaN u and t and are left out of every test;
        N (for the Zipf weights) counts all words in use, so ranks keep their meaning. Attributes:
        ``language``, ``n_words``, ``n_a``, ``n_b``, ``missing_a``, ``missing_b``, ``n_zero_vectors``
        (in the words used), ``n_excluded``.
    """
    emb = as_dataset(emb, storage_options)
    a, b = word_list(a, "a"), word_list(b, "b")
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise BiasdaskError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    if max_words is not None:
        if max_words < 1:
            raise BiasdaskError(f"max_words must be positive, got {max_words}")
        emb = emb.isel(word=slice(0, max_words))
    n = emb.sizes["word"]
    language = str(emb.attrs.get("language", ""))
    a_pos, missing_a = lookup(emb, a, "A")
    b_pos, missing_b = lookup(emb, b, "B")
    vectors = emb["vectors"]
    # A few rows: read them here rather than through a round trip to the cluster's scheduler.
    rows = vectors.isel(word=np.concatenate([a_pos, b_pos])).compute(scheduler="synchronous").values
    direction = attribute_direction(rows[: a_pos.size], rows[a_pos.size :])

    v = vectors.data
    v = da.asarray(v)
    norm = da.asarray(emb["norm"].data).rechunk(v.chunks[0])
    u = da.map_blocks(
        lambda blk, nrm: association(blk, nrm[:, 0], direction),
        v,
        norm[:, None],
        drop_axis=1,
        dtype=np.float32,
        meta=np.empty((0,), np.float32),
    )
    excluded = set(exclude_words)
    if exclude_attributes:
        excluded |= set(a) | set(b)
    excl_pos = positions(emb, sorted(excluded))
    excl_pos = excl_pos[excl_pos >= 0]
    if excl_pos.size:
        mask = np.ones(n, dtype=bool)
        mask[excl_pos] = False
        u = da.where(da.from_array(mask, chunks=u.chunks), u, np.float32(np.nan))

    rank = da.asarray(emb["rank"].data).rechunk(u.chunks)
    t_rows = []
    for m in methods:
        if m == "uniform":
            t_rows.append(u)
        elif m == "zipf":
            z = rank.map_blocks(lambda r: zipf_weights(r, n), dtype=np.float64)
            t_rows.append((z * u).astype(np.float32))
        else:
            lang = frequency_language or language
            check_frequency_language(lang)
            words = da.from_array(np.asarray(emb["word"].values).astype(object), chunks=u.chunks)
            freq = words.map_blocks(_observed_frequencies, lang, dtype=np.float64)
            # Renormalising needs the global total, so the weights are one small reduction first.
            z = da.from_array(frequency_weights(freq.compute()), chunks=u.chunks)
            t_rows.append((z * u).astype(np.float32))
    t = da.stack(t_rows) if t_rows else da.empty((0, n), dtype=np.float32, chunks=(1, u.chunks[0]))

    out = xr.Dataset(
        {"u": (("word",), u), "t": (("method", "word"), t)},
        coords={"word": emb["word"], "rank": emb["rank"], "method": list(methods)},
    )
    out.attrs.update(
        language=language,
        n_words=int(n),
        n_a=int(a_pos.size),
        n_b=int(b_pos.size),
        missing_a=missing_a,
        missing_b=missing_b,
        n_zero_vectors=int((norm == 0).sum().compute(scheduler="synchronous")),
        n_excluded=int(excl_pos.size),
    )
    return out
