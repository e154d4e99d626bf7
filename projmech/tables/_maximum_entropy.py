"""The maximum-entropy distribution over a small universe with given marginal tables, by iterative
proportional fitting :cite:p:`DS40` (:doc:`/theory/maximum_entropy`); dense, at most
:data:`MAXIMUM_ENTROPY_MAX_CELLS` cells.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from ..solve import Attempt, SolveResult, SolveStats, Status
from ..validation import check_positions, check_positive_int, check_positive_number, format_count
from ._measurement import Measurement, combined
from ._table import project_table

__all__ = ["MAXIMUM_ENTROPY_MAX_CELLS", "MaximumEntropy", "MaximumEntropyResult", "fit_maximum_entropy",
           "proportional_fit", "total_correlation"]

#: The largest universe fitted: two dense arrays of 8 bytes a cell, about 64 MB at this size.
MAXIMUM_ENTROPY_MAX_CELLS = 4 * 10**6

#: Default sweeps of iterative proportional fitting (each updates every table once).
DEFAULT_MAX_SWEEPS = 1000

_Result = TypeVar("_Result")


class _JointMarginals:
    """A result holding a distribution over a small universe (``joint``)."""

    joint: np.ndarray | None

    def marginal(self, axes: Any) -> np.ndarray:
        """The distribution's table on some axes.

        Parameters
        ----------
        axes : sequence of int
            Increasing positions in ``0..len(sizes)-1``.

        Returns
        -------
        numpy.ndarray
        """
        return self._table(tuple(axes))

    def _table(self, axes: tuple[int, ...]) -> np.ndarray:
        """The table on ``axes`` (not yet checked), summed from ``joint``."""
        assert self.joint is not None
        # No axes: the whole distribution summed, its total (1).
        return _marginal(self.joint, check_positions("axes", axes, self.joint.ndim) if axes else ())


@dataclass(frozen=True, eq=False, repr=False)
class MaximumEntropyResult(_JointMarginals, SolveResult):
    """A fitted maximum-entropy distribution (:func:`fit_maximum_entropy` returns it).

    Parameters
    ----------
    joint : numpy.ndarray
        The distribution, of shape ``sizes``.
    tables : tuple of tuple of int
        The axes of the tables it was fitted to, in the order given.
    stats : SolveStats
        Solver ``"ipf"``; ``gap`` is the largest ratio of a table's l1 distance to its tolerance (optimal at most 1).

    Examples
    --------
    >>> fit = pm.tables.fit_maximum_entropy((2, 3), {(0,): np.array([0.5, 0.5])})
    >>> fit.joint.shape, bool(fit.stats.tolerance_met), np.round(fit.marginal((1,)), 6).tolist()
    ((2, 3), True, [0.333333, 0.333333, 0.333333])
    """

    joint: np.ndarray
    tables: tuple[tuple[int, ...], ...]
    stats: SolveStats

    def _description(self) -> str:
        return f"over {format_count(self.joint.size)} cells fitted to {len(self.tables)} tables"


def fit_maximum_entropy(sizes: Any, marginals: dict[tuple[int, ...], Any], *,
                    tol: float | dict[tuple[int, ...], float] = 1e-8,
                    max_sweeps: int = DEFAULT_MAX_SWEEPS, start: Any = None) -> MaximumEntropyResult:
    """The maximum-entropy distribution over ``prod(sizes)`` cells with the given tables.

    The tables must be one distribution's (a projection's); ``ValueError`` for invalid input, two tables
    disagreeing beyond their tolerances, or a fit leaving no cell with mass.

    Parameters
    ----------
    sizes : sequence of int
        The attributes' sizes (at most :data:`MAXIMUM_ENTROPY_MAX_CELLS` cells).
    marginals : dict
        Increasing axes to a non-negative table of shape ``[sizes[a] for a in axes]`` summing to 1.
    tol : float or dict
        The largest l1 distance of a fitted table from its target: one, or one per table.
    max_sweeps : int
        Sweeps before stopping with ``iteration_limit``.
    start : numpy.ndarray, optional
        A distribution of shape ``sizes`` to fit from (the fit is then the KL-nearest to it).

    Returns
    -------
    MaximumEntropyResult

    Examples
    --------
    >>> fit = pm.tables.fit_maximum_entropy((2, 2), {(0,): np.array([0.8, 0.2]), (1,): np.array([0.5, 0.5])})
    >>> np.round(fit.joint, 6).tolist(), fit.stats.status.value
    ([[0.4, 0.4], [0.1, 0.1]], 'optimal')
    """
    sizes = _checked_sizes(sizes)
    targets = _checked_marginals(sizes, marginals)
    tolerances = _checked_tolerances(targets, tol)
    _check_agreement(targets, tolerances)
    max_sweeps = check_positive_int("max_sweeps", max_sweeps)
    began = time.perf_counter()
    joint = np.full(sizes, 1.0 / math.prod(sizes)) if start is None else _checked_start(sizes, start)
    constraints = [(tuple(a for a in range(len(sizes)) if a not in axes),
                    target.reshape([sizes[a] if a in axes else 1 for a in range(len(sizes))])) for axes, target in
                   targets.items()]
    scales = [tolerances[axes] for axes in targets]

    def met(differences: list[np.ndarray]) -> bool:
        # Each table's distance before its own update comes free; the sweep's end (which costs
        # a sweep's marginals again) is checked only when all were within their tolerances.
        worst = max(float(np.abs(difference).sum()) / scale for difference, scale in zip(differences, scales))
        return worst <= 1.0 and _violation(joint, targets, tolerances) <= 1.0

    sweeps = proportional_fit(joint, constraints, max_sweeps, met)
    total = float(joint.sum())
    if not total > 0.0:
        raise ValueError("marginals: the fit put no mass on any cell (tables that agree pairwise but whose zeros "
                         "together exclude every cell): no distribution has them")
    joint /= total
    # The certificate, recomputed from the returned distribution alone: the largest ratio of a
    # table's l1 distance to its tolerance, at most 1 when every table is fitted.
    violation = _violation(joint, targets, tolerances)
    status = Status.OPTIMAL if violation <= 1.0 else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - began
    attempt = Attempt("ipf", status, f"largest l1 distance {violation:.3g} of its tolerance after {sweeps} sweeps",
                      seconds)
    stats = SolveStats.from_attempt(attempt, [attempt], iterations=sweeps, gap=violation, relative_gap=True,
                                    tolerance=1.0, total_time=seconds)
    return MaximumEntropyResult(joint, tuple(targets), stats)


class _FitsMeasurements(Generic[_Result]):
    """An estimator that fits the measured tables, checked and combined by precision (its ``_fit``)."""

    sizes: tuple[int, ...]

    def estimate(self, measurements: Sequence[Measurement], start: _Result | None = None) -> _Result:
        """The distribution fitted to the measured tables (repeated ones combined by precision).

        Parameters
        ----------
        measurements : sequence of Measurement
            Noisy measurements of the tables' cells (one distribution's, for the maximum-entropy fit).
        start : MaximumEntropyResult or NoisyMarginalsResult, optional
            An earlier fit of this estimator's to start from (the noisy-marginals fit: ``stop="gap"`` only).

        Returns
        -------
        MaximumEntropyResult or NoisyMarginalsResult
        """
        for measurement in measurements:
            measurement.check(self.sizes)
        tables, sigmas = combined(self.sizes, measurements)
        return self._fit(dict(tables), dict(sigmas), start)

    def _fit(self, tables: dict[tuple[int, ...], np.ndarray], sigmas: dict[tuple[int, ...], float],
             start: _Result | None) -> _Result:
        raise NotImplementedError


@dataclass(frozen=True)
class MaximumEntropy(_FitsMeasurements[MaximumEntropyResult]):
    """The maximum-entropy estimator (:class:`~projmech.tables.Estimator`), taking the tables as exact.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    tol, max_sweeps
        As for :func:`fit_maximum_entropy` (one ``tol`` for every table).

    Examples
    --------
    >>> fit = pm.tables.MaximumEntropy((2, 2)).estimate([pm.tables.Measurement((0,), np.array([0.8, 0.2]), 0.01)])
    >>> np.round(fit.joint, 6).tolist()
    [[0.4, 0.4], [0.1, 0.1]]
    """

    sizes: tuple[int, ...]
    tol: float = 1e-8
    max_sweeps: int = DEFAULT_MAX_SWEEPS

    def _fit(self, tables: dict[tuple[int, ...], np.ndarray], sigmas: dict[tuple[int, ...], float],
             start: MaximumEntropyResult | None) -> MaximumEntropyResult:
        return fit_maximum_entropy(self.sizes, tables, tol=self.tol, max_sweeps=self.max_sweeps,
                                   start=None if start is None else start.joint)


def _marginal(joint: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return project_table(joint, range(joint.ndim), axes)


def proportional_fit(joint: np.ndarray, constraints: Sequence[tuple[tuple[int, ...], np.ndarray]], max_sweeps: int,
                     done: Callable[[list[np.ndarray]], bool]) -> int:
    """Iterative proportional fitting :cite:p:`DS40` of ``joint`` in place (a cell at 0 stays there).

    Parameters
    ----------
    joint : numpy.ndarray
        The starting distribution, updated in place.
    constraints : sequence of (tuple of int, numpy.ndarray)
        The axes summed out, and the target with length-1 axes for them.
    max_sweeps : int
        The most sweeps.
    done : callable
        ``done(differences)`` after each sweep, given each table's difference from its target
        before its update; True stops.

    Returns
    -------
    int
        The sweeps run.

    Examples
    --------
    >>> joint = np.full((2, 2), 0.25)
    >>> pm.tables.proportional_fit(joint, [((1,), np.array([[0.8], [0.2]]))], 5, lambda d: True), joint.tolist()
    (1, [[0.4, 0.4], [0.1, 0.1]])
    """
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        differences = []
        for axes, target in constraints:
            current = joint.sum(axis=axes, keepdims=True)
            differences.append(current - target)
            joint *= np.divide(target, current, out=np.zeros_like(current), where=current > 0)
        if done(differences):
            break
    return sweeps


def _violation(joint: np.ndarray, targets: dict[tuple[int, ...], np.ndarray], tolerances: dict[tuple[int, ...], float]
               ) -> float:
    """The largest ratio of a table's l1 distance from its target to its tolerance."""
    return max(float(np.abs(_marginal(joint, axes) - target).sum()) / tolerances[axes]
               for axes, target in targets.items())


