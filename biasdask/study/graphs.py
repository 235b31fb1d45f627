"""What a study's client builds before it submits: the words a language looks up, a family's scores graph
and placebo plan, the rows its classic cells read.

The client holds no vocabulary of a store: a store is opened without its words, one task finds those a
language needs (:func:`words_to_find`), and a family's graph is built from them in a thread of the
client (:func:`family_graph`), once a task has read its attribute rows (:func:`read_attributes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.delayed import Delayed

from biasdask.engine.placebo import PlaceboPlan, placebo_forbidden, plan_placebo
from biasdask.engine.scores import (
    Attributes,
    PairAxes,
    as_terms,
    attribute_vectors,
    attributes_graph,
    excluded_targets,
    nfc,
    pair_axes,
    positions,
    scores_graph,
)
from biasdask.engine.tasks import Tasks
from biasdask.io.fs import Location
from biasdask.io.results import split_label
from biasdask.io.store import read_chunk, stored_vectors
from biasdask.lexicon import AttributeTerm, context_words
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.study.cells import cell_words
from biasdask.study.config import LanguageSpec, StudyConfig
from biasdask.study.plan import LanguagePlan, applicable_tests, is_family

__all__ = [
    "FamilyGraph",
    "absent_words",
    "cell_rows",
    "family_graph",
    "family_words",
    "read_attributes",
    "missing_words",
    "study_cell_words",
    "vector_source",
    "vocabulary_words",
    "words_to_find",
]


def words_to_find(cfg: StudyConfig, lang: LanguageSpec, emb: xr.Dataset) -> list[str]:
    """Every word (NFC) that a language's scores graphs, placebo plans and classic cells look up in its
    vocabulary, found by one task for a store opened without its words."""
    labels = applicable_tests(cfg, lang.code)
    groups = [(lang.a, lang.b)]
    if any(split_label(t).test == "context" for t in labels):
        context = context_words()
        groups.append((context.female, context.male))
    words: list[str] = []
    for a, b in groups:
        tokens = [t for term in as_terms([*a, *b]) for t in term.tokens]
        words += [*tokens, *excluded_targets(a, b, cfg.vocabulary)]
        if cfg.placebo:
            words += placebo_forbidden(emb, cfg.placebo_exclude, nfc(tokens))
    for label in labels:
        if not is_family(label):
            words += study_cell_words(cfg, label, lang.code, lang.set_metric_words)
    return sorted(set(nfc(words)))


def study_cell_words(cfg: StudyConfig, test: str, code: str, set_metric_words) -> list[str]:
    """The words the classic cell ``test`` of language ``code`` reads (:func:`biasdask.study.cells.cell_words`),
    with the word sets the study read for it from its ``word_sets`` files, if any."""
    return cell_words(
        test,
        code,
        iat_model=cfg.iat_model,
        set_metric_words=set_metric_words,
        sets=cfg.word_sets.get(test, {}).get(code),
    )


def vocabulary_words(emb: xr.Dataset, max_words: int | None) -> Iterator[str]:
    """The words of ``emb`` in row order (at most ``max_words``), for a scan that usually stops early: a
    store opened without its words reads them a chunk at a time."""
    if "word" in emb.coords:
        yield from emb["word"].values[:max_words]
        return
    stored = stored_vectors(emb["vectors"].data)
    assert stored is not None
    n = min(stored.n_words, max_words or stored.n_words)
    for k in range(-(-n // stored.chunk)):
        yield from read_chunk(stored.location, "word", k)[: n - k * stored.chunk]


def absent_words(emb: xr.Dataset, words) -> list[str]:
    """Labels of the attribute words (or IAT terms) none of whose tokens is in the vocabulary."""
    terms = [w if isinstance(w, AttributeTerm) else AttributeTerm(w, ((w,),)) for w in words]
    tokens = [tok for term in terms for tok in term.tokens]
    found = {tok for tok, pos in zip(tokens, positions(emb, tokens)) if pos >= 0}
    return [term.label for term in terms if not found.intersection(term.tokens)]


def missing_words(missing_a, missing_b) -> str:
    """``"A: foo, bar; B: baz"`` for the attribute words absent from a vocabulary (empty if none)."""
    return "; ".join(f"{side}: {', '.join(ws)}" for side, ws in (("A", missing_a), ("B", missing_b)) if ws)


@dataclass(frozen=True)
class FamilyGraph:
    """A family's scores graph, built in a thread of the client (:func:`family_graph`)."""

    scores: xr.Dataset
    """The lazy scores (:func:`biasdask.engine.scores.scores_graph`)."""
    stacked: da.Array
    """u stacked on t: the one array the scores are rows of."""
    found: Delayed
    """The attributes of the scores that come from reading the vectors, delayed."""
    moments: list[Delayed] | None
    """With a placebo or base pairs, each task's (rows, moments) pair, delayed."""
    attributes: Attributes
    """The attribute sets as a task found them, and the association's axes."""
    placebo: PlaceboPlan | None
    """The family's placebo plan (None without a placebo)."""
    pairs: PairAxes | None = None
    """A gender family of base pairs: the pairs in use and their axes, whose items' moments the scores
    tasks gather (None otherwise)."""


