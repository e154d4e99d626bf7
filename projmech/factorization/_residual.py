"""Factorizations of table workloads over the residual basis: the closed form behind
:class:`~projmech.factorization._structured.ResidualFactorization`.

The strategy measures, for each attribute subset, contrasts orthogonal to ``1``, so the error and
the sensitivity split over the subsets and the optimal coefficients are in closed form. For
marginals (Helmert contrasts) it is the optimum over all strategies :cite:p:`XHZK23`; for range
blocks, within its class (:func:`grouped_lower_bound`). Derivations: :doc:`/theory/structured_factorization`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["helmert", "subsets_of", "AttributeBasis", "residual_weights", "grouped_lower_bound", "Subset"]

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


@dataclass(frozen=True)
class AttributeBasis:
    """One attribute's part of a residual strategy: its block ``B`` (``k x n``) and contrasts
    ``C`` (``r x n``, rows orthogonal to ``1``), with the three numbers the closed form needs
    and the maps the reconstruction applies."""

    block: np.ndarray
    contrasts: np.ndarray

    @property
    def size(self) -> int:
        return self.block.shape[1]

    @cached_property
    def tau(self) -> float:
        """``tr(B^T B (C^T C)^+) = ||B C^+||_F^2``: the block's error through the contrasts."""
        return float(np.sum(self.reconstruction**2))

    @cached_property
    def kappa(self) -> float:
        """``max diag(C^T C)``: the contrasts' largest squared column norm."""
        return float(np.max(np.sum(self.contrasts**2, axis=0)))

    @cached_property
    def beta(self) -> float:
        """``||B 1||^2 / n^2``: the block's error through the total."""
        return float(np.sum(self.mean**2))

    @cached_property
    def reconstruction(self) -> np.ndarray:
        """``B C^+`` (``k x r``): the block's answers from the contrasts' measurements."""
        return self.block @ np.linalg.pinv(self.contrasts)

    @cached_property
    def mean(self) -> np.ndarray:
        """``B 1 / n``: the block's answers from the total's measurement (per unit of total)."""
        return self.block.mean(axis=1)

    @cached_property
    def defect(self) -> float:
        """``||B (C^+ C + 1 1^T / n) - B||_{1->2}``: zero when the contrasts span ``1^⊥``."""
        realized = self.reconstruction @ self.contrasts + np.outer(self.mean, np.ones(self.size))
        return float(np.linalg.norm(realized - self.block, axis=0).max())


def residual_weights(bases: Sequence[AttributeBasis | None], terms: Sequence[tuple[Subset, float]]
                     ) -> tuple[float, dict[Subset, float], dict[Subset, float]]:
    """``(T, c, a)``: ``T = sum_A sqrt(a_A s_A)`` (so ``k gamma^2 = T^2``), the coefficient ``c_A``
    of each measured subset (``||M||_{1->2} = 1``) and the error weights ``a_A``, for the table
    terms ``(S_t, w_t)`` on attributes with these bases (None where no term has the attribute)."""
    beta = {i: basis.beta for i, basis in enumerate(bases) if basis is not None}
    tau = {i: basis.tau for i, basis in enumerate(bases) if basis is not None}
    kappa = {i: basis.kappa for i, basis in enumerate(bases) if basis is not None}
    totals: dict[Subset, float] = {}
    for subset, weight in terms:
        for part in subsets_of(subset):
            outside = math.prod(beta[i] for i in subset if i not in part)
            totals[part] = totals.get(part, 0.0) + weight**2 * outside
    errors = {part: value * math.prod(tau[i] for i in part) for part, value in totals.items()}
    sensitivities = {part: math.prod(kappa[i] for i in part) for part in errors}
    measured = {part: value for part, value in errors.items() if value > 0 and sensitivities[part] > 0}
    total = sum(math.sqrt(measured[part] * sensitivities[part]) for part in measured)
    coefficients = {part: math.sqrt(math.sqrt(measured[part] / sensitivities[part]) / total) for part in measured}
    return total, coefficients, measured


def grouped_lower_bound(sizes: Sequence[int], terms: Sequence[tuple[Subset, float]],
                        ranged: Mapping[int, tuple[float, int]],
                        num_queries: int) -> float:
    """A certified lower bound on gamma of a table workload whose attributes in ``ranged`` carry a range
    block (``{attribute: (lower bound on its gamma, its queries)}``): the sum of the optima of the
    groups of terms with the same range attributes, each a Kronecker product with marginals.
    """
    groups: dict[Subset, list[tuple[Subset, float]]] = {}
    for subset, weight in terms:
        groups.setdefault(tuple(i for i in subset if i in ranged), []).append((subset, weight))
    total = 0.0
    for ranged_part, members in groups.items():
        rest = [i for i in range(len(sizes)) if i not in ranged_part]
        position = {attribute: index for index, attribute in enumerate(rest)}
        bases: list[AttributeBasis | None] = [AttributeBasis(np.eye(sizes[i]), helmert(sizes[i])) for i in rest]
        marginal = [(tuple(position[i] for i in subset if i not in ranged), weight) for subset, weight in members]
        squared_error = residual_weights(bases, marginal)[0] ** 2  # k_marg gamma_marg^2
        for attribute in ranged_part:
            bound, queries = ranged[attribute]
            squared_error *= queries * bound**2
        total += squared_error
    return math.sqrt(total / num_queries)
