"""Projection onto K_Q from products with F alone: column generation over the universe, with
Wolfe's minimum-norm-point method on the columns generated.

The problem is that of :mod:`projmech.bodies.hull`,

    minimize  f(w) = (1/2) ||F w - y||^2   over the simplex  {w >= 0, sum(w) = 1},

with ``m`` (the universe) far larger than the rank of F (``1 + d + C(d, 2)`` for 2-way marginals
of ``d`` binary attributes: 211 at ``d = 20``, where ``m = 2^20``). A minimizer needs at most
``rank + 1`` universe elements (Carathéodory), so the solver keeps a small *support* ``S`` and
its columns ``F[:, S]`` explicitly, and touches the universe only through the gradient
``g = F^T (F w - y)``, one :meth:`~projmech.Workload.rmatvec` per iteration:

1. ``g`` over the whole universe. Its minimum gives the Frank–Wolfe duality gap
   ``gap = w.g - min_j g_j``; by convexity ``f(w) - f(w*) <= g.(w - w*) <= gap``, a certificate
   that needs no dual solution. Stop when it is within the tolerance.
2. Otherwise add the ``batch`` elements of smallest ``g_j`` (the most violated optimality
   conditions; one is the Frank–Wolfe vertex) to ``S``.
3. Solve the problem restricted to ``S`` exactly by Wolfe's minimum-norm-point algorithm (Wolfe
   1976), an active-set method on the points ``F_j - y``: it keeps a *corral* of affinely
   independent points whose affine minimizer has positive weights, so the support never
   exceeds ``rank + 1``, and finishes in finitely many steps. Elements that leave the corral
   leave ``S``.

This is simplicial decomposition (column generation) with an exact master problem: each outer
iteration costs one gradient over the universe, which the implicit marginal operators
(:mod:`projmech.operators`) compute in ``O(m)`` memory, and the explicit work is on at most
``rank + 1 + batch`` columns. Pairwise Frank–Wolfe, by contrast, converges linearly but leaves
thousands of elements with tiny weights; Wolfe's corral keeps the witness sparse.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from ..solve import Callback
from ..workloads import Workload

__all__ = ["ActiveSetOutcome", "active_set_projection", "DEFAULT_MAX_ITERATIONS"]

#: Outer iterations (gradients over the universe) before the solver gives up.
DEFAULT_MAX_ITERATIONS = 500

#: Elements added per outer iteration, as a fraction of the number of queries (at least
#: ``_MIN_BATCH``): enough that a support of ``rank + 1`` is found in a few passes over the
#: universe, few enough that the restricted problem stays small.
_BATCH_FRACTION = 0.25
_MIN_BATCH = 16

#: A weight below this (relative to 1) is a numerical zero in the minor cycle of Wolfe's method.
_WEIGHT_FLOOR = 1e-14

#: Wolfe's method stops when no point improves the objective by more than this, relative to
#: the size of the quadratic form (``max(||y||^2, max |F^T F|)``): a few hundred roundings.
_RESOLUTION = 1e-13


@dataclass(frozen=True)
class ActiveSetOutcome:
    """What :func:`active_set_projection` reached (certified or not).

    Attributes
    ----------
    support : ndarray of int64
        Universe indices with positive weight, increasing.
    weights : ndarray
        Their weights: positive, summing to 1.
    answers : ndarray, shape (k,)
        ``F[:, support] @ weights``.
    objective : float
        ``(1/2)||answers - y||^2``.
    gap : float
        Frank–Wolfe gap at the returned point, from a gradient over the whole universe.
    threshold : float
        The gap the caller asked for.
    converged : bool
        ``gap <= threshold``.
    iterations : int
        Outer iterations, i.e. gradients over the universe.
    """

    support: np.ndarray
    weights: np.ndarray
    answers: np.ndarray
    objective: float
    gap: float
    threshold: float
    converged: bool
    iterations: int
    elapsed: float


def active_set_projection(
    workload: Workload,
    y: np.ndarray,
    threshold: Any,
    *,
    warm_start: tuple[np.ndarray, np.ndarray] | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    batch: int | None = None,
    callback: Callback | None = None,
) -> ActiveSetOutcome:
    """Minimize ``(1/2)||F w - y||^2`` over the simplex until the Frank–Wolfe gap is certified.

    Inputs are assumed validated (see :func:`projmech.bodies.hull.project_to_hull`, the public
    entry point).

    Parameters
    ----------
    workload : Workload
        Needs :meth:`~projmech.Workload.rmatvec` and :meth:`~projmech.Workload.columns`.
    y : ndarray, shape (k,)
    threshold : callable
        ``threshold(objective_lower_bound) -> float``: the gap accepted once the objective is
        known to be at least its argument (relative tolerances need it).
    warm_start : (indices, weights), optional
        A starting point: distinct universe indices and positive weights summing to 1.
    max_iterations : int
        Outer iterations before giving up (the outcome then has ``converged=False``).
    batch : int, optional
        Elements added per outer iteration; default ``max(16, k // 4)``.
    callback : callable, optional
        ``callback(iteration, gap)`` after each outer iteration, with its Frank–Wolfe gap.
    """
    start = time.perf_counter()
    k, m = workload.shape
    batch = min(m, batch or max(_MIN_BATCH, int(_BATCH_FRACTION * k)))
    if warm_start is None:
        # At w = 0 the gradient is -F^T y: the elements whose columns point most along y.
        support, weights = _smallest(workload._rmatvec(-y), batch, exclude=np.empty(0, np.int64)), None
    else:
        support, weights = warm_start
    columns = workload._columns(support)
    support, weights, columns = _restricted_projection(columns, y, support, weights)

    iterations, gap, target = 0, np.inf, 0.0
    while True:
        answers = columns @ weights
        residual = answers - y
        objective = 0.5 * float(residual @ residual)
        # Inputs were validated once at the boundary (project_to_hull): the unchecked kernel.
        gradient = workload._rmatvec(residual)
        iterations += 1
        lowest = float(gradient.min())
        # w.(g - min g) rather than w.g - min g, which would lose tiny gaps to cancellation.
        gap = float(weights @ (gradient[support] - lowest))
        target = float(threshold(objective - gap))
        if callback is not None:
            callback(iterations, gap)
        if gap <= target or iterations >= max_iterations:
            break
        # Only elements below the current average gradient can lower f; the support's own
        # gradients equal that average at the restricted optimum.
        level = float(weights @ gradient[support])
        candidates = _smallest(np.where(gradient < level, gradient, np.inf), batch, exclude=support)
        if candidates.size == 0:
            break
        pool = np.concatenate([support, candidates])
        pool_columns = np.concatenate([columns, workload._columns(candidates)], axis=1)
        start_weights = np.concatenate([weights, np.zeros(candidates.size)])
        support, weights, columns = _restricted_projection(pool_columns, y, pool, start_weights)
    order = np.argsort(support)
    return ActiveSetOutcome(
        support=support[order], weights=weights[order], answers=answers, objective=objective,
        gap=gap, threshold=target, converged=gap <= target, iterations=iterations,
        elapsed=time.perf_counter() - start,
    )


def _smallest(values: np.ndarray, count: int, exclude: np.ndarray) -> np.ndarray:
    """Indices of the ``count`` smallest finite ``values`` not in ``exclude``, in increasing value.

    ``values`` is overwritten (``inf`` at ``exclude``): both callers pass a fresh array of size
    ``m``, which a copy would only duplicate once per iteration."""
    values[exclude] = np.inf
    count = min(count, values.size)
    chosen = np.argpartition(values, count - 1)[:count]
    chosen = chosen[np.isfinite(values[chosen])]
    return chosen[np.argsort(values[chosen], kind="stable")].astype(np.int64)


def _restricted_projection(columns: np.ndarray, y: np.ndarray, indices: np.ndarray,
                           weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The projection of ``y`` onto the hull of ``columns`` (Wolfe's method), started from
    ``weights`` (or from the single nearest column); returns the positive-weight subset as
    (indices, weights, their columns)."""
    hessian = columns.T @ columns
    linear = columns.T @ y
    if weights is None or not np.any(weights > 0):
        distances = np.einsum("ij,ij->j", columns, columns) - 2 * linear
        corral, corral_weights = [int(np.argmin(distances))], np.ones(1)
    else:
        corral = [int(i) for i in np.flatnonzero(weights > 0)]
        corral_weights = weights[corral] / weights[corral].sum()
    corral, corral_weights = _wolfe(hessian, linear, float(y @ y), corral, corral_weights)
    chosen = np.asarray(corral, dtype=np.int64)
    return indices[chosen], corral_weights, columns[:, chosen]


def _wolfe(hessian: np.ndarray, linear: np.ndarray, constant: float, corral: list[int],
           weights: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Wolfe's minimum-norm-point algorithm on ``(1/2) w^T H w - b^T w`` over the simplex.

    The points are ``F_j - y``; ``H = F^T F`` and ``b = F^T y`` carry everything needed, so
    each step costs ``O(q |corral|)`` for ``q`` columns plus a solve of ``|corral| + 1`` equations.
    The starting corral need not be affinely independent: a first minor cycle repairs it.
    """
    size = linear.size
    # Exact arithmetic ends when no point improves; in floating point that is "improves by
    # less than rounding", relative to the size of the quadratic form. The gradient
    # F^T (F w - y) is rounded to about eps * max(||F_j||^2, ||F_j|| ||y||) <= eps * scale: no
    # absolute floor, so that c F and c y take the same steps for every c (a floor of 1 would
    # stop the method at once when ||F||^2 is far below 1).
    scale = max(constant, float(np.abs(hessian).max()))
    resolution = _RESOLUTION * scale
    corral, weights = _minor_cycles(hessian, linear, corral, weights, added=None)
    for _ in range(10 * size + 100):
        gradient = hessian[:, corral] @ weights - linear
        entering = int(np.argmin(gradient))
        if weights @ gradient[corral] - gradient[entering] <= resolution or entering in corral:
            break
        corral, weights = _minor_cycles(hessian, linear, corral + [entering], np.append(weights, 0.0),
                                        added=entering)
    return corral, weights


def _minor_cycles(hessian: np.ndarray, linear: np.ndarray, corral: list[int], weights: np.ndarray,
                  added: int | None) -> tuple[list[int], np.ndarray]:
    """Move to the affine minimizer of the corral, dropping points until its weights are positive.

    The corral never becomes empty: a single point is its own affine minimizer (weight 1), and
    an affinely dependent corral drops only its newcomer, never its last point."""
    while True:
        if len(corral) == 1:
            return corral, np.ones(1)
        affine = _affine_minimizer(hessian, linear, corral)
        if affine is not None and affine.min() > _WEIGHT_FLOOR:
            # The KKT solve meets sum(w) = 1 only to its rounding; the witness must meet it exactly.
            return corral, affine / affine.sum()
        if affine is None:
            # Affinely dependent corral (only a numerically degenerate entering point makes
            # one): keep the current point and drop the newcomer.
            drop = corral.index(added) if added in corral else len(corral) - 1
            remaining = [i for i in range(len(corral)) if i != drop]
            corral = [corral[i] for i in remaining]
            weights = weights[remaining]  # positive: the newcomer entered at 0, the rest are kept > 0
            return corral, weights / weights.sum()
        # Walk from the current weights toward the affine minimizer until a weight hits zero.
        falling = affine < weights
        ratios = np.full(affine.size, np.inf)
        ratios[falling] = weights[falling] / (weights[falling] - affine[falling])
        step = min(1.0, float(ratios.min()))
        weights = weights + step * (affine - weights)
        keep = weights > _WEIGHT_FLOOR
        # The new weights still sum to 1, so the largest (>= 1/size) stays: the corral keeps a point.
        if keep.all():  # step 1 with a zero affine weight: drop the smallest
            keep[int(np.argmin(weights))] = False
        corral = [j for j, kept in zip(corral, keep) if kept]
        weights = np.clip(weights[keep], 0.0, None)
        weights /= weights.sum()


def _affine_minimizer(hessian: np.ndarray, linear: np.ndarray, corral: list[int]) -> np.ndarray | None:
    """Minimizer of ``(1/2) w^T H w - b^T w`` over the affine hull ``sum(w) = 1`` of the corral,
    from its KKT system; ``None`` when the system is singular.

    The system is ``[[H_C, s 1], [s 1^T, 0]] (w, mu / s) = (b_C, s)`` with ``s = max diag(H_C)``
    (``>= max |H_C|`` by Cauchy-Schwarz): ``s`` times ``[[H_C / s, 1], [1^T, 0]]``, whose entries
    are at most 1 whatever the scale of F. With the plain border ``1``, the conditioning grew
    with the scale: columns of norm 1e4 (``||F_j||^2 = 1e8``) gave a condition number near
    ``1/eps`` for any geometry, and a well-posed corral of one or two points was declared
    singular. Scaled, ``c F`` and ``c y`` give the same system up to the factor ``c^2`` for every
    ``c > 0``. Scaling the border costs ``O(|C|)``, dividing ``H_C`` would cost ``O(|C|^2)``.
    """
    size = len(corral)
    scale = float(hessian[corral, corral].max())
    if not scale > 0:  # every column of the corral is 0: any weights are optimal
        scale = 1.0
    system = np.empty((size + 1, size + 1))
    system[:size, :size] = hessian[np.ix_(corral, corral)]
    system[:size, size] = system[size, :size] = scale
    system[size, size] = 0.0
    right = np.append(linear[corral], scale)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            solution = scipy.linalg.solve(system, right, assume_a="sym", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return None
    if not np.all(np.isfinite(solution)):
        return None
    return solution[:size]
