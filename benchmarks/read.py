"""Reading at the limit: u over a stored vocabulary against a plain read of the same chunks, and the
bytes per word of each vector encoding.

Run ``python benchmarks/read.py [--words 500000] [--dim 300] [--threads 2]``. It writes the same
fastText-like vectors (4 decimals, spread like ``cc.*.300`` vectors, some ``-0.0``) into two stores,
one of scaled int16 integers (what ingest picks for such text) and one of float32, then prints for each:

- the stored bytes per word (``vectors`` and ``negative_zero`` chunks);
- a plain read: ``zarr.open_array(store, path="vectors")`` and every chunk read into numpy by a pool of
  ``--threads`` threads (zarr's own decoding: for the int16 store, its codec's float64 arithmetic);
- biasdask's u (:func:`biasdask.scores`, ``methods=["uniform"]``) on Dask's threaded scheduler with
  the same threads, and its ratio to the plain read (target <= 1.15);
- u of the int16 store against the plain read of the float32 one (the same words, half the bytes).

Timings alternate between the contenders and keep the best of ``--repeats``: on a shared machine a
change of load then hits all alike. The machine's load average is printed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def fasttext_like(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """float32 parses of 4-decimal values spread like fastText cc vectors (SD ~0.08), with -0.0 where a
    small negative value prints as ``-0.0000``."""
    rng = np.random.default_rng(seed)
    k = np.rint(rng.normal(0, 0.08, (n, dim)) * 10000).astype(np.int64)
    v = (k / 10000).astype(np.float32)
    v[(k == 0) & (rng.random((n, dim)) < 0.5)] = np.float32(-0.0)
    return v


def write_store(url: str, vectors: np.ndarray, encoding: str) -> None:
    from biasdask.io import store

    n, dim = vectors.shape
    chunk = store.default_chunk_words(dim)
    store.prepare_store(
        url,
        language="en",
        source="bench",
        format="vec",
        dim=dim,
        chunk_words=chunk,
        n_words=n,
        vector_encoding=encoding,
    )
    words = np.array([f"w{i}" for i in range(n)], dtype=object)
    norms = np.sqrt(np.square(vectors, dtype=np.float64).sum(axis=1)).astype(np.float32)
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        store.write_block(url, start, words[rows], vectors[rows], norms[rows])
    store.finish_store(
        url,
        {
            "n_words": n,
            "n_duplicates": 0,
            "n_nfc_merged": 0,
            "n_invalid_utf8": 0,
            "n_zero_vectors": 0,
            "n_duplicate_vectors": 0,
        },
    )


def stored_bytes(url: str) -> int:
    return sum(
        f.stat().st_size
        for name in ("vectors", "negative_zero")
        for f in (Path(url) / name / "c").rglob("*")
        if f.is_file()
    )


def plain_read(url: str, threads: int) -> None:
    """Open the zarr array and read every chunk into numpy on ``threads`` threads."""
    import zarr

    array = zarr.open_array(url, path="vectors", mode="r")
    chunk, n = array.chunks[0], array.shape[0]
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(lambda s: array[s : s + chunk], range(0, n, chunk)):
            pass


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=500_000, help="words (default 500000)")
    parser.add_argument("--dim", type=int, default=300, help="dimension (default 300)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads (default: cores)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each, the best kept (default 5)")
    parser.add_argument("--dir", help="working directory (default: a temporary one)")
    args = parser.parse_args(argv)

    import warnings

    import dask

    import biasdask

    warnings.filterwarnings("ignore", message="Numcodecs codecs are not in the Zarr version 3")
    print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        vectors = fasttext_like(args.words, args.dim)
        urls = {e: str(Path(tmp) / f"{e}.zarr") for e in ("int16", "float32")}
        for encoding, url in urls.items():
            write_store(url, vectors, encoding)
        del vectors
        mb = args.words * args.dim * 4 / 1e6
        results = {}
        with dask.config.set(scheduler="threads", num_workers=args.threads):
            jobs = {}
            for encoding, url in urls.items():
                emb = biasdask.open_embeddings(url)
                u = biasdask.scores(emb, ["w1"], ["w2"], methods=["uniform"])["u"].data
                u.compute()  # compiled kernels loaded
                jobs[f"plain {encoding}"] = lambda url=url: plain_read(url, args.threads)
                jobs[f"u {encoding}"] = u.compute
            times = {name: [] for name in jobs}
            for _ in range(args.repeats):
                for name, job in jobs.items():
                    times[name].append(timed(job))
            results = {name: min(t) for name, t in times.items()}
        print(
            f"\n{args.words:,} words x {args.dim} ({mb:.0f} MB as float32), {args.threads} threads, best of {args.repeats}"
        )
        print(f"{'':34s} {'bytes/word':>10s} {'plain read':>11s} {'u':>8s} {'u / plain':>10s} {'MB/s (u)':>9s}")
        for encoding, url in urls.items():
            plain, u = results[f"plain {encoding}"], results[f"u {encoding}"]
            print(
                f"{encoding + ' store':34s} {stored_bytes(url) / args.words:10.0f} {plain:10.3f}s {u:7.3f}s "
                f"{u / plain:10.2f} {mb / u:9.0f}"
            )
        print(
            f"u of the int16 store / plain read of the float32 store: "
            f"{results['u int16'] / results['plain float32']:.2f}"
        )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
