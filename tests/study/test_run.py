"""The main job: config -> cluster -> results cube, resume after SIGKILL, S3 end to end, demo."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.stats
import xarray as xr

import biasdask
from biasdask import Location, Vocabulary
from biasdask.demo import demo, filler_words
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError, StoreConflictError
from biasdask.io import results as rs
from tests.stores import generated_store, study_file, study_of

#: every numeric variable of the cube, from its registry
CELL_VARS = [name for name, (dtype, _, _) in rs.CELL_VARIABLES.items() if dtype is not str]


def _make_stores(tmp_path, codes, dest=lambda code: None, storage_options=None, n_words=3000):
    """Generated stores of ``codes`` (planted strengths 0, 0.1, ...), at ``dest(code)`` or in ``tmp_path/emb``."""
    return {
        code: generated_store(
            tmp_path,
            code,
            n_words=n_words,
            dim=20,
            strength=0.1 * i,
            seed=i,
            url=dest(code),
            storage_options=storage_options,
        )
        for i, code in enumerate(codes)
    }


#: the study of this module, unless a test says otherwise
KEYS = {"methods": ["uniform", "zipf"], "n_permutations": 499, "seed": 11}


def _study(stores, output, **kw):
    return study_of(stores, output, **{**KEYS, **kw})


def _assert_same_cube(a: xr.Dataset, b: xr.Dataset):
    for v in CELL_VARS:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
    for k in ("seed", "alternative", "similarity", "sd_ddof", "config", "config_hash"):
        assert a.attrs[k] == b.attrs[k]


@pytest.mark.slow
def test_s3_end_to_end_three_languages(tmp_path, s3_bucket, dask_client):
    bucket, options = s3_bucket
    stores = _make_stores(
        tmp_path, ["en", "de", "zh"], dest=lambda c: f"s3://{bucket}/emb/{c}.zarr", storage_options=options
    )
    os.environ["BIASDASK_TEST_S3_SECRET"] = options["secret"]
    study = _study(
        stores,
        f"s3://{bucket}/results/study.zarr",
        storage_options={
            "endpoint_url": options["endpoint_url"],
            "key": options["key"],
            "secret": "${BIASDASK_TEST_S3_SECRET}",
        },
        tests=["gender", "weat7", "career_family"],
    )
    out = biasdask.run(study, client=dask_client, progress=False)
    plain = xr.open_zarr(study["output"], consolidated=False, storage_options=options)
    assert dict(plain.sizes) == {"language": 3, "method": 2, "test": 3}
    assert [str(x) for x in plain["language"].values] == ["en", "de", "zh"]
    for v in ["statistic", "effect_size", "p_value", "z_score", "p_value_normal", "null_mean", "null_std"]:
        assert plain[v].dtype == np.float64
    for v in ["n_permutations", "n_x", "n_y", "n_a", "n_b"]:
        assert plain[v].dtype == np.int64
    assert plain["exact"].dtype == bool
    for k in ("seed", "alternative", "similarity", "sd_ddof", "biasdask_version", "config"):
        assert k in plain.attrs
    assert (
        plain.attrs["sd_ddof"] == 1
        and "secret" not in plain.attrs["config"]
        and options["secret"] not in str(plain.attrs)
    )
    gender = out.sel({"test": "gender"})
    assert np.isfinite(gender["p_value"].values).all() and (gender["n_permutations"].values == 499).all()
    # weat7 is English-only and the synthetic store lacks its words: skipped or not applicable, never 0.
    weat7 = out.sel({"test": "weat7"})
    assert np.isnan(weat7["statistic"].values).all()
    assert "coverage" in str(weat7["note"].sel({"language": "en"}).values[0])
    assert "not applicable" in str(weat7["note"].sel({"language": "de"}).values[0])
    sc = rs.open_scores(Location(study["output"], options), language="de")
    assert sc.sizes["word"] == 3000 and {str(m) for m in sc["method"].values} == {"uniform", "zipf"}
    emb = biasdask.open_embeddings(Location(stores["de"], options))
    direct = biasdask.scores(emb, ["männlich"], ["weiblich"], methods=["zipf"])
    np.testing.assert_array_equal(sc["t"].sel({"method": "zipf"}).values, direct["t"].values[0])
    assert list(sc["word"].values) == list(emb["word"].values)  # copied from the store on S3, as stored


def test_different_config_refused_unless_overwrite(tmp_path, dask_client):
    stores = _make_stores(tmp_path, ["en"], n_words=500)
    out = str(tmp_path / "r.zarr")
    biasdask.run(_study(stores, out), client=dask_client, progress=False)
    with pytest.raises(StoreConflictError, match="overwrite"):
        biasdask.run(_study(stores, out, seed=12), client=dask_client, progress=False)
    res = biasdask.run(_study(stores, out, seed=12), client=dask_client, progress=False, overwrite=True)
    assert res.attrs["seed"] == 12


def test_missing_attribute_words_leave_cells_empty_and_name_them(tmp_path, dask_client):
    stores = _make_stores(tmp_path, ["en", "de"], n_words=500)
    study = _study(stores, str(tmp_path / "r.zarr"))
    study["languages"]["de"] = {"store": stores["de"], "a": ["nichtda"], "b": ["weiblich"]}
    with pytest.raises(BiasdaskError, match="de:.*nichtda"):
        biasdask.run(study, client=dask_client, progress=False)
    out = rs.open_results(study["output"])
    assert np.isfinite(out["statistic"].sel({"language": "en"}).values).all()
    assert np.isnan(out["statistic"].sel({"language": "de"}).values).all()
    notes = out["note"].sel({"language": "de"}).values.ravel()
    assert all("missing attribute words" in str(n) and "A: nichtda" in str(n) for n in notes)


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, dask_client, monkeypatch):
    codes = ["en", "de", "fr", "es", "it", "ja"]
    stores = _make_stores(tmp_path, codes, n_words=8000)
    killed_out = str(tmp_path / "killed.zarr")
    path = study_file(tmp_path, stores, **{**KEYS, "output": killed_out, "n_permutations": 5000})
    proc = subprocess.Popen(
        [sys.executable, "-m", "biasdask.cli", "run", str(path), "--workers", "1", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 240
    done = set()
    while time.time() < deadline and proc.poll() is None:
        try:
            done = rs.done_cells(killed_out)
        except Exception:  # store not created yet
            done = set()
        if len(done) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "run finished before it could be killed: " + proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = rs.done_cells(killed_out)
    total = len(codes) * 2
    assert 2 <= len(done) < total

    calls = []
    real = rs.write_cell
    monkeypatch.setattr(rs, "write_cell", lambda url, *cell, **k: calls.append(cell[:3]) or real(url, *cell, **k))
    resumed = biasdask.run(path, client=dask_client, progress=False)
    assert len(calls) == total - len(done) and not set(calls) & done  # only the unfinished cells

    clean = biasdask.run(
        _study(stores, str(tmp_path / "clean.zarr"), n_permutations=5000), client=dask_client, progress=False
    )
    _assert_same_cube(resumed, clean)
    for code in codes:
        a = rs.open_scores(killed_out, language=code).load()
        b = rs.open_scores(str(tmp_path / "clean.zarr"), language=code).load()
        xr.testing.assert_identical(a[["u", "t"]], b[["u", "t"]])
    for code, method in [("en", "uniform"), ("ja", "zipf")]:
        np.testing.assert_array_equal(
            rs.read_null(killed_out, code, method, "gender"),
            rs.read_null(str(tmp_path / "clean.zarr"), code, method, "gender"),
        )


@pytest.mark.slow
def test_demo_recovers_planted_strengths_in_order(tmp_path, dask_client):
    out = demo(tmp_path / "demo", n_words=3000, dim=30, n_permutations=999, client=dask_client, progress=False)
    d = out["effect_size"].sel({"method": "uniform", "test": "gender"}).values
    rho = scipy.stats.spearmanr(out["planted_strength"].values, d).statistic
    assert rho > 0.99
    assert (out["p_value"].values[np.isfinite(out["p_value"].values)] > 0).all()
    pngs = sorted(p.name for p in (tmp_path / "demo" / "plots").glob("*.png"))
    assert "overview.png" in pngs and any(p.startswith("null_") for p in pngs)
    assert (tmp_path / "demo" / "report" / "index.html").exists()
    # the demo shows the frequency profiles (Valentini et al. 2022); t of "uniform" is u, drawn once
    assert {"frequency_profile_u.png", "frequency_profile_t_zipf.png"} <= set(pngs)
    assert "frequency_profile_t_uniform.png" not in pngs


def test_cli_show_and_plot(tmp_path, dask_client, capsys):
    from biasdask.cli import main

    stores = _make_stores(tmp_path, ["en", "de"], n_words=500)
    out = str(tmp_path / "r.zarr")
    biasdask.run(_study(stores, out), client=dask_client, progress=False)
    capsys.readouterr()
    # show and plot in this process (a fresh interpreter costs seconds); the refused --cell in a real one
    assert main(["show", out]) == 0
    show = capsys.readouterr()
    assert "test: gender" in show.out and "uniform" in show.out and "zipf" in show.out
    lines = [ln for ln in show.out.splitlines() if ln.split()[:1] in (["en"], ["de"])]
    assert len(lines) == 2 and all("männlich" in ln or "male" in ln for ln in lines)
    assert main(["plot", out, "--output", str(tmp_path / "png"), "--cell", "de,zipf,gender"]) == 0
    written = capsys.readouterr().out.split()
    assert any(p.endswith("overview.png") for p in written) and any(
        p.endswith("null_de_zipf_gender.png") for p in written
    )
    bad = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "plot", out, "--output", str(tmp_path / "png"), "--cell", "xx,zipf"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--cell" in bad.stderr


def test_study_attribute_sets_are_applied_and_recorded(tmp_path, shared_data, dask_client):
    """attributes: iat for French (the IAT's eight terms per side), explicit lists for Spanish; the
    cube records which set each gender cell used, and s is Σ u of the same attribute terms."""
    from biasdask.lexicon import iat_attribute_terms

    stores = {}
    for code in ("fr", "es"):
        url = str(tmp_path / f"{code}.zarr")
        ingest(str(shared_data / "iat" / "cc" / f"{code}.vec"), url, language=code, client=False, progress=False)
        stores[code] = url
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {
            "fr": {"store": stores["fr"], "attributes": "iat"},
            "es": {"store": stores["es"], "attributes": {"a": ["hombre", "él"], "b": ["mujer", "ella"]}},
        },
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 199,
        "exclude_words": "gender_specific",
        "dedupe_vectors": True,
    }
    out = biasdask.run(study, client=dask_client, progress=False)
    cell = out.sel({"method": "uniform", "test": "gender"})
    assert [str(v) for v in cell["attribute_set"].values] == ["iat", "explicit"]
    a, b = iat_attribute_terms("cc", "fr")
    emb = biasdask.open_embeddings(stores["fr"])
    sc = biasdask.scores(
        emb, a, b, methods=["uniform"], vocabulary=Vocabulary(exclude_words="gender_specific", dedupe_vectors=True)
    )
    u = sc["u"].values
    assert 0 < sc.attrs["n_excluded"] and np.isnan(u).sum() >= sc.attrs["n_excluded"]
    assert float(cell["statistic"].sel({"language": "fr"})) == pytest.approx(
        float(np.nansum(u.astype(np.float64))), rel=1e-6
    )
    assert int(cell["n_a"].sel({"language": "fr"})) == 8
    assert out.attrs["alternative"] == "two-sided"
    assert "attributes: iat" in out.attrs["config"]


def test_a_vocabulary_without_observed_frequencies_gets_notes_and_the_run_goes_on(tmp_path, caplog):
    # wordfreq has English and German lists, but none of this "en" store's words is in them (made-up
    # tokens), and de's only listed words are excluded from the targets: neither can be weighted; fr can
    # (homme, femme are in its list)
    words = {"en": ("zmale", "zfemale"), "de": ("männlich", "weiblich"), "fr": ("homme", "femme")}
    stores = {}
    for i, (code, pair) in enumerate(words.items()):
        vocabulary = filler_words(*pair, 400)
        if code != "fr":  # made up: in no word list
            vocabulary = ["zqx" + w for w in vocabulary]
        stores[code] = generated_store(tmp_path, code, words=pair, vocabulary=vocabulary, n_words=400, dim=10, seed=i)
    study = _study(
        stores,
        str(tmp_path / "r.zarr"),
        methods=["uniform", "frequency"],
        n_permutations=99,
        exclude_words=list(words["de"]),
    )
    for code, (male, female) in words.items():
        study["languages"][code].update(a=[male], b=[female])
    with caplog.at_level("WARNING", logger="biasdask"):
        out = biasdask.run(study, progress=False)  # Dask's threaded scheduler: no cluster
    err = "\n".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    gender = out.sel({"test": "gender"})
    for code in ("en", "de"):
        cell = gender.sel({"language": code})
        assert np.isfinite(cell["statistic"].sel({"method": "uniform"}).item())
        assert np.isnan(cell["statistic"].sel({"method": "frequency"}).item())
        assert str(cell["note"].sel({"method": "frequency"}).item()) == (
            "no observed-frequency weights (none of the words used is in wordfreq's observed-frequency list for "
            f"language '{code}'), so the 'frequency' weighting cannot be computed"
        )
        assert f"{code}: none of the words used is in wordfreq's observed-frequency list" in err
    assert np.isfinite(gender["statistic"].sel({"language": "fr"}).values).all()


def test_every_cell_explains_itself_and_a_language_without_frequencies_runs(tmp_path, dask_client, caplog):
    stores = _make_stores(tmp_path, ["en", "eu"], n_words=500)
    study = _study(
        stores,
        str(tmp_path / "r.zarr"),
        methods=["uniform", "zipf", "frequency"],
        tests=["gender", "weat7"],
        alternative="greater",
    )
    study["languages"]["en"] = {"store": stores["en"], "a": ["male", "mael"], "b": ["female"]}
    with caplog.at_level("WARNING", logger="biasdask"):
        out = biasdask.run(study, client=dask_client, progress=False)
    err = "\n".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")  # the CLI prints these
    # a misspelt attribute word: a warning in the output and in the cell, never silent
    assert "en: attribute words not in the vocabulary, left out: A: mael" in err
    en = out.sel({"language": "en", "test": "gender"})
    assert all("A: mael" in str(n) for n in en["note"].values)
    assert list(en["missing_attribute_words"].values) == ["A: mael"] * 3
    assert (
        list(en["attribute_words_a"].values) == ["male"] * 3 and list(en["attribute_words_b"].values) == ["female"] * 3
    )
    assert list(en["t_method"].values) == ["uniform", "zipf", "frequency"]
    assert list(en["alternative"].values) == ["greater"] * 3
    assert np.isfinite(en["statistic"].values).all() and (en["n_x"].values > 0).all()
    # eu has no observed-frequency list: its frequency cell says so, the rest of the study ran
    eu = out.sel({"language": "eu", "test": "gender"})
    assert np.isfinite(eu["statistic"].sel({"method": "zipf"}).item())
    freq = eu.sel({"method": "frequency"})
    assert np.isnan(freq["statistic"].item()) and "no observed-frequency list" in str(freq["note"].item())
    assert "eu: wordfreq has no observed-frequency list" in err and "'frequency' cells are left empty" in err
    # weat7 (English word lists): coverage in en, not applicable in eu; classic tests have no weighting
    weat7 = out.sel({"test": "weat7"})
    assert all("coverage" in str(n) for n in weat7["note"].sel({"language": "en"}).values)
    assert all("not applicable" in str(n) for n in weat7["note"].sel({"language": "eu"}).values)
    assert set(weat7["t_method"].sel({"language": "en"}).values) == {"none"}
    # every empty cell has a note; the finished cube is in the chunks plain xarray reads
    empty = np.isnan(out["statistic"].values)
    assert all(str(n) for n in out["note"].values[empty])
    plain = xr.open_zarr(study["output"], consolidated=False).load()
    np.testing.assert_array_equal(plain["statistic"].values, out["statistic"].values)


@pytest.mark.timeout(300, method="thread")
def test_a_language_whose_cells_are_all_notes_ends_the_run(tmp_path):
    """A store opened without its words, a study none of whose tests applies to its language and that
    saves no scores: the language writes its notes and the run ends, not waiting for ever."""
    stores = _make_stores(tmp_path, ["fr"], n_words=300)
    cube = biasdask.run(
        {
            "output": str(tmp_path / "r.zarr"),
            "languages": stores,
            "methods": ["uniform"],
            "tests": ["weat7"],
            "save_scores": False,
            "n_permutations": 19,
        },
        progress=False,
    )
    assert cube["note"].values.ravel().tolist() == ["not applicable: test weat7 has no word lists for language fr"]


def test_a_study_without_the_gender_test_runs_where_the_catalog_words_are_missing(tmp_path, shared_data, caplog):
    """Dutch's catalog word for *female* (vrouwlijk) is not among the IAT vectors: a study of the
    career/family test still runs Dutch (only its per-word gender scores are left out), with the cells
    of the same study that saves no scores."""
    stores = {}
    for code in ("en", "nl"):
        stores[code] = str(tmp_path / f"{code}.zarr")
        source = str(shared_data / "iat" / "cc" / f"{code}.vec")
        ingest(source, stores[code], language=code, client=False, progress=False)
    study = {
        "languages": {code: {"store": url} for code, url in stores.items()},
        "tests": ["career_family"],
        "n_permutations": 99,
        "seed": 3,
        "placebo": False,
    }
    with caplog.at_level("WARNING", logger="biasdask"):
        out = biasdask.run({**study, "output": str(tmp_path / "r.zarr")}, progress=False, start_cluster=False)
    assert "nl: per-word scores not written" in caplog.text
    bare = biasdask.run(
        {**study, "output": str(tmp_path / "bare.zarr"), "save_scores": False}, progress=False, start_cluster=False
    )
    d = out["effect_size"].sel({"test": "career_family"})
    assert np.isfinite(d.values).all()
    np.testing.assert_array_equal(d.values, bare["effect_size"].sel({"test": "career_family"}).values)


def test_cells_are_written_beside_the_loop_and_a_failed_write_stops_the_writing(tmp_path, monkeypatch):
    """The cell writer returns at once (the run's loop goes on handing out work while a cell is written),
    writes in the order given, and after a write fails writes nothing more: the next call and close()
    raise its error."""
    import threading
    from types import SimpleNamespace

    from biasdask.study.handlers import Cell
    from biasdask.study.run import CellWriter

    written, release = [], threading.Event()

    def write_cell(out, language, method, test, values):
        release.wait(30)
        if language == "bad":
            raise PermissionError(13, "Permission denied", "results.zarr/cells")
        written.append(language)

    monkeypatch.setattr(rs, "write_cell", write_cell)
    cfg = SimpleNamespace(save_null=False)  # what the writer reads of the study
    bar = SimpleNamespace(update=lambda: None)
    writer = CellWriter(cfg, Location(str(tmp_path / "r.zarr")), bar, {"en": {}, "de": {}, "bad": {}, "fr": {}})
    started = time.perf_counter()
    for code in ("en", "de"):
        writer(Cell(code, "uniform", "gender", {}))
    assert time.perf_counter() - started < 5 and written == []  # not waiting for the writes
    release.set()
    writer.close()
    assert written == ["en", "de"]

    release.clear()
    writer = CellWriter(cfg, Location(str(tmp_path / "r.zarr")), bar, {"bad": {}, "fr": {}})
    writer(Cell("bad", "uniform", "gender", {}))
    writer(Cell("fr", "uniform", "gender", {}))  # queued behind the failing write: never written
    release.set()
    with pytest.raises(PermissionError, match="Permission denied"):
        writer.close()
    assert written == ["en", "de"]
    with pytest.raises(PermissionError):
        writer(Cell("fr", "uniform", "gender", {}))
