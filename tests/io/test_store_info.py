"""``biasdask info STORE``: an embedding store's identity and provenance, as the store records them, in every
format of the CLI; one line for a path that holds no store."""

from __future__ import annotations

import csv
import io
import json
import os
import re

import numpy as np
import pytest

from biasdask.engine.ingest import ingest
from biasdask.io.store import describe_store, prepare_store, store_identity
from tests.stores import write_vec


@pytest.fixture()
def served_store(tmp_path, http_server):
    """A store ingested from a .vec served over http (a signed URL: its query must never be shown)."""
    root, base = http_server
    words = ["he", "she", "doctor", "nurse", "he", "zero"]  # a repeated word, a zero vector
    vectors = np.random.default_rng(2).standard_normal((6, 5)).round(4)
    vectors[5] = 0
    source = write_vec(root / "en.vec", words, vectors)
    url = f"{base}/en.vec?X-Amz-Signature=SECRET"
    dest = str(tmp_path / "en.zarr")
    ingest(url, dest, language="en", chunk_words=2, client=False, progress=False)
    return dest, f"{base}/en.vec", source


def _rows(out: str) -> dict[str, str]:
    return {row["field"]: row["value"] for row in csv.DictReader(io.StringIO(out))}


def test_info_prints_what_the_store_records(served_store, cli):
    dest, shown_source, source = served_store
    identity = store_identity(dest)
    code, out, err = cli("info", dest, "--format", "csv")
    assert code == 0 and err == ""
    rows = _rows(out)
    assert rows["store"] == dest and rows["language"] == "en" and rows["complete"] == "yes"
    assert rows["words"] == "5" and rows["dimensions"] == "5"  # the repeated word dropped
    assert rows["format"] == "vec" and rows["vector encoding"].startswith("int16")
    assert rows["chunks"] == "3 (2 words each)"
    assert rows["fingerprint"] == identity.fingerprint and rows["store id"] == identity.store_id
    assert rows["source"] == shown_source and "SECRET" not in out
    assert rows["source size"] == f"{os.path.getsize(source):,}"
    assert rows["source Last-Modified"] == identity.source["last_modified"]
    assert rows["repeated words dropped"] == "1" and rows["zero vectors"] == "1"
    assert rows["ingest input format"] == "auto" and rows["ingest chunk words"] == "2"
    assert rows["ingest max words"] == "all" and rows["ingest compression"] == "none"  # what unset meant
    code, text, _ = cli("info", dest)
    assert code == 0 and text.splitlines()[0].split() == ["store", dest]
    assert re.search(rf"^fingerprint +{identity.fingerprint}$", text, re.MULTILINE)


def test_info_as_json_gives_the_recorded_values(served_store, cli):
    dest, shown_source, source = served_store
    code, out, _ = cli("info", dest, "--format", "json")
    record = json.loads(out)
    assert code == 0 and record == {**json.loads(json.dumps(describe_store(dest).as_dict()))}
    assert record["source"]["url"] == shown_source and record["source"]["size"] == os.path.getsize(source)
    assert record["n_words"] == 5 and record["dim"] == 5 and record["chunk_words"] == 2 and record["n_chunks"] == 3
    assert record["counts"]["n_duplicates"] == 1 and record["complete"] is True


@pytest.mark.parametrize("fmt, marker", [("markdown", "| field | value |"), ("latex", "\\toprule")])
def test_info_in_the_formats_of_a_paper(served_store, cli, fmt, marker):
    dest, _, _ = served_store
    code, out, _ = cli("info", dest, "--format", fmt)
    assert code == 0 and marker in out and store_identity(dest).fingerprint in out


def test_an_incomplete_store_says_so(tmp_path, cli):
    dest = str(tmp_path / "half.zarr")
    prepare_store(dest, language="fr", source="fr.vec", format="vec", dim=4, chunk_words=8, n_words=16)
    code, out, _ = cli("info", dest, "--format", "csv")
    rows = _rows(out)
    assert code == 0 and rows["complete"].startswith("no") and rows["chunks"] == "2 (8 words each)"
    assert rows["language"] == "fr" and rows["fingerprint"].startswith("none recorded")


def test_a_path_without_a_store_is_one_line(tmp_path, cli):
    code, out, err = cli("info", tmp_path / "absent.zarr")
    assert (code, out) == (
        2,
        "",
    ) and err == f"biasdask: error: {tmp_path / 'absent.zarr'}: no such store (nothing there)\n"
    (tmp_path / "folder").mkdir()
    code, _, err = cli("info", tmp_path / "folder")
    assert code == 2 and err.count("\n") == 1 and "not a biasdask embedding store" in err
