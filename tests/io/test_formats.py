"""The embedding file readers: format detection, streaming blocks, and the compiled parser."""

from __future__ import annotations

import gzip
import socket

import numpy as np
import pytest

from biasdask.errors import BiasdaskError, InputFormatError
from biasdask.io import formats
from biasdask.io.fs import display_url, storage_options_for
from biasdask.io.parse import parse_block, word_hash

# tokens that break str.split(), splitlines(), CSV readers or NA handling
ODD_WORDS = [
    '"quoted"',
    "#hash",
    "NA",
    "null",
    "nan",
    "-1",
    "a\xa0b",
    "nel\x85x",
    "ls\u2028x",
    "vt\x0bx",
    "cr\rx",
    "tab\tx",
]


def _vec_text(words, vectors, header=True, sep=" ", end=" \n") -> bytes:
    lines = [f"{len(words)} {vectors.shape[1]}\n"] if header else []
    lines += [w + sep + " ".join(repr(float(x)) for x in v) + end for w, v in zip(words, vectors)]
    return "".join(lines).encode("utf-8")


def _write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _parse_all(path, **kw):
    info = formats.sniff_source(path, **kw)
    blocks = list(formats.iter_blocks(info, 7))
    parsed = [parse_block(b.data, b.n, info, b.first) for b in blocks]
    words = [w for p in parsed for w in p.words]
    return info, words, np.concatenate([p.vectors for p in parsed]), parsed


# ---------------------------------------------------------------------------------------------- floats


def _random_tokens(rng, n):
    """Decimal tokens of every shape the grammar allows, many beyond the fast path."""
    tokens = []
    for _ in range(n):
        kind = rng.integers(7)
        if kind == 0:
            tokens.append(f"{rng.normal():.4f}")
        elif kind == 1:
            tokens.append(repr(np.float32(rng.normal() * 10.0 ** rng.integers(-45, 39))).split("(")[-1].rstrip(")"))
        elif kind == 2:
            tokens.append(f"{rng.normal():.25f}")  # more than 19 significant digits
        elif kind == 3:
            tokens.append(f"{rng.normal():.6e}".replace("e", "E" if rng.integers(2) else "e"))
        elif kind == 4:
            digits = "".join(str(d) for d in rng.integers(0, 10, rng.integers(1, 30)))
            dot = rng.integers(0, len(digits) + 1)
            dot_or_not = "." if rng.integers(4) or not digits[:dot] else ""  # digits only, too
            tokens.append(str(rng.choice(["-", "+", ""])) + digits[:dot] + dot_or_not + digits[dot:])
        elif kind == 5:
            tokens.append(f"{rng.integers(-(10**6), 10**6)}e{rng.integers(-60, 30)}")
        else:
            tokens.append(
                str(rng.choice(["0", "-0", "0.0", ".5", "5.", "-.25e1", "1e-50", "3.4028235e38", "00012.5000"]))
            )
    return tokens


