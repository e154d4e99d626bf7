"""Optimal factorizations that keep a workload's structure: Kronecker products and marginals.

For a Kronecker product the optimum, strategy, reconstruction and certificate multiply over the
factors :cite:p:`MMHM18`; marginal workloads have a closed-form optimum on the residual basis
:cite:p:`XHZK23`. Proofs: :doc:`/theory/structured_factorization`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from .._sparse import QueryMatrix
from ..data import Dataset, Domain
from ..solve import SolveStats, Status
from ..tables import KroneckerQuery, Measurement
from ..validation import DEFAULT_MAX_ENTRIES, format_count
from ..workloads import Kron, KroneckerGram, TableTerms, Workload, along_axis, table_terms
from ._base import Factorization, check_objective
from ._residual import AttributeBasis, Subset, residual_weights, subsets_of

__all__ = ["KronFactorization", "ResidualFactorization", "ResidualQueries", "UnionKronFactorization",
           "optimize_kron_strategy", "table_blocks", "table_measurements", "telescoping_bound"]

#: One block of measured queries that reads one table: its attributes, its query on the table's
#: flat cells (None for the cells themselves) and its rows among the measured queries.
TableBlock = tuple[tuple[int, ...], KroneckerQuery | None, slice]


def telescoping_bound(norms: Sequence[float], residuals: Sequence[float]) -> float:
    """An upper bound on ``||⊗_i A_i - ⊗_i W_i||_{1->2}`` from ``||W_i||_{1->2} = norms[i]`` and
    ``||A_i - W_i||_{1->2} <= residuals[i]``: the difference is the telescoping sum over ``j`` of
    ``A_1 ⊗ ... ⊗ A_{j-1} ⊗ (A_j - W_j) ⊗ W_{j+1} ⊗ ...``, and column norms multiply over
    Kronecker factors, so ``sum_j prod_{i<j} (norms_i + residuals_i) residuals_j prod_{i>j} norms_i``."""
    return sum(math.prod(norms[i] + residuals[i] for i in range(j)) * residuals[j] * math.prod(norms[j + 1:])
               for j in range(len(norms)))


class KronFactorization(Factorization):
    """``(R_1 ⊗ ... ⊗ R_d)(M_1 ⊗ ... ⊗ M_d) = F_1 ⊗ ... ⊗ F_d`` from one factorization per factor of a
    :class:`~projmech.workloads.Kron`, never densified; ``gamma``, ``||R||_F`` and the bound multiply.
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
        objectives = {fact.objective for fact in factors}
        if len(objectives) > 1:
            raise ValueError(f"factors: optimized for different objectives {sorted(objectives)}; their product's "
                             "lower bound would bound neither norm")
        # gamma_2 multiplies over Kronecker factors as gamma does, and so do the dual bounds.
        self.objective = objectives.pop()
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

    def _query_norms(self) -> np.ndarray:
        # The rows of R_1 ⊗ ... ⊗ R_d are Kronecker products of rows, whose norms multiply.
        return functools.reduce(np.kron, [fact.query_norms for fact in self.factors])

    @property
    def strategy_sensitivity(self) -> float:
        return math.prod(fact.strategy_sensitivity for fact in self.factors)

    @cached_property
    def residual(self) -> float:
        """An upper bound on ``||R M - F||_{1->2}`` from the factors' residuals
        (:func:`telescoping_bound`, with ``A_i = R_i M_i``)."""
        return telescoping_bound([fact.workload.column_norm(2) for fact in self.factors],
                                 [fact.residual for fact in self.factors])

    def _finite_factors(self) -> bool:
        return all(fact._finite_factors() for fact in self.factors)

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: Kronecker product of {len(self.factors)} factorizations, "
                f"strategy {format_count(self.strategy.num_queries)}x{format_count(self.strategy.universe_size)}")


