"""What ``biasdask show`` prints and ``biasdask plot`` draws, from a results store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from biasdask.errors import BiasdaskError


def format_results(results: xr.Dataset) -> str:
    """Readable tables: per test, one row per language and (effect size, z, p) per method.

    Cells that were not run show as ``-``. p is the permutation p-value (``exact`` ones are marked
    with ``*``); z and p(normal) are the normal approximation of SPEC §1.
    """
    blocks = []
    for test in results["test"].values:
        cube = results.sel({"test": test})
        frames = {}
        for method in cube["method"].values:
            cell = cube.sel({"method": method})
            p = cell["p_value"].values
            exact = cell["exact"].values.astype(bool)
            frames[str(method)] = pd.DataFrame(
                {
                    "d": cell["effect_size"].values,
                    "z": cell["z_score"].values,
                    "p": [_p(v, e) for v, e in zip(p, exact)],
                    "p(normal)": cell["p_value_normal"].values,
                },
                index=pd.Index([str(x) for x in cube["language"].values], name="language"),
            )
        table = pd.concat(frames, axis=1)
        text = table.to_string(
            float_format=lambda v: f"{v:.3g}",
            na_rep="-",
        )
        blocks.append(f"test: {test}  (d = effect size, ddof {results.attrs.get('sd_ddof', 1)}; "
                      f"alternative: {results.attrs.get('alternative', '?')})\n{text}")
    return "\n\n".join(blocks)


def _p(value: float, exact: bool) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{value:.3g}" + ("*" if exact else "")


def write_plots(
    results_url: str,
    out_dir: str | Path,
    *,
    cell: tuple[str, str, str] | None = None,
    storage_options: dict | None = None,
) -> list[Path]:
    """Write the figures of a results store as PNG files and return their paths.

    - ``effect_sizes.png``: language × (method, test) heatmap of effect sizes;
    - ``null_<lang>_<method>_<test>.png``: the sampled null distribution of one cell (default: the first
      cell that has a stored null) with its observed statistic;
    - ``frequency_profile_u.png`` and ``frequency_profile_t_<method>.png`` (for every method but
      ``uniform``, whose t is u): per language, the mean bias per log10-rank bin (seed 003, Figure 1),
      when the store holds per-word scores.
    """
    from biasdask import plot
    from biasdask.errors import IncompleteStoreError
    from biasdask.io.results import open_results, read_null

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = open_results(results_url, storage_options=storage_options)
    paths = []
    fig = plot.plot_effect_heatmap(results)
    paths.append(_save(fig, out / "effect_sizes.png"))
    cells = [cell] if cell else [
        (str(lang), str(m), str(t))
        for lang in results["language"].values
        for m in results["method"].values
        for t in results["test"].values
    ]
    for lang, method, test in cells:
        try:
            values = results.sel({"language": lang, "method": method, "test": test})
        except KeyError:
            raise BiasdaskError(f"--cell: no cell ({lang}, {method}, {test}) in {results_url}") from None
        if not np.isfinite(float(values["statistic"])):
            if cell:
                raise BiasdaskError(f"--cell: cell ({lang}, {method}, {test}) of {results_url} was not run")
            continue
        try:
            null = read_null(results_url, lang, method, test, storage_options=storage_options)
        except IncompleteStoreError:
            if cell:
                raise
            continue
        fig = plot.plot_null_distribution(
            null,
            float(values["statistic"]),
            z_score=float(values["z_score"]),
            p_value=float(values["p_value"]),
            title=f"{lang} · {method} · {test}",
        )
        paths.append(_save(fig, out / f"null_{lang}_{method}_{test}.png"))
        break
    from biasdask.engine.analyses import frequency_profiles

    profiles = frequency_profiles(results_url, storage_options=storage_options)
    if profiles:
        # t of "uniform" is u itself: its figure would repeat frequency_profile_u.png
        for score in ["u", *(f"t_{m}" for m in results["method"].values if m != "uniform")]:
            fig = plot.plot_frequency_profile(profiles, score=score, title="bias by frequency rank")
            paths.append(_save(fig, out / f"frequency_profile_{score}.png"))
    return paths


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)  # constrained layout already fits everything; "tight" would draw twice
    plt.close(fig)
    return path
