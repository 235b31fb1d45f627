import numpy as np
import pytest

from biasdask.stats.association import (
    associate,
    association,
    association_axes,
    attribute_direction,
    pair_associations,
    unit_rows,
)
from biasdask.stats.weights import frequency_weights, harmonic_number, zipf_weights


def _cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_association_equals_mean_cosine_difference():
    rng = np.random.default_rng(0)
    words = rng.standard_normal((50, 20)).astype(np.float32)
    a = rng.standard_normal((3, 20))
    b = rng.standard_normal((2, 20))
    u = association(words, np.linalg.norm(words, axis=1), attribute_direction(a, b))
    oracle = [np.mean([_cos(w, x) for x in a]) - np.mean([_cos(w, y) for y in b]) for w in words.astype(np.float64)]
    np.testing.assert_allclose(u, oracle, atol=1e-6)


def test_zero_vectors_give_nan():
    words = np.zeros((2, 3), np.float32)
    words[1] = [1, 0, 0]
    u = association(words, np.linalg.norm(words, axis=1), attribute_direction([[1, 0, 0]], [[0, 1, 0]]))
    assert np.isnan(u[0]) and u[1] == pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["cosine", "semaxis", "ripa", "euclidean"])
@pytest.mark.parametrize("width", [7, 300])
def test_pair_associations_are_each_pairs_association_bit_for_bit(kind, width):
    """One pass over the words for every pair gives each pair's :func:`associate`, to the bit."""
    rng = np.random.default_rng(width)
    words = rng.standard_normal((300, width)).astype(np.float32)
    words[5] = 0.0
    norms = np.linalg.norm(words.astype(np.float64), axis=1)
    for k in (1, 3, 4, 5, 10):
        axes = np.stack(
            [association_axes(kind, rng.standard_normal((1, width)), rng.standard_normal((1, width))) for _ in range(k)]
        )
        got = pair_associations(kind, words, norms, axes)
        expected = np.stack([associate(kind, words, norms, a).astype(np.float64) for a in axes], axis=1)
        assert got.dtype == np.float64 and got.tobytes() == expected.tobytes()
        assert np.isnan(got[5]).all()  # a zero vector has no association


def test_unit_rows_is_the_one_normalisation_and_refuses_zero_vectors():
    from biasdask.stats import directions, setmetrics

    v = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    np.testing.assert_allclose(unit_rows(v), [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], rtol=0, atol=1e-15)
    assert directions.unit_rows is unit_rows and setmetrics.unit_rows is unit_rows
    for bad in ([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[np.inf, 0.0, 0.0]]):
        with pytest.raises(ValueError, match="1 vector"):
            unit_rows(bad)
    # an attribute set holding a zero vector is refused, not averaged in as the origin
    with pytest.raises(ValueError, match="zero"):
        attribute_direction([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])


def test_harmonic_number_against_exact_fractions():
    from fractions import Fraction

    exact = sum(Fraction(1, k) for k in range(1, 200))
    assert harmonic_number(199) == pytest.approx(float(exact), rel=1e-15)
    # asymptotic expansion for large N
    n = 2_000_000
    approx = np.log(n) + np.euler_gamma + 1 / (2 * n) - 1 / (12 * n**2)
    assert harmonic_number(n) == pytest.approx(approx, rel=1e-13)


def test_zipf_weights_sum_to_one_and_follow_rank():
    w = zipf_weights(np.arange(1, 1001), 1000)
    assert w.sum() == pytest.approx(1.0, rel=1e-12)
    assert w[0] / w[9] == pytest.approx(10.0)
    with pytest.raises(ValueError):
        zipf_weights([0, 1], 5)


def test_frequency_weights_renormalise_and_zero_missing():
    w = frequency_weights([0.2, np.nan, 0.6, 0.0])
    np.testing.assert_allclose(w, [0.25, 0, 0.75, 0])
