"""Word sets by file or URL in WEATHub's layout (Mukherjee et al. 2023): the reader, ``weat(test=...)`` and
the study's ``word_sets``. The files are written here, in WEATHub's layout, and served by ``http.server`` on
127.0.0.1; the oracle is a plain numpy WEAT on the same words and a brute-force enumeration of the splits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import biasdask
from biasdask import Location, Resampling, WordSets
from biasdask.errors import BiasdaskOSError, ConfigError, InputFormatError, StoreConflictError
from biasdask.study.config import parse_config
from tests.stores import brute_force_count, make_store, stored_values, unit

#: each language's WEAT-7-like sets: X, Y, A, B (a phrase and a repeated word, as WEATHub's files have)
SETS = {
    "en": (
        ["math", "algebra", "geometry", "calculus", "equations", "numbers", "pure math"],
        ["poetry", "art", "dance", "literature", "novel", "symphony"],
        ["male", "man", "boy", "brother", "he", "him", "him"],
        ["female", "woman", "girl", "sister", "she", "her"],
    ),
    "de": (
        ["mathe", "algebra", "geometrie", "analysis", "gleichungen", "größe"],
        ["poesie", "kunst", "tanz", "literatur", "roman", "sinfonie"],
        ["männlich", "mann", "junge", "bruder", "er", "ihm"],
        ["weiblich", "frau", "mädchen", "schwester", "sie", "ihr"],
    ),
}
NAMES = ("Math", "Arts", "MaleTerms", "FemaleTerms")


def weathub_json(x, y, a, b, names=NAMES) -> str:
    """One test's sets in WEATHub's layout."""
    keys = ("targ1", "targ2", "attr1", "attr2")
    return json.dumps(
        {key: {"category": name, "examples": list(words)} for key, name, words in zip(keys, names, (x, y, a, b))},
        indent=4,
        ensure_ascii=False,
    )


def write_weathub(root: Path, layout: dict[tuple[str, str], tuple]) -> None:
    """``root/<language>_all/<test>.json`` for each (language, test) of ``layout``."""
    for (code, test), sets in layout.items():
        (root / f"{code}_all").mkdir(parents=True, exist_ok=True)
        (root / f"{code}_all" / f"{test}.json").write_text(weathub_json(*sets), encoding="utf-8")


def numpy_weat(vectors: dict[str, np.ndarray], x, y, a, b):
    """A plain WEAT (Caliskan et al. 2017) on the words of each set found in ``vectors``, each counted once:
    the scores s(w, A, B) of X and Y, the statistic and the effect size (sample SD)."""

    def found(words):
        return unit(np.array([vectors[w] for w in dict.fromkeys(words) if w in vectors]))

    xs, ys, a_, b_ = found(x), found(y), found(a), found(b)

    def s(w):
        return (w @ a_.T).mean(axis=1) - (w @ b_.T).mean(axis=1)

    sx, sy = s(xs), s(ys)
    return sx, sy, sx.sum() - sy.sum(), (sx.mean() - sy.mean()) / np.concatenate([sx, sy]).std(ddof=1)


def check_against_oracle(result, vectors, sets):
    sx, sy, statistic, d = numpy_weat(vectors, *sets)
    np.testing.assert_allclose(result.statistic, statistic, rtol=1e-5)
    np.testing.assert_allclose(result.effect_size, d, rtol=1e-5)
    hits, total = brute_force_count(np.concatenate([sx, sy]), sx.size, statistic)
    assert result.p_value == pytest.approx(hits / total, abs=1e-12)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A store per language (en, de, and fr, which has no file) holding its sets' words and fillers."""
    tmp = tmp_path_factory.mktemp("emb")
    rng = np.random.default_rng(5)
    out = {}
    for code in ("en", "de", "fr"):
        words = [w for sets in SETS.get(code, ()) for w in sets if " " not in w]
        words = list(dict.fromkeys(words)) + [f"{code}filler{i}" for i in range(60)]
        out[code] = make_store(tmp, code, words, rng.standard_normal((len(words), 12)), language=code)
    return out


