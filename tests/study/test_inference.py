"""p-values corrected over the cube: the families, against statsmodels, and the warning when the
permutations cannot reach a family's threshold."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import xarray as xr
from statsmodels.stats.multitest import multipletests

import biasdask
from biasdask import Resampling
from biasdask.study.inference import adjusted_pvalues, correction_warning, families
from tests.stores import study_of

STATSMODELS = {"holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("inference")
    out = {}
    for lang in ("en", "de", "fr", "es"):
        out[lang] = str(root / f"{lang}.zarr")
        biasdask.ingest(str(shared_data / "iat" / "cc" / f"{lang}.vec"), out[lang], language=lang, progress=False)
    return root, out


def _study(root, stores, **extra):
    keys = {"methods": ["uniform", "zipf"], "tests": ["gender", "career_family"], "n_permutations": 199, "seed": 5}
    return study_of(stores, root / "r.zarr", **{**keys, **extra})


def _oracle(p: np.ndarray, method: str) -> np.ndarray:
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    out[finite] = multipletests(p[finite], method=STATSMODELS[method])[1]
    return out


@pytest.mark.parametrize("correction", ["holm", "bh", "by"])
def test_a_run_writes_p_adjusted_over_each_family_as_statsmodels_does(stores, correction):
    root, paths = stores
    res = biasdask.run(_study(root, paths, correction=correction), progress=False, overwrite=True)
    adj = res["p_value_adjusted"]
    assert adj.attrs["correction"] == correction and adj.attrs["alpha"] == 0.05
    # the full-vocabulary test: one family per weighting, over the languages
    for method in ("uniform", "zipf"):
        p = res["p_value"].sel({"test": "gender", "method": method}).values
        assert np.isfinite(p).sum() == 4
        np.testing.assert_allclose(
            adj.sel({"test": "gender", "method": method}).values, _oracle(p, correction), rtol=1e-12
        )
    # a classic test repeats its one result in every method cell: one family of 4, not 8
    p = res["p_value"].sel({"test": "career_family", "method": "uniform"}).values
    for method in ("uniform", "zipf"):
        np.testing.assert_allclose(
            adj.sel({"test": "career_family", "method": method}).values, _oracle(p, correction), rtol=1e-12
        )


def test_the_correction_is_not_part_of_the_study(stores):
    """Changing the correction re-adjusts the cube at the next run without recomputing (or refusing) it."""
    root, paths = stores
    first = biasdask.run(_study(root, paths, correction="holm"), progress=False, overwrite=True)
    again = biasdask.run(_study(root, paths, correction="none"), progress=False)
    np.testing.assert_array_equal(again["statistic"].values, first["statistic"].values)
    assert again["p_value_adjusted"].attrs["correction"] == "none"
    np.testing.assert_array_equal(again["p_value_adjusted"].values, again["p_value"].values)
    assert not np.array_equal(first["p_value_adjusted"].values, first["p_value"].values, equal_nan=True)


def test_too_few_permutations_for_the_family_are_named_before_the_run(stores, caplog):
    root, paths = stores
    with caplog.at_level(logging.WARNING, logger="biasdask"):
        biasdask.run(_study(root, paths, n_permutations=19), progress=False, overwrite=True)
    # 4 languages, Holm at 0.05: the smallest p must be at most 0.0125 = 1/80, so 79 permutations
    assert any("use n_permutations >= 79" in r.getMessage() for r in caplog.records), caplog.text
    assert correction_warning(4, 79, correction="holm", alpha=0.05) is None
    assert "n_permutations >= 79" in correction_warning(4, 78, correction="holm", alpha=0.05)
    assert correction_warning(4, 19, correction="none", alpha=0.05) is None


def test_a_test_without_weighting_counts_once():
    """Its method cells are copies: the family has as many members as languages (3), not cells (6)."""
    import xarray as xr

    p = np.array([0.01, 0.02, 0.04])
    cube = xr.Dataset(
        {
            "p_value": (("language", "method", "test"), np.repeat(p[:, None, None], 2, axis=1)),
            "t_method": (("language", "method", "test"), np.full((3, 2, 1), "none", dtype=object)),
        },
        coords={"language": ["a", "b", "c"], "method": ["uniform", "zipf"], "test": ["weat7"]},
    )
    adjusted = adjusted_pvalues(cube, correction="holm")
    np.testing.assert_allclose(adjusted.sel({"method": "zipf", "test": "weat7"}).values, [0.03, 0.04, 0.04])
    np.testing.assert_allclose(adjusted.sel({"method": "uniform", "test": "weat7"}).values, _oracle(p, "holm"))
    weighted = cube.assign(t_method=cube["t_method"].where(False, "zipf"))
    assert families(weighted) == [("weat7", ("uniform",)), ("weat7", ("zipf",))]


def test_families_and_unknown_corrections(stores):
    root, paths = stores
    cube = biasdask.run(_study(root, paths), progress=False, overwrite=True)
    assert families(cube) == [("gender", ("uniform",)), ("gender", ("zipf",)), ("career_family", ("uniform", "zipf"))]
    with pytest.raises(ValueError, match="correction must be one of"):
        adjusted_pvalues(cube, correction="bonferroni")


def test_weighted_effect_size_has_the_sign_of_s_and_matches_a_plain_computation(stores):
    """On real vectors: d_w from the scores with Zipf weights computed here (1/rank over H_N), in numpy."""
    root, paths = stores
    res = biasdask.run(_study(root, paths, tests=["gender"]), progress=False, overwrite=True)
    for lang in paths:
        sc = biasdask.open_scores(str(root / "r.zarr"), language=lang)
        u = sc["u"].values.astype(np.float64)
        rank = sc["rank"].values.astype(np.float64)
        keep = np.isfinite(u)
        n = u.size
        for method in ("uniform", "zipf"):
            z = np.ones(n) if method == "uniform" else (1 / rank) / np.sum(1 / np.arange(1, n + 1))
            x, w = u[keep], z[keep]
            pooled, weights = np.r_[x, np.zeros_like(x)], np.r_[w, w]
            mean = np.sum(weights * pooled) / weights.sum()
            var = np.sum(weights * (pooled - mean) ** 2) / (weights.sum() - np.sum(weights**2) / weights.sum())
            expected = (np.sum(w * x) / w.sum()) / np.sqrt(var)
            cell = res.sel({"language": lang, "method": method, "test": "gender"})
            assert float(cell["effect_size_weighted"]) == pytest.approx(expected, rel=1e-6)
            assert np.sign(float(cell["effect_size_weighted"])) == np.sign(float(cell["statistic"]))
            if method == "uniform":  # all weights 1: the unweighted d
                assert float(cell["effect_size_weighted"]) == pytest.approx(float(cell["effect_size"]), rel=1e-9)


# --------------------------------------------------------------------------------------------------
# Intervals of classic cells, and the pooled effect across languages

META_LANGUAGES = ("en", "zh", "ja", "ko", "tr", "fi", "id", "ro", "de")  # de: grammatical gender, no interval


@pytest.fixture(scope="module")
def career_study(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("career")
    for lang in META_LANGUAGES:
        biasdask.ingest(
            str(shared_data / "iat" / "cc" / f"{lang}.vec"), str(root / f"{lang}.zarr"), language=lang, progress=False
        )
    study = {
        "output": str(root / "r.zarr"),
        "attributes": "iat",
        "methods": ["uniform", "zipf"],
        "languages": {lang: {"store": str(root / f"{lang}.zarr")} for lang in META_LANGUAGES},
        "tests": ["career_family"],
        "n_permutations": 199,
        "seed": 11,
    }
    return biasdask.run(study, progress=False), str(root / "r.zarr")


def test_classic_cells_carry_a_bootstrap_interval_of_d(career_study, shared_data, tmp_path):
    from biasdask.stats.bootstrap import bootstrap_effect_size
    from biasdask.stats.weat import weat_scores

    res, _ = career_study
    cell = res.sel({"test": "career_family", "method": "zipf"})
    for lang in META_LANGUAGES:
        c = cell.sel(language=lang)
        if lang == "de":
            assert np.isnan(float(c["effect_size_ci_low"])) and "grammatical gender" in str(c["ci_method"].values)
            continue
        low, high, d = float(c["effect_size_ci_low"]), float(c["effect_size_ci_high"]), float(c["effect_size"])
        assert low < d < high and float(c["ci_level"]) == 0.95 and "studentized" in str(c["ci_method"].values)
    # the Python API's result carries the same interval, from the scores of the target words
    store = str(tmp_path / "en.zarr")
    biasdask.ingest(
        str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"), store, language="en", progress=False
    )
    r = biasdask.weat(store, test="weat7", resampling=Resampling(seed=4, n_permutations=99))
    emb = biasdask.open_embeddings(store)
    from biasdask.lexicon import weat_test

    sets = weat_test(7)
    rows = {w: emb["vectors"].sel(word=w).values for w in (*sets.x, *sets.y, *sets.a, *sets.b)}
    s_x, s_y = weat_scores(*(np.array([rows[w] for w in ws]) for ws in (sets.x, sets.y, sets.a, sets.b)), "cosine")
    expected = bootstrap_effect_size(s_x, s_y, seed=4)
    assert (r.effect_size_ci_low, r.effect_size_ci_high) == pytest.approx((expected.ci_low, expected.ci_high), rel=1e-6)
    assert r.effect_size == pytest.approx(1.055, abs=5e-4)  # Caliskan et al. 2017's 1.06, with the sample SD
    assert (
        biasdask.weat(store, test="weat7", ci_level=None, resampling=Resampling(seed=4, n_permutations=99)).ci_method
        == ""
    )


def test_meta_analysis_of_a_cube_agrees_with_statsmodels(career_study, tmp_path):
    from statsmodels.stats.meta_analysis import combine_effects

    res, url = career_study
    meta = biasdask.meta_analysis(res, test="career_family", estimator="DL")
    assert list(meta.studies.index) == [lang for lang in META_LANGUAGES if lang != "de"]
    assert meta.dropped == ("de (no interval: the effect size of two runs (grammatical gender) is not resampled)",)
    cell = res.sel({"test": "career_family", "method": "uniform", "language": list(meta.studies.index)})
    d, se = cell["effect_size"].values, cell["effect_size_se"].values
    oracle = combine_effects(d, se**2, method_re="chi2")  # DerSimonian-Laird
    # statsmodels leaves a negative moment estimate of τ² as it is; DL truncates it at 0, where the
    # random-effects estimate is the fixed-effect one (these languages' Q is below its df)
    truncated = oracle.tau2 <= 0
    expected = oracle.mean_effect_fe if truncated else oracle.mean_effect_re
    assert meta.pooled.estimate == pytest.approx(expected, rel=1e-9)
    assert meta.pooled.tau2 == pytest.approx(max(oracle.tau2, 0.0), rel=1e-9, abs=1e-12)
    assert meta.pooled.q == pytest.approx(oracle.q, rel=1e-9)
    assert meta.studies["weight"].sum() == pytest.approx(1.0)
    # the CLI prints the pooled d and writes the forest plot; a test without intervals is one line, exit 2
    import subprocess
    import sys

    png = tmp_path / "forest.png"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "biasdask.cli",
            "meta",
            url,
            "--test",
            "career_family",
            "--estimator",
            "DL",
            "--output",
            str(png),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert f"pooled d = {meta.pooled.estimate:.3f}" in out.stdout and png.read_bytes()[:4] == b"\x89PNG"
    bad = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "meta", url, "--test", "weat7"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "weat7" in bad.stderr and bad.stderr.count("\n") == 1
    from biasdask.report import write_plots

    names = [p.name for p in write_plots(url, tmp_path / "plots")]
    assert "forest_career_family.png" in names


def test_meta_analysis_says_which_variances_are_attribute_word_spreads():
    """A full-vocabulary cell with one attribute word a side has the attribute-word spread as its interval:
    its SE² is no sampling variance, and the pooling says so, or leaves such cells out when asked."""
    dims = ("language", "method", "test")
    spread = "attribute-word spread: d minus the quantiles of the centred d of 1000 rank-matched placebo pairs"
    boot = "BCa bootstrap of the attribute words (1999 resamples)"
    cube = xr.Dataset(
        {
            "effect_size": (dims, [[[0.9]], [[1.3]], [[0.4]], [[1.1]]]),
            "effect_size_se": (dims, [[[0.3]], [[0.35]], [[0.25]], [[0.4]]]),
            "ci_method": (dims, [[[spread]], [[boot]], [[spread]], [[boot]]]),
        },
        coords={"language": ["de", "en", "fr", "ja"], "method": ["uniform"], "test": ["gender"]},
    )
    meta = biasdask.meta_analysis(cube, test="gender")
    assert meta.studies["variance"].tolist() == [
        "attribute-word spread",
        "bootstrap",
        "attribute-word spread",
        "bootstrap",
    ]
    assert meta.note.startswith("de, fr: one attribute word a side") and "not a sampling variance" in meta.note
    kept = biasdask.meta_analysis(cube, test="gender", spreads=False)
    assert list(kept.studies.index) == ["en", "ja"] and kept.note == ""
    assert kept.dropped == tuple(f"{lang} (an attribute-word spread, not a sampling variance)" for lang in ("de", "fr"))
    everyone = biasdask.meta_analysis(cube.assign(ci_method=cube["ci_method"].where(False, spread)), test="gender")
    assert everyone.note.startswith("every language: ")
