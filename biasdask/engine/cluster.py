"""Where Dask work runs.

The Python API never starts a cluster: :func:`active_client` and :func:`compute` run graphs on the
``client=`` given, else the current ``distributed`` client, else Dask's default scheduler (threads
unless ``dask.config`` says otherwise). Starting one is the job of :func:`get_client` /
:func:`client_scope`, used by ``biasdask run`` and the CLI, in this order: an explicit
``client``; an explicit scheduler address; the current ``distributed`` client;
``DASK_SCHEDULER_ADDRESS`` (set by the Dask operator inside a ``DaskJob``); Dask Gateway when
``DASK_GATEWAY__ADDRESS`` is set (as daskhub sets it); else a ``LocalCluster`` of worker processes.

Warm workers: the clusters :func:`get_client` starts or connects to get the :class:`WarmKernels` worker
plugin (:func:`warm_workers`), so every worker, including those a Gateway or Kubernetes cluster adds
later, loads the compiled kernels when it joins instead of during its first task. A client passed in
or already current is left as it is; call :func:`warm_workers` on it to get the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import dask
import dask.system
import fsspec
import numpy as np
from dask.callbacks import Callback
from dask.utils import parse_timedelta
from distributed import Client, LocalCluster, WorkerPlugin, as_completed, get_worker

from biasdask._dask_config import check_settings, check_temporary_directory
from biasdask.engine.pools import measured_rate
from biasdask.errors import BiasdaskError, BiasdaskTypeError, SchedulerError, missing_dependency
from biasdask.io import codecs, formats
from biasdask.io.fs import one_line
from biasdask.io.parse import parse_block, row_hashes
from biasdask.progress import progress_bar
from biasdask.stats import permutation, permutation_numpy
from biasdask.stats.association import association

__all__ = [
    "MAX_LOCAL_WORKERS",
    "active_client",
    "check_n_workers",
    "client_scope",
    "compute",
    "connect_timeout",
    "get_client",
    "keep_freed_memory",
    "n_slots",
    "warm_kernels",
    "warm_workers",
    "WarmKernels",
    "workers_keep_freed_memory",
]


log = logging.getLogger(__name__)


def connect_timeout() -> str | float:
    """``biasdask.scheduler.connect-timeout``, else Dask's ``distributed.comm.timeouts.connect``."""
    return dask.config.get("biasdask.scheduler.connect-timeout") or dask.config.get("distributed.comm.timeouts.connect")


def _connect(address: str) -> Client:
    timeout = connect_timeout()
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(f"cannot reach Dask scheduler at {address} within {timeout}: {exc}") from None
    except ValueError as exc:  # e.g. an unknown scheme: foo://host
        raise BiasdaskError(f"not a Dask scheduler address: {address} ({exc})") from None
    log.info("connected to the Dask scheduler at %s; dashboard: %s", address, client.dashboard_link)
    return client


def _gateway_client(n_workers: int | None) -> Client:
    try:
        from dask_gateway import Gateway
    except ImportError:
        raise missing_dependency(
            "dask-gateway", "gateway", "a Dask Gateway cluster: DASK_GATEWAY__ADDRESS is set"
        ) from None
    gateway = Gateway()
    options = gateway.cluster_options()
    idle = parse_timedelta(dask.config.get("biasdask.gateway.idle-timeout"), default="seconds")
    if idle and "idle_timeout" in options:  # servers that expose it; otherwise the server's own setting holds
        options.idle_timeout = idle
    # shutdown_on_close: closing the client (or the interpreter exiting) stops the cluster
    cluster = gateway.new_cluster(options, shutdown_on_close=True)
    if n_workers:
        cluster.scale(n_workers)
    else:
        cluster.adapt(
            minimum=dask.config.get("biasdask.gateway.minimum-workers"),
            maximum=dask.config.get("biasdask.gateway.maximum-workers"),
        )
    client = cluster.get_client()
    log.info("started Dask Gateway cluster %s; dashboard: %s", cluster.name, client.dashboard_link)
    return client


