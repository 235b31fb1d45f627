"""A chunk is only valid in its place: a chunk copied from another store, swapped within one, or a
vectors chunk replaced without its norms stops its language with one line naming the chunk, never
changed results; and every store says which contents and which source it holds (its fingerprint)."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

from biasdask.errors import CorruptStoreError
from biasdask.io.results import open_results
from biasdask.io.store import open_embeddings, store_identity
from tests.reliability.helpers import assert_one_line_error
from tests.stores import forget_records, generated_store, study_file

CELL = {"method": "uniform", "test": "gender"}


def _two_stores(tmp_path):
    return generated_store(tmp_path, "en", chunk_words=200), generated_store(
        tmp_path, "de", chunk_words=200, seed=1
    )  # other vectors


def _run_fails_naming(tmp_path, cli, stores, chunk):
    """``biasdask run`` stops en with one line naming ``chunk``; de is done."""
    code, _, err = cli("run", study_file(tmp_path, stores), "--quiet", "--workers", "1")
    assert code == 2, err
    assert_one_line_error(code, err, f"en.zarr: chunk {chunk}: not the chunk written in this place")
    cube = open_results(str(tmp_path / "results.zarr"))
    assert np.isnan(float(cube["p_value"].sel({**CELL, "language": "en"})))
    assert 0 < float(cube["p_value"].sel({**CELL, "language": "de"})) <= 1


def test_a_chunk_and_its_norms_copied_from_another_store(tmp_path, cli):
    en, de = _two_stores(tmp_path)
    for key in ("vectors/c/1/0", "norm/c/1"):
        shutil.copyfile(tmp_path / "emb" / "de.zarr" / key, tmp_path / "emb" / "en.zarr" / key)
    _run_fails_naming(tmp_path, cli, {"en": en, "de": de}, "vectors/c/1/0")


def test_a_vectors_chunk_replaced_without_its_norms(tmp_path, cli):
    en, de = _two_stores(tmp_path)
    shutil.copyfile(tmp_path / "emb" / "de.zarr" / "vectors/c/2/0", tmp_path / "emb" / "en.zarr" / "vectors/c/2/0")
    _run_fails_naming(tmp_path, cli, {"en": en, "de": de}, "vectors/c/2/0")


def test_two_chunks_swapped_inside_one_store(tmp_path, cli):
    en, de = _two_stores(tmp_path)
    root = tmp_path / "emb" / "en.zarr"
    for array, tail in (("vectors", "/0"), ("norm", "")):  # norms swapped along: each pair is consistent
        one, two = root / f"{array}/c/1{tail}", root / f"{array}/c/2{tail}"
        one.rename(root / "swap")
        two.rename(one)
        (root / "swap").rename(two)
    _run_fails_naming(tmp_path, cli, {"en": en, "de": de}, "vectors/c/1/0")


@pytest.mark.parametrize("chunk", ["norm/c/0", "rank/c/2"])
def test_every_array_is_checked_where_it_is_read(tmp_path, chunk):
    generated_store(tmp_path, "de", chunk_words=200, seed=1)
    url = generated_store(tmp_path, "en", chunk_words=200)
    root = tmp_path / "emb" / "en.zarr"
    if chunk.startswith("rank"):  # ranks are alike in every store: moved within this one
        shutil.copyfile(root / "rank/c/1", root / chunk)
    else:
        shutil.copyfile(tmp_path / "emb" / "de.zarr" / chunk, root / chunk)
    emb = open_embeddings(url)
    with pytest.raises(CorruptStoreError, match=f"en.zarr: chunk {chunk}: not the chunk written in this place"):
        emb[chunk.split("/")[0]].values  # noqa: B018


def test_word_chunks_swapped_are_found_at_open(tmp_path):
    url = generated_store(tmp_path, "en", chunk_words=200)
    words = tmp_path / "emb" / "en.zarr" / "word" / "c"
    (words / "0").rename(words / "x")
    (words / "1").rename(words / "0")
    (words / "x").rename(words / "1")
    with pytest.raises(CorruptStoreError, match="en.zarr: chunk word/c/0: not the chunk written in this place"):
        open_embeddings(url)


def test_an_array_copied_whole_from_another_store_is_refused_at_open(tmp_path):
    generated_store(tmp_path, "de", chunk_words=200, seed=1)
    url = generated_store(tmp_path, "en", chunk_words=200)
    shutil.rmtree(tmp_path / "emb" / "en.zarr" / "norm")
    shutil.copytree(tmp_path / "emb" / "de.zarr" / "norm", tmp_path / "emb" / "en.zarr" / "norm")
    with pytest.raises(CorruptStoreError, match="en.zarr: array norm was not written with this store"):
        open_embeddings(url)


def test_a_store_written_before_chunk_records_opens_saying_what_is_not_verified(tmp_path, caplog):
    url = generated_store(tmp_path, "en", chunk_words=200)
    want = open_embeddings(url)["vectors"].values
    root = tmp_path / "emb" / "en.zarr"
    forget_records(root)
    with caplog.at_level(logging.WARNING, logger="biasdask"):
        emb = open_embeddings(url)
    (record,) = [r for r in caplog.records if "en.zarr" in r.getMessage()]
    assert "not that it lies in its place" in record.getMessage() and "ingest the store again" in record.getMessage()
    np.testing.assert_array_equal(emb["vectors"].values, want)
    assert store_identity(url).fingerprint is None
    data = bytearray((root / "vectors/c/1/0").read_bytes())  # its checksums are still verified
    data[40] ^= 0x01
    (root / "vectors/c/1/0").write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="chunk vectors/c/1/0: .*checksum"):
        open_embeddings(url)["vectors"].values  # noqa: B018


def test_a_store_records_its_fingerprint_and_its_source(tmp_path, http_server):
    from biasdask.demo import write_language
    from biasdask.engine.ingest import ingest

    root, base = http_server
    for seed in (0, 1):
        write_language(root / f"en-{seed}.bin", "male", "female", 0.1, 300, 8, seed=seed)
    dest = str(tmp_path / "en.zarr")

    def ingest_from(source):
        ingest(source, dest, language="en", chunk_words=100, client=False, progress=False)
        return store_identity(dest)

    first = ingest_from(str(root / "en-0.bin"))
    assert first == store_identity(dest)  # stable across re-opening
    assert first.fingerprint.startswith("sha256:") and first.n_words == 300 and first.language == "en"
    assert first.source["url"] == str(root / "en-0.bin")
    assert first.source["size"] == (root / "en-0.bin").stat().st_size and "mtime" in first.source
    again = ingest_from(f"{base}/en-0.bin")  # the same contents, from elsewhere
    assert again.fingerprint == first.fingerprint and again.store_id != first.store_id
    assert again.source["url"] == f"{base}/en-0.bin" and "last_modified" in again.source
    other = ingest_from(str(root / "en-1.bin"))
    assert other.fingerprint != first.fingerprint
    json.dumps(other.as_dict())  # recordable as it is
