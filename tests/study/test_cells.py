"""Study cells (biasdask.study.cells): which tests apply, one test on one language, the cell's variables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasdask import Resampling
from biasdask.engine.weat import CoverageError, weat
from biasdask.errors import BiasdaskError
from biasdask.lexicon import weat_test, xweat_test
from biasdask.stats.weat import weat_scores, weat_statistic
from biasdask.study import cells
from biasdask.study.cells import cell_values, run_cell
from tests.stores import make_store

# --- study cells ---------------------------------------------------------------------------------


def test_tests_for_language():
    tests_for_language = cells.tests_for_language  # imported under this name pytest would collect it
    assert tests_for_language("en") == [f"weat{i}" for i in range(1, 11)] + ["career_family"]
    assert tests_for_language("de") == [f"xweat{i}" for i in range(1, 11)] + ["career_family"]
    assert tests_for_language("zu") == ["career_family"]  # Wikipedia translations only
    assert tests_for_language("zu", iat_model="cc") == []
    assert tests_for_language("xx") == []


def test_run_cell_weat7_matches_weat(glove_store, dask_client):
    res = run_cell(
        "weat7", glove_store, language="en", client=dask_client, resampling=Resampling(n_permutations=12870, seed=1)
    )
    t = weat_test(7)
    direct = weat(
        glove_store,
        t,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=12870),
    )
    assert res.test == "weat7" and res.p_value == direct.p_value and res.statistic == direct.statistic
    assert res.coverage["x"].name == "Math"
    cell = cell_values(res)
    assert cell["p_value"] == res.p_value and cell["n_a"] == 8 and cell["exact"] is True


def test_run_cell_xweat_on_a_synthetic_store(tmp_path, dask_client):
    sets = xweat_test("de", 7)
    words = list(dict.fromkeys(sets.x + sets.y + sets.a + sets.b))
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(len(words) + 20, 10)).astype(np.float32)
    store = make_store(
        tmp_path, "de", words + [f"filler{i}" for i in range(20)], vectors, language="de", chunk_words=16
    )
    res = run_cell(
        "xweat7", store, language="de", client=dask_client, resampling=Resampling(n_permutations=999, seed=2)
    )
    rows = dict(zip(words, vectors[: len(words)].astype(np.float64)))
    sx, sy = weat_scores(*(np.array([rows[w] for w in ws]) for ws in (sets.x, sets.y, sets.a, sets.b)))
    assert res.statistic == pytest.approx(weat_statistic(sx, sy), rel=1e-6)
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (len(sets.x), len(sets.y), len(sets.a), len(sets.b))
    # the same words missing from a smaller store: the cell is skipped with the words named
    small = make_store(tmp_path, "de_small", words[3:], vectors[3 : len(words)], language="de")
    with pytest.raises(CoverageError, match=words[0]):
        run_cell(
            "xweat7",
            small,
            language="de",
            client=dask_client,
            min_coverage=1.0,
            resampling=Resampling(n_permutations=99),
        )


def test_run_cell_career_family_and_refusals(shared_data, iat_store, glove_store, dask_client):
    published = pd.read_csv(shared_data / "iat/published_effect_sizes.csv").set_index("language_code")
    res = run_cell(
        "career_family",
        iat_store("ja"),
        language="ja",
        client=dask_client,
        resampling=Resampling(n_permutations=99, seed=4),
    )
    assert abs(res.effect_size - published.loc["ja", "lang_es_wiki_cc"]) < 1e-9
    with pytest.raises(BiasdaskError, match="does not apply"):
        run_cell("weat1", iat_store("ja"), language="ja", client=dask_client)
    with pytest.raises(BiasdaskError, match="unknown test"):
        run_cell("weat11", glove_store, language="en", client=dask_client)
    with pytest.raises(BiasdaskError, match="cosine"):
        run_cell("career_family", iat_store("ja"), language="ja", similarity="euclidean", client=dask_client)
