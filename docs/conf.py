"""Sphinx configuration of the biasdask documentation (``sphinx-build -W docs docs/_build/html``).

The two notebooks of ``notebooks/`` are copied in at build time and executed by myst-nb on small settings
(their environment variables below), so the site shows them with fresh outputs and a notebook that fails
fails the build.

Formulas are rendered at build time (``sphinx.ext.imgmath``: LaTeX, then ``dvisvgm`` to SVG embedded in
the pages), so the site needs no script from a CDN and reads the same offline; a build whose pages still
hold TeX source (``\(...\)``, ``$$...$$``) fails (:func:`check_math`).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import biasdask

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "biasdask"
author = "The biasdask developers"
copyright = "2026, the biasdask developers"
version = release = biasdask.__version__

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.imgmath",
]

# LaTeX (texlive-latex-base, -recommended, -extra: anyfontsize and preview) and dvisvgm render every formula
# when the site is built; preview puts an inline formula on the text's baseline
imgmath_image_format = "svg"
imgmath_use_preview = True
imgmath_embed = True
imgmath_font_size = 14

# The notebooks live in notebooks/ (where users open them); the site renders copies made at build time.
NOTEBOOK_DIR = DOCS / "notebooks"
NOTEBOOK_DIR.mkdir(exist_ok=True)
for notebook in ("quickstart.ipynb", "multilingual.ipynb"):
    shutil.copyfile(ROOT / "notebooks" / notebook, NOTEBOOK_DIR / notebook)
# Small settings, so that building the site stays a matter of minutes on two cores.
for key, value in {
    "BIASDASK_NB_WORDS": "5000",
    "BIASDASK_NB_PERMUTATIONS": "999",
    "BIASDASK_LANGUAGES": "en,fr,de,es,ru,zh",
}.items():
    os.environ.setdefault(key, value)

exclude_patterns = ["_build", "img/*.py", "Thumbs.db", ".DS_Store", "jupyter_execute"]
# .rst first: autosummary writes its generated pages with the first suffix.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True

autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types; the signature stays short
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = f"biasdask {release}"
html_static_path: list[str] = []


# TeX that reached a page: inline and display delimiters, environments, a dollar-delimited formula with a
# command in it (code and the rendered formulas' alt text, which is their TeX source, are left out)
_RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\begin\{|\$[^$<>\n]{0,200}?\\[A-Za-z]+[^$<>\n]{0,200}?\$")
_CODE = re.compile(r"<(pre|code|script|style|textarea)\b.*?</\1>|\balt=\"[^\"]*\"", re.S | re.I)


def check_math(app, exception) -> None:
    """Fail the build where a built page still holds TeX source instead of a rendered formula."""
    if exception is not None or app.builder.format != "html":
        return
    found = []
    for page in sorted(Path(app.outdir).rglob("*.html")):
        text = _CODE.sub("", page.read_text(encoding="utf-8"))
        for match in _RAW_TEX.finditer(text):
            found.append(f"{page.relative_to(app.outdir)}: ...{text[max(0, match.start() - 40) : match.end() + 40]}...")
    if found:
        raise RuntimeError("TeX source reached the built pages, unrendered:\n" + "\n".join(found[:20]))


def setup(app) -> None:
    app.connect("build-finished", check_math)
