"""Files of words a user gives: word lists (one word a line) and word pairs (two words a line).

Read through :func:`biasdask.io.fs.url_to_fs`, so a path or any URL works, compressed or not; an error
names the file and the line.
"""

from __future__ import annotations

import fsspec

from biasdask.errors import InputFormatError
from biasdask.io.fs import Locatable, as_location, url_to_fs

__all__ = ["read_word_pairs", "read_words"]


def _read_bytes(place: Locatable, what: str) -> tuple[str, bytes]:
    loc = as_location(place)
    try:
        fs, path = url_to_fs(loc)
        with fs.open(path, "rb", compression=fsspec.utils.infer_compression(path)) as f:
            return str(loc), f.read()
    except FileNotFoundError:
        raise InputFormatError(f"{loc}: no such {what} file") from None


def read_words(place: Locatable) -> list[str]:
    """The words of a file holding one word a line (blank lines and surrounding spaces ignored).

    Raises
    ------
    InputFormatError
        A missing file or a line that is not UTF-8 (naming the file and the line).
    """
    shown, data = _read_bytes(place, "word list")
    words = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            word = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InputFormatError(f"{shown}:{lineno}: not valid UTF-8") from None
        if word:
            words.append(word)
    return words


def read_word_pairs(place: Locatable) -> list[tuple[str, str]]:
    """The pairs of a two-column file (a bilingual dictionary, definitional pairs): tab-separated, or
    else separated by ASCII spaces; blank lines skipped.

    Raises
    ------
    InputFormatError
        A missing file, a line that is not UTF-8 or does not hold two words, or no pair at all (naming
        the file and the line).
    """
    shown, data = _read_bytes(place, "dictionary")
    pairs = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.rstrip(b"\r")
        if not line.strip(b" \t"):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise InputFormatError(f"{shown}:{lineno}: not valid UTF-8") from None
        fields = text.split("\t") if "\t" in text else [f for f in text.split(" ") if f]
        if len(fields) != 2 or not all(fields):
            raise InputFormatError(f"{shown}:{lineno}: expected two words (source, target), got {len(fields)} field(s)")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise InputFormatError(f"{shown}: the dictionary holds no word pairs")
    return pairs
