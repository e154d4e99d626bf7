"""Workloads: a set of ``k`` linear queries over a universe of size ``m``, as a ``k x m`` matrix F.

Answers are fractions: for a normalized histogram ``h`` (seed 001, eq. 7) the true answers are
``F @ h`` (seed 001, eq. 10). Builders refuse, before allocating anything, a matrix that would
hold more than ``max_entries`` stored entries.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .data import DEFAULT_MAX_UNIVERSE, Dataset, histogram
from .domain import Domain, UnknownAttributeError
from . import operators
from .operators import _marginal_cells, _marginal_rows, _pair_cells
from .privacy import Neighbouring
from .validation import (
    DEFAULT_MAX_ENTRIES,
    FLAG,
    POSITIVE,
    POSITIVE_INT,
    InstanceOf,
    IsCallable,
    Options,
    OrNone,
    as_array,
    check_entries,
    check_real_array,
    check_real_dtype,
    check_real_vector,
    format_count,
    validate_params,
)

__all__ = [
    "Workload",
    "DEFAULT_MAX_ENTRIES",
    "as_query_matrix",
    "column_norm",
    "max_column_distance",
    "PAIRWISE_UNIVERSE",
    "identity",
    "prefix",
    "all_range",
    "repeated",
    "marginals",
    "from_predicates",
    "random_queries",
    "stack",
]

Matrix = np.ndarray | sp.sparray

Labels = Sequence[str] | Callable[[], Sequence[str]]


#: Largest universe whose counts :meth:`Workload.answer_counts` holds densely (8 MB of float64).
_DENSE_COUNTS_UNIVERSE = 2**20

#: The orders of ``||F||_{1->p}`` offered (True, which Python reads as 1, is refused).
_ORD = Options(1, 2, math.inf)

_GRAM = IsCallable("a callable returning F^T F")
_GENERATOR = InstanceOf(np.random.Generator, what="a numpy.random.Generator")

#: Largest universe for which :meth:`Workload.column_distance` computes the exact largest distance
#: between two columns from the ``m x m`` Gram matrix (128 MB at this size).
PAIRWISE_UNIVERSE = 4096


def max_column_distance(gram: np.ndarray, terms: int) -> float:
    """An upper bound, tight to rounding, on ``max over u != v of ||A_u - A_v||_2`` from the Gram
    matrix ``G = A^T A`` of a matrix A with ``terms`` rows.

    ``||A_u - A_v||^2 = G_uu + G_vv - 2 G_uv`` cancels: with ``|A_u| ~ 1e8`` and a distance of 1,
    float64 returns 0. Each Gram entry computed from ``terms`` products is within
    ``terms * eps * ||A_u|| ||A_v||`` of the truth, so the sum is within
    ``2 (terms + 4) eps (G_uu + G_vv)``; that margin is added before the maximum, making the
    result an upper bound whatever the rounding. Computed in row blocks, so that no second
    ``m x m`` array is built; 0 for a single column.
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


