"""Per-word associations (cosine, euclidean, ripa, semaxis) over a vocabulary, in scores, tests and studies.

Every oracle is a plain numpy re-implementation of the papers' formulas, word by word, on the real
GloVe 840B vectors of ../shared/data (WEAT-7's male and female terms, paired by position as in the
papers' lists: male/female, man/woman, ...).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask import Resampling, Vocabulary
from biasdask.engine.bias_tests import full_vocabulary_test
from biasdask.engine.scores import scores
from biasdask.errors import BiasdaskError, MissingWordsError
from biasdask.io import results as rs
from biasdask.stats import association as sa
from biasdask.stats.permutation import permutation_test_local

MALE = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
FEMALE = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]


@pytest.fixture(scope="module")
def glove(shared_data):
    """(words, float32 rows, float64 rows as printed in the file)."""
    path = shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"
    rows = [line.split(b" ") for line in path.read_bytes().split(b"\n") if line]
    words = [r[0].decode() for r in rows]
    exact = np.array([[float(x) for x in r[1:]] for r in rows])
    return words, exact.astype(np.float32), exact


def _emb(words, vec, chunk=50):
    return xr.Dataset(
        {
            "vectors": (("word", "dim"), vec),
            "norm": (("word",), np.linalg.norm(vec.astype(np.float64), axis=1).astype(np.float32)),
        },
        coords={"word": np.array(words, dtype=object), "rank": ("word", np.arange(1, len(words) + 1))},
        attrs={"language": "en"},
    ).chunk({"word": chunk})


def _cos(x, y):
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def _oracle(kind, w, a, b):
    """The papers' per-word formulas, one word at a time (a, b: lists of raw vectors)."""
    if kind == "cosine":  # the full-vocabulary study: mean cos with A - mean cos with B
        return np.mean([_cos(w, x) for x in a]) - np.mean([_cos(w, y) for y in b])
    if kind == "euclidean":  # Garg et al.'s RND summand on unit vectors, sign flipped: > 0 closer to A
        unit = [v / np.linalg.norm(v) for v in (*a, *b)]
        mean_a, mean_b = np.mean(unit[: len(a)], axis=0), np.mean(unit[len(a) :], axis=0)
        wu = w / np.linalg.norm(w)
        return np.linalg.norm(wu - mean_b) - np.linalg.norm(wu - mean_a)
    if kind == "ripa":  # Ethayarajh et al. / WEFE: mean over pairs of w . (a_i - b_i) / |a_i - b_i|
        return np.mean([w @ ((x - y) / np.linalg.norm(x - y)) for x, y in zip(a, b)])
    if kind == "semaxis":  # An et al. / sweater (l = 0): cos(w, mean A - mean B), raw vectors
        return _cos(w, np.mean(a, axis=0) - np.mean(b, axis=0))
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", sa.ASSOCIATIONS)
def test_stats_associate_equals_the_papers_formulas_on_glove(glove, kind):
    words, vec, exact = glove
    rows = dict(zip(words, exact))
    a, b = [rows[w] for w in MALE], [rows[w] for w in FEMALE]
    axes = sa.association_axes(kind, np.array(a), np.array(b))
    got = sa.associate(kind, vec, np.linalg.norm(vec.astype(np.float64), axis=1), axes)
    oracle = np.array([_oracle(kind, w, a, b) for w in exact])
    scale = np.abs(oracle).max()
    np.testing.assert_allclose(got, oracle, rtol=0, atol=2e-6 * max(scale, 1))
    assert np.isnan(sa.associate(kind, np.zeros((1, vec.shape[1]), np.float32), np.zeros(1), axes)).all()
    if kind == "cosine":  # today's u, bit for bit
        d = sa.attribute_direction(np.array(a), np.array(b))
        np.testing.assert_array_equal(got, sa.association(vec, np.linalg.norm(vec.astype(np.float64), axis=1), d))


def test_sign_convention_closer_to_a_is_positive():
    a, b = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    words = np.array([[2.0, 0.1, 0.0], [0.1, 3.0, 0.0]], np.float32)
    for kind in sa.ASSOCIATIONS:
        got = sa.associate(kind, words, np.linalg.norm(words, axis=1), sa.association_axes(kind, a, b))
        assert got[0] > 0 > got[1], kind


def test_ripa_refuses_unpaired_sets_and_identical_pairs():
    with pytest.raises(ValueError, match="A has 2 words, B 1"):
        sa.association_axes("ripa", np.eye(3)[:2], np.eye(3)[2:])
    with pytest.raises(ValueError, match="zero"):
        sa.association_axes("ripa", np.eye(3)[:1], np.eye(3)[:1])
    with pytest.raises(ValueError, match="unknown association"):
        sa.association_axes("dot", np.eye(3)[:1], np.eye(3)[1:2])


@pytest.mark.parametrize("kind", ["euclidean", "ripa", "semaxis"])
def test_scores_computes_the_association_over_the_vocabulary(glove, kind):
    words, vec, exact = glove
    rows = dict(zip(words, exact))
    out = scores(_emb(words, vec), MALE, FEMALE, methods=("uniform", "zipf"), association=kind)
    assert out.attrs["association"] == kind
    oracle = np.array([_oracle(kind, w, [rows[x] for x in MALE], [rows[y] for y in FEMALE]) for w in exact])
    u = out["u"].values
    np.testing.assert_allclose(u, oracle, rtol=0, atol=2e-6 * max(np.abs(oracle).max(), 1))
    n = len(words)
    zipf = 1 / np.arange(1, n + 1) / np.sum(1 / np.arange(1, n + 1))
    np.testing.assert_allclose(out["t"].sel({"method": "zipf"}).values, zipf * u, rtol=1e-6)


