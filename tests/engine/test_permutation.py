"""The distributed permutation engine: same bits on any cluster shape, batch size, or after a worker dies."""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster, get_task_stream

from biasdask import Resampling
from biasdask._dask_config import seconds
from biasdask.engine import permutation as engine
from biasdask.engine.permutation import kernel_rate, permutation_test
from biasdask.engine.pools import CONSERVATIVE_RATE, KernelRate, batch_plan, default_batch_size, measured_rate
from biasdask.stats.permutation import permutation_test_local

N_WORDS = 20_000


@pytest.fixture(scope="module")
def scores() -> np.ndarray:
    rng = np.random.default_rng(30)
    return (rng.standard_normal(N_WORDS) * 0.1 + 0.002).astype(np.float32)


@pytest.fixture(scope="module")
def own_cluster():
    """A cluster of this module's own (not made the default client), starting with one worker."""
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster, set_as_default=False) as client:
            yield cluster, client


@pytest.fixture()
def one_worker(own_cluster):
    cluster, client = own_cluster
    if len(client.nthreads()) != 1:
        cluster.scale(1)
        client.wait_for_workers(1)
        while len(client.nthreads()) > 1:
            time.sleep(0.05)
    return client


def _same(a, b):
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
    for field in ("statistic", "p_value", "z_score", "p_value_normal", "effect_size", "null_mean", "null_std"):
        assert getattr(a, field) == getattr(b, field), field
    assert (a.n_permutations, a.exact, a.alternative, a.seed) == (b.n_permutations, b.exact, b.alternative, b.seed)


@pytest.mark.parametrize("dummy", [True, False])
def test_bit_identical_on_two_workers_one_worker_and_any_batch_size(dask_client, one_worker, scores, dummy):
    y = N_WORDS if dummy else -scores[::-1][:15_000] * 0.5
    reference = permutation_test_local(scores, y, n_permutations=1500, seed=77, return_null=True)
    assert not reference.exact
    options = Resampling(n_permutations=1500, seed=77)
    kw = dict(return_null=True, progress=False)
    two = permutation_test(scores, y, client=dask_client, resampling=options.replace(batch_size=500), **kw)
    in_process = permutation_test(scores, y, client=dask_client, resampling=options, **kw)  # small: no tasks
    one = permutation_test(scores, y, client=one_worker, resampling=options.replace(batch_size=333), **kw)
    small = permutation_test(scores, y, client=dask_client, resampling=options.replace(batch_size=97), **kw)
    for other in (two, one, small, in_process):
        _same(reference, other)


def test_uses_the_current_client_and_shows_batches(dask_client, scores, capsys):
    with dask_client.as_current(), get_task_stream(client=dask_client) as stream:
        res = permutation_test(
            scores, N_WORDS, progress=True, resampling=Resampling(n_permutations=400, seed=3, batch_size=100)
        )
    ran = [t for t in stream.data if str(t["key"]).startswith("pools_batch")]
    assert len(ran) == 4
    err = capsys.readouterr().err
    assert "permutations" in err and "4/4" in err
    assert res.p_value == permutation_test_local(scores, N_WORDS, n_permutations=400, seed=3).p_value


def test_exact_enumeration_runs_in_process(monkeypatch):
    def no_dask(*args, **kwargs):
        raise AssertionError("an exact test must not use Dask")

    monkeypatch.setattr(engine, "compute", no_dask)
    x, y = [0.4, 1.3, -0.2, 0.9, 0.5, 1.1, 0.8, 0.7], [0.1, -0.3, 0.2, 0.6, -0.5, 0.0, 0.3, -0.1]
    res = permutation_test(x, y, progress=False, resampling=Resampling(n_permutations=12870))
    assert res.exact and res.n_permutations == 12870  # C(16, 8), like WEAT T6-T10
    assert res.p_value == permutation_test_local(x, y, n_permutations=12870).p_value


