"""Where the engine's tasks run: one executor for a study run and an ingest alike.

With a ``distributed`` client, tasks are its futures (a task taking another's future as argument depends
on it, and data moves only to the worker that runs the task); without one, a pool of this process's
threads runs each task once its inputs are done. Either way every task can report on one queue as it
finishes (:class:`Tasks`), and :func:`windowed` keeps a bounded number of independent jobs in flight
(an ingest's blocks), reporting each result in the order they finish and the earliest job's error.
A task running on a worker hands jobs of its own to the cluster's free threads with :func:`hand_out`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dask
import dask.array as da
import xarray as xr
from distributed import Client, get_client, get_worker, rejoin, secede
from distributed import wait as wait_for

__all__ = ["Fetched", "Tasks", "hand_out", "windowed"]


def _together(*arrays):
    return arrays


def _derived(source: concurrent.futures.Future, i: int) -> concurrent.futures.Future:
    """A future of item ``i`` of what ``source`` returns."""
    out: concurrent.futures.Future = concurrent.futures.Future()
    source.add_done_callback(lambda f: _copy_outcome(f, out, i))
    return out


def _resolved(fn: Callable, args: tuple, kwargs: dict):
    """Call ``fn`` with the results of the futures among ``args`` (all done by now)."""
    args = tuple(a.result() if isinstance(a, concurrent.futures.Future) else a for a in args)
    return fn(*args, **kwargs)


def _copy_outcome(
    source: concurrent.futures.Future, target: concurrent.futures.Future, item: int | None = None
) -> None:
    """``target`` ends as ``source`` did (with item ``item`` of its result, if given)."""
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result() if item is None else source.result()[item])


class Fetched(concurrent.futures.Future):
    """The outcome of the finished ``distributed`` future :attr:`remote`, fetched into this process."""

    def __init__(self, remote) -> None:
        super().__init__()
        self.remote = remote


class Tasks:
    """Where the stream's tasks run, and one queue on which tagged tasks report as they finish.

    With a ``distributed`` client, tasks are its futures: a task taking another's future as argument
    depends on it, and its data moves only to the worker that runs the task. Without one, they run in
    a pool of this process's threads, each task once its inputs are done, and scores graphs on
    Dask's default scheduler. What must happen in this process (building a scores graph) runs
    ``beside`` the stream, in threads of this process, so that the loop keeps writing cells and
    submitting work meanwhile.
    """

    def __init__(self, client: Client | None, threads: int) -> None:
        self.client = client
        self.finished: queue.Queue = queue.Queue()
        self._pool = None if client is not None else concurrent.futures.ThreadPoolExecutor(threads, "biasdask-run")
        self._side = concurrent.futures.ThreadPoolExecutor(4, "biasdask-client")
        self.live: set = set()
        self._closing = False

    def _track(self, future, tag):
        self.live.add(future)
        if tag is not None:
            self.report(future, tag)
        return future

    def report(self, future, tag: Any) -> None:
        """Put ``(tag, future)`` on :attr:`finished` when ``future`` is done. A ``distributed`` future's
        outcome is first fetched into this process by the client's event loop, beside the others, and
        put there as a done :class:`Fetched` future: the thread that handles it does not wait for a
        round trip to the worker that holds it."""
        if isinstance(future, concurrent.futures.Future):
            future.add_done_callback(lambda f: self.finished.put((tag, f)))
            return
        fetched = Fetched(future)

        def settle(gathered: concurrent.futures.Future) -> None:
            if future.cancelled():  # gathering it raised; a cancelled task is reported as such
                fetched.cancel()
            else:
                _copy_outcome(gathered, fetched, 0)
            self.finished.put((tag, fetched))

        gathering = self.client.gather([future], asynchronous=True)  # a coroutine, run on the event loop
        asyncio.run_coroutine_threadsafe(gathering, self.client.loop.asyncio_loop).add_done_callback(settle)

    def submit(self, fn: Callable, *args, tag: Any = None, priority: int = 0, pure: bool = True, **kwargs):
        """Run ``fn(*args, **kwargs)`` as a task; futures among ``args`` are its dependencies. A
        ``distributed`` scheduler runs the higher ``priority`` first among tasks ready at once;
        ``pure=False`` gives the task a key of its own (its arguments are not hashed)."""
        if self.client is not None:
            return self._track(self.client.submit(fn, *args, priority=priority, pure=pure, **kwargs), tag)
        return self._track(self._after(fn, args, kwargs), tag)

    def map(self, fn: Callable, *iterables: Sequence, priority: int = 0) -> list:
        """Run ``fn`` on each tuple of the ``iterables``' items, as :meth:`submit` would, in one message
        to a ``distributed`` scheduler."""
        if self.client is not None:
            return [self._track(f, None) for f in self.client.map(fn, *iterables, priority=priority)]
        return [self._track(self._after(fn, args, {}), None) for args in zip(*iterables)]

    def _after(self, fn: Callable, args: tuple, kwargs: dict) -> concurrent.futures.Future:
        """A thread runs ``fn`` once the futures among ``args`` are done (no thread waits for them)."""
        out: concurrent.futures.Future = concurrent.futures.Future()
        deps = [a for a in args if isinstance(a, concurrent.futures.Future)]
        remaining = [len(deps)]
        lock = threading.Lock()

        def start() -> None:
            if self._closing:  # the run failed; called back from the pool's shutdown, which holds its lock
                out.cancel()
                return
            with contextlib.suppress(RuntimeError):  # the pool was shut down: the run failed
                self._pool.submit(_resolved, fn, args, kwargs).add_done_callback(lambda f: _copy_outcome(f, out))

        def one_done(_) -> None:
            with lock:
                remaining[0] -= 1
                ready = remaining[0] == 0
            if ready:
                start()

        if not deps:
            start()
        for dep in deps:
            dep.add_done_callback(one_done)
        return out

    def compute(self, *arrays, tag: Any = None, priority: int = 0):
        """A future of the tuple of the computed Dask ``arrays`` (and delayed values). Dask names the
        tasks of each collection given apart, so a task two of them share runs once per collection:
        give shared work once (u stacked on t, not u and t). Graphs are not optimised (fusing renames
        tasks too)."""
        if self.client is not None:
            together = dask.delayed(_together)(*arrays)
            return self._track(self.client.compute(together, priority=priority, optimize_graph=False), tag)
        return self._track(self._pool.submit(dask.compute, *arrays, optimize_graph=False), tag)

    def compute_pieces(self, blocks: da.Array | Sequence, meta=None, priority: int = 0) -> tuple[list, Any]:
        """Futures of the computed ``blocks`` (the chunks of a Dask array chunked along its last axis
        only, or a list of delayed objects) and of the delayed ``meta`` (None without): on a
        ``distributed`` client one per block, each left on the worker that computed it; without one, a
        single piece (the whole array, or the list of the blocks' values). Tasks that take the pieces
        depend on the blocks' tasks themselves: no task first gathers them into one array."""
        if self.client is not None:
            delayed = blocks.to_delayed().ravel().tolist() if isinstance(blocks, da.Array) else list(blocks)
            futures = self.client.compute(
                [*delayed, *(() if meta is None else (meta,))], priority=priority, optimize_graph=False
            )
            for future in futures:
                self._track(future, None)
            return futures[: len(delayed)], None if meta is None else futures[-1]
        whole = blocks if isinstance(blocks, da.Array) else list(blocks)
        computed = self._track(self._pool.submit(dask.compute, whole, meta, optimize_graph=False), None)
        found = None if meta is None else self._track(_derived(computed, 1), None)
        return [self._track(_derived(computed, 0), None)], found

    def load(self, data: xr.Dataset, priority: int = 0):
        """A future of ``data`` loaded into memory (a task reads the chunks it needs)."""
        if self.client is not None:
            return self._track(self.client.compute(data, priority=priority), None)
        return self._track(self._pool.submit(data.compute), None)

    def beside(self, fn: Callable, *args, tag: Any):
        """Run ``fn(*args)`` in a thread of this process."""
        return self._track(self._side.submit(fn, *args), tag)

    def release(self, futures) -> None:
        """Forget finished work (a ``distributed`` future's data leaves the cluster with it)."""
        self.live.difference_update(f.remote if isinstance(f, Fetched) else f for f in futures)

    def close(self) -> None:
        """Cancel what is still running (a run that failed) and stop the threads."""
        self._closing = True
        remote = [f for f in self.live if not isinstance(f, concurrent.futures.Future)]
        if self.client is not None and remote:
            with contextlib.suppress(Exception):
                self.client.cancel(remote)
        for pool in (self._pool, self._side):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self.live.clear()


def windowed(
    tasks: Tasks, jobs: Iterator[tuple[int, Callable, tuple]], window: int, on_done: Callable[[int, Any], None]
) -> None:
    """Run ``jobs`` (index, function, arguments) as tasks, at most ``window`` in flight, calling
    ``on_done(index, result)`` in this thread as each finishes (the job iterator may read what
    ``on_done`` recorded).

    On failure nothing more is submitted; the tasks in flight are awaited and the error of the
    earliest job is raised (an error raised while producing jobs comes after every submitted job). On
    an interrupt the tasks in flight end first, so that none acts after the caller cleans up.
    """
    pending: dict[Any, int] = {}
    failures: list[tuple[int, BaseException]] = []
    feed_error: BaseException | None = None

    def submit_more() -> bool:
        nonlocal feed_error
        while len(pending) < window and not failures:
            try:
                index, fn, args = next(jobs)
            except StopIteration:
                return False
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the jobs in flight
                feed_error = exc
                return False
            pending[tasks.submit(fn, *args, tag=index, pure=False)] = index
        return not failures

    more = submit_more()
    try:
        while pending:
            index, future = tasks.finished.get()
            pending.pop(future.remote if isinstance(future, Fetched) else future)
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - the earliest one is re-raised below
                failures.append((index, exc))
            else:
                on_done(index, result)
            tasks.release([future])
            if more:
                more = submit_more()
    except BaseException:
        for future in list(pending):
            with contextlib.suppress(BaseException):
                future.result()
        raise
    if failures:
        raise min(failures, key=lambda f: f[0])[1]
    if feed_error is not None:
        raise feed_error


def hand_out(
    jobs: Iterator[tuple[int, Callable, tuple]],
    on_done: Callable[[int, Any], None],
    *,
    window: int,
    priority: int = 0,
) -> None:
    """In a task on a ``distributed`` worker: run ``jobs`` (index, function, arguments) as tasks of their
    own while fewer than ``window`` are in flight, and in this thread otherwise, calling
    ``on_done(index, result)`` here for each (for the jobs run here as they finish, for the others at the
    end).

    The task keeps its worker thread for its own work (producing the jobs, and those it runs itself), so
    the handed-out tasks only take threads the cluster has free, at the scheduler's ``priority``: a busy
    cluster leaves the work where it was and a free one shares it, without more threads than cores at
    work. ``bytes`` arguments are placed on this worker (scattered, not hashed) before the task that
    takes them is submitted: they travel only if the scheduler sends the task elsewhere. Handing a job
    out never waits for the scheduler: placing its bytes and submitting it run on the worker's event
    loop while this thread goes on, and the results are gathered in one call at the end, with this
    thread seceded from its worker's pool (its slot free for the tasks still in flight) until they are
    all done; it rejoins before returning. Outside a worker, or with ``window`` 0, every job runs in
    this thread.

    On failure nothing more is started; the tasks in flight are awaited (none acts after the caller
    cleans up) and the error of the earliest job is raised (an error raised while producing jobs comes
    after those of the jobs produced before it).
    """
    client = None
    if window > 0:
        with contextlib.suppress(ValueError):
            get_worker()
            client = get_client()
    if client is None:
        for index, fn, args in jobs:
            on_done(index, fn(*args))
        return
    handed: list[tuple[int, concurrent.futures.Future]] = []  # (index, future of its submitted future)
    in_flight: list[concurrent.futures.Future] = []
    failures: list[tuple[int, BaseException]] = []
    feed_error: BaseException | None = None

    def settled(placing: concurrent.futures.Future) -> bool:
        return placing.done() and (placing.exception() is not None or placing.result().done())

    def went_wrong(placing: concurrent.futures.Future) -> bool:
        return placing.exception() is not None or placing.result().status != "finished"

    try:
        for index, fn, args in jobs:
            ended = [p for p in in_flight if settled(p)]
            if any(went_wrong(p) for p in ended):
                break
            in_flight = [p for p in in_flight if p not in ended]
            if len(in_flight) < window:
                placing = _place_and_submit(client, fn, args, priority)
                handed.append((index, placing))
                in_flight.append(placing)
                continue
            try:
                result = fn(*args)
            except Exception as exc:  # noqa: BLE001 - raised below, after the tasks in flight
                failures.append((index, exc))
                break
            on_done(index, result)
    except Exception as exc:  # noqa: BLE001 - raised below, after the tasks in flight
        feed_error = exc
    finally:
        if handed:
            secede()
            try:
                concurrent.futures.wait([p for _, p in handed])
                wait_for([p.result() for _, p in handed if p.exception() is None])
            finally:
                rejoin()
    done = [(index, p.result()) for index, p in handed if not went_wrong(p)]
    for index, result in zip([i for i, _ in done], client.gather([f for _, f in done])):
        on_done(index, result)
    failures += [(index, p.exception() or p.result().exception()) for index, p in handed if went_wrong(p)]
    if failures:
        raise min(failures, key=lambda f: f[0])[1]
    if feed_error is not None:
        raise feed_error


def _place_and_submit(client: Client, fn: Callable, args: tuple, priority: int) -> concurrent.futures.Future:
    """A future of the ``distributed`` future of ``fn(*args)``, submitted by the worker's event loop once
    its ``bytes`` arguments are placed on this worker (this thread does not wait for either)."""
    placing = {
        i: client.scatter(a, hash=False, asynchronous=True)  # a coroutine, run below on the event loop
        for i, a in enumerate(args)
        if isinstance(a, bytes | bytearray | memoryview)
    }

    async def submit():
        placed = list(args)
        for i, coroutine in placing.items():
            placed[i] = await coroutine
        return client.submit(fn, *placed, priority=priority, pure=False)

    return asyncio.run_coroutine_threadsafe(submit(), client.loop.asyncio_loop)
