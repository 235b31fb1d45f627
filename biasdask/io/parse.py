"""The compiled parser of embedding files: blocks of whole lines or records into words, vectors, norms
and word hashes.

Lines are split on ``b"\\n"`` only and fields on ``b" "`` only, because real vocabularies hold tokens
with ``"``, a leading ``#``, ``NA``, ``\\xa0``, ``\\x85``, ``\\u2028`` or ``\\x0b`` that ``str.split()``,
``splitlines()`` or CSV readers mangle. The byte-level parser is compiled with numba: it reads decimal
numbers by hand (sign, digits, ``.``, exponent) into the correctly rounded float64 and rounds that to
float32, which is exactly what gensim's ``np.float32(token)`` gives. The rare token outside the exact
fast path (more than 19 significant digits, or a decimal exponent beyond 22) is re-read with Python's
``float``. ``nan``/``inf`` tokens and values out of float32 range are errors, as is anything else that
is not a number. Trailing ASCII whitespace of a line (fastText's trailing space, a Windows ``\\r``) is
ignored, as gensim's ``line.rstrip()`` does. Words are decoded as UTF-8 with ``errors="replace"`` (the
lines that needed it are counted) and NFC-normalised. Finding the blocks in a stream, and what a source
is, live in :mod:`biasdask.io.formats`.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Protocol

import numba
import numpy as np

from biasdask.errors import InputFormatError

__all__ = [
    "WHITESPACE",
    "find_units",
    "parse_block",
    "ParsedBlock",
    "row_hashes",
    "row_norms",
    "Source",
    "tabs_hint",
    "word_hash",
]


class Source(Protocol):
    """What the parser needs to know of a source (:class:`biasdask.io.formats.SourceInfo` is one)."""

    @property
    def format(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def where(self, index: int) -> str:
        """Name the place of the word at 0-based position ``index`` of the body, for messages."""
        ...


#: the ASCII whitespace a line may end with (ignored, as gensim's ``line.rstrip()`` does)
WHITESPACE = b" \t\r\n\x0b\x0c"

# status codes of the compiled kernels
_OK = 0
_MISSING = 1  # the data ended before the requested number of lines/records
_FIELDS = 2  # wrong number of fields on a line
_NOT_NUMBER = 3
_NOT_FINITE = 4
_SLOW_FULL = 5  # the buffer of tokens to re-read in Python is full
_WORD_NEWLINE = 6  # a binary record's word holds a newline

_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)
_NEG_POW10 = np.array([float(f"1e-{i}") for i in range(9)], dtype=np.float64)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


# --------------------------------------------------------------------------------------------------
# compiled kernels


@numba.njit(nogil=True, cache=True)
def find_units(buf, pos, n, record_bytes):
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
                # space or newline (what fastText and GloVe write). Anything else (a sign
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
def row_norms(vectors):
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


def parse_block(data: bytes, n: int, info: Source, first: int, offset: int = 0) -> ParsedBlock:
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
        norms = row_norms(vectors)
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
            norms[rows] = row_norms(vectors[rows])
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


def _raise_text_error(buf, status, info: Source, first: int, word_start, word_end) -> None:
    code, row, col, ts, te = (int(x) for x in status[:5])
    where = info.where(first + row)
    if code == _MISSING:
        raise InputFormatError(f"{where}: missing (the data ended early)")
    word = _decode_one(buf, word_start[row], word_end[row])
    if code == _FIELDS:
        found = _count_values(buf, int(word_start[row]))
        raise InputFormatError(f"{where} ({word!r}): expected {info.dim} values, found {found}{tabs_hint(word)}")
    token = buf[ts:te].tobytes().decode("utf-8", "replace")
    if not token:
        found = _count_values(buf, int(word_start[row]))
        if found != info.dim:
            raise InputFormatError(f"{where} ({word!r}): expected {info.dim} values, found {found}")
        raise InputFormatError(f"{where} ({word!r}): empty value in field {col + 1} (two spaces in a row?)")
    kind = "non-finite" if code == _NOT_FINITE else "non-numeric"
    raise InputFormatError(f"{where} ({word!r}): {kind} value {token[:40]!r} in field {col + 1}")


def tabs_hint(line: bytes | str) -> str:
    """The explanation of a field count that tabs between the fields explain, else ``""``."""
    if (b"\t" not in line) if isinstance(line, bytes) else ("\t" not in line):
        return ""
    return " (the fields are separated by tabs: embedding files separate them by single spaces)"


def _count_values(buf: np.ndarray, line_start: int) -> int:
    """Fields after the word on the line starting at ``line_start``, counted as gensim splits them."""
    line_end = line_start
    while line_end < buf.shape[0] and buf[line_end] != 10:
        line_end += 1
    line = buf[line_start:line_end].tobytes().rstrip(WHITESPACE)
    return len(line.split(b" ")) - 1
