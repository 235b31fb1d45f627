"""Ingest end to end: gensim as the independent reader, real files, every source and destination,
parallel equal to sequential, bad input, and a killed ingest that is completed by running it again."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import numpy as np
import pytest

from biasdask import Location
from biasdask.cli import main
from biasdask.engine import cluster as cluster_module
from biasdask.engine import ingest as ingest_module
from biasdask.engine.ingest import ingest, plan_ranges
from biasdask.errors import BiasdaskError, InputFormatError, StoreConflictError
from biasdask.io.store import open_embeddings

ODD_WORDS = ['"quoted"', "#hash", "NA", "null", "nan", "a\xa0b", "nel\x85x", "ls\u2028x", "vt\x0bx", "cr\rx"]


def _lines(n, dim, seed=0, duplicates=(), zeros=(), invalid=()):
    """Lines of a fastText-like file: odd words, 4-decimal values, a trailing space."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(0, 0.3, (n, dim)), 4)
    words = [(ODD_WORDS[i] if i < len(ODD_WORDS) else f"w{i}").encode() for i in range(n)]
    for later, first in duplicates:
        words[later] = words[first]
    for i in zeros:
        values[i] = 0
    for i in invalid:
        words[i] = b"bad\xff" + str(i).encode()
    return [w + b" " + " ".join(f"{x:.4f}" for x in v).encode() + b" \n" for w, v in zip(words, values)]


def _write(path: Path, lines, header=True, dim=None, compress=False) -> str:
    data = b"".join(lines)
    if header:
        data = f"{len(lines)} {dim}\n".encode() + data
    path.write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
    return str(path)


def _gensim(path, **kw):
    gensim = pytest.importorskip("gensim.models")
    return gensim.KeyedVectors.load_word2vec_format(path, unicode_errors="replace", **kw)


def _assert_same_as_gensim(ds, kv):
    # with duplicates, gensim 4.4 leaves None keys and zero rows at the end: the words it kept come first
    words = [w for w in kv.index_to_key if w is not None]
    vectors = kv.vectors[: len(words)].astype(np.float32)
    assert [str(w) for w in ds.word.values] == words
    assert ds.vectors.values.tobytes() == vectors.tobytes()
    np.testing.assert_array_equal(ds["rank"].values, np.arange(1, len(words) + 1))
    np.testing.assert_allclose(ds.norm.values, np.linalg.norm(vectors.astype(np.float64), axis=1), rtol=1e-6)


def _store_content(root) -> tuple[dict, dict]:
    """Every file of a local store, byte for byte, and the attrs without the creation time and id
    (which each array's attrs repeat)."""
    root = Path(root)
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    attrs = json.loads(files.pop("zarr.json"))["attributes"]
    store_id = attrs.pop("store_id")
    attrs.pop("created")
    for name in [name for name in files if name.endswith("/zarr.json")]:
        files[name] = files[name].replace(store_id.encode(), b"")
    return files, attrs


# ---------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize("binary", [False, True])
def test_files_gensim_wrote_with_odd_tokens(tmp_path, binary):
    gensim = pytest.importorskip("gensim.models")
    rng = np.random.default_rng(1)
    words = ODD_WORDS + [f"w{i}" for i in range(60)]
    kv = gensim.KeyedVectors(30)
    kv.add_vectors(words, rng.normal(size=(len(words), 30)).astype(np.float32))
    src = str(tmp_path / ("g.bin" if binary else "g.txt"))
    kv.save_word2vec_format(src, binary=binary)
    ds = ingest(src, str(tmp_path / "g.zarr"), language="en", chunk_words=16, client=False, progress=False)
    _assert_same_as_gensim(ds, _gensim(src, binary=binary))
    assert ds.attrs["format"] == ("word2vec-binary" if binary else "vec")
    assert ds.vectors.chunks[0] == (16, 16, 16, 16, 6)


def test_real_glove_840b_subset(shared_data, tmp_path):
    src = str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt")
    ds = ingest(src, str(tmp_path / "glove.zarr"), language="en", client=False, progress=False)
    _assert_same_as_gensim(ds, _gensim(src, no_header=True))
    assert (ds.attrs["format"], ds.attrs["n_words"], ds.attrs["dim"]) == ("glove", 182, 300)


