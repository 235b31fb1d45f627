"""The results cube: a Zarr v3 group indexed by ``language``, ``method`` and ``test``.

Layout, readable by plain ``xarray.open_zarr(url, consolidated=False)`` and, subgroups included, by
``xarray.open_datatree(url, engine="zarr", consolidated=False)``::

    <url>/                      root group, dims language, method, test
        language, method, test  variable-length UTF-8 string coordinates, written once at creation
        statistic effect_size p_value z_score p_value_normal null_mean null_std   float64, fill NaN
        n_permutations n_x n_y n_a n_b                                            int64, fill -1
        exact                   bool, fill False
        alternative weighting attribute_words_a attribute_words_b missing_attribute_words note attribute_set
        u_association word_sets target_words_x target_words_y missing_target_words
                                str, fill "" (what the cell was computed with, the words it used and
                                missed, where its word sets come from; why it is empty)
        target_coverage         float64, fill NaN: share of a classic cell's target words found
        store_fingerprint store_source
                                str, fill "": the identity of the embedding store the cell's
                                language was read from (its fingerprint, and the file it was ingested
                                from; empty for an embedding held in memory)
        cronbach_alpha split_half effect_size_loo_low effect_size_loo_high effect_size_without_loo_word
                                float64, fill NaN: how well the cell's attribute words (or base
                                pairs) agree; loo_word (str) the word whose leaving out moves d most
        done                    bool, fill False: the cell's completion flag
    attrs: seed, alternative, similarity, sd_ddof, biasdask_version, config (YAML text), config_hash,
           created, biasdask_store ("results"), store_id (new at every creation); while a run
           writes it, and after one that did not finish, unfinished_run (when it started, on which
           host and process, and when and why it stopped when it could say)
    <url>/cells/<i>.<j>.<k>/    the record of one cell finished since the last compaction (pending)
    <url>/scores/<language>/    per-word scores: u (word), t (method, word), rank (word), word coordinate
    <url>/null/<language>/<method>/<test>/   the sampled null distribution of one cell (``null``)
    <url>/reliability/<kind>/   figures over several cells or languages, as an xarray Dataset with attrs
                                saying what each is: ``agreement`` (agreement across scoring rules
                                and tests, written at the end of a run)

A study of several embeddings (``embeddings`` a mapping of names in the study file) writes one such cube
per embedding, as the child group of its name::

    <url>/                      root group; attrs biasdask_store ("embeddings"), embeddings (their names, in
                                the study's order), created, biasdask_version
        <name>/                 the results cube of the embedding <name>, laid out as above

A cube that opens at once, and a run that never shares an object between two cells: every cube
variable is ONE chunk (the whole cube), so opening reads about two objects per variable whatever the
number of cells. While a run goes, a finished cell is not written into those chunks (two writers
would share them): :func:`write_cell` writes it as its own *record*, the ``zarr.json`` of an empty
group ``cells/<i>.<j>.<k>`` (positions in the cube) whose attributes hold every value of the cell.
That is one object written in one put (atomically renamed on a local disk, one PUT on S3), so a cell
is durable, and complete, the moment it finishes; writers of different cells never touch the same
object and need no locks. :func:`compact_results` (run at the start and the end of every
:func:`biasdask.run`) folds the records into the cube chunks, writing ``done`` last, and only then
deletes the records it folded: a compaction killed half way leaves the records, which win over the
chunks, so nothing is lost or counted twice. Two writers of the *same* cell are not coordinated (the
last record wins), so a run must hand each cell to one writer, and only one process compacts.

:func:`open_results` and :func:`done_cells` read the chunks plus any pending records; plain xarray
sees the chunks only, i.e. every cell finished up to the last compaction (all of them after a run).
Other completion markers: the template's attribute ``config_hash`` is written last by
:func:`create_results`; a scores subgroup, a null distribution or a group of reliability figures gets
attribute ``biasdask_complete`` last. Cells not done read back from :func:`open_results` as NaN (floats), -1 (int64), False
(``exact``), "" (strings) and the note "not run", never zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import re
import socket
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

import fsspec
import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous as zarr_async
from zarr.errors import GroupNotFoundError, NodeNotFoundError

from biasdask._calls import keyword_api
from biasdask._version import __version__
from biasdask.errors import (
    BiasdaskError,
    BiasdaskException,
    BiasdaskOSError,
    ConfigError,
    IncompleteStoreError,
    StorageFullError,
    StoreConflictError,
)
from biasdask.io import zarr_compat
from biasdask.io.fs import (
    Locatable,
    Location,
    as_location,
    display_url,
    one_line,
    redact,
    storage_options_for,
    url_to_fs,
)
from biasdask.io.swap import lock_holder

__all__ = [
    "CELL_VARIABLES",
    "DERIVED_VARIABLES",
    "DIMS",
    "FORMER_NAMES",
    "FULL_VOCABULARY_TESTS",
    "LONG_NAMES",
    "TestLabel",
    "config_hash",
    "copy_cells",
    "compact_results",
    "create_embeddings_root",
    "create_results",
    "cube_label",
    "done_cells",
    "embedding_url",
    "embeddings_of",
    "open_cube",
    "open_results",
    "open_reliability",
    "open_scores",
    "progress_note",
    "read_null",
    "remove_embedding",
    "replace_results",
    "run_recorded",
    "scores_attrs",
    "scores_done",
    "split_label",
    "stop_reason",
    "stored_config",
    "write_cell",
    "write_cube_variable",
    "write_null",
    "write_reliability",
    "write_scores",
    "NOT_RUN",
    "root_metadata",
]

DIMS: tuple[str, str, str] = ("language", "method", "test")

#: The tests over a whole vocabulary: the ones a study's ``associations`` apply to.
FULL_VOCABULARY_TESTS = ("gender", "context")


def cube_label(test: str, association: str) -> str:
    """The cube's label of a full-vocabulary test run with ``association`` (``gender``, ``gender.ripa``)."""
    return test if association == "cosine" else f"{test}.{association}"


class TestLabel(NamedTuple):
    """A cube test label taken apart (:func:`split_label`)."""

    test: str
    association: str
    """``"none"`` for the tests associations do not apply to."""


def split_label(label: str) -> TestLabel:
    """The test and association of a cube test label (``gender.ripa``: ``gender``, ``ripa``).

    Examples
    --------
    >>> split_label("gender"), split_label("gender.ripa").association, split_label("weat7").association
    (TestLabel(test='gender', association='cosine'), 'ripa', 'none')
    """
    test, _, association = label.partition(".")
    if test not in FULL_VOCABULARY_TESTS:
        return TestLabel(label, "none")
    return TestLabel(test, association or "cosine")


_FLOAT = np.dtype("float64")
_INT = np.dtype("int64")
_BOOL = np.dtype("bool")

