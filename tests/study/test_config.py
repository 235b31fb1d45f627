import pytest
import yaml

from biasdask.errors import ConfigError
from biasdask.study.config import load_config, parse_config


def _base(**kw):
    raw = {"output": "memory://r.zarr", "embeddings": "memory://emb/{language}.zarr", "languages": ["en", "de"]}
    raw.update(kw)
    return raw


def test_defaults_from_catalog():
    cfg = parse_config(_base())
    en, de = cfg.languages
    assert (en.code, en.store, en.a, en.b) == ("en", "memory://emb/en.zarr", ("male",), ("female",))
    assert (de.a, de.b) == (("männlich",), ("weiblich",))
    assert cfg.methods == ("uniform", "zipf") and cfg.tests == ("gender",) and cfg.alternative == "two-sided"


def test_mapping_form_and_digest():
    cfg = parse_config(_base(languages={"en": {"store": "s3://b/en.zarr", "a": ["man"], "b": ["woman"]}}))
    assert cfg.languages[0].store == "s3://b/en.zarr" and cfg.languages[0].a == ("man",)
    same_but_elsewhere = parse_config(
        _base(languages={"en": {"store": "s3://b/en.zarr", "a": ["man"], "b": ["woman"]}}, output="file:///x")
    )
    assert cfg.digest() == same_but_elsewhere.digest()
    other_seed = parse_config(
        _base(languages={"en": {"store": "s3://b/en.zarr", "a": ["man"], "b": ["woman"]}}, seed=5)
    )
    assert cfg.digest() != other_seed.digest()


@pytest.mark.parametrize(
    "change, key",
    [
        ({"methods": ["uniform", "bogus"]}, "methods"),
        ({"tests": []}, "tests"),
        ({"n_permutations": 0}, "n_permutations"),
        ({"n_permutations": True}, "n_permutations"),
        ({"seed": -1}, "seed"),
        ({"alternative": "bigger"}, "alternative"),
        ({"similarity": "dot"}, "similarity"),
        ({"languages": ["en", "../etc"]}, r"languages\.\.\./etc"),
        ({"languages": ["xx"]}, r"languages\.xx"),
        ({"languages": {"en": {"a": []}}}, r"languages\.en\.a"),
        ({"languages": {"en": {"stor": "x"}}}, r"languages\.en"),
        ({"embeddings": "s3://no/template"}, "embeddings"),
        ({"storage_options": {"key": "${BIASDASK_TEST_UNSET_VAR}"}}, r"storage_options\.key"),
        ({"colour": "blue"}, "unknown key"),
        ({"output": None}, "output"),
    ],
)
def test_errors_name_the_key(change, key):
    with pytest.raises(ConfigError, match=key):
        parse_config(_base(**change))


def test_env_references_resolved_but_not_in_canonical(monkeypatch):
    monkeypatch.setenv("BIASDASK_TEST_SECRET", "s3cr3t")
    cfg = parse_config(_base(storage_options={"secret": "${BIASDASK_TEST_SECRET}", "anon": False}))
    assert cfg.resolved_storage_options() == {"secret": "s3cr3t", "anon": False}
    assert "s3cr3t" not in cfg.canonical_yaml() and "storage_options" not in cfg.canonical_yaml()


def test_load_config_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such study file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("output: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML") as info:
        load_config(bad)
    assert "quote" not in str(info.value)
    bad.write_text("output: r.zarr\nembeddings:\n  cc: {store: emb/cc/{language}.zarr}\n")
    with pytest.raises(ConfigError, match=r"at line 3, column \d+: .*quote a value holding \{language\}"):
        load_config(bad)
    good = tmp_path / "study.yaml"
    good.write_text(yaml.safe_dump(_base()))
    assert load_config(good, output="memory://other.zarr").output == "memory://other.zarr"


def test_attribute_sets_for_all_and_per_language():
    from biasdask.lexicon import iat_attribute_terms

    cfg = parse_config(
        _base(
            attributes="iat",
            languages={
                "fr": {},
                "de": {"attributes": "catalog"},
                "en": {"attributes": {"a": ["man"], "b": ["woman"]}},
                "es": {"a": ["hombre"]},
            },
        )
    )
    fr, de, en, es = cfg.languages
    assert (fr.attribute_set, fr.a, fr.b) == ("iat", *iat_attribute_terms("cc", "fr"))
    assert [t.label for t in fr.a] == ["male", "man", "boy", "brother", "he", "him", "his", "son"]
    assert [t.label for t in fr.b] == ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]
    assert (de.attribute_set, de.a, de.b) == ("catalog", ("männlich",), ("weiblich",))
    assert (en.attribute_set, en.a, en.b) == ("explicit", ("man",), ("woman",))
    assert (es.attribute_set, es.a) == ("explicit", ("hombre",))
    text = cfg.canonical_yaml()
    assert "attributes: iat" in text and "term: man" in text
    assert (
        parse_config(_base(attributes="iat", iat_model="subt")).digest()
        != parse_config(_base(attributes="iat")).digest()
    )


