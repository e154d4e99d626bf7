"""``factorization_norm``: the optimal factorization norm gamma(F) of any workload, by the method its
structure allows, with its certified lower bound.

:func:`choose_method` picks among the package's methods: the structured ones (Kronecker, marginal,
range), the resolvent method at scale, the max objective's, and the dense solvers on the Gram
matrix. The choice is explained in :doc:`/theory/factorization`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._threads import on_one_blas_thread
from ..solve import Callback, Outcome, check_callback, record_total_time, solve_in_order
from ..validation import POSITIVE, POSITIVE_INT, Options, validate_params
from ..workloads import Kron, KroneckerGram, Workload, kron_terms, table_terms
from ._base import OBJECTIVES, DenseFactorization, Factorization, FactorizationError, as_workload, dense_matrix
from ._kernel import judge
from ._lower_bound import factorization_lower_bound
from ._maximum import solve_marginal_max, solve_max_iterative, solve_max_sdp, solve_range_max
from ._mean import _finish, _solve_iterative, _solve_sdp
from ._range_forms import is_all_range
from ._residual import AttributeBasis, grouped_lower_bound, helmert
from ._resolvent import solve_resolvent, structure_of
from ._scaling import ScaledFactorization, factorize_scaled, scaled_form
from ._structured import KronFactorization, ResidualFactorization, UnionKronFactorization, optimize_kron_strategy

__all__ = ["factorization_norm", "factorization_lower_bound", "ScaledFactorization", "METHODS"]


METHODS = ("auto", "structured", "iterative", "sdp")


#: Above this universe size ``method="auto"`` does not fall back to the SDP.
SDP_MAX_UNIVERSE = 64


#: Up to this universe size ``method="auto"`` factorizes a union of Kronecker products that is
#: not a marginal workload densely (certified to ``tol``) rather than by an
#: :data:`UNCERTIFIED_METHODS` method.
DENSE_UNION_UNIVERSE = 1024


#: The structured methods whose result is optimal only within a class of strategies: their gap to
#: a certified bound is reported, not held to ``tol``.
UNCERTIFIED_METHODS = ("range-residual", "kron-strategy")


#: The relative gap each attribute's step of the Kronecker-strategy optimizer is solved to.
UNION_STEP_TOL = 1e-6


#: The fewest iterations a step of a structured method gets, whatever the caller's budget.
STEP_MIN_ITERATIONS = 2000


#: From this universe size ``method="auto"`` factorizes prefix and all-range workloads by the
#: resolvent method (``O(m)`` memory and ``O(N m)`` per step) instead of the dense ones.
RESOLVENT_MIN_UNIVERSE = 512


#: The largest ``k * m`` the ``"max"`` objective's dense methods accept (its iteration forms
#: ``F^T diag(p) F`` and ``F Z`` at each step).
MAX_OBJECTIVE_ENTRIES = 20_000_000


#: The largest universe of the all-range workload the ``"max"`` objective accepts: its method
#: (on the ``m x m`` Gram form) costs an ``m x m`` eigendecomposition a step.
RANGE_MAX_UNIVERSE = 4096


@record_total_time
@on_one_blas_thread
@validate_params(objective=Options(*OBJECTIVES), method=Options(*METHODS), tol=POSITIVE, max_iterations=POSITIVE_INT)
def factorization_norm(
    workload: Workload | Any,
    *,
    objective: str = "mean",
    method: str = "auto",
    tol: float = 1e-3,
    max_iterations: int = 200,
    solver: str = "SCS",
    solver_options: dict[str, Any] | None = None,
    callback: Callback | None = None,
) -> Factorization:
    """The optimal exact factorization ``R M = F``: ``gamma(F)`` with a certified lower bound.

    ``gamma(F) = min ||R||_F ||M||_{1->2} / sqrt(k)`` over ``R M = F`` :cite:p:`ENU20`, the matrix
    mechanism's optimal strategy :cite:p:`LHRMM10`; the result's ``relative_gap`` (on ``gamma^2``)
    bounds how far it is from optimal. How the method is chosen: :doc:`/theory/factorization`.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F; only its Gram matrix is used, so implicit workloads work.
    objective : {"mean", "max"}, default "mean"
        ``"mean"``: ``gamma(F)``, the root-mean-square error; ``"max"``: ``gamma_2(F)``, the worst
        query's :cite:p:`MNT20`.
    method : {"auto", "structured", "iterative", "sdp"}
        The structure's own method, the dual ascent, or the CVXPY semidefinite program; ``"auto"``
        picks one and falls back, recording every attempt.
    tol : float, default 1e-3
        Target relative gap on ``gamma^2``.
    max_iterations : int, default 200
        For the iterative method: the number of eigendecompositions.
    solver : str, default "SCS"
        The CVXPY solver for the SDP.
    solver_options : dict, optional
        Keyword options for ``problem.solve``.
    callback : callable, optional
        ``callback(iteration, gap)`` after each step of the iterative method.

    Returns
    -------
    Factorization
        With ``stats``: the method, the certified gap, every attempt, ``solve_time`` (the accepted
        attempt) and ``total_time`` (the whole call).

    Examples
    --------
    >>> fact = pm.factorization_norm(pm.prefix(16))
    >>> round(fact.gamma, 3), round(fact.lower_bound, 3), fact.relative_gap <= 1e-3, fact.stats.solver
    (1.69, 1.689, True, 'iterative')
    >>> fact = pm.factorization_norm(pm.marginals(pm.Domain(["age", "sex", "education"], [10, 2, 5]), 2))
    >>> fact.stats.solver, round(fact.gamma, 3), fact.relative_gap < 1e-9
    ('residual', 1.446, True)
    >>> worst = pm.factorization_norm(pm.prefix(64), objective="max")
    >>> round(worst.gamma_2, 4), round(worst.lower_bound, 4)
    (2.1124, 2.1114)
    """
    workload = as_workload(workload)
    callback = check_callback(callback)
    form = scaled_form(workload)
    if form is not None:
        # Entries beyond [2^-300, 2^300]: factorize F / scale, whose Gram matrix neither
        # underflows nor overflows, and scale R, gamma and the bound back (ScaledFactorization).
        return factorize_scaled(workload, *form, lambda scaled: factorization_norm(
            scaled, objective=objective, method=method, tol=tol, max_iterations=max_iterations, solver=solver,
            solver_options=solver_options, callback=callback))
    request = Request(objective, method, tol, max_iterations, solver, solver_options, callback)
    chosen = choose_method(workload, request)
    plan = chosen.plan(workload, request)
    fact, _, _ = solve_in_order(plan, FactorizationError, chosen.failure(request, plan), _finish(tol))
    return fact


#: One attempt of a plan: its name in the statistics, and the call that solves and judges it.
Step = tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]]
Plan = list[Step]


@dataclass(frozen=True)
class Request:
    """What :func:`factorization_norm` was asked, checked: the objective, the method and the solvers' settings."""

    objective: str
    method: str
    tol: float
    max_iterations: int
    solver: str
    solver_options: dict[str, Any] | None
    callback: Callback | None


