"""Helpers of the reliability suite: small stores, studies, the one-line-error check.

Every test here attacks the tool the way a user's mistake or a failing disk, network or cluster would.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.stores import generated_store


def make_store(tmp_path: Path, code: str = "en", n_words: int = 600, chunk_words: int = 200, seed: int = 0) -> str:
    """A generated store of ``n_words`` x 8 (the attribute words at ranks 41, 42) in ``tmp_path/emb``."""
    return generated_store(tmp_path, code, n_words=n_words, chunk_words=chunk_words, seed=seed)


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