# name -> (dtype, fill value, description); "str" is zarr's variable-length UTF-8 string type.
CELL_VARIABLES: dict[str, tuple[Any, Any, str]] = {
    "statistic": (_FLOAT, np.nan, "test statistic s = sum t(X) - sum t(Y)"),
    "effect_size": (_FLOAT, np.nan, "effect size d (sample SD, ddof = sd_ddof)"),
    "effect_size_weighted": (
        _FLOAT,
        np.nan,
        "full-vocabulary tests: weighted mean difference / weighted SD under the cell's weighting (sign of s)",
    ),
    "p_value": (_FLOAT, np.nan, "permutation p-value, (1 + #extreme) / (m + 1) when sampled"),
    "z_score": (_FLOAT, np.nan, "z of s under the closed-form permutation null"),
    "p_value_normal": (_FLOAT, np.nan, "tail probability of z (normal approximation)"),
    "null_mean": (_FLOAT, np.nan, "mean of the sampled null distribution"),
    "null_std": (_FLOAT, np.nan, "standard deviation of the sampled null distribution"),
    "n_permutations": (_INT, -1, "permutations drawn (or enumerated when exact)"),
    "exact": (_BOOL, False, "all distinct splits were enumerated"),
    "n_x": (_INT, -1, "size of X"),
    "n_y": (_INT, -1, "size of Y"),
    "n_a": (_INT, -1, "attribute words of A found in the embedding"),
    "n_b": (_INT, -1, "attribute words of B found in the embedding"),
    "alternative": (str, "", "alternative hypothesis as resolved for the cell: greater, less or two-sided"),
    "t_method": (str, "", "method weighting t = weight x u: uniform, zipf or frequency; none for classic tests"),
    "attribute_words_a": (str, "", "attribute words of A found and used, comma-separated"),
    "attribute_words_b": (str, "", "attribute words of B found and used, comma-separated"),
    "missing_attribute_words": (str, "", "attribute words asked for but absent, e.g. 'A: foo; B: bar'"),
    "note": (str, "", "why the cell holds no result, or a warning about it; empty otherwise"),
    "attribute_set": (str, "", "attribute words of a gender cell: catalog, iat or explicit (study option attributes)"),
    "u_association": (
        str,
        "",
        "per-word association u of a gender or context cell: cosine, euclidean, ripa or semaxis; none for classic tests",
    ),
    "word_sets": (
        str,
        "",
        "source of the cell's word sets: weat7, xweat7:de, iat:career:fr (cc), study, weathub.weat7:ar (a test of the study's word_sets files in one language); catalog, iat or explicit attribute words of a full-vocabulary cell",
    ),
    "target_words_x": (str, "", "target words of X found and used (classic tests; S of a set metric), comma-separated"),
    "target_words_y": (str, "", "target words of Y found and used (classic tests), comma-separated"),
    "missing_target_words": (str, "", "target words asked for but absent, e.g. 'X: foo; Y: bar'"),
    "target_coverage": (_FLOAT, np.nan, "share of the target words asked for that were found (classic tests)"),
    "effect_size_ci_low": (
        _FLOAT,
        np.nan,
        "lower end of the effect size's interval at ci_level, centred on d: a bootstrap confidence interval, or for a "
        "full-vocabulary test with one attribute word a side the attribute-word spread (how far d moves when the "
        "attribute words are replaced by random words of their frequencies; not a confidence interval); ci_method "
        "says which",
    ),
    "effect_size_ci_high": (
        _FLOAT,
        np.nan,
        "upper end of the effect size's interval at ci_level (see effect_size_ci_low)",
    ),
    "effect_size_se": (
        _FLOAT,
        np.nan,
        "standard error of the effect size: the bootstrap distribution's SD, or the SD of the placebo pairs' d for an "
        "attribute-word spread",
    ),
    "ci_level": (_FLOAT, np.nan, "level of the effect size's interval"),
    "ci_method": (
        str,
        "",
        "how the effect size's interval was made (a bootstrap, or the attribute-word spread), or why there is none",
    ),
    "p_value_placebo": (
        _FLOAT,
        np.nan,
        "p of d against the d of random attribute pairs of the same word frequencies (placebo pairs); a set-level "
        "metric's: of its value",
    ),
    "z_placebo": (_FLOAT, np.nan, "(d - mean) / SD of the placebo pairs' d"),
    "effect_size_placebo_percentile": (_FLOAT, np.nan, "percentile of d among the placebo pairs' d"),
    "p_value_placebo_statistic": (
        _FLOAT,
        np.nan,
        "p of s against the placebo pairs' s (s grows with the distance between the attribute words; d does not)",
    ),
    "z_placebo_statistic": (_FLOAT, np.nan, "(s - mean) / SD of the placebo pairs' s"),
    "placebo_rank_ratio": (
        _FLOAT,
        np.nan,
        "largest factor between a placebo word's frequency rank and its attribute word's that the windows allowed "
        "(the study's rank_ratio unless a window was widened to hold min_candidates)",
    ),
    "placebo_windows": (str, "", "each attribute word's window of frequency ranks, e.g. 'he (rank 17): ranks 5-98'"),
    "n_placebo": (_INT, -1, "placebo pairs drawn"),
    "p_value_adjusted": (
        _FLOAT,
        np.nan,
        "p_value adjusted for multiple comparisons over its family of languages (its attrs: correction, alpha)",
    ),
    "p_value_placebo_adjusted": (_FLOAT, np.nan, "p_value_placebo adjusted like p_value_adjusted"),
    "store_fingerprint": (
        str,
        "",
        "fingerprint of the embedding store the cell's language was read from (its attr fingerprint, written at "
        "ingest); empty for an embedding held in memory or a store written before stores had one",
    ),
    "store_source": (str, "", "where that embedding store's data came from (the file it was ingested from)"),
    "cronbach_alpha": (
        _FLOAT,
        np.nan,
        "Cronbach's alpha of the attribute words as items (cos(w, a) for A's, -cos(w, b) for B's) over the target "
        "words X and Y as cases (classic tests); of the base pairs as items (each pair's association) over the "
        "whole vocabulary as cases (gender with attribute pairs); NaN with fewer than 2 items",
    ),
    "split_half": (
        _FLOAT,
        np.nan,
        "split-half reliability of the attribute words (or base pairs): the correlation over the cases of the "
        "associations of two halves of A and B, Spearman-Brown corrected, averaged over every split (or over "
        "random splits seeded by the cell's seed when there are more)",
    ),
    "effect_size_loo_low": (
        _FLOAT,
        np.nan,
        "smallest effect size d with one attribute word left out (each word of A and B in turn, classic tests; "
        "each base pair of a cosine or RIPA gender cell of pairs, from the pairs' moments over the vocabulary)",
    ),
    "effect_size_loo_high": (_FLOAT, np.nan, "largest effect size d with one attribute word left out"),
    "loo_word": (str, "", "the attribute word whose leaving out moves d most, e.g. 'he (A)', or base pair, 'he/she'"),
    "effect_size_without_loo_word": (_FLOAT, np.nan, "the effect size d without loo_word"),
}
#: a short name of a cube variable for figures and tables (its attr long_name), where it has one
LONG_NAMES: dict[str, str] = {
    "cronbach_alpha": "Cronbach's alpha of the attribute words",
    "split_half": "split-half reliability of the attribute words",
    "effect_size_loo_low": "effect size, one attribute word left out: lowest",
    "effect_size_loo_high": "effect size, one attribute word left out: highest",
    "loo_word": "attribute word that moves the effect size most",
    "effect_size_without_loo_word": "effect size without that word",
}
#: variables computed from the whole cube at the end of a run (:func:`write_cube_variable`), not by a cell
DERIVED_VARIABLES: tuple[str, ...] = ("p_value_adjusted", "p_value_placebo_adjusted")

#: cube variables renamed since earlier releases -> their name there: a store written then is read (and
#: resumed) under the new name, and :func:`open_results` still shows the old one, for one release
FORMER_NAMES: dict[str, str] = {"t_method": "weighting"}
NOT_RUN = "not run (the run has not reached this cell, or stopped before it)"
_DONE = "done"
_DONE_DESCRIPTION = "completion flag of the cell, written after its values"

_REQUIRED_ATTRS = ("seed", "alternative", "similarity")
_RESERVED_ATTRS = ("config", "config_hash", "created", "biasdask_store", "store_id", "unfinished_run")
#: root attr of a cube a run is writing, or that a run left unfinished (see :func:`run_recorded`)
_UNFINISHED = "unfinished_run"
_STORE_KIND = "results"
_EMBEDDINGS_KIND = "embeddings"  # the root of a study of several embeddings
_COMPLETE = "biasdask_complete"
_SCORES_WORD_CHUNK = 2**18
_NULL_CHUNK = 2**20
_CELLS = "cells"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _target(loc: Location) -> tuple[str, dict[str, Any]]:
    """Normalise a store URL into what zarr and xarray accept, plus their keyword arguments.

    ``file://`` URLs become plain paths so that zarr's ``LocalStore`` (atomic writes by rename) is
    used; storage options only reach fsspec URLs (zarr refuses them for local paths). Listing caches
    are off by default: zarr's "create parent group if absent" check trusts ``exists``, and a stale
    cached listing would make it overwrite the root metadata (and so the run's attributes).
    Caller-given options win over these defaults.
    """
    url = loc.url
    if url.startswith("file://") and "::" not in url:
        url = url[len("file://") :]
    if "://" in url or "::" in url:
        defaults: dict[str, Any] = {"use_listings_cache": False}
        if url.startswith(("s3://", "s3a://")):
            defaults["max_concurrency"] = 1  # objects here are small: skip s3fs's HEAD before each GET
        return url, {"storage_options": {**defaults, **storage_options_for(url, loc.storage_options)}}
    return url, {}


