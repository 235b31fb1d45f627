"""Editing a study: how a changed study meets the results store of the one before it.

A results store records its study (the canonical YAML, see :meth:`biasdask.study.config.StudyConfig.canonical`).
Run against a store of another study, :func:`check_changes` names the changed keys before anything else
happens (no store opened, no cluster started). Keys that change every cell (``seed``,
``n_permutations``, ``alternative``...) are applied only by starting over (``overwrite``). The others,
languages, methods, tests and associations added or removed, a language's store or attribute words, and
the words of a test's word set files (:mod:`biasdask.study.wordsets`: that test's cells), are applied by
``update``: the new cube is written next to the old one (``<output>.update-<hash of the new study>``), every cell the change leaves untouched is copied into it
bit for bit (values, nulls, per-word scores), the affected and new cells are computed, and only then does
it take the old store's place (:func:`biasdask.io.results.replace_results`). Cells cannot depend on
other cells (each has its own seed, a hash of the study seed and its labels), so the result equals a
fresh run of the new study. An update cut short leaves the old store as it was; running it again
resumes it.

An embedding store can also change under an unchanged study (ingested again with ``--overwrite``).
Every cell records the fingerprint of the store its language was read from (``store_fingerprint``,
:func:`biasdask.study.cells.store_values`), and so do a language's per-word scores; :func:`check_stores`
compares them with the stores at hand before anything is written, so that a resumed study never mixes
two embeddings: a language whose store changed is refused, naming it, or with ``update`` its cells are
recomputed as for a changed store key. A store written before stores had a fingerprint, or cells that
recorded none (an embedding held in memory, a results store of an older biasdask), give nothing to
compare: such a language resumes as it did before fingerprints existed.

A study of several embeddings is one such study per embedding, each meeting its own cube (the child group
of its name) as above; :func:`check_embeddings` compares the embeddings themselves with those whose cubes
the results store holds: one added or removed is refused by name, or applied by ``update`` (the added
ones computed, the removed ones' cubes deleted).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import yaml

from biasdask._version import __version__
from biasdask.errors import StoreConflictError
from biasdask.io import results as rs
from biasdask.io.fs import Location, display_url
from biasdask.io.results import FULL_VOCABULARY_TESTS, split_label
from biasdask.io.store import StoreIdentity
from biasdask.study.cells import store_values
from biasdask.study.config import StudyChanges, StudyConfig, study_changes
from biasdask.study.wordsets import changed_word_sets

__all__ = [
    "changed_stores",
    "check_changes",
    "check_embeddings",
    "check_stores",
    "prepare_update",
    "run_attrs",
    "with_changed_languages",
]

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
    where = display_url(cfg.output)
    if text is None and not overwrite and rs.embeddings_of(Location(cfg.output, options)):
        raise StoreConflictError(
            f"{where}: holds the results of a study of several embeddings "
            f"({', '.join(rs.embeddings_of(Location(cfg.output, options)))}); pass --overwrite to replace them"
        )
    if text is None or text == cfg.canonical_yaml():
        return None
    changes = study_changes(yaml.safe_load(text) or {}, cfg.canonical())
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


def check_embeddings(
    output: str, names: tuple[str, ...], options: dict, *, overwrite: bool, update: bool
) -> tuple[str, ...]:
    """Compare the embeddings ``names`` of a study of several with those whose cubes its results store at
    ``output`` holds; return those whose cubes go (no longer the study's, with ``update``). Each
    embedding's own cube is compared with its study by :func:`check_changes`.

    Raises
    ------
    StoreConflictError
        Without ``overwrite``: ``output`` holds the results cube of a study of one embedding, or (without
        ``update``) the cubes of other embeddings than ``names``; the message names them.
    """
    loc, where = Location(output, options), display_url(output)
    if overwrite:
        return ()
    if rs.stored_config(loc) is not None:
        raise StoreConflictError(
            f"{where}: holds the results cube of a study of one embedding; pass --overwrite to replace it by the "
            f"cubes of the study's embeddings ({', '.join(names)})"
        )
    before = rs.embeddings_of(loc)
    added, removed = [n for n in names if before and n not in before], [n for n in before if n not in names]
    if (added or removed) and not update:
        changed = "; ".join(
            ([f"added {', '.join(added)}"] if added else []) + ([f"removed {', '.join(removed)}"] if removed else [])
        )
        raise StoreConflictError(
            f"{where}: results of another study (embeddings: {changed}): pass --update to compute the added "
            "embeddings and delete the removed ones' cubes, keeping the others, or --overwrite to start over"
        )
    return tuple(removed)


def changed_stores(loc: Location, fingerprints: Mapping[str, str]) -> tuple[str, ...]:
    """The languages of ``fingerprints`` (language -> the fingerprint of its store at hand, empty when it
    has none) whose finished cells, or per-word scores, in the results store at ``loc`` recorded another
    store's fingerprint. Cells and scores that recorded none are not compared."""
    cube = rs.open_cube(loc)
    stale = []
    for code in cube["language"].values:
        now = fingerprints.get(str(code), "")
        if not now:
            continue
        recorded = {str(f) for f in cube["store_fingerprint"].sel({"language": code}).values.ravel()}  # "": not done
        scores = rs.scores_attrs(loc, str(code))
        if scores is not None:
            recorded.add(str(scores.get("store_fingerprint", "")))
        if recorded - {"", now}:
            stale.append(str(code))
    return tuple(stale)


def check_stores(
    cfg: StudyConfig,
    options: dict,
    identities: Mapping[str, StoreIdentity | None],
    changes: StudyChanges | None,
    *,
    overwrite: bool,
    update: bool,
) -> StudyChanges | None:
    """Compare each language's embedding store (``identities``: language -> the identity of its store,
    :func:`biasdask.io.store.embedding_identity`; None for an embedding held in memory) with the one its
    cells at ``cfg.output`` were computed from (:func:`changed_stores`); return ``changes`` (:func:`check_changes`) with the languages whose
    store changed added to its changed languages (their cells are recomputed).

    Raises
    ------
    StoreConflictError
        A language's store changed and ``update`` is not given; the message names the language and the
        store.
    """
    out = Location(cfg.output, options)
    if overwrite or rs.stored_config(out) is None:
        return changes
    stale = changed_stores(out, _fingerprints(identities))
    if not stale:
        return changes
    if not update:
        urls = {code: identity.url for code, identity in identities.items() if identity is not None}
        named = " and ".join(f"{code} ({urls[code]})" for code in stale)
        whose = "its cells" if len(stale) == 1 else "their cells"
        raise StoreConflictError(
            f"{display_url(cfg.output)}: the embedding store of {named} changed since {whose} there were "
            f"computed: pass --update to recompute {whose}, or --overwrite to start over"
        )
    return with_changed_languages(changes, stale, "store")


def with_changed_languages(changes: StudyChanges | None, codes: Iterable[str], what: str) -> StudyChanges:
    """``changes`` with the languages ``codes`` added to the changed ones (their cells recomputed), as the
    change of their key ``languages.<code>.<what>`` (``store``: its contents; ``source``)."""
    codes = list(codes)
    keys = tuple(f"languages.{code}.{what}" for code in codes)
    if changes is None:
        return StudyChanges(keys, (), frozenset(codes))
    return StudyChanges(
        tuple(sorted(set(changes.keys) | set(keys))), changes.global_keys, changes.changed_languages | set(codes)
    )


def _fingerprints(identities: Mapping[str, StoreIdentity | None]) -> dict[str, str]:
    return {code: store_values(identity)["store_fingerprint"] for code, identity in identities.items()}


def prepare_update(
    cfg: StudyConfig, options: dict, changes: StudyChanges, identities: Mapping[str, StoreIdentity | None]
) -> str:
    """Write the updated cube next to ``cfg.output`` with every cell ``changes`` leave untouched copied
    into it (or find it, from an update cut short whose cells all read the stores at hand, see
    :func:`changed_stores`); return its URL, where the run goes on."""
    new_text = cfg.canonical_yaml()
    fresh = f"{str(cfg.output).rstrip('/')}.update-{cfg.digest()[:12]}"
    if rs.stored_config(Location(fresh, options)) == new_text:
        if not changed_stores(Location(fresh, options), _fingerprints(identities)):
            log.info("resuming the update in %s", display_url(fresh))
            return fresh
        log.info("an embedding store changed since the update in %s began: starting it again", display_url(fresh))
    codes = [lang.code for lang in cfg.languages]
    old = rs.open_cube(Location(cfg.output, options))
    old_cfg = yaml.safe_load(old.attrs["config"]) or {}
    kept_languages = [c for c in codes if c in set(old["language"].values) and c not in changes.changed_languages]
    methods = [m for m in cfg.methods if m in set(old["method"].values)]
    # a test whose word set files changed is computed again, as a test added
    rewritten = set(changed_word_sets(old_cfg.get("word_sets"), (yaml.safe_load(new_text) or {}).get("word_sets")))
    tests = [t for t in cfg.test_labels() if t in set(old["test"].values) and t not in rewritten]
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
