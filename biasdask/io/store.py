"""The embedding store: one Zarr v3 group per language at any fsspec URL.

Layout, as ``xarray.open_zarr(url, consolidated=False)`` shows it:

- ``vectors`` float32 (word, dim), chunked along ``word`` only, compressed with blosc lz4 over
  bit-shuffled values (see :data:`biasdask.io.codecs.VECTOR_COMPRESSORS`; the other arrays use zarr's default compression).
  Stored either as float32 or, when every value is a decimal of at most 4 decimals (fastText's
  ``.vec``), losslessly as scaled integers ``k = 10^4 v`` (int16 when every ``|k| <= 32767``, else
  int32 up to ``|k| < 2^22``) through the ``numcodecs.fixedscaleoffset`` codec, which any zarr reader
  with numcodecs decodes to float32 (attr ``vector_encoding``: ``float32``, ``int16`` or ``int32``;
  ``vector_scale``: 10000 for the integers). The text's ``-0.0000`` parses to float32 ``-0.0``, which an
  integer cannot hold: the array ``negative_zero`` (uint8 (word, ceil(dim / 8)), bits packed along
  ``dim`` by ``numpy.packbits``) marks those values, and :func:`read_chunk` restores them, so that the
  vectors read are bit for bit the float32 parse of the text (a plain zarr read gives ``+0.0`` there, an
  equal number);
- coordinates ``word`` (variable-length UTF-8 strings) and ``rank`` (int64, 1..N in file order);
- ``norm`` float32 (word): the raw L2 length of each vector (0 for zero vectors);
- attrs ``language``, ``source``, ``source_info`` (where the data came from: URL or path, size, and the
  ETag, Last-Modified, modification time or content hash its file system gives), ``ingest`` (how: the
  format asked for, ``max_words``, ``chunk_words``, the compression found), ``format``, ``dim``, ``created``,
  ``biasdask_version``, ``store_id`` (new at every creation), and, once every chunk is written,
  ``n_words``, ``n_duplicates``, ``n_nfc_merged``, ``n_invalid_utf8``, ``n_zero_vectors``,
  ``n_duplicate_vectors`` (words whose vector is bit-identical to an earlier word's), ``fingerprint``
  and last of all the completion marker ``biasdask_complete: true``;
- attrs of every array, once every chunk is written: ``biasdask_store_id`` (the group's ``store_id``)
  and ``biasdask_chunk_crc32c``, the CRC-32C each of its chunks ends with, in chunk order.

Stores are verified, not trusted. Every chunk of every array ends with a CRC-32C checksum (zarr's
``crc32c`` codec) and every chunk is written, even one that equals the fill value, so that
:func:`open_embeddings` can check that all the chunks the arrays' shapes call for exist (zarr itself
reads a missing chunk as fill values) and that the attrs agree with the arrays; the arrays it returns
are read chunk by chunk through :func:`read_chunk`, which fetches a chunk encoded as ingest encodes it
with one request and decodes it with numcodecs (any other through zarr), and names the store and the
chunk of any chunk that is missing, fails its checksum or cannot be decoded.

A chunk is only valid in its place. Its own checksum proves its bytes intact, not that they belong
where they lie: a chunk copied from another store, two chunks swapped, or a ``vectors`` chunk replaced
without its ``norm`` would pass it. So when a store is finished (:func:`finish_store`) the checksum each
chunk ends with is recorded in its array's attrs, in chunk order, with the store's ``store_id``
(the last 4 bytes of each chunk: nothing is read twice), and the store's ``fingerprint`` is a SHA-256
over those records. A reader compares each chunk's checksum with the record of its array at its
index (the array's metadata, which it fetches anyway: no extra request), and :func:`open_embeddings`
checks that every array belongs to the store and that the records give the fingerprint. The norms of
chunk ``k`` are thereby tied to its vectors: both must be the ones that ingest wrote together. Stores
written before these records existed open with a warning naming them: each chunk's checksum is
verified, its place cannot be; ingesting them again records it. :func:`store_identity` reads the
fingerprint and the source of a store from its group metadata alone.

Writers fill whole chunks only (:func:`write_block`), so concurrent writers never touch the same
object. The group's attrs are written first, so that even a store whose writing was killed at once is
recognisably a biasdask store that may be replaced; the marker is written in a single metadata write
after everything else. :func:`open_embeddings` refuses a store without it.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import dask.array as da
import fsspec
import numcodecs
import numpy as np
import pandas as pd
import xarray as xr
import zarr
import zarr.codecs
import zarr.storage

from biasdask._calls import keyword_api
from biasdask._version import __version__
from biasdask.errors import BiasdaskError, BiasdaskOSError, CorruptStoreError, IncompleteStoreError, StoreConflictError
from biasdask.io import zarr_compat
from biasdask.io.codecs import (
    NEGATIVE_ZERO,
    OTHER_COMPRESSORS,
    SCALE,
    VectorEncoding,
    decode_scaled,
    encode_scaled,
    quiet_codecs,
    raw_vectors,
    vector_codecs,
    vector_encoding,
    vlen_find,
)
from biasdask.io.fs import (
    NETWORK_ERRORS,
    Locatable,
    Location,
    as_location,
    display_url,
    files_under,
    redact,
    storage_options_for,
    url_to_fs,
)
from biasdask.io.vocabulary import word_positions

__all__ = [
    "INGEST_ATTR",
    "SOURCE_INFO_ATTR",
    "adopt_copy",
    "check_embeddings",
    "check_language_code",
    "check_replaceable",
    "CHUNK_BYTES",
    "compact_store",
    "COMPLETE_ATTR",
    "default_chunk_words",
    "INGEST_COUNTS",
    "describe_store",
    "embedding_identity",
    "find_words",
    "finish_store",
    "ingest_chunk_words",
    "is_embedding_store",
    "is_local",
    "open_embeddings",
    "open_vectors",
    "prepare_store",
    "read_chunk",
    "read_group_attrs",
    "read_stored_vectors",
    "read_vectors",
    "read_words",
    "remove_store",
    "resize_store",
    "same_language",
    "set_attrs",
    "store_identity",
    "stored_vectors",
    "StoredVectors",
    "StoreDescription",
    "StoreIdentity",
    "vocabulary_files",
    "write_block",
]


COMPLETE_ATTR = "biasdask_complete"
#: group attr: SHA-256 over the records of the chunks of every array (see the module docstring)
FINGERPRINT_ATTR = "fingerprint"
#: group attr: where the store's data came from (:func:`biasdask.io.fs.source_record`)
SOURCE_INFO_ATTR = "source_info"
#: group attr: how it was ingested (the format asked for, ``max_words``, ``chunk_words``, the compression
#: found; :func:`biasdask.engine.ingest.ingest_settings`)
INGEST_ATTR = "ingest"
#: array attrs of a finished store: the ``store_id`` of the store it belongs to, and the CRC-32C each
#: of its chunks ends with, in chunk order
ARRAY_STORE_ATTR = "biasdask_store_id"
ARRAY_CHUNKS_ATTR = "biasdask_chunk_crc32c"
log = logging.getLogger(__name__)
_LANGUAGE_RE = re.compile(r"[a-z]{2,3}([_-][A-Za-z0-9]{2,8})*")
_MAX_LANGUAGE_CODE = 35  # BCP 47's practical maximum; longer codes are typos or attacks
_ARRAYS = ("vectors", "norm", "rank", "word")
#: what reading a store's metadata may raise: zarr's errors on a malformed store, and the network's
_METADATA_ERRORS: tuple[type[Exception], ...] = (KeyError, ValueError, TypeError, *NETWORK_ERRORS)
#: target bytes of one chunk of ``vectors``
CHUNK_BYTES = 2**25
#: every chunk is stored, also one equal to the fill value, so that a missing chunk is an error
# (a cast: mypy reads zarr's NotRequired keys as required for Python 3.10)
_ARRAY_CONFIG = cast(zarr_compat.ArrayConfigParams, {"write_empty_chunks": True})


def check_language_code(code: str) -> str:
    """Return ``code`` if it is a language code that is also a safe path component.

    Accepted: ISO 639 codes of 2-3 lower-case letters, optionally followed by ``-`` or ``_`` and
    subtags of 2-8 letters or digits (``en``, ``pt-BR``, ``zh_Hans``, ``sr-Latn``).

    Raises
    ------
    BiasdaskError
        For anything else (``""``, ``"../x"``, ``"a/b"``, ``"EN"``...).
    """
    if not isinstance(code, str) or len(code) > _MAX_LANGUAGE_CODE or not _LANGUAGE_RE.fullmatch(code):
        raise BiasdaskError(
            f"invalid language code {code if not isinstance(code, str) or len(code) <= 40 else code[:40] + '...'!r}: "
            "expected an ISO 639 code such as 'en' or 'pt-BR' "
            f"(2-3 lower-case letters, optional -subtags of letters and digits, at most {_MAX_LANGUAGE_CODE} characters)"
        )
    return code


def same_language(code: str, stored: str | None) -> bool:
    """Whether a study's language ``code`` may use a store labelled ``stored``: the same code, or a
    variant of it named by a suffix (``en-hard`` for a debiased copy of an ``en`` store, ``en-GB``).

    Examples
    --------
    >>> same_language("en-hard", "en"), same_language("de", "en")
    (True, False)
    """
    return stored is not None and (code == stored or code.startswith(f"{stored}-"))


def default_chunk_words(dim: int) -> int:
    """Words per chunk so that a chunk of float32 vectors is about :data:`CHUNK_BYTES` (32 MiB)."""
    return max(1, CHUNK_BYTES // (4 * dim))


def ingest_chunk_words(dim: int, n_words: int | None) -> int:
    """Words per chunk of a new store of ``n_words`` words: at most :func:`default_chunk_words`, in
    chunks of equal size whose number is even (a multiple of 8 above 8 chunks).

    A chunk is written by one task, so 200,000 x 300 words in 32 MiB chunks (7.15 of them) left one of
    two workers 4 chunks and the other 3.15; as 8 chunks of 25,000 words 2, 4 or 8 workers get equal
    shares. The layout depends on the words only, never on the workers. Without ``n_words`` (a file
    without a header) it is :func:`default_chunk_words`.

    Examples
    --------
    >>> ingest_chunk_words(300, 200_000), ingest_chunk_words(300, 20_000), ingest_chunk_words(300, None)
    (25000, 27962, 27962)
    """
    most = default_chunk_words(dim)
    if not n_words or n_words <= most:
        return most
    n_chunks = -(-n_words // most)
    n_chunks = n_chunks + n_chunks % 2 if n_chunks <= 8 else -(-n_chunks // 8) * 8
    return -(-n_words // n_chunks)


def is_local(url: str) -> bool:
    """Whether ``url`` is a local path (or ``file://``)."""
    return (fsspec.core.split_protocol(str(url))[0] or "file") in ("file", "local")


def _zarr_store(loc: Location, read_only: bool) -> zarr.storage.LocalStore | zarr.storage.FsspecStore:
    if is_local(loc.url):
        return zarr.storage.LocalStore(fsspec.core.strip_protocol(loc.url), read_only=read_only)
    return zarr.storage.FsspecStore.from_url(
        loc.url, storage_options=storage_options_for(loc.url, loc.storage_options), read_only=read_only
    )


def _group(loc: Location, mode: Literal["r", "r+"] = "r+") -> zarr.Group:
    return zarr.open_group(_zarr_store(loc, read_only=mode == "r"), mode=mode, zarr_format=3)


def read_group_attrs(loc: Locatable) -> dict | None:
    """The group attrs of the store at ``loc``; None when there is no Zarr v3 group there."""
    loc = as_location(loc)
    fs, path = url_to_fs(loc)
    try:
        meta = json.loads(fs.cat_file(path.rstrip("/") + "/zarr.json"))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("node_type") != "group":
        return None
    return meta.get("attributes", {})


def is_embedding_store(attrs: dict | None) -> bool:
    """Whether group attrs ``attrs`` are those of a biasdask embedding store (complete or not)."""
    return attrs is not None and all(k in attrs for k in ("biasdask_version", "language", "format", "dim"))


def check_replaceable(loc: Locatable, *, language: str | None = None, overwrite: bool = False) -> None:
    """Raise unless ``loc`` is free: absent, an empty directory, or a biasdask embedding store (of
    ``language``, unless ``overwrite``).

    Raises
    ------
    StoreConflictError
        ``loc`` holds something else, which ingest will not delete; or the store of another language
        than ``language`` and not ``overwrite``.
    """
    loc = as_location(loc)
    fs, path = url_to_fs(loc)
    try:
        if not fs.exists(path) or (fs.isdir(path) and not fs.ls(path)):
            return
        attrs = read_group_attrs(loc)
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(
            f"{display_url(loc.url)}: cannot reach the destination: {redact(' '.join(str(exc).split()))}"
        ) from None
    if attrs is None or not is_embedding_store(attrs):
        raise StoreConflictError(
            f"{display_url(loc.url)} exists and is not a biasdask embedding store: refusing to replace it"
        )
    _check_nothing_else_inside(loc, fs, path)
    if language is not None and not overwrite and attrs["language"] != language:
        raise StoreConflictError(
            f"{display_url(loc.url)} holds the embedding store of language {attrs['language']!r}: refusing to "
            f"replace it with language {language!r} (pass overwrite=True, or --overwrite, to replace it)"
        )


#: what an embedding store's folder holds: its group metadata and its arrays
_STORE_ENTRIES = frozenset({"zarr.json", *_ARRAYS, NEGATIVE_ZERO})


def _check_nothing_else_inside(loc: Location, fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Raise :class:`StoreConflictError` naming the first entry of the store's folder that is not part
    of the store (a results store written into it, a user's file): replacing the store would delete it."""
    root = path.rstrip("/")
    names = sorted(entry.rstrip("/").rsplit("/", 1)[-1] for entry in fs.ls(root, detail=False))
    foreign = [name for name in names if name not in _STORE_ENTRIES and name != root.rsplit("/", 1)[-1]]
    if not foreign:
        return
    inside = loc.join(foreign[0])
    attrs = read_group_attrs(inside) if fs.isdir(f"{root}/{foreign[0]}") else None
    what = "a biasdask results store" if (attrs or {}).get("biasdask_store") == "results" else "not part of the store"
    raise StoreConflictError(
        f"{display_url(inside.url)} lies inside the embedding store {display_url(loc.url)} and is {what}: "
        "refusing to delete it with the store (move it out first)"
    )


def remove_store(loc: Locatable) -> None:
    """Delete the store at ``loc`` (if any)."""
    loc = as_location(loc)
    fs, path = url_to_fs(loc)
    if fs.exists(path):
        fs.rm(path, recursive=True)


@quiet_codecs
def prepare_store(
    loc: Locatable,
    *,
    language: str,
    source: str,
    format: str,
    dim: int,
    chunk_words: int,
    n_words: int = 0,
    vector_encoding: VectorEncoding = "float32",
    source_info: dict | None = None,
) -> None:
    """Replace whatever biasdask store is at ``loc`` by an empty, incomplete one with ``n_words`` rows.

    Parameters
    ----------
    loc
        Destination: a path, URL, :class:`~biasdask.Location` or fsspec mapper.
    language, source, format, dim
        Recorded in the attrs (``source`` must already be free of credentials).
    chunk_words
        Rows per chunk.
    n_words
        Initial number of rows (:func:`resize_store` changes it).
    vector_encoding
        ``float32``, or ``int16``/``int32`` (scaled integers, see the module docstring): then
        :func:`write_block` refuses (:class:`EncodingError`) vectors that do not fit.
    source_info
        Where the data comes from (:func:`biasdask.io.fs.source_record`: URL, size, ETag...), recorded
        as attr ``source_info``.
    """
    loc = as_location(loc)
    check_replaceable(loc)
    remove_store(loc)
    attrs: dict[str, Any] = {
        "language": check_language_code(language),
        "source": source,
        "format": format,
        "dim": int(dim),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "biasdask_version": __version__,
        "store_id": uuid.uuid4().hex,
        "vector_encoding": vector_encoding,
    }
    if source_info is not None:
        attrs[SOURCE_INFO_ATTR] = dict(source_info)
    if vector_encoding != "float32":
        attrs["vector_scale"] = SCALE
    group = zarr.open_group(_zarr_store(loc, read_only=False), mode="w", zarr_format=3, attributes=attrs)
    common: dict[str, Any] = {
        "chunks": (chunk_words,),
        "dimension_names": ("word",),
        "compressors": OTHER_COMPRESSORS,
        "config": _ARRAY_CONFIG,
    }
    # the layout xarray itself writes: NaN fill for floats, rank/norm tied to vectors as coordinates
    group.create_array(
        "vectors",
        shape=(n_words, dim),
        chunks=(chunk_words, dim),
        dtype="float32",
        fill_value=np.nan,
        dimension_names=("word", "dim"),
        attributes={"coordinates": "rank"},
        config=_ARRAY_CONFIG,
        **vector_codecs(vector_encoding),
    )
    if vector_encoding != "float32":
        group.create_array(
            NEGATIVE_ZERO,
            shape=(n_words, -(-dim // 8)),
            chunks=(chunk_words, -(-dim // 8)),
            dtype="uint8",
            fill_value=0,
            dimension_names=("word", "dim_bits"),
            compressors=OTHER_COMPRESSORS,
            config=_ARRAY_CONFIG,
        )
    group.create_array(
        "norm", shape=(n_words,), dtype="float32", fill_value=np.nan, attributes={"coordinates": "rank"}, **common
    )
    group.create_array("rank", shape=(n_words,), dtype="int64", fill_value=0, **common)
    group.create_array("word", shape=(n_words,), dtype=str, **common)


def _array_names(group: zarr.Group) -> tuple[str, ...]:
    """The arrays of a store: :data:`_ARRAYS`, and ``negative_zero`` in a scaled one."""
    return _ARRAYS + ((NEGATIVE_ZERO,) if group.attrs.get("vector_encoding", "float32") != "float32" else ())


@quiet_codecs
def resize_store(loc: Locatable, n_words: int) -> None:
    """Set the number of rows of every array (chunks beyond a smaller size are deleted)."""
    loc = as_location(loc)
    group = _group(loc)
    for name in _array_names(group):
        node = zarr_compat.array(group, name)
        node.resize((n_words,) + node.shape[1:])


@quiet_codecs
def write_block(
    loc: Locatable,
    start: int,
    words: np.ndarray,
    vectors: np.ndarray,
    norms: np.ndarray,
) -> None:
    """Write rows ``[start, start + len(words))``, which must be exactly one chunk of the store.

    A chunk is whole when it has ``chunk_words`` rows, or ends at the current end of the arrays.

    Raises
    ------
    EncodingError
        The store holds scaled integers and ``vectors`` do not fit them (nothing is written then).
    """
    loc = as_location(loc)
    zstore = _zarr_store(loc, read_only=False)
    arrays = {
        name: zarr.open_array(zstore, path=name, mode="r+", zarr_format=3).with_config(_ARRAY_CONFIG)
        for name in _ARRAYS
    }
    encoding = vector_encoding(arrays["vectors"])
    n = len(words)
    chunk = arrays["vectors"].chunks[0]
    size = arrays["vectors"].shape[0]
    if start % chunk or not (n == chunk or (0 < n < chunk and start + n == size)):
        raise ValueError(f"rows [{start}, {start + n}) are not one whole chunk of {chunk} rows of {size}")
    stop = start + n
    if encoding == "float32":
        arrays["vectors"][start:stop] = vectors
    else:
        ints, negative = encode_scaled(vectors, encoding)
        raw_vectors(arrays["vectors"])[start:stop] = ints
        zarr.open_array(zstore, path=NEGATIVE_ZERO, mode="r+", zarr_format=3).with_config(_ARRAY_CONFIG)[start:stop] = (
            negative
        )
    arrays["norm"][start:stop] = norms
    arrays["rank"][start:stop] = np.arange(start + 1, stop + 1, dtype=np.int64)
    arrays["word"][start:stop] = np.asarray(words, dtype=object)


def read_words(loc: Locatable, positions: np.ndarray) -> list[str]:
    """The stored words at the given row positions."""
    loc = as_location(loc)
    if len(positions) == 0:
        return []
    words = zarr_compat.array(_group(loc, mode="r"), "word").get_coordinate_selection(np.asarray(positions))
    return [str(w) for w in np.asarray(words)]


@quiet_codecs
def compact_store(loc: Locatable, drop: np.ndarray) -> int:
    """Remove the rows ``drop`` (sorted positions), shifting the later rows up, in place.

    Output row ``i`` comes from an input row ``>= i``, so rewriting the chunks in increasing order
    never overwrites a row that a later chunk still has to read. The arrays are shrunk before their
    last chunk is written, so that chunk is a whole (edge) chunk like any other.

    Returns
    -------
    int
        How many of the dropped rows had a zero vector.
    """
    loc = as_location(loc)
    drop = np.unique(np.asarray(drop, dtype=np.int64))
    if drop.size == 0:
        return 0
    group = _group(loc)
    stored = {name: zarr_compat.array(group, name) for name in ("vectors", "norm", "word")}
    n_old = stored["vectors"].shape[0]
    chunk = stored["vectors"].chunks[0]
    dropped_zeros = int(np.count_nonzero(np.asarray(stored["norm"].get_coordinate_selection(drop)) == 0))
    n_new = n_old - drop.size
    source = np.delete(np.arange(n_old, dtype=np.int64), drop)
    n_chunks = -(-n_new // chunk)
    resized = False
    for k in range(int(drop[0]) // chunk, n_chunks):
        rows = source[k * chunk : min((k + 1) * chunk, n_new)]
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        pick = rows - lo
        vectors = read_vectors(loc, slice(lo, hi))[pick]
        norms = np.asarray(stored["norm"][lo:hi])[pick]
        words = np.asarray(stored["word"][lo:hi])[pick]
        if k == n_chunks - 1:
            resize_store(loc, n_new)
            resized = True
        write_block(loc, k * chunk, words, vectors, norms)
    if not resized:
        resize_store(loc, n_new)
    return dropped_zeros


def set_attrs(loc: Locatable, attrs: dict) -> None:
    """Add ``attrs`` to the group's attrs (not the completion marker), in one metadata write."""
    loc = as_location(loc)
    _group(loc).update_attributes(attrs)  # attrs.update would write once per key


@quiet_codecs
def finish_store(loc: Locatable, attrs: dict) -> None:
    """Record the checksum of every chunk in its array's attrs (with the store's ``store_id``), then
    add ``attrs``, the ``fingerprint`` over those records and the completion marker to the group's
    attrs, in one final metadata write.

    The checksums are the last 4 bytes of each chunk as stored (zarr's ``crc32c`` codec), read without
    the chunks themselves.

    Raises
    ------
    CorruptStoreError
        A chunk the arrays' shapes call for is missing.
    """
    loc = as_location(loc)
    group = _group(loc)
    store_id = group.attrs.get("store_id")
    fs, path = url_to_fs(loc)
    root = path.rstrip("/")
    fs.invalidate_cache(root)  # chunks written by other processes since this one last listed it
    sizes = {key[len(root) + 1 :]: info["size"] for key, info in fs.find(root, detail=True).items()}
    records = {}
    for name in _array_names(group):
        node = zarr_compat.array(group, name)
        keys = _chunk_keys(name, node)
        missing = [key for key in keys if key not in sizes]
        if missing:
            raise CorruptStoreError(f"{display_url(loc.url)}: chunk {missing[0]} is missing")
        starts = [int(sizes[key]) - 4 for key in keys]
        tails = fs.cat_ranges([f"{root}/{key}" for key in keys], starts, [s + 4 for s in starts]) if keys else []
        records[name] = [int.from_bytes(tail, "little") for tail in tails]
        node.update_attributes({ARRAY_STORE_ATTR: store_id, ARRAY_CHUNKS_ATTR: records[name]})
    arrays = {name: zarr_compat.array(group, name) for name in records}
    fingerprint = _fingerprint({**group.attrs, **attrs}, arrays)
    group.update_attributes({**attrs, FINGERPRINT_ATTR: fingerprint, COMPLETE_ATTR: True})


@quiet_codecs
def adopt_copy(location: Locatable, *, language: str | None = None) -> None:
    """Make a copy of a complete store (its files copied, or linked, elsewhere) a store of its own: a
    new ``store_id`` in the group's and every array's attrs, and the ``language`` given. Its chunks keep
    their records and the store its fingerprint: its contents are the original's.

    Raises
    ------
    CorruptStoreError, IncompleteStoreError, BiasdaskError
        As :func:`open_embeddings`: the copy must verify as a store first.
    """
    loc = as_location(location)
    _verified(loc, None)
    store_id = uuid.uuid4().hex
    group = _group(loc)
    for name in _array_names(group):
        zarr_compat.array(group, name).update_attributes({ARRAY_STORE_ATTR: store_id})
    group.update_attributes(
        {"store_id": store_id, **({"language": check_language_code(language)} if language is not None else {})}
    )


def _chunk_keys(name: str, node: zarr.Array) -> list[str]:
    """The keys of every chunk of array ``name`` (chunked along its first axis only)."""
    tail = "/0" if node.ndim == 2 else ""
    return [f"{name}/c/{k}{tail}" for k in range(-(-node.shape[0] // node.chunks[0]))]


def _fingerprint(attrs: dict, arrays: dict[str, zarr.Array]) -> str:
    """SHA-256 over each array's shape, chunk shape and chunk checksums, and the vectors' encoding: the
    same for the same stored values (a store ingested twice from one file), different for any other."""
    body = {
        "vector_encoding": attrs.get("vector_encoding", "float32"),
        "vector_scale": attrs.get("vector_scale"),
        "arrays": {
            name: {
                "shape": list(node.shape),
                "chunks": list(node.chunks),
                "crc32c": node.attrs.get(ARRAY_CHUNKS_ATTR),
            }
            for name, node in sorted(arrays.items())
        },
    }
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@quiet_codecs
def check_embeddings(loc: Locatable, language: str | None = None) -> dict:
    """Verify an embedding store without reading its data; return its attrs.

    What :func:`open_embeddings` checks before it reads the words: a biasdask store, complete, of
    ``language``, its attrs fitting its arrays, every chunk present. (Chunks' checksums are verified
    when they are read.) ``biasdask.run`` verifies every store of a study this way, as it opens it
    without its words (:func:`open_vectors`), before anything runs.

    Raises
    ------
    IncompleteStoreError, CorruptStoreError, BiasdaskError
        As :func:`open_embeddings`.
    """
    loc = as_location(loc)
    return _verified(loc, language)[0]


@dataclasses.dataclass(frozen=True)
class StoreIdentity:
    """Which embedding store, with which contents, a reader reads (:func:`store_identity`).

    Attributes
    ----------
    url
        The store's URL, without credentials.
    language
        Its ``language`` attr.
    fingerprint
        SHA-256 over the checksums of all its chunks as written (``"sha256:<hex>"``): equal for equal
        contents (one file ingested twice the same way), different after any change of the stored
        values; None for a store written before biasdask recorded it.
    store_id
        New at every creation (any ingest, even of the same file; debias, align).
    created
        When it was created (ISO 8601, UTC).
    n_words
        Its number of words.
    source
        Where its data came from (``url``, and where known ``size``, ``etag``, ``last_modified``,
        ``mtime``), as ingest recorded it; ``{"url": <attr source>}`` for an older store.
    """

    url: str
    language: str
    fingerprint: str | None
    store_id: str | None
    created: str | None
    n_words: int
    source: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (to record beside what was computed from the store)."""
        return dataclasses.asdict(self)


def store_identity(location: Locatable, *, language: str | None = None) -> StoreIdentity:
    """The identity of the complete embedding store at ``location``, read from its group metadata
    alone (one request): its ``fingerprint``, ``store_id`` and source (:class:`StoreIdentity`).

    The fingerprint is written by :func:`finish_store` and checked against the chunks' records by
    :func:`open_embeddings`, whose readers check every chunk against those records: what a reader of
    the store computed came from exactly the store with this fingerprint. Stable across re-opening;
    any re-ingest, debias or overwrite that changes a stored value changes it (and always ``store_id``).

    Raises
    ------
    IncompleteStoreError, BiasdaskError
        As :func:`open_embeddings`: no embedding store there, an incomplete one, another language.

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/identity/tiny.vec", "w") as f:
    ...     _ = f.write("2 3\\nhe 0.1 0.2 0.3\\nshe 0.3 0.2 0.1\\n")
    >>> _ = biasdask.ingest("memory://examples/identity/tiny.vec", "memory://examples/identity/en.zarr",
    ...                     language="en", progress=False)
    >>> identity = store_identity("memory://examples/identity/en.zarr")
    >>> identity.fingerprint[:7], identity.source["url"], identity.source["size"]
    ('sha256:', 'memory://examples/identity/tiny.vec', 35)
    """
    loc = as_location(location)
    return _identity(loc, _complete_attrs(loc, language))


def embedding_identity(emb: xr.Dataset) -> StoreIdentity | None:
    """The identity of the store an opened embedding reads its vectors from (:func:`open_embeddings`,
    :func:`open_vectors`), from the attrs it was opened with (no request); None for an embedding held in
    memory.

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/opened/tiny.vec", "w") as f:
    ...     _ = f.write("2 3\\nhe 0.1 0.2 0.3\\nshe 0.3 0.2 0.1\\n")
    >>> _ = biasdask.ingest("memory://examples/opened/tiny.vec", "memory://examples/opened/en.zarr",
    ...                     language="en", progress=False)
    >>> emb = biasdask.open_embeddings("memory://examples/opened/en.zarr")
    >>> embedding_identity(emb) == store_identity("memory://examples/opened/en.zarr")
    True
    >>> embedding_identity(emb.load()) is None
    True
    """
    stored = stored_vectors(emb["vectors"].data)
    return None if stored is None else _identity(stored.location, emb.attrs)


#: what ingest counts of its input, as attrs of the store, and their names: words repeated (the first
#: kept), of which spellings NFC normalisation merged, words with invalid UTF-8 (decoded with replacement
#: characters), zero vectors, words whose vector repeats an earlier word's bit for bit
INGEST_COUNTS = {
    "n_duplicates": "repeated words dropped",
    "n_nfc_merged": "NFC-merged spellings",
    "n_invalid_utf8": "words with invalid UTF-8",
    "n_zero_vectors": "zero vectors",
    "n_duplicate_vectors": "words repeating a vector",
}


@dataclasses.dataclass(frozen=True)
class StoreDescription:
    """An embedding store's identity and provenance as it records them (:func:`describe_store`;
    ``biasdask info`` prints it).

    Attributes
    ----------
    identity
        Which store, with which contents: URL, language, words, fingerprint, ``store_id``, when it was
        created, and its source as recorded (``url`` without credentials, ``size``, and whichever of
        ``etag``, ``last_modified``, ``mtime`` and content hashes its file system gave)
        (:class:`StoreIdentity`).
    complete
        Whether its writing finished (an incomplete store is refused by every reader).
    dim
        Dimensions of its vectors.
    format
        The format of the file it was read from (``vec``, ``glove``, ``word2vec-binary``; ``debias``,
        ``align`` for a store made from another).
    vector_encoding
        How its vectors are stored: ``float32``, or ``int16``/``int32`` scaled integers (lossless for
        text of at most 4 decimals).
    chunk_words, n_chunks
        Words per chunk and number of chunks of its vectors (None where its metadata cannot be read).
    biasdask_version
        The version of biasdask that wrote it.
    ingest
        How it was ingested, as recorded (attr ``ingest``: the format asked for, ``max_words``,
        ``chunk_words``, the compression found); empty when the store records none.
    counts
        What ingest counted of its input (:data:`INGEST_COUNTS`), where recorded.
    """

    identity: StoreIdentity
    complete: bool
    dim: int
    format: str
    vector_encoding: str
    chunk_words: int | None
    n_chunks: int | None
    biasdask_version: str | None
    ingest: dict[str, Any]
    counts: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (the identity's fields first, flat)."""
        out = self.identity.as_dict()
        out.update({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "identity"})
        return out


#: what reading a store's array metadata may raise, which :func:`describe_store` shows without
_DESCRIBE_ERRORS: tuple[type[Exception], ...] = (*_METADATA_ERRORS, CorruptStoreError)


@quiet_codecs
def describe_store(location: Locatable) -> StoreDescription:
    """The identity and provenance of the embedding store at ``location`` (complete or not), from its
    metadata alone: its group's attrs and its vectors' array metadata (no chunk is read).

    Raises
    ------
    BiasdaskError
        Nothing at ``location``, or something that is no biasdask embedding store (naming it).
    BiasdaskOSError
        The store cannot be read (the network, permissions), naming it.

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/describe/tiny.vec", "w") as f:
    ...     _ = f.write("2 3\\nhe 0.1 0.2 0.3\\nshe 0.3 0.2 0.1\\n")
    >>> _ = biasdask.ingest("memory://examples/describe/tiny.vec", "memory://examples/describe/en.zarr",
    ...                     language="en", progress=False)
    >>> info = describe_store("memory://examples/describe/en.zarr")
    >>> info.identity.n_words, info.dim, info.vector_encoding, info.n_chunks, info.identity.source["size"]
    (2, 3, 'int16', 1, 35)
    """
    loc = as_location(location)
    shown = display_url(loc.url)
    try:
        fs, path = url_to_fs(loc)
        attrs = read_group_attrs(loc)
        present = attrs is not None or fs.exists(path)
    except NETWORK_ERRORS as exc:
        raise BiasdaskOSError(f"{shown}: cannot read the store: {redact(' '.join(str(exc).split()))}") from None
    if not present:
        raise BiasdaskError(f"{shown}: no such store (nothing there)")
    if attrs is None or not is_embedding_store(attrs):
        raise BiasdaskError(f"{shown}: not a biasdask embedding store (no embedding store's attrs in its zarr.json)")
    chunk_words = n_chunks = None
    try:
        vectors = zarr_compat.array(_group(loc, mode="r"), "vectors")
        chunk_words, n_chunks = int(vectors.chunks[0]), -(-int(vectors.shape[0]) // int(vectors.chunks[0]))
    except _DESCRIBE_ERRORS:
        pass  # an incomplete or damaged store: the rest is still worth showing
    ingest = attrs.get(INGEST_ATTR)
    return StoreDescription(
        identity=_identity(loc, attrs),
        complete=attrs.get(COMPLETE_ATTR) is True,
        dim=int(attrs["dim"]),
        format=str(attrs["format"]),
        vector_encoding=str(attrs.get("vector_encoding", "float32")),
        chunk_words=chunk_words,
        n_chunks=n_chunks,
        biasdask_version=attrs.get("biasdask_version"),
        ingest=dict(ingest) if isinstance(ingest, dict) else {},
        counts={key: int(attrs[key]) for key in INGEST_COUNTS if isinstance(attrs.get(key), int)},
    )


def _identity(loc: Location, attrs: Mapping[str, Any]) -> StoreIdentity:
    """:class:`StoreIdentity` of the store at ``loc`` from its group ``attrs``."""
    source = attrs.get(SOURCE_INFO_ATTR)
    return StoreIdentity(
        url=display_url(loc.url),
        language=str(attrs.get("language")),
        fingerprint=attrs.get(FINGERPRINT_ATTR),
        store_id=attrs.get("store_id"),
        created=attrs.get("created"),
        n_words=int(attrs.get("n_words", 0)),
        source=dict(source) if isinstance(source, dict) else {"url": attrs.get("source")},
    )


def _complete_attrs(loc: Location, language: str | None) -> dict:
    """The group attrs of the complete embedding store (of ``language``) at ``loc``."""
    shown = display_url(loc.url)
    try:
        attrs = read_group_attrs(loc)
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(f"{shown}: cannot read the store: {redact(' '.join(str(exc).split()))}") from None
    if attrs is None or not is_embedding_store(attrs):
        raise BiasdaskError(f"{shown}: no biasdask embedding store there")
    if attrs.get(COMPLETE_ATTR) is not True:
        raise IncompleteStoreError(
            f"{shown}: incomplete embedding store (its ingest was interrupted or failed); "
            "run biasdask ingest again to replace it"
        )
    if language is not None and not same_language(language, attrs.get("language")):
        raise BiasdaskError(f"{shown}: the store holds language {attrs.get('language')!r}, not {language!r}")
    return attrs


def _verified(loc: Location, language: str | None) -> tuple[dict, dict[str, zarr.Array]]:
    shown = display_url(loc.url)
    attrs = _complete_attrs(loc, language)
    try:
        group = _group(loc, mode="r")
        arrays = {name: zarr_compat.array(group, name) for name in _array_names(group)}
    except _METADATA_ERRORS as exc:
        raise CorruptStoreError(f"{shown}: unreadable store metadata: {redact(' '.join(str(exc).split()))}") from None
    _check_layout(loc, attrs, arrays)
    _check_records(loc, attrs, arrays)
    return attrs, arrays


# stores without chunk records already named in this process (one warning each)
_UNRECORDED: set[tuple[str, str]] = set()


def _check_records(loc: Location, attrs: dict, arrays: dict[str, zarr.Array]) -> None:
    """Raise :class:`CorruptStoreError` unless every array records the checksums of all its chunks as
    written for this store (``store_id``) and those records give the store's ``fingerprint``; warn
    (once) of a store written before such records existed, whose chunks' places cannot be verified."""
    shown = display_url(loc.url)
    recorded = {name: node.attrs.get(ARRAY_CHUNKS_ATTR) for name, node in arrays.items()}
    if all(record is None for record in recorded.values()) and FINGERPRINT_ATTR not in attrs:
        key = (shown, str(attrs.get("store_id")))
        if key not in _UNRECORDED:
            _UNRECORDED.add(key)
            log.warning(
                "%s: written by biasdask %s, which kept no record of its chunks: each chunk's checksum is "
                "verified, not that it lies in its place; ingest the store again to have that checked",
                shown,
                attrs.get("biasdask_version"),
            )
        return
    for name, node in arrays.items():
        record, owner = recorded[name], node.attrs.get(ARRAY_STORE_ATTR)
        if record is None or owner != attrs.get("store_id"):
            raise CorruptStoreError(
                f"{shown}: array {name} was not written with this store (it has "
                f"{'no record of its chunks' if record is None else f'the records of store {owner}'}); "
                "ingest the store again"
            )
        if not isinstance(record, list) or len(record) != len(_chunk_keys(name, node)):
            raise CorruptStoreError(f"{shown}: array {name}: its record of chunks does not fit its shape")
    if _fingerprint(attrs, arrays) != attrs.get(FINGERPRINT_ATTR):
        raise CorruptStoreError(
            f"{shown}: the records of the chunks disagree with attr {FINGERPRINT_ATTR}; ingest the store again"
        )


@quiet_codecs
@keyword_api("open_embeddings(location, language=...)")
def open_embeddings(location: Locatable, *, language: str | None = None) -> xr.Dataset:
    """Open a complete embedding store, verified, as a dask-backed :class:`xarray.Dataset`.

    Parameters
    ----------
    location
        Path or fsspec URL of the store (``file://``, ``s3://``, ``gs://``, ``memory://``...), a
        :class:`~biasdask.Location` (URL and storage options) or an fsspec mapper.
    language
        The language the caller expects; a store of another language is refused.

    Returns
    -------
    xarray.Dataset
        ``vectors`` (word, dim), ``norm`` (word), coordinates ``word`` and ``rank``, the store's attrs;
        chunked as stored. ``vectors``, ``norm`` and ``rank`` are read lazily, chunk by chunk, by
        :func:`read_chunk` (checksums verified).

    Raises
    ------
    IncompleteStoreError
        The store has no completion marker (its ingest was interrupted or failed).
    CorruptStoreError
        A chunk is missing or fails its checksum, or the attrs disagree with the arrays.
    BiasdaskError
        There is no embedding store at ``loc``, or it holds another language than ``language``.

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/open/tiny.vec", "w") as f:
    ...     _ = f.write("2 3\\nhe 0.1 0.2 0.3\\nshe 0.3 0.2 0.1\\n")
    >>> _ = biasdask.ingest("memory://examples/open/tiny.vec", "memory://examples/open/en.zarr", language="en",
    ...                     progress=False)
    >>> emb = biasdask.open_embeddings("memory://examples/open/en.zarr", language="en")
    >>> emb["word"].values.tolist(), emb["rank"].values.tolist()
    (['he', 'she'], [1, 2])
    """
    return _open(as_location(location), language, with_words=True)


@quiet_codecs
def open_vectors(location: Locatable, *, language: str | None = None) -> xr.Dataset:
    """:func:`open_embeddings` without the words: the ``word`` dimension has no coordinate, so nothing
    per word is read or held here (a study's client finds the words it needs by :func:`find_words`, in
    a task). Verified as :func:`open_embeddings` verifies."""
    return _open(as_location(location), language, with_words=False)


@quiet_codecs
def find_words(location: Locatable, words: Sequence[str]) -> np.ndarray:
    """Row of each of ``words`` in the store (its first occurrence), -1 where absent: the store's words
    are searched here (a task on a worker, for a client that holds no vocabulary), checksums verified,
    without making a ``str`` of each (:func:`biasdask.io.codecs.vlen_find`).

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/find/tiny.vec", "w") as f:
    ...     _ = f.write("2 3\\nhe 0.1 0.2 0.3\\nshe 0.3 0.2 0.1\\n")
    >>> _ = biasdask.ingest("memory://examples/find/tiny.vec", "memory://examples/find/en.zarr", language="en",
    ...                     progress=False)
    >>> find_words("memory://examples/find/en.zarr", ["she", "it", "he"]).tolist()
    [1, -1, 0]
    """
    loc = as_location(location)
    _, arrays = _verified(loc, None)
    array, words = arrays["word"], list(words)
    n = array.shape[0]
    if not _ingest_encoded(array):
        return word_positions(pd.Index(_read_words(loc, array), dtype=object), words).astype(np.int64)
    rows = vlen_find((payload for _, payload in _word_payloads(loc, array)), words)
    return np.where(rows < n, rows, -1)  # not the last chunk's padding


def _open(loc: Location, language: str | None, with_words: bool) -> xr.Dataset:
    attrs, arrays = _verified(loc, language)
    shown = display_url(loc.url)
    loc = loc.absolute()  # workers may run in another directory
    n, dim = arrays["vectors"].shape
    chunk = arrays["vectors"].chunks[0]
    sizes = tuple(min(chunk, n - s) for s in range(0, n, chunk))

    def lazy(name: str, dtype, extra: tuple[int, ...]) -> da.Array:
        # the token names the store, its creation time and the array, so graphs of one store share keys
        identity = f"{shown} {attrs.get('created')} {attrs.get('store_id')}"
        token = f"{name}-{uuid.uuid5(uuid.NAMESPACE_URL, identity)}"
        return da.map_blocks(
            _read_block,
            loc,
            name,
            chunk,
            dtype=dtype,
            chunks=(sizes, *((e,) for e in extra)),
            name=token,
            meta=np.empty((0,) * (1 + len(extra)), dtype=dtype),
        )

    rank = lazy("rank", np.int64, ())
    vectors = lazy("vectors", np.float32, (dim,))
    _STORED[vectors.name] = StoredVectors(loc, chunk, n)
    coords: dict[str, Any] = {"rank": ("word", rank)}
    if with_words:
        coords["word"] = _read_words(loc, arrays["word"])
    return xr.Dataset(
        {"vectors": (("word", "dim"), vectors), "norm": ("word", lazy("norm", np.float32, ()))},
        coords=coords,
        attrs=dict(attrs),
    )


#: how ingest encodes the words (zarr 3 codec names, in order); such chunks are decoded here directly
_WORD_CODECS = ("vlen-utf8", "zstd", "crc32c")


def _ingest_encoded(array: zarr.Array) -> bool:
    """Whether a ``word`` array's chunks are encoded as ingest encodes them (:data:`_WORD_CODECS`)."""
    return tuple(c["name"] for c in _codecs(array)) == _WORD_CODECS


def _codecs(array: zarr.Array) -> list[dict]:
    """The codecs of ``array``, in order, as zarr 3 metadata (``name``, ``configuration``)."""
    return [c.to_dict() for c in zarr_compat.v3_metadata(array).codecs]


def _read_words(loc: Location, array: zarr.Array) -> np.ndarray:
    """Every word of the store (an object array of ``str``), checksums verified.

    Chunks encoded as ingest encodes them are fetched together (``fs.cat``: concurrently on object
    stores) and decoded by numcodecs straight into ``str`` objects, without zarr's read into numpy's
    ``StringDType`` and the conversion back. Any other encoding is read through zarr.
    """
    n, chunk = array.shape[0], array.chunks[0]
    words = np.empty(n, dtype=object)
    if not _ingest_encoded(array):
        for index, start in enumerate(range(0, n, chunk)):
            words[start : start + chunk] = _read_chunk(loc, array, "word", index).astype(object)
        return words
    decode = numcodecs.VLenUTF8().decode
    for start, payload in _word_payloads(loc, array):
        words[start : start + chunk] = decode(payload)[: n - start]
    return words


def _word_payloads(loc: Location, array: zarr.Array) -> Iterator[tuple[int, bytes]]:
    """(first row, the chunk's ``VLenUTF8`` bytes) of each chunk of a ``word`` array encoded as ingest
    encodes it, fetched together, checksums verified (and compared with the array's record) and
    decompressed."""
    n, chunk = array.shape[0], array.chunks[0]
    record = array.attrs.get(ARRAY_CHUNKS_ATTR)
    fs, path = url_to_fs(loc)
    keys = [f"word/c/{k}" for k in range(-(-n // chunk))]
    paths = [fs._strip_protocol(f"{path.rstrip('/')}/{key}") for key in keys]
    fetched = fs.cat(paths, on_error="return") if paths else {}  # keyed by path, in sorted order
    for index, (key, where) in enumerate(zip(keys, paths)):
        try:
            data = fetched.get(where, FileNotFoundError(where))
            if isinstance(data, Exception):
                raise data
            payload = cast(bytes, _unpacked(data, "zstd"))  # no buffer given: new bytes
        except Exception as exc:  # noqa: BLE001 - named as _read_verified names it
            raise _chunk_error(loc.url, key, exc) from None
        _check_place(loc.url, key, data, record, index)
        yield index * chunk, payload


def vocabulary_files(loc: Locatable, n: int) -> Iterator[tuple[str, bytes]]:
    """The stored ``word`` array of the store at ``loc`` cut to its first ``n`` words, as files: its
    metadata (``"zarr.json"``, the shape set to ``n``) and its encoded chunks (``"c/<k>"``), bytes
    unchanged, checksums included. Written under another group's ``word/``, they make an array that
    reads back the store's first ``n`` words (a shorter array reads only the start of its last chunk),
    without decoding and encoding millions of strings.

    Raises
    ------
    CorruptStoreError
        Naming the store and the chunk key when a chunk is missing or is not the one recorded in its
        place (its checksum is verified by whoever reads the copy).
    """
    loc = as_location(loc)
    fs, path = url_to_fs(loc)
    root = path.rstrip("/") + "/word"
    meta = json.loads(fs.cat_file(root + "/zarr.json"))
    meta["shape"] = [n]
    attributes = meta.get("attributes") or {}
    record = attributes.get(ARRAY_CHUNKS_ATTR)
    # the copy is another array (fewer rows, another store): the records of this one are not its own
    meta["attributes"] = {k: v for k, v in attributes.items() if k not in (ARRAY_CHUNKS_ATTR, ARRAY_STORE_ATTR)}
    yield "zarr.json", json.dumps(meta, indent=2).encode()
    chunk = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
    for index in range(-(-n // chunk)):
        data = _fetch(loc, f"word/c/{index}")
        _check_place(loc.url, f"word/c/{index}", data, record, index)
        yield f"c/{index}", data


@dataclasses.dataclass(frozen=True)
class StoredVectors:
    """Where the lazy ``vectors`` of :func:`open_embeddings` come from: chunk ``k`` of the array holds
    rows ``[k * chunk, min((k + 1) * chunk, n_words))`` of the store at ``location``."""

    location: Location
    chunk: int
    n_words: int


# the dask names of the lazy vectors that open_embeddings made, in this process
_STORED: dict[str, StoredVectors] = {}


def stored_vectors(array) -> StoredVectors | None:
    """The store behind ``array`` when it is exactly the lazy ``vectors`` of :func:`open_embeddings`
    (all rows, as opened), for readers that decode the stored chunks themselves; else None."""
    return _STORED.get(str(array.name)) if isinstance(array, da.Array) else None


def _check_layout(loc: Location, attrs: dict, arrays: dict) -> None:
    """Raise :class:`CorruptStoreError` unless the attrs fit the arrays and every chunk exists."""
    shown = display_url(loc.url)
    n_words, dim = attrs.get("n_words"), attrs.get("dim")
    for name, node in arrays.items():
        if node.shape[0] != n_words:
            raise CorruptStoreError(f"{shown}: array {name} has {node.shape[0]} rows but attr n_words is {n_words}")
    if arrays["vectors"].shape[1:] != (dim,):
        raise CorruptStoreError(
            f"{shown}: array vectors has {arrays['vectors'].shape[1:]} columns but attr dim is {dim}"
        )
    encoding = vector_encoding(arrays["vectors"])
    if attrs.get("vector_encoding", "float32") != encoding:
        raise CorruptStoreError(
            f"{shown}: attr vector_encoding is {attrs.get('vector_encoding')!r} but array vectors is stored as {encoding}"
        )
    fs, path = url_to_fs(loc)
    root = path.rstrip("/")
    try:
        present = {key[len(root) + 1 :] for key in files_under(fs, root)}
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(f"{shown}: cannot list the store: {redact(' '.join(str(exc).split()))}") from None
    for name, node in arrays.items():
        n_chunks = -(-node.shape[0] // node.chunks[0])
        tail = "/0" if node.ndim == 2 else ""
        for k in range(n_chunks):
            if f"{name}/c/{k}{tail}" not in present:
                raise CorruptStoreError(f"{shown}: chunk {name}/c/{k}{tail} is missing (rows {k * node.chunks[0]}...)")


def _read_verified(loc: Location, array: zarr.Array, name: str, rows: slice) -> np.ndarray:
    try:
        return np.asarray(array[rows])
    except Exception as exc:  # noqa: BLE001 - checksum, codec and storage errors alike name the chunk
        key = f"{name}/c/{rows.start // array.chunks[0]}" + ("/0" if array.ndim == 2 else "")
        raise _chunk_error(loc.url, key, exc) from None


def _chunk_error(url: str, key: str, exc: Exception) -> CorruptStoreError:
    """The one-line error for chunk ``key`` of the store at ``loc`` that could not be read."""
    if isinstance(exc, FileNotFoundError):
        reason = "it is missing"
    elif "checksum" in str(exc):
        reason = "its bytes fail their CRC-32C checksum (the chunk is corrupt)"
    else:
        reason = f"it cannot be read: {redact(' '.join(f'{type(exc).__name__}: {exc}'.split()))}"
    return CorruptStoreError(f"{display_url(url)}: chunk {key}: {reason}")


def _read_block(loc: Location, name: str, chunk: int, block_info=None) -> np.ndarray:
    start = block_info[None]["array-location"][0][0]
    return read_chunk(loc, name, start // chunk)


def read_chunk(loc: Locatable, name: str, index: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Chunk ``index`` of array ``name`` of the store at ``loc``, checksum verified; only its ``rows``
    (positions within the chunk) when given.

    ``vectors`` are float32 whatever the store's encoding: scaled integers are decoded (and their
    negative zeros restored), bit for bit the values that were written; with ``rows``, only those
    rows are decoded.

    Raises
    ------
    CorruptStoreError
        Naming the store and the chunk key when the chunk is missing, fails its checksum or cannot be
        decoded.
    """
    loc = as_location(loc)
    if name == "vectors":
        # a few rows are copied out at once (fancy indexing), so the chunk may be in the reused buffer
        stored, negative = read_stored_vectors(loc, index, reuse=rows is not None)
        if rows is not None:
            stored, negative = stored[rows], None if negative is None else negative[rows]
        return _decoded(stored, negative)
    values = _read_chunk(loc, _open_named(loc, name), name, index)
    return values if rows is None else values[rows]


def read_stored_vectors(
    loc: Locatable, index: int, reuse: bool = False, negative_zeros: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """Chunk ``index`` of ``vectors`` as stored, checksum verified: float32, or the integers of a scaled
    store (``float32(k * 1e-4)``, see :func:`decode_scaled`) with their packed negative-zero bits.

    With ``reuse``, the values may be decoded into a buffer that the calling thread reuses: they are
    valid until its next such call (for a reader that consumes each chunk at once). Without
    ``negative_zeros``, the negative-zero bits are not read (None), for a reader to which -0.0 and 0.0
    are alike (a dot product).

    Raises
    ------
    CorruptStoreError
        As :func:`read_chunk`.
    """
    loc = as_location(loc)
    array = _open_named(loc, "vectors")
    stored = array if vector_encoding(array) == "float32" else raw_vectors(array)
    values = _read_chunk(loc, stored, "vectors", index, _reused_buffer(stored) if reuse else None)
    if stored is array or not negative_zeros:
        return values, None
    return values, _read_chunk(loc, _open_named(loc, NEGATIVE_ZERO), NEGATIVE_ZERO, index)


#: the compressors of the chunks ingest writes (after a ``bytes`` codec, before ``crc32c``), which
#: :func:`_read_chunk` decodes itself
_DECOMPRESSORS = {"blosc": numcodecs.blosc.decompress, "zstd": numcodecs.zstd.decompress}
_REUSED = threading.local()


def _reused_buffer(array: zarr.Array) -> np.ndarray:
    """This thread's reused buffer, at least one chunk of ``array`` long.

    zarr decodes each chunk into a new array: for a 32 MiB chunk the fresh pages cost more than the
    decompression into a buffer that is already mapped.
    """
    nbytes = int(np.prod(array.chunks)) * array.dtype.itemsize
    buffer = getattr(_REUSED, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:  # the largest chunk yet (stores of other shapes share it)
        buffer = _REUSED.buffer = np.empty(nbytes, dtype=np.uint8)
    return buffer[:nbytes]


def _read_chunk(
    loc: Location, array: zarr.Array, name: str, index: int, buffer: np.ndarray | None = None
) -> np.ndarray:
    """The rows of chunk ``index`` of ``array`` (array ``name`` of the store), checksum verified, and
    compared with the array's record of the chunk written there (when it has one).

    A chunk encoded as ingest encodes it (``bytes`` in this machine's byte order, blosc or zstd,
    ``crc32c``; or the words' ``vlen-utf8``, zstd, ``crc32c``) is fetched with one request and decoded
    here by numcodecs, numbers into ``buffer`` (bytes, one chunk long) when given, rather than through
    zarr, whose event loop the chunk's metadata, existence and bytes would each cross. Any other encoding
    is read through zarr.
    """
    codecs = _codecs(array)
    names = tuple(c["name"] for c in codecs)
    words = names == _WORD_CODECS
    direct = (
        len(names) == 3
        and names[0] == "bytes"
        and names[1] in _DECOMPRESSORS
        and names[2] == "crc32c"
        and (array.dtype.itemsize == 1 or (codecs[0].get("configuration") or {}).get("endian") == sys.byteorder)
    )
    key = f"{name}/c/{index}" + ("/0" if array.ndim == 2 else "")
    rows = _chunk_rows(array, index)
    record = array.attrs.get(ARRAY_CHUNKS_ATTR)
    if not (direct or words):
        if record is None:
            if not zarr_compat.run(array.store_path.store.exists(key)):
                raise CorruptStoreError(f"{display_url(loc.url)}: chunk {key} is missing")
        else:
            _check_place(loc.url, key, _fetch(loc, key), record, index)
        return _read_verified(loc, array, name, rows)
    data = _fetch(loc, key)
    try:
        if words:
            values = numcodecs.VLenUTF8().decode(_unpacked(data, "zstd"))
        else:
            shape: tuple[int, ...] = array.chunks
            if buffer is None:
                buffer = np.empty(int(np.prod(shape)) * array.dtype.itemsize, dtype=np.uint8)
            _unpacked(data, names[1], buffer)
            values = buffer.view(array.dtype).reshape(shape)
    except Exception as exc:  # noqa: BLE001 - named as _read_verified names it
        raise _chunk_error(loc.url, key, exc) from None
    _check_place(loc.url, key, data, record, index)
    return values[: rows.stop - rows.start]


def _fetch(loc: Location, key: str) -> bytes:
    """The stored bytes of chunk ``key`` of the store at ``loc`` (one request)."""
    fs, path = url_to_fs(loc)
    try:
        return fs.cat_file(f"{path.rstrip('/')}/{key}")
    except FileNotFoundError:
        raise CorruptStoreError(f"{display_url(loc.url)}: chunk {key} is missing") from None
    except Exception as exc:  # noqa: BLE001 - named as _read_verified names it
        raise _chunk_error(loc.url, key, exc) from None


def _check_place(url: str, key: str, data: bytes, record: object, index: int) -> None:
    """Raise unless the checksum that chunk ``data`` ends with is the one recorded for chunk ``index``
    of its array (``record``: the array's attr; nothing to compare in a store written before such
    records, which :func:`open_embeddings` named)."""
    if not isinstance(record, list):
        return
    if index >= len(record) or int.from_bytes(bytes(data[-4:]), "little") != record[index]:
        raise CorruptStoreError(
            f"{display_url(url)}: chunk {key}: not the chunk written in this place (one copied from another "
            "store, or moved within this one); ingest the store again"
        )


def _unpacked(data: bytes, compressor: str, out: np.ndarray | None = None) -> bytes | np.ndarray:
    """The bytes of a stored chunk ``data`` (ending with its CRC-32C), checksum verified and
    decompressed by ``compressor`` (a key of :data:`_DECOMPRESSORS`), into ``out`` when given."""
    return _DECOMPRESSORS[compressor](numcodecs.CRC32C().decode(data), out)


@quiet_codecs
def read_vectors(loc: Locatable, rows: slice) -> np.ndarray:
    """Rows ``[rows.start, rows.stop)`` of ``vectors`` as float32, bit for bit as written (any encoding)."""
    loc = as_location(loc)
    group = _group(loc, mode="r")
    vectors = zarr_compat.array(group, "vectors")
    if vector_encoding(vectors) == "float32":
        return _read_verified(loc, vectors, "vectors", rows)
    stored = _read_verified(loc, raw_vectors(vectors), "vectors", rows)
    negative = _read_verified(loc, zarr_compat.array(group, NEGATIVE_ZERO), NEGATIVE_ZERO, rows)
    return _decoded(stored, negative)


def _decoded(stored: np.ndarray, negative: np.ndarray | None) -> np.ndarray:
    if negative is None:
        return stored
    out = np.empty(stored.shape, dtype=np.float32)
    decode_scaled(stored, out)
    if negative.any():
        out[np.unpackbits(negative, axis=1, count=stored.shape[1]).view(bool)] = np.float32(-0.0)
    return out


@quiet_codecs
def _open_named(loc: Location, name: str) -> zarr.Array:
    """Array ``name`` of the store at ``loc``, read only; an error naming it if it cannot be opened."""
    try:
        return _open_array(loc, name)
    except Exception as exc:  # noqa: BLE001
        raise CorruptStoreError(f"{display_url(loc.url)}: array {name} cannot be opened: {redact(str(exc))}") from None


# arrays opened by chunk readers in this process, with the metadata bytes they were opened from
_OPENED: dict[tuple[str, str, str], tuple[bytes, zarr.Array]] = {}
_OPENED_MAX = 64


def _open_array(loc: Location, name: str) -> zarr.Array:
    """Array ``name`` of the store at ``loc``, read only. Its metadata is read every time (one request),
    but parsed (codecs built) only when its bytes changed: a chunk reader opens two arrays per chunk."""
    fs, path = url_to_fs(loc)
    try:
        raw = fs.cat_file(f"{path.rstrip('/')}/{name}/zarr.json")
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}/zarr.json") from None
    key = (loc.url, json.dumps(loc.storage_options, sort_keys=True, default=str), name)
    hit = _OPENED.get(key)
    if hit is not None and hit[0] == raw:
        return hit[1]
    array = zarr.open_array(_zarr_store(loc, read_only=True), path=name, mode="r", zarr_format=3)
    if len(_OPENED) >= _OPENED_MAX:
        _OPENED.clear()
    _OPENED[key] = (raw, array)
    return array


def _chunk_rows(array: zarr.Array, index: int) -> slice:
    chunk = array.chunks[0]
    return slice(index * chunk, min((index + 1) * chunk, array.shape[0]))
