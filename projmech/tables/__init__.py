"""Marginal tables: the table type, measurements of tables, and estimators of the tables from
them (one protocol: :class:`Estimator`).

- :class:`Table`, :func:`project_table`, :func:`expand_table`: a table on some attributes,
  summed down to fewer or broadcast over more; :func:`maximal_sets`, :func:`is_acyclic`.
- :class:`Measurement`: a noisy measurement of a table (or of a linear query on it) with its
  noise scale.
- :class:`MaximumEntropy` (:func:`fit_maximum_entropy`) and :class:`NoisyMarginals`
  (:func:`fit_noisy_marginals`): estimators over a small universe or a :class:`JunctionTree`
  (theory page :doc:`/theory/maximum_entropy`); the local-polytope projection is
  :class:`~projmech.bodies.LocalProjection`.
"""

from ._estimator import Estimator, TableModel
from ._junction_tree import JunctionTree, TreeTooLargeError, junction_order
from ._maximum_entropy import (
    MAXIMUM_ENTROPY_MAX_CELLS,
    MaximumEntropy,
    MaximumEntropyResult,
    fit_maximum_entropy,
    proportional_fit,
    total_correlation,
)
from ._measurement import Measurement, combined
from ._noisy_marginals import NoisyMarginals, NoisyMarginalsResult, fit_noisy_marginals
from ._table import Table, expand_table, is_acyclic, maximal_sets, project_table

__all__ = [
    "Table",
    "project_table",
    "expand_table",
    "maximal_sets",
    "is_acyclic",
    "Measurement",
    "combined",
    "Estimator",
    "TableModel",
    "JunctionTree",
    "TreeTooLargeError",
    "junction_order",
    "MAXIMUM_ENTROPY_MAX_CELLS",
    "MaximumEntropy",
    "MaximumEntropyResult",
    "fit_maximum_entropy",
    "proportional_fit",
    "total_correlation",
    "NoisyMarginals",
    "NoisyMarginalsResult",
    "fit_noisy_marginals",
]

# What other folders use beyond the public API above (not part of it).
from ._junction_tree import MARGINAL_MAX_CELLS
