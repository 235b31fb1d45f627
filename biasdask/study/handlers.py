"""A finished task of a study's stream, and what it writes: one kind of event per kind of task, one handler each.

A task the stream submits carries an event (:class:`StoreMade`, :class:`WordsFound`, :class:`AttributesRead`,
:class:`GraphBuilt`, :class:`ScoresWritten`, :class:`FamilyDone`, :class:`ClassicDone`); when it finishes,
:data:`HANDLERS` names the function that takes its result: it writes the cells the result fills, and
asks the stream for the work that follows (a language's start once its store is made from its source,
its families once its words are found, a family's graph once its attribute rows are read, its tasks
once its graph is built). What a result writes is computed by plain functions
(:func:`gender_values`, :func:`family_cells`, :func:`classic_cells`, :func:`missing_attribute_cells`),
tested without Dask. A task whose store failed its checksum fails its language only
(:func:`handle`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import xarray as xr

from biasdask.engine.placebo import PlaceboResult
from biasdask.engine.scores import Attributes, found_words
from biasdask.errors import BiasdaskError, BiasdaskException, CorruptStoreError, MissingWordsError
from biasdask.io.fs import one_line, redact
from biasdask.io.results import split_label
from biasdask.study.cells import cell_values
from biasdask.study.config import LanguageSpec, StudyConfig
from biasdask.study.graphs import FamilyGraph, absent_words, missing_words
from biasdask.study.plan import LanguagePlan, StreamPlanner
from biasdask.study.work import ClassicResult, FamilyResults, ScoresPart

__all__ = [
    "HANDLERS",
    "AttributesRead",
    "attributes_read",
    "Cell",
    "classic_cells",
    "classic_done",
    "ClassicDone",
    "family_cells",
    "family_done",
    "FamilyDone",
    "gender_values",
    "GenderValues",
    "graph_built",
    "GraphBuilt",
    "handle",
    "missing_attribute_cells",
    "scores_written",
    "ScoresWritten",
    "store_made",
    "StoreMade",
    "StreamOps",
    "words_found",
    "WordsFound",
]

log = logging.getLogger("biasdask.study.stream")


# -- the events --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WordsFound:
    """The words a language needs are found in its store (opened without its words): start it."""

    code: str
    lang: LanguageSpec
    emb: xr.Dataset
    words: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class StoreMade:
    """A language's store is made from its source (or could not be): the language starts in its turn,
    or stops here."""

    code: str
    lang: LanguageSpec
    source: str
    """The source's URL without credentials."""


@dataclass(frozen=True, eq=False)
class AttributesRead:
    """A family's attribute rows are read (or no usable word was found): build its scores graph."""

    code: str
    label: str
    lang: LanguageSpec
    emb: xr.Dataset
    plan: LanguagePlan


@dataclass(frozen=True, eq=False)
class GraphBuilt:
    """A family's scores graph is built (or failed to be): submit its work."""

    code: str
    label: str
    lang: LanguageSpec
    emb: xr.Dataset
    plan: LanguagePlan


@dataclass(frozen=True, eq=False)
class ScoresWritten:
    """A language's per-word scores are written; ``held`` are the futures of its scores."""

    code: str
    held: Sequence


@dataclass(frozen=True, eq=False)
class FamilyDone:
    """The cells of a family (a full-vocabulary test's weightings) are computed."""

    code: str
    test: str


@dataclass(frozen=True, eq=False)
class ClassicDone:
    """A classic cell is computed; its result fills the cells of ``methods``."""

    code: str
    test: str
    methods: tuple[str, ...]


class StreamOps(Protocol):
    """What a handler asks of the stream (:class:`biasdask.study.stream.Stream`)."""

    cfg: StudyConfig
    planner: StreamPlanner
    tasks: Any
    families: dict

    def write(self, cell: Cell) -> None: ...

    def adopt(self, lang: LanguageSpec) -> None: ...

    def begin(self, lang: LanguageSpec, emb: xr.Dataset) -> None: ...

    def build_family(
        self, lang: LanguageSpec, emb: xr.Dataset, plan: LanguagePlan, label: str, attributes: Attributes
    ) -> None: ...

    def start_family(self, code: str, label: str, graph: FamilyGraph, methods: tuple, values: dict) -> tuple: ...

    def add_scores(self, code: str, label: str, part: tuple | None) -> None: ...


class Cell(NamedTuple):
    """One cell to write: its labels, its values (:func:`biasdask.study.cells.cell_values`), its
    permutation null and its placebo draws (None: not kept)."""

    language: str
    method: str
    test: str
    values: dict
    null: np.ndarray | None = None
    placebo: np.ndarray | None = None


