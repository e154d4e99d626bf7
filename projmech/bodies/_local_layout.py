"""The layout of marginal tables over one flat vector of their cells, for the local-polytope projection."""

from __future__ import annotations

import collections
import itertools
import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..tables import Measurement, is_acyclic, maximal_sets, project_table
from ..validation import format_count
from ..workloads import TableTerms, Workload
from ._tables import decomposition

__all__ = ["LocalTables", "local_tables", "measured_tables", "table_layout", "LOCAL_MAX_CELLS"]

#: The most cells the tables together may hold (the sum of their sizes): every L-BFGS iteration
#: passes over them a few dozen times.
LOCAL_MAX_CELLS = 2**28


@dataclass(frozen=True)
class LocalTables:
    """Marginal tables laid out over one flat vector of their cells, and the attribute sets they share.

    Parameters
    ----------
    attributes : tuple of tuple of int
        Each table's attributes (increasing domain positions).
    shapes : tuple of tuple of int
        Each table's shape.
    starts : numpy.ndarray
        Where each table's cells start in the flat vector, and their total.
    terms : tuple of (int, int, float)
        Each term's table, its first row in the answers, and its weight.
    constant_rows : numpy.ndarray
        The queries that read no attribute.
    constants : numpy.ndarray
        Their answers on every data set.
    shared : tuple of tuple of int
        Every non-empty subset of two tables' common attributes, smallest first.
    acyclic : bool
        Whether the tables are acyclic (the local polytope is the marginal polytope).

    Examples
    --------
    >>> model = pm.bodies.local_tables(pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 2]), way=2))
    >>> model.attributes, model.shared, model.acyclic, int(model.starts[-1])
    (((0, 1), (0, 2), (1, 2)), ((0,), (1,), (2,)), False, 16)
    """

    attributes: tuple[tuple[int, ...], ...]
    shapes: tuple[tuple[int, ...], ...]
    starts: np.ndarray
    terms: tuple[tuple[int, int, float], ...]
    constant_rows: np.ndarray
    constants: np.ndarray
    shared: tuple[tuple[int, ...], ...]
    acyclic: bool
    _plans: list[_TablePlan] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def cells(self) -> int:
        """The tables' cells together (the length of the flat vector)."""
        return int(self.starts[-1])

    def table(self, values: np.ndarray, index: int) -> np.ndarray:
        """Table ``index`` of the flat vector ``values``, as a view of its shape.

        Parameters
        ----------
        values : numpy.ndarray
            The tables' cells.
        index : int
            The table's position in :attr:`attributes`.

        Returns
        -------
        numpy.ndarray
        """
        return values[self.starts[index]:self.starts[index + 1]].reshape(self.shapes[index])

    def cells_on(self, values: np.ndarray, attributes: Iterable[int]) -> np.ndarray | None:
        """The cells on ``attributes``, summed from the smallest table holding them (in its order of
        attributes); None where no table holds them all.

        Parameters
        ----------
        values : numpy.ndarray
            The tables' cells (length :attr:`cells`).
        attributes : iterable of int
            Domain positions.

        Returns
        -------
        numpy.ndarray or None
        """
        wanted = set(attributes)
        holding = [index for index, table in enumerate(self.attributes) if wanted <= set(table)]
        if not holding:
            return None
        index = min(holding, key=lambda i: len(self.attributes[i]))
        source = self.attributes[index]
        return project_table(self.table(values, index), source, tuple(a for a in source if a in wanted))

    def answers(self, values: np.ndarray, num_queries: int) -> np.ndarray:
        """The answers from the tables ``values``: each term's table times its weight, and the constants.

        Parameters
        ----------
        values : numpy.ndarray
            The tables' cells (length :attr:`cells`).
        num_queries : int
            The number of answers.

        Returns
        -------
        numpy.ndarray
        """
        answers = np.empty(num_queries)
        answers[self.constant_rows] = self.constants
        for table, row, weight in self.terms:
            answers[row:row + self.starts[table + 1] - self.starts[table]] = \
                weight * values[self.starts[table]:self.starts[table + 1]]
        return answers

    def inconsistency(self, values: np.ndarray) -> float:
        """The largest disagreement of two tables on a shared set, or of a table's sum from 1, by plain sums.

        Parameters
        ----------
        values : numpy.ndarray
            The tables' cells (length :attr:`cells`).

        Returns
        -------
        float
        """
        worst = 0.0
        seen: dict[tuple[int, ...], np.ndarray] = {}
        for index, attributes in enumerate(self.attributes):
            table = self.table(values, index)
            worst = max(worst, abs(float(table.sum()) - 1.0))
            for subset in self.shared:
                if set(subset) <= set(attributes):
                    marginal = project_table(table, attributes, subset)
                    if subset in seen:
                        worst = max(worst, float(np.max(np.abs(marginal - seen[subset]))))
                    else:
                        seen[subset] = marginal
        return worst

    def plans(self) -> list[_TablePlan]:
        """Each table's shared attribute sets and the axes to sum out for each, built once.

        Returns
        -------
        list of _TablePlan
        """
        if not self._plans:
            shared = set(self.shared)
            for attributes, shape in zip(self.attributes, self.shapes):
                self._plans.append(_TablePlan.of(attributes, shape, shared))
        return self._plans

    def holders(self) -> dict[tuple[int, ...], list[tuple[int, int]]]:
        """Each shared set (in the order the plans first meet them) to the tables holding it: each
        table's index and the set's position in that table's plan.

        Returns
        -------
        dict
        """
        members: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for index, plan in enumerate(self.plans()):
            for position, subset in enumerate(plan.subsets):
                members.setdefault(subset, []).append((index, position))
        return members


