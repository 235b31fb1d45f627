"""Replacing a store safely: a lock next to the destination, the new store written at a fresh location,
then swapped in, so that a reader never sees half a store and a failed write leaves the old one whole.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
import uuid

from biasdask.errors import BiasdaskError, StoreConflictError
from biasdask.io.fs import NETWORK_ERRORS, Locatable, Location, as_location, display_url, redact, url_to_fs
from biasdask.io.store import (
    check_replaceable,
    finish_store,
    is_embedding_store,
    is_local,
    read_group_attrs,
    remove_store,
)

__all__ = ["acquire_lock", "fresh_location", "lock_holder", "remove_leftovers", "StoreLock", "swap_in"]


def _sibling(url: str, suffix: str) -> str:
    return str(url).rstrip("/") + suffix


class StoreLock:
    """The lock object ``<url>.lock`` of a destination, held while a store is written there.

    On a local disk it is an ``flock`` on that file, which the operating system releases when the
    process dies, so a killed ingest never blocks the next one. Elsewhere (S3, gs...) it is created
    with an exclusive write (``If-None-Match: *`` on S3), which exactly one of two writers wins, and
    deleted on release; one left by a killed process has to be deleted by hand (the error says so).
    Use :func:`acquire_lock`; a context manager that releases it on exit. ``biasdask.ingest`` holds
    the lock of its destination, ``biasdask.run`` that of its results store, for their whole life.
    """

    def __init__(self, loc: Location, fd: int | None) -> None:
        self.location, self._fd = loc, fd

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *exc_info) -> None:
        with contextlib.suppress(Exception):  # a lock that cannot be deleted must not hide the error
            self.release()

    def release(self) -> None:
        """Give the lock up (and delete the lock object)."""
        fs, path = url_to_fs(self.location)
        if self._fd is not None:
            os.unlink(path)  # before unlocking: whoever opens the path next gets a new file
            os.close(self._fd)
            self._fd = None
            return
        try:
            fs.rm_file(path)
        except FileNotFoundError:
            pass


def acquire_lock(loc: Locatable, *, owner: str | None = None) -> StoreLock:
    """Take the lock of the destination ``loc`` (see :class:`StoreLock`), creating its parents.

    ``owner`` names who takes it (recorded in the lock): a lock object that the same owner left (a task
    of a study run, retried by Dask after its worker was killed, finds the lock of its killed attempt on
    object storage) is taken over. Only one task of a run writes a given store, and Dask retries it only
    once its worker is gone.

    Raises
    ------
    StoreConflictError
        Another writer holds the lock.
    BiasdaskError
        The lock cannot be created (a parent that is a file, an unreachable or missing bucket...).
    """
    loc = as_location(loc)
    lock = Location(_sibling(loc.url, ".lock"), loc.storage_options)
    fs, path = url_to_fs(lock)
    try:
        if is_local(lock.url):
            return StoreLock(lock, _flock(path, owner))
        with fs.open(path, "xb") as f:
            f.write(_holder(owner))
        return StoreLock(lock, None)
    except FileExistsError:
        try:
            holder = json.loads(fs.cat_file(path))
            who = f" (taken by {holder.get('host')} pid {holder.get('pid')} at {holder.get('created')})"
        except Exception:  # noqa: BLE001 - only for the message
            holder, who = {}, ""
        if owner is not None and isinstance(holder, dict) and holder.get("owner") == owner and not is_local(lock.url):
            fs.pipe_file(path, _holder(owner))
            return StoreLock(lock, None)
        raise StoreConflictError(
            f"{display_url(loc.url)}: another writer holds its lock {lock}{who}; "
            "if none is running any more (it was killed), delete that lock and try again"
        ) from None
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise BiasdaskError(f"{display_url(loc.url)}: cannot create the destination: {_os_reason(exc)}") from None
    except NETWORK_ERRORS as exc:
        raise BiasdaskError(f"{display_url(loc.url)}: cannot write to the destination: {_os_reason(exc)}") from None


def lock_holder(loc: Locatable) -> dict | None:
    """Who holds the lock of ``loc`` now (``host``, ``pid``, ``created``), None when nobody does.

    On a local disk a lock file whose holder died (its ``flock`` went with it) is free; elsewhere a
    lock object left by a killed process still counts as held (see :class:`StoreLock`).
    """
    loc = as_location(loc)
    lock = Location(_sibling(loc.url, ".lock"), loc.storage_options)
    fs, path = url_to_fs(lock)
    try:
        if is_local(lock.url):
            import fcntl

            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return None  # nobody holds it (the shared lock goes with the descriptor)
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        holder = json.loads(fs.cat_file(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError:  # being written
        return {}
    except NETWORK_ERRORS:
        return {}
    return holder if isinstance(holder, dict) else {}


def _holder(owner: str | None = None) -> bytes:
    """The lock's content: who holds it, for the message of whoever finds it taken."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    held = {"host": socket.gethostname(), "pid": os.getpid(), "created": now}
    return json.dumps({**held, **({"owner": owner} if owner else {})}).encode()