def root_metadata(loc: Locatable) -> bytes | None:
    """The bytes of the results store's root metadata (its ``zarr.json``), None where there is none.

    Two processes that read the same bytes see the same store: a study's workers write into it only
    then (a local path on another machine, or ``memory://`` in another process, is another store).
    """
    fs, path = _fs(loc)
    try:
        return fs.cat_file(f"{path.rstrip('/')}/zarr.json")
    except (FileNotFoundError, NotADirectoryError):
        return None


def _in_process_only(target: str) -> bool:
    """Whether ``target`` is (or chains to) fsspec's ``memory://``, which only this process can see.

    Dask workers in other processes read such a store as an empty file system, and zarr turns
    every missing chunk into fill values: data of these stores must be read in this process.
    """
    return any(fsspec.core.split_protocol(link)[0] == "memory" for link in target.split("::"))


def _variable_attrs(name: str, description: str) -> dict[str, Any]:
    """The attrs of a cube variable: its description, and its long name where it has one."""
    return {"description": description, **({"long_name": LONG_NAMES[name]} if name in LONG_NAMES else {})}


def _check_name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not _SAFE_NAME.match(name):
        raise ConfigError(
            f"{kind} {name!r} is not a safe name for the results store "
            f"(letters, digits, '_', '.', '-'; not starting with a punctuation mark)"
        )
    return name


def _check_labels(kind: str, labels: Sequence[str]) -> list[str]:
    labels = [_check_name(kind, x) for x in labels]
    if not labels:
        raise ConfigError(f"results store: the list of {kind}s is empty")
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ConfigError(f"results store: duplicate {kind}(s) {', '.join(dupes)}")
    return labels


def _json_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in attrs.items():
        value = value.item() if isinstance(value, np.generic) else value
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ValueError(f"create_results: attribute {key!r} is not JSON-serialisable: {value!r}") from None
        out[key] = value
    return out


def config_hash(config_text: str) -> str:
    """SHA-256 of the canonical config text: the identity of a run's configuration.

    Parameters
    ----------
    config_text : str
        The configuration as canonical text (volatile keys removed by the caller).

    Returns
    -------
    str
        64 hexadecimal digits, stored as attribute ``config_hash``.
    """
    return hashlib.sha256(config_text.encode("utf-8")).hexdigest()


def _open_root(loc: Locatable) -> zarr.Group | None:
    loc = as_location(loc)
    target, kw = _target(loc)
    try:
        return zarr.open_group(target, mode="r", zarr_format=3, use_consolidated=False, **kw)
    except (FileNotFoundError, GroupNotFoundError, NodeNotFoundError):
        return None


def _refuse_several(loc: Location) -> None:
    """Raise a :class:`BiasdaskError` naming the embeddings' cubes where ``loc`` holds the results of a
    study of several embeddings (which a function of one cube cannot read)."""
    names = embeddings_of(loc)
    if names:
        cubes = ", ".join(display_url(embedding_url(loc.url, name)) for name in names)
        raise BiasdaskError(f"{loc}: the results of a study of several embeddings; give one of their cubes: {cubes}")


def _open_complete_root(loc: Locatable) -> zarr.Group:
    loc = as_location(loc)
    group = _open_root(loc)
    if group is None or group.attrs.get("biasdask_store") != _STORE_KIND:
        _refuse_several(loc)
        raise IncompleteStoreError(f"{loc}: no biasdask results store there")
    if "config_hash" not in group.attrs:
        raise IncompleteStoreError(
            f"{loc}: results store whose creation never finished (no config_hash); run again to recreate it"
        )
    return group


def stored_config(loc: Locatable) -> str | None:
    """The canonical study (YAML text) of the results store at ``url``; None where there is no
    finished-creating results store (nothing there, other data, a creation that was interrupted)."""
    loc = as_location(loc)
    group = _open_root(loc)
    if group is None or group.attrs.get("biasdask_store") != _STORE_KIND or "config_hash" not in group.attrs:
        return None
    return str(group.attrs.get("config", ""))


def _labels(group: zarr.Group) -> dict[str, list[str]]:
    return {dim: [str(x) for x in np.asarray(zarr_compat.array(group, dim)[...])] for dim in DIMS}


def _fs(loc: Locatable) -> tuple[fsspec.AbstractFileSystem, str]:
    """The filesystem and path of the results store, with :func:`_target`'s options, opened by
    :func:`biasdask.io.fs.url_to_fs` (and so with its timeouts)."""
    target, kw = _target(as_location(loc))
    protocol = fsspec.core.split_protocol(target)[0] or "file"
    return url_to_fs(Location(target, {protocol: kw["storage_options"]} if kw else {}))


def _has_contents(loc: Locatable) -> bool:
    loc = as_location(loc)
    fs, path = _fs(loc)
    if not fs.exists(path):
        return False
    return not fs.isdir(path) or bool(fs.ls(path))


def create_results(
    loc: Locatable,
    languages: Sequence[str],
    methods: Sequence[str],
    tests: Sequence[str],
    attrs: Mapping[str, Any],
    config_text: str,
    overwrite: bool = False,
) -> None:
    """Create the results cube at ``url``, or keep an existing one of the same configuration.

    Parameters
    ----------
    url : str
        Any fsspec URL or local path (``results.zarr``, ``file://...``, ``memory://...``,
        ``s3://bucket/results.zarr``).
    languages, methods, tests : sequence of str
        Labels of the three dimensions, in cube order (safe path components, no duplicates).
    attrs : mapping
        Run attributes, JSON-serialisable: ``seed``, ``alternative`` and ``similarity`` are required;
        ``sd_ddof`` defaults to 1 and ``biasdask_version`` to this package's version. ``config``,
        ``config_hash``, ``created``, ``biasdask_store`` and ``store_id`` are set here and may not
        be given.
    config_text : str
        The run's configuration as canonical YAML text (volatile keys already removed by the caller).
        Stored as attribute ``config``; its SHA-256 is ``config_hash``, the identity of the run.
    overwrite : bool
        Replace a results store at ``url`` (even one of the same config) by a fresh cube. Anything
        else at ``url`` (a directory of files, an embedding store) is refused and left untouched.

    Raises
    ------
    StoreConflictError
        ``url`` holds a results store of a different configuration (or other data, or other
        labels) and ``overwrite`` is false.

    Notes
    -----
    An existing store with the same ``config_hash`` and labels is kept untouched: the run resumes
    and :func:`done_cells` tells which cells are finished. A store whose creation was interrupted
    (no ``config_hash`` yet) holds no results and is recreated.
    """
    loc = as_location(loc)
    labels = {
        "language": _check_labels("language", languages),
        "method": _check_labels("method", methods),
        "test": _check_labels("test", tests),
    }
    missing = [k for k in _REQUIRED_ATTRS if k not in attrs]
    if missing:
        raise ValueError(f"create_results: attrs lacks {', '.join(missing)}")
    reserved = [k for k in _RESERVED_ATTRS if k in attrs]
    if reserved:
        raise ValueError(f"create_results: attrs may not set {', '.join(reserved)}")
    digest = config_hash(config_text)

    existing = _open_root(loc)
    if overwrite and (
        existing.attrs.get("biasdask_store") not in (_STORE_KIND, _EMBEDDINGS_KIND)
        if existing is not None
        else _has_contents(loc)
    ):  # --overwrite replaces a results store, never anything else
        raise StoreConflictError(f"{loc}: holds data that is not a biasdask results store; refusing to replace it")
    if not overwrite:
        if existing is not None:
            found = existing.attrs.get("config_hash")
            if existing.attrs.get("biasdask_store") == _EMBEDDINGS_KIND:
                raise StoreConflictError(
                    f"{loc}: holds the results of a study of several embeddings; pass --overwrite to replace them"
                )
            if existing.attrs.get("biasdask_store") != _STORE_KIND:
                raise StoreConflictError(
                    f"{loc}: holds data that is not a biasdask results store; pass --overwrite to replace it"
                )
            if found is not None:
                if found != digest:
                    raise StoreConflictError(
                        f"{loc}: results store written by a different config (hash {str(found)[:12]} != "
                        f"{digest[:12]}); pass --overwrite to replace it"
                    )
                if _labels(existing) != labels:
                    raise StoreConflictError(
                        f"{loc}: results store of the same config but other languages/methods/tests; "
                        f"pass --overwrite to replace it"
                    )
                target, kw = _target(loc)
                zarr.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw).update_attributes(
                    {_UNFINISHED: _run_started()}
                )  # a resumed run
                return
        elif _has_contents(loc):
            raise StoreConflictError(
                f"{loc}: holds data that is not a biasdask results store; pass --overwrite to replace it"
            )

    attributes = {
        "biasdask_store": _STORE_KIND,
        "store_id": uuid.uuid4().hex,
        "sd_ddof": 1,
        "biasdask_version": __version__,
        **_json_attrs(attrs),
        "config": config_text,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        _UNFINISHED: _run_started(),
    }
    target, kw = _target(loc)
    zarr_compat.run(_create_async(target, kw, labels, attributes, digest))


