"""The placebo null of the full-vocabulary test: each placebo statistic equals the test run on that
pair's words, the draws avoid gendered words, and on real vectors the placebo p-value is calibrated
where the dummy-language p-value is not."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask import Resampling, Vocabulary, WordSets
from biasdask.engine.placebo import gendered_words, placebo_test
from biasdask.engine.scores import scores, scores_and_moments
from biasdask.stats.placebo import PlaceboMatch

_DIGITS = str.maketrans("0123456789", "abcdefghij")


def _w(i: int) -> str:
    """The filler word of row ``i``: ``w`` and the row's digits as letters (``wba`` for 10), a word-like
    token a placebo may draw."""
    return "w" + str(i).translate(_DIGITS)


def _row(word: str) -> int:
    return int(word[1:].translate(str.maketrans("abcdefghij", "0123456789")))


def _anisotropic(n=3000, dim=16, seed=0):
    """Word vectors sharing a common mean direction (as real embeddings do), ranked by row."""
    rng = np.random.default_rng(seed)
    v = 3 * rng.normal(size=dim) + rng.normal(size=(n, dim)) * np.linspace(2.0, 0.3, dim)
    words = np.array([_w(i) for i in range(n)], dtype=object)
    words[:4] = ["he", "she", "man", "woman"]
    return xr.DataArray(v.astype(np.float32), dims=("word", "dim"), coords={"word": words})


@pytest.mark.parametrize("association", ["cosine", "semaxis", "ripa", "euclidean"])
@pytest.mark.parametrize("exclude_attributes", [False, True])
def test_each_placebo_statistic_is_the_test_of_its_pair(association, exclude_attributes):
    emb = biasdask.as_embeddings(_anisotropic(), language="en")
    a, b = [_w(10), _w(500)], [_w(20), _w(900)]
    sc, moments = scores_and_moments(
        emb,
        a,
        b,
        methods=("uniform", "zipf"),
        association=association,
        vocabulary=Vocabulary(exclude_attributes=exclude_attributes),
    )
    found = placebo_test(emb, sc, moments, a, b, n=40, seed=7, alternative="two-sided")
    assert found.words.shape == (40, 4) and found.statistics.shape == (40, 2)
    assert not set(found.words.ravel()) & {"he", "she", "man", "woman", *a, *b}  # never a gendered or attribute word
    for i in range(0, 40, 8):  # oracle: the pair's own scores, computed word by word
        pa, pb = list(found.words[i, :2]), list(found.words[i, 2:])
        # on the test's own targets: when it left its attribute words out, they stay out, and the pair's
        # words leave too
        own = scores(
            emb,
            pa,
            pb,
            methods=("uniform", "zipf"),
            association=association,
            vocabulary=Vocabulary(
                exclude_attributes=exclude_attributes, exclude_words=[*a, *b] if exclude_attributes else ()
            ),
        )
        ou = own["u"].values.astype(np.float64)
        keep = np.isfinite(ou)
        s = np.nansum(own["t"].values.astype(np.float64), axis=1)
        np.testing.assert_allclose(found.statistics[i], s, rtol=2e-5)
        pooled = np.r_[ou[keep], np.zeros(keep.sum())]
        d = ou[keep].mean() / pooled.std(ddof=1)
        assert found.effect_sizes[i] == pytest.approx(d, rel=2e-5)


def test_draws_are_frequency_matched_and_seeded():
    emb = biasdask.as_embeddings(_anisotropic(), language="en")
    a, b = [_w(5), _w(2000)], [_w(6), _w(2500)]
    sc, moments = scores_and_moments(emb, a, b, methods=("uniform",))
    one = placebo_test(emb, sc, moments, a, b, n=30, seed=3, alternative="greater")
    again = placebo_test(emb, sc, moments, a, b, n=30, seed=3, alternative="greater")
    np.testing.assert_array_equal(one.statistics, again.statistics)
    rows = np.vectorize(_row)(one.words)
    # each placebo word's rank (row + 1) within a factor 2 of its attribute word's; at the top of the
    # vocabulary (ranks 6 and 7) fewer than 50 words lie within it, and the window widens to the 50 nearest
    for j, rank in enumerate([6, 2001, 7, 2501]):
        ratio = np.maximum((rows[:, j] + 1) / rank, rank / (rows[:, j] + 1))
        assert np.all(ratio <= (2.0 if rank > 100 else one.rank_ratio)), (j, rows[:, j])
    assert 2.0 < one.rank_ratio < 12 and one.windows.startswith(f"{_w(5)} (rank 6): ranks ")
    assert f"{_w(2000)} (rank 2001): ranks 1001-3000" in one.windows  # the vocabulary ends at 3,000
    assert {"he", "she", "man", "woman"} <= gendered_words("en")


@pytest.mark.slow
def test_placebo_is_calibrated_on_real_vectors_where_the_dummy_language_is_not(shared_data, tmp_path):
    """Random non-gendered GloVe words as A and B (200 pairs): the placebo p rejects at about 5 % at
    alpha 0.05, the dummy-language p almost always."""
    store = str(tmp_path / "glove.zarr")
    biasdask.ingest(
        str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"), store, language="en", progress=False
    )
    emb = biasdask.open_embeddings(store)
    words = [str(w) for w in emb["word"].values]
    neutral = [w for w in words if w not in gendered_words("en")]
    rng = np.random.default_rng(2024)
    rejected_placebo = rejected_dummy = 0
    n_pairs = 200
    for _ in range(n_pairs):
        a, b = rng.choice(neutral, size=2, replace=False)
        res = biasdask.full_vocabulary_test(
            emb,
            [a],
            [b],
            method="uniform",
            resampling=Resampling(n_permutations=199, seed=int(rng.integers(2**31)), placebo=199),
            vocabulary=Vocabulary(exclude_attributes=True),
        )
        rejected_placebo += res.p_value_placebo <= 0.05
        rejected_dummy += res.p_value <= 0.05
    assert rejected_placebo / n_pairs <= 0.08, rejected_placebo
    assert rejected_dummy / n_pairs >= 0.5, rejected_dummy


def _vec_file(path, emb: xr.DataArray) -> str:
    lines = [f"{emb.sizes['word']} {emb.sizes['dim']}"]
    lines += [f"{w} " + " ".join(f"{x:.6g}" for x in row) for w, row in zip(emb["word"].values, emb.values)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_a_study_with_placebo_writes_its_comparison_and_distribution_bit_identically(tmp_path):
    from distributed import LocalCluster

    from biasdask.io.results import read_null
    from biasdask.study.plan import family_seed

    store = str(tmp_path / "en.zarr")
    biasdask.ingest(_vec_file(tmp_path / "en.vec", _anisotropic(n=4000)), store, language="en", progress=False)
    a, b = [_w(7), _w(300), _w(1200)], [_w(8), _w(310), _w(1500)]
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": store, "a": a, "b": b}},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": 199,
        "seed": 9,
        "placebo": {"n": 300, "exclude": [_w(9)]},
        "associations": ["cosine", "euclidean"],
    }
    res = biasdask.run(study, progress=False)
    emb = biasdask.open_embeddings(store)

    def oracle_of(association: str, label: str):
        """The placebo of one family computed apart: its scores, its moments (a sample for euclidean)."""
        sc, moments = scores_and_moments(emb, a, b, methods=("uniform", "zipf"), association=association)
        seed = family_seed(9, "en", label)
        return (
            sc,
            moments,
            placebo_test(emb, sc, moments, a, b, n=300, seed=seed, alternative="two-sided", exclude=[_w(9)]),
        )

    # the euclidean cells' placebo, pairs computed explicitly on the sampled words
    euclidean = oracle_of("euclidean", "gender.euclidean")[2]
    cells = res.sel({"language": "en", "test": "gender.euclidean"})
    np.testing.assert_array_equal(cells["p_value_placebo"].values, euclidean.p_value)
    assert "placebo" not in str(cells["note"].values) and np.isfinite(cells["effect_size_ci_low"].values).all()
    sc, moments, oracle = oracle_of("cosine", "gender")
    cells = res.sel({"language": "en", "test": "gender"})
    np.testing.assert_array_equal(cells["p_value_placebo"].values, oracle.p_value)
    np.testing.assert_array_equal(cells["z_placebo"].values, oracle.z)
    assert (cells["n_placebo"].values == 300).all() and _w(9) not in oracle.words
    for k, method in enumerate(("uniform", "zipf")):
        np.testing.assert_array_equal(
            read_null(study["output"], "en", method, "gender", kind="placebo"), oracle.statistics[:, k]
        )
    assert np.isfinite(res["p_value_placebo_adjusted"].values).all()
    # the interval of d over the resampled attribute words, against the core on moments summed in one block
    from biasdask.stats.bootstrap import attribute_bootstrap_interval
    from biasdask.stats.placebo import linear_moments, moment_rows

    u = sc["u"].values
    keep = np.isfinite(u)
    vectors = emb["vectors"].values.astype(np.float64)
    z = oracle.statistics.shape[1]  # weightings: uniform (1) and Zipf (1/rank / H_N)
    ranks = np.arange(1, u.size + 1)
    weights = np.stack([np.ones(u.size), (1 / ranks) / np.sum(1 / ranks)])[:z][:, keep]
    moments = linear_moments(moment_rows("cosine", vectors[keep]), weights)
    rows = {w: vectors[i] for i, w in enumerate(emb["word"].values)}
    core = attribute_bootstrap_interval(
        moments, [rows[w] for w in a], [rows[w] for w in b], seed=family_seed(9, "en", "gender")
    )
    for method in ("uniform", "zipf"):
        cell = cells.sel({"method": method})
        assert float(cell["effect_size_ci_low"]) == pytest.approx(core.ci_low, rel=1e-6)
        assert float(cell["effect_size_ci_high"]) == pytest.approx(core.ci_high, rel=1e-6)
        assert "attribute words" in str(cell["ci_method"].values)
    # the same bits from worker processes
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        from distributed import Client

        with Client(cluster) as client:
            again = biasdask.run({**study, "output": str(tmp_path / "r2.zarr")}, client=client, progress=False)
    for name in ("p_value_placebo", "z_placebo", "effect_size_placebo_percentile", "statistic", "p_value"):
        np.testing.assert_array_equal(again[name].values, res[name].values)


def test_weat_placebo_sets_are_weats_of_their_own(shared_data, tmp_path):
    """Each placebo statistic is the WEAT run with that draw's words as A and B; the real WEAT-1 (flowers,
    insects × pleasant, unpleasant) stands out from its placebo sets, as Caliskan et al.'s d = 1.50 does."""
    from biasdask.engine.placebo import attribute_placebo
    from biasdask.lexicon import weat_test

    store = str(tmp_path / "glove.zarr")
    biasdask.ingest(
        str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"), store, language="en", progress=False
    )
    emb = biasdask.open_embeddings(store)
    sets = weat_test(1)
    res = biasdask.weat(store, test="weat1", resampling=Resampling(seed=4, n_permutations=999, placebo=499))
    assert res.n_placebo == 499 and res.p_value_placebo <= 0.01 and res.effect_size_placebo_percentile > 95
    rows = {str(w): np.asarray(v, dtype=np.float64) for w, v in zip(emb["word"].values, emb["vectors"].values)}
    x = np.array([rows[w] for w in sets.x if w in rows])
    y = np.array([rows[w] for w in sets.y if w in rows])
    from biasdask.stats.weat import weat_effect_size, weat_scores, weat_statistic

    def statistic(a_rows, b_rows):
        sx, sy = weat_scores(x, y, a_rows, b_rows, "cosine")
        return weat_statistic(sx, sy), weat_effect_size(sx, sy)

    found = attribute_placebo(
        emb,
        [w for w in sets.a if w in rows],
        [w for w in sets.b if w in rows],
        statistic,
        target_words=[*sets.x, *sets.y],
        n=60,
        seed=4,
        alternative="two-sided",
    )
    n_a = len([w for w in sets.a if w in rows])
    assert not set(found.words.ravel()) & {*sets.x, *sets.y, *sets.a, *sets.b}
    for i in range(0, 60, 15):
        own = biasdask.weat(
            store,
            WordSets(
                [w for w in sets.x if w in rows],
                [w for w in sets.y if w in rows],
                list(found.words[i, :n_a]),
                list(found.words[i, n_a:]),
            ),
            ci_level=None,
            resampling=Resampling(n_permutations=9, seed=1),
        )
        assert found.statistics[i, 0] == pytest.approx(own.statistic, rel=1e-6)
        assert found.effect_sizes[i] == pytest.approx(own.effect_size, rel=1e-6)


