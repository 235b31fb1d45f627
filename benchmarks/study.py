"""A whole study, end to end, on a local Dask cluster: stage times, busy workers, the user's way, the 26-language study.

Run ``python benchmarks/study.py [--languages 4] [--words 200000] [--dim 300] [--permutations 10000] [--placebo 0]``
(flags up to the full study's 26 x 2,000,000 x 300; the defaults make a run of ~10-20 s on this 2-core
machine, long enough that the stream's fixed costs, opening the stores and the last write, are not
most of it). It

1. writes ``--languages`` fastText-like ``.vec`` files of ``--words`` x ``--dim`` random 4-decimal
   values (the gender test's attribute words first) into a temporary directory (not timed);
2. for each configuration (2 workers x 1 thread; 8 single-thread workers over-subscribed on the
   machine's cores; both started by ``biasdask.get_client``, hence with warm workers) ingests them
   (``biasdask.ingest``) and runs the study (``biasdask.run``: the ``gender`` test, ``uniform`` and
   ``zipf``), recording Dask's task stream; it prints per stage the wall time, the workers'
   compute-seconds and the throughput: ingest, scores (tasks that read vectors and compute u),
   permutations (permutation-batch tasks), writes (tasks writing a language's per-word scores; and
   the time the client spends writing cells in the results store's ``write*`` functions), and the workers' **busy fraction** = Σ task compute time / (worker threads
   x wall time of the stream, from its first task to its last write; also over the whole call);
3. times the same study done the way a user would without biasdask on a sample (gensim
   ``KeyedVectors.load_word2vec_format``, a numpy matvec for u, a loop of ``rng.permutation`` over
   the pooled scores) and extrapolates it to the study, as a ratio;
4. extrapolates the 26-language rerun on stored embeddings (26 languages x 2,000,000 x 300, uniform and
   zipf, 10,000 permutations) on two cores, stage by stage: scores from the stored bytes read per
   CPU-second of the scores tasks (the worker processes' CPU time, shared among the stages as their
   tasks' compute times are: a loaded machine does not inflate it as it does wall times), permutations from the batch kernel timed
   at N = 2,000,000 in this process (two weightings on common splits, and the pool's preparation),
   writes from one language's scores written again alone, as the run's task writes them; printed with its breakdown, for
   always-busy cores and for the busy fraction measured;
5. with ``--rerun``, runs the 26-language rerun itself on two single-thread workers: one language of
   2,000,000 x 300 generated and ingested, its store linked under 26 language codes (hard links; the
   chunks are then read from the page cache), ``biasdask.run`` as in 2. (no placebo); prints its wall
   time, the workers' and the client's CPU seconds and the tasks' compute time by kind (about 3
   minutes, 4 GB of temporary disk);
6. measures a fresh worker's first permutation task: cold (numba's cache empty: the kernels are
   compiled in the task), cache warm but no plugin (loaded in the task), and with biasdask's
   ``WarmKernels`` plugin (loaded as the worker joins, before the task).

Uses only public API, so it measures whatever engine the branch has. gensim is a test extra. The
machine may be shared: the load average is printed; CPU-bound figures are upper bounds. Targets
busy fraction >= 85 %; 26-language rerun <= 40 s on two cores; warm first task < 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CODES = ("en de fr es it pt nl sv da fi pl cs ru uk tr ar he hi ja ko zh vi id el hu ro").split()
A_WORDS = ["he", "him", "his", "man", "male", "boy", "father", "son"]
B_WORDS = ["she", "her", "hers", "woman", "female", "girl", "mother", "daughter"]
SEED_LANGUAGES, SEED_WORDS, SEED_DIM, SEED_PERMUTATIONS, SEED_METHODS = 26, 2_000_000, 300, 10_000, 2


#: a filler word is ``w`` and its row's digits as letters (``wba`` for 10): a word-like token a placebo may draw
LETTERS = str.maketrans("0123456789", "abcdefghij")


def generate(path: Path, n_words: int, dim: int, seed: int, first_words: list[str] | None = None) -> int:
    """Write a fastText-like ``.vec`` (4 decimals, trailing space), ``first_words`` (default: the gender
    test's attribute words) in its first lines; return its size in bytes."""
    rng = np.random.default_rng(seed)
    table = np.array([f"{i / 10000:.4f}".encode() for i in range(-10000, 10001)], dtype=object)
    words = A_WORDS + B_WORDS if first_words is None else first_words
    with open(path, "wb") as f:
        f.write(f"{n_words} {dim}\n".encode())
        for start in range(0, n_words, 5000):
            stop = min(n_words, start + 5000)
            idx = np.clip(rng.normal(0, 1500, (stop - start, dim)).astype(np.int64), -10000, 10000) + 10000
            lines = [
                (words[i] if i < len(words) else f"w{i}".translate(LETTERS)).encode() + b" " + b" ".join(row) + b" \n"
                for i, row in zip(range(start, stop), table[idx])
            ]
            f.write(b"".join(lines))
    return path.stat().st_size


@contextlib.contextmanager
def timed_writes():
    """Seconds the client spends in ``biasdask.io.results.write*`` (wrapped for the block), and calls."""
    from biasdask.io import results

    spent = {"seconds": 0.0, "calls": 0, "last": -math.inf}
    originals = {name: fn for name, fn in vars(results).items() if name.startswith("write") and callable(fn)}

    def wrap(fn):
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent["seconds"] += time.perf_counter() - t
                spent["calls"] += 1
                spent["last"] = max(spent["last"], time.time())

        return timed

    for name, fn in originals.items():
        setattr(results, name, wrap(fn))
    try:
        yield spent
    finally:
        for name, fn in originals.items():
            setattr(results, name, fn)


def stage_of(key: str) -> str:
    """Stage of a task from its key prefix: writing per-word scores, the base pairs' internal consistency,
    permutation batches, else reading/scoring."""
    prefix = str(key).strip("('\"").lower()
    if "write" in prefix:
        return "writes"
    if "consistency" in prefix:  # a family's internal consistency, from the moments its scores tasks gathered
        return "consistency"
    return "permutations" if any(k in prefix for k in ("null", "perm", "pools", "family")) else "scores"


def compute_spans(stream: list[dict]) -> dict[str, dict[str, float]]:
    """Per stage: compute-seconds, first start, last stop, tasks."""
    out: dict[str, dict[str, float]] = {}
    for task in stream:
        for ss in task.get("startstops", ()):
            if ss.get("action") != "compute":
                continue
            s = out.setdefault(
                stage_of(task["key"]), {"seconds": 0.0, "start": math.inf, "stop": -math.inf, "tasks": 0}
            )
            s["seconds"] += ss["stop"] - ss["start"]
            s["start"] = min(s["start"], ss["start"])
            s["stop"] = max(s["stop"], ss["stop"])
            s["tasks"] += 1
    return out


def stage_cpu(spans: dict[str, dict[str, float]], cpu_used: float) -> dict[str, float]:
    """The workers' CPU-seconds ``cpu_used``, shared among the stages as their tasks' compute times are:
    unlike those wall times, they do not count the time a task waited for a core held by another process."""
    computed = sum(v["seconds"] for v in spans.values())
    return {stage: cpu_used * v["seconds"] / computed for stage, v in spans.items()}


def link_store(store: str, copy: str, language: str) -> str:
    """``copy``: the embedding store ``store`` under another language code, its chunks hard links (read
    from the page cache once one of them is read), its group metadata a file of its own, relabelled."""
    from biasdask.io.store import adopt_copy

    shutil.copytree(store, copy, copy_function=os.link)
    root = Path(copy) / "zarr.json"
    root.unlink()  # a file of its own, not a link to the first store's metadata
    shutil.copyfile(Path(store) / "zarr.json", root)
    adopt_copy(copy, language=language)
    return copy


def workers_cpu(client) -> float:
    """CPU-seconds the worker processes have used so far (all their threads: zarr decompresses in its
    own, so a task thread's CPU time would miss it)."""

    def used(dask_worker) -> float:
        import psutil

        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(used).values())


