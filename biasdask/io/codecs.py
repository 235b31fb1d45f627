"""How a store encodes its vectors: blosc lz4 over bit-shuffled float32, or fastText's 4-decimal values
losslessly as scaled integers (int16, else int32) with their negative zeros kept apart, every chunk
ending with a CRC-32C checksum (see :mod:`biasdask.io.store` for the layout); and how words are found
in an encoded vocabulary chunk without decoding it (:func:`vlen_find`).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import warnings
from collections.abc import Iterable, Sequence
from typing import Literal

import numba
import numcodecs
import numpy as np
import zarr
import zarr.codecs
from zarr.codecs.numcodecs import FixedScaleOffset

from biasdask.io import zarr_compat

__all__ = [
    "ENCODING_LIMITS",
    "NEGATIVE_ZERO",
    "OTHER_COMPRESSORS",
    "SCALE",
    "VECTOR_COMPRESSORS",
    "decode_scaled",
    "encode_scaled",
    "EncodingError",
    "fitting_encoding",
    "quiet_codecs",
    "raw_vectors",
    "vector_codecs",
    "vector_encoding",
    "VectorEncoding",
    "vlen_find",
]


#: compression of ``vectors``: embedding floats hardly compress, and reading (decoding) the store is
#: the whole cost of the scores: blosc lz4 over bit-shuffled floats keeps fewer bytes than zstd and
#: reads faster (the figures on GloVe 840B vectors are in docs/benchmarks.md).
VECTOR_COMPRESSORS = (
    zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=4),
    zarr.codecs.Crc32cCodec(),
)
#: compression of the other arrays: zarr's default (zstd) followed by the checksum
OTHER_COMPRESSORS = (zarr.codecs.ZstdCodec(level=0), zarr.codecs.Crc32cCodec())

#: how a store holds its vectors: scaled integers (narrowest first), or float32
VectorEncoding = Literal["int16", "int32", "float32"]
#: the integer encodings store ``k = SCALE * v`` (4 decimals)
SCALE = 10_000
#: the largest ``|k|`` of each integer encoding. For int32 it is below 2^22, where ``float32(k / 10^4)``
#: (the codec's decoding) equals ``float32(k * 1e-4)`` (the fast reader's) and ``rint(10^4 v)`` gives
#: ``k`` back from ``v = float32(k / 10^4)`` (both checked for every such k by the tests)
ENCODING_LIMITS = {"int16": 2**15 - 1, "int32": 2**22 - 1}
_INT_TYPES: dict[str, type[np.integer]] = {"int16": np.int16, "int32": np.int32}
NEGATIVE_ZERO = "negative_zero"
_CODEC_WARNING = "Numcodecs codecs are not in the Zarr version 3 specification"


_quiet_lock = threading.Lock()
_quiet: dict = {"depth": 0, "context": None}


def quiet_codecs(fn):
    """Silence zarr's warning that numcodecs' codecs are not in the core Zarr v3 spec (zarr-python, the
    reader biasdask and xarray use, reads them) while ``fn`` opens or creates arrays.

    Calls in several threads at once share one ``warnings.catch_warnings`` context, entered by the first
    and left by the last: each with its own, one leaving restored the filters without the silencing
    while another still opened stores (``catch_warnings`` is not thread-safe), and the warning reached
    the user."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _quiet_lock:
            if _quiet["depth"] == 0:
                _quiet["context"] = warnings.catch_warnings()
                _quiet["context"].__enter__()
                warnings.filterwarnings("ignore", message=_CODEC_WARNING)
            _quiet["depth"] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _quiet_lock:
                _quiet["depth"] -= 1
                if _quiet["depth"] == 0:
                    _quiet["context"].__exit__(None, None, None)

    return wrapper


class EncodingError(ValueError):
    """A block's vectors do not fit the store's integer encoding; ``needed`` is the narrowest that fits."""

    def __init__(self, message: str, needed: VectorEncoding):
        super().__init__(message)
        self.needed = needed

    def __reduce__(self):  # raised on workers: the client gets ``needed`` too
        return type(self), (str(self), self.needed)


def vector_codecs(encoding: VectorEncoding) -> dict:
    """The filters and compressors of a ``vectors`` array in ``encoding`` (arguments of ``zarr.create_array``)."""
    if encoding == "float32":
        return {"compressors": VECTOR_COMPRESSORS}
    np_type = np.dtype(_INT_TYPES[encoding]).newbyteorder("<")
    return {
        "filters": (FixedScaleOffset(offset=0, scale=SCALE, dtype="<f4", astype=np_type.str),),
        "compressors": (
            zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=np_type.itemsize),
            zarr.codecs.Crc32cCodec(),
        ),
    }


def vector_encoding(array: zarr.Array) -> VectorEncoding:
    """The encoding of a store's ``vectors`` array, from its codecs."""
    first = zarr_compat.v3_metadata(array).codecs[0]
    if isinstance(first, FixedScaleOffset):
        return "int16" if np.dtype(str(first.codec_config["astype"])).itemsize == 2 else "int32"
    return "float32"


def raw_vectors(array: zarr.Array) -> zarr.Array:
    """The integers of a scaled ``vectors`` array as stored (zarr's pipeline without the scaling: the
    blosc decompression and the CRC-32C check stay zarr's)."""
    meta = zarr_compat.v3_metadata(array)
    dtype = zarr_compat.integer_dtype(_INT_TYPES[vector_encoding(array)])
    raw = dataclasses.replace(meta, data_type=dtype, codecs=meta.codecs[1:], fill_value=dtype.cast_scalar(0))
    return zarr_compat.with_metadata(array, raw)


