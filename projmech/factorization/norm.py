"""``factorization_norm``: the optimal factorization norm gamma(F) of any workload, by the method
its structure allows, and its certified lower bound.

It chooses among the methods of this package: closed forms and iterative solvers for Kronecker,
marginal and range structure (:mod:`.structured`, :mod:`.residual`, :mod:`.resolvent`), the
mean-objective solvers on an explicit Gram matrix (:mod:`.mean`), the max objective
(:mod:`.maximum`), and rescales workloads whose entries float near the limits of double precision
(:class:`ScaledFactorization`). The choice and its limits are in the theory page *The
factorization mechanism and gamma(F)* (``docs/theory/factorization.md``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import numpy as np
import scipy.sparse as sp

from .._threads import on_one_blas_thread
from ..solve import Callback, Outcome, check_callback, record_total_time, solve_in_order
from ..validation import POSITIVE, POSITIVE_INT, Options, validate_params
from ..workloads import Kron, KroneckerGram, MatrixWorkload, Workload, table_terms
from ..workloads.structured import kron_terms
from ._kernel import _judge
from .base import OBJECTIVES, DenseFactorization, Factorization, FactorizationError, as_workload, dense_matrix
from .maximum import max_lower_bound, solve_marginal_max, solve_max_iterative, solve_max_sdp, solve_range_max
from .mean import _dual_value, _finish, _solve_iterative, _solve_sdp
from .range_forms import is_all_range
from .residual import AttributeBasis, grouped_lower_bound, helmert
from .resolvent import solve_resolvent, structure_of
from .structured import KronFactorization, ResidualFactorization, UnionKronFactorization, optimize_kron_strategy

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
#: (on the ``m x m`` Gram form) costs an ``m x m`` eigendecomposition a step, about 80 s in all
#: at 2,048 cells on 2 cores, some 10 minutes at 4,096.
RANGE_MAX_UNIVERSE = 4096


#: An explicit workload whose largest magnitude lies outside ``[2^-300, 2^300]`` is factorized
#: divided by a power of two near that magnitude (:class:`ScaledFactorization`): its Gram
#: matrix ``F^T F`` squares the entries, which underflow to 0 below about 1e-154 (a 1e-200
#: workload was refused as "F is zero") and overflow above 1e154. Inside the range every
#: product the methods form stays normal, measured on prefix(8) from 1e-154 to 1e150, and the
#: result keeps its usual type.
SAFE_SCALE = 2.0**300


def _check_weights(weights: Any, m: int, name: str = "weights") -> np.ndarray:
    q = np.asarray(weights, dtype=float)
    if q.shape != (m,):
        raise ValueError(f"{name}: expected shape ({m},), got {q.shape}")
    if not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
        raise ValueError(f"{name}: expected finite, nonnegative weights with a positive sum")
    return q / q.sum()


def factorization_lower_bound(workload: Workload | Any, weights: Any = None, *, query_weights: Any = None) -> float:
    """A certified lower bound on ``gamma(F)``, or on ``gamma_2(F)``, from weights.

    For every ``q`` in the probability simplex, ``gamma(F) >= ||F diag(q)^1/2||_* / sqrt(k)``
    (``||.||_*`` the nuclear norm, the sum of the singular values), with equality at the optimal
    ``q`` :cite:p:`ENU20`. The default uniform ``q`` gives the singular-value bound
    ``||F||_* / sqrt(k m)``. With weights ``p`` on the queries as well, the bound is on the
    max-error norm: ``gamma_2(F) >= ||diag(p)^1/2 F diag(q)^1/2||_*``, with equality at the optimal
    pair :cite:p:`MNT20` (uniform ``p`` gives the mean bound again, as ``gamma_2 >= gamma``). The
    derivations, from the duals of the semidefinite programs, are in the theory page *The
    factorization mechanism and gamma(F)* (``docs/theory/factorization.md``).

    The bound is a plain number, computed at once (one eigendecomposition): it has no solver
    statistics.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F; only its Gram matrix ``F^T F`` is used without ``query_weights``, the explicit matrix
        with them.
    weights : array_like, shape (m,), optional
        ``q``, on the cells: nonnegative and finite, with a positive sum; normalized to sum to
        one. Default uniform.
    query_weights : array_like, shape (k,), optional
        ``p``, on the queries, likewise: the bound is then on ``gamma_2(F)``.

    Returns
    -------
    float
        The bound, rounded down: computed eigenvalues are lowered by their error bound before
        their square roots are summed, so rounding cannot lift it above the norm.

    Raises
    ------
    ValueError
        If ``weights`` does not have shape ``(m,)`` (``query_weights`` shape ``(k,)``), has a
        negative or non-finite entry, or sums to zero.

    See Also
    --------
    factorization_norm : The optimum, whose ``lower_bound`` is this bound at the optimal weights.

    Examples
    --------
    >>> import projmech as pm
    >>> F = pm.prefix(16)
    >>> round(pm.factorization_lower_bound(F), 3)  # the singular-value bound
    1.628
    >>> fact = pm.factorization_norm(F)
    >>> pm.factorization_lower_bound(F) <= fact.lower_bound <= fact.gamma
    True

    The max-error norm's bound at the optimal weights of its own optimizer:

    >>> worst = pm.factorization_norm(F, objective="max")
    >>> round(worst.lower_bound, 4), round(worst.gamma_2, 4)
    (1.7045, 1.7045)
    """
    workload = as_workload(workload)
    k, m = workload.shape
    q = np.full(m, 1.0 / m) if weights is None else _check_weights(weights, m, "weights")
    form = _scaled_form(workload)
    if form is not None:
        # The bound is homogeneous: at the same weights, that of F / scale times scale, whose
        # Gram matrix neither underflows to 0 (a bound of 0) nor overflows.
        scale, scaled = form
        return scale * factorization_lower_bound(scaled, q, query_weights=query_weights)
    if query_weights is None:
        return _dual_value(workload.gram(), q) / math.sqrt(k)

    return max_lower_bound(workload.toarray(), _check_weights(query_weights, k, "query_weights"), q)


def _scaled_form(workload: Workload) -> tuple[float, Workload] | None:
    """``(s, F / s)`` for a workload with entries too small or too large for its Gram matrix,
    else None (F factorized as it is).

    An explicit matrix whose largest magnitude lies outside ``[2^-300, 2^300]`` is divided by
    ``s = 2^(e - 1)`` for its largest magnitude ``2^(e - 1) <= |F|_max < 2^e``: F / s has entries
    at most 2 in magnitude, and dividing by a power of two is exact. A Kronecker product is
    scaled factor by factor (``(A / s) ⊗ (B / t) = (A ⊗ B) / (s t)``), so that every factor is
    solved at unit scale and the product's norm and bound, which multiply over the factors, stay
    in range. The builders' closed forms (prefix sums, ranges, marginals) have unit entries.

    Raises
    ------
    ValueError
        Where the largest entry magnitude (of a factor, or of the product) is below float64's
        smallest normal number: gamma(F) would have few or no significant digits.
    """
    if isinstance(workload, MatrixWorkload):
        matrix = workload.matrix
        peak = float(np.abs(matrix.data if sp.issparse(matrix) else matrix).max(initial=0.0))
        if peak == 0 or 1.0 / SAFE_SCALE <= peak <= SAFE_SCALE:
            return None
        if peak < sys.float_info.min:
            _refuse_subnormal(f"{peak:.3g}")
        scale = math.ldexp(1.0, math.frexp(peak)[1] - 1)
        return scale, Workload(matrix / scale, domain=workload.domain, name=workload.name)
    if isinstance(workload, Kron):
        forms = [_scaled_form(factor) for factor in workload.factors]
        if all(form is None for form in forms):
            return None
        # The scale 2^exponent, the product of the factors' scales, is about the size of the
        # product's entries (times the unscaled factors' entries): outside float64's normal range
        # those entries, and gamma, are lost (the scale itself would underflow or overflow).
        exponent = sum(0 if form is None else math.frexp(form[0])[1] - 1 for form in forms)
        if exponent < sys.float_info.min_exp - 1:
            _refuse_subnormal(f"about 2^{exponent}")
        if exponent >= sys.float_info.max_exp:
            raise ValueError(f"workload: its largest entry magnitude, about 2^{exponent}, is beyond float64's range "
                             f"({sys.float_info.max:.3g}); scale F down (gamma(c F) = |c| gamma(F))")
        scale = math.ldexp(1.0, exponent)
        factors = [factor if form is None else form[1] for factor, form in zip(workload.factors, forms)]
        return scale, Kron(factors, domain=workload.domain, name=workload.name, implicit=workload.is_implicit)
    return None


def _refuse_subnormal(magnitude: str) -> NoReturn:
    """Refuse a workload whose largest entry magnitude, ``magnitude``, is below float64's normal range."""
    # Subnormal numbers carry few significant bits, and gamma(F), of their size, would too.
    raise ValueError(
        f"workload: its largest entry magnitude, {magnitude}, is below float64's smallest normal number "
        f"({sys.float_info.min:.3g}): gamma(F) and the answers would have few significant digits; scale F up "
        "(gamma(c F) = |c| gamma(F))"
    )


