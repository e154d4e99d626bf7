"""The adaptive mechanism's estimators of the data from its noisy tables (:doc:`/theory/maximum_entropy`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...bodies import LocalProjection, LocalResult, ProjectionError, ProjectionResult, project_to_hull
from ...tables import (
    MARGINAL_MAX_CELLS,
    MAXIMUM_ENTROPY_MAX_CELLS,
    JunctionTree,
    MaximumEntropyResult,
    Measurement,
    NoisyMarginalsResult,
    combined,
    fit_maximum_entropy,
    fit_noisy_marginals,
    maximal_sets,
    project_table,
    total_correlation,
)
from ...validation import check_positions
from ...workloads import Workload, kron, stack, total

__all__ = ["DecomposableModel", "JointEstimate", "Measurement", "estimate_joint", "estimate_regularized_joint",
           "estimate_tables", "measured_workload", "table_estimate", "table_estimates"]

#: Sweeps of iterative proportional fitting for a candidate's maximum-entropy estimate, and the
#: largest relative change of a fitted marginal at which they stop earlier.
_FIT_SWEEPS = 50
_FIT_TOLERANCE = 1e-6

#: The least mass, as a share of a uniform cell, that a completion keeps in a cell: where it
#: starts from the decomposable model (a cell the model gives none, as the projection's zeros
#: make, can still take the mass that the table's measured parts put there), and in parts that
#: are no distribution's (they would otherwise leave no cell with mass).
_MASS_FLOOR = 1e-9

#: The joint's fit stops when each measured table is within this share of the expected l1 norm
#: of its own noise (``sqrt(2/pi) sigma`` a cell) of the projection's table.
_JOINT_FIT_SHARE = 0.1

def measured_workload(sizes: tuple[int, ...], measurements: tuple[Measurement, ...] | list[Measurement]
                      ) -> tuple[Workload, np.ndarray]:
    """The measured tables as one workload over the universe, each table's queries and values weighted by ``1/sigma``.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one, of the tables' cells.

    Returns
    -------
    tuple of (Workload, numpy.ndarray)

    Examples
    --------
    >>> measured = pm.tables.Measurement((1,), np.array([0.2, 0.3, 0.5]), 0.1)
    >>> workload, y = pm.mechanisms.adaptive.measured_workload((2, 3), [measured])
    >>> workload.shape, y.tolist()
    ((3, 6), [2.0, 3.0, 5.0])
    """
    if not measurements:
        raise ValueError("measurements: need at least one")
    blocks, targets = [], []
    for measurement in measurements:
        measurement.check(sizes)
        if not measurement.is_identity:
            raise ValueError(f"measurements: the one on {measurement.attributes} measures a query, not the cells")
        weight = 1.0 / measurement.sigma
        first = min(measurement.attributes)
        factors = [Workload(weight * np.eye(size)) if a == first else (Workload(np.eye(size)) if a in
                   measurement.attributes else total(size)) for a, size in enumerate(sizes)]
        blocks.append(kron(factors))
        targets.append(weight * np.asarray(measurement.values, dtype=float))
    return (blocks[0] if len(blocks) == 1 else stack(blocks)), np.concatenate(targets)


def estimate_tables(sizes: tuple[int, ...], measurements: tuple[Measurement, ...] | list[Measurement], *,
                    start: LocalResult | None = None) -> LocalResult:
    """Project the measurements, weighted by precision, onto the local polytope of their tables
    (:class:`~projmech.bodies.LocalProjection`; its status says if it stopped short).

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one.
    start : LocalResult, optional
        The estimate from some of the measurements (the previous round's) to start from.

    Returns
    -------
    LocalResult

    Examples
    --------
    >>> twice = [pm.tables.Measurement((0,), np.array(values), 0.1) for values in ([0.7, 0.3], [0.5, 0.5])]
    >>> np.round(pm.mechanisms.adaptive.estimate_tables((2, 2), twice).marginal((0,)), 6).tolist()
    [0.6, 0.4]
    """
    return LocalProjection(tuple(sizes)).estimate(measurements, start=start)


def table_estimate(estimate: LocalResult, attributes: tuple[int, ...], sizes: tuple[int, ...], *,
                   start: np.ndarray | None = None) -> np.ndarray:
    """The table on some attributes from the projected tables: summed from one containing it, else the
    KL-nearest table to ``start`` agreeing with its largest measured parts (proportional fitting).

    Parameters
    ----------
    estimate : LocalResult
        The projected measured tables.
    attributes : tuple of int
        The table's attributes, increasing.
    sizes : tuple of int
        The domain's attribute sizes.
    start : numpy.ndarray, optional
        Positive finite cells of the table's shape to fit from; default uniform.

    Returns
    -------
    numpy.ndarray
        The table, summing to 1.

    Examples
    --------
    >>> from projmech.mechanisms.adaptive import estimate_tables, table_estimate
    >>> result = estimate_tables((2, 2), [pm.tables.Measurement((a,), np.array([0.8, 0.2]), 0.01) for a in (0, 1)])
    >>> np.round(table_estimate(result, (0, 1), (2, 2)), 6).tolist()
    [[0.64, 0.16], [0.16, 0.04]]
    """
    shape = tuple(sizes[a] for a in attributes)
    if start is not None:
        try:
            start = np.asarray(start, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"start: expected an array of positive numbers, got {type(start).__name__}") from None
        if start.shape != shape or not (np.all(np.isfinite(start)) and np.all(start > 0)):
            raise ValueError(f"start: expected positive finite cells of shape {shape}, got shape {start.shape}"
                             + ("" if start.shape != shape else " with a cell that is not positive and finite"))
    return _Fits(sizes).estimates(estimate, [tuple(attributes)], None if start is None else [start])[0].copy()


def table_estimates(estimate: LocalResult, tables: Sequence[tuple[int, ...]], sizes: tuple[int, ...]
                    ) -> dict[tuple[int, ...], np.ndarray]:
    """:func:`table_estimate` of many tables at once, from uniform: each part's marginal summed once,
    and tables of similar shapes with parts on the same axes fitted together.

    Parameters
    ----------
    estimate : LocalResult
        The projected measured tables.
    tables : sequence of tuple of int
        Each table's attributes, increasing.
    sizes : tuple of int
        The domain's attribute sizes.

    Returns
    -------
    dict
        Each table's attributes to its estimate.

    Examples
    --------
    >>> from projmech.mechanisms.adaptive import estimate_tables, table_estimates
    >>> result = estimate_tables((2, 2, 2), [pm.tables.Measurement((a,), np.array([0.8, 0.2]), 0.01) for a in (0, 1)])
    >>> estimates = table_estimates(result, [(0,), (0, 1), (1, 2)], (2, 2, 2))
    >>> [np.round(estimates[t], 6).tolist() for t in [(0,), (0, 1), (1, 2)]]
    [[0.8, 0.2], [[0.64, 0.16], [0.16, 0.04]], [[0.4, 0.4], [0.1, 0.1]]]
    """
    if not isinstance(estimate, LocalResult):
        raise TypeError(f"estimate: expected a LocalResult (estimate_tables gives one), got {type(estimate).__name__}")
    sizes = tuple(int(size) for size in sizes)
    checked = [check_positions("tables", table, len(sizes), what="domain positions") for table in tables]
    return {table: values.copy() for table, values in _unchecked_estimates(estimate, checked, sizes).items()}


def _unchecked_estimates(estimate: LocalResult, tables: list[tuple[int, ...]], sizes: tuple[int, ...],
                         fits: _Fits | None = None) -> dict[tuple[int, ...], np.ndarray]:
    """:func:`table_estimates` of tables already known to be increasing domain positions (the rounds'
    candidates), without checking them again; ``fits`` keeps the fitting's structure across estimates
    (the rounds keep one). The tables may be views of a stack's, not to be changed."""
    fits = _Fits(sizes) if fits is None else fits
    return dict(zip(tables, fits.estimates(estimate, tables)))


#: A group of tables fitted alike: their number of attributes and the axes of each of their parts.
_Key = tuple[int, tuple[tuple[int, ...], ...]]


@dataclass(frozen=True)
class _Member:
    """A table in a stack: its shape, its corner's index and where each of its parts lies in the pool."""

    shape: tuple[int, ...]
    corner: tuple[slice, ...]
    offsets: tuple[int, ...]


class _Stack:
    """Tables with parts on the same axes, fitted together, each in a corner of a stack of their
    largest shape (its other cells at 0 stay there; :func:`_stacks` bounds the padding), so that the
    numpy calls per sweep do not grow with the tables. Each constraint reads its parts' marginals from
    a pool of them through indices fixed here (-1: the pool's last cell, a 0)."""

    def __init__(self, tables: list[tuple[int, ...]], pattern: tuple[tuple[int, ...], ...],
                 members: list[_Member]) -> None:
        self.tables, self.pattern = tables, pattern
        self.shapes = [member.shape for member in members]
        self.corners = [member.corner for member in members]
        offsets = np.array([member.offsets for member in members], dtype=np.int64).reshape(len(tables), len(pattern))
        shapes = np.array(self.shapes, dtype=np.int64)
        dimension = len(tables[0])
        self.largest = tuple(int(n) for n in shapes.max(axis=0))
        inside = np.ones((len(tables), *self.largest), dtype=bool)
        for axis, n in enumerate(self.largest):
            inside &= (np.arange(n)[None, :] < shapes[:, axis, None]).reshape(
                [len(tables), *(n if other == axis else 1 for other in range(dimension))])
        self.uniform = inside / shapes.prod(axis=1).astype(float).reshape([-1, *[1] * dimension])
        self.constraints: list[tuple[tuple[int, ...], np.ndarray]] = []
        for constraint, axes in enumerate(pattern):
            # Each cell of the part's corner: the part's offset in the pool plus the cell's place in
            # the part's own shape (row-major); each other cell: -1.
            count, part_shapes = len(tables), shapes[:, list(axes)]
            strides = np.ones_like(part_shapes)
            strides[:, :-1] = np.cumprod(part_shapes[:, :0:-1], axis=1)[:, ::-1]
            gather = offsets[:, constraint].reshape([count, *[1] * len(axes)])
            in_part = np.ones((count, *[1] * len(axes)), dtype=bool)
            for j, axis in enumerate(axes):
                place = np.arange(self.largest[axis]).reshape([1, *(-1 if k == j else 1 for k in range(len(axes)))])
                column = [count, *[1] * len(axes)]
                gather = gather + place * strides[:, j].reshape(column)
                in_part = in_part & (place < part_shapes[:, j].reshape(column))
            self.constraints.append((tuple(1 + axis for axis in range(dimension) if axis not in axes), np.where(
                in_part, gather, -1).reshape([count, *(self.largest[axis] if axis in axes else 1
                                                      for axis in range(dimension))])))

    def fit(self, pool: np.ndarray, positions: np.ndarray, starts: list[np.ndarray] | None) -> np.ndarray:
        """The tables at ``positions`` fitted to the pool's marginals from uniform, or from ``starts``
        (one for each position)."""
        if starts is None:
            first = self.uniform[positions]
        else:
            first = np.zeros((len(positions), *self.largest))
            for place, (position, start) in enumerate(zip(positions, starts)):
                first[_corner(place, self.shapes[position])] = start / start.sum()
        return _proportional_fit(first, [(keep, pool[gather[positions]]) for keep, gather in self.constraints])


class _Fits:
    """Tables fitted to the projected measured tables (:func:`table_estimates`), with what depends only
    on which tables are measured kept from one estimate to the next for the tables registered (the
    rounds register their candidates): each one's parts (its largest subsets inside a measured
    table), the stacks it is fitted in, and where they read their parts' marginals. A newly measured
    table changes them only for the tables holding a subset of it that no measured table held. Other
    tables are stacked for the call alone.

    Each subset's marginal is summed, once per estimate, from the smallest measured table holding it,
    ties broken by the attributes (the estimate's own order of its tables). The projected tables
    agree on their shared marginals to the projection's consistency, so another choice, as
    :meth:`~projmech.bodies.LocalResult.cells_on`'s, differs only at that level."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes
        self._reset()

    def _reset(self) -> None:
        self.measured: set[tuple[int, ...]] = set()
        self.first: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.group: dict[tuple[int, ...], _Key | None] = {}
        self.groups: dict[_Key | None, dict[tuple[int, ...], None]] = {}
        self.holding: dict[int, set[tuple[int, ...]]] = {}
        self.stacks: dict[_Key, list[_Stack]] = {}
        self.place: dict[tuple[int, ...], tuple[_Stack, int]] = {}
        self.waiting: dict[_Key, dict[tuple[int, ...], None]] = {}
        self.member: dict[tuple[int, ...], _Member] = {}
        self.slot: dict[tuple[int, ...], int] = {}
        self.pool_size = 0
        self._of: LocalResult | None = None
        self._marginals: dict[tuple[int, ...], np.ndarray] = {}
        self._pool = np.zeros(1)
        self._filled = 0

    def register(self, tables: Iterable[tuple[int, ...]]) -> None:
        """Keep the structure of ``tables`` (increasing domain positions) across estimates."""
        for table in tables:
            if table not in self.group:
                for a in table:
                    self.holding.setdefault(a, set()).add(table)
                self.group[table] = None
                self.groups.setdefault(None, {})[table] = None
                self._place(table)

    def follow(self, tables: Sequence[tuple[int, ...]]) -> None:
        """Take the estimate's measured ``tables``: add the subsets of the new ones, and place again the
        registered tables holding a subset that no measured table held."""
        if not self.measured <= set(tables):  # another estimate's tables: start again
            registered = list(self.group)
            self._reset()
            self.register(registered)
        added = []
        for table in set(tables) - self.measured:
            for size in range(len(table), 0, -1):
                for subset in itertools.combinations(table, size):
                    source = self.first.get(subset)
                    if source is None:
                        added.append(subset)
                    if source is None or (len(table), table) < (len(source), source):
                        self.first[subset] = table
        self.measured |= set(tables)
        touched: set[tuple[int, ...]] = set()
        for subset in added:
            holders = sorted((self.holding.get(a, set()) for a in subset), key=len)
            touched |= holders[0].intersection(*holders[1:])
        for table in touched:
            self._place(table)

    def key(self, table: tuple[int, ...]) -> _Key | None:
        """The table's number of attributes and the axes of each of its parts, sorted (None: inside a
        measured table)."""
        if table in self.first:
            return None
        largest: list[tuple[int, ...]] = []
        for size in range(len(table), 0, -1):  # a subset is largest unless inside a larger one taken
            largest += [subset for subset in itertools.combinations(table, size)
                        if subset in self.first and not any(set(subset) <= set(taken) for taken in largest)]
        return len(table), tuple(tuple(axis for axis, a in enumerate(table) if a in part) for part in sorted(largest))

    def _place(self, table: tuple[int, ...]) -> None:
        """Put a registered table in its group: out of its stack (a slot left unused there) or the
        tables waiting for one, and into the new group's waiting tables."""
        key, old = self.key(table), self.group[table]
        if key == old:
            return
        del self.groups[old][table]
        self.place.pop(table, None)
        if old is not None:
            self.waiting.get(old, {}).pop(table, None)
        self.groups.setdefault(key, {})[table] = None
        self.group[table] = key
        self.member.pop(table, None)
        if key is not None:
            self.waiting.setdefault(key, {})[table] = None
            self.member[table] = self._member(table, key)

    def _member(self, table: tuple[int, ...], key: _Key) -> _Member:
        shape = tuple(self.sizes[a] for a in table)
        return _Member(shape, tuple(slice(0, n) for n in shape),
                       tuple(self._slot(tuple(table[axis] for axis in axes)) for axes in key[1]))

    def _stack_waiting(self, key: _Key) -> None:
        """Stack the group's tables again, now that some joined it (those that left it leave unused
        slots until then)."""
        del self.waiting[key]
        self.stacks[key] = self._stacked(key, list(self.groups[key]))
        for built in self.stacks[key]:
            for position, member in enumerate(built.tables):
                self.place[member] = (built, position)

    def _slot(self, part: tuple[int, ...]) -> int:
        """Where ``part``'s marginal lies in the pool."""
        if part not in self.slot:
            self.slot[part] = self.pool_size
            self.pool_size += math.prod(self.sizes[a] for a in part)
        return self.slot[part]

    def _stacked(self, key: _Key, tables: list[tuple[int, ...]]) -> list[_Stack]:
        members = [self.member[table] if table in self.member else self._member(table, key) for table in tables]
        return [_Stack([tables[i] for i in indices], key[1], [members[i] for i in indices])
                for indices in _stacks(list(range(len(tables))), [member.shape for member in members])]

    def _marginal(self, part: tuple[int, ...]) -> np.ndarray:
        """The current estimate's marginal on ``part``; shared, not to be changed."""
        if part not in self._marginals:
            source = self.first[part]
            assert self._of is not None
            self._marginals[part] = project_table(self._of.marginal(source), source, part)
        return self._marginals[part]

    def _filled_pool(self) -> np.ndarray:
        """The pool of the current estimate's marginals, filled up to its last slot (then a 0): the
        cells from ``_filled`` on are those of the slots added since it was last filled."""
        if self._filled < self.pool_size:
            pool = np.zeros(self.pool_size + 1)
            pool[:self._filled] = self._pool[:self._filled]
            for part, slot in self.slot.items():
                if slot >= self._filled:
                    pool[slot:slot + math.prod(self.sizes[a] for a in part)] = self._marginal(part).ravel()
            self._pool, self._filled = pool, self.pool_size
        return self._pool

    def estimates(self, estimate: LocalResult, tables: list[tuple[int, ...]],
                  starts: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Each table summed from a measured one holding it, else fitted to its parts by proportional
        fitting from its start (default uniform)."""
        self.follow(estimate.tables)
        if estimate is not self._of:
            self._of, self._marginals, self._filled = estimate, {}, 0
        results: list[np.ndarray | None] = [None] * len(tables)
        wanted: dict[int, tuple[_Stack, list[int]]] = {}
        alone: dict[_Key, list[int]] = {}
        for index, table in enumerate(tables):
            key = self.group[table] if table in self.group else self.key(table)
            if key is None:
                results[index] = self._marginal(table).copy()
            elif table not in self.group:
                alone.setdefault(key, []).append(index)
            else:
                if self.waiting.get(key):
                    self._stack_waiting(key)
                block, _ = self.place[table]
                wanted.setdefault(id(block), (block, []))[1].append(index)
        work = [(block, indices, [self.place[tables[index]][1] for index in indices])
                for block, indices in wanted.values()]
        for key, indices in alone.items():
            for block in self._stacked(key, list(dict.fromkeys(tables[index] for index in indices))):
                where = {member: position for position, member in enumerate(block.tables)}
                inside = [index for index in indices if tables[index] in where]
                work.append((block, inside, [where[tables[index]] for index in inside]))
        pool = self._filled_pool() if work else self._pool
        for block, indices, positions in work:
            fitted = block.fit(pool, np.array(positions), None if starts is None else [starts[i] for i in indices])
            totals = fitted.reshape(len(indices), -1).sum(axis=1)
            fitted /= np.where(totals > 0, totals, 1.0).reshape([-1, *[1] * len(block.largest)])
            for place, (index, position) in enumerate(zip(indices, positions)):
                if totals[place] > 0:
                    results[index] = fitted[place][block.corners[position]]
                    continue
                # Parts consistent pairwise but no distribution's, with zeros (a cycle of tables each
                # forcing zeros where another needs mass), leave no cell with mass: fit instead parts
                # raised by a uniform share of 10^-9, which keeps every cell positive.
                shape = block.shapes[position]
                start = (block.uniform[_corner(slice(position, position + 1), shape)] if starts is None
                         else (starts[index] / starts[index].sum())[None])
                raised = []
                for (keep, _), axes in zip(block.constraints, block.pattern):
                    part = self._marginal(tuple(tables[index][axis] for axis in axes))
                    raised.append((keep, (part + _MASS_FLOOR / part.size).reshape(
                        [1, *(shape[axis] if axis in axes else 1 for axis in range(len(shape)))])))
                table = _proportional_fit(start.copy(), raised)[0]
                results[index] = table / table.sum()
        return [result for result in results if result is not None]


#: A stack of candidate tables holds at most this many times the cells of each of its tables, or
#: ``_STACK_SMALL`` cells a table where that is more (small tables cost numpy calls, not cells),
#: and at most ``_STACK_MAX_CELLS`` cells (32 MB).
_STACK_WASTE = 4.0
_STACK_SMALL = 512
_STACK_MAX_CELLS = 2**22


def _stacks(members: list[int], shapes: list[tuple[int, ...]]) -> list[list[int]]:
    """``members`` (of these shapes) split into stacks, smallest tables first, each stack's shape
    (the largest along each axis) at most ``_STACK_WASTE`` times its smallest table's cells (or
    ``_STACK_SMALL``) and its cells at most ``_STACK_MAX_CELLS`` (or one table)."""
    order = sorted(range(len(members)), key=lambda i: (math.prod(shapes[i]), shapes[i]))
    stacks: list[list[int]] = []
    current: list[int] = []
    largest: tuple[int, ...] = ()
    for i in order:
        merged = tuple(max(a, b) for a, b in zip(largest, shapes[i])) if current else shapes[i]
        if current and (math.prod(merged) > max(_STACK_WASTE * math.prod(shapes[current[0]]), _STACK_SMALL)
                        or (len(current) + 1) * math.prod(merged) > _STACK_MAX_CELLS):
            stacks.append([members[j] for j in current])
            current, merged = [], shapes[i]
        current.append(i)
        largest = merged
    if current:
        stacks.append([members[j] for j in current])
    return stacks


def _corner(position: int | slice, shape: Any) -> tuple[Any, ...]:
    """The index of a table of ``shape`` in the corner of its place ``position`` in a stack."""
    return (position, *(slice(0, int(n)) for n in shape))


def _proportional_fit(fitted: np.ndarray, constraints: list[tuple[tuple[int, ...], np.ndarray]]) -> np.ndarray:
    """Proportional fitting of a stack of tables (axis 0) in place, each until none of its parts is off
    by over :data:`_FIT_TOLERANCE`, or for :data:`_FIT_SWEEPS` sweeps (a cell at 0 stays there)."""
    active = np.arange(fitted.shape[0])
    for _ in range(_FIT_SWEEPS):
        current_tables = fitted[active]
        worst = np.zeros(active.size)
        for keep, target in constraints:
            wanted = target[active]
            current = current_tables.sum(axis=keep, keepdims=True)
            worst = np.maximum(worst, np.abs(current - wanted).reshape(active.size, -1).max(axis=1))
            current_tables *= np.divide(wanted, current, out=np.zeros_like(current), where=current > 0)
        fitted[active] = current_tables
        active = active[worst > _FIT_TOLERANCE]
        if not active.size:
            break
    return fitted


class DecomposableModel:
    """The decomposable model of an acyclic set of the projected tables, where completions start.

    It carries what chains of measured tables imply between attributes, as AIM's graphical model
    does, without fitting (:doc:`/theory/maximum_entropy`). Sets ``tables``, ``tree`` and ``beliefs``.
    Its completions share a cache of the estimate's marginals: one model is not for concurrent threads.

    Parameters
    ----------
    estimate : LocalResult
        The projected measured tables (:func:`estimate_tables`).
    sizes : tuple of int
        The domain's attribute sizes.

    Examples
    --------
    >>> from projmech.mechanisms.adaptive import DecomposableModel, estimate_tables
    >>> pair = np.array([0.45, 0.05, 0.05, 0.45])  # two binary attributes, mostly equal
    >>> chain = [pm.tables.Measurement(t, pair, 1e-6) for t in ((0, 1), (1, 2))]
    >>> np.round(DecomposableModel(estimate_tables((2, 2, 2), chain), (2, 2, 2)).complete((0, 2)), 3).tolist()
    [[0.41, 0.09], [0.09, 0.41]]
    """

    def __init__(self, estimate: LocalResult, sizes: tuple[int, ...]) -> None:
        if not isinstance(estimate, LocalResult):
            raise TypeError(f"estimate: expected a LocalResult (estimate_tables gives one), got "
                            f"{type(estimate).__name__}")
        self.estimate, self.sizes = estimate, tuple(int(size) for size in sizes)
        for table in estimate.tables:
            if any(not 0 <= a < len(self.sizes) for a in table) or \
                    estimate.marginal(table).shape != tuple(self.sizes[a] for a in table):
                raise ValueError(f"sizes: {list(self.sizes)} are not the sizes of the estimate's table on "
                                 f"{list(table)} (shape {estimate.marginal(table).shape})")
        maximal = maximal_sets(estimate.tables)
        dependence = {table: total_correlation(_distribution(estimate.marginal(table))) for table in maximal}
        taken: list[tuple[int, ...]] = []
        for table in sorted(maximal, key=lambda t: (-dependence[t], t)):
            trial = taken + [table]
            if all(len(clique) == 1 or clique in trial for clique in JunctionTree(self.sizes, trial).cliques):
                taken = trial
        self.tables = tuple(taken)
        self.tree = JunctionTree(self.sizes, taken)
        self._fits = _Fits(self.sizes)
        self.beliefs = self._fits.estimates(estimate, list(self.tree.cliques))

    def complete(self, attributes: tuple[int, ...]) -> np.ndarray:
        """The tables estimate's distribution on some attributes: :func:`table_estimate` started from the model's.

        Parameters
        ----------
        attributes : tuple of int
            Increasing domain positions.

        Returns
        -------
        numpy.ndarray
        """
        attributes = check_positions("attributes", attributes, len(self.sizes), what="domain positions")
        return self.completions([attributes])[0]

    def completions(self, tables: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """:meth:`complete` of many tables, fitted together.

        Parameters
        ----------
        tables : sequence of tuple of int
            Each table's attributes, increasing domain positions.

        Returns
        -------
        list of numpy.ndarray
        """
        checked = [check_positions("tables", table, len(self.sizes), what="domain positions") for table in tables]
        results: list[np.ndarray | None] = [None] * len(checked)
        uniform, started, starts = [], [], []
        for index, attributes in enumerate(checked):
            if attributes in self._fits.first or math.prod(self.sizes[a] for a in attributes) > MARGINAL_MAX_CELLS:
                uniform.append(index)
                continue
            start = np.maximum(self.tree.marginal(self.beliefs, attributes), 0.0)
            total = float(start.sum())
            # The tree's tables are distributions: a table of no mass would need tables of none.
            assert math.isfinite(total) and total > 0, f"the decomposable model's table on {attributes} sums to {total}"
            started.append(index)
            starts.append(start / total + _MASS_FLOOR / start.size)
        for indices, from_ in ((uniform, None), (started, starts)):
            for index, table in zip(indices, self._fits.estimates(self.estimate, [checked[i] for i in indices], from_)):
                results[index] = table.copy()
        return [result for result in results if result is not None]


def _distribution(table: np.ndarray) -> np.ndarray:
    """A projected table clipped at 0 and summed to exactly 1."""
    table = np.maximum(table, 0.0)
    return table / table.sum()


@dataclass(frozen=True, eq=False)
class JointEstimate:
    """One distribution over the universe of the measured attributes (:func:`estimate_joint` builds it).

    Parameters
    ----------
    attributes : tuple of int
        The domain positions of the distribution's axes, increasing.
    projection : ProjectionResult or None
        The projection onto the marginal polytope, or None (:func:`estimate_regularized_joint`).
    fit : MaximumEntropyResult or NoisyMarginalsResult
        The distribution.

    Examples
    --------
    >>> joint = pm.mechanisms.adaptive.estimate_joint((2, 2), [pm.tables.Measurement((0,), np.array([0.8, 0.2]), 0.01)])
    >>> joint.attributes, np.round(joint.table((0,)), 6).tolist()
    ((0,), [0.8, 0.2])
    """

    attributes: tuple[int, ...]
    projection: ProjectionResult | None
    fit: MaximumEntropyResult | NoisyMarginalsResult

    def table(self, attributes: tuple[int, ...]) -> np.ndarray:
        """The distribution's table on some of its attributes.

        Parameters
        ----------
        attributes : tuple of int
            Increasing domain positions among :attr:`attributes`.

        Returns
        -------
        numpy.ndarray
        """
        attributes = check_positions("attributes", attributes, what="domain positions")
        if not set(attributes) <= set(self.attributes):
            raise ValueError(f"attributes: {list(attributes)} are not all among the joint's {list(self.attributes)}")
        return self.fit.marginal(tuple(self.attributes.index(a) for a in attributes))


def estimate_joint(sizes: tuple[int, ...], measurements: tuple[Measurement, ...] | list[Measurement]
                   ) -> JointEstimate:
    """Project the measurements onto the marginal polytope (:func:`~projmech.bodies.project_to_hull`), then
    fit the maximum-entropy distribution with the projection's tables.

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one; their attributes' universe holds at most
        :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells.

    Returns
    -------
    JointEstimate

    Examples
    --------
    >>> measured = [pm.tables.Measurement((a,), np.array([0.8, 0.2]), 0.01) for a in (0, 1)]
    >>> np.round(pm.mechanisms.adaptive.estimate_joint((2, 2), measured).table((0, 1)), 6).tolist()
    [[0.64, 0.16], [0.16, 0.04]]
    """
    attributes, axes_sizes, on_axes = _on_own_axes(sizes, measurements)
    workload, targets = measured_workload(axes_sizes, on_axes)
    # After weighting, every target's noise has standard deviation 1: the tolerance's scale.
    try:
        projection = project_to_hull(workload, targets, solver="fast", noise_scale=1.0)
    except ProjectionError as error:
        if not isinstance(error.best, ProjectionResult):
            raise
        projection = error.best
    weights = projection.weights
    witness = np.asarray(weights.toarray() if hasattr(weights, "toarray") else weights, dtype=float)
    witness = witness.reshape(axes_sizes) / witness.sum()
    tables: dict[tuple[int, ...], np.ndarray] = {}
    tolerances: dict[tuple[int, ...], float] = {}
    for m in on_axes:
        tables[m.attributes] = project_table(witness, range(len(axes_sizes)), m.attributes)
        # A table measured again is held to its least noisy measurement's share.
        share = _JOINT_FIT_SHARE * math.sqrt(2.0 / math.pi) * m.sigma * m.values.size
        tolerances[m.attributes] = min(share, tolerances.get(m.attributes, math.inf))
    return JointEstimate(attributes, projection, fit_maximum_entropy(axes_sizes, tables, tol=tolerances))


def estimate_regularized_joint(sizes: tuple[int, ...], measurements: tuple[Measurement, ...] | list[Measurement],
                               *, rng: np.random.Generator | int | None = None, model: str = "auto") -> JointEstimate:
    """Fit one distribution to the measurements, stopped where Stein's unbiased risk estimate is least
    (:func:`~projmech.tables.fit_noisy_marginals`).

    Parameters
    ----------
    sizes : tuple of int
        The domain's attribute sizes.
    measurements : sequence of Measurement
        At least one; their universe (dense) or junction tree holds at most
        :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells.
    rng, model
        As for :func:`~projmech.tables.fit_noisy_marginals` (``rng`` is public randomness).

    Returns
    -------
    JointEstimate

    Examples
    --------
    >>> measured = [pm.tables.Measurement((0,), np.array([0.8, 0.2]), 0.01)]
    >>> pm.mechanisms.adaptive.estimate_regularized_joint((2, 2), measured, rng=0).fit.stats.status.value
    'optimal'
    """
    attributes, axes_sizes, on_axes = _on_own_axes(sizes, measurements, dense=False)
    tables, sigmas = _combined(axes_sizes, on_axes)
    return JointEstimate(attributes, None, fit_noisy_marginals(axes_sizes, tables, sigmas, rng=rng, model=model))


def _combined(sizes: tuple[int, ...], measurements: list[Measurement]
              ) -> tuple[dict[tuple[int, ...], np.ndarray], dict[tuple[int, ...], float]]:
    """Each measured table once (:func:`~projmech.tables.combined`)."""
    return combined(sizes, measurements)


def _on_own_axes(sizes: tuple[int, ...], measurements: tuple[Measurement, ...] | list[Measurement], *,
                 dense: bool = True) -> tuple[tuple[int, ...], tuple[int, ...], list[Measurement]]:
    """The measured attributes, their sizes, and the measurements (checked) renumbered onto them; with
    ``dense``, refused beyond :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells.
    """
    if not measurements:
        raise ValueError("measurements: need at least one")
    for measurement in measurements:
        measurement.check(sizes)
    attributes = tuple(sorted({a for m in measurements for a in m.attributes}))
    axes_sizes = tuple(sizes[a] for a in attributes)
    if dense and math.prod(axes_sizes) > MAXIMUM_ENTROPY_MAX_CELLS:
        raise ValueError(f"measurements: the universe of their attributes holds {math.prod(axes_sizes):,} cells, above "
                         f"MAXIMUM_ENTROPY_MAX_CELLS={MAXIMUM_ENTROPY_MAX_CELLS:,}; use estimate_tables")
    on_axes = [Measurement(tuple(attributes.index(a) for a in m.attributes), m.values, m.sigma)
               for m in measurements]
    return attributes, axes_sizes, on_axes

