"""What cannot be kept is not offered, and what is shown is shown as itself: a command refuses a
``memory://`` destination (gone when it ends); a word that is HTML, Markdown markup, a terminal's
escape sequence or a direction mark is printed as its text in every printed format and in the report."""

from __future__ import annotations

import html.parser

import numpy as np
import pytest
import xarray as xr

import biasdask
from tests.reliability.helpers import assert_one_line_error
from tests.stores import generated_store, study_file

HTML_WORD = "<img/src=x/onerror=alert(1)>"
LINK_WORD = "[x](javascript:alert(1))"
TERMINAL_WORD = "\x1b[31mred\x1b[0m"
REVERSED_WORD = "abc\u202edef\u200f"


@pytest.mark.parametrize(
    "args",
    [
        ("ingest", "{src}", "-o", "memory://b/en.zarr", "--language", "en", "--workers", "0"),
        ("run", "{study}", "--output", "memory://b/results.zarr"),
        ("debias", "{store}", "-o", "memory://b/en-hard.zarr", "--algorithm", "project"),
    ],
    ids=["ingest", "run", "debias"],
)
def test_a_memory_destination_is_refused_on_the_command_line(tmp_path, cli, args):
    # before: exit 0, and the store vanished with the process
    src = tmp_path / "en.vec"
    src.write_text("2 3\nhe 1 0 0\nshe 0 1 0\n")
    store = generated_store(tmp_path, chunk_words=200)
    study = study_file(tmp_path, {"en": store})
    args = [a.format(src=src, study=study, store=store) for a in args]
    code, _, err = cli(*args, "--quiet")
    where = args[3]
    assert_one_line_error(code, err, f"{where} would vanish when the command ends", "memory://")
    assert code == 2
    assert not (tmp_path / "results.zarr").exists()


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    """A results store whose attribute words are HTML, a Markdown link, a terminal escape, a reversal."""
    tmp = tmp_path_factory.mktemp("shown")
    rng = np.random.default_rng(1)
    words = [HTML_WORD, LINK_WORD, TERMINAL_WORD, REVERSED_WORD, *(f"w{i}" for i in range(300))]
    vectors = rng.standard_normal((len(words), 8)).astype(np.float32)
    emb = xr.DataArray(vectors, dims=("word", "dim"), coords={"word": words}, attrs={"language": "en"})
    study = {
        "output": str(tmp / "r.zarr"),
        "languages": {"en": {"store": emb, "a": [HTML_WORD, LINK_WORD], "b": [TERMINAL_WORD, REVERSED_WORD]}},
        "methods": ["uniform"],
        "n_permutations": 99,
        "seed": 1,
    }
    biasdask.run(study, progress=False)
    return tmp / "r.zarr"


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text = ""

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        self.text += data


def test_markdown_shows_html_and_markup_as_text(cube, cli):
    # before: <img/src=x/onerror=...> written raw into the table, which Markdown viewers render
    code, out, err = cli("show", cube, "--format", "markdown")
    assert code == 0, err
    assert "<img" not in out and "&lt;img/src=x/onerror=alert(1)&gt;" in out
    markdown_it = pytest.importorskip("markdown_it")
    page = _Tags()
    page.feed(markdown_it.MarkdownIt("commonmark").enable("table").render(out))  # raw HTML rendered
    assert "img" not in page.tags and "a" not in page.tags  # no image, no link: text only
    assert HTML_WORD in page.text and LINK_WORD in page.text
    assert "\x1b" not in page.text and "\u202e" not in page.text and "\\u202e" in page.text


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_control_characters_and_direction_marks_are_shown_escaped(cube, cli, fmt):
    # before: the terminal turned red, and the text around the word was shown reversed
    code, out, err = cli("show", cube, "--format", fmt)
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out and "\u200f" not in out
    for escaped in ("x1b", "u202ede"):  # each format writes the backslash its own way
        assert escaped in out, out
    code, out, err = cli("words", cube, "en", "-n", "300")
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b[31mred\\x1b[0m" in out and "abc\\u202edef\\u200f" in out


def test_the_html_report_shows_them_escaped(cube, cli, tmp_path):
    code, out, err = cli("report", cube, "--out", tmp_path / "site")
    assert code == 0, err
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "\x1b" not in page and "\u202e" not in page and "\u200f" not in page
    assert "abc\\u202edef\\u200f" in page and "\\x1b[31mred\\x1b[0m" in page
    assert "&lt;img/src=x/onerror=alert(1)&gt;" in page and "<img/src" not in page
