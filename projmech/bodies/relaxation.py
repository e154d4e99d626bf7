"""Projection of noisy 2-way marginals onto a convex relaxation L of K_Q.

Projecting onto ``K_Q`` itself takes time proportional to the universe, exponential in the
number of attributes; the relaxation L is a convex body that contains ``K_Q``, is described by
a moment matrix of polynomial size, and has an efficient separation oracle
(:cite:p:`DNT15`). Since the error analysis of the projection mechanism (:cite:p:`NTZ13`) needs
only a convex body that contains the true answers, it holds for L with L's Gaussian width.

A row is encoded as a vector ``z`` of indicators (one per binary attribute, or the one-hot
indicators of every value), and every 2-way marginal cell is an entry of the moment matrix
``Y = E[(1, z)(1, z)^T]``. L is the set of matrices ``Y`` that satisfy the equalities every such
matrix satisfies, plus the constraints ``relaxation`` selects:

- ``"sdp"``: ``Y`` positive semidefinite (the first level of the moment hierarchy,
  :cite:p:`Las01`);
- ``"local"``: every cell of every 2-way table nonnegative (the local-consistency polytope);
- ``"sdp+local"`` (default): both. The SDP alone admits negative cells, which
  :func:`project_to_relaxation` reports with a :class:`NegativeCellsWarning`.

The encoding, the constraints, the width comparison ``l*(L) / l*(K_Q)`` and the certificates of
both solvers (the ADMM of :mod:`projmech.bodies.relaxation_admm`, default for the semidefinite
relaxations, and the CVXPY model below, which the tests use as the reference) are derived in the
theory page *The moment relaxation of 2-way marginals* (``docs/theory/relaxation.md``).
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data.domain import Domain
from ..solve import (
    Attempt,
    Callback,
    Outcome,
    SolveError,
    SolveResult,
    SolveStats,
    Status,
    check_callback,
    record_total_time,
    solve_in_order,
    status_from_cvxpy,
)
from ..validation import check_positive_int, check_positive_number, check_real_array

__all__ = ["RELAXATIONS", "RelaxationResult", "RelaxationError", "RelaxationSupport", "NegativeCellsWarning",
           "project_to_relaxation", "relaxation_support", "MomentEncoding", "moment_dimension", "check_solver"]

#: The constraints L may have, as ``relaxation=`` takes them (module docstring).
RELAXATIONS = ("sdp+local", "sdp", "local")

#: Default certified relative gap of the ADMM projection (see :func:`project_to_relaxation`).
DEFAULT_TOL = 1e-4

#: Largest constraint violation (``RelaxationResult.constraint_violation``) a returned point may
#: have by default. The ADMM's point is feasible by construction (a mixture with a strictly
#: feasible point; measured violations 1e-16 to 3e-16), so anything above rounding means a
#: broken construction. A CVXPY solver meets the constraints only to its own tolerance: SCS's
#: default is 1e-4 (measured violations 1e-11 to 3e-6 on binarized Adult and random domains).
ADMM_FEASIBILITY_TOL = 1e-9
CVXPY_FEASIBILITY_TOL = 1e-4

#: The final check's tolerance on ``answers`` against ``cells(moments)`` recomputed from the
#: returned moment matrix: the cells are sums of up to four entries of size at most about 1.
_ANSWER_TOL = 1e-9

#: A relative gap below ``-_BOUND_SLACK`` means a lower bound above the objective of a feasible
#: point: an invalid certificate rather than rounding (the bound and the objective are rounded
#: to about 1e-15 relative).
_BOUND_SLACK = 1e-9


class RelaxationError(SolveError):
    """The solver returned no optimal projection onto the relaxation, or no optimal support value.

    Raised by :func:`project_to_relaxation` and :func:`relaxation_support`. The point in
    ``best`` is never returned as a projection.

    Parameters
    ----------
    message : str
        What failed.
    attempts : iterable of Attempt
        The solver's outcome (kept as the tuple ``attempts``).
    best : RelaxationResult or None
        The feasible point found, with its certified gap, where ADMM stopped at
        ``max_iterations`` (its ``stats.status`` is ``iteration_limit``), else None.

    See Also
    --------
    projmech.solve.SolveError : The base class of every solver's error.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> y = np.random.default_rng(0).normal(0.25, 0.1, 12)
    >>> try:
    ...     pm.project_to_relaxation(domain, y, tol=1e-9, max_iterations=10)
    ... except pm.RelaxationError as error:
    ...     print(error.best.stats.status, error.best.stats.gap > 1e-9)
    iteration_limit True
    """


class NegativeCellsWarning(UserWarning):
    """Answers projected onto a relaxation without the local constraints have negative cells.

    :func:`project_to_relaxation` warns with it when ``relaxation="sdp"`` returns a cell below
    ``-feasibility_tol``: the positive semidefinite constraint alone does not keep the cells of a
    2-way table nonnegative. The message gives the number of such cells and the smallest one.
    ``relaxation="sdp+local"`` (the default; on the command line ``--relaxation sdp+local``)
    keeps every cell nonnegative; it is contained in ``"sdp"``, so its Gaussian width, and with
    it the projection mechanism's error bound, is no larger.

    See Also
    --------
    project_to_relaxation : The projection that warns.

    Examples
    --------
    The point below lies in the ``"sdp"`` relaxation (its moment matrix is positive
    semidefinite), yet its ``(1, 1)`` cell is ``-1/8``; projecting onto ``"sdp"`` leaves it there.

    >>> import warnings
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies import NegativeCellsWarning
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> y = np.array([0.375, 0.375, 0.375, -0.125])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = pm.project_to_relaxation(domain, y, relaxation="sdp")
    >>> [issubclass(w.category, NegativeCellsWarning) for w in caught]
    [True]
    >>> round(float(result.answers.min()), 3)
    -0.125
    >>> bool(pm.project_to_relaxation(domain, y).answers.min() >= 0)  # "sdp+local": no warning
    True
    """


def _is_binary(sizes: Sequence[int], encoding: str) -> bool:
    """Whether ``encoding`` (``"auto"``: binary where every attribute has 2 values) is binary."""
    return all(size == 2 for size in sizes) if encoding == "auto" else encoding == "binary"


def moment_dimension(sizes: Sequence[int], encoding: str = "auto") -> int:
    """``D``, the number of indicators ``z`` of a row over attributes of ``sizes``.

    The moment matrix is ``(D + 1) x (D + 1)``: one indicator per attribute in the binary
    encoding, one per value in the one-hot one; ``encoding`` as :meth:`MomentEncoding.of` takes it.
    """
    return len(sizes) if _is_binary(sizes, encoding) else int(sum(sizes))


@dataclass(frozen=True)
class MomentEncoding:
    """The linear map from a moment matrix ``Y`` (``(D+1) x (D+1)``) to 2-way marginal answers.

    Answers follow ``marginals(domain, 2)``: attribute pairs in lexicographic order, cells
    row-major within each pair's table. ``cells @ vec(Y)`` (row-major ``vec``) gives them. Build
    one with :meth:`of`; the cells of each encoding are written out in the theory page *The
    moment relaxation of 2-way marginals* (``docs/theory/relaxation.md``).

    Parameters
    ----------
    domain : Domain
        The domain whose 2-way marginals are encoded.
    binary : bool
        ``z = x`` (one indicator per binary attribute) or one-hot indicators.
    offsets : ndarray of int
        Where each attribute's indicators start in ``z``.
    size : int
        ``D + 1``, the order of ``Y``.
    cells : scipy.sparse.csr_array, shape (k, (D+1)^2)
        The map itself: row ``i`` picks (and for binary cells, adds and subtracts) the entries
        of ``Y`` that make cell ``i``.

    See Also
    --------
    project_to_relaxation : Returns the moment matrix of the projected answers.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies import MomentEncoding
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> encoding = MomentEncoding.of(domain)
    >>> encoding.binary, encoding.size, encoding.num_queries
    (True, 4, 12)
    >>> uniform = np.full(domain.size, 1 / domain.size)
    >>> moments = encoding.moments_of(uniform)  # [[1, mu^T], [mu, P]]
    >>> float(moments[0, 1]), float(moments[1, 2])  # mu_a, P_ab
    (0.5, 0.25)
    >>> np.allclose(encoding.answers(moments), pm.marginals(domain, way=2).answer(uniform))
    True
    """

    domain: Domain
    binary: bool
    offsets: np.ndarray
    size: int
    cells: sp.csr_array

    @classmethod
    def of(cls, domain: Domain, encoding: str = "auto") -> MomentEncoding:
        """The encoding of ``domain``'s 2-way marginals.

        Parameters
        ----------
        domain : Domain
            At least 2 attributes, each with at least 2 values.
        encoding : {"auto", "binary", "one-hot"}
            ``"binary"`` (every attribute of size 2), ``"one-hot"``, or ``"auto"`` (binary where
            possible).

        Returns
        -------
        MomentEncoding
            Its ``cells`` map in the layout of ``marginals(domain, 2)``.

        Raises
        ------
        TypeError
            If ``domain`` is not a :class:`~projmech.data.domain.Domain`.
        ValueError
            If ``domain`` has fewer than 2 attributes or an attribute with fewer than 2 values,
            if ``encoding`` is unknown, or ``"binary"`` for a non-binary domain.
        """
        if not isinstance(domain, Domain):
            raise TypeError(f"domain: expected a Domain, got {type(domain).__name__}")
        sizes = list(domain.sizes)
        if len(sizes) < 2:
            raise ValueError(f"domain: 2-way marginals need at least 2 attributes, got {len(sizes)}")
        small = [name for name, size in zip(domain.attributes, sizes) if size < 2]
        if small:
            raise ValueError(f"domain: attributes with fewer than 2 values have no 2-way table to relax: {small}")
        if encoding not in ("auto", "binary", "one-hot"):
            raise ValueError(f"encoding: expected 'auto', 'binary' or 'one-hot', got {encoding!r}")
        binary = _is_binary(sizes, encoding)
        if binary and any(size != 2 for size in sizes):
            raise ValueError("encoding: 'binary' needs every attribute to have exactly 2 values")
        offsets = np.arange(len(sizes)) if binary else np.concatenate([[0], np.cumsum(sizes)[:-1]])
        size = moment_dimension(sizes, encoding) + 1
        first, second = np.triu_indices(len(sizes), 1)  # lexicographic pairs
        if binary:
            # indicator(x_a = v) = v x_a + (1 - v)(1 - x_a), multiplied out: per pair the cells
            # (0,0), (0,1), (1,0), (1,1) in terms of Y[0,0] = 1, Y[0,i] = mu_a, Y[0,j], Y[i,j] = P_ab.
            i, j = first + 1, second + 1
            one, mu_i, mu_j, joint = np.zeros_like(i), i, j, i * size + j
            cell_of_term = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3])
            entries = np.stack([one, mu_i, mu_j, joint, mu_j, joint, mu_i, joint, joint], axis=1)
            signs = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
            rows = (4 * np.arange(first.size)[:, None] + cell_of_term).ravel()
            columns = entries.ravel()
            values = np.broadcast_to(signs, entries.shape).ravel()
            row = 4 * first.size
        else:
            sizes_array = np.asarray(sizes)
            table = sizes_array[first] * sizes_array[second]
            start = np.concatenate([[0], np.cumsum(table)[:-1]])
            pair = np.repeat(np.arange(first.size), table)
            within = np.arange(table.sum()) - np.repeat(start, table)
            v, w = within // sizes_array[second][pair], within % sizes_array[second][pair]
            rows = np.arange(table.sum())
            columns = (1 + offsets[first][pair] + v) * size + (1 + offsets[second][pair] + w)
            values = np.ones(rows.size)
            row = int(table.sum())
        cells = sp.csr_array((values, (rows, columns)), shape=(row, size * size))
        return cls(domain=domain, binary=binary, offsets=np.asarray(offsets), size=size, cells=cells)

    @property
    def num_queries(self) -> int:
        """The number ``k`` of 2-way marginal cells."""
        return self.cells.shape[0]

    def answers(self, moments: np.ndarray) -> np.ndarray:
        """The 2-way marginal answers of a moment matrix.

        Parameters
        ----------
        moments : array_like, shape (D+1, D+1)
            A moment matrix of this encoding.

        Returns
        -------
        ndarray, shape (k,)
            ``cells @ vec(moments)``, in the layout of ``marginals(domain, 2)``.
        """
        return self.cells @ np.asarray(moments, dtype=float).ravel()

    def moments_of(self, histogram: np.ndarray) -> np.ndarray:
        """The exact moment matrix ``E[(1, z)(1, z)^T]`` of a distribution over the universe.

        Parameters
        ----------
        histogram : array_like, shape (m,)
            Weights over the universe of the domain (a distribution, for a point of ``K_Q``).

        Returns
        -------
        ndarray, shape (D+1, D+1)
            ``sum_x histogram[x] (1, z(x))(1, z(x))^T``.
        """
        h = np.asarray(histogram, dtype=float).ravel()
        codes = np.unravel_index(np.arange(self.domain.size), self.domain.sizes)
        lifted = np.zeros((self.domain.size, self.size))
        lifted[:, 0] = 1.0
        for a, column in enumerate(codes):
            if self.binary:
                lifted[:, 1 + a] = column
            else:
                lifted[np.arange(self.domain.size), 1 + self.offsets[a] + column] = 1.0
        return lifted.T @ (h[:, None] * lifted)


@dataclass(frozen=True, repr=False)
class RelaxationResult(SolveResult):
    """A projection onto the relaxation L, as :func:`project_to_relaxation` returns it.

    Parameters
    ----------
    answers : ndarray, shape (k,)
        The projected 2-way marginal answers (the image of ``moments``).
    moments : ndarray, shape (D+1, D+1)
        The moment matrix ``Y = [[1, mu^T], [mu, P]]`` found: the certificate that ``answers``
        lie in L.
    distance : float
        ``||answers - y||_2``.
    relaxation : str
        The constraints of L, one of :data:`RELAXATIONS`.
    constraint_violation : float
        The largest violation, in the returned moments, of L's constraints: equalities,
        ``-min eigenvalue(Y)`` for the SDP, ``-min cell`` for the local constraints.
    stats : SolveStats
        Solver, status, seconds (model building included) and attempts. For ``"admm"``,
        ``stats.gap`` is the certified relative suboptimality of ``distance**2``
        (``stats.relative_gap`` is True): the exact projection is within
        ``sqrt(gap) * distance`` of ``answers``; ``stats.iterations`` counts ADMM iterations.
        For a CVXPY solver ``stats.gap`` is None and ``stats.tolerance_met`` False: its accuracy
        is its own status.

    See Also
    --------
    projmech.bodies.ProjectionResult : A projection onto ``K_Q``, with a witness distribution.
    synthetic_data : Rows whose 2-way marginals approach ``answers``.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2)
    >>> truth = workload.answer(np.full(domain.size, 1 / domain.size))
    >>> y = truth + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> result = pm.project_to_relaxation(domain, y)
    >>> result.moments.shape, result.witness is None
    ((4, 4), True)
    >>> result.summary()["body"], result.summary()["status"]
    ('relaxation/sdp+local', 'optimal')
    """

    answers: np.ndarray
    moments: np.ndarray
    distance: float
    relaxation: str
    constraint_violation: float
    stats: SolveStats

    #: A point of L need not be a mixture of universe elements: it has no witness distribution
    #: (the certificate of the :class:`~projmech.bodies.body.Body` protocol is ``moments``).
    witness = None

    def summary(self) -> dict[str, Any]:
        """The projection and its solver statistics as plain JSON-serializable values.

        Returns
        -------
        dict
            ``body`` (``"relaxation/<relaxation>"``), ``distance``, ``constraint_violation``
            and the entries of ``stats.summary()``.
        """
        return {
            "body": f"relaxation/{self.relaxation}",
            "distance": self.distance,
            "constraint_violation": self.constraint_violation,
            **self.stats.summary(),
        }

    def _description(self) -> str:
        return (f"onto L ({self.relaxation}): {self.answers.size} answers, moments {self.moments.shape[0]}x"
                f"{self.moments.shape[1]}, distance {self.distance:.6g}, violation {self.constraint_violation:.1e}")


def _equalities(encoding: MomentEncoding) -> tuple[sp.csr_array, np.ndarray]:
    """``A vec(Y) = b``: ``Y_00 = 1``, symmetry is in the variable, ``diag(P) = mu`` and, for
    one-hot, exclusivity, sum-to-one and row consistency."""
    size, sizes = encoding.size, list(encoding.domain.sizes)
    rows: list[dict[int, float]] = [{0: 1.0}]
    rhs = [1.0]
    for i in range(1, size):
        rows.append({i * size + i: 1.0, i: -1.0})  # Y_ii = Y_0i
        rhs.append(0.0)
    if not encoding.binary:
        for a, start in enumerate(encoding.offsets):
            block = range(1 + start, 1 + start + sizes[a])
            for i, j in itertools.combinations(block, 2):
                rows.append({i * size + j: 1.0})  # z_{a,v} z_{a,w} = 0
                rhs.append(0.0)
            for column in range(size):  # sum_v Y[(a,v), column] = Y[0, column]
                row = {i * size + column: 1.0 for i in block}
                row[column] = row.get(column, 0.0) - 1.0
                rows.append(row)
                rhs.append(0.0)
    data, row_index, column_index = [], [], []
    for r, entries in enumerate(rows):
        for c, value in entries.items():
            row_index.append(r)
            column_index.append(c)
            data.append(value)
    matrix = sp.csr_array((data, (row_index, column_index)), shape=(len(rows), size * size))
    return matrix, np.array(rhs)


def _violation(encoding: MomentEncoding, moments: np.ndarray, relaxation: str,
               matrix: sp.csr_array, rhs: np.ndarray) -> float:
    """The largest violation of L's constraints (``matrix``, ``rhs``: its equalities)."""
    violation = float(np.abs(matrix @ moments.ravel() - rhs).max())
    violation = max(violation, float(np.abs(moments - moments.T).max()))
    if "sdp" in relaxation:
        violation = max(violation, -float(np.linalg.eigvalsh((moments + moments.T) / 2).min()))
    if "local" in relaxation:
        violation = max(violation, -float(encoding.answers(moments).min()))
    return max(violation, 0.0)


