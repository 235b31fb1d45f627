"""Every fault of the infrastructure around a command (a bad Dask setting, a temporary directory that
cannot be used, a full or read-only output, Ctrl-C at any moment) is one line, exit 2 (130 for Ctrl-C),
naming what to fix; a run stopped by its storage leaves a cube that says so."""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import zarr.storage

from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file


def _command(*args: str, env: dict[str, str] | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "biasdask.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("variable", "value", "needle"),
    [
        ("DASK_BIASDASK__HTTP__READ_TIMEOUT", "banana", "biasdask.http.read-timeout"),
        ("DASK_DISTRIBUTED__WORKER__MEMORY__TARGET", "banana", "distributed.worker.memory.target"),
        ("DASK_TEMPORARY_DIRECTORY", "/proc/nope", "temporary-directory"),
    ],
)
def test_a_bad_dask_setting_is_named_in_one_line(tmp_path, variable, value, needle):
    # before: ValueError: could not convert string to float (exit 1); a worker's traceback and
    # "Nanny failed to start" (exit 1); "Cluster failed to start: [Errno 2] ..." (exit 1)
    study = study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)})
    proc = _command("run", str(study), "--workers", "1", "--quiet", env={variable: value})
    assert_one_line_error(proc.returncode, proc.stderr, f"Dask setting {needle} ({variable}) is {value!r}")
    assert proc.returncode == 2
    assert not (tmp_path / "results.zarr").exists()


def _refuse_writes(monkeypatch, code: int, where: str) -> None:
    """The local file system refuses with ``code`` every write of a key whose path matches ``where``."""
    set_key = zarr.storage.LocalStore.set

    async def refused(self, key, value):
        if re.search(where, f"{self.root}/{key}"):
            raise OSError(code, os.strerror(code))
        return await set_key(self, key, value)

    monkeypatch.setattr(zarr.storage.LocalStore, "set", refused)


def test_a_read_only_output_is_one_line_naming_it(tmp_path, cli, on_cluster, monkeypatch):
    # before: "OSError: [Errno 30] Read-only file system", exit 1
    study = study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)})
    _refuse_writes(monkeypatch, errno.EROFS, r"results\.zarr")
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "results.zarr: cannot write the results store: Read-only file system", "--output")
    assert code == 2


def test_a_full_disk_stops_the_run_in_one_line_and_the_cube_says_why(tmp_path, cli, on_cluster, monkeypatch):
    # before: "OSError: [Errno 28] No space left on device", exit 1; show: "0 of 2 cells done"
    en, de = generated_store(tmp_path, "en", chunk_words=200), generated_store(tmp_path, "de", chunk_words=200, seed=1)
    study = study_file(tmp_path, {"en": en, "de": de})
    _refuse_writes(monkeypatch, errno.ENOSPC, r"results\.zarr/cells/\d")  # the template fits, no cell does
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "results.zarr: the disk of the results store is full", "0 cells are written")
    assert code == 2
    monkeypatch.undo()
    code, out, err = cli("show", tmp_path / "results.zarr")
    assert code == 0 and "0 of 2 cells done: the run stopped at " in err
    assert "the disk of the results store is full (No space left on device)" in err
    assert "run the study again" in err
    assert cli("run", study, "--quiet")[0] == 0  # space again: the run goes on
    code, out, err = cli("show", tmp_path / "results.zarr")
    assert code == 0 and err == ""


def test_a_run_that_could_not_say_why_it_stopped_is_not_shown_as_finished(tmp_path, cli, on_cluster, monkeypatch):
    from biasdask.io import results as rs

    study = study_file(tmp_path, {"en": generated_store(tmp_path, chunk_words=200)})
    create = rs.create_results

    def then_full(*args, **kwargs):  # the template fits; after it nothing does, not even why the run stopped
        create(*args, **kwargs)
        _refuse_writes(monkeypatch, errno.ENOSPC, r"results\.zarr/")

    monkeypatch.setattr(rs, "create_results", then_full)
    code, _, err = cli("run", study, "--quiet")
    assert_one_line_error(code, err, "results.zarr: the disk of the results store is full")
    monkeypatch.undo()
    code, out, err = cli("show", tmp_path / "results.zarr")
    assert code == 0 and "0 of 1 cells done: the run started at " in err and "stopped before it could say why" in err


@pytest.mark.parametrize("after", [0.0, 0.3, 1.0, 2.0])
def test_ctrl_c_at_any_moment_of_an_ingest_is_one_line(tmp_path, after):
    # before: a KeyboardInterrupt traceback (of the imports, of argparse, of the parser)
    source = tmp_path / "en.vec"
    source.write_text("3 2\nhe 1 0\nshe 0 1\nthe 0.5 0.5\n" + "".join(f"w{i} 0.1 0.2\n" for i in range(1_000_000)))
    proc = subprocess.Popen(  # -X importtime: the moment biasdask begins to load is on stderr
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "biasdask.cli",
            "ingest",
            str(source),
            "-o",
            str(tmp_path / "en.zarr"),
        ]
        + ["--language", "en", "--workers", "0", "--quiet"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the whole group gets the signal, as from a terminal
    )
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "biasdask._interrupt" in line:
            break
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGINT)
    out, rest = proc.communicate(timeout=300)
    err = "".join(line for line in lines + rest.splitlines(keepends=True) if not line.startswith("import time:"))
    assert proc.returncode in (130, -signal.SIGINT), err
    assert err == "biasdask: interrupted\n", err
    assert not (tmp_path / "en.zarr").exists() and not (tmp_path / "en.zarr.lock").exists()
