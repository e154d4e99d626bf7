"""The optimal factorization of a marginal workload, in closed form, over the residual basis.

A marginal workload is a union of Kronecker products with identity on the attributes of a
subset ``S`` and total elsewhere, each with a weight ``w_S``. On each attribute, ``I = P_1 + P_0``
and ``1 1^T = n P_0`` with ``P_0 = 1 1^T / n``, so every Gram matrix of such a workload is
diagonal in the orthogonal decomposition ``Q_A = ⊗_{i in A} P_1 ⊗_{i not in A} P_0`` over
attribute subsets ``A`` (the residual basis of Xiao, Wang & Kifer, NeurIPS 2023): its
eigenvalue on ``Q_A``, of multiplicity ``d_A = prod_{i in A} (n_i - 1)``, is
``lambda_A = sum_{S ⊇ A} w_S^2 prod_{i not in S} n_i``. The symmetry of the problem puts an
optimal strategy ``X = M^T M`` in the same algebra, and there ``k gamma^2 =
min sum_A lambda_A d_A / x_A`` subject to ``sum_A x_A d_A <= m`` has the closed form
``x_A ∝ sqrt(lambda_A)``, ``gamma = sum_A d_A sqrt(lambda_A) / sqrt(k m)``: the singular-value
lower bound ``||F||_* / sqrt(k m)`` exactly, so the optimum is certified with a zero gap
(docs/theory/structured_factorization.md derives it).

The strategy measures, for each ``A`` with ``lambda_A > 0``, the residual of the ``A``-marginal:
``c_A (⊗_{i in A} H_i ⊗_{i not in A} 1^T) h`` with ``H_i`` the Helmert contrasts of attribute
``i`` (orthonormal rows orthogonal to ``1``). Everything here is computed on the attribute
subsets and their tables, never on the universe.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["helmert", "residual_eigenvalues", "optimal_residual_weights", "subsets_of", "Subset"]

#: An attribute subset, as increasing attribute positions.
Subset = tuple[int, ...]


def helmert(n: int) -> np.ndarray:
    """The ``(n - 1) x n`` Helmert contrasts: orthonormal rows, each orthogonal to the ones
    vector, so that ``H^T H = I - 1 1^T / n``. Row ``j`` compares value ``j`` with the ``j``
    values before it."""
    rows = np.zeros((n - 1, n))
    for j in range(1, n):
        rows[j - 1, :j] = 1.0
        rows[j - 1, j] = -float(j)
        rows[j - 1] /= math.sqrt(j * (j + 1))
    return rows


def subsets_of(subset: Subset) -> Iterable[Subset]:
    """Every subset of ``subset`` (the empty one first), each as increasing positions."""
    for size in range(len(subset) + 1):
        yield from itertools.combinations(subset, size)


def residual_eigenvalues(sizes: Sequence[int], weights: Mapping[Subset, float]) -> dict[Subset, float]:
    """``lambda_A / m`` for every subset ``A`` of a subset in ``weights`` (its downward closure):
    the eigenvalues of the Gram matrix of the marginal workload with squared weights
    ``weights[S]``, divided by the universe size ``m`` so that they stay in floating-point range
    for any number of attributes: ``sum_{S ⊇ A} w_S^2 / prod_{i in S} n_i``."""
    scaled = {subset: weight / math.prod(sizes[i] for i in subset) for subset, weight in weights.items()}
    eigenvalues: dict[Subset, float] = {}
    for subset, value in scaled.items():
        for part in subsets_of(subset):
            eigenvalues[part] = eigenvalues.get(part, 0.0) + value
    return eigenvalues


def optimal_residual_weights(sizes: Sequence[int], weights: Mapping[Subset, float],
                             num_queries: int) -> tuple[float, dict[Subset, float]]:
    """``(gamma, c)``: the optimal factorization norm of the marginal workload with squared
    weights ``weights`` and ``num_queries`` queries, and the coefficient ``c_A`` of each
    residual measurement in the optimal strategy (scaled so that ``||M||_{1->2} = 1``)."""
    eigenvalues = residual_eigenvalues(sizes, weights)
    multiplicity = {subset: math.prod(sizes[i] - 1 for i in subset) for subset in eigenvalues}
    roots = {subset: math.sqrt(value) for subset, value in eigenvalues.items() if value > 0 and multiplicity[subset]}
    total = sum(multiplicity[subset] * root for subset, root in roots.items())
    gamma = total / math.sqrt(num_queries)
    # c_A^2 = x_A / prod_{i not in A} n_i with x_A = m sqrt(lambda_A) / sum_B d_B sqrt(lambda_B).
    coefficients = {subset: math.sqrt(math.prod(sizes[i] for i in subset) * root / total)
                    for subset, root in roots.items()}
    return gamma, coefficients