@numba.njit(nogil=True, cache=True)
def _encode_scaled(vectors, limit, ints, negative):
    """``ints = rint(10^4 v)`` where ``float32(ints * 1e-4)`` gives back every ``v`` bit for bit (a
    ``-0.0`` is marked in ``negative``). Returns (status, the largest |k|): status 0 when every value
    fits, 1 when some |k| exceeds ``limit`` (but the values are 4-decimal ones), 2 otherwise."""
    n, d = vectors.shape
    bits = vectors.view(np.uint32)
    largest = 0.0
    exact = True
    for i in range(n):
        for j in range(d):
            v = vectors[i, j]
            x = np.float64(v) * 10000.0
            if not (abs(x) < 2147483647.0):  # also NaN
                x = 0.0
                exact = False
            k = np.rint(x)  # -0.0 for -0.0, stored as 0 and marked
            exact &= np.float32(k * 1e-4) == v
            largest = max(largest, abs(k))
            ints[i, j] = np.int32(k)
            negative[i, j] = bits[i, j] == np.uint32(0x80000000)
    if not exact:
        return 2, np.int64(largest)
    return (1 if largest > limit else 0), np.int64(largest)


@numba.njit(nogil=True, cache=True)
def decode_scaled(ints, out):
    """``out = float32(ints * 1e-4)`` (what the fixedscaleoffset codec gives, without its float64 array)."""
    n, d = ints.shape
    for i in range(n):
        for j in range(d):
            out[i, j] = np.float32(np.float64(ints[i, j]) * 1e-4)


def encode_scaled(vectors: np.ndarray, encoding: VectorEncoding) -> tuple[np.ndarray, np.ndarray]:
    """The integers and the packed negative-zero bits that store ``vectors`` losslessly in ``encoding``.

    Raises
    ------
    EncodingError
        Some value is not a decimal of at most 4 decimals within the encoding's range; ``needed``
        names the narrowest encoding that holds the block.
    """
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ints = np.empty(vectors.shape, dtype=_INT_TYPES[encoding])
    negative = np.empty(vectors.shape, dtype=np.bool_)
    status, largest = _encode_scaled(vectors, ENCODING_LIMITS[encoding], ints, negative)
    if status:
        needed: VectorEncoding = "float32" if status == 2 or largest > ENCODING_LIMITS["int32"] else "int32"
        raise EncodingError(f"the vectors do not fit {encoding} (they need {needed})", needed)
    return ints, np.packbits(negative, axis=1)


def fitting_encoding(vectors: np.ndarray) -> VectorEncoding:
    """The narrowest encoding that stores ``vectors`` losslessly."""
    try:
        encode_scaled(vectors, "int16")
    except EncodingError as exc:
        return exc.needed
    return "int16"


@numba.njit(nogil=True, cache=True)
def _vlen_hashes(buf):
    """Start (of its length field) and 64-bit FNV-1a hash of each item of a numcodecs ``VLenUTF8``
    buffer: a little-endian uint32 count, then per item a little-endian uint32 length and its bytes."""
    n = np.int64(buf[0]) | (np.int64(buf[1]) << 8) | (np.int64(buf[2]) << 16) | (np.int64(buf[3]) << 24)
    starts = np.empty(n, dtype=np.int64)
    hashes = np.empty(n, dtype=np.uint64)
    at = np.int64(4)
    for i in range(n):
        size = np.int64(buf[at]) | (np.int64(buf[at + 1]) << 8) | (np.int64(buf[at + 2]) << 16)
        size |= np.int64(buf[at + 3]) << 24
        h = np.uint64(0xCBF29CE484222325)
        for j in range(at + 4, at + 4 + size):
            h = (h ^ np.uint64(buf[j])) * np.uint64(0x100000001B3)
        starts[i] = at
        hashes[i] = h
        at += 4 + size
    return starts, hashes


def vlen_find(payloads: Iterable[bytes], words: Sequence[str]) -> np.ndarray:
    """Index of the first item equal to each of ``words`` among the items of numcodecs ``VLenUTF8``
    buffers taken one after another, -1 where absent: the items are hashed where they lie and only the
    candidates compared, so a vocabulary is searched without making a ``str`` of every word.

    Examples
    --------
    >>> import numcodecs
    >>> chunks = [numcodecs.VLenUTF8().encode(c) for c in (["he", "she"], ["it", "he"])]
    >>> vlen_find(chunks, ["he", "it", "they"]).tolist()
    [0, 2, -1]
    """
    out = np.full(len(words), -1, dtype=np.int64)
    wanted: dict[bytes, list[int]] = {}  # the words' bytes as stored -> their places in ``words``
    texts: list[str] = []
    for k, word in enumerate(words):
        try:
            key = word.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: never stored
            continue
        if key not in wanted:
            texts.append(word)
        wanted.setdefault(key, []).append(k)
    if not wanted:
        return out
    encoded = numcodecs.VLenUTF8().encode(np.array(texts, dtype=object))
    hashes_wanted = _vlen_hashes(np.frombuffer(encoded, dtype=np.uint8))[1]
    first = 0
    for payload in payloads:
        starts, hashes = _vlen_hashes(np.frombuffer(payload, dtype=np.uint8))
        for i in np.flatnonzero(np.isin(hashes, hashes_wanted)):
            at = int(starts[i])
            size = int.from_bytes(payload[at : at + 4], "little")
            for k in wanted.get(bytes(payload[at + 4 : at + 4 + size]), ()):
                if out[k] < 0:
                    out[k] = first + i
        first += len(starts)
    return out
