"""Per-word association u and weighted scores t over a whole stored vocabulary, as Dask graphs.

One matrix-vector product per chunk of the store's ``vectors`` (``dask.array.map_blocks``), never a
Python loop over words. Weights come from :mod:`biasdask.stats.weights`.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from dask.delayed import Delayed
from dask.utils import parse_bytes
from distributed import Client

from biasdask._calls import keyword_api, word_list
from biasdask.engine.cluster import compute
from biasdask.errors import BiasdaskError, MissingWordsError, missing_dependency
from biasdask.io.codecs import decode_scaled
from biasdask.io.embeddings import Embeddings, as_embeddings, shortest_decimal
from biasdask.io.fs import Locatable, Location, as_location
from biasdask.io.parse import row_hashes
from biasdask.io.store import StoredVectors, default_chunk_words, read_chunk, read_stored_vectors, stored_vectors
from biasdask.io.vocabulary import word_positions
from biasdask.lexicon import AttributeTerm, named_word_list
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.lexicon.vocabulary import vocabulary as vocabulary_options
from biasdask.stats.association import ASSOCIATIONS, Association, associate, association_axes, pair_associations
from biasdask.stats.elementary import exp10
from biasdask.stats.placebo import LinearMoments, MomentAccumulator, VocabularySample, gram_step, merge_moments
from biasdask.stats.reliability import ItemMoments, item_moments, merge_item_moments
from biasdask.stats.weights import METHODS, zipf_weights

__all__ = [
    "VOCABULARY_KEYWORDS",
    "as_terms",
    "attribute_rows",
    "attribute_set",
    "attribute_set_from_rows",
    "attribute_vectors",
    "Attributes",
    "ChunkMoments",
    "attributes_graph",
    "AttributeSet",
    "AttributeVectors",
    "check_frequency_language",
    "excluded_targets",
    "excluded_words",
    "first_of_each_vector",
    "forget_words",
    "found_words",
    "frequency_unavailable",
    "Method",
    "nfc",
    "observed_frequencies",
    "pair_axes",
    "PairAxes",
    "positions",
    "read_rows",
    "score_rows",
    "score_weights",
    "scores",
    "scores_and_moments",
    "scores_graph",
    "ScoresAndMoments",
    "ScoresGraph",
    "stored_association",
    "stored_rows",
    "stored_scores",
    "TermRows",
    "vector_hashes",
    "word_index",
]


#: The filters of the targets that :class:`~biasdask.Vocabulary` gathers, once keywords of their own.
VOCABULARY_KEYWORDS = {
    "vocabulary": (Vocabulary, ("max_words", "exclude_attributes", "exclude_words", "dedupe_vectors"))
}

#: The weightings of t.
Method = Literal["uniform", "zipf", "frequency"]


#: the rows of the words looked up in a store opened without its words
#: (:func:`biasdask.io.store.open_vectors`), by the store's ``store_id``: see :func:`found_words`
_FOUND: dict[str, dict[str, int]] = {}


def found_words(emb: xr.Dataset, words: Sequence[str], rows: np.ndarray) -> None:
    """Record the rows of ``words`` (NFC) in the store of ``emb``, opened without its words and looked up
    elsewhere (:func:`biasdask.io.store.find_words`, a task): :func:`positions` answers from them."""
    _FOUND.setdefault(str(emb.attrs["store_id"]), {}).update(zip(words, (int(r) for r in rows)))


def forget_words(emb: xr.Dataset) -> None:
    """Drop what :func:`found_words` recorded for the store of ``emb``."""
    _FOUND.pop(str(emb.attrs.get("store_id")), None)


def nfc(words: Iterable[str]) -> list[str]:
    """``words`` in Unicode NFC, the form ingest stores (so "mâle" typed decomposed is found too)."""
    return [unicodedata.normalize("NFC", str(w)) for w in words]


def positions(emb: xr.Dataset, words: Sequence[str]) -> np.ndarray:
    """Row of each of ``words`` in the vocabulary (its first occurrence), -1 where absent.

    A scan of the ``word`` index the first time; a hash table of it, built once per index, from the
    second (the first for an in-memory model): see :func:`biasdask.io.vocabulary.word_positions`. A
    store opened without its words answers from the words looked up for it (:func:`found_words`).

    Raises
    ------
    LookupError
        ``emb`` has no words and some of ``words`` were not looked up (a bug of the caller).
    """
    words = nfc(word_list(words, "words"))
    if "word" not in emb.coords:
        found = _FOUND.get(str(emb.attrs.get("store_id")), {})
        missing = [w for w in words if w not in found]
        if missing:
            raise LookupError(f"words not looked up in the store: {missing[:5]}")
        rows = np.array([found[w] for w in words], dtype=np.intp)
        rows[rows >= emb.sizes["word"]] = -1  # a vocabulary cut by max_words
        return rows
    return word_positions(word_index(emb), words)


def word_index(emb: xr.Dataset) -> pd.Index:
    """The vocabulary of ``emb`` (with its words) as a pandas Index: its own ``word`` index if it has one."""
    index = emb.indexes.get("word")
    return index if isinstance(index, pd.Index) else pd.Index(np.asarray(emb["word"].values).astype(object))


def as_terms(words: Iterable[str | AttributeTerm]) -> list[AttributeTerm]:
    """Attribute words as terms (a plain word is its own single translation); repeats count once."""
    terms = [w if isinstance(w, AttributeTerm) else AttributeTerm(str(w), ((str(w),),)) for w in words]
    return list({t.label: t for t in reversed(terms)}.values())[::-1]


@dataclass(frozen=True)
class AttributeSet:
    """The vectors of one attribute set as found in an embedding.

    Attributes
    ----------
    vectors
        One float64 row per term used, shape (n_used, D).
    used, missing, zero
        Term labels: used; absent from the vocabulary; present only as zero vectors (skipped).
    tokens
        The vocabulary tokens whose vectors entered the used terms (for an IAT term, its translations).
    """

    vectors: np.ndarray
    used: list[str]
    missing: list[str]
    zero: list[str]
    tokens: list[str]


class Attributes(NamedTuple):
    """The attribute sets A and B as found in an embedding, and the association's axes built from them
    (:func:`attributes_graph`)."""

    axes: np.ndarray
    a: AttributeSet
    b: AttributeSet


class TermRows(NamedTuple):
    """The vocabulary tokens of some terms that an embedding holds, and their rows (:func:`attribute_rows`)."""

    tokens: list[str]
    rows: np.ndarray | Delayed | da.Array


class AttributeVectors(NamedTuple):
    """The vectors an association is built from (:func:`attribute_vectors`)."""

    a: np.ndarray
    b: np.ndarray


class ScoresAndMoments(NamedTuple):
    """:func:`scores_and_moments`: the computed scores, and the placebo moments of their words."""

    scores: xr.Dataset
    moments: LinearMoments | VocabularySample


class ScoresGraph(NamedTuple):
    """:func:`scores_graph`: the scores as a graph, nothing read yet."""

    scores: xr.Dataset
    """The lazy Dataset of :func:`scores`, with the attributes known without reading vectors
    (``language``, ``n_words``, ``n_excluded``, ``association``)."""
    stacked: da.Array
    """The one array (rows u, t(method)..., words) whose rows the Dataset's ``u`` and ``t`` are:
    computing it runs one task per few chunks of a store (``u`` and ``t`` given apart would each be
    computed by tasks of their own)."""
    found: Delayed
    """The other attributes of :func:`scores` (``n_a``... ``n_zero_vectors``, ``n_duplicate_vectors``),
    delayed; its computation raises :class:`MissingWordsError` when A or B has no usable word."""
    moments: list[Delayed] | None
    """With ``moments`` or ``pair_axes``, one delayed pair per task of its rows (u stacked on t) and its
    :class:`ChunkMoments` (the placebo moments, :class:`LinearMoments` or a sample, merged in chunk
    order by :func:`biasdask.stats.placebo.merge_moments`; the pairs' item moments): the task that
    computes the rows. Else None."""


def attribute_set(emb: xr.Dataset, words: Iterable[str | AttributeTerm], label: str) -> AttributeSet:
    """Vectors of an attribute set, looked up in the whole vocabulary of ``emb``.

    Absent words and words stored as zero vectors are skipped and listed (a zero vector would enter
    the attribute mean as the origin).

    Raises
    ------
    MissingWordsError
        When no word of the set is left; the message names the absent and the zero-vector words.
    """
    terms = as_terms(words)
    found, rows = attribute_rows(emb, terms)
    (rows,) = dask.compute(rows, scheduler="sync")
    return attribute_set_from_rows(terms, found, rows, label, str(emb.attrs.get("language", "?")))


def attribute_rows(emb: xr.Dataset, terms: Sequence[AttributeTerm]) -> TermRows:
    """The vocabulary tokens of ``terms`` that ``emb`` holds (in row order) and their float32 rows,
    not read: for a store, one task reading the chunks that hold them; for an in-memory model, the
    rows themselves."""
    tokens = list(dict.fromkeys(t for term in terms for t in term.tokens))
    pos = positions(emb, tokens)
    present = pos >= 0
    order = np.argsort(pos[present], kind="stable")
    found = [t for t, p in zip(tokens, present) if p]
    rows = pos[present][order]
    vectors = emb["vectors"].data
    stored = stored_vectors(vectors)
    if stored is not None:
        rows = dask.delayed(stored_rows, pure=True)(stored.location, stored.chunk, rows, vectors.shape[1])
    elif isinstance(vectors, da.Array):
        (rows,) = dask.optimize(vectors[rows])  # culled: only the chunks that hold the rows
    else:
        rows = np.asarray(vectors[rows])
    return TermRows([found[i] for i in order], rows)


def stored_rows(loc: Locatable, chunk: int, rows: np.ndarray, dim: int) -> np.ndarray:
    """Task: the float32 ``vectors`` of a store at the (sorted) ``rows``, reading only the chunks that hold them."""
    loc = as_location(loc)
    index = rows // chunk
    parts = [read_chunk(loc, "vectors", int(i), rows[index == i] - i * chunk) for i in np.unique(index)]
    return np.concatenate(parts) if parts else np.empty((0, dim), dtype=np.float32)


def attribute_set_from_rows(
    terms: Sequence[AttributeTerm], found: Sequence[str], rows: np.ndarray, label: str, language: str
) -> AttributeSet:
    """:func:`attribute_set` from the rows :func:`attribute_rows` names (``found[k]``'s vector is ``rows[k]``)."""
    data = np.asarray(rows, dtype=np.float64)
    by_token = {t: data[k] for k, t in enumerate(found)}
    vectors, used, missing, zero, tokens = [], [], [], [], []
    for term in terms:
        means = []
        for translation in term.translations:
            usable = [t for t in translation if t in by_token and np.any(by_token[t])]
            if usable:
                means.append(np.mean([by_token[t] for t in usable], axis=0))
                tokens += usable
        if means:
            vectors.append(np.mean(means, axis=0))
            used.append(term.label)
        elif any(t in by_token for t in term.tokens):
            zero.append(term.label)
        else:
            missing.append(term.label)
    if not used:
        detail = "; ".join(
            part for part in (f"absent: {missing}" if missing else "", f"zero vectors: {zero}" if zero else "") if part
        )
        raise MissingWordsError(
            f"attribute set {label}: no word of {[t.label for t in terms]} has a usable vector in language "
            f"{language!r} ({detail})"
        )
    return AttributeSet(np.array(vectors, dtype=np.float64), used, missing, zero, list(dict.fromkeys(tokens)))


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
    rows = shortest_decimal(rows)
    found = [w for w, p in zip(words, present) if p]
    return {found[i]: rows[k] for k, i in enumerate(order) if np.any(rows[k])}


#: rows decoded at a time from a scaled chunk (a cache-sized float32 block)
_DECODE_ROWS = 1024


def _stored_blocks(loc: Location, chunk: int, start: int, stop: int):
    """Rows ``start:stop`` of a store's ``vectors`` (the first rows of chunk ``start // chunk``) and
    their norms: ``(norms, blocks)``, ``blocks`` yielding ``(lo, hi, float32 rows lo:hi)`` a
    cache-sized block at a time, scaled integers decoded into float32 (the values
    :func:`biasdask.io.store.read_chunk` gives)."""
    index, n = start // chunk, stop - start
    # negative zeros change no dot product; the chunk is consumed here, so it may be in a reused buffer
    stored, _ = read_stored_vectors(loc, index, reuse=True, negative_zeros=False)
    norms = read_chunk(loc, "norm", index)[:n]

    def blocks():
        scratch = None if stored.dtype == np.float32 else np.empty((min(n, _DECODE_ROWS), stored.shape[1]), np.float32)
        for lo in range(0, n, _DECODE_ROWS):
            hi = min(n, lo + _DECODE_ROWS)
            if scratch is None:
                yield lo, hi, stored[lo:hi]
            else:
                decode_scaled(stored[lo:hi], scratch[: hi - lo])
                yield lo, hi, scratch[: hi - lo]

    return norms, blocks()


def stored_association(
    loc: Locatable, chunk: int, kind: Association, axes: np.ndarray, start: int, stop: int
) -> np.ndarray:
    """The association ``kind`` (:func:`biasdask.stats.association.associate`) of rows ``start:stop``
    of a store's ``vectors``, the first rows of chunk ``start // chunk``, read as stored: scaled
    integers are decoded a cache-sized block at a time into float32 and fed to the same association
    kernel, so u is bit for bit the one computed from the float32 vectors."""
    loc = as_location(loc)
    norms, blocks = _stored_blocks(loc, chunk, start, stop)
    out = np.empty(stop - start, dtype=np.float32)
    for lo, hi, rows in blocks:
        out[lo:hi] = associate(kind, rows, norms[lo:hi], axes)
    return out


def score_weights(start: int, count: int, n: int, methods: Sequence[str], **extras: np.ndarray) -> np.ndarray:
    """The weights z (one row per method, float64) of the words ``start:start + count`` of a
    vocabulary of ``n``; ``extras`` as in :func:`score_rows`."""
    out = np.empty((len(methods), count))
    for row, method in enumerate(methods):
        if method == "uniform":
            out[row] = 1.0
        elif method == "zipf":
            rank = extras.get("rank")
            out[row] = zipf_weights(np.arange(start + 1, start + count + 1) if rank is None else rank, n)
        else:
            out[row] = extras["frequency"]
    return out


def score_rows(
    u: np.ndarray,
    start: int,
    n: int,
    methods: Sequence[str],
    weights: np.ndarray | None = None,
    **extras: np.ndarray,
) -> np.ndarray:
    """The rows u, t(method)... of the words ``start:start + len(u)`` of a vocabulary of ``n``.

    ``extras``: ``mask`` (False: excluded, u and t NaN), ``rank`` (default: ``start + 1``...), and
    ``frequency`` (the renormalised observed frequencies) of these words. Float32 rows, each t the
    float64 product z·u rounded once (z: ``weights``, default :func:`score_weights`).
    """
    if "mask" in extras:
        u = np.where(extras["mask"], u, np.float32(np.nan))
    if weights is None:
        weights = score_weights(start, u.size, n, methods, **extras)
    out = np.empty((1 + len(methods), u.size), dtype=np.float32)
    out[0] = u
    for row, (method, z) in enumerate(zip(methods, weights), 1):
        out[row] = u if method == "uniform" else z * u
    return out


class ChunkMoments(NamedTuple):
    """What a scores task gathers from its rows besides u and t, in the same read."""

    placebo: list[LinearMoments | VocabularySample]
    """The placebo moments of each of its chunks, in order (empty without a placebo)."""
    items: ItemMoments | None
    """The moments of the base pairs' associations of its words in use (None without pairs)."""


def _scores_and_moments(
    norms: np.ndarray,
    blocks,
    start: int,
    kind: Association,
    axes: np.ndarray,
    extras: dict,
    n: int,
    methods: Sequence[str],
    step: int,
    item_axes: np.ndarray | None,
) -> tuple[np.ndarray, ChunkMoments]:
    """:func:`score_rows` of a chunk's rows (``blocks`` as :func:`_stored_blocks` gives them), the
    placebo moments of its words in use (with a ``step``) and the moments of their associations with
    each base pair (with ``item_axes``), gathered from each block while it is in the cache."""
    count = norms.size
    u = np.empty(count, dtype=np.float32)
    z = score_weights(start, count, n, methods, **extras)
    mask = extras.get("mask")
    acc = MomentAccumulator(kind, axes.shape[1], len(methods), step=step, rows=count) if step else None
    # the chunk's items, their moments taken in one call (the same bits as block by block: the leaves of
    # the moments' tree are aligned on the vocabulary's rows, not on the blocks)
    items = None if item_axes is None else np.empty((count, len(item_axes)))
    for lo, hi, rows in blocks:
        u[lo:hi] = associate(kind, rows, norms[lo:hi], axes)
        keep = np.isfinite(u[lo:hi]) if mask is None else np.isfinite(u[lo:hi]) & mask[lo:hi]
        if acc is not None:
            acc.add(start + lo, rows, norms[lo:hi], z[:, lo:hi], keep)
        if items is not None:
            items[lo:hi] = pair_associations(kind, rows, norms[lo:hi], item_axes)
            items[lo:hi][~keep] = np.nan
    gathered = ChunkMoments(
        [] if acc is None else [acc.moments()], None if items is None or not count else item_moments(items, start=start)
    )
    return score_rows(u, start, n, methods, z, **extras), gathered


def _merged(parts: list[ChunkMoments]) -> ChunkMoments:
    items = [p.items for p in parts if p.items is not None]
    return ChunkMoments([m for p in parts for m in p.placebo], merge_item_moments(*items) if items else None)


def stored_scores(
    loc: Locatable,
    chunk: int,
    kind: Association,
    axes: np.ndarray,
    *arrays: np.ndarray,
    n: int,
    methods: Sequence[str],
    extras: Sequence[str],
    gram_step: int = 0,
    item_axes: np.ndarray | None = None,
    block_info=None,
) -> np.ndarray | tuple[np.ndarray, ChunkMoments]:
    """Task: :func:`score_rows` of one block of a store's words, whole stored chunks of ``chunk`` rows
    (each its :func:`stored_association`, chunk after chunk); ``arrays`` are the block's ``extras`` in
    that order. With ``gram_step`` (the placebo's sample step, :func:`biasdask.stats.placebo.gram_step`)
    or ``item_axes`` (each base pair's axes), also what :class:`ChunkMoments` holds, from the same read:
    ``(rows, moments)``."""
    loc = as_location(loc)
    (start, stop) = block_info[None]["array-location"][1]
    named = dict(zip(extras, arrays))
    gather = bool(gram_step) or item_axes is not None
    rows, moments = [], []
    for lo in range(start, stop, chunk):  # a block starts at a chunk boundary (see _task_chunks)
        hi = min(stop, lo + chunk)
        part = {name: values[lo - start : hi - start] for name, values in named.items()}
        if gather:
            norms, blocks = _stored_blocks(loc, chunk, lo, hi)
            chunk_rows, chunk_moments = _scores_and_moments(
                norms, blocks, lo, kind, axes, part, n, methods, gram_step, item_axes
            )
            moments.append(chunk_moments)
        else:
            chunk_rows = score_rows(stored_association(loc, chunk, kind, axes, lo, hi), lo, n, methods, **part)
        rows.append(chunk_rows)
    joined = rows[0] if len(rows) == 1 else np.concatenate(rows, axis=1)
    return (joined, _merged(moments)) if gather else joined


def _mask_block(excluded: np.ndarray, block_info=None) -> np.ndarray:
    """Task: the mask of one block of the vocabulary, False at the ``excluded`` rows (sorted, global)."""
    start, stop = block_info[None]["array-location"][0]
    mask = np.ones(stop - start, dtype=bool)
    mask[excluded[np.searchsorted(excluded, start) : np.searchsorted(excluded, stop)] - start] = False
    return mask


def _task_chunks(emb: xr.Dataset, stored: StoredVectors, chunks: tuple[int, ...]) -> tuple[int, ...]:
    """The store's chunks (``chunks``, cut at ``max_words``) merged into runs of whole chunks of about
    ``biasdask.scores-task-bytes`` of stored vectors each (at least one chunk): one scores task each.
    A task per chunk would be mostly the scheduler's overhead on a large cluster (docs/benchmarks.md)."""
    itemsize = 2 if emb.attrs.get("vector_encoding") == "int16" else 4
    target = parse_bytes(dask.config.get("biasdask.scores-task-bytes"))
    per_task = max(1, target // max(1, stored.chunk * emb.sizes["dim"] * itemsize))
    return tuple(sum(chunks[i : i + per_task]) for i in range(0, len(chunks), per_task))


def _scores_block(
    u: np.ndarray, *arrays: np.ndarray, n: int, methods: Sequence[str], extras: Sequence[str], block_info=None
) -> np.ndarray:
    """Task: :func:`score_rows` of one block of an in-memory model's words."""
    start = block_info[None]["array-location"][1][0]
    return score_rows(u, start, n, methods, **dict(zip(extras, arrays)))


def _memory_scores_and_moments(
    vectors: np.ndarray,
    norms: np.ndarray,
    *arrays: np.ndarray,
    start: int,
    kind: Association,
    axes: np.ndarray,
    n: int,
    methods: Sequence[str],
    extras: Sequence[str],
    gram_step: int = 0,
    item_axes: np.ndarray | None = None,
) -> tuple[np.ndarray, ChunkMoments]:
    """Task: :func:`stored_scores` with moments, for the block of an in-memory model's words from ``start``."""
    vectors = np.asarray(vectors, dtype=np.float32)
    blocks = (
        (lo, min(lo + _DECODE_ROWS, len(vectors)), vectors[lo : lo + _DECODE_ROWS])
        for lo in range(0, len(vectors), _DECODE_ROWS)
    )
    named = dict(zip(extras, arrays))
    norms = np.asarray(norms, dtype=np.float64)
    return _scores_and_moments(norms, blocks, start, kind, axes, named, n, methods, gram_step, item_axes)


def _item(pair: tuple, i: int):
    return pair[i]


def _wordfreq() -> Any:
    try:
        import wordfreq
    except ImportError:  # observed frequencies are an extra
        raise missing_dependency("wordfreq", "frequency", "the 'frequency' weighting") from None
    return wordfreq


@functools.lru_cache(maxsize=4)
def _frequency_table(language: str) -> dict[str, float]:
    """wordfreq's frequencies of ``language`` (its ``get_frequency_dict``), each bucket's 10^(-i/100)
    rounded once from decimal arithmetic instead of by the C library's pow, which differs by CPU."""
    table: dict[str, float] = {}
    for index, bucket in enumerate(_wordfreq().get_frequency_list(language, wordlist="best")):
        frequency = exp10(-index / 100)
        table.update(dict.fromkeys(bucket, frequency))
    return table


def observed_frequencies(words: np.ndarray, language: str) -> np.ndarray:
    table = _frequency_table(language)
    return np.array([table.get(str(w), np.nan) for w in words], dtype=np.float64)


def _stored_frequencies(loc: Location, chunk: int, language: str, block_info=None) -> np.ndarray:
    """Task: the observed frequencies (NaN where wordfreq has none) of one block of a store's words,
    whole stored chunks (see :func:`_task_chunks`), read here."""
    start, stop = block_info[None]["array-location"][0]
    words = [
        read_chunk(loc, "word", k)[: min(stop, (k + 1) * chunk) - k * chunk]
        for k in range(start // chunk, -(-stop // chunk))
    ]
    return observed_frequencies(np.concatenate(words), language)


def _positive_frequencies(frequencies: np.ndarray) -> np.ndarray:
    """Observed frequencies with the missing (NaN) and non-positive ones 0, as :func:`frequency_weights`."""
    return np.where(np.isfinite(frequencies) & (frequencies > 0), frequencies, 0.0)


def _frequency_total(positive: np.ndarray, language: str) -> float:
    """Task: the sum of a vocabulary's :func:`_positive_frequencies` (the whole array, summed as
    :func:`frequency_weights` sums it); raises when no word used has an observed frequency."""
    total = positive.sum()
    if not total > 0:
        check_frequency_language(language, ())  # raises: no word used has an observed frequency
        raise BiasdaskError(f"method 'frequency': no word used has an observed frequency in {language!r}")
    return float(total)


def frequency_unavailable(language: str, words: Iterable[str] | None = None) -> str | None:
    """Why wordfreq's observed frequencies cannot weight the words of ``language``, or None if they can.

    Either wordfreq has no list for ``language``, or (given ``words``) none of ``words`` is in it. The
    words are scanned until the first one that is, so a real vocabulary costs one lookup (and the first
    call per language the loading of its list).
    """
    wordfreq = _wordfreq()
    if language not in wordfreq.available_languages(wordlist="best"):
        return f"wordfreq has no observed-frequency list for language {language!r}"
    if words is not None:
        table = _frequency_table(language)
        if not any(str(w) in table for w in words):
            return f"none of the words used is in wordfreq's observed-frequency list for language {language!r}"
    return None


def check_frequency_language(language: str, words: Iterable[str] | None = None) -> None:
    """Raise :class:`BiasdaskError` (one line) if :func:`frequency_unavailable` gives a reason."""
    wordfreq = _wordfreq()
    reason = frequency_unavailable(language, words)
    if reason is None:
        return
    if language not in wordfreq.available_languages(wordlist="best"):
        reason += f" (it has: {', '.join(sorted(wordfreq.available_languages(wordlist='best')))})"
    raise BiasdaskError(f"method 'frequency': {reason}")


def excluded_words(exclude_words: str | Iterable[str]) -> tuple[str, ...]:
    """``exclude_words`` as words: a list name of :data:`biasdask.lexicon.NAMED_WORD_LISTS`, or the words."""
    if isinstance(exclude_words, str):
        return named_word_list(exclude_words)
    return tuple(exclude_words)


def excluded_targets(
    a: Iterable[str | AttributeTerm], b: Iterable[str | AttributeTerm], vocabulary: Vocabulary
) -> set[str]:
    """The words ``vocabulary`` leaves out of the targets: its ``exclude_words`` (see :func:`excluded_words`)
    and, with ``exclude_attributes``, every token of the attribute words ``a`` and ``b``."""
    excluded = set(excluded_words(vocabulary.exclude_words))
    if vocabulary.exclude_attributes:
        excluded |= {t for term in as_terms([*a, *b]) for t in term.tokens}
    return excluded


def vector_hashes(emb: xr.Dataset) -> da.Array:
    """A 64-bit hash of every stored vector's bits (0 for zero vectors), lazily: one task per chunk of
    the vectors when computed (on the current Dask client if there is one)."""
    return da.asarray(emb["vectors"].data).map_blocks(row_hashes, drop_axis=1, dtype=np.uint64)


def first_of_each_vector(hashes: np.ndarray) -> np.ndarray:
    """Mask of the rows whose vector hash has not occurred in an earlier row (zero vectors kept)."""
    keep = np.ones(hashes.size, dtype=bool)
    nonzero = np.flatnonzero(hashes != 0)
    _, first = np.unique(hashes[nonzero], return_index=True)
    keep[nonzero] = False
    keep[nonzero[first]] = True
    return keep


@keyword_api("scores(emb, a, b, methods=..., vocabulary=Vocabulary(...))", gathered=VOCABULARY_KEYWORDS)
def scores(
    emb: Embeddings,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    methods: Iterable[Method] = ("uniform", "zipf"),
    vocabulary: Vocabulary | None = None,
    frequency_language: str | None = None,
    association: Association = "cosine",
) -> xr.Dataset:
    """Per-word association u and weighted scores t of a stored embedding (lazy, dask-backed).

    Parameters
    ----------
    emb
        A store (URL, :class:`~biasdask.Location` or fsspec mapper), a Dataset from
        :func:`biasdask.open_embeddings`, a DataArray (word, dim) or a gensim ``KeyedVectors`` (see
        :func:`biasdask.as_embeddings`).
    a, b
        Attribute words (e.g. the translations of *male* and *female*), or :class:`AttributeTerm`
        (a word given by its translations, e.g. the IAT's). They are looked up in the whole vocabulary,
        whatever ``max_words``. Absent ones and ones stored as zero vectors are skipped and recorded
        in ``attrs["missing_a"]``, ``attrs["zero_a"]`` (and ``_b``); a set left empty is an error.
    methods
        Any of ``"uniform"``, ``"zipf"``, ``"frequency"``.
    vocabulary
        :class:`~biasdask.Vocabulary` (default ``Vocabulary()``): the targets' filters, ``max_words``
        (the most frequent words only; N is then ``max_words``), ``exclude_attributes`` and
        ``exclude_words`` (left out of the targets: their u and t are NaN), ``dedupe_vectors`` (each
        distinct vector scored once: one extra pass over the store hashes its rows, skipped when the
        store's ``n_duplicate_vectors`` is 0).
    frequency_language
        wordfreq language code for ``"frequency"`` (default: the store's ``language`` attribute).
    association
        The per-word association u (:mod:`biasdask.stats.association`; > 0 always means closer to A):
        ``"cosine"`` (the full-vocabulary test: mean cos with A - mean cos with B), ``"euclidean"`` (relative norm
        distance of the unit vector to the two sets' means), ``"ripa"`` (projection of the raw vector on
        the relational vector of the PAIRS (a[i], b[i]); a pair with a word missing is dropped, and
        ``a`` and ``b`` of different lengths are refused) or ``"semaxis"`` (cosine with the axis
        mean A - mean B).

    Returns
    -------
    xarray.Dataset
        ``u`` (word) float32, ``t`` (method, word) float32, coordinates ``word``, ``rank`` and
        ``method``. Zero vectors and excluded words have NaN u and t and are left out of every test;
        N (for the Zipf weights) counts all words in use, so ranks keep their meaning; frequency
        weights sum to 1 over the words tested. Attributes: ``language``, ``n_words``, ``n_a``,
        ``n_b`` (attribute words used), ``used_a``, ``used_b`` (their labels), ``tokens_a``, ``tokens_b`` (the vocabulary tokens used), ``missing_a``, ``missing_b``, ``zero_a``, ``zero_b``,
        ``n_zero_vectors`` (in the words used), ``n_excluded``, ``n_duplicate_vectors`` (excluded by
        ``vocabulary.dedupe_vectors``), ``association``.

    Raises
    ------
    MissingWordsError
        No usable word in A (or in B); the message names the absent and zero-vector words.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", "he", "she", "man", "woman", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> sc = biasdask.scores(emb, ["male", "man"], ["female", "woman"])
    >>> sc["u"].sizes["word"], sc["t"].dims, sc["method"].values.tolist()
    (1006, ('method', 'word'), ['uniform', 'zipf'])
    """
    out, _, meta, _ = scores_graph(
        emb,
        a,
        b,
        methods=methods,
        vocabulary=vocabulary,
        frequency_language=frequency_language,
        association=association,
    )
    (found,) = dask.compute(meta, scheduler="sync")
    out.attrs.update(found)
    return out


def scores_graph(
    emb: Embeddings,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    methods: Iterable[Method] = ("uniform", "zipf"),
    vocabulary: Vocabulary | None = None,
    frequency_language: str | None = None,
    association: Association = "cosine",
    attributes: Attributes | None = None,
    moments: bool = False,
    pair_axes: np.ndarray | None = None,
) -> ScoresGraph:
    """:func:`scores` as a graph only: nothing of the vectors is read in this process (nor of the words,
    for a store opened without them: ``dedupe_vectors``' hashes and ``frequency``'s weights are tasks).

    The attribute rows are read, and the association's axes computed from them, by a task on which
    every chunk's task depends; so a study's client only submits (:mod:`biasdask.study.stream`).
    Parameters as in :func:`scores`, ``attributes``, the computed :func:`attributes_graph` of
    ``emb``, ``a``, ``b`` and ``association`` (default: that graph, computed with the scores), and
    ``moments``: also gather the placebo moments of the words in use
    (:class:`biasdask.stats.placebo.MomentAccumulator`; for ``euclidean`` a sample of the words) in
    the tasks that compute u, and ``pair_axes`` (shape (k, m, D), :func:`pair_axes`): also gather there
    the :class:`~biasdask.stats.reliability.ItemMoments` of the words' associations with each base pair.

    Returns
    -------
    ScoresGraph
        The lazy scores, the array they are rows of, the attributes found (delayed) and, with
        ``moments`` or ``pair_axes``, the chunks' (rows, :class:`ChunkMoments`) pairs.
    """
    emb = as_embeddings(emb)
    a, b = word_list(a, "a"), word_list(b, "b")
    options = vocabulary_options(vocabulary)
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise BiasdaskError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    if association not in ASSOCIATIONS:
        raise BiasdaskError(f"unknown association {association!r}; choose from {list(ASSOCIATIONS)}")
    if attributes is None:
        attributes = attributes_graph(emb, a, b, association)
    axes, attr_a, attr_b = attributes
    # A store whose ingest counted no shared vector needs no hashing pass; otherwise tasks hash its rows
    # (the whole store, before max_words: a repeat's first row may lie beyond it)
    hashes = vector_hashes(emb) if options.dedupe_vectors and emb.attrs.get("n_duplicate_vectors") != 0 else None
    stored = stored_vectors(emb["vectors"].data)
    if options.max_words is not None:
        emb = emb.isel(word=slice(0, options.max_words))
    n = emb.sizes["word"]
    language = str(emb.attrs.get("language", ""))
    vectors = emb["vectors"]

    v = vectors.data
    if not isinstance(v, da.Array):  # an in-memory model: chunk it like a store
        v = da.from_array(v, chunks=(default_chunk_words(v.shape[1]), -1), name=False)
    chunks = v.chunks[0] if stored is None else _task_chunks(emb, stored, v.chunks[0])
    norm = da.asarray(emb["norm"].data).rechunk(chunks)
    excluded = excluded_targets(a, b, options)
    excl_pos = positions(emb, sorted(excluded))
    excl_pos = np.unique(excl_pos[excl_pos >= 0])
    n_duplicates: int | Delayed = 0
    # What a chunk's rows need besides its vectors, as arrays chunked like them (only when needed).
    extras: dict[str, da.Array] = {}
    left_out: np.ndarray | Delayed = excl_pos
    if hashes is not None:  # repeated vectors: one task finds the rows to leave out from every hash
        left_out, n_duplicates = dask.delayed(_left_out_rows, pure=True, nout=2)(excl_pos, n, hashes)
    if hashes is not None or excl_pos.size:  # each block's mask made by its task from the rows left out
        extras["mask"] = da.map_blocks(_mask_block, left_out, chunks=(chunks,), dtype=bool, meta=np.empty(0, bool))
    if stored is not None:  # a store's ranks are 1..N in row order (its format): nothing to read, and
        # nothing held here (N int64s per language in flight would weigh on a study's client)
        ranks = da.arange(1, n + 1, chunks=(chunks,), dtype=np.int64)
        rank_coord = xr.Variable(("word",), ranks, attrs=emb["rank"].attrs)
    else:
        rank_coord = emb["rank"]
        if "zipf" in methods:
            extras["rank"] = da.asarray(emb["rank"].data).rechunk(chunks)
    if "frequency" in methods:
        lang = frequency_language or language
        check_frequency_language(lang)
        if "word" in emb.coords:
            words = da.from_array(np.asarray(emb["word"].values).astype(object), chunks=chunks)
            freq = words.map_blocks(observed_frequencies, lang, dtype=np.float64)
        else:  # a store opened without its words: each block's task reads its words
            assert stored is not None
            freq = da.map_blocks(
                _stored_frequencies, stored.location, stored.chunk, lang, chunks=(chunks,), dtype=np.float64
            )
        # Only the words tested share the weight (not excluded words, duplicates or zero vectors).
        in_use = (extras["mask"] if "mask" in extras else True) & (norm > 0)
        positive = da.where(in_use, freq, np.nan).map_blocks(_positive_frequencies, dtype=np.float64)
        # Renormalising needs the global total: one task sums the whole array, as frequency_weights does
        # (the same bits), and each block is divided by it (no per-word array in this process).
        total = dask.delayed(_frequency_total, pure=True)(positive, lang)
        if "word" in emb.coords:  # the words are here: a vocabulary without observed words fails now
            (total,) = dask.compute(total)
        extras["frequency"] = positive.map_blocks(np.divide, total, dtype=np.float64)

    # u and every t row of a chunk in ONE task (a store's; two for an in-memory model): a task per
    # weighting, mask and rank read cost more in Dask's per-task overhead than in arithmetic.
    shape = dict(chunks=((1 + len(methods),), chunks), dtype=np.float32, meta=np.empty((0, 0), np.float32))
    if extras:
        shape["new_axis"] = [0]
    rows = dict(n=n, methods=methods, extras=tuple(extras))
    step, parts = (gram_step(n) if moments else 0), None
    gather = {
        **({"gram_step": step} if moments else {}),
        **({"item_axes": np.asarray(pair_axes, dtype=np.float64)} if pair_axes is not None else {}),
    }
    if stored is not None:  # straight from the stored chunks, no float copy of scaled ones
        ut = da.map_blocks(
            stored_scores, stored.location, stored.chunk, association, axes, *extras.values(), **rows, **shape, **gather
        )
        if gather:  # each block a (rows, moments) pair: the array is its rows; the pairs themselves as parts
            parts = ut.to_delayed(optimize_graph=False).ravel().tolist()
            ut = ut.map_blocks(_item, 0, dtype=np.float32, meta=np.empty((0, 0), np.float32))
    elif gather:
        starts = np.cumsum((0, *chunks[:-1]))
        blocks = [x.to_delayed(optimize_graph=False).ravel() for x in (v.rechunk({1: -1}), norm, *extras.values())]
        pairs = [
            dask.delayed(_memory_scores_and_moments, pure=True)(
                *(x[i] for x in blocks), start=int(starts[i]), kind=association, axes=axes, **gather, **rows
            )
            for i in range(len(chunks))
        ]
        parts = pairs
        ut = da.concatenate(
            [
                da.from_delayed(dask.delayed(_item, pure=True)(pair, 0), (1 + len(methods), size), dtype=np.float32)
                for pair, size in zip(pairs, chunks)
            ],
            axis=1,
        )
    else:
        u = da.map_blocks(
            _associate_block,
            v,
            norm[:, None],
            association,
            axes,
            drop_axis=1,
            dtype=np.float32,
            meta=np.empty((0,), np.float32),
        )
        shape["new_axis"] = [0]
        ut = da.map_blocks(_scores_block, u, *extras.values(), **rows, **shape)
    u, t = ut[0], ut[1:]

    out = xr.Dataset(
        {"u": (("word",), u), "t": (("method", "word"), t)},
        coords={**({"word": emb["word"]} if "word" in emb.coords else {}), "rank": rank_coord, "method": list(methods)},
    )
    out.attrs.update(
        language=language,
        n_words=int(n),
        n_excluded=int(excl_pos.size),
        association=association,
    )
    # A store whose ingest found no zero vector has none among the words used: no pass over the norms.
    n_zero = 0 if stored is not None and emb.attrs.get("n_zero_vectors") == 0 else (norm == 0).sum()
    return ScoresGraph(out, ut, dask.delayed(_found_attrs, pure=True)(attr_a, attr_b, n_zero, n_duplicates), parts)


def scores_and_moments(
    emb: Embeddings,
    a: Sequence[str | AttributeTerm],
    b: Sequence[str | AttributeTerm],
    *,
    methods: Iterable[Method] = ("uniform", "zipf"),
    client: Client | None = None,
    **options: Any,
) -> ScoresAndMoments:
    """:func:`scores`, computed, and the placebo moments of the words in use gathered in the same pass
    (:class:`biasdask.stats.placebo.MomentAccumulator`; for ``euclidean`` a sample of the words): what
    :func:`biasdask.engine.placebo.placebo_test` takes.

    ``options`` are those of :func:`scores`; ``client`` the Dask client (default: the current one,
    else Dask's default scheduler).

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["he", "she", *(f"w{i}" for i in range(500))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((502, 8)), words, language="en")
    >>> sc, moments = scores_and_moments(emb, ["he"], ["she"], methods=["uniform"])
    >>> moments.n, int(np.isfinite(sc["u"].values).sum())
    (502, 502)
    """
    out, _, meta, pairs = scores_graph(emb, a, b, methods=methods, moments=True, **options)
    computed_pairs, found = compute(pairs, meta, client=client)  # each chunk's rows and moments, one read
    computed = np.concatenate([rows for rows, _ in computed_pairs], axis=1)
    moments = [m for _, gathered in computed_pairs for m in gathered.placebo]
    out = out.copy()
    out["u"] = ("word",), computed[0]
    out["t"] = ("method", "word"), computed[1:]
    out.attrs.update(found)
    return ScoresAndMoments(out, merge_moments(*moments))


def attributes_graph(
    emb: xr.Dataset, a: Sequence[str | AttributeTerm], b: Sequence[str | AttributeTerm], association: Association
) -> Delayed:
    """The attribute sets A and B of ``emb`` and the ``association``'s axes, delayed
    (:class:`Attributes`): a task reads the rows (the client only looks the words up). Its computation
    raises :class:`MissingWordsError` when A or B has no usable word."""
    terms_a, terms_b = as_terms(a), as_terms(b)
    # one read for both sets: they usually lie in the same (first) chunks
    return dask.delayed(_attributes, pure=True, nout=3)(
        association, terms_a, terms_b, *attribute_rows(emb, [*terms_a, *terms_b]), str(emb.attrs.get("language", "?"))
    )


def _associate_block(block: np.ndarray, norm: np.ndarray, kind: Association, axes: np.ndarray) -> np.ndarray:
    return associate(kind, block, norm[:, 0], axes)


def _attributes(association, terms_a, terms_b, found, rows, language):
    """Task: the attribute sets A and B from the rows of their tokens, and the association's axes."""
    attr_a = attribute_set_from_rows(terms_a, found, rows, "A", language)
    attr_b = attribute_set_from_rows(terms_b, found, rows, "B", language)
    return Attributes(
        association_axes(association, *attribute_vectors(association, terms_a, terms_b, attr_a, attr_b, language)),
        attr_a,
        attr_b,
    )


def _left_out_rows(excluded: np.ndarray, n: int, hashes: np.ndarray) -> tuple[np.ndarray, int]:
    """Task: the rows among the first ``n`` that the scores leave out (sorted): the ``excluded`` ones and
    every row whose vector ``hashes`` show in an earlier row; and how many of those repeats were not
    excluded anyway."""
    keep = np.ones(n, dtype=bool)
    keep[excluded] = False
    first = first_of_each_vector(hashes)[:n]
    return np.flatnonzero(~(keep & first)), int(np.count_nonzero(~first & keep))


def _found_attrs(attr_a: AttributeSet, attr_b: AttributeSet, n_zero_vectors, n_duplicate_vectors) -> dict:
    """Task: the attributes of :func:`scores` that come from reading the vectors."""
    return dict(
        n_a=len(attr_a.used),
        n_b=len(attr_b.used),
        used_a=attr_a.used,
        used_b=attr_b.used,
        tokens_a=attr_a.tokens,
        tokens_b=attr_b.tokens,
        missing_a=attr_a.missing,
        missing_b=attr_b.missing,
        zero_a=attr_a.zero,
        zero_b=attr_b.zero,
        n_zero_vectors=int(n_zero_vectors),
        n_duplicate_vectors=int(n_duplicate_vectors),
    )


def attribute_vectors(
    association: str, terms_a: list, terms_b: list, attr_a: AttributeSet, attr_b: AttributeSet, language: str
) -> AttributeVectors:
    """The attribute vectors an association is built from: RIPA's aligned pairs (a[i], b[i]) whose two
    words are found and differ, else the two sets as found."""
    if association != "ripa":
        return AttributeVectors(attr_a.vectors, attr_b.vectors)
    if len(terms_a) != len(terms_b):
        raise BiasdaskError(
            f"association 'ripa' pairs the i-th attribute word of A with the i-th of B: A has {len(terms_a)} "
            f"words, B has {len(terms_b)}"
        )
    vec_a, vec_b = dict(zip(attr_a.used, attr_a.vectors)), dict(zip(attr_b.used, attr_b.vectors))
    pairs = [
        (vec_a[x.label], vec_b[y.label])
        for x, y in zip(terms_a, terms_b)
        if x.label in vec_a and y.label in vec_b and not np.array_equal(vec_a[x.label], vec_b[y.label])
    ]
    if not pairs:
        raise MissingWordsError(
            f"association 'ripa': no pair of attribute words (a[i], b[i]) has two distinct usable vectors in "
            f"language {language!r}"
        )
    return AttributeVectors(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))


class PairAxes(NamedTuple):
    """The base pairs of a test whose two words an embedding has, and each one's association axes
    (:func:`pair_axes`)."""

    axes: np.ndarray
    """Shape (k, m, D): pair j's :func:`~biasdask.stats.association.association_axes`, of its words alone."""
    labels: list[str]
    """``he/she``: the pairs in use."""
    dropped: list[str]
    """The pairs left out: a word absent or a zero vector, or (RIPA, SemAxis) two words of one vector."""


def pair_axes(
    association: Association,
    terms_a: Sequence[str | AttributeTerm],
    terms_b: Sequence[str | AttributeTerm],
    attr_a: AttributeSet,
    attr_b: AttributeSet,
) -> PairAxes:
    """The axes of each base pair (a[i], b[i]) whose two words were found (``attr_a``, ``attr_b``: the
    sets :func:`attributes_graph` found), for the items of the pairs' internal consistency."""
    vec_a, vec_b = dict(zip(attr_a.used, attr_a.vectors)), dict(zip(attr_b.used, attr_b.vectors))
    axes, labels, dropped = [], [], []
    for x, y in zip(as_terms(terms_a), as_terms(terms_b)):
        label = f"{x.label}/{y.label}"
        try:
            axes.append(association_axes(association, vec_a[x.label][None], vec_b[y.label][None]))
        except (KeyError, ValueError):
            dropped.append(label)
            continue
        labels.append(label)
    dim = attr_a.vectors.shape[1]
    return PairAxes(np.array(axes) if axes else np.empty((0, 1, dim)), labels, dropped)
