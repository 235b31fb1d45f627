"""Is the client the bottleneck on a big cluster? A study run simulated on N worker threads.

Run ``python benchmarks/scale.py [--words 200000] [--languages 4] [--threads 2,16,64,256]`` (up to a
real study's size, e.g. ``--words 2000000 --languages 26``; the defaults take a few minutes on a
2-core machine). It

1. generates word-only embedding stores of ``--words`` words (real vocabulary sizes, ``--dim`` tiny
   dimensions, 4 by default): one fastText-like ``.vec`` ingested by ``biasdask.ingest`` with the chunk
   layout a ``--model-dim`` (300) store of that many words has, then copied and relabelled for each of
   ``--languages`` languages (ingesting the same file again gives the same bytes). With ``--stores DIR``
   they are kept there and reused by later runs;
2. measures, on this machine and at this scale, the duration of each heavy task body of a run on a
   free core: a scores chunk (reading, decoding and scoring one ``--model-dim`` chunk, from a one-chunk
   store written for it), the attribute rows (one read of the chunk that holds them), a family's pool
   (:func:`biasdask.engine.permutation.prepare_pools`, ``uniform`` and ``zipf`` on ``--words`` scores),
   one permutation of the pool's two weightings, a language's per-word scores write, and the search of
   its vocabulary for the words it looks up (:func:`biasdask.io.store.find_words`). ``--durations
   scores=0.015,rows=0.025,pool=0.25,permutation=0.0003,write=0.1,find=0.05`` gives them instead (in seconds; a
   scores duration is for a whole chunk, a permutation duration for one permutation of the two
   weightings; those not given are measured);
3. for each N of ``--threads``, starts a real ``dask scheduler`` process and ``dask worker`` processes
   with N threads in all (``--threads-per-process``; by default as many processes as the machine has
   cores, at least two: a process's own work, its event loop and the transfers to it, would run on a
   machine of its own in a cluster, and more processes than cores only compete for them), whose
   ``--preload`` (this file, :func:`dask_setup`) replaces those task bodies by ``time.sleep`` of the
   durations (scores chunks, attribute rows, pools, permutation batches, scores writes: the functions
   the client's tasks name are swapped inside the worker processes only; a pool is a real one of 64
   words carrying as many bytes as the real pool, so it travels as the real one does, unless
   ``--no-pool-ballast``); and runs biasdask's real :func:`biasdask.study.run.run` in a fresh client
   process (the ``gender`` test, ``uniform`` and ``zipf``, ``--permutations``), which opens the
   stores, finds their words, builds and submits the graphs and writes the cells as it always does
   (without placebo pairs, as the 26-language rerun measured by ``benchmarks/study.py``);
4. prints per N: the wall time of ``run``; the workers' **busy fraction** from Dask's task stream
   (Σ task compute time / (wall × N)); the tasks and their mean duration; the client process's CPU
   seconds and peak memory (RSS sampled every 10 ms in a thread; and its RSS when ``run`` started); the
   scheduler's and the workers' CPU seconds; the share of the machine's cores in use (the simulation
   shares them with everything else); and the serial chain: when the first task of the study started
   and when the last store was opened and the last language started, in seconds after ``run`` was
   called. Then the client's CPU seconds by part (opening and checking the stores, building scores
   graphs, submitting families, writing cells, the loop, the results store, the client's comm thread,
   the rest) and the tasks by kind. ``--json PATH`` writes the same rows as a
   JSON list of objects (keys ``threads``, ``wall_s``, ``busy``, ``client_peak_mib``,
   ``client_cpu_s``, ``scheduler_cpu_s`` and more).

``--sources`` runs the study from its sources, as a researcher runs fastText's (``--languages 157``):
the study names ``sources:`` (fastText's URL template, on a port where nothing answers: nothing is
downloaded) and ``embeddings:`` (a fresh folder per run), so the real ``run`` plans an ingest task
(:func:`biasdask.engine.sources.ingest_source`) for every language and starts each language once its
store is made, with the run's display on (the bytes fetched reach the client as events). In the workers
that task is replaced by sleeps: the ``--source-mb`` (1,200) MB source arrives at ``--bandwidth`` MB/s
(50; per ingest task, each fetching its own source); each block of a chunk of lines is decompressed and
cut (``read``) in the task's thread once its bytes are there, then parsed and written (``parse``) as
the real task does it, by :func:`biasdask.engine.tasks.hand_out` (a task of its own on a free thread,
``biasdask.sources.blocks-beside`` in flight, carrying a 1 KiB stand-in for the block's ~70 MB of text:
moving a block to another worker is not simulated; or slept in the task's thread); then the search for
repeated words (``finish``). The time a task's thread spends seceded from its pool, waiting for the
blocks it handed out, is not counted busy. The three are measured here (a real
:func:`biasdask.io.formats.iter_blocks` and ``_ingest_block`` of one block of a generated
``--model-dim`` ``.vec.gz``, ``_Job.finish``'s searches on ``--words`` hashes) or given with
``--durations read=...,parse=...,finish=...``. The task reports the bytes as it fetches them, 1 MiB at a
time as the real download does, then links the language's word-only store into place (hard links). The
output states the bandwidth and the ingest task's duration, and per N the serial chain: the first task,
the last store made, the last language started, the end.

``--validate`` first runs a small real study (``--validate-languages`` x ``--validate-words`` x
``--model-dim``, real vectors, nothing replaced; its workers import biasdask as they start, as the
simulated ones do) at N = 2, then the same study simulated with the durations measured at its scale, and prints the ratio of their wall times (and the tasks' mean
durations by kind, real against slept), so the simulation's fidelity is checked on this machine.

The machine may be shared: its CPU model, cores and load average are printed; with few cores the
worker processes, the scheduler and the client compete for them (the machine's CPU in use shows it).
Targets for the 26 x 2,000,000-word study: busy >= 80 % at 64 threads and >= 60 % at 256, wall <= 5 s
at 100 threads, client peak memory <= 1 GB.
For the 157-language study from its sources: busy >= 60 % at 256 threads, client under 1 GB.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

import numpy as np
from machine import cpu_model

CODES = [
    "en",
    "de",
    "fr",
    "es",
    "it",
    "pt",
    "nl",
    "sv",
    "da",
    "fi",
    "pl",
    "cs",
    "ru",
    "uk",
    "tr",
    "ar",
    "he",
    "hi",
    "ja",
    "ko",
    "zh",
    "vi",
    "id",
    "el",
    "hu",
    "ro",
]
A_WORDS = ["he", "him", "his", "man", "male", "boy", "father", "son"]
B_WORDS = ["she", "her", "hers", "woman", "female", "girl", "mother", "daughter"]
METHODS = ("uniform", "zipf")
#: the task bodies replaced by sleeps, and what a duration is for
KINDS = {
    "scores": "s per chunk",
    "rows": "s per read",
    "find": "s per language (its words found in its store)",
    "pool": "s per family",
    "permutation": "s per permutation of both weightings",
    "write": "s per language",
}
#: with ``--sources``: the parts of a language's ingest task, and what a duration is for
SOURCE_KINDS = {
    "read": "s per block (decompressing and cutting one chunk of lines of a .vec.gz)",
    "parse": "s per block (parsing and writing one chunk)",
    "finish": "s per language (its duplicates and shared vectors found)",
}
#: bytes of a fetched piece (each reported to the run's display, as ``biasdask.io.download`` reads them)
PIECE_BYTES = 2**20
#: bytes a simulated block carries to the task that parses it (the real one carries ~70 MB of text)
BLOCK_BALLAST = 1024
#: the environment variable that gives the worker processes their sleeps (JSON)
SLEEPS_ENV = "BIASDASK_SCALE_SLEEPS"
#: words of a pool's stand-in (a real pool of this many words: its batches and cells stay real)
POOL_WORDS = 64


# ------------------------------------------------------------------------------------------------
# Worker side: the preload that replaces the heavy task bodies by sleeps.

_SLEEPS: dict = {}
_CALLS: dict = {"lock": threading.Lock(), "calls": defaultdict(int), "slept": defaultdict(float), "seceded": 0.0}
_SECEDED = threading.local()
_BALLAST: dict = {}


def dask_setup(worker) -> None:
    """Worker preload (``dask worker --preload benchmarks/scale.py``): install the sleeps given as JSON
    in the environment variable ``BIASDASK_SCALE_SLEEPS`` (:func:`install_sleeps`)."""
    if SLEEPS_ENV not in os.environ:
        raise RuntimeError(f"{SLEEPS_ENV} is not set: no durations for the simulated tasks")
    install_sleeps(json.loads(os.environ[SLEEPS_ENV]))
    worker._biasdask_scale = _CALLS  # read back by the client (worker_calls)


def install_sleeps(sleeps: dict) -> None:
    """Replace, in this process, the functions that a run's heavy tasks call by sleeps of ``sleeps``.

    The client names them in its tasks as ``biasdask.engine.scores.stored_scores`` and so on (pickled by
    reference), so a worker process that installed them runs the sleeps; the client stays unchanged.
    """
    from biasdask.engine import scores
    from biasdask.io import store
    from biasdask.study import work

    _SLEEPS.update(sleeps)
    store.find_words = _sleepy_find
    scores.stored_scores = _sleepy_scores
    scores.stored_rows = _sleepy_rows
    work.family_pools = _sleepy_pools
    work.family_batch = _sleepy_batch
    work.write_scores = _sleepy_write
    if "sources" in sleeps:
        from biasdask.engine import sources, tasks

        sources.ingest_source = _sleepy_ingest
        tasks.secede, tasks.rejoin = _timed(tasks.secede, "start"), _timed(tasks.rejoin, "stop")


def _timed(fn, when: str):
    """``distributed``'s secede (``start``) or rejoin (``stop``) as :func:`biasdask.engine.tasks.hand_out`
    calls them, the seconds between them (a task's thread out of its worker's pool, waiting for the
    tasks it handed out, then for a slot) counted as ``seceded``: not busy."""

    def call():
        if when == "start":
            _SECEDED.since = time.monotonic()
            return fn()
        fn()
        with _CALLS["lock"]:
            _CALLS["seceded"] += time.monotonic() - _SECEDED.since

    return call


def _sleep(kind: str, seconds: float) -> None:
    time.sleep(max(0.0, seconds))
    with _CALLS["lock"]:
        _CALLS["calls"][kind] += 1
        _CALLS["slept"][kind] += seconds


def _sleepy_scores(loc, chunk, kind, axes, *arrays, n, methods, extras, block_info=None):
    """A scores task's chunks: their duration (scaled to a shorter last chunk), then rows of made-up u
    (the simulated study has no placebo, so no moments)."""
    from biasdask.engine.scores import score_rows

    (start, stop) = block_info[None]["array-location"][1]
    _sleep("scores", _SLEEPS["scores"] * (stop - start) / chunk)
    u = np.random.default_rng(start).normal(0.0, 0.05, stop - start).astype(np.float32)
    return score_rows(u, start, n, methods, **dict(zip(extras, arrays)))


def _sleepy_find(loc, words):
    """A language's words found in its store: its duration, then the rows, known from how
    :func:`generate` names the words (the attribute words first, then ``w<i>`` at row i)."""
    from biasdask.io.store import read_group_attrs

    _sleep("find", _SLEEPS["find"])
    n_words = int((read_group_attrs(loc) or {})["n_words"])
    first = {w: i for i, w in enumerate(A_WORDS + B_WORDS)}
    rows = []
    for w in words:
        i = int(w[1:]) if w[:1] == "w" and w[1:].isdigit() and str(int(w[1:])) == w[1:] else -1
        rows.append(first.get(w, i if len(first) <= i < n_words else -1))
    return np.array(rows, dtype=np.int64)


def _sleepy_rows(loc, chunk, rows, dim):
    """The attribute rows: their duration, then made-up non-zero rows."""
    _sleep("rows", _SLEEPS["rows"])
    return np.random.default_rng(len(rows)).normal(0.0, 0.1, (len(rows), dim)).astype(np.float32)


class _Ballasted(list):
    """A pool (the list :func:`prepare_pools` returns) carrying ``ballast``: the real pool's bytes."""


