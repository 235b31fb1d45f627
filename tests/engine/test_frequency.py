"""Frequency profiles and the context-word test on stores (biasdask.engine.frequency).

Stores are ingested from small ``.vec`` files (tests/stores.py); every oracle reads the same file with numpy
(fields split on b" ") and computes with the stats-level functions, scipy, or a plain Python loop.
"""

from __future__ import annotations

import math
import statistics

import matplotlib

from biasdask import Vocabulary

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import wordfreq  # noqa: E402

from biasdask import Resampling, lexicon, plot  # noqa: E402
from biasdask.engine import frequency as ef  # noqa: E402
from biasdask.engine.scores import scores  # noqa: E402
from biasdask.errors import BiasdaskError  # noqa: E402
from biasdask.io import results as rs  # noqa: E402
from biasdask.stats.permutation import permutation_test_local  # noqa: E402
from tests.stores import make_store, stored_values, unit  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------------
# Frequency profiles


def _naive_profile(values, keys, lower, upper, closed):
    """Count, mean, SD, mean/SD per bin by a plain loop over words."""
    out = []
    n_bins = len(lower)
    for i in range(n_bins):
        members = []
        for v, k in zip(values, keys):
            if not (math.isfinite(v) and math.isfinite(k)):
                continue
            if closed == "left":
                inside = lower[i] <= k < upper[i] or (i == n_bins - 1 and k == upper[i])
            else:
                inside = lower[i] < k <= upper[i] or (i == 0 and k == lower[i])
            if inside:
                members.append(v)
        mean = statistics.fmean(members) if members else math.nan
        sd_ = statistics.stdev(members) if len(members) > 1 else math.nan
        out.append((len(members), mean, sd_, mean / sd_ if sd_ and sd_ > 0 else math.nan))
    return np.array(out, dtype=float).T


