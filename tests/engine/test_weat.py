"""WEAT, XWEAT and the career/family IAT on stored embeddings (biasdask.engine.weat) against brute force and published numbers."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from biasdask import Resampling, WordSets
from biasdask.engine.weat import DEFAULT_MIN_COVERAGE, CoverageError, career_family_test, weat
from biasdask.errors import MissingWordsError
from biasdask.lexicon import iat_words, weat_test
from biasdask.stats.weat import career_family_effect, weat_scores, weat_statistic
from biasdask.study.cells import cell_values
from tests.stores import brute_force_count, make_store, read_text_vectors

# --- WEAT: Caliskan et al. 2017 on GloVe 840B ----------------------------------------------------


@pytest.mark.parametrize(("n", "published"), [(1, 1.50), (7, 1.06)])
def test_weat_reproduces_caliskan(glove_store, glove_text, dask_client, n, published):
    t = weat_test(n)
    res = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999, seed=1),
    )
    assert round(res.effect_size, 2) == published
    # the store's float32 rows, widened, are the text file's decimals (the engine holds scores as float32)
    sx, sy = weat_scores(*(np.array([glove_text[w] for w in ws]) for ws in (t.x, t.y, t.a, t.b)))
    assert res.statistic == pytest.approx(weat_statistic(sx, sy), rel=1e-6)
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (len(t.x), len(t.y), len(t.a), len(t.b))
    assert all(c.fraction == 1.0 and not c.missing for c in res.coverage.values())
    assert res.similarity == "cosine" and "ddof = 1" in res.convention


def test_weat_t7_exact_p_is_brute_force(glove_store, glove_text, dask_client):
    """All C(16, 8) = 12,870 splits: p = #{s_i >= s} / 12,870 = 202 / 12,870 (Caliskan: p = 0.018)."""
    t = weat_test(7)
    res = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=math.comb(16, 8), alternative="greater"),
    )
    sx, sy = weat_scores(*(np.array([glove_text[w] for w in ws]) for ws in (t.x, t.y, t.a, t.b)))
    hits, total = brute_force_count(np.concatenate([sx, sy]), 8, weat_statistic(sx, sy))
    assert (hits, total) == (202, 12870)
    assert res.exact and res.n_permutations == 12870
    assert res.p_value == pytest.approx(hits / total, rel=1e-12)
    auto = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=20000, alternative="auto"),
    )
    assert auto.exact and auto.alternative == "greater" and auto.p_value == res.p_value


def test_weat_samples_when_enumeration_is_too_large(glove_store, dask_client):
    t = weat_test(1)  # C(50, 25) splits
    a = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=500, seed=7),
    )
    b = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=500, seed=7),
    )
    assert not a.exact and a.n_permutations == 500 and a.p_value == 1 / 501  # T1: p < 1e-7 (Caliskan)
    assert a.p_value == b.p_value and a.null_mean == b.null_mean and a.z_score > 4


# --- Euclidean distance: Lauscher & Glavaš 2019 footnote 3 -----------------------------------------------------


def test_euclidean_direction_convention(tmp_path, dask_client):
    """X sits near A, Y near B. With the distance itself the statistic is negative and Lauscher & Glavaš 2019 reads
    p = P[s_i < s]; biasdask uses minus the distance, so s > 0 and p = P[s_i >= s], the same number."""
    rng = np.random.default_rng(5)
    a_dir, b_dir = np.eye(6)[0], np.eye(6)[1]
    groups = {
        "x": a_dir + 0.5 * rng.normal(size=(4, 6)),
        "y": b_dir + 0.5 * rng.normal(size=(4, 6)),
        "a": a_dir + 0.3 * rng.normal(size=(3, 6)),
        "b": b_dir + 0.3 * rng.normal(size=(3, 6)),
    }
    names = {g: [f"{g}{i}" for i in range(len(v))] for g, v in groups.items()}
    words = [w for g in groups for w in names[g]]
    vectors = np.vstack([groups[g] for g in groups]).astype(np.float32)
    store = make_store(tmp_path, "euc", words, vectors)

    unit = vectors.astype(np.float64) / np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    rows = {w: unit[i] for i, w in enumerate(words)}
    m = {g: np.array([rows[w] for w in names[g]]) for g in groups}
    dist_s = lambda t: cdist(t, m["a"]).mean(1) - cdist(t, m["b"]).mean(1)  # noqa: E731  f = distance
    sx, sy = dist_s(m["x"]), dist_s(m["y"])
    s_distance = sx.sum() - sy.sum()
    assert s_distance < 0  # X is closer to A: a distance makes the statistic negative
    hits, total = brute_force_count(np.concatenate([sx, sy]), 4, s_distance, greater=False)

    res = weat(
        store,
        WordSets(names["x"], names["y"], names["a"], names["b"]),
        similarity="euclidean",
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=1000, alternative="auto"),
    )
    assert res.exact and res.alternative == "greater"
    assert res.statistic == pytest.approx(-s_distance, rel=1e-7)  # float32 scores (module docstring)
    assert res.p_value == pytest.approx(hits / total, rel=1e-12) and hits < 5
    assert res.effect_size > 1.0
    assert res.similarity == "euclidean" and "footnote 3" in res.convention
    cos = weat(
        store,
        WordSets(names["x"], names["y"], names["a"], names["b"]),
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=1000, alternative="auto"),
    )
    assert cos.statistic > 0 and cos.alternative == "greater"  # the same direction as with cosine