@dataclass(frozen=True)
class _CvxpyBody:
    """L as CVXPY objects: the moment matrix variable and its constraints (see :func:`_cvxpy_body`)."""

    moments: Any  # cp.Variable, (D+1) x (D+1): PSD for the SDP relaxations, else symmetric
    flat: Any  # cp.Expression: vec(Y), row-major
    answers: Any  # cp.Expression: cells @ vec(Y), the 2-way marginal answers of Y
    equality: Any  # cp.Constraint: A vec(Y) == b
    local: Any  # cp.Constraint answers >= 0, or None
    equalities: sp.csr_array  # A
    rhs: np.ndarray  # b

    @property
    def constraints(self) -> list[Any]:
        return [self.equality] if self.local is None else [self.equality, self.local]


def _cvxpy_body(encoding: MomentEncoding, relaxation: str) -> _CvxpyBody:
    """The relaxation L of ``encoding``'s domain as CVXPY variable and constraints: the one
    definition of L shared by :func:`project_to_relaxation` and :func:`relaxation_support`.

    Vectorized: one matrix variable, one equality block, one PSD cone or none, one
    nonnegativity block for the local constraints."""
    import cvxpy as cp

    shape = (encoding.size, encoding.size)
    Y = cp.Variable(shape, PSD=True) if "sdp" in relaxation else cp.Variable(shape, symmetric=True)
    flat = cp.vec(Y, order="C")
    answers = encoding.cells @ flat
    equalities, rhs = _equalities(encoding)
    return _CvxpyBody(
        moments=Y,
        flat=flat,
        answers=answers,
        equality=equalities @ flat == rhs,
        local=answers >= 0 if "local" in relaxation else None,
        equalities=equalities,
        rhs=rhs,
    )


