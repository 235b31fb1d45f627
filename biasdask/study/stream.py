"""A study as one stream of tasks: submit what the planner says, hand each finished task to its handler.

The loop (:meth:`Stream.run`) starts the languages the planner (:class:`~biasdask.study.plan.StreamPlanner`)
lets start, then waits on one queue of finished tasks (:class:`~biasdask.engine.tasks.Tasks`) and hands
each to the handler of its kind (:mod:`biasdask.study.handlers`), which writes the cells its result fills
and asks for the work that follows. Tasks run on a ``distributed`` client's workers, or on threads of
this process without one. The client holds no vocabulary: a store is opened without its words and a
task finds those a language needs; a family's scores graph is built in a thread of the client
(:func:`~biasdask.study.graphs.family_graph`) once a task has read its attribute rows, which no thread waits for. A family's pool
is prepared from its scores where they were computed, its batches depend on the pool (which travels only
to the workers that run them) and one task assembles its results; a classic cell is one task on the few
rows it reads; a language's per-word scores are written by a task, where they were computed.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
from dataclasses import dataclass, field, replace
from typing import Any

import xarray as xr
from distributed import Client

from biasdask.engine.cluster import n_slots
from biasdask.engine.permutation import kernel_rate
from biasdask.engine.scores import Attributes, excluded_targets, forget_words, frequency_unavailable
from biasdask.engine.sources import ingest_source
from biasdask.engine.tasks import Tasks
from biasdask.errors import MissingWordsError, StoreConflictError
from biasdask.io import results as rs
from biasdask.io.fs import Location, display_url
from biasdask.io.results import cube_label, split_label
from biasdask.io.store import embedding_identity, find_words, open_vectors, stored_vectors
from biasdask.study.cells import store_values
from biasdask.study.config import LanguageSpec, StudyConfig
from biasdask.study.graphs import (
    FamilyGraph,
    cell_rows,
    family_graph,
    read_attributes,
    vector_source,
    vocabulary_words,
    words_to_find,
)
from biasdask.study.handlers import (
    AttributesRead,
    Cell,
    ClassicDone,
    FamilyDone,
    GraphBuilt,
    ScoresWritten,
    StoreMade,
    WordsFound,
    handle,
)
from biasdask.study.plan import LanguagePlan, LanguageWork, StreamPlanner, applicable_tests, is_family, plan_language
from biasdask.study.sources import SourceRun
from biasdask.study.update import changed_stores
from biasdask.study.work import (
    classic_cell,
    family_batch,
    family_cells,
    family_consistency,
    family_placebo,
    family_pools,
    write_gathered_scores,
    write_scores,
)

__all__ = ["Family", "Stream", "submit_classic"]

log = logging.getLogger(__name__)


@dataclass
class Family:
    """A family of full-vocabulary cells in flight: its weightings, their shared values, and the futures
    it holds."""

    methods: tuple[str, ...]
    values: dict[str, Any]
    futures: list = field(default_factory=list)


class Stream:
    """The run's event loop: start languages as the planner says, hand each finished task to its handler.

    Parameters
    ----------
    cfg
        The study.
    out
        The results store.
    client
        The ``distributed`` client, or None (threads of this process).
    write
        Writes a finished cell (:class:`~biasdask.study.handlers.Cell`).
    scores_loc
        A future of where the workers write per-word scores (None: they do not see the results store,
        the client writes them).
    done
        The cells already written (skipped).
    sources
        What the run makes from the study's sources (:func:`biasdask.study.sources.check_sources`), what
        the ingest tasks report fetched bytes to (:class:`~biasdask.study.sources.RunProgress`), and each
        language's values its cells record of its store (:func:`~biasdask.study.cells.store_values`),
        which a store made here adds to.
    """

    def __init__(
        self,
        cfg: StudyConfig,
        out: Location,
        client: Client | None,
        write: Any,
        scores_loc: concurrent.futures.Future,
        done: set,
        sources: SourceRun | None = None,
    ) -> None:
        slots = n_slots(client)
        self.cfg, self.out, self.write, self.scores_loc, self.done = cfg, out, write, scores_loc, done
        self.tasks = Tasks(client, slots)
        self.sources = sources or SourceRun()
        self.planner = StreamPlanner(cfg, slots, kernel_rate(client), awaiting=self.sources.plan.jobs)
        self.families: dict[tuple[str, str], Family] = {}
        self.stores: dict[str, xr.Dataset] = {}
        self._opened: list[xr.Dataset] = []  # stores opened without their words, whose words a task found

    def run(self, stores: dict[str, xr.Dataset]) -> list[str]:
        """Make the stores the study's sources give, and run every language's missing work (``stores``:
        each other language's embedding, opened); return the failures (one line per language)."""
        planner = self.planner
        self.stores.update(stores)
        langs = {lang.code: lang for lang in self.cfg.languages}
        for code, priority in planner.stores_to_make():
            job = replace(self.sources.plan.jobs[code], priority=priority)
            tag = StoreMade(code, langs[code], job.shown)
            self.tasks.submit(ingest_source, job, self.sources.report, tag=tag, priority=priority, pure=False)
        try:
            while planner.busy():
                # in the study's order; meanwhile the loop handles what the started languages report
                while (lang := planner.next_language()) is not None:
                    try:
                        self.start(lang, self.stores[lang.code])
                    except MissingWordsError as exc:  # attribute words of a test other than gender
                        planner.fail(lang.code, exc)
                        log.warning("skipped language %s: %s", lang.code, exc)
                    planner.settle(lang.code)
                if planner.waits():
                    handle(self, *self.tasks.finished.get())
        finally:
            self.tasks.close()
            for emb in self._opened:
                forget_words(emb)
        return planner.failures

    def adopt(self, lang: LanguageSpec) -> None:
        """Open a store made from its source (without its words) for its language to start, after
        checking that the cells of it already done, if any, were computed from these contents."""
        emb = open_vectors(Location(os.fspath(lang.store), self.out.storage_options), language=lang.code)
        values = store_values(embedding_identity(emb))
        if any(code == lang.code for code, _, _ in self.done) and changed_stores(
            self.out, {lang.code: values["store_fingerprint"]}
        ):
            raise StoreConflictError(
                f"its store {display_url(os.fspath(lang.store))}, made again, differs from the one its cells in "
                f"{self.out} were computed from: run the study again with --update to recompute them"
            )
        self.stores[lang.code] = emb
        self.sources.recorded[lang.code] = values
        self.sources.progress.ingested()

    def start(self, lang: LanguageSpec, emb: xr.Dataset) -> None:
        """Start a language: at once when its words are in memory; for a store opened without its words,
        once a task has found those it needs (:class:`~biasdask.study.handlers.WordsFound`)."""
        if "word" in emb.coords:
            self.begin(lang, emb)
            return
        words = words_to_find(self.cfg, lang, emb)
        self._opened.append(emb)
        self.tasks.submit(
            find_words,
            stored_vectors(emb["vectors"].data).location,
            words,
            tag=WordsFound(lang.code, lang, emb, tuple(words)),
            priority=self.planner.prepare[lang.code],
        )
        self.planner.submitted(lang.code)

    def begin(self, lang: LanguageSpec, emb: xr.Dataset) -> None:
        """Plan a language whose words can be looked up, write its notes and submit its work."""
        cfg = self.cfg
        no_frequency = None
        if "frequency" in cfg.methods:
            # a vocabulary none of whose targets is in wordfreq's list cannot be weighted: a note, not a
            # failed run (the scan stops at the first word found)
            excluded = excluded_targets(lang.a, lang.b, cfg.vocabulary)
            targets = (w for w in vocabulary_words(emb, cfg.max_words) if w not in excluded)
            no_frequency = frequency_unavailable(str(emb.attrs.get("language", "")), targets)
        plan = plan_language(
            cfg,
            lang.code,
            self.done,
            need_scores=cfg.save_scores and not rs.scores_done(self.out, lang.code),
            applicable=applicable_tests(cfg, lang.code),
            no_frequency=no_frequency,
        )
        work = self.planner.language_work(lang, plan)
        if work is None:
            return
        if no_frequency is not None and any(m == "frequency" for m, t, _ in plan.notes if is_family(t)):
            log.warning("%s: %s; its 'frequency' cells are left empty with a note", lang.code, no_frequency)
        for method, test, values in work.notes:
            self.write(Cell(lang.code, method, test, values))
        # a family's graph is built once a task has read its attribute rows (AttributesRead)
        for label in work.graphs:
            tag = AttributesRead(lang.code, label, lang, emb, plan)
            read_attributes(self.tasks, cfg, lang, emb, label, self.planner.prepare[lang.code], tag)
            self.planner.submitted(lang.code)
        submit_classic(self.tasks, self.planner, cfg, lang, emb, work)

    def build_family(
        self, lang: LanguageSpec, emb: xr.Dataset, plan: LanguagePlan, label: str, attributes: Attributes
    ) -> None:
        """Build a family's scores graph in a thread of this process, so that this loop keeps writing cells
        and feeding the workers meanwhile (:class:`~biasdask.study.handlers.GraphBuilt` when built)."""
        self.tasks.beside(
            family_graph,
            self.cfg,
            lang,
            emb,
            plan,
            label,
            attributes,
            tag=GraphBuilt(lang.code, label, lang, emb, plan),
        )
        self.planner.submitted(lang.code)

    def start_family(
        self, code: str, label: str, graph: FamilyGraph, methods: tuple[str, ...], values: dict
    ) -> tuple[list, Any]:
        """Submit a family's scores and, for ``methods``, its pool, permutation batches, placebo and
        cells; return the futures of the scores' pieces and of the attributes found."""
        # with the placebo's moments, the pieces are the chunks' (rows, moments) pairs: the scores tasks'
        # own results, taken apart by the tasks that use them
        pieces, found = self.tasks.compute_pieces(
            graph.moments or graph.stacked, graph.found, priority=self.planner.prepare[code]
        )
        if not methods:
            return pieces, found
        sc = graph.scores
        words = max(1, sc.sizes["word"] - int(sc.attrs.get("n_excluded", 0)))  # at most in the pool
        plan = self.planner.family_work(code, label, words, len(methods))
        family = Family(methods, values, [*pieces, *(() if found is None else (found,))])
        rows = [list(sc["method"].values).index(m) for m in methods]
        cfg = self.cfg
        pool = self.tasks.submit(
            family_pools, rows, cfg.n_permutations, cfg.alternative, plan.seed, *pieces, priority=plan.pool_priority
        )
        # one message submits every batch; they depend on the pool: no round trip through this process
        ranges = plan.ranges
        parts = self.tasks.map(family_batch, [pool] * len(ranges), *zip(*ranges), priority=plan.priority)
        placebo = consistency = None
        if graph.placebo is not None:  # the same placebo pairs for every weighting of the family, seeded by it
            # beside the pool, before the permutations: it is not left to lengthen the family's tail
            job = {"plan": graph.placebo, "n": cfg.placebo, "ci_level": cfg.ci_level, "seed": plan.seed}
            placebo = self.tasks.submit(family_placebo, job, rows, *pieces, priority=plan.pool_priority)
            family.futures.append(placebo)
        if graph.pairs is not None and len(graph.pairs.labels) >= 2:  # the pairs' items, gathered with the scores
            job = {"pairs": graph.pairs.labels, "association": split_label(label).association, "seed": plan.seed}
            consistency = self.tasks.submit(family_consistency, job, *pieces, priority=plan.pool_priority)
            family.futures.append(consistency)
        cells = self.tasks.submit(
            family_cells,
            pool,
            placebo,
            consistency,
            *parts,
            return_null=cfg.save_null,
            tag=FamilyDone(code, label),
            priority=plan.priority,
        )
        family.futures += [pool, *parts, cells]
        self.families[(code, label)] = family
        self.planner.submitted(code)
        return pieces, found

    def add_scores(self, code: str, label: str, part: tuple | None) -> None:
        """Collect one association's scores (its :class:`~biasdask.study.work.ScoresPart` and the futures
        of its pieces and of its attributes found; None: it failed); once the language's last is in, if
        cosine's is among them, a task writes them (in the study's order), where they were computed."""
        got = self.planner.scores_part(code, label, part)
        if not got or cube_label("gender", "cosine") not in got:
            return
        parts = [(split_label(label).association, part[0]) for label, part in got.items()]
        counts = [len(pieces) for _, (pieces, _) in got.values()]
        computed = [f for _, (pieces, found) in got.values() for f in (*pieces, found)]
        loc = self.scores_loc.result()
        tag = ScoresWritten(code, computed)
        if loc is not None:
            args = (loc, code, parts, counts, *computed)
            self.tasks.submit(write_scores, *args, tag=tag, priority=self.planner.prepare[code])
        else:  # the workers do not see the results store: gathered and written here
            self.tasks.beside(write_gathered_scores, self.out, code, parts, counts, computed, tag=tag)
        self.planner.submitted(code)


def submit_classic(
    tasks: Tasks, planner: StreamPlanner, cfg: StudyConfig, lang: LanguageSpec, emb: xr.Dataset, work: LanguageWork
) -> None:
    """One task loads the rows of all the language's classic cells; one task per classic test."""
    if not work.classic:
        return
    rank = planner.priority[lang.code]
    options = dict(
        similarity=cfg.similarity,
        min_coverage=cfg.min_coverage,
        iat_model=cfg.iat_model,
        return_null=cfg.save_null,
        ci_level=cfg.ci_level,
    )
    if cfg.placebo:  # placebo words come from the whole vocabulary
        options["source"] = vector_source(emb)
    tests = [c.test for c in work.classic]
    rows = tasks.load(cell_rows(emb, tests, lang.code, cfg, lang.set_metric_words), priority=rank)
    for cell in work.classic:
        tasks.submit(
            classic_cell,
            rows,
            cell.test,
            lang.code,
            lang.set_metric_words,
            cell.word_sets,
            {**options, "resampling": cell.resampling},
            tag=ClassicDone(lang.code, cell.test, cell.methods),
            priority=rank,
        )
        planner.submitted(lang.code)