@pytest.fixture()
def served(http_server):
    """WEATHub's layout on the loopback server: weat7 in en and de, weat1 in en only."""
    root, base = http_server
    en = SETS["en"]
    write_weathub(
        root, {("en", "weat7"): en, ("de", "weat7"): SETS["de"], ("en", "weat1"): (en[1], en[0], en[3], en[2])}
    )
    return root, base


EXACT = Resampling(n_permutations=999, alternative="greater", seed=3)  # C(12, 6) = 924 splits: all enumerated


def test_read_word_sets_takes_a_template_a_path_and_a_url(served):
    root, base = served
    by_url = biasdask.read_word_sets(f"{base}/{{language}}_all/{{test}}.json", language="de", test="weat7")
    assert by_url.x == tuple(SETS["de"][0]) and by_url.b == tuple(SETS["de"][3])
    assert by_url.names == NAMES and by_url.test == "weat7" and by_url.language == "de"
    assert by_url.source == f"{base}/de_all/weat7.json"
    by_path = biasdask.read_word_sets(root / "de_all" / "weat7.json", language="de")
    assert (by_path.x, by_path.y, by_path.a, by_path.b, by_path.test) == (
        by_url.x,
        by_url.y,
        by_url.a,
        by_url.b,
        "weat7",
    )


def test_weat_on_a_file_matches_a_numpy_weat(stores, served):
    root, base = served
    vectors = stored_values(stores["en"])
    by_file = biasdask.weat(stores["en"], test=str(root / "en_all" / "weat7.json"), resampling=EXACT)
    check_against_oracle(by_file, vectors, SETS["en"])
    assert by_file.exact and by_file.test == "weat7"
    assert by_file.coverage["x"].missing == ("pure math",)  # a phrase is no token of the vocabulary
    # the same file by URL (its {language} the store's), and as a Location: the same result
    for test in (f"{base}/{{language}}_all/weat7.json", Location(f"{base}/en_all/weat7.json")):
        again = biasdask.weat(stores["en"], test=test, resampling=EXACT)
        assert (again.statistic, again.effect_size, again.p_value) == (
            by_file.statistic,
            by_file.effect_size,
            by_file.p_value,
        )
    metric = biasdask.set_metric_test(stores["en"], metric="rnd", test=f"{base}/en_all/weat7.json", resampling=EXACT)
    assert metric.n_x == 6


def test_a_word_set_file_passed_as_the_sets_says_where_it_goes(stores, served):
    root, _ = served
    with pytest.raises(TypeError, match="goes in test="):
        biasdask.weat(stores["en"], str(root / "en_all" / "weat7.json"))


def _study(stores, output, base, **keys):
    return {
        "output": str(output),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform", "zipf"],
        "tests": ["weathub.weat7", "weathub.weat1"],
        "word_sets": {"weathub": f"{base}/{{language}}_all/{{test}}.json"},
        "n_permutations": 999,
        "alternative": "greater",
        "placebo": False,
        "save_scores": False,  # classic tests only: no per-word scores
        "seed": 4,
        **keys,
    }


def test_a_study_runs_weathubs_tests_in_each_language_with_a_file(tmp_path, stores, served, dask_client):
    _, base = served
    cube = biasdask.run(_study(stores, tmp_path / "r.zarr", base), client=dask_client, progress=False)
    assert [str(t) for t in cube["test"].values] == ["weathub.weat7", "weathub.weat1"]
    for code in ("en", "de"):
        cell = cube.sel({"language": code, "test": "weathub.weat7"})
        for method in ("uniform", "zipf"):  # a classic test: one result in every weighting's cell
            check_against_oracle(cell.sel({"method": method}).compute(), stored_values(stores[code]), SETS[code])
        assert str(cell["word_sets"].values[0]) == f"weathub.weat7:{code}"
    en = SETS["en"]
    weat1 = cube.sel({"language": "en", "test": "weathub.weat1", "method": "uniform"}).compute()
    check_against_oracle(weat1, stored_values(stores["en"]), (en[1], en[0], en[3], en[2]))
    # no file, no test: written as not applicable, as a classic test in a language it has no lists for
    for code, test in (("fr", "weathub.weat7"), ("fr", "weathub.weat1"), ("de", "weathub.weat1")):
        note = str(cube["note"].sel({"language": code, "test": test, "method": "uniform"}).values)
        assert note == f"not applicable: test {test} has no word lists for language {code}"
    recorded = yaml.safe_load(cube.attrs["config"])["word_sets"]["weathub.weat7"]["de"]
    assert recorded["file"] == f"{base}/de_all/weat7.json" and recorded["x"] == SETS["de"][0]


