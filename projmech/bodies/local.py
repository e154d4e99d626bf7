"""Projection onto the local polytope of a workload's marginal tables: consistent tables of any
order, over the tables' cells, never the universe.

A marginal workload (:func:`projmech.workloads.table_terms` with identity blocks: marginals of any
order, weighted, and unions of them) answers, for each term, the cells of the marginal table
``mu_T`` of its attribute set ``T``, times its weight. The true answers are the tables of one
distribution: a point of the *marginal polytope*. Its outer approximation, the **local polytope**

    L = { (mu_T)_T : mu_T >= 0, sum(mu_T) = 1, and mu_S, mu_T agree on the marginal of S ∩ T },

holds every data set's answers, and equals the marginal polytope (so ``K_Q`` itself) when the
tables form an acyclic hypergraph (a junction tree whose cliques are the tables: one table,
disjoint tables, a chain of overlapping tables): pairwise consistent tables on such a hypergraph
are the marginals of one distribution (:cite:p:`BFMY83`). On a cyclic set (all 3-way tables) it
is a relaxation, as L of the seeds is for 2-way tables.

The projection ``min (1/2)||answers(mu) - y||^2 over L`` splits L as ``mu in product of
simplices`` and ``mu in the consistent tables`` and maximizes the Lagrangian dual of that
splitting by L-BFGS (:func:`project_to_local`). The dual's value and gradient are closed forms
over the tables' cells: the simplex projection of each table, and the projection onto
consistency, which averages, across the tables containing each shared attribute set ``A``, the
table's component on ``A`` in the orthogonal (ANOVA) decomposition of tables. The result is
certified like every body: its answers come from an exactly consistent, non-negative point (the
dual's tables projected onto consistency and mixed with the uniform tables just enough to be
non-negative), and a lower bound on the optimum comes from the dual at the current multipliers,
each table's inner minimum bounded below by its own Frank–Wolfe gap and the whole lowered by what
rounding can leave, so that it is never optimistic. The
derivation is on the theory page *Projection onto K_Q* (section *Overlapping tables: the local
polytope*).
"""

from __future__ import annotations

import itertools
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg.blas import daxpy, ddot

from .._threads import one_blas_thread
from ..solve import Attempt, Callback, SolveError, SolveResult, SolveStats, Status, check_callback
from ..validation import check_positive_int, check_positive_number, check_real_vector, format_count
from ..workloads import TableTerms, Workload
from .hull import DEFAULT_TOL, NOISE_TOL
from .tables import decomposition

__all__ = ["LocalTables", "LocalResult", "LocalError", "local_tables", "project_to_local", "LOCAL_MAX_CELLS",
           "LOCAL_BYTES_PER_CELL", "DEFAULT_MAX_ITERATIONS"]

#: The most cells the tables together may hold (the sum of their sizes): every L-BFGS iteration
#: passes over them a few dozen times.
LOCAL_MAX_CELLS = 2**28

#: Bytes per cell of the tables held at the peak of a projection: L-BFGS's ten pairs of vectors
#: over the cells, its direction and candidate points, the simplex projection's masks and the
#: certificate's copies. Measured as peak resident memory above the process's baseline (about
#: 150 MB) over the cells: 340 (10 x 17 values, all 3-way tables, 589,560 cells) and 376 (Adult,
#: 10 attributes, all 3-way tables, 443,862 cells); answers and counts included.
LOCAL_BYTES_PER_CELL = 400

#: L-BFGS iterations before a projection gives up (reported as ``iteration_limit``, never accepted).
DEFAULT_MAX_ITERATIONS = 5000

#: Iterations between certificates (each costs about two iterations).
_CHECK_EVERY = 10

#: Certificates in a row without a better gap after which the projection stops (and, above its
#: tolerance, raises :class:`LocalError`): 300 iterations.
_STALLED_CHECKS = 30

#: The certificate's tolerance on the disagreement of two tables' shared marginals (and of a
#: table's sum from 1) of the released point: it is consistent by construction, up to rounding.
_CONSISTENCY_TOL = 1e-9


