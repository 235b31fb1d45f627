import pytest
import yaml

from biasdask.config import load_config, parse_config
from biasdask.errors import ConfigError


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
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad)
    good = tmp_path / "study.yaml"
    good.write_text(yaml.safe_dump(_base()))
    assert load_config(good, output="memory://other.zarr").output == "memory://other.zarr"
