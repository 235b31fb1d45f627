"""Test-retest across embeddings (:func:`biasdask.retest_reliability`, ``biasdask reliability``).

The reference: Lewis & Lupyan 2020's career/family effect sizes of the same languages under three fastText
corpora (Common Crawl, Wikipedia, film subtitles). One study per corpus runs over the real vectors of the
IAT words, each language with a published value for that corpus ingested from its ``.vec``; the
correlations of the three results stores must be scipy's of the published table's columns, the intervals
scipy's paired bootstrap of those columns, the ICC pingouin's.
"""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys

import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import biasdask
from biasdask.cli import main
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError
from biasdask.study.inference import retest_reliability, retest_table
from tests.oracles import paired_bootstrap, pearson, spearman

#: the study's iat_model -> the published table's column
CORPORA = {"cc": "lang_es_wiki_cc", "wiki": "lang_es_wiki", "subt": "lang_es_sub"}
SEED, RESAMPLES = 3, 1999


@pytest.fixture(scope="module")
def published(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "iat" / "published_effect_sizes.csv").set_index("language_code").sort_index()


@pytest.fixture(scope="module")
def iat_results(shared_data, published, tmp_path_factory) -> dict[str, str]:
    """corpus -> a results store of career_family over the real vectors of every language the published
    table has a value for in that corpus."""
    root = tmp_path_factory.mktemp("retest")
    stores = {}
    for model, column in CORPORA.items():
        languages = {}
        for code in published.index[published[column].notna()]:
            url = str(root / model / f"{code}.zarr")
            ingest(str(shared_data / "iat" / model / f"{code}.vec"), url, language=code, client=False, progress=False)
            languages[code] = {"store": url}
        study = {
            "output": str(root / f"{model}.zarr"),
            "languages": languages,
            "attributes": "iat",
            "iat_model": model,
            "methods": ["uniform"],
            "tests": ["career_family"],
            "min_coverage": 0.25,  # the table keeps subtitles' ja and ur, with 3 and 2 of the 8 career words
            "n_permutations": 9,
            "seed": 1,
        }
        biasdask.run(study, progress=False, start_cluster=False)
        stores[model] = study["output"]
    return stores


def _pair_oracle(published: pd.DataFrame, first: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    both = published[[CORPORA[first], CORPORA[second]]].dropna()  # sorted by language code
    return both[CORPORA[first]].to_numpy(), both[CORPORA[second]].to_numpy()


def _pingouin_icc2(table: np.ndarray) -> pd.Series:
    pg = pytest.importorskip("pingouin")
    n, k = table.shape
    long = pd.DataFrame({"target": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "d": table.ravel()})
    out = pg.intraclass_corr(long, targets="target", raters="rater", ratings="d")
    return out[out["Type"].isin(["ICC2", "ICC(A,1)"])].iloc[0]  # ICC(2,1): "ICC(A,1)" since pingouin 0.6


@pytest.fixture(scope="module")
def iat_reliability(iat_results) -> xr.Dataset:
    return retest_reliability(list(iat_results.values()), seed=SEED, n_resamples=RESAMPLES)


@pytest.mark.slow
def test_the_iat_correlations_are_those_of_the_published_table(iat_reliability, published):
    rel = iat_reliability.sel({"test": "career_family", "method": "uniform"})
    assert list(rel["embedding"].values) == ["cc", "wiki", "subt"]  # named by their stores
    assert list(rel["pair"].values) == ["cc vs wiki", "cc vs subt", "wiki vs subt"]
    for first, second in itertools.combinations(CORPORA, 2):
        x, y = _pair_oracle(published, first, second)
        cell = rel.sel({"pair": f"{first} vs {second}"})
        assert int(cell["n"]) == x.size
        assert float(cell["pearson"]) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-9)
        assert float(cell["spearman"]) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-9)
        for name, statistic in (("pearson", pearson), ("spearman", spearman)):
            oracle = paired_bootstrap(x, y, statistic, n_resamples=RESAMPLES, seed=SEED)
            got = (float(cell[f"{name}_ci_low"]), float(cell[f"{name}_ci_high"]))
            assert got == pytest.approx((oracle.low, oracle.high), abs=1e-9)
        assert str(cell["note"].values) == ""
    n_present = {model: int(published[column].notna().sum()) for model, column in CORPORA.items()}
    assert dict(zip(rel["embedding"].values, rel["n_languages"].values.tolist())) == n_present
    assert iat_reliability.attrs["seed"] == SEED and iat_reliability.attrs["ci_method"] == "BCa"
    assert all(iat_reliability[v].attrs["description"] for v in iat_reliability.data_vars)