def run_configuration(label, n_workers, sources, args, work: Path) -> dict:
    from distributed import get_task_stream

    import biasdask

    client = biasdask.get_client(n_workers=n_workers, threads_per_worker=1)
    try:
        threads = sum(client.nthreads().values())
        stores = {}
        with get_task_stream(client) as ingest_stream:
            t = time.perf_counter()
            for code, src in sources.items():
                stores[code] = str(work / f"{label}-{code}.zarr")
                biasdask.ingest(str(src), stores[code], language=code, client=client, progress=False)
            ingest_wall = time.perf_counter() - t
        study = {
            "output": str(work / f"{label}-results.zarr"),
            "languages": {code: {"store": stores[code], "a": A_WORDS, "b": B_WORDS} for code in sources},
            "methods": ["uniform", "zipf"],
            "tests": ["gender"],
            "n_permutations": args.permutations,
            "seed": 0,
            "placebo": {"n": args.placebo} if args.placebo else False,
        }
        cpu_before = workers_cpu(client)
        with get_task_stream(client) as run_stream, timed_writes() as writes:
            t = time.perf_counter()
            called = time.time()
            cube = biasdask.run(study, client=client, progress=False)
            run_wall = time.perf_counter() - t
        cpu_used = workers_cpu(client) - cpu_before
        assert int(np.isfinite(cube["p_value"].values).sum()) == len(sources) * 2, cube["p_value"].values
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    spans = compute_spans(run_stream.data)
    ingest_cpu = sum(v["seconds"] for v in compute_spans(ingest_stream.data).values())
    computed = sum(v["seconds"] for v in spans.values())
    cpu = stage_cpu(spans, cpu_used)
    # The stream: from the first task's start (a few ms after the client's first submission) to the
    # end of the last write; before it the client opens and checks the stores and creates the results
    # store, after it it folds the cells into one array (fixed costs, counted in the call's fraction).
    first = min(ss["start"] for task in run_stream.data for ss in task.get("startstops", ()))
    stream_wall = max(writes["last"], max(v["stop"] for v in spans.values())) - first
    return {
        "label": label,
        "threads": threads,
        "ingest_wall": ingest_wall,
        "ingest_cpu": ingest_cpu,
        "run_wall": run_wall,
        "spans": spans,
        "writes": writes,
        "busy": computed / (threads * stream_wall),
        "busy_call": computed / (threads * run_wall),
        "stream_wall": stream_wall,
        "lead_in": first - called,
        "store_bytes": sum(_tree_bytes(Path(url)) for url in stores.values()),
        "cpu": cpu,
        "results": study["output"],
        "stores": stores,
    }


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def report(r: dict, args, total_bytes: int) -> None:
    n_words = args.languages * args.words
    n_perm_values = args.languages * 2 * args.permutations * args.words  # weightings x permutations x pooled words
    print(f"\n== {r['label']}: {r['threads']} single-thread workers ==")
    print(
        f"ingest        {r['ingest_wall']:7.2f} s wall  {total_bytes / 1e6 / r['ingest_wall']:7.1f} MB/s"
        f"  (workers' compute {r['ingest_cpu']:.1f} s)"
    )
    for stage in ("scores", "permutations"):
        s = r["spans"].get(stage)
        if s is None:
            print(f"{stage:13s}  (no tasks of this stage on the workers)")
            continue
        rate = n_words / s["seconds"] if stage == "scores" else n_perm_values / s["seconds"]
        unit = "words/s per busy thread" if stage == "scores" else "permutation x words/s per busy thread"
        print(
            f"{stage:13s} {s['stop'] - s['start']:7.2f} s span  {s['seconds']:7.2f} s compute "
            f"({r['cpu'].get(stage, math.nan):.2f} s CPU)  {s['tasks']:5d} tasks  {rate:,.0f} {unit}"
        )
    s = r["spans"].get("writes")
    if s is not None:
        print(
            f"writes        {s['stop'] - s['start']:7.2f} s span  {s['seconds']:7.2f} s compute "
            f"({r['cpu'].get('writes', math.nan):.2f} s CPU)  {s['tasks']:5d} tasks  (per-word scores, written by tasks)"
        )
    w = r["writes"]
    print(f"cell writes   {w['seconds']:7.2f} s in the client ({w['calls']} calls of biasdask.io.results.write*)")
    print(
        f"run           {r['run_wall']:7.2f} s wall (first task after {r['lead_in']:.2f} s); stream {r['stream_wall']:.2f} s "
        f"(first task to last write)"
    )
    print(
        f"busy fraction {100 * r['busy']:5.1f} % of the stream (target >= 85 %); {100 * r['busy_call']:5.1f} % of the whole call"
    )


