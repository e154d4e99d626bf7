"""Factorization: strategies ``F = R M``, the optimal factorization norm and its certified lower
bound, for explicit, Kronecker, marginal and range workloads.

Its modules, the public ones first (their ``__all__`` is exported here):

- ``base``: Factorizations F = R M of a workload: the factorization (matrix) mechanism's value.
- ``norm``: ``factorization_norm``: the optimal factorization norm gamma(F) of any workload, by the
  method its structure allows, and its certified lower bound.
- ``mean``: The optimal factorization norm gamma(F), with a certified lower bound, and
  gamma_alpha(F).
- ``_kernel``: The kernel every factorization method shares: the dual ascent (:func:`iterate`) with
  its weights, the strategy from a Gram matrix, the CVXPY call and the final judgement of a
  factorization.
- ``maximum``: The max-error factorization norm gamma_2(F), with a certified lower bound.
- ``resolvent``: Prefix and range workloads at scale: resolvent strategies on tridiagonal inverses.
- ``structured``: Optimal factorizations that keep a workload's structure: Kronecker products and
  marginals.
- ``residual``: Factorizations of table workloads over the residual basis: the closed form behind
  :class:`~projmech.factorization.structured.ResidualFactorization`.
- ``range_forms``: The all-range workload's weighted Gram matrix and quadratic forms in ``O(m^2)``.
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
