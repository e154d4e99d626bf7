"""Euclidean projection onto K_Q = conv(columns of F): as a CVXPY problem, or by the active-set
solver of :mod:`projmech.bodies.active_set` that needs only products with F.

The projection of noisy answers ``y`` is ``F w*`` where ``w*`` solves

    minimize  (1/2) ||F w - y||_2^2   subject to  w >= 0,  sum(w) = 1,

the projection step of the projection mechanism (:cite:p:`NTZ13`). The solver's raw output is
never trusted: a CVXPY solver's ``w`` is made exactly feasible (clipped at 0 and renormalized),
and every witness passes one final check before it is returned (:func:`_check_projection`):
feasibility, the answers recomputed as ``F w`` through the workload's own products, and the
Frank–Wolfe duality gap of ``w`` (:cite:p:`Jag13`) from a fresh gradient over the whole
universe, which bounds its suboptimality whatever solver produced it. A witness that fails is a
failed attempt, like a solver error: the next solver is tried.

Every solver is held to the same rule, ``gap <= tol * max(f_low, scale)``, with ``f_low`` the
certified lower bound ``f(w) - gap`` on the optimum and ``scale = (k/2) sigma^2`` when the caller
gives the noise level ``sigma`` of ``y`` (else 1). Why this ties the solver's accuracy to the
noise, and the certificate's derivation, are in the theory page *Projection onto K_Q*
(``docs/theory/projection.md``).
"""

from __future__ import annotations

import math
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
    SolveError,
    SolveResult,
    SolveStats,
    Status,
    check_callback,
    record_total_time,
    solve_in_order,
    status_from_cvxpy,
)
from ..validation import check_positive_int, check_positive_number, check_real_array, format_count
from ..workloads import Workload, as_query_matrix
from .active_set import DEFAULT_MAX_ITERATIONS, active_set_projection
from .cost import WorkloadSize, by_estimated_time
from .memory import memory_limit, memory_shortfall
from .solvers import installed_solvers

__all__ = ["ProjectionResult", "ProjectionError", "project_to_hull", "frank_wolfe_gap", "SOLVERS",
           "DEFAULT_TOL", "NOISE_TOL", "MODELLED_SOLVERS", "check_solver", "auto_solver_order", "solver_memory",
           "projection_memory", "memory_blocker", "HULL_BYTES_PER_ELEMENT", "ACTIVE_SET_BYTES_PER_ENTRY",
           "CVXPY_BYTES_PER_ENTRY"]

#: CVXPY solvers ``project_to_hull`` accepts by name.
SOLVERS: tuple[str, ...] = ("CLARABEL", "ECOS", "OSQP", "SCS")

#: The active-set solver on products with F (:mod:`projmech.bodies.active_set`).
FAST = "fast"

#: The CVXPY solvers ``solver="auto"`` orders by :mod:`~projmech.bodies.cost` with ``"fast"``;
#: the others are never faster in ``benchmarks/solvers.py`` and follow them as fallbacks.
MODELLED_SOLVERS: tuple[str, ...] = ("CLARABEL", "SCS")

#: The memory model of a projection onto K_Q (:func:`solver_memory`), from the peak resident
#: memory measured beyond the arrays the caller holds. Bytes per universe element that every
#: solver holds: the dense witness, gradients and products over the universe (31-36 measured
#: for the active-set solver on 1- and 2-way marginals of 22 binary attributes; 0.76 GB for
#: 2^24 elements).
HULL_BYTES_PER_ELEMENT = 48

#: Bytes per entry of the active-set solver's columns: ``k`` answers for each of the at most
#: ``rank(F) + 1`` elements of its support (Carathéodory), with the working copies of its
#: minimum-norm-point steps (37-41 measured for identity and prefix queries over 4,096 elements,
#: whose support fills the universe).
ACTIVE_SET_BYTES_PER_ENTRY = 48

#: Bytes per stored entry of the explicit matrix that a CVXPY solver holds: CVXPY's
#: canonicalization copies the matrix, and the solver builds its own system from the copy
#: (220-290 measured for Clarabel, ECOS and SCS on 2-way marginals of 14 and 15 binary attributes).
CVXPY_BYTES_PER_ENTRY = 300

