"""Marginal tables: the :class:`Table` type, :class:`Measurement` of tables, and the estimators of
tables from them behind one :class:`Estimator` protocol (:doc:`/theory/maximum_entropy`).
"""

from ._components import DENSE_QUERY_MAX_CELLS, Components, centered, components_of
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
from ._measurement import KroneckerQuery, Measurement, combined
from ._noisy_marginals import NoisyMarginals, NoisyMarginalsResult, fit_noisy_marginals
from ._table import Table, expand_table, is_acyclic, maximal_sets, project_table

__all__ = [
    "Table",
    "project_table",
    "expand_table",
    "maximal_sets",
    "is_acyclic",
    "Measurement",
    "KroneckerQuery",
    "combined",
    "Components",
    "components_of",
    "centered",
    "DENSE_QUERY_MAX_CELLS",
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
from ._components import compose, varying_subsets
from ._junction_tree import MARGINAL_MAX_CELLS
