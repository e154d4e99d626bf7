"""Projection onto the local polytope of marginal tables (``K_Q`` itself when the tables are acyclic
:cite:p:`BFMY83`), by L-BFGS on a smooth dual, certified (:doc:`/theory/projection`)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
from scipy.linalg.blas import ddot, dgemv

from .._threads import one_blas_thread
from ..errors import ArgumentTypeError
from ..solve import Attempt, Callback, SolveError, SolveResult, SolveStats, Status, check_callback
from ..tables import Components, Measurement, components_of, maximal_sets, varying_subsets
from ..validation import check_positions, check_positive_int, check_positive_number, check_real_vector
from ..workloads import Workload
from ._certificates import next_certificate
from ._hull import DEFAULT_TOL, NOISE_TOL
from ._local_components import COMPONENT_SOLVER, check_measured, measured_answers, project_components
from ._local_layout import LOCAL_MAX_CELLS, LocalTables, local_tables, measured_tables, table_layout
from ._local_sparse import SPARSE_MIN_TOL, SparseConsistency

__all__ = ["LocalTables", "LocalResult", "LocalError", "LocalProjection", "local_tables", "project_to_local",
           "project_measurements", "LOCAL_MAX_CELLS", "LOCAL_BYTES_PER_CELL", "DEFAULT_MAX_ITERATIONS"]


#: Bytes per cell of the tables held at the peak of a projection: L-BFGS's ten pairs of vectors
#: over the cells (and a spare pair), its direction and candidate points, the problem's buffers
#: and each cell's table, and the certificate's copies. Measured as peak resident memory above
#: the process's baseline (about 150 MB) over the cells: 340 (10 x 17 values, all 3-way tables,
#: 589,560 cells) and 376 (Adult, 10 attributes, all 3-way tables, 443,862 cells); answers and
#: counts included. Above the measurements' own memory, about 300 on Adult's 14 attributes
#: (20,894,536 cells).
LOCAL_BYTES_PER_CELL = 400

#: L-BFGS iterations before a projection gives up (reported as ``iteration_limit``, never accepted).
DEFAULT_MAX_ITERATIONS = 5000

#: Iterations between certificates (each costs about two iterations): at least ``_CHECK_EVERY``;
#: up to ``_CHECK_MOST`` where the best gap's fall over the last two says the tolerance is
#: further off (half the iterations it predicts), since the gap falls about linearly.
_CHECK_EVERY = 10
_CHECK_MOST = 50

#: L-BFGS's pairs: each costs two passes over the cells per direction, and five reach the
#: certificate in as many iterations as ten (benchmarks/README.md, ``local_projection_speed.py``).
_LBFGS_MEMORY = 5

#: Certificates in a row without a better gap after which the projection stops (and, above its
#: tolerance, raises :class:`LocalError`): 300 iterations.
_STALLED_CHECKS = 30

#: Arrays of fewer cells are summed by numpy, larger ones as products with ones.
_SMALL = 4096

#: Tables of this many cells on average are projected onto their simplices one by one.
_LARGE_TABLES = 1024

#: Newton steps on one table's simplex threshold before an exact sort (a handful suffice).
_NEWTON_STEPS = 64

#: Alternating projections (negative cells to 0, then onto consistent tables) before the
#: released point's mix with the uniform tables.
_REPAIR_STEPS = 5

#: The certificate's tolerance on the disagreement of two tables' shared marginals (and of a
#: table's sum from 1) of the released point: it is consistent by construction, up to rounding.
_CONSISTENCY_TOL = 1e-9

#: Below this tolerance every evaluation of the dual projects its multipliers
#: (:meth:`_Problem.negative_dual`): the iterates' drift along the consistent directions, up to some
#: 1e-10 of their norm in a few hundred iterations, would shift the function L-BFGS sees by about
#: the tolerance (24 random 3-way problems: all certified at 1e-8 either way; at 1e-10, 16 without
#: the projection against 21 with it).
_EXACT_DUAL_BELOW = 1e-8


class LocalError(SolveError):
    """The projection stopped before its certificate met the tolerance.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        The solver's one attempt.
    best : LocalResult, optional
        The best certified point found, above the tolerance.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0.1, 0.3, 27)
    >>> pm.bodies.project_to_local(pm.marginals(pm.Domain(["a", "b", "c"], [3, 3, 3]), 2), y, tol=1e-14,
    ...                            max_iterations=1)
    Traceback (most recent call last):
    ...
    projmech.bodies._local.LocalError: ...
    """


@dataclass(frozen=True, repr=False)
class LocalResult(SolveResult):
    """The projection onto the local polytope of some tables (made by :func:`project_to_local` and
    :func:`project_measurements`).

    Parameters
    ----------
    answers : numpy.ndarray
        What was projected, at the projected tables: each workload term's table times its weight;
        for measurements, each one's answers over its sigma (``metric="precision"``) or the maximal
        tables' cells (``metric="tables"``).
    tables : tuple of tuple of int
        Each table's attributes.
    values : numpy.ndarray
        The tables' cells, one table after another.
    exact : bool
        Whether the tables are acyclic (the projection is onto ``K_Q`` itself).
    distance : float
        ``||answers - y||_2``.
    inconsistency : float
        The largest disagreement of two tables' shared marginals, or of a table's sum from 1.
    stats : SolveStats
        The dual L-BFGS's iterations, certified gap and tolerance.
    _model : LocalTables
        The tables' layout.
    multipliers : numpy.ndarray or None
        The dual point ``values`` came from (where a warm start starts).

    Examples
    --------
    >>> result = pm.bodies.project_to_local(pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), 2), np.full(12, 0.25))
    >>> result.marginal((0, 2)).tolist(), result.exact, result.inconsistency < 1e-12
    ([[0.25, 0.25], [0.25, 0.25]], False, True)
    """

    answers: np.ndarray
    tables: tuple[tuple[int, ...], ...]
    values: np.ndarray
    exact: bool
    distance: float
    inconsistency: float
    stats: SolveStats
    _model: LocalTables = field(repr=False, compare=False)
    multipliers: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def witness(self) -> None:
        """None: a local-polytope point is a set of tables, never a vector over the universe."""
        return None

    @property
    def moments(self) -> None:
        """None: the local polytope has no moment matrix."""
        return None

    def marginal(self, attributes: Any) -> np.ndarray:
        """The projected table of some attributes (one of :attr:`tables`).

        Parameters
        ----------
        attributes : sequence of int
            The table's attributes (domain positions).

        Returns
        -------
        numpy.ndarray
            A copy of the table, one axis per attribute.
        """
        key = tuple(sorted(int(a) for a in attributes))
        if key not in self.tables:
            raise ValueError(f"attributes: {list(key)} is not one of the tables {[list(t) for t in self.tables]}")
        return self._model.table(self.values, self.tables.index(key)).copy()

    def cells_on(self, attributes: Any) -> np.ndarray | None:
        """The projected cells on some attributes, summed from the smallest table holding them; None
        where no projected table holds them all.

        Parameters
        ----------
        attributes : sequence of int
            Increasing domain positions (none: the total).

        Returns
        -------
        numpy.ndarray or None
            A new array, one axis per attribute.

        Examples
        --------
        >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), 2)
        >>> result = pm.bodies.project_to_local(workload, workload.toarray() @ np.full(8, 0.125))
        >>> result.cells_on((1,)).tolist(), result.cells_on((0, 1, 2)) is None
        ([0.5, 0.5], True)
        """
        try:
            wanted = tuple(attributes)
        except TypeError:
            raise ArgumentTypeError("attributes", f"expected a sequence of int positions, got {attributes!r}") from None
        if wanted:
            wanted = check_positions("attributes", wanted, what="domain positions")
        cells = self._model.cells_on(self.values, wanted)
        return None if cells is None else cells.copy()

    def summary(self) -> dict[str, Any]:
        """The projection and its statistics as plain JSON-serializable values.

        Returns
        -------
        dict
        """
        return {"body": "local", "exact": self.exact, "distance": self.distance,
                "inconsistency": self.inconsistency, "tables": [list(table) for table in self.tables],
                **self.stats.summary()}

    def _description(self) -> str:
        kind = "marginal polytope (exact)" if self.exact else "local polytope"
        return (f"onto the {kind} of {len(self.tables)} tables: {self.answers.size} answers, "
                f"distance {self.distance:.6g}")


class _Problem:
    """The projection's data over the tables' cells: each table's weight ``W_T`` and mean target ``ybar_T``.

    Every pass over the cells writes into buffers held here, allocated once: a fresh array of the
    cells costs more than the arithmetic on it (its pages are faulted in on each allocation).
    """

    def __init__(self, model: LocalTables, y: np.ndarray, exact_dual: bool = False, sparse: bool = False) -> None:
        self.model = model
        self.y = y
        count = len(model.attributes)
        self.weight = np.zeros(count)
        self.target = np.zeros(model.cells)
        for table, row, weight in model.terms:
            size = model.starts[table + 1] - model.starts[table]
            self.weight[table] += weight**2
            self.target[model.starts[table]:model.starts[table + 1]] += weight * y[row:row + size]
        lengths = np.diff(model.starts)
        self.counts = lengths
        self.cell_weight = np.repeat(self.weight, lengths)
        self._unit_weights = bool(np.all(self.weight == 1.0))  # then the passes by the weights are skipped
        #: Whether :meth:`negative_dual` projects its multipliers (see there).
        self.exact_dual = exact_dual
        self.target /= self.cell_weight
        self.lengths = lengths.astype(float)
        self.uniform = 1.0 / np.repeat(self.lengths, lengths)
        self.owner = np.repeat(np.arange(count), lengths)  # each cell's table
        self._thresholds: np.ndarray | None = None
        self._unit = np.ones(count)
        self._ones: dict[int, np.ndarray] = {}
        self._shared_list: list[tuple[np.ndarray, list[tuple[int, int]], np.ndarray]] | None = None
        # The consistency projection as sparse products: built at the first projection where allowed
        # (at loose tolerances: see SPARSE_MIN_TOL) and fitting, else False.
        self._sparse: SparseConsistency | bool | None = None if sparse else False
        # Buffers: dual_tables' pair (valid until its next call) and the simplex's input and mask.
        self._orthogonal = np.empty(model.cells)
        self._tables = np.empty(model.cells)
        self._scratch = np.empty(model.cells)
        self._mask = np.empty(model.cells, dtype=bool)
        # The answers' part the tables cannot reach: sum_t ||y_t||^2 - sum_T W_T ||ybar_T||^2, halved.
        constant_part = np.zeros(0) if model.constant_rows.size == 0 else y[model.constant_rows] - model.constants
        reachable = np.concatenate([y[row:row + model.starts[t + 1] - model.starts[t]] for t, row, _ in model.terms]) \
            if model.terms else np.zeros(0)
        self.offset = 0.5 * (float(reachable @ reachable) - float(self.cell_weight @ self.target**2)
                             + float(constant_part @ constant_part))

    def answers(self, values: np.ndarray) -> np.ndarray:
        """The workload's answers of the tables ``values``."""
        return self.model.answers(values, self.y.size)

    def objective(self, values: np.ndarray) -> float:
        """``(1/2)||answers(values) - y||^2``, computed from the answers themselves."""
        residual = self.answers(values) - self.y
        return 0.5 * float(residual @ residual)

    def table_sums(self, values: np.ndarray) -> np.ndarray:
        """Each table's sum of ``values`` (a segmented sum over the contiguous tables)."""
        return np.add.reduceat(values, self.model.starts[:-1])

    def spread(self, per_table: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """One value per table repeated over the table's cells (into ``out`` where given)."""
        if out is None:
            return np.repeat(per_table, self.counts)
        return np.take(per_table, self.owner, out=out)

    def simplex(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Each table projected onto its simplex by Michelot's method, warm-started (into ``out``, not
        ``values``, where given): table by table where tables are large, else all tables at once."""
        out = np.empty_like(values) if out is None else out
        if self.model.cells >= _LARGE_TABLES * self.lengths.size:
            starts, previous = self.model.starts, self._thresholds
            thresholds = np.empty(self.lengths.size)
            for table in range(thresholds.size):
                thresholds[table] = _simplex_threshold(values[starts[table]:starts[table + 1]],
                                                       out[starts[table]:starts[table + 1]],
                                                       None if previous is None else float(previous[table]))
            self._thresholds = thresholds
            return out
        threshold = (self.table_sums(values) - 1.0) / self.lengths
        if self._thresholds is not None:
            np.subtract(values, self.spread(self._thresholds, out), out=out)
            np.maximum(out, 0.0, out=out)
            excess = self.table_sums(out) - 1.0
            threshold = np.where(excess >= 0.0, np.maximum(self._thresholds, threshold), threshold)
        index = np.flatnonzero(np.greater(values, self.spread(threshold, out), out=self._mask))
        kept = values[index]
        owner = self.owner[index]
        count = threshold.size
        members = np.bincount(owner, minlength=count)
        while True:
            sums = np.bincount(owner, kept, count)
            threshold = np.maximum(threshold, (sums - 1.0) / np.maximum(members, 1))
            keep = kept > threshold[owner]
            if keep.all():
                break
            kept, owner = kept[keep], owner[keep]
            members = np.bincount(owner, minlength=count)
        self._thresholds = threshold
        np.subtract(values, self.spread(threshold, out), out=out)
        return np.maximum(out, 0.0, out=out)

    def _summed(self, array: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """``array`` summed over ``axes``, one axis at a time as a product with ones (BLAS reads the
        cells once, several times faster than numpy's sum over a short inner axis); small arrays by
        numpy's sum, which costs fewer Python steps."""
        if array.size < _SMALL:
            return array.sum(axis=axes)
        for axis in sorted(axes, reverse=True):
            shape = array.shape
            size, before, after = shape[axis], math.prod(shape[:axis]), math.prod(shape[axis + 1:])
            ones = self._ones.get(size)
            if ones is None:
                ones = self._ones[size] = np.ones(size)
            if after == 1:
                summed = array.reshape(before, size) @ ones
            elif before == 1:
                summed = ones @ array.reshape(size, after)
            else:
                summed = ones.reshape(1, size) @ array.reshape(before, size, after)
            array = summed.reshape(shape[:axis] + shape[axis + 1:])
        return array

    def _shared_sets(self) -> list[tuple[np.ndarray, list[tuple[int, int]], np.ndarray]]:
        """Each shared set's tables: their indices, (table, position in its plan) and one over their cells."""
        if self._shared_list is None:
            plans = self.model.plans()
            self._shared_list = [
                (np.array([index for index, _ in rows]), rows,
                 1.0 / np.array([plans[index].cells for index, _ in rows], dtype=float))
                for rows in self.model.holders().values()]
        return self._shared_list

    def _corrections(self, values: np.ndarray, metric: np.ndarray, total: float
                     ) -> list[tuple[list[np.ndarray], float]]:
        """What :meth:`consistent` adds to each table: corrections on its largest shared sets, shaped to
        broadcast over the table, and a constant.

        A table's component on a shared set ``A`` (times ``|T|``) is its marginal on ``A`` times
        ``n_a I - J_a`` along each of ``A``'s axes (``sum over B in A of (-1)^|A\\B| |B| m_B``);
        the tables holding ``A`` are stacked, averaged and corrected together, set by set rather
        than table by table.
        """
        model = self.model
        plans = model.plans()
        taken: list[list[np.ndarray]] = []
        totals: list[float] = []
        for index, plan in enumerate(plans):
            table = model.table(values, index)
            marginals: list[np.ndarray] = []
            for origin, axes in zip(plan.source, plan.source_axes):
                outer = table if origin < 0 else marginals[origin]
                marginals.append(self._summed(outer, axes) if axes else outer)
            totals.append(float(marginals[-1].sum()) if marginals else float(table.sum()))
            taken.append(marginals)
        changes: list[list[Any]] = [[None] * len(plan.subsets) for plan in plans]
        for tables, rows, scale in self._shared_sets():
            stacked = np.stack([taken[index][position] for index, position in rows])
            for axis in range(1, stacked.ndim):  # no division: (n_a I - J_a) along each axis
                stacked = stacked.shape[axis] * stacked - stacked.sum(axis=axis, keepdims=True)
            weights = metric[tables] * scale
            average = np.tensordot(weights, stacked, axes=1) / weights.sum()
            stacked -= average
            stacked *= -scale.reshape((-1,) + (1,) * (stacked.ndim - 1))
            for row, (index, position) in enumerate(rows):
                changes[index][position] = stacked[row]
        corrections = []
        for index, plan in enumerate(plans):
            own = changes[index]
            for position in range(len(own) - 1, -1, -1):  # smallest first, into the largest sets
                if plan.sink[position] >= 0:
                    own[plan.sink[position]] += own[position].reshape(plan.sink_shape[position])
            parts = [change.reshape(plan.sink_shape[position]) for position, change in enumerate(own)
                     if plan.sink[position] < 0]
            corrections.append((parts, (total - totals[index]) / plan.cells))
        return corrections

    def consistent(self, values: np.ndarray, metric: np.ndarray, total: float, out: np.ndarray | None = None
                   ) -> np.ndarray:
        """The projection of ``values`` onto consistent tables summing to ``total``, in the weighted norm
        (into ``out`` where given): as sparse products where the tables are many and small
        (:class:`SparseConsistency`), else table by table."""
        if out is None:
            out = np.empty_like(values)
        if self._sparse is None:
            self._sparse = SparseConsistency(self.model) if SparseConsistency.fits(self.model) else False
        if isinstance(self._sparse, SparseConsistency):
            return self._sparse.consistent(values, metric, total, out)
        corrections = self._corrections(values, metric, total)
        for index, (parts, shift) in enumerate(corrections):
            # The first addition writes the table (no copy first: one pass fewer); the sum's
            # correction rides on it. ``out`` may be ``values``: cell by cell, in place.
            table, source = self.model.table(out, index), self.model.table(values, index)
            np.add(source, parts[0] + shift if parts else shift, out=table)
            for part in parts[1:]:
                table += part
        return out

    def orthogonal(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The part of ``values`` orthogonal to the consistent directions (into ``out`` where given).

        ``values`` minus its consistent part rather than minus the corrections themselves: rounded
        alike, the dual's certificate reaches a gap some 30 times smaller.
        """
        out = self.consistent(values, self._unit, 0.0, out)
        return np.subtract(values, out, out=out)

    def dual_tables(self, multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The orthogonal part of ``multipliers`` and the tables minimizing the Lagrangian there (both
        buffers of this problem, overwritten by the next call)."""
        orthogonal = self.orthogonal(multipliers, self._orthogonal)
        return orthogonal, self._minimizing(orthogonal)

    def _minimizing(self, orthogonal: np.ndarray) -> np.ndarray:
        """The tables minimizing the Lagrangian at multipliers ``orthogonal`` (a buffer of this problem)."""
        if self._unit_weights:  # no division by ones: a pass fewer
            np.subtract(self.target, orthogonal, out=self._scratch)
        else:
            np.divide(orthogonal, self.cell_weight, out=self._scratch)
            np.subtract(self.target, self._scratch, out=self._scratch)
        return self.simplex(self._scratch, self._tables)

    def negative_dual(self, multipliers: np.ndarray, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Minus the dual at ``multipliers`` and its gradient (into ``out`` where given, else a new array).

        Unless :attr:`exact_dual`, ``multipliers`` are taken as orthogonal to the consistent
        directions, as L-BFGS's iterates are from an orthogonal start (every gradient is, up to
        rounding: the iterates drift by some 1e-10 of their norm in hundreds of iterations): one
        projection per evaluation instead of two.
        The certificate projects its multipliers itself (:meth:`dual_tables`); a tight tolerance
        sets :attr:`exact_dual` (``_EXACT_DUAL_BELOW``).
        """
        orthogonal = self.orthogonal(multipliers, self._orthogonal) if self.exact_dual else multipliers
        tables = self._minimizing(orthogonal)
        # The terms cell by cell and then their (pairwise) sum: separate sums of the two parts
        # cancel, and the line search's comparisons of nearby values then stall.
        terms = np.subtract(tables, self.target, out=self._scratch)
        np.multiply(terms, terms, out=terms)
        if not self._unit_weights:
            terms *= self.cell_weight
        terms *= 0.5
        gradient = np.multiply(orthogonal, tables, out=out)
        terms += gradient
        value = float(np.sum(terms)) + self.offset - float(orthogonal @ self.uniform)
        return -value, np.subtract(self.uniform, self.orthogonal(tables, gradient), out=gradient)

    def lower_bound(self, multipliers: np.ndarray) -> float:
        """A lower bound on the optimum from the dual at ``multipliers``, lowered for rounding so that it
        never exceeds the optimum."""
        return self.bound_at(*self.dual_tables(multipliers))

    def bound_at(self, orthogonal: np.ndarray, point: np.ndarray) -> float:
        """:meth:`lower_bound` from :meth:`dual_tables`' pair, for a caller that has it already (the
        arithmetic of each term as written in the theory, in place: the same roundings)."""
        starts = self.model.starts[:-1]
        work = self.orthogonal(orthogonal, self._scratch)
        leftover = np.subtract(orthogonal, work, out=work)  # rounding along the consistent directions
        spread = float(np.sum(np.maximum.reduceat(leftover, starts) - np.minimum.reduceat(leftover, starts)))
        difference = np.subtract(point, self.target, out=work)
        gradient = np.multiply(self.cell_weight, difference)
        gradient += orthogonal
        # terms = (1/2) W (p - ybar)^2 + lambda p, cell by cell
        terms = np.multiply(difference, difference, out=work)
        terms *= self.cell_weight
        terms *= 0.5
        products = np.multiply(orthogonal, point)
        terms += products
        inner = self.table_sums(terms)
        # Frank–Wolfe gap of each table's inner problem: <g, p> - min_j g_j.
        lowest = np.minimum.reduceat(gradient, starts)
        np.multiply(gradient, point, out=products)
        gaps = np.maximum(self.table_sums(products) - lowest, 0.0)
        shift = float(orthogonal @ self.uniform)
        magnitude = (float(np.abs(terms, out=terms).sum()) + float(np.abs(products, out=products).sum())
                     + float(np.abs(lowest).sum()) + float(np.abs(orthogonal, out=gradient) @ self.uniform)
                     + abs(self.offset))
        rounding = 4.0 * terms.size * np.finfo(float).eps * magnitude
        return float(np.sum(inner - gaps)) - shift + self.offset - spread - rounding


def project_to_local(workload: Workload, y: Any, *, tol: float | None = None, noise_scale: float | None = None,
                     max_iterations: int = DEFAULT_MAX_ITERATIONS, callback: Callback | None = None,
                     start: LocalResult | None = None) -> LocalResult:
    """Project ``y`` onto the local polytope of the workload's marginal tables.

    Parameters
    ----------
    workload : Workload
        A marginal workload :func:`local_tables` takes.
    y : array_like, shape (k,)
        The point to project.
    tol : float, optional
        As for :func:`~projmech.bodies.project_to_hull`.
    noise_scale : float, optional
        The standard deviation of the noise in ``y``.
    max_iterations : int, default DEFAULT_MAX_ITERATIONS
        L-BFGS iterations before giving up.
    callback : callable, optional
        ``callback(iteration, gap)`` after each certificate.
    start : LocalResult, optional
        An earlier projection whose multipliers start the dual (0 on tables it lacks). A start on
        other tables than these is not certified as it is: the first certificate comes after the
        first iterations.

    Returns
    -------
    LocalResult

    Raises
    ------
    LocalError
        If the certificate does not meet the tolerance within ``max_iterations``.

    Examples
    --------
    >>> result = pm.bodies.project_to_local(pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), 2), np.full(12, 0.3))
    >>> np.round(result.answers, 6).tolist()[:4], result.exact, result.stats.tolerance_met
    ([0.25, 0.25, 0.25, 0.25], False, True)
    """
    model = local_tables(workload)
    if isinstance(model, str):
        raise ValueError(f"workload: {model}")
    y = _finite_norm(check_real_vector("y", y, workload.num_queries))
    if noise_scale is not None:
        noise_scale = check_positive_number("noise_scale", noise_scale)
    return _project(model, y, tol, noise_scale, max_iterations, callback, start)


def project_measurements(sizes: Sequence[int], measurements: Sequence[Measurement], *, metric: str = "precision",
                         tol: float | None = None, max_iterations: int = DEFAULT_MAX_ITERATIONS,
                         callback: Callback | None = None, start: LocalResult | None = None) -> LocalResult:
    """Project noisy measurements of tables onto the local polytope of the tables they measure.

    ``metric="precision"``: ``min sum_i ||Q_i mu_{S_i} - y_i||^2 / sigma_i^2``, generalized least
    squares, the constrained maximum-likelihood estimate. ``metric="tables"``: the tables'
    unconstrained least-squares estimate projected in the tables' own Euclidean norm, never farther
    from the true tables in that norm than the estimate. Both are certified as by
    :func:`project_to_local` (:class:`LocalError` where the certificate falls short); see
    :doc:`/theory/projection`, section *Measurements in their own metric*.

    Parameters
    ----------
    sizes : sequence of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one: of a table's cells, or of queries that weigh each residual component of the
        table by one precision (:func:`~projmech.tables.components_of`).
    metric : {"precision", "tables"}
        The norm of the projection.
    tol, max_iterations, callback
        As for :func:`project_to_local` (``tol`` with ``noise_scale=1``).
    start : LocalResult, optional
        An earlier projection of the same kind (of some of the measurements) to start from.

    Returns
    -------
    LocalResult

    Examples
    --------
    >>> from projmech.tables import Measurement
    >>> result = pm.bodies.project_measurements((2, 2), [Measurement((0,), np.array([0.7, 0.3]), 0.1),
    ...                                                  Measurement((0,), np.array([0.5, 0.5]), 0.1)])
    >>> np.round(result.marginal((0,)), 6).tolist()
    [0.6, 0.4]
    """
    if metric not in ("precision", "tables"):
        raise ValueError(f"metric: expected 'precision' or 'tables', got {metric!r}")
    if not isinstance(measurements, Sequence) or not all(isinstance(m, Measurement) for m in measurements):
        raise TypeError("measurements: expected a sequence of Measurement")
    if metric == "precision" and all(m.is_identity for m in measurements):
        if isinstance(start, LocalResult) and start.stats.solver == COMPONENT_SOLVER:
            raise ValueError("start: a projection of queries in their metric cannot start one of cells")
        model = measured_tables(sizes, measurements)
        if isinstance(model, str):
            raise ValueError(f"measurements: {model}")
        y = np.concatenate([(1.0 / m.sigma) * np.asarray(m.values, dtype=float) for m in measurements])
        y = _finite_norm(check_real_vector("measurements", y, y.size))
        return _project(model, y, tol, 1.0, max_iterations, callback, start)
    parts = components_of(sizes, measurements)
    tables = list(parts.tables)
    if not tables:
        raise ValueError("measurements: none informs a table beyond its total, which is 1")
    if metric == "tables":
        if isinstance(start, LocalResult) and start.stats.solver == COMPONENT_SOLVER:
            raise ValueError("start: a projection of queries in their metric cannot start one in the tables' norm")
        return _project_estimate(parts, tables, tol, max_iterations, callback, start)
    tol = check_positive_number("tol", NOISE_TOL if tol is None else tol)
    max_iterations = check_positive_int("max_iterations", max_iterations)
    callback = check_callback(callback)
    model, values, multipliers, stats = project_components(parts, tables, tol=tol, max_iterations=max_iterations,
                                                           callback=callback, start=_component_start(start))
    y = np.concatenate([np.asarray(m.values, dtype=float) / m.sigma for m in measurements])
    answers = measured_answers(sizes, model, values, measurements)
    result = LocalResult(answers=answers, tables=model.attributes, values=values, exact=model.acyclic,
                         distance=float(np.linalg.norm(answers - y)),
                         inconsistency=model.inconsistency(values), stats=stats,
                         _model=model, multipliers=multipliers)
    if not stats.tolerance_met:
        raise LocalError(f"the projection in the measurements' metric stopped after {stats.iterations} iterations "
                         f"with gap {stats.gap:.3g} above its tolerance {stats.tolerance:.3g}", stats.attempts, result)
    return result


def _project_estimate(parts: Components, tables: list[tuple[int, ...]], tol: float | None, max_iterations: int,
                      callback: Callback | None, start: LocalResult | None) -> LocalResult:
    """The maximal tables' least-squares estimate projected in the tables' Euclidean norm."""
    sizes = parts.sizes
    model = table_layout(sizes, maximal_sets(tables))
    maximal = model.attributes
    check_measured(parts, maximal)
    y = np.concatenate([parts.table(table).ravel() for table in maximal])
    # The estimate's noise per cell, root mean square: the tolerance's scale.
    variance = sum(math.prod(sizes[a] - 1 for a in subset) / parts.precision[subset]
                   / math.prod(sizes[a] for a in table if a not in subset)
                   for table in maximal for subset in varying_subsets(sizes, table))
    return _project(model, y, tol, math.sqrt(variance / y.size), max_iterations, callback, start)


def _component_start(start: LocalResult | None) -> dict[tuple[int, ...], np.ndarray] | None:
    """Each table's multipliers in an earlier projection in the measurements' metric (a ValueError
    for another kind)."""
    if start is None:
        return None
    if not isinstance(start, LocalResult):
        raise TypeError(f"start: expected a LocalResult, got {type(start).__name__}")
    if start.stats.solver != COMPONENT_SOLVER or start.multipliers is None:
        raise ValueError("start: a projection of cells cannot start one of queries in their metric")
    multipliers = start.multipliers
    return {table: start._model.table(multipliers, index) for index, table in enumerate(start.tables)}


@dataclass(frozen=True)
class LocalProjection:
    """The local-polytope estimator (:class:`~projmech.tables.Estimator`): :func:`project_measurements`,
    returning the best point (its status says so) where the certificate falls short.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    tol : float, optional
        The certificate's tolerance (default ``NOISE_TOL``).
    max_iterations : int, default DEFAULT_MAX_ITERATIONS
        L-BFGS iterations before stopping.

    Examples
    --------
    >>> from projmech.tables import Measurement
    >>> result = pm.bodies.LocalProjection((2, 2)).estimate([Measurement((0, 1), np.array([0.4, 0.1, 0.3, 0.2]), 0.1)])
    >>> np.round(result.marginal((0, 1)), 6).tolist()
    [[0.4, 0.1], [0.3, 0.2]]
    """

    sizes: tuple[int, ...]
    tol: float | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS

    def estimate(self, measurements: Sequence[Measurement], start: LocalResult | None = None) -> LocalResult:
        """The measured tables projected onto their local polytope.

        Parameters
        ----------
        measurements : sequence of Measurement
            At least one, each of a table's cells.
        start : LocalResult, optional
            An earlier projection to start from.

        Returns
        -------
        LocalResult
        """
        try:
            return project_measurements(self.sizes, measurements, tol=self.tol, max_iterations=self.max_iterations,
                                        start=start)
        except LocalError as error:
            assert isinstance(error.best, LocalResult)
            return error.best


def _started(model: LocalTables, start: LocalResult | None) -> np.ndarray:
    """The dual's first point: ``start``'s multipliers on the tables it shares with ``model``."""
    point = np.zeros(model.cells)
    if start is None:
        return point
    if not isinstance(start, LocalResult):
        raise TypeError(f"start: expected a LocalResult, got {type(start).__name__}")
    if start.multipliers is not None:
        for index, table in enumerate(model.attributes):
            if table in start.tables and start._model.shapes[start.tables.index(table)] == model.shapes[index]:
                model.table(point, index)[...] = start._model.table(start.multipliers, start.tables.index(table))
    return point


def _finite_norm(y: np.ndarray) -> np.ndarray:
    """``y``, refused where its squared norm overflows."""
    with np.errstate(over="ignore"):
        squared = 0.5 * float(y @ y)
    if not math.isfinite(squared):
        raise ValueError("y: its squared norm overflows double precision (entries of about 1e154 or more); the "
                         "answers are fractions of the public size, so rescale them")
    return y


def _project(model: LocalTables, y: np.ndarray, tol: float | None, noise_scale: float | None, max_iterations: int,
             callback: Callback | None, start: LocalResult | None) -> LocalResult:
    """The projection of answers ``y`` onto the local polytope of ``model``'s tables."""
    tol = check_positive_number("tol", (DEFAULT_TOL if noise_scale is None else NOISE_TOL) if tol is None else tol)
    max_iterations = check_positive_int("max_iterations", max_iterations)
    callback = check_callback(callback)
    began = time.perf_counter()
    problem = _Problem(model, y, exact_dual=tol < _EXACT_DUAL_BELOW, sparse=tol >= SPARSE_MIN_TOL)
    initial = problem.orthogonal(_started(model, start))  # as the dual's iterations need it
    scale = 1.0 if noise_scale is None else max(0.5 * y.size * noise_scale**2, 1e-8)
    best: list[Any] = []  # [gap, lower bound, released point, multipliers] of the best certificate so far
    iterations = [0]

    stalled = [0]  # certificates in a row that did not improve on the best gap
    checks: list[tuple[int, float]] = []  # (iteration, best gap) at each certificate
    next_check = [_CHECK_EVERY]

    def certify(multipliers: np.ndarray) -> bool:
        orthogonal, tables = problem.dual_tables(multipliers)  # shared by the release and the bound
        lower = problem.bound_at(orthogonal, tables)
        released, upper = _released(problem, tables)
        gap = max(upper - lower, 0.0)
        if not best or gap < best[0]:
            best[:] = [gap, lower, released, multipliers.copy()]  # L-BFGS reuses its points
            stalled[0] = 0
        else:
            stalled[0] += 1
        if callback is not None:
            callback(iterations[0], gap)
        target = tol * max(best[1], scale)
        checks.append((iterations[0], best[0]))
        next_check[0] = iterations[0] + next_certificate(checks, target, _CHECK_EVERY, _CHECK_MOST)
        # Stop where the gap no longer falls (at the limit of double precision for a tight
        # tolerance); reported, not accepted.
        return best[0] <= target or stalled[0] >= _STALLED_CHECKS

    # A warm start from other tables (the previous round's, before a table was measured) is the
    # point of another problem: its certificate cannot hold, so the first one waits for the
    # iterations. From the same tables it may be the answer already (a repeated projection).
    if (start is not None and start.tables != model.attributes) or not certify(initial):
        # L-BFGS on the dual (smooth, piecewise quadratic): its gradient is the inconsistency of
        # the tables it implies, which falls linearly.
        def step(iteration: int, point: np.ndarray) -> bool:
            iterations[0] = iteration
            return iteration >= next_check[0] and certify(point)

        # On one BLAS thread: the iterations are vector operations bound by memory, which more
        # threads do not speed up (on a loaded machine, OpenBLAS's waiting threads slow them);
        # one thread also rounds alike on every machine.
        with one_blas_thread():
            last = _lbfgs(problem.negative_dual, initial, max_iterations, step, 1.0 / float(problem.weight.min()))
        if not checks or checks[-1][0] != iterations[0]:
            certify(last)
    gap, lower, released, multipliers = best
    answers = problem.answers(released)
    inconsistency = model.inconsistency(released)
    met = gap <= tol * max(lower, scale) and inconsistency <= _CONSISTENCY_TOL and bool(np.all(released >= 0))
    status = Status.OPTIMAL if met else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - began
    stats = SolveStats(solver="dual-lbfgs", status=status, solve_time=seconds, iterations=iterations[0], gap=gap,
                       tolerance=tol * max(lower, scale), tolerance_met=met,
                       attempts=(Attempt("dual-lbfgs", status, f"gap {gap:.3g}", seconds),), total_time=seconds)
    iteration = iterations[0]
    result = LocalResult(answers=answers, tables=model.attributes, values=released, exact=model.acyclic,
                         distance=float(np.linalg.norm(answers - y)), inconsistency=inconsistency, stats=stats,
                         _model=model, multipliers=multipliers)
    if not met:
        why = "at its iteration limit" if iteration >= max_iterations else "its gap no longer falling"
        raise LocalError(f"the local-polytope projection stopped after {iteration} iterations ({why}) with gap "
                         f"{gap:.3g} above its tolerance {stats.tolerance:.3g} (inconsistency {inconsistency:.2g})",
                         stats.attempts, result)
    return result


