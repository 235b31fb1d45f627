"""A study run: every (language, method, test) cell, on whatever cluster is at hand, into the cube.

For each language the scores graph is computed once (all methods together), the per-word scores are
written to ``scores/<language>``, then each missing cell runs its permutation test on the cluster and
is written the moment it finishes. Cells already marked done in the results store are skipped, so a
killed run resumes where it stopped; the seed of each cell is derived from the study seed and the
cell's labels, so a resumed run gives the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import xarray as xr
from distributed import Client
from tqdm.auto import tqdm

from biasdask._version import __version__
from biasdask.config import StudyConfig, load_config, parse_config
from biasdask.engine.cluster import client_scope
from biasdask.engine.permutation import permutation_test
from biasdask.engine.scores import scores
from biasdask.errors import BiasdaskError, BiasdaskTypeError, MissingWordsError
from biasdask.io import results as rs
from biasdask.io.store import open_embeddings


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
    progress: bool = True,
) -> xr.Dataset:
    """Run a study and return its results cube.

    Parameters
    ----------
    config
        A :class:`~biasdask.config.StudyConfig`, a mapping, or the path of a study YAML file.
    client, scheduler, n_workers
        Where to run (SPEC §3 order: client, scheduler address, ``DASK_SCHEDULER_ADDRESS``, Dask
        Gateway, else a ``LocalCluster`` of ``n_workers`` processes).
    output
        Overrides the study's ``output`` URL.
    overwrite
        Replace a results store that was written by a different study.
    progress
        Show the dashboard link and progress bars (stderr).

    Returns
    -------
    xarray.Dataset
        The results cube (dims ``language``, ``method``, ``test``), as :func:`open_results` reads it.

    Raises
    ------
    BiasdaskError
        Before the results store is created or changed: an invalid ``n_workers``, a store that is
        missing, incomplete, corrupt or of another language, an unreachable cluster. After every
        runnable cell is written: if some language could not be run (its cells stay NaN and the
        message names the missing words).
    """
    cfg = _as_config(config, output)
    options = cfg.resolved_storage_options()
    # Everything that can fail before the work is checked before the results store is created or
    # changed: the config (above), every store (verified, of the right language; before starting a
    # cluster, which takes a while), the cluster.
    check_n_workers(n_workers)
    stores = {lang.code: open_embeddings(lang.store, storage_options=options, language=lang.code) for lang in cfg.languages}
    failures: list[str] = []
    with client_scope(client, scheduler, n_workers) as c:
        rs.create_results(
            cfg.output,
            languages=[lang.code for lang in cfg.languages],
            methods=list(cfg.methods),
            tests=list(cfg.tests),
            attrs={
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
        done = rs.done_cells(cfg.output, storage_options=options)
        if progress:
            print(f"biasdask: Dask dashboard at {c.dashboard_link}", file=sys.stderr)
        total = len(cfg.languages) * len(cfg.methods) * len(cfg.tests)
        bar = tqdm(total=total, initial=len(done), desc="cells", unit="cell", disable=not progress, file=sys.stderr)
        for lang in cfg.languages:
            todo = [(m, t) for m in cfg.methods for t in cfg.tests if (lang.code, m, t) not in done]
            need_scores = cfg.save_scores and not rs.scores_done(cfg.output, lang.code, storage_options=options)
            if not todo and not need_scores:
                continue
            try:
                failures += _run_language(cfg, lang, todo, need_scores, options, c, bar, progress, stores[lang.code])
            except MissingWordsError as exc:  # attribute words of the gender test
                failures.append(f"{lang.code}: {exc}")
                bar.write(f"biasdask: skipped language {lang.code}: {exc}")
        bar.close()
    if failures:
        raise BiasdaskError(f"{len(failures)} language(s) not run, their cells are left empty: " + "; ".join(failures))
    return rs.open_results(cfg.output, storage_options=options)


#: the most worker processes a local cluster may be asked for
MAX_LOCAL_WORKERS = 4 * (os.cpu_count() or 1)


def check_n_workers(n_workers: int | None) -> None:
    """Raise unless ``n_workers`` is None or 0 to :data:`MAX_LOCAL_WORKERS` (4 per core)."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)):
        raise BiasdaskTypeError(f"n_workers: expected an integer, got {n_workers!r}")
    if not 0 <= n_workers <= MAX_LOCAL_WORKERS:
        raise BiasdaskError(f"n_workers: expected 0 to {MAX_LOCAL_WORKERS} (4 per core of this machine), got {n_workers}")


