"""The study as one task stream: same bits on any scheduler, no broadcast, cells written as they finish."""

from __future__ import annotations

import time
from pathlib import Path

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster, get_task_stream

import biasdask
import biasdask.study.graphs as graphs_module
import biasdask.study.plan as plan_module
import biasdask.study.run as run_module
import biasdask.study.stream as stream_module
from biasdask import Resampling, Vocabulary
from biasdask.engine.bias_tests import full_vocabulary_test
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError
from biasdask.io import results as rs
from biasdask.study.plan import family_seed
from tests.stores import generated_store, study_of

#: every numeric variable of the cube, from its registry
CELL_VARS = [name for name, (dtype, _, _) in rs.CELL_VARIABLES.items() if dtype is not str]
WORDS = {"en": ("male", "female"), "de": ("männlich", "weiblich")}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stream")
    return {
        code: generated_store(tmp, code, words=words, n_words=2500, dim=16, strength=0.1 * (i + 1), seed=i)
        for i, (code, words) in enumerate(WORDS.items())
    }


def _study(stores, output, **kw):
    return study_of(
        stores,
        output,
        **{
            "methods": ["uniform", "zipf", "frequency"],
            "tests": ["gender", "weat7"],
            "n_permutations": 301,
            "seed": 5,
            **kw,
        },
    )


def _cube(out):
    return {v: out[v].values for v in CELL_VARS}


