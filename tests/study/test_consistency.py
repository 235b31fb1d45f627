"""Internal consistency in a study: the cube's figures of classic cells on the real vectors (GloVe's WEAT 7,
the IAT words' career/family) are the API's for the cell's seed; a gender test of base pairs stores α
over the whole vocabulary (numpy's, from the vectors), the same bits whatever the chunking and the
scheduler; the study keys that name the pairs, checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

import biasdask
from biasdask.errors import ConfigError
from biasdask.io import results as rs
from biasdask.lexicon import bolukbasi, iat_categories
from biasdask.study.config import parse_config
from biasdask.study.plan import cell_seed, family_seed
from tests.engine.test_consistency import numpy_alpha, numpy_pair_items, pair_vocabulary
from tests.stores import make_store, study_of

CONSISTENCY = (
    "cronbach_alpha",
    "split_half",
    "effect_size_loo_low",
    "effect_size_loo_high",
    "effect_size_without_loo_word",
)
SEED = 17


def cell(cube, test, method="uniform", language="en"):
    return cube.sel({"language": language, "method": method, "test": test})


def test_classic_cells_store_the_consistency_the_api_gives(glove_store, iat_store, tmp_path):
    stores = {"en": glove_store}
    cube = biasdask.run(
        study_of(
            stores, tmp_path / "glove.zarr", tests=["weat7"], methods=["uniform", "zipf"], placebo=False, seed=SEED
        ),
        progress=False,
    )
    res = biasdask.weat(
        glove_store,
        test="weat7",
        resampling=biasdask.Resampling(n_permutations=99, seed=cell_seed(SEED, "en", "uniform", "weat7")),
    )
    iat = biasdask.run(
        study_of({"en": iat_store("en")}, tmp_path / "iat.zarr", tests=["career_family"], placebo=False, seed=SEED),
        progress=False,
    )
    career = biasdask.career_family_test(
        iat_store("en"),
        resampling=biasdask.Resampling(n_permutations=99, seed=cell_seed(SEED, "en", "uniform", "career_family")),
    )
    for ds, test, api in ((cube, "weat7", res), (iat, "career_family", career)):
        loo = api.consistency.leave_one_out
        want = {
            "cronbach_alpha": api.consistency.alpha.alpha,
            "split_half": api.consistency.split_half.reliability,
            "effect_size_loo_low": loo.low,
            "effect_size_loo_high": loo.high,
            "effect_size_without_loo_word": loo.values[loo.most_influential],
        }
        for method in ds["method"].values:
            got = cell(ds, test, str(method))
            assert {v: float(got[v]).hex() for v in CONSISTENCY} == {v: float(want[v]).hex() for v in CONSISTENCY}
            side = "A" if loo.most_influential < api.consistency.n_a else "B"
            assert str(got["loo_word"].values) == f"{loo.word} ({side})"
    assert cube["cronbach_alpha"].attrs["long_name"] == "Cronbach's alpha of the attribute words"
    assert "Spearman-Brown" in cube["split_half"].attrs["description"]


def pair_study(stores, output, **keys):
    return study_of(
        stores,
        output,
        attributes="bolukbasi",
        associations=["cosine", "ripa"],
        methods=["uniform", "zipf"],
        seed=SEED,
        **keys,
    )


@pytest.fixture(scope="module")
def pair_stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pairs")
    pairs, words, vectors = pair_vocabulary()
    return (
        pairs,
        words,
        vectors,
        make_store(tmp, "few", words, vectors, chunk_words=700),
        make_store(tmp, "many", words, vectors, chunk_words=130),
    )


def alpha_bits(cube):
    return {
        (str(t), str(m), v): float(cube.sel({"language": "en", "method": m, "test": t})[v]).hex()
        for t in cube["test"].values
        for m in cube["method"].values
        for v in ("cronbach_alpha", "split_half")
    }


def test_gender_cells_of_base_pairs_store_alpha_over_the_vocabulary(pair_stores, tmp_path):
    pairs, words, vectors, few, many = pair_stores
    cube = biasdask.run(pair_study({"en": few}, tmp_path / "few.zarr", placebo={"n": 20}), progress=False)
    items = numpy_pair_items(pairs, words, vectors)
    got = cell(cube, "gender")
    assert float(got["cronbach_alpha"]) == pytest.approx(numpy_alpha(items), abs=1e-6)
    assert str(got["attribute_set"].values) == "bolukbasi" and int(got["n_a"]) == 10
    assert str(got["attribute_words_a"].values).startswith("man, boy, he")
    for label, association in (("gender", "cosine"), ("gender.ripa", "ripa")):
        api = biasdask.pair_consistency(few, pairs, association=association, seed=family_seed(SEED, "en", label))
        loo = api.leave_one_out
        for method in ("uniform", "zipf"):
            c = cell(cube, label, method)
            assert float(c["cronbach_alpha"]).hex() == api.alpha.alpha.hex()
            assert float(c["split_half"]).hex() == api.split_half.reliability.hex()
            assert (float(c["effect_size_loo_low"]), float(c["effect_size_loo_high"])) == (loo.low, loo.high)
            assert str(c["loo_word"].values) == loo.word and "/" in loo.word
        # d of the pairs' mean association is the cell's d, and without each pair numpy's
        assert loo.statistic == pytest.approx(float(cell(cube, label)["effect_size"]), abs=1e-5)
    s = [np.delete(items, j, axis=1).mean(axis=1) for j in range(10)]
    brute = [x.mean() / np.r_[x, np.zeros_like(x)].std(ddof=1) for x in s]
    assert np.allclose(biasdask.pair_consistency(few, pairs, seed=0).leave_one_out.values, brute, rtol=0, atol=1e-5)
    # without a placebo, and over a store chunked otherwise: the same bits
    other = biasdask.run(pair_study({"en": many}, tmp_path / "many.zarr", placebo=False), progress=False)
    assert alpha_bits(other) == alpha_bits(cube)
    assert rs.open_results(tmp_path / "few.zarr")["cronbach_alpha"].attrs["long_name"].startswith("Cronbach")


def test_base_pairs_give_the_same_bits_on_worker_processes(pair_stores, tmp_path, dask_client):
    _, _, _, few, many = pair_stores
    here = biasdask.run(pair_study({"en": few}, tmp_path / "here.zarr", placebo=False), progress=False)
    there = biasdask.run(
        pair_study({"en": many}, tmp_path / "there.zarr", placebo={"n": 20}), client=dask_client, progress=False
    )
    assert alpha_bits(there) == alpha_bits(here)


def test_one_pair_a_side_has_no_alpha(pair_stores, tmp_path):
    _, _, _, few, _ = pair_stores
    cube = biasdask.run(study_of({"en": few}, tmp_path / "one.zarr", placebo=False, seed=SEED), progress=False)
    assert all(math.isnan(float(cell(cube, "gender")[v])) for v in CONSISTENCY)


# --------------------------------------------------------------------------------------------------
# The study keys


def config(**keys):
    return parse_config({"output": "out.zarr", "embeddings": "emb/{language}.zarr", **keys})


def test_attribute_pairs_of_a_study():
    (en,) = config(languages=["en"], attributes="bolukbasi").languages
    assert en.paired and en.attribute_set == "bolukbasi"
    assert list(zip(en.a, en.b)) == [(m, f) for f, m in bolukbasi().definitional_pairs]
    (fr,) = config(languages={"fr": {"attributes": {"pairs": [["il", "elle"], ["homme", "femme"]]}}}).languages
    assert fr.paired and (fr.a, fr.b, fr.attribute_set) == (("il", "homme"), ("elle", "femme"), "pairs")
    (de,) = config(languages=["de"], attributes={"pairs": "iat"}).languages
    order = dict(zip(iat_categories()["male"], iat_categories()["female"]))
    assert de.attribute_set == "iat_pairs" and len(de.a) == len(de.b) >= 2
    assert all(order[m.label] == f.label for m, f in zip(de.a, de.b))
    (plain,) = config(languages=["en"]).languages
    assert not plain.paired and plain.attribute_set == "catalog"


@pytest.mark.parametrize(
    "keys, match",
    [
        ({"languages": ["fr"], "attributes": "bolukbasi"}, r"languages\.fr: attributes bolukbasi: .* English"),
        ({"languages": ["en"], "attributes": {"pairs": [["he"]]}}, r"attributes\.pairs\[0\]: expected a pair"),
        ({"languages": ["en"], "attributes": {"pairs": [["he", "he"]]}}, r"attributes\.pairs\[0\]: .* no direction"),
        ({"languages": ["en"], "attributes": {"pairs": []}}, r"attributes\.pairs: expected a non-empty list"),
        ({"languages": ["en"], "attributes": {"pairs": "he she"}}, r"attributes\.pairs: expected a non-empty list"),
        (
            {"languages": ["en"], "attributes": {"pairs": [["he", "she"], ["he", "her"]]}},
            r"'he' is the first word of more than one pair",
        ),
        ({"languages": ["en"], "attributes": {"pairs": [["he", "she"]], "a": ["x"]}}, "base pairs stand alone"),
        ({"languages": ["zz"], "attributes": {"pairs": "iat"}}, "pairs: iat: no IAT translations"),
        ({"languages": ["en"], "attributes": "pairs"}, "expected catalog, iat, bolukbasi"),
    ],
)
def test_bad_attribute_pairs_are_refused_naming_the_key(keys, match):
    with pytest.raises(ConfigError, match=match):
        config(**keys)


def test_a_study_without_pairs_keeps_its_digest():
    # the canonical study of the default attributes, as every study before base pairs wrote it
    canonical = config(languages=["en"]).canonical()
    assert canonical["languages"] == [
        {"code": "en", "store": "emb/en.zarr", "attributes": "catalog", "a": ["male"], "b": ["female"]}
    ]
    assert np.all([key in canonical for key in ("seed", "tests", "methods")])