@pytest.mark.slow
def test_the_iat_icc_is_pingouins(iat_reliability, published):
    table = published[list(CORPORA.values())].dropna().to_numpy()
    assert table.shape == (26, 3)
    oracle = _pingouin_icc2(table)
    rel = iat_reliability.sel({"test": "career_family", "method": "uniform"})
    assert int(rel["icc_n"]) == 26
    assert float(rel["icc"]) == pytest.approx(oracle["ICC"], abs=1e-9)
    assert float(rel["icc_p_value"]) == pytest.approx(oracle["pval"], rel=1e-6)
    # pingouin rounds its interval to 2 decimals
    interval = [round(float(rel["icc_ci_low"]), 2), round(float(rel["icc_ci_high"]), 2)]
    assert interval == pytest.approx(list(oracle["CI95"]), abs=1e-12)


@pytest.mark.slow
def test_a_mapping_names_the_embeddings_and_a_pair_ignores_the_others(iat_results, iat_reliability):
    cubes = {f"fastText {m}": biasdask.open_results(url) for m, url in iat_results.items()}
    pair = retest_reliability(
        {"fastText subt": cubes["fastText subt"], "fastText wiki": cubes["fastText wiki"]},
        seed=SEED,
        n_resamples=RESAMPLES,
    )
    assert list(pair["pair"].values) == ["fastText subt vs fastText wiki"]
    got = pair.sel({"pair": "fastText subt vs fastText wiki"}).squeeze()
    want = iat_reliability.sel({"pair": "wiki vs subt"}).squeeze()
    for v in ("n", "pearson", "pearson_ci_low", "pearson_ci_high", "spearman", "spearman_ci_low", "spearman_ci_high"):
        assert float(got[v]) == float(want[v])  # Pearson and Spearman are symmetric; so is the resampling


@pytest.mark.slow
def test_the_command_prints_the_table_in_every_format(iat_results, iat_reliability):
    stores = list(iat_results.values())
    command = [sys.executable, "-m", "biasdask.cli", "reliability", *stores, "--seed", str(SEED)]
    command += ["--n-resamples", str(RESAMPLES)]
    done = subprocess.run([*command, "--format", "csv"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    printed = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])
    want = retest_table(iat_reliability).reset_index()
    assert printed[["test", "method", "between", "measure", "n"]].values.tolist() == (
        want[["test", "method", "between", "measure", "n"]].values.tolist()
    )
    assert np.array_equal(printed[["estimate", "ci_low", "ci_high"]], want[["estimate", "ci_low", "ci_high"]])
    assert set(printed["between"]) == {"cc vs wiki", "cc vs subt", "wiki vs subt", "cc, wiki, subt"}
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and not done.stderr
    cc_wiki = want.set_index(["between", "measure"]).loc[("cc vs wiki", "pearson")]
    line = next(row for row in done.stdout.splitlines() if "cc vs wiki" in row and "pearson" in row)
    assert f"{cc_wiki['estimate']:.3f}" in line and f"[{cc_wiki['ci_low']:.3f}, {cc_wiki['ci_high']:.3f}]" in line
    assert "95 % CI" in done.stdout and "icc" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "markdown", "latex"])
