"""The optimal factorization norm gamma(F), with a certified lower bound, and gamma_alpha(F).

``gamma(F) = min ||R||_F ||M||_{1->2} / sqrt(k)`` over exact factorizations ``R M = F`` of a
``k x m`` workload is the error of the best factorization mechanism, up to the noise scale
:cite:p:`ENU20`; minimizing it over strategies is the matrix mechanism's problem
:cite:p:`LHRMM10`. In ``X = M^T M`` it is a convex semidefinite program that sees F only through
its Gram matrix ``G = F^T F``. Its dual gives, for every weight vector ``q`` in the probability
simplex, the lower bound ``gamma(F) >= ||F diag(q)^1/2||_* / sqrt(k)`` (nuclear norm), tight at
the optimal ``q``.

The iterative method ascends that dual with a multiplicative update on ``q`` (accelerated by
safeguarded Anderson mixing), forming the strategy ``X*(q)`` of each iterate from one
eigendecomposition, so that every iterate certifies its own relative gap on ``gamma^2``. It runs
in F's row space, so ``R = F M^+`` always satisfies ``R M = F``; for prefix and all-range
workloads ``G^-1`` is tridiagonal and each step costs ``O(m^2)`` instead of ``O(m^3)``. Whatever
the method, the reported ``gamma`` is recomputed from the returned M and R, ``R M = F`` is
checked, and the lower bound comes from the final weights alone.

The derivations (the program, its dual and the lower bound, the iteration's fixed point and
gap, ``gamma_alpha`` and its bound) are in the theory page *The factorization mechanism and
gamma(F)* (``docs/theory/factorization.md``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, NoReturn, Protocol, TypeVar

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from ._threads import on_one_blas_thread
from .factorization import Factorization, as_workload, check_objective, dense_matrix
from .range_forms import is_all_range
from .solve import Attempt, Callback, Outcome, SolveError, SolveStats, Status, check_callback, record_total_time, \
    solve_in_order, status_from_cvxpy
from .workloads import Kron, MatrixWorkload, Workload

__all__ = [
    "FactorizationError",
    "factorization_norm",
    "approximate_factorization_norm",
    "factorization_lower_bound",
    "ScaledFactorization",
    "METHODS",
]

METHODS = ("auto", "structured", "iterative", "sdp")

#: Above this universe size ``method="auto"`` does not fall back to the SDP.
SDP_MAX_UNIVERSE = 64

#: Up to this universe size ``method="auto"`` factorizes a union of Kronecker products that is
#: not a marginal workload densely (certified to ``tol``) rather than by an
#: :data:`UNCERTIFIED_METHODS` method.
DENSE_UNION_UNIVERSE = 1024

#: The structured methods whose result is optimal only within a class of strategies: their gap to
#: a certified bound is reported, not held to ``tol``.
UNCERTIFIED_METHODS = ("range-residual", "kron-strategy")

#: The relative gap each attribute's step of the Kronecker-strategy optimizer is solved to.
UNION_STEP_TOL = 1e-6

#: The fewest iterations a step of a structured method gets, whatever the caller's budget.
STEP_MIN_ITERATIONS = 2000

#: From this universe size ``method="auto"`` factorizes prefix and all-range workloads by the
#: resolvent method (``O(m)`` memory and ``O(N m)`` per step) instead of the dense ones.
RESOLVENT_MIN_UNIVERSE = 512

#: The largest ``k * m`` the ``"max"`` objective's dense methods accept (its iteration forms
#: ``F^T diag(p) F`` and ``F Z`` at each step).
MAX_OBJECTIVE_ENTRIES = 20_000_000

#: The largest universe of the all-range workload the ``"max"`` objective accepts: its method
#: (on the ``m x m`` Gram form) costs an ``m x m`` eigendecomposition a step, about 80 s in all
#: at 2,048 cells on 2 cores, some 10 minutes at 4,096.
RANGE_MAX_UNIVERSE = 4096

#: Eigenvalues below this fraction of the largest are treated as zero when finding F's rank.
RANK_RTOL = 1e-10

#: An explicit workload whose largest magnitude lies outside ``[2^-300, 2^300]`` is factorized
#: divided by a power of two near that magnitude (:class:`ScaledFactorization`): its Gram
#: matrix ``F^T F`` squares the entries, which underflow to 0 below about 1e-154 (a 1e-200
#: workload was refused as "F is zero") and overflow above 1e154. Inside the range every
#: product the methods form stays normal, measured on prefix(8) from 1e-154 to 1e150, and the
#: result keeps its usual type.
SAFE_SCALE = 2.0**300


class FactorizationError(SolveError):
    """A factorization optimizer stopped without certifying its tolerance.

    ``attempts`` holds every method tried (an :class:`~projmech.solve.Attempt` each), ``best``
    the factorization with the smallest relative gap among those that passed the final check
    (a valid factorization, with its bound, gap and statistics), or None.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        Every method tried, in order.
    best : Factorization, optional
        The best factorization that passed the final check.

    Examples
    --------
    >>> import projmech as pm
    >>> try:
    ...     pm.factorization_norm(pm.prefix(64), method="iterative", tol=1e-12, max_iterations=2)
    ... except pm.FactorizationError as error:
    ...     print(error.attempts[0].status, error.best.lower_bound <= error.best.gamma)
    iteration_limit True
    """


def _check_tolerance(tol: float) -> float:
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
        raise ValueError(f"tol: expected a finite number > 0, got {tol!r}")
    return float(tol)


def _check_weights(weights: Any, m: int, name: str = "weights") -> np.ndarray:
    q = np.asarray(weights, dtype=float)
    if q.shape != (m,):
        raise ValueError(f"{name}: expected shape ({m},), got {q.shape}")
    if not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
        raise ValueError(f"{name}: expected finite, nonnegative weights with a positive sum")
    return q / q.sum()


def _sum_of_square_roots(eigenvalues: np.ndarray) -> float:
    """``sum_j sqrt(w_j)`` for computed eigenvalues of a PSD matrix, rounded down.

    A backward-stable eigensolver returns each eigenvalue to within about ``n eps ||A||``; the
    square root turns that error on a (true) zero eigenvalue into ``sqrt(n eps ||A||)``, which
    summed over many eigenvalues would lift a lower bound above the truth. Subtracting the error
    bound first keeps the sum below the exact one.
    """
    slack = eigenvalues.size * np.finfo(float).eps * float(np.max(np.abs(eigenvalues)))
    return float(np.sqrt(np.clip(eigenvalues - slack, 0.0, None)).sum())


def _dual_value(gram: np.ndarray, q: np.ndarray) -> float:
    """``||F diag(q)^1/2||_* = tr((D^1/2 G D^1/2)^1/2)``, rounded down."""
    root = np.sqrt(q)
    return _sum_of_square_roots(np.linalg.eigvalsh(root[:, None] * gram * root[None, :]))


def factorization_lower_bound(workload: Workload | Any, weights: Any = None, *, query_weights: Any = None) -> float:
    """A certified lower bound on ``gamma(F)``, or on ``gamma_2(F)``, from weights.

    For every ``q`` in the probability simplex, ``gamma(F) >= ||F diag(q)^1/2||_* / sqrt(k)``
    (``||.||_*`` the nuclear norm, the sum of the singular values), with equality at the optimal
    ``q`` :cite:p:`ENU20`. The default uniform ``q`` gives the singular-value bound
    ``||F||_* / sqrt(k m)``. With weights ``p`` on the queries as well, the bound is on the
    max-error norm: ``gamma_2(F) >= ||diag(p)^1/2 F diag(q)^1/2||_*``, with equality at the optimal
    pair :cite:p:`MNT20` (uniform ``p`` gives the mean bound again, as ``gamma_2 >= gamma``). The
    derivations, from the duals of the semidefinite programs, are in the theory page *The
    factorization mechanism and gamma(F)* (``docs/theory/factorization.md``).

    The bound is a plain number, computed at once (one eigendecomposition): it has no solver
    statistics.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F; only its Gram matrix ``F^T F`` is used without ``query_weights``, the explicit matrix
        with them.
    weights : array_like, shape (m,), optional
        ``q``, on the cells: nonnegative and finite, with a positive sum; normalized to sum to
        one. Default uniform.
    query_weights : array_like, shape (k,), optional
        ``p``, on the queries, likewise: the bound is then on ``gamma_2(F)``.

    Returns
    -------
    float
        The bound, rounded down: computed eigenvalues are lowered by their error bound before
        their square roots are summed, so rounding cannot lift it above the norm.

    Raises
    ------
    ValueError
        If ``weights`` does not have shape ``(m,)`` (``query_weights`` shape ``(k,)``), has a
        negative or non-finite entry, or sums to zero.

    See Also
    --------
    factorization_norm : The optimum, whose ``lower_bound`` is this bound at the optimal weights.

    Examples
    --------
    >>> import projmech as pm
    >>> F = pm.prefix(16)
    >>> round(pm.factorization_lower_bound(F), 3)  # the singular-value bound
    1.628
    >>> fact = pm.factorization_norm(F)
    >>> pm.factorization_lower_bound(F) <= fact.lower_bound <= fact.gamma
    True

    The max-error norm's bound at the optimal weights of its own optimizer:

    >>> worst = pm.factorization_norm(F, objective="max")
    >>> round(worst.lower_bound, 4), round(worst.gamma_2, 4)
    (1.7045, 1.7045)
    """
    workload = as_workload(workload)
    k, m = workload.shape
    q = np.full(m, 1.0 / m) if weights is None else _check_weights(weights, m, "weights")
    form = _scaled_form(workload)
    if form is not None:
        # The bound is homogeneous: at the same weights, that of F / scale times scale, whose
        # Gram matrix neither underflows to 0 (a bound of 0) nor overflows.
        scale, scaled = form
        return scale * factorization_lower_bound(scaled, q, query_weights=query_weights)
    if query_weights is None:
        return _dual_value(workload.gram(), q) / math.sqrt(k)
    from .max_factorization import max_lower_bound

    return max_lower_bound(workload.toarray(), _check_weights(query_weights, k, "query_weights"), q)


def _row_space(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(B, U, s)``: ``B = diag(s) U^T`` (``r x m``, full row rank) with ``B^T B = G``, ``U`` an
    orthonormal basis of F's row space and ``s`` the square roots of G's nonzero eigenvalues
    (those above ``RANK_RTOL`` times the largest)."""
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    keep = eigenvalues > RANK_RTOL * max(eigenvalues[-1], 0.0)
    scales, directions = np.sqrt(eigenvalues[keep]), eigenvectors[:, keep]
    return scales[:, None] * directions.T, directions, scales


