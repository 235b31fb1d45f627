"""The Dask layer: each measure as Dask graphs and tasks over the numeric core, and where the tasks run."""

__all__: list[str] = []