def test_a_study_with_placebo_gives_its_weat_cells_the_placebo_of_weat(shared_data, tmp_path):
    store = str(tmp_path / "en.zarr")
    biasdask.ingest(
        str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"), store, language="en", progress=False
    )
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": store}},
        "methods": ["uniform"],
        "tests": ["weat1", "career_family"],
        "n_permutations": 199,
        "seed": 2,
        "placebo": {"n": 99},
    }
    res = biasdask.run(study, progress=False)
    from biasdask.study.plan import cell_seed

    own = biasdask.weat(
        store,
        test="weat1",
        resampling=Resampling(n_permutations=199, seed=cell_seed(2, "en", "uniform", "weat1"), placebo=99),
    )
    cell = res.sel({"language": "en", "method": "uniform", "test": "weat1"})
    assert float(cell["p_value_placebo"]) == own.p_value_placebo and int(cell["n_placebo"]) == 99
    assert float(cell["z_placebo"]) == own.z_placebo


def test_set_metric_placebo_in_the_api_and_in_a_study(shared_data, tmp_path):
    from biasdask.lexicon import weat_test
    from biasdask.study.plan import cell_seed

    store = str(tmp_path / "en.zarr")
    biasdask.ingest(
        str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"), store, language="en", progress=False
    )
    w = weat_test(7)
    res = biasdask.set_metric_test(
        store, WordSets(w.x, (), w.a, w.b), metric="rnd", resampling=Resampling(seed=1, n_permutations=99, placebo=99)
    )
    assert res.statistic == pytest.approx(-1.147534, abs=1e-6) and res.n_placebo == 99
    assert 0 < res.p_value_placebo <= 1 and np.isfinite(res.z_placebo)
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": store}},
        "methods": ["uniform"],
        "tests": ["rnd"],
        "n_permutations": 99,
        "seed": 3,
        "placebo": {"n": 99},
    }
    cube = biasdask.run(study, progress=False)
    own = biasdask.set_metric_test(
        store,
        WordSets(w.x, (), w.a, w.b),
        metric="rnd",
        resampling=Resampling(seed=cell_seed(3, "en", "uniform", "rnd"), n_permutations=99, placebo=99),
    )
    assert (
        float(cube["p_value_placebo"].sel({"language": "en", "method": "uniform", "test": "rnd"}))
        == own.p_value_placebo
    )