# --- coverage ------------------------------------------------------------------------------------


def test_coverage_threshold_skips_and_names_missing_words(tmp_path, dask_client):
    rng = np.random.default_rng(2)
    present = ["x1", "x2", "x3", "x4", "y1", "y2", "y3", "y4", "a1", "a2", "b1", "b2", "zero"]
    vectors = rng.normal(size=(len(present), 5)).astype(np.float32)
    vectors[-1] = 0
    store = make_store(tmp_path, "cov", present, vectors)
    x = ["x1", "x2", "x3", "x4", "x5"]  # 4/5 = 80%: enough
    y = ["y1", "y2", "y3", "y4"]
    a = ["a1", "a2", "a3", "zero"]  # 2/4: a3 absent, 'zero' has a zero vector
    b = ["b1", "b2"]
    with pytest.raises(CoverageError) as info:
        weat(store, WordSets(x, y, a, b), client=dask_client, progress=False)
    err = info.value
    assert isinstance(err, MissingWordsError)
    assert "a3" in str(err) and "zero" in str(err) and "2/4" in str(err) and "x5" not in str(err)
    assert err.missing == {"a": ("a3", "zero")} and err.coverage["x"].missing == ("x5",)
    assert err.min_coverage == DEFAULT_MIN_COVERAGE
    cell = cell_values(err)
    assert math.isnan(cell["p_value"]) and cell["n_permutations"] == -1
    assert (cell["n_x"], cell["n_y"], cell["n_a"], cell["n_b"]) == (4, 4, 2, 2)
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.coverage == err.coverage

    res = weat(
        store,
        WordSets(x, y, a, b),
        min_coverage=0.5,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999),
    )
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (4, 4, 2, 2)
    assert res.coverage["a"].missing == ("a3", "zero") and res.coverage["x"].found == ("x1", "x2", "x3", "x4")
    # a set with no word at all is skipped whatever the threshold
    with pytest.raises(CoverageError, match="none1"):
        weat(store, WordSets(x, y, ["none1"], b), min_coverage=0.0, client=dask_client, progress=False)


# --- career/family IAT (Lewis & Lupyan 2020) -----------------------------------------------------


@pytest.mark.parametrize("language", ["de", "es", "fr", "ja"])
def test_career_family_reproduces_published(shared_data, iat_store, dask_client, language):
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = career_family_test(
        iat_store(language),
        language=language,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999, seed=3),
    )
    assert abs(res.effect_size - published.loc[language, "lang_es_wiki_cc"]) < 1e-9
    assert res.test == "career_family" and res.language == language
    assert (res.n_x, res.n_y) == (len(res.coverage["x"].found), len(res.coverage["y"].found))


def test_career_family_permutes_the_scores_behind_d(shared_data, iat_store, dask_client):
    """Spanish has grammatical gender: the pool is male s (masculine run) + female s (feminine run)."""
    effect = career_family_effect(iat_words("cc", "es"), read_text_vectors(shared_data / "iat/cc/es.vec", header=True))
    assert effect.grammatical_gender
    s = weat_statistic(effect.s_x, effect.s_y)
    greater = s > 0
    hits, total = brute_force_count(np.concatenate([effect.s_x, effect.s_y]), effect.s_x.size, s, greater)
    res = career_family_test(
        iat_store("es"),
        language="es",
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=total, alternative="auto"),
    )
    assert res.exact and res.statistic == pytest.approx(s, rel=1e-6)  # the engine holds scores as float32
    assert res.p_value == pytest.approx(hits / total, rel=1e-12)
    assert res.effect_size == pytest.approx(effect.effect_size, abs=1e-12)


def test_career_family_coverage(shared_data, iat_store, dask_client):
    """Urdu Common Crawl has 6 of the 8 career words: skipped by default, and published when allowed."""
    with pytest.raises(CoverageError, match="career") as info:
        career_family_test(iat_store("ur"), language="ur", client=dask_client, progress=False)
    assert len(info.value.missing["a"]) == 2
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = career_family_test(
        iat_store("ur"),
        language="ur",
        min_coverage=0.7,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=99, seed=0),
    )
    assert res.n_a == 6 and abs(res.effect_size - published.loc["ur", "lang_es_wiki_cc"]) < 1e-9