@record_total_time
def project_to_relaxation(
    domain: Domain,
    y: Any,
    *,
    relaxation: str = "sdp+local",
    solver: str = "auto",
    solver_options: dict[str, Any] | None = None,
    encoding: str = "auto",
    tol: float = DEFAULT_TOL,
    max_iterations: int = 5000,
    callback: Callback | None = None,
    feasibility_tol: float | None = None,
) -> RelaxationResult:
    """Euclidean projection of 2-way marginal answers ``y`` onto the relaxation L.

    Minimizes ``||cells(Y) - y||_2`` over the moment matrices ``Y`` of L: polynomial in the
    number of attributes, never touching the ``prod(sizes)`` universe. ``K_Q ⊆ L``, so the true
    answers are feasible, the projection is never farther from them than ``y`` is, and the
    projection mechanism's error bound (:cite:p:`NTZ13`) holds with the Gaussian width of L in
    place of that of ``K_Q`` (:cite:p:`DNT15`). The relaxation, the bound and the solvers'
    certificates are derived in the theory page *The moment relaxation of 2-way marginals*
    (``docs/theory/relaxation.md``).

    Parameters
    ----------
    domain : Domain
        At least 2 attributes, each with at least 2 values.
    y : array_like, shape (k,)
        Answers in the layout of ``marginals(domain, 2)``.
    relaxation : {"sdp+local", "sdp", "local"}
        The constraints of L on the moment matrix ``Y``: ``"sdp"``, ``Y`` positive
        semidefinite; ``"local"``, every cell nonnegative; ``"sdp+local"``, both. ``"sdp"``
        alone can return negative cells, with a :class:`NegativeCellsWarning`.
    solver : str
        ``"admm"``: the certified first-order solver of :mod:`projmech.bodies.relaxation_admm`
        (``"sdp+local"`` and ``"sdp"``; ``d = 150`` binary attributes take about 0.1 s,
        ``d = 500`` about 8 s). A CVXPY solver name (``"SCS"``, ``"CLARABEL"``, ...): the
        reference model, trusted when its status is ``optimal``. ``"auto"``: ``"admm"`` for the
        semidefinite relaxations, SCS for ``"local"``.
    solver_options : dict, optional
        Options of a CVXPY solver (none for ``"admm"``, which takes ``tol`` and
        ``max_iterations``).
    encoding : {"auto", "binary", "one-hot"}
        Of the returned moment matrix; ``"auto"`` is binary when every attribute has 2 values.
    tol : float
        The certified relative gap ``(||answers - y||^2 - min) / ||answers - y||^2`` at which
        ADMM stops, in ``(0, 1)``. The returned answers are then within ``sqrt(tol) * distance``
        of the exact projection: with the default 1e-4, ``0.01 * distance``, far below the noise
        that ``distance`` mostly consists of. CVXPY solvers use their own tolerances.
    max_iterations : int
        ADMM iterations before giving up with :class:`RelaxationError`.
    callback : callable, optional
        ``callback(iteration, gap)`` at every certificate of ADMM (every 10 iterations), with
        its relative gap (:class:`~projmech.solve.ProgressBar` draws a bar).
    feasibility_tol : float, optional
        The largest constraint violation a returned point may have: default
        ``ADMM_FEASIBILITY_TOL`` (1e-9) for ADMM, whose point is feasible by construction, and
        ``CVXPY_FEASIBILITY_TOL`` (1e-4, SCS's default accuracy) for a CVXPY solver. Cells
        below ``-feasibility_tol`` are the negative cells a :class:`NegativeCellsWarning` counts.

    Returns
    -------
    RelaxationResult
        The projected answers, their moment matrix and the solver's statistics. Whatever solver
        produced it, the point passed one final check: the answers recomputed from the moment
        matrix, its constraint violation at most ``feasibility_tol`` and, for ADMM, the relative
        gap recomputed from the answers and the solver's Lagrangian lower bound.

    Raises
    ------
    TypeError
        If ``domain`` is not a :class:`~projmech.data.domain.Domain`, or ``tol`` or ``solver`` has the wrong
        type.
    ValueError
        On a ``y`` of the wrong length or with NaN, an unknown ``relaxation``, ``solver`` or
        ``encoding``, ``solver_options`` given to ``"admm"``, a ``tol`` outside ``(0, 1)``, or a
        non-positive ``max_iterations`` or ``feasibility_tol``; before any solve.
    RelaxationError
        If the solver does not report an optimal solution (``optimal_inaccurate`` included),
        ADMM does not certify ``tol`` within ``max_iterations`` (the best point is attached as
        ``best``), or the returned point fails the final check (``Status.REJECTED``).

    Warns
    -----
    NegativeCellsWarning
        When a relaxation without the local constraints (``"sdp"``) returns cells below
        ``-feasibility_tol``.

    See Also
    --------
    projmech.bodies.project_to_hull : The projection onto ``K_Q`` itself.
    relaxation_support : The support function of L.

    References
    ----------
    :cite:t:`NTZ13` (the projection mechanism); :cite:t:`DNT15` (projecting onto a convex
    relaxation of the marginals' body).

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2)
    >>> truth = workload.answer(np.full(domain.size, 1 / domain.size))
    >>> y = truth + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> result = pm.project_to_relaxation(domain, y)
    >>> str(result.stats.status), result.stats.gap <= 1e-4
    ('optimal', True)
    >>> bool(np.linalg.norm(result.answers - truth) <= np.linalg.norm(y - truth))
    True
    >>> bool(result.answers.min() >= 0)  # "sdp+local": every table is a distribution
    True
    """
    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")
    model = MomentEncoding.of(domain, encoding)
    target = check_real_array("y", y, finite=False)
    if target.shape != (model.num_queries,):
        raise ValueError(
            f"y: expected {model.num_queries} answers (the 2-way marginals of the domain), got shape {target.shape}"
        )
    if not np.all(np.isfinite(target)):
        raise ValueError("y: contains NaN or infinite entries")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise TypeError(f"tol: expected a number, got {tol!r}")
    if not (np.isfinite(tol) and 0 < tol < 1):
        raise ValueError(f"tol: must lie in (0, 1), got {tol!r}")
    max_iterations = check_positive_int("max_iterations", max_iterations)
    callback = check_callback(callback)
    if feasibility_tol is not None:
        feasibility_tol = check_positive_number("feasibility_tol", feasibility_tol)
    solver = check_solver(solver, relaxation)
    if solver == "admm":
        if solver_options:
            raise ValueError("solver_options: 'admm' takes tol and max_iterations, not solver options")
        feasibility = ADMM_FEASIBILITY_TOL if feasibility_tol is None else feasibility_tol
        plan = [("admm", lambda: _project_by_admm(model, target, relaxation, tol, max_iterations, callback,
                                                  feasibility))]
    else:
        feasibility = CVXPY_FEASIBILITY_TOL if feasibility_tol is None else feasibility_tol
        plan = [(solver, lambda: _project_by_cvxpy(model, target, relaxation, solver, solver_options, feasibility))]

    def finish(draft: _Draft, attempt: Attempt, attempts: tuple[Attempt, ...]) -> RelaxationResult:
        # The one construction of a RelaxationResult (returned, or an error's best).
        return RelaxationResult(
            answers=draft.answers,
            moments=draft.moments,
            distance=float(np.linalg.norm(draft.answers - target)),
            relaxation=relaxation,
            constraint_violation=draft.violation,
            stats=SolveStats.from_attempt(attempt, attempts, iterations=draft.iterations, gap=draft.gap,
                                          relative_gap=True, tolerance=draft.tolerance),
        )

    result, _, _ = solve_in_order(plan, RelaxationError, f"projection onto the relaxation L ({relaxation}) failed",
                                  finish)
    if "local" not in relaxation:
        _warn_negative_cells(result, feasibility)
    return result