def test_same_bits_threads_one_worker_two_workers_and_one_cell_at_a_time(tmp_path, stores, dask_client):
    threads = biasdask.run(_study(stores, str(tmp_path / "threads.zarr")), progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as one:
            single = biasdask.run(_study(stores, str(tmp_path / "one.zarr"), batch_size=37), client=one, progress=False)
    two = biasdask.run(_study(stores, str(tmp_path / "two.zarr")), client=dask_client, progress=False)
    for other in (single, two):
        for v, values in _cube(threads).items():
            np.testing.assert_array_equal(values, other[v].values, err_msg=v)
    for code in WORDS:
        for method in ("uniform", "zipf", "frequency"):
            a = rs.read_null(str(tmp_path / "threads.zarr"), code, method, "gender")
            np.testing.assert_array_equal(a, rs.read_null(str(tmp_path / "two.zarr"), code, method, "gender"))
    # One cell at a time, with the language's shared seed, gives the same numbers and null.
    assert np.isfinite(threads["p_value"].sel({"test": "gender"}).values).all()
    for code in WORDS:
        for method in ("uniform", "zipf", "frequency"):
            alone = full_vocabulary_test(
                stores[code],
                *([w] for w in WORDS[code]),
                method=method,
                resampling=Resampling(n_permutations=301, seed=family_seed(5, code, "gender")),
                return_null=True,
                progress=False,
            )
            cell = threads.sel({"language": code, "method": method, "test": "gender"})
            for field, var in [
                ("statistic", "statistic"),
                ("p_value", "p_value"),
                ("effect_size", "effect_size"),
                ("null_mean", "null_mean"),
                ("z_score", "z_score"),
            ]:
                assert getattr(alone, field) == float(cell[var]), (code, method, field)
            null = rs.read_null(str(tmp_path / "threads.zarr"), code, method, "gender")
            np.testing.assert_array_equal(alone.null_distribution, null)


def test_pools_go_only_to_workers_that_use_them(tmp_path, stores):
    """No broadcast: a family's pool reaches only workers that run a task needing it (here, on three
    workers, two batches and the cells' task: a worker that runs none of them never receives it)."""
    study = _study(
        {"en": stores["en"]},
        str(tmp_path / "r.zarr"),
        methods=["uniform", "zipf"],
        tests=["gender"],
        n_permutations=2000,
        batch_size=1000,
    )
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as client:
            client.scatter = None  # the stream never scatters (a call would fail)
            with get_task_stream(client) as ts:
                biasdask.run(study, client=client, progress=False)
            received = client.run(
                lambda dask_worker: sorted(str(k) for entry in dask_worker.transfer_incoming_log for k in entry["keys"])
            )
    batches = [t for t in ts.data if str(t["key"]).startswith("family_batch")]
    users = {t["worker"] for t in ts.data if str(t["key"]).startswith(("family_batch", "family_cells"))}
    makers = {t["worker"] for t in ts.data if str(t["key"]).startswith("family_pools")}
    got_pool = {w for w, keys in received.items() if any(k.startswith("family_pools") for k in keys)}
    assert len(batches) == 2 and len(makers) == 1 and got_pool <= users - makers


def test_families_share_the_worker_threads_and_the_last_ones_spread_wider(tmp_path, stores, monkeypatch):
    """A family's batches are planned over its share of the worker threads: the threads over the families
    running or still to plan (two here, on three threads: three slots each, so six batches of the
    permutations, not the twelve of a family alone); a later family, with fewer left, gets as many or
    more; and the results are those of batches of any size."""
    spreads = []
    real_plan = plan_module.batch_plan

    def recording(n_values, n_permutations, batch_size=None, n_slots=1, rate=None):
        spreads.append(n_slots)
        return real_plan(n_values, n_permutations, batch_size, n_slots, rate)

    monkeypatch.setattr(plan_module, "batch_plan", recording)
    study = _study(stores, str(tmp_path / "r.zarr"), methods=["uniform"], tests=["gender"], n_permutations=600)
    with dask.config.set({"num_workers": 3, "biasdask.min-batch-duration": "0s"}):
        out = biasdask.run(study, progress=False)
    assert len(spreads) == 2 and spreads[0] == 3 and 3 <= spreads[1] <= 6
    one = biasdask.run({**study, "output": str(tmp_path / "one.zarr"), "batch_size": 600}, progress=False)
    np.testing.assert_array_equal(out["p_value"].values, one["p_value"].values)


def test_a_slow_language_does_not_hold_back_the_cells_of_another(tmp_path, stores, monkeypatch):
    """Cells are written as they finish: de's cells are written while en (first in the study, its
    scores slowed down) is still computing."""
    real_scores = graphs_module.scores_graph

    def slow_identity(block):
        time.sleep(3.0)
        return block

    def scores_graph(emb, *args, **kwargs):
        graph = real_scores(emb, *args, **kwargs)
        if graph.scores.attrs["language"] == "en":
            return graph._replace(stacked=graph.stacked.map_blocks(slow_identity, dtype=np.float32))
        return graph

    monkeypatch.setattr(graphs_module, "scores_graph", scores_graph)
    written = []
    real_write = rs.write_cell
    monkeypatch.setattr(
        rs, "write_cell", lambda url, lang, m, t, *a, **k: written.append(lang) or real_write(url, lang, m, t, *a, **k)
    )
    biasdask.run(_study(stores, str(tmp_path / "r.zarr"), methods=["uniform"], tests=["gender"]), progress=False)
    assert written == ["de", "en"]


def test_a_failing_task_fails_the_run_and_a_rerun_resumes(tmp_path, stores, monkeypatch):
    real = stream_module.family_pools
    de_seed = family_seed(5, "de", "gender")

    def fails_for_de(rows, n_permutations, alternative, seed, *pieces):
        if seed == de_seed:
            raise RuntimeError("disk on fire")
        return real(rows, n_permutations, alternative, seed, *pieces)

    monkeypatch.setattr(stream_module, "family_pools", fails_for_de)
    study = _study(stores, str(tmp_path / "r.zarr"), methods=["uniform"], tests=["gender"])
    with pytest.raises(RuntimeError, match="disk on fire"):
        biasdask.run(study, progress=False)
    assert ("de", "uniform", "gender") not in rs.done_cells(study["output"])
    monkeypatch.setattr(stream_module, "family_pools", real)
    out = biasdask.run(study, progress=False)
    assert np.isfinite(out["p_value"].values).all()


def test_classic_cells_are_tasks_that_read_only_their_rows(tmp_path):
    """weat7, career_family and rnd run as tasks on the workers (the client reads no row), on the rows
    they need only, and give the numbers of one cell at a time on the whole store."""
    from biasdask.study.cells import cell_words, run_cell
    from biasdask.study.plan import cell_seed

    tests = ["weat7", "career_family", "rnd"]
    needed = list(dict.fromkeys(w for t in tests for w in cell_words(t, "en")))
    rng = np.random.default_rng(3)
    words = needed[::2] + [f"filler{i}" for i in range(3000)] + needed[1::2]  # rows in several chunks
    src = tmp_path / "en.vec"
    with open(src, "w") as f:
        f.write(f"{len(words)} 12\n")
        for w in words:
            f.write(w + " " + " ".join(f"{v:.4f}" for v in rng.normal(0, 0.3, 12)) + "\n")
    store = str(tmp_path / "en.zarr")
    ingest(str(src), store, language="en", client=False, progress=False, chunk_words=1000)
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": store}},
        "methods": ["uniform", "zipf"],
        "tests": tests,
        "n_permutations": 499,
        "seed": 9,
    }
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as client, get_task_stream(client) as ts:
            cube = biasdask.run(study, client=client, progress=False)
    assert sum(str(t["key"]).startswith("classic_cell") for t in ts.data) == len(tests)
    threads = biasdask.run({**study, "output": str(tmp_path / "t.zarr")}, progress=False)
    for test in tests:
        alone = run_cell(
            test,
            store,
            language="en",
            resampling=Resampling(n_permutations=499, seed=cell_seed(9, "en", "uniform", test)),
        )
        for method in ("uniform", "zipf"):
            for out in (cube, threads):
                cell = out.sel({"language": "en", "method": method, "test": test})
                np.testing.assert_equal(float(cell["statistic"]), alone.statistic)
                np.testing.assert_equal(float(cell["p_value"]), alone.p_value)
                assert int(cell["n_x"]) == alone.n_x and int(cell["n_a"]) == alone.n_a


