"""Editing a study: the changed keys are named before anything runs; --update computes the affected
cells only, keeps the others bit for bit, and equals a fresh run of the edited study."""

from __future__ import annotations

import numpy as np
import pytest

import biasdask
from biasdask.errors import StoreConflictError
from biasdask.io import results as rs
from tests.stores import generated_store, study_file, study_of

VARS = [name for name in rs.CELL_VARIABLES]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("update")
    return {
        code: generated_store(
            root, code[:2], n_words=1500, dim=12, strength=0.1 * i, seed=seed, url=str(root / f"{code}.zarr")
        )
        for i, (code, seed) in enumerate([("en", 0), ("de", 1), ("es", 2), ("de2", 3)])
    }


#: the study of this module, unless a test says otherwise
KEYS = {"tests": ["gender", "weat7"], "n_permutations": 199, "seed": 11}


def _study(stores, output, langs=None, **kw):
    langs = langs or {"en": "en", "de": "de"}  # language -> which of the stores
    return study_of({lang: stores[store] for lang, store in langs.items()}, output, **{**KEYS, **kw})


def _cells(ds):
    return {
        (str(lang), str(m), str(t)): tuple(
            ds.sel({"language": lang, "method": m, "test": t})[v].values[()] for v in VARS
        )
        for lang in ds.language.values
        for m in ds.method.values
        for t in ds.test.values
    }


def _same(a, b):
    return all((x == y) or (isinstance(x, float) and np.isnan(x) and np.isnan(y)) for x, y in zip(a, b))


def test_an_edited_study_names_its_changed_keys_before_any_cluster_starts(stores, tmp_path, monkeypatch, capsys):
    import biasdask.study.run as er
    from biasdask.cli import main

    out = tmp_path / "r.zarr"
    biasdask.run(_study(stores, out), progress=False)
    edited = _study(
        stores, out, langs={"en": "en", "de": "de", "es": "es"}, tests=["gender"], methods=["uniform", "zipf"]
    )
    with pytest.raises(StoreConflictError, match=r"changed languages\.es, methods, tests\): pass --update"):
        biasdask.run(edited, progress=False)
    with pytest.raises(
        StoreConflictError, match=r"changed n_permutations; n_permutations changes every cell\): pass --overwrite"
    ):
        biasdask.run(_study(stores, out, n_permutations=99), update=True, progress=False)

    # the CLI refuses before it finds or starts a cluster (whose start-up takes seconds)
    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(er, "client_scope", no_cluster)
    path = study_file(tmp_path, {"en": stores["en"], "de": stores["de"]}, **{**KEYS, "output": out, "seed": 12})
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "r.zarr: results of another study (changed seed; seed changes every cell): pass --overwrite to start over"
    )


def test_update_computes_the_affected_cells_only_and_equals_a_fresh_run(stores, tmp_path):
    out = tmp_path / "r.zarr"
    before = biasdask.run(_study(stores, out), progress=False)
    old = _cells(before)
    null_before = rs.read_null(str(out), "en", "uniform", "gender")
    # a language added, one language's store changed, a method and a test added
    edited = _study(
        stores,
        out,
        langs={"en": "en", "de": "de2", "es": "es"},
        methods=["uniform", "zipf"],
        tests=["gender", "weat7", "context"],
    )
    after = biasdask.run(edited, update=True, progress=False)
    new = _cells(after)
    kept = [c for c in old if c[0] == "en"]
    assert kept and all(_same(new[c], old[c]) for c in kept)  # en's cells bit for bit
    assert not _same(new[("de", "uniform", "gender")], old[("de", "uniform", "gender")])  # de recomputed
    assert all(after["done"].values.ravel())
    np.testing.assert_array_equal(rs.read_null(str(out), "en", "uniform", "gender"), null_before)
    fresh = biasdask.run(
        _study(
            stores,
            tmp_path / "fresh.zarr",
            langs={"en": "en", "de": "de2", "es": "es"},
            methods=["uniform", "zipf"],
            tests=["gender", "weat7", "context"],
        ),
        progress=False,
    )
    want = _cells(fresh)
    assert sorted(new) == sorted(want) and all(_same(new[c], want[c]) for c in want)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.zarr", "r.zarr"]  # nothing left beside
    assert rs.stored_config(str(out)) == rs.stored_config(str(tmp_path / "fresh.zarr"))
    # the same edited study again: a plain resume, nothing to update
    again = biasdask.run(edited, progress=False)
    assert all(_same(a, b) for a, b in zip(_cells(again).values(), new.values()))
