"""Per-attribute blocks (identity, total, prefix, all-range) and other fixed workloads.

:func:`~projmech.workloads.kron` combines one block per attribute; inside a product each query's
label names the attribute (``age<=3``), alone it uses ``x``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import Encoding
from ..validation import (
    DEFAULT_MAX_ENTRIES,
    FLAG,
    GENERATOR,
    POSITIVE_INT,
    check_real_array,
    check_real_dtype,
    validate_params,
)
from ._base import Workload
from ._explicit import ImplicitWorkload, MatrixWorkload
from ._matrices import check_matrix_entries

__all__ = ["identity", "total", "prefix", "all_range", "identity_total", "repeated", "random_queries"]



def _with_terms(workload: Workload, terms: Callable[[str, Encoding], Sequence[str]]) -> Workload:
    workload._term_maker = terms
    return workload


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT)
def identity(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """Build the ``m`` point queries ``h[u]``: F is the identity.

    Parameters
    ----------
    m : int
        The number of values of the attribute (the universe size).
    max_entries : int, default DEFAULT_MAX_ENTRIES
        Refuse more stored entries, checked before anything is allocated.

    Returns
    -------
    Workload
        A sparse ``m x m`` workload.

    Examples
    --------
    >>> pm.workloads.identity(3).labels
    ('x=0', 'x=1', 'x=2')
    """
    check_matrix_entries("m", "identity", m, m, m, max_entries)
    workload = MatrixWorkload(sp.eye_array(m, format="csr"), name=f"identity({m})")
    return _with_terms(workload, lambda attribute, encoding: [encoding.equals(attribute, u) for u in range(m)])


@validate_params(m=POSITIVE_INT)
def total(m: int) -> Workload:
    """Build the single query ``sum_u h[u]`` (F is ``1^T``): inside a Kronecker product it sums its attribute out.

    Parameters
    ----------
    m : int
        The number of values of the attribute (the universe size).

    Returns
    -------
    Workload
        A ``1 x m`` workload labelled ``"total"``.

    Examples
    --------
    >>> pm.workloads.total(3).answer([0.2, 0.3, 0.5])
    array([1.])
    """
    return _with_terms(MatrixWorkload(np.ones((1, m)), name=f"total({m})"), lambda attribute, encoding: [""])


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT)
def identity_total(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """Build the ``m`` point queries, then the total: HDMM's ``IdentityTotal`` :cite:p:`MMHM18`.

    Parameters
    ----------
    m, max_entries
        As for :func:`identity`.

    Returns
    -------
    Workload
        A sparse ``(m + 1) x m`` workload.

    Examples
    --------
    >>> pm.workloads.identity_total(2).labels
    ('x=0', 'x=1', 'total')
    """
    check_matrix_entries("m", "identity_total", 2 * m, m + 1, m, max_entries)
    matrix = sp.vstack([sp.eye_array(m, format="csr"), sp.csr_array(np.ones((1, m)))], format="csr")
    workload = MatrixWorkload(matrix, name=f"identity_total({m})")
    return _with_terms(workload, lambda attribute, encoding: [encoding.equals(attribute, u) for u in range(m)] + [""])


#: A workload's tridiagonal-inverse structure (see :func:`_prefix_inverse`): the bands of
#: ``(F^T F)^-1`` under ``"gram_inverse"``, those of a lower-bidiagonal ``F^-1`` (or None) under
#: ``"inverse"``, and ``"ranges": True`` for all the ranges (differences of prefix sums); read by
#: the factorization optimizer's resolvent method.
TridiagonalBands = dict[str, Any]


def _prefix_inverse(m: int) -> Callable[[], TridiagonalBands]:
    """The prefix sums' inverses in closed form, tridiagonal (:doc:`/theory/workloads`)."""
    def bands() -> TridiagonalBands:
        diagonal = np.full(m, 2.0)
        diagonal[0] = 1.0
        return {"gram_inverse": (diagonal, -np.ones(m - 1)), "inverse": (np.ones(m), -np.ones(m - 1))}

    return bands


def _range_inverse(m: int) -> Callable[[], TridiagonalBands]:
    """The all-range Gram matrix's inverse, ``tridiag(-1, 2, -1) / (m+1)`` (:doc:`/theory/workloads`)."""
    def bands() -> TridiagonalBands:
        return {"gram_inverse": (np.full(m, 2.0 / (m + 1)), np.full(m - 1, -1.0 / (m + 1))), "inverse": None,
                "ranges": True}

    return bands


