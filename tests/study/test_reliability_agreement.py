"""Agreement across scoring rules and tests (:func:`biasdask.agreement`, ``biasdask agreement``).

One study over the real fastText Common Crawl vectors of the IAT words of eight languages runs the
full-vocabulary test under the four associations, ``career_family`` and the five set-level metrics on the
same (career) words. Oracles: the per-word scores of every association recomputed here with plain numpy
from the ``.vec`` files, their correlations by scipy; the across-language figures scipy's Pearson,
Spearman and paired BCa bootstrap of the cube's values, turned by the signs the metrics' authors give.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import unicodedata

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import biasdask
from biasdask.io import results as rs
from biasdask.io.results import open_reliability
from biasdask.study.reliability import agreement_table
from tests.oracles import paired_bootstrap, pearson, spearman
from tests.stores import generated_store, read_text_rows, study_of, unit

#: every language with the IAT words in Common Crawl whose set metrics run on them (not WEAT-7's or XWEAT-7's):
#: enough languages that no bootstrap resample is likely to be a permutation of them, whose correlation equals
#: the estimate up to rounding and so would tip BCa's bias correction one way or the other
LANGUAGES = (
    *("ar", "da", "el", "fa", "fi", "fr", "he", "hi", "id", "ja", "ko", "ms"),
    *("nl", "no", "pl", "pt", "ro", "sk", "sv", "ta", "tl", "ur", "vi", "zh"),
)
ASSOCIATIONS = ("cosine", "semaxis", "ripa", "euclidean")
METRICS = ("rnd", "rnsb", "mac", "ect", "nas")
#: the glosses paired for RIPA: the i-th word of A with the i-th of B
GLOSS_PAIRS = (("man", "woman"), ("boy", "girl"), ("brother", "sister"), ("son", "daughter"), ("male", "female"))
SEED, RESAMPLES = 5, 999


def _attribute_pairs(shared_data, language: str, vocabulary: set[str]) -> tuple[list[str], list[str]]:
    """Male and female words of the IAT translations (Common Crawl), paired by gloss, one token each."""
    with open(shared_data / "iat" / "iat_words.csv", encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] == "wiki_cc" and r["language"] == language]
    a, b = [], []
    for male, female in GLOSS_PAIRS:
        first = {}
        for gloss in (male, female):
            translations = (unicodedata.normalize("NFC", r["translation"]) for r in rows if r["word"] == gloss)
            tokens = [t for t in translations if t in vocabulary]
            first[gloss] = next((t for t in tokens if t not in a + b), None)
        if first[male] and first[female] and first[male] != first[female]:
            a.append(first[male])
            b.append(first[female])
    return a, b


def _vectors(shared_data, language: str) -> tuple[list[str], np.ndarray]:
    """A language's words and float32 rows as its store holds them: words in NFC, a word's first line wins."""
    words, rows = read_text_rows(shared_data / "iat" / "cc" / f"{language}.vec")
    words = [unicodedata.normalize("NFC", w) for w in words]
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    keep = sorted(first.values())
    return [words[i] for i in keep], rows[keep]


@pytest.fixture(scope="module")
def iat_study(shared_data, iat_store, tmp_path_factory) -> dict:
    languages = {}
    for code in reversed(LANGUAGES):  # the study's order is not the codes' order, in which languages are resampled
        words, _ = _vectors(shared_data, code)
        a, b = _attribute_pairs(shared_data, code, set(words))
        if len(a) >= 2:
            languages[code] = {"store": iat_store(code), "a": a, "b": b}
    assert len(languages) >= 20
    output = tmp_path_factory.mktemp("agreement") / "results.zarr"
    study = {
        **study_of({}, output),
        "languages": languages,
        "iat_model": "cc",
        "tests": ["gender", "career_family", *METRICS],
        "associations": list(ASSOCIATIONS),
        "n_permutations": 9,
        "placebo": False,
        "min_coverage": 0.25,
        "seed": SEED,
    }
    biasdask.run(study, progress=False, start_cluster=False)
    return {"results": str(output), "languages": languages}


@pytest.fixture(scope="module")
def figures(iat_study) -> xr.Dataset:
    return biasdask.agreement(iat_study["results"], n_resamples=RESAMPLES)


def _numpy_scores(vectors: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray) -> dict[str, np.ndarray]:
    """The per-word u of every association, as their papers define them, in float64."""
    w = vectors.astype(np.float64)
    a, b = rows_a.astype(np.float64), rows_b.astype(np.float64)
    w_hat, a_hat, b_hat = unit(w), unit(a), unit(b)
    axis = a.mean(axis=0) - b.mean(axis=0)
    relation = unit(a - b).mean(axis=0)
    return {
        "cosine": (w_hat @ a_hat.T).mean(axis=1) - (w_hat @ b_hat.T).mean(axis=1),
        "semaxis": w_hat @ (axis / np.linalg.norm(axis)),
        "ripa": w @ relation,
        "euclidean": np.linalg.norm(w_hat - b_hat.mean(axis=0), axis=1)
        - np.linalg.norm(w_hat - a_hat.mean(axis=0), axis=1),
    }


@pytest.mark.slow
def test_the_per_word_correlations_are_scipys_over_scores_recomputed_from_the_vectors(figures, iat_study, shared_data):
    assert list(figures["association_pair"].values) == [
        f"{a} vs {b}" for a, b in itertools.combinations(ASSOCIATIONS, 2)
    ]
    for code in iat_study["languages"]:
        words, vectors = _vectors(shared_data, code)
        index = {w: i for i, w in enumerate(words)}
        spec = iat_study["languages"][code]
        u = _numpy_scores(vectors, vectors[[index[w] for w in spec["a"]]], vectors[[index[w] for w in spec["b"]]])
        for first, second in itertools.combinations(ASSOCIATIONS, 2):
            cell = figures.sel(
                {"language": code, "vocabulary_test": "gender", "association_pair": f"{first} vs {second}"}
            )
            oracle = stats.pearsonr(u[first], u[second])
            interval = oracle.confidence_interval(0.95)
            assert int(cell["word_n"]) == len(words) and int(cell["word_n_skipped"]) == 0
            # the stored scores are float32
            assert float(cell["word_pearson"]) == pytest.approx(oracle.statistic, abs=1e-5)
            got = (float(cell["word_ci_low"]), float(cell["word_ci_high"]))
            assert got == pytest.approx((interval.low, interval.high), abs=1e-5)
            assert str(cell["word_note"].values) == ""


def _assert_scipys(cell: xr.Dataset, prefix: str, x: np.ndarray, y: np.ndarray) -> None:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    assert int(cell[f"{prefix}_n"]) == x.size >= 6
    assert float(cell[f"{prefix}_pearson"]) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-9)
    assert float(cell[f"{prefix}_spearman"]) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-9)
    for name, statistic in (("pearson", pearson), ("spearman", spearman)):
        oracle = paired_bootstrap(x, y, statistic, n_resamples=RESAMPLES, seed=SEED)
        got = (float(cell[f"{prefix}_{name}_ci_low"]), float(cell[f"{prefix}_{name}_ci_high"]))
        assert got == pytest.approx((oracle.low, oracle.high), abs=1e-9)


@pytest.mark.slow
def test_the_languages_d_under_two_associations_correlate_as_scipy_says(figures, iat_study):
    cube = biasdask.open_results(iat_study["results"])
    languages = sorted(iat_study["languages"])
    assert list(figures["language"].values) == [str(v) for v in cube["language"].values] != languages
    assert list(figures["vocabulary_test"].values) == ["gender"] and list(figures["method"].values) == ["uniform"]

    def d(label: str) -> np.ndarray:
        return cube["effect_size"].sel({"test": label, "method": "uniform"}).sel(language=languages).values

    for first, second in itertools.combinations(ASSOCIATIONS, 2):
        cell = figures.sel(
            {"vocabulary_test": "gender", "method": "uniform", "association_pair": f"{first} vs {second}"}
        )
        _assert_scipys(cell, "association", d(rs.cube_label("gender", first)), d(rs.cube_label("gender", second)))


#: larger means more bias (towards A where the measure has a direction): RND > 0 when S is nearer B
#: (Garg et al. 2018); lower MAC, lower ECT mean more bias (sweater's documentation); NAS > 0 towards A
SIGNS = {"d": 1, "rnd": -1, "rnsb": 1, "mac": -1, "ect": -1, "nas": 1}
WITH_DIRECTION = {"d", "rnd", "nas"}


@pytest.mark.slow
def test_weat_d_and_the_set_metrics_on_the_same_sets_correlate_as_scipy_says(figures, iat_study):
    cube = biasdask.open_results(iat_study["results"])
    languages = sorted(iat_study["languages"])
    values = {
        m: cube["statistic" if m in METRICS else "effect_size"]
        .sel({"test": m if m in METRICS else "career_family", "method": "uniform"})
        .sel(language=languages)
        .values
        * SIGNS[m]
        for m in SIGNS
    }
    assert list(figures["measure"].values) == list(SIGNS)
    in_order = figures.sel(language=languages)
    assert list(in_order["measure_test"].values) == ["career_family"] * len(languages)
    assert list(in_order["measure_sets"].values) == [f"iat:career:{c} (cc)" for c in languages]
    for m in SIGNS:
        np.testing.assert_array_equal(in_order["measure_value"].sel(measure=m).values, values[m])
    for first, second in itertools.combinations(SIGNS, 2):
        x, y = values[first], values[second]
        if (first in WITH_DIRECTION) != (second in WITH_DIRECTION):  # a direction against a magnitude
            x, y = (np.abs(x), y) if first in WITH_DIRECTION else (x, np.abs(y))
        _assert_scipys(figures.sel({"measure_pair": f"{first} vs {second}"}), "measure", x, y)


@pytest.mark.slow
def test_the_run_stores_the_figures_in_a_child_group_with_what_each_is(iat_study):
    stored = open_reliability(iat_study["results"], kind="agreement")
    again = biasdask.agreement(iat_study["results"])  # the run's options: the study's seed, 9999 resamples
    xr.testing.assert_identical(stored, again)
    assert stored.attrs["seed"] == SEED and stored.attrs["n_resamples"] == 9999 and stored.attrs["ci_method"] == "BCa"
    assert "towards A" in stored.attrs["directions"]
    assert all(stored[v].attrs["description"] for v in stored.data_vars)
    assert list(stored["measure_sign"].values) == [SIGNS[m] for m in stored["measure"].values]
    tree = xr.open_datatree(iat_study["results"], engine="zarr", consolidated=False)
    assert "word_pearson" in tree["reliability/agreement"].ds
    plain = xr.open_dataset(iat_study["results"], group="reliability/agreement", engine="zarr", consolidated=False)
    np.testing.assert_array_equal(plain["measure_spearman"].values, stored["measure_spearman"].values)


def test_the_figures_are_the_same_bits_whatever_the_chunks_and_the_scheduler(tmp_path, on_cluster, monkeypatch):
    """Stores cut in other chunks, scores stored in other chunks, threads here or worker processes."""
    codes = ("en", "fr", "de")

    def run(name: str, chunk_words: int, **where) -> xr.Dataset:
        (tmp_path / name).mkdir()
        stores = {
            c: generated_store(tmp_path / name, c, n_words=2500, seed=i, chunk_words=chunk_words)
            for i, c in enumerate(codes)
        }
        keys = dict(associations=list(ASSOCIATIONS), n_permutations=9, placebo=False, seed=3)
        biasdask.run(study_of(stores, tmp_path / name / "results.zarr", **keys), progress=False, **where)
        return open_reliability(tmp_path / name / "results.zarr", kind="agreement")

    with monkeypatch.context() as patch:
        patch.setattr(rs, "_SCORES_WORD_CHUNK", 700)  # read back in pieces across the moments' leaves
        threads = run("threads", 300, start_cluster=False)
    cluster = run("cluster", 1100, client=on_cluster)
    assert threads.sizes["association_pair"] == 6 and (threads["word_n"] == 2500).all()
    xr.testing.assert_identical(threads, cluster)
    for name in ("word_pearson", "association_pearson", "association_spearman_ci_low"):
        assert threads[name].values.tobytes() == cluster[name].values.tobytes()


def test_without_stored_scores_the_per_word_figures_say_why(tmp_path):
    stores = {c: generated_store(tmp_path, c, n_words=300, seed=i) for i, c in enumerate(("en", "fr", "de"))}
    keys = dict(associations=["cosine", "ripa"], n_permutations=9, placebo=False, save_scores=False)
    biasdask.run(study_of(stores, tmp_path / "r.zarr", **keys), progress=False, start_cluster=False)
    figures = open_reliability(tmp_path / "r.zarr", kind="agreement")
    cell = figures.sel({"language": "fr", "vocabulary_test": "gender", "association_pair": "cosine vs ripa"})
    assert np.isnan(float(cell["word_pearson"])) and int(cell["word_n"]) == -1
    assert "no per-word scores stored" in str(cell["word_note"].values)
    assert int(figures["association_n"].sel(method="uniform").item()) == 3  # across languages: from the cube
    assert figures.sizes["measure_pair"] == 0


def test_a_study_with_nothing_to_compare_writes_no_figures_and_the_command_says_why(tmp_path, cli):
    stores = {"en": generated_store(tmp_path, "en", n_words=300)}
    biasdask.run(study_of(stores, tmp_path / "r.zarr", n_permutations=9, placebo=False), progress=False)
    with pytest.raises(rs.IncompleteStoreError):
        open_reliability(tmp_path / "r.zarr", kind="agreement")
    code, out, err = cli("agreement", str(tmp_path / "r.zarr"))
    assert code == 2 and not out
    assert err.strip().endswith("nothing to compare") and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("small")
    stores = {"en": generated_store(root, "en", n_words=200)}
    keys = dict(associations=["cosine", "ripa"], n_permutations=9, placebo=False)
    biasdask.run(study_of(stores, root / "r.zarr", **keys), progress=False, start_cluster=False)
    return str(root / "r.zarr")


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"ci_level": 1.5}, ValueError),
        ({"ci_method": "basic"}, ValueError),
        ({"n_resamples": 0}, ValueError),
        ({"seed": -1}, ValueError),
        ({"seed": 1.5}, TypeError),
    ],
)
def test_bad_options_are_refused_naming_them(small_results, options, error):
    with pytest.raises(error, match=next(iter(options))):
        biasdask.agreement(small_results, **options)


def test_a_cube_is_refused_the_store_is_asked_for(small_results):
    with pytest.raises(TypeError, match="results store"):
        biasdask.agreement(biasdask.open_results(small_results))


@pytest.mark.slow
def test_the_command_prints_the_stored_figures_in_every_format(iat_study, cli):
    results = iat_study["results"]
    table = agreement_table(open_reliability(results, kind="agreement"))
    code, out, _ = cli("agreement", results)
    assert code == 0 and out.startswith("agreement across scoring rules")
    assert "words: fr" in out and "cosine vs ripa" in out and "d vs rnd" in out
    code, out, _ = cli("agreement", results, "--format", "csv")
    read = pd.read_csv(io.StringIO(out), index_col=[0, 1, 2, 3, 4], keep_default_na=False, na_values=[""])
    assert read.index.tolist() == table.index.tolist()
    np.testing.assert_allclose(read["estimate"].to_numpy(), table["estimate"].to_numpy(), rtol=1e-15)
    code, out, _ = cli("agreement", results, "--format", "json")
    rows = json.loads(out)
    assert len(rows) == len(table) and {"test", "over", "between", "measure", "estimate"} <= set(rows[0])
    for fmt, mark in (("markdown", "| test | method | over |"), ("latex", "\\toprule")):
        code, out, _ = cli("agreement", results, "--format", fmt)
        assert code == 0 and mark in out


@pytest.mark.slow
def test_the_command_computes_again_with_other_bootstrap_options(iat_study, cli):
    results = iat_study["results"]
    code, out, _ = cli("agreement", results, "--seed", "11", "--n-resamples", "199", "--format", "csv")
    assert code == 0
    expected = agreement_table(biasdask.agreement(results, seed=11, n_resamples=199))
    read = pd.read_csv(io.StringIO(out), index_col=[0, 1, 2, 3, 4], keep_default_na=False, na_values=[""])
    np.testing.assert_allclose(read["ci_low"].to_numpy(), expected["ci_low"].to_numpy(), rtol=1e-15)
    code, _, err = cli("agreement", results, "--ci-level", "2")
    assert code == 2 and "--ci-level between 0 and 1" in err