def baseline(sources: dict, args, sample: int) -> dict:
    """The user's way on a sample, extrapolated to the study: gensim load, numpy matvec, permutation loop."""
    from gensim.models import KeyedVectors

    src = next(iter(sources.values()))
    t = time.perf_counter()
    kv = KeyedVectors.load_word2vec_format(str(src), binary=False, limit=sample)
    load = (time.perf_counter() - t) * args.words / sample
    t = time.perf_counter()
    vectors = kv.vectors.astype(np.float64)
    a = vectors[[kv.key_to_index[w] for w in A_WORDS]]
    b = vectors[[kv.key_to_index[w] for w in B_WORDS]]
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    d = unit(a).mean(0) - unit(b).mean(0)
    u = (vectors @ d) / np.linalg.norm(vectors, axis=1)
    matvec = (time.perf_counter() - t) * args.words / sample
    pool = np.concatenate([np.resize(u, args.words), np.zeros(args.words)])  # X = the words, Y = as many zeros
    rng = np.random.default_rng(0)
    reps = 5
    t = time.perf_counter()
    for _ in range(reps):
        p = rng.permutation(pool.size)
        _ = pool[p[: args.words]].sum() - pool[p[args.words :]].sum()
    per_permutation = (time.perf_counter() - t) / reps
    per_language = load + matvec + 2 * args.permutations * per_permutation
    return {"load": load, "matvec": matvec, "per_permutation": per_permutation, "total": args.languages * per_language}


