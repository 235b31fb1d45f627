"""Two ingests into one destination: one wins, the other fails clearly; never a mixed store."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from biasdask import Location
from biasdask.engine.ingest import ingest
from biasdask.errors import StoreConflictError
from biasdask.io.store import open_embeddings


def _source(path, language_tag: str, n: int, dim: int, value: float) -> str:
    lines = [f"{n} {dim}\n"] + [f"{language_tag}{i} " + " ".join([str(value)] * dim) + "\n" for i in range(n)]
    path.write_text("".join(lines))
    return str(path)


def _race(sources, dest, storage_options=None):
    outcomes: list = [None, None]
    barrier = threading.Barrier(2)

    def one(i):
        language, src = sources[i]
        barrier.wait()
        try:
            ingest(
                Location(src, storage_options),
                Location(dest, storage_options),
                language=language,
                chunk_words=16,
                client=False,
                progress=False,
                overwrite=True,
            )  # two languages, so that a mixed store would show
            outcomes[i] = "ok"
        except StoreConflictError as exc:
            outcomes[i] = exc
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes[i] = repr(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return outcomes


def _check_consistent(emb, n_en=200, n_de=150):
    """Every word, every vector and the language attr come from one and the same source."""
    words = [str(w) for w in emb.word.values]
    tag = words[0][:2]
    assert all(w.startswith(tag) for w in words)
    expected = {"en": ("en", 1.0, n_en), "de": ("de", 2.0, n_de)}[tag]
    assert emb.attrs["language"] == expected[0]
    assert len(words) == expected[2] == emb.attrs["n_words"]
    np.testing.assert_array_equal(emb.vectors.values, expected[1])


def test_two_ingests_into_one_local_destination(tmp_path):
    sources = [
        ("en", _source(tmp_path / "en.vec", "en", 200, 6, 1.0)),
        ("de", _source(tmp_path / "de.vec", "de", 150, 6, 2.0)),
    ]
    dest = str(tmp_path / "shared.zarr")
    lost = 0
    for race in range(25):
        if lost and race >= 5:  # they did race (usually at once); more rounds only cost time
            break
        outcomes = _race(sources, dest)
        assert all(o == "ok" or isinstance(o, StoreConflictError) for o in outcomes), outcomes
        assert "ok" in outcomes
        for o in outcomes:
            if isinstance(o, StoreConflictError):
                lost += 1
                assert "another writer holds its lock" in str(o) and "shared.zarr.lock" in str(o)
        _check_consistent(open_embeddings(dest))
    assert lost > 0  # the two did race
    assert sorted(p.name for p in tmp_path.iterdir()) == ["de.vec", "en.vec", "shared.zarr"]


@pytest.mark.slow
def test_two_ingests_into_one_s3_destination(tmp_path, s3_bucket):
    bucket, options = s3_bucket
    # fewer words than on disk (each chunk is a request to the server), still several chunks of 16
    sources = [
        ("en", _source(tmp_path / "en.vec", "en", 72, 6, 1.0)),
        ("de", _source(tmp_path / "de.vec", "de", 56, 6, 2.0)),
    ]
    dest = f"s3://{bucket}/emb/shared.zarr"
    for _ in range(4):
        outcomes = _race(sources, dest, options)
        assert all(o == "ok" or isinstance(o, StoreConflictError) for o in outcomes), outcomes
        assert "ok" in outcomes
        _check_consistent(open_embeddings(Location(dest, options)), 72, 56)


def test_the_lock_of_a_remote_destination_is_exclusive(s3_bucket):
    from biasdask.io.swap import acquire_lock

    bucket, options = s3_bucket
    lock = acquire_lock(Location(f"s3://{bucket}/x.zarr", options))
    with pytest.raises(StoreConflictError, match=r"x\.zarr\.lock .*delete that lock"):
        acquire_lock(Location(f"s3://{bucket}/x.zarr", options))
    lock.release()
    acquire_lock(Location(f"s3://{bucket}/x.zarr", options)).release()


def test_a_retried_task_of_a_run_takes_over_the_lock_its_killed_attempt_left(s3_bucket):
    """On object storage a killed worker leaves its ingest's lock object: the retry of the same run's
    task takes it over; anyone else still finds it taken."""
    from biasdask.io.swap import acquire_lock

    bucket, options = s3_bucket
    where = Location(f"s3://{bucket}/en.zarr", options)
    acquire_lock(where, owner="biasdask run 1")  # never released: its process was killed
    with pytest.raises(StoreConflictError, match="delete that lock"):
        acquire_lock(where, owner="biasdask run 2")
    with pytest.raises(StoreConflictError):
        acquire_lock(where)
    acquire_lock(where, owner="biasdask run 1").release()
    acquire_lock(where).release()
