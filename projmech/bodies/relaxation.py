"""Projection of noisy 2-way marginals onto a convex relaxation L of K_Q (seed 000, last section).

For 2-way marginals, projecting onto ``K_Q`` is NP-hard; the seeds project onto a body
``L ⊇ K_Q`` with an efficient separation oracle instead. The error analysis of the projection
mechanism needs only that the true answers lie in the body and uses its Gaussian width.

Encoding. A row ``x`` is written as a vector ``z`` of indicators; every 2-way marginal cell is
then an entry of the second-moment matrix ``E[z z^T]``, and every answer vector in ``K_Q`` is a
linear image of a point of the moment body ``conv{(1, z)(1, z)^T}``. The relaxation replaces
that hull by a convex superset over the moment matrix ``Y = [[1, mu^T], [mu, P]]``:

- binary domains: ``z = x in {0, 1}^d``, ``diag(P) = mu`` (``x_i^2 = x_i``); the cells of the
  pair ``(i, j)`` are ``(0,0) = 1 - mu_i - mu_j + P_ij``, ``(0,1) = mu_j - P_ij``,
  ``(1,0) = mu_i - P_ij``, ``(1,1) = P_ij``;
- categorical domains: ``z`` holds the one-hot indicators of every attribute; within an
  attribute the indicators are exclusive (its block of P is ``diag(mu_a)``) and sum to one, and
  summing an attribute's rows of Y gives its first row (``sum_v z_{a,v} = 1`` times anything).
  The cells of the pair ``(a, b)`` are the block ``P[a, b]``.

``relaxation`` selects the constraints on top of those equalities:

- ``"sdp"``: ``Y`` positive semidefinite (the first level of the moment hierarchy; for binary
  data with ``s = 2x - 1`` it is the elliptope);
- ``"local"``: every cell of every 2-way table nonnegative (the local-consistency polytope);
- ``"sdp+local"`` (default): both. The SDP alone admits negative cells (in ±1 form
  ``m_i = m_j = C_ij = -1/2`` is PSD yet gives a ``(1,1)`` cell of ``-1/8``).

Every data set's exact marginals satisfy all of these (``Y`` is then an average of
``(1, z)(1, z)^T``), so ``K_Q ⊆ L`` and the projection onto L never moves a true answer vector.

What is guaranteed: a width, not a sandwich
-------------------------------------------
The error analysis (seed 000, Theorem 8) needs only a convex body containing the true answers,
so it holds with ``l*(L)`` in place of ``l*(K_Q)``. For binary attributes Grothendieck's
inequality gives ``l*(L) <= 2 K_G l*(K_Q) < 3.57 l*(K_Q)`` for ``"sdp"`` and ``"sdp+local"``
(proof in :mod:`projmech.geometry`); measured for d = 4..10 (``benchmarks/widths.py``, paired
Monte Carlo): 1.0002-1.0007 for ``"sdp+local"``, 1.020-1.043 for ``"sdp"``, 1.011-1.145 for
``"local"``, whose ratio grows like ``sqrt(d)`` (``l*(local) >= C(d,2)/sqrt(2 pi)``). The sandwich
``(1/C)·L ⊆ K_Q ⊆ L`` of seed 002 (slide 15; the OCR reads "1 • 10 L", probably C = 10) holds for
no absolute C: scaled about the origin for no C > 1 (every point has tables summing to 1), and
about any centre only with C = Θ(log d) for both semidefinite relaxations -- the Grothendieck
constant of the complete graph (Alon, Makarychev, Makarychev & Naor 2006) -- which confirms the
issue's claim. What the seeds need, and what holds, is the width comparison.

Solvers
-------
:func:`project_to_relaxation` solves the projection either with the certified ADMM of
:mod:`projmech.bodies.relaxation_admm` (default for the semidefinite relaxations) or with the
CVXPY model below, which the tests use as the reference.
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

from ..domain import Domain
from ..solve import Attempt, Callback, Outcome, SolveError, SolveResult, SolveStats, Status, check_callback, \
    solve_in_order, status_from_cvxpy
from ..validation import check_positive_int, check_positive_number, check_real_array

__all__ = ["RELAXATIONS", "RelaxationResult", "RelaxationError", "RelaxationSupport", "project_to_relaxation",
           "relaxation_support", "MomentEncoding", "moment_dimension", "check_solver"]

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
    """The solver did not return an optimal projection onto the relaxation (or, from
    :func:`relaxation_support`, an optimal support value).

    ``attempts`` holds the solver's outcome; ``best`` the feasible point found, with its
    certified gap, where ADMM stopped at ``max_iterations`` (a :class:`RelaxationResult` whose
    ``stats.status`` is ``iteration_limit``), else None. It is never returned as a projection.
    """


def _is_binary(sizes: Sequence[int], encoding: str) -> bool:
    """Whether ``encoding`` (``"auto"``: binary where every attribute has 2 values) is binary."""
    return all(size == 2 for size in sizes) if encoding == "auto" else encoding == "binary"


def moment_dimension(sizes: Sequence[int], encoding: str = "auto") -> int:
    """``D``, the indicators ``z`` of a row over attributes of ``sizes`` (the moment matrix is
    ``(D + 1) x (D + 1)``): one per attribute in the binary encoding, one per value in the one-hot
    one; ``encoding`` as :meth:`MomentEncoding.of` takes it."""
    return len(sizes) if _is_binary(sizes, encoding) else int(sum(sizes))


@dataclass(frozen=True)
class MomentEncoding:
    """The linear map from a moment matrix ``Y`` (``(D+1) x (D+1)``) to 2-way marginal answers.

    Answers follow ``marginals(domain, 2)``: attribute pairs in lexicographic order, cells
    row-major within each pair's table. ``cells @ vec(Y)`` (row-major ``vec``) gives them.

    Attributes
    ----------
    domain : Domain
    binary : bool
        ``z = x`` (one indicator per binary attribute) or one-hot indicators.
    offsets : ndarray of int
        Where each attribute's indicators start in ``z`` (one-hot encoding).
    size : int
        ``D + 1``, the order of Y.
    cells : scipy.sparse.csr_array, shape (k, (D+1)^2)
    """

    domain: Domain
    binary: bool
    offsets: np.ndarray
    size: int
    cells: sp.csr_array

    @classmethod
    def of(cls, domain: Domain, encoding: str = "auto") -> MomentEncoding:
        """The encoding of ``domain``: ``"binary"`` (every attribute of size 2), ``"one-hot"``,
        or ``"auto"`` (binary where possible)."""
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
        return self.cells.shape[0]

    def answers(self, moments: np.ndarray) -> np.ndarray:
        """The 2-way marginal answers of a moment matrix."""
        return self.cells @ np.asarray(moments, dtype=float).ravel()

    def moments_of(self, histogram: np.ndarray) -> np.ndarray:
        """The exact moment matrix ``E[(1, z)(1, z)^T]`` of a distribution over the universe."""
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
    """A projection onto the relaxation L.

    Attributes
    ----------
    answers : ndarray, shape (k,)
        The projected 2-way marginal answers (the image of ``moments``).
    moments : ndarray, shape (D+1, D+1)
        The moment matrix ``Y = [[1, mu^T], [mu, P]]`` found (the certificate that ``answers``
        lie in L).
    distance : float
        ``||answers - y||_2``.
    relaxation : str
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
        """The projection and its solver statistics as plain JSON-serializable values."""
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

    ``min ||cells(Y) - y||_2`` over the moment matrices Y of L (module docstring): polynomial in
    the number of attributes, never touching the ``prod(sizes)`` universe. Guarantee:
    ``K_Q ⊆ L``, so the true answers are feasible and the projection's distance to them is at
    most that of ``y`` (projection onto a convex set containing the point); the error bound of
    seed 000, Theorem 8, holds with ``l*(L)`` in place of ``l*(K_Q)``.

    Two solvers:

    - ``"admm"`` (:mod:`projmech.bodies.relaxation_admm`; relaxations ``"sdp+local"`` and
      ``"sdp"``): closed-form ADMM steps in orthogonal contrast coordinates. It returns a point
      of L (feasible by construction, up to rounding) whose relative suboptimality
      ``(||answers - y||^2 - min) / ||answers - y||^2`` is certified below ``tol`` by a
      Lagrangian lower bound; then ``||answers - exact projection|| <= sqrt(tol) * distance``.
      ``d = 150`` binary attributes take about 0.1 s, ``d = 500`` about 8 s (README).
    - a CVXPY solver name (``"SCS"``, ``"CLARABEL"``, ...): the reference model, one matrix
      variable, a handful of vectorized constraints; trusted when its status is ``optimal``.

    Parameters
    ----------
    domain : Domain
        Every attribute has at least 2 values; at least 2 attributes.
    y : array_like, shape (k,)
        Answers in the layout of ``marginals(domain, 2)``.
    relaxation : {"sdp+local", "sdp", "local"}
    solver : str
        ``"auto"``: ``"admm"`` for the semidefinite relaxations, SCS for ``"local"``.
    solver_options : dict, optional
        Options of a CVXPY solver (none for ``"admm"``, which takes ``tol``, ``max_iterations``).
    encoding : {"auto", "binary", "one-hot"}
        Of the returned moment matrix; ``"auto"`` is binary when every attribute has 2 values.
    tol : float
        The certified relative gap at which ADMM stops (default 1e-4: the returned answers are
        then within ``0.01 * distance`` of the exact projection, far below the noise that
        ``distance`` mostly consists of). CVXPY solvers use their own tolerances.
    max_iterations : int
        ADMM iterations before giving up with :class:`RelaxationError`.
    callback : callable, optional
        ``callback(iteration, gap)`` at every certificate of ADMM (every 10 iterations), with
        its relative gap (:class:`~projmech.solve.ProgressBar` draws a bar).
    feasibility_tol : float, optional
        The largest constraint violation a returned point may have: default
        ``ADMM_FEASIBILITY_TOL`` (1e-9) for ADMM, whose point is feasible by construction, and
        ``CVXPY_FEASIBILITY_TOL`` (1e-4, SCS's default accuracy) for a CVXPY solver.

    Every point passes one final check before it is returned, whatever solver produced it
    (:func:`_check_relaxation`): the answers are recomputed from the returned moment matrix, its
    constraint violation must be at most ``feasibility_tol``, and for ADMM the relative gap is
    recomputed from the returned answers and the solver's Lagrangian lower bound.

    Raises
    ------
    ValueError
        On a ``y`` of the wrong length or with NaN, an unknown relaxation, solver or encoding, a
        non-positive ``tol``, ``max_iterations`` or ``feasibility_tol``; before any solve.
    RelaxationError
        If the solver does not report an optimal solution (``optimal_inaccurate`` included),
        ADMM does not certify ``tol`` within ``max_iterations`` (the best point is attached as
        ``best``), or the returned point fails the final check (``Status.REJECTED``).
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
    return result


def check_solver(solver: Any, relaxation: str) -> str:
    """The solver :func:`project_to_relaxation` runs for ``solver`` on ``relaxation`` (``"auto"``
    resolved: ADMM for the semidefinite relaxations, SCS for ``"local"``); a TypeError or
    ValueError naming it when it cannot."""
    if not isinstance(solver, str):
        raise TypeError(f"solver: expected a string, got {type(solver).__name__}")
    if solver == "auto":
        solver = "SCS" if relaxation == "local" else "admm"
    if solver != "admm" and solver.upper() not in _installed_solvers():
        raise ValueError(f"solver: expected 'auto', 'admm' or an installed CVXPY solver {_installed_solvers()}, got {solver!r}")
    if solver == "admm" and relaxation == "local":
        raise ValueError("solver: 'admm' projects onto the semidefinite relaxations; use a CVXPY solver for 'local'")
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
    """The support function ``h_L(g) = max {<g, cells(Y)> : Y in L}`` of the relaxation in many
    directions (seed 000, Definition 5, with L in place of K_Q).

    Attributes
    ----------
    values : ndarray, shape (s,)
        ``<g, cells(Y_g)>`` at the solver's maximizer ``Y_g`` (symmetrized), one per direction.
    upper_bounds : ndarray, shape (s,)
        Certified ``h_L(g) <= upper_bounds``, whatever the solver's accuracy: weak duality with
        the solver's multipliers (see :func:`relaxation_support`). The side that matters for the
        error bound of seed 000, Theorem 8, which uses ``l*(L)`` as an upper bound.
    relaxation : str
    solver : str
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

    For every ``Y`` in L, ``A vec Y = b`` and ``cells vec Y >= 0`` (local) give
    ``<objective, vec Y> <= b.lam + <Z, Y>`` with ``Z = sym(objective - A^T lam + cells^T nu)``, and
    ``<Z, Y>`` is bounded over L: by ``max(lambda_max(Z), 0) trace(Y)`` where ``Y`` is PSD
    (``trace Y = 1 + sum(mu) <= 1 + #attributes``), by ``sum(max(Z, 0))`` under the local
    constraints (every entry of ``Y`` is then in ``[0, 1]``), and by ``sum |Z|`` under the SDP
    (``|Y_ij| <= sqrt(Y_ii Y_jj) <= 1``). Valid for any multipliers; tight when they are optimal.
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

    ``h_L(g) = max <g, cells(Y)>`` over the moment matrices ``Y`` of L (module docstring): a
    linear SDP (``"sdp"``, ``"sdp+local"``) or LP (``"local"``) over the same CVXPY model of L as
    :func:`project_to_relaxation`. The problem is built once with the direction as a
    ``cp.Parameter``; it is DPP, so CVXPY compiles it on the first solve and only substitutes the
    parameter afterwards (one solve per direction, about 1-10 ms for d <= 10 with Clarabel).

    Since ``K_Q ⊆ L``, ``h_{K_Q}(g) <= h_L(g)`` for every ``g`` (seed 000, property 3 of the
    support function), so ``l*(K_Q) <= l*(L)``.

    Parameters
    ----------
    domain : Domain
        Every attribute has at least 2 values; at least 2 attributes.
    directions : array_like, shape (s, k) or (k,)
        Directions in the answer space of ``marginals(domain, 2)`` (``k`` queries); a 1-d array
        is one direction (``s = 1``).
    relaxation : {"sdp+local", "sdp", "local"}
    solver, solver_options
        An installed CVXPY solver and its options. Default: Clarabel (interior point) with
        :data:`SUPPORT_CLARABEL_OPTIONS`, whose values agree with their certified upper bounds to
        within 4.1e-5 for d <= 10 (values about 1-25); a first-order solver such as SCS can be off by its
        tolerance in either direction (its values can fall below ``h_{K_Q}``).
    encoding : {"auto", "binary", "one-hot"}
    return_moments : bool
        Keep the maximizer of each direction in :attr:`RelaxationSupport.moments`.
    retry, retry_options
        Whether a direction whose solve ends in a status other than ``optimal`` is solved once
        more, with ``retry_options`` (default: :data:`SUPPORT_CLARABEL_RETRY_OPTIONS` for
        Clarabel, ``solver_options`` otherwise). Interior-point solvers occasionally stall just
        above their tolerances on these degenerate problems (the maximizer is typically a
        low-rank moment matrix with many zero cells); the count is reported in
        :attr:`RelaxationSupport.retries`, and the values are certified either way.

    Returns
    -------
    RelaxationSupport
        Values, certified upper bounds, the largest constraint violation and duality gap.

    Raises
    ------
    RelaxationError
        If the solver fails, or reports anything but ``optimal`` (``optimal_inaccurate``
        included) for a direction (after the retry, if any); no value is returned then.
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