class Workload:
    """A ``k x m`` query matrix F with one label per query.

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
    """

    @validate_params(domain=OrNone(InstanceOf(Domain, what="a Domain")), name=OrNone(InstanceOf(str)),
                     gram=OrNone(_GRAM))
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
        self._setup(matrix.shape, labels, domain, name, gram)
        self._matrix: Matrix | None = matrix
        # An implicit workload's callbacks (see implicit()): F @ v, F.T @ u, F[:, indices].
        self._product: Callable[[np.ndarray], np.ndarray] | None = None
        self._adjoint: Callable[[np.ndarray], np.ndarray] | None = None
        self._column_block: Callable[[np.ndarray], np.ndarray] | None = None

    def _setup(self, shape: tuple[int, int], labels: Labels | None, domain: Domain | None,
               name: str | None, gram: Callable[[], np.ndarray] | None) -> None:
        """The state shared by both constructors, from arguments they have checked."""
        k, m = shape
        self._label_factory = None
        if callable(labels):
            self._label_factory, labels = labels, None
        elif labels is not None:
            labels = _check_labels(labels, k)
        if domain is not None and domain.size != m:
            raise ValueError(f"domain: its universe has {domain.size} elements but the workload has {m} columns")
        self._shape = (int(k), int(m))
        self._labels = labels
        self._gram = gram
        self._closed_column_norm: float | None = None
        self._marginal_way: int | None = None
        # (integer, nonnegative) entries: declared by implicit builders, read off an explicit matrix.
        self._entry_facts: tuple[bool, bool] | None = None
        self._column_distance: float | None = None
        self.domain = domain
        self.name = name or "workload"

    @classmethod
    @validate_params(matvec=IsCallable(), gram=_GRAM, domain=OrNone(InstanceOf(Domain, what="a Domain")),
                     name=OrNone(InstanceOf(str)), column_norm=OrNone(POSITIVE), rmatvec=OrNone(IsCallable()),
                     columns=OrNone(IsCallable()), integer=FLAG, nonnegative=FLAG)
    def implicit(
        cls,
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
    ) -> Workload:
        """A workload whose ``k x m`` matrix is never built.

        It answers through ``matvec`` (``F @ v`` for a length-``m`` vector) and exposes its Gram
        matrix ``F^T F`` (``m x m``), which is all that the factorization mechanism needs: the
        all-range workload over 4096 cells has 8.4 million queries but a 4096 x 4096 Gram matrix.
        Anything that needs F itself (:attr:`matrix`, projection onto ``K_Q``) raises.

        Parameters
        ----------
        shape : (int, int)
            ``(k, m)``; ``m`` may be far beyond memory (a Python int such as ``2**150``): nothing
            of size ``m`` is built unless :meth:`answer` or :meth:`gram` is called.
        matvec : callable
            ``F @ v`` for a dense length-``m`` vector.
        gram : callable
            Returns the ``m x m`` Gram matrix ``F^T F``.
        labels : sequence of str, or a callable returning one, optional
            A callable is called on the first access to :attr:`labels` (half a million labels
            need not exist until someone reads them).
        domain, name
            As for :class:`Workload`.
        column_norm : float, optional
            A closed form for ``||F||_{1->2}``, used by :meth:`column_norm` and
            :meth:`sensitivity` instead of the diagonal of the Gram matrix (which needs
            ``m x m`` entries).
        rmatvec : callable, optional
            ``F.T @ u`` for a length-``k`` vector; needed by :meth:`rmatvec` and so by the
            ``"fast"`` projection onto ``K_Q``.
        columns : callable, optional
            ``F[:, indices]`` as a dense ``(k, len(indices))`` array for an integer array of
            universe indices; needed by :meth:`columns` (the ``"fast"`` projection).
        integer, nonnegative : bool
            What the builder knows of F's entries (see :attr:`is_integer`, :attr:`is_nonnegative`);
            an implicit workload cannot be inspected, so the default claims nothing.
        """
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
            raise TypeError(f"shape: expected a pair (k, m) of ints, got {type(shape).__name__}")
        if len(shape) != 2:
            raise ValueError(f"shape: expected a pair (k, m), got {len(shape)} entries")
        k, m = (POSITIVE_INT.check("shape[0]", shape[0]), POSITIVE_INT.check("shape[1]", shape[1]))
        workload = cls.__new__(cls)
        workload._setup((k, m), labels, domain, name, gram)
        workload._matrix = None
        workload._product = matvec
        workload._adjoint = rmatvec
        workload._column_block = columns
        workload._closed_column_norm = column_norm
        workload._entry_facts = (integer, nonnegative)
        return workload

    @property
    def matrix(self) -> Matrix:
        """The query matrix F (ndarray or ``scipy.sparse.csr_array``).

        Raises
        ------
        ValueError
            For an implicit workload (see :meth:`implicit`), whose matrix is never built.
        """
        if self._matrix is None:
            k, m = self._shape
            raise ValueError(
                f"{self.name} is implicit (k={k:,}, m={m:,}): its query matrix is never built; "
                "it offers answer() and gram() only. Build it explicitly (implicit=False) where it fits in memory"
            )
        return self._matrix

    @property
    def is_implicit(self) -> bool:
        return self._matrix is None

    @property
    def marginal_way(self) -> int | None:
        """``way`` for the workload built by :func:`marginals` (every cell of every ``way``-way
        table of :attr:`domain`, in its order); ``None`` for any other workload, even one with
        the same rows (a stack, a hand-built matrix): the structure is known, not inferred."""
        return self._marginal_way

    @property
    def accepts_histograms(self) -> bool:
        """Whether :meth:`answer` can take a histogram: always for an explicit matrix; for an
        implicit workload only over a universe of at most ``DEFAULT_MAX_UNIVERSE`` elements,
        because its product needs the dense histogram (use :meth:`answer_data` beyond)."""
        return self._matrix is not None or self.universe_size <= DEFAULT_MAX_UNIVERSE

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per query; ``"q0", "q1", ...`` when none were given (built on first use).

        Raises
        ------
        ValueError
            For an implicit workload of more than ``DEFAULT_MAX_ENTRIES`` queries, whose labels
            would not fit in memory (``all_range(10**6, implicit=True)`` has 5·10^11).
        """
        if self._labels is None:
            check_entries("labels", self._shape[0], DEFAULT_MAX_ENTRIES,
                          f"the labels of {self.name} (k={format_count(self._shape[0])})", limit="DEFAULT_MAX_ENTRIES")
            if self._label_factory is not None:
                self._labels = _check_labels(self._label_factory(), self._shape[0])
            else:
                self._labels = tuple(f"q{i}" for i in range(self._shape[0]))
        return self._labels

    @property
    def shape(self) -> tuple[int, int]:
        """``(k, m)``: number of queries, universe size."""
        return self._shape

    @property
    def num_queries(self) -> int:
        return self._shape[0]

    @property
    def universe_size(self) -> int:
        return self._shape[1]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self._matrix)

    @validate_params(max_entries=POSITIVE_INT)
    def gram(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """The Gram matrix ``F^T F`` as a dense ``m x m`` ndarray (a closed form where the
        builder supplied one). The factorization norm depends on F only through it.

        Raises
        ------
        ValueError
            If ``m * m`` exceeds ``max_entries``.
        """
        m = self.universe_size
        check_entries("gram", m * m, max_entries, f"the Gram matrix F^T F of {self.name} (m={format_count(m)})",
                      hint=" (raise max_entries if you have the memory: 8 bytes per entry)")
        if self._gram is not None:
            gram = check_real_array("gram", self._gram())
            if gram.shape != (m, m):
                raise ValueError(f"gram: the closed form returned shape {gram.shape}, expected ({m}, {m})")
            return gram
        product = self.matrix.T @ self.matrix
        return product.toarray() if sp.issparse(product) else np.asarray(product)

    @validate_params(max_entries=POSITIVE_INT)
    def toarray(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """F as a dense ndarray (a copy); refused above ``max_entries`` entries (a sparse
        ``identity(10**7)`` holds 10^7 entries, its dense form 10^14)."""
        matrix = self.matrix
        k, m = self._shape
        check_entries("max_entries", k * m, max_entries, f"the dense matrix of {self.name} (k={k:,}, m={m:,})")
        return matrix.toarray() if self.is_sparse else matrix.copy()

    def answer(self, histogram: Any) -> np.ndarray:
        """The answers ``F @ h`` to a (dense or sparse) histogram of length ``m``.

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
        if self._matrix is None:
            k = self._shape[0]
            check_entries("histogram", k, DEFAULT_MAX_ENTRIES,
                          f"the answers of {self.name} to it (k={format_count(k)})", limit="DEFAULT_MAX_ENTRIES")
        if sp.issparse(histogram):
            if histogram.shape not in ((1, m), (m, 1)):
                raise ValueError(f"histogram: expected {m} entries, got sparse shape {histogram.shape}")
            check_real_dtype("histogram", histogram.dtype)
            if self._matrix is None:  # an implicit product takes dense vectors
                return self.answer(histogram.toarray().ravel())
            vector = sp.csc_array(histogram.reshape(m, 1), dtype=float)
            check_real_array("histogram", vector.data)
            product = self._matrix @ vector  # sparse for a sparse F, an ndarray for a dense F
            if sp.issparse(product):
                product = product.toarray()
            return np.asarray(product).ravel()
        return self._matvec(check_real_vector("histogram", histogram, m))

    # The unchecked kernels: solver loops call them with vectors they built themselves, so that
    # each iteration does not re-validate what the public boundary checked once.

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        """``F @ vector`` for a float64 vector of length ``m``, unchecked (see :meth:`answer`;
        for an implicit workload the universe must allow a dense vector,
        :attr:`accepts_histograms`)."""
        if self._matrix is None:
            return self._implicit_result("matvec", self._product(vector), self._shape[0])
        return np.asarray(self._matrix @ vector).ravel()

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        """``F.T @ values`` for a float64 vector of length ``k``, unchecked (see :meth:`rmatvec`;
        needs :attr:`has_adjoint`)."""
        if self._matrix is None:
            return self._implicit_result("rmatvec", self._adjoint(values), self._shape[1])
        return np.asarray(self._matrix.T @ values).ravel()

    def _columns(self, index: np.ndarray) -> np.ndarray:
        """``F[:, index]`` as a dense ``(k, len(index))`` array for an int64 array of universe
        indices, unchecked (see :meth:`columns`; needs :attr:`has_adjoint`)."""
        if self._matrix is None:
            return np.asarray(self._column_block(index), dtype=float).reshape(self._shape[0], index.size)
        block = self._matrix[:, index]
        return block.toarray() if sp.issparse(block) else np.array(block, dtype=float)

    def _implicit_result(self, callback: str, result: Any, length: int) -> np.ndarray:
        """The output of a builder's callback, checked: a wrong one is the builder's bug, and is
        reported as such rather than passed on to the caller's arithmetic."""
        result = check_real_array(f"{callback} of {self.name}", result, finite=False).ravel()
        if result.shape != (length,):
            raise ValueError(f"{callback} of {self.name}: returned {result.size} entries, expected {length}")
        return result

    def matvec(self, vector: Any) -> np.ndarray:
        """``F @ vector`` for a length-``m`` vector: the same product as :meth:`answer`, under the
        name :class:`scipy.sparse.linalg.LinearOperator` uses."""
        return self.answer(vector)

    @property
    def has_adjoint(self) -> bool:
        """Whether :meth:`rmatvec` and :meth:`columns` are available: always for an explicit
        matrix and for :func:`marginals`; for :meth:`implicit` when the builder gave both."""
        return self._matrix is not None or (self._adjoint is not None and self._column_block is not None)

    def rmatvec(self, values: Any) -> np.ndarray:
        """``F.T @ values`` for a length-``k`` vector: at each universe element, the values of the
        queries weighted by that element's entries (the gradient of ``(1/2)||F w - y||^2`` is
        ``F.T @ (F w - y)``).

        Raises
        ------
        ValueError
            On a wrong length or non-finite entries; for an implicit workload without an
            adjoint (see :meth:`implicit`) or over a universe too large for a dense vector.
        """
        k, m = self._shape
        vector = check_real_vector("values", values, k)
        if self._matrix is None:
            self._require_adjoint("rmatvec")
            if m > DEFAULT_MAX_UNIVERSE:
                raise ValueError(
                    f"values: F.T @ values of {self.name} has {format_count(m)} entries, above "
                    f"DEFAULT_MAX_UNIVERSE={DEFAULT_MAX_UNIVERSE:.0e}; it cannot be materialized"
                )
        return self._rmatvec(vector)

    def columns(self, indices: Any) -> np.ndarray:
        """``F[:, indices]`` as a dense ``(k, len(indices))`` ndarray, for integer universe indices;
        refused above ``DEFAULT_MAX_ENTRIES`` entries."""
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
        """F as a :class:`scipy.sparse.linalg.LinearOperator` (``matvec`` and ``rmatvec``)."""
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

    def check_data(self, data: Dataset) -> None:
        """Raise unless ``data``'s rows index this workload's universe (same domain, if the
        workload has one; same universe size in any case)."""
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
        """The counts ``F c`` on a data set's records, ``c`` its histogram of counts.

        Marginal workloads (:attr:`marginal_way`) count the cells directly from the records and
        never index the universe, so ``d = 150`` binary attributes (``2^150`` elements) work;
        all 2-way tables come from one Gram matrix of the rows' indicators (0.1 s at ``d = 150``,
        0.4 s at ``d = 500`` for 50,000 rows). Other workloads answer the sparse histogram of
        counts. For an integer workload (:attr:`is_integer`) the counts are exact integers.
        """
        self.check_data(data)
        if self._marginal_way is not None:
            return _marginal_counts(data.records, data.domain.sizes, self._marginal_way)
        if self._matrix is not None and self.universe_size <= _DENSE_COUNTS_UNIVERSE:
            # A dense count vector: far cheaper than building a sparse histogram for small universes.
            counts = np.bincount(data.domain.index(data.records), minlength=self.universe_size).astype(float)
            return np.asarray(self._matrix @ counts, dtype=float).ravel()
        return self.answer(histogram(data, sparse=True, normalize=False))

    def answer_data(self, data: Dataset) -> np.ndarray:
        """The answers on a data set's records, as fractions of its ``n``: :meth:`answer_counts`
        divided by ``n`` (``F @ histogram(data)``)."""
        counts = self.answer_counts(data)
        if data.n == 0:
            raise ValueError("data: the data set has no rows, so its answers as fractions of n are undefined "
                             "(answer_counts gives its counts, all 0)")
        return counts / data.n

    def _facts(self) -> tuple[bool, bool]:
        if self._entry_facts is None:
            matrix = self._matrix
            values = matrix.data if sp.issparse(matrix) else np.asarray(matrix)
            self._entry_facts = (bool(np.all(values == np.round(values))), bool(values.size == 0 or values.min() >= 0))
        return self._entry_facts

    def column_distance(self) -> float | None:
        """``max over u != v of ||F_u - F_v||_2`` (to rounding, from above): the l2 sensitivity of
        the counts ``F c`` under replace-one neighbours (one row moves from element ``u`` to
        ``v``), by :func:`max_column_distance`; ``None`` above :data:`PAIRWISE_UNIVERSE`
        elements, where the mechanisms use the bound of
        :meth:`~projmech.privacy.Neighbouring.count_sensitivity` instead.

        An explicit matrix's Gram matrix is computed from the matrix itself here, never taken
        from a ``gram=`` closed form: a wrong closed form must not lower the noise. An implicit
        workload is defined by its products and Gram matrix, which it is trusted to give.
        """
        if self.universe_size > PAIRWISE_UNIVERSE:
            return None
        if self._column_distance is None:
            if self._matrix is not None:
                product = self._matrix.T @ self._matrix
                gram = product.toarray() if sp.issparse(product) else np.asarray(product)
            else:
                gram = self.gram()
            self._column_distance = max_column_distance(gram, self.num_queries)
        return self._column_distance

    def count_sensitivity(self, neighbouring: Neighbouring | str, ord: float = 2) -> float:
        """The l_p sensitivity (``ord`` 1 or 2) of the counts ``F c`` under ``neighbouring``: the
        one computation behind every mechanism's noise and every planning figure
        (:meth:`projmech.privacy.Neighbouring.count_sensitivity` with this workload's column norm,
        sign and, under replace-one in l2, :meth:`column_distance`)."""
        relation = Neighbouring.parse(neighbouring)
        exact = self.column_distance() if relation is Neighbouring.REPLACE_ONE and ord == 2 else None
        return relation.count_sensitivity(self.column_norm(ord), ord, nonnegative=self.is_nonnegative,
                                          column_distance=exact)

    @property
    def is_integer(self) -> bool:
        """Whether every entry of F is an integer, so that the counts ``F c`` are integers and the
        mechanisms can add exact discrete noise (for an implicit workload: its builder's claim)."""
        return self._facts()[0]

    @property
    def is_nonnegative(self) -> bool:
        """Whether F has no negative entry, which makes the l2 sensitivity of its counts under
        replace-one ``sqrt(2) ||F||_{1->2}`` instead of ``2 ||F||_{1->2}`` (for an implicit
        workload: its builder's claim)."""
        return self._facts()[1]

    @validate_params(ord=_ORD)
    def column_norm(self, ord: float = 2) -> float:
        """``||F||_{1->p}``: the largest ``l_p`` norm of a column (``ord`` 1, 2 or ``inf``).

        An implicit workload offers ``ord=2`` only: its closed form where the builder gave one
        (see :meth:`implicit`), else from the diagonal of its Gram matrix.
        """
        if self._matrix is None:
            if ord != 2:
                raise ValueError(f"ord: an implicit workload offers only the 1->2 norm (ord=2), got {ord!r}")
            if self._closed_column_norm is not None:
                return self._closed_column_norm
            return float(np.sqrt(np.max(np.diag(self.gram()))))
        return _column_norm(self._matrix, ord)

    def sensitivity(self) -> float:
        """``||F||_{1->2}``, the largest column l2 norm (seed 001, eq. 16): the l2 sensitivity of
        the counts ``F c`` under add/remove neighbours (see
        :meth:`projmech.privacy.Neighbouring.count_sensitivity` for replace-one)."""
        return self.column_norm(2)

    def __repr__(self) -> str:
        kind = "implicit" if self.is_implicit else "sparse" if self.is_sparse else "dense"
        return f"Workload({self.name}, k={self.num_queries}, m={self.universe_size}, {kind})"


