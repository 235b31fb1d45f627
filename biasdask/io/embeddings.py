"""Any embedding a researcher holds, as a Dataset in the store layout.

Every public function that takes an embedding accepts what :func:`as_embeddings` accepts:

- a store URL or path, a :class:`~biasdask.Location` (URL and storage options) or an fsspec mapper
  (opened with :func:`biasdask.open_embeddings`);
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
import fsspec
import numpy as np
import xarray as xr

from biasdask._calls import keyword_api
from biasdask.errors import BiasdaskError, BiasdaskTypeError
from biasdask.io.fs import Location
from biasdask.io.parse import row_norms
from biasdask.io.store import default_chunk_words, open_embeddings, stored_vectors
from biasdask.io.vocabulary import mark_looked_up

__all__ = ["Embeddings", "as_embeddings", "shortest_decimal", "UNDETERMINED"]

#: The language of an in-memory model that names none (ISO 639-2 "undetermined").
UNDETERMINED = "und"

#: The forms of an embedding the public functions accept (see the module docstring).
Embeddings = Union[str, os.PathLike, Location, xr.Dataset, xr.DataArray, Any]  # noqa: UP007  (a runtime alias: "| Any" fails on Python 3.10)


def _is_keyed_vectors(obj: Any) -> bool:
    return hasattr(obj, "index_to_key") and hasattr(obj, "vectors")


@keyword_api("as_embeddings(vectors, words, language=...)")
def as_embeddings(
    vectors: Embeddings,
    words: Sequence[str] | None = None,
    *,
    language: str | None = None,
) -> xr.Dataset:
    """An embedding in any supported form, as a lazy Dataset in the store layout.

    Parameters
    ----------
    vectors
        A store URL or path, :class:`~biasdask.Location` or fsspec mapper, a Dataset in the store layout, a DataArray (``word``, ``dim``), a gensim
        ``KeyedVectors`` (duck-typed on ``index_to_key`` / ``vectors``), or a 2-D numpy or dask array
        of shape (len(words), dim).
    words
        The word of each row, most frequent first, when ``vectors`` is a plain array.
    language
        Language code recorded in ``attrs["language"]`` (used by the ``frequency`` method and in
        messages); default the form's own ``language`` attribute, else ``"und"`` (ISO 639-2:
        undetermined).
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
    if isinstance(vectors, (str, os.PathLike, Location, fsspec.FSMap)):
        ds = open_embeddings(vectors)
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
        mark_looked_up(ds.indexes["word"])  # a notebook looks words up in it again and again: table at once
    return ds


def _from_dataset(ds: xr.Dataset, language: str | None) -> xr.Dataset:
    if "vectors" not in ds.data_vars:
        raise BiasdaskError(
            f"embedding Dataset has no 'vectors' variable (word, dim); it has {sorted(map(str, ds.data_vars))}"
        )
    if "norm" in ds.data_vars and "rank" in ds.coords and ds["vectors"].dims == ("word", "dim"):
        if "word" not in ds.coords and _without_words(ds):
            return ds if language is None else ds.assign_attrs(language=language)
        _check_dims(ds["vectors"], "Dataset variable 'vectors'")
        return ds if language is None else ds.assign_attrs(language=language)
    out = _from_dataarray(ds["vectors"], language if language is not None else ds.attrs.get("language"))
    return out.assign_attrs({**ds.attrs, **out.attrs})