def warm_kernels() -> dict[str, float]:
    """Load every compiled kernel of biasdask for the argument types it is called with.

    Each kernel comes from numba's on-disk cache (``NUMBA_CACHE_DIR``, else ``__pycache__`` next to
    the sources) or is compiled and written there. The first one also pays numba's own start-up, which a
    process otherwise pays during its first task. Inputs are tiny, but large
    enough that the permutation functions take their compiled path (small tests run in numpy until a
    kernel is loaded, see :mod:`biasdask.stats.permutation_numpy`).

    Returns
    -------
    dict
        Seconds spent per group of kernels, in the order they were loaded.

    Examples
    --------
    In a Docker build, to ship the cache in the image::

        RUN python -c "from biasdask.engine.cluster import warm_kernels; warm_kernels()"
    """
    seconds = {}

    def timed(name, fn) -> None:
        t = time.perf_counter()
        fn()
        seconds[name] = time.perf_counter() - t

    n = permutation_numpy.MAX_VALUES + 2

    def sampled() -> None:  # observed sums, sampled null (k fixed and random)
        prep = permutation.prepare_test(np.arange(1.0, n + 1.0), np.arange(-n, 0.0), 4, seed=0)
        permutation.null_batch(prep, 0, 4)
        permutation.null_batch(permutation.prepare_test(np.arange(1.0, n + 1.0), 3, 4, seed=0), 0, 4)

    def exact() -> None:  # one X item: n + 1 splits, all enumerated
        permutation.exact_null(permutation.prepare_test([1.0], np.arange(2.0, n + 2.0), n + 1, seed=0))

    def parse() -> None:  # the text and binary readers of an ingest task
        fs = fsspec.filesystem("memory")
        words = np.array([[1.5, -2.0], [0.25, 4.0]], dtype=np.float32)
        files = {
            "vec": b"2 2\na 1.5 -2.0\nb 0.25 4\n",
            "bin": b"2 2\n" + b"".join(w + b" " + v.tobytes() for w, v in zip((b"a", b"b"), words)),
        }
        for ext, body in files.items():
            url = f"memory://biasdask-warm-{os.getpid()}.{ext}"
            fs.pipe_file(url, body)
            try:
                info = formats.sniff_source(url)
                data = fs.cat_file(url)
                parsed = parse_block(data, 2, info, 0, formats.skip_lines(data, 1))
                row_hashes(parsed.vectors)
            finally:
                fs.rm_file(url)

    timed("permutation (sampled)", sampled)
    timed("permutation (exact)", exact)
    timed("association", lambda: association(np.ones((2, 3), dtype=np.float32), np.ones(2), np.ones(3)))

    def scaled() -> None:  # scaled-integer stores: encoded at ingest, decoded when u reads them
        block = np.array([[1.5, -0.0]], dtype=np.float32)
        for encoding in ("int16", "int32"):
            ints, _ = codecs.encode_scaled(block, encoding)
            codecs.decode_scaled(ints, np.empty(ints.shape, dtype=np.float32))

    timed("embedding readers", parse)
    timed("scaled-integer stores", scaled)
    return seconds


class WarmKernels(WorkerPlugin):
    """Worker plugin: :func:`warm_kernels` when a worker joins, before it takes its first task, then
    :func:`~biasdask.engine.pools.measured_rate` (the kernel rate that sizes permutation batches).

    Distributed runs a plugin's ``setup`` as a worker registers (and on the workers present when the
    plugin is registered) and hands the worker tasks only afterwards; the loading runs in a thread so
    the worker keeps answering the scheduler meanwhile.

    Attributes
    ----------
    seconds : dict or None
        On a worker, what :func:`warm_kernels` returned (None before ``setup``).
    """

    name = "biasdask-warm-kernels"
    idempotent = True

    def __init__(self) -> None:
        self.seconds: dict[str, float] | None = None

    async def setup(self, worker) -> None:
        start = time.perf_counter()
        self.seconds = await asyncio.get_running_loop().run_in_executor(None, warm_kernels)
        await asyncio.get_running_loop().run_in_executor(None, measured_rate)
        log.info("biasdask kernels loaded on %s in %.2f s", worker.address, time.perf_counter() - start)


def warm_workers(client: Client) -> None:
    """Register :class:`WarmKernels` on ``client``'s cluster: present and future workers load the kernels.

    Returns once the present workers are done (longer the first time, when the kernels are compiled
    into numba's cache).
    """
    client.register_plugin(WarmKernels(), name=WarmKernels.name)


#: the most worker processes a local cluster may be asked for
MAX_LOCAL_WORKERS = 4 * dask.system.CPU_COUNT


