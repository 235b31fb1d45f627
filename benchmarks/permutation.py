"""Permutation-test throughput of biasdask against numpy and scipy, and against the memory floor.

For each pool size N (the full-vocabulary test: N real scores against an equally sized dummy language):

- biasdask per core: the compiled kernel in this process (wall and CPU time), and with all workers of
  a ``LocalCluster`` through :func:`biasdask.engine.permutation.permutation_test`;
- several weightings on one split: the CPU time of a pass over 2 and 3 weightings against
  one weighting's, best of ``--repeats``, measured in turn in this process;
- numpy: a ``rng.permutation`` loop over the materialised pool (N scores + N zeros), a few iterations;
- the memory floor: one plain pass over the float32 scores (``np.sum``) against the kernel's time per
  permutation;
- scipy: ``scipy.stats.permutation_test`` at a small N where it is feasible, beside biasdask at that N;
- scores: u over a whole vocabulary read from a Zarr store (:func:`biasdask.scores`, one matvec per
  chunk) against a plain read of the same store's chunks and an in-memory numpy matvec.

Run ``python benchmarks/permutation.py --help`` for the sizes and counts. The machine's load average is
printed: on a shared machine, CPU-time figures are the per-core ones to trust.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np

from biasdask import Resampling


@dataclass
class Rate:
    """A throughput measurement."""

    label: str
    n: int
    per_second: float
    per_cpu_second: float | None = None


def scores(n: int, seed: int = 0) -> np.ndarray:
    """Float32 scores shaped like a vocabulary's u: small, centred near zero, slightly biased."""
    return (np.random.default_rng(seed).standard_normal(n) * 0.05 + 1e-3).astype(np.float32)


def _timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_kernel(x: np.ndarray, n_permutations: int) -> Rate:
    """biasdask's compiled kernel on one core, in this process (dummy language of len(x) zeros)."""
    from biasdask.stats.permutation import null_batch, prepare_test

    prep = prepare_test(x, x.size, n_permutations=n_permutations, seed=1)
    null_batch(prep, 0, 2)  # load or compile the kernel
    _, wall, cpu = _timed(null_batch, prep, 0, n_permutations)
    return Rate("biasdask kernel, 1 core", x.size, n_permutations / wall, n_permutations / cpu)


def bench_rows(
    x: np.ndarray, n_permutations: int, rows: tuple[int, ...] = (1, 2, 3), repeats: int = 3
) -> dict[int, float]:
    """CPU seconds (this thread, best of ``repeats``) of ``n_permutations`` splits evaluating k
    weightings of x on each, for every k in ``rows``: one pass over a (k, N) pool per split.

    The k are timed in turn within each repeat, so that a change of the machine's load hits all alike.
    """
    from biasdask.stats.permutation import null_batch, prepare_test

    preps = {}
    for k in rows:
        stacked = np.stack([x] + [(x * np.float32(1.0 / (w + 2))).astype(np.float32) for w in range(k - 1)])
        preps[k] = prepare_test(stacked, x.size, n_permutations=n_permutations, seed=1)
        null_batch(preps[k], 0, 2)  # load or compile the kernel
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(repeats):
        for k in rows:
            start = time.thread_time()
            null_batch(preps[k], 0, n_permutations)
            best[k] = min(best[k], time.thread_time() - start)
    return best


def bench_stream_batch(x: np.ndarray, n_permutations: int = 10_000, k: int = 2) -> tuple[int, float, float]:
    """One batch task of a study's stream for ``k`` weightings of x: (permutations per task as
    :func:`biasdask.engine.pools.batch_plan` cuts them, seconds the task takes here, seconds the
    kernel rate measured at start-up (:func:`biasdask.engine.pools.measured_rate`) predicts)."""
    from biasdask.engine.pools import batch_plan, measured_rate, pools_batch, pools_summary, prepare_pools

    rows = np.stack([x] + [(x * np.float32(1.0 / (w + 2))).astype(np.float32) for w in range(k - 1)])
    pools = prepare_pools(rows, x.size, n_permutations, "two-sided", 1)
    work, _, m, _ = pools_summary(pools)
    start, stop = batch_plan(work, m)[0]
    pools_batch(pools, 0, 2)
    _, wall, _ = _timed(pools_batch, pools, start, stop)
    return stop - start, wall, (stop - start) * measured_rate.__wrapped__().seconds(k * x.size)


def bench_cluster(x: np.ndarray, n_permutations: int, n_workers: int) -> Rate:
    """biasdask's engine on a LocalCluster of ``n_workers`` single-threaded processes.

    Reports wall-clock permutations/s and permutations per CPU-second summed over the workers.
    """
    from distributed import Client, LocalCluster

    from biasdask.engine.permutation import permutation_test

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            client.wait_for_workers(n_workers)
            # Warm every worker (imports, the cached compiled kernel) outside the timing.
            permutation_test(
                x[:1000],
                1000,
                client=client,
                progress=False,
                resampling=Resampling(n_permutations=4 * n_workers, batch_size=1, seed=2),
            )
            before = client.run(time.process_time)
            options = Resampling(n_permutations=n_permutations, seed=1)
            _, wall, _ = _timed(permutation_test, x, x.size, resampling=options, client=client, progress=False)
            after = client.run(time.process_time)
    worker_cpu = sum(after[w] - before[w] for w in before)
    return Rate(f"biasdask engine, {n_workers} workers", x.size, n_permutations / wall, n_permutations / worker_cpu)