def test_per_word_scores_are_written_where_they_were_computed(tmp_path, stores, dask_client, monkeypatch):
    """A language's per-word scores never travel to the client: a task on a worker writes them (the
    client's write_scores is never called), and they equal biasdask.scores computed in this process
    (words, ranks, u, every t row, attributes)."""
    monkeypatch.setattr(rs, "write_scores", lambda *a, **k: pytest.fail("the client wrote per-word scores"))
    study = _study(stores, str(tmp_path / "r.zarr"), methods=["uniform", "zipf"], tests=["gender"])
    with get_task_stream(dask_client) as ts:
        biasdask.run(study, client=dask_client, progress=False)
    writers = {t["worker"] for t in ts.data if str(t["key"]).startswith("write_scores")}
    assert writers and writers <= set(dask_client.nthreads())
    for code in WORDS:
        written = rs.open_scores(study["output"], language=code).load()
        direct = biasdask.scores(
            stores[code], written.attrs["used_a"], written.attrs["used_b"], methods=["uniform", "zipf"]
        ).load()
        assert list(written["word"].values) == list(direct["word"].values)
        assert written["rank"].values.tolist() == list(range(1, direct.sizes["word"] + 1))
        assert written["u"].values.tobytes() == direct["u"].values.tobytes()
        assert written["t"].values.tobytes() == direct["t"].values.tobytes()
        for key in ("n_a", "n_b", "used_a", "used_b", "n_words", "n_zero_vectors", "association"):
            assert written.attrs[key] == direct.attrs[key], key


def test_stored_words_are_copied_as_stored_and_cut_to_max_words(tmp_path, dask_client):
    """The written scores' words are the store's word chunks, copied byte for byte (checksums
    included) and cut to ``max_words`` (here within the third of four chunks), not decoded and
    encoded again; they read back as the words biasdask.scores gives."""
    url = generated_store(tmp_path, "en", words=WORDS["en"], n_words=2500, dim=16, chunk_words=700)
    study = _study({"en": url}, str(tmp_path / "r.zarr"), methods=["uniform"], tests=["gender"], max_words=1500)
    biasdask.run(study, client=dask_client, progress=False)
    written = rs.open_scores(study["output"], language="en").load()
    direct = biasdask.scores(
        url,
        written.attrs["used_a"],
        written.attrs["used_b"],
        methods=["uniform"],
        vocabulary=Vocabulary(max_words=1500),
    ).load()
    assert written.sizes["word"] == 1500
    assert list(written["word"].values) == list(direct["word"].values)
    assert written["u"].values.tobytes() == direct["u"].values.tobytes()
    copied = tmp_path / "r.zarr" / "scores" / "en" / "word" / "c"
    assert sorted(p.name for p in copied.iterdir()) == ["0", "1", "2"]
    for k in range(3):
        assert (copied / str(k)).read_bytes() == (Path(url) / "word" / "c" / str(k)).read_bytes()


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    """Four words: a family's 8 pooled values have C(8, 4) = 70 splits, all enumerated (exact)."""
    tmp = tmp_path_factory.mktemp("tiny")
    rows = {"male": "0.9 0.1 0.0", "female": "0.1 0.9 0.0", "doctor": "0.7 0.2 0.3", "nurse": "0.2 0.8 0.1"}
    src = tmp / "tiny.vec"
    src.write_text(f"{len(rows)} 3\n" + "".join(f"{w} {v}\n" for w, v in rows.items()))
    url = str(tmp / "tiny.zarr")
    ingest(str(src), url, language="en", client=False, progress=False)
    return url


