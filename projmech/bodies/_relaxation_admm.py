"""A certified first-order solver for the projection onto the moment relaxation L: ADMM
(:cite:p:`BPCPE11`) with closed-form steps, stopped at a certified relative gap
(:doc:`/theory/relaxation`, *The certified ADMM*)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .._threads import on_one_blas_thread
from ..data import Domain
from ..solve import Callback
from ._certificates import next_certificate

__all__ = ["AdmmProjection", "admm_projection", "one_hot_lift", "relative_gap"]

#: Over-relaxation factor alpha (BPCPE11, §3.4.3) and the residual-balancing ratio (§3.4.1):
#: (1.6, 2) certify the gap in about half the iterations of the textbook (1, 10).
OVER_RELAXATION = 1.6
BALANCE = 2.0
#: RMS distance per answer below which the relative gap is taken against this floor instead.
DISTANCE_FLOOR = 1e-5
#: Rounds of clipping the cells and refitting the tables before mixing (:func:`_clip_cells`).
CLIP_ROUNDS = 10
#: Tables up to this many cells are transformed by one product with ``U_a ⊗ U_b``.
KRONECKER_MAX_CELLS = 64
#: Anderson acceleration (type II, :cite:p:`WN11`) of the iteration once the penalties are frozen:
#: iterations of residual balancing first, then the differences kept, and the growth of the
#: fixed-point residual over its smallest that clears them and takes the plain step instead.
ANDERSON_AFTER = 50
ANDERSON_MEMORY = 10
ANDERSON_SAFEGUARD = 10.0
#: Certificates cost several iterations each (two eigenvalues, ten refits of the cells): after two,
#: the next comes after half the iterations their gaps' linear fall predicts to ``tol``, at most
#: this many times ``check_every`` (:func:`next_certificate`).
CHECK_MOST = 4
#: Newton steps of the warm-started simplex projections before the cold one (:func:`_simplex_from`).
SIMPLEX_NEWTON_STEPS = 8


@dataclass(frozen=True)
class AdmmProjection:
    """The output of :func:`admm_projection`: a feasible point, its contrast moments and its certificate."""

    answers: np.ndarray
    contrast_moments: np.ndarray
    objective: float
    lower_bound: float
    gap: float
    converged: bool
    iterations: int


def _simplex_projection(points: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``points`` onto the probability simplex, by Michelot's
    (1986) fixed point vectorized over rows: at most ``points.shape[1]`` passes."""
    active = np.ones(points.shape, dtype=bool)
    while True:
        threshold = (np.where(active, points, 0.0).sum(axis=1) - 1.0) / active.sum(axis=1)
        # In exact arithmetic the support only shrinks; in floating point an entry dropped by one
        # pass can reappear above a threshold that rounding lowered, and the passes then cycle
        # for ever (seen in the test suite). Intersecting keeps the shrinking, so at most
        # points.shape[1] passes.
        still = active & (points > threshold[:, None])
        if np.array_equal(still, active):
            return np.maximum(points - threshold[:, None], 0.0)
        active = still