@dataclass(frozen=True)
class LocalTables:
    """A marginal workload's tables and the attribute sets they share (built by :func:`local_tables`).

    Parameters
    ----------
    attributes : tuple of tuple of int
        Each table's attributes (positions in the domain, increasing): the distinct attribute sets
        of the workload's terms.
    shapes : tuple of tuple of int
        Each table's shape (its attributes' sizes).
    starts : numpy.ndarray
        Where each table's cells start in the flat vector of all tables' cells (row-major within a
        table), and, last, their total.
    terms : tuple of (int, int, float)
        Each term's table, the first of its rows in the workload's answers, and its weight.
    constant_rows : numpy.ndarray
        The queries that read no attribute (the total), whose answers are ``constants``.
    constants : numpy.ndarray
        Their answers on every data set.
    shared : tuple of tuple of int
        The attribute sets two tables share (every subset of a pairwise intersection, the empty
        set excluded), smallest first: the tables must agree on their marginals.
    acyclic : bool
        Whether the tables form an acyclic hypergraph, where the local polytope is the marginal
        polytope (the projection is then onto ``K_Q`` itself).

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.bodies.local import local_tables
    >>> model = local_tables(pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 2]), way=2))
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
        """Table ``index`` of the flat vector ``values``, as an array of its shape.

        Parameters
        ----------
        values : numpy.ndarray
            A vector over the tables' cells (length :attr:`cells`).
        index : int
            The table's position in :attr:`attributes`.

        Returns
        -------
        numpy.ndarray
            A view of ``values``: writing to it writes to them.
        """
        return values[self.starts[index]:self.starts[index + 1]].reshape(self.shapes[index])

    def answers(self, values: np.ndarray, num_queries: int) -> np.ndarray:
        """The workload's answers from the tables ``values``: each term's table times its weight,
        and the constant answers.

        Parameters
        ----------
        values : numpy.ndarray
            A vector over the tables' cells (length :attr:`cells`).
        num_queries : int
            The workload's number of queries.

        Returns
        -------
        numpy.ndarray
            The answers, in the workload's order.
        """
        answers = np.empty(num_queries)
        answers[self.constant_rows] = self.constants
        for table, row, weight in self.terms:
            answers[row:row + self.starts[table + 1] - self.starts[table]] = \
                weight * values[self.starts[table]:self.starts[table + 1]]
        return answers

    def plans(self) -> list[_TablePlan]:
        """Each table's shared attribute sets and the axes to sum out for each, built once.

        Returns
        -------
        list of _TablePlan
            One per table, in the order of :attr:`attributes`.
        """
        if not self._plans:
            for attributes, shape in zip(self.attributes, self.shapes):
                self._plans.append(_TablePlan.of(attributes, shape, self.shared))
        return self._plans


@dataclass(frozen=True)
class _TablePlan:
    """How to take one table's marginals on the shared sets ``A`` inside it and put corrections
    back, in as few passes over its cells as the sets allow: each marginal is summed from the
    smallest marginal already taken that contains it (the sets largest first), and each set's
    correction is folded into a largest set containing it before the largest ones are added to the
    table (all 3-way tables: three passes to take the 2-way marginals, three to correct, instead
    of six and about eight)."""

    cells: int
    subsets: tuple[tuple[int, ...], ...]  # the shared sets inside the table, largest first
    sizes: tuple[int, ...]  # their cells
    source: tuple[int, ...]  # the set each marginal is summed from (-1: the table itself)
    source_axes: tuple[tuple[int, ...], ...]  # the axes of that source summed out
    # For each set A, the sets B strictly inside it and the empty set (-1), with the sign
    # (-1)^|A \ B| and the shape that broadcasts B's marginal over A's.
    mobius: tuple[tuple[tuple[int, int, tuple[int, ...]], ...], ...]
    sink: tuple[int, ...]  # the largest set each correction is folded into (-1: the table itself)
    sink_shape: tuple[tuple[int, ...], ...]  # the shape broadcasting it over that sink

    @classmethod
    def of(cls, attributes: tuple[int, ...], shape: tuple[int, ...], shared: tuple[tuple[int, ...], ...]) -> _TablePlan:
        size_of = dict(zip(attributes, shape))
        inside = sorted((subset for subset in shared if set(subset) <= set(attributes)), key=lambda s: (-len(s), s))

        def broadcast(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(size_of[a] if a in inner else 1 for a in outer)

        sizes, source, source_axes, mobius, sink, sink_shape = [], [], [], [], [], []
        for position, subset in enumerate(inside):
            sizes.append(math.prod(size_of[a] for a in subset))
            containing = [index for index in range(position) if set(subset) < set(inside[index])]
            origin = min(containing, key=lambda index: math.prod(size_of[a] for a in inside[index]), default=-1)
            outer = attributes if origin < 0 else inside[origin]
            source.append(origin)
            source_axes.append(tuple(axis for axis, a in enumerate(outer) if a not in subset))
            terms = [(-1, (-1) ** len(subset), tuple(1 for _ in subset))]
            terms += [(index, (-1) ** (len(subset) - len(smaller)), broadcast(smaller, subset))
                      for index, smaller in enumerate(inside) if set(smaller) < set(subset)]
            mobius.append(tuple(terms))
            largest = next((index for index in range(position) if set(subset) < set(inside[index])
                            and not any(set(inside[index]) < set(other) for other in inside)), -1)
            sink.append(largest)
            sink_shape.append(broadcast(subset, attributes if largest < 0 else inside[largest]))
        return cls(math.prod(shape), tuple(inside), tuple(sizes), tuple(source), tuple(source_axes), tuple(mobius),
                   tuple(sink), tuple(sink_shape))


#: Each workload's tables while the workload lives (the body's blocker, memory model and
#: projection ask for them on one workload).
_MODELS: weakref.WeakKeyDictionary[Workload, LocalTables | str] = weakref.WeakKeyDictionary()


def local_tables(workload: Workload) -> LocalTables | str:
    """The workload's marginal tables and the sets they share, or why it has none (a phrase).

    Reads the workload's structure only (no matrix is built); kept for the workload's lifetime.

    Parameters
    ----------
    workload : Workload
        A workload over a domain.

    Returns
    -------
    LocalTables or str
        The tables, or why they cannot be formed: no table structure, a block that is not an
        identity (a range or prefix query, which the local polytope's closed-form steps do not
        take), or more than :data:`LOCAL_MAX_CELLS` cells in all.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.bodies.local import local_tables
    >>> domain = pm.Domain(["a", "b", "c", "d"], [2, 2, 3, 2])
    >>> model = local_tables(pm.marginals(domain, ways=(0, 3)))
    >>> len(model.attributes), model.constant_rows.tolist(), model.acyclic
    (4, [0], False)
    >>> print(local_tables(pm.workloads.range_marginals(domain, 2, {"c": "prefix"})))
    ... # doctest: +ELLIPSIS
    range_marginals(...) reads its attributes through blocks (...) that are not all identities: ...
    """
    return decomposition(_MODELS, workload, _decompose)


def _decompose(workload: Workload, terms: TableTerms) -> LocalTables | str:
    if not terms.is_marginal:
        blocks = sorted({block.name for block in terms.blocks if block is not None})
        return (f"{workload.name} reads its attributes through blocks ({', '.join(blocks)}) that are not all "
                "identities: the local polytope takes marginal tables only")
    sizes = terms.sizes
    tables = sorted({subset for subset in terms.subsets if subset}, key=lambda s: (len(s), s))
    cells = sum(math.prod(sizes[a] for a in table) for table in tables)
    if cells > LOCAL_MAX_CELLS:
        return f"its tables hold {format_count(cells)} cells together, above LOCAL_MAX_CELLS = {LOCAL_MAX_CELLS:,}"
    index = {table: position for position, table in enumerate(tables)}
    shapes = tuple(tuple(sizes[a] for a in table) for table in tables)
    starts = np.concatenate([[0], np.cumsum([math.prod(shape) for shape in shapes])]).astype(np.int64)
    term_list, constant_rows, constants = [], [], []
    row = 0
    for subset, weight in terms.terms:
        count = math.prod(sizes[a] for a in subset)
        if subset:
            term_list.append((index[subset], row, float(weight)))
        else:
            constant_rows.append(np.arange(row, row + count))
            constants.append(np.full(count, weight))
        row += count
    if row != workload.num_queries:
        return f"its table decomposition does not account for its {workload.num_queries:,} queries"
    weighted = {table for table, _, weight in term_list if weight != 0.0}
    unweighted = [list(tables[table]) for table in range(len(tables)) if table not in weighted]
    if unweighted:
        return (f"its terms on attributes {unweighted[0]} all have weight 0 (queries answering 0 on every data "
                "set); drop them from the workload")
    shared: set[tuple[int, ...]] = set()
    for first, second in itertools.combinations(tables, 2):
        common = sorted(set(first) & set(second))
        for size in range(1, len(common) + 1):
            shared.update(itertools.combinations(common, size))
    return LocalTables(
        attributes=tuple(tables), shapes=shapes, starts=starts, terms=tuple(term_list),
        constant_rows=np.concatenate(constant_rows) if constant_rows else np.zeros(0, dtype=np.int64),
        constants=np.concatenate(constants) if constants else np.zeros(0),
        shared=tuple(sorted(shared, key=lambda s: (len(s), s))), acyclic=_acyclic(tables))


def _acyclic(tables: list[tuple[int, ...]]) -> bool:
    """Whether the hypergraph of ``tables`` is acyclic (alpha-acyclic), by the Graham (GYO)
    reduction: repeatedly drop an attribute that only one table reads and a table inside another
    (or empty); the hypergraph is acyclic when this leaves at most one table."""
    edges = [set(table) for table in tables]
    changed = True
    while changed:
        changed = False
        for edge in edges:
            lonely = {a for a in edge if sum(a in other for other in edges) == 1}
            if lonely:
                edge -= lonely
                changed = True
        for position, edge in enumerate(edges):
            if not edge or any(edge <= other for later, other in enumerate(edges) if later != position):
                del edges[position]
                changed = True
                break
    return len(edges) <= 1


class LocalError(SolveError):
    """The projection stopped before its certificate met the tolerance.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        The solver's one attempt, with how it ended.
    best : LocalResult, optional
        The best certified point found (feasible: consistent, non-negative tables), whose gap is
        above the tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies.local import LocalError, project_to_local
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [3, 3, 3]), 2)
    >>> y = np.random.default_rng(0).normal(0.1, 0.3, workload.num_queries)
    >>> try:
    ...     project_to_local(workload, y, tol=1e-14, max_iterations=1)
    ... except LocalError as error:
    ...     print(error.best.stats.status, error.best.inconsistency < 1e-12)
    iteration_limit True
    """


@dataclass(frozen=True, repr=False)
class LocalResult(SolveResult):
    """The projection onto the local polytope of a workload's tables (made by :func:`project_to_local`).

    Parameters
    ----------
    answers : numpy.ndarray
        The projected answers, in the workload's order: each term's table, times its weight.
    tables : tuple of tuple of int
        Each table's attributes.
    values : numpy.ndarray
        The tables' cells, one after another (:meth:`marginal` gives one table): non-negative,
        each summing to 1, every two agreeing on the marginal of the attributes they share.
    exact : bool
        Whether the local polytope is the marginal polytope here (acyclic tables), so that the
        projection is onto ``K_Q`` itself.
    distance : float
        ``||answers - y||_2``.
    inconsistency : float
        The largest disagreement of two tables' shared marginals, or of a table's sum from 1,
        recomputed from ``values`` (rounding only).
    stats : SolveStats
        The dual L-BFGS's iterations, its certified absolute gap on ``(1/2)||answers - y||^2``
        and the tolerance it had to meet.
    _model : LocalTables
        The tables' layout, for :meth:`marginal`.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies.local import project_to_local
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), 2)
    >>> result = project_to_local(workload, np.full(12, 0.25))
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

    @property
    def witness(self) -> None:
        """None: a local-polytope point is a set of tables, never a vector over the universe."""
        return None

    @property
    def moments(self) -> None:
        """None: the local polytope has no moment matrix."""
        return None

    def marginal(self, attributes: Any) -> np.ndarray:
        """The projected table of ``attributes`` (one of :attr:`tables`), an array of its shape.

        Parameters
        ----------
        attributes : sequence of int
            The table's attributes (positions in the domain).

        Returns
        -------
        numpy.ndarray
            A copy of the table.

        Raises
        ------
        ValueError
            If no table has these attributes.
        """
        key = tuple(sorted(int(a) for a in attributes))
        if key not in self.tables:
            raise ValueError(f"attributes: {list(key)} is not one of the tables {[list(t) for t in self.tables]}")
        return self._model.table(self.values, self.tables.index(key)).copy()

    def summary(self) -> dict[str, Any]:
        """The projection and its statistics as plain JSON-serializable values.

        Returns
        -------
        dict
            ``body`` (``"local"``), ``exact``, ``distance``, ``inconsistency``, ``tables`` and the
            entries of ``stats.summary()``.
        """
        return {"body": "local", "exact": self.exact, "distance": self.distance,
                "inconsistency": self.inconsistency, "tables": [list(table) for table in self.tables],
                **self.stats.summary()}

    def _description(self) -> str:
        kind = "marginal polytope (exact)" if self.exact else "local polytope"
        return (f"onto the {kind} of {len(self.tables)} tables: {self.answers.size} answers, "
                f"distance {self.distance:.6g}")


