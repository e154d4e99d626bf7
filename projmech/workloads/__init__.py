"""Workloads: ``k`` linear queries over a universe of ``m`` elements, as an algebra.

A :class:`Workload` is a ``k x m`` query matrix F: explicit (``Workload(matrix)``), known through
its products (:meth:`Workload.implicit`), or structured: :func:`kron` of per-attribute blocks
(:func:`identity`, :func:`total`, :func:`prefix`, :func:`all_range`) and :func:`stack` unions, of
which :func:`marginals` are one. Builders refuse an explicit matrix above ``max_entries`` entries
before allocating it.
"""

from ._base import DEFAULT_MAX_ENTRIES, PAIRWISE_UNIVERSE, Kernels, Workload, max_column_distance
from ._builders import all_range, identity, identity_total, prefix, random_queries, repeated, total
from ._explicit import ImplicitWorkload, MatrixWorkload, as_query_matrix, column_norm
from ._kronecker_gram import KroneckerGram
from ._marginal_tables import Marginals, TableTerms, marginals, range_marginals, table_terms
from ._predicates import from_predicates
from ._structured import Kron, Stack, kron, stack

__all__ = [
    "Workload",
    "Kernels",
    "MatrixWorkload",
    "ImplicitWorkload",
    "Kron",
    "Stack",
    "Marginals",
    "KroneckerGram",
    "DEFAULT_MAX_ENTRIES",
    "PAIRWISE_UNIVERSE",
    "as_query_matrix",
    "column_norm",
    "max_column_distance",
    "identity",
    "total",
    "prefix",
    "all_range",
    "identity_total",
    "repeated",
    "random_queries",
    "marginals",
    "range_marginals",
    "table_terms",
    "TableTerms",
    "from_predicates",
    "kron",
    "stack",
]

# What other folders use beyond the public API above (not part of it).
from ._marginal_tables import RANGE_BLOCKS
from ._structured import along_axis, kron_terms
