"""Argument checks shared across layers (a leaf module: numpy only), so that every layer words
its errors the same way and names the argument."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_positive_number", "check_nonnegative_number"]


def check_positive_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless positive and finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be a positive finite number, got {value}")
    return value


def check_nonnegative_number(name: str, value: Any) -> float:
    """``value`` as a float; TypeError unless a real number, ValueError unless finite and >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number >= 0, got {value}")
    return value
