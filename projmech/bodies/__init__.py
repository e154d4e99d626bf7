"""The convex bodies noisy answers are projected onto, and their contract: each ``project_to_*``
returns a :class:`~projmech.solve.SolveResult` with certified ``.stats`` or raises a
:class:`~projmech.solve.SolveError` subclass.

- :func:`project_to_hull`: ``K_Q = conv(columns of F)``, with a witness distribution
  (:doc:`/theory/projection`).
- :func:`project_to_relaxation`: the moment relaxation ``L ⊇ K_Q`` of 2-way marginals,
  polynomial in the attributes; :func:`relaxation_support` is its support function
  (:doc:`/theory/relaxation`).
- :func:`project_to_tables`: ``K_Q`` of disjoint tables, table by table.
- :func:`project_to_local`: the local polytope of marginal tables of any order.

The guide :doc:`/guide/projection` says when to use which.
"""

from ._hull import ProjectionError, ProjectionResult, frank_wolfe_gap, project_to_hull
from ._local import (
    LocalError,
    LocalProjection,
    LocalResult,
    LocalTables,
    local_tables,
    project_measurements,
    project_to_local,
)
from ._relaxation import (
    RELAXATIONS,
    MomentEncoding,
    NegativeCellsWarning,
    RelaxationError,
    RelaxationResult,
    RelaxationSupport,
    project_to_relaxation,
    relaxation_support,
)
from ._tables import TableGroups, TablesResult, project_to_tables, table_groups

__all__ = [
    "ProjectionError",
    "ProjectionResult",
    "frank_wolfe_gap",
    "project_to_hull",
    "RELAXATIONS",
    "MomentEncoding",
    "RelaxationError",
    "RelaxationResult",
    "NegativeCellsWarning",
    "project_to_relaxation",
    "RelaxationSupport",
    "relaxation_support",
    "TableGroups",
    "TablesResult",
    "project_to_tables",
    "table_groups",
    "LocalError",
    "LocalResult",
    "LocalTables",
    "local_tables",
    "project_to_local",
    "project_measurements",
    "LocalProjection",
]

# What other folders use beyond the public API above (not part of it).
from ._body import (
    BODIES,
    HULL_MAX_UNIVERSE,
    Body,
    BodyFit,
    Hull,
    ProjectionProgress,
    body_fit,
    body_solvers,
    choose_body,
)
from ._cost import COST_MODELS, HULL_PREFERENCE, CostModel, PowerLaw, WorkloadSize, estimated_seconds
from ._hull import NOISE_TOL, SOLVERS
from ._memory import memory_limit, memory_shortfall
from ._relaxation_admm import admm_projection
