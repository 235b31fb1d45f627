import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

from biasdask import Resampling, Vocabulary
from biasdask.engine.scores import positions, scores
from biasdask.errors import BiasdaskError, MissingWordsError
from tests.stores import read_text_rows, unit


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
    out = scores(emb, ["male"], ["female"], methods=("zipf",), vocabulary=Vocabulary(max_words=100))
    assert out.sizes["word"] == 100 and out.attrs["n_words"] == 100
    h = np.sum(1.0 / np.arange(1, 101))
    ref = _reference_u(vec[:100], [2], [4])
    np.testing.assert_allclose(out["t"].values[0, :7], (ref / np.arange(1, 101) / h)[:7], rtol=1e-5)


def test_exclusions():
    emb, _ = _embedding()
    out = scores(
        emb, ["male"], ["female"], vocabulary=Vocabulary(exclude_attributes=True, exclude_words=["the", "nope"])
    )
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
    with pytest.raises(BiasdaskError, match="wordfreq has no observed-frequency list for language 'yo'"):
        scores(emb, ["male"], ["female"], methods=("frequency",))


def test_frequency_for_a_vocabulary_without_observed_words_is_one_clear_error():
    # wordfreq has a Japanese list, but no word used is in it: its six real words are excluded here
    emb, _ = _embedding(language="ja")
    with pytest.raises(
        BiasdaskError, match="none of the words used is in wordfreq's observed-frequency list for language 'ja'"
    ):
        scores(
            emb,
            ["male", "man"],
            ["female", "woman"],
            methods=("frequency",),
            vocabulary=Vocabulary(exclude_attributes=True, exclude_words=["the", "of"]),
        )
    import biasdask

    with pytest.raises(BiasdaskError, match="^method 'frequency': none of the words used"):
        biasdask.full_vocabulary_test(
            emb,
            ["male", "man"],
            ["female", "woman"],
            method="frequency",
            resampling=Resampling(n_permutations=9),
            vocabulary=Vocabulary(exclude_attributes=True, exclude_words=["the", "of"]),
        )


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


# ---------------------------------------------------------------------------------------------
# Attribute sets: zero vectors, lookup beyond max_words, IAT terms; exclusions; shared vectors


def _with_rows(vec, words):
    n, d = vec.shape
    return xr.Dataset(
        {
            "vectors": (("word", "dim"), da.from_array(vec, chunks=(64, d))),
            "norm": (
                ("word",),
                da.from_array(np.linalg.norm(vec.astype(np.float64), axis=1).astype(np.float32), chunks=64),
            ),
        },
        coords={"word": np.array(words, dtype=object), "rank": ("word", np.arange(1, n + 1))},
        attrs={"language": "en"},
    )


def test_zero_vector_attribute_word_is_skipped_and_counted():
    """b = [female, woman, zeroed]: the zero vector must not enter the mean as the origin."""
    emb, vec = _embedding()
    words = list(emb["word"].values)
    words[7] = "her"  # row 7 is the zero vector
    emb = emb.assign_coords(word=np.array(words, dtype=object))
    out = scores(emb, ["male"], ["female", "woman", "her"], methods=("uniform",))
    assert out.attrs["n_b"] == 2 and out.attrs["zero_b"] == ["her"] and out.attrs["missing_b"] == []
    ref = _reference_u(vec, [2], [4, 5])
    keep = np.arange(len(ref)) != 7
    np.testing.assert_allclose(out["u"].values[keep], ref[keep], atol=1e-6)


def test_attribute_set_of_zero_vectors_only_fails_naming_them():
    emb, _ = _embedding()
    words = list(emb["word"].values)
    words[7] = "her"
    emb = emb.assign_coords(word=np.array(words, dtype=object))
    with pytest.raises(MissingWordsError, match=r"set B.*zero vectors: \['her'\]"):
        scores(emb, ["male"], ["her"])
    with pytest.raises(MissingWordsError, match=r"absent: \['nope'\]; zero vectors: \['her'\]"):
        scores(emb, ["male"], ["nope", "her"])


def test_attribute_words_are_looked_up_beyond_max_words():
    """max_words truncates the targets only: an attribute word at rank 500 still counts."""
    emb, vec = _embedding()
    words = list(emb["word"].values)
    words[2], words[500] = "w2", "male"
    emb = emb.assign_coords(word=np.array(words, dtype=object))
    out = scores(emb, ["male"], ["female"], methods=("uniform",), vocabulary=Vocabulary(max_words=100))
    assert out.sizes["word"] == 100 and out.attrs["n_a"] == 1 and out.attrs["missing_a"] == []
    ref = _reference_u(vec, [500], [4])[:100]
    keep = np.arange(100) != 7
    np.testing.assert_allclose(out["u"].values[keep], ref[keep], atol=1e-6)


