"""Locations: URLs and their file systems, storage options, secrets kept out of messages, timeouts.

A public function takes a place to read or write as one argument (:data:`Locatable`): a path or URL, a
:class:`Location` (a URL with its fsspec storage options), or an fsspec mapper
(``fsspec.get_mapper(url, **storage_options)``); :func:`as_location` turns any of them into a
:class:`Location`.

Every file or store biasdask opens (embedding files, embedding and results stores, dictionaries, the
CLI's size checks) goes through :func:`url_to_fs`, which applies the storage options that belong to the
URL's protocol (:func:`storage_options_for`) and, for http(s), the connect and read timeouts of the Dask
config (:func:`http_timeouts`). Messages name a location by :func:`display_url` and pass every
third-party error text through :func:`redact`, so no credential reaches a log or a terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import posixpath
import re
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import fsspec
import fsspec.implementations.local

from biasdask._dask_config import number
from biasdask.errors import BiasdaskError

__all__ = [
    "NETWORK_ERRORS",
    "Locatable",
    "Location",
    "as_location",
    "check_kept",
    "display_url",
    "http_timeouts",
    "location_key",
    "nesting",
    "one_line",
    "redact",
    "source_change",
    "source_details",
    "source_record",
    "storage_options_for",
    "timeout_error",
    "url_to_fs",
    "files_under",
]

#: protocols that take no flat storage options (a flat dict is meant for object stores)
_NO_OPTION_PROTOCOLS = {"file", "local", "memory", "http", "https"}


def _network_errors() -> tuple[type[Exception], ...]:
    errors: list[type[Exception]] = [OSError]
    with contextlib.suppress(ImportError):
        import botocore.exceptions

        errors.append(botocore.exceptions.BotoCoreError)
    with contextlib.suppress(ImportError):
        import aiohttp

        errors.append(aiohttp.ClientError)
    return tuple(errors)


#: exceptions of storage and network layers, reported as one-line errors naming the URL
NETWORK_ERRORS = _network_errors()


def display_url(url: str) -> str:
    """Return ``url`` without user name, password, query string or fragment (which may hold secrets)."""
    parts = urllib.parse.urlsplit(str(url))
    if not parts.scheme or len(parts.scheme) == 1:  # a local path (or a Windows drive letter)
        return str(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if not host:  # memory:///x, file:///x
        return f"{parts.scheme}://{parts.path}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Location:
    """A place in a file system: a path or URL and the fsspec storage options that reach it.

    Parameters
    ----------
    url
        A local path or an fsspec URL (``s3://bucket/en.zarr``, ``gs://...``, ``memory://...``,
        ``https://...``; chained ones such as ``simplecache::https://...`` too).
    storage_options
        fsspec options: flat (applied to object stores, not to local files, ``memory://`` or http(s)),
        or keyed by protocol (``{"s3": {...}, "https": {...}}``), which reaches any protocol.

    Its ``repr`` names the URL without credentials and the options by their keys only, so a Location
    can be printed or logged.

    Examples
    --------
    >>> from biasdask import Location
    >>> loc = Location("s3://bucket/emb/en.zarr", {"key": "AKIA...", "secret": "..."})
    >>> loc
    Location('s3://bucket/emb/en.zarr', storage_options={key, secret})
    >>> loc.join("scores").url
    's3://bucket/emb/en.zarr/scores'
    """

    url: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.url, str):
            object.__setattr__(self, "url", os.fspath(self.url))
        if self.storage_options is None:
            object.__setattr__(self, "storage_options", {})
        if not isinstance(self.storage_options, Mapping):
            raise TypeError(f"storage_options must be a mapping, got {type(self.storage_options).__name__}")
        object.__setattr__(self, "storage_options", dict(self.storage_options))

    def __repr__(self) -> str:
        options = f", storage_options={{{', '.join(sorted(self.storage_options))}}}" if self.storage_options else ""
        return f"Location({display_url(self.url)!r}{options})"

    def __str__(self) -> str:
        return display_url(self.url)

    def absolute(self) -> Location:
        """This location with a local path made absolute (workers may run in another directory; a
        ``file://`` URL becomes a plain path); any other URL as it is."""
        if (fsspec.core.split_protocol(self.url)[0] or "file") in ("file", "local"):
            return Location(fsspec.core.strip_protocol(self.url), self.storage_options)
        return self

    def join(self, *parts: str) -> Location:
        """The location of ``parts`` inside this one, with the same storage options."""
        return Location("/".join([self.url.rstrip("/"), *parts]), self.storage_options)


#: What a public function accepts as a place to read or write.
Locatable = Union[str, os.PathLike, Location, fsspec.FSMap]  # noqa: UP007  (a runtime alias, Python 3.10)


def as_location(place: Locatable, what: str = "location") -> Location:
    """``place`` as a :class:`Location`: a path or URL (no storage options), a Location, or an fsspec
    mapper (its file system's URL of the root and its storage options).

    Raises
    ------
    TypeError
        Anything else (named as ``what``), e.g. a dict of storage options passed on its own.

    Examples
    --------
    >>> import fsspec
    >>> as_location(fsspec.get_mapper("memory://results/study.zarr"))
    Location('memory:///results/study.zarr')
    """
    if isinstance(place, Location):
        return place
    if isinstance(place, (str, os.PathLike)):
        return Location(os.fspath(place))
    if isinstance(place, fsspec.FSMap):
        fs = place.fs
        local = isinstance(fs, fsspec.implementations.local.LocalFileSystem)
        return Location(place.root if local else fs.unstrip_protocol(place.root), dict(fs.storage_options))
    raise TypeError(
        f"{what}: expected a path or URL, a biasdask.Location(url, storage_options) or an fsspec mapper, "
        f"got {type(place).__name__}"
    )


def location_key(place: Locatable) -> str:
    """A comparable form of a store location: a local path made absolute with every symbolic link and
    ``..`` resolved (``file://`` or ``local://`` stripped), so that two spellings of one folder give one
    key; a URL with its scheme lower-cased and its ``.``/``..`` segments resolved; no trailing ``/``.
    ``a`` lies inside ``b`` when ``location_key(a).startswith(location_key(b) + "/")``.

    Examples
    --------
    >>> location_key("S3://bucket/emb/../en.zarr/")
    's3://bucket/en.zarr'
    """
    url = as_location(place).url
    protocol = fsspec.core.split_protocol(url)[0]
    if (protocol or "file") in ("file", "local"):
        path = fsspec.implementations.local.LocalFileSystem._strip_protocol(url)
        return os.path.realpath(os.path.expanduser(path))
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    with contextlib.suppress(ImportError, ValueError):  # the file system's own form of its paths
        stripped = fsspec.get_filesystem_class(scheme)._strip_protocol(f"{scheme}://{rest}")
        rest = rest if "://" in stripped else stripped
    return f"{scheme}://{posixpath.normpath(rest) if rest.strip('/') else ''}".rstrip("/")


def nesting(inner: Locatable, outer: Locatable) -> str | None:
    """How location ``inner`` relates to ``outer`` once both are resolved (:func:`location_key`):
    ``"is"``, ``"lies inside"``, ``"contains"``, or None when they are apart.

    Examples
    --------
    >>> nesting("s3://b/emb/en.zarr/res.zarr", "s3://b/emb/en.zarr"), nesting("s3://b/r.zarr", "s3://b/emb")
    ('lies inside', None)
    """
    a, b = location_key(inner), location_key(outer)
    if a == b:
        return "is"
    if a.startswith(b.rstrip("/") + "/"):
        return "lies inside"
    if b.startswith(a.rstrip("/") + "/"):
        return "contains"
    return None


_URL_USERINFO_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")
_URL_QUERY_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
_SECRET_PARAM_RE = re.compile(
    r"(?<![\w-])((?:X-Amz-[A-Za-z-]+|AWSAccessKeyId|Signature|sig|se|sp|sv|sr|st|skoid|sktid|token|access_token|key)=)[^&\s'\"]+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Return ``text`` with the secrets URLs may carry removed: user info, query strings and fragments
    of every URL in it, and any left-over signature or credential parameters (``X-Amz-Signature=...``).

    Examples
    --------
    >>> redact("GET https://b.s3.amazonaws.com/x.vec?X-Amz-Signature=abc&X-Amz-Credential=AK failed")
    'GET https://b.s3.amazonaws.com/x.vec failed'
    """
    text = _URL_USERINFO_RE.sub(r"\1", str(text))
    text = _URL_QUERY_RE.sub(r"\1", text)
    return _SECRET_PARAM_RE.sub(r"\1<redacted>", text)


def http_timeouts() -> tuple[float, float]:
    """Connect and read timeouts (seconds) of http(s) sources: Dask config keys
    ``biasdask.http.connect-timeout`` (default 30) and ``biasdask.http.read-timeout`` (default 60),
    also settable as ``DASK_BIASDASK__HTTP__CONNECT_TIMEOUT`` / ``..._READ_TIMEOUT``.

    Raises
    ------
    ConfigError
        A setting that is no number, named.
    """
    return number("biasdask.http.connect-timeout"), number("biasdask.http.read-timeout")


# server (scheme://host:port) -> (until when its requests fail at once, the timeout they failed with)
_SILENT: dict[str, tuple[float, type[BaseException]]] = {}
_TRACE: list = []


def _server(url: Any) -> str:
    parts = urllib.parse.urlsplit(str(url))
    return f"{parts.scheme}://{parts.hostname}:{parts.port}"


def _silence_tracker():
    """The aiohttp trace of every http(s) session biasdask opens: a request to a server that has just
    let one of its requests time out (a silent server) fails at once with the same timeout, for as
    long as that timeout, instead of waiting for it again. fsspec asks a server for a file's details
    by HEAD and then by GET, and reading it is a third request: each would wait the whole timeout,
    and the user twice or thrice the time they set."""
    if _TRACE:
        return _TRACE[0]
    import aiohttp

    async def starting(session, context, params) -> None:
        silent = _SILENT.get(_server(params.url))
        if silent is not None and time.monotonic() < silent[0]:
            raise silent[1](f"{display_url(str(params.url))}: the server let an earlier request time out")

    async def failed(session, context, params) -> None:
        exc = params.exception
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            connect, read = http_timeouts()
            waited = connect if isinstance(exc, aiohttp.ConnectionTimeoutError) else read
            _SILENT[_server(params.url)] = (time.monotonic() + waited, type(exc))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(starting)
    trace.on_request_exception.append(failed)
    _TRACE.append(trace)
    return trace


def storage_options_for(url: str, storage_options: dict | None) -> dict:
    """Return the fsspec options that apply to ``url``.

    ``storage_options`` is either flat (applied to object stores: every protocol except local files,
    ``memory://`` and ``http(s)://``) or keyed by protocol (``{"s3": {...}, "https": {...}}``), which
    targets any protocol, http(s) included. Every store biasdask opens (ingest source and destination,
    embedding stores, results store, dictionaries) takes its options from here.

    Raises
    ------
    BiasdaskError
        The file system of ``url``'s protocol is not installed (e.g. ``gs://`` without ``gcsfs``:
        ``pip install 'biasdask[gcs]'``).
    """
    protocol = fsspec.core.split_protocol(str(url))[0] or "file"
    _check_protocol(url, protocol)
    if not storage_options:
        return {}
    if set(storage_options) <= set(fsspec.available_protocols()):  # keyed by protocol
        return dict(storage_options.get(protocol) or {})
    return {} if protocol in _NO_OPTION_PROTOCOLS else dict(storage_options)


#: extras of biasdask that bring the file system of a protocol
_PROTOCOL_EXTRAS = {"gs": "gcs", "gcs": "gcs", "s3": "s3", "s3a": "s3", "http": "http", "https": "http"}


def _check_protocol(url: str, protocol: str) -> None:
    """Raise a one-line error when the file system of ``protocol`` is not installed."""
    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        extra = _PROTOCOL_EXTRAS.get(protocol)
        hint = f"pip install 'biasdask[{extra}]'" if extra else str(exc)
        raise BiasdaskError(
            f"{display_url(url)}: {protocol}:// needs a package that is not installed ({hint})"
        ) from None
    except ValueError:
        pass  # an unknown protocol: fsspec's own error, where the URL is opened, says so


def url_to_fs(place: Locatable) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system and path of ``place``, with its storage options (:func:`storage_options_for`) and,
    for http(s), the connect and read timeouts of :func:`http_timeouts`: every URL biasdask opens goes
    through here, so no request waits longer than the configured timeouts.

    Raises
    ------
    BiasdaskError
        A URL fsspec cannot open (unknown protocol, file system not installed).
    """
    loc = as_location(place)
    url = loc.url
    options = storage_options_for(url, loc.storage_options)
    if (fsspec.core.split_protocol(url)[0] or "file") in ("http", "https"):
        client_kwargs = dict(options.get("client_kwargs") or {})
        if "timeout" not in client_kwargs:
            import aiohttp

            connect, read = http_timeouts()
            client_kwargs["timeout"] = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read)
        if "trace_configs" not in client_kwargs:
            client_kwargs["trace_configs"] = [_silence_tracker()]
        options = {**options, "client_kwargs": client_kwargs}
    try:
        return fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as exc:
        raise BiasdaskError(f"{display_url(url)}: cannot open this URL: {redact(str(exc))}") from None


def files_under(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """Paths of every file under ``root`` of ``fs``, as ``fs.find`` gives them. On a local disk
    ``os.walk``'s listing replaces fsspec's, which asks for each entry's details (a study lists every
    language's store before it starts). It follows links to folders, as zarr reads through them (``find`` lists such a link as a file)."""
    if isinstance(fs, fsspec.implementations.local.LocalFileSystem):
        top = root.rstrip("/") or "/"
        return [
            f"{folder}/{name}".replace(os.sep, "/")
            for folder, _, names in os.walk(top, followlinks=True)
            for name in names
        ]
    return list(fs.find(root))


def timeout_error(display: str, exc: BaseException | None = None) -> BiasdaskError:
    """The one-line error of a read of ``display`` that timed out (``exc``, or an exception it was
    raised from), naming the timeout that ran out and the setting that raises it."""
    import aiohttp

    connect, read = http_timeouts()
    chain: list[BaseException] = []
    while exc is not None and len(chain) < 8:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    if any(isinstance(e, aiohttp.ConnectionTimeoutError) for e in chain):
        what, seconds, key = "connect", connect, "biasdask.http.connect-timeout"
    else:
        what, seconds, key = "read", read, "biasdask.http.read-timeout"
    return BiasdaskError(
        f"{display}: the server did not answer within the {what} timeout of {seconds:g} s; if it is only slow, "
        f"raise Dask setting {key} ({'DASK_' + key.upper().replace('.', '__').replace('-', '_')})"
    )


def check_kept(place: Locatable, what: str) -> None:
    """Refuse ``place`` as a destination of a command: ``memory://`` lives as long as the process, so
    what a command wrote there would be gone when it ends (the Python API keeps it).

    Raises
    ------
    BiasdaskError
        ``place`` is (or chains to) ``memory://``, named with ``what``.

    Examples
    --------
    >>> check_kept("memory://b/en.zarr", "DEST")
    Traceback (most recent call last):
    ...
    biasdask.errors.BiasdaskError: DEST: memory://b/en.zarr would vanish when the command ends (memory:// lives in the process; it is for the Python API): give a path or a URL that keeps it
    """
    url = as_location(place).url
    if any(fsspec.core.split_protocol(link)[0] == "memory" for link in url.split("::")):
        raise BiasdaskError(
            f"{what}: {display_url(url)} would vanish when the command ends (memory:// lives in the process; "
            "it is for the Python API): give a path or a URL that keeps it"
        )


def source_record(display: str, details: Mapping[str, Any]) -> dict[str, Any]:
    """What an embedding store records of the file it was made from: its URL without credentials,
    and, from the file system's ``info`` of it (``details``), its size and whichever of ETag,
    Last-Modified (http, S3, gs), modification time (local) and content hashes (``content_hash``:
    Content-MD5 or Digest headers, gs's md5 and crc32c, S3's checksums) the protocol gives, as JSON
    values. :func:`source_change` compares two.

    Examples
    --------
    >>> source_record("https://example.org/cc.en.300.vec.gz", {"size": 10, "ETag": '"5f2b"', "type": "file"})
    {'url': 'https://example.org/cc.en.300.vec.gz', 'size': 10, 'etag': '"5f2b"'}
    """
    record: dict[str, Any] = {"url": display}
    if isinstance(details.get("size"), int):
        record["size"] = details["size"]
    etag = details.get("ETag", details.get("etag"))
    if etag:
        record["etag"] = str(etag)
    modified = details.get("Last-Modified", details.get("LastModified", details.get("updated")))
    if modified:
        record["last_modified"] = modified.isoformat() if isinstance(modified, datetime.datetime) else str(modified)
    mtime = details.get("mtime")
    if isinstance(mtime, (int, float)):
        record["mtime"] = datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc).isoformat()
    hashes = {name: str(details[key]) for key, name in _CONTENT_HASHES.items() if details.get(key)}
    if hashes:
        record["content_hash"] = hashes
    return record


#: the content hashes file systems give in a file's details (http headers, gs, S3), as a record names them
_CONTENT_HASHES = {
    "Content-MD5": "md5",
    "Digest": "digest",
    "md5Hash": "md5",
    "crc32c": "crc32c",
    "ChecksumSHA256": "sha256",
    "ChecksumCRC32C": "crc32c",
}

#: the fields of a source record that tell its contents apart, in the order a change is named
_IDENTITY_FIELDS = ("url", "size", "content_hash", "etag", "last_modified", "mtime")


def source_details(place: Locatable) -> dict[str, Any]:
    """The record of the source at ``place`` as it is now (:func:`source_record` of its file system's
    ``info``: a HEAD request for http(s), no read of its bytes).

    Raises
    ------
    FileNotFoundError, PermissionError, TimeoutError, OSError
        As the file system raises them (a 404 is a FileNotFoundError).
    """
    loc = as_location(place)
    fs, path = url_to_fs(loc)
    return source_record(display_url(loc.url), fs.info(path))


def source_change(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """How the source recorded as ``recorded`` (:func:`source_record`) differs from what it is ``now``,
    as ``"etag '"a"' -> '"b"'"``; None when every field both records give agrees (a field only one gives,
    e.g. a server that stopped sending ETags, is not compared).

    Examples
    --------
    >>> source_change({"url": "https://x/a.vec", "size": 10, "etag": '"1"'}, {"url": "https://x/a.vec", "size": 10})
    >>> source_change({"url": "https://x/a.vec", "size": 10}, {"url": "https://x/a.vec", "size": 12})
    'size 10 -> 12'
    """
    for key in _IDENTITY_FIELDS:
        if key in recorded and key in now and recorded[key] != now[key]:
            if key == "content_hash":
                shared = set(recorded[key]) & set(now[key])
                if not any(recorded[key][k] != now[key][k] for k in shared):
                    continue
            if key == "size":
                return f"size {recorded[key]} -> {now[key]}"
            return f"{key.replace('_', ' ')} {recorded[key]!r} -> {now[key]!r}"
    return None


def one_line(exc: BaseException) -> str:
    """An exception as one line of text, its secrets removed (:func:`redact`)."""
    return redact(" ".join(f"{type(exc).__name__}: {exc}".split()))