class FactorizationMethod(Protocol):
    """One way to compute a workload's factorization norm, as :func:`choose_method` sees it.

    :meth:`blocker` says why it cannot take a workload, before anything is solved; :meth:`plan`
    gives the attempts :func:`~projmech.solve.solve_in_order` runs, each judged by the same final
    check; :meth:`failure` words the error when none certifies the tolerance.
    """

    name: str

    def blocker(self, workload: Workload, request: Request) -> str | None:
        """Why this method cannot take ``workload`` (a phrase), or None."""
        ...

    def plan(self, workload: Workload, request: Request) -> Plan:
        """The attempts, in order (a ValueError where the workload's size or values rule it out)."""
        ...

    def failure(self, request: Request, plan: Plan) -> str:
        """The message of the FactorizationError raised when no attempt of ``plan`` certifies the tolerance."""
        ...


class _OneAttempt:
    """A method of one attempt, where the workload's structure allows it (:meth:`_attempt` not None)."""

    name: str
    refusal: str

    def _attempt(self, workload: Workload, request: Request) -> Step | None:
        raise NotImplementedError

    def blocker(self, workload: Workload, request: Request) -> str | None:
        return self.refusal if self._attempt(workload, request) is None else None

    def plan(self, workload: Workload, request: Request) -> Plan:
        attempt = self._attempt(workload, request)
        assert attempt is not None, "plan() of a workload blocker() refused"
        return [attempt]

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: the {plan[0][0]} factorization did not certify a relative gap <= {request.tol:g}"


