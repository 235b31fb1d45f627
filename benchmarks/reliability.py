"""What the internal consistency of the gender test's base pairs costs a study: the same study with one
base pair a side and with Bolukbasi et al.'s ten, side by side.

Run ``python benchmarks/reliability.py [--languages 2] [--words 2000000] [--dim 300] [--permutations 10000]
[--rounds 3]`` (the defaults: a fastText language's size; about 6 minutes on two cores, 3 GB of temporary
disk at the peak). It

1. generates one fastText-like ``.vec`` of ``--words`` × ``--dim`` random 4-decimal values, the twenty words
   of Bolukbasi et al. 2016's definitional pairs in its first lines, ingests it and links its store under
   ``--languages`` language codes (as ``study.py --rerun`` does: hard links, so after the first read the
   chunks come from the page cache, the same for both variants); not timed;
2. on two single-thread workers (``biasdask.get_client``, kept for the whole run) runs one study
   (the ``gender`` test, cosine, uniform and Zipf weightings, ``--permutations`` permutations, no
   placebo) in two variants, each once to warm up, then over ``--rounds`` rounds, the order swapped
   every round:

   - *one pair*: ``a: [he]``, ``b: [she]``, the study without reliability (no consistency figures);
   - *ten pairs*: ``attributes: {pairs: [[man, woman], [boy, girl], [he, she], ...]}``, Bolukbasi's
     ten: every cell also has Cronbach's α, the split-half reliability and the leave-one-pair-out range of
     d across the pairs over the whole vocabulary (checked in the cube), from the items' moments the
     scores tasks gather in the same read of the vectors;

3. prints per variant the median over the rounds of the run's wall time, the workers' and the client's
   CPU-seconds, and by stage (Dask's task stream; ``study.py``'s stages): *scores* (the tasks that read the
   vectors and compute u, with ten pairs also the pairs' items and their moments), *consistency* (α,
   split half and the leave-one-out range from the gathered moments), *permutations* (pools and
   batches), *writes* (per-word scores), each its tasks' compute seconds and its share of the workers'
   CPU-seconds; and the ratios ten pairs / one pair;
4. extrapolates to the study of 26 languages × 2,000,000 words as ``study.py`` does, from CPU-seconds
   (which a loaded machine does not inflate as it does wall times): a language's CPU-seconds (the
   workers' × 2,000,000 / ``--words`` and the client's, over the run, divided by the languages: each
   language is one read of its vectors, and its tasks depend on no other language's) × 26, on two cores
   always busy. Each variant's figure is linear in the languages, so the ratio is the per-language ratio
   measured here; the target is at most 1.5.

Uses only public API (``biasdask.ingest``, ``biasdask.run``), so it measures whatever engine the branch
has. The machine may be shared: the date, the CPU model and the load average are printed beside the
figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu_model
from study import CODES, SEED_LANGUAGES, SEED_WORDS, compute_spans, generate, link_store, stage_cpu, workers_cpu

STAGES = ("scores", "consistency", "permutations", "writes")
VARIANTS = ("one pair", "ten pairs")
TARGET = 1.5


def base_pairs() -> list[list[str]]:
    """Bolukbasi et al. 2016's ten definitional pairs as (male, female): A is male."""
    from biasdask.lexicon import bolukbasi

    return [[male, female] for female, male in bolukbasi().definitional_pairs]


def study(variant: str, stores: dict[str, str], output: str, permutations: int) -> dict:
    """The study of ``variant``: the gender test with ``he``/``she`` alone, or with the ten pairs."""
    if variant == "one pair":
        attributes = {"a": ["he"], "b": ["she"]}
    else:
        attributes = {"attributes": {"pairs": base_pairs()}}
    return {
        "output": output,
        "languages": {code: {"store": url, **attributes} for code, url in stores.items()},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": permutations,
        "seed": 0,
        "placebo": False,
    }


def measured(client, variant: str, stores: dict[str, str], work: Path, permutations: int) -> dict:
    """One run of ``variant``: its wall time, the workers' and the client's CPU-seconds, its stages."""
    import psutil
    from distributed import get_task_stream

    import biasdask

    output = work / f"results-{time.monotonic_ns()}.zarr"
    me = psutil.Process()
    client_cpu, cpu = sum(me.cpu_times()[:2]), workers_cpu(client)
    with get_task_stream(client) as stream:
        t = time.perf_counter()
        cube = biasdask.run(study(variant, stores, str(output), permutations), client=client, progress=False)
        wall = time.perf_counter() - t
    client_cpu, cpu = sum(me.cpu_times()[:2]) - client_cpu, workers_cpu(client) - cpu
    cells = len(stores) * 2
    assert int(np.isfinite(cube["p_value"].values).sum()) == cells, cube["p_value"].values
    consistent = [
        int(np.isfinite(cube[v].values).sum()) for v in ("cronbach_alpha", "split_half", "effect_size_loo_low")
    ]
    assert consistent == ([0, 0, 0] if variant == "one pair" else [cells] * 3), (variant, consistent)
    shutil.rmtree(output)
    spans = compute_spans(stream.data)
    return {"wall": wall, "workers": cpu, "client": client_cpu, "spans": spans, "cpu": stage_cpu(spans, cpu)}


