"""Privacy definitions, neighbouring relations and noise calibration.

Depends on numpy and scipy only. The continuous Gaussian calibration for (epsilon, delta)-DP is
the exact analytic one of Balle & Wang, "Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising", ICML 2018, Theorem 8. The discrete
Gaussian (Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS
2020) is calibrated through its exact zCDP guarantee, converted to (epsilon, delta) by their
conversion from concentrated DP (:func:`zcdp_delta`).

Every noise scale here is in the units of the measured values themselves (counts, in the
mechanisms), so none depends on the number of rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, overload

import numpy as np

from .validation import (
    FLAG,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    InstanceOf,
    Integral,
    Interval,
    Options,
    OrNone,
    Real,
    check_positive_int,
    validate_params,
)

__all__ = [
    "ZCDP",
    "ApproxDP",
    "PureDP",
    "Privacy",
    "Neighbouring",
    "gaussian_sigma",
    "gaussian_delta",
    "laplace_scale",
    "zcdp_delta",
    "zcdp_for_approx_dp",
    "SizePolicy",
    "scale_budget",
    "ESTIMATE_SIZE",
    "DEFAULT_SIZE_SHARE",
]


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated differential privacy (Bun & Steinke, TCC 2016)."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", POSITIVE.check("rho", self.rho))

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-differential privacy, ``epsilon > 0`` and ``0 < delta < 1``."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", POSITIVE.check("epsilon", self.epsilon))
        object.__setattr__(self, "delta", OPEN_UNIT.check("delta", self.delta))

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class PureDP:
    """Pure epsilon-differential privacy."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", POSITIVE.check("epsilon", self.epsilon))

    def __str__(self) -> str:
        return f"{self.epsilon:g}-DP"


Privacy = ZCDP | ApproxDP | PureDP

#: The orders of the norms a count sensitivity is stated in.
_SENSITIVITY_ORD = Options(1, 2)


