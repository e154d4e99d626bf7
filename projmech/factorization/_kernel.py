"""The kernel every factorization method shares: the dual ascent (:func:`iterate`), the strategy
from a Gram matrix, the CVXPY call and the final judgement of a factorization, so that no two
method modules import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np

from ..solve import Callback, Outcome, Status, status_from_cvxpy
from ._base import Factorization

#: Eigenvalues below this fraction of the largest are treated as zero when finding F's rank.
RANK_RTOL = 1e-10


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

    An extrapolated point that fails the safeguard (a smaller residual, or with ``monotone`` a dual
    value no lower) is replaced by the plain step and the history restarts. Returns the point with
    the smallest gap and the number of evaluations.
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


def judge(fact: Factorization, tol: float | None, iterations: int | None = None, stopped: bool = False,
           note: str = "") -> Outcome[tuple[Factorization, int | None]]:
    """A factorization through the final check (:meth:`~projmech.Factorization.defect`) and the
    tolerance on its relative gap (any when ``tol`` is None): optimal, iteration limit or rejected.
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


def solve_cvxpy(problem: Any, solver: str, solver_options: dict[str, Any] | None,
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


def weights_from_dual(dual_values: Any, m: int) -> np.ndarray:
    q = np.clip(np.asarray(dual_values, dtype=float).ravel(), 0.0, None) if dual_values is not None else None
    if q is None or q.shape != (m,) or not np.all(np.isfinite(q)) or q.sum() <= 0:
        return np.full(m, 1.0 / m)
    return q / q.sum()


def strategy_from_gram_matrix(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M = X^1/2`` after scaling X to ``max diag = 1``, with its pseudo-inverse."""
    X = (X + X.T) / 2
    X = X / max(float(np.max(np.diag(X))), np.finfo(float).tiny)
    eigenvalues, eigenvectors = np.linalg.eigh(X)
    keep = eigenvalues > RANK_RTOL * max(eigenvalues[-1], 0.0)
    values, vectors = eigenvalues[keep], eigenvectors[:, keep]
    strategy = np.sqrt(values)[:, None] * vectors.T
    return canonical_signs(strategy, vectors / np.sqrt(values)[None, :])


def canonical_signs(strategy: np.ndarray, pinv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S M, M^+ S)`` for the signs ``S`` that make each row's largest entry positive: an
    eigensolver may return any sign of each eigenvector (and 1 and 2 BLAS threads do differ), and
    a flipped row measures the same query with the noise negated, so the same seed would give
    other answers. ``M^T M`` and the reconstruction are unchanged."""
    largest = np.argmax(np.abs(strategy), axis=1)
    signs = np.where(strategy[np.arange(strategy.shape[0]), largest] < 0, -1.0, 1.0)
    return strategy * signs[:, None], pinv * signs[None, :]