def _lbfgs(function: Any, point: np.ndarray, max_iterations: int, on_iteration: Any, curvature: float,
           memory: int = _LBFGS_MEMORY) -> np.ndarray:
    """Minimize a smooth convex ``function`` (value, gradient) by L-BFGS :cite:p:`NW06` (algorithm 7.4,
    its directions in the compact form of :class:`_Pairs`) with Armijo backtracking, until
    ``on_iteration(iteration, point)`` is True; the last point. ``function(point, out)`` writes the
    gradient into ``out``: two buffers of points and two of gradients, swapped at each step, since a
    fresh array of many cells costs more than its arithmetic."""
    point = point.copy()
    value, gradient = function(point, np.empty_like(point))
    spare_point, spare_gradient = np.empty_like(point), np.empty_like(point)
    pairs = _Pairs(point.size, memory)
    direction = np.empty_like(point)
    for iteration in range(1, max_iterations + 1):
        pairs.direction(gradient, curvature, direction)
        slope = ddot(gradient, direction)
        restarted = pairs.empty
        if not slope < 0.0:  # not a descent direction: restart from the scaled gradient
            pairs.clear()
            np.multiply(gradient, -1.0 / curvature, out=direction)
            slope, restarted = ddot(gradient, direction), True
            if slope == 0.0:
                break
        length, doubled, halved = 1.0, False, False
        while True:
            candidate = _step(point, length, direction, spare_point)
            new_value, new_gradient = function(candidate, spare_gradient)
            if new_value <= value + 1e-4 * length * slope:
                # Doubling only before any halving: a search that halved once and then doubled
                # again ping-ponged between two lengths forever (a slope of -1e-26, where
                # rounding decides Armijo's test, on an adaptive mechanism's estimate).
                if (pairs.empty and not halved and length < 2.0**40
                        and _squared_distance(new_gradient, gradient, pairs.scratch) <= 1e-16 * ddot(gradient,
                                                                                                   gradient)):
                    length *= 2.0  # a linear piece: try a longer step
                    doubled = True
                    continue
                break
            if doubled:  # the doubling went one step too far: take the last step that gained
                length /= 2.0
                candidate = _step(point, length, direction, spare_point)
                new_value, new_gradient = function(candidate, spare_gradient)
                break
            length /= 2.0
            halved = True
            if length < 1e-12:
                if restarted:
                    return point
                pairs.clear()
                np.multiply(gradient, -1.0 / curvature, out=direction)
                slope, restarted, length, halved = ddot(gradient, direction), True, 1.0, False
        pairs.offer(point, candidate, gradient, new_gradient, length)
        point, spare_point, value = candidate, point, new_value
        gradient, spare_gradient = new_gradient, gradient
        if on_iteration(iteration, point):
            break
    return point


