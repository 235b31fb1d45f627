import os
import subprocess
import sys

import pytest
from distributed import Client, LocalCluster

from biasdask import Resampling
from biasdask.engine.cluster import WarmKernels, client_scope, get_client
from biasdask.errors import BiasdaskException, MissingDependencyError, SchedulerError


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
    with pytest.raises(MissingDependencyError, match=r"dask-gateway is not installed .*biasdask\[gateway\]"):
        get_client()


def test_unreachable_scheduler_is_one_line_error(tmp_path):
    from biasdask.engine.ingest import ingest

    (tmp_path / "en.vec").write_text("2 2\nmale 1 0\nfemale 0 1\n")
    ingest(
        str(tmp_path / "en.vec"), str(tmp_path / "en.zarr"), language="en", client=False, progress=False
    )  # stores are checked first
    study = tmp_path / "s.yaml"
    study.write_text(
        "output: " + str(tmp_path / "r.zarr") + "\nlanguages: {en: {store: " + str(tmp_path / "en.zarr") + "}}\n"
    )
    # the connect timeout is Dask's own setting (here from the environment, as a DaskJob pod would set it)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    proc = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "run", str(study), "--scheduler", "tcp://127.0.0.1:9", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip().count("\n") == 0
        and "cannot reach Dask scheduler at tcp://127.0.0.1:9 within 2s" in proc.stderr
    )


def test_connect_timeout_follows_dask_config():
    import dask

    from biasdask.engine.cluster import connect_timeout

    assert connect_timeout() == dask.config.get("distributed.comm.timeouts.connect")
    with dask.config.set({"distributed.comm.timeouts.connect": "7s"}):
        assert connect_timeout() == "7s"
        with dask.config.set({"biasdask.scheduler.connect-timeout": "2s"}):
            assert connect_timeout() == "2s"


def test_unreachable_scheduler_is_a_value_and_connection_error():
    import dask

    with dask.config.set({"biasdask.scheduler.connect-timeout": "1s"}):
        with pytest.raises(
            ConnectionError, match=r"cannot reach Dask scheduler at tcp://127.0.0.1:9 within 1s"
        ) as info:
            get_client(scheduler="tcp://127.0.0.1:9")
    # an OSError (the network), not a ValueError: nothing was wrong with the input
    assert isinstance(info.value, OSError) and isinstance(info.value, BiasdaskException)
    assert not isinstance(info.value, ValueError)


class _FakeOptions(dict):
    def __getattr__(self, key):
        return self[key]

    def __setattr__(self, key, value):
        self[key] = value


class _FakeGatewayCluster:
    def __init__(self, options, shutdown_on_close):
        self.name, self.options, self.shutdown_on_close = "fake-1", options, shutdown_on_close
        self.adapted, self.scaled, self.shut_down = None, None, False

    def adapt(self, minimum, maximum):
        self.adapted = (minimum, maximum)

    def scale(self, n):
        self.scaled = n

    def get_client(self):
        client = _FakeClient(self)
        return client

    def shutdown(self):
        self.shut_down = True

    def close(self):
        raise AssertionError("a Gateway cluster must be shut down, not only closed")


class _FakeClient:
    dashboard_link = "http://gateway/dashboard"

    def __init__(self, cluster):
        self.cluster, self.closed, self.plugins = cluster, False, {}

    def register_plugin(self, plugin, name):
        self.plugins[name] = plugin

    def close(self):
        self.closed = True


def test_gateway_cluster_is_bounded_idle_timed_and_shut_down(monkeypatch):
    """With DASK_GATEWAY__ADDRESS, a run's Gateway cluster adapts within the configured bounds, asks for the
    configured idle timeout, shuts down when its client closes, and client_scope shuts it down on exit."""
    import types

    import dask

    clusters = []

    class Gateway:
        def cluster_options(self):
            return _FakeOptions(idle_timeout=0, worker_cores=1)

        def new_cluster(self, options, shutdown_on_close):
            clusters.append(_FakeGatewayCluster(options, shutdown_on_close))
            return clusters[-1]

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    monkeypatch.setenv("DASK_GATEWAY__ADDRESS", "http://gateway")
    monkeypatch.setitem(sys.modules, "dask_gateway", types.SimpleNamespace(Gateway=Gateway))
    with dask.config.set({"biasdask.gateway.maximum-workers": 7, "biasdask.gateway.idle-timeout": "10 minutes"}):
        with client_scope() as client:
            (cluster,) = clusters
            assert client.cluster is cluster and cluster.shutdown_on_close
            assert cluster.adapted == (1, 7) and cluster.options.idle_timeout == 600
            assert isinstance(client.plugins["biasdask-warm-kernels"], WarmKernels)  # workers it adds load the kernels
        assert client.closed and cluster.shut_down
    with client_scope(n_workers=3):
        assert clusters[-1].scaled == 3 and clusters[-1].adapted is None


