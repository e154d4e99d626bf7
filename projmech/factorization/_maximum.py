"""The max-error factorization norm gamma_2(F), with a certified lower bound :cite:p:`MNT20`.

``gamma_2(F) = min ||R||_{2->inf} ||M||_{1->2}`` is the worst query's error factor; its dual
``max_{p, q} ||D_p^1/2 F D_q^1/2||_*`` is concave, so every pair of distributions certifies a
bound. The ascent is the multiplicative fixed point on ``(p, q)`` with safeguarded Anderson
acceleration. Derivation: :doc:`/theory/factorization` (§7, §10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..solve import Callback, Outcome
from ..workloads import Workload
from . import _kernel as kernel
from ._base import Factorization
from ._range_forms import prefix_form, range_gram, range_squares
from ._residual import subsets_of

# Reached through factorization_norm(objective="max") and factorization_lower_bound.
__all__: list[str] = []

#: Weights are kept above this fraction of the largest: the factors divide by their square
#: roots, so rounding in the SVD (``eps ||A||``) reaches ``R M - F`` amplified by at most
#: ``1 / WEIGHT_FLOOR`` (``2e-7`` relative), inside the final check's ``1e-6``.
WEIGHT_FLOOR = 1e-9

#: The iteration's exponent: ``p <- p (a / Phi)^STEP_POWER``; 2 converges in about half the
#: evaluations of 1 on prefix and range workloads, as for the mean objective.
STEP_POWER = 2.0


def _step(weights: np.ndarray, norms: np.ndarray, value: float) -> np.ndarray:
    """The ascent's plain update of one side's weights, ``w (a / Phi)^STEP_POWER`` into the
    simplex (squared norms below zero by rounding count as zero)."""
    return kernel.normalize_weights(weights * (np.clip(norms, 0.0, None) / value) ** STEP_POWER, WEIGHT_FLOOR)


class _AscentPoint:
    """What :func:`~projmech.factorization._kernel.iterate` reads of an evaluation besides its
    value and gap: the plain update ``target`` and the fixed-point residual."""

    x: np.ndarray

    def _aim(self, target: np.ndarray) -> None:
        self.target = target
        self.residual = target - self.x
        self.residual_norm = float(np.linalg.norm(self.residual))


def max_lower_bound(matrix: np.ndarray, query_weights: np.ndarray, cell_weights: np.ndarray) -> float:
    """``||D_p^1/2 F D_q^1/2||_*`` rounded down, a certified lower bound on ``gamma_2(F)``: each singular
    value lowered (Weyl) by the SVD's backward error and that of forming the weighted matrix.
    """
    singular = np.linalg.svd(np.sqrt(query_weights)[:, None] * matrix * np.sqrt(cell_weights)[None, :],
                             compute_uv=False)
    k, m = matrix.shape
    slack = (2 * max(k, m) + 3 * math.sqrt(min(k, m))) * np.finfo(float).eps * float(singular[0])
    return float(np.clip(singular - slack, 0.0, None).sum())


class _MaxPoint(_AscentPoint):
    """One evaluation at ``x = (p, q)``: ``Phi``, the squared row norms of R and column norms of M of the
    factorization the weights define (from the SVD, accurate however extreme the weights), its gap.
    """

    def __init__(self, matrix: np.ndarray, rank: int, x: np.ndarray) -> None:
        k = matrix.shape[0]
        self.p = kernel.normalize_weights(x[:k], WEIGHT_FLOOR)
        self.q = kernel.normalize_weights(x[k:], WEIGHT_FLOOR)
        self.x = np.concatenate([self.p, self.q])
        left, singular, right = np.linalg.svd(np.sqrt(self.p)[:, None] * matrix * np.sqrt(self.q)[None, :],
                                              full_matrices=False)
        # A has F's rank for positive weights.
        self.left, self.singular, self.right = left[:, :rank], singular[:rank], right[:rank]
        self.value = float(self.singular.sum())
        rows = (self.left**2) @ self.singular / self.p
        columns = self.singular @ self.right**2 / self.q
        self.peak = float(columns.max())
        self.gap = float(rows.max()) * self.peak / self.value**2 - 1.0
        self._aim(np.concatenate([_step(self.p, rows, self.value), _step(self.q, columns, self.value)]))

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, M)`` with ``R M = F``: ``D_p^-1/2 U S^1/2`` and ``S^1/2 V^T D_q^-1/2``, balanced so
        that ``max_j ||m_j|| = 1``."""
        root = np.sqrt(self.singular)
        scale = math.sqrt(self.peak)
        reconstruction = self.left * root[None, :] / np.sqrt(self.p)[:, None] * scale
        strategy = root[:, None] * self.right / np.sqrt(self.q)[None, :] / scale
        strategy, reconstruction = kernel.canonical_signs(strategy, reconstruction)
        return reconstruction, strategy