def _checked_start(sizes: tuple[int, ...], start: Any) -> np.ndarray:
    """A copy of ``start`` summing to 1, refused unless of shape ``sizes``, finite, non-negative, with mass."""
    values = np.array(start, dtype=float)
    if values.shape != sizes or not np.all(np.isfinite(values)) or np.any(values < 0) or not values.sum() > 0:
        raise ValueError(f"start: expected a non-negative finite distribution of shape {sizes}, got shape "
                         f"{values.shape}")
    return values / values.sum()


def _checked_tolerances(targets: dict[tuple[int, ...], np.ndarray], tol: Any) -> dict[tuple[int, ...], float]:
    if not isinstance(tol, dict):
        value = check_positive_number("tol", tol)
        return {axes: value for axes in targets}
    keys = {tuple(int(a) for a in key): value for key, value in tol.items()}
    if set(keys) != set(targets):
        raise ValueError(f"tol: its keys {sorted(keys)} must be those of marginals, {sorted(targets)}")
    return {axes: check_positive_number("tol", value) for axes, value in keys.items()}


def _checked_sizes(sizes: Any, *, dense: bool = True) -> tuple[int, ...]:
    """Positive sizes; with ``dense``, of a universe small enough to hold whole."""
    try:
        checked = tuple(check_positive_int("sizes", size) for size in sizes)
    except TypeError:
        raise TypeError(f"sizes: expected a sequence of positive ints, got {type(sizes).__name__}") from None
    if not checked:
        raise ValueError("sizes: need at least one attribute")
    cells = math.prod(checked)
    if dense and cells > MAXIMUM_ENTROPY_MAX_CELLS:
        raise ValueError(f"sizes: the universe holds {cells:,} cells, above MAXIMUM_ENTROPY_MAX_CELLS="
                         f"{MAXIMUM_ENTROPY_MAX_CELLS:,}: the fit is dense over the universe")
    return checked