def test_career_family_placebo_is_weats_when_every_term_is_one_word():
    """English IAT terms are single words without grammatical gender: the career/family test is then
    WEAT on those words (targets male/female, attributes career/family), and so is its placebo."""
    from biasdask.lexicon import iat_categories

    cats = iat_categories()
    words = [w for c in ("male", "female", "career", "family") for w in cats[c]]
    rng = np.random.default_rng(4)
    vocab = [*words, *(_w(i) for i in range(3000))]
    emb = biasdask.as_embeddings(rng.normal(size=(len(vocab), 24)).astype(np.float32), vocab, language="en")
    cf = biasdask.career_family_test(emb, resampling=Resampling(n_permutations=99, seed=11, placebo=60))
    ref = biasdask.weat(
        emb,
        WordSets(list(cats["male"]), list(cats["female"]), list(cats["career"]), list(cats["family"])),
        resampling=Resampling(n_permutations=99, seed=11, placebo=60),
    )
    assert cf.statistic == pytest.approx(ref.statistic, rel=1e-6)
    assert cf.n_placebo == ref.n_placebo == 60
    assert cf.z_placebo == pytest.approx(ref.z_placebo, rel=1e-6)
    assert cf.p_value_placebo == ref.p_value_placebo
    assert cf.effect_size_placebo_percentile == pytest.approx(ref.effect_size_placebo_percentile)


