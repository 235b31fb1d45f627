"""The embedding store: layout, whole-chunk writes, compaction, completion marker, replacement."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from biasdask.errors import BiasdaskError, CorruptStoreError, IncompleteStoreError, StoreConflictError
from biasdask.io import codecs, store
from biasdask.io.fs import Location


def _make(url, words, vectors, chunk, finish=True):
    store.prepare_store(
        url,
        language="en",
        source="test.vec",
        format="vec",
        dim=vectors.shape[1],
        chunk_words=chunk,
        n_words=len(words),
    )
    norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
    for start in range(0, len(words), chunk):
        sl = slice(start, start + chunk)
        store.write_block(url, start, np.array(words[sl], dtype=object), vectors[sl], norms[sl])
    if finish:
        store.finish_store(url, {"n_words": len(words), "n_duplicates": 0, "n_invalid_utf8": 0, "n_zero_vectors": 0})


def _data(n, dim=5, seed=0):
    rng = np.random.default_rng(seed)
    return [f"w{i}\xa0#{i}" for i in range(n)], rng.normal(size=(n, dim)).astype(np.float32)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("code", ["en", "pt-BR", "zh_Hans", "sr-Latn", "yue", "de-CH-1996"])
def test_language_codes_that_are_safe_path_components(code):
    assert store.check_language_code(code) == code


@pytest.mark.parametrize("code", ["", "../x", "a/b", "en/../../etc", "EN", "e", "english", "en-", "en us", ".", "en\n"])
def test_unsafe_or_invalid_language_codes_are_refused(code):
    with pytest.raises(BiasdaskError, match="invalid language code"):
        store.check_language_code(code)


def test_default_chunk_is_32_mib_of_vectors():
    assert store.default_chunk_words(300) == 27962
    assert store.default_chunk_words(2**30) == 1


@pytest.mark.parametrize("dim", [300, 100, 7])
def test_ingest_chunks_are_equal_and_even_in_number_up_to_32_mib(dim):
    most = store.default_chunk_words(dim)
    for n in [1, most - 1, most, most + 1, 2 * most + 5, 3 * most, 7 * most + 1, 8 * most, 9 * most, 71 * most + 3]:
        cw = store.ingest_chunk_words(dim, n)
        n_chunks = -(-n // cw)
        last = n - (n_chunks - 1) * cw
        assert cw <= most
        if n <= most:
            assert cw == most
            continue
        assert n_chunks % (2 if n_chunks <= 8 else 8) == 0, (n, cw)
        assert 0 <= cw - last < n_chunks  # equal but for the rounding of the last chunk
        assert n_chunks == -(-n // most) or cw > most // 2  # rounded up, never to tiny chunks
    assert store.ingest_chunk_words(dim, None) == most


def test_layout_read_back_by_xarray(tmp_path):
    words, vectors = _data(23)
    vectors[4] = 0
    url = str(tmp_path / "en.zarr")
    _make(url, words, vectors, chunk=10)
    ds = store.open_embeddings(url)
    assert ds.vectors.dtype == np.float32 and ds.vectors.dims == ("word", "dim")
    assert ds.vectors.chunks == ((10, 10, 3), (5,))
    assert ds.norm.chunks == ((10, 10, 3),) and ds.norm.dtype == np.float32
    np.testing.assert_array_equal(ds.vectors.values, vectors)
    assert [str(w) for w in ds.word.values] == words
    np.testing.assert_array_equal(ds["rank"].values, np.arange(1, 24))
    assert ds["rank"].dtype == np.int64 and "rank" in ds.coords
    np.testing.assert_allclose(ds.norm.values, np.linalg.norm(vectors, axis=1), rtol=1e-6)
    assert ds.norm.values[4] == 0  # a zero is a zero, not a fill value
    assert {"language", "source", "format", "dim", "created", "biasdask_version", "n_words"} <= set(ds.attrs)
    assert ds.attrs["biasdask_complete"] is True
    meta = json.loads((tmp_path / "en.zarr" / "vectors" / "zarr.json").read_text())
    assert meta["zarr_format"] == 3
    (blosc,) = [c["configuration"] for c in meta["codecs"] if c["name"] == "blosc"]
    assert blosc["cname"] == "lz4" and blosc["shuffle"] == "bitshuffle" and blosc["typesize"] == 4
    assert xr.open_zarr(url, consolidated=False).sizes == {"word": 23, "dim": 5}


def test_words_of_many_chunks_are_read_in_order_as_zarr_reads_them(tmp_path, monkeypatch):
    """The words are decoded directly from their chunks (fetched together, which lists them sorted:
    c/10 before c/2); they equal zarr's own read, and without the direct path (another encoding),
    zarr's read is used."""
    words, vectors = _data(123)
    url = str(tmp_path / "en.zarr")
    _make(url, words, vectors, chunk=10)  # 13 word chunks
    import zarr

    oracle = [str(w) for w in zarr.open_group(url, mode="r")["word"][:]]
    assert oracle == words
    assert list(store.open_embeddings(url).word.values) == words
    monkeypatch.setattr(store, "_WORD_CODECS", ("another",))
    assert list(store.open_embeddings(url).word.values) == words


