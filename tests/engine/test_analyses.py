"""Directions, frequency profiles, the context-word test and the grammatical-gender tests on stores.

Stores are ingested from small ``.vec`` files written here; every oracle reads the same file with numpy
(fields split on b" ") and computes with the stats-level functions, scipy, or a plain Python loop.
"""

from __future__ import annotations

import functools
import math
import statistics
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import wordfreq  # noqa: E402
from scipy import stats  # noqa: E402

from biasdask import lexicon, plot  # noqa: E402
from biasdask.engine import analyses as an  # noqa: E402
from biasdask.engine.ingest import ingest  # noqa: E402
from biasdask.engine.scores import scores  # noqa: E402
from biasdask.errors import BiasdaskError, MissingWordsError  # noqa: E402
from biasdask.io import results as rs  # noqa: E402
from biasdask.stats import directions as sd  # noqa: E402
from biasdask.stats.permutation import permutation_test_local  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write_vec(path, words, vectors):
    lines = [f"{len(words)} {vectors.shape[1]}"]
    lines += [w + " " + " ".join(f"{x:.5f}" for x in row) for w, row in zip(words, vectors)]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


def _read_vec(path):
    """word -> float64 vector, parsed independently of biasdask."""
    body = path.read_bytes().split(b"\n")[1:]
    out = {}
    for line in body:
        if line:
            fields = line.split(b" ")
            out[fields[0].decode()] = np.array([float(x) for x in fields[1:]])
    return out


def _store(tmp_path, name, words, vectors, language="xx", chunk_words=16):
    vec = _write_vec(tmp_path / f"{name}.vec", words, vectors)
    ingest(str(vec), str(tmp_path / f"{name}.zarr"), language, client=False, progress=False, chunk_words=chunk_words)
    return str(tmp_path / f"{name}.zarr"), _read_vec(vec)


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------------------
# Directions


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Eight pairs a_i = base_i + g + noise, b_i = base_i - g + noise (base_i ⟂ g), and 40 filler words."""
    rng = np.random.default_rng(1)
    dim = 16
    g = _unit(rng.normal(size=dim))
    base = rng.normal(scale=0.6, size=(8, dim))
    base -= np.outer(base @ g, g)
    a = base + g + rng.normal(scale=0.03, size=base.shape)
    b = base - g + rng.normal(scale=0.03, size=base.shape)
    filler = rng.normal(scale=0.5, size=(40, dim))
    words = [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)] + [f"w{i}" for i in range(40)]
    url, vecs = _store(tmp_path_factory.mktemp("planted"), "planted", words, np.vstack([a, b, filler]))
    return url, vecs, g


def test_direction_recovers_planted_direction(planted):
    url, _, g = planted
    pairs = [(f"a{i}", f"b{i}") for i in range(8)]
    for method, kwargs in [
        ("pca", {"pairs": pairs}),
        ("sum", {"a": [p[0] for p in pairs], "b": [p[1] for p in pairs]}),
        ("pair", {"pairs": pairs[:1]}),
    ]:
        d = an.direction(url, method=method, **kwargs)
        assert d.shape == g.shape and d.dtype == np.float64
        assert np.linalg.norm(d) == pytest.approx(1.0, abs=1e-12)
        assert d @ g > 0.98, method  # right axis, oriented towards the first words


def test_store_direction_equals_stats_direction_property(tmp_path):
    """For random vocabularies and word choices, the store-level direction is the stats-level one on the
    vectors of the source file."""
    rng = np.random.default_rng(7)
    for trial in range(4):
        dim = int(rng.integers(3, 30))
        n = 30
        words = [f"t{trial}w{i}" for i in range(n)]
        chunk_words = int(rng.integers(1, 12))
        url, vecs = _store(tmp_path, f"p{trial}", words, rng.normal(size=(n, dim)), chunk_words=chunk_words)
        k = int(rng.integers(2, 8))
        idx = rng.choice(n, size=2 * k, replace=False)
        first, second = [words[i] for i in idx[:k]], [words[i] for i in idx[k:]]
        m = lambda ws: np.array([vecs[w] for w in ws])  # noqa: E731
        pairs = list(zip(first, second))
        close = functools.partial(np.testing.assert_allclose, atol=1e-12)
        close(an.direction(url, pairs, method="pca"), sd.pca_direction(m(first), m(second)))
        close(an.direction(url, pairs, method="sum"), sd.sets_direction(m(first), m(second)))
        # Sets of unequal sizes for "sum"; one pair for "pair".
        close(an.direction(url, a=first, b=second[:1], method="sum"), sd.sets_direction(m(first), m(second[:1])))
        close(
            an.direction(url, a=first[0], b=second[0], method="pair"),
            sd.pair_direction(vecs[first[0]], vecs[second[0]]),
        )


def test_direction_skips_and_reports_missing_words(planted):
    url, vecs, _ = planted
    pairs = [("a0", "b0"), ("a1", "nowhere"), ("a2", "b2"), ("a3", "b3")]
    with pytest.warns(an.MissingWordsWarning, match="a1/nowhere"):
        d = an.direction(url, pairs)
    kept = [p for p in pairs if p[1] != "nowhere"]
    expected = sd.pca_direction(np.array([vecs[p[0]] for p in kept]), np.array([vecs[p[1]] for p in kept]))
    np.testing.assert_allclose(d, expected, atol=1e-12)
    with pytest.raises(MissingWordsError, match="ghost/spook"):
        an.direction(url, [("ghost", "spook")])
    with pytest.raises(MissingWordsError, match="set B.*zzz"):
        an.direction(url, a=["a0"], b=["zzz"], method="sum")


def test_direction_argument_errors(planted):
    url, _, _ = planted
    with pytest.raises(BiasdaskError, match="exactly one pair"):
        an.direction(url, [("a0", "b0"), ("a1", "b1")], method="pair")
    with pytest.raises(BiasdaskError, match="either pairs or a and b"):
        an.direction(url, [("a0", "b0")], a=["a1"], b=["b1"])
    with pytest.raises(BiasdaskError, match="aligned"):
        an.direction(url, a=["a0", "a1"], b=["b0"], method="pca")
    with pytest.raises(BiasdaskError, match="unknown direction method"):
        an.direction(url, [("a0", "b0")], method="svd")
    with pytest.raises(BiasdaskError, match="dimension"):
        an.direct_bias(url, np.ones(3), ["a0"])


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    """Bolukbasi's definitional words (some), a few professions, gender-specific *actress*, and fillers."""
    rng = np.random.default_rng(3)
    words = ["she", "he", "woman", "man", "her", "his", "girl", "boy", "accountant", "architect", "nurse",
             "programmer", "librarian", "actress", "table", "river"]
    url, vecs = _store(tmp_path_factory.mktemp("english"), "en", words, rng.normal(size=(len(words), 12)), "en")
    return url, vecs