def first_task(mode: str, cache_dir: str | None) -> dict:
    """In a fresh process: a new 1-worker cluster, then one permutation batch; its compute time."""
    code = f"""
import json, os, time
import numpy as np
import biasdask
from distributed import Client, LocalCluster, get_task_stream
t0 = time.perf_counter()
if {mode!r} == "plugin":
    client = biasdask.get_client(n_workers=1, threads_per_worker=1)
else:
    client = Client(LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"))
ready = time.perf_counter() - t0
rng = np.random.default_rng(0)
x, y = rng.standard_normal(200_000), rng.standard_normal(200_000)
with get_task_stream(client) as ts:
    t = time.perf_counter()
    options = biasdask.Resampling(n_permutations=40, seed=1, batch_size=40)
    biasdask.permutation_test(x, y, resampling=options, client=client, progress=False)
    wall = time.perf_counter() - t
(task,) = [t for t in ts.data if str(t["key"]).startswith("null")] or ts.data[-1:]
compute = sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
plugin = client.run(lambda dask_worker: getattr(dask_worker.plugins.get("biasdask-warm-kernels"), "seconds", None))
warm = sum(sum(v.values()) for v in plugin.values() if v)
print(json.dumps({{"ready": ready, "compute": compute, "wall": wall, "warm": warm}}))
client.close(); client.cluster.close()
"""
    env = dict(os.environ)
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def kernel_at_seed_size(n_words: int = SEED_WORDS, permutations: int = 200) -> dict:
    """CPU-seconds of the permutation stage per language of the full study, measured at the full study's N in this process
    (one core): one pool of the two weightings (preparation, once per language) and ``permutations``
    of its batch kernel, scaled to 10,000."""
    from biasdask.engine.pools import pools_batch, prepare_pools

    rng = np.random.default_rng(0)
    u = rng.normal(0, 0.05, n_words).astype(np.float32)
    t = np.stack([u, (u / np.arange(1, n_words + 1)).astype(np.float32)])  # uniform, zipf-like
    c = time.process_time()
    pools = prepare_pools(t, n_words, SEED_PERMUTATIONS, "two-sided", 0, effect_x=u)
    prepare = time.process_time() - c
    pools_batch(pools, 0, 4)  # kernels loaded
    c = time.process_time()
    pools_batch(pools, 0, permutations)
    per_permutation = (time.process_time() - c) / permutations
    return {
        "prepare": prepare,
        "per_permutation": per_permutation,
        "per_language": prepare + SEED_PERMUTATIONS * per_permutation,
    }


