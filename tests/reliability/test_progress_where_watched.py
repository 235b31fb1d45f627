"""Progress only where someone watches: bars on a terminal or in a notebook, in a log or a pipe only
when asked (``--progress``), so that a failing command's one line is all its log holds."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

VEC = "he 1 0\nshe 0 1\nthe 0.5 0.5\n" + "".join(f"w{i} {i % 97 / 100} {i % 89 / 100 + 2}\n" for i in range(5000))


def _ingest(tmp_path, *extra: str, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "ingest", str(tmp_path / "en.vec"), "-o", str(tmp_path / "en.zarr")]
        + ["--language", "en", "--workers", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=300,
    )


def test_no_bar_in_a_log_unless_asked(tmp_path):
    # before: bar fragments on a non-terminal stderr, and a bar left at 0 % above a failing command's line
    (tmp_path / "en.vec").write_text(VEC)
    proc = _ingest(tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    proc = _ingest(tmp_path, "--progress")
    assert proc.returncode == 0 and "ingest" in proc.stderr and "100%" in proc.stderr, proc.stderr
    (tmp_path / "en.vec").write_text(VEC.replace("w40 0.4 ", "w40 x "))
    proc = _ingest(tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and proc.stderr.startswith("biasdask: error: ")
    with pytest.raises(SystemExit):  # asked for and refused at once: no such pair
        from biasdask.cli import build_parser

        build_parser().parse_args(["ingest", "a", "-o", "b", "--language", "en", "--quiet", "--progress"])


def test_a_bar_on_a_terminal(tmp_path):
    (tmp_path / "en.vec").write_text(VEC)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal of 100 columns
    try:
        proc = _ingest(tmp_path, stderr=follower)
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                piece = os.read(leader, 65536)
            except OSError:  # the terminal is closed once everything is read
                break
            if not piece:
                break
            seen += piece
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0
    assert b"ingest" in seen and b"100%" in seen, seen


def test_a_bar_in_a_notebook(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("from biasdask.progress import wanted\nwanted(None)")]
    )
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["data"]["text/plain"] == "True"
