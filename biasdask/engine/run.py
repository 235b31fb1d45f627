"""A study run: every (language, method, test) cell, on whatever cluster is at hand, into the cube.

For each language the scores graph is computed once (all methods together), the per-word scores are
written to ``scores/<language>``, then each missing cell runs its permutation test on the cluster and
is written the moment it finishes. Cells already marked done in the results store are skipped, so a
killed run resumes where it stopped; the seed of each cell is derived from the study seed and the
cell's labels, so a resumed run gives the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

import dask.system
import numpy as np
import xarray as xr
from distributed import Client
from tqdm import tqdm

from biasdask._version import __version__
from biasdask.config import FULL_VOCABULARY_TESTS, StudyConfig, cube_label, load_config, parse_config, split_label
from biasdask.engine.cluster import active_client, client_scope, compute
from biasdask.engine.permutation import permutation_test
from biasdask.engine.scores import as_dataset, check_frequency_language, positions, scores
from biasdask.errors import BiasdaskError, BiasdaskTypeError, MissingWordsError
from biasdask.io import results as rs
from biasdask.io.store import open_embeddings
from biasdask.lexicon import AttributeTerm
from biasdask.progress import progress_bar

log = logging.getLogger(__name__)


def cell_seed(seed: int, language: str, method: str, test: str) -> int:
    """The seed of one cell: a hash of the study seed and the cell's labels (stable across runs)."""
    digest = hashlib.sha256(f"{seed}/{language}/{method}/{test}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


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
    progress: bool | None = None,
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
        a cluster is found or started in SPEC §3's order (:func:`biasdask.get_client`: scheduler
        address, ``DASK_SCHEDULER_ADDRESS``, Dask Gateway, else a ``LocalCluster`` of ``n_workers``
        processes) and closed at the end; ``biasdask run`` always does this.
    output
        Overrides the study's ``output`` URL.
    overwrite
        Replace a results store that was written by a different study.
    progress
        Show progress bars (default: only when stderr is a terminal). The dashboard link of a
        cluster is logged at INFO (logger ``biasdask.engine.run``).

    Returns
    -------
    xarray.Dataset
        The results cube (dims ``language``, ``method``, ``test``), as :func:`open_results` reads it.

    Raises
    ------
    BiasdaskError
        Before the results store is created or changed: an invalid ``n_workers``, a store that is
        missing, incomplete, corrupt or of another language, an unreachable cluster. After every
        runnable cell is written, if in some language no attribute word of A (or of B) is in the
        vocabulary: its ``gender`` cells stay NaN with a note naming the words, the message names them
        too. A missing attribute word (of several), a language without an observed-frequency list for
        ``frequency``, a test not applicable to a language or below ``min_coverage`` are not errors: a
        warning in the log, and a note in the cells.
    """
    cfg = _as_config(config, output)
    options = cfg.resolved_storage_options()
    # Everything that can fail before the work is checked before the results store is created or
    # changed: the config (above), every store (verified, of the right language; before starting a
    # cluster, which takes a while), the cluster.
    check_n_workers(n_workers)
    stores = {lang.code: _open_language(lang, options) for lang in cfg.languages}
    failures: list[str] = []
    if scheduler or n_workers:
        scope = client_scope(client, scheduler, n_workers)
    else:
        scope = contextlib.nullcontext(active_client(client))
    total = len(cfg.languages) * len(cfg.methods) * len(cfg.test_labels())
    with scope as c:
        rs.create_results(
            cfg.output,
            languages=[lang.code for lang in cfg.languages],
            methods=list(cfg.methods),
            tests=list(cfg.test_labels()),
            attrs={
                "test_associations": {label: split_label(label)[1] for label in cfg.test_labels()},
                "seed": cfg.seed,
                "alternative": cfg.alternative,
                "similarity": cfg.similarity,
                "sd_ddof": 1,
                "biasdask_version": __version__,
            },
            config_text=cfg.canonical_yaml(),
            storage_options=options,
            overwrite=overwrite,
        )
        rs.compact_results(cfg.output, storage_options=options)  # a resumed run: fold the cells it found
        done = rs.done_cells(cfg.output, storage_options=options)
        if c is not None:
            log.info("running on Dask scheduler %s; dashboard: %s", c.scheduler.address, c.dashboard_link)
        with progress_bar(progress, total=total, initial=len(done), desc="cells", unit="cell") as bar:
            for lang in cfg.languages:
                todo = [(m, t) for m in cfg.methods for t in cfg.test_labels() if (lang.code, m, t) not in done]
                need_scores = cfg.save_scores and not rs.scores_done(cfg.output, lang.code, storage_options=options)
                if not todo and not need_scores:
                    continue
                try:
                    failures += _run_language(cfg, lang, todo, need_scores, options, c, bar, progress, stores[lang.code])
                except MissingWordsError as exc:  # attribute words of a test other than gender
                    failures.append(f"{lang.code}: {exc}")
                    log.warning("skipped language %s: %s", lang.code, exc)
    rs.compact_results(cfg.output, storage_options=options)
    if failures:
        raise BiasdaskError(f"{len(failures)} language(s) with cells not run, left empty with a note: " + "; ".join(failures))
    return rs.open_results(cfg.output, storage_options=options)


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


def _open_language(lang, options: dict) -> xr.Dataset:
    """A study language's embedding: a store URL opened and verified (of this language), or an
    in-memory form (see :func:`biasdask.as_embeddings`)."""
    if isinstance(lang.store, (str, os.PathLike)):
        return open_embeddings(os.fspath(lang.store), storage_options=options, language=lang.code)
    return as_dataset(lang.store, storage_options=options)


#: the most worker processes a local cluster may be asked for
MAX_LOCAL_WORKERS = 4 * dask.system.CPU_COUNT


def check_n_workers(n_workers: int | None) -> None:
    """Raise unless ``n_workers`` is None or 0 to :data:`MAX_LOCAL_WORKERS` (4 per core)."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)):
        raise BiasdaskTypeError(f"n_workers: expected an integer, got {n_workers!r}")
    if not 0 <= n_workers <= MAX_LOCAL_WORKERS:
        raise BiasdaskError(f"n_workers: expected 0 to {MAX_LOCAL_WORKERS} (4 per core of this machine), got {n_workers}")


