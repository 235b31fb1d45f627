"""Figures render headless (Agg), save as PNG, and say what they show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from biasdask import plot  # noqa: E402
from biasdask.stats.frequency import profile_by_frequency, profile_by_rank  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _save(fig, path):
    fig.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 2000
    return data


@pytest.fixture
def cube():
    """A results cube by hand: 3 languages × 2 methods × 2 tests, one test not run for 'fi', string coords
    as Zarr 3 gives them back (numpy StringDType)."""
    sdt = np.dtypes.StringDType()
    eff = np.array(
        [
            [[1.5, 0.2], [0.9, -0.1]],
            [[-0.7, 0.0], [-1.2, 0.3]],
            [[0.4, np.nan], [0.1, np.nan]],
        ]
    )
    p = np.where(np.isnan(eff), np.nan, 0.0001)
    return xr.Dataset(
        {"effect_size": (("language", "method", "test"), eff), "p_value": (("language", "method", "test"), p)},
        coords={
            "language": np.array(["en", "de", "fi"], dtype=sdt),
            "method": np.array(["uniform", "zipf"], dtype=sdt),
            "test": np.array(["gender", "weat6"], dtype=sdt),
        },
    )


@pytest.fixture(autouse=True)
def no_pyplot_figures_left():
    before = set(plt.get_fignums())
    yield
    assert set(plt.get_fignums()) == before, "a plot function left a figure registered in pyplot"


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_effect_heatmap_all_tests(cube, tmp_path):
    fig = plot.plot_effect_heatmap(cube)
    _save(fig, tmp_path / "heatmap.png")
    ax, cbar_ax = fig.axes
    assert len(ax.images) == 1
    assert ax.get_xlabel() == "test · method" and ax.get_ylabel() == "language"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["en", "de", "fi"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "gender · uniform",
        "gender · zipf",
        "weat6 · uniform",
        "weat6 · zipf",
    ]
    texts = _texts(ax)
    assert texts.count("not run") == 2
    assert "1.50" in texts and "-1.20" in texts and "0.00" in texts
    assert "effect size" in ax.get_title() and "all tests" in ax.get_title()
    assert cbar_ax.get_ylabel().startswith("effect size d")
    norm = ax.images[0].norm
    assert norm.vmin == -norm.vmax == pytest.approx(-1.5)  # diverging, centred on 0
    # Row fi, column weat6 · uniform is NaN: masked, drawn in the 'bad' colour.
    assert np.ma.is_masked(ax.images[0].get_array()[2, 2])


def test_effect_heatmap_one_test_and_p_values(cube, tmp_path):
    fig = plot.plot_effect_heatmap(cube, test="weat6")
    _save(fig, tmp_path / "weat6.png")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "method"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["uniform", "zipf"]
    assert _texts(ax) == ["0.20", "-0.10", "0.00", "0.30", "not run", "not run"]
    assert "weat6" in ax.get_title()

    fig = plot.plot_effect_heatmap(cube, variable="p_value", test="gender")
    ax, cbar_ax = fig.axes
    assert (ax.images[0].norm.vmin, ax.images[0].norm.vmax) == (0.0, 1.0)
    assert _texts(ax)[0] == "0.0001"  # small p-values are not rounded to 0.00
    assert "p-value" in cbar_ax.get_ylabel()

    with pytest.raises(KeyError, match="no test 'weat9'"):
        plot.plot_effect_heatmap(cube, test="weat9")
    with pytest.raises(KeyError, match="no variable 'z_score'"):
        plot.plot_effect_heatmap(cube, variable="z_score")


def test_effect_heatmap_collapses_a_variable_equal_for_every_weighting(cube, tmp_path):
    same = cube.assign(effect_size=cube.effect_size.isel(method=[0, 0]).assign_coords(method=cube.method.values))
    fig = plot.plot_effect_heatmap(same)
    _save(fig, tmp_path / "d.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["gender", "weat6"]
    assert ax.get_xlabel() == "test (the same for every weighting)"
    assert _texts(ax)[:2] == ["1.50", "0.20"]


def test_overview_shows_d_beside_z_of_every_weighting(tmp_path):
    sdt = np.dtypes.StringDType()
    langs = ["en", "fr", "de", "eu"]
    d = np.array([1.2, -0.4, 0.3, np.nan])
    z = np.array([[489.0, -3.1], [-25.0, -1.0], [12.0, 0.5], [np.nan, np.nan]])
    ds = xr.Dataset(
        {
            "effect_size": (("language", "method", "test"), np.repeat(d[:, None, None], 2, axis=1)),
            "z_score": (("language", "method", "test"), z[:, :, None]),
        },
        coords={
            "language": np.array(langs, dtype=sdt),
            "method": np.array(["uniform", "zipf"], dtype=sdt),
            "test": np.array(["gender"], dtype=sdt),
        },
    )
    fig = plot.plot_overview(ds)
    _save(fig, tmp_path / "overview.png")
    ax_d, ax_z = fig.axes
    # sorted by d, the language without a result at the bottom and marked
    assert [t.get_text() for t in ax_d.get_yticklabels()] == ["eu", "fr", "de", "en"]
    assert "not run" in _texts(ax_d)[0]
    assert [p.get_width() for p in ax_d.patches] == pytest.approx([0.0, -0.4, 0.3, 1.2])
    # z per weighting: en's s leans one way under uniform, the other way under zipf
    widths = {(round(p.get_y() + p.get_height() / 2, 3)): p.get_width() for p in ax_z.patches}
    assert sorted(widths.values()) == pytest.approx(sorted([0, 0, -25.0, -1.0, 12.0, 0.5, 489.0, -3.1]))
    assert ax_z.get_xscale() == "symlog" and ax_z.get_xlim()[1] > 489
    assert "z = (s − E s) / SD s" in ax_z.get_xlabel() and "ddof = 1" in ax_d.get_xlabel()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["uniform", "zipf"]
    # every label inside the figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = fig.bbox
    renderer = canvas.get_renderer()
    for text in [*ax_d.get_yticklabels(), ax_d.xaxis.label, ax_z.xaxis.label, fig._suptitle]:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1 and extent.y0 >= box.y0 - 1, text.get_text()


@pytest.mark.parametrize(("z_max", "expected"), [(4.16, [2, 5]), (61.0, [2, 5, 10, 20, 50]), (489.0, [2, 10, 100])])
def test_overview_z_axis_is_readable_beyond_the_linear_range(tmp_path, z_max, expected):
    """A z of -4.16 (real cc vectors) must be readable off the symlog axis: ticks beyond +-2 too."""
    sdt = np.dtypes.StringDType()
    ds = xr.Dataset(
        {
            "effect_size": (("language", "method", "test"), np.array([[[0.5]], [[-0.2]]])),
            "z_score": (("language", "method", "test"), np.array([[[z_max]], [[-1.0]]])),
        },
        coords={
            "language": np.array(["en", "fr"], dtype=sdt),
            "method": np.array(["uniform"], dtype=sdt),
            "test": np.array(["gender"], dtype=sdt),
        },
    )
    ax_z = plot.plot_overview(ds).axes[1]
    ticks = [t for t in ax_z.get_xticks() if t > 0]
    assert ticks == expected
    assert sorted(-t for t in ax_z.get_xticks() if t < 0) == expected


def test_null_distribution_with_statistic_on_scale(tmp_path):
    rng = np.random.default_rng(0)
    null = rng.normal(1.0, 2.0, size=999)
    fig = plot.plot_null_distribution(null, 5.5, z_score=2.25, p_value=0.012, title="weat6 · en · uniform", bins=40)
    _save(fig, tmp_path / "null.png")
    (ax,) = fig.axes
    assert ax.get_xlabel().startswith("test statistic s = Σ t(X) − Σ t(Y) (units") and ax.get_ylabel().startswith(
        "density"
    )
    assert ax.get_title() == "weat6 · en · uniform"
    assert len(ax.patches) == 40  # histogram bars
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == "sampled null (999 permutations)"
    assert legend[1].startswith("normal curve") and f"SD {null.std(ddof=1):.3g}" in legend[1]
    assert legend[2] == "observed s = 5.5"
    vlines = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [5.5, 5.5]]
    assert len(vlines) == 1
    curve = next(ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2)
    # The curve is the normal density with the null's mean and SD.
    xs, ys = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
    peak = xs[np.argmax(ys)]
    assert abs(peak - null.mean()) < 0.1
    assert ys.max() == pytest.approx(1 / (null.std(ddof=1) * np.sqrt(2 * np.pi)), rel=1e-3)
    assert "z = 2.25\np = 0.012" in _texts(ax)
    lo, hi = ax.get_xlim()
    assert lo < null.min() and hi > 5.5


def test_null_distribution_with_statistic_far_in_the_tail(tmp_path):
    rng = np.random.default_rng(1)
    null = rng.normal(0.0, 1.0, size=500)
    fig = plot.plot_null_distribution(null, 80.0)
    _save(fig, tmp_path / "tail.png")
    (ax,) = fig.axes
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[-1] == "observed s = 80 (off scale, right)"
    assert ax.get_xlim()[1] < 10  # the axis stays on the null instead of squashing it
    assert any(t.startswith("s = 80") for t in _texts(ax))
    assert ax.get_title() == "Permutation null distribution"
    with pytest.raises(ValueError, match="empty"):
        plot.plot_null_distribution(np.array([np.nan]), 1.0)


def test_frequency_profile_panels(tmp_path):
    rng = np.random.default_rng(2)
    profiles = {}
    for i, lang in enumerate(["en", "de", "es", "fi", "hi"]):
        n = 20_000 + 1000 * i
        u = rng.normal(0, 0.05, n) + 0.01 * (i - 2) * np.log10(np.arange(1, n + 1))
        profiles[lang] = profile_by_rank(u)
    fig = plot.plot_frequency_profile(profiles, score_label="u")
    _save(fig, tmp_path / "freq.png")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5 and len(fig.axes) == 6  # 3 columns × 2 rows, the last one hidden
    for i, (ax, (lang, prof)) in enumerate(zip(visible, profiles.items())):
        assert ax.get_title().startswith(lang) and f"{prof.count.sum():,} words" in ax.get_title()
        assert ax.get_yscale() == "linear"
        # axis titles once: y on the first column, x under the last panel of each column (fi, hi and es)
        assert ax.get_ylabel() == ("mean u" if i % 3 == 0 else "")
        assert ax.get_xlabel().startswith("frequency rank bin") if lang in ("fi", "hi", "es") else ax.get_xlabel() == ""
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels[0] == "1–10" and labels[-1].startswith("10k–") and len(labels) == prof.n_bins
        (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        np.testing.assert_allclose(bars.lines[0].get_ydata(), prof.mean)
        assert _texts(ax) == [f"{d:.2f}".replace("-0.00", "0.00") for d in prof.effect_size]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["mean ± 1 SD", "effect size = mean / SD per bin (numbers at the top)"]
    assert fig.get_suptitle() == "Bias u against word frequency"


def test_frequency_profile_by_observed_frequency(tmp_path):
    rng = np.random.default_rng(3)
    n = 5000
    freqs = 1e7 / np.arange(1, n + 1)
    prof = profile_by_frequency(rng.normal(size=n), freqs, step=0.5)
    fig = plot.plot_frequency_profile({"en": prof}, score_label="t (zipf)", title="observed frequency")
    _save(fig, tmp_path / "obs.png")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "observed frequency bin (log10)"
    assert ax.get_ylabel() == "mean t (zipf)"
    assert fig.get_suptitle() == "observed frequency"
    assert len(ax.get_xticklabels()) == prof.n_bins
    with pytest.raises(ValueError, match="no profiles"):
        plot.plot_frequency_profile({})


def test_frequency_profile_of_zipf_weighted_scores_shows_every_bin(tmp_path):
    """t = Z(rank) u shrinks by a decade per rank decade: a linear axis of means would flatten all bins but
    two, so each bin's share of s is drawn, on one linear scale whose bars a reader can compare."""
    rng = np.random.default_rng(4)
    n = 200_000
    rank = np.arange(1, n + 1)
    t = (1 / rank) / np.sum(1 / rank) * (0.05 + rng.normal(0, 0.05, n))
    prof = profile_by_rank(t)
    fig = plot.plot_frequency_profile({"en": prof})
    _save(fig, tmp_path / "zipf.png")
    (ax,) = fig.axes
    assert ax.get_yscale() == "linear" and "share of s (%)" in ax.get_ylabel()
    heights = np.array([bar.get_height() for bar in ax.patches])
    contribution = prof.mean * prof.count  # an oracle from the profile itself: the bin sums of t
    np.testing.assert_allclose(heights, 100 * contribution / np.abs(contribution).sum(), rtol=1e-12)
    # every bin is visible: the smallest share is more than 1 % of the axis (a mean of t would be ~1e-5 of it)
    low, high = ax.get_ylim()
    assert np.abs(heights).min() > 0.01 * (high - low)
    np.testing.assert_allclose(contribution.sum(), t.sum(), rtol=1e-9)


