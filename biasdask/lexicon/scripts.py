"""Which tokens are words: the rule that chooses the tokens a placebo word may be.

A vocabulary's tokens include punctuation (``( ) - " : ' $ ; _`` rank among GloVe's 60 most frequent
tokens), numbers, symbols, URLs and words of other scripts. A placebo word stands in for an attribute
word, so it should be a word of the same kind: a token is **word-like** for a set of scripts when

- every character is a letter (Unicode category L) or a combining mark (category M: the vowel signs of
  Devanagari, Thai, Telugu..., the accents of decomposed Latin), with at least one letter: no digits,
  punctuation, symbols or spaces, and no hyphen or apostrophe inside;
- every letter, and every mark that belongs to a script, is of one of the scripts. A character's script
  is the first word of its Unicode name (``LATIN``, ``CYRILLIC``, ``ARABIC``, ``DEVANAGARI``, ``HANGUL``,
  ``HIRAGANA``...; ``CJK`` for the ideographs, with ``IDEOGRAPHIC`` such as 々 counted as ``CJK``;
  ``KATAKANA-HIRAGANA`` such as ー belongs to both); a combining mark of no script (``COMBINING ACUTE
  ACCENT``) goes with any.

The scripts are those of the attribute words' own letters (:func:`scripts_of`): *he* and *she* give
``LATIN``, so Latin words; 男性 and 女性 give ``CJK``; a set mixing kanji and kana gives both. The rule
is the placebo's default (``Resampling(placebo_words="letters")``, the study key ``placebo: {words:
letters}``); ``"any"`` lets every token be drawn.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["char_script", "scripts_of", "word_like"]

_ALIASES = {"IDEOGRAPHIC": "CJK"}
_INHERITED = ""  # a combining mark of no script: goes with any letter


@functools.lru_cache(maxsize=1 << 16)
def char_script(char: str) -> str | None:
    """The script of a letter or combining mark (the first word of its Unicode name, ``""`` for a mark of
    no script), None for anything else (digits, punctuation, symbols, spaces, unnamed characters).

    Examples
    --------
    >>> char_script("é"), char_script("ж"), char_script("男"), char_script("\\u0301"), char_script("7")
    ('LATIN', 'CYRILLIC', 'CJK', '', None)
    """
    category = unicodedata.category(char)
    if category[0] not in "LM":
        return None
    name = unicodedata.name(char, "")
    if not name:
        return None
    head = name.split(" ", 1)[0]
    if category[0] == "M" and head == "COMBINING":
        return _INHERITED
    return _ALIASES.get(head, head)


def _scripts(char: str) -> tuple[str, ...] | None:
    script = char_script(char)
    return None if script is None else tuple(script.split("-")) if script else ()


def scripts_of(words: Iterable[str]) -> frozenset[str]:
    """The scripts of the letters of ``words`` (marks and characters that are not letters add none).

    Examples
    --------
    >>> sorted(scripts_of(["he", "she's"])), sorted(scripts_of(["男性", "彼の"]))
    (['LATIN'], ['CJK', 'HIRAGANA'])
    """
    out: set[str] = set()
    for word in words:
        for char in word:
            if unicodedata.category(char)[0] == "L":
                out.update(_scripts(char) or ())
    return frozenset(out)


def _char_class(char: str, scripts: frozenset[str]) -> str:
    """``a`` a letter of ``scripts`` (any, when empty), ``m`` a mark that goes with them, ``x`` otherwise."""
    found = _scripts(char)
    if found is None or (found and scripts and not scripts.intersection(found)):
        return "x"
    return "a" if unicodedata.category(char)[0] == "L" else "m"


def word_like(words: Sequence[str] | np.ndarray, scripts: Iterable[str] = ()) -> np.ndarray:
    """Which of ``words`` are word-like for ``scripts`` (see the module docstring; no scripts: any).

    Examples
    --------
    >>> word_like(["the", "(", "1990", "e-mail", "café", "пять", "don't"], {"LATIN"}).tolist()
    [True, False, False, False, True, False, False]
    >>> word_like(["पुरुष", "महिला", "10", "abc"], scripts_of(["पुरुष"])).tolist()
    [True, True, False, False]
    """
    allowed = frozenset(scripts)
    texts = [str(w) for w in words]
    # each distinct character classified once; then one C-level translation per word
    table = {ord(c): _char_class(c, allowed) for c in set("".join(texts))}
    out = np.empty(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        marks = text.translate(table)
        out[i] = "a" in marks and "x" not in marks
    return out
