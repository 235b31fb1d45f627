"""The Dask layer: graphs and task streams over the numeric core (studies, tests, ingest, debiasing)."""

__all__ = []