def test_effect_heatmap_says_why_a_cell_is_empty(cube, tmp_path):
    """An empty cell is labelled from its note: not applicable, coverage, ..., and 'not run' only when
    it has not been run."""
    notes = np.full(cube["effect_size"].shape, "", dtype=object)
    notes[2, 0, 1] = "not applicable: test weat6 has no word lists for language fi"
    notes[2, 1, 1] = "coverage: weat6 (fi) skipped: coverage below 80%"
    fig = plot.plot_effect_heatmap(cube.assign(note=(("language", "method", "test"), notes)), test="weat6")
    _save(fig, tmp_path / "why.png")
    assert _texts(fig.axes[0])[-2:] == ["n/a", "coverage"]


def test_frequency_profile_panels_of_both_bin_kinds_each_name_their_axis():
    rng = np.random.default_rng(5)
    by_rank = profile_by_rank(rng.normal(size=3000))
    by_freq = profile_by_frequency(rng.normal(size=3000), 1e7 / np.arange(1, 3001), step=0.5)
    fig = plot.plot_frequency_profile({"en": by_rank, "de": by_freq})
    top, bottom = [ax for ax in fig.axes if ax.get_visible()]
    assert top.get_xlabel().startswith("frequency rank bin") and bottom.get_xlabel() == "observed frequency bin (log10)"


