"""Checks of the arguments the numeric core's functions share: seeds, counts and confidence levels.

Examples
--------
>>> check_count(5, "n_resamples", 1), check_seed(0), check_level(0.95)
(5, 0, 0.95)
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_count", "check_level", "check_seed"]


def check_seed(seed: int) -> int:
    """``seed`` as an int: a non-negative integer (not a bool), else TypeError or ValueError."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


def check_count(value: int, name: str, minimum: int) -> int:
    """``value`` as an int: an integer (not a bool) of at least ``minimum``, else TypeError or ValueError
    naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_level(ci_level: float) -> float:
    """``ci_level`` as a float: a number strictly between 0 and 1 (not a bool), else TypeError or ValueError."""
    if isinstance(ci_level, (bool, np.bool_)) or not isinstance(ci_level, (int, float, np.integer, np.floating)):
        raise TypeError(f"ci_level must be a number in (0, 1), got {ci_level!r}")
    if not 0.0 < float(ci_level) < 1.0:
        raise ValueError(f"ci_level must lie strictly between 0 and 1, got {ci_level}")
    return float(ci_level)
