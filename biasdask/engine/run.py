"""A study run: every (language, method, test) cell, on whatever cluster is at hand, into the cube.

The run is one bounded stream of tasks on the active scheduler (a ``distributed`` client, else
threads of this process). :func:`biasdask.engine.plan.plan_language` decides, without touching data, what each language
needs: cells written at once with a note (not applicable, no frequency list), *families* of
permutation cells (the weightings of each full-vocabulary test and association: ``gender``,
``gender.ripa``, ``context``...) and classic cells. Then, for up to
``biasdask.run.languages-in-flight`` languages at a time: a task reads a family's attribute rows and
returns its attribute sets and axes, with which the family's scores graph is built (in a thread of
the client, which holds no vocabulary: a task found the words it looks up) and submitted; a task prepares its pool from the scores where
they were computed (one pool for all the family's weightings:
:func:`biasdask.engine.permutation.prepare_pools`), batch tasks of about ``biasdask.batch-duration``
depend on that pool (so it travels only to the workers that run them), and a last task assembles the
family's results. A classic cell is one task on the few rows it reads (:func:`_cell_rows`), loaded by
one task for all the language's classic cells. Tasks of earlier languages go first. The client's loop only plans, submits, writes each cell
the moment its results arrive (in any order) and starts the next language as one finishes; a
language's per-word scores are written by a task, where they were computed (they never travel to the
client; the words come from the embedding store).

Cells already marked done in the results store are skipped, so a killed run resumes where it stopped.
The weightings of a family share one seed (that of its ``uniform`` cell,
:func:`biasdask.engine.plan.family_seed`) and so
every split: results do not depend on which cells a run computes together, on the scheduler or on the
number of workers.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import dask.system
import numpy as np
import xarray as xr
from distributed import Client
from tqdm import tqdm

from biasdask.config import StudyConfig, cube_label, load_config, parse_config, split_label
from biasdask.engine.cells import cell_values, cell_word_sets, cell_words, run_cell
from biasdask.engine.cluster import active_client, client_scope, n_slots, workers_keep_freed_memory
from biasdask.engine.inference import adjusted_pvalues, correction_warning
from biasdask.engine.permutation import batch_plan, finish_pools, kernel_rate, pools_batch, prepare_pools
from biasdask.engine.placebo import PlaceboResult, placebo_forbidden, plan_placebo, run_placebo, weights_from_scores
from biasdask.engine.plan import (
    LanguagePlan,
    applicable_tests,
    cell_seed,
    family_seed,
    is_family,
    languages_in_flight,
    plan_language,
)
from biasdask.engine.scores import (
    _attribute_vectors,
    as_terms,
    attributes_graph,
    excluded_targets,
    forget_words,
    found_words,
    frequency_unavailable,
    nfc,
    positions,
    scores_graph,
)
from biasdask.engine.tasks import Tasks
from biasdask.engine.update import check_changes, prepare_update, run_attrs
from biasdask.errors import (
    BiasdaskError,
    BiasdaskTypeError,
    ConfigError,
    CorruptStoreError,
    MissingWordsError,
    PlaceboUnavailableError,
)
from biasdask.io import results as rs
from biasdask.io.embeddings import as_embeddings
from biasdask.io.fs import Location, as_location, display_url, nesting
from biasdask.io.store import (
    find_words,
    open_embeddings,
    open_vectors,
    read_chunk,
    stored_vectors,
    vocabulary_files,
)
from biasdask.io.swap import acquire_lock
from biasdask.lexicon import AttributeTerm, context_words
from biasdask.progress import progress_bar
from biasdask.stats.placebo import merge_moments, weighted_effect_size
from biasdask.stats.resampling import Resampling

log = logging.getLogger(__name__)


def _as_config(config: StudyConfig | dict | str | Path, output: str | None) -> StudyConfig:
    if isinstance(config, StudyConfig):
        return config
    if isinstance(config, dict):
        return parse_config(config, output=output)
    return load_config(config, output=output)


def run(
    config: StudyConfig | dict | str | Path,
    *,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    output: str | None = None,
    overwrite: bool = False,
    update: bool = False,
    progress: bool | None = None,
    start_cluster: bool = False,
) -> xr.Dataset:
    """Run a study and return its results cube.

    Parameters
    ----------
    config
        A :class:`~biasdask.config.StudyConfig`, a mapping, or the path of a study YAML file. From
        Python, a language's ``store`` may be any embedding :func:`biasdask.as_embeddings` accepts
        (e.g. ``{"languages": {"en": {"store": kv}}}`` with a gensim ``KeyedVectors``).
    client, scheduler, n_workers
        Where to run. By default the ``client`` given, else the current ``distributed`` client, else
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
        added or removed, a language's store or attribute words changed. The affected and new cells are
        computed; every other cell is kept bit for bit (see :mod:`biasdask.engine.update`). Without it a
        changed study is refused, naming the changed keys, before anything starts.
    progress
        Show progress bars (default: only when stderr is a terminal). The dashboard link of a
        cluster is logged at INFO (logger ``biasdask.engine.run``).
    start_cluster
        Find or start a cluster as with ``scheduler`` or ``n_workers`` even without them (what
        ``biasdask run`` does), once the stores are checked.

    Returns
    -------
    xarray.Dataset
        The results cube (dims ``language``, ``method``, ``test``), as :func:`open_results` reads it.

    Raises
    ------
    StoreConflictError
        Another run (or ingest) is writing to ``output``: the run holds the lock ``<output>.lock``
        (:class:`biasdask.io.swap.StoreLock`) for its whole life, and a second one stops at once,
        naming the holder.
    BiasdaskError
        Before the results store is created or changed: an invalid ``n_workers``, an ``output`` that is,
        lies inside or contains an embedding store of the study, a store that is missing, incomplete,
        missing a chunk or of another language, an unreachable cluster. After every
        runnable cell is written, if in some language no attribute word of A (or of B) is in the
        vocabulary: its ``gender`` cells stay NaN with a note naming the words, the message names them
        too; likewise, naming the chunk, if a language's stored bytes fail their checksum when read
        (its words as the language starts, its vectors in its tasks). A missing attribute word (of
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
    _check_output_apart(cfg)
    with acquire_lock(Location(cfg.output, options)):  # one writer per results store, for the run's life
        return _run_locked(cfg, options, client, scheduler, n_workers, overwrite, update, progress, start_cluster)


def _run_locked(
    cfg: StudyConfig, options: dict, client, scheduler, n_workers, overwrite, update, progress, start_cluster
) -> xr.Dataset:
    """:func:`run` once the study is checked, holding the lock of its results store."""
    changes = check_changes(cfg, options, overwrite=overwrite, update=update)
    weak = correction_warning(len(cfg.languages), cfg.n_permutations, correction=cfg.correction, alpha=cfg.alpha)
    if weak:
        log.warning("%s", weak)
    # The stores are checked and opened first, without their words (metadata and listings: milliseconds
    # each), in parallel threads, before anything is written; each language starts once a task has found
    # its words, and a word chunk failing its checksum there fails that language only.
    with concurrent.futures.ThreadPoolExecutor(min(8, len(cfg.languages))) as pool:
        embeddings = list(pool.map(lambda lang: _check_language(lang, options), cfg.languages))
    final, fresh = cfg.output, None
    if changes is not None:
        fresh = prepare_update(cfg, options, changes)
        cfg = dataclasses.replace(cfg, output=fresh)
    stores = {lang.code: emb for lang, emb in zip(cfg.languages, embeddings)}
    with rs.run_recorded(Location(cfg.output, options), cfg.canonical_yaml()):  # why a run stopped, in the cube
        failures = _run_checked(cfg, options, stores, client, scheduler, n_workers, overwrite, progress, start_cluster)
        rs.compact_results(Location(cfg.output, options))
        _write_adjusted(cfg, options)
    if fresh is not None:
        rs.replace_results(Location(fresh, options), Location(final, options))
    if failures:
        raise BiasdaskError(f"{len(failures)} language(s) with cells not run, left empty: " + "; ".join(failures))
    return rs.open_results(Location(final, options))


def _write_adjusted(cfg: StudyConfig, options: dict) -> None:
    """The cube's p-values corrected over their families (:mod:`biasdask.engine.inference`), written whole."""
    cube = rs.open_results(Location(cfg.output, options))
    for variable in ("p_value", "p_value_placebo"):
        adjusted = adjusted_pvalues(cube, variable, correction=cfg.correction)
        rs.write_cube_variable(
            Location(cfg.output, options),
            f"{variable}_adjusted",
            adjusted.transpose(*rs.DIMS).values,
            {"correction": cfg.correction, "alpha": cfg.alpha},
        )


def _run_checked(
    cfg: StudyConfig, options: dict, stores: dict, client, scheduler, n_workers, overwrite, progress, start_cluster
) -> list[str]:
    """:func:`run` once every store is checked: find or start the cluster, create (or resume) the
    results store, run the stream; return the failures."""
    failures: list[str] = []
    if scheduler or n_workers or start_cluster:
        scope = client_scope(client, scheduler, n_workers)
    else:
        scope = contextlib.nullcontext(active_client(client))
    total = len(cfg.languages) * len(cfg.methods) * len(cfg.test_labels())
    out = Location(cfg.output, options)
    with scope as c:
        rs.create_results(
            out,
            languages=[lang.code for lang in cfg.languages],
            methods=list(cfg.methods),
            tests=list(cfg.test_labels()),
            attrs=run_attrs(cfg),
            config_text=cfg.canonical_yaml(),
            overwrite=overwrite,
        )
        rs.compact_results(out)  # a resumed run: fold the cells it found
        done = rs.done_cells(out)
        if c is not None:
            log.info("running on Dask scheduler %s; dashboard: %s", c.scheduler.address, c.dashboard_link)
        with (
            progress_bar(progress, total=total, initial=len(done), desc="cells", unit="cell") as bar,
            workers_keep_freed_memory(c),  # chunks read for u: without it, 2-3x the time of one process
        ):
            # where the workers write per-word scores: asked of a worker while the first languages start
            # (its answer is needed only by the first scores write)
            with concurrent.futures.ThreadPoolExecutor(1) as probe:
                destination = probe.submit(_scores_destination, c, out)
                stream = _Stream(cfg, out, c, _CellWriter(cfg, out, bar), destination)
                failures += stream.run(stores, done)
    return failures


def _words(words) -> str:
    return ", ".join(words)


def _absent(emb: xr.Dataset, words) -> list[str]:
    """Labels of the attribute words (or IAT terms) none of whose tokens is in the vocabulary."""
    terms = [w if isinstance(w, AttributeTerm) else AttributeTerm(w, ((w,),)) for w in words]
    tokens = [tok for term in terms for tok in term.tokens]
    found = {tok for tok, pos in zip(tokens, positions(emb, tokens)) if pos >= 0}
    return [term.label for term in terms if not found.intersection(term.tokens)]


def _missing_words(missing_a, missing_b) -> str:
    """``"A: foo, bar; B: baz"`` for the attribute words absent from a vocabulary (empty if none)."""
    return "; ".join(f"{side}: {_words(ws)}" for side, ws in (("A", missing_a), ("B", missing_b)) if ws)


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


def _check_language(lang, options: dict) -> xr.Dataset:
    """A study language's embedding, checked before anything runs: a store URL opened and verified (of
    this language) without its words (a task finds those the language needs: :func:`_words_to_find`);
    an in-memory form converted (see :func:`biasdask.as_embeddings`)."""
    if isinstance(lang.store, (str, os.PathLike)):
        return open_vectors(Location(os.fspath(lang.store), options), language=lang.code)
    return as_embeddings(lang.store)


def _vocabulary_words(emb: xr.Dataset, max_words: int | None) -> Iterator[str]:
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


def _words_to_find(cfg: StudyConfig, lang, emb: xr.Dataset) -> list[str]:
    """Every word (NFC) that a language's scores graphs, placebo plans and classic cells look up in its
    vocabulary, found by one task for a store opened without its words."""
    labels = applicable_tests(cfg, lang.code)
    groups = [(lang.a, lang.b)]
    if any(split_label(t)[0] == "context" for t in labels):
        context = context_words()
        groups.append((context.female, context.male))
    words: list[str] = []
    for a, b in groups:
        tokens = [t for term in as_terms([*a, *b]) for t in term.tokens]
        words += [*tokens, *excluded_targets(a, b, cfg.exclude_attributes, cfg.exclude_words)]
        if cfg.placebo:
            words += placebo_forbidden(emb, cfg.placebo_exclude, nfc(tokens))
    for label in labels:
        if not is_family(label):
            words += cell_words(label, lang.code, model=cfg.iat_model, set_metric_words=lang.set_metric_words)
    return sorted(set(nfc(words)))


#: the most worker processes a local cluster may be asked for
MAX_LOCAL_WORKERS = 4 * dask.system.CPU_COUNT


def check_n_workers(n_workers: int | None) -> None:
    """Raise unless ``n_workers`` is None or 0 to :data:`MAX_LOCAL_WORKERS` (4 per core)."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)):
        raise BiasdaskTypeError(f"n_workers: expected an integer, got {n_workers!r}")
    if not 0 <= n_workers <= MAX_LOCAL_WORKERS:
        raise BiasdaskError(
            f"n_workers: expected 0 to {MAX_LOCAL_WORKERS} (4 per core of this machine), got {n_workers}"
        )


def _with_associations(computed: dict) -> xr.Dataset:
    """Cosine's scores with every other association's u and t added as ``u_<name>``, ``t_<name>``."""
    out = computed["cosine"]
    for association, sc in computed.items():
        if association != "cosine":
            out = out.assign({f"u_{association}": sc["u"], f"t_{association}": sc["t"]})
    out.attrs["associations"] = list(computed)
    return out


class _CellWriter:
    """Writes finished cells (the null first, then the cell's record) and advances the bar."""

    def __init__(self, cfg: StudyConfig, out: Location, bar: tqdm) -> None:
        self.cfg, self.out, self.bar = cfg, out, bar

    def __call__(self, language: str, method: str, test: str, values: dict, null=None, placebo=None) -> None:
        if self.cfg.save_null and null is not None:
            rs.write_null(self.out, language, method, test, null)
        if self.cfg.save_null and placebo is not None:
            rs.write_null(self.out, language, method, test, placebo, kind="placebo")
        rs.write_cell(self.out, language, method, test, values)
        self.bar.update()


# ----------------------------------------------------------------------------------------------
# Submission: thin. Tasks run on the client's workers, or in threads of this process
# (:class:`biasdask.engine.tasks.Tasks`).


def _rows(piece) -> list[np.ndarray]:
    """The rows (u stacked on t) of a computed piece of scores: a chunk; a chunk's (rows, placebo
    moments) pair; or, without a ``distributed`` client, the list of every chunk's pair."""
    if isinstance(piece, list):
        return [rows for rows, _ in piece]
    return [piece[0]] if isinstance(piece, tuple) else [piece]


def _moments(pieces) -> list:
    """The placebo moments of computed pieces of scores (pairs, or lists of them; a pair holds one
    chunk's moments or a list of its chunks'), in chunk order."""
    pairs = [pair for piece in pieces for pair in (piece if isinstance(piece, list) else [piece])]
    return [m for _, ms in pairs for m in (ms if isinstance(ms, list) else [ms])]


def _joined(pieces: tuple) -> np.ndarray:
    """The rows of computed pieces of scores (see :func:`_rows`), in chunk order, as one array."""
    chunks = [rows for piece in pieces for rows in _rows(piece)]
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=-1)


@dataclass(frozen=True)
class _ScoresPart:
    """What a task needs, besides the computed rows, to rebuild one association's per-word scores
    (:func:`scores_graph`'s Dataset) where they were computed: the words come from the store when
    the embedding is one (the task copies its encoded word chunks), else with the task."""

    methods: tuple[str, ...]
    attrs: dict
    n_words: int
    store: Location | None = None
    words: np.ndarray | None = None
    rank: np.ndarray | None = None  # None: 1..n_words (a store's)

    @classmethod
    def of(cls, sc: xr.Dataset, emb: xr.Dataset) -> _ScoresPart:
        stored = stored_vectors(emb["vectors"].data)
        common = dict(
            methods=tuple(str(m) for m in sc["method"].values), attrs=dict(sc.attrs), n_words=sc.sizes["word"]
        )
        if stored is not None:
            return cls(**common, store=stored.location)
        return cls(**common, words=np.asarray(sc["word"].values), rank=np.asarray(sc["rank"].values))

    def dataset(self, computed: tuple, words: np.ndarray | None) -> xr.Dataset:
        """The scores from the computed ``(u stacked on t, attributes found)`` (without ``words``: no
        ``word`` coordinate)."""
        stacked, found = computed
        rank = np.arange(1, self.n_words + 1, dtype=np.int64) if self.rank is None else self.rank
        return xr.Dataset(
            {"u": (("word",), stacked[0]), "t": (("method", "word"), stacked[1:])},
            coords={**({} if words is None else {"word": words}), "rank": ("word", rank), "method": list(self.methods)},
            attrs={**self.attrs, **found},
        )


def _write_scores(loc: Location, code: str, parts: list[tuple[str, _ScoresPart]], counts: list[int], *computed) -> None:
    """Task: write a language's per-word scores (every association's, cosine's first) into the results;
    a store's words are copied from it as stored (no decoding and encoding of millions of strings).
    ``computed``: for each association in turn, ``counts[i]`` chunks of u stacked on t, then its
    attributes found."""
    first = parts[0][1]
    scores, at = {}, 0
    for (association, part), n in zip(parts, counts):
        scores[association] = part.dataset((_joined(computed[at : at + n]), computed[at + n]), first.words)
        at += n + 1
    scores = _with_associations(scores)
    words_from = None if first.store is None else vocabulary_files(first.store, first.n_words)
    rs.write_scores(loc, code, scores, words_from=words_from)


def _write_gathered_scores(
    loc: Location, code: str, parts: list[tuple[str, _ScoresPart]], counts: list[int], computed: list
) -> None:
    """In a thread of the client: :func:`_write_scores` from the language's computed scores, gathered here."""
    _write_scores(loc, code, parts, counts, *(f.result() for f in computed))


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


@dataclass
class _Family:
    """A permutation family in flight: its cells' shared values, and the futures it holds."""

    methods: tuple[str, ...]
    values: dict[str, Any]
    futures: list = field(default_factory=list)
    pool: Any = None


def _family_pools(rows: list[int], n_permutations: int, alternative: str, seed: int, *pieces):
    """Task: the family's pool from its scores (the chunks of u stacked on t), on a worker that computed
    some, and each weighting's weighted effect size (:func:`weighted_effect_sizes`); None if no word is
    usable."""
    ut = _joined(pieces)
    u, t = ut[0], ut[1:]
    keep = np.isfinite(u)
    if not keep.any():
        return None
    pools = prepare_pools(t[rows][:, keep], int(keep.sum()), n_permutations, alternative, seed, effect_x=u[keep])
    return pools, weighted_effect_sizes(u[keep], t[rows][:, keep])


def weighted_effect_sizes(u: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The weighted effect size of each weighting (rows of ``t`` = z·u, float32 as the scores hold them)
    of a full-vocabulary test: X's u with weights z (:func:`biasdask.engine.placebo.weights_from_scores`)
    against the dummy language (zeros carrying X's weights),
    :func:`biasdask.stats.placebo.weighted_effect_size`; its sign is that of s = Σ t."""
    u64 = u.astype(np.float64)
    return np.array([weighted_effect_size(u64, z, np.zeros_like(u64), z) for z in weights_from_scores(u64, t)])


def _family_batch(pool, start: int, stop: int):
    """Task: permutations [start, stop) of a family's pool (None: no usable word)."""
    return None if pool is None else pools_batch(pool[0], start, stop)


def _family_cells(pool, placebo, *batches, return_null: bool):
    """Task: the family's results from its batches, its weighted effect sizes, and its placebo comparison
    for each result's resolved alternative (None: no usable word)."""
    if pool is None:
        return None
    results = finish_pools(pool[0], *batches, return_null=return_null)
    if isinstance(placebo, PlaceboResult):
        placebo = placebo.with_alternative([r.alternative for r in results])
    return results, pool[1], placebo


def _vector_source(emb: xr.Dataset):
    """How a task reaches a language's vectors: its store's location, else the in-memory Dataset."""
    stored = stored_vectors(emb["vectors"].data)
    return stored.location if stored is not None else emb


def _family_placebo(job: dict, rows: list[int], *pieces):
    """Task: the family's placebo comparison (:func:`biasdask.engine.placebo.run_placebo`) from its
    scores and the moments gathered with them (each chunk's pair, see :func:`_rows`), for its
    weightings ``rows``; the reason as text where there can be none."""
    ut = _joined(pieces)
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


def _cell_rows(emb: xr.Dataset, tests, code: str, cfg: StudyConfig, set_metric_words) -> xr.Dataset:
    """The rows of ``emb`` that the classic cells ``tests`` read (:func:`cell_words`; each word's first
    row), not read yet: the task that loads them reads only the chunks that hold them. A cell gives
    the same result on these rows as on the whole vocabulary (it looks up only its own words)."""
    words = list(
        dict.fromkeys(
            w for test in tests for w in cell_words(test, code, model=cfg.iat_model, set_metric_words=set_metric_words)
        )
    )
    pos = positions(emb, words) if words else np.empty(0, dtype=np.int64)
    rows = np.unique(pos[pos >= 0])
    if "word" in emb.coords:
        return emb.isel(word=rows)
    at = dict(zip(pos.tolist(), nfc(words)))  # a store's words are unique and NFC: the word asked for
    return emb.isel(word=rows).assign_coords(word=("word", np.array([at[r] for r in rows.tolist()], dtype=object)))


def _classic_cell(
    rows: xr.Dataset, test: str, code: str, set_metric_words, word_sets: str, options: dict
) -> tuple[dict, Any]:
    """Task: one classic test of a language (seeded by its uniform cell) on the rows it reads (see
    :func:`_cell_rows`): its cells' values and null. Its permutations run in the task (a few words)."""
    from biasdask.engine.weat import CoverageError

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
        if res.n_permutations == 0:  # a set metric without a null (MAC): say why p is empty
            values["note"] = (
                f"no p-value: {test} has no permutation null (relabelling the groups' words leaves it unchanged)"
            )
        elif math.isnan(res.statistic):  # undefined is not significant: p is NaN (ECT on one word, NAS with no spread)
            values["note"] = (
                f"no p-value: {test} is undefined (NaN) on these words (one word, words sharing one vector, or no spread)"
            )
    except CoverageError as err:  # logged by the client (this may run on a worker)
        values, null = cell_values(err, note=f"coverage: {err}"), None
    if placebo_note:
        values["note"] = "; ".join(v for v in (values.get("note", ""), placebo_note) if v)
    values.update(weighting="none", u_association="none", word_sets=word_sets)
    return values, null


#: added to a language's priority for its reads, pools and scores writes (see _Stream)
# What the stream's tasks report on the executor's queue when they finish, one type per kind.


@dataclass(frozen=True, eq=False)
class _GraphBuilt:
    """A family's scores graph is built (or failed to be): submit its work."""

    code: str
    label: str
    lang: Any
    emb: xr.Dataset
    plan: LanguagePlan


@dataclass(frozen=True, eq=False)
class _WordsFound:
    """The words a language needs are found in its store (opened without its words): start it."""

    code: str
    lang: Any
    emb: xr.Dataset
    words: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class _ScoresWritten:
    """A language's per-word scores are written; ``held`` are the futures of its scores."""

    code: str
    held: Sequence


@dataclass(frozen=True, eq=False)
class _FamilyDone:
    """The cells of a family (a full-vocabulary test's weightings) are computed."""

    code: str
    test: str


@dataclass(frozen=True, eq=False)
class _ClassicDone:
    """A classic cell is computed; its result fills the cells of ``methods``."""

    code: str
    test: str
    methods: tuple[str, ...]


_PREPARE_FIRST = 1_000_000


class _Stream:
    """The run's event loop: start languages (up to the bound), react to each finished task."""

    def __init__(
        self,
        cfg: StudyConfig,
        out: Location,
        client: Client | None,
        write: _CellWriter,
        scores_loc: concurrent.futures.Future,
    ) -> None:
        self.cfg, self.out, self.client, self.write = cfg, out, client, write
        self.scores_loc = scores_loc  # of _scores_destination
        self.slots = n_slots(client)
        self.rate = kernel_rate(client)  # of the workers' kernel: sizes the permutation batches
        self.tasks = Tasks(client, self.slots)
        self.failures: list[str] = []
        self.pending: dict[str, int] = {}  # language -> tagged tasks not yet handled
        self.families: dict[tuple[str, str], _Family] = {}
        self.scores_parts: dict[str, tuple[list[str], dict[str, tuple]]] = {}  # see _scores_part
        self.langs = {lang.code: lang for lang in cfg.languages}
        self.waiting: list = []  # languages not started yet
        # full-vocabulary families not planned yet, by language (from the tests that apply until the
        # language's plan says): with those running, they share the worker threads among them
        self.to_plan = {lang.code: sum(map(is_family, applicable_tests(cfg, lang.code))) for lang in cfg.languages}
        self.found: list[xr.Dataset] = []  # stores opened without their words, whose words a task found
        self.done: set = set()
        # Among tasks ready at once, a distributed scheduler runs the higher priority first: an earlier
        # language's permutations before a later one's, so cells are written while the later ones run.
        # Every language's reads (attributes, scores), pools and scores writes go before any permutation
        # batch: the long write of a language's scores no longer waits behind the batches of earlier
        # languages and then runs alone at the end; the run's tail is short batches, spread over the
        # workers. (Even numbers: a family's pool task goes one above its language's reads.)
        self.priority = {lang.code: -2 * i for i, lang in enumerate(cfg.languages)}
        self.prepare = {code: _PREPARE_FIRST + p for code, p in self.priority.items()}

    def run(self, stores: dict[str, xr.Dataset], done: set) -> list[str]:
        """Run every language's missing work (``stores``: each language's embedding, opened); return the
        failures (one line per language)."""
        waiting = self.waiting = list(self.cfg.languages)
        self.done = done
        limit = languages_in_flight(self.slots)
        try:
            while waiting or self.pending:
                # in the study's order; meanwhile the loop handles what the started languages report
                while waiting and len(self.pending) < limit:
                    lang = waiting.pop(0)
                    try:
                        self._start(lang, stores[lang.code], done)
                    except MissingWordsError as exc:  # attribute words of a test other than gender
                        self._fail(lang.code, exc)
                        log.warning("skipped language %s: %s", lang.code, exc)
                    if not self.pending.get(lang.code):
                        self.pending.pop(lang.code, None)
                if self.pending:
                    self._handle(*self.tasks.finished.get())
        finally:
            self.tasks.close()
            for emb in self.found:
                forget_words(emb)
        return self.failures

    # -- starting a language ------------------------------------------------------------------

    def _count(self, code: str, n: int = 1) -> None:
        self.pending[code] = self.pending.get(code, 0) + n
        if self.pending[code] == 0:
            del self.pending[code]

    def _start(self, lang, emb: xr.Dataset, done: set) -> None:
        """Start a language: at once when its words are in memory; for a store opened without its words,
        once a task has found those it needs (:class:`_WordsFound`)."""
        if "word" in emb.coords:
            self._begin(lang, emb, done)
            return
        words = _words_to_find(self.cfg, lang, emb)
        self.found.append(emb)
        self.tasks.submit(
            find_words,
            stored_vectors(emb["vectors"].data).location,
            words,
            tag=_WordsFound(lang.code, lang, emb, tuple(words)),
            priority=self.prepare[lang.code],
        )
        self._count(lang.code)

    def _begin(self, lang, emb: xr.Dataset, done: set) -> None:
        cfg = self.cfg
        need_scores = cfg.save_scores and not rs.scores_done(self.out, lang.code)
        no_frequency = None
        if "frequency" in cfg.methods:
            # a vocabulary none of whose targets is in wordfreq's list cannot be weighted: a note, not a
            # failed run (the scan stops at the first word found)
            excluded = excluded_targets(lang.a, lang.b, cfg.exclude_attributes, cfg.exclude_words)
            targets = (w for w in _vocabulary_words(emb, cfg.max_words) if w not in excluded)
            no_frequency = frequency_unavailable(str(emb.attrs.get("language", "")), targets)
        plan = plan_language(
            cfg,
            lang.code,
            done,
            need_scores=need_scores,
            applicable=applicable_tests(cfg, lang.code),
            no_frequency=no_frequency,
        )
        self.to_plan[lang.code] = len(plan.families)
        if plan.idle:
            return
        if no_frequency is not None and any(m == "frequency" for m, t, _ in plan.notes if is_family(t)):
            log.warning("%s: %s; its 'frequency' cells are left empty with a note", lang.code, no_frequency)
        self.pending[lang.code] = 0
        for method, test, values in plan.notes:
            self.write(lang.code, method, test, values)
        # Building a scores graph reads the attribute rows (and more) in this process: a thread does
        # it, so that this loop keeps writing cells and feeding the workers meanwhile.
        # One chunked pass per association (cosine's too when the scores are saved: the stored u and t
        # are cosine's, another association's are u_<name>, t_<name>).
        associations = tuple(dict.fromkeys((*(("cosine",) if plan.need_scores else ()), *cfg.associations)))
        if plan.need_scores:
            self.scores_parts[lang.code] = ([cube_label("gender", a) for a in associations], {})
        for label in [cube_label("gender", a) for a in associations]:
            if label in plan.families or plan.need_scores:
                self.tasks.beside(
                    self._gender_graph, lang, emb, plan, label, tag=_GraphBuilt(lang.code, label, lang, emb, plan)
                )
                self._count(lang.code)
        for label in [t for t in plan.families if split_label(t)[0] == "context"]:
            self.tasks.beside(
                self._context_graph, lang, emb, plan, label, tag=_GraphBuilt(lang.code, label, lang, emb, plan)
            )
            self._count(lang.code)
        options = dict(
            similarity=cfg.similarity,
            min_coverage=cfg.min_coverage,
            model=cfg.iat_model,
            return_null=cfg.save_null,
            ci_level=cfg.ci_level,
        )
        rank = self.priority[lang.code]
        if plan.classic:
            rows = self.tasks.load(_cell_rows(emb, plan.classic, lang.code, cfg, lang.set_metric_words), priority=rank)
        for test, methods in plan.classic.items():
            resampling = Resampling(
                n_permutations=cfg.n_permutations,
                alternative=cfg.alternative,
                seed=cell_seed(cfg.seed, lang.code, "uniform", test),
                batch_size=cfg.batch_size,
                placebo=cfg.placebo or None,
                placebo_exclude=cfg.placebo_exclude,
            )
            word_sets = cell_word_sets(test, lang.code, model=cfg.iat_model, set_metric_words=lang.set_metric_words)
            extra = {"resampling": resampling}
            if cfg.placebo:  # placebo words come from the whole vocabulary
                extra["source"] = _vector_source(emb)
            self.tasks.submit(
                _classic_cell,
                rows,
                test,
                lang.code,
                lang.set_metric_words,
                word_sets,
                {**options, **extra},
                tag=_ClassicDone(lang.code, test, tuple(methods)),
                priority=rank,
            )
            self._count(lang.code)

    def _gender_graph(self, lang, emb: xr.Dataset, plan: LanguagePlan, label: str):
        """(scores graph, u stacked on t, its delayed attributes, the delayed placebo moments of its chunks
        or None, the computed attribute sets): the attribute rows are read by a task, whose few values
        this thread (not the loop) waits for; the graph is then built with them, so that no task of it
        runs twice under two names."""
        cfg = self.cfg
        return self._vocabulary_graph(
            lang.code,
            emb,
            plan,
            label,
            lang.a,
            lang.b,
            exclude_attributes=cfg.exclude_attributes,
            exclude_words=cfg.exclude_words,
            dedupe_vectors=cfg.dedupe_vectors,
        )

    def _context_graph(self, lang, emb: xr.Dataset, plan: LanguagePlan, label: str):
        """:meth:`_gender_graph` of Valentini et al.'s context words (:func:`biasdask.engine.frequency.context_scores`)."""
        words = context_words()  # the 16 context words are left out of the targets, as Valentini et al.'s Table 3 does
        return self._vocabulary_graph(
            lang.code, emb, plan, label, words.female, words.male, exclude_words=(*words.female, *words.male)
        )

    def _vocabulary_graph(self, code: str, emb: xr.Dataset, plan: LanguagePlan, label: str, a, b, **options):
        association = split_label(label)[1]
        future = self.tasks.compute(attributes_graph(emb, a, b, association), priority=self.prepare[code])
        try:
            (attributes,) = future.result()
        finally:
            self.tasks.release([future])
        # the placebo's moments are gathered where u is computed, in the same read
        moments = bool(self.cfg.placebo and plan.families.get(label))
        graph = scores_graph(
            emb,
            a,
            b,
            methods=plan.score_methods if plan.need_scores else plan.families[label],
            association=association,
            max_words=self.cfg.max_words,
            attributes=attributes,
            moments=moments,
            **options,
        )
        placebo = self._placebo_plan(emb, code, a, b, attributes, association) if moments else None
        return *graph, attributes, placebo

    def _placebo_plan(self, emb: xr.Dataset, code: str, a, b, attributes, association: str):
        """The :class:`~biasdask.engine.placebo.PlaceboPlan` of a family (its words looked up in the
        thread that builds its graph, not in the loop)."""
        _, set_a, set_b = attributes
        return plan_placebo(
            emb,
            a,
            b,
            used=(set_a.used, set_b.used),
            association=association,
            exclude=self.cfg.placebo_exclude,
            attribute_vectors=_attribute_vectors(association, as_terms(a), as_terms(b), set_a, set_b, code),
        )

    def _placebo_job(self, plan, moments) -> dict:
        """What a family's placebo task needs (its seed is added by the family)."""
        return {"plan": plan, "n": self.cfg.placebo, "ci_level": self.cfg.ci_level, "moments": moments}

    def _graph_ready(self, label: str, lang, emb: xr.Dataset, plan: LanguagePlan, future) -> None:
        """Submit a family's work once its scores graph is built (or note why it cannot run)."""
        test, association = split_label(label)
        if test == "context":
            try:
                sc, stacked, meta, moments, _, placebo_plan = future.result()
            except MissingWordsError as exc:
                self._fail(lang.code, exc)
                log.warning("%s: %s test not run: %s", lang.code, label, exc)
                return
            values = {"weighting": None, "u_association": association}
            job = self._placebo_job(placebo_plan, moments) if self.cfg.placebo else None
            self._start_family(lang.code, label, sc, stacked, meta, plan.families[label], values, -1, -1, placebo=job)
            return
        gender = plan.families.get(label, ())
        try:
            sc, stacked, meta, moments, (_, set_a, set_b), placebo_plan = future.result()
        except MissingWordsError as exc:  # no usable attribute word of A (or of B) in the vocabulary
            missing = _missing_words(_absent(emb, lang.a), _absent(emb, lang.b))
            note = f"missing attribute words: none of A or of B is usable ({missing}): {exc}"
            log.warning("%s: %s test not run: %s", lang.code, label, exc)
            for method in gender:
                self.write(
                    lang.code,
                    method,
                    label,
                    {
                        "weighting": method,
                        "u_association": association,
                        "attribute_set": lang.attribute_set,
                        "word_sets": lang.attribute_set,
                        "note": note,
                    },
                )
            self._fail(lang.code, exc)
            self._scores_part(lang.code, label, None)
            return
        missing = _missing_words(
            [*set_a.missing, *(f"{w} (zero vector)" for w in set_a.zero)],
            [*set_b.missing, *(f"{w} (zero vector)" for w in set_b.zero)],
        )
        values = {
            "u_association": association,
            "attribute_set": lang.attribute_set,
            "word_sets": lang.attribute_set,
            "attribute_words_a": _words(set_a.used),
            "attribute_words_b": _words(set_b.used),
            "missing_attribute_words": missing,
        }
        if missing and gender:
            log.warning("%s: attribute words not in the vocabulary, left out: %s", lang.code, missing)
            values["note"] = f"warning: attribute words not in the vocabulary, left out: {missing}"
        job = None
        if self.cfg.placebo and gender:
            job = self._placebo_job(placebo_plan, moments)
        computed = self._start_family(
            lang.code, label, sc, stacked, meta, gender, values, len(set_a.used), len(set_b.used), placebo=job
        )
        if plan.need_scores:  # written by a task where they were computed, once every association's are submitted
            self._scores_part(lang.code, label, (_ScoresPart.of(sc, emb), computed))

    def _fail(self, code: str, exc: Exception) -> None:
        self.to_plan.pop(code, None)
        line = f"{code}: {exc}"
        if line not in self.failures:
            self.failures.append(line)

    def _scores_part(self, code: str, label: str, part: tuple | None) -> None:
        """Collect one association's scores (``(its _ScoresPart, (the futures of the chunks of u stacked on
        t, the future of the attributes found))``; None: it failed); once all of the language's associations are in, if cosine's is
        among them, a task writes its scores (in the study's order), where they were computed."""
        if code not in self.scores_parts:
            return
        expected, got = self.scores_parts[code]
        if part is None:
            expected.remove(label)
        else:
            got[label] = part
        if len(got) < len(expected):
            return
        del self.scores_parts[code]
        if cube_label("gender", "cosine") in got:
            parts = [(split_label(label)[1], got[label][0]) for label in expected]
            counts = [len(got[label][1][0]) for label in expected]
            computed = [f for label in expected for f in (*got[label][1][0], got[label][1][1])]
            loc = self.scores_loc.result()
            if loc is not None:
                self.tasks.submit(
                    _write_scores,
                    loc,
                    code,
                    parts,
                    counts,
                    *computed,
                    tag=_ScoresWritten(code, computed),
                    priority=self.prepare[code],
                )
            else:  # the workers do not see the results store: gathered and written here
                self.tasks.beside(
                    _write_gathered_scores,
                    self.out,
                    code,
                    parts,
                    counts,
                    computed,
                    tag=_ScoresWritten(code, computed),
                )
            self._count(code)

    def _start_family(
        self,
        code: str,
        test: str,
        sc: xr.Dataset,
        stacked,
        meta,
        methods: tuple[str, ...],
        values: dict,
        n_a,
        n_b,
        placebo: dict | None = None,
    ):
        """Submit the scores graph (``stacked``: u stacked on t, as :func:`scores_graph` builds it;
        None: from ``sc``; with ``meta``, the delayed attributes of gender scores) and, for ``methods``,
        the pool, its permutation batches and its cells; return the futures of the chunks of u stacked
        on t and of ``meta`` (None without)."""
        rank = self.priority[code]
        if stacked is None:
            # u and t as ONE array: given separately, u (inside t too) would be computed twice, once
            # per name Dask gives the two collections' tasks.
            stacked = da.concatenate([sc["u"].data[None, :], sc["t"].data])
        # with the placebo's moments, the pieces are the chunks' (rows, moments) pairs: the scores tasks'
        # own results, taken apart by the tasks that use them
        moments = None if placebo is None else placebo.pop("moments")
        pieces, found = self.tasks.compute_pieces(moments or stacked, meta, priority=self.prepare[code])
        if not methods:
            return pieces, found
        family = _Family(methods, {**values, "n_a": n_a, "n_b": n_b}, [*pieces, *(() if found is None else (found,))])
        rows = [list(sc["method"].values).index(m) for m in methods]
        seed = family_seed(self.cfg.seed, code, test)
        # Above the language's reads and scores write: on the worker that holds the scores, the pool
        # goes before their write (which would hold back every batch of the family).
        family.pool = self.tasks.submit(
            _family_pools,
            rows,
            self.cfg.n_permutations,
            self.cfg.alternative,
            seed,
            *pieces,
            priority=self.prepare[code] + 1,
        )
        # The batches are planned here, from the words at most in the pool, and depend on the pool: no
        # round trip through this process between the pool and its permutations. (The plan sizes the
        # tasks only: a permutation's split depends on the seed and its index, not on its batch.)
        # Batches of about biasdask.batch-duration at the workers' measured kernel rate, the family's share
        # of the worker threads (those over the families running or still to plan, this one included)
        # holding at least four each: with many families a few long batches, and the last family
        # spread over every thread, so that the run's tail is short; no batch carries less than
        # biasdask.min-batch-duration (the scheduler's cost per task stays a small share). One message
        # submits them all.
        words = max(1, sc.sizes["word"] - int(sc.attrs.get("n_excluded", 0)))  # at most in the pool
        families_left = len(self.families) + sum(self.to_plan.values())  # this one among those to plan
        self.to_plan[code] = max(0, self.to_plan.get(code, 0) - 1)
        spread = -(-2 * self.slots // max(1, families_left))
        ranges = batch_plan(words * len(methods), self.cfg.n_permutations, self.cfg.batch_size, spread, self.rate)
        parts = self.tasks.map(_family_batch, [family.pool] * len(ranges), *zip(*ranges), priority=rank)
        placebo_future = None
        if placebo is not None:  # the same placebo pairs for every weighting of the family, seeded by it
            # beside the pool, before the permutations: it is not left to lengthen the family's tail
            placebo_future = self.tasks.submit(
                _family_placebo, {**placebo, "seed": seed}, rows, *pieces, priority=self.prepare[code] + 1
            )
            family.futures.append(placebo_future)
        cells = self.tasks.submit(
            _family_cells,
            family.pool,
            placebo_future,
            *parts,
            return_null=self.cfg.save_null,
            tag=_FamilyDone(code, test),
            priority=rank,
        )
        family.futures += [family.pool, *parts, cells]
        self.families[(code, test)] = family
        self._count(code)
        return pieces, found

    # -- reacting to finished tasks -----------------------------------------------------------

    def _handle(self, event: _WordsFound | _GraphBuilt | _ScoresWritten | _FamilyDone | _ClassicDone, future) -> None:
        code = event.code
        self._count(code, -1)
        error = None if future.cancelled() else future.exception()
        if isinstance(error, CorruptStoreError):
            # A chunk of its store failed its checksum (or could not be read) in one of the language's
            # tasks: as for its words, that language's cells stay not done, to run on resume once the
            # store is mended; it is named in the run's error, the other languages go on.
            self._fail(code, error)
            held: Sequence = []
            if isinstance(event, _ScoresWritten):
                held = event.held
            elif isinstance(event, _FamilyDone):
                held = self.families.pop((code, event.test)).futures
            self.tasks.release([future, *held])
            return
        if isinstance(event, _WordsFound):
            found_words(event.emb, event.words, future.result())
            self.tasks.release([future])
            try:
                self._begin(event.lang, event.emb, self.done)
            except MissingWordsError as exc:  # attribute words of a test other than gender
                self._fail(code, exc)
                log.warning("skipped language %s: %s", code, exc)
        elif isinstance(event, _GraphBuilt):
            self._graph_ready(event.label, event.lang, event.emb, event.plan, future)
            self.tasks.release([future])
        elif isinstance(event, _ScoresWritten):
            future.result()
            self.tasks.release([future, *event.held])
        elif isinstance(event, _FamilyDone):
            family = self.families.pop((code, event.test))
            done = future.result()
            self.tasks.release([*family.futures, future])
            if done is None:
                self._fail(code, BiasdaskError("no word has a usable vector"))
                return
            results, weighted, placebo = done
            for k, (method, res, d_w) in enumerate(zip(family.methods, results, weighted)):
                values = cell_values(res, **{**family.values, "weighting": method, "effect_size_weighted": float(d_w)})
                draws = None
                if isinstance(placebo, PlaceboResult):
                    values.update(
                        p_value_placebo=float(placebo.p_value[k]),
                        z_placebo=float(placebo.z[k]),
                        effect_size_placebo_percentile=placebo.effect_size_percentile,
                        n_placebo=placebo.n,
                        **placebo.interval,
                    )
                    draws = placebo.statistics[:, k]
                elif isinstance(placebo, str):
                    values["note"] = "; ".join(
                        v for v in (values.get("note", ""), f"no placebo: {placebo.removeprefix('placebo: ')}") if v
                    )
                self.write(code, method, event.test, values, res.null_distribution, draws)
        else:  # _ClassicDone
            values, null = future.result()
            if str(values.get("note", "")).startswith("coverage: "):
                log.warning("%s", values["note"].removeprefix("coverage: "))
            for method in event.methods:
                self.write(code, method, event.test, values, null)
            self.tasks.release([future])
