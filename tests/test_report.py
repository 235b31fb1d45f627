"""What a researcher reads: show's tables, the words behind a number, the figures' defaults and the
static HTML report, opened in a real headless browser."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
import shutil
import socket
import subprocess
import sys
import threading
from html.parser import HTMLParser

import numpy as np
import pytest
import scipy.stats
import xarray as xr

import biasdask
from biasdask.io import results as R
from biasdask.report import least_normal_cell, top_words
from biasdask.tables import cube_table, format_table

LANGS, METHODS, TESTS = ["en", "fr", "eu"], ["uniform", "zipf"], ["gender", "weat7"]
WORDS = ["the", "he", "she", "man", "woman", "king", "queen", "nurse", "soldier", "of"]


def _scores():
    rng = np.random.default_rng(3)
    u = rng.normal(0, 0.1, len(WORDS)).astype(np.float32)
    u[3], u[4] = 0.5, -0.4  # man, woman
    rank = np.arange(1, len(WORDS) + 1)
    z = (1 / rank) / np.sum(1 / rank)
    t = np.stack([u, (z * u).astype(np.float32)])
    return xr.Dataset(
        {"u": ("word", u), "t": (("method", "word"), t), "rank": ("word", rank)},
        coords={"word": np.array(WORDS, dtype=object), "method": np.array(METHODS, dtype=object)},
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A finished study written through the results API: values, notes, a normal and a bimodal null."""
    url = str(tmp_path_factory.mktemp("report") / "results.zarr")
    R.create_results(
        url,
        LANGS,
        METHODS,
        TESTS,
        {"seed": 1, "alternative": "two-sided", "similarity": "cosine"},
        "languages: [en, fr, eu]\nseed: 1\n",
    )
    rng = np.random.default_rng(0)
    for i, lang in enumerate(LANGS[:2]):
        for m in METHODS:
            z = [489.0, -3.5][i] if m == "uniform" else [2.1, 0.4][i]
            R.write_cell(
                url,
                lang,
                m,
                "gender",
                {
                    "statistic": z / 10,
                    "effect_size": [1.2, -0.3][i],
                    "z_score": z,
                    "p_value": 1 / 10000,
                    "p_value_normal": float(scipy.stats.norm.sf(abs(z)) * 2),
                    "n_x": 400_000 + i,
                    "n_y": 400_000 + i,
                    "n_permutations": 9999,
                    "alternative": "two-sided",
                    "t_method": m,
                    "attribute_words_a": "man, he",
                    "attribute_words_b": "woman, she",
                    "missing_attribute_words": "A: mann" if lang == "fr" else "",
                    "note": "warning: attribute words not in the vocabulary, left out: A: mann" if lang == "fr" else "",
                },
            )
            null = (
                rng.normal(size=999)
                if (lang, m) != ("fr", "zipf")
                else np.r_[rng.normal(-3, 0.3, 500), rng.normal(3, 0.3, 499)]
            )
            R.write_null(url, lang, m, "gender", null)
        for m in METHODS:
            R.write_cell(
                url,
                lang,
                m,
                "weat7",
                {"note": "not applicable: test weat7 has no word lists for language " + lang}
                if lang != "en"
                else {"note": "coverage: X (Math) 2/8 found", "t_method": "none"},
            )
    R.write_cell(url, "eu", "uniform", "gender", {"note": "missing attribute words: A: gizona", "t_method": "uniform"})
    R.write_scores(url, "en", _scores())
    R.compact_results(url)
    return url


def test_show_prints_everything_a_reader_needs(store):
    res = biasdask.open_results(store)
    text = format_table(res)
    # z = 489: p(normal) underflows to 0 as a float; its log10 still gives the number
    expected = scipy.stats.norm.logsf(489.0) / math.log(10) + math.log10(2)
    assert f"e{math.floor(expected)}" in text
    for word in (
        "man, he",
        "woman, she",
        "A: mann",
        "400000",
        "[1]",
        "not applicable",
        "missing attribute words: A: gizona",
    ):
        assert word in text, word
    # every empty cell says why: not applicable, coverage, missing words, not run
    assert re.search(r"\[\d+\] not run", text)
    table = cube_table(res)
    assert table.loc[("en", "gender", "uniform"), "log10_p_normal"] == pytest.approx(expected, rel=1e-12)
    empty = ~np.isfinite(table["s"].values)
    assert all(table["note"].values[empty])


