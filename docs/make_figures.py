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
    """Copy the heatmap, the first null distribution and the u frequency profile of a demo run."""
    plots = demo_dir / "plots"
    (null,) = sorted(plots.glob("null_*.png"))[:1]
    for src, name in [
        (plots / "effect_sizes.png", "effect_sizes.png"),
        (null, "null_distribution.png"),
        (plots / "frequency_profile_t_zipf.png", "frequency_profile.png"),
    ]:
        shutil.copyfile(src, IMG / name)


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
    fig.savefig(IMG / "gender_forms.png", dpi=120, bbox_inches="tight")


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
    print(f"figures written to {IMG}")


if __name__ == "__main__":
    main()