def medians(runs: list[dict]) -> dict:
    """The median over ``runs`` of each figure, by stage too."""
    out = {key: statistics.median(r[key] for r in runs) for key in ("wall", "workers", "client")}
    for key in ("cpu", "compute", "tasks"):
        out[key] = {
            stage: statistics.median(
                r["cpu"].get(stage, 0.0)
                if key == "cpu"
                else r["spans"].get(stage, {}).get("seconds" if key == "compute" else "tasks", 0)
                for r in runs
            )
            for stage in STAGES
        }
    return out


def ratio(a: float, b: float) -> str:
    return f"{b / a:.2f}x" if a > 0 else ("same" if b == 0 else "new")


def report(runs: dict[str, list[dict]], args) -> None:
    m = {variant: medians(runs[variant]) for variant in VARIANTS}
    one, ten = m["one pair"], m["ten pairs"]
    print(
        f"\n== {args.languages} languages x {args.words:,} words x {args.dim}, gender test, uniform+zipf, "
        f"{args.permutations:,} permutations, 2 single-thread workers: median of {args.rounds} rounds =="
    )
    print(f"{'':28s} {'one pair':>12s} {'ten pairs':>12s} {'ratio':>8s}")
    rows = [("run wall (s)", one["wall"], ten["wall"]), ("workers' CPU (s)", one["workers"], ten["workers"])]
    rows.append(("client's CPU (s)", one["client"], ten["client"]))
    for stage in STAGES:
        rows.append((f"{stage}: compute (s)", one["compute"][stage], ten["compute"][stage]))
        rows.append((f"{stage}: CPU (s)", one["cpu"][stage], ten["cpu"][stage]))
    for label, a, b in rows:
        print(f"{label:28s} {a:12.2f} {b:12.2f} {ratio(a, b):>8s}")
    print(
        "tasks by stage (one pair / ten pairs): "
        + ", ".join(f"{s} {one['tasks'][s]:.0f}/{ten['tasks'][s]:.0f}" for s in STAGES)
    )
    words = SEED_WORDS / args.words
    per_language = {v: (m[v]["workers"] * words + m[v]["client"]) / args.languages for v in VARIANTS}
    seed = {v: SEED_LANGUAGES * per_language[v] for v in VARIANTS}
    verdict = "met" if seed["ten pairs"] <= TARGET * seed["one pair"] else "NOT met"
    print(
        f"\n== the study of {SEED_LANGUAGES} languages x {SEED_WORDS:,} words, extrapolated: a language's CPU-s "
        f"((workers' x {words:g} + client's) / {args.languages}) x {SEED_LANGUAGES}, 2 cores always busy =="
    )
    for v in VARIANTS:
        print(
            f"{v:10s} {per_language[v]:6.2f} CPU-s a language -> {seed[v]:7.0f} CPU-s, {seed[v] / 2:6.0f} s on 2 cores"
        )
    print(
        f"reliability costs {seed['ten pairs'] / seed['one pair']:.2f}x the study without it "
        f"(target <= {TARGET}x: {verdict}); measured wall time {ratio(one['wall'], ten['wall'])}; the scores "
        f"stage {ratio(one['cpu']['scores'], ten['cpu']['scores'])} (CPU)"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", type=int, default=2, help=f"languages (default 2, at most {len(CODES)})")
    parser.add_argument("--words", type=int, default=SEED_WORDS, help="words per language (default %(default)s)")
    parser.add_argument("--dim", type=int, default=300, help="dimensions (default %(default)s)")
    parser.add_argument("--permutations", type=int, default=10_000, help="permutations per cell (default %(default)s)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of both variants (default %(default)s; 0: only prepare the --keep store)",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the generated store in DIR and reuse it in later runs of the same --words and --dim",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.languages <= len(CODES):
        parser.error(f"--languages: 1 to {len(CODES)}")

    import biasdask

    print(
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC · {cpu_model()} · {os.cpu_count()} logical CPUs · "
        f"load average {os.getloadavg()[0]:.2f} at the start"
    )
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="biasdask-reliability-", dir=keep))  # beside a kept store: links work
    client = biasdask.get_client(n_workers=2, threads_per_worker=1)
    try:
        source = (keep or work) / f"{CODES[0]}-{args.words}x{args.dim}.zarr"
        if not source.exists():
            t = time.perf_counter()
            vec = work / "source.vec"
            words = [w for pair in base_pairs() for w in pair]
            size = generate(vec, args.words, args.dim, seed=0, first_words=words)
            generated = time.perf_counter() - t
            biasdask.ingest(str(vec), str(source), language=CODES[0], client=client, progress=False)
            vec.unlink()
            print(
                f"generated {args.words:,} x {args.dim} .vec ({size / 1e6:,.0f} MB) in {generated:.0f} s, ingested "
                f"in {time.perf_counter() - t - generated:.0f} s (not timed)"
            )
        stores = {CODES[0]: str(source)}
        for code in CODES[1 : args.languages]:
            stores[code] = link_store(str(source), str(work / f"{code}.zarr"), code)
        runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
        for variant in VARIANTS if args.rounds else ():  # warm: kernels loaded, chunks in the page cache
            measured(client, variant, stores, work, args.permutations)
        for r in range(args.rounds):
            for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                runs[variant].append(measured(client, variant, stores, work, args.permutations))
                print(f"round {r + 1} {variant:9s} {runs[variant][-1]['wall']:6.2f} s wall", flush=True)
        if args.rounds:
            report(runs, args)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
