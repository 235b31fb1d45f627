"""Set-level metrics (biasdask.stats.setmetrics) against sweater's published values and plain re-implementations.

The oracles below are written from the papers' formulas with loops, scipy.spatial.distance, statistics and
scipy.optimize, sharing no code with the module.
"""

from __future__ import annotations

import itertools
import math
import statistics
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.spatial.distance import cosine as cosine_distance

from biasdask.stats import setmetrics as sm

GLOVE = "embeddings/glove840B_weat1_weat7_wefat1.txt"
# sweater's README / tests/testthat/test-s3.R sets on its glove_math data (the GloVe 840B rows held here)
S1 = ["math", "algebra", "geometry", "calculus", "equations", "computation", "numbers", "addition"]
T1 = ["poetry", "art", "dance", "literature", "novel", "symphony", "drama", "sculpture"]
A1 = ["male", "man", "boy", "brother", "he", "him", "his", "son"]
B1 = ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]


@pytest.fixture(scope="module")
def glove(shared_data):
    out = {}
    for line in (shared_data / GLOVE).read_bytes().split(b"\n"):
        fields = line.split(b" ")
        if len(fields) > 1:
            out[fields[0].decode()] = np.array(fields[1:], dtype=np.float64)
    return out


def rows(glove, words):
    return np.array([glove[w] for w in words])


# --- oracles from the formulas --------------------------------------------------------------------


def cos(u, v):
    return 1.0 - cosine_distance(u, v)


def oracle_rnd(s, a, b):
    """Garg et al. 2018: Σ_w ||w - v_1|| - ||w - v_2||, v_i the group's mean vector."""
    v1, v2 = sum(a) / len(a), sum(b) / len(b)
    return sum(math.dist(w, v1) - math.dist(w, v2) for w in s)


def oracle_mac(targets, attributes):
    """Manzini et al. 2019: mean over targets t and attribute sets A_j of mean_a cosine distance."""
    scores = [
        statistics.fmean(cosine_distance(t, x) for x in attr) for tset in targets for t in tset for attr in attributes
    ]
    return statistics.fmean(scores)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def oracle_ect(s, a, b):
    """Dev & Phillips 2019: Spearman correlation of the cosines with the two mean vectors."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    ra, rb = ranks([cos(w, ma) for w in s]), ranks([cos(w, mb) for w in s])
    return statistics.correlation(ra, rb)


def oracle_nas(s, a, b):
    """Caliskan et al. 2017 (WEFAT), sweater's nas: per word, mean of (mean cos A - mean cos B) / sd over A ∪ B."""
    per_word = []
    for w in s:
        ca, cb = [cos(w, x) for x in a], [cos(w, x) for x in b]
        per_word.append((statistics.fmean(ca) - statistics.fmean(cb)) / statistics.stdev(ca + cb))
    return statistics.fmean(per_word), per_word


def oracle_rnsb(s, a, b):
    """Sweeney & Najafian 2019 with liblinear's L2 logistic regression (C = 1, bias term penalised).

    min_w 1/2 |w|^2 + Σ log(1 + exp(-y_i w·[x_i, 1])), solved by BFGS; p(s) = P(B | s); KL from uniform.
    """
    x = np.hstack([np.concatenate([a, b]), np.ones((len(a) + len(b), 1))])
    y = np.concatenate([-np.ones(len(a)), np.ones(len(b))])

    def loss(w):
        m = y * (x @ w)
        return 0.5 * w @ w + np.logaddexp(0, -m).sum(), w - x.T @ (y / (1 + np.exp(m)))

    w = minimize(
        loss,
        np.zeros(x.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000},
    ).x
    p = 1 / (1 + np.exp(-(np.hstack([s, np.ones((len(s), 1))]) @ w)))
    p = p / p.sum()
    return float(sum(pi * math.log(pi * len(p)) for pi in p))


# --- sweater's published numbers (tests/testthat/_snaps/s3.md, glove_math) --------------------------


def test_sweater_published_values_on_glove_math(glove):
    s, a, b = rows(glove, S1), rows(glove, A1), rows(glove, B1)
    assert sm.rnd(s, a, b) == pytest.approx(-1.147534, abs=5e-7)
    assert 1 - sm.mac([s], [a]) == pytest.approx(0.09579005, abs=5e-9)  # sweater's mac: mean cosine similarity
    assert sm.ect(s, a, b) == pytest.approx(0.9761905, abs=5e-8)
    assert sm.rnsb(s, a, b) == pytest.approx(0.01772161, abs=5e-9)


# --- the formulas on the real vectors -------------------------------------------------------------


