"""Factorizations ``F = R M`` of a workload: the factorization (matrix) mechanism's value.

The mechanism measures ``M h`` with Gaussian noise and answers ``R (M h + Z)``
:cite:p:`LHRMM10,ENU20`; its root-mean-square error is proportional to the factorization norm
``gamma = ||R||_F ||M||_{1->2} / sqrt(k)``. This module holds the :class:`Factorization` value;
the derivation is in :doc:`/theory/factorization`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from .._sparse import issparse
from ..solve import SolveError, SolveResult, SolveStats, Status
from ..workloads import Workload, as_query_matrix, column_norm
from ._range_forms import is_all_range, prefix_form, range_squares, range_squares_slack
from ._strategies import hierarchical_strategy, identity_strategy, square_root_strategy, total_strategy

__all__ = ["Factorization", "FactorizationError", "DenseFactorization", "as_workload", "identity_strategy",
           "total_strategy", "hierarchical_strategy",
           "square_root_strategy", "RESIDUAL_RTOL", "OBJECTIVES"]

class FactorizationError(SolveError):
    """A factorization optimizer stopped without certifying its tolerance.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        Every method tried, in order.
    best : Factorization, optional
        The factorization with the smallest relative gap among those that passed the final check.

    Examples
    --------
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
    """F as a dense array, an implicit workload's from its products with the identity."""
    if workload.is_implicit:
        return np.asarray(workload.kernels.matmat(np.eye(workload.universe_size)))
    return _dense(workload.matrix)


