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


class SilentServer(str):
    """The server's URL; ``connections`` are those it accepted."""

    def __new__(cls, url: str, connections: list):
        self = super().__new__(cls, url)
        self.connections = connections
        return self


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
    silent = SilentServer(f"http://127.0.0.1:{server.getsockname()[1]}", held)
    yield silent
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
    assert isinstance(exc, BiasdaskError) and "did not answer within the read timeout of 1 s" in str(exc)
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
    assert_one_line_error(code, err, "did not answer within the read timeout", "127.0.0.1")
    assert not (tmp_path / "en.zarr").exists()


@pytest.mark.parametrize("workers", [[], ["--workers", "0"]])
def test_a_silent_server_costs_one_timeout_not_one_per_request(tmp_path, silent_server, cli, workers):
    # before: the CLI's sizing (HEAD, then GET), the ingest's (HEAD, then GET) and its read each waited
    # the whole read timeout: 200 s and more with the defaults, 23 s with a read timeout of 5 s
    with dask.config.set({"biasdask.http.connect-timeout": 5, "biasdask.http.read-timeout": 1}):
        code, _, err = cli(
            "ingest", f"{silent_server}/en.vec", "-o", tmp_path / "en.zarr", "--language", "en", "--quiet", *workers
        )
    assert_one_line_error(
        code,
        err,
        "the server did not answer within the read timeout of 1 s",
        "raise Dask setting biasdask.http.read-timeout (DASK_BIASDASK__HTTP__READ_TIMEOUT)",
    )
    assert len(silent_server.connections) == 1  # one request waited; the others failed at once
    time.sleep(1.5)  # once the timeout has passed, the server is asked again
    with dask.config.set({"biasdask.http.connect-timeout": 5, "biasdask.http.read-timeout": 0.5}):
        assert (
            cli("ingest", f"{silent_server}/en.vec", "-o", tmp_path / "en.zarr", "--language", "en", "--quiet")[0] == 2
        )
    assert len(silent_server.connections) == 2


def test_the_default_timeouts_are_ones_a_user_would_wait():
    assert dask.config.get("biasdask.http.connect-timeout") == 30
    assert dask.config.get("biasdask.http.read-timeout") == 60
