"""Classic tests on stored embeddings (biasdask.engine.classic) against brute force and published numbers."""

from __future__ import annotations

import itertools
import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import ortho_group

from biasdask.engine.classic import (
    DEFAULT_MIN_COVERAGE,
    CoverageError,
    align,
    career_family_test,
    cross_lingual_weat,
    fit_alignment,
    run_cell,
    weat,
)
from biasdask.engine import classic
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError, InputFormatError, MissingWordsError
from biasdask.lexicon import iat_words, weat_test, xweat_test
from biasdask.stats.weat import career_family_effect, weat_scores, weat_statistic

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"


# --- helpers ------------------------------------------------------------------------------------

def write_vec(path: Path, words: list[str], vectors: np.ndarray) -> Path:
    """A .vec file whose decimals are the float32 values exactly (shortest round-trip repr)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    lines = [f"{len(words)} {vectors.shape[1]}"]
    for word, row in zip(words, vectors):
        lines.append(word + " " + " ".join(np.format_float_positional(v, unique=True, trim="-") for v in row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_store(tmp: Path, name: str, words: list[str], vectors: np.ndarray, language: str = "en", chunk_words=None):
    source = write_vec(tmp / f"{name}.vec", words, vectors)
    return ingest(str(source), str(tmp / f"{name}.zarr"), language, format="vec", client=False,
                  chunk_words=chunk_words, progress=False)


def read_text_vectors(path: Path, header: bool) -> dict[str, np.ndarray]:
    """Independent float64 reader: lines split on b"\\n", fields on b" " only."""
    lines = path.read_bytes().split(b"\n")[1 if header else 0:]
    out: dict[str, np.ndarray] = {}
    for line in lines:
        fields = [f for f in line.split(b" ") if f]
        if fields:
            out.setdefault(fields[0].decode("utf-8"), np.array(fields[1:], dtype=np.float64))
    return out


def words_of(store) -> list[str]:
    return [str(w) for w in store["word"].values]


def brute_force_count(pool: np.ndarray, n_x: int, s: float, greater: bool = True) -> tuple[int, int]:
    """#{splits with s_i >= s} (or <= s) over all C(M, n_x) equal splits, and the number of splits."""
    total = pool.sum()
    sums = np.array([pool[list(c)].sum() for c in itertools.combinations(range(pool.size), n_x)])
    null = sums - (total - sums)
    hits = np.count_nonzero(null >= s - 1e-12) if greater else np.count_nonzero(null <= s + 1e-12)
    return int(hits), null.size


@pytest.fixture(scope="module")
def glove_store(shared_data, tmp_path_factory):
    dest = tmp_path_factory.mktemp("glove") / "glove.zarr"
    return ingest(str(shared_data / GLOVE), str(dest), "en", format="glove", client=False, progress=False)


@pytest.fixture(scope="module")
def glove_text(shared_data):
    return read_text_vectors(shared_data / GLOVE, header=False)


@pytest.fixture(scope="module")
def iat_store(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("iat")
    cache: dict[str, object] = {}

    def get(language: str):
        if language not in cache:
            cache[language] = ingest(str(shared_data / "iat" / "cc" / f"{language}.vec"), str(root / f"{language}.zarr"),
                                     language, format="vec", client=False, progress=False)
        return cache[language]

    return get


# --- WEAT: Caliskan et al. 2017 on GloVe 840B ----------------------------------------------------

@pytest.mark.parametrize(("n", "published"), [(1, 1.50), (7, 1.06)])
def test_weat_reproduces_caliskan(glove_store, glove_text, dask_client, n, published):
    t = weat_test(n)
    res = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=999, seed=1, client=dask_client, progress=False)
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
    res = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=math.comb(16, 8), alternative="greater",
               client=dask_client, progress=False)
    sx, sy = weat_scores(*(np.array([glove_text[w] for w in ws]) for ws in (t.x, t.y, t.a, t.b)))
    hits, total = brute_force_count(np.concatenate([sx, sy]), 8, weat_statistic(sx, sy))
    assert (hits, total) == (202, 12870)
    assert res.exact and res.n_permutations == 12870
    assert res.pvalue == pytest.approx(hits / total, rel=1e-12)
    auto = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=20000, alternative="auto", client=dask_client,
                progress=False)
    assert auto.exact and auto.alternative == "greater" and auto.pvalue == res.pvalue