# -- what results write (pure) ----------------------------------------------------------------------


class GenderValues(NamedTuple):
    """What the cells of a ``gender`` family share (:func:`gender_values`)."""

    values: dict
    missing: str
    """The attribute words left out, ``"A: foo; B: bar"`` (empty if none)."""


def gender_values(lang: LanguageSpec, association: str, attributes: Attributes) -> GenderValues:
    """The values every cell of a ``gender`` family shares, from the attribute sets found, and the
    attribute words left out (``"A: foo; B: bar"``, empty if none)."""
    set_a, set_b = attributes.a, attributes.b
    missing = missing_words(
        [*set_a.missing, *(f"{w} (zero vector)" for w in set_a.zero)],
        [*set_b.missing, *(f"{w} (zero vector)" for w in set_b.zero)],
    )
    values = {
        "u_association": association,
        "attribute_set": lang.attribute_set,
        "word_sets": lang.attribute_set,
        "attribute_words_a": ", ".join(set_a.used),
        "attribute_words_b": ", ".join(set_b.used),
        "missing_attribute_words": missing,
    }
    if missing:
        values["note"] = f"warning: attribute words not in the vocabulary, left out: {missing}"
    values.update(n_a=len(set_a.used), n_b=len(set_b.used))
    return GenderValues(values, missing)


def missing_attribute_cells(
    lang: LanguageSpec, emb: xr.Dataset, label: str, methods: Sequence[str], error: Exception
) -> list[Cell]:
    """The cells of a ``gender`` family none of whose A (or B) words is usable: empty, with a note
    naming the words."""
    missing = missing_words(absent_words(emb, lang.a), absent_words(emb, lang.b))
    note = f"missing attribute words: none of A or of B is usable ({missing}): {error}"
    values = {
        "u_association": split_label(label).association,
        "attribute_set": lang.attribute_set,
        "word_sets": lang.attribute_set,
        "note": note,
    }
    return [Cell(lang.code, method, label, {"t_method": method, **values}) for method in methods]


def family_cells(code: str, test: str, methods: Sequence[str], values: dict, computed: FamilyResults) -> list[Cell]:
    """The cells of a family from its results: one per weighting, with the family's shared values, its
    weighted effect size and its placebo comparison (or why there is none)."""
    cells = []
    placebo = computed.placebo
    for k, (method, res, d_w) in enumerate(zip(methods, computed.results, computed.weighted)):
        cell = cell_values(
            res, **{**values, **computed.consistency, "t_method": method, "effect_size_weighted": float(d_w)}
        )
        draws = None
        if isinstance(placebo, PlaceboResult):
            cell.update(**placebo.fields(k), **placebo.interval)
            draws = placebo.statistics[:, k]
        elif isinstance(placebo, str):
            reason = f"no placebo: {placebo.removeprefix('placebo: ')}"
            cell["note"] = "; ".join(v for v in (cell.get("note", ""), reason) if v)
        cells.append(Cell(code, method, test, cell, res.null_distribution, draws))
    return cells


def classic_cells(code: str, test: str, methods: Sequence[str], computed: ClassicResult) -> list[Cell]:
    """The cells of a classic test: its one result in the cell of every method."""
    return [Cell(code, method, test, computed.values, computed.null) for method in methods]


# -- the handlers --------------------------------------------------------------------------------------


def handle(stream: StreamOps, event: Any, future: Any) -> None:
    """Hand a finished task to its event's handler. A store that failed its checksum (or could not be
    read) in one of a language's tasks fails that language only: its cells stay not done, to run on
    resume once the store is mended; the run's error names it and the other languages go on."""
    if isinstance(event, StoreMade):  # not a task of a language in flight: it waits for it
        store_made(stream, event, future)
        return
    stream.planner.submitted(event.code, -1)
    error = None if future.cancelled() else future.exception()
    if isinstance(error, CorruptStoreError):
        stream.planner.fail(event.code, error)
        held: Sequence = []
        if isinstance(event, ScoresWritten):
            held = event.held
        elif isinstance(event, FamilyDone):
            stream.planner.family_done(event.code, event.test)
            held = stream.families.pop((event.code, event.test)).futures
        stream.tasks.release([future, *held])
    else:
        HANDLERS[type(event)](stream, event, future)
    stream.planner.settle(event.code)