def embedding_url(url: str, name: str) -> str:
    """The URL of the results cube of the embedding ``name`` in the results store ``url`` of a study of
    several embeddings (its child group ``name``).

    Examples
    --------
    >>> embedding_url("s3://bucket/iat.zarr/", "wiki")
    's3://bucket/iat.zarr/wiki'
    """
    return f"{str(url).rstrip('/')}/{name}"


def embeddings_of(loc: Locatable) -> tuple[str, ...]:
    """The embeddings of the study of several embeddings whose results store is at ``loc`` (its root
    group's attribute ``embeddings``), empty for anything else (a results cube, nothing)."""
    group = _open_root(loc)
    if group is None or group.attrs.get("biasdask_store") != _EMBEDDINGS_KIND:
        return ()
    names = group.attrs.get("embeddings")
    return tuple(str(name) for name in names) if isinstance(names, list) else ()


def create_embeddings_root(loc: Locatable, names: Sequence[str], *, overwrite: bool = False) -> None:
    """Make ``loc`` the results store of a study of the embeddings ``names``: a group whose attribute
    ``embeddings`` lists them, each embedding's cube (:func:`create_results`) its child group
    (:func:`embedding_url`); or set the names of the one there.

    Raises
    ------
    StoreConflictError
        ``loc`` holds a results cube (of a study of one embedding) and ``overwrite`` is false, or data
        that is no results store (never replaced).
    """
    loc = as_location(loc)
    labels = _check_labels("embedding", names)
    existing = _open_root(loc)
    kind = existing.attrs.get("biasdask_store") if existing is not None else None
    target, kw = _target(loc)
    if kind == _EMBEDDINGS_KIND and not overwrite:
        zarr.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw).update_attributes(
            {"embeddings": labels}
        )
        return
    if kind not in (_STORE_KIND, _EMBEDDINGS_KIND) and _has_contents(loc):
        raise StoreConflictError(f"{loc}: holds data that is not a biasdask results store; refusing to replace it")
    if kind == _STORE_KIND and not overwrite:
        raise StoreConflictError(
            f"{loc}: holds the results cube of a study of one embedding; pass --overwrite to replace it"
        )
    attributes = {
        "biasdask_store": _EMBEDDINGS_KIND,
        "embeddings": labels,
        "description": "results of a study of several embeddings: the results cube of each in the child group "
        "of its name",
        "biasdask_version": __version__,
        "created": _now(),
    }
    # overwrite=True deletes everything under the prefix (a cube there before, the cubes of other embeddings)
    zarr_compat.run(zarr_async.create_group(store=target, overwrite=True, zarr_format=3, attributes=attributes, **kw))


def remove_embedding(loc: Locatable, name: str) -> None:
    """Delete the results cube of the embedding ``name`` from the results store of a study of several
    embeddings at ``loc`` (one its study no longer has: set the names first, :func:`create_embeddings_root`)."""
    loc = as_location(loc)
    if name in embeddings_of(loc):
        raise StoreConflictError(f"{loc}: {name} is still one of its embeddings")
    fs, path = _fs(loc)
    child = f"{path.rstrip('/')}/{_check_name('embedding', name)}"
    if fs.exists(child):
        fs.rm(child, recursive=True)
    fs.invalidate_cache()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _run_started() -> dict[str, Any]:
    return {"started": _now(), "host": socket.gethostname(), "pid": os.getpid()}


#: what the storage under a results store says when it cannot take more: the disk is full, read-only, refused
_FULL = (errno.ENOSPC, errno.EDQUOT)
_REFUSED = (errno.EROFS, errno.EACCES, errno.EPERM)


@contextlib.contextmanager
def run_recorded(loc: Locatable, config_text: str) -> Iterator[None]:
    """Around the part of a run that writes the results store at ``loc`` (of the study ``config_text``),
    which :func:`create_results` marks as under way (root attr ``unfinished_run``): on success the mark
    is removed; on a failure the cube records when and why the run stopped (as far as its storage takes
    it), for :func:`progress_note`, and the failure of a full, read-only or refusing file system is
    raised as one line naming the results store and what to do.

    Raises
    ------
    StorageFullError
        The storage of the results store is full (or the quota reached).
    BiasdaskOSError
        It is read-only, or refuses writes (permissions).
    """
    loc = as_location(loc)
    entered = _now()
    try:
        yield
    except BaseException as exc:
        fault = _storage_fault(loc, exc)
        if isinstance(exc, KeyboardInterrupt):
            why = "interrupted"
        else:
            why = fault or (str(exc) if isinstance(exc, BiasdaskException) else one_line(exc))
        with contextlib.suppress(Exception):  # the storage may take nothing more
            _record_stop(loc, config_text, entered, why)
        if fault is not None:
            raise (StorageFullError if cast(OSError, exc).errno in _FULL else BiasdaskOSError)(fault) from None
        raise
    with contextlib.suppress(Exception):
        root = _writable_root(loc, config_text)
        if root is not None and _UNFINISHED in root.attrs:
            del root.attrs[_UNFINISHED]


def _writable_root(loc: Location, config_text: str) -> zarr.Group | None:
    """The root group of the results store at ``loc``, writable, if it is the cube of ``config_text``."""
    existing = _open_root(loc)
    if existing is None or existing.attrs.get("config_hash") != config_hash(config_text):
        return None
    target, kw = _target(loc)
    return zarr.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw)


def _record_stop(loc: Location, config_text: str, entered: str, why: str) -> None:
    """Add when and why the run stopped to the mark that this process's run (entered at ``entered``) left."""
    root = _writable_root(loc, config_text)
    mark = root.attrs.get(_UNFINISHED) if root is not None else None
    if not isinstance(mark, dict) or (mark.get("host"), mark.get("pid")) != (socket.gethostname(), os.getpid()):
        return
    if str(mark.get("started", "")) < entered:
        return  # another run's mark: this one failed before it wrote any
    cast(zarr.Group, root).update_attributes({_UNFINISHED: {**mark, "stopped": _now(), "reason": why}})


def _storage_fault(loc: Location, exc: BaseException) -> str | None:
    """The one line for a write into the results store that its file system refused (full, read-only,
    permissions), naming the store and what to do; None for any other error."""
    if not isinstance(exc, OSError) or isinstance(exc, BiasdaskException) or exc.errno not in (*_FULL, *_REFUSED):
        return None
    reason = os.strerror(exc.errno)
    if exc.errno in _FULL:
        try:
            done = f"{len(done_cells(loc))} cells are written"
        except Exception:  # noqa: BLE001 - only for the message
            done = "the cells written so far are kept"
        return (
            f"{loc}: the disk of the results store is full ({reason}); {done}: free some space "
            "(or choose another output) and run the study again to go on"
        )
    where = f" ({redact(str(exc.filename))})" if exc.filename else ""
    return f"{loc}: cannot write the results store: {reason}{where}; choose an output you can write (--output)"


async def _create_async(
    target: str, kw: dict[str, Any], labels: dict[str, list[str]], attributes: dict[str, Any], digest: str
) -> None:
    # overwrite=True deletes everything under the prefix (old chunks, scores, nulls).
    root = await zarr_async.create_group(store=target, overwrite=True, zarr_format=3, attributes=attributes, **kw)
    shape = tuple(len(labels[d]) for d in DIMS)
    coords = await asyncio.gather(
        *(
            root.create_array(d, shape=(len(labels[d]),), dtype=str, chunks=(len(labels[d]),), dimension_names=(d,))
            for d in DIMS
        )
    )
    variables = {**CELL_VARIABLES, _DONE: (_BOOL, False, _DONE_DESCRIPTION)}
    await asyncio.gather(
        *(coord.setitem(slice(None), np.array(labels[d], dtype=object)) for coord, d in zip(coords, DIMS)),
        *(
            root.create_array(
                name,
                shape=shape,
                dtype=dtype,
                fill_value=fill,
                chunks=shape,  # one object per variable: the cube opens at once (cells go to records)
                dimension_names=DIMS,
                attributes=_variable_attrs(name, description),
            )
            for name, (dtype, fill, description) in variables.items()
        ),
        root.create_group(_CELLS, attributes={"description": "records of cells finished since the last compaction"}),
    )
    await root.update_attributes({"config_hash": digest})  # last: marks the template complete


