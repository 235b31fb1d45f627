"""Readers of embedding files: fastText/word2vec text, GloVe text and word2vec binary, plain or compressed.

Three layouts are understood (``format`` names as stored in the embedding store's attrs):

``vec``
    word2vec/fastText text: a header line ``N D``, then one line per word: the word, a space, and
    ``D`` decimal values separated by single spaces (fastText ends each line with a space).
``glove``
    The same lines without a header; ``D`` is read from the first line.
``word2vec-binary``
    The header line ``N D``, then per word: its bytes, a space and ``D`` little-endian float32 (the C
    tool adds a newline after each vector, gensim does not; both are read).

Any of them may be gzip-, bz2- or xz-compressed (detected by the magic bytes, whatever the name; zstd,
zip, 7-Zip and lz4 are refused in one line naming them) and may live at any
fsspec URL (local path, ``http(s)://``, ``s3://``, ``gs://``...). Files are read as streams of pieces
(:data:`PIECE_BYTES`), never whole.

Lines are split on ``b"\\n"`` only and fields on ``b" "`` only, because real vocabularies hold tokens
with ``"``, a leading ``#``, ``NA``, ``\\xa0``, ``\\x85``, ``\\u2028`` or ``\\x0b`` that ``str.split()``,
``splitlines()`` or CSV readers mangle. Trailing ASCII whitespace of a line (fastText's trailing space,
a Windows ``\\r``) is ignored, as gensim's ``line.rstrip()`` does. Words are decoded as UTF-8 with
``errors="replace"``, and the lines that needed it are counted.

The byte-level parser is compiled with numba: it reads decimal numbers by hand (sign, digits, ``.``,
exponent) into the correctly rounded float64 and rounds that to float32, which is exactly what gensim's
``np.float32(token)`` gives. The rare token outside the exact fast path (more than 19 significant
digits, or a decimal exponent beyond 22) is re-read with Python's ``float``. ``nan``/``inf`` tokens and
values out of float32 range are errors, as is anything else that is not a number.
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import gzip
import lzma
import mmap
import os
import re
import unicodedata
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from typing import IO, cast

import fsspec
import numba
import numpy as np

from biasdask.errors import BiasdaskError, InputFormatError

FORMATS = ("vec", "glove", "word2vec-binary")
#: bytes read from a stream at a time (decompressed bytes for gzip)
PIECE_BYTES = 8 * 2**20
_SNIFF_BYTES = 2**20
_MAX_UNIT_BYTES = 64 * 2**20
_WHITESPACE = b" \t\r\n\x0b\x0c"
#: leading bytes of the compressed formats read as streams (Python's gzip, bz2 and lzma modules)
_COMPRESSIONS: dict[str, bytes] = {"gzip": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}
#: leading bytes of containers and compressions that are refused, with what to do instead
_UNSUPPORTED: dict[bytes, str] = {
    b"\x28\xb5\x2f\xfd": "zstd-compressed",
    b"PK\x03\x04": "a zip archive",
    b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
    b"\x04\x22\x4d\x18": "lz4-compressed",
}
_MAGIC_BYTES = 6
_BOM = b"\xef\xbb\xbf"
_NO_OPTION_PROTOCOLS = {"file", "local", "memory", "http", "https"}
_HEADER_RE = re.compile(rb"^[ \t]*(\d+)[ \t]+(\d+)[ \t\r\x0b\x0c]*$")
_SIGNED_HEADER_RE = re.compile(rb"^[ \t]*([+-]?\d+)[ \t]+([+-]?\d+)[ \t\r\x0b\x0c]*$")

# status codes of the compiled kernels
_OK = 0
_MISSING = 1  # the data ended before the requested number of lines/records
_FIELDS = 2  # wrong number of fields on a line
_NOT_NUMBER = 3
_NOT_FINITE = 4
_SLOW_FULL = 5  # the buffer of tokens to re-read in Python is full
_WORD_NEWLINE = 6  # a binary record's word holds a newline


def _network_errors() -> tuple[type[Exception], ...]:
    errors: list[type[Exception]] = [OSError]
    with contextlib.suppress(ImportError):
        import botocore.exceptions

        errors.append(botocore.exceptions.BotoCoreError)
    with contextlib.suppress(ImportError):
        import aiohttp

        errors.append(aiohttp.ClientError)
    return tuple(errors)


#: exceptions of storage and network layers, reported as one-line errors naming the URL
NETWORK_ERRORS = _network_errors()

_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)
_NEG_POW10 = np.array([float(f"1e-{i}") for i in range(9)], dtype=np.float64)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


# --------------------------------------------------------------------------------------------------
# URLs and storage options


def display_url(url: str) -> str:
    """Return ``url`` without user name, password, query string or fragment (which may hold secrets)."""
    parts = urllib.parse.urlsplit(str(url))
    if not parts.scheme or len(parts.scheme) == 1:  # a local path (or a Windows drive letter)
        return str(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def location_key(url: str) -> str:
    """A comparable form of a store location: a local path made absolute (``file://`` stripped), a URL
    with its scheme lower-cased; no trailing ``/``. ``a`` lies inside ``b`` when
    ``location_key(a).startswith(location_key(b) + "/")``.

    Examples
    --------
    >>> location_key("S3://bucket/emb/en.zarr/")
    's3://bucket/emb/en.zarr'
    """
    url = str(url)
    if url.startswith("file://"):
        url = url[len("file://") :]
    scheme, sep, rest = url.partition("://")
    if sep and len(scheme) > 1:
        return f"{scheme.lower()}://{rest.rstrip('/')}"
    return os.path.abspath(os.path.expanduser(url))


_URL_USERINFO_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")
_URL_QUERY_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
_SECRET_PARAM_RE = re.compile(
    r"(?<![\w-])((?:X-Amz-[A-Za-z-]+|AWSAccessKeyId|Signature|sig|se|sp|sv|sr|st|skoid|sktid|token|access_token|key)=)[^&\s'\"]+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Return ``text`` with the secrets URLs may carry removed: user info, query strings and fragments
    of every URL in it, and any left-over signature or credential parameters (``X-Amz-Signature=...``).

    Examples
    --------
    >>> redact("GET https://b.s3.amazonaws.com/x.vec?X-Amz-Signature=abc&X-Amz-Credential=AK failed")
    'GET https://b.s3.amazonaws.com/x.vec failed'
    """
    text = _URL_USERINFO_RE.sub(r"\1", str(text))
    text = _URL_QUERY_RE.sub(r"\1", text)
    return _SECRET_PARAM_RE.sub(r"\1<redacted>", text)


def http_timeouts() -> tuple[float, float]:
    """Connect and read timeouts (seconds) of http(s) sources: Dask config keys
    ``biasdask.http.connect-timeout`` (default 30) and ``biasdask.http.read-timeout`` (default 120),
    also settable as ``DASK_BIASDASK__HTTP__CONNECT_TIMEOUT`` / ``..._READ_TIMEOUT``."""
    import dask.config

    connect = float(dask.config.get("biasdask.http.connect-timeout"))
    read = float(dask.config.get("biasdask.http.read-timeout"))
    return connect, read


def storage_options_for(url: str, storage_options: dict | None) -> dict:
    """Return the fsspec options that apply to ``url``.

    ``storage_options`` is either flat (applied to object stores: every protocol except local files,
    ``memory://`` and ``http(s)://``) or keyed by protocol (``{"s3": {...}, "https": {...}}``), which
    targets any protocol, http(s) included. Every store biasdask opens (ingest source and destination,
    embedding stores, results store, dictionaries) takes its options from here.

    Raises
    ------
    BiasdaskError
        The file system of ``url``'s protocol is not installed (e.g. ``gs://`` without ``gcsfs``:
        ``pip install 'biasdask[gcs]'``).
    """
    protocol = fsspec.core.split_protocol(str(url))[0] or "file"
    _check_protocol(url, protocol)
    if not storage_options:
        return {}
    if set(storage_options) <= set(fsspec.available_protocols()):  # keyed by protocol
        return dict(storage_options.get(protocol) or {})
    return {} if protocol in _NO_OPTION_PROTOCOLS else dict(storage_options)


#: extras of biasdask that bring the file system of a protocol
_PROTOCOL_EXTRAS = {"gs": "gcs", "gcs": "gcs", "s3": "s3", "s3a": "s3", "http": "http", "https": "http"}


def _check_protocol(url: str, protocol: str) -> None:
    """Raise a one-line error when the file system of ``protocol`` is not installed."""
    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        extra = _PROTOCOL_EXTRAS.get(protocol)
        hint = f"pip install 'biasdask[{extra}]'" if extra else str(exc)
        raise BiasdaskError(
            f"{display_url(url)}: {protocol}:// needs a package that is not installed ({hint})"
        ) from None
    except ValueError:
        pass  # an unknown protocol: fsspec's own error, where the URL is opened, says so


def url_to_fs(url: str, storage_options: dict | None = None) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system and path of ``url``, with its storage options (:func:`storage_options_for`) and,
    for http(s), the connect and read timeouts of :func:`http_timeouts`: every URL biasdask opens goes
    through here, so no request waits longer than the configured timeouts.

    Raises
    ------
    BiasdaskError
        A URL fsspec cannot open (unknown protocol, file system not installed).
    """
    options = storage_options_for(url, storage_options)
    if (fsspec.core.split_protocol(str(url))[0] or "file") in ("http", "https"):
        client_kwargs = dict(options.get("client_kwargs") or {})
        if "timeout" not in client_kwargs:
            import aiohttp

            connect, read = http_timeouts()
            client_kwargs["timeout"] = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read)
        options = {**options, "client_kwargs": client_kwargs}
    try:
        return fsspec.core.url_to_fs(str(url), **options)
    except (ImportError, ValueError) as exc:
        raise BiasdaskError(f"{display_url(url)}: cannot open this URL: {redact(str(exc))}") from None


# --------------------------------------------------------------------------------------------------
# compiled kernels


@numba.njit(nogil=True, cache=True)
def _find_units(buf, pos, n, record_bytes):
    """Find ``n`` complete units (lines, or binary records when ``record_bytes > 0``) from ``pos``.

    Returns ``(found, end)``: the number found and the offset just after the last of them.
    """
    size = buf.shape[0]
    found = 0
    end = pos
    p = pos
    if record_bytes == 0:
        while found < n and p < size:
            if buf[p] == 10:
                found += 1
                end = p + 1
            p += 1
        return found, end
    while found < n:
        while p < size and buf[p] == 10:
            p += 1
        while p < size and buf[p] != 32:
            p += 1
        if p + 1 + record_bytes > size:
            break
        p += 1 + record_bytes
        found += 1
        end = p
    return found, end


@numba.njit(nogil=True, cache=True)
def _token_end(buf, p):
    size = buf.shape[0]
    while p < size and buf[p] != 32 and buf[p] != 10:
        p += 1
    return p


@numba.njit(nogil=True, cache=True)
def _is_nonfinite_word(buf, start, end):
    """True if buf[start:end] is (sign)nan... or (sign)inf..., case-insensitive."""
    p = start
    if p < end and (buf[p] == 43 or buf[p] == 45):
        p += 1
    if end - p < 3:
        return False
    a, b, c = buf[p] | 32, buf[p + 1] | 32, buf[p + 2] | 32
    return (a == 110 and b == 97 and c == 110) or (a == 105 and b == 110 and c == 102)


@numba.njit(nogil=True, cache=True)
def _parse_text_kernel(buf, pos, n_lines, dim, vectors, norms, word_start, word_end, hashes, slow, info):
    """Parse ``n_lines`` text lines of ``dim`` values from ``buf[pos:]``.

    Fills ``vectors`` (float32, n_lines x dim), their L2 norms, the word's byte span and FNV-1a hash.
    Tokens outside the exact fast path are recorded in ``slow`` (row, field, start, end) and left for
    Python (which also recomputes the norms of their rows).
    ``info`` receives (status, row, field, token start, token end, number of slow tokens, end offset).
    """
    size = buf.shape[0]
    p = pos
    n_slow = 0
    for row in range(n_lines):
        if p >= size:
            info[0] = _MISSING
            info[1] = row
            return
        ws = p
        h = _FNV_OFFSET
        c = 10
        while p < size:
            c = buf[p]
            if c == 32 or c == 10:
                break
            h = (h ^ np.uint64(c)) * _FNV_PRIME
            p += 1
        word_start[row] = ws
        word_end[row] = p
        hashes[row] = h
        acc = 0.0
        for j in range(dim):
            # c: the byte after the previous token (10 stands for the end of the data)
            if c != 32:
                info[0] = _FIELDS
                info[1] = row
                info[2] = j
                return
            p += 1
            ts = p
            if p + 20 <= size:
                # Fast path for the common token: [-]digits[.digits], at most 18 bytes, followed by a
                # space or newline (4 decimals: 1.4x the general loop below). Anything else (a sign
                # "+", an exponent, "\r", a longer token...) is left to the general path.
                q = p + (buf[p] == 45)
                lim = p + 19
                q0 = q
                mant = np.int64(0)
                d = np.int64(buf[q]) - 48
                while q < lim and 0 <= d <= 9:
                    mant = mant * 10 + d
                    q += 1
                    d = np.int64(buf[q]) - 48
                n_int = q - q0
                n_frac = 0
                if d == -2 and q < lim:  # "."
                    q += 1
                    f0 = q
                    d = np.int64(buf[q]) - 48
                    while q < lim and 0 <= d <= 9:
                        mant = mant * 10 + d
                        q += 1
                        d = np.int64(buf[q]) - 48
                    n_frac = q - f0
                c = buf[q]
                if (c == 32 or c == 10) and n_int + n_frac > 0 and mant < 9007199254740992:
                    if mant < 4194304 and n_frac <= 8:
                        # below 2^22 a multiplication by the double nearest 10^-n rounds to the same
                        # float32 as the exact division (checked for every such mant by the tests)
                        v = mant * _NEG_POW10[n_frac]
                    else:  # exact operands, one correctly rounded division (n_frac <= 17 <= 22)
                        v = mant / _POW10[n_frac]
                    f = np.float32(-v if buf[p] == 45 else v)
                    vectors[row, j] = f
                    acc += np.float64(f) * np.float64(f)
                    p = q
                    continue
            neg = False
            if p < size:
                c = buf[p]
                if c == 45 or c == 43:
                    neg = c == 45
                    p += 1
            digits_start = p
            mant = np.int64(0)
            nd = 0
            dot = -1
            c = 10
            while p < size:
                c = buf[p]
                if c >= 48 and c <= 57:
                    if nd < 19:
                        mant = mant * 10 + np.int64(c - 48)
                        nd += mant != 0
                    p += 1
                elif c == 46 and dot < 0:
                    dot = p
                    p += 1
                else:
                    break
            if p >= size:
                c = 10
            n_digits = p - digits_start
            e10 = 0
            if dot >= 0:
                n_digits -= 1
                e10 = dot + 1 - p
            if c != 32 and c != 10:
                bad = n_digits == 0
                if (c | 32) == 101 and not bad:
                    p += 1
                    eneg = False
                    if p < size and (buf[p] == 45 or buf[p] == 43):
                        eneg = buf[p] == 45
                        p += 1
                    ev = 0
                    ed = 0
                    while p < size:
                        d = np.int64(buf[p]) - 48
                        if d < 0 or d > 9:
                            break
                        if ev < 100000:
                            ev = ev * 10 + d
                        ed += 1
                        p += 1
                    bad = ed == 0
                    e10 += -ev if eneg else ev
                    c = buf[p] if p < size else 10
                if not bad and c != 32 and c != 10:
                    # only trailing whitespace may follow the last value of a line
                    bad = not (j == dim - 1 and (c == 13 or c == 9 or c == 11 or c == 12))
                    if not bad:
                        c = 10
            else:
                bad = n_digits == 0
            if bad:
                te = _token_end(buf, ts)
                info[0] = _NOT_FINITE if _is_nonfinite_word(buf, ts, te) else _NOT_NUMBER
                info[1] = row
                info[2] = j
                info[3] = ts
                info[4] = te
                return
            if nd < 19 and mant < 9007199254740992 and -22 <= e10 <= 22:
                # exact operands and one correctly rounded operation (Clinger's fast path); the
                # result (< 2**53 * 1e22) cannot overflow float32
                if e10 >= 0:
                    v = mant * _POW10[e10]
                else:
                    v = mant / _POW10[-e10]
            else:
                if n_slow == slow.shape[0]:
                    info[0] = _SLOW_FULL
                    return
                slow[n_slow, 0] = row
                slow[n_slow, 1] = j
                slow[n_slow, 2] = ts
                slow[n_slow, 3] = p
                n_slow += 1
                v = 0.0
            f = np.float32(-v if neg else v)
            vectors[row, j] = f
            acc += np.float64(f) * np.float64(f)
        norms[row] = np.float32(np.sqrt(acc))
        while p < size:
            c = buf[p]
            if c == 32 or c == 13 or c == 9 or c == 11 or c == 12:
                p += 1
            else:
                break
        if p < size and buf[p] != 10:
            info[0] = _FIELDS
            info[1] = row
            info[2] = dim
            return
        p += 1
    info[0] = _OK
    info[5] = n_slow
    info[6] = min(p, size)


@numba.njit(nogil=True, cache=True)
def _parse_binary_kernel(buf, pos, n_records, record_bytes, out, word_start, word_end, hashes, info):
    """Split ``n_records`` binary records from ``buf[pos:]``, copying their vector bytes to ``out``."""
    size = buf.shape[0]
    p = pos
    for r in range(n_records):
        while p < size and buf[p] == 10:  # the C tool's newline after each vector
            p += 1
        ws = p
        h = _FNV_OFFSET
        while p < size and buf[p] != 32:
            if buf[p] == 10:
                info[0] = _WORD_NEWLINE
                info[1] = r
                return
            h = (h ^ np.uint64(buf[p])) * _FNV_PRIME
            p += 1
        if p + 1 + record_bytes > size:
            info[0] = _MISSING
            info[1] = r
            return
        word_start[r] = ws
        word_end[r] = p
        hashes[r] = h
        p += 1
        for b in range(record_bytes):
            out[r, b] = buf[p + b]
        p += record_bytes
    info[0] = _OK
    info[6] = p


@numba.njit(nogil=True, cache=True)
def _gather_words(buf, word_start, word_end):
    """Concatenate the words' bytes, each followed by ``\\n`` (which no word contains)."""
    n = word_start.shape[0]
    total = 0
    for i in range(n):
        total += word_end[i] - word_start[i] + 1
    out = np.empty(total, dtype=np.uint8)
    q = 0
    for i in range(n):
        for p in range(word_start[i], word_end[i]):
            out[q] = buf[p]
            q += 1
        out[q] = 10
        q += 1
    return out


@numba.njit(nogil=True, cache=True)
def _fnv1a(buf):
    h = _FNV_OFFSET
    for i in range(buf.shape[0]):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    return h


@numba.njit(nogil=True, cache=True)
def _row_norms(vectors):
    n, d = vectors.shape
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        acc = 0.0
        for j in range(d):
            x = np.float64(vectors[i, j])
            acc += x * x
        out[i] = np.float32(np.sqrt(acc))
    return out


@numba.njit(nogil=True, cache=True)
def _row_hashes(bits, out):
    n, d = bits.shape
    for i in range(n):
        h = _FNV_OFFSET
        zero = True
        for j in range(d):
            b = bits[i, j]
            zero = zero and (b & np.uint32(0x7FFFFFFF)) == 0
            h = (h ^ np.uint64(b)) * _FNV_PRIME
        # splitmix64's finaliser spreads the 32-bit steps over all 64 bits.
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
        out[i] = np.uint64(0) if zero else (h if h != 0 else np.uint64(1))


def row_hashes(vectors: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each float32 row's bits (FNV-1a over its 32-bit words, then mixed); 0 exactly
    for zero vectors (±0 everywhere), never 0 otherwise. Bit-identical rows hash alike."""
    bits = np.ascontiguousarray(vectors, dtype=np.float32).view(np.uint32)
    out = np.empty(bits.shape[0], dtype=np.uint64)
    _row_hashes(bits, out)
    return out


def word_hash(word: str) -> int:
    """The 64-bit FNV-1a hash of ``word``'s UTF-8 bytes, as :class:`ParsedBlock` gives it."""
    return int(_fnv1a(np.frombuffer(word.encode("utf-8"), dtype=np.uint8)))


# --------------------------------------------------------------------------------------------------
# sources


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    """What :func:`sniff_source` learned from the beginning of an embedding file.

    Attributes
    ----------
    url
        The source as given (may hold credentials: never print it, print ``display``).
    display
        ``url`` without credentials, for messages and the store's ``source`` attr.
    format
        One of :data:`FORMATS`.
    compression
        ``"gzip"``, ``"bz2"`` or ``"xz"`` (found by the file's first bytes, whatever its name), None for
        plain bytes.
    n_words
        The word count of the header, None for GloVe.
    dim
        Vector dimension.
    body_offset
        Offset of the first word in the (decompressed) byte stream.
    size
        Size in bytes of the file as stored (compressed size for a compressed file), None when unknown.
    splittable
        True when the file can be read as independent byte ranges (uncompressed text).
    """

    url: str
    display: str
    format: str
    compression: str | None
    n_words: int | None
    dim: int
    body_offset: int
    size: int | None
    splittable: bool

    @property
    def first_line(self) -> int:
        """File line number (1-based) of the first word."""
        return 2 if self.n_words is not None else 1

    @property
    def record_bytes(self) -> int:
        """Bytes of one vector in the binary format, 0 for the text formats."""
        return 4 * self.dim if self.format == "word2vec-binary" else 0

    def where(self, index: int) -> str:
        """Name the place of the word at 0-based position ``index`` of the body, for messages."""
        if self.format == "word2vec-binary":
            return f"{self.display}: word {index + 1}"
        return f"{self.display}: line {index + self.first_line}"


def _open_raw(fs: fsspec.AbstractFileSystem, path: str):
    protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
    if protocols & {"http", "https"}:
        return fs.open(path, "rb", block_size=0)  # a plain stream: no range requests needed
    return fs.open(path, "rb", block_size=PIECE_BYTES, cache_type="readahead")


@contextlib.contextmanager
def _reading(display: str, compression: str | None = None) -> Iterator[None]:
    """Turn the errors of reading a source (``compression``: its decompressor's) into one-line errors."""
    try:
        yield
    except EOFError:
        raise InputFormatError(
            f"{display}: truncated {compression or 'compressed'} stream (the file ends before its end marker)"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputFormatError(f"{display}: corrupt gzip data ({exc})") from None
    except lzma.LZMAError as exc:
        raise InputFormatError(f"{display}: corrupt xz data ({exc})") from None
    except FileNotFoundError as exc:
        if isinstance(exc.__cause__, TimeoutError):  # fsspec's http reports a timeout so
            raise _timed_out(display) from None
        cause = f" ({_one_line(exc.__cause__)})" if exc.__cause__ else ""
        raise BiasdaskError(f"{display}: no such file or unreachable{cause}") from None
    except PermissionError:
        raise BiasdaskError(f"{display}: permission denied") from None
    except TimeoutError:
        raise _timed_out(display) from None
    except NETWORK_ERRORS as exc:
        if type(exc) is OSError and str(exc) == "Invalid data stream":  # bz2's error for corrupt data
            raise InputFormatError(f"{display}: corrupt bz2 data") from None
        raise BiasdaskError(f"{display}: cannot read: {_one_line(exc)}") from None


def _timed_out(display: str) -> BiasdaskError:
    connect, read = http_timeouts()
    return BiasdaskError(
        f"{display}: timed out (connect {connect:g} s, read {read:g} s; Dask config "
        "biasdask.http.connect-timeout / read-timeout)"
    )


def _one_line(exc: BaseException) -> str:
    return redact(" ".join(f"{type(exc).__name__}: {exc}".split()))


class _RawReader:
    """Reads an fsspec file, serving first the bytes already peeked at, and counts what it read."""

    def __init__(self, raw, head: bytes):
        self._raw = raw
        self._head = head
        self.position = 0

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if 0 <= n < len(self._head):
                data, self._head = self._head[:n], self._head[n:]
            else:
                data, self._head = self._head, b""
                data += self._raw.read() if n < 0 else self._raw.read(n - len(data))
        else:
            data = self._raw.read(n)
        self.position += len(data)
        return data


class _Stream:
    """The decompressed bytes of a source, read piece by piece."""

    def __init__(self, url: str, display: str, storage_options: dict | None):
        self.display = display
        with _reading(display):
            fs, path = url_to_fs(url, storage_options)
            self._raw = _open_raw(fs, path)
            head = self._raw.read(_MAGIC_BYTES)
        for magic, what in _UNSUPPORTED.items():
            if head.startswith(magic):
                self._raw.close()
                raise InputFormatError(
                    f"{display}: {what}: biasdask reads plain, gzip, bz2 and xz files; decompress it first"
                )
        self.compression = next((name for name, magic in _COMPRESSIONS.items() if head.startswith(magic)), None)
        self._reader = _RawReader(self._raw, head)
        reader = cast(IO[bytes], self._reader)  # a read-only file object, as the decompressors want
        self._file: IO[bytes] | gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile
        if self.compression == "gzip":
            self._file = gzip.GzipFile(fileobj=reader, mode="rb")
        elif self.compression is not None:
            self._file = {"bz2": bz2.BZ2File, "xz": lzma.LZMAFile}[self.compression](reader, mode="rb")
        else:
            self._file = reader

    def raw_position(self) -> int:
        """Bytes of the stored (compressed) file consumed so far."""
        return self._reader.position

    def read(self, n: int = PIECE_BYTES) -> bytes:
        """Up to ``n`` bytes of the decompressed stream; ``b""`` at its end."""
        with _reading(self.display, self.compression):
            return self._file.read(n)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sniff_source(source: str, format: str = "auto", storage_options: dict | None = None) -> SourceInfo:
    """Read the beginning of ``source`` and describe it.

    Parameters
    ----------
    source
        Path or fsspec URL of the embedding file.
    format
        ``"auto"`` or one of :data:`FORMATS`. ``auto`` takes a first line ``N D`` (two integers) for a
        header, then tells text from binary by the bytes after the first word; without a header it is
        GloVe.
    storage_options
        fsspec options (see :func:`storage_options_for`).

    Raises
    ------
    InputFormatError
        Empty file, a bad header, a first line without values, a truncated or corrupt gzip stream.
    BiasdaskError
        An unknown format name, a missing or unreachable file.
    """
    if format != "auto" and format not in FORMATS:
        raise BiasdaskError(f"unknown format {format!r}: expected auto, {', '.join(FORMATS)}")
    display = display_url(source)
    fs, path = url_to_fs(source, storage_options)
    with _reading(display):
        try:
            size = fs.size(path)
        except FileNotFoundError:
            raise
        except Exception:  # noqa: BLE001 - some servers do not tell the size; it is only for progress
            size = None
    with _Stream(source, display, storage_options) as stream:
        head = b""
        while len(head) < _SNIFF_BYTES:
            piece = stream.read(_SNIFF_BYTES - len(head))
            if not piece:
                break
            head += piece
        compressed = stream.compression
    if not head:
        raise InputFormatError(f"{display}: empty file")
    nl = head.find(b"\n")
    if nl < 0 and len(head) >= _SNIFF_BYTES:
        raise InputFormatError(f"{display}: line 1 is longer than {_SNIFF_BYTES} bytes: not an embedding file")
    bom = len(_BOM) if head.startswith(_BOM) else 0
    first = head[bom:] if nl < 0 else head[bom:nl]
    header = _HEADER_RE.match(first)
    signed = _SIGNED_HEADER_RE.match(first)
    if header is None and signed is not None:
        n, d = (int(g) for g in signed.groups())
        what = "word count" if n < 0 else "dimension"
        raise InputFormatError(f"{display}: line 1: the header 'N D' ({n} {d}) has a negative {what}")
    if format == "auto":
        if header is None:
            format = "glove"
        else:
            format = _text_or_binary(head[nl + 1 :], int(header.group(2)))
    if format == "glove":
        n_words = None
        fields = first.rstrip(b" \t\r\x0b\x0c").split(b" ")
        dim = len(fields) - 1
        if dim < 1:
            raise InputFormatError(f"{display}: line 1: a word without values{_tabs_hint(first)}")
        body_offset = bom
    else:
        if header is None:
            shown = first[:60].decode("utf-8", "replace")
            raise InputFormatError(f"{display}: line 1: expected a header 'N D' (words, dimension), found {shown!r}")
        n_words, dim = int(header.group(1)), int(header.group(2))
        if n_words == 0 or dim == 0:
            raise InputFormatError(f"{display}: line 1: header says {n_words} words of dimension {dim}: no vectors")
        body_offset = nl + 1
        if format == "word2vec-binary" and _looks_like_text(head[nl + 1 :]):
            raise InputFormatError(
                f"{display}: line 2: decimal numbers in text, not word2vec binary data: use --format vec (or auto)"
            )
    splittable = compressed is None and format != "word2vec-binary"
    return SourceInfo(
        url=str(source),
        display=display,
        format=format,
        compression=compressed,
        n_words=n_words,
        dim=dim,
        body_offset=body_offset,
        size=size,
        splittable=splittable,
    )


_FLOAT_TOKEN_RE = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def _looks_like_text(body: bytes) -> bool:
    """Whether the first line of ``body`` is a word followed by decimal numbers.

    The float32 bytes of a binary record, up to the newline that ends it, are essentially never all
    decimal text (it would take every byte, the exponent bytes included, to be a digit, sign, dot or
    space).
    """
    nl = body.find(b"\n")
    line = (body if nl < 0 else body[:nl]).rstrip(_WHITESPACE)
    space = line.find(b" ")
    tokens = [t for t in line[space + 1 :].split(b" ") if t] if space >= 0 else []
    return bool(tokens) and all(_FLOAT_TOKEN_RE.fullmatch(t) for t in tokens)


def _text_or_binary(body: bytes, dim: int) -> str:
    """Tell a text body from a binary one by what follows the header.

    A first line of a word and decimal numbers is text (the text parser then checks their count);
    otherwise the body is binary if its first record fits and holds finite floats, else text (whose
    parser then names what is wrong).
    """
    if not body.strip(_WHITESPACE):
        return "vec"  # no words at all: reported as a header/body disagreement
    if _looks_like_text(body):
        return "vec"
    space = body.find(b" ")
    if 0 <= space and len(body) >= space + 1 + 4 * dim:
        with np.errstate(all="ignore"):
            if np.isfinite(np.frombuffer(body, dtype="<f4", count=dim, offset=space + 1)).all():
                return "word2vec-binary"
    return "vec"


# --------------------------------------------------------------------------------------------------
# blocks of whole lines/records


@dataclasses.dataclass
class Block:
    """``n`` consecutive words of the body, as raw bytes (whole lines, or whole binary records)."""

    index: int
    first: int
    n: int
    data: bytes


def iter_blocks(
    info: SourceInfo,
    block_words: int,
    max_words: int | None = None,
    storage_options: dict | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> Iterator[Block]:
    """Stream the body of ``info`` as blocks of exactly ``block_words`` words (the last may be shorter).

    Only one piece of the stream and the block being assembled are held in memory. The stream is read
    to its end (so that a truncated gzip or extra lines are noticed) unless ``max_words`` stops it
    earlier; a header word count that disagrees with the body raises :class:`InputFormatError` after
    the last block.

    Parameters
    ----------
    info
        From :func:`sniff_source`.
    block_words
        Words per block.
    max_words
        Stop after this many words.
    storage_options
        fsspec options.
    on_progress
        Called with the number of raw (compressed) bytes consumed since the last call.
    """
    target = info.n_words
    if max_words is not None:
        target = max_words if target is None else min(target, max_words)
    record_bytes = info.record_bytes
    with _Stream(info.url, info.display, storage_options) as stream:
        reported = 0

        def progress() -> None:
            nonlocal reported
            if on_progress is not None:
                pos = stream.raw_position()
                on_progress(pos - reported)
                reported = pos

        skip = info.body_offset
        carry = b""
        parts: list[memoryview] = []
        have = 0  # words in parts
        index = 0
        done = 0  # words yielded
        while True:
            piece = stream.read()
            progress()
            if skip:
                cut = min(skip, len(piece))
                piece, skip = piece[cut:], skip - cut
                if not piece and skip:
                    continue
            if not piece:
                break
            if carry:
                piece = carry + piece
                carry = b""
            arr = np.frombuffer(piece, dtype=np.uint8)
            view = memoryview(piece)
            pos = 0
            while True:
                want = block_words - have
                if target is not None:
                    want = min(want, target - done - have)
                found, end = _find_units_fast(piece, arr, pos, want, record_bytes)
                if found:
                    parts.append(view[pos:end])
                    have += found
                    pos = end
                if have and (have == block_words or (target is not None and done + have == target)):
                    yield Block(index, done, have, b"".join(parts))
                    index += 1
                    done += have
                    parts, have = [], 0
                    if target is not None and done == target:
                        _check_rest(info, stream, arr, pos, max_words)
                        progress()
                        return
                    continue
                break
            carry = bytes(view[pos:])
            if len(carry) > _MAX_UNIT_BYTES:
                unit = "word" if record_bytes else "line"
                raise InputFormatError(
                    f"{info.where(done + have)}: this {unit} is longer than {_MAX_UNIT_BYTES} bytes: "
                    f"not {info.format} data"
                )
        if carry:
            if record_bytes:
                if carry.strip(b"\n"):
                    raise InputFormatError(f"{info.where(done + have)}: truncated (the file ends inside this word)")
            else:
                parts.append(memoryview(carry))
                have += 1
        if (
            info.n_words is not None and target is not None and done + have < target
        ):  # before the short block is written
            raise InputFormatError(
                f"{info.display}: the header says {info.n_words} words but the file has only {done + have}"
                + (" (truncated?)" if info.format == "word2vec-binary" else " lines after it (truncated?)")
            )
        if have:
            yield Block(index, done, have, b"".join(parts))


def head_block(
    info: SourceInfo, max_words: int, storage_options: dict | None = None, max_bytes: int = _SNIFF_BYTES
) -> Block | None:
    """The first whole lines of a text source (at most ``max_words``, within its first ``max_bytes``
    after the header), for a look at its values; None when not even one line fits."""
    with _Stream(info.url, info.display, storage_options) as stream:
        head = b""
        while len(head) < info.body_offset + max_bytes:
            piece = stream.read(info.body_offset + max_bytes - len(head))
            if not piece:
                break
            head += piece
    body = head[info.body_offset :]
    found, end = _find_units(np.frombuffer(body, dtype=np.uint8), 0, max_words, 0)
    return Block(0, 0, found, body[:end]) if found else None


def _find_units_fast(piece: bytes, arr: np.ndarray, pos: int, want: int, record_bytes: int) -> tuple[int, int]:
    """:func:`_find_units`, with C's fast newline count to skip pieces that end no block."""
    if want <= 0:
        return 0, pos
    if not record_bytes:
        n = piece.count(b"\n", pos)
        if n < want:
            return n, (piece.rfind(b"\n") + 1 if n else pos)
    return _find_units(arr, pos, want, record_bytes)


def _check_rest(info: SourceInfo, stream: _Stream, arr: np.ndarray, pos: int, max_words: int | None) -> None:
    """After the header's last word, only whitespace may follow (unless ``max_words`` cut the reading)."""
    if info.n_words is None or (max_words is not None and max_words < info.n_words):
        return
    rest = arr[pos:].tobytes()
    while True:
        if rest.strip(_WHITESPACE):
            where = info.where(info.n_words)
            raise InputFormatError(f"{where}: the file has more words than its header's {info.n_words}")
        rest = stream.read()
        if not rest:
            return


def skip_lines(data: bytes, n: int) -> int:
    """Offset just after the ``n``-th newline of ``data`` (0 for ``n == 0``)."""
    found, end = _find_units(np.frombuffer(data, dtype=np.uint8), 0, n, 0)
    if found < n:
        raise InputFormatError(f"expected {n} lines in a byte range, found {found}: did the file change?")
    return end


def count_newlines(url: str, storage_options: dict | None, starts: list[int], ends: list[int]) -> np.ndarray:
    """Count the ``\\n`` bytes in each byte range ``[starts[i], ends[i])`` of an uncompressed file."""
    return np.array(
        [
            np.count_nonzero(np.frombuffer(view_range(url, storage_options, start, end), dtype=np.uint8) == 10)
            for start, end in zip(starts, ends, strict=True)
        ],
        dtype=np.int64,
    )


def view_range(url: str, storage_options: dict | None, start: int, end: int) -> bytes | memoryview:
    """Bytes ``[start, end)`` of an uncompressed file: a read-only memory map of a local file (no copy
    of the page cache; unmapped when the view is dropped), what :func:`read_range` reads otherwise."""
    if (fsspec.core.split_protocol(str(url))[0] or "file") not in ("file", "local") or end <= start:
        return read_range(url, storage_options, start, end)
    base = start - start % mmap.ALLOCATIONGRANULARITY
    with _reading(display_url(url)), open(fsspec.core.strip_protocol(str(url)), "rb") as f:
        if os.fstat(f.fileno()).st_size < end:
            raise InputFormatError(f"{display_url(url)}: the file is shorter than when ingest began: did it change?")
        mapped = mmap.mmap(f.fileno(), end - base, access=mmap.ACCESS_READ, offset=base)
    return memoryview(mapped)[start - base :]


def read_range(url: str, storage_options: dict | None, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of an uncompressed file."""
    fs, path = url_to_fs(url, storage_options)
    with _reading(display_url(url)):
        return fs.cat_file(path, start=start, end=end)


def check_only_whitespace_after(info: SourceInfo, storage_options: dict | None, offset: int) -> None:
    """Raise unless the uncompressed file holds only whitespace from ``offset`` on (after the header's words)."""
    assert info.size is not None and info.n_words is not None
    for start in range(offset, info.size, PIECE_BYTES):
        if read_range(info.url, storage_options, start, min(start + PIECE_BYTES, info.size)).strip(_WHITESPACE):
            raise InputFormatError(
                f"{info.where(info.n_words)}: the file has more words than its header's {info.n_words}"
            )


# --------------------------------------------------------------------------------------------------
# parsing a block


@dataclasses.dataclass
class ParsedBlock:
    """The words of a block, parsed.

    Attributes
    ----------
    words
        Decoded words (UTF-8, invalid bytes replaced by U+FFFD), NFC-normalised.
    vectors
        float32 (n, dim).
    norms
        float32 (n,): the L2 length of each vector.
    hashes
        uint64 (n,): FNV-1a of each word's UTF-8 bytes (after replacement), to find duplicates.
    n_invalid_utf8
        Words that needed replacement characters.
    n_bytes
        Bytes of the block that were parsed.
    normalised
        Positions (in the block) of the words that NFC normalisation changed.
    """

    words: np.ndarray
    vectors: np.ndarray
    norms: np.ndarray
    hashes: np.ndarray
    n_invalid_utf8: int
    n_bytes: int
    normalised: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, dtype=np.int64))


def parse_block(data: bytes, n: int, info: SourceInfo, first: int, offset: int = 0) -> ParsedBlock:
    """Parse the ``n`` words that start at byte ``offset`` of ``data``.

    Parameters
    ----------
    data
        Raw bytes of whole lines (text) or records (binary).
    n
        Number of words to read.
    info
        The source's description (format, dimension, name for messages).
    first
        0-based position in the body of the first word (for messages).
    offset
        Where the first word starts in ``data``.

    Raises
    ------
    InputFormatError
        Naming the file and line (or word): wrong number of fields, a non-numeric or non-finite value,
        fewer words than expected.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    dim = info.dim
    vectors = np.empty((n, dim), dtype=np.float32)
    norms = np.empty(n, dtype=np.float32)
    word_start = np.empty(n, dtype=np.int64)
    word_end = np.empty(n, dtype=np.int64)
    hashes = np.empty(n, dtype=np.uint64)
    status = np.zeros(7, dtype=np.int64)
    if info.format == "word2vec-binary":
        out = vectors.view(np.uint8).reshape(n, 4 * dim)
        _parse_binary_kernel(buf, offset, n, 4 * dim, out, word_start, word_end, hashes, status)
        if status[0] == _MISSING:
            raise InputFormatError(f"{info.where(first + status[1])}: truncated (the file ends inside this word)")
        if status[0] == _WORD_NEWLINE:
            raise InputFormatError(
                f"{info.where(first + status[1])}: a word holding a newline: the records are out of step "
                "(a word containing a space, which word2vec binary cannot store, or not word2vec binary data)"
            )
        norms = _row_norms(vectors)
        bad = ~np.isfinite(vectors)
        if bad.any():
            row, col = map(int, np.argwhere(bad)[0])
            word = _decode_one(buf, word_start[row], word_end[row])
            raise InputFormatError(
                f"{info.where(first + row)} ({word!r}): non-finite value {vectors[row, col]} in field {col + 1}"
            )
    else:
        slow = np.empty((64, 4), dtype=np.int64)
        while True:
            _parse_text_kernel(buf, offset, n, dim, vectors, norms, word_start, word_end, hashes, slow, status)
            if status[0] != _SLOW_FULL:
                break
            slow = np.empty((4 * slow.shape[0], 4), dtype=np.int64)
        if status[0] != _OK:
            _raise_text_error(buf, status, info, first, word_start, word_end)
        for row, col, ts, te in slow[: status[5]]:
            vectors[row, col] = _slow_value(
                buf, int(row), int(col), int(ts), int(te), info, first, word_start, word_end
            )
        if status[5]:
            rows = np.unique(slow[: status[5], 0])
            norms[rows] = _row_norms(vectors[rows])
    words, hashes, n_invalid, normalised = _decode_words(buf, word_start, word_end, hashes)
    return ParsedBlock(
        words=words,
        vectors=vectors,
        norms=norms,
        hashes=hashes,
        n_invalid_utf8=n_invalid,
        normalised=normalised,
        n_bytes=int(status[6]) - offset,
    )


def _decode_one(buf: np.ndarray, start: int, end: int) -> str:
    return buf[start:end].tobytes().decode("utf-8", "replace")


def _nfc(words: list[str], hashes: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """NFC-normalise ``words`` (one check of the whole text when it already is, as nearly always)."""
    text = "\n".join(words)
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return words, hashes, np.empty(0, dtype=np.int64)
    # "\n" composes with nothing, so normalising the joined text normalises each word
    normal = unicodedata.normalize("NFC", text).split("\n")
    changed = np.array([i for i, (a, b) in enumerate(zip(words, normal, strict=True)) if a != b], dtype=np.int64)
    hashes = hashes.copy()
    for i in changed:
        hashes[i] = word_hash(normal[i])
    return normal, hashes, changed


def _decode_words(buf, word_start, word_end, hashes) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    words, hashes, n_invalid = _decode_raw_words(buf, word_start, word_end, hashes)
    words, hashes, changed = _nfc(words, hashes)
    return np.array(words, dtype=object), hashes, n_invalid, changed


def _decode_raw_words(buf, word_start, word_end, hashes) -> tuple[list[str], np.ndarray, int]:
    blob = _gather_words(buf, word_start, word_end).tobytes()
    try:
        words = blob.decode("utf-8").split("\n")[:-1]
        n_invalid = 0
    except UnicodeDecodeError:
        words = []
        n_invalid = 0
        hashes = hashes.copy()
        for i, raw in enumerate(blob.split(b"\n")[:-1]):
            try:
                words.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                word = raw.decode("utf-8", "replace")
                words.append(word)
                hashes[i] = word_hash(word)
                n_invalid += 1
    return words, hashes, n_invalid


def _slow_value(buf, row, col, ts, te, info, first, word_start, word_end) -> np.float32:
    token = buf[ts:te].tobytes().decode("ascii")
    with np.errstate(over="ignore"):
        value = np.float32(float(token))
    if not np.isfinite(value):
        word = _decode_one(buf, word_start[row], word_end[row])
        raise InputFormatError(
            f"{info.where(first + row)} ({word!r}): non-finite value {token!r} in field {col + 1} "
            "(out of float32 range)"
        )
    return value


def _raise_text_error(buf, status, info: SourceInfo, first: int, word_start, word_end) -> None:
    code, row, col, ts, te = (int(x) for x in status[:5])
    where = info.where(first + row)
    if code == _MISSING:
        raise InputFormatError(f"{where}: missing (the data ended early)")
    word = _decode_one(buf, word_start[row], word_end[row])
    if code == _FIELDS:
        found = _count_values(buf, int(word_start[row]))
        raise InputFormatError(f"{where} ({word!r}): expected {info.dim} values, found {found}{_tabs_hint(word)}")
    token = buf[ts:te].tobytes().decode("utf-8", "replace")
    if not token:
        found = _count_values(buf, int(word_start[row]))
        if found != info.dim:
            raise InputFormatError(f"{where} ({word!r}): expected {info.dim} values, found {found}")
        raise InputFormatError(f"{where} ({word!r}): empty value in field {col + 1} (two spaces in a row?)")
    kind = "non-finite" if code == _NOT_FINITE else "non-numeric"
    raise InputFormatError(f"{where} ({word!r}): {kind} value {token[:40]!r} in field {col + 1}")


def _tabs_hint(line: bytes | str) -> str:
    """The explanation of a field count that tabs between the fields explain, else ``""``."""
    if (b"\t" not in line) if isinstance(line, bytes) else ("\t" not in line):
        return ""
    return " (the fields are separated by tabs: embedding files separate them by single spaces)"


def _count_values(buf: np.ndarray, line_start: int) -> int:
    """Fields after the word on the line starting at ``line_start``, counted as gensim splits them."""
    line_end = line_start
    while line_end < buf.shape[0] and buf[line_end] != 10:
        line_end += 1
    line = buf[line_start:line_end].tobytes().rstrip(_WHITESPACE)
    return len(line.split(b" ")) - 1
