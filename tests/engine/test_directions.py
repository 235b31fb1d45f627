"""Bias directions, DirectBias and IndirectBias on stores (biasdask.engine.directions).

Stores are ingested from small ``.vec`` files (tests/stores.py); every oracle reads the same file with numpy
(fields split on b" ") and computes with the stats-level functions, scipy, or a plain Python loop.
"""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from biasdask import lexicon  # noqa: E402
from biasdask.engine import directions as ed  # noqa: E402
from biasdask.engine import words as ew  # noqa: E402
from biasdask.engine.scores import scores  # noqa: E402
from biasdask.errors import BiasdaskError, MissingWordsError  # noqa: E402
from biasdask.stats import directions as sd  # noqa: E402
from tests.stores import make_store, stored_values, unit  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------------
# Directions


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Eight pairs a_i = base_i + g + noise, b_i = base_i - g + noise (base_i ⟂ g), and 40 filler words."""
    rng = np.random.default_rng(1)
    dim = 16
    g = unit(rng.normal(size=dim))
    base = rng.normal(scale=0.6, size=(8, dim))
    base -= np.outer(base @ g, g)
    a = base + g + rng.normal(scale=0.03, size=base.shape)
    b = base - g + rng.normal(scale=0.03, size=base.shape)
    filler = rng.normal(scale=0.5, size=(40, dim))
    words = [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)] + [f"w{i}" for i in range(40)]
    url = make_store(
        tmp_path_factory.mktemp("planted"), "planted", words, np.vstack([a, b, filler]), language="xx", chunk_words=16
    )
    vecs = stored_values(url)
    return url, vecs, g


def test_direction_recovers_planted_direction(planted):
    url, _, g = planted
    pairs = [(f"a{i}", f"b{i}") for i in range(8)]
    for method, kwargs in [
        ("pca", {"pairs": pairs}),
        ("sum", {"a": [p[0] for p in pairs], "b": [p[1] for p in pairs]}),
        ("pair", {"pairs": pairs[:1]}),
    ]:
        d = ed.direction(url, algorithm=method, **kwargs)
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
        url = make_store(
            tmp_path, f"p{trial}", words, rng.normal(size=(n, dim)), language="xx", chunk_words=chunk_words
        )
        vecs = stored_values(url)
        k = int(rng.integers(2, 8))
        idx = rng.choice(n, size=2 * k, replace=False)
        first, second = [words[i] for i in idx[:k]], [words[i] for i in idx[k:]]
        m = functools.partial(lambda ws, vecs: np.array([vecs[w] for w in ws]), vecs=vecs)
        pairs = list(zip(first, second))
        close = functools.partial(np.testing.assert_allclose, atol=1e-12)
        close(ed.direction(url, pairs, algorithm="pca"), sd.pca_direction(m(first), m(second)))
        close(ed.direction(url, pairs, algorithm="sum"), sd.sets_direction(m(first), m(second)))
        # Sets of unequal sizes for "sum"; one pair for "pair".
        close(ed.direction(url, a=first, b=second[:1], algorithm="sum"), sd.sets_direction(m(first), m(second[:1])))
        close(
            ed.direction(url, a=first[0], b=second[0], algorithm="pair"),
            sd.pair_direction(vecs[first[0]], vecs[second[0]]),
        )


def test_direction_skips_and_reports_missing_words(planted):
    url, vecs, _ = planted
    pairs = [("a0", "b0"), ("a1", "nowhere"), ("a2", "b2"), ("a3", "b3")]
    with pytest.warns(ew.MissingWordsWarning, match="a1/nowhere"):
        d = ed.direction(url, pairs)
    kept = [p for p in pairs if p[1] != "nowhere"]
    expected = sd.pca_direction(np.array([vecs[p[0]] for p in kept]), np.array([vecs[p[1]] for p in kept]))
    np.testing.assert_allclose(d, expected, atol=1e-12)
    with pytest.raises(MissingWordsError, match="ghost/spook"):
        ed.direction(url, [("ghost", "spook")])
    with pytest.raises(MissingWordsError, match="set B.*zzz"):
        ed.direction(url, a=["a0"], b=["zzz"], algorithm="sum")


def test_direction_argument_errors(planted):
    url, _, _ = planted
    with pytest.raises(BiasdaskError, match="exactly one pair"):
        ed.direction(url, [("a0", "b0"), ("a1", "b1")], algorithm="pair")
    with pytest.raises(BiasdaskError, match="either pairs or a and b"):
        ed.direction(url, [("a0", "b0")], a=["a1"], b=["b1"])
    with pytest.raises(BiasdaskError, match="aligned"):
        ed.direction(url, a=["a0", "a1"], b=["b0"], algorithm="pca")
    with pytest.raises(BiasdaskError, match="unknown direction algorithm"):
        ed.direction(url, [("a0", "b0")], algorithm="svd")
    with pytest.raises(BiasdaskError, match="dimension"):
        ed.direct_bias(url, np.ones(3), ["a0"])


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    """Bolukbasi's definitional words (some), a few professions, gender-specific *actress*, and fillers."""
    rng = np.random.default_rng(3)
    words = [
        "she",
        "he",
        "woman",
        "man",
        "her",
        "his",
        "girl",
        "boy",
        "accountant",
        "architect",
        "nurse",
        "programmer",
        "librarian",
        "actress",
        "table",
        "river",
    ]
    url = make_store(
        tmp_path_factory.mktemp("english"),
        "en",
        words,
        rng.normal(size=(len(words), 12)),
        language="en",
        chunk_words=16,
    )
    vecs = stored_values(url)
    return url, vecs


