"""Projection onto K_Q table by table, for a workload whose maximal tables are disjoint: one hull
projection per table over its cells (:doc:`/theory/projection`)."""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ..solve import Attempt, Callback, SolveResult, SolveStats, Status
from ..tables import maximal_sets
from ..validation import DEFAULT_MAX_ENTRIES, check_real_vector, format_count
from ..workloads import TableTerms, Workload, table_terms
from . import _hull as hull

__all__ = ["TableGroups", "TablesResult", "table_groups", "project_to_tables", "TABLE_MAX_CELLS"]

#: Tables whose query matrix has at most this many entries (8 MB) are projected onto from its dense
#: form, where the hull's products are faster; larger ones stay sparse.
DENSE_TABLE_ENTRIES = 2**20

#: Why a workload without table structure has no tables body (after its name).
NOT_TABLES = "is not a union of tables (marginals, or Kronecker products of blocks and totals)"

#: The most cells one merged table may hold: its cells are the hull's universe (``HULL_MAX_UNIVERSE``).
TABLE_MAX_CELLS = 2**22


@dataclass(frozen=True)
class TableGroups:
    """A workload's queries grouped by the disjoint table each reads (built by :func:`table_groups`).

    Parameters
    ----------
    attributes : tuple of tuple of int
        Each table's attributes (positions in the domain, increasing).
    rows : tuple of numpy.ndarray
        Each table's queries (indices into the workload's answers).
    stored_entries : tuple of int
        The stored entries of each table's query matrix.
    constant_rows : numpy.ndarray
        The queries that read no attribute (the total).
    constants : numpy.ndarray
        Their answers on every data set.
    terms : tuple of tuple of (tuple of int, float)
        Each table's terms: the attributes each keeps, and its weight.
    blocks : tuple of (Workload or None)
        Each attribute's block (None where no term keeps it).
    sizes : tuple of int
        The attributes' sizes.

    Examples
    --------
    >>> groups = pm.bodies.table_groups(pm.marginals(pm.Domain(["a", "b"], [2, 3]), ways=(0, 1)))
    >>> groups.constant_rows.tolist(), [rows.tolist() for rows in groups.rows]
    ([0], [[1, 2], [3, 4, 5]])
    """

    attributes: tuple[tuple[int, ...], ...]
    rows: tuple[np.ndarray, ...]
    stored_entries: tuple[int, ...]
    constant_rows: np.ndarray
    constants: np.ndarray
    terms: tuple[tuple[tuple[tuple[int, ...], float], ...], ...]
    blocks: tuple[Workload | None, ...]
    sizes: tuple[int, ...]
    # Each table's matrix once built: the body's blocker, memory model and projection share it.
    _built: dict[int, np.ndarray | sp.csr_array] = field(default_factory=dict, init=False, repr=False, compare=False)

    def matrix(self, group: int) -> np.ndarray | sp.csr_array:
        """Table ``group``'s queries as a matrix over its cells (row-major), built on first use.

        Parameters
        ----------
        group : int
            Index of the table in :attr:`attributes`.

        Returns
        -------
        numpy.ndarray or scipy.sparse.csr_array
        """
        if group not in self._built:
            parts = []
            for subset, weight in self.terms[group]:
                matrix = sp.csr_array(np.ones((1, 1)))
                for attribute in self.attributes[group]:  # row-major over the table's attributes
                    factor = (_block_matrix(self.blocks[attribute]) if attribute in subset
                              else sp.csr_array(np.ones((1, self.sizes[attribute]))))
                    matrix = sp.csr_array(sp.kron(matrix, factor, format="csr"))
                parts.append(weight * matrix)
            built = sp.csr_array(sp.vstack(parts, format="csr"))
            self._built[group] = built.toarray() if math.prod(built.shape) <= DENSE_TABLE_ENTRIES else built
        return self._built[group]


def _block_matrix(block: Workload | None) -> sp.csr_array:
    """An attribute's block as a sparse matrix: its stored matrix, or an implicit block's columns."""
    assert block is not None, "a term keeps only attributes that have a block"
    if block.is_implicit:
        return sp.csr_array(block.columns(np.arange(block.universe_size)))
    return sp.csr_array(block.matrix)


#: Each workload's decomposition while it lives: the body's blocker, memory model and projection ask.
_GROUPS: weakref.WeakKeyDictionary[Workload, TableGroups | str] = weakref.WeakKeyDictionary()


