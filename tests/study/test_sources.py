"""A study that names its sources: run ingests every missing store as a task of its stream, reuses a store
whose source is unchanged without reading it, re-ingests a changed one only with update, and stops a
language whose source fails, alone. Sources are generated .vec.gz files served by an http.server on
127.0.0.1 (Range requests, ETag and Last-Modified, every request counted)."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from email.utils import formatdate
from pathlib import Path

import dask.config
import numpy as np
import pytest
import xarray as xr
import yaml
from distributed import get_task_stream
from tqdm import tqdm

import biasdask
from biasdask.demo import filler_words
from biasdask.engine.sources import FetchedEvents
from biasdask.errors import BiasdaskError, ConfigError, StoreConflictError
from biasdask.io import results as rs
from biasdask.io.store import open_embeddings, store_identity
from biasdask.lexicon import languages
from biasdask.study.config import parse_config

MALE_FEMALE = languages().set_index("code")[["male", "female"]]
KEYS = {"methods": ["uniform"], "tests": ["gender"], "n_permutations": 99, "seed": 3}


def vec_gz(path: Path, code: str, *, n_words: int = 3000, dim: int = 8, seed: int = 0) -> Path:
    """A fastText-like .vec.gz (4 decimals) of a generated language whose attribute words are the
    catalog's, at ranks 41 and 42."""
    rng = np.random.default_rng(seed)
    male, female = MALE_FEMALE.loc[code]
    words = filler_words(male, female, n_words)
    words[40], words[41] = male, female
    vectors = np.round(rng.standard_normal((n_words, dim)), 4)
    lines = [f"{n_words} {dim}"] + [w + " " + " ".join(f"{v:.4f}" for v in row) + " " for w, row in zip(words, vectors)]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    return path