def bench_numpy(x: np.ndarray, n_iterations: int) -> Rate:
    """A numpy ``rng.permutation`` loop over the pool of x and as many zeros."""
    pool = np.concatenate([x, np.zeros_like(x)])
    rng = np.random.default_rng(3)
    n = x.size

    def loop() -> None:
        for _ in range(n_iterations):
            p = rng.permutation(pool)
            p[:n].sum(dtype=np.float64) - p[n:].sum(dtype=np.float64)

    _, wall, cpu = _timed(loop)
    return Rate("numpy rng.permutation loop", n, n_iterations / wall, n_iterations / cpu)


def bench_scipy(x: np.ndarray, n_resamples: int) -> Rate:
    """``scipy.stats.permutation_test`` (independent samples, vectorised statistic) with a dummy language."""
    from scipy import stats

    xs, ys = x.astype(np.float64), np.zeros(x.size)

    def statistic(a, b, axis):
        return a.sum(axis=axis) - b.sum(axis=axis)

    _, wall, cpu = _timed(
        stats.permutation_test,
        (xs, ys),
        statistic,
        permutation_type="independent",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="greater",
        rng=4,
    )
    return Rate("scipy.stats.permutation_test", x.size, n_resamples / wall, n_resamples / cpu)


def memory_floor(x: np.ndarray, repeats: int = 50) -> float:
    """CPU seconds of one plain pass over the float32 scores (``np.sum``), averaged over ``repeats``."""
    x.sum()
    start = time.process_time()
    for _ in range(repeats):
        x.sum()
    return (time.process_time() - start) / repeats


def add_floor(repeats: int = 5) -> float:
    """Pool items a second that the kernel's merge-masked adds alone sum on this core: one row of 64
    float64 lanes over a block of 2,048 items held in L1, every bit set (best of ``repeats``). No split is
    drawn and no pool is read from memory or converted, so the kernel cannot pass this rate."""
    from numba import njit

    from biasdask.stats.simd import merge_add_block

    words = 32

    @njit(nogil=True)
    def adds(acc, block, mask, passes):
        for _ in range(passes):
            merge_add_block(acc, block, mask, np.uint64(0), np.uint64(words))

    acc, block = np.zeros(64), np.random.default_rng(0).normal(0.0, 1e-9, 64 * words)
    mask = np.full(words, np.iinfo(np.uint64).max, dtype=np.uint64)
    adds(acc, block, mask, 1)
    passes = 100_000
    best = min(_timed(adds, acc, block, mask, passes)[2] for _ in range(repeats))
    return passes * 64 * words / best


def _line(rate: Rate, baseline: Rate | None = None) -> str:
    text = f"  {rate.label:<36} N={rate.n:>9,}  {rate.per_second:>12,.1f} perm/s"
    if rate.per_cpu_second is not None:
        text += f"  ({rate.per_cpu_second:,.1f} per CPU-second)"
    if baseline is not None:
        text += f"  = {rate.per_second / baseline.per_second:,.0f}x numpy"
        if rate.per_cpu_second is not None and baseline.per_cpu_second:
            text += f" ({rate.per_cpu_second / baseline.per_cpu_second:,.0f}x in CPU time)"
    return text


def run_size(
    n: int, n_permutations: int, numpy_iterations: int, n_workers: int, cluster_seconds: float, repeats: int = 3
) -> None:
    """Print the figures for one pool size."""
    x = scores(n)
    print(f"N = {n:,} real scores + {n:,} dummy zeros")
    numpy_rate = bench_numpy(x, numpy_iterations)
    print(_line(numpy_rate))
    kernel = bench_kernel(x, n_permutations)
    print(_line(kernel, numpy_rate))
    cpu = bench_rows(x, n_permutations, (1, 2, 3), repeats)
    print(
        f"  one weighting: {n_permutations / cpu[1]:,.0f} perm/s per core (CPU time, best of {repeats}); on one split, "
        f"2 weightings cost {cpu[2] / cpu[1]:.2f}x and 3 weightings {cpu[3] / cpu[1]:.2f}x its CPU time per pass "
        "(separate passes: 2x and 3x)"
    )
    size, seconds, predicted = bench_stream_batch(x)
    print(
        f"  a study's batch task (2 weightings, 10,000 permutations): {size:,} permutations, {seconds:.2f} s "
        f"= {seconds / predicted:.2f}x the time the kernel rate measured at start-up predicts"
    )
    floor = memory_floor(x)
    per_perm = 1.0 / kernel.per_cpu_second
    print(
        f"  memory floor: one np.sum pass over t {floor * 1e3:.3f} ms; kernel {per_perm * 1e3:.3f} ms per "
        f"permutation = {per_perm / floor:.2f}x the floor (CPU times)"
    )
    items = add_floor()
    kernel_items = 2 * n / cpu[2] * n_permutations  # two weightings on one split: pool items summed a CPU-second
    print(
        f"  add floor: the merge-masked adds alone sum {items / 1e9:.1f} G pool items a second on this core (a block "
        f"in L1, no draw); the kernel with two weightings sums {kernel_items / 1e9:.1f} G = {kernel_items / items:.0%} of it"
    )
    if n_workers > 1:
        # Enough work for about ``cluster_seconds`` of wall time if the workers scale linearly.
        m = max(n_permutations * n_workers, int(cluster_seconds * kernel.per_cpu_second * n_workers))
        cluster = bench_cluster(x, m, n_workers)
        print(_line(cluster, numpy_rate))
        print(
            f"  scaling: {cluster.per_second / kernel.per_second:.2f}x one core in wall time; workers' CPU time "
            f"per permutation is {kernel.per_cpu_second / cluster.per_cpu_second:.2f}x the in-process kernel's "
            "(1.00 = no distribution overhead, i.e. linear in workers on free cores)"
        )


