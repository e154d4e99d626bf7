"""The local polytope's consistency projection as sparse products, for many small tables.

The projection (``_Problem.consistent``) takes each table's marginals on the shared sets, centres
them by ``n_a I - J_a`` along each axis, subtracts their weighted average over the tables holding
the set, and spreads the differences back over the cells. Table by table that is a few numpy calls
per table and set, which dominate when the tables are many and small (hundreds of 3-way tables of
a few dozen cells, as the adaptive rounds measure). Here the same linear map is three passes over
index arrays built once: a sparse sum of the cells into every marginal, segmented sums for the
averages and the centring, and the transposed sum back.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ._local_layout import LocalTables

__all__ = ["SparseConsistency", "SPARSE_MIN_TABLES", "SPARSE_MIN_TOL", "SPARSE_MAX_ENTRIES",
           "SPARSE_MAX_ENTRIES_PER_CELL"]

#: The fewest tables for which :class:`SparseConsistency` replaces the table-by-table projection.
SPARSE_MIN_TABLES = 16

#: The tightest tolerance of a projection that uses it: its sums run over more terms than the
#: table-by-table ones; forced at every tolerance, two tests' certificates (at 1e-10 and 1e-11)
#: stalled above their tolerance, so tight tolerances keep the table-by-table rounding.
SPARSE_MIN_TOL = 1e-6

#: The most entries of its sum of cells into marginals (``sum_T |T| x shared sets in T``), in all
#: and per cell: some 16 bytes each are kept (about 64 MB at most), and twice that while built.
SPARSE_MAX_ENTRIES = 2**22
SPARSE_MAX_ENTRIES_PER_CELL = 8


class SparseConsistency:
    """The consistency projection of ``model``'s tables as sparse products (see the module)."""

    def __init__(self, model: LocalTables) -> None:
        plans = model.plans()
        members = model.holders()
        rows_of_cells, columns, entries, tables, scales = [], [], [], [], []
        blocks: list[tuple[int, tuple[int, ...]]] = []  # each block's first row and its set's shape
        row = entry = 0
        for subset, holding in members.items():
            first = holding[0][0]
            shape_of_set = tuple(model.shapes[first][model.attributes[first].index(a)] for a in subset)
            count = math.prod(shape_of_set)
            for index, _ in holding:
                shape = model.shapes[index]
                axes = [model.attributes[index].index(a) for a in subset]
                cells = np.indices(shape).reshape(len(shape), -1)
                rows_of_cells.append(row + np.ravel_multi_index(tuple(cells[axes]), shape_of_set))
                columns.append(model.starts[index] + np.arange(math.prod(shape)))
                entries.append(entry + np.arange(count))
                tables.append(np.full(count, index))
                scales.append(np.full(count, 1.0 / plans[index].cells))
                blocks.append((row, shape_of_set))
                row += count
            entry += count
        self.rows, self._entries = row, entry

        def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)  # no shared set: none

        # One matrix kept: the spreading (cells x marginals); its transpose sums the cells (no copy).
        self._spreading = sp.csr_matrix((np.ones(sum(c.size for c in columns)),
                                         (joined(columns, int), joined(rows_of_cells, int))),
                                        shape=(model.cells, row))
        del rows_of_cells, columns
        self._entry = joined(entries, int)
        self._table = joined(tables, int)
        self._scale = joined(scales, float)
        # The centring along each set's k-th axis: each row's axis size, and the first row of its
        # fibre along that axis. A row of a set of k axes or fewer is its own fibre of size 2, so
        # that 2 x - x leaves it as it is.
        self._centring = []
        for k in range(max((len(shape) for _, shape in blocks), default=0)):
            sizes, fibres = [], []
            for start, shape in blocks:
                count = math.prod(shape)
                own = start + np.arange(count)
                if k < len(shape):
                    stride = math.prod(shape[k + 1:])
                    sizes.append(np.full(count, float(shape[k])))
                    fibres.append(own - (np.arange(count) // stride % shape[k]) * stride)
                else:
                    sizes.append(np.full(count, 2.0))
                    fibres.append(own)
            self._centring.append((np.concatenate(sizes), np.concatenate(fibres)))
        self._starts = model.starts[:-1]
        self._cells = np.diff(model.starts).astype(float)
        self._owner = np.repeat(np.arange(len(model.attributes)), np.diff(model.starts))

    @staticmethod
    def fits(model: LocalTables) -> bool:
        """Whether ``model``'s tables are many and their sums into marginals few enough."""
        if len(model.attributes) < SPARSE_MIN_TABLES:
            return False
        entries = sum(plan.cells * len(plan.subsets) for plan in model.plans())
        return entries <= min(SPARSE_MAX_ENTRIES, SPARSE_MAX_ENTRIES_PER_CELL * model.cells)

    def consistent(self, values: np.ndarray, metric: np.ndarray, total: float, out: np.ndarray) -> np.ndarray:
        """The projection of ``values`` onto consistent tables summing to ``total`` in the norm weighted
        by ``metric`` per table, into ``out`` (which may be ``values``)."""
        marginals = self._spreading.T @ values
        weights = metric[self._table] * self._scale
        average = (np.bincount(self._entry, weights * marginals, self._entries)
                   / np.bincount(self._entry, weights, self._entries))
        difference = marginals - average[self._entry]
        for size, fibre in self._centring:
            difference = size * difference - np.bincount(fibre, difference, self.rows)[fibre]
        difference *= -self._scale
        shift = (total - np.add.reduceat(values, self._starts)) / self._cells
        correction = self._spreading @ difference
        np.add(values, correction, out=out)
        out += shift[self._owner]
        return out
