"""Words looked up in a vocabulary: the row of each word, from a scan or from a hash table kept per vocabulary.

A vocabulary here is a pandas Index of words (a store's ``word`` index, or an in-memory model's).
:func:`word_positions` answers the first lookup in a vocabulary with one vectorised scan, and the later
ones from a table of its words' hashes, built once and kept as long as the Index lives.
"""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd

__all__ = ["WordTable", "mark_looked_up", "word_positions"]


class WordTable:
    """Word -> first row of a vocabulary: the words' Python hashes, sorted once; a lookup is a binary
    search plus a comparison of the few candidates (equal hashes)."""

    def __init__(self, words: np.ndarray):
        self.words = words
        hashes = np.fromiter(map(hash, words), np.int64, len(words))
        self.order = np.argsort(hashes)
        self.sorted = hashes[self.order]

    def rows(self, words: list[str]) -> np.ndarray:
        h = np.fromiter(map(hash, words), np.int64, len(words))
        lo, hi = np.searchsorted(self.sorted, h, "left"), np.searchsorted(self.sorted, h, "right")
        out = np.full(len(words), -1, dtype=np.intp)
        for i, (w, a, b) in enumerate(zip(words, lo.tolist(), hi.tolist())):
            match = [r for r in self.order[a:b].tolist() if self.words[r] == w]
            if match:
                out[i] = min(match)
        return out


# Word tables by id() of a vocabulary's pandas Index (immutable, and shared by the Datasets derived
# from one another by attrs or variable changes); None: looked up once, no table yet. A table costs
# about two scans of the vocabulary, so an in-memory model gets one at its first lookup and any other
# vocabulary at its second; an entry goes with its Index.
_TABLES: dict[int, WordTable | None] = {}


def mark_looked_up(index: pd.Index) -> None:
    """Record ``index`` as looked up, so that its next lookup builds its table (nothing is kept for an
    index that is not weak-referenceable)."""
    if id(index) not in _TABLES:
        try:
            weakref.finalize(index, _TABLES.pop, id(index), None)
        except TypeError:
            return
        _TABLES[id(index)] = None


def word_positions(index: pd.Index, words: list[str]) -> np.ndarray:
    """Row of each of ``words`` in the vocabulary ``index`` (its first occurrence), -1 where absent.

    The first lookup in a vocabulary is one vectorised scan (``isin``) for the words asked for; from
    the second on (the first for an in-memory model), a hash table of the vocabulary built once
    answers in microseconds. Building it costs about two scans: seconds at 2,000,000 words.
    """
    if not words:
        return np.empty(0, np.intp)
    table = _TABLES.get(id(index))
    if table is None and id(index) in _TABLES:
        table = _TABLES[id(index)] = WordTable(np.asarray(index, dtype=object))
    if table is not None:
        return table.rows(words)
    mark_looked_up(index)
    rows = np.flatnonzero(index.isin(words))
    found: dict[str, int] = {}
    for word, row in zip(index[rows], rows):
        found.setdefault(str(word), int(row))
    return np.array([found.get(w, -1) for w in words], dtype=np.intp)
