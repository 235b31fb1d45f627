"""The engine's one executor (a study run's and an ingest's): tasks on a cluster or in threads of this
process, and a window of independent jobs whose earliest error is the one raised."""

from __future__ import annotations

import threading
import time

import pytest
from distributed import get_client

from biasdask.engine.tasks import Tasks, hand_out, windowed


def test_closing_the_threads_of_a_failed_run_does_not_wait_on_itself():
    """Shutting the pool down cancels queued tasks, whose dependents then try to start: they must not
    submit to the pool being shut down (its lock is held: the run hung instead of raising)."""
    tasks = Tasks(None, 1)
    release = threading.Event()
    tasks.submit(release.wait, 30)  # holds the only thread
    queued = tasks.submit(int, "1")  # waits in the pool's queue
    tasks.submit(int, queued)  # starts when the queued one is done or cancelled
    closer = threading.Thread(target=tasks.close, daemon=True)
    closer.start()
    closer.join(10)
    release.set()
    assert not closer.is_alive(), "close() waits on the pool it is shutting down"
    assert queued.cancelled()


def _job(index: int, fail: bool = False, delay: float = 0.0) -> int:
    time.sleep(delay)
    if fail:
        raise ValueError(f"job {index} failed")
    return index * 10


@pytest.mark.parametrize("on_cluster", [False, True])
def test_a_window_of_jobs_reports_each_result_and_the_earliest_error(on_cluster, request):
    client = request.getfixturevalue("dask_client") if on_cluster else None
    tasks = Tasks(client, 2)
    try:
        seen: dict[int, int] = {}
        in_flight = []

        def jobs(n, failing=()):
            for i in range(n):
                in_flight.append(len(tasks.live))
                yield i, _job, (i, i in failing, 0.01 * (i % 3))

        windowed(tasks, jobs(12), 3, seen.__setitem__)
        assert seen == {i: 10 * i for i in range(12)}
        assert max(in_flight) <= 3  # never more than the window before submitting one more
        # two failures: the earliest job's error, whatever finishes first; later jobs are not submitted
        in_flight.clear()
        with pytest.raises(ValueError, match="job 4 failed"):
            windowed(tasks, jobs(40, failing={4, 6}), 3, lambda i, r: None)
        assert len(in_flight) < 40
    finally:
        tasks.close()


def test_an_error_making_the_jobs_comes_after_the_jobs_in_flight():
    tasks = Tasks(None, 1)
    done = []

    def jobs():
        yield 0, _job, (0,)
        raise OSError("cannot read block 1")

    try:
        with pytest.raises(OSError, match="block 1"):
            windowed(tasks, jobs(), 2, lambda i, r: done.append(i))
        assert done == [0]
    finally:
        tasks.close()


def test_the_jobs_see_what_each_result_recorded_in_this_process():
    """One job at a time in this process: the job iterator reads what on_done wrote (an ingest stops
    counting lines once it has enough)."""
    tasks = Tasks(None, 1)
    total = [0]

    def jobs():
        i = 0
        while total[0] < 50:
            yield i, _job, (i,)
            i += 1

    try:
        windowed(tasks, jobs(), 1, lambda i, r: total.__setitem__(0, total[0] + r))
        assert total[0] == 60  # 0 + 10 + 20 + 30: stops right after passing 50
    finally:
        tasks.close()


def _where(index: int, data: bytes, delay: float = 0.05, fail: bool = False) -> tuple:
    """A job: its index, the bytes it got, and the task it ran in."""
    from distributed import get_worker

    time.sleep(delay)
    if fail:
        raise ValueError(f"job {index} failed")
    return index, len(data), get_worker().get_current_task()


def _handing_out(n: int, window: int, failing=(), delay: float = 0.05) -> tuple:
    """A task that hands out ``n`` jobs: what each returned, and this task's key."""
    from distributed import get_worker

    seen: dict = {}
    jobs = ((i, _where, (i, bytes(100 + i), delay, i in failing)) for i in range(n))
    hand_out(jobs, seen.__setitem__, window=window, priority=5)
    return seen, get_worker().get_current_task()


def test_a_task_hands_jobs_to_free_threads_and_runs_the_rest_itself(dask_client):
    """One task on a cluster of two one-thread workers: the other thread takes jobs (with their bytes),
    the task's own thread runs those beyond the window."""
    seen, key = dask_client.submit(_handing_out, 20, 1, pure=False).result(timeout=60)
    assert sorted(seen) == list(range(20))
    assert all(seen[i][:2] == (i, 100 + i) for i in range(20))
    elsewhere = [i for i in seen if seen[i][2] != key]
    assert elsewhere and len(elsewhere) < 20  # some handed out, some run by the task itself