#: Default certified tolerance of :func:`project_to_hull` without a noise level (see its ``tol``).
DEFAULT_TOL = 1e-8

#: Default tolerance given the noise level ``sigma``, relative to ``(k/2) sigma^2``: the answers are
#: then within about 1 % of the noise (RMS per query) of the exact projection
#: (``docs/theory/projection.md``, *A tolerance tied to the noise*).
NOISE_TOL = 1e-4

#: Least ``scale`` of the tolerance: as ``sigma -> 0`` (nearly noiseless answers) the threshold
#: would fall below the rounding error of the gap itself (about 1e-16), which no solver meets.
_SCALE_FLOOR = 1e-8

#: The final check's tolerance on ``|sum(w) - 1|``. Every solver's witness is normalized by its
#: sum, so each weight carries a relative rounding error of about eps and the sum of up to 2^22
#: of them (pairwise) about ``22 eps``: 1e-10 leaves four orders of magnitude of slack, and
#: still rejects any witness that is not a distribution (the audit's empty one summed to 0).
_SUM_TOL = 1e-10

#: The final check's tolerance on the solver's own answers against ``F w`` recomputed through
#: the workload's products, relative to ``max_i (|F| w)_i`` (which bounds the rounding error of
#: either sum, about eps times the number of terms, times that).
_ANSWER_RTOL = 1e-9

