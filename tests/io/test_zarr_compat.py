"""The typed access to zarr nodes: arrays come back as arrays, anything else is a one-line store error."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.api.asynchronous as zarr_async
from zarr.core.sync import sync

from biasdask.errors import CorruptStoreError
from biasdask.io import zarr_compat


@pytest.fixture
def group() -> zarr.Group:
    root = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    root.create_array("values", shape=(3,), dtype="float32", fill_value=0.0)[:] = np.arange(3)
    root.create_group("sub")
    return root


def test_an_array_is_returned_as_an_array(group):
    values = zarr_compat.array(group, "values")
    assert isinstance(values, zarr.Array)
    assert values[...].tolist() == [0.0, 1.0, 2.0]
    assert zarr_compat.v3_metadata(values).zarr_format == 3


def test_a_group_where_an_array_is_expected_is_a_store_error(group):
    with pytest.raises(CorruptStoreError, match="sub is a group where an array was expected"):
        zarr_compat.array(group, "sub")


def test_the_asynchronous_twin(group):
    async def both():
        root = await zarr_async.open_group(group.store, mode="r", zarr_format=3)
        values = await zarr_compat.async_array(root, "values")
        with pytest.raises(CorruptStoreError, match="sub is a group"):
            await zarr_compat.async_array(root, "sub")
        return await values.getitem(...)

    assert sync(both()).tolist() == [0.0, 1.0, 2.0]


def test_a_format_2_array_is_refused():
    old = zarr.open_array(zarr.storage.MemoryStore(), mode="w", shape=(2,), dtype="f4", zarr_format=2)
    with pytest.raises(CorruptStoreError, match="zarr format 2"):
        zarr_compat.v3_metadata(old)
