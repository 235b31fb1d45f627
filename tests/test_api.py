"""The public API's shape: data positional, everything else by keyword, one Resampling, one WordSets, one
location; calls in the older forms fail with a TypeError that shows the form they take."""

import inspect

import fsspec
import numpy as np
import pytest

import biasdask
from biasdask import Location, Resampling, Vocabulary, WordSets
from biasdask.lexicon import weat_test

#: public name -> its data parameters (positional); every other parameter is keyword-only
DATA = {
    "ingest": ["source", "output"],
    "open_embeddings": ["location"],
    "as_embeddings": ["vectors", "words"],
    "scores": ["emb", "a", "b"],
    "permutation_test": ["x", "y"],
    "permutation_tests": ["x", "y"],
    "full_vocabulary_test": ["emb", "a", "b"],
    "pairwise_vocabulary_test": ["emb", "other", "a", "b"],
    "attribute_sensitivity": ["emb", "a", "b"],
    "weat": ["emb", "sets"],
    "career_family_test": ["emb"],
    "align": ["source", "target", "dictionary", "output"],
    "debias": ["emb", "output"],
    "set_metric_test": ["emb", "sets"],
    "run": ["config"],
    "open_results": ["location"],
    "open_scores": ["location"],
    "top_words": ["results"],
    "get_client": [],
    "direction": ["emb", "pairs"],
    "direct_bias": ["emb", "direction", "neutral_words"],
    "indirect_bias": ["emb", "direction", "w", "v"],
    "frequency_profile": ["scores"],
    "load_config": ["path"],
    "meta_analysis": ["results"],
    "retest_reliability": ["results"],
    "agreement": ["results"],
    "pair_consistency": ["emb", "pairs"],
    "read_word_sets": ["place"],
}
TESTS = [
    "permutation_test",
    "permutation_tests",
    "full_vocabulary_test",
    "pairwise_vocabulary_test",
    "attribute_sensitivity",
    "weat",
    "career_family_test",
    "set_metric_test",
]


@pytest.mark.parametrize("name", sorted(DATA))
def test_data_positional_everything_else_keyword_only(name):
    params = inspect.signature(getattr(biasdask, name)).parameters.values()
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == DATA[name]
    assert "storage_options" not in [p.name for p in params]  # a place is one argument


def test_every_function_is_exported_and_listed():
    assert set(DATA) | {"Resampling", "Vocabulary", "WordSets", "Location"} == set(biasdask.__all__) - {"__version__"}


def test_every_public_name_is_in_the_api_reference():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text(encoding="utf-8")
    listed = {line.strip() for line in page.splitlines()} | {
        line.split("::", 1)[1].strip() for line in page.splitlines() if line.startswith(".. auto")
    }
    assert set(biasdask.__all__) <= listed, sorted(set(biasdask.__all__) - listed)


@pytest.mark.parametrize("name", TESTS)
def test_every_test_takes_the_resampling_options_and_nothing_of_them_apart(name):
    params = inspect.signature(getattr(biasdask, name)).parameters
    assert params["resampling"].kind is inspect.Parameter.KEYWORD_ONLY
    assert not {"n_permutations", "alternative", "seed", "batch_size", "placebo", "placebo_exclude"} & set(params)


