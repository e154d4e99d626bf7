"""Euclidean projection onto K_Q = conv(columns of F), compiled as a CVXPY problem.

The projection of noisy answers ``y`` is ``F w*`` where ``w*`` solves

    minimize  (1/2) ||F w - y||_2^2   subject to  w >= 0,  sum(w) = 1,

(seed 000, Algorithm 1, step 2; seed 001, eq. 42). The solver's raw output is never trusted:
its ``w`` is made exactly feasible (clipped at 0 and renormalized) and the result is certified by
the Frank–Wolfe duality gap of that feasible point, which bounds its suboptimality whatever
solver produced it.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..workloads import Workload, as_query_matrix

__all__ = ["ProjectionResult", "ProjectionError", "project_to_hull", "frank_wolfe_gap", "SOLVERS"]

#: CVXPY solvers ``project_to_hull`` accepts by name.
SOLVERS: tuple[str, ...] = ("CLARABEL", "ECOS", "OSQP", "SCS")

#: Universe size from which ``solver="auto"`` starts with SCS rather than Clarabel. Measured on
#: noisy 2-way marginals at m = 4096 (benchmarks/solvers.py): SCS takes 0.2-0.6 s, Clarabel
#: 2.1-2.5 s. SCS does not always reach the certified tolerance there (gap ~3e-7 on some
#: instances); then the fallback to Clarabel costs SCS's 0.6 s, still less than Clarabel's time
#: saved on the instances SCS certifies. Below this size Clarabel is fastest and certifies.
_LARGE_UNIVERSE = 2048


def _auto_order(m: int) -> list[str]:
    if m >= _LARGE_UNIVERSE:
        return ["SCS", "CLARABEL", "ECOS", "OSQP"]
    return ["CLARABEL", "SCS", "ECOS", "OSQP"]

#: Default certified tolerance of :func:`project_to_hull` (see its ``tol``).
DEFAULT_TOL = 1e-8

#: Per-solver settings: tight tolerances, because the certificate below is checked afterwards
#: and a loose solve would only be rejected.
_SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 500},
    "ECOS": {"abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "max_iters": 500},
    "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 20_000, "polishing": True},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}


@dataclass(frozen=True)
class ProjectionResult:
    """A certified projection onto K_Q.

    Attributes
    ----------
    answers : ndarray, shape (k,)
        ``F @ weights``: a point of K_Q by construction.
    weights : ndarray, shape (m,)
        The witness distribution over the universe: ``weights >= 0``, ``sum(weights) == 1``
        (up to floating-point rounding of the renormalization).
    distance : float
        ``||answers - y||_2``.
    gap : float
        Frank–Wolfe duality gap of ``weights``: a certified upper bound on
        ``(1/2)||answers - y||^2 - (1/2) dist(y, K_Q)^2``. It also bounds the distance to the
        exact projection: ``||answers - Pi(y)||_2 <= sqrt(2 gap)``.
    tolerance : float
        The acceptance threshold the gap was checked against.
    solver, status : str
        The CVXPY solver that produced ``weights`` and the status it reported.
    solve_time : float
        Wall-clock seconds of the accepted attempt, model building included.
    raw_feasibility_error : float
        ``max(max(-w_raw), |sum(w_raw) - 1|)`` of the solver's own output before cleaning.
    attempts : tuple of (solver, outcome)
        Every solver tried, in order, with why it was rejected or ``"accepted"``.
    """

    answers: np.ndarray
    weights: np.ndarray
    distance: float
    gap: float
    tolerance: float
    solver: str
    status: str
    solve_time: float
    raw_feasibility_error: float
    attempts: tuple[tuple[str, str], ...] = field(default=())

    @property
    def objective(self) -> float:
        """``(1/2) ||answers - y||_2^2``, the objective the gap refers to."""
        return 0.5 * self.distance**2

    def summary(self) -> dict[str, Any]:
        """Solver statistics as plain JSON-serializable values."""
        return {
            "solver": self.solver,
            "status": self.status,
            "distance": self.distance,
            "objective": self.objective,
            "gap": self.gap,
            "tolerance": self.tolerance,
            "solve_time_s": self.solve_time,
            "raw_feasibility_error": self.raw_feasibility_error,
            "support_size": int(np.count_nonzero(self.weights > 0)),
            "attempts": [list(a) for a in self.attempts],
        }


class ProjectionError(RuntimeError):
    """No solver produced a projection that passed the feasibility and optimality checks."""

    def __init__(self, message: str, attempts: tuple[tuple[str, str], ...]) -> None:
        details = "; ".join(f"{s}: {o}" for s, o in attempts)
        super().__init__(f"{message} ({details})" if attempts else message)
        self.attempts = attempts


def frank_wolfe_gap(F: Any, y: np.ndarray, weights: np.ndarray) -> float:
    """Frank–Wolfe gap of a simplex point ``w`` for ``f(w) = (1/2)||F w - y||^2``.

    With ``g = F^T (F w - y)``, ``gap = g.w - min_j g_j``. By convexity, for the optimum ``w*``,
    ``f(w) - f(w*) <= g.(w - w*) <= g.w - min_j g_j``, so the gap certifies suboptimality.
    """
    residual = np.asarray(F @ weights).ravel() - y
    gradient = np.asarray(F.T @ residual).ravel()
    # w.(g - min g) rather than g.w - min g: the difference of two numbers of size ||g||_inf
    # would lose the tiny gaps of accurate solutions to cancellation.
    return float(weights @ (gradient - gradient.min()))


def _as_matrix(F: Any) -> np.ndarray | sp.csr_array:
    return F.matrix if isinstance(F, Workload) else as_query_matrix(F, "F")


def _solve_once(F: Any, y: np.ndarray, solver: str, options: dict[str, Any]) -> tuple[np.ndarray | None, str]:
    m = F.shape[1]
    w = cp.Variable(m, nonneg=True)
    # Same minimizer either way. Clarabel, OSQP and SCS take the quadratic objective natively;
    # ECOS only knows cones, and reaches a far smaller certified gap on ||F w - y||_2 than on
    # the squared norm rewritten as a rotated cone (measured: 1e-10 vs 1e-7 on 2-way marginals).
    residual = F @ w - y
    objective = cp.norm(residual, 2) if solver == "ECOS" else cp.sum_squares(residual)
    problem = cp.Problem(cp.Minimize(objective), [cp.sum(w) == 1])
    try:
        with warnings.catch_warnings():
            # CVXPY warns on inaccurate solutions; the status is recorded in the attempts
            # and the certificate decides, so the warning would only be noise.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=solver, **options)
    except cp.error.SolverError as error:
        return None, f"solver error: {error}"
    return (None if w.value is None else np.asarray(w.value, dtype=float)), str(problem.status)


def _options_by_solver(options: dict[str, Any] | None, order: list[str], auto: bool) -> dict[str, dict[str, Any]]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"solver_options: expected a dict, got {type(options).__name__}")
    if not auto:
        return {order[0]: options}
    unknown = [key for key in options if str(key).upper() not in SOLVERS or not isinstance(options[key], dict)]
    if unknown:
        raise ValueError(
            f"solver_options: with solver='auto' pass a dict keyed by solver name ({list(SOLVERS)}) "
            f"whose values are option dicts; got keys {unknown}"
        )
    return {str(key).upper(): value for key, value in options.items()}


def project_to_hull(
    F: Workload | np.ndarray | sp.sparray,
    y: Any,
    solver: str = "auto",
    tol: float = DEFAULT_TOL,
    solver_options: dict[str, Any] | None = None,
) -> ProjectionResult:
    """Project ``y`` onto K_Q = conv(columns of F) in the Euclidean norm.

    Parameters
    ----------
    F : Workload, ndarray or scipy sparse matrix, shape (k, m)
    y : array_like, shape (k,)
        The point to project (typically noisy answers).
    solver : {"auto", "CLARABEL", "ECOS", "OSQP", "SCS"}
        ``"auto"`` tries Clarabel, SCS, ECOS, OSQP (SCS first when ``m >= 2048``) and moves to
        the next one whenever a solver errors, reports a non-optimal status or fails the
        certificate; every attempt is recorded in the result.
    tol : float
        Acceptance threshold: the cleaned, exactly feasible witness must have a Frank–Wolfe gap
        ``<= tol * max(1, (1/2)||F w - y||^2)`` (absolute for small objectives, relative for
        large ones).
    solver_options : dict, optional
        Solver settings overriding the tight defaults: a flat dict for a named solver, or, with
        ``solver="auto"``, a dict keyed by solver name (``{"SCS": {"max_iters": 10_000}}``).

    Returns
    -------
    ProjectionResult

    Raises
    ------
    ValueError
        On non-finite or mis-shaped inputs, an unknown solver or ``tol <= 0``; before any solve.
    ProjectionError
        If no solver produced a certified projection; it carries every attempt's status.
    """
    matrix = _as_matrix(F)
    k, m = matrix.shape
    point = np.asarray(y, dtype=float)
    if point.shape != (k,):
        raise ValueError(f"y: expected shape ({k},) to match F's {k} rows, got {point.shape}")
    if not np.all(np.isfinite(point)):
        raise ValueError("y: contains NaN or infinite entries")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise TypeError(f"tol: expected a number, got {tol!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol: must be a positive finite number, got {tol!r}")
    installed = set(cp.installed_solvers())
    if solver == "auto":
        order = [s for s in _auto_order(m) if s in installed]
    else:
        name = str(solver).upper()
        if name not in SOLVERS:
            raise ValueError(f"solver: expected 'auto' or one of {list(SOLVERS)}, got {solver!r}")
        if name not in installed:
            raise ValueError(f"solver: {name} is not installed (installed: {sorted(installed)})")
        order = [name]
    if not order:
        raise ValueError(f"solver: none of {list(SOLVERS)} is installed")

    per_solver = _options_by_solver(solver_options, order, auto=solver == "auto")
    attempts: list[tuple[str, str]] = []
    for name in order:
        options = dict(_SOLVER_OPTIONS[name])
        options.update(per_solver.get(name, {}))
        start = time.perf_counter()
        raw, status = _solve_once(matrix, point, name, options)
        elapsed = time.perf_counter() - start
        if raw is None or status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            attempts.append((name, f"status {status}"))
            continue
        if not np.all(np.isfinite(raw)):
            attempts.append((name, f"status {status}, non-finite solution"))
            continue
        raw_error = max(float(-raw.min()), abs(float(raw.sum()) - 1.0), 0.0)
        weights = np.clip(raw, 0.0, None)
        total = weights.sum()
        if total <= 0:
            attempts.append((name, f"status {status}, solution has no positive mass"))
            continue
        weights /= total
        answers = np.asarray(matrix @ weights).ravel()
        distance = float(np.linalg.norm(answers - point))
        gap = frank_wolfe_gap(matrix, point, weights)
        threshold = tol * max(1.0, 0.5 * distance**2)
        if gap > threshold:
            attempts.append((name, f"status {status}, certified gap {gap:.2e} > {threshold:.2e}"))
            continue
        attempts.append((name, "accepted"))
        return ProjectionResult(
            answers=answers,
            weights=weights,
            distance=distance,
            gap=gap,
            tolerance=threshold,
            solver=name,
            status=status,
            solve_time=elapsed,
            raw_feasibility_error=raw_error,
            attempts=tuple(attempts),
        )
    raise ProjectionError("projection onto K_Q failed: no solver produced a certified solution", tuple(attempts))