def test_one_word_a_side_gets_the_attribute_word_spread_centred_on_the_reported_d():
    """Nothing to resample with one attribute word a side (the catalog's male/female): the interval is the
    spread of the rank-matched placebo pairs' d about their mean, centred on the test's own d, and says
    it is no confidence interval. 40,000 words: the moments' Gram is sampled (32,768 rows at most), so
    their d of the observed pair differs from the exact d the test reports."""
    emb = biasdask.as_embeddings(_anisotropic(n=40_000), language="en")
    a, b = [_w(10)], [_w(20)]
    res = biasdask.full_vocabulary_test(
        emb, a, b, method="zipf", resampling=Resampling(n_permutations=99, seed=5, placebo=300)
    )
    assert res.ci_method.startswith("attribute-word spread") and "not a confidence interval" in res.ci_method
    assert res.ci_level == 0.95
    sc, moments = scores_and_moments(emb, a, b, methods=("zipf",))
    found = placebo_test(emb, sc, moments, a, b, n=300, seed=res.seed, alternative="two-sided")
    assert abs(found.observed_effect_size - res.effect_size) > 1e-6  # the moments' d is an estimate
    centred = found.effect_sizes - found.effect_sizes.mean()
    assert res.effect_size_ci_low == pytest.approx(res.effect_size - np.quantile(centred, 0.975), rel=1e-12)
    assert res.effect_size_ci_high == pytest.approx(res.effect_size - np.quantile(centred, 0.025), rel=1e-12)
    assert res.effect_size_se == pytest.approx(centred.std(ddof=1), rel=1e-12)