def test_weat_samples_when_enumeration_is_too_large(glove_store, dask_client):
    t = weat_test(1)  # C(50, 25) splits
    a = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=500, seed=7, client=dask_client, progress=False)
    b = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=500, seed=7, client=dask_client, progress=False)
    assert not a.exact and a.n_permutations == 500 and a.pvalue == 1 / 501  # T1: p < 1e-7 (Caliskan)
    assert a.pvalue == b.pvalue and a.null_mean == b.null_mean and a.z_score > 4


# --- Euclidean distance: seed 002 footnote 3 -----------------------------------------------------

def test_euclidean_direction_convention(tmp_path, dask_client):
    """X sits near A, Y near B. With the distance itself the statistic is negative and seed 002 reads
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

    res = weat(store, names["x"], names["y"], names["a"], names["b"], similarity="euclidean",
               n_permutations=1000, alternative="auto", client=dask_client, progress=False)
    assert res.exact and res.alternative == "greater"
    assert res.statistic == pytest.approx(-s_distance, rel=1e-7)  # float32 scores (module docstring)
    assert res.pvalue == pytest.approx(hits / total, rel=1e-12) and hits < 5
    assert res.effect_size > 1.0
    assert res.similarity == "euclidean" and "footnote 3" in res.convention
    cos = weat(store, names["x"], names["y"], names["a"], names["b"], n_permutations=1000, alternative="auto",
               client=dask_client, progress=False)
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
        weat(store, x, y, a, b, client=dask_client, progress=False)
    err = info.value
    assert isinstance(err, MissingWordsError)
    assert "a3" in str(err) and "zero" in str(err) and "2/4" in str(err) and "x5" not in str(err)
    assert err.missing == {"a": ("a3", "zero")} and err.coverage["x"].missing == ("x5",)
    assert err.min_coverage == DEFAULT_MIN_COVERAGE
    cell = err.cell_values()
    assert math.isnan(cell["p_value"]) and cell["n_permutations"] == -1
    assert (cell["n_x"], cell["n_y"], cell["n_a"], cell["n_b"]) == (4, 4, 2, 2)
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.coverage == err.coverage

    res = weat(store, x, y, a, b, min_coverage=0.5, n_permutations=999, client=dask_client, progress=False)
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (4, 4, 2, 2)
    assert res.coverage["a"].missing == ("a3", "zero") and res.coverage["x"].found == ("x1", "x2", "x3", "x4")
    # a set with no word at all is skipped whatever the threshold
    with pytest.raises(CoverageError, match="none1"):
        weat(store, x, y, ["none1"], b, min_coverage=0.0, client=dask_client, progress=False)


# --- career/family IAT (Lewis & Lupyan 2020) -----------------------------------------------------

@pytest.mark.parametrize("language", ["de", "es", "fr", "ja"])
def test_career_family_reproduces_published(shared_data, iat_store, dask_client, language):
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = career_family_test(iat_store(language), language, n_permutations=999, seed=3, client=dask_client,
                             progress=False)
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
    res = career_family_test(iat_store("es"), "es", n_permutations=total, alternative="auto", client=dask_client,
                             progress=False)
    assert res.exact and res.statistic == pytest.approx(s, rel=1e-6)  # the engine holds scores as float32
    assert res.pvalue == pytest.approx(hits / total, rel=1e-12)
    assert res.effect_size == pytest.approx(effect.effect_size, abs=1e-12)


def test_career_family_coverage(shared_data, iat_store, dask_client):
    """Urdu Common Crawl has 6 of the 8 career words: skipped by default, and published when allowed."""
    with pytest.raises(CoverageError, match="career") as info:
        career_family_test(iat_store("ur"), "ur", client=dask_client, progress=False)
    assert len(info.value.missing["a"]) == 2
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = career_family_test(iat_store("ur"), "ur", min_coverage=0.7, n_permutations=99, seed=0,
                             client=dask_client, progress=False)
    assert res.n_a == 6 and abs(res.effect_size - published.loc["ur", "lang_es_wiki_cc"]) < 1e-9


# --- study cells ---------------------------------------------------------------------------------

def test_tests_for_language():
    tests_for_language = classic.tests_for_language  # imported under this name pytest would collect it
    assert tests_for_language("en") == [f"weat{i}" for i in range(1, 11)] + ["career_family"]
    assert tests_for_language("de") == [f"xweat{i}" for i in range(1, 11)] + ["career_family"]
    assert tests_for_language("zu") == ["career_family"]  # Wikipedia translations only
    assert tests_for_language("zu", model="cc") == []
    assert tests_for_language("xx") == []


def test_run_cell_weat7_matches_weat(glove_store, dask_client):
    res = run_cell("weat7", glove_store, language="en", n_permutations=12870, seed=1, client=dask_client)
    t = weat_test(7)
    direct = weat(glove_store, t.x, t.y, t.a, t.b, n_permutations=12870, client=dask_client, progress=False)
    assert res.test == "weat7" and res.pvalue == direct.pvalue and res.statistic == direct.statistic
    assert res.coverage["x"].name == "Math"
    cell = res.cell_values()
    assert cell["p_value"] == res.pvalue and cell["n_a"] == 8 and cell["exact"] is True


def test_run_cell_xweat_on_a_synthetic_store(tmp_path, dask_client):
    sets = xweat_test("de", 7)
    words = list(dict.fromkeys(sets.x + sets.y + sets.a + sets.b))
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(len(words) + 20, 10)).astype(np.float32)
    store = make_store(tmp_path, "de", words + [f"filler{i}" for i in range(20)], vectors, language="de",
                       chunk_words=16)
    res = run_cell("xweat7", store, language="de", n_permutations=999, seed=2, client=dask_client)
    rows = dict(zip(words, vectors[: len(words)].astype(np.float64)))
    sx, sy = weat_scores(*(np.array([rows[w] for w in ws]) for ws in (sets.x, sets.y, sets.a, sets.b)))
    assert res.statistic == pytest.approx(weat_statistic(sx, sy), rel=1e-6)
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (len(sets.x), len(sets.y), len(sets.a), len(sets.b))
    # the same words missing from a smaller store: the cell is skipped with the words named
    small = make_store(tmp_path, "de_small", words[3:], vectors[3 : len(words)], language="de")
    with pytest.raises(CoverageError, match=words[0]):
        run_cell("xweat7", small, language="de", n_permutations=99, client=dask_client, min_coverage=1.0)


def test_run_cell_career_family_and_refusals(shared_data, iat_store, glove_store, dask_client):
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = run_cell("career_family", iat_store("ja"), language="ja", n_permutations=99, seed=4, client=dask_client)
    assert abs(res.effect_size - published.loc["ja", "lang_es_wiki_cc"]) < 1e-9
    with pytest.raises(BiasdaskError, match="does not apply"):
        run_cell("weat1", iat_store("ja"), language="ja", client=dask_client)
    with pytest.raises(BiasdaskError, match="unknown test"):
        run_cell("weat11", glove_store, language="en", client=dask_client)
    with pytest.raises(BiasdaskError, match="cosine"):
        run_cell("career_family", iat_store("ja"), language="ja", similarity="euclidean", client=dask_client)


# --- alignment and cross-lingual WEAT ------------------------------------------------------------

@pytest.fixture(scope="module")
def rotated_pair(tmp_path_factory):
    """A random 'English' store and an 'Italian' one holding the same vectors rotated, under other names."""
    root = tmp_path_factory.mktemp("align")
    rng = np.random.default_rng(8)
    n, d = 300, 12
    vectors = rng.normal(size=(n, d)).astype(np.float32)
    rotation = ortho_group.rvs(d, random_state=9)
    rotated = (vectors.astype(np.float64) @ rotation.T).astype(np.float32)
    en_words = [f"en{i}" for i in range(n)]
    it_words = [f"it{i}" for i in range(n)]
    en = make_store(root, "en", en_words, vectors, language="en", chunk_words=64)
    it = make_store(root, "it", it_words, rotated, language="it", chunk_words=64)
    return root, en, it, vectors, rotated, rotation


def test_align_recovers_a_known_rotation(rotated_pair, dask_client):
    root, en, it, vectors, rotated, rotation = rotated_pair
    pairs = [(f"en{i}", f"it{i}") for i in range(0, 300, 3)] + [("en0", "absent")]
    fitted = fit_alignment(en, it, pairs, client=dask_client)
    np.testing.assert_allclose(fitted.matrix, rotation, atol=1e-5)
    assert len(fitted.pairs) == 100 and fitted.missing == (("en0", "absent"),)

    aligned = align(en, it, pairs, str(root / "en_aligned.zarr"), client=dask_client, progress=False)
    assert aligned.attrs["aligned_to"] == "it" and aligned.attrs["alignment_pairs"] == 100
    assert aligned.attrs["biasdask_complete"] is True and aligned.attrs["language"] == "en"
    assert aligned["vectors"].chunks[0] == en["vectors"].chunks[0]
    np.testing.assert_allclose(aligned["vectors"].values, rotated, atol=1e-5)
    assert words_of(aligned) == words_of(en)
    np.testing.assert_array_equal(aligned["rank"].values, np.arange(1, 301))
    np.testing.assert_allclose(aligned["norm"].values, en["norm"].values, rtol=1e-6)


def test_cross_lingual_weat_equals_monolingual_on_the_rotated_copy(rotated_pair, dask_client):
    """Targets from aligned English, attributes from Italian == everything from Italian (the rotated copy)."""
    root, en, it, *_ = rotated_pair
    dest = root / "en_aligned_x.zarr"
    aligned = align(en, it, [(f"en{i}", f"it{i}") for i in range(300)], str(dest), client=dask_client, progress=False)
    x, y, a, b = range(0, 5), range(5, 10), range(10, 16), range(16, 22)
    en_words = lambda r: [f"en{i}" for i in r]  # noqa: E731
    it_words = lambda r: [f"it{i}" for i in r]  # noqa: E731
    cross = cross_lingual_weat(aligned, it, en_words(x), en_words(y), it_words(a), it_words(b),
                               n_permutations=1000, client=dask_client, progress=False)
    mono = weat(it, it_words(x), it_words(y), it_words(a), it_words(b), n_permutations=1000, client=dask_client,
                progress=False)
    assert cross.language == "en->it" and cross.exact and mono.exact
    assert cross.statistic == pytest.approx(mono.statistic, abs=1e-5)
    assert cross.effect_size == pytest.approx(mono.effect_size, abs=1e-4)
    assert cross.pvalue == mono.pvalue
    # without alignment the attribute words mean nothing to the English targets
    unaligned = weat(en, en_words(x), en_words(y), it_words(a), it_words(b), attributes_from=it,
                     n_permutations=1000, client=dask_client, progress=False)
    assert unaligned.statistic != pytest.approx(mono.statistic, abs=1e-3)


def test_align_gensim_english_italian_from_a_dictionary_file(tmp_path, dask_client):
    """gensim's translation-matrix test data: after alignment each English number word's nearest
    Italian neighbour is its translation (20/20)."""
    gensim = pytest.importorskip("gensim")
    data = Path(gensim.__file__).parent / "test" / "test_data"
    files = [data / "EN.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
             data / "IT.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
             data / "OPUS_en_it_europarl_train_one2ten.txt"]
    if not all(f.exists() for f in files):
        pytest.skip(f"gensim's EN/IT test data not found in {data}")
    en = ingest(str(files[0]), str(tmp_path / "en.zarr"), "en", format="vec", client=False, progress=False)
    it = ingest(str(files[1]), str(tmp_path / "it.zarr"), "it", format="vec", client=False, progress=False)
    aligned = align(en, it, str(files[2]), str(tmp_path / "en_it.zarr"), client=dask_client, progress=False)
    pairs = [line.split(" ") for line in files[2].read_text(encoding="utf-8").split("\n") if line.strip()]
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    it_words = words_of(it)
    it_unit = unit(it["vectors"].values.astype(np.float64))

    def accuracy(store) -> float:
        words = words_of(store)
        v = unit(store["vectors"].values.astype(np.float64))
        nearest = np.argmax(v[[words.index(e) for e, _ in pairs]] @ it_unit.T, axis=1)
        return float(np.mean([it_words[k] == i for k, (_, i) in zip(nearest, pairs)]))

    assert aligned.attrs["alignment_pairs"] == 20
    assert accuracy(aligned) == 1.0 and accuracy(en) <= 0.2


def test_dictionary_file_errors_name_the_line(rotated_pair, tmp_path):
    _, en, it, *_ = rotated_pair
    bad = tmp_path / "dict.txt"
    bad.write_text("en1\tit1\nen2 it2 extra\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"dict\.txt:2"):
        fit_alignment(en, it, str(bad), client=False)
    with pytest.raises(MissingWordsError, match="no pair"):
        fit_alignment(en, it, [("nope", "nada")], client=False)
