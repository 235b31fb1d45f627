"""Matplotlib figures of biasdask results.

Every function builds and returns a :class:`matplotlib.figure.Figure` created without pyplot, so nothing is
registered in pyplot's global figure list (no figure to close, no memory kept by a long session) and it
works under any backend, including ``Agg`` on a headless machine. Save one with
``fig.savefig("name.png", dpi=150)``. In a notebook a returned figure is shown as the cell's output once the
inline backend is active (``%matplotlib inline``, or after any ``import matplotlib.pyplot``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike
from scipy import stats

from biasdask.engine.frequency import profile_for_plot
from biasdask.errors import missing_dependency
from biasdask.io.results import FULL_VOCABULARY_TESTS, split_label
from biasdask.stats.frequency import BinProfile
from biasdask.study.reliability import consistency_tests
from biasdask.tables import empty_reason, leaning, word_list_family

try:
    import matplotlib as mpl
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FuncFormatter, NullFormatter
    from matplotlib.transforms import blended_transform_factory
except ImportError:  # figures are an extra: the core measures and writes results without them
    raise missing_dependency("matplotlib", "plot", "biasdask's figures") from None

__all__ = [
    "plot_attribute_sensitivity",
    "plot_effect_heatmap",
    "plot_forest",
    "plot_frequency_profile",
    "plot_gender_form_bias",
    "plot_internal_consistency",
    "plot_null_distribution",
    "plot_overview",
    "plot_pvalue_calibration",
    "plot_retest",
]

_VARIABLE_LABELS = {
    "effect_size": "effect size d (mean difference / SD, ddof = 1)",
    "statistic": "test statistic s",
    "z_score": "z (normal approximation of the null)",
    "p_value": "permutation p-value",
    "p_value_normal": "p-value of the normal approximation",
    "null_mean": "mean of the null distribution",
    "null_std": "SD of the null distribution",
}
_P_VARIABLES = ("p_value", "p_value_normal")
_NOT_RUN_COLOR = "#e6e6e6"


def _text_color(rgba: tuple[float, float, float, float]) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    r, g, b, _ = rgba
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _format_cell(value: float, variable: str) -> str:
    if variable in _P_VARIABLES:
        return f"{value:.2g}"
    return f"{value:.3g}" if abs(value) >= 100 else f"{value:.2f}".replace("-0.00", "0.00")


def _empty_labels(notes: np.ndarray) -> np.ndarray:
    """A short label per empty cell, from its ``note`` (:func:`biasdask.tables.empty_reason`)."""
    return np.vectorize(empty_reason, otypes=[object])(notes)


def plot_effect_heatmap(results: xr.Dataset, variable: str = "effect_size", test: str | None = None) -> Figure:
    """Heatmap of one variable of a results cube: languages down, methods (or tests × methods) across.

    Each cell is coloured and annotated with its value; empty cells are grey and say why, from their
    ``note`` ("n/a": not applicable, "coverage", "missing words", "no freq. list", else "not run");
    cells that ran but have no such value (the effect size of a set-level metric) say "none". Signed variables use a diverging colormap centred on 0 (red positive, blue negative) with
    symmetric limits, so the colour of a cell tells its sign and size at a glance; p-values use a
    sequential map from 0 to 1.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube with dims ``language``, ``method``, ``test``, e.g. from
        ``biasdask.open_results``.
    variable : str
        Which variable to show (default the effect size).
    test : str, optional
        Show only this test (columns = methods). By default every (test, method) combination gets a
        column labelled ``"test · method"``, except for a variable equal under every weighting (the
        effect size d, defined on the unweighted u): then one column per test.
    """
    if variable not in results:
        raise KeyError(f"results has no variable {variable!r}; it has {', '.join(map(str, results.data_vars))}")
    if variable not in _P_VARIABLES:  # colour by the way a cell leans, in its test's own sign convention
        lean = xr.DataArray(
            [float(leaning(str(t))) for t in results["test"].values], dims="test", coords={"test": results["test"]}
        )
        shade = (results[variable] * lean).where(lean != 0)
    else:
        shade = results[variable]
    da = results[variable]
    stat = results["statistic"] if "statistic" in results else da  # a cell ran if it has a statistic
    notes = results["note"] if "note" in results else xr.full_like(stat, "", dtype=object)
    sets = (results["word_sets"] if "word_sets" in results else xr.full_like(stat, "", dtype=object)).isel(method=0)
    sets = sets.transpose("language", "test")
    languages = [str(v) for v in results["language"].values]
    methods = [str(v) for v in results["method"].values]
    tests = [str(v) for v in results["test"].values]
    if test is not None:
        if test not in tests:
            raise KeyError(f"results has no test {test!r}; it has {', '.join(tests)}")
        values = np.asarray(da.sel({"test": test}).transpose("language", "method").values, dtype=np.float64)
        colour = np.asarray(shade.sel({"test": test}).transpose("language", "method").values, dtype=np.float64)
        ran = np.isfinite(stat.sel({"test": test}).transpose("language", "method").values)
        why = _empty_labels(notes.sel({"test": test}).transpose("language", "method").values)
        sources = np.repeat(sets.sel({"test": test}).values[:, None], len(methods), axis=1)
        columns, column_axis, column_tests = methods, "method", [test] * len(methods)
    else:
        cube = np.asarray(da.transpose("language", "test", "method").values, dtype=np.float64)
        shades = np.asarray(shade.transpose("language", "test", "method").values, dtype=np.float64)
        ran = np.isfinite(stat.transpose("language", "test", "method").values)
        why = _empty_labels(notes.transpose("language", "test", "method").values)
        if np.array_equal(cube, np.repeat(cube[..., :1], len(methods), axis=2), equal_nan=True):
            # e.g. d, defined on the unweighted u: one column per test, not the same number per method
            values, colour, columns, column_axis = (
                cube[..., 0],
                shades[..., 0],
                tests,
                "test (the same for every weighting)",
            )
            ran = ran.any(axis=2)
            why = why[..., 0]
            sources, column_tests = np.asarray(sets.values), tests
        else:
            values = cube.reshape(len(languages), len(tests) * len(methods))
            colour = shades.reshape(values.shape)
            ran = ran.reshape(values.shape)
            why = why.reshape(values.shape)
            sources = np.repeat(np.asarray(sets.values), len(methods), axis=1)
            columns = [f"{t} · {m}" for t in tests for m in methods]
            column_axis, column_tests = "test · method", [t for t in tests for _ in methods]
    # a column whose languages measured different word lists is marked, and its cells say which
    mixed = [
        split_label(t)[0] not in FULL_VOCABULARY_TESTS
        and len(
            {word_list_family(str(src)) for src, v in zip(sources[:, j], values[:, j]) if str(src) and np.isfinite(v)}
        )
        > 1
        for j, t in enumerate(column_tests)
    ]
    columns = [f"{c} †" if m else c for c, m in zip(columns, mixed)]

    finite = colour[np.isfinite(colour)]
    if variable in _P_VARIABLES:
        cmap, norm = mpl.colormaps["viridis"], Normalize(0.0, 1.0)
    else:
        limit = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
        cmap, norm = mpl.colormaps["RdBu_r"], Normalize(-limit, limit)
    cmap = cmap.with_extremes(bad=_NOT_RUN_COLOR)

    n_rows, n_cols = values.shape
    fig = Figure(figsize=(max(5.5, 2.6 + 0.95 * n_cols), 1.8 + 0.34 * n_rows + 0.3 * any(mixed)), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(colour), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    for i in range(n_rows):
        for j in range(n_cols):
            v = values[i, j]
            if np.isfinite(v):
                if not np.isfinite(colour[i, j]):  # a value without a direction: on white, not on the scale
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="white", edgecolor="none"))
                fill = cmap(norm(colour[i, j])) if np.isfinite(colour[i, j]) else (1.0, 1.0, 1.0, 1.0)
                ax.text(
                    j,
                    i - (0.12 if mixed[j] else 0),
                    _format_cell(v, variable),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=_text_color(fill),
                )
                if mixed[j]:
                    ax.text(
                        j,
                        i + 0.22,
                        word_list_family(str(sources[i, j])),
                        ha="center",
                        va="center",
                        fontsize=6,
                        color=_text_color(fill),
                    )
            else:
                ax.text(
                    j,
                    i,
                    "none" if ran[i, j] else why[i, j],
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="#707070",
                    style="italic",
                )
    ax.set_xticks(range(n_cols), columns, rotation=30 if n_cols > 3 else 0, ha="right" if n_cols > 3 else "center")
    ax.set_yticks(range(n_rows), languages)
    ax.set_xlabel(column_axis)
    ax.set_ylabel("language")
    ax.tick_params(length=0)
    label = _VARIABLE_LABELS.get(variable, variable)
    scope = f"test '{test}'" if test is not None else "all tests"
    ax.set_title(f"{label.split(' (')[0]}\nby language and {column_axis.split(' (')[0]}, {scope}")
    bar = fig.colorbar(image, ax=ax, shrink=0.6 if n_rows > 12 else 1.0)
    if variable in _P_VARIABLES:
        bar.set_label(label.replace(" (", "\n("), fontsize=8)  # two lines: never clipped by the figure's edge
    else:
        bar.set_label(
            f"{label.split(' (')[0]}, coloured by leaning:\nred towards A, blue towards B\n"
            "(each test's sign convention)",
            fontsize=8,
        )
    if any(mixed):
        note = (
            "† the languages of this column measured different word lists (each cell names its own): their "
            "values are not on one scale"
        )
        width = int(fig.get_figwidth() * 10)  # characters of 9 pt text across the figure, with margins
        ax.set_xlabel(f"{column_axis}\n" + "\n".join(textwrap.wrap(note, width)), fontsize=9)
    return fig


_METHOD_COLORS = {"uniform": "#4d4d4d", "zipf": "#e08214", "frequency": "#8073ac"}


def plot_overview(results: xr.Dataset, test: str = "gender") -> Figure:
    """Per language, the effect size d beside z of every weighting: which way and how far each leans.

    Left: d (mean difference of u over its sample SD), defined on the unweighted u and so the same
    for every weighting. Right: z = (s − E s_i) / SD(s_i), the statistic's distance from its
    permutation null in null SDs, one bar per weighting (method): it differs between weightings
    (the point of the weightings: the Zipf weights let the most frequent words decide, and s may even change
    sign). The z axis is symmetric-log (linear within ±2) so that z = 3 and z = 500 are both
    readable; dotted lines at ±1.96. Languages are sorted by d; empty cells are left blank and
    marked.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube (:func:`biasdask.open_results`).
    test : str
        The test to show (default ``gender``, the full-vocabulary test).
    """
    tests = [str(v) for v in results["test"].values]
    if test not in tests:
        raise KeyError(f"results has no test {test!r}; it has {', '.join(tests)}")
    cube = results.sel({"test": test})
    languages = [str(v) for v in cube["language"].values]
    methods = [str(v) for v in cube["method"].values]
    d_all = np.asarray(cube["effect_size"].transpose("language", "method").values, dtype=np.float64)
    with np.errstate(all="ignore"):
        d = np.array([row[np.isfinite(row)][0] if np.isfinite(row).any() else np.nan for row in d_all])
    z = np.asarray(cube["z_score"].transpose("language", "method").values, dtype=np.float64)
    order = np.argsort(np.where(np.isfinite(d), d, -np.inf), kind="stable")
    n = len(languages)
    fig = Figure(figsize=(10.0, 1.6 + 0.3 * n), layout="constrained")
    ax_d, ax_z = fig.subplots(1, 2, sharey=True, width_ratios=[1, 1.6])
    y = np.arange(n)
    colors = ["#b2182b" if v > 0 else "#2166ac" for v in d[order]]
    ax_d.barh(y, np.nan_to_num(d[order]), color=colors, height=0.7)
    ax_d.axvline(0, color="#555555", lw=0.8)
    notes = (
        np.asarray(cube["note"].transpose("language", "method").values)[:, 0]
        if "note" in cube
        else np.full(n, "", dtype=object)
    )
    for yi, v, note in zip(y, d[order], notes[order]):
        if not np.isfinite(v):
            ax_d.text(0, yi, f" {empty_reason(str(note))}", va="center", fontsize=7, color="#707070", style="italic")
    ax_d.set_yticks(y, [languages[i] for i in order], fontsize=8)
    ax_d.set_ylim(-0.6, n - 0.4)
    ax_d.set_xlabel("effect size d = (mean u(X) − mean u(Y)) / SD\n(sample SD, ddof = 1; > 0: towards A)", fontsize=8)
    ax_d.set_title("d (the same for every weighting)", fontsize=9)
    ax_d.tick_params(axis="x", labelsize=8)
    ax_d.set_ylabel("language (sorted by d)")
    height = 0.8 / max(1, len(methods))
    adjusted, correction, alpha = _adjusted(cube)
    for k, m in enumerate(methods):
        zs = z[order, k]
        ax_z.barh(
            y - 0.4 + height * (k + 0.5),
            np.nan_to_num(zs),
            height=height,
            color=_METHOD_COLORS.get(m, f"C{k}"),
            label=m,
        )
        if adjusted is not None:  # a star beyond the bar of each cell significant after correction
            for yi, zi, pi in zip(y - 0.4 + height * (k + 0.5), zs, adjusted[order, k]):
                if np.isfinite(zi) and pi < alpha:
                    ax_z.text(
                        zi,
                        yi,
                        " ★ " if zi >= 0 else " ★ ",
                        ha="left" if zi >= 0 else "right",
                        va="center",
                        fontsize=7,
                        color="#222222",
                    )
    ax_z.set_xscale("symlog", linthresh=2.0)
    ax_z.axvline(0, color="#555555", lw=0.8)
    for x in (-1.96, 1.96):
        ax_z.axvline(x, color="#999999", lw=0.8, ls=":")
    finite = np.abs(z[np.isfinite(z)])
    limit = max(3.0, float(finite.max()) * 1.5) if finite.size else 3.0
    ax_z.set_xlim(-limit, limit)
    # 1-2-5 steps beyond the linear range (z = -4.2 must be readable), decades only once they crowd
    steps = [m * 10.0**k for k in range(int(np.log10(limit)) + 1) for m in (1, 2, 5) if 2 <= m * 10.0**k <= limit]
    if len(steps) > 5:
        steps = [t for t in steps if t == 2 or float(np.log10(t)).is_integer()]
    ticks = sorted({0.0, *steps, *(-t for t in steps)})
    ax_z.set_xticks(ticks, [f"{t:,.0f}" for t in ticks], fontsize=8)
    ax_z.set_xlabel(
        "z = (s − E s) / SD s under the permutation null, per weighting\n"
        "(symmetric-log axis, linear within ±2; dotted: ±1.96)",
        fontsize=8,
    )
    ax_z.set_title("z: how far s is in its null's tail, per weighting", fontsize=9)
    ax_z.tick_params(axis="y", labelleft=False, length=0)
    handles, labels = ax_z.get_legend_handles_labels()
    if adjusted is not None:
        handles.append(Line2D([], [], ls="none", marker="$★$", color="#222222", markersize=8))
        labels.append(f"p < {alpha:g} after {correction} correction over the languages")
    fig.legend(
        handles,
        labels,
        title="weighting (method)",
        fontsize=8,
        title_fontsize=8,
        loc="outside lower center",
        ncols=len(labels),
        frameon=False,
    )
    fig.suptitle(
        f"Test '{test}': which way each language leans (> 0 towards A), and how surely under each weighting\n"
        + _sides(cube),
        fontsize=10,
    )
    return fig


def _adjusted(cube: xr.Dataset) -> tuple[np.ndarray | None, str, float]:
    """The corrected p-values of a test's cells (language × method), the correction and its alpha; None
    when the cube has none (no correction, or a store written before corrections)."""
    if "p_value_adjusted" not in cube:
        return None, "", 0.05
    attrs = cube["p_value_adjusted"].attrs
    correction = str(attrs.get("correction", ""))
    if correction in ("", "none"):
        return None, correction, 0.05
    values = np.asarray(cube["p_value_adjusted"].transpose("language", "method").values, dtype=np.float64)
    return values, correction, float(attrs.get("alpha", 0.05))


def _sides(cube: xr.Dataset, n: int = 4) -> str:
    """``"A: he, him, his, … (en); B: she, her, … (en)"``: the attribute words of the first language that
    has them (every language has its own words; the cube holds them all)."""
    parts = []
    for side, variable in (("A", "attribute_words_a"), ("B", "attribute_words_b")):
        if variable not in cube:
            continue
        texts = np.asarray(cube[variable].transpose("language", ...).values).reshape(cube.sizes["language"], -1)
        for lang, text in ((lang, t) for lang, row in zip(cube["language"].values, texts) for t in row):
            if str(text):
                words = str(text).split(", ")
                parts.append(f"{side}: {', '.join(words[:n])}{', …' if len(words) > n else ''} ({lang})")
                break
    return "; ".join(parts) if parts else "A: the first attribute set, B: the second"


def plot_null_distribution(
    null: ArrayLike,
    statistic: float,
    *,
    z_score: float | None = None,
    p_value: float | None = None,
    title: str = "",
    bins: int = 50,
    xlabel: str = "test statistic s = Σ t(X) − Σ t(Y) (units of the weighted score t)",
) -> Figure:
    """Histogram of a sampled null distribution with the observed statistic.

    Shows the permutation statistics s_i as a density histogram, the normal curve with the null's own mean
    and SD (ddof = 1) over it, and the observed s as a red vertical line. When s lies more than 10 null
    SDs from the null's mean (the rule for full vocabularies), drawing it to scale would squash the
    histogram into a spike: the axis then stays on the null and an arrow at the edge gives s instead.
    The z-score and p-value, when given, are printed in a box.

    Parameters
    ----------
    null : array_like
        The sampled statistics (``PermutationTestResult.null_distribution``).
    statistic : float
        The observed statistic s.
    z_score, p_value : float, optional
        Shown in the box (e.g. the result's ``z_score`` and ``pvalue``).
    title : str
        Axes title; by default "Permutation null distribution".
    bins : int
        Histogram bins.
    xlabel : str
        Label of the statistic's axis (default: the WEAT-style s).
    """
    s_null = np.asarray(null, dtype=np.float64).ravel()
    s_null = s_null[np.isfinite(s_null)]
    if s_null.size == 0:
        raise ValueError("the null distribution is empty")
    mu = float(s_null.mean())
    sd = float(s_null.std(ddof=1)) if s_null.size > 1 else 0.0

    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    ax.hist(
        s_null,
        bins=bins,
        density=True,
        color="#9ecae1",
        edgecolor="white",
        linewidth=0.5,
        label=f"sampled null ({s_null.size:,} permutations)",
    )

    lo, hi = float(s_null.min()), float(s_null.max())
    on_scale = sd == 0 or abs(statistic - mu) <= 10 * sd
    if on_scale:
        lo, hi = min(lo, statistic), max(hi, statistic)
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    ax.set_xlim(lo - pad, hi + pad)

    if sd > 0:
        grid = np.linspace(lo - pad, hi + pad, 400)
        pdf = np.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
        ax.plot(grid, pdf, color="#08519c", lw=1.8, label=f"normal curve with the null's mean {mu:.3g} and SD {sd:.3g}")

    observed = f"observed s = {statistic:.4g}"
    if on_scale:
        ax.axvline(statistic, color="#d62728", lw=2, label=observed)
    else:
        side = "right" if statistic > mu else "left"
        ax.plot([], [], color="#d62728", lw=2, label=f"{observed} (off scale, {side})")
        x_edge = 0.98 if side == "right" else 0.02
        ax.annotate(
            f"s = {statistic:.4g}\n({abs(statistic - mu) / sd:,.0f} sampled SDs away)",
            xy=(x_edge, 0.5),
            xycoords="axes fraction",
            xytext=(0.78 if side == "right" else 0.22, 0.5),
            textcoords="axes fraction",
            ha="center",
            va="center",
            color="#d62728",
            fontsize=9,
            arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 1.5},
        )

    notes = []
    if z_score is not None:
        notes.append(f"z = {z_score:.3g}")
    if p_value is not None:
        notes.append(f"p = {p_value:.3g}")
    if notes:
        ax.text(
            0.02,
            0.97,
            "\n".join(notes),
            transform=ax.transAxes,
            ha="left",
            va="top",
            fontsize=9,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#bbbbbb"},
        )

    ax.set_xlabel(xlabel)
    ax.set_ylabel("density (per unit of s)")
    ax.set_title(title or "Permutation null distribution")
    ax.legend(loc="upper right", fontsize=8, frameon=True)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # headroom for the legend and the box
    return fig


def _edge_label(value: float, key: str) -> str:
    if key == "rank":
        for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if value >= div:
                return f"{value / div:.3g}{suffix}"
        return f"{value:.0f}"
    return f"$10^{{{np.log10(value):.3g}}}$"


def _bin_labels(prof: BinProfile) -> list[str]:
    """Compact bin labels such as ``1-10``, ``100k-200k`` (ranks) or ``10^2-10^2.5`` (frequencies)."""
    edges = [_edge_label(e, prof.key) for e in prof.edges]
    return [f"{lo}–{hi}" for lo, hi in zip(edges[:-1], edges[1:])]


def _spans_decades(sd: ArrayLike) -> bool:
    """Whether per-bin SDs differ by more than a factor 30 (a weighted score such as Zipf's t)."""
    sds = np.asarray(sd, dtype=np.float64)
    sds = sds[np.isfinite(sds) & (sds > 0)]
    return bool(sds.size > 1 and sds.max() / sds.min() > 30)


def plot_frequency_profile(
    profiles: Mapping[str, BinProfile | xr.Dataset],
    *,
    score: str = "u",
    score_label: str | None = None,
    ncols: int | None = None,
    sharey: bool = False,
    title: str = "",
) -> Figure:
    """Mean bias per log10 frequency bin, one panel per language (like Valentini et al. 2022, Figure 1).

    Each panel shows one dot per bin, in bin order (rank bins: the most frequent words on the left;
    observed-frequency bins: the most frequent on the right), with an error bar of ±1 SD of the score
    within the bin and the bin's effect size (mean / SD) written above it in the same colour. A score whose
    spread shrinks by decades from bin to bin (a Zipf-weighted t) is drawn instead as each bin's
    contribution to s, a signed share of the bins' absolute contributions (red > 0, towards A), so that
    every panel keeps one linear, readable scale. The
    dashed line marks 0, no bias on average. Rank bins are labelled by their edges, e.g. ``10–100`` for
    ranks 10 to 99 (the last bin includes its upper edge, N).

    Parameters
    ----------
    profiles : mapping of str to BinProfile or xarray.Dataset
        Panel title (typically the language code) to a profile: a
        :class:`~biasdask.stats.frequency.BinProfile` (from :func:`biasdask.stats.frequency.profile_by_rank`
        or ``profile_by_frequency``), or a Dataset from :func:`biasdask.engine.frequency.frequency_profile`
        (e.g. the values of ``frequency_profiles(results_url)``), of which ``score`` is drawn.
    score : str
        Which score of Dataset profiles to draw: ``"u"`` or ``"t_<method>"`` (e.g. ``"t_zipf"``).
    score_label : str, optional
        Name of the score for the y axis (default ``"u"`` or ``"t (<method>)"`` after ``score``).
    ncols : int, optional
        Panels per row (default: one column up to three panels, then up to four columns).
    sharey : bool
        One y scale for all panels (Valentini et al. 2022's panels are not comparable across embeddings, so off by
        default).
    title : str
        Figure title (default "Bias <score_label> against word frequency").
    """
    if not profiles:
        raise ValueError("no profiles to plot")
    if any(isinstance(p, xr.Dataset) for p in profiles.values()):
        profiles = {k: profile_for_plot(p, score) if isinstance(p, xr.Dataset) else p for k, p in profiles.items()}
    if score_label is None:
        score_label = "u (cosine difference)" if score == "u" else f"t ({score.removeprefix('t_')} weight × u)"
    n = len(profiles)
    if ncols is None:
        ncols = 1 if n <= 3 else min(4, int(np.ceil(np.sqrt(n))))
    nrows = int(np.ceil(n / ncols))
    max_bins = max(p.n_bins for p in profiles.values())
    one_key = len({p.key for p in profiles.values()}) == 1
    width = max(7.5, 0.75 * max_bins + 1.5) if ncols == 1 else max(3.6, 0.5 * max_bins + 1.2) * ncols
    fig = Figure(figsize=(width, 1.0 + 2.9 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, sharey=sharey, squeeze=False).ravel()

    # Weighted scores shrink by decades from bin to bin (Zipf: 1/rank), their spread with them: on a linear
    # axis every bin after the first two sits on 0, and a logarithmic one is hard to read. Such a score is
    # drawn as what each bin contributes to s, a share on a linear axis.
    shares = any(_spans_decades(p.sd) for p in profiles.values())
    for i, (ax, (name, prof)) in enumerate(zip(axes, profiles.items())):
        x = np.arange(prof.n_bins)
        ax.axhline(0, color="#888888", lw=0.8, ls="--", zorder=0)
        if shares:
            contribution = np.nan_to_num(prof.mean * prof.count)
            total = np.abs(contribution).sum()
            share = 100 * contribution / total if total > 0 else contribution
            ax.bar(
                x,
                share,
                color=np.where(share >= 0, "#b2182b", "#2166ac"),
                width=0.7,
                label="bin's contribution to s, % of the bins' absolute contributions (red towards A, blue towards B)",
            )
            low, high = min(float(share.min()), 0.0), max(float(share.max()), 0.0)
            span = max(high - low, 1.0)
            ax.set_ylim(low - 0.05 * span, high + 0.18 * span)
        else:
            ax.errorbar(
                x,
                prof.mean,
                yerr=np.nan_to_num(prof.sd),
                fmt="o",
                color="#1f77b4",
                ecolor="#6baed6",
                elinewidth=1.5,
                capsize=3,
                markersize=5,
                label="mean ± 1 SD",
            )
            ax.margins(y=0.3)
        top = blended_transform_factory(ax.transData, ax.transAxes)
        for xi, d in zip(x, prof.effect_size):
            if np.isfinite(d):
                text = f"{d:.2f}".replace("-0.00", "0.00")
                ax.text(xi, 0.97, text, transform=top, ha="center", va="top", fontsize=7, color="#1f77b4")
        ax.set_xticks(
            x,
            _bin_labels(prof),
            fontsize=7,
            rotation=45 if prof.n_bins > 4 else 0,
            ha="right" if prof.n_bins > 4 else "center",
            rotation_mode="anchor",
        )
        ax.set_xlim(-0.5, prof.n_bins - 0.5)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title(f"{name}  ({int(prof.count.sum()):,} words)", fontsize=10)
        if i + ncols >= n or not one_key:  # axis titles once per column and row of a grid, not on every panel
            ax.set_xlabel(
                "frequency rank bin (log10, 1 = most frequent)"
                if prof.key == "rank"
                else "observed frequency bin (log10)",
                fontsize=8,
            )
        if i % ncols == 0:
            ax.set_ylabel(f"share of s (%), {score_label}" if shares else f"mean {score_label}", fontsize=8)
    for ax in axes[n:]:
        ax.set_visible(False)

    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Line2D([], [], ls="none", marker="$d$", color="#1f77b4", markersize=8))
    labels.append("effect size = mean / SD per bin (numbers at the top)")
    fig.legend(handles, labels, loc="outside lower center", ncols=1 if shares else 2, fontsize=8, frameon=False)
    fig.suptitle(title or f"Bias {score_label} against word frequency")
    return fig


_MASCULINE_COLOR = "#2166ac"
_FEMININE_COLOR = "#b2182b"
_FORM_BIAS_AXIS = {
    "bad": "BAD bias s(x, A) − s(y, B)",
    "mweat": "s(x, A, B) − s(y, A, B)",
}


def plot_gender_form_bias(results: Mapping[str, Any], *, title: str = "") -> Figure:
    """Per-target bias of the BAD test or MWEAT, sorted from lowest to highest (as in the BAD study's Figures 1-2).

    One panel per result: a horizontal bar per target word (labelled ``masculine/feminine``, or the one
    form of an unmarked word) giving the score of its masculine form minus that of its feminine form,
    blue where the masculine form scores higher (masculine bias), red where the feminine one does.
    The panel title gives the paired t-test (t, p) and the test statistic.

    Parameters
    ----------
    results : mapping of str to GenderFormsResult
        Panel title (e.g. ``"es · BAD"``) to a result of :func:`biasdask.engine.grammatical.bad_test` or
        :func:`~biasdask.engine.grammatical.mweat_test` (anything with ``bias``, ``target_labels``, ``test``,
        ``statistic``, ``t_statistic`` and ``pvalue``).
    title : str
        Figure title (default "Bias of masculine vs feminine forms").
    """
    if not results:
        raise ValueError("no results to plot")
    n = len(results)
    n_rows = max(len(r.bias) for r in results.values())
    fig = Figure(figsize=(6.0 * n, 1.6 + 0.24 * n_rows), layout="constrained")
    axes = fig.subplots(1, n, squeeze=False).ravel()
    for ax, (name, res) in zip(axes, results.items()):
        bias = np.asarray(res.bias, dtype=np.float64)
        order = np.argsort(bias, kind="stable")
        labels = [res.target_labels[i] for i in order]
        values = bias[order]
        colors = [_MASCULINE_COLOR if v > 0 else _FEMININE_COLOR if v < 0 else "#999999" for v in values]
        y = np.arange(len(values))
        ax.barh(y, values, color=colors, height=0.7)
        ax.axvline(0, color="#555555", lw=0.8)
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_ylim(-0.7, len(values) - 0.3)
        test = str(res.test)
        axis_name = _FORM_BIAS_AXIS.get(test, "masculine − feminine score")
        ax.set_xlabel(f"{axis_name}\n(> 0: masculine bias, < 0: feminine)", fontsize=8)
        ax.set_title(
            f"{name}  ({len(values)} targets)\npaired t = {res.t_statistic:.3g}, p = {res.p_value:.2g}; "
            f"{test.upper()} statistic = {res.statistic:.3g}",
            fontsize=9,
        )
        lo, hi = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
        pad = 0.05 * (hi - lo) if hi > lo else 1.0
        ax.set_xlim(lo - pad, hi + pad)
    handles = [
        Patch(color=_MASCULINE_COLOR, label="masculine form scores higher"),
        Patch(color=_FEMININE_COLOR, label="feminine form scores higher"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    fig.suptitle(title or "Bias of masculine vs feminine forms")
    return fig


def plot_attribute_sensitivity(sensitivity: xr.Dataset, *, alpha: float = 0.05, title: str = "") -> Figure:
    """Effect size and p-value of a full-vocabulary test with each attribute word left out in turn.

    Left panel: d per left-out word (one row each, A's words then B's), the test with every word as a
    dashed line; right panel: the permutation p-value on a log scale with ``alpha`` marked. A finding
    that rests on one attribute word shows as the row whose d moves towards 0 (or whose p crosses
    ``alpha``).

    Parameters
    ----------
    sensitivity
        The Dataset of :func:`biasdask.attribute_sensitivity`.
    alpha
        Significance level drawn on the p panel (filled markers: p ≤ alpha).
    title
        Figure title (default: language, method and alternative).
    """
    ds = sensitivity
    rows = [i for i, w in enumerate(ds["left_out"].values) if str(w)]
    if "" not in [str(w) for w in ds["left_out"].values] or not rows:
        raise ValueError("expected the Dataset of attribute_sensitivity (a row with left_out = '' and one per word)")
    full = ds.sel(left_out="")
    labels = [f"{ds['side'].values[i]}: without {ds['left_out'].values[i]}" for i in rows]
    d = ds["effect_size"].values[rows]
    p = ds["p_value"].values[rows]
    side = ds["side"].values[rows]
    colors = [_MASCULINE_COLOR if s == "A" else _FEMININE_COLOR for s in side]
    y = np.arange(len(rows))[::-1]
    fig = Figure(figsize=(9.0, 1.4 + 0.28 * len(rows)), layout="constrained")
    ax_d, ax_p = fig.subplots(1, 2, sharey=True)
    for ax, values, ref in ((ax_d, d, float(full["effect_size"])), (ax_p, p, float(full["p_value"]))):
        ok = np.isfinite(values)
        filled = ok & (p <= alpha)
        ax.scatter(values[filled], y[filled], c=[c for c, f in zip(colors, filled) if f], s=30, zorder=3)
        ax.scatter(
            values[ok & ~filled],
            y[ok & ~filled],
            facecolors="white",
            s=30,
            zorder=3,
            edgecolors=[c for c, f in zip(colors, ok & ~filled) if f],
        )
        if np.isfinite(ref):
            ax.axvline(ref, color="#333333", ls="--", lw=1, label="all attribute words")
        for yi in y[~ok]:
            ax.text(
                0.02,
                yi,
                "set left empty",
                transform=blended_transform_factory(ax.transAxes, ax.transData),
                va="center",
                fontsize=7,
                color="#777777",
            )
    ax_d.axvline(0, color="#999999", lw=0.8)
    ax_d.set_yticks(y, labels, fontsize=7)
    ax_d.set_xlabel(_VARIABLE_LABELS["effect_size"], fontsize=8)
    ax_p.set_xscale("log")
    finite_p = p[np.isfinite(p)]
    ax_p.set_xlim(0.5 * min(alpha, *finite_p), 1.5)
    ax_p.xaxis.set_minor_formatter(NullFormatter())
    ax_p.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_p.axvline(alpha, color="#b2182b", lw=0.8, ls=":", label=f"α = {alpha:g}")
    ax_p.set_xlabel(_VARIABLE_LABELS["p_value"] + " (log scale)", fontsize=8)
    ax_p.legend(fontsize=7, loc="best")
    handles = [
        Line2D([], [], marker="o", ls="", color=_MASCULINE_COLOR, label="A word left out"),
        Line2D([], [], marker="o", ls="", color=_FEMININE_COLOR, label="B word left out"),
        Line2D([], [], marker="o", ls="", color="#555555", markerfacecolor="white", label=f"p > {alpha:g}"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    attrs = ds.attrs
    fig.suptitle(
        title
        or f"Leave one attribute word out · {attrs.get('language', '')} · {attrs.get('method', '')} · "
        f"{attrs.get('alternative', '')}",
        fontsize=10,
    )
    return fig


def plot_forest(meta: Any, *, title: str = "") -> Figure:
    """Forest plot of a pooled effect size across languages (:func:`biasdask.meta_analysis`), drawn as
    metafor's ``forest()`` draws one.

    One row per language: its d as a square whose area is proportional to its weight in the pooled
    estimate (the heaviest at half the row spacing, so no square reaches the next row), and its interval
    drawn over the square, with end ticks, so that an interval shorter than its square still shows. An
    attribute-word spread (one attribute word a side: how far d moves when the attribute words are
    replaced by random words of their frequencies, not a confidence interval) is dashed. Below them the
    pooled estimate as a diamond spanning its confidence interval, and the prediction interval (where a
    new language's d would fall) as a line through it. τ², I² and Cochran's Q are written under the
    axis, and the meta-analysis's ``note`` under them. Languages are sorted by d.

    Parameters
    ----------
    meta : MetaAnalysis
        From :func:`biasdask.meta_analysis`.
    title : str
        Figure title (default: the test, the weighting and the model).
    """
    studies = meta.studies.sort_values("effect_size")
    pooled = meta.pooled
    n = len(studies)
    note = textwrap.fill(f"Note: {meta.note}.", 120) if getattr(meta, "note", "") else ""
    height = 1.9 + 0.3 * (n + 2) + 0.15 * note.count("\n") + (0.3 if note else 0.0)
    fig = Figure(figsize=(7.5, height), layout="constrained")
    ax = fig.subplots()
    y = np.arange(n, 0, -1, dtype=float) + 1.5
    d = studies["effect_size"].to_numpy(dtype=float)
    low = np.where(np.isfinite(studies["ci_low"]), studies["ci_low"], d - 1.96 * studies["se"])
    high = np.where(np.isfinite(studies["ci_high"]), studies["ci_high"], d + 1.96 * studies["se"])
    spread = (
        studies["variance"].to_numpy() == "attribute-word spread" if "variance" in studies else np.zeros(n, dtype=bool)
    )
    # the axis spans the languages' intervals and the pooled CI; a prediction interval beyond it (with few
    # languages its t has few degrees of freedom) is cut at the axis and ends in an arrow, as in metafor
    x_low, x_high = _forest_limits(np.r_[low, high, d, pooled.ci_low, pooled.ci_high])
    if np.isfinite(pooled.pi_low) and np.isfinite(pooled.pi_high):
        left, right = max(pooled.pi_low, x_low), min(pooled.pi_high, x_high)
        ax.hlines(0.5, left, right, color="#b2182b", lw=1.2, label="prediction interval")
        for end, cut, marker in ((left, pooled.pi_low < x_low, "<"), (right, pooled.pi_high > x_high, ">")):
            if cut:
                ax.plot([end], [0.5], marker=marker, ms=5, color="#b2182b", clip_on=False)
    diamond = np.array([[pooled.ci_low, 0.5], [pooled.estimate, 0.85], [pooled.ci_high, 0.5], [pooled.estimate, 0.15]])
    ax.add_patch(mpl.patches.Polygon(diamond, closed=True, color="#b2182b", zorder=4, label="pooled d and its CI"))
    ax.axvline(0, color="#888888", lw=0.8, ls="--")
    ax.set_yticks([*y, 0.5], [*studies.index, "pooled"], fontsize=8)
    ax.set_ylim(-0.2, n + 2.3)
    ax.set_xlim(x_low, x_high)
    ax.set_xlabel(
        f"effect size d ({100 * pooled.ci_level:.0f} % intervals)\n"
        f"pooled d = {pooled.estimate:.2f} [{pooled.ci_low:.2f}, {pooled.ci_high:.2f}], "
        f"prediction interval [{pooled.pi_low:.2f}, {pooled.pi_high:.2f}], "
        f"τ² = {pooled.tau2:.3g}, I² = {100 * pooled.i2:.0f} %, Q = {pooled.q:.1f} (df {pooled.df}, "
        f"p = {pooled.q_p_value:.2g})" + (f"\n{note}" if note else ""),
        fontsize=8,
    )
    ax.tick_params(axis="x", labelsize=8)
    model = f"{pooled.estimator}" + (", Hartung-Knapp" if pooled.hartung_knapp else "")
    ax.set_title(
        title or f"Test '{meta.test}' ({meta.method}): d per language and pooled (random effects, {model})", fontsize=10
    )
    handles, labels = ax.get_legend_handles_labels()
    handles.insert(
        0,
        Line2D(
            [],
            [],
            color="#252525",
            lw=1.1,
            marker="s",
            markerfacecolor="#92c5de",
            markeredgecolor="#2166ac",
            label="language: d (area ∝ weight) and its interval",
        ),
    )
    if spread.any():
        handles.insert(1, Line2D([], [], color="#252525", lw=1.1, ls="--", label="attribute-word spread"))
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncols=4, frameon=False)
    # the squares' sizes in points need the axes' final height: lay the figure out first
    fig.draw_without_rendering()
    row_points = abs(ax.transData.transform((0, 1))[1] - ax.transData.transform((0, 0))[1]) * 72.0 / fig.dpi
    weight = studies["weight"].to_numpy(dtype=float)
    side = 0.5 * row_points * np.sqrt(weight / max(float(weight.max()), 1e-12))  # area ∝ weight
    side = np.maximum(side, 2.5)
    ax.scatter(d, y, s=side**2, marker="s", color="#92c5de", edgecolors="#2166ac", linewidths=0.6, zorder=2)
    for kind, rows in (("interval", ~spread), ("attribute-word spread", spread)):
        if rows.any():
            style = "--" if kind != "interval" else "-"
            ax.hlines(y[rows], low[rows], high[rows], color="#252525", lw=1.1, linestyles=style, zorder=3)
            tick = 0.35 * row_points
            ends = np.r_[low[rows], high[rows]]
            ax.plot(ends, np.r_[y[rows], y[rows]], ls="", marker="|", ms=tick, color="#252525", zorder=3)
    return fig


def _forest_limits(values: np.ndarray) -> tuple[float, float]:
    """x limits holding every finite value with a margin of 5 %."""
    finite = values[np.isfinite(values)]
    lo, hi = float(finite.min()), float(finite.max())
    margin = 0.05 * (hi - lo or 1.0)
    return lo - margin, hi + margin


def plot_pvalue_calibration(pvalues: Mapping[str, ArrayLike], *, alpha: float = 0.05, title: str = "") -> Figure:
    """How p-values computed where the null hypothesis holds are distributed: the share of them at or below
    each level, against the level itself (a calibrated test follows the diagonal), over [0, 1] and over
    [0, 4α], with each series' rejection rate at ``alpha`` and the band a calibrated test's rate falls in
    (95 %, binomial) drawn at ``alpha``.

    Parameters
    ----------
    pvalues : mapping of str to array_like
        Label -> p-values of tests of true nulls (NaN left out), e.g. of random word pairs as A and B.
    alpha : float
        The level whose rejection rate is written in the legend.
    title : str
        Figure title.
    """
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    whole, zoom = fig.subplots(1, 2)
    colours = mpl.colormaps["tab10"].colors
    sizes = []
    for (label, values), colour in zip(pvalues.items(), colours):
        p = np.sort(np.asarray(values, dtype=np.float64))
        p = p[np.isfinite(p)]
        sizes.append(p.size)
        share = np.arange(1, p.size + 1) / p.size
        rate = float(np.mean(p <= alpha))
        for ax in (whole, zoom):
            ax.step(np.r_[0.0, p], np.r_[0.0, share], where="post", color=colour, lw=1.3, label=f"{label}: {rate:.1%}")
    for ax, top in ((whole, 1.0), (zoom, 4 * alpha)):
        ax.plot([0, top], [0, top], color="#888888", lw=0.8, ls="--")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top if ax is zoom else 1.0)
        ax.set_xlabel("level", fontsize=8)
        ax.tick_params(labelsize=8)
    if sizes:
        low, high = stats.binom.interval(0.95, max(sizes), alpha)
        zoom.vlines(alpha, low / max(sizes), high / max(sizes), color="#252525", lw=3, alpha=0.4)
    whole.set_ylabel("share of p-values at or below the level", fontsize=8)
    zoom.set_title(f"below {4 * alpha:g} (bar: where a calibrated test's rate falls at {alpha:g})", fontsize=8)
    whole.legend(fontsize=7, title=f"rejected at {alpha:g}", title_fontsize=7, loc="lower right")
    fig.suptitle(title or "p-values of tests whose null hypothesis holds", fontsize=10)
    return fig


def _interval_text(value: float, low: float, high: float) -> str:
    if not np.isfinite(value):
        return "–"
    bounds = f" [{low:.2f}, {high:.2f}]" if np.isfinite(low) and np.isfinite(high) else " [no interval]"
    return f"{value:.2f}{bounds}"


def plot_retest(cubes: Mapping[str, xr.Dataset], retest: xr.Dataset, *, test: str, method: str | None = None) -> Figure:
    """Test-retest of one test: each language's effect size d under one embedding against another.

    One panel per pair of embeddings (the pairs of ``retest``): a point per language with a finite d
    under both, labelled with its code, x its d under the first embedding, y under the second, and
    the identity line y = x (a language on it has the same d under both). A cloud along a rising line
    that is not the identity (shifted or tilted) keeps the languages' order but not their values: the
    correlations stay high while ICC(2,1) drops. Each panel's title gives Pearson's r and Spearman's ρ
    with their bootstrap intervals and n, as :func:`biasdask.retest_reliability` computed them (its
    ``note`` under the panel when it has one); both axes share one scale.

    Parameters
    ----------
    cubes : mapping of str to xarray.Dataset
        Embedding name -> its results cube (the children of the tree :func:`biasdask.open_results`
        reads from the results store of a study of several embeddings).
    retest : xarray.Dataset
        :func:`biasdask.retest_reliability` of those cubes.
    test : str
        The test label (``career_family``, ``gender.ripa``...).
    method : str, optional
        The weighting (default: the first of ``retest``); d is the same under every weighting.
    """
    tests = [str(t) for t in retest["test"].values]
    if test not in tests:
        raise KeyError(f"the test-retest figures have no test {test!r}; they have {', '.join(tests)}")
    method = str(retest["method"].values[0]) if method is None else method
    cell = retest.sel({"test": test, "method": method})
    pairs = [str(p) for p in retest["pair"].values]
    n = len(pairs)
    columns = min(n, 3)
    rows = -(-n // columns)
    fig = Figure(figsize=(4.3 * columns, 1.4 + 4.3 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False).ravel())
    d = {
        name: cube["effect_size"].sel({"test": test, "method": method}).to_series().rename(index=str)
        for name, cube in cubes.items()
    }
    notes: dict[str, list[str]] = {}
    for ax, pair in zip(axes, pairs):
        c = cell.sel({"pair": pair})
        first, second = str(c["first"].values), str(c["second"].values)
        both = np.intersect1d(d[first].index[np.isfinite(d[first])], d[second].index[np.isfinite(d[second])])
        x, y = d[first][both].to_numpy(dtype=float), d[second][both].to_numpy(dtype=float)
        ax.scatter(x, y, s=18, color="#2166ac", zorder=3)
        for code, xi, yi in zip(both, x, y):
            ax.annotate(
                code, (xi, yi), xytext=(3, 2), textcoords="offset points", fontsize=7, color="#333333", zorder=4
            )
        values = np.r_[x, y, 0.0]
        low, high = float(values.min()), float(values.max())
        pad = 0.08 * (high - low or 1.0)
        low, high = low - pad, high + pad
        ax.plot([low, high], [low, high], color="#888888", lw=0.9, ls="--", label="y = x (same d)", zorder=1)
        ax.axhline(0, color="#cccccc", lw=0.6, zorder=0)
        ax.axvline(0, color="#cccccc", lw=0.6, zorder=0)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        if str(c["note"].values):
            notes.setdefault(str(c["note"].values), []).append(pair)
        ax.set_xlabel(f"d under {first}", fontsize=8)
        ax.set_ylabel(f"d under {second}", fontsize=8)
        ax.tick_params(labelsize=7)
        pearson = _interval_text(*(float(c[f"pearson{e}"]) for e in ("", "_ci_low", "_ci_high")))
        spearman = _interval_text(*(float(c[f"spearman{e}"]) for e in ("", "_ci_low", "_ci_high")))
        ax.set_title(f"{first} vs {second} (n = {int(c['n'])})\nr = {pearson}\nρ = {spearman}", fontsize=8)
        if not x.size:
            ax.text(0.5, 0.5, "no language with d under both", transform=ax.transAxes, ha="center", color="#707070")
    for ax in axes[n:]:
        ax.set_visible(False)
    if notes:  # once for the pairs that share it
        text = "; ".join(f"{', '.join(p) if len(notes) > 1 else 'every pair'}: {note}" for note, p in notes.items())
        fig.supxlabel(textwrap.fill(f"Note ({text})", 40 * columns), fontsize=7, color="#8a4b00")
    level = 100 * float(retest.attrs.get("ci_level", 0.95))
    fig.suptitle(
        f"Test-retest of test '{test}': each language's d under two embeddings\n"
        f"Pearson's r and Spearman's ρ over languages, {level:g} % bootstrap intervals "
        f"({retest.attrs.get('ci_method', '')}, languages resampled); dashed: y = x",
        fontsize=9,
    )
    return fig


_EMBEDDING_COLORS = ("#2166ac", "#b2182b", "#1b7837", "#762a83", "#e08214", "#4d4d4d")


def plot_internal_consistency(cubes: Mapping[str, xr.Dataset] | xr.Dataset, *, reference: float = 0.7) -> Figure:
    """Internal consistency per language: Cronbach's α (filled dot) and the split-half reliability
    (open diamond) of each test's attribute words (or base pairs), a panel per test.

    The cube variables ``cronbach_alpha`` and ``split_half`` as a run stored them (the same under every
    weighting: the first weighting's are drawn). α treats the attribute words of A and B as items and
    the target words (the vocabulary, for base pairs) as cases; a value below ``reference`` (dotted,
    0.7 by the usual rule of thumb) says the words of a side do not measure one thing, and a finding
    can rest on a few of them. Several embeddings (a mapping of cubes) share each language's row,
    one colour each.

    Parameters
    ----------
    cubes : xarray.Dataset or mapping of str to xarray.Dataset
        A results cube, or embedding name -> cube.
    reference : float
        Where to draw the reference line.

    Raises
    ------
    ValueError
        No cube has α or a split-half reliability.
    """
    named = {"": cubes} if isinstance(cubes, xr.Dataset) else dict(cubes)
    tests = list(dict.fromkeys(t for cube in named.values() for t in consistency_tests(cube)))
    if not tests:
        raise ValueError("no Cronbach's alpha or split-half reliability in the results")
    languages = sorted({str(v) for cube in named.values() for v in cube["language"].values}, reverse=True)
    k = len(named)
    fig = Figure(
        figsize=(min(14.0, max(7.0, 1.5 + 4.2 * len(tests))), 1.9 + 0.24 * len(languages) * max(1, k / 2)),
        layout="constrained",
    )
    axes = fig.subplots(1, len(tests), sharey=True, squeeze=False).ravel()
    y = np.arange(len(languages), dtype=float)
    offsets = ((k - 1) / 2 - np.arange(k)) * (0.6 / max(k, 1))  # the first embedding on top
    lowest = 0.0
    for ax, test in zip(axes, tests):
        for j, cube in enumerate(named.values()):
            colour = _EMBEDDING_COLORS[j % len(_EMBEDDING_COLORS)]
            for variable, marker, face in (("cronbach_alpha", "o", colour), ("split_half", "D", "white")):
                if variable not in cube or test not in [str(t) for t in cube["test"].values]:
                    continue
                series = cube[variable].sel({"test": test}).isel(method=0).to_series().rename(index=str)
                values = series.reindex(languages).to_numpy(dtype=float)
                ok = np.isfinite(values)
                ax.scatter(
                    values[ok],
                    y[ok] + offsets[j],
                    marker=marker,
                    s=26 if marker == "o" else 20,
                    facecolors=face,
                    edgecolors=colour,
                    linewidths=1.0,
                    zorder=3,
                )
                if ok.any():
                    lowest = min(lowest, float(values[ok].min()))
        ax.axvline(reference, color="#555555", lw=0.9, ls=":", zorder=1)
        ax.axvline(0, color="#cccccc", lw=0.6, zorder=0)
        ax.set_title(f"test '{test}'", fontsize=9)
        ax.set_xlabel("reliability (1: the words agree fully)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", color="#eeeeee", lw=0.6)
    for ax in axes:
        ax.set_xlim(lowest - 0.05 * (1.05 - lowest), 1.05)
    axes[0].set_yticks(y, languages)
    axes[0].set_ylim(-0.6, len(languages) - 0.4)
    axes[0].set_ylabel("language")
    handles = [
        Line2D([], [], ls="", marker="o", color="#555555", label="Cronbach's α"),
        Line2D(
            [], [], ls="", marker="D", color="#555555", markerfacecolor="white", label="split-half (Spearman-Brown)"
        ),
        Line2D([], [], color="#555555", ls=":", label=f"{reference:g} (rule of thumb)"),
    ]
    if k > 1:
        handles += [
            Patch(color=_EMBEDDING_COLORS[j % len(_EMBEDDING_COLORS)], label=name) for j, name in enumerate(named)
        ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle("Internal consistency of the attribute words (or base pairs), per language", fontsize=10)
    return fig