class ResidualQueries(Workload):
    """The residual measurements of a table strategy: for each attribute subset ``A`` the queries
    ``c_A (⊗_{i in A} C_i ⊗_{i not in A} 1^T)``, counted from the records' tables (one pass per
    ``covers`` subset, whose table each measured one's is summed from).
    """

    def __init__(self, contrasts: Sequence[np.ndarray | None], coefficients: Mapping[Subset, float], *,
                 domain: Domain | None = None, sizes: Sequence[int] | None = None,
                 covers: Mapping[Subset, Subset] | None = None) -> None:
        self._contrasts = list(contrasts)
        self._sizes = tuple(int(n) for n in sizes) if sizes is not None else tuple(
            c.shape[1] for c in contrasts if c is not None)
        self.coefficients = dict(coefficients)
        self._covers = dict(covers or {})
        self._lengths = [math.prod(self._contrast(i).shape[0] for i in subset) for subset in self.coefficients]
        self._offsets = np.cumsum([0, *self._lengths])
        self._setup((int(self._offsets[-1]), math.prod(self._sizes)), None, domain, "residual strategy")

    def _contrast(self, attribute: int) -> np.ndarray:
        contrast = self._contrasts[attribute]
        assert contrast is not None  # every measured subset's attributes have contrasts
        return contrast

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
        """``c_A (⊗ C_i) table`` for the table of ``subset`` (its axes in the subset's order)."""
        for axis, attribute in enumerate(subset):
            table = along_axis(functools.partial(np.matmul, self._contrast(attribute)), table, axis)
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
            table = values[rows].reshape([self._contrast(i).shape[0] for i in subset])
            for axis, attribute in enumerate(subset):
                table = along_axis(functools.partial(np.matmul, self._contrast(attribute).T), table, axis)
            shape = [self._sizes[i] if i in subset else 1 for i in range(len(self._sizes))]
            total += coefficient * table.reshape(shape)
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
                column = self._contrast(attribute)[:, codes[attribute]]
                block = (block[:, None, :] * column[None, :, :]).reshape(-1, count)
            blocks.append(block)
        return np.concatenate(blocks)

    def _gram(self) -> np.ndarray:
        m = self.universe_size
        return self._rmatmat(self._columns(np.arange(m, dtype=np.int64)))

    def _peaks(self) -> dict[int, float]:
        return {i: float(np.max(np.sum(c**2, axis=0))) for i, c in enumerate(self._contrasts) if c is not None}

    def _uniform_column_norm(self, ord: float) -> float | None:
        if ord != 2:
            return None
        diagonals = [np.sum(c**2, axis=0) for c in self._contrasts if c is not None]
        if not all(np.allclose(diagonal, diagonal[0], rtol=1e-12, atol=0) for diagonal in diagonals):
            return None
        return self._column_norm(2)

    def _column_norm(self, ord: float) -> float:
        if ord != 2:
            return super()._column_norm(ord)
        peaks = self._peaks()
        return math.sqrt(sum(coefficient**2 * math.prod(peaks[i] for i in subset)
                             for subset, coefficient in self.coefficients.items()))

    def _column_norms(self, ord: float) -> np.ndarray:
        m = self.universe_size
        return np.linalg.norm(self._columns(np.arange(m, dtype=np.int64)), ord, axis=0)

    def _facts(self) -> tuple[bool, bool]:
        return False, False  # contrasts are irrational and signed

    def column_distance(self) -> float | None:
        """``max over u != v of ||M e_u - M e_v||``: exact from the Gram matrix on a small universe
        (:meth:`Workload.column_distance`); beyond, :meth:`column_distance_bound`."""
        exact = super().column_distance()
        return exact if exact is not None else self.column_distance_bound()

    def column_distance_bound(self) -> float:
        """An upper bound on :meth:`column_distance` for any universe: each subset's term is bounded at a
        corner of the box its factors range over (:doc:`/theory/structured_factorization`).
        """
        total = 0.0
        for subset, coefficient in self.coefficients.items():
            grams = [self._contrast(i).T @ self._contrast(i) for i in subset]
            if not grams:
                continue  # the total: the same for every element
            peak = math.prod(float(np.max(np.diag(g))) for g in grams)
            lowest = min(math.prod(corner) for corner in itertools.product(*[(float(g.min()), float(g.max()))
                                                                             for g in grams]))
            total += coefficient**2 * 2.0 * (peak - lowest)
        return math.sqrt(max(total, 0.0))

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
                tables[cover] = data.table(cover).astype(float)
            table = tables[cover].sum(axis=tuple(axis for axis, i in enumerate(cover) if i not in subset))
            results.append(self._residual_of_table(subset, coefficient, table))
        return np.concatenate(results)

    def _kind(self) -> str:
        return f"residual queries of {len(self.coefficients)} subsets"