@dataclass(frozen=True)
class _TablePlan:
    """How to take one table's marginals on the shared sets inside it, and put corrections back, each
    marginal summed from the smallest one taken that contains it."""

    cells: int
    subsets: tuple[tuple[int, ...], ...]  # the shared sets inside the table, largest first
    sizes: tuple[int, ...]  # their cells
    source: tuple[int, ...]  # the set each marginal is summed from (-1: the table itself)
    source_axes: tuple[tuple[int, ...], ...]  # the axes of that source summed out
    sink: tuple[int, ...]  # the largest set each correction is folded into (-1: the table itself)
    sink_shape: tuple[tuple[int, ...], ...]  # the shape broadcasting it over that sink

    @classmethod
    def of(cls, attributes: tuple[int, ...], shape: tuple[int, ...], shared: set[tuple[int, ...]]) -> _TablePlan:
        size_of = dict(zip(attributes, shape))
        # The table's subsets looked up, or the shared sets scanned, whichever are fewer.
        held = ((subset for size in range(1, len(attributes) + 1) for subset in itertools.combinations(attributes, size)
                 if subset in shared) if 2 ** len(attributes) <= len(shared)
                else (subset for subset in shared if set(subset) <= set(attributes)))
        inside = sorted(held, key=lambda s: (-len(s), s))
        maximal = set(maximal_sets(inside))

        def broadcast(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(size_of[a] if a in inner else 1 for a in outer)

        sizes, source, source_axes, sink, sink_shape = [], [], [], [], []
        for position, subset in enumerate(inside):
            sizes.append(math.prod(size_of[a] for a in subset))
            containing = [index for index in range(position) if set(subset) < set(inside[index])]
            origin = min(containing, key=lambda index: math.prod(size_of[a] for a in inside[index]), default=-1)
            outer = attributes if origin < 0 else inside[origin]
            source.append(origin)
            source_axes.append(tuple(axis for axis, a in enumerate(outer) if a not in subset))
            largest = next((index for index in range(position) if set(subset) < set(inside[index])
                            and inside[index] in maximal), -1)
            sink.append(largest)
            sink_shape.append(broadcast(subset, attributes if largest < 0 else inside[largest]))
        return cls(math.prod(shape), tuple(inside), tuple(sizes), tuple(source), tuple(source_axes), tuple(sink),
                   tuple(sink_shape))


#: Each workload's tables while the workload lives (the body's blocker, memory model and
#: projection ask for them on one workload).
_MODELS: weakref.WeakKeyDictionary[Workload, LocalTables | str] = weakref.WeakKeyDictionary()


def local_tables(workload: Workload) -> LocalTables | str:
    """The workload's marginal tables and the sets they share, or why it has none (a phrase).

    Parameters
    ----------
    workload : Workload
        A workload over a domain; its structure is read, no matrix built.

    Returns
    -------
    LocalTables or str

    Examples
    --------
    >>> model = pm.bodies.local_tables(pm.marginals(pm.Domain(["a", "b", "c", "d"], [2, 2, 3, 2]), ways=(0, 3)))
    >>> len(model.attributes), model.constant_rows.tolist(), model.acyclic
    (4, [0], False)
    """
    return decomposition(_MODELS, workload, _decompose)


def _decompose(workload: Workload, terms: TableTerms) -> LocalTables | str:
    if not terms.is_marginal:
        blocks = sorted({block.name for block in terms.blocks if block is not None})
        return (f"{workload.name} reads its attributes through blocks ({', '.join(blocks)}) that are not all "
                "identities: the local polytope takes marginal tables only")
    return _layout(terms.sizes, terms.terms, workload.num_queries)


def measured_tables(sizes: Sequence[int], measurements: Sequence[Measurement]) -> LocalTables | str:
    """The layout of the tables some measurements measure, each a term weighted by ``1/sigma``, or why
    there is none (more than :data:`LOCAL_MAX_CELLS` cells)."""
    if not measurements:
        raise ValueError("measurements: need at least one")
    for measurement in measurements:
        measurement.check(sizes)
        if not measurement.is_identity:
            raise ValueError(f"measurements: the one on {measurement.attributes} measures a query; the local "
                             "polytope takes the tables' cells only")
    # An attribute of one value joins every table, as :func:`~projmech.workloads.table_terms`
    # reads a total over it (an identity): the layout is the measured workload's.
    ones = {a for a, size in enumerate(sizes) if size == 1}
    terms = [(tuple(sorted(set(m.attributes) | ones)), 1.0 / m.sigma) for m in measurements]
    return _layout(tuple(sizes), terms, sum(np.size(m.values) for m in measurements))


def table_layout(sizes: Sequence[int], tables: Iterable[Sequence[int]]) -> LocalTables:
    """The layout of some tables, each once, smallest first (a ValueError naming ``measurements``
    where they hold more than :data:`LOCAL_MAX_CELLS` cells)."""
    distinct = sorted({tuple(sorted(table)) for table in tables}, key=lambda s: (len(s), s))
    model = _layout(tuple(sizes), [(table, 1.0) for table in distinct],
                    sum(math.prod(sizes[a] for a in table) for table in distinct))
    if isinstance(model, str):
        raise ValueError(f"measurements: {model}")
    return model


def _shared_sets(tables: Sequence[tuple[int, ...]]) -> set[tuple[int, ...]]:
    """The sets of attributes that two of the tables hold: the subsets of each table's attributes that
    another table holds counted, or the pairs' intersections' subsets taken, whichever is fewer."""
    held = collections.Counter(a for table in tables for a in table)
    reduced = [tuple(a for a in table if held[a] > 1) for table in tables]
    if sum(2 ** len(table) for table in reduced) <= len(tables) ** 2:
        holding = collections.Counter(subset for table in reduced for size in range(1, len(table) + 1)
                                      for subset in itertools.combinations(table, size))
        return {subset for subset, count in holding.items() if count > 1}
    shared: set[tuple[int, ...]] = set()
    for first, second in itertools.combinations(tables, 2):
        common = sorted(set(first) & set(second))
        for size in range(1, len(common) + 1):
            shared.update(itertools.combinations(common, size))
    return shared


def _layout(sizes: tuple[int, ...], terms: Sequence[tuple[tuple[int, ...], float]], num_queries: int
            ) -> LocalTables | str:
    """The tables of weighted terms (answers laid out term after term), or why there are none."""
    tables = sorted({subset for subset, _ in terms if subset}, key=lambda s: (len(s), s))
    cells = sum(math.prod(sizes[a] for a in table) for table in tables)
    if cells > LOCAL_MAX_CELLS:
        return f"its tables hold {format_count(cells)} cells together, above LOCAL_MAX_CELLS = {LOCAL_MAX_CELLS:,}"
    index = {table: position for position, table in enumerate(tables)}
    shapes = tuple(tuple(sizes[a] for a in table) for table in tables)
    starts = np.concatenate([[0], np.cumsum([math.prod(shape) for shape in shapes])]).astype(np.int64)
    term_list, constant_rows, constants = [], [], []
    row = 0
    for subset, weight in terms:
        count = math.prod(sizes[a] for a in subset)
        if subset:
            term_list.append((index[subset], row, float(weight)))
        else:
            constant_rows.append(np.arange(row, row + count))
            constants.append(np.full(count, weight))
        row += count
    if row != num_queries:
        return f"its table decomposition does not account for its {num_queries:,} queries"
    weighted = {table for table, _, weight in term_list if weight != 0.0}
    unweighted = [list(tables[table]) for table in range(len(tables)) if table not in weighted]
    if unweighted:
        return (f"its terms on attributes {unweighted[0]} all have weight 0 (queries answering 0 on every data "
                "set); drop them from the workload")
    shared = _shared_sets(tables)
    return LocalTables(
        attributes=tuple(tables), shapes=shapes, starts=starts, terms=tuple(term_list),
        constant_rows=np.concatenate(constant_rows) if constant_rows else np.zeros(0, dtype=np.int64),
        constants=np.concatenate(constants) if constants else np.zeros(0),
        shared=tuple(sorted(shared, key=lambda s: (len(s), s))), acyclic=is_acyclic(tables))


