"""Every embedding form gives the bits of the stored form of the same vectors, on any scheduler."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask.errors import BiasdaskError, BiasdaskTypeError
from biasdask.io.embeddings import as_embeddings


@pytest.fixture(scope="module")
def stored(small_model, tmp_path_factory):
    """The small model written as a .vec file (shortest float32 decimals) and ingested: the stored form."""
    vectors, words = small_model
    path = tmp_path_factory.mktemp("emb") / "small.vec"
    lines = [f"{len(words)} {vectors.shape[1]}"] + [
        w + " " + " ".join(str(v) for v in row) for w, row in zip(words, vectors)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = str(path.with_suffix(".zarr"))
    biasdask.ingest(str(path), url, language="en", client=False, progress=False, chunk_words=64)
    np.testing.assert_array_equal(biasdask.open_embeddings(url)["vectors"].values, vectors)  # same float32
    return url


def _forms(small_model, small_kv, small_dataarray, stored):
    vectors, words = small_model
    ds = biasdask.open_embeddings(stored)
    return {
        "url": stored,
        "dataset": ds,
        "dataset-without-norm": ds.drop_vars("norm"),
        "dataarray": small_dataarray,
        "dataarray-dask": small_dataarray.chunk({"word": 50}),
        "dataarray-dim-first": small_dataarray.T,
        "keyedvectors": small_kv,
        "array+words": as_embeddings(vectors, words, language="en"),
        "dask-array+words": as_embeddings(da.from_array(vectors, chunks=(70, 16)), words, language="en"),
    }


@pytest.fixture(scope="module")
def forms(small_model, small_kv, small_dataarray, stored):
    return _forms(small_model, small_kv, small_dataarray, stored)


FORMS = ["dataset", "dataset-without-norm", "dataarray", "dataarray-dask", "dataarray-dim-first", "keyedvectors",
         "array+words", "dask-array+words"]


def _same(a, b):
    for field in ("statistic", "pvalue", "effect_size", "z_score", "null_mean", "null_std", "n_x", "n_y"):
        assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize("form", FORMS)
def test_scores_and_norms_are_bit_identical_to_the_stored_form(forms, form):
    ref = biasdask.scores(forms["url"], ["male", "he"], ["female", "she"])
    got = biasdask.scores(forms[form], ["male", "he"], ["female", "she"])
    np.testing.assert_array_equal(got["u"].values, ref["u"].values)
    np.testing.assert_array_equal(got["t"].values, ref["t"].values)
    np.testing.assert_array_equal(got["rank"].values, ref["rank"].values)
    assert got.attrs["n_zero_vectors"] == ref.attrs["n_zero_vectors"] == 1
    np.testing.assert_array_equal(as_embeddings(forms[form])["norm"].values, biasdask.open_embeddings(forms["url"])["norm"].values)


@pytest.mark.parametrize("form", FORMS)
def test_every_public_test_takes_every_form(forms, form):
    emb, ref = forms[form], forms["url"]
    kw = dict(seed=3, progress=False)
    _same(biasdask.weat(emb, "weat7", n_permutations=999, **kw), biasdask.weat(ref, "weat7", n_permutations=999, **kw))
    fv = dict(a=["male"], b=["female"], method="zipf", n_permutations=500, batch_size=100, **kw)
    _same(biasdask.full_vocabulary_test(emb, **fv), biasdask.full_vocabulary_test(ref, **fv))
    d = biasdask.direction(emb, pairs=[("he", "she")], method="pair")
    np.testing.assert_array_equal(d, biasdask.direction(ref, pairs=[("he", "she")], method="pair"))
    assert biasdask.direct_bias(emb, d, ["w397", "w398", "w399"]) == biasdask.direct_bias(ref, d, ["w397", "w398", "w399"])
    prof = biasdask.frequency_profile(emb, a=["male"], b=["female"])
    xr.testing.assert_equal(prof, biasdask.frequency_profile(ref, a=["male"], b=["female"]))  # attrs: language


def test_weat_by_name_on_a_keyedvectors_finds_the_planted_effect(small_kv):
    res = biasdask.weat(small_kv, "weat7", seed=1, alternative="greater", progress=False)
    assert res.test == "weat7" and res.effect_size > 1 and res.pvalue < 0.01


def test_schedulers_and_worker_counts_give_the_same_bits(small_kv, dask_client):
    kw = dict(a=["male"], b=["female"], method="uniform", n_permutations=600, seed=9, return_null=True, progress=False)
    ref = biasdask.full_vocabulary_test(small_kv, **kw, batch_size=600)
    runs = []
    for scheduler, workers in (("threads", 1), ("threads", 2), ("processes", 2), ("sync", 1)):
        with dask.config.set(scheduler=scheduler, num_workers=workers):
            runs.append(biasdask.full_vocabulary_test(small_kv, **kw, batch_size=70))
    runs.append(biasdask.full_vocabulary_test(small_kv, **kw, batch_size=55, client=dask_client))
    with dask_client.as_current():
        runs.append(biasdask.full_vocabulary_test(small_kv, **kw))
    for res in runs:
        _same(ref, res)
        np.testing.assert_array_equal(ref.null_distribution, res.null_distribution)


def test_dataset_errors_name_what_is_missing(small_dataarray):
    with pytest.raises(BiasdaskError, match="no 'vectors' variable"):
        as_embeddings(xr.Dataset({"v": small_dataarray}))
    with pytest.raises(BiasdaskError, match=r"expected dims \('word', 'dim'\)"):
        as_embeddings(small_dataarray.rename({"dim": "feature"}))
    with pytest.raises(BiasdaskError, match="no 'word' coordinate"):
        as_embeddings(small_dataarray.drop_vars("word"))
    with pytest.raises(BiasdaskError, match="3 words for 400 rows"):
        as_embeddings(small_dataarray.values, ["a", "b", "c"])
    with pytest.raises(BiasdaskError, match="needs words="):
        as_embeddings(small_dataarray.values)
    with pytest.raises(BiasdaskError, match="must be 2-D"):
        as_embeddings(small_dataarray.values[0], ["a"] * 16)
    with pytest.raises(BiasdaskTypeError, match="cannot use a builtins.dict as an embedding") as info:
        biasdask.weat({"he": [1.0]}, "weat7")
    assert isinstance(info.value, TypeError) and "\n" not in str(info.value)


def test_weat_arguments_are_checked(small_kv):
    with pytest.raises(ValueError, match="give no y, a, b"):
        biasdask.weat(small_kv, "weat7", ["x"])
    with pytest.raises(ValueError, match="four word sets"):
        biasdask.weat(small_kv, ["he"], ["she"])
    with pytest.raises(ValueError, match="alternative"):
        biasdask.weat(small_kv, "weat7", alternative="bigger")


def test_a_wrapped_model_sees_in_place_changes_and_is_not_stale(small_model):
    vectors, words = small_model
    arr = xr.DataArray(vectors.copy(), dims=("word", "dim"), coords={"word": words})
    before = biasdask.scores(arr, ["male"], ["female"])["u"].values
    arr.values[10] = -arr.values[10]
    after = biasdask.scores(arr, ["male"], ["female"])["u"].values
    assert after[10] == -before[10]


def test_a_top_level_script_without_main_guard_runs_on_threads(tmp_path):
    """The notebook path as a plain script: no ``if __name__ == "__main__"``, no cluster, no files."""
    import subprocess
    import sys

    script = tmp_path / "notebook_like.py"
    script.write_text(
        "import numpy as np, xarray as xr, biasdask, distributed\n"
        "words = ['male', 'female'] + [f'w{i}' for i in range(300)]\n"
        "v = np.random.default_rng(0).standard_normal((302, 8)).astype(np.float32)\n"
        "arr = xr.DataArray(v, dims=('word', 'dim'), coords={'word': words})\n"
        "res = biasdask.full_vocabulary_test(arr, ['male'], ['female'], n_permutations=400, batch_size=100, seed=1)\n"
        "try:\n    distributed.Client.current()\nexcept ValueError:\n    print('no client', res.n_x)\n",
        encoding="utf-8",
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "no client 302"
    assert proc.stderr == ""  # not a terminal: no progress bar, no warning
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notebook_like.py"]


def test_run_from_python_takes_in_memory_languages_on_threads(small_kv, small_dataarray, stored, monkeypatch):
    """A study whose languages are a KeyedVectors and a DataArray gives the cube of the stored form,
    on Dask's default scheduler, without starting a cluster; the digest follows the vectors."""
    from biasdask.config import parse_config
    from biasdask.engine import cluster

    def no_cluster(*args, **kwargs):
        raise AssertionError("run() from Python must not start a cluster unless asked")

    monkeypatch.setattr(cluster, "LocalCluster", no_cluster)
    study = dict(methods=["uniform", "zipf"], tests=["gender", "weat7"], n_permutations=300, seed=2)
    kw = dict(progress=False)
    memory = biasdask.run(
        {**study, "output": "memory://i12/kv.zarr", "languages": {"en": {"store": small_kv}, "de": {"store": small_dataarray, "a": ["male"], "b": ["female"]}}}, **kw
    )
    stored_de = biasdask.open_embeddings(stored).assign_attrs(language="de")  # the store says "en"
    ref = biasdask.run({**study, "output": "memory://i12/ref.zarr", "languages": {"en": stored, "de": {"store": stored_de, "a": ["male"], "b": ["female"]}}}, **kw)
    for v in ("statistic", "effect_size", "p_value", "null_std", "n_x"):
        np.testing.assert_array_equal(memory[v].values, ref[v].values, err_msg=v)
    digest = parse_config({**study, "output": "x", "languages": {"en": {"store": small_kv}}}).digest()
    assert digest == parse_config({**study, "output": "x", "languages": {"en": small_dataarray}}).digest()
    other = small_dataarray.copy(data=small_dataarray.values * 2)
    assert digest != parse_config({**study, "output": "x", "languages": {"en": other}}).digest()


def test_align_and_career_family_take_in_memory_forms(small_kv, small_dataarray, stored):
    """align (source and target in memory) writes the store the stored forms give; career_family_test
    reads an in-memory model like a store (its translations absent here: the same coverage error)."""
    words = list(small_kv.index_to_key)
    pairs = [(w, w) for w in words[:60]]
    rotated = small_dataarray.copy(data=small_dataarray.values[:, ::-1].copy())
    mem = biasdask.align(small_kv, rotated, pairs, "memory://i12/aligned-mem.zarr", progress=False)
    ref = biasdask.align(stored, rotated, pairs, "memory://i12/aligned-ref.zarr", progress=False)
    np.testing.assert_array_equal(mem["vectors"].values, ref["vectors"].values)
    np.testing.assert_array_equal(mem["norm"].values, ref["norm"].values)
    errors = []
    for emb in (small_kv, stored):
        with pytest.raises(ValueError) as info:
            biasdask.career_family_test(emb, language="en")
        errors.append(str(info.value))
    assert errors[0] == errors[1]