def stop_reason(cube: xr.Dataset) -> str | None:
    """``"the run stopped at <when>: <why>"`` as :func:`run_recorded` recorded it in ``cube`` (an error,
    or the languages a run left not run and why); None when the last run recorded no stop."""
    mark = cube.attrs.get(_UNFINISHED)
    if isinstance(mark, dict) and mark.get("reason"):
        return f"the run stopped at {mark.get('stopped')}: {mark['reason']}"
    return None


def progress_note(cube: xr.Dataset, location: Locatable) -> str | None:
    """One line on a cube of ``location`` whose cells are not all done: how many are, and whether a run
    is writing it now, stopped (when, and why, as recorded by :func:`run_recorded`) or left it
    without a word (killed); None when every cell is done."""
    done, total = int(cube[_DONE].values.sum()), int(cube[_DONE].size)
    if done == total:
        return None
    head, again = f"{done} of {total} cells done", "run the study again to finish the others"
    holder = lock_holder(location)
    if holder is not None:
        return f"{head}: a run is writing it (host {holder.get('host')}, pid {holder.get('pid')})"
    mark = cube.attrs.get(_UNFINISHED)
    stopped = stop_reason(cube)
    if stopped is not None:
        return f"{head}: {stopped} ({again})"
    if isinstance(mark, dict):
        return (
            f"{head}: the run started at {mark.get('started')} (host {mark.get('host')}, pid {mark.get('pid')}) "
            f"stopped before it could say why (killed?) ({again})"
        )
    return f"{head} ({again})"


def _position(labels: dict[str, list[str]], url: str, dim: str, value: str) -> int:
    try:
        return labels[dim].index(value)
    except ValueError:
        raise BiasdaskError(f"{url}: no {dim} {value!r} in the results store (has {', '.join(labels[dim])})") from None


def _index(labels: dict[str, list[str]], url: str, cell: tuple[str, str, str]) -> tuple[int, int, int]:
    i, j, k = (_position(labels, url, dim, value) for dim, value in zip(DIMS, cell))
    return i, j, k


def _cell_value(name: str, value: Any) -> Any:
    dtype, fill, _ = CELL_VARIABLES[name]
    if value is None:
        return fill
    if dtype is str:
        return str(value)
    if dtype == _BOOL:
        return bool(value)
    if dtype == _INT:
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise ValueError(f"write_cell: {name} must be an integer, got {value!r}")
        return int(value)
    return float(value)


# (pid, target, storage options) -> (store_id, labels): the cube's labels never change after creation,
# so writers re-read only the root metadata and reuse the labels while store_id matches. The lock
# makes the cache safe whatever thread or event loop runs the coroutine; it is never held across an await.
_WRITERS: dict[tuple[int, str, str], tuple[str, dict[str, list[str]]]] = {}
_WRITERS_MAX = 16
_WRITERS_LOCK = threading.Lock()


def _record_key(idx: tuple[int, int, int]) -> str:
    return f"{_CELLS}/{idx[0]}.{idx[1]}.{idx[2]}/zarr.json"


def _json_value(value: Any) -> Any:
    """A cell value as JSON: NaN (the float fill) as null; floats keep every bit (shortest repr)."""
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


async def _writer_root(
    target: str, kw: dict[str, Any], url: str, cell: tuple[str, str, str]
) -> tuple[Any, str, tuple[int, int, int]]:
    """A writer's view of the results store: its root (open for writing), store_id, and the index of
    ``cell`` (labels cached per store, see :data:`_WRITERS`)."""
    root = await zarr_async.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw)
    if root.attrs.get("biasdask_store") != _STORE_KIND or "config_hash" not in root.attrs:
        raise IncompleteStoreError(f"{url}: no complete biasdask results store there")
    store_id = root.attrs["store_id"]
    key = (os.getpid(), target, json.dumps(kw, sort_keys=True, default=repr))
    with _WRITERS_LOCK:
        cached = _WRITERS.get(key)
    if cached is None or cached[0] != store_id:
        arrays = await asyncio.gather(*(zarr_compat.async_array(root, d) for d in DIMS))
        coords = await asyncio.gather(*(a.getitem(...) for a in arrays))
        cached = (store_id, {d: [str(x) for x in np.asarray(c)] for d, c in zip(DIMS, coords)})
        with _WRITERS_LOCK:
            if key not in _WRITERS and len(_WRITERS) >= _WRITERS_MAX:
                del _WRITERS[next(iter(_WRITERS))]
            _WRITERS[key] = cached
    return root, store_id, _index(cached[1], url, cell)


async def _write_cell_async(
    target: str, kw: dict[str, Any], url: str, cell: tuple[str, str, str], values: dict[str, Any]
) -> None:
    root, store_id, idx = await _writer_root(target, kw, url, cell)
    record = {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {
            "biasdask_cell": {
                "store_id": store_id,
                **dict(zip(DIMS, cell)),
                "values": {n: _json_value(v) for n, v in values.items()},
            }
        },
    }
    data = json.dumps(record, allow_nan=False, ensure_ascii=False).encode("utf-8")
    await root.store_path.store.set(_record_key(idx), zarr_compat.bytes_buffer(data))


def write_cell(
    loc: Locatable,
    language: str,
    method: str,
    test: str,
    values: Mapping[str, Any],
) -> None:
    """Write one finished cell as its own record: durable and complete at once.

    Parameters
    ----------
    url : str
        The results store made by :func:`create_results`.
    language, method, test : str
        Labels of the cell.
    values : mapping
        Some of :data:`CELL_VARIABLES` (``statistic``, ``p_value``, ..., ``note``); a key left out or
        given as None is written as its fill value (NaN, -1, False, ""), so rewriting a cell leaves
        nothing of an earlier write. A skipped cell is ``{"note": "reason"}``.

    Notes
    -----
    The record is one object (``cells/<i>.<j>.<k>/zarr.json``) written in one put, so there is no
    half-written cell: either :func:`done_cells` lists it with all its values, or not at all. Safe
    to call concurrently for different cells from threads, processes or machines. The cell reaches
    the cube's chunks at the next :func:`compact_results`.
    """
    loc = as_location(loc)
    unknown = sorted(set(values) - set(CELL_VARIABLES))
    if unknown:
        raise ValueError(f"write_cell: unknown variable(s) {', '.join(unknown)}")
    full = {name: _cell_value(name, values.get(name)) for name in CELL_VARIABLES}
    target, kw = _target(loc)
    zarr_compat.run(_write_cell_async(target, kw, loc.url, (language, method, test), full))


async def _read_records_async(root: Any, url: str, labels: dict[str, list[str]]) -> dict[tuple[int, ...], dict]:
    store = root.store_path.store
    names = [n async for n in store.list_dir(f"{_CELLS}/")]
    names = [n for n in names if n.count(".") == 2 and n != "zarr.json"]
    blobs = await asyncio.gather(
        *(store.get(f"{_CELLS}/{n}/zarr.json", prototype=zarr_compat.buffer_prototype()) for n in names)
    )
    store_id = root.attrs["store_id"]
    out = {}
    for name, blob in zip(names, blobs):
        if blob is None:  # a directory left by a compaction that stopped deleting half way
            continue
        rec = json.loads(blob.to_bytes())["attributes"]["biasdask_cell"]
        idx = tuple(int(x) for x in name.split("."))
        if rec.get("store_id") != store_id or any(labels[d][i] != rec[d] for d, i in zip(DIMS, idx)):
            raise IncompleteStoreError(f"{url}: cell record {_CELLS}/{name} does not belong to this results store")
        values = rec["values"]
        out[idx] = {
            n: _cell_value(n, values[n] if n in values else values.get(FORMER_NAMES.get(n, n))) for n in CELL_VARIABLES
        }
    return out


