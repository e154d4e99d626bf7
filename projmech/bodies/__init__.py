"""Convex bodies that noisy answers are projected onto, each compiled into a CVXPY problem.

Their results carry a :class:`~projmech.solve.SolveStats` as ``.stats`` and their errors are
:class:`~projmech.solve.SolveError` (:mod:`projmech.solve`, re-exported here).
"""

from ..solve import ProgressBar, SolveError, SolveStats, Status
from .hull import ProjectionError, ProjectionResult, frank_wolfe_gap, project_to_hull
from .relaxation import (
    RELAXATIONS,
    MomentEncoding,
    RelaxationError,
    RelaxationResult,
    RelaxationSupport,
    project_to_relaxation,
    relaxation_support,
)
from .rounding import SyntheticData, gaussian_rounding, rounding_covariance, synthetic_data

__all__ = [
    "ProgressBar",
    "SolveError",
    "SolveStats",
    "Status",
    "ProjectionError",
    "ProjectionResult",
    "frank_wolfe_gap",
    "project_to_hull",
    "RELAXATIONS",
    "MomentEncoding",
    "RelaxationError",
    "RelaxationResult",
    "project_to_relaxation",
    "RelaxationSupport",
    "relaxation_support",
    "gaussian_rounding",
    "rounding_covariance",
    "SyntheticData",
    "synthetic_data",
]