def test_show_formats_and_selection_from_the_cli(store, capsys):
    from biasdask.cli import main

    def show(*args):  # in this process (a fresh interpreter per format costs seconds); the last one is real
        capsys.readouterr()
        code = main(["show", store, *args])
        out = capsys.readouterr()
        assert code == 0, out.err
        return out.out

    rows = list(csv.DictReader(io.StringIO(show("--format", "csv", "--sel", "language=fr,en", "test=gender"))))
    assert [(r["language"], r["method"]) for r in rows] == [
        ("fr", "uniform"),
        ("fr", "zipf"),
        ("en", "uniform"),
        ("en", "zipf"),
    ]
    assert float(rows[2]["z"]) == 489.0 and rows[0]["missing"] == "A: mann" and rows[2]["A"] == "man, he"
    records = json.loads(show("--format", "json", "--sel", "test=weat7"))
    assert len(records) == 6 and all(r["s"] is None and r["note"] for r in records)
    md = show("--format", "markdown", "--sel", "language=en")
    assert md.splitlines()[0].startswith("| language | test | method | s | d |") and len(md.splitlines()) == 2 + 4
    latex = show("--format", "latex", "--sel", "language=fr")
    assert "\\begin{tabular}" in latex and "\\toprule" in latex and "A: mann" in latex
    bad = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "show", store, "--sel", "language=xx"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "xx" in bad.stderr and bad.stderr.count("\n") == 1


def test_top_words_against_a_hand_computation(store):
    sc = _scores()
    for by, method in (("u", None), ("t", "zipf")):
        table = top_words(store, language="en", n=3, by=by)
        score = sc.u.values.astype(np.float64) if by == "u" else sc.t.sel({"method": method}).values.astype(np.float64)
        order = np.argsort(score)
        expected_a = [WORDS[i] for i in order[::-1][:3] if score[i] > 0]
        expected_b = [WORDS[i] for i in order[:3] if score[i] < 0]
        assert list(table[table.side == "A"].word) == expected_a
        assert list(table[table.side == "B"].word) == expected_b
        first = table.iloc[0]
        k = WORDS.index(first.word)
        assert first.share_of_s == pytest.approx(score[k] / score.sum())
        assert first.frequency_rank == k + 1
        if by == "t":
            z = (1 / (k + 1)) / np.sum(1 / np.arange(1, len(WORDS) + 1))
            assert first.weight == pytest.approx(z, rel=1e-5)
    flagged = top_words(store, language="en", n=5)
    assert set(flagged[flagged.attribute].word) == {"man", "woman", "he", "she"} & set(flagged.word)
    assert flagged.attribute.any()
    out = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "words", store, "en", "-n", "2", "--by", "t"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "man" in out and "share_of_s" in out and "attribute word" in out


def test_default_null_figure_is_the_least_normal_cell(store, tmp_path):
    cell, distance = least_normal_cell(store)
    assert cell == ("fr", "zipf", "gender") and distance > 0.1
    names = [p.name for p in biasdask.report.write_plots(store, tmp_path)]
    assert "null_fr_zipf_gender.png" in names and "overview.png" in names and "effect_sizes.png" in names


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless browser (chromium) on this machine; .ci/run installs Debian's chromium when it can")


# Chromium's own services (clock sync, component updates, accounts), which it calls whatever the page
# even with background networking switched off; any other host reaching the proxy was asked for by the
# page. (The page's HTML is also checked to name no http(s) resource at all, Google's included.)
_BROWSER_SERVICES = (".google.com", ".googleapis.com", ".gvt1.com", ".googleusercontent.com", ".gstatic.com")


def _page_requests(requests: list[bytes]) -> list[str]:
    hosts = []
    for raw in requests:
        match = re.search(rb"^Host: ([^\r:]+)", raw, re.M)
        host = match.group(1).decode() if match else raw[:80].decode(errors="replace")
        if not ("." + host).endswith(_BROWSER_SERVICES):
            hosts.append(host)
    return hosts


