"""Nothing a user had is deleted, and nothing half-made looks complete."""

from __future__ import annotations

import pytest

from biasdask.engine.ingest import ingest
from biasdask.io.store import open_embeddings
from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_overwrite_never_deletes_a_thesis_folder(tmp_path, cli, on_cluster):
    thesis = tmp_path / "thesis"
    (thesis / "sub").mkdir(parents=True)
    (thesis / "thesis.txt").write_text("four years of work")
    (thesis / "sub" / "data.csv").write_text("a,b\n1,2\n")
    before = _tree(thesis)
    study = study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)})
    code, _, err = cli("run", study, "--output", thesis, "--overwrite", "--quiet")
    assert_one_line_error(code, err, "thesis", "not a biasdask results store")
    assert _tree(thesis) == before


def test_overwrite_never_deletes_an_embedding_store(tmp_path, cli, on_cluster):
    url = generated_store(tmp_path, chunk_words=200)
    before = _tree(tmp_path / "emb" / "en.zarr")
    study = study_file(tmp_path, {"en": url})
    code, _, err = cli("run", study, "--output", url, "--overwrite", "--quiet")
    assert_one_line_error(code, err, "en.zarr is the embedding store of en")
    assert _tree(tmp_path / "emb" / "en.zarr") == before


def test_bad_input_keeps_the_complete_store_at_dest(tmp_path):
    url = generated_store(tmp_path, chunk_words=200)
    before = _tree(tmp_path / "emb" / "en.zarr")
    bad = tmp_path / "cut.vec"
    bad.write_bytes(b"10 8\n" + b"w 1 2 3 4 5 6 7 8\n" * 3)  # a download cut short
    with pytest.raises(Exception, match="the header says 10 words"):
        ingest(str(bad), url, language="en", client=False, progress=False)
    assert _tree(tmp_path / "emb" / "en.zarr") == before
    assert open_embeddings(url).attrs["n_words"] == 600


@pytest.mark.parametrize("fault", ["missing store", "incomplete store", "other language"])
def test_a_study_that_cannot_start_leaves_no_results_store(tmp_path, cli, fault, monkeypatch):
    """... and fails before any cluster is found or started (which takes seconds, or a Gateway's minutes)."""
    from biasdask.engine import cluster

    started = []
    monkeypatch.setattr(
        cluster, "get_client", lambda *args, **kwargs: started.append(args) or pytest.fail("cluster first")
    )
    url = generated_store(tmp_path, chunk_words=200)
    stores = {"en": url}
    if fault == "missing store":
        stores["de"] = str(tmp_path / "emb" / "nothing.zarr")
    elif fault == "incomplete store":
        meta = tmp_path / "emb" / "en.zarr" / "zarr.json"
        meta.write_text(meta.read_text().replace('"biasdask_complete": true', '"biasdask_complete": false'))
    else:
        stores = {"de": url}
    code, _, err = cli("run", study_file(tmp_path, stores), "--quiet")
    assert_one_line_error(code, err, "zarr")
    assert not (tmp_path / "results.zarr").exists()
    assert not started


def test_a_read_only_results_store_mid_run_is_one_line(tmp_path, cli, on_cluster, monkeypatch):
    from biasdask.io import results

    def read_only(url, *args, **kwargs):
        raise PermissionError(13, "Permission denied", f"{url}/statistic/c/0/0/0")

    monkeypatch.setattr(results, "write_cell", read_only)
    code, _, err = cli("run", study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)}), "--quiet")
    assert_one_line_error(
        code, err, "results.zarr: cannot write the results store: Permission denied", "results.zarr/statistic"
    )
    assert code == 2


def test_show_says_how_many_cells_are_done(tmp_path, cli, on_cluster):
    en = generated_store(tmp_path, chunk_words=200)
    study = study_file(tmp_path, {"en": en})
    assert cli("run", study, "--quiet")[0] == 0
    code, out, _ = cli("show", tmp_path / "results.zarr")
    assert code == 0 and "cells done" not in out
    study = study_file(tmp_path, {"en": en, "de": str(tmp_path / "emb" / "nothing.zarr")})
    from biasdask.io import results as rs

    rs.create_results(  # a store of two languages of which only one was run
        str(tmp_path / "two.zarr"),
        languages=["en", "de"],
        methods=["uniform"],
        tests=["gender"],
        attrs={"seed": 0, "alternative": "two-sided", "similarity": "cosine"},
        config_text="x",
    )
    rs.write_cell(str(tmp_path / "two.zarr"), "en", "uniform", "gender", {"statistic": 1.0})
    code, out, err = cli("show", tmp_path / "two.zarr")
    assert code == 0 and "1 of 2 cells done" in err and "cells done" not in out  # stdout stays the table
