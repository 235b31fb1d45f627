"""The results cube: layout, fill values, concurrent cell writes, resume, conflicts, kills."""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import hashlib
import inspect
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from dataclasses import dataclass

import dask.base
import fsspec
import numpy as np
import pytest
import xarray as xr
import zarr

from biasdask import Location
from biasdask._version import __version__
from biasdask.errors import BiasdaskError, IncompleteStoreError, StoreConflictError
from biasdask.io import results as R

LANGS = ["en", "de", "pt_BR"]
METHODS = ["uniform", "zipf"]
TESTS = ["gender", "weat1", "weat10"]
ATTRS = {"seed": 20240917, "alternative": "auto", "similarity": "cosine"}
CONFIG = "languages: [en, de, pt_BR]\nmethods: [uniform, zipf]\nn_permutations: 9999\nseed: 20240917\n"
#: the cube's variables by type, from its registry (the adjusted p-values are written whole at the end of
#: a run, not by a cell)
DERIVED = list(R.DERIVED_VARIABLES)
FLOATS = [n for n, (dtype, _, _) in R.CELL_VARIABLES.items() if dtype == np.float64 and n not in DERIVED]
INTS = [n for n, (dtype, _, _) in R.CELL_VARIABLES.items() if dtype == np.int64]
STRINGS = [n for n, (dtype, _, _) in R.CELL_VARIABLES.items() if dtype is str]


def _cell_values(i, j, k):
    """Distinct, never-fill values for the cell at integer position (i, j, k)."""
    base = 100 * i + 10 * j + k
    return {
        "statistic": base + 0.5,
        "effect_size": base / 7 + 0.1,
        "p_value": 1 / (base + 2),
        "z_score": -base - 0.25,
        "p_value_normal": 1 / (base + 3),
        "null_mean": base * 1e-3 + 1e-4,
        "null_std": 1.0 + base,
        "n_permutations": 9999 + base,
        "exact": True,
        "n_x": 1000 + base,
        "n_y": 2000 + base,
        "n_a": 8 + base,
        "n_b": 9 + base,
        "alternative": ["greater", "less", "two-sided"][base % 3],
        "t_method": ["uniform", "zipf", "none"][j % 3],
        "attribute_words_a": f"he, him, mann{base}",
        "attribute_words_b": "she, her",
        "missing_attribute_words": "A: hee" if k else "",
        "note": f"cell {base} \u2028 ü",
    }


def _cells(langs=LANGS, methods=METHODS, tests=TESTS):
    return [
        ((lang, m, t), _cell_values(i, j, k))
        for i, lang in enumerate(langs)
        for j, m in enumerate(methods)
        for k, t in enumerate(tests)
    ]


def _assert_cell(ds, cell, values):
    sel = ds.sel(dict(zip(R.DIMS, cell)))
    for name, value in values.items():
        assert sel[name].item() == value, (cell, name)


def _create(url, storage_options=None, **kw):
    args = {"languages": LANGS, "methods": METHODS, "tests": TESTS, "attrs": ATTRS, "config_text": CONFIG}
    args.update(kw)
    R.create_results(Location(url, storage_options), **args)


@dataclass
class Store:
    url: str
    options: dict | None
    langs: list[str]
    methods: list[str]
    tests: list[str]

    def create(self, **kw):
        _create(self.url, self.options, **{"languages": self.langs, "methods": self.methods, "tests": self.tests, **kw})

    def cells(self):
        return _cells(self.langs, self.methods, self.tests)


@pytest.fixture()
def memory_url():
    """A not-yet-existing memory:// URL of its own (memory:// is one dict shared by the process)."""
    path = f"/bd-{uuid.uuid4().hex}/results.zarr"
    yield f"memory://{path}"
    fs = fsspec.filesystem("memory")
    if fs.exists(path):
        fs.rm(path, recursive=True)


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    """A not-yet-existing results store on the local file system and in fsspec's memory://."""
    if request.param == "local":
        return Store(str(tmp_path / "results.zarr"), None, LANGS, METHODS, TESTS)
    return Store(request.getfixturevalue("memory_url"), None, LANGS, METHODS, TESTS)


