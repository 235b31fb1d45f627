"""Every embedding form gives the bits of the stored form of the same vectors, on any scheduler."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask import Resampling, WordSets
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


FORMS = [
    "dataset",
    "dataset-without-norm",
    "dataarray",
    "dataarray-dask",
    "dataarray-dim-first",
    "keyedvectors",
    "array+words",
    "dask-array+words",
]


def _same(a, b):
    for field in ("statistic", "p_value", "effect_size", "z_score", "null_mean", "null_std", "n_x", "n_y"):
        assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize("form", FORMS)
def test_scores_and_norms_are_bit_identical_to_the_stored_form(forms, form):
    ref = biasdask.scores(forms["url"], ["male", "he"], ["female", "she"])
    got = biasdask.scores(forms[form], ["male", "he"], ["female", "she"])
    np.testing.assert_array_equal(got["u"].values, ref["u"].values)
    np.testing.assert_array_equal(got["t"].values, ref["t"].values)
    np.testing.assert_array_equal(got["rank"].values, ref["rank"].values)
    assert got.attrs["n_zero_vectors"] == ref.attrs["n_zero_vectors"] == 1
    np.testing.assert_array_equal(
        as_embeddings(forms[form])["norm"].values, biasdask.open_embeddings(forms["url"])["norm"].values
    )


@pytest.mark.parametrize("form", FORMS)
def test_every_public_test_takes_every_form(forms, form):
    emb, ref = forms[form], forms["url"]
    kw = dict(resampling=Resampling(n_permutations=999, seed=3), progress=False)
    _same(biasdask.weat(emb, test="weat7", **kw), biasdask.weat(ref, test="weat7", **kw))
    options = Resampling(n_permutations=500, batch_size=100, seed=3)
    fv = dict(a=["male"], b=["female"], method="zipf", resampling=options, progress=False)
    _same(biasdask.full_vocabulary_test(emb, **fv), biasdask.full_vocabulary_test(ref, **fv))
    d = biasdask.direction(emb, [("he", "she")], algorithm="pair")
    np.testing.assert_array_equal(d, biasdask.direction(ref, [("he", "she")], algorithm="pair"))
    assert biasdask.direct_bias(emb, d, ["w397", "w398", "w399"]) == biasdask.direct_bias(
        ref, d, ["w397", "w398", "w399"]
    )
    prof = biasdask.frequency_profile(emb, a=["male"], b=["female"])
    xr.testing.assert_equal(prof, biasdask.frequency_profile(ref, a=["male"], b=["female"]))  # attrs: language


def test_weat_by_name_on_a_keyedvectors_finds_the_planted_effect(small_kv):
    res = biasdask.weat(small_kv, test="weat7", progress=False, resampling=Resampling(seed=1, alternative="greater"))
    assert res.test == "weat7" and res.effect_size > 1 and res.p_value < 0.01


@pytest.mark.slow
def test_schedulers_and_worker_counts_give_the_same_bits(small_kv, dask_client):
    kw = dict(a=["male"], b=["female"], method="uniform", return_null=True, progress=False)
    options = Resampling(n_permutations=600, seed=9)
    ref = biasdask.full_vocabulary_test(small_kv, **kw, resampling=options.replace(batch_size=600))
    runs = []
    for scheduler, workers in (("threads", 1), ("threads", 2), ("processes", 2), ("sync", 1)):
        with dask.config.set(scheduler=scheduler, num_workers=workers):
            runs.append(biasdask.full_vocabulary_test(small_kv, **kw, resampling=options.replace(batch_size=70)))
    runs.append(
        biasdask.full_vocabulary_test(small_kv, **kw, resampling=options.replace(batch_size=55), client=dask_client)
    )
    with dask_client.as_current():
        runs.append(biasdask.full_vocabulary_test(small_kv, **kw, resampling=options))
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
        biasdask.weat({"he": [1.0]}, test="weat7")
    assert isinstance(info.value, TypeError) and "\n" not in str(info.value)


def test_weat_arguments_are_checked(small_kv):
    with pytest.raises(ValueError, match="give the word sets or the name of a lexicon test"):
        biasdask.weat(small_kv, WordSets(["x"], ["y"], ["a"], ["b"]), test="weat7")
    with pytest.raises(ValueError, match="the WordSets has no words in a, b"):
        biasdask.weat(small_kv, WordSets(["he"], ["she"]))
    with pytest.raises(ValueError, match="alternative"):
        biasdask.weat(small_kv, test="weat7", resampling=Resampling(alternative="bigger"))


def test_a_wrapped_model_sees_in_place_changes_and_is_not_stale(small_model):
    vectors, words = small_model
    arr = xr.DataArray(vectors.copy(), dims=("word", "dim"), coords={"word": words})
    before = biasdask.scores(arr, ["male"], ["female"])["u"].values
    arr.values[10] = -arr.values[10]
    after = biasdask.scores(arr, ["male"], ["female"])["u"].values
    assert after[10] == -before[10]


@pytest.mark.slow
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
        "options = biasdask.Resampling(n_permutations=400, batch_size=100, seed=1)\n"
        "res = biasdask.full_vocabulary_test(arr, ['male'], ['female'], resampling=options)\n"
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
    from biasdask.engine import cluster
    from biasdask.study.config import parse_config

    def no_cluster(*args, **kwargs):
        raise AssertionError("run() from Python must not start a cluster unless asked")

    monkeypatch.setattr(cluster, "LocalCluster", no_cluster)
    study = dict(methods=["uniform", "zipf"], tests=["gender", "weat7"], n_permutations=300, seed=2)
    kw = dict(progress=False)
    memory = biasdask.run(
        {
            **study,
            "output": "memory://i12/kv.zarr",
            "languages": {"en": {"store": small_kv}, "de": {"store": small_dataarray, "a": ["male"], "b": ["female"]}},
        },
        **kw,
    )
    stored_de = biasdask.open_embeddings(stored).assign_attrs(language="de")  # the store says "en"
    ref = biasdask.run(
        {
            **study,
            "output": "memory://i12/ref.zarr",
            "languages": {"en": stored, "de": {"store": stored_de, "a": ["male"], "b": ["female"]}},
        },
        **kw,
    )
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


def _via_string(values):
    """The widening as it was first written: numpy's shortest repr (Dragon4), parsed back."""
    return np.asarray(values, dtype=np.float32).astype(str).astype(np.float64)


