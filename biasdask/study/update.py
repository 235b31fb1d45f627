"""Editing a study: how a changed study meets the results store of the one before it.

A results store records its study (the canonical YAML, see :meth:`biasdask.study.config.StudyConfig.canonical`).
Run against a store of another study, :func:`check_changes` names the changed keys before anything else
happens (no store opened, no cluster started). Keys that change every cell (``seed``,
``n_permutations``, ``alternative``...) are applied only by starting over (``overwrite``). The others,
languages, methods, tests and associations added or removed, and a language's store or attribute words,
are applied by ``update``: the new cube is written next to the old one
(``<output>.update-<hash of the new study>``), every cell the change leaves untouched is copied into it
bit for bit (values, nulls, per-word scores), the affected and new cells are computed, and only then does
it take the old store's place (:func:`biasdask.io.results.replace_results`). Cells cannot depend on
other cells (each has its own seed, a hash of the study seed and its labels), so the result equals a
fresh run of the new study. An update cut short leaves the old store as it was; running it again
resumes it.
"""

from __future__ import annotations

import logging

import yaml

from biasdask._version import __version__
from biasdask.errors import StoreConflictError
from biasdask.io import results as rs
from biasdask.io.fs import Location, display_url
from biasdask.io.results import FULL_VOCABULARY_TESTS, split_label
from biasdask.study.config import StudyChanges, StudyConfig, study_changes

__all__ = ["check_changes", "prepare_update", "run_attrs"]

log = logging.getLogger(__name__)

_SHOWN_KEYS = 12


def _keys(keys: tuple[str, ...]) -> str:
    shown = ", ".join(keys[:_SHOWN_KEYS])
    return shown + (f" and {len(keys) - _SHOWN_KEYS} more" if len(keys) > _SHOWN_KEYS else "")


def check_changes(cfg: StudyConfig, options: dict, *, overwrite: bool, update: bool) -> StudyChanges | None:
    """Compare the study with the one that wrote the results store at ``cfg.output``.

    Returns
    -------
    StudyChanges or None
        The changes to apply by updating; None when there is nothing to update (no results store yet,
        the same study resumed, or ``overwrite``: the run goes to ``cfg.output``).

    Raises
    ------
    StoreConflictError
        ``cfg.output`` holds the results of another study and neither ``overwrite`` nor (for changes
        it can apply) ``update`` is given; the message names the changed keys.
    """
    text = None if overwrite else rs.stored_config(Location(cfg.output, options))
    if text is None or text == cfg.canonical_yaml():
        return None
    changes = study_changes(yaml.safe_load(text) or {}, cfg.canonical())
    where = display_url(cfg.output)
    if not changes.updatable:
        detail = f"changed {_keys(changes.keys)}" if changes.keys else "written by another version of the study file"
        verb = "changes" if len(changes.global_keys) == 1 else "change"
        every = f"; {_keys(changes.global_keys)} {verb} every cell" if changes.global_keys else ""
        raise StoreConflictError(f"{where}: results of another study ({detail}{every}): pass --overwrite to start over")
    if not update:
        raise StoreConflictError(
            f"{where}: results of another study (changed {_keys(changes.keys)}): pass --update to compute the "
            "affected cells only and keep the others, or --overwrite to start over"
        )
    return changes


def prepare_update(cfg: StudyConfig, options: dict, changes: StudyChanges) -> str:
    """Write the updated cube next to ``cfg.output`` with every cell ``changes`` leave untouched copied
    into it (or find it, from an update cut short); return its URL, where the run goes on."""
    new_text = cfg.canonical_yaml()
    fresh = f"{str(cfg.output).rstrip('/')}.update-{cfg.digest()[:12]}"
    if rs.stored_config(Location(fresh, options)) == new_text:
        log.info("resuming the update in %s", display_url(fresh))
        return fresh
    codes = [lang.code for lang in cfg.languages]
    old = rs.open_results(Location(cfg.output, options))
    old_cfg = yaml.safe_load(old.attrs["config"]) or {}
    kept_languages = [c for c in codes if c in set(old["language"].values) and c not in changes.changed_languages]
    methods = [m for m in cfg.methods if m in set(old["method"].values)]
    tests = [t for t in cfg.test_labels() if t in set(old["test"].values)]
    rs.create_results(
        Location(fresh, options),
        languages=codes,
        methods=list(cfg.methods),
        tests=list(cfg.test_labels()),
        attrs=run_attrs(cfg),
        config_text=new_text,
        overwrite=True,
    )
    # per-word scores hold every weighting and association of the full-vocabulary tests
    same_scores = (
        list(old_cfg.get("methods", [])) == list(cfg.methods)
        and list(old_cfg.get("associations", ["cosine"])) == list(cfg.associations)
        and {t for t in old_cfg.get("tests", []) if t in FULL_VOCABULARY_TESTS}
        == {t for t in cfg.tests if t in FULL_VOCABULARY_TESTS}
    )
    n = rs.copy_cells(
        Location(cfg.output, options),
        Location(fresh, options),
        [(lang, m, t) for lang in kept_languages for m in methods for t in tests],
        scores_of=kept_languages if same_scores else (),
    )
    log.info("update: changed %s; %d cells kept, the others computed in %s", _keys(changes.keys), n, display_url(fresh))
    return fresh


def run_attrs(cfg: StudyConfig) -> dict:
    """The run attributes a study's results store records."""
    return {
        "seed": cfg.seed,
        "alternative": cfg.alternative,
        "similarity": cfg.similarity,
        "sd_ddof": 1,
        "biasdask_version": __version__,
        "test_associations": {label: split_label(label)[1] for label in cfg.test_labels()},
    }
