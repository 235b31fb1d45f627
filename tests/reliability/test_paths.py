"""Results are never written inside an embedding store, whatever path leads there (a symbolic link,
``..``, ``file://``), and replacing a store never deletes what lies inside its folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from biasdask.io import results as rs
from biasdask.io.store import open_embeddings
from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("spelling", ["symlink", "dotdot", "file-url", "linked-store"])
def test_an_output_inside_a_store_is_refused_through_any_path(tmp_path, cli, spelling):
    url = generated_store(tmp_path, chunk_words=200)
    store = tmp_path / "emb" / "en.zarr"
    before = _tree(store)
    stores = {"en": url}
    if spelling == "symlink":  # linkdir -> en.zarr
        (tmp_path / "linkdir").symlink_to(store, target_is_directory=True)
        output = str(tmp_path / "linkdir" / "res.zarr")
    elif spelling == "dotdot":
        output = str(tmp_path / "emb" / "nowhere" / ".." / "en.zarr" / "res.zarr")
    elif spelling == "file-url":
        output = f"file://{store}/res.zarr"
    else:  # the study names the store by a link; the output lies in its real folder
        (tmp_path / "link.zarr").symlink_to(store, target_is_directory=True)
        stores = {"en": str(tmp_path / "link.zarr")}
        output = str(store / "res.zarr")
    study = study_file(tmp_path, stores)
    code, _, err = cli("run", study, "--output", output, "--quiet", "--workers", "1")
    assert_one_line_error(code, err, f"output: {output} lies inside the embedding store of en")
    assert code == 2
    assert _tree(store) == before
    assert sorted(os.listdir(store)) == ["norm", "rank", "vectors", "word", "zarr.json"]


def _results_inside(store: Path) -> Path:
    """A results store inside an embedding store's folder, as a run before the check could leave one."""
    inside = store / "res.zarr"
    rs.create_results(
        str(inside),
        languages=["en"],
        methods=["uniform"],
        tests=["gender"],
        attrs={"seed": 0, "alternative": "two-sided", "similarity": "cosine"},
        config_text="x",
    )
    rs.write_cell(str(inside), "en", "uniform", "gender", {"statistic": 1.0})
    return inside


def test_ingest_overwrite_never_deletes_a_results_store_inside_the_store(tmp_path, cli):
    url = generated_store(tmp_path, chunk_words=200)
    store = tmp_path / "emb" / "en.zarr"
    inside = _results_inside(store)
    before = _tree(store)
    source = tmp_path / "other.vec"
    source.write_text("2 3\nhe 1 0 0\nshe 0 1 0\n")
    code, _, err = cli("ingest", source, "-o", url, "--language", "de", "--overwrite", "--workers", "0", "--quiet")
    assert_one_line_error(
        code, err, f"{inside} lies inside the embedding store {url} and is a biasdask results store", "move it out"
    )
    assert code == 2
    assert _tree(store) == before
    assert rs.done_cells(str(inside)) == {("en", "uniform", "gender")}
    assert open_embeddings(url).attrs["language"] == "en"
    assert sorted(p.name for p in (tmp_path / "emb").iterdir()) == ["en.zarr"]  # no lock, no fresh store left


def test_ingest_never_deletes_a_users_file_inside_the_store(tmp_path, cli):
    url = generated_store(tmp_path, chunk_words=200)
    notes = tmp_path / "emb" / "en.zarr" / "notes.txt"
    notes.write_text("which vectors these are")
    source = tmp_path / "other.vec"
    source.write_text("2 3\nhe 1 0 0\nshe 0 1 0\n")
    code, _, err = cli("ingest", source, "-o", url, "--language", "en", "--workers", "0", "--quiet")
    assert_one_line_error(code, err, f"{notes} lies inside the embedding store {url} and is not part of the store")
    assert notes.read_text() == "which vectors these are"