class _Sources(http.server.SimpleHTTPRequestHandler):
    """Serves files with Range requests, ETag and Last-Modified; logs every request; sends ``delay``
    seconds apart pieces of ``piece`` bytes (a slow network)."""

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by http.server
        pass

    def _file(self) -> tuple[bytes, os.stat_result] | None:
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            return None
        return path.read_bytes(), path.stat()

    def _head(self, status: int, data: bytes, st: os.stat_result, start: int, end: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", '"' + hashlib.md5(data).hexdigest() + '"')  # noqa: S324 - a tag, not a secret
        self.send_header("Last-Modified", formatdate(st.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()

    def do_HEAD(self):
        self.server.log.append(("HEAD", self.path, None))
        found = self._file()
        if found is None:
            self.send_error(404)
            return
        self._head(200, found[0], found[1], 0, len(found[0]))

    def do_GET(self):
        asked = self.headers.get("Range")
        self.server.log.append(("GET", self.path, asked))
        found = self._file()
        if found is None:
            self.send_error(404)
            return
        data, st = found
        start, end, status = 0, len(data), 200
        if asked:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", asked)
            start, end, status = int(m[1]), (int(m[2]) + 1 if m[2] else len(data)), 206
        self._head(status, data, st, start, end)
        step, delay = self.server.piece, self.server.delay
        for at in range(start, end, step):
            try:
                self.wfile.write(data[at : min(end, at + step)])
            except OSError:  # the reader went away (killed)
                return
            time.sleep(delay)


@pytest.fixture()
def sources(tmp_path):
    """The http server of the sources: yields ``(folder, base URL, server)``; ``server.log`` holds every
    request (method, path, Range header)."""
    root = tmp_path / "www"
    root.mkdir()

    class Handler(_Sources):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.log, server.piece, server.delay = [], 1 << 20, 0.0
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def _study(tmp_path: Path, base: str, codes, output: str = "results.zarr", **keys) -> dict:
    return {
        "output": str(tmp_path / output),
        "embeddings": str(tmp_path / "emb" / "{language}.zarr"),
        "sources": base + "/cc.{language}.vec.gz",
        "languages": list(codes),
        "ingest": {"chunk_words": 500},
        **KEYS,
        **keys,
    }


def _clean_run(tmp_path: Path, root: Path, codes, name: str) -> xr.Dataset:
    """The oracle: each source ingested by biasdask.ingest from its file, then the study on those stores."""
    stores = {}
    for code in codes:
        stores[code] = str(tmp_path / name / f"{code}.zarr")
        biasdask.ingest(str(root / f"cc.{code}.vec.gz"), stores[code], language=code, chunk_words=500, progress=False)
    study = {"output": str(tmp_path / name / "results.zarr"), "languages": {c: {"store": s} for c, s in stores.items()}}
    return biasdask.run({**study, **KEYS}, progress=False), stores


def _same_cells(a: xr.Dataset, b: xr.Dataset) -> None:
    for name in ("statistic", "p_value", "effect_size", "n_x", "store_fingerprint"):
        np.testing.assert_array_equal(a[name].values, b[name].values)


# -- the study file ----------------------------------------------------------------------------------


def test_sources_as_a_template_a_mapping_or_per_language():
    base = {"output": "r.zarr", "embeddings": "emb/{language}.zarr", "languages": ["en", "fr"]}
    cfg = parse_config({**base, "sources": "https://h/cc.{language}.300.vec.gz"})
    assert [s.source for s in cfg.languages] == ["https://h/cc.en.300.vec.gz", "https://h/cc.fr.300.vec.gz"]
    cfg = parse_config({**base, "sources": {"fr": "s3://b/fr.vec.xz"}})
    assert [s.source for s in cfg.languages] == [None, "s3://b/fr.vec.xz"]
    languages = {"en": {"source": "/data/en.vec.bz2"}, "fr": None}
    cfg = parse_config({**base, "languages": languages, "ingest": {"max_words": 5, "dim": 300}})
    assert [s.source for s in cfg.languages] == ["/data/en.vec.bz2", None]
    assert (cfg.ingest.max_words, cfg.ingest.dim, cfg.ingest.input_format) == (5, 300, "auto")
    # where the stores come from is no part of what the results are: the same digest
    assert cfg.digest() == parse_config({**base, "languages": languages}).digest()


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"sources": "https://h/cc.vec.gz"}, "sources: expected a URL template containing '{language}'"),
        ({"sources": {"de": "https://h/de.vec"}}, "sources.de: not a language of the study"),
        ({"sources": {"fr": ""}}, "sources.fr: expected the path or URL of an embedding file"),
        ({"sources": {"fr": "ftpx://h/fr.vec"}}, "sources.fr: unknown protocol ftpx://"),
        ({"sources": "https://h/{language}.vec", "embeddings": None}, "languages.en.store: no store URL"),
        ({"ingest": {"dim": 0}}, "ingest.dim: expected an integer >= 1"),
        ({"ingest": {"format": "bin"}}, "ingest.format: 'bin' is not one of"),
        ({"ingest": {"words": 5}}, "ingest: unknown key(s) ['words']"),
    ],
)
def test_bad_sources_are_refused_naming_the_key(keys, message):
    raw = {"output": "r.zarr", "embeddings": "emb/{language}.zarr", "languages": ["en", "fr"], **keys}
    with pytest.raises(ConfigError) as info:
        parse_config({k: v for k, v in raw.items() if v is not None})
    assert str(info.value).startswith(message)


