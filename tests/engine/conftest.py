"""Fixtures of the engine tests: real embeddings of ../shared/data ingested once per session."""

from __future__ import annotations

import pytest
from vec_files import read_text_vectors

from biasdask.engine.ingest import ingest

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"


@pytest.fixture(scope="session")
def glove_store(shared_data, tmp_path_factory):
    dest = tmp_path_factory.mktemp("glove") / "glove.zarr"
    return ingest(str(shared_data / GLOVE), str(dest), language="en", format="glove", client=False, progress=False)


@pytest.fixture(scope="session")
def glove_text(shared_data):
    return read_text_vectors(shared_data / GLOVE, header=False)


@pytest.fixture(scope="session")
def iat_store(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("iat")
    cache: dict[str, object] = {}

    def get(language: str):
        if language not in cache:
            cache[language] = ingest(
                str(shared_data / "iat" / "cc" / f"{language}.vec"),
                str(root / f"{language}.zarr"),
                language=language,
                format="vec",
                client=False,
                progress=False,
            )
        return cache[language]

    return get
