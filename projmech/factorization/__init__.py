"""Factorization: strategies ``F = R M``, the optimal factorization norm and its certified lower
bound, for explicit, Kronecker, marginal and range workloads (:doc:`/theory/factorization`).
"""

from __future__ import annotations

from . import base, mean, norm
from .base import *  # noqa: F403
from .mean import *  # noqa: F403
from .norm import *  # noqa: F403

__all__ = [*base.__all__, *norm.__all__, *mean.__all__]
