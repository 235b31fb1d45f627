"""Random-effects meta-analysis and meta-regression against published numbers and independent code.

Oracles:
- the BCG vaccine trials (Colditz et al. 1994; metafor's ``dat.bcg``), log risk ratios as metafor's
  ``escalc(measure="RR")``: metafor's README prints the REML fits (with Hartung-Knapp) of the pooled
  effect and of the meta-regression on absolute latitude, and its test suite checks the DL fit against
  Stata's ``metan`` and stores the fitted REML τ² to 15 digits;
- the teacher-expectancy studies (Raudenbush 1985, metafor's ``dat.raudenbush1985``), whose DL and REML
  fits with and without Knapp-Hartung are tabulated in Raudenbush 2009 (Table 16.3);
- statsmodels (``combine_effects`` for DL, PM and the HKSJ interval; ``WLS`` for the regression given
  τ²) and a REML likelihood maximised numerically with scipy, written here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from biasdask.stats.meta import meta_regression, random_effects

# dat.bcg: tpos, tneg, cpos, cneg, ablat (Colditz et al. 1994)
BCG = np.array(
    [
        [4, 119, 11, 128, 44],
        [6, 300, 29, 274, 55],
        [3, 228, 11, 209, 42],
        [62, 13536, 248, 12619, 52],
        [33, 5036, 47, 5761, 13],
        [180, 1361, 372, 1079, 44],
        [8, 2537, 10, 619, 19],
        [505, 87886, 499, 87892, 13],
        [29, 7470, 45, 7232, 27],
        [17, 1699, 65, 1600, 42],
        [186, 50448, 141, 27197, 18],
        [5, 2493, 3, 2338, 33],
        [27, 16886, 29, 17825, 33],
    ],
    dtype=np.float64,
)
# dat.raudenbush1985: yi, vi (standardised mean differences)
RAUDENBUSH = np.array(
    [
        [0.03, 0.0156],
        [0.12, 0.0216],
        [-0.14, 0.0279],
        [1.18, 0.1391],
        [0.26, 0.1362],
        [-0.06, 0.0106],
        [-0.02, 0.0106],
        [-0.32, 0.0484],
        [0.27, 0.0269],
        [0.80, 0.0630],
        [0.54, 0.0912],
        [0.18, 0.0497],
        [-0.02, 0.0835],
        [0.23, 0.0841],
        [-0.18, 0.0253],
        [-0.06, 0.0279],
        [0.30, 0.0193],
        [0.07, 0.0088],
        [-0.07, 0.0303],
    ]
)


def _bcg():
    """yi = log RR and vi as metafor's escalc(measure="RR"), and the latitude."""
    tpos, tneg, cpos, cneg, ablat = BCG.T
    yi = np.log(tpos / (tpos + tneg)) - np.log(cpos / (cpos + cneg))
    vi = 1 / tpos - 1 / (tpos + tneg) + 1 / cpos - 1 / (cpos + cneg)
    return yi, vi, ablat


def _r4(x):
    return np.round(np.asarray(x, dtype=np.float64), 4)


def test_bcg_escalc_matches_metafor():
    yi, vi, _ = _bcg()
    assert _r4(yi).tolist() == [
        -0.8893,
        -1.5854,
        -1.3481,
        -1.4416,
        -0.2175,
        -0.7861,
        -1.6209,
        0.0120,
        -0.4694,
        -1.3713,
        -0.3394,
        0.4459,
        -0.0173,
    ]
    assert _r4(vi).tolist() == [
        0.3256,
        0.1946,
        0.4154,
        0.0200,
        0.0512,
        0.0069,
        0.2230,
        0.0040,
        0.0564,
        0.0730,
        0.0124,
        0.5325,
        0.0714,
    ]


def test_bcg_dersimonian_laird_matches_metafor_and_stata_metan():
    yi, vi, _ = _bcg()
    res = random_effects(yi, vi, estimator="DL")
    assert _r4([res.estimate, res.ci_low, res.ci_high, res.statistic, res.tau2, res.q]).tolist() == [
        -0.7141,
        -1.0644,
        -0.3638,
        -3.9952,
        0.3088,
        152.2330,
    ]
    assert round(100 * res.i2, 4) == 92.1173
    assert round(res.se, 4) == 0.1787
    assert res.k == 13 and res.df == 12 and res.n_dropped == 0
    assert res.q_p_value == pytest.approx(stats.chi2.sf(152.2330080823733, 12), rel=1e-9)


