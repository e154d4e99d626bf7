"""Convex bodies that noisy answers are projected onto, each compiled into a CVXPY problem."""

from .hull import ProjectionError, ProjectionResult, frank_wolfe_gap, project_to_hull

__all__ = ["ProjectionError", "ProjectionResult", "frank_wolfe_gap", "project_to_hull"]
