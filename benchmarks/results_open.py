"""Opening a finished results cube: biasdask's layout against one object per cell, in the same process.

Run ``python benchmarks/results_open.py [--languages 26] [--methods 3] [--tests 23]``. It writes a
finished cube with :mod:`biasdask.io.results` (cells as records, then ``compact_results``), and the
same values as a baseline Zarr group chunked ``(1, 1, 1)`` (one object per cell and variable, the
layout before compaction existed), on the local disk, then prints the seconds to open and load each
with ``xarray.open_zarr(url, consolidated=False)`` and with ``open_results``, the number of objects
in each, and the ratios. The machine may be shared: only the ratios are meant to be compared.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr


def _objects(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file())


def _best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    from biasdask.io import results as R

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", type=int, default=26)
    parser.add_argument("--methods", type=int, default=3)
    parser.add_argument("--tests", type=int, default=23)
    args = parser.parse_args()
    langs = [f"l{i}" for i in range(args.languages)]
    methods = ["uniform", "zipf", "frequency", "m3", "m4"][: args.methods]
    tests = [f"t{k}" for k in range(args.tests)]
    with tempfile.TemporaryDirectory() as tmp:
        url = str(Path(tmp) / "results.zarr")
        R.create_results(
            url, langs, methods, tests, {"seed": 1, "alternative": "two-sided", "similarity": "cosine"}, "x: 1\n"
        )
        rng = np.random.default_rng(0)
        for lang in langs:
            for m in methods:
                for t in tests:
                    R.write_cell(
                        url,
                        lang,
                        m,
                        t,
                        {
                            "statistic": float(rng.normal()),
                            "n_x": 1000,
                            "alternative": "greater",
                            "note": "",
                            "attribute_words_a": "male",
                        },
                    )
        R.compact_results(url)
        cube = xr.open_zarr(url, consolidated=False).load()
        baseline = str(Path(tmp) / "per_cell.zarr")
        cube.to_zarr(
            baseline, consolidated=False, zarr_format=3, encoding={v: {"chunks": (1, 1, 1)} for v in cube.data_vars}
        )

        t_new = _best_of(lambda: xr.open_zarr(url, consolidated=False).load())
        t_old = _best_of(lambda: xr.open_zarr(baseline, consolidated=False).load())
        t_api = _best_of(lambda: R.open_results(url))
        print(f"cube {len(langs)} x {len(methods)} x {len(tests)}, {len(cube.data_vars)} variables")
        print(f"objects: compacted {_objects(Path(url))}, one per cell {_objects(Path(baseline))}")
        print(
            f"xr.open_zarr(...).load(): compacted {t_new:.3f} s, one object per cell {t_old:.3f} s, ratio {t_old / t_new:.0f}x"
        )
        print(f"open_results: {t_api:.3f} s")


if __name__ == "__main__":
    main()
