"""Workloads given by a matrix, or by callbacks that apply one, and the check of a bare query matrix."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..data import Domain
from ..validation import (
    DEFAULT_MAX_ENTRIES,
    FLAG,
    POSITIVE,
    InstanceOf,
    IsCallable,
    OrNone,
    check_entries,
    check_positive_int,
    check_real_array,
    check_real_dtype,
    format_count,
    validate_params,
)
from ._base import _CONCRETE, ORD, Labels, Matrix, Workload
from ._matrices import matrix_column_norms

__all__ = ["MatrixWorkload", "ImplicitWorkload", "as_query_matrix", "column_norm"]

_GRAM = IsCallable("a callable returning F^T F")
_DOMAIN = OrNone(InstanceOf(Domain, what="a Domain"))


def as_query_matrix(matrix: Any, name: str = "F", *, copy: bool = False) -> Matrix:
    """Validate a ``k x m`` query matrix: real, 2-d, non-empty and finite.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        The query matrix.
    name : str, default "F"
        The argument's name in error messages.
    copy : bool, default False
        Copy the entries even when no conversion is needed.

    Returns
    -------
    ndarray or scipy.sparse.csr_array
        The matrix as float64, sparse input as CSR.

    Examples
    --------
    >>> pm.workloads.as_query_matrix([[1, 0]])
    array([[1., 0.]])
    """
    if isinstance(matrix, Workload):
        raise TypeError(f"{name}: expected a matrix, got a Workload (pass its .matrix)")
    if sp.issparse(matrix):
        # Before the cast: a complex sparse matrix would lose its imaginary part in it.
        sparse: Any = matrix  # the stubs know no sparse attribute after the test
        check_real_dtype(name, sparse.dtype)
        matrix = sp.csr_array(sparse, dtype=float, copy=copy)
        check_real_array(name, matrix.data)
    else:
        matrix = check_real_array(name, matrix, finite=False, copy=copy)
    if matrix.ndim != 2:
        raise ValueError(f"{name}: expected a 2-d (k, m) matrix, got shape {matrix.shape}")
    if 0 in matrix.shape:
        raise ValueError(f"{name}: needs at least one query and one universe element, got shape {matrix.shape}")
    if not issparse(matrix):
        check_real_array(name, matrix)  # NaN and inf, reported after the shape
    return matrix


@validate_params(ord=ORD)
def column_norm(matrix: Matrix, ord: float = 2) -> float:
    """Compute ``||A||_{1->p}``, the largest ``l_p`` norm of a column of a real, finite matrix.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        The matrix, dense or sparse.
    ord : {1, 2, inf}, default 2
        The order ``p``.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.workloads.column_norm([[3.0, 1.0], [4.0, 1.0]])
    5.0
    """
    return float(np.max(matrix_column_norms(as_query_matrix(matrix, "matrix"), ord)))


class MatrixWorkload(Workload):
    """A workload given by its query matrix (copied), dense or sparse; ``Workload(matrix, ...)`` builds one.

    A ``gram`` closed form serves :meth:`~Workload.gram`, never the sensitivity.

    Parameters
    ----------
    matrix, labels, domain, name, gram
        As for :class:`Workload`.

    Examples
    --------
    >>> pm.workloads.MatrixWorkload(np.eye(3), name="points")
    Workload(points, k=3, m=3, dense)
    """

    @validate_params(domain=_DOMAIN, name=OrNone(InstanceOf(str)), gram=OrNone(_GRAM))
    def __init__(
        self,
        matrix: Any,
        labels: Sequence[str] | None = None,
        *,
        domain: Domain | None = None,
        name: str | None = None,
        gram: Callable[[], np.ndarray] | None = None,
    ) -> None:
        matrix = as_query_matrix(matrix, "matrix", copy=True)
        self._setup(matrix.shape, labels, domain, name)
        self._matrix: Matrix = matrix
        self._closed_gram = gram
        self._entry_facts: tuple[bool, bool] | None = None

    @property
    def matrix(self) -> Matrix:
        """The query matrix F (a float64 ndarray, or a ``scipy.sparse.csr_array``)."""
        return self._matrix

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        return np.asarray(self._matrix @ vector).ravel()

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(self._matrix.T @ values).ravel()

    def _matmat(self, block: np.ndarray) -> np.ndarray:
        return np.asarray(self._matrix @ block)

    def _rmatmat(self, block: np.ndarray) -> np.ndarray:
        return np.asarray(self._matrix.T @ block)

    def _columns(self, index: np.ndarray) -> np.ndarray:
        block = self._matrix[:, index]
        return block.toarray() if issparse(block) else np.array(block, dtype=float)

    def _sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        if issparse(self._matrix):
            return sp.csc_array(self._matrix[:, index], dtype=float)
        return super()._sparse_columns(index)

    def _gram(self) -> np.ndarray:
        if self._closed_gram is not None:
            return _checked_gram(self._closed_gram, self.universe_size)
        return self._trusted_gram()

    def _trusted_gram(self) -> np.ndarray:
        # From the matrix itself, never from a closed form: see Workload.column_distance.
        return _gram_of(self._matrix)

    def _scaled_trusted_gram(self) -> tuple[np.ndarray, float]:
        # The matrix divided by its largest magnitude (not multiplied by its reciprocal, which
        # overflows for a subnormal one), so that no product of entries underflows or overflows.
        # Between 2^-300 and 2^300 no product that matters can (their squares and the rounding
        # margins stay normal), and the copy is spared.
        matrix = self._matrix
        scale = float(np.abs(matrix.data if issparse(matrix) else matrix).max(initial=0.0))
        if scale == 0 or 2.0**-300 <= scale <= 2.0**300:
            return self._trusted_gram(), 1.0
        scaled: Matrix
        if issparse(matrix):
            scaled = sp.csr_array(matrix, copy=True)
            scaled.data /= scale
        else:
            scaled = np.asarray(matrix) / scale
        return _gram_of(scaled), scale

    def _has_nonzero_entry(self) -> bool:
        matrix = self._matrix
        return bool(np.any(matrix.data if issparse(matrix) else matrix))

    def _column_norms(self, ord: float) -> np.ndarray:
        return matrix_column_norms(self._matrix, ord)

    def _uniform_column_norm(self, ord: float) -> float | None:
        norms = self._column_norms(ord)
        return float(norms[0]) if np.all(norms == norms[0]) else None

    def _scaled_identity(self) -> float | None:
        k, m = self.shape
        if k != m:
            return None
        matrix = self._matrix
        diagonal = matrix.diagonal()
        # Off-diagonal entries counted, not summed: a difference of two sums of |entries| rounded
        # to a nonzero for 0.7 I of size 85 (the weighted tables of the adaptive mechanism).
        stored = matrix.count_nonzero() if issparse(matrix) else np.count_nonzero(matrix)
        off_diagonal = stored - np.count_nonzero(diagonal)
        return float(diagonal[0]) if off_diagonal == 0 and np.all(diagonal == diagonal[0]) else None

    def _constant_row(self) -> float | None:
        if self.num_queries != 1:
            return None
        row = self._matrix.toarray().ravel() if issparse(self._matrix) else self._matrix[0]
        return float(row[0]) if np.all(row == row[0]) else None

    def _facts(self) -> tuple[bool, bool]:
        if self._entry_facts is None:
            matrix = self._matrix
            values = matrix.data if issparse(matrix) else np.asarray(matrix)
            self._entry_facts = (bool(np.all(values == np.round(values))), bool(values.size == 0 or values.min() >= 0))
        return self._entry_facts


class ImplicitWorkload(Workload):
    """A workload whose ``k x m`` matrix is never built: products and Gram matrix only.

    That is all the factorization mechanism needs; anything that needs F itself (:attr:`matrix`,
    projection by CVXPY) raises.

    Parameters
    ----------
    shape : (int, int)
        ``(k, m)``; ``m`` may be far beyond memory.
    matvec : callable
        ``F @ v`` for a dense length-``m`` vector.
    gram : callable
        Returns ``F^T F``.
    labels, domain, name
        As for :class:`Workload`; ``labels`` may be a callable, called on first use.
    column_norm : float, optional
        A closed form for ``||F||_{1->2}``.
    rmatvec, columns : callable, optional
        ``F.T @ u`` and ``F[:, indices]``; needed by :meth:`rmatvec` and :meth:`columns`.
    integer, nonnegative : bool, default False
        What the builder knows of F's entries.

    Examples
    --------
    >>> W = pm.workloads.ImplicitWorkload((2, 2), np.cumsum, lambda: np.array([[2.0, 1.0], [1.0, 1.0]]))
    >>> W.answer([0.5, 0.5])
    array([0.5, 1. ])
    """

    @validate_params(matvec=IsCallable(), gram=_GRAM, domain=_DOMAIN, name=OrNone(InstanceOf(str)),
                     column_norm=OrNone(POSITIVE), rmatvec=OrNone(IsCallable()), columns=OrNone(IsCallable()),
                     integer=FLAG, nonnegative=FLAG)
    def __init__(
        self,
        shape: tuple[int, int],
        matvec: Callable[[np.ndarray], np.ndarray],
        gram: Callable[[], np.ndarray],
        *,
        labels: Labels | None = None,
        domain: Domain | None = None,
        name: str | None = None,
        column_norm: float | None = None,
        rmatvec: Callable[[np.ndarray], np.ndarray] | None = None,
        columns: Callable[[np.ndarray], np.ndarray] | None = None,
        integer: bool = False,
        nonnegative: bool = False,
    ) -> None:
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
            raise TypeError(f"shape: expected a pair (k, m) of ints, got {type(shape).__name__}")
        if len(shape) != 2:
            raise ValueError(f"shape: expected a pair (k, m), got {len(shape)} entries")
        k, m = check_positive_int("shape[0]", shape[0]), check_positive_int("shape[1]", shape[1])
        self._setup((k, m), labels, domain, name)
        self._product = matvec
        self._closed_gram = gram
        self._adjoint = rmatvec
        self._column_block = columns
        self._closed_column_norm = column_norm
        self._entry_facts = (integer, nonnegative)

    @property
    def is_implicit(self) -> bool:
        """Always True: the matrix of an implicit workload is never built."""
        return True

    @property
    def has_adjoint(self) -> bool:
        """Whether the builder gave both ``rmatvec`` and ``columns``."""
        return self._adjoint is not None and self._column_block is not None

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        return self._result("matvec", self._product(vector), self._shape[0])

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        assert self._adjoint is not None  # has_adjoint was checked by the caller
        return self._result("rmatvec", self._adjoint(values), self._shape[1])

    def _columns(self, index: np.ndarray) -> np.ndarray:
        assert self._column_block is not None  # has_adjoint was checked by the caller
        return np.asarray(self._column_block(index), dtype=float).reshape(self._shape[0], index.size)

    def _result(self, callback: str, result: Any, length: int) -> np.ndarray:
        """The output of a builder's callback, checked: a wrong one is the builder's bug, and is
        reported as such rather than passed on to the caller's arithmetic."""
        result = check_real_array(f"{callback} of {self.name}", result, finite=False).ravel()
        if result.shape != (length,):
            raise ValueError(f"{callback} of {self.name}: returned {result.size} entries, expected {length}")
        return result

    def _gram(self) -> np.ndarray:
        return _checked_gram(self._closed_gram, self.universe_size)

    def _column_norm(self, ord: float) -> float:
        """Only ``ord=2``: the builder's closed form, else the diagonal of the Gram matrix."""
        if ord != 2:
            raise ValueError(f"ord: an implicit workload offers only the 1->2 norm (ord=2), got {ord!r}")
        if self._closed_column_norm is not None:
            return self._closed_column_norm
        m = self.universe_size
        check_entries("ord", m * m, DEFAULT_MAX_ENTRIES,
                      f"the Gram matrix behind the column norms of {self.name} (m={format_count(m)})",
                      limit="DEFAULT_MAX_ENTRIES")
        return float(np.sqrt(np.max(np.diag(self._gram()))))

    def _facts(self) -> tuple[bool, bool]:
        return self._entry_facts


def _gram_of(matrix: Matrix) -> np.ndarray:
    """``A^T A`` as a dense ndarray, for a dense or sparse matrix."""
    product = matrix.T @ matrix
    return product.toarray() if issparse(product) else np.asarray(product)


def _checked_gram(closed_form: Callable[[], np.ndarray], m: int) -> np.ndarray:
    """A builder's closed-form Gram matrix, checked: real, finite and ``m x m``."""
    gram = check_real_array("gram", closed_form())
    if gram.shape != (m, m):
        raise ValueError(f"gram: the closed form returned shape {gram.shape}, expected ({m}, {m})")
    return gram


_CONCRETE.update(matrix=MatrixWorkload, implicit=ImplicitWorkload)