def _tridiagonal_inverse(gram: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The bands of ``G^-1`` if it is tridiagonal (``T G - I`` at rounding level), else ``None``.

    Prefix and all-range workloads qualify: their Gram matrices are discrete Green's functions
    (``m - max(i, j)`` and ``(min(i, j) + 1)(m - max(i, j))``). Correctness never rests on this
    test: the lower bound is recomputed from G, and gamma from the returned M and R.

    Three solves with the Cholesky factor suffice: columns ``j, j+3, j+6, ...`` of a tridiagonal
    matrix have disjoint supports, so ``G^-1 (e_j + e_{j+3} + ...)`` holds each of them intact.
    """
    m = gram.shape[0]
    if m < 4:
        return None
    cells = np.arange(m)
    probes = np.zeros((m, 3))
    probes[cells, cells % 3] = 1.0
    solved = sl.cho_solve((factor, True), probes, check_finite=False)
    bands = solved[cells, cells % 3]
    off_bands = solved[cells[1:], cells[:-1] % 3]  # (G^-1)[j+1, j]
    # The stubs take each diagonal as a sequence of numbers, not as the 1-d array scipy accepts.
    candidate = sp.diags_array([off_bands, bands, off_bands], offsets=[-1, 0, 1])  # type: ignore[list-item]
    defect = np.abs(np.asarray(candidate @ gram) - np.eye(m)).max()  # T G = I (both symmetric)
    # Rounding in T G scales with ||T|| ||G|| (G is ill-conditioned for 1-D workloads: cond ~ m^2);
    # a G^-1 with entries off the band leaves a defect of order one.
    scale = float(np.abs(bands).max() + 2 * np.abs(off_bands).max()) * float(np.abs(gram).sum(axis=1).max())
    return (bands, off_bands) if defect <= 1e-9 * scale else None


class _RowSpaceDual:
    """The dual map ``q -> (phi(q), diag X*(q))`` and the primal recovery, for one Gram matrix.

    Two equivalent forms: on ``A = D^1/2 G D^1/2`` (``m x m``) when G has full rank, and on
    ``K = B D B^T`` (``r x r``) with ``G = B^T B`` otherwise. The second never divides by
    ``q_i`` and makes the recovered strategy's row space exactly F's. When ``G^-1`` is
    tridiagonal (prefix and all-range workloads) the first form is solved as the
    tridiagonal eigenproblem of ``A^-1``, in ``O(m^2)`` per step.
    """

    def __init__(self, gram: np.ndarray) -> None:
        self.gram = gram
        m = gram.shape[0]
        self.basis = None  # (r, m) factor B with B^T B = G, when G is rank-deficient
        self.inverse_bands = None  # (diagonal, off-diagonal) of G^-1, when G^-1 is tridiagonal
        row_space = None
        try:
            factor = sl.cholesky(gram, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            factor = None
        # Above m = 1024 a successful Cholesky is taken as full rank without the O(m^3) eigh;
        # the final check of R M = F catches a numerically singular G.
        if factor is None or m <= 1024:
            row_space = _row_space(gram)
        if row_space is None or row_space[0].shape[0] == m:
            if factor is not None:
                self.inverse_bands = _tridiagonal_inverse(gram, factor)
        else:
            self.basis, self.directions, self.scales = row_space

    def step(self, q: np.ndarray) -> tuple[float, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """``phi(q)``, the diagonal of ``X*(q)``, and the eigendecomposition behind them."""
        if self.inverse_bands is not None:
            # A^-1 = D^-1/2 G^-1 D^-1/2 is tridiagonal: O(m^2) instead of a dense eigh.
            bands, off_bands = self.inverse_bands
            inverse_values, eigenvectors = sl.eigh_tridiagonal(
                bands / q, off_bands / np.sqrt(q[:-1] * q[1:]), lapack_driver="stemr", check_finite=False)
            eigenvalues = 1.0 / inverse_values[::-1]  # ascending, as from eigh
            eigenvectors = eigenvectors[:, ::-1]
        elif self.basis is None:
            root = np.sqrt(q)
            eigenvalues, eigenvectors = np.linalg.eigh(root[:, None] * self.gram * root[None, :])
            eigenvalues = np.clip(eigenvalues, 0.0, None)
        if self.basis is None:  # diag X* = diag(A^1/2) / q
            diagonal = (eigenvectors**2) @ np.sqrt(eigenvalues) / q
        else:
            weighted = self.basis * np.sqrt(q)[None, :]
            eigenvalues, eigenvectors = np.linalg.eigh(weighted @ weighted.T)
            eigenvalues = np.clip(eigenvalues, np.finfo(float).tiny, None)  # K is positive definite
            half = eigenvalues ** -0.25
            diagonal = np.sum((half[:, None] * (eigenvectors.T @ self.basis)) ** 2, axis=0)
        return _sum_of_square_roots(eigenvalues), diagonal, (eigenvalues, eigenvectors)

    def recover(self, q: np.ndarray, peak: float,
                eigen: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(M, M^+)`` with ``M^T M = X*(q) / peak`` (so ``max diag = 1`` when peak = max x)."""
        eigenvalues, eigenvectors = eigen
        if self.basis is None:
            return strategy_from_eigen(q, peak, eigenvalues, eigenvectors)
        quarter = eigenvalues ** -0.25
        strategy = (quarter[:, None] * (eigenvectors.T @ self.basis)) / math.sqrt(peak)
        # M = C B with C invertible, so M^+ = B^+ C^-1 and B^+ = U S^-1/2 (U = directions).
        pinv = (self.directions / self.scales[None, :]) @ (eigenvectors * (1.0 / quarter)[None, :])
        pinv *= math.sqrt(peak)
        return _canonical_signs(strategy, pinv)


def strategy_from_eigen(q: np.ndarray, peak: float, eigenvalues: np.ndarray,
                        eigenvectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, M^+)`` with ``M^T M = D^-1/2 A^1/2 D^-1/2 / peak`` from the eigendecomposition of
    ``A = D^1/2 G D^1/2`` (``D = diag(q)``): the strategy of weights ``q`` on the Gram matrix G,
    its eigenvalues below ``RANK_RTOL`` times the largest dropped (F's row space)."""
    positive = eigenvalues > RANK_RTOL * eigenvalues[-1]
    values, vectors = eigenvalues[positive], eigenvectors[:, positive]
    root = np.sqrt(q)
    strategy = (values[:, None] ** 0.25 * vectors.T) / root[None, :] / math.sqrt(peak)
    pinv = (root[:, None] * vectors) * values[None, :] ** -0.25 * math.sqrt(peak)
    return _canonical_signs(strategy, pinv)


class _Point:
    """One evaluation of the dual map at weights ``q``: value, diagonal, gap and the fixed-point
    residual ``T(q) - q`` of the multiplicative update ``T(q) ~ q (x / phi)^2``.

    Residuals live in q itself, not in ``log q``: weights on their way to zero then contribute
    residuals as small as themselves, instead of a constant step in ``log q`` that would hide the
    progress of the weights that matter from the extrapolation and its safeguard.
    """

    def __init__(self, dual: _RowSpaceDual, q: np.ndarray) -> None:
        self.x = self.q = normalize_weights(q)
        self.value, diagonal, self.eigen = dual.step(self.q)
        self.peak = float(diagonal.max())
        self.gap = self.peak / self.value - 1.0
        self.target = normalize_weights(self.q * (np.clip(diagonal, 0.0, None) / self.value) ** 2)
        self.residual = self.target - self.q
        self.residual_norm = float(np.linalg.norm(self.residual))


def normalize_weights(q: np.ndarray, floor: float = 1e-12) -> np.ndarray:
    """Into the simplex, every weight at least ``floor`` times the largest (so the row-space
    form stays well defined and a weight can come back)."""
    q = np.maximum(q, floor * float(np.max(q)))
    return q / q.sum()


class IteratePoint(Protocol):
    """What :func:`iterate` needs of one evaluation at a point ``x`` of the dual weights: the
    certified relative ``gap`` of its factorization, the plain update ``target = T(x)`` and the
    fixed-point ``residual = T(x) - x`` with its norm."""

    x: np.ndarray
    value: float
    gap: float
    target: np.ndarray
    residual: np.ndarray
    residual_norm: float


Evaluated = TypeVar("Evaluated", bound=IteratePoint)


def iterate(evaluate: Callable[[np.ndarray], Evaluated], start: np.ndarray, tol: float, max_iterations: int,
            memory: int = 6, callback: Callback | None = None, monotone: bool = False) -> tuple[Evaluated, int]:
    """Safeguarded Anderson-accelerated fixed-point ascent on dual weights, from ``start``.

    The plain update ``x <- T(x)`` (a multiplicative step, see the module docstring) is
    extrapolated from the last ``memory`` residuals; an extrapolated point that fails the
    safeguard is rejected (one extra evaluation) in favour of the plain step, and the history
    restarts. The safeguard asks for a smaller residual, or with ``monotone`` for a dual value
    no lower than the current one (the max objective's joint ascent on ``(p, q)``, where the
    residual test lets the extrapolation cycle). Returns the point with the smallest gap and the
    number of evaluations; ``callback`` gets both after each step.
    """
    current = evaluate(start)
    best = current
    evaluations = 1
    points: list[np.ndarray] = []
    residuals: list[np.ndarray] = []
    while best.gap > tol and evaluations < max_iterations:
        points.append(current.x)
        residuals.append(current.residual)
        del points[:-memory], residuals[:-memory]
        if len(residuals) > 1:
            d_residual = np.diff(np.array(residuals), axis=0).T
            d_point = np.diff(np.array(points), axis=0).T
            mixing, *_ = np.linalg.lstsq(d_residual, current.residual, rcond=None)
            proposal = evaluate(current.x + current.residual - (d_point + d_residual) @ mixing)
            evaluations += 1
            rejected = (proposal.value < current.value if monotone
                        else proposal.residual_norm >= current.residual_norm)
            if rejected and evaluations < max_iterations:
                points.clear()
                residuals.clear()
                proposal = evaluate(current.target)
                evaluations += 1
        else:
            proposal = evaluate(current.target)
            evaluations += 1
        current = proposal
        if current.gap < best.gap:
            best = current
        if callback is not None:
            callback(evaluations, best.gap)
    return best, evaluations


def _solve_iterative(workload: Workload, gram: np.ndarray, tol: float, max_iterations: int,
                     callback: Callback | None) -> tuple[Factorization, int, bool]:
    """The dual ascent's factorization, its iterations and whether it stopped at
    ``max_iterations`` short of ``tol`` (by its own gap; :func:`_judge` recomputes it)."""
    dual = _RowSpaceDual(gram)
    m = gram.shape[0]
    best, iterations = iterate(lambda q: _Point(dual, q), np.full(m, 1.0 / m), tol, max_iterations,
                               callback=callback)
    strategy, pinv = dual.recover(best.q, best.peak, best.eigen)
    k = workload.num_queries
    # The tridiagonal path works on the computed G^-1; the certificate uses G itself.
    value = best.value if dual.inverse_bands is None else _dual_value(gram, best.q)
    fact = Factorization(workload, strategy, strategy_pinv=pinv, lower_bound=value / math.sqrt(k), gram=gram)
    return fact, iterations, best.gap > tol


def _judge(fact: Factorization, tol: float | None, iterations: int | None = None, stopped: bool = False,
           note: str = "") -> Outcome[tuple[Factorization, int | None]]:
    """A factorization through the final check (:meth:`~projmech.Factorization.defect`: ``R M = F``,
    ``gamma`` from the factors, ``lower_bound <= gamma``) and the tolerance on its relative gap.

    :attr:`Status.OPTIMAL` when it passes with ``relative_gap <= tol`` (any gap when ``tol`` is
    None); otherwise :attr:`Status.ITERATION_LIMIT` (the method ``stopped`` at its limit) or
    :attr:`Status.REJECTED`, keeping a factorization that passed the check as a candidate for
    the error's ``best``. ``note`` (the backend's doubt) leads the attempt's detail.
    """
    prefix = f"{note}, " if note else ""
    defect = fact.defect()
    if defect is not None:
        return Outcome(Status.REJECTED, detail=prefix + defect)
    gap = fact.relative_gap
    assert gap is not None  # every factorization judged here carries its lower bound
    met = tol is None or gap <= tol
    bound = "" if tol is None else f" {'<=' if met else '>'} tol={tol:g}"
    detail = f"{prefix}relative gap {gap:.2e}{bound}, residual {fact.residual:.1e}"
    if met:
        return Outcome(Status.OPTIMAL, (fact, iterations), detail)
    return Outcome(Status.ITERATION_LIMIT if stopped else Status.REJECTED, (fact, iterations), detail, score=gap)


def _finish(tol: float | None) -> Callable[[tuple[Factorization, int | None], Attempt, tuple[Attempt, ...]],
                                           Factorization]:
    """``solve_in_order``'s ``finish``: the checked factorization with its statistics."""
    def finish(draft: tuple[Factorization, int | None], attempt: Attempt,
               attempts: tuple[Attempt, ...]) -> Factorization:
        fact, iterations = draft
        return fact._with_stats(SolveStats.from_attempt(attempt, attempts, iterations=iterations, gap=fact.relative_gap,
                                                       relative_gap=True, tolerance=tol))

    return finish


def _solve_cvxpy(problem: Any, solver: str, solver_options: dict[str, Any] | None,
                 variables: tuple[Any, ...]) -> tuple[str, Outcome[Any] | None]:
    """Solve ``problem``: a note with the backend's status when it is not ``optimal`` (the final
    check decides), and the failed outcome when a variable has no value."""
    import cvxpy as cp

    try:
        problem.solve(solver=solver, **(solver_options or {}))
    except cp.error.SolverError as error:
        return "", Outcome(Status.SOLVER_ERROR, detail=str(error))
    status = status_from_cvxpy(problem.status)
    if any(variable.value is None for variable in variables):
        return "", Outcome(Status.SOLVER_ERROR if status is Status.OPTIMAL else status,
                           detail=f"returned no solution (status {problem.status})")
    return ("" if status is Status.OPTIMAL else f"backend status {problem.status}"), None


def _weights_from_dual(dual_values: Any, m: int) -> np.ndarray:
    q = np.clip(np.asarray(dual_values, dtype=float).ravel(), 0.0, None) if dual_values is not None else None
    if q is None or q.shape != (m,) or not np.all(np.isfinite(q)) or q.sum() <= 0:
        return np.full(m, 1.0 / m)
    return q / q.sum()


def _strategy_from_gram_matrix(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M = X^1/2`` after scaling X to ``max diag = 1``, with its pseudo-inverse."""
    X = (X + X.T) / 2
    X = X / max(float(np.max(np.diag(X))), np.finfo(float).tiny)
    eigenvalues, eigenvectors = np.linalg.eigh(X)
    keep = eigenvalues > RANK_RTOL * max(eigenvalues[-1], 0.0)
    values, vectors = eigenvalues[keep], eigenvectors[:, keep]
    strategy = np.sqrt(values)[:, None] * vectors.T
    return _canonical_signs(strategy, vectors / np.sqrt(values)[None, :])


def _canonical_signs(strategy: np.ndarray, pinv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S M, M^+ S)`` for the signs ``S`` that make each row's largest entry positive: an
    eigensolver may return any sign of each eigenvector (and 1 and 2 BLAS threads do differ), and
    a flipped row measures the same query with the noise negated, so the same seed would give
    other answers. ``M^T M`` and the reconstruction are unchanged."""
    largest = np.argmax(np.abs(strategy), axis=1)
    signs = np.where(strategy[np.arange(strategy.shape[0]), largest] < 0, -1.0, 1.0)
    return strategy * signs[:, None], pinv * signs[None, :]


def _solve_sdp(workload: Workload, gram: np.ndarray, tol: float, solver: str,
               solver_options: dict[str, Any] | None) -> Outcome[tuple[Factorization, int | None]]:
    import cvxpy as cp

    k, m = workload.shape
    basis = _row_space(gram)[0]
    r = basis.shape[0]
    X = cp.Variable((m, m), symmetric=True)
    U = cp.Variable((r, r), symmetric=True)
    diagonal = cp.diag(X) <= 1
    # tr(U) >= tr(B X^-1 B^T) = tr(G X^-1) by the Schur complement.
    problem = cp.Problem(cp.Minimize(cp.trace(U)), [cp.bmat([[U, basis], [basis.T, X]]) >> 0, diagonal])
    note, failed = _solve_cvxpy(problem, solver, solver_options, (X,))
    if failed is not None:
        return failed
    assert X.value is not None  # _solve_cvxpy reports a variable without a value as failed
    strategy, pinv = _strategy_from_gram_matrix(X.value)
    q = _weights_from_dual(diagonal.dual_value, m)
    fact = Factorization(workload, strategy, strategy_pinv=pinv, lower_bound=_dual_value(gram, q) / math.sqrt(k),
                         gram=gram)
    return _judge(fact, tol, note=note)


def _scaled_form(workload: Workload) -> tuple[float, Workload] | None:
    """``(s, F / s)`` for a workload with entries too small or too large for its Gram matrix,
    else None (F factorized as it is).

    An explicit matrix whose largest magnitude lies outside ``[2^-300, 2^300]`` is divided by
    ``s = 2^(e - 1)`` for its largest magnitude ``2^(e - 1) <= |F|_max < 2^e``: F / s has entries
    at most 2 in magnitude, and dividing by a power of two is exact. A Kronecker product is
    scaled factor by factor (``(A / s) ⊗ (B / t) = (A ⊗ B) / (s t)``), so that every factor is
    solved at unit scale and the product's norm and bound, which multiply over the factors, stay
    in range. The builders' closed forms (prefix sums, ranges, marginals) have unit entries.

    Raises
    ------
    ValueError
        Where the largest entry magnitude (of a factor, or of the product) is below float64's
        smallest normal number: gamma(F) would have few or no significant digits.
    """
    if isinstance(workload, MatrixWorkload):
        matrix = workload.matrix
        peak = float(np.abs(matrix.data if sp.issparse(matrix) else matrix).max(initial=0.0))
        if peak == 0 or 1.0 / SAFE_SCALE <= peak <= SAFE_SCALE:
            return None
        if peak < sys.float_info.min:
            _refuse_subnormal(f"{peak:.3g}")
        scale = math.ldexp(1.0, math.frexp(peak)[1] - 1)
        return scale, Workload(matrix / scale, domain=workload.domain, name=workload.name)
    if isinstance(workload, Kron):
        forms = [_scaled_form(factor) for factor in workload.factors]
        if all(form is None for form in forms):
            return None
        # The scale 2^exponent, the product of the factors' scales, is about the size of the
        # product's entries (times the unscaled factors' entries): outside float64's normal range
        # those entries, and gamma, are lost (the scale itself would underflow or overflow).
        exponent = sum(0 if form is None else math.frexp(form[0])[1] - 1 for form in forms)
        if exponent < sys.float_info.min_exp - 1:
            _refuse_subnormal(f"about 2^{exponent}")
        if exponent >= sys.float_info.max_exp:
            raise ValueError(f"workload: its largest entry magnitude, about 2^{exponent}, is beyond float64's range "
                             f"({sys.float_info.max:.3g}); scale F down (gamma(c F) = |c| gamma(F))")
        scale = math.ldexp(1.0, exponent)
        factors = [factor if form is None else form[1] for factor, form in zip(workload.factors, forms)]
        return scale, Kron(factors, domain=workload.domain, name=workload.name, implicit=workload.is_implicit)
    return None


def _refuse_subnormal(magnitude: str) -> NoReturn:
    """Refuse a workload whose largest entry magnitude, ``magnitude``, is below float64's normal range."""
    # Subnormal numbers carry few significant bits, and gamma(F), of their size, would too.
    raise ValueError(
        f"workload: its largest entry magnitude, {magnitude}, is below float64's smallest normal number "
        f"({sys.float_info.min:.3g}): gamma(F) and the answers would have few significant digits; scale F up "
        "(gamma(c F) = |c| gamma(F))"
    )


class ScaledFactorization(Factorization):
    """The factorization of ``F = s F'`` made from one of ``F'``, for a power of two ``s``.

    :func:`factorization_norm` divides a workload whose entries are too small or too large for
    its Gram matrix (an explicit matrix, or a Kronecker product of such factors; see
    :data:`SAFE_SCALE`) by ``s`` and factorizes the quotient ``F'``. ``gamma`` is homogeneous, ``gamma(s F') = s gamma(F')``, and so is every quantity of
    the factorization but the strategy: with ``R' M = F'``, ``(s R') M = F``, the same strategy
    M answers F with the reconstruction ``s R'``, and the dual bound at the same weights is
    ``s`` times as large (its relative gap, on ``gamma^2``, is unchanged). This wrapper reports
    them so, computed from ``F'``'s factorization and multiplied by ``s``: computed from F's own
    entries, ``||R||_F`` and the relative gap would square numbers of F's size, which underflow
    (or overflow) to 0 (or inf).

    Parameters
    ----------
    workload : Workload
        F.
    inner : Factorization
        A factorization of ``F / scale``.
    scale : float
        ``s``, a power of two.

    Attributes
    ----------
    inner : Factorization
        The factorization of ``F / scale``.
    scale : float
        ``s``.

    Examples
    --------
    A workload of entries 1e-200 (whose Gram matrix is 0 in float64) has ``1e-200`` times the
    norm and bound of prefix sums, the same strategy and relative gap:

    >>> import projmech as pm
    >>> tiny = pm.factorization_norm(1e-200 * pm.prefix(8).toarray())
    >>> unit = pm.factorization_norm(pm.prefix(8))
    >>> type(tiny).__name__, round(tiny.gamma / 1e-200, 4), round(unit.gamma, 4)
    ('ScaledFactorization', 1.4949, 1.4949)
    >>> round(tiny.lower_bound / 1e-200, 4), round(tiny.relative_gap, 6) == round(unit.relative_gap, 6)
    (1.4944, True)
    """

    def __init__(self, workload: Workload, inner: Factorization, scale: float) -> None:
        self.workload = workload
        self.inner = inner
        self.scale = scale
        self.strategy = inner.strategy  # M is the same: only R scales
        self.objective = inner.objective
        self.lower_bound = None if inner.lower_bound is None else scale * inner.lower_bound
        self.stats = inner.stats

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct(measurements)

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct_block(block)

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        return self.scale * self.inner._reconstruction_columns(start, stop)

    @property
    def reconstruction_norm(self) -> float:
        """``||R||_F = s ||R'||_F``."""
        return self.scale * self.inner.reconstruction_norm

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2} = s ||R' M - F'||_{1->2}``."""
        return self.scale * self.inner.residual

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``, that of ``F'``'s factorization (the strategy is the same)."""
        return self.inner.strategy_sensitivity

    def _query_norms(self) -> np.ndarray:
        return self.scale * self.inner.query_norms

    @property
    def relative_gap(self) -> float | None:
        """That of ``F'``'s factorization: the gap on the squared objective does not depend on
        ``s`` (and squaring F's own values would underflow)."""
        return self.inner.relative_gap

    def _finite_factors(self) -> bool:
        return self.inner._finite_factors()

    def _workload_norm(self) -> float:
        return self.scale * self.inner._workload_norm()

    def _defect_residual(self) -> float:
        return self.scale * self.inner._defect_residual()

    def _is_approximate(self) -> bool:
        return self.inner._is_approximate()

    def _description(self) -> str:
        return f"{self.inner._description()}, solved on F / 2^{math.frexp(self.scale)[1] - 1}"


def _factorize_scaled(workload: Workload, scale: float, scaled: Workload,
                      solve: Callable[[Workload], Factorization]) -> Factorization:
    """``solve(scaled)``, with ``scaled = F / scale``, as a :class:`ScaledFactorization` of F (the
    quotient itself where ``scale`` is 1: factors scaled in opposite directions); a
    FactorizationError's best factorization is scaled back too. Refused where the scaled-back
    value leaves float64's normal range (it is ``scale`` times that of ``F / scale``)."""
    try:
        inner = solve(scaled)
        if scale == 1.0:
            return inner
    except FactorizationError as error:
        if error.best is not None:
            error.best = ScaledFactorization(workload, error.best, scale)
        raise
    fact = ScaledFactorization(workload, inner, scale)
    if not sys.float_info.min <= fact.value <= sys.float_info.max:
        raise ValueError(f"workload: its factorization norm, {fact.value:.3g}, lies outside float64's normal range; "
                         "scale F (gamma(c F) = |c| gamma(F))")
    return fact


@record_total_time
@on_one_blas_thread
def factorization_norm(
    workload: Workload | Any,
    *,
    objective: str = "mean",
    method: str = "auto",
    tol: float = 1e-3,
    max_iterations: int = 200,
    solver: str = "SCS",
    solver_options: dict[str, Any] | None = None,
    callback: Callback | None = None,
) -> Factorization:
    """The optimal exact factorization ``R M = F``: ``gamma(F)`` with a certified lower bound.

    ``gamma(F) = min ||R||_F ||M||_{1->2} / sqrt(k)`` over ``R M = F`` :cite:p:`ENU20`, the
    matrix mechanism's optimal strategy :cite:p:`LHRMM10`. The result's ``gamma`` is computed
    from its own M and R (``R = F M^+``, applied implicitly), its ``residual``
    ``||R M - F||_{1->2}`` is checked, and ``lower_bound`` is the dual bound
    ``||F diag(q)^1/2||_* / sqrt(k)`` at the final weights
    (:func:`factorization_lower_bound`), so ``relative_gap`` (on ``gamma^2``) bounds how far it is
    from optimal. The program, its dual and the iterative method are derived in the theory page
    *The factorization mechanism and gamma(F)* (``docs/theory/factorization.md``).
    It runs on one BLAS thread: 1 and 2 threads round its dense products differently, and a
    strategy, and the answers a seed gives with it, must not depend on the machine.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F. Only its Gram matrix ``F^T F`` (``m x m``) is used: implicit workloads such as
        ``all_range(4096, implicit=True)`` work.
    objective : {"mean", "max"}, default "mean"
        ``"mean"``: ``gamma(F)``, the root-mean-square error over the queries. ``"max"``:
        ``gamma_2(F) = min ||R||_{2->inf} ||M||_{1->2}``, the worst query's error
        :cite:p:`MNT20`, certified by its dual ``max_{p, q} ||D_p^1/2 F D_q^1/2||_*``
        (:func:`factorization_lower_bound` with ``query_weights``); the result's ``value`` is
        then ``gamma_2`` and ``relative_gap`` is on ``gamma_2^2``. It works on the explicit
        matrix (``k m`` at most ``MAX_OBJECTIVE_ENTRIES``), solved from its smaller side; its
        structured methods are the Kronecker product's, factor by factor, the resolvent method
        for prefix sums, and for all ranges the ``m x m`` Gram form (``m`` at most
        ``RANGE_MAX_UNIVERSE``), which ``"auto"`` and ``"iterative"`` use too. The iterative method
        is the same dual ascent on the pair ``(p, q)``, with ``k + m`` weights; the SDP is
        ``min t s.t. [[W, F], [F^T, X]] >= 0, diag(W) <= t, diag(X) <= t``.
    method : {"auto", "structured", "iterative", "sdp"}
        ``"structured"``: for a marginal workload (a union of Kronecker products of scaled
        identities and totals, :func:`~projmech.workloads.table_terms`), the closed-form
        optimum over the residual basis, certified by the singular-value bound; for a Kronecker
        product, the product of the factors' optima (each by ``"auto"``), certified by the
        product of their bounds; for a union of tables with range blocks
        (:func:`~projmech.workloads.range_marginals`), the residual strategy with range
        contrasts (``"range-residual"``); for another union of Kronecker products, one Kronecker
        strategy by block coordinate descent (``"kron-strategy"``). Those two are optimal within
        their class only: their gap to a certified (but loose) bound is reported and not held to
        ``tol`` (``stats.tolerance_met`` says whether it met it). The strategy is never
        densified (derivations in ``docs/theory/structured_factorization.md``).
        ``"iterative"``: dual ascent, one ``m x m`` (or ``r x r`` for rank ``r < m``)
        eigendecomposition per iteration. ``"sdp"``: the CVXPY semidefinite program
        ``min tr(U) s.t. [[U, B], [B^T, X]] >= 0, diag(X) <= 1`` (``B^T B = F^T F``), for
        ``m`` up to about a hundred. ``"auto"``: iterative, then the SDP if that did not certify
        ``tol`` and ``m <= 64``; where the workload's type has a structured method, that method
        instead (a union that is not a marginal workload only above ``DENSE_UNION_UNIVERSE``
        cells); every attempt is recorded.
    tol : float, default 1e-3
        Target relative gap on ``gamma^2``.
    max_iterations : int, default 200
        For the iterative method: the number of eigendecompositions.
    solver : str, default "SCS"
        The CVXPY solver for the SDP. SCS (first-order) is the default: an interior-point solver
        such as ``"CLARABEL"`` is more accurate but factors a dense system in the ``m(m+1)/2``
        entries of X (about 200 s at m = 64 on 2 cores, SCS 1.4 s).
    solver_options : dict, optional
        Keyword options for ``problem.solve``.
    callback : callable, optional
        ``callback(iteration, gap)`` after each step of the iterative method, with the best
        relative gap so far (:class:`~projmech.solve.ProgressBar` draws a bar).

    Returns
    -------
    Factorization
        With ``stats``: the method (``"iterative"``, ``"sdp/<solver>"``, ``"residual"``,
        ``"kron"``...), the relative gap certified against ``tol``, every attempt (the accepted
        one last), ``solve_time`` (the accepted attempt, its final check included) and
        ``total_time`` (the whole call: the Gram matrix, every attempt, the checks and the
        certificate).

    Raises
    ------
    ValueError
        If ``objective``, ``method``, ``tol`` or ``max_iterations`` is invalid, the workload's
        Gram matrix is not finite or F is zero, F's largest entry magnitude is outside float64's
        normal range (an explicit F whose entries lie outside ``[2^-300, 2^300]`` is factorized
        divided by a power of two and returned as a :class:`ScaledFactorization`; 1e-200 F was
        refused as zero), ``method="structured"`` is asked of a workload
        without structure, or ``objective="max"`` of a matrix above ``MAX_OBJECTIVE_ENTRIES``
        (all ranges: above ``RANGE_MAX_UNIVERSE`` cells).
    TypeError
        If ``callback`` is neither None nor callable.
    FactorizationError
        If no method certified ``tol`` and passed the final check
        (:meth:`~projmech.factorization.Factorization.defect`: ``||R M - F||_{1->2} <= 1e-6
        ||F||_{1->2}``, a finite ``gamma`` recomputed from the factors, ``lower_bound <=
        gamma``); every attempt is in ``error.attempts``, and the best factorization that passed
        the check is attached as ``error.best``.

    See Also
    --------
    factorization_lower_bound : The dual bound at any weights.
    projmech.mechanisms.FactorizationMechanism : Releases answers through a factorization.

    Examples
    --------
    >>> import projmech as pm
    >>> fact = pm.factorization_norm(pm.prefix(16))
    >>> round(fact.gamma, 3), round(fact.lower_bound, 3)
    (1.69, 1.689)
    >>> fact.relative_gap <= 1e-3, fact.stats.solver
    (True, 'iterative')

    Marginal workloads have a closed form, certified by the singular-value bound:

    >>> domain = pm.Domain(["age", "sex", "education"], [10, 2, 5])
    >>> fact = pm.factorization_norm(pm.marginals(domain, 2))
    >>> fact.stats.solver, round(fact.gamma, 3), fact.relative_gap < 1e-9
    ('residual', 1.446, True)

    ``stats.total_time`` covers the whole call, ``stats.solve_time`` the accepted attempt:

    >>> fact.stats.solve_time <= fact.stats.total_time
    True

    The worst query's error instead of the mean, inside the published bounds on prefix sums,
    ``(2 + ln((2m+1)/3)) / pi <= gamma_2 <= 1 + ln(m) / pi``:

    >>> worst = pm.factorization_norm(pm.prefix(64), objective="max")
    >>> round(worst.gamma_2, 4), round(worst.lower_bound, 4), worst.relative_gap <= 1e-3
    (2.1124, 2.1114, True)
    """
    workload = as_workload(workload)
    objective = check_objective(objective)
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    tol = _check_tolerance(tol)
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1:
        raise ValueError(f"max_iterations: expected an int >= 1, got {max_iterations!r}")
    callback = check_callback(callback)
    form = _scaled_form(workload)
    if form is not None:
        # Entries beyond [2^-300, 2^300]: factorize F / scale, whose Gram matrix neither
        # underflows nor overflows, and scale R, gamma and the bound back (ScaledFactorization).
        return _factorize_scaled(workload, *form, lambda scaled: factorization_norm(
            scaled, objective=objective, method=method, tol=tol, max_iterations=max_iterations, solver=solver,
            solver_options=solver_options, callback=callback))
    if method in ("auto", "structured"):
        structured = _structured_plan(workload, tol, max_iterations, objective, callback)
        if structured is None:
            structured = _resolvent_plan(workload, objective, tol, max_iterations, callback,
                                         force=method == "structured")
        if (structured is not None and structured[0] in UNCERTIFIED_METHODS and method == "auto"
                and workload.universe_size <= DENSE_UNION_UNIVERSE):
            structured = None  # small enough for the dense method, which certifies tol
        if structured is not None:
            fact, _, _ = solve_in_order([structured], FactorizationError,
                                        f"factorization_norm: the {structured[0]} factorization did not certify "
                                        f"a relative gap <= {tol:g}", _finish(tol))
            return fact
        if method == "structured" and objective == "max" and is_all_range(workload):
            return _max_factorization(workload, "iterative", tol, max_iterations, solver, solver_options, callback)
        if method == "structured":
            needs = ("a Kronecker product, a marginal workload (identity blocks), prefix sums or all ranges"
                     if objective == "max" else "a Kronecker product or a marginal workload")
            raise ValueError(f"method: 'structured' with objective={objective!r} needs {needs}, got {workload.name}")
    if objective == "max":
        return _max_factorization(workload, method, tol, max_iterations, solver, solver_options, callback)
    gram = workload.gram()
    if not np.all(np.isfinite(gram)):
        raise ValueError("workload: its Gram matrix F^T F is not finite")
    m = workload.universe_size
    if not np.any(gram):
        raise ValueError("workload: F is zero; there is nothing to factorize")

    plan = _dense_plan(method, m <= SDP_MAX_UNIVERSE, tol,
                       lambda: _solve_iterative(workload, gram, tol, max_iterations, callback),
                       (f"sdp/{solver}", lambda: _solve_sdp(workload, gram, tol, solver, solver_options)))
    fact, _, _ = solve_in_order(plan, FactorizationError,
                                f"factorization_norm: no method certified a relative gap <= {tol:g}", _finish(tol))
    return fact


Plan = list[tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]]]


def _dense_plan(method: str, small: bool, tol: float, iterative: Callable[[], tuple[Factorization, int, bool]],
                sdp: tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]], name: str = "iterative") -> Plan:
    """The dense methods to try, in order: the iterative one (``iterative()`` returns the
    factorization, its iterations and whether it stopped at its limit; ``name`` in the
    statistics), then the SDP where ``method`` asks for it or, under ``"auto"``, where the
    problem is ``small``."""
    def attempt() -> Outcome[tuple[Factorization, int | None]]:
        fact, iterations, stopped = iterative()
        return _judge(fact, tol, iterations, stopped)

    plan: Plan = [(name, attempt)] if method in ("auto", "iterative") else []
    if method == "sdp" or (method == "auto" and small):
        plan.append(sdp)
    return plan


def _resolvent_plan(workload: Workload, objective: str, tol: float, max_iterations: int, callback: Callback | None,
                    force: bool) -> tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]] | None:
    """The resolvent method for a workload with a closed-form tridiagonal inverse (prefix sums,
    all ranges), from ``RESOLVENT_MIN_UNIVERSE`` cells (at any size when ``force``); else None."""
    from .resolvent_factorization import solve_resolvent, structure_of

    structure = structure_of(workload)
    if structure is None or not (force or workload.universe_size >= RESOLVENT_MIN_UNIVERSE):
        return None
    if objective == "max" and structure.inverse is None:
        if structure.ranges:
            return None  # the all-range max objective has its own method (_max_factorization)
        if force:
            raise ValueError(f"method: 'structured' with objective='max' needs a square workload with a bidiagonal "
                             f"inverse (prefix sums), got {workload.name}")
        return None

    def resolvent() -> Outcome[tuple[Factorization, int | None]]:
        assert structure is not None
        fact, iterations, stopped = solve_resolvent(workload, structure, objective, tol, max_iterations, callback)
        return _judge(fact, tol, iterations, stopped)

    return "resolvent", resolvent


def _max_factorization(workload: Workload, method: str, tol: float, max_iterations: int, solver: str,
                       solver_options: dict[str, Any] | None, callback: Callback | None) -> Factorization:
    """:func:`factorization_norm` for ``objective="max"`` on the explicit matrix: the dual
    ascent on ``(p, q)``, then the SDP where both sides are small."""
    from .max_factorization import solve_max_iterative, solve_max_sdp, solve_range_max

    k, m = workload.shape
    iterative: Callable[[], tuple[Factorization, int, bool]]
    if is_all_range(workload):
        if m > RANGE_MAX_UNIVERSE:
            raise ValueError(f"objective: 'max' of {workload.name} takes an m x m eigendecomposition a step (O(m^3): "
                             f"about 80 s in all at 2,048 cells, 10 minutes at 4,096); above {RANGE_MAX_UNIVERSE:,} cells it "
                             "is refused (the mean objective scales to 16,384 cells and beyond)")
        if method == "sdp" and k * m > MAX_OBJECTIVE_ENTRIES:
            raise ValueError(f"method: 'sdp' works on the explicit {k:,} x {m:,} matrix of {workload.name}, above "
                             f"{MAX_OBJECTIVE_ENTRIES:,} entries; method='auto' solves it on its Gram form")
        iterative = lambda: solve_range_max(workload, tol, max_iterations, callback)
        explicit = lambda: dense_matrix(workload)  # formed only for the SDP, within MAX_OBJECTIVE_ENTRIES
        name = "range-gram"
    else:
        if k * m > MAX_OBJECTIVE_ENTRIES:
            raise ValueError(f"objective: 'max' works on the explicit {k:,} x {m:,} matrix of {workload.name}, above "
                             f"{MAX_OBJECTIVE_ENTRIES:,} entries; a Kronecker product of small factors is solved "
                             "factor by factor, all ranges on their Gram form")
        matrix = dense_matrix(workload)
        if not np.all(np.isfinite(matrix)):
            raise ValueError("workload: F has a non-finite entry")
        if not np.any(matrix):
            raise ValueError("workload: F is zero; there is nothing to factorize")
        iterative = lambda: solve_max_iterative(workload, matrix, tol, max_iterations, callback)
        explicit = lambda: matrix
        name = "iterative"

    plan = _dense_plan(method, max(k, m) <= SDP_MAX_UNIVERSE, tol, iterative,
                       (f"sdp/{solver}", lambda: solve_max_sdp(workload, explicit(), tol, solver, solver_options)), name)
    fact, _, _ = solve_in_order(plan, FactorizationError,
                                f"factorization_norm: no method certified a relative gap <= {tol:g} on gamma_2^2",
                                _finish(tol))
    return fact


def _structured_plan(workload: Workload, tol: float, max_iterations: int, objective: str = "mean",
                     callback: Callback | None = None,
                     ) -> tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]] | None:
    """The structured method for ``workload``'s type, or None: the residual strategy for a union
    of tables (closed form for marginals, range contrasts for range blocks); for a Kronecker
    product, the optimum of each factor (to a tolerance whose product meets ``tol``: relative
    gaps compound as ``prod (1 + gap_i) - 1``); for another union, one Kronecker strategy. For
    the ``"max"`` objective, the Kronecker product (``gamma_2`` and its dual bound multiply over
    factors) and the marginal workload (the ascent on one weight per table, the residual
    strategy)."""
    from .marginal_factorization import AttributeBasis, grouped_lower_bound, helmert
    from .structured_factorization import (KronFactorization, ResidualFactorization, UnionKronFactorization,
                                           optimize_kron_strategy)
    from .workloads import Kron, KroneckerGram, table_terms
    from .workloads.structured import kron_terms

    tables = table_terms(workload)
    if objective == "max" and tables is not None and tables.is_marginal and not isinstance(workload, Kron):
        def marginal_max() -> Outcome[tuple[Factorization, int | None]]:
            from .max_factorization import solve_marginal_max

            assert tables is not None
            coefficients, bound, evaluations, stopped = solve_marginal_max(tables.sizes, tables.terms, tol,
                                                                           max_iterations, callback)
            bases = [None if block is None else AttributeBasis(np.eye(block.universe_size),
                                                               helmert(block.universe_size))
                     for block in tables.blocks]
            fact = ResidualFactorization(workload, tables, bases, lower_bound=bound, coefficients=coefficients,
                                         objective="max")
            return _judge(fact, tol, evaluations, stopped)

        return "residual", marginal_max
    if objective == "max" and not isinstance(workload, Kron):
        return None
    if objective == "mean" and tables is not None and (tables.is_marginal or not isinstance(workload, Kron)):
        def residual() -> Outcome[tuple[Factorization, int | None]]:
            assert tables is not None
            bases: list[AttributeBasis | None] = []
            ranged: dict[int, tuple[float, int]] = {}
            for attribute, block in enumerate(tables.blocks):
                if block is None:
                    bases.append(None)
                elif block._scaled_identity() == 1.0:
                    bases.append(AttributeBasis(np.eye(block.universe_size), helmert(block.universe_size)))
                else:
                    bases.append(_range_basis(block, max_iterations))
                    ranged[attribute] = (_lower_bound_of(block, max_iterations), block.num_queries)
            bound = grouped_lower_bound(tables.sizes, tables.terms, ranged, workload.num_queries)
            fact = ResidualFactorization(workload, tables, bases, lower_bound=bound)
            # Marginals: optimal over all strategies, held to tol. Range blocks: optimal within the
            # class, its gap to the grouped bound reported, not held to tol.
            return _judge(fact, tol if tables.is_marginal else None)

        return ("residual" if tables.is_marginal else "range-residual"), residual
    if isinstance(workload, Kron):
        share = (1.0 + tol) ** (1.0 / len(workload.factors)) - 1.0

        def kron() -> Outcome[tuple[Factorization, int | None]]:
            solved: dict[int, Factorization] = {}
            for factor in workload.factors:  # a factor shared by several attributes is solved once
                if id(factor) not in solved:
                    # Small factors are solved tightly, at little cost: the product is then within
                    # UNION_STEP_TOL of the optimum (CPS W2: 6.97554, not 6.97655 at tol=1e-3).
                    tight = min(share, UNION_STEP_TOL) if factor.universe_size <= DENSE_UNION_UNIVERSE else share
                    solved[id(factor)] = _solve_step(factor, tight, max_iterations, objective)
            factors = [solved[id(factor)] for factor in workload.factors]
            iterations = sum(fact.stats.iterations or 0 for fact in solved.values())
            return _judge(KronFactorization(workload, factors), tol, iterations)

        return "kron", kron
    products = kron_terms(workload)
    if products is not None:
        def union() -> Outcome[tuple[Factorization, int | None]]:
            assert products is not None
            solved: dict[int, Factorization] = {}
            for term in products:
                for factor in term.factors:
                    if id(factor) not in solved:
                        solved[id(factor)] = factorization_norm(factor, tol=tol, max_iterations=max_iterations)
            bounds = [math.prod(solved[id(factor)].lower_bound or 0.0 for factor in term.factors) for term in products]
            # Each attribute's step is solved tightly: the sweeps compound its inexactness.
            # The Gram matrix term by term over the products' own factors (a nested product's
            # kronecker_gram would split its attributes further than the strategy does).
            gram = KroneckerGram([(1.0, [factor.gram() for factor in term.factors]) for term in products])
            strategies, solves = optimize_kron_strategy(
                gram, lambda attribute: _solve_step(attribute, min(tol, UNION_STEP_TOL), max_iterations))
            # A strategy from a restricted class: its gap to the certified bound is reported, not
            # held to tol (the statistics say whether it met it).
            return _judge(UnionKronFactorization(workload, products, strategies, bounds), None, solves)

        return "kron-strategy", union
    return None


def _solve_step(workload: Workload | np.ndarray, tol: float, max_iterations: int,
                objective: str = "mean") -> Factorization:
    """One small step of a structured method, solved to ``tol``: tight steps may need more
    iterations than the caller allowed for the whole (at least ``STEP_MIN_ITERATIONS``)."""
    return factorization_norm(workload, objective=objective, tol=tol,
                              max_iterations=max(max_iterations, STEP_MIN_ITERATIONS))


def _range_basis(block: Workload, max_iterations: int) -> Any:
    """A range block's residual basis: its contrasts are the optimal strategy of ``B (I - 1 1^T /
    n)``, whose rows the row-space method keeps orthogonal to ``1`` (the rounding left along
    ``1`` is removed), certified to ``UNION_STEP_TOL``."""
    from .marginal_factorization import AttributeBasis

    matrix = block.toarray()
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    contrasts = _solve_step(centred, UNION_STEP_TOL, max_iterations).strategy
    rows = contrasts.toarray()
    return AttributeBasis(matrix, rows - rows.mean(axis=1, keepdims=True))


def _lower_bound_of(block: Workload, max_iterations: int) -> float:
    """A certified lower bound on one block's gamma."""
    bound = _solve_step(block, UNION_STEP_TOL, max_iterations).lower_bound
    assert bound is not None  # every optimized factorization carries its bound
    return bound


