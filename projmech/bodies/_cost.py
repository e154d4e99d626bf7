"""The estimated time of each way to project a workload's noisy answers, and the choice by it.

An estimate reads the workload alone (:class:`WorkloadSize`), never the data, so the choice depends
on nothing private; the models are fitted to ``benchmarks/solvers.py`` (see benchmarks/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ..workloads import Workload, table_terms
from ._relaxation_model import moment_dimension as relaxation_moment_dimension

__all__ = ["WorkloadSize", "PowerLaw", "CostModel", "COST_MODELS", "HULL_PREFERENCE", "estimated_seconds",
           "by_estimated_time", "prefers_relaxation"]

#: Sets in the downward closure of a marginal workload's tables above which its rank is not
#: summed exactly but bounded by ``min(k, m)`` (the closure of all 3-way tables of 100
#: attributes has 166,751 sets).
_MAX_CLOSURE = 200_000


@dataclass(frozen=True)
class WorkloadSize:
    """The sizes of a workload that the cost model reads (:meth:`of`); ``inf`` beyond floating point.

    ``product_work`` is the entries one product ``F^T r`` touches; ``rank`` a bound on that of ``F``.
    """

    queries: int
    universe: int
    product_work: float
    rank: int
    moment_dimension: int | None

    @classmethod
    def of(cls, workload: Workload) -> WorkloadSize:
        """The sizes of ``workload``."""
        k, m = workload.shape
        terms = table_terms(workload)
        if terms is not None and terms.is_marginal:
            work = _as_float(m) * len(terms.subsets)
            rank = _marginal_rank(terms.sizes, terms.subsets)
        else:
            work, rank = _as_float(workload.kernels.stored_entries()), None
        moment_dimension = None
        if workload.marginal_way == 2 and workload.domain is not None:
            moment_dimension = relaxation_moment_dimension(workload.domain.sizes)
        return cls(k, m, work, min(k, m) if rank is None else min(rank, k, m), moment_dimension)


def _marginal_rank(sizes: Sequence[int], subsets: Iterable[tuple[int, ...]]) -> int | None:
    """``sum of prod_{i in S} (sizes[i] - 1)`` over the downward closure of ``subsets`` (or None)."""
    closure: set[tuple[int, ...]] = set()
    for subset in subsets:
        members = sorted(subset)
        if 2 ** len(members) > _MAX_CLOSURE:
            return None
        for mask in range(2 ** len(members)):
            closure.add(tuple(member for bit, member in enumerate(members) if mask >> bit & 1))
        if len(closure) > _MAX_CLOSURE:
            return None
    return sum(math.prod(sizes[i] - 1 for i in subset) for subset in closure)


def _as_float(value: int) -> float:
    """``float(value)``, or ``inf`` beyond floating point."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


#: The :class:`WorkloadSize` fields a :class:`PowerLaw` may read.
Size = Literal["queries", "universe", "product_work", "rank", "moment_dimension"]


@dataclass(frozen=True)
class PowerLaw:
    """``coefficient * size ** exponent`` of the size named ``size`` (a :class:`WorkloadSize` field)."""

    size: Size
    coefficient: float
    exponent: float

    def __call__(self, sizes: WorkloadSize) -> float:
        value = getattr(sizes, self.size)
        try:
            return self.coefficient * _as_float(value) ** self.exponent
        except OverflowError:  # beyond floating point: no finite estimate
            return math.inf


@dataclass(frozen=True)
class CostModel:
    """Estimated seconds: ``overhead`` plus the sum of ``terms``."""

    overhead: float
    terms: tuple[PowerLaw, ...]

    def __call__(self, sizes: WorkloadSize) -> float:
        return self.overhead + sum(term(sizes) for term in self.terms)


#: Fitted by ``benchmarks/solvers.py --parts auto`` (see ``benchmarks/README.md``), per choice:
#: the active-set solver (``"fast"``), two CVXPY solvers on the explicit matrix, and the ADMM onto
#: the relaxation ``L`` (``"relaxed"``). The other CVXPY solvers are never faster in that
#: benchmark; ``auto`` keeps them as fallbacks only.
COST_MODELS: Mapping[str, CostModel] = MappingProxyType({
    "fast": CostModel(3.20e-3, (PowerLaw("product_work", 8.48e-10, 1.236), PowerLaw("rank", 9.11e-4, 0.797))),
    "CLARABEL": CostModel(1.14e-2, (PowerLaw("product_work", 1.28e-6, 1.093),)),
    "SCS": CostModel(6.31e-3, (PowerLaw("product_work", 6.45e-6, 0.956),)),
    "relaxed": CostModel(1.11e-2, (PowerLaw("moment_dimension", 1.41e-6, 2.389),)),
})

#: ``body="auto"`` keeps the hull ``K_Q``, the tighter body (its error bound has the smaller
#: width ``l*(K_Q) <= l*(L)``, and it carries a witness distribution), unless its estimated time
#: exceeds this many times the relaxation's. Far below 10, so that estimates off by a factor of 2
#: each way still keep the choice within 10 times the faster body.
HULL_PREFERENCE = 2.0


def estimated_seconds(choice: str, sizes: WorkloadSize) -> float:
    """The estimated time of ``choice`` (a key of :data:`COST_MODELS`) on a workload of ``sizes``;
    ``inf`` for the relaxation on a workload it cannot take."""
    if choice not in COST_MODELS:
        raise ValueError(f"choice: expected one of {list(COST_MODELS)}, got {choice!r}")
    if choice == "relaxed" and sizes.moment_dimension is None:
        return math.inf
    return COST_MODELS[choice](sizes)


def by_estimated_time(choices: Iterable[str], sizes: WorkloadSize) -> list[str]:
    """``choices`` from the fastest estimate to the slowest (ties keep the given order)."""
    return sorted(choices, key=lambda choice: estimated_seconds(choice, sizes))


def prefers_relaxation(sizes: WorkloadSize, hull_solvers: Iterable[str]) -> bool:
    """Whether ``body="auto"`` takes the relaxation: it can, and the fastest modelled hull solver is
    estimated more than :data:`HULL_PREFERENCE` times slower than its ADMM."""
    relaxed = estimated_seconds("relaxed", sizes)
    fastest_hull = min((estimated_seconds(solver, sizes) for solver in hull_solvers if solver in COST_MODELS),
                       default=math.inf)
    return math.isfinite(relaxed) and fastest_hull > HULL_PREFERENCE * relaxed