def _warn_negative_cells(result: RelaxationResult, tolerance: float) -> None:
    """Warn (:class:`NegativeCellsWarning`) when ``result`` has cells below ``-tolerance``."""
    # Reads nothing but the projected answers, which are released: post-processing, so the
    # warning costs no privacy.
    negative = result.answers < -tolerance
    count = int(np.count_nonzero(negative))
    if count:
        warnings.warn(
            f"{count} of {result.answers.size} projected cells are negative (minimum "
            f"{float(result.answers.min()):.3g}): relaxation={result.relaxation!r} lacks the local "
            "constraints; relaxation='sdp+local' (command line: --relaxation sdp+local) keeps every cell "
            "nonnegative", NegativeCellsWarning, stacklevel=4)  # past project_to_relaxation and its timer


#: The solvers that solve each relaxation's problem, besides ``"auto"``: the certified ADMM solves
#: only the semidefinite ones; of the CVXPY solvers, ECOS and OSQP cannot take a semidefinite
#: constraint, and OSQP and HiGHS fail on ``"local"``'s problem. One list, read by
#: :func:`check_solver` and by the command line's ``--solver`` help and check.
SOLVERS: dict[str, tuple[str, ...]] = {
    "sdp+local": ("admm", "CLARABEL", "SCS"),
    "sdp": ("admm", "CLARABEL", "SCS"),
    "local": ("CLARABEL", "ECOS", "SCS"),
}


