"""Everything biasdask takes from zarr beyond its public API, in one place: typed access to groups and
array metadata, running zarr's coroutines, raw buffers, and an array seen through other metadata.

zarr types ``group[name]`` as "an array or a group" and ``array.metadata`` as "version 2 or 3": these
helpers narrow them to what a biasdask store holds (arrays, zarr format 3) and fail with a one-line error
naming the node when a store holds something else, so the rest of the I/O layer reads as plain zarr.
The rest (``zarr.core.*``) has no public equivalent in zarr 3; ``tests/io/test_zarr_compat.py`` exercises
each name here, so a zarr release that moves one fails there, loudly, not deep in a run.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import numpy as np
import zarr
from zarr.core.array import Array, AsyncArray
from zarr.core.array_spec import ArrayConfigParams
from zarr.core.buffer import Buffer, default_buffer_prototype
from zarr.core.dtype import Int16, Int32
from zarr.core.group import AsyncGroup
from zarr.core.metadata import ArrayV3Metadata
from zarr.core.sync import sync as _sync

from biasdask.errors import CorruptStoreError

__all__ = [
    "ArrayConfigParams",
    "AsyncArray",
    "array",
    "async_array",
    "buffer_prototype",
    "bytes_buffer",
    "integer_dtype",
    "run",
    "v3_metadata",
    "with_metadata",
]

T = TypeVar("T")


def array(group: zarr.Group, name: str) -> zarr.Array:
    """The array ``name`` of ``group``."""
    node = group[name]
    if not isinstance(node, zarr.Array):
        raise CorruptStoreError(f"{group.store_path}: {name} is a group where an array was expected")
    return node


async def async_array(group: AsyncGroup, name: str) -> AsyncArray:
    """The array ``name`` of an asynchronous ``group``."""
    node = await group.getitem(name)
    if not isinstance(node, AsyncArray):
        raise CorruptStoreError(f"{group.store_path}: {name} is a group where an array was expected")
    return node


def v3_metadata(node: zarr.Array | AsyncArray) -> ArrayV3Metadata:
    """The zarr format 3 metadata of an array (biasdask writes no other format)."""
    metadata = node.metadata
    if not isinstance(metadata, ArrayV3Metadata):
        raise CorruptStoreError(f"{node.store_path}: zarr format {metadata.zarr_format}; biasdask stores are format 3")
    return metadata


def run(coroutine: Awaitable[T]) -> T:
    """Run one of zarr's coroutines on zarr's own event loop (as its synchronous API does)."""
    return _sync(coroutine)  # type: ignore[arg-type]


def buffer_prototype():
    """The buffer prototype of a store's ``get`` (host memory)."""
    return default_buffer_prototype()


def bytes_buffer(data: bytes) -> Buffer:
    """``data`` as a buffer a store's ``set`` takes."""
    return default_buffer_prototype().buffer.from_bytes(data)


def integer_dtype(dtype: np.dtype | type) -> Int16 | Int32:
    """zarr's data type of a 16- or 32-bit signed integer."""
    size = np.dtype(dtype).itemsize
    if np.dtype(dtype).kind != "i" or size not in (2, 4):
        raise ValueError(f"expected a 16- or 32-bit signed integer type, got {np.dtype(dtype)}")
    return Int16() if size == 2 else Int32()


def with_metadata(node: zarr.Array, metadata: ArrayV3Metadata) -> zarr.Array:
    """The same stored chunks read through other ``metadata`` (e.g. fewer codecs, another data type)."""
    return Array(AsyncArray(metadata=metadata, store_path=node.store_path, config=node._async_array.config))