def table_groups(workload: Workload) -> TableGroups | str:
    """The workload's disjoint tables, or why it has none (a phrase), from its structure alone.

    Parameters
    ----------
    workload : Workload
        Any workload.

    Returns
    -------
    TableGroups or str

    Examples
    --------
    >>> groups = pm.bodies.table_groups(pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 2]), way=1))
    >>> groups.attributes, [groups.matrix(group).shape for group in range(3)], groups.stored_entries
    (((0,), (1,), (2,)), [(2, 2), (3, 3), (2, 2)], (2, 3, 2))
    """
    return decomposition(_GROUPS, workload, _decompose)


Decomposed = TypeVar("Decomposed")


def decomposition(cache: weakref.WeakKeyDictionary[Workload, Decomposed | str], workload: Workload,
                  build: Callable[[Workload, TableTerms], Decomposed | str]) -> Decomposed | str:
    """A tables body's decomposition of ``workload`` (or why there is none), kept in ``cache``."""
    if workload not in cache:
        terms = table_terms(workload)
        cache[workload] = f"{workload.name} {NOT_TABLES}" if terms is None else build(workload, terms)
    return cache[workload]


def _decompose(workload: Workload, terms: TableTerms) -> TableGroups | str:
    maximal = maximal_sets(sorted({tuple(sorted(s)) for s in terms.subsets if s}, key=len, reverse=True))
    for first in range(len(maximal)):
        for second in range(first + 1, len(maximal)):
            shared = set(maximal[first]) & set(maximal[second])
            if shared:
                return (f"the tables of {workload.name} overlap (attributes {sorted(shared)} are read by two "
                        "tables): project them onto their local polytope (body='local'), K_Q itself where they are "
                        "acyclic")
    sizes = terms.sizes
    for subset in maximal:
        cells = math.prod(sizes[i] for i in subset)
        if cells > TABLE_MAX_CELLS:
            return (f"its table of attributes {list(subset)} holds {format_count(cells)} cells, "
                    f"above {TABLE_MAX_CELLS:,}")
    blocks = terms.blocks
    kept = {attribute: block for attribute, block in enumerate(blocks) if block is not None}
    for attribute, block in kept.items():
        if block.is_implicit and not block.has_adjoint:
            return f"the block {block.name} of attribute {attribute} is implicit without columns"
    maximal.sort()
    group_rows: list[list[np.ndarray]] = [[] for _ in maximal]
    group_terms: list[list[tuple[tuple[int, ...], float]]] = [[] for _ in maximal]
    stored = [0] * len(maximal)
    constant_rows, constants = [], []
    start = 0
    for subset, weight in terms.terms:
        count = math.prod(kept[i].num_queries for i in subset)
        rows = np.arange(start, start + count)
        start += count
        if not subset:
            constant_rows.append(rows)
            constants.append(np.full(count, weight))
            continue
        group = next(index for index, table in enumerate(maximal) if set(subset) <= set(table))
        # The stored entries of the term's Kronecker product: each factor's, multiplied.
        stored[group] += math.prod(kept[a].kernels.stored_entries() if a in subset else sizes[a]
                                   for a in maximal[group])
        group_rows[group].append(rows)
        group_terms[group].append((subset, weight))
    if start != workload.num_queries:
        return f"its table decomposition does not account for its {workload.num_queries:,} queries"
    for subset, entries in zip(maximal, stored):
        if entries > DEFAULT_MAX_ENTRIES:
            return (f"its table of attributes {list(subset)} has a query matrix of {format_count(entries)} stored "
                    f"entries, above DEFAULT_MAX_ENTRIES={DEFAULT_MAX_ENTRIES:,}")
    return TableGroups(
        attributes=tuple(maximal),
        rows=tuple(np.concatenate(rows) for rows in group_rows),
        stored_entries=tuple(stored),
        constant_rows=np.concatenate(constant_rows) if constant_rows else np.zeros(0, dtype=np.int64),
        constants=np.concatenate(constants) if constants else np.zeros(0),
        terms=tuple(tuple(group) for group in group_terms),
        blocks=tuple(blocks),
        sizes=tuple(sizes),
    )