def check_solver(solver: Any, relaxation: str) -> str:
    """The solver :func:`project_to_relaxation` runs for ``solver`` on ``relaxation``.

    ``"auto"`` is resolved: ADMM for the semidefinite relaxations, SCS for ``"local"``. A
    TypeError or ValueError names ``solver`` when it cannot run: not a solver of
    :data:`SOLVERS` for this relaxation, or not installed.
    """
    if not isinstance(solver, str):
        raise TypeError(f"solver: expected a string, got {type(solver).__name__}")
    if solver == "auto":
        solver = "SCS" if relaxation == "local" else "admm"
    if solver == "admm" and relaxation == "local":
        raise ValueError("solver: 'admm' projects onto the semidefinite relaxations; use a CVXPY solver for 'local'")
    allowed = SOLVERS.get(relaxation, ())
    if solver != "admm" and solver.upper() not in allowed:
        raise ValueError(f"solver: the relaxation {relaxation!r} is solved by 'auto' or one of {allowed}, got "
                         f"{solver!r}")
    if solver != "admm" and solver.upper() not in _installed_solvers():
        raise ValueError(f"solver: {solver!r} is not installed; installed CVXPY solvers: {_installed_solvers()}")
    return solver


def _installed_solvers() -> tuple[str, ...]:
    from .solvers import installed_solvers

    return installed_solvers()