@pytest.mark.parametrize("n_languages", [3, 26])
def test_forest_squares_are_sized_by_weight_under_a_cap_and_every_interval_shows(tmp_path, n_languages):
    """As metafor's forest(): a square's area is proportional to its weight, the heaviest half a row high
    (so no square reaches the next row however τ² evens the weights), and each interval is drawn over
    its square with end ticks, so an interval shorter than its square (zh, ru in the demo) still shows."""
    import biasdask

    rng = np.random.default_rng(3)
    codes = [f"l{i:02d}" for i in range(n_languages)]
    d = rng.normal(0.5, 0.8, n_languages)
    se = rng.uniform(0.005, 0.3, n_languages)  # some intervals far shorter than any square
    dims = ("language", "method", "test")
    cube = xr.Dataset(
        {
            "effect_size": (dims, d[:, None, None]),
            "effect_size_se": (dims, se[:, None, None]),
            "effect_size_ci_low": (dims, (d - 1.96 * se)[:, None, None]),
            "effect_size_ci_high": (dims, (d + 1.96 * se)[:, None, None]),
        },
        coords={"language": codes, "method": ["uniform"], "test": ["gender"]},
    )
    meta = biasdask.meta_analysis(cube, test="gender")
    fig = plot.plot_forest(meta)
    _save(fig, tmp_path / "forest.png")
    ax = fig.axes[0]
    from matplotlib.collections import LineCollection, PathCollection

    squares = next(c for c in ax.collections if isinstance(c, PathCollection))
    side = np.sqrt(squares.get_sizes())  # points
    row = abs(ax.transData.transform((0, 1))[1] - ax.transData.transform((0, 0))[1]) * 72 / fig.dpi
    assert 0.49 * row <= side.max() <= 0.51 * row  # the cap: half the row spacing (as laid out when saved)
    order = np.argsort(meta.studies["effect_size"].to_numpy(), kind="stable")
    weight = meta.studies["weight"].to_numpy()[order]
    free = side > 2.5 + 1e-9  # the smallest squares are kept visible at 2.5 points
    np.testing.assert_allclose(side[free] ** 2 / side[free].max() ** 2, weight[free] / weight.max(), rtol=1e-9)
    intervals = [c for c in ax.collections if isinstance(c, LineCollection) and c.get_zorder() > squares.get_zorder()]
    drawn = np.concatenate([np.asarray(seg)[:, :, 0] for c in intervals for seg in [c.get_segments()]])
    assert len(drawn) == n_languages  # every language's interval, over the squares
    lows = np.sort(drawn.min(axis=1))
    np.testing.assert_allclose(lows, np.sort(meta.studies["ci_low"].to_numpy()), rtol=1e-12)
    plt.close(fig)