def test_the_attribute_bootstrap_interval_is_moved_onto_the_reported_d():
    from biasdask.stats.association import linear_directions  # noqa: F401 - the moments' directions
    from biasdask.stats.bootstrap import attribute_bootstrap_interval

    emb = biasdask.as_embeddings(_anisotropic(n=40_000), language="en")
    a, b = [_w(10), _w(11), _w(12)], [_w(20), _w(21), _w(22)]
    res = biasdask.full_vocabulary_test(emb, a, b, resampling=Resampling(n_permutations=99, seed=5, placebo=50))
    sc, moments = scores_and_moments(emb, a, b, methods=("uniform",))
    vectors = {str(w): v for w, v in zip(emb["word"].values, np.asarray(emb["vectors"].values, dtype=np.float64))}
    boot = attribute_bootstrap_interval(
        moments, [vectors[w] for w in a], [vectors[w] for w in b], seed=res.seed, association="cosine"
    )
    shift = res.effect_size - boot.effect_size
    assert abs(shift) > 1e-6 and res.ci_method.startswith("BCa bootstrap")
    assert res.effect_size_ci_low == pytest.approx(boot.ci_low + shift, rel=1e-12)
    assert res.effect_size_ci_high == pytest.approx(boot.ci_high + shift, rel=1e-12)


def test_iat_set_metric_placebo_is_the_word_lists_when_every_term_is_one_word():
    """The set-level metrics on the IAT terms (languages without WEAT-7's lists): with English's
    single-word terms, their placebo is set_metric_test's on the same words."""
    from biasdask.engine.setmetrics import _iat_set_metric_test
    from biasdask.lexicon import iat_categories

    cats = iat_categories()
    words = [w for c in ("career", "male", "female", "family") for w in cats[c]]
    rng = np.random.default_rng(6)
    vocab = [*words, *(_w(i) for i in range(3000))]
    emb = biasdask.as_embeddings(rng.normal(size=(len(vocab), 24)).astype(np.float32), vocab, language="en")
    common = dict(
        resampling=Resampling(n_permutations=99, seed=3, placebo=60), client=None, return_null=False, progress=False
    )
    iat = _iat_set_metric_test(emb, "rnd", "en", "cc", 0.8, common)
    ref = biasdask.set_metric_test(
        emb,
        WordSets(list(cats["career"]), (), list(cats["male"]), list(cats["female"])),
        metric="rnd",
        resampling=Resampling(n_permutations=99, seed=3, placebo=60, placebo_exclude=list(cats["family"])),
    )
    assert iat.statistic == pytest.approx(ref.statistic, rel=1e-6) and iat.n_placebo == ref.n_placebo == 60
    assert iat.p_value_placebo == ref.p_value_placebo
    assert iat.z_placebo == pytest.approx(ref.z_placebo, rel=1e-6)


def test_cross_lingual_weat_draws_its_placebo_words_from_the_attributes_language():
    """A cross-lingual WEAT (targets from one store, attributes from another of the same space) compares
    with placebo attribute sets drawn from the attributes' language; oracle: attribute_placebo on that
    store with the statistic of the fixed targets, and each draw's statistic is that draw's own test."""
    from biasdask.engine.placebo import attribute_placebo
    from biasdask.stats.weat import weat_effect_size, weat_scores, weat_statistic

    source = _anisotropic(n=1500, seed=3)
    de_words = np.array(["d" + _w(i)[1:] for i in range(1500)], dtype=object)
    target = biasdask.as_embeddings(source, language="en")
    attributes = biasdask.as_embeddings(source.assign_coords(word=de_words), language="de")
    x, y, a, b = [_w(10), _w(11), _w(12)], [_w(20), _w(21), _w(22)], ["dda", "ddb"], ["dea", "deb"]
    res = biasdask.weat(
        target,
        WordSets(x, y, a, b),
        attributes_from=attributes,
        resampling=Resampling(n_permutations=99, seed=5, placebo=80),
    )
    vectors = {str(w): v for w, v in zip(source["word"].values, np.asarray(source.values, dtype=np.float64))}
    vectors.update({str(w): v for w, v in zip(de_words, np.asarray(source.values, dtype=np.float64))})
    tx, ty = np.array([vectors[w] for w in x]), np.array([vectors[w] for w in y])

    def statistic(a_rows, b_rows):
        sx, sy = weat_scores(tx, ty, a_rows, b_rows, "cosine")
        return weat_statistic(sx, sy), weat_effect_size(sx, sy)

    found = attribute_placebo(
        attributes, a, b, statistic, target_words=[*x, *y], n=80, seed=5, alternative=res.alternative
    )
    assert res.n_placebo == 80 and res.p_value_placebo == found.p_value[0]
    assert res.z_placebo == pytest.approx(found.z, rel=1e-6)  # the store's float32 vectors
    assert all(str(w).startswith("d") for w in found.words.ravel())  # the attributes' language
    own = biasdask.weat(
        target,
        WordSets(x, y, list(found.words[7, :2]), list(found.words[7, 2:])),
        attributes_from=attributes,
        resampling=Resampling(n_permutations=9),
    )
    assert found.statistics[7, 0] == pytest.approx(own.statistic, rel=1e-6)