@dataclass(frozen=True)
class _Draft:
    """A point of L that passed the final check's feasibility part: its answers, moment
    matrix and recomputed constraint violation; for ADMM its recomputed relative gap, the
    tolerance and the iterations."""

    answers: np.ndarray
    moments: np.ndarray
    violation: float
    gap: float | None = None
    tolerance: float | None = None
    iterations: int | None = None


def _project_by_admm(model: MomentEncoding, target: np.ndarray, relaxation: str, tol: float,
                     max_iterations: int, callback: Callback | None, feasibility_tol: float) -> Outcome[_Draft]:
    from .relaxation_admm import admm_projection, one_hot_lift

    solution = admm_projection(model.domain, target, local=relaxation == "sdp+local", tol=tol,
                               max_iterations=max_iterations, callback=callback)
    lift = one_hot_lift(model.domain)
    moments = lift @ solution.contrast_moments @ lift.T
    if model.binary:  # keep the rows of the constant and of each attribute's value 1
        keep = np.concatenate([[0], 2 + 2 * np.arange(len(model.domain))])
        moments = moments[np.ix_(keep, keep)]
    # A point ADMM stopped short with is still checked in full, but for the gap's tolerance.
    defect, violation, gap = _check_relaxation(model, relaxation, target, solution.answers, moments,
                                               feasibility_tol, lower_bound=solution.lower_bound,
                                               tol=tol if solution.converged else math.inf)
    if defect is not None:
        return Outcome(Status.REJECTED, detail=f"the returned point failed the final check: {defect}")
    assert gap is not None  # recomputed from ADMM's lower bound
    draft = _Draft(solution.answers, moments, violation, gap, tol, solution.iterations)
    if not solution.converged:
        return Outcome(Status.ITERATION_LIMIT, draft,
                       f"stopped after {solution.iterations} iterations with certified gap {gap:.2e} > tol={tol:g}; "
                       "raise max_iterations or tol (the best feasible point is attached as .best)", score=gap)
    return Outcome(Status.OPTIMAL, draft, f"certified gap {gap:.2e} <= tol={tol:g}")


def _project_by_cvxpy(model: MomentEncoding, target: np.ndarray, relaxation: str, solver: str,
                      solver_options: dict[str, Any] | None, feasibility_tol: float) -> Outcome[_Draft]:
    import cvxpy as cp

    body = _cvxpy_body(model, relaxation)
    Y, answers = body.moments, body.answers
    # The norm, not its square: interior-point solvers then resolve the distance itself to their
    # tolerance, instead of its square (which leaves a fixed point 3e-5 away at tolerance 1e-9).
    problem = cp.Problem(cp.Minimize(cp.norm(answers - target, 2)), body.constraints)
    try:
        problem.solve(solver=solver, **(solver_options or {}))
    except cp.error.SolverError as error:
        return Outcome(Status.SOLVER_ERROR, detail=str(error))
    status = status_from_cvxpy(problem.status)
    if status is not Status.OPTIMAL or Y.value is None:
        return Outcome(Status.SOLVER_ERROR if status is Status.OPTIMAL else status,
                       detail=f"returned status {problem.status} (not optimal)")
    moments = (Y.value + Y.value.T) / 2
    projected = model.answers(moments)
    defect, violation, _ = _check_relaxation(model, relaxation, target, projected, moments, feasibility_tol)
    if defect is not None:
        return Outcome(Status.REJECTED, detail=f"reported optimal, but its point failed the final check: {defect}")
    return Outcome(Status.OPTIMAL, _Draft(projected, moments, violation))


def _check_relaxation(model: MomentEncoding, relaxation: str, target: np.ndarray, answers: np.ndarray,
                      moments: np.ndarray, feasibility_tol: float, lower_bound: float | None = None,
                      tol: float | None = None) -> tuple[str | None, float, float | None]:
    """The final check of a point of L before it is returned, whatever solver produced it.

    From the returned moment matrix alone: it is finite, its answers ``cells(moments)`` agree
    with ``answers`` to ``_ANSWER_TOL``, and its largest constraint violation (:func:`_violation`,
    recomputed) is at most ``feasibility_tol``. With a ``lower_bound`` on the optimal objective
    (ADMM), the relative gap is recomputed from ``answers`` and ``target``; it must lie in
    ``[-_BOUND_SLACK, tol]`` (below, the bound exceeds a feasible objective: invalid).

    Returns
    -------
    defect : str or None
        Why the point fails, or None if it passes.
    violation : float
        The recomputed largest constraint violation (``inf`` for non-finite moments).
    gap : float or None
        The recomputed relative gap, clipped at 0 (None without a lower bound or when the check
        stopped before it).
    """
    from .relaxation_admm import relative_gap

    if not (np.all(np.isfinite(moments)) and np.all(np.isfinite(answers))):
        return "non-finite moments or answers", math.inf, None
    violation = _violation(model, moments, relaxation, *_equalities(model))
    deviation = float(np.max(np.abs(model.answers(moments) - answers)))
    if not deviation <= _ANSWER_TOL:
        return (f"answers differ from the cells of the returned moments by {deviation:.2e} > {_ANSWER_TOL:.0e}",
                violation, None)
    if not violation <= feasibility_tol:
        return f"constraint violation {violation:.2e} > feasibility_tol={feasibility_tol:.0e}", violation, None
    if lower_bound is None:
        return None, violation, None
    assert tol is not None, "a lower bound is checked against a tolerance"
    gap = relative_gap(0.5 * float(np.sum((answers - target) ** 2)), lower_bound, target.size)
    if not -_BOUND_SLACK <= gap <= tol:
        return f"recomputed relative gap {gap:.2e} outside [-{_BOUND_SLACK:.0e}, tol={tol:g}]", violation, None
    return None, violation, max(gap, 0.0)


