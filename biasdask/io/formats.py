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

Lines are split on ``b"\\n"`` only and fields on ``b" "`` only (real vocabularies hold tokens that
``str.split()`` mangles); the compiled parser of a block is :mod:`biasdask.io.parse`, and every URL is
opened through :mod:`biasdask.io.fs`.
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import gzip
import io
import lzma
import mmap
import os
import re
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Protocol, cast

import fsspec
import numpy as np

from biasdask.errors import BiasdaskError, InputFormatError
from biasdask.io.fs import (
    NETWORK_ERRORS,
    Locatable,
    Location,
    as_location,
    display_url,
    one_line,
    source_record,
    timeout_error,
    url_to_fs,
)
from biasdask.io.parse import WHITESPACE, find_units, tabs_hint

__all__ = [
    "FORMATS",
    "PIECE_BYTES",
    "Block",
    "RawSource",
    "check_only_whitespace_after",
    "count_newlines",
    "head_block",
    "iter_blocks",
    "read_range",
    "reading_source",
    "skip_lines",
    "sniff_source",
    "SourceInfo",
    "view_range",
]


FORMATS = ("vec", "glove", "word2vec-binary")
#: bytes read from a stream at a time (decompressed bytes for gzip)
PIECE_BYTES = 8 * 2**20
_SNIFF_BYTES = 2**20
_MAX_UNIT_BYTES = 64 * 2**20
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
_HEADER_RE = re.compile(rb"^[ \t]*(\d+)[ \t]+(\d+)[ \t\r\x0b\x0c]*$")
_SIGNED_HEADER_RE = re.compile(rb"^[ \t]*([+-]?\d+)[ \t]+([+-]?\d+)[ \t\r\x0b\x0c]*$")


# --------------------------------------------------------------------------------------------------
# sources


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    """What :func:`sniff_source` learned from the beginning of an embedding file.

    Attributes
    ----------
    location
        The source as given, with its storage options (its URL may hold credentials: never print it,
        print ``display``).
    display
        The source's URL without credentials, for messages and the store's ``source`` attr.
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
    record
        Where it comes from, as the store records it (:func:`biasdask.io.fs.source_record`).
    opener
        What gives the file's raw bytes from their start (e.g. a copy staged beside the store,
        :class:`biasdask.io.download.Download`); None: the file system of ``location``.
    """

    location: Location
    display: str
    format: str
    compression: str | None
    n_words: int | None
    dim: int
    body_offset: int
    size: int | None
    splittable: bool
    record: dict = dataclasses.field(default_factory=dict)
    opener: Callable[[], RawSource] | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def url(self) -> str:
        """The source's URL as given (may hold credentials)."""
        return self.location.url

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
        # a plain stream (no range requests needed), read a piece at a time: every read of fsspec's
        # stream waits for its event loop's thread, so the decompressor's many small reads would each wait
        return io.BufferedReader(fs.open(path, "rb", block_size=0), PIECE_BYTES)
    return fs.open(path, "rb", block_size=PIECE_BYTES, cache_type="readahead")


@contextlib.contextmanager
def reading_source(display: str, compression: str | None = None) -> Iterator[None]:
    """Turn the errors of reading the source ``display`` (``compression``: its decompressor's) into
    one-line errors naming it: a 404 or missing file, a timeout (naming the setting), a refused or cut
    connection, truncated or corrupt compressed data."""
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
            raise timeout_error(display, exc) from None
        cause = f" ({one_line(exc.__cause__)})" if exc.__cause__ else ""
        raise BiasdaskError(f"{display}: no such file or unreachable{cause}") from None
    except PermissionError:
        raise BiasdaskError(f"{display}: permission denied") from None
    except TimeoutError as exc:
        raise timeout_error(display, exc) from None
    except NETWORK_ERRORS as exc:
        if type(exc) is OSError and str(exc) == "Invalid data stream":  # bz2's error for corrupt data
            raise InputFormatError(f"{display}: corrupt bz2 data") from None
        raise BiasdaskError(f"{display}: cannot read: {one_line(exc)}") from None


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


