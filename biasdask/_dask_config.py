"""Register biasdask's defaults (``biasdask.yaml``) in ``dask.config`` under the ``biasdask`` key, and
check settings before they are used.

Values set before (YAML files in Dask's config directories, ``DASK_BIASDASK__...`` environment
variables) keep priority over these defaults, as for Dask's own namespaces. A value that cannot be
what its setting takes (``DASK_BIASDASK__HTTP__READ_TIMEOUT=banana``) is a :class:`ConfigError` naming
the setting and its environment variable, raised where it is read, or up front by
:func:`check_settings`, which the command line runs for ``biasdask`` and, before a local cluster
starts, for Dask's ``distributed`` settings (whose bad values otherwise end a worker process with a
traceback of its own).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.config
import yaml
from dask.utils import parse_bytes, parse_timedelta

from biasdask.errors import ConfigError

__all__ = ["check_settings", "check_temporary_directory", "count", "environment_variable", "number", "seconds"]

_FILE = Path(__file__).with_name("biasdask.yaml")

dask.config.update_defaults(yaml.safe_load(_FILE.read_text(encoding="utf-8")))

#: what the settings whose default is null take
_NULL_DEFAULTS = {
    "biasdask.run.languages-in-flight": "number",
    "biasdask.scheduler.connect-timeout": "duration",
    "biasdask.local-cluster.n-workers": "number",
    "biasdask.gateway.maximum-workers": "number",
}
#: settings passed on as they are (environment variables of worker processes)
_FREE = ("distributed.nanny.environ.", "distributed.nanny.pre-spawn-environ.")
_DURATION_RE = re.compile(
    r"\s*\d+(\.\d+)?\s*(ns|us|ms|s|m|h|d|w|seconds?|minutes?|hours?|days?|weeks?|milliseconds?)\s*", re.IGNORECASE
)
_BYTES_RE = re.compile(r"\s*\d+(\.\d+)?\s*([kMGTP]i?B|B)\s*", re.IGNORECASE)


def environment_variable(key: str) -> str:
    """The environment variable that sets Dask setting ``key``.

    Examples
    --------
    >>> environment_variable("biasdask.http.read-timeout")
    'DASK_BIASDASK__HTTP__READ_TIMEOUT'
    """
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def _bad(key: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(
        f"Dask setting {key} ({environment_variable(key)}) is {value!r}: expected {expected}; "
        "set it to such a value, or unset it for its default"
    )


def number(key: str) -> float:
    """The number of Dask setting ``key`` (an int or float, or a string of one).

    Raises
    ------
    ConfigError
        Naming the setting, when its value is no number.
    """
    value = dask.config.get(key)
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise _bad(key, value, "a number") from None
    if math.isnan(result):
        raise _bad(key, value, "a number")
    return result


def count(key: str, minimum: int = 0) -> int:
    """The whole number of Dask setting ``key``, at least ``minimum``.

    Raises
    ------
    ConfigError
        Naming the setting, when its value is no whole number of at least ``minimum``.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"biasdask.sources.blocks-beside": -1}):
    ...     count("biasdask.sources.blocks-beside")
    Traceback (most recent call last):
    ...
    biasdask.errors.ConfigError: Dask setting biasdask.sources.blocks-beside (DASK_BIASDASK__SOURCES__BLOCKS_BESIDE) is -1: expected a whole number of at least 0; set it to such a value, or unset it for its default
    """
    value = number(key)
    if value != int(value) or value < minimum:
        raise _bad(key, dask.config.get(key), f"a whole number of at least {minimum}")
    return int(value)


def seconds(key: str) -> float:
    """A duration of the ``biasdask`` namespace in seconds (``"1s"``, ``"200ms"``, ``0.5``).

    Raises
    ------
    ConfigError
        Naming the setting, when its value is no duration.
    """
    value = dask.config.get(f"biasdask.{key}")
    try:
        return float(parse_timedelta(value, default="seconds"))
    except (TypeError, ValueError, KeyError):
        raise _bad(f"biasdask.{key}", value, "a duration such as 30s or 200ms") from None


def _leaves(tree: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(tree, dict):
        for name, sub in tree.items():
            yield from _leaves(sub, f"{prefix}.{name}" if prefix else str(name))
    else:
        yield prefix, tree


def _kind(key: str, default: Any) -> str | None:
    """What setting ``key`` takes, from its default: a number, a duration, a size in bytes, or None (any)."""
    if key in _NULL_DEFAULTS:
        return _NULL_DEFAULTS[key]
    if isinstance(default, bool) or key.startswith(_FREE):
        return None
    if isinstance(default, (int, float)):
        return "number"
    if isinstance(default, str) and _DURATION_RE.fullmatch(default):
        return "duration"
    if isinstance(default, str) and _BYTES_RE.fullmatch(default):
        return "size"
    return None


def _fits(kind: str, value: Any) -> bool:
    if value is None or value is False:  # null and False switch many settings off
        return True
    try:
        if kind == "number":
            float(value)
        elif kind == "duration":
            parse_timedelta(value, default="seconds")
        else:
            parse_bytes(value)
    except (TypeError, ValueError, KeyError):
        return False
    return not isinstance(value, bool)


_EXPECTED = {"number": "a number", "duration": "a duration such as 30s or 200ms", "size": "a size such as 128MiB"}


def check_settings(*namespaces: str) -> None:
    """Check the Dask settings of ``namespaces`` (``"biasdask"``, ``"distributed"``...) that differ
    from their defaults: each must be of its default's kind (a number, a duration, a size in bytes).

    Raises
    ------
    ConfigError
        Naming the first setting that is not, with its environment variable.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"distributed.worker.memory.target": "banana"}):
    ...     check_settings("distributed")
    Traceback (most recent call last):
    ...
    biasdask.errors.ConfigError: Dask setting distributed.worker.memory.target (DASK_DISTRIBUTED__WORKER__MEMORY__TARGET) is 'banana': expected a number; set it to such a value, or unset it for its default
    """
    for namespace in namespaces:  # a package registers its defaults when imported (distributed does)
        if not any(namespace in layer for layer in dask.config.defaults):
            with contextlib.suppress(ImportError):
                importlib.import_module(namespace)
    defaults = dask.config.merge(*dask.config.defaults)
    for namespace in namespaces:
        for key, default in _leaves(defaults.get(namespace, {}), namespace):
            kind = _kind(key, default)
            if kind is None:
                continue
            value = dask.config.get(key, default)
            if value != default and not _fits(kind, value):
                raise _bad(key, value, _EXPECTED[kind])


def check_temporary_directory() -> None:
    """Check that Dask's ``temporary-directory`` (where workers keep their files), when set, is a
    folder in which a folder can be made.

    Raises
    ------
    ConfigError
        Naming the setting, its environment variable and why.
    """
    where = dask.config.get("temporary-directory", None)
    if not where:
        return
    try:
        os.rmdir(tempfile.mkdtemp(prefix="biasdask-check-", dir=os.path.expanduser(str(where))))
    except OSError as exc:
        raise ConfigError(
            f"Dask setting temporary-directory ({environment_variable('temporary-directory')}) is {where!r}: "
            f"cannot make a folder there ({exc.strerror or exc}); set it to a folder you can write, or unset it"
        ) from None
