"""Projection of measurements onto the local polytope in their own noise metric (generalized least squares).

The measurements reduce to one precision and one estimate per residual component
(:func:`~projmech.tables.components_of`); consistent tables are their components, so the problem is
``min sum_A (w_A/2) ||c_A - chat_A||^2`` over components whose tables have no negative cell. Its dual,
over one multiplier ``lambda >= 0`` per cell of each maximal table, is smooth and bound-constrained;
L-BFGS-B maximizes it, and the certificate is the dual value against the objective at consistent,
non-negative tables (:doc:`/theory/projection`, section *Measurements in their own metric*).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.optimize

from .._threads import one_blas_thread
from ..solve import Attempt, Callback, SolveStats, Status
from ..tables import Components, Measurement, centered, compose, maximal_sets, varying_subsets
from ._local_layout import LocalTables, table_layout

__all__ = ["COMPONENT_SOLVER", "project_components", "check_measured", "measured_answers"]

#: The solver name a projection in the measurements' metric reports (and a warm start must match).
COMPONENT_SOLVER = "component-dual"

#: L-BFGS-B iterations between certificates.
_CHECK_EVERY = 10


class _ComponentProblem:
    """The dual's data: for each maximal table of ``layout`` the subsets it sums onto."""

    def __init__(self, parts: Components, layout: LocalTables) -> None:
        sizes = parts.sizes
        self.sizes = sizes
        self.layout = layout
        lengths = np.diff(layout.starts)
        self.uniform = np.repeat(1.0 / lengths, lengths)
        # Per table: (subset, axes summed out, cells summed into each, broadcast shape).
        self.plans = []
        for table, shape in zip(layout.attributes, layout.shapes):
            plan = []
            for subset in varying_subsets(sizes, table):
                axes = tuple(axis for axis, a in enumerate(table) if a not in subset)
                plan.append((subset, axes, math.prod(shape[axis] for axis in axes),
                             tuple(sizes[a] if a in subset else 1 for a in table)))
            self.plans.append(plan)
        self.subsets = sorted({subset for plan in self.plans for subset, *_ in plan}, key=lambda s: (len(s), s))
        self.precision = {subset: parts.precision[subset] for subset in self.subsets}
        self.estimate = {subset: parts.estimate[subset] for subset in self.subsets}
        # The objective's value at the truth, in expectation: half the number of measured contrasts.
        self.scale = 0.5 * sum(math.prod(sizes[a] - 1 for a in subset) for subset in self.subsets)

    def spread(self, multipliers: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
        """``g_A``: each component's share of the multipliers (the adjoint of composing the tables)."""
        sums: dict[tuple[int, ...], np.ndarray] = {}
        for index, plan in enumerate(self.plans):
            table = self.layout.table(multipliers, index)
            for subset, axes, outside, _ in plan:
                part = (table.sum(axis=axes) if axes else table) / outside
                sums[subset] = sums[subset] + part if subset in sums else part
        return {subset: centered(total) for subset, total in sums.items()}

    def components(self, spread: dict[tuple[int, ...], np.ndarray]) -> dict[tuple[int, ...], np.ndarray]:
        """The components minimizing the Lagrangian at the multipliers of ``spread``."""
        return {subset: self.estimate[subset] + spread[subset] / self.precision[subset] for subset in self.subsets}

    def tables(self, parts: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
        """The maximal tables of these components, one after another."""
        out = np.empty(self.layout.cells)
        for index, plan in enumerate(self.plans):
            cells = self.layout.table(out, index)
            cells[...] = 1.0 / cells.size
            for subset, _, outside, shape in plan:
                cells += (parts[subset] / outside).reshape(shape)
        return out

    def negative_dual(self, multipliers: np.ndarray) -> tuple[float, np.ndarray, dict[tuple[int, ...], np.ndarray]]:
        """Minus the dual at ``multipliers``, its gradient (the tables it implies) and their components."""
        spread = self.spread(multipliers)
        value = float(multipliers @ self.uniform)
        for subset in self.subsets:
            value += float(np.sum(spread[subset] * (0.5 * spread[subset] / self.precision[subset]
                                                    + self.estimate[subset])))
        parts = self.components(spread)
        return value, self.tables(parts), parts

    def objective(self, parts: dict[tuple[int, ...], np.ndarray]) -> float:
        """``sum_A (w_A/2) ||c_A - chat_A||^2``."""
        return 0.5 * sum(self.precision[s] * float(np.sum((parts[s] - self.estimate[s]) ** 2)) for s in self.subsets)

    def feasible(self, parts: dict[tuple[int, ...], np.ndarray]) -> dict[tuple[int, ...], np.ndarray]:
        """``parts`` shrunk toward the uniform tables just enough that no maximal table has a negative cell."""
        cells = self.tables(parts)
        negative = cells < 0
        if not np.any(negative):
            return parts
        share = float(np.max(-cells[negative] / (self.uniform[negative] - cells[negative])))
        return {subset: (1.0 - share) * part for subset, part in parts.items()}

    def scaling(self) -> np.ndarray:
        """The diagonal of the dual's Hessian, per cell: the variables' scale for L-BFGS-B."""
        diagonal = np.empty(self.layout.cells)
        for index, plan in enumerate(self.plans):
            self.layout.table(diagonal, index)[...] = sum(
                math.prod(1.0 - 1.0 / self.sizes[a] for a in subset) / (outside * self.precision[subset])
                for subset, _, outside, _ in plan)
        return np.where(diagonal > 0, 1.0 / np.sqrt(np.maximum(diagonal, np.finfo(float).tiny)), 1.0)


def project_components(parts: Components, measured: Sequence[tuple[int, ...]], *, tol: float, max_iterations: int,
                       callback: Callback | None, start: dict[tuple[int, ...], np.ndarray] | None
                       ) -> tuple[LocalTables, np.ndarray, np.ndarray, SolveStats]:
    """The tables minimizing ``sum_A (w_A/2) ||c_A - chat_A||^2`` over the local polytope of ``measured``.

    ``start`` maps tables to earlier multipliers (those of the maximal tables here are used). Returns
    the layout of the measured tables, their cells, the dual point in that layout (zero on tables
    inside others) and the statistics; the certificate meets ``tol * max(lower bound, expected
    objective)`` or the status says it did not.
    """
    sizes = parts.sizes
    model = table_layout(sizes, measured)
    check_measured(parts, model.attributes)
    layout = table_layout(sizes, maximal_sets(model.attributes))
    problem = _ComponentProblem(parts, layout)
    scale = problem.scaling()
    began = time.perf_counter()
    best: list[Any] = []  # [gap, lower bound, components, multipliers]
    iterations = [0]

    def certify(multipliers: np.ndarray) -> bool:
        value, _, components = problem.negative_dual(multipliers)
        released = problem.feasible(components)
        upper, lower = problem.objective(released), -value
        rounding = 8.0 * np.finfo(float).eps * (abs(upper) + abs(lower) + problem.scale) * multipliers.size
        gap = max(upper - lower + rounding, 0.0)
        if not best or gap < best[0]:
            best[:] = [gap, lower, released, multipliers.copy()]
        if callback is not None:
            callback(iterations[0], gap)
        return best[0] <= tol * max(best[1], problem.scale)

    initial = np.zeros(layout.cells)
    for index, table in enumerate(layout.attributes):
        earlier = (start or {}).get(table)
        if earlier is not None and earlier.shape == layout.shapes[index]:
            layout.table(initial, index)[...] = np.maximum(earlier, 0.0)
    if not certify(initial):
        def function(point: np.ndarray) -> tuple[float, np.ndarray]:
            value, gradient, _ = problem.negative_dual(point * scale)
            return value, gradient * scale

        def step(intermediate_result: Any) -> None:  # by this name, scipy passes an OptimizeResult
            iterations[0] += 1
            if iterations[0] % _CHECK_EVERY == 0 and certify(intermediate_result.x * scale):
                raise StopIteration

        with one_blas_thread():
            minimize: Any = scipy.optimize.minimize  # its overloads do not cover jac=True with bounds
            result = minimize(function, initial / scale, jac=True, method="L-BFGS-B",
                              bounds=scipy.optimize.Bounds(0.0, np.inf), callback=step,
                              options={"maxiter": max_iterations, "ftol": 0.0, "gtol": 0.0})
        if iterations[0] % _CHECK_EVERY:
            certify(np.maximum(result.x * scale, 0.0))
    gap, lower, released, multipliers = best
    values = np.concatenate([compose(sizes, table, released).ravel() for table in model.attributes])
    met = bool(gap <= tol * max(lower, problem.scale))  # a plain bool: the summary is JSON
    status = Status.OPTIMAL if met else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - began
    stats = SolveStats(solver=COMPONENT_SOLVER, status=status, solve_time=seconds, iterations=iterations[0], gap=gap,
                       tolerance=tol * max(lower, problem.scale), tolerance_met=met,
                       attempts=(Attempt(COMPONENT_SOLVER, status, f"gap {gap:.3g}", seconds),), total_time=seconds)
    laid_out = np.zeros(model.cells)
    for index, table in enumerate(layout.attributes):
        model.table(laid_out, model.attributes.index(table))[...] = layout.table(multipliers, index)
    return model, np.maximum(values, 0.0), laid_out, stats


def check_measured(parts: Components, tables: Sequence[tuple[int, ...]]) -> None:
    """A ValueError naming the first table with a component no measurement determines."""
    for table in tables:
        missing = parts.unmeasured(table)
        if missing:
            raise ValueError(f"measurements: the components on {missing} of the table {table} are not measured, so "
                             "its tables are not determined; measure its cells, or residual contrasts of each subset")


def measured_answers(sizes: Sequence[int], model: LocalTables, values: np.ndarray,
                     measurements: Sequence[Measurement]) -> np.ndarray:
    """Each measurement's answers at the tables ``values``, over its sigma (noise of standard deviation 1)."""
    answers = []
    for measurement in measurements:
        attributes = tuple(measurement.attributes)
        table = model.cells_on(values, attributes)
        if table is None:  # it reads only the total (its other components have no weight): the total is 1
            count = math.prod(sizes[a] for a in attributes)
            cells = np.full(count, 1.0 / count)
        else:
            cells = table.ravel()
        answers.append((cells if measurement.query is None else measurement.query @ cells) / measurement.sigma)
    return np.concatenate(answers)
