"""The :class:`Workload` base: ``k`` linear queries over a universe of ``m`` elements.

Answers are fractions: for the normalized histogram ``h`` of a data set (``h[u]`` the fraction of
its rows equal to universe element ``u``) the true answers are ``F @ h``; the counts are
``F @ c = n F @ h`` (:cite:p:`LHRMM10`, :cite:p:`NTZ13`). Every workload type (an explicit matrix, an implicit
operator, a
Kronecker product, a stack) implements a few kernels (products, columns, Gram matrix, column
norms, entry facts); everything a caller sees (validation, labels, answers to histograms and
records, sensitivity) is written once here on top of them.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import QueryMatrix, issparse
from ..data.dataset import DEFAULT_MAX_UNIVERSE, Dataset, histogram
from ..data.domain import Domain
from ..data.encodings import Codes, Encoding
from ..privacy.guarantees import Neighbouring
from ..validation import (
    DEFAULT_MAX_ENTRIES,
    POSITIVE_INT,
    Options,
    as_array,
    check_entries,
    check_real_array,
    check_real_dtype,
    check_real_vector,
    format_count,
    validate_params,
)
from .kronecker_gram import KroneckerGram

__all__ = [
    "Workload",
    "Kernels",
    "DEFAULT_MAX_ENTRIES",
    "as_query_matrix",
    "column_norm",
    "max_column_distance",
    "PAIRWISE_UNIVERSE",
]

Matrix = QueryMatrix

Labels = Sequence[str] | Callable[[], Sequence[str]]

#: Largest universe whose counts :meth:`Workload.answer_counts` holds densely (8 MB of float64).
DENSE_COUNTS_UNIVERSE = 2**20

#: The orders of ``||F||_{1->p}`` offered (True, which Python reads as 1, is refused).
ORD = Options(1, 2, math.inf)

#: Largest universe for which :meth:`Workload.column_distance` computes the exact largest distance
#: between two columns from the ``m x m`` Gram matrix (128 MB at this size).
PAIRWISE_UNIVERSE = 4096


def max_column_distance(gram: np.ndarray, terms: int) -> float:
    """Bound the largest distance between two columns of a matrix from its Gram matrix.

    Returns an upper bound, tight to rounding, on ``max over u != v of ||A_u - A_v||_2`` for a
    matrix ``A`` with ``terms`` rows, given ``G = A^T A``. The squared distance
    ``G_uu + G_vv - 2 G_uv`` cancels catastrophically in floating point, so a margin of
    ``2 (terms + 4) eps (G_uu + G_vv)`` is added to each pair before the maximum: the result is
    an upper bound whatever the rounding. The derivation of the margin is in the theory page
    *Workloads* (``docs/theory/workloads.md``). The pairs are visited in row blocks, so that no
    second ``m x m`` array is built.

    Parameters
    ----------
    gram : array_like, shape (m, m)
        The Gram matrix ``A^T A``.
    terms : int
        The number of rows of ``A`` (the number of products summed in each Gram entry).

    Returns
    -------
    float
        The bound on the largest column distance; 0 for a single column.

    See Also
    --------
    Workload.column_distance : this bound for a workload's query matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.workloads import max_column_distance
    >>> A = np.eye(3)  # columns e_0, e_1, e_2: every pair is sqrt(2) apart
    >>> round(max_column_distance(A.T @ A, terms=3), 6)
    1.414214
    """
    gram = np.asarray(gram, dtype=float)
    m = gram.shape[0]
    diagonal = np.diag(gram)
    margin = 2.0 * (terms + 4) * np.finfo(float).eps
    best, block = 0.0, max(1, 2**22 // max(m, 1))
    for start in range(0, m, block):
        stop = min(m, start + block)
        norms = diagonal[start:stop, None] + diagonal[None, :]
        squares = norms - 2.0 * gram[start:stop] + margin * np.abs(norms)
        squares[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # u == v is no pair
        best = max(best, float(squares.max()))
    return math.sqrt(max(best, 0.0))


#: The concrete types ``Workload(...)`` and :meth:`Workload.implicit` build, registered by
#: :mod:`projmech.workloads.explicit` when the package loads, so that this module imports none of
#: its subclasses (the package's ``__init__`` imports both modules before anything can build one).
_CONCRETE: dict[str, Any] = {}


class _ConstructorSignature:
    """The signature ``inspect.signature(Workload)`` reports (and so the documentation shows):
    that of :class:`MatrixWorkload`, which ``Workload(...)`` builds. ``Workload.__new__`` takes
    ``*args, **kwargs`` only to pass a subclass's arguments on; subclasses see None here, and so
    their own constructors' signatures."""

    def __get__(self, instance: object, owner: type) -> inspect.Signature | None:
        if instance is not None or owner is not Workload:
            return None
        return inspect.signature(_CONCRETE["matrix"])