class _Structured(_OneAttempt):
    """The structure's own method: the residual strategy for a union of tables, the product of the
    factors' optima for a Kronecker product, one Kronecker strategy for another union.
    """

    name = "structured"
    refusal = "it is neither a Kronecker product nor a union of tables"

    def _attempt(self, workload: Workload, request: Request) -> Step | None:
        return _structured_plan(workload, request.tol, request.max_iterations, request.objective, request.callback)


class _Resolvent(_OneAttempt):
    """Prefix sums and all ranges at scale: the ascent on their closed-form tridiagonal inverses."""

    name = "resolvent"
    refusal = "it is not prefix sums or all ranges at the size the resolvent method is for"

    def _attempt(self, workload: Workload, request: Request) -> Step | None:
        return _resolvent_plan(workload, request.objective, request.tol, request.max_iterations, request.callback,
                               force=request.method == "structured")


class _MaxObjective:
    """The ``"max"`` objective on the explicit matrix, or all ranges on their Gram form."""

    name = "max"

    def blocker(self, workload: Workload, request: Request) -> str | None:
        return None if request.objective == "max" else "it serves the 'max' objective only"

    def plan(self, workload: Workload, request: Request) -> Plan:
        # Asked for "structured", all ranges take their Gram-form ascent (no SDP).
        method = "iterative" if request.method == "structured" else request.method
        return _max_plan(workload, method, request.tol, request.max_iterations, request.solver,
                         request.solver_options, request.callback)

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: no method certified a relative gap <= {request.tol:g} on gamma_2^2"


class _Dense:
    """The mean objective on the workload's Gram matrix: the dual ascent, then the SDP where small or asked for."""

    name = "dense"

    def blocker(self, workload: Workload, request: Request) -> str | None:
        return None if request.objective == "mean" else "it serves the 'mean' objective only"

    def plan(self, workload: Workload, request: Request) -> Plan:
        gram = workload.gram()
        if not np.all(np.isfinite(gram)):
            raise ValueError("workload: its Gram matrix F^T F is not finite")
        if not np.any(gram):
            raise ValueError("workload: F is zero; there is nothing to factorize")
        tol, solver, options = request.tol, request.solver, request.solver_options
        return _dense_plan(request.method, workload.universe_size <= SDP_MAX_UNIVERSE, tol,
                           lambda: _solve_iterative(workload, gram, tol, request.max_iterations, request.callback),
                           (f"sdp/{solver}", lambda: _solve_sdp(workload, gram, tol, solver, options)))

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: no method certified a relative gap <= {request.tol:g}"


class _SingleQuery:
    """One query ``q``: its optimal strategy is the query itself, ``gamma = max_j |q_j|``, certified by the
    bound at its largest entry. Its exact entries keep a strategy ``kron(..., total, ...)`` summing
    that attribute out.
    """

    name = "single-query"

    def blocker(self, workload: Workload, request: Request) -> str | None:
        if workload.num_queries != 1:
            return "it has more than one query"
        if request.objective != "mean":
            return "it serves the 'mean' objective only"
        if request.method not in ("auto", "structured"):
            return f"method {request.method!r} was asked for"
        return None

    def plan(self, workload: Workload, request: Request) -> Plan:
        row = np.asarray(dense_matrix(workload), dtype=float)[0]
        if not np.all(np.isfinite(row)):
            raise ValueError("workload: F has a non-finite entry")
        if not np.any(row):
            raise ValueError("workload: F is zero; there is nothing to factorize")
        weights = np.zeros(row.size)
        weights[int(np.argmax(np.abs(row)))] = 1.0

        def single() -> Outcome[tuple[Factorization, int | None]]:
            bound = factorization_lower_bound(workload, weights)
            return judge(DenseFactorization(workload, row[None, :], lower_bound=bound), request.tol)

        return [("single-query", single)]

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: the single query's factorization did not certify a relative gap <= {request.tol:g}"