def _check_against_naive(prof, values_by_score, keys):
    lower, upper = prof["lower"].values, prof["upper"].values
    for score, values in values_by_score.items():
        count, mean, sd_, eff = _naive_profile(values, keys, lower, upper, prof.attrs["closed"])
        one = prof.sel({"score": score})
        np.testing.assert_array_equal(one["count"].values, count)
        np.testing.assert_allclose(one["mean"].values, mean, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(one["sd"].values, sd_, rtol=1e-9)
        np.testing.assert_allclose(one["effect_size"].values, eff, rtol=1e-9)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    """350 words: a planted frequency effect (frequent words lean towards A), two zero vectors."""
    rng = np.random.default_rng(5)
    n, dim = 350, 10
    vectors = rng.normal(size=(n, dim))
    axis = unit(rng.normal(size=dim))
    vectors += np.outer(np.linspace(1.5, -1.5, n), axis)
    vectors[:4] = axis + rng.normal(scale=0.1, size=(4, dim))
    vectors[4:8] = -axis + rng.normal(scale=0.1, size=(4, dim))
    vectors[[100, 200]] = 0.0
    words = [f"v{i}" for i in range(n)]
    url = make_store(tmp_path_factory.mktemp("vocab"), "vocab", words, vectors, language="xx", chunk_words=64)
    vecs = stored_values(url)
    return url, vecs, words


def test_frequency_profile_by_rank_equals_naive_loop(vocab):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"), vocabulary=Vocabulary(exclude_attributes=True))
    computed = sc.compute()
    values = {"u": computed.u.values.astype(float)}
    for m in ("uniform", "zipf"):
        values[f"t_{m}"] = computed.t.sel({"method": m}).values.astype(float)
    ranks = computed["rank"].values.astype(float)

    prof = ef.frequency_profile(sc)
    assert list(prof["score"].values) == ["u", "t_uniform", "t_zipf"]
    assert prof.sizes == {"score": 3, "bin": 3}
    np.testing.assert_array_equal(prof["lower"].values, [1, 10, 100])
    np.testing.assert_array_equal(prof["upper"].values, [10, 100, 350])
    assert list(prof["label"].values) == ["1-9", "10-99", "100-350"]
    assert prof.attrs["by"] == "rank" and prof.attrs["closed"] == "left" and prof.attrs["language"] == "xx"
    _check_against_naive(prof, values, ranks)
    # 8 attributes excluded and 2 zero vectors: 10 words outside every profile.
    np.testing.assert_array_equal(prof["n_outside"].values, [10, 10, 10])
    assert int(prof["count"].sel({"score": "u"}).sum()) == 340
    # The planted effect: frequent words lean towards A.
    assert prof["mean"].sel({"score": "u"}).values[0] > 0 > prof["mean"].sel({"score": "u"}).values[-1]

    half = ef.frequency_profile(sc, bins=0.5)
    assert half.sizes["bin"] == 6
    _check_against_naive(half, values, ranks)
    edges = [1, 50, 120, 351]
    explicit = ef.frequency_profile(sc, bins=edges)
    np.testing.assert_array_equal(explicit["lower"].values, edges[:-1])
    _check_against_naive(explicit, values, ranks)


def test_frequency_profile_from_a_results_store(vocab, tmp_path):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"))
    out = str(tmp_path / "results.zarr")
    rs.create_results(
        out,
        ["xx", "yy"],
        ["uniform", "zipf"],
        ["gender"],
        {"seed": 1, "alternative": "auto", "similarity": "cosine"},
        "test: profile\n",
    )
    rs.write_scores(out, "xx", sc)
    from_store = ef.frequency_profile(out, language="xx")
    direct = ef.frequency_profile(sc)
    for var in ("count", "mean", "sd", "effect_size", "lower", "upper"):
        np.testing.assert_allclose(from_store[var].values, direct[var].values, rtol=1e-12)
    # Only languages whose scores were written are profiled.
    assert list(ef.frequency_profiles(out)) == ["xx"]
    with pytest.raises(BiasdaskError, match="language"):
        ef.frequency_profile(out)


def test_frequency_profile_by_observed_frequency(tmp_path):
    common = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "you",
        "that",
        "it",
        "he",
        "was",
        "for",
        "on",
        "are",
        "woman",
        "man",
        "nurse",
        "engineer",
        "river",
        "table",
        "doctor",
        "teacher",
        "garden",
        "window",
        "violin",
        "glacier",
        "lantern",
        "orchid",
        "quasar",
        "zeppelin",
        "marmalade",
        "sextant",
    ]
    words = common + ["qzxjv", "blorptic"]  # unknown to wordfreq: left out
    rng = np.random.default_rng(2)
    url = make_store(tmp_path, "freq", words, rng.normal(size=(len(words), 6)), language="en", chunk_words=16)
    sc = scores(url, ["woman"], ["man"], methods=("uniform",))
    prof = ef.frequency_profile(sc, by="frequency")
    table = wordfreq.get_frequency_dict("en", wordlist="best")
    freqs = np.array([table.get(w, np.nan) for w in words])
    assert prof.attrs["by"] == "frequency" and prof.attrs["closed"] == "right"
    lower, upper = prof["lower"].values, prof["upper"].values
    assert lower[0] <= np.nanmin(freqs) and upper[-1] == np.nanmax(freqs)
    np.testing.assert_allclose(np.diff(np.log10(lower)), 0.5, atol=1e-9)  # Valentini et al. 2022's half-decade grid
    computed = sc.compute()
    _check_against_naive(prof, {"u": computed.u.values.astype(float)}, freqs)
    assert int(prof["n_outside"].sel({"score": "u"})) == 2
    with pytest.raises(BiasdaskError, match="wordfreq has no observed-frequency list"):
        ef.frequency_profile(sc, by="frequency", language="xx")


def test_frequency_profile_of_words_without_observed_frequencies_is_one_clear_error(vocab):
    url, _, words = vocab  # made-up words (v0, v1...): wordfreq's Japanese list has none of them
    sc = scores(url, words[:4], words[4:8], methods=("uniform",))
    with pytest.raises(
        BiasdaskError, match="none of the words used is in wordfreq's observed-frequency list for language 'ja'"
    ):
        ef.frequency_profile(sc, by="frequency", language="ja")