@pytest.mark.parametrize("language", ["ar", "zh", "ja", "ru", "hi", "ko"])
def test_real_fasttext_vec_files_in_several_scripts(shared_data, tmp_path, language):
    src = str(shared_data / "iat" / "cc" / f"{language}.vec")
    ds = ingest(src, str(tmp_path / f"{language}.zarr"), language=language, chunk_words=8, client=False, progress=False)
    kv = _gensim(src)
    _assert_same_as_gensim(ds, kv)  # bit for bit, the text's -0.0 included
    assert ds.attrs["language"] == language and ds.attrs["n_words"] == len(kv.key_to_index) > 20
    assert ds.attrs["vector_encoding"] == "int16"  # fastText prints 4 decimals


@pytest.mark.parametrize("corpus", ["wiki", "subt"])
def test_real_vec_files_with_more_decimals_stay_float32(shared_data, tmp_path, corpus):
    src = str(shared_data / "iat" / corpus / "de.vec")
    ds = ingest(src, str(tmp_path / "de.zarr"), language="de", chunk_words=8, client=False, progress=False)
    _assert_same_as_gensim(ds, _gensim(src))
    assert ds.attrs["vector_encoding"] == "float32"


def test_every_real_fasttext_cc_file_is_stored_in_int16_bit_for_bit(shared_data, tmp_path):
    """All cc/*.vec together: the float32 parse of every token (np.float32(text)), -0.0 included, and
    the bytes per word of the int16 store against the float32 store of the same vectors."""
    files = sorted((shared_data / "iat" / "cc").glob("*.vec"))
    lines = [line for f in files for line in f.read_bytes().split(b"\n")[1:] if line.strip()]
    lines = [b"w%d " % i + line.split(b" ", 1)[1] for i, line in enumerate(lines)]  # unique words
    src = _write(tmp_path / "cc.vec", [line + b"\n" for line in lines], dim=300)
    ds = ingest(src, str(tmp_path / "cc.zarr"), language="en", client=False, progress=False)
    expected = np.array([[np.float32(t) for t in line.rstrip().split(b" ")[1:]] for line in lines])
    assert np.signbit(expected[expected == 0]).any()  # the real files hold -0.0 tokens
    assert ds.attrs["vector_encoding"] == "int16"
    assert ds.vectors.values.tobytes() == expected.tobytes()
    from biasdask.io import store

    as_float = str(tmp_path / "f.zarr")
    store.prepare_store(
        as_float, language="en", source="s", format="vec", dim=300, chunk_words=len(lines), n_words=len(lines)
    )
    store.write_block(as_float, 0, ds.word.values, expected, ds.norm.values)

    def vector_bytes(name):  # the chunks of vectors (and negative_zero)
        return sum(
            f.stat().st_size
            for a in ("vectors", "negative_zero")
            for f in (tmp_path / name / a / "c").rglob("*")
            if f.is_file()
        )

    assert vector_bytes("cc.zarr") < 0.6 * vector_bytes("f.zarr")


@pytest.mark.parametrize("client", [False, "dask"])
def test_a_late_block_that_does_not_fit_restarts_in_a_wider_encoding(
    tmp_path, dask_client, small_blocks, client, monkeypatch
):
    """The first words choose int16; a value of 9.9999 deep in the file needs int32, then one with 5
    decimals float32: each makes the ingest start over, and the values stay the text's float32 parse."""
    monkeypatch.setattr(ingest_module, "ENCODING_SAMPLE_WORDS", 50)
    lines = _lines(400, 6, seed=9)
    lines[150] = b"big " + b" ".join([b"9.9999", b"-0.0000"] + [b"0.1"] * 4) + b"\n"
    src = _write(tmp_path / "a.vec", lines, dim=6)
    kw = dict(chunk_words=40, progress=False, client=dask_client if client else False)
    ds = ingest(src, str(tmp_path / "a.zarr"), language="en", **kw)
    expected = np.array([[np.float32(t) for t in line.rstrip().split(b" ")[1:]] for line in lines])
    assert ds.attrs["vector_encoding"] == "int32" and ds.vectors.values.tobytes() == expected.tobytes()
    lines[390] = b"fine " + b" ".join([b"0.12345"] + [b"0.1"] * 5) + b"\n"
    src = _write(tmp_path / "b.vec", lines, dim=6)
    ds = ingest(src, str(tmp_path / "b.zarr"), language="en", **kw)
    expected = np.array([[np.float32(t) for t in line.rstrip().split(b" ")[1:]] for line in lines])
    assert ds.attrs["vector_encoding"] == "float32" and ds.vectors.values.tobytes() == expected.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir() if ".ingest-" in p.name) == []  # no fresh store left


