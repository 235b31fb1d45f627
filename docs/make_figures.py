"""Regenerate the figures the README and the documentation show (docs/img/*.png).

Runs ``biasdask demo`` (or reuses a finished demo directory) for the overview (d beside z per
weighting), the least normal null distribution, the Zipf-weighted frequency profile, the forest plot of
the pooled d and a screenshot of the HTML report (headless Chromium); the BAD test and MWEAT on the
Spanish Common Crawl IAT vectors of the reference data (``$BIASDASK_SHARED/data``) for the
masculine/feminine form figure; and the calibration of the placebo p-values (of d and of s) over random
word pairs of the reference data's GloVe vectors::

    python docs/make_figures.py [--demo biasdask-demo] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from biasdask import Resampling

IMG = Path(__file__).resolve().parent / "img"


def demo_figures(demo_dir: Path) -> None:
    """The overview and the least normal null of a demo run, t (zipf) by rank for 8 languages, the report."""
    from biasdask import meta_analysis, plot
    from biasdask.engine.frequency import frequency_profiles
    from biasdask.io.results import open_results, read_null
    from biasdask.report import least_normal_cell, write_report

    url = str(demo_dir / "results.zarr")
    results = open_results(url)
    plot.plot_overview(results).savefig(IMG / "overview.png", dpi=90)
    (cell, distance) = least_normal_cell(url)
    values = results.sel(dict(zip(("language", "method", "test"), cell)))
    fig = plot.plot_null_distribution(
        read_null(url, *cell),
        float(values["statistic"]),
        z_score=float(values["z_score"]),
        p_value=float(values["p_value"]),
        title=f"Demo: {' · '.join(cell)}, the least normal null (KS distance {distance:.2f})",
    )
    fig.savefig(IMG / "null_distribution.png", dpi=100)
    profiles = frequency_profiles(url)
    some = {code: profiles[code] for code in ["en", "de", "fr", "ja", "ru", "es", "zh", "hi"]}
    fig = plot.plot_frequency_profile(
        some, score="t_zipf", title="Demo: Zipf-weighted bias t by frequency rank (8 of 26 languages)"
    )
    fig.savefig(IMG / "frequency_profile.png", dpi=90)
    plot.plot_forest(meta_analysis(results, test="gender")).savefig(IMG / "forest.png", dpi=90)
    page = write_report(url, demo_dir / "report")
    screenshot(page, IMG / "report.png")


def screenshot(page: Path, png: Path) -> None:
    """The top of an HTML page as headless Chromium renders it (sorted by d, largest first)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no chromium to screenshot the report with (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                f"--screenshot={png}",
                page.as_uri() + "#sort=d:desc",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def gender_form_figure(shared: Path, workdir: Path) -> None:
    """BAD and MWEAT on the Spanish IAT forms (the BAD test and MWEAT of Zhou et al. 2019), drawn side by side."""
    import biasdask
    from biasdask import plot
    from biasdask.engine import grammatical

    url = str(workdir / "es.zarr")
    biasdask.ingest(str(shared / "data" / "iat" / "cc" / "es.vec"), url, language="es", client=False, progress=False)
    forms = grammatical.iat_gender_forms("es")
    results = {
        "es · BAD": grammatical.bad_test(url, forms.targets, forms.attributes),
        "es · MWEAT": grammatical.mweat_test(url, forms.targets, forms.male, forms.female),
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
    sens = biasdask.attribute_sensitivity(url, a, b, progress=False, resampling=Resampling(n_permutations=9999, seed=1))
    fig = plot.plot_attribute_sensitivity(
        sens, title="French IAT words (Common Crawl fastText, 44-word vocabulary): leave one attribute word out"
    )
    fig.savefig(IMG / "attribute_sensitivity.png", dpi=100)


def calibration_figures(shared: Path, workdir: Path, pairs: int = 200) -> None:
    """The placebo p of d and of s over ``pairs`` random pairs of non-gendered GloVe words as A and B (true
    nulls: nothing sets them apart but chance), beside the dummy-language p, for both weightings."""
    import numpy as np

    import biasdask
    from biasdask import plot
    from biasdask.engine.placebo import gendered_words

    store = str(workdir / "glove.zarr")
    source = shared / "data" / "embeddings" / "glove840B_weat1_weat7_wefat1.txt"
    biasdask.ingest(str(source), store, language="en", client=False, progress=False)
    emb = biasdask.open_embeddings(store)
    neutral = [str(w) for w in emb["word"].values if str(w) not in gendered_words("en")]
    rng = np.random.default_rng(2024)
    found: dict[tuple[str, str], list[float]] = {}
    for method in ("uniform", "zipf"):
        for _ in range(pairs):
            a, b = rng.choice(neutral, size=2, replace=False)
            options = Resampling(n_permutations=199, seed=int(rng.integers(2**31)), placebo=199)
            res = biasdask.full_vocabulary_test(
                emb, [a], [b], method=method, exclude_attributes=True, resampling=options
            )
            for kind, p in (("dummy", res.pvalue), ("d", res.p_value_placebo), ("s", res.p_value_placebo_statistic)):
                found.setdefault((kind, method), []).append(p)
    for kind in ("d", "s"):
        series = {
            f"{label}, {name}": found[(key, method)]
            for key, label in (("dummy", "dummy language"), (kind, f"placebo p of {kind}"))
            for method, name in (("uniform", "uniform"), ("zipf", "Zipf"))
        }
        fig = plot.plot_pvalue_calibration(
            series,
            title=f"Placebo p of {kind}: {pairs} random pairs of non-gendered words as A and B "
            f"(GloVe 840B reference vectors, {emb.sizes['word']} words)",
        )
        fig.savefig(IMG / f"placebo_calibration_{kind}.png", dpi=90)


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
        calibration_figures(args.shared, Path(tmp))
    print(f"figures written to {IMG}")


if __name__ == "__main__":
    main()