@dataclass(frozen=True)
class RelaxationSupport:
    """The support function ``h_L(g) = max {<g, cells(Y)> : Y in L}`` of L in many directions.

    As :func:`relaxation_support` returns it. ``K_Q ⊆ L``, so ``h_{K_Q}(g) <= h_L(g)`` in every
    direction, and the mean of ``upper_bounds`` over Gaussian directions estimates an upper
    bound on the Gaussian width ``l*(L) >= l*(K_Q)`` that the projection mechanism's error bound
    uses.

    Parameters
    ----------
    values : ndarray, shape (s,)
        ``<g, cells(Y_g)>`` at the solver's maximizer ``Y_g`` (symmetrized), one per direction.
    upper_bounds : ndarray, shape (s,)
        Certified ``h_L(g) <= upper_bounds``, whatever the solver's accuracy: weak duality with
        the solver's multipliers (theory page *The moment relaxation of 2-way marginals*,
        ``docs/theory/relaxation.md``). The side that matters for the error bound, which uses
        ``l*(L)`` as an upper bound.
    relaxation : str
        The constraints of L, one of :data:`RELAXATIONS`.
    solver : str
        The CVXPY solver that solved each direction.
    encoding : str
        ``"binary"`` or ``"one-hot"``.
    max_violation : float
        The largest constraint violation of any returned maximizer (as in
        :attr:`RelaxationResult.constraint_violation`).
    max_gap : float
        ``max(upper_bounds - values)``: how far a value can be below its certified bound.
    retries : int
        Directions solved a second time (with the retry options) because the first solve ended
        in a status other than ``optimal``; every returned value comes from an optimal solve.
    solve_time : float
        Seconds for all directions, model building (once) included.
    moments : ndarray, shape (s, D+1, D+1), or None
        The maximizers, when asked for (``return_moments=True``).

    See Also
    --------
    projmech.analysis.geometry : Gaussian widths and support functions of the bodies.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies import relaxation_support
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> support = relaxation_support(domain, np.ones(12))  # every cell: the three tables' sums
    >>> round(float(support.values[0]), 6), bool(support.upper_bounds[0] >= support.values[0])
    (3.0, True)
    """

    values: np.ndarray
    upper_bounds: np.ndarray
    relaxation: str
    solver: str
    encoding: str
    max_violation: float
    max_gap: float
    retries: int
    solve_time: float
    moments: np.ndarray | None = None


def _support_upper_bound(encoding: MomentEncoding, relaxation: str, body: _CvxpyBody,
                         objective: np.ndarray) -> float:
    """A certified upper bound on ``max {<objective, vec Y> : Y in L}`` from the solver's
    multipliers ``lam`` (equalities) and ``nu`` (local cells, clipped to ``>= 0``).

    Weak duality: ``b.lam`` plus a bound on ``<Z, Y>`` over L, ``Z = sym(objective - A^T lam +
    cells^T nu)``; valid for any multipliers, tight when they are optimal. The derivation is in
    the theory page *The moment relaxation of 2-way marginals* (``docs/theory/relaxation.md``).
    """
    lam = body.equality.dual_value
    if lam is None or (body.local is not None and body.local.dual_value is None):
        raise RelaxationError("the solver returned no multipliers: the support value cannot be certified")
    residual = objective - body.equalities.T @ np.asarray(lam, dtype=float)
    if body.local is not None:
        residual = residual + encoding.cells.T @ np.maximum(np.asarray(body.local.dual_value, dtype=float), 0.0)
    Z = residual.reshape(encoding.size, encoding.size)
    Z = (Z + Z.T) / 2
    slack = []
    if "sdp" in relaxation:
        trace = 1.0 + len(encoding.domain.sizes)
        slack.append(max(float(np.linalg.eigvalsh(Z).max()), 0.0) * trace)
        slack.append(float(np.abs(Z).sum()))
    if "local" in relaxation:
        slack.append(float(np.maximum(Z, 0.0).sum()))
    return float(body.rhs @ lam) + min(slack)


#: Clarabel's options for :func:`relaxation_support` when none are given. At Clarabel's default
#: tolerances (1e-8) about 7-9% of the ``"sdp+local"`` support problems at d = 9, 10 stall just
#: above them (dual residual 1.01e-8) and end ``optimal_inaccurate``; at 1e-7 a few in 10,000 do
#: (1 of the 63,000 solves of ``benchmarks/widths.py``), and the certified gap
#: (``RelaxationSupport.max_gap``) was at most 4.1e-5 there (d = 4 … 10).
SUPPORT_CLARABEL_OPTIONS: MappingProxyType[str, Any] = MappingProxyType(
    {"tol_feas": 1e-7, "tol_gap_abs": 1e-7, "tol_gap_rel": 1e-7})
#: Clarabel's options for the one re-solve of a direction whose first solve was not optimal
#: (none of 16,000 solves at d = 8 … 10 stalled at 1e-6; certified gap at most about 3e-4).
SUPPORT_CLARABEL_RETRY_OPTIONS: MappingProxyType[str, Any] = MappingProxyType(
    {"tol_feas": 1e-6, "tol_gap_abs": 1e-6, "tol_gap_rel": 1e-6})


