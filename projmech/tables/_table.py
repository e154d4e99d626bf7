"""One marginal table, and the operations on families of tables (maximal members, acyclicity)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..validation import check_positions

__all__ = ["Table", "expand_table", "is_acyclic", "maximal_sets", "project_table"]

_Set = TypeVar("_Set", bound=Iterable[int])


def project_table(values: np.ndarray, attributes: Sequence[int], kept: Sequence[int]) -> np.ndarray:
    """A table's values summed down to some of its attributes (``values`` itself when nothing is summed).

    Parameters
    ----------
    values : numpy.ndarray
        The table, one axis per attribute.
    attributes : sequence of int
        Its attributes, increasing.
    kept : sequence of int
        The attributes kept, increasing, among ``attributes``.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> pm.tables.project_table(np.arange(6.0).reshape(2, 3), (0, 4), (4,)).tolist()
    [3.0, 5.0, 7.0]
    """
    axes = tuple(axis for axis, a in enumerate(attributes) if a not in kept)
    return values.sum(axis=axes) if axes else values


def expand_table(values: np.ndarray, attributes: Sequence[int], into: Sequence[int]) -> np.ndarray:
    """A table's values with a length-1 axis for each attribute of ``into`` they lack, to broadcast.

    Parameters
    ----------
    values, attributes
        The table and its attributes, as for :func:`project_table` (all in ``into``).
    into : sequence of int
        The larger table's attributes, increasing.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> pm.tables.expand_table(np.ones(3), (1,), (0, 1, 2)).shape
    (1, 3, 1)
    """
    attributes = tuple(attributes)
    return np.reshape(values, [values.shape[attributes.index(a)] if a in attributes else 1 for a in into])


@dataclass(frozen=True, eq=False)
class Table:
    """A marginal table: values over the cells of some attributes.

    Parameters
    ----------
    attributes : tuple of int
        Increasing domain positions.
    values : numpy.ndarray
        One axis per attribute, of the attribute's size.

    Examples
    --------
    >>> table = pm.tables.Table((0, 2), np.array([[1.0, 3.0], [2.0, 2.0]]))
    >>> table.project((2,)).values.tolist(), table.total, table.normalize().values.sum()
    ([3.0, 5.0], 8.0, np.float64(1.0))
    """

    attributes: tuple[int, ...]
    values: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", _positions(self.attributes))
        if np.ndim(self.values) != len(self.attributes):
            raise ValueError(f"values: expected {len(self.attributes)} axes, one per attribute, got "
                             f"{np.ndim(self.values)}")

    @property
    def shape(self) -> tuple[int, ...]:
        """The attributes' sizes."""
        return tuple(np.shape(self.values))

    @property
    def total(self) -> float:
        """The sum of the cells."""
        return float(np.sum(self.values))

    def project(self, attributes: Sequence[int]) -> Table:
        """The table summed down to some of its attributes.

        Parameters
        ----------
        attributes : sequence of int
            Increasing positions among :attr:`attributes`.

        Returns
        -------
        Table
        """
        kept = _positions(attributes)
        if not set(kept) <= set(self.attributes):
            raise ValueError(f"attributes: {list(kept)} are not all among the table's {list(self.attributes)}")
        return Table(kept, project_table(self.values, self.attributes, kept))

    def expand(self, attributes: Sequence[int], sizes: Sequence[int] | None = None) -> np.ndarray:
        """The values broadcast over a table on more attributes.

        Parameters
        ----------
        attributes : sequence of int
            Increasing positions holding :attr:`attributes`.
        sizes : sequence of int, optional
            The domain's sizes: broadcast to the full shape (a read-only view); else length-1 new axes.

        Returns
        -------
        numpy.ndarray
        """
        into = _positions(attributes)
        if not set(self.attributes) <= set(into):
            raise ValueError(f"attributes: {list(into)} do not hold the table's {list(self.attributes)}")
        expanded = expand_table(self.values, self.attributes, into)
        return expanded if sizes is None else np.broadcast_to(expanded, [sizes[a] for a in into])

    def normalize(self) -> Table:
        """The table divided by its total: a distribution over its cells.

        Returns
        -------
        Table
        """
        return Table(self.attributes, self.values / self.total)


def _positions(attributes: Sequence[int]) -> tuple[int, ...]:
    """Increasing attribute positions, or none (a table of one cell)."""
    return tuple(attributes) if not len(attributes) else check_positions("attributes", attributes,
                                                                         what="attribute positions")


def maximal_sets(family: Iterable[_Set]) -> list[_Set]:
    """The members of a family of attribute sets inside no other member (repeats kept), in order.

    Parameters
    ----------
    family : iterable of sets of int
        Attribute sets (tuples, sets or frozensets).

    Returns
    -------
    list

    Examples
    --------
    >>> pm.tables.maximal_sets([(0,), (0, 1), (1, 2), (2,)])
    [(0, 1), (1, 2)]
    """
    members = list(family)
    as_sets = [set(member) for member in members]
    return [member for member, own in zip(members, as_sets) if not any(own < other for other in as_sets)]


def is_acyclic(tables: Iterable[Iterable[int]]) -> bool:
    """Whether a family of attribute sets is an alpha-acyclic hypergraph (GYO reduction :cite:p:`BFMY83`).

    Parameters
    ----------
    tables : iterable of sets of int
        The attribute sets.

    Returns
    -------
    bool

    Examples
    --------
    >>> pm.tables.is_acyclic([(0, 1), (1, 2)]), pm.tables.is_acyclic([(0, 1), (1, 2), (0, 2)])
    (True, False)
    """
    edges = dict(enumerate(set(table) for table in tables))
    holding: dict[int, set[int]] = {}
    for position, edge in edges.items():
        for a in edge:
            holding.setdefault(a, set()).add(position)
    # GYO: drop attributes in one edge only, and edges inside another; an edge is looked at again
    # when one of its attributes is left in it alone.
    pending = list(edges)
    while pending:
        position = pending.pop()
        if position not in edges:
            continue
        edge = edges[position]
        lonely = {a for a in edge if len(holding[a]) == 1}
        edge -= lonely
        if edge and not any(edge <= other for later, other in edges.items() if later != position):
            continue
        del edges[position]
        for a in edge:
            holding[a].discard(position)
            if len(holding[a]) == 1:
                pending.extend(holding[a])
    return len(edges) <= 1