def _sleepy_pools(rows, n_permutations, alternative, seed, *pieces):
    """A family's pool (as ``family_pools`` returns it: the pools and the weighted effect sizes): its
    duration, then a real pool of :data:`POOL_WORDS` of its words (so that its batches and cells run the
    real code, cheaply), with the real pool's bytes as ballast."""
    from biasdask.engine.pools import prepare_pools
    from biasdask.study.work import FamilyPool, joined_rows, weighted_effect_sizes

    _sleep("pool", _SLEEPS["pool"])
    ut = joined_rows(pieces[:1])  # the first chunk's rows (a piece may be its (rows, moments) pair)
    u, t = ut[0], ut[1:]
    keep = np.flatnonzero(np.isfinite(u))
    if keep.size == 0:
        return None
    keep = np.unique(keep[np.linspace(0, keep.size - 1, min(keep.size, POOL_WORDS)).astype(np.int64)])
    pools = _Ballasted(
        prepare_pools(t[rows][:, keep], int(keep.size), n_permutations, alternative, seed, effect_x=u[keep])
    )
    size = int(_SLEEPS.get("pool_bytes", 0))
    if size:
        if len(_BALLAST.get("bytes", b"")) < size:  # random: a transfer cannot compress it
            _BALLAST["bytes"] = np.random.default_rng(0).bytes(size)
        pools.ballast = np.frombuffer(_BALLAST["bytes"], dtype=np.uint8, count=size)
    return FamilyPool(pools, weighted_effect_sizes(u[keep], t[rows][:, keep]))


def _sleepy_batch(pool, start, stop):
    """Permutations [start, stop): their duration, then the real batch of the stand-in pool."""
    from biasdask.engine.pools import pools_batch

    _sleep("permutation", _SLEEPS["permutation"] * (stop - start))
    return None if pool is None else pools_batch(pool.pools, start, stop)


def _sleepy_write(loc, code, parts, counts, *computed):
    """A language's per-word scores write: its duration (nothing is written)."""
    _sleep("write", _SLEEPS["write"])


def ingest_schedule(blocks: int, source_bytes: float, bandwidth: float, read: float, parse: float) -> list:
    """When each block of a language's ingest task is done in its own thread, in seconds after the task
    started, and the bytes fetched by then: the source arrives at ``bandwidth`` bytes/s (fetched ahead,
    in a thread of its own, as :class:`biasdask.io.download.Download` does), and the task decompresses
    and cuts block k (``read``) once its bytes are there and block k - 1 is done, then parses and writes
    it (``parse``: 0 when other threads do it)."""
    done, out = 0.0, []
    for k in range(blocks):
        arrived = (k + 1) * source_bytes / blocks / bandwidth
        done = max(done, arrived) + read + parse
        out.append((done, min(source_bytes, done * bandwidth)))
    return out


