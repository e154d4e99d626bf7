"""The ``"fast"`` solver of the projection onto K_Q, from products with F alone: column generation
over the universe, with Wolfe's minimum-norm-point method (:cite:p:`Wol76`) on the columns generated,
certified by the Frank–Wolfe gap (:doc:`/theory/projection`, *The active-set solver*)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..solve import Callback
from ..workloads import Workload
from ._corral import Corral

__all__ = ["ActiveSetOutcome", "active_set_projection", "DEFAULT_MAX_ITERATIONS"]

#: Outer iterations (gradients over the universe) before the solver gives up.
DEFAULT_MAX_ITERATIONS = 500

#: Elements added per outer iteration, as a fraction of the number of queries (at least
#: ``_MIN_BATCH``): enough that a support of ``rank + 1`` is found in a few passes over the
#: universe, few enough that the restricted problem stays small.
_BATCH_FRACTION = 0.25
_MIN_BATCH = 16
_MAX_BATCH = 256

#: Ghosts in the corral's factor from which a newcomer refused as dependent is retried after
#: compaction (with fewer, it is far likelier dependent on the live points themselves).
_GHOSTS_WORTH_COMPACTING = 8

#: Points entering the corral per major cycle of Wolfe's method (the most improving ones).
_ENTERING = 32

#: A weight below this (relative to 1) is a numerical zero in the minor cycle of Wolfe's method.
_WEIGHT_FLOOR = 1e-14

#: Wolfe's method stops when no point improves the objective by more than this, relative to
#: the size of the quadratic form (``max(||y||^2, max |F^T F|)``): a few hundred roundings.
_RESOLUTION = 1e-13


@dataclass(frozen=True)
class ActiveSetOutcome:
    """What :func:`active_set_projection` reached, certified (``converged``) or not."""

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
    """Minimize ``(1/2)||F w - y||^2`` over the simplex until the Frank–Wolfe gap is at most
    ``threshold(objective_lower_bound)``, or ``max_iterations`` gradients (inputs checked by the caller)."""
    start = time.perf_counter()
    k, m = workload.shape
    batch = min(m, batch or max(_MIN_BATCH, min(int(_BATCH_FRACTION * k), _MAX_BATCH)))
    linear = workload.kernels.rmatvec(y)  # F^T y over the universe: b_j = F_j . y for any pool
    pool = _Pool(workload, y, linear)
    if warm_start is None:
        # At w = 0 the gradient is -F^T y: the elements whose columns point most along y.
        pool.extend(_smallest(-linear, batch, exclude=np.empty(0, np.int64)))
        positions, weights = np.array([pool.nearest()]), np.ones(1)
    else:
        pool.extend(warm_start[0])
        positions, weights = np.arange(warm_start[0].size), warm_start[1]
    # The corral and its factor live through the whole solve: a new pool keeps its points.
    border = max(pool.scale, np.finfo(float).tiny)
    corral = Corral(pool.points_gram, border, positions, dimension=k + 1)
    # Major cycles start from the corral's affine minimizer; a warm start's weights need not be it.
    weights = _minor_cycles(corral, _kept_weights(positions, weights, corral.positions))

    iterations, gap, target, previous = 0, np.inf, 0.0, np.inf
    while True:
        weights = _wolfe(pool, corral, weights)
        support = pool.indices[corral.positions]
        dense = np.zeros(m)
        dense[support] = weights
        answers = workload.kernels.matvec(dense)
        residual = answers - y
        objective = 0.5 * float(residual @ residual)
        # Inputs were validated once at the boundary (project_to_hull): the unchecked kernel.
        gradient = workload.kernels.rmatvec(residual)
        iterations += 1
        lowest = float(gradient.min())
        # w.(g - min g) rather than w.g - min g, which would lose tiny gaps to cancellation.
        gap = float(weights @ (gradient[support] - lowest))
        target = float(threshold(objective - gap))
        if callback is not None:
            callback(iterations, gap)
        # Stalled: the restricted problems no longer lower f (the gap is rounding, below what
        # Wolfe's method resolves). Reported as not converged, never passed off.
        if gap <= target or iterations >= max_iterations or objective >= previous:
            break
        previous = objective
        # Only elements below the current average gradient can lower f; the support's own
        # gradients equal that average at the restricted optimum.
        level = float(weights @ gradient[support])
        members = corral.members  # live and ghosts: the factor's points stay in the pool
        candidates = _smallest(np.where(gradient < level, gradient, np.inf), batch, exclude=pool.indices[members])
        if candidates.size == 0:
            break
        pool = pool.restricted_to(members)
        pool.extend(candidates)
        corral.rebase(pool.points_gram, np.arange(members.size))
    order = np.argsort(support)
    return ActiveSetOutcome(
        support=support[order], weights=weights[order], answers=answers, objective=objective,
        gap=gap, threshold=target, converged=gap <= target, iterations=iterations,
        elapsed=time.perf_counter() - start,
    )


def _smallest(values: np.ndarray, count: int, exclude: np.ndarray) -> np.ndarray:
    """Indices of the ``count`` smallest finite ``values`` not in ``exclude``, in increasing value.
    Overwrites ``values``: both callers pass a fresh array of size ``m``."""
    values[exclude] = np.inf
    count = min(count, values.size)
    chosen = np.argpartition(values, count - 1)[:count]
    chosen = chosen[np.isfinite(values[chosen])]
    return chosen[np.argsort(values[chosen], kind="stable")].astype(np.int64)


class _Pool:
    """The universe elements the restricted problem runs on: their columns and their points' Gram
    matrix ``(F_i - y).(F_j - y) = F_i.F_j - b_i - b_j + y.y`` (``b = F^T y``)."""

    def __init__(self, workload: Workload, y: np.ndarray, linear: np.ndarray) -> None:
        self.workload, self.y, self.linear, self.norm = workload, y, linear, float(y @ y)
        self.indices = np.empty(0, dtype=np.int64)
        self.columns = sp.csc_array((y.size, 0))
        self.column_norms = np.empty(0)  # ||F_j||^2
        self.pool_linear = np.empty(0)  # b_j = F_j . y on the pool
        self.points_gram = np.empty((0, 0))
        self._rows = sp.csr_array((0, y.size))

    def extend(self, indices: np.ndarray) -> None:
        new = np.asarray(indices, dtype=np.int64)
        b_old, b_new = self.pool_linear, self.linear[new]
        cross = self.workload.kernels.column_gram(self.indices, new) - b_old[:, None] - b_new[None, :] + self.norm
        block = self.workload.kernels.column_gram(new, new)
        self.column_norms = np.concatenate([self.column_norms, np.diag(block)])
        block = block - b_new[:, None] - b_new[None, :] + self.norm
        size = self.indices.size
        gram = np.empty((size + new.size, size + new.size))  # one pass: np.block is slower
        gram[:size, :size] = self.points_gram
        gram[:size, size:] = cross
        gram[size:, :size] = cross.T
        gram[size:, size:] = block
        self.points_gram = gram
        self.columns = sp.csc_array(sp.hstack([self.columns, self.workload.kernels.sparse_columns(new)], format="csc"))
        self.indices = np.concatenate([self.indices, new])
        self.pool_linear = np.concatenate([b_old, b_new])
        self._rows = sp.csr_array(self.columns.T)  # F_pool^T, for point_products

    def restricted_to(self, positions: np.ndarray) -> _Pool:
        pool = _Pool(self.workload, self.y, self.linear)
        pool.indices = self.indices[positions]
        pool.columns = self.columns[:, positions]
        pool.column_norms = self.column_norms[positions]
        pool.pool_linear = self.pool_linear[positions]
        pool.points_gram = self.points_gram[np.ix_(positions, positions)]
        pool._rows = sp.csr_array(pool.columns.T)
        return pool

    def point_products(self, weights: np.ndarray) -> np.ndarray:
        """``p_j . x`` for every point of the pool, ``x = sum_i weights_i p_i``: ``F_j.a - b_j -
        y.a + y.y`` with ``a = F w``, by two sparse products rather than the dense Gram matrix."""
        answers = self.columns @ weights
        return self._rows @ answers - self.pool_linear - float(self.y @ answers) + self.norm

    def nearest(self) -> int:
        return int(np.argmin(np.diag(self.points_gram)))

    @property
    def scale(self) -> float:
        """``max(||y||^2, max_j ||F_j||^2)``, the size of the quadratic form rounding is relative to."""
        return max(self.norm, float(self.column_norms.max(initial=0.0)))


def _wolfe(pool: _Pool, corral: Corral, weights: np.ndarray) -> np.ndarray:
    """Wolfe's minimum-norm-point method on the pool's points ``F_j - y``, from ``corral``; moves the
    corral in place and returns its weights."""
    size = pool.points_gram.shape[0]
    # Exact arithmetic ends when no point improves; in floating point that is "improves by
    # less than rounding", relative to the size of the quadratic form. The gradient
    # F^T (F w - y) is rounded to about eps * max(||F_j||^2, ||F_j|| ||y||) <= eps * scale: no
    # absolute floor, so that c F and c y take the same steps for every c (a floor of 1 would
    # stop the method at once when ||F||^2 is far below 1).
    resolution = _RESOLUTION * pool.scale
    refused = np.zeros(size, dtype=bool)
    previous_level = np.inf
    for _ in range(10 * size + 100):
        live = corral.positions
        current = np.zeros(size)
        current[live] = weights
        gradient = pool.point_products(current)
        level = float(weights @ gradient[live])
        # |x|^2 falls at every major cycle that moves the corral in exact arithmetic; when it no
        # longer does, rounding rules the steps (the outer loop's certificate says how far from
        # optimal that leaves the point).
        if not level < previous_level:
            break
        gradient[live] = np.inf
        gradient[refused] = np.inf
        order = np.argpartition(gradient, min(_ENTERING, size) - 1)[:_ENTERING]
        order = order[np.argsort(gradient[order], kind="stable")]
        entering = order[level - gradient[order] > resolution]
        if entering.size == 0 and corral.ghosts and refused.any():
            # Points were refused as dependent while ghosts were in the factor: some may depend
            # on ghosts only. Compact, and offer them again.
            weights = _compacted(corral, weights)
            refused[:] = False
            previous_level = np.inf
            continue
        if entering.size == 0:
            break
        before = corral.positions
        dependent = corral.add_many(entering)
        weights = _moved(before, weights, corral.positions)
        # A newcomer may depend on ghosts only: compacting frees it, once there are enough
        # ghosts for that to be likely (near the optimum the corral spans almost everything).
        if dependent.size and corral.ghosts >= _GHOSTS_WORTH_COMPACTING:
            weights = _compacted(corral, weights)
            before_retry = corral.positions
            dependent = corral.add_many(dependent)
            weights = _moved(before_retry, weights, corral.positions)
        refused[dependent] = True  # affinely dependent on the corral: not a newcomer again here
        if np.any(weights == 0.0):
            previous_level = level
            weights = _minor_cycles(corral, weights)
    return weights


def _kept_weights(before: np.ndarray, weights: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The weights of the points of ``before`` that are still in ``after``, renormalized."""
    if before.size == after.size:
        return weights
    kept = _moved(before, weights, after)
    total = float(kept.sum())
    # Every point that carried weight was refused (rounding): restart from the centroid.
    return kept / total if total > 0 else np.full(after.size, 1.0 / after.size)