def test_bcg_reml_is_metafors_fit_to_the_last_digit():
    yi, vi, _ = _bcg()
    res = random_effects(yi, vi, estimator="REML")
    # metafor's fitted value, stored in its test suite (tests/testthat/test_misc_influence.r)
    assert res.tau2 == pytest.approx(0.313243325980895, rel=1e-12)
    assert _r4([res.estimate, res.se, res.statistic, res.ci_low, res.ci_high]).tolist() == [
        -0.7145,
        0.1798,
        -3.9744,
        -1.0669,
        -0.3622,
    ]
    assert round(100 * res.i2, 2) == 92.22 and round(res.h2, 2) == 12.86


def test_bcg_reml_hartung_knapp_matches_metafor_readme():
    yi, vi, _ = _bcg()
    res = random_effects(yi, vi, estimator="REML", hartung_knapp=True)
    assert _r4(
        [res.tau2, res.q, res.estimate, res.se, res.statistic, res.p_value, res.ci_low, res.ci_high]
    ).tolist() == [0.3132, 152.2330, -0.7145, 0.1808, -3.9522, 0.0019, -1.1084, -0.3206]
    # metafor's predict() uses t(k - 1) under knha: 0.14 and 1.76 as risk ratios; ours uses t(k - 2)
    half = stats.t.ppf(0.975, 12) * math.sqrt(res.se**2 + res.tau2)
    assert np.round(np.exp([res.estimate - half, res.estimate + half]), 2).tolist() == [0.14, 1.76]
    half = stats.t.ppf(0.975, 11) * math.sqrt(res.se**2 + res.tau2)
    assert (res.pi_low, res.pi_high) == pytest.approx((res.estimate - half, res.estimate + half), rel=1e-12)


def _reml_tau2_by_optimiser(y, v, x):
    """Maximise the restricted log-likelihood over τ² ≥ 0 with a bounded scalar search."""

    def negll(t):
        w = 1 / (v + t)
        xtwx = x.T @ (x * w[:, None])
        beta = np.linalg.solve(xtwx, x.T @ (w * y))
        r = y - x @ beta
        return 0.5 * (np.sum(np.log(v + t)) + np.linalg.slogdet(xtwx)[1] + np.sum(w * r * r))

    opt = optimize.minimize_scalar(negll, bounds=(0.0, 10.0), method="bounded", options={"xatol": 1e-12})
    return opt.x


@pytest.mark.parametrize("with_moderator", [False, True])
def test_reml_agrees_with_a_numerically_maximised_likelihood(with_moderator):
    yi, vi, ablat = _bcg()
    x = np.column_stack([np.ones(13), ablat]) if with_moderator else np.ones((13, 1))
    expected = _reml_tau2_by_optimiser(yi, vi, x)
    got = (
        meta_regression(yi, vi, ablat, estimator="REML").tau2
        if with_moderator
        else random_effects(yi, vi, estimator="REML").tau2
    )
    assert got == pytest.approx(expected, abs=1e-5)  # metafor's convergence threshold


@pytest.mark.parametrize("method, sm_method", [("DL", "dl"), ("PM", "pm")])
@pytest.mark.parametrize("data", ["bcg", "raudenbush"])
def test_dl_and_pm_match_statsmodels(method, sm_method, data):
    from statsmodels.stats.meta_analysis import combine_effects

    yi, vi = _bcg()[:2] if data == "bcg" else RAUDENBUSH.T
    kw = dict(atol=1e-13, maxiter=1000) if sm_method == "pm" else {}
    ref = combine_effects(yi, vi, method_re=sm_method, **kw)
    for hk in (False, True):
        res = random_effects(yi, vi, estimator=method, hartung_knapp=hk)
        assert res.tau2 == pytest.approx(max(ref.tau2, 0.0), rel=1e-8, abs=1e-14)
        assert res.estimate == pytest.approx(ref.mean_effect_re, rel=1e-8)
        assert res.q == pytest.approx(ref.q, rel=1e-12)
        ci = ref.conf_int(use_t=hk)[3 if hk else 1]
        assert (res.ci_low, res.ci_high) == pytest.approx(tuple(ci), rel=1e-7)
        se = ref.sd_eff_w_re_hksj if hk else ref.sd_eff_w_re
        assert res.se == pytest.approx(se, rel=1e-7)
    if method == "DL":
        assert random_effects(yi, vi, estimator="DL").i2 == pytest.approx(max(0.0, ref.i2), rel=1e-12)


