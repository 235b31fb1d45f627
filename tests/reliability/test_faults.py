"""Faults a user meets by mistake: each ends in one line, loses nothing and leaves nothing half-made."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.reliability.helpers import assert_one_line_error

INGEST = ["--workers", "0", "--quiet"]
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
    assert cli("ingest", src, "-o", dest, "--language", "en", *INGEST)[0] == 0
    before = _tree_digest(dest)
    code, _, err = cli("ingest", src, "-o", dest, "--language", "fr", *INGEST)
    assert_one_line_error(code, err, "en.zarr", "'en'", "'fr'", "--overwrite")
    assert code == 2
    assert _tree_digest(dest) == before
    assert cli("ingest", src, "-o", dest, "--language", "en", *INGEST)[0] == 0  # the same language: replaced
    assert cli("ingest", src, "-o", dest, "--language", "fr", "--overwrite", *INGEST)[0] == 0
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

    proc = subprocess.Popen(
        [sys.executable, "-m", "biasdask.cli", "languages"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # before the command prints: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


def test_bz2_and_xz_sources_are_decompressed_and_zstd_is_refused_naming_it(tmp_path, cli):
    # before: a .bz2 was parsed as text: "line 1 ('BZh91AY&SY...')"
    import bz2
    import lzma

    import numpy as np

    import biasdask

    plain = tmp_path / "x.vec"
    plain.write_bytes(VEC)
    assert cli("ingest", plain, "-o", tmp_path / "plain.zarr", "--language", "en", *INGEST)[0] == 0
    want = biasdask.open_embeddings(str(tmp_path / "plain.zarr"))
    for name, compress in (("x.vec.bz2", bz2.compress), ("x.vec.xz", lzma.compress)):
        (tmp_path / name).write_bytes(compress(VEC))
        code, _, err = cli("ingest", tmp_path / name, "-o", tmp_path / f"{name}.zarr", "--language", "en", *INGEST)
        assert code == 0, err
        got = biasdask.open_embeddings(str(tmp_path / f"{name}.zarr"))
        assert list(got["word"].values) == list(want["word"].values)
        np.testing.assert_array_equal(got["vectors"].values, want["vectors"].values)
    (tmp_path / "x.vec.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    code, _, err = cli("ingest", tmp_path / "x.vec.zst", "-o", tmp_path / "zst.zarr", "--language", "en", *INGEST)
    assert_one_line_error(code, err, "x.vec.zst: zstd-compressed", "decompress it first")
    assert not (tmp_path / "zst.zarr").exists()
    (tmp_path / "cut.vec.xz").write_bytes(lzma.compress(VEC)[:-10])
    code, _, err = cli("ingest", tmp_path / "cut.vec.xz", "-o", tmp_path / "cut.zarr", "--language", "en", *INGEST)
    assert_one_line_error(code, err, "cut.vec.xz", "truncated xz stream")
    assert not (tmp_path / "cut.zarr").exists()


def test_a_negative_header_and_tab_separated_fields_are_named_as_such(tmp_path, cli):
    # before: "line 2: expected 1 values, found 4" and "expected 4 values, found 0"
    cases = {
        "neg.vec": (
            b"-2 4\na 1 2 3 4\nb 1 2 3 4\n",
            "neg.vec: line 1: the header 'N D' (-2 4) has a negative word count",
        ),
        "tabs.vec": (
            b"2 4\na\t1\t2\t3\t4\nb\t1\t2\t3\t4\n",
            "tabs.vec: line 2 ('a\\t1\\t2\\t3\\t4'): expected 4 values, found 0 (the fields are separated by tabs",
        ),
        "tabs.txt": (
            b"a\t1\t2\t3\t4\nb\t1\t2\t3\t4\n",
            "tabs.txt: line 1: a word without values (the fields are separated by tabs",
        ),
    }
    for name, (data, needle) in cases.items():
        (tmp_path / name).write_bytes(data)
        code, _, err = cli("ingest", tmp_path / name, "-o", tmp_path / f"{name}.zarr", "--language", "en", *INGEST)
        assert_one_line_error(code, err, needle)
        assert not (tmp_path / f"{name}.zarr").exists()


def test_csv_output_neutralises_cells_a_spreadsheet_would_run_as_formulas(tmp_path, cli):
    # before: the word =HYPERLINK(1) was written as is, and a spreadsheet ran it
    import csv
    import io

    import numpy as np
    import xarray as xr

    import biasdask

    rng = np.random.default_rng(1)
    words = ["=HYPERLINK(1)", "she", "+1", "-2", "@sum", *(f"w{i}" for i in range(200))]
    vectors = rng.standard_normal((len(words), 8)).astype(np.float32)
    vectors[2:5] = vectors[0] * 3  # the formula-like words lean towards A
    emb = xr.DataArray(vectors, dims=("word", "dim"), coords={"word": words}, attrs={"language": "en"})
    study = {
        "output": str(tmp_path / "r.zarr"),
        "languages": {"en": {"store": emb, "a": ["=HYPERLINK(1)"], "b": ["she"]}},
        "methods": ["uniform"],
        "n_permutations": 99,
        "seed": 1,
    }
    biasdask.run(study, progress=False)
    code, out, err = cli("show", tmp_path / "r.zarr", "--format", "csv")
    assert code == 0, err
    (row,) = csv.DictReader(io.StringIO(out))
    assert row["A"] == "'=HYPERLINK(1)" and row["B"] == "she"
    assert float(row["s"]) == float(row["s"])  # numbers stay numbers
    code, out, err = cli("words", tmp_path / "r.zarr", "en", "-n", "5", "--format", "csv")
    assert code == 0, err
    cells = [row["word"] for row in csv.DictReader(io.StringIO(out))]
    assert {"'+1", "'-2", "'@sum"} <= set(cells), cells


def test_a_language_given_twice_is_refused_naming_it(tmp_path, cli):
    # before: languages: [en, en] ran without a word
    study = tmp_path / "study.yaml"
    study.write_text("output: r.zarr\nembeddings: emb/{language}.zarr\nlanguages: [en, de, en]\n")
    code, _, err = cli("run", study)
    assert_one_line_error(code, err, "languages: 'en' listed more than once")
    study.write_text(
        "output: r.zarr\nlanguages:\n  en: {store: a.zarr}\n  de: {store: b.zarr}\n  en: {store: c.zarr}\n"
    )
    code, _, err = cli("run", study)
    assert_one_line_error(code, err, "study.yaml: not valid YAML at line 5, column 3: the key 'en' is given twice")
    assert not (tmp_path / "r.zarr").exists()


def test_an_output_inside_an_embedding_store_is_refused_before_anything_is_written(tmp_path, cli):
    # before: the study ran and wrote its results into the user's store (exit 0)
    src = tmp_path / "x.vec"
    src.write_bytes(VEC)
    emb = tmp_path / "emb" / "en.zarr"
    assert cli("ingest", src, "-o", emb, "--language", "en", *INGEST)[0] == 0
    before = _tree_digest(emb)
    study = tmp_path / "study.yaml"
    for output, where in ((emb / "res.zarr", "lies inside"), (emb, "is"), (tmp_path / "emb", "contains")):
        study.write_text(f"output: {output}\nlanguages:\n  en: {{store: {emb}, a: [he], b: [she]}}\n")
        code, _, err = cli("run", study, "--workers", "1")
        assert_one_line_error(code, err, f"output: {output} {where} the embedding store of en ({emb})")
        assert code == 2
        assert _tree_digest(emb) == before


def test_ingest_onto_a_full_disk_names_the_destination_and_leaves_nothing(tmp_path, cli, monkeypatch):
    # before: "OSError: [Errno 28] No space left on device", exit 1, no store named
    import errno

    import zarr.storage

    set_key = zarr.storage.LocalStore.set

    async def full_disk(self, key, value):
        if "vectors/c" in key:  # the metadata fits, the first chunk of vectors does not
            raise OSError(errno.ENOSPC, "No space left on device")
        return await set_key(self, key, value)

    monkeypatch.setattr(zarr.storage.LocalStore, "set", full_disk)
    src = tmp_path / "x.vec"
    src.write_bytes(VEC)
    (tmp_path / "out").mkdir()
    code, _, err = cli("ingest", src, "-o", tmp_path / "out" / "en.zarr", "--language", "en", *INGEST)
    assert_one_line_error(code, err, "out/en.zarr: the destination's disk is full (No space left on device)")
    assert code == 2
    assert list((tmp_path / "out").iterdir()) == []


def test_a_slow_worker_shutdown_is_no_news_but_a_memory_restart_is():
    """On a loaded machine the nanny may kill a worker that takes more than a few seconds to stop at the
    end of a run; the CLI keeps that line out of its one-line output, not the nanny's other warnings."""
    import logging

    from biasdask.cli import _silence_worker_failures

    _silence_worker_failures()
    nanny = logging.getLogger("distributed.nanny")
    # A handler on the logger itself: an earlier cluster in this process may have stopped the nanny's
    # records from propagating to the root logger (where pytest's caplog listens).
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    level = nanny.level
    nanny.addHandler(handler)
    nanny.setLevel(logging.WARNING)
    try:
        nanny.warning("Worker process still alive after 4.0 seconds, killing")
        nanny.warning("Worker tcp://127.0.0.1:1 (pid=1) exceeded 95% memory budget. Restarting...")
    finally:
        nanny.removeHandler(handler)
        nanny.setLevel(level)
    assert [r.getMessage()[:20] for r in records] == ["Worker tcp://127.0.0"]
