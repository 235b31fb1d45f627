"""Editing a study: the changed keys are named before anything runs; --update computes the affected
cells only, keeps the others bit for bit, and equals a fresh run of the edited study."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import biasdask
from biasdask.demo import write_language
from biasdask.engine.ingest import ingest
from biasdask.errors import StoreConflictError
from biasdask.io import results as rs
from biasdask.io.store import embedding_identity, open_embeddings, open_vectors, store_identity
from biasdask.study.config import parse_config
from biasdask.study.update import check_changes, prepare_update
from tests.reliability.helpers import assert_one_line_error
from tests.stores import forget_records, generated_store, study_file, study_of

VARS = [name for name in rs.CELL_VARIABLES]
#: the variables of a cell alone (the adjusted p-values depend on the other languages)
OWN_VARS = [name for name in VARS if name not in rs.DERIVED_VARIABLES]


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


def _cells(ds, variables=VARS):
    return {
        (str(lang), str(m), str(t)): tuple(
            ds.sel({"language": lang, "method": m, "test": t})[v].values[()] for v in variables
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


def _files(root):
    """Every file under ``root`` and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "biasdask.cli", *args], capture_output=True, text=True)


def test_every_cell_records_the_store_it_read(stores, tmp_path):
    held = open_embeddings(stores["es"]).load()  # in memory (its attrs, fingerprint included, kept)
    study = _study(stores, tmp_path / "r.zarr", langs={"en": "en", "de": "de", "es": "es"}, tests=["gender"])
    study["languages"]["es"] = {"store": held}
    cube = biasdask.run(study, progress=False)
    for code in ("en", "de"):
        identity = store_identity(stores[code])
        assert identity.fingerprint.startswith("sha256:")
        cells = cube.sel({"language": code})
        assert set(cells["store_fingerprint"].values.ravel()) == {identity.fingerprint}
        assert set(cells["store_source"].values.ravel()) == {identity.source["url"]}
        scores = rs.scores_attrs(str(tmp_path / "r.zarr"), code)
        assert scores["store_fingerprint"] == identity.fingerprint
    assert store_identity(stores["en"]).fingerprint != store_identity(stores["de"]).fingerprint
    cells = cube.sel({"language": "es"})
    assert set(cells["store_fingerprint"].values.ravel()) == {""} == set(cells["store_source"].values.ravel())
    assert all(cube["done"].values.ravel())


@pytest.mark.slow
def test_a_store_ingested_again_under_a_resumed_study_is_refused_or_its_cells_recomputed(tmp_path):
    # en and de quick, fr long: the run is killed once en's and de's cells are written
    stores = {
        "en": generated_store(tmp_path, "en", n_words=1000, dim=20, seed=0),
        "de": generated_store(tmp_path, "de", n_words=1000, dim=20, strength=0.1, seed=1),
        "fr": generated_store(tmp_path, "fr", n_words=200_000, dim=20, strength=0.2, seed=2),
    }
    keys = {"methods": ["uniform", "zipf"], "tests": ["gender"], "n_permutations": 29_999, "seed": 5}
    path = study_file(tmp_path, stores, **keys)
    out = tmp_path / "results.zarr"
    proc = subprocess.Popen(
        [sys.executable, "-m", "biasdask.cli", "run", str(path), "--workers", "1", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    first = {(code, m, "gender") for code in ("en", "de") for m in keys["methods"]}
    deadline, done = time.time() + 240, set()
    while time.time() < deadline and proc.poll() is None and not first <= done:
        time.sleep(0.1)
        try:
            done = rs.done_cells(str(out))
        except Exception:  # noqa: BLE001 - not created yet
            done = set()
    assert proc.poll() is None, "run finished before it could be killed: " + proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = rs.open_results(str(out))
    done = rs.done_cells(str(out))
    assert first <= done and len(done) < 6

    # en ingested again from other vectors
    other = tmp_path / "en-other.bin"
    write_language(other, "male", "female", 0.3, 1000, 20, seed=9)
    ingested = _cli("ingest", str(other), "--output", stores["en"], "--language", "en", "--overwrite")
    assert ingested.returncode == 0, ingested.stderr
    assert store_identity(stores["en"]).source["url"] == str(other)

    # resumed: refused before anything is written, naming en and its store
    files = _files(out)
    refused = _cli("run", str(path), "--workers", "1", "--quiet")
    assert_one_line_error(refused.returncode, refused.stderr, "the embedding store of en", stores["en"], "--update")
    assert "changed since its cells" in refused.stderr and "de (" not in refused.stderr
    assert _files(out) == files

    # --update: en's cells recomputed on the new store, de's kept bit for bit, fr's computed
    updated = _cli("run", str(path), "--workers", "1", "--quiet", "--update")
    assert updated.returncode == 0, updated.stderr
    after = rs.open_results(str(out))
    assert all(after["done"].values.ravel())
    new, old = _cells(after, OWN_VARS), _cells(before, OWN_VARS)
    assert all(_same(new[c], old[c]) for c in done if c[0] != "en")
    assert not any(_same(new[c], old[c]) for c in done if c[0] == "en")
    fresh = _cells(
        biasdask.run(study_of({"en": stores["en"]}, tmp_path / "fresh.zarr", **keys), progress=False), OWN_VARS
    )
    assert fresh and all(_same(new[c], fresh[c]) for c in fresh)
    assert set(after["store_fingerprint"].sel({"language": "en"}).values.ravel()) == {
        store_identity(stores["en"]).fingerprint
    }


def test_an_update_cut_short_whose_store_changed_starts_again(stores, tmp_path):
    en = generated_store(tmp_path, "en", n_words=1500, dim=12, seed=0)
    out = tmp_path / "r.zarr"
    biasdask.run(_study({"en": en, "de": stores["de"]}, out), progress=False)
    edited = _study({"en": en, "de": stores["de"], "es": stores["es"]}, out, langs={"en": "en", "de": "de", "es": "es"})
    cfg = parse_config(edited)
    changes = check_changes(cfg, {}, overwrite=False, update=True)
    # an update cut short once it had copied the cells it keeps (en's, de's)
    identities = {lang.code: embedding_identity(open_vectors(lang.store)) for lang in cfg.languages}
    prepare_update(cfg, {}, changes, identities)
    write_language(tmp_path / "en-other.bin", "male", "female", 0.3, 1500, 12, seed=9)
    ingest(str(tmp_path / "en-other.bin"), en, language="en", client=False, progress=False)
    after = _cells(biasdask.run(edited, update=True, progress=False))
    fresh = _cells(biasdask.run({**edited, "output": str(tmp_path / "fresh.zarr")}, progress=False))
    assert sorted(after) == sorted(fresh) and all(_same(after[c], fresh[c]) for c in fresh)


def test_a_store_without_a_fingerprint_resumes_as_before(stores, tmp_path):
    """Stores written before stores had a fingerprint give nothing to compare: their cells record none,
    and a study resumed on them is not refused."""
    en = generated_store(tmp_path, "en", n_words=1500, dim=12, seed=0)
    forget_records(tmp_path / "emb" / "en.zarr")
    study = _study({"en": en, "de": stores["de"]}, tmp_path / "r.zarr")
    cube = biasdask.run(study, progress=False)
    assert set(cube["store_fingerprint"].sel({"language": "en"}).values.ravel()) == {""}
    assert set(cube["store_source"].sel({"language": "en"}).values.ravel()) == {str(tmp_path / "en-0.bin")}
    write_language(tmp_path / "en-other.bin", "male", "female", 0.3, 1500, 12, seed=9)
    ingest(str(tmp_path / "en-other.bin"), en, language="en", client=False, progress=False)
    again = biasdask.run(study, progress=False)
    assert all(_same(a, b) for a, b in zip(_cells(again).values(), _cells(cube).values()))