def test_scores_ripa_pairs_by_position_and_drops_pairs_with_a_missing_word(glove):
    words, vec, exact = glove
    rows = dict(zip(words, exact))
    a, b = [*MALE, "nosuchmaleword"], [*FEMALE, "femaleword"]
    out = scores(_emb(words, vec), a, b, methods=("uniform",), association="ripa")
    oracle = np.array([_oracle("ripa", w, [rows[x] for x in MALE], [rows[y] for y in FEMALE]) for w in exact])
    np.testing.assert_allclose(out["u"].values, oracle, rtol=0, atol=2e-5)
    with pytest.raises(
        BiasdaskError, match="pairs the i-th attribute word of A with the i-th of B: A has 8 words, B has 7"
    ):
        scores(_emb(words, vec), MALE, FEMALE[:7], association="ripa")
    with pytest.raises(MissingWordsError, match="no pair"):
        scores(_emb(words, vec), ["he", "nosuchword"], ["nosuchword2", "she"], association="ripa")
    with pytest.raises(BiasdaskError, match="unknown association 'dot'"):
        scores(_emb(words, vec), MALE, FEMALE, association="dot")


def test_full_vocabulary_test_with_an_association_is_the_permutation_test_of_its_scores(glove):
    words, vec, exact = glove
    rows = dict(zip(words, exact))
    oracle = np.array([_oracle("semaxis", w, [rows[x] for x in MALE], [rows[y] for y in FEMALE]) for w in exact])
    res = full_vocabulary_test(
        _emb(words, vec),
        MALE,
        FEMALE,
        method="uniform",
        association="semaxis",
        progress=False,
        resampling=Resampling(n_permutations=999, seed=3),
    )
    local = permutation_test_local(oracle.astype(np.float32), len(words), n_permutations=999, seed=3)
    assert res.statistic == pytest.approx(oracle.sum(), rel=1e-5)
    assert res.statistic == pytest.approx(local.statistic, rel=1e-5)
    assert res.effect_size == pytest.approx(local.effect_size, rel=1e-5)
    cosine = full_vocabulary_test(
        _emb(words, vec),
        MALE,
        FEMALE,
        method="uniform",
        progress=False,
        resampling=Resampling(n_permutations=999, seed=3),
    )
    assert cosine.statistic != pytest.approx(res.statistic)


def test_study_records_the_association_of_every_cell(tmp_path, glove):
    words, vec, _ = glove
    emb = _emb(words, vec)
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": emb, "a": MALE, "b": FEMALE}},
        "methods": ["uniform", "zipf"],
        "associations": ["cosine", "ripa", "euclidean"],
        "tests": ["gender", "context", "weat7"],
        "n_permutations": 99,
    }
    cube = biasdask.run(study, progress=False)
    labels = list(map(str, cube["test"].values))
    assert labels == [
        "gender",
        "gender.ripa",
        "gender.euclidean",
        "context",
        "context.ripa",
        "context.euclidean",
        "weat7",
    ]
    kinds = ["cosine", "ripa", "euclidean", "cosine", "ripa", "euclidean", "none"]
    assert list(map(str, cube["association"].values)) == kinds
    cell = cube.sel({"language": "en", "method": "zipf"})
    assert list(map(str, cell["u_association"].values)) == kinds
    # Valentini et al. 2022's context words (female first) paired for RIPA: the same as gender.ripa's pairs, reversed
    context = full_vocabulary_test(
        emb,
        FEMALE,
        MALE,
        method="zipf",
        association="ripa",
        progress=False,
        resampling=Resampling(n_permutations=99),
        vocabulary=Vocabulary(exclude_words=[*FEMALE, *MALE]),
    )
    assert float(cell["statistic"].sel({"test": "context.ripa"})) == pytest.approx(context.statistic, rel=1e-6)
    ripa = scores(emb, MALE, FEMALE, methods=("uniform", "zipf"), association="ripa")
    t = ripa["t"].sel({"method": "zipf"}).values
    assert float(cell["statistic"].sel({"test": "gender.ripa"})) == pytest.approx(float(t.sum()), rel=1e-5)
    assert float(cell["statistic"].sel({"test": "gender"})) != pytest.approx(float(t.sum()), rel=1e-3)
    sc = rs.open_scores(str(tmp_path / "r.zarr"), language="en")
    np.testing.assert_allclose(sc["u_ripa"].values, ripa["u"].values, rtol=1e-6)
    assert {"u", "t", "u_ripa", "t_ripa", "u_euclidean", "t_euclidean"} <= set(sc.data_vars)
    # frequency profiles (and so the figures) can use every association's u
    from biasdask.engine.frequency import frequency_profile

    prof = frequency_profile(sc)
    assert {"u", "u_ripa", "u_euclidean", "t_uniform"} <= set(map(str, prof["score"].values))
    # and so can the words behind a number, from Python and from the CLI
    top = biasdask.top_words(str(tmp_path / "r.zarr"), language="en", n=5, by="t", method="zipf", association="ripa")
    best = int(np.nanargmax(t))
    assert top["word"].iloc[0] == words[best] and top["t"].iloc[0] == pytest.approx(t[best], rel=1e-6)
    from biasdask.tables import format_words

    assert "by t of zipf, association ripa" in format_words(top).splitlines()[0]
    with pytest.raises(BiasdaskError, match="no association 'semaxis' .*has cosine, ripa, euclidean"):
        biasdask.top_words(str(tmp_path / "r.zarr"), language="en", association="semaxis")
    from biasdask.cli import main

    assert main(["words", str(tmp_path / "r.zarr"), "en", "--association", "euclidean", "--format", "csv"]) == 0
