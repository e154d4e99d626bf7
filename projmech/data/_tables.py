"""Products with a marginal workload's matrix F without building F, in ``O(m)`` memory
(:doc:`/theory/workloads`); :func:`projmech.marginals` uses the unchecked kernels (:class:`Unchecked`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..validation import (
    DEFAULT_MAX_ENTRIES,
    POSITIVE_INT,
    as_array,
    check_entries,
    check_real_vector,
    validate_params,
)

__all__ = [
    "marginal_cells",
    "marginal_matvec",
    "marginal_rmatvec",
    "marginal_columns",
    "marginal_rows",
    "pair_cells",
]


def marginal_cells(sizes: Sequence[int], way: int) -> int:
    """``k``, the number of cells of all ``way``-way tables, an exact int in ``O(d way)``."""
    sizes, way = _check_sizes_and_way(sizes, way)
    return _marginal_cells(sizes, way)


def _marginal_cells(sizes: Sequence[int], way: int) -> int:
    sums = [1] + [0] * way
    for size in sizes:
        for j in range(way, 0, -1):
            sums[j] += sums[j - 1] * size
    return sums[way]


def _check_sizes_and_way(sizes: Any, way: Any) -> tuple[list[int], int]:
    """``sizes`` as a list of positive ints and ``way`` as an int in ``1 .. len(sizes)``."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise TypeError(f"sizes: expected a sequence of attribute sizes, got {type(sizes).__name__}")
    sizes = [POSITIVE_INT.check(f"sizes[{i}]", size) for i, size in enumerate(sizes)]
    if not sizes:
        raise ValueError("sizes: needs at least one attribute")
    way = POSITIVE_INT.check("way", way)
    if way > len(sizes):
        raise ValueError(f"way: must be at most the number of attributes ({len(sizes)}), got {way}")
    return sizes, way


