"""Rows over any domain whose 2-way tables approach released ones: rows drawn from the
Chow–Liu tree :cite:p:`CL68` of the tables (exact on the tree's edges), then a local search
that changes one value of a row at a time while that lowers ``sum over tables ||counts / n -
released||^2``, in random batches scored against the same tables; a pass that improves by less
than ``MIN_IMPROVEMENT`` halves the batch, and the best rows seen are kept. The same search for
tables of any order: :func:`search_table_rows`. Derivation: :doc:`/theory/relaxation` (section
*From L to rows*).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree

from ..data import Domain
from ..tables import total_correlation

__all__ = ["pair_tables", "tree_rows", "search_rows", "search_table_rows", "DEFAULT_PASSES", "DEFAULT_BATCH"]

#: Most passes of the local search.
DEFAULT_PASSES = 6
#: Rows changed against the same tables at first: a larger batch overshoots the small tables'
#: cells (many rows propose the same change), a smaller one is slower.
DEFAULT_BATCH = 128
MIN_BATCH = 8
#: A pass that lowers the objective by less than this share halves the batch.
MIN_IMPROVEMENT = 0.01


def pair_tables(domain: Domain, answers: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """The 2-way tables ``{(a, b): table}`` (``a < b``, shape ``(size_a, size_b)``) of answers in
    the layout of ``marginals(domain, 2)``: views, not copies."""
    sizes = domain.sizes
    pairs = list(itertools.combinations(range(len(sizes)), 2))
    expected = sum(sizes[a] * sizes[b] for a, b in pairs)
    if answers.shape != (expected,):
        raise ValueError(f"answers: expected {expected} 2-way marginal cells for the domain, got shape {answers.shape}")
    tables, offset = {}, 0
    for a, b in pairs:
        cells = sizes[a] * sizes[b]
        tables[a, b] = answers[offset:offset + cells].reshape(sizes[a], sizes[b])
        offset += cells
    return tables


def _distributions(tables: dict[tuple[int, int], np.ndarray]) -> dict[tuple[int, int], np.ndarray]:
    """Each table with negative cells set to 0 and scaled to total 1 (uniform where it has no
    positive cell): a relaxation without local constraints may release negative cells."""
    out = {}
    for key, table in tables.items():
        positive = np.maximum(table, 0.0)
        total = positive.sum()
        out[key] = positive / total if total > 0 else np.full(table.shape, 1.0 / table.size)
    return out


def tree_rows(domain: Domain, answers: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows drawn from the Chow–Liu tree of the released 2-way tables (module docstring)."""
    sizes = domain.sizes
    d = len(sizes)
    tables = _distributions(pair_tables(domain, answers))
    information = np.zeros((d, d))
    for (a, b), table in tables.items():
        # +1 keeps every edge of the complete graph (scipy drops zero weights), so the tree spans.
        information[a, b] = 1.0 + total_correlation(table)
    tree = minimum_spanning_tree(-information).tocoo()
    neighbours: dict[int, list[int]] = {a: [] for a in range(d)}
    for a, b in zip(tree.row.tolist(), tree.col.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    rows = np.empty((n, d), dtype=np.int64)
    root = tables[0, 1].sum(axis=1)
    rows[:, 0] = _draw(np.broadcast_to(root, (n, sizes[0])), rng)
    visited, stack = {0}, [0]
    while stack:
        parent = stack.pop()
        for child in neighbours[parent]:
            if child in visited:
                continue
            visited.add(child)
            stack.append(child)
            joint = tables[parent, child] if parent < child else tables[child, parent].T
            mass = joint.sum(axis=1, keepdims=True)
            # A parent value of mass 0 is never drawn; its row is left uniform to stay a distribution.
            conditional = np.where(mass > 0, joint / np.where(mass > 0, mass, 1.0), 1.0 / sizes[child])
            rows[:, child] = _draw(conditional[rows[:, parent]], rng)
    return rows


def _draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One value per row of ``probabilities`` (each row a distribution), by inversion."""
    cumulative = np.cumsum(probabilities, axis=1)
    cumulative /= cumulative[:, -1:]
    uniform = np.asarray(rng.random(probabilities.shape[0]))
    return np.minimum((uniform[:, None] >= cumulative).sum(axis=1), probabilities.shape[1] - 1)


def _differences(domain: Domain, answers: np.ndarray, rows: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """``counts / n - answers`` of every 2-way table of the rows."""
    sizes = domain.sizes
    difference = {}
    for (a, b), table in pair_tables(domain, np.asarray(answers, dtype=float)).items():
        counts = np.bincount(rows[:, a] * sizes[b] + rows[:, b], minlength=table.size)
        difference[a, b] = counts.reshape(table.shape) / rows.shape[0] - table
    return difference


def _after_pass(history: list[float], rows: np.ndarray, best: np.ndarray, batch: int
                ) -> tuple[np.ndarray, int | None]:
    """After a pass of a search: the best rows so far, and the next batch (halved when the pass
    improved the objective by less than ``MIN_IMPROVEMENT``; None to stop below ``MIN_BATCH``)."""
    if history[-1] < min(history[:-1]):
        best = rows.copy()
    if history[-1] > (1 - MIN_IMPROVEMENT) * min(history[:-1]):
        return best, None if batch // 2 < MIN_BATCH else batch // 2
    return best, batch


def search_rows(domain: Domain, answers: np.ndarray, rows: np.ndarray, rng: np.random.Generator, *,
                passes: int = DEFAULT_PASSES, batch: int = DEFAULT_BATCH) -> tuple[np.ndarray, list[float]]:
    """Local search on ``rows`` towards the released tables (module docstring): the best rows
    seen, and the objective before the first pass and after each (fewer than ``passes`` once a
    pass at ``MIN_BATCH`` stalls)."""
    sizes = domain.sizes
    d = len(sizes)
    rows = np.array(rows, dtype=np.int64)
    n = rows.shape[0]
    unit = 1.0 / n
    difference = _differences(domain, answers, rows)

    def objective() -> float:
        return float(sum(np.sum(table ** 2) for table in difference.values()))

    history = [objective()]
    best = rows.copy()
    # Moving one value changes the objective by 2/n (S[new] - S[old]) + 2 (d - 1)/n^2, S the sum
    # of the gathered differences: worth it only below this threshold on S[new] - S[old].
    threshold = -(d - 1) * unit
    for _ in range(passes):
        for a in rng.permutation(d).tolist():
            others = [b for b in range(d) if b != a]
            order = rng.permutation(n)
            for start in range(0, n, batch):
                chosen = order[start:start + batch]
                scores = np.zeros((chosen.size, sizes[a]))
                for b in others:
                    scores += (difference[a, b] if a < b else difference[b, a].T)[:, rows[chosen, b]].T
                current = rows[chosen, a]
                target = scores.argmin(axis=1)
                gain = scores[np.arange(chosen.size), target] - scores[np.arange(chosen.size), current]
                moving = gain < threshold
                if not moving.any():
                    continue
                moved, old, new = chosen[moving], current[moving], target[moving]
                for b in others:
                    other = rows[moved, b]
                    if a < b:
                        np.add.at(difference[a, b], (old, other), -unit)
                        np.add.at(difference[a, b], (new, other), unit)
                    else:
                        np.add.at(difference[b, a], (other, old), -unit)
                        np.add.at(difference[b, a], (other, new), unit)
                rows[moved, a] = new
        history.append(objective())
        best, smaller = _after_pass(history, rows, best, batch)
        if smaller is None:
            break
        if smaller < batch:
            batch, rows = smaller, best.copy()  # the difference tables must follow: recount them
            difference = _differences(domain, answers, rows)
    return best, history


def _table_layout(tables: list[tuple[int, ...]], targets: list[np.ndarray],
                  d: int) -> tuple[list[tuple[int, ...]], list[int], dict[int, int]]:
    """The tables as tuples of ints, each table's offset in the concatenated cells (one more at
    the end: the total), and each attribute's size as the targets' shapes give it (checked to
    agree between tables and to have as many axes as the table has attributes)."""
    keys = [tuple(int(a) for a in table) for table in tables]
    if len(keys) != len(targets):
        raise ValueError(f"targets: expected one per table ({len(keys)}), got {len(targets)}")
    sizes: dict[int, int] = {}
    offsets = [0]
    for key, target in zip(keys, targets):
        if target.ndim != len(key) or len(set(key)) != len(key):
            raise ValueError(f"targets: the table {list(key)} needs one axis per distinct attribute, got shape "
                             f"{target.shape}")
        for a, size in zip(key, target.shape):
            if not 0 <= a < d:
                raise ValueError(f"tables: attribute {a} is not a column of the rows ({d} columns)")
            if sizes.setdefault(a, size) != size:
                raise ValueError(f"targets: attribute {a} has {sizes[a]} values in one table and {size} in another")
        offsets.append(offsets[-1] + target.size)
    return keys, offsets, sizes


def _table_differences(tables: list[tuple[int, ...]], targets: list[np.ndarray], offsets: list[int],
                       rows: np.ndarray) -> np.ndarray:
    """``counts / n - target`` of every table of the rows, the tables' cells concatenated
    (C order within a table)."""
    difference = np.empty(offsets[-1])
    for key, target, start in zip(tables, targets, offsets):
        cells = (np.ravel_multi_index(tuple(rows[:, list(key)].T), target.shape) if key
                 else np.zeros(rows.shape[0], dtype=np.int64))
        counts = np.bincount(cells, minlength=target.size)
        difference[start:start + target.size] = counts / rows.shape[0] - target.ravel()
    return difference


#: The most values of an attribute whose scores are summed with the tables along the last axis.
_TABLES_LAST_MAX_VALUES = 16


def search_table_rows(tables: list[tuple[int, ...]], targets: list[np.ndarray], rows: np.ndarray,
                      rng: np.random.Generator, *, passes: int = DEFAULT_PASSES,
                      batch: int = DEFAULT_BATCH) -> tuple[np.ndarray, list[float]]:
    """Local search on ``rows`` towards target tables of any order: :func:`search_rows` for
    tables other than all 2-way ones.

    ``targets[k]`` is the distribution of the table on the columns ``tables[k]``. A row moves to
    the value of lowest score ``S[v]`` (the sum over the tables holding the attribute of their
    ``counts / n - target`` at the row's cell with that value) where the objective's change
    ``2/n (S[new] - S[old]) + 2 t / n^2`` is negative (``t`` the tables holding it). Returns as
    :func:`search_rows` does.

    Examples
    --------
    Two attributes, one table: eight rows at ``(0, 0)`` are moved to the target's counts.

    >>> target = np.array([[0.5, 0.25], [0.0, 0.25]])
    >>> rows = np.zeros((8, 2), dtype=np.int64)
    >>> best, history = search_table_rows([(0, 1)], [target], rows, np.random.default_rng(0), batch=1)
    >>> np.bincount(best[:, 0] * 2 + best[:, 1], minlength=4).tolist(), history[0], history[-1]
    ([4, 2, 0, 2], 0.375, 0.0)
    """
    rows = np.array(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ValueError(f"rows: expected a non-empty 2-d array, got shape {rows.shape}")
    n, d = rows.shape
    targets = [np.asarray(target, dtype=float) for target in targets]
    keys, offsets, sizes = _table_layout(list(tables), targets, d)
    unit = 1.0 / n
    # Per attribute: the tables holding it, the stride of its axis in each (C order) and the
    # flat offset of the table's cells in the concatenation.
    holding = {a: [k for k, key in enumerate(keys) if a in key] for a in sorted(sizes)}
    # Each table's strides, attribute by attribute (C order).
    table_strides = [{b: math.prod(target.shape[axis + 1:]) for axis, b in enumerate(key)}
                     for key, target in zip(keys, targets)]
    strides = {a: np.array([table_strides[k][a] for k in holding[a]], dtype=np.int64) for a in holding}
    difference = _table_differences(keys, targets, offsets, rows)

    def objective() -> float:
        return float(np.sum(difference ** 2))

    def bases(a: int) -> np.ndarray:
        """Each row's flat cell, with ``a``'s value 0, in every table holding ``a``: shape
        ``(n, t_a)``. The other attributes do not change while ``a`` is searched."""
        columns = np.ascontiguousarray(rows.T)  # one attribute's values contiguous
        out = np.empty((n, len(holding[a])), dtype=np.int64)
        cell = np.empty(n, dtype=np.int64)
        for column, k in enumerate(holding[a]):
            cell.fill(offsets[k])
            for b, stride in table_strides[k].items():
                if b != a:
                    cell += stride * columns[b]
            out[:, column] = cell
        return out

    history = [objective()]
    best = rows.copy()
    attributes = np.array(sorted(sizes), dtype=np.int64)
    for _ in range(passes):
        for a in rng.permutation(attributes).tolist():
            base, stride = bases(a), strides[a]
            # The scores sum over the tables; with few values the tables run along the last axis,
            # whose sum is contiguous (two to three times faster there, slower for many values).
            tables_last = sizes[a] <= _TABLES_LAST_MAX_VALUES
            steps = (stride[None, None, :] * np.arange(sizes[a])[None, :, None] if tables_last  # (1, size_a, t_a)
                     else stride[None, :, None] * np.arange(sizes[a])[None, None, :])  # (1, t_a, size_a)
            # A move changes the objective by 2/n (S[new] - S[old]) + 2 t_a / n^2: worth it
            # only where S[new] - S[old] < -t_a / n.
            threshold = -len(holding[a]) * unit
            order = rng.permutation(n)
            for start in range(0, n, batch):
                chosen = order[start:start + batch]
                if tables_last:
                    scores = difference[base[chosen][:, None, :] + steps].sum(axis=2)
                else:
                    scores = difference[base[chosen][:, :, None] + steps].sum(axis=1)
                current = rows[chosen, a]
                target = scores.argmin(axis=1)
                index = np.arange(chosen.size)
                moving = scores[index, target] - scores[index, current] < threshold
                if not moving.any():
                    continue
                moved_cells = base[chosen[moving]]
                np.add.at(difference, (moved_cells + stride * current[moving, None]).ravel(), -unit)
                np.add.at(difference, (moved_cells + stride * target[moving, None]).ravel(), unit)
                rows[chosen[moving], a] = target[moving]
        history.append(objective())
        best, smaller = _after_pass(history, rows, best, batch)
        if smaller is None:
            break
        if smaller < batch:
            batch, rows = smaller, best.copy()  # the differences must follow: recount them
            difference = _table_differences(keys, targets, offsets, rows)
    return best, history