class _RecordingProxy:
    """A TCP listener given to the browser as its HTTP(S) proxy: every request the page makes lands here."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.requests.append(conn.recv(4096))
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def _dump_dom(browser: str, url: str, proxy: _RecordingProxy, profile) -> str:
    out = subprocess.run(
        # the browser's own traffic (component updates, clock sync) is switched off: what reaches the proxy is the page's
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-pings",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--metrics-recording-only",
            f"--user-data-dir={profile}",
            f"--proxy-server=http://127.0.0.1:{proxy.port}",
            "--proxy-bypass-list=<-loopback>",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


class _Cube(HTMLParser):
    """The #cube table: its data-sorted attribute, header names and per-row data-v values."""

    def __init__(self):
        super().__init__()
        self.sorted, self.columns, self.rows, self._in, self._imgs = None, [], [], False, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == "cube":
            self._in, self.sorted = True, a.get("data-sorted")
        elif self._in and tag == "th":
            self.columns.append(a.get("data-col"))
        elif self._in and tag == "tr" and self.columns:
            self.rows.append([])
        elif self._in and tag == "td":
            self.rows[-1].append(a.get("data-v"))
        elif tag == "img":
            self._imgs.append(a.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False


def test_report_renders_sorts_and_sends_no_request(store, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "report", store, "--output", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        check=True,
    )
    page = tmp_path / "site" / "index.html"
    assert out.stdout.strip() == str(page)
    text = page.read_text(encoding="utf-8")
    assert [p.name for p in page.parent.iterdir()] == ["index.html"]  # one self-contained file
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text), "a resource outside the page"
    for needed in (
        "languages: [en, fr, eu]",
        "man, he",
        "A: mann",
        "not applicable",
        "overview",
        "by t (zipf weighting)",
    ):
        assert needed in text, needed

    browser = _browser()
    proxy = _RecordingProxy()
    try:
        # control: the detector sees a page that does fetch something
        leaky = tmp_path / "leaky.html"
        leaky.write_text('<html><body><img src="http://biasdask.invalid/x.png"></body></html>')
        _dump_dom(browser, leaky.as_uri(), proxy, tmp_path / "profile0")
        assert _page_requests(proxy.requests) == ["biasdask.invalid"], "the no-request check below could not fail"
        proxy.requests.clear()

        for key, desc in (("d", True), ("s", False)):
            dom = _dump_dom(
                browser, page.as_uri() + f"#sort={key}" + (":desc" if desc else ""), proxy, tmp_path / f"p{key}"
            )
            cube = _Cube()
            cube.feed(dom)
            assert cube.sorted == f"{key}:{'desc' if desc else 'asc'}", "the page's script did not run"
            col = cube.columns.index(key)
            values = [r[col] for r in cube.rows]
            numbers = [float(v) for v in values if v]
            assert len(cube.rows) == len(LANGS) * len(METHODS) * len(TESTS)
            assert numbers == sorted(numbers, reverse=desc) and len(numbers) == 4
            assert all(not v for v in values[len(numbers) :])  # empty cells last
            assert all(src.startswith("data:image/png;base64,") for src in cube._imgs) and cube._imgs
        assert _page_requests(proxy.requests) == [], "the report made requests"
    finally:
        proxy.close()


def test_top_words_flag_the_attribute_tokens_of_an_iat_study(tmp_path, shared_data):
    """With the IAT's terms (French translations), the flagged words are the tokens the gender test
    used, not the English labels of the cube and not the words of other tests."""
    from biasdask.lexicon import iat_attribute_terms

    store = str(tmp_path / "fr.zarr")
    biasdask.ingest(str(shared_data / "iat" / "cc" / "fr.vec"), store, language="fr", progress=False)
    out = str(tmp_path / "r.zarr")
    study = {
        "output": out,
        "languages": {"fr": {"store": store, "attributes": "iat"}},
        "methods": ["uniform"],
        "tests": ["gender", "career_family"],
        "n_permutations": 99,
        "seed": 1,
    }
    biasdask.run(study, progress=False)
    table = top_words(out, language="fr", n=40)
    a, b = iat_attribute_terms("cc", "fr")
    tokens = {tok for term in (*a, *b) for tok in term.tokens}
    flagged = set(table[table.attribute].word)
    assert flagged and flagged <= tokens
    assert {"frère", "fille"} <= flagged  # French tokens of "brother" and "girl"
    assert not flagged & {"famille", "carrière", "male"}  # career/family words and English labels