def _flock(path: str, owner: str | None = None) -> int:
    """An open descriptor of ``path`` holding an exclusive ``flock``; FileExistsError if one is held.

    Hand-written rather than ``filelock.FileLock``: the lock file must name its holder (for the message
    of whoever finds it taken) and be deleted on release, and a file deleted on release can be locked by a
    second process that opened it just before; the inode check below closes that race, which filelock
    avoids only by leaving its lock files behind.
    """
    import fcntl

    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)  # also when another thread or process makes it meanwhile
    except FileExistsError:  # a parent is a file
        raise NotADirectoryError(parent) from None
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FileExistsError(path) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else the holder released (unlinked) it between our open and flock: try again
            os.ftruncate(fd, 0)
            os.write(fd, _holder(owner))
            return fd
        os.close(fd)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, NotADirectoryError):
        return "a parent of it is a file, not a directory"
    if isinstance(exc, FileNotFoundError):
        return "no such bucket or directory"
    return redact(" ".join(f"{type(exc).__name__}: {exc}".split()))


def remove_leftovers(loc: Locatable) -> None:
    """Delete the fresh stores (``<url>.ingest-*``) that killed writers left next to ``loc``.

    Call it only while holding the lock of ``loc``: no live writer is using them then.
    """
    loc = as_location(loc)
    fs, path = url_to_fs(loc)
    for left in fs.glob(path.rstrip("/") + ".ingest-*"):
        left_url = left if is_local(loc.url) else fs.unstrip_protocol(left)
        if is_embedding_store(read_group_attrs(Location(left_url, loc.storage_options))) or (
            fs.isdir(left) and not fs.ls(left)
        ):
            fs.rm(left, recursive=True)


def fresh_location(url: str) -> str:
    """A new URL next to ``url`` where a store can be written before it replaces ``url``."""
    return _sibling(url, f".ingest-{uuid.uuid4().hex[:12]}")


def swap_in(fresh: str, loc: Locatable) -> None:
    """Replace the store at ``loc`` by the finished (but unmarked) store at ``fresh``, then mark it.

    The old store is deleted only now that the new one is completely written. The completion marker
    is set at ``loc`` after the move, so a swap killed half-way leaves an incomplete store, which
    :func:`open_embeddings` refuses, never a mixed one.
    """
    loc = as_location(loc)
    check_replaceable(loc)
    remove_store(loc)
    fs, src = url_to_fs(Location(fresh, loc.storage_options))
    _, dst = url_to_fs(loc)
    if is_local(loc.url):
        os.replace(src, dst)  # one atomic rename
    else:  # object stores have no rename: copy every object, then delete the fresh store
        fs.invalidate_cache()
        keys = sorted(fs.find(src), key=lambda k: k != f"{src}/zarr.json")
        # the group metadata first: a swap killed half-way leaves a store recognisably ours, replaceable
        fs.copy(keys[:1], [dst + keys[0][len(src) :]])
        fs.copy(keys[1:], [dst + key[len(src) :] for key in keys[1:]])
        fs.rm(src, recursive=True)
        fs.invalidate_cache()
    finish_store(loc, {})