def test_the_command_formats(iat_results, fmt, capsys):
    assert main(["reliability", *iat_results.values(), "--n-resamples", "99", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        rows = json.loads(out)
        assert len(rows) == 7 and {r["measure"] for r in rows} == {"pearson", "spearman", "icc"}
    else:
        assert "cc vs wiki" in out and ("\\toprule" in out) == (fmt == "latex")


# --- small cubes: what the IAT data cannot show ------------------------------------------------------------


def _cube(d: dict[str, float], methods=("uniform", "zipf"), tests=("gender",), classic=False) -> xr.Dataset:
    """A cube of d per language; under the second weighting each d moves by its own amount, but for a
    classic test (its cells copies across weightings, ``t_method`` "none")."""
    languages = sorted(d)
    values = np.array(
        [
            [[d[lang] + (0.0 if classic else 0.5 * j * np.sin(3.0 * i)) for _ in tests] for j in range(len(methods))]
            for i, lang in enumerate(languages)
        ]
    )
    cube = xr.Dataset(
        {"effect_size": (("language", "method", "test"), values)},
        coords={"language": languages, "method": list(methods), "test": list(tests)},
    )
    if classic:
        cube["t_method"] = (("method", "test"), np.full((len(methods), len(tests)), "none"))
    return cube


LANGS = ["de", "en", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru"]


def test_an_offset_embedding_keeps_the_correlations_and_lowers_the_icc():
    rng = np.random.default_rng(0)
    d = dict(zip(LANGS, rng.normal(size=len(LANGS))))
    noisy = {lang: v + 0.2 * rng.normal() for lang, v in d.items()}
    same = retest_reliability([_cube(d), _cube(noisy)], n_resamples=99)
    shifted = retest_reliability([_cube(d), _cube({k: v + 1.5 for k, v in noisy.items()})], n_resamples=99)
    for v in ("pearson", "spearman", "pearson_ci_low", "spearman_ci_high"):
        assert np.allclose(same[v], shifted[v], atol=1e-12)
    assert (shifted["icc"] < same["icc"] - 0.3).all()
    assert list(same["embedding"].values) == ["0", "1"] and list(same["pair"].values) == ["0 vs 1"]


def test_languages_are_matched_by_code_and_counted_per_pair():
    rng = np.random.default_rng(1)
    d = dict(zip(LANGS, rng.normal(size=len(LANGS))))
    other = {lang: v + 0.3 * rng.normal() for lang, v in reversed(d.items())}
    del other["ja"]
    third = {**{lang: v + 0.3 * rng.normal() for lang, v in d.items() if lang not in ("de", "en")}, "zz": 0.1}
    third["it"] = np.nan
    rel = retest_reliability({"a": _cube(d), "b": _cube(other), "c": _cube(third)}, n_resamples=99)
    cell = rel.sel({"test": "gender", "method": "uniform"})
    assert cell["n"].values.tolist() == [9, 7, 6]  # a-b: no ja; a-c: no de, en, it; b-c: no de, en, it, ja
    assert int(cell["icc_n"]) == 6 and cell["n_languages"].values.tolist() == [10, 9, 8]
    keep = [lang for lang in LANGS if lang != "ja"]
    x, y = np.array([d[k] for k in keep]), np.array([other[k] for k in keep])
    assert float(cell["pearson"].sel({"pair": "a vs b"})) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    complete = [lang for lang in LANGS if lang not in ("de", "en", "it", "ja")]
    table = np.array([[d[k], other[k], third[k]] for k in complete])
    assert float(cell["icc"]) == pytest.approx(_pingouin_icc2(table)["ICC"], abs=1e-12)


def test_a_weighting_changes_a_full_vocabulary_test_and_a_classic_test_is_one_result_repeated():
    rng = np.random.default_rng(2)
    d = dict(zip(LANGS, rng.normal(size=len(LANGS))))
    e = {lang: v + 0.5 * rng.normal() for lang, v in d.items()}
    rel = retest_reliability([_cube(d), _cube(e)], n_resamples=99)
    uniform, zipf = (rel["pearson"].sel({"method": m}).values for m in ("uniform", "zipf"))
    assert not np.allclose(uniform, zipf)
    assert np.array_equal(
        retest_reliability([_cube(d), _cube(e)], n_resamples=99, method="zipf")["pearson"].values[:, 0], zipf
    )
    classic = retest_reliability([_cube(d, classic=True), _cube(e, classic=True)], n_resamples=99)
    for v in ("pearson", "spearman_ci_low", "icc"):
        assert np.array_equal(classic[v].sel({"method": "uniform"}), classic[v].sel({"method": "zipf"}))
    assert float(classic["pearson"].sel({"method": "zipf"}).squeeze()) == float(uniform.squeeze())


def test_too_few_pairs_say_why():
    rel = retest_reliability([_cube({"de": 0.1, "en": 0.2}), _cube({"de": 0.3, "en": 0.1})], n_resamples=99)
    cell = rel.sel({"test": "gender", "method": "uniform", "pair": "0 vs 1"})
    assert np.isnan(float(cell["pearson"])) and "at least 3" in str(cell["note"].values)


@pytest.mark.parametrize(
    "results, kwargs, match",
    [
        ([_cube({"de": 1.0})], {}, "at least 2 embeddings, got 1"),
        (_cube({"de": 1.0}), {}, "got one"),
        ([_cube({"de": 1.0}), _cube({"de": 1.0}, tests=("weat7",))], {}, "no test in every one of the results"),
        (
            [_cube({"de": 1.0}), _cube({"de": 1.0}, tests=("weat7", "gender"))],
            {"test": "weat7"},
            "no test 'weat7' in the results 0",
        ),
        ([_cube({"de": 1.0}), _cube({"de": 1.0})], {"method": "frequency"}, "no method 'frequency'"),
        ([_cube({"de": 1.0}), xr.Dataset({"x": ("a", [1.0])})], {}, "1 is no results cube"),
    ],
)
def test_bad_input_is_one_line(results, kwargs, match):
    with pytest.raises(BiasdaskError, match=match) as info:
        retest_reliability(results, n_resamples=99, **kwargs)
    assert "\n" not in str(info.value)


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="ci_level"):
        retest_reliability([_cube({"de": 1.0}), _cube({"de": 2.0})], ci_level=1.5)


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("biasdask: error: "), err
    return lines[0]


def _tiny_results(url: str, associations: list[str]) -> str:
    words = ["male", "female", *(f"w{i}".translate(str.maketrans("0123456789", "abcdefghij")) for i in range(300))]
    emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 8)), words, language="en")
    study = {"output": url, "languages": {"en": {"store": emb}}, "tests": ["gender"], "associations": associations}
    biasdask.run({**study, "n_permutations": 9, "placebo": False, "seed": 1}, progress=False, start_cluster=False)
    return url