def test_duplicates_zero_vectors_and_invalid_utf8_are_kept_dropped_and_counted(tmp_path):
    lines = _lines(60, 6, duplicates=[(20, 3), (33, 3), (50, 12)], zeros=[5, 41], invalid=[7, 44])
    src = _write(tmp_path / "d.vec", lines, dim=6)
    ds = ingest(src, str(tmp_path / "d.zarr"), language="en", chunk_words=7, client=False, progress=False)
    kv = _gensim(src)  # gensim keeps the first occurrence too
    _assert_same_as_gensim(ds, kv)
    assert len(kv.key_to_index) == 57
    assert ds.attrs["n_words"] == 57 and ds.attrs["n_duplicates"] == 3
    assert ds.attrs["n_zero_vectors"] == 2 and int((ds.norm == 0).sum()) == 2
    assert ds.attrs["n_invalid_utf8"] == 2 and "bad\ufffd7" in set(map(str, ds.word.values))


def test_max_words_keeps_the_first_lines(tmp_path):
    src = _write(tmp_path / "m.vec", _lines(50, 4) + [b"never read\n"], dim=4, header=False)
    ds = ingest(src, str(tmp_path / "m.zarr"), language="en", max_words=23, chunk_words=5, client=False, progress=False)
    _assert_same_as_gensim(ds, _gensim(src, no_header=True, limit=23))
    assert ds.attrs["n_words"] == 23


# ---------------------------------------------------------------------------------------------- planning