def test_default_direction_is_bolukbasi_pca_over_the_pairs_found(english):
    url, vecs = english
    found = [p for p in lexicon.bolukbasi().definitional_pairs if p[0] in vecs and p[1] in vecs]
    assert len(found) == 4
    with pytest.warns(an.MissingWordsWarning, match="mother/father"):
        d = an.direction(url)
    expected = sd.pca_direction(np.array([vecs[f] for f, _ in found]), np.array([vecs[m] for _, m in found]))
    np.testing.assert_allclose(d, expected, atol=1e-12)


def test_direct_and_indirect_bias_equal_the_stats_functions(english):
    url, vecs = english
    g = an.direction(url, [("she", "he")], method="pair")
    neutral = ["accountant", "architect", "nurse", "programmer", "librarian"]
    assert set(neutral) <= set(an.neutral_professions()) and "actress" not in an.neutral_professions()
    with pytest.warns(an.MissingWordsWarning, match="skipped 298 word"):  # 303 neutral professions, 5 stored
        default = an.direct_bias(url, g)
    m = np.array([vecs[w] for w in neutral])
    assert default == pytest.approx(sd.direct_bias(m, g, 1.0), rel=1e-13)
    # c = 1 is seed 001's mean |<g, ŵ>|.
    assert default == pytest.approx(np.mean(np.abs(_unit(m) @ g)), rel=1e-13)
    assert an.direct_bias(url, g, ["nurse", "table"], c=0.5) == pytest.approx(
        sd.direct_bias(np.array([vecs["nurse"], vecs["table"]]), g, 0.5), rel=1e-13
    )
    with pytest.raises(MissingWordsError, match="ghost"):
        an.direct_bias(url, g, ["ghost"])
    for normalized in (True, False):
        got = an.indirect_bias(url, g, "nurse", "librarian", normalized=normalized)
        expected = sd.indirect_bias(vecs["nurse"], vecs["librarian"], g, normalized=normalized)
        assert got == pytest.approx(expected, rel=1e-12)
    w, v = _unit(vecs["nurse"]), _unit(vecs["librarian"])
    seed_001 = (w @ g) * (v @ g) / (w @ v)
    assert an.indirect_bias(url, g, "nurse", "librarian", normalized=False) == pytest.approx(seed_001, rel=1e-12)
    with pytest.raises(MissingWordsError, match="ghost"):
        an.indirect_bias(url, g, "nurse", "ghost")


