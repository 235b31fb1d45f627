"""The notebook path: ``biasdask.weat`` on a model already in memory, first and second call.

Run in a fresh process (``python benchmarks/in_memory.py``): it builds a random model of ``--words``
words (the WEAT 7 words included) as a gensim ``KeyedVectors`` when gensim is installed, else as an
``xarray.DataArray``, imports biasdask (not timed), then times

- the first ``biasdask.weat(model, test="weat7")`` (the model wrapped, the rows read, the 9,999
  permutations sampled; a test this small runs in the numpy twin of the compiled kernels,
  :mod:`biasdask.stats.permutation_numpy`, so the process does not pay numba's ~0.5 s start-up; the
  script prints which compiled kernels, if any, the calls loaded);
- a second call on the same model (the wrapper is cached per model object);
- a plain numpy WEAT of the same words in the same process (the baseline of the ratio): cosine
  scores and 9,999 ``rng.permutation`` splits.

Targets, with warm numba caches: first call < 0.3 s, second < 20 ms. The load average is
printed: on a shared machine the wall-clock figures are upper bounds, and CPU time (of the process, all
threads) is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=200_000, help="words of the model (default 200,000)")
    parser.add_argument("--dim", type=int, default=300, help="dimensions (default 300)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    import biasdask
    from biasdask.lexicon import weat_test

    weat = biasdask.weat  # imports the engine (not part of the call)
    Resampling = biasdask.Resampling
    t_import = time.perf_counter() - t0
    sets = weat_test("weat7")
    words = list(dict.fromkeys([*sets.x, *sets.y, *sets.a, *sets.b]))
    words += [f"w{i}" for i in range(len(words), args.words)]
    vectors = np.random.default_rng(0).standard_normal((len(words), args.dim)).astype(np.float32)
    try:
        from gensim.models import KeyedVectors

        model = KeyedVectors(args.dim)
        model.add_vectors(words, vectors)
    except ImportError:
        import xarray as xr

        model = xr.DataArray(vectors, dims=("word", "dim"), coords={"word": words})

    t, c = time.perf_counter(), time.process_time()
    first = weat(model, test="weat7", resampling=Resampling(seed=1), progress=False)
    t_first, c_first = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    weat(model, test="weat7", resampling=Resampling(seed=1), progress=False)
    t_second, c_second = time.perf_counter() - t, time.process_time() - c

    t, c = time.perf_counter(), time.process_time()
    index = {w: i for i, w in enumerate(words)}
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    x, y, a, b = (unit(vectors[[index[w] for w in s]].astype(np.float64)) for s in (sets.x, sets.y, sets.a, sets.b))
    s_w = lambda m: (m @ a.T).mean(1) - (m @ b.T).mean(1)  # noqa: E731
    pooled = np.concatenate([s_w(x), s_w(y)])
    rng = np.random.default_rng(1)
    null = [
        pooled[p[: len(x)]].sum() - pooled[p[len(x) :]].sum()
        for p in (rng.permutation(len(pooled)) for _ in range(9999))
    ]
    t_numpy, c_numpy = time.perf_counter() - t, time.process_time() - c
    assert len(null) == 9999

    import gc

    from numba.core.dispatcher import Dispatcher

    loaded = sorted(d.py_func.__qualname__ for d in gc.get_objects() if isinstance(d, Dispatcher) and d.signatures)
    print(
        f"load average {os.getloadavg()[0]:.1f}; model {type(model).__name__} {len(words):,} x {args.dim}; "
        f"import {t_import:.2f} s (not in the calls); compiled kernels loaded: {', '.join(loaded) or 'none'}"
    )
    print(
        f"weat7 first call  {t_first * 1e3:8.1f} ms wall {c_first * 1e3:8.1f} ms CPU  (target < 300 ms)   "
        f"d = {first.effect_size:+.3f}"
    )
    print(f"weat7 second call {t_second * 1e3:8.1f} ms wall {c_second * 1e3:8.1f} ms CPU  (target < 20 ms)")
    print(
        f"numpy baseline    {t_numpy * 1e3:8.1f} ms wall {c_numpy * 1e3:8.1f} ms CPU  "
        f"ratio second/numpy = {t_second / t_numpy:.2f}"
    )


if __name__ == "__main__":
    main()
