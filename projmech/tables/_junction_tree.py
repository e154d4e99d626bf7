"""A junction tree of marginal tables: a log-linear model on them held by the cliques of a chordal
completion, at the cliques' cost rather than the universe's (:doc:`/theory/maximum_entropy`).
"""

from __future__ import annotations

import itertools
import math
import string
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from ..validation import check_positions, check_positive_int
from ._table import expand_table, maximal_sets, project_table

__all__ = ["JunctionTree", "TreeTooLargeError", "MARGINAL_MAX_CELLS", "junction_order", "spanning_neighbours"]

#: The largest table :meth:`JunctionTree.marginal` computes (as the dense fits' universe).
MARGINAL_MAX_CELLS = 4 * 10**6

#: einsum's subscript letters: a subtree of at most this many attributes is summed by it.
_LETTERS = string.ascii_letters
_EINSUM_MAX_ATTRIBUTES = len(_LETTERS)


class TreeTooLargeError(ValueError):
    """A junction tree of the given tables holds more cells than a fit may allocate (raised before any).

    Examples
    --------
    >>> issubclass(pm.tables.TreeTooLargeError, ValueError)
    True
    """


class JunctionTree:
    """The cliques of a chordal completion of some tables (greedy elimination), joined in a tree.

    Sets ``cliques`` (``cliques[order[0]]`` the root), ``order`` (each clique after its ``parent``),
    ``separator`` and ``cells`` (the cliques' together).

    Parameters
    ----------
    sizes : sequence of int
        The domain's attribute sizes (an attribute in no table is a clique alone).
    tables : sequence of tuple of int
        The tables (increasing attribute positions) the model's factors are on.

    Examples
    --------
    >>> tree = pm.tables.JunctionTree((2, 3, 4), [(0, 1), (1, 2)])
    >>> sorted(tree.cliques), tree.cells
    ([(0, 1), (1, 2)], 18)
    """

    def __init__(self, sizes: Sequence[int], tables: Sequence[tuple[int, ...]]) -> None:
        try:
            self.sizes = tuple(check_positive_int("sizes", size) for size in sizes)
        except TypeError:
            raise TypeError(f"sizes: expected a sequence of positive ints, got {type(sizes).__name__}") from None
        if not self.sizes:
            raise ValueError("sizes: need at least one attribute")
        tables = [check_positions("tables", table, len(self.sizes), what="attribute positions") for table in tables]
        self.cliques = _cliques(self.sizes, tables)
        self.order, self.parent = _spanning_tree(self.cliques)
        self.separator = tuple(() if p is None else tuple(a for a in c if a in self.cliques[p])
                               for c, p in zip(self.cliques, self.parent))
        self.cells = sum(math.prod(self.shape(i)) for i in range(len(self.cliques)))

    def shape(self, index: int) -> tuple[int, ...]:
        """The shape of a clique's table.

        Parameters
        ----------
        index : int
            The clique's position in ``cliques``.

        Returns
        -------
        tuple of int
        """
        return tuple(self.sizes[a] for a in self.cliques[index])

    def home(self, table: tuple[int, ...]) -> int:
        """The position of the smallest clique holding a table (``ValueError`` if none does).

        Parameters
        ----------
        table : tuple of int
            Increasing attribute positions.

        Returns
        -------
        int
        """
        table = check_positions("table", table, len(self.sizes), what="attribute positions")
        index = self._holding(table)
        if index is None:
            raise ValueError(f"table: {list(table)} is inside no clique of the junction tree")
        return index

    def _holding(self, table: tuple[int, ...]) -> int | None:
        """The smallest clique holding ``table`` (checked), or None."""
        holding = [i for i, clique in enumerate(self.cliques) if set(table) <= set(clique)]
        return min(holding, key=lambda i: math.prod(self.shape(i))) if holding else None

    def calibrate(self, potentials: Sequence[np.ndarray], *, log: bool = False) -> tuple[list[np.ndarray], float]:
        """The clique tables of ``p ∝ exp(sum_c potentials[c])`` and ``log`` of its normalizer.

        Parameters
        ----------
        potentials : sequence of numpy.ndarray
            One log-potential per clique, of the clique's shape.
        log : bool
            Return the tables' logarithms (exact where a table underflows).

        Returns
        -------
        beliefs : list of numpy.ndarray
            Each clique's table (summing to 1), or its logarithm.
        log_partition : float
        """
        if len(potentials) != len(self.cliques):
            raise ValueError(f"potentials: expected one per clique ({len(self.cliques)}), got {len(potentials)}")
        beliefs = [np.array(theta, dtype=float) for theta in potentials]
        for index, belief in enumerate(beliefs):
            if belief.shape != self.shape(index):
                raise ValueError(f"potentials: clique {index}'s has shape {belief.shape}, expected {self.shape(index)}")
        upward: dict[int, np.ndarray] = {}
        for child in reversed(self.order[1:]):
            parent = self.parent[child]
            assert parent is not None
            message = _log_sum(beliefs[child], self.cliques[child], self.separator[child])
            upward[child] = message
            beliefs[parent] = beliefs[parent] + expand_table(message, self.separator[child], self.cliques[parent])
        root = self.order[0]
        log_partition = float(_log_sum(beliefs[root], self.cliques[root], ()))
        for child in self.order[1:]:
            parent = self.parent[child]
            assert parent is not None
            # The parent's belief without what the child sent it, summed to their separator. Where
            # the child sent -inf (no mass), the parent's belief is -inf too and the difference
            # undefined; the child's own belief is -inf there whatever comes down, so -inf is sent.
            with np.errstate(invalid="ignore"):
                excluded = beliefs[parent] - expand_table(upward[child], self.separator[child], self.cliques[parent])
            excluded = np.where(np.isnan(excluded), -np.inf, excluded)
            downward = _log_sum(excluded, self.cliques[parent], self.separator[child])
            beliefs[child] = beliefs[child] + expand_table(downward, self.separator[child], self.cliques[child])
        logs = [belief - log_partition for belief in beliefs]
        return (logs if log else [np.exp(table) for table in logs]), log_partition

    def divergence(self, new: Sequence[np.ndarray], old: Sequence[np.ndarray]) -> float:
        """``KL(p || q)``: the cliques' divergences less the separators' (exact for short steps).

        Parameters
        ----------
        new, old : sequence of numpy.ndarray
            The clique tables' logarithms of ``p`` and ``q`` (:meth:`calibrate` with ``log``).

        Returns
        -------
        float
        """
        total = 0.0
        for index, clique in enumerate(self.cliques):
            total += _table_divergence(new[index], old[index])
            separator = self.separator[index]
            if self.parent[index] is not None and separator:
                total -= _table_divergence(_log_sum(new[index], clique, separator),
                                           _log_sum(old[index], clique, separator))
        return total

    def marginal(self, beliefs: Sequence[np.ndarray], attributes: tuple[int, ...]) -> np.ndarray:
        """The table on some attributes of the distribution with calibrated clique tables ``beliefs``.

        Summed from a clique holding it, else from a subtree's conditionals; ``ValueError`` beyond
        :data:`MARGINAL_MAX_CELLS` cells.

        Parameters
        ----------
        beliefs : sequence of numpy.ndarray
            Calibrated clique tables (:meth:`calibrate`).
        attributes : tuple of int
            Increasing attribute positions.

        Returns
        -------
        numpy.ndarray
        """
        attributes = check_positions("attributes", attributes, len(self.sizes), what="attribute positions")
        index = self._holding(attributes)
        if index is not None:
            return project_table(beliefs[index], self.cliques[index], attributes)
        wanted = math.prod(self.sizes[a] for a in attributes)
        if wanted > MARGINAL_MAX_CELLS:
            raise ValueError(f"attributes: the table on {list(attributes)} holds {wanted:,} cells, above "
                             f"{MARGINAL_MAX_CELLS:,}")
        nodes = self._subtree(attributes)
        top = nodes[0]
        tables: list[np.ndarray] = []
        for node in nodes:
            table = beliefs[node]
            if node != top:
                separator = self.separator[node]
                below = expand_table(project_table(table, self.cliques[node], separator), separator, self.cliques[node])
                table = np.divide(table, below, out=np.zeros_like(table), where=below > 0)
            tables.append(table)
        involved = sorted({a for node in nodes for a in self.cliques[node]})
        if len(involved) <= _EINSUM_MAX_ATTRIBUTES:
            # einsum orders the contraction (greedily) so that attributes are summed out early:
            # a product taken clique by clique can hold a clique's cells times the wanted table's.
            letter = {a: _LETTERS[k] for k, a in enumerate(involved)}
            inputs = ",".join("".join(letter[a] for a in self.cliques[node]) for node in nodes)
            result = np.einsum(f"{inputs}->{''.join(letter[a] for a in attributes)}", *tables, optimize="greedy")
            return np.asarray(result)
        return self._summed_up(dict(zip(nodes, tables)), nodes, attributes)

    def _summed_up(self, tables: dict[int, np.ndarray], nodes: list[int], attributes: tuple[int, ...]) -> np.ndarray:
        """A subtree's product (``nodes`` from its top) summed to ``attributes`` from the leaves up."""
        top = nodes[0]
        sent: dict[int, tuple[np.ndarray, tuple[int, ...]]] = {}
        for node in reversed(nodes):
            clique = self.cliques[node]
            children = [other for other in nodes if self.parent[other] == node]
            up = set(self.separator[node]) if node != top else set()
            read = set(attributes) | up | {a for child in children for a in self.separator[child]}
            factor = (project_table(tables[node], clique, tuple(a for a in clique if a in read)),
                      tuple(a for a in clique if a in read))
            for child in children:
                factor = _product(factor, sent.pop(child))
            keep = tuple(a for a in factor[1] if a in set(attributes) | up)
            sent[node] = (project_table(factor[0], factor[1], keep), keep)
        result, held = sent[top]
        return np.asarray(result.transpose([held.index(a) for a in attributes]) if held != attributes else result)

    def least_total(self, costs: Mapping[tuple[int, ...], np.ndarray]) -> float:
        """``min over x of sum_t costs[t](x_t)``, each table inside a clique (min-sum towards the root).

        Parameters
        ----------
        costs : mapping of tuple of int to numpy.ndarray
            A cost table per table, of the table's shape.

        Returns
        -------
        float
        """
        totals = [np.zeros(self.shape(i)) for i in range(len(self.cliques))]
        for table, cost in costs.items():
            table = check_positions("costs", table, len(self.sizes), what="attribute positions")
            cost = np.asarray(cost, dtype=float)
            if cost.shape != tuple(self.sizes[a] for a in table):
                raise ValueError(f"costs: the table on {list(table)} has shape {cost.shape}, expected "
                                 f"{tuple(self.sizes[a] for a in table)}")
            index = self.home(table)
            totals[index] = totals[index] + expand_table(cost, table, self.cliques[index])
        for child in reversed(self.order[1:]):
            parent = self.parent[child]
            assert parent is not None
            summed = tuple(axis for axis, a in enumerate(self.cliques[child]) if a not in self.separator[child])
            message = totals[child].min(axis=summed) if summed else totals[child]
            totals[parent] = totals[parent] + expand_table(message, self.separator[child], self.cliques[parent])
        return float(totals[self.order[0]].min())

    def _subtree(self, attributes: tuple[int, ...]) -> list[int]:
        """The cliques of a subtree holding every one of ``attributes`` (each one's clique nearest the root, joined)."""
        depth = {self.order[0]: 0}
        for node in self.order[1:]:
            parent = self.parent[node]
            assert parent is not None
            depth[node] = depth[parent] + 1
        ends = {min((i for i, clique in enumerate(self.cliques) if a in clique), key=depth.__getitem__)
                for a in attributes}
        nodes = set(ends)
        # Climb every end to the others' common ancestor: the union of the paths is the subtree.
        frontier = set(ends)
        while len(frontier) > 1:
            deepest = max(frontier, key=depth.__getitem__)
            frontier.discard(deepest)
            parent = self.parent[deepest]
            assert parent is not None
            nodes.add(parent)
            frontier.add(parent)
        return sorted(nodes, key=self.order.index)


