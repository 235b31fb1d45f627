"""Internal consistency from the API: the attribute words of WEAT 7 (GloVe) and of the career/family test
(fastText Common Crawl, Lewis & Lupyan 2020's IAT words) on the real vectors, against pingouin's α,
every split enumerated here and a leave-one-out written here; base pairs over a whole vocabulary against
α computed in numpy from the vectors, bit for bit however the store is chunked."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import biasdask
from biasdask.lexicon import bolukbasi, iat_categories, iat_words
from biasdask.stats.weat import career_family_effect, career_family_items
from tests.stores import make_store, read_text_vectors, unit

pg = pytest.importorskip("pingouin")
CAREER = ["executive", "management", "professional", "corporation", "salary", "office", "business", "career"]
FAMILY = ["home", "parents", "children", "family", "cousins", "marriage", "wedding", "relatives"]
MALE = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
FEMALE = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]


def weat_d(s, n_x):
    return (s[:n_x].mean() - s[n_x:].mean()) / s.std(ddof=1)


def spearman_brown_of_every_split(cos_a, cos_b):
    """The Spearman-Brown corrected mean correlation of the halves' associations over every split."""
    n_a, n_b = cos_a.shape[1], cos_b.shape[1]
    rs = []
    for a1, b1 in itertools.product(
        itertools.combinations(range(n_a), n_a // 2), itertools.combinations(range(n_b), n_b // 2)
    ):
        a2, b2 = [j for j in range(n_a) if j not in a1], [j for j in range(n_b) if j not in b1]
        s1 = cos_a[:, list(a1)].mean(axis=1) - cos_b[:, list(b1)].mean(axis=1)
        s2 = cos_a[:, a2].mean(axis=1) - cos_b[:, b2].mean(axis=1)
        rs.append(np.corrcoef(s1, s2)[0, 1])
    r = np.mean(rs)
    return 2 * r / (1 + r), len(rs)


def left_out_d(cos_a, cos_b, n_x):
    """d without each attribute word (A's, then B's), recomputed here."""
    out = []
    for j in range(cos_a.shape[1] + cos_b.shape[1]):
        a = np.delete(cos_a, j, axis=1) if j < cos_a.shape[1] else cos_a
        b = np.delete(cos_b, j - cos_a.shape[1], axis=1) if j >= cos_a.shape[1] else cos_b
        out.append(weat_d(a.mean(axis=1) - b.mean(axis=1), n_x))
    return np.array(out)


def check_against_oracles(consistency, cos_a, cos_b, n_x, words):
    items = np.hstack([cos_a, -cos_b])
    assert consistency.alpha.alpha == pytest.approx(pg.cronbach_alpha(pd.DataFrame(items))[0], abs=1e-10)
    reliability, n_splits = spearman_brown_of_every_split(cos_a, cos_b)
    assert consistency.split_half.exact and consistency.split_half.n_splits == n_splits
    assert consistency.split_half.reliability == pytest.approx(reliability, abs=1e-10)
    loo = consistency.leave_one_out
    brute = left_out_d(cos_a, cos_b, n_x)
    assert np.allclose(loo.values, brute, rtol=0, atol=1e-10)
    assert (loo.low, loo.high) == pytest.approx((brute.min(), brute.max()), abs=1e-10)
    assert loo.word == words[int(np.argmax(np.abs(brute - loo.statistic)))]


def test_weat7_on_glove_reports_the_consistency_of_its_attribute_words(glove_store, glove_text):
    res = biasdask.weat(glove_store, test="weat7", resampling=biasdask.Resampling(n_permutations=99, seed=3))
    c = res.coverage
    targets = unit(np.array([glove_text[w] for w in (*c["x"].found, *c["y"].found)]))
    cos_a = targets @ unit(np.array([glove_text[w] for w in c["a"].found])).T
    cos_b = targets @ unit(np.array([glove_text[w] for w in c["b"].found])).T
    check_against_oracles(res.consistency, cos_a, cos_b, len(c["x"].found), [*c["a"].found, *c["b"].found])
    assert res.consistency.leave_one_out.statistic == pytest.approx(res.effect_size, abs=1e-12)
    assert round(res.effect_size, 2) == pytest.approx(1.06, abs=0.011)  # Caliskan et al. 2017: 1.06


def test_career_family_on_the_english_iat_vectors(iat_store, shared_data):
    vectors = read_text_vectors(shared_data / "iat" / "cc" / "en.vec")
    res = biasdask.career_family_test(
        iat_store("en"), language="en", resampling=biasdask.Resampling(n_permutations=99, seed=5)
    )
    targets = unit(np.array([vectors[w] for w in MALE + FEMALE]))
    cos_a = targets @ unit(np.array([vectors[w] for w in CAREER])).T
    cos_b = targets @ unit(np.array([vectors[w] for w in FAMILY])).T
    check_against_oracles(res.consistency, cos_a, cos_b, 8, CAREER + FAMILY)
    published = pd.read_csv(shared_data / "iat" / "published_effect_sizes.csv").set_index("language_code")
    assert res.consistency.leave_one_out.statistic == pytest.approx(published.loc["en", "lang_es_wiki_cc"], abs=1e-9)


@pytest.mark.parametrize("language", ["de", "es"])
def test_career_family_with_grammatical_gender_leaves_out_the_word_in_both_runs(language, iat_store, shared_data):
    res = biasdask.career_family_test(iat_store(language), resampling=biasdask.Resampling(n_permutations=99, seed=5))
    published = pd.read_csv(shared_data / "iat" / "published_effect_sizes.csv").set_index("language_code")
    loo = res.consistency.leave_one_out
    assert loo.statistic == pytest.approx(published.loc[language, "lang_es_wiki_cc"], abs=1e-9)
    entries = iat_words("cc", language)
    vectors = read_text_vectors(shared_data / "iat" / "cc" / f"{language}.vec")
    found = career_family_items(entries, vectors, order=iat_categories())
    effect = career_family_effect(entries, vectors)
    assert effect.grammatical_gender
    # each row's items average to its word's s (the masculine run's for male words, the feminine run's
    # for female ones) when every attribute word is an item of both runs
    in_entry_order = career_family_items(entries, vectors)  # rows in the order career_family_effect takes
    n_a = len(found.words_a)
    s = in_entry_order.items[:, :n_a].mean(axis=1) + in_entry_order.items[:, n_a:].mean(axis=1)
    if len(found.words_a) == len(effect.runs[0].words["career"]) and len(found.words_b) == len(
        effect.runs[0].words["family"]
    ):
        assert np.allclose(s, np.r_[effect.s_x, effect.s_y], rtol=0, atol=1e-12)
    # d without a career word: every translation of it left out, in both runs
    word = found.words_a[0]
    kept = [e for e in entries if not (e.category == "career" and e.word == word)]
    assert loo.values[0] == career_family_effect(kept, vectors).effect_size
    assert res.consistency.alpha.alpha == pytest.approx(pg.cronbach_alpha(pd.DataFrame(found.items))[0], abs=1e-10)


# --------------------------------------------------------------------------------------------------
# Base pairs over a whole vocabulary


def pair_vocabulary(n_filler=1500, dim=24, seed=11):
    """Words: Bolukbasi et al.'s 20 definitional words, then filler; a planted gender axis."""
    pairs = [(male, female) for female, male in bolukbasi().definitional_pairs]
    rng = np.random.default_rng(seed)
    axis = unit(rng.normal(size=dim))
    words = [w for pair in pairs for w in pair] + [f"w{i:05d}" for i in range(n_filler)]
    vectors = rng.normal(size=(len(words), dim))
    vectors[: 2 * len(pairs) : 2] += 2.0 * axis
    vectors[1 : 2 * len(pairs) : 2] -= 2.0 * axis
    vectors[2 * len(pairs) :] += rng.normal(scale=0.8, size=(n_filler, 1)) * axis
    return pairs, words, vectors.astype(np.float32)


def numpy_pair_items(pairs, words, vectors):
    """Item j of word w: cos(w, a_j) - cos(w, b_j), in float64 from the vectors."""
    v = unit(vectors.astype(np.float64))
    at = {w: i for i, w in enumerate(words)}
    return np.column_stack([v @ v[at[a]] - v @ v[at[b]] for a, b in pairs])


def numpy_alpha(x):
    k = x.shape[1]
    return k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / x.sum(axis=1).var(ddof=1))


