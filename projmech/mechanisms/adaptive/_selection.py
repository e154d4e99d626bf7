"""The adaptive mechanism's selection: candidates, AIM's size rule, scores and the exponential mechanism."""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Mapping

import numpy as np

from .._selection import exponential_mechanism

Table = tuple[int, ...]


def candidates(tables: tuple[Table, ...]) -> tuple[tuple[Table, ...], dict[Table, float]]:
    """The workload's tables and their non-empty sub-tables, weighted as AIM does by the attributes shared."""
    closure = {subset for table in tables for size in range(1, len(table) + 1)
               for subset in itertools.combinations(table, size)}
    # sum over the tables of |c & t| is, attribute by attribute of c, the number of tables holding it.
    holding = collections.Counter(a for table in tables for a in set(table))
    weights = {c: float(sum(holding[a] for a in set(c))) for c in closure}
    return tuple(sorted(closure, key=lambda s: (len(s), s))), weights


def cells(table: Table, sizes: tuple[int, ...]) -> int:
    """The cells of a table."""
    return math.prod(sizes[a] for a in table)


def fitting(candidates: Mapping[Table, int], sizes: tuple[int, ...], measured: set[Table], allowed: float
            ) -> list[Table]:
    """AIM's size rule: candidates (each to its cells) inside a measured table, or within ``allowed`` cells
    with the measured ones."""
    measured_cells = sum(cells(table, sizes) for table in measured)
    inside = {subset for table in measured for size in range(1, len(table) + 1)
              for subset in itertools.combinations(sorted(table), size)}
    return [c for c, count in candidates.items() if c in inside or measured_cells + count <= allowed]


def expected_noise(sigma: float, cells: int) -> float:
    """The expected l1 norm of Gaussian noise of scale ``sigma`` on ``cells`` counts."""
    return math.sqrt(2.0 / math.pi) * sigma * cells


def select(choices: list[Table], weights: dict[Table, float], counts: dict[Table, np.ndarray], size: float,
           before: dict[Table, np.ndarray], sigma: float, epsilon: float, score_sensitivity: float,
           rng: np.random.Generator) -> Table:
    """Draw the table whose estimate is worst for the noise a measurement adds (weighted l1 error less that noise)."""
    cell_counts = np.array([before[c].size for c in choices])
    starts = np.concatenate([[0], np.cumsum(cell_counts)[:-1]])
    errors = np.add.reduceat(np.abs(np.concatenate([counts[c].ravel() for c in choices])
                                    - size * np.concatenate([before[c].ravel() for c in choices])), starts)
    scores = np.array([weights[c] for c in choices]) * (errors - expected_noise(sigma, 1) * cell_counts)
    sensitivity = score_sensitivity * max(weights[c] for c in choices)
    return choices[exponential_mechanism(scores, epsilon, sensitivity, rng)]