def test_profiles_plot_per_language(vocab, tmp_path):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"))
    profiles = {"xx": ef.frequency_profile(sc), "yy": ef.frequency_profile(sc, bins=0.5)}
    bp = ef.profile_for_plot(profiles["yy"], "t_zipf")
    np.testing.assert_array_equal(bp.count, profiles["yy"]["count"].sel({"score": "t_zipf"}).values)
    assert bp.n_bins == 6 and bp.edges[-1] == 350 and bp.key == "rank"
    with pytest.raises(BiasdaskError, match="no score 't_frequency'"):
        ef.profile_for_plot(profiles["xx"], "t_frequency")

    fig = plot.plot_frequency_profile(profiles, score="t_zipf")
    path = tmp_path / "profile.png"
    fig.savefig(path, dpi=60)
    assert path.read_bytes().startswith(PNG_MAGIC)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split()[0] for ax in axes] == ["xx", "yy"]
    assert all(ax.get_ylabel().startswith("share of s (%), t (zipf weight × u)") for ax in axes)  # one column
    assert axes[0].get_xlabel() == "" and axes[1].get_xlabel().startswith("frequency rank bin")  # under the column
    assert fig.get_suptitle() == "Bias t (zipf weight × u) against word frequency"
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["1–10", "10–100", "100–350"]


# --------------------------------------------------------------------------------------------------
# Valentini et al. 2022's context words as a test


@pytest.fixture(scope="module")
def context_store(tmp_path_factory):
    """The 16 context words and 150 words leaning female (towards mean female - mean male)."""
    rng = np.random.default_rng(9)
    cw = lexicon.context_words()
    dim = 12
    female_axis = unit(rng.normal(size=dim))
    ctx = np.vstack(
        [female_axis + rng.normal(scale=0.3, size=(8, dim)), -female_axis + rng.normal(scale=0.3, size=(8, dim))]
    )
    others = rng.normal(size=(150, dim)) + 0.4 * female_axis
    words = [*cw.female, *cw.male] + [f"x{i}" for i in range(150)]
    url = make_store(
        tmp_path_factory.mktemp("context"), "ctx", words, np.vstack([ctx, others]), language="en", chunk_words=16
    )
    vecs = stored_values(url)
    return url, vecs, cw


def test_context_test_is_the_full_vocabulary_test_on_the_context_words(context_store, dask_client):
    url, vecs, cw = context_store
    res = ef.context_test(
        url,
        method="uniform",
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=999, seed=4, alternative="auto"),
    )
    # Oracle: u by numpy from the file, context words excluded, against |X| dummy zeros.
    mean_unit = lambda ws: unit(np.array([vecs[w] for w in ws])).mean(0)  # noqa: E731
    direction_ab = mean_unit(cw.female) - mean_unit(cw.male)
    targets = [w for w in vecs if w not in set(cw.female) | set(cw.male)]
    u = unit(np.array([vecs[w] for w in targets])) @ direction_ab
    oracle = permutation_test_local(u.astype(np.float32), len(u), n_permutations=999, seed=4, alternative="auto")
    assert res.n_x == res.n_y == 150
    assert res.statistic == pytest.approx(oracle.statistic, rel=1e-5)
    assert res.effect_size == pytest.approx(oracle.effect_size, rel=1e-5)
    assert res.z_score == pytest.approx(oracle.z_score, rel=1e-4)
    assert res.statistic > 0 and res.p_value == oracle.p_value == pytest.approx(1 / 1000)
    assert res.alternative == "greater"

    with_context = ef.context_test(
        url,
        method="zipf",
        exclude_context=False,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=99, seed=4),
    )
    assert with_context.n_x == 166
    sc = ef.context_scores(url, methods=("zipf",)).compute()
    assert np.isnan(sc.u.sel(word="she")) and sc.attrs["n_a"] == 8 and sc.attrs["n_b"] == 8
    np.testing.assert_allclose(np.nansum(sc.u.values), u.sum(), rtol=1e-5)
