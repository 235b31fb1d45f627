"""One writer per results store: a second run on the same output stops at once, naming the holder,
and the first run's results are its own."""

from __future__ import annotations

import os
import threading

import yaml

import biasdask
from biasdask.io import results as rs
from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file


def test_a_second_run_on_the_same_output_stops_naming_the_holder(tmp_path, cli, monkeypatch):
    url = generated_store(tmp_path, chunk_words=200)
    study_a = study_file(tmp_path, {"en": url}, seed=1)
    study_b = tmp_path / "b.yaml"
    study_b.write_text(yaml.safe_dump({**yaml.safe_load(study_a.read_text()), "seed": 2}))
    started, go_on = threading.Event(), threading.Event()
    write_cell = rs.write_cell

    def slow_write_cell(*args, **kwargs):  # run A holds the output while B starts
        started.set()
        go_on.wait(120)
        return write_cell(*args, **kwargs)

    monkeypatch.setattr(rs, "write_cell", slow_write_cell)
    outcome: list = []
    a = threading.Thread(target=lambda: outcome.append(biasdask.run(str(study_a), progress=False)))
    a.start()
    try:
        assert started.wait(120), "run A did not start"
        code, _, err = cli("run", study_b, "--overwrite", "--quiet", "--workers", "1")
    finally:
        go_on.set()
        a.join(300)
    lock = f"{tmp_path / 'results.zarr'}.lock"
    assert_one_line_error(code, err, "results.zarr: another writer holds its lock", lock, f"pid {os.getpid()}")
    assert code == 2
    (cube,) = outcome
    assert cube.attrs["seed"] == 1 and rs.open_results(str(tmp_path / "results.zarr")).attrs["seed"] == 1
    assert not os.path.exists(lock)  # released with the run
