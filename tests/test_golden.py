"""Every number a study writes is bit-identical to the stored golden values.

Two studies are run on Dask's threaded scheduler: one on the real fastText Common Crawl vectors of the
IAT words (Lewis & Lupyan 2020) in four languages, with every association and the classic and set-level
tests, and one on three generated languages of 3,000 words (the permutation kernel over a whole
vocabulary). Their cubes (every numeric variable of every cell, as exact hexadecimal floats), their
permutation nulls and their per-word scores (SHA-256 of the bytes) are compared with
``tests/golden/*.json``. A refactoring, a faster kernel or a new dependency version must leave them
unchanged; a deliberate change of results regenerates them with ``BIASDASK_REGENERATE_GOLDEN=1`` and
says why in its commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import biasdask
from biasdask.demo import write_language
from biasdask.engine.ingest import ingest
from biasdask.io import results as rs
from biasdask.lexicon import languages

GOLDEN = Path(__file__).parent / "golden"
IAT_LANGUAGES = ("en", "de", "es", "fr")
SYNTHETIC_LANGUAGES = ("en", "it", "tr")
# The cube variables whose values are results (not labels, notes or word lists).
NUMERIC = (
    "statistic",
    "effect_size",
    "p_value",
    "z_score",
    "p_value_normal",
    "null_mean",
    "null_std",
    "n_permutations",
    "exact",
    "n_x",
    "n_y",
    "n_a",
    "n_b",
)


def _exact(value) -> str | int | bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value).hex()


def _digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def _fingerprint(output: str) -> dict:
    cube = rs.open_results(output)
    cells: dict[str, dict] = {}
    nulls: dict[str, str] = {}
    for lang in cube["language"].values:
        for method in cube["method"].values:
            for test in cube["test"].values:
                key = f"{lang}/{method}/{test}"
                cell = cube.sel({"language": lang, "method": method, "test": test})
                cells[key] = {v: _exact(cell[v].values[()]) for v in NUMERIC}
                try:
                    nulls[key] = _digest(rs.read_null(output, str(lang), str(method), str(test)))
                except biasdask.errors.IncompleteStoreError:
                    pass
    scores = {}
    for lang in cube["language"].values:
        ds = rs.open_scores(output, language=str(lang)).load()
        scores[str(lang)] = {name: _digest(ds[name].values) for name in sorted(ds.data_vars)}
    return {"cells": cells, "nulls": nulls, "scores": scores}


def _check(name: str, got: dict) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("BIASDASK_REGENERATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert sorted(got["cells"]) == sorted(want["cells"])
    changed = [
        f"{key} {var}: {want['cells'][key][var]} -> {value}"
        for key, values in got["cells"].items()
        for var, value in values.items()
        if var in want["cells"][key] and want["cells"][key][var] != value
    ]
    assert not changed, "\n".join(changed[:20])
    assert got["nulls"] == want["nulls"]
    assert got["scores"] == want["scores"]


@pytest.mark.slow
def test_real_vectors_study_is_bit_identical_to_the_golden_values(tmp_path, shared_data):
    data = shared_data / "iat" / "cc"
    stores = {}
    for code in IAT_LANGUAGES:
        url = str(tmp_path / f"{code}.zarr")
        ingest(str(data / f"{code}.vec"), url, language=code, client=False, progress=False)
        stores[code] = url
    study = {
        "output": str(tmp_path / "real.zarr"),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform", "zipf"],
        "tests": ["gender", "context", "career_family", "rnd", "ect"],
        "associations": ["cosine", "ripa", "euclidean"],
        "n_permutations": 999,
        "seed": 20261124,
    }
    biasdask.run(study, progress=False)
    _check("iat_cc_study", _fingerprint(study["output"]))


@pytest.mark.slow
def test_synthetic_whole_vocabulary_study_is_bit_identical_to_the_golden_values(tmp_path):
    table = languages().set_index("code")
    stores = {}
    for i, code in enumerate(SYNTHETIC_LANGUAGES):
        src = tmp_path / f"{code}.bin"
        write_language(src, table.loc[code, "male"], table.loc[code, "female"], 0.1 * i, 3000, 20, seed=i)
        stores[code] = str(tmp_path / f"{code}.zarr")
        ingest(str(src), stores[code], language=code, client=False, progress=False)
    study = {
        "output": str(tmp_path / "synthetic.zarr"),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform", "zipf"],
        "tests": ["gender"],
        "n_permutations": 1999,
        "seed": 5,
    }
    biasdask.run(study, progress=False)
    _check("synthetic_study", _fingerprint(study["output"]))
