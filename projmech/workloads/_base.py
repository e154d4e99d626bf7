"""The :class:`Workload` base: ``k`` linear queries over a universe of ``m`` elements.

Each workload type implements a few kernels (products, columns, Gram matrix, column norms); what a
caller sees (validation, labels, answers, sensitivity) is written once here on top of them.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import QueryMatrix, issparse
from ..data import DEFAULT_MAX_UNIVERSE, Codes, Dataset, Domain, Encoding, histogram
from ..privacy import Neighbouring
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
from ._kernels import Kernels
from ._kronecker_gram import KroneckerGram
from ._matrices import check_labels, max_column_distance
from ._matrices import check_matrix_entries as check_matrix_entries  # marginal tables import it from here

__all__ = [
    "Workload",
    "Kernels",
    "DEFAULT_MAX_ENTRIES",
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


#: The concrete types ``Workload(...)`` and :meth:`Workload.implicit` build, registered by
#: :mod:`projmech.workloads._explicit` when the package loads, so that this module imports none of
#: its subclasses (the package's ``__init__`` imports both modules before anything can build one).
_CONCRETE: dict[str, Any] = {}


class _ConstructorSignature:
    """The signature ``inspect.signature(Workload)`` shows: that of :class:`MatrixWorkload`, which it builds."""

    def __get__(self, instance: object, owner: type) -> inspect.Signature | None:
        if instance is not None or owner is not Workload:
            return None
        return inspect.signature(_CONCRETE["matrix"])


class Workload:
    """A workload: ``k`` linear queries over a universe of ``m`` elements, a ``k x m`` matrix F.

    ``Workload(matrix, labels)`` builds an explicit :class:`MatrixWorkload`; :meth:`implicit`, :func:`kron`
    and :func:`stack` build ones whose matrix is never built. Query ``i`` on the normalized histogram
    ``h`` is ``(F @ h)[i]`` :cite:p:`LHRMM10`.

    Parameters
    ----------
    matrix : array_like or scipy.sparse matrix, shape (k, m)
        Row ``i`` holds query ``i``'s value on each universe element; finite. Sparse stays sparse (CSR).
    labels : sequence of str, optional
        One label per query; default ``"q0", "q1", ...``.
    domain : Domain, optional
        The universe the columns index (row-major order), of ``m`` elements.
    name : str, optional
        A short description, e.g. ``"marginals(way=2)"``.
    gram : callable, optional
        A closed form for the Gram matrix ``F^T F``, called with no arguments.

    Examples
    --------
    >>> pm.Workload([[1, 1, 0], [0, 1, 1]], ["left", "right"]).answer([0.5, 0.25, 0.25])
    array([0.75, 0.5 ])
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
        """Build a workload whose ``k x m`` matrix is never built (an :class:`ImplicitWorkload`).

        Parameters
        ----------
        shape : (int, int)
            ``(k, m)``.
        matvec : callable
            ``F @ v`` for a dense length-``m`` vector ``v``.
        gram : callable
            Called with no arguments, returns ``F^T F``.
        **options
            The keywords of :class:`ImplicitWorkload`.

        Returns
        -------
        ImplicitWorkload
        """
        workload: Workload = _CONCRETE["implicit"](shape, matvec, gram, **options)
        return workload

    @property
    def kernels(self) -> Kernels:
        """The workload's unchecked products (:class:`Kernels`), for solver loops that checked their vectors once."""
        return Kernels(self)

    # --- the kernels each type implements ------------------------------------------------------

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        """``F @ vector`` for a float64 vector of length ``m``, unchecked."""
        raise NotImplementedError

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        """``F.T @ values`` for a float64 vector of length ``k``, unchecked (needs :attr:`has_adjoint`)."""
        raise NotImplementedError

    def _columns(self, index: np.ndarray) -> np.ndarray:
        """``F[:, index]`` as a dense array for int64 universe indices, unchecked (needs :attr:`has_adjoint`)."""
        raise NotImplementedError

    def _sparse_columns(self, index: np.ndarray) -> sp.csc_array:
        """``F[:, index]`` as a ``scipy.sparse.csc_array``; from the dense columns unless stored sparsely."""
        return sp.csc_array(self._columns(index))

    def _column_gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``F[:, left]^T F[:, right]`` for int64 universe indices, from the columns unless a type has a closed form."""
        left_columns = self._columns(left)
        right_columns = left_columns if right is left else self._columns(right)
        return left_columns.T @ right_columns

    def _matmat(self, block: np.ndarray) -> np.ndarray:
        """``F @ block`` for an ``(m, r)`` float64 array, by columns unless a type has a faster route."""
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
        """Each query's label part on ``attribute`` inside a Kronecker product; empty for a total."""
        if self._term_maker is not None:
            return self._term_maker(attribute, encoding)
        return self.labels

    def _uniform_column_norm(self, ord: float) -> float | None:
        """The ``l_p`` norm every column shares, when the structure says so; else None."""
        return None

    def _scaled_identity(self) -> float | None:
        """``c`` when F is ``c I``; else None."""
        return None

    def _constant_row(self) -> float | None:
        """``c`` when F is the single query ``c 1^T`` (a total); else None."""
        return None

    def _stored_entries(self) -> int:
        """The entries an explicit form would store (``k * m`` for a dense or implicit one)."""
        if self.is_implicit:
            return self.num_queries * self.universe_size
        matrix = self.matrix
        return int(matrix.nnz) if issparse(matrix) else int(matrix.size)

    @property
    def marginal_way(self) -> int | None:
        """``way`` for the workload ``marginals(domain, way)`` builds; None for any other (known, not inferred)."""
        return None

    @property
    def has_adjoint(self) -> bool:
        """Whether :meth:`rmatvec` and :meth:`columns` are available."""
        return True

    @property
    def is_implicit(self) -> bool:
        """Whether :attr:`matrix` is never built."""
        return False

    @property
    def accepts_histograms(self) -> bool:
        """Whether :meth:`answer` takes a histogram: explicit, or at most ``DEFAULT_MAX_UNIVERSE`` elements."""
        return not self.is_implicit or self.universe_size <= DEFAULT_MAX_UNIVERSE

    @property
    def matrix(self) -> Matrix:
        """The query matrix F (ndarray or ``scipy.sparse.csr_array``); an implicit workload raises ValueError."""
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
        """One label per query, built on first use (refused above ``DEFAULT_MAX_ENTRIES`` queries)."""
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
        """Compute ``F^T F``, on which alone the factorization mechanism's error depends :cite:p:`ENU20`.

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            Refuse a Gram matrix of more entries.

        Returns
        -------
        ndarray, shape (m, m)
        """
        m = self.universe_size
        check_entries("gram", m * m, max_entries, f"the Gram matrix F^T F of {self.name} (m={format_count(m)})",
                      hint=" (raise max_entries if you have the memory: 8 bytes per entry)")
        return self._gram()

    def kronecker_gram(self) -> KroneckerGram:
        """Express ``F^T F`` as a sum of Kronecker products: one dense term unless the type has structure.

        Returns
        -------
        KroneckerGram
        """
        return KroneckerGram([(1.0, (self.gram(),))])

    @validate_params(max_entries=POSITIVE_INT)
    def toarray(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """Return F as a dense ndarray (a copy), refused above ``max_entries`` entries.

        Parameters
        ----------
        max_entries : int, default DEFAULT_MAX_ENTRIES
            The cap on ``k * m``.

        Returns
        -------
        ndarray, shape (k, m)
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
            A histogram over the universe (normalized for answers as fractions).

        Returns
        -------
        ndarray, shape (k,)
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
        """Compute ``F @ vector``: :meth:`answer` under SciPy's name.

        Parameters
        ----------
        vector : array_like, shape (m,)
            A real vector over the universe.

        Returns
        -------
        ndarray, shape (k,)
        """
        return self.answer(vector)

    def rmatvec(self, values: Any) -> np.ndarray:
        """Compute ``F.T @ values``, the adjoint product.

        Parameters
        ----------
        values : array_like, shape (k,)
            One real value per query.

        Returns
        -------
        ndarray, shape (m,)
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
        """Wrap F as a :class:`scipy.sparse.linalg.LinearOperator` (needs :attr:`has_adjoint`).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
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
        """Check that a data set's rows index this workload's universe (its domain, or ``m`` elements).

        Parameters
        ----------
        data : Dataset
            The records.
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
        """Answer the queries as counts on a data set's records (structured workloads count from group-by tables).

        Parameters
        ----------
        data : Dataset
            The records, over the workload's universe.

        Returns
        -------
        ndarray, shape (k,)
        """
        self.check_data(data)
        return self._answer_counts(data)

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        """:meth:`answer_counts` on a checked data set: dense counts for a small universe, else a sparse histogram."""
        if not self.is_implicit and self.universe_size <= DENSE_COUNTS_UNIVERSE:
            counts = data.table(range(len(data.domain))).ravel().astype(float)
            return self._matvec(counts)
        return self.answer(histogram(data, sparse=True, normalize=False))

    def answer_data(self, data: Dataset) -> np.ndarray:
        """Answer the queries as fractions of the data set's ``n`` rows: ``answer_counts / n``.

        Parameters
        ----------
        data : Dataset
            The records, over the workload's universe; at least one row.

        Returns
        -------
        ndarray, shape (k,)
        """
        counts = self.answer_counts(data)
        if data.n == 0:
            raise ValueError("data: the data set has no rows, so its answers as fractions of n are undefined "
                             "(answer_counts gives its counts, all 0)")
        return counts / data.n

    # --- norms and sensitivity -----------------------------------------------------------------

    def column_distance(self) -> float | None:
        """Compute ``max over u != v of ||F_u - F_v||_2``, the exact replace-one l2 sensitivity.

        Never from a ``gram=`` closed form, since sensitivity rests on it.

        Returns
        -------
        float or None
            None above :data:`PAIRWISE_UNIVERSE` elements.
        """
        if self.universe_size > PAIRWISE_UNIVERSE:
            return None
        if self._column_distance is None:
            gram, scale = self._scaled_trusted_gram()
            self._column_distance = scale * max_column_distance(gram, self.num_queries)
        return self._column_distance

    def _trusted_gram(self) -> np.ndarray:
        """The Gram matrix sensitivity may rest on (see :meth:`column_distance`)."""
        return self.gram()

    def _scaled_trusted_gram(self) -> tuple[np.ndarray, float]:
        """``(G, s)``: ``s^2 G`` the trusted Gram matrix, scaled against under- and overflow (1 for a closed form)."""
        return self._trusted_gram(), 1.0

    def _has_nonzero_entry(self) -> bool:
        """Whether some entry of F is not 0; assumed where a type cannot tell, so that a zero sensitivity is refused."""
        return True

    def count_sensitivity(self, neighbouring: Neighbouring | str, ord: float = 2) -> float:
        """Compute the ``l_p`` sensitivity of the counts ``F c`` under a neighbouring relation.

        The one computation behind every mechanism's noise (:doc:`/theory/workloads`); a nonzero F whose
        sensitivity underflows is refused.

        Parameters
        ----------
        neighbouring : Neighbouring or {"add-remove", "replace-one"}
            The neighbouring relation.
        ord : {1, 2}, default 2
            1 for the Laplace mechanism, 2 for the Gaussian.

        Returns
        -------
        float
            The sensitivity of the counts (divide by ``n`` for the answers as fractions).
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
        """Whether every entry of F is an integer, so that the counts are and exact discrete noise applies."""
        return self._facts()[0]

    @property
    def is_nonnegative(self) -> bool:
        """Whether F has no negative entry (replace-one l2 sensitivity at most ``sqrt(2) ||F||_{1->2}``)."""
        return self._facts()[1]

    @validate_params(ord=ORD)
    def column_norm(self, ord: float = 2) -> float:
        """Compute ``||F||_{1->p}``, the largest ``l_p`` norm of a column.

        Parameters
        ----------
        ord : {1, 2, inf}, default 2
            The order ``p`` (only 2 for an implicit workload).

        Returns
        -------
        float
        """
        return self._column_norm(ord)

    def sensitivity(self) -> float:
        """Compute ``||F||_{1->2}``, the l2 sensitivity of the counts under add/remove :cite:p:`LHRMM10`.

        Returns
        -------
        float
        """
        return self.column_norm(2)

    def _kind(self) -> str:
        return "implicit" if self.is_implicit else "sparse" if self.is_sparse else "dense"

    def __repr__(self) -> str:
        k, m = self._shape
        return f"Workload({self.name}, k={format_count(k)}, m={format_count(m)}, {self._kind()})"
