"""Faults a user meets by mistake: each ends in one line, loses nothing and leaves nothing half-made."""

from __future__ import annotations

import hashlib
from pathlib import Path

from reliability_helpers import assert_one_line_error

INGEST = ["--workers", "0", "--no-progress"]
VEC = b"3 2\nhe 1 0\nshe 0 1\nthe 0.5 0.5\n"


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_ingesting_another_language_over_a_store_is_refused_without_overwrite(tmp_path, cli):
    # before: ingesting fr into the store labelled en replaced it without a word
    src = tmp_path / "x.vec"
    src.write_bytes(VEC)
    dest = tmp_path / "en.zarr"
    assert cli("ingest", src, dest, "--language", "en", *INGEST)[0] == 0
    before = _tree_digest(dest)
    code, _, err = cli("ingest", src, dest, "--language", "fr", *INGEST)
    assert_one_line_error(code, err, "en.zarr", "'en'", "'fr'", "--overwrite")
    assert code == 2
    assert _tree_digest(dest) == before
    assert cli("ingest", src, dest, "--language", "en", *INGEST)[0] == 0  # the same language: replaced
    assert cli("ingest", src, dest, "--language", "fr", "--overwrite", *INGEST)[0] == 0
    import biasdask

    assert biasdask.open_embeddings(str(dest)).attrs["language"] == "fr"


def test_a_yaml_syntax_error_names_its_line_and_column(tmp_path, cli):
    study = tmp_path / "study.yaml"
    study.write_text("output: r.zarr\nlanguages:\n  en: {store: en.zarr\nmethods: [uniform]\n")
    code, _, err = cli("run", study)
    assert_one_line_error(code, err, "study.yaml: not valid YAML at line 4, column 8")
    assert code == 2


def test_a_study_file_that_is_not_utf8_names_the_byte(tmp_path, cli):
    # before: UnicodeDecodeError ..., exit 1
    study = tmp_path / "study.yaml"
    study.write_bytes("output: r.zarr\nlanguages:\n  fr: {store: fr.zarr, a: [mâle]}\n".encode("latin-1"))
    code, _, err = cli("run", study)
    assert_one_line_error(code, err, "study.yaml: not UTF-8", "byte 54")
    assert code == 2


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    # before: "biasdask: error: BrokenPipeError: [Errno 32] Broken pipe", exit 1 (`biasdask show ... | head`)
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "biasdask.cli", "languages"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command prints: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""
