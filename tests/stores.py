"""Embedding files and stores for the tests: one writer and builder, an independent reader, numpy oracles.

:func:`make_store` is the one way the tests make an embedding store from words and vectors (a ``.vec``
written by :func:`write_vec`, ingested); :func:`generated_store` makes one of a generated language (the
demo's, with a planted gender axis) for the studies, which :func:`study_of` describes and :func:`study_file`
writes. Where writing a file is not the point, the in-memory models of ``tests/conftest.py`` are used
instead.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from biasdask import Location
from biasdask.demo import write_language
from biasdask.engine.ingest import ingest
from biasdask.io.embeddings import as_embeddings
from biasdask.lexicon import languages


def write_vec(path: Path, words: list[str], vectors: np.ndarray) -> Path:
    """A .vec file whose decimals are the float32 values exactly (shortest round-trip repr)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    lines = [f"{len(words)} {vectors.shape[1]}"]
    for word, row in zip(words, vectors):
        lines.append(word + " " + " ".join(np.format_float_positional(v, unique=True, trim="-") for v in row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_store(
    tmp: Path, name: str, words: list[str], vectors: np.ndarray, *, language: str = "en", chunk_words: int | None = None
) -> str:
    """The URL of a store of ``words`` and ``vectors`` (float32), ``tmp/<name>.zarr``, ingested in this
    process from ``tmp/<name>.vec``."""
    source = write_vec(tmp / f"{name}.vec", words, vectors)
    url = str(tmp / f"{name}.zarr")
    ingest(
        str(source), url, language=language, input_format="vec", client=False, chunk_words=chunk_words, progress=False
    )
    return url


def read_text_rows(path: Path, header: bool = True, dtype=np.float32) -> tuple[list[str], np.ndarray]:
    """Independent reader of a text embedding file: its words and rows in file order (``dtype``: float32,
    as a store holds them), lines split on b"\\n", fields on b" " only."""
    words, rows = [], []
    for line in path.read_bytes().split(b"\n")[1 if header else 0 :]:
        fields = [f for f in line.split(b" ") if f]
        if fields:
            words.append(fields[0].decode("utf-8"))
            rows.append(np.array(fields[1:], dtype=dtype))
    return words, np.array(rows, dtype=dtype)


def read_text_vectors(path: Path, header: bool = True) -> dict[str, np.ndarray]:
    """:func:`read_text_rows` in float64, word -> vector (a word's first line wins)."""
    out: dict[str, np.ndarray] = {}
    for word, row in zip(*read_text_rows(path, header, np.float64)):
        out.setdefault(word, row)
    return out


def stored_values(url: str) -> dict[str, np.ndarray]:
    """The vectors of a store :func:`make_store` made, read back from its ``.vec`` by :func:`read_text_vectors`."""
    return read_text_vectors(Path(url).with_suffix(".vec"))


def generated_store(
    tmp: Path,
    code: str = "en",
    *,
    words: tuple[str, str] | None = None,
    vocabulary: Sequence[str] | None = None,
    n_words: int = 600,
    dim: int = 8,
    strength: float = 0.1,
    seed: int = 0,
    chunk_words: int | None = None,
    url: str | None = None,
    storage_options: dict | None = None,
) -> str:
    """The URL of a store of a generated language (``biasdask.demo.write_language``: the attribute words
    ``words``, by default the catalog's translations of male and female, at ranks 41 and 42, and a planted
    gender axis of ``strength``; the other words ``vocabulary``, by default made-up words of their script),
    at ``url`` (default ``tmp/emb/<code>.zarr``)."""
    if words is None:
        table = languages().set_index("code")
        words = (str(table.loc[code, "male"]), str(table.loc[code, "female"]))
    source = tmp / f"{code}-{seed}.bin"
    write_language(source, *words, strength, n_words, dim, seed=seed, words=vocabulary)
    url = url or str(tmp / "emb" / f"{code}.zarr")
    ingest(
        Location(str(source), storage_options),
        Location(url, storage_options),
        language=code,
        chunk_words=chunk_words,
        client=False,
        progress=False,
    )
    return url


def forget_records(root: Path) -> None:
    """Make the local store at ``root`` look like one written before stores recorded their chunks'
    checksums and a fingerprint."""
    for meta_path in root.glob("*/zarr.json"):
        meta = json.loads(meta_path.read_text())
        for key in ("biasdask_store_id", "biasdask_chunk_crc32c"):
            meta["attributes"].pop(key)
        meta_path.write_text(json.dumps(meta))
    group = root / "zarr.json"
    meta = json.loads(group.read_text())
    meta["attributes"].pop("fingerprint")
    group.write_text(json.dumps(meta))


def study_of(stores: Mapping[str, str], output: str | Path, **keys: Any) -> dict[str, Any]:
    """A study of ``stores`` (language code -> store URL) writing its cube to ``output``: the uniform
    weighting, the gender test and 99 permutations, unless ``keys`` (study keys) say otherwise."""
    return {
        "output": str(output),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 99,
        **keys,
    }


def study_file(folder: Path, stores: Mapping[str, str], **keys: Any) -> Path:
    """:func:`study_of` ``stores`` and ``keys`` as the study file ``folder/study.yaml``, writing its cube to
    ``folder/results.zarr`` unless ``keys`` give another ``output``."""
    path = folder / "study.yaml"
    study = study_of(stores, keys.pop("output", folder / "results.zarr"), **keys)
    path.write_text(yaml.safe_dump(study, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def words_of(emb) -> list[str]:
    """The words of an embedding (a store's URL, or an opened one), in row order."""
    return [str(w) for w in as_embeddings(emb)["word"].values]


def unit(v: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def brute_force_count(pool: np.ndarray, n_x: int, s: float, greater: bool = True) -> tuple[int, int]:
    """#{splits with s_i >= s} (or <= s) over all C(M, n_x) equal splits, and the number of splits."""
    total = pool.sum()
    sums = np.array([pool[list(c)].sum() for c in itertools.combinations(range(pool.size), n_x)])
    null = sums - (total - sums)
    hits = np.count_nonzero(null >= s - 1e-12) if greater else np.count_nonzero(null <= s + 1e-12)
    return int(hits), null.size
