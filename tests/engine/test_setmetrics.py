"""Set-level metrics on stored embeddings (biasdask.engine.setmetrics): values, p-values, study cells."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy.spatial.distance import cosine as cosine_distance

import biasdask
from biasdask import Resampling, WordSets
from biasdask.engine.setmetrics import set_metric_sets, set_metric_test
from biasdask.engine.weat import CoverageError
from biasdask.errors import BiasdaskError
from biasdask.lexicon import iat_categories, iat_words, weat_test
from biasdask.stats import setmetrics as sm
from biasdask.study.cells import run_cell
from tests.stores import read_text_vectors

W7 = weat_test(7)


# oracles from the formulas (loops; no code shared with biasdask)


def cos(u, v):
    return 1.0 - cosine_distance(u, v)


def oracle(metric, s, a, b):
    if metric == "rnd":
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        return sum(math.dist(w, ma) - math.dist(w, mb) for w in s)
    if metric == "nas":
        return statistics.fmean(
            (statistics.fmean(cos(w, v) for v in a) - statistics.fmean(cos(w, v) for v in b))
            / statistics.stdev([cos(w, v) for v in [*a, *b]])
            for w in s
        )
    if metric == "mac":
        return statistics.fmean(statistics.fmean(cosine_distance(t, v) for v in attr) for t in s for attr in (a, b))
    raise AssertionError(metric)


# sweater's snapshot (tests/testthat/_snaps/s3.md) on glove_math, S = WEAT-7's math terms, A, B = male, female
SWEATER = {"rnd": (-1.147534, 5e-7), "ect": (0.9761905, 5e-8), "rnsb": (0.01772161, 5e-9)}


def test_metrics_on_weat7_equal_published_values_and_the_formulas(glove_store, glove_text, dask_client):
    sets = [[glove_text[w] for w in ws] for ws in (W7.x, W7.a, W7.b)]
    for metric in sm.METRICS:
        res = set_metric_test(
            glove_store,
            WordSets(W7.x, (), W7.a, W7.b),
            metric=metric,
            client=dask_client,
            progress=False,
            resampling=Resampling(n_permutations=99, seed=5),
        )
        assert res.test == metric and res.language == "en" and (res.n_x, res.n_y, res.n_a, res.n_b) == (8, 0, 8, 8)
        if metric in SWEATER:
            assert res.statistic == pytest.approx(SWEATER[metric][0], abs=SWEATER[metric][1]), metric
        if metric in ("rnd", "nas", "mac"):
            assert res.statistic == pytest.approx(oracle(metric, *sets), rel=1e-12), metric
        assert math.isnan(res.effect_size)
        if metric == "mac":
            assert math.isnan(res.p_value) and res.n_permutations == 0 and "no null" in res.convention
        else:
            assert 0 < res.p_value <= 1 and res.n_permutations == 99 and not res.exact
            assert res.alternative == "two-sided" and math.isfinite(res.z_score)
    # sweater's mac(S, A): the mean cosine similarity of math terms with male terms alone
    mac_a = set_metric_test(
        glove_store, WordSets(W7.x, (), W7.a, W7.a), metric="mac", client=dask_client, progress=False
    )
    assert 1 - mac_a.statistic == pytest.approx(0.09579005, abs=5e-9)


def planted(lean: float, seed: int = 0):
    """A DataArray: 10 S words leaning ``lean`` towards A along one axis, 8 A and 8 B words on either side."""
    import xarray as xr

    rng = np.random.default_rng(seed)
    axis = np.eye(12)[0]
    vectors = np.concatenate(
        [
            rng.normal(size=(10, 12)) + lean * axis + 3 * np.eye(12)[1],
            rng.normal(size=(8, 12)) + 2 * axis,
            rng.normal(size=(8, 12)) - 2 * axis,
        ]
    )
    words = [f"s{i}" for i in range(10)] + [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)]
    return (
        xr.DataArray(
            vectors.astype(np.float32), dims=("word", "dim"), coords={"word": words}, attrs={"language": "xx"}
        ),
        words[:10],
        words[10:18],
        words[18:],
    )


@pytest.mark.parametrize("metric", ["nas", "rnd"])
def test_planted_association_is_found_and_an_absent_one_is_not(metric):
    emb, s, a, b = planted(1.5)
    assert (
        set_metric_test(
            emb, WordSets(s, (), a, b), metric=metric, progress=False, resampling=Resampling(n_permutations=199, seed=1)
        ).p_value
        < 0.05
    )
    emb, s, a, b = planted(0.0)
    assert (
        set_metric_test(
            emb, WordSets(s, (), a, b), metric=metric, progress=False, resampling=Resampling(n_permutations=199, seed=1)
        ).p_value
        > 0.2
    )


@pytest.mark.parametrize("n_ab", [2, 8])  # C(4, 2) = 6 splits enumerated; C(16, 8) sampled
def test_an_undefined_metric_has_a_nan_p_value_and_a_note_in_its_cell(n_ab):
    from biasdask.io.embeddings import as_embeddings
    from biasdask.study.work import classic_cell

    emb, s, a, b = planted(1.5)
    # ECT on one word is undefined: its p-value is NaN, not the smallest there is (0 or 1/(m + 1))
    res = set_metric_test(
        emb,
        WordSets(s[:1], (), a[:n_ab], b[:n_ab]),
        metric="ect",
        progress=False,
        resampling=Resampling(n_permutations=199, seed=1),
    )
    assert math.isnan(res.statistic) and math.isnan(res.p_value)
    assert math.isnan(res.z_score) and math.isnan(res.p_value_normal)
    assert res.exact == (n_ab == 2)
    values, _ = classic_cell(
        as_embeddings(emb),
        "ect",
        "xx",
        (s[:1], a[:n_ab], b[:n_ab]),
        "study",
        dict(resampling=Resampling(n_permutations=199, seed=1)),
    )
    assert math.isnan(values["p_value"]) and "undefined (NaN)" in values["note"]


def test_exact_p_value_is_brute_force(glove_store, glove_text, dask_client):
    a, b = W7.a[:4], W7.b[:4]  # C(8, 4) = 70 splits: enumerated
    s, av, bv = ([glove_text[w] for w in ws] for ws in (W7.x, a, b))
    pool = av + bv
    null = [
        oracle("nas", s, [pool[i] for i in c], [pool[i] for i in range(8) if i not in c])
        for c in itertools.combinations(range(8), 4)
    ]
    observed = oracle("nas", s, av, bv)
    centre = statistics.fmean(null)
    for alternative, hits in (
        ("greater", sum(v >= observed - 1e-12 for v in null)),
        ("two-sided", sum(abs(v - centre) >= abs(observed - centre) - 1e-12 for v in null)),
    ):
        res = set_metric_test(
            glove_store,
            WordSets(W7.x, (), a, b),
            metric="nas",
            client=dask_client,
            return_null=True,
            progress=False,
            resampling=Resampling(n_permutations=100, alternative=alternative),
        )
        assert res.exact and res.n_permutations == 70
        assert res.p_value == pytest.approx(hits / 70, rel=1e-12)
        np.testing.assert_allclose(res.null_distribution, null, rtol=1e-10)
        assert res.null_std == pytest.approx(statistics.stdev(null), rel=1e-9)


def test_sampled_null_is_the_same_on_every_scheduler(glove_store):
    args = (glove_store, W7)
    options = Resampling(n_permutations=300, seed=9)
    kw = dict(metric="rnd", return_null=True, progress=False)
    threads = set_metric_test(*args, resampling=options, **kw)
    batched = set_metric_test(*args, resampling=options.replace(batch_size=7), **kw)
    np.testing.assert_array_equal(threads.null_distribution, batched.null_distribution)
    assert threads.p_value == batched.p_value and threads.seed == 9
    other = set_metric_test(*args, resampling=options.replace(seed=10), **kw)
    assert not np.array_equal(other.null_distribution, threads.null_distribution)


def test_sampled_null_on_a_cluster(glove_store, dask_client):
    options = Resampling(n_permutations=120, seed=3)
    kw = dict(metric="ect", return_null=True, progress=False)
    local = set_metric_test(glove_store, W7, resampling=options, **kw)
    remote = set_metric_test(glove_store, W7, resampling=options.replace(batch_size=25), client=dask_client, **kw)
    np.testing.assert_array_equal(local.null_distribution, remote.null_distribution)


def test_coverage_rule_is_weats(glove_store, dask_client):
    with pytest.raises(CoverageError, match="nosuchword") as info:
        set_metric_test(
            glove_store,
            WordSets(W7.x, (), [*W7.a[:6], "nosuchword", "nosuchword2"], W7.b),
            metric="rnd",
            client=dask_client,
            progress=False,
        )
    assert info.value.test == "rnd" and info.value.missing == {"a": ("nosuchword", "nosuchword2")}
    res = set_metric_test(
        glove_store,
        WordSets(W7.x, (), [*W7.a, "nosuchword"], W7.b),
        metric="rnd",
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=9),
    )
    assert res.n_a == 8 and res.coverage["a"].missing == ("nosuchword",)
    with pytest.raises(BiasdaskError, match="unknown set metric"):
        set_metric_test(glove_store, WordSets(W7.x, (), W7.a, W7.b), metric="weat")


def iat_oracle_vectors(shared_data, language):
    """(category -> {word: vector}): mean over translations of the mean of their tokens' raw vectors."""
    vec = read_text_vectors(shared_data / "iat" / "cc" / f"{language}.vec", header=True)
    by_word: dict[tuple[str, str], dict[str, list]] = {}
    for e in iat_words("cc", language):
        found = [vec[t] for t in e.tokens if t in vec]
        if found:
            by_word.setdefault((e.category, e.word), {}).setdefault(e.translation_id, []).extend(found)
    out: dict[str, dict[str, np.ndarray]] = {}
    for (category, word), translations in by_word.items():
        out.setdefault(category, {})[word] = sum(sum(t) / len(t) for t in translations.values()) / len(translations)
    return out