def _result_values(res, n_a: int, n_b: int) -> dict:
    return {
        "statistic": res.statistic,
        "effect_size": res.effect_size,
        "p_value": res.pvalue,
        "z_score": res.z_score,
        "p_value_normal": res.p_value_normal,
        "null_mean": res.null_mean,
        "null_std": res.null_std,
        "n_permutations": res.n_permutations,
        "exact": res.exact,
        "n_x": res.n_x,
        "n_y": res.n_y,
        "n_a": n_a,
        "n_b": n_b,
    }


def applicable_tests(cfg: StudyConfig, language: str) -> set[str]:
    """The tests of the study that apply to ``language`` (the others are written as not applicable)."""
    from biasdask.engine.classic import tests_for_language

    tests = {"gender"} | set(tests_for_language(language, cfg.iat_model))
    if language == "en":
        tests.add("context")
    return tests & set(cfg.tests)


class _CellWriter:
    """Writes finished cells (null first, then values and the done flag) and advances the bar."""

    def __init__(self, cfg: StudyConfig, options: dict, bar: tqdm) -> None:
        self.cfg, self.options, self.bar = cfg, options, bar

    def __call__(self, language: str, method: str, test: str, values: dict, null=None) -> None:
        if self.cfg.save_null and null is not None:
            rs.write_null(self.cfg.output, language, method, test, null, storage_options=self.options)
        rs.write_cell(self.cfg.output, language, method, test, values, storage_options=self.options)
        self.bar.update()


def _run_language(cfg, lang, todo, need_scores, options, client, bar, progress, emb=None) -> list[str]:
    from biasdask.engine.analyses import context_test
    from biasdask.engine.classic import CoverageError, run_cell

    write = _CellWriter(cfg, options, bar)
    applicable = applicable_tests(cfg, lang.code)
    for method, test in [(m, t) for m, t in todo if t not in applicable]:
        write(lang.code, method, test, {"note": f"not applicable to language {lang.code}"})
    todo = [(m, t) for m, t in todo if t in applicable]
    if emb is None:
        emb = open_embeddings(lang.store, storage_options=options, language=lang.code)
    common = dict(alternative=cfg.alternative, client=client, batch_size=cfg.batch_size, return_null=cfg.save_null)
    gender = [m for m, t in todo if t == "gender"]
    if gender or need_scores:
        sc = scores(
            emb,
            lang.a,
            lang.b,
            methods=cfg.methods,
            max_words=cfg.max_words,
            exclude_attributes=cfg.exclude_attributes,
            exclude_words=cfg.exclude_words,
        )
        u, t = client.compute([sc["u"].data, sc["t"].data], sync=True)
        sc = sc.copy(data={"u": u, "t": t})
        if need_scores:
            rs.write_scores(cfg.output, lang.code, sc, storage_options=options)
        keep = np.isfinite(u)
        if gender and not keep.any():
            return [f"{lang.code}: no word has a usable vector"]
        for method in gender:
            res = permutation_test(
                t[cfg.methods.index(method)][keep],
                int(keep.sum()),
                n_permutations=cfg.n_permutations,
                seed=cell_seed(cfg.seed, lang.code, method, "gender"),
                effect_x=u[keep],
                progress=False,
                **common,
            )
            write(lang.code, method, "gender", _result_values(res, sc.attrs["n_a"], sc.attrs["n_b"]), res.null_distribution)
    for method in [m for m, t in todo if t == "context"]:
        res = context_test(
            emb,
            method=method,
            n_permutations=cfg.n_permutations,
            seed=cell_seed(cfg.seed, lang.code, method, "context"),
            max_words=cfg.max_words,
            progress=False,
            **common,
        )
        write(lang.code, method, "context", _result_values(res, -1, -1), res.null_distribution)
    classic = list(dict.fromkeys(t for _, t in todo if t not in ("gender", "context")))
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
                **common,
            )
            values, null = res.cell_values(), res.null_distribution
        except CoverageError as err:
            bar.write(f"biasdask: {err}")
            values, null = {**err.cell_values(), "note": str(err)}, None
        for method in [m for m, t in todo if t == test]:
            write(lang.code, method, test, values, null)
    return []