# Raudenbush 2009, Table 16.3: tau2, mu, se, z, ci.lb, ci.ub
RAUDENBUSH_TABLE = {
    ("REML", False): [0.0188, 0.0837, 0.0516, 1.6208, -0.0175, 0.1849],
    ("DL", False): [0.0259, 0.0893, 0.0558, 1.6009, -0.0200, 0.1987],
    ("REML", True): [0.0188, 0.0837, 0.0616, 1.3593, -0.0457, 0.2131],
    ("DL", True): [0.0259, 0.0893, 0.0636, 1.4050, -0.0442, 0.2229],
}


@pytest.mark.parametrize("method, hk", list(RAUDENBUSH_TABLE))
def test_raudenbush_2009_table(method, hk):
    yi, vi = RAUDENBUSH.T
    res = random_effects(yi, vi, estimator=method, hartung_knapp=hk)
    got = [res.tau2, res.estimate, res.se, res.statistic, res.ci_low, res.ci_high]
    assert _r4(got).tolist() == RAUDENBUSH_TABLE[(method, hk)]


def test_raudenbush_prediction_interval_ingredients():
    yi, vi = RAUDENBUSH.T
    res = random_effects(yi, vi, estimator="REML")
    # metafor's default predict() (normal quantile): -0.2036, 0.3711
    half = stats.norm.ppf(0.975) * math.sqrt(res.se**2 + res.tau2)
    assert _r4([res.estimate - half, res.estimate + half]).tolist() == [-0.2036, 0.3711]
    # ours: Higgins, Thompson & Spiegelhalter 2009, t with k - 2 = 17 degrees of freedom, wider
    half_t = stats.t.ppf(0.975, 17) * math.sqrt(res.se**2 + res.tau2)
    assert (res.pi_low, res.pi_high) == pytest.approx((res.estimate - half_t, res.estimate + half_t), rel=1e-12)
    assert res.pi_high - res.pi_low > 2 * half


def test_bcg_meta_regression_on_latitude_matches_metafor_readme():
    yi, vi, ablat = _bcg()
    res = meta_regression(yi, vi, {"ablat": ablat}, estimator="REML", hartung_knapp=True)
    assert res.names == ("intercept", "ablat")
    assert round(res.tau2, 4) == 0.0764
    assert round(100 * res.i2, 2) == 68.39 and round(res.h2, 2) == 3.16 and round(100 * res.r2, 2) == 75.62
    assert _r4([res.qe, res.qe_p_value, res.qm, res.qm_p_value]).tolist() == [30.7331, 0.0012, 12.5905, 0.0046]
    assert res.qm_df == (1, 11) and res.df == 11 and res.k == 13 and res.p == 2
    assert _r4(res.coefficients).tolist() == [0.2515, -0.0291]
    assert _r4(res.se).tolist() == [0.2839, 0.0082]
    assert _r4(res.statistic).tolist() == [0.8857, -3.5483]
    assert _r4(res.p_values).tolist() == [0.3948, 0.0046]
    assert _r4(res.ci_low).tolist() == [-0.3735, -0.0472]
    assert _r4(res.ci_high).tolist() == [0.8764, -0.0111]