#: The methods :func:`choose_method` considers, in its order of preference.
SINGLE_QUERY, STRUCTURED, RESOLVENT, MAX_OBJECTIVE, DENSE = (_SingleQuery(), _Structured(), _Resolvent(),
                                                             _MaxObjective(), _Dense())


def choose_method(workload: Workload, request: Request) -> FactorizationMethod:
    """The one place that picks a factorization method, from the workload and the request.

    A single query takes its closed form; under ``"auto"`` and ``"structured"`` the workload's
    structure first (an uncertified structured method gives way to the dense one on a small universe
    under ``"auto"``); then the ``"max"`` objective's method or the dense one.
    """
    if SINGLE_QUERY.blocker(workload, request) is None:
        return SINGLE_QUERY
    if request.method in ("auto", "structured"):
        for candidate in (STRUCTURED, RESOLVENT):
            if candidate.blocker(workload, request) is not None:
                continue
            (name, _), = candidate.plan(workload, request)
            if (name in UNCERTIFIED_METHODS and request.method == "auto"
                    and workload.universe_size <= DENSE_UNION_UNIVERSE):
                break  # small enough for the dense method, which certifies tol
            return candidate
        else:
            if request.method == "structured":
                if request.objective == "max" and is_all_range(workload):
                    return MAX_OBJECTIVE
                needs = ("a Kronecker product, a marginal workload (identity blocks), prefix sums or all ranges"
                         if request.objective == "max" else "a Kronecker product or a marginal workload")
                raise ValueError(f"method: 'structured' with objective={request.objective!r} needs {needs}, "
                                 f"got {workload.name}")
    return MAX_OBJECTIVE if request.objective == "max" else DENSE


def _dense_plan(method: str, small: bool, tol: float, iterative: Callable[[], tuple[Factorization, int, bool]],
                sdp: Step,
                name: str = "iterative") -> Plan:
    """The dense methods in order: the iterative one, then the SDP where asked for or, under
    ``"auto"``, where ``small``."""
    def attempt() -> Outcome[tuple[Factorization, int | None]]:
        fact, iterations, stopped = iterative()
        return judge(fact, tol, iterations, stopped)

    plan: Plan = [(name, attempt)] if method in ("auto", "iterative") else []
    if method == "sdp" or (method == "auto" and small):
        plan.append(sdp)
    return plan


def _resolvent_plan(workload: Workload, objective: str, tol: float, max_iterations: int, callback: Callback | None,
                    force: bool) -> Step | None:
    """The resolvent method for prefix sums or all ranges from ``RESOLVENT_MIN_UNIVERSE`` cells
    (any size when ``force``); else None."""

    structure = structure_of(workload)
    if structure is None or not (force or workload.universe_size >= RESOLVENT_MIN_UNIVERSE):
        return None
    if objective == "max" and structure.inverse is None:
        if structure.ranges:
            return None  # the all-range max objective has its own method (the max objective's method)
        if force:
            raise ValueError(f"method: 'structured' with objective='max' needs a square workload with a bidiagonal "
                             f"inverse (prefix sums), got {workload.name}")
        return None

    def resolvent() -> Outcome[tuple[Factorization, int | None]]:
        assert structure is not None
        fact, iterations, stopped = solve_resolvent(workload, structure, objective, tol, max_iterations, callback)
        return judge(fact, tol, iterations, stopped)

    return "resolvent", resolvent