def test_memory_store_round_trip():
    words, vectors = _data(7)
    _make("memory://bd-test/en.zarr", words, vectors, chunk=3)
    np.testing.assert_array_equal(store.open_embeddings("memory://bd-test/en.zarr").vectors.values, vectors)
    store.remove_store("memory://bd-test/en.zarr")


def test_only_whole_chunks_can_be_written(tmp_path):
    url = str(tmp_path / "c.zarr")
    store.prepare_store(url, language="en", source="s", format="vec", dim=2, chunk_words=4, n_words=10)
    block = (np.array(["a", "b", "c", "d"], dtype=object), np.zeros((4, 2), np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="not one whole chunk"):
        store.write_block(url, 2, *block)
    with pytest.raises(ValueError, match="not one whole chunk"):
        store.write_block(url, 0, *(b[:3] for b in block))
    store.write_block(url, 8, *(b[:2] for b in block))  # the edge chunk


def test_store_without_marker_is_refused_and_missing_store_is_named(tmp_path):
    words, vectors = _data(5)
    url = str(tmp_path / "half.zarr")
    _make(url, words, vectors, chunk=2, finish=False)
    with pytest.raises(
        IncompleteStoreError, match=r"half\.zarr: incomplete embedding store .* run biasdask ingest again"
    ):
        store.open_embeddings(url)
    with pytest.raises(BiasdaskError, match=r"nothing\.zarr: no biasdask embedding store"):
        store.open_embeddings(str(tmp_path / "nothing.zarr"))


def test_replacing_refuses_anything_but_a_biasdask_store(tmp_path):
    other = tmp_path / "precious"
    other.mkdir()
    (other / "thesis.tex").write_text("...")
    with pytest.raises(StoreConflictError, match="precious exists and is not a biasdask embedding store"):
        store.prepare_store(str(other), language="en", source="s", format="vec", dim=2, chunk_words=4)
    assert (other / "thesis.tex").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreConflictError):
        store.check_replaceable(str(tmp_path / "file"))
    (tmp_path / "empty").mkdir()
    store.check_replaceable(str(tmp_path / "empty"))
    words, vectors = _data(5)
    _make(str(tmp_path / "old.zarr"), words, vectors, chunk=2, finish=False)
    store.check_replaceable(str(tmp_path / "old.zarr"))  # incomplete: ours, replaceable


