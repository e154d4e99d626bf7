"""Wolfe's corral with an updated Cholesky factor: the affine minimizer in ``O(s^2)`` per change
(:doc:`/theory/projection`, *The corral's factorization*)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["Corral"]

#: A point whose lifted vector keeps less than this fraction of its squared norm outside the
#: span of the corral's is affinely dependent on them (numerically): it is refused.
DEPENDENCE = 1e-9

#: Ghosts allowed before compaction: ``max(GHOSTS_MIN, size // GHOSTS_SHARE)``.
GHOSTS_MIN = 32
GHOSTS_SHARE = 8


class Corral:
    """The factorized corral over a pool of points whose Gram matrix is ``points_gram`` (read only).

    ``border`` is ``c > 0`` of ``M = Q + c 1 1^T``; ``dimension`` caps the points the factor may hold.
    """

    def __init__(self, points_gram: np.ndarray, border: float, members: np.ndarray,
                 dimension: int | None = None) -> None:
        self.points_gram = points_gram
        self.border = float(border)
        self.dimension = points_gram.shape[0] if dimension is None else int(dimension)
        self.size = 0
        self._capacity = 0
        self._members = np.empty(0, dtype=np.int64)
        self._alive = np.empty(0, dtype=bool)
        self._factor = np.empty((0, 0), order="F")
        self._ones = np.empty(0)  # R^{-T} 1
        self._ghosts = np.empty((0, 0))  # R^{-T} E, one column per ghost (spare columns zero)
        self._ghost_factor_index = np.empty(0, dtype=np.int64)  # each ghost's index in the factor
        self._ghost_count = 0
        self._ghosts_gram = np.empty((0, 0))  # Z^T Z
        self._ghosts_cholesky: np.ndarray | None = np.empty((0, 0))  # its lower factor; None: stale
        self.refused: list[int] = []
        members = np.asarray(members, dtype=np.int64)
        self._reserve(members.size)
        self._factor_from_scratch(members)

    # --- the live points -------------------------------------------------------------------

    @property
    def positions(self) -> np.ndarray:
        """Pool positions of the live points, in the corral's order."""
        return self._members[:self.size][self._alive[:self.size]]

    @property
    def members(self) -> np.ndarray:
        """Pool positions of every point of the factor, live and ghosts, in its order."""
        return self._members[:self.size].copy()

    def rebase(self, points_gram: np.ndarray, members: np.ndarray) -> None:
        """Move to a new pool whose Gram matrix is ``points_gram``, in which the factor's points
        (:attr:`members`, in order) sit at positions ``members``: the factor is unchanged."""
        self._members[:self.size] = members
        self.points_gram = points_gram

    @property
    def ghosts(self) -> int:
        return self._ghost_count

    def needs_compaction(self) -> bool:
        return self.ghosts > max(GHOSTS_MIN, self.size // GHOSTS_SHARE)

    # --- changes ---------------------------------------------------------------------------

    def add(self, position: int) -> int | None:
        """Bring one point in (see :meth:`add_many`); its index in :attr:`positions`, or None
        if it was refused (nothing changed)."""
        if self.add_many(np.array([position])).size:
            return None
        return int(np.flatnonzero(self.positions == position)[0])

    def add_many(self, positions: np.ndarray) -> np.ndarray:
        """Bring several points in (weight zero), in order, each unless affinely dependent on the
        factor's points and the block's earlier ones (one block solve); returns the ones refused."""
        positions = np.asarray(positions, dtype=np.int64)
        refused: list[int] = []
        fresh: list[int] = []
        ghost_positions = self._members[self._ghost_factor_index[:self._ghost_count]]
        for position in positions:
            ghost = np.flatnonzero(ghost_positions == position)
            if ghost.size:
                self._revive(int(ghost[0]))
                ghost_positions = self._members[self._ghost_factor_index[:self._ghost_count]]
            else:
                fresh.append(int(position))
        room = self.dimension - self.size
        if room < len(fresh):  # beyond the dimension every further point is dependent
            refused += fresh[max(room, 0):]
            fresh = fresh[:max(room, 0)]
        if not fresh:
            return np.asarray(refused, dtype=np.int64)
        block = np.asarray(fresh, dtype=np.int64)
        size = self.size
        columns = np.zeros((self._capacity, block.size), order="F")
        columns[:size] = self.points_gram[np.ix_(self._members[:size], block)] + self.border
        solved = self._forward_block(columns)[:size]  # S = R^{-T} M[C, B]
        schur = self.points_gram[np.ix_(block, block)] + self.border - solved.T @ solved
        upper, kept = _cholesky_refusing(schur, np.diag(self.points_gram)[block] + self.border)
        refused += [int(position) for position in np.delete(block, kept)]
        if not kept:
            return np.asarray(refused, dtype=np.int64)
        count = len(kept)
        self._reserve(size + count)
        new_solved = solved[:, kept]
        self._factor[:size, size:size + count] = new_solved
        self._factor[size:size + count, size:size + count] = upper
        self._ones[size:size + count] = scipy.linalg.solve_triangular(
            upper, 1.0 - new_solved.T @ self._ones[:size], trans="T", check_finite=False)
        ghosts = self._ghost_count
        if ghosts:
            rows = -scipy.linalg.solve_triangular(upper, new_solved.T @ self._ghosts[:size, :ghosts], trans="T",
                                                  check_finite=False)
            self._ghosts[size:size + count, :ghosts] = rows
            self._ghosts_gram += rows.T @ rows
            self._ghosts_cholesky = None
        self._members[size:size + count] = block[kept]
        self._alive[size:size + count] = True
        self.size += count
        return np.asarray(refused, dtype=np.int64)

    def _revive(self, column: int) -> None:
        """Make the ghost of column ``column`` of ``Z`` live again: drop that column."""
        count = self._ghost_count
        index = int(self._ghost_factor_index[column])
        keep = np.arange(count) != column
        self._ghosts[:, column:count - 1] = self._ghosts[:, column + 1:count]
        self._ghosts[:, count - 1] = 0.0
        self._ghost_factor_index[column:count - 1] = self._ghost_factor_index[column + 1:count]
        self._ghosts_gram = self._ghosts_gram[np.ix_(keep, keep)]
        self._ghosts_cholesky = None
        self._ghost_count = count - 1
        self._alive[index] = True

    def remove(self, live_indices: np.ndarray) -> None:
        """Make the live points at ``live_indices`` (into :attr:`positions`) ghosts: their
        columns of ``Z`` by one triangular solve with as many right-hand sides."""
        factor_indices = np.flatnonzero(self._alive[:self.size])[np.asarray(live_indices, dtype=np.int64)]
        added = factor_indices.size
        if not added:
            return
        solved = np.zeros((self._capacity, added))
        for column, index in enumerate(factor_indices):
            solved[:, column] = self._forward_unit(int(index))
        count = self._ghost_count
        if count + added > self._ghosts.shape[1]:
            extra = max(count, GHOSTS_MIN, added)
            self._ghosts = np.asfortranarray(np.hstack([self._ghosts, np.zeros((self._capacity, extra))]))
            self._ghost_factor_index = np.concatenate([self._ghost_factor_index, np.zeros(extra, np.int64)])
        cross = self._ghosts[:, :count].T @ solved
        gram = np.empty((count + added, count + added))
        gram[:count, :count] = self._ghosts_gram
        gram[:count, count:] = cross
        gram[count:, :count] = cross.T
        gram[count:, count:] = solved.T @ solved
        self._ghosts[:, count:count + added] = solved
        self._ghost_factor_index[count:count + added] = factor_indices
        self._ghosts_gram = gram
        self._ghosts_cholesky = _appended_cholesky(self._ghosts_cholesky, cross, gram[count:, count:])
        self._ghost_count = count + added
        self._alive[factor_indices] = False

    def compact(self) -> None:
        """Refactor from the live points alone (ghosts dropped). The points before the first ghost
        keep their rows of the factor: only the trailing live points are refactored, from the Schur
        complement of the leading block (``O(j t^2 + t^3)`` for ``t`` of them after ``j``)."""
        alive = self._alive[:self.size]
        first = int(np.argmin(alive))
        if alive[first]:  # no ghost: all of them, afresh
            first = 0
        trailing = first + np.flatnonzero(alive[first:])
        # R[:j, L] = R11^{-T} M[:j, L] already: the Schur complement of the kept block in M[L, L].
        self._refactor(first, self._members[trailing].copy(), self._factor[:first, trailing])

    # --- the affine minimizer --------------------------------------------------------------

    def affine_minimizer(self) -> tuple[np.ndarray, float] | None:
        """The live points' affine weights (in :attr:`positions` order) and ``w^T Q w``; None if
        rounding made the solve meaningless (a non-positive sum)."""
        target = self._ones
        if self._ghost_count:
            ghosts = self._ghosts[:, :self._ghost_count]
            try:
                if self._ghosts_cholesky is None:
                    self._ghosts_cholesky = np.linalg.cholesky(self._ghosts_gram)
                multipliers = scipy.linalg.cho_solve((self._ghosts_cholesky, True), target @ ghosts,
                                                     check_finite=False)
            except np.linalg.LinAlgError:
                self._ghosts_cholesky = None
                return None
            target = target - ghosts @ multipliers
        solution = _triangular_solve(self._factor, target, trans=0)
        live = solution[:self.size][self._alive[:self.size]]
        total = float(live.sum())
        if not (np.isfinite(total) and total > 0):
            return None
        # w^T M w = 1 / sum(u) for w = u / sum(u); Q = M - c on the affine hull.
        return live / total, 1.0 / total - self.border

    # --- storage ---------------------------------------------------------------------------

    def _forward(self, right: np.ndarray) -> np.ndarray:
        """``R^{-T} right`` for a right-hand side of the capacity's length, zero beyond size."""
        return _triangular_solve(self._factor, right, trans=1)

    def _forward_unit(self, index: int) -> np.ndarray:
        """``R^{-T} e_index``: zero above ``index``, so only the trailing block is solved."""
        if 2 * index < self.size:
            unit = np.zeros(self._capacity)
            unit[index] = 1.0
            return self._forward(unit)
        result = np.zeros(self._capacity)
        trailing = np.asfortranarray(self._factor[index:self.size, index:self.size])
        unit = np.zeros(self.size - index)
        unit[0] = 1.0
        result[index:self.size] = _triangular_solve(trailing, unit, trans=1)
        return result

    def _forward_block(self, right: np.ndarray) -> np.ndarray:
        """``R^{-T} right`` for a Fortran ``(capacity, r)`` block, zero beyond size."""
        return _forward_block_solve(self._factor, right)

    def _reserve(self, needed: int) -> None:
        """Room for ``needed`` points (with a quarter spare), the factor padded with the identity."""
        if needed <= self._capacity:
            return
        capacity = max(64, needed + needed // 16)
        factor = np.asfortranarray(np.eye(capacity))
        factor[:self.size, :self.size] = self._factor[:self.size, :self.size]
        members = np.zeros(capacity, dtype=np.int64)
        members[:self.size] = self._members[:self.size]
        alive = np.zeros(capacity, dtype=bool)
        alive[:self.size] = self._alive[:self.size]
        ones = np.zeros(capacity)
        ones[:self.size] = self._ones[:self.size]
        ghosts = np.zeros((capacity, max(self._ghosts.shape[1], GHOSTS_MIN)), order="F")
        ghosts[:self.size, :self._ghosts.shape[1]] = self._ghosts[:self.size]
        self._factor, self._members, self._alive, self._ones, self._ghosts = factor, members, alive, ones, ghosts
        self._capacity = capacity

    def _reset_ghosts(self) -> None:
        self._ghosts = np.zeros((self._capacity, GHOSTS_MIN), order="F")
        self._ghost_factor_index = np.zeros(GHOSTS_MIN, dtype=np.int64)
        self._ghost_count = 0
        self._ghosts_gram = np.zeros((0, 0))
        self._ghosts_cholesky = np.zeros((0, 0))

    def _factor_from_scratch(self, members: np.ndarray) -> None:
        """``R`` of the points ``members``: one Cholesky factorization, else point by point."""
        self._refactor(0, members, np.zeros((0, members.size)))

    def _refactor(self, first: int, points: np.ndarray, cross: np.ndarray) -> None:
        """Keep the factor's first ``first`` points and refactor ``points`` after them, ``cross``
        their block of the factor above (``R11^{-T} M[:first, points]``): a Cholesky factorization
        of the Schur complement, refusing dependent points (:attr:`refused`); no ghosts after."""
        upper, kept = np.empty((0, 0)), list[int]()
        if points.size:  # else every point after the first ghost is one: the factor is truncated
            schur = self.points_gram[np.ix_(points, points)] + self.border
            if first:
                # cross^T cross by dsyrk: its upper triangle alone, half a product's work (the lower
                # triangle of ``schur`` is then wrong, and _cholesky_refusing never reads it).
                schur -= _DSYRK(1.0, cross.T)
            upper, kept = _cholesky_refusing(schur, np.diag(self.points_gram)[points] + self.border,
                                             limit=self.dimension - first)
        self.refused = [int(position) for position in np.delete(points, kept)]
        size = first + len(kept)
        self._factor[:, first:] = 0.0
        self._factor[:first, first:size] = cross[:, kept]
        self._factor[first:size, first:size] = upper
        diagonal = np.arange(size, self._capacity)
        self._factor[diagonal, diagonal] = 1.0
        self._members[first:size] = points[kept]
        self._alive[first:] = False
        self._alive[:size] = True
        self.size = size
        self._reset_ghosts()
        right = np.zeros(self._capacity)
        right[:size] = 1.0
        self._ones = self._forward(right)

def _cholesky_refusing(matrix: np.ndarray, diagonal: np.ndarray, limit: int | None = None
                       ) -> tuple[np.ndarray, list[int]]:
    """The upper Cholesky factor of ``matrix[kept][:, kept]`` and ``kept``: at most ``limit`` points
    whose pivot is above :data:`DEPENDENCE` times their ``diagonal`` entry. Only the upper triangle
    of ``matrix`` is read."""
    size = matrix.shape[0]
    if limit is None or size <= limit:
        try:
            upper = scipy.linalg.cholesky(matrix, lower=False, check_finite=False)
            if np.all(np.diag(upper) ** 2 > DEPENDENCE * diagonal):
                return upper, list(range(size))
        except np.linalg.LinAlgError:
            pass
    upper = np.zeros((size, size))
    kept: list[int] = []
    for j in range(size):
        if limit is not None and len(kept) == limit:
            break
        row = scipy.linalg.solve_triangular(upper[np.ix_(kept, kept)], matrix[kept, j], trans="T",
                                            check_finite=False) if kept else np.empty(0)
        pivot = matrix[j, j] - float(row @ row)
        if not pivot > DEPENDENCE * diagonal[j]:
            continue
        upper[kept, j] = row
        upper[j, j] = np.sqrt(pivot)
        kept.append(j)
    return upper[np.ix_(kept, kept)], kept


def _appended_cholesky(lower: np.ndarray | None, cross: np.ndarray, block: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of ``[[G, cross], [cross^T, block]]`` from ``G``'s, or None."""
    if lower is None:
        return None
    count, added = lower.shape[0], block.shape[0]
    below = scipy.linalg.solve_triangular(lower, cross, lower=True, check_finite=False).T if count else \
        np.zeros((added, 0))
    try:
        corner = np.linalg.cholesky(block - below @ below.T)
    except np.linalg.LinAlgError:
        return None
    result = np.zeros((count + added, count + added))
    result[:count, :count] = lower
    result[count:, :count] = below
    result[count:, count:] = corner
    return result


def _forward_block_solve(upper: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``R^{-T} right`` for a Fortran block of right-hand sides, by BLAS ``dtrsm`` in place."""
    return _DTRSM(1.0, upper, right, side=0, lower=0, trans_a=1, overwrite_b=1)


def _triangular_solve(upper: np.ndarray, right: np.ndarray, trans: int) -> np.ndarray:
    """``R^{-1} right`` (``trans=0``) or ``R^{-T} right`` (``trans=1``) by BLAS ``dtrsv`` in place,
    without ``solve_triangular``'s per-call checks."""
    return _DTRSV(upper, right, lower=0, trans=trans)


_DTRSV = scipy.linalg.blas.dtrsv
_DSYRK = scipy.linalg.blas.dsyrk
_DTRSM = scipy.linalg.blas.dtrsm
