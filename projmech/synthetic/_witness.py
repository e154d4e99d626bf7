"""Rows from a witness: weights over cells rounded to counts (largest remainders), for a
projection onto K_Q (one witness over the universe) or onto disjoint tables (one per table)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._sparse import issparse
from ..bodies import ProjectionResult, TablesResult, table_groups
from ..data import Dataset, Domain
from ..workloads import Workload
from ._result import SyntheticData, _synthetic


def _rounded_cells(cells: np.ndarray, weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` of ``cells`` in random order, cell ``j`` ``floor(n w_j)`` times (``w`` the weights
    normalized) and the remaining ones to the largest remainders (ties in random order): every
    count within 1 of ``n w_j``."""
    scaled = n * weights / weights.sum()
    counts = np.floor(scaled).astype(np.int64)
    remainders = scaled - counts
    left = n - int(counts.sum())
    order = np.lexsort((rng.random(cells.size), -remainders))
    counts[order[:left]] += 1
    return rng.permutation(np.repeat(cells, counts))


def _witness_cells(result: ProjectionResult, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` cells of ``result``'s witness in random order (:func:`_rounded_cells`)."""
    cells = result.support
    values = result.weights[cells]  # the witness's positive weights, never the dense witness
    weights = values.toarray().ravel() if issparse(values) else np.asarray(values, dtype=float)
    if weights.size != cells.size or weights.size == 0:
        raise ValueError("result: its witness has no positive weight")
    return _rounded_cells(cells, weights, n, rng)


def _rows_from_witness(domain: Domain, result: ProjectionResult, n: int, rng: np.random.Generator,
                       workload: Workload) -> SyntheticData:
    """Rows by largest-remainder rounding of ``n w``, refusing a workload whose answers of the
    witness are not the projected ones."""
    if workload.universe_size != domain.size or result.answers.shape != (workload.num_queries,):
        raise ValueError(f"result: its answers ({result.answers.size}) and the workload "
                         f"({workload.num_queries} queries over {workload.universe_size} cells) must match the "
                         f"domain ({domain.size} cells)")
    # The shapes cannot tell two workloads of one size apart (2-way marginals of other attribute
    # pairs, or prefix and all ranges' blocks): the witness's answers under this workload must be
    # the projected answers, up to the rounding of the product.
    recomputed = workload.answer(result.weights)
    scale = 1.0 + float(np.max(np.abs(result.answers), initial=0.0))
    if not np.allclose(recomputed, result.answers, rtol=0.0, atol=1e-8 * scale):
        difference = float(np.max(np.abs(recomputed - result.answers)))
        raise ValueError(f"workload: {workload.name} is not the workload this result projected (its answers of the "
                         f"witness differ from the result's by up to {difference:.3g}); pass the projected workload")
    rows = np.column_stack(np.unravel_index(_witness_cells(result, n, rng), domain.sizes)).astype(np.int64)
    data = Dataset(rows, domain)
    return _synthetic(data, 0.0, workload.answer_data(data) - result.answers, "witness")


def _rows_from_tables(domain: Domain, result: TablesResult, n: int, rng: np.random.Generator,
                      workload: Workload | None) -> SyntheticData:
    """Rows from disjoint tables: each table's witness rounded to ``n`` cells in its own random
    order (the tables drawn independently). Without ``workload``, answered through the result's
    own queries."""
    if workload is None:
        if result._groups is None:
            raise ValueError("workload: required for a TablesResult that does not hold its queries; pass "
                             "workload= (the projected workload)")
        return _rows_of_tables(domain, result, result._groups, n, rng)
    groups = table_groups(workload)
    if isinstance(groups, str) or groups.attributes != result.tables or result.answers.shape != (
            workload.num_queries,) or workload.universe_size != domain.size:
        raise ValueError(f"workload: {workload.name} is not the workload this result projected over the tables "
                         f"{[list(table) for table in result.tables]} of this domain; pass the projected workload")
    # Tables of one shape cannot tell two workloads apart (prefix and identity on one attribute
    # of 17 values): each part's witness must give this workload's projected answers.
    for group, (rows_of, part) in enumerate(zip(groups.rows, result.parts)):
        weights_of = part.weights.toarray().ravel() if issparse(part.weights) else np.asarray(part.weights, dtype=float)
        if not np.allclose(groups.matrix(group) @ weights_of, result.answers[rows_of], rtol=0.0, atol=1e-8):
            raise ValueError(f"workload: {workload.name} is not the workload this result projected (its tables' "
                             "witnesses give other answers); pass the projected workload")
    return _rows_of_tables(domain, result, groups, n, rng)


def _rows_of_tables(domain: Domain, result: TablesResult, groups: Any, n: int,
                    rng: np.random.Generator) -> SyntheticData:
    """The rows of :func:`_rows_from_tables`, answered through ``groups`` (the projected
    workload's :class:`~projmech.bodies.TableGroups`)."""
    if groups.attributes != result.tables or groups.sizes != tuple(domain.sizes):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} over sizes {list(groups.sizes)} do "
                         f"not match the domain's sizes {list(domain.sizes)}")
    # An attribute no query reads takes uniform values: no answer depends on it.
    rows = rng.integers(0, np.asarray(domain.sizes), size=(n, len(domain.sizes)), dtype=np.int64)
    for attributes, part in zip(result.tables, result.parts):
        cells = _witness_cells(part, n, rng)
        rows[:, list(attributes)] = np.column_stack(np.unravel_index(cells, [domain.sizes[i] for i in attributes]))
    answers = np.empty(result.answers.size)
    answers[groups.constant_rows] = groups.constants
    for group, attributes in enumerate(result.tables):
        shape = [domain.sizes[i] for i in attributes]
        cells = np.ravel_multi_index(tuple(rows[:, list(attributes)].T), shape)
        answers[groups.rows[group]] = groups.matrix(group) @ (np.bincount(cells, minlength=math.prod(shape)) / n)
    return _synthetic(Dataset(rows, domain), 0.0, answers - result.answers, "tables")
