"""Procrustes alignment of stores and cross-lingual WEAT (biasdask.engine.alignment)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ortho_group

from biasdask import Resampling, WordSets
from biasdask.engine.alignment import align, fit_alignment
from biasdask.engine.ingest import ingest
from biasdask.engine.weat import cross_lingual_weat, weat
from biasdask.errors import InputFormatError, MissingWordsError
from biasdask.io.store import open_embeddings
from tests.stores import make_store, unit, words_of

# --- alignment and cross-lingual WEAT ------------------------------------------------------------


@pytest.fixture(scope="module")
def rotated_pair(tmp_path_factory):
    """A random 'English' store and an 'Italian' one holding the same vectors rotated, under other names."""
    root = tmp_path_factory.mktemp("align")
    rng = np.random.default_rng(8)
    n, d = 300, 12
    vectors = rng.normal(size=(n, d)).astype(np.float32)
    rotation = ortho_group.rvs(d, random_state=9)
    rotated = (vectors.astype(np.float64) @ rotation.T).astype(np.float32)
    en_words = [f"en{i}" for i in range(n)]
    it_words = [f"it{i}" for i in range(n)]
    en = open_embeddings(make_store(root, "en", en_words, vectors, language="en", chunk_words=64))
    it = open_embeddings(make_store(root, "it", it_words, rotated, language="it", chunk_words=64))
    return root, en, it, vectors, rotated, rotation


def test_align_recovers_a_known_rotation(rotated_pair, dask_client):
    root, en, it, vectors, rotated, rotation = rotated_pair
    pairs = [(f"en{i}", f"it{i}") for i in range(0, 300, 3)] + [("en0", "absent")]
    fitted = fit_alignment(en, it, pairs, client=dask_client)
    np.testing.assert_allclose(fitted.matrix, rotation, atol=1e-5)
    assert len(fitted.pairs) == 100 and fitted.missing == (("en0", "absent"),)

    aligned = align(en, it, pairs, str(root / "en_aligned.zarr"), client=dask_client, progress=False)
    assert aligned.attrs["aligned_to"] == "it" and aligned.attrs["alignment_pairs"] == 100
    assert aligned.attrs["biasdask_complete"] is True and aligned.attrs["language"] == "en"
    assert aligned["vectors"].chunks[0] == en["vectors"].chunks[0]
    np.testing.assert_allclose(aligned["vectors"].values, rotated, atol=1e-5)
    assert words_of(aligned) == words_of(en)
    np.testing.assert_array_equal(aligned["rank"].values, np.arange(1, 301))
    np.testing.assert_allclose(aligned["norm"].values, en["norm"].values, rtol=1e-6)


def test_cross_lingual_weat_equals_monolingual_on_the_rotated_copy(rotated_pair, dask_client):
    """Targets from aligned English, attributes from Italian == everything from Italian (the rotated copy)."""
    root, en, it, *_ = rotated_pair
    dest = root / "en_aligned_x.zarr"
    aligned = align(en, it, [(f"en{i}", f"it{i}") for i in range(300)], str(dest), client=dask_client, progress=False)
    x, y, a, b = range(0, 5), range(5, 10), range(10, 16), range(16, 22)
    en_words = lambda r: [f"en{i}" for i in r]  # noqa: E731
    it_words = lambda r: [f"it{i}" for i in r]  # noqa: E731
    cross = cross_lingual_weat(
        aligned,
        it,
        WordSets(en_words(x), en_words(y), it_words(a), it_words(b)),
        resampling=Resampling(n_permutations=1000),
        client=dask_client,
        progress=False,
    )
    mono = weat(
        it,
        WordSets(it_words(x), it_words(y), it_words(a), it_words(b)),
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=1000),
    )
    assert cross.language == "en->it" and cross.exact and mono.exact
    assert cross.statistic == pytest.approx(mono.statistic, abs=1e-5)
    assert cross.effect_size == pytest.approx(mono.effect_size, abs=1e-4)
    assert cross.p_value == mono.p_value
    # without alignment the attribute words mean nothing to the English targets
    unaligned = weat(
        en,
        WordSets(en_words(x), en_words(y), it_words(a), it_words(b)),
        attributes_from=it,
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=1000),
    )
    assert unaligned.statistic != pytest.approx(mono.statistic, abs=1e-3)


def test_align_gensim_english_italian_from_a_dictionary_file(tmp_path, dask_client):
    """gensim's translation-matrix test data: after alignment each English number word's nearest
    Italian neighbour is its translation (20/20)."""
    gensim = pytest.importorskip("gensim")
    data = Path(gensim.__file__).parent / "test" / "test_data"
    files = [
        data / "EN.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
        data / "IT.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
        data / "OPUS_en_it_europarl_train_one2ten.txt",
    ]
    if not all(f.exists() for f in files):
        pytest.skip(f"gensim's EN/IT test data not found in {data}")
    en = ingest(
        str(files[0]), str(tmp_path / "en.zarr"), language="en", input_format="vec", client=False, progress=False
    )
    it = ingest(
        str(files[1]), str(tmp_path / "it.zarr"), language="it", input_format="vec", client=False, progress=False
    )
    aligned = align(en, it, str(files[2]), str(tmp_path / "en_it.zarr"), client=dask_client, progress=False)
    pairs = [line.split(" ") for line in files[2].read_text(encoding="utf-8").split("\n") if line.strip()]
    it_words = words_of(it)
    it_unit = unit(it["vectors"].values.astype(np.float64))

    def accuracy(store) -> float:
        words = words_of(store)
        v = unit(store["vectors"].values.astype(np.float64))
        nearest = np.argmax(v[[words.index(e) for e, _ in pairs]] @ it_unit.T, axis=1)
        return float(np.mean([it_words[k] == i for k, (_, i) in zip(nearest, pairs)]))

    assert aligned.attrs["alignment_pairs"] == 20
    assert accuracy(aligned) == 1.0 and accuracy(en) <= 0.2


def test_dictionary_file_errors_name_the_line(rotated_pair, tmp_path):
    _, en, it, *_ = rotated_pair
    bad = tmp_path / "dict.txt"
    bad.write_text("en1\tit1\nen2 it2 extra\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"dict\.txt:2"):
        fit_alignment(en, it, str(bad), client=False)
    with pytest.raises(MissingWordsError, match="no pair"):
        fit_alignment(en, it, [("nope", "nada")], client=False)