def test_study_cells_on_the_languages_gender_sets(shared_data, iat_store, glove_store, dask_client):
    assert (set_metric_sets("en"), set_metric_sets("de"), set_metric_sets("fr"), set_metric_sets("eu")) == (
        "weat7",
        "xweat7",
        "career_family",
        None,
    )
    # French: the IAT words (career, family x male, female), translations averaged
    res = run_cell(
        "rnd", iat_store("fr"), language="fr", client=dask_client, resampling=Resampling(n_permutations=49, seed=2)
    )
    v = iat_oracle_vectors(shared_data, "fr")
    order = iat_categories()
    s, a, b = ([v[c][w] for w in order[c] if w in v[c]] for c in ("career", "male", "female"))
    assert res.statistic == pytest.approx(oracle("rnd", s, a, b), rel=1e-12)
    assert res.coverage["a"].name == "male" and res.coverage["x"].name == "career"
    # Urdu has 6 of the 8 career words: skipped as WEAT would be
    with pytest.raises(CoverageError, match="career"):
        run_cell("ect", iat_store("ur"), language="ur", client=dask_client)
    with pytest.raises(BiasdaskError, match="no gender word sets"):
        run_cell("nas", glove_store, language="eu", client=dask_client)


def test_study_fills_cells_like_classic_tests(tmp_path, iat_store, glove_store, dask_client):
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {
            "en": {"store": glove_store},
            "fr": {"store": iat_store("fr")},
            "eu": {"store": biasdask.open_embeddings(glove_store).assign_attrs(language="eu")},
            "hu": {
                "store": biasdask.open_embeddings(glove_store).assign_attrs(language="hu"),
                "set_metric_words": {"s": list(W7.y), "a": list(W7.a), "b": list(W7.b)},
            },
        },
        "methods": ["uniform", "zipf"],
        "tests": ["rnd", "mac", "nas", "weat7"],
        "n_permutations": 99,
        "seed": 4,
        "save_scores": False,
    }
    out = biasdask.run(study, client=dask_client, progress=False)
    en = out.sel({"language": "en"})
    for test in ("rnd", "nas"):
        cell = en.sel({"test": test})
        assert np.isfinite(cell["p_value"].values).all() and set(cell["t_method"].values) == {"none"}
        assert cell["statistic"].values[0] == cell["statistic"].values[1]  # one run fills every method
        assert list(cell["attribute_words_a"].values) == [", ".join(W7.a)] * 2
        assert list(cell["n_x"].values) == [8, 8] and list(cell["n_a"].values) == [8, 8]
    assert en["statistic"].sel({"test": "rnd", "method": "uniform"}).item() == pytest.approx(-1.147534, abs=5e-7)
    direct = set_metric_test(
        glove_store,
        WordSets(W7.x, (), W7.a, W7.b),
        metric="rnd",
        progress=False,
        resampling=Resampling(n_permutations=99, seed=biasdask.study.plan.cell_seed(4, "en", "uniform", "rnd")),
    )
    assert en["p_value"].sel({"test": "rnd", "method": "zipf"}).item() == direct.p_value
    mac = en.sel({"test": "mac"})
    assert np.isfinite(mac["statistic"].values).all() and np.isnan(mac["p_value"].values).all()
    assert all("no p-value" in str(n) for n in mac["note"].values)
    assert np.isfinite(out["statistic"].sel({"language": "fr", "test": "nas"}).values).all()
    assert all("not applicable" in str(n) for n in out["note"].sel({"language": "eu", "test": "rnd"}).values)
    # figures: a set metric has no effect size, which the heatmap says instead of "not run"
    from biasdask.plot import plot_effect_heatmap

    texts = [x.get_text() for x in plot_effect_heatmap(out, test="rnd").axes[0].texts]
    assert texts.count("none") == 6 and texts.count("n/a") == 2  # en, fr, hu ran (2 methods); eu: not applicable
    # a language with the study's own sets (here: arts terms against male and female terms)
    hu = set_metric_test(
        glove_store,
        WordSets(W7.y, (), W7.a, W7.b),
        metric="nas",
        progress=False,
        resampling=Resampling(n_permutations=99, seed=biasdask.study.plan.cell_seed(4, "hu", "uniform", "nas")),
    )
    assert out["statistic"].sel({"language": "hu", "test": "nas", "method": "zipf"}).item() == hu.statistic
    assert out["p_value"].sel({"language": "hu", "test": "nas", "method": "zipf"}).item() == hu.p_value
    assert "not applicable" in str(out["note"].sel({"language": "hu", "test": "weat7", "method": "uniform"}).item())


