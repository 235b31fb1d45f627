"""Faces of a results store beyond its tables (:mod:`biasdask.tables`): the words behind a number
(``biasdask words``, :func:`top_words`), the figures ``biasdask plot`` draws and the static HTML page
``biasdask report`` writes."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import jinja2
import numpy as np
import pandas as pd
import xarray as xr
from scipy.stats import kstest

from biasdask._calls import keyword_api
from biasdask.engine.frequency import frequency_profile, frequency_profiles
from biasdask.errors import BiasdaskError, IncompleteStoreError
from biasdask.io.fs import Locatable, Location, as_location
from biasdask.io.results import (
    FULL_VOCABULARY_TESTS,
    embedding_url,
    embeddings_of,
    open_cube,
    open_reliability,
    open_scores,
    read_null,
    scores_done,
    split_label,
    stop_reason,
)
from biasdask.study.inference import meta_analysis, retest_reliability, retest_table
from biasdask.study.reliability import agreement_table, consistency_tests
from biasdask.tables import (
    COLUMNS,
    Format,
    cube_table,
    empty_reason,
    format_agreement,
    format_retest,
    format_table,
    leaning,
    printed_cells,
    visible,
    word_list_family,
)

__all__ = [
    "captions",
    "cells_line",
    "figures",
    "least_normal_cell",
    "reliability",
    "reliability_figures",
    "reliability_tables",
    "summary",
    "top_words",
    "write_plots",
    "write_report",
    "LeastNormalCell",
    "Reliability",
]


def _scores_source(results: Locatable | xr.Dataset, language: str) -> xr.Dataset:
    if isinstance(results, xr.Dataset):
        return results
    return open_scores(results, language=language)


def _attribute_words(results: Locatable, language: str) -> set[str]:
    cube = open_cube(results)
    if "gender" not in cube["test"].values:
        return set()
    cube = cube.sel({"language": language, "test": "gender"})
    words: set[str] = set()
    for name in ("attribute_words_a", "attribute_words_b"):
        if name in cube:
            for text in np.asarray(cube[name].values).ravel():
                words.update(w.strip() for w in str(text).split(",") if w.strip())
    return words


@keyword_api("top_words(results, language=..., n=..., by=...)")
def top_words(
    results: Locatable | xr.Dataset,
    *,
    language: str,
    n: int = 30,
    by: Literal["u", "t"] = "u",
    method: str | None = None,
    association: str = "cosine",
) -> pd.DataFrame:
    """The words carrying the most bias on each side of a language's statistic.

    The full-vocabulary statistic is s = Σ_w t(w) (Y is the dummy language, t ≡ 0), so each word
    contributes t(w) to s; with ``by="u"`` the unweighted u(w) to Σ u (s of ``uniform``). The words
    with the largest contributions towards A (positive, e.g. *male*) and towards B (negative) are
    listed, ``n`` on each side.

    Parameters
    ----------
    results : str, Location or xarray.Dataset
        A results store (path, URL, :class:`~biasdask.Location` or fsspec mapper; its
        ``scores/<language>``), or a scores Dataset (``u``, ``t``, ``rank``,
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
    >>> import numpy as np
    >>> import biasdask
    >>> words = ["male", "female", "he", "she", "man", "woman", *(f"w{i}" for i in range(1000))]
    >>> emb = biasdask.as_embeddings(np.random.default_rng(0).standard_normal((len(words), 20)), words, language="en")
    >>> _ = biasdask.run({"output": "memory://examples/top_words/r.zarr", "languages": {"en": {"store": emb}},
    ...                   "tests": ["gender"], "n_permutations": 99, "seed": 1})
    >>> top = biasdask.top_words("memory://examples/top_words/r.zarr", language="en", n=3, by="t", method="zipf")
    >>> len(top), top.columns.tolist()[:4]
    (6, ['side', 'rank', 'word', 'frequency_rank'])
    """
    if by not in ("u", "t"):
        raise ValueError(f"by must be 'u' or 't', got {by!r}")
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    sc = _scores_source(results, language)
    methods = [str(m) for m in sc["method"].values] if "method" in sc.coords else []
    if by == "t":
        if method is None:
            method = "zipf" if "zipf" in methods else (methods[0] if methods else None)
        if method not in methods:
            raise BiasdaskError(f"no weighting {method!r} in the scores of {language} (has {', '.join(methods)})")
    u_name, t_name = ("u", "t") if association == "cosine" else (f"u_{association}", f"t_{association}")
    if u_name not in sc:
        # the study's order (a store lists its arrays in no fixed order)
        held = list(sc.attrs.get("associations", ())) or [
            "cosine",
            *(str(v)[2:] for v in sc.data_vars if str(v).startswith("u_")),
        ]
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
        attributes = _attribute_words(results, language)
    finite = np.flatnonzero(np.isfinite(score))
    order = finite[np.argsort(score[finite], kind="stable")]
    rows = []
    for side, picks in (("A", order[::-1][:n]), ("B", order[:n])):
        picks = [i for i in picks if (score[i] > 0 if side == "A" else score[i] < 0)]
        for r, i in enumerate(picks, start=1):
            weight = 1.0 if by == "u" else (t[i] / u[i] if u[i] != 0 else math.nan)
            rows.append(
                {
                    "side": side,
                    "rank": r,
                    "word": str(words[i]),
                    "frequency_rank": int(rank[i]),
                    "weight": weight,
                    "u": u[i],
                    "t": t[i],
                    "share_of_s": score[i] / total if total else math.nan,
                    "attribute": str(words[i]) in attributes,
                }
            )
    table = pd.DataFrame(
        rows, columns=["side", "rank", "word", "frequency_rank", "weight", "u", "t", "share_of_s", "attribute"]
    )
    table.attrs.update(language=language, by=by, method=method or "uniform", s=total, association=association)
    return table


class LeastNormalCell(NamedTuple):
    """The cell whose null is furthest from a normal one (:func:`least_normal_cell`)."""

    cell: tuple[str, str, str]
    """(language, method, test)."""
    distance: float
    """The Kolmogorov-Smirnov statistic against N(0, 1)."""


def least_normal_cell(results: Locatable) -> LeastNormalCell | None:
    """The cell whose stored null distribution is furthest from a normal one, and that distance.

    The distance is the Kolmogorov-Smirnov statistic between the standardised null (its own mean
    and sample SD) and N(0, 1): the normal approximation (z, p_normal) is least trustworthy there.
    None when no cell has a stored null.
    """
    loc = as_location(results)
    cube = open_cube(loc)
    best = None
    for lang in cube["language"].values:
        for method in cube["method"].values:
            for test in cube["test"].values:
                cell = (str(lang), str(method), str(test))
                if not np.isfinite(float(cube["statistic"].sel(dict(zip(("language", "method", "test"), cell))))):
                    continue
                try:
                    null = read_null(loc, *cell)
                except IncompleteStoreError:
                    continue
                sd = null.std(ddof=1) if null.size > 1 else 0.0
                distance = 1.0 if sd == 0 else float(kstest((null - null.mean()) / sd, "norm").statistic)
                if best is None or distance > best[1]:
                    best = LeastNormalCell(cell, distance)
    return best


def figures(
    location: Locatable,
    *,
    cell: tuple[str, str, str] | None = None,
    profiles: dict[str, xr.Dataset] | None = None,
) -> dict[str, Any]:
    """The figures of a results store, by file stem (``overview``, ``effect_sizes``, ``null_...``,
    ``frequency_profile_...``), as matplotlib Figures. See :func:`write_plots`; ``profiles``: the
    languages' frequency profiles when already computed (default:
    :func:`biasdask.engine.frequency.frequency_profiles` of the store)."""
    from biasdask import plot  # needs matplotlib, the plot extra

    loc = as_location(location)
    results = open_cube(loc)
    out: dict[str, Any] = {}
    tests = [str(t) for t in results["test"].values]
    test = "gender" if "gender" in tests else tests[0]
    out["overview"] = plot.plot_overview(results, test=test)
    if len(tests) > 1:
        out["effect_sizes"] = plot.plot_effect_heatmap(results)
    out.update(_forests(results))
    distance = None
    if cell is None:
        found = least_normal_cell(loc)
        if found is not None:
            cell, distance = found
    else:
        try:
            values = results.sel(dict(zip(("language", "method", "test"), cell)))
        except KeyError:
            raise BiasdaskError(f"--cell: no cell ({', '.join(cell)}) in {loc}") from None
        if not np.isfinite(float(values["statistic"])):
            raise BiasdaskError(f"--cell: cell ({', '.join(cell)}) of {loc} was not run")
    if cell is not None:
        lang, method, test_ = cell
        values = results.sel({"language": lang, "method": method, "test": test_})
        try:
            null = read_null(loc, lang, method, test_)
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
                **(
                    {"xlabel": f"{test_} under random relabelling of the two groups' words"}
                    if test_ in ("rnd", "rnsb", "ect", "nas")
                    else {}
                ),
            )
    if profiles is None:
        profiles = frequency_profiles(loc)
    if profiles:
        # t of "uniform" is u itself: its figure would repeat frequency_profile_u
        for score in ["u", *(f"t_{m}" for m in results["method"].values if m != "uniform")]:
            if all(score in [str(s) for s in p["score"].values] for p in profiles.values()):
                out[f"frequency_profile_{score}"] = plot.plot_frequency_profile(profiles, score=score)
    return out


def _forests(results: xr.Dataset) -> dict[str, Any]:
    """A forest plot of every test whose effect size has an interval in at least two languages."""
    from biasdask import plot  # needs matplotlib, the plot extra

    out: dict[str, Any] = {}
    if "effect_size_se" not in results:
        return out
    for test in (str(t) for t in results["test"].values):
        se = np.asarray(results["effect_size_se"].sel({"test": test}).isel(method=0).values, dtype=np.float64)
        if np.count_nonzero(np.isfinite(se) & (se > 0)) < 2:
            continue
        try:
            out[f"forest_{test}"] = plot.plot_forest(meta_analysis(results, test=test))
        except BiasdaskError:
            continue  # e.g. a model that cannot be fitted: the table still shows every interval
    return out


def write_plots(
    results: Locatable,
    out_dir: str | Path,
    *,
    cell: tuple[str, str, str] | None = None,
) -> list[Path]:
    """Write the figures of a results store as PNG files and return their paths.

    - ``overview.png``: per language, the effect size d (defined on u, the same for every
      weighting) beside z of every weighting, which differs between them (the point of the weightings);
    - ``effect_sizes.png`` (several tests): language × test heatmap of d;
    - ``null_<lang>_<method>_<test>.png``: the sampled null distribution of one cell with its
      observed statistic; by default the cell whose null is least normal (Kolmogorov-Smirnov
      distance to a normal), where z and p(normal) deserve the least trust;
    - ``frequency_profile_u.png`` and ``frequency_profile_t_<method>.png`` (every method but
      ``uniform``, whose t is u): per language, the mean bias per log10-rank bin (Valentini et al. 2022,
      Figure 1), when the store holds per-word scores;
    - ``internal_consistency.png`` and, for a study of several embeddings, ``retest_<test>.png``: the
      figures of :func:`reliability_figures`, where the store has them.

    The results store of a study of several embeddings writes each embedding's figures into
    ``<out_dir>/<name>/`` and the study's (test-retest, α of every embedding) into ``out_dir``.
    """
    loc = as_location(results)
    names = embeddings_of(loc)
    if names:
        paths = []
        for name in names:
            paths += write_plots(_embedding(loc, name), Path(out_dir) / name, cell=cell)
        figs = reliability_figures(reliability(loc))
    else:
        figs = {**figures(loc, cell=cell), **reliability_figures(reliability(loc))}
        paths = []
    return paths + _write_pngs({name: _png(fig) for name, fig in figs.items()}, out_dir)


def _embedding(loc: Location, name: str) -> Location:
    """The results cube of the embedding ``name`` of the study of several embeddings at ``loc``."""
    return Location(embedding_url(loc.url, name), loc.storage_options)


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


def _cube_rows(table: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """The report's table: the printed columns of :mod:`biasdask.tables` (headers, text) with the raw value
    of each cell to sort by, and the s, d, z cells coloured by the way they lean (:func:`leaning`)."""
    readable = printed_cells(table)
    by_header = {c.header: c for c in COLUMNS}
    raw_of = {"p(normal)": "log10_p_normal"}
    columns = [{"key": d, "header": d, "css": "text", "title": d} for d in ("language", "test", "method")]
    columns += [
        {
            "key": by_header[h].key,
            "header": h,
            "css": "text" if by_header[h].kind == "text" else "",
            "title": by_header[h].description,
        }
        for h in readable.columns
    ]
    if "note" not in readable.columns and "note" in table:
        readable["note"] = table["note"].to_numpy()
        columns.append({"key": "note", "header": "note", "css": "text", "title": by_header["note"].description})
    rows = []
    for pos, (idx, row) in enumerate(readable.iterrows()):
        lean = leaning(idx[1])
        cells = [{"text": v, "sort": v, "css": "text"} for v in idx]
        for col in columns[3:]:
            column = by_header[col["header"]]
            text = str(row[col["header"]])
            if column.kind == "text":
                cells.append({"text": text, "sort": text, "css": "text" + (" note" if column.key == "note" else "")})
                continue
            raw = table[raw_of.get(col["header"], column.key)].iloc[pos]
            raw = float(raw) if raw is not None else math.nan
            finite = np.isfinite(raw) and not (column.kind == "count" and raw < 0)
            css = "num"
            if column.key in ("s", "d", "z") and finite and raw != 0 and lean:
                css += " toward-a" if raw * lean > 0 else " toward-b"
            cells.append({"text": text, "sort": repr(raw) if finite else "", "css": css})
        empty = "s" in table and not np.isfinite(table["s"].iloc[pos])
        rows.append({"cells": cells, "empty": empty})
    return columns, rows


def _span(values: np.ndarray) -> str:
    lo, hi = float(np.min(values)), float(np.max(values))
    return f"{lo:.2f}" if lo == hi else f"{lo:.2f} to {hi:.2f}"


def summary(results: xr.Dataset, alpha: float | None = None) -> list[str]:
    """Sentences on a results cube, as the report opens with: how many cells hold a result and why the
    others are empty; per test (and weighting), which languages lean towards A and which towards B (in
    the test's own sign convention, :func:`biasdask.tables.leaning`), the range of d, where p < ``alpha``
    and where its corrected p is (default ``alpha``: the study's, else 0.05); and which tests compare
    different word lists across languages (``word_sets``)."""
    table = cube_table(results)
    correction = results["p_value_adjusted"].attrs.get("correction") if "p_value_adjusted" in results else None
    if alpha is None:
        alpha = float(results["p_value_adjusted"].attrs.get("alpha", 0.05)) if correction else 0.05
    lines = [cells_line(results)]
    for test in dict.fromkeys(table.index.get_level_values("test")):
        part = table.xs(test, level="test")
        lean = leaning(test)
        methods = list(dict.fromkeys(part.index.get_level_values("method")))
        if "t_method" in part and set(part["t_method"]) == {"none"}:
            methods = methods[:1]  # a classic test: the same values under every weighting
        for method in methods:
            cell = part.xs(method, level="method")
            ok = np.isfinite(cell["s"].to_numpy(dtype=float))
            if not ok.any():
                continue
            label = test if len(methods) == 1 else f"{test} ({method} weighting)"
            s = cell["s"].to_numpy(dtype=float)
            langs = np.asarray(cell.index, dtype=object)
            text = f"{label}: {int(ok.sum())} language(s) with a result"
            if lean:
                towards_a = langs[ok & (s * lean > 0)]
                towards_b = langs[ok & (s * lean < 0)]
                text += (
                    f"; towards A in {', '.join(towards_a) or 'none'}, towards B in {', '.join(towards_b) or 'none'}"
                )
            else:
                text += f"; values {_span(s[ok])} (no direction)"
            if "d" in cell and np.isfinite(cell["d"].to_numpy(dtype=float)[ok]).any():
                d = cell["d"].to_numpy(dtype=float)[ok]
                text += f"; d {_span(d[np.isfinite(d)])}"
            if "p" in cell:
                p = cell["p"].to_numpy(dtype=float)[ok]
                tested = np.isfinite(p)
                if tested.any():
                    text += f"; p < {alpha:g} in {int((p[tested] < alpha).sum())} of {int(tested.sum())}"
                if correction and correction != "none" and "p_adj" in cell:
                    adj = cell["p_adj"].to_numpy(dtype=float)[ok]
                    text += f" ({int((adj[np.isfinite(adj)] < alpha).sum())} after {correction} correction)"
            if "p_placebo" in cell and np.isfinite(cell["p_placebo"].to_numpy(dtype=float)[ok]).any():
                pp = cell["p_placebo"].to_numpy(dtype=float)[ok]
                text += (
                    f"; d against that of random word pairs of the same frequencies (placebo) p < {alpha:g} in "
                    f"{int((pp[np.isfinite(pp)] < alpha).sum())} of {int(np.isfinite(pp).sum())}"
                )
            lines.append(text + ".")
        if "sets" in part:
            sources: dict[str, list[str]] = {}
            for ((lang, _), src), value in zip(part["sets"].items(), part["s"].to_numpy(dtype=float)):
                if src and np.isfinite(value):  # the lists of cells that hold a value
                    sources.setdefault(word_list_family(src), []).append(lang)
            if len(sources) > 1 and split_label(test)[0] not in FULL_VOCABULARY_TESTS:
                listed = "; ".join(f"{src} in {', '.join(dict.fromkeys(langs))}" for src, langs in sources.items())
                lines.append(
                    f"{test} measures different word lists in different languages ({listed}): its values are "
                    "not on one scale across them."
                )
    return lines


def cells_line(results: xr.Dataset) -> str:
    """``"52 of 70 cells hold a result; 18 are empty: 12 n/a, 4 coverage, 2 missing words"``: cells with
    a statistic, and why the others have none (:func:`biasdask.tables.empty_reason`; for cells not run,
    why the run stopped, as it recorded it: :func:`biasdask.io.results.stop_reason`)."""
    stat = np.asarray(results["statistic"].values, dtype=float).ravel()
    notes = np.asarray(results["note"].values).ravel() if "note" in results else np.full(stat.size, "")
    done = np.asarray(results["done"].values).ravel() if "done" in results else np.ones(stat.size, bool)
    reasons: dict[str, int] = {}
    for s, note, d in zip(stat, notes, done):
        if not np.isfinite(s):
            reason = empty_reason(str(note)) if d else "not run"
            reasons[reason] = reasons.get(reason, 0) + 1
    n = int(np.isfinite(stat).sum())
    text = f"{n} of {stat.size} cells hold a result"
    if reasons:
        text += f"; {stat.size - n} are empty: " + ", ".join(
            f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])
        )
    stopped = stop_reason(results)
    if "not run" in reasons and stopped is not None:
        text += f" ({stopped})"
    return text


def captions(results: xr.Dataset, names: Sequence[str]) -> dict[str, str]:
    """What each figure of :func:`figures` shows, in a sentence or two, by name."""
    out = {}
    for name in names:
        if name == "overview":
            tests = [str(t) for t in results["test"].values]
            test = "gender" if "gender" in tests else tests[0]
            shown = results.sel({"test": test})
            a_words = _first_words(shown, "attribute_words_a")
            b_words = _first_words(shown, "attribute_words_b")
            sides = (
                f"A is the first attribute set ({a_words}), B the second ({b_words})"
                if a_words
                else "A is the first attribute set, B the second"
            )
            out[name] = (
                f"Test {test}, per language: the effect size d (left; > 0 leans towards A) and how far s lies in "
                f"its permutation null, z, under each weighting (right; symmetric-log axis, dotted lines at ±1.96). {sides}."
            )
        elif name == "effect_sizes":
            out[name] = (
                "Effect size d by language and test. Red leans towards A, blue towards B, each in its test's own "
                "sign convention; grey cells are empty and say why. A column marked † compares different word "
                "lists across languages (its cells are labelled with their source): its values are not on one scale."
            )
        elif name.startswith("forest_"):
            out[name] = (
                f"Forest plot of test {name.removeprefix('forest_')}: each language's effect size d (the square's area "
                "proportional to its weight) with its interval drawn over it (dashed: the attribute-word spread, how "
                "far d moves when one attribute word a side is replaced by random words of its frequency, which is "
                "no confidence interval), and the random-effects pooled d (diamond: its confidence interval; line: "
                "the prediction interval for another language), with τ², I² and Q."
            )
        elif name.startswith("null_"):
            out[name] = (
                "The sampled permutation null of one cell with its observed statistic s: the cell whose null is least "
                "normal (Kolmogorov-Smirnov distance), where z and p(normal) deserve the least trust."
            )
        elif name == "frequency_profile_u":
            out[name] = (
                "Frequency profile: the mean association u of the words in each frequency-rank bin (log10 rank), per "
                "language, with the bin's share of s; each panel has its own scale."
            )
        elif name.startswith("frequency_profile_t_"):
            out[name] = (
                f"Frequency profile of t under the {name.removeprefix('frequency_profile_t_')} weighting: how much "
                "each frequency-rank bin contributes to s, per language; each panel has its own scale."
            )
        elif name.startswith("retest_"):
            out[name] = (
                f"Test-retest of test {name.removeprefix('retest_')}: each language's effect size d under one embedding "
                "(x) against another (y), a panel per pair, with Pearson's r and Spearman's ρ over the languages, their "
                "bootstrap intervals and n. On the dashed line y = x a language has the same d under both; a cloud "
                "along a rising line off it keeps the languages' order but not their values (ICC in the table)."
            )
        elif name == "internal_consistency":
            out[name] = (
                "Internal consistency per language: Cronbach's α (dots) of the attribute words (or base pairs) as "
                "items, and the split-half reliability (diamonds, Spearman-Brown corrected), per test; dotted at 0.7. "
                "Below it the words of a side do not measure one thing, and d can rest on a few of them."
            )
        else:
            out[name] = name
    return out


def _first_words(results: xr.Dataset, variable: str, n: int = 4) -> str:
    if variable not in results:
        return ""
    for lang in results["language"].values:
        for text in np.asarray(results[variable].sel({"language": lang}).values).ravel():
            if str(text):
                words = str(text).split(", ")
                return f"{lang}: {', '.join(words[:n])}{', …' if len(words) > n else ''}"
    return ""


def _words_rows(table: pd.DataFrame, title: str) -> dict:
    return {"title": title, "rows": list(table.itertuples())}


def write_report(
    location: Locatable,
    out_dir: str | Path,
    *,
    n_words: int = 15,
    plots_dir: str | Path | None = None,
) -> Path:
    """Write a self-contained static HTML report of a results store: ``<out_dir>/index.html``.

    One file, nothing to serve and nothing fetched when it is viewed (figures are embedded as
    ``data:`` images, the script and style are inline, and a Content-Security-Policy forbids any
    request): mail it, or open it from disk. It opens with how many cells hold a result and a short
    :func:`summary`, then the figures of :func:`write_plots` with captions, then every cell as a table
    that sorts on a click (``index.html#sort=d:desc`` sorts on load), per language its notes and the
    words carrying the most bias (:func:`top_words`, by u and by t of every weighting), and the
    study's configuration. A store with reliability figures (:func:`reliability`) gets a section of
    them before the table. The results store of a study of several embeddings writes each embedding's
    report into ``<out_dir>/<name>/`` and a page for the study linking them, with its test-retest.

    Parameters
    ----------
    location : str, Location or fsspec mapper
        The results store.
    out_dir : str or Path
        Directory to write ``index.html`` into (created if needed).
    n_words : int
        Words per side in each language's lists.
    plots_dir : str or Path, optional
        Also write the page's figures there as PNG files, as :func:`write_plots` does (each figure
        is drawn once for both).

    Returns
    -------
    Path
        The page.
    """
    loc = as_location(location)
    if embeddings_of(loc):
        return _write_study_report(loc, out_dir, n_words=n_words, plots_dir=plots_dir)
    results = open_cube(loc)
    methods = [str(m) for m in results["method"].values]
    languages, profiles = [], {}
    # one read of each language's scores for its word lists and its frequency profile, then let go of
    # it (the scores of a whole study need not fit in memory)
    for lang in [str(v) for v in results["language"].values]:
        notes = sorted({str(n) for n in np.asarray(results["note"].sel({"language": lang}).values).ravel() if str(n)})
        words = []
        if scores_done(loc, lang):
            scores = open_scores(loc, language=lang).load()
            if not {"tokens_a", "tokens_b"} & set(scores.attrs):  # older stores: the cube's attribute labels
                scores.attrs["tokens_a"] = sorted(_attribute_words(loc, lang))
            profiles[lang] = frequency_profile(scores, language=lang)
            words.append(_words_rows(top_words(scores, language=lang, n=n_words, by="u"), "by u (unweighted)"))
            for m in methods:
                if m != "uniform":
                    top = top_words(scores, language=lang, n=n_words, by="t", method=m)
                    words.append(_words_rows(top, f"by t ({m} weighting)"))
            del scores
        languages.append({"code": lang, "notes": notes, "words": words})
    table = cube_table(results)
    drawn = figures(loc, profiles=profiles)
    pngs = {name: _png(fig) for name, fig in drawn.items()}
    section, reliability_pngs = _reliability_section(reliability(loc), results, first_number=len(pngs) + 1)
    if plots_dir is not None:
        _write_pngs({**pngs, **reliability_pngs}, plots_dir)
    texts = captions(results, list(pngs))
    columns, rows = _cube_rows(table)
    legend = "; ".join(f"{c['header']}: {c['title']}" for c in columns[3:] if c["key"] not in ("note",)) + "."
    env = _environment()
    attrs = dict(results.attrs)
    attrs.setdefault("sd_ddof", 1)
    page = env.get_template("report.html.j2").render(
        attrs={
            k: attrs.get(k, "")
            for k in ("seed", "alternative", "similarity", "sd_ddof", "biasdask_version", "created", "config")
        },
        cells_line=cells_line(results),
        n_languages=results.sizes["language"],
        methods=methods,
        tests=[str(t) for t in results["test"].values],
        summary=summary(results)[1:],
        figures=[{"name": n, "caption": texts[n], "src": _data_uri(data)} for n, data in pngs.items()],
        reliability=section,
        legend=legend,
        columns=columns,
        rows=rows,
        languages=languages,
    )
    return _write_page(page, out_dir)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("biasdask", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        # every text shown as itself: a word's control characters and direction marks as escapes
        finalize=lambda value: visible(value, keep="\n\t") if type(value) is str else value,  # not Markup
    )


def _write_page(page: str, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _reliability_section(
    found: Reliability, results: xr.Dataset, *, first_number: int
) -> tuple[dict[str, list[dict]], dict[str, bytes]]:
    """The report's reliability section (its figures, numbered from ``first_number``, and its tables) and
    the figures as PNG by name; both empty when the store has nothing to show."""
    pngs = {name: _png(fig) for name, fig in reliability_figures(found).items()}
    texts = captions(results, list(pngs))
    drawn = [
        {"name": n, "caption": texts[n], "src": _data_uri(data), "number": first_number + i}
        for i, (n, data) in enumerate(pngs.items())
    ]
    tables = [{"title": title, "text": text} for title, text in reliability_tables(found).items()]
    return {"figures": drawn, "tables": tables}, pngs


def _write_study_report(loc: Location, out_dir: str | Path, *, n_words: int, plots_dir: str | Path | None) -> Path:
    """The report of a study of several embeddings: each embedding's report in ``<out_dir>/<name>/``, and
    a page for the study linking them with the reliability section (test-retest across them)."""
    found = reliability(loc)
    embeddings = []
    for name, cube in found.cubes.items():
        plots = None if plots_dir is None else Path(plots_dir) / name
        write_report(_embedding(loc, name), Path(out_dir) / name, n_words=n_words, plots_dir=plots)
        embeddings.append({"name": name, "href": f"{name}/index.html", "cells_line": cells_line(cube)})
    section, pngs = _reliability_section(found, next(iter(found.cubes.values())), first_number=1)
    if plots_dir is not None:
        _write_pngs(pngs, plots_dir)
    page = _environment().get_template("study.html.j2").render(embeddings=embeddings, reliability=section)
    return _write_page(page, out_dir)


# ----------------------------------------------------------------------------------------------------
# Reliability


class Reliability(NamedTuple):
    """What a results store holds on its reliability (:func:`reliability`)."""

    cubes: dict[str, xr.Dataset]
    """Embedding name -> its results cube (one, named ``""``, for a study of one embedding)."""
    retest: xr.Dataset | None
    """:func:`biasdask.retest_reliability` of the cubes (at its defaults, of the first weighting: d is the
    same under every one); None for one embedding, or embeddings without a test in common."""
    agreement: dict[str, xr.Dataset]
    """Embedding name -> its stored agreement across scoring rules (``reliability/agreement``), where stored."""

    def consistency(self) -> dict[str, xr.Dataset]:
        """Embedding name -> the cells of its cube with a Cronbach's α or split-half (the first weighting's,
        labelled ``all``: they are the same under every weighting); none where it has none."""
        out = {}
        for name, cube in self.cubes.items():
            tests = consistency_tests(cube)
            if tests:
                cells = cube.sel({"test": tests}).isel(method=[0])
                out[name] = cells.assign_coords(method=np.array(["all"], dtype=object))
        return out

    def __bool__(self) -> bool:
        return self.retest is not None or bool(self.agreement) or bool(self.consistency())


def reliability(location: Locatable) -> Reliability:
    """The reliability figures of a results store: test-retest across the embeddings of a study of several
    (computed from their cubes by :func:`biasdask.retest_reliability` with its defaults, as ``biasdask
    reliability`` prints them), each cube's internal consistency (the cube variables ``cronbach_alpha``
    and ``split_half``) and its stored agreement across scoring rules."""
    loc = as_location(location)
    names = embeddings_of(loc)
    places = {name: _embedding(loc, name) for name in names} or {"": loc}
    cubes = {name: open_cube(place) for name, place in places.items()}
    agreements = {}
    for name, place in places.items():
        try:
            agreements[name] = open_reliability(place, kind="agreement")
        except IncompleteStoreError:
            continue
    retest = None
    if len(cubes) > 1:
        methods = [
            m
            for m in map(str, next(iter(cubes.values()))["method"].values)
            if all(m in c["method"] for c in cubes.values())
        ]
        try:
            retest = retest_reliability(cubes, method=methods[:1] or None)
        except BiasdaskError:  # no test in common: nothing to compare
            retest = None
    return Reliability(cubes, retest, agreements)


def reliability_figures(found: Reliability) -> dict[str, Any]:
    """The figures of :func:`reliability` by file stem: ``retest_<test>`` (each language's d under two
    embeddings, a panel per pair; :func:`biasdask.plot.plot_retest`) and ``internal_consistency`` (α
    and split-half per language; :func:`biasdask.plot.plot_internal_consistency`); none where there is
    nothing to draw."""
    from biasdask import plot  # needs matplotlib, the plot extra

    out: dict[str, Any] = {}
    if found.retest is not None:
        for test in map(str, found.retest["test"].values):
            if int(found.retest["n"].sel({"test": test}).max()) > 0:
                out[f"retest_{test}"] = plot.plot_retest(found.cubes, found.retest, test=test)
    consistency = found.consistency()
    if consistency:
        out["internal_consistency"] = plot.plot_internal_consistency(
            consistency if len(found.cubes) > 1 else consistency[""]
        )
    return out


def reliability_tables(found: Reliability, fmt: Format = "table") -> dict[str, str]:
    """The tables of :func:`reliability` as text, by heading: test-retest (:func:`biasdask.tables.format_retest`),
    each embedding's Cronbach's α and split-half per language and test (:func:`biasdask.tables.format_table`
    of those columns) and its agreement across scoring rules (:func:`biasdask.tables.format_agreement`)."""
    out = {}
    if found.retest is not None:
        embeddings = ", ".join(found.cubes)
        method = str(found.retest["method"].values[0])
        heading = f"test-retest across the embeddings {embeddings} (d is the same under every weighting: {method}'s)"
        out[heading] = format_retest(retest_table(found.retest), fmt, ci_level=float(found.retest.attrs["ci_level"]))
    consistency = found.consistency()
    for name in found.cubes:
        of = f" (embedding {name})" if name else ""
        if name in consistency:
            heading = f"internal consistency{of}: Cronbach's alpha and split-half per language, under every weighting"
            out[heading] = format_table(consistency[name], fmt, columns=["alpha", "split_half"])
        figures = found.agreement.get(name)
        if figures is not None:
            table = agreement_table(figures)
            if len(table):
                text = format_agreement(table, fmt, ci_level=float(figures.attrs["ci_level"]))
                out[f"agreement across scoring rules{of}"] = text
    return out