def _with_associations(computed: dict) -> xr.Dataset:
    """Cosine's scores with every other association's u and t added as ``u_<name>``, ``t_<name>``."""
    out = computed["cosine"][0]
    for association, (sc, _) in computed.items():
        if association != "cosine":
            out = out.assign({f"u_{association}": sc["u"], f"t_{association}": sc["t"]})
    out.attrs["associations"] = list(computed)
    return out


def applicable_tests(cfg: StudyConfig, language: str) -> set[str]:
    """The tests of the study that apply to ``language`` (the others are written as not applicable)."""
    from biasdask.engine.cells import tests_for_language
    from biasdask.engine.setmetrics import SET_METRICS, set_metric_sets

    tests = {"gender"} | set(tests_for_language(language, cfg.iat_model))
    named = next((s.set_metric_words for s in cfg.languages if s.code == language), None)
    if named is not None or set_metric_sets(language, cfg.iat_model) is not None:
        tests |= set(SET_METRICS)
    if language == "en":
        tests.add("context")
    return {label for label in cfg.test_labels() if split_label(label)[0] in tests}


class _CellWriter:
    """Writes finished cells (the null first, then the cell's record) and advances the bar."""

    def __init__(self, cfg: StudyConfig, options: dict, bar: tqdm) -> None:
        self.cfg, self.options, self.bar = cfg, options, bar

    def __call__(self, language: str, method: str, test: str, values: dict, null=None) -> None:
        if self.cfg.save_null and null is not None:
            rs.write_null(self.cfg.output, language, method, test, null, storage_options=self.options)
        rs.write_cell(self.cfg.output, language, method, test, values, storage_options=self.options)
        self.bar.update()