def test_worker_count_of_a_local_cluster_comes_from_dask(monkeypatch):
    import dask.system

    from biasdask.engine import cluster

    seen = {}

    class Recorder:
        def __init__(self, n_workers, threads_per_worker, **kw):
            seen.update(n_workers=n_workers, threads=threads_per_worker)
            raise RuntimeError("stop here")

    for var in ("DASK_SCHEDULER_ADDRESS", "DASK_GATEWAY__ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cluster, "LocalCluster", Recorder)
    monkeypatch.setattr(dask.system, "CPU_COUNT", 5)
    with pytest.raises(SchedulerError, match="cannot start a local Dask cluster: RuntimeError: stop here"):
        get_client()
    assert seen == {"n_workers": 5, "threads": 1}


def test_biasdask_namespace_is_registered_on_import_and_read_from_yaml_and_environment(tmp_path):
    """``import biasdask`` registers the packaged defaults; Dask's YAML files and DASK_BIASDASK__ variables win."""
    (tmp_path / "mine.yaml").write_text("biasdask:\n  gateway:\n    maximum-workers: 50\n", encoding="utf-8")
    env = {**os.environ, "DASK_CONFIG": str(tmp_path), "DASK_BIASDASK__BATCH_DURATION": "4s"}
    code = (
        "import dask, biasdask; g = dask.config.get; "
        "print(g('biasdask.batch-duration'), g('biasdask.in-process-threshold'), "
        "g('biasdask.gateway.maximum-workers'), g('biasdask.gateway.minimum-workers'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert out.stdout.split() == ["4s", "200ms", "50", "1"]


def _kernel_state(dask_worker):
    """On a worker: what WarmKernels.setup returned, and the signatures each compiled kernel has loaded."""
    from numba.core.dispatcher import Dispatcher

    from biasdask.io import parse
    from biasdask.stats import association, permutation

    plugin = dask_worker.plugins.get(WarmKernels.name)
    loaded = {
        f"{module.__name__}.{name}": len(obj.signatures)
        for module in (permutation, association, parse)
        for name, obj in vars(module).items()
        if isinstance(obj, Dispatcher)
    }
    return getattr(plugin, "seconds", None), loaded


def test_workers_load_the_kernels_when_they_join(monkeypatch):
    """A LocalCluster of get_client loads the compiled kernels on its workers (WarmKernels), and a worker that
    joins later does too, before its first task: the permutation batches then compile or load nothing new,
    and their result is the local one bit for bit. (The time it saves is measured by benchmarks/study.py.)"""
    import time

    import dask
    import numpy as np

    from biasdask.engine.permutation import permutation_test
    from biasdask.stats.permutation import permutation_test_local

    for var in ("DASK_SCHEDULER_ADDRESS", "DASK_GATEWAY__ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    with dask.config.set({"biasdask.local-cluster.n-workers": 1, "biasdask.local-cluster.threads-per-worker": 1}):
        with client_scope() as client:
            client.cluster.scale(2)
            client.wait_for_workers(2)
            deadline = time.monotonic() + 600  # a guard against a hang: cold kernels compile slowly on a loaded machine
            while any(seconds is None for seconds, _ in client.run(_kernel_state).values()):
                assert time.monotonic() < deadline, "WarmKernels.setup did not finish on every worker"
                time.sleep(0.2)
            before = client.run(_kernel_state)
            for seconds, loaded in before.values():
                assert set(seconds) == {
                    "permutation (sampled)",
                    "permutation (exact)",
                    "association",
                    "embedding readers",
                    "scaled-integer stores",
                }
                for name in ("_masked_sums", "_null_sums", "_exact_sums"):
                    assert loaded[f"biasdask.stats.permutation.{name}"] == 1
                assert loaded["biasdask.stats.association._association_kernel"] == 1
                assert loaded["biasdask.io.parse._parse_text_kernel"] == 1

            rng = np.random.default_rng(4)
            x, y = rng.standard_normal(300), rng.standard_normal(200)
            got = permutation_test(
                x,
                y,
                client=client,
                return_null=True,
                resampling=Resampling(n_permutations=2000, seed=9, batch_size=250),
            )
            want = permutation_test_local(x, y, 2000, seed=9, return_null=True)
            assert got.null_distribution.tobytes() == want.null_distribution.tobytes() and got.p_value == want.p_value
            assert client.run(_kernel_state) == before  # the batches found every kernel loaded


def _mapped_blocks_of_a_fresh_megabyte() -> int:
    """How many new mmap'd blocks one freshly allocated 1 MiB buffer takes in this process (glibc's
    ``mallinfo2().hblks``): 1 when malloc maps it, 0 when it comes from the heap."""
    import ctypes

    import numpy as np

    class Mallinfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena",
                "ordblks",
                "smblks",
                "hblks",
                "hblkhd",
                "usmblks",
                "fsmblks",
                "uordblks",
                "fordblks",
                "keepcost",
            )
        ]

    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Mallinfo2
    before = mallinfo2().hblks
    buffer = np.empty(2**20, dtype=np.uint8)
    grew = mallinfo2().hblks - before
    del buffer
    return grew


def test_workers_keep_freed_memory_while_biasdask_works_then_give_it_back():
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which pins glibc's mmap threshold at 128 KiB: a chunk-sized
    buffer is then a fresh mapping (zeroed page by page). Inside the block (a run, an ingest) it comes from
    the heap; nested blocks count; after the last one the workers are as Dask started them."""
    import ctypes

    from biasdask.engine import cluster as cluster_module
    from biasdask.engine.cluster import workers_keep_freed_memory

    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("not glibc >= 2.33 (no mallinfo2)")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        assert set(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()) == {"65536"}
        assert set(client.run(_mapped_blocks_of_a_fresh_megabyte).values()) == {1}
        with workers_keep_freed_memory(client):
            with workers_keep_freed_memory(client):
                assert set(client.run(lambda: cluster_module._heap_users).values()) == {2}
            assert set(client.run(_mapped_blocks_of_a_fresh_megabyte).values()) == {0}
        assert set(client.run(lambda: cluster_module._heap_users).values()) == {0}
        assert set(client.run(_mapped_blocks_of_a_fresh_megabyte).values()) == {1}
    with workers_keep_freed_memory(None):  # no distributed client: nothing to do
        pass