def solve_max_iterative(workload: Workload, matrix: np.ndarray, tol: float, max_iterations: int,
                        callback: Callback | None) -> tuple[Factorization, int, bool]:
    """The dual ascent's factorization for ``gamma_2`` on the explicit ``matrix``, its evaluations and whether it
    stopped short of ``tol``; a wide F is solved transposed (``gamma_2(F) = gamma_2(F^T)``).
    """
    transposed = matrix.shape[0] < matrix.shape[1]
    solved = matrix.T if transposed else matrix
    k, m = solved.shape
    singular = np.linalg.svd(solved, compute_uv=False)
    rank = int(np.sum(singular > kernel.RANK_RTOL * singular[0]))
    start = np.concatenate([np.full(k, 1.0 / k), np.full(m, 1.0 / m)])
    best, evaluations = kernel.iterate(lambda x: _MaxPoint(solved, rank, x), start, tol, max_iterations,
                                       callback=callback, monotone=True)
    reconstruction, strategy = best.factors()
    if transposed:
        # F^T = R' M', so F = M'^T R'^T: the strategy is R'^T, the reconstruction M'^T.
        strategy, reconstruction = kernel.canonical_signs(reconstruction.T, strategy.T)
        bound = max_lower_bound(matrix, best.q, best.p)
    else:
        bound = max_lower_bound(matrix, best.p, best.q)
    fact = Factorization(workload, strategy, reconstruction, lower_bound=bound, objective="max")
    return fact, evaluations, best.gap > tol


def eigenvalue_lower_bound(eigenvalues: np.ndarray, forming: float) -> float:
    """``sum_i lambda_i^1/2`` of a PSD matrix from its computed eigenvalues, rounded down: each lowered by
    the eigensolver's backward error plus ``forming``, both times the largest eigenvalue.
    """
    slack = (2 * eigenvalues.size * np.finfo(float).eps + forming) * float(np.max(eigenvalues))
    return float(np.sqrt(np.clip(eigenvalues - slack, 0.0, None)).sum())


