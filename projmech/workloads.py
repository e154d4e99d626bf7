"""Workloads: a set of ``k`` linear queries over a universe of size ``m``, as a ``k x m`` matrix F.

Answers are fractions: for a normalized histogram ``h`` (seed 001, eq. 7) the true answers are
``F @ h`` (seed 001, eq. 10). Builders refuse, before allocating anything, a matrix that would
hold more than ``max_entries`` stored entries.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .domain import Domain

__all__ = [
    "Workload",
    "DEFAULT_MAX_ENTRIES",
    "as_query_matrix",
    "column_norm",
    "identity",
    "prefix",
    "all_range",
    "repeated",
    "marginals",
    "from_predicates",
    "random_queries",
    "stack",
]

#: Default cap on the stored entries of an explicit workload matrix (dense: k*m; sparse: nnz).
DEFAULT_MAX_ENTRIES = 10**8

Matrix = np.ndarray | sp.sparray


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

    See Also
    --------
    Workload.implicit : a workload known only through its products and Gram matrix.
    """

    def __init__(
        self,
        matrix: Any,
        labels: Sequence[str] | None = None,
        domain: Domain | None = None,
        name: str | None = None,
        gram: Callable[[], np.ndarray] | None = None,
    ) -> None:
        matrix = as_query_matrix(matrix, "matrix", copy=True)
        self._setup(matrix.shape, labels, domain, name, gram)
        self._matrix: Matrix | None = matrix
        self._matvec: Callable[[np.ndarray], np.ndarray] | None = None

    def _setup(self, shape: tuple[int, int], labels: Sequence[str] | None, domain: Domain | None,
               name: str | None, gram: Callable[[], np.ndarray] | None) -> None:
        k, m = shape
        if labels is not None:
            labels = tuple(str(label) for label in labels)
            if len(labels) != k:
                raise ValueError(f"labels: expected {k} labels (one per query), got {len(labels)}")
        if domain is not None:
            if not isinstance(domain, Domain):
                raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
            if domain.size != m:
                raise ValueError(f"domain: its universe has {domain.size} elements but the workload has {m} columns")
        if gram is not None and not callable(gram):
            raise TypeError(f"gram: expected a callable returning F^T F, got {type(gram).__name__}")
        self._shape = (int(k), int(m))
        self._labels = labels
        self._gram = gram
        self.domain = domain
        self.name = name or "workload"

    @classmethod
    def implicit(
        cls,
        shape: tuple[int, int],
        matvec: Callable[[np.ndarray], np.ndarray],
        gram: Callable[[], np.ndarray],
        labels: Sequence[str] | None = None,
        domain: Domain | None = None,
        name: str | None = None,
    ) -> Workload:
        """A workload whose ``k x m`` matrix is never built.

        It answers through ``matvec`` (``F @ v`` for a length-``m`` vector) and exposes its Gram
        matrix ``F^T F`` (``m x m``), which is all that the factorization mechanism needs: the
        all-range workload over 4096 cells has 8.4 million queries but a 4096 x 4096 Gram matrix.
        Anything that needs F itself (:attr:`matrix`, projection onto ``K_Q``) raises.
        """
        if not callable(matvec):
            raise TypeError(f"matvec: expected a callable, got {type(matvec).__name__}")
        if not callable(gram):
            raise TypeError(f"gram: expected a callable returning F^T F, got {type(gram).__name__}")
        k, m = (check_positive_int("shape[0]", shape[0]), check_positive_int("shape[1]", shape[1]))
        workload = cls.__new__(cls)
        workload._setup((k, m), labels, domain, name, gram)
        workload._matrix = None
        workload._matvec = matvec
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
    def labels(self) -> tuple[str, ...]:
        """One label per query; ``"q0", "q1", ...`` when none were given (built on first use)."""
        if self._labels is None:
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

    def gram(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
        """The Gram matrix ``F^T F`` as a dense ``m x m`` ndarray (a closed form where the
        builder supplied one). The factorization norm depends on F only through it.

        Raises
        ------
        ValueError
            If ``m * m`` exceeds ``max_entries``.
        """
        m = self.universe_size
        _check_entries("gram", m * m, m, m, max_entries)
        if self._gram is not None:
            gram = np.asarray(self._gram(), dtype=float)
            if gram.shape != (m, m):
                raise ValueError(f"gram: the closed form returned shape {gram.shape}, expected ({m}, {m})")
            return gram
        product = self.matrix.T @ self.matrix
        return product.toarray() if sp.issparse(product) else np.asarray(product)

    def toarray(self) -> np.ndarray:
        """F as a dense ndarray (a copy)."""
        return self.matrix.toarray() if self.is_sparse else self.matrix.copy()

    def answer(self, histogram: Any) -> np.ndarray:
        """The answers ``F @ h`` to a (dense or sparse) histogram of length ``m``."""
        m = self.universe_size
        if sp.issparse(histogram):
            if histogram.shape not in ((1, m), (m, 1)):
                raise ValueError(f"histogram: expected {m} entries, got sparse shape {histogram.shape}")
            if self._matrix is None:  # an implicit product takes dense vectors
                return self.answer(histogram.toarray().ravel())
            vector = sp.csc_array(histogram.reshape(m, 1), dtype=float)
            if not np.all(np.isfinite(vector.data)):
                raise ValueError("histogram: contains NaN or infinite entries")
            product = self._matrix @ vector  # sparse for a sparse F, an ndarray for a dense F
            if sp.issparse(product):
                product = product.toarray()
            return np.asarray(product).ravel()
        vector = np.asarray(histogram, dtype=float)
        if vector.shape != (m,):
            raise ValueError(f"histogram: expected shape ({m},), got {vector.shape}")
        if not np.all(np.isfinite(vector)):
            raise ValueError("histogram: contains NaN or infinite entries")
        if self._matrix is None:
            return np.asarray(self._matvec(vector), dtype=float).ravel()
        return np.asarray(self._matrix @ vector).ravel()

    def column_norm(self, ord: float = 2) -> float:
        """``||F||_{1->p}``: the largest ``l_p`` norm of a column (``ord`` 1, 2 or ``inf``).

        An implicit workload offers ``ord=2`` only, from the diagonal of its Gram matrix.
        """
        if self._matrix is None:
            if ord != 2:
                raise ValueError(f"ord: an implicit workload offers only the 1->2 norm (ord=2), got {ord!r}")
            return float(np.sqrt(np.max(np.diag(self.gram()))))
        return column_norm(self._matrix, ord)

    def sensitivity(self) -> float:
        """``||F||_{1->2}``, the largest column l2 norm (seed 001, eq. 16).

        The l2 sensitivity of the answers under replace-one neighbours is ``(2/n)`` times this
        (see :class:`projmech.privacy.Neighbouring`).
        """
        return self.column_norm(2)

    def __repr__(self) -> str:
        kind = "implicit" if self.is_implicit else "sparse" if self.is_sparse else "dense"
        return f"Workload({self.name}, k={self.num_queries}, m={self.universe_size}, {kind})"


def as_query_matrix(matrix: Any, name: str = "F", copy: bool = False) -> Matrix:
    """Validate a ``k x m`` query matrix: float, 2-d, non-empty, finite; sparse input becomes CSR.

    The one check shared by :class:`Workload` and the solvers that accept a bare matrix.
    """
    if sp.issparse(matrix):
        matrix = sp.csr_array(matrix, dtype=float, copy=copy)
        values = matrix.data
    else:
        matrix = np.array(matrix, dtype=float) if copy else np.asarray(matrix, dtype=float)
        values = matrix
    if matrix.ndim != 2:
        raise ValueError(f"{name}: expected a 2-d (k, m) matrix, got shape {matrix.shape}")
    if 0 in matrix.shape:
        raise ValueError(f"{name}: needs at least one query and one universe element, got shape {matrix.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    return matrix


def column_norm(matrix: Matrix, ord: float = 2) -> float:
    """``||A||_{1->p}``, the largest ``l_p`` norm of a column of a dense or sparse matrix
    (``ord`` 1, 2 or ``inf``)."""
    if ord == 2:
        squares = matrix.multiply(matrix) if sp.issparse(matrix) else matrix * matrix
        return float(np.sqrt(np.asarray(squares.sum(axis=0)).max()))
    if ord == 1:
        return float(np.asarray(abs(matrix).sum(axis=0)).max())
    if ord == np.inf:
        return float(abs(matrix).max())
    raise ValueError(f"ord: expected 1, 2 or inf, got {ord!r}")


def _check_entries(builder: str, stored: int, k: int, m: int, max_entries: int) -> None:
    if stored > max_entries:
        raise ValueError(
            f"{builder}: the explicit matrix would hold {stored:.3e} entries (k={k:,}, m={m:,}), "
            f"above max_entries={max_entries:.1e}; refusing to allocate it (raise max_entries "
            "if you have the memory: about 8-16 bytes per entry)"
        )


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: must be at least 1, got {value}")
    return int(value)


def identity(m: int, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The ``m`` point queries ``h[u]`` (F = I)."""
    m = check_positive_int("m", m)
    _check_entries("identity", m, m, m, max_entries)
    return Workload(sp.eye_array(m, format="csr"), [f"x={u}" for u in range(m)], name=f"identity({m})")


def prefix(m: int, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """The ``m`` threshold (prefix) queries ``#{x <= t}/n`` for ``t = 0 .. m-1``.

    F is lower-triangular with ones; the seed's two-query example (seed 001, eq. 40) is the
    first two rows of ``prefix(3)`` (the last row, ``t = m-1``, is always 1). Its Gram matrix
    has the closed form ``(F^T F)[i, j] = m - max(i, j)``. With ``implicit=True`` the matrix is
    never built (answers are cumulative sums; see :meth:`Workload.implicit`).
    """
    m = check_positive_int("m", m)

    def gram() -> np.ndarray:
        cells = np.arange(m)
        return (m - np.maximum.outer(cells, cells)).astype(float)

    if implicit:
        return Workload.implicit((m, m), np.cumsum, gram, name=f"prefix({m})")
    _check_entries("prefix", m * m, m, m, max_entries)
    return Workload(np.tril(np.ones((m, m))), [f"x<={t}" for t in range(m)], name=f"prefix({m})", gram=gram)


def all_range(m: int, max_entries: int = DEFAULT_MAX_ENTRIES, implicit: bool = False) -> Workload:
    """All ``m(m+1)/2`` range queries ``#{a <= x <= b}/n`` for ``0 <= a <= b < m``.

    Queries are ordered by ``a``, then ``b``. Cells ``i <= j`` lie together in the
    ``(i + 1)(m - j)`` ranges with ``a <= i`` and ``b >= j``: that is the closed-form Gram matrix.
    With ``implicit=True`` the ``k x m`` matrix is never built (answers are differences of
    cumulative sums), so ``m = 4096`` (8.4 million queries) fits in memory.
    """
    m = check_positive_int("m", m)
    k = m * (m + 1) // 2

    def gram() -> np.ndarray:
        cells = np.arange(m)
        return ((np.minimum.outer(cells, cells) + 1) * (m - np.maximum.outer(cells, cells))).astype(float)

    if implicit:
        def matvec(vector: np.ndarray) -> np.ndarray:
            sums = np.concatenate([[0.0], np.cumsum(vector)])
            lows, highs = np.triu_indices(m)
            return sums[highs + 1] - sums[lows]

        return Workload.implicit((k, m), matvec, gram, name=f"all_range({m})")
    _check_entries("all_range", k * m, k, m, max_entries)
    lows, highs = np.triu_indices(m)
    columns = np.arange(m)
    matrix = ((columns >= lows[:, None]) & (columns <= highs[:, None])).astype(float)
    labels = [f"{a}<=x<={b}" for a, b in zip(lows, highs)]
    return Workload(matrix, labels, name=f"all_range({m})", gram=gram)


def repeated(query: Any, k: int, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """The same query asked ``k`` times (seed 001, eq. 18): a row vector stacked ``k`` times."""
    k = check_positive_int("k", k)
    if isinstance(query, Workload):
        if query.num_queries != 1:
            raise ValueError(f"query: expected a single query, got a workload of {query.num_queries}")
        query = query.toarray()
    row = np.asarray(query, dtype=float).ravel()
    _check_entries("repeated", k * row.size, k, row.size, max_entries)
    return Workload(np.tile(row, (k, 1)), [f"copy{i}" for i in range(k)], name=f"repeated(k={k})")


def marginals(domain: Domain, way: int, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """Every cell of every ``way``-way marginal table of ``domain``.

    Rows are ordered by attribute subset (lexicographic in attribute position), then by cell
    (row-major within the subset's table). On ``{0,1}^d`` these are exactly the seed's
    ``C(d, way) * 2^way`` conjunction queries (seed 000, Definition 9). F is sparse: each
    universe element falls in exactly one cell of each table, so ``||F||_{1->2} = sqrt(C(d, way))``.
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
    way = check_positive_int("way", way)
    d = len(domain)
    if way > d:
        raise ValueError(f"way: must be at most the number of attributes ({d}), got {way}")
    m = domain.size
    subsets = list(itertools.combinations(range(d), way))
    table_sizes = [math.prod(domain.sizes[i] for i in subset) for subset in subsets]
    k = sum(table_sizes)
    _check_entries(f"marginals(way={way})", m * len(subsets), k, m, max_entries)
    codes = np.unravel_index(np.arange(m, dtype=np.int64), domain.sizes)
    rows, labels = [], []
    offset = 0
    for subset, table_size in zip(subsets, table_sizes):
        sub_sizes = [domain.sizes[i] for i in subset]
        rows.append(offset + np.ravel_multi_index(tuple(codes[i] for i in subset), sub_sizes))
        for cell in itertools.product(*(range(s) for s in sub_sizes)):
            labels.append(" & ".join(f"{domain.attributes[i]}={v}" for i, v in zip(subset, cell)))
        offset += table_size
    row_index = np.concatenate(rows)
    column_index = np.tile(np.arange(m, dtype=np.int64), len(subsets))
    matrix = sp.csr_array((np.ones(row_index.size), (row_index, column_index)), shape=(k, m))

    def gram() -> np.ndarray:
        # Two elements share a cell of subset S's table iff they agree on every attribute of S,
        # so they share C(a, way) cells, a = the number of attributes on which they agree.
        agree = sum((column[:, None] == column[None, :]).astype(np.int64) for column in codes)
        return np.array([math.comb(a, way) for a in range(d + 1)], dtype=float)[agree]

    return Workload(matrix, labels, domain=domain, name=f"marginals(way={way})", gram=gram)


Predicate = Callable[[Mapping[str, np.ndarray]], Any]


def from_predicates(
    domain: Domain,
    predicates: Mapping[str, Predicate] | Sequence[Predicate],
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Workload:
    """Queries given as vectorized predicates over the universe.

    Each predicate receives a mapping ``{attribute: codes}`` of arrays covering every universe
    element and returns, per element, a value in ``[0, 1]`` (booleans count as 0/1), e.g.
    ``lambda x: (x["age"] >= 3) & (x["sex"] == 1)``.

    Parameters
    ----------
    domain : Domain
    predicates : mapping of label to callable, or sequence of callables (labels ``q0, q1, ...``)

    Raises
    ------
    ValueError
        If a predicate returns a wrong shape, NaN, or values outside ``[0, 1]``.
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
    if isinstance(predicates, Mapping):
        items = [(str(label), fn) for label, fn in predicates.items()]
    else:
        items = [(f"q{i}", fn) for i, fn in enumerate(predicates)]
    if not items:
        raise ValueError("predicates: need at least one predicate")
    m = domain.size
    _check_entries("from_predicates", len(items) * m, len(items), m, max_entries)
    codes = dict(zip(domain.attributes, np.unravel_index(np.arange(m, dtype=np.int64), domain.sizes)))
    matrix = np.empty((len(items), m))
    for i, (label, fn) in enumerate(items):
        if not callable(fn):
            raise TypeError(f"predicates: {label!r} is not callable")
        try:
            values = np.broadcast_to(np.asarray(fn(codes), dtype=float), (m,))
        except ValueError:
            shape = np.shape(fn(codes))
            raise ValueError(
                f"predicates: {label!r} returned shape {shape}; expected one value per universe element ({m},)"
            ) from None
        if not np.all(np.isfinite(values)):
            raise ValueError(f"predicates: {label!r} returned NaN or infinite values")
        if values.min() < 0 or values.max() > 1:
            raise ValueError(
                f"predicates: {label!r} returned values in [{values.min()}, {values.max()}], outside [0, 1]"
            )
        matrix[i] = values
    return Workload(matrix, [label for label, _ in items], domain=domain, name="predicates")


def random_queries(k: int, m: int, rng: np.random.Generator, max_entries: int = DEFAULT_MAX_ENTRIES) -> Workload:
    """``k`` random counting queries: each entry independently 0 or 1 with probability 1/2."""
    k, m = check_positive_int("k", k), check_positive_int("m", m)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    _check_entries("random_queries", k * m, k, m, max_entries)
    matrix = rng.integers(0, 2, size=(k, m)).astype(float)
    return Workload(matrix, [f"random{i}" for i in range(k)], name=f"random_queries({k})")


def stack(workloads: Sequence[Workload]) -> Workload:
    """The union of workloads over the same universe, queries in the order given."""
    workloads = list(workloads)
    if not workloads:
        raise ValueError("workloads: need at least one workload to stack")
    for w in workloads:
        if not isinstance(w, Workload):
            raise TypeError(f"workloads: expected Workload objects, got {type(w).__name__}")
    m = workloads[0].universe_size
    for w in workloads[1:]:
        if w.universe_size != m:
            raise ValueError(f"workloads: universe sizes differ ({m} vs {w.universe_size})")
    if any(w.is_sparse for w in workloads):
        matrix = sp.vstack([sp.csr_array(w.matrix) for w in workloads], format="csr")
    else:
        matrix = np.vstack([w.matrix for w in workloads])
    domains = {w.domain for w in workloads}
    domain = domains.pop() if len(domains) == 1 else None
    labels = [label for w in workloads for label in w.labels]
    return Workload(matrix, labels, domain=domain, name=" + ".join(w.name for w in workloads))