def as_query_matrix(matrix: Any, name: str = "F", *, copy: bool = False) -> Matrix:
    """Validate a ``k x m`` query matrix: real, 2-d, non-empty, finite; sparse input becomes
    CSR, dense input a float ndarray (a pandas DataFrame gives its values, by position).

    The one check shared by :class:`Workload` and the solvers that accept a bare matrix.

    Raises
    ------
    TypeError
        For complex, string, object or other non-real entries.
    ValueError
        For a ragged nested list, a shape other than 2-d, an empty matrix, NaN or inf.
    """
    if isinstance(matrix, Workload):
        raise TypeError(f"{name}: expected a matrix, got a Workload (pass its .matrix)")
    if sp.issparse(matrix):
        # Before the cast: a complex sparse matrix would lose its imaginary part in it.
        check_real_dtype(name, matrix.dtype)
        matrix = sp.csr_array(matrix, dtype=float, copy=copy)
        check_real_array(name, matrix.data)
    else:
        matrix = check_real_array(name, matrix, finite=False, copy=copy)
    if matrix.ndim != 2:
        raise ValueError(f"{name}: expected a 2-d (k, m) matrix, got shape {matrix.shape}")
    if 0 in matrix.shape:
        raise ValueError(f"{name}: needs at least one query and one universe element, got shape {matrix.shape}")
    if not sp.issparse(matrix):
        check_real_array(name, matrix)  # NaN and inf, reported after the shape
    return matrix