class _RangeMaxPoint(_AscentPoint):
    """One evaluation at ``x = (p, q)`` for the all-range workload from its ``m x m`` Gram form
    (:func:`~projmech.factorization._range_forms.range_gram`): ``O(m^3)`` a step instead of ``O(m^4)``.
    """

    def __init__(self, m: int, x: np.ndarray) -> None:
        k = m * (m + 1) // 2
        self.m = m
        self.p = kernel.normalize_weights(x[:k], WEIGHT_FLOOR)
        self.q = kernel.normalize_weights(x[k:], WEIGHT_FLOOR)
        self.x = np.concatenate([self.p, self.q])
        root = np.sqrt(self.q)
        # F has full column rank (its Gram inverse is a second difference), so with positive
        # weights every eigenvalue is positive; clipping only guards rounding below zero.
        self.eigenvalues, self.vectors = np.linalg.eigh(root[:, None] * range_gram(self.p, m) * root[None, :])
        self.eigenvalues = np.clip(self.eigenvalues, np.finfo(float).tiny, None)
        self.value = float(np.sqrt(self.eigenvalues).sum())
        columns = self.vectors**2 @ np.sqrt(self.eigenvalues) / self.q
        self.peak = float(columns.max())
        factor = root[:, None] * self.vectors * self.eigenvalues[None, :] ** -0.25
        rows = range_squares(prefix_form(factor @ factor.T))
        self.gap = float(rows.max()) * self.peak / self.value**2 - 1.0
        self._aim(np.concatenate([_step(self.p, rows, self.value), _step(self.q, columns, self.value)]))

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(M, M^-1)``: ``M = (D_q^1/2 G D_q^1/2)^1/4 D_q^-1/2`` scaled to ``max_j ||m_j|| = 1``
        (its Gram matrix is ``X = D_q^-1/2 (D_q^1/2 G D_q^1/2)^1/2 D_q^-1/2 / peak``)."""
        root = np.sqrt(self.q)
        quarter = self.eigenvalues ** 0.25
        scale = math.sqrt(self.peak)
        strategy = (self.vectors * quarter[None, :]) @ self.vectors.T / root[None, :] / scale
        inverse = root[:, None] * (self.vectors / quarter[None, :]) @ self.vectors.T * scale
        return strategy, inverse


def solve_range_max(workload: Workload, tol: float, max_iterations: int,
                    callback: Callback | None) -> tuple[Factorization, int, bool]:
    """The dual ascent for ``gamma_2`` of the all-range workload on its ``m x m`` Gram form
    (:class:`_RangeMaxPoint`), its factorization with the certified bound, the evaluations and
    whether it stopped at ``max_iterations`` short of ``tol`` (by its own gap)."""
    m = workload.universe_size
    k = m * (m + 1) // 2
    start = np.concatenate([np.full(k, 1.0 / k), np.full(m, 1.0 / m)])
    best, evaluations = kernel.iterate(lambda x: _RangeMaxPoint(m, x), start, tol, max_iterations, callback=callback,
                                       monotone=True)
    strategy, inverse = best.factors()
    # Forming D_q^1/2 G D_q^1/2: G's entries are sums of nonnegative weights (2 m eps relative,
    # range_gram), then two products and a square root; for a nonnegative matrix that bounds the
    # spectral norm of the error by the same factor times the largest eigenvalue.
    bound = eigenvalue_lower_bound(best.eigenvalues, (2 * m + 3) * np.finfo(float).eps)
    # Phi is homogeneous of degree 1/2 in each of p and q: weights summing to 1 + delta in
    # floating point would lift it by about delta / 2.
    bound /= math.sqrt(math.fsum(best.p) * math.fsum(best.q))
    fact = Factorization(workload, strategy, strategy_pinv=inverse, lower_bound=bound, objective="max")
    return fact, evaluations, best.gap > tol


class _MarginalMaxPoint(_AscentPoint):
    """One evaluation for a marginal workload at table weights ``x``: the weighted Gram matrix is diagonal
    on the residual subspaces, so ``Phi`` and the row norms are sums over subsets (§10 of the theory page).
    """

    def __init__(self, incidence: np.ndarray, dimensions: np.ndarray, x: np.ndarray) -> None:
        self.x = kernel.normalize_weights(x, WEIGHT_FLOOR)
        self.eigenvalues = self.x @ incidence
        self.value = float(dimensions @ np.sqrt(self.eigenvalues))
        rows = incidence @ (dimensions / np.sqrt(self.eigenvalues))
        self.gap = float(rows.max()) / self.value - 1.0
        self._aim(_step(self.x, rows, self.value))


def solve_marginal_max(sizes: tuple[int, ...], terms: list[tuple[tuple[int, ...], float]], tol: float,
                       max_iterations: int, callback: Callback | None
                       ) -> tuple[dict[tuple[int, ...], float], float, int, bool]:
    """``gamma_2`` of a marginal workload: the residual strategy's coefficients, the certified bound, the
    evaluations and whether the ascent stopped short of ``tol``. By symmetry the ascent runs on one
    weight per table (:doc:`/theory/factorization`, §10).
    """
    # A table of weight zero has no error to bound: it takes no dual weight (kept at the floor,
    # it would hold the gap near the floor).
    active = [(subset, weight) for subset, weight in terms if weight != 0]
    parts = sorted({part for subset, _ in active for part in subsets_of(subset) if all(sizes[i] > 1 for i in part)})
    if not parts:
        raise ValueError("workload: F is zero; there is nothing to factorize")
    index = {part: column for column, part in enumerate(parts)}
    incidence = np.zeros((len(active), len(parts)))
    for row, (subset, weight) in enumerate(active):
        size = math.prod(sizes[i] for i in subset)
        for part in subsets_of(subset):
            if part in index:
                incidence[row, index[part]] = weight**2 / size**2
    dimensions = np.array([math.prod(sizes[i] - 1 for i in part) for part in parts], dtype=float)
    start = np.full(len(active), 1.0 / len(active))
    best, evaluations = kernel.iterate(lambda x: _MarginalMaxPoint(incidence, dimensions, x), start, tol,
                                       max_iterations, callback=callback, monotone=True)
    # Phi is a sum of square roots of sums of nonnegative terms: each step is off by a few eps
    # relative, all of them by at most this; and it is homogeneous of degree 1/2 in x.
    slack = (len(active) + len(parts) + 8) * np.finfo(float).eps
    bound = best.value * (1.0 - 2.0 * slack) / math.sqrt(math.fsum(best.x))
    coefficients = {part: math.sqrt(math.sqrt(float(best.eigenvalues[column])) * math.prod(sizes[i] for i in part)
                                    / best.value) for part, column in index.items()}
    return coefficients, bound, evaluations, best.gap > tol


def solve_max_sdp(workload: Workload, matrix: np.ndarray, tol: float, solver: str,
                  solver_options: dict[str, Any] | None) -> Outcome[tuple[Factorization, int | None]]:
    """The reference semidefinite program for ``gamma_2``:
    ``min t s.t. [[W, F], [F^T, X]] >= 0, diag(W) <= t, diag(X) <= t``, whose value is
    ``gamma_2(F)``; the strategy comes from X, the lower bound from the two diagonal constraints'
    dual weights."""
    import cvxpy as cp

    k, m = matrix.shape
    W = cp.Variable((k, k), symmetric=True)
    X = cp.Variable((m, m), symmetric=True)
    t = cp.Variable()
    rows, columns = cp.diag(W) <= t, cp.diag(X) <= t
    problem = cp.Problem(cp.Minimize(t), [cp.bmat([[W, matrix], [matrix.T, X]]) >> 0, rows, columns])
    note, failed = kernel.solve_cvxpy(problem, solver, solver_options, (X,))
    if failed is not None:
        return failed
    assert X.value is not None  # solve_cvxpy reports a variable without a value as failed
    strategy, pinv = kernel.strategy_from_gram_matrix(X.value)
    bound = max_lower_bound(matrix, kernel.weights_from_dual(rows.dual_value, k),
                            kernel.weights_from_dual(columns.dual_value, m))
    fact = Factorization(workload, strategy, strategy_pinv=pinv, lower_bound=bound, objective="max")
    return kernel.judge(fact, tol, note=note)