class RawSource(Protocol):
    """The raw (stored, maybe compressed) bytes of a source, read from its start."""

    def read(self, n: int = -1) -> bytes: ...

    def close(self) -> None: ...


class _Stream:
    """The decompressed bytes of a source, read piece by piece (its raw bytes from ``opener``, or from
    the file system of ``loc``)."""

    def __init__(self, loc: Location, display: str, opener: Callable[[], RawSource] | None = None):
        self.display = display
        with reading_source(display):
            if opener is not None:
                self._raw = opener()
            else:
                fs, path = url_to_fs(loc)
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
        with reading_source(self.display, self.compression):
            return self._file.read(n)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sniff_source(
    source: Locatable,
    format: str = "auto",
    *,
    record: dict | None = None,
    opener: Callable[[], RawSource] | None = None,
) -> SourceInfo:
    """Read the beginning of ``source`` and describe it.

    Parameters
    ----------
    source
        Path or fsspec URL of the embedding file, a :class:`~biasdask.Location` or an fsspec mapper.
    format
        ``"auto"`` or one of :data:`FORMATS`. ``auto`` takes a first line ``N D`` (two integers) for a
        header, then tells text from binary by the bytes after the first word; without a header it is
        GloVe.
    record
        Its record (:func:`biasdask.io.fs.source_details`), when the caller has it: not asked again.
    opener
        What gives its raw bytes (:attr:`SourceInfo.opener`); None: its file system.

    Raises
    ------
    InputFormatError
        Empty file, a bad header, a first line without values, a truncated or corrupt gzip stream.
    BiasdaskError
        An unknown format name, a missing or unreachable file.
    """
    if format != "auto" and format not in FORMATS:
        raise BiasdaskError(f"unknown format {format!r}: expected auto, {', '.join(FORMATS)}")
    loc = as_location(source, "source")
    display = display_url(loc.url)
    if record is None:
        fs, path = url_to_fs(loc)
        with reading_source(display):
            try:
                details = fs.info(path)
            except FileNotFoundError:
                raise
            except Exception:  # noqa: BLE001 - some servers do not tell the size; it is only for progress
                details = {}
        record = source_record(display, details)
    size = record.get("size")
    with _Stream(loc, display, opener) as stream:
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
            raise InputFormatError(f"{display}: line 1: a word without values{tabs_hint(first)}")
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
        location=loc,
        display=display,
        format=format,
        compression=compressed,
        n_words=n_words,
        dim=dim,
        body_offset=body_offset,
        size=size,
        splittable=splittable and opener is None,
        record=record,
        opener=opener,
    )


_FLOAT_TOKEN_RE = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def _looks_like_text(body: bytes) -> bool:
    """Whether the first line of ``body`` is a word followed by decimal numbers.

    The float32 bytes of a binary record, up to the newline that ends it, are essentially never all
    decimal text (it would take every byte, the exponent bytes included, to be a digit, sign, dot or
    space).
    """
    nl = body.find(b"\n")
    line = (body if nl < 0 else body[:nl]).rstrip(WHITESPACE)
    space = line.find(b" ")
    tokens = [t for t in line[space + 1 :].split(b" ") if t] if space >= 0 else []
    return bool(tokens) and all(_FLOAT_TOKEN_RE.fullmatch(t) for t in tokens)