async def _load_async(target: str, kw: dict[str, Any], url: str) -> tuple[Any, dict, dict, dict, dict]:
    """Root group, labels, the cube's values (records laid over the chunks), the records, the variables' attrs.

    Every read is issued concurrently: about two requests per variable plus one listing, whatever
    the number of cells.
    """
    try:
        root = await zarr_async.open_group(target, mode="r", zarr_format=3, use_consolidated=False, **kw)
    except (FileNotFoundError, GroupNotFoundError, NodeNotFoundError):
        root = None
    if root is None or root.attrs.get("biasdask_store") != _STORE_KIND:
        raise IncompleteStoreError(f"{url}: no biasdask results store there")
    if "config_hash" not in root.attrs:
        raise IncompleteStoreError(
            f"{url}: results store whose creation never finished (no config_hash); run again to recreate it"
        )
    variables = {**CELL_VARIABLES, _DONE: (_BOOL, False, "")}
    names = [*DIMS, *variables, *FORMER_NAMES.values()]
    found = await asyncio.gather(*(root.getitem(n) for n in names), return_exceptions=True)
    for name, node in zip(names, found):
        if isinstance(node, BaseException) and (name in DIMS or name == _DONE or not isinstance(node, KeyError)):
            raise node
    # a store of an older biasdask may lack a variable added since: read as its fill value
    arrays = {n: a for n, a in zip(names, found) if isinstance(a, zarr_compat.AsyncArray)}
    for name, former in FORMER_NAMES.items():  # ... or hold it under its former name
        if name not in arrays and former in arrays:
            arrays[name] = arrays.pop(former)
    data = dict(zip(arrays, await asyncio.gather(*(a.getitem(...) for a in arrays.values()))))
    labels = {d: [str(x) for x in np.asarray(data[d])] for d in DIMS}
    records = await _read_records_async(root, url, labels)
    shape = tuple(len(labels[d]) for d in DIMS)
    cube = {}
    for name, (dtype, fill, _) in variables.items():
        values = (
            np.asarray(data[name]) if name in data else np.full(shape, fill, dtype=object if dtype is str else dtype)
        )
        cube[name] = values.astype(object) if dtype is str else values.astype(dtype)
    for idx, record in records.items():
        for name, value in record.items():
            cube[name][idx] = value
        cube[_DONE][idx] = True
    attrs = {n: dict(arrays[n].attrs) if n in arrays else _variable_attrs(n, variables[n][2]) for n in variables}
    return root, labels, cube, records, attrs


def _load(loc: Locatable) -> tuple[Any, dict, dict, dict, dict]:
    loc = as_location(loc)
    target, kw = _target(loc)
    return zarr_compat.run(_load_async(target, kw, loc.url))


def compact_results(loc: Locatable) -> int:
    """Fold the pending cell records into the cube's chunks; return how many cells were folded.

    Parameters
    ----------
    url : str
        The results store.

    Notes
    -----
    :func:`biasdask.run` calls it when it starts (a resumed run) and when it ends, so a finished
    cube is a handful of objects that plain xarray reads at once. The chunks are written first
    (``done`` last), the records deleted after: a compaction killed at any point loses nothing.
    Only one process may compact a store at a time, and no cell may be written meanwhile.
    """
    loc = as_location(loc)
    _, _, cube, records, _ = _load(loc)
    if not records:
        return 0
    target, kw = _target(loc)

    async def fold() -> None:
        root = await zarr_async.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw)
        held = {}  # variable -> its array's name in the store: an older store may lack some, or name it otherwise
        for n in CELL_VARIABLES:
            for stored in (n, FORMER_NAMES.get(n)):
                if stored is not None and n not in held and await root.contains(stored):
                    held[n] = stored
        arrays = await asyncio.gather(*(zarr_compat.async_array(root, stored) for stored in held.values()))
        await asyncio.gather(*(a.setitem(..., cube[n]) for a, n in zip(arrays, held)))
        await (await zarr_compat.async_array(root, _DONE)).setitem(..., cube[_DONE])
        store = root.store_path.store
        await asyncio.gather(*(store.delete_dir(f"{_CELLS}/{i}.{j}.{k}") for i, j, k in records))

    zarr_compat.run(fold())
    return len(records)


def write_cube_variable(
    loc: Locatable,
    name: str,
    values: np.ndarray,
    attrs: Mapping[str, Any] | None = None,
) -> None:
    """Write a variable computed from the whole cube (one of :data:`DERIVED_VARIABLES`), whole, with ``attrs``
    added to its attributes; a store of an older biasdask that lacks it gets it.

    Call it after :func:`compact_results`, with no cell being written: records never hold these variables.
    """
    loc = as_location(loc)
    if name not in DERIVED_VARIABLES:
        raise ValueError(f"{name!r} is not a derived cube variable ({', '.join(DERIVED_VARIABLES)})")
    dtype, fill, description = CELL_VARIABLES[name]
    target, kw = _target(loc)

    async def write() -> None:
        root = await zarr_async.open_group(target, mode="r+", zarr_format=3, use_consolidated=False, **kw)
        shape = tuple([(await zarr_compat.async_array(root, d)).shape[0] for d in DIMS])
        data = np.asarray(values, dtype=dtype)
        if data.shape != shape:
            raise ValueError(f"{name}: values of shape {data.shape} for a cube of shape {shape}")
        if await root.contains(name):
            target_array = await zarr_compat.async_array(root, name)
        else:
            target_array = await root.create_array(
                name,
                shape=shape,
                dtype=dtype,
                fill_value=fill,
                chunks=shape,
                dimension_names=DIMS,
                attributes={"description": description},
            )
        await target_array.setitem(..., data)
        await target_array.update_attributes(dict(attrs or {}))

    zarr_compat.run(write())


def done_cells(loc: Locatable) -> set[tuple[str, str, str]]:
    """The ``(language, method, test)`` cells whose values are completely written.

    Parameters
    ----------
    url : str
        The results store.

    Returns
    -------
    set of tuple of str
    """
    loc = as_location(loc)
    _, labels, cube, _, _ = _load(loc)
    done = cube[_DONE]
    return {(labels["language"][i], labels["method"][j], labels["test"][k]) for i, j, k in zip(*np.nonzero(done))}


def open_cube(location: Locatable) -> xr.Dataset:
    """Open the results cube, loaded in memory, with unfinished cells masked.

    Parameters
    ----------
    location
        The results store: a path, fsspec URL, :class:`~biasdask.Location` (URL and storage options) or
        fsspec mapper.

    Returns
    -------
    xarray.Dataset
        Dims ``language``, ``method``, ``test`` (string coordinates; a study's cube also has the
        coordinate ``association`` along ``test``: cosine, euclidean, ripa, semaxis, or none for the
        classic tests), the variables of
        :data:`CELL_VARIABLES` and ``done``, the run's attributes; cells of a run still going (or
        stopped) included. Cells not done are NaN (float), -1 (int64), False (``exact``), ""
        (strings) with the note "not run". Select with a dict, since ``ds.sel(method=...)``
        collides with ``sel``'s own ``method`` argument::

            ds.sel({"method": "zipf", "test": "gender"}).effect_size

    Raises
    ------
    IncompleteStoreError
        No results store at ``url``, or one whose creation never finished.
    BiasdaskError
        ``location`` holds the results of a study of several embeddings (:func:`open_results` opens
        those); the message names the embeddings' cubes.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> _ = biasdask.run({"output": "memory://examples/open_results/r.zarr", "languages": {"en": {"store": emb}},
    ...                   "tests": ["gender"], "n_permutations": 99, "seed": 1})
    >>> ds = open_cube("memory://examples/open_results/r.zarr")
    >>> ds["effect_size"].dims
    ('language', 'method', 'test')
    >>> ds.sel({"method": "uniform", "test": "gender"})["n_x"].values.tolist()
    [1002]
    """
    loc = as_location(location)
    _refuse_several(loc)
    root, labels, cube, _, attrs = _load(loc)
    done = cube[_DONE]
    data_vars = {}
    for name, (dtype, fill, _) in CELL_VARIABLES.items():
        if name == "note":
            fill = NOT_RUN
        values = np.where(done, cube[name], fill).astype(object if dtype is str else dtype)
        data_vars[name] = (DIMS, values, attrs[name])
    data_vars[_DONE] = (DIMS, done, attrs[_DONE])
    for name, former in FORMER_NAMES.items():
        data_vars[former] = (DIMS, data_vars[name][1], {"description": f"deprecated name of {name}, for one release"})
    coords: dict[str, Any] = {dim: np.array(labels[dim], dtype=object) for dim in DIMS}
    by_test = root.attrs.get("test_associations")
    if isinstance(by_test, dict):  # which association each test label measures (studies since the option)
        coords["association"] = ("test", np.array([by_test.get(k, "") for k in labels["test"]], dtype=object))
    return xr.Dataset(data_vars, coords=coords, attrs=dict(root.attrs))