def family_words(cfg: StudyConfig, lang: LanguageSpec, label: str) -> tuple[Sequence, Sequence, Vocabulary]:
    """A family's attribute words A and B and the vocabulary it scores (``gender...``: the language's
    attribute words; ``context...``: Valentini et al.'s context words, left out of the targets as their
    Table 3 does)."""
    if split_label(label).test == "context":
        words = context_words()
        return words.female, words.male, Vocabulary(max_words=cfg.max_words, exclude_words=(*words.female, *words.male))
    return lang.a, lang.b, cfg.vocabulary


def read_attributes(
    tasks: Tasks, cfg: StudyConfig, lang: LanguageSpec, emb: xr.Dataset, label: str, priority: int, tag: Any
) -> Any:
    """Submit the task that reads a family's attribute rows (:func:`biasdask.engine.scores.attributes_graph`);
    its future, reported with ``tag``, gives a one-item tuple of the :class:`Attributes`."""
    a, b, _ = family_words(cfg, lang, label)
    return tasks.compute(attributes_graph(emb, a, b, split_label(label).association), tag=tag, priority=priority)


def family_graph(
    cfg: StudyConfig, lang: LanguageSpec, emb: xr.Dataset, plan: LanguagePlan, label: str, attributes: Attributes
) -> FamilyGraph:
    """The scores graph of a family, built with the attribute rows a task read (:func:`read_attributes`),
    so that no task of it runs twice under two names. Nothing here waits for the cluster."""
    test, association = split_label(label)
    a, b, vocabulary = family_words(cfg, lang, label)
    # the placebo's moments, and the base pairs' item moments, are gathered where u is computed, in the same read
    moments = bool(cfg.placebo and plan.families.get(label))
    pairs = None
    if test == "gender" and lang.paired and plan.families.get(label):
        pairs = pair_axes(association, a, b, attributes.a, attributes.b)
    graph = scores_graph(
        emb,
        a,
        b,
        methods=plan.score_methods if plan.need_scores else plan.families[label],
        association=association,
        vocabulary=vocabulary,
        attributes=attributes,
        moments=moments,
        pair_axes=pairs.axes if pairs is not None and len(pairs.labels) >= 2 else None,
    )
    placebo = None
    if moments:  # its words looked up here, in the thread that builds the graph
        placebo = plan_placebo(
            emb,
            a,
            b,
            used=(attributes.a.used, attributes.b.used),
            association=association,
            exclude=cfg.placebo_exclude,
            match=cfg.placebo_match,
            attribute_vectors=attribute_vectors(
                association, as_terms(a), as_terms(b), attributes.a, attributes.b, lang.code
            ),
        )
    return FamilyGraph(graph.scores, graph.stacked, graph.found, graph.moments, attributes, placebo, pairs)


def cell_rows(emb: xr.Dataset, tests, code: str, cfg: StudyConfig, set_metric_words) -> xr.Dataset:
    """The rows of ``emb`` that the classic cells ``tests`` read (:func:`biasdask.study.cells.cell_words`;
    each word's first row), not read yet: the task that loads them reads only the chunks that hold them.
    A cell gives the same result on these rows as on the whole vocabulary (it looks up only its own
    words)."""
    words = list(dict.fromkeys(w for test in tests for w in study_cell_words(cfg, test, code, set_metric_words)))
    pos = positions(emb, words) if words else np.empty(0, dtype=np.int64)
    rows = np.unique(pos[pos >= 0])
    if "word" in emb.coords:
        return emb.isel(word=rows)
    at = dict(zip(pos.tolist(), nfc(words)))  # a store's words are unique and NFC: the word asked for
    return emb.isel(word=rows).assign_coords(word=("word", np.array([at[r] for r in rows.tolist()], dtype=object)))


def vector_source(emb: xr.Dataset) -> Location | xr.Dataset:
    """How a task reaches a language's vectors: its store's location, else the in-memory Dataset."""
    stored = stored_vectors(emb["vectors"].data)
    return stored.location if stored is not None else emb
