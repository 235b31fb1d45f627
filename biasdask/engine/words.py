"""The words of a measure in a store: reading their vectors, missing-word warnings and errors.

Shared by the engine modules that read a few words' vectors (:mod:`biasdask.engine.directions`,
:mod:`biasdask.engine.grammatical`), and :func:`store_language` by every engine module that names a
store's language in a message. The word-list arguments themselves are checked by
:func:`biasdask._calls.word_list`.

A word absent from the vocabulary, or stored as a zero vector (which has no direction), is missing.
Missing words are skipped with a :class:`MissingWordsWarning` that names them; when nothing usable is
left the caller raises :class:`~biasdask.errors.MissingWordsError` naming the words
(:func:`require_words`). Rows are widened from float32 to float64 through their shortest round-trip
decimal (:func:`biasdask.engine.scores.read_rows`), so a result equals the one computed from the text
file.

A "form" is a word or a tuple of tokens; a tuple stands for a multi-word translation and its vector is
the mean of its tokens' raw vectors (Lewis & Lupyan 2020).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import xarray as xr
from numpy.typing import NDArray

from biasdask.engine.scores import read_rows
from biasdask.errors import MissingWordsError

__all__ = ["Form", "MissingWordsWarning", "form_label", "read_forms", "require_words", "store_language", "warn_missing"]

Form = str | tuple[str, ...]
"""A word, or the tokens of a multi-word form (its vector is the mean of theirs)."""


class MissingWordsWarning(UserWarning):
    """Some words of a measure are not in the embedding (or have zero vectors) and were skipped."""


def store_language(emb: xr.Dataset) -> str:
    """The language code of an embedding, ``?`` when it has none (for messages)."""
    return str(emb.attrs.get("language", "?"))


def _tokens(form: Form) -> tuple[str, ...]:
    return (form,) if isinstance(form, str) else tuple(form)


def form_label(form: Form) -> str:
    """A form as text: its tokens joined by spaces."""
    return " ".join(_tokens(form))


def read_forms(emb: xr.Dataset, forms: Iterable[Form]) -> dict[Form, NDArray[np.float64]]:
    """Form -> float64 vector for the forms all of whose tokens the store holds with non-zero vectors.

    Only the chunks holding the requested rows are read, in one computation.
    """
    forms = list(dict.fromkeys(forms))
    vectors = read_rows(emb, [t for f in forms for t in _tokens(f)])
    usable = [f for f in forms if all(t in vectors for t in _tokens(f))]
    return {f: np.mean([vectors[t] for t in _tokens(f)], axis=0) for f in usable}


def warn_missing(what: str, missing: Sequence[str], emb: xr.Dataset) -> None:
    """Warn (:class:`MissingWordsWarning`) that the words ``missing`` of ``what`` were skipped."""
    if missing:
        warnings.warn(
            f"{what}: skipped {len(missing)} word(s) missing from language {store_language(emb)!r} "
            f"(absent or zero vector): {', '.join(missing)}",
            MissingWordsWarning,
            stacklevel=3,
        )


def require_words(what: str, found: int, missing: Sequence[str], emb: xr.Dataset) -> None:
    """Raise :class:`~biasdask.errors.MissingWordsError` naming ``missing`` when none of ``what``'s words was found."""
    if not found:
        raise MissingWordsError(
            f"{what}: none of the words is in language {store_language(emb)!r} (absent or zero vector): {', '.join(missing)}"
        )
