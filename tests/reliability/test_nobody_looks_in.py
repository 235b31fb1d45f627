"""Nobody else looks in: the local cluster that ``run``, ``ingest`` and ``demo`` start listens on
127.0.0.1 only (its dashboard shows the study's tasks and words), unless the user asks otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json
import psutil
from biasdask.engine.cluster import get_client

if __name__ == "__main__":
    client = get_client(n_workers=1, threads_per_worker=1)
    listening = [
        conn.laddr.ip
        for process in [psutil.Process(), *psutil.Process().children(recursive=True)]
        for conn in process.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    print(json.dumps({"listening": listening, "dashboard": client.dashboard_link}))
    client.close()
    client.cluster.close()
"""


def _listening(tmp_path, **env: str) -> dict:
    script = tmp_path / "cluster.py"  # a file: worker processes are spawned from it
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if k not in ("DASK_SCHEDULER_ADDRESS", "DASK_GATEWAY__ADDRESS")}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env={**environ, **env}, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_local_cluster_listens_on_this_machine_only(tmp_path):
    # before: the dashboard listened on 0.0.0.0 (dashboard_address=":0")
    seen = _listening(tmp_path)
    assert seen["listening"] and set(seen["listening"]) == {"127.0.0.1"}, seen
    assert seen["dashboard"].startswith("http://127.0.0.1:")


@pytest.mark.slow
def test_another_address_when_asked(tmp_path):
    seen = _listening(tmp_path, DASK_BIASDASK__LOCAL_CLUSTER__DASHBOARD_ADDRESS="0.0.0.0:0")
    assert "0.0.0.0" in seen["listening"] or "::" in seen["listening"], seen