class ResidualFactorization(Factorization):
    """A table workload factorized over the residual basis (``bases``: each attribute's block and contrasts):
    optimal over all strategies for marginals; for range blocks, optimal within the class, with the
    grouped lower bound. ``coefficients`` default to the mean objective's closed form.
    """

    def __init__(self, workload: Workload, tables: TableTerms, bases: Sequence[AttributeBasis | None], *,
                 lower_bound: float, coefficients: Mapping[Subset, float] | None = None, objective: str = "mean",
                 stats: SolveStats | None = None) -> None:
        self.workload = workload
        self.objective = check_objective(objective)
        self._tables = tables
        self._bases = list(bases)
        self._terms = tables.terms
        _, optimal, self._errors = residual_weights(self._bases, self._terms)
        if coefficients is None:
            coefficients = optimal
        elif set(coefficients) != set(optimal):
            raise ValueError(f"coefficients: expected the measured subsets {sorted(optimal)}, got "
                             f"{sorted(coefficients)}")
        covers = {part: subset for subset, _ in self._terms for part in subsets_of(subset)}
        self._queries = ResidualQueries([None if basis is None else basis.contrasts for basis in self._bases],
                                        coefficients, domain=workload.domain, sizes=tables.sizes, covers=covers)
        self.strategy = self._queries
        self.lower_bound = lower_bound
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats
        self._maps = {i: (basis.reconstruction, basis.mean) for i, basis in enumerate(self._bases) if basis is not None}

    @property
    def is_marginal(self) -> bool:
        """Whether every block is an identity, so that the strategy is optimal over all strategies."""
        return self._tables.is_marginal

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        # Each measured subset's part of the answers on its own attributes: (⊗ B_i C_i^+) y_A / c_A.
        components: dict[Subset, np.ndarray] = {}
        for subset, coefficient, rows in self._queries._blocks():
            table = measurements[rows].reshape([self._queries._contrast(i).shape[0] for i in subset]) / coefficient
            for axis, attribute in enumerate(subset):
                table = along_axis(functools.partial(np.matmul, self._maps[attribute][0]), table, axis)
            components[subset] = table
        answers = []
        for subset, weight in self._terms:
            shape = [self._maps[i][0].shape[0] for i in subset]
            table = np.zeros(shape)
            for part in subsets_of(subset):
                if part in components:
                    # The other attributes of the table get the block's answers per unit of total.
                    piece = components[part].reshape([shape[axis] if i in part else 1 for axis, i in enumerate(subset)])
                    for axis, i in enumerate(subset):
                        if i not in part:
                            mean = self._maps[i][1]
                            piece = piece * mean.reshape([-1 if a == axis else 1 for a in range(len(subset))])
                    table = table + piece
            answers.append(weight * table.ravel())
        return np.concatenate(answers)

    @cached_property
    def reconstruction_norm(self) -> float:
        """``||R||_F = sqrt(sum_A a_A / c_A^2)`` from the strategy's own coefficients: the errors
        of the subspaces ``⊗_{i in A} 1^⊥ ⊗_{i not in A} 1``, on which ``F^T F`` and
        ``X = M^T M`` both split."""
        return math.sqrt(sum(self._errors[subset] / coefficient**2
                             for subset, coefficient in self._queries.coefficients.items()))

    def _query_norms(self) -> np.ndarray:
        """Each query's ``||r_i||`` from the strategy's coefficients: the subsets' measurements are separate,
        so an outer product per subset, no row of R formed.
        """
        rows = {i: np.sum(maps[0] ** 2, axis=1) for i, maps in self._maps.items()}
        means = {i: maps[1] ** 2 for i, maps in self._maps.items()}
        coefficients = self._queries.coefficients
        norms = []
        for subset, weight in self._terms:
            squares = np.zeros([len(means[i]) for i in subset])
            for part in subsets_of(subset):
                if part in coefficients:
                    piece = np.ones(())
                    for i in subset:
                        piece = np.multiply.outer(piece, rows[i] if i in part else means[i])
                    squares = squares + piece / coefficients[part] ** 2
            norms.append(abs(weight) * np.sqrt(squares.ravel()))
        return np.concatenate(norms)

    @cached_property
    def residual(self) -> float:
        """An upper bound on ``||R M - F||_{1->2}``: per table, the telescoping bound of
        :attr:`KronFactorization.residual` on each block's realized map ``B_i (C_i^+ C_i + 1 1^T
        / n_i)`` against ``B_i``, combined over the tables as the root of the sum of squares."""
        squares = 0.0
        for subset, weight in self._terms:
            norms = [float(np.linalg.norm(self._bases[i].block, axis=0).max()) for i in subset]  # type: ignore[union-attr]
            defects = [self._bases[i].defect for i in subset]  # type: ignore[union-attr]
            squares += (weight * telescoping_bound(norms, defects)) ** 2
        return math.sqrt(squares)

    def _description(self) -> str:
        kind = "residual" if self.is_marginal else "residual strategy with range contrasts"
        return (f"R M = F of {self.workload.name}: {kind} on {len(self._queries.coefficients)} subsets, "
                f"{format_count(self.strategy.num_queries)} measurements")


