"""Factorization: strategies ``F = R M``, the optimal factorization norm and its certified lower
bound, for explicit, Kronecker, marginal and range workloads (:doc:`/theory/factorization`).
"""

from __future__ import annotations

from . import _base as base
from . import _mean as mean
from . import _norm as norm
from ._base import *  # noqa: F403
from ._mean import *  # noqa: F403
from ._norm import *  # noqa: F403

__all__ = [*base.__all__, *norm.__all__, *mean.__all__]

# What other folders use beyond the public API above (not part of it).
from ._base import Factorization, check_objective
from ._norm import RANGE_MAX_UNIVERSE, factorization_norm

# What other folders use beyond the public API above (not part of it).
from ._structured import table_blocks, table_measurements