@pytest.fixture(scope="module")
def mixed_study(tmp_path_factory, shared_data):
    """A real study whose rnd column mixes word lists: WEAT-7's in English (GloVe vectors of its words),
    the IAT's career words in French and Chinese (fastText translations); zh has no vector for the
    catalog's gender words, and misses one career word."""
    root = tmp_path_factory.mktemp("mixed")
    stores = {"en": str(shared_data / "embeddings" / "glove840B_weat1_weat7_wefat1.txt")}
    stores.update({lang: str(shared_data / "iat" / "cc" / f"{lang}.vec") for lang in ("fr", "zh")})
    for lang, source in stores.items():
        biasdask.ingest(source, str(root / f"{lang}.zarr"), language=lang, progress=False)
    out = str(root / "r.zarr")
    study = {
        "output": out,
        "languages": {lang: {"store": str(root / f"{lang}.zarr")} for lang in stores},
        "methods": ["uniform", "zipf"],
        "tests": ["gender", "rnd", "career_family"],
        "n_permutations": 999,
        "seed": 3,
        "min_coverage": 0.5,
    }
    from biasdask.errors import BiasdaskError

    with pytest.raises(BiasdaskError, match="zh"):  # zh's gender cells cannot run: the run says so at its end
        biasdask.run(study, progress=False)
    return out


