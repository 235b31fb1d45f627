"""Where numba caches biasdask's compiled kernels: a per-user cache folder, never the installed package.

numba's default for ``cache=True`` is a ``__pycache__`` beside the module, i.e. inside
``site-packages/biasdask/``. pip does not know those files: uninstalling (as ``pip install -e .`` does
before an editable install) leaves a ``biasdask/`` folder without ``__init__.py`` behind, which Python
then imports as an empty namespace package from any directory but the checkout. So, unless the user set
``NUMBA_CACHE_DIR``, the kernels are cached in ``$XDG_CACHE_HOME/biasdask/numba`` (``~/.cache``
without it; ``%LOCALAPPDATA%`` on Windows). The variable is set in the environment, so worker processes
started from this one use the same folder; numba reads it when it is first imported, and its config is
updated directly when it was imported earlier.
"""

from __future__ import annotations

import os
import sys

__all__ = ["cache_dir", "use_user_cache"]


def cache_dir() -> str:
    """The folder biasdask asks numba to cache compiled kernels in."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = os.environ["LOCALAPPDATA"]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "biasdask", "numba")


def use_user_cache() -> None:
    """Point numba's kernel cache at :func:`cache_dir` (a no-op where ``NUMBA_CACHE_DIR`` is set)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = cache_dir()
    os.environ["NUMBA_CACHE_DIR"] = path
    config = sys.modules.get("numba.core.config")
    if config is not None and not getattr(config, "CACHE_DIR", ""):
        config.CACHE_DIR = path


use_user_cache()
