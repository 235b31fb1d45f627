"""Orthogonal Procrustes (biasdask.stats.procrustes) against scipy, a planted rotation and gensim's EN/IT data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.stats import ortho_group

from biasdask.stats.procrustes import apply_map, procrustes_map


def test_recovers_a_known_rotation():
    rng = np.random.default_rng(0)
    source = rng.normal(size=(2000, 50))
    rotation = ortho_group.rvs(50, random_state=1)
    target = source @ rotation.T + rng.normal(scale=1e-3, size=source.shape)
    w = procrustes_map(source, target)
    np.testing.assert_allclose(w, rotation, atol=1e-3)
    np.testing.assert_allclose(w @ w.T, np.eye(50), atol=1e-12)
    np.testing.assert_allclose(apply_map(source, w), target, atol=1e-2)


def test_agrees_with_scipy_when_the_problem_has_one_solution():
    rng = np.random.default_rng(2)
    source, target = rng.normal(size=(300, 40)), rng.normal(size=(300, 40))
    np.testing.assert_allclose(procrustes_map(source, target), orthogonal_procrustes(source, target)[0].T, atol=1e-10)


def test_minimises_the_residual_over_orthogonal_maps():
    rng = np.random.default_rng(3)
    source, target = rng.normal(size=(100, 12)), rng.normal(size=(100, 12))
    best = np.linalg.norm(apply_map(source, procrustes_map(source, target)) - target)
    others = [np.linalg.norm(source @ ortho_group.rvs(12, random_state=s).T - target) for s in range(50)]
    assert best < min(others)


def test_spaces_of_different_dimension():
    rng = np.random.default_rng(4)
    w = procrustes_map(rng.normal(size=(200, 30)), rng.normal(size=(200, 40)))
    assert w.shape == (40, 30)
    np.testing.assert_allclose(w.T @ w, np.eye(30), atol=1e-12)
    assert apply_map(np.ones(30), w).shape == (40,)


def test_mismatched_pairs_are_refused():
    with pytest.raises(ValueError, match="same"):
        procrustes_map(np.ones((5, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="finite"):
        procrustes_map(np.full((2, 3), np.nan), np.ones((2, 3)))


def test_gensim_english_italian_number_words():
    """gensim's translation-matrix test data: 20 EN/IT word pairs (numbers one..ten, animals, fruit), 300 d.

    After alignment every English word's nearest Italian neighbour is its translation (20 / 20); without
    alignment only a few are. With 20 pairs in 300 dimensions this checks the fit, not generalisation.
    """
    gensim = pytest.importorskip("gensim")
    from gensim.models import KeyedVectors

    data = Path(gensim.__file__).parent / "test" / "test_data"
    files = [
        data / "EN.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
        data / "IT.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt",
        data / "OPUS_en_it_europarl_train_one2ten.txt",
    ]
    if not all(f.exists() for f in files):
        pytest.skip(f"gensim's EN/IT test data not found in {data}")
    en, it = (KeyedVectors.load_word2vec_format(str(f)) for f in files[:2])
    pairs = [line.split() for line in files[2].read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(pairs) == 20

    def unit(m: np.ndarray) -> np.ndarray:
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    xs = unit(np.array([en[e] for e, _ in pairs]))
    xt = unit(np.array([it[i] for _, i in pairs]))
    italian = unit(it.vectors)

    def accuracy(mapped: np.ndarray) -> float:
        nearest = np.argmax(mapped @ italian.T, axis=1)
        return float(np.mean([it.index_to_key[k] == i for k, (_, i) in zip(nearest, pairs)]))

    assert accuracy(apply_map(xs, procrustes_map(xs, xt))) == 1.0
    assert accuracy(xs) <= 0.2
