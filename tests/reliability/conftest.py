"""Fixtures of the reliability suite: a CLI runner that keeps stderr, the session cluster for ``run``."""

from __future__ import annotations

import pytest

from biasdask.cli import main


@pytest.fixture()
def cli(capsys):
    """Run ``biasdask ARGS`` in this process; returns ``(exit code, stdout, stderr)``."""

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture()
def on_cluster(dask_client, monkeypatch):
    """Make ``biasdask run`` use the session's LocalCluster (worker processes) via DASK_SCHEDULER_ADDRESS."""
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", dask_client.scheduler.address)
    return dask_client
