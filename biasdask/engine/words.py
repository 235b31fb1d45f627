"""The words of a measure: word-list arguments, reading them from a store, missing-word warnings and errors.

:func:`word_list` checks every word-list argument of the public functions (a ``str`` is refused, with
the fix: ``"he"`` would otherwise be read as the words h, e). The rest is shared by the engine modules
of the directions (:mod:`biasdask.engine.directions`) and of grammatical gender
(:mod:`biasdask.engine.grammatical`), and :func:`_language` by every engine module that names a store's
language in a message.

Reading words. A word absent from the vocabulary, or stored as a zero vector (which has no direction),
is missing. Missing words are skipped with a :class:`MissingWordsWarning` that names them; when nothing
usable is left the caller raises :class:`~biasdask.errors.MissingWordsError` naming the words
(:func:`_require`). Rows are widened from float32 to float64 through their shortest round-trip decimal
(:func:`biasdask.engine.scores.read_rows`), so a result equals the one computed from the text file.

A "form" is a word or a tuple of tokens; a tuple stands for a multi-word translation and its vector is
the mean of its tokens' raw vectors (Lewis & Lupyan 2020).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from typing import Literal, TypeVar

import numpy as np
import xarray as xr
import yaml
from numpy.typing import NDArray

from biasdask.errors import BiasdaskTypeError, MissingWordsError

__all__ = ["Form", "MissingWordsWarning", "list_syntax", "pair_list", "word_list"]

Form = str | tuple[str, ...]
"""A word, or the tokens of a multi-word form (its vector is the mean of theirs)."""

W = TypeVar("W")


def list_syntax(text: str, syntax: Literal["python", "yaml"] = "python") -> str:
    """The list of words a user who wrote the string ``text`` meant, written in ``syntax``.

    ``text`` is cut at its commas (``"he, him"`` is two words); YAML quotes what it would otherwise
    read as another type (``no``, ``1``). For the fix in a message: ``pass ["he"]``, ``a: [he]``.
    """
    words = [w.strip() for w in text.split(",") if w.strip()] or [text]
    if syntax == "yaml":
        return yaml.safe_dump(words, default_flow_style=True, allow_unicode=True, width=10**6).strip()
    return json.dumps(words, ensure_ascii=False)


def word_list(words: Iterable[W] | str, name: str, *, one_word: bool = False) -> list[W]:
    """The word-list argument ``name`` of a public function as a list; a ``str`` is refused with the fix.

    Parameters
    ----------
    words
        The words (or forms, or :class:`~biasdask.lexicon.AttributeTerm`).
    name
        The argument's name, for the message.
    one_word
        Where a single word is documented in place of a list (``direction``'s ``a``, ``b``): a ``str``
        is the list of that word.

    Raises
    ------
    BiasdaskTypeError
        (a ``TypeError``) ``words`` is a ``str`` or ``bytes``: iterated, ``"he"`` would be the words h, e.

    Examples
    --------
    >>> word_list("he", "a")
    Traceback (most recent call last):
    ...
    biasdask.errors.BiasdaskTypeError: a: expected a list of words, got the string 'he': pass ["he"]
    """
    if isinstance(words, bytes):
        words = words.decode("utf-8", "replace")
    if isinstance(words, str):
        if one_word:
            return [words]  # type: ignore[list-item]
        raise BiasdaskTypeError(
            f"{name}: expected a list of words, got the string {words!r}: pass {list_syntax(words)}"
        )
    if words is None:
        raise BiasdaskTypeError(f"{name}: expected a list of words, got None")
    return list(words)


def pair_list(pairs: Iterable[Sequence[W]], name: str) -> list[tuple[W, W]]:
    """The pair-list argument ``name`` (``[("she", "he"), ...]``) as a list of 2-tuples.

    Raises
    ------
    BiasdaskTypeError
        ``pairs`` is a ``str``, or one pair (``("she", "he")``) instead of a list of pairs, or an item is
        not a pair of words.
    """
    items = word_list(pairs, name)
    if len(items) == 2 and all(isinstance(p, str) for p in items):
        raise BiasdaskTypeError(
            f"{name}: expected a list of pairs, got one pair {tuple(items)!r}: pass [{tuple(items)!r}]"
        )
    out = []
    for p in items:
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 2:
            raise BiasdaskTypeError(f"{name}: expected pairs of two words, got {p!r}")
        out.append((p[0], p[1]))
    return out


class MissingWordsWarning(UserWarning):
    """Some words of a measure are not in the embedding (or have zero vectors) and were skipped."""


def _language(emb: xr.Dataset) -> str:
    return str(emb.attrs.get("language", "?"))


def _tokens(form: Form) -> tuple[str, ...]:
    return (form,) if isinstance(form, str) else tuple(form)


def _label(form: Form) -> str:
    return " ".join(_tokens(form))


def _read(emb: xr.Dataset, forms: Iterable[Form]) -> dict[Form, NDArray[np.float64]]:
    """Form -> float64 vector for the forms all of whose tokens the store holds with non-zero vectors.

    Only the chunks holding the requested rows are read, in one computation.
    """
    from biasdask.engine.scores import read_rows  # scores imports word_list from here

    forms = list(dict.fromkeys(forms))
    vectors = read_rows(emb, [t for f in forms for t in _tokens(f)])
    usable = [f for f in forms if all(t in vectors for t in _tokens(f))]
    return {f: np.mean([vectors[t] for t in _tokens(f)], axis=0) for f in usable}


def _warn_missing(what: str, missing: Sequence[str], emb: xr.Dataset) -> None:
    if missing:
        warnings.warn(
            f"{what}: skipped {len(missing)} word(s) missing from language {_language(emb)!r} "
            f"(absent or zero vector): {', '.join(missing)}",
            MissingWordsWarning,
            stacklevel=3,
        )


def _require(what: str, found: int, missing: Sequence[str], emb: xr.Dataset) -> None:
    if not found:
        raise MissingWordsError(
            f"{what}: none of the words is in language {_language(emb)!r} (absent or zero vector): {', '.join(missing)}"
        )