def test_tasks_that_hold_every_thread_still_finish_their_handed_out_jobs(dask_client):
    """Two tasks on two threads: their jobs in flight run once the tasks wait for them, seceded."""
    futures = [dask_client.submit(_handing_out, 6, 3, delay=0.2, pure=False) for _ in range(2)]
    for future in futures:
        seen, _ = future.result(timeout=60)
        assert sorted(seen) == list(range(6))


def test_the_earliest_failing_job_is_raised_after_the_jobs_in_flight(dask_client):
    future = dask_client.submit(_handing_out, 30, 2, (4, 6), pure=False)
    with pytest.raises(ValueError, match="job 4 failed"):
        future.result(timeout=60)


def test_outside_a_worker_every_job_runs_here():
    seen: dict = {}
    here = threading.get_ident()
    hand_out(((i, lambda i: (i, threading.get_ident()), (i,)) for i in range(5)), seen.__setitem__, window=3)
    assert seen == {i: (i, here) for i in range(5)}


def _with_worker_client() -> bool:
    get_client()  # as a task that hands work out makes it
    return True


def _implicit_client() -> str | None:
    from biasdask.engine.cluster import active_client

    c = active_client()
    return None if c is None else type(c).__name__


def test_a_task_on_a_worker_never_gets_the_workers_client_implicitly(dask_client):
    """Once a task on a worker has made the worker's client, a later task there that asks for the active
    client gets none (it would wait for tasks of its own while holding its thread: with one-thread workers,
    a deadlock)."""
    where = sorted(dask_client.scheduler_info()["workers"])[:1]
    assert dask_client.submit(_with_worker_client, workers=where, pure=False).result(timeout=60)
    assert dask_client.submit(_implicit_client, workers=where, pure=False).result(timeout=60) is None


def _handing_out_counting_waits(n: int) -> tuple[int, int]:
    """A task that hands out ``n`` jobs (a window of one, on a free thread): how many times its thread
    waited for the worker's event loop while it was producing them, and after."""
    import distributed.utils

    here, real = threading.get_ident(), distributed.utils.sync
    waits = {"producing": 0, "after": 0}
    phase = ["producing"]

    def counting(*args, **kwargs):
        if threading.get_ident() == here:
            waits[phase[0]] += 1
        return real(*args, **kwargs)

    def jobs():
        for i in range(n):
            yield i, _where, (i, bytes(100 + i), 0.0)
        phase[0] = "after"

    seen: dict = {}
    distributed.utils.sync = counting
    try:
        hand_out(jobs(), seen.__setitem__, window=1)
    finally:
        distributed.utils.sync = real
    assert sorted(seen) == list(range(n))
    return waits["producing"], waits["after"]


def test_handing_a_job_out_never_waits_for_the_scheduler(dask_client):
    """Placing a job's bytes and submitting it run on the worker's event loop, and the results are
    gathered at the end: the producing thread (which decompresses and cuts a source) never stops for a
    round trip to the scheduler or to another worker (it did twice per job, scatter and result)."""
    producing, after = dask_client.submit(_handing_out_counting_waits, 12, pure=False).result(timeout=60)
    assert producing == 0
    assert 1 <= after <= 3  # the gather of every result at the end (and the waits of the jobs still in flight)


def _fails(message: str) -> None:
    raise ValueError(message)


def test_a_finished_task_reaches_the_queue_with_its_outcome_fetched(dask_client):
    """A tagged task's result (or error) is fetched by the client's event loop before the task reaches
    the queue: its handler reads it without a round trip; releasing it forgets the remote future."""
    from biasdask.engine.tasks import Fetched

    tasks = Tasks(dask_client, 2)
    try:
        tasks.submit(_job, 3, tag="ok", pure=False)
        tasks.submit(_fails, "boom", tag="bad", pure=False)
        got = dict(tasks.finished.get(timeout=60) for _ in range(2))
        assert all(isinstance(f, Fetched) and f.done() for f in got.values())
        assert got["ok"].result() == 30
        assert isinstance(got["bad"].exception(), ValueError) and str(got["bad"].exception()) == "boom"
        assert {f.remote for f in got.values()} <= tasks.live
        tasks.release(list(got.values()))
        assert not tasks.live
    finally:
        tasks.close()
