"""The reliability suite's check of a one-line error.

Every test here attacks the tool the way a user's mistake or a failing disk, network or cluster would.
"""

from __future__ import annotations


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    """A non-zero exit, exactly one line on stderr starting ``biasdask``, no traceback, the needles in it."""
    assert code not in (0, None), err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("biasdask"), err
    assert "Traceback" not in err and "Compute Failed" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
