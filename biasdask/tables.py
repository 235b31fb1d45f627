"""The results cube as tables: the one registry of columns that ``biasdask show``, the HTML report and
:func:`cube_table` share, and the formats they are printed in (aligned text, CSV, Markdown, LaTeX with
booktabs rules, JSON).

Numbers keep their full precision in ``csv`` and ``json``; the printed formats round them for reading
(d to two decimals, z to one, p to two significant digits) and write a sampled p-value at its floor
1/(m + 1) as a bound (``≤ 1e-4``): no p-value below it can be observed with m permutations.

The normal tail of a printed p imports scipy.stats when it is first needed: its import takes seconds,
which every ``biasdask`` command (this module gives the CLI its formats and columns) would wait for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from biasdask.engine.placebo import is_spread
from biasdask.errors import BiasdaskError
from biasdask.io.store import INGEST_COUNTS, StoreDescription

__all__ = [
    "COLUMNS",
    "Column",
    "FORMATS",
    "cube_table",
    "empty_reason",
    "format_agreement",
    "format_embeddings",
    "format_retest",
    "format_store_info",
    "format_table",
    "format_words",
    "store_info_rows",
    "leaning",
    "p_text",
    "parse_columns",
    "parse_selection",
    "printed_cells",
    "select",
    "spreadsheet_safe",
    "visible",
    "word_list_family",
    "Format",
    "Kind",
]

Format = Literal["table", "csv", "markdown", "latex", "json"]
FORMATS: tuple[str, ...] = ("table", "csv", "markdown", "latex", "json")
Kind = Literal["number", "d", "z", "p", "count", "flag", "text", "share"]


@dataclass(frozen=True)
class Column:
    """One column of the cube's tables.

    Attributes
    ----------
    key
        Its name in :func:`cube_table`, in ``--columns`` and in CSV and JSON output.
    variable
        The cube variable it shows (empty for a derived column).
    header
        Its heading in the printed formats.
    kind
        How it is printed: ``number`` (3 significant digits), ``d`` (2 decimals), ``z`` (1 decimal),
        ``p`` (a p-value, bounded at its floor), ``count``, ``flag``, ``share`` (a percentage), ``text``.
    description
        What it holds, as the report's legend and ``--help`` say.
    printed
        Shown by the printed formats when no ``columns`` are chosen (CSV and JSON give every column).
    """

    key: str
    variable: str
    header: str
    kind: Kind
    description: str
    printed: bool = True


COLUMNS: tuple[Column, ...] = (
    Column("s", "statistic", "s", "number", "statistic"),
    Column("d", "effect_size", "d", "d", "effect size (sample SD, ddof 1)"),
    Column(
        "d_ci",
        "",
        "d CI",
        "text",
        "confidence interval of d at ci_level (a bootstrap: of the target words' scores, or of the attribute words)",
    ),
    Column(
        "d_spread",
        "",
        "d spread",
        "text",
        "attribute-word spread of d at ci_level (one attribute word a side): how far d moves when the attribute "
        "words are replaced by random words of their frequencies; not a confidence interval",
    ),
    Column("ci_low", "effect_size_ci_low", "d low", "d", "lower end of d's interval (CI or spread)", printed=False),
    Column("ci_high", "effect_size_ci_high", "d high", "d", "upper end of d's interval (CI or spread)", printed=False),
    Column("se", "effect_size_se", "SE(d)", "number", "standard error of d (or the spread's SD)", printed=False),
    Column("ci_level", "ci_level", "level", "number", "level of d's interval", printed=False),
    Column("ci_method", "ci_method", "interval", "text", "how d's interval was made", printed=False),
    Column(
        "d_w",
        "effect_size_weighted",
        "d (weighted)",
        "d",
        "weighted effect size under the cell's weighting (sign of s)",
    ),
    Column("z", "z_score", "z", "z", "s in SDs of its permutation null"),
    Column("p", "p_value", "p", "p", "permutation p-value (*: every split enumerated; ≤: at its floor 1/(m+1))"),
    Column("p_adj", "p_value_adjusted", "p (adj.)", "p", "p corrected over the languages of its test and weighting"),
    Column(
        "p_placebo",
        "p_value_placebo",
        "p (placebo)",
        "p",
        "placebo p: d against the d of random word pairs of the attribute words' frequencies",
    ),
    Column("p_placebo_adj", "p_value_placebo_adjusted", "p (placebo, adj.)", "p", "the placebo p, corrected like p"),
    Column("z_placebo", "z_placebo", "z (placebo)", "z", "d in SDs of the placebo pairs' d"),
    Column(
        "p_placebo_s",
        "p_value_placebo_statistic",
        "p (placebo, s)",
        "p",
        "s against the placebo pairs' s (s grows with the distance between the attribute words)",
        printed=False,
    ),
    Column(
        "z_placebo_s", "z_placebo_statistic", "z (placebo, s)", "z", "s in SDs of the placebo pairs' s", printed=False
    ),
    Column(
        "d_percentile",
        "effect_size_placebo_percentile",
        "d %ile",
        "number",
        "d's percentile among the placebo pairs' d",
    ),
    Column("n_placebo", "n_placebo", "P", "count", "placebo pairs drawn", printed=False),
    Column(
        "rank_ratio",
        "placebo_rank_ratio",
        "rank ratio",
        "number",
        "largest factor between a placebo word's frequency rank and its attribute word's",
        printed=False,
    ),
    Column(
        "windows", "placebo_windows", "placebo windows", "text", "each attribute word's window of ranks", printed=False
    ),
    Column("exact", "exact", "exact", "flag", "every split was enumerated", printed=False),
    Column("p_normal", "p_value_normal", "p(normal)", "p", "p of z, normal approximation"),
    Column(
        "log10_p_normal",
        "",
        "log10 p(normal)",
        "number",
        "log10 of p(normal), finite where it underflows",
        printed=False,
    ),
    Column(
        "alpha",
        "cronbach_alpha",
        "alpha",
        "number",
        "Cronbach's alpha of the attribute words (or base pairs) as items",
        printed=False,
    ),
    Column(
        "split_half",
        "split_half",
        "split-half",
        "number",
        "split-half reliability of the attribute words (Spearman-Brown corrected)",
        printed=False,
    ),
    Column("N_x", "n_x", "N", "count", "words in X (or the vocabulary)"),
    Column("N_y", "n_y", "N_y", "count", "words in Y", printed=False),
    Column("permutations", "n_permutations", "m", "count", "permutations drawn or enumerated", printed=False),
    Column("alternative", "alternative", "alternative", "text", "alternative hypothesis"),
    Column("t_method", "t_method", "t method", "text", "method weighting t (none for classic tests)", printed=False),
    Column("association", "u_association", "association", "text", "per-word association u", printed=False),
    Column(
        "sets",
        "word_sets",
        "word sets",
        "text",
        "source of the word sets (weat7, xweat7:de, iat:..., weathub.weat7:ar)",
    ),
    Column("coverage", "target_coverage", "coverage", "share", "target words found"),
    Column("X", "target_words_x", "X", "text", "target words of X used"),
    Column("Y", "target_words_y", "Y", "text", "target words of Y used"),
    Column("A", "attribute_words_a", "A", "text", "attribute words of A used"),
    Column("B", "attribute_words_b", "B", "text", "attribute words of B used"),
    Column("missing_targets", "missing_target_words", "missing targets", "text", "target words absent"),
    Column("missing", "missing_attribute_words", "missing", "text", "attribute words absent"),
    Column("note", "note", "note", "text", "why a cell is empty, or a warning"),
)
_BY_KEY = {c.key: c for c in COLUMNS}
_INTERVALS = ("d_ci", "d_spread")  # text columns whose meaning the legends state
_TRUNCATE = 32  # characters of a word list in the aligned text table


def _log10_tail(z: float, alternative: str) -> float:
    """log10 of the normal tail probability of z for a resolved alternative, finite far beyond underflow."""
    from scipy.stats import norm

    if not np.isfinite(z) or alternative not in ("greater", "less", "two-sided"):
        return math.nan
    if alternative == "greater":
        log_p = norm.logsf(z)
    elif alternative == "less":
        log_p = norm.logcdf(z)
    else:
        log_p = min(0.0, math.log(2.0) + norm.logsf(abs(z)))
    return float(log_p / math.log(10.0))


def cube_table(results: xr.Dataset) -> pd.DataFrame:
    """The cube as a long table: one row per (language, test, method) cell, in cube order.

    One column per entry of :data:`COLUMNS` (variables a cube lacks, e.g. in older stores, are left
    out), at full precision: ``s``, ``d``, ``z``, ``p``, ``exact``, ``p_normal`` and ``log10_p_normal``
    (the same as a base-10 logarithm, finite where ``p_normal`` underflows to 0, e.g. at z = 489),
    ``N_x``, ``N_y``, ``permutations``, ``alternative``, ``weighting``, ``association``, ``sets`` (where
    the word sets come from), ``coverage`` (share of target words found), ``X``, ``Y``, ``A``, ``B``
    (words used), ``missing_targets``, ``missing`` (words asked for but absent) and ``note``.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube (:func:`biasdask.open_results`), whole or selected.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``language``, ``test``, ``method``.
    """
    cube = results.transpose("language", "test", "method")
    frame = {}
    for col in COLUMNS:
        if col.key == "log10_p_normal":
            if "z_score" in cube and "alternative" in cube:
                z = cube["z_score"].values.ravel()
                alt = cube["alternative"].values.ravel()
                frame[col.key] = [_log10_tail(float(v), str(a)) for v, a in zip(z, alt)]
        elif col.key in ("d_ci", "d_spread"):
            if "effect_size_ci_low" in cube:
                bounds = zip(cube["effect_size_ci_low"].values.ravel(), cube["effect_size_ci_high"].values.ravel())
                kinds = (
                    [is_spread(str(m)) for m in cube["ci_method"].values.ravel()]
                    if "ci_method" in cube
                    else [False] * cube["effect_size_ci_low"].size
                )
                frame[col.key] = [
                    f"[{lo:.2f}, {hi:.2f}]"
                    if np.isfinite(lo) and np.isfinite(hi) and spread == (col.key == "d_spread")
                    else ""
                    for (lo, hi), spread in zip(bounds, kinds)
                ]
        elif col.variable in cube:
            values = cube[col.variable].values.ravel()
            frame[col.key] = [str(v) for v in values] if col.kind == "text" else values
    index = pd.MultiIndex.from_product(
        [[str(v) for v in cube[d].values] for d in ("language", "test", "method")], names=["language", "test", "method"]
    )
    return pd.DataFrame(frame, index=index)


def parse_selection(items: Sequence[str] | None) -> dict[str, list[str]]:
    """``["language=fr,en", "test=gender"]`` -> ``{"language": ["fr", "en"], "test": ["gender"]}``."""
    selection: dict[str, list[str]] = {}
    for item in items or ():
        dim, sep, values = item.partition("=")
        if not sep or dim not in ("language", "method", "test") or not values:
            raise BiasdaskError(f"--sel: expected DIM=V1,V2 with DIM one of language, method, test; got {item!r}")
        selection.setdefault(dim, []).extend(v for v in values.split(",") if v)
    return selection


def select(results: xr.Dataset, selection: Mapping[str, Sequence[str]]) -> xr.Dataset:
    """The cells of ``selection`` (dimension -> labels), in the order given; names unknown labels."""
    for dim, labels in selection.items():
        have = [str(v) for v in results[dim].values]
        unknown = [v for v in labels if v not in have]
        if unknown:
            raise BiasdaskError(f"--sel: no {dim} {', '.join(unknown)} in the results (has {', '.join(have)})")
    return results.sel({dim: list(labels) for dim, labels in selection.items()})


def parse_columns(text: str | Sequence[str] | None) -> list[str] | None:
    """Column keys from ``"d,z,p"`` (or a list; cube variable names such as ``effect_size`` are
    accepted too), checked against :data:`COLUMNS`; None for the default.

    Examples
    --------
    >>> parse_columns("d, z_score,p")
    ['d', 'z', 'p']
    """
    if text is None:
        return None
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    by_variable = {c.variable: c.key for c in COLUMNS if c.variable}
    keys = [item if item in _BY_KEY else by_variable.get(item, item) for item in items]
    unknown = [k for k in keys if k not in _BY_KEY]
    if unknown or not keys:
        raise BiasdaskError(
            f"--columns: unknown column {', '.join(unknown) or '(none given)'}; choose from {', '.join(_BY_KEY)}"
        )
    return list(dict.fromkeys(keys))


# ----------------------------------------------------------------------------------------------------
# Numbers for print


def _exponent_text(exponent: int, mantissa: float | None, latex: bool) -> str:
    if latex:
        return f"${mantissa:.2g} \\times 10^{{{exponent}}}$" if mantissa not in (None, 1.0) else f"$10^{{{exponent}}}$"
    return f"{mantissa:.2g}e{exponent}" if mantissa not in (None, 1.0) else f"1e{exponent}"


def _small(value: float, latex: bool) -> str:
    exponent = math.floor(math.log10(value))
    mantissa = round(value / 10.0**exponent, 1)
    if mantissa >= 10:
        mantissa, exponent = 1.0, exponent + 1
    return _exponent_text(exponent, mantissa, latex)


def p_text(
    p: float, *, n_permutations: int = -1, exact: bool = False, log10_p: float = math.nan, latex: bool = False
) -> str:
    """A p-value for print: two decimals from 0.1 up, two significant digits below (``0.032``, ``4.1e-4``); a sampled p-value at its
    floor 1/(m + 1) as the bound ``≤ 1e-4`` (exact ones keep their value and a ``*``); a normal
    p-value that underflows as ``1e-52013`` from its logarithm ``log10_p``.

    Examples
    --------
    >>> p_text(1 / 10000, n_permutations=9999), p_text(0.0321), p_text(0.43), p_text(0.0, log10_p=-52013.2)
    ('≤ 1e-4', '0.032', '0.43', '6.3e-52014')
    """
    if not np.isfinite(p) or p < 0:
        return "-"
    if exact:
        return p_text(p, latex=latex) + "*"
    if n_permutations > 0 and p <= (1 + 1e-9) / (n_permutations + 1):
        floor = 1.0 / (n_permutations + 1)
        bound = _small(floor, latex) if floor < 0.01 else f"{floor:.2g}"
        return f"$\\leq {bound.strip('$')}$" if latex else f"≤ {bound}"
    if p == 0.0 or p < 1e-300:
        if np.isfinite(log10_p):
            exponent = math.floor(log10_p)
            return _exponent_text(exponent, 10 ** (log10_p - exponent), latex)
        return "-"
    if p >= 0.001:
        return f"{p:.2g}" if p < 0.1 else f"{p:.2f}"
    return _small(p, latex)


def visible(text: str, *, keep: str = "") -> str:
    r"""``text`` with every character that a terminal or a page would not show as itself (control
    characters, direction marks and other format characters, line separators, non-breaking spaces...)
    written as its escape (``\x1b``, ``\u200f``), except those in ``keep``: a word of an embedding
    can hold any of them, and printed raw one would move the cursor, recolour the terminal or reverse
    the order of the text around it.

    Examples
    --------
    >>> print(visible("abc\u202edef\x1b[31m"))
    abc\u202edef\x1b[31m
    >>> visible("mâle"), visible("a\nb", keep="\n")
    ('mâle', 'a\nb')
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def _value_text(value: Any, kind: Kind, latex: bool = False) -> str:
    text = _plain_text(value, kind)
    if latex and kind != "text":
        text = text.replace("%", "\\%")
        if text.startswith("-") and len(text) > 1:
            text = f"${text}$"
    return text


def _plain_text(value: Any, kind: Kind) -> str:
    if kind == "text":
        return "" if value is None else visible(str(value))
    if kind == "flag":
        return "yes" if bool(value) else ""
    if kind == "count":
        return "-" if value is None or value < 0 else f"{int(value)}"
    value = float(value)
    if not np.isfinite(value):
        return "-"
    if kind == "share":
        return f"{100 * value:.0f} %"
    if kind == "d":
        return f"{value:.2f}".replace("-0.00", "0.00")
    if kind == "z":
        return f"{value:.1f}".replace("-0.0", "0.0") if abs(value) < 1e4 else f"{value:.3g}"
    return f"{value:.3g}"


def printed_cells(
    table: pd.DataFrame, columns: Sequence[str] | None = None, *, latex: bool = False, drop_empty: bool = True
) -> pd.DataFrame:
    """The columns of :func:`cube_table` as text for print (``columns``: keys of :data:`COLUMNS`; by
    default the printed ones), headed by their print names; with ``drop_empty`` a column empty in every
    row (``-`` or blank) is left out."""
    keys = list(columns) if columns is not None else [c.key for c in COLUMNS if c.printed]
    out = pd.DataFrame(index=table.index)
    n = len(table)
    for key in keys:
        col = _BY_KEY[key]
        if key not in table:
            continue
        if col.kind == "p":
            counts = "permutations" if key in ("p", "p_adj") else "n_placebo" if key.startswith("p_placebo") else ""
            m = table[counts] if counts in table else [-1] * n
            exact = table["exact"] if "exact" in table and key == "p" else [False] * n
            logs = table["log10_p_normal"] if "log10_p_normal" in table and key == "p_normal" else [math.nan] * n
            texts = [
                p_text(float(v), n_permutations=int(k), exact=bool(e), log10_p=float(lp), latex=latex)
                for v, k, e, lp in zip(table[key], m, exact, logs)
            ]
        else:
            texts = [_value_text(v, col.kind, latex) for v in table[key]]
        if drop_empty and all(t in ("", "-") for t in texts):
            continue
        out[col.header] = texts
    return out


# ----------------------------------------------------------------------------------------------------
# Formats


#: characters that Markdown would read as markup in a table cell, written as themselves
_MARKDOWN_SPECIAL = {
    **{c: f"\\{c}" for c in "\\`*_[]|~"},
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}


def _markdown(frame: pd.DataFrame) -> str:
    """A Markdown table; every cell shown as its text: HTML (``<img/src=x/onerror=...>``, which Markdown
    viewers render) and Markdown markup (links, emphasis, code) escaped, invisible characters written
    as escapes (:func:`visible`)."""

    def cell(v: Any) -> str:
        return "".join(_MARKDOWN_SPECIAL.get(c, c) for c in visible(str(v)))

    header = [*frame.index.names, *frame.columns]
    rows = [[*(idx if isinstance(idx, tuple) else (idx,)), *row] for idx, row in zip(frame.index, frame.values)]
    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines)