def test_an_exact_family_on_the_stream_equals_the_test_alone(tmp_path, tiny_store, dask_client):
    """The batches are planned before the pool exists; when the pool turns out exact they are ignored and
    every split enumerated: the cells equal full_vocabulary_test in this process."""
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": tiny_store, "a": ["male"], "b": ["female"]}},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": 301,
        "seed": 3,
    }
    out = biasdask.run(study, client=dask_client, progress=False)
    for method in ("uniform", "zipf"):
        alone = full_vocabulary_test(
            tiny_store,
            ["male"],
            ["female"],
            method=method,
            progress=False,
            resampling=Resampling(n_permutations=301, seed=family_seed(3, "en", "gender")),
        )
        cell = out.sel({"language": "en", "method": method, "test": "gender"})
        assert bool(cell["exact"]) and alone.exact
        assert float(cell["p_value"]) == alone.p_value and float(cell["statistic"]) == alone.statistic


def test_a_family_without_a_usable_word_is_named_and_left_empty(tmp_path, tiny_store, dask_client):
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": tiny_store, "a": ["male"], "b": ["female"]}},
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 99,
        "seed": 3,
        "exclude_words": ["male", "female", "doctor", "nurse"],
    }
    with pytest.raises(BiasdaskError, match="en: no word has a usable vector"):
        biasdask.run(study, client=dask_client, progress=False)
    cube = rs.open_results(study["output"])
    assert np.isnan(float(cube["p_value"].sel({"language": "en", "method": "uniform", "test": "gender"})))


def test_scores_are_written_here_when_the_workers_do_not_see_the_results_store(stores, dask_client):
    """memory:// is a store of this process only (as a local path of the laptop is for a remote cluster):
    the workers' own memory:// would swallow the scores, so they are gathered and written from here."""
    import uuid

    out = f"memory://bd-{uuid.uuid4().hex}/r.zarr"
    study = _study(stores, out, methods=["uniform", "zipf"], tests=["gender"])
    with get_task_stream(dask_client) as ts:
        biasdask.run(study, client=dask_client, progress=False)
    assert not [t for t in ts.data if str(t["key"]).startswith("write_scores")]
    assert dask_client.run(lambda: __import__("fsspec").filesystem("memory").exists(out)) == dict.fromkeys(
        dask_client.nthreads(), False
    )
    for code in WORDS:
        written = rs.open_scores(out, language=code).load()
        direct = biasdask.scores(
            stores[code], written.attrs["used_a"], written.attrs["used_b"], methods=["uniform", "zipf"]
        ).load()
        assert written["t"].values.tobytes() == direct["t"].values.tobytes()
        assert list(written["word"].values) == list(direct["word"].values)


def test_pools_and_scores_writes_take_the_scores_chunks_directly(tmp_path):
    """No task gathers a language's scores into one array before its pool and its scores write: they
    depend on the chunks' tasks themselves (one scheduler round trip less before the permutations), and
    the results equal those of a run on threads, whose tasks get the whole array."""
    store = generated_store(tmp_path, "en", n_words=2500, dim=16, seed=4, chunk_words=500)
    study = {
        "languages": {"en": {"store": store}},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": 301,
        "seed": 2,
    }
    threads = biasdask.run({**study, "output": str(tmp_path / "threads.zarr")}, progress=False)
    counts = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as client:
            # one stored chunk a task, then (by default) the store's 5 small chunks in one task
            for name, task_bytes in (("two", 1), ("grouped", "128MiB")):
                with dask.config.set({"biasdask.scores-task-bytes": task_bytes}), get_task_stream(client) as ts:
                    biasdask.run({**study, "output": str(tmp_path / f"{name}.zarr")}, client=client, progress=False)
                keys = [str(t["key"]) for t in ts.data]
                counts[name] = sum("stored_scores" in k for k in keys)
                assert not [k for k in keys if k.startswith("finalize-")]
    assert counts == {"two": 5, "grouped": 1}
    for name in ("two", "grouped"):  # the same bits, placebo included, however the chunks are grouped
        other = rs.open_results(str(tmp_path / f"{name}.zarr"))
        for v, values in _cube(threads).items():
            np.testing.assert_array_equal(values, other[v].values, err_msg=v)
        np.testing.assert_array_equal(threads["p_value_placebo"].values, other["p_value_placebo"].values)
        a, b = (
            rs.open_scores(str(tmp_path / "threads.zarr"), language="en"),
            rs.open_scores(str(tmp_path / f"{name}.zarr"), language="en"),
        )
        for var in ("u", "t", "word"):
            np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=var)