def scores_write(results_url: str, store_url: str, args) -> dict:
    """Seconds to write one language's per-word scores as the run's task does (its words copied from
    the embedding store as stored), from this process, alone."""
    from biasdask.io import results as rs
    from biasdask.io.store import vocabulary_files

    sc = rs.open_scores(results_url, language=CODES[0]).load()
    out = results_url + ".rewrite"
    langs = list(CODES[: args.languages])
    rs.create_results(
        out,
        languages=langs,
        methods=["uniform", "zipf"],
        tests=["gender"],
        attrs={"seed": 0, "alternative": "two-sided", "similarity": "cosine"},
        config_text="benchmark",
    )
    t = time.perf_counter()
    rs.write_scores(out, CODES[0], sc.drop_vars("word"), words_from=vocabulary_files(store_url, sc.sizes["word"]))
    seconds = time.perf_counter() - t
    return {"write": seconds, "write_per_word": seconds / sc.sizes["word"]}


def full_vocabulary_rerun(results: list[dict], args, kernel: dict) -> None:
    """The 26-language rerun on two cores from each stage's measured throughput, with its breakdown."""
    cores = 2
    print(
        f"\n== 26-language rerun on stored embeddings, extrapolated: {SEED_LANGUAGES} x {SEED_WORDS:,} x {SEED_DIM}, "
        f"uniform+zipf, {SEED_PERMUTATIONS:,} permutations, {cores} cores =="
    )
    print(
        f"permutation kernel at N = {SEED_WORDS:,} (two weightings on common splits, one core, this process): "
        f"{1 / kernel['per_permutation']:,.0f} permutations/s, pool prepared in {kernel['prepare']:.2f} s "
        f"-> {kernel['per_language']:.1f} CPU-s per language"
    )
    print(
        f"writing one language's scores alone (this process, no workers): {kernel['write']:.2f} s for "
        f"{args.words:,} words -> {kernel['write_per_word'] * SEED_WORDS * SEED_DIM / args.dim:.1f} s per language of the full study"
    )
    seed_words = SEED_LANGUAGES * SEED_WORDS * SEED_DIM / args.dim  # words x (dims relative to the measured)
    words = args.languages * args.words
    for r in results:
        if "scores" not in r["spans"]:
            print(f"{r['label']}: n/a (no scores tasks)")
            continue
        # CPU-seconds of the tasks' threads (not their wall time, which counts waits for a core).
        scores_cpu = r["cpu"]["scores"]
        read_rate = r["store_bytes"] / scores_cpu  # stored bytes per CPU-second (whole stores: vectors dominate)
        scores_seed = r["store_bytes"] / words * seed_words / read_rate
        perms_seed = SEED_LANGUAGES * kernel["per_language"]
        perms_cluster = (
            r["cpu"].get("permutations", math.nan)
            * (SEED_LANGUAGES * SEED_PERMUTATIONS * SEED_WORDS)
            / (args.languages * args.permutations * args.words)
        )
        writes_seed = kernel["write_per_word"] * seed_words  # per-word scores dominate (written by tasks)
        total = scores_seed + perms_seed + writes_seed
        used = min(1.0, r["busy"] * r["threads"] / cores)  # over-subscribed threads share the cores
        print(
            f"{r['label']}: scores {scores_seed:,.0f} CPU-s ({read_rate / 1e6:,.0f} MB of store per CPU-s) + "
            f"permutations {perms_seed:,.0f} + writes {writes_seed:,.0f} = {total:,.0f} CPU-s "
            f"-> {total / cores:,.0f} s if the cores are always busy, {total / (cores * max(used, 1e-9)):,.0f} s "
            f"with them {100 * used:.0f} % busy as here (target <= 40 s); "
            f"[permutations scaled from this run's tasks at N = {args.words:,} instead: {perms_cluster:,.0f} CPU-s]"
        )