def test_parsed_floats_equal_numpy_float32_of_every_token(tmp_path):
    rng = np.random.default_rng(1)
    dim = 10
    tokens = _random_tokens(rng, 4000)
    lines = [f"w{i} " + " ".join(tokens[i * dim : (i + 1) * dim]) for i in range(len(tokens) // dim)]
    path = _write(tmp_path, "floats.txt", ("\n".join(lines) + "\n").encode())
    info, words, vectors, parsed = _parse_all(path)
    expected = np.array([np.float32(float(t)) for t in tokens], dtype=np.float32).reshape(-1, dim)
    assert info.format == "glove" and info.dim == dim
    assert vectors.tobytes() == expected.tobytes()  # bit for bit, signs of zero included
    norms = np.concatenate([p.norms for p in parsed])  # rows with tokens re-read in Python included
    with np.errstate(over="ignore"):  # a norm beyond float32's range is inf, as float32 storage must be
        want = np.linalg.norm(expected.astype(np.float64), axis=1).astype(np.float32)
    np.testing.assert_allclose(norms, want, rtol=1e-6)


def test_norms_are_the_raw_lengths(tmp_path):
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(20, 6)).astype(np.float32)
    vectors[3] = 0
    path = _write(tmp_path, "n.vec", _vec_text([f"w{i}" for i in range(20)], vectors))
    _, _, _, parsed = _parse_all(path)
    norms = np.concatenate([p.norms for p in parsed])
    np.testing.assert_allclose(norms, np.linalg.norm(vectors.astype(np.float64), axis=1), rtol=1e-6)
    assert norms[3] == 0


# ---------------------------------------------------------------------------------------------- gensim


@pytest.mark.parametrize("binary", [False, True])
def test_files_gensim_wrote_read_as_gensim_reads_them(tmp_path, binary):
    gensim = pytest.importorskip("gensim.models")
    rng = np.random.default_rng(3)
    words = ODD_WORDS + [f"w{i}" for i in range(40)]
    kv = gensim.KeyedVectors(25)
    kv.add_vectors(
        words, (rng.normal(size=(len(words), 25)) * 10.0 ** rng.integers(-6, 3, (len(words), 1))).astype(np.float32)
    )
    path = str(tmp_path / ("g.bin" if binary else "g.txt"))
    kv.save_word2vec_format(path, binary=binary)
    info, got_words, vectors, _ = _parse_all(path)
    expected = gensim.KeyedVectors.load_word2vec_format(path, binary=binary)
    assert info.format == ("word2vec-binary" if binary else "vec")
    assert got_words == list(expected.index_to_key) == words
    assert vectors.tobytes() == expected.vectors.astype(np.float32).tobytes()


# ---------------------------------------------------------------------------------------------- detection


def test_detects_each_format_and_gzip_by_content_not_name(tmp_path):
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    words = ["a", "b", "c"]
    text = _vec_text(words, vectors)
    binary = b"3 4\n" + b"".join(w.encode() + b" " + v.tobytes() + b"\n" for w, v in zip(words, vectors))
    cases = {
        "x.vec": (text, "vec", False),
        "x.txt": (_vec_text(words, vectors, header=False), "glove", False),
        "x.bin": (binary, "word2vec-binary", False),
        "plain.data": (gzip.compress(text), "vec", True),
        "x.bin.gz": (gzip.compress(binary), "word2vec-binary", True),
    }
    for name, (data, fmt, gz) in cases.items():
        info, got_words, got, _ = _parse_all(_write(tmp_path, name, data))
        assert (info.format, info.compression == "gzip", info.dim) == (fmt, gz, 4), name
        assert info.n_words == (None if fmt == "glove" else 3)
        assert info.splittable == (not gz and fmt != "word2vec-binary")
        assert got_words == words
        np.testing.assert_array_equal(got, vectors)


def test_explicit_format_that_does_not_fit_is_an_error(tmp_path):
    path = _write(tmp_path, "g.txt", b"a 1 2\nb 3 4\n")
    with pytest.raises(InputFormatError, match=r"g\.txt: line 1: expected a header 'N D'"):
        formats.sniff_source(path, format="vec")
    with pytest.raises(BiasdaskError, match="unknown format 'csv'"):
        formats.sniff_source(path, format="csv")
    assert formats.sniff_source(path, format="glove").dim == 2


def test_missing_file_is_named(tmp_path):
    with pytest.raises(BiasdaskError, match=r"nothere\.vec: no such file"):
        formats.sniff_source(str(tmp_path / "nothere.vec"))


def test_unreachable_source_is_a_one_line_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BiasdaskError, match=rf"^http://127\.0\.0\.1:{port}/x\.vec: .*unreachable[^\n]*$"):
        formats.sniff_source(f"http://user:secret@127.0.0.1:{port}/x.vec")


def test_an_http_stream_is_read_from_the_network_a_piece_at_a_time(tmp_path, http_server, monkeypatch):
    """fsspec's http stream waits for its event loop at every read: the decompressor's small reads go to a
    buffer, and the network is asked for pieces of at least a MiB; the blocks are the local file's."""
    from fsspec.implementations.http import HTTPStreamFile

    root, base = http_server
    rng = np.random.default_rng(2)
    rows = [f"w{i} " + " ".join(f"{v:.4f}" for v in rng.standard_normal(50)) + " \n" for i in range(4000)]
    text = ("4000 50\n" + "".join(rows)).encode()
    (root / "x.vec.gz").write_bytes(gzip.compress(text, mtime=0))
    (tmp_path / "x.vec").write_bytes(text)
    asked: list[int] = []
    read = HTTPStreamFile.read
    monkeypatch.setattr(HTTPStreamFile, "read", lambda self, n=-1: asked.append(n) or read(self, n))
    remote = formats.sniff_source(f"{base}/x.vec.gz")
    blocks = [(b.index, b.n, b.data) for b in formats.iter_blocks(remote, 700)]
    local = formats.sniff_source(str(tmp_path / "x.vec"))
    assert blocks == [(b.index, b.n, b.data) for b in formats.iter_blocks(local, 700)]
    assert len(asked) > 2 and np.median(asked) >= 2**20, asked