#: Per-solver settings: tight tolerances, because the certificate below is checked afterwards
#: and a loose solve would only be rejected. Read-only: each solve copies its solver's entry.
_SOLVER_OPTIONS: MappingProxyType[str, MappingProxyType[str, Any]] = MappingProxyType({
    name: MappingProxyType(options) for name, options in {
        "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 500},
        "ECOS": {"abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "max_iters": 500},
        "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 20_000, "polishing": True},
        "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
    }.items()
})


@dataclass(frozen=True, repr=False)
class ProjectionResult(SolveResult):
    """A certified projection onto ``K_Q``, as :func:`project_to_hull` returns it.

    Parameters
    ----------
    answers : ndarray, shape (k,)
        ``F @ weights``: a point of ``K_Q`` by construction.
    weights : ndarray or 1-d scipy.sparse.csr_array, shape (m,)
        The witness distribution over the universe (the certificate): ``weights >= 0``,
        ``sum(weights) == 1`` (up to floating-point rounding of the renormalization). Sparse from
        the ``"fast"`` solver, whose witness has at most ``rank(F) + 1`` positive entries.
    distance : float
        ``||answers - y||_2``.
    raw_feasibility_error : float
        ``max(max(-w_raw), |sum(w_raw) - 1|)`` of the solver's own output before cleaning.
    stats : SolveStats
        The solver (a CVXPY solver or ``"fast"``), status, seconds, iterations of ``"fast"``
        (gradients over the universe; None for CVXPY solvers) and every attempt. ``stats.gap`` is
        the Frank–Wolfe duality gap of ``weights``, absolute (``stats.relative_gap`` is False): a
        certified upper bound on ``(1/2)||answers - y||^2 - (1/2) dist(y, K_Q)^2``, which also
        bounds the distance to the exact projection, ``||answers - Pi(y)||_2 <= sqrt(2 gap)``;
        ``stats.tolerance`` is the threshold it was checked against.

    See Also
    --------
    projmech.bodies.RelaxationResult : A projection onto the relaxation L, with moments.
    synthetic_data : Rows rounded from the witness.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2)
    >>> truth = workload.answer(np.full(domain.size, 1 / domain.size))
    >>> y = truth + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> result = pm.project_to_hull(workload, y, solver="fast", noise_scale=0.05)
    >>> round(float(result.weights.sum()), 12), result.support.size <= workload.num_queries + 1
    (1.0, True)
    >>> distance = np.linalg.norm(workload.answer(result.weights) - y)
    >>> bool(np.sqrt(2 * result.stats.gap) <= 0.01 * max(distance, 0.05 * np.sqrt(12)))  # the tolerance rule
    True
    >>> result.summary()["body"], result.summary()["status"]
    ('hull', 'optimal')
    """

    answers: np.ndarray
    weights: np.ndarray | sp.csr_array
    distance: float
    raw_feasibility_error: float
    stats: SolveStats

    #: The moment matrix of a point of the relaxation L; a point of K_Q has the witness instead.
    moments = None

    @property
    def witness(self) -> np.ndarray | sp.csr_array:
        """The certificate of the :class:`~projmech.bodies.body.Body` protocol: ``weights``."""
        return self.weights

    @property
    def support(self) -> np.ndarray:
        """Universe indices of the witness's positive weights, increasing."""
        if issparse(self.weights):
            return np.asarray(self.weights.nonzero()[0], dtype=np.int64)
        return np.flatnonzero(self.weights > 0)

    @property
    def objective(self) -> float:
        """``(1/2) ||answers - y||_2^2``, the objective the gap refers to."""
        return 0.5 * self.distance**2

    def summary(self) -> dict[str, Any]:
        """The projection and its solver statistics as plain JSON-serializable values.

        Returns
        -------
        dict
            ``body`` (``"hull"``), ``distance``, ``objective``, ``raw_feasibility_error``,
            ``support_size`` and the entries of ``stats.summary()``.
        """
        return {
            "body": "hull",
            "distance": self.distance,
            "objective": self.objective,
            "raw_feasibility_error": self.raw_feasibility_error,
            "support_size": int(self.support.size),
            **self.stats.summary(),
        }

    def _description(self) -> str:
        return (f"onto K_Q: {self.answers.size} answers, witness on {self.support.size:,} of "
                f"{self.weights.shape[-1]:,} elements, distance {self.distance:.6g}")


class ProjectionError(SolveError):
    """No solver produced a projection that passed the feasibility and optimality checks.

    Raised by :func:`project_to_hull`, which never returns the point in ``best`` as a projection;
    a caller that uses it must report its status (the adaptive mechanism's joint estimate does, and
    warns).

    Parameters
    ----------
    message : str
        What failed.
    attempts : iterable of Attempt
        Every solver's outcome, in the order tried (kept as the tuple ``attempts``).
    best : ProjectionResult or None
        The feasible witness with the smallest certified gap above the tolerance (e.g. the
        ``"fast"`` solver's at its iteration limit), or None.

    See Also
    --------
    projmech.solve.SolveError : The base class of every solver's error.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), way=2)
    >>> y = np.random.default_rng(0).normal(0.25, 0.1, workload.num_queries)
    >>> try:
    ...     pm.project_to_hull(workload, y, solver="fast", tol=1e-30, max_iterations=1)
    ... except pm.ProjectionError as error:
    ...     print(error.attempts[0].status, error.best.stats.gap > 0)
    iteration_limit True
    """


def frank_wolfe_gap(F: Any, y: np.ndarray, weights: np.ndarray) -> float:
    """Frank–Wolfe gap of a simplex point ``w`` for ``f(w) = (1/2)||F w - y||^2``.

    With ``g = F^T (F w - y)``, ``gap = g.w - min_j g_j`` (:cite:p:`Jag13`). By convexity it bounds
    the suboptimality ``f(w) - min f`` over the simplex, and ``||F w - Pi(y)||_2 <= sqrt(2 gap)``
    for the exact projection ``Pi(y)`` onto ``K_Q`` (theory page *Projection onto K_Q*,
    ``docs/theory/projection.md``).

    Parameters
    ----------
    F : ndarray or scipy sparse matrix, shape (k, m)
        The query matrix (anything with ``F @ w`` and ``F.T @ r``).
    y : ndarray, shape (k,)
        The point projected.
    weights : ndarray, shape (m,)
        A point of the simplex (``w >= 0``, ``sum(w) = 1``).

    Returns
    -------
    float
        The gap, ``>= 0`` for a point of the simplex.

    See Also
    --------
    project_to_hull : Certifies its witness by this gap.

    References
    ----------
    :cite:t:`Jag13` (the duality gap of Frank–Wolfe methods).

    Examples
    --------
    A point of ``K_Q`` is its own projection: its witness has gap 0; the uniform witness of a
    point outside does not.

    >>> import numpy as np
    >>> from projmech.bodies import frank_wolfe_gap
    >>> F = np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])  # two threshold queries
    >>> w = np.array([0.5, 0.25, 0.25])
    >>> frank_wolfe_gap(F, F @ w, w)
    0.0
    >>> round(frank_wolfe_gap(F, np.array([1.0, 1.0]), np.full(3, 1 / 3)), 4)
    0.5556
    """
    residual = np.asarray(F @ weights).ravel() - y
    return _gap(weights, np.asarray(F.T @ residual).ravel())


def _gap(weights: np.ndarray, gradient: np.ndarray) -> float:
    """``w.g - min g`` for a simplex point ``w`` and the gradient ``g`` there."""
    # w.(g - min g) rather than g.w - min g: the difference of two numbers of size ||g||_inf
    # would lose the tiny gaps of accurate solutions to cancellation.
    return float(weights @ (gradient - gradient.min()))


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
    """Project ``y`` onto K_Q = conv(columns of F) in the Euclidean norm.

    ``K_Q`` holds the answers of every distribution over the universe, so the true answers of
    any data set stay put and the projection is never farther from them than ``y`` is: the
    projection mechanism's step (:cite:p:`NTZ13`). The result carries a witness distribution and
    a certified Frank–Wolfe gap; the certificate, the tolerance's tie to the noise and the
    active-set solver are derived in the theory page *Projection onto K_Q*
    (``docs/theory/projection.md``).

    Parameters
    ----------
    F : Workload, ndarray or scipy sparse matrix, shape (k, m)
        An implicit workload (e.g. ``marginals(domain, 2, implicit=True)``) works with the
        ``"fast"`` solver, which needs only :meth:`~projmech.workloads.Workload.rmatvec` and
        :meth:`~projmech.workloads.Workload.columns`.
    y : array_like, shape (k,)
        The point to project (typically noisy answers).
    solver : {"auto", "fast", "CLARABEL", "ECOS", "OSQP", "SCS"}
        ``"fast"``: the active-set solver of :mod:`projmech.bodies.active_set` (column
        generation with Wolfe's minimum-norm-point method, :cite:p:`Wol76`; a sparse witness). A CVXPY solver
        name builds the problem over the explicit matrix. ``"auto"`` tries the solvers that
        apply in the order of their estimated time (:func:`auto_solver_order`, from the cost
        model of :mod:`projmech.bodies.cost`; ``"fast"`` only, for an implicit workload), moving on
        whenever a solver errors, reports a non-optimal status or fails the certificate; every
        attempt is recorded in ``stats.attempts``.
    tol : float, optional
        Acceptance threshold, the same for every solver: the cleaned, exactly feasible witness
        must have a Frank–Wolfe gap ``<= tol * max(f_low, scale)``, ``f_low`` the certified lower
        bound ``(1/2)||F w - y||^2 - gap`` on the optimum and ``scale = (k/2) noise_scale^2``
        (or 1 without ``noise_scale``). Default: ``NOISE_TOL`` (1e-4) with ``noise_scale``,
        whose answers are then within ``0.01 * max(noise_scale, distance / sqrt(k))`` RMS of the
        exact projection, else ``DEFAULT_TOL`` (1e-8). Pass a small ``tol`` (``1e-9``) for a
        tight solve.
    solver_options : dict, optional
        CVXPY solver settings overriding the tight defaults: a flat dict for a named solver, or,
        with ``solver="auto"``, a dict keyed by solver name (``{"SCS": {"max_iters": 10_000}}``).
    noise_scale : float, optional
        The standard deviation of the noise in ``y`` (the mechanisms pass theirs); sets the
        scale of ``tol``.
    warm_start : ProjectionResult or array_like, optional
        A previous witness (a result, or non-negative weights over the universe, normalized
        here) to start the ``"fast"`` solver from; a solve of a nearby ``y`` then needs fewer
        gradients. CVXPY solvers do not take one.
    max_iterations : int
        Outer iterations (gradients over the universe) of the ``"fast"`` solver.
    callback : callable, optional
        ``callback(iteration, gap)`` after each outer iteration of the ``"fast"`` solver, with
        its absolute Frank–Wolfe gap (:class:`~projmech.solve.ProgressBar` draws a bar).

    Returns
    -------
    ProjectionResult
        With ``stats.attempts`` recording every solver tried, the accepted one last.

    Raises
    ------
    TypeError
        If ``solver`` is not a str, ``solver_options`` not a dict, or ``callback`` not callable.
    ValueError
        On non-finite or mis-shaped inputs, an unknown or inapplicable solver, ``tol <= 0``, a
        bad ``noise_scale`` or ``warm_start``; before any solve.
    ProjectionError
        If no solver produced a certified projection; it carries every attempt's outcome (for
        ``"fast"``, the gap it stopped at) and, as ``best``, the feasible witness with the
        smallest gap, if any.

    See Also
    --------
    projmech.bodies.project_to_relaxation : The projection onto the relaxation L of 2-way
        marginals, for domains whose universe is too large for ``K_Q``.
    frank_wolfe_gap : The certificate.

    References
    ----------
    :cite:t:`NTZ13` (the projection mechanism); :cite:t:`Jag13` (the Frank–Wolfe gap);
    :cite:t:`Wol76` (the minimum-norm-point method of the ``"fast"`` solver).

    Examples
    --------
    An implicit workload (products only, no matrix) goes to the ``"fast"`` solver:

    >>> import numpy as np
    >>> import projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    >>> workload = pm.marginals(domain, way=2, implicit=True)
    >>> truth = workload.answer(np.full(domain.size, 1 / domain.size))
    >>> y = truth + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    >>> result = pm.project_to_hull(workload, y, noise_scale=0.05)
    >>> result.stats.solver, str(result.stats.status), result.stats.gap <= result.stats.tolerance
    ('fast', 'optimal', True)
    >>> bool(np.linalg.norm(result.answers - truth) <= np.linalg.norm(y - truth))
    True
    >>> [(attempt.solver, str(attempt.status)) for attempt in result.stats.attempts]
    [('fast', 'optimal')]
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
    """A witness that passed the final check's feasibility part, with what the check
    recomputed from it (``F w``, its distance to ``y``, its Frank–Wolfe gap and the threshold
    the gap was held to); :func:`_result` makes it a :class:`ProjectionResult`."""

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
    """The active-set solver's witness, judged by the final check. Its dense kernels are small
    (the corral's triangular solves): on one BLAS thread, so that its time and its steps do not
    swing with the machine's thread count."""
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
    """The CVXPY solver's raw witness (None without one) and its status; a solver error raises
    ``cvxpy.error.SolverError``."""
    import cvxpy as cp

    w = cp.Variable(matrix.shape[1], nonneg=True)
    # Same minimizer either way. Clarabel, OSQP and SCS take the quadratic objective natively;
    # ECOS only knows cones, and reaches a far smaller certified gap on ||F w - y||_2 than on
    # the squared norm rewritten as a rotated cone (measured: 1e-10 vs 1e-7 on 2-way marginals).
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
    """A solver's witness through the final check (:func:`_check_projection`).

    :attr:`Status.OPTIMAL` when its certified gap is at most ``threshold(objective - gap)``;
    otherwise :attr:`Status.ITERATION_LIMIT` (the solver ``stopped`` at its limit) or
    :attr:`Status.REJECTED`, keeping a feasible witness as a candidate for the error's ``best``.
    A witness that fails feasibility is rejected with no point.
    """
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


def _check_projection(operator: Workload, y: np.ndarray, weights: np.ndarray | sp.sparray,
                      answers: np.ndarray | None = None) -> tuple[np.ndarray, float, float] | str:
    """The final, solver-independent check of a witness ``w``: ``(F w, objective, gap)``, or why
    it is not a feasible witness.

    Recomputed from ``w`` alone through the workload's own products: feasibility (``m`` finite
    weights, ``w >= 0``, ``|sum(w) - 1| <= _SUM_TOL``), the answers ``F w`` (and, when the
    solver reported answers, their agreement with ``F w`` to ``_ANSWER_RTOL`` times
    ``max_i (|F| w)_i``, the scale of the sum), the objective ``(1/2)||F w - y||^2`` and the
    Frank–Wolfe gap from a fresh gradient ``F^T (F w - y)`` over the whole universe, which
    :func:`_judge` holds to the threshold. What the solver claimed about its own gap is not used.
    """
    m = operator.universe_size
    dense = weights.toarray().ravel() if issparse(weights) else np.asarray(weights, dtype=float)
    if dense.shape != (m,):
        return f"witness has shape {dense.shape}, expected ({m},)"
    if not np.all(np.isfinite(dense)):
        return "witness has non-finite weights"
    if dense.min() < 0:
        return f"witness has a negative weight ({dense.min():.2e})"
    total = float(dense.sum())
    if not abs(total - 1.0) <= _SUM_TOL:
        return f"witness sums to {total:.17g}, not 1"
    product = operator.matvec(dense)
    if answers is not None:
        support = np.flatnonzero(dense)
        if operator.is_nonnegative:
            # |F| w = F w: no columns to read (4,034 dense columns of k = 90,000, for 2-way
            # marginals of two 300-value attributes, would take 2.9 GB). An implicit workload's
            # claim to be non-negative can only make this scale smaller and the check stricter.
            magnitude = np.abs(product)
        elif operator.is_implicit:  # a small support: the fast solver keeps at most rank(F) + 1
            magnitude = np.abs(operator.columns(support)) @ dense[support]
        else:
            magnitude = np.asarray(abs(operator.matrix) @ dense).ravel()
        deviation = float(np.max(np.abs(np.asarray(answers, dtype=float) - product)))
        allowed = _ANSWER_RTOL * float(magnitude.max())
        if not deviation <= allowed:
            return f"reported answers differ from F w by {deviation:.2e} > {allowed:.2e}"
    residual = product - y
    if not np.all(np.isfinite(residual)):
        return "F w is not finite"
    gradient = operator.rmatvec(residual)
    return product, 0.5 * float(residual @ residual), _gap(dense, gradient)


def check_solver(solver: Any) -> str:
    """``solver`` as :func:`project_to_hull` takes it: ``"auto"``, ``"fast"`` or a CVXPY name.

    CVXPY names are those of :data:`SOLVERS`, upper-cased; a TypeError or ValueError names
    ``solver`` otherwise. Whether it is installed and fits the workload is checked when
    projecting (:func:`_solver_order`).
    """
    if not isinstance(solver, str):
        raise TypeError(f"solver: expected a string, got {type(solver).__name__}")
    if solver in ("auto", FAST):
        return solver
    if solver.upper() not in SOLVERS:
        raise ValueError(f"solver: expected 'auto', 'fast' or one of {list(SOLVERS)}, got {solver!r}")
    return solver.upper()


def auto_solver_order(workload: Workload) -> list[str]:
    """The solvers ``solver="auto"`` tries on ``workload``, in order.

    Those of the cost model that apply (``"fast"`` with products both ways,
    :data:`MODELLED_SOLVERS` with the explicit matrix, when installed) from the fastest estimate
    to the slowest (:func:`~projmech.bodies.cost.by_estimated_time`), then the other installed
    CVXPY solvers. Every one stays as a fallback: the active-set solver certifies badly scaled
    problems (columns of norm 1e8) that every CVXPY solver fails, and a CVXPY solver may certify
    where it stops. :func:`project_to_hull` runs those of them that fit in this machine's memory
    (:func:`solver_memory`): one that does not would end in a ``MemoryError``, not a fallback.
    """
    explicit = not workload.is_implicit
    # Only an explicit matrix takes a CVXPY solver: an implicit one needs no lookup (nor CVXPY's import).
    installed = set(installed_solvers()) if explicit else set()
    modelled = ([FAST] if workload.has_adjoint else []) + [name for name in MODELLED_SOLVERS
                                                           if explicit and name in installed]
    order = by_estimated_time(modelled, WorkloadSize.of(workload)) if modelled else []
    return order + [name for name in SOLVERS if explicit and name in installed and name not in order]


def solver_memory(workload: Workload, solver: str) -> float:
    """Bytes that projecting onto ``K_Q`` by one solver holds at its peak, beyond the workload
    and the noisy answers themselves.

    Every solver holds :data:`HULL_BYTES_PER_ELEMENT` per universe element; the active-set
    solver (``"fast"``) also :data:`ACTIVE_SET_BYTES_PER_ENTRY` per entry of its columns (``k``
    for each of at most ``min(rank(F) + 1, m)`` support elements, the rank bounded as
    :class:`~projmech.bodies.cost.WorkloadSize` bounds it); a CVXPY solver
    :data:`CVXPY_BYTES_PER_ENTRY` per stored entry of the explicit matrix. ``inf`` beyond
    floating point.
    """
    return _memory_parts(workload, check_solver(solver))[0]


def projection_memory(workload: Workload, solver: str = "auto") -> float:
    """Bytes that :func:`project_to_hull` holds at its peak on ``workload`` with ``solver``.

    A named solver's :func:`solver_memory`; for ``"auto"`` the least among the solvers of
    :func:`auto_solver_order` (it runs only those that fit).
    """
    return _least_memory(workload, check_solver(solver))[0]


def memory_blocker(workload: Workload, solver: str = "auto") -> str | None:
    """Why projecting ``workload``'s answers onto ``K_Q`` with ``solver`` cannot fit in this
    machine's memory (a phrase without argument names, which the library and the command line
    each complete with their own remedies), or None if it fits (:func:`projection_memory`,
    :func:`~projmech.bodies.memory.memory_shortfall`)."""
    needed, held = _least_memory(workload, check_solver(solver))
    shortfall = memory_shortfall(needed)
    return None if shortfall is None else f"projecting onto the hull K_Q holds {held}, {shortfall}"


def _fitting(order: list[str], workload: Workload) -> list[str]:
    """The solvers of ``order`` whose :func:`solver_memory` fits in this machine's memory."""
    limit = memory_limit()
    return [name for name in order if limit is None or solver_memory(workload, name) <= limit]


def _least_memory(workload: Workload, solver: str) -> tuple[float, str]:
    """:func:`projection_memory` and what holds it, for a checked ``solver``."""
    if solver != "auto":
        return _memory_parts(workload, solver)
    candidates = [_memory_parts(workload, name) for name in auto_solver_order(workload)]
    # No solver applies (an implicit workload without products both ways): the projection
    # refuses it before allocating anything; the universe's vectors are what it would hold.
    return min(candidates, key=lambda part: part[0], default=_memory_parts(workload, FAST, columns=False))


def _memory_parts(workload: Workload, solver: str, *, columns: bool = True) -> tuple[float, str]:
    """The bytes one solver holds (:func:`solver_memory`) and a phrase naming what holds them."""
    k, m = workload.shape
    universe = f"vectors over the universe of {format_count(m)} elements"
    vectors = _times(HULL_BYTES_PER_ELEMENT, m)
    if solver != FAST:
        stored = workload.kernels.stored_entries()
        matrix = _times(CVXPY_BYTES_PER_ENTRY, stored)
        held = (f"{solver}'s copies of the {format_count(stored)} stored entries of the explicit matrix"
                if matrix >= vectors else universe)
        return vectors + matrix, held
    if not columns:
        return vectors, universe
    support = min(WorkloadSize.of(workload).rank + 1, m)
    active = _times(ACTIVE_SET_BYTES_PER_ENTRY * k, support)
    held = universe if vectors >= active else (
        f"{universe} and up to {format_count(support)} columns of {format_count(k)} answers (its active set)")
    return vectors + active, held


def _times(per: int, count: int) -> float:
    """``per * count`` bytes as a float, ``inf`` beyond floating point (a universe of 2^1100)."""
    try:
        return float(per * count)
    except OverflowError:
        return math.inf


def _solver_order(solver: str, workload: Workload) -> list[str]:
    """The solvers to try, in order; a ValueError when ``solver`` cannot run on ``workload``, or
    would not fit in memory (checked here, before anything over the universe is allocated)."""
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
