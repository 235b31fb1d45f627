"""A str where a list of words is expected is refused, with the fix, by every public function."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import yaml

import biasdask
from biasdask import Resampling, WordSets
from biasdask._calls import list_syntax, pair_list, word_list
from biasdask.engine import debias as ed
from biasdask.engine import grammatical as eg
from biasdask.engine.frequency import frequency_profile
from biasdask.errors import BiasdaskTypeError, ConfigError
from biasdask.study.config import parse_config

WORDS = ["he", "she", "him", "her", "man", "woman", "h", "e", "s", "math", "art", "x1", "x2", "y1", "y2"]


@pytest.fixture(scope="module")
def emb():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((len(WORDS), 6)).astype(np.float32)
    return xr.DataArray(vectors, dims=("word", "dim"), coords={"word": WORDS}, attrs={"language": "en"})


def test_weat_with_strings_as_attribute_sets_is_refused_with_the_fix(emb):
    # before: the strings were read as the words h, e and s, h, e, which this vocabulary has
    with pytest.raises(
        BiasdaskTypeError, match=r"""^a: expected a list of words, got the string 'he': pass \["he"\]$"""
    ):
        biasdask.weat(emb, WordSets(["x1", "x2"], ["y1", "y2"], "he", "she"), resampling=Resampling(n_permutations=9))
    with pytest.raises(TypeError, match=r"""^x: expected a list of words, got the string 'he': pass \["he"\]$"""):
        biasdask.weat(emb, WordSets("he", ["she"], ["math"], ["art"]))


CALLS = {
    "full_vocabulary_test a": lambda e: biasdask.full_vocabulary_test(e, "he", ["she"]),
    "pairwise_vocabulary_test other_b": lambda e: biasdask.pairwise_vocabulary_test(
        e, e, ["he"], ["she"], other_a=["he"], other_b="she"
    ),
    "scores b": lambda e: biasdask.scores(e, ["he"], "she"),
    "attribute_sensitivity a": lambda e: biasdask.attribute_sensitivity(e, "he", ["she"], progress=False),
    "set_metric_test x": lambda e: biasdask.set_metric_test(e, WordSets("math", (), ["he"], ["she"]), metric="rnd"),
    "weat y": lambda e: biasdask.weat(e, WordSets(["x1"], "y1", ["he"], ["she"])),
    "cross_lingual_weat b": lambda e: biasdask.engine.weat.cross_lingual_weat(
        e, e, WordSets(["x1"], ["y1"], ["he"], "she")
    ),
    "direct_bias neutral_words": lambda e: biasdask.direct_bias(e, np.ones(6) / 6**0.5, "math"),
    "frequency_profile a": lambda e: frequency_profile(e, a="he", b=["she"]),
    "mweat_test b": lambda e: eg.mweat_test(e, [("he", "she"), ("him", "her")], ["man"], "woman"),
    "debias project a": lambda e: biasdask.debias(
        e, "memory://words-test/x.zarr", algorithm="project", a="he", b=["she"]
    ),
    "debias gender_specific": lambda e: biasdask.debias(
        e, "memory://words-test/y.zarr", gender_specific="he", definitional_pairs=[("she", "he")]
    ),
    "gender_specific_words": lambda e: ed.gender_specific_words("he"),
    "xweat_gender_pairs words": lambda e: eg.xweat_gender_pairs("es", "doctor"),
}


@pytest.mark.parametrize("call", CALLS, ids=list(CALLS))
def test_every_word_list_argument_refuses_a_string(emb, call):
    name = call.split()[-1] if " " in call else "gender_specific"
    with pytest.raises(
        BiasdaskTypeError, match=rf"^{name}: expected a list of words, got the string '[a-z0-9]+': pass \["
    ):
        CALLS[call](emb)


PAIR_CALLS = {
    "direction pairs": lambda e: biasdask.direction(e, ("she", "he")),
    "bad_test targets": lambda e: eg.bad_test(e, ("he", "she"), [("man", "woman")]),
    "mweat_test targets": lambda e: eg.mweat_test(e, ("he", "she"), ["man"], ["woman"]),
    "debias equalize_pairs": lambda e: biasdask.debias(
        e, "memory://words-test/z.zarr", equalize_pairs=("man", "woman"), definitional_pairs=[("she", "he")]
    ),
    "debias definitional_pairs": lambda e: biasdask.debias(
        e, "memory://words-test/w.zarr", definitional_pairs=("she", "he")
    ),
}


@pytest.mark.parametrize("call", PAIR_CALLS, ids=list(PAIR_CALLS))
def test_one_pair_where_a_list_of_pairs_is_expected_is_refused(emb, call):
    # before: tuple("she") made the "pair" ('s', 'h', 'e'), or ('h', 'e') a pair of letters
    name = call.split()[-1]
    with pytest.raises(
        BiasdaskTypeError, match=rf"^{name}: expected a list of pairs, got one pair \('[a-z]+', '[a-z]+'\): pass \[\("
    ):
        PAIR_CALLS[call](emb)


def test_direction_takes_one_word_per_end_where_documented(emb):
    g = biasdask.direction(emb, a="she", b="he", algorithm="pair")
    np.testing.assert_allclose(g, biasdask.direction(emb, a=["she"], b=["he"], algorithm="pair"))


def test_the_fix_is_the_list_the_user_meant_in_python_and_in_yaml():
    assert list_syntax("he") == '["he"]' and list_syntax("he, him ,his") == '["he", "him", "his"]'
    assert list_syntax("mâle") == '["mâle"]'
    for text in ("he", "he, him", "no", "1", "null", "on: off", "mâle"):
        meant = [w.strip() for w in text.split(",")]
        assert yaml.safe_load(list_syntax(text, "yaml")) == meant  # YAML reads the fix back as those words
    assert list_syntax("he, him", "yaml") == "[he, him]" and list_syntax("no", "yaml") == "['no']"
    assert word_list(("he", "she"), "a") == ["he", "she"] and word_list("he", "a", one_word=True) == ["he"]
    assert pair_list([["she", "he"]], "pairs") == [("she", "he")]
    with pytest.raises(BiasdaskTypeError, match=r"pairs: expected pairs of two words, got \('a', 'b', 'c'\)"):
        pair_list([("a", "b", "c")], "pairs")
    with pytest.raises(BiasdaskTypeError, match="a: expected a list of words, got None"):
        word_list(None, "a")


def test_a_study_file_gets_the_yaml_fix():
    for text, fix in (("male", "[male]"), ("male, man", "[male, man]"), ("no", "['no']")):
        with pytest.raises(
            ConfigError, match=rf"^languages\.en\.a: expected a list of words, got the string '{text}': write \{fix}$"
        ):
            parse_config({"output": "r.zarr", "languages": {"en": {"store": "en.zarr", "a": text, "b": ["female"]}}})