def test_each_embedding_of_a_study_names_its_own_sources():
    raw = {
        "output": "r.zarr",
        "languages": {"en": None, "fr": {"source": {"wiki": "/data/wiki.fr.vec"}}},
        "embeddings": {
            "cc": {"store": "emb/cc/{language}.zarr", "sources": "https://h/cc.{language}.300.vec.gz"},
            "wiki": {"store": "emb/wiki/{language}.zarr", "sources": {"en": "https://h/wiki.en.vec"}},
        },
    }
    study = parse_config(raw)
    found = {name: [s.source for s in cfg.languages] for name, cfg in study.studies.items()}
    assert found == {
        "cc": ["https://h/cc.en.300.vec.gz", "https://h/cc.fr.300.vec.gz"],
        "wiki": ["https://h/wiki.en.vec", "/data/wiki.fr.vec"],
    }
    with pytest.raises(ConfigError, match=r"^sources: the study has several embeddings"):
        parse_config({**raw, "sources": "https://h/{language}.vec"})
    languages = {"en": None, "fr": {"source": "/data/fr.vec"}}
    with pytest.raises(ConfigError, match=r"^languages\.fr\.source: the study has several embeddings"):
        parse_config({**raw, "languages": languages})
    embeddings = {**raw["embeddings"], "wiki": {"store": "w/{language}.zarr", "sources": {"de": "/d.vec"}}}
    with pytest.raises(ConfigError, match=r"^embeddings\.wiki\.sources\.de: not a language of the study"):
        parse_config({**raw, "embeddings": embeddings})


# -- ingested by the run, reused, updated --------------------------------------------------------------


def test_run_ingests_the_missing_stores_then_reuses_them_without_reading_the_sources(tmp_path, sources, cli):
    root, base, server = sources
    codes = ["en", "de", "fr"]
    for i, code in enumerate(codes):
        vec_gz(root / f"cc.{code}.vec.gz", code, seed=i)
    study = _study(tmp_path, base, codes)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    with dask.config.set({"biasdask.sources.part-size": "16KiB"}):
        code, _, err = cli("run", path, "--workers", "0", "--progress")
    assert code == 0, err
    # one display: the cells, the bytes fetched and the stores made
    total = sum((root / f"cc.{c}.vec.gz").stat().st_size for c in codes)
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("cells: 100%") and "stores made 3/3" in last
    assert f"fetched {tqdm.format_sizeof(total, 'B', 1000)}" in last  # MB of 10**6 bytes
    cube = rs.open_results(study["output"])
    clean, stores = _clean_run(tmp_path, root, codes, "clean")
    _same_cells(cube, clean)
    for code in codes:
        made = store_identity(tmp_path / "emb" / f"{code}.zarr")
        assert made.fingerprint == store_identity(stores[code]).fingerprint  # the store ingest writes
        assert made.source["url"] == f"{base}/cc.{code}.vec.gz" and made.source["etag"].startswith('"')
        attrs = open_embeddings(tmp_path / "emb" / f"{code}.zarr").attrs
        assert attrs["ingest"] == {"input_format": "auto", "max_words": None, "chunk_words": 500, "compression": "gzip"}
        assert not (tmp_path / "emb" / f"{code}.zarr.source").exists()  # the download is removed once done
    assert all(kind == "HEAD" or rng is None for kind, _, rng in server.log)  # each source read once, whole

    server.log.clear()
    again = biasdask.run(study, progress=False)
    _same_cells(again, cube)
    assert [kind for kind, _, _ in server.log] == ["HEAD"] * len(codes)  # asked, not read


def test_on_a_cluster_the_ingest_task_hands_blocks_to_a_free_thread_and_writes_the_same_store(
    tmp_path, sources, dask_client
):
    """One language on two one-thread workers, the run's display on (the task reports the bytes it
    fetches): its task decompresses, the other thread parses and writes blocks beside it; with
    blocks-beside 0 the task parses every block. Both stores are the one ingest writes, bit for bit."""
    root, base, _ = sources
    vec_gz(root / "cc.en.vec.gz", "en", n_words=6000)
    clean, stores = _clean_run(tmp_path, root, ["en"], "clean")
    for beside, handed in ((2, True), (0, False)):
        study = _study(tmp_path, base, ["en"], output=f"results-{beside}.zarr")
        study["embeddings"] = str(tmp_path / f"emb-{beside}" / "{language}.zarr")
        with dask.config.set({"biasdask.sources.blocks-beside": beside}), get_task_stream(dask_client) as stream:
            cube = biasdask.run(study, client=dask_client, progress=True)
        blocks = [t for t in stream.data if "ingest_block" in str(t["key"])]
        assert bool(blocks) == handed
        _same_cells(cube, clean)
        made = store_identity(tmp_path / f"emb-{beside}" / "en.zarr")
        assert made.fingerprint == store_identity(stores["en"]).fingerprint


