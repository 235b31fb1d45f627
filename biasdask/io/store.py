"""The embedding store (SPEC §2): one Zarr v3 group per language at any fsspec URL.

Layout, as ``xarray.open_zarr(url, consolidated=False)`` shows it:

- ``vectors`` float32 (word, dim), chunked along ``word`` only, compressed with blosc lz4 over
  bit-shuffled floats (see :data:`VECTOR_COMPRESSORS`; the other arrays use zarr's default compression);
- coordinates ``word`` (variable-length UTF-8 strings) and ``rank`` (int64, 1..N in file order);
- ``norm`` float32 (word): the raw L2 length of each vector (0 for zero vectors);
- attrs ``language``, ``source``, ``format``, ``dim``, ``created``, ``biasdask_version``, and, once
  every chunk is written, ``n_words``, ``n_duplicates``, ``n_invalid_utf8``, ``n_zero_vectors``,
  ``n_duplicate_vectors`` (words whose vector is bit-identical to an earlier word's) and last of all the
  completion marker ``biasdask_complete: true``.

Writers fill whole chunks only (:func:`write_block`), so concurrent writers never touch the same
object. The group's attrs are written first, so that even a store whose writing was killed at once is
recognisably a biasdask store that may be replaced; the marker is written in a single metadata write
after everything else. :func:`open_embeddings` refuses a store without it.
"""

from __future__ import annotations

import datetime
import json
import re

import fsspec
import numpy as np
import xarray as xr
import zarr
import zarr.codecs
import zarr.storage

from biasdask._version import __version__
from biasdask.errors import BiasdaskError, IncompleteStoreError, StoreConflictError
from biasdask.io.formats import NETWORK_ERRORS, display_url, storage_options_for

COMPLETE_ATTR = "biasdask_complete"
_LANGUAGE_RE = re.compile(r"[a-z]{2,3}([_-][A-Za-z0-9]{2,8})*")
_ARRAYS = ("vectors", "norm", "rank", "word")
#: target bytes of one chunk of ``vectors``
CHUNK_BYTES = 2**25
#: compression of ``vectors``: embedding floats hardly compress, and reading (decoding) the store is
#: the whole cost of the scores. On GloVe 840B vectors blosc lz4 over bit-shuffled floats keeps 87 %
#: of the bytes (zstd level 1: 93 %, level 3: 92 %) and a 500,000 x 300 store is read 13 % faster
#: than with zstd level 1.
VECTOR_COMPRESSORS = (zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=4),)


def check_language_code(code: str) -> str:
    """Return ``code`` if it is a language code that is also a safe path component.

    Accepted: ISO 639 codes of 2-3 lower-case letters, optionally followed by ``-`` or ``_`` and
    subtags of 2-8 letters or digits (``en``, ``pt-BR``, ``zh_Hans``, ``sr-Latn``).

    Raises
    ------
    BiasdaskError
        For anything else (``""``, ``"../x"``, ``"a/b"``, ``"EN"``...).
    """
    if not isinstance(code, str) or not _LANGUAGE_RE.fullmatch(code):
        raise BiasdaskError(
            f"invalid language code {code!r}: expected an ISO 639 code such as 'en' or 'pt-BR' "
            "(2-3 lower-case letters, optional -subtags of letters and digits)"
        )
    return code