class ScaledFactorization(Factorization):
    """The factorization of ``F = s F'`` made from one of ``F'``, for a power of two ``s``.

    :func:`factorization_norm` divides a workload whose entries are too small or too large for
    its Gram matrix (an explicit matrix, or a Kronecker product of such factors; see :data:`SAFE_SCALE`) by
    ``s`` and factorizes the quotient ``F'``. ``gamma`` is homogeneous, ``gamma(s F') = s gamma(F')``, and so
    is every quantity of the factorization but the strategy: with ``R' M = F'``, ``(s R') M = F``, the same
    strategy M answers F with the reconstruction ``s R'``, and the dual bound at the same weights is
    ``s`` times as large (its relative gap, on ``gamma^2``, is unchanged). This wrapper reports
    them so, computed from ``F'``'s factorization and multiplied by ``s``: computed from F's own
    entries, ``||R||_F`` and the relative gap would square numbers of F's size, which underflow
    (or overflow) to 0 (or inf).

    Parameters
    ----------
    workload : Workload
        F.
    inner : Factorization
        A factorization of ``F / scale``.
    scale : float
        ``s``, a power of two.

    Attributes
    ----------
    inner : Factorization
        The factorization of ``F / scale``.
    scale : float
        ``s``.

    Examples
    --------
    A workload of entries 1e-200 (whose Gram matrix is 0 in float64) has ``1e-200`` times the
    norm and bound of prefix sums, the same strategy and relative gap:

    >>> import projmech as pm
    >>> tiny = pm.factorization_norm(1e-200 * pm.prefix(8).toarray())
    >>> unit = pm.factorization_norm(pm.prefix(8))
    >>> type(tiny).__name__, round(tiny.gamma / 1e-200, 4), round(unit.gamma, 4)
    ('ScaledFactorization', 1.4949, 1.4949)
    >>> round(tiny.lower_bound / 1e-200, 4), round(tiny.relative_gap, 6) == round(unit.relative_gap, 6)
    (1.4944, True)
    """

    def __init__(self, workload: Workload, inner: Factorization, scale: float) -> None:
        self.workload = workload
        self.inner = inner
        self.scale = scale
        self.strategy = inner.strategy  # M is the same: only R scales
        self.objective = inner.objective
        self.lower_bound = None if inner.lower_bound is None else scale * inner.lower_bound
        self.stats = inner.stats

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct(measurements)

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        return self.scale * self.inner._reconstruct_block(block)

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        return self.scale * self.inner._reconstruction_columns(start, stop)

    @property
    def reconstruction_norm(self) -> float:
        """``||R||_F = s ||R'||_F``."""
        return self.scale * self.inner.reconstruction_norm

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2} = s ||R' M - F'||_{1->2}``."""
        return self.scale * self.inner.residual

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``, that of ``F'``'s factorization (the strategy is the same)."""
        return self.inner.strategy_sensitivity

    def _query_norms(self) -> np.ndarray:
        return self.scale * self.inner.query_norms

    @property
    def relative_gap(self) -> float | None:
        """That of ``F'``'s factorization: the gap on the squared objective does not depend on
        ``s`` (and squaring F's own values would underflow)."""
        return self.inner.relative_gap

    def _finite_factors(self) -> bool:
        return self.inner._finite_factors()

    def _workload_norm(self) -> float:
        return self.scale * self.inner._workload_norm()

    def _defect_residual(self) -> float:
        return self.scale * self.inner._defect_residual()

    def _is_approximate(self) -> bool:
        return self.inner._is_approximate()

    def _description(self) -> str:
        return f"{self.inner._description()}, solved on F / 2^{math.frexp(self.scale)[1] - 1}"