@keyword_api("open_results(location, *, embedding=None)")
def open_results(location: Locatable, *, embedding: str | None = None) -> xr.Dataset | xr.DataTree:
    """Open a results store: the cube of a study (:func:`open_cube`), or the cubes of a study of several
    embeddings as one tree.

    Parameters
    ----------
    location
        The results store: a path, fsspec URL, :class:`~biasdask.Location` (URL and storage options) or
        fsspec mapper.
    embedding : str, optional
        Of a study of several embeddings, the one whose cube to open.

    Returns
    -------
    xarray.Dataset or xarray.DataTree
        The results cube (dims ``language``, ``method``, ``test``; see :func:`open_cube`). Of a study of
        several embeddings without ``embedding``: an ``xarray.DataTree`` whose root holds the study's
        attributes (``embeddings``: their names) and whose child of each embedding's name holds its cube
        (``tree["cc"].to_dataset()``), as ``xarray.open_datatree`` reads the store, but with unfinished
        cells masked; with ``embedding``, that cube.

    Raises
    ------
    IncompleteStoreError
        No results store at ``location``, or one whose creation never finished.
    BiasdaskError
        ``embedding`` is not one of the study's embeddings, or ``location`` holds no study of several
        embeddings.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", *(f"w{i}" for i in range(1000))]
    >>> def emb(seed):
    ...     vectors = np.random.default_rng(seed).standard_normal((len(words), 20))
    ...     return biasdask.as_embeddings(vectors, words, language="en")
    >>> _ = biasdask.run({"output": "memory://examples/open_results/two.zarr", "tests": ["gender"],
    ...                   "embeddings": {"a": None, "b": None}, "languages": {"en": {"store": {"a": emb(0), "b": emb(1)}}},
    ...                   "n_permutations": 99, "seed": 1, "placebo": False})
    >>> tree = biasdask.open_results("memory://examples/open_results/two.zarr")
    >>> list(tree.children), tree.attrs["embeddings"]
    (['a', 'b'], ['a', 'b'])
    >>> tree["b"]["effect_size"].dims
    ('language', 'method', 'test')
    >>> cube = biasdask.open_results("memory://examples/open_results/two.zarr", embedding="b")
    >>> bool((cube["effect_size"] == tree["b"]["effect_size"]).all())
    True
    """
    loc = as_location(location)
    names = embeddings_of(loc)
    if embedding is not None:
        if embedding not in names:
            held = f"its embeddings are {', '.join(names)}" if names else "it holds no study of several embeddings"
            raise BiasdaskError(f"{loc}: no embedding {embedding!r} ({held})")
        return open_cube(Location(embedding_url(loc.url, embedding), loc.storage_options))
    if not names:
        return open_cube(loc)
    root = _open_root(loc)
    assert root is not None  # it has names
    cubes = {name: open_cube(Location(embedding_url(loc.url, name), loc.storage_options)) for name in names}
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs=dict(root.attrs)), **cubes})


def _check_cell(loc: Locatable, cell: tuple[str, str, str]) -> None:
    loc = as_location(loc)
    root = _open_complete_root(loc)
    _index(_labels(root), loc.url, cell)


def write_scores(
    loc: Locatable,
    language: str,
    scores: xr.Dataset,
    *,
    words_from: Iterable[tuple[str, bytes]] | None = None,
) -> None:
    """Store the per-word scores of one language in subgroup ``scores/<language>``.

    Parameters
    ----------
    url : str
        The results store.
    language : str
        One of the store's languages.
    scores : xarray.Dataset
        Variables ``u`` (word), ``t`` (method, word) and ``rank`` (word), string coordinates
        ``word`` and ``method``; extra variables and attributes are kept. A dask-backed dataset is computed first
        (on the current scheduler).
    words_from : iterable of (str, bytes), optional
        Instead of a ``word`` coordinate in ``scores``: the files of an already encoded ``word`` array
        (its ``zarr.json`` and chunks, keys relative to the array, as
        :func:`biasdask.io.store.vocabulary_files` gives an embedding store's), written as they are.

    Notes
    -----
    The subgroup is replaced as a whole and marked ``biasdask_complete`` last, so one interrupted
    while writing reads as not done (:func:`scores_done`) and is rewritten on resume.
    """
    loc = as_location(loc)
    _position(_labels(_open_complete_root(loc)), loc.url, "language", language)
    needed = ("u", "t", "rank", "method") if words_from is not None else ("u", "t", "rank", "word", "method")
    missing = [v for v in needed if v not in scores.variables]
    if missing:
        raise ValueError(f"write_scores: scores dataset lacks {', '.join(missing)}")
    ds = scores.load()
    if words_from is None:
        ds = ds.assign_coords(word=ds["word"].astype(object))
    ds = ds.assign_coords(method=ds["method"].astype(object))
    ds["t"] = ds["t"].transpose("method", "word")
    chunk = min(_SCORES_WORD_CHUNK, max(1, ds.sizes["word"]))
    encoding = {
        name: {"chunks": tuple(chunk if d == "word" else ds.sizes[d] for d in var.dims)}
        for name, var in ds.variables.items()
        if var.dims
    }
    ds.attrs.pop(_COMPLETE, None)
    group = f"scores/{language}"
    target, kw = _target(loc)
    ds.to_zarr(target, group=group, mode="w", consolidated=False, zarr_format=3, encoding=encoding, **kw)
    if words_from is not None:
        fs, path = _fs(loc)
        root = f"{path.rstrip('/')}/{group}/word"
        fs.makedirs(f"{root}/c", exist_ok=True)
        for key, data in words_from:
            fs.pipe_file(f"{root}/{key}", data)
    zarr.open_group(target, path=group, mode="r+", zarr_format=3, use_consolidated=False, **kw).attrs[_COMPLETE] = True


def _complete_subgroup(loc: Locatable, path: str) -> zarr.Group | None:
    target, kw = _target(as_location(loc))
    try:
        group = zarr.open_group(target, path=path, mode="r", zarr_format=3, use_consolidated=False, **kw)
    except (FileNotFoundError, GroupNotFoundError, NodeNotFoundError):
        return None
    return group if group.attrs.get(_COMPLETE) is True else None


def scores_done(loc: Locatable, language: str) -> bool:
    """Whether ``scores/<language>`` is completely written.

    Parameters
    ----------
    url : str
        The results store.
    language : str
        The language.

    Returns
    -------
    bool
    """
    loc = as_location(loc)
    return _complete_subgroup(loc, f"scores/{_check_name('language', language)}") is not None


def scores_attrs(loc: Locatable, language: str) -> dict[str, Any] | None:
    """The attributes of the per-word scores of ``language`` (read from their group metadata alone), or
    None when they are not completely written."""
    group = _complete_subgroup(as_location(loc), f"scores/{_check_name('language', language)}")
    return None if group is None else dict(group.attrs)


@keyword_api("open_scores(location, language=...)")
def open_scores(location: Locatable, *, language: str) -> xr.Dataset:
    """Open the per-word scores of one language (dask-backed).

    Parameters
    ----------
    location
        The results store: a path, fsspec URL, :class:`~biasdask.Location` or fsspec mapper.
    language
        The language.

    Returns
    -------
    xarray.Dataset
        ``u`` (word), ``t`` (method, word), ``rank`` (word); pick a weighting with
        ``ds.t.sel({"method": "zipf"})``. Dask-backed, except for a ``memory://`` store: loaded
        here, since the workers of a Dask cluster cannot see this process's memory.

    Raises
    ------
    IncompleteStoreError
        The scores of ``language`` were never written or their writing never finished.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> _ = biasdask.run({"output": "memory://examples/open_scores/r.zarr", "languages": {"en": {"store": emb}},
    ...                   "tests": ["gender"], "n_permutations": 99, "seed": 1})
    >>> scores = biasdask.open_scores("memory://examples/open_scores/r.zarr", language="en")
    >>> scores.sizes["word"], sorted(scores.data_vars)[:2]
    (1002, ['t', 'u'])
    """
    loc = as_location(location)
    path = f"scores/{_check_name('language', language)}"
    if _complete_subgroup(loc, path) is None:
        _refuse_several(loc)
        raise IncompleteStoreError(f"{loc}: no complete per-word scores for language {language!r}")
    target, kw = _target(loc)
    if _in_process_only(target):
        # chunks=None: read without dask, so that no default distributed client computes it elsewhere
        return xr.open_zarr(target, group=path, consolidated=False, zarr_format=3, chunks=None, **kw).load()
    return xr.open_zarr(target, group=path, consolidated=False, zarr_format=3, **kw)


