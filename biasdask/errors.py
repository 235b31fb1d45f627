"""Exceptions raised by biasdask.

Every error a user can trigger with bad input is one of these, with a one-line message that names the
file, line, word or configuration key at fault. As in numpy, scipy and xarray, a bad argument is a
``ValueError`` (a wrong type a ``TypeError``): every class here derives from one of them, so
``except ValueError`` catches what biasdask raises on purpose.
"""

from __future__ import annotations


class BiasdaskError(ValueError):
    """Base class of every error biasdask raises on purpose (a ``ValueError``)."""


class BiasdaskTypeError(BiasdaskError, TypeError):
    """An argument of a type biasdask cannot use (an embedding it cannot read, a ``str`` where a list
    of words is expected...)."""


class _BiasdaskOSError(BiasdaskError, OSError):
    """Base of the errors that are also an ``OSError`` (a store, a scheduler).

    tblib, with which ``distributed`` sends a task's exception to the client, rebuilds it with
    ``cls.__new__``, which would find ``ValueError``'s first and fail for an ``OSError``: the client then
    got a bare ``Exception`` whose message was this one's repr (a run named a corrupt chunk as
    ``Exception: CorruptStoreError(...)``, exit 1, after writing no cell)."""

    __new__ = OSError.__new__


class InputFormatError(BiasdaskError):
    """An embedding file that cannot be read as the format it claims (names file and line)."""


class IncompleteStoreError(_BiasdaskOSError):
    """A Zarr store whose writing never finished (its completion marker is missing)."""


class MissingWordsError(BiasdaskError, KeyError):
    """Words a test needs are absent from an embedding (names them)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ConfigError(BiasdaskError):
    """A study configuration that fails validation (names the key)."""


class StoreConflictError(_BiasdaskOSError, FileExistsError):
    """A results store written by a different configuration."""


class SchedulerError(_BiasdaskOSError, ConnectionError):
    """A Dask scheduler (or Dask Gateway) that cannot be reached or started (names its address)."""


class CorruptStoreError(_BiasdaskOSError):
    """A store whose chunks are missing or fail their checksum, or whose attrs disagree with its arrays."""


class StorageFullError(_BiasdaskOSError):
    """The storage a store is being written to is full (no space left, or the quota reached): names it."""


class MissingDependencyError(BiasdaskError, ImportError):
    """A feature whose package is an extra of biasdask that is not installed (names the extra)."""


def missing_dependency(package: str, extra: str, what: str) -> MissingDependencyError:
    """The one-line error for ``what`` needing ``package``, installed by ``pip install 'biasdask[extra]'``."""
    return MissingDependencyError(f"{package} is not installed (needed for {what}): pip install 'biasdask[{extra}]'")