def _sleepy_parse(ballast: bytes, seconds: float) -> int:
    """A block parsed and written: its duration."""
    _sleep("parse", seconds)
    return len(ballast)


def _sleepy_ingest(job, report=None):
    """A language's store made from its source (:func:`biasdask.engine.sources.ingest_source`): its
    download slept (the source arriving at the bandwidth), each block's decompressing and cutting slept in
    the task's thread once its bytes are there, and its parsing and writing handed out as the real task
    hands it (:func:`biasdask.engine.tasks.hand_out`, ``job.beside`` blocks in flight, each a task of its
    own carrying a small stand-in for the block's bytes, or slept here); the bytes fetched reported piece
    by piece as the real task does; then the search for repeated words slept, and the language's
    word-only store linked into place; returns its identity. Its sleeps count by kind (``read``,
    ``parse``, ``finish``); those of ``ingest`` are its waits for bytes still to arrive, its thread held.
    """
    from biasdask.engine.sources import FetchedEvents
    from biasdask.io.store import store_identity

    src = _SLEEPS["sources"]
    events = report.in_this_task() if isinstance(report, FetchedEvents) else contextlib.nullcontext(report)
    with events as on_bytes:
        _sleepy_ingest_in(job, on_bytes, src)
    dest = job.store.url
    link_store(src["stash"][job.language], dest)
    with _CALLS["lock"]:
        _CALLS["calls"]["ingest"] += 1
    return store_identity(dest, language=job.language).as_dict()


def _sleepy_ingest_in(job, report, src: dict) -> None:
    from biasdask.engine.tasks import hand_out

    start = time.monotonic()
    reported = 0

    def fetched_by_now() -> None:
        nonlocal reported
        fetched = min(src["bytes"], (time.monotonic() - start) * src["bandwidth"])
        while report is not None and reported + PIECE_BYTES <= fetched:
            report(PIECE_BYTES)
            reported += PIECE_BYTES

    def blocks():
        for k in range(src["blocks"]):
            arrived = (k + 1) * src["bytes"] / src["blocks"] / src["bandwidth"]
            waited = max(0.0, start + arrived - time.monotonic())
            time.sleep(waited)
            with _CALLS["lock"]:
                _CALLS["slept"]["ingest"] += waited
            _sleep("read", _SLEEPS["read"])
            fetched_by_now()
            yield k, _sleepy_parse, (bytes(BLOCK_BALLAST), _SLEEPS["parse"])

    hand_out(blocks(), lambda k, n: None, window=job.beside, priority=job.priority)
    time.sleep(max(0.0, start + src["bytes"] / src["bandwidth"] - time.monotonic()))  # the download's end
    fetched_by_now()
    if report is not None and src["bytes"] > reported:
        report(int(src["bytes"] - reported))
    _sleep("finish", _SLEEPS["finish"])


def worker_calls(dask_worker) -> dict | None:
    """On a worker (``client.run``): the sleeps it ran, by kind (None: no sleeps installed)."""
    calls = getattr(dask_worker, "_biasdask_scale", None)
    if calls is None:
        return None
    with calls["lock"]:
        return {"calls": dict(calls["calls"]), "slept": dict(calls["slept"]), "seceded": calls["seceded"]}


# ------------------------------------------------------------------------------------------------
# Stores.


def language_codes(n: int) -> list[str]:
    """``n`` language codes: the 26 of a real study, then made-up three-letter ones."""
    extra = (f"x{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz")
    return [*CODES, *extra][:n]