@pytest.mark.parametrize(
    "drop", [[3], [0, 1, 2, 10], [9, 10, 11, 12, 13, 14, 15, 16], [24], [20, 21, 22, 23, 24], list(range(1, 25, 2))]
)
def test_compaction_gives_the_store_written_without_the_dropped_rows(tmp_path, drop):
    words, vectors = _data(25, seed=1)
    vectors[drop[0]] = 0
    url = str(tmp_path / "c.zarr")
    _make(url, words, vectors, chunk=4, finish=False)
    assert store.compact_store(url, np.array(drop)) == 1
    keep = np.setdiff1d(np.arange(25), drop)
    expected = str(tmp_path / "e.zarr")
    _make(expected, [words[i] for i in keep], vectors[keep], chunk=4, finish=False)
    got, want = _files(Path(url)), _files(Path(expected))
    got.pop("zarr.json"), want.pop("zarr.json")  # group attrs hold the creation time
    assert got == want  # byte for byte, metadata and every chunk


def test_a_relative_path_still_reads_from_another_directory(tmp_path, monkeypatch):
    """Workers may run elsewhere in the file tree: the lazy arrays hold the absolute path."""
    words, vectors = _data(9)
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    _make("rel.zarr", words, vectors, chunk=4)
    ds = store.open_embeddings("rel.zarr")
    monkeypatch.chdir(tmp_path)
    np.testing.assert_array_equal(ds.vectors.values, vectors)


def test_find_words_gives_each_words_row_as_a_plain_scan_does():
    words, vectors = _data(23)
    _make("memory://bd-test/find.zarr", words, vectors, chunk=4)
    asked = [words[17], "absent", words[0], words[17], words[22], "w1", ""]  # "": the last chunk's padding
    expected = [words.index(w) if w in words else -1 for w in asked]  # the oracle: a scan of the list
    assert store.find_words("memory://bd-test/find.zarr", asked).tolist() == expected
    assert store.find_words("memory://bd-test/find.zarr", []).tolist() == []
    lean = store.open_vectors("memory://bd-test/find.zarr")
    assert "word" not in lean.coords
    np.testing.assert_array_equal(lean["vectors"].values, vectors)
    store.remove_store("memory://bd-test/find.zarr")


# ---------------------------------------------------------------------------------------------- scaled integers


def test_scaled_decoding_is_the_float32_parse_of_every_4_decimal_text():
    """Exhaustive: for every int16 k, decode_scaled(k) is bit for bit np.float32 of its decimal text,
    the codec's own decoding (k / 10^4 in float64, then float32) and gives k back."""
    k = np.arange(-(2**15) + 1, 2**15, dtype=np.int16)[:, None]
    text = np.array(
        [np.float32(f"{'-' if x < 0 else ''}{abs(x) // 10000}.{abs(x) % 10000:04d}") for x in k[:, 0].tolist()]
    )
    out = np.empty(k.shape, np.float32)
    codecs.decode_scaled(k, out)
    assert out[:, 0].tobytes() == text.tobytes()
    assert out.tobytes() == (k / 10000).astype(np.float32).tobytes()
    ints, negative = codecs.encode_scaled(out, "int16")
    assert np.array_equal(ints, k) and not negative.any()


def test_zarrs_codec_warning_stays_silenced_while_any_thread_opens_a_store():
    """A study opens its stores in parallel threads: zarr's warning about numcodecs codecs stays silenced
    as long as any of them is still opening one. (Each silencing it on its own, a thread that finished
    first restored the filters without the silencing while another still opened a store, whose
    warning reached the user.)"""
    import threading
    import warnings

    from zarr.codecs.numcodecs import FixedScaleOffset

    a_in, b_in, a_go, a_out = (threading.Event() for _ in range(4))
    errors = []

    @codecs.quiet_codecs
    def first():
        a_in.set()
        a_go.wait(10)

    @codecs.quiet_codecs
    def second():
        b_in.set()
        a_out.wait(10)
        FixedScaleOffset(offset=0, scale=10, dtype="<f4", astype="<i2")  # zarr warns as it makes one

    def record(fn):
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the warning, raised as an error
            errors.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = threading.Thread(target=record, args=(first,))
        a.start()
        a_in.wait(10)
        b = threading.Thread(target=record, args=(second,))
        b.start()
        b_in.wait(10)
        a_go.set()  # the first leaves while the second is still inside
        a.join(10)
        a_out.set()
        b.join(10)
    assert errors == []


