"""The typed access to zarr nodes: arrays come back as arrays, anything else is a one-line store error."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.api.asynchronous as zarr_async

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

    assert zarr_compat.run(both()).tolist() == [0.0, 1.0, 2.0]


def test_a_format_2_array_is_refused():
    old = zarr.open_array(zarr.storage.MemoryStore(), mode="w", shape=(2,), dtype="f4", zarr_format=2)
    with pytest.raises(CorruptStoreError, match="zarr format 2"):
        zarr_compat.v3_metadata(old)


def test_the_private_parts_of_zarr_biasdask_uses_still_work(group):
    """Every zarr.core name behind the compat module, exercised: a zarr release that moves one fails here."""
    store = group.store
    zarr_compat.run(store.set("extra/blob", zarr_compat.bytes_buffer(b"abc")))
    got = zarr_compat.run(store.get("extra/blob", prototype=zarr_compat.buffer_prototype()))
    assert got.to_bytes() == b"abc"
    assert zarr_compat.integer_dtype(np.int16).to_native_dtype() == np.int16
    assert zarr_compat.integer_dtype(np.int32).to_native_dtype() == np.int32
    with pytest.raises(ValueError, match="signed integer"):
        zarr_compat.integer_dtype(np.float32)
    config: zarr_compat.ArrayConfigParams = {"write_empty_chunks": True}
    ints = group.create_array("ints", shape=(4,), dtype="int32", fill_value=0, config=config)
    ints[:] = [1, -2, 3, -4]
    meta = zarr_compat.v3_metadata(ints)
    # the same chunks seen as another array (the raw integers of a scaled store are read so)
    same = zarr_compat.with_metadata(ints, meta)
    assert isinstance(same, zarr.Array) and same[...].tolist() == [1, -2, 3, -4]
    assert isinstance(zarr_compat.run(zarr_async.open_array(store=store, path="ints")), zarr_compat.AsyncArray)