def bits(consistency):
    """Every number of an InternalConsistency, as hexadecimal floats."""
    out = {}
    for part in ("alpha", "split_half", "leave_one_out"):
        for name, value in vars(getattr(consistency, part)).items():
            if isinstance(value, (float, np.ndarray)):
                out[f"{part}.{name}"] = [float(v).hex() for v in np.ravel(value)]
    return out


def test_pair_consistency_over_a_vocabulary_is_numpys_and_the_same_bits_however_chunked(tmp_path):
    pairs, words, vectors = pair_vocabulary()
    few = make_store(tmp_path, "few", words, vectors, chunk_words=700)
    many = make_store(tmp_path, "many", words, vectors, chunk_words=130)
    res = biasdask.pair_consistency(few, pairs, seed=4)
    items = numpy_pair_items(pairs, words, vectors)
    assert res.alpha.k == 10 and res.alpha.n == len(words)
    assert res.alpha.alpha == pytest.approx(numpy_alpha(items), abs=1e-6)  # items are float32 u's
    assert res.alpha.alpha == pytest.approx(pg.cronbach_alpha(pd.DataFrame(items))[0], abs=1e-6)
    assert res.split_half.exact and res.split_half.n_splits == 252
    other = biasdask.pair_consistency(many, pairs, seed=4)
    assert bits(other) == bits(res)  # every number, every bit
    # the items of each pair are the one-pair test's u
    u = biasdask.scores(few, [pairs[3][0]], [pairs[3][1]], methods=["uniform"])["u"].values.astype(np.float64)
    assert np.allclose(u, items[:, 3], rtol=0, atol=1e-6)


def test_pair_consistency_refuses_bad_pairs(small_dataarray):
    with pytest.raises(ValueError, match="at least 2 pairs"):
        biasdask.pair_consistency(small_dataarray, [("he", "she")], seed=0)
    with pytest.raises(ValueError, match=r"pairs\[1\]"):
        biasdask.pair_consistency(small_dataarray, [("he", "she"), ("male",)], seed=0)
    with pytest.raises(ValueError, match="two different words"):
        biasdask.pair_consistency(small_dataarray, [("he", "she"), ("male", "male")], seed=0)
    with pytest.raises(ValueError, match="more than one pair"):
        biasdask.pair_consistency(small_dataarray, [("he", "she"), ("he", "female")], seed=0)
    with pytest.raises(ValueError, match="unknown association"):
        biasdask.pair_consistency(small_dataarray, [("he", "she"), ("male", "female")], seed=0, association="dot")
    with pytest.raises(ValueError, match="2 pairs found"):
        biasdask.pair_consistency(small_dataarray, [("he", "she"), ("zzz", "female")], seed=0)
    with pytest.raises(TypeError, match="list of word pairs"):
        biasdask.pair_consistency(small_dataarray, "he she", seed=0)