def test_placebo_words_are_word_like_tokens_of_the_attribute_words_script():
    """The top of a real vocabulary is full of punctuation (GloVe: ``( ) - " : ' $ ; _`` among its 60 most
    frequent tokens): with ``placebo_words="letters"`` (the default) no token with a digit, punctuation,
    a symbol or a letter of another script is ever drawn; with ``"any"`` they are."""
    rng = np.random.default_rng(8)
    junk = ["(", ")", "-", '"', ":", "'", "$", ";", "_", "1990", "e-mail", "u.s.", "10%", "добро", "οὐ", "日本"]
    words = []
    for i in range(600):  # junk spread over the top 200 ranks, as in GloVe
        words.append(junk[i // 12] if i % 12 == 3 and i // 12 < len(junk) else _w(i))
    words[40], words[41] = "he", "she"
    vectors = rng.normal(size=(len(words), 12)).astype(np.float32)
    emb = biasdask.as_embeddings(vectors, words, language="en")
    options = Resampling(n_permutations=99, seed=2, placebo=400)
    res = biasdask.full_vocabulary_test(emb, ["he"], ["she"], resampling=options)
    sc, moments = scores_and_moments(emb, ["he"], ["she"], methods=("uniform",))
    found = placebo_test(emb, sc, moments, ["he"], ["she"], n=400, seed=res.seed, alternative="two-sided")
    drawn = set(found.words.ravel().tolist())
    assert not drawn & set(junk) and all(w.isalpha() and w.isascii() for w in drawn)
    assert res.placebo_windows == found.windows and "he (rank 41): ranks " in res.placebo_windows
    anything = placebo_test(
        emb,
        sc,
        moments,
        ["he"],
        ["she"],
        n=400,
        seed=res.seed,
        alternative="two-sided",
        match=PlaceboMatch(words="any"),
    )
    assert set(anything.words.ravel().tolist()) & set(junk)
    assert res.p_value_placebo == found.p_value[0] and res.p_value_placebo_statistic == found.p_value_statistic[0]


def test_the_placebo_p_rests_on_d_and_keeps_s_beside_it():
    """s scales with the distance between the attribute words, d does not: two nearly identical attribute
    words (a small δ) give a small s for any d. The placebo p of d ranks d among the placebo pairs' d;
    the placebo p of s ranks s among theirs (oracle: counted here)."""
    emb = biasdask.as_embeddings(_anisotropic(), language="en")
    a, b = [_w(10)], [_w(20)]
    res = biasdask.full_vocabulary_test(emb, a, b, resampling=Resampling(n_permutations=99, seed=4, placebo=500))
    sc, moments = scores_and_moments(emb, a, b, methods=("uniform",))
    found = placebo_test(emb, sc, moments, a, b, n=500, seed=res.seed, alternative="two-sided")
    d, ds = found.observed_effect_size, found.effect_sizes
    s, ss = found.observed_statistic[0], found.statistics[:, 0]
    p_d = (1 + np.sum(np.abs(ds - ds.mean()) >= abs(d - ds.mean()))) / 501
    p_s = (1 + np.sum(np.abs(ss - ss.mean()) >= abs(s - ss.mean()))) / 501
    assert res.p_value_placebo == pytest.approx(p_d) and res.p_value_placebo_statistic == pytest.approx(p_s)
    assert res.z_placebo == pytest.approx((d - ds.mean()) / ds.std(ddof=1))
    assert res.z_placebo_statistic == pytest.approx((s - ss.mean()) / ss.std(ddof=1))