class UnionKronFactorization(Factorization):
    """A union of Kronecker products factorized through one Kronecker strategy ``M = ⊗_i M_i``: norms
    from the factors; the lower bound from the terms' certified bounds (``term_bounds``), certified but
    not tight, so :attr:`relative_gap` states how far the strategy may be from the optimum.
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
        self._reconstructions = [[factor.kernels.matmat(pinv) for factor, pinv in zip(term.factors, self._pinvs)]
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
            squares += telescoping_bound(norms, residuals) ** 2
        return math.sqrt(squares)

    def _finite_factors(self) -> bool:
        return all(bool(np.all(np.isfinite(strategy))) for strategy in self._strategies)

    def _description(self) -> str:
        return (f"R M = F of {self.workload.name}: one Kronecker strategy for {len(self.terms)} products, "
                f"strategy {format_count(self.strategy.num_queries)}x{format_count(self.strategy.universe_size)}")


def optimize_kron_strategy(gram: KroneckerGram, solve_factor: Callable[[Workload], Factorization], *,
                           sweeps: int = 20, rtol: float = 1e-4) -> tuple[list[np.ndarray], int]:
    """A Kronecker strategy ``⊗_i M_i`` for a union of Kronecker products, by block coordinate descent:
    each step solves one attribute's problem (``solve_factor``), lowering the objective, from
    ``M_i = I`` for at most ``sweeps`` sweeps or until a sweep gains less than ``rtol``.
    """
    weights = [weight for weight, _ in gram.terms]
    grams = [list(factors) for _, factors in gram.terms]
    strategies = [np.eye(size) for size in gram.sizes]
    traces = [[_trace_with_inverse(factor, strategy) for factor, strategy in zip(row, strategies)] for row in grams]

    def objective() -> float:
        return sum(weight * math.prod(row) for weight, row in zip(weights, traces))

    solves, previous = 0, objective()
    for _ in range(sweeps):
        for axis in range(len(gram.sizes)):
            others = [weight * math.prod(row[:axis] + row[axis + 1:]) for weight, row in zip(weights, traces)]
            combined = sum(other * row[axis] for other, row in zip(others, grams))
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


def table_blocks(queries: Workload) -> list[TableBlock] | None:
    """The measured ``queries`` as blocks that each read one table: one per subset of a residual
    strategy, one per term of a union of tables (:func:`~projmech.workloads.table_terms`: a
    Kronecker strategy, whose constant factors sum their attributes out, or a marginal workload);
    a block of no attribute (the total) reads attribute 0's table. Each query stays factored
    (:class:`~projmech.tables.KroneckerQuery`). None for other queries (a dense matrix over the universe)."""
    parts: list[tuple[Subset, float, list[Any], slice]]
    if isinstance(queries, ResidualQueries):
        sizes, identity = queries._sizes, False
        parts = [(subset, coefficient, [queries._contrast(i) for i in subset], rows)
                 for subset, coefficient, rows in queries._blocks()]
    else:
        terms = table_terms(queries)
        if terms is None:
            return None
        sizes, offset, parts, identity = terms.sizes, 0, [], terms.is_marginal
        for subset, weight in terms.terms:
            blocks = [terms.blocks[i] for i in subset]
            length = math.prod(block.num_queries for block in blocks if block is not None)
            parts.append((subset, weight, blocks, slice(offset, offset + length)))
            offset += length
        if offset != queries.num_queries:
            return None
    result: list[TableBlock] = []
    for subset, scale, factors, rows in parts:
        attributes = subset or (0,)
        if identity and scale == 1.0 and subset:
            result.append((attributes, None, rows))
            continue
        dense = [np.asarray(f.toarray() if isinstance(f, Workload) else f, dtype=float) for f in factors]
        result.append((attributes, KroneckerQuery(tuple(dense or [np.ones((1, sizes[0]))]), float(scale)), rows))
    return result


def table_measurements(queries: Workload, values: np.ndarray, sigma: float) -> tuple[Measurement, ...] | None:
    """``values`` of the measured ``queries`` as measurements of tables, one per block of
    :func:`table_blocks` (its query kept factored), each of deviation ``sigma``; None for queries
    without table structure."""
    blocks = table_blocks(queries)
    if blocks is None:
        return None
    return tuple(Measurement(attributes, values[rows], sigma, query) for attributes, query, rows in blocks)
