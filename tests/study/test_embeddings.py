"""A study of several embeddings of the same languages: one study file, one results cube per embedding.

The reference: the career/family IAT words of a few languages in fastText vectors of three corpora
(Common Crawl, Wikipedia, film subtitles; Lewis & Lupyan 2020). One study file names the three corpora; each
embedding's cube must be, variable for variable and bit for bit, the cube of a study of that corpus alone,
its d Lewis & Lupyan's published value, and ``biasdask reliability`` of the study's results store the
test-retest of the three single-corpus stores.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

import biasdask
from biasdask.cli import main
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError, ConfigError, StoreConflictError
from biasdask.io import results as rs
from biasdask.study.config import EmbeddingStudies, StudyConfig, parse_config
from biasdask.study.inference import retest_reliability
from biasdask.study.run import CellWriter

#: corpus -> the published table's column
CORPORA = {"cc": "lang_es_wiki_cc", "wiki": "lang_es_wiki", "subt": "lang_es_sub"}
#: the study's languages; subtitles have no Hindi, and begin without Dutch
LANGUAGES = ["da", "de", "en", "fr", "nl", "hi"]
SUBT = ["da", "de", "en", "fr", "nl"]
KEYS = {
    "attributes": "iat",
    "methods": ["uniform"],
    "tests": ["career_family"],
    "n_permutations": 9,
    "seed": 1,
    "min_coverage": 0.25,
}
EVERY_VARIABLE = [*rs.CELL_VARIABLES, "done"]


@pytest.fixture(scope="module")
def published(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "iat" / "published_effect_sizes.csv").set_index("language_code")


@pytest.fixture(scope="module")
def iat(shared_data, tmp_path_factory):
    """The folder of the stores ``<corpus>/<language>.zarr`` of the IAT words, and of the studies."""
    root = tmp_path_factory.mktemp("embeddings")
    for corpus in CORPORA:
        for code in SUBT if corpus == "subt" else LANGUAGES:
            source = str(shared_data / "iat" / corpus / f"{code}.vec")
            ingest(source, str(root / corpus / f"{code}.zarr"), language=code, client=False, progress=False)
    return root


def _study(root, output, subt=SUBT, **keys) -> dict:
    """The study of the three corpora in one file, each corpus with its IAT translations."""
    embeddings = {corpus: {"store": str(root / corpus / "{language}.zarr"), "iat_model": corpus} for corpus in CORPORA}
    embeddings["subt"]["languages"] = list(subt)
    return {"output": str(output), "embeddings": embeddings, "languages": LANGUAGES, **KEYS, **keys}


def _write(path, study: dict):
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def singles(iat) -> dict[str, str]:
    """corpus -> the results store of a study of that corpus alone."""
    out = {}
    for corpus in CORPORA:
        languages = {
            code: {"store": str(iat / corpus / f"{code}.zarr")} for code in (SUBT if corpus == "subt" else LANGUAGES)
        }
        study = {"output": str(iat / "single" / f"{corpus}.zarr"), "languages": languages, "iat_model": corpus, **KEYS}
        biasdask.run(study, progress=False, start_cluster=False)
        out[corpus] = study["output"]
    return out


@pytest.fixture(scope="module")
def several(iat, tmp_path_factory) -> str:
    """The results store of the one study file of the three corpora, run by ``biasdask run``."""
    folder = tmp_path_factory.mktemp("several")
    path = _write(folder / "study.yaml", _study(iat, folder / "iat.zarr"))
    assert main(["run", str(path), "--workers", "0", "--quiet"]) == 0
    return str(folder / "iat.zarr")


def _assert_same_cells(got: xr.Dataset, want: xr.Dataset) -> None:
    for dim in rs.DIMS:
        assert got[dim].values.tolist() == want[dim].values.tolist(), dim
    for name in EVERY_VARIABLE:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)  # NaN == NaN
    assert got.attrs["config"] == want.attrs["config"]


def test_each_embedding_is_the_cube_of_its_study_alone(several, singles, published, capsys):
    tree = biasdask.open_results(several)
    assert isinstance(tree, xr.DataTree)
    assert list(tree.children) == ["cc", "wiki", "subt"] and tree.attrs["embeddings"] == ["cc", "wiki", "subt"]
    for corpus, single in singles.items():
        cube = biasdask.open_results(several, embedding=corpus)
        assert dict(cube.sizes) == {"language": len(SUBT if corpus == "subt" else LANGUAGES), "method": 1, "test": 1}
        _assert_same_cells(cube, biasdask.open_results(single))
        _assert_same_cells(tree[corpus].to_dataset(), cube)
        # each corpus read with its own translations: Lewis & Lupyan's values
        d = cube["effect_size"].sel({"method": "uniform", "test": "career_family"}).to_series()
        want = published.loc[d.index, CORPORA[corpus]]
        np.testing.assert_allclose(d.to_numpy(), want.to_numpy(), rtol=0, atol=1e-9)
    # plain xarray reads the same tree
    plain = xr.open_datatree(several, engine="zarr", consolidated=False)
    assert set(plain.children) == set(CORPORA)
    np.testing.assert_array_equal(plain["wiki"]["effect_size"].values, tree["wiki"]["effect_size"].values)


def test_the_reliability_of_the_study_is_the_retest_of_the_single_stores(several, singles, capsys):
    options = ["--n-resamples", "199", "--seed", "3", "--format", "csv"]
    assert main(["reliability", *singles.values(), *options]) == 0
    want = capsys.readouterr().out
    assert main(["reliability", several, *options]) == 0
    got = capsys.readouterr().out
    assert got == want and "cc vs wiki" in got and "cc, wiki, subt" in got
    rel = retest_reliability(several, n_resamples=199, seed=3)
    xr.testing.assert_identical(rel, retest_reliability(list(singles.values()), n_resamples=199, seed=3))
    xr.testing.assert_identical(rel, retest_reliability(biasdask.open_results(several), n_resamples=199, seed=3))
    assert rel["n"].sel({"pair": "cc vs wiki"}).item() == len(LANGUAGES)
    assert rel["n"].sel({"pair": "cc vs subt"}).item() == len(SUBT)


def test_show_prints_each_embedding_and_words_says_which_to_give(several, tmp_path, capsys):
    assert main(["show", several, "--columns", "d,p"]) == 0
    shown = capsys.readouterr().out
    assert [line for line in shown.splitlines() if line.startswith("embedding ")] == [
        "embedding cc:",
        "embedding wiki:",
        "embedding subt:",
    ]
    assert main(["show", several, "--format", "csv", "--sel", "language=da,en"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert list(table.columns[:4]) == ["embedding", "language", "test", "method"]
    assert len(table) == 6 and list(table["embedding"].unique()) == ["cc", "wiki", "subt"]
    for command in (
        ["words", several, "en"],
        ["agreement", several],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "several embeddings" in err and f"{several}/wiki" in err
    with pytest.raises(BiasdaskError, match="no embedding 'books'.*cc, wiki, subt"):
        biasdask.open_results(several, embedding="books")
    with pytest.raises(BiasdaskError, match="several embeddings.*/cc, .*/wiki, .*/subt"):
        biasdask.agreement(several)


class Stop(Exception):
    """Stands for whatever stops a run (a crash, a killed process)."""


def test_an_interrupted_study_resumes_where_it_stopped(iat, singles, tmp_path, monkeypatch, capsys):
    path = _write(tmp_path / "study.yaml", _study(iat, tmp_path / "iat.zarr"))
    real, written = rs.write_cell, []

    def stop_at_the_ninth(url, *cell, **kw):
        if len(written) == 8:
            raise Stop
        written.append((str(getattr(url, "url", url)).rsplit("/", 1)[-1], *cell[:3]))
        return real(url, *cell, **kw)

    monkeypatch.setattr(rs, "write_cell", stop_at_the_ninth)
    with pytest.raises(Stop):
        biasdask.run(path, progress=False)
    # every embedding's cube is there from the start; the cells done are those written
    tree = biasdask.open_results(tmp_path / "iat.zarr")
    done = {(name, *cell) for name in CORPORA for cell in rs.done_cells(tmp_path / "iat.zarr" / name)}
    assert done == set(written) and {name for name, *_ in done} == {"cc", "wiki"}
    assert int(tree["subt"]["done"].sum()) == 0
    assert main(["show", str(tmp_path / "iat.zarr")]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert any(n.startswith("wiki: 2 of 6 cells done") and "Stop" in n for n in notes), notes

    resumed: list = []
    monkeypatch.setattr(rs, "write_cell", lambda url, *cell, **kw: resumed.append(cell[:3]) or real(url, *cell, **kw))
    tree = biasdask.run(path, progress=False)
    assert len(resumed) == 2 * len(LANGUAGES) + len(SUBT) - len(done)  # only the cells not done
    for corpus, single in singles.items():
        _assert_same_cells(tree[corpus].to_dataset(), biasdask.open_results(single))


def test_an_update_touches_only_the_embedding_it_changes(iat, published, tmp_path, monkeypatch):
    before = _study(iat, tmp_path / "iat.zarr", subt=SUBT[:-1])  # subtitles without Dutch
    biasdask.run(before, progress=False)
    cubes = {name: biasdask.open_results(tmp_path / "iat.zarr", embedding=name) for name in CORPORA}
    after = _study(iat, tmp_path / "iat.zarr")
    with pytest.raises(StoreConflictError, match=r"iat.zarr/subt: results of another study \(changed languages.nl\)"):
        biasdask.run(after, progress=False)
    real, computed = CellWriter.__call__, []

    def record(writer, cell):
        computed.append((writer.out.url.rsplit("/", 1)[-1].split(".")[0], cell.language, cell.method, cell.test))
        return real(writer, cell)

    monkeypatch.setattr(CellWriter, "__call__", record)
    tree = biasdask.run(after, progress=False, update=True)
    assert computed == [("subt", "nl", "uniform", "career_family")]
    for name in ("cc", "wiki"):  # untouched: the very cube
        assert tree[name].attrs["store_id"] == cubes[name].attrs["store_id"]
        _assert_same_cells(tree[name].to_dataset(), cubes[name])
    subt = tree["subt"].to_dataset()
    assert subt["language"].values.tolist() == SUBT and subt.attrs["store_id"] != cubes["subt"].attrs["store_id"]
    kept = subt.sel({"language": SUBT[:-1]})
    for name in ("effect_size", "p_value", "statistic", "note"):
        np.testing.assert_array_equal(kept[name].values, cubes["subt"][name].values)
    d = float(subt["effect_size"].sel({"language": "nl", "method": "uniform", "test": "career_family"}))
    assert d == pytest.approx(published.loc["nl", CORPORA["subt"]], abs=1e-9)


# --- small in-memory embeddings: what the IAT data need not show ------------------------------------------


def _emb(seed: int, n: int = 300):
    words = ["male", "female", *(f"w{i}".translate(str.maketrans("0123456789", "abcdefghij")) for i in range(n))]
    vectors = np.random.default_rng(seed).standard_normal((len(words), 8))
    return biasdask.as_embeddings(vectors, words, language="en")


def _memory_study(output, names=("a", "b"), **keys) -> dict:
    stores = {name: _emb(ord(name)) for name in names}
    return {
        "output": str(output),
        "embeddings": {name: None for name in names},
        "languages": {"en": {"store": stores}},
        "tests": ["gender"],
        "methods": ["uniform"],
        "n_permutations": 9,
        "placebo": False,
        "seed": 1,
        **keys,
    }


def test_embeddings_added_and_removed_are_refused_unless_update(tmp_path):
    out = tmp_path / "r.zarr"
    first = biasdask.run(_memory_study(out), progress=False)
    with pytest.raises(StoreConflictError, match=r"embeddings: added c; removed a\): pass --update"):
        biasdask.run(_memory_study(out, names=("b", "c")), progress=False)
    assert rs.embeddings_of(out) == ("a", "b") and (out / "a").exists()
    tree = biasdask.run(_memory_study(out, names=("b", "c")), progress=False, update=True)
    assert list(tree.children) == ["b", "c"] and tree.attrs["embeddings"] == ["b", "c"]
    assert not (out / "a").exists()
    assert tree["b"].attrs["store_id"] == first["b"].attrs["store_id"]  # kept
    assert int(tree["c"]["done"].sum()) == 1


def test_one_embedding_and_several_never_replace_each_other_unasked(tmp_path):
    out = tmp_path / "r.zarr"
    one = {**_memory_study(out), "embeddings": None, "languages": {"en": {"store": _emb(1)}}}
    biasdask.run(one, progress=False)
    with pytest.raises(StoreConflictError, match="results cube of a study of one embedding; pass --overwrite"):
        biasdask.run(_memory_study(out), progress=False)
    assert isinstance(biasdask.open_results(out), xr.Dataset)
    tree = biasdask.run(_memory_study(out), progress=False, overwrite=True)
    assert list(tree.children) == ["a", "b"]
    with pytest.raises(StoreConflictError, match=r"several embeddings \(a, b\); pass --overwrite"):
        biasdask.run(one, progress=False)
    assert isinstance(biasdask.run(one, progress=False, overwrite=True), xr.Dataset)
    assert rs.embeddings_of(out) == () and not (out / "a").exists()
    with pytest.raises(BiasdaskError, match="no embedding 'a'.*no study of several embeddings"):
        biasdask.open_results(out, embedding="a")


def test_a_study_of_one_embedding_is_as_before():
    raw = {"output": "r.zarr", "embeddings": "emb/{language}.zarr", "languages": ["en", "de"]}
    cfg = parse_config(raw)
    assert isinstance(cfg, StudyConfig) and cfg.output == "r.zarr" and cfg.languages[1].store == "emb/de.zarr"
    several = parse_config({**raw, "embeddings": {"cc": "cc/{language}.zarr", "wiki": "wiki/{language}.zarr"}})
    assert isinstance(several, EmbeddingStudies) and several.names == ("cc", "wiki")
    cc = several.studies["cc"]
    assert cc.output == "r.zarr/cc" and [s.store for s in cc.languages] == ["cc/en.zarr", "cc/de.zarr"]
    # the study of one embedding of several is the study of that embedding alone
    assert cc.canonical_yaml() == parse_config({**raw, "embeddings": "cc/{language}.zarr"}).canonical_yaml()


def _raw(**kw) -> dict:
    raw = {
        "output": "r.zarr",
        "embeddings": {"cc": "cc/{language}.zarr", "wiki": "wiki/{language}.zarr"},
        "languages": ["en", "de"],
    }
    raw.update(kw)
    return raw


@pytest.mark.parametrize(
    "change, message",
    [
        ({"embeddings": {}}, r"^embeddings: expected a store template, or a mapping"),
        ({"embeddings": {"cc": "cc/no-template"}}, r"^embeddings\.cc: expected a URL template containing"),
        (
            {"embeddings": {"cc": {"store": "cc/{lang}/{language}"}}},
            r"^embeddings\.cc\.store: the template 'cc/\{lang\}/\{language\}' has a bad field",
        ),
        ({"embeddings": {"c/c": "cc/{language}.zarr"}}, r"^embeddings\.c/c: 'c/c' is not a name for an embedding"),
        (
            {"embeddings": {"cc": "a/{language}", "CC": "b/{language}"}},
            r"^embeddings: the names CC, cc differ only in case",
        ),
        ({"embeddings": {"cc": ["a/{language}"]}}, r"^embeddings\.cc: expected a store template or a mapping"),
        ({"embeddings": {"cc": {"store": "a/{language}", "seed": 2}}}, r"^embeddings\.cc: unknown key\(s\) \['seed'\]"),
        ({"embeddings": {"cc": {"store": "a/{language}", "iat_model": "bert"}}}, r"^embeddings\.cc\.iat_model: 'bert'"),
        (
            {"embeddings": {"cc": {"store": "a/{language}", "languages": ["fr"]}}},
            r"^embeddings\.cc\.languages: 'fr' not in",
        ),
        (
            {"embeddings": {"cc": {"store": "a/{language}", "languages": "en"}}},
            r"^embeddings\.cc\.languages: expected a",
        ),
        ({"languages": {"en": "en.zarr"}}, r"^languages\.en\.store: the study has several embeddings \(cc, wiki\)"),
        ({"languages": {"en": {"store": {"books": "x.zarr"}}}}, r"^languages\.en\.store: no embedding books"),
        (
            {"embeddings": {"cc": None, "wiki": "w/{language}"}},
            r"^languages\.en\.store\.cc: no store URL .*embeddings\.cc\)$",
        ),
        (
            {
                "embeddings": {"cc": {"store": "a/{language}", "languages": ["de"]}},
                "languages": {"en": {"store": {"cc": "e"}}, "de": {}},
            },
            r"^languages\.en\.store\.cc: en is not among the languages of embeddings\.cc$",
        ),
        (
            {
                "embeddings": {"cc": "a/{language}", "subt": {"store": "b/{language}", "iat_model": "subt"}},
                "languages": ["hi"],
                "attributes": "iat",
            },
            r"^languages\.hi: attributes iat: no IAT translations for language 'hi' with iat_model 'subt' \(embedding subt\)",
        ),
    ],
)
def test_errors_name_the_key(change, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_raw(**change))


def test_a_store_per_embedding_needs_a_mapping_of_embeddings():
    with pytest.raises(ConfigError, match=r"^languages\.en\.store: expected a store URL \(stores per embedding"):
        parse_config({"output": "r.zarr", "languages": {"en": {"store": {"cc": "x.zarr"}}}})


def test_the_command_names_the_key_in_one_line(tmp_path, cli):
    path = _write(
        tmp_path / "study.yaml",
        _raw(embeddings={"cc": "cc/{language}.zarr", "wiki": {"store": "w/{language}", "colour": 1}}),
    )
    code, out, err = cli("run", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("biasdask: error: embeddings.wiki: unknown key(s) ['colour']")


def test_a_cube_deleted_by_hand_is_made_again(tmp_path):
    out = tmp_path / "r.zarr"
    biasdask.run(_memory_study(out), progress=False)
    shutil.rmtree(out / "b")
    tree = biasdask.run(_memory_study(out), progress=False)  # the missing cube is made again
    assert int(tree["b"]["done"].sum()) == 1
