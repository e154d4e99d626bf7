"""Factorization: strategies ``F = R M``, the optimal factorization norm and its certified lower
bound, for explicit, Kronecker, marginal and range workloads (:doc:`/theory/factorization`).
"""

from __future__ import annotations

from .base import (
                   OBJECTIVES,
                   RESIDUAL_RTOL,
                   DenseFactorization,
                   Factorization,
                   FactorizationError,
                   as_workload,
                   hierarchical_strategy,
                   identity_strategy,
                   square_root_strategy,
                   total_strategy,
)
from .mean import approximate_factorization_norm
from .norm import METHODS, ScaledFactorization, factorization_lower_bound, factorization_norm

__all__ = ["Factorization", "FactorizationError", "DenseFactorization", "as_workload", "identity_strategy",
           "total_strategy", "hierarchical_strategy", "square_root_strategy", "RESIDUAL_RTOL", "OBJECTIVES",
           "factorization_norm", "factorization_lower_bound", "ScaledFactorization", "METHODS",
           "approximate_factorization_norm"]