def test_vlen_find_gives_each_words_first_index_as_a_plain_scan_does():
    import numcodecs

    rng = np.random.default_rng(3)
    tricky = ["", "he", "é", "e\u0301", "\x02\x00\x00\x00he", "\x00", "l" * 300, "日本", "he ", "He"]
    vocabulary = [*tricky, *(f"w{i}" for i in rng.integers(0, 40, 60)), *tricky[::-1]]
    chunks = [vocabulary[i : i + 7] for i in range(0, len(vocabulary), 7)]
    payloads = [numcodecs.VLenUTF8().encode(np.array(c, dtype=object)) for c in chunks]
    asked = [*tricky, "w3", "w39", "w40", "absent", "\ud800", "he", "h"]
    expected = [vocabulary.index(w) if w in vocabulary else -1 for w in asked]  # the oracle: a scan
    assert codecs.vlen_find(payloads, asked).tolist() == expected
    assert codecs.vlen_find(payloads, []).tolist() == []
    assert codecs.vlen_find([], ["he"]).tolist() == [-1]


def test_int32_decoding_equals_the_codecs_up_to_its_limit():
    k = np.arange(-codecs.ENCODING_LIMITS["int32"], codecs.ENCODING_LIMITS["int32"] + 1, dtype=np.int32)[:, None]
    out = np.empty(k.shape, np.float32)
    codecs.decode_scaled(k, out)
    assert out.tobytes() == (k / 10000).astype(np.float32).tobytes()
    assert np.array_equal(codecs.encode_scaled(out, "int32")[0], k)


@pytest.mark.parametrize(
    ("values", "encoding"),
    [
        (["0.1234", "-0.0000", "3.2767", "-3.2767", "-0"], "int16"),
        (["9.9999", "-3.2768", "0.5"], "int32"),
        (["0.12345", "0.1"], "float32"),  # 5 decimals
        (["1e-05", "0.1"], "float32"),
        (["419.4303", "-1"], "int32"),
        (["419.4304", "-1"], "float32"),  # beyond int32's exact range
    ],
)
def test_the_narrowest_lossless_encoding_is_chosen(values, encoding):
    vectors = np.array([[np.float32(v) for v in values]])
    assert codecs.fitting_encoding(vectors) == encoding


@pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")
def test_scaled_store_round_trip_keeps_negative_zeros_and_any_zarr_reader_decodes_it(tmp_path):
    words, _ = _data(23)
    vectors = (np.random.default_rng(2).integers(-30000, 30000, (23, 12)) / 10000).astype(np.float32)
    vectors[3, [0, 5, 11]] = np.float32(-0.0)
    vectors[7] = 0
    url = str(tmp_path / "s.zarr")
    store.prepare_store(
        url, language="en", source="s", format="vec", dim=12, chunk_words=10, n_words=23, vector_encoding="int16"
    )
    norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
    for start in range(0, 23, 10):
        store.write_block(
            url,
            start,
            np.array(words[start : start + 10], dtype=object),
            vectors[start : start + 10],
            norms[start : start + 10],
        )
    store.finish_store(url, {"n_words": 23})
    ds = store.open_embeddings(url)
    assert ds.attrs["vector_encoding"] == "int16" and ds.attrs["vector_scale"] == 10000
    assert ds.vectors.values.tobytes() == vectors.tobytes()  # -0.0 included
    rows = np.array([0, 3, 9])  # of chunk 0: only these are decoded, -0.0 and all
    assert store.read_chunk(url, "vectors", 0, rows).tobytes() == vectors[rows].tobytes()
    assert store.read_chunk(url, "norm", 1, np.array([2])).tobytes() == norms[[12]].tobytes()
    plain = xr.open_zarr(url, consolidated=False).vectors.values  # zarr's codec: equal numbers, +0.0 for -0.0
    assert plain.dtype == np.float32 and np.array_equal(plain, vectors) and plain.tobytes() != vectors.tobytes()
    meta = json.loads((tmp_path / "s.zarr" / "vectors" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["numcodecs.fixedscaleoffset", "bytes", "blosc", "crc32c"]
    assert meta["codecs"][0]["configuration"]["astype"] == "<i2"
    # a block that does not fit is refused, nothing written
    with pytest.raises(codecs.EncodingError, match="need float32") as err:
        store.write_block(url, 0, np.array(words[:10], dtype=object), vectors[:10] + np.float32(1e-5), norms[:10])
    assert err.value.needed == "float32"
    assert store.open_embeddings(url).vectors.values.tobytes() == vectors.tobytes()


def test_compaction_of_a_scaled_store_keeps_negative_zeros(tmp_path):
    words, _ = _data(25, seed=1)
    vectors = (np.random.default_rng(3).integers(-900, 900, (25, 9)) / 10000).astype(np.float32)
    vectors[[4, 17, 24], 2] = np.float32(-0.0)
    url = str(tmp_path / "c.zarr")
    store.prepare_store(
        url, language="en", source="s", format="vec", dim=9, chunk_words=4, n_words=25, vector_encoding="int16"
    )
    norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
    for start in range(0, 25, 4):
        store.write_block(
            url,
            start,
            np.array(words[start : start + 4], dtype=object),
            vectors[start : start + 4],
            norms[start : start + 4],
        )
    store.compact_store(url, np.array([1, 5, 6]))
    store.finish_store(url, {"n_words": 22})
    keep = np.setdiff1d(np.arange(25), [1, 5, 6])
    assert store.open_embeddings(url).vectors.values.tobytes() == vectors[keep].tobytes()


@pytest.mark.parametrize("chunk", ["vectors/c/1/0", "negative_zero/c/0/0"])
def test_a_flipped_byte_of_a_scaled_store_fails_its_checksum(tmp_path, chunk):
    words, _ = _data(20)
    vectors = (np.random.default_rng(4).integers(-3000, 3000, (20, 16)) / 10000).astype(np.float32)
    vectors[0, 0] = np.float32(-0.0)
    url = str(tmp_path / "s.zarr")
    store.prepare_store(
        url, language="en", source="s", format="vec", dim=16, chunk_words=10, n_words=20, vector_encoding="int16"
    )
    norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
    for start in (0, 10):
        store.write_block(
            url,
            start,
            np.array(words[start : start + 10], dtype=object),
            vectors[start : start + 10],
            norms[start : start + 10],
        )
    store.finish_store(url, {"n_words": 20})
    path = tmp_path / "s.zarr" / chunk
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match=f"s.zarr: chunk {chunk}: .*checksum"):
        store.open_embeddings(url).vectors.values  # noqa: B018


@pytest.mark.parametrize("encoding", ["float32", "int16"])
def test_vectors_decoded_into_the_threads_reused_buffer_equal_zarrs_read(tmp_path, encoding):
    """A chunk read for a reader that consumes it at once (``reuse=True``: u) is decoded by numcodecs into a
    buffer the thread keeps: the same values as zarr's read, the short last chunk included; the next
    chunk lands in the same memory; a flipped byte still fails its checksum, naming the chunk."""
    import zarr

    words, _ = _data(23)
    vectors = (np.random.default_rng(5).integers(-3000, 3000, (23, 12)) / 10000).astype(np.float32)
    url = str(tmp_path / "s.zarr")
    store.prepare_store(
        url, language="en", source="s", format="vec", dim=12, chunk_words=10, n_words=23, vector_encoding=encoding
    )
    norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
    for start in range(0, 23, 10):
        store.write_block(
            url,
            start,
            np.array(words[start : start + 10], dtype=object),
            vectors[start : start + 10],
            norms[start : start + 10],
        )
    store.finish_store(url, {"n_words": 23})
    array = zarr.open_array(url, path="vectors", mode="r")
    raw = array if encoding == "float32" else codecs.raw_vectors(array)
    first = None
    for index, rows in enumerate([slice(0, 10), slice(10, 20), slice(20, 23)]):
        reused, negative = store.read_stored_vectors(url, index, reuse=True)
        plain, plain_negative = store.read_stored_vectors(url, index)
        expected = raw[rows]
        assert reused.dtype == expected.dtype and reused.shape == expected.shape
        assert reused.tobytes() == expected.tobytes() == plain.tobytes()
        assert (negative is None) == (encoding == "float32") and (
            negative is None or np.array_equal(negative, plain_negative)
        )
        assert not np.shares_memory(plain, reused)
        first = reused if first is None else first
        assert np.shares_memory(first, reused)  # one buffer for every chunk
    picked = store.read_chunk(url, "vectors", 0, np.array([1, 4]))  # a few rows: read into the buffer too
    store.read_stored_vectors(url, 1, reuse=True)  # which this overwrites
    assert picked.tobytes() == vectors[[1, 4]].tobytes()
    path = tmp_path / "s.zarr" / "vectors" / "c" / "1" / "0"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="s.zarr: chunk vectors/c/1/0: .*checksum"):
        store.read_stored_vectors(url, 1, reuse=True)
    path.unlink()
    with pytest.raises(CorruptStoreError, match="s.zarr: chunk vectors/c/1/0 is missing"):
        store.read_stored_vectors(url, 1, reuse=True)