def _prefix_terms(m: int) -> Callable[[str, Encoding], list[str]]:
    return lambda attribute, encoding: [encoding.at_most(attribute, t) for t in range(m)]


def _range_terms(m: int) -> Callable[[str, Encoding], list[str]]:
    def terms(attribute: str, encoding: Encoding) -> list[str]:
        lows, highs = np.triu_indices(m)
        return [encoding.between(attribute, a, b) for a, b in zip(lows.tolist(), highs.tolist())]

    return terms


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT, implicit=FLAG)
def prefix(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """Build the ``m`` threshold (prefix) queries ``#{x <= t}/n`` for ``t = 0 .. m-1``.

    Parameters
    ----------
    m : int
        The number of values of the ordered attribute (the universe size).
    max_entries : int, default DEFAULT_MAX_ENTRIES
        As for :func:`identity`.
    implicit : bool, default False
        Never build the matrix: answers are cumulative sums.

    Returns
    -------
    Workload
        An ``m x m`` workload (its Gram matrix in closed form, :doc:`/theory/workloads`).

    Examples
    --------
    >>> pm.workloads.prefix(3).answer([0.2, 0.3, 0.5])
    array([0.2, 0.5, 1. ])
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
    workload._tridiagonal_inverse = _prefix_inverse(m)
    return _with_terms(workload, _prefix_terms(m))


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT, implicit=FLAG)
def all_range(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """Build all ``m(m+1)/2`` range queries ``#{a <= x <= b}/n``, by ``a`` then ``b``.

    The classic workload of hierarchical strategies :cite:p:`HRMS10` and of the matrix mechanism :cite:p:`LHRMM10`.

    Parameters
    ----------
    m : int
        The number of values of the ordered attribute (the universe size).
    max_entries, implicit
        As for :func:`prefix`.

    Returns
    -------
    Workload
        An ``m(m+1)/2 x m`` workload (its Gram matrix in closed form, :doc:`/theory/workloads`).

    Examples
    --------
    >>> pm.workloads.all_range(3).answer([0.2, 0.3, 0.5])
    array([0.2, 0.5, 1. , 0.3, 0.8, 0.5])
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

        # Cell i lies in (i + 1)(m - i) ranges, most at the middle cell.
        middle = (m - 1) // 2
        workload: Workload = ImplicitWorkload((k, m), matvec, gram, name=f"all_range({m})", integer=True,
                                              nonnegative=True, column_norm=float(np.sqrt((middle + 1) * (m - middle))))
    else:
        check_matrix_entries("m", "all_range", k * m, k, m, max_entries, implicit=True)
        lows, highs = np.triu_indices(m)
        columns = np.arange(m)
        matrix = ((columns >= lows[:, None]) & (columns <= highs[:, None])).astype(float)
        workload = MatrixWorkload(matrix, name=f"all_range({m})", gram=gram)
    workload._tridiagonal_inverse = _range_inverse(m)
    return _with_terms(workload, _range_terms(m))


@validate_params(k=POSITIVE_INT, max_entries=POSITIVE_INT)
def repeated(query: Any, k: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """Build the same query asked ``k`` times: a factorization answers them at the cost of one.

    Parameters
    ----------
    query : array_like or Workload
        ``m`` real, finite values, a ``(1, m)`` row (dense or sparse), or a one-query Workload.
    k : int
        The number of copies.
    max_entries : int, default DEFAULT_MAX_ENTRIES
        The largest ``k * m`` accepted.

    Returns
    -------
    Workload
        ``k`` copies of the row, labelled ``copy0, copy1, ...``.

    Examples
    --------
    >>> pm.workloads.repeated([1, 0, 1], k=2).shape
    (2, 3)
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
    """Draw ``k`` random counting queries: each entry independently 0 or 1 with probability 1/2.

    Parameters
    ----------
    k, m : int
        The number of queries and the universe size.
    rng : numpy.random.Generator
        The random stream (a seed is refused, so that successive workloads differ).
    max_entries
        As for :func:`repeated`.

    Returns
    -------
    Workload
        Entries 0 or 1; queries labelled ``random0, random1, ...``.

    Examples
    --------
    >>> pm.workloads.random_queries(3, 5, np.random.default_rng(0)).shape
    (3, 5)
    """
    check_matrix_entries("k", "random_queries", k * m, k, m, max_entries)
    matrix = rng.integers(0, 2, size=(k, m)).astype(float)
    return MatrixWorkload(matrix, [f"random{i}" for i in range(k)], name=f"random_queries({k})")
