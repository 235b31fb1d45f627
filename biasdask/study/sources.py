"""A study's sources: which languages' stores its run ingests, decided before anything runs.

A language with a source (the study keys ``sources``, ``ingest``, or a language's ``source``) has its
store made by a task of the run's stream (:func:`biasdask.engine.sources.ingest_source`) when the store
is missing or incomplete. A complete store is compared with its source as the source is now, without
reading the source's bytes (a HEAD request, or the file system's ``info``): the store records its
source (URL, size, ETag, Last-Modified, content hash) and how it was ingested, and a store made from
this source unchanged, with the study's ``ingest`` settings, is used as it is. A changed source (or
another URL, other settings) is named and refused before anything is written, unless ``update``: then
its store is ingested again and its language's cells are recomputed. A source that cannot be asked
(unreachable now) leaves its complete store in use, with a warning.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import dask.config
from dask.utils import parse_bytes
from tqdm import tqdm

from biasdask._dask_config import count
from biasdask.engine.scores import as_terms, nfc
from biasdask.engine.sources import FetchedEvents, SourceJob, stored_source_change
from biasdask.errors import BiasdaskError, StoreConflictError
from biasdask.io.fs import NETWORK_ERRORS, Location, display_url, one_line, source_details
from biasdask.io.store import check_replaceable, read_group_attrs
from biasdask.study.config import LanguageSpec, StudyConfig

__all__ = ["RunProgress", "SourcePlan", "SourceRun", "check_sources", "source_job"]

log = logging.getLogger("biasdask.study.run")


@dataclass(frozen=True)
class SourcePlan:
    """What a run does with the study's sources (:func:`check_sources`).

    Attributes
    ----------
    jobs
        Language -> the task that makes its store (in the study's order).
    changed
        The languages among them whose store is made again (their source changed, ``update``): their
        cells are recomputed.
    """

    jobs: dict[str, SourceJob] = field(default_factory=dict)
    changed: frozenset[str] = frozenset()


class RunProgress:
    """The one display of a study run: a bar of its cells done, and beside it, when the run makes stores
    from sources, the bytes fetched and the stores made so far. Thread-safe (the bytes are reported
    by tasks, or by a ``distributed`` client's event handler)."""

    def __init__(self, bar: tqdm | None = None, n_sources: int = 0) -> None:
        self.bar, self.n_sources = bar, n_sources
        self.fetched_bytes = 0
        self.made = 0
        self._lock = threading.Lock()
        self._shown = 0.0

    def cell(self) -> None:
        """A cell is written."""
        if self.bar is not None:
            self.bar.update()

    def fetched(self, n: int) -> None:
        """``n`` more bytes fetched from a source."""
        with self._lock:
            self.fetched_bytes += int(n)
            self._show(force=False)

    def ingested(self) -> None:
        """A store is made from its source."""
        with self._lock:
            self.made += 1
            self._show(force=True)

    def _show(self, force: bool) -> None:
        if self.bar is None or not self.n_sources or (not force and time.monotonic() - self._shown < 0.2):
            return
        self._shown = time.monotonic()
        fetched = tqdm.format_sizeof(self.fetched_bytes, "B", 1000)
        self.bar.set_postfix_str(f"fetched {fetched}, stores made {self.made}/{self.n_sources}")


@dataclass
class SourceRun:
    """What a run's stream needs of the study's sources: the plan (:func:`check_sources`), what the
    ingest tasks call with the bytes they fetch (picklable for workers: :class:`FetchedEvents`), the
    values the cells of each language record of its store (:func:`~biasdask.study.cells.store_values`;
    a store made adds its own) and the display."""

    plan: SourcePlan = field(default_factory=SourcePlan)
    report: Callable[[int], None] | FetchedEvents | None = None
    recorded: dict[str, dict] = field(default_factory=dict)
    progress: RunProgress = field(default_factory=RunProgress)


def source_job(cfg: StudyConfig, lang: LanguageSpec, options: Mapping, run: str | None = None) -> SourceJob:
    """The ingest task of ``lang``'s source (it must have one), with the study's settings, for the run
    ``run``."""
    assert lang.source is not None and isinstance(lang.store, (str, os.PathLike))
    words = tuple(tuple(nfc([t for term in as_terms(side) for t in term.tokens])) for side in (lang.a, lang.b))
    ingest = cfg.ingest
    return SourceJob(
        lang.code,
        Location(lang.source, dict(options)),
        Location(os.fspath(lang.store), dict(options)).absolute(),
        input_format=ingest.input_format,
        max_words=ingest.max_words,
        chunk_words=ingest.chunk_words,
        dim=ingest.dim,
        words=(words[0], words[1]),
        part_bytes=int(parse_bytes(dask.config.get("biasdask.sources.part-size"))),
        run=run,
        beside=count("biasdask.sources.blocks-beside"),
    )


def check_sources(cfg: StudyConfig, options: Mapping, *, update: bool) -> SourcePlan:
    """Decide which languages' stores the run makes from their sources (see the module docstring).

    Raises
    ------
    StoreConflictError
        Without ``update``, a source changed since its store was ingested (or the study names another
        source, or other ``ingest`` settings): one line naming each such language, its source and what
        changed. Or a store's place holds something else than an embedding store of its language.
    BiasdaskError
        A store's place cannot be read.
    """
    langs = [lang for lang in cfg.languages if lang.source is not None]
    if not langs:
        return SourcePlan()
    run = uuid.uuid4().hex
    jobs = {lang.code: source_job(cfg, lang, options, run) for lang in langs}
    with concurrent.futures.ThreadPoolExecutor(min(8, len(langs))) as pool:
        reasons = dict(zip(jobs, pool.map(_why_ingest, jobs.values())))
    todo = {code: job for code, job in jobs.items() if reasons[code] is not None}
    changed = {code: why for code, why in reasons.items() if why not in (None, "missing")}
    if changed and not update:
        named = "; ".join(f"{code} ({jobs[code].shown}): {why}" for code, why in changed.items())
        raise StoreConflictError(
            f"{len(changed)} source(s) differ from what their store was made from: {named}; pass --update to "
            "ingest them again and recompute their languages' cells"
        )
    if todo:
        log.info(
            "ingesting %d language(s) from their sources: %s", len(todo), ", ".join(f"{c} ({reasons[c]})" for c in todo)
        )
    return SourcePlan(todo, frozenset(changed))


def _why_ingest(job: SourceJob) -> str | None:
    """Why ``job``'s store is to be made (``"missing"``, or what changed), None when it is in place."""
    shown = display_url(job.store.url)
    try:
        attrs = read_group_attrs(job.store)
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(f"{shown}: cannot read the store: {one_line(exc)}") from None
    if attrs is None:
        check_replaceable(job.store, language=job.language)  # a folder of something else is refused now
        return "missing"
    check_replaceable(job.store, language=job.language)
    why = stored_source_change(attrs, job, {"url": job.shown})
    if why == "missing" or (why is not None and why.startswith("made from")):
        return why
    try:
        record = source_details(job.source)
    except (*NETWORK_ERRORS, BiasdaskError) as exc:
        log.warning(
            "%s: cannot ask its source %s whether it changed (%s): its store %s is used as it is",
            job.language,
            job.shown,
            one_line(exc),
            shown,
        )
        return None
    return stored_source_change(attrs, job, record)
