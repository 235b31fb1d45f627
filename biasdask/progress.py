"""Progress bars and logging that behave in terminals, notebooks and batch logs alike.

Bars are shown on a terminal, or when asked (``progress=True``); in Jupyter an asked-for bar is one
widget per long step (``tqdm.auto``: the notebook widget when ``ipywidgets`` is installed, else a text
bar, without tqdm's warning about the missing widgets). While a bar
is open, warnings and log records are written above it rather than glued to its line.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from tqdm import tqdm
from tqdm.std import TqdmWarning

__all__ = ["progress_bar", "wanted"]


# tqdm.auto picks the notebook widget in Jupyter when ipywidgets is installed, else the text bar; without
# ipywidgets it warns "IProgress not found" at import (tqdm.contrib imports it too): a text bar is what
# such a notebook gets, and nothing to warn about.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from tqdm.auto import tqdm as auto_tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

log = logging.getLogger("biasdask")


def wanted(progress: bool | None) -> bool:
    """Whether to show progress: ``progress`` if given, else whether stderr is a terminal."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return bool(progress)


@contextlib.contextmanager
def progress_bar(progress: bool | None, **kwargs: Any) -> Iterator[tqdm]:
    """A tqdm bar for one long step (disabled unless :func:`wanted`), closed on exit.

    While it is open, Python warnings and records of the ``biasdask`` loggers go through
    ``tqdm.write``, i.e. on their own line above the bar.
    """
    show = wanted(progress)
    cls = auto_tqdm if show else tqdm
    kwargs.setdefault("file", sys.stderr)
    bar = cls(disable=not show, dynamic_ncols=True, **kwargs)
    if not show:
        with contextlib.closing(bar):
            yield bar
        return
    saved = warnings.showwarning

    def above_bar(message, category, filename, lineno, file=None, line=None):
        tqdm.write(warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"), file=sys.stderr)

    warnings.showwarning = above_bar
    try:
        with logging_redirect_tqdm([logging.root, log]), contextlib.closing(bar):
            yield bar
    finally:
        warnings.showwarning = saved