@pytest.mark.parametrize(
    ("compressors", "direct"),
    [
        (("zstd", "crc32c"), True),
        (("blosc", "crc32c"), True),
        (("gzip", "crc32c"), False),  # a compressor ingest does not write
        (("zstd",), False),  # no checksum
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "uint8", ">i2"])
def test_chunks_encoded_as_ingest_encodes_are_decoded_directly_and_others_through_zarr(
    tmp_path, monkeypatch, compressors, direct, dtype
):
    """Chunks of bytes, blosc or zstd and crc32c (in this machine's byte order) are decoded by numcodecs,
    the others by zarr; both give zarr's values, the short last chunk cut to its rows, and name a
    missing chunk."""
    import zarr

    made = {
        "zstd": zarr.codecs.ZstdCodec(),
        "blosc": zarr.codecs.BloscCodec(cname="lz4", shuffle="bitshuffle"),
        "gzip": zarr.codecs.GzipCodec(),
        "crc32c": zarr.codecs.Crc32cCodec(),
    }
    url = str(tmp_path / "g.zarr")
    big = dtype.startswith(">")
    array = zarr.open_group(url, mode="w").create_array(
        "a",
        shape=(10, 3),
        chunks=(4, 3),
        dtype=dtype.lstrip(">"),
        compressors=[made[c] for c in compressors],
        serializer=zarr.codecs.BytesCodec(endian="big" if big else "little"),
    )
    expected = (np.arange(30).reshape(10, 3) * 7).astype(dtype.lstrip(">"))
    array[...] = expected
    through_zarr = []
    read_verified = store._read_verified
    monkeypatch.setattr(store, "_read_verified", lambda *a: through_zarr.append(1) or read_verified(*a))
    loc = Location(url)
    for index, rows in enumerate([slice(0, 4), slice(4, 8), slice(8, 10)]):
        got = store._read_chunk(loc, array, "a", index)
        assert got.dtype == expected.dtype and got.tobytes() == expected[rows].tobytes()
    assert bool(through_zarr) is not (direct and not big)  # big-endian bytes are zarr's to swap
    (tmp_path / "g.zarr" / "a" / "c" / "1" / "0").unlink()
    with pytest.raises(CorruptStoreError, match=r"g.zarr: chunk a/c/1/0 is missing"):
        store._read_chunk(loc, array, "a", 1)