def _run_language(cfg, lang, todo, need_scores, options, client, bar, progress, emb=None) -> list[str]:
    from biasdask.engine.cells import cell_values, run_cell
    from biasdask.engine.frequency import context_test
    from biasdask.engine.weat import CoverageError

    write = _CellWriter(cfg, options, bar)
    applicable = applicable_tests(cfg, lang.code)
    for method, test in [(m, t) for m, t in todo if t not in applicable]:
        write(lang.code, method, test, {"note": f"not applicable: test {test} has no word lists for language {lang.code}"})
    todo = [(m, t) for m, t in todo if t in applicable]
    if emb is None:
        emb = _open_language(lang, options)
    failures: list[str] = []
    # A weighting this language cannot have (no observed-frequency list): its weighted cells get a note,
    # everything else of the study runs.
    unusable = {}
    if "frequency" in cfg.methods:
        try:
            check_frequency_language(str(emb.attrs.get("language", "")))
        except BiasdaskError:
            unusable["frequency"] = (
                f"no observed-frequency list for this language (wordfreq has none for {lang.code!r}), "
                "so the 'frequency' weighting cannot be computed"
            )
            log.warning(
                "%s: wordfreq has no observed-frequency list for this language; its 'frequency' cells are left "
                "empty with a note",
                lang.code,
            )
    for method, test in [(m, t) for m, t in todo if m in unusable and split_label(t)[0] in FULL_VOCABULARY_TESTS]:
        write(lang.code, method, test, {"weighting": method, "u_association": split_label(test)[1], "note": unusable[method]})
    todo = [(m, t) for m, t in todo if not (m in unusable and split_label(t)[0] in FULL_VOCABULARY_TESTS)]
    methods = [m for m in cfg.methods if m not in unusable]
    common = dict(alternative=cfg.alternative, client=client, batch_size=cfg.batch_size, return_null=cfg.save_null)
    # One chunked pass over the store per association (cosine too when the scores are saved: the
    # stored u and t are cosine's, another association's are u_<name>, t_<name>).
    computed = {}
    for association in dict.fromkeys((*(("cosine",) if need_scores else ()), *cfg.associations)):
        label = cube_label("gender", association)
        gender = [m for m, t in todo if t == label]
        if not (gender or need_scores):
            continue
        try:
            sc = scores(
                emb,
                lang.a,
                lang.b,
                methods=methods,
                max_words=cfg.max_words,
                exclude_attributes=cfg.exclude_attributes,
                exclude_words=cfg.exclude_words,
                dedupe_vectors=cfg.dedupe_vectors,
                association=association,
            )
        except MissingWordsError as exc:  # no usable attribute word of A (or of B) in the vocabulary
            missing = _missing_words(_absent(emb, lang.a), _absent(emb, lang.b))
            note = f"missing attribute words: none of A or of B is usable ({missing}): {exc}"
            log.warning("%s: gender test not run: %s", lang.code, exc)
            for method in gender:
                write(lang.code, method, label, {"weighting": method, "u_association": association,
                                                 "attribute_set": lang.attribute_set, "note": note})
            failures += [f"{lang.code}: {exc}"] if f"{lang.code}: {exc}" not in failures else []
            continue
        u, t = compute(sc["u"].data, sc["t"].data, client=client)
        computed[association] = (sc.copy(data={"u": u, "t": t}), gender)
    if need_scores and "cosine" in computed:
        rs.write_scores(cfg.output, lang.code, _with_associations(computed), storage_options=options)
    for association, (sc, gender) in computed.items():
        label = cube_label("gender", association)
        u, t = sc["u"].values, sc["t"].values
        keep = np.isfinite(u)
        if gender and not keep.any():
            return [*failures, f"{lang.code}: no word has a usable vector"]
        missing = _missing_words(
            [*sc.attrs["missing_a"], *(f"{w} (zero vector)" for w in sc.attrs["zero_a"])],
            [*sc.attrs["missing_b"], *(f"{w} (zero vector)" for w in sc.attrs["zero_b"])],
        )
        words = {
            "attribute_words_a": _words(sc.attrs["used_a"]),
            "attribute_words_b": _words(sc.attrs["used_b"]),
            "missing_attribute_words": missing,
        }
        if missing and gender:
            log.warning("%s: attribute words not in the vocabulary, left out: %s", lang.code, missing)
            words["note"] = f"warning: attribute words not in the vocabulary, left out: {missing}"
        for method in gender:
            res = permutation_test(
                t[methods.index(method)][keep],
                int(keep.sum()),
                n_permutations=cfg.n_permutations,
                seed=cell_seed(cfg.seed, lang.code, method, label),
                effect_x=u[keep],
                progress=False,
                **common,
            )
            values = cell_values(
                res, n_a=sc.attrs["n_a"], n_b=sc.attrs["n_b"], weighting=method, u_association=association,
                attribute_set=lang.attribute_set, **words
            )
            write(lang.code, method, label, values, res.null_distribution)
    for method, label in [(m, t) for m, t in todo if split_label(t)[0] == "context"]:
        res = context_test(
            emb,
            method=method,
            n_permutations=cfg.n_permutations,
            seed=cell_seed(cfg.seed, lang.code, method, label),
            max_words=cfg.max_words,
            association=split_label(label)[1],
            progress=False,
            **common,
        )
        values = cell_values(res, weighting=method, u_association=split_label(label)[1])
        write(lang.code, method, label, values, res.null_distribution)
    classic = list(dict.fromkeys(t for _, t in todo if split_label(t)[1] == "none"))
    for test in classic:
        # Classic tests have no weighting: one run (seeded by its uniform cell) fills every method.
        try:
            res = run_cell(
                test,
                emb,
                language=lang.code,
                n_permutations=cfg.n_permutations,
                seed=cell_seed(cfg.seed, lang.code, "uniform", test),
                similarity=cfg.similarity,
                min_coverage=cfg.min_coverage,
                model=cfg.iat_model,
                set_metric_words=lang.set_metric_words,
                **common,
            )
            values, null = cell_values(res), res.null_distribution
            if res.n_permutations == 0:  # a set metric without a null (MAC): say why p is empty
                values["note"] = (
                    f"no p-value: {test} has no permutation null (relabelling the groups' words leaves it unchanged)"
                )
            coverage = res.coverage
        except CoverageError as err:
            log.warning("%s", err)
            values, null = cell_values(err, note=f"coverage: {err}"), None
            coverage = err.coverage
        values.update(
            weighting="none",
            u_association="none",
            attribute_words_a=_words(coverage["a"].found) if "a" in coverage else "",
            attribute_words_b=_words(coverage["b"].found) if "b" in coverage else "",
            missing_attribute_words=_missing_words(
                coverage["a"].missing if "a" in coverage else (), coverage["b"].missing if "b" in coverage else ()
            ),
        )
        for method in [m for m, t in todo if t == test]:
            write(lang.code, method, test, values, null)
    return failures