@validate_params(ord=_ORD)
def column_norm(matrix: Matrix, ord: float = 2) -> float:
    """``||A||_{1->p}``, the largest ``l_p`` norm of a column of a dense or sparse matrix
    (``ord`` 1, 2 or ``inf``)."""
    return _column_norm(as_query_matrix(matrix, "matrix"), ord)


def _column_norm(matrix: Matrix, ord: float) -> float:
    if ord == 2:
        squares = matrix.multiply(matrix) if sp.issparse(matrix) else matrix * matrix
        return float(np.sqrt(np.asarray(squares.sum(axis=0)).max()))
    if ord == 1:
        return float(np.asarray(abs(matrix).sum(axis=0)).max())
    return float(abs(matrix).max())  # ord = inf


def _check_entries(argument: str, builder: str, stored: int, k: int, m: int, max_entries: int, *,
                   implicit: bool = False) -> None:
    """Refuse an explicit matrix of ``stored`` entries above ``max_entries``, before allocating
    it; ``argument`` asked for the size, ``implicit``: the builder offers ``implicit=True``,
    which the message then suggests."""
    alternative = "; or pass implicit=True, which never builds the matrix" if implicit else ""
    check_entries(argument, stored, max_entries,
                  f"{builder}: the explicit matrix (k={k:,}, m={m:,})",
                  hint=f" (raise max_entries if you have the memory: about 8-16 bytes per entry){alternative}")


