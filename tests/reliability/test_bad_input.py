"""Bad input of every kind ends in one line naming the file, line, word, key or store; exit != 0."""

from __future__ import annotations

import numpy as np
import pytest

from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file

INGEST = ["--language", "en", "--workers", "0", "--quiet"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        # a file cut at a line boundary: the header promises more rows than the body holds
        (b"5 3\na 1 2 3\nb 1 2 3\n", "the header says 5 words but the file has only 2 lines"),
        # the header's D is smaller than the rows' (once sniffed as binary, then a ValueError)
        (b"2 2\na 1 2 3\nb 1 2 3\n", "line 2 ('a'): expected 2 values, found 3"),
    ],
)
def test_text_files_that_disagree_with_their_header(tmp_path, cli, data, needle):
    src = tmp_path / "x.vec"
    src.write_bytes(data)
    code, _, err = cli("ingest", src, "-o", tmp_path / "x.zarr", *INGEST)
    assert_one_line_error(code, err, "x.vec", needle)
    assert not (tmp_path / "x.zarr").exists()


def test_word2vec_binary_word_holding_a_space(tmp_path, cli):
    src = tmp_path / "sp.bin"
    v = np.array([1, 2], "<f4").tobytes()
    src.write_bytes(b"2 2\n" + b"a b " + v + b"\n" + b"c " + v + b"\n")
    code, _, err = cli("ingest", src, "-o", tmp_path / "sp.zarr", *INGEST)
    assert_one_line_error(code, err, "sp.bin: word 2", "space")


def test_explicit_binary_format_on_a_text_file(tmp_path, cli):
    src = tmp_path / "t.vec"
    src.write_bytes(b"2 3\na 1 2 3\nb 4 5 6\n")
    code, _, err = cli("ingest", src, "-o", tmp_path / "t.zarr", *INGEST, "--input-format", "word2vec-binary")
    assert_one_line_error(code, err, "t.vec: line 2", "not word2vec binary")
    assert not (tmp_path / "t.zarr").exists()


def test_destination_under_a_file(tmp_path, cli):
    src = tmp_path / "ok.vec"
    src.write_bytes(b"1 2\na 1 2\n")
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("ingest", src, "-o", tmp_path / "afile" / "en.zarr", *INGEST)
    assert_one_line_error(code, err, "afile/en.zarr", "is a file")


def test_a_300_character_language_code_is_refused_before_anything_is_written(tmp_path, cli):
    src = tmp_path / "ok.vec"
    src.write_bytes(b"1 2\na 1 2\n")
    language = "en-" + "-".join(["abcdefgh"] * 33)  # well-formed subtags, 300 characters
    code, _, err = cli("ingest", src, "-o", tmp_path / "en.zarr", "--language", language, "--workers", "0")
    assert_one_line_error(code, err, "invalid language code", "at most 35 characters")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.vec"]


def test_template_typo_names_the_key(tmp_path, cli):
    study = tmp_path / "study.yaml"
    study.write_text("output: r.zarr\nembeddings: emb/{name}/{language}.zarr\nlanguages: [en]\n")
    code, _, err = cli("run", study)
    assert_one_line_error(code, err, "embeddings", "{name}")
    assert not (tmp_path / "r.zarr").exists()


def test_unknown_scheduler_scheme(tmp_path, cli):
    study = study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)})
    code, _, err = cli("run", study, "--scheduler", "foo://x", "--quiet")
    assert_one_line_error(code, err, "not a Dask scheduler address: foo://x")
    assert code == 2  # biasdask's own error, not an unexpected ValueError
    assert not (tmp_path / "results.zarr").exists()


def test_missing_bucket_and_unreachable_endpoint(tmp_path, cli, s3_server):
    import json
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the moto server's access log

    study = study_file(tmp_path, {"en": "s3://no-such-bucket-here/en.zarr"}, storage_options=s3_server)
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "s3://no-such-bucket-here/en.zarr")
    dead = {**s3_server, "endpoint_url": "http://127.0.0.1:9", "config_kwargs": {"retries": {"max_attempts": 1}}}
    study = study_file(tmp_path, {"en": "s3://bucket/en.zarr"}, storage_options=json.loads(json.dumps(dead)))
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "s3://bucket/en.zarr")
    assert "testing" not in err  # the fake credentials
    assert not (tmp_path / "results.zarr").exists()


def test_any_other_failure_is_one_line_and_debug_shows_the_traceback(tmp_path, cli, monkeypatch):
    (tmp_path / "r.zarr").write_text("not a directory")
    code, _, err = cli("show", tmp_path / "r.zarr")
    assert_one_line_error(code, err)
    monkeypatch.setenv("BIASDASK_DEBUG", "1")
    with pytest.raises(Exception):  # noqa: B017 - whatever it is, it is re-raised with its traceback
        cli("show", tmp_path / "r.zarr")
