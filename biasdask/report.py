"""Faces of a results store: the tables ``biasdask show`` prints, the words behind a number
(``biasdask words``, :func:`top_words`), the figures ``biasdask plot`` draws and the static HTML page
``biasdask report`` writes."""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from biasdask.errors import BiasdaskError

__all__ = [
    "cube_table",
    "figures",
    "format_results",
    "format_table",
    "least_normal_cell",
    "parse_selection",
    "top_words",
    "write_plots",
    "write_report",
]

Format = Literal["table", "csv", "markdown", "latex", "json"]
FORMATS: tuple[str, ...] = ("table", "csv", "markdown", "latex", "json")

# cube variable -> column of the table (in this order)
_COLUMNS = {
    "statistic": "s",
    "effect_size": "d",
    "z_score": "z",
    "p_value": "p",
    "exact": "exact",
    "p_value_normal": "p_normal",
    "log10_p_normal": "log10_p_normal",
    "n_x": "N_x",
    "n_y": "N_y",
    "n_permutations": "permutations",
    "alternative": "alternative",
    "weighting": "weighting",
    "attribute_words_a": "A",
    "attribute_words_b": "B",
    "missing_attribute_words": "missing",
    "note": "note",
}


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

    Columns: ``s`` (statistic), ``d`` (effect size, ddof 1), ``z``, ``p`` (permutation p-value),
    ``exact``, ``p_normal`` (normal tail of z) and ``log10_p_normal`` (the same as a base-10
    logarithm, finite where ``p_normal`` underflows to 0, e.g. at z = 489), ``N_x``, ``N_y`` (words
    in X and Y), ``permutations``, ``alternative`` (resolved), ``weighting``, ``A`` and ``B`` (the
    attribute words used), ``missing`` (attribute words asked for but absent) and ``note`` (why a
    cell is empty, or a warning). Variables a cube lacks (older stores) are left out.

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
    for name, column in _COLUMNS.items():
        if name == "log10_p_normal":
            if "z_score" in cube and "alternative" in cube:
                z = cube["z_score"].values.ravel()
                alt = cube["alternative"].values.ravel()
                frame[column] = [_log10_tail(float(v), str(a)) for v, a in zip(z, alt)]
            continue
        if name in cube:
            values = cube[name].values.ravel()
            frame[column] = values.astype(object) if values.dtype.kind in "OTU" else values
    index = pd.MultiIndex.from_product(
        [[str(v) for v in cube[d].values] for d in ("language", "test", "method")], names=["language", "test", "method"]
    )
    table = pd.DataFrame(frame, index=index)
    for column in ("A", "B", "missing", "note", "alternative", "weighting"):
        if column in table:
            table[column] = table[column].map(str)
    return table


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


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return "-" if value < 0 else f"{value}"
    if isinstance(value, (float, np.floating)):
        return "-" if not np.isfinite(value) else f"{value:.{digits}g}"
    return str(value)


def _p_normal_text(p: float, log10_p: float) -> str:
    """p(normal) as a number, or as ``1e-52013`` (from log10 p) where the float underflows."""
    if np.isfinite(p) and p >= 1e-300:
        return f"{p:.3g}"
    if np.isfinite(log10_p):
        exponent = math.floor(log10_p)
        return f"{10 ** (log10_p - exponent):.2g}e{exponent}"
    return "-"


