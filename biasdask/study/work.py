"""What a study's tasks run: plain functions of computed values, on the workers (or threads of the client).

A family of full-vocabulary cells is a pool task (:func:`family_pools`, from its scores where they were
computed), batch tasks (:func:`family_batch`), a placebo task (:func:`family_placebo`), for base pairs a
task of their internal consistency (:func:`family_consistency`) and a last task that assembles its
results (:func:`family_cells`). A classic cell is one task on the few rows it reads
(:func:`classic_cell`). A language's per-word scores are written by a task where they were computed
(:func:`write_scores`; the words are copied from the embedding store). The functions are named by
reference when a task is sent, so a worker runs them from this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import dask
import numpy as np
import xarray as xr

from biasdask.engine.consistency import pairs_consistency
from biasdask.engine.placebo import PlaceboResult, run_placebo, weights_from_scores
from biasdask.engine.pools import Pool, finish_pools, pools_batch, prepare_pools
from biasdask.engine.scores import ChunkMoments
from biasdask.engine.weat import CoverageError
from biasdask.errors import BiasdaskError, PlaceboUnavailableError
from biasdask.io import results as rs
from biasdask.io.fs import Location
from biasdask.io.store import embedding_identity, open_embeddings, stored_vectors, vocabulary_files
from biasdask.lexicon import WordSets
from biasdask.stats.permutation import PermutationTestResult
from biasdask.stats.placebo import merge_moments, weighted_effect_size
from biasdask.study.cells import cell_values, consistency_values, file_word_sets, run_cell, store_values

__all__ = [
    "ClassicResult",
    "FamilyPool",
    "FamilyResults",
    "ScoresPart",
    "classic_cell",
    "family_batch",
    "family_cells",
    "family_consistency",
    "family_placebo",
    "family_pools",
    "joined_rows",
    "weighted_effect_sizes",
    "write_gathered_scores",
    "write_scores",
]


def _rows(piece) -> list[np.ndarray]:
    """The rows (u stacked on t) of a computed piece of scores: a chunk; a chunk's (rows, placebo
    moments) pair; or, without a ``distributed`` client, the list of every chunk's pair."""
    if isinstance(piece, list):
        return [rows for rows, _ in piece]
    return [piece[0]] if isinstance(piece, tuple) else [piece]


def _gathered(pieces) -> list[ChunkMoments]:
    """What the tasks of computed pieces of scores (pairs, or lists of them) gathered besides the rows,
    in chunk order."""
    return [gathered for piece in pieces for _, gathered in (piece if isinstance(piece, list) else [piece])]


def _moments(pieces) -> list:
    """The placebo moments of computed pieces of scores, in chunk order."""
    return [m for gathered in _gathered(pieces) for m in gathered.placebo]


def joined_rows(pieces: tuple) -> np.ndarray:
    """The rows of computed pieces of scores (a chunk, a chunk's (rows, moments) pair, or the list of
    every chunk's pair), in chunk order, as one array."""
    chunks = [rows for piece in pieces for rows in _rows(piece)]
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=-1)


# -- per-word scores -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoresPart:
    """What a task needs, besides the computed rows, to rebuild one association's per-word scores
    (:func:`~biasdask.engine.scores.scores_graph`'s Dataset) where they were computed: the words come
    from the store when the embedding is one (the task copies its encoded word chunks), else with the
    task."""

    methods: tuple[str, ...]
    attrs: dict
    n_words: int
    store: Location | None = None
    words: np.ndarray | None = None
    rank: np.ndarray | None = None  # None: 1..n_words (a store's)

    @classmethod
    def of(cls, sc: xr.Dataset, emb: xr.Dataset) -> ScoresPart:
        stored = stored_vectors(emb["vectors"].data)
        common = dict(
            methods=tuple(str(m) for m in sc["method"].values),
            attrs={
                **sc.attrs,
                **store_values(embedding_identity(emb)),
            },  # the scores say which store they read, as the cells do
            n_words=sc.sizes["word"],
        )
        if stored is not None:
            return cls(**common, store=stored.location)
        return cls(**common, words=np.asarray(sc["word"].values), rank=np.asarray(sc["rank"].values))

    def dataset(self, stacked: np.ndarray, found: dict, words: np.ndarray | None) -> xr.Dataset:
        """The scores from the computed u stacked on t and the attributes found (without ``words``: no
        ``word`` coordinate)."""
        rank = np.arange(1, self.n_words + 1, dtype=np.int64) if self.rank is None else self.rank
        return xr.Dataset(
            {"u": (("word",), stacked[0]), "t": (("method", "word"), stacked[1:])},
            coords={**({} if words is None else {"word": words}), "rank": ("word", rank), "method": list(self.methods)},
            attrs={**self.attrs, **found},
        )