def test_study_file_names_the_sets():
    from biasdask.errors import ConfigError
    from biasdask.study.config import parse_config

    words = {"s": ["math", "algebra"], "a": ["he"], "b": ["she"]}
    cfg = parse_config(
        {
            "output": "memory://r",
            "languages": {
                "en": "a.zarr",
                "fr": {"store": "b.zarr", "set_metric_words": {"s": ["x"], "a": ["y"], "b": ["z"]}},
            },
            "tests": ["rnd", "nas"],
            "set_metric_words": words,
        }
    )
    en, fr = cfg.languages
    assert en.set_metric_words == (("math", "algebra"), ("he",), ("she",))
    assert fr.set_metric_words == (("x",), ("y",), ("z",))
    assert cfg.canonical()["languages"][1]["set_metric_words"] == [["x"], ["y"], ["z"]]
    plain = parse_config({"output": "memory://r", "languages": {"en": "a.zarr"}, "tests": ["mac"]})
    assert plain.languages[0].set_metric_words is None and "set_metric_words" not in plain.canonical()["languages"][0]
    with pytest.raises(ConfigError, match="languages.fr.set_metric_words: expected a mapping with exactly"):
        parse_config({"output": "memory://r", "languages": {"fr": {"store": "b", "set_metric_words": {"s": ["x"]}}}})
    with pytest.raises(ConfigError, match=r"set_metric_words.a: expected a non-empty list"):
        parse_config({"output": "memory://r", "languages": {"en": "a.zarr"}, "set_metric_words": {**words, "a": []}})
