"""``gs://`` end to end against an in-memory GCS emulator (``gcp-storage-emulator``) on 127.0.0.1.

A ``.vec`` is ingested from ``gs://`` into a ``gs://`` store, a full-vocabulary test and a one-language
study (results store on ``gs://`` too) run on it, and every number must equal the same run on local files.
The emulator's endpoint is given only in protocol-keyed storage options.
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading

import fsspec
import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask import Location, Resampling

gcsfs = pytest.importorskip("gcsfs", reason="gcsfs is not installed (pip install 'biasdask[gcs]')")

BUCKET = "bd-gcs"


class _EmulatorHTTPServer(http.server.HTTPServer):
    # One request at a time (the emulator's in-memory storage is not thread-safe), but a deep listen
    # queue: with the default of 5, gcsfs's concurrent connections overflow it and each dropped SYN
    # costs a one-second retransmission.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # gcsfs's info() asks for an object and for a listing at once and hangs up on the slower answer
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def gcs_options():
    """An in-memory emulator with one bucket on 127.0.0.1 (random port); yields ``{"gs": {...}}``."""
    from gcp_storage_emulator.handlers import buckets
    from gcp_storage_emulator.server import RequestHandler
    from gcp_storage_emulator.storage import Storage

    storage = Storage(use_memory_fs=True)
    buckets.create_bucket(BUCKET, storage)
    server = _EmulatorHTTPServer(("127.0.0.1", 0), functools.partial(RequestHandler, storage))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # The emulator speaks GCS's JSON API only. gcsfs's default class (GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT)
    # first asks a gRPC endpoint for each bucket's layout, which an emulator cannot answer (a minute of
    # retries per bucket): use the JSON-API file system for the protocol while the emulator runs.
    before = {p: fsspec.get_filesystem_class(p) for p in ("gs", "gcs")}
    for p in before:
        fsspec.register_implementation(p, gcsfs.core.GCSFileSystem, clobber=True)
    gcsfs.core.GCSFileSystem.clear_instance_cache()
    try:
        yield {
            "gs": {"endpoint_url": f"http://127.0.0.1:{server.server_address[1]}", "token": "anon", "project": "test"}
        }
    finally:
        gcsfs.core.GCSFileSystem.clear_instance_cache()
        for p, cls in before.items():
            fsspec.register_implementation(p, cls, clobber=True)
        server.shutdown()
        server.server_close()
        thread.join()


def _vec_text(vectors: np.ndarray, words: list[str]) -> str:
    rows = (w + " " + " ".join(f"{x:.4f}" for x in row) + "\n" for w, row in zip(words, vectors, strict=True))
    return f"{len(words)} {vectors.shape[1]}\n" + "".join(rows)


@pytest.mark.slow
def test_gs_ingest_store_test_and_results_match_local(gcs_options, small_model, tmp_path):
    vectors, words = small_model
    text = _vec_text(vectors, words)
    (tmp_path / "en.vec").write_text(text, encoding="utf-8")
    gcs = fsspec.filesystem("gs", **gcs_options["gs"])
    gcs.pipe(f"{BUCKET}/src/en.vec", text.encode("utf-8"))

    local = {"src": str(tmp_path / "en.vec"), "emb": str(tmp_path / "en.zarr"), "out": str(tmp_path / "study.zarr")}
    remote = {
        "src": f"gs://{BUCKET}/src/en.vec",
        "emb": f"gs://{BUCKET}/emb/en.zarr",
        "out": f"gs://{BUCKET}/results/study.zarr",
    }
    got = {}
    for name, where in (("local", local), ("gs", remote)):
        biasdask.ingest(
            Location(where["src"], gcs_options),
            Location(where["emb"], gcs_options),
            language="en",
            client=False,
            progress=False,
        )
        fvt = biasdask.full_vocabulary_test(
            Location(where["emb"], gcs_options),
            ["male", "he"],
            ["female", "she"],
            method="uniform",
            resampling=Resampling(n_permutations=199, seed=3),
        )
        study = {
            "output": where["out"],
            "languages": {"en": {"store": where["emb"]}},
            "tests": ["gender", "weat7"],
            "methods": ["uniform", "zipf"],
            "n_permutations": 99,
            "seed": 5,
            "storage_options": gcs_options,
        }
        biasdask.run(study, progress=False)
        got[name] = (
            fvt,
            biasdask.open_embeddings(Location(where["emb"], gcs_options)).load(),
            biasdask.open_results(Location(where["out"], gcs_options)).load(),
            biasdask.open_scores(Location(where["out"], gcs_options), language="en").load(),
        )

    # the gs:// stores really are in the bucket (read back with gcsfs directly, not through biasdask)
    assert gcs.exists(f"{BUCKET}/emb/en.zarr/zarr.json")
    assert gcs.exists(f"{BUCKET}/results/study.zarr/zarr.json")
    assert gcs.exists(f"{BUCKET}/results/study.zarr/scores/en/zarr.json")

    (fvt_l, emb_l, cube_l, scores_l), (fvt_g, emb_g, cube_g, scores_g) = got["local"], got["gs"]
    assert emb_g.sizes["word"] == len(words)
    np.testing.assert_array_equal(emb_g["vectors"].values, emb_l["vectors"].values)
    assert list(emb_g["word"].values) == list(emb_l["word"].values)
    for field in ("statistic", "p_value", "effect_size", "null_mean", "null_std"):
        assert getattr(fvt_g, field) == getattr(fvt_l, field), field
    assert np.isfinite(fvt_g.statistic) and fvt_g.p_value < 0.05  # the planted male/female axis is found
    assert bool(np.isfinite(cube_g["statistic"]).all())
    # the same cube, but for the file each store was ingested from
    assert set(cube_g["store_source"].values.ravel()) == {remote["src"]}
    assert set(cube_l["store_source"].values.ravel()) == {local["src"]}
    xr.testing.assert_identical(
        cube_g.drop_attrs().drop_vars("store_source"), cube_l.drop_attrs().drop_vars("store_source")
    )
    xr.testing.assert_identical(scores_g.drop_attrs(), scores_l.drop_attrs())