def test_plan_ranges_finds_every_chunk_from_block_counts():
    rng = np.random.default_rng(2)
    for _ in range(30):
        lengths = rng.integers(1, 40, rng.integers(1, 200))
        data = b"".join(b"x" * (k - 1) + b"\n" for k in lengths)
        if rng.integers(2):
            data = data[:-1]  # last line without a newline
        offset = int(rng.integers(0, 5))
        data = b"h" * offset + data
        block = int(rng.integers(1, 100))
        starts = np.arange(offset, len(data), block)
        counts = [data[s : s + block].count(b"\n") for s in starts]
        chunk = int(rng.integers(1, 30))
        line_starts = [offset] + [i + 1 for i in range(offset, len(data)) if data[i] == 10 and i + 1 < len(data)]
        plan = plan_ranges(starts, counts, len(data), len(lengths), chunk)
        assert len(plan) == -(-len(lengths) // chunk)
        for k, (start, end, skip) in enumerate(plan):
            piece = data[start:end]
            first = start + ingest_module.formats.skip_lines(piece, skip)
            assert first == line_starts[k * chunk]
            last = min(len(lengths), (k + 1) * chunk) - 1
            assert end >= (line_starts[last + 1] if last + 1 < len(line_starts) else len(data))


# ---------------------------------------------------------------------------------------------- parallel


@pytest.fixture()
def small_blocks(monkeypatch):
    """Byte blocks and counting tasks far smaller than a chunk, so that chunks straddle blocks."""
    monkeypatch.setattr(ingest_module, "_MIN_BLOCK_BYTES", 1000)
    monkeypatch.setattr(ingest_module, "_COUNT_TASK_BYTES", 7000)


@pytest.mark.parametrize(
    ("name", "header", "compress", "max_words"),
    [
        ("plain.vec", True, False, None),  # byte ranges
        ("plain.txt", False, False, None),  # byte ranges, GloVe, last line without newline
        ("plain.vec.gz", True, True, None),  # stream
        ("cut.vec", True, False, 333),  # byte ranges, counting stops early
        ("cut.txt.gz", False, True, 333),  # stream without header
    ],
)
def test_parallel_store_is_identical_to_sequential(
    tmp_path, dask_client, small_blocks, name, header, compress, max_words
):
    lines = _lines(700, 8, seed=3, duplicates=[(400, 2), (650, 399)], zeros=[30], invalid=[100])
    if name == "plain.txt":
        lines[-1] = lines[-1].rstrip(b"\n")
    src = _write(tmp_path / name, lines, header=header, dim=8, compress=compress)
    kw = dict(max_words=max_words, chunk_words=40, progress=False)
    seq = ingest(src, str(tmp_path / "seq.zarr"), language="en", client=False, **kw)
    par = ingest(src, str(tmp_path / "par.zarr"), language="en", client=dask_client, **kw)
    assert _store_content(tmp_path / "par.zarr") == _store_content(tmp_path / "seq.zarr")
    assert set(dask_client.run(lambda: cluster_module._heap_users).values()) == {0}  # workers' heap given back
    assert par.attrs["n_duplicates"] == (2 if max_words is None else 0)
    assert seq.attrs["n_words"] == (698 if max_words is None else 333)


def test_parallel_binary_stream_is_identical_to_sequential(tmp_path, dask_client):
    gensim = pytest.importorskip("gensim.models")
    kv = gensim.KeyedVectors(12)
    kv.add_vectors(
        ODD_WORDS + [f"w{i}" for i in range(300)], np.random.default_rng(4).normal(size=(310, 12)).astype(np.float32)
    )
    src = str(tmp_path / "b.bin")
    kv.save_word2vec_format(src, binary=True)
    ingest(src, str(tmp_path / "seq.zarr"), language="en", chunk_words=32, client=False, progress=False)
    par = ingest(src, str(tmp_path / "par.zarr"), language="en", chunk_words=32, client=dask_client, progress=False)
    assert _store_content(tmp_path / "par.zarr") == _store_content(tmp_path / "seq.zarr")
    _assert_same_as_gensim(par, _gensim(src, binary=True))


@pytest.mark.parametrize("compress", [False, True])
def test_parallel_errors_name_the_earliest_bad_line_and_leave_no_store(tmp_path, dask_client, small_blocks, compress):
    lines = _lines(600, 5, seed=5)
    lines[450] = b"late 1 2 3 4\n"
    lines[321] = b"early 1 2 x 4 5\n"
    src = _write(tmp_path / ("bad.vec.gz" if compress else "bad.vec"), lines, dim=5, compress=compress)
    dest = str(tmp_path / "bad.zarr")
    with pytest.raises(
        InputFormatError, match=r"bad\.vec(\.gz)?: line 323 \('early'\): non-numeric value 'x' in field 3"
    ):
        ingest(src, dest, language="en", chunk_words=30, client=dask_client, progress=False)
    assert not Path(dest).exists()
    with pytest.raises(BiasdaskError):
        open_embeddings(dest)


# ---------------------------------------------------------------------------------------------- places


def test_http_gzip_source(tmp_path, http_server, dask_client):
    root, base = http_server
    lines = _lines(200, 6, seed=6)
    src = _write(root / "cc.xx.300.vec.gz", lines, dim=6, compress=True)
    local = _write(tmp_path / "same.vec", lines, dim=6)
    for client in (False, dask_client):
        ds = ingest(
            f"{base}/cc.xx.300.vec.gz",
            str(tmp_path / "h.zarr"),
            language="xx",
            chunk_words=50,
            client=client,
            progress=False,
        )
        _assert_same_as_gensim(ds, _gensim(local))
        assert ds.attrs["source"] == f"{base}/cc.xx.300.vec.gz"
    assert Path(src).exists()


def test_s3_source_to_s3_local_and_memory_destinations(tmp_path, s3_bucket, dask_client):
    import s3fs

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    lines = _lines(200, 6, seed=7)
    local = _write(tmp_path / "en.vec", lines, dim=6)
    fs.put(local, f"{bucket}/in/en.vec")
    fs.pipe(f"{bucket}/in/en.vec.gz", gzip.compress(Path(local).read_bytes()))
    kv = _gensim(local)
    cases = [
        ("in/en.vec", f"s3://{bucket}/emb/en.zarr", dask_client),  # byte ranges read and written by workers
        ("in/en.vec.gz", str(tmp_path / "local.zarr"), False),
        ("in/en.vec.gz", f"memory://{bucket}/en.zarr", dask_client),  # memory:// is written in this process
    ]
    for key, dest, client in cases:
        ingest(
            Location(f"s3://{bucket}/{key}", options),
            Location(dest, options),
            language="en",
            chunk_words=80,
            client=client,
            progress=False,
        )
        # the session's workers cannot see this process's memory://: read it here
        with dask.config.set(scheduler="synchronous"):
            _assert_same_as_gensim(open_embeddings(Location(dest, options)), kv)
    assert fs.exists(f"{bucket}/emb/en.zarr/vectors/c/2/0")


# ---------------------------------------------------------------------------------------------- bad input


BAD_INPUTS = {
    "fields.vec": (b"3 3\na 1 2 3\nb 1 2\nc 1 2 3\n", r"fields\.vec: line 3 \('b'\): expected 3 values, found 2"),
    "text.vec": (
        b"3 3\na 1 2 3\nb 1 two 3\nc 1 2 3\n",
        r"text\.vec: line 3 \('b'\): non-numeric value 'two' in field 2",
    ),
    "nan.vec": (b"2 3\na 1 2 3\nb 1 NaN 3\n", r"nan\.vec: line 3 \('b'\): non-finite value 'NaN' in field 2"),
    "inf.txt": (b"a 1 2 3\nb 1 2 inf\n", r"inf\.txt: line 2 \('b'\): non-finite value 'inf' in field 3"),
    "count.vec": (b"4 3\na 1 2 3\nb 1 2 3\n", r"count\.vec: the header says 4 words but the file has only 2 lines"),
    "extra.vec": (b"1 3\na 1 2 3\nb 1 2 3\n", r"extra\.vec: line 3: the file has more words than its header's 1"),
    "dim.vec": (b"2 4\na 1 2 3\nb 1 2 3\n", r"dim\.vec: line 2 \('a'\): expected 4 values, found 3"),
    "empty.vec": (b"", r"empty\.vec: empty file"),
    "cut.vec.gz": (gzip.compress(b"".join(_lines(300, 10)))[:2000], r"cut\.vec\.gz: truncated gzip stream"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_is_a_one_line_error_and_leaves_the_old_store_untouched(tmp_path, name):
    data, message = BAD_INPUTS[name]
    src = tmp_path / name
    src.write_bytes(data)
    dest = str(tmp_path / "en.zarr")
    ingest(
        _write(tmp_path / "good.vec", _lines(5, 3), dim=3),
        dest,
        language="en",
        chunk_words=2,
        client=False,
        progress=False,
    )
    before = _store_content(dest)
    with pytest.raises(InputFormatError, match=message) as info:
        ingest(str(src), dest, language="en", chunk_words=2, client=False, progress=False)
    assert "\n" not in str(info.value)
    assert _store_content(dest) == before and open_embeddings(dest).attrs["n_words"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["en.zarr", "good.vec", name])


@pytest.mark.parametrize("code", ["../x", "a/b", ""])
def test_unsafe_language_code_is_refused_before_anything_is_written(tmp_path, code):
    dest = tmp_path / "x.zarr"
    with pytest.raises(BiasdaskError, match="invalid language code"):
        ingest(_write(tmp_path / "ok.vec", _lines(3, 2), dim=2), str(dest), language=code, client=False, progress=False)
    assert not dest.exists() and not (tmp_path / "x").exists()
    with pytest.raises(BiasdaskError):
        open_embeddings(str(dest))


def test_destination_that_is_not_a_store_is_left_alone(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("keep me")
    with pytest.raises(StoreConflictError):
        ingest(
            _write(tmp_path / "ok.vec", _lines(3, 2), dim=2),
            str(tmp_path / "data"),
            language="en",
            client=False,
            progress=False,
        )
    assert (tmp_path / "data" / "notes.txt").read_text() == "keep me"


# ---------------------------------------------------------------------------------------------- cli


def test_cli_ingest_reports_and_errors_on_one_line(tmp_path, capsys):
    src = _write(tmp_path / "ok.vec", _lines(12, 3), dim=3)
    args = ["--language", "en", "--chunk-words", "5", "--workers", "0", "--quiet"]
    assert main(["ingest", src, "-o", str(tmp_path / "ok.zarr"), *args]) == 0
    assert "12 words x 3" in capsys.readouterr().out
    bad = tmp_path / "bad.vec"
    bad.write_bytes(b"1 2\nw 1 nan\n")
    assert main(["ingest", str(bad), "-o", str(tmp_path / "bad.zarr"), "--language", "en", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("biasdask: error: ") and "bad.vec: line 2 ('w'): non-finite value 'nan'" in err[-1]
    assert main(["ingest", src, "-o", str(tmp_path / "x.zarr"), "--language", "../x"]) == 2
    assert capsys.readouterr().err.startswith("biasdask: error: invalid language code '../x'")


def test_killed_ingest_leaves_the_old_store_then_is_completed_by_running_it_again(tmp_path):
    src = _write(tmp_path / "big.vec", _lines(960, 4, seed=8), dim=4)
    dest = tmp_path / "big.zarr"
    ingest(
        _write(tmp_path / "old.vec", _lines(5, 4), dim=4),
        str(dest),
        language="en",
        chunk_words=2,
        client=False,
        progress=False,
    )
    old = _store_content(dest)
    args = ["ingest", src, "-o", str(dest), "--language", "en", "--chunk-words", "8", "--workers", "0", "--quiet"]
    proc = subprocess.Popen([sys.executable, "-m", "biasdask.cli", *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("big.zarr.ingest-*/vectors/c/0/0")):  # the new store is written aside
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no chunk written in time"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    proc.stderr.close()
    assert _store_content(dest) == old  # the complete store at DEST is untouched
    assert main(args) == 0  # the dead process's lock is gone with it
    assert not list(tmp_path.glob("big.zarr.ingest-*"))  # its leftover is removed
    ingest(src, str(tmp_path / "clean.zarr"), language="en", chunk_words=8, client=False, progress=False)
    assert _store_content(dest) == _store_content(tmp_path / "clean.zarr")
    assert open_embeddings(str(dest)).attrs["n_words"] == 960


@pytest.mark.parametrize("client", [False, "dask"])
def test_shared_vectors_are_counted_and_warned_about(tmp_path, dask_client, client):
    """Words whose vector is bit-identical to an earlier word's (spaCy-style tables): counted from the
    hashes computed in the parse, against a brute-force count over gensim's rows; > 10 % warns."""
    lines = _lines(80, 5, seed=4, duplicates=[(70, 2)], zeros=[9, 33])
    for later, first in [(20, 3), (21, 3), (40, 12), (41, 20), (60, 5), (61, 6), (62, 7), (63, 8), (64, 10)]:
        lines[later] = lines[later].split(b" ", 1)[0] + b" " + lines[first].split(b" ", 1)[1]
    src = _write(tmp_path / "s.vec", lines, dim=5)
    with pytest.warns(UserWarning, match=r"share a bit-identical vector.*dedupe_vectors"):
        ds = ingest(
            src,
            str(tmp_path / "s.zarr"),
            language="en",
            chunk_words=16,
            progress=False,
            client=dask_client if client else False,
        )
    kv = _gensim(src)
    seen, shared = set(), 0
    for row in kv.vectors:
        key = row.astype(np.float32).tobytes()
        shared += bool(np.any(row)) and key in seen
        seen.add(key)
    assert shared == 9 and ds.attrs["n_duplicate_vectors"] == 9  # 9 of 79 words: 11 %
    # Below 10 %: counted, no warning.
    few = _write(tmp_path / "f.vec", lines[:20] + lines[22:40] + lines[42:60] + lines[65:], dim=5)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = ingest(few, str(tmp_path / "f.zarr"), language="en", chunk_words=16, client=False, progress=False)
    assert quiet.attrs["n_duplicate_vectors"] == 0