@pytest.fixture(scope="module")
def emb():
    t = weat_test(7)
    words = [*t.x, *t.y, *t.a, *t.b, *(f"w{i}" for i in range(300))]
    return biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 10)), words, language="en")


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda e: biasdask.weat(e, ["a"], ["b"], ["c"], ["d"]), r"weat\(emb, WordSets\(x, y, a, b\)"),
        (lambda e: biasdask.weat(e, "weat7"), r"a test name or word set file goes in test=: weat\(emb, test='weat7'\)"),
        (lambda e: biasdask.weat(e, test="weat7", n_permutations=99), r"n_permutations= is now resampling=Resampling"),
        (lambda e: biasdask.weat(e, ["a", "b"]), r"the word sets go in one WordSets"),
        (
            lambda e: biasdask.full_vocabulary_test(e, ["he"], ["she"], "zipf", 999),
            r"full_vocabulary_test\(emb, a, b, method=\.\.\., resampling=Resampling\(\.\.\.\), vocabulary=Vocabulary",
        ),
        (
            lambda e: biasdask.full_vocabulary_test(e, ["he"], ["she"], seed=1, placebo=10),
            r"seed= is now resampling=Resampling\(seed=\.\.\.\); placebo= is now resampling=Resampling\(placebo",
        ),
        (lambda e: biasdask.permutation_test([1.0, 2], [3.0, 4], 99), r"resampling=Resampling"),
        (
            lambda e: biasdask.open_embeddings("memory://x.zarr", {"anon": True}),
            r"call it as open_embeddings\(location, language=\.\.\.\)",
        ),
        (
            lambda e: biasdask.open_results("memory://x.zarr", storage_options={}),
            r"storage_options= is now part of the location: Location\(url, storage_options\)",
        ),
        (
            lambda e: biasdask.set_metric_test(e, "rnd", ["a"], ["b"], ["c"]),
            r"set_metric_test\(emb, WordSets\(x=s, a=a, b=b\), metric=",
        ),
        (lambda e: biasdask.ingest("a.vec", "a.zarr", "en"), r"ingest\(source, output, language=\.\.\."),
        (lambda e: biasdask.scores(e, ["he"], ["she"], vocabulary={"max_words": 9}), r"must be a biasdask.Vocabulary"),
        (lambda e: biasdask.permutation_test([1.0], [2.0], resampling={"seed": 1}), r"must be a biasdask.Resampling"),
    ],
)
def test_an_old_call_form_is_a_type_error_that_shows_the_new_form(emb, call, says):
    with pytest.raises(TypeError, match=says):
        call(emb)


def test_the_new_forms_give_what_the_old_ones_did(emb):
    """The options travel unchanged: WordSets(x, y, a, b) is the lexicon test it copies; Resampling's
    seed reproduces; a Location and an fsspec mapper open the same store as its URL."""
    t = weat_test(7)
    options = Resampling(n_permutations=199, seed=4)
    by_name = biasdask.weat(emb, test="weat7", resampling=options, progress=False)
    by_sets = biasdask.weat(emb, WordSets(t.x, t.y, t.a, t.b, test="weat7"), resampling=options, progress=False)
    assert (by_name.statistic, by_name.p_value, by_name.test) == (by_sets.statistic, by_sets.p_value, by_sets.test)
    url = "memory://api/loc/en.zarr"
    with fsspec.open("memory://api/loc/en.vec", "w") as f:
        f.write("2 3\nhe 0.1 0.2 0.3\nshe 0.3 0.2 0.1\n")
    biasdask.ingest(Location("memory://api/loc/en.vec"), url, language="en", progress=False)
    for place in (url, Location(url, {}), fsspec.get_mapper(url)):
        assert biasdask.open_embeddings(place, language="en")["word"].values.tolist() == ["he", "she"]


@pytest.mark.parametrize(
    "bad, error",
    [
        (dict(n_permutations=0), ValueError),
        (dict(n_permutations=9.5), TypeError),
        (dict(alternative="bigger"), ValueError),
        (dict(seed=-1), ValueError),
        (dict(batch_size=0), ValueError),
        (dict(placebo=-2), ValueError),
        (dict(placebo_exclude="he"), TypeError),
    ],
)
def test_resampling_checks_its_settings_when_made(bad, error):
    with pytest.raises(error):
        Resampling(**bad)


@pytest.mark.parametrize(
    "bad, error",
    [
        (dict(max_words=0), ValueError),
        (dict(max_words=9.5), TypeError),
        (dict(exclude_attributes="yes"), TypeError),
        (dict(exclude_words="gender_neutral"), ValueError),
        (dict(exclude_words=["he", 3]), TypeError),
    ],
)
def test_vocabulary_checks_its_settings_when_made(bad, error):
    with pytest.raises(error):
        Vocabulary(**bad)


def _deprecated(call, says: str):
    """What ``call()`` returns, checking that it warns once, naming the new spelling ``says``, at the
    caller's line (where the old spelling is to be changed)."""
    with pytest.warns(DeprecationWarning, match=says) as caught:
        out = call()
    warned = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(warned) == 1 and warned[0].filename == __file__
    return out