# ---------------------------------------------------------------------------------------------- blocks


def test_blocks_hold_exactly_block_words_lines_and_gzip_gives_the_same(tmp_path):
    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(103, 3)).astype(np.float32)
    text = _vec_text([f"w{i}" for i in range(103)], vectors)
    plain = _write(tmp_path, "b.vec", text)
    packed = _write(tmp_path, "b.vec.gz", gzip.compress(text))
    for path in (plain, packed):
        info = formats.sniff_source(path)
        blocks = list(formats.iter_blocks(info, 10))
        assert [b.n for b in blocks] == [10] * 10 + [3]
        assert [b.first for b in blocks] == list(range(0, 103, 10))
        assert all(b.data.count(b"\n") == b.n for b in blocks)
        assert b"".join(b.data for b in blocks) == text[info.body_offset :]


def test_small_pieces_do_not_change_the_blocks(tmp_path, monkeypatch):
    vectors = np.random.default_rng(5).normal(size=(50, 4)).astype(np.float32)
    words = [f"w{i}" for i in range(50)]
    text = _vec_text(words, vectors, header=False).rstrip(b"\n")  # last line without newline
    binary = b"50 4\n" + b"".join(w.encode() + b" " + v.tobytes() for w, v in zip(words, vectors))
    monkeypatch.setattr(formats, "PIECE_BYTES", 13)
    for name, data in (("p.txt", text), ("p.bin", binary)):
        info, got_words, got, _ = _parse_all(_write(tmp_path, name, data))
        assert got_words == words, name
        np.testing.assert_array_equal(got, vectors)


def test_max_words_stops_reading(tmp_path):
    vectors = np.ones((30, 2), dtype=np.float32)
    text = _vec_text([f"w{i}" for i in range(30)], vectors) + b"garbage that is never read\n"
    info = formats.sniff_source(_write(tmp_path, "m.vec", text))
    blocks = list(formats.iter_blocks(info, 4, max_words=9))
    assert [b.n for b in blocks] == [4, 4, 1]


def test_crlf_and_trailing_spaces_are_tolerated(tmp_path):
    data = b"2 3\r\nx 1 2 3 \r\ny 4 5 6\t \n"
    info, words, vectors, _ = _parse_all(_write(tmp_path, "crlf.vec", data))
    assert words == ["x", "y"]
    np.testing.assert_array_equal(vectors, [[1, 2, 3], [4, 5, 6]])


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    data = b"3 2\nok 1 2\nbad\xff\xfe 3 4\n\xe2\x82 5 6\n"
    _, words, _, parsed = _parse_all(_write(tmp_path, "u.vec", data))
    assert words == ["ok", "bad\ufffd\ufffd", "\ufffd"]
    assert sum(p.n_invalid_utf8 for p in parsed) == 2
    hashes = np.concatenate([p.hashes for p in parsed])
    assert hashes[1] == word_hash("bad\ufffd\ufffd") and hashes[0] == word_hash("ok")


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"a 1 2 3\nb 1 2\nc 1 2 3\n", r"line 3 \('b'\): expected 3 values, found 2"),
        (b"a 1 2 3\nb 1 2 3 4\nc 1 2 3\n", r"line 3 \('b'\): expected 3 values, found 4"),
        (b"a 1 2 3\nb\nc 1 2 3\n", r"line 3 \('b'\): expected 3 values, found 0"),
        (b"a 1 2 3\nb 1 x 3\nc 1 2 3\n", r"line 3 \('b'\): non-numeric value 'x' in field 2"),
        (b"a 1 2 3\nb 1 2 3.5.1\nc 1 2 3\n", r"line 3 \('b'\): non-numeric value '3.5.1' in field 3"),
        (b"a 1 2 3\nb 1 2e 3\nc 1 2 3\n", r"line 3 \('b'\): non-numeric value '2e' in field 2"),
        (b"a 1 2 3\nb 1  2\nc 1 2 3\n", r"line 3 \('b'\): empty value in field 2"),
        (b"a 1 2 3\nb 1\t2 3\nc 1 2 3\n", r"line 3 \('b'\): non-numeric value '1\\t2' in field 1"),
        (b"a 1 2 3\nb 1 nan 3\nc 1 2 3\n", r"line 3 \('b'\): non-finite value 'nan' in field 2"),
        (b"a 1 2 3\nb 1 2 -Infinity\nc 1 2 3\n", r"line 3 \('b'\): non-finite value '-Infinity' in field 3"),
        (b"a 1 2 3\nb 1 4e38 3\nc 1 2 3\n", r"line 3 \('b'\): non-finite value '4e38' in field 2 \(out of float32"),
        (b"a 1 2 3\nb 1 2 3\n", r"the header says 3 words but the file has only 2 lines"),
        (b"a 1 2 3\nb 1 2 3\nc 1 2 3\nd 1 2 3\n", r"line 5: the file has more words than its header's 3"),
        (b"", r"the header says 3 words but the file has only 0 lines"),
    ],
)
def test_bad_text_is_an_error_naming_file_and_line(tmp_path, body, message):
    path = _write(tmp_path, "bad.vec", b"3 3\n" + body)
    with pytest.raises(InputFormatError, match=r"bad\.vec: " + message):
        _parse_all(path)


