"""Prefix and range workloads at scale: resolvent strategies on tridiagonal inverses.

For these workloads the matrix the dual ascent works on is tridiagonal in closed form. The
iteration's diagonals come from a quadrature of resolvents (``O(N m)`` a step), the certificate
from ``dpteqr``'s eigenvalues, and the strategy is the stack of the resolvents' bidiagonal
factors: nothing of size ``m^2`` is formed. Derivation: :doc:`/theory/factorization` (§9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.linalg import lapack

from ..solve import Callback, SolveStats, Status
from ..workloads import Workload
from ._base import Factorization
from ._kernel import iterate, normalize_weights
from ._range_forms import range_squares

__all__: list[str] = []  # reached through factorization_norm

#: Relative accuracy of the quadrature for ``x^-1/2``: the strategy's norm is within about twice
#: this of the exact resolvent strategy's.
QUADRATURE_ACCURACY = 1e-9

#: Columns of ``R M - F`` evaluated for :attr:`ResolventFactorization.residual`.
RESIDUAL_PROBES = 16

#: Weights are kept above this fraction of the largest (the tridiagonal divides by them).
WEIGHT_FLOOR = 1e-12


@dataclass(frozen=True)
class TridiagonalInverse:
    """What a workload declares when its Gram matrix has a tridiagonal inverse: the bands of
    ``(F^T F)^-1``, those of a lower-bidiagonal ``F^-1`` (prefix sums; else None), and whether F is
    all the ranges in ``np.triu_indices(m)`` order.
    """

    gram_inverse: tuple[np.ndarray, np.ndarray]
    inverse: tuple[np.ndarray, np.ndarray] | None = None
    ranges: bool = False


def quadrature(low: float, high: float, accuracy: float = QUADRATURE_ACCURACY) -> tuple[np.ndarray, np.ndarray]:
    """Shifts ``s_j`` and weights ``w_j > 0`` with ``sum_j w_j / (x + s_j)`` within ``accuracy``
    (relative) of ``x^-1/2`` for ``x`` in ``[low, high]``: the trapezoidal rule on
    ``x^-1/2 = (2/pi) int e^t / (x + e^2t) dt``, whose integrand is ``x^-1/2 sech(t - ln(x)/2) / 2``
    (error ``2 exp(-pi^2 / h)`` for step ``h``, tails ``exp(-L)`` beyond ``L``)."""
    # Half the accuracy to each: the discretization and the two tails.
    step = math.pi**2 / math.log(8.0 / accuracy)
    reach = math.log(8.0 / accuracy)
    nodes = np.arange(0.5 * math.log(low) - reach, 0.5 * math.log(high) + reach + step, step)
    return np.exp(2.0 * nodes), (2.0 * step / math.pi) * np.exp(nodes)


def _ldl(diagonal: np.ndarray, off: np.ndarray, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``T + s_j = L_j D_j L_j^T`` for each shift (LAPACK ``dpttrf``): pivots ``(m, N)`` and the
    multipliers ``L_j[i+1, i]`` ``(m-1, N)``."""
    pivots = np.empty((diagonal.size, shifts.size))
    multipliers = np.empty((off.size, shifts.size))
    for column, shift in enumerate(shifts):
        pivots[:, column], multipliers[:, column], info = lapack.dpttrf(diagonal + shift, off)
        if info != 0:
            raise np.linalg.LinAlgError(f"dpttrf: the shifted tridiagonal is not positive definite (info {info})")
    return pivots, multipliers


