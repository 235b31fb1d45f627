"""How a test resamples: one options object that every test of biasdask accepts.

Like scipy's :class:`scipy.stats.PermutationMethod`, :class:`Resampling` gathers the settings of the
null distribution (how many permutations, which tail, the seed, how many per task) and of the placebo
comparison, so that a test's own signature keeps only its data and what it measures. The object is
checked when it is made, so a wrong setting fails before any vector is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from biasdask._calls import options_object
from biasdask.stats.placebo import DEFAULT_MIN_CANDIDATES, DEFAULT_RANK_RATIO, PlaceboMatch, PlaceboWords

__all__ = ["ALTERNATIVES", "Alternative", "Resampling", "resampling"]

#: The choices of ``alternative``.
Alternative = Literal["auto", "greater", "less", "two-sided"]
ALTERNATIVES: tuple[str, ...] = ("auto", "greater", "less", "two-sided")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True, kw_only=True)
class Resampling:
    """The resampling settings of a test: its permutations, tail, seed, batching and placebo.

    Parameters
    ----------
    n_permutations
        Random splits (or relabellings) to sample without replacement; when there are at most this many
        distinct ones, all are enumerated instead and the p-value is exact.
    alternative
        ``"two-sided"`` (default: ``|s_i - E s_i|`` against ``|s - E s_i|``), ``"greater"``, ``"less"``, or
        ``"auto"`` (the side of the observed statistic, chosen after seeing it: a type-I rate of about 2α).
    seed
        Non-negative integer: permutation i draws from ``SeedSequence(seed, spawn_key=(i,))``, so results
        are bit-identical on any scheduler, worker count and batch size. ``None`` draws fresh entropy,
        recorded in the result's ``seed``: pass it back to reproduce the result bit for bit.
    batch_size
        Permutations per Dask task; default about ``biasdask.batch-duration`` of work, at least two
        tasks per worker thread.
    placebo
        Also compare the statistic with P = ``placebo`` tests whose attribute words are replaced by random
        words of about the same frequency ranks (``p_value_placebo``, ``z_placebo``); ``None`` or 0 for none.
    placebo_exclude
        Words no placebo set may use, besides the test's own words and the known gendered words.
    placebo_words
        Which tokens a placebo word may be: ``"letters"`` (the default: tokens of letters and combining
        marks of the attribute words' scripts, no digits, punctuation or symbols;
        :mod:`biasdask.lexicon.scripts`) or ``"any"``.
    placebo_rank_ratio
        A placebo word's frequency rank lies within this factor of its attribute word's (default 2:
        ranks r/2 to 2r) ...
    placebo_min_candidates
        ... unless fewer than this many candidates (default 50) lie there: the window then widens to the
        nearest this many in log rank, and the result records the window used
        (:func:`biasdask.stats.placebo.rank_neighbourhoods`).

    Raises
    ------
    ValueError
        A setting out of range (names it).
    TypeError
        A setting of the wrong type, e.g. a float number of permutations.

    Examples
    --------
    >>> from biasdask import Resampling
    >>> Resampling(n_permutations=999, seed=1)
    Resampling(n_permutations=999, alternative='two-sided', seed=1, batch_size=None, placebo=None, placebo_exclude=(), placebo_words='letters', placebo_rank_ratio=2.0, placebo_min_candidates=50)
    >>> Resampling(seed=1).replace(alternative="greater").alternative
    'greater'
    """

    n_permutations: int = 9999
    alternative: Alternative = "two-sided"
    seed: int | None = None
    batch_size: int | None = None
    placebo: int | None = None
    placebo_exclude: Sequence[str] = ()
    placebo_words: PlaceboWords = "letters"
    placebo_rank_ratio: float = DEFAULT_RANK_RATIO
    placebo_min_candidates: int = DEFAULT_MIN_CANDIDATES

    def __post_init__(self) -> None:
        if not _is_int(self.n_permutations):
            raise TypeError(f"n_permutations must be an integer, got {self.n_permutations!r}")
        if self.n_permutations < 1:
            raise ValueError(f"n_permutations must be at least 1, got {self.n_permutations}")
        if self.alternative not in ALTERNATIVES:
            raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}; got {self.alternative!r}")
        for name in ("seed", "batch_size", "placebo"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise TypeError(f"{name} must be an integer or None, got {value!r}")
        if self.seed is not None and self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size}")
        if self.placebo is not None and self.placebo < 0:
            raise ValueError(f"placebo must be a non-negative number of placebo tests, got {self.placebo}")
        if isinstance(self.placebo_exclude, str):
            raise TypeError("placebo_exclude must be a list of words, not one string")
        object.__setattr__(self, "placebo_exclude", tuple(self.placebo_exclude))
        object.__setattr__(self, "n_permutations", int(self.n_permutations))
        try:
            match = self.placebo_match
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"placebo_{exc}") from None
        object.__setattr__(self, "placebo_rank_ratio", match.rank_ratio)
        object.__setattr__(self, "placebo_min_candidates", match.min_candidates)

    @property
    def placebo_match(self) -> PlaceboMatch:
        """How placebo words are matched to the attribute words (:class:`~biasdask.stats.placebo.PlaceboMatch`)."""
        return PlaceboMatch(self.placebo_words, self.placebo_rank_ratio, self.placebo_min_candidates)

    def replace(self, **changes: Any) -> Resampling:
        """A copy with ``changes`` applied (and checked)."""
        return dataclasses.replace(self, **changes)


def resampling(options: Resampling | None) -> Resampling:
    """``options``, or the defaults when None; a TypeError naming the form for anything else."""
    return options_object(options, Resampling, "resampling=Resampling(n_permutations=..., seed=...)")