def test_trailing_blank_lines_after_the_header_words_are_fine(tmp_path):
    _, words, _, _ = _parse_all(_write(tmp_path, "t.vec", b"1 2\na 1 2\n\n \n"))
    assert words == ["a"]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.vec", b"", r"empty\.vec: empty file"),
        ("empty.vec.gz", gzip.compress(b"", mtime=0), r"empty\.vec\.gz: empty file"),
        ("zero.vec", b"0 300\n", r"zero\.vec: line 1: header says 0 words"),
        ("noval.txt", b"word\nx 1\n", r"noval\.txt: line 1: a word without values"),
    ],
)
def test_files_without_vectors_are_errors(tmp_path, name, data, message):
    with pytest.raises(InputFormatError, match=message):
        formats.sniff_source(_write(tmp_path, name, data))


def test_truncated_gzip_is_an_error(tmp_path):
    vectors = np.random.default_rng(6).normal(size=(200, 10)).astype(np.float32)
    packed = gzip.compress(_vec_text([f"w{i}" for i in range(200)], vectors))
    path = _write(tmp_path, "cut.vec.gz", packed[: len(packed) * 2 // 3])
    with pytest.raises(InputFormatError, match=r"cut\.vec\.gz: truncated gzip stream"):
        _parse_all(path)


def test_truncated_or_non_finite_binary_is_an_error(tmp_path):
    v = np.array([[1, 2], [3, np.inf]], dtype=np.float32)
    full = b"2 2\n" + b"a " + v[0].tobytes() + b"\nb " + v[1].tobytes() + b"\n"
    with pytest.raises(InputFormatError, match=r"t\.bin: word 2 \('b'\): non-finite value inf in field 2"):
        _parse_all(_write(tmp_path, "t.bin", full))
    with pytest.raises(InputFormatError, match=r"c\.bin: word 2: truncated"):
        _parse_all(_write(tmp_path, "c.bin", full[:-3]))


# ---------------------------------------------------------------------------------------------- urls


def test_display_url_strips_credentials():
    assert display_url("https://user:pw@host:8080/a/b.vec?X-Amz-Signature=s#f") == "https://host:8080/a/b.vec"
    assert display_url("s3://bucket/key.vec.gz") == "s3://bucket/key.vec.gz"
    assert display_url("/tmp/x.vec") == "/tmp/x.vec"


def test_flat_storage_options_go_to_object_stores_only():
    opts = {"endpoint_url": "http://127.0.0.1:1", "key": "k"}
    assert storage_options_for("s3://b/k", opts) == opts
    assert storage_options_for("https://h/x.vec", opts) == {}
    assert storage_options_for("/tmp/x", opts) == {}
    keyed = {"s3": opts, "https": {"headers": {"A": "b"}}}
    assert storage_options_for("https://h/x.vec", keyed) == {"headers": {"A": "b"}}
    assert storage_options_for("memory://b/x", keyed) == {}  # (gs:// without gcsfs: tests/io/test_storage_options.py)
    nested = {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}  # flat, though every value is a dict
    assert storage_options_for("s3://b/k", nested) == nested


def test_the_parsers_multiplication_shortcut_rounds_like_the_division():
    """Below 2^22 digits and 8 decimals the fast path multiplies by the double nearest 10^-n: for every
    such mantissa this rounds to the float32 of the correctly rounded quotient (what gensim gets)."""
    from biasdask.io.parse import _NEG_POW10

    mant = np.arange(2**22, dtype=np.float64)
    for n in range(9):
        assert (mant * _NEG_POW10[n]).astype(np.float32).tobytes() == (mant / 10.0**n).astype(np.float32).tobytes()