def test_the_spellings_of_the_last_release_warn_and_give_what_the_new_ones_give(emb):
    """For one release the old keywords still work: each names its new spelling in a DeprecationWarning."""
    a, b = ["he", "man"], ["she", "woman"]
    options = Resampling(n_permutations=199, seed=4)
    new = biasdask.scores(emb, a, b, methods=["zipf"], vocabulary=Vocabulary(max_words=200, exclude_attributes=True))
    old = _deprecated(
        lambda: biasdask.scores(emb, a, b, methods=["zipf"], max_words=200, exclude_attributes=True),
        r"max_words=, exclude_attributes= deprecated; use vocabulary=Vocabulary\(max_words=\.\.\., exclude_attributes",
    )
    np.testing.assert_array_equal(old["t"].values, new["t"].values)
    res = biasdask.full_vocabulary_test(emb, a, b, resampling=options)
    assert _deprecated(lambda: res.pvalue, r"\.pvalue is deprecated; use \.p_value") == res.p_value
    pairwise = biasdask.pairwise_vocabulary_test(emb, emb, a, b, resampling=options)
    via_other = _deprecated(
        lambda: biasdask.full_vocabulary_test(emb, a, b, other=emb, resampling=options),
        r"use pairwise_vocabulary_test\(emb, other, a, b",
    )
    assert (via_other.statistic, via_other.p_value) == (pairwise.statistic, pairwise.p_value)
    x = np.stack([np.arange(1.0, 31.0), np.arange(30.0, 0.0, -1.0)])
    rows = _deprecated(lambda: biasdask.permutation_test(x, 30, resampling=options), r"use permutation_tests\(x, y")
    assert [r.p_value for r in rows] == [r.p_value for r in biasdask.permutation_tests(x, 30, resampling=options)]
    assert biasdask.permutation_test(x[0], 30, resampling=options).p_value == rows[0].p_value
    g = _deprecated(
        lambda: biasdask.direction(emb, [("he", "she")], method="pair"), r"method= is deprecated; use algorithm="
    )
    np.testing.assert_array_equal(g, biasdask.direction(emb, [("he", "she")], algorithm="pair"))


def test_the_renamed_options_of_a_meta_analysis_and_its_results_warn():
    from biasdask.stats.meta import random_effects

    effects, variances = [0.9, 1.3, 0.4, 1.1], [0.09, 0.12, 0.06, 0.16]
    new = random_effects(effects, variances, estimator="REML", ci_level=0.9)
    old = _deprecated(lambda: random_effects(effects, variances, method="REML", ci_level=0.9), "use estimator=")
    assert (old.estimate, old.tau2, old.ci_high) == (new.estimate, new.tau2, new.ci_high)
    assert _deprecated(lambda: new.level, r"\.level is deprecated; use \.ci_level") == new.ci_level == 0.9
    assert _deprecated(lambda: new.method, r"\.method is deprecated; use \.estimator") == "REML"


def test_the_renamed_options_of_a_bootstrap_interval_and_its_results_warn():
    from biasdask.stats.bootstrap import bootstrap_effect_size

    x, y = [0.9, 1.4, 0.2, 1.1, 0.8], [0.1, -0.3, 0.4, 0.0, -0.2]
    new = bootstrap_effect_size(x, y, seed=1, n_resamples=199, ci_level=0.9, ci_method="percentile")
    old = _deprecated(
        lambda: bootstrap_effect_size(x, y, seed=1, n_resamples=199, level=0.9, ci_method="percentile"),
        r"level= is deprecated; use ci_level=",
    )
    assert (old.ci_low, old.ci_high, old.ci_level) == (new.ci_low, new.ci_high, 0.9)
    assert _deprecated(lambda: new.level, r"\.level is deprecated; use \.ci_level") == 0.9
    assert _deprecated(lambda: new.method, r"\.method is deprecated; use \.ci_method") == "percentile"


def test_a_location_never_prints_its_secrets():
    loc = Location("s3://user:pw@bucket/x.zarr?X-Amz-Signature=abc", {"secret": "s3cr3t"})
    assert "s3cr3t" not in repr(loc) and "pw" not in repr(loc) and "abc" not in str(loc)
    with pytest.raises(TypeError, match="storage_options must be a mapping"):
        Location("s3://b/x", "anon")


def test_word_sets_with_a_string_for_a_list_are_refused_by_the_test(emb):
    with pytest.raises(TypeError, match=r"""^x: expected a list of words, got the string 'math': pass \["math"\]$"""):
        biasdask.weat(emb, WordSets("math", ["art"], ["he"], ["she"]))
