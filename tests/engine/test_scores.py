import dask.array as da
import numpy as np
import pytest
import xarray as xr

from biasdask.engine.scores import positions, scores
from biasdask.errors import BiasdaskError, MissingWordsError


def _embedding(n=1000, d=16, chunk=128, language="en", seed=1):
    rng = np.random.default_rng(seed)
    vec = rng.standard_normal((n, d)).astype(np.float32)
    vec[7] = 0  # a zero vector
    words = np.array([f"w{i}" for i in range(n)], dtype=object)
    words[:6] = ["the", "of", "male", "man", "female", "woman"]
    return xr.Dataset(
        {
            "vectors": (("word", "dim"), da.from_array(vec, chunks=(chunk, d))),
            "norm": (("word",), da.from_array(np.linalg.norm(vec, axis=1).astype(np.float32), chunks=chunk)),
        },
        coords={"word": words, "rank": ("word", np.arange(1, n + 1))},
        attrs={"language": language},
    ), vec


def _reference_u(vec, a_idx, b_idx):
    v = vec.astype(np.float64)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = unit(v) @ unit(v[a_idx + b_idx]).T
    return cos[:, : len(a_idx)].mean(1) - cos[:, len(a_idx) :].mean(1)


def test_scores_match_float64_reference():
    emb, vec = _embedding()
    out = scores(emb, ["male", "man"], ["female", "woman", "absent"], methods=("uniform", "zipf"))
    assert out.attrs["missing_b"] == ["absent"] and out.attrs["n_a"] == 2 and out.attrs["n_b"] == 2
    assert out.attrs["n_zero_vectors"] == 1
    u = out["u"].values
    ref = _reference_u(vec, [2, 3], [4, 5])
    assert np.isnan(u[7])
    keep = np.arange(len(u)) != 7
    np.testing.assert_allclose(u[keep], ref[keep], atol=1e-6)
    h = np.sum(1.0 / np.arange(1, 1001))
    zipf = out["t"].sel({"method": "zipf"}).values
    np.testing.assert_allclose(zipf[keep], (ref / np.arange(1, 1001) / h)[keep], atol=1e-9, rtol=1e-5)
    np.testing.assert_array_equal(out["t"].sel({"method": "uniform"}).values, u)


def test_scores_is_one_matvec_per_chunk():
    emb, _ = _embedding(n=1000, chunk=100)
    out = scores(emb, ["male"], ["female"], methods=("uniform",))
    assert out["u"].data.numblocks == (10,)


def test_max_words_truncates_and_sets_n():
    emb, vec = _embedding()
    out = scores(emb, ["male"], ["female"], methods=("zipf",), max_words=100)
    assert out.sizes["word"] == 100 and out.attrs["n_words"] == 100
    h = np.sum(1.0 / np.arange(1, 101))
    ref = _reference_u(vec[:100], [2], [4])
    np.testing.assert_allclose(out["t"].values[0, :7], (ref / np.arange(1, 101) / h)[:7], rtol=1e-5)


def test_exclusions():
    emb, _ = _embedding()
    out = scores(emb, ["male"], ["female"], exclude_attributes=True, exclude_words=["the", "nope"])
    u = out["u"].values
    assert np.isnan(u[[0, 2, 4]]).all() and np.isfinite(u[1])
    assert out.attrs["n_excluded"] == 3


def test_all_attribute_words_missing_is_named():
    emb, _ = _embedding()
    with pytest.raises(MissingWordsError, match="nope.*zilch"):
        scores(emb, ["nope", "zilch"], ["female"])


def test_unknown_method():
    emb, _ = _embedding()
    with pytest.raises(BiasdaskError, match="unknown method"):
        scores(emb, ["male"], ["female"], methods=("bogus",))


def test_frequency_weights_from_wordfreq():
    emb, vec = _embedding()
    out = scores(emb, ["male"], ["female"], methods=("frequency",))
    import wordfreq

    f = np.array([wordfreq.get_frequency_dict("en").get(w, 0.0) for w in emb["word"].values])
    z = f / f.sum()
    ref = _reference_u(vec, [2], [4])
    t = out["t"].values[0]
    assert z[0] > 0 and t[10] == 0  # 'the' has a frequency, synthetic words have none
    np.testing.assert_allclose(t[:6], (z * ref)[:6], rtol=1e-5)


def test_frequency_for_language_without_list():
    emb, _ = _embedding(language="yo")
    with pytest.raises(BiasdaskError, match="wordfreq has no frequency list for language 'yo'"):
        scores(emb, ["male"], ["female"], methods=("frequency",))


def test_positions_against_a_linear_search():
    emb, _ = _embedding(n=300)
    words = [str(w) for w in emb["word"].values]
    asked = ["female", "absent", "w299", "the", "female", "w7", ""]
    expected = [words.index(w) if w in words else -1 for w in asked]
    np.testing.assert_array_equal(positions(emb, asked), expected)
    # after truncation (max_words) rows count within the slice, and the words beyond it are absent
    np.testing.assert_array_equal(positions(emb.isel(word=slice(0, 100)), ["w299", "w99", "male"]), [-1, 99, 2])
    # without an index on word (e.g. a plain variable) the first occurrence wins
    plain = xr.Dataset({"word": ("word", np.array(["a", "b", "a", "c"], dtype=object))}).drop_indexes("word")
    np.testing.assert_array_equal(positions(plain, ["a", "c", "z"]), [0, 3, -1])
    assert positions(emb, []).shape == (0,)
