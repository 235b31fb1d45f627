"""Calls in the form the public functions take: checked, and deprecated spellings translated with a warning.

The public functions take their data positionally and everything else by keyword; resampling settings
travel in one :class:`~biasdask.Resampling`, the vocabulary filters in one :class:`~biasdask.Vocabulary`,
word sets in a :class:`~biasdask.lexicon.WordSets` and a place in one location argument.
:func:`keyword_api` checks a call against the signature before the function runs and, when it does not
bind (too many positional arguments, a keyword that moved), raises Python's own message followed by where
each moved keyword went and the call's form (``inspect.Signature.bind`` finds the mismatch, the hints are
biasdask's). A keyword renamed in this release, or a filter now gathered in an options object, still works
for one release: it is translated, with a ``DeprecationWarning`` that names the new spelling.

The word-list arguments are checked here too (:func:`word_list`, :func:`pair_list`): a ``str`` where a
list of words is expected is refused with the fix.
"""

from __future__ import annotations

import functools
import inspect
import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import yaml

from biasdask.errors import BiasdaskTypeError

__all__ = ["PValueAlias", "deprecated", "keyword_api", "list_syntax", "options_object", "pair_list", "word_list"]

F = TypeVar("F", bound=Callable[..., Any])
W = TypeVar("W")

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


def deprecated(message: str, *, stacklevel: int = 3) -> None:
    """Warn that a spelling is deprecated (``message`` names the new one); it works for one more release."""
    warnings.warn(f"{message} (the old spelling will be removed in the next release)", DeprecationWarning, stacklevel)


def options_object(value: Any, cls: type, form: str) -> Any:
    """``value``, or ``cls()`` when None: an options object a function takes (``resampling=``,
    ``vocabulary=``); a TypeError showing ``form`` for anything else."""
    if value is None:
        return cls()
    if not isinstance(value, cls):
        raise TypeError(f"{form.split('=')[0]} must be a biasdask.{cls.__name__}, got {type(value).__name__}: {form}")
    return value


class PValueAlias:
    """Gives a result the deprecated attribute ``pvalue``, the name of its ``p_value`` in earlier releases."""

    @property
    def pvalue(self) -> float:
        """Deprecated: :attr:`p_value`."""
        deprecated(f"{type(self).__name__}.pvalue is deprecated; use .p_value", stacklevel=3)
        return self.p_value  # type: ignore[attr-defined]


def _translate(
    name: str,
    kwargs: dict[str, Any],
    renamed: Mapping[str, str],
    gathered: Mapping[str, tuple[Callable[..., Any], Sequence[str]]],
) -> dict[str, Any]:
    """``kwargs`` with deprecated keywords in their new place, each with a warning."""
    for old, new in renamed.items():
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f"{name}() got {old}= and {new}=: {old}= is the deprecated name of {new}=")
            deprecated(f"{name}(): {old}= is deprecated; use {new}=", stacklevel=4)
            kwargs[new] = kwargs.pop(old)
    for param, (options, fields) in gathered.items():
        loose = {f: kwargs.pop(f) for f in fields if f in kwargs}
        if not loose:
            continue
        spelled = ", ".join(f"{f}=..." for f in loose)
        new = f"{param}={options.__name__}({spelled})"
        if param in kwargs:
            raise TypeError(f"{name}() got {param}= and {', '.join(f'{f}=' for f in loose)}: give {new} only")
        deprecated(f"{name}(): {', '.join(f'{f}=' for f in loose)} deprecated; use {new}", stacklevel=4)
        kwargs[param] = options(**loose)
    return kwargs


def keyword_api(
    form: str,
    *,
    renamed: Mapping[str, str] | None = None,
    gathered: Mapping[str, tuple[Callable[..., Any], Sequence[str]]] | None = None,
) -> Callable[[F], F]:
    """Check every call of the decorated function against its signature; a call that does not bind is a
    TypeError naming the moved keywords and ``form`` (the call as it is written now).

    Parameters
    ----------
    form
        The call as it is written now, for the message.
    renamed
        Deprecated keyword -> its new name: translated, with a ``DeprecationWarning``.
    gathered
        Options parameter -> (its class, the deprecated keywords that are now its fields): the fields
        given loose are gathered into one object, with a ``DeprecationWarning``.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if renamed or gathered:
                kwargs = _translate(fn.__name__, kwargs, renamed or {}, gathered or {})
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                moved = [f"{k}= is now {_MOVED[k]}" for k in kwargs if k in _MOVED and k not in signature.parameters]
                hints = "; ".join([*moved, f"call it as {form}"])
                raise TypeError(f"{exc}; {hints}") from None
            return fn(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate


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