def test_layout_as_plain_xarray_reads_it(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    ds = xr.open_zarr(url, consolidated=False)

    assert dict(ds.sizes) == {"language": 3, "method": 2, "test": 3}
    for dim, labels in zip(R.DIMS, (LANGS, METHODS, TESTS)):
        assert ds[dim].dims == (dim,)
        assert ds[dim].dtype.kind in "OTU"  # variable-length strings (numpy StringDType)
        assert [str(x) for x in ds[dim].values] == labels
    expected = {**{v: np.float64 for v in FLOATS}, **{v: np.int64 for v in INTS}, "exact": bool, "done": bool}
    for name, dtype in expected.items():
        assert ds[name].dims == R.DIMS
        assert ds[name].dtype == np.dtype(dtype), name
        assert ds[name].encoding["chunks"] == (3, 2, 3), name  # one object per variable
    for name in STRINGS:
        assert ds[name].dims == R.DIMS and ds[name].dtype.kind in "OTU", name
    assert set(ds.data_vars) == set(expected) | set(STRINGS) | set(DERIVED)

    assert ds.attrs["seed"] == ATTRS["seed"]
    assert ds.attrs["alternative"] == "auto"
    assert ds.attrs["similarity"] == "cosine"
    assert ds.attrs["sd_ddof"] == 1
    assert ds.attrs["biasdask_version"] == __version__
    assert ds.attrs["config"] == CONFIG
    assert ds.attrs["config_hash"] == hashlib.sha256(CONFIG.encode()).hexdigest()
    created = dt.datetime.fromisoformat(ds.attrs["created"])
    assert abs(dt.datetime.now(dt.timezone.utc) - created) < dt.timedelta(minutes=5)

    # Cells not run: NaN / -1 / False, never zero, both raw and through open_results.
    for view in (ds.load(), R.open_results(url)):
        for name in FLOATS:
            assert np.isnan(view[name].values).all(), name
        for name in INTS:
            assert (view[name].values == -1).all(), name
        assert not view["exact"].values.any()
        assert not view["done"].values.any()
        for name in STRINGS:
            assert (view[name].values == ("" if name != "note" or view is ds else R.NOT_RUN)).all(), name
    assert (ds["note"].values == "").all()
    assert (R.open_results(url)["note"].values == R.NOT_RUN).all()  # every empty cell says why
    assert R.done_cells(url) == set()


def test_write_cell_round_trip_and_masking(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    cells = _cells()
    (cell_a, values_a), (cell_b, values_b) = cells[0], cells[-1]
    values_b = {**values_b, "exact": False}
    R.write_cell(url, *cell_a, values_a)
    R.write_cell(url, *cell_b, values_b)
    skipped = ("de", "zipf", "weat1")
    R.write_cell(url, *skipped, {"note": "missing words: Frau"})

    ds = R.open_results(url)
    assert [str(x) for x in ds.language.values] == LANGS
    _assert_cell(ds, cell_a, values_a)
    _assert_cell(ds, cell_b, values_b)
    sel = ds.sel({"language": "de", "method": "zipf", "test": "weat1"})
    assert sel.note.item() == "missing words: Frau" and bool(sel.done)
    assert np.isnan(sel.statistic.item()) and sel.n_x.item() == -1
    assert R.done_cells(url) == {cell_a, cell_b, skipped}
    # The zero-copy selection users are told to write.
    assert ds.sel({"method": "zipf"}).sizes == {"language": 3, "test": 3}

    # Rewriting a cell writes every variable: nothing of the earlier values survives.
    R.write_cell(url, *cell_a, {"note": "skipped"})
    sel = R.open_results(url).sel(dict(zip(R.DIMS, cell_a)))
    assert np.isnan(sel.statistic.item()) and sel.n_permutations.item() == -1 and not sel.exact.item()

    # Values written without the done flag (a writer killed mid-cell) are masked, not trusted.
    root = zarr.open_group(url, mode="r+")
    root["statistic"][1, 0, 0] = 42.0
    root["n_x"][1, 0, 0] = 7
    root["exact"][1, 0, 0] = True
    raw = xr.open_zarr(url, consolidated=False).load()
    assert raw.statistic.values[1, 0, 0] == 42.0
    masked = R.open_results(url)
    assert np.isnan(masked.statistic.values[1, 0, 0])
    assert masked.n_x.values[1, 0, 0] == -1 and not masked.exact.values[1, 0, 0]
    assert ("de", "uniform", "gender") not in R.done_cells(url)


def test_a_cell_is_one_object_and_compaction_folds_the_records(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    cells = _cells()
    for cell, values in cells[:5]:
        R.write_cell(url, *cell, values)
    records = sorted(
        p.relative_to(tmp_path / "results.zarr").as_posix()
        for p in (tmp_path / "results.zarr" / "cells").rglob("*")
        if p.is_file()
    )
    assert len(records) == 1 + 5 and all(r.endswith("zarr.json") for r in records)  # the group + one object per cell
    # plain xarray sees the chunks only: nothing yet; open_results sees the records
    assert not xr.open_zarr(url, consolidated=False)["done"].values.any()
    assert R.done_cells(url) == {c for c, _ in cells[:5]}

    assert R.compact_results(url) == 5
    assert R.compact_results(url) == 0
    assert [p.name for p in (tmp_path / "results.zarr" / "cells").iterdir()] == ["zarr.json"]
    plain = xr.open_zarr(url, consolidated=False).load()
    for view in (plain, R.open_results(url)):
        for cell, values in cells[:5]:
            _assert_cell(view, cell, values)
    # a record written after the compaction wins over the folded chunk (a rewritten cell)
    R.write_cell(url, *cells[0][0], {"note": "redone"})
    sel = R.open_results(url).sel(dict(zip(R.DIMS, cells[0][0])))
    assert sel.note.item() == "redone" and np.isnan(sel.statistic.item()) and sel.t_method.item() == ""


def test_a_compaction_that_fails_half_way_loses_nothing(tmp_path, monkeypatch):
    url = str(tmp_path / "results.zarr")
    _create(url)
    cells = _cells()
    for cell, values in cells[:4]:
        R.write_cell(url, *cell, values)
    setitem = zarr.AsyncArray.setitem

    async def failing_setitem(self, selection, value, **kw):
        if self.path == "p_value":
            raise OSError("injected write failure")
        return await setitem(self, selection, value, **kw)

    monkeypatch.setattr(zarr.AsyncArray, "setitem", failing_setitem)
    with pytest.raises(OSError, match="injected"):
        R.compact_results(url)
    monkeypatch.setattr(zarr.AsyncArray, "setitem", setitem)
    # some chunks hold the cells, p_value's does not, done may not: the records still say it all
    ds = R.open_results(url)
    assert R.done_cells(url) == {c for c, _ in cells[:4]}
    for cell, values in cells[:4]:
        _assert_cell(ds, cell, values)
    assert R.compact_results(url) == 4
    ds = R.open_results(url)
    for cell, values in cells[:4]:
        _assert_cell(ds, cell, values)


def test_open_datatree_reads_the_whole_store(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    cell, values = _cells()[0]
    R.write_null(url, *cell, np.arange(5.0))
    R.write_cell(url, *cell, values)
    R.write_scores(url, "en", _scores(["Frau", "Mann", "NA"]))
    R.compact_results(url)
    tree = xr.open_datatree(url, engine="zarr", consolidated=False)
    assert float(tree.ds.sel(dict(zip(R.DIMS, cell))).statistic) == values["statistic"]
    np.testing.assert_array_equal(tree["scores/en"].ds.u.values, _scores(["Frau", "Mann", "NA"]).u.values)
    np.testing.assert_array_equal(tree["null/en/uniform/gender"].ds.null.values, np.arange(5.0))


def test_a_finished_26_by_3_by_23_cube_is_a_few_objects(tmp_path):
    url = str(tmp_path / "results.zarr")
    langs, methods, tests = [f"l{i}" for i in range(26)], ["uniform", "zipf", "frequency"], [f"t{k}" for k in range(23)]
    _create(url, languages=langs, methods=methods, tests=tests)
    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda c: R.write_cell(url, *c, {"statistic": 1.5, "note": "ü"}),
                [(lang, m, t) for lang in langs for m in methods for t in tests],
            )
        )
    assert R.compact_results(url) == 26 * 3 * 23
    files = [p for p in (tmp_path / "results.zarr").rglob("*") if p.is_file()]
    n_vars = len(R.CELL_VARIABLES) + 1 + 3
    assert len(files) <= 2 * n_vars + 2  # metadata + one chunk per array, the root, the cells group
    ds = xr.open_zarr(url, consolidated=False)
    assert ds["statistic"].encoding["chunks"] == (26, 3, 23) and (ds["statistic"].values == 1.5).all()


def test_write_cell_rejects_bad_input(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    with pytest.raises(ValueError, match="p_val"):
        R.write_cell(url, "en", "zipf", "gender", {"p_val": 0.1})
    with pytest.raises(BiasdaskError, match="'xx'"):
        R.write_cell(url, "xx", "zipf", "gender", {"statistic": 1.0})
    with pytest.raises(ValueError, match="n_x"):
        R.write_cell(url, "en", "zipf", "gender", {"n_x": 2.5})
    assert R.done_cells(url) == set()
    with pytest.raises(IncompleteStoreError, match="no biasdask results store"):
        R.open_results(str(tmp_path / "nothing.zarr"))


def test_concurrent_cells_from_threads_all_land(store):
    store.create()
    cells = store.cells()
    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda cv: R.write_cell(Location(store.url, store.options), *cv[0], cv[1]), cells))
    assert R.done_cells(Location(store.url, store.options)) == {c for c, _ in cells}
    ds = R.open_results(Location(store.url, store.options))
    for cell, values in cells:
        _assert_cell(ds, cell, values)
    assert R.compact_results(Location(store.url, store.options)) == len(cells)
    # chunks=None: read in this process (a memory:// store is invisible to any default Dask client's workers)
    plain = xr.open_zarr(store.url, consolidated=False, chunks=None, storage_options=store.options)
    last_cell, last_values = cells[-1]
    assert float(plain.sel(dict(zip(R.DIMS, last_cell))).statistic) == last_values["statistic"]


def test_concurrent_cells_from_processes_all_land(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    cells = _cells()
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(R.write_cell, url, *cell, values) for cell, values in cells]
        for f in futures:
            f.result()
    assert R.done_cells(url) == {c for c, _ in cells}
    ds = R.open_results(url)
    for cell, values in cells:
        _assert_cell(ds, cell, values)


def test_resume_conflict_and_overwrite(store):
    url, options = store.url, store.options
    store.create()
    created = xr.open_zarr(url, consolidated=False, storage_options=options).attrs["created"]
    cells = store.cells()[:2]
    for cell, values in cells:
        R.write_cell(Location(url, options), *cell, values)

    # Same config: the store is kept as it is, and the run resumes.
    store.create()
    assert R.done_cells(Location(url, options)) == {c for c, _ in cells}
    assert xr.open_zarr(url, consolidated=False, storage_options=options).attrs["created"] == created

    # Different config, or same config with other labels: refused, naming the url and --overwrite.
    new_config = CONFIG + "n_permutations: 10\n"
    with pytest.raises(StoreConflictError, match="--overwrite") as err:
        store.create(config_text=new_config)
    assert url in str(err.value)
    with pytest.raises(StoreConflictError, match="--overwrite"):
        store.create(tests=store.tests + ["career_family"])
    assert R.done_cells(Location(url, options)) == {c for c, _ in cells}

    # overwrite=True: a fresh, empty store of the new config (other label order: a writer of this
    # process that still knew the old layout would put the cell at the wrong place).
    store.create(config_text=new_config, languages=store.langs[::-1], tests=["gender"], overwrite=True)
    assert R.done_cells(Location(url, options)) == set()
    ds = R.open_results(Location(url, options))
    assert ds.attrs["config"] == new_config
    assert ds.sizes["test"] == 1 and np.isnan(ds.statistic.values).all()
    R.write_cell(Location(url, options), store.langs[0], "zipf", "gender", {"statistic": 3.0})
    ds = R.open_results(Location(url, options))
    assert ds.statistic.sel({"language": store.langs[0], "method": "zipf", "test": "gender"}).item() == 3.0
    assert int(ds.done.sum()) == 1


def test_file_url_and_plain_path_are_the_same_store(tmp_path):
    _create(f"file://{tmp_path}/results.zarr")
    R.write_cell(f"file://{tmp_path}/results.zarr", "en", "zipf", "gender", {"statistic": 2.0})
    assert R.done_cells(str(tmp_path / "results.zarr")) == {("en", "zipf", "gender")}


def test_refuses_foreign_data_and_recreates_an_unfinished_template(tmp_path):
    foreign = tmp_path / "other"
    foreign.mkdir()
    (foreign / "data.txt").write_text("not a store")
    with pytest.raises(StoreConflictError, match="not a biasdask results store"):
        _create(str(foreign))
    with pytest.raises(StoreConflictError, match="not a biasdask results store; refusing to replace it"):
        _create(str(foreign), overwrite=True)  # --overwrite replaces results stores only
    assert (foreign / "data.txt").read_text() == "not a store"

    # A creation that died before writing config_hash holds no results: recreated silently.
    url = str(tmp_path / "results.zarr")
    zarr.create_group(url, zarr_format=3, attributes={"biasdask_store": "results"})
    with pytest.raises(IncompleteStoreError, match="never finished"):
        R.done_cells(url)
    _create(url)
    assert R.done_cells(url) == set()


def _scores(words, n_methods=2, offset=0.0):
    n = len(words)
    return xr.Dataset(
        {
            "u": ("word", np.linspace(-1, 1, n, dtype=np.float32) + np.float32(offset)),
            "t": (("method", "word"), np.arange(n_methods * n, dtype=np.float32).reshape(n_methods, n)),
            "rank": ("word", np.arange(1, n + 1, dtype=np.int64)),
        },
        coords={
            "word": np.array(words, dtype=np.dtypes.StringDType()),
            "method": np.array(METHODS[:n_methods], dtype=np.dtypes.StringDType()),
        },
        attrs={"n_a": 3, "n_b": 4, "missing_words": ["Frau"]},
    )


def test_scores_round_trip_and_half_written_subgroup(store):
    url, options = store.url, store.options
    store.create()
    lang, other = store.langs[0], store.langs[1]
    words = ["der", "NA", "#hash", 'qu"ote', "a\u2028b", "null", "\xa0x"]
    assert not R.scores_done(Location(url, options), lang)
    R.write_scores(Location(url, options), lang, _scores(words))
    assert R.scores_done(Location(url, options), lang)
    assert not R.scores_done(Location(url, options), other)

    got = R.open_scores(Location(url, options), language=lang)
    assert [str(w) for w in got.word.values] == words
    np.testing.assert_array_equal(got.u.values, _scores(words).u.values)
    np.testing.assert_array_equal(got.t.sel({"method": "zipf"}).values, np.arange(7, 14, dtype=np.float32))
    assert got.u.dtype == np.float32 and got["rank"].dtype == np.int64 and got.t.dims == ("method", "word")
    assert got.attrs["missing_words"] == ["Frau"]
    # The cube itself is unaffected by the subgroup.
    assert set(xr.open_zarr(url, consolidated=False, storage_options=options).data_vars) >= {"statistic", "done"}

    # A subgroup whose writing stopped before the marker reads as not done and is rewritten.
    _scores(words[:3], offset=5.0).to_zarr(
        url,
        group=f"scores/{other}",
        mode="w",
        consolidated=False,
        zarr_format=3,
        **({"storage_options": options} if options else {}),
    )
    assert not R.scores_done(Location(url, options), other)
    with pytest.raises(IncompleteStoreError, match=repr(other)):
        R.open_scores(Location(url, options), language=other)
    R.write_scores(Location(url, options), other, _scores(words[:2]))
    assert R.scores_done(Location(url, options), other)
    rewritten = R.open_scores(Location(url, options), language=other)
    assert rewritten.sizes["word"] == 2 and rewritten.u.values[0] == -1.0

    # t given as (word, method) is stored in the canonical (method, word) order.
    R.write_scores(Location(url, options), lang, _scores(words).transpose("word", "method"))
    got = R.open_scores(Location(url, options), language=lang)
    assert got.t.dims == ("method", "word")
    np.testing.assert_array_equal(got.t.values, _scores(words).t.values)

    with pytest.raises(ValueError, match="rank"):
        R.write_scores(Location(url, options), lang, _scores(words).drop_vars("rank"))
    with pytest.raises(BiasdaskError, match="'fr'"):
        R.write_scores(Location(url, options), "fr", _scores(words))


def test_memory_store_is_read_here_even_with_a_distributed_client_current(memory_url, dask_client):
    """The workers of a cluster see an empty memory://, which zarr reads as fill values (silent NaN)."""
    _create(memory_url)
    cell, values = _cells()[0]
    R.write_cell(memory_url, *cell, values)
    words = ["Frau", "Mann", "NA"]
    R.write_scores(memory_url, "en", _scores(words))
    with dask_client.as_current():
        assert dask.base.get_scheduler() == dask_client.get  # dask-backed reads would run on the workers
        _assert_cell(R.open_results(memory_url), cell, values)
        got = R.open_scores(memory_url, language="en")
        np.testing.assert_array_equal(got.u.values, _scores(words).u.values)
        np.testing.assert_array_equal(got.t.compute().values, _scores(words).t.values)
        assert [str(w) for w in got.word.values] == words


def test_null_distribution_round_trip(store):
    url, options = store.url, store.options
    store.create()
    lang = store.langs[0]
    null = np.random.default_rng(0).normal(size=1234)
    R.write_null(Location(url, options), lang, "zipf", "weat10", null)
    R.write_null(Location(url, options), lang, "zipf", "weat10", null[:100])  # replaced whole
    np.testing.assert_array_equal(R.read_null(Location(url, options), lang, "zipf", "weat10"), null[:100])
    with pytest.raises(IncompleteStoreError, match="method=uniform test=weat10"):
        R.read_null(Location(url, options), lang, "uniform", "weat10")
    with pytest.raises(BiasdaskError, match="'frequency'"):
        R.write_null(Location(url, options), lang, "frequency", "weat10", null)


def test_null_of_a_test_is_not_touched_by_a_test_with_a_prefix_name(tmp_path):
    url = str(tmp_path / "results.zarr")
    _create(url)
    R.write_null(url, "en", "zipf", "weat10", np.arange(3.0))
    R.write_null(url, "en", "zipf", "weat1", np.arange(5.0))
    R.write_null(url, "en", "zipf", "weat1", np.arange(2.0))
    np.testing.assert_array_equal(R.read_null(url, "en", "zipf", "weat10"), np.arange(3.0))
    np.testing.assert_array_equal(R.read_null(url, "en", "zipf", "weat1"), np.arange(2.0))


def test_sigkill_while_writing_leaves_only_complete_cells(tmp_path):
    url = str(tmp_path / "results.zarr")
    langs, tests = LANGS[:2], [f"t{k:02d}" for k in range(15)]
    _create(url, languages=langs, tests=tests)
    cells = _cells(langs=langs, tests=tests)
    script = textwrap.dedent(inspect.getsource(_cell_values)) + textwrap.dedent(
        f"""
        from biasdask.io.results import write_cell
        langs, methods, tests = {langs!r}, {METHODS!r}, {tests!r}
        for i, lang in enumerate(langs):
            for j, m in enumerate(methods):
                for k, t in enumerate(tests):
                    write_cell({url!r}, lang, m, t, _cell_values(i, j, k))
                    print(lang, m, t, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    reported = set()
    try:
        while len(reported) < 10:
            line = proc.stdout.readline()
            assert line, "writer ended early"
            reported.add(tuple(line.split()))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    done = R.done_cells(url)
    assert reported <= done and len(done) < len(cells)
    expected = dict(cells)
    ds = R.open_results(url)
    for cell in done:
        _assert_cell(ds, cell, expected[cell])
    pending = ~ds.done.values
    assert np.isnan(ds.statistic.values[pending]).all() and (ds.n_x.values[pending] == -1).all()

    # Resume: writing only the missing cells gives the cube of an uninterrupted run.
    for cell, values in cells:
        if cell not in done:
            R.write_cell(url, *cell, values)
    assert R.done_cells(url) == set(expected)
    ds = R.open_results(url)
    for cell, values in cells:
        _assert_cell(ds, cell, values)


@pytest.mark.slow
def test_s3_bucket_end_to_end(s3_bucket):
    """The same contract on an S3 endpoint (moto), in one test because each request is slow there."""
    bucket, options = s3_bucket
    store = Store(f"s3://{bucket}/run/results.zarr", options, LANGS[1:], METHODS, TESTS[2:])
    url = store.url
    store.create()
    cells = store.cells()
    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda cv: R.write_cell(Location(url, options), *cv[0], cv[1]), cells[1:]))
    assert R.done_cells(Location(url, options)) == {c for c, _ in cells[1:]}

    store.create()  # same config: resumes
    R.write_cell(Location(url, options), *cells[0][0], cells[0][1])
    ds = R.open_results(Location(url, options))
    for cell, values in cells:
        _assert_cell(ds, cell, values)
    assert R.compact_results(Location(url, options)) == len(cells)
    # a finished cube opens in a few requests: about two per variable, whatever the number of cells
    import s3fs

    calls = []
    real_call = s3fs.S3FileSystem._call_s3

    async def counting_call(self, method, *args, **kwargs):
        calls.append(method)
        return await real_call(self, method, *args, **kwargs)

    s3fs.S3FileSystem._call_s3 = counting_call
    try:
        R.open_results(Location(url, options))
        n_open_results = len(calls)
        calls.clear()
        plain = xr.open_zarr(url, consolidated=False, storage_options=options).load()
        n_open_zarr = len(calls)
    finally:
        s3fs.S3FileSystem._call_s3 = real_call
    n_arrays = len(R.CELL_VARIABLES) + 1 + len(R.DIMS)
    assert n_open_results <= 2 * n_arrays + 6, calls
    assert n_open_zarr <= 5 * n_arrays + 6, calls  # xarray adds HEADs and listings of its own
    _assert_cell(plain, *cells[-1])
    assert R.done_cells(Location(url, options)) == {c for c, _ in cells}
    assert plain.attrs["config"] == CONFIG and plain["n_x"].dtype == np.int64
    assert "key" not in str(plain.attrs) and "secret" not in str(plain.attrs)

    R.write_scores(Location(url, options), "de", _scores(["Frau", "Mann"]))
    assert R.scores_done(Location(url, options), "de")
    assert not R.scores_done(Location(url, options), "pt_BR")
    assert [str(w) for w in R.open_scores(Location(url, options), language="de").word.values] == ["Frau", "Mann"]
    R.write_null(Location(url, options), "de", "zipf", "weat10", np.arange(4.0))
    np.testing.assert_array_equal(R.read_null(Location(url, options), "de", "zipf", "weat10"), np.arange(4.0))

    with pytest.raises(StoreConflictError, match="--overwrite"):
        store.create(config_text=CONFIG + "seed: 1\n")
    store.create(config_text=CONFIG + "seed: 1\n", overwrite=True)
    assert R.done_cells(Location(url, options)) == set()
    assert not R.scores_done(Location(url, options), "de")


def test_a_store_of_an_older_biasdask_still_reads_resumes_and_compacts(tmp_path):
    """Written before the string variables and the records existed: nothing a user had becomes unreadable."""
    import shutil

    url = str(tmp_path / "results.zarr")
    _create(url)
    for name in ("t_method", "attribute_words_a", "cells"):
        shutil.rmtree(tmp_path / "results.zarr" / name)
    (cell_a, values_a), (cell_b, values_b) = _cells()[:2]
    root = zarr.open_group(url, mode="r+")
    i, j, k = 0, 0, 0
    root["statistic"][i, j, k] = values_a["statistic"]
    root["done"][i, j, k] = True
    ds = R.open_results(url)
    assert ds.statistic.values[0, 0, 0] == values_a["statistic"] and (ds.t_method.values == "").all()
    R.write_cell(url, *cell_b, values_b)
    assert R.done_cells(url) == {cell_a, cell_b}
    assert R.compact_results(url) == 1
    ds = R.open_results(url)
    assert ds.sel(dict(zip(R.DIMS, cell_b))).note.item() == values_b["note"]
    assert ds.sel(dict(zip(R.DIMS, cell_b))).t_method.item() == ""  # the store has no place for it


def test_a_variable_under_its_former_name_is_read_resumed_and_compacted_under_its_new_one(tmp_path):
    """A store whose cube names t_method ``weighting`` (as earlier releases wrote it): its cells read as
    t_method, a resumed run's cells are folded into its ``weighting`` array, and the cube still shows
    ``weighting`` for one release."""
    url = str(tmp_path / "results.zarr")
    _create(url)
    (tmp_path / "results.zarr" / "t_method").rename(tmp_path / "results.zarr" / "weighting")
    (cell_a, values_a), (cell_b, values_b) = _cells()[:2]
    R.write_cell(url, *cell_a, values_a)
    assert R.compact_results(url) == 1
    R.write_cell(url, *cell_b, values_b)  # pending: read from its record
    ds = R.open_results(url)
    for cell, values in ((cell_a, values_a), (cell_b, values_b)):
        assert ds.sel(dict(zip(R.DIMS, cell))).t_method.item() == values["t_method"]
    np.testing.assert_array_equal(ds["weighting"].values, ds["t_method"].values)
    assert "deprecated" in ds["weighting"].attrs["description"]
    stored = zarr.open_group(url, mode="r")
    assert "t_method" not in stored and stored["weighting"][0, 0, 0] == values_a["t_method"]
