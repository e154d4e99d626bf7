"""Counting from records, the only step of a release that reads the rows: group-by tables of an
``(n, d)`` code matrix, never indexing the universe (:doc:`/theory/workloads`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..validation import DEFAULT_MAX_ENTRIES, check_entries, format_count
from ._tables import _marginal_cells, _marginal_rows, _pair_cells

__all__ = ["table_counts", "marginal_counts", "pair_counts", "check_table_cells", "check_marginal_cells",
           "BLOCK_ENTRIES"]


def check_table_cells(sizes: Sequence[int], axes: Sequence[int]) -> int:
    """The cells of the table on ``axes``, refused above ``DEFAULT_MAX_ENTRIES``."""
    shape = [int(sizes[a]) for a in axes]
    cells = math.prod(shape)
    check_entries("data", cells, DEFAULT_MAX_ENTRIES,
                  f"the table of {len(shape)} attributes of sizes {shape} (cells={format_count(cells)})",
                  limit="DEFAULT_MAX_ENTRIES")
    return cells


def check_marginal_cells(sizes: Sequence[int], way: int) -> int:
    """The cells of all ``way``-way tables, refused above ``DEFAULT_MAX_ENTRIES``."""
    k = _marginal_cells(sizes, way)
    check_entries("data", k, DEFAULT_MAX_ENTRIES, f"the {way}-way marginal counts (k={format_count(k)})",
                  limit="DEFAULT_MAX_ENTRIES")
    return k


def table_counts(records: np.ndarray, sizes: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """The contingency table of the records on the attributes ``axes`` (in that order)."""
    shape = [int(sizes[a]) for a in axes]
    cells = check_table_cells(sizes, axes)
    if not shape:
        return np.array(records.shape[0], dtype=np.int64)
    index = np.ravel_multi_index(tuple(records[:, a] for a in axes), shape) if records.shape[0] else \
        np.zeros(0, dtype=np.int64)
    return np.bincount(index, minlength=cells).reshape(shape)



#: Rows per block of indicators in :func:`pair_counts`, times its width (float32 cells): 16 MB
#: blocks of at most 2^22 rows, so float32 sums of 0/1 within a block are exact (below 2^24).
BLOCK_ENTRIES = 2**22


def marginal_counts(records: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    """The cell counts of every ``way``-way table of ``records``, as :func:`~projmech.workloads.marginals` lays them."""
    k = check_marginal_cells(sizes, way)
    # The 2-way route holds a few sum(sizes)-square matrices: fine beside k counts for many small
    # attributes (d = 150 binary: 9e4 entries for 44,700 counts), not for few large ones.
    if way == 2 and sum(sizes) ** 2 <= min(max(4 * k, BLOCK_ENTRIES), DEFAULT_MAX_ENTRIES):
        return pair_counts(records, sizes)
    counts = np.zeros(k)
    # The cell indices take C(d, way) entries per row: count them a block of rows at a time, each
    # block at least as large as the counts, so that bincount's pass over them is amortized.
    block = max(1, max(BLOCK_ENTRIES, k) // math.comb(len(sizes), way))
    for start in range(0, records.shape[0], block):
        rows = _marginal_rows(tuple(records[start:start + block].T), sizes, way)
        counts += np.bincount(rows.ravel(), minlength=k)
    return counts


def pair_counts(records: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """All 2-way count tables at once from one Gram matrix of indicators (:doc:`/theory/workloads`)."""
    size_array = np.asarray(sizes, dtype=np.int64)
    d, n = size_array.size, records.shape[0]
    reduced = 1 + np.concatenate([[0], np.cumsum(size_array - 1)[:-1]])  # column of (a, 1) in U
    width = 1 + int((size_array - 1).sum())
    # Dense BLAS on blocks of rows: U has about n*d ones but U^T U is dense, so a sparse product
    # costs n*d^2 scalar operations where BLAS is far faster.
    block = max(1, BLOCK_ENTRIES // width)
    moments = np.zeros((width, width))
    for start in range(0, n, block):
        # Row-major within the block: the scatter below writes each row's ones together.
        chunk = np.ascontiguousarray(records[start:start + block])
        indicators = np.zeros((chunk.shape[0], width), dtype=np.float32)
        # A value-0 code sets column 0, which holds ones anyway: one scatter, no mask of rows.
        np.put_along_axis(indicators, np.where(chunk > 0, reduced + chunk - 1, 0), 1.0, axis=1)
        indicators[:, 0] = 1.0
        moments += indicators.T @ indicators
    # T maps U's columns to Z's: value v >= 1 of a is its own column; value 0 is 1 - the others.
    offsets = np.concatenate([[0], np.cumsum(size_array)[:-1]])
    attribute = np.repeat(np.arange(d), size_array - 1)  # one entry per (a, v >= 1)
    value = np.arange(attribute.size) - np.repeat(reduced - 1, size_array - 1) + 1
    t_rows = np.concatenate([offsets, offsets[attribute] + value, offsets[attribute]])
    t_columns = np.concatenate([np.zeros(d, dtype=np.int64), reduced[attribute] + value - 1,
                                reduced[attribute] + value - 1])
    t_values = np.concatenate([np.ones(d), np.ones(attribute.size), -np.ones(attribute.size)])
    lift = sp.csr_array((t_values, (t_rows, t_columns)), shape=(int(size_array.sum()), width))
    full = lift @ (lift @ moments).T  # T M T^T, M symmetric
    table_rows, table_columns = _pair_cells(sizes)
    return full[table_rows, table_columns]
