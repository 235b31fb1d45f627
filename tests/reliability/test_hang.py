"""Nothing waits for ever: network reads time out, unbounded requests are refused up front."""

from __future__ import annotations

import socket
import threading
import time

import dask.config
import pytest

from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError, ConfigError
from biasdask.study.config import parse_config
from tests.reliability.helpers import assert_one_line_error


@pytest.fixture()
def silent_server():
    """A TCP server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_an_http_source_that_never_answers_times_out(tmp_path, silent_server):
    result: list = []

    def go():
        try:
            ingest(f"{silent_server}/en.vec", str(tmp_path / "en.zarr"), language="en", client=False, progress=False)
        except BaseException as exc:  # noqa: BLE001 - checked below
            result.append(exc)

    start = time.monotonic()
    with dask.config.set({"biasdask.http.connect-timeout": 2, "biasdask.http.read-timeout": 1}):
        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        thread.join(60)
    assert not thread.is_alive(), "the ingest is still waiting for the server"
    assert time.monotonic() - start < 30
    (exc,) = result
    assert isinstance(exc, BiasdaskError) and "timed out" in str(exc) and "read 1 s" in str(exc)
    assert "\n" not in str(exc)


def test_workers_are_bounded_naming_the_limit(tmp_path, cli):
    for n in ("-1", "100000"):
        code, _, err = cli("ingest", "x.vec", "-o", tmp_path / "x.zarr", "--language", "en", "--workers", n)
        assert_one_line_error(code, err, "--workers", "expected 0 to")


def test_n_permutations_is_bounded_naming_the_limit():
    with pytest.raises(ConfigError, match="n_permutations: at most 100,000,000"):
        parse_config({"output": "r.zarr", "languages": {"en": "en.zarr"}, "n_permutations": 10**12})
    from biasdask.stats.permutation import permutation_test_local as permutation_test

    with pytest.raises(ValueError, match="between 1 and 100,000,000"):
        permutation_test([1.0, 2.0], [3.0], n_permutations=10**12)


def test_the_cli_ingest_of_an_http_source_that_never_answers_ends_within_the_timeouts(tmp_path, silent_server, cli):
    # before: the CLI sized the source with plain fsspec, without the timeouts, and waited for ever
    result: list = []

    def go():
        result.append(
            cli("ingest", f"{silent_server}/en.vec", "-o", tmp_path / "en.zarr", "--language", "en", "--quiet")
        )

    start = time.monotonic()
    with dask.config.set({"biasdask.http.connect-timeout": 2, "biasdask.http.read-timeout": 1}):
        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        thread.join(60)
    assert not thread.is_alive(), "biasdask ingest is still waiting for the server"
    assert time.monotonic() - start < 30
    ((code, _, err),) = result
    assert_one_line_error(code, err, "timed out", "127.0.0.1")
    assert not (tmp_path / "en.zarr").exists()