def test_cells_record_their_word_lists_and_the_faces_show_them(mixed_study, tmp_path):
    from biasdask.lexicon import iat_words, weat_test
    from biasdask.plot import plot_effect_heatmap
    from biasdask.report import cells_line, summary

    res = biasdask.open_results(mixed_study)
    cell = res.sel({"method": "uniform"})
    sets = {
        (str(lang), str(t)): str(cell["word_sets"].sel(language=lang, test=t).values)
        for lang in res["language"].values
        for t in res["test"].values
    }
    assert sets[("en", "rnd")] == "weat7" and sets[("fr", "rnd")] == "iat:career:fr (cc)"
    assert sets[("zh", "career_family")] == "iat:career,family:zh (cc)" and sets[("en", "gender")] == "catalog"
    # the tokens used: English words of WEAT-7, the translations of the IAT's career words
    assert str(cell["target_words_x"].sel(language="en", test="rnd").values).split(", ") == list(weat_test(7).x)
    career_fr = {t for e in iat_words("cc", "fr") if e.category == "career" for t in e.tokens}
    used_fr = str(cell["target_words_x"].sel(language="fr", test="rnd").values)
    assert "executive (cadre)" in used_fr and sum(t in used_fr for t in career_fr) >= 8
    # partial coverage: the missing word and the share found (7 of 8 career words in zh)
    assert str(cell["missing_target_words"].sel(language="zh", test="rnd").values) == "X: professional"
    assert float(cell["target_coverage"].sel(language="zh", test="rnd")) == 7 / 8

    text = format_table(res.sel({"test": ["rnd"]}))
    assert "word sets" in text and "iat:career:zh (cc)" in text and "88 %" in text and "X: professional" in text

    # the header counts empty cells honestly: zh's two gender cells hold nothing
    stat = res["statistic"].values
    # (and en's career_family cells: the GloVe file holds none of its career words)
    assert cells_line(res) == (
        f"{int(np.isfinite(stat).sum())} of {stat.size} cells hold a result; 4 are empty: coverage 2, missing words 2"
    )
    lines = summary(res)
    assert any(
        line.startswith(
            "rnd measures different word lists in different languages (weat7 in en; iat:career (cc) in fr, zh)"
        )
        for line in lines
    ), lines
    assert not any(line.startswith("career_family measures") for line in lines)  # one list, translated
    # the heatmap of s marks the mixed column (and only it), and names each cell's lists
    fig = plot_effect_heatmap(res, "statistic")
    fig.savefig(tmp_path / "s.png")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert [t for t in ticks if t.endswith("†")] == ["rnd · uniform †", "rnd · zipf †"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("weat7") == 2 and texts.count("iat:career (cc)") == 4
    assert "not on one scale" in fig.axes[0].get_xlabel()


def test_report_colours_follow_each_tests_direction(mixed_study, tmp_path):
    """Red means towards A whatever the test: a positive rnd (S closer to B) is blue, a positive gender s red."""
    from biasdask.report import write_report
    from biasdask.tables import leaning

    page = write_report(mixed_study, tmp_path).read_text(encoding="utf-8")
    assert page.index('id="summary"') < page.index('id="figures"') < page.index('id="cube-table"')
    res = biasdask.open_results(mixed_study)
    gender_a = str(res["attribute_words_a"].sel({"language": "en", "test": "gender"}).values.ravel()[0])
    assert gender_a == "male"  # the words of the test the figure shows, not of another test (rnd: male, man, ...)
    assert "<figcaption><strong>Figure 1.</strong> Test gender" in page
    assert "A is the first attribute set (en: male), B the second" in page
    from biasdask.report import captions

    others_first = res.isel({"test": [2, 1, 0]})  # whatever test comes first in the cube
    assert "A is the first attribute set (en: male), B the second" in captions(others_first, ["overview"])["overview"]
    row = re.compile(
        r'<tr[^>]*><td class="text" data-v="(\w+)">\w+</td><td class="text" data-v="([\w.]+)">[\w.]+</td>'
        r'<td class="text" data-v="(\w+)">\w+</td><td class="num([^"]*)" data-v="([^"]*)">'
    )
    seen = set()
    for lang, test, method, css, s in row.findall(page):
        value = float(res["statistic"].sel({"language": lang, "test": test, "method": method}))
        if not np.isfinite(value):
            assert s == "" and css == ""
            continue
        assert float(s) == value
        expected = (
            "" if leaning(test) == 0 or value == 0 else (" toward-a" if value * leaning(test) > 0 else " toward-b")
        )
        assert css == expected, (lang, test, method, value)
        seen.add((test, css))
    assert {("rnd", " toward-a"), ("rnd", " toward-b")} & seen and any(t == "gender" for t, _ in seen)


def test_show_latex_is_a_booktabs_table_that_compiles(mixed_study, tmp_path, capsys):
    from biasdask.cli import main

    def show(*args):
        capsys.readouterr()
        assert main(["show", mixed_study, *args]) == 0
        return capsys.readouterr().out

    res = biasdask.open_results(mixed_study)
    latex = show("--format", "latex", "--columns", "z,p,d,sets,coverage")
    header = next(line for line in latex.splitlines() if line.startswith("language &"))
    assert header == r"language & test & method & z & p & d & word sets & coverage \\"
    assert latex.count(r"\toprule") == latex.count(r"\midrule") == latex.count(r"\bottomrule") == 1
    assert r"career\_family" in latex and r"\%" in latex and "≤" not in latex
    # p at its floor 1/(m+1) is a bound, not a value; every such cell of the cube says so
    floor = (res["p_value"] * (res["n_permutations"] + 1) == 1) & ~res["exact"]
    assert latex.count(r"$\leq 10^{-3}$") == int(floor.sum()) > 0
    # a column empty in every row is left out: set metrics have no effect size
    rnd = show("--format", "latex", "--sel", "test=rnd", "--columns", "d,z,p")
    assert (
        next(line for line in rnd.splitlines() if line.startswith("language &"))
        == r"language & test & method & z & p \\"
    )
    rows = list(csv.reader(io.StringIO(show("--format", "csv", "--columns", "d,sets"))))
    assert rows[0] == ["language", "test", "method", "d", "sets"]
    bad = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "show", mixed_study, "--columns", "d,bogus"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "bogus" in bad.stderr and bad.stderr.count("\n") == 1

    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("no pdflatex on this machine; .ci/run installs Debian's texlive when it can")
    doc = tmp_path / "t.tex"
    doc.write_text(
        "\\documentclass{article}\\usepackage[utf8]{inputenc}\\usepackage{booktabs}\\usepackage{longtable}"
        "\\begin{document}\n" + show("--format", "latex", "--sel", "language=en,fr") + "\n\\end{document}\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_show_names_the_attribute_word_spread_apart_from_confidence_intervals():
    import xarray as xr

    dims = ("language", "method", "test")
    cube = xr.Dataset(
        {
            "statistic": (dims, [[[1.0]], [[2.0]]]),
            "effect_size": (dims, [[[-0.88]], [[1.06]]]),
            "effect_size_ci_low": (dims, [[[-1.67]], [[0.11]]]),
            "effect_size_ci_high": (dims, [[[-0.13]], [[1.50]]]),
            "ci_method": (
                dims,
                [
                    [["attribute-word spread: d minus the quantiles of the centred d of 1999 placebo pairs"]],
                    [["studentized bootstrap of the target words' scores (9999 resamples)"]],
                ],
            ),
        },
        coords={"language": ["en", "fr"], "method": ["uniform"], "test": ["gender"]},
    )
    table = cube_table(cube)
    assert table["d_spread"].tolist() == ["[-1.67, -0.13]", ""] and table["d_ci"].tolist() == ["", "[0.11, 1.50]"]
    text = format_table(cube)
    assert "d spread" in text and "d CI" in text and "not a confidence interval" in text
    assert "d spread" not in format_table(cube.sel(language=["fr"]))  # an empty column is left out


# --- the reliability section: test-retest across embeddings, internal consistency, agreement -----------------

REL_LANGS, REL_TESTS = ["de", "en", "es", "fr", "nl", "pl"], ["gender", "gender.ripa", "weat7"]


@pytest.fixture(scope="module")
def study_of_two(tmp_path_factory):
    """A study of the embeddings cc and wiki written through the results API: d of every cell, α and the
    split-half of the classic cells, and cc's agreement across its two associations, stored."""
    root = str(tmp_path_factory.mktemp("reliability") / "study.zarr")
    R.create_embeddings_root(root, ["cc", "wiki"])
    rng = np.random.default_rng(5)
    base = rng.normal(0.3, 0.5, (len(REL_LANGS), len(REL_TESTS)))
    d = {"cc": base, "wiki": base + rng.normal(0, 0.3, base.shape)}
    for name in ("cc", "wiki"):
        url = R.embedding_url(root, name)
        R.create_results(
            url,
            REL_LANGS,
            METHODS,
            REL_TESTS,
            {"seed": 1, "alternative": "two-sided", "similarity": "cosine"},
            "seed: 1\n",
        )
        for (i, lang), (j, test), m in itertools.product(enumerate(REL_LANGS), enumerate(REL_TESTS), METHODS):
            values = {"statistic": d[name][i, j], "effect_size": d[name][i, j], "t_method": m}
            if test == "weat7":
                values.update(cronbach_alpha=0.9 - 0.3 * i - (name == "wiki"), split_half=0.95 - 0.1 * i)
            R.write_cell(url, lang, m, test, values)
        R.compact_results(url)
    cc = R.embedding_url(root, "cc")
    R.write_reliability(cc, "agreement", biasdask.agreement(cc, n_resamples=99))
    return root, d


def test_show_prints_test_retest_alpha_and_agreement_as_stored(study_of_two, store, capsys):
    from biasdask.cli import main
    from biasdask.study.reliability import agreement_table
    from biasdask.tables import format_agreement

    root, d = study_of_two
    assert main(["show", root]) == 0
    out = capsys.readouterr().out
    retest = biasdask.retest_reliability(root, method="uniform")
    for j, test in enumerate(REL_TESTS):  # oracle: scipy on the cubes' d
        pattern = rf"^{re.escape(test)}\s+uniform\s+cc vs wiki\s+pearson\s+(\S+).*\n\s+spearman\s+(\S+)"
        rows = re.findall(pattern, out, re.M)
        x, y = d["cc"][:, j], d["wiki"][:, j]
        assert rows == [(f"{scipy.stats.pearsonr(x, y)[0]:.3f}", f"{scipy.stats.spearmanr(x, y)[0]:.3f}")], test
        cell = retest.sel({"test": test, "method": "uniform", "pair": "cc vs wiki"})
        assert rows[0] == (f"{float(cell['pearson']):.3f}", f"{float(cell['spearman']):.3f}")
    assert (
        "zipf" not in out[out.index("reliability: test-retest") :].split("reliability: internal")[0]
    )  # d has no weighting
    for name in ("cc", "wiki"):
        block = out.split(f"reliability: internal consistency (embedding {name})")[1].split("reliability:")[0]
        cube = biasdask.open_results(root, embedding=name)
        for lang in REL_LANGS:
            stored = cube.sel({"language": lang, "method": "uniform", "test": "weat7"})
            shown = re.search(rf"^{lang}\s+all\s+(\S+)\s+(\S+)$", block, re.M)
            assert shown and shown.groups() == (
                f"{float(stored['cronbach_alpha']):.3g}",
                f"{float(stored['split_half']):.3g}",
            )
    stored = R.open_reliability(R.embedding_url(root, "cc"), kind="agreement")
    assert format_agreement(agreement_table(stored), ci_level=stored.attrs["ci_level"]) in out
    assert "agreement across scoring rules (embedding wiki)" not in out  # wiki stored none
    # a store without any of it prints none of it, and machine formats stay one table
    assert main(["show", store]) == 0 and "reliability:" not in capsys.readouterr().out
    assert main(["show", root, "--format", "csv"]) == 0 and "reliability" not in capsys.readouterr().out


def test_retest_figure_draws_the_cubes_d_and_the_stored_correlations(study_of_two):
    from biasdask.plot import plot_retest

    root, d = study_of_two
    tree = biasdask.open_results(root)
    cubes = {n: c.to_dataset() for n, c in tree.children.items()}
    retest = biasdask.retest_reliability(cubes, method="uniform", n_resamples=199)
    fig = plot_retest(cubes, retest, test="weat7")
    (ax,) = [a for a in fig.axes if a.get_visible()]
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), np.column_stack([d["cc"][:, 2], d["wiki"][:, 2]]))
    assert sorted(t.get_text() for t in ax.texts) == REL_LANGS
    r = float(retest["pearson"].sel({"test": "weat7", "method": "uniform"}).item())
    assert f"r = {r:.2f} [" in ax.get_title() and "(n = 6)" in ax.get_title()


