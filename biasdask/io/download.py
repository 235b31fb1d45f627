"""A source's raw bytes copied beside its store as they are read, so that a read cut short resumes where it stopped.

A study ingests a remote source (``http(s)://``, ``s3://``, ``gs://``...) in one pass that fetches,
decompresses and parses it on a worker. :class:`Download` gives that pass the source's raw bytes from
its start (:meth:`Download.open`) and copies what it fetches into *parts* in a folder beside the store
(``<store>.source/``): each part is written whole in one put (a rename on a local disk), named by the
offset it starts at, and a part is written at least every ``part_bytes`` and whenever a reader closes,
so that nothing fetched is fetched twice. A reader opened again (the next look at the source, or a
pass that starts over after its worker or client was killed) reads the parts already there, then
fetches the rest from where they end: an http ``Range`` request (a server that ignores it sends the
whole file, whose first bytes are skipped), a seek elsewhere. At most the part being filled when the
process died is fetched again.

The folder's ``manifest.json`` holds the source's record (:func:`biasdask.io.fs.source_record`: size,
ETag, Last-Modified, content hash); a source whose record changed, or that gives nothing to compare,
starts over. ``end`` marks a source read to its end: a reader then touches no network. A source that
ends before the size it announced is an error, and nothing is marked. Once the store is complete the
folder is removed (:meth:`Download.remove`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import uuid
from collections.abc import Callable
from typing import Any

import fsspec

from biasdask.errors import BiasdaskError
from biasdask.io.fs import Location, display_url, source_change, url_to_fs

__all__ = ["DEFAULT_PART_BYTES", "Download", "staging_location"]

#: the most bytes fetched and not yet copied beside the store (biasdask.sources.part-size)
DEFAULT_PART_BYTES = 64 * 2**20
#: bytes asked of the network at a time
_READ_BYTES = 2**20
#: pieces fetched ahead of the reader
_AHEAD = 16
_MANIFEST = "manifest.json"
_END = "end"
_PART = "part-"
#: fields of a record that identify a source's contents (without one, a copy cannot be resumed)
_IDENTITY = ("size", "etag", "last_modified", "mtime", "content_hash")


def staging_location(store: Location) -> Location:
    """Where the raw bytes of the source of the store at ``store`` are copied: ``<store>.source``."""
    return Location(store.url.rstrip("/") + ".source", store.storage_options)


class Download:
    """The raw bytes of ``source`` (whose record is ``record``), copied into ``stage`` as they are read.

    Parameters
    ----------
    source
        The source.
    stage
        The folder of its parts (:func:`staging_location`).
    record
        Its record now (:func:`biasdask.io.fs.source_details`): parts of another record are deleted.
    part_bytes
        The most bytes fetched before they are copied.
    on_bytes
        Called with the number of bytes of each piece fetched from the network.
    """

    def __init__(
        self,
        source: Location,
        stage: Location,
        record: dict[str, Any],
        *,
        part_bytes: int = DEFAULT_PART_BYTES,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        self.source, self.stage, self.record = source, stage, dict(record)
        self.part_bytes = int(part_bytes)
        self.on_bytes = on_bytes
        self.display = display_url(source.url)
        #: bytes this object fetched from the network
        self.fetched = 0
        self._fs, self._root = url_to_fs(stage)
        self._root = self._root.rstrip("/")
        self._local = (fsspec.core.split_protocol(stage.url)[0] or "file") in ("file", "local")
        self._prepare()

    def _prepare(self) -> None:
        """Keep the parts of this source (same record), delete any other's, and write the manifest."""
        manifest = {"source": self.record}
        try:
            kept = json.loads(self._fs.cat_file(f"{self._root}/{_MANIFEST}"))
        except (FileNotFoundError, ValueError):
            kept = None
        same = (
            isinstance(kept, dict)
            and isinstance(kept.get("source"), dict)
            and any(key in self.record for key in _IDENTITY)
            and source_change(kept["source"], self.record) is None
        )
        if kept is not None and same:
            return
        self.remove()
        self._put(_MANIFEST, json.dumps(manifest).encode())

    def parts(self) -> list[tuple[int, int]]:
        """``(offset, size)`` of the parts copied so far that follow one another from offset 0."""
        self._fs.invalidate_cache(self._root)
        try:
            entries = self._fs.ls(self._root, detail=True)
        except FileNotFoundError:
            return []
        found = {}
        for entry in entries:
            name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
            if name.startswith(_PART) and name[len(_PART) :].isdigit():
                found[int(name[len(_PART) :])] = int(entry["size"])
        out, at = [], 0
        while at in found and found[at] > 0:
            out.append((at, found[at]))
            at += found[at]
        return out

    def ended(self) -> int | None:
        """The size of a source read to its end, None before."""
        try:
            return int(json.loads(self._fs.cat_file(f"{self._root}/{_END}"))["size"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def open(self) -> _Reader:
        """A reader of the raw bytes from their start (parts first, then the network)."""
        return _Reader(self)

    def remove(self) -> None:
        """Delete the copy (the store is complete, or the source changed)."""
        if self._fs.exists(self._root):
            self._fs.rm(self._root, recursive=True)
        self._fs.invalidate_cache(self._root)

    def read_part(self, offset: int) -> bytes:
        """The bytes of the part at ``offset``."""
        return self._fs.cat_file(f"{self._root}/{_PART}{offset:015d}")

    def write_part(self, offset: int, data: bytes) -> None:
        """Copy ``data``, the bytes of the source from ``offset`` on."""
        if data:
            self._put(f"{_PART}{offset:015d}", data)

    def write_end(self, size: int) -> None:
        """Mark the source as read to its end (``size`` bytes)."""
        announced = self.record.get("size")
        if isinstance(announced, int) and size != announced:
            raise BiasdaskError(
                f"{self.display}: the source ended after {size:,} of the {announced:,} bytes it announced "
                "(the transfer was cut short, or the file is being replaced)"
            )
        self._put(_END, json.dumps({"size": size}).encode())

    def _put(self, name: str, data: bytes) -> None:
        """Write one object whole: one put, or on a local disk a file renamed into place."""
        path = f"{self._root}/{name}"
        if not self._local:
            self._fs.pipe_file(path, data)
            return
        os.makedirs(self._root, exist_ok=True)
        temporary = f"{self._root}/.{name}.{uuid.uuid4().hex[:8]}"
        with open(temporary, "wb") as f:
            f.write(data)
        os.replace(temporary, path)

    def fetch_from(self, offset: int):
        """A file of the source's raw bytes from ``offset`` on."""
        fs, path = url_to_fs(self.source)
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        if not protocols & {"http", "https"}:
            f = fs.open(path, "rb", block_size=_READ_BYTES * 8, cache_type="readahead")
            f.seek(offset)
            return f
        if not offset:
            return fs.open(path, "rb", block_size=0)
        f = fs.open(path, "rb", block_size=0, headers={"Range": f"bytes={offset}-"})
        if getattr(getattr(f, "r", None), "status", 206) != 206:  # the whole file: skip what is copied
            left = offset
            while left:
                skipped = f.read(min(left, _READ_BYTES))
                if not skipped:
                    break
                left -= len(skipped)
                self.count(len(skipped))
        return f

    def count(self, n: int) -> None:
        """Count ``n`` bytes fetched from the network."""
        self.fetched += n
        if self.on_bytes is not None:
            self.on_bytes(n)


class _Fetcher(threading.Thread):
    """Fetches the source from ``offset`` ahead of the reader, copying it part by part."""

    def __init__(self, download: Download, offset: int) -> None:
        super().__init__(name="biasdask-fetch", daemon=True)
        self.download, self.offset = download, offset
        self.pieces: queue.Queue = queue.Queue(_AHEAD)
        self.stop = threading.Event()
        self._buffer: list[bytes] = []
        self._buffered = 0

    def run(self) -> None:
        d = self.download
        try:
            with d.fetch_from(self.offset) as f:
                while not self.stop.is_set():
                    piece = f.read(_READ_BYTES)
                    if not piece:
                        self._flush()
                        d.write_end(self.offset)
                        self._give(b"")
                        return
                    self._buffer.append(piece)
                    self._buffered += len(piece)
                    d.count(len(piece))
                    if self._buffered >= d.part_bytes:
                        self._flush()
                    self._give(piece)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, which raises it
            self._give(exc)
        finally:
            with contextlib.suppress(Exception):  # what was fetched before a failure is kept
                self._flush()

    def _flush(self) -> None:
        """Copy the bytes fetched since the last part."""
        if self._buffered:
            data = b"".join(self._buffer)
            self.download.write_part(self.offset, data)
            self.offset += len(data)
            self._buffer, self._buffered = [], 0

    def _give(self, item: bytes | BaseException) -> None:
        while not self.stop.is_set():
            try:
                self.pieces.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


class _Reader:
    """The raw bytes of a :class:`Download` from their start: its parts, then what a fetcher fetches."""

    def __init__(self, download: Download) -> None:
        self.download = download
        self._parts = download.parts()
        self._at = sum(size for _, size in self._parts)  # where the parts end
        self._end = download.ended()
        self._buffer = memoryview(b"")
        self._fetcher: _Fetcher | None = None
        self._done = False

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            chunks = []
            while piece := self.read(_READ_BYTES * 8):
                chunks.append(piece)
            return b"".join(chunks)
        while not self._buffer and not self._done:
            self._buffer = memoryview(self._next())
        out = bytes(self._buffer[:n])
        self._buffer = self._buffer[n:]
        return out

    def _next(self) -> bytes:
        """The next bytes: the next part copied, else the fetcher's next piece (b"" at the end)."""
        if self._parts:
            offset, _ = self._parts.pop(0)
            return self.download.read_part(offset)
        if self._fetcher is None:
            if self._end is not None and self._at >= self._end:
                self._done = True
                return b""
            self._fetcher = _Fetcher(self.download, self._at)
            self._fetcher.start()
        item = self._fetcher.pieces.get()
        if isinstance(item, BaseException):
            self._done = True
            raise item
        if not item:
            self._done = True
        return item

    def close(self) -> None:
        """Stop fetching; what was fetched is copied before this returns."""
        if self._fetcher is not None:
            self._fetcher.stop.set()
            self._fetcher.join()
            self._fetcher = None

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