def _simplex_from(points: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_simplex_projection` of each row from thresholds ``start`` near its own (the last
    iteration's), and the thresholds: Newton's method on each row's ``sum(max(p - t, 0)) = 1``.

    From either side a step lands at or left of the threshold; from the left each step is
    Michelot's, to the threshold of the cells above the last, and once a row keeps as many cells
    as before the threshold is exact. Rows are stepped together until all settle, else
    :func:`_simplex_projection` from the start.
    """
    threshold = start.copy()
    out = np.empty_like(points)
    previous: np.ndarray | None = None
    for _ in range(SIMPLEX_NEWTON_STEPS):
        np.subtract(points, threshold[:, None], out=out)
        np.maximum(out, 0.0, out=out)
        count = np.count_nonzero(out, axis=1)
        if previous is not None and np.array_equal(count, previous):
            return out, threshold
        threshold += (out.sum(axis=1) - 1.0) / np.maximum(count, 1)
        empty = count == 0  # above every cell: restart from the mean's threshold, below them all
        if empty.any():
            threshold[empty] = (points[empty].sum(axis=1) - 1.0) / points.shape[1]
            count[empty] = -1
        previous = count
    out = _simplex_projection(points)
    return out, _thresholds(points, out)


def _thresholds(points: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """The threshold of each row's projection ``max(p - t, 0)``, read off its positive cells."""
    positive = projected > 0
    return np.sum(np.where(positive, points - projected, 0.0), axis=1) / np.maximum(positive.sum(axis=1), 1)


@dataclass(frozen=True)
class _PairGroup:
    """All attribute pairs ``(a, b)`` whose sizes are ``(ra, rb)``, handled as one batch."""

    ra: int
    rb: int
    first: np.ndarray  # (n,) attribute a of each pair
    second: np.ndarray  # (n,) attribute b
    cells: np.ndarray  # (n, ra, rb) positions in the answer vector
    block: np.ndarray  # (n, ra-1, rb-1) flat positions of X_ab in Y'
    block_transposed: np.ndarray  # (n, ra-1, rb-1) flat positions of X_ab^T in Y'
    m_first: np.ndarray  # (n, ra-1) positions of m_a in the vector m
    m_second: np.ndarray  # (n, rb-1) positions of m_b
    kronecker: np.ndarray | None  # U_a ⊗ U_b for small tables: one matrix product per batch
    span: slice | None  # the group's cells when they are contiguous (all-binary domains)

    def gather(self, answers: np.ndarray) -> np.ndarray:
        """The group's tables, ``(n, ra, rb)``."""
        return answers[self.span].reshape(self.cells.shape) if self.span else answers[self.cells]

    def scatter(self, answers: np.ndarray, tables: np.ndarray) -> None:
        if self.span:
            answers[self.span] = tables.reshape(-1)
        else:
            answers[self.cells] = tables


@dataclass(frozen=True)
class _AttributeGroup:
    """All attributes of one size ``r``: their contrasts share a basis and normal equations."""

    size: int
    positions: np.ndarray  # (n, r-1) rows of each attribute's contrasts in Y'
    basis: np.ndarray  # V = U[:, 1:], (r, r-1)
    cells_weight: float  # sum over the other attributes b of 1/r_b
    moments_normal: np.ndarray  # (r-1, r-1): 2 I + V^T (P∘P) V


class _ContrastModel:
    """Index bookkeeping and the linear maps of the contrast coordinates for one domain."""

    def __init__(self, domain: Domain, local: bool) -> None:
        sizes = np.asarray(domain.sizes, dtype=np.int64)
        self.sizes = sizes
        self.local = local
        d = sizes.size
        contrasts = sizes - 1
        self.order = int(1 + contrasts.sum())  # N
        # Position of attribute a's first contrast in Y' (row 0 is the constant 1).
        self.offsets = 1 + np.concatenate([[0], np.cumsum(contrasts)[:-1]])
        self.bases = {int(r): scipy.linalg.helmert(int(r), full=True).T for r in np.unique(sizes)}
        first, second = np.triu_indices(d, 1)  # lexicographic, as marginals(domain, 2)
        table_sizes = sizes[first] * sizes[second]
        starts = np.concatenate([[0], np.cumsum(table_sizes)[:-1]])
        self.num_queries = int(table_sizes.sum())
        N = self.order
        groups = []
        keys = sizes[first] * (sizes.max() + 1) + sizes[second]
        for key in np.unique(keys):
            chosen = np.flatnonzero(keys == key)
            a, b = first[chosen], second[chosen]
            ra, rb = int(sizes[a[0]]), int(sizes[b[0]])
            cells = (starts[chosen][:, None] + np.arange(ra * rb)).reshape(-1, ra, rb)
            rows = self.offsets[a][:, None] + np.arange(ra - 1)  # (n, ra-1)
            columns = self.offsets[b][:, None] + np.arange(rb - 1)
            contiguous = np.array_equal(cells.ravel(), np.arange(cells.flat[0], cells.flat[0] + cells.size))
            groups.append(_PairGroup(
                ra=ra, rb=rb, first=a, second=b, cells=cells,
                block=rows[:, :, None] * N + columns[:, None, :],
                block_transposed=columns[:, None, :] * N + rows[:, :, None],
                m_first=rows - 1, m_second=columns - 1,
                kronecker=np.kron(self.bases[ra], self.bases[rb]) if ra * rb <= KRONECKER_MAX_CELLS else None,
                span=slice(int(cells.flat[0]), int(cells.flat[0]) + cells.size) if contiguous else None,
            ))
        self.groups = groups
        # Attributes of one size share their contrast basis and their normal equations: in the
        # cells' term m_a appears in every table (a, b), scaled by 1/sqrt(r_b); in Y' twice in
        # row/column 0 and through D_a(m_a), whose normal matrix is V^T (P∘P) V.
        self.attribute_groups = []
        inverse_size = 1.0 / sizes
        for r in np.unique(sizes):
            attributes = np.flatnonzero(sizes == r)
            positions = self.offsets[attributes][:, None] + np.arange(r - 1)  # in Y'
            basis = self.bases[int(r)][:, 1:]
            centering = np.eye(r) - 1.0 / r
            self.attribute_groups.append(_AttributeGroup(
                size=int(r), positions=positions, basis=basis,
                cells_weight=float(inverse_size.sum() - 1.0 / r),
                moments_normal=2.0 * np.eye(r - 1) + basis.T @ (centering ** 2) @ basis,
            ))
        self.trace = 1.0 + float(np.sum(contrasts / sizes))
        self._inverses: tuple[float, list[np.ndarray]] | None = None

    # -- the linear maps ---------------------------------------------------------------------
    def _to_contrasts(self, group: _PairGroup, tables: np.ndarray) -> np.ndarray:
        """``U_a^T T U_b`` for each table of the group."""
        if group.kronecker is not None:  # row-major vec(U_a^T T U_b) = (U_a ⊗ U_b)^T vec(T)
            return (tables.reshape(tables.shape[0], -1) @ group.kronecker).reshape(tables.shape)
        return _sandwich(self.bases[group.ra].T, tables, self.bases[group.rb])

    def _from_contrasts(self, group: _PairGroup, small: np.ndarray) -> np.ndarray:
        """``U_a M U_b^T`` for each small matrix of the group."""
        if group.kronecker is not None:
            return (small.reshape(small.shape[0], -1) @ group.kronecker.T).reshape(small.shape)
        return _sandwich(self.bases[group.ra], small, self.bases[group.rb].T)

    def cells(self, m: np.ndarray, cross: list[np.ndarray]) -> np.ndarray:
        """Answers of the point ``x = (m, X)``."""
        answers = np.empty(self.num_queries)
        for group, block in zip(self.groups, cross):
            small = np.empty((block.shape[0], group.ra, group.rb))
            small[:, 0, 0] = 1.0 / math.sqrt(group.ra * group.rb)
            small[:, 0, 1:] = m[group.m_second] / math.sqrt(group.ra)
            small[:, 1:, 0] = m[group.m_first] / math.sqrt(group.rb)
            small[:, 1:, 1:] = block
            group.scatter(answers, self._from_contrasts(group, small))
        return answers

    def moments(self, m: np.ndarray, cross: list[np.ndarray]) -> np.ndarray:
        """``Y'(x)``."""
        N = self.order
        Y = np.zeros((N, N))
        Y[0, 0] = 1.0
        Y[0, 1:] = Y[1:, 0] = m
        flat = Y.reshape(-1)
        for group, block in zip(self.groups, cross):
            flat[group.block] = block
            flat[group.block_transposed] = block
        for attribute_group in self.attribute_groups:
            positions, basis = attribute_group.positions, attribute_group.basis
            diagonal = 1.0 / attribute_group.size + m[positions - 1] @ basis.T  # (n, r): each attribute's mu
            blocks = np.matmul(basis.T[None, :, :] * diagonal[:, None, :], basis)  # V^T diag(mu) V
            Y[positions[:, :, None], positions[:, None, :]] = blocks
        return Y

    def cells_adjoint(self, answers: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``C^T`` of an answer-shaped vector (the constant cell part is orthogonal to it)."""
        m = np.zeros(self.order - 1)
        cross = []
        for group in self.groups:
            small = self._to_contrasts(group, group.gather(answers))
            cross.append(small[:, 1:, 1:])
            m += np.bincount(group.m_first.ravel(), (small[:, 1:, 0] / math.sqrt(group.rb)).ravel(),
                             minlength=m.size)
            m += np.bincount(group.m_second.ravel(), (small[:, 0, 1:] / math.sqrt(group.ra)).ravel(),
                             minlength=m.size)
        return m, cross

    def moments_adjoint(self, S: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``Y'^T`` of a symmetric matrix (the linear part; ``Y'^T`` of the constant part is 0)."""
        m = S[0, 1:] + S[1:, 0]
        flat = S.reshape(-1)
        cross = [flat[group.block] + flat[group.block_transposed] for group in self.groups]
        for group in self.attribute_groups:
            positions, basis = group.positions, group.basis
            blocks = S[positions[:, :, None], positions[:, None, :]]
            diagonal = np.sum(np.matmul(basis, blocks) * basis, axis=-1)  # diag(V B V^T)
            m[positions - 1] += diagonal @ basis
        return m, cross

    def solve(self, m_rhs: np.ndarray, cross_rhs: list[np.ndarray],
              ratio: float) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(C^T C + ratio * Y'^T Y') x = rhs``: separable (module docstring). ``ratio`` is the
        moments' penalty over the cells'; 0 fits the cells alone."""
        if self._inverses is None or self._inverses[0] != ratio:
            self._inverses = (ratio, [np.linalg.inv(g.cells_weight * np.eye(g.size - 1) + ratio * g.moments_normal)
                                      for g in self.attribute_groups])
        cross = [block / (1.0 + 2.0 * ratio) for block in cross_rhs]
        m = np.empty_like(m_rhs)
        for group, inverse in zip(self.attribute_groups, self._inverses[1]):
            m[group.positions - 1] = m_rhs[group.positions - 1] @ inverse.T
        return m, cross

    def moments_normal_solve(self, m: np.ndarray, cross: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(Y'^T Y')^{-1}``: 1/2 on cross entries, ``moments_normal^{-1}`` on each ``m_a``."""
        out = np.empty_like(m)
        for group in self.attribute_groups:
            out[group.positions - 1] = np.linalg.solve(group.moments_normal, m[group.positions - 1].T).T
        return out, [block / 2.0 for block in cross]

    def linear_moments(self, m: np.ndarray, cross: list[np.ndarray]) -> np.ndarray:
        """The linear part of ``Y'(x)`` (``Y'(x) - Y'(0)``)."""
        return self.moments(m, cross) - self.moments(np.zeros_like(m), [np.zeros_like(c) for c in cross])

    def uniform_point(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The independent uniform distribution: ``m = 0``, ``X = 0``."""
        return np.zeros(self.order - 1), [np.zeros((g.first.size, g.ra - 1, g.rb - 1)) for g in self.groups]


def _sandwich(left: np.ndarray, blocks: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ B @ right`` for every ``B`` of a stack ``(n, p, q)``, as two flat matrix products
    (faster than numpy's stacked matmul on many small blocks)."""
    n, p, q = blocks.shape
    product = (blocks.reshape(n * p, q) @ right).reshape(n, p, -1)
    columns = product.shape[2]
    product = product.transpose(0, 2, 1).reshape(n * columns, p) @ left.T
    return product.reshape(n, columns, -1).transpose(0, 2, 1)


def _project_psd(S: np.ndarray) -> np.ndarray:
    """``S`` less its negative eigen-part: near the solution the negative eigenvalues are few, so
    only they are computed (LAPACK's MRRR after one tridiagonalization) and subtracted."""
    values, vectors = scipy.linalg.eigh(S, subset_by_value=(-np.inf, 0.0), driver="evr", check_finite=False)
    return S - (vectors * values) @ vectors.T


def _simplex_all(model: _ContrastModel, answers: np.ndarray, thresholds: list[np.ndarray] | None = None
                 ) -> np.ndarray:
    """Each table of ``answers`` projected onto its simplex; with ``thresholds`` (one array per pair
    group, empty at first), warm-started from those of the last call and updated."""
    out = np.empty_like(answers)
    for index, group in enumerate(model.groups):
        tables = group.gather(answers)
        rows = tables.reshape(tables.shape[0], -1)
        if thresholds is None:
            projected = _simplex_projection(rows)
        elif len(thresholds) <= index:
            projected = _simplex_projection(rows)
            thresholds.append(_thresholds(rows, projected))
        else:
            projected, thresholds[index] = _simplex_from(rows, thresholds[index])
        group.scatter(out, projected.reshape(tables.shape))
    return out


def _feasible(model: _ContrastModel, m: np.ndarray, cross: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """The smallest ``theta`` such that ``(1 - theta) x + theta * uniform`` lies in L, and its Y'
    (with ``D = diag(1, I/r_a, ...)``: ``D^{-1/2} Y' D^{-1/2} + theta / (1 - theta) I ⪰ 0``)."""
    Y = model.moments(m, cross)
    scale = np.ones(model.order)
    for group in model.attribute_groups:
        scale[group.positions] = math.sqrt(group.size)  # D^{-1/2}
    lowest = float(scipy.linalg.eigh(scale[:, None] * Y * scale[None, :], eigvals_only=True, subset_by_index=(0, 0),
                                     driver="evr", check_finite=False)[0])
    t = max(-lowest, 0.0) * (1 + 1e-12) + (1e-15 if lowest < 0 else 0.0)
    theta = t / (1.0 + t)
    if model.local:
        answers = model.cells(m, cross)
        uniform = np.empty_like(answers)
        for pair_group in model.groups:
            pair_group.scatter(uniform, np.full(pair_group.cells.shape, 1.0 / (pair_group.ra * pair_group.rb)))
        negative = answers < 0
        if negative.any():
            # (1 - theta) c + theta u >= 0  <=>  theta >= -c / (u - c)
            needed = np.max(-answers[negative] / (uniform[negative] - answers[negative]))
            theta = max(theta, float(needed) * (1 + 1e-12))
    return min(theta, 1.0), Y


@on_one_blas_thread  # small eigendecompositions, oversubscribed by 2 threads on a busy machine
def admm_projection(
    domain: Domain,
    y: np.ndarray,
    *,
    local: bool = True,
    tol: float = 1e-4,
    max_iterations: int = 5000,
    check_every: int = 10,
    callback: Callback | None = None,
) -> AdmmProjection:
    """Project 2-way marginal answers ``y`` onto L by ADMM until the certified relative gap is at
    most ``tol``; ``local`` selects ``"sdp+local"`` (inputs checked by the caller)."""
    model = _ContrastModel(domain, local)
    y = np.asarray(y, dtype=float)
    # One penalty per constraint block (T = cells(x) and Y'(x) = Z), each balanced on its own
    # residuals: the two blocks differ in scale by orders of magnitude when tables are large.
    rho_cells, rho_moments = 1.0, 1.0
    # Start from the least-squares fit to y, its simplex projection and its PSD part.
    m, cross = model.solve(*model.cells_adjoint(y), ratio=0.0)
    answers = model.cells(m, cross)
    T = _simplex_all(model, answers) if local else answers.copy()
    Y = model.moments(m, cross)
    Z = _project_psd(Y)
    U = np.zeros_like(y)
    V = np.zeros_like(Y)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    lower = -math.inf
    gap = math.inf
    iteration = 0

    def certify() -> None:
        nonlocal best, lower, gap
        upper, point, moments = _upper_bound(model, m, cross, y)
        if best is None or upper < best[0]:
            best = (upper, point, moments)
        lower = max(lower, _lower_bound(model, y, rho_cells * U, rho_moments * V, local))
        gap = relative_gap(best[0], lower, y.size)

    def fit(cells: np.ndarray, moments: np.ndarray) -> None:
        """The x-step: ``m``, ``cross`` of the least-squares fit to ``cells`` and ``moments``, weighed by
        the penalties."""
        nonlocal m, cross
        ratio = rho_moments / rho_cells
        m_cells, cross_cells = model.cells_adjoint(cells)
        m_moments, cross_moments = model.moments_adjoint(moments)
        m, cross = model.solve(m_cells + ratio * m_moments,
                               [a + ratio * b for a, b in zip(cross_cells, cross_moments)], ratio)

    def cells_step(v: np.ndarray, warm: list[np.ndarray] | None = None) -> np.ndarray:
        """The cells' proximal step at ``v``: the answers' term, and the simplices where ``local``
        (warm-started from ``warm``'s thresholds where given)."""
        target = (y + rho_cells * v) / (1.0 + rho_cells)
        return _simplex_all(model, target, warm) if local else target

    def step(T: np.ndarray, Z: np.ndarray, U: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, ...]:
        """One ADMM iteration from ``(T, Z, U, V)``: the new four and the fit ``x``'s cells and ``Y'``."""
        fit(T - U, Z - V)
        answers = model.cells(m, cross)
        Y = model.moments(m, cross)
        # Over-relaxation (BPCPE11, §3.4.3): feed alpha Ax + (1 - alpha) z to the z-step.
        relaxed_answers = OVER_RELAXATION * answers + (1 - OVER_RELAXATION) * T
        relaxed_Y = OVER_RELAXATION * Y + (1 - OVER_RELAXATION) * Z
        new_T = cells_step(relaxed_answers + U)
        new_Z = _project_psd(relaxed_Y + V)
        return new_T, new_Z, U + relaxed_answers - new_T, V + relaxed_Y - new_Z, answers, Y

    def fixed_map(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The same iteration as a map of ``w = (T + U, Z + V)``, the input of the proximal steps
        (``T``, ``Z`` are its proximal points, ``U``, ``V`` the rest): ``g(w)`` and this ``U``, ``V``."""
        k = y.size
        w_cells, w_moments = w[:k], w[k:].reshape(Z.shape)
        T = cells_step(w_cells, thresholds)
        Z_new = _project_psd(w_moments)
        fit(2.0 * T - w_cells, 2.0 * Z_new - w_moments)
        image = np.empty_like(w)
        image[:k] = w_cells + OVER_RELAXATION * (model.cells(m, cross) - T)
        image[k:] = (w_moments + OVER_RELAXATION * (model.moments(m, cross) - Z_new)).ravel()
        return image, w_cells - T, w_moments - Z_new

    anderson = _Anderson()
    w = np.empty(0)  # the fixed map's state once the penalties are frozen
    checks: list[tuple[int, float]] = []  # (iteration, gap) of each certificate
    thresholds: list[np.ndarray] = []  # the fixed map's simplex thresholds, one array per pair group
    next_check = check_every
    for iteration in range(1, max_iterations + 1):
        if iteration <= ANDERSON_AFTER:
            before = (T, Z, U, V)
            T, Z, U, V, answers, Y = step(*before)
            factor = _balance(np.linalg.norm(answers - T), rho_cells * np.linalg.norm(T - before[0]))
            rho_cells *= factor
            U /= factor
            factor = _balance(np.linalg.norm(Y - Z), rho_moments * np.linalg.norm(Z - before[1]))
            rho_moments *= factor
            V /= factor
            if iteration == ANDERSON_AFTER:  # from here the state is the proximal steps' input
                w = np.concatenate([(T + U).ravel(), (Z + V).ravel()])
        else:  # the penalties are frozen: the iteration is one fixed map, which Anderson extrapolates
            image, U, V = fixed_map(w)
            w = anderson.next((w,), (image,))[0]
        if iteration >= next_check:
            certify()
            checks.append((iteration, gap))
            next_check = iteration + next_certificate(checks, tol, check_every, CHECK_MOST * check_every)
            if callback is not None:
                callback(iteration, gap)
            if gap <= tol:
                break
    if best is None:
        certify()
    assert best is not None  # set by certify()
    return AdmmProjection(
        answers=best[1], contrast_moments=best[2], objective=best[0], lower_bound=lower,
        gap=max(gap, 0.0), converged=gap <= tol, iterations=iteration,
    )


class _Anderson:
    """Type-II Anderson acceleration :cite:p:`WN11` of a fixed-point map ``g`` on tuples of arrays:
    the next point is ``g(x)`` less the combination of the last differences of ``g`` whose
    differences of residuals ``g(x) - x`` best cancel the current residual (least squares).

    Two passes over the kept differences per call: their products with the residual, and the
    combination. The Gram matrix of the residual differences is updated from those products
    (the new difference's products with the others are this call's products less the last call's).
    """

    def __init__(self) -> None:
        self.residuals = np.empty((0, 0))  # differences of residuals, one per row (a ring)
        self.images = np.empty((0, 0))  # differences of g, alike
        self.gram = np.zeros((ANDERSON_MEMORY, ANDERSON_MEMORY))  # the residual differences' Gram matrix
        self.products = np.zeros(ANDERSON_MEMORY)  # the kept residual differences' products with the last residual
        self.count = 0
        self.slot = 0
        self.last: tuple[np.ndarray, np.ndarray] | None = None  # the last residual and image
        self.smallest = math.inf

    def next(self, point: tuple[np.ndarray, ...], image: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """The accelerated successor of ``point``, whose plain successor is ``image`` (a point of one
        flat array is used as is, not copied)."""
        flat_image = _flat(image)
        residual = flat_image - _flat(point)
        if self.residuals.shape[1] != residual.size:
            self.residuals = np.zeros((ANDERSON_MEMORY, residual.size))
            self.images = np.zeros((ANDERSON_MEMORY, residual.size))
        norm = float(np.linalg.norm(residual))
        if norm > ANDERSON_SAFEGUARD * self.smallest:  # the extrapolations went astray: start over
            self.count, self.slot, self.last = 0, 0, None
            self.smallest = norm  # from here: the residuals of the iteration are not monotone
        self.smallest = min(self.smallest, norm)
        last, self.last = self.last, (residual, flat_image)
        if last is None:
            return image
        slot, previous = self.slot, self.count
        np.subtract(residual, last[0], out=self.residuals[slot])
        np.subtract(flat_image, last[1], out=self.images[slot])
        self.slot = (slot + 1) % ANDERSON_MEMORY
        self.count = min(previous + 1, ANDERSON_MEMORY)
        kept = slice(self.count)  # the rows filled since the start or the last reset: views, no copies
        products = self.residuals[kept] @ residual
        # The rows other than slot were kept at the last call too, with their products with its
        # residual: the new difference's products with them are the difference of the two.
        self.gram[slot, kept] = products - self.products[kept]
        self.gram[slot, slot] = float(self.residuals[slot] @ self.residuals[slot])
        self.gram[kept, slot] = self.gram[slot, kept]
        self.products[kept] = products
        gram = self.gram[kept, kept].copy()
        # A relative ridge keeps the small system solvable when differences repeat.
        gram[np.diag_indices_from(gram)] += 1e-10 * float(np.trace(gram)) + np.finfo(float).tiny
        weights = np.linalg.solve(gram, products)
        accelerated = flat_image - weights @ self.images[kept]
        if len(image) == 1:
            return (accelerated.reshape(image[0].shape),)
        parts, offset = [], 0
        for part in image:
            piece = accelerated[offset:offset + part.size].reshape(part.shape)
            parts.append((piece + piece.T) / 2 if part.ndim == 2 else piece)  # Z and V stay symmetric
            offset += part.size
        return tuple(parts)


def _flat(parts: tuple[np.ndarray, ...]) -> np.ndarray:
    """The parts as one flat vector: the one part itself (a view) where there is one."""
    if len(parts) == 1:
        return parts[0].reshape(-1)
    return np.concatenate([part.ravel() for part in parts])


def relative_gap(objective: float, lower_bound: float, num_queries: int) -> float:
    """``(objective - lower_bound) / max(objective, floor)``, ``floor`` from ``DISTANCE_FLOOR`` (a point
    already in L would divide rounding by 0); negative means an invalid certificate."""
    floor = 0.5 * num_queries * DISTANCE_FLOOR ** 2
    return (objective - lower_bound) / max(objective, floor)


def one_hot_lift(domain: Domain) -> np.ndarray:
    """``Lift`` with ``(1, z) = Lift w``: the one-hot moment matrix of a point is
    ``Lift Y' Lift^T`` (module docstring)."""
    sizes = np.asarray(domain.sizes, dtype=np.int64)
    offsets = 1 + np.concatenate([[0], np.cumsum(sizes - 1)[:-1]])
    lift = np.zeros((1 + int(sizes.sum()), int(1 + (sizes - 1).sum())))
    lift[0, 0] = 1.0
    row = 1
    for offset, r in zip(offsets, sizes):
        lift[row:row + r, 0] = 1.0 / r
        lift[row:row + r, offset:offset + r - 1] = scipy.linalg.helmert(int(r), full=True).T[:, 1:]
        row += r
    return lift


def _balance(primal: float | np.floating, dual: float | np.floating) -> float:
    """Residual balancing (:cite:p:`BPCPE11`, §3.4.1): the factor to multiply a penalty by."""
    if primal > BALANCE * dual:
        return 2.0
    if dual > BALANCE * primal:
        return 0.5
    return 1.0


def _upper_bound(model: _ContrastModel, m: np.ndarray, cross: list[np.ndarray],
                 y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The better of two feasible points: ``x`` mixed with the uniform point, and (with local
    constraints) the same after :func:`_clip_cells`."""
    candidates = [_mixed(model, m, cross, y)]
    if model.local:
        candidates.append(_mixed(model, m, _clip_cells(model, m, cross), y))
    return min(candidates, key=lambda candidate: candidate[0])


def _mixed(model: _ContrastModel, m: np.ndarray, cross: list[np.ndarray],
           y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``x`` mixed with the uniform point just enough to lie in L: objective, answers, Y'."""
    theta, _ = _feasible(model, m, cross)
    uniform_m, uniform_cross = model.uniform_point()
    m_feasible = (1 - theta) * m + theta * uniform_m
    cross_feasible = [(1 - theta) * c + theta * u for c, u in zip(cross, uniform_cross)]
    answers = model.cells(m_feasible, cross_feasible)
    return 0.5 * float(np.sum((answers - y) ** 2)), answers, model.moments(m_feasible, cross_feasible)


def _clip_cells(model: _ContrastModel, m: np.ndarray, cross: list[np.ndarray]) -> list[np.ndarray]:
    """Cross moments whose cells are (nearly) nonnegative, the 1-way marginals ``m`` kept: cheaper
    than lifting slightly negative cells by the uniform mixture."""
    for _ in range(CLIP_ROUNDS):
        _, cross = model.cells_adjoint(np.maximum(model.cells(m, cross), 0.0))
    return cross


def _lower_bound(model: _ContrastModel, y: np.ndarray, multiplier: np.ndarray, matrix: np.ndarray,
                 local: bool) -> float:
    """Lagrangian lower bound from ``lambda`` (cells) and ``Lambda`` (moments) (:doc:`/theory/relaxation`)."""
    Lambda = (matrix + matrix.T) / 2
    # Correct Lambda so that C^T lambda + Y'^T Lambda = 0 (x then drops out of the Lagrangian).
    m_c, cross_c = model.cells_adjoint(multiplier)
    m_y, cross_y = model.moments_adjoint(Lambda)
    residual_m = m_c + m_y
    residual_cross = [a + b for a, b in zip(cross_c, cross_y)]
    step_m, step_cross = model.moments_normal_solve(residual_m, residual_cross)
    Lambda = Lambda - model.linear_moments(step_m, step_cross)
    shifted = y + multiplier
    best_T = _simplex_all(model, shifted) if local else shifted
    table_term = 0.5 * float(np.sum((best_T - shifted) ** 2)) - float(multiplier @ y) \
        - 0.5 * float(multiplier @ multiplier)
    constant_cells = np.empty_like(y)
    for group in model.groups:
        group.scatter(constant_cells, np.full(group.cells.shape, 1.0 / (group.ra * group.rb)))
    m0, cross0 = model.uniform_point()
    constant_moments = model.moments(m0, cross0)
    order = Lambda.shape[0]
    largest = float(scipy.linalg.eigh(Lambda, eigvals_only=True, subset_by_index=(order - 1, order - 1),
                                      driver="evr", check_finite=False)[0])
    return table_term + float(multiplier @ constant_cells) + float(np.sum(Lambda * constant_moments)) \
        - model.trace * largest
