"""Products with a marginal workload's matrix F without building F.

For the workload of every ``way``-way marginal table of a domain (``projmech.marginals``), ``F @ w``
is the list of marginal tables of a distribution ``w`` over the universe and ``F.T @ u`` adds,
at every universe element, the entries of ``u`` at the cells the element falls in. Both are
computed here from the domain's shape alone, in ``O(m)`` memory for a universe of ``m``
elements (F itself has ``m * C(d, way)`` nonzeros: 200 million at ``d = 20`` binary attributes).

2-way marginals, the workload the projection mechanism is benchmarked on, take a faster route:
split the attributes into a first half ``H`` and a second half ``L``, so that a universe index
is ``(index in H's universe) * m_L + (index in L's universe)``. The pairs inside ``H`` and inside
``L`` are the same problem on a universe of about ``sqrt(m)`` elements (recursion), and all
cross pairs at once are one dense matrix product with the one-hot encodings ``Z_H``, ``Z_L`` of
the two halves: ``Z_H^T W Z_L`` for ``F @ w`` (``W`` = ``w`` reshaped ``m_H x m_L``) and
``Z_H G Z_L^T`` for ``F.T @ u`` (``G`` = the cross tables of ``u`` as one block matrix). That is
``O(m * sum(sizes[L]))`` BLAS flops instead of ``C(d, 2)`` passes over ``m`` elements: at
``d = 20`` binary attributes about 20 ms instead of 0.4 s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["marginal_matvec", "marginal_rmatvec", "marginal_columns", "marginal_rows", "pair_cells"]


def marginal_rows(codes: Sequence[np.ndarray], sizes: Sequence[int], way: int) -> np.ndarray:
    """Row of F (the marginal cell) that each element falls in, one row of the result per table.

    ``codes[i]`` holds attribute ``i``'s value for each of ``q`` elements; the result has shape
    ``(C(d, way), q)``, tables in the order of :func:`projmech.marginals`.
    """
    rows = []
    offset = 0
    for subset in itertools.combinations(range(len(sizes)), way):
        sub_sizes = [sizes[i] for i in subset]
        rows.append(offset + np.ravel_multi_index(tuple(codes[i] for i in subset), sub_sizes))
        offset += math.prod(sub_sizes)
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


def marginal_columns(indices: np.ndarray, sizes: Sequence[int], way: int, num_queries: int) -> np.ndarray:
    """The columns ``F[:, indices]`` as a dense ``(k, len(indices))`` array of zeros and ones."""
    codes = np.unravel_index(np.asarray(indices, dtype=np.int64), sizes)
    rows = marginal_rows(codes, sizes, way)
    columns = np.zeros((num_queries, rows.shape[1]))
    columns[rows, np.arange(rows.shape[1])] = 1.0
    return columns


def marginal_matvec(vector: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    """``F @ vector``: every ``way``-way marginal table of a dense vector over the universe."""
    if way == 2 and len(sizes) >= 2:
        moments = _pair_moments(vector, list(sizes))
        rows, columns = pair_cells(sizes)
        return moments[rows, columns]
    kept = _kept_axes(sizes)
    tensor = vector.reshape([sizes[i] for i in kept])
    tables = []
    for subset in itertools.combinations(range(len(sizes)), way):
        own = {kept.index(i) for i in subset if i in kept}
        # The kept axes stay in increasing order, so the table is raveled row-major.
        tables.append(np.ravel(tensor.sum(axis=tuple(a for a in range(len(kept)) if a not in own))))
    return np.concatenate(tables)


def marginal_rmatvec(values: np.ndarray, sizes: Sequence[int], way: int) -> np.ndarray:
    """``F.T @ values``: at each universe element, the sum of ``values`` over its cells."""
    if way == 2 and len(sizes) >= 2:
        offsets = _offsets(sizes)
        blocks = np.zeros((offsets[-1], offsets[-1]))
        rows, columns = pair_cells(sizes)
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


def pair_cells(sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of every 2-way marginal cell in the ``sum(sizes)``-square block matrix
    whose ``(a, b)`` block is the table of attributes ``a < b``, in the layout of
    :func:`projmech.marginals`: pairs lexicographic (as ``triu_indices``), cells row-major."""
    sizes = np.asarray(sizes, dtype=np.int64)
    offsets = _offsets(sizes)[:-1]
    first, second = np.triu_indices(sizes.size, 1)
    cells = sizes[first] * sizes[second]
    pair = np.repeat(np.arange(first.size), cells)
    within = np.arange(int(cells.sum())) - np.repeat(np.cumsum(cells) - cells, cells)
    value, other = np.divmod(within, sizes[second][pair])
    return offsets[first][pair] + value, offsets[second][pair] + other


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])


def _kept_axes(sizes: Sequence[int]) -> list[int]:
    # Size-1 attributes add no cells, and numpy caps the number of axes (64), so they are dropped.
    return [i for i, size in enumerate(sizes) if size > 1]


def _one_hot(sizes: Sequence[int]) -> np.ndarray:
    """``Z``: one row per element of the universe of ``sizes`` (row-major), one column per
    (attribute, value), a 1 where the element has that value."""
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
