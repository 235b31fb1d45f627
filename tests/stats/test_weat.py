"""WEAT numbers (biasdask.stats.weat) against brute force, scipy and the published values."""

from __future__ import annotations

import itertools
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from biasdask.errors import MissingWordsError
from biasdask.lexicon import IATTranslation, iat_words, weat_test
from biasdask.stats.weat import (
    career_family_effect,
    similarity_matrix,
    weat_effect_size,
    weat_scores,
    weat_statistic,
    word_association,
)

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"
PUBLISHED_COLUMNS = {"cc": "lang_es_wiki_cc", "wiki": "lang_es_wiki", "subt": "lang_es_sub"}


def read_text_vectors(path: Path, header: bool) -> dict[str, np.ndarray]:
    """word2vec/GloVe text: split lines on b"\\n" and fields on b" " only (tokens may hold odd characters)."""
    lines = path.read_bytes().split(b"\n")
    if header:
        n, dim = (int(v) for v in lines[0].split(b" ")[:2])
        lines = lines[1:]
    out: dict[str, np.ndarray] = {}
    for line in lines:
        if not line:
            continue
        fields = line.split(b" ")
        if fields[-1] == b"":
            fields.pop()
        out.setdefault(fields[0].decode("utf-8"), np.array(fields[1:], dtype=np.float64))
    if header:
        assert len(out) == n and all(v.shape == (dim,) for v in out.values())
    return out


@pytest.fixture(scope="module")
def glove(shared_data: Path) -> dict[str, np.ndarray]:
    return read_text_vectors(shared_data / GLOVE, header=False)