def _latex(frame: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs table (``\\toprule``, ``\\midrule``, ``\\bottomrule``; needs ``\\usepackage{booktabs}``)
    of text cells; text columns are escaped, numbers (which may hold math) are not."""
    flat = frame.reset_index()
    numeric = {c.header for c in COLUMNS if c.kind != "text"}
    text_columns = [c for c in flat.columns if c not in numeric]
    styler = flat.style.hide(axis="index").format(escape="latex", subset=text_columns)
    styler = styler.format_index(escape="latex", axis="columns")
    align = "".join("r" if c in numeric else "l" for c in flat.columns)
    return styler.to_latex(
        hrules=True,
        column_format=align,
        caption=caption,
        label=label,
        position_float="centering",
        environment="longtable" if len(flat) > 40 else None,
    )


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex_caption(frame: pd.DataFrame, attrs: Mapping[str, Any]) -> str:
    """The table's caption: what each numeric column holds, and the study's seed and alternative."""
    shown = {c.header: c.description for c in COLUMNS if c.kind != "text" or c.key in _INTERVALS}
    parts = [f"{h}: {shown[h]}" for h in frame.columns if h in shown]
    text = f"biasdask results, seed {attrs.get('seed', '')}" + (f" ({'; '.join(parts)})." if parts else ".")
    escaped = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
    return escaped.replace("≤", r"$\leq$")


def _json(table: pd.DataFrame) -> str:
    """One JSON object per row (its index levels first), NaN as null."""
    records = table.reset_index().to_dict(orient="records")
    clean = [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()} for r in records]
    return json.dumps(clean, indent=1, ensure_ascii=False, default=lambda v: v.item() if hasattr(v, "item") else str(v))


def format_table(results: xr.Dataset, fmt: Format = "table", *, columns: Sequence[str] | None = None) -> str:
    """The cube as text to read, paste into a paper or load into a spreadsheet.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube (whole or selected).
    fmt : {"table", "csv", "markdown", "latex", "json"}
        ``table``: aligned text, one block per test, notes as numbered footnotes, long word lists cut;
        ``markdown`` and ``latex`` (a booktabs table with its caption; ``\\usepackage{booktabs}``, and
        ``longtable`` beyond 40 rows): the same columns with notes in full; these three round numbers
        for print and leave out columns empty in every row. ``csv`` and ``json`` (one object per cell,
        NaN as null): every column of :func:`cube_table` at full precision.
    columns : sequence of str, optional
        Keys of :data:`COLUMNS` (or cube variable names) to show, in this order, in every format
        (:func:`parse_columns` reads ``"d,z,p"``).

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> cube = biasdask.run({"output": "memory://examples/format_table/r.zarr", "languages": {"en": {"store": emb}},
    ...                      "tests": ["gender"], "n_permutations": 99, "seed": 1})
    >>> print(format_table(cube, "markdown", columns=["d", "p"]))
    | language | test | method | d | p |
    |---|---|---|---|---|
    | en | gender | uniform | -0.07 | 0.09 |
    | en | gender | zipf | -0.07 | 0.77 |
    """
    if fmt not in FORMATS:
        raise BiasdaskError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    table = cube_table(results)
    if fmt in ("csv", "json"):
        if columns is not None:
            table = table[[k for k in columns if k in table]]
        if fmt == "csv":
            return spreadsheet_safe(table).to_csv()
        return _json(table)
    attrs = results.attrs
    if fmt in ("markdown", "latex"):
        readable = printed_cells(table, columns, latex=fmt == "latex")
        if fmt == "markdown":
            return _markdown(readable)
        return _latex(readable, _latex_caption(readable, attrs), "tab:biasdask")
    keys = [k for k in (columns or [c.key for c in COLUMNS if c.printed]) if k != "note"]
    notes = table["note"] if "note" in table else pd.Series([""] * len(table), index=table.index)
    footnotes: dict[str, int] = {}
    blocks = []
    for test in dict.fromkeys(table.index.get_level_values("test")):
        part = table.xs(test, level="test", drop_level=False)
        readable = printed_cells(part, keys)
        readable.index = readable.index.droplevel("test")
        for header in ("X", "Y", "A", "B", "missing targets", "missing"):  # in full with csv, json, markdown, latex
            if header in readable:
                readable[header] = [v if len(v) <= _TRUNCATE else v[: _TRUNCATE - 1] + "…" for v in readable[header]]
        if columns is None or "note" in columns:
            marks = [
                "" if not n else f"[{footnotes.setdefault(n, len(footnotes) + 1)}]"
                for n in notes.xs(test, level="test")
            ]
            if any(marks):
                readable["note"] = marks
        legend = "; ".join(
            f"{c.header}: {c.description}"
            for c in COLUMNS
            if c.header in readable.columns and (c.kind != "text" or c.key in _INTERVALS)
        )
        blocks.append(f"test: {test}  ({legend})\n" + readable.to_string())
    if footnotes:
        blocks.append("notes:\n" + "\n".join(f"[{i}] {visible(text)}" for text, i in footnotes.items()))
    return "\n\n".join(blocks)


def format_embeddings(
    cubes: Mapping[str, xr.Dataset], fmt: Format = "table", *, columns: Sequence[str] | None = None
) -> str:
    """The cubes of a study of several embeddings (name -> cube: the children of the tree
    :func:`biasdask.open_results` reads) as text: ``csv`` and ``json`` one table whose rows begin with
    the column ``embedding``, the other formats one :func:`format_table` per embedding under its name."""
    if fmt in ("csv", "json"):
        table = pd.concat({name: cube_table(cube) for name, cube in cubes.items()}, names=["embedding"])
        if columns is not None:
            table = table[[k for k in columns if k in table]]
        return spreadsheet_safe(table).to_csv() if fmt == "csv" else _json(table)
    heading = {"markdown": "## embedding {}", "latex": "% embedding {}"}.get(fmt, "embedding {}:")
    return "\n\n".join(
        f"{heading.format(name)}\n\n{format_table(cube, fmt, columns=columns)}" for name, cube in cubes.items()
    )


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every text cell that a spreadsheet would run as a formula (one beginning with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, e.g. the word ``=HYPERLINK(...)``) prefixed
    with ``'``, as OWASP recommends against CSV injection; numbers stay numbers.

    Examples
    --------
    >>> spreadsheet_safe(pd.DataFrame({"word": ["=1+1", "he", "-"], "u": [-0.5, 0.1, 0.2]}))  # doctest: +NORMALIZE_WHITESPACE
       word    u
    0  '=1+1 -0.5
    1    he  0.1
    2    '-  0.2
    """

    def safe(value):
        return f"'{value}" if isinstance(value, str) and value.startswith(_FORMULA_STARTS) else value

    out = table.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(safe)
    if isinstance(out.index, pd.MultiIndex):
        out.index = out.index.set_levels(
            [level.map(safe) if level.dtype == object else level for level in out.index.levels]
        )
    elif out.index.dtype == object:
        out.index = out.index.map(safe)
    return out


def format_words(table: pd.DataFrame, fmt: Format = "table") -> str:
    """:func:`biasdask.report.top_words` as text (``table``, ``csv``, ``markdown``, ``latex`` or ``json``)."""
    if fmt == "csv":
        return spreadsheet_safe(table).to_csv(index=False)
    if fmt == "json":
        return table.to_json(orient="records", force_ascii=False, indent=1)
    shown = table.assign(
        word=[visible(str(w)) for w in table["word"]],
        weight=[f"{v:.3g}" for v in table["weight"]],
        u=[f"{v:.3g}" for v in table["u"]],
        t=[f"{v:.3g}" for v in table["t"]],
        share_of_s=[f"{100 * v:.2f} %" for v in table["share_of_s"]],
        attribute=["attribute word" if a else "" for a in table["attribute"]],
    ).set_index(["side", "rank"])
    a = table.attrs
    of = "" if a.get("association", "cosine") == "cosine" else f", association {a.get('association')}"
    what = (
        f"the words carrying the most bias, by {'u' if a.get('by') == 'u' else 't of ' + str(a.get('method'))}{of} "
        f"(s = {a.get('s', math.nan):.4g}); A: towards the first attribute set (s > 0), B: towards the second"
    )
    if fmt == "markdown":
        return _markdown(shown)
    if fmt == "latex":
        flat = shown.reset_index()
        styler = flat.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis="columns")
        return styler.to_latex(
            hrules=True,
            caption=f"language {a.get('language')}: {what}",
            label=f"tab:biasdask-words-{a.get('language')}",
            position_float="centering",
        )
    return f"language {a.get('language')}: {what}\n" + shown.to_string()


