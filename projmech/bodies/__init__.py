"""The convex bodies noisy answers are projected onto.

- :func:`project_to_hull`: the projection onto ``K_Q = conv(columns of F)``, with a witness
  distribution and a certified Frank–Wolfe gap (theory page :doc:`/theory/projection`).
- :func:`project_to_relaxation`: for 2-way marginals, the projection onto the moment
  relaxation ``L ⊇ K_Q``, polynomial in the number of attributes, with its moment matrix and a
  certified gap; :func:`relaxation_support` evaluates L's support function (theory page
  :doc:`/theory/relaxation`). ``relaxation="sdp"`` warns with
  :class:`NegativeCellsWarning` when it releases negative cells.
- :func:`project_to_tables`: for a workload whose tables are disjoint (all 1-way marginals, a
  query on one attribute of a large domain), the projection onto ``K_Q`` table by table, over each
  table's cells instead of the universe (:func:`table_groups` says why a workload has none).
- :func:`project_to_local`: for marginal tables of any order (all 3-way tables of a large
  domain), the projection onto their local polytope (consistent, non-negative tables) over the
  tables' cells; ``K_Q`` itself where the tables are acyclic (:func:`local_tables` says why a
  workload has no such tables).

Their results carry a :class:`~projmech.solve.SolveStats` as ``.stats`` and their errors are
:class:`~projmech.solve.SolveError` subclasses (both from :mod:`projmech.solve`, and from
``projmech`` itself). The user guide page :doc:`/guide/projection` says when to use which body.
"""

from .hull import ProjectionError, ProjectionResult, frank_wolfe_gap, project_to_hull
from .local import LocalError, LocalResult, LocalTables, local_tables, project_to_local
from .relaxation import (
    RELAXATIONS,
    MomentEncoding,
    NegativeCellsWarning,
    RelaxationError,
    RelaxationResult,
    RelaxationSupport,
    project_to_relaxation,
    relaxation_support,
)
from .tables import TableGroups, TablesResult, project_to_tables, table_groups

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
]
