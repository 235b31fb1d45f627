"""One storage-options form everywhere: flat, or keyed by protocol, reaching every store."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import s3fs
from fsspec.registry import _registry as fsspec_classes

import biasdask
from biasdask import Location
from biasdask.errors import BiasdaskError
from biasdask.io.fs import storage_options_for


def test_flat_and_protocol_keyed_options_resolve_per_url():
    flat = {"endpoint_url": "http://h:1", "key": "k"}
    assert storage_options_for("s3://b/x", flat) == flat
    assert storage_options_for("/tmp/x", flat) == {} and storage_options_for("memory://x", flat) == {}
    keyed = {"s3": flat, "https": {"headers": {"A": "1"}}}
    assert storage_options_for("s3://b/x", keyed) == flat
    assert storage_options_for("https://h/x.vec", keyed) == {"headers": {"A": "1"}}
    assert storage_options_for("file:///tmp/x", keyed) == {}


def test_gs_without_gcsfs_is_a_one_line_error_naming_the_extra(monkeypatch):
    # gcsfs is a test dependency: hide it (and fsspec's cached class for gs) to see what users without it see
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    monkeypatch.delitem(fsspec_classes, "gs", raising=False)
    with pytest.raises(BiasdaskError, match=r"gs://b/x.zarr: gs:// needs .*biasdask\[gcs\]"):
        biasdask.open_embeddings("gs://b/x.zarr")


@pytest.mark.slow
def test_endpoint_only_in_protocol_keyed_options_reaches_every_store(s3_bucket, small_model, tmp_path, monkeypatch):
    """Ingest destination, embedding store and results store all reach the moto server although its
    endpoint and credentials are given only as ``{"s3": {...}}`` (nothing in the environment)."""
    bucket, flat = s3_bucket
    for var in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var, raising=False)
    keyed = {"s3": dict(flat)}
    vectors, words = small_model
    src = tmp_path / "en.vec"
    src.write_text(
        f"{len(words)} {vectors.shape[1]}\n"
        + "".join(w + " " + " ".join(map(str, row)) + "\n" for w, row in zip(words, vectors)),
        encoding="utf-8",
    )
    emb_url, out_url = f"s3://{bucket}/emb/en.zarr", f"s3://{bucket}/results/study.zarr"
    biasdask.ingest(Location(str(src), keyed), Location(emb_url, keyed), language="en", client=False, progress=False)
    study = {
        "output": out_url,
        "languages": {"en": {"store": emb_url}},
        "tests": ["gender"],
        "n_permutations": 99,
        "storage_options": keyed,
    }
    cube = biasdask.run(study, progress=False)
    assert bool(np.isfinite(cube["statistic"]).all())
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(**flat)
    assert fs.exists(f"{out_url}/zarr.json") and fs.exists(f"{out_url}/scores/en/zarr.json")
    assert biasdask.open_scores(Location(out_url, keyed), language="en").sizes["word"] == len(words)
    # and the same options work flat
    assert float(biasdask.open_results(Location(out_url, flat))["statistic"].values.ravel()[0]) == float(
        cube["statistic"].values.ravel()[0]
    )


def test_files_under_lists_what_fsspec_finds_and_follows_linked_folders(tmp_path):
    """A local tree lists as fsspec's find lists it, but a linked folder's files are listed too (zarr reads
    through the link; find lists the link itself as a file); other file systems are fsspec's find."""
    import os

    import fsspec

    from biasdask.io.fs import files_under

    (tmp_path / "store" / "vectors" / "c" / "0").mkdir(parents=True)
    (tmp_path / "store" / "vectors" / "c" / "0" / "0").write_bytes(b"x")
    (tmp_path / "store" / "zarr.json").write_text("{}")
    (tmp_path / "store" / "empty").mkdir()
    local = fsspec.filesystem("file")
    root = local._strip_protocol(str(tmp_path / "store"))
    assert sorted(files_under(local, root)) == sorted(local.find(root)) and len(local.find(root)) == 2
    (tmp_path / "elsewhere" / "c").mkdir(parents=True)
    (tmp_path / "elsewhere" / "c" / "1").write_bytes(b"y")
    os.symlink(tmp_path / "elsewhere", tmp_path / "store" / "norm")
    found = [path for path in local.find(root) if path != f"{root}/norm"]  # find lists the link as a file
    assert sorted(files_under(local, root)) == sorted([*found, f"{root}/norm/c/1"])
    memory = fsspec.filesystem("memory")
    memory.pipe({"/tree/a/b": b"1", "/tree/c": b"2"})
    assert sorted(files_under(memory, "/tree")) == sorted(memory.find("/tree"))