def rerun(args, work: Path) -> dict:
    """The 26-language rerun itself on two single-thread workers: one language of the full study's size
    generated and ingested, its store linked under the other 25 codes (hard links, the group metadata
    copied and relabelled: the chunks are read from the page cache, as on a machine whose stores fit
    in memory), the study run by ``biasdask.run``; its wall time, the workers' and the client's CPU."""
    import psutil
    from distributed import get_task_stream
    from distributed.utils import key_split

    import biasdask

    vec = work / "rerun.vec"
    t = time.perf_counter()
    generate(vec, SEED_WORDS, SEED_DIM, seed=0)
    generated = time.perf_counter() - t
    client = biasdask.get_client(n_workers=2, threads_per_worker=1)
    try:
        stores = {CODES[0]: str(work / f"rerun-{CODES[0]}.zarr")}
        t = time.perf_counter()
        biasdask.ingest(str(vec), stores[CODES[0]], language=CODES[0], client=client, progress=False)
        ingested = time.perf_counter() - t
        vec.unlink()
        for code in CODES[1:SEED_LANGUAGES]:
            stores[code] = link_store(stores[CODES[0]], str(work / f"rerun-{code}.zarr"), code)
        study = {
            "output": str(work / "rerun-results.zarr"),
            "languages": {code: {"store": url, "a": A_WORDS, "b": B_WORDS} for code, url in stores.items()},
            "methods": ["uniform", "zipf"],
            "tests": ["gender"],
            "n_permutations": SEED_PERMUTATIONS,
            "seed": 0,
            "placebo": False,
        }
        me = psutil.Process()
        cpu_client, cpu_workers = sum(me.cpu_times()[:2]), workers_cpu(client)
        t = time.perf_counter()
        with get_task_stream(client) as stream:
            cube = biasdask.run(study, client=client, progress=False)
        wall = time.perf_counter() - t
        cpu_client, cpu_workers = sum(me.cpu_times()[:2]) - cpu_client, workers_cpu(client) - cpu_workers
        assert int(np.isfinite(cube["p_value"].values).sum()) == SEED_LANGUAGES * SEED_METHODS
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    kinds: dict[str, list] = {}
    for task in stream.data:
        for ss in task.get("startstops", ()):
            if ss.get("action") == "compute":
                kind = kinds.setdefault(key_split(task["key"]).lstrip("_"), [0, 0.0])
                kind[0] += 1
                kind[1] += ss["stop"] - ss["start"]
    return {
        "generated": generated,
        "ingested": ingested,
        "wall": wall,
        "workers": cpu_workers,
        "client": cpu_client,
        "kinds": kinds,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", type=int, default=4, help=f"languages (default 4, at most {len(CODES)})")
    parser.add_argument("--words", type=int, default=200_000, help="words per language (default 200,000)")
    parser.add_argument("--dim", type=int, default=300, help="dimensions (default 300)")
    parser.add_argument(
        "--permutations", type=int, default=10_000, help="permutations per cell (default 10,000, the full study's)"
    )
    parser.add_argument(
        "--placebo",
        type=int,
        default=0,
        help="placebo pairs per cell (default 0: none, as the 26-language rerun measured here; a study's default is 1,000)",
    )
    parser.add_argument("--baseline-words", type=int, default=20_000, help="lines gensim loads for the baseline")
    parser.add_argument("--configurations", default="2,8", help="worker counts to run (default 2,8)")
    parser.add_argument("--skip-first-task", action="store_true", help="skip the cold/warm first-task measurement")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="also run the 26-language rerun itself (26 x 2,000,000 x 300, one store linked under 26 codes: "
        "about 3 minutes and 4 GB of temporary disk)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.languages <= len(CODES):
        parser.error(f"--languages: 1 to {len(CODES)}")

    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start")
    work = Path(tempfile.mkdtemp(prefix="biasdask-study-"))
    try:
        t = time.perf_counter()
        sources = {code: work / f"{code}.vec" for code in CODES[: args.languages]}
        total_bytes = sum(generate(path, args.words, args.dim, seed=i) for i, path in enumerate(sources.values()))
        print(
            f"generated {args.languages} x {args.words:,} x {args.dim} .vec ({total_bytes / 1e6:,.0f} MB) "
            f"in {time.perf_counter() - t:.1f} s (not timed below)"
        )

        results = []
        for n in (int(v) for v in args.configurations.split(",")):
            results.append(run_configuration(f"{n}w", n, sources, args, work))
            report(results[-1], args, total_bytes)

        base = baseline(sources, args, min(args.baseline_words, args.words))
        print(
            f"\n== without biasdask (one core; sample of {min(args.baseline_words, args.words):,} lines, extrapolated) =="
        )
        print(
            f"gensim load {base['load']:.1f} s, numpy matvec {base['matvec']:.2f} s per language; "
            f"rng.permutation loop {1e3 * base['per_permutation']:.1f} ms per permutation; "
            f"whole study {base['total']:,.0f} s"
        )
        for r in results:
            ours = r["ingest_wall"] + r["run_wall"]
            print(f"biasdask ({r['label']}, ingest + run) {ours:.1f} s: {base['total'] / ours:,.0f}x faster")

        kernel = kernel_at_seed_size()
        kernel.update(scores_write(results[0]["results"], results[0]["stores"][CODES[0]], args))
        full_vocabulary_rerun(results, args, kernel)

        if args.rerun:
            r = rerun(args, work)
            print(
                f"\n== 26-language rerun, run ({SEED_LANGUAGES} x {SEED_WORDS:,} x {SEED_DIM}, uniform+zipf, "
                f"{SEED_PERMUTATIONS:,} permutations, 2 single-thread workers; one store ingested in "
                f"{r['ingested']:.0f} s and linked under {SEED_LANGUAGES} codes: its chunks read from the page cache) =="
            )
            print(
                f"{r['wall']:.1f} s wall (target <= 40 s); the workers' CPU {r['workers']:.0f} s, the client's "
                f"{r['client']:.1f} s; load average {os.getloadavg()[0]:.1f}"
            )
            print(
                "task time by kind: "
                + ", ".join(
                    f"{kind} {n} x {seconds / n:.3f} s = {seconds:.1f} s"
                    for kind, (n, seconds) in sorted(r["kinds"].items(), key=lambda kv: -kv[1][1])
                    if seconds >= 0.05
                )
            )

        if not args.skip_first_task:
            print("\n== a fresh worker's first permutation task (one batch of 40 over 400,000 values) ==")
            cold_cache = tempfile.mkdtemp(prefix="numba-cold-")
            try:
                for label, mode, cache in (
                    ("cold: numba cache empty, no plugin", "plain", cold_cache),
                    ("cache warm, no plugin", "plain", None),
                    ("cache warm, WarmKernels plugin (biasdask.get_client)", "plugin", None),
                ):
                    m = first_task(mode, cache)
                    warm = f"; the plugin loaded the kernels in {m['warm']:.2f} s as it joined" if m["warm"] else ""
                    print(
                        f"{label:55s} first task {m['compute']:6.2f} s compute, {m['wall']:6.2f} s wall "
                        f"(cluster ready after {m['ready']:.1f} s{warm})"
                    )
            finally:
                shutil.rmtree(cold_cache, ignore_errors=True)
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