def check_objective(objective: Any) -> str:
    """``objective`` if it is one of :data:`OBJECTIVES`, else a ValueError naming it."""
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

    Examples
    --------
    >>> from projmech.factorization import as_workload
    >>> as_workload(np.ones((2, 3))).shape
    (2, 3)
    """
    return workload if isinstance(workload, Workload) else Workload(as_query_matrix(workload, name))


class Factorization(SolveResult):
    """A factorization ``R M = F + E`` of a ``k x m`` workload F (``E = 0`` for an exact one).

    ``Factorization(workload, strategy, ...)`` builds a :class:`DenseFactorization` from an explicit
    strategy; the optimizers also return structured ones whose R is applied factor by factor. The
    mechanism's error is proportional to :attr:`gamma` (:doc:`/theory/factorization`).

    Parameters
    ----------
    *args, **kwargs
        Those of :class:`DenseFactorization`.

    Attributes
    ----------
    workload : Workload
        F.
    strategy : Workload
        M, over F's universe.
    lower_bound : float or None
        A certified lower bound on the optimum this factorization approximates, or None.
    objective : {"mean", "max"}
        The norm optimized, which :attr:`value`, :attr:`lower_bound` and :attr:`relative_gap` refer to.
    stats : SolveStats
        How the factorization was obtained (solver ``"given"`` for a given strategy).

    Examples
    --------
    >>> F = pm.prefix(16)
    >>> tree = pm.Factorization(F, pm.hierarchical_strategy(16))
    >>> type(tree).__name__, tree.num_measurements, tree.stats.status
    ('DenseFactorization', 31, <Status.GIVEN: 'given'>)
    >>> round(tree.gamma, 3), round(pm.Factorization(F, pm.identity_strategy(16)).gamma, 3)
    (1.938, 2.915)
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
        """``R Y`` for an ``(l, r)`` array, by columns unless a kind has a faster route."""
        return np.stack([self._reconstruct(np.ascontiguousarray(column)) for column in block.T], axis=1)

    @property
    def reconstruction_norm(self) -> float:
        """``||R||_F``."""
        raise NotImplementedError

    @property
    def residual(self) -> float:
        """``||R M - F||_{1->2}`` (or an upper bound on it): zero to rounding for an exact factorization."""
        raise NotImplementedError

    def _finite_factors(self) -> bool:
        return True

    def _description(self) -> str:
        raise NotImplementedError

    def _reconstruction_columns(self, start: int, stop: int) -> np.ndarray:
        """Columns ``start:stop`` of R: R applied to unit measurements, unless a kind has a faster route."""
        units = np.zeros((self.num_measurements, stop - start))
        units[np.arange(start, stop), np.arange(stop - start)] = 1.0
        return self._reconstruct_block(units)

    def _query_norms(self) -> np.ndarray:
        """``||r_i||`` for every row of R, from blocks of its columns small enough to hold."""
        squares = np.zeros(self.num_queries)
        step = max(1, _QUERY_NORM_BLOCK // max(self.num_queries, 1))
        for start in range(0, self.num_measurements, step):
            stop = min(start + step, self.num_measurements)
            squares += np.sum(_dense(self._reconstruction_columns(start, stop)) ** 2, axis=1)
        return np.sqrt(squares)

    # --- shared ------------------------------------------------------------------------------

    @classmethod
    def from_strategy(cls, workload: Workload | Any, strategy: Any, *, rtol: float = 1e-7) -> Factorization:
        """The factorization with the least-squares reconstruction ``R = F M^+``, checked to answer F exactly.

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
        """Apply R to a vector of (noisy) measurements ``y``.

        Parameters
        ----------
        measurements : array_like, shape (l,)
            ``y``, the answers to the strategy's queries.

        Returns
        -------
        ndarray, shape (k,)
            ``R y``, the workload's answers.
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
        """The factorization norm ``||R||_F ||M||_{1->2} / sqrt(k)`` :cite:p:`ENU20`: the RMSE factor."""
        return self.reconstruction_norm * self.strategy_sensitivity / math.sqrt(self.num_queries)

    @cached_property
    def query_norms(self) -> np.ndarray:
        """``||r_i||``, the norm of each row of R: query ``i``'s noise has standard deviation ``sigma ||r_i||``."""
        return self._query_norms()

    @property
    def gamma_2(self) -> float:
        """``||R||_{2->inf} ||M||_{1->2}`` :cite:p:`MNT20`: the worst query's error factor."""
        return float(np.max(self.query_norms)) * self.strategy_sensitivity

    @property
    def value(self) -> float:
        """The norm of :attr:`objective` (:attr:`gamma` or :attr:`gamma_2`), which :attr:`lower_bound` bounds."""
        return self.gamma_2 if self.objective == "max" else self.gamma

    def _workload_norm(self) -> float:
        return self.workload.column_norm(2)

    def _defect_residual(self) -> float:
        return self.residual

    def defect(self, rtol: float = RESIDUAL_RTOL) -> str | None:
        """The final check of a factorization before it is returned: why it fails, or None.

        Finite factors; ``R M = F + E`` to ``rtol * ||F||_{1->2}`` (relative, so any scale is held to
        one standard); a finite norm; a lower bound, if any, not above it.

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
        """``value^2 / lower_bound^2 - 1``: how far the squared norm may be above the optimum; None without a bound."""
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
            The workload's name, the strategy's shape, ``approximate``, ``objective``, ``gamma`` (and
            ``gamma_2`` for ``"max"``), ``lower_bound``, ``residual`` and the statistics' entries.
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

    An exact one keeps ``R = F M^+`` implicit and computes its norms from the Gram matrix, so a
    workload of millions of queries needs no ``k x l`` matrix. The constructor checks shapes, not
    ``R M = F``: :meth:`Factorization.from_strategy` and :meth:`~Factorization.defect` do.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F.
    strategy : array_like, shape (l, m)
        M, the queries measured with noise.
    reconstruction : array_like, shape (k, l), optional
        An explicit R, required with ``perturbation``; by default ``R = F M^+``.
    strategy_pinv : array_like, shape (m, l), optional
        ``M^+`` when the caller already has it.
    perturbation : array_like, shape (k, m), optional
        E, for an approximate factorization ``R M = F + E``.
    lower_bound : float, optional
        A certified lower bound on the optimum this factorization approximates.
    stats : SolveStats, optional
        The optimizer's statistics; by default those of a given strategy.
    gram : ndarray, shape (m, m), optional
        ``F^T F`` when the caller already has it.
    objective : {"mean", "max"}, default "mean"
        What ``lower_bound`` bounds: ``gamma`` or ``gamma_2``.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> query = np.array([1.0, 1.0, 0.0])
    >>> fact = pm.Factorization(pm.repeated(query, 4), query[None, :])  # measure once, copy 4 times
    >>> round(fact.gamma, 6), fact.reconstruct([0.5]), fact.defect() is None
    (1.0, array([0.5, 0.5, 0.5, 0.5]), True)
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
        """R as an explicit ``k x l`` matrix, built from ``F M^+`` on first use (prefer :meth:`reconstruct`)."""
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
        """``||R||_F``; for ``R = F M^+``, ``sqrt(tr(M^+T F^T F M^+))`` from the Gram matrix."""
        if self._reconstruction is not None:
            return float(np.linalg.norm(self._reconstruction))
        pinv = self.strategy_pinv
        return math.sqrt(max(0.0, float(np.sum(pinv * (self._gram @ pinv)))))

    @cached_property
    def residual(self) -> float:
        """``||R M - F||_{1->2}``; for an implicit workload from the Gram matrix, to about ``1e-8 ||F||_{1->2}``."""
        if self._reconstruction is not None:
            return column_norm(self._reconstruction @ self.strategy_matrix - dense_matrix(self.workload))
        complement = np.eye(self.strategy_matrix.shape[1]) - self.strategy_pinv @ self.strategy_matrix
        if not self.workload.is_implicit:
            return column_norm(_dense(self.workload.matrix @ complement))
        squares = np.sum(complement * (self._gram @ complement), axis=0)
        return float(np.sqrt(max(0.0, squares.max())))

    def lower_triangular(self) -> DenseFactorization:
        """The same factorization in streaming form: a lower-triangular strategy :cite:p:`FHU23`.

        The Cholesky form ``M^T M = L^T L`` gives the strategy ``L`` and ``R = F L^-1`` with the same
        norms, noise and certificate; for a lower-triangular F (prefix sums over time) R is too, so each
        answer needs only the data up to its time.

        Returns
        -------
        DenseFactorization
            With the same workload, lower bound, objective and statistics.

        Examples
        --------
        >>> import numpy as np, projmech as pm
        >>> fact = pm.factorization_norm(pm.prefix(8)).lower_triangular()
        >>> bool(np.all(np.triu(fact.strategy_matrix, 1) == 0))
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