def _moved(before: np.ndarray, weights: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The weights of the corral ``before`` on the corral ``after`` (pool positions both; the
    points new in ``after`` at zero)."""
    spread = np.zeros(int(max(before.max(initial=-1), after.max(initial=-1))) + 1)
    spread[before] = weights
    return spread[after]


def _compacted(corral: Corral, weights: np.ndarray) -> np.ndarray:
    """Compact the corral; the weights of the points it kept (rounding may refuse some)."""
    before = corral.positions
    corral.compact()
    return _kept_weights(before, weights, corral.positions)


def _minor_cycles(corral: Corral, weights: np.ndarray) -> np.ndarray:
    """Move to the affine minimizer of the corral, dropping points until its weights are positive.
    The corral never empties: the weights sum to 1, so the largest stays."""
    while True:
        if corral.needs_compaction():
            weights = _compacted(corral, weights)
        if corral.positions.size == 1:
            return np.ones(1)
        solved = corral.affine_minimizer()
        if solved is None and corral.ghosts:
            weights = _compacted(corral, weights)
            solved = corral.affine_minimizer()
        if solved is None:
            if weights.min() > 0:
                return weights  # rounding defeats this corral: keep the current point
            keep = weights > 0
            corral.remove(np.flatnonzero(~keep))
            return weights[keep]
        affine, _ = solved
        if affine.min() > _WEIGHT_FLOOR:
            return affine
        # Walk from the current weights toward the affine minimizer until a weight hits zero.
        falling = affine < weights
        ratios = np.full(affine.size, np.inf)
        ratios[falling] = weights[falling] / (weights[falling] - affine[falling])
        step = min(1.0, float(ratios.min()))
        if step == 1.0:  # the affine minimizer itself, some weight at most the floor: drop those
            weights = affine.copy()
            keep = weights > _WEIGHT_FLOOR
        else:
            weights = weights + step * (affine - weights)
            # Dropped: the falling weights the step took to zero (rising ones stay, even at zero).
            keep = (weights > _WEIGHT_FLOOR) | ~falling
            if keep.all():  # rounding: drop the falling weight the step reached first
                keep[int(np.argmin(ratios))] = False
        corral.remove(np.flatnonzero(~keep))
        weights = np.clip(weights[keep], 0.0, None)
        weights /= weights.sum()