def _factorize_scaled(workload: Workload, scale: float, scaled: Workload,
                      solve: Callable[[Workload], Factorization]) -> Factorization:
    """``solve(scaled)``, with ``scaled = F / scale``, as a :class:`ScaledFactorization` of F (the
    quotient itself where ``scale`` is 1: factors scaled in opposite directions); a
    FactorizationError's best factorization is scaled back too. Refused where the scaled-back
    value leaves float64's normal range (it is ``scale`` times that of ``F / scale``)."""
    try:
        inner = solve(scaled)
        if scale == 1.0:
            return inner
    except FactorizationError as error:
        if error.best is not None:
            error.best = ScaledFactorization(workload, error.best, scale)
        raise
    fact = ScaledFactorization(workload, inner, scale)
    if not sys.float_info.min <= fact.value <= sys.float_info.max:
        raise ValueError(f"workload: its factorization norm, {fact.value:.3g}, lies outside float64's normal range; "
                         "scale F (gamma(c F) = |c| gamma(F))")
    return fact


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

    ``gamma(F) = min ||R||_F ||M||_{1->2} / sqrt(k)`` over ``R M = F`` :cite:p:`ENU20`, the
    matrix mechanism's optimal strategy :cite:p:`LHRMM10`. The result's ``gamma`` is computed
    from its own M and R (``R = F M^+``, applied implicitly), its ``residual``
    ``||R M - F||_{1->2}`` is checked, and ``lower_bound`` is the dual bound
    ``||F diag(q)^1/2||_* / sqrt(k)`` at the final weights
    (:func:`factorization_lower_bound`), so ``relative_gap`` (on ``gamma^2``) bounds how far it is
    from optimal. The program, its dual and the iterative method are derived in the theory page
    *The factorization mechanism and gamma(F)* (``docs/theory/factorization.md``).
    It runs on one BLAS thread: 1 and 2 threads round its dense products differently, and a
    strategy, and the answers a seed gives with it, must not depend on the machine.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F. Only its Gram matrix ``F^T F`` (``m x m``) is used: implicit workloads such as
        ``all_range(4096, implicit=True)`` work.
    objective : {"mean", "max"}, default "mean"
        ``"mean"``: ``gamma(F)``, the root-mean-square error over the queries. ``"max"``:
        ``gamma_2(F) = min ||R||_{2->inf} ||M||_{1->2}``, the worst query's error
        :cite:p:`MNT20`, certified by its dual ``max_{p, q} ||D_p^1/2 F D_q^1/2||_*``
        (:func:`factorization_lower_bound` with ``query_weights``); the result's ``value`` is
        then ``gamma_2`` and ``relative_gap`` is on ``gamma_2^2``. It works on the explicit
        matrix (``k m`` at most ``MAX_OBJECTIVE_ENTRIES``), solved from its smaller side; its
        structured methods are the Kronecker product's, factor by factor, the resolvent method
        for prefix sums, and for all ranges the ``m x m`` Gram form (``m`` at most
        ``RANGE_MAX_UNIVERSE``), which ``"auto"`` and ``"iterative"`` use too. The iterative method
        is the same dual ascent on the pair ``(p, q)``, with ``k + m`` weights; the SDP is
        ``min t s.t. [[W, F], [F^T, X]] >= 0, diag(W) <= t, diag(X) <= t``.
    method : {"auto", "structured", "iterative", "sdp"}
        ``"structured"``: for a marginal workload (a union of Kronecker products of scaled
        identities and totals, :func:`~projmech.workloads.table_terms`), the closed-form
        optimum over the residual basis, certified by the singular-value bound; for a Kronecker
        product, the product of the factors' optima (each by ``"auto"``), certified by the
        product of their bounds; for a union of tables with range blocks
        (:func:`~projmech.workloads.range_marginals`), the residual strategy with range
        contrasts (``"range-residual"``); for another union of Kronecker products, one Kronecker
        strategy by block coordinate descent (``"kron-strategy"``). Those two are optimal within
        their class only: their gap to a certified (but loose) bound is reported and not held to
        ``tol`` (``stats.tolerance_met`` says whether it met it). The strategy is never
        densified (derivations in ``docs/theory/structured_factorization.md``).
        ``"iterative"``: dual ascent, one ``m x m`` (or ``r x r`` for rank ``r < m``)
        eigendecomposition per iteration. ``"sdp"``: the CVXPY semidefinite program
        ``min tr(U) s.t. [[U, B], [B^T, X]] >= 0, diag(X) <= 1`` (``B^T B = F^T F``), for
        ``m`` up to about a hundred. ``"auto"``: iterative, then the SDP if that did not certify
        ``tol`` and ``m <= 64``; where the workload's type has a structured method, that method
        instead (a union that is not a marginal workload only above ``DENSE_UNION_UNIVERSE``
        cells); every attempt is recorded.
    tol : float, default 1e-3
        Target relative gap on ``gamma^2``.
    max_iterations : int, default 200
        For the iterative method: the number of eigendecompositions.
    solver : str, default "SCS"
        The CVXPY solver for the SDP. SCS (first-order) is the default: an interior-point solver
        such as ``"CLARABEL"`` is more accurate but factors a dense system in the ``m(m+1)/2``
        entries of X (about 200 s at m = 64 on 2 cores, SCS 1.4 s).
    solver_options : dict, optional
        Keyword options for ``problem.solve``.
    callback : callable, optional
        ``callback(iteration, gap)`` after each step of the iterative method, with the best
        relative gap so far (:class:`~projmech.solve.ProgressBar` draws a bar).

    Returns
    -------
    Factorization
        With ``stats``: the method (``"iterative"``, ``"sdp/<solver>"``, ``"residual"``,
        ``"kron"``...), the relative gap certified against ``tol``, every attempt (the accepted
        one last), ``solve_time`` (the accepted attempt, its final check included) and
        ``total_time`` (the whole call: the Gram matrix, every attempt, the checks and the
        certificate).

    Raises
    ------
    ValueError
        If ``objective``, ``method``, ``tol`` or ``max_iterations`` has a wrong value (``tol``
        not a positive finite number, ``max_iterations`` below 1), the workload's
        Gram matrix is not finite or F is zero, F's largest entry magnitude is outside float64's
        normal range (an explicit F whose entries lie outside ``[2^-300, 2^300]`` is factorized
        divided by a power of two and returned as a :class:`ScaledFactorization`; 1e-200 F was
        refused as zero), ``method="structured"`` is asked of a workload
        without structure, or ``objective="max"`` of a matrix above ``MAX_OBJECTIVE_ENTRIES``
        (all ranges: above ``RANGE_MAX_UNIVERSE`` cells).
    TypeError
        If ``callback`` is neither None nor callable, or ``objective``, ``method``, ``tol`` or
        ``max_iterations`` has a wrong type (``max_iterations=2.0``, ``tol="a"``).
    FactorizationError
        If no method certified ``tol`` and passed the final check
        (:meth:`~projmech.factorization.base.Factorization.defect`: ``||R M - F||_{1->2} <= 1e-6
        ||F||_{1->2}``, a finite ``gamma`` recomputed from the factors, ``lower_bound <=
        gamma``); every attempt is in ``error.attempts``, and the best factorization that passed
        the check is attached as ``error.best``.

    See Also
    --------
    factorization_lower_bound : The dual bound at any weights.
    projmech.mechanisms.additive.FactorizationMechanism : Releases answers through a factorization.

    Examples
    --------
    >>> import projmech as pm
    >>> fact = pm.factorization_norm(pm.prefix(16))
    >>> round(fact.gamma, 3), round(fact.lower_bound, 3)
    (1.69, 1.689)
    >>> fact.relative_gap <= 1e-3, fact.stats.solver
    (True, 'iterative')

    Marginal workloads have a closed form, certified by the singular-value bound:

    >>> domain = pm.Domain(["age", "sex", "education"], [10, 2, 5])
    >>> fact = pm.factorization_norm(pm.marginals(domain, 2))
    >>> fact.stats.solver, round(fact.gamma, 3), fact.relative_gap < 1e-9
    ('residual', 1.446, True)

    ``stats.total_time`` covers the whole call, ``stats.solve_time`` the accepted attempt:

    >>> fact.stats.solve_time <= fact.stats.total_time
    True

    The worst query's error instead of the mean, inside the published bounds on prefix sums,
    ``(2 + ln((2m+1)/3)) / pi <= gamma_2 <= 1 + ln(m) / pi``:

    >>> worst = pm.factorization_norm(pm.prefix(64), objective="max")
    >>> round(worst.gamma_2, 4), round(worst.lower_bound, 4), worst.relative_gap <= 1e-3
    (2.1124, 2.1114, True)
    """
    workload = as_workload(workload)
    callback = check_callback(callback)
    form = _scaled_form(workload)
    if form is not None:
        # Entries beyond [2^-300, 2^300]: factorize F / scale, whose Gram matrix neither
        # underflows nor overflows, and scale R, gamma and the bound back (ScaledFactorization).
        return _factorize_scaled(workload, *form, lambda scaled: factorization_norm(
            scaled, objective=objective, method=method, tol=tol, max_iterations=max_iterations, solver=solver,
            solver_options=solver_options, callback=callback))
    request = Request(objective, method, tol, max_iterations, solver, solver_options, callback)
    chosen = choose_method(workload, request)
    plan = chosen.plan(workload, request)
    fact, _, _ = solve_in_order(plan, FactorizationError, chosen.failure(request, plan), _finish(tol))
    return fact


Plan = list[tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]]]


@dataclass(frozen=True)
class Request:
    """What :func:`factorization_norm` was asked, checked: the objective, the method asked for
    (``"auto"``, ``"structured"``, ``"iterative"``, ``"sdp"``) and the solvers' settings."""

    objective: str
    method: str
    tol: float
    max_iterations: int
    solver: str
    solver_options: dict[str, Any] | None
    callback: Callback | None