def store_made(stream: StreamOps, event: StoreMade, future: Any) -> None:
    """Let the language start once its store is made and opened, or stop it with one line naming its
    source and why (its cells are not run; the others go on)."""
    stream.tasks.release([future])
    error = BiasdaskError("cancelled") if future.cancelled() else future.exception()
    if error is None:
        try:
            stream.adopt(event.lang)
        except BiasdaskException as exc:
            error = exc
    if error is None:
        stream.planner.store_made(event.code)
        return
    reason = redact(" ".join(str(error).split()) if isinstance(error, BiasdaskException) else one_line(error))
    if event.source not in reason:
        reason = f"{event.source}: {reason}"
    log.warning("%s: its store was not made from its source, its cells are not run: %s", event.code, reason)
    stream.planner.store_failed(event.code, reason)


def words_found(stream: StreamOps, event: WordsFound, future: Any) -> None:
    """Record where the words are and start the language."""
    found_words(event.emb, event.words, future.result())
    stream.tasks.release([future])
    try:
        stream.begin(event.lang, event.emb)
    except MissingWordsError as exc:  # attribute words of a test other than gender
        stream.planner.fail(event.code, exc)
        log.warning("skipped language %s: %s", event.code, exc)


def attributes_read(stream: StreamOps, event: AttributesRead, future: Any) -> None:
    """Build the family's scores graph with the attribute rows read (or write why it cannot run)."""
    stream.tasks.release([future])
    try:
        (attributes,) = future.result()
    except MissingWordsError as exc:  # no usable attribute word of A (or of B) in the vocabulary
        _family_not_run(stream, event, exc)
        return
    stream.build_family(event.lang, event.emb, event.plan, event.label, attributes)


def graph_built(stream: StreamOps, event: GraphBuilt, future: Any) -> None:
    """Submit a family's work once its scores graph is built (or write why it cannot run)."""
    code, label = event.code, event.label
    stream.tasks.release([future])
    methods = event.plan.families.get(label, ())
    try:
        graph: FamilyGraph = future.result()
    except MissingWordsError as exc:
        _family_not_run(stream, event, exc)
        return
    test, association = split_label(label)
    if test == "context":
        values: dict = {"t_method": None, "u_association": association, "n_a": -1, "n_b": -1}
    else:
        values, missing = gender_values(event.lang, association, graph.attributes)
        if missing and methods:
            log.warning("%s: attribute words not in the vocabulary, left out: %s", code, missing)
    computed = stream.start_family(code, label, graph, methods, values)
    if event.plan.need_scores and test == "gender":  # written where computed, once every association's are in
        stream.add_scores(code, label, (ScoresPart.of(graph.scores, event.emb), computed))


def _family_not_run(stream: StreamOps, event: AttributesRead | GraphBuilt, exc: MissingWordsError) -> None:
    """A family without a usable attribute word of A (or of B): its cells say why, or only its per-word
    scores are not written."""
    code, label = event.code, event.label
    methods = event.plan.families.get(label, ())
    if not methods:  # only the per-word scores asked for it: the language's tests run without them
        log.warning("%s: per-word scores not written: %s", code, exc)
        stream.add_scores(code, label, None)
        return
    log.warning("%s: %s test not run: %s", code, label, exc)
    if split_label(label).test == "gender":
        for cell in missing_attribute_cells(event.lang, event.emb, label, methods, exc):
            stream.write(cell)
        stream.add_scores(code, label, None)
    stream.planner.fail(code, exc)


def scores_written(stream: StreamOps, event: ScoresWritten, future: Any) -> None:
    """Raise what the scores write raised; forget the scores."""
    future.result()
    stream.tasks.release([future, *event.held])


def family_done(stream: StreamOps, event: FamilyDone, future: Any) -> None:
    """Write the family's cells."""
    family = stream.families.pop((event.code, event.test))
    stream.planner.family_done(event.code, event.test)
    computed = future.result()
    stream.tasks.release([*family.futures, future])
    if computed is None:
        stream.planner.fail(event.code, BiasdaskError("no word has a usable vector"))
        return
    for cell in family_cells(event.code, event.test, family.methods, family.values, computed):
        stream.write(cell)


def classic_done(stream: StreamOps, event: ClassicDone, future: Any) -> None:
    """Write the classic test's cells."""
    computed: ClassicResult = future.result()
    if str(computed.values.get("note", "")).startswith("coverage: "):
        log.warning("%s", computed.values["note"].removeprefix("coverage: "))
    for cell in classic_cells(event.code, event.test, event.methods, computed):
        stream.write(cell)
    stream.tasks.release([future])


#: the handler of each kind of event
HANDLERS: dict[type, Callable[[StreamOps, Any, Any], None]] = {
    StoreMade: store_made,
    WordsFound: words_found,
    AttributesRead: attributes_read,
    GraphBuilt: graph_built,
    ScoresWritten: scores_written,
    FamilyDone: family_done,
    ClassicDone: classic_done,
}
