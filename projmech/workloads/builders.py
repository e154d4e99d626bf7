"""Per-attribute building blocks (identity, total, prefix, all-range) and other fixed workloads.

Each block is a workload over one attribute's ``m`` values; :func:`~projmech.workloads.kron`
combines one per attribute, and inside a product each query's label names the attribute
(``age<=3``). Alone, a block's labels use ``x``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..encodings import Encoding

from ..validation import (
    DEFAULT_MAX_ENTRIES,
    FLAG,
    GENERATOR,
    POSITIVE_INT,
    check_real_array,
    check_real_dtype,
    validate_params,
)
from .base import Workload, check_matrix_entries
from .explicit import ImplicitWorkload, MatrixWorkload

__all__ = ["identity", "total", "prefix", "all_range", "identity_total", "repeated", "random_queries"]



def _with_terms(workload: Workload, terms: Callable[[str, Encoding], Sequence[str]]) -> Workload:
    workload._term_maker = terms
    return workload


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT)
def identity(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The ``m`` point queries ``h[u]`` (F = I)."""
    check_matrix_entries("m", "identity", m, m, m, max_entries)
    workload = MatrixWorkload(sp.eye_array(m, format="csr"), name=f"identity({m})")
    return _with_terms(workload, lambda attribute, encoding: [encoding.equals(attribute, u) for u in range(m)])


@validate_params(m=POSITIVE_INT)
def total(m: int) -> Workload:
    """The single query ``sum_u h[u]`` (F = 1^T): inside a Kronecker product it sums its attribute
    out, and its label part is empty (``total`` alone)."""
    return _with_terms(MatrixWorkload(np.ones((1, m)), name=f"total({m})"), lambda attribute, encoding: [""])


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT)
def identity_total(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The ``m`` point queries, then the total: ``[I; 1^T]`` (HDMM's ``IdentityTotal``)."""
    check_matrix_entries("m", "identity_total", 2 * m, m + 1, m, max_entries)
    matrix = sp.vstack([sp.eye_array(m, format="csr"), sp.csr_array(np.ones((1, m)))], format="csr")
    workload = MatrixWorkload(matrix, name=f"identity_total({m})")
    return _with_terms(workload, lambda attribute, encoding: [encoding.equals(attribute, u) for u in range(m)] + [""])


def _prefix_terms(m: int) -> Callable[[str, Encoding], list[str]]:
    return lambda attribute, encoding: [encoding.at_most(attribute, t) for t in range(m)]


def _range_terms(m: int) -> Callable[[str, Encoding], list[str]]:
    def terms(attribute: str, encoding: Encoding) -> list[str]:
        lows, highs = np.triu_indices(m)
        return [encoding.between(attribute, a, b) for a, b in zip(lows.tolist(), highs.tolist())]

    return terms


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT, implicit=FLAG)
def prefix(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """The ``m`` threshold (prefix) queries ``#{x <= t}/n`` for ``t = 0 .. m-1``.

    F is lower-triangular with ones; the seed's two-query example (seed 001, eq. 40) is the
    first two rows of ``prefix(3)`` (the last row, ``t = m-1``, is always 1). Its Gram matrix
    has the closed form ``(F^T F)[i, j] = m - max(i, j)``. With ``implicit=True`` the matrix is
    never built (answers are cumulative sums; see :meth:`Workload.implicit`).
    """
    def gram() -> np.ndarray:
        cells = np.arange(m)
        return (m - np.maximum.outer(cells, cells)).astype(float)

    if implicit:
        workload: Workload = ImplicitWorkload((m, m), np.cumsum, gram, name=f"prefix({m})", integer=True,
                                              nonnegative=True, column_norm=float(np.sqrt(m)))
    else:
        check_matrix_entries("m", "prefix", m * m, m, m, max_entries, implicit=True)
        workload = MatrixWorkload(np.tril(np.ones((m, m))), name=f"prefix({m})", gram=gram)
    return _with_terms(workload, _prefix_terms(m))


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT, implicit=FLAG)
def all_range(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """All ``m(m+1)/2`` range queries ``#{a <= x <= b}/n`` for ``0 <= a <= b < m``.

    Queries are ordered by ``a``, then ``b``. Cells ``i <= j`` lie together in the
    ``(i + 1)(m - j)`` ranges with ``a <= i`` and ``b >= j``: that is the closed-form Gram matrix.
    With ``implicit=True`` the ``k x m`` matrix is never built (answers are differences of
    cumulative sums), so ``m = 4096`` (8.4 million queries) fits in memory.
    """
    k = m * (m + 1) // 2

    def gram() -> np.ndarray:
        cells = np.arange(m)
        return ((np.minimum.outer(cells, cells) + 1) * (m - np.maximum.outer(cells, cells))).astype(float)

    if implicit:
        def matvec(vector: np.ndarray) -> np.ndarray:
            sums = np.concatenate([[0.0], np.cumsum(vector)])
            lows, highs = np.triu_indices(m)
            return sums[highs + 1] - sums[lows]

        workload: Workload = ImplicitWorkload((k, m), matvec, gram, name=f"all_range({m})", integer=True,
                                              nonnegative=True)
    else:
        check_matrix_entries("m", "all_range", k * m, k, m, max_entries, implicit=True)
        lows, highs = np.triu_indices(m)
        columns = np.arange(m)
        matrix = ((columns >= lows[:, None]) & (columns <= highs[:, None])).astype(float)
        workload = MatrixWorkload(matrix, name=f"all_range({m})", gram=gram)
    return _with_terms(workload, _range_terms(m))


@validate_params(k=POSITIVE_INT, max_entries=POSITIVE_INT)
def repeated(query: Any, k: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The same query asked ``k`` times (seed 001, eq. 18): a row vector stacked ``k`` times.

    ``query`` is a vector of ``m`` real, finite values (or one row, or a one-query Workload).
    """
    if isinstance(query, Workload):
        if query.num_queries != 1:
            raise ValueError(f"query: expected a single query, got a workload of {query.num_queries}")
        query = query.toarray()
    elif sp.issparse(query):
        sparse: Any = query  # the stubs know no sparse attribute after the test
        check_real_dtype("query", sparse.dtype)
        query = sparse.toarray() if sparse.shape[0] == 1 else sparse
    row = check_real_array("query", query)
    # A matrix of several rows would be flattened into one long query by ravel().
    if row.ndim == 2 and row.shape[0] == 1:
        row = row[0]
    if row.ndim != 1 or row.size == 0:
        raise ValueError(f"query: expected one non-empty row of m values, got shape {row.shape}")
    check_matrix_entries("k", "repeated", k * row.size, k, row.size, max_entries)
    return MatrixWorkload(np.tile(row, (k, 1)), [f"copy{i}" for i in range(k)], name=f"repeated(k={k})")


@validate_params(k=POSITIVE_INT, m=POSITIVE_INT, rng=GENERATOR, max_entries=POSITIVE_INT)
def random_queries(k: int, m: int, rng: np.random.Generator, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """``k`` random counting queries: each entry independently 0 or 1 with probability 1/2.

    ``rng`` must be a ``numpy.random.Generator`` (a seed is refused: the caller keeps the
    stream, so that successive workloads differ).
    """
    check_matrix_entries("k", "random_queries", k * m, k, m, max_entries)
    matrix = rng.integers(0, 2, size=(k, m)).astype(float)
    return MatrixWorkload(matrix, [f"random{i}" for i in range(k)], name=f"random_queries({k})")