#: the fields of a store's recorded source (:func:`biasdask.io.fs.source_record`) as ``biasdask info`` names them
_SOURCE_FIELDS = {
    "url": "source",
    "size": "source size",
    "etag": "source ETag",
    "last_modified": "source Last-Modified",
    "mtime": "source modified",
}


def _info_value(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_info_value(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


#: what an ``ingest`` setting left unset meant when the store was written
_INGEST_UNSET = {"max_words": "all", "chunk_words": "default (at most 32 MiB a chunk)", "compression": "none"}


def store_info_rows(info: StoreDescription) -> list[tuple[str, str]]:
    """An embedding store's identity and provenance (:func:`biasdask.io.store.describe_store`) as
    ``(field, value)`` rows of text, in the order ``biasdask info`` prints them: what the store is, where
    its data came from (every field its source record holds), how it was ingested, what ingest counted."""
    ident = info.identity
    encoding = info.vector_encoding
    if encoding != "float32":
        encoding += " (scaled integers, 4 decimals, lossless)"
    chunks = "" if info.n_chunks is None else f"{info.n_chunks:,} ({info.chunk_words:,} words each)"
    rows = [
        ("store", ident.url),
        ("language", ident.language),
        ("complete", "yes" if info.complete else "no (its writing never finished: readers refuse it)"),
        ("words", _info_value(ident.n_words) if info.complete else ""),
        ("dimensions", _info_value(info.dim)),
        ("format", info.format),
        ("vector encoding", encoding),
        ("chunks", chunks),
        ("fingerprint", ident.fingerprint or "none recorded (written before biasdask recorded one)"),
        ("store id", _info_value(ident.store_id)),
        ("created", _info_value(ident.created)),
        ("biasdask version", _info_value(info.biasdask_version)),
    ]
    source = dict(ident.source)
    rows += [(name, _info_value(source.pop(key))) for key, name in _SOURCE_FIELDS.items() if key in source]
    rows += [(f"source {key.replace('_', ' ')}", _info_value(value)) for key, value in source.items()]
    rows += [
        (f"ingest {key.replace('_', ' ')}", _info_value(_INGEST_UNSET.get(key) if value is None else value))
        for key, value in info.ingest.items()
    ]
    rows += [(INGEST_COUNTS[key], _info_value(value)) for key, value in info.counts.items()]
    return rows


def format_store_info(info: StoreDescription, fmt: Format = "table") -> str:
    """An embedding store's identity and provenance (:func:`store_info_rows`) as text: ``table`` (aligned
    ``field  value`` lines), ``csv``, ``markdown``, ``latex`` (two columns) or ``json`` (one object with
    the recorded values as they are, :meth:`~biasdask.io.store.StoreDescription.as_dict`)."""
    if fmt not in FORMATS:
        raise BiasdaskError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(info.as_dict(), indent=1, ensure_ascii=False)
    rows = [(field, visible(value)) for field, value in store_info_rows(info)]
    frame = pd.DataFrame(rows, columns=["field", "value"])
    if fmt == "csv":
        return spreadsheet_safe(frame).to_csv(index=False)
    if fmt == "markdown":
        return _markdown(frame.set_index("field"))
    if fmt == "latex":
        styler = frame.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis="columns")
        return styler.to_latex(
            hrules=True,
            column_format="ll",
            caption=f"embedding store {info.identity.url} (language {info.identity.language})",
            label=f"tab:biasdask-store-{info.identity.language}",
            position_float="centering",
        )
    width = max(len(field) for field, _ in rows)
    return "\n".join(f"{field:<{width}}  {value}" for field, value in rows)


def format_retest(table: pd.DataFrame, fmt: Format = "table", *, ci_level: float = 0.95) -> str:
    """:func:`biasdask.study.inference.retest_table` as text (``table``, ``csv``, ``markdown``, ``latex`` or
    ``json``): ``csv`` and ``json`` at full precision (NaN as an empty cell, null), the others with the
    estimates to 3 decimals and each interval as one column."""
    what = (
        "test-retest reliability of the languages' effect sizes across embeddings: Pearson and Spearman "
        f"correlations between each pair (bootstrap {100 * ci_level:g} % CI over languages) and ICC(2,1) across all"
    )
    return _format_correlations(table, fmt, ci_level=ci_level, what=what, label="tab:biasdask-retest")


def format_agreement(table: pd.DataFrame, fmt: Format = "table", *, ci_level: float = 0.95) -> str:
    """:func:`biasdask.study.reliability.agreement_table` as text, in the formats of :func:`format_retest`."""
    what = (
        "agreement across scoring rules and tests: correlations of the languages' values between two associations "
        f"or two measures on the same sets (bootstrap {100 * ci_level:g} % CI over languages), and of the per-word "
        "scores over a language's vocabulary (Fisher-z CI, words taken as independent)"
    )
    return _format_correlations(table, fmt, ci_level=ci_level, what=what, label="tab:biasdask-agreement")


def _format_correlations(table: pd.DataFrame, fmt: Format, *, ci_level: float, what: str, label: str) -> str:
    """A long table of correlations (``estimate``, ``ci_low``, ``ci_high``, ``n``, ``note``) as text."""
    if fmt not in FORMATS:
        raise BiasdaskError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "csv":
        return spreadsheet_safe(table).to_csv()
    if fmt == "json":
        return _json(table)

    def number(v: float) -> str:
        return "" if not np.isfinite(v) else f"{v:.3f}"

    interval = f"{100 * ci_level:g} % CI"
    shown = pd.DataFrame(
        {
            "estimate": [number(v) for v in table["estimate"]],
            interval: [
                "" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"
                for lo, hi in zip(table["ci_low"], table["ci_high"])
            ],
            "n": table["n"].astype(int),
            "note": [visible(str(n)) for n in table["note"]],
        },
        index=table.index,
    )
    if not shown["note"].astype(bool).any():
        shown = shown.drop(columns="note")
    if fmt == "markdown":
        return _markdown(shown)
    if fmt == "latex":
        styler = shown.reset_index().style.hide(axis="index").format(escape="latex")
        styler = styler.format_index(escape="latex", axis="columns")
        caption = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in what)
        return styler.to_latex(hrules=True, caption=caption, label=label, position_float="centering")
    return f"{what}\n" + shown.to_string()


