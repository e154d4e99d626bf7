"""Factorizations F = R M of a workload (the matrix / factorization mechanism).

Measure the strategy ``M h`` with Gaussian noise, reconstruct ``R (M h + Z)`` (seed 001, §2.1).
The noise on the answers is ``R Z``, so with ``sigma`` calibrated to the strategy's sensitivity
``(2/n) ||M||_{1->2}`` the expected squared error is ``sigma^2 ||R||_F^2`` (seed 001, eq. 24-29),
and the factorization norm ``gamma = ||R||_F ||M||_{1->2} / sqrt(k)`` is the quantity to minimize.

This module holds the :class:`Factorization` value and the fixed strategies; the optimal
``gamma(F)`` (issue 3) builds on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .privacy import ApproxDP, Neighbouring, ZCDP, gaussian_sigma
from .workloads import Workload, check_positive_int, as_query_matrix, column_norm

__all__ = ["Factorization", "identity_strategy", "total_strategy", "hierarchical_strategy"]


def _dense(matrix: Any) -> np.ndarray:
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix, dtype=float)


@dataclass(frozen=True, eq=False)
class Factorization:
    """A factorization ``R M ≈ F`` of a ``k x m`` workload matrix.

    Attributes
    ----------
    strategy : ndarray, shape (l, m)
        ``M``, the queries that are measured with noise.
    reconstruction : ndarray, shape (k, l)
        ``R``, the post-processing that maps measurements to workload answers.
    workload_matrix : ndarray, shape (k, m)
        ``F``, the matrix being factorized.
    """

    strategy: np.ndarray
    reconstruction: np.ndarray
    workload_matrix: np.ndarray

    def __post_init__(self) -> None:
        k, m = self.workload_matrix.shape
        ell = self.strategy.shape[0]
        if self.strategy.shape != (ell, m):
            raise ValueError(f"strategy: expected {m} columns to match the workload, got shape {self.strategy.shape}")
        if self.reconstruction.shape != (k, ell):
            raise ValueError(f"reconstruction: expected shape ({k}, {ell}), got {self.reconstruction.shape}")

    @classmethod
    def from_strategy(cls, workload: Workload | Any, strategy: Any, rtol: float = 1e-9) -> Factorization:
        """The least-squares reconstruction ``R = F M^+`` for a given strategy ``M``.

        Raises
        ------
        ValueError
            If ``F`` is not in the row space of ``M`` (``||F M^+ M - F||_{1->2}`` above
            ``rtol * max(1, ||F||_{1->2})``): no reconstruction answers the workload exactly.
        """
        F = _dense(workload.matrix if isinstance(workload, Workload) else as_query_matrix(workload, "workload"))
        M = _dense(as_query_matrix(strategy, "strategy"))
        if M.shape[1] != F.shape[1]:
            raise ValueError(f"strategy: has {M.shape[1]} columns, the workload {F.shape[1]}")
        R = F @ np.linalg.pinv(M)
        residual = column_norm(R @ M - F)
        if residual > rtol * max(1.0, column_norm(F)):
            raise ValueError(
                f"strategy: the workload is not in its row space (||F M^+ M - F||_1->2 = {residual:.3e}); "
                "no reconstruction R gives R M = F"
            )
        return cls(strategy=M, reconstruction=R, workload_matrix=F)

    @property
    def num_queries(self) -> int:
        return self.workload_matrix.shape[0]

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``."""
        return column_norm(self.strategy)

    @property
    def gamma(self) -> float:
        """``||R||_F ||M||_{1->2} / sqrt(k)`` (seed 001, eq. 29 and Definition 2.5)."""
        return float(np.linalg.norm(self.reconstruction) * self.strategy_sensitivity / math.sqrt(self.num_queries))

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2}``: zero (to rounding) for an exact factorization."""
        return column_norm(self.reconstruction @ self.strategy - self.workload_matrix)

    def expected_rmse(self, privacy: ZCDP | ApproxDP, n: int,
                      neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE) -> float:
        """``sqrt(E (1/k) ||R Z||^2) = sigma ||R||_F / sqrt(k)`` for the factorization mechanism.

        ``sigma`` is calibrated to the strategy's l2 sensitivity, so this equals
        ``c * gamma`` with ``c = sigma / ||M||_{1->2}`` (seed 001, eq. 29). By Jensen it bounds
        ``E[(1/sqrt k) ||R Z||]`` from above. The approximation error ``(R M - F) h`` of an
        inexact factorization is not included.
        """
        relation = Neighbouring.parse(neighbouring)
        sigma = gaussian_sigma(relation.sensitivity(self.strategy_sensitivity, n), privacy)
        return sigma * float(np.linalg.norm(self.reconstruction)) / math.sqrt(self.num_queries)


def identity_strategy(m: int) -> np.ndarray:
    """``M = I``: measure every cell (the Gaussian mechanism on the histogram)."""
    return np.eye(check_positive_int("m", m))


def total_strategy(m: int) -> np.ndarray:
    """``M = 1^T``: measure only the total (enough for a repeated total query)."""
    return np.ones((1, check_positive_int("m", m)))


def hierarchical_strategy(m: int, branching: int = 2) -> np.ndarray:
    """The hierarchical (``branching``-ary tree) strategy over an ordered universe of size ``m``.

    One row per tree node: the indicator of the node's interval. The root covers ``[0, m)``;
    each node of width ``w > 1`` splits into ``branching`` children of near-equal widths, down to
    single cells. With ``branching=2`` this is the binary tree mechanism written as a
    factorization (seed 001, Exercise 2.1; seed 003).
    """
    m = check_positive_int("m", m)
    if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)) or branching < 2:
        raise ValueError(f"branching: must be an integer >= 2, got {branching!r}")
    rows = []
    intervals = [(0, m)]
    while intervals:
        children = []
        for low, high in intervals:
            row = np.zeros(m)
            row[low:high] = 1.0
            rows.append(row)
            if high - low > 1:
                edges = np.linspace(low, high, min(branching, high - low) + 1).round().astype(int)
                children += [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
        intervals = children
    return np.vstack(rows)