@pytest.mark.parametrize("method", ["DL", "REML", "PM"])
@pytest.mark.parametrize("hk", [False, True])
def test_meta_regression_matches_statsmodels_wls_given_tau2(method, hk):
    import statsmodels.api as sm

    yi, vi, ablat = _bcg()
    res = meta_regression(yi, vi, ablat, estimator=method, hartung_knapp=hk)
    x = sm.add_constant(ablat)
    fit = sm.WLS(yi, x, weights=1 / (vi + res.tau2)).fit(**({} if hk else {"cov_type": "fixed scale"}))
    assert res.coefficients == pytest.approx(fit.params, rel=1e-10)
    assert res.se == pytest.approx(fit.bse, rel=1e-10)
    assert res.ci_low == pytest.approx(fit.conf_int()[:, 0], rel=1e-10)
    assert res.p_values == pytest.approx(fit.pvalues, rel=1e-8)
    wald = fit.wald_test(np.array([[0.0, 1.0]]), scalar=True, use_f=hk)
    assert res.qm == pytest.approx(float(wald.statistic), rel=1e-10)
    assert res.qm_p_value == pytest.approx(float(wald.pvalue), rel=1e-8)
    fe = sm.WLS(yi, x, weights=1 / vi).fit()
    assert res.qe == pytest.approx(fe.ssr, rel=1e-12)
    # R²: the share of the intercept-only τ² (same method) that latitude explains
    tau2_re = random_effects(yi, vi, estimator=method).tau2
    assert res.r2 == pytest.approx(max(0.0, (tau2_re - res.tau2) / tau2_re), rel=1e-12)


def test_dl_meta_regression_tau2_is_the_method_of_moments_formula():
    yi, vi, ablat = _bcg()
    x = np.column_stack([np.ones(13), ablat])
    w = 1 / vi
    wx = x * w[:, None]
    p = np.diag(w) - wx @ np.linalg.inv(x.T @ wx) @ wx.T
    expected = max(0.0, (yi @ p @ yi - 11) / np.trace(p))
    assert meta_regression(yi, vi, ablat, estimator="DL").tau2 == pytest.approx(expected, rel=1e-12)


def test_categorical_moderator_is_dummy_coded_against_the_first_level():
    yi, vi, ablat = _bcg()
    alloc = np.array(["random"] * 4 + ["alternate"] * 2 + ["random"] * 3 + ["systematic"] * 4)
    res = meta_regression(yi, vi, {"alloc": alloc}, estimator="DL")
    assert res.names == ("intercept", "alloc[random]", "alloc[systematic]")
    x = np.column_stack([np.ones(13), alloc == "random", alloc == "systematic"]).astype(float)
    w = 1 / (vi + res.tau2)
    beta = np.linalg.solve(x.T @ (x * w[:, None]), x.T @ (w * yi))
    assert res.coefficients == pytest.approx(beta, rel=1e-10)
    assert res.qm_df == (2,)
    # several moderators at once, one of them categorical
    both = meta_regression(yi, vi, {"ablat": ablat, "alloc": alloc}, estimator="DL")
    assert both.names == ("intercept", "ablat", "alloc[random]", "alloc[systematic]")


def test_two_dimensional_numeric_covariates_are_named_in_order():
    yi, vi, ablat = _bcg()
    year = np.array([1948, 1949, 1960, 1977, 1973, 1953, 1973, 1980, 1968, 1961, 1974, 1969, 1976.0])
    res = meta_regression(yi, vi, np.column_stack([ablat, year]), estimator="REML")
    named = meta_regression(yi, vi, {"x1": ablat, "x2": year}, estimator="REML")
    assert res.names == ("intercept", "x1", "x2")
    assert res.coefficients == pytest.approx(named.coefficients, rel=1e-12)


def test_nan_studies_are_dropped_and_counted():
    yi, vi, ablat = _bcg()
    y = np.append(yi, [np.nan, 0.3])
    v = np.append(vi, [0.1, np.nan])
    res = random_effects(y, v, estimator="REML")
    ref = random_effects(yi, vi, estimator="REML")
    assert res.n_dropped == 2 and res.k == 13
    assert res.estimate == ref.estimate and res.tau2 == ref.tau2
    assert np.isnan(res.weights[-2:]).all()
    assert np.nansum(res.weights) == pytest.approx(1.0)
    assert res.weights[:13] == pytest.approx(ref.weights, rel=1e-15)
    cov = np.append(ablat, [10.0, 20.0])
    cov[0] = np.nan
    reg = meta_regression(y, v, cov)
    assert reg.n_dropped == 3 and reg.k == 12
    cats = np.array(["a", "b"] * 7 + ["a"], dtype=object)
    cats[1] = None
    assert meta_regression(y, v, {"c": cats}).n_dropped == 3