class FactorizationMethod(Protocol):
    """One way to compute a workload's factorization norm, as :func:`choose_method` sees it (the
    factorizations' counterpart of the bodies' protocol, :class:`projmech.bodies.body.Body`).

    ``name`` is the family (``"structured"``, ``"resolvent"``, ``"max"``, ``"dense"``; each
    attempt of its plan names itself in the statistics); :meth:`blocker` says why it cannot take
    a workload, before anything is solved; :meth:`plan` gives the attempts
    :func:`~projmech.solve.solve_in_order` runs, in order, each judged against the request's
    tolerance by the same final check; :meth:`failure` words the error when none certifies it.
    """

    name: str

    def blocker(self, workload: Workload, request: Request) -> str | None:
        """Why this method cannot take ``workload`` (a phrase), or None."""
        ...

    def plan(self, workload: Workload, request: Request) -> Plan:
        """The attempts, in order (a ValueError where the workload's size or values rule it out)."""
        ...

    def failure(self, request: Request, plan: Plan) -> str:
        """The message of the FactorizationError raised when no attempt of ``plan`` certifies the
        tolerance."""
        ...


class _Structured:
    """The structure's own method: the residual strategy for a union of tables, the product of
    the factors' optima for a Kronecker product, one Kronecker strategy for another union."""

    name = "structured"

    def blocker(self, workload: Workload, request: Request) -> str | None:
        if self._attempt(workload, request) is None:
            return "it is neither a Kronecker product nor a union of tables"
        return None

    def plan(self, workload: Workload, request: Request) -> Plan:
        attempt = self._attempt(workload, request)
        assert attempt is not None, "plan() of a workload blocker() refused"
        return [attempt]

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: the {plan[0][0]} factorization did not certify a relative gap <= {request.tol:g}"

    @staticmethod
    def _attempt(workload: Workload, request: Request) -> tuple[str, Callable[[], Outcome[tuple[Factorization,
                                                                                           int | None]]]] | None:
        return _structured_plan(workload, request.tol, request.max_iterations, request.objective, request.callback)