def default_chunk_words(dim: int) -> int:
    """Words per chunk so that a chunk of float32 vectors is about :data:`CHUNK_BYTES` (32 MiB)."""
    return max(1, CHUNK_BYTES // (4 * dim))


def _is_local(url: str) -> bool:
    return (fsspec.core.split_protocol(str(url))[0] or "file") in ("file", "local")


def _zarr_store(url: str, storage_options: dict | None, read_only: bool) -> zarr.storage.StoreLike:
    if _is_local(url):
        return zarr.storage.LocalStore(fsspec.core.strip_protocol(str(url)), read_only=read_only)
    return zarr.storage.FsspecStore.from_url(
        str(url), storage_options=storage_options_for(url, storage_options), read_only=read_only
    )


def _group(url: str, storage_options: dict | None, mode: str = "r+") -> zarr.Group:
    return zarr.open_group(_zarr_store(url, storage_options, read_only=mode == "r"), mode=mode, zarr_format=3)


def _fs(url: str, storage_options: dict | None) -> tuple[fsspec.AbstractFileSystem, str]:
    return fsspec.core.url_to_fs(str(url), **storage_options_for(url, storage_options))


def _read_group_attrs(url: str, storage_options: dict | None) -> dict | None:
    """The group attrs of the store at ``url``; None when there is no Zarr v3 group there."""
    fs, path = _fs(url, storage_options)
    try:
        meta = json.loads(fs.cat_file(path.rstrip("/") + "/zarr.json"))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("node_type") != "group":
        return None
    return meta.get("attributes", {})


def _is_embedding_store(attrs: dict | None) -> bool:
    return bool(attrs) and all(k in attrs for k in ("biasdask_version", "language", "format", "dim"))


def check_replaceable(url: str, storage_options: dict | None = None) -> None:
    """Raise unless ``url`` is free: absent, an empty directory, or a biasdask embedding store.

    Raises
    ------
    StoreConflictError
        ``url`` holds something else, which ingest will not delete.
    """
    fs, path = _fs(url, storage_options)
    try:
        if not fs.exists(path) or (fs.isdir(path) and not fs.ls(path)):
            return
        attrs = _read_group_attrs(url, storage_options)
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(f"{display_url(url)}: cannot reach the destination: {' '.join(str(exc).split())}") from None
    if not _is_embedding_store(attrs):
        raise StoreConflictError(
            f"{display_url(url)} exists and is not a biasdask embedding store: refusing to replace it"
        )


def remove_store(url: str, storage_options: dict | None = None) -> None:
    """Delete the store at ``url`` (if any)."""
    fs, path = _fs(url, storage_options)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def prepare_store(
    url: str,
    storage_options: dict | None,
    *,
    language: str,
    source: str,
    format: str,
    dim: int,
    chunk_words: int,
    n_words: int = 0,
) -> None:
    """Replace whatever biasdask store is at ``url`` by an empty, incomplete one with ``n_words`` rows.

    Parameters
    ----------
    url, storage_options
        Destination.
    language, source, format, dim
        Recorded in the attrs (``source`` must already be free of credentials).
    chunk_words
        Rows per chunk.
    n_words
        Initial number of rows (:func:`resize_store` changes it).
    """
    check_replaceable(url, storage_options)
    remove_store(url, storage_options)
    attrs = {
        "language": check_language_code(language),
        "source": source,
        "format": format,
        "dim": int(dim),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "biasdask_version": __version__,
    }
    group = zarr.open_group(_zarr_store(url, storage_options, read_only=False), mode="w", zarr_format=3, attributes=attrs)
    common = {"chunks": (chunk_words,), "dimension_names": ("word",)}
    # the layout xarray itself writes: NaN fill for floats, rank/norm tied to vectors as coordinates
    group.create_array(
        "vectors",
        shape=(n_words, dim),
        chunks=(chunk_words, dim),
        dtype="float32",
        fill_value=np.nan,
        dimension_names=("word", "dim"),
        attributes={"coordinates": "rank"},
        compressors=VECTOR_COMPRESSORS,
    )
    group.create_array("norm", shape=(n_words,), dtype="float32", fill_value=np.nan, attributes={"coordinates": "rank"}, **common)
    group.create_array("rank", shape=(n_words,), dtype="int64", fill_value=0, **common)
    group.create_array("word", shape=(n_words,), dtype=str, **common)


def resize_store(url: str, storage_options: dict | None, n_words: int) -> None:
    """Set the number of rows of every array (chunks beyond a smaller size are deleted)."""
    group = _group(url, storage_options)
    for name in _ARRAYS:
        array = group[name]
        array.resize((n_words,) + array.shape[1:])


def write_block(
    url: str,
    storage_options: dict | None,
    start: int,
    words: np.ndarray,
    vectors: np.ndarray,
    norms: np.ndarray,
) -> None:
    """Write rows ``[start, start + len(words))``, which must be exactly one chunk of the store.

    A chunk is whole when it has ``chunk_words`` rows, or ends at the current end of the arrays.
    """
    zstore = _zarr_store(url, storage_options, read_only=False)
    arrays = {name: zarr.open_array(zstore, path=name, mode="r+", zarr_format=3) for name in _ARRAYS}
    n = len(words)
    chunk = arrays["vectors"].chunks[0]
    size = arrays["vectors"].shape[0]
    if start % chunk or not (n == chunk or (0 < n < chunk and start + n == size)):
        raise ValueError(f"rows [{start}, {start + n}) are not one whole chunk of {chunk} rows of {size}")
    stop = start + n
    arrays["vectors"][start:stop] = vectors
    arrays["norm"][start:stop] = norms
    arrays["rank"][start:stop] = np.arange(start + 1, stop + 1, dtype=np.int64)
    arrays["word"][start:stop] = np.asarray(words, dtype=object)


def read_words(url: str, storage_options: dict | None, positions: np.ndarray) -> list[str]:
    """The stored words at the given row positions."""
    if len(positions) == 0:
        return []
    words = _group(url, storage_options, mode="r")["word"].get_coordinate_selection(np.asarray(positions))
    return [str(w) for w in words]


def compact_store(url: str, storage_options: dict | None, drop: np.ndarray) -> int:
    """Remove the rows ``drop`` (sorted positions), shifting the later rows up, in place.

    Output row ``i`` comes from an input row ``>= i``, so rewriting the chunks in increasing order
    never overwrites a row that a later chunk still has to read. The arrays are shrunk before their
    last chunk is written, so that chunk is a whole (edge) chunk like any other.

    Returns
    -------
    int
        How many of the dropped rows had a zero vector.
    """
    drop = np.unique(np.asarray(drop, dtype=np.int64))
    if drop.size == 0:
        return 0
    group = _group(url, storage_options)
    n_old = group["vectors"].shape[0]
    chunk = group["vectors"].chunks[0]
    dropped_zeros = int(np.count_nonzero(group["norm"].get_coordinate_selection(drop) == 0))
    n_new = n_old - drop.size
    source = np.delete(np.arange(n_old, dtype=np.int64), drop)
    n_chunks = -(-n_new // chunk)
    resized = False
    for k in range(int(drop[0]) // chunk, n_chunks):
        rows = source[k * chunk : min((k + 1) * chunk, n_new)]
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        pick = rows - lo
        vectors = group["vectors"][lo:hi][pick]
        norms = group["norm"][lo:hi][pick]
        words = group["word"][lo:hi][pick]
        if k == n_chunks - 1:
            resize_store(url, storage_options, n_new)
            resized = True
        write_block(url, storage_options, k * chunk, words, vectors, norms)
    if not resized:
        resize_store(url, storage_options, n_new)
    return dropped_zeros


def finish_store(url: str, storage_options: dict | None, attrs: dict) -> None:
    """Add ``attrs`` and the completion marker to the group's attrs, in one final metadata write."""
    group = _group(url, storage_options)
    group.attrs.update({**attrs, COMPLETE_ATTR: True})


def open_embeddings(url: str, storage_options: dict | None = None) -> xr.Dataset:
    """Open a complete embedding store as a dask-backed :class:`xarray.Dataset`.

    Parameters
    ----------
    url
        Path or fsspec URL of the store (``file://``, ``s3://``, ``gs://``, ``memory://``...).
    storage_options
        fsspec options for object stores (flat, or keyed by protocol).

    Returns
    -------
    xarray.Dataset
        ``vectors`` (word, dim), ``norm`` (word), coordinates ``word`` and ``rank``, the store's attrs;
        chunked as stored.

    Raises
    ------
    IncompleteStoreError
        The store has no completion marker (its ingest was interrupted or failed).
    BiasdaskError
        There is no embedding store at ``url``.
    """
    attrs = _read_group_attrs(url, storage_options)
    shown = display_url(url)
    if not _is_embedding_store(attrs):
        raise BiasdaskError(f"{shown}: no biasdask embedding store there")
    if attrs.get(COMPLETE_ATTR) is not True:
        raise IncompleteStoreError(
            f"{shown}: incomplete embedding store (its ingest was interrupted or failed); "
            "run biasdask ingest again to replace it"
        )
    return xr.open_zarr(_zarr_store(url, storage_options, read_only=True), consolidated=False, chunks={})