def test_shortest_decimal_equals_the_string_route_bit_for_bit():
    from biasdask.io.embeddings import shortest_decimal

    rng = np.random.default_rng(12)
    f32 = np.finfo(np.float32)
    edges = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        f32.tiny,
        f32.smallest_subnormal,
        -f32.smallest_subnormal,
        f32.max,
        -f32.max,
        f32.eps,
        1.0,
        0.1,
        0.3,
        1e-12,
        1e18,
        1e-13,
        1e19,
        2097152.25,
        16777216.0,
        0.5,
        0.25,
        3.4e38,
        1.17e-38,
        9.999999e-13,
        1.0000001e18,
    ]
    pow2 = np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32)
    near = np.concatenate([np.nextafter(pow2, np.float32(np.inf)), np.nextafter(pow2, np.float32(0))])
    tens = np.array([10.0**k for k in range(-45, 39)], dtype=np.float32)
    tens = np.concatenate([tens, np.nextafter(tens, np.float32(np.inf)), np.nextafter(tens, np.float32(0))])
    values = np.concatenate(
        [
            np.array(edges, dtype=np.float32),
            pow2,
            near,
            tens,
            -tens,
            rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32),  # every exponent
            rng.standard_normal(100_000).astype(np.float32),  # word2vec-like
            np.round(rng.standard_normal(50_000), 4).astype(np.float32),  # fastText .vec decimals
            np.round(rng.uniform(-1, 1, 50_000), 5).astype(np.float32),  # GloVe
            (rng.standard_normal(50_000) * 10.0 ** rng.integers(-12, 19, 50_000)).astype(np.float32),
            rng.integers(1, 2**24, 25_000).astype(np.float32) * np.float32(0.25),  # ties between 8-digit decimals
            rng.integers(0, 2**23, 25_000, dtype=np.uint32).view(np.float32),  # subnormals
        ]
    )
    got, want = shortest_decimal(values), _via_string(values)
    bad = ~((got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want)))
    assert not bad.any(), list(zip(values[bad][:5], got[bad][:5], want[bad][:5]))
    np.testing.assert_array_equal(shortest_decimal(values[:1000].reshape(-1, 2)), want[:1000].reshape(-1, 2))
    assert shortest_decimal(np.float32(0.1)) == 0.1 and np.signbit(shortest_decimal(np.float32(-0.0)))


def test_a_word_table_answers_like_a_scan_and_goes_with_its_index(monkeypatch):
    import gc

    import pandas as pd

    from biasdask.io import vocabulary

    words = np.array(["a", "b", "a", "c", "mâle", "", "b", "d"] + [f"w{i}" for i in range(500)], dtype=object)
    asked = ["a", "b", "c", "z", "", "mâle", "w499", "d", "w500", "a"]
    expected = [list(words).index(w) if w in words else -1 for w in asked]
    index = pd.Index(words)
    key = id(index)
    scan = vocabulary.word_positions(index, asked)  # first lookup: a scan, the index remembered
    assert key in vocabulary._TABLES and vocabulary._TABLES[key] is None
    table = vocabulary.word_positions(index, asked)  # second: a table, built once and kept
    assert isinstance(vocabulary._TABLES[key], vocabulary.WordTable)
    np.testing.assert_array_equal(scan, expected)
    np.testing.assert_array_equal(table, expected)
    np.testing.assert_array_equal(vocabulary.word_positions(index, []), np.empty(0, np.intp))
    # the table tells apart different words of equal hash (all of them here) and keeps the first occurrence
    monkeypatch.setattr(vocabulary, "hash", lambda word: 7, raising=False)
    np.testing.assert_array_equal(vocabulary.WordTable(words).rows(asked), expected)
    del index
    gc.collect()
    assert key not in vocabulary._TABLES


def test_an_in_memory_model_gets_its_table_at_the_first_lookup(small_model):
    from gensim.models import KeyedVectors

    from biasdask.engine.scores import positions
    from biasdask.io import vocabulary

    vectors, words = small_model
    small_kv = KeyedVectors(vectors.shape[1])  # a model of its own, not looked up before
    small_kv.add_vectors(words, vectors)
    ds = as_embeddings(small_kv)
    assert vocabulary._TABLES.get(id(ds.indexes["word"]), "absent") is None  # registered by the wrapper
    np.testing.assert_array_equal(positions(ds, [words[5], "absent-word", words[0]]), [5, -1, 0])
    assert isinstance(vocabulary._TABLES[id(ds.indexes["word"])], vocabulary.WordTable)
    assert as_embeddings(small_kv) is ds