class _Pairs:
    """L-BFGS's last ``memory`` pairs ``(s, y)`` in the compact form :cite:p:`NW06` (section 7.2): the
    pairs are rows of one matrix beside their Gram matrix, so that a direction costs two passes
    over them (two matrix-vector products) instead of the two-loop recursion's four. The Gram matrix
    is kept from inner products at hand: a new ``s`` is a multiple of the last direction, a
    combination of the rows and the gradient; a new ``y``'s products are the difference of the
    rows' products with two gradients, the second taken by the next direction."""

    def __init__(self, size: int, memory: int) -> None:
        self.memory = memory
        self.slots = memory + 1  # one spare: a pair is written before it is accepted
        self.rows = np.zeros((2 * self.slots, size))  # s of slot i in row i, its y in row slots + i
        self.gram = np.zeros((2 * self.slots, 2 * self.slots))
        self.order: list[int] = []  # the slots of the pairs held, oldest first
        self.spare = 0
        self.products = np.zeros(2 * self.slots)  # the rows' products with the last gradient
        self.coefficients = np.zeros(2 * self.slots)  # the last direction: rows^T coefficients + factor g
        self.factor = 0.0
        self.pending: tuple[int, np.ndarray] | None = None  # a new y's slot and the rows' products before it

    @property
    def empty(self) -> bool:
        return not self.order

    def clear(self) -> None:
        self.order.clear()
        self.pending = None

    def direction(self, gradient: np.ndarray, curvature: float, out: np.ndarray) -> np.ndarray:
        """``-H gradient`` into ``out`` (the scaled gradient where no pair is held)."""
        runs = self._runs()
        products = np.zeros(2 * self.slots)
        for begin, end in runs:
            np.dot(self.rows[begin:end], gradient, out=products[begin:end])
        if self.pending is not None:
            slot, before = self.pending
            column = self.slots + slot
            held = [row for index in self.order if index != slot for row in (index, self.slots + index)]
            self.gram[held, column] = products[held] - before[held]
            self.gram[column, held] = self.gram[held, column]
            self.pending = None
        self.products = products
        self.coefficients[:] = 0.0
        if not self.order:
            self.factor = -1.0 / curvature
            return np.multiply(gradient, self.factor, out=out)
        s_rows = np.array(self.order)
        y_rows = s_rows + self.slots
        upper = np.triu(self.gram[np.ix_(s_rows, y_rows)])
        diagonal = np.diag(upper)
        yy = self.gram[np.ix_(y_rows, y_rows)]
        scale = diagonal[-1] / yy[-1, -1]
        first = scipy.linalg.solve_triangular(upper, products[s_rows])
        second = scipy.linalg.solve_triangular(upper, diagonal * first + scale * (yy @ first)
                                               - scale * products[y_rows], trans="T")
        self.coefficients[s_rows] = -second
        self.coefficients[y_rows] = scale * first
        self.factor = -scale
        np.multiply(gradient, self.factor, out=out)
        for begin, end in runs:  # out += rows^T coefficients, in place (the transpose is Fortran-ordered)
            written = dgemv(1.0, self.rows[begin:end].T, self.coefficients[begin:end], beta=1.0, y=out,
                            overwrite_y=True)
            assert written is out, "dgemv wrote a copy: out is not a contiguous float64 vector"
        return out

    def _runs(self) -> list[tuple[int, int]]:
        """The held rows as runs of consecutive rows: the spare slot's and unfilled slots' rows are
        left out of the products (a sixth of them, once the memory is full)."""
        held = sorted(self.order)
        rows = held + [self.slots + index for index in held]
        runs: list[tuple[int, int]] = []
        for row in rows:
            if runs and runs[-1][1] == row:
                runs[-1] = (runs[-1][0], row + 1)
            else:
                runs.append((row, row + 1))
        return runs

    def offer(self, point: np.ndarray, candidate: np.ndarray, gradient: np.ndarray, new_gradient: np.ndarray,
              length: float) -> None:
        """Keep the pair of a step of ``length`` along the last direction, where its curvature is
        positive and measurable."""
        spare = self.spare
        change = np.subtract(candidate, point, out=self.rows[spare])
        difference = np.subtract(new_gradient, gradient, out=self.rows[self.slots + spare])
        product = ddot(change, difference)
        changes, differences = ddot(change, change), ddot(difference, difference)
        if not (product > 1e-12 * math.sqrt(changes * differences)
                and differences > 1e-16 * ddot(new_gradient, new_gradient)):
            return
        held = [row for index in self.order for row in (index, self.slots + index)]
        column = spare
        if held:  # the old rows' products with s = length * (rows^T coefficients + factor g)
            along = self.gram[held] @ self.coefficients + self.factor * self.products[held]
            self.gram[held, column] = length * along
            self.gram[column, held] = self.gram[held, column]
        self.gram[column, column] = changes
        self.gram[self.slots + column, self.slots + column] = differences
        self.gram[column, self.slots + column] = self.gram[self.slots + column, column] = product
        if len(self.order) == self.memory:
            self.order.pop(0)
        self.pending = (spare, self.products)
        self.order.append(spare)
        self.spare = next(index for index in range(self.slots) if index not in self.order)

    @property
    def scratch(self) -> np.ndarray:
        """A vector of the cells free until the next :meth:`offer` (the spare slot's ``y``)."""
        return self.rows[self.slots + self.spare]


