"""A study run: every (language, method, test) cell, on whatever cluster is at hand, into the results cube.

:func:`run` checks everything that can fail before any work (the study, every store, the sources of
the stores it is to make, the output, the cluster), creates the results store (or resumes it: cells
already done are skipped, so a killed run resumes where it stopped; or applies an edited study, :mod:`biasdask.study.update`), runs the study's
stream of tasks (:mod:`biasdask.study.stream`) and, once every cell is written, compacts the cube and
writes its corrected p-values (:mod:`biasdask.study.inference`) and the agreement across its scoring
rules and test families (:mod:`biasdask.study.reliability`). Every cell is a function of the study
seed and its labels (:mod:`biasdask.study.plan`): results do not depend on which cells a run computes
together, on the scheduler or on the number of workers.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import xarray as xr
from distributed import Client
from tqdm import tqdm

from biasdask.engine.cluster import active_client, check_n_workers, client_scope, workers_keep_freed_memory
from biasdask.engine.sources import FetchedEvents
from biasdask.errors import BiasdaskError, ConfigError
from biasdask.io import results as rs
from biasdask.io.embeddings import as_embeddings
from biasdask.io.fs import Location, as_location, display_url, nesting
from biasdask.io.store import embedding_identity, open_vectors
from biasdask.io.swap import acquire_lock
from biasdask.progress import progress_bar, wanted
from biasdask.study.cells import store_values
from biasdask.study.config import EmbeddingStudies, LanguageSpec, StudyChanges, StudyConfig, load_config, parse_config
from biasdask.study.handlers import Cell
from biasdask.study.inference import adjusted_pvalues, correction_warning
from biasdask.study.reliability import agreement, has_agreement
from biasdask.study.sources import RunProgress, SourcePlan, SourceRun, check_sources
from biasdask.study.stream import Stream
from biasdask.study.update import (
    check_changes,
    check_embeddings,
    check_stores,
    prepare_update,
    run_attrs,
    with_changed_languages,
)

__all__ = ["CellWriter", "run"]

log = logging.getLogger(__name__)


def _as_config(
    config: StudyConfig | EmbeddingStudies | dict | str | Path, output: str | None
) -> StudyConfig | EmbeddingStudies:
    if isinstance(config, (StudyConfig, EmbeddingStudies)):
        return config
    if isinstance(config, dict):
        return parse_config(config, output=output)
    return load_config(config, output=output)


def run(
    config: StudyConfig | EmbeddingStudies | dict | str | Path,
    *,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    output: str | None = None,
    overwrite: bool = False,
    update: bool = False,
    progress: bool | None = None,
    start_cluster: bool = False,
) -> xr.Dataset | xr.DataTree:
    """Run a study and return its results cube.

    Parameters
    ----------
    config
        A :class:`~biasdask.study.config.StudyConfig`, a mapping, or the path of a study YAML file. From
        Python, a language's ``store`` may be any embedding :func:`biasdask.as_embeddings` accepts
        (e.g. ``{"languages": {"en": {"store": kv}}}`` with a gensim ``KeyedVectors``). A study of several
        embeddings (``embeddings`` a mapping of names, :class:`~biasdask.study.config.EmbeddingStudies`)
        runs each embedding's study, one after the other on one cluster, into the child group
        ``<output>/<name>``: everything below holds for each (resume, ``update``, ``overwrite``, the
        checks of every store, all made before anything is written); ``update`` also adds the cubes of
        embeddings added to the study and deletes those of embeddings removed from it.
    client, scheduler, n_workers
        _Where to run. By default the ``client`` given, else the current ``distributed`` client, else
        Dask's default scheduler (threads): no cluster is started. With ``scheduler`` or ``n_workers``
        a cluster is found or started in this order (:func:`biasdask.get_client`: scheduler
        address, ``DASK_SCHEDULER_ADDRESS``, Dask Gateway, else a ``LocalCluster`` of ``n_workers``
        processes) and closed at the end; ``biasdask run`` always does this.
    output
        Overrides the study's ``output`` URL.
    overwrite
        Replace a results store that was written by a different study.
    update
        Apply a change of the study to its results store: languages, methods, tests or associations
        added or removed, a language's store or attribute words changed, or the contents of a
        language's store changed since its cells were computed (the store ingested again), or its
        source changed since its store was made (the store is made again: see ``sources`` in
        :mod:`biasdask.study.config` and :mod:`biasdask.study.sources`). The
        affected and new cells are computed; every other cell is kept bit for bit (see
        :mod:`biasdask.study.update`). Without it a changed study is refused, naming the changed keys,
        or the languages whose store changed, before anything is written.
    progress
        Show progress bars (default: only when stderr is a terminal). The dashboard link of a
        cluster is logged at INFO (logger ``biasdask.study.run``).
    start_cluster
        Find or start a cluster as with ``scheduler`` or ``n_workers`` even without them (what
        ``biasdask run`` does), once the stores are checked.

    Returns
    -------
    xarray.Dataset or xarray.DataTree
        The results cube (dims ``language``, ``method``, ``test``), as :func:`open_results` reads it; of a
        study of several embeddings, the tree of their cubes :func:`open_results` reads.

    Raises
    ------
    StoreConflictError
        Another run (or ingest) is writing to ``output``: the run holds the lock ``<output>.lock``
        (:class:`biasdask.io.swap.StoreLock`) for its whole life, and a second one stops at once,
        naming the holder. Or, without ``update``, a language's embedding store changed since its cells
        in ``output`` were computed: every cell records the fingerprint of its language's store
        (``store_fingerprint``), and a resumed study never mixes two embeddings. Or, without ``update``,
        a source changed since its store was made from it (:mod:`biasdask.study.sources`).
    BiasdaskError
        Before the results store is created or changed: an invalid ``n_workers``, an ``output`` that is,
        lies inside or contains an embedding store of the study, a store that is missing, incomplete,
        missing a chunk or of another language, an unreachable cluster. After every
        runnable cell is written, if in some language no attribute word of A (or of B) is in the
        vocabulary: its ``gender`` cells stay NaN with a note naming the words, the message names them
        too; likewise, naming the chunk, if a language's stored bytes fail their checksum when read
        (its words as the language starts, its vectors in its tasks); likewise, naming the source and
        why, if a language's store could not be made from its source (missing, timed out, cut short,
        malformed, of another dimension or language): a warning names it at once, its cells are not
        run and the other languages go on. A missing attribute word (of
        several), a language whose targets have no observed frequency for ``frequency`` (no wordfreq
        list, or none of its words in it), a test not applicable to a language or below ``min_coverage`` are not errors: a warning in the log, and a
        note in the cells.

    Examples
    --------
    A study of one in-memory language, on Dask's threaded scheduler:

    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> cube = biasdask.run({"output": "memory://examples/run/results.zarr", "languages": {"en": {"store": emb}},
    ...                      "methods": ["uniform", "zipf"], "tests": ["gender"], "n_permutations": 99, "seed": 1})
    >>> dict(cube.sizes)
    {'language': 1, 'method': 2, 'test': 1}
    >>> cube["n_permutations"].sel({"language": "en", "test": "gender"}).values.tolist()
    [99, 99]
    """
    cfg = _as_config(config, output)
    options = cfg.resolved_storage_options()
    # Everything that can fail before the work is checked before the results store is created or
    # changed: the config (above), every store (verified, of the right language; before starting a
    # cluster, which takes a while), the cluster.
    check_n_workers(n_workers)
    where = _Where(client, scheduler, n_workers, start_cluster, progress)
    if isinstance(cfg, EmbeddingStudies):
        return _run_embeddings(cfg, options, where, overwrite=overwrite, update=update)
    _check_output_apart(cfg)
    with acquire_lock(Location(cfg.output, options)):  # one writer per results store, for the run's life
        checked = _check(cfg, options, overwrite=overwrite, update=update)
        failures = _write(checked, options, where, overwrite=overwrite)
    if failures:
        raise _NotRun(failures)
    return rs.open_cube(Location(cfg.output, options))


class _NotRun(BiasdaskError):
    """Languages whose cells were not run (one line each: the language and why)."""

    def __init__(self, failures: list[str]) -> None:
        super().__init__(f"{len(failures)} language(s) with cells not run, left empty: " + "; ".join(failures))


@dataclasses.dataclass(frozen=True)
class _Where:
    """Where a run computes (:func:`run`'s ``client``, ``scheduler``, ``n_workers``, ``start_cluster``)
    and whether it shows progress."""

    client: Client | None
    scheduler: str | None
    n_workers: int | None
    start_cluster: bool
    progress: bool | None

    def scope(self) -> contextlib.AbstractContextManager:
        """The client to run on (None: Dask's default scheduler), found or started and closed as :func:`run` says."""
        if self.scheduler or self.n_workers or self.start_cluster:
            return client_scope(self.client, self.scheduler, self.n_workers)
        return contextlib.nullcontext(active_client(self.client))

    def on(self, client: Client | None) -> _Where:
        """Run on ``client`` (found or started by the caller)."""
        return _Where(client, None, None, False, self.progress)


@dataclasses.dataclass(frozen=True)
class _Checked:
    """A study whose results store and embedding stores are checked, nothing written yet."""

    cfg: StudyConfig
    stores: dict  # language -> its embedding
    identities: dict  # language -> its store's identity (None: held in memory)
    changes: StudyChanges | None  # what an update applies; None: a run into cfg.output
    sources: SourcePlan  # the stores to make from their sources


def _check(cfg: StudyConfig, options: dict, *, overwrite: bool, update: bool) -> _Checked:
    """Everything of :func:`run` that reads before it writes: the study against its results store, every
    embedding store opened and compared with the one its cells were computed from."""
    changes = check_changes(cfg, options, overwrite=overwrite, update=update)
    weak = correction_warning(len(cfg.languages), cfg.n_permutations, correction=cfg.correction, alpha=cfg.alpha)
    if weak:
        log.warning("%s", weak)
    # the stores to make from their sources (missing, or their source changed: refused without update),
    # asked of the sources without reading them
    sources = check_sources(cfg, options, update=update)
    # The other stores are checked and opened first, without their words (metadata and listings:
    # milliseconds each), in parallel threads, before anything is written; each language starts once a
    # task has found its words, and a word chunk failing its checksum there fails that language only.
    present = [lang for lang in cfg.languages if lang.code not in sources.jobs]
    with concurrent.futures.ThreadPoolExecutor(max(1, min(8, len(present)))) as pool:
        embeddings = list(pool.map(lambda lang: _check_language(lang, options), present))
    stores = {lang.code: emb for lang, emb in zip(present, embeddings)}
    # a resumed study never mixes two embeddings: a store changed since its cells were computed is
    # refused, or with update its cells are recomputed (so are those of a store made again from its
    # changed source)
    identities = {code: embedding_identity(emb) for code, emb in stores.items()}
    changes = check_stores(cfg, options, identities, changes, overwrite=overwrite, update=update)
    if sources.changed and not overwrite and rs.stored_config(Location(cfg.output, options)) is not None:
        changes = with_changed_languages(changes, sorted(sources.changed), "source")
    return _Checked(cfg, stores, identities, changes, sources)


def _write(checked: _Checked, options: dict, where: _Where, *, overwrite: bool) -> list[str]:
    """Run a checked study into its results store (holding its lock); return the languages' failures."""
    cfg, identities = checked.cfg, checked.identities
    final, fresh = cfg.output, None
    if checked.changes is not None:
        fresh = prepare_update(cfg, options, checked.changes, identities)
        cfg = dataclasses.replace(cfg, output=fresh)
    recorded = {code: store_values(identity) for code, identity in identities.items()}
    failures: list[str] = []
    # why a run stopped, in the cube: an error, or languages left not run (their sources, their stores)
    with contextlib.suppress(_NotRun), rs.run_recorded(Location(cfg.output, options), cfg.canonical_yaml()):
        failures = _run_checked(
            cfg, options, checked.stores, SourceRun(checked.sources, recorded=recorded), where, overwrite
        )
        rs.compact_results(Location(cfg.output, options))
        _write_adjusted(cfg, options)
        _write_agreement(cfg, options)
        if failures:
            raise _NotRun(failures)
    if fresh is not None:
        rs.replace_results(Location(fresh, options), Location(final, options))
    return failures


def _run_embeddings(study: EmbeddingStudies, options: dict, where: _Where, *, overwrite: bool, update: bool):
    """:func:`run` of a study of several embeddings: every embedding's study checked (its results cube, its
    stores) before anything is written, then run one after the other on one client into its child group."""
    root = Location(study.output, options)
    for cfg in study.studies.values():
        _check_output_apart(dataclasses.replace(cfg, output=study.output))
    with acquire_lock(root):  # one writer per results store, for the run's life
        removed = check_embeddings(study.output, study.names, options, overwrite=overwrite, update=update)
        checked = {
            name: _check(cfg, options, overwrite=overwrite, update=update) for name, cfg in study.studies.items()
        }
        failures: list[str] = []
        with where.scope() as client, contextlib.ExitStack() as locks:
            rs.create_embeddings_root(root, study.names, overwrite=overwrite)
            for name in removed:
                rs.remove_embedding(root, name)
                log.info("update: the cube of the embedding %s, no longer in the study, deleted", name)
            for item in checked.values():  # every cube there from the start, its cells "not run"
                locks.enter_context(acquire_lock(Location(item.cfg.output, options)))
                if item.changes is None:
                    _create(item.cfg, options, overwrite=overwrite)
            for name, item in checked.items():
                log.info("embedding %s: %s", name, display_url(item.cfg.output))
                failed = _write(item, options, where.on(client), overwrite=False)
                failures += [f"{name}: {failure}" for failure in failed]
    if failures:
        raise _NotRun(failures)
    return rs.open_results(root)


def _write_adjusted(cfg: StudyConfig, options: dict) -> None:
    """The cube's p-values corrected over their families (:mod:`biasdask.study.inference`), written whole."""
    cube = rs.open_cube(Location(cfg.output, options))
    for variable in ("p_value", "p_value_placebo"):
        adjusted = adjusted_pvalues(cube, variable, correction=cfg.correction)
        rs.write_cube_variable(
            Location(cfg.output, options),
            f"{variable}_adjusted",
            adjusted.transpose(*rs.DIMS).values,
            {"correction": cfg.correction, "alpha": cfg.alpha},
        )


def _write_agreement(cfg: StudyConfig, options: dict) -> None:
    """The agreement across the study's scoring rules and test families (:mod:`biasdask.study.reliability`),
    from its cube and stored per-word scores, into ``reliability/agreement``; nothing when the study has
    one association and no two measures of one family."""
    out = Location(cfg.output, options)
    if has_agreement(rs.open_results(out)):
        rs.write_reliability(out, "agreement", agreement(out, seed=cfg.seed, ci_level=cfg.ci_level or 0.95))


def _run_checked(
    cfg: StudyConfig, options: dict, stores: dict, sources: SourceRun, where: _Where, overwrite: bool
) -> list[str]:
    """:func:`run` once every store is checked: find or start the cluster, create (or resume) the
    results store, run the stream; return the failures. ``sources``: the stores to make from their
    sources, and language -> what its cells record of its store (:func:`~biasdask.study.cells.store_values`)."""
    failures: list[str] = []
    progress = where.progress
    total = len(cfg.languages) * len(cfg.methods) * len(cfg.test_labels())
    out = Location(cfg.output, options)
    with where.scope() as c:
        _create(cfg, options, overwrite=overwrite)
        rs.compact_results(out)  # a resumed run: fold the cells it found
        done = rs.done_cells(out)
        if c is not None:
            log.info("running on Dask scheduler %s; dashboard: %s", c.scheduler.address, c.dashboard_link)
        with (
            progress_bar(progress, total=total, initial=len(done), desc="cells", unit="cell") as bar,
            workers_keep_freed_memory(c),  # chunks read for u, otherwise fresh pages each (see there)
            _fetched_bytes(c, sources, bar, wanted(progress)),
        ):
            # where the workers write per-word scores: asked of a worker while the first languages start
            # (its answer is needed only by the first scores write)
            with concurrent.futures.ThreadPoolExecutor(1) as probe:
                destination = probe.submit(_scores_destination, c, out)
                writer = CellWriter(cfg, out, bar, sources.recorded)
                stream = Stream(cfg, out, c, writer, destination, done, sources)
                try:
                    failures += stream.run(stores)
                except BaseException:
                    writer.close(check=False)
                    raise
                writer.close()
    return failures


def _create(cfg: StudyConfig, options: dict, *, overwrite: bool) -> None:
    """Create the study's results cube, or find it to resume (:func:`biasdask.io.results.create_results`)."""
    rs.create_results(
        Location(cfg.output, options),
        languages=[lang.code for lang in cfg.languages],
        methods=list(cfg.methods),
        tests=list(cfg.test_labels()),
        attrs=run_attrs(cfg),
        config_text=cfg.canonical_yaml(),
        overwrite=overwrite,
    )


@contextlib.contextmanager
def _fetched_bytes(client: Client | None, sources: SourceRun, bar: tqdm, shown: bool) -> Iterator[None]:
    """The one display of the run (:class:`~biasdask.study.sources.RunProgress`) on ``bar``, and the bytes
    the ingest tasks fetch reported to it: called in this process, or sent as events by the workers."""
    sources.progress = RunProgress(bar, len(sources.plan.jobs))
    if not (shown and sources.plan.jobs):
        yield
        return
    if client is None:
        sources.report = sources.progress.fetched
        yield
        return
    topic = f"biasdask-fetched-{uuid.uuid4().hex[:12]}"
    sources.report = FetchedEvents(topic)
    client.subscribe_topic(topic, lambda event: sources.progress.fetched(event[1]))
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(topic)


class CellWriter:
    """Writes finished cells (the null first, then the cell's record, with what ``stores`` says of its
    language's embedding store: :func:`~biasdask.study.cells.store_values`) and advances the bar, in a
    thread of its own and in the order they come, so that the run's loop goes on handing out work
    meanwhile. A write that fails stops the writing (the cells after it are left for a resumed run);
    its error is raised by the next call, or by :meth:`close`, which waits for the cells given so far."""

    def __init__(self, cfg: StudyConfig, out: Location, bar: tqdm, stores: dict[str, dict[str, str]]) -> None:
        self.cfg, self.out, self.bar, self.stores = cfg, out, bar, stores
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "biasdask-cells")
        self._error: BaseException | None = None

    def __call__(self, cell: Cell) -> None:
        self._raise()
        self._thread.submit(self._write, cell)

    def close(self, *, check: bool = True) -> None:
        """Wait for the cells given so far; raise the error of a write that failed (unless not ``check``)."""
        self._thread.shutdown(wait=True)
        if check:
            self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _write(self, cell: Cell) -> None:
        if self._error is not None:
            return
        language, method, test = cell.language, cell.method, cell.test
        try:
            if self.cfg.save_null and cell.null is not None:
                rs.write_null(self.out, language, method, test, cell.null)
            if self.cfg.save_null and cell.placebo is not None:
                rs.write_null(self.out, language, method, test, cell.placebo, kind="placebo")
            rs.write_cell(self.out, language, method, test, {**cell.values, **self.stores[language]})
        except BaseException as exc:  # noqa: BLE001 - raised in the run's thread
            self._error = exc
            return
        self.bar.update()


def _check_output_apart(cfg: StudyConfig) -> None:
    """Refuse a results store that is, lies inside or contains one of the study's embedding stores: its
    writes (and ``overwrite``) would change the user's embeddings."""
    for lang in cfg.languages:
        if not isinstance(lang.store, (str, os.PathLike, Location)):
            continue
        where = nesting(cfg.output, lang.store)  # symbolic links, .. and file:// resolved
        if where:
            raise ConfigError(
                f"output: {display_url(cfg.output)} {where} the embedding store of {lang.code} "
                f"({as_location(lang.store)}); choose an output outside the embedding stores"
            )


def _check_language(lang: LanguageSpec, options: dict) -> xr.Dataset:
    """A study language's embedding, checked before anything runs: a store URL opened and verified (of
    this language) without its words (a task finds those the language needs:
    :func:`biasdask.study.graphs.words_to_find`); an in-memory form converted (see
    :func:`biasdask.as_embeddings`)."""
    if isinstance(lang.store, (str, os.PathLike)):
        return open_vectors(Location(os.fspath(lang.store), options), language=lang.code)
    return as_embeddings(lang.store)


def _scores_destination(client: Client | None, loc: Location) -> Location | None:
    """The results store's location for tasks that write per-word scores on the workers (a local path made
    absolute: a worker may run in another directory), or None when the workers do not see the store this
    process does (a local path on another machine, ``memory://`` in another process): a task reads its
    root metadata, which must be the bytes read here. The client then writes the scores itself."""
    if client is None:  # the tasks run in this process
        return loc
    loc = loc.absolute()
    mine = rs.root_metadata(loc)
    try:
        theirs = client.submit(rs.root_metadata, loc, pure=False).result()
    except Exception:  # noqa: BLE001 - a worker that cannot even look: write from here
        theirs = None
    if mine is None or theirs != mine:
        log.info(
            "the workers do not see the results store %s as this process does: per-word scores are written from here",
            loc,
        )
        return None
    return loc