class Neighbouring(str, Enum):
    """Which data sets count as neighbours.

    ``REPLACE_ONE`` (bounded DP; the seeds' default): data sets of the same size ``n``, which is
    therefore public, differing in one row. The counts ``F c`` move by ``F_u - F_v`` for some
    universe elements ``u, v``, so their l_p sensitivity is at most ``2 ||F||_{1->p}``, and
    ``sqrt(2) ||F||_{1->2}`` in l2 when F has no negative entry (then ``<F_u, F_v> >= 0``).
    Answers are the counts divided by the public ``n``.

    ``ADD_REMOVE`` (unbounded DP): one row added or removed. The row count is then private: the
    counts move by one column ``F_u`` (sensitivity ``||F||_{1->p}``), and the answers are the
    counts divided by a *declared public* size or by a size *estimated privately* from a share of
    the budget (:class:`SizePolicy`), never by the true row count.
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    @validate_params(column_norm=NONNEGATIVE, ord=_SENSITIVITY_ORD, nonnegative=FLAG)
    def count_sensitivity(self, column_norm: float, ord: float = 2, *, nonnegative: bool = False,
                          column_distance: float | None = None) -> float:
        """The l_p sensitivity of the counts ``F c`` given ``||F||_{1->p}`` (``ord`` 1 or 2).

        Under replace-one in l2 it is exactly ``column_distance``, ``max over u != v of
        ||F_u - F_v||_2``, when given (:meth:`Workload.column_distance`); otherwise a bound:
        ``sqrt(2) ||F||_{1->2}`` when F has no negative entry (``nonnegative``; attained, e.g.,
        by marginals: two rows that differ in every attribute differ in every table), else
        ``2 ||F||_{1->2}``.
        """
        if self is Neighbouring.ADD_REMOVE:
            return column_norm
        bound = (math.sqrt(2.0) if ord == 2 and nonnegative else 2.0) * column_norm
        if ord == 2 and column_distance is not None:
            # Both are upper bounds on the sensitivity (the distance one up to its rounding margin,
            # see projmech.workloads.max_column_distance); the smaller is the calibration.
            return min(NONNEGATIVE.check("column_distance", column_distance), bound)
        return bound

    @validate_params(n=POSITIVE_INT)
    def sensitivity(self, column_norm: float, n: int, *, ord: float = 2, nonnegative: bool = False) -> float:
        """The sensitivity of the answers ``F c / n`` for a public size ``n`` (a planning figure:
        :meth:`count_sensitivity` divided by ``n``)."""
        return self.count_sensitivity(column_norm, ord, nonnegative=nonnegative) / n

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        """The relation named ``value`` (a TypeError for a non-str, a ValueError for another name)."""
        return cls(_NEIGHBOURING.check("neighbouring", value))


_NEIGHBOURING = Options(*(relation.value for relation in Neighbouring))


#: ``size="estimate"``: estimate the private row count from a share of the privacy budget.
ESTIMATE_SIZE = "estimate"

#: Default share of the budget spent on the size estimate. The answers' own noise grows by
#: ``1/sqrt(0.95)``, 2.6 %, for Gaussian noise and by ``1/0.95``, 5.3 %, for Laplace noise; the
#: size's noise is ``sqrt(1/0.05) = 4.5`` (Gaussian) or ``1/0.05 = 20`` (Laplace) times that of a
#: count of sensitivity 1 at the whole budget.
DEFAULT_SIZE_SHARE = 0.05

#: The share of a budget spent on a size estimate (0: none).
_SHARE = Interval(Real, 0, 1, closed="left")

#: A declared size, or the word asking for an estimate.
_ESTIMATE = Options(ESTIMATE_SIZE)


@dataclass(frozen=True)
class SizePolicy:
    """How a mechanism turns counts into the fractions it releases, without using a private size.

    Attributes
    ----------
    neighbouring : Neighbouring
    declared : int or None
        Under add/remove, a size declared public by the user (e.g. a published population
        total): the answers are the counts divided by it, whatever the data's row count is.
    share : float
        Under add/remove with ``size="estimate"``, the share of the privacy budget spent on a
        noisy count of the rows, by which the answers are divided; 0 otherwise.

    Under replace-one both are unset: ``n`` is public by the relation's definition.
    """

    neighbouring: Neighbouring
    declared: int | None = None
    share: float = 0.0

    def __post_init__(self) -> None:
        # Built by parse() from a mechanism's arguments, or directly (a planning figure needs a
        # relation only): checked the same way either way.
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring))
        object.__setattr__(self, "declared", OrNone(POSITIVE_INT).check("declared", self.declared))
        object.__setattr__(self, "share", _SHARE.check("share", self.share))
        if self.neighbouring is Neighbouring.REPLACE_ONE and (self.declared is not None or self.share):
            raise ValueError("declared, share: apply to add-remove neighbours only; under replace-one n is public")
        if self.declared is not None and self.share:
            raise ValueError("declared, share: a declared size is not estimated; give one or the other")

    @classmethod
    def parse(cls, neighbouring: Neighbouring | str, size: int | str | None, *,
              size_share: float | None = None) -> SizePolicy:
        """Validate a mechanism's ``neighbouring``, ``size`` and ``size_share`` arguments.

        ``size`` is a positive int or ``"estimate"``: a float or a bool is a TypeError, ``0``
        or another word a ValueError; ``size_share`` lies in ``(0, 1)``.
        """
        relation = Neighbouring.parse(neighbouring)
        if relation is Neighbouring.REPLACE_ONE:
            if size is not None:
                raise ValueError(
                    f"size: applies to add-remove neighbours only; under replace-one the size n is public "
                    f"and taken from the data, got size={size!r}"
                )
            if size_share is not None:
                raise ValueError("size_share: applies only with neighbouring='add-remove' and size='estimate'")
            return cls(relation)
        if size is None:
            raise ValueError(
                "size: under add-remove neighbours the row count is private; declare a public size "
                "(size=N, e.g. a published total: answers are counts / N) or estimate it privately "
                f"(size='estimate', spending size_share={DEFAULT_SIZE_SHARE} of the budget on a noisy count)"
            )
        if isinstance(size, str):
            _ESTIMATE.check("size", size)
            share = DEFAULT_SIZE_SHARE if size_share is None else OPEN_UNIT.check("size_share", size_share)
            return cls(relation, share=share)
        declared = check_positive_int("size", size)
        if size_share is not None:
            raise ValueError("size_share: applies only with size='estimate', not to a declared size")
        return cls(relation, declared=declared)

    @property
    def estimated(self) -> bool:
        return self.share > 0

    @property
    def source(self) -> str:
        """``"public n"`` (replace-one), ``"declared"`` or ``"estimated"``."""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return "public n"
        return "estimated" if self.estimated else "declared"

    def main_share(self) -> float:
        """The share of the budget left for the mechanism itself."""
        return 1.0 - self.share

    def check_dataset_n(self, n: Any, rows: int) -> None:
        """Check an ``n`` passed beside a Dataset of ``rows`` rows. Under add/remove it is refused
        whatever it is: the row count is private, and comparing it with a guess would tell whether
        the guess is right. Under replace-one ``n`` is public and must equal ``rows``."""
        if n is None:
            return
        if self.neighbouring is Neighbouring.ADD_REMOVE:
            raise ValueError(
                "n: under add-remove neighbours the row count is private and is taken from the Dataset; "
                "do not pass n (declare a public size with size= instead)"
            )
        if _ROW_COUNT.check("n", n) != rows:
            raise ValueError(f"n: given {n} but the data set has {rows} rows")

    def resolve(self, rows: int, draw_size_noise: Callable[[], float]) -> float:
        """The public size for data of ``rows`` rows: ``rows`` itself under replace-one (at least
        1: it divides the counts), the declared size, or ``max(1, rows + noise)`` with the
        noise from ``draw_size_noise``."""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            if rows < 1:
                raise ValueError(
                    "data: the data set has no rows; under replace-one neighbours the size n is public and "
                    "divides the counts, so it must be at least 1 (under add-remove an empty data set is "
                    "released with a declared or estimated size)"
                )
            return float(rows)
        if self.declared is not None:
            return float(self.declared)
        return max(1.0, rows + float(draw_size_noise()))


#: A row count: an int >= 0 (an empty data set has one).
_ROW_COUNT = Interval(Integral, 0, None)


@overload
def scale_budget(privacy: PureDP, share: float) -> PureDP: ...


@overload
def scale_budget(privacy: ZCDP, share: float) -> ZCDP: ...


@overload
def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP: ...


def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP:
    """``share`` of a budget that composes additively: ``PureDP(share epsilon)`` or
    ``ZCDP(share rho)`` (basic composition; Bun & Steinke 2016, Lemma 2.3)."""
    if isinstance(privacy, PureDP):
        return PureDP(privacy.epsilon * share)
    if isinstance(privacy, ZCDP):
        return ZCDP(privacy.rho * share)
    raise TypeError(f"privacy: only PureDP and ZCDP budgets split additively, got {type(privacy).__name__}")


@validate_params(sigma=POSITIVE, l2_sensitivity=POSITIVE, epsilon=NONNEGATIVE)
def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """The smallest delta for which N(0, sigma^2) noise is (epsilon, delta)-DP.

    Balle & Wang (ICML 2018), Theorem 8: with ``a = Delta/(2 sigma) - epsilon sigma/Delta`` and
    ``b = -Delta/(2 sigma) - epsilon sigma/Delta``, ``delta = Phi(a) - e^epsilon Phi(b)``.
    Evaluated in log space, ``log Phi(a) + log(1 - exp(epsilon + log Phi(b) - log Phi(a)))``,
    so that it stays accurate when both terms are tiny.
    """
    return math.exp(_log_gaussian_delta(sigma / l2_sensitivity, epsilon))


def _log_gaussian_delta(ratio: float, epsilon: float) -> float:
    # ratio = sigma / Delta; the privacy profile depends on sigma and Delta only through it.
    from scipy import special  # imported where needed: it costs a tenth of a second at import

    a = 0.5 / ratio - epsilon * ratio
    b = -0.5 / ratio - epsilon * ratio
    log_phi_a = special.log_ndtr(a)
    if a < 0:
        # delta = Phi(a) (1 - e^epsilon Phi(b) / Phi(a)). With Phi(x) = erfcx(-x/sqrt 2) e^{-x^2/2} / 2
        # and b^2 - a^2 = 2 epsilon exactly, the ratio's logarithm is a difference of erfcx
        # logarithms: no cancellation between two numbers of size x^2/2, which at epsilon = 1e5
        # (log Phi ~ -3.7e10) loses every digit and turned delta into NaN.
        exponent = math.log(special.erfcx(-b / math.sqrt(2.0))) - math.log(special.erfcx(-a / math.sqrt(2.0)))
    else:
        exponent = epsilon + special.log_ndtr(b) - log_phi_a
    if exponent >= 0:  # the two tails agree to rounding: delta is below what float64 resolves
        return -math.inf
    return float(log_phi_a + np.log(-np.expm1(exponent)))


@validate_params(rho=POSITIVE, epsilon=NONNEGATIVE)
def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta at which every ``rho``-zCDP mechanism is ``(epsilon, delta)``-DP.

    The conversion of Canonne, Kamath & Steinke (NeurIPS 2020, Proposition 12 and Corollary 13):
    ``delta = inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / alpha *
    (1 - 1/alpha)^(alpha - 1)``, minimized here in ``log(alpha - 1)`` (the objective is smooth and
    unimodal there) to about 1e-10 relative.

    Parameters
    ----------
    rho : float
        ``> 0``.
    epsilon : float
        ``>= 0``.

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    return math.exp(_log_zcdp_delta(rho, epsilon))


def _log_zcdp_delta(rho: float, epsilon: float) -> float:
    from scipy import optimize

    def log_delta(t: float) -> float:
        # With alpha = 1 + e^t: (alpha - 1) log(1 - 1/alpha) = e^t (t - log alpha), finite even
        # where alpha rounds to 1.
        excess = math.exp(min(t, 700.0))
        log_alpha = math.log1p(excess)
        return excess * ((1.0 + excess) * rho - epsilon) - log_alpha + excess * (t - log_alpha)

    # The minimizing alpha is about (epsilon + rho) / (2 rho); search around it in log(alpha - 1).
    centre = math.log(max((epsilon + rho) / (2.0 * rho) - 1.0, 1e-12))
    result = optimize.minimize_scalar(log_delta, bracket=(centre - 1.0, centre + 1.0), tol=1e-12)
    return min(0.0, float(result.fun), log_delta(centre))


@validate_params(privacy=InstanceOf(ApproxDP, what="ApproxDP"))
def zcdp_for_approx_dp(privacy: ApproxDP) -> float:
    """The largest ``rho`` whose zCDP guarantee converts to ``privacy`` by :func:`zcdp_delta`.

    Used to calibrate the discrete Gaussian for ``(epsilon, delta)``-DP: its zCDP guarantee is
    exact, so this gives the least noise that the conversion certifies.
    """
    from scipy import optimize

    target = math.log(privacy.delta)
    # log delta increases in rho; bracket the root in log rho, then solve.
    lower, upper = -1.0, 1.0
    while _log_zcdp_delta(math.exp(lower), privacy.epsilon) > target:
        lower -= 1.0
    while _log_zcdp_delta(math.exp(upper), privacy.epsilon) < target:
        upper += 1.0
    log_rho = optimize.brentq(lambda t: _log_zcdp_delta(math.exp(t), privacy.epsilon) - target,
                              lower, upper, xtol=1e-13, rtol=1e-15)
    # brentq's root may sit a rounding step on the wrong side; step down until it is on the safe
    # one. (Every delta computed here is attained at some alpha, so it is an upper bound on the
    # infimum whatever the minimizer's accuracy: the calibration errs only on the safe side.)
    rho = math.exp(log_rho)
    while math.exp(_log_zcdp_delta(rho, privacy.epsilon)) > privacy.delta:
        rho *= 1.0 - 1e-12
    return rho


@validate_params(l2_sensitivity=NONNEGATIVE, method=Options("analytic", "classical"), discrete=FLAG)
def gaussian_sigma(
    l2_sensitivity: float,
    privacy: ZCDP | ApproxDP,
    *,
    method: Literal["analytic", "classical"] = "analytic",
    discrete: bool = False,
) -> float:
    """Standard deviation of Gaussian noise that makes a query of this l2 sensitivity private.

    Parameters
    ----------
    l2_sensitivity : float
        ``Delta_2 >= 0``, in the units of the query (counts, in the mechanisms); see
        :meth:`Neighbouring.count_sensitivity`.
    privacy : ZCDP or ApproxDP
        For ``ZCDP(rho)``: ``sigma = Delta / sqrt(2 rho)`` (Bun & Steinke 2016, Proposition 1.6;
        the same for the discrete Gaussian, Canonne, Kamath & Steinke 2020, Theorem 14).
        For ``ApproxDP(epsilon, delta)`` with ``method="analytic"``, continuous noise: the smallest
        sigma with ``gaussian_delta(sigma) <= delta`` (Balle & Wang 2018, Theorem 8, solved to
        about 1e-12 relative), exact for the Gaussian mechanism. Discrete noise: the sigma of the
        largest rho that :func:`zcdp_delta` converts to ``(epsilon, delta)``.
    method : {"analytic", "classical"}
        ``"classical"`` is the loose bound ``Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork &
        Roth 2014, Theorem A.1), valid only for ``epsilon < 1``; kept for comparison.
    discrete : bool
        Calibrate the discrete Gaussian ``N_Z(0, sigma^2)`` on integer-valued queries.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the privacy parameters make sigma overflow (e.g. ``ZCDP(1e-320)``).
    """
    from scipy import optimize

    sensitivity = l2_sensitivity
    if isinstance(privacy, ZCDP):
        return _finite_scale(sensitivity / math.sqrt(2.0 * privacy.rho), "rho", privacy)
    if not isinstance(privacy, ApproxDP):
        raise TypeError(
            f"privacy: the Gaussian mechanism needs ZCDP or ApproxDP, got {type(privacy).__name__} "
            "(use the Laplace mechanism for pure DP)"
        )
    if sensitivity == 0:
        return 0.0
    epsilon, delta = privacy.epsilon, privacy.delta
    if method == "classical":
        if discrete:
            raise ValueError("method: 'classical' calibrates the continuous Gaussian only; use 'analytic'")
        if epsilon >= 1:
            raise ValueError(f"method: 'classical' is valid only for epsilon < 1, got epsilon={epsilon}")
        return _finite_scale(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon, "epsilon", privacy)
    if discrete:
        return _finite_scale(sensitivity / math.sqrt(2.0 * zcdp_for_approx_dp(privacy)), "epsilon", privacy)
    target = math.log(delta)
    # log delta(ratio) decreases in ratio = sigma / Delta; bracket the root, then solve in log ratio.
    lower, upper = -1.0, 1.0
    while _log_gaussian_delta(math.exp(lower), epsilon) < target:
        lower -= 1.0
    while _log_gaussian_delta(math.exp(upper), epsilon) > target:
        upper += 1.0
    log_ratio = optimize.brentq(
        lambda t: _log_gaussian_delta(math.exp(t), epsilon) - target, lower, upper, xtol=1e-14, rtol=1e-15
    )
    return _finite_scale(sensitivity * math.exp(log_ratio), "epsilon", privacy)


def _finite_scale(scale: float, parameter: str, privacy: Privacy) -> float:
    """``scale``, or a ValueError naming the privacy parameter that made it overflow."""
    if not math.isfinite(scale):
        raise ValueError(f"{parameter}: {privacy} needs noise of infinite scale (the parameter is too small)")
    return scale


@validate_params(l1_sensitivity=NONNEGATIVE)
def laplace_scale(l1_sensitivity: float, privacy: PureDP | float) -> float:
    """Scale ``b = Delta_1 / epsilon`` of Laplace noise for pure epsilon-DP (Dwork et al. 2006);
    ``privacy`` is a PureDP or its epsilon."""
    if isinstance(privacy, (ZCDP, ApproxDP)):
        raise TypeError(f"privacy: the Laplace mechanism needs PureDP, got {type(privacy).__name__}")
    if not isinstance(privacy, PureDP):
        privacy = PureDP(privacy)  # checks epsilon
    return _finite_scale(l1_sensitivity / privacy.epsilon, "epsilon", privacy)