def _reliability_path(kind: str) -> str:
    return f"reliability/{_check_name('reliability figures', kind)}"


def write_reliability(loc: Locatable, kind: str, figures: xr.Dataset) -> None:
    """Store a Dataset of reliability figures in the child group ``reliability/<kind>`` of a results store
    (e.g. ``agreement``), replacing what was there; marked ``biasdask_complete`` last, so one
    interrupted while writing reads as absent (:func:`open_reliability`). Text variables and coordinates
    are stored as variable-length strings."""
    loc = as_location(loc)
    _open_complete_root(loc)
    group = _reliability_path(kind)
    ds = figures.copy()
    for name in list(ds.variables):
        if ds[name].dtype.kind == "U":
            ds[name] = ds[name].astype(object)
    ds.attrs.pop(_COMPLETE, None)
    target, kw = _target(loc)
    ds.to_zarr(target, group=group, mode="w", consolidated=False, zarr_format=3, **kw)
    zarr.open_group(target, path=group, mode="r+", zarr_format=3, use_consolidated=False, **kw).attrs[_COMPLETE] = True


def open_reliability(location: Locatable, *, kind: str) -> xr.Dataset:
    """The reliability figures of a results store's group ``reliability/<kind>`` (loaded; they are small).

    Raises
    ------
    IncompleteStoreError
        The group was never written, or its writing never finished.
    """
    loc = as_location(location)
    path = _reliability_path(kind)
    if _complete_subgroup(loc, path) is None:
        raise IncompleteStoreError(f"{loc}: no complete reliability figures {kind!r} (group {path})")
    target, kw = _target(loc)
    ds = xr.open_zarr(target, group=path, consolidated=False, zarr_format=3, chunks=None, **kw).load()
    ds.attrs.pop(_COMPLETE, None)
    return ds


#: the distributions a cell may store: its permutation null, and its placebo statistics
_DISTRIBUTIONS = {"null": "permutation", "placebo": "draw"}


def _null_path(language: str, method: str, test: str, kind: str = "null") -> str:
    if kind not in _DISTRIBUTIONS:
        raise ValueError(f"kind must be one of {', '.join(_DISTRIBUTIONS)}, got {kind!r}")
    return f"{kind}/{language}/{method}/{test}"


def write_null(
    loc: Locatable,
    language: str,
    method: str,
    test: str,
    null: np.ndarray,
    *,
    kind: Literal["null", "placebo"] = "null",
) -> None:
    """Store the sampled null distribution of one cell in ``null/<language>/<method>/<test>`` (or its
    placebo statistics, ``kind="placebo"``: ``placebo/<language>/<method>/<test>``, dim ``draw``).

    Parameters
    ----------
    url : str
        The results store.
    language, method, test : str
        The cell (must be in the store).
    null : numpy.ndarray
        1-D statistics of the permutations, stored as float64 array ``null`` (dim ``permutation``).

    Notes
    -----
    Write the null before :func:`write_cell` of the same cell, so that a done cell always has it.
    """
    loc = as_location(loc)
    values = np.asarray(null, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"write_null: null distribution must be 1-D, got shape {values.shape}")
    target, kw = _target(loc)
    zarr_compat.run(_write_null_async(target, kw, loc.url, (language, method, test), values, kind))


async def _write_null_async(
    target: str, kw: dict[str, Any], url: str, cell: tuple[str, str, str], values: np.ndarray, kind: str = "null"
) -> None:
    """:func:`write_null` as one coroutine: one trip into zarr's event loop, not one per step."""
    root, _, _ = await _writer_root(target, kw, url, cell)
    group = await zarr_async.create_group(
        store=root.store_path.store, path=_null_path(*cell, kind), overwrite=True, zarr_format=3
    )
    await group.create_array(
        kind,
        data=values,
        chunks=(min(_NULL_CHUNK, max(1, values.size)),),
        dimension_names=(_DISTRIBUTIONS[kind],),
    )
    await group.update_attributes({_COMPLETE: True})


def read_null(
    loc: Locatable,
    language: str,
    method: str,
    test: str,
    *,
    kind: Literal["null", "placebo"] = "null",
) -> np.ndarray:
    """Read the null distribution (or the placebo statistics) stored by :func:`write_null`.

    Parameters
    ----------
    url : str
        The results store.
    language, method, test : str
        The cell.

    Returns
    -------
    numpy.ndarray
        float64, one statistic per permutation.

    Raises
    ------
    IncompleteStoreError
        No complete null distribution stored for the cell.
    """
    loc = as_location(loc)
    cell = (language, method, test)
    _check_cell(loc, cell)
    group = _complete_subgroup(loc, _null_path(*cell, kind))
    if group is None:
        what = "null distribution" if kind == "null" else "placebo distribution"
        raise IncompleteStoreError(f"{loc}: no {what} stored for cell language={language} method={method} test={test}")
    return np.asarray(zarr_compat.array(group, kind)[...], dtype=np.float64)


def copy_cells(
    source: Locatable,
    dest: Locatable,
    cells: Iterable[tuple[str, str, str]],
    scores_of: Iterable[str] = (),
) -> int:
    """Copy finished cells (their values and stored nulls) and languages' per-word scores from the
    results store ``source`` into ``dest`` (made by :func:`create_results`, other labels allowed).

    Values are copied as stored, bit for bit; a cell not finished in ``source`` is skipped. Returns
    the number of cells copied.
    """
    source = as_location(source)
    dest = as_location(dest)
    old = open_cube(source)
    fs, src_root = _fs(source)
    _, dst_root = _fs(dest)
    n = 0
    for language, method, test in cells:
        cell = old.sel({"language": language, "method": method, "test": test})
        if not bool(cell[_DONE]):
            continue
        write_cell(dest, language, method, test, {name: cell[name].values[()] for name in CELL_VARIABLES})
        for kind in _DISTRIBUTIONS:
            null = _null_path(language, method, test, kind)
            if fs.exists(f"{src_root}/{null}/zarr.json"):
                fs.copy(f"{src_root}/{null}", f"{dst_root}/{null}", recursive=True)
        n += 1
    for language in scores_of:
        path = f"scores/{_check_name('language', language)}"
        if _complete_subgroup(source, path) is not None:
            fs.copy(f"{src_root}/{path}", f"{dst_root}/{path}", recursive=True)
    fs.invalidate_cache()
    return n


def replace_results(fresh: Locatable, url: Locatable) -> None:
    """Put the results store ``fresh`` (complete) in the place of the results store at ``url``.

    On a local disk two renames (the old store is deleted after); on object stores, which cannot
    rename, the old store is deleted and every object copied, the root metadata last, so that a copy
    cut short is no results store at all (never a mixed one) while ``fresh`` still holds everything.
    """
    fresh = as_location(fresh)
    url = as_location(url)
    _open_complete_root(fresh)  # raises unless fresh is a complete results store
    fs, src = _fs(fresh)
    _, dst = _fs(url)
    if "://" not in url.url or url.url.startswith("file://"):
        old = f"{dst}.replaced-{uuid.uuid4().hex[:12]}"
        os.replace(dst, old)
        os.replace(src, dst)
        fs.rm(old, recursive=True)
        return
    fs.rm(dst, recursive=True)
    root = f"{src}/zarr.json"
    keys = [key for key in fs.find(src) if key != root]
    fs.copy(keys, [dst + key[len(src) :] for key in keys])
    fs.copy(root, f"{dst}/zarr.json")  # last: until it is there, no results store is at url
    fs.rm(src, recursive=True)
    fs.invalidate_cache()
