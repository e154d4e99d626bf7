"""Projection of noisy 2-way marginals onto the relaxation L (:doc:`/theory/relaxation`) by certified
ADMM or a CVXPY model; either's point passes one final check before it is returned."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data import Domain
from ..solve import (
    Attempt,
    Callback,
    Outcome,
    SolveResult,
    SolveStats,
    Status,
    check_callback,
    record_total_time,
    solve_in_order,
    status_from_cvxpy,
)
from ..validation import check_positive_int, check_positive_number, check_real_array
from ._relaxation_model import (
    MomentEncoding,
    RelaxationError,
    _cvxpy_body,
    _equalities,
    _violation,
    check_relaxation,
)
from ._solvers import installed_solvers

__all__ = ["RelaxationResult", "NegativeCellsWarning", "project_to_relaxation", "check_solver", "SOLVERS",
           "DEFAULT_TOL", "ADMM_FEASIBILITY_TOL", "CVXPY_FEASIBILITY_TOL"]

#: Default certified relative gap of the ADMM projection (see :func:`project_to_relaxation`).
DEFAULT_TOL = 1e-4

#: Largest constraint violation (``RelaxationResult.constraint_violation``) a returned point may
#: have by default. The ADMM's point is feasible by construction, so anything above rounding means
#: a broken construction; a CVXPY solver meets the constraints to its own tolerance (SCS's: 1e-4).
ADMM_FEASIBILITY_TOL = 1e-9
CVXPY_FEASIBILITY_TOL = 1e-4

#: The final check's tolerance on ``answers`` against ``cells(moments)`` recomputed from the
#: returned moment matrix: the cells are sums of up to four entries of size at most about 1.
_ANSWER_TOL = 1e-9

#: A relative gap below ``-_BOUND_SLACK`` means a lower bound above the objective of a feasible
#: point: an invalid certificate rather than rounding (about 1e-15 relative).
_BOUND_SLACK = 1e-9


class NegativeCellsWarning(UserWarning):
    """Answers projected onto a relaxation without the local constraints have negative cells.

    The semidefinite constraint alone (``relaxation="sdp"``) does not keep 2-way tables nonnegative;
    ``"sdp+local"`` (the default) does, and is no wider.

    Examples
    --------
    >>> import warnings
    >>> y = np.array([0.375, 0.375, 0.375, -0.125])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = pm.project_to_relaxation(pm.Domain(["a", "b"], [2, 2]), y, relaxation="sdp")
    >>> caught[0].category.__name__, round(float(result.answers.min()), 3)
    ('NegativeCellsWarning', -0.125)
    """


@dataclass(frozen=True, repr=False)
class RelaxationResult(SolveResult):
    """A projection onto the relaxation L, as :func:`project_to_relaxation` returns it.

    Parameters
    ----------
    answers : ndarray, shape (k,)
        The projected 2-way marginal answers (the image of ``moments``).
    moments : ndarray, shape (D+1, D+1)
        The moment matrix ``Y = [[1, mu^T], [mu, P]]``: the certificate that ``answers`` lie in L.
    distance : float
        ``||answers - y||_2``.
    relaxation : str
        The constraints of L, one of :data:`RELAXATIONS`.
    constraint_violation : float
        The largest violation of L's constraints in ``moments``.
    stats : SolveStats
        For ``"admm"``, ``stats.gap`` is the certified relative gap of ``distance**2`` (the exact
        projection is within ``sqrt(gap) * distance``); None for a CVXPY solver.

    Examples
    --------
    >>> result = pm.project_to_relaxation(pm.Domain(["a", "b", "c"], [2, 2, 2]), np.full(12, 0.3))
    >>> result.moments.shape, result.witness is None, result.summary()["body"]
    ((4, 4), True, 'relaxation/sdp+local')
    """

    answers: np.ndarray
    moments: np.ndarray
    distance: float
    relaxation: str
    constraint_violation: float
    stats: SolveStats

    #: A point of L need not be a mixture of universe elements: its certificate is ``moments``.
    witness = None

    def summary(self) -> dict[str, Any]:
        """The projection and its solver statistics as plain JSON-serializable values.

        Returns
        -------
        dict
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

    Polynomial in the number of attributes; ``K_Q ⊆ L``, so the error bound (:cite:p:`NTZ13`) holds
    with L's Gaussian width (:cite:p:`DNT15`) (:doc:`/theory/relaxation`).

    Parameters
    ----------
    domain : Domain
        At least 2 attributes, each with at least 2 values.
    y : array_like, shape (k,)
        Answers in the layout of ``marginals(domain, 2)``.
    relaxation : {"sdp+local", "sdp", "local"}
        The constraints of L on ``Y``: positive semidefinite, nonnegative cells, or both.
    solver : str
        ``"admm"`` (certified; semidefinite relaxations only), a CVXPY name (trusted when its status
        is ``optimal``), or ``"auto"``: ``"admm"``, or SCS for ``"local"``.
    solver_options : dict, optional
        Options of a CVXPY solver (none for ``"admm"``).
    encoding : {"auto", "binary", "one-hot"}
        Of the returned moment matrix; ``"auto"`` is binary when every attribute has 2 values.
    tol : float
        The certified relative gap at which ADMM stops (the answers within ``sqrt(tol) * distance``).
    max_iterations : int
        ADMM iterations before giving up with :class:`RelaxationError`.
    callback : callable, optional
        ``callback(iteration, gap)`` at every certificate of ADMM.
    feasibility_tol : float, optional
        The largest constraint violation a returned point may have.

    Returns
    -------
    RelaxationResult

    Raises
    ------
    RelaxationError
        If no point is certified (ADMM's best attached as ``best``) or it fails the final check.

    Warns
    -----
    NegativeCellsWarning
        When ``"sdp"`` returns cells below ``-feasibility_tol``.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> y = pm.marginals(domain, way=2).answer(np.full(8, 1 / 8)) + np.random.default_rng(0).normal(0, 0.05, 12)
    >>> result = pm.project_to_relaxation(domain, y)
    >>> str(result.stats.status), result.stats.gap <= 1e-4, bool(result.answers.min() >= 0)
    ('optimal', True, True)
    """
    check_relaxation(relaxation)
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
    """Warn when ``result`` has cells below ``-tolerance`` (post-processing of released answers)."""
    negative = result.answers < -tolerance
    count = int(np.count_nonzero(negative))
    if count:
        warnings.warn(
            f"{count} of {result.answers.size} projected cells are negative (minimum "
            f"{float(result.answers.min()):.3g}): relaxation={result.relaxation!r} lacks the local "
            "constraints; relaxation='sdp+local' (command line: --relaxation sdp+local) keeps every cell "
            "nonnegative", NegativeCellsWarning, stacklevel=4)  # past project_to_relaxation and its timer


#: The solvers of each relaxation besides ``"auto"``: ADMM solves only the semidefinite ones; ECOS
#: and OSQP take no semidefinite constraint, and OSQP and HiGHS fail on ``"local"``. Read by
#: :func:`check_solver` and the command line's ``--solver``.
SOLVERS: dict[str, tuple[str, ...]] = {
    "sdp+local": ("admm", "CLARABEL", "SCS"),
    "sdp": ("admm", "CLARABEL", "SCS"),
    "local": ("CLARABEL", "ECOS", "SCS"),
}


def check_solver(solver: Any, relaxation: str) -> str:
    """The solver :func:`project_to_relaxation` runs for ``solver`` on ``relaxation``, or an error naming it."""
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
    if solver != "admm" and solver.upper() not in installed_solvers():
        raise ValueError(f"solver: {solver!r} is not installed; installed CVXPY solvers: {installed_solvers()}")
    return solver


@dataclass(frozen=True)
class _Draft:
    """A point of L that passed the final check's feasibility part, with what the check recomputed."""

    answers: np.ndarray
    moments: np.ndarray
    violation: float
    gap: float | None = None
    tolerance: float | None = None
    iterations: int | None = None


def _project_by_admm(model: MomentEncoding, target: np.ndarray, relaxation: str, tol: float,
                     max_iterations: int, callback: Callback | None, feasibility_tol: float) -> Outcome[_Draft]:
    from ._relaxation_admm import admm_projection, one_hot_lift

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
    # tolerance, not its square.
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
    """The final check of a point of L from its moments alone: ``(defect, violation, gap)``, ``defect``
    None when the point is finite, feasible, has cells ``answers`` and (with a lower bound) gap within ``tol``."""
    from ._relaxation_admm import relative_gap

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
