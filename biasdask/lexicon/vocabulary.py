"""Which words of a vocabulary a test scores: one options object that every full-vocabulary function accepts.

Beside :class:`~biasdask.Resampling` (how a test resamples), :class:`Vocabulary` gathers the filters of the
targets (how many of the most frequent words, which words are left out, whether repeated vectors count
once), so that a function's own signature keeps only its data and what it measures. It is checked when
it is made, so a wrong setting fails before any vector is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biasdask._calls import options_object
from biasdask.errors import BiasdaskError, BiasdaskTypeError
from biasdask.lexicon import NAMED_WORD_LISTS

__all__ = ["Vocabulary", "vocabulary"]


@dataclass(frozen=True, kw_only=True)
class Vocabulary:
    """The words of a vocabulary a full-vocabulary test scores (its targets).

    Parameters
    ----------
    max_words
        Use only the ``max_words`` most frequent words (the top of the file) as targets; N is then
        ``max_words``. Attribute words are looked up in the whole vocabulary whatever it is.
    exclude_attributes
        Leave the attribute words themselves (all their tokens) out of the targets.
    exclude_words
        Further words to leave out of the targets, or the name of a package list:
        ``"gender_specific"`` (Bolukbasi et al. 2016's gender-specific words, English).
    dedupe_vectors
        Score each distinct vector once: a word whose vector is bit-identical to an earlier (more
        frequent) word's is left out.

    Raises
    ------
    BiasdaskError
        (a ``ValueError``) A setting out of range, or an unknown list name (names it).
    BiasdaskTypeError
        (a ``TypeError``) A setting of the wrong type, e.g. a list holding something else than words.

    Examples
    --------
    >>> from biasdask import Vocabulary
    >>> Vocabulary(max_words=50_000, exclude_words="gender_specific")
    Vocabulary(max_words=50000, exclude_attributes=False, exclude_words='gender_specific', dedupe_vectors=False)
    >>> Vocabulary().replace(exclude_attributes=True).exclude_attributes
    True
    """

    max_words: int | None = None
    exclude_attributes: bool = False
    exclude_words: str | Sequence[str] = ()
    dedupe_vectors: bool = False

    def __post_init__(self) -> None:
        if self.max_words is not None:
            if isinstance(self.max_words, (bool, np.bool_)) or not isinstance(self.max_words, (int, np.integer)):
                raise BiasdaskTypeError(f"max_words must be an integer or None, got {self.max_words!r}")
            if self.max_words < 1:
                raise BiasdaskError(f"max_words must be positive, got {self.max_words}")
            object.__setattr__(self, "max_words", int(self.max_words))
        for name in ("exclude_attributes", "dedupe_vectors"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise BiasdaskTypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        words = self.exclude_words
        if isinstance(words, str):
            if words not in NAMED_WORD_LISTS:
                raise BiasdaskError(
                    f"exclude_words: unknown word list {words!r}; choose from {list(NAMED_WORD_LISTS)} or give a "
                    "list of words"
                )
        elif not all(isinstance(w, str) for w in words):
            raise BiasdaskTypeError("exclude_words must be a list of words or the name of a package list")
        else:
            object.__setattr__(self, "exclude_words", tuple(words))

    def replace(self, **changes: Any) -> Vocabulary:
        """A copy with ``changes`` applied (and checked)."""
        return dataclasses.replace(self, **changes)


def vocabulary(options: Vocabulary | None) -> Vocabulary:
    """``options``, or the defaults when None; a TypeError naming the form for anything else."""
    return options_object(options, Vocabulary, "vocabulary=Vocabulary(max_words=..., exclude_words=...)")
