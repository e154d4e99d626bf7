"""Optimal factorizations that keep a workload's structure: Kronecker products and marginals.

**Kronecker products.** For ``F = F_1 ⊗ ... ⊗ F_d`` the optimal factorization norm multiplies,
``gamma(F) = prod_i gamma(F_i)``, with strategy ``M_1 ⊗ ... ⊗ M_d`` and reconstruction
``R_1 ⊗ ... ⊗ R_d``: ``||R||_F``, ``||M||_{1->2}`` and ``k`` all multiply, and so does the dual
bound ``||F diag(q)^1/2||_* / sqrt(k)`` at the product weights ``q = q_1 ⊗ ... ⊗ q_d`` (nuclear
norms of Kronecker products multiply), so the per-factor certificates certify the product.

**Marginal workloads** (unions of Kronecker products of scaled identities and totals): optimal
over all strategies in closed form on the residual basis; see
:mod:`projmech.marginal_factorization` for the derivation and docs/theory for both proofs.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

import numpy as np

from ._sparse import QueryMatrix
from .counting import table_counts
from .data import Dataset
from .domain import Domain
from .factorization import Factorization
from .marginal_factorization import Subset, helmert, optimal_residual_weights, residual_eigenvalues, subsets_of
from .solve import SolveStats, Status
from .validation import DEFAULT_MAX_ENTRIES, check_entries, format_count
from .workloads import Kron, Workload
from .workloads.structured import along_axis

__all__ = ["KronFactorization", "ResidualFactorization", "ResidualQueries", "UnionKronFactorization",
           "optimize_kron_strategy"]


class KronFactorization(Factorization):
    """``(R_1 ⊗ ... ⊗ R_d)(M_1 ⊗ ... ⊗ M_d) = F_1 ⊗ ... ⊗ F_d`` from one factorization per
    factor: the strategy is their Kronecker product (never densified), R is applied factor by
    factor, and ``gamma``, ``||R||_F`` and the lower bound are the products of the factors'.

    Parameters
    ----------
    workload : Kron
    factors : sequence of Factorization
        One per factor of ``workload``, in order.
    stats : SolveStats, optional
    """

    def __init__(self, workload: Kron, factors: Sequence[Factorization], *, stats: SolveStats | None = None) -> None:
        if not isinstance(workload, Kron):
            raise TypeError(f"workload: expected a Kron workload, got {type(workload).__name__}")
        factors = tuple(factors)
        if len(factors) != len(workload.factors):
            raise ValueError(f"factors: expected {len(workload.factors)} factorizations, got {len(factors)}")
        for index, (fact, factor) in enumerate(zip(factors, workload.factors)):
            if not isinstance(fact, Factorization):
                raise TypeError(f"factors[{index}]: expected a Factorization, got {type(fact).__name__}")
            if fact.workload.shape != factor.shape:
                raise ValueError(f"factors[{index}]: factorizes a {fact.workload.shape} workload, "
                                 f"the factor is {factor.shape}")
        self.workload = workload
        self.factors = factors
        self.strategy = Kron([fact.strategy for fact in factors], domain=workload.domain, name="strategy")
        bounds = [fact.lower_bound for fact in factors if fact.lower_bound is not None]
        self.lower_bound = math.prod(bounds) if len(bounds) == len(factors) else None
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        tensor = measurements.reshape([fact.num_measurements for fact in self.factors])
        for axis, fact in enumerate(self.factors):
            tensor = along_axis(fact._reconstruct_block, tensor, axis)
        return tensor.ravel()

    @property
    def reconstruction_norm(self) -> float:
        return math.prod(fact.reconstruction_norm for fact in self.factors)

    @property
    def strategy_sensitivity(self) -> float:
        return math.prod(fact.strategy_sensitivity for fact in self.factors)

    @cached_property
    def residual(self) -> float:
        """An upper bound on ``||R M - F||_{1->2}`` from the factors' residuals ``r_j``: writing
        ``⊗A_i - ⊗F_i`` (``A_i = R_i M_i``) as a telescoping sum and taking column norms, which
        multiply over Kronecker factors, ``sum_j prod_{i<j} (||F_i|| + r_i) r_j prod_{i>j} ||F_i||``."""
        norms = [fact.workload.column_norm(2) for fact in self.factors]
        residuals = [fact.residual for fact in self.factors]
        return sum(math.prod(norms[i] + residuals[i] for i in range(j)) * residuals[j] * math.prod(norms[j + 1:])
                   for j in range(len(self.factors)))

    def _finite_factors(self) -> bool:
        return all(fact._finite_factors() for fact in self.factors)

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: Kronecker product of {len(self.factors)} factorizations, "
                f"strategy {format_count(self.strategy.num_queries)}x{format_count(self.strategy.universe_size)}")


class ResidualQueries(Workload):
    """The residual measurements of a marginal strategy: for each attribute subset ``A``, the
    queries ``c_A (⊗_{i in A} H_i ⊗_{i not in A} 1^T)``, ``H_i`` the Helmert contrasts of attribute
    ``i`` (:func:`~projmech.marginal_factorization.helmert`). Every column has the same norm,
    ``sqrt(sum_A c_A^2 prod_{i in A} (1 - 1/n_i))``, and the counts come from the records'
    tables on the subsets.

    Parameters
    ----------
    sizes : sequence of int
        The attributes' sizes.
    coefficients : mapping of subset to float
        ``c_A`` for each measured subset, in the order of the queries.
    domain : Domain, optional
    covers : mapping of subset to subset, optional
        A larger subset whose table each one's can be summed from when counting records (the
        workload's own tables): one pass over the records per cover instead of per subset.
    """

    def __init__(self, sizes: Sequence[int], coefficients: Mapping[Subset, float], *, domain: Domain | None = None,
                 covers: Mapping[Subset, Subset] | None = None) -> None:
        self._sizes = tuple(int(size) for size in sizes)
        self.coefficients = dict(coefficients)
        self._covers = dict(covers or {})
        self._contrasts = {size: helmert(size) for size in set(self._sizes)}
        self._lengths = [math.prod(self._sizes[i] - 1 for i in subset) for subset in self.coefficients]
        self._offsets = np.cumsum([0, *self._lengths])
        self._setup((int(self._offsets[-1]), math.prod(self._sizes)), None, domain, "residual strategy")

    @property
    def is_implicit(self) -> bool:
        """Whether :attr:`matrix` is refused: above ``DEFAULT_MAX_ENTRIES`` dense entries."""
        return self.num_queries * self.universe_size > DEFAULT_MAX_ENTRIES

    @property
    def matrix(self) -> QueryMatrix:
        """The ``l x m`` strategy as a dense ndarray, built from its columns on each access."""
        if self.is_implicit:
            return super().matrix  # raises
        return self._columns(np.arange(self.universe_size, dtype=np.int64))

    def _blocks(self) -> list[tuple[Subset, float, slice]]:
        return [(subset, coefficient, slice(int(start), int(stop))) for (subset, coefficient), start, stop
                in zip(self.coefficients.items(), self._offsets[:-1], self._offsets[1:])]

    def _residual_of_table(self, subset: Subset, coefficient: float, table: np.ndarray) -> np.ndarray:
        """``c_A (⊗ H_i) table`` for the table of ``subset`` (its axes in the subset's order)."""
        for axis, attribute in enumerate(subset):
            contrast = self._contrasts[self._sizes[attribute]]
            table = along_axis(functools.partial(np.matmul, contrast), table, axis)
        return coefficient * np.ravel(table)

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        tensor = vector.reshape(self._sizes)
        every = range(len(self._sizes))
        return np.concatenate([
            self._residual_of_table(subset, coefficient, tensor.sum(axis=tuple(i for i in every if i not in subset)))
            for subset, coefficient, _ in self._blocks()])

    def _rmatvec(self, values: np.ndarray) -> np.ndarray:
        total = np.zeros(self._sizes)
        for subset, coefficient, rows in self._blocks():
            table = values[rows].reshape([self._sizes[i] - 1 for i in subset])
            for axis, attribute in enumerate(subset):
                contrast = self._contrasts[self._sizes[attribute]]
                table = along_axis(functools.partial(np.matmul, contrast.T), table, axis)
            total += coefficient * table.reshape([self._sizes[i] if i in subset else 1 for i in range(len(self._sizes))])
        return total.ravel()

    def _columns(self, index: np.ndarray) -> np.ndarray:
        return self._columns_at(np.unravel_index(index, self._sizes))

    def _columns_at(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """The columns of the universe elements with these codes (one array per attribute):
        no flat index, so that any number of attributes works."""
        count = len(codes[0])
        blocks = []
        for subset, coefficient, _ in self._blocks():
            block = np.full((1, count), coefficient)
            for attribute in subset:
                column = self._contrasts[self._sizes[attribute]][:, codes[attribute]]
                block = (block[:, None, :] * column[None, :, :]).reshape(-1, count)
            blocks.append(block)
        return np.concatenate(blocks)

    def _gram(self) -> np.ndarray:
        m = self.universe_size
        return self._rmatmat(self._columns(np.arange(m, dtype=np.int64)))

    def _uniform_column_norm(self, ord: float) -> float | None:
        if ord != 2:
            return None
        return math.sqrt(sum(coefficient**2 * math.prod(1.0 - 1.0 / self._sizes[i] for i in subset)
                             for subset, coefficient in self.coefficients.items()))

    def _column_norm(self, ord: float) -> float:
        uniform = self._uniform_column_norm(ord)
        if uniform is not None:
            return uniform
        return super()._column_norm(ord)

    def _column_norms(self, ord: float) -> np.ndarray:
        m = self.universe_size
        return np.linalg.norm(self._columns(np.arange(m, dtype=np.int64)), ord, axis=0)

    def _facts(self) -> tuple[bool, bool]:
        return False, False  # Helmert contrasts are irrational and signed

    def column_distance(self) -> float | None:
        """``max over u != v of ||M e_u - M e_v||``: exact from the Gram matrix on a small universe
        (:meth:`Workload.column_distance`); beyond, an upper bound from the residual basis.

        ``M^T M = sum_A c_A^2 ⊗_{i in A} (I - 1 1^T / n_i) ⊗_{i not in A} 1 1^T``, so with
        ``t_i = [u_i = v_i]`` the squared distance is ``2 sum_A c_A^2 (prod_{i in A} (1 - 1/n_i) -
        prod_{i in A} (t_i - 1/n_i))``; maximizing each term over its own ``t`` bounds the sum.
        """
        exact = super().column_distance()
        return exact if exact is not None else self.column_distance_bound()

    def column_distance_bound(self) -> float:
        """The upper bound of :meth:`column_distance` from the residual basis, for any universe."""
        total = 0.0
        for subset, coefficient in self.coefficients.items():
            sizes = [self._sizes[i] for i in subset]
            same = math.prod(1.0 - 1.0 / n for n in sizes)
            lowest = min(math.prod((1.0 if agree else 0.0) - 1.0 / n for agree, n in zip(pattern, sizes))
                         for pattern in itertools.product((False, True), repeat=len(sizes)))
            total += coefficient**2 * (same - lowest)
        return math.sqrt(2.0 * max(total, 0.0))

    def _default_labels(self) -> list[str]:
        names = self.domain.attributes if self.domain is not None else tuple(f"x{i}" for i in range(len(self._sizes)))
        return [f"residual({','.join(names[i] for i in subset) or 'total'})[{j}]"
                for subset, length in zip(self.coefficients, self._lengths) for j in range(length)]

    def _answer_counts(self, data: Dataset) -> np.ndarray:
        tables: dict[Subset, np.ndarray] = {}
        results = []
        for subset, coefficient, _ in self._blocks():
            cover = self._covers.get(subset, subset)
            if cover not in tables:
                tables[cover] = table_counts(data.records, self._sizes, cover).astype(float)
            table = tables[cover].sum(axis=tuple(axis for axis, i in enumerate(cover) if i not in subset))
            results.append(self._residual_of_table(subset, coefficient, table))
        return np.concatenate(results)

    def _kind(self) -> str:
        return f"residual queries of {len(self.coefficients)} subsets"


class ResidualFactorization(Factorization):
    """The optimal factorization of a marginal workload, over the residual basis.

    Parameters
    ----------
    workload : Workload
        A union of Kronecker products of scaled identities and totals
        (:func:`~projmech.workloads.marginal_terms` is not None).
    terms : list of (subset, weight)
        Its tables in query order, as :func:`~projmech.workloads.marginal_terms` gives them.
    sizes : sequence of int
        The attributes' sizes.
    stats : SolveStats, optional
    """

    def __init__(self, workload: Workload, terms: Sequence[tuple[Subset, float]], sizes: Sequence[int], *,
                 stats: SolveStats | None = None) -> None:
        self.workload = workload
        self._terms = list(terms)
        self._sizes = tuple(int(size) for size in sizes)
        squared: dict[Subset, float] = {}
        for subset, weight in self._terms:
            squared[subset] = squared.get(subset, 0.0) + weight**2
        k = workload.num_queries
        self._eigenvalues = residual_eigenvalues(self._sizes, squared)
        _, coefficients = optimal_residual_weights(self._sizes, squared, k)
        covers = {part: subset for subset in squared for part in subsets_of(subset)}
        self._queries = ResidualQueries(self._sizes, coefficients, domain=workload.domain, covers=covers)
        self.strategy = self._queries
        # The singular-value bound ||F||_* / sqrt(k m) from F's spectrum: eigenvalue m lambda_A of
        # multiplicity d_A (self._eigenvalues holds lambda_A / m).
        self.lower_bound = sum(self._multiplicity(subset) * math.sqrt(value)
                               for subset, value in self._eigenvalues.items() if value > 0) / math.sqrt(k)
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats

    def _multiplicity(self, subset: Subset) -> int:
        return math.prod(self._sizes[i] - 1 for i in subset)

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        # The component of each residual subset on its own attributes: (⊗ H_i^T) y_A / c_A.
        components: dict[Subset, np.ndarray] = {}
        for subset, coefficient, rows in self._queries._blocks():
            table = measurements[rows].reshape([self._sizes[i] - 1 for i in subset]) / coefficient
            for axis, attribute in enumerate(subset):
                contrast = self._queries._contrasts[self._sizes[attribute]]
                table = along_axis(functools.partial(np.matmul, contrast.T), table, axis)
            components[subset] = table
        answers = []
        for subset, weight in self._terms:
            shape = [self._sizes[i] for i in subset]
            table = np.zeros(shape)
            for part in subsets_of(subset):
                if part in components:
                    spread = math.prod(self._sizes[i] for i in subset if i not in part)
                    table += components[part].reshape([self._sizes[i] if i in part else 1 for i in subset]) / spread
            answers.append(weight * table.ravel())
        return np.concatenate(answers)

    @cached_property
    def reconstruction_norm(self) -> float:
        """``||R||_F = sqrt(tr(F^T F X^+))`` with ``X = M^T M = sum_A x_A Q_A`` and ``F^T F =
        sum_A lambda_A Q_A`` both diagonal on the residual basis: ``sum_A lambda_A d_A / x_A``,
        ``x_A = c_A^2 prod_{i not in A} n_i``, from the strategy's own coefficients."""
        total = 0.0
        for subset, value in self._eigenvalues.items():
            if value > 0 and self._multiplicity(subset):
                coefficient = self._queries.coefficients[subset]
                # lambda_A / x_A = (lambda_A / m) prod_{i in A} n_i / c_A^2, the m cancelling.
                total += value * self._multiplicity(subset) * math.prod(self._sizes[i] for i in subset) / coefficient**2
        return math.sqrt(total)

    @cached_property
    def residual(self) -> float:
        """``||(R M - F) e_u||`` at the first universe element: permuting each attribute's values
        maps both ``R M`` and ``F`` to themselves up to an order of the queries, so every
        column has this norm."""
        check_entries("workload", self.num_queries, DEFAULT_MAX_ENTRIES,
                      f"one column of {self.workload.name} (k={format_count(self.num_queries)})",
                      limit="DEFAULT_MAX_ENTRIES")
        first = [np.zeros(1, dtype=np.int64) for _ in self._sizes]
        measured = self._queries._columns_at(first)[:, 0]
        # F e_u at the element of all-zero codes: a weighted 1 in the first cell of each table.
        column = np.concatenate([np.eye(1, math.prod(self._sizes[i] for i in subset)).ravel() * weight
                                 for subset, weight in self._terms])
        return float(np.linalg.norm(self._reconstruct(measured) - column))

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: residual strategy on {len(self._queries.coefficients)} subsets, "
                f"{format_count(self.strategy.num_queries)} measurements")


class UnionKronFactorization(Factorization):
    """A union of Kronecker products ``W = [⊗_i W_1i; ...; ⊗_i W_Ti]`` factorized through one
    Kronecker strategy ``M = ⊗_i M_i``: term ``t`` is reconstructed by ``⊗_i W_ti M_i^+``.

    ``||R||_F^2 = sum_t prod_i ||W_ti M_i^+||_F^2`` and ``||M||_{1->2} = prod_i ||M_i||_{1->2}``
    come from the factors. The lower bound is ``sqrt(sum_t k_t gamma(W_t)^2 / k)`` with each
    term's certified bound ``prod_i gamma(W_ti)`` (dropping the other terms can only lower the
    optimum of ``tr(W X^+ W^T)``): certified, but not tight, so :attr:`relative_gap` states how
    far the Kronecker strategy may be from the optimum over all strategies.

    Parameters
    ----------
    workload : Workload
        The union (its :func:`kron_terms` are the terms).
    terms : sequence of Kron
    strategies : sequence of ndarray
        ``M_i`` for each attribute.
    term_bounds : sequence of float
        A certified lower bound on ``gamma`` of each term.
    stats : SolveStats, optional
    """

    def __init__(self, workload: Workload, terms: Sequence[Kron], strategies: Sequence[np.ndarray],
                 term_bounds: Sequence[float], *, stats: SolveStats | None = None) -> None:
        self.workload = workload
        self.terms = tuple(terms)
        self._strategies = [np.asarray(strategy, dtype=float) for strategy in strategies]
        self._pinvs = [np.linalg.pinv(strategy) for strategy in self._strategies]
        self.strategy = Kron([Workload(strategy, name="strategy factor") for strategy in self._strategies],
                             domain=workload.domain, name="strategy")
        # Each term's reconstruction factors W_ti M_i^+, small dense matrices.
        self._reconstructions = [[factor._matmat(pinv) for factor, pinv in zip(term.factors, self._pinvs)]
                                 for term in self.terms]
        k = workload.num_queries
        self.lower_bound = math.sqrt(sum(term.num_queries * bound**2 for term, bound in zip(self.terms, term_bounds))
                                     / k)
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        answers = []
        shape = [strategy.shape[0] for strategy in self._strategies]
        for reconstructions in self._reconstructions:
            tensor = measurements.reshape(shape)
            for axis, matrix in enumerate(reconstructions):
                tensor = along_axis(functools.partial(np.matmul, matrix), tensor, axis)
            answers.append(tensor.ravel())
        return np.concatenate(answers)

    @cached_property
    def reconstruction_norm(self) -> float:
        return math.sqrt(sum(math.prod(float(np.sum(matrix**2)) for matrix in reconstructions)
                             for reconstructions in self._reconstructions))

    @property
    def strategy_sensitivity(self) -> float:
        return math.prod(float(np.linalg.norm(strategy, axis=0).max()) for strategy in self._strategies)

    @cached_property
    def residual(self) -> float:
        """An upper bound on ``||R M - W||_{1->2}``: per term the telescoping bound of
        :attr:`KronFactorization.residual` on ``⊗ W_ti M_i^+ M_i - ⊗ W_ti``, combined over the
        terms as the root of the sum of their squares."""
        squares = 0.0
        for term, reconstructions in zip(self.terms, self._reconstructions):
            norms = [factor.column_norm(2) for factor in term.factors]
            residuals = [float(np.linalg.norm(matrix @ strategy - factor.toarray(), axis=0).max())
                         for matrix, strategy, factor in zip(reconstructions, self._strategies, term.factors)]
            bound = sum(math.prod(norms[i] + residuals[i] for i in range(j)) * residuals[j] * math.prod(norms[j + 1:])
                        for j in range(len(norms)))
            squares += bound**2
        return math.sqrt(squares)

    def _finite_factors(self) -> bool:
        return all(bool(np.all(np.isfinite(strategy))) for strategy in self._strategies)

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: one Kronecker strategy for {len(self.terms)} products, "
                f"strategy {format_count(self.strategy.num_queries)}x{format_count(self.strategy.universe_size)}")


