"""Any embedding a researcher holds, as a Dataset in the store layout (SPEC §2).

Every public function that takes an embedding accepts what :func:`as_embeddings` accepts:

- a store URL or path (opened with :func:`biasdask.open_embeddings`);
- an :class:`xarray.Dataset` in the store layout (``vectors`` (word, dim); ``norm`` and ``rank`` may
  be absent and are then derived);
- an :class:`xarray.DataArray` with dims (``word``, ``dim``) and a ``word`` coordinate, numpy- or
  dask-backed: rank is the order along ``word``;
- a gensim ``KeyedVectors`` or anything with ``index_to_key`` and ``vectors`` (gensim itself is not
  needed);
- a numpy or dask array of shape (words, dim) together with ``words``.

Vectors become float32 (as stored) and norms are computed lazily with the same kernel, in the same
order of operations, as ingest: each form gives bit-identical results to the stored form of the same
vectors. Nothing is copied or computed until a test needs it.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from typing import Any, Union

import dask.array as da
import numpy as np
import xarray as xr

from biasdask.errors import BiasdaskError, BiasdaskTypeError

__all__ = ["Embeddings", "as_embeddings"]

#: The language of an in-memory model that names none (ISO 639-2 "undetermined").
UNDETERMINED = "und"

#: The forms of an embedding the public functions accept (see the module docstring).
Embeddings = Union[str, os.PathLike, xr.Dataset, xr.DataArray, Any]


def _is_keyed_vectors(obj: Any) -> bool:
    return hasattr(obj, "index_to_key") and hasattr(obj, "vectors")


def as_embeddings(
    vectors: Embeddings,
    words: Sequence[str] | None = None,
    *,
    language: str | None = None,
    storage_options: dict | None = None,
) -> xr.Dataset:
    """An embedding in any supported form, as a lazy Dataset in the store layout.

    Parameters
    ----------
    vectors
        A store URL or path, a Dataset in the store layout, a DataArray (``word``, ``dim``), a gensim
        ``KeyedVectors`` (duck-typed on ``index_to_key`` / ``vectors``), or a 2-D numpy or dask array
        of shape (len(words), dim).
    words
        The word of each row, most frequent first, when ``vectors`` is a plain array.
    language
        Language code recorded in ``attrs["language"]`` (used by the ``frequency`` method and in
        messages); default the form's own ``language`` attribute, else ``"und"`` (ISO 639-2:
        undetermined).
    storage_options
        fsspec options when ``vectors`` is a URL (flat, or keyed by protocol).

    Returns
    -------
    xarray.Dataset
        ``vectors`` float32 (word, dim), ``norm`` float32 (word), coordinates ``word`` and ``rank``
        (1..N in row order), attrs ``language``, ``n_words``, ``dim``. ``vectors`` keeps the form's
        own backing (numpy arrays are not copied when already float32; dask arrays stay lazy);
        ``norm`` is a lazy dask array.

    Raises
    ------
    BiasdaskError
        (a ``ValueError``) A missing variable or coordinate, a wrong shape, or a word count that does
        not match the rows; the message names what is missing.
    BiasdaskTypeError
        (a ``TypeError``) An object that is no embedding form.

    Examples
    --------
    >>> import numpy as np, biasdask
    >>> emb = biasdask.as_embeddings(np.eye(3), ["he", "she", "doctor"], language="en")
    >>> emb["vectors"].dims, int(emb["rank"][-1])
    (('word', 'dim'), 3)
    """
    if isinstance(vectors, (str, os.PathLike)):
        from biasdask.io.store import open_embeddings

        ds = open_embeddings(os.fspath(vectors), storage_options=storage_options)
        return ds if language is None else ds.assign_attrs(language=language)
    if isinstance(vectors, xr.Dataset):
        return _from_dataset(vectors, language)
    if isinstance(vectors, xr.DataArray) or _is_keyed_vectors(vectors):
        return _cached(vectors, language)
    if isinstance(vectors, (np.ndarray, da.Array)):
        if words is None:
            raise BiasdaskError("as_embeddings: a plain array of vectors needs words= (the word of each row)")
        return _build(vectors, list(words), language, "array")
    raise BiasdaskTypeError(
        f"cannot use a {type(vectors).__module__}.{type(vectors).__qualname__} as an embedding: give a store "
        "URL, an xarray Dataset or DataArray (word, dim), a gensim KeyedVectors, or as_embeddings(array, words)"
    )


# In-memory models wrapped before, by id(): a notebook calls many tests on the same model, and the
# wrapper (lazy, sharing the model's memory) costs more than a small test. An entry is used only while
# the object still holds the same array and is dropped when the object is garbage collected.
_WRAPPED: dict[int, tuple[Any, int, str | None, xr.Dataset]] = {}


def _cached(obj: Any, language: str | None) -> xr.Dataset:
    data = obj.vectors if _is_keyed_vectors(obj) else obj.data
    n = len(obj.index_to_key) if _is_keyed_vectors(obj) else obj.sizes.get("word", -1)
    hit = _WRAPPED.get(id(obj))
    if hit is not None and hit[0] is data and hit[1] == n and hit[2] == language:
        return hit[3]
    if _is_keyed_vectors(obj):
        ds = _build(data, list(obj.index_to_key), language, "KeyedVectors")
    else:
        ds = _from_dataarray(obj, language)
    # Only wrappers that share the model's memory are kept (float32 data): a converted copy would
    # not see later in-place changes to the model.
    if isinstance(data, da.Array) or getattr(data, "dtype", None) == np.float32:
        try:
            weakref.finalize(obj, _WRAPPED.pop, id(obj), None)
        except TypeError:  # not weak-referenceable: no caching
            return ds
        _WRAPPED[id(obj)] = (data, n, language, ds)
    return ds


def _from_dataset(ds: xr.Dataset, language: str | None) -> xr.Dataset:
    if "vectors" not in ds.data_vars:
        raise BiasdaskError(f"embedding Dataset has no 'vectors' variable (word, dim); it has {sorted(map(str, ds.data_vars))}")
    if "norm" in ds.data_vars and "rank" in ds.coords and ds["vectors"].dims == ("word", "dim"):
        _check_dims(ds["vectors"], "Dataset variable 'vectors'")
        return ds if language is None else ds.assign_attrs(language=language)
    out = _from_dataarray(ds["vectors"], language if language is not None else ds.attrs.get("language"))
    return out.assign_attrs({**ds.attrs, **out.attrs})


def _check_dims(arr: xr.DataArray, what: str) -> None:
    if arr.ndim != 2 or set(arr.dims) != {"word", "dim"}:
        raise BiasdaskError(f"{what}: expected dims ('word', 'dim'), got {arr.dims} with shape {arr.shape}")
    if "word" not in arr.coords:
        raise BiasdaskError(f"{what}: no 'word' coordinate (the word of each row)")


def _from_dataarray(arr: xr.DataArray, language: str | None) -> xr.Dataset:
    _check_dims(arr, "embedding DataArray")
    arr = arr.transpose("word", "dim")
    out = _build(arr.data, np.asarray(arr["word"].values), language or arr.attrs.get("language"), "DataArray")
    return out


def _build(vectors: Any, words: Sequence[str] | np.ndarray, language: str | None, kind: str) -> xr.Dataset:
    from biasdask.io.formats import _row_norms
    from biasdask.io.store import default_chunk_words

    if not isinstance(vectors, da.Array):
        vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise BiasdaskError(f"{kind}: vectors must be 2-D (words, dim), got shape {vectors.shape}")
    n, dim = vectors.shape
    if len(words) != n:
        raise BiasdaskError(f"{kind}: {len(words)} words for {n} rows of vectors")
    if not np.issubdtype(vectors.dtype, np.number):
        raise BiasdaskError(f"{kind}: vectors must hold numbers, got dtype {vectors.dtype}")
    chunks = (default_chunk_words(max(1, dim)), -1)
    if isinstance(vectors, da.Array):
        v = vectors.astype(np.float32).rechunk({1: -1})
        lazy = v
    else:
        # numpy data stays numpy (a test reading a few rows indexes it directly); the norms are a
        # lazy graph over chunks of it. name=False: no hashing of the whole array.
        v = vectors.astype(np.float32, copy=False)
        lazy = da.from_array(v, chunks=chunks, name=False)
    norm = lazy.map_blocks(_row_norms, drop_axis=1, dtype=np.float32, meta=np.empty((0,), np.float32))
    word = np.asarray(words, dtype=object)
    ds = xr.Dataset(
        {"vectors": (("word", "dim"), v), "norm": (("word",), norm)},
        coords={"word": word, "rank": ("word", np.arange(1, n + 1, dtype=np.int64))},
    )
    ds.attrs.update(language=str(language or UNDETERMINED), n_words=int(n), dim=int(dim), source=f"in-memory {kind}")
    return ds