@pytest.mark.parametrize("value", [-1, 1.5])
def test_a_bad_blocks_beside_setting_is_named_and_no_store_is_made(tmp_path, sources, value):
    root, base, _ = sources
    vec_gz(root / "cc.en.vec.gz", "en", n_words=600)
    study = _study(tmp_path, base, ["en"])
    expected = rf"biasdask\.sources\.blocks-beside .* is {value}: expected a whole number of at least 0"
    with dask.config.set({"biasdask.sources.blocks-beside": value}), pytest.raises(ConfigError, match=expected):
        biasdask.run(study, progress=False)
    assert not (tmp_path / "emb").exists()


def _report_pieces(events, pieces: int) -> None:
    with events.in_this_task() as fetched:
        for _ in range(pieces):
            fetched(1000)
            time.sleep(0.001)


def test_the_bytes_a_task_fetches_reach_the_client_in_few_events_and_all_of_them(dask_client):
    """A download's 1 MiB pieces would be thousands of events a second for the scheduler: a task sends
    at most one every 0.25 s, and what it holds as it ends."""
    topic = "test-fetched"
    received: list = []
    dask_client.subscribe_topic(topic, lambda event: received.append(event[1]))
    try:
        dask_client.submit(_report_pieces, FetchedEvents(topic), 500, pure=False).result(timeout=60)
        deadline = time.monotonic() + 10
        while sum(received) < 500_000 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        dask_client.unsubscribe_topic(topic)
    assert sum(received) == 500_000
    assert 1 <= len(received) <= 8  # 500 pieces over ~0.6 s


def test_a_study_of_two_embeddings_ingests_each_from_its_own_sources(tmp_path, sources):
    root, base, _ = sources
    codes = ["en", "de"]
    for i, code in enumerate(codes):
        vec_gz(root / f"cc.{code}.vec.gz", code, seed=i)
        vec_gz(root / f"wiki.{code}.vec.gz", code, seed=10 + i)
    embeddings = {
        name: {"store": str(tmp_path / name / "{language}.zarr"), "sources": base + f"/{name}.{{language}}.vec.gz"}
        for name in ("cc", "wiki")
    }
    study = {**_study(tmp_path, base, codes), "embeddings": embeddings}
    del study["sources"]
    tree = biasdask.run(study, progress=False)
    for name in ("cc", "wiki"):
        for code in codes:  # each store made from its own embedding's file
            made = store_identity(tmp_path / name / f"{code}.zarr")
            assert made.source["url"] == f"{base}/{name}.{code}.vec.gz"
    for name in ("cc", "wiki"):
        (root / name).mkdir()
        for code in codes:
            (root / name / f"cc.{code}.vec.gz").write_bytes((root / f"{name}.{code}.vec.gz").read_bytes())
        clean, _ = _clean_run(tmp_path, root / name, codes, f"clean-{name}")
        _same_cells(tree[name].to_dataset(), clean)


def test_a_changed_source_is_refused_then_ingested_again_with_update(tmp_path, sources):
    root, base, server = sources
    codes = ["en", "de"]
    for i, code in enumerate(codes):
        vec_gz(root / f"cc.{code}.vec.gz", code, seed=i)
    study = _study(tmp_path, base, codes)
    biasdask.run(study, progress=False)
    old_de = store_identity(tmp_path / "emb" / "de.zarr")
    vec_gz(root / "cc.en.vec.gz", "en", seed=9)
    with pytest.raises(StoreConflictError) as info:
        biasdask.run(study, progress=False)
    message = str(info.value)
    assert "\n" not in message and f"en ({base}/cc.en.vec.gz): the source changed since its store" in message
    assert "--update" in message and "de (" not in message
    server.log.clear()
    cube = biasdask.run(study, progress=False, update=True)
    assert {path for kind, path, _ in server.log if kind == "GET"} == {"/cc.en.vec.gz"}  # de is not read again
    clean, _ = _clean_run(tmp_path, root, codes, "clean")
    _same_cells(cube, clean)
    assert store_identity(tmp_path / "emb" / "de.zarr").store_id == old_de.store_id  # kept as it was


