"""``biasdask demo``: the main job on an embedded default, with no download.

It generates a multilingual embedding set (26 languages of the catalog, frequency-ordered
vocabularies) with a planted gender direction whose strength differs per language, writes each as a
word2vec binary file, ingests them to Zarr, runs both methods of the full-vocabulary test on a
``LocalCluster``, writes the results store; the CLI then prints the table (``biasdask show``), and the
figures (``plots/``) and the HTML report (``report/index.html``) are written.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
import yaml
from distributed import Client
from tqdm import tqdm

from biasdask.engine.cluster import client_scope
from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError
from biasdask.lexicon import languages as catalog
from biasdask.lexicon.scripts import char_script
from biasdask.progress import wanted
from biasdask.report import write_report
from biasdask.stats.elementary import log
from biasdask.stats.linalg import dot
from biasdask.study.run import run

__all__ = [
    "MIN_WORDS",
    "demo",
    "DemoLanguage",
    "filler_words",
    "generate",
    "has_plot_extra",
    "planted_strengths",
    "write_language",
]

_LN10 = 2.302585092994045684  # the generated lengths use this package's log: the same bits on every CPU


@dataclass(frozen=True)
class DemoLanguage:
    """A generated language: its code, file and the planted strength of the gender direction."""

    code: str
    path: Path
    strength: float


def planted_strengths(codes: list[str], seed: int = 7) -> dict[str, float]:
    """Distinct planted strengths in [-0.1, 0.4], assigned to the languages in a shuffled order."""
    rng = np.random.default_rng(seed)
    values = np.linspace(-0.1, 0.4, len(codes))
    rng.shuffle(values)
    return {c: float(v) for c, v in zip(codes, values)}


def filler_words(male: str, female: str, n: int) -> list[str]:
    """``n`` distinct made-up words in the script of ``male`` and ``female``, none of them either: strings
    of letters near theirs in Unicode, all of one length (``male``, ``female`` give ``aaaa``, ``aaab``...
    for 20,000 words; 男, 女 nearby ideographs), so that they are word-like tokens a placebo may draw
    (:mod:`biasdask.lexicon.scripts`).

    Examples
    --------
    >>> filler_words("male", "female", 3), filler_words("male", "female", 20_000)[:2]
    (['a', 'b', 'c'], ['aaaa', 'aaab'])
    """
    alphabet: list[str] = []
    for char in sorted({c for c in male + female if unicodedata.category(c)[0] == "L"}):
        for code in range(max(ord(char) - 12, 0), ord(char) + 13):
            near = chr(code)
            same = unicodedata.category(near) == unicodedata.category(char) and char_script(near) == char_script(char)
            if same and near not in alphabet:
                alphabet.append(near)
    alphabet.sort()
    length = 1
    while len(alphabet) ** length < n + 2:
        length += 1
    words = []
    for i in itertools.count():
        digits = [(i // len(alphabet) ** k) % len(alphabet) for k in reversed(range(length))]
        word = "".join(alphabet[d] for d in digits)
        if word not in (male, female):
            words.append(word)
        if len(words) == n:
            return words
    raise AssertionError("unreachable")


def write_language(
    path: Path,
    male: str,
    female: str,
    strength: float,
    n_words: int,
    dim: int,
    seed: int,
    words: Sequence[str] | None = None,
) -> None:
    """Write one synthetic language as a word2vec binary file.

    Every word vector is isotropic noise plus ``strength`` times a hidden unit direction g; the
    attribute words (the language's *male* and *female*) sit near +g and -g at ranks 40 and 41, so
    the expected association of a word grows with ``strength``. Vector lengths shrink slowly with rank,
    as in real embeddings, where the norm carries frequency. ``words``: the vocabulary, in rank order
    (default :func:`filler_words`); its rows 40 and 41 become ``male`` and ``female``.
    """
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(dim)
    g /= np.sqrt(dot(g, g))
    vectors = rng.standard_normal((n_words, dim)) / np.sqrt(dim) + strength * g
    vectors[40] = 2.0 * g + 0.3 * rng.standard_normal(dim) / np.sqrt(dim)
    vectors[41] = -2.0 * g + 0.3 * rng.standard_normal(dim) / np.sqrt(dim)
    vectors *= (1.5 - 0.1 * log(np.arange(1.0, n_words + 1.0)) / _LN10)[:, None]
    words = list(words) if words is not None else filler_words(male, female, n_words)
    words[40], words[41] = male, female
    body = b"".join(w.encode("utf-8") + b" " + v.tobytes() for w, v in zip(words, vectors.astype("<f4")))
    path.write_bytes(f"{n_words} {dim}\n".encode() + body)


def generate(
    out_dir: Path, n_words: int = 20_000, dim: int = 50, seed: int = 7, languages: Sequence[str] | None = None
) -> list[DemoLanguage]:
    """Generate the 26 catalog languages into ``out_dir`` (one ``XX.bin`` each), or only ``languages``
    (catalog codes), each with the file and planted strength it has among all 26."""
    table = catalog()
    codes = list(table["code"])
    unknown = sorted(set(languages or ()) - set(codes))
    if unknown:
        raise ValueError(f"generate: no demo language {', '.join(unknown)} (choose from {', '.join(codes)})")
    strengths = planted_strengths(codes, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = []
    for i, row in enumerate(table.itertuples()):
        if languages is not None and row.code not in languages:
            continue
        path = out_dir / f"{row.code}.bin"
        write_language(path, row.male, row.female, strengths[row.code], n_words, dim, seed * 1000 + i)
        result.append(DemoLanguage(row.code, path, strengths[row.code]))
    return result


#: the smallest vocabulary of a generated demo language
MIN_WORDS = 100


def has_plot_extra() -> bool:
    """Whether matplotlib (the ``plot`` extra), which the figures and the report need, can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def demo(
    output: str | Path = "biasdask-demo",
    *,
    n_words: int = 20_000,
    dim: int = 50,
    n_permutations: int = 9999,
    seed: int = 7,
    client: Client | bool | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    progress: bool | None = None,
    plots: bool | None = None,
) -> xr.Dataset:
    """Run the embedded default study end to end; returns the results cube.

    Parameters
    ----------
    output
        Directory for the generated files, the stores (``emb/XX.zarr``), ``results.zarr``,
        ``study.yaml`` and the plots (``plots/*.png``).
    n_words, dim
        Size of each generated language.
    n_permutations, seed
        Of the permutation tests.
    client, scheduler, n_workers
        Where to run: a client, or ``False`` for Dask's threads in this process; by default a cluster
        found or started (:func:`biasdask.get_client`: the ``scheduler`` address, else a configured one,
        else a new ``LocalCluster`` of ``n_workers``).
    progress
        Show progress bars.
    plots
        Write the PNG figures (``plots/``) and the HTML report (``report/index.html``); by default when
        matplotlib (the ``plot`` extra) is installed.
    """
    if n_words < MIN_WORDS:
        raise BiasdaskError(f"demo: --words must be at least {MIN_WORDS} (the attribute words sit at ranks 41 and 42)")
    if dim < 2:
        raise BiasdaskError(f"demo: --dim must be at least 2, got {dim}")

    out = Path(output).resolve()
    raw_dir, emb_dir = out / "raw", out / "emb"
    scope = contextlib.nullcontext(None) if client is False else client_scope(client, scheduler, n_workers)
    with scope as c:
        print(f"biasdask demo: generating 26 languages x {n_words} words x {dim} dims in {raw_dir}", file=sys.stderr)
        langs = generate(raw_dir, n_words, dim, seed)
        for lang in tqdm(langs, desc="ingest", unit="language", disable=not wanted(progress), file=sys.stderr):
            # small files: parsed in this process (ingest uses the cluster from 256 MiB on)
            ingest(str(lang.path), str(emb_dir / f"{lang.code}.zarr"), language=lang.code, progress=False)
        study = {
            "output": str(out / "results.zarr"),
            "embeddings": str(emb_dir / "{language}.zarr"),
            "languages": [lang.code for lang in langs],
            "methods": ["uniform", "zipf"],
            "tests": ["gender"],
            "n_permutations": n_permutations,
            "seed": seed,
        }
        (out / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
        results = run(study, client=c, overwrite=True, progress=progress)
    results = results.assign_coords(planted_strength=("language", [lang.strength for lang in langs]))
    if plots is None:
        plots = has_plot_extra()
    if plots:
        write_report(str(out / "results.zarr"), out / "report", plots_dir=out / "plots")
    return results