def test_exclude_words_by_name_and_dedupe():
    cfg = parse_config(_base(exclude_words="gender_specific", dedupe_vectors=True))
    assert cfg.exclude_words == "gender_specific" and cfg.dedupe_vectors is True
    assert "exclude_words: gender_specific" in cfg.canonical_yaml()
    assert parse_config(_base()).dedupe_vectors is False


@pytest.mark.parametrize(
    "change, key",
    [
        ({"attributes": "wefat"}, "attributes"),
        ({"attributes": {"a": ["x"]}}, "attributes"),
        ({"languages": {"yo": {"attributes": "iat"}}}, r"languages\.yo: attributes iat"),
        ({"languages": {"en": {"attributes": "iat", "a": ["man"]}}}, r"languages\.en: give either"),
        ({"exclude_words": "gendered"}, "exclude_words"),
        ({"dedupe_vectors": "yes"}, "dedupe_vectors"),
    ],
)
def test_new_option_errors_name_the_key(change, key):
    with pytest.raises(ConfigError, match=key):
        parse_config(_base(**change))


def test_associations_expand_the_full_vocabulary_tests_and_keep_old_hashes():
    from biasdask.io.results import split_label

    plain = parse_config(_base(tests=["gender", "weat7"]))
    assert plain.associations == ("cosine",) and plain.test_labels() == ("gender", "weat7")
    assert "associations" not in plain.canonical()  # a study without the option keeps its old hash
    cfg = parse_config(_base(tests=["gender", "context", "weat7"], associations=["cosine", "ripa", "semaxis"]))
    assert cfg.test_labels() == (
        "gender",
        "gender.ripa",
        "gender.semaxis",
        "context",
        "context.ripa",
        "context.semaxis",
        "weat7",
    )
    assert cfg.canonical()["associations"] == ["cosine", "ripa", "semaxis"]
    assert [split_label(t) for t in ("gender", "gender.ripa", "weat7")] == [
        ("gender", "cosine"),
        ("gender", "ripa"),
        ("weat7", "none"),
    ]
    assert parse_config(_base(associations=["euclidean"])).test_labels() == ("gender.euclidean",)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"associations": ["dot"]}, "associations"),
        ({"associations": []}, "associations"),
        (
            {"associations": ["ripa"], "languages": {"en": {"store": "memory://e", "a": ["he", "man"], "b": ["she"]}}},
            "ripa pairs .* length in language.* en",
        ),
    ],
)
def test_association_errors_name_the_key(change, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(_base(**change))


def test_placebo_word_rule_and_rank_window_are_study_keys():
    cfg = parse_config(_base())
    match = cfg.placebo_match
    assert (match.words, match.rank_ratio, match.min_candidates) == ("letters", 2.0, 50)
    placebo = yaml.safe_load(cfg.canonical_yaml())["placebo"]
    assert placebo == {
        "n": 1000,
        "exclude": [],
        "match": "rank",
        "words": "letters",
        "rank_ratio": 2.0,
        "min_candidates": 50,
    }
    other = parse_config(_base(placebo={"words": "any", "rank_ratio": 1.5, "min_candidates": 20}))
    assert (other.placebo_match.words, other.placebo_match.rank_ratio, other.placebo_match.min_candidates) == (
        "any",
        1.5,
        20,
    )
    assert other.digest() != cfg.digest()  # other placebo words: another study


@pytest.mark.parametrize(
    "placebo, key",
    [
        ({"words": "tokens"}, r"placebo\.words must be one of letters, any"),
        ({"rank_ratio": 0.5}, r"placebo\.rank_ratio"),
        ({"rank_ratio": "2"}, r"placebo\.rank_ratio"),
        ({"min_candidates": 0}, r"placebo\.min_candidates"),
        ({"window": 50}, r"unknown key\(s\) \['window'\]"),
    ],
)
def test_placebo_errors_name_the_key(placebo, key):
    with pytest.raises(ConfigError, match=key):
        parse_config(_base(placebo=placebo))