def _simplex_threshold(values: np.ndarray, out: np.ndarray, start: float | None) -> float:
    """The threshold ``t`` with ``sum(max(values - t, 0)) = 1``, ``out`` set to ``max(values - t, 0)``.

    Newton's method on that piecewise-linear convex decreasing sum, from ``start`` (the last
    evaluation's threshold, close) or from the mean's threshold (below): from the right one step
    lands at or left of ``t``, from the left it is Michelot's method, rising to ``t``; where two
    thresholds in a row keep as many cells the set is the same and the second is exact. An exact
    sort where rounding keeps it from settling.
    """
    size = values.size
    threshold = (float(values.sum()) - 1.0) / size if start is None else start
    members = -1
    for _ in range(_NEWTON_STEPS):
        np.subtract(values, threshold, out=out)
        np.maximum(out, 0.0, out=out)
        count = int(np.count_nonzero(out))
        if count == 0:  # above every cell: restart from the mean's threshold, below them all
            members, threshold = 0, (float(values.sum()) - 1.0) / size
            continue
        error = float(out.sum()) - 1.0
        # The same set twice is exact in exact arithmetic; the sum is checked too, since a start
        # far away leaves its rounding in the threshold.
        if count == members and abs(error) <= 4.0 * np.finfo(float).eps * count:
            return threshold
        members = count
        threshold += error / count
    ordered = np.sort(values)[::-1]
    sums = np.cumsum(ordered) - 1.0
    rank = int(np.flatnonzero(ordered * np.arange(1, size + 1) > sums)[-1])
    threshold = float(sums[rank]) / (rank + 1)
    np.subtract(values, threshold, out=out)
    np.maximum(out, 0.0, out=out)
    return threshold