def test_report_and_plot_of_a_study_of_several_embeddings(study_of_two, store, tmp_path):
    from biasdask.report import write_plots, write_report

    root, _ = study_of_two
    names = {p.relative_to(tmp_path / "plots").as_posix() for p in write_plots(root, tmp_path / "plots")}
    assert {"retest_gender.png", "retest_weat7.png", "internal_consistency.png", "cc/internal_consistency.png"} <= names
    assert "cc/overview.png" in names and not any(n.startswith("cc/retest") for n in names)
    page = write_report(root, tmp_path / "site")
    text = page.read_text(encoding="utf-8")
    assert 'href="cc/index.html"' in text and 'id="figure-retest_weat7"' in text and "ICC(2,1)" in text
    child = (tmp_path / "site" / "cc" / "index.html").read_text(encoding="utf-8")
    assert (
        'id="figure-internal_consistency"' in child
        and "figure-retest" not in child
        and "agreement across scoring" in child
    )
    alone = write_report(store, tmp_path / "alone").read_text(encoding="utf-8")  # nothing to show: no section
    assert 'id="reliability"' not in alone and "internal_consistency" not in alone
    assert not any("internal_consistency" in p.name or "retest" in p.name for p in write_plots(store, tmp_path / "p"))

    browser = _browser()
    proxy = _RecordingProxy()
    try:
        dom = _dump_dom(browser, page.as_uri(), proxy, tmp_path / "profile")
    finally:
        proxy.close()
    images = re.findall(r'<figure id="figure-([^"]+)"><img[^>]+src="data:image/png;base64,', dom)
    assert images == ["retest_gender", "retest_gender.ripa", "retest_weat7", "internal_consistency"]
    assert _page_requests(proxy.requests) == []
