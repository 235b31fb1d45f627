"""Tests for languages with grammatical gender: the BAD test and MWEAT (Zhou et al. 2019).

Equations of the BAD study ("Explicit Linguistic Markers of Implicit Social Biases: Gender Biases in
Adjectives with Grammatical Gender"; cos = cosine similarity):

- eq. 1-2, WEAT (Caliskan et al. 2017):
  s(w, A, B) = 1/|A| sum_a cos(w, a) - 1/|B| sum_b cos(w, b)  (:func:`weat_association`);
- eq. 3, MWEAT (Zhou et al. 2019):
  s(X, Y, A, B) = | |sum_x s(x, A, B)| - |sum_y s(y, A, B)| |  (:func:`mweat_statistic`);
- eq. 5: s(w, G) = 1/|G| sum_g cos(w, g)  (:func:`group_association`);
- eq. 4, BAD (Binary Association Difference):
  s(X, Y, A, B) = sum_x s(x, A) - sum_y s(y, B)  (:func:`bad_statistic`),
  with X, Y the masculine and feminine forms of gender-unbearing target words (row i of X and row i of
  Y are the two forms of target word i; an unmarked word such as *inteligente* appears in both) and A, B
  the masculine and feminine forms of gender-bearing attribute words, |X| = |Y| and |A| = |B|.

The Experiment 1 of "Explicit Linguistic Markers of Implicit Social Biases" asks whether the masculine and feminine scores of the same targets differ with
a two-tailed paired t-test (:func:`paired_t_test`, :func:`scipy.stats.ttest_rel`): for BAD the pairs
are (s(x_i, A), s(y_i, B)); for MWEAT (s(x_i, A, B), s(y_i, A, B)). Positive BAD values mean a
masculine bias, negative a feminine one (the BAD study's Experiment 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from biasdask._calls import PValueAlias
from biasdask.stats.linalg import matvec

__all__ = [
    "BADResult",
    "MWEATResult",
    "bad_statistic",
    "bad_test",
    "group_association",
    "mweat_statistic",
    "mweat_test",
    "paired_t_test",
    "weat_association",
]


def _unit_matrix(vectors: ArrayLike, name: str) -> NDArray[np.float64]:
    m = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (n, D) array of vectors, got shape {np.shape(vectors)}")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms) & (norms > 0)):
        raise ValueError(f"{name} contains zero or non-finite vectors; cosine similarity is undefined")
    return m / norms


def _same_size(p: NDArray, q: NDArray, names: str) -> None:
    if p.shape[0] != q.shape[0]:
        raise ValueError(
            f"{names} must have the same number of words (paired forms), got {p.shape[0]} and {q.shape[0]}"
        )
    if p.shape[1] != q.shape[1]:
        raise ValueError(f"{names} have different dimensions ({p.shape[1]} and {q.shape[1]})")


def group_association(w: ArrayLike, g: ArrayLike) -> NDArray[np.float64]:
    """The BAD study's eq. 5: s(w, G) = 1/|G| sum_{g in G} cos(w, g), for each row w.

    Parameters
    ----------
    w : array_like, shape (n, D)
    g : array_like, shape (m, D)

    Returns
    -------
    ndarray, shape (n,)
    """
    wm, gm = _unit_matrix(w, "w"), _unit_matrix(g, "G")
    return matvec(wm, gm.mean(axis=0))


def weat_association(w: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """WEAT's s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b) (Caliskan et al. 2017; the BAD study's eq. 2),
    for each row w."""
    return group_association(w, a) - group_association(w, b)


def paired_t_test(masculine: ArrayLike, feminine: ArrayLike, alternative: str = "two-sided") -> tuple[float, float]:
    """Paired t-test of masculine vs feminine scores of the same targets (the BAD study's Experiment 1).

    Thin wrapper of :func:`scipy.stats.ttest_rel` (t = mean(d) / (sd(d) / sqrt(n)), d = masculine -
    feminine, sd with ddof = 1, n - 1 degrees of freedom).

    Returns
    -------
    (t_statistic, p_value)
    """
    res = stats.ttest_rel(
        np.asarray(masculine, dtype=np.float64), np.asarray(feminine, dtype=np.float64), alternative=alternative
    )
    return float(res.statistic), float(res.pvalue)


def _paired_effect_size(diff: NDArray[np.float64]) -> float:
    if diff.size < 2:
        return float("nan")
    sd = diff.std(ddof=1)
    return float(diff.mean() / sd) if sd > 0 else float("nan")


@dataclass(frozen=True)
class BADResult(PValueAlias):
    """The BAD test (the BAD study's eq. 4-5) with its paired t-test.

    Attributes
    ----------
    statistic : float
        Eq. 4: sum_i s(x_i, A) - sum_i s(y_i, B). Positive: masculine bias.
    masculine, feminine : ndarray, shape (n,)
        Per-target scores s(x_i, A) and s(y_i, B) (eq. 5).
    t_statistic, p_value : float
        Paired t-test of ``masculine`` vs ``feminine`` (:func:`scipy.stats.ttest_rel`).
    effect_size : float
        mean / SD (ddof = 1) of the per-target differences (Cohen's d_z of the paired design; not in the
        seed, reported to fill the results cube).
    alternative : str
        Alternative of the t-test.
    """

    statistic: float
    masculine: NDArray[np.float64]
    feminine: NDArray[np.float64]
    t_statistic: float
    p_value: float
    effect_size: float
    alternative: str

    @property
    def bias(self) -> NDArray[np.float64]:
        """Per-target BAD score s(x_i, A) - s(y_i, B) (Figures 1-2 of "Explicit Linguistic Markers of Implicit Social Biases")."""
        return self.masculine - self.feminine


def _bad_scores(x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike) -> tuple[NDArray, NDArray]:
    """(s(x_i, A), s(y_i, B)) for paired X, Y and paired A, B (eq. 5)."""
    xm, ym = _unit_matrix(x, "X"), _unit_matrix(y, "Y")
    am, bm = _unit_matrix(a, "A"), _unit_matrix(b, "B")
    _same_size(xm, ym, "X and Y")
    _same_size(am, bm, "A and B")
    if xm.shape[1] != am.shape[1]:
        raise ValueError(f"targets and attributes have different dimensions ({xm.shape[1]} and {am.shape[1]})")
    return group_association(xm, am), group_association(ym, bm)


def bad_statistic(x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """The BAD test (the BAD study's eq. 4): s(X, Y, A, B) = sum_{x in X} s(x, A) - sum_{y in Y} s(y, B).

    X, Y (targets) and A, B (attributes) are paired masculine/feminine forms of equal sizes.
    """
    masc, fem = _bad_scores(x, y, a, b)
    return float(masc.sum() - fem.sum())


def bad_test(x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided") -> BADResult:
    """The Binary Association Difference test (the BAD study's eq. 4-5) and its paired t-test.

    Parameters
    ----------
    x, y : array_like, shape (n, D)
        Masculine and feminine forms of the target words, row i of each being the same word (n >= 2
        for the t-test).
    a, b : array_like, shape (m, D)
        Masculine and feminine forms of the gender-bearing attribute words (|A| = |B|).
    alternative : {"two-sided", "less", "greater"}
        For the paired t-test (the BAD paper uses two-sided).
    """
    masc, fem = _bad_scores(x, y, a, b)
    t, p = paired_t_test(masc, fem, alternative)
    return BADResult(
        statistic=float(masc.sum() - fem.sum()),
        masculine=masc,
        feminine=fem,
        t_statistic=t,
        p_value=p,
        effect_size=_paired_effect_size(masc - fem),
        alternative=alternative,
    )


@dataclass(frozen=True)
class MWEATResult(PValueAlias):
    """MWEAT (Zhou et al. 2019) with the paired t-test of the two forms.

    Attributes
    ----------
    statistic : float
        Eq. 3: | |sum_x s(x, A, B)| - |sum_y s(y, A, B)| |, always >= 0.
    masculine, feminine : ndarray, shape (n,)
        Per-target WEAT associations s(x_i, A, B) and s(y_i, A, B) (eq. 2).
    t_statistic, p_value : float
        Paired t-test of ``masculine`` vs ``feminine`` (:func:`scipy.stats.ttest_rel`).
    effect_size : float
        mean / SD (ddof = 1) of the per-target differences (d_z; not in the BAD paper).
    alternative : str
    """

    statistic: float
    masculine: NDArray[np.float64]
    feminine: NDArray[np.float64]
    t_statistic: float
    p_value: float
    effect_size: float
    alternative: str


def mweat_statistic(x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike) -> float:
    """MWEAT (Zhou et al. 2019; the BAD study's eq. 3): | |sum_{x in X} s(x, A, B)| - |sum_{y in Y} s(y, A, B)| |.

    Unlike :func:`mweat_test`, the sets need not be paired (|X| may differ from |Y|).
    """
    sx = weat_association(x, a, b).sum()
    sy = weat_association(y, a, b).sum()
    return float(abs(abs(sx) - abs(sy)))


def mweat_test(
    x: ArrayLike, y: ArrayLike, a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided"
) -> MWEATResult:
    """MWEAT (Zhou et al. 2019) and the paired t-test of masculine vs feminine target forms.

    Parameters
    ----------
    x, y : array_like, shape (n, D)
        Masculine and feminine forms of the targets (e.g. occupations), row i of each the same word.
    a, b : array_like, shape (m_a, D) and (m_b, D)
        Male and female attribute words (eq. 2 averages each, so the sizes may differ).
    alternative : {"two-sided", "less", "greater"}
    """
    xm, ym = _unit_matrix(x, "X"), _unit_matrix(y, "Y")
    _same_size(xm, ym, "X and Y")
    masc = weat_association(xm, a, b)
    fem = weat_association(ym, a, b)
    t, p = paired_t_test(masc, fem, alternative)
    return MWEATResult(
        statistic=float(abs(abs(masc.sum()) - abs(fem.sum()))),
        masculine=masc,
        feminine=fem,
        t_statistic=t,
        p_value=p,
        effect_size=_paired_effect_size(masc - fem),
        alternative=alternative,
    )
