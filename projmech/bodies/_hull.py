"""Euclidean projection onto K_Q = conv(columns of F) (:cite:p:`NTZ13`), by CVXPY or the active-set
solver; no solver's output is trusted: its witness is certified by its Frank–Wolfe gap
(:doc:`/theory/projection`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from .._threads import one_blas_thread
from ..solve import (
    Attempt,
    Callback,
    Outcome,
    SolveStats,
    Status,
    check_callback,
    record_total_time,
    solve_in_order,
    status_from_cvxpy,
)
from ..validation import check_positive_int, check_positive_number, check_real_array
from ..workloads import Workload, as_query_matrix
from ._active_set import DEFAULT_MAX_ITERATIONS, active_set_projection
from ._hull_result import ProjectionError, ProjectionResult, _check_projection, frank_wolfe_gap
from ._hull_solvers import (
    ACTIVE_SET_BYTES_PER_ENTRY,
    CVXPY_BYTES_PER_ENTRY,
    FAST,
    HULL_BYTES_PER_ELEMENT,
    MODELLED_SOLVERS,
    SOLVERS,
    _fitting,
    auto_solver_order,
    check_solver,
    memory_blocker,
    projection_memory,
    solver_memory,
)
from ._solvers import installed_solvers

__all__ = ["ProjectionResult", "ProjectionError", "project_to_hull", "frank_wolfe_gap", "SOLVERS",
           "DEFAULT_TOL", "NOISE_TOL", "MODELLED_SOLVERS", "check_solver", "auto_solver_order", "solver_memory",
           "projection_memory", "memory_blocker", "HULL_BYTES_PER_ELEMENT", "ACTIVE_SET_BYTES_PER_ENTRY",
           "CVXPY_BYTES_PER_ENTRY"]

#: Default certified tolerance of :func:`project_to_hull` without a noise level (see its ``tol``).
DEFAULT_TOL = 1e-8

#: Default tolerance given the noise level ``sigma``, relative to ``(k/2) sigma^2``: the answers are
#: then within about 1 % of the noise of the exact projection (:doc:`/theory/projection`).
NOISE_TOL = 1e-4

#: Least ``scale`` of the tolerance: as ``sigma -> 0`` (nearly noiseless answers) the threshold
#: would fall below the rounding error of the gap itself (about 1e-16), which no solver meets.
_SCALE_FLOOR = 1e-8

#: Per-solver settings: tight, since the certificate is checked afterwards and a loose solve
#: would only be rejected. Read-only: each solve copies its solver's entry.
_SOLVER_OPTIONS: MappingProxyType[str, MappingProxyType[str, Any]] = MappingProxyType({
    name: MappingProxyType(options) for name, options in {
        "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 500},
        "ECOS": {"abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "max_iters": 500},
        "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 20_000, "polishing": True},
        "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
    }.items()
})


def _as_matrix(F: Any) -> np.ndarray | sp.csr_array:
    return F.matrix if isinstance(F, Workload) else as_query_matrix(F, "F")


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


@record_total_time
def project_to_hull(
    F: Workload | np.ndarray | sp.sparray,
    y: Any,
    *,
    solver: str = "auto",
    tol: float | None = None,
    solver_options: dict[str, Any] | None = None,
    noise_scale: float | None = None,
    warm_start: ProjectionResult | np.ndarray | sp.sparray | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    callback: Callback | None = None,
) -> ProjectionResult:
    """Project ``y`` onto K_Q = conv(columns of F) in the Euclidean norm, with a certified gap.

    The projection mechanism's step (:cite:p:`NTZ13`); a failing solver hands over to the next
    (:doc:`/theory/projection`).

    Parameters
    ----------
    F : Workload, ndarray or scipy sparse matrix, shape (k, m)
        The queries; an implicit workload needs the ``"fast"`` solver.
    y : array_like, shape (k,)
        The point to project (typically noisy answers).
    solver : {"auto", "fast", "CLARABEL", "ECOS", "OSQP", "SCS"}
        ``"fast"``: the active-set solver on products with F (a sparse witness); a CVXPY name solves
        over the explicit matrix; ``"auto"``: those that fit, fastest estimate first, each the fallback
        of the one before.
    tol : float, optional
        The witness's gap must be ``<= tol * max(f_low, (k/2) noise_scale^2)``, ``f_low`` the
        certified lower bound (default ``NOISE_TOL`` with ``noise_scale``, else ``DEFAULT_TOL``).
    solver_options : dict, optional
        CVXPY settings over the tight defaults; with ``solver="auto"``, keyed by solver name.
    noise_scale : float, optional
        The standard deviation of the noise in ``y``: the scale of ``tol``.
    warm_start : ProjectionResult or array_like, optional
        A previous witness (non-negative weights over the universe) for the ``"fast"`` solver.
    max_iterations : int
        Outer iterations (gradients over the universe) of the ``"fast"`` solver.
    callback : callable, optional
        ``callback(iteration, gap)`` after each outer iteration of the ``"fast"`` solver.

    Returns
    -------
    ProjectionResult

    Raises
    ------
    ProjectionError
        If no solver produced a certified projection (the best feasible witness as ``best``).

    Examples
    --------
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), way=2, implicit=True)
    >>> y = workload.answer(np.full(8, 1 / 8)) + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> result = pm.project_to_hull(workload, y, noise_scale=0.05)
    >>> result.stats.solver, str(result.stats.status), result.stats.gap <= result.stats.tolerance
    ('fast', 'optimal', True)
    """
    if isinstance(F, Workload):
        workload: Workload | None = F
        matrix = None if F.is_implicit else _as_matrix(F)
        k, m = F.shape
    else:
        workload, matrix = None, _as_matrix(F)
        k, m = matrix.shape
    point = check_real_array("y", y, finite=False)
    if point.shape != (k,):
        raise ValueError(f"y: expected shape ({k},) to match F's {k} rows, got {point.shape}")
    if not np.all(np.isfinite(point)):
        raise ValueError("y: contains NaN or infinite entries")
    if noise_scale is not None:
        noise_scale = check_positive_number("noise_scale", noise_scale)
    tol = check_positive_number("tol", (DEFAULT_TOL if noise_scale is None else NOISE_TOL) if tol is None else tol)
    max_iterations = check_positive_int("max_iterations", max_iterations)
    callback = check_callback(callback)
    # The workload's own products (F w, F^T r) for the fast solver and for the final check.
    operator = workload if workload is not None else Workload(matrix)
    order = _solver_order(solver, operator)
    warm = None if warm_start is None else _warm_support(warm_start, m)
    if warm is not None and FAST not in order:
        raise ValueError(f"warm_start: only the 'fast' solver takes a warm start, not {solver!r}")
    cvxpy_order = [name for name in order if name != FAST]
    if solver_options is not None and not cvxpy_order:
        raise ValueError("solver_options: the 'fast' solver takes no CVXPY options (see max_iterations)")
    per_solver = _options_by_solver(solver_options, cvxpy_order, auto=solver == "auto")
    scale = 1.0 if noise_scale is None else max(0.5 * k * noise_scale**2, _SCALE_FLOOR)

    def threshold(objective_lower: float) -> float:
        return tol * max(objective_lower, scale)

    def attempt(name: str) -> Callable[[], Outcome[_Draft]]:
        if name == FAST:
            return lambda: _solve_fast(operator, point, threshold, warm, max_iterations, callback)
        options = {**_SOLVER_OPTIONS[name], **per_solver.get(name, {})}
        assert matrix is not None  # _solver_order offers CVXPY solvers only with the explicit matrix
        return lambda: _solve_cvxpy(matrix, operator, point, name, options, threshold)

    result, _, _ = solve_in_order([(name, attempt(name)) for name in order], ProjectionError,
                                  "projection onto K_Q failed: no solver produced a certified solution", _result)
    return result


@dataclass(frozen=True)
class _Draft:
    """A feasible witness with what the final check recomputed from it."""

    weights: np.ndarray | sp.csr_array
    answers: np.ndarray
    distance: float
    gap: float
    tolerance: float
    raw_feasibility_error: float = 0.0
    iterations: int | None = None
    blas_threads: int | None = None


def _result(draft: _Draft, attempt: Attempt, attempts: tuple[Attempt, ...]) -> ProjectionResult:
    """The one construction of a :class:`ProjectionResult` (returned, or an error's ``best``)."""
    return ProjectionResult(
        answers=draft.answers,
        weights=draft.weights,
        distance=draft.distance,
        raw_feasibility_error=draft.raw_feasibility_error,
        stats=SolveStats.from_attempt(attempt, attempts, iterations=draft.iterations, gap=draft.gap,
                                      tolerance=draft.tolerance, blas_threads=draft.blas_threads),
    )


def _solve_fast(operator: Workload, y: np.ndarray, threshold: Callable[[float], float],
                warm: tuple[np.ndarray, np.ndarray] | None, max_iterations: int,
                callback: Callback | None) -> Outcome[_Draft]:
    """The active-set solver's witness, judged by the final check. On one BLAS thread: its dense
    kernels are small, and its time and steps then do not depend on the machine's threads."""
    with one_blas_thread():
        outcome = active_set_projection(operator, y, threshold, warm_start=warm, max_iterations=max_iterations,
                                        callback=callback)
    m = operator.universe_size
    weights = sp.csr_array(sp.coo_array((outcome.weights, (outcome.support,)), shape=(m,)))
    stopped = None if outcome.converged else f"stopped after {outcome.iterations} iterations"
    return _judge(operator, y, weights, threshold, answers=outcome.answers, iterations=outcome.iterations,
                  stopped=stopped, blas_threads=1)


def _solve_once(matrix: np.ndarray | sp.csr_array, y: np.ndarray, solver: str,
                options: dict[str, Any]) -> tuple[np.ndarray | None, str]:
    """The CVXPY solver's raw witness (None without one) and its status."""
    import cvxpy as cp

    w = cp.Variable(matrix.shape[1], nonneg=True)
    # Same minimizer either way. ECOS only knows cones, and certifies a far smaller gap on
    # ||F w - y||_2 than on the squared norm rewritten as a rotated cone.
    residual = matrix @ w - y
    objective = cp.norm(residual, 2) if solver == "ECOS" else cp.sum_squares(residual)
    problem = cp.Problem(cp.Minimize(objective), [cp.sum(w) == 1])
    with warnings.catch_warnings():
        # CVXPY warns on inaccurate solutions; the status is recorded in the attempts
        # and the certificate decides, so the warning would only be noise.
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver=solver, **options)
    return (None if w.value is None else np.asarray(w.value, dtype=float)), str(problem.status)