def test_failing_sources_stop_their_language_alone_with_one_line_each(tmp_path, sources, cli):
    root, base, server = sources
    vec_gz(root / "cc.en.vec.gz", "en")
    whole = vec_gz(root / "cc.es.vec.gz", "es").read_bytes()
    (root / "cc.es.vec.gz").write_bytes(whole[: len(whole) // 2])  # ends early
    vec_gz(root / "cc.it.vec.gz", "it", dim=6)  # another dimension
    vec_gz(root / "cc.nl.vec.gz", "en", seed=5)  # English vectors: no Dutch attribute word
    study = _study(tmp_path, base, ["en", "fr", "es", "it", "nl", "pt"], ingest={"chunk_words": 500, "dim": 8})
    study["languages"] = {code: {} for code in study["languages"]}
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}/cc.pt.vec.gz"
        study["languages"]["pt"] = {"source": silent_url}
        path = tmp_path / "study.yaml"
        path.write_text(yaml.safe_dump(study))
        with dask.config.set({"biasdask.http.read-timeout": 1}):
            code, out, err = cli("run", path, "--workers", "0", "--quiet")
    assert code == 2
    lines = err.strip().splitlines()
    reasons = {
        "fr": "no such file or unreachable",
        "es": "truncated gzip stream",
        "it": "vectors of dimension 6, not the study's 8",
        "nl": "none of the attribute words A of language nl (mannelijk)",
        "pt": "read timeout of 1 s",
    }
    for code, reason in reasons.items():
        line = [ln for ln in lines if ln.startswith(f"biasdask: {code}: ")]
        url = silent_url if code == "pt" else f"{base}/cc.{code}.vec.gz"
        assert len(line) == 1 and url in line[0] and reason in line[0], (code, lines)
    assert lines[-1].startswith("biasdask: error: 5 language(s) with cells not run"), lines[-1]
    assert "fetched" not in err and "cells:" not in err  # --quiet
    cube = rs.open_results(study["output"])
    assert np.isfinite(cube["statistic"].sel({"language": "en"}).values).all()
    done = rs.done_cells(study["output"])
    assert {language for language, _, _ in done} == {"en"}  # the others' cells are left to run again
    for code in reasons:
        store = tmp_path / "emb" / f"{code}.zarr"
        with pytest.raises(BiasdaskError):
            open_embeddings(store)  # nothing half-made looks complete
    for code in ("es", "it", "nl"):  # the file itself is at fault: its copy is not kept
        assert not (tmp_path / "emb" / f"{code}.zarr.source").exists()
    # the cube says which languages were not run and why
    code, out, err = cli("show", study["output"])
    assert code == 0
    note = [ln for ln in (out + err).splitlines() if "cells done" in ln]
    assert len(note) == 1 and "5 language(s) with cells not run" in note[0], note
    for code, reason in reasons.items():
        assert f"{code}: " in note[0] and reason in note[0], (code, note)
    from biasdask.report import cells_line  # and so does the report's header

    header = cells_line(rs.open_results(study["output"]))
    assert "are empty: not run" in header and all(reason in header for reason in reasons.values()), header


def test_on_a_cluster_a_missing_source_is_named_as_on_one_machine(tmp_path, sources, dask_client):
    """The error a worker's ingest task raises for a 404 reaches the client as it is: its chain (the http
    response, whose headers cannot be pickled) stays on the worker, so Dask does not replace it by a
    generic Exception quoting its repr."""
    root, base, _ = sources
    vec_gz(root / "cc.en.vec.gz", "en")
    study = _study(tmp_path, base, ["en", "fr"])
    with pytest.raises(BiasdaskError) as caught:
        biasdask.run(study, client=dask_client, progress=False)
    message = str(caught.value)
    assert f"fr: {base}/cc.fr.vec.gz: no such file or unreachable" in message, message
    assert "Exception:" not in message and "BiasdaskError(" not in message, message


# -- interrupted -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_killed_while_downloading_resumes_the_download_and_equals_an_uninterrupted_run(
    tmp_path, sources, dask_client
):
    root, base, server = sources
    codes = ["en", "de"]
    for i, code in enumerate(codes):
        vec_gz(root / f"cc.{code}.vec.gz", code, seed=i, n_words=4000)
    size = (root / "cc.en.vec.gz").stat().st_size
    server.piece, server.delay = 4096, 0.05  # about 3 s per source
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(_study(tmp_path, base, codes)))
    env = {**os.environ, "DASK_BIASDASK__SOURCES__PART_SIZE": "16KiB"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "biasdask.cli", "run", str(path), "--workers", "1", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    staged = tmp_path / "emb" / "en.zarr.source"
    deadline = time.monotonic() + 120
    while len(list(staged.glob("part-*"))) < 2:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "no part of the download staged in time"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    kept = sum(p.stat().st_size for p in staged.glob("part-*"))
    assert 0 < kept < size
    with pytest.raises(BiasdaskError):
        open_embeddings(tmp_path / "emb" / "en.zarr")  # nothing half-made looks complete

    server.piece, server.delay = 1 << 20, 0.0
    server.log.clear()
    with dask.config.set({"biasdask.sources.part-size": "16KiB"}):
        cube = biasdask.run(path, client=dask_client, progress=False)  # on worker processes
    ranges = [rng for kind, p, rng in server.log if kind == "GET" and p == "/cc.en.vec.gz"]
    assert ranges == [f"bytes={kept}-"]  # only what was not copied is fetched again
    clean, stores = _clean_run(tmp_path, root, codes, "clean")
    _same_cells(cube, clean)
    for code in codes:
        assert store_identity(tmp_path / "emb" / f"{code}.zarr").fingerprint == store_identity(stores[code]).fingerprint
    assert not staged.exists()


@pytest.mark.slow
def test_a_worker_killed_while_downloading_is_replaced_and_its_task_resumes_the_download(
    tmp_path, sources, dask_client
):
    root, base, server = sources
    vec_gz(root / "cc.en.vec.gz", "en", n_words=4000)
    server.piece, server.delay = 4096, 0.05
    study = _study(tmp_path, base, ["en"])
    outcome: dict = {}

    def run() -> None:
        try:
            with dask.config.set({"biasdask.sources.part-size": "16KiB"}):
                outcome["cube"] = biasdask.run(study, client=dask_client, progress=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    staged = tmp_path / "emb" / "en.zarr.source"
    deadline = time.monotonic() + 120
    while len(list(staged.glob("part-*"))) < 2:
        assert thread.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.01)
    busy = [addr for addr, keys in dask_client.processing().items() if any("ingest_source" in k for k in keys)]
    pids = dask_client.run(os.getpid, workers=busy)
    os.kill(pids[busy[0]], signal.SIGKILL)
    thread.join(240)
    assert "error" not in outcome, outcome.get("error")
    gets = [rng for kind, p, rng in server.log if kind == "GET" and p == "/cc.en.vec.gz"]
    assert gets[0] is None and len(gets) == 2 and int(re.fullmatch(r"bytes=(\d+)-", gets[1])[1]) > 0
    clean, stores = _clean_run(tmp_path, root, ["en"], "clean")
    _same_cells(outcome["cube"], clean)
    assert store_identity(tmp_path / "emb" / "en.zarr").fingerprint == store_identity(stores["en"]).fingerprint
