"""Helpers of the reliability suite: small stores, studies, the one-line-error check.

Every test here was written against a defect found by an attack on the tool and fails on
the code before the fix.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from biasdask.demo import write_language
from biasdask.engine.ingest import ingest

LANGS = {"en": ("male", "female"), "de": ("männlich", "weiblich")}


def make_store(tmp_path: Path, code: str = "en", n_words: int = 600, chunk_words: int = 200, seed: int = 0) -> str:
    """A synthetic store of ``n_words`` x 8 (the attribute words at ranks 40, 41) in ``tmp_path/emb``."""
    male, female = LANGS[code]
    src = tmp_path / f"{code}-{seed}.bin"
    write_language(src, male, female, 0.1, n_words, 8, seed=seed)
    url = str(tmp_path / "emb" / f"{code}.zarr")
    ingest(str(src), url, language=code, chunk_words=chunk_words, client=False, progress=False)
    return url


def write_study(tmp_path: Path, stores: dict[str, str], **extra) -> Path:
    study = {
        "output": str(tmp_path / "results.zarr"),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform"],
        "tests": ["gender"],
        "n_permutations": 99,
        **extra,
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, allow_unicode=True))
    return path


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    """A non-zero exit, exactly one line on stderr starting ``biasdask``, no traceback, the needles in it."""
    assert code not in (0, None), err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("biasdask"), err
    assert "Traceback" not in err and "Compute Failed" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