class Workload:
    """A workload: ``k`` linear queries over a universe of ``m`` elements, a ``k x m`` matrix F.

    ``Workload(matrix, labels)`` builds an explicit matrix (a :class:`MatrixWorkload`: the base
    class constructs it, as :class:`scipy.sparse.linalg.LinearOperator` does for its own
    callbacks); :meth:`implicit` builds a workload known through its products; :func:`kron` and
    :func:`stack` compose workloads without building their matrices. Query ``i`` of a data set
    with normalized histogram ``h`` is ``(F @ h)[i]``, a fraction of its rows
    (:cite:p:`LHRMM10`).

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        Row ``i`` holds query ``i``'s value on each universe element. Entries must be finite.
        Sparse input is kept sparse (CSR).
    labels : sequence of str, optional
        One label per query; default ``"q0", "q1", ...``.
    domain : Domain, optional
        The universe the columns index (row-major order); ``domain.size`` must equal ``m``.
    name : str, optional
        A short description, e.g. ``"marginals(way=2)"``.
    gram : callable, optional
        A closed form for the Gram matrix ``F^T F`` (called with no arguments, returns an
        ``m x m`` ndarray); by default :meth:`gram` computes it from F.

    Raises
    ------
    TypeError
        For complex, string or other non-real entries (complex ones would lose their imaginary
        part), labels that are not str (a str would be split into characters), a ``domain``
        that is not a Domain, a ``name`` that is not a str.
    ValueError
        For a matrix that is not 2-d or is empty, NaN or infinite entries, a number of labels
        other than ``k``, a domain whose universe is not ``m``.

    See Also
    --------
    Workload.implicit : a workload known only through its products and Gram matrix.
    kron, stack : Kronecker products and unions of workloads, kept structured.
    marginals : the cells of marginal tables.

    Examples
    --------
    Two queries over a universe of three elements, answered on a histogram and on records:

    >>> import numpy as np
    >>> import projmech as pm
    >>> W = pm.Workload([[1, 1, 0], [0, 1, 1]], ["left", "right"])
    >>> W.shape, W.labels
    ((2, 3), ('left', 'right'))
    >>> W.answer([0.5, 0.25, 0.25])
    array([0.75, 0.5 ])
    >>> domain = pm.Domain(["x"], [3])
    >>> data = pm.Dataset(np.array([[0], [1], [1], [2]]), domain)
    >>> W.answer_counts(data), W.answer_data(data)
    (array([3., 3.]), array([0.75, 0.75]))
    >>> W.sensitivity(), W.is_integer, W.is_nonnegative
    (1.4142135623730951, True, True)
    """

    __signature__ = _ConstructorSignature()

    def __new__(cls, *args: Any, **kwargs: Any) -> Workload:
        if cls is Workload:
            return super().__new__(_CONCRETE["matrix"])
        return super().__new__(cls)

    def _setup(self, shape: tuple[int, int], labels: Labels | None, domain: Domain | None,
               name: str | None) -> None:
        """The state every workload type holds, from arguments its constructor checked."""
        k, m = shape
        self._label_factory: Callable[[], Sequence[str]] | None = None
        if callable(labels):
            self._label_factory, labels = labels, None
        elif labels is not None:
            labels = check_labels(labels, k)
        if domain is not None and domain.size != m:
            raise ValueError(f"domain: its universe has {domain.size} elements but the workload has {m} columns")
        self._shape = (int(k), int(m))
        self._labels: tuple[str, ...] | None = labels
        self._column_distance: float | None = None
        # Builders of per-attribute workloads set it: each query's label part on an attribute.
        self._term_maker: Callable[[str, Encoding], Sequence[str]] | None = None
        # Closed-form tridiagonal inverses (prefix and all-range builders set it): what the
        # factorization optimizer's resolvent method needs.
        self._tridiagonal_inverse: Callable[[], dict[str, Any]] | None = None
        self.domain = domain
        self.name = name or "workload"

    @classmethod
    def implicit(cls, shape: tuple[int, int], matvec: Callable[[np.ndarray], np.ndarray],
                 gram: Callable[[], np.ndarray], **options: Any) -> Workload:
        """Build a workload whose ``k x m`` matrix is never built.

        The same as :class:`ImplicitWorkload`, which documents every option.

        Parameters
        ----------
        shape : (int, int)
            ``(k, m)``, the number of queries and the universe size.
        matvec : callable
            ``F @ v`` for a dense length-``m`` vector ``v``.
        gram : callable
            Called with no arguments, returns the ``m x m`` Gram matrix ``F^T F``.
        **options
            The keywords of :class:`ImplicitWorkload`: ``labels``, ``domain``, ``name``,
            ``column_norm``, ``rmatvec``, ``columns``, ``integer``, ``nonnegative``.

        Returns
        -------
        ImplicitWorkload
            The workload.

        Examples
        --------
        >>> import numpy as np
        >>> import projmech as pm
        >>> P = pm.Workload.implicit((3, 3), np.cumsum, lambda: np.array([[3., 2, 1], [2, 2, 1], [1, 1, 1]]))
        >>> P.is_implicit, P.answer([0.5, 0.25, 0.25])
        (True, array([0.5 , 0.75, 1.  ]))
        """
        workload: Workload = _CONCRETE["implicit"](shape, matvec, gram, **options)
        return workload

    @property
    def kernels(self) -> Kernels:
        """The workload's unchecked products, for solver loops that validated their vectors at
        their own boundary (:class:`Kernels`).

        Returns
        -------
        Kernels
            A view of this workload's kernels.

        Examples
        --------
        >>> import numpy as np
        >>> import projmech as pm
        >>> pm.prefix(3).kernels.matvec(np.array([1.0, 2.0, 3.0]))
        array([1., 3., 6.])
        """
        return Kernels(self)

    # --- the kernels each type implements ------------------------------------------------------

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        """``F @ vector`` for a float64 vector of length ``m``, unchecked: solver loops call it
        with vectors they built, so that no iteration re-validates what the boundary checked."""
        raise NotImplementedError

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        """``F.T @ values`` for a float64 vector of length ``k``, unchecked (needs
        :attr:`has_adjoint`)."""
        raise NotImplementedError

    def _columns(self, index: np.ndarray) -> np.ndarray:
        """``F[:, index]`` as a dense ``(k, len(index))`` array for an int64 array of universe
        indices, unchecked (needs :attr:`has_adjoint`)."""
        raise NotImplementedError

    def _sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        """``F[:, index]`` as a ``scipy.sparse.csc_array``, unchecked (needs :attr:`has_adjoint`):
        an active-set solver's products with a pool of columns cost their stored entries. From
        the dense columns, unless a type stores them sparsely."""
        return sp.csc_array(self._columns(index))

    def _column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``F[:, left]^T F[:, right]`` for int64 universe indices, unchecked (needs
        :attr:`has_adjoint`): the inner products of columns an active-set solver needs. From the
        columns, unless a type knows a closed form (marginals: from the attributes on which two
        elements agree; Kronecker products: factor by factor), which costs no ``k``."""
        left_columns = self._columns(left)
        right_columns = left_columns if right is left else self._columns(right)
        return left_columns.T @ right_columns

    def _matmat(self, block: np.ndarray) -> np.ndarray:
        """``F @ block`` for an ``(m, r)`` float64 array: the product a Kronecker product applies
        along one axis. By columns, unless a type has a faster route."""
        return np.stack([self._matvec(np.ascontiguousarray(column)) for column in block.T], axis=1)

    def _rmatmat(self, block: np.ndarray) -> np.ndarray:
        """``F.T @ block`` for a ``(k, r)`` float64 array (needs :attr:`has_adjoint`)."""
        return np.stack([self._rmatvec(np.ascontiguousarray(column)) for column in block.T], axis=1)

    def _gram(self) -> np.ndarray:
        """``F^T F`` as a dense ``m x m`` ndarray (the caller has checked its size)."""
        raise NotImplementedError

    def _column_norms(self, ord: float) -> np.ndarray:
        """The ``l_p`` norm of every column (``m`` entries; the caller has checked ``m``)."""
        raise NotImplementedError

    def _column_norm(self, ord: float) -> float:
        """``||F||_{1->p}``; by default the largest of :meth:`_column_norms`."""
        check_entries("ord", self.universe_size, DEFAULT_MAX_ENTRIES,
                      f"the column norms of {self.name} (m={format_count(self.universe_size)})",
                      limit="DEFAULT_MAX_ENTRIES")
        return float(np.max(self._column_norms(ord)))

    def _facts(self) -> tuple[bool, bool]:
        """(every entry an integer, no entry negative)."""
        raise NotImplementedError

    def _default_labels(self) -> Sequence[str]:
        if self._term_maker is not None:
            return [term or "total" for term in self._term_maker("x", Codes(self._shape[1]))]
        return [f"q{i}" for i in range(self._shape[0])]

    def _terms(self, attribute: str, encoding: Encoding) -> Sequence[str]:
        """Each query's part of a label inside a Kronecker product, where this workload acts on
        ``attribute`` coded by ``encoding`` (its labels name the values: categories, bins or
        codes); ``""`` for a query that constrains nothing (a total)."""
        if self._term_maker is not None:
            return self._term_maker(attribute, encoding)
        return self.labels

    def _uniform_column_norm(self, ord: float) -> float | None:
        """The ``l_p`` norm every column shares, when the structure says they are all equal
        (identity, total, marginals); else None."""
        return None

    def _scaled_identity(self) -> float | None:
        """``c`` when F is ``c I`` (inside a Kronecker product: the attribute is kept in the
        table, its cells weighted by ``c``); else None."""
        return None

    def _constant_row(self) -> float | None:
        """``c`` when F is the single query ``c 1^T`` (a total), which a Kronecker product sums
        its attribute out for; else None."""
        return None

    def _stored_entries(self) -> int:
        """The entries an explicit form would store (``k * m`` for a dense or implicit one)."""
        if self.is_implicit:
            return self.num_queries * self.universe_size
        matrix = self.matrix
        return int(matrix.nnz) if issparse(matrix) else int(matrix.size)

    @property
    def marginal_way(self) -> int | None:
        """``way`` for the workload built by ``marginals(domain, way)`` (every cell of every
        ``way``-way table of :attr:`domain`, in its order); ``None`` for any other workload,
        even one with the same rows: the structure is known, not inferred."""
        return None

    @property
    def has_adjoint(self) -> bool:
        """Whether :meth:`rmatvec` and :meth:`columns` are available."""
        return True

    @property
    def is_implicit(self) -> bool:
        """Whether :attr:`matrix` is unavailable (its builder asked for it never to be built, or
        it is too large to build)."""
        return False

    @property
    def accepts_histograms(self) -> bool:
        """Whether :meth:`answer` can take a histogram: for a universe of at most
        ``DEFAULT_MAX_UNIVERSE`` elements, or an explicit matrix (use :meth:`answer_data`
        beyond)."""
        return not self.is_implicit or self.universe_size <= DEFAULT_MAX_UNIVERSE

    @property
    def matrix(self) -> Matrix:
        """The query matrix F (ndarray or ``scipy.sparse.csr_array``).

        Raises
        ------
        ValueError
            For an implicit workload (:attr:`is_implicit`), whose matrix is never built.
        """
        k, m = self._shape
        raise ValueError(
            f"{self.name} is implicit (k={format_count(k)}, m={format_count(m)}): its query matrix is never "
            "built; use its products (answer, rmatvec, columns) and gram(), or build it explicitly "
            "(implicit=False) where it fits in memory"
        )

    @property
    def is_sparse(self) -> bool:
        """Whether :attr:`matrix` is a ``scipy.sparse`` array (False for an implicit workload)."""
        return not self.is_implicit and issparse(self.matrix)

    # --- shape and labels ----------------------------------------------------------------------

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per query, built on first use.

        Raises
        ------
        ValueError
            For a workload of more than ``DEFAULT_MAX_ENTRIES`` queries, whose labels would not
            fit in memory (``all_range(10**6, implicit=True)`` has 5·10^11).
        """
        if self._labels is None:
            check_entries("labels", self._shape[0], DEFAULT_MAX_ENTRIES,
                          f"the labels of {self.name} (k={format_count(self._shape[0])})", limit="DEFAULT_MAX_ENTRIES")
            if self._label_factory is not None:  # the caller's: checked
                self._labels = check_labels(self._label_factory(), self._shape[0])
            else:  # built here, one str per query
                self._labels = tuple(self._default_labels())
        return self._labels

    @property
    def shape(self) -> tuple[int, int]:
        """``(k, m)``: number of queries, universe size."""
        return self._shape

    @property
    def num_queries(self) -> int:
        """``k``, the number of queries (rows of F)."""
        return self._shape[0]

    @property
    def universe_size(self) -> int:
        """``m``, the number of universe elements (columns of F)."""
        return self._shape[1]

    # --- products, checked at the boundary -----------------------------------------------------

    @validate_params(max_entries=POSITIVE_INT)
    def gram(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """Compute the Gram matrix ``F^T F`` as a dense ``m x m`` ndarray.

        The factorization norm, and so the factorization mechanism's error, depends on F only
        through it (:cite:p:`ENU20`). Structured workloads use a closed form.

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            The largest ``m * m`` accepted.

        Returns
        -------
        ndarray, shape (m, m)
            ``F^T F``.

        Raises
        ------
        ValueError
            If ``m * m`` exceeds ``max_entries``.
        """
        m = self.universe_size
        check_entries("gram", m * m, max_entries, f"the Gram matrix F^T F of {self.name} (m={format_count(m)})",
                      hint=" (raise max_entries if you have the memory: 8 bytes per entry)")
        return self._gram()

    def kronecker_gram(self) -> KroneckerGram:
        """Express ``F^T F`` as a sum of Kronecker products of per-attribute matrices.

        A union of Kronecker products gives one term per product, each the product of its
        factors' Gram matrices, so its size is that of the attributes, not of the universe. A
        workload without that structure gives one term, its dense :meth:`gram`.

        Returns
        -------
        KroneckerGram
            The Gram matrix, kept factored.

        Raises
        ------
        ValueError
            For an unstructured workload whose dense Gram matrix would exceed
            ``DEFAULT_MAX_ENTRIES`` entries.
        """
        return KroneckerGram([(1.0, (self.gram(),))])

    @validate_params(max_entries=POSITIVE_INT)
    def toarray(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """Return F as a dense ndarray (a copy).

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            The largest ``k * m`` accepted (a sparse ``identity(10**7)`` stores 10^7 entries, its
            dense form would hold 10^14).

        Returns
        -------
        ndarray, shape (k, m)
            The query matrix.

        Raises
        ------
        ValueError
            For an implicit workload, or if ``k * m`` exceeds ``max_entries``.
        """
        if self.is_implicit:
            _ = self.matrix  # raises, naming the workload
        k, m = self._shape
        check_entries("max_entries", k * m, max_entries,
                      f"the dense matrix of {self.name} (k={format_count(k)}, m={format_count(m)})")
        matrix = self.matrix
        return matrix.toarray() if issparse(matrix) else np.array(matrix, dtype=float)

    def answer(self, histogram: Any) -> np.ndarray:
        """Answer the queries on a histogram: ``F @ h``.

        Parameters
        ----------
        histogram : array_like or scipy.sparse array, shape (m,)
            A histogram over the universe, dense or sparse (a ``(1, m)`` or ``(m, 1)`` sparse
            array); normalized (summing to 1) for answers as fractions.

        Returns
        -------
        ndarray, shape (k,)
            The answers.

        Raises
        ------
        TypeError
            For complex, string or other non-real entries.
        ValueError
            On a wrong length or non-finite entries, or when the workload is implicit over a
            universe too large for a dense histogram (see :attr:`accepts_histograms`) or has
            more than ``DEFAULT_MAX_ENTRIES`` queries.
        """
        m = self.universe_size
        if not self.accepts_histograms:
            raise ValueError(
                f"histogram: {self.name} is implicit over a universe of {format_count(m)} elements, above "
                f"DEFAULT_MAX_UNIVERSE={DEFAULT_MAX_UNIVERSE:.0e}; a histogram over it cannot be "
                "materialized. Answer the records instead: answer_data(dataset)"
            )
        if self.is_implicit:
            k = self._shape[0]
            check_entries("histogram", k, DEFAULT_MAX_ENTRIES,
                          f"the answers of {self.name} to it (k={format_count(k)})", limit="DEFAULT_MAX_ENTRIES")
        if sp.issparse(histogram):
            # The stubs know no sparse attribute after the test; the input is a real sparse array.
            sparse: Any = histogram
            if sparse.shape not in ((m,), (1, m), (m, 1)):  # 1-d: a projection's sparse witness
                raise ValueError(f"histogram: expected {m} entries, got sparse shape {sparse.shape}")
            check_real_dtype("histogram", sparse.dtype)
            if self.is_implicit:  # an implicit product takes dense vectors
                return self.answer(sparse.toarray().ravel())
            vector = sp.csc_array(sparse.reshape(m, 1), dtype=float)
            check_real_array("histogram", vector.data)
            product = self.matrix @ vector  # sparse for a sparse F, an ndarray for a dense F
            if issparse(product):
                product = product.toarray()
            return np.asarray(product).ravel()
        return self._matvec(check_real_vector("histogram", histogram, m))

    def matvec(self, vector: Any) -> np.ndarray:
        """Compute ``F @ vector``: :meth:`answer` under the name that SciPy's operators use.

        Parameters
        ----------
        vector : array_like, shape (m,)
            A real vector over the universe.

        Returns
        -------
        ndarray, shape (k,)
            ``F @ vector``.

        Raises
        ------
        TypeError
            For non-real entries.
        ValueError
            As for :meth:`answer`.
        """
        return self.answer(vector)

    def rmatvec(self, values: Any) -> np.ndarray:
        """Compute ``F.T @ values``, the adjoint product.

        At each universe element, the sum of the query values weighted by that element's
        entries: the gradient of ``(1/2)||F w - y||^2`` is ``F.T @ (F w - y)``.

        Parameters
        ----------
        values : array_like, shape (k,)
            One real value per query.

        Returns
        -------
        ndarray, shape (m,)
            ``F.T @ values``.

        Raises
        ------
        ValueError
            On a wrong length or non-finite entries; for a workload without an adjoint (see
            :meth:`implicit`) or an implicit one over a universe too large for a dense vector.
        """
        k, m = self._shape
        vector = check_real_vector("values", values, k)
        self._require_adjoint("rmatvec")
        if self.is_implicit and m > DEFAULT_MAX_UNIVERSE:
            raise ValueError(
                f"values: F.T @ values of {self.name} has {format_count(m)} entries, above "
                f"DEFAULT_MAX_UNIVERSE={DEFAULT_MAX_UNIVERSE:.0e}; it cannot be materialized"
            )
        return self._rmatvec(vector)

    def columns(self, indices: Any) -> np.ndarray:
        """Return the columns ``F[:, indices]`` as a dense ndarray.

        Parameters
        ----------
        indices : array_like of int
            Universe indices, each in ``[0, m)``.

        Returns
        -------
        ndarray, shape (k, len(indices))
            The columns.

        Raises
        ------
        TypeError
            If ``indices`` is not a 1-d array of integers.
        ValueError
            For an index outside ``[0, m)``, a result above ``DEFAULT_MAX_ENTRIES`` entries, or a
            workload without an adjoint (:attr:`has_adjoint`).
        """
        index = as_array("indices", indices)
        if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
            raise TypeError(f"indices: expected a 1-d array of integers, got dtype {index.dtype}, shape {index.shape}")
        if index.size and (index.min() < 0 or index.max() >= self.universe_size):
            raise ValueError(f"indices: must lie in [0, {self.universe_size}), got [{index.min()}, {index.max()}]")
        index = index.astype(np.int64)
        k = self._shape[0]
        check_entries("indices", k * index.size, DEFAULT_MAX_ENTRIES,
                      f"{index.size:,} columns of {self.name} (k={format_count(k)})", limit="DEFAULT_MAX_ENTRIES")
        self._require_adjoint("columns")
        return self._columns(index)

    def as_linear_operator(self) -> Any:
        """Wrap F as a :class:`scipy.sparse.linalg.LinearOperator`.

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
            An operator of shape ``(k, m)`` whose ``matvec`` and ``rmatvec`` are :meth:`matvec`
            and :meth:`rmatvec`.

        Raises
        ------
        ValueError
            For a workload without an adjoint (:attr:`has_adjoint`).
        """
        from scipy.sparse.linalg import LinearOperator

        self._require_adjoint("as_linear_operator")
        return LinearOperator(self._shape, matvec=lambda v: self.matvec(np.ravel(v)),
                              rmatvec=lambda u: self.rmatvec(np.ravel(u)), dtype=float)

    def _require_adjoint(self, method: str) -> None:
        if not self.has_adjoint:
            raise ValueError(
                f"{method}: {self.name} is implicit and its builder gave no rmatvec/columns; "
                "pass them to Workload.implicit or build the matrix explicitly"
            )

    # --- answers on records --------------------------------------------------------------------

    def check_data(self, data: Dataset) -> None:
        """Check that a data set's rows index this workload's universe.

        Parameters
        ----------
        data : Dataset
            The records; their domain must be the workload's, if it has one, and in any case
            have ``m`` elements.

        Raises
        ------
        TypeError
            If ``data`` is not a :class:`~projmech.data.dataset.Dataset`.
        ValueError
            If its domain differs from the workload's, or its universe size from ``m``.
        """
        if not isinstance(data, Dataset):
            raise TypeError(f"data: expected a Dataset, got {type(data).__name__}")
        if self.domain is not None and data.domain != self.domain:
            raise ValueError(f"data: its domain {data.domain!r} differs from the workload's {self.domain!r}")
        if data.domain.size != self.universe_size:
            raise ValueError(
                f"data: its universe has {format_count(data.domain.size)} elements, "
                f"the workload {format_count(self.universe_size)}"
            )

    def answer_counts(self, data: Dataset) -> np.ndarray:
        """Answer the queries as counts on a data set's records: ``F c``, ``c`` its histogram of counts.

        Structured workloads (Kronecker products, stacks, marginals) count from the records'
        group-by tables and never index the universe, so ``d = 150`` binary attributes
        (``2^150`` elements) work. Others answer the histogram of counts. For an integer
        workload (:attr:`is_integer`) the counts are exact integers.

        Parameters
        ----------
        data : Dataset
            The records, over the workload's universe (see :meth:`check_data`).

        Returns
        -------
        ndarray, shape (k,)
            The counts.

        Raises
        ------
        TypeError, ValueError
            As for :meth:`check_data`.
        """
        self.check_data(data)
        return self._answer_counts(data)

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        """:meth:`answer_counts` on a checked data set: a dense count vector where the universe
        is small (cheaper than a sparse histogram), else the sparse histogram."""
        if not self.is_implicit and self.universe_size <= DENSE_COUNTS_UNIVERSE:
            counts = data.table(range(len(data.domain))).ravel().astype(float)
            return self._matvec(counts)
        return self.answer(histogram(data, sparse=True, normalize=False))

    def answer_data(self, data: Dataset) -> np.ndarray:
        """Answer the queries on a data set's records, as fractions of its ``n`` rows.

        The same as :meth:`answer_counts` divided by ``n``, i.e. ``F @ histogram(data)``.

        Parameters
        ----------
        data : Dataset
            The records, over the workload's universe (see :meth:`check_data`).

        Returns
        -------
        ndarray, shape (k,)
            The answers.

        Raises
        ------
        TypeError
            If ``data`` is not a :class:`~projmech.data.dataset.Dataset`.
        ValueError
            As for :meth:`check_data`, or for a data set with no rows.
        """
        counts = self.answer_counts(data)
        if data.n == 0:
            raise ValueError("data: the data set has no rows, so its answers as fractions of n are undefined "
                             "(answer_counts gives its counts, all 0)")
        return counts / data.n

    # --- norms and sensitivity -----------------------------------------------------------------

    def column_distance(self) -> float | None:
        """Compute the largest distance between two columns, ``max over u != v of ||F_u - F_v||_2``.

        This is the l2 sensitivity of the counts ``F c`` under replace-one neighbours (one row
        moves from element ``u`` to ``v``), bounded from above to rounding by
        :func:`max_column_distance`. An explicit matrix's Gram matrix is computed from the
        matrix itself here, never taken from a ``gram=`` closed form: a wrong closed form must
        not lower the noise. An implicit workload is trusted to give its Gram matrix.

        Returns
        -------
        float or None
            The distance; None above :data:`PAIRWISE_UNIVERSE` elements, where the mechanisms
            use the bound of :meth:`~projmech.privacy.guarantees.Neighbouring.count_sensitivity` instead.
        """
        if self.universe_size > PAIRWISE_UNIVERSE:
            return None
        if self._column_distance is None:
            gram, scale = self._scaled_trusted_gram()
            self._column_distance = scale * max_column_distance(gram, self.num_queries)
        return self._column_distance

    def _trusted_gram(self) -> np.ndarray:
        """The Gram matrix that sensitivity may rest on (see :meth:`column_distance`)."""
        return self.gram()

    def _scaled_trusted_gram(self) -> tuple[np.ndarray, float]:
        """``(G, s)`` with ``s^2 G`` the trusted Gram matrix and ``G`` the Gram matrix of ``F / s``.

        Types that compute ``F^T F`` from entries scale them first (``s``: the largest magnitude),
        so that ``G`` neither underflows nor overflows: the products of entries of 1e-200 are 0 in
        float64 (and of 1e200, inf), which made the column distance, and with it the noise, 0.
        By default ``s = 1``: a closed form is its builder's.
        """
        return self._trusted_gram(), 1.0

    def _has_nonzero_entry(self) -> bool:
        """Whether some entry of F is not 0. Types that can tell say so; the others are assumed
        to have one, so that a sensitivity of 0 is refused rather than trusted (see
        :meth:`count_sensitivity`)."""
        return True

    def count_sensitivity(self, neighbouring: Neighbouring | str, ord: float = 2) -> float:
        """Compute the ``l_p`` sensitivity of the counts ``F c`` under a neighbouring relation.

        The one computation behind every mechanism's noise and every planning figure:
        :meth:`projmech.privacy.guarantees.Neighbouring.count_sensitivity` with this workload's column
        norm, its sign and, under replace-one in l2, :meth:`column_distance`. Under add/remove
        it is ``||F||_{1->p}``; under replace-one at most twice that (``sqrt(2)`` times in l2
        for a nonnegative F), as the theory page *Workloads* (``docs/theory/workloads.md``)
        shows.

        Parameters
        ----------
        neighbouring : Neighbouring or {"add-remove", "replace-one"}
            The neighbouring relation.
        ord : {1, 2}, default 2
            The norm: 1 for the Laplace mechanism, 2 for the Gaussian.

        Returns
        -------
        float
            The sensitivity of the counts (divide by ``n`` for the answers as fractions).

        Raises
        ------
        TypeError, ValueError
            For an unknown relation or order.
        ValueError
            If F is not all zero but its sensitivity is 0 or below float64's smallest normal
            number (2.2e-308): noise calibrated to it would be none, or rounded away. (Norms and
            distances are computed scale-safely, so this happens only for entries near 1e-308 or
            below; scale such a workload up.)
        """
        relation = Neighbouring.parse(neighbouring)
        exact = self.column_distance() if relation is Neighbouring.REPLACE_ONE and ord == 2 else None
        sensitivity = relation.count_sensitivity(self.column_norm(ord), ord, nonnegative=self.is_nonnegative,
                                                 column_distance=exact)
        if sensitivity < sys.float_info.min and (sensitivity > 0 or self._has_nonzero_entry()):
            # A zero sensitivity is right for a zero F (its counts are 0 whatever the data); for
            # any other it is an underflow, and no noise at all would publish the counts exactly.
            raise ValueError(
                f"workload: the {relation.value} l{ord:g} sensitivity of {self.name} is {sensitivity:.3g}, below "
                f"float64's smallest normal number ({sys.float_info.min:.3g}) though its queries are not all zero: "
                "noise calibrated to it would be none, or rounded away; scale the queries up (multiply F by c, "
                "e.g. 1 / max|F|, and divide the answers by c)"
            )
        return sensitivity

    @property
    def is_integer(self) -> bool:
        """Whether every entry of F is an integer (for an implicit workload: its builder's claim).

        The counts ``F c`` are then integers, and the mechanisms can add exact discrete noise.
        """
        return self._facts()[0]

    @property
    def is_nonnegative(self) -> bool:
        """Whether F has no negative entry (for an implicit workload: its builder's claim).

        The l2 sensitivity of the counts under replace-one is then at most
        ``sqrt(2) ||F||_{1->2}`` instead of ``2 ||F||_{1->2}``.
        """
        return self._facts()[1]

    @validate_params(ord=ORD)
    def column_norm(self, ord: float = 2) -> float:
        """Compute ``||F||_{1->p}``, the largest ``l_p`` norm of a column.

        Parameters
        ----------
        ord : {1, 2, inf}, default 2
            The order ``p``.

        Returns
        -------
        float
            The largest column norm.

        Raises
        ------
        ValueError
            For another order; for an implicit workload, any order but 2; where the ``m``
            column norms are too many to compute (above ``DEFAULT_MAX_ENTRIES`` and no closed
            form).
        """
        return self._column_norm(ord)

    def sensitivity(self) -> float:
        """Compute ``||F||_{1->2}``, the largest column l2 norm.

        It is the l2 sensitivity of the counts ``F c`` under add/remove neighbours
        (:cite:p:`LHRMM10`, :cite:p:`NTZ13`); see :meth:`count_sensitivity` for replace-one.

        Returns
        -------
        float
            The largest column l2 norm.
        """
        return self.column_norm(2)

    def _kind(self) -> str:
        return "implicit" if self.is_implicit else "sparse" if self.is_sparse else "dense"

    def __repr__(self) -> str:
        k, m = self._shape
        return f"Workload({self.name}, k={format_count(k)}, m={format_count(m)}, {self._kind()})"


def as_query_matrix(matrix: Any, name: str = "F", *, copy: bool = False) -> Matrix:
    """Validate a ``k x m`` query matrix: real, 2-d, non-empty and finite.

    The one check shared by :class:`Workload` and the solvers that accept a bare matrix.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        The query matrix (a pandas DataFrame gives its values, by position).
    name : str, default "F"
        The argument's name, used in error messages.
    copy : bool, default False
        Copy the entries even when no conversion is needed.

    Returns
    -------
    ndarray or scipy.sparse.csr_array
        The matrix as float64: sparse input becomes CSR, dense input an ndarray.

    Raises
    ------
    TypeError
        For complex, string, object or other non-real entries, or a :class:`Workload` (pass its
        :attr:`~Workload.matrix`).
    ValueError
        For a ragged nested list, a shape other than 2-d, an empty matrix, NaN or inf.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from projmech.workloads import as_query_matrix
    >>> as_query_matrix([[1, 0], [1, 1]])
    array([[1., 0.],
           [1., 1.]])
    >>> as_query_matrix(sp.eye(2)).format
    'csr'
    >>> as_query_matrix([[1, float("nan")]])
    Traceback (most recent call last):
    ...
    projmech.errors.ArgumentValueError: F: ...
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
    """Compute ``||A||_{1->p}``, the largest ``l_p`` norm of a column of a matrix.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        A real, finite matrix, dense or sparse.
    ord : {1, 2, inf}, default 2
        The order ``p``.

    Returns
    -------
    float
        The largest column norm.

    Raises
    ------
    TypeError, ValueError
        For an invalid matrix (see :func:`as_query_matrix`) or another order.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.workloads import column_norm
    >>> A = np.array([[3.0, 1.0], [4.0, 1.0]])
    >>> column_norm(A), column_norm(A, ord=1), column_norm(A, ord=np.inf)
    (5.0, 7.0, 4.0)
    """
    return float(np.max(matrix_column_norms(as_query_matrix(matrix, "matrix"), ord)))


def matrix_column_norms(matrix: Matrix, ord: float) -> np.ndarray:
    """The ``l_p`` norm of every column of a checked dense or sparse matrix.

    Scale-safe: in l2 each column is divided by its largest magnitude before its entries are
    squared, and the norm multiplied back (the squares of 1e-200 are 0 in float64, of 1e200
    inf: the sensitivity, and so the noise, came out 0 or inf). A sum of magnitudes (l1) needs
    no scaling: it underflows only where every term is 0 and overflows only where the norm
    itself does.
    """
    if issparse(matrix):
        csr = sp.csr_array(matrix)
        if not csr.has_canonical_format:  # duplicates of an entry add up: sum them first (in a copy)
            csr = csr.copy()
            csr.sum_duplicates()
        magnitudes = np.abs(csr.data)
        columns, m = csr.indices, csr.shape[1]
        if ord == 1:
            return np.bincount(columns, weights=magnitudes, minlength=m)
        peaks = np.zeros(m)
        np.maximum.at(peaks, columns, magnitudes)
        if ord != 2:
            return peaks
        scaled = magnitudes / np.where(peaks > 0, peaks, 1.0)[columns]  # a column of stored zeros has peak 0
        return peaks * np.sqrt(np.bincount(columns, weights=scaled * scaled, minlength=m))
    if ord == 2:
        return root_sum_squares(matrix)
    dense = np.abs(matrix)
    return dense.sum(axis=0) if ord == 1 else dense.max(axis=0)


def root_sum_squares(parts: Any) -> np.ndarray:
    """``sqrt(sum of squares)`` along the first axis, scale-safely: the l2 norms of the columns
    of a matrix, or of the entries at each position of a sequence of arrays (the column norms
    of a stack's parts). Each position is divided by its largest magnitude before squaring and
    the result multiplied back, so that neither 1e-200 (whose square is 0) nor 1e200 (inf) is
    lost."""
    magnitudes = np.abs(np.asarray(parts, dtype=float))  # a new array: scaled and squared in place
    peaks = magnitudes.max(axis=0)
    magnitudes /= np.where(peaks > 0, peaks, 1.0)
    np.square(magnitudes, out=magnitudes)
    return peaks * np.sqrt(magnitudes.sum(axis=0))


def check_matrix_entries(argument: str, builder: str, stored: int, k: int, m: int, max_entries: int, *,
                         implicit: bool = False) -> None:
    """Refuse an explicit matrix of ``stored`` entries above ``max_entries``, before allocating
    it; ``argument`` asked for the size, ``implicit``: the builder offers ``implicit=True``,
    which the message then suggests."""
    alternative = "; or pass implicit=True, which never builds the matrix" if implicit else ""
    check_entries(argument, stored, max_entries, f"{builder}: the explicit matrix (k={k:,}, m={m:,})",
                  hint=f" (raise max_entries if you have the memory: about 8-16 bytes per entry){alternative}")


def check_labels(labels: Any, k: int) -> tuple[str, ...]:
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        # A str would be split into one label per character.
        raise TypeError(f"labels: expected a sequence of {k} str, got a {type(labels).__name__}")
    labels = tuple(labels)
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"labels: every label must be a str, got {label!r}")
    if len(labels) != k:
        raise ValueError(f"labels: expected {k} labels (one per query), got {len(labels)}")
    return labels


class Kernels:
    """A workload's unchecked kernels, under public names: the one interface through which the
    solvers of other packages (bodies, factorizations, multiplicative weights) call them.

    A workload's public products (:meth:`Workload.answer`, :meth:`Workload.rmatvec`, ...) check
    their arguments; these do not: a solver loop calls them with float64 arrays it built, of the
    right length, so that no iteration re-validates what the boundary checked. Each type
    implements the private methods behind them.

    Parameters
    ----------
    workload : Workload
        The workload whose kernels these are.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> kernels = pm.identity(2).kernels
    >>> kernels.rmatvec(np.array([1.0, 2.0])), kernels.stored_entries()
    (array([1., 2.]), 2)
    """

    __slots__ = ("_workload",)

    def __init__(self, workload: Workload) -> None:
        self._workload = workload

    def matvec(self, vector: np.ndarray) -> np.ndarray:
        """``F @ vector`` for a float64 vector of length ``m``.

        Parameters
        ----------
        vector : numpy.ndarray
            Float64, length ``m``.

        Returns
        -------
        numpy.ndarray
            Length ``k``.
        """
        return self._workload._matvec(vector)

    def rmatvec(self, values: np.ndarray) -> np.ndarray:
        """``F.T @ values`` for a float64 vector of length ``k`` (needs ``has_adjoint``).

        Parameters
        ----------
        values : numpy.ndarray
            Float64, length ``k``.

        Returns
        -------
        numpy.ndarray
            Length ``m``.
        """
        return self._workload._rmatvec(values)

    def matmat(self, block: np.ndarray) -> np.ndarray:
        """``F @ block`` for an ``(m, r)`` float64 array.

        Parameters
        ----------
        block : numpy.ndarray
            Float64, shape ``(m, r)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(k, r)``.
        """
        return self._workload._matmat(block)

    def rmatmat(self, block: np.ndarray) -> np.ndarray:
        """``F.T @ block`` for a ``(k, r)`` float64 array (needs ``has_adjoint``).

        Parameters
        ----------
        block : numpy.ndarray
            Float64, shape ``(k, r)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(m, r)``.
        """
        return self._workload._rmatmat(block)

    def sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        """``F[:, index]`` as a ``scipy.sparse.csc_array`` for int64 universe indices.

        Parameters
        ----------
        index : numpy.ndarray
            Int64 universe indices.

        Returns
        -------
        scipy.sparse.csc_array
            Shape ``(k, len(index))``.
        """
        return self._workload._sparse_columns(index)

    def column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``F[:, left]^T F[:, right]`` for int64 universe indices.

        Parameters
        ----------
        left, right : numpy.ndarray
            Int64 universe indices.

        Returns
        -------
        numpy.ndarray
            Shape ``(len(left), len(right))``.
        """
        return self._workload._column_gram(left, right)

    def scaled_identity(self) -> float | None:
        """``c`` when F is ``c I``, else None.

        Returns
        -------
        float or None
            The scale of an identity workload.
        """
        return self._workload._scaled_identity()

    def stored_entries(self) -> int:
        """The entries an explicit form of F would store.

        Returns
        -------
        int
            ``k * m`` for a dense or implicit workload, the nonzeros for a sparse one.
        """
        return self._workload._stored_entries()