def test_changed_words_are_a_changed_study_and_update_recomputes_that_test_only(tmp_path, stores, served):
    root, base = served
    study = _study({"en": stores["en"]}, tmp_path / "r.zarr", base)
    first = biasdask.run(study, progress=False).compute()
    en = SETS["en"]
    (root / "en_all" / "weat7.json").write_text(weathub_json(en[0][:5], *en[1:]), encoding="utf-8")
    with pytest.raises(StoreConflictError, match=r"word_sets\.weathub\.weat7.*--update"):
        biasdask.run(study, progress=False)
    second = biasdask.run(study, update=True, progress=False).compute()
    kept = {"language": "en", "test": "weathub.weat1"}
    for name in ("statistic", "p_value", "effect_size"):
        np.testing.assert_array_equal(second[name].sel(kept).values, first[name].sel(kept).values)
    changed = second.sel({"language": "en", "test": "weathub.weat7", "method": "uniform"})
    check_against_oracle(changed, stored_values(stores["en"]), (en[0][:5], *en[1:]))


@pytest.mark.parametrize(
    "text, key, what",
    [
        ("{not json", "line 1, column 2", "not JSON"),
        ("[1, 2]", "targ1, targ2, attr1, attr2", "expected a JSON object"),
        (weathub_json(*SETS["en"]).replace('"attr2"', '"attr3"'), "key attr2", "is missing"),
        (
            json.dumps({k: {"examples": ["w"]} for k in ("targ1", "targ2", "attr1")} | {"attr2": ["w"]}),
            "attr2",
            "examples",
        ),
        (weathub_json(SETS["en"][0], [], *SETS["en"][2:]), "targ2.examples", "non-empty list of words"),
        (weathub_json(*SETS["en"][:2], ["he", 7], SETS["en"][3]), "attr1.examples[1]", "expected a word, got 7"),
        (weathub_json(*SETS["en"], names=("Math", ["Arts"], "M", "F")), "targ2.category", "the set's name"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_the_key_and_what_is_wrong(tmp_path, stores, served, text, key, what):
    root, base = served
    (root / "de_all" / "weat7.json").write_text(text, encoding="utf-8")
    study = _study(stores, tmp_path / "r.zarr", base)
    study["word_sets"]["weathub"] += "?token=SECRET"  # a signed URL: its query is never shown
    with pytest.raises(ConfigError) as caught:
        parse_config(study)
    line = str(caught.value)
    assert line.startswith(f"word_sets.weathub: {base}/de_all/weat7.json: ")
    assert key in line and what in line and "\n" not in line and "SECRET" not in line
    with pytest.raises(InputFormatError, match=key.replace("[", r"\[").replace("(", r"\(")):
        biasdask.read_word_sets(f"{base}/de_all/weat7.json")


def test_the_command_reports_a_bad_file_in_one_line(tmp_path, stores, served, cli):
    root, base = served
    (root / "en_all" / "weat1.json").write_text('{"targ1": {}}', encoding="utf-8")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(_study(stores, tmp_path / "r.zarr", base)), encoding="utf-8")
    code, out, err = cli("run", path, "--workers", "0", "--quiet")
    assert code == 2 and out == ""
    assert (
        err
        == f"biasdask: error: word_sets.weathub: {base}/en_all/weat1.json: targ1: expected an object with its examples (a list of words)\n"
    )


def test_study_errors_name_the_key(tmp_path, stores, served):
    _, base = served
    out = tmp_path / "r.zarr"
    with pytest.raises(
        ConfigError,
        match=r"word_sets\.weathub: test weathub\.weat9 has a file in no language .*en_all/weat9\.json: no such file",
    ):
        parse_config(_study(stores, out, base, tests=["weathub.weat9"]))
    with pytest.raises(
        ConfigError, match=r"word_sets\.weathub: no test of 'tests' reads it: name its tests there as weathub\.<test>"
    ):
        parse_config(_study(stores, out, base, tests=["gender"]))
    with pytest.raises(ConfigError, match=r"word_sets\.weat7: 'weat7' is a test of the package"):
        parse_config(_study(stores, out, base, word_sets={"weat7": f"{base}/x.json"}, tests=["weat7"]))
    with pytest.raises(ConfigError, match=r"tests: unknown value\(s\) \['other\.weat7'\]"):
        parse_config(_study(stores, out, base, tests=["weathub.weat7", "other.weat7"]))
    with pytest.raises(ConfigError, match="word_sets: expected a mapping of a name to a file or URL template"):
        parse_config(_study(stores, out, base, word_sets=f"{base}/{{language}}_all/{{test}}.json"))


def test_an_unreachable_server_is_one_line_naming_the_file(tmp_path, stores):
    study = _study(stores, tmp_path / "r.zarr", "http://127.0.0.1:9", tests=["weathub.weat7"])
    with pytest.raises(
        BiasdaskOSError, match=r"^word_sets\.weathub: http://127\.0\.0\.1:9/en_all/weat7\.json: cannot read"
    ):
        parse_config(study)


def test_a_file_without_language_or_test_serves_every_language_as_one_test(tmp_path, stores):
    path = tmp_path / "mine.json"
    path.write_text(weathub_json(*SETS["en"]), encoding="utf-8")
    cfg = parse_config(
        {"output": str(tmp_path / "r.zarr"), "languages": stores, "word_sets": {"mine": str(path)}, "tests": ["mine"]}
    )
    assert set(cfg.word_sets["mine"]) == {"en", "de", "fr"}
    assert isinstance(cfg.word_sets["mine"]["fr"], WordSets) and cfg.word_sets["mine"]["fr"].language == "fr"


def test_a_language_the_catalog_lacks_runs_the_file_tests_alone(tmp_path, served):
    root, base = served
    x, y, a, b = ([f"{role}{i}" for i in range(6)] for role in "xyab")
    write_weathub(root, {("ckb", "weat7"): (x, y, a, b)})
    words = [*x, *y, *a, *b, *(f"filler{i}" for i in range(40))]
    rng = np.random.default_rng(8)
    stores = {"ckb": make_store(tmp_path, "ckb", words, rng.standard_normal((len(words), 10)), language="ckb")}
    study = _study(stores, tmp_path / "r.zarr", base, tests=["weathub.weat7"])
    cube = biasdask.run(study, progress=False)
    check_against_oracle(
        cube.sel({"language": "ckb", "test": "weathub.weat7", "method": "uniform"}),
        stored_values(stores["ckb"]),
        (x, y, a, b),
    )
    del study["save_scores"]  # the per-word scores are the gender test's, which needs attribute words
    with pytest.raises(ConfigError, match=r"languages\.ckb: language 'ckb' is not in the catalog.*save_scores: false"):
        parse_config(study)


def test_a_silent_server_fails_after_the_configured_timeout_naming_the_file():
    import socket

    import dask.config

    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/{{language}}_all/{{test}}.json"
        with dask.config.set({"biasdask.http.read-timeout": 0.5}):
            with pytest.raises(
                BiasdaskOSError,
                match=r"en_all/weat7\.json: the server did not answer within the read timeout of 0\.5 s",
            ):
                biasdask.read_word_sets(url, language="en", test="weat7")