class _Resolvent:
    """Prefix sums and all ranges at scale: the ascent on their closed-form tridiagonal inverses
    (from ``RESOLVENT_MIN_UNIVERSE`` cells under ``"auto"``; at any size when asked by name)."""

    name = "resolvent"

    def blocker(self, workload: Workload, request: Request) -> str | None:
        if _resolvent_plan(workload, request.objective, request.tol, request.max_iterations, request.callback,
                           force=request.method == "structured") is None:
            return "it is not prefix sums or all ranges at the size the resolvent method is for"
        return None

    def plan(self, workload: Workload, request: Request) -> Plan:
        attempt = _resolvent_plan(workload, request.objective, request.tol, request.max_iterations, request.callback,
                                  force=request.method == "structured")
        assert attempt is not None, "plan() of a workload blocker() refused"
        return [attempt]

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: the {plan[0][0]} factorization did not certify a relative gap <= {request.tol:g}"


class _MaxObjective:
    """The ``"max"`` objective (gamma_2) on the explicit matrix, or all ranges on their Gram form:
    the dual ascent on ``(p, q)``, then the SDP where both sides are small."""

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
    """The mean objective on the workload's Gram matrix: the dual ascent, then the SDP where the
    universe is small (or where it is asked for)."""

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
    """One query ``q`` (a ``1 x m`` workload, such as a Kronecker factor ``total``): its optimal
    strategy is the query itself (``R = [1]``), ``gamma = max_j |q_j|``, certified by the dual
    bound at the weights ``e_j`` of its largest entry, which equals it. The strategy keeps the
    query's exact entries, so a strategy ``kron(..., total, ...)`` still sums that attribute out
    when it is measured (a numerical optimum's ``1 +- 1e-16`` entries did not, and its counts
    were taken over the whole universe)."""

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
            return _judge(DenseFactorization(workload, row[None, :], lower_bound=bound), request.tol)

        return [("single-query", single)]

    def failure(self, request: Request, plan: Plan) -> str:
        return f"factorization_norm: the single query's factorization did not certify a relative gap <= {request.tol:g}"