def test_default_direction_is_bolukbasi_pca_over_the_pairs_found(english):
    url, vecs = english
    found = [p for p in lexicon.bolukbasi().definitional_pairs if p[0] in vecs and p[1] in vecs]
    assert len(found) == 4
    with pytest.warns(ew.MissingWordsWarning, match="mother/father"):
        d = ed.direction(url)
    expected = sd.pca_direction(np.array([vecs[f] for f, _ in found]), np.array([vecs[m] for _, m in found]))
    np.testing.assert_allclose(d, expected, atol=1e-12)


def test_direct_and_indirect_bias_equal_the_stats_functions(english):
    url, vecs = english
    g = ed.direction(url, [("she", "he")], algorithm="pair")
    neutral = ["accountant", "architect", "nurse", "programmer", "librarian"]
    assert set(neutral) <= set(ed.neutral_professions()) and "actress" not in ed.neutral_professions()
    with pytest.warns(ew.MissingWordsWarning, match="skipped 298 word"):  # 303 neutral professions, 5 stored
        default = ed.direct_bias(url, g)
    m = np.array([vecs[w] for w in neutral])
    assert default == pytest.approx(sd.direct_bias(m, g, 1.0), rel=1e-13)
    # c = 1 is Bolukbasi et al.'s mean |<g, ŵ>|.
    assert default == pytest.approx(np.mean(np.abs(unit(m) @ g)), rel=1e-13)
    assert ed.direct_bias(url, g, ["nurse", "table"], c=0.5) == pytest.approx(
        sd.direct_bias(np.array([vecs["nurse"], vecs["table"]]), g, 0.5), rel=1e-13
    )
    with pytest.raises(MissingWordsError, match="ghost"):
        ed.direct_bias(url, g, ["ghost"])
    for normalized in (True, False):
        got = ed.indirect_bias(url, g, "nurse", "librarian", normalized=normalized)
        expected = sd.indirect_bias(vecs["nurse"], vecs["librarian"], g, normalized=normalized)
        assert got == pytest.approx(expected, rel=1e-12)
    w, v = unit(vecs["nurse"]), unit(vecs["librarian"])
    by_formula = (w @ g) * (v @ g) / (w @ v)
    assert ed.indirect_bias(url, g, "nurse", "librarian", normalized=False) == pytest.approx(by_formula, rel=1e-12)
    with pytest.raises(MissingWordsError, match="ghost"):
        ed.indirect_bias(url, g, "nurse", "ghost")


def test_association_is_inner_product_with_d_ab_over_n(tmp_path):
    """Hod 2018's directions on a store: u(w) of the scores graph = <ŵ, d_AB>/N with N = |A| = |B|."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(40)]
    url = make_store(tmp_path, "ident", words, rng.normal(size=(40, 9)), language="xx", chunk_words=16)
    vecs = stored_values(url)
    a, b = words[:4], words[4:8]
    u = scores(url, a, b, methods=()).u.values
    d = sd.d_ab(np.array([vecs[w] for w in a]), np.array([vecs[w] for w in b]))
    np.testing.assert_allclose(u, unit(np.array([vecs[w] for w in words])) @ d / 4, atol=2e-6)
