"""The placebo null on a large synthetic anisotropic embedding: its calibration, and what it costs a study.

1. Calibration: random non-gendered words of a synthetic embedding (a common mean direction plus
   dimensions of decreasing variance, as real embeddings have) used as A and B: how often the
   dummy-language p-value and the placebo p-value reject at alpha (a calibrated test: about alpha).
2. Cost: one study (the ``gender`` test, uniform and Zipf weightings) of the same store with and
   without ``placebo``, in this process on Dask's threaded scheduler, the median of ``--repeats``
   interleaved pairs; the ratio is what the placebo pass adds to a study's time.
3. The price of the same bits on every CPU: the Gram matrix of the moments' sample (32,768 × 300) and
   the euclidean placebo's product of the sample with 800 pairs' words, by biasdask's fixed-order
   kernels against numpy's BLAS on one thread (best of 3, alternated).

Run ``python benchmarks/placebo.py --help`` for the sizes. Prints the date, the CPU model and the load
average beside the figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu_model

from biasdask import Resampling, Vocabulary
from biasdask.study.config import DEFAULT_PLACEBO

#: a word is ``w`` and its row's digits as letters (``wba`` for 10): word-like tokens a placebo may draw
LETTERS = str.maketrans("0123456789", "abcdefghij")


def word(i: int) -> str:
    """The word of row ``i``."""
    return f"w{i}".translate(LETTERS)


def write_store(root: Path, n_words: int, dim: int, seed: int) -> str:
    """A synthetic anisotropic embedding of ``n_words`` words (a word2vec binary file, the fastest to
    write), ingested into a store; the file is removed."""
    import biasdask

    rng = np.random.default_rng(seed)
    mean = 3.0 * rng.normal(size=dim)
    scale = np.linspace(2.0, 0.2, dim)
    path = root / "synthetic.bin"
    with path.open("wb") as f:
        f.write(f"{n_words} {dim}\n".encode())
        for start in range(0, n_words, 50_000):
            block = (mean + rng.normal(size=(min(50_000, n_words - start), dim)) * scale).astype(np.float32)
            f.write(b"".join(f"{word(i)} ".encode() + row.tobytes() for i, row in enumerate(block, start)))
    store = str(root / "en.zarr")
    biasdask.ingest(str(path), store, language="en", input_format="word2vec-binary", client=False, progress=False)
    path.unlink()
    return store


def calibration(store: str, pairs: int, placebo: int, alpha: float, seed: int) -> tuple[float, float, float]:
    """Rejection rates (dummy-language p, placebo p of d, placebo p of s) at ``alpha`` over random
    single-word pairs."""
    import biasdask

    emb = biasdask.open_embeddings(store)
    n = emb.sizes["word"]
    rng = np.random.default_rng(seed)
    dummy = placebo_hits = statistic_hits = 0
    for _ in range(pairs):
        a, b = rng.choice(np.arange(100, n), size=2, replace=False)
        res = biasdask.full_vocabulary_test(
            emb,
            [word(a)],
            [word(b)],
            method="zipf",
            resampling=Resampling(n_permutations=199, seed=int(rng.integers(2**31)), placebo=placebo),
            vocabulary=Vocabulary(exclude_attributes=True),
        )
        dummy += res.p_value <= alpha
        placebo_hits += res.p_value_placebo <= alpha
        statistic_hits += res.p_value_placebo_statistic <= alpha
    return dummy / pairs, placebo_hits / pairs, statistic_hits / pairs


def study_time(store: str, root: Path, placebo: int, permutations: int, association: str = "cosine") -> float:
    """Wall time of a one-language gender study with (``placebo`` > 0) or without the placebo pass,
    into a fresh results store."""
    import biasdask

    study = {
        "output": str(root / f"r-{placebo}-{time.monotonic_ns()}.zarr"),
        "languages": {"en": {"store": store, "a": [word(10), word(700)], "b": [word(20), word(900)]}},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": permutations,
        "seed": 1,
        "placebo": {"n": placebo} if placebo else False,
        "associations": [association],
    }
    start = time.perf_counter()
    biasdask.run(study, progress=False)
    return time.perf_counter() - start


def kernels(rows: int = 32_768, dim: int = 300, words: int = 800, repeats: int = 3) -> str:
    """The fixed-order Gram and product against numpy's BLAS on one thread, best of ``repeats``."""
    from threadpoolctl import threadpool_limits

    from biasdask.stats.linalg import gram, matmul_t

    rng = np.random.default_rng(0)
    sample, attribute_words = rng.standard_normal((rows, dim)), rng.standard_normal((words, dim))
    cases = {
        "gram": (lambda: gram(sample), lambda: sample.T @ sample),
        "product": (lambda: matmul_t(sample, attribute_words), lambda: sample @ attribute_words.T),
    }
    gram(sample[:300]), matmul_t(sample[:300], attribute_words)  # load the kernels
    best = {name: [np.inf, np.inf] for name in cases}
    with threadpool_limits(1):
        for _ in range(repeats):
            for name, fns in cases.items():
                for i, fn in enumerate(fns):
                    start = time.perf_counter()
                    fn()
                    best[name][i] = min(best[name][i], time.perf_counter() - start)
    return (
        f"fixed-order kernels against BLAS, one thread, best of {repeats}: Gram of {rows:,} × {dim} "
        f"{best['gram'][0]:.3f} s = {best['gram'][0] / best['gram'][1]:.2f}× BLAS; product with {words} words "
        f"{best['product'][0]:.3f} s = {best['product'][0] / best['product'][1]:.2f}× BLAS"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--words", type=int, default=2_000_000, help="vocabulary size (default: %(default)s, a fastText language's)"
    )
    parser.add_argument("--dim", type=int, default=300, help="dimensions (default: %(default)s)")
    parser.add_argument(
        "--permutations", type=int, default=9999, help="permutations of the study (default: %(default)s, a study's)"
    )
    parser.add_argument(
        "--pairs", type=int, default=200, help="random word pairs for the calibration (default: %(default)s)"
    )
    parser.add_argument(
        "--calibration-words",
        type=int,
        default=20_000,
        help="vocabulary of the calibration store (default: %(default)s)",
    )
    parser.add_argument(
        "--placebo", type=int, default=DEFAULT_PLACEBO, help="placebo pairs per test (default: %(default)s, a study's)"
    )
    parser.add_argument(
        "--association",
        default="cosine",
        choices=["cosine", "euclidean", "ripa", "semaxis"],
        help="the studies' per-word association (default: %(default)s)",
    )
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=4, help="study pairs timed, interleaved (default: %(default)s)")
    args = parser.parse_args()
    print(
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC · {cpu_model()} · {os.cpu_count()} logical CPUs · "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(kernels())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cal").mkdir()
        small = write_store(root / "cal", args.calibration_words, args.dim, seed=1)
        dummy, placebo, on_s = calibration(small, args.pairs, min(args.placebo, 199), args.alpha, seed=2)
        print(
            f"calibration ({args.pairs} random word pairs as A and B, {args.calibration_words:,} words × {args.dim}, "
            f"Zipf weighting, alpha {args.alpha:g}): dummy-language p rejects {100 * dummy:.1f} %, placebo p of d "
            f"{100 * placebo:.1f} %, placebo p of s {100 * on_s:.1f} %"
        )
        (root / "big").mkdir()
        store = write_store(root / "big", args.words, args.dim, seed=3)
        timed = functools.partial(study_time, store, root, permutations=args.permutations, association=args.association)
        timed(args.placebo)  # warm: kernels compiled, pages cached
        without, with_placebo = [], []
        for _ in range(args.repeats):
            without.append(timed(0))
            with_placebo.append(timed(args.placebo))
        a, b = float(np.median(without)), float(np.median(with_placebo))
        print(
            f"study time ({args.words:,} words × {args.dim}, gender test, {args.association}, two weightings, {args.permutations:,} "
            f"permutations, threaded scheduler, median of {args.repeats}): {a:.2f} s without placebo, {b:.2f} s "
            f"with {args.placebo} placebo pairs: ratio {b / a:.2f} (best {min(with_placebo) / min(without):.2f})"
        )


if __name__ == "__main__":
    main()
