"""Ingest an embedding file into an embedding store, in parallel on Dask when it is worth it.

Design
------
The store's chunks hold ``chunk_words`` consecutive words each, and every writer must write whole
chunks, so a task has to know which line numbers its bytes hold. Both parallel paths therefore cut the
input into **blocks of exactly one chunk of lines**; block ``k`` is parsed and written, as chunk ``k``,
by one task (:func:`biasdask.io.store.write_block`). Nothing but small per-chunk summaries comes back.

*Byte ranges* (uncompressed text on a file system with random access: local, s3, gs...). The body is
cut into fixed-size byte blocks (about a quarter of a chunk of text, at least 64 KiB). A first wave of
cheap tasks counts the newlines of each block (``bytes.count`` runs at GB/s), which tells, for every
chunk, the byte block holding its first line and how many lines of that block to skip. Each parse task
then reads its own byte range (at most two blocks more than its lines), skips to its first line, and
parses exactly ``chunk_words`` lines. The data is read about twice, the counting pass costs a few
percent of the parse, and the client holds only the per-block counts. With ``max_words`` the counting
stops once enough lines are seen.

*Stream* (gzip, bz2 or xz, or an http(s) URL, or word2vec binary). A compressed stream can only be read from its
start, so the client reads (and decompresses) it once, piece by piece, cutting it into blocks of exactly
``chunk_words`` lines or binary records (:func:`biasdask.io.formats.iter_blocks`); each block is
scattered to a worker and parsed and written there. At most ``2 x threads`` blocks are in flight, so
the memory held is a few chunks whatever the vocabulary size. The arrays are grown to cover each block
before it is submitted when the header does not give the size up front.

*Sequential* (``client=False``, a ``memory://`` source or destination, which other processes cannot
see, or, when no client is given, an input smaller than :data:`PARALLEL_MIN_BYTES` where starting a
cluster costs more than it saves): the byte-range path run in this process for a local uncompressed
file, the stream path otherwise. Every path writes the same chunks through the same function, so the
stores are identical. A local file's byte ranges are memory maps (:func:`biasdask.io.formats.view_range`):
lines are counted and parsed in the page cache, never copied into Python bytes. A stream read
sequentially by a task on a worker (a study's source: :mod:`biasdask.engine.sources`) hands some of its
blocks to tasks of their own on threads the cluster has free (:func:`biasdask.engine.tasks.hand_out`):
the task decompresses and cuts, the cluster parses and writes beside it.

*Encoding.* The first lines of a text file choose the store's encoding (scaled int16/int32 integers
when the values have at most 4 decimals, float32 otherwise; :mod:`biasdask.io.store`); a block that
does not fit it fails its write with :class:`biasdask.io.codecs.EncodingError`, and the ingest starts
over in the encoding that block needs.

Workers open the destination (and, for byte ranges, the source) themselves: on a remote cluster both
must be URLs the workers can reach (object storage, or a shared file system), not local paths.

Duplicate words (kept first, as gensim does) are found from the 64-bit hashes of the words that tasks
return (8 bytes per word on the client, 16 during a compaction: the one thing that grows with N),
confirmed on the stored strings, and removed by an in-place compaction pass over the chunks from the
first duplicate on (:func:`biasdask.io.store.compact_store`); real vocabularies rarely have any.

The store is written at a fresh location next to the destination while a lock object next to it
keeps other ingests out; once complete it replaces the destination and only then gets its completion
marker. Any failure removes the fresh store and leaves the destination as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import fsspec
import numpy as np
import xarray as xr
from tqdm import tqdm

from biasdask._calls import keyword_api
from biasdask.engine.cluster import active_client, client_scope, workers_keep_freed_memory
from biasdask.engine.tasks import Tasks, hand_out, windowed
from biasdask.errors import BiasdaskError, InputFormatError, StorageFullError
from biasdask.io import formats
from biasdask.io.codecs import EncodingError, VectorEncoding, fitting_encoding
from biasdask.io.formats import SourceInfo
from biasdask.io.fs import Locatable, Location, as_location
from biasdask.io.parse import parse_block, row_hashes
from biasdask.io.store import (
    INGEST_ATTR,
    check_language_code,
    check_replaceable,
    compact_store,
    ingest_chunk_words,
    open_embeddings,
    prepare_store,
    read_words,
    remove_store,
    resize_store,
    set_attrs,
    write_block,
)
from biasdask.io.swap import acquire_lock, fresh_location, remove_leftovers, swap_in
from biasdask.progress import progress_bar

__all__ = [
    "ENCODING_SAMPLE_WORDS",
    "PARALLEL_MIN_BYTES",
    "SHARED_VECTORS_WARNING",
    "ChunkResult",
    "ingest",
    "ingest_settings",
    "plan_ranges",
    "write_store",
]


#: inputs at least this large (as stored) are ingested on a Dask cluster when no client is given
PARALLEL_MIN_BYTES = 256 * 2**20
_MIN_BLOCK_BYTES = 64 * 2**10
_MAX_BLOCK_BYTES = 16 * 2**20
_COUNT_TASK_BYTES = 256 * 2**20
_LOCAL_ONLY_PROTOCOLS = {"memory"}
_STREAM_ONLY_PROTOCOLS = {"http", "https"}


@dataclasses.dataclass
class ChunkResult:
    """What a chunk task reports: word hashes (for duplicates), counts, and where its bytes ended."""

    hashes: np.ndarray
    n_invalid_utf8: int
    n_zero_vectors: int
    n_bytes: int
    end: int
    normalised: np.ndarray  # rows (in the whole body) whose word NFC normalisation changed
    vector_hashes: np.ndarray | None = None  # row_hashes of the chunk's rows (shared vectors)


@keyword_api(
    "ingest(source, output, language=..., input_format=..., max_words=...)",
    renamed={"dest": "output", "format": "input_format"},
)
def ingest(
    source: Locatable,
    output: Locatable,
    *,
    language: str,
    input_format: str = "auto",
    max_words: int | None = None,
    client=None,
    chunk_words: int | None = None,
    progress: bool | None = None,
    overwrite: bool = False,
) -> xr.Dataset:
    """Read an embedding file into an embedding store and open it.

    Parameters
    ----------
    source
        Path, fsspec URL, :class:`~biasdask.Location` (URL and storage options) or fsspec mapper (local, ``http(s)://``, ``s3://``, ``gs://``...) of a fastText/word2vec text
        (``.vec``), GloVe text or word2vec binary file, optionally gzip-, bz2- or xz-compressed. Read as a stream.
    output
        Path, fsspec URL, :class:`~biasdask.Location` or fsspec mapper of the store. An existing biasdask store there (complete or not) is replaced
        once the new one is completely written (at a fresh location next to it, ``<output>.ingest-<id>``,
        then moved); bad input leaves it untouched; anything else there is refused. While the ingest
        runs it holds the lock ``<output>.lock`` (:class:`biasdask.io.swap.StoreLock`, on local disks
        and object stores): a second ingest into the same ``output`` fails at once. Invalid arguments (language code, counts)
        are refused before anything is touched.
    language
        Language code recorded in the store (see :func:`biasdask.io.store.check_language_code`).
    input_format
        ``"auto"``, ``"vec"``, ``"glove"`` or ``"word2vec-binary"``.
    max_words
        Keep only the first ``max_words`` lines (the most frequent words); later lines are not read.
    client
        A ``distributed.Client`` to parse on; ``False`` to parse in this process; None to use the
        current client, if there is one, for inputs of at least :data:`PARALLEL_MIN_BYTES`, and this
        process otherwise (no cluster is started here; ``biasdask ingest`` starts one for large inputs).
    chunk_words
        Words per chunk (default: at most 32 MiB of vectors, in an even number of equal chunks:
        :func:`biasdask.io.store.ingest_chunk_words`).
    progress
        Show a progress bar (bytes) on stderr (default: only when stderr is a terminal).
    overwrite
        Replace a store at ``output`` that holds another language than ``language`` (refused otherwise:
        ingesting ``fr`` over ``en.zarr`` is more often a typo than an intent).

    Returns
    -------
    xarray.Dataset
        ``open_embeddings(output)``.

    Raises
    ------
    InputFormatError
        Bad input, with the file and line (or word) at fault; ``output`` is left as it was.
    StoreConflictError
        Another ingest into ``output`` holds its lock, or ``output`` holds something else than a biasdask
        embedding store, or the store of another language (without ``overwrite``).
    StorageFullError
        The destination's disk is full (or its quota reached); nothing is left behind.
    BiasdaskError
        An invalid language code, an unreachable source or destination.

    Notes
    -----
    Words are NFC-normalised (Unicode's composed form), so that ``"mâle"`` typed either way is one
    word; spellings that normalisation merges are duplicates (the first kept) and counted in the
    attr ``n_nfc_merged`` as well as ``n_duplicates``. A UTF-8 byte-order mark is skipped.

    Examples
    --------
    A fastText-style text file (here written to an in-memory file system) into a store:

    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/ingest/tiny.vec", "w") as f:
    ...     _ = f.write("3 2\\nhe 0.1000 -0.2000\\nshe -0.1500 0.3000\\ndoctor 0.0500 0.0100\\n")
    >>> emb = biasdask.ingest("memory://examples/ingest/tiny.vec", "memory://examples/ingest/en.zarr",
    ...                       language="en", progress=False)
    >>> emb.sizes["word"], emb.attrs["vector_encoding"]
    (3, 'int16')
    >>> emb["vectors"].values[0].tolist()
    [0.10000000149011612, -0.20000000298023224]
    """
    check_language_code(language)
    if max_words is not None and (int(max_words) != max_words or max_words < 1):
        raise BiasdaskError(f"max_words must be a positive integer, not {max_words!r}")
    if chunk_words is not None and (int(chunk_words) != chunk_words or chunk_words < 1):
        raise BiasdaskError(f"chunk_words must be a positive integer, not {chunk_words!r}")
    src, dst = as_location(source, "source"), as_location(output, "output")
    dest = dst.absolute()  # workers may run elsewhere in the file tree
    check_replaceable(dest, language=language, overwrite=overwrite)
    info = formats.sniff_source(src.absolute(), input_format)
    with acquire_lock(dest):
        write_store(
            info,
            dest,
            language=language,
            max_words=max_words,
            chunk_words=chunk_words,
            settings=ingest_settings(input_format, max_words, chunk_words),
            client=client,
            progress=progress,
        )
    return open_embeddings(dest)


def ingest_settings(input_format: str, max_words: int | None, chunk_words: int | None) -> dict[str, Any]:
    """How a store is ingested, as it records it (attr ``ingest``): the format asked for (``auto``: found
    from the content; the format found is attr ``format``), ``max_words`` and ``chunk_words`` as given
    (None: all words, the default chunks)."""
    return {"input_format": input_format, "max_words": max_words, "chunk_words": chunk_words}


def write_store(
    info: SourceInfo,
    dest: Location,
    *,
    language: str,
    max_words: int | None = None,
    chunk_words: int | None = None,
    settings: dict[str, Any] | None = None,
    client=False,
    progress: bool | None = False,
    check: Callable[[np.ndarray], None] | None = None,
    beside: int = 0,
    priority: int = 0,
) -> None:
    """Write the store of the sniffed source ``info`` at ``dest`` (a store of ``language`` there, or
    nothing), holding the lock of ``dest``: at a fresh location beside it, swapped in once complete.

    Called in a task on a worker with ``client=False``, a stream's blocks are read in the task's thread
    and up to ``beside`` of them at a time parsed and written by tasks of their own, at the scheduler's
    ``priority``, on threads the cluster has free (:func:`biasdask.engine.tasks.hand_out`); the others
    in the task's thread. The store is the same.

    ``settings`` (:func:`ingest_settings`) and the compression found are recorded as attr ``ingest``.
    ``check``, given the 64-bit hashes of every word (:func:`biasdask.io.parse.word_hash`) once all are
    written, may raise to refuse the store: it is then removed and ``dest`` left as it was.
    """
    cw = int(chunk_words or ingest_chunk_words(info.dim, _planned_words(info, max_words)))
    mode = _choose_mode(info, dest, client)
    record = {**(settings or {}), "compression": info.compression}
    remove_leftovers(dest)
    encoding = _first_encoding(info)
    while True:
        # the new store is written next to DEST and swapped in once complete: DEST is untouched until then
        fresh = Location(fresh_location(dest.url), dest.storage_options)
        try:
            prepare_store(
                fresh,
                language=language,
                source=info.display,
                format=info.format,
                dim=info.dim,
                chunk_words=cw,
                n_words=_planned_words(info, max_words) or 0,
                vector_encoding=encoding,
                source_info=info.record,
            )
            job = _Job(info, fresh, cw, max_words, progress, shown=str(dest))
            if mode == "sequential" and info.splittable and _protocol(info.url) in ("file", "local"):
                job.run_ranges(None)  # a local file: parsed in place from its memory map
            elif mode == "sequential":
                job.run_sequential(0 if _protocol(dest.url) in _LOCAL_ONLY_PROTOCOLS else beside, priority)
            else:
                with client_scope(client) as c:
                    if mode == "ranges":
                        job.run_ranges(c)
                    else:
                        job.run_stream(c)
            hashes = job.finish({INGEST_ATTR: record})
            if check is not None:
                check(hashes)
            swap_in(fresh.url, dest)
            return
        except EncodingError as exc:  # a later block needs a wider encoding: start over with it
            with contextlib.suppress(Exception):
                remove_store(fresh)
            encoding = exc.needed
        except BaseException as exc:
            with contextlib.suppress(Exception):
                remove_store(fresh)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StorageFullError(
                    f"{dest}: the destination's disk is full ({os.strerror(exc.errno)}); "
                    "nothing was written: free some space (or choose another destination) and ingest again"
                ) from None
            raise


def _protocol(url: str) -> str:
    return fsspec.core.split_protocol(url)[0] or "file"


def _choose_mode(info: SourceInfo, dest: Location, client) -> str:
    if client is False or {_protocol(info.url), _protocol(dest.url)} & _LOCAL_ONLY_PROTOCOLS:
        return "sequential"
    if client is None and (active_client() is None or (info.size is not None and info.size < PARALLEL_MIN_BYTES)):
        return "sequential"
    if info.splittable and _protocol(info.url) not in _STREAM_ONLY_PROTOCOLS:
        return "ranges"
    return "stream"


#: words of the beginning of a text file that choose the store's encoding (:func:`_first_encoding`)
ENCODING_SAMPLE_WORDS = 1000


def _first_encoding(info: SourceInfo) -> VectorEncoding:
    """The narrowest encoding (scaled integers, or float32) that holds the first words of a text file
    losslessly; float32 for word2vec binary. A later block that needs a wider one makes :func:`ingest`
    start over with it (a second read, for the rare file whose precision or range changes deep inside)."""
    if info.format == "word2vec-binary":
        return "float32"
    try:
        block = formats.head_block(info, ENCODING_SAMPLE_WORDS)
        if block is None:
            return "float32"
        vectors = parse_block(block.data, block.n, info, 0).vectors
    except InputFormatError:
        return "float32"  # the ingest itself reports what is wrong, where
    return fitting_encoding(vectors)


def _planned_words(info: SourceInfo, max_words: int | None) -> int | None:
    """Words the store will hold (before duplicates), when the header tells; None for GloVe."""
    if info.n_words is None:
        return None
    return info.n_words if max_words is None else min(info.n_words, max_words)


def _bar(progress: bool | None, total: int | None, desc: str) -> contextlib.AbstractContextManager[tqdm]:
    return progress_bar(progress, total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc)


# --------------------------------------------------------------------------------------------------
# tasks (module-level so that workers can import them)


def _ingest_block(dest: Location, info: SourceInfo, data: bytes, index: int, n: int, chunk_words: int) -> ChunkResult:
    """Parse block ``index`` (``n`` words of raw bytes) and write it as chunk ``index``."""
    return _parse_and_write(dest, info, data, 0, index, n, chunk_words, 0)


def _ingest_range(
    dest: Location,
    info: SourceInfo,
    start: int,
    end: int,
    skip: int,
    index: int,
    n: int,
    chunk_words: int,
) -> ChunkResult:
    """Read bytes ``[start, end)``, skip ``skip`` lines, parse ``n`` lines and write chunk ``index``."""
    data = formats.view_range(info.location, start, end)
    return _parse_and_write(dest, info, data, formats.skip_lines(data, skip), index, n, chunk_words, start)


def _parse_and_write(dest: Location, info, data, offset, index, n, chunk_words, base) -> ChunkResult:
    parsed = parse_block(data, n, info, index * chunk_words, offset)
    write_block(dest, index * chunk_words, parsed.words, parsed.vectors, parsed.norms)
    return ChunkResult(
        hashes=parsed.hashes,
        n_invalid_utf8=parsed.n_invalid_utf8,
        n_zero_vectors=int(np.count_nonzero(parsed.norms == 0)),
        n_bytes=parsed.n_bytes,
        end=base + offset + parsed.n_bytes,
        normalised=parsed.normalised + index * chunk_words,
        vector_hashes=row_hashes(parsed.vectors),
    )


# --------------------------------------------------------------------------------------------------
# planning byte ranges


def plan_ranges(
    block_starts: np.ndarray, block_counts: np.ndarray, data_end: int, n_lines: int, chunk_words: int
) -> list[tuple[int, int, int]]:
    """Byte range and lines to skip of every chunk, from the newline counts of byte blocks.

    Parameters
    ----------
    block_starts
        Start offset of each block; block ``b`` ends where ``b + 1`` starts, the last at ``data_end``.
        The first block starts at the first line.
    block_counts
        Newlines in each block (a prefix of the blocks is enough if it holds ``n_lines`` lines).
    data_end
        End offset of the data.
    n_lines
        Lines to cover.
    chunk_words
        Lines per chunk.

    Returns
    -------
    list of (start, end, skip)
        For chunk ``k``: read ``[start, end)``, skip ``skip`` newlines, then lines ``k * chunk_words``
        onward follow.
    """
    starts = np.asarray(block_starts, dtype=np.int64)
    ends = np.append(starts[1:], data_end)
    before = np.concatenate([[0], np.cumsum(block_counts)])  # newlines before block b
    n_newlines = int(before[-1])
    plan = []
    for s in range(0, n_lines, chunk_words):
        e = min(n_lines, s + chunk_words)
        if s == 0:
            first_block, skip = 0, 0
        else:  # newline s - 1 ends the line before the chunk
            first_block = int(np.searchsorted(before, s - 1, side="right")) - 1
            skip = s - int(before[first_block])
        if e - 1 < n_newlines:
            last_block = int(np.searchsorted(before, e - 1, side="right")) - 1
        else:  # the last line has no newline
            last_block = len(starts) - 1
        plan.append((int(starts[first_block]), int(ends[last_block]), skip))
    return plan


# --------------------------------------------------------------------------------------------------
# running


def _window(tasks: Tasks) -> int:
    """Jobs in flight: two per worker thread of a cluster; one at a time in this process."""
    return 1 if tasks.client is None else 2 * max(1, sum(tasks.client.nthreads().values()))


class _Job:
    """One ingest: feeds blocks to the chosen executor and gathers the chunk summaries."""

    def __init__(self, info: SourceInfo, dest: Location, chunk_words: int, max_words, progress, shown: str = ""):
        self.info = info
        # what a block's parse needs: the source's reader (a download reporting to this run) stays here
        self.block_info = dataclasses.replace(info, opener=None)
        self.dest = dest
        self.shown = shown or str(dest)  # the destination as the user named it (dest may be a fresh store)
        self.chunk_words = chunk_words
        self.max_words = max_words
        self.progress = progress
        self.results: dict[int, ChunkResult] = {}
        self.planned = _planned_words(info, max_words)
        self.rows = self.planned or 0

    # stream -------------------------------------------------------------------------------------

    def _blocks(self, bar: tqdm) -> Iterator[formats.Block]:
        for block in formats.iter_blocks(self.info, self.chunk_words, self.max_words, on_progress=bar.update):
            if block.first + block.n > self.rows:  # no header: grow the arrays to cover the block
                self.rows = block.first + block.n
                resize_store(self.dest, self.rows)
            yield block

    def run_sequential(self, beside: int = 0, priority: int = 0) -> None:
        """Read the blocks in this thread and parse each here, or, in a task on a worker, as a task of its
        own while fewer than ``beside`` are in flight (:func:`biasdask.engine.tasks.hand_out`)."""
        with _bar(self.progress, self.info.size, f"ingest {self.info.format}") as bar:
            jobs = (
                (b.index, _ingest_block, (self.dest, self.block_info, b.data, b.index, b.n, self.chunk_words))
                for b in self._blocks(bar)
            )
            hand_out(jobs, self.results.__setitem__, window=beside, priority=priority)

    def run_stream(self, client) -> None:
        tasks = Tasks(client, 1)

        def jobs(bar: tqdm) -> Iterator[tuple[int, Callable, tuple]]:
            for block in self._blocks(bar):
                data = client.scatter(block.data, hash=False)
                args = (self.dest, self.block_info, data, block.index, block.n, self.chunk_words)
                yield block.index, _ingest_block, args

        try:
            with (
                _bar(self.progress, self.info.size, f"ingest {self.info.format}") as bar,
                workers_keep_freed_memory(client),
            ):
                windowed(tasks, jobs(bar), _window(tasks), self.results.__setitem__)
        finally:
            tasks.close()

    # byte ranges --------------------------------------------------------------------------------

    def run_ranges(self, client) -> None:
        """Count lines then parse chunks by byte ranges, on ``client``, or in this process when None."""
        tasks = Tasks(client, 1)
        try:
            self._run_ranges(tasks)
        finally:
            tasks.close()

    def _run_ranges(self, tasks: Tasks) -> None:
        client = tasks.client
        info = self.info
        assert info.size is not None
        body, end = info.body_offset, info.size
        per_line = (end - body) / info.n_words if info.n_words else 10 * info.dim + 20
        block_bytes = int(min(_MAX_BLOCK_BYTES, max(_MIN_BLOCK_BYTES, per_line * self.chunk_words / 4)))
        starts = np.arange(body, end, block_bytes, dtype=np.int64) if end > body else np.array([body])
        ends = np.append(starts[1:], end)
        per_task = max(1, _COUNT_TASK_BYTES // block_bytes)
        groups = [slice(i, i + per_task) for i in range(0, len(starts), per_task)]
        need = self.planned if info.n_words is not None else self.max_words
        counts: dict[int, np.ndarray] = {}
        seen = 0  # newlines in the contiguous prefix of counted groups
        next_group = 0

        def count_jobs() -> Iterator[tuple[int, Callable, tuple]]:
            for g, group in enumerate(groups):
                if need is not None and seen >= need:
                    return
                yield (
                    g,
                    formats.count_newlines,
                    (info.location, starts[group].tolist(), ends[group].tolist()),
                )

        def counted(g: int, result: np.ndarray) -> None:
            nonlocal seen, next_group
            counts[g] = result
            count_bar.update(int(ends[groups[g]][-1] - starts[groups[g]][0]))
            while next_group in counts:
                seen += int(counts[next_group].sum())
                next_group += 1

        with _bar(self.progress, end - body, "count lines") as count_bar:
            windowed(tasks, count_jobs(), _window(tasks), counted)
        block_counts = np.concatenate([counts[g] for g in range(next_group)])
        n_lines = int(block_counts.sum())
        if next_group == len(groups) and end > body:
            if formats.read_range(info.location, end - 1, end) != b"\n":
                n_lines += 1  # a last line without a newline
        if info.n_words is not None:
            target = self.planned
            if n_lines < target:
                raise InputFormatError(
                    f"{info.display}: the header says {info.n_words} words but the file has only {n_lines} lines after it"
                )
        else:
            target = n_lines if self.max_words is None else min(n_lines, self.max_words)
        self.rows = target
        resize_store(self.dest, target)
        n_counted = len(block_counts)
        plan = plan_ranges(starts[:n_counted], block_counts, int(ends[n_counted - 1]), target, self.chunk_words)

        def parse_jobs() -> Iterator[tuple[int, Callable, tuple]]:
            for k, (start, stop, skip) in enumerate(plan):
                n = min(self.chunk_words, target - k * self.chunk_words)
                yield (
                    k,
                    _ingest_range,
                    (
                        self.dest,
                        info,
                        start,
                        stop,
                        skip,
                        k,
                        n,
                        self.chunk_words,
                    ),
                )

        def parsed(k: int, result: ChunkResult) -> None:
            self.results[k] = result
            bar.update(result.n_bytes)

        with _bar(self.progress, end - body, f"ingest {info.format}") as bar, workers_keep_freed_memory(client):
            windowed(tasks, parse_jobs(), _window(tasks), parsed)
        if target == info.n_words:  # all the header's words were read: nothing else may follow
            formats.check_only_whitespace_after(info, self.results[len(plan) - 1].end)

    # finishing ----------------------------------------------------------------------------------

    def finish(self, attrs: dict[str, Any]) -> np.ndarray:
        """Drop repeated words, count, and record ``attrs`` with the counts; return every word's hash."""
        results = [self.results[k] for k in range(len(self.results))]
        n_rows = sum(len(r.hashes) for r in results)
        normalised = np.concatenate([r.normalised for r in results])
        hashes = np.concatenate([r.hashes for r in results])
        drop, n_nfc_merged = _duplicates(self.dest, hashes, normalised)
        dropped_zeros = compact_store(self.dest, drop) if drop.size else 0
        n_shared = _shared_vectors(results, drop)
        if n_shared > SHARED_VECTORS_WARNING * max(n_rows - int(drop.size), 1):
            n_kept = n_rows - int(drop.size)
            warnings.warn(
                f"{self.shown}: {n_shared} of {n_kept} words ({n_shared / n_kept:.0%}) share a "
                "bit-identical vector with an earlier word (a spaCy-style table?), so their scores are not "
                "independent; consider the study option dedupe_vectors: true",
                stacklevel=2,
            )
        set_attrs(  # everything but the completion marker, which is set after the swap
            self.dest,
            {
                **attrs,
                "n_words": n_rows - int(drop.size),
                "n_duplicates": int(drop.size),
                "n_nfc_merged": n_nfc_merged,
                "n_invalid_utf8": sum(r.n_invalid_utf8 for r in results),
                "n_zero_vectors": sum(r.n_zero_vectors for r in results) - dropped_zeros,
                "n_duplicate_vectors": n_shared,
            },
        )
        return hashes


SHARED_VECTORS_WARNING = 0.10
"""Ingest warns when more than this fraction of the words repeat an earlier word's vector."""


def _shared_vectors(results: list[ChunkResult], drop: np.ndarray) -> int:
    """Nonzero rows (repeated words dropped) whose vector hash occurred in an earlier row."""
    hashes = np.concatenate([r.vector_hashes for r in results])
    hashes = np.delete(hashes, drop)
    hashes = np.sort(hashes[hashes != 0])  # a sort: faster here than numpy's hash-based unique
    return int(np.count_nonzero(hashes[1:] == hashes[:-1]))


def _duplicates(dest: Location, hashes: np.ndarray, normalised: np.ndarray) -> tuple[np.ndarray, int]:
    """Positions of the later occurrences of repeated words (hash candidates confirmed on the strings),
    and how many of them only repeat a word once NFC-normalised (one of the two spellings changed)."""
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if same.size == 0:
        return np.empty(0, dtype=np.int64), 0
    candidates = np.unique(np.concatenate([order[same], order[same + 1]]))
    changed = set(normalised.tolist())
    first: dict[str, int] = {}
    drop = []
    n_nfc = 0
    for position, word in zip(candidates, read_words(dest, candidates), strict=True):
        if word in first:
            drop.append(position)
            n_nfc += (int(position) in changed) != (first[word] in changed)
        else:
            first[word] = int(position)
    return np.asarray(drop, dtype=np.int64), n_nfc