def _solve_cvxpy(matrix: np.ndarray | sp.csr_array, operator: Workload, y: np.ndarray, name: str,
                 options: dict[str, Any], threshold: Callable[[float], float]) -> Outcome[_Draft]:
    """A CVXPY solver's witness, clipped at 0, renormalized and judged by the final check."""
    import cvxpy as cp

    try:
        raw, said = _solve_once(matrix, y, name, options)
    except cp.error.SolverError as error:
        return Outcome(Status.SOLVER_ERROR, detail=str(error))
    status, backend = status_from_cvxpy(said), f"backend status {said}"
    if status not in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE):
        return Outcome(status, detail=backend)
    if raw is None:
        return Outcome(Status.SOLVER_ERROR, detail=f"{backend}, no solution")
    if not np.all(np.isfinite(raw)):
        return Outcome(Status.REJECTED, detail=f"{backend}, non-finite solution")
    raw_error = max(float(-raw.min()), abs(float(raw.sum()) - 1.0), 0.0)
    weights = np.clip(raw, 0.0, None)
    total = weights.sum()
    if total <= 0:
        return Outcome(Status.REJECTED, detail=f"{backend}, solution has no positive mass")
    # An inaccurate solve is accepted on its certificate; the backend's doubt stays in the detail.
    return _judge(operator, y, weights / total, threshold, raw_error=raw_error,
                  note="" if status is Status.OPTIMAL else backend)


