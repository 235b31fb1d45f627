"""Regenerate the figures the README shows (docs/img/*.png).

Runs ``biasdask demo`` (or reuses a finished demo directory) for the effect-size heatmap, a null
distribution and the frequency profile, and the BAD test and MWEAT on the Spanish Common Crawl IAT
vectors of ``../shared/data`` for the masculine/feminine form figure::

    python docs/make_figures.py [--demo biasdask-demo] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

IMG = Path(__file__).resolve().parent / "img"


def demo_figures(demo_dir: Path) -> None:
    """Copy the heatmap of a demo run; draw the null of one cell and u by rank for 8 languages."""
    from biasdask import plot
    from biasdask.engine.analyses import frequency_profiles

    from biasdask.io.results import open_results, read_null

    url = str(demo_dir / "results.zarr")
    shutil.copyfile(demo_dir / "plots" / "effect_sizes.png", IMG / "effect_sizes.png")
    # ru has the weakest planted direction: its statistic falls inside the null, unlike most cells
    cell = {"language": "ru", "method": "zipf", "test": "gender"}
    values = open_results(url).sel(cell)
    fig = plot.plot_null_distribution(read_null(url, *cell.values()), float(values["statistic"]),
                                      z_score=float(values["z_score"]), p_value=float(values["p_value"]),
                                      title="Demo: ru · zipf · gender")
    fig.savefig(IMG / "null_distribution.png", dpi=100)
    profiles = frequency_profiles(url)
    some = {code: profiles[code] for code in ["en", "de", "fr", "ja", "ru", "es", "zh", "hi"]}
    fig = plot.plot_frequency_profile(some, score="u", title="Demo: bias u by frequency rank (8 of 26 languages)")
    fig.savefig(IMG / "frequency_profile.png", dpi=100)


def gender_form_figure(shared: Path, workdir: Path) -> None:
    """BAD and MWEAT on the Spanish IAT forms (seed 004), drawn side by side."""
    import biasdask
    from biasdask import plot
    from biasdask.engine import analyses

    url = str(workdir / "es.zarr")
    biasdask.ingest(str(shared / "data" / "iat" / "cc" / "es.vec"), url, language="es", client=False, progress=False)
    forms = analyses.iat_gender_forms("es")
    results = {
        "es · BAD": analyses.bad_test(url, forms.targets, forms.attributes),
        "es · MWEAT": analyses.mweat_test(url, forms.targets, forms.male, forms.female),
    }
    fig = plot.plot_gender_form_bias(results, title="Spanish career/family IAT words (Common Crawl fastText)")
    fig.savefig(IMG / "gender_forms.png", dpi=100)


def sensitivity_figure(shared: Path, workdir: Path) -> None:
    """French full-vocabulary test with the IAT's eight words per side, each left out in turn."""
    import biasdask
    from biasdask import plot
    from biasdask.lexicon import iat_attribute_terms

    url = str(workdir / "fr.zarr")
    biasdask.ingest(str(shared / "data" / "iat" / "cc" / "fr.vec"), url, language="fr", client=False, progress=False)
    a, b = iat_attribute_terms("cc", "fr")
    sens = biasdask.attribute_sensitivity(url, a, b, n_permutations=9999, seed=1, progress=False)
    fig = plot.plot_attribute_sensitivity(sens, title="French IAT words (Common Crawl fastText, 44-word vocabulary): "
                                                      "leave one attribute word out")
    fig.savefig(IMG / "attribute_sensitivity.png", dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, help="a finished `biasdask demo` output directory (default: run one)")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("BIASDASK_SHARED", "../shared")))
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        demo_dir = args.demo
        if demo_dir is None:
            from biasdask.demo import demo

            demo_dir = Path(tmp) / "demo"
            demo(demo_dir)
        demo_figures(demo_dir)
        gender_form_figure(args.shared, Path(tmp))
        sensitivity_figure(args.shared, Path(tmp))
    print(f"figures written to {IMG}")


if __name__ == "__main__":
    main()
