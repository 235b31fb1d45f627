"""A study's source ingested into its store by one task, on a worker, resumed where a killed one stopped.

:func:`ingest_source` is the task a study submits for a language whose store is missing (or whose source
changed, with ``update``). It runs where it is scheduled: the worker reads the source itself (a remote
cluster fetches from the internet or its object store, never through the client) and writes the store
through :func:`biasdask.engine.ingest.write_store` in the sequential mode of ingest (a local uncompressed
file parsed in place by byte ranges, anything else as one stream), so the store is bit for bit the one
``biasdask ingest`` writes from the same file with the same settings. A stream is decompressed and cut
into blocks in the task's thread, and its blocks parsed and written there or, when the cluster has
threads free, by tasks of their own beside it (``beside`` at a time): a gzip stream cannot be split, its
parsing can.

A remote source's raw bytes are copied beside the store as they are fetched
(:class:`biasdask.io.download.Download`, ``<store>.source/``): a task that starts again after its worker
or the whole run was killed reads that copy and fetches only the rest, and the copy is removed once the
store is complete. The store itself is written aside and swapped in complete (nothing half-made looks
complete), under the lock of its place, which a killed process gives up on a local disk.

Before the store is swapped in, the task checks what the study expects of it: the dimension the study
names (``ingest: {dim: ...}``; checked from the header, before the body is read) and, against another
language's vectors, at least one word of the language's attribute words A and one of B among its
words. Each failure is one line naming the source (credentials removed) and the reason, raised as
:class:`SourceError` (or the reading's own one-line error), and stops only its language.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from distributed import get_worker

from biasdask.engine.ingest import ingest_settings, write_store
from biasdask.errors import InputFormatError, SourceError, on_its_own
from biasdask.io import formats
from biasdask.io.download import DEFAULT_PART_BYTES, Download, staging_location
from biasdask.io.fs import Location, display_url, source_change, source_details
from biasdask.io.parse import word_hash
from biasdask.io.store import (
    COMPLETE_ATTR,
    INGEST_ATTR,
    SOURCE_INFO_ATTR,
    check_replaceable,
    read_group_attrs,
    store_identity,
)
from biasdask.io.swap import acquire_lock

__all__ = ["FetchedEvents", "SourceJob", "ingest_source", "is_remote", "stored_source_change"]

#: protocols read where they are (a local file, or this process's memory): nothing is copied
_IN_PLACE = {"file", "local", "memory"}


@dataclass(frozen=True)
class SourceJob:
    """What a study asks of one language's source (sent to the worker that ingests it).

    Attributes
    ----------
    language
        The language code the store records.
    source, store
        The source file and the store to write (a local path made absolute).
    input_format, max_words, chunk_words
        As :func:`biasdask.ingest` takes them (recorded in the store: :func:`ingest_settings`).
    dim
        The dimension the study expects (None: any).
    words
        The tokens of the attribute words A and of B: a vocabulary holding none of A, or none of B, is
        refused as another language's (empty: not checked).
    part_bytes
        The most bytes fetched before they are copied beside the store.
    run
        The run that asks (a retry of its task takes over the lock its killed attempt left on object
        storage: :func:`biasdask.io.swap.acquire_lock`).
    beside, priority
        The most blocks of a stream the task hands at a time to tasks of their own (parsed and written
        on threads the cluster has free, at the scheduler's ``priority``; the task parses the others):
        :func:`biasdask.engine.ingest.write_store`.
    """

    language: str
    source: Location
    store: Location
    input_format: str = "auto"
    max_words: int | None = None
    chunk_words: int | None = None
    dim: int | None = None
    words: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    part_bytes: int = DEFAULT_PART_BYTES
    run: str | None = None
    beside: int = 0
    priority: int = 0
    settings: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", ingest_settings(self.input_format, self.max_words, self.chunk_words))

    @property
    def shown(self) -> str:
        """The source's URL without credentials."""
        return display_url(self.source.url)


class FetchedEvents:
    """Where an ingest task on a worker reports the bytes it fetches: events of ``topic`` for the client
    that subscribed to it (``distributed``'s ``Worker.log_event`` and ``Client.subscribe_topic``, whose
    handler receives ``(time, bytes)``), at most one every ``interval`` seconds a task: 157 downloads in
    pieces of 1 MiB would otherwise send the scheduler thousands of events a second."""

    def __init__(self, topic: str, interval: float = 0.25) -> None:
        self.topic = topic
        self.interval = interval

    @contextlib.contextmanager
    def in_this_task(self) -> Iterator[Callable[[int], None] | None]:
        """What the running task (and the threads it starts) calls with the bytes, within the block: the
        events of its worker, looked up here, in the task's thread, the bytes not sent yet sent as the
        block ends; None outside a worker."""
        try:
            worker = get_worker()
        except ValueError:
            yield None
            return
        send = functools.partial(worker.log_event, self.topic)
        lock = threading.Lock()
        held = [0, time.monotonic()]  # bytes not sent yet, when the last event was sent

        def fetched(n: int) -> None:
            with lock:
                held[0] += n
                if time.monotonic() - held[1] < self.interval:
                    return
                n, held[0], held[1] = held[0], 0, time.monotonic()
            send(n)

        try:
            yield fetched
        finally:
            if held[0]:
                send(held[0])


def is_remote(source: Location) -> bool:
    """Whether ``source`` is fetched (its bytes copied beside the store as they come), not read in place."""
    return (source.url.split("://", 1)[0] if "://" in source.url else "file") not in _IN_PLACE


def stored_source_change(attrs: dict | None, job: SourceJob, record: dict[str, Any]) -> str | None:
    """Why the complete store whose group attrs are ``attrs`` is not the one ``job`` makes from its source
    as it is now (``record``): another source, a changed one (its record differs), other ingest
    settings; None when it is that store. A store with no completion marker (or none) is "missing"."""
    if attrs is None or attrs.get(COMPLETE_ATTR) is not True:
        return "missing"
    recorded = attrs.get(SOURCE_INFO_ATTR)
    recorded = recorded if isinstance(recorded, dict) else {"url": attrs.get("source")}
    if recorded.get("url") != record.get("url"):
        return f"made from {recorded.get('url')}, not {record.get('url')}"
    change = source_change(recorded, record)
    if change is not None:
        return f"the source changed since its store was ingested ({change})"
    how = attrs.get(INGEST_ATTR)
    if isinstance(how, dict):
        differ = [k for k, v in job.settings.items() if how.get(k) != v]
        if differ:
            shown = ", ".join(f"{k} {how.get(k)!r} -> {job.settings[k]!r}" for k in differ)
            return f"ingested with other settings ({shown})"
    return None


def ingest_source(job: SourceJob, report: Callable[[int], None] | FetchedEvents | None = None) -> dict[str, Any]:
    """Task: make the store of ``job`` from its source, unless the store there is already made from it as
    it is now; return the store's identity (:meth:`biasdask.io.store.StoreIdentity.as_dict`).

    ``report`` is called with the bytes of each piece fetched from the network (or, a
    :class:`FetchedEvents`, they are sent to the client as events).

    Raises
    ------
    SourceError
        Vectors of another dimension than the study's, or of another language (no attribute word of A,
        or of B, among the words).
    InputFormatError, BiasdaskError
        The source is missing (404), unreachable, timed out, ends early, is truncated or malformed:
        one line naming it. Nothing is left looking complete; what was fetched is kept for the next
        try unless the source's contents are at fault.
    StoreConflictError
        The store's place holds something else, or another writer holds its lock.
    """
    dest = job.store.absolute()
    events = report.in_this_task() if isinstance(report, FetchedEvents) else contextlib.nullcontext(report)
    owner = None if job.run is None else f"biasdask run {job.run}"
    with on_its_own(), events as on_bytes, acquire_lock(dest, owner=owner):
        with formats.reading_source(job.shown):
            record = source_details(job.source)
        if stored_source_change(read_group_attrs(dest), job, record) is None:  # made meanwhile (another run)
            return store_identity(dest, language=job.language).as_dict()
        check_replaceable(dest, language=job.language)
        download = None
        if is_remote(job.source):
            download = Download(
                job.source, staging_location(dest), record, part_bytes=job.part_bytes, on_bytes=on_bytes
            )
        try:
            _write(job, dest, record, download)
        except (InputFormatError, SourceError):
            if download is not None:  # the file itself is at fault: nothing to resume
                with contextlib.suppress(Exception):
                    download.remove()
            raise
        if download is not None:
            download.remove()
    return store_identity(dest, language=job.language).as_dict()


def _write(job: SourceJob, dest: Location, record: dict[str, Any], download: Download | None) -> None:
    """Sniff the source (its copy, if any), check its dimension, and write the store."""
    info = formats.sniff_source(
        job.source, job.input_format, record=record, opener=None if download is None else download.open
    )
    if job.dim is not None and info.dim != job.dim:
        raise SourceError(f"{info.display}: vectors of dimension {info.dim}, not the study's {job.dim} (ingest.dim)")
    write_store(
        info,
        dest,
        language=job.language,
        max_words=job.max_words,
        chunk_words=job.chunk_words,
        settings=job.settings,
        check=lambda hashes: _check_words(job, info.display, hashes),
        beside=job.beside,
        priority=job.priority,
    )


def _check_words(job: SourceJob, shown: str, hashes: np.ndarray) -> None:
    """Refuse a vocabulary holding none of the language's attribute words A, or none of B."""
    for side, tokens in zip("AB", job.words):
        wanted = np.array([word_hash(unicodedata.normalize("NFC", t)) for t in tokens], dtype=np.uint64)
        if tokens and not np.isin(wanted, hashes).any():
            raise SourceError(
                f"{shown}: none of the attribute words {side} of language {job.language} "
                f"({', '.join(tokens[:6])}{', ...' if len(tokens) > 6 else ''}) is among its {hashes.size:,} words: "
                "are these another language's vectors?"
            )