def _text_or_binary(body: bytes, dim: int) -> str:
    """Tell a text body from a binary one by what follows the header.

    A first line of a word and decimal numbers is text (the text parser then checks their count);
    otherwise the body is binary if its first record fits and holds finite floats, else text (whose
    parser then names what is wrong).
    """
    if not body.strip(WHITESPACE):
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
    on_progress
        Called with the number of raw (compressed) bytes consumed since the last call.
    """
    target = info.n_words
    if max_words is not None:
        target = max_words if target is None else min(target, max_words)
    record_bytes = info.record_bytes
    with _Stream(info.location, info.display, info.opener) as stream:
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


def head_block(info: SourceInfo, max_words: int, max_bytes: int = _SNIFF_BYTES) -> Block | None:
    """The first whole lines of a text source (at most ``max_words``, within its first ``max_bytes``
    after the header), for a look at its values; None when not even one line fits."""
    with _Stream(info.location, info.display, info.opener) as stream:
        head = b""
        while len(head) < info.body_offset + max_bytes:
            piece = stream.read(info.body_offset + max_bytes - len(head))
            if not piece:
                break
            head += piece
    body = head[info.body_offset :]
    found, end = find_units(np.frombuffer(body, dtype=np.uint8), 0, max_words, 0)
    return Block(0, 0, found, body[:end]) if found else None


def _find_units_fast(piece: bytes, arr: np.ndarray, pos: int, want: int, record_bytes: int) -> tuple[int, int]:
    """:func:`find_units`, with C's fast newline count to skip pieces that end no block."""
    if want <= 0:
        return 0, pos
    if not record_bytes:
        n = piece.count(b"\n", pos)
        if n < want:
            return n, (piece.rfind(b"\n") + 1 if n else pos)
    return find_units(arr, pos, want, record_bytes)


def _check_rest(info: SourceInfo, stream: _Stream, arr: np.ndarray, pos: int, max_words: int | None) -> None:
    """After the header's last word, only whitespace may follow (unless ``max_words`` cut the reading)."""
    if info.n_words is None or (max_words is not None and max_words < info.n_words):
        return
    rest = arr[pos:].tobytes()
    while True:
        if rest.strip(WHITESPACE):
            where = info.where(info.n_words)
            raise InputFormatError(f"{where}: the file has more words than its header's {info.n_words}")
        rest = stream.read()
        if not rest:
            return


def skip_lines(data: bytes, n: int) -> int:
    """Offset just after the ``n``-th newline of ``data`` (0 for ``n == 0``)."""
    found, end = find_units(np.frombuffer(data, dtype=np.uint8), 0, n, 0)
    if found < n:
        raise InputFormatError(f"expected {n} lines in a byte range, found {found}: did the file change?")
    return end


def count_newlines(loc: Location, starts: list[int], ends: list[int]) -> np.ndarray:
    """Count the ``\\n`` bytes in each byte range ``[starts[i], ends[i])`` of an uncompressed file."""
    return np.array(
        [
            np.count_nonzero(np.frombuffer(view_range(loc, start, end), dtype=np.uint8) == 10)
            for start, end in zip(starts, ends, strict=True)
        ],
        dtype=np.int64,
    )


def view_range(loc: Location, start: int, end: int) -> bytes | memoryview:
    """Bytes ``[start, end)`` of an uncompressed file: a read-only memory map of a local file (no copy
    of the page cache; unmapped when the view is dropped), what :func:`read_range` reads otherwise."""
    url = loc.url
    if (fsspec.core.split_protocol(url)[0] or "file") not in ("file", "local") or end <= start:
        return read_range(loc, start, end)
    base = start - start % mmap.ALLOCATIONGRANULARITY
    with reading_source(display_url(url)), open(fsspec.core.strip_protocol(str(url)), "rb") as f:
        if os.fstat(f.fileno()).st_size < end:
            raise InputFormatError(f"{display_url(url)}: the file is shorter than when ingest began: did it change?")
        mapped = mmap.mmap(f.fileno(), end - base, access=mmap.ACCESS_READ, offset=base)
    return memoryview(mapped)[start - base :]


def read_range(loc: Location, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of an uncompressed file."""
    fs, path = url_to_fs(loc)
    with reading_source(display_url(loc.url)):
        return fs.cat_file(path, start=start, end=end)


def check_only_whitespace_after(info: SourceInfo, offset: int) -> None:
    """Raise unless the uncompressed file holds only whitespace from ``offset`` on (after the header's words)."""
    assert info.size is not None and info.n_words is not None
    for start in range(offset, info.size, PIECE_BYTES):
        if read_range(info.location, start, min(start + PIECE_BYTES, info.size)).strip(WHITESPACE):
            raise InputFormatError(
                f"{info.where(info.n_words)}: the file has more words than its header's {info.n_words}"
            )