def test_frequency_weights_sum_to_one_over_the_words_tested():
    """Excluded words (here 'the', the most frequent) and zero vectors take no share of the weight."""
    import wordfreq

    emb, vec = _embedding()
    out = scores(
        emb,
        ["male"],
        ["female"],
        methods=("frequency",),
        vocabulary=Vocabulary(exclude_attributes=True, exclude_words=["the"]),
    )
    u, t = out["u"].values, out["t"].values[0]
    tested = np.isfinite(u)
    table = wordfreq.get_frequency_dict("en")
    f = np.array([table.get(w, 0.0) if ok else 0.0 for w, ok in zip(emb["word"].values, tested)])
    z = f / f.sum()  # plain numpy oracle over the tested words
    assert z[tested].sum() == pytest.approx(1.0)
    ref = _reference_u(vec, [2], [4])
    np.testing.assert_allclose(t[tested], (z * ref)[tested], rtol=1e-5, atol=1e-12)
    assert np.isnan(t[[0, 2, 4, 7]]).all()


def test_exclude_words_gender_specific():
    from biasdask.lexicon import bolukbasi

    emb, _ = _embedding()
    words = list(emb["word"].values)
    words[10:14] = ["he", "she", "mother", "table"]
    emb = emb.assign_coords(word=np.array(words, dtype=object))
    out = scores(
        emb, ["male"], ["female"], methods=("uniform",), vocabulary=Vocabulary(exclude_words="gender_specific")
    )
    listed = set(bolukbasi().gender_specific_full)
    expected = [i for i, w in enumerate(words) if w in listed]
    assert {"he", "she", "mother", "man", "woman"} <= {words[i] for i in expected} and "table" not in listed
    assert out.attrs["n_excluded"] == len(expected)
    u = out["u"].values
    assert np.isnan(u[expected]).all() and np.isfinite(u[13])
    with pytest.raises(BiasdaskError, match="unknown word list"):
        scores(emb, ["male"], ["female"], vocabulary=Vocabulary(exclude_words="gender_neutral"))


def test_iat_attribute_terms_on_real_french_vectors(shared_data):
    """attributes: iat on fastText cc French: u against a numpy re-implementation of Lewis & Lupyan's
    term vectors (mean over translations of the mean raw token vector)."""
    from biasdask.lexicon import iat_attribute_terms

    words, vec = read_text_rows(shared_data / "iat" / "cc" / "fr.vec")
    emb = _with_rows(vec, words)
    a, b = iat_attribute_terms("cc", "fr")
    out = scores(emb, a, b, methods=("uniform",))
    table = {w: vec[i].astype(np.float64) for i, w in enumerate(words)}

    def term_vector(term):
        means = [
            np.mean([table[t] for t in tr if t in table], axis=0)
            for tr in term.translations
            if any(t in table for t in tr)
        ]
        return np.mean(means, axis=0) if means else None

    av = [v for v in map(term_vector, a) if v is not None]
    bv = [v for v in map(term_vector, b) if v is not None]
    assert out.attrs["n_a"] == len(av) and out.attrs["n_b"] == len(bv) and len(av) >= 6
    cos = lambda w, s: np.mean([w @ x / np.linalg.norm(w) / np.linalg.norm(x) for x in s])  # noqa: E731
    ref = np.array([cos(table[w], av) - cos(table[w], bv) for w in words])
    np.testing.assert_allclose(out["u"].values, ref, atol=1e-6)
    # 'femelle' alone as B: the set the reviewer asks to drop, against the IAT's eight
    assert any(t.label == "female" and ("femelle", "la") in t.translations for t in b)


def test_dedupe_vectors_scores_each_distinct_vector_once():
    emb, vec = _embedding()
    vec = vec.copy()
    vec[[20, 30, 31]] = vec[10]  # spaCy-style: later words share row 10's vector
    vec[40] = vec[3]
    vec[50] = -0.0  # a second zero vector: counted as zero, not as a duplicate
    emb = _with_rows(vec, list(emb["word"].values))
    plain = scores(emb, ["male"], ["female"], methods=("uniform",))
    out = scores(emb, ["male"], ["female"], methods=("uniform",), vocabulary=Vocabulary(dedupe_vectors=True))
    seen, first = set(), []
    for row in vec:  # brute force on the bytes
        key = row.tobytes()
        first.append(bool(np.any(row)) and key not in seen)
        seen.add(key)
    first = np.array(first)
    assert out.attrs["n_duplicate_vectors"] == 4 and plain.attrs["n_duplicate_vectors"] == 0
    np.testing.assert_array_equal(np.isfinite(out["u"].values), first)
    np.testing.assert_array_equal(out["u"].values[first], plain["u"].values[first])