def optimize_kron_strategy(terms: Sequence[Kron], solve_factor: Callable[[Workload], Factorization], *,
                           sweeps: int = 20, rtol: float = 1e-4) -> tuple[list[np.ndarray], int]:
    """A Kronecker strategy ``⊗_i M_i`` for the union of ``terms``, by block coordinate descent.

    With the other factors fixed, ``tr(W X^+ W^T) = sum_t prod_i tr(G_ti X_i^+)`` is, in
    ``X_i = M_i^T M_i``, the factorization problem of one attribute with Gram matrix
    ``sum_t c_t G_ti`` (``c_t`` the product of the other factors' traces), which ``solve_factor``
    solves to optimality; each step can only lower the objective. Starts from ``M_i = I`` and
    stops after ``sweeps`` sweeps or when a sweep lowers the objective by less than ``rtol``.
    Returns the strategies and the number of factor solves.
    """
    dimension = len(terms[0].factors)
    grams = [[factor.gram() for factor in term.factors] for term in terms]
    strategies = [np.eye(term_factor.universe_size) for term_factor in terms[0].factors]
    traces = [[_trace_with_inverse(gram, strategy) for gram, strategy in zip(row, strategies)] for row in grams]

    def objective() -> float:
        return sum(math.prod(row) for row in traces)

    solves, previous = 0, objective()
    for _ in range(sweeps):
        for axis in range(dimension):
            weights = [math.prod(row[:axis] + row[axis + 1:]) for row in traces]
            combined = sum(weight * row[axis] for weight, row in zip(weights, grams))
            eigenvalues, eigenvectors = np.linalg.eigh(combined)
            keep = eigenvalues > 1e-12 * max(eigenvalues[-1], 0.0)
            root = np.sqrt(eigenvalues[keep])[:, None] * eigenvectors[:, keep].T
            strategy = solve_factor(Workload(root, name=f"attribute {axis}")).strategy.toarray()
            strategies[axis] = strategy
            for row, term_grams in zip(traces, grams):
                row[axis] = _trace_with_inverse(term_grams[axis], strategy)
            solves += 1
        current = objective()
        if previous - current <= rtol * previous:
            break
        previous = current
    return strategies, solves


def _trace_with_inverse(gram: np.ndarray, strategy: np.ndarray) -> float:
    """``tr(G (M^T M)^+)`` = ``||W M^+||_F^2`` for ``G = W^T W``."""
    pinv = np.linalg.pinv(strategy)
    return float(np.sum(pinv * (gram @ pinv)))
