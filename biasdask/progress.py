"""Progress bars and logging that behave in terminals, notebooks and batch logs alike.

Bars are drawn where someone watches: on a terminal (stderr is one) or in a Jupyter notebook, where a
bar is one widget per long step (``tqdm.auto``: the notebook widget when ``ipywidgets`` is installed,
else a text bar, without tqdm's warning about the missing widgets). Elsewhere (a log file, a pipe, CI)
only when asked: ``progress=True`` in Python, ``--progress`` on the command line; ``progress=False``
(``--quiet``) never. While a bar is open, warnings and log records are written above it rather than
glued to its line; a step that fails takes its bar away (on a terminal), leaving its error alone.
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

__all__ = ["in_notebook", "progress_bar", "wanted"]


# tqdm.auto picks the notebook widget in Jupyter when ipywidgets is installed, else the text bar; without
# ipywidgets it warns "IProgress not found" at import (tqdm.contrib imports it too): a text bar is what
# such a notebook gets, and nothing to warn about.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from tqdm.auto import tqdm as auto_tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

log = logging.getLogger("biasdask")


def wanted(progress: bool | None) -> bool:
    """Whether to show progress: ``progress`` if given, else whether stderr is a terminal or this runs
    in a Jupyter kernel."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty()) or in_notebook()
    return bool(progress)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's kernel shell is running)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _console_loggers() -> list[logging.Logger]:
    """The loggers among the root and ``biasdask`` that print to the console, else the root: tqdm's
    redirection gives each logger it is handed a console handler, and a ``biasdask`` record printed by
    its own would be printed again by one added to the root."""

    def prints(logger: logging.Logger) -> bool:
        return any(
            isinstance(h, logging.StreamHandler) and h.stream in (sys.stdout, sys.stderr) for h in logger.handlers
        )

    return [logger for logger in (logging.root, log) if prints(logger)] or [logging.root]


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
        with logging_redirect_tqdm(_console_loggers()), contextlib.closing(bar):
            try:
                yield bar
            except BaseException:
                bar.leave = False  # closed, it is erased: the error is what the user reads
                raise
    finally:
        warnings.showwarning = saved