def test_row_hashes_against_the_bytes():
    from biasdask.io.parse import row_hashes

    rng = np.random.default_rng(3)
    v = rng.standard_normal((200, 7)).astype(np.float32)
    v[5] = v[9]
    v[11] = 0.0
    v[12] = -0.0
    v[13] = v[9]
    v[13, 6] = np.nextafter(v[13, 6], np.float32(10))  # one ulp away: a different vector
    h = row_hashes(v)
    assert h[11] == h[12] == 0 and np.count_nonzero(h == 0) == 2
    groups = {}
    for i, row in enumerate(v):
        if np.any(row):
            groups.setdefault(row.tobytes(), set()).add(int(h[i]))
    assert all(len(g) == 1 for g in groups.values())
    assert len({next(iter(g)) for g in groups.values()}) == len(groups)


def test_attribute_rules_on_real_glove_vectors(shared_data):
    """GloVe 840B (182 words): 'her' stored as a zero vector, the male terms beyond max_words, 'the'
    style exclusions and frequency weights, all against a plain numpy oracle."""
    import wordfreq

    words, vec = read_text_rows(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt", header=False)
    vec[words.index("her")] = 0
    emb = _with_rows(vec, words)
    male = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
    female = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]
    cut = words.index("female")  # every attribute word lies beyond the targets kept
    out = scores(
        emb,
        male,
        female,
        methods=("uniform", "frequency"),
        vocabulary=Vocabulary(max_words=cut, exclude_words=["health", "love"]),
    )
    assert out.attrs["zero_b"] == ["her"] and out.attrs["n_a"] == 8 and out.attrs["n_b"] == 7
    v = vec.astype(np.float64)
    unit = v / np.where(np.linalg.norm(v, axis=1, keepdims=True) > 0, np.linalg.norm(v, axis=1, keepdims=True), 1)
    rows = {w: unit[i] for i, w in enumerate(words)}
    direction = np.mean([rows[w] for w in male], 0) - np.mean([rows[w] for w in female if w != "her"], 0)
    ref = unit[:cut] @ direction
    tested = np.array([w not in ("health", "love") for w in words[:cut]])
    u = out["u"].values
    np.testing.assert_allclose(u[tested], ref[tested], atol=1e-6)
    assert np.isnan(u[~tested]).all()
    f = np.array([wordfreq.get_frequency_dict("en").get(w, 0.0) for w in words[:cut]]) * tested
    np.testing.assert_allclose(out["t"].values[1][tested], (f / f.sum() * ref)[tested], rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("max_words", [None, 300])
def test_u_read_from_stored_chunks_is_bit_identical_in_every_encoding(tmp_path, max_words):
    """u over a store (one task per stored chunk, scaled integers decoded block by block) equals u over
    the same vectors in memory, bit for bit, for int16, int32 and float32 stores; a zero vector is NaN."""
    from biasdask.io import store

    rng = np.random.default_rng(5)
    k = np.rint(rng.normal(0, 0.3, (700, 12)) * 10000)
    words = np.array(["male", "man", "female", "woman"] + [f"w{i}" for i in range(4, 700)], dtype=object)
    for encoding, scale in [("int16", 1), ("int32", 10), ("float32", 1)]:
        vec = (k * scale / 10000).astype(np.float32)  # int32: values beyond int16's range
        vec[7] = 0
        vec[9, 3] = np.float32(-0.0)
        norms = np.sqrt(np.square(vec, dtype=np.float64).sum(axis=1)).astype(np.float32)
        memory = xr.Dataset(
            {"vectors": (("word", "dim"), vec), "norm": (("word",), norms)},
            coords={"word": words, "rank": ("word", np.arange(1, 701))},
            attrs={"language": "en"},
        )
        expected = scores(
            memory,
            ["male", "man"],
            ["female", "woman"],
            methods=["uniform"],
            vocabulary=Vocabulary(max_words=max_words),
        )["u"].values
        url = str(tmp_path / f"{encoding}.zarr")
        store.prepare_store(
            url,
            language="en",
            source="s",
            format="vec",
            dim=12,
            chunk_words=256,
            n_words=700,
            vector_encoding=encoding,
        )
        for start in range(0, 700, 256):
            rows = slice(start, start + 256)
            store.write_block(url, start, words[rows], vec[rows], norms[rows])
        store.finish_store(url, {"n_words": 700})
        emb = store.open_embeddings(url)
        assert store.stored_vectors(emb["vectors"].data) is not None  # the stored-chunk path is taken
        # a task per stored chunk, or (by default) the store's small chunks in one task
        for task_bytes, chunks in ((1, (256, 44) if max_words else (256, 256, 188)), ("128MiB", (max_words or 700,))):
            with dask.config.set({"biasdask.scores-task-bytes": task_bytes}):
                u = scores(
                    emb,
                    ["male", "man"],
                    ["female", "woman"],
                    methods=["uniform"],
                    vocabulary=Vocabulary(max_words=max_words),
                )["u"]
            assert u.chunks == (chunks,)
            assert u.values.tobytes() == expected.tobytes() and np.isnan(u.values[7])


@pytest.mark.parametrize("exclude", [(), ("w10", "w300")])
def test_stored_scores_are_one_task_per_chunk_and_match_a_numpy_oracle(tmp_path, exclude):
    """Over a store, u and every t row of a chunk come from ONE task (one stored chunk a task here; plus
    one for the exclusion mask's block when words are excluded); the rows equal a plain numpy computation from the stored float32
    vectors: t_zipf = float32((1/k)/H_N * u) with ranks 1..N, NaN where excluded or zero."""
    from biasdask.engine.scores import attributes_graph, scores_graph
    from biasdask.io import store

    rng = np.random.default_rng(8)
    n, d = 600, 10
    vec = (np.rint(rng.normal(0, 0.3, (n, d)) * 10000) / 10000).astype(np.float32)
    vec[5] = 0
    words = np.array(["male", "man", "female", "woman"] + [f"w{i}" for i in range(4, n)], dtype=object)
    norms = np.sqrt(np.square(vec, dtype=np.float64).sum(axis=1)).astype(np.float32)
    url = str(tmp_path / "s.zarr")
    store.prepare_store(
        url, language="en", source="s", format="vec", dim=d, chunk_words=200, n_words=n, vector_encoding="int16"
    )
    for start in range(0, n, 200):
        store.write_block(url, start, words[start : start + 200], vec[start : start + 200], norms[start : start + 200])
    store.finish_store(url, {"n_words": n, "n_zero_vectors": 1})
    emb = store.open_embeddings(url)
    a, b = ["male", "man"], ["female", "woman"]
    (attributes,) = dask.compute(attributes_graph(emb, a, b, "cosine"), scheduler="sync")
    with dask.config.set({"biasdask.scores-task-bytes": 1}):
        sc, ut, meta, _ = scores_graph(
            emb,
            a,
            b,
            methods=["uniform", "zipf"],
            attributes=attributes,
            vocabulary=Vocabulary(exclude_words=list(exclude)),
        )
    assert len(ut.__dask_graph__()) == 3 * (2 if exclude else 1)
    got, found = dask.compute(ut, meta, scheduler="sync")

    v = vec.astype(np.float64)
    direction = unit(v[:2]).mean(0) - unit(v[2:4]).mean(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = ((v @ direction) / norms).astype(np.float32)
    u[[int(w[1:]) for w in exclude]] = np.nan
    h = np.sum(1.0 / np.arange(n, 0, -1, dtype=np.float64))
    zipf = ((1.0 / np.arange(1, n + 1)) / h * u).astype(np.float32)
    np.testing.assert_allclose(got[0], u, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1].tobytes(), got[0].tobytes())
    np.testing.assert_allclose(got[2], zipf, rtol=3e-6, atol=1e-12)
    assert np.isnan(got[:, 5]).all() and all(np.isnan(got[:, int(w[1:])]).all() for w in exclude)
    assert found["n_zero_vectors"] == 1 and sc["rank"].values.tolist() == list(range(1, n + 1))
    # nothing per word held by the caller (a study's client keeps the graphs of many languages in flight)
    assert all(isinstance(sc[name].data, da.Array) for name in ("u", "t", "rank"))
    loaded = sc.compute(scheduler="sync")
    assert loaded["u"].values.tobytes() == got[0].tobytes() and loaded["t"].values.tobytes() == got[1:].tobytes()