def test_two_studies_give_a_result_without_prediction_interval():
    res = random_effects([0.1, 0.5], [0.01, 0.02])
    assert res.k == 2 and math.isnan(res.pi_low) and math.isnan(res.pi_high)
    assert math.isfinite(res.ci_low)


def test_homogeneous_studies_have_tau2_zero_and_i2_zero():
    res = random_effects([0.2, 0.2, 0.2, 0.2], [0.01, 0.02, 0.03, 0.04], estimator="REML")
    assert res.tau2 == 0.0 and res.i2 == 0.0 and res.h2 == 1.0 and res.q == pytest.approx(0.0, abs=1e-12)
    assert random_effects([0.2, 0.2, 0.2], [0.01, 0.02, 0.03], estimator="PM").tau2 == 0.0


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (([0.1], [0.01]), {}, ValueError, "at least 2 studies"),
        (([0.1, np.nan, 0.3], [0.01, 0.02, np.nan]), {}, ValueError, "at least 2 studies"),
        (([0.1, 0.2], [0.01]), {}, ValueError, "variances has 1"),
        (([0.1, 0.2], [0.01, 0.0]), {}, ValueError, "positive"),
        (([0.1, 0.2], [0.01, -1.0]), {}, ValueError, "positive"),
        (([0.1, np.inf], [0.01, 0.1]), {}, ValueError, "finite"),
        (([[0.1, 0.2]], [[0.01, 0.1]]), {}, ValueError, "1-D"),
        ((["a", "b"], [0.01, 0.1]), {}, TypeError, "numbers"),
        (([0.1, 0.2], [0.01, 0.1]), {"estimator": "HS"}, ValueError, "DL, REML, PM"),
        (([0.1, 0.2], [0.01, 0.1]), {"ci_level": 95}, ValueError, "between 0 and 1"),
        (([0.1, 0.2], [0.01, 0.1]), {"hartung_knapp": "yes"}, TypeError, "True or False"),
    ],
)
def test_random_effects_validates_arguments_up_front(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        random_effects(*args, **kwargs)


def test_meta_regression_validates_its_design():
    yi, vi, ablat = _bcg()
    with pytest.raises(ValueError, match="rank deficient"):
        meta_regression(yi, vi, np.ones(13))
    with pytest.raises(ValueError, match="rank deficient"):
        meta_regression(yi, vi, {"a": ablat, "b": 2 * ablat})
    with pytest.raises(ValueError, match="more than 2 studies"):
        meta_regression(yi[:2], vi[:2], ablat[:2])
    with pytest.raises(ValueError, match="12 values but there are 13"):
        meta_regression(yi, vi, ablat[:12])
    with pytest.raises(TypeError, match="one per column"):
        meta_regression(yi, vi, np.array([["a", "b"]] * 13))


def test_reml_where_fisher_scoring_overshoots_finds_the_maximum():
    """Effects whose REML maximum lies just above 0: unguarded Fisher steps jump between 0 and 0.125
    for ever; the estimate must be the restricted likelihood's maximum (found here by a bounded search)."""
    from scipy.optimize import minimize_scalar

    from biasdask.stats.meta import _reml_loglik

    y = np.array([0.386, 0.213, -0.085, -0.062, 0.120, -0.002, -0.042, 0.246, 0.123, 0.495, 1.077, 0.081])
    v = np.array([0.484, 0.500, 0.526, 0.501, 0.502, 0.499, 0.503, 0.484, 0.499, 0.455, 0.296, 0.495]) ** 2
    x = np.ones((y.size, 1))
    best = minimize_scalar(
        lambda t: -_reml_loglik(t, y, v, x), bounds=(0.0, 2.0), method="bounded", options={"xatol": 1e-10}
    )
    res = random_effects(y, v, estimator="REML")
    if best.x < 1e-6:  # the maximum on the boundary
        assert res.tau2 == 0.0
    else:
        assert res.tau2 == pytest.approx(best.x, abs=1e-4)
    assert _reml_loglik(res.tau2, y, v, x) >= -best.fun - 1e-9
