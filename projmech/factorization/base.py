"""Factorizations F = R M of a workload: the factorization (matrix) mechanism's value.

The factorization mechanism measures the strategy queries ``M h`` with Gaussian noise ``Z`` and
answers ``R (M h + Z) = F h + R Z`` :cite:p:`LHRMM10,ENU20`. With ``sigma`` calibrated to the
strategy's sensitivity (at most ``(2/n) ||M||_{1->2}`` on a normalized histogram of ``n``
records), the root-mean-square error over the ``k`` queries is ``sigma ||R||_F / sqrt(k)``, so
the factorization norm ``gamma = ||R||_F ||M||_{1->2} / sqrt(k)`` is the quantity to minimize.
The derivation is in the theory page *The factorization mechanism and gamma(F)*
(``docs/theory/factorization.md``).

This module holds the :class:`Factorization` value and the fixed strategies (identity, total,
hierarchical :cite:p:`HRMS10`); the optimal ``gamma(F)`` is in
:mod:`projmech.factorization.mean`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from .._sparse import issparse
from ..solve import SolveError, SolveResult, SolveStats, Status
from ..validation import check_positive_int
from ..workloads import Workload, as_query_matrix, column_norm
from .range_forms import is_all_range, prefix_form, range_squares, range_squares_slack

__all__ = ["Factorization", "FactorizationError", "DenseFactorization", "as_workload", "identity_strategy",
           "total_strategy", "hierarchical_strategy",
           "square_root_strategy", "RESIDUAL_RTOL", "OBJECTIVES"]

class FactorizationError(SolveError):
    """A factorization optimizer stopped without certifying its tolerance.

    ``attempts`` holds every method tried (an :class:`~projmech.solve.Attempt` each), ``best``
    the factorization with the smallest relative gap among those that passed the final check
    (a valid factorization, with its bound, gap and statistics), or None.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        Every method tried, in order.
    best : Factorization, optional
        The best factorization that passed the final check.

    Examples
    --------
    >>> import projmech as pm
    >>> try:
    ...     pm.factorization_norm(pm.prefix(64), method="iterative", tol=1e-12, max_iterations=2)
    ... except pm.FactorizationError as error:
    ...     print(error.attempts[0].status, error.best.lower_bound <= error.best.gamma)
    iteration_limit True
    """


#: What a factorization norm measures: ``"mean"``, the root mean square of the queries' noise
#: (``gamma``); ``"max"``, the largest (``gamma_2``).
OBJECTIVES = ("mean", "max")

#: Entries of ``R`` formed at once when :attr:`Factorization.query_norms` applies R to blocks of
#: unit measurements (64 MB of float64).
_QUERY_NORM_BLOCK = 8_000_000

#: Default tolerance of :meth:`Factorization.defect` on ``R M = F + E``, relative to
#: ``||F||_{1->2}``: an implicit workload's residual comes from its Gram matrix and resolves
#: only down to about ``1e-8 ||F||_{1->2}`` (see :attr:`Factorization.residual`).
RESIDUAL_RTOL = 1e-6

#: ``gamma^2 / lower_bound^2 - 1`` below ``-_BOUND_SLACK`` means a lower bound above the
#: factorization's own gamma: an invalid bound, not rounding (both are rounded to about 1e-13
#: relative: eigenvalues of an ``m x m`` matrix, ``m`` up to 4096).
_BOUND_SLACK = 1e-9


def _dense(matrix: Any) -> np.ndarray:
    return matrix.toarray() if issparse(matrix) else np.asarray(matrix, dtype=float)


def dense_matrix(workload: Workload) -> np.ndarray:
    """F as a dense array: an implicit workload's from its products with the identity (which
    :meth:`Workload.toarray` refuses), for the checks and methods that need every entry."""
    if workload.is_implicit:
        return np.asarray(workload.kernels.matmat(np.eye(workload.universe_size)))
    return _dense(workload.matrix)


def check_objective(objective: Any) -> str:
    """``objective`` if it is one of :data:`OBJECTIVES`, else a ValueError naming it.

    Parameters
    ----------
    objective : str
        ``"mean"`` or ``"max"``.

    Returns
    -------
    str
        ``objective``.

    Raises
    ------
    ValueError
        If it is neither.

    Examples
    --------
    >>> from projmech.factorization.base import check_objective
    >>> check_objective("max")
    'max'
    """
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {OBJECTIVES}, got {objective!r}")
    return objective


def as_workload(workload: Workload | Any, name: str = "workload") -> Workload:
    """Take a workload as given, or wrap a bare ``k x m`` query matrix in one.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        A workload, or its query matrix (dense or scipy sparse).
    name : str, default "workload"
        The argument's name, for the error message.

    Returns
    -------
    Workload
        ``workload`` itself, or a :class:`~projmech.workloads.Workload` of the matrix.

    Raises
    ------
    ValueError
        If the matrix is not 2-d, or has a non-finite entry.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.factorization.base import as_workload
    >>> as_workload(np.ones((2, 3))).shape
    (2, 3)
    """
    return workload if isinstance(workload, Workload) else Workload(as_query_matrix(workload, name))


class Factorization(SolveResult):
    """A factorization ``R M = F + E`` of a ``k x m`` workload F (``E = 0`` for an exact one).

    The factorization mechanism measures ``M h`` with Gaussian noise ``Z`` and answers
    ``R (M h + Z)`` :cite:p:`LHRMM10,ENU20`; its error is proportional to :attr:`gamma`.
    ``Factorization(workload, strategy, ...)`` builds one from an explicit strategy matrix: a
    :class:`DenseFactorization`, whose parameters it takes. The optimizers also return
    structured ones for Kronecker and marginal workloads, whose strategy is a structured
    :class:`~projmech.workloads.Workload` and whose R is applied factor by factor.

    Every factorization offers :attr:`strategy` (M as a workload over F's universe, whose
    counts the mechanism measures), :meth:`reconstruct`, :attr:`reconstruction_norm`
    (``||R||_F``), :attr:`residual` (``||R M - F||_{1->2}``, or a bound on it), :attr:`gamma`,
    :attr:`lower_bound`, :attr:`relative_gap`, :meth:`defect` and :attr:`stats`.

    Parameters
    ----------
    *args, **kwargs
        Those of :class:`DenseFactorization`: ``workload, strategy, reconstruction=None, *,
        strategy_pinv=None, perturbation=None, lower_bound=None, stats=None, gram=None``.

    Attributes
    ----------
    workload : Workload
        F.
    strategy : Workload
        M, over F's universe.
    lower_bound : float or None
        A certified lower bound on the optimum this factorization approximates (``gamma(F)``,
        ``gamma_2(F)`` for the ``"max"`` objective, or ``gamma_alpha(F)`` for an approximate
        one), or None.
    objective : {"mean", "max"}
        The norm the factorization was optimized for, which :attr:`value`, :attr:`lower_bound`
        and :attr:`relative_gap` refer to: :attr:`gamma` (root-mean-square error) or
        :attr:`gamma_2` (worst query).
    stats : SolveStats
        How the factorization was obtained (solver ``"given"`` for a given strategy).

    See Also
    --------
    projmech.factorization.norm.factorization_norm : The optimal factorization.
    projmech.mechanisms.additive.FactorizationMechanism : Releases answers through a factorization.

    Examples
    --------
    >>> import projmech as pm
    >>> F = pm.prefix(16)
    >>> tree = pm.Factorization(F, pm.hierarchical_strategy(16))
    >>> type(tree).__name__, tree.num_measurements
    ('DenseFactorization', 31)
    >>> round(tree.gamma, 3), round(pm.Factorization(F, pm.identity_strategy(16)).gamma, 3)
    (1.938, 2.915)
    >>> tree.lower_bound is None, tree.stats.status
    (True, <Status.GIVEN: 'given'>)
    """

    workload: Workload
    strategy: Workload
    lower_bound: float | None
    stats: SolveStats
    objective: str = "mean"

    def __new__(cls, *args: Any, **kwargs: Any) -> Factorization:
        return super().__new__(DenseFactorization if cls is Factorization else cls)

    # --- what each kind of factorization provides -----------------------------------------------

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        """``R y`` for a checked float64 vector of ``l`` measurements."""
        raise NotImplementedError

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        """``R Y`` for an ``(l, r)`` array: what a Kronecker product applies along one axis. By
        columns, unless a kind has a faster route."""
        return np.stack([self._reconstruct(np.ascontiguousarray(column)) for column in block.T], axis=1)

    @property
    def reconstruction_norm(self) -> float:
        """``||R||_F``."""
        raise NotImplementedError

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2}`` (or, where stated, an upper bound on it): zero to rounding for
        an exact factorization."""
        raise NotImplementedError

    def _finite_factors(self) -> bool:
        return True

    def _description(self) -> str:
        raise NotImplementedError

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        """Columns ``start:stop`` of R, ``(k, stop - start)``: R applied to unit measurements,
        unless a kind has a faster route."""
        units = np.zeros((self.num_measurements, stop - start))
        units[np.arange(start, stop), np.arange(stop - start)] = 1.0
        return self._reconstruct_block(units)

    def _query_norms(self) -> np.ndarray:
        """``||r_i||`` for every row of R, from blocks of its columns small enough to hold (a
        workload may have millions of queries), unless a kind has a faster route."""
        squares = np.zeros(self.num_queries)
        step = max(1, _QUERY_NORM_BLOCK // max(self.num_queries, 1))
        for start in range(0, self.num_measurements, step):
            stop = min(start + step, self.num_measurements)
            squares += np.sum(_dense(self._reconstruction_columns(start, stop)) ** 2, axis=1)
        return np.sqrt(squares)

    # --- shared ------------------------------------------------------------------------------

    @classmethod
    def from_strategy(cls, workload: Workload | Any, strategy: Any, *, rtol: float = 1e-7) -> Factorization:
        """The factorization with the least-squares reconstruction ``R = F M^+`` of a strategy.

        Unlike the constructor, it checks that the strategy answers the workload exactly.

        Parameters
        ----------
        workload : Workload or array_like, shape (k, m)
            F.
        strategy : array_like, shape (l, m)
            M.
        rtol : float, default 1e-7
            Tolerance on ``||F M^+ M - F||_{1->2} / ||F||_{1->2}``.

        Returns
        -------
        Factorization
            The exact factorization ``(F M^+) M = F``.

        Raises
        ------
        ValueError
            If ``F`` is not in the row space of ``M`` (``||F M^+ M - F||_{1->2}`` above
            ``rtol * ||F||_{1->2}``, see :meth:`defect`): no reconstruction answers the workload
            exactly.
        """
        fact = DenseFactorization(workload, strategy)
        defect = fact.defect(rtol)
        if defect is not None:
            raise ValueError(f"strategy: the workload is not in its row space ({defect}); "
                             "no reconstruction R gives R M = F")
        return fact

    @property
    def num_queries(self) -> int:
        """``k``, the number of workload queries answered."""
        return self.workload.num_queries

    @property
    def num_measurements(self) -> int:
        """``l``, the number of strategy queries measured."""
        return self.strategy.num_queries

    def reconstruct(self, measurements: Any) -> np.ndarray:
        """Apply R to a vector of measurements.

        Parameters
        ----------
        measurements : array_like, shape (l,)
            ``y``, the (noisy) answers to the strategy's queries.

        Returns
        -------
        ndarray, shape (k,)
            ``R y``, the workload's answers.

        Raises
        ------
        ValueError
            If ``measurements`` does not have shape ``(l,)``.
        """
        y = np.asarray(measurements, dtype=float)
        if y.shape != (self.num_measurements,):
            raise ValueError(f"measurements: expected shape ({self.num_measurements},), got {y.shape}")
        return self._reconstruct(y)

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``."""
        return self.strategy.column_norm(2)

    @property
    def gamma(self) -> float:
        """The factorization norm ``||R||_F ||M||_{1->2} / sqrt(k)`` :cite:p:`ENU20`: the
        root-mean-square error factor over the queries."""
        return self.reconstruction_norm * self.strategy_sensitivity / math.sqrt(self.num_queries)

    @cached_property
    def query_norms(self) -> np.ndarray:
        """``||r_i||``, the norm of each row of R: query ``i``'s noise ``r_i^T Z`` has standard
        deviation ``sigma ||r_i||`` when ``Z`` has ``sigma`` per measurement."""
        return self._query_norms()

    @property
    def gamma_2(self) -> float:
        """The factorization norm ``||R||_{2->inf} ||M||_{1->2}`` :cite:p:`MNT20`: the largest
        row norm of R times the largest column norm of M, the worst query's error factor."""
        return float(np.max(self.query_norms)) * self.strategy_sensitivity

    @property
    def value(self) -> float:
        """The norm of :attr:`objective`: :attr:`gamma` for ``"mean"``, :attr:`gamma_2` for
        ``"max"``; what :attr:`lower_bound` bounds."""
        return self.gamma_2 if self.objective == "max" else self.gamma

    def _workload_norm(self) -> float:
        return self.workload.column_norm(2)

    def _defect_residual(self) -> float:
        return self.residual

    def defect(self, rtol: float = RESIDUAL_RTOL) -> str | None:
        """The final check of a factorization before it is returned: why it fails, or None.

        From the factors alone: M (and an explicit R) finite; ``R M = F + E`` (``E = 0`` for an
        exact factorization) to ``rtol * ||F||_{1->2}`` -- relative, so that a workload scaled
        by ``1e-8`` is held to the same standard as one of norm 1; ``gamma``, recomputed from M
        and R, finite; and a lower bound, when there is one, at most ``gamma`` (up to
        ``_BOUND_SLACK`` on ``gamma^2``), so that :attr:`relative_gap` certifies something.

        Parameters
        ----------
        rtol : float, default RESIDUAL_RTOL
            Tolerance on ``||R M - F - E||_{1->2} / ||F||_{1->2}``.

        Returns
        -------
        str or None
            Why the factorization fails the check, or None when it passes.
        """
        if not self._finite_factors():
            return "non-finite factors"
        norm = self._workload_norm()
        residual = self._defect_residual()
        if not residual <= rtol * norm:
            return f"||R M - F||_1->2 = {residual:.3e} > {rtol:g} ||F||_1->2 = {rtol * norm:.3e}"
        name = "gamma_2" if self.objective == "max" else "gamma"
        if not math.isfinite(self.value):
            return f"{name} recomputed from the factors is {self.value}"
        gap = self.relative_gap
        if gap is not None and not gap >= -_BOUND_SLACK:
            return f"lower bound {self.lower_bound:.12g} exceeds {name} {self.value:.12g} of the factors"
        return None

    @property
    def relative_gap(self) -> float | None:
        """``value^2 / lower_bound^2 - 1``: how far the squared norm of :attr:`objective` may be
        above the optimum (for ``"mean"``, ``gamma^2``, the objective ``tr(F X^+ F^T)`` divided
        by ``k``); ``None`` without a bound."""
        if self.lower_bound is None:
            return None
        if self.lower_bound == 0:
            return math.inf if self.value > 0 else 0.0
        return self.value**2 / self.lower_bound**2 - 1.0

    def _is_approximate(self) -> bool:
        return False

    def summary(self) -> dict[str, Any]:
        """The factorization and its solver statistics as plain JSON-serializable values.

        Returns
        -------
        dict
            The workload's name, the strategy's shape, whether it is approximate, the
            ``objective``, ``gamma`` (and ``gamma_2`` for the ``"max"`` objective),
            ``lower_bound`` and ``residual``, and :meth:`SolveStats.summary
            <projmech.solve.SolveStats.summary>`'s entries (``gap`` is ``stats.gap``, the
            relative gap of the squared objective the optimizer certified).
        """
        summary = {
            "workload": self.workload.name,
            "strategy_shape": [self.strategy.num_queries, self.strategy.universe_size],
            "approximate": self._is_approximate(),
            "objective": self.objective,
            "gamma": self.gamma,
        }
        if self.objective == "max":
            summary["gamma_2"] = self.gamma_2
        return {**summary, "lower_bound": self.lower_bound, "residual": self.residual, **self.stats.summary()}

    def __str__(self) -> str:
        bound = "" if self.lower_bound is None else f" (lower bound {self.lower_bound:.6g})"
        name = "gamma_2" if self.objective == "max" else "gamma"
        return (f"Factorization {self._description()}, {name} {self.value:.6g}{bound}, residual {self.residual:.1e}"
                f"\n  {self.stats}")


class DenseFactorization(Factorization):
    """A factorization with an explicit ``l x m`` strategy matrix.

    ``Factorization(workload, strategy, ...)`` builds one. What matters for its error
    (``||R||_F``, the residual, ``gamma``) comes from the Gram matrix ``F^T F`` when the
    reconstruction is implicit (from ``R`` itself when it is given); the reconstruction of an
    exact factorization is kept implicit, ``R = F M^+``, and applied on
    demand (:meth:`reconstruct`), so a workload of millions of queries never needs a ``k x l``
    matrix. The constructor checks shapes, not ``R M = F``: :meth:`Factorization.from_strategy`
    and :meth:`~Factorization.defect` do.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F.
    strategy : array_like, shape (l, m)
        M, the queries measured with noise.
    reconstruction : array_like, shape (k, l), optional
        An explicit R. Required with ``perturbation``; by default ``R = F M^+``.
    strategy_pinv : array_like, shape (m, l), optional
        ``M^+`` when the caller already has it (the optimizers do); computed otherwise.
    perturbation : array_like, shape (k, m), optional
        E, for an approximate factorization ``R M = F + E``.
    lower_bound : float, optional
        A certified lower bound on the optimum this factorization approximates (``gamma(F)``,
        or ``gamma_alpha(F)`` for an approximate one); see :attr:`relative_gap`.
    stats : SolveStats, optional
        How the factorization was obtained: the optimizer's statistics
        (:func:`~projmech.factorization.norm.factorization_norm`), or by default a given
        strategy (solver ``"given"``, :attr:`~projmech.solve.Status.GIVEN`, no gap).
    gram : ndarray, shape (m, m), optional
        ``F^T F`` when the caller already has it; otherwise ``workload.gram()`` on first use.
    objective : {"mean", "max"}, default "mean"
        What ``lower_bound`` bounds: ``gamma`` or ``gamma_2`` (see
        :attr:`Factorization.objective`).

    Raises
    ------
    ValueError
        If a matrix has the wrong shape or a non-finite entry, ``perturbation`` comes without
        ``reconstruction``, ``lower_bound`` is negative or not finite, or ``objective`` is not
        one of :data:`OBJECTIVES`.
    TypeError
        If ``stats`` is not a :class:`~projmech.solve.SolveStats`.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> query = np.array([1.0, 1.0, 0.0])
    >>> fact = pm.Factorization(pm.repeated(query, 4), query[None, :])  # measure once, copy 4 times
    >>> round(fact.gamma, 6), fact.reconstruct([0.5])
    (1.0, array([0.5, 0.5, 0.5, 0.5]))
    >>> fact.defect() is None  # R M = F holds
    True
    """

    def __init__(
        self,
        workload: Workload | Any,
        strategy: Any,
        reconstruction: Any = None,
        *,
        strategy_pinv: Any = None,
        perturbation: Any = None,
        lower_bound: float | None = None,
        stats: SolveStats | None = None,
        gram: np.ndarray | None = None,
        objective: str = "mean",
    ) -> None:
        self.objective = check_objective(objective)
        self.workload = as_workload(workload)
        k, m = self.workload.shape
        self.strategy_matrix = _dense(as_query_matrix(strategy, "strategy"))
        ell = self.strategy_matrix.shape[0]
        if self.strategy_matrix.shape[1] != m:
            raise ValueError(f"strategy: has {self.strategy_matrix.shape[1]} columns, the workload {m}")
        self.strategy = Workload(self.strategy_matrix, domain=self.workload.domain, name="strategy")
        self._reconstruction: np.ndarray | None = None
        if reconstruction is not None:
            self._reconstruction = _dense(as_query_matrix(reconstruction, "reconstruction"))
            if self._reconstruction.shape != (k, ell):
                raise ValueError(f"reconstruction: expected shape ({k}, {ell}), got {self._reconstruction.shape}")
        self._strategy_pinv: np.ndarray | None = None
        if strategy_pinv is not None:
            self._strategy_pinv = _dense(as_query_matrix(strategy_pinv, "strategy_pinv"))
            if self._strategy_pinv.shape != (m, ell):
                raise ValueError(f"strategy_pinv: expected shape ({m}, {ell}), got {self._strategy_pinv.shape}")
        self.perturbation: np.ndarray | None = None
        if perturbation is not None:
            if self._reconstruction is None:
                raise ValueError("perturbation: an approximate factorization needs an explicit reconstruction")
            self.perturbation = _dense(as_query_matrix(perturbation, "perturbation"))
            if self.perturbation.shape != (k, m):
                raise ValueError(f"perturbation: expected shape ({k}, {m}), got {self.perturbation.shape}")
        if lower_bound is not None and not (math.isfinite(lower_bound) and lower_bound >= 0):
            raise ValueError(f"lower_bound: expected a finite number >= 0, got {lower_bound!r}")
        self.lower_bound = lower_bound
        if stats is not None and not isinstance(stats, SolveStats):
            raise TypeError(f"stats: expected a SolveStats, got {type(stats).__name__}")
        self.stats = SolveStats("given", Status.GIVEN, 0.0) if stats is None else stats
        if gram is not None:
            self.__dict__["_gram"] = np.asarray(gram, dtype=float)  # pre-fills the cached property

    @cached_property
    def strategy_pinv(self) -> np.ndarray:
        """``M^+`` (``m x l``)."""
        if self._strategy_pinv is not None:
            return self._strategy_pinv
        return np.linalg.pinv(self.strategy_matrix)

    @cached_property
    def _gram(self) -> np.ndarray:
        return self.workload.gram()

    @property
    def reconstruction(self) -> np.ndarray:
        """R as an explicit ``k x l`` matrix (built from ``F M^+`` on first use: needs the
        workload's explicit matrix; prefer :meth:`reconstruct` for large ``k``)."""
        if self._reconstruction is None:
            self._reconstruction = _dense(self.workload.matrix @ self.strategy_pinv)
        return self._reconstruction

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        if self._reconstruction is not None:
            return self._reconstruction @ measurements
        return self.workload.answer(self.strategy_pinv @ measurements)

    def _reconstruct_block(self, block: np.ndarray) -> np.ndarray:
        if self._reconstruction is not None:
            return self._reconstruction @ block
        return self.workload.kernels.matmat(self.strategy_pinv @ block)

    @property
    def strategy_sensitivity(self) -> float:
        """``||M||_{1->2}``, from the explicit matrix."""
        return column_norm(self.strategy_matrix)

    @cached_property
    def reconstruction_norm(self) -> float:
        """``||R||_F``; for ``R = F M^+`` it is ``sqrt(tr(M^+T F^T F M^+))``, from the Gram matrix."""
        if self._reconstruction is not None:
            return float(np.linalg.norm(self._reconstruction))
        pinv = self.strategy_pinv
        return math.sqrt(max(0.0, float(np.sum(pinv * (self._gram @ pinv)))))

    @cached_property
    def residual(self) -> float:
        """``||R M - F||_{1->2}``: zero (to rounding) for an exact factorization.

        With an implicit workload it comes from the Gram matrix, ``diag((I-P) F^T F (I-P))``
        with ``P = M^+ M``, which resolves it only down to about ``1e-8 ||F||_{1->2}``.
        """
        if self._reconstruction is not None:
            return column_norm(self._reconstruction @ self.strategy_matrix - dense_matrix(self.workload))
        complement = np.eye(self.strategy_matrix.shape[1]) - self.strategy_pinv @ self.strategy_matrix
        if not self.workload.is_implicit:
            return column_norm(_dense(self.workload.matrix @ complement))
        squares = np.sum(complement * (self._gram @ complement), axis=0)
        return float(np.sqrt(max(0.0, squares.max())))

    def lower_triangular(self) -> DenseFactorization:
        """The same factorization in streaming form: a lower-triangular strategy.

        For a strategy Gram matrix ``X = M^T M`` of full rank, the Cholesky form ``X = L^T L``
        with ``L`` lower-triangular (the Cholesky factor of ``X`` with rows and columns reversed)
        gives the strategy ``L`` and the reconstruction ``R = F L^-1``. ``L`` has the same
        column norms as M and ``R R^T = F X^-1 F^T``, so :attr:`gamma`, :attr:`gamma_2`, every
        query's noise and the certificate are unchanged. When F is lower-triangular (prefix
        sums over time) so is R: measurement ``t`` and answer ``t`` need only the data up to time
        ``t``, which is what answering online needs :cite:p:`FHU23`.

        Returns
        -------
        DenseFactorization
            With the same workload, lower bound, objective and statistics.

        Raises
        ------
        ValueError
            If the factorization is approximate, or its strategy Gram matrix ``M^T M`` is
            singular (the strategy has fewer than ``m`` independent rows).

        Examples
        --------
        >>> import numpy as np, projmech as pm
        >>> fact = pm.factorization_norm(pm.prefix(8)).lower_triangular()
        >>> bool(np.all(np.triu(fact.strategy_matrix, 1) == 0))
        True
        >>> bool(np.allclose(np.triu(fact.reconstruction, 1), 0, atol=1e-12))
        True
        """
        import scipy.linalg as sl

        if self.perturbation is not None:
            raise ValueError("lower_triangular: an approximate factorization R M = F + E keeps its explicit R; "
                             "only an exact one has a streaming form")
        gram = self.strategy_matrix.T @ self.strategy_matrix
        reverse = slice(None, None, -1)
        try:
            # J X J = C C^T, so X = (J C^T J)^T (J C^T J): L = J C^T J is lower-triangular.
            factor = sl.cholesky(gram[reverse, reverse], lower=True)
        except np.linalg.LinAlgError:
            raise ValueError(f"lower_triangular: the strategy Gram matrix M^T M of rank below {gram.shape[0]} has no "
                             "Cholesky factor; a streaming form needs a strategy of full column rank") from None
        strategy = factor.T[reverse, reverse]
        inverse = sl.solve_triangular(strategy, np.eye(strategy.shape[0]), lower=True)
        return DenseFactorization(self.workload, strategy, strategy_pinv=inverse, lower_bound=self.lower_bound,
                                  stats=self.stats, gram=self.__dict__.get("_gram"), objective=self.objective)

    def _query_norms(self) -> np.ndarray:
        if self._reconstruction is None and is_all_range(self.workload):
            # R = F M^+: ||r_i||^2 = f_i^T M^+ M^+T f_i, for all m(m+1)/2 ranges in O(m^2 l).
            pinv = self.strategy_pinv
            squares = range_squares(prefix_form(pinv @ pinv.T)) + range_squares_slack(pinv)
            return np.sqrt(np.clip(squares, 0.0, None))
        return super()._query_norms()

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        if self._reconstruction is not None:
            return self._reconstruction[:, start:stop]
        return self.workload.kernels.matmat(self.strategy_pinv[:, start:stop])  # R = F M^+, by columns of M^+

    def _finite_factors(self) -> bool:
        return bool(np.all(np.isfinite(self.strategy_matrix)) and (
            self._reconstruction is None or np.all(np.isfinite(self._reconstruction))))

    def _workload_norm(self) -> float:
        # From the Gram matrix when the optimizer passed it (an implicit workload without a
        # closed form would otherwise build it again), else from the workload.
        gram = self.__dict__.get("_gram")
        return math.sqrt(max(0.0, float(np.max(np.diag(gram))))) if gram is not None else self.workload.column_norm(2)

    def _defect_residual(self) -> float:
        if self.perturbation is None:
            return self.residual
        assert self._reconstruction is not None  # a perturbation comes with an explicit R
        target = dense_matrix(self.workload) + self.perturbation
        return column_norm(self._reconstruction @ self.strategy_matrix - target)

    def _is_approximate(self) -> bool:
        return self.perturbation is not None

    def _description(self) -> str:
        kind = "R M = F + E" if self.perturbation is not None else "R M = F"
        rows, columns = self.strategy_matrix.shape
        return f"{kind} of {self.workload.name}: strategy {rows}x{columns}"


def identity_strategy(m: int) -> np.ndarray:
    """The identity strategy ``M = I``: measure every cell.

    With it the factorization mechanism is the Gaussian mechanism on the histogram, followed by
    the answers ``R = F``.

    Parameters
    ----------
    m : int
        The universe size, ``>= 1``.

    Returns
    -------
    ndarray, shape (m, m)
        The identity matrix.

    Raises
    ------
    ValueError
        If ``m`` is not a positive integer.

    Examples
    --------
    >>> import projmech as pm
    >>> fact = pm.Factorization(pm.prefix(16), pm.identity_strategy(16))
    >>> round(fact.gamma, 3)  # sqrt((m + 1) / 2) on prefix(m)
    2.915
    """
    return np.eye(check_positive_int("m", m))


def total_strategy(m: int) -> np.ndarray:
    """The total strategy ``M = 1^T``: measure only the number of records.

    Enough for a workload whose queries are all multiples of the total.

    Parameters
    ----------
    m : int
        The universe size, ``>= 1``.

    Returns
    -------
    ndarray, shape (1, m)
        One row of ones.

    Raises
    ------
    ValueError
        If ``m`` is not a positive integer.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> fact = pm.Factorization(pm.repeated(np.ones(5), 3), pm.total_strategy(5))
    >>> round(fact.gamma, 6)  # measure the total once, copy it three times
    1.0
    """
    return np.ones((1, check_positive_int("m", m)))


def hierarchical_strategy(m: int, branching: int = 2) -> np.ndarray:
    """The hierarchical (``branching``-ary tree) strategy over an ordered universe of size ``m``.

    One row per tree node: the indicator of the node's interval. The root covers ``[0, m)``;
    each node of width ``w > 1`` splits into ``branching`` children of near-equal widths, down to
    single cells :cite:p:`HRMS10`. With ``branching=2`` this is the binary tree mechanism of
    continual counting :cite:p:`DNPR10` written as a factorization: every prefix or range is a
    sum of ``O(log m)`` nodes, and ``gamma`` of prefix and range workloads grows as
    ``O(log m)``, against ``sqrt((m + 1) / 2)`` for the identity strategy on prefixes.

    Parameters
    ----------
    m : int
        The universe size, ``>= 1``.
    branching : int, default 2
        The number of children of each node, ``>= 2``.

    Returns
    -------
    ndarray, shape (l, m)
        One 0/1 row per node, level by level from the root (``l = 2m - 1`` for a binary tree
        over ``m`` a power of two).

    Raises
    ------
    ValueError
        If ``m`` is not a positive integer or ``branching`` is not an integer ``>= 2``.

    Examples
    --------
    >>> import projmech as pm
    >>> pm.hierarchical_strategy(4)
    array([[1., 1., 1., 1.],
           [1., 1., 0., 0.],
           [0., 0., 1., 1.],
           [1., 0., 0., 0.],
           [0., 1., 0., 0.],
           [0., 0., 1., 0.],
           [0., 0., 0., 1.]])
    >>> round(pm.Factorization(pm.prefix(16), pm.hierarchical_strategy(16)).gamma, 3)
    1.938
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


def square_root_strategy(m: int) -> np.ndarray:
    """The square-root factorization of prefix sums over ``m`` time steps.

    The lower-triangular Toeplitz matrix ``L`` with ``L[i, j] = c_(i-j)``, ``c_t = binom(2t, t) / 4^t``,
    the coefficients of ``(1 - x)^(-1/2)``, squares to the prefix-sum matrix: ``L @ L = prefix(m)``
    :cite:p:`FHU23`. As a strategy ``M = L`` its reconstruction is ``R = L`` too, both
    lower-triangular, so each prefix is released as soon as its last step arrives (a *streaming*
    factorization). Its worst query's standard deviation per unit of sensitivity,
    ``||R||_(2->inf) ||M||_(1->2) = sum_(t < m) c_t^2``, is at most ``1 + (1 + ln(m - 1)) / pi``
    for ``m >= 2`` (from ``c_t^2 < 1 / (pi t)``) and grows as ``ln(m) / pi``.

    Parameters
    ----------
    m : int
        The number of time steps (the universe size), ``>= 1``.

    Returns
    -------
    ndarray, shape (m, m)
        ``L``, lower-triangular.

    Raises
    ------
    ValueError
        If ``m`` is not a positive integer.

    See Also
    --------
    hierarchical_strategy : The binary tree, the other classical streaming strategy.

    References
    ----------
    :cite:t:`FHU23`; continual counting :cite:p:`DNPR10`.

    Examples
    --------
    >>> import numpy as np
    >>> import projmech as pm
    >>> L = pm.square_root_strategy(4)
    >>> L[:, 0]
    array([1.    , 0.5   , 0.375 , 0.3125])
    >>> bool(np.allclose(L @ L, np.tril(np.ones((4, 4)))))
    True
    >>> round(pm.Factorization(pm.prefix(1024), pm.square_root_strategy(1024)).gamma, 3)  # optimum: 2.956
    3.11
    """
    m = check_positive_int("m", m)
    # c_t = c_(t-1) (2t - 1) / (2t): a product of ratios below 1, with no overflow for any m.
    coefficients = np.ones(m)
    t = np.arange(1, m)
    coefficients[1:] = np.cumprod((2 * t - 1) / (2 * t))
    index = np.subtract.outer(np.arange(m), np.arange(m))
    return np.where(index >= 0, coefficients[np.clip(index, 0, None)], 0.0)