def _sets(vectors: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
    t = weat_test(n)
    return tuple(np.array([vectors[w] for w in words]) for words in (t.x, t.y, t.a, t.b))


# --- pure numbers -------------------------------------------------------------------------------


def test_similarity_matrix_against_scipy():
    rng = np.random.default_rng(0)
    w, a = rng.normal(size=(7, 12)), rng.normal(size=(5, 12)) * 3.0
    np.testing.assert_allclose(similarity_matrix(w, a), 1.0 - cdist(w, a, "cosine"), atol=1e-12)
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(similarity_matrix(w, a, "euclidean"), -cdist(unit(w), unit(a)), atol=1e-12)


def test_word_association_brute_force():
    rng = np.random.default_rng(1)
    w, a, b = rng.normal(size=(6, 10)), rng.normal(size=(4, 10)), rng.normal(size=(3, 10))
    cos = lambda u, v: float(u @ v / math.sqrt((u @ u) * (v @ v)))  # noqa: E731
    expected = [statistics.fmean(cos(x, y) for y in a) - statistics.fmean(cos(x, y) for y in b) for x in w]
    np.testing.assert_allclose(word_association(w, a, b), expected, atol=1e-12)


def test_effect_size_is_sample_sd_convention():
    sx, sy = [0.3, 0.1, 0.25, 0.4], [0.05, -0.1, 0.0]
    pooled = sx + sy
    expected = (statistics.fmean(sx) - statistics.fmean(sy)) / statistics.stdev(pooled)
    assert weat_effect_size(sx, sy) == pytest.approx(expected, rel=1e-12)
    assert weat_effect_size(sx, sy, ddof=0) == pytest.approx(
        (statistics.fmean(sx) - statistics.fmean(sy)) / statistics.pstdev(pooled), rel=1e-12
    )
    assert weat_statistic(sx, sy) == pytest.approx(sum(sx) - sum(sy), abs=1e-15)
    assert math.isnan(weat_effect_size([1.0], [1.0]))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="zero vectors"):
        similarity_matrix(np.zeros((1, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="unknown similarity"):
        similarity_matrix(np.ones((1, 3)), np.ones((2, 3)), "manhattan")
    with pytest.raises(ValueError, match="dimension mismatch"):
        similarity_matrix(np.ones((1, 3)), np.ones((2, 4)))


# --- Caliskan et al. 2017 on GloVe 840B --------------------------------------------------------


@pytest.mark.parametrize(("n", "published", "precise"), [(1, 1.50, 1.504), (7, 1.06, 1.055)])
def test_caliskan_effect_sizes(glove, n, published, precise):
    sx, sy = weat_scores(*_sets(glove, n))
    d = weat_effect_size(sx, sy)
    assert round(d, 2) == published
    assert d == pytest.approx(precise, abs=5e-4)
    # the population SD (what most libraries use) does not give the published value
    assert round(weat_effect_size(sx, sy, ddof=0), 2) != published


@pytest.mark.parametrize("n", [1, 7])
def test_euclidean_direction_agrees_with_cosine(glove, n):
    """Lauscher & Glavaš 2019, Table 2: cosine and Euclidean effects have the same sign and nearly the same size."""
    d_cos = weat_effect_size(*weat_scores(*_sets(glove, n), "cosine"))
    d_euc = weat_effect_size(*weat_scores(*_sets(glove, n), "euclidean"))
    assert d_euc > 0 and abs(d_euc - d_cos) < 0.05


def test_caliskan_t7_exact_p_by_brute_force(glove):
    """All C(16, 8) = 12,870 equal splits of X ∪ Y; p = #{s_i >= s} / 12,870 (the observed split included).

    Published (Caliskan et al. 2017, Table 1): p = 0.018. These vectors give 202 / 12,870 = 0.0157.
    """
    x, y, a, b = _sets(glove, 7)
    pool = np.concatenate([x, y])
    s = weat_statistic(*weat_scores(x, y, a, b))
    assoc = word_association(pool, a, b)
    splits = list(itertools.combinations(range(16), 8))
    assert len(splits) == math.comb(16, 8) == 12870
    null = np.array([weat_statistic(assoc[list(xi)], np.delete(assoc, list(xi))) for xi in splits])
    at_least = int(np.count_nonzero(null >= s - 1e-12))
    p = at_least / len(splits)
    assert at_least == 202
    assert p == pytest.approx(0.018, abs=0.003)
    # the split X, Y itself is one of them, and is the only one tying with s
    assert at_least - int(np.count_nonzero(null > s + 1e-12)) == 1


# --- Lewis & Lupyan 2020: career/family IAT in 27-34 languages ----------------------------------


def _published(shared_data: Path) -> list[tuple[str, str, float]]:
    table = pd.read_csv(shared_data / "iat/published_effect_sizes.csv")
    return [
        (model, row.language_code, float(getattr(row, column)))
        for model, column in PUBLISHED_COLUMNS.items()
        for row in table.itertuples()
        if not math.isnan(getattr(row, column))
    ]


def test_career_family_reproduces_all_88_published_values(shared_data):
    diffs = {}
    for model, language, published in _published(shared_data):
        vectors = read_text_vectors(shared_data / "iat" / model / f"{language}.vec", header=True)
        result = career_family_effect(iat_words(model, language), vectors)
        diffs[(model, language)] = abs(result.effect_size - published)
    assert len(diffs) == 88
    worst = max(diffs, key=diffs.get)
    assert diffs[worst] < 1e-9, f"{worst}: |diff| = {diffs[worst]:.3g}"


def test_career_family_grammatical_gender_convention(shared_data):
    es = career_family_effect(iat_words("cc", "es"), read_text_vectors(shared_data / "iat/cc/es.vec", header=True))
    assert es.grammatical_gender and [r.forms for r in es.runs] == ["masculine", "feminine"]
    masc, fem = es.runs
    assert es.effect_size == pytest.approx(
        (masc.s["male"].mean() - fem.s["female"].mean()) / ((masc.sd + fem.sd) / 2), rel=1e-12
    )
    en_vectors = read_text_vectors(shared_data / "iat/cc/en.vec", header=True)
    en = career_family_effect(iat_words("cc", "en"), en_vectors)
    assert not en.grammatical_gender and len(en.runs) == 1
    # the population SD misses the published value (PROVENANCE: by 0.035-0.039)
    ddof0 = career_family_effect(iat_words("cc", "en"), en_vectors, ddof=0)
    assert abs(ddof0.effect_size - en.effect_size) > 0.01


def test_career_family_matches_plain_weat_when_one_token_per_word():
    """With one untranslated token per word, the method is WEAT's effect size with cosine."""
    rng = np.random.default_rng(3)
    cats = {c: [f"{c}{i}" for i in range(4)] for c in ("male", "female", "career", "family")}
    vectors = {w: rng.normal(size=8) for ws in cats.values() for w in ws}
    entries = [IATTranslation(c, w, "N", "t1", (w,)) for c, ws in cats.items() for w in ws]
    result = career_family_effect(entries, vectors)
    m = {c: np.array([vectors[w] for w in ws]) for c, ws in cats.items()}
    sx, sy = weat_scores(m["male"], m["female"], m["career"], m["family"])
    assert result.effect_size == pytest.approx(weat_effect_size(sx, sy), rel=1e-12)


def test_career_family_averages_tokens_then_translations():
    rng = np.random.default_rng(4)
    v = {t: rng.normal(size=5) for t in ("p", "q", "r", "c", "f", "m2", "f2", "c2", "fa2")}
    entries = [
        ("male", "man", "N", "t1", ("p", "q")),  # one translation of two tokens
        ("male", "man", "N", "t2", ("r",)),
        ("male", "boy", "N", "t1", ("m2",)),
        ("female", "woman", "N", "t1", ("f",)),
        ("female", "girl", "N", "t1", ("f2", "absent")),  # absent tokens are skipped
        ("career", "office", "N", "t1", ("c",)),
        ("career", "salary", "N", "t1", ("c2",)),
        ("family", "home", "N", "t1", ("fa2",)),
    ]
    man = ((v["p"] + v["q"]) / 2 + v["r"]) / 2
    result = career_family_effect(entries, v)
    expected = word_association(man[None, :], np.array([v["c"], v["c2"]]), v["fa2"][None, :])[0]
    assert result.runs[0].s["male"][0] == pytest.approx(expected, rel=1e-12)
    assert result.runs[0].words["female"] == ("woman", "girl")


def test_career_family_names_missing_category():
    entries = [
        ("male", "man", "N", "t1", ("m",)),
        ("female", "woman", "N", "t1", ("f",)),
        ("career", "office", "N", "t1", ("nowhere",)),
        ("family", "home", "N", "t1", ("h",)),
    ]
    vectors = {t: np.ones(3) * i for i, t in enumerate(("m", "f", "h"), start=1)}
    with pytest.raises(MissingWordsError, match="career: office"):
        career_family_effect(entries, vectors)
