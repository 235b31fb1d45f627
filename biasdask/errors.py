"""Exceptions raised by biasdask.

Every error biasdask raises on purpose is a :class:`BiasdaskException`, with a one-line message that names
the file, line, word, configuration key or store at fault, and is exactly one of Python's kinds, as in
numpy, scipy and xarray: a bad argument or input is a ``ValueError`` (:class:`BiasdaskError`; a wrong type a
``TypeError``), a store, network or cluster that fails is an ``OSError`` (:class:`BiasdaskOSError`), a
missing extra an ``ImportError``. So ``except ValueError`` catches bad input and ``except OSError`` what
went wrong around it, never both; every class pickles as it is, to and from Dask workers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = [
    "BiasdaskError",
    "BiasdaskException",
    "BiasdaskOSError",
    "BiasdaskTypeError",
    "ConfigError",
    "CorruptStoreError",
    "IncompleteStoreError",
    "InputFormatError",
    "missing_dependency",
    "MissingDependencyError",
    "MissingWordsError",
    "on_its_own",
    "PlaceboUnavailableError",
    "SchedulerError",
    "SourceError",
    "StorageFullError",
    "StoreConflictError",
]


class BiasdaskException(Exception):
    """Base class of every error biasdask raises on purpose (the CLI prints these in one line)."""


class BiasdaskError(BiasdaskException, ValueError):
    """Bad input: an argument, a word list, a file's contents, a study (a ``ValueError``)."""


class BiasdaskTypeError(BiasdaskException, TypeError):
    """An argument of a type biasdask cannot use (an embedding it cannot read, a ``str`` where a list
    of words is expected...)."""


class BiasdaskOSError(BiasdaskException, OSError):
    """A store, the network or a cluster that fails (an ``OSError``)."""


class InputFormatError(BiasdaskError):
    """An embedding file that cannot be read as the format it claims (names file and line)."""


class IncompleteStoreError(BiasdaskOSError):
    """A Zarr store whose writing never finished (its completion marker is missing)."""


class MissingWordsError(BiasdaskError, KeyError):
    """Words a test needs are absent from an embedding (names them)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class PlaceboUnavailableError(BiasdaskError):
    """Too few words to draw placebo attribute sets from (a vocabulary of little more than the test's words)."""


class ConfigError(BiasdaskError):
    """A study configuration that fails validation (names the key)."""


class SourceError(BiasdaskError):
    """A study's source that cannot give its language's store: vectors of another dimension than the
    study's, or of another language (names the source)."""


class StoreConflictError(BiasdaskOSError, FileExistsError):
    """A results store written by a different configuration."""


class SchedulerError(BiasdaskOSError, ConnectionError):
    """A Dask scheduler (or Dask Gateway) that cannot be reached or started (names its address)."""


class CorruptStoreError(BiasdaskOSError):
    """A store whose chunks are missing or fail their checksum, or whose attrs disagree with its arrays."""


class StorageFullError(BiasdaskOSError):
    """The storage a store is being written to is full (no space left, or the quota reached): names it."""


class MissingDependencyError(BiasdaskException, ImportError):
    """A feature whose package is an extra of biasdask that is not installed (names the extra)."""


def missing_dependency(package: str, extra: str, what: str) -> MissingDependencyError:
    """The one-line error for ``what`` needing ``package``, installed by ``pip install 'biasdask[extra]'``."""
    return MissingDependencyError(f"{package} is not installed (needed for {what}): pip install 'biasdask[{extra}]'")


@contextlib.contextmanager
def on_its_own() -> Iterator[None]:
    """Around a task's body on a Dask worker: a :class:`BiasdaskException` leaves it without the chain of
    errors that led to it (its one line says what a user needs). Dask pickles that chain with the error,
    and a chain holding what cannot be pickled (an http error's response headers) would reach the
    client as a generic ``Exception`` quoting the error's repr."""
    try:
        yield
    except BiasdaskException as exc:
        exc.__cause__ = exc.__context__ = None
        raise