def test_the_command_refuses_one_store_tests_not_in_common_and_bad_options(tmp_path, capsys):
    cosine = _tiny_results(str(tmp_path / "cc.zarr"), ["cosine"])
    ripa = _tiny_results(str(tmp_path / "wiki.zarr"), ["ripa"])
    assert main(["reliability", str(tmp_path / "absent.zarr"), cosine]) == 2
    assert "absent.zarr" in _one_error_line(capsys.readouterr().err)
    assert main(["reliability", cosine]) == 2
    assert "at least 2 embeddings, got 1 (cc)" in _one_error_line(capsys.readouterr().err)
    assert main(["reliability", cosine, cosine]) == 2
    assert "the same results given twice" in _one_error_line(capsys.readouterr().err)
    assert main(["reliability", cosine, ripa]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no test in every one of the results (cc has gender; wiki has gender.ripa)" in line
    assert main(["reliability", cosine, ripa, "--test", "gender"]) == 2
    assert "no test 'gender' in the results wiki (has gender.ripa)" in _one_error_line(capsys.readouterr().err)
    assert main(["reliability", cosine, ripa, "--association", "ripa"]) == 2
    assert "give --test too" in _one_error_line(capsys.readouterr().err)
    assert main(["reliability", cosine, ripa, "--n-resamples", "0"]) == 2
    assert "--n-resamples" in _one_error_line(capsys.readouterr().err)


def test_stores_are_named_by_their_paths_and_by_the_whole_path_when_names_clash(tmp_path):
    first = _tiny_results(str(tmp_path / "a" / "results.zarr"), ["cosine"])
    second = _tiny_results(str(tmp_path / "b" / "results.zarr"), ["cosine"])
    rel = retest_reliability([biasdask.Location(first), tmp_path / "b" / "results.zarr"], n_resamples=9)
    assert list(rel["embedding"].values) == [first, second]
    rel = retest_reliability([fsspec.get_mapper(first), biasdask.open_results(second)], n_resamples=9)
    assert list(rel["embedding"].values) == ["results", "1"]
    assert int(rel["n"].sel({"test": "gender", "method": "uniform"}).squeeze()) == 1  # one language: no r
