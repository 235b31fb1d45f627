"""A study from its published vectors in one command, against four ``ingest`` commands and then ``run``.

Run ``python benchmarks/sources.py [--words 200000] [--dim 300] [--rounds 3] [--data DIR] [--json PATH]``.
It

1. generates four fastText-like ``cc.XX.300.vec.gz`` files (``en de fr es``; a header line, 4-decimal
   values, a trailing space, each language's catalog attribute words of the ``gender`` test among
   made-up words of its script) into ``--data`` (a cache folder: generated once, reused by later runs;
   default a temporary folder);
2. serves them from an ``http.server`` on 127.0.0.1, in a process of its own (threaded; ``Range``
   requests, ``ETag`` and ``Last-Modified``, bodies sent by ``sendfile``: as a static file server does);
3. measures, alternating over ``--rounds`` (the order swapped every round, so that a change of the
   machine's load hits both alike), each on a fresh ``LocalCluster`` of two single-thread worker
   processes (``biasdask.get_client``, started before the clock):

   A. the way without sources: ``biasdask.ingest(URL, store)`` four times, as a user types ``biasdask
      ingest`` four times (the client reads and decompresses each stream, the workers parse and write),
      then ``biasdask.run`` of the study on those stores;
   B. ``biasdask.run`` of the same study naming its ``sources:`` (a URL template) with no store present:
      the workers fetch, decompress, parse and write the stores as tasks of the run's stream, and each
      language's cells start when its store is made;

   both the ``gender`` test, ``uniform`` and ``zipf``, ``--permutations`` (9,999), per-word scores saved
   (the default), into fresh folders;
4. prints the date, the CPU model, the load average, every round's wall times (A's ingests and its run
   apart), the medians and the ratio B / A of the medians against the target 1.1; checks that every
   round's cubes hold the same statistics, p-values and effect sizes bit for bit (the two ways did the
   same work). ``--json PATH`` writes one object per round and way.

``--stream`` also records each measurement's Dask task stream and prints the tasks' compute time by
kind and the workers' busy fraction (where B's time goes, if it loses).

The machine may be shared: the load average is printed beside every round.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import email.utils
import gzip
import http.server
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np
from machine import cpu_model

CODES = ("en", "de", "fr", "es")
TARGET = 1.1
#: fields of a value: a space, the sign (or nothing), "0.", four digits
FIELD = 8


# -- the sources ------------------------------------------------------------------------------------


def _lines(words: list[str], values: np.ndarray) -> bytes:
    """The lines ``word v1 v2 ... vd \\n`` of ``words`` and ``values`` (ten-thousandths, |v| < 1), formatted
    as byte arrays (no Python loop per number): fixed-width fields whose padding is dropped."""
    n, dim = values.shape
    encoded = [w.encode() for w in words]
    width = max(len(w) for w in encoded)
    prefix = np.array(encoded, dtype=f"S{width}").view(np.uint8).reshape(n, width)  # NUL-padded
    fields = np.zeros((n, dim, FIELD), dtype=np.uint8)
    fields[:, :, 0] = ord(" ")
    fields[:, :, 1] = np.where(values < 0, ord("-"), 0)
    fields[:, :, 2] = ord("0")
    fields[:, :, 3] = ord(".")
    magnitude = np.abs(values)
    for k, power in enumerate((1000, 100, 10, 1)):
        fields[:, :, 4 + k] = ord("0") + (magnitude // power) % 10
    end = np.frombuffer(b" \n", dtype=np.uint8)[None, :].repeat(n, axis=0)
    table = np.concatenate([prefix, fields.reshape(n, dim * FIELD), end], axis=1)
    return table[table != 0].tobytes()


def generate(path: Path, code: str, n_words: int, dim: int, seed: int) -> None:
    """Write ``path``, a ``.vec.gz`` of ``n_words`` x ``dim`` of language ``code`` (its catalog's male and
    female words at ranks 41 and 42), written aside and renamed once complete."""
    from biasdask.demo import filler_words
    from biasdask.lexicon import languages

    male, female = languages().set_index("code").loc[code, ["male", "female"]]
    words = filler_words(male, female, n_words)
    words[40], words[41] = male, female
    rng = np.random.default_rng(seed)
    part = path.with_name(path.name + ".part")
    with gzip.GzipFile(part, "wb", compresslevel=6, mtime=0) as f:
        f.write(f"{n_words} {dim}\n".encode())
        for start in range(0, n_words, 10_000):
            stop = min(n_words, start + 10_000)
            values = np.clip(np.rint(rng.normal(0, 1000, (stop - start, dim))), -9999, 9999).astype(np.int64)
            f.write(_lines(words[start:stop], values))
    part.rename(path)


def sources(folder: Path, n_words: int, dim: int) -> dict[str, Path]:
    """The four sources in ``folder`` (generated there, in parallel, if they are not yet)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {code: folder / f"cc.{code}.300.vec.gz" for code in CODES}
    missing = [code for code, path in paths.items() if not path.exists()]
    if missing:
        t = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            jobs = [pool.submit(generate, paths[c], c, n_words, dim, CODES.index(c)) for c in missing]
            for job in jobs:
                job.result()
        print(f"generated {', '.join(paths[c].name for c in missing)} in {time.perf_counter() - t:.0f} s")
    return paths