# ----------------------------------------------------------------------------------------------------
# Reading a cell


def leaning(test: str) -> Literal[1, -1, 0]:
    """Which way a positive s (and d, z) of ``test`` leans: 1 towards A (the first attribute set; for
    WEAT-style tests, X with A and Y with B; the full-vocabulary tests, NAS), -1 towards B (RND, whose
    s > 0 means S closer to B), 0 for a value without a direction (RNSB, MAC, ECT).

    Examples
    --------
    >>> leaning("gender.ripa"), leaning("weat7"), leaning("rnd"), leaning("ect")
    (1, 1, -1, 0)
    """
    name = test.partition(".")[0]
    if name == "rnd":
        return -1
    if name in ("rnsb", "mac", "ect"):
        return 0
    return 1


_EMPTY_REASONS = (
    ("not applicable", "n/a"),
    ("coverage", "coverage"),
    ("missing attribute words", "missing words"),
    ("no observed-frequency", "no freq. list"),
    ("no p-value", "no p-value"),
)


def word_list_family(source: str) -> str:
    """The word lists a ``word_sets`` source names, whatever the language: a translation of a test's lists
    (XWEAT's of WEAT's, the IAT's per language, a word set file's per language) counts as the same lists;
    different families (WEAT-7's math words, the IAT's career words) measure different words.

    Examples
    --------
    >>> word_list_family("xweat7:de"), word_list_family("weat7"), word_list_family("iat:career:fr (cc)")
    ('weat7', 'weat7', 'iat:career (cc)')
    >>> word_list_family("weathub.weat7:ar")
    'weathub.weat7'
    """
    head, _, model = source.partition(" ")
    parts = head.split(":")
    if parts[0].startswith("xweat"):
        return parts[0][1:]
    if len(parts) == 2 and not model:  # a test's lists in one language
        return parts[0]
    if parts[0] == "iat" and len(parts) == 3:
        return f"iat:{parts[1]}" + (f" {model}" if model else "")
    return source


def empty_reason(note: str) -> str:
    """A short label for an empty cell from its ``note``: ``n/a`` (the test does not apply),
    ``coverage`` (too few target words), ``missing words`` (no usable attribute word), ``no freq. list``,
    ``failed`` (the language failed), or ``not run`` (the run has not reached it)."""
    note = str(note)
    for prefix, short in _EMPTY_REASONS:
        if note.startswith(prefix):
            return short
    return "not run" if not note or note.startswith("not run") else "failed"