def _without_words(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is a store opened without its words (:func:`biasdask.io.store.open_vectors`)."""
    return stored_vectors(ds["vectors"].data) is not None


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
    norm = lazy.map_blocks(row_norms, drop_axis=1, dtype=np.float32, meta=np.empty((0,), np.float32))
    word = np.asarray(words, dtype=object)
    ds = xr.Dataset(
        {"vectors": (("word", "dim"), v), "norm": (("word",), norm)},
        coords={"word": word, "rank": ("word", np.arange(1, n + 1, dtype=np.int64))},
    )
    ds.attrs.update(language=str(language or UNDETERMINED), n_words=int(n), dim=int(dim), source=f"in-memory {kind}")
    return ds


# 10**k for k = 0..22: exactly representable in float64.
_POW10 = np.array([float(10**k) for k in range(23)])


def _nearest_decimal(x: np.ndarray, half: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, ...]:
    """For positive float32 values ``x`` (as float64) with half rounding intervals ``half``: the
    nearest multiple m * 10**e, whether it lies inside the interval (parses back to x) and whether
    float64 arithmetic cannot tell (a tie or a boundary within a relative 2**-40)."""
    p = _POW10[np.abs(e)]  # exact
    up = e >= 0
    q = np.where(up, x / p, x * p)  # x / 10**e, relative error <= 2**-53
    t = np.where(up, half / p, half * p)
    m = np.rint(q)
    d = np.abs(q - m)
    tol = (q + t + 1) * 2.0**-40
    unsure = (np.abs(d - 0.5) <= tol) | (np.abs(d - t) <= tol)
    return m, (d < t) & ~unsure, unsure


def shortest_decimal(values: Any) -> np.ndarray:
    """float32 values as float64 through their shortest round-trip decimal (as ``repr`` prints them).

    Equal, element for element, to ``np.asarray(values, np.float32).astype(str).astype(np.float64)``
    (numpy's Dragon4, then the correctly rounded parse), vectorised. A value's shortest decimal is
    its nearest multiple m * 10**e for the largest e at which that multiple lies inside its float32
    rounding interval; every smaller e works too (9 significant digits always do), so e is found by
    bisection between the 9th significant digit and above the first. m * 10**e (or m / 10**-e) in
    float64 is then the correctly rounded parse, as m < 2**53 and 10**|e| <= 10**22 are exact.
    Values where float64 arithmetic could misjudge a tie or an interval boundary, powers of two
    (asymmetric interval), zeros, subnormals, non-finite values and magnitudes outside [1e-12,
    1e18] take the string route. Output shape: that of ``values``.

    Examples
    --------
    >>> float(shortest_decimal(np.float32(0.1))), float(np.float64(np.float32(0.1)))
    (0.1, 0.10000000149011612)
    """
    x32 = np.asarray(values, dtype=np.float32)
    flat = x32.ravel()
    with np.errstate(invalid="ignore"):  # casting a signalling NaN
        signed = flat.astype(np.float64)
    out = np.empty(flat.shape, np.float64)
    x = np.abs(signed)
    fast = np.isfinite(x) & (x >= 1e-12) & (x <= 1e18) & ((flat.view(np.uint32) & 0x7FFFFF) != 0)
    idx = np.flatnonzero(fast)
    x, half = x[idx], np.spacing(np.abs(flat[idx])).astype(np.float64) / 2
    top = np.floor(np.log10(x)).astype(np.int64)  # the first digit's exponent, give or take one
    lo, hi = top - 8, top + 3  # the 9th digit works; at 10**hi > 10 x, m = 0 fails
    m, works, unsure = _nearest_decimal(x, half, lo)
    alive = works
    while True:
        act = np.flatnonzero(alive & (hi - lo > 1))
        if act.size == 0:
            break
        mid = (lo[act] + hi[act]) // 2
        m_mid, w, u = _nearest_decimal(x[act], half[act], mid)
        alive[act[u]] = False
        lo[act[w]], m[act[w]] = mid[w], m_mid[w]
        hi[act[~w]] = mid[~w]
    p = _POW10[np.abs(lo[alive])]
    out[idx[alive]] = np.where(lo[alive] >= 0, m[alive] * p, m[alive] / p)
    slow = np.concatenate([np.flatnonzero(~fast), idx[~alive]])
    if slow.size:
        out[slow] = flat[slow].astype(str).astype(np.float64)
    out = np.copysign(out, signed, where=fast, out=out)
    return out.reshape(x32.shape)