#: The methods :func:`choose_method` considers, in its order of preference.
SINGLE_QUERY, STRUCTURED, RESOLVENT, MAX_OBJECTIVE, DENSE = (_SingleQuery(), _Structured(), _Resolvent(),
                                                             _MaxObjective(), _Dense())


def choose_method(workload: Workload, request: Request) -> FactorizationMethod:
    """The one place that picks a factorization method, from the workload and the request.

    A single query takes its closed form (:data:`SINGLE_QUERY`). Under ``"auto"`` and
    ``"structured"``, the workload's structure first (:data:`STRUCTURED`, then
    :data:`RESOLVENT`), except that a structured method that does not certify the tolerance
    (``UNCERTIFIED_METHODS``) gives way to the dense method on a universe of at most
    ``DENSE_UNION_UNIVERSE`` cells under ``"auto"``; then the ``"max"`` objective's method or the
    dense one. ``"structured"`` with no structure to use is refused, naming what it needs.
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
                sdp: tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]],
                name: str = "iterative") -> Plan:
    """The dense methods to try, in order: the iterative one (``iterative()`` returns the
    factorization, its iterations and whether it stopped at its limit; ``name`` in the
    statistics), then the SDP where ``method`` asks for it or, under ``"auto"``, where the
    problem is ``small``."""
    def attempt() -> Outcome[tuple[Factorization, int | None]]:
        fact, iterations, stopped = iterative()
        return _judge(fact, tol, iterations, stopped)

    plan: Plan = [(name, attempt)] if method in ("auto", "iterative") else []
    if method == "sdp" or (method == "auto" and small):
        plan.append(sdp)
    return plan


def _resolvent_plan(workload: Workload, objective: str, tol: float, max_iterations: int, callback: Callback | None,
                    force: bool) -> tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]] | None:
    """The resolvent method for a workload with a closed-form tridiagonal inverse (prefix sums,
    all ranges), from ``RESOLVENT_MIN_UNIVERSE`` cells (at any size when ``force``); else None."""

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
        return _judge(fact, tol, iterations, stopped)

    return "resolvent", resolvent


def _max_plan(workload: Workload, method: str, tol: float, max_iterations: int, solver: str,
              solver_options: dict[str, Any] | None, callback: Callback | None) -> Plan:
    """The attempts for ``objective="max"`` on the explicit matrix: the dual ascent on
    ``(p, q)``, then the SDP where both sides are small."""

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
                     callback: Callback | None = None,
                     ) -> tuple[str, Callable[[], Outcome[tuple[Factorization, int | None]]]] | None:
    """The structured method for ``workload``'s type, or None: the residual strategy for a union
    of tables (closed form for marginals, range contrasts for range blocks); for a Kronecker
    product, the optimum of each factor (to a tolerance whose product meets ``tol``: relative
    gaps compound as ``prod (1 + gap_i) - 1``); for another union, one Kronecker strategy. For
    the ``"max"`` objective, the Kronecker product (``gamma_2`` and its dual bound multiply over
    factors) and the marginal workload (the ascent on one weight per table, the residual
    strategy)."""

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
            return _judge(fact, tol, evaluations, stopped)

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
            return _judge(fact, tol if tables.is_marginal else None)

        return ("residual" if tables.is_marginal else "range-residual"), residual
    if isinstance(workload, Kron):
        share = (1.0 + tol) ** (1.0 / len(workload.factors)) - 1.0

        def kron() -> Outcome[tuple[Factorization, int | None]]:
            solved: dict[int, Factorization] = {}
            for factor in workload.factors:  # a factor shared by several attributes is solved once
                if id(factor) not in solved:
                    # Small factors are solved tightly, at little cost: the product is then within
                    # UNION_STEP_TOL of the optimum (CPS W2: 6.97554, not 6.97655 at tol=1e-3).
                    tight = min(share, UNION_STEP_TOL) if factor.universe_size <= DENSE_UNION_UNIVERSE else share
                    solved[id(factor)] = _solve_step(factor, tight, max_iterations, objective)
            factors = [solved[id(factor)] for factor in workload.factors]
            iterations = sum(fact.stats.iterations or 0 for fact in solved.values())
            return _judge(KronFactorization(workload, factors), tol, iterations)

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
            return _judge(UnionKronFactorization(workload, products, strategies, bounds), None, solves)

        return "kron-strategy", union
    return None


def _solve_step(workload: Workload | np.ndarray, tol: float, max_iterations: int,
                objective: str = "mean") -> Factorization:
    """One small step of a structured method, solved to ``tol``: tight steps may need more
    iterations than the caller allowed for the whole (at least ``STEP_MIN_ITERATIONS``)."""
    return factorization_norm(workload, objective=objective, tol=tol,
                              max_iterations=max(max_iterations, STEP_MIN_ITERATIONS))


def _range_basis(block: Workload, max_iterations: int) -> Any:
    """A range block's residual basis: its contrasts are the optimal strategy of ``B (I - 1 1^T /
    n)``, whose rows the row-space method keeps orthogonal to ``1`` (the rounding left along
    ``1`` is removed), certified to ``UNION_STEP_TOL``."""

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