def check_n_workers(n_workers: int | None) -> None:
    """Raise unless ``n_workers`` is None or 0 to :data:`MAX_LOCAL_WORKERS` (4 per core)."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)):
        raise BiasdaskTypeError(f"n_workers: expected an integer, got {n_workers!r}")
    if not 0 <= n_workers <= MAX_LOCAL_WORKERS:
        raise BiasdaskError(
            f"n_workers: expected 0 to {MAX_LOCAL_WORKERS} (4 per core of this machine), got {n_workers}"
        )


def get_client(
    *,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    threads_per_worker: int | None = None,
) -> Client:
    """Return the client work should run on, starting a cluster if nothing else is configured.

    Parameters
    ----------
    client
        Used as is when given.
    scheduler
        A scheduler address (``tcp://host:8786``); connect to it (timeout
        ``biasdask.scheduler.connect-timeout``, default Dask's ``distributed.comm.timeouts.connect``).
    n_workers
        Worker processes of a new ``LocalCluster`` (whose scheduler and dashboard listen on 127.0.0.1
        only, unless Dask settings ``biasdask.local-cluster.host`` and ``dashboard-address`` say
        otherwise; default ``biasdask.local-cluster.n-workers``, else
        ``dask.system.CPU_COUNT``, which respects cgroup limits), or workers to ask a Gateway cluster
        for (default: adaptive within ``biasdask.gateway.minimum-workers``/``maximum-workers``).
    threads_per_worker
        Threads of each local worker process (default ``biasdask.local-cluster.threads-per-worker``).

    Returns
    -------
    distributed.Client
        The client. A client this function created itself owns its cluster: ``client.close()``
        followed by ``client.cluster.close()`` shuts both down (see :func:`client_scope`).

    Raises
    ------
    SchedulerError
        A scheduler address that cannot be reached, or Gateway configured without ``dask-gateway``.

    Examples
    --------
    Without a client, a scheduler address or Gateway in the environment, a local cluster is started:

    >>> import biasdask
    >>> client = biasdask.get_client(n_workers=1, threads_per_worker=1)
    >>> len(client.scheduler_info()["workers"])
    1
    >>> client.close(); client.cluster.close()
    """
    if client is not None:
        return client
    if scheduler:
        return _warmed(_connect(scheduler))
    current = active_client()
    if current is not None:
        return current
    address = os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        return _warmed(_connect(address))
    if os.environ.get("DASK_GATEWAY__ADDRESS"):
        return _warmed(_gateway_client(n_workers))
    # what would end each worker process with a traceback of its own, named here in one line
    check_settings("distributed", "biasdask")
    check_temporary_directory()
    try:
        cluster = LocalCluster(
            n_workers=n_workers or dask.config.get("biasdask.local-cluster.n-workers") or dask.system.CPU_COUNT,
            threads_per_worker=threads_per_worker or dask.config.get("biasdask.local-cluster.threads-per-worker"),
            processes=True,
            # this machine only, unless asked: the dashboard shows the study's tasks and words
            host=dask.config.get("biasdask.local-cluster.host"),
            dashboard_address=dask.config.get("biasdask.local-cluster.dashboard-address"),
        )
    except Exception as exc:  # noqa: BLE001 - a worker or the scheduler that did not start
        raise SchedulerError(f"cannot start a local Dask cluster: {one_line(exc)}") from None
    client = Client(cluster)
    log.info("started a local Dask cluster of %d workers; dashboard: %s", len(cluster.workers), client.dashboard_link)
    return _warmed(client)


def _warmed(client: Client) -> Client:
    warm_workers(client)
    return client


@contextlib.contextmanager
def client_scope(
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
) -> Iterator[Client]:
    """Context manager around :func:`get_client` that closes only what it started.

    A client passed in, or one that was already current, is left open; a cluster started here
    (local or Gateway) is shut down on exit.
    """
    existing = client
    if existing is None and not scheduler:
        existing = active_client()
    got = get_client(client=existing, scheduler=scheduler, n_workers=n_workers)
    owned = got is not existing
    try:
        yield got
    finally:
        if owned:
            cluster = getattr(got, "cluster", None)
            got.close()
            if cluster is not None and scheduler is None:
                shutdown = getattr(cluster, "shutdown", None)  # a Gateway cluster: stop it, not just detach
                (shutdown or cluster.close)()


def active_client(client: Client | None = None) -> Client | None:
    """``client`` if given, else the current ``distributed`` client, else None (Dask's default scheduler).

    In a task on a worker, None unless given: the worker's own client, made once a task there hands work
    to the cluster (:func:`biasdask.engine.tasks.hand_out`), is no scheduler for a task that would wait
    for it while holding its thread (on workers of one thread each, such tasks wait for each other).
    """
    if client is not None:
        return client
    with contextlib.suppress(ValueError):
        get_worker()
        return None
    with contextlib.suppress(ValueError):
        return Client.current()
    return None


def n_slots(client: Client | None = None) -> int:
    """Tasks the active scheduler runs at once: the client's worker threads, else Dask's local pool size."""
    c = active_client(client)
    if c is not None:
        return max(1, sum(c.nthreads().values()))
    return int(dask.config.get("num_workers", None) or dask.system.CPU_COUNT)


def compute(*collections: Any, client: Client | None = None, progress: bool | None = False, desc: str = "") -> tuple:
    """``dask.compute`` on the active scheduler (see :func:`active_client`), with an optional bar of tasks.

    Parameters
    ----------
    collections
        Dask collections (arrays, delayed objects) or plain values.
    client
        Run on this client; default the current one, else Dask's default scheduler.
    progress
        Show a progress bar of finished tasks (``None``: only on a terminal; see
        :func:`biasdask.progress.progress_bar`).
    desc
        Label of the bar.

    Returns
    -------
    tuple
        The computed values, in order.
    """
    c = active_client(client)
    if c is not None:
        futures = c.compute(list(collections))
        with progress_bar(progress, total=len(futures), desc=desc, unit="task") as bar:
            for _ in as_completed(futures, loop=c.loop):
                bar.update(1)
            return tuple(c.gather(futures))
    with progress_bar(progress, desc=desc, unit="task") as bar:
        if bar.disable:
            return dask.compute(*collections)
        with _TaskBar(bar):
            return dask.compute(*collections)


class _TaskBar(Callback):
    """Advance a tqdm bar as tasks of a local scheduler (threads, processes, sync) finish."""

    def __init__(self, bar) -> None:
        super().__init__()
        self._bar = bar

    def _start_state(self, dsk, state) -> None:
        self._bar.reset(total=sum(len(state[k]) for k in ("ready", "waiting", "running")) + len(state["finished"]))

    def _posttask(self, key, result, dsk, state, worker_id) -> None:
        self._bar.update(1)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_HEAP_KEEP = (32 * 2**20, 256 * 2**20)  # mmap threshold (glibc's largest), trim threshold: while biasdask works
_heap_lock = threading.Lock()
_heap_users = 0


def keep_freed_memory(keep: bool) -> None:
    """On a worker: keep (``True``) or give back (``False``) freed memory in the C heap while an
    ingest or a run uses it (calls nest: the last ``False`` restores).

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes glibc's mmap
    threshold at 128 KiB: every chunk-sized buffer (the parser's arrays, zarr's compression buffers,
    a chunk read for u) is then a fresh mapping whose pages the kernel zeroes on first touch, which
    makes reading a stored chunk for u several times slower than in one process (docs/benchmarks.md).
    While biasdask works, freed buffers stay in the heap for the next chunk; after the last user the
    worker's settings are restored and the memory is given back (``malloc_trim``). Nothing happens on
    other C libraries, or without that variable (glibc then adapts its thresholds by itself).
    """
    global _heap_users
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    try:
        libc = ctypes.CDLL(None)
        mallopt, malloc_trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return
    if trim is None or not trim.isdigit():
        return
    with _heap_lock:
        _heap_users = _heap_users + 1 if keep else max(0, _heap_users - 1)
        if keep and _heap_users == 1:
            mallopt(_M_MMAP_THRESHOLD, _HEAP_KEEP[0])
            mallopt(_M_TRIM_THRESHOLD, _HEAP_KEEP[1])
        elif not keep and _heap_users == 0:
            mmap = os.environ.get("MALLOC_MMAP_THRESHOLD_", "")
            mallopt(_M_MMAP_THRESHOLD, int(mmap) if mmap.isdigit() else 128 * 2**10)
            mallopt(_M_TRIM_THRESHOLD, int(trim))
            malloc_trim(0)


@contextlib.contextmanager
def workers_keep_freed_memory(client: Any) -> Iterator[None]:
    """:func:`keep_freed_memory` on every worker of ``client`` (a ``distributed`` client; anything
    else: nothing to do) for the duration of the block. Workers that join meanwhile keep Dask's settings."""
    if not isinstance(client, Client):
        yield
        return
    with contextlib.suppress(Exception):  # only a saving: never a reason to fail
        client.run(keep_freed_memory, True)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            client.run(keep_freed_memory, False)
