"""Register biasdask's defaults (``biasdask.yaml``) in ``dask.config`` under the ``biasdask`` key.

Values set before (YAML files in Dask's config directories, ``DASK_BIASDASK__...`` environment
variables) keep priority over these defaults, as for Dask's own namespaces.
"""

from __future__ import annotations

from pathlib import Path

import dask.config
import yaml
from dask.utils import parse_timedelta

__all__ = ["seconds"]


_FILE = Path(__file__).with_name("biasdask.yaml")

dask.config.update_defaults(yaml.safe_load(_FILE.read_text(encoding="utf-8")))


def seconds(key: str) -> float:
    """A duration of the ``biasdask`` namespace in seconds (``"1s"``, ``"200ms"``, ``0.5``)."""
    return float(parse_timedelta(dask.config.get(f"biasdask.{key}"), default="seconds"))
