"""Shared fixtures: real components started for the tests."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

# Every Dask process of the suite (session clusters, CLI runs, notebook kernels) samples its CPU and memory
# for the dashboard every 2 s instead of 0.5 s: two idle clusters per xdist worker otherwise cost ~3 % of a core.
os.environ.setdefault("DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL", "2s")

SHARED = Path(os.environ.get("BIASDASK_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
SHARED_DATA = SHARED / "data"


def pytest_collection_modifyitems(items):
    """Tests marked ``slow`` first: with ``pytest -n`` (pytest-xdist, ``--dist load``) they are dealt out
    round-robin at the start instead of ending the run on one worker while the other idles."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: otherwise file order


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (the published reference data); skips with a visible reason without it."""
    if not (SHARED_DATA / "PROVENANCE.md").exists():
        pytest.skip(f"reference data not found at {SHARED_DATA} (set BIASDASK_SHARED)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _no_default_client_left_behind():
    """Close a default ``distributed`` client that a test left behind: once its cluster is gone, every
    later Dask computation of this xdist worker on the default scheduler would wait for it."""
    yield
    from distributed.client import _get_global_client

    leaked = _get_global_client()
    if leaked is not None:
        leaked.close()


@pytest.fixture(scope="session")
def dask_client():
    """A ``LocalCluster`` of two single-threaded worker processes, shared by the session.

    Not made the default client: tests that want it pass it (or use ``as_current()``), so it cannot leak
    into tests of the default-scheduler paths.
    """
    from distributed import Client, LocalCluster

    # Workers without the S3 settings of s3_server in their environment, whichever fixture came first:
    # as on a Gateway cluster, storage_options must bring them.
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL")
    s3_env = {k: os.environ.pop(k) for k in names if k in os.environ}
    try:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0")
    finally:
        os.environ.update(s3_env)
    with cluster:
        with Client(cluster, set_as_default=False) as client:
            yield client


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (random port); yields ``storage_options`` for s3fs.

    Credentials are fake and set in the environment for code that reads them from there.
    """
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL")}
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    yield {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture()
def s3_bucket(s3_server, request):
    """A fresh bucket on the moto server; yields ``(bucket_name, storage_options)``."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3_server)
    name = "bd-" + request.node.name.lower().replace("_", "-").replace("[", "-").replace("]", "")[:40].strip("-")
    fs.mkdir(name)
    s3fs.S3FileSystem.clear_instance_cache()
    yield name, s3_server


@pytest.fixture()
def http_server(tmp_path):
    """An ``http.server`` thread on 127.0.0.1 serving ``tmp_path / "www"``; yields ``(root, base_url)``."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by http.server
        pass


@pytest.fixture()
def cli(capsys):
    """Run ``biasdask ARGS`` in this process; returns ``(exit code, stdout, stderr)``."""
    from biasdask.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture()
def on_cluster(dask_client, monkeypatch):
    """Make ``biasdask run`` use the session's LocalCluster (worker processes) via DASK_SCHEDULER_ADDRESS."""
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", dask_client.scheduler.address)
    return dask_client


# --------------------------------------------------------------------------------------------------
# Real embeddings of ../shared/data, ingested once per session.

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"


@pytest.fixture(scope="session")
def glove_store(shared_data, tmp_path_factory) -> str:
    """The URL of a store of the GloVe 840B vectors of the WEAT 1 and 7 words."""
    from biasdask.engine.ingest import ingest

    dest = str(tmp_path_factory.mktemp("glove") / "glove.zarr")
    ingest(str(shared_data / GLOVE), dest, language="en", input_format="glove", client=False, progress=False)
    return dest


@pytest.fixture(scope="session")
def glove_text(shared_data):
    """The same GloVe vectors read by an independent float64 reader."""
    from tests.stores import read_text_vectors

    return read_text_vectors(shared_data / GLOVE, header=False)


@pytest.fixture(scope="session")
def iat_store(shared_data, tmp_path_factory):
    """``get(language)``: the URL of a store of the fastText Common Crawl vectors of the IAT words of a
    language (ingested at the first call)."""
    from biasdask.engine.ingest import ingest

    root = tmp_path_factory.mktemp("iat")

    def get(language: str) -> str:
        dest = root / f"{language}.zarr"
        if not dest.exists():
            source = str(shared_data / "iat" / "cc" / f"{language}.vec")
            ingest(source, str(dest), language=language, input_format="vec", client=False, progress=False)
        return str(dest)

    return get


# --------------------------------------------------------------------------------------------------
# In-memory embeddings: use these wherever writing a file is not what a test is about.

#: Words of the small in-memory model: attribute words first, then WEAT 7's sets, then filler.
SMALL_ATTRIBUTES = ("male", "female", "he", "she")


def small_vectors(n_words: int = 400, dim: int = 16, seed: int = 7):
    """(float32 vectors, words) of a small model with a planted male/female axis and one zero vector.

    Words: ``male``, ``female``, ``he``, ``she``, then the words of WEAT 7 (math/arts x male/female
    terms), then ``w<i>`` filler; row 5 is all zeros.
    """
    import numpy as np

    from biasdask.lexicon import weat_test

    sets = weat_test("weat7")
    words = list(dict.fromkeys([*SMALL_ATTRIBUTES, *sets.x, *sets.y, *sets.a, *sets.b]))
    words += [f"w{i}" for i in range(len(words), n_words)]
    rng = np.random.default_rng(seed)
    axis = np.eye(dim)[0]
    vectors = rng.standard_normal((n_words, dim)) + 0.2 * axis
    vectors[0], vectors[1], vectors[2], vectors[3] = 3 * axis, -3 * axis, 2 * axis + 0.1, -2 * axis + 0.1
    # math and male terms lean one way, arts and female terms the other: WEAT 7 has an effect to find
    for group, sign in ((sets.x, 1), (sets.a, 1), (sets.y, -1), (sets.b, -1)):
        for w in group:
            vectors[words.index(w)] += sign * 1.5 * axis
    vectors[5] = 0.0
    return vectors.astype(np.float32), words


@pytest.fixture(scope="session")
def small_model():
    """``(vectors, words)``: float32 array and word list (see :func:`small_vectors`)."""
    return small_vectors()


@pytest.fixture(scope="session")
def small_kv(small_model):
    """The small model as a gensim ``KeyedVectors`` (gensim as an independent container)."""
    from gensim.models import KeyedVectors

    vectors, words = small_model
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(words, vectors)
    return kv


@pytest.fixture(scope="session")
def small_dataarray(small_model):
    """The small model as a numpy-backed ``xarray.DataArray`` (word, dim), language ``en``."""
    import xarray as xr

    vectors, words = small_model
    return xr.DataArray(vectors, dims=("word", "dim"), coords={"word": words}, attrs={"language": "en"})
