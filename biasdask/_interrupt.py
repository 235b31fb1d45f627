"""Ctrl-C while the ``biasdask`` command is starting: one line, not a traceback of the imports.

Python reports an interrupt that no code handles with a traceback. The command's ``main`` handles
those that come while it runs; this covers the second or so before, while Python imports biasdask and
its dependencies (Dask, xarray, zarr...): when the process is the command (the ``biasdask`` script, or
``python -m biasdask.cli``), an unhandled interrupt is printed as ``biasdask: interrupted``, and Python
still ends the process as interrupted (status 130 in a shell). In any other program importing
biasdask nothing changes.
"""

from __future__ import annotations

import os
import sys

__all__: list[str] = []  # installs its hook when imported


def _is_the_command() -> bool:
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and getattr(multiprocessing.current_process(), "_inheriting", False):
        return False  # a worker process the command spawned, which is given the command's sys.argv
    argv = getattr(sys, "orig_argv", None) or sys.argv
    if any(os.path.basename(arg).split(".")[0] == "biasdask" for arg in sys.argv[:1]):
        return True
    return any(a == "-m" and b == "biasdask.cli" for a, b in zip(argv, argv[1:]))


def _hook(kind, value, traceback) -> None:
    if issubclass(kind, KeyboardInterrupt):
        print("biasdask: interrupted", file=sys.stderr)
        return
    _previous(kind, value, traceback)


_previous = sys.excepthook
if _is_the_command():
    sys.excepthook = _hook
