"""Embedding files and stores for the engine tests: .vec writers, an independent reader, brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from biasdask.engine.ingest import ingest


def write_vec(path: Path, words: list[str], vectors: np.ndarray) -> Path:
    """A .vec file whose decimals are the float32 values exactly (shortest round-trip repr)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    lines = [f"{len(words)} {vectors.shape[1]}"]
    for word, row in zip(words, vectors):
        lines.append(word + " " + " ".join(np.format_float_positional(v, unique=True, trim="-") for v in row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_store(tmp: Path, name: str, words: list[str], vectors: np.ndarray, language: str = "en", chunk_words=None):
    source = write_vec(tmp / f"{name}.vec", words, vectors)
    return ingest(
        str(source),
        str(tmp / f"{name}.zarr"),
        language=language,
        format="vec",
        client=False,
        chunk_words=chunk_words,
        progress=False,
    )


def read_text_vectors(path: Path, header: bool) -> dict[str, np.ndarray]:
    """Independent float64 reader: lines split on b"\\n", fields on b" " only."""
    lines = path.read_bytes().split(b"\n")[1 if header else 0 :]
    out: dict[str, np.ndarray] = {}
    for line in lines:
        fields = [f for f in line.split(b" ") if f]
        if fields:
            out.setdefault(fields[0].decode("utf-8"), np.array(fields[1:], dtype=np.float64))
    return out


def words_of(store) -> list[str]:
    return [str(w) for w in store["word"].values]


def brute_force_count(pool: np.ndarray, n_x: int, s: float, greater: bool = True) -> tuple[int, int]:
    """#{splits with s_i >= s} (or <= s) over all C(M, n_x) equal splits, and the number of splits."""
    total = pool.sum()
    sums = np.array([pool[list(c)].sum() for c in itertools.combinations(range(pool.size), n_x)])
    null = sums - (total - sums)
    hits = np.count_nonzero(null >= s - 1e-12) if greater else np.count_nonzero(null <= s + 1e-12)
    return int(hits), null.size


def _write_vec(path, words, vectors):
    lines = [f"{len(words)} {vectors.shape[1]}"]
    lines += [w + " " + " ".join(f"{x:.5f}" for x in row) for w, row in zip(words, vectors)]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


def _read_vec(path):
    """word -> float64 vector, parsed independently of biasdask."""
    body = path.read_bytes().split(b"\n")[1:]
    out = {}
    for line in body:
        if line:
            fields = line.split(b" ")
            out[fields[0].decode()] = np.array([float(x) for x in fields[1:]])
    return out


def _store(tmp_path, name, words, vectors, language="xx", chunk_words=16):
    vec = _write_vec(tmp_path / f"{name}.vec", words, vectors)
    ingest(
        str(vec),
        str(tmp_path / f"{name}.zarr"),
        language=language,
        client=False,
        progress=False,
        chunk_words=chunk_words,
    )
    return str(tmp_path / f"{name}.zarr"), _read_vec(vec)


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)