def generate(path: Path, n_words: int, dim: int, seed: int = 0) -> None:
    """Write a fastText-like ``.vec`` (4 decimals, the attribute words first, then ``w<i>``)."""
    rng = np.random.default_rng(seed)
    table = np.array([f"{i / 10000:.4f}".encode() for i in range(-10000, 10001)], dtype=object)
    first = A_WORDS + B_WORDS
    step = max(1, 2_000_000 // (dim * 8))
    with open(path, "wb") as f:
        f.write(f"{n_words} {dim}\n".encode())
        for start in range(0, n_words, step):
            stop = min(n_words, start + step)
            values = table[np.clip(rng.normal(0, 1500, (stop - start, dim)).astype(np.int64), -10000, 10000) + 10000]
            words = (first[i] if i < len(first) else f"w{i}" for i in range(start, stop))
            f.write(b"".join(w.encode() + b" " + b" ".join(row) + b" \n" for w, row in zip(words, values)))


def _chunk_of(url: str) -> int:
    meta = json.loads((Path(url) / "vectors" / "zarr.json").read_text())
    return int(meta["chunk_grid"]["configuration"]["chunk_shape"][0])


def _usable(url: str, code: str, n_words: int, chunk: int) -> bool:
    """Whether a complete store of ``code`` with these words and chunks is at ``url``."""
    from biasdask.io.store import check_embeddings

    try:
        attrs = check_embeddings(url, language=code)
        return attrs.get("n_words") == n_words and _chunk_of(url) == chunk
    except Exception:  # noqa: BLE001 - anything else there is replaced
        return False


def link_store(source: str, dest: str) -> None:
    """A copy of the store ``source`` at ``dest`` whose chunks are hard links to its own (its metadata
    files copied: they are rewritten in place)."""

    def link(src, dst):
        if Path(src).name == "zarr.json":
            return shutil.copy2(src, dst)
        return os.link(src, dst)

    shutil.copytree(source, dest, copy_function=link)


def make_stores(where: Path, codes: list[str], n_words: int, dim: int, chunk: int) -> dict[str, str]:
    """Stores of ``n_words`` x ``dim`` in chunks of ``chunk`` words for ``codes``: the first ingested by
    ``biasdask.ingest`` from a generated ``.vec``, the others copies of it relabelled (new ``store_id``;
    their chunks linked to the first's). Stores already there (complete, same words and chunks) are
    reused."""
    import biasdask
    from biasdask.io.store import adopt_copy

    where.mkdir(parents=True, exist_ok=True)
    urls = {code: str(where / f"{code}-{n_words}w-{dim}d-c{chunk}.zarr") for code in codes}
    todo = [code for code in codes if not _usable(urls[code], code, n_words, chunk)]
    if not todo:
        return urls
    t = time.perf_counter()
    source = next((urls[c] for c in codes if c not in todo), None)
    if source is None:
        vec = where / f"words-{n_words}w-{dim}d.vec"
        generate(vec, n_words, dim)
        first = todo.pop(0)
        biasdask.ingest(
            str(vec), urls[first], language=first, client=False, chunk_words=chunk, progress=False, overwrite=True
        )
        vec.unlink()
        source = urls[first]
    for code in todo:
        shutil.rmtree(urls[code], ignore_errors=True)
        link_store(source, urls[code])
        adopt_copy(urls[code], language=code)
    print(
        f"stores: {len(codes)} x {n_words:,} words x {dim} in chunks of {chunk:,} written in "
        f"{time.perf_counter() - t:.1f} s under {where}"
    )
    return urls


# ------------------------------------------------------------------------------------------------
# Durations of the heavy task bodies, measured on this machine.


def _median_time(fn, repeats: int) -> float:
    fn()  # warm: kernels loaded, page cache filled
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure_durations(vectors_store: str, words_store: str, n_words: int, permutations: int, work: Path) -> dict:
    """Seconds of each replaced task body on a free core of this machine, at ``n_words`` words.

    ``vectors_store``: a store of the real dimensions whose chunk 0 is a whole chunk (the scores chunk
    and the attribute rows are read from it); ``words_store``: a store of ``n_words`` words (their scores
    write copies its words). Also ``pool_bytes``, the pickled size of the real pool.
    """
    import pickle

    import dask

    from biasdask.engine.pools import pools_batch, prepare_pools
    from biasdask.engine.scores import attributes_graph, stored_rows, stored_scores
    from biasdask.io import results as rs
    from biasdask.io.fs import Location
    from biasdask.io.store import find_words, open_embeddings, stored_vectors
    from biasdask.stats.weights import zipf_weights
    from biasdask.study.work import ScoresPart, weighted_effect_sizes, write_scores

    out: dict = {}
    emb = open_embeddings(vectors_store)
    stored = stored_vectors(emb["vectors"].data)
    rows_in_chunk = min(stored.chunk, stored.n_words)
    (attributes,) = dask.compute(attributes_graph(emb, A_WORDS, B_WORDS, "cosine"), scheduler="sync")
    axes = attributes[0]
    info = {None: {"array-location": [(0, 1 + len(METHODS)), (0, rows_in_chunk)]}}
    out["scores"] = (
        _median_time(
            lambda: stored_scores(
                stored.location, stored.chunk, "cosine", axes, n=n_words, methods=METHODS, extras=(), block_info=info
            ),
            5,
        )
        * stored.chunk
        / rows_in_chunk
    )
    attribute_rows = np.arange(len(A_WORDS) + len(B_WORDS))
    out["rows"] = _median_time(lambda: stored_rows(stored.location, stored.chunk, attribute_rows, emb.sizes["dim"]), 5)

    rng = np.random.default_rng(0)
    u = rng.normal(0, 0.05, n_words).astype(np.float32)
    t = np.stack([u, (zipf_weights(np.arange(1, n_words + 1), n_words) * u).astype(np.float32)])
    prepare_pools(t[:, :1000], 1000, permutations, "two-sided", 1, effect_x=u[:1000])  # kernels loaded
    out["pool"] = _median_time(
        lambda: (
            prepare_pools(t, n_words, permutations, "two-sided", 1, effect_x=u),
            weighted_effect_sizes(u, t),
        ),
        3,
    )
    pools = prepare_pools(t, n_words, permutations, "two-sided", 1, effect_x=u)
    out["pool_bytes"] = len(pickle.dumps(pools, protocol=5))
    pools_batch(pools, 0, 4)
    start = time.perf_counter()
    pools_batch(pools, 0, 10)
    k = int(min(permutations, max(10, 0.5 / max(1e-9, (time.perf_counter() - start) / 10))))
    out["permutation"] = _median_time(lambda: pools_batch(pools, 0, k), 3) / k

    results = str(work / f"measure-{uuid.uuid4().hex[:8]}.zarr")
    rs.create_results(
        results,
        languages=["en"],
        methods=list(METHODS),
        tests=["gender"],
        attrs={"seed": 0, "alternative": "two-sided", "similarity": "cosine"},
        config_text="benchmark",
    )
    part = ScoresPart(
        methods=METHODS,
        n_words=n_words,
        store=Location(words_store),
        attrs={
            "language": "en",
            "n_words": n_words,
            "n_excluded": 0,
            "n_duplicate_vectors": 0,
            "association": "cosine",
        },
    )
    stacked = np.concatenate([u[None], t]).astype(np.float32)
    found = {
        "n_a": len(A_WORDS),
        "n_b": len(B_WORDS),
        "used_a": A_WORDS,
        "used_b": B_WORDS,
        "tokens_a": A_WORDS,
        "tokens_b": B_WORDS,
        "missing_a": [],
        "missing_b": [],
        "zero_a": [],
        "zero_b": [],
        "n_zero_vectors": 0,
    }
    out["write"] = _median_time(
        lambda: write_scores(Location(results), "en", [("cosine", part)], [1], stacked, found), 2
    )
    asked = [*A_WORDS, *B_WORDS, *(f"absent{i}" for i in range(500))]  # about what a language looks up
    out["find"] = _median_time(lambda: find_words(words_store, asked), 2)
    shutil.rmtree(results, ignore_errors=True)
    return out


def measure_source_durations(dim: int, chunk: int, n_words: int, work: Path) -> dict:
    """Seconds of the parts of a language's ingest task on a free core of this machine: ``read``, one
    block of ``chunk`` lines of ``dim`` values decompressed from a generated ``.vec.gz`` and cut into
    lines (:func:`biasdask.io.formats.iter_blocks`); ``parse``, that block parsed and written as a chunk
    of a store (what the task does with each block); ``finish``, the search for repeated words and
    vectors among ``n_words`` (:meth:`biasdask.engine.ingest._Job.finish`, the store's attrs aside)."""
    import gzip

    from biasdask.engine import ingest as ing
    from biasdask.io import formats
    from biasdask.io.fs import Location
    from biasdask.io.store import prepare_store

    extra = 1000  # a second, short block: the first is a whole one
    vec = work / "source.vec"
    generate(vec, chunk + extra, dim)
    gz = work / "source.vec.gz"
    with open(vec, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g, 2**24)
    ratio = gz.stat().st_size / vec.stat().st_size
    vec.unlink()
    info = formats.sniff_source(str(gz))

    def read_all():
        return [b for b in formats.iter_blocks(info, chunk)]

    out = {"read": _median_time(read_all, 3) * chunk / (chunk + extra)}
    block = read_all()[0]
    store = Location(str(work / "parsed.zarr"))
    prepare_store(
        store,
        language="en",
        source=info.display,
        format=info.format,
        dim=dim,
        chunk_words=chunk,
        n_words=chunk + extra,
        vector_encoding=ing._first_encoding(info),
    )
    out["parse"] = _median_time(lambda: ing._ingest_block(store, info, block.data, 0, block.n, chunk), 3)
    rng = np.random.default_rng(0)
    results = [
        ing.ChunkResult(
            hashes=rng.integers(1, 2**63, min(chunk, n_words - k), dtype=np.uint64),
            n_invalid_utf8=0,
            n_zero_vectors=0,
            n_bytes=0,
            end=0,
            normalised=np.empty(0, dtype=np.int64),
            vector_hashes=rng.integers(1, 2**63, min(chunk, n_words - k), dtype=np.uint64),
        )
        for k in range(0, n_words, chunk)
    ]

    def finish():
        hashes = np.concatenate([r.hashes for r in results])
        drop, _ = ing._duplicates(store, hashes, np.concatenate([r.normalised for r in results]))
        ing._shared_vectors(results, drop)

    out["finish"] = _median_time(finish, 3)
    out["gzip_ratio"] = ratio
    gz.unlink()
    shutil.rmtree(store.url, ignore_errors=True)
    return out


def parse_durations(text: str | None) -> dict:
    """``scores=0.015,rows=0.025,...`` as a dict (seconds; ``pool_bytes`` as bytes)."""
    out: dict = {}
    known = (*KINDS, *SOURCE_KINDS, "pool_bytes")
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in known:
            raise SystemExit(f"--durations: unknown {key!r}; give any of {', '.join(known)}")
        out[key] = float(value)
    return out


# ------------------------------------------------------------------------------------------------
# The cluster: a `dask scheduler` process and `dask worker` processes.


def worker_layout(threads: int, per_process: int | None) -> list[int]:
    """Threads of each worker process: ``threads`` in all, at most ``per_process`` each (None: as many
    processes as this machine has cores), at least two processes (data moves between workers, as on a
    cluster)."""
    per_process = per_process or -(-threads // (os.cpu_count() or 1))
    procs = min(threads, max(2, -(-threads // per_process)))
    return [threads // procs + (i < threads % procs) for i in range(procs)]


@contextlib.contextmanager
def dask_cluster(
    threads: int, per_process: int, work: Path, sleeps: dict | None, preload_scheduler: bool = False, nice: int = 0
):
    """A ``dask scheduler`` process and ``dask worker`` processes of ``threads`` threads in all (with
    ``sleeps``: each preloads this file and sleeps instead of the heavy task bodies; with
    ``preload_scheduler``, the scheduler imports biasdask as it starts, not at the first graph; the
    workers at niceness ``nice``). Yields
    ``{"address", "scheduler_pid", "worker_pids", "layout"}``; stops them (by their ids) at the end."""
    tag = uuid.uuid4().hex[:8]
    logs = work / f"logs-{tag}"
    logs.mkdir()
    scheduler_file = logs / "scheduler.json"
    env = dict(os.environ)
    # the preload is this file, which imports its neighbour machine.py
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    # the task stream must hold every task of a run (the scheduler's buffer is bounded)
    env["DASK_DISTRIBUTED__SCHEDULER__DASHBOARD__TASKS__TASK_STREAM_LENGTH"] = "2000000"
    # the workers' statistical profiler walks every thread's stack every 10 ms: at 128 threads a process
    # it takes a sizeable share of this machine's cores, which a cluster's workers of a few threads do not
    env["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "False"
    procs: list[subprocess.Popen] = []

    def start(cmd, name, extra=None, niceness=0):
        if niceness:
            cmd = ["nice", "-n", str(niceness), *cmd]  # nice executes the command: same process id
        with open(logs / f"{name}.log", "wb") as log:
            procs.append(
                subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**env, **(extra or {})}, cwd=logs)
            )
        return procs[-1]

    try:
        scheduler = start(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
                *(["--preload", "biasdask.study.run"] if preload_scheduler else []),
            ],
            "scheduler",
        )
        deadline = time.monotonic() + 120
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if scheduler.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the scheduler did not start:\n" + (logs / "scheduler.log").read_text()[-3000:])
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written whole, but give its writer a moment
        address = json.loads(scheduler_file.read_text())["address"]
        layout = worker_layout(threads, per_process)
        extra = {SLEEPS_ENV: json.dumps(sleeps)} if sleeps is not None else None
        workers = []
        for i, n in enumerate(layout):
            cmd = [
                sys.executable,
                "-m",
                "dask",
                "worker",
                address,
                "--nthreads",
                str(n),
                "--memory-limit",
                "0",
                "--no-dashboard",
                "--name",
                f"w{i}",
                "--local-directory",
                str(logs),
            ]
            # biasdask imported as the worker starts, real or simulated alike (the sleeps' preload imports
            # it): a run's first tasks do not pay for it in one and not the other
            cmd += ["--preload", str(Path(__file__).resolve()) if sleeps is not None else "biasdask.study.run"]
            workers.append(start(cmd, f"worker-{i}", extra, nice))
        yield {
            "address": address,
            "scheduler_pid": scheduler.pid,
            "worker_pids": [w.pid for w in workers],
            "layout": layout,
            "logs": str(logs),
        }
    finally:
        for p in reversed(procs):  # workers first, then the scheduler
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(logs, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# The client: biasdask's real run, in a fresh process, measured.


class ClientProfile:
    """CPU seconds of this process's threads in parts of biasdask's run (each part's own, without the
    parts it calls), from wrappers around the functions named in :data:`PARTS`; and when some ended."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.ends: dict[str, list[float]] = defaultdict(list)
        self._local = threading.local()
        self._lock = threading.Lock()

    def wrap(self, owner, name: str, part: str) -> None:
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            stack = self._local.__dict__.setdefault("stack", [])
            stack.append(0.0)
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                inner = stack.pop()
                if stack:
                    stack[-1] += spent
                with self._lock:
                    self.cpu[part] += spent - inner
                    self.calls[part] += 1
                    self.ends[part].append(time.time())

        setattr(owner, name, timed)

    def install(self) -> None:
        from biasdask.io import results as rs
        from biasdask.study import run, stream

        self.wrap(run, "_as_config", "config")
        self.wrap(run, "check_changes", "config")
        self.wrap(run, "_check_language", "check")
        self.wrap(stream, "family_graph", "graph")
        self.wrap(stream.Stream, "start_family", "submit")
        self.wrap(run.CellWriter, "__call__", "cells")
        self.wrap(stream.Stream, "start", "start")
        self.wrap(stream.Stream, "adopt", "adopt")
        self.wrap(stream, "handle", "loop")
        for name in ("create_results", "compact_results", "done_cells", "scores_done", "open_results"):
            self.wrap(rs, name, "results")


#: the parts of the client's CPU time, as printed
PARTS = {
    "config": "read config",
    "check": "open stores",
    "graph": "scores graphs",
    "submit": "submit families",
    "start": "start languages",
    "adopt": "open stores made",
    "loop": "loop",
    "cells": "cell writes",
    "results": "results store",
    "comms": "comm thread",
    "zarr": "zarr threads",
    "other": "other",
}


class Sampler(threading.Thread):
    """This process's peak RSS, sampled every ``interval`` seconds until :meth:`stop`; and the CPU
    seconds of ``other`` (a psutil process) every ten samples, as ``(time, seconds)``."""

    def __init__(self, other, interval: float = 0.01) -> None:
        super().__init__(daemon=True)
        import psutil

        self._process, self._other, self._interval = psutil.Process(), other, interval
        self._stop_event = threading.Event()
        self.peak = self.first = self._process.memory_info().rss
        self.other_cpu: list[tuple[float, float]] = []

    def run(self) -> None:
        i = 0
        while not self._stop_event.wait(self._interval):
            self.peak = max(self.peak, self._process.memory_info().rss)
            if i % 10 == 0:
                self.other_cpu.append((time.time(), _cpu(self._other)))
            i += 1
        self.cpu = time.thread_time()  # the sampler's own CPU, left out of the client's

    def other_cpu_at(self, when: float) -> float:
        """CPU seconds of ``other`` at the last sample before ``when``."""
        return max((c for t, c in self.other_cpu if t <= when), default=math.nan)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


def _cpu(process) -> float:
    """CPU seconds of ``process``; NaN once it is gone (a worker process restarted: its CPU is unknown)."""
    import psutil

    try:
        t = process.cpu_times()
    except psutil.NoSuchProcess:
        return math.nan
    return t.user + t.system


def _threads_cpu() -> dict[int, float]:
    """CPU seconds of each live thread of this process, by native id."""
    import psutil

    return {t.id: t.user_time + t.system_time for t in psutil.Process().threads()}


def _busy_cpu(times) -> float:
    """CPU seconds the machine's cores were not idle (guest time is already counted in user time)."""
    fields = times._asdict()
    return sum(v for k, v in fields.items() if k not in ("idle", "iowait", "guest", "guest_nice"))


def _kind(key) -> str:
    from distributed.utils import key_split

    name = key_split(key)
    return {  # key_split drops leading underscores
        "stored_scores": "scores",
        "stored_rows": "rows",
        "family_pools": "pool",
        "family_batch": "batches",
        "family_cells": "cells",
        "write_scores": "write",
        "find_words": "find",
        "attributes": "attributes",
        "together": "attributes",
        "found_attrs": "attributes",
        "root_metadata": "probe",
        "ingest_source": "ingest",
        "sleepy_parse": "parse",
    }.get(name.lstrip("_"), name)


def client_run(spec: dict) -> dict:
    """In a fresh process: connect to ``spec["address"]``, run the study, measure (see the module)."""
    import resource

    import dask
    import psutil
    from distributed import Client, get_task_stream

    from biasdask.engine.cluster import warm_workers
    from biasdask.study import run

    profile = ClientProfile()
    profile.install()
    client = Client(spec["address"], set_as_default=False)
    try:
        client.wait_for_workers(len(spec["worker_pids"]), timeout=180)
        threads = sum(client.nthreads().values())
        if threads != spec["threads"]:
            raise RuntimeError(f"{threads} worker threads joined, not {spec['threads']}")
        warm_workers(client)  # as biasdask.get_client does: the kernels loaded before the first task
        if spec["simulate"]:
            missing = [w for w, c in client.run(worker_calls).items() if c is None]
            if missing:
                raise RuntimeError(f"workers without the sleeps installed: {missing}")
        loop_thread: dict = {}
        ready = threading.Event()
        client.loop.add_callback(lambda: (loop_thread.setdefault("id", threading.get_native_id()), ready.set()))
        ready.wait(10)
        scheduler = psutil.Process(spec["scheduler_pid"])
        # each `dask worker` is a nanny; its worker process is its child
        workers = [
            q for pid in spec["worker_pids"] for p in [psutil.Process(pid)] for q in (p, *p.children(recursive=True))
        ]
        sampler = Sampler(scheduler)
        with get_task_stream(client) as stream:
            machine0 = psutil.cpu_times()
            scheduler0, workers0 = _cpu(scheduler), sum(_cpu(w) for w in workers)
            threads0 = _threads_cpu()
            sampler.start()
            usage0 = resource.getrusage(resource.RUSAGE_SELF)
            called = time.time()
            start = time.perf_counter()
            with dask.config.set(spec["config"]):
                cube = run.run(spec["study"], client=client, progress=spec.get("progress", False))
            wall = time.perf_counter() - start
            usage1 = resource.getrusage(resource.RUSAGE_SELF)
            threads1 = _threads_cpu()
            scheduler1, workers1 = _cpu(scheduler), sum(_cpu(w) for w in workers)
            machine1 = psutil.cpu_times()
            sampler.stop()
        calls = client.run(worker_calls) if spec["simulate"] else {}
    finally:
        client.close()
    expected = len(spec["study"]["languages"]) * len(METHODS)
    finite = int(np.isfinite(cube["p_value"].values).sum())
    if finite != expected:
        raise RuntimeError(f"{finite} cells with a p-value, not {expected}")

    by_kind: dict = defaultdict(lambda: {"tasks": 0, "seconds": 0.0})
    first = math.inf
    for task in stream.data:
        for ss in task.get("startstops", ()):
            if ss.get("action") != "compute":
                continue
            kind = _kind(task["key"])
            by_kind[kind]["tasks"] += 1
            by_kind[kind]["seconds"] += ss["stop"] - ss["start"]
            if kind != "probe":
                first = min(first, ss["start"])
    computed = sum(v["seconds"] for v in by_kind.values())
    n_tasks = sum(v["tasks"] for v in by_kind.values())
    cpu = usage1.ru_utime + usage1.ru_stime - usage0.ru_utime - usage0.ru_stime - sampler.cpu
    parts = {part: profile.cpu.get(part, 0.0) for part in PARTS if part not in ("comms", "zarr", "other")}
    spent = {i: c - threads0.get(i, 0.0) for i, c in threads1.items()}
    parts["comms"] = spent.get(loop_thread.get("id", -1), 0.0)
    parts["zarr"] = sum(
        spent.get(t.native_id, 0.0)
        for t in threading.enumerate()
        if (t.name == "zarr_io" or t.name.startswith("asyncio_")) and t.native_id != loop_thread.get("id")
    )
    parts["other"] = max(0.0, cpu - sum(parts.values()))
    machine_used = _busy_cpu(machine1) - _busy_cpu(machine0)
    # a task's thread seceded from its pool (waiting for the tasks it handed out) holds no slot: not busy
    seceded = sum((c or {}).get("seceded", 0.0) for c in calls.values())
    slept: dict = defaultdict(lambda: {"calls": 0, "seconds": 0.0})
    for c in calls.values():
        for kind, n in (c or {}).get("calls", {}).items():
            slept[kind]["calls"] += n
            slept[kind]["seconds"] += c["slept"][kind]
    return {
        "threads": spec["threads"],
        "processes": len(spec["worker_pids"]),
        "simulated": spec["simulate"],
        "wall_s": wall,
        "busy": (computed - seceded) / (wall * spec["threads"]),
        "seceded_s": seceded,
        "busy_slept": sum(v["seconds"] for v in slept.values()) / (wall * spec["threads"]),
        "tasks": n_tasks,
        "mean_task_ms": 1e3 * computed / max(1, n_tasks),
        "client_cpu_s": cpu,
        "client_peak_mib": sampler.peak / 2**20,
        "client_start_mib": sampler.first / 2**20,
        "scheduler_cpu_s": scheduler1 - scheduler0,
        "workers_cpu_s": workers1 - workers0,
        "machine_busy": machine_used / (wall * (psutil.cpu_count() or 1)),
        "first_task_s": first - called,
        "scheduler_cpu_before_first_task_s": sampler.other_cpu_at(first) - scheduler0,
        "last_store_opened_s": max(profile.ends["check"], default=math.nan) - called,
        "last_language_started_s": max(profile.ends["start"], default=math.nan) - called,
        "last_store_made_s": max(profile.ends["adopt"], default=math.nan) - called,
        "client_cpu_parts_s": parts,
        "tasks_by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "sleeps_by_kind": {k: dict(v) for k, v in sorted(slept.items())},
        "task_stream_complete": len(stream.data) < 2_000_000,
    }


def run_client(
    cluster: dict, threads: int, study: dict, simulate: bool, work: Path, timeout: float, config: dict | None = None
) -> dict:
    """:func:`client_run` in a fresh Python process (its CPU and memory are the client's alone), with the
    Dask ``config`` set there."""
    spec = {
        **cluster,
        "threads": threads,
        "study": study,
        "simulate": simulate,
        "config": config or {},
        "progress": "sources" in study,  # the run's display: the bytes the ingest tasks fetch come as events
    }
    path = work / f"client-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(spec))
    try:
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--client", str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        path.unlink(missing_ok=True)
    if out.returncode:
        raise RuntimeError(f"the client process failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


#: where a simulated study's sources are (fastText's naming, on a port nothing answers: never fetched)
SOURCES = "http://127.0.0.1:9/fasttext/vectors-crawl/cc.{language}.300.vec.gz"


def study_for(stores: dict[str, str], output: str, permutations: int, made_in: str | None = None) -> dict:
    """The simulated study on ``stores``; with ``made_in``, a study whose stores are made there from
    its sources (:data:`SOURCES`) by the run."""
    if made_in is not None:
        where = {"embeddings": f"{made_in}/{{language}}.zarr", "sources": SOURCES}
        languages = {code: {"a": A_WORDS, "b": B_WORDS} for code in stores}
    else:
        where = {}
        languages = {code: {"store": url, "a": A_WORDS, "b": B_WORDS} for code, url in stores.items()}
    return {
        "output": output,
        **where,
        "languages": languages,
        "methods": list(METHODS),
        "tests": ["gender"],
        "n_permutations": permutations,
        "seed": 0,
        "placebo": False,  # as the 26-language rerun (benchmarks/study.py measures it with --placebo 0 too)
    }


def measured_run(
    threads: int, stores: dict, sleeps: dict | None, args, work: Path, nice: int = 0, dim: int | None = None
) -> dict:
    """One run of the study at ``threads`` worker threads (simulated with ``sleeps``, else real; the
    workers at niceness ``nice``) on ``stores`` of ``dim`` dimensions (default ``--dim``)."""
    import dask
    from dask.utils import parse_bytes

    tag = uuid.uuid4().hex[:8]
    output = str(work / f"results-{tag}.zarr")
    made_in = str(work / f"made-{tag}") if sleeps is not None and "sources" in sleeps else None
    try:
        # word-only stores have few dimensions: a scores task spans as many of their chunks as of the
        # simulated embeddings' (biasdask.scores-task-bytes scaled down with the dimensions)
        config = {}
        dim = args.dim if dim is None else dim
        if sleeps is not None and dim != args.model_dim:
            task_bytes = parse_bytes(dask.config.get("biasdask.scores-task-bytes"))
            config["biasdask.scores-task-bytes"] = max(1, task_bytes * dim // args.model_dim)
        with dask_cluster(threads, args.threads_per_process, work, sleeps, not args.cold_scheduler, nice) as cluster:
            return run_client(
                cluster,
                threads,
                study_for(stores, output, args.permutations, made_in),
                sleeps is not None,
                work,
                args.timeout,
                config,
            )
    finally:
        shutil.rmtree(output, ignore_errors=True)
        if made_in is not None:
            shutil.rmtree(made_in, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# Report.

HEADER = (
    f"{'threads':>7} {'procs':>5} {'wall s':>7} {'busy':>6} {'tasks':>6} {'task ms':>8} {'client CPU s':>12} "
    f"{'peak MiB':>9} {'sched CPU s':>11} {'(to 1st task)':>13} {'workers CPU s':>13} {'machine':>7} {'1st task s':>10} "
    f"{'last open s':>11} {'last start s':>12}"
)


def row_line(r: dict) -> str:
    return (
        f"{r['threads']:7d} {r['processes']:5d} {r['wall_s']:7.2f} {100 * r['busy']:5.1f}% {r['tasks']:6d} "
        f"{r['mean_task_ms']:8.1f} {r['client_cpu_s']:12.2f} {r['client_peak_mib']:9.0f} "
        f"{r['scheduler_cpu_s']:11.2f} {r['scheduler_cpu_before_first_task_s']:13.2f} {r['workers_cpu_s']:13.2f} {100 * r['machine_busy']:6.0f}% "
        f"{r['first_task_s']:10.2f} {r['last_store_opened_s']:11.2f} {r['last_language_started_s']:12.2f}"
    )


def detail_lines(r: dict) -> list[str]:
    parts = ", ".join(f"{PARTS[k]} {v:.2f}" for k, v in r["client_cpu_parts_s"].items())
    kinds = ", ".join(
        f"{k} {v['tasks']} x {1e3 * v['seconds'] / max(1, v['tasks']):.1f} ms" for k, v in r["tasks_by_kind"].items()
    )
    slept = f" (busy sleeping: {100 * r['busy_slept']:.1f} %)" if r.get("simulated") else ""
    lines = [
        f"  N={r['threads']}: client CPU s by part: {parts} (RSS {r['client_start_mib']:.0f} MiB as run started)",
        f"  N={r['threads']}: tasks: {kinds}{slept}",
    ]
    if r.get("sources"):
        lines.append(
            f"  N={r['threads']}: serial chain: first task {r['first_task_s']:.2f} s, last store made "
            f"{r['last_store_made_s']:.2f} s, last language started {r['last_language_started_s']:.2f} s, "
            f"run done {r['wall_s']:.2f} s (sources fetched at {r['sources']['bandwidth_mb_s']:g} MB/s per task)"
        )
    if not r.get("task_stream_complete", True):
        lines.append("  (the scheduler's task stream overflowed: busy is a lower bound)")
    return lines


def sources_line(durations: dict, args) -> str:
    """What a language's ingest task does and takes (``durations["sources"]``: :func:`ingest_schedule`),
    parsing every block itself and with every block parsed beside it."""
    src = durations["sources"]
    blocks = src["blocks"]
    alone, helped = (
        ingest_schedule(blocks, src["bytes"], src["bandwidth"], durations["read"], parse)[-1][0] + durations["finish"]
        for parse in (durations["parse"], 0.0)
    )
    work = blocks * (durations["read"] + durations["parse"]) + durations["finish"]
    ratio = durations.get("gzip_ratio")
    text = f" (about {src['bytes'] / ratio / 1e9:.1f} GB of text at the generated file's gzip ratio)" if ratio else ""
    return (
        f"sources: {args.languages} x {args.source_mb:,.0f} MB .vec.gz{text}, fetched at {args.bandwidth:g} MB/s per ingest task (download "
        f"{src['bytes'] / src['bandwidth']:.1f} s); {blocks} blocks of read {durations['read']:.3f} s + parse and "
        f"write {durations['parse']:.3f} s{'*' if 'read' in parse_durations(args.durations) else ''}, "
        f"finish {durations['finish']:.2f} s: a language's ingest task takes {alone:.1f} s parsing every block "
        f"itself, {helped:.1f} s with every block parsed beside it; {args.languages * work:,.0f} task-seconds in all"
    )


def machine() -> str:
    return f"{cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


def print_durations(label: str, durations: dict, given: dict) -> None:
    print(
        f"task durations ({label}; * given): "
        + ", ".join(
            f"{k} {durations[k] * (1e3 if k != 'write' and k != 'pool' else 1):.3g} "
            f"{'ms' if k not in ('write', 'pool') else 's'}{'*' if k in given else ''}"
            for k in KINDS
        )
        + f"; pool {durations.get('pool_bytes', 0) / 2**20:.1f} MiB"
    )


def validate(args, work: Path, store_dir: Path) -> dict:
    """A real small study at N = 2 and the same simulated: the ratio of their wall times."""
    from biasdask.io.store import ingest_chunk_words

    n, dim = args.validate_words, args.model_dim
    chunk = ingest_chunk_words(dim, n)
    stores = make_stores(store_dir, language_codes(args.validate_languages), n, dim, chunk)
    first = next(iter(stores.values()))
    durations = measure_durations(first, first, n, args.permutations, work)
    if not args.pool_ballast:
        durations["pool_bytes"] = 0
    print_durations(f"measured at {n:,} words x {dim}", durations, {})
    real = measured_run(2, stores, None, args, work, dim=dim)
    sim = measured_run(2, stores, durations, args, work, dim=dim)
    print(f"\n== validation: {len(stores)} languages x {n:,} words x {dim}, N = 2 ==")
    print(HEADER)
    for label, r in (("real", real), ("simulated", sim)):
        print(row_line(r) + f"  {label}")
    for label, r in (("real", real), ("simulated", sim)):
        for line in detail_lines(r):
            print(line.replace("  N=2:", f"  {label}:"))
    ratio = sim["wall_s"] / real["wall_s"]
    print(
        f"simulated / real wall time: {ratio:.3f} ({sim['wall_s']:.2f} s / {real['wall_s']:.2f} s); "
        f"busy {100 * sim['busy']:.0f} % / {100 * real['busy']:.0f} %"
    )
    return {"real": real, "simulated": sim, "ratio": ratio}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=200_000, help="words per language (default 200,000)")
    parser.add_argument("--languages", type=int, default=4, help="languages (default 4)")
    parser.add_argument("--dim", type=int, default=4, help="dimensions of the word-only stores (default 4)")
    parser.add_argument(
        "--model-dim",
        type=int,
        default=300,
        help="dimensions of the simulated embeddings: their chunk layout and measured durations (default 300)",
    )
    parser.add_argument("--permutations", type=int, default=10_000, help="permutations per cell (default 10,000)")
    parser.add_argument(
        "--threads", default="2,16,64,256", help="worker threads in all, one run each (default 2,16,64,256)"
    )
    parser.add_argument(
        "--threads-per-process",
        type=int,
        default=None,
        help="most threads of one worker process (default: as many processes as this machine has cores, "
        "whose per-process work a cluster's machines would do each on their own; at least two processes)",
    )
    parser.add_argument(
        "--durations",
        default=None,
        help="task durations in seconds, e.g. scores=0.015,rows=0.025,pool=0.25,permutation=0.0003,"
        "write=0.1 ("
        + "; ".join(f"{k}: {v}" for k, v in KINDS.items())
        + "; pool_bytes=N: the pool's size in bytes); those not given are measured",
    )
    parser.add_argument(
        "--no-pool-ballast",
        dest="pool_ballast",
        action="store_false",
        help="simulated pools carry only their 64 words, not the real pool's bytes",
    )
    parser.add_argument(
        "--nice-workers",
        type=int,
        default=10,
        help="niceness of the simulated workers (default 10): on a few cores their per-task overhead "
        "(which a cluster spreads over its machines) then yields to the client and the scheduler",
    )
    parser.add_argument(
        "--cold-scheduler",
        action="store_true",
        help="the scheduler imports biasdask when the first task's graph arrives, which holds it up (by "
        "default it does as it starts, as biasdask's DaskJob and Gateway configurations make it)",
    )
    parser.add_argument(
        "--sources",
        action="store_true",
        help="the study starts from its sources: the run ingests every language's store (downloaded at "
        "--bandwidth, parsed and written at rates measured here), then runs the study",
    )
    parser.add_argument(
        "--bandwidth",
        type=float,
        default=50.0,
        help="with --sources: MB/s (10^6 bytes) at which each ingest task fetches its source (default 50)",
    )
    parser.add_argument(
        "--source-mb",
        type=float,
        default=1200.0,
        help="with --sources: MB of each language's compressed source (default 1200, a cc.XX.300.vec.gz)",
    )
    parser.add_argument("--stores", default=None, help="keep the generated stores in this directory (and reuse them)")
    parser.add_argument("--json", default=None, help="write the rows as a JSON list of objects to this path")
    parser.add_argument("--validate", action="store_true", help="first compare a real and a simulated run at N = 2")
    parser.add_argument(
        "--validate-words", type=int, default=400_000, help="words per language of the validation (default 400,000)"
    )
    parser.add_argument("--validate-languages", type=int, default=4, help="languages of the validation (default 4)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds one run may take (default 3600)")
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # internal: the client process
    args = parser.parse_args(argv)
    if args.client:
        print(json.dumps(client_run(json.loads(Path(args.client).read_text()))))
        return

    from biasdask.io.store import ingest_chunk_words

    threads = [int(v) for v in args.threads.split(",") if v.strip()]
    if not threads or min(threads) < 1:
        parser.error("--threads: positive integers, e.g. 2,16,64")
    given = parse_durations(args.durations)
    print(f"machine: {machine()}")
    work = Path(tempfile.mkdtemp(prefix="biasdask-scale-"))
    store_dir = Path(args.stores) if args.stores else work / "stores"
    try:
        check = validate(args, work, store_dir) if args.validate else None
        chunk = ingest_chunk_words(args.model_dim, args.words)
        codes = language_codes(args.languages)
        stores = make_stores(store_dir, codes, args.words, args.dim, chunk)
        durations = dict(given)
        if args.sources and any(k not in given for k in SOURCE_KINDS):
            t = time.perf_counter()
            durations = {**measure_source_durations(args.model_dim, chunk, args.words, work), **given}
            print(f"(ingest parts measured in {time.perf_counter() - t:.1f} s)")
        if any(k not in given for k in (*KINDS, "pool_bytes")):
            t = time.perf_counter()
            vectors = make_stores(store_dir, ["en"], chunk, args.model_dim, chunk)["en"]
            measured = measure_durations(vectors, stores[codes[0]], args.words, args.permutations, work)
            durations = {**durations, **measured, **given}
            print(f"(measured in {time.perf_counter() - t:.1f} s on a free core)")
        if not args.pool_ballast:
            durations["pool_bytes"] = 0
        print_durations(f"{args.words:,} words x {args.model_dim}, chunks of {chunk:,}", durations, given)
        per_language = (
            math.ceil(args.words / chunk) * durations["scores"]
            + durations["rows"]
            + durations["find"]
            + durations["pool"]
            + args.permutations * durations["permutation"]
            + durations["write"]
        )
        print(
            f"work: {per_language:.2f} task-seconds per language, {args.languages * per_language:.1f} in all "
            f"({args.languages} languages x {args.words:,} words, {args.permutations:,} permutations)"
        )
        if args.sources:
            blocks = math.ceil(args.words / chunk)
            durations["sources"] = {
                "blocks": blocks,
                "bytes": args.source_mb * 1e6,
                "bandwidth": args.bandwidth * 1e6,
                "stash": stores,
            }
            print(sources_line(durations, args))
        print()
        print(HEADER)
        rows = []
        for n in threads:
            r = measured_run(n, stores, durations, args, work, args.nice_workers)
            r.update(
                sources={"bandwidth_mb_s": args.bandwidth, "source_mb": args.source_mb} if args.sources else None,
                words=args.words,
                languages=args.languages,
                model_dim=args.model_dim,
                permutations=args.permutations,
                durations=durations,
            )
            rows.append(r)
            print(row_line(r), flush=True)
        print()
        for r in rows:
            print("\n".join(detail_lines(r)))
        if any(r["machine_busy"] >= 0.9 for r in rows):
            print(
                "(machine >= 90 %: this machine's cores were saturated, by the simulation's processes (at many "
                "threads mostly the workers' per-task overhead, which a cluster spreads over its machines) or by "
                "others: there the wall time and busy fraction are this machine's; the client's and the "
                "scheduler's CPU seconds are the figures that carry over to a cluster)"
            )
        if check is not None:
            print(f"\nvalidation at N = 2: simulated / real wall time {check['ratio']:.3f}")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
            print(f"rows written to {args.json}")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