@validate_params(max_entries=POSITIVE_INT)
def marginal_rows(codes: Sequence[np.ndarray], sizes: Sequence[int], way: int, *,
                  max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """Row of F (the cell) of each of ``q`` elements, given by their codes: shape ``(C(d, way), q)``."""
    sizes, way = _check_sizes_and_way(sizes, way)
    if isinstance(codes, (str, bytes)) or not isinstance(codes, (Sequence, np.ndarray)):
        raise TypeError(f"codes: expected one array of codes per attribute, got {type(codes).__name__}")
    if len(codes) != len(sizes):
        raise ValueError(f"codes: expected {len(sizes)} arrays (one per attribute), got {len(codes)}")
    arrays = [as_array(f"codes[{i}]", column) for i, column in enumerate(codes)]
    for i, (column, size) in enumerate(zip(arrays, sizes)):
        if column.ndim != 1 or column.shape != arrays[0].shape:
            raise ValueError(f"codes[{i}]: expected a 1-d array of {arrays[0].size} codes, got shape {column.shape}")
        if column.size and not np.issubdtype(column.dtype, np.integer):
            raise TypeError(f"codes[{i}]: expected integer codes, got dtype {column.dtype}")
        if column.size and (column.min() < 0 or column.max() >= size):
            raise ValueError(f"codes[{i}]: codes must lie in [0, {size}), got [{column.min()}, {column.max()}]")
    check_entries("codes", math.comb(len(sizes), way) * arrays[0].size, max_entries,
                  f"the cells of {arrays[0].size:,} elements in {math.comb(len(sizes), way):,} tables")
    return _marginal_rows([column.astype(np.int64) for column in arrays], sizes, way)


def _marginal_rows(codes: Sequence[np.ndarray], sizes: Sequence[int], way: int) -> np.ndarray:
    rows = []
    offset = 0
    for subset in itertools.combinations(range(len(sizes)), way):
        sub_sizes = [sizes[i] for i in subset]
        # The empty subset (way 0) is the one cell of the total, for every element.
        cell = (np.ravel_multi_index(tuple(codes[i] for i in subset), sub_sizes) if subset
                else np.zeros(np.shape(codes[0]), dtype=np.int64))
        rows.append(offset + cell)
        offset += math.prod(sub_sizes)
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


@validate_params(num_queries=POSITIVE_INT, max_entries=POSITIVE_INT)
def marginal_columns(indices: np.ndarray, sizes: Sequence[int], way: int, num_queries: int, *,
                     max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """The columns ``F[:, indices]`` as a dense 0/1 array (``num_queries`` must be ``k``)."""
    sizes, way = _check_sizes_and_way(sizes, way)
    m, k = math.prod(sizes), _marginal_cells(sizes, way)
    if num_queries != k:
        raise ValueError(f"num_queries: the {way}-way tables of sizes {sizes} have {k} cells, got {num_queries}")
    indices = as_array("indices", indices)
    if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
        raise TypeError(f"indices: expected a 1-d array of integers, got dtype {indices.dtype}, shape {indices.shape}")
    if indices.size and (indices.min() < 0 or indices.max() >= m):
        raise ValueError(f"indices: must lie in [0, {m}), got [{indices.min()}, {indices.max()}]")
    check_entries("indices", k * indices.size, max_entries, f"the {indices.size:,} columns of {k:,} entries")
    return _columns(indices.astype(np.int64), sizes, way, k)


def _columns(indices: np.ndarray, sizes: Sequence[int], way: int, num_queries: int) -> np.ndarray:
    codes = np.unravel_index(indices, sizes)
    rows = _marginal_rows(codes, sizes, way)
    columns = np.zeros((num_queries, rows.shape[1]))
    columns[rows, np.arange(rows.shape[1])] = 1.0
    return columns


@validate_params(max_entries=POSITIVE_INT)
def marginal_matvec(vector: np.ndarray, sizes: Sequence[int], way: int, *,
                    max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """``F @ vector``: every ``way``-way marginal table of a dense vector over the universe."""
    sizes, way = _check_sizes_and_way(sizes, way)
    vector = check_real_vector("vector", vector, math.prod(sizes))
    k = _marginal_cells(sizes, way)
    check_entries("sizes", k, max_entries, f"the {way}-way tables of sizes {sizes}")
    return _matvec(vector, sizes, way)


def _matvec(vector: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    if way == 2 and _pair_route_fits(sizes):
        moments = _pair_moments(vector, list(sizes))
        rows, columns = _pair_cells(sizes)
        return moments[rows, columns]
    kept = _kept_axes(sizes)
    tensor = vector.reshape([sizes[i] for i in kept])
    tables = []
    for subset in itertools.combinations(range(len(sizes)), way):
        own = {kept.index(i) for i in subset if i in kept}
        # The kept axes stay in increasing order, so the table is raveled row-major.
        tables.append(np.ravel(tensor.sum(axis=tuple(a for a in range(len(kept)) if a not in own))))
    return np.concatenate(tables)


@validate_params(max_entries=POSITIVE_INT)
def marginal_rmatvec(values: np.ndarray, sizes: Sequence[int], way: int, *,
                     max_entries: int = DEFAULT_MAX_ENTRIES) -> np.ndarray:
    """``F.T @ values``: at each universe element, the sum of ``values`` over its cells."""
    sizes, way = _check_sizes_and_way(sizes, way)
    values = check_real_vector("values", values, _marginal_cells(sizes, way))
    check_entries("sizes", math.prod(sizes), max_entries, f"F.T @ values over the universe of sizes {sizes}")
    return _rmatvec(values, sizes, way)


def _rmatvec(values: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    if way == 2 and _pair_route_fits(sizes):
        offsets = _offsets(sizes)
        blocks = np.zeros((offsets[-1], offsets[-1]))
        rows, columns = _pair_cells(sizes)
        blocks[rows, columns] = values
        return _pair_sum(blocks, list(sizes))
    kept = _kept_axes(sizes)
    tensor = np.zeros([sizes[i] for i in kept])
    start = 0
    for subset in itertools.combinations(range(len(sizes)), way):
        cells = math.prod(sizes[i] for i in subset)
        # Broadcasting the table over the other attributes adds it at every element it covers.
        shape = [sizes[i] if i in subset else 1 for i in kept]
        tensor += values[start:start + cells].reshape(shape)
        start += cells
    return tensor.ravel()


@validate_params(max_entries=POSITIVE_INT)
def pair_cells(sizes: Sequence[int], *, max_entries: int = DEFAULT_MAX_ENTRIES) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of every 2-way cell in the block matrix whose ``(a, b)`` block is their table."""
    sizes, _ = _check_sizes_and_way(sizes, 1)
    if len(sizes) < 2:
        raise ValueError(f"sizes: 2-way tables need at least two attributes, got {sizes}")
    check_entries("sizes", _marginal_cells(sizes, 2), max_entries, f"the 2-way tables of sizes {sizes}")
    return _pair_cells(sizes)


def _pair_cells(sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.asarray(sizes, dtype=np.int64)
    offsets = _offsets(counts)[:-1]
    first, second = np.triu_indices(counts.size, 1)
    cells = counts[first] * counts[second]
    pair = np.repeat(np.arange(first.size), cells)
    within = np.arange(int(cells.sum())) - np.repeat(np.cumsum(cells) - cells, cells)
    value, other = np.divmod(within, counts[second][pair])
    return offsets[first][pair] + value, offsets[second][pair] + other


def _offsets(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])


def _pair_route_fits(sizes: Sequence[int]) -> bool:
    """Whether the 2-way route's extra memory stays within that of the vector (plus 1M entries)."""
    if len(sizes) < 2:
        return False
    half = len(sizes) // 2
    high, low = sizes[:half], sizes[half:]
    m_high, m_low, s_high, s_low = math.prod(high), math.prod(low), sum(high), sum(low)
    extra = (s_high + s_low) ** 2 + m_high * s_high + m_low * s_low + m_high * s_low
    return extra <= 2 * m_high * m_low + 2**20


def _kept_axes(sizes: Sequence[int]) -> list[int]:
    # Size-1 attributes add no cells, and numpy caps the number of axes (64), so they are dropped.
    return [i for i, size in enumerate(sizes) if size > 1]


def _one_hot(sizes: Sequence[int]) -> np.ndarray:
    """``Z``: per universe element (row-major), a 1 in the column of each (attribute, value) it has."""
    codes = np.unravel_index(np.arange(math.prod(sizes), dtype=np.int64), sizes)
    offsets = _offsets(sizes)
    encoding = np.zeros((math.prod(sizes), int(offsets[-1])))
    for attribute, code in enumerate(codes):
        encoding[np.arange(code.size), offsets[attribute] + code] = 1.0
    return encoding


def _pair_moments(vector: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``Z^T diag(vector) Z``: the block ``(a, b)`` is the 2-way table of attributes ``a, b``."""
    if len(sizes) == 1:
        return np.diag(vector)
    half = len(sizes) // 2
    high, low = sizes[:half], sizes[half:]
    split = sum(high)
    table = vector.reshape(math.prod(high), math.prod(low))
    moments = np.empty((split + sum(low),) * 2)
    moments[:split, :split] = _pair_moments(table.sum(axis=1), high)
    moments[split:, split:] = _pair_moments(table.sum(axis=0), low)
    cross = _one_hot(high).T @ (table @ _one_hot(low))
    moments[:split, split:] = cross
    moments[split:, :split] = cross.T
    return moments


def _pair_sum(blocks: np.ndarray, sizes: list[int]) -> np.ndarray:
    """At each element ``x``, the sum over pairs ``a < b`` of ``blocks[(a, x_a), (b, x_b)]``."""
    if len(sizes) == 1:
        return np.zeros(sizes[0])
    half = len(sizes) // 2
    high, low = sizes[:half], sizes[half:]
    split = sum(high)
    total = (_one_hot(high) @ blocks[:split, split:]) @ _one_hot(low).T
    total += _pair_sum(blocks[:split, :split], high)[:, None]
    total += _pair_sum(blocks[split:, split:], low)[None, :]
    return total.ravel()


class Unchecked:
    """The kernels above without their argument checks, for :func:`projmech.marginals`' inner loops."""

    marginal_cells = staticmethod(_marginal_cells)
    marginal_rows = staticmethod(_marginal_rows)
    marginal_columns = staticmethod(_columns)
    marginal_matvec = staticmethod(_matvec)
    marginal_rmatvec = staticmethod(_rmatvec)