def _max_plan(workload: Workload, method: str, tol: float, max_iterations: int, solver: str,
              solver_options: dict[str, Any] | None, callback: Callback | None) -> Plan:
    """The attempts for ``objective="max"``: the dual ascent on ``(p, q)``, then the SDP where both sides are small."""

    k, m = workload.shape
    iterative: Callable[[], tuple[Factorization, int, bool]]
    if is_all_range(workload):
        if m > RANGE_MAX_UNIVERSE:
            raise ValueError(f"objective: 'max' of {workload.name} takes an m x m eigendecomposition a step (O(m^3): "
                             f"about 80 s in all at 2,048 cells, 10 minutes at 4,096); above {RANGE_MAX_UNIVERSE:,} "
                             "cells it is refused (the mean objective scales to 16,384 cells and beyond)")
        if method == "sdp" and k * m > MAX_OBJECTIVE_ENTRIES:
            raise ValueError(f"method: 'sdp' works on the explicit {k:,} x {m:,} matrix of {workload.name}, above "
                             f"{MAX_OBJECTIVE_ENTRIES:,} entries; method='auto' solves it on its Gram form")
        def iterative() -> tuple[Factorization, int, bool]:
            return solve_range_max(workload, tol, max_iterations, callback)

        def explicit() -> np.ndarray:  # formed only for the SDP, within MAX_OBJECTIVE_ENTRIES
            return dense_matrix(workload)

        name = "range-gram"
    else:
        if k * m > MAX_OBJECTIVE_ENTRIES:
            raise ValueError(f"objective: 'max' works on the explicit {k:,} x {m:,} matrix of {workload.name}, above "
                             f"{MAX_OBJECTIVE_ENTRIES:,} entries; a Kronecker product of small factors is solved "
                             "factor by factor, all ranges on their Gram form")
        matrix = dense_matrix(workload)
        if not np.all(np.isfinite(matrix)):
            raise ValueError("workload: F has a non-finite entry")
        if not np.any(matrix):
            raise ValueError("workload: F is zero; there is nothing to factorize")
        def iterative() -> tuple[Factorization, int, bool]:
            return solve_max_iterative(workload, matrix, tol, max_iterations, callback)

        def explicit() -> np.ndarray:
            return matrix

        name = "iterative"

    return _dense_plan(method, max(k, m) <= SDP_MAX_UNIVERSE, tol, iterative,
                       (f"sdp/{solver}",
                        lambda: solve_max_sdp(workload, explicit(), tol, solver, solver_options)), name)