@pytest.mark.parametrize("sets", [(S1, A1, B1), (S1 + T1, A1, B1), (T1, B1, A1[:5])])
def test_metrics_equal_plain_reimplementations(glove, sets):
    s, a, b = (rows(glove, ws) for ws in sets)
    assert sm.rnd(s, a, b) == pytest.approx(oracle_rnd(s, a, b), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(sm.rnd_terms(s, a, b).sum(), sm.rnd(s, a, b), rtol=1e-15)
    assert sm.ect(s, a, b) == pytest.approx(oracle_ect(s, a, b), rel=1e-12)
    mean, per_word = oracle_nas(s, a, b)
    np.testing.assert_allclose(sm.nas_scores(s, a, b), per_word, rtol=1e-11)
    assert sm.nas(s, a, b) == pytest.approx(mean, rel=1e-11)
    assert sm.mac([a, b], [s[:4], s[4:]]) == pytest.approx(oracle_mac([a, b], [s[:4], s[4:]]), rel=1e-12)
    # liblinear stops at tol 1e-4 (measured: the KL divergences agree to 3e-5 relative)
    assert sm.rnsb(s, a, b) == pytest.approx(oracle_rnsb(s, a, b), rel=2e-4)


@pytest.mark.parametrize("seed", range(4))
def test_rnsb_fit_is_liblinears_as_scikit_learn_runs_it(glove, seed):
    """The logistic regression is liblinear's trust-region Newton fit, step for step: P(B | s) equals
    scikit-learn's ``LogisticRegression(solver="liblinear")`` up to the rounding of its BLAS calls."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    s, a, b = rows(glove, S1), rows(glove, A1), rows(glove, B1)
    if seed:  # random sets of other sizes and a shifted class, beside the real one
        a, b, s = rng.normal(0.1, 1.0, (6 + seed, 30)), rng.normal(0.0, 1.0, (9 - seed, 30)), rng.normal(size=(11, 30))
    model = LogisticRegression(solver="liblinear", C=1.0, tol=1e-4, max_iter=10000, random_state=0)
    model.fit(np.concatenate([a, b]), [0] * len(a) + [1] * len(b))
    np.testing.assert_allclose(sm.rnsb_probabilities(s, a, b), model.predict_proba(s)[:, 1], rtol=1e-13)


def test_signs_and_conventions(glove):
    """RND > 0: S nearer B; NAS > 0: S leans to A; ECT is 1 for identical groups; swapping A, B flips RND, NAS."""
    s, a, b = rows(glove, S1 + T1), rows(glove, A1), rows(glove, B1)
    assert sm.rnd(s, b, a) == pytest.approx(-sm.rnd(s, a, b), rel=1e-12)
    assert sm.nas(s, b, a) == pytest.approx(-sm.nas(s, a, b), rel=1e-12)
    assert sm.ect(s, b, a) == pytest.approx(sm.ect(s, a, b), rel=1e-12)
    assert sm.ect(s, a, a) == pytest.approx(1.0)
    near_b = b.mean(axis=0, keepdims=True)
    assert sm.rnd(near_b, a, b) > 0 and sm.nas(a, a, b) > 0


# --- the relabelling null -------------------------------------------------------------------------


def test_exact_null_is_every_split(glove):
    s, a, b = rows(glove, S1), rows(glove, A1[:3]), rows(glove, B1[:3])
    pool = np.concatenate([a, b])
    expected = []
    for chosen in itertools.combinations(range(6), 3):
        rest = [i for i in range(6) if i not in chosen]
        expected.append(oracle_nas(s, pool[list(chosen)], pool[rest])[0])
    np.testing.assert_allclose(sm.exact_relabel_null("nas", s, a, b), expected, rtol=1e-11)
    assert sm.n_relabellings(3, 3) == 20
    assert sm.exact_relabel_null("rnd", s, a, b)[0] == sm.rnd(s, a, b)  # first split: the observed one


def _undefined_cases(glove):
    """Metric values that are NaN: ECT on one word, ECT on words sharing one vector, NAS of a word whose
    cosines with A ∪ B do not vary."""
    a, b = rows(glove, A1[:4]), rows(glove, B1[:4])
    one = rows(glove, S1[:1])
    shared = np.repeat(one, 3, axis=0)
    axis = np.zeros((1, 300))
    axis[0, 0] = 1.0
    a_orth, b_orth = np.zeros((4, 300)), np.zeros((4, 300))
    a_orth[:, 1], b_orth[:, 2] = [1, 2, 3, 4], [2, 3, 4, 5]  # every cosine of axis with them is 0
    return [("ect", one, a, b), ("ect", shared, a, b), ("nas", axis, a_orth, b_orth)]


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_an_undefined_metric_has_a_nan_p_value_not_the_smallest(glove, case, alternative):
    from biasdask.stats.permutation import normal_pvalue, permutation_pvalue

    metric, s, a, b = _undefined_cases(glove)[case]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's ConstantInputWarning for ECT on one vector
        value = getattr(sm, metric)(s, a, b)
        exact = sm.exact_relabel_null(metric, s, a, b)
        sampled = sm.relabel_null(metric, s, a, b, 5, 0, 30)
    assert math.isnan(value)
    # before: exact p = 0 and sampled p = 1/31 (NaN is never exceeded)
    assert math.isnan(
        permutation_pvalue(exact, value, alternative, float(exact.mean()), 1e-9, np.ones(exact.size, dtype=np.int64))
    )
    assert math.isnan(permutation_pvalue(sampled, value, alternative, float(sampled.mean()), 1e-9))
    assert all(
        math.isnan(v) for v in normal_pvalue(value, float(sampled.mean()), float(sampled.std(ddof=1)), alternative)
    )


def test_sampled_null_depends_only_on_seed_and_index(glove):
    s, a, b = rows(glove, S1), rows(glove, A1), rows(glove, B1)
    whole = sm.relabel_null("ect", s, a, b, 42, 0, 10)
    np.testing.assert_array_equal(
        whole, np.concatenate([sm.relabel_null("ect", s, a, b, 42, 0, 4), sm.relabel_null("ect", s, a, b, 42, 4, 10)])
    )
    # permutation 7, drawn by hand from SeedSequence(42, spawn_key=(7,))
    rng = np.random.default_rng(np.random.SeedSequence(42, spawn_key=(7,)))
    chosen = np.sort(rng.permutation(16)[:8])
    pool = np.concatenate([a, b])
    rest = np.setdiff1d(np.arange(16), chosen)
    assert whole[7] == pytest.approx(oracle_ect(s, pool[chosen], pool[rest]), rel=1e-12)
    assert not np.array_equal(whole, sm.relabel_null("ect", s, a, b, 43, 0, 10))
    with pytest.raises(ValueError, match="no relabelling null"):
        sm.relabel_null("mac", s, a, b, 1, 0, 2)
