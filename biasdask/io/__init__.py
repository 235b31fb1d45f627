"""The I/O layer: embedding files, verified Zarr stores, results cubes and locations (lazy dask arrays at most; no task graphs of its own)."""

__all__ = []
