"""Marginal tables: junction trees over them and estimators of a distribution from noisy tables.

- :class:`JunctionTree`: a junction tree of attribute sets, its clique tables summed and spread.
- :func:`fit_maximum_entropy`: on a small universe, the maximum-entropy distribution with given
  marginal tables (theory page :doc:`/theory/maximum_entropy`).
- :func:`fit_noisy_marginals`: a distribution fitted to noisy marginal tables by mirror descent,
  held over a small universe or by a :class:`JunctionTree` of the tables.
"""

from .junction_tree import JunctionTree, TreeTooLargeError
from .maximum_entropy import MAXIMUM_ENTROPY_MAX_CELLS, MaximumEntropyResult, fit_maximum_entropy, total_correlation
from .noisy_marginals import NoisyMarginalsResult, fit_noisy_marginals

__all__ = [
    "JunctionTree",
    "TreeTooLargeError",
    "MAXIMUM_ENTROPY_MAX_CELLS",
    "MaximumEntropyResult",
    "fit_maximum_entropy",
    "total_correlation",
    "NoisyMarginalsResult",
    "fit_noisy_marginals",
]