def relaxation_support(
    domain: Domain,
    directions: Any,
    *,
    relaxation: str = "sdp+local",
    solver: str = "CLARABEL",
    solver_options: dict[str, Any] | None = None,
    encoding: str = "auto",
    return_moments: bool = False,
    retry: bool = True,
    retry_options: dict[str, Any] | None = None,
) -> RelaxationSupport:
    """The support function ``h_L(g)`` of the relaxation L, for each row ``g`` of ``directions``.

    ``h_L(g) = max <g, cells(Y)>`` over the moment matrices ``Y`` of L: a linear SDP (``"sdp"``,
    ``"sdp+local"``) or LP (``"local"``) over the same CVXPY model of L as
    :func:`project_to_relaxation`. The problem is built once with the direction as a
    ``cp.Parameter``; CVXPY compiles it on the first solve and only substitutes the parameter
    afterwards (one solve per direction, about 1-10 ms for d <= 10 with Clarabel). Since
    ``K_Q ⊆ L``, ``h_{K_Q}(g) <= h_L(g)`` for every ``g``, so ``l*(K_Q) <= l*(L)``.

    Parameters
    ----------
    domain : Domain
        At least 2 attributes, each with at least 2 values.
    directions : array_like, shape (s, k) or (k,)
        Directions in the answer space of ``marginals(domain, 2)`` (``k`` queries); a 1-d array
        is one direction (``s = 1``).
    relaxation : {"sdp+local", "sdp", "local"}
        The constraints of L.
    solver : str
        An installed CVXPY solver. Default: Clarabel (interior point) with
        ``SUPPORT_CLARABEL_OPTIONS``, whose values agree with their certified upper bounds to
        within 4.1e-5 for d <= 10 (values about 1-25); a first-order solver such as SCS can be
        off by its tolerance in either direction (its values can fall below ``h_{K_Q}``).
    solver_options : dict, optional
        The solver's options (default: ``SUPPORT_CLARABEL_OPTIONS`` for Clarabel, none
        otherwise).
    encoding : {"auto", "binary", "one-hot"}
        Of the moment matrices; ``"auto"`` is binary when every attribute has 2 values.
    return_moments : bool
        Keep the maximizer of each direction in :attr:`RelaxationSupport.moments`.
    retry : bool
        Whether a direction whose solve ends in a status other than ``optimal`` is solved once
        more, with ``retry_options``. Interior-point solvers occasionally stall just above their
        tolerances on these degenerate problems (the maximizer is typically a low-rank moment
        matrix with many zero cells); the count is reported in
        :attr:`RelaxationSupport.retries`, and the values are certified either way.
    retry_options : dict, optional
        The options of the retry (default: ``SUPPORT_CLARABEL_RETRY_OPTIONS`` for Clarabel,
        ``solver_options`` otherwise).

    Returns
    -------
    RelaxationSupport
        Values, certified upper bounds, the largest constraint violation and duality gap.

    Raises
    ------
    TypeError
        If ``domain`` is not a :class:`~projmech.data.domain.Domain`.
    ValueError
        On an unknown ``relaxation``, ``solver`` or ``encoding``, or ``directions`` of the wrong
        shape or not finite.
    RelaxationError
        If the solver fails, or reports anything but ``optimal`` (``optimal_inaccurate``
        included) for a direction (after the retry, if any); no value is returned then.

    See Also
    --------
    projmech.analysis.geometry : Gaussian widths estimated from support functions.

    Examples
    --------
    The support of L in a direction that rewards only the ``(1, 1)`` cell of the first table,
    with the true distribution putting all mass on ``a = b = 1``:

    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies import relaxation_support
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> g = np.zeros(12)
    >>> g[3] = 1.0
    >>> support = relaxation_support(domain, g)
    >>> round(float(support.values[0]), 6), support.retries
    (1.0, 0)
    """
    import cvxpy as cp

    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")
    if not isinstance(solver, str) or solver.upper() not in _installed_solvers():
        raise ValueError(f"solver: expected an installed CVXPY solver {list(_installed_solvers())}, got {solver!r}")
    model = MomentEncoding.of(domain, encoding)
    G = check_real_array("directions", directions, finite=False)
    if G.ndim == 1:  # one direction
        G = G[None, :]
    if G.ndim != 2 or G.shape[1] != model.num_queries or G.shape[0] == 0:
        raise ValueError(f"directions: expected shape (s, {model.num_queries}) or ({model.num_queries},) "
                         f"(the 2-way marginals of the domain), got {np.shape(directions)}")
    if not np.all(np.isfinite(G)):
        raise ValueError("directions: contains NaN or infinite entries")
    clarabel = solver.upper() == "CLARABEL"
    first_options: Mapping[str, Any] = solver_options if solver_options is not None else (
        SUPPORT_CLARABEL_OPTIONS if clarabel else {})
    second_options: Mapping[str, Any] = retry_options if retry_options is not None else (
        SUPPORT_CLARABEL_RETRY_OPTIONS if clarabel else first_options)
    start = time.perf_counter()
    body = _cvxpy_body(model, relaxation)
    direction = cp.Parameter(model.num_queries)
    problem = cp.Problem(cp.Maximize(direction @ body.answers), body.constraints)
    values = np.empty(G.shape[0])
    bounds = np.empty(G.shape[0])
    maximizers = np.empty((G.shape[0], model.size, model.size)) if return_moments else None
    violation = 0.0
    retries = 0

    def solve(index: int, options: Mapping[str, Any]) -> bool:
        # warm_start=False: a fresh solver each time, so no setting of a retry lingers in CVXPY's
        # cached solver object (it keeps settings that a later call does not name). CVXPY's
        # "may be inaccurate" warning is dropped: the status is checked here, and reported.
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=solver.upper(), warm_start=False, **options)
        except cp.error.SolverError as error:
            raise RelaxationError(f"{solver} failed on the support of the relaxation (direction {index}): "
                                  f"{error}") from error
        return problem.status == cp.OPTIMAL and body.moments.value is not None

    for index, g in enumerate(G):
        direction.value = g
        optimal = solve(index, first_options)
        if not optimal and retry:
            retries += 1
            first = problem.status
            optimal = solve(index, second_options)
            if not optimal:
                raise RelaxationError(f"{solver} returned status {first}, then {problem.status} with the retry "
                                      f"options, on the support of the relaxation (direction {index}; not optimal)")
        if not optimal:
            raise RelaxationError(f"{solver} returned status {problem.status} on the support of the relaxation "
                                  f"(direction {index}; not optimal; retry=True solves it once more)")
        moments = (body.moments.value + body.moments.value.T) / 2
        values[index] = float(g @ model.answers(moments))
        bounds[index] = _support_upper_bound(model, relaxation, body, model.cells.T @ g)
        violation = max(violation, _violation(model, moments, relaxation, body.equalities, body.rhs))
        if maximizers is not None:
            maximizers[index] = moments
    return RelaxationSupport(
        values=values,
        upper_bounds=bounds,
        relaxation=relaxation,
        solver=solver,
        encoding="binary" if model.binary else "one-hot",
        max_violation=violation,
        max_gap=float(np.max(bounds - values)),
        retries=retries,
        solve_time=time.perf_counter() - start,
        moments=maximizers,
    )