def _checked_marginals(sizes: tuple[int, ...], marginals: Any, *, distribution: bool = True
                       ) -> dict[tuple[int, ...], np.ndarray]:
    """The tables shaped ``[sizes[a] for a in axes]``; with ``distribution``, non-negative and summing to 1."""
    if not isinstance(marginals, dict):
        raise TypeError(f"marginals: expected a dict from axes to tables, got {type(marginals).__name__}")
    if not marginals:
        raise ValueError("marginals: need at least one table")
    checked: dict[tuple[int, ...], np.ndarray] = {}
    for key, table in marginals.items():
        axes = check_positions("marginals", key, len(sizes), what="axes")
        shape = tuple(sizes[a] for a in axes)
        values = np.asarray(table, dtype=float)
        if values.size != math.prod(shape):
            raise ValueError(f"marginals: the table on axes {list(axes)} needs {math.prod(shape)} cells, got "
                             f"{values.size}")
        if values.ndim > 1 and values.shape != shape:
            raise ValueError(f"marginals: the table on axes {list(axes)} has shape {values.shape}; expected {shape} "
                             "or a flat array")
        values = values.reshape(shape)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"marginals: the table on axes {list(axes)} has a non-finite cell")
        if distribution and np.any(values < 0):
            raise ValueError(f"marginals: the table on axes {list(axes)} has a negative cell")
        if distribution and abs(float(values.sum()) - 1.0) > 1e-6:
            raise ValueError(f"marginals: the table on axes {list(axes)} sums to {float(values.sum()):.9g}, not 1")
        checked[axes] = values
    return checked