def _check_labels(labels: Any, k: int) -> tuple[str, ...]:
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


@validate_params(m=POSITIVE_INT, max_entries=POSITIVE_INT)
def identity(m: int, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The ``m`` point queries ``h[u]`` (F = I)."""
    _check_entries("m", "identity", m, m, m, max_entries)
    return Workload(sp.eye_array(m, format="csr"), [f"x={u}" for u in range(m)], name=f"identity({m})")


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
        return Workload.implicit((m, m), np.cumsum, gram, name=f"prefix({m})", integer=True, nonnegative=True)
    _check_entries("m", "prefix", m * m, m, m, max_entries, implicit=True)
    return Workload(np.tril(np.ones((m, m))), [f"x<={t}" for t in range(m)], name=f"prefix({m})", gram=gram)


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

        return Workload.implicit((k, m), matvec, gram, name=f"all_range({m})", integer=True, nonnegative=True)
    _check_entries("m", "all_range", k * m, k, m, max_entries, implicit=True)
    lows, highs = np.triu_indices(m)
    columns = np.arange(m)
    matrix = ((columns >= lows[:, None]) & (columns <= highs[:, None])).astype(float)
    labels = [f"{a}<=x<={b}" for a, b in zip(lows, highs)]
    return Workload(matrix, labels, name=f"all_range({m})", gram=gram)


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
        check_real_dtype("query", query.dtype)
        query = query.toarray() if query.shape[0] == 1 else query
    row = check_real_array("query", query)
    # A matrix of several rows would be flattened into one long query by ravel().
    if row.ndim == 2 and row.shape[0] == 1:
        row = row[0]
    if row.ndim != 1 or row.size == 0:
        raise ValueError(f"query: expected one non-empty row of m values, got shape {row.shape}")
    _check_entries("k", "repeated", k * row.size, k, row.size, max_entries)
    return Workload(np.tile(row, (k, 1)), [f"copy{i}" for i in range(k)], name=f"repeated(k={k})")


@validate_params(domain=InstanceOf(Domain, what="a Domain"), way=POSITIVE_INT, max_entries=POSITIVE_INT,
                 implicit=FLAG)
def marginals(domain: Domain, way: int, *, max_entries: int = DEFAULT_MAX_ENTRIES,
              implicit: bool = False) -> Workload:
    """Every cell of every ``way``-way marginal table of ``domain``.

    Rows are ordered by attribute subset (lexicographic in attribute position), then by cell
    (row-major within the subset's table). On ``{0,1}^d`` these are exactly the seed's
    ``C(d, way) * 2^way`` conjunction queries (seed 000, Definition 9). F is sparse: each
    universe element falls in exactly one cell of each table, so ``||F||_{1->2} = sqrt(C(d, way))``.

    Parameters
    ----------
    domain : Domain
    way : int
        Between 1 and the number of attributes.
    max_entries : int
        Cap on the stored entries of the explicit matrix (``m * C(d, way)``).
    implicit : bool
        Never build the ``k x m`` matrix (see :meth:`Workload.implicit`): answers to a histogram
        by summing its tensor over the other attributes, to records by counting
        (:meth:`Workload.answer_data`), the closed-form Gram matrix and sensitivity, labels on
        first use. The universe may then be astronomically large (``2^150``), as long as
        nothing asks for a histogram over it.

    The workload's :attr:`~Workload.marginal_way` is ``way``.
    """
    d = len(domain)
    if way > d:
        raise ValueError(f"way: must be at most the number of attributes ({d}), got {way}")
    m, sizes = domain.size, domain.sizes
    name = f"marginals(way={way})"
    tables = math.comb(d, way)
    k = _marginal_cells(sizes, way)  # total cells, without enumerating the subsets

    def gram() -> np.ndarray:
        # Two elements share a cell of subset S's table iff they agree on every attribute of S,
        # so they share C(a, way) cells, a = the number of attributes on which they agree.
        codes = np.unravel_index(np.arange(m, dtype=np.int64), sizes)
        agree = sum((column[:, None] == column[None, :]).astype(np.int64) for column in codes)
        return np.array([math.comb(a, way) for a in range(d + 1)], dtype=float)[agree]

    if implicit:
        workload = Workload.implicit(
            (k, m), lambda vector: operators._matvec(vector, sizes, way), gram,
            labels=lambda: _marginal_labels(domain, way), domain=domain, name=name,
            column_norm=math.sqrt(tables),
            rmatvec=lambda values: operators._rmatvec(values, sizes, way),
            columns=lambda indices: operators._columns(indices, sizes, way, k),
            integer=True, nonnegative=True,
        )
    else:
        _check_entries("domain", name, m * tables, k, m, max_entries, implicit=True)
        codes = np.unravel_index(np.arange(m, dtype=np.int64), sizes)
        row_index = _marginal_rows(codes, sizes, way).ravel()
        column_index = np.tile(np.arange(m, dtype=np.int64), tables)
        matrix = sp.csr_array((np.ones(row_index.size), (row_index, column_index)), shape=(k, m))
        workload = Workload(matrix, _marginal_labels(domain, way), domain=domain, name=name, gram=gram)
    workload._marginal_way = way
    return workload


def _marginal_labels(domain: Domain, way: int) -> list[str]:
    terms = [[f"{name}={value}" for value in range(size)] for name, size in zip(domain.attributes, domain.sizes)]
    return [
        " & ".join(cell)
        for subset in itertools.combinations(range(len(terms)), way)
        for cell in itertools.product(*(terms[i] for i in subset))
    ]


#: Rows per block of indicators in :func:`_pair_counts`, times its width (float32 cells): 16 MB
#: blocks of at most 2^22 rows, so float32 sums of 0/1 within a block are exact (below 2^24).
_BLOCK_ENTRIES = 2**22


def _marginal_counts(records: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    """The cell counts of every ``way``-way table of ``records`` (an ``(n, d)`` code matrix), in
    the layout of :func:`marginals`; never indexes the universe.

    Memory: the ``k`` counts (refused above ``DEFAULT_MAX_ENTRIES``), and for the 2-way route
    its ``sum(sizes)``-square moment matrix; where that is larger than the counts (few attributes
    of many values), the cells are counted per block of rows instead.
    """
    k = _marginal_cells(sizes, way)
    check_entries("data", k, DEFAULT_MAX_ENTRIES, f"the {way}-way marginal counts (k={format_count(k)})",
                  limit="DEFAULT_MAX_ENTRIES")
    # The 2-way route holds a few sum(sizes)-square matrices: fine beside k counts for many small
    # attributes (d = 150 binary: 9e4 entries for 44,700 counts), not for few large ones.
    if way == 2 and sum(sizes) ** 2 <= min(max(4 * k, _BLOCK_ENTRIES), DEFAULT_MAX_ENTRIES):
        return _pair_counts(records, sizes)
    counts = np.zeros(k)
    # The cell indices take C(d, way) entries per row: count them a block of rows at a time, each
    # block at least as large as the counts, so that bincount's pass over them is amortized.
    block = max(1, max(_BLOCK_ENTRIES, k) // math.comb(len(sizes), way))
    for start in range(0, records.shape[0], block):
        rows = _marginal_rows(tuple(records[start:start + block].T), sizes, way)
        counts += np.bincount(rows.ravel(), minlength=k)
    return counts


def _pair_counts(records: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """All 2-way count tables at once from one Gram matrix of indicators.

    With ``Z`` the rows' one-hot indicators (``n x sum(sizes)``), the ``(a, b)`` block of
    ``Z^T Z`` is the count table of attributes ``a`` and ``b``. Since the indicator of value 0 is
    ``1 - sum_{v >= 1} z_{a,v}``, ``Z = U T^T`` with ``U = (1, indicators of the values >= 1)``,
    so ``Z^T Z = T (U^T U) T^T``: the Gram matrix over the rows is formed on ``1 + sum(sizes - 1)``
    columns (``d + 1`` for binary data instead of ``2d``, a quarter of the flops).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    d, n = sizes.size, records.shape[0]
    reduced = 1 + np.concatenate([[0], np.cumsum(sizes - 1)[:-1]])  # column of (a, 1) in U
    width = 1 + int((sizes - 1).sum())
    # Dense BLAS on blocks of rows: U has about n*d ones but U^T U is dense, so a sparse product
    # costs n*d^2 scalar operations (tens of seconds at d = 500, n = 50,000) where BLAS takes < 1 s.
    block = max(1, _BLOCK_ENTRIES // width)
    moments = np.zeros((width, width))
    for start in range(0, n, block):
        chunk = records[start:start + block]
        indicators = np.zeros((chunk.shape[0], width), dtype=np.float32)
        # A value-0 code sets column 0, which holds ones anyway: one scatter, no mask of rows.
        np.put_along_axis(indicators, np.where(chunk > 0, reduced + chunk - 1, 0), 1.0, axis=1)
        indicators[:, 0] = 1.0
        moments += indicators.T @ indicators
    # T maps U's columns to Z's: value v >= 1 of a is its own column; value 0 is 1 - the others.
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    attribute = np.repeat(np.arange(d), sizes - 1)  # one entry per (a, v >= 1)
    value = np.arange(attribute.size) - np.repeat(reduced - 1, sizes - 1) + 1
    t_rows = np.concatenate([offsets, offsets[attribute] + value, offsets[attribute]])
    t_columns = np.concatenate([np.zeros(d, dtype=np.int64), reduced[attribute] + value - 1,
                                reduced[attribute] + value - 1])
    t_values = np.concatenate([np.ones(d), np.ones(attribute.size), -np.ones(attribute.size)])
    lift = sp.csr_array((t_values, (t_rows, t_columns)), shape=(int(sizes.sum()), width))
    full = lift @ (lift @ moments).T  # T M T^T, M symmetric
    table_rows, table_columns = _pair_cells(sizes)
    return full[table_rows, table_columns]


Predicate = Callable[[Mapping[str, np.ndarray]], Any]


class _UniverseCodes(Mapping):
    """``{attribute: codes}`` over the universe, row-major, each array built on first access
    (a predicate reading two attributes of twenty builds two arrays of ``m`` codes), all of
    them together at most ``max_entries`` entries."""

    def __init__(self, domain: Domain, max_entries: int) -> None:
        self._domain = domain
        self._max_entries = max_entries
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            position = self._domain.position(name)  # UnknownAttributeError names the attributes
            m = self._domain.size
            check_entries("domain", (len(self._arrays) + 1) * m, self._max_entries,
                          f"the codes of {len(self._arrays) + 1} attributes over {format_count(m)} elements",
                          hint=" (raise max_entries if you have the memory: 8 bytes per entry)")
            stride = math.prod(self._domain.sizes[position + 1:])
            universe = np.arange(self._domain.size, dtype=np.int64)
            codes = (universe // stride) % self._domain.sizes[position]
            codes.flags.writeable = False  # shared by every predicate
            self._arrays[name] = codes
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._domain.attributes)

    def __len__(self) -> int:
        return len(self._domain)


@validate_params(domain=InstanceOf(Domain, what="a Domain"), max_entries=POSITIVE_INT)
def from_predicates(
    domain: Domain,
    predicates: Mapping[str, Predicate] | Sequence[Predicate],
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Workload:
    """Queries given as vectorized predicates over the universe.

    Each predicate receives a mapping ``{attribute: codes}`` of arrays covering every universe
    element and returns, per element, a value in ``[0, 1]`` (booleans count as 0/1), e.g.
    ``lambda x: (x["age"] >= 3) & (x["sex"] == 1)``; a scalar is the same value everywhere.

    Parameters
    ----------
    domain : Domain
    predicates : mapping of str label to callable, or sequence of callables (labels ``q0, q1, ...``)
    max_entries : int
        Cap on the ``k x m`` matrix, and on the attribute codes handed to the predicates (``m``
        per attribute read).

    Raises
    ------
    TypeError
        For a ``domain`` that is not a Domain, a single callable or a str in place of the
        collection, a label that is not a str, a predicate that is not callable.
    ValueError
        Naming the predicate, if it reads an attribute the domain does not have, raises, or
        returns a wrong shape, non-numeric values, NaN, or values outside ``[0, 1]``; and for
        a matrix above ``max_entries`` (refused before anything is allocated).
    """
    if isinstance(predicates, Mapping):
        items = list(predicates.items())
        for label, _ in items:
            if not isinstance(label, str):
                raise TypeError(f"predicates: every label must be a str, got {label!r}")
    elif callable(predicates) or isinstance(predicates, (str, bytes)) or not isinstance(predicates, Iterable):
        raise TypeError(
            "predicates: expected a mapping of label to callable or a sequence of callables, "
            f"got {type(predicates).__name__}"
        )
    else:
        items = [(f"q{i}", fn) for i, fn in enumerate(predicates)]
    if not items:
        raise ValueError("predicates: need at least one predicate")
    for label, fn in items:
        if not callable(fn):
            raise TypeError(f"predicates: {label!r} is not callable")
    m = domain.size
    _check_entries("domain", "from_predicates", len(items) * m, len(items), m, max_entries)
    codes = _UniverseCodes(domain, max_entries)
    matrix = np.empty((len(items), m))
    for i, (label, fn) in enumerate(items):
        matrix[i] = _predicate_values(label, fn, codes, m)
    return Workload(matrix, [label for label, _ in items], domain=domain, name="predicates")


def _predicate_values(label: str, fn: Predicate, codes: _UniverseCodes, m: int) -> np.ndarray:
    """Call one predicate and check its values; every failure names the predicate."""
    where = f"predicates: {label!r}"
    try:
        result = fn(codes)
    except UnknownAttributeError as error:
        raise ValueError(f"{where} reads an attribute the domain does not have ({error})") from None
    except Exception as error:
        # The predicate's own bug (a KeyError on x.nope, "truth value of an array is ambiguous"
        # from `and`): reported as the caller's bad argument, with the original chained.
        raise ValueError(f"{where} raised {type(error).__name__}: {error}") from error
    if sp.issparse(result):
        raise ValueError(f"{where} returned a sparse {type(result).__name__}; expected a dense array of {m} values")
    try:
        values = check_real_array(where, result, finite=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{error} (it must return numbers or booleans)") from None
    if values.shape not in ((), (m,)):
        raise ValueError(f"{where} returned shape {values.shape}; expected one value per universe element ({m},)")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where} returned NaN or infinite values")
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError(f"{where} returned values in [{values.min()}, {values.max()}], outside [0, 1]")
    return np.broadcast_to(values, (m,))


@validate_params(k=POSITIVE_INT, m=POSITIVE_INT, rng=_GENERATOR, max_entries=POSITIVE_INT)
def random_queries(k: int, m: int, rng: np.random.Generator, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """``k`` random counting queries: each entry independently 0 or 1 with probability 1/2.

    ``rng`` must be a ``numpy.random.Generator`` (a seed is refused: the caller keeps the
    stream, so that successive workloads differ).
    """
    _check_entries("k", "random_queries", k * m, k, m, max_entries)
    matrix = rng.integers(0, 2, size=(k, m)).astype(float)
    return Workload(matrix, [f"random{i}" for i in range(k)], name=f"random_queries({k})")


def stack(workloads: Sequence[Workload]) -> Workload:
    """The union of workloads over the same universe, queries in the order given.

    The result has the workloads' common domain; ``None`` where some have none. Workloads with
    different domains are refused (their columns index different universes, even of one size).
    """
    if isinstance(workloads, Workload):
        raise TypeError("workloads: expected a sequence of Workload objects, got a single Workload")
    if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Iterable):
        raise TypeError(f"workloads: expected a sequence of Workload objects, got {type(workloads).__name__}")
    workloads = list(workloads)
    if not workloads:
        raise ValueError("workloads: need at least one workload to stack")
    for w in workloads:
        InstanceOf(Workload, what="Workload objects").check("workloads", w)
    for w in workloads:
        if w.is_implicit:
            raise ValueError(f"workloads: {w.name} is implicit; only explicit matrices can be stacked")
    m = workloads[0].universe_size
    for w in workloads[1:]:
        if w.universe_size != m:
            raise ValueError(f"workloads: universe sizes differ ({m} vs {w.universe_size})")
    known = {w.domain for w in workloads if w.domain is not None}
    if len(known) > 1:
        raise ValueError(f"workloads: their domains differ ({', '.join(sorted(map(repr, known)))})")
    if any(w.is_sparse for w in workloads):
        matrix = sp.vstack([sp.csr_array(w.matrix) for w in workloads], format="csr")
    else:
        matrix = np.vstack([w.matrix for w in workloads])
    domains = {w.domain for w in workloads}
    domain = domains.pop() if len(domains) == 1 else None
    labels = [label for w in workloads for label in w.labels]
    return Workload(matrix, labels, domain=domain, name=" + ".join(w.name for w in workloads))