# -- the server ------------------------------------------------------------------------------------


class _Files(http.server.BaseHTTPRequestHandler):
    """Serves the files of ``server.root``: HEAD and GET, ``Range: bytes=a-[b]``, an ETag from the size
    and modification time and Last-Modified (as nginx does), the body sent by ``sendfile``."""

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by http.server
        pass

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        path = self.server.root / name  # type: ignore[attr-defined]
        if "/" in name or not path.is_file():
            self.send_error(404)
            return
        st = path.stat()
        start, end, status = 0, st.st_size, 200
        asked = self.headers.get("Range")
        if asked:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", asked.strip())
            if m is None or int(m[1]) >= st.st_size:
                self.send_error(416)
                return
            start, end, status = int(m[1]), min(st.st_size, int(m[2]) + 1 if m[2] else st.st_size), 206
        self.send_response(status)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", f'"{st.st_mtime_ns:x}-{st.st_size:x}"')
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{st.st_size}")
        self.end_headers()
        if body:
            try:
                with open(path, "rb") as f:
                    self.connection.sendfile(f, start, end - start)
            except OSError:  # the reader went away
                pass


def serve(root: Path) -> None:
    """Serve ``root`` on 127.0.0.1 (a free port, printed on stdout) until killed."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    server.root = root  # type: ignore[attr-defined]
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def start_server(root: Path) -> tuple[subprocess.Popen, str]:
    """This script serving ``root`` in a process of its own; its base URL."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


# -- the two ways ----------------------------------------------------------------------------------


def study_keys(args: argparse.Namespace, output: Path) -> dict:
    return {
        "output": str(output),
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": args.permutations,
        "seed": 0,
    }


def by_ingest(client, base: str, work: Path, args: argparse.Namespace) -> tuple[dict, object]:
    """A: four ``biasdask.ingest`` from the URLs, then ``biasdask.run`` on the stores."""
    import biasdask

    times = {}
    stores = {}
    t0 = time.perf_counter()
    for code in CODES:
        stores[code] = str(work / "emb" / f"{code}.zarr")
        t = time.perf_counter()
        biasdask.ingest(f"{base}/cc.{code}.300.vec.gz", stores[code], language=code, client=client, progress=False)
        times[f"ingest_{code}_s"] = time.perf_counter() - t
    times["ingest_s"] = time.perf_counter() - t0
    study = {**study_keys(args, work / "results.zarr"), "languages": {c: {"store": s} for c, s in stores.items()}}
    t = time.perf_counter()
    cube = biasdask.run(study, client=client, progress=False)
    times["run_s"] = time.perf_counter() - t
    times["wall_s"] = time.perf_counter() - t0
    return times, cube


def by_sources(client, base: str, work: Path, args: argparse.Namespace) -> tuple[dict, object]:
    """B: one ``biasdask.run`` of the study naming its sources, no store present."""
    import biasdask

    study = {
        **study_keys(args, work / "results.zarr"),
        "embeddings": str(work / "emb" / "{language}.zarr"),
        "sources": base + "/cc.{language}.300.vec.gz",
        "languages": list(CODES),
    }
    t = time.perf_counter()
    cube = biasdask.run(study, client=client, progress=False)
    return {"wall_s": time.perf_counter() - t}, cube