def _judge(operator: Workload, y: np.ndarray, weights: np.ndarray | sp.csr_array,
           threshold: Callable[[float], float], *, answers: np.ndarray | None = None, raw_error: float = 0.0,
           iterations: int | None = None, note: str = "", stopped: str | None = None,
           blas_threads: int | None = None) -> Outcome[_Draft]:
    """A solver's witness through the final check: optimal when its gap is at most
    ``threshold(objective - gap)``, else a candidate for the error's ``best`` if feasible."""
    certificate = _check_projection(operator, y, weights, answers)
    prefix = "".join(f"{part}, " for part in (note, stopped) if part)
    if isinstance(certificate, str):
        return Outcome(Status.REJECTED, detail=prefix + certificate)
    answers, objective, gap = certificate
    accepted = float(threshold(objective - gap))
    draft = _Draft(weights=weights, answers=answers, distance=float(np.sqrt(2.0 * objective)), gap=gap,
                   tolerance=accepted, raw_feasibility_error=raw_error, iterations=iterations,
                   blas_threads=blas_threads)
    met = gap <= accepted
    detail = f"{prefix}certified gap {gap:.2e} {'<=' if met else '>'} {accepted:.2e}"
    if met and stopped is None:
        return Outcome(Status.OPTIMAL, draft, detail)
    return Outcome(Status.REJECTED if stopped is None else Status.ITERATION_LIMIT, draft, detail, score=gap)



