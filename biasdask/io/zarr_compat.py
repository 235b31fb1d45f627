"""Typed access to zarr groups and array metadata.

zarr types ``group[name]`` as "an array or a group" and ``array.metadata`` as "version 2 or 3": these
helpers narrow them to what a biasdask store holds (arrays, zarr format 3) and fail with a one-line error
naming the node when a store holds something else, so the rest of the I/O layer reads as plain zarr.
"""

from __future__ import annotations

import zarr
from zarr.core.array import AsyncArray
from zarr.core.group import AsyncGroup
from zarr.core.metadata import ArrayV3Metadata

from biasdask.errors import CorruptStoreError


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