def _readable(table: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader wants, as text: numbers rounded, p(normal) as 1e-N when it underflows."""
    out = pd.DataFrame(index=table.index)
    for column in ("s", "d", "z"):
        if column in table:
            out[column] = [_num(v) for v in table[column]]
    if "p" in table:
        exact = table["exact"] if "exact" in table else [False] * len(table)
        out["p"] = [_num(v) + ("*" if e and np.isfinite(v) else "") for v, e in zip(table["p"], exact)]
    if "p_normal" in table:
        logs = table["log10_p_normal"] if "log10_p_normal" in table else [math.nan] * len(table)
        out["p(normal)"] = [_p_normal_text(p, lp) for p, lp in zip(table["p_normal"], logs)]
    if "N_x" in table:
        out["N"] = [_num(v) for v in table["N_x"]]
    for column in ("alternative", "A", "B", "missing"):
        if column in table:
            out[column] = [v or "" for v in table[column]]
    return out


def _markdown(frame: pd.DataFrame) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    header = [*frame.index.names, *frame.columns]
    rows = [[*(idx if isinstance(idx, tuple) else (idx,)), *row] for idx, row in zip(frame.index, frame.values)]
    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines)


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every text cell that a spreadsheet would run as a formula (one beginning with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, e.g. the word ``=HYPERLINK(...)``) prefixed
    with ``'``, as OWASP recommends against CSV injection; numbers stay numbers.

    Examples
    --------
    >>> spreadsheet_safe(pd.DataFrame({"word": ["=1+1", "he", "-"], "u": [-0.5, 0.1, 0.2]}))
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
        out.index = out.index.set_levels([level.map(safe) if level.dtype == object else level for level in out.index.levels])
    elif out.index.dtype == object:
        out.index = out.index.map(safe)
    return out


def format_table(results: xr.Dataset, fmt: Format = "table") -> str:
    """The cube as text to read, paste into a paper or load into a spreadsheet.

    Parameters
    ----------
    results : xarray.Dataset
        A results cube (whole or selected).
    fmt : {"table", "csv", "markdown", "latex", "json"}
        ``table``: aligned text, one block per test, notes as numbered footnotes; ``markdown`` and
        ``latex``: the same columns with notes in full; ``csv`` and ``json``: every column of
        :func:`cube_table` with full numeric precision (``json``: one object per cell, NaN as null).

    Returns
    -------
    str
    """
    if fmt not in FORMATS:
        raise BiasdaskError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    table = cube_table(results)
    if fmt == "csv":
        return spreadsheet_safe(table).to_csv()
    if fmt == "json":
        records = table.reset_index().to_dict(orient="records")
        clean = [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()} for r in records]
        return json.dumps(clean, indent=1, ensure_ascii=False, default=lambda v: v.item() if hasattr(v, "item") else str(v))
    readable = _readable(table)
    if fmt in ("markdown", "latex"):
        readable["note"] = [v or "" for v in table["note"]] if "note" in table else ""
        if fmt == "markdown":
            return _markdown(readable)
        return readable.reset_index().to_latex(
            index=False,
            escape=True,
            caption="biasdask results: s statistic, d effect size (sample SD), z and p(normal) its normal "
            "approximation, p permutation p-value (* exact), N words in X.",
            label="tab:biasdask",
            longtable=len(readable) > 40,
        )
    footnotes: dict[str, int] = {}
    readable["note"] = [
        "" if not n else f"[{footnotes.setdefault(n, len(footnotes) + 1)}]" for n in table.get("note", [""] * len(table))
    ]
    readable = readable.drop(columns=[c for c in ("missing", "note") if not any(readable[c])])
    for column in ("A", "B", "missing"):  # long word lists in full with --format csv|json|markdown|latex
        if column in readable:
            readable[column] = [v if len(v) <= 32 else v[:31] + "…" for v in readable[column]]
    blocks = []
    attrs = results.attrs
    for test in dict.fromkeys(table.index.get_level_values("test")):
        part = readable.xs(test, level="test")
        blocks.append(
            f"test: {test}  (s statistic; d effect size, ddof {attrs.get('sd_ddof', 1)}; z and p(normal): normal "
            f"approximation; p: permutation p-value, * exact; N: words in X)\n" + part.to_string()
        )
    if footnotes:
        blocks.append("notes:\n" + "\n".join(f"[{i}] {text}" for text, i in footnotes.items()))
    return "\n\n".join(blocks)


def format_results(results: xr.Dataset, fmt: Format = "table") -> str:
    """What ``biasdask show`` (and ``run``, ``demo``) print: :func:`format_table` of the cube."""
    return format_table(results, fmt)


def _scores_source(results: str | xr.Dataset, language: str, storage_options: dict | None) -> xr.Dataset:
    from biasdask.io.results import open_scores

    if isinstance(results, xr.Dataset):
        return results
    return open_scores(results, language, storage_options=storage_options)


def _attribute_words(results: str, language: str, storage_options: dict | None) -> set[str]:
    from biasdask.io.results import open_results

    cube = open_results(results, storage_options=storage_options)
    if "gender" not in cube["test"].values:
        return set()
    cube = cube.sel({"language": language, "test": "gender"})
    words: set[str] = set()
    for name in ("attribute_words_a", "attribute_words_b"):
        if name in cube:
            for text in np.asarray(cube[name].values).ravel():
                words.update(w.strip() for w in str(text).split(",") if w.strip())
    return words


def top_words(
    results: str | xr.Dataset,
    language: str,
    n: int = 30,
    by: Literal["u", "t"] = "u",
    *,
    method: str | None = None,
    association: str = "cosine",
    storage_options: dict | None = None,
) -> pd.DataFrame:
    """The words carrying the most bias on each side of a language's statistic.

    The full-vocabulary statistic is s = Σ_w t(w) (Y is the dummy language, t ≡ 0), so each word
    contributes t(w) to s; with ``by="u"`` the unweighted u(w) to Σ u (s of ``uniform``). The words
    with the largest contributions towards A (positive, e.g. *male*) and towards B (negative) are
    listed, ``n`` on each side.

    Parameters
    ----------
    results : str or xarray.Dataset
        A results store URL (its ``scores/<language>``), or a scores Dataset (``u``, ``t``, ``rank``,
        e.g. from :func:`biasdask.open_scores`).
    language : str
        The language.
    n : int
        Words per side.
    by : {"u", "t"}
        Rank by the association u, or by the weighted score t of ``method``.
    method : str, optional
        The weighting for ``by="t"`` (default: ``zipf`` if stored, else the first method).
    association : str
        The per-word association whose scores are ranked (``cosine``, the default: ``u`` and ``t``;
        another one of the study's ``associations``: its ``u_<name>`` and ``t_<name>``).
    storage_options : dict, optional
        fsspec options of the store.

    Returns
    -------
    pandas.DataFrame
        One row per word: ``side`` (``A`` or ``B``), ``rank`` (1 = the largest contribution on that
        side), ``word``, ``frequency_rank`` (1 = most frequent), ``weight`` (the weighting's Z of the
        word, t/u; 1 for ``by="u"``), ``u``, ``t``, ``share_of_s`` (the word's contribution over s:
        a word with share 0.01 carries 1 % of s; negative where it pulls against the sign of s),
        ``attribute`` (True for an attribute word of the study).

    Examples
    --------
    >>> top_words("results.zarr", "en", n=10, by="t", method="zipf")  # doctest: +SKIP
    """
    if by not in ("u", "t"):
        raise ValueError(f"by must be 'u' or 't', got {by!r}")
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    sc = _scores_source(results, language, storage_options)
    methods = [str(m) for m in sc["method"].values] if "method" in sc.coords else []
    if by == "t":
        if method is None:
            method = "zipf" if "zipf" in methods else (methods[0] if methods else None)
        if method not in methods:
            raise BiasdaskError(f"no weighting {method!r} in the scores of {language} (has {', '.join(methods)})")
    u_name, t_name = ("u", "t") if association == "cosine" else (f"u_{association}", f"t_{association}")
    if u_name not in sc:
        # the study's order (a store lists its arrays in no fixed order)
        held = list(sc.attrs.get("associations", ())) or ["cosine", *(str(v)[2:] for v in sc.data_vars if str(v).startswith("u_"))]
        raise BiasdaskError(f"no association {association!r} in the scores of {language} (has {', '.join(held)})")
    u = np.asarray(sc[u_name].values, dtype=np.float64)
    t = np.asarray(sc[t_name].sel({"method": method}).values, dtype=np.float64) if by == "t" else u
    words = np.asarray(sc["word"].values).astype(object)
    rank = np.asarray(sc["rank"].values)
    score = np.where(np.isfinite(t), t, np.nan)
    total = float(np.nansum(score))
    # The tokens of the gender test's attribute sets, as the scores recorded them (older stores: the
    # labels of the cube's gender cells).
    attributes = {*sc.attrs.get("tokens_a", ()), *sc.attrs.get("tokens_b", ())}
    if not attributes and isinstance(results, str):
        attributes = _attribute_words(results, language, storage_options)
    finite = np.flatnonzero(np.isfinite(score))
    order = finite[np.argsort(score[finite], kind="stable")]
    rows = []
    for side, picks in (("A", order[::-1][:n]), ("B", order[:n])):
        picks = [i for i in picks if (score[i] > 0 if side == "A" else score[i] < 0)]
        for r, i in enumerate(picks, start=1):
            weight = 1.0 if by == "u" else (t[i] / u[i] if u[i] != 0 else math.nan)
            rows.append({
                "side": side,
                "rank": r,
                "word": str(words[i]),
                "frequency_rank": int(rank[i]),
                "weight": weight,
                "u": u[i],
                "t": t[i],
                "share_of_s": score[i] / total if total else math.nan,
                "attribute": str(words[i]) in attributes,
            })
    table = pd.DataFrame(rows, columns=["side", "rank", "word", "frequency_rank", "weight", "u", "t", "share_of_s", "attribute"])
    table.attrs.update(language=language, by=by, method=method or "uniform", s=total, association=association)
    return table


def format_words(table: pd.DataFrame, fmt: Format = "table") -> str:
    """:func:`top_words` as text (``table``, ``csv``, ``markdown``, ``latex`` or ``json``)."""
    if fmt == "csv":
        return spreadsheet_safe(table).to_csv(index=False)
    if fmt == "json":
        return table.to_json(orient="records", force_ascii=False, indent=1)
    shown = table.assign(
        weight=[f"{v:.3g}" for v in table["weight"]],
        u=[f"{v:.3g}" for v in table["u"]],
        t=[f"{v:.3g}" for v in table["t"]],
        share_of_s=[f"{100 * v:.2f} %" for v in table["share_of_s"]],
        attribute=["attribute word" if a else "" for a in table["attribute"]],
    ).set_index(["side", "rank"])
    if fmt == "markdown":
        return _markdown(shown)
    if fmt == "latex":
        return shown.reset_index().to_latex(index=False, escape=True)
    a = table.attrs
    of = "" if a.get("association", "cosine") == "cosine" else f", association {a.get('association')}"
    head = (f"language {a.get('language')}: the words carrying the most bias, by "
            f"{'u' if a.get('by') == 'u' else 't of ' + str(a.get('method'))}{of} (s = {a.get('s', math.nan):.4g}); "
            "A: towards the first attribute set (s > 0), B: towards the second")
    return head + "\n" + shown.to_string()


def least_normal_cell(results_url: str, storage_options: dict | None = None) -> tuple[tuple[str, str, str], float] | None:
    """The cell whose stored null distribution is furthest from a normal one, and that distance.

    The distance is the Kolmogorov-Smirnov statistic between the standardised null (its own mean
    and sample SD) and N(0, 1): the normal approximation (z, p_normal) is least trustworthy there.
    None when no cell has a stored null.
    """
    from scipy.stats import kstest

    from biasdask.errors import IncompleteStoreError
    from biasdask.io.results import open_results, read_null

    cube = open_results(results_url, storage_options=storage_options)
    best = None
    for lang in cube["language"].values:
        for method in cube["method"].values:
            for test in cube["test"].values:
                cell = (str(lang), str(method), str(test))
                if not np.isfinite(float(cube["statistic"].sel(dict(zip(("language", "method", "test"), cell))))):
                    continue
                try:
                    null = read_null(results_url, *cell, storage_options=storage_options)
                except IncompleteStoreError:
                    continue
                sd = null.std(ddof=1) if null.size > 1 else 0.0
                distance = 1.0 if sd == 0 else float(kstest((null - null.mean()) / sd, "norm").statistic)
                if best is None or distance > best[1]:
                    best = (cell, distance)
    return best


def figures(
    results_url: str,
    *,
    cell: tuple[str, str, str] | None = None,
    storage_options: dict | None = None,
) -> dict[str, Any]:
    """The figures of a results store, by file stem (``overview``, ``effect_sizes``, ``null_...``,
    ``frequency_profile_...``), as matplotlib Figures. See :func:`write_plots`."""
    from biasdask import plot
    from biasdask.engine.frequency import frequency_profiles
    from biasdask.errors import IncompleteStoreError
    from biasdask.io.results import open_results, read_null

    results = open_results(results_url, storage_options=storage_options)
    out: dict[str, Any] = {}
    tests = [str(t) for t in results["test"].values]
    test = "gender" if "gender" in tests else tests[0]
    out["overview"] = plot.plot_overview(results, test=test)
    if len(tests) > 1:
        out["effect_sizes"] = plot.plot_effect_heatmap(results)
    distance = None
    if cell is None:
        found = least_normal_cell(results_url, storage_options)
        if found is not None:
            cell, distance = found
    else:
        try:
            values = results.sel(dict(zip(("language", "method", "test"), cell)))
        except KeyError:
            raise BiasdaskError(f"--cell: no cell ({', '.join(cell)}) in {results_url}") from None
        if not np.isfinite(float(values["statistic"])):
            raise BiasdaskError(f"--cell: cell ({', '.join(cell)}) of {results_url} was not run")
    if cell is not None:
        lang, method, test_ = cell
        values = results.sel({"language": lang, "method": method, "test": test_})
        try:
            null = read_null(results_url, lang, method, test_, storage_options=storage_options)
        except IncompleteStoreError:
            if distance is None and cell is not None:
                raise
            null = None
        if null is not None:
            why = f"; the least normal null of the study (KS distance {distance:.3f})" if distance is not None else ""
            out[f"null_{lang}_{method}_{test_}"] = plot.plot_null_distribution(
                null,
                float(values["statistic"]),
                z_score=float(values["z_score"]),
                p_value=float(values["p_value"]),
                title=f"{lang} · {method} · {test_}{why}",
                **({"xlabel": f"{test_} under random relabelling of the two groups' words"}
                   if test_ in ("rnd", "rnsb", "ect", "nas") else {}),
            )
    profiles = frequency_profiles(results_url, storage_options=storage_options)
    if profiles:
        # t of "uniform" is u itself: its figure would repeat frequency_profile_u
        for score in ["u", *(f"t_{m}" for m in results["method"].values if m != "uniform")]:
            if all(score in [str(s) for s in p["score"].values] for p in profiles.values()):
                out[f"frequency_profile_{score}"] = plot.plot_frequency_profile(profiles, score=score)
    return out


def write_plots(
    results_url: str,
    out_dir: str | Path,
    *,
    cell: tuple[str, str, str] | None = None,
    storage_options: dict | None = None,
) -> list[Path]:
    """Write the figures of a results store as PNG files and return their paths.

    - ``overview.png``: per language, the effect size d (defined on u, the same for every
      weighting) beside z of every weighting, which differs between them (seed 000's point);
    - ``effect_sizes.png`` (several tests): language × test heatmap of d;
    - ``null_<lang>_<method>_<test>.png``: the sampled null distribution of one cell with its
      observed statistic; by default the cell whose null is least normal (Kolmogorov-Smirnov
      distance to a normal), where z and p(normal) deserve the least trust;
    - ``frequency_profile_u.png`` and ``frequency_profile_t_<method>.png`` (every method but
      ``uniform``, whose t is u): per language, the mean bias per log10-rank bin (seed 003,
      Figure 1), when the store holds per-word scores.
    """
    figs = figures(results_url, cell=cell, storage_options=storage_options)
    return _write_pngs({name: _png(fig) for name, fig in figs.items()}, out_dir)


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)  # constrained layout already fits everything; "tight" would draw twice
    return buffer.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _write_pngs(pngs: Mapping[str, bytes], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png" for name in pngs]
    for path, data in zip(paths, pngs.values()):
        path.write_bytes(data)
    return paths


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ddd}h3{margin-bottom:.3em}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:right;vertical-align:top}
td.text,th.text{text-align:left}th{background:#f4f4f4;position:sticky;top:0}
#cube th{cursor:pointer;user-select:none}#cube th[aria-sort=ascending]::after{content:" \\25B2"}
#cube th[aria-sort=descending]::after{content:" \\25BC"}
tr.empty td{color:#888}td.pos{color:#b2182b}td.neg{color:#2166ac}
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.words{display:flex;gap:2em;flex-wrap:wrap}.note{color:#8a4b00}
"""

# Sorts #cube by a clicked header; "#sort=COLUMN" or "#sort=COLUMN:desc" in the URL sorts on load.
_SCRIPT = """
(function(){
var table=document.getElementById('cube'),body=table.tBodies[0],heads=table.tHead.rows[0].cells;
function key(td){var v=td.getAttribute('data-v');if(v===null||v===''){return null}var x=parseFloat(v);return isNaN(x)?v.toLowerCase():x}
function sortBy(col,desc){
 var rows=Array.prototype.slice.call(body.rows);
 rows.sort(function(a,b){var x=key(a.cells[col]),y=key(b.cells[col]);
  if(x===null&&y===null){return 0}if(x===null){return 1}if(y===null){return -1}
  var c=(typeof x===typeof y)?(x<y?-1:x>y?1:0):(typeof x==='number'?-1:1);return desc?-c:c});
 rows.forEach(function(r){body.appendChild(r)});
 for(var i=0;i<heads.length;i++){heads[i].removeAttribute('aria-sort')}
 heads[col].setAttribute('aria-sort',desc?'descending':'ascending');
 table.setAttribute('data-sorted',heads[col].getAttribute('data-col')+(desc?':desc':':asc'));
}
for(var i=0;i<heads.length;i++){(function(i){heads[i].addEventListener('click',function(){
 sortBy(i,heads[i].getAttribute('aria-sort')==='ascending')})})(i)}
var m=/sort=([^:&]+)(:desc)?/.exec(decodeURIComponent(location.hash));
if(m){for(var j=0;j<heads.length;j++){if(heads[j].getAttribute('data-col')===m[1]){sortBy(j,!!m[2])}}}
})();
"""


def _cube_html(table: pd.DataFrame) -> str:
    readable = _readable(table)
    columns = ["language", "test", "method", *readable.columns, "note"]
    numeric = {"s", "d", "z", "p", "p(normal)", "N"}
    sort_values = {"s": table.get("s"), "d": table.get("d"), "z": table.get("z"), "p": table.get("p"),
                   "p(normal)": table.get("log10_p_normal"), "N": table.get("N_x")}
    head = "".join(
        f'<th data-col="{html.escape(c)}" class="{"" if c in numeric else "text"}" title="click to sort">{html.escape(c)}</th>'
        for c in columns
    )
    rows = []
    for pos, (idx, row) in enumerate(readable.iterrows()):
        note = str(table["note"].iloc[pos]) if "note" in table else ""
        empty = "s" in table and not np.isfinite(table["s"].iloc[pos])
        cells = []
        for c, v in zip(("language", "test", "method"), idx):
            cells.append(f'<td class="text" data-v="{html.escape(v)}">{html.escape(v)}</td>')
        for c in readable.columns:
            text = str(row[c])
            if c in numeric and sort_values.get(c) is not None:
                raw = sort_values[c].iloc[pos]
                raw_text = "" if raw is None or not np.isfinite(float(raw)) or (c == "N" and raw < 0) else repr(float(raw))
                sign = "" if c not in ("s", "d", "z") or not raw_text else (" pos" if float(raw) > 0 else " neg")
                cells.append(f'<td class="num{sign}" data-v="{raw_text}">{html.escape(text)}</td>')
            else:
                cells.append(f'<td class="text" data-v="{html.escape(text)}">{html.escape(text)}</td>')
        cells.append(f'<td class="text note" data-v="{html.escape(note)}">{html.escape(note)}</td>')
        rows.append(f'<tr{" class=empty" if empty else ""}>' + "".join(cells) + "</tr>")
    return f'<table id="cube"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _words_html(table: pd.DataFrame, title: str) -> str:
    rows = "".join(
        f"<tr><td>{r.side}</td><td>{r.rank}</td><td class=text>{html.escape(r.word)}"
        f"{' <em>(attribute word)</em>' if r.attribute else ''}</td><td>{r.frequency_rank:,}</td>"
        f"<td>{r.weight:.3g}</td><td>{r.u:.3g}</td><td>{r.t:.3g}</td><td>{100 * r.share_of_s:.2f} %</td></tr>"
        for r in table.itertuples()
    )
    return (f"<div><h4>{html.escape(title)}</h4><table><thead><tr><th>side</th><th>rank</th><th class=text>word</th>"
            f"<th>frequency rank</th><th>weight</th><th>u</th><th>t</th><th>share of s</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def write_report(
    results_url: str,
    out_dir: str | Path,
    *,
    n_words: int = 15,
    plots_dir: str | Path | None = None,
    storage_options: dict | None = None,
) -> Path:
    """Write a self-contained static HTML report of a results store: ``<out_dir>/index.html``.

    One file, nothing to serve and nothing fetched when it is viewed (figures are embedded as
    ``data:`` images, the script and style are inline, and a Content-Security-Policy forbids any
    request): mail it, or open it from disk. It holds the study's configuration, the cube as a
    table that sorts on a click (``index.html#sort=d:desc`` sorts on load), the figures of
    :func:`write_plots`, and per language its notes and the words carrying the most bias
    (:func:`top_words`, by u and by t of every weighting).

    Parameters
    ----------
    results_url : str
        The results store.
    out_dir : str or Path
        Directory to write ``index.html`` into (created if needed).
    n_words : int
        Words per side in each language's lists.
    plots_dir : str or Path, optional
        Also write the page's figures there as PNG files, as :func:`write_plots` does (each figure
        is drawn once for both).
    storage_options : dict, optional
        fsspec options of the store.

    Returns
    -------
    Path
        The page.
    """
    from biasdask.io.results import open_results, scores_done

    results = open_results(results_url, storage_options=storage_options)
    table = cube_table(results)
    attrs = results.attrs
    pngs = {name: _png(fig) for name, fig in figures(results_url, storage_options=storage_options).items()}
    if plots_dir is not None:
        _write_pngs(pngs, plots_dir)
    done, total = int(results["done"].sum()), int(results["done"].size)
    parts = [
        f"<h1>biasdask results</h1><p>{done} of {total} cells done · seed {html.escape(str(attrs.get('seed')))} · "
        f"alternative {html.escape(str(attrs.get('alternative')))} · similarity {html.escape(str(attrs.get('similarity')))} · "
        f"sample SD (ddof {html.escape(str(attrs.get('sd_ddof', 1)))}) · biasdask {html.escape(str(attrs.get('biasdask_version')))} · "
        f"created {html.escape(str(attrs.get('created')))}</p>",
        f"<p>{results.sizes['language']} languages · weightings (methods): {html.escape(', '.join(map(str, results['method'].values)))}"
        f" · tests: {html.escape(', '.join(map(str, results['test'].values)))} · the full configuration is "
        "<a href='#configuration'>at the end</a>.</p>",
        "<h2>Cube</h2><p>s: statistic Σt(X) − Σt(Y); d: effect size on u (the same for every weighting); z and "
        "p(normal): normal approximation of the permutation null; p: permutation p-value (* exact); N: words in X. "
        "Click a column to sort.</p>" + _cube_html(table),
        "<h2>Figures</h2>" + "".join(
            f'<figure><img alt="{html.escape(name)}" src="{_data_uri(data)}"><figcaption>{html.escape(name)}</figcaption></figure>'
            for name, data in pngs.items()
        ),
        "<h2>Languages</h2><p>Per language: its notes, and the words carrying the most bias on each side "
        "(A: towards the first attribute set, s &gt; 0; B: towards the second), with their share of s.</p>",
    ]
    methods = [str(m) for m in results["method"].values]
    for lang in [str(v) for v in results["language"].values]:
        notes = sorted({str(n) for n in np.asarray(results["note"].sel({"language": lang}).values).ravel() if str(n)})
        block = [f'<h3 id="lang-{html.escape(lang)}">{html.escape(lang)}</h3>']
        if notes:
            block.append("<ul>" + "".join(f'<li class="note">{html.escape(n)}</li>' for n in notes) + "</ul>")
        if scores_done(results_url, lang, storage_options=storage_options):
            lists = [_words_html(top_words(results_url, lang, n_words, "u", storage_options=storage_options), "by u (unweighted)")]
            for m in methods:
                if m != "uniform":
                    words = top_words(results_url, lang, n_words, "t", method=m, storage_options=storage_options)
                    lists.append(_words_html(words, f"by t ({m} weighting)"))
            block.append('<div class="words">' + "".join(lists) + "</div>")
        parts.append("".join(block))
    parts.append('<h2 id="configuration">Configuration</h2><details open><summary>the study (YAML, canonical)</summary><pre>'
                 + html.escape(str(attrs.get("config", ""))) + "</pre></details>")
    page = (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>biasdask results</title><style>{_STYLE}</style></head><body>"
        + "".join(parts)
        + f"<script>{_SCRIPT}</script></body></html>"
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
