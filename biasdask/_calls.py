"""Calls in a form the public functions no longer take fail with a TypeError that shows the form they take.

The public functions take their data positionally and everything else by keyword; resampling settings
travel in one :class:`~biasdask.Resampling`, word sets in a :class:`~biasdask.lexicon.WordSets` and a
place in one location argument. :func:`keyword_api` checks a call against the signature before the
function runs and, when it does not bind (too many positional arguments, a keyword that moved), raises
Python's own message followed by where each moved keyword went and the call's form. No library does
this: ``inspect.Signature.bind`` finds the mismatch, the hints are biasdask's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: keyword -> where it went
_MOVED = {
    **{
        name: f"resampling=Resampling({name}=...)"
        for name in ("n_permutations", "alternative", "seed", "batch_size", "placebo", "placebo_exclude")
    },
    "storage_options": "part of the location: Location(url, storage_options) or fsspec.get_mapper(url, **storage_options)",
    "names": "WordSets(x, y, a, b, x_name=..., y_name=..., a_name=..., b_name=...)",
    "x": "WordSets(x, y, a, b)",
    "y": "WordSets(x, y, a, b)",
    "s": "WordSets(x=s, a=a, b=b)",
}


def keyword_api(form: str) -> Callable[[F], F]:
    """Check every call of the decorated function against its signature; a call that does not bind is a
    TypeError naming the moved keywords and ``form`` (the call as it is written now)."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                moved = [f"{k}= is now {_MOVED[k]}" for k in kwargs if k in _MOVED and k not in signature.parameters]
                hints = "; ".join([*moved, f"call it as {form}"])
                raise TypeError(f"{exc}; {hints}") from None
            return fn(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate
