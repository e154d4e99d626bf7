"""The optimal factorization norm gamma(F), with a certified lower bound, and gamma_alpha(F).

``gamma(F)`` is a semidefinite program in ``X = M^T M`` that sees F only through ``G = F^T F``;
every weight vector ``q`` of its dual certifies ``gamma(F) >= ||F diag(q)^1/2||_* / sqrt(k)``. The
iterative method ascends that dual in F's row space, so every iterate certifies its own gap and
``R = F M^+`` answers F exactly. Derivations: :doc:`/theory/factorization` (§2-5).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from .._threads import on_one_blas_thread
from ..solve import Attempt, Callback, Outcome, SolveStats, record_total_time, solve_in_order
from ..workloads import Workload
from . import _kernel as kernel
from ._base import Factorization, FactorizationError, as_workload

__all__ = ["approximate_factorization_norm"]


def _sum_of_square_roots(eigenvalues: np.ndarray) -> float:
    """``sum_j sqrt(w_j)`` for computed eigenvalues of a PSD matrix, rounded down: each lowered by the
    eigensolver's error bound first, so that a lower bound cannot be lifted above the truth.
    """
    slack = eigenvalues.size * np.finfo(float).eps * float(np.max(np.abs(eigenvalues)))
    return float(np.sqrt(np.clip(eigenvalues - slack, 0.0, None)).sum())


def _dual_value(gram: np.ndarray, q: np.ndarray) -> float:
    """``||F diag(q)^1/2||_* = tr((D^1/2 G D^1/2)^1/2)``, rounded down."""
    root = np.sqrt(q)
    return _sum_of_square_roots(np.linalg.eigvalsh(root[:, None] * gram * root[None, :]))


def _row_space(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(B, U, s)``: ``B = diag(s) U^T`` (``r x m``, full row rank) with ``B^T B = G``, ``U`` an
    orthonormal basis of F's row space and ``s`` the square roots of G's nonzero eigenvalues
    (those above ``RANK_RTOL`` times the largest)."""
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    keep = eigenvalues > kernel.RANK_RTOL * max(eigenvalues[-1], 0.0)
    scales, directions = np.sqrt(eigenvalues[keep]), eigenvectors[:, keep]
    return scales[:, None] * directions.T, directions, scales


def _tridiagonal_inverse(gram: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The bands of ``G^-1`` if it is tridiagonal (prefix and all-range workloads), else None; three
    Cholesky solves recover it, as columns three apart have disjoint supports. Nothing rests on it.
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
    """The dual map ``q -> (phi(q), diag X*(q))`` and the primal recovery, for one Gram matrix: on
    ``D^1/2 G D^1/2`` at full rank (tridiagonal where ``G^-1`` is), else on ``B D B^T`` in the row space.
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
        return kernel.canonical_signs(strategy, pinv)


def strategy_from_eigen(q: np.ndarray, peak: float, eigenvalues: np.ndarray,
                        eigenvectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, M^+)`` with ``M^T M = D^-1/2 A^1/2 D^-1/2 / peak`` from the eigendecomposition of
    ``A = D^1/2 G D^1/2`` (``D = diag(q)``): the strategy of weights ``q`` on the Gram matrix G,
    its eigenvalues below ``RANK_RTOL`` times the largest dropped (F's row space)."""
    positive = eigenvalues > kernel.RANK_RTOL * eigenvalues[-1]
    values, vectors = eigenvalues[positive], eigenvectors[:, positive]
    root = np.sqrt(q)
    strategy = (values[:, None] ** 0.25 * vectors.T) / root[None, :] / math.sqrt(peak)
    pinv = (root[:, None] * vectors) * values[None, :] ** -0.25 * math.sqrt(peak)
    return kernel.canonical_signs(strategy, pinv)


class _Point:
    """One evaluation of the dual map at ``q``: value, diagonal, gap and the residual ``T(q) - q`` of the
    multiplicative update, in ``q`` itself so that vanishing weights contribute vanishing residuals.
    """

    def __init__(self, dual: _RowSpaceDual, q: np.ndarray) -> None:
        self.x = self.q = kernel.normalize_weights(q)
        self.value, diagonal, self.eigen = dual.step(self.q)
        self.peak = float(diagonal.max())
        self.gap = self.peak / self.value - 1.0
        self.target = kernel.normalize_weights(self.q * (np.clip(diagonal, 0.0, None) / self.value) ** 2)
        self.residual = self.target - self.q
        self.residual_norm = float(np.linalg.norm(self.residual))


def _solve_iterative(workload: Workload, gram: np.ndarray, tol: float, max_iterations: int,
                     callback: Callback | None) -> tuple[Factorization, int, bool]:
    """The dual ascent's factorization, its iterations and whether it stopped at
    ``max_iterations`` short of ``tol`` (by its own gap; :func:`judge` recomputes it)."""
    dual = _RowSpaceDual(gram)
    m = gram.shape[0]
    best, iterations = kernel.iterate(lambda q: _Point(dual, q), np.full(m, 1.0 / m), tol, max_iterations,
                                      callback=callback)
    strategy, pinv = dual.recover(best.q, best.peak, best.eigen)
    k = workload.num_queries
    # The tridiagonal path works on the computed G^-1; the certificate uses G itself.
    value = best.value if dual.inverse_bands is None else _dual_value(gram, best.q)
    fact = Factorization(workload, strategy, strategy_pinv=pinv, lower_bound=value / math.sqrt(k), gram=gram)
    return fact, iterations, best.gap > tol


def _finish(tol: float | None) -> Callable[[tuple[Factorization, int | None], Attempt, tuple[Attempt, ...]],
                                           Factorization]:
    """``solve_in_order``'s ``finish``: the checked factorization with its statistics."""
    def finish(draft: tuple[Factorization, int | None], attempt: Attempt,
               attempts: tuple[Attempt, ...]) -> Factorization:
        fact, iterations = draft
        return fact._with_stats(SolveStats.from_attempt(attempt, attempts, iterations=iterations, gap=fact.relative_gap,
                                                       relative_gap=True, tolerance=tol))

    return finish


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
    note, failed = kernel.solve_cvxpy(problem, solver, solver_options, (X,))
    if failed is not None:
        return failed
    assert X.value is not None  # solve_cvxpy reports a variable without a value as failed
    strategy, pinv = kernel.strategy_from_gram_matrix(X.value)
    q = kernel.weights_from_dual(diagonal.dual_value, m)
    fact = Factorization(workload, strategy, strategy_pinv=pinv, lower_bound=_dual_value(gram, q) / math.sqrt(k),
                         gram=gram)
    return kernel.judge(fact, tol, note=note)


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

    ``gamma_alpha(F)`` trades bias for noise: RMSE at most ``alpha + sigma ||R||_F / sqrt(k)``. The
    solver meets the column constraint only to its tolerance, so ``residual`` may exceed
    ``alpha sqrt(k)`` by that much and is reported. Derivation: :doc:`/theory/factorization` (§5).

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F, explicit (E has its shape).
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
        With E (``perturbation``), an explicit R, a lower bound and ``stats``
        (``"approximate-sdp/<solver>"``, no tolerance met).

    Examples
    --------
    >>> approx = pm.approximate_factorization_norm(pm.prefix(4), alpha=0.1)
    >>> round(approx.gamma, 2), round(approx.residual / 2, 2)  # ||E||_{1->2} / sqrt(k) = alpha
    (1.12, 0.1)
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
        note, failed = kernel.solve_cvxpy(problem, solver, solver_options, (X, E))
        if failed is not None:
            return failed
        assert X.value is not None and E.value is not None  # else solve_cvxpy reports a failure
        strategy, pinv = kernel.strategy_from_gram_matrix(X.value)
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
        q = kernel.weights_from_dual(diagonal.dual_value, m)
        fact = Factorization(workload, strategy, reconstruction, strategy_pinv=pinv, perturbation=realized,
                             lower_bound=approximate_lower_bound(F, achieved, q))
        return kernel.judge(fact, None, note=note)

    fact, _, _ = solve_in_order([(f"approximate-sdp/{solver}", approximate)], FactorizationError,
                                "approximate_factorization_norm: no factorization passed the final check",
                                _finish(None))
    return fact