def _solver_order(solver: str, workload: Workload) -> list[str]:
    """The solvers to try, in order; a ValueError, before anything over the universe is
    allocated, when ``solver`` cannot run on ``workload`` or fit in memory."""
    solver = check_solver(solver)
    explicit = not workload.is_implicit
    if solver == "auto":
        order = auto_solver_order(workload)
        if order:  # those that fit; none fitting is refused here, naming what it would hold
            _refuse_memory(workload, solver)
            order = _fitting(order, workload)
        if not order:
            raise ValueError(
                "solver: no solver applies: the workload is implicit without rmatvec/columns, "
                f"and none of {list(SOLVERS)} is installed" if not explicit
                else f"solver: none of {list(SOLVERS)} is installed"
            )
        return order
    if solver == FAST:
        if not workload.has_adjoint:
            raise ValueError("solver: 'fast' needs the workload's rmatvec and columns (see Workload.implicit)")
        _refuse_memory(workload, solver)
        return [FAST]
    installed = installed_solvers()
    if solver not in installed:
        raise ValueError(f"solver: {solver} is not installed (installed: {sorted(installed)})")
    if not explicit:
        raise ValueError(f"solver: {solver} needs the explicit matrix; the workload is implicit (use 'fast')")
    _refuse_memory(workload, solver)
    return [solver]


def _refuse_memory(workload: Workload, solver: str) -> None:
    """A ValueError naming ``F`` where projecting with ``solver`` would not fit in memory."""
    why = memory_blocker(workload, solver)
    if why is None:
        return
    fixes = ["fewer or coarser attributes"]
    if solver != "auto" and memory_blocker(workload) is None:
        fixes.append("solver='auto' (which runs only the solvers that fit)")
    if workload.marginal_way == 2:
        fixes.append("project_to_relaxation (the relaxation L of 2-way marginals, whose size does not grow with the "
                     "universe)")
    raise ValueError(f"F: {why}; use {', '.join(fixes[:-1])} or {fixes[-1]}" if len(fixes) > 1
                     else f"F: {why}; use {fixes[0]}")


def _warm_support(warm_start: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The support and normalized weights of a warm start, validated against the universe size."""
    weights = warm_start.weights if isinstance(warm_start, ProjectionResult) else warm_start
    if issparse(weights):
        if weights.shape not in ((m,), (1, m), (m, 1)):
            raise ValueError(f"warm_start: expected {m} weights, got shape {weights.shape}")
        coo = sp.coo_array(weights.reshape((m,)))
        support, values = np.asarray(coo.coords[0], dtype=np.int64), np.asarray(coo.data, dtype=float)
    else:
        dense = np.asarray(weights, dtype=float)
        if dense.shape != (m,):
            raise ValueError(f"warm_start: expected {m} weights, got shape {dense.shape}")
        support = np.flatnonzero(dense)
        values = dense[support]
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("warm_start: weights must be finite and non-negative")
    positive = values > 0
    support, values = support[positive], values[positive]
    if values.size == 0:
        raise ValueError("warm_start: weights have no positive mass")
    order = np.argsort(support)
    return support[order], values[order] / values.sum()