def test_association_is_inner_product_with_d_ab_over_n(tmp_path):
    """Seed 001 on a store: u(w) of the scores graph = <ŵ, d_AB>/N with N = |A| = |B|."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(40)]
    url, vecs = _store(tmp_path, "ident", words, rng.normal(size=(40, 9)))
    a, b = words[:4], words[4:8]
    u = scores(url, a, b, methods=()).u.values
    d = sd.d_ab(np.array([vecs[w] for w in a]), np.array([vecs[w] for w in b]))
    np.testing.assert_allclose(u, _unit(np.array([vecs[w] for w in words])) @ d / 4, atol=2e-6)


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
    axis = _unit(rng.normal(size=dim))
    vectors += np.outer(np.linspace(1.5, -1.5, n), axis)
    vectors[:4] = axis + rng.normal(scale=0.1, size=(4, dim))
    vectors[4:8] = -axis + rng.normal(scale=0.1, size=(4, dim))
    vectors[[100, 200]] = 0.0
    words = [f"v{i}" for i in range(n)]
    url, vecs = _store(tmp_path_factory.mktemp("vocab"), "vocab", words, vectors, "xx", chunk_words=64)
    return url, vecs, words


def test_frequency_profile_by_rank_equals_naive_loop(vocab):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"), exclude_attributes=True)
    computed = sc.compute()
    values = {"u": computed.u.values.astype(float)}
    for m in ("uniform", "zipf"):
        values[f"t_{m}"] = computed.t.sel({"method": m}).values.astype(float)
    ranks = computed["rank"].values.astype(float)

    prof = an.frequency_profile(sc)
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

    half = an.frequency_profile(sc, bins=0.5)
    assert half.sizes["bin"] == 6
    _check_against_naive(half, values, ranks)
    edges = [1, 50, 120, 351]
    explicit = an.frequency_profile(sc, bins=edges)
    np.testing.assert_array_equal(explicit["lower"].values, edges[:-1])
    _check_against_naive(explicit, values, ranks)


def test_frequency_profile_from_a_results_store(vocab, tmp_path):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"))
    out = str(tmp_path / "results.zarr")
    rs.create_results(out, ["xx", "yy"], ["uniform", "zipf"], ["gender"],
                      {"seed": 1, "alternative": "auto", "similarity": "cosine"}, "test: profile\n")
    rs.write_scores(out, "xx", sc)
    from_store = an.frequency_profile(out, language="xx")
    direct = an.frequency_profile(sc)
    for var in ("count", "mean", "sd", "effect_size", "lower", "upper"):
        np.testing.assert_allclose(from_store[var].values, direct[var].values, rtol=1e-12)
    # Only languages whose scores were written are profiled.
    assert list(an.frequency_profiles(out)) == ["xx"]
    with pytest.raises(BiasdaskError, match="language"):
        an.frequency_profile(out)


def test_frequency_profile_by_observed_frequency(tmp_path):
    common = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are",
              "woman", "man", "nurse", "engineer", "river", "table", "doctor", "teacher", "garden", "window",
              "violin", "glacier", "lantern", "orchid", "quasar", "zeppelin", "marmalade", "sextant"]
    words = common + ["qzxjv", "blorptic"]  # unknown to wordfreq: left out
    rng = np.random.default_rng(2)
    url, _ = _store(tmp_path, "freq", words, rng.normal(size=(len(words), 6)), "en")
    sc = scores(url, ["woman"], ["man"], methods=("uniform",))
    prof = an.frequency_profile(sc, by="frequency")
    table = wordfreq.get_frequency_dict("en", wordlist="best")
    freqs = np.array([table.get(w, np.nan) for w in words])
    assert prof.attrs["by"] == "frequency" and prof.attrs["closed"] == "right"
    lower, upper = prof["lower"].values, prof["upper"].values
    assert lower[0] <= np.nanmin(freqs) and upper[-1] == np.nanmax(freqs)
    np.testing.assert_allclose(np.diff(np.log10(lower)), 0.5, atol=1e-9)  # the seed's half-decade grid
    computed = sc.compute()
    _check_against_naive(prof, {"u": computed.u.values.astype(float)}, freqs)
    assert int(prof["n_outside"].sel({"score": "u"})) == 2
    with pytest.raises(BiasdaskError, match="wordfreq has no frequency list"):
        an.frequency_profile(sc, by="frequency", language="xx")


def test_profiles_plot_per_language(vocab, tmp_path):
    url, _, words = vocab
    sc = scores(url, words[:4], words[4:8], methods=("uniform", "zipf"))
    profiles = {"xx": an.frequency_profile(sc), "yy": an.frequency_profile(sc, bins=0.5)}
    bp = an.profile_for_plot(profiles["yy"], "t_zipf")
    np.testing.assert_array_equal(bp.count, profiles["yy"]["count"].sel({"score": "t_zipf"}).values)
    assert bp.n_bins == 6 and bp.edges[-1] == 350 and bp.key == "rank"
    with pytest.raises(BiasdaskError, match="no score 't_frequency'"):
        an.profile_for_plot(profiles["xx"], "t_frequency")

    fig = plot.plot_frequency_profile(profiles, score="t_zipf")
    path = tmp_path / "profile.png"
    fig.savefig(path, dpi=60)
    assert path.read_bytes().startswith(PNG_MAGIC)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split()[0] for ax in axes] == ["xx", "yy"]
    assert all(ax.get_ylabel().startswith("mean t (zipf weight × u)") for ax in axes)
    assert axes[0].get_xlabel().startswith("frequency rank bin")
    assert fig.get_suptitle() == "Bias t (zipf weight × u) against word frequency"
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["1–10", "10–100", "100–350"]


# --------------------------------------------------------------------------------------------------
# Seed 003's context words as a test


@pytest.fixture(scope="module")
def context_store(tmp_path_factory):
    """The 16 context words and 150 words leaning female (towards mean female - mean male)."""
    rng = np.random.default_rng(9)
    cw = lexicon.context_words()
    dim = 12
    female_axis = _unit(rng.normal(size=dim))
    ctx = np.vstack([female_axis + rng.normal(scale=0.3, size=(8, dim)),
                     -female_axis + rng.normal(scale=0.3, size=(8, dim))])
    others = rng.normal(size=(150, dim)) + 0.4 * female_axis
    words = [*cw.female, *cw.male] + [f"x{i}" for i in range(150)]
    url, vecs = _store(tmp_path_factory.mktemp("context"), "ctx", words, np.vstack([ctx, others]), "en")
    return url, vecs, cw


def test_context_test_is_the_full_vocabulary_test_on_the_context_words(context_store, dask_client):
    url, vecs, cw = context_store
    res = an.context_test(url, "uniform", n_permutations=999, seed=4, alternative="auto", client=dask_client,
                          progress=False)
    # Oracle: u by numpy from the file, context words excluded, against |X| dummy zeros.
    mean_unit = lambda ws: _unit(np.array([vecs[w] for w in ws])).mean(0)  # noqa: E731
    direction_ab = mean_unit(cw.female) - mean_unit(cw.male)
    targets = [w for w in vecs if w not in set(cw.female) | set(cw.male)]
    u = _unit(np.array([vecs[w] for w in targets])) @ direction_ab
    oracle = permutation_test_local(u.astype(np.float32), len(u), n_permutations=999, seed=4, alternative="auto")
    assert res.n_x == res.n_y == 150
    assert res.statistic == pytest.approx(oracle.statistic, rel=1e-5)
    assert res.effect_size == pytest.approx(oracle.effect_size, rel=1e-5)
    assert res.z_score == pytest.approx(oracle.z_score, rel=1e-4)
    assert res.statistic > 0 and res.pvalue == oracle.pvalue == pytest.approx(1 / 1000)
    assert res.alternative == "greater"

    with_context = an.context_test(url, "zipf", n_permutations=99, seed=4, exclude_context=False,
                                   client=dask_client, progress=False)
    assert with_context.n_x == 166
    sc = an.context_scores(url, methods=("zipf",)).compute()
    assert np.isnan(sc.u.sel(word="she")) and sc.attrs["n_a"] == 8 and sc.attrs["n_b"] == 8
    np.testing.assert_allclose(np.nansum(sc.u.values), u.sum(), rtol=1e-5)


# --------------------------------------------------------------------------------------------------
# Grammatical gender


@pytest.fixture(scope="module")
def spanish(shared_data, tmp_path_factory):
    vec = shared_data / "iat" / "cc" / "es.vec"
    dest = tmp_path_factory.mktemp("es") / "es.zarr"
    ingest(str(vec), str(dest), "es", client=False, progress=False)
    return str(dest), _read_vec(vec)


def test_iat_gender_forms_for_spanish():
    forms = an.iat_gender_forms("es")
    assert ("ejecutivo", "ejecutiva") in forms.targets and ("hijos", "hijas") in forms.targets
    assert ("primos", "primas") in forms.targets and ("niños", "niñas") in forms.targets
    assert ("salario", "salario") in forms.targets  # unmarked: the same form on both sides
    assert len(forms.targets) == len(set(forms.targets)) == 22
    assert forms.ambiguous == ("su",)  # his and her
    assert forms.attributes == (
        ("hombre", "mujer"), ("niño", "niña"), ("hermano", "hermana"), ("él", "ella"), ("hijo", "hija"))
    assert "su" not in forms.male + forms.female and "suyo" in forms.female
    assert forms.unpaired == ()
    assert an.iat_gender_forms("de").unpaired == ("family:cousins:t2",)


def test_bad_and_mweat_on_spanish_iat_forms_match_scipy(spanish):
    url, vecs = spanish
    forms = an.iat_gender_forms("es")
    bad = an.bad_test(url, forms.targets, forms.attributes)
    assert bad.test == "bad" and bad.language == "es" and bad.dropped == ()
    assert bad.targets == forms.targets and len(bad.masculine) == len(bad.feminine) == 22
    assert bad.a == ("hombre", "niño", "hermano", "él", "hijo")
    assert bad.b == ("mujer", "niña", "hermana", "ella", "hija")

    def assoc(word, group):  # seed 004 eq. 5, by hand
        w = _unit(vecs[word])
        return float(np.mean([w @ _unit(vecs[g]) for g in group]))

    masc = [assoc(m, bad.a) for m, _ in forms.targets]
    fem = [assoc(f, bad.b) for _, f in forms.targets]
    np.testing.assert_allclose(bad.masculine, masc, rtol=1e-12)
    np.testing.assert_allclose(bad.feminine, fem, rtol=1e-12)
    assert bad.statistic == pytest.approx(sum(masc) - sum(fem), rel=1e-12)
    oracle = stats.ttest_rel(masc, fem)
    assert bad.t_statistic == pytest.approx(oracle.statistic, rel=1e-10)
    assert bad.pvalue == pytest.approx(oracle.pvalue, rel=1e-10)
    diff = np.subtract(masc, fem)
    assert bad.effect_size == pytest.approx(diff.mean() / diff.std(ddof=1), rel=1e-10)

    mweat = an.mweat_test(url, forms.targets, forms.male, forms.female)
    masc = [assoc(m, forms.male) - assoc(m, forms.female) for m, _ in forms.targets]
    fem = [assoc(f, forms.male) - assoc(f, forms.female) for _, f in forms.targets]
    np.testing.assert_allclose(mweat.masculine, masc, rtol=1e-12, atol=1e-15)
    assert mweat.statistic == pytest.approx(abs(abs(sum(masc)) - abs(sum(fem))), rel=1e-12)
    oracle = stats.ttest_rel(masc, fem)
    assert mweat.t_statistic == pytest.approx(oracle.statistic, rel=1e-10)
    assert mweat.pvalue == pytest.approx(oracle.pvalue, rel=1e-10)
    assert "ejecutivo/ejecutiva" in mweat.target_labels and "salario" in mweat.target_labels
    cell = mweat.cell_values()
    assert cell["p_value"] == mweat.pvalue and cell["n_x"] == 22 and cell["n_a"] == 5 and cell["n_b"] == 6
    assert math.isnan(cell["z_score"]) and cell["n_permutations"] == -1


_ATTRIBUTES = [("hombre", "mujer"), ("él", "ella"), ("niño", "niña"), ("hermano", "hermana"), ("padre", "madre")]


def _gender_store(tmp_path, name, kind, seed, drop=()):
    """XWEAT's Spanish occupation/adjective forms (the 50 pairs with two distinct forms) and five
    attribute pairs: male attributes near an axis m, female ones their mirror images under the reflection
    R that swaps m and an orthogonal axis f (so s(Rv, B) = s(v, A)). Targets, by ``kind``:

    - ``"bad"``: masculine = base + 0.8 m, feminine = base + 0.2 f (+ noise): a masculine BAD bias;
    - ``"mweat"``: masculine = base + 0.6 m, feminine = base + 0.6 f: each form leans to its own gender;
    - ``"bad-none"``: pairs in couples (v1, R v2), (v2, R v1): BAD differences d and -d, no bias;
    - ``"mweat-none"``: couples (v1, v2), (v2, v1): MWEAT differences d and -d, no bias.
    """
    rng = np.random.default_rng(seed)
    dim = 24
    m_axis, f_axis = np.linalg.qr(rng.normal(size=(dim, 2)))[0].T
    h = _unit(m_axis - f_axis)
    reflect = np.eye(dim) - 2 * np.outer(h, h)
    pairs = [p for p in an.xweat_gender_pairs("es") if p[0] != p[1]]
    rows = {}
    for m, f in _ATTRIBUTES:
        rows[m] = m_axis + rng.normal(scale=0.3, size=dim)
        rows[f] = reflect @ rows[m]
    for (m1, f1), (m2, f2) in zip(pairs[::2], pairs[1::2]):
        base = rng.normal(scale=0.5, size=dim)
        v1, v2 = (base + rng.normal(scale=0.15, size=dim) for _ in range(2))
        if kind == "bad":
            rows.update({m1: v1 + 0.8 * m_axis, f1: v2 + 0.2 * f_axis, m2: v2 + 0.8 * m_axis, f2: v1 + 0.2 * f_axis})
        elif kind == "mweat":
            rows.update({m1: v1 + 0.6 * m_axis, f1: v2 + 0.6 * f_axis, m2: v2 + 0.6 * m_axis, f2: v1 + 0.6 * f_axis})
        elif kind == "bad-none":
            rows.update({m1: v1, f1: reflect @ v2, m2: v2, f2: reflect @ v1})
        else:
            rows.update({m1: v1, f1: v2, m2: v2, f2: v1})
    words = [w for w in rows if w not in drop]
    url, _ = _store(tmp_path, name, words, np.array([rows[w] for w in words]), "es", chunk_words=32)
    return url, pairs


def test_xweat_gender_pairs():
    pairs = an.xweat_gender_pairs("es")
    assert ("ingeniero", "ingeniera") in pairs and ("enfermero", "enfermera") in pairs
    assert ("terapeuta", "terapeuta") in pairs
    assert len(pairs) == len(set(pairs))
    assert an.xweat_gender_pairs("es", ["engineer", "nurse", "no-such-word"]) == (
        ("ingeniero", "ingeniera"), ("enfermero", "enfermera"))


def test_planted_gender_bias_is_significant_and_none_is_not(tmp_path):
    male, female = [m for m, _ in _ATTRIBUTES], [f for _, f in _ATTRIBUTES]
    url, pairs = _gender_store(tmp_path, "bad_planted", "bad", seed=1)
    res = an.bad_test(url, pairs, _ATTRIBUTES)
    assert len(res.targets) == len(pairs) == 50
    assert res.statistic > 0 and res.t_statistic > 0 and res.pvalue < 1e-6 and res.effect_size > 0.5
    url, pairs = _gender_store(tmp_path, "bad_none", "bad-none", seed=2)
    res = an.bad_test(url, pairs, _ATTRIBUTES)
    assert abs(res.statistic) < 1e-4 and abs(res.t_statistic) < 0.01 and res.pvalue > 0.99
    assert res.bias.std() > 0.01  # the targets do differ, only not on average

    url, pairs = _gender_store(tmp_path, "mweat_planted", "mweat", seed=3)
    res = an.mweat_test(url, pairs, male, female)
    assert res.t_statistic > 0 and res.pvalue < 1e-6 and res.masculine.mean() > 0 > res.feminine.mean()
    url, pairs = _gender_store(tmp_path, "mweat_none", "mweat-none", seed=4)
    res = an.mweat_test(url, pairs, male, female)
    assert res.statistic < 1e-12 and abs(res.t_statistic) < 1e-6 and res.pvalue > 0.99
    assert res.bias.std() > 0.01


@pytest.mark.filterwarnings("ignore::biasdask.engine.analyses.MissingWordsWarning")
def test_gender_tests_drop_pairs_with_missing_forms(tmp_path):
    url, pairs = _gender_store(tmp_path, "holes", "bad", seed=5, drop=("ingeniera", "madre", "niño"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = an.bad_test(url, pairs, _ATTRIBUTES)
    messages = " ".join(str(w.message) for w in caught if issubclass(w.category, an.MissingWordsWarning))
    assert "ingeniero/ingeniera" in messages and "padre/madre" in messages and "niño/niña" in messages
    assert set(res.dropped) == {"ingeniero/ingeniera", "padre/madre", "niño/niña"}
    assert ("ingeniero", "ingeniera") not in res.targets and len(res.targets) == len(pairs) - 1
    assert res.a == ("hombre", "él", "hermano") and res.b == ("mujer", "ella", "hermana")
    with pytest.warns(an.MissingWordsWarning, match="attributes A.*niño"):
        res = an.mweat_test(url, pairs, [m for m, _ in _ATTRIBUTES], [f for _, f in _ATTRIBUTES])
    assert "niño" not in res.a and "niña" in res.b
    with pytest.raises(MissingWordsError, match="need 1"):
        an.bad_test(url, pairs, [("niño", "niña"), ("padre", "madre")])
    with pytest.raises(MissingWordsError, match="need 2"):
        an.bad_test(url, pairs[:1], _ATTRIBUTES)
    with pytest.raises(MissingWordsError, match="attributes B"):
        an.mweat_test(url, pairs, ["hombre"], ["madre"])


def test_gender_form_bias_plot(spanish, tmp_path):
    url, _ = spanish
    forms = an.iat_gender_forms("es")
    results = {
        "es · BAD": an.bad_test(url, forms.targets, forms.attributes),
        "es · MWEAT": an.mweat_test(url, forms.targets, forms.male, forms.female),
    }
    fig = plot.plot_gender_form_bias(results)
    path = tmp_path / "forms.png"
    fig.savefig(path, dpi=60)
    assert path.read_bytes().startswith(PNG_MAGIC)
    bad_ax, mweat_ax = fig.axes[:2]
    bad = results["es · BAD"]
    assert bad_ax.get_title() == (f"es · BAD  (22 targets)\npaired t = {bad.t_statistic:.3g}, p = {bad.pvalue:.2g}; "
                                  f"BAD statistic = {bad.statistic:.3g}")
    assert bad_ax.get_xlabel().startswith("BAD bias s(x, A) − s(y, B)")
    ticks = [t.get_text() for t in bad_ax.get_yticklabels()]
    assert sorted(ticks) == sorted(results["es · BAD"].target_labels)
    # Sorted from lowest to highest, bottom to top.
    widths = [p.get_width() for p in bad_ax.patches]
    assert widths == sorted(widths)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["masculine form scores higher", "feminine form scores higher"]
    assert mweat_ax.get_xlabel().startswith("s(x, A, B) − s(y, A, B)")