def _structured_plan(workload: Workload, tol: float, max_iterations: int, objective: str = "mean",
                     callback: Callback | None = None) -> Step | None:
    """The structured method for ``workload``'s type, or None (see :doc:`/theory/factorization`)."""

    tables = table_terms(workload)
    if objective == "max" and tables is not None and tables.is_marginal and not isinstance(workload, Kron):
        def marginal_max() -> Outcome[tuple[Factorization, int | None]]:

            assert tables is not None
            coefficients, bound, evaluations, stopped = solve_marginal_max(tables.sizes, tables.terms, tol,
                                                                           max_iterations, callback)
            bases = [None if block is None else AttributeBasis(np.eye(block.universe_size),
                                                               helmert(block.universe_size))
                     for block in tables.blocks]
            fact = ResidualFactorization(workload, tables, bases, lower_bound=bound, coefficients=coefficients,
                                         objective="max")
            return judge(fact, tol, evaluations, stopped)

        return "residual", marginal_max
    if objective == "max" and not isinstance(workload, Kron):
        return None
    if objective == "mean" and tables is not None and (tables.is_marginal or not isinstance(workload, Kron)):
        def residual() -> Outcome[tuple[Factorization, int | None]]:
            assert tables is not None
            bases: list[AttributeBasis | None] = []
            ranged: dict[int, tuple[float, int]] = {}
            for attribute, block in enumerate(tables.blocks):
                if block is None:
                    bases.append(None)
                elif block.kernels.scaled_identity() == 1.0:
                    bases.append(AttributeBasis(np.eye(block.universe_size), helmert(block.universe_size)))
                else:
                    bases.append(_range_basis(block, max_iterations))
                    ranged[attribute] = (_lower_bound_of(block, max_iterations), block.num_queries)
            bound = grouped_lower_bound(tables.sizes, tables.terms, ranged, workload.num_queries)
            fact = ResidualFactorization(workload, tables, bases, lower_bound=bound)
            # Marginals: optimal over all strategies, held to tol. Range blocks: optimal within the
            # class, its gap to the grouped bound reported, not held to tol.
            return judge(fact, tol if tables.is_marginal else None)

        return ("residual" if tables.is_marginal else "range-residual"), residual
    if isinstance(workload, Kron):
        share = (1.0 + tol) ** (1.0 / len(workload.factors)) - 1.0

        def kron() -> Outcome[tuple[Factorization, int | None]]:
            solved: dict[int, Factorization] = {}
            for factor in workload.factors:  # a factor shared by several attributes is solved once
                if id(factor) not in solved:
                    # Small factors are solved tightly, at little cost: the product is then within
                    # UNION_STEP_TOL of the optimum.
                    tight = min(share, UNION_STEP_TOL) if factor.universe_size <= DENSE_UNION_UNIVERSE else share
                    solved[id(factor)] = _solve_step(factor, tight, max_iterations, objective)
            factors = [solved[id(factor)] for factor in workload.factors]
            iterations = sum(fact.stats.iterations or 0 for fact in solved.values())
            return judge(KronFactorization(workload, factors), tol, iterations)

        return "kron", kron
    products = kron_terms(workload)
    if products is not None:
        def union() -> Outcome[tuple[Factorization, int | None]]:
            assert products is not None
            solved: dict[int, Factorization] = {}
            for term in products:
                for factor in term.factors:
                    if id(factor) not in solved:
                        solved[id(factor)] = factorization_norm(factor, tol=tol, max_iterations=max_iterations)
            bounds = [math.prod(solved[id(factor)].lower_bound or 0.0 for factor in term.factors) for term in products]
            # Each attribute's step is solved tightly: the sweeps compound its inexactness.
            # The Gram matrix term by term over the products' own factors (a nested product's
            # kronecker_gram would split its attributes further than the strategy does).
            gram = KroneckerGram([(1.0, [factor.gram() for factor in term.factors]) for term in products])
            strategies, solves = optimize_kron_strategy(
                gram, lambda attribute: _solve_step(attribute, min(tol, UNION_STEP_TOL), max_iterations))
            # A strategy from a restricted class: its gap to the certified bound is reported, not
            # held to tol (the statistics say whether it met it).
            return judge(UnionKronFactorization(workload, products, strategies, bounds), None, solves)

        return "kron-strategy", union
    return None


def _solve_step(workload: Workload | np.ndarray, tol: float, max_iterations: int,
                objective: str = "mean") -> Factorization:
    """One small step of a structured method, solved to ``tol`` with at least ``STEP_MIN_ITERATIONS``."""
    return factorization_norm(workload, objective=objective, tol=tol,
                              max_iterations=max(max_iterations, STEP_MIN_ITERATIONS))


def _range_basis(block: Workload, max_iterations: int) -> Any:
    """A range block's residual basis: the optimal strategy of the centred block ``B (I - 1 1^T / n)``."""

    matrix = block.toarray()
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    contrasts = _solve_step(centred, UNION_STEP_TOL, max_iterations).strategy
    rows = contrasts.toarray()
    return AttributeBasis(matrix, rows - rows.mean(axis=1, keepdims=True))


def _lower_bound_of(block: Workload, max_iterations: int) -> float:
    """A certified lower bound on one block's gamma."""
    bound = _solve_step(block, UNION_STEP_TOL, max_iterations).lower_bound
    assert bound is not None  # every optimized factorization carries its bound
    return bound


if TYPE_CHECKING:  # the type checker proves that each method follows the protocol
    _FOLLOW_THE_PROTOCOL: tuple[FactorizationMethod, ...] = (SINGLE_QUERY, STRUCTURED, RESOLVENT, MAX_OBJECTIVE,
                                                             DENSE)