def _with_associations(computed: dict) -> xr.Dataset:
    """Cosine's scores with every other association's u and t added as ``u_<name>``, ``t_<name>``."""
    out = computed["cosine"]
    for association, sc in computed.items():
        if association != "cosine":
            out = out.assign({f"u_{association}": sc["u"], f"t_{association}": sc["t"]})
    out.attrs["associations"] = list(computed)
    return out


def write_scores(loc: Location, code: str, parts: list[tuple[str, ScoresPart]], counts: list[int], *computed) -> None:
    """Task: write a language's per-word scores (every association's, cosine's first) into the results;
    a store's words are copied from it as stored (no decoding and encoding of millions of strings).
    ``computed``: for each association in turn, ``counts[i]`` chunks of u stacked on t, then its
    attributes found."""
    first = parts[0][1]
    scores, at = {}, 0
    for (association, part), n in zip(parts, counts):
        scores[association] = part.dataset(joined_rows(computed[at : at + n]), computed[at + n], first.words)
        at += n + 1
    words_from = None if first.store is None else vocabulary_files(first.store, first.n_words)
    rs.write_scores(loc, code, _with_associations(scores), words_from=words_from)


def write_gathered_scores(
    loc: Location, code: str, parts: list[tuple[str, ScoresPart]], counts: list[int], computed: list
) -> None:
    """In a thread of the client: :func:`write_scores` from the language's computed scores, gathered here."""
    write_scores(loc, code, parts, counts, *(f.result() for f in computed))


# -- a family of full-vocabulary cells -----------------------------------------------------------


class FamilyPool(NamedTuple):
    """What a family's pool task returns (:func:`family_pools`)."""

    pools: list[Pool]
    weighted: np.ndarray
    """Each weighting's weighted effect size (:func:`weighted_effect_sizes`)."""


class FamilyResults(NamedTuple):
    """What a family's last task returns (:func:`family_cells`)."""

    results: list[PermutationTestResult]
    weighted: np.ndarray
    placebo: PlaceboResult | str | None
    """The placebo comparison, the reason there is none (text), or None when the study asks for none."""
    consistency: dict
    """The cube variables of its base pairs' internal consistency (empty without pairs)."""


def family_pools(rows: list[int], n_permutations: int, alternative: str, seed: int, *pieces) -> FamilyPool | None:
    """Task: the family's pool from its scores (the chunks of u stacked on t), on a worker that computed
    some, and each weighting's weighted effect size; None if no word is usable."""
    ut = joined_rows(pieces)
    u, t = ut[0], ut[1:]
    keep = np.isfinite(u)
    if not keep.any():
        return None
    pools = prepare_pools(t[rows][:, keep], int(keep.sum()), n_permutations, alternative, seed, effect_x=u[keep])
    return FamilyPool(pools, weighted_effect_sizes(u[keep], t[rows][:, keep]))


