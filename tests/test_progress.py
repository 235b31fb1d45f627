"""Progress bars only on a terminal or when asked; warnings and log records above them, never glued."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np

from biasdask import Resampling
from biasdask.engine.permutation import permutation_test
from biasdask.progress import progress_bar, wanted


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_show_on_a_terminal_or_when_asked(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not wanted(None) and wanted(True) and not wanted(False)
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert wanted(None) and not wanted(False)


def test_no_output_at_all_when_not_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    x = np.random.default_rng(1).standard_normal(2000).astype(np.float32)
    permutation_test(x, 2000, resampling=Resampling(n_permutations=400, batch_size=100, seed=1))
    assert err.getvalue() == ""


def test_a_bar_on_a_terminal_counts_the_batches(monkeypatch):
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    x = np.random.default_rng(1).standard_normal(2000).astype(np.float32)
    permutation_test(x, 2000, resampling=Resampling(n_permutations=400, batch_size=100, seed=1))
    assert "permutations" in err.getvalue() and "100%" in err.getvalue()


def test_warnings_and_log_records_go_above_the_bar(monkeypatch):
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    log = logging.getLogger("biasdask.test")
    handler = logging.StreamHandler(err)
    logging.getLogger("biasdask").addHandler(handler)
    try:
        with progress_bar(None, total=3, desc="step") as bar:
            bar.update(1)
            warnings.warn("something odd", UserWarning, stacklevel=1)
            log.warning("a skipped cell")
            bar.update(2)
    finally:
        logging.getLogger("biasdask").removeHandler(handler)
    lines = err.getvalue().replace("\r", "\n").split("\n")
    warning_line = next(ln for ln in lines if "something odd" in ln)
    record_line = next(ln for ln in lines if "a skipped cell" in ln)
    # each message on a line of its own, not glued to a bar
    assert "step" not in warning_line and "step" not in record_line
    assert warning_line.rstrip().endswith("UserWarning: something odd") and record_line.strip() == "a skipped cell"
    assert sum("a skipped cell" in ln for ln in lines) == 1  # once, not also through the root logger