def task_kinds(stream: list[dict], wall: float, threads: int) -> str:
    """The tasks' compute seconds by key prefix, and the busy fraction over ``wall``: the time each of the
    ``threads`` single-thread workers runs a task. A task that waits for the blocks it handed out (out
    of its worker's pool, its thread free for them) counts once with the tasks that run meanwhile."""
    kinds: dict[str, float] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for task in stream:
        for ss in task.get("startstops", ()):
            if ss.get("action") == "compute":
                prefix = re.sub(r"[-_]?[0-9a-f]{8,}.*$", "", str(task["key"]).strip("('\""))
                kinds[prefix] = kinds.get(prefix, 0.0) + ss["stop"] - ss["start"]
                spans.setdefault(task["worker"], []).append((ss["start"], ss["stop"]))
    running = 0.0
    for intervals in spans.values():
        end = -math.inf
        for start, stop in sorted(intervals):
            running += max(0.0, stop - max(start, end))
            end = max(end, stop)
    shown = ", ".join(f"{k} {v:.1f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:8])
    return f"busy {running / (wall * threads):.0%}; task seconds: {shown}"


def measure(way: str, base: str, work: Path, args: argparse.Namespace) -> tuple[dict, object]:
    """One measurement of ``way`` ("A" or "B") on a fresh two-worker cluster (started before the clock)."""
    from distributed import get_task_stream

    import biasdask

    client = biasdask.get_client(n_workers=2, threads_per_worker=1)
    try:
        fn = by_ingest if way == "A" else by_sources
        if args.stream:
            with get_task_stream(client) as ts:
                times, cube = fn(client, base, work, args)
            times["stream"] = task_kinds(ts.data, times["wall_s"], 2)
        else:
            times, cube = fn(client, base, work, args)
        cube = cube[["statistic", "p_value", "effect_size"]].load()
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    return times, cube


def same_cubes(a, b) -> None:
    for name in ("statistic", "p_value", "effect_size"):
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=200_000, help="words of each source (default 200000)")
    parser.add_argument("--dim", type=int, default=300, help="dimension (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each measuring both ways (default 3)")
    parser.add_argument("--permutations", type=int, default=9999, help="permutations (default 9999)")
    parser.add_argument("--data", help="cache folder of the generated sources (default: a temporary one)")
    parser.add_argument("--dir", help="where the stores and results go (default: a temporary folder)")
    parser.add_argument("--json", help="write the rounds' rows to this JSON file")
    parser.add_argument("--stream", action="store_true", help="record the task streams: compute time by kind")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(Path(args.serve))
        return

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        data = Path(args.data) / f"{args.words}x{args.dim}" if args.data else tmp / "sources"
        paths = sources(data, args.words, args.dim)
        size = sum(p.stat().st_size for p in paths.values())
        print(
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} · {cpu_model()} · {os.cpu_count()} CPUs · "
            f"load average {load()}\n{len(paths)} sources of {args.words:,} x {args.dim}, {size / 1e6:.0f} MB "
            f"compressed; the gender test, uniform and zipf, {args.permutations:,} permutations; 2 workers x 1 thread"
        )
        server, base = start_server(data)
        rows: list[dict] = []
        first = None
        try:
            for r in range(args.rounds):
                for way in ("A", "B") if r % 2 == 0 else ("B", "A"):
                    work = tmp / f"round{r}-{way}"
                    times, cube = measure(way, base, work, args)
                    shutil.rmtree(work)
                    if first is None:
                        first = cube
                    same_cubes(first, cube)
                    rows.append({"round": r, "way": way, **times, "load": os.getloadavg()[0]})
                    detail = (
                        f" (ingests {times['ingest_s']:.1f} s: "
                        + " ".join(f"{times[f'ingest_{c}_s']:.1f}" for c in CODES)
                        + f"; run {times['run_s']:.1f} s)"
                        if way == "A"
                        else ""
                    )
                    print(f"round {r} {way}: {times['wall_s']:.1f} s{detail}; load average {load()}")
                    if "stream" in times:
                        print(f"    {times['stream']}")
        finally:
            server.kill()
            server.wait()
    a = statistics.median(row["wall_s"] for row in rows if row["way"] == "A")
    b = statistics.median(row["wall_s"] for row in rows if row["way"] == "B")
    print(
        f"median A (4 x ingest, then run) {a:.1f} s; median B (run with sources) {b:.1f} s; "
        f"B / A = {b / a:.2f} (target <= {TARGET}: {'met' if b / a <= TARGET else 'NOT met'}); "
        "cubes bit-identical in every round"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