class _Problem:
    """The projection's data over the flat vector of the tables' cells: each table's weight
    ``W_T`` (the sum of its terms' squared weights) and the weighted mean ``ybar_T`` of its terms'
    answers divided by their weights, so that ``(1/2)||answers(mu) - y||^2 = sum_T (W_T/2)
    ||mu_T - ybar_T||^2 + constant``."""

    def __init__(self, model: LocalTables, y: np.ndarray) -> None:
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
        self.target /= self.cell_weight
        self.lengths = lengths.astype(float)
        self.uniform = 1.0 / np.repeat(self.lengths, lengths)
        self._thresholds: np.ndarray | None = None
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
        """Each table's sum of ``values`` (the tables are contiguous: a segmented sum, 20 times
        faster than ``bincount`` by table index)."""
        return np.add.reduceat(values, self.model.starts[:-1])

    def spread(self, per_table: np.ndarray) -> np.ndarray:
        """One value per table repeated over the table's cells."""
        return np.repeat(per_table, self.counts)

    def simplex(self, values: np.ndarray) -> np.ndarray:
        """Each table of ``values`` projected onto its simplex by Michelot's method, all tables at
        once: from a threshold below each table's own it rises to it in finitely many steps, each
        keeping only the cells above the last threshold. The cells above the first threshold are
        gathered once and the steps run on them alone: noisy tables keep few cells, and on
        Adult's 3-way tables (20.9 M cells) the steps over every cell took 1.8 s a projection.
        The previous call's thresholds start it where they are still below (the dual's
        successive points are close)."""
        threshold = (self.table_sums(values) - 1.0) / self.lengths
        if self._thresholds is not None:
            excess = self.table_sums(np.maximum(values - self.spread(self._thresholds), 0.0)) - 1.0
            threshold = np.where(excess >= 0.0, np.maximum(self._thresholds, threshold), threshold)
        index = np.flatnonzero(values > self.spread(threshold))
        kept = values[index]
        owner = np.searchsorted(self.model.starts, index, side="right") - 1
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
        return np.maximum(values - self.spread(threshold), 0.0)

    def consistent(self, values: np.ndarray, metric: np.ndarray, total: float) -> np.ndarray:
        """The projection of ``values`` onto the tables that agree on every shared set and sum to
        ``total``, in the norm ``sum_T metric_T ||v_T||^2``: each table's component on each shared
        set ``A`` (in its orthogonal decomposition) replaced by the tables' weighted average."""
        model = self.model
        plans = model.plans()
        components: list[list[np.ndarray]] = []
        totals: list[float] = []
        averages: dict[tuple[int, ...], list[Any]] = {}
        for index, plan in enumerate(plans):
            table = model.table(values, index)
            marginals: list[np.ndarray] = []
            for origin, axes in zip(plan.source, plan.source_axes):
                outer = table if origin < 0 else marginals[origin]
                marginals.append(outer.sum(axis=axes) if axes else outer)
            table_total = float(marginals[-1].sum()) if marginals else float(table.sum())
            totals.append(table_total)
            own = []
            weight = metric[index] / plan.cells
            for position, subset in enumerate(plan.subsets):
                # |T| times the table's component on A: sum over B in A of (-1)^|A\B| |B| m_B.
                component = plan.sizes[position] * marginals[position]
                for inner, sign, shape in plan.mobius[position]:
                    if inner < 0:
                        component = component + sign * table_total
                    else:
                        component = component + sign * plan.sizes[inner] * marginals[inner].reshape(shape)
                own.append(component)
                if subset not in averages:
                    averages[subset] = [0.0, 0.0]
                averages[subset][0] = averages[subset][0] + weight * component
                averages[subset][1] += weight
            components.append(own)
        result = values.copy()
        for index, plan in enumerate(plans):
            table = model.table(result, index)
            changes = [(averages[subset][0] / averages[subset][1] - components[index][position]) / plan.cells
                       for position, subset in enumerate(plan.subsets)]
            shift = (total - totals[index]) / plan.cells
            for position in range(len(changes) - 1, -1, -1):  # smallest first, into the largest sets
                if plan.sink[position] >= 0:
                    changes[plan.sink[position]] = changes[plan.sink[position]] + changes[position].reshape(
                        plan.sink_shape[position])
            added = False
            for position, change in enumerate(changes):
                if plan.sink[position] < 0:
                    if not added:
                        change = change + shift  # the sum's correction rides on the first addition
                        added = True
                    table += change.reshape(plan.sink_shape[position])
            if not added:
                table += shift
        return result

    def inconsistency(self, values: np.ndarray) -> float:
        """The largest disagreement of two tables' marginals on a shared set, or of a table's sum
        from 1: recomputed by plain sums, independently of :meth:`consistent`."""
        model = self.model
        worst = 0.0
        seen: dict[tuple[int, ...], np.ndarray] = {}
        for index, attributes in enumerate(model.attributes):
            table = model.table(values, index)
            worst = max(worst, abs(float(table.sum()) - 1.0))
            for subset in model.shared:
                if set(subset) <= set(attributes):
                    axes = tuple(axis for axis, a in enumerate(attributes) if a not in subset)
                    marginal = table.sum(axis=axes) if axes else table
                    if subset in seen:
                        worst = max(worst, float(np.max(np.abs(marginal - seen[subset]))))
                    else:
                        seen[subset] = marginal
        return worst

    def orthogonal(self, values: np.ndarray) -> np.ndarray:
        """The part of ``values`` orthogonal (Euclidean) to the consistent directions: the
        deviations of each table's shared components from their average, and its sum."""
        return values - self.consistent(values, np.ones(self.lengths.size), 0.0)

    def dual_tables(self, multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The part of ``multipliers`` orthogonal to the consistent directions, and the tables
        that minimize the Lagrangian at it (each table's simplex projection)."""
        orthogonal = self.orthogonal(multipliers)
        return orthogonal, self.simplex(self.target - orthogonal / self.cell_weight)

    def lower_bound(self, multipliers: np.ndarray) -> float:
        """A lower bound on the optimum over the local polytope from multipliers ``lambda`` of the
        constraint ``mu = z`` (``mu`` in the simplices, ``z`` consistent and in the simplices):
        the Lagrangian dual ``min_{mu} f(mu) + <lambda', mu> - max_{z} <lambda', z>``, ``lambda'``
        the part of ``lambda`` orthogonal to the consistent directions. Each table's inner minimum
        is taken at the simplex projection and lowered by its Frank–Wolfe gap there; ``max_z`` is
        ``<lambda', uniform>`` plus at most, table by table, the spread of what rounding left of
        ``lambda'`` along the consistent directions; and the sums' own rounding is subtracted, so
        the bound holds whatever the rounding (multipliers shifted by 1e12-1e17 along the
        consistent directions gave bounds above the optimum before the last two terms)."""
        return self.bound_at(*self.dual_tables(multipliers))

    def bound_at(self, orthogonal: np.ndarray, point: np.ndarray) -> float:
        """:meth:`lower_bound` from :meth:`dual_tables`' pair, for a caller that has it already."""
        leftover = orthogonal - self.orthogonal(orthogonal)  # rounding along the consistent directions
        starts = self.model.starts[:-1]
        spread = float(np.sum(np.maximum.reduceat(leftover, starts) - np.minimum.reduceat(leftover, starts)))
        gradient = self.cell_weight * (point - self.target) + orthogonal
        terms = 0.5 * self.cell_weight * (point - self.target) ** 2 + orthogonal * point
        inner = self.table_sums(terms)
        # Frank–Wolfe gap of each table's inner problem: <g, p> - min_j g_j.
        lowest = np.minimum.reduceat(gradient, starts)
        products = gradient * point
        gaps = np.maximum(self.table_sums(products) - lowest, 0.0)
        shift = float(orthogonal @ self.uniform)
        magnitude = (float(np.abs(terms).sum()) + float(np.abs(products).sum()) + float(np.abs(lowest).sum())
                     + float(np.abs(orthogonal) @ self.uniform) + abs(self.offset))
        rounding = 4.0 * terms.size * np.finfo(float).eps * magnitude
        return float(np.sum(inner - gaps)) - shift + self.offset - spread - rounding


def project_to_local(workload: Workload, y: Any, *, tol: float | None = None, noise_scale: float | None = None,
                     max_iterations: int = DEFAULT_MAX_ITERATIONS, callback: Callback | None = None) -> LocalResult:
    """Project ``y`` onto the local polytope of the workload's marginal tables.

    Parameters
    ----------
    workload : Workload
        A marginal workload :func:`local_tables` takes.
    y : array_like, shape (k,)
        The point to project.
    tol : float, optional
        The acceptance rule of :func:`~projmech.bodies.project_to_hull`: the certified gap on
        ``(1/2)||answers - y||^2`` must be ``<= tol * max(lower bound, scale)``, ``scale =
        (k/2) noise_scale^2`` (or 1 without ``noise_scale``). Default ``NOISE_TOL`` (1e-4) with
        ``noise_scale``, else ``DEFAULT_TOL`` (1e-8).
    noise_scale : float, optional
        The standard deviation of the noise in ``y``; sets the scale of ``tol``.
    max_iterations : int, default DEFAULT_MAX_ITERATIONS
        L-BFGS iterations before giving up.
    callback : callable, optional
        ``callback(iteration, gap)`` after each certificate.

    Returns
    -------
    LocalResult
        The projected answers and tables, certified.

    Raises
    ------
    ValueError
        If the workload has no marginal tables, or ``y`` has the wrong length.
    LocalError
        If the certificate does not meet the tolerance within ``max_iterations``.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> from projmech.bodies.local import project_to_local
    >>> workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), way=2)
    >>> result = project_to_local(workload, np.full(12, 0.3))
    >>> np.round(result.answers, 6).tolist()[:4], result.exact, result.stats.tolerance_met
    ([0.25, 0.25, 0.25, 0.25], False, True)
    """
    model = local_tables(workload)
    if isinstance(model, str):
        raise ValueError(f"workload: {model}")
    y = check_real_vector("y", y, workload.num_queries)
    with np.errstate(over="ignore"):
        squared = 0.5 * float(y @ y)
    if not math.isfinite(squared):
        raise ValueError("y: its squared norm overflows double precision (entries of about 1e154 or more); the "
                         "answers are fractions of the public size, so rescale them")
    if noise_scale is not None:
        noise_scale = check_positive_number("noise_scale", noise_scale)
    tol = check_positive_number("tol", (DEFAULT_TOL if noise_scale is None else NOISE_TOL) if tol is None else tol)
    max_iterations = check_positive_int("max_iterations", max_iterations)
    callback = check_callback(callback)
    start = time.perf_counter()
    problem = _Problem(model, y)
    scale = 1.0 if noise_scale is None else max(0.5 * y.size * noise_scale**2, 1e-8)
    best: list[Any] = []  # [gap, lower bound, released point] of the best certificate so far
    iterations = [0]

    def negative_dual(point: np.ndarray) -> tuple[float, np.ndarray]:
        multipliers, tables = problem.dual_tables(point)
        value = float(np.sum(0.5 * problem.cell_weight * (tables - problem.target) ** 2 + multipliers * tables))
        value += problem.offset - float(multipliers @ problem.uniform)
        return -value, -(problem.orthogonal(tables) - problem.uniform)

    stalled = [0]  # certificates in a row that did not improve on the best gap

    def certify(multipliers: np.ndarray) -> bool:
        orthogonal, tables = problem.dual_tables(multipliers)  # shared by the release and the bound
        released = _nonnegative(problem, problem.consistent(tables, problem.weight, 1.0))
        upper, lower = problem.objective(released), problem.bound_at(orthogonal, tables)
        gap = max(upper - lower, 0.0)
        if not best or gap < best[0]:
            best[:] = [gap, lower, released]
            stalled[0] = 0
        else:
            stalled[0] += 1
        if callback is not None:
            callback(iterations[0], gap)
        # Stop where the gap no longer falls (at the limit of double precision for a tight
        # tolerance: one case sat at 1.05e-10 from iteration 410 to 5,000); reported, not accepted.
        return best[0] <= tol * max(best[1], scale) or stalled[0] >= _STALLED_CHECKS

    if not certify(np.zeros(model.cells)):
        # L-BFGS on the dual (smooth, piecewise quadratic): its gradient is the inconsistency of
        # the tables it implies, which falls linearly (Adult, 10 attributes, all 3-way tables:
        # 2.7e-5 after 50 iterations, 4e-9 after 400).
        def step(iteration: int, point: np.ndarray) -> bool:
            iterations[0] = iteration
            return iteration % _CHECK_EVERY == 0 and certify(point)

        # On one BLAS thread: the iterations are vector operations bound by memory, which more
        # threads do not speed up, and on a loaded machine OpenBLAS's waiting threads slowed them
        # 8-fold (380 ms an iteration on 443,862 cells instead of 50 ms); one thread also rounds
        # alike on every machine.
        with one_blas_thread():
            last = _lbfgs(negative_dual, np.zeros(model.cells), max_iterations, step,
                          1.0 / float(problem.weight.min()))
        if iterations[0] % _CHECK_EVERY:
            certify(last)
    gap, lower, released = best
    answers = problem.answers(released)
    inconsistency = problem.inconsistency(released)
    met = gap <= tol * max(lower, scale) and inconsistency <= _CONSISTENCY_TOL and bool(np.all(released >= 0))
    status = Status.OPTIMAL if met else Status.ITERATION_LIMIT
    seconds = time.perf_counter() - start
    stats = SolveStats(solver="dual-lbfgs", status=status, solve_time=seconds, iterations=iterations[0], gap=gap,
                       tolerance=tol * max(lower, scale), tolerance_met=met,
                       attempts=(Attempt("dual-lbfgs", status, f"gap {gap:.3g}", seconds),), total_time=seconds)
    iteration = iterations[0]
    result = LocalResult(answers=answers, tables=model.attributes, values=released, exact=model.acyclic,
                         distance=float(np.linalg.norm(answers - y)), inconsistency=inconsistency, stats=stats,
                         _model=model)
    if not met:
        why = "at its iteration limit" if iteration >= max_iterations else "its gap no longer falling"
        raise LocalError(f"the local-polytope projection stopped after {iteration} iterations ({why}) with gap "
                         f"{gap:.3g} above its tolerance {stats.tolerance:.3g} (inconsistency {inconsistency:.2g})",
                         stats.attempts, result)
    return result


def _lbfgs(function: Any, point: np.ndarray, max_iterations: int, on_iteration: Any, curvature: float,
           memory: int = 10) -> np.ndarray:
    """Minimize a smooth convex ``function`` (returning its value and gradient) by L-BFGS
    (:cite:p:`NW06`, algorithm 7.4) with Armijo backtracking from the unit step, until
    ``on_iteration(iteration, point)`` returns True or ``max_iterations`` pass; the last point.
    ``curvature`` bounds the gradient's Lipschitz constant: it scales the first direction.

    The two-loop recursion updates one direction in place (BLAS ``daxpy``): with a new array per
    operation, the page faults of fresh multi-megabyte arrays took most of the time (108 ms of
    an iteration on 443,862 cells, against 20 ms in place). Three guards, each for a failure seen
    on noisy inputs (2-12 % of 140 runs at noise 5 to 1000 before them): a pair whose gradient
    change is rounding (``|y|^2 <= 1e-16 |g|^2``) is not kept, since it passes the angle test and
    scales the next step by 1e15; a line search that fails clears the pairs and retries from the
    scaled gradient before giving up; and with no pairs, on a linear piece of the dual (the
    gradient unchanged), the step doubles while it gains, instead of crawling at ``1/curvature``."""
    value, gradient = function(point)
    changes: list[np.ndarray] = []
    differences: list[np.ndarray] = []
    inverses: list[float] = []
    direction = np.empty_like(point)
    coefficients = np.empty(memory)
    for iteration in range(1, max_iterations + 1):
        np.negative(gradient, out=direction)
        for index in range(len(changes) - 1, -1, -1):
            coefficients[index] = inverses[index] * ddot(changes[index], direction)
            daxpy(differences[index], direction, a=-coefficients[index])
        scale = (1.0 / (inverses[-1] * ddot(differences[-1], differences[-1]))) if changes else 1.0 / curvature
        direction *= scale
        for index in range(len(changes)):
            step = coefficients[index] - inverses[index] * ddot(differences[index], direction)
            daxpy(changes[index], direction, a=step)
        slope = ddot(gradient, direction)
        restarted = not changes
        if not slope < 0.0:  # not a descent direction: restart from the scaled gradient
            changes.clear()
            differences.clear()
            inverses.clear()
            np.multiply(gradient, -1.0 / curvature, out=direction)
            slope, restarted = ddot(gradient, direction), True
            if slope == 0.0:
                break
        length, doubled, halved = 1.0, False, False
        while True:
            candidate = point + length * direction
            new_value, new_gradient = function(candidate)
            if new_value <= value + 1e-4 * length * slope:
                change = new_gradient - gradient
                # Doubling only before any halving: a search that halved once and then doubled
                # again ping-ponged between two lengths forever (a slope of -1e-26, where
                # rounding decides Armijo's test, on an adaptive mechanism's estimate).
                if (not changes and not halved and length < 2.0**40
                        and ddot(change, change) <= 1e-16 * ddot(gradient, gradient)):
                    length *= 2.0  # a linear piece: try a longer step
                    doubled = True
                    continue
                break
            if doubled:  # the doubling went one step too far: take the last step that gained
                length /= 2.0
                candidate = point + length * direction
                new_value, new_gradient = function(candidate)
                break
            length /= 2.0
            halved = True
            if length < 1e-12:
                if restarted:
                    return point
                changes.clear()
                differences.clear()
                inverses.clear()
                np.multiply(gradient, -1.0 / curvature, out=direction)
                slope, restarted, length, halved = ddot(gradient, direction), True, 1.0, False
        change, difference = candidate - point, new_gradient - gradient
        product = ddot(change, difference)
        if (product > 1e-12 * math.sqrt(ddot(change, change) * ddot(difference, difference))
                and ddot(difference, difference) > 1e-16 * ddot(new_gradient, new_gradient)):
            if len(changes) == memory:
                changes.pop(0)
                differences.pop(0)
                inverses.pop(0)
            changes.append(change)
            differences.append(difference)
            inverses.append(1.0 / product)
        point, value, gradient = candidate, new_value, new_gradient
        if on_iteration(iteration, point):
            break
    return point


def _nonnegative(problem: _Problem, z: np.ndarray) -> np.ndarray:
    """``z`` (consistent tables summing to 1) mixed with the uniform tables just enough to have no
    negative cell: ``(1 - t) z + t u`` is consistent, since the uniform tables are."""
    negative = z < 0
    if not np.any(negative):
        return z
    share = float(np.max(-z[negative] / (problem.uniform[negative] - z[negative])))
    return np.maximum((1.0 - share) * z + share * problem.uniform, 0.0)