@pytest.mark.parametrize("scheduler", ["threads", "processes", "sync"])
def test_bit_identical_on_local_schedulers_without_a_cluster(scheduler, scores, monkeypatch):
    """No client: the batches run on Dask's default scheduler (whatever dask.config says), no cluster
    is started, and the bits are those of the plain in-process loop."""
    import distributed

    def no_cluster(*args, **kwargs):
        raise AssertionError("the Python API must not start a cluster")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    monkeypatch.setattr("biasdask.engine.cluster.LocalCluster", no_cluster)
    options = Resampling(n_permutations=900, seed=12)
    with dask.config.set(scheduler=scheduler, num_workers=2):
        res = permutation_test(
            scores, N_WORDS, resampling=options.replace(batch_size=100), return_null=True, progress=False
        )
        auto = permutation_test(scores, N_WORDS, resampling=options, return_null=True, progress=False)
    with pytest.raises(ValueError):
        Client.current()
    _same(permutation_test_local(scores, N_WORDS, n_permutations=900, seed=12, return_null=True), res)
    _same(res, auto)


def test_tunables_come_from_dask_config(scores, monkeypatch):
    calls = []
    monkeypatch.setattr(engine, "compute", lambda *parts, **kw: calls.append(len(parts)) or dask.compute(*parts))
    kw = dict(resampling=Resampling(n_permutations=900, seed=12), progress=False)
    permutation_test(scores, N_WORDS, **kw)  # ~0.04 s of estimated work: in this thread
    assert calls == []
    with dask.config.set({"biasdask.in-process-threshold": "1ms", "biasdask.batch-duration": "20us"}):
        permutation_test(scores, N_WORDS, **kw)
        # 20 us of work a batch at this process's measured rate (the duration as the config parses it)
        per_batch = max(1, int(seconds("batch-duration") / measured_rate().seconds(N_WORDS)))
    assert calls == [-(-900 // per_batch)] and calls[0] >= 2
    monkeypatch.setenv("DASK_BIASDASK__BATCH_DURATION", "3s")
    dask.config.refresh()
    try:
        assert dask.config.get("biasdask.batch-duration") == "3s"
        assert dask.config.get("biasdask.in-process-threshold") == "200ms"  # the packaged default survives
    finally:
        monkeypatch.delenv("DASK_BIASDASK__BATCH_DURATION")
        dask.config.refresh()


@pytest.mark.parametrize(
    "rate", [CONSERVATIVE_RATE, KernelRate(per_permutation=2e-7, per_value=5e-11)], ids=["conservative", "fast"]
)
def test_default_batch_size_spreads_and_bounds_work(rate):
    def work(n_values, size):  # the estimated seconds of one batch
        return size * rate.seconds(n_values)

    # Enough work: at least two batches per worker thread.
    assert -(-10_000 // default_batch_size(4_000_000, 10_000, 8, rate)) >= 16
    # A 2,000,000-word pool on 2 threads: batches of about a second, or a quarter of the work if less.
    size = default_batch_size(2_000_000, 10_000, 2, rate)
    assert work(2_000_000, size) == pytest.approx(min(1.0, work(2_000_000, 10_000) / 4), rel=0.01)
    # Spread over hundreds of threads, no batch falls below about 50 ms of work (the scheduler's ~1 ms
    # a task stays a small share); a test with less work in all is one batch.
    for n_values, slots in ((2_000_000, 256), (4_000_000, 512), (100_000, 256)):
        assert work(n_values, default_batch_size(n_values, 10_000, slots, rate)) >= 0.049
    assert default_batch_size(100, 10_000, 8, rate) == 10_000
    assert default_batch_size(10, 1, 4, rate) == 1


def test_a_faster_kernel_gets_longer_batches_of_the_same_duration():
    fast = KernelRate(per_permutation=2e-7, per_value=5e-11)
    slow, quick = default_batch_size(4_000_000, 10_000, 256), default_batch_size(4_000_000, 10_000, 256, fast)
    assert quick > 4 * slow  # the conservative estimate would cut 12 ms tasks on such a kernel
    assert batch_plan(4_000_000, 10_000, None, 256, fast)[0] == (0, quick)


def test_the_measured_rate_is_a_rate():
    """The kernel's rate, measured in this process: positive and finite (how well it predicts a batch is
    a timing, printed by benchmarks/permutation.py)."""
    rate = measured_rate.__wrapped__()
    assert 0 < rate.per_value < np.inf and 0 <= rate.per_permutation < np.inf
    assert rate.seconds(2_000) < rate.seconds(4_000)


def test_the_kernel_rate_is_the_workers_median(dask_client):
    """Batches are sized by the rate of the processes that run them: each worker measures its own once
    (the same value when asked again), and the plan takes their median."""
    first, again = dask_client.run(measured_rate), dask_client.run(measured_rate)
    assert first == again
    rate = kernel_rate(dask_client)
    assert rate == KernelRate(
        per_permutation=statistics.median(r.per_permutation for r in first.values()),
        per_value=statistics.median(r.per_value for r in first.values()),
    )
    assert kernel_rate(None) == measured_rate()  # no cluster: this process's


def test_bad_batch_size_raises(scores):
    with pytest.raises(ValueError, match="batch_size"):
        permutation_test(scores, 10, resampling=Resampling(batch_size=0))


@pytest.mark.parametrize("bad", [dict(alternative="bigger"), dict(n_permutations=0), dict(seed=-1), dict(batch_size=0)])
def test_bad_arguments_are_value_errors_like_scipys(scores, bad):
    with pytest.raises(ValueError):
        permutation_test(scores, 10, resampling=Resampling(**bad))


def _finished_batches(dask_scheduler) -> int:
    return sum(
        1 for key, ts in dask_scheduler.tasks.items() if str(key).startswith("pools_batch") and ts.state == "memory"
    )


def test_killed_worker_mid_run_gives_identical_result(own_cluster):
    """SIGKILL one worker process once some batches are done; the nanny restarts it, lost and running
    batches are recomputed, and the result is bit for bit that of an undisturbed run."""
    cluster, client = own_cluster
    cluster.scale(2)
    client.wait_for_workers(2, timeout=120)
    rng = np.random.default_rng(31)
    x = (rng.standard_normal(200_000) * 0.1).astype(np.float32)
    n_batches = 50
    pids = sorted(client.run(os.getpid).values())
    killed: dict[str, int] = {}

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = client.run_on_scheduler(_finished_batches)
            if done >= 3:
                os.kill(pids[0], signal.SIGKILL)
                killed["done"] = done
                return
            time.sleep(0.02)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    options = Resampling(n_permutations=2400, seed=5, batch_size=2400 // n_batches)
    res = permutation_test(x, x.size, client=client, resampling=options, return_null=True, progress=False)
    thread.join()
    assert killed, "the worker was never killed"
    assert killed["done"] < n_batches - 2, "the run was almost over when the worker died"
    client.wait_for_workers(2, timeout=120)
    assert pids[0] not in client.run(os.getpid).values()
    _same(permutation_test_local(x, x.size, n_permutations=2400, seed=5, return_null=True), res)


def test_several_weightings_on_the_cluster_equal_one_test_each(dask_client, scores):
    """permutation_tests: every row bit-identical to its own permutation_test (same seed), whatever the
    batches; a row zero elsewhere (like 'frequency') still matches."""
    from biasdask.engine.permutation import permutation_test, permutation_tests

    rows = np.stack([scores, (scores / np.arange(1, N_WORDS + 1)).astype(np.float32), scores.copy()])
    rows[2, ::3] = 0
    options = Resampling(n_permutations=600, seed=17)
    kw = dict(return_null=True, effect_x=scores, progress=False, client=dask_client)
    got = permutation_tests(rows, N_WORDS, resampling=options.replace(batch_size=130), **kw)
    for w in range(3):
        _same(got[w], permutation_test(rows[w], N_WORDS, resampling=options.replace(batch_size=250), **kw))