def _check_agreement(targets: dict[tuple[int, ...], np.ndarray], tolerances: dict[tuple[int, ...], float]) -> None:
    """Refuse two tables farther apart (l1) on their shared axes than their tolerances together."""
    for (first, one), (second, other) in itertools.combinations(targets.items(), 2):
        shared = tuple(a for a in first if a in second)
        if shared:
            left, right = project_table(one, first, shared), project_table(other, second, shared)
            distance = float(np.abs(left - right).sum())
            if distance > tolerances[first] + tolerances[second] + 1e-12:
                raise ValueError(f"marginals: the tables on axes {list(first)} and {list(second)} disagree on their "
                                 f"shared axes {list(shared)} by {distance:.3g} in l1, more than their tolerances "
                                 f"({tolerances[first]:.3g} + {tolerances[second]:.3g}): no distribution is within "
                                 "both")


def total_correlation(table: np.ndarray) -> float:
    """A distribution's KL divergence from the product of its one-way tables, in nats (for two attributes,
    their mutual information).

    Parameters
    ----------
    table : numpy.ndarray
        A distribution, one axis per attribute.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.tables.total_correlation(np.array([[0.5, 0.0], [0.0, 0.5]])), 6)
    0.693147
    """
    product = np.ones_like(table)
    for axis in range(table.ndim):
        product = product * table.sum(axis=tuple(other for other in range(table.ndim) if other != axis), keepdims=True)
    held = table > 0
    return float(np.sum(table[held] * np.log(table[held] / product[held])))