@dataclass(frozen=True, repr=False)
class TablesResult(SolveResult):
    """The projection onto a product of table simplices, one hull projection per table.

    Parameters
    ----------
    answers : numpy.ndarray
        The projected answers, in the workload's order.
    tables : tuple of tuple of int
        Each table's attributes.
    parts : tuple of ProjectionResult
        Each table's projection (a witness over the table's cells).
    distance : float
        ``||answers - y||_2``.
    stats : SolveStats
        The parts' statistics together: the sums of their gaps and of their tolerances.
    _groups : TableGroups or None
        The tables and their queries.

    Examples
    --------
    >>> result = pm.bodies.project_to_tables(pm.marginals(pm.Domain(["a", "b"], [2, 3]), way=1), np.full(5, 0.4))
    >>> result.tables, len(result.parts), result.stats.tolerance_met
    (((0,), (1,)), 2, True)
    """

    answers: np.ndarray
    tables: tuple[tuple[int, ...], ...]
    parts: tuple[hull.ProjectionResult, ...]
    distance: float
    stats: SolveStats
    _groups: TableGroups | None = field(default=None, repr=False, compare=False)

    #: The witness is the product of the parts' distributions, not a vector over the universe; a
    #: tables projection has no moment matrix.
    witness = None
    moments = None

    def summary(self) -> dict[str, Any]:
        """The projection and its statistics as plain JSON-serializable values.

        Returns
        -------
        dict
        """
        return {"body": "tables", "distance": self.distance, "tables": [list(table) for table in self.tables],
                **self.stats.summary()}

    def _description(self) -> str:
        return f"onto {len(self.tables)} disjoint tables: {self.answers.size} answers, distance {self.distance:.6g}"


def project_to_tables(workload: Workload, y: Any, *, solver: str = "auto", tol: float | None = None,
                      noise_scale: float | None = None, callback: Callback | None = None) -> TablesResult:
    """Project ``y`` onto ``K_Q`` table by table, for a workload whose tables are disjoint.

    Parameters
    ----------
    workload : Workload
        A workload :func:`table_groups` takes.
    y : array_like, shape (k,)
        The point to project.
    solver, tol, noise_scale, callback
        As for :func:`~projmech.bodies.project_to_hull`, for each table (half of ``tol`` each).

    Returns
    -------
    TablesResult

    Raises
    ------
    ProjectionError
        If a table's projection fails.

    Examples
    --------
    >>> workload = pm.marginals(pm.Domain(["a", "b"], [2, 3]), way=1)
    >>> result = pm.bodies.project_to_tables(workload, np.array([0.7, 0.5, 0.2, 0.2, 0.2]))
    >>> np.round(result.answers, 6).tolist()
    [0.6, 0.4, 0.333333, 0.333333, 0.333333]
    """
    groups = table_groups(workload)
    if isinstance(groups, str):
        raise ValueError(f"workload: {groups}")
    y = check_real_vector("y", y, workload.num_queries)
    start = time.perf_counter()
    part_tol = (tol if tol is not None else (hull.NOISE_TOL if noise_scale is not None else hull.DEFAULT_TOL)) / 2.0
    answers = np.empty(y.size)
    answers[groups.constant_rows] = groups.constants
    parts = []
    for group, rows in enumerate(groups.rows):
        part = hull.project_to_hull(groups.matrix(group), y[rows], solver=solver, tol=part_tol, noise_scale=noise_scale,
                                    callback=callback)
        answers[rows] = part.answers
        parts.append(part)
    gaps = [part.stats.gap for part in parts]
    tolerances = [part.stats.tolerance for part in parts]
    attempts = tuple(attempt for part in parts for attempt in part.stats.attempts)
    met = all(part.stats.tolerance_met for part in parts)
    seconds = time.perf_counter() - start
    stats = SolveStats(
        solver="tables/" + "+".join(sorted({part.stats.solver for part in parts})) if parts else "tables",
        status=Status.OPTIMAL if all(part.stats.status is Status.OPTIMAL for part in parts) else Status.REJECTED,
        solve_time=sum(part.stats.solve_time for part in parts),
        iterations=sum(part.stats.iterations or 0 for part in parts),
        gap=None if any(gap is None for gap in gaps) else float(sum(gaps)),  # type: ignore[arg-type]
        tolerance=None if any(t is None for t in tolerances) else float(sum(tolerances)),  # type: ignore[arg-type]
        tolerance_met=met, attempts=attempts or (Attempt("tables", Status.OPTIMAL, "constant answers only", 0.0),),
        total_time=seconds)
    return TablesResult(answers=answers, tables=groups.attributes, parts=tuple(parts),
                        distance=float(np.linalg.norm(answers - y)), stats=stats, _groups=groups)