def _check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise TypeError(f"alpha: expected a number, got {alpha!r}")
    if not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha: expected a finite number >= 0, got {alpha!r}")
    return float(alpha)


def approximate_lower_bound(matrix: np.ndarray, alpha: float, q: np.ndarray) -> float:
    """A lower bound on ``gamma_alpha(F)`` from weights ``q`` in the simplex:
    ``(||F D^1/2||_* - alpha sqrt(k) sum_j sqrt(q_j) ||Y e_j||)_+ / sqrt(k)``, with ``D = diag(q)``
    and ``Y = U V^T`` from the SVD of ``F D^1/2`` (derived in ``docs/theory/factorization.md``).
    """
    k = matrix.shape[0]
    left, singular, right = np.linalg.svd(matrix * np.sqrt(q)[None, :], full_matrices=False)
    alignment = left @ right
    slack = alpha * math.sqrt(k) * float(np.sum(np.sqrt(q) * np.linalg.norm(alignment, axis=0)))
    return max(0.0, float(singular.sum()) - slack) / math.sqrt(k)


@record_total_time
@on_one_blas_thread
def approximate_factorization_norm(
    workload: Workload | Any,
    alpha: float,
    *,
    solver: str = "SCS",
    solver_options: dict[str, Any] | None = None,
    max_entries: int = 20_000,
) -> Factorization:
    """The optimal approximate factorization ``R M = F + E``, ``||E||_{1->2} <= alpha sqrt(k)``.

    Its value ``gamma_alpha(F)`` trades a bias for noise: the factorization mechanism on it has
    root-mean-square error at most ``alpha + sigma ||R||_F / sqrt(k)`` on a normalized histogram.
    Solved as the semidefinite program of :func:`factorization_norm` with F replaced by ``F + E``
    and a second-order-cone constraint on each column of E, which keeps it convex. The result carries E (``perturbation``, the
    realized ``R M - F``), an explicit R, and a lower bound from the dual weights at the
    ``alpha`` the result satisfies: the solver meets the column constraint only to its
    tolerance, so ``residual`` (``||R M - F||_{1->2}``) may exceed ``alpha sqrt(k)`` by that much
    and is reported, never hidden. ``alpha = 0`` is ``gamma(F)``. The error bound and the lower
    bound are derived in the theory page *The factorization mechanism and gamma(F)*
    (``docs/theory/factorization.md``).

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F. Needs the explicit matrix (E has its shape): ``k * m`` at most ``max_entries``.
    alpha : float
        The bias allowed per query, ``>= 0``.
    solver : str, default "SCS"
        The CVXPY solver.
    solver_options : dict, optional
        Keyword options for ``problem.solve``.
    max_entries : int, default 20000
        The largest ``k * m`` accepted.

    Returns
    -------
    Factorization
        With ``stats`` (solver ``"approximate-sdp/<solver>"``): its relative gap is reported
        against no tolerance (``stats.tolerance_met`` is False); ``stats.total_time`` covers the
        whole call, CVXPY's import on first use included.

    Raises
    ------
    TypeError
        If ``alpha`` is not a number.
    ValueError
        If ``alpha`` is negative or not finite, or ``k * m`` exceeds ``max_entries``.
    FactorizationError
        If the solver returns no solution, or its factorization fails the final check
        (:meth:`~projmech.factorization.Factorization.defect`: ``R M = F + E``, a finite
        ``gamma`` from the factors, ``lower_bound <= gamma``).

    Examples
    --------
    >>> import projmech as pm
    >>> F = pm.prefix(4)
    >>> approx = pm.approximate_factorization_norm(F, alpha=0.1)
    >>> round(approx.gamma, 2), round(pm.factorization_norm(F).gamma, 2)
    (1.12, 1.31)
    >>> round(approx.residual / 2, 2)  # ||E||_{1->2} / sqrt(k): the bias alpha
    0.1
    """
    import cvxpy as cp

    alpha = _check_alpha(alpha)
    workload = as_workload(workload)
    k, m = workload.shape
    if k * m > max_entries:
        raise ValueError(
            f"workload: the approximate factorization SDP has a k x m variable E; k*m = {k * m:,} exceeds "
            f"max_entries={max_entries:,}"
        )
    F = workload.toarray()

    def approximate() -> Outcome[tuple[Factorization, int | None]]:
        X = cp.Variable((m, m), symmetric=True)
        U = cp.Variable((k, k), symmetric=True)
        E = cp.Variable((k, m))
        diagonal = cp.diag(X) <= 1
        target = F + E
        constraints = [cp.bmat([[U, target], [target.T, X]]) >> 0, diagonal,
                       cp.norm(E, 2, axis=0) <= alpha * math.sqrt(k)]
        problem = cp.Problem(cp.Minimize(cp.trace(U)), constraints)
        note, failed = _solve_cvxpy(problem, solver, solver_options, (X, E))
        if failed is not None:
            return failed
        assert X.value is not None and E.value is not None  # else _solve_cvxpy reports a failure
        strategy, pinv = _strategy_from_gram_matrix(X.value)
        perturbation = E.value
        # Keep E exactly feasible: rescale any column the solver left slightly outside the ball.
        norms = np.linalg.norm(perturbation, axis=0)
        limit = alpha * math.sqrt(k)
        perturbation = perturbation * np.minimum(1.0, limit / np.maximum(norms, np.finfo(float).tiny))[None, :]
        reconstruction = (F + perturbation) @ pinv
        realized = reconstruction @ strategy - F
        # The solver's X is accurate only to its tolerance, so R M - F may exceed alpha sqrt(k) by
        # that much; the bound is then taken at the alpha this factorization actually satisfies
        # (gamma_alpha only decreases with alpha), which keeps it a bound on what is reported.
        achieved = max(alpha, float(np.linalg.norm(realized, axis=0).max()) / math.sqrt(k))
        q = _weights_from_dual(diagonal.dual_value, m)
        fact = Factorization(workload, strategy, reconstruction, strategy_pinv=pinv, perturbation=realized,
                             lower_bound=approximate_lower_bound(F, achieved, q))
        return _judge(fact, None, note=note)

    fact, _, _ = solve_in_order([(f"approximate-sdp/{solver}", approximate)], FactorizationError,
                                "approximate_factorization_norm: no factorization passed the final check",
                                _finish(None))
    return fact