def _step(point: np.ndarray, length: float, direction: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``point + length * direction``, into ``out``."""
    np.multiply(direction, length, out=out)
    out += point
    return out


def _squared_distance(first: np.ndarray, second: np.ndarray, scratch: np.ndarray) -> float:
    """``||first - second||^2``, through ``scratch``."""
    np.subtract(first, second, out=scratch)
    return ddot(scratch, scratch)


def _released(problem: _Problem, tables: np.ndarray) -> tuple[np.ndarray, float]:
    """Consistent non-negative tables near ``tables`` and their objective.

    ``tables`` projected onto consistent tables, then mixed with the uniform tables just enough
    that no cell is negative; and the same after a few alternating projections (negative cells
    set to 0, then the tables projected onto consistent ones again), which shrink the negative
    cells first: the mix with the uniform tables moves every cell, and a cell of a large table,
    of uniform value ``1/|T|``, needs a large share to lift even a small negative value. The
    better of the two (the first is what the certificate would release without the second).
    """
    consistent = problem.consistent(tables, problem.weight, 1.0)
    released = _nonnegative(problem, consistent)
    upper = problem.objective(released)
    if released is consistent:
        return released, upper
    repaired = consistent
    for _ in range(_REPAIR_STEPS):
        np.maximum(repaired, 0.0, out=repaired)
        repaired = problem.consistent(repaired, problem.weight, 1.0, repaired)
        if float(repaired.min()) >= 0.0:
            break
    repaired = _nonnegative(problem, repaired)
    value = problem.objective(repaired)
    return (repaired, value) if value < upper else (released, upper)


def _nonnegative(problem: _Problem, z: np.ndarray) -> np.ndarray:
    """``z`` (consistent tables) mixed with the uniform tables just enough to have no negative cell."""
    negative = z < 0
    if not np.any(negative):
        return z
    share = float(np.max(-z[negative] / (problem.uniform[negative] - z[negative])))
    return np.maximum((1.0 - share) * z + share * problem.uniform, 0.0)
