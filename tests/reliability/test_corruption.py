"""Stores are verified, not trusted: a missing chunk, a flipped byte, attrs that disagree with the arrays
or a store of another language are errors naming the store and the chunk, never changed results."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from biasdask.errors import BiasdaskException, CorruptStoreError
from biasdask.io.results import open_results
from biasdask.io.store import open_embeddings
from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file


@pytest.mark.parametrize("chunk", ["vectors/c/1/0", "norm/c/2", "word/c/0", "rank/c/1"])
def test_a_deleted_chunk_is_an_error_naming_it(tmp_path, chunk):
    url = generated_store(tmp_path, chunk_words=200)
    (tmp_path / "emb" / "en.zarr" / chunk).unlink()
    with pytest.raises(CorruptStoreError, match=f"en.zarr: chunk {chunk} is missing"):
        open_embeddings(url)


def _flip(path, offset=40):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    data[offset + 1] ^= 0x80
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("chunk", ["vectors/c/1/0", "norm/c/0"])
def test_a_flipped_byte_fails_the_checksum_naming_the_chunk(tmp_path, chunk):
    url = generated_store(tmp_path, chunk_words=200)
    _flip(tmp_path / "emb" / "en.zarr" / chunk)
    emb = open_embeddings(url)
    name = chunk.split("/")[0]
    with pytest.raises(CorruptStoreError, match=f"en.zarr: chunk {chunk}: .*checksum"):
        emb[name].values  # noqa: B018


def test_a_flipped_byte_in_the_words_is_found_at_open(tmp_path):
    url = generated_store(tmp_path, chunk_words=200)
    _flip(tmp_path / "emb" / "en.zarr" / "word" / "c" / "2", offset=10)
    with pytest.raises(CorruptStoreError, match="chunk word/c/2"):
        open_embeddings(url)


def test_attrs_are_checked_against_the_arrays(tmp_path):
    url = generated_store(tmp_path, chunk_words=200)
    meta_path = tmp_path / "emb" / "en.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["n_words"] = 2004
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CorruptStoreError, match="vectors has 600 rows but attr n_words is 2004"):
        open_embeddings(url)


def test_corrupt_array_metadata(tmp_path):
    url = generated_store(tmp_path, chunk_words=200)
    (tmp_path / "emb" / "en.zarr" / "vectors" / "zarr.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match="en.zarr"):
        open_embeddings(url)


def test_a_study_of_one_language_refuses_a_store_of_another(tmp_path, cli):
    study = study_file(tmp_path, {"de": generated_store(tmp_path, "en", chunk_words=200)})
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "en.zarr: the store holds language 'en', not 'de'")
    assert not (tmp_path / "results.zarr").exists()


def test_corruption_found_on_a_worker_is_one_line_without_worker_logs(tmp_path):
    """The real command, with its own local cluster of worker processes."""
    url = generated_store(tmp_path, chunk_words=200)
    _flip(tmp_path / "emb" / "en.zarr" / "vectors" / "c" / "2" / "0")
    study = study_file(tmp_path, {"en": url})
    proc = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "run", str(study), "--workers", "1", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert_one_line_error(proc.returncode, proc.stderr, "en.zarr: chunk vectors/c/2/0", "checksum")


def test_a_word_chunk_failing_its_checksum_fails_its_language_only(tmp_path, cli):
    """A store's words are read as its language starts (not before the run): a flipped byte there is
    one line naming the chunk, that language's cells stay empty, the other language is done."""
    en, de = generated_store(tmp_path, "en", chunk_words=200), generated_store(tmp_path, "de", chunk_words=200)
    _flip(tmp_path / "emb" / "en.zarr" / "word" / "c" / "2", offset=10)
    study = study_file(tmp_path, {"en": en, "de": de})
    code, _, err = cli("run", study, "--quiet", "--workers", "1")
    assert_one_line_error(code, err, "en.zarr: chunk word/c/2", "checksum")
    cube = open_results(str(tmp_path / "results.zarr"))
    cell = {"method": "uniform", "test": "gender"}
    assert np.isnan(float(cube["p_value"].sel({**cell, "language": "en"})))
    assert 0 < float(cube["p_value"].sel({**cell, "language": "de"})) <= 1


@pytest.mark.parametrize("chunk", ["vectors/c/0/0", "vectors/c/2/0"])
def test_a_vectors_chunk_failing_its_checksum_fails_its_language_only(tmp_path, cli, chunk):
    """A flipped byte in the vectors, found by a task on a worker (chunk 0: the task that reads the
    attribute rows; chunk 2: a scores task), is one line naming the chunk with exit 2 (not a bare
    ``Exception: CorruptStoreError(...)`` with exit 1 and no cell of any language written); that
    language's cells stay empty, the other language is done."""
    en, de = generated_store(tmp_path, "en", chunk_words=200), generated_store(tmp_path, "de", chunk_words=200)
    _flip(tmp_path / "emb" / "en.zarr" / chunk)
    study = study_file(tmp_path, {"en": en, "de": de})
    code, _, err = cli("run", study, "--quiet", "--workers", "1")
    assert code == 2, err
    assert_one_line_error(code, err, f"en.zarr: chunk {chunk}", "checksum", "1 language(s) with cells not run")
    assert "Exception" not in err
    cube = open_results(str(tmp_path / "results.zarr"))
    cell = {"method": "uniform", "test": "gender"}
    assert np.isnan(float(cube["p_value"].sel({**cell, "language": "en"})))
    assert 0 < float(cube["p_value"].sel({**cell, "language": "de"})) <= 1


def test_the_errors_that_are_oserrors_reach_the_client_as_themselves():
    """distributed sends a task's exception through tblib, which rebuilds it with ``cls.__new__``."""
    import pickle

    import tblib.pickling_support

    from biasdask.errors import IncompleteStoreError, SchedulerError, StoreConflictError

    for cls in (CorruptStoreError, IncompleteStoreError, StoreConflictError, SchedulerError):
        try:
            raise cls("x.zarr: chunk c/0: it is missing")
        except cls as exc:
            tblib.pickling_support.install(exc)
            back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == "x.zarr: chunk c/0: it is missing"
        assert isinstance(back, OSError) and isinstance(back, BiasdaskException)
        assert not isinstance(back, ValueError)  # one kind each
