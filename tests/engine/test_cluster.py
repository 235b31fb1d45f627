import subprocess
import sys

import pytest
from distributed import Client, LocalCluster

from biasdask.engine.cluster import client_scope, get_client
from biasdask.errors import BiasdaskError


@pytest.fixture()
def scheduler():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def test_explicit_scheduler_address(scheduler):
    with client_scope(scheduler=scheduler) as c:
        assert c.scheduler.address == scheduler
        assert c.submit(sum, [1, 2]).result() == 3


def test_dask_scheduler_address_from_environment(scheduler, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", scheduler)
    with client_scope() as c:
        assert c.scheduler.address == scheduler


def test_explicit_client_is_used_and_left_open(scheduler):
    with Client(scheduler) as mine:
        with client_scope(mine) as c:
            assert c is mine
        assert mine.status == "running"


def test_gateway_configured_without_package(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    monkeypatch.setenv("DASK_GATEWAY__ADDRESS", "http://127.0.0.1:9")
    monkeypatch.setitem(sys.modules, "dask_gateway", None)
    with pytest.raises(BiasdaskError, match="dask-gateway is not installed"):
        get_client()


def test_unreachable_scheduler_is_one_line_error(tmp_path):
    from biasdask.engine.ingest import ingest

    (tmp_path / "en.vec").write_text("2 2\nmale 1 0\nfemale 0 1\n")
    ingest(str(tmp_path / "en.vec"), str(tmp_path / "en.zarr"), "en", client=False, progress=False)  # stores are checked first
    study = tmp_path / "s.yaml"
    study.write_text("output: " + str(tmp_path / "r.zarr") + "\nlanguages: {en: {store: " + str(tmp_path / "en.zarr") + "}}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "run", str(study), "--scheduler", "tcp://127.0.0.1:9", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "cannot reach Dask scheduler at tcp://127.0.0.1:9" in proc.stderr