def _inverse_diagonals(pivots: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
    """``diag((L D L^T)^-1)`` for each column: ``Z_ii = 1/D_i + l_i^2 Z_{i+1,i+1}``, a recurrence
    of positive terms (no cancellation, relative accuracy of order ``m eps``)."""
    m = pivots.shape[0]
    inverse = 1.0 / pivots
    squares = multipliers**2
    diagonals = np.empty_like(pivots)
    diagonals[m - 1] = inverse[m - 1]
    for i in range(m - 2, -1, -1):
        diagonals[i] = inverse[i] + squares[i] * diagonals[i + 1]
    return diagonals


def _spectrum_bounds(diagonal: np.ndarray, off: np.ndarray) -> tuple[float, float]:
    """An interval holding T's spectrum: Gershgorin above, and below ``1 / tr(T^-1)`` (T is
    positive definite), with ``tr(T^-1)`` from the diagonal of its inverse."""
    radius = np.abs(np.concatenate([off, [0.0]])) + np.abs(np.concatenate([[0.0], off]))
    high = float(np.max(diagonal + radius))
    pivots, multipliers = _ldl(diagonal, off, np.zeros(1))
    low = 1.0 / float(_inverse_diagonals(pivots, multipliers).sum())
    return low, high


class _Resolvents:
    """``r(T) = sum_j w_j (T + s_j)^-1 ~ T^-1/2`` for one tridiagonal T: its diagonal, and the
    factors of each resolvent."""

    def __init__(self, diagonal: np.ndarray, off: np.ndarray, accuracy: float = QUADRATURE_ACCURACY) -> None:
        self.diagonal, self.off = diagonal, off
        self.low, self.high = _spectrum_bounds(diagonal, off)
        self.shifts, self.weights = quadrature(self.low, self.high, accuracy)
        self.pivots, self.multipliers = _ldl(diagonal, off, self.shifts)

    @cached_property
    def inverse_sqrt_diagonal(self) -> np.ndarray:
        """``diag(r(T))``, the diagonal of (about) ``T^-1/2``."""
        return _inverse_diagonals(self.pivots, self.multipliers) @ self.weights


def _eigenvalues(diagonal: np.ndarray, off: np.ndarray) -> np.ndarray:
    """T's eigenvalues to high relative accuracy (``dpteqr``: through the bidiagonal Cholesky
    factor, so the small ones are as accurate as the large)."""
    values, _, _, info = lapack.dpteqr(diagonal, off, np.zeros((1, 1)), compute_z=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpteqr did not converge (info {info})")
    return np.sort(values)


def pivot_errors(diagonal: np.ndarray, off: np.ndarray) -> np.ndarray:
    """A first-order bound on the relative error of each pivot ``D_i`` of ``T = L D L^T`` as
    computed (``D_i = T_ii - e_{i-1}^2 / D_{i-1}``): ``delta_i = (eps T_ii + (e_{i-1}^2 / D_{i-1})
    (delta_{i-1} + 3 eps)) / D_i + eps``. The subtraction cancels where ``e^2 / D`` is close to
    ``T_ii`` (very uneven weights); this is how much. A positive shift only lowers it."""
    eps = np.finfo(float).eps
    pivots, _ = _ldl(diagonal, off, np.zeros(1))
    pivots = pivots[:, 0]
    errors = np.empty_like(pivots)
    errors[0] = 2 * eps
    for i in range(1, pivots.size):
        carried = off[i - 1] ** 2 / pivots[i - 1]
        errors[i] = (eps * diagonal[i] + carried * (errors[i - 1] + 3 * eps)) / pivots[i] + eps
    return errors


def certified_trace_inverse_sqrt(diagonal: np.ndarray, off: np.ndarray) -> float:
    """``tr(T^-1/2)`` rounded down: every eigenvalue from ``dpteqr`` raised by its relative accuracy and
    the factor's pivot errors (:func:`pivot_errors`) before the sum.
    """
    values = _eigenvalues(diagonal, off)
    slack = 8.0 * values.size * np.finfo(float).eps + 2.0 * float(pivot_errors(diagonal, off).sum())
    return float(np.sum((values * (1.0 + slack)) ** -0.5))


class _RationalInverse:
    """``k(x) = 1 / (x r(x))`` for ``r(x) = sum_j w_j / (x + s_j)``, in partial fractions with
    positive coefficients: ``k(x) = 1/W + (1/r(0)) / x + sum_l c_l / (x + t_l)``, the ``t_l`` the
    roots of ``r(-t) = 0`` (one between consecutive shifts), ``c_l = 1 / (t_l sum_j w_j /
    (s_j - t_l)^2)``. Then ``diag k(T)`` is a positive sum of resolvent diagonals."""

    def __init__(self, shifts: np.ndarray, weights: np.ndarray) -> None:
        self.shifts, self.weights = shifts, weights
        lower, upper = np.log(shifts[:-1]), np.log(shifts[1:])
        # r(-e^v) runs from -inf (v just above ln s_j) to +inf (just below ln s_{j+1}) on each
        # interval; bisection in v, vectorized over the intervals.
        for _ in range(80):
            middle = 0.5 * (lower + upper)
            value = np.sum(weights[None, :] / (shifts[None, :] - np.exp(middle)[:, None]), axis=1)
            lower, upper = np.where(value < 0, middle, lower), np.where(value < 0, upper, middle)
        self.roots = np.exp(0.5 * (lower + upper))
        self.residues = 1.0 / (self.roots * np.sum(weights[None, :] / (shifts[None, :] - self.roots[:, None]) ** 2,
                                                   axis=1))
        self.constant = 1.0 / float(weights.sum())
        self.at_zero = 1.0 / float(np.sum(weights / shifts))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``k(x)`` from the partial fractions (for the tests)."""
        x = np.asarray(x, dtype=float)
        return self.constant + self.at_zero / x + np.sum(self.residues / (x[..., None] + self.roots), axis=-1)

    def diagonal(self, diagonal: np.ndarray, off: np.ndarray) -> np.ndarray:
        """``diag k(T)`` for the tridiagonal T."""
        shifts = np.concatenate([[0.0], self.roots])
        pivots, multipliers = _ldl(diagonal, off, shifts)
        coefficients = np.concatenate([[self.at_zero], self.residues])
        return self.constant + _inverse_diagonals(pivots, multipliers) @ coefficients

    def inverse_apply(self, diagonal: np.ndarray, off: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """``r(T)^-1 v = T k(T) v = T v / W + v / r(0) + sum_l c_l (T + t_l)^-1 T v``: positive
        coefficients on exact products (the form ``I - t_l (T + t_l)^-1`` would cancel). ``vector``
        may be an ``(m, r)`` block."""
        bands = (diagonal, off) if vector.ndim == 1 else (diagonal[:, None], off[:, None])
        product = bands[0] * vector
        product[:-1] += bands[1] * vector[1:]
        product[1:] += bands[1] * vector[:-1]
        result = self.constant * product + self.at_zero * vector
        for root, residue in zip(self.roots, self.residues):
            pivots, multipliers, _ = lapack.dpttrf(diagonal + root, off)
            solved, _ = lapack.dpttrs(pivots, multipliers, product)
            result += residue * solved
        return result


def _bands(structure: TridiagonalInverse, query_weights: np.ndarray | None, cell_weights: np.ndarray
           ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
    """T (cells' side) and, when F has a bidiagonal inverse, T' (queries' side), for weights ``p``
    (None: the mean objective) and ``q``.
    """
    q = cell_weights
    if structure.inverse is None:
        diagonal, off = structure.gram_inverse
        return (diagonal / q, off / np.sqrt(q[:-1] * q[1:])), None
    main, sub = structure.inverse
    p = np.ones_like(q) if query_weights is None else query_weights
    c_main = main / np.sqrt(q * p)                 # C[i, i]
    c_sub = sub / np.sqrt(q[1:] * p[:-1])          # C[i+1, i]
    t_diagonal = c_main**2
    t_diagonal[1:] += c_sub**2
    t_off = c_sub * c_main[:-1]                    # T[i+1, i] = C[i+1, i] C[i, i]
    s_diagonal = c_main**2
    s_diagonal[:-1] += c_sub**2
    s_off = c_main[1:] * c_sub                     # T'[i+1, i] = C[i+1, i+1] C[i+1, i]
    return (t_diagonal, t_off), (s_diagonal, s_off)


def structure_of(workload: Workload) -> TridiagonalInverse | None:
    """The workload's declared tridiagonal-inverse structure, or None (also for a single cell,
    which has no tridiagonal to speak of)."""
    bands = getattr(workload, "_tridiagonal_inverse", None)
    if bands is None or workload.universe_size < 2:
        return None
    declared = bands()
    return TridiagonalInverse(declared["gram_inverse"], declared["inverse"], bool(declared.get("ranges", False)))


class ResolventFactorization(Factorization):
    """The resolvent strategy of weights ``q`` (and ``p``; None for the mean objective) on a workload with a
    tridiagonal inverse: ``N`` stacked lower-triangular blocks, ``R = F X^-1 M^T``
    (:doc:`/theory/factorization`, §9).
    """

    def __init__(self, workload: Workload, structure: TridiagonalInverse, cell_weights: np.ndarray,
                 query_weights: np.ndarray | None, *, objective: str, lower_bound: float,
                 stats: SolveStats | None = None) -> None:
        self.workload = workload
        self.structure = structure
        self.objective = objective
        self.lower_bound = lower_bound
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats
        self.q = cell_weights
        self.p = query_weights
        (self._t, self._t_other) = _bands(structure, query_weights, cell_weights)
        self.resolvents = _Resolvents(*self._t)
        self.rational = _RationalInverse(self.resolvents.shifts, self.resolvents.weights)
        gram_diagonal = self.resolvents.inverse_sqrt_diagonal / cell_weights
        self.peak = float(gram_diagonal.max())
        self.column_norms = np.sqrt(gram_diagonal / self.peak)
        m = workload.universe_size
        rows = self.resolvents.shifts.size * m
        self.strategy = Workload.implicit((rows, m), self._strategy_matvec, self._strategy_gram, domain=workload.domain,
                                          name="resolvent strategy", column_norm=float(self.column_norms.max()))

    # --- the strategy -----------------------------------------------------------------------

    def _unit_lower_solve(self, column: int, block: np.ndarray, transpose: bool) -> np.ndarray:
        """``L_j^-1 B`` (or ``L_j^-T B``) for the unit lower-bidiagonal factor of resolvent ``j`` and
        an ``(m, r)`` block (LAPACK ``dtbtrs``: a triangular solve, so ``L^-1`` stays exactly
        lower-triangular)."""
        m = block.shape[0]
        banded = np.vstack([np.ones(m), np.concatenate([self.resolvents.multipliers[:, column], [0.0]])])
        solved, info = lapack.dtbtrs(banded, block, uplo="L", trans="T" if transpose else "N", diag="U")
        assert info == 0  # a unit triangular matrix is never singular
        return solved

    def _strategy_block(self, block: np.ndarray) -> np.ndarray:
        """``M B`` for an ``(m, r)`` block."""
        scaled = block / np.sqrt(self.q)[:, None]
        return np.concatenate([math.sqrt(weight / self.peak) * self._unit_lower_solve(column, scaled, transpose=False)
                               / np.sqrt(self.resolvents.pivots[:, column])[:, None]
                               for column, weight in enumerate(self.resolvents.weights)])

    def _strategy_transpose_block(self, block: np.ndarray) -> np.ndarray:
        """``M^T Y`` for an ``(N m, r)`` block."""
        m = self.workload.universe_size
        total = np.zeros((m, block.shape[1]))
        for column, weight in enumerate(self.resolvents.weights):
            part = block[column * m:(column + 1) * m] / np.sqrt(self.resolvents.pivots[:, column])[:, None]
            total += math.sqrt(weight / self.peak) * self._unit_lower_solve(column, part, transpose=True)
        return total / np.sqrt(self.q)[:, None]

    def _strategy_matvec(self, vector: np.ndarray) -> np.ndarray:
        return self._strategy_block(vector[:, None])[:, 0]

    def _strategy_transpose(self, values: np.ndarray) -> np.ndarray:
        return self._strategy_transpose_block(values[:, None])[:, 0]

    def _strategy_gram(self) -> np.ndarray:
        m = self.workload.universe_size
        identity = np.eye(m)
        gram = np.zeros((m, m))
        for column, weight in enumerate(self.resolvents.weights):
            solved = lapack.dpttrs(self.resolvents.pivots[:, column], self.resolvents.multipliers[:, column],
                                   identity)[0]
            gram += weight * solved
        root = np.sqrt(self.q)
        return gram / root[:, None] / root[None, :] / self.peak

    # --- the reconstruction R = F X^-1 M^T ---------------------------------------------------

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        return self._reconstruct_block(measurements[:, None])[:, 0]

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        root = np.sqrt(self.q)[:, None]
        inner = self.rational.inverse_apply(*self._t, root * self._strategy_transpose_block(block))
        return np.asarray(self.workload.kernels.matmat(self.peak * root * inner))

    @cached_property
    def reconstruction_norm(self) -> float:
        """``||R||_F``: the root sum of squares of :attr:`query_norms` where F has a bidiagonal
        inverse, else ``sqrt(peak tr k(T))`` (the same spectrum as ``F X^-1 F^T``)."""
        if self._t_other is not None:
            return float(np.linalg.norm(self.query_norms))
        return math.sqrt(self.peak * float(self.rational.diagonal(*self._t).sum()))

    def _query_norms(self) -> np.ndarray:
        if self._t_other is None and self.structure.ranges:
            return self._range_norms()
        if self._t_other is None:
            return super()._query_norms()
        weights = np.ones(self.q.size) if self.p is None else self.p
        # Raised by the rounding bound of the factorizations behind them (the pivots' errors of
        # T' for the diagonals, and of T for the strategy they assume), so the reported gamma_2
        # stays an upper bound on the factorization's own however uneven the weights.
        other = pivot_errors(*self._t_other)
        accumulated = np.cumsum((2 * other + 3 * np.finfo(float).eps)[::-1])[::-1]
        inflation = 1.0 + accumulated + 2.0 * float(pivot_errors(*self._t).max())
        return np.sqrt(self.peak * self.rational.diagonal(*self._t_other) * inflation / weights)

    def _range_norms(self) -> np.ndarray:
        """Row norms of R for all ranges: with ``P`` the ``m + 1`` prefix sums (the empty one first)
        and ``K = P X^-1 P^T``, range ``[a, b]`` has ``||r||^2 = K[b+1, b+1] + K[a, a] - 2 K[a, b+1]``:
        ``O(N m^2)`` for the ``(m+1)^2`` matrix K instead of R applied to every measurement."""
        m = self.workload.universe_size
        prefixes = np.tril(np.ones((m + 1, m)), -1)  # row t sums cells < t
        root = np.sqrt(self.q)[:, None]
        inner = self.peak * root * self.rational.inverse_apply(*self._t, root * prefixes.T)
        squares = range_squares(prefixes @ inner)
        inflation = 1.0 + 2.0 * float(pivot_errors(*self._t).max())
        return np.sqrt(np.clip(squares, 0.0, None) * inflation)

    @property
    def strategy_sensitivity(self) -> float:
        return float(self.column_norms.max())

    @cached_property
    def residual(self) -> float:
        """``||R M - F||_{1->2}`` over :data:`RESIDUAL_PROBES` columns (evenly spaced, the first
        and the last): ``R M = F`` holds in exact arithmetic (``R = F X^-1 M^T``, ``X = M^T M``);
        this measures the rounding of the partial fractions. Each column ``F w`` is measured as
        ``sqrt(w^T G w)``, with ``G w`` solved from the tridiagonal ``G^-1``: no row of F is formed."""
        m = self.workload.universe_size
        root = np.sqrt(self.q)
        gram_diagonal, gram_off = self.structure.gram_inverse
        pivots, multipliers, _ = lapack.dpttrf(gram_diagonal, gram_off)
        worst = 0.0
        for column in np.unique(np.linspace(0, m - 1, min(m, RESIDUAL_PROBES)).astype(int)):
            unit = np.zeros(m)
            unit[column] = 1.0
            # w = X^-1 (M^T M) e_j - e_j, with X^-1 from the partial fractions.
            gram_column = self._strategy_transpose(self._strategy_matvec(unit))
            defect = self.peak * root * self.rational.inverse_apply(*self._t, root * gram_column) - unit
            solved, _ = lapack.dpttrs(pivots, multipliers, defect)
            worst = max(worst, math.sqrt(max(0.0, float(defect @ solved))))
        return worst

    def _finite_factors(self) -> bool:
        return bool(np.all(np.isfinite(self.resolvents.pivots)) and np.all(np.isfinite(self.column_norms)))

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: resolvent strategy of {self.resolvents.shifts.size} blocks of "
                f"{self.workload.universe_size:,} rows")


class _ResolventPoint:
    """One evaluation of the ascent at ``x`` (``q``, or ``(p, q)`` for the max objective)."""

    def __init__(self, structure: TridiagonalInverse, objective: str, x: np.ndarray) -> None:
        m = structure.gram_inverse[0].size
        self.p: np.ndarray | None
        if objective == "max":
            self.p, self.q = normalize_weights(x[:m], WEIGHT_FLOOR), normalize_weights(x[m:], WEIGHT_FLOOR)
            self.x = np.concatenate([self.p, self.q])
        else:
            self.p, self.q = None, normalize_weights(x, WEIGHT_FLOOR)
            self.x = self.q
        cells, queries = _bands(structure, self.p, self.q)
        root_diagonal = _Resolvents(*cells).inverse_sqrt_diagonal
        self.value = float(root_diagonal.sum())
        columns = root_diagonal / self.q
        if objective == "max":
            assert queries is not None and self.p is not None
            rows = _Resolvents(*queries).inverse_sqrt_diagonal / self.p
            self.gap = float(rows.max() * columns.max()) / self.value**2 - 1.0
            self.target = np.concatenate([normalize_weights(self.p * (rows / self.value) ** 2, WEIGHT_FLOOR),
                                          normalize_weights(self.q * (columns / self.value) ** 2, WEIGHT_FLOOR)])
        else:
            self.gap = float(columns.max()) / self.value - 1.0
            self.target = normalize_weights(self.q * (np.clip(columns, 0.0, None) / self.value) ** 2, WEIGHT_FLOOR)
        self.residual = self.target - self.x
        self.residual_norm = float(np.linalg.norm(self.residual))


def solve_resolvent(workload: Workload, structure: TridiagonalInverse, objective: str, tol: float,
                    max_iterations: int, callback: Callback | None) -> tuple[Factorization, int, bool]:
    """The ascent on tridiagonal inverses, its resolvent factorization with the certified bound,
    the evaluations, and whether it stopped short of ``tol`` (by its own estimate)."""
    m = workload.universe_size
    k = workload.num_queries
    if objective == "max" and structure.inverse is None:
        raise ValueError(f"objective: 'max' at scale needs a square workload with a bidiagonal inverse (prefix sums); "
                         f"{workload.name} has {k:,} queries")
    start = np.full(2 * m if objective == "max" else m, 1.0 / m)
    def evaluate(x: np.ndarray) -> _ResolventPoint:
        return _ResolventPoint(structure, objective, x)

    # The iterates' gaps are estimates (from the quadrature); half the tolerance leaves room for
    # the certified gap, recomputed from the factors and the exact eigenvalues.
    best, evaluations = iterate(evaluate, start, tol / 2, max_iterations, callback=callback,
                                monotone=objective == "max")
    cells, _ = _bands(structure, best.p, best.q)
    bound = certified_trace_inverse_sqrt(*cells)
    # The mean objective's bound is ||F D_q^1/2||_* / sqrt(k); the max objective's is Phi itself.
    bound = bound / math.sqrt(k) if objective == "mean" else bound
    fact = ResolventFactorization(workload, structure, best.q, best.p, objective=objective, lower_bound=bound)
    return fact, evaluations, best.gap > tol / 2
