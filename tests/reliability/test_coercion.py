"""Nothing is silently coerced: a str is not a word list, lengths must match, formats are checked,
a BOM is not part of a word, and the NFC and NFD spellings of a word are one word."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from biasdask.engine.ingest import ingest
from biasdask.engine.scores import scores
from biasdask.errors import ConfigError
from biasdask.io.store import open_embeddings
from biasdask.stats.permutation import permutation_test_local as permutation_test
from biasdask.study.config import parse_config
from tests.stores import generated_store


def test_a_string_is_not_an_attribute_word_list(tmp_path):
    emb = open_embeddings(generated_store(tmp_path, chunk_words=200))
    with pytest.raises(TypeError, match="got the string 'male'"):
        scores(emb, "male", ["female"])
    with pytest.raises(TypeError, match="got the string 'female'"):
        scores(emb, ["male"], "female")


def test_a_string_is_not_an_attribute_word_list_in_a_study():
    with pytest.raises(ConfigError, match=r"languages\.en\.a: expected a list of words, got the string 'male'"):
        parse_config({"output": "r.zarr", "languages": {"en": {"store": "en.zarr", "a": "male", "b": ["female"]}}})


def test_effect_x_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="effect_x has 2 values but its group has 3 items"):
        permutation_test([1.0, 2.0, 3.0], [4.0, 5.0], effect_x=np.array([1.0, 2.0]), n_permutations=9)


def test_a_bom_is_not_part_of_the_first_word(tmp_path):
    src = tmp_path / "bom.vec"
    src.write_bytes(b"\xef\xbb\xbf2 2\nfirst 1 2\nsecond 3 4\n")
    emb = ingest(str(src), str(tmp_path / "bom.zarr"), language="en", client=False, progress=False)
    assert [str(w) for w in emb.word.values] == ["first", "second"]
    glove = tmp_path / "bom.txt"
    glove.write_bytes(b"\xef\xbb\xbffirst 1 2\nsecond 3 4\n")
    emb = ingest(str(glove), str(tmp_path / "bomg.zarr"), language="en", client=False, progress=False)
    assert [str(w) for w in emb.word.values] == ["first", "second"] and emb.attrs["dim"] == 2


def test_nfc_and_nfd_spellings_are_one_word_at_ingest_and_look_up(tmp_path):
    nfc, nfd = "mâle", unicodedata.normalize("NFD", "mâle")
    assert nfc != nfd
    src = tmp_path / "fr.vec"
    src.write_text(f"4 2\n{nfd} 1 0\nfemelle -1 0\n{nfc} 9 9\nautre 0 1\n", encoding="utf-8")
    emb = ingest(str(src), str(tmp_path / "fr.zarr"), language="fr", client=False, progress=False)
    assert [str(w) for w in emb.word.values] == [nfc, "femelle", "autre"]  # the first spelling's vector kept
    np.testing.assert_array_equal(emb.vectors.values[0], [1, 0])
    assert emb.attrs["n_duplicates"] == 1 and emb.attrs["n_nfc_merged"] == 1
    for spelling in (nfc, nfd):
        sc = scores(emb, [spelling], ["femelle"], methods=["uniform"])
        assert sc.attrs["n_a"] == 1