def _cliques(sizes: tuple[int, ...], tables: Sequence[tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
    """The maximal cliques of a chordal completion by greedy elimination (fewest cells, then lowest position)."""
    neighbours: dict[int, set[int]] = {a: set() for a in range(len(sizes))}
    for table in tables:
        for a, b in itertools.combinations(table, 2):
            neighbours[a].add(b)
            neighbours[b].add(a)
    formed: list[frozenset[int]] = []
    while neighbours:
        chosen = min(neighbours, key=lambda a: (math.prod(sizes[b] for b in neighbours[a] | {a}), a))
        around = neighbours.pop(chosen)
        formed.append(frozenset(around | {chosen}))
        for a, b in itertools.combinations(around, 2):
            neighbours[a].add(b)
            neighbours[b].add(a)
        for a in around:
            neighbours[a].discard(chosen)
    maximal = set(maximal_sets(formed))
    return tuple(sorted(tuple(sorted(clique)) for clique in maximal))


def _spanning_tree(cliques: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
    """A maximum-weight spanning tree of the cliques rooted at the largest: the order and parents."""
    adjacent = spanning_neighbours(cliques, connect=True)
    root = max(range(len(cliques)), key=lambda i: (len(cliques[i]), -i))
    order, parent = [root], dict[int, int | None]({root: None})
    for node in order:
        for other in adjacent[node]:
            if other not in parent:
                parent[other] = node
                order.append(other)
    return tuple(order), tuple(parent[i] for i in range(len(cliques)))


def spanning_neighbours(groups: Sequence[Sequence[int]], *, connect: bool) -> list[list[int]]:
    """A maximum-weight spanning forest of groups (Kruskal's; weights the attributes shared, ties to lower
    indices) as each group's neighbours; ``connect`` joins disjoint groups by weight 0 :cite:p:`BFMY83`.
    """
    edges = sorted(((len(set(a) & set(b)), i, j) for (i, a), (j, b) in itertools.combinations(enumerate(groups), 2)),
                   key=lambda edge: (-edge[0], edge[1], edge[2]))
    component = list(range(len(groups)))  # union-find over the trees built so far

    def find(i: int) -> int:
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    neighbours: list[list[int]] = [[] for _ in groups]
    for shared, i, j in edges:
        if (shared or connect) and find(i) != find(j):
            component[find(i)] = find(j)
            neighbours[i].append(j)
            neighbours[j].append(i)
    return neighbours


def junction_order(tables: Sequence[tuple[int, ...]], sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """The maximal tables in breadth-first order of a maximum-weight spanning forest, each tree from its
    table of most cells (for an acyclic set, a junction tree :cite:p:`BFMY83`).

    Parameters
    ----------
    tables : sequence of tuple of int
        Attribute sets (increasing positions).
    sizes : sequence of int
        The domain's attribute sizes.

    Returns
    -------
    list of tuple of int

    Examples
    --------
    >>> pm.tables.junction_order([(0,), (0, 1), (1, 2)], (2, 2, 3))
    [(1, 2), (0, 1)]
    """
    maximal = maximal_sets(tables)
    cells = [math.prod(sizes[a] for a in table) for table in maximal]
    neighbours = spanning_neighbours(maximal, connect=False)
    order: list[tuple[int, ...]] = []
    visited = [False] * len(maximal)
    for root in sorted(range(len(maximal)), key=lambda index: (-cells[index], index)):
        if visited[root]:
            continue
        visited[root] = True
        queue = deque([root])
        while queue:
            node = queue.popleft()
            order.append(maximal[node])
            for child in sorted(neighbours[node]):
                if not visited[child]:
                    visited[child] = True
                    queue.append(child)
    return order


def _table_divergence(log_p: np.ndarray, log_q: np.ndarray) -> float:
    """``sum p log(p / q)`` from the logarithms, a cell where ``p`` is 0 adding nothing."""
    held = log_p > -np.inf
    return float((np.exp(log_p[held]) * (log_p[held] - log_q[held])).sum())


def _product(first: tuple[np.ndarray, tuple[int, ...]], second: tuple[np.ndarray, tuple[int, ...]]
             ) -> tuple[np.ndarray, tuple[int, ...]]:
    """The product of two tables (each with its attributes) over the union of their attributes."""
    union = tuple(sorted(set(first[1]) | set(second[1])))
    return expand_table(first[0], first[1], union) * expand_table(second[0], second[1], union), union


def _log_sum(log_table: np.ndarray, attributes: tuple[int, ...], kept: tuple[int, ...]) -> np.ndarray:
    """``log sum exp`` of a log-table on ``attributes`` over the axes not ``kept``."""
    axes = tuple(axis for axis, a in enumerate(attributes) if a not in kept)
    if not axes:
        return log_table
    largest = log_table.max(axis=axes, keepdims=True)
    largest = np.where(np.isfinite(largest), largest, 0.0)
    with np.errstate(divide="ignore"):  # a slice of no mass sums to 0: its logarithm is -inf
        return np.squeeze(np.log(np.exp(log_table - largest).sum(axis=axes, keepdims=True)) + largest, axis=axes)