def test_the_client_reads_no_vocabulary_and_the_cube_is_the_same(tmp_path, stores, dask_client, monkeypatch):
    """A study's client decodes no store's words: a task on a worker finds those each language needs, and
    the frequency weights are made by the tasks that read each block's words (the client reads at most a
    first chunk, to see whether wordfreq knows any). The cube (and the nulls) are bit for bit those of a
    run whose client reads every word."""
    import biasdask.io.store as store_module

    study = dict(methods=["uniform", "zipf", "frequency"], tests=["gender", "weat7"], placebo={"n": 50})
    with monkeypatch.context() as m:  # every store opened with its words, in this process
        m.setattr(run_module, "open_vectors", store_module.open_embeddings)
        full = biasdask.run(_study(stores, str(tmp_path / "words.zarr"), **study), progress=False)
    decoded = []

    def no_words_here(*args, **kwargs):
        decoded.append(args[0])
        raise AssertionError("the client decoded a store's words")

    monkeypatch.setattr(store_module, "_read_words", no_words_here)  # this process only: not the workers
    lean = biasdask.run(_study(stores, str(tmp_path / "lean.zarr"), **study), client=dask_client, progress=False)
    assert decoded == []
    for v in CELL_VARS:
        np.testing.assert_array_equal(full[v].values, lean[v].values, err_msg=v)
    assert np.isfinite(lean["p_value"].sel({"test": "gender"}).values).all()  # (weat7's words: not in these)
    # (the real vectors' study of tests/test_golden.py, classic cells included, runs this way too)
    for code in WORDS:
        for method in ("zipf", "frequency"):
            np.testing.assert_array_equal(
                rs.read_null(str(tmp_path / "words.zarr"), code, method, "gender"),
                rs.read_null(str(tmp_path / "lean.zarr"), code, method, "gender"),
            )


def test_a_study_that_drops_repeated_vectors_reads_no_vocabulary_in_the_client(tmp_path, dask_client, monkeypatch):
    """dedupe_vectors: tasks hash the stored rows and one task finds the repeats to leave out; the
    client decodes no word, and the scores are those of biasdask.scores with every word in memory."""
    import biasdask.io.store as store_module

    rng = np.random.default_rng(4)
    words = ["male", "female", *(f"w{i}" for i in range(300))]
    vec = np.round(rng.standard_normal((len(words), 8)), 4)
    vec[[50, 60, 70]] = vec[10]  # spaCy-style: later words share row 10's vector
    vec[80] = vec[2]
    src = tmp_path / "en.vec"
    lines = (w + " " + " ".join(f"{x:.4f}" for x in row) + "\n" for w, row in zip(words, vec))
    src.write_text(f"{len(words)} 8\n" + "".join(lines))
    store = str(tmp_path / "en.zarr")
    ingest(str(src), store, language="en", client=False, progress=False, chunk_words=64)
    ref = biasdask.scores(
        biasdask.open_embeddings(store),
        ["male"],
        ["female"],
        methods=["uniform"],
        vocabulary=Vocabulary(dedupe_vectors=True),
    )
    assert ref.attrs["n_duplicate_vectors"] == 4 and np.isnan(ref["u"].values[[50, 60, 70, 80]]).all()

    def no_words_here(*args, **kwargs):
        raise AssertionError("the client decoded a store's words")

    monkeypatch.setattr(store_module, "_read_words", no_words_here)  # this process only: not the workers
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": store, "a": ["male"], "b": ["female"]}},
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 99,
        "seed": 1,
        "dedupe_vectors": True,
    }
    out = biasdask.run(study, client=dask_client, progress=False)
    written = rs.open_scores(study["output"], language="en").load()
    assert written.attrs["n_duplicate_vectors"] == 4
    np.testing.assert_array_equal(written["u"].values, ref["u"].values)
    assert float(out["statistic"].sel({"language": "en", "method": "uniform", "test": "gender"})) == pytest.approx(
        float(np.nansum(ref["t"].sel({"method": "uniform"}).values.astype(np.float64))), rel=1e-6
    )


def test_a_store_opened_without_its_words_answers_only_the_words_looked_up(stores):
    from biasdask.engine.scores import forget_words, found_words, positions
    from biasdask.io.store import find_words, open_embeddings, open_vectors

    lean = open_vectors(stores["en"], language="en")
    assert "word" not in lean.coords and lean.sizes == open_embeddings(stores["en"]).sizes
    asked = ["female", "nowhere", "male"]
    found_words(lean, asked, find_words(stores["en"], asked))
    try:
        words = open_embeddings(stores["en"])["word"].values.tolist()
        assert positions(lean, ["male", "nowhere"]).tolist() == [words.index("male"), -1]
        assert positions(lean.isel(word=slice(0, words.index("male"))), ["male"]).tolist() == [-1]  # cut off
        with pytest.raises(LookupError, match="not looked up"):
            positions(lean, ["other"])
    finally:
        forget_words(lean)
    with pytest.raises(LookupError):
        positions(lean, ["male"])