def run_scipy(n: int, n_resamples: int) -> None:
    """Print scipy against biasdask at a size where scipy is feasible."""
    x = scores(n, seed=5)
    print(f"N = {n:,} (scipy comparison)")
    theirs = bench_scipy(x, n_resamples)
    print(_line(theirs))
    ours = bench_kernel(x, n_resamples)
    print(
        _line(ours)
        + f"  = {ours.per_second / theirs.per_second:,.0f}x scipy"
        + (f" ({ours.per_cpu_second / theirs.per_cpu_second:,.0f}x in CPU time)" if theirs.per_cpu_second else "")
    )


def bench_scores(n_words: int, dim: int, workdir: str) -> None:
    """Time u over a stored vocabulary against a plain read of the store and an in-memory matvec."""
    import dask
    import dask.array as da

    import biasdask
    from biasdask.demo import write_language

    src = os.path.join(workdir, "bench.bin")
    store = os.path.join(workdir, "bench.zarr")
    write_language(__import__("pathlib").Path(src), "male", "female", 0.1, n_words, dim, seed=1)
    biasdask.ingest(src, store, language="en", client=False, progress=False)
    emb = biasdask.open_embeddings(store)
    mb = n_words * dim * 4 / 2**20
    with dask.config.set(scheduler="threads"):
        raw = da.asarray(emb["vectors"].data)
        plain = raw.map_blocks(lambda b: b[:, :1], dtype=raw.dtype)
        u = biasdask.scores(emb, ["male"], ["female"], methods=["uniform"])["u"].data
        # alternated, so that a change of machine load between the two hits both alike
        times = [(_timed(plain.compute)[1], _timed(u.compute)[1]) for _ in range(5)]
        read, score = (min(column) for column in zip(*times))
    matrix = np.asarray(raw.compute())
    norms = np.linalg.norm(matrix, axis=1)
    direction = np.random.default_rng(0).standard_normal(dim).astype(np.float32)
    matvec = min(_timed(lambda: (matrix @ direction) / norms)[1] for _ in range(5))
    print(f"scores, N = {n_words:,} x {dim} ({mb:.0f} MB float32, threads of this process):")
    print(f"  plain read of the Zarr chunks   {read:8.3f} s  ({mb / read:7.0f} MB/s)")
    print(
        f"  biasdask scores (u)             {score:8.3f} s  ({mb / score:7.0f} MB/s)   {score / read:5.2f}x the plain read"
    )
    print(
        f"  numpy matvec in memory          {matvec:8.3f} s  ({mb / matvec:7.0f} MB/s)   scores = {score / matvec:5.1f}x it"
    )


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 2_000_000], help="pool sizes N (none: skip)")
    parser.add_argument("--permutations", type=int, default=2000, help="permutations per core timed for biasdask")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the weightings timing (best is kept)")
    parser.add_argument("--numpy-iterations", type=int, default=3, help="iterations of the numpy loop")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="LocalCluster workers (1 skips it)")
    parser.add_argument("--cluster-seconds", type=float, default=10.0, help="target duration of each cluster run")
    parser.add_argument("--scipy-size", type=int, default=10_000, help="N for the scipy comparison (0 skips it)")
    parser.add_argument("--scipy-resamples", type=int, default=2000, help="resamples for scipy")
    parser.add_argument(
        "--scores-words", type=int, default=500_000, help="vocabulary of the scores benchmark (0 skips it)"
    )
    parser.add_argument("--scores-dim", type=int, default=300, help="dimensions of the scores benchmark")
    args = parser.parse_args(argv)

    print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for n in args.sizes:
        run_size(n, args.permutations, args.numpy_iterations, args.workers, args.cluster_seconds, args.repeats)
    if args.scipy_size:
        run_scipy(args.scipy_size, args.scipy_resamples)
    if args.scores_words:
        import tempfile

        with tempfile.TemporaryDirectory() as workdir:
            bench_scores(args.scores_words, args.scores_dim, workdir)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
