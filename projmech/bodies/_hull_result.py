"""What a projection onto K_Q returns, and the check that certifies it whatever solver made it: the
Frank–Wolfe gap of the witness (:cite:p:`Jag13`) from a fresh gradient (:doc:`/theory/projection`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..solve import SolveError, SolveResult, SolveStats
from ..workloads import Workload

__all__ = ["ProjectionResult", "ProjectionError", "frank_wolfe_gap"]

#: The final check's tolerance on ``|sum(w) - 1|``: a renormalized witness of up to 2^22 weights
#: sums to 1 within about ``22 eps``; a witness that is not a distribution is far off.
_SUM_TOL = 1e-10

#: The final check's tolerance on the solver's answers against ``F w``, relative to
#: ``max_i (|F| w)_i`` (which bounds the rounding error of either sum).
_ANSWER_RTOL = 1e-9


@dataclass(frozen=True, repr=False)
class ProjectionResult(SolveResult):
    """A certified projection onto ``K_Q``, as :func:`~projmech.bodies.project_to_hull` returns it.

    Parameters
    ----------
    answers : ndarray, shape (k,)
        ``F @ weights``: a point of ``K_Q``.
    weights : ndarray or 1-d scipy.sparse.csr_array, shape (m,)
        The witness distribution over the universe (sparse from the ``"fast"`` solver).
    distance : float
        ``||answers - y||_2``.
    raw_feasibility_error : float
        ``max(max(-w_raw), |sum(w_raw) - 1|)`` of the solver's output before cleaning.
    stats : SolveStats
        ``stats.gap`` is the Frank–Wolfe gap of ``weights``: ``||answers - Pi(y)||_2 <= sqrt(2 gap)``.

    Examples
    --------
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), way=2)
    >>> result = pm.project_to_hull(workload, np.full(12, 0.3), solver="fast")
    >>> round(float(result.weights.sum()), 12), result.summary()["body"], str(result.stats.status)
    (1.0, 'hull', 'optimal')
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
        """The certificate of the :class:`~projmech.bodies._body.Body` protocol: ``weights``."""
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
    """No solver produced a projection that passed the checks; ``best`` is never returned as one.

    Parameters
    ----------
    message : str
        What failed.
    attempts : iterable of Attempt
        Every solver's outcome, in the order tried.
    best : ProjectionResult or None
        The feasible witness with the smallest certified gap above the tolerance, or None.

    Examples
    --------
    >>> pm.project_to_hull(pm.marginals(pm.Domain(["a", "b"], [2, 2]), way=2), np.full(4, 0.3), tol=1e-30,
    ...                    solver="fast", max_iterations=1)
    Traceback (most recent call last):
    ...
    projmech.bodies._hull_result.ProjectionError: ...
    """


def frank_wolfe_gap(F: Any, y: np.ndarray, weights: np.ndarray) -> float:
    """The Frank–Wolfe gap of a simplex point ``w`` for ``f(w) = (1/2)||F w - y||^2`` (:cite:p:`Jag13`).

    It bounds ``f(w) - min f``, and ``||F w - Pi(y)||_2 <= sqrt(2 gap)`` (:doc:`/theory/projection`).

    Parameters
    ----------
    F : ndarray or scipy sparse matrix, shape (k, m)
        The query matrix.
    y : ndarray, shape (k,)
        The point projected.
    weights : ndarray, shape (m,)
        A point of the simplex.

    Returns
    -------
    float

    Examples
    --------
    >>> F = np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    >>> round(pm.bodies.frank_wolfe_gap(F, np.array([1.0, 1.0]), np.full(3, 1 / 3)), 4)
    0.5556
    """
    residual = np.asarray(F @ weights).ravel() - y
    return _gap(weights, np.asarray(F.T @ residual).ravel())


def _gap(weights: np.ndarray, gradient: np.ndarray) -> float:
    """``w.g - min g`` for a simplex point ``w`` and the gradient ``g`` there."""
    # w.(g - min g) rather than g.w - min g: the difference of two numbers of size ||g||_inf
    # would lose the tiny gaps of accurate solutions to cancellation.
    return float(weights @ (gradient - gradient.min()))


def _check_projection(operator: Workload, y: np.ndarray, weights: np.ndarray | sp.sparray,
                      answers: np.ndarray | None = None) -> tuple[np.ndarray, float, float] | str:
    """The final check of a witness ``w`` through the workload's own products: ``(F w, objective, gap)``,
    or why ``w`` is not a feasible witness."""
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