def weighted_effect_sizes(u: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The weighted effect size of each weighting (rows of ``t`` = z·u, float32 as the scores hold them)
    of a full-vocabulary test: X's u with weights z (:func:`biasdask.engine.placebo.weights_from_scores`)
    against the dummy language (zeros carrying X's weights),
    :func:`biasdask.stats.placebo.weighted_effect_size`; its sign is that of s = Σ t."""
    u64 = u.astype(np.float64)
    return np.array([weighted_effect_size(u64, z, np.zeros_like(u64), z) for z in weights_from_scores(u64, t)])


def family_batch(pool: FamilyPool | None, start: int, stop: int) -> np.ndarray | None:
    """Task: permutations [start, stop) of a family's pool (None: no usable word)."""
    return None if pool is None else pools_batch(pool.pools, start, stop)


def family_cells(
    pool: FamilyPool | None, placebo, consistency: dict | None, *batches, return_null: bool
) -> FamilyResults | None:
    """Task: the family's results from its batches, its weighted effect sizes, its placebo comparison
    for each result's resolved alternative and its pairs' internal consistency (None: no usable word)."""
    if pool is None:
        return None
    results = finish_pools(pool.pools, *batches, return_null=return_null)
    if isinstance(placebo, PlaceboResult):
        placebo = placebo.with_alternative([r.alternative for r in results])
    return FamilyResults(results, pool.weighted, placebo, consistency or {})


def family_consistency(job: dict, *pieces) -> dict:
    """Task: the internal consistency of a gender family's base pairs over the vocabulary, from the item
    moments its scores tasks gathered (merged in chunk order; the same bits however the vocabulary was
    cut), as the cube's variables. ``job``: the ``pairs`` in use (``he/she``), the family's
    ``association`` and ``seed``."""
    found = pairs_consistency(_gathered(pieces), job["pairs"], job["association"], seed=job["seed"])
    return consistency_values(found)


def family_placebo(job: dict, rows: list[int], *pieces) -> PlaceboResult | str:
    """Task: the family's placebo comparison (:func:`biasdask.engine.placebo.run_placebo`) from its
    scores and the moments gathered with them (each chunk's pair), for its weightings ``rows``; the
    reason as text where there can be none."""
    ut = joined_rows(pieces)
    moments = merge_moments(*_moments(pieces)).weightings(rows)
    try:
        found, _ = run_placebo(
            job["plan"],
            ut[0],
            ut[1:][rows],
            moments,
            n=job["n"],
            seed=job["seed"],
            alternative="two-sided",
            ci_level=job["ci_level"],
        )
    except BiasdaskError as exc:
        return str(exc)
    return found


# -- a classic cell --------------------------------------------------------------------------------


class ClassicResult(NamedTuple):
    """What a classic cell's task returns (:func:`classic_cell`)."""

    values: dict
    null: np.ndarray | None


def classic_cell(
    rows: xr.Dataset, test: str, code: str, set_metric_words, word_sets: str | WordSets, options: dict
) -> ClassicResult:
    """Task: one classic test of a language (seeded by its uniform cell) on the rows it reads (those of
    :func:`biasdask.study.cells.cell_words`): its cells' values and null. Its permutations run in the
    task (a few words). ``word_sets``: where its word sets come from, or, for a test of the study's
    ``word_sets`` files, the word sets (:class:`~biasdask.study.plan.ClassicWork`)."""
    sets = word_sets if isinstance(word_sets, WordSets) else None
    if sets is not None:
        options = {**options, "sets": sets}
        word_sets = file_word_sets(sets)
    source = options.pop("source", None)
    if source is not None:  # a placebo needs the whole vocabulary: the test reads its rows there too
        rows = open_embeddings(source) if isinstance(source, Location) else source
    placebo_note = ""
    try:
        with dask.config.set(scheduler="synchronous"):
            try:
                res = run_cell(test, rows, language=code, set_metric_words=set_metric_words, client=None, **options)
            except PlaceboUnavailableError as err:  # a vocabulary of little more than the test's words
                placebo_note = f"no placebo: {str(err).removeprefix('placebo: ')}"
                options = {**options, "resampling": options["resampling"].replace(placebo=None)}
                res = run_cell(test, rows, language=code, set_metric_words=set_metric_words, client=None, **options)
        values, null = cell_values(res), res.null_distribution
        values.update(_empty_p_note(test, res))
    except CoverageError as err:  # logged by the client (this may run on a worker)
        values, null = cell_values(err, note=f"coverage: {err}"), None
    if placebo_note:
        values["note"] = "; ".join(v for v in (values.get("note", ""), placebo_note) if v)
    values.update(t_method="none", u_association="none", word_sets=word_sets)
    return ClassicResult(values, null)


def _empty_p_note(test: str, res: Any) -> dict[str, str]:
    """Why a classic cell has no p-value, as its note (nothing when it has one)."""
    if res.n_permutations == 0:  # a set metric without a null (MAC)
        return {
            "note": f"no p-value: {test} has no permutation null (relabelling the groups' words leaves it unchanged)"
        }
    if math.isnan(res.statistic):  # undefined is not significant: p is NaN (ECT on one word, NAS with no spread)
        return {
            "note": f"no p-value: {test} is undefined (NaN) on these words (one word, words sharing one vector, or no spread)"
        }
    return {}
