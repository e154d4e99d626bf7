"""Privacy definitions, neighbouring relations and noise calibration.

Three guarantees: :class:`ZCDP` (rho-zero-concentrated DP, :cite:p:`BS16`), :class:`ApproxDP`
((epsilon, delta)-DP) and :class:`PureDP` (epsilon-DP, :cite:p:`DMNS06`); two neighbouring
relations (:class:`Neighbouring`) and the public size the answers are fractions of
(:class:`SizePolicy`). Calibration: the Gaussian's sigma for zCDP :cite:p:`BS16`, the exact
analytic Gaussian for (epsilon, delta) :cite:p:`BW18`, the discrete Gaussian through its zCDP
guarantee and the conversion of :cite:t:`CKS20` (:func:`zcdp_delta`), and the Laplace scale
:cite:p:`DMNS06`. Every noise scale is in the units of the measured values (counts, in the
mechanisms), so none depends on the number of rows.

The equations and their derivations are in the theory page *Privacy: definitions, sensitivity
and calibration* (``docs/theory/privacy.md``). Depends on numpy and scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, overload

import numpy as np

from .validation import (
    ENUM_LOOKUP_SIGNATURE,
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
    """Rho-zero-concentrated differential privacy (rho-zCDP).

    A mechanism is rho-zCDP when the Renyi divergence of order alpha between its output
    distributions on neighbouring data sets is at most ``rho alpha`` for every ``alpha > 1``
    :cite:p:`BS16`. Budgets compose additively (:func:`scale_budget`); the Gaussian mechanism
    with ``sigma = Delta / sqrt(2 rho)`` satisfies it (:func:`gaussian_sigma`).

    Parameters
    ----------
    rho : float
        The budget, ``> 0``.

    Raises
    ------
    TypeError
        If ``rho`` is not a real number.
    ValueError
        If ``rho`` is not positive.

    See Also
    --------
    zcdp_delta : The (epsilon, delta)-DP a rho-zCDP guarantee implies.

    References
    ----------
    :cite:t:`BS16` (the definition, composition and the Gaussian mechanism).

    Examples
    --------
    >>> import projmech as pm
    >>> privacy = pm.ZCDP(0.5)
    >>> print(privacy)
    0.5-zCDP
    >>> round(pm.privacy.gaussian_sigma(1.0, privacy), 4)  # Delta / sqrt(2 rho)
    1.0
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", POSITIVE.check("rho", self.rho))

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class ApproxDP:
    """Approximate (epsilon, delta)-differential privacy.

    For neighbouring data sets ``D, D'`` and every event ``E``,
    ``Pr[M(D) in E] <= exp(epsilon) Pr[M(D') in E] + delta`` :cite:p:`DR14`.

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In ``(0, 1)``.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``delta`` is not a real number.
    ValueError
        If ``epsilon`` is not positive or ``delta`` is outside ``(0, 1)``.

    See Also
    --------
    gaussian_sigma : The Gaussian noise for it (exact analytic calibration).

    Examples
    --------
    The analytic Gaussian's sigma for a query of l2 sensitivity 1, continuous and discrete:

    >>> import projmech as pm
    >>> privacy = pm.ApproxDP(1.0, 1e-6)
    >>> print(privacy)
    (1, 1e-06)-DP
    >>> round(pm.privacy.gaussian_sigma(1.0, privacy), 4)
    4.2247
    >>> round(pm.privacy.gaussian_sigma(1.0, privacy, discrete=True), 4)
    4.5309
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", POSITIVE.check("epsilon", self.epsilon))
        object.__setattr__(self, "delta", OPEN_UNIT.check("delta", self.delta))

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class PureDP:
    """Pure epsilon-differential privacy: (epsilon, 0)-DP.

    Budgets compose additively (:func:`scale_budget`); the Laplace mechanism with scale
    ``Delta_1 / epsilon`` satisfies it :cite:p:`DMNS06`.

    Parameters
    ----------
    epsilon : float
        ``> 0``.

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number.
    ValueError
        If ``epsilon`` is not positive.

    Examples
    --------
    >>> import projmech as pm
    >>> privacy = pm.PureDP(1.0)
    >>> print(privacy)
    1-DP
    >>> pm.privacy.laplace_scale(2.0, privacy)  # Delta_1 / epsilon
    2.0
    """

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

    ``REPLACE_ONE`` (bounded DP; the default): data sets of the same size ``n``, which is therefore
    public, differing in one row. The counts ``F c`` move by ``F_u - F_v`` for two universe
    elements ``u, v``, so their l_p sensitivity is at most ``2 ||F||_{1->p}``, and
    ``sqrt(2) ||F||_{1->2}`` in l2 when F has no negative entry. The answers are the counts
    divided by the public ``n``.

    ``ADD_REMOVE`` (unbounded DP): one row added or removed. The counts move by one column
    ``F_u`` (sensitivity ``||F||_{1->p}``), but the row count is private: the answers are the
    counts divided by a size *declared public* or *estimated privately* from a share of the
    budget (:class:`SizePolicy`), never by the true row count.

    Parameters
    ----------
    value : {"replace-one", "add-remove"}
        The relation's name.

    Raises
    ------
    ValueError
        If ``value`` names no relation.

    See Also
    --------
    SizePolicy : The public size the answers are fractions of.

    Notes
    -----
    The sensitivities are derived in the theory page *Privacy: definitions, sensitivity and
    calibration* (``docs/theory/privacy.md``).

    Examples
    --------
    >>> import projmech as pm
    >>> relation = pm.Neighbouring("add-remove")
    >>> relation is pm.Neighbouring.ADD_REMOVE, relation.count_sensitivity(1.0)
    (True, 1.0)
    >>> round(pm.Neighbouring.REPLACE_ONE.count_sensitivity(1.0, nonnegative=True), 4)
    1.4142
    >>> pm.Neighbouring.REPLACE_ONE.count_sensitivity(1.0, ord=1)
    2.0
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    __signature__ = ENUM_LOOKUP_SIGNATURE

    @validate_params(column_norm=NONNEGATIVE, ord=_SENSITIVITY_ORD, nonnegative=FLAG)
    def count_sensitivity(self, column_norm: float, ord: float = 2, *, nonnegative: bool = False,
                          column_distance: float | None = None) -> float:
        """The l_p sensitivity of the counts ``F c`` under this relation.

        Under add/remove it is ``column_norm``. Under replace-one in l2 it is
        ``column_distance`` when given (clipped at the bound that follows); otherwise the bound
        ``sqrt(2) column_norm`` when F has no negative entry (attained, e.g., by marginals: two
        rows that differ in every attribute differ in every table), else ``2 column_norm``.

        Parameters
        ----------
        column_norm : float
            ``||F||_{1->p}``, the largest l_p norm of a column of F, ``>= 0``.
        ord : {1, 2}, default 2
            The norm the sensitivity is stated in (1 for Laplace noise, 2 for Gaussian).
        nonnegative : bool, default False
            Whether F has no negative entry (used in l2 under replace-one).
        column_distance : float, optional
            ``max over u != v of ||F_u - F_v||_2``, the exact l2 sensitivity under replace-one
            (:meth:`projmech.workloads.Workload.column_distance`); ignored otherwise.

        Returns
        -------
        float
            The sensitivity, in counts.
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
        """The sensitivity of the answers ``F c / n`` for a public size ``n``.

        A planning figure: :meth:`count_sensitivity` divided by ``n``.

        Parameters
        ----------
        column_norm : float
            ``||F||_{1->p}``, ``>= 0``.
        n : int
            The public size, ``>= 1``.
        ord : {1, 2}, default 2
            The norm the sensitivity is stated in.
        nonnegative : bool, default False
            Whether F has no negative entry.

        Returns
        -------
        float
            The sensitivity of the fractions.
        """
        return self.count_sensitivity(column_norm, ord, nonnegative=nonnegative) / n

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        """The relation named ``value``.

        Parameters
        ----------
        value : Neighbouring or {"replace-one", "add-remove"}
            A relation or its name.

        Returns
        -------
        Neighbouring
            The relation.

        Raises
        ------
        TypeError
            If ``value`` is not a str.
        ValueError
            If ``value`` names no relation.
        """
        return cls(_NEIGHBOURING.check("neighbouring", value))


_NEIGHBOURING = Options(*(relation.value for relation in Neighbouring))


#: ``size="estimate"``: estimate the private row count from a share of the privacy budget.
ESTIMATE_SIZE = "estimate"

#: Default share of the budget spent on the size estimate: the answers' own noise grows by 2.6 %
#: (Gaussian) or 5.3 % (Laplace); see the theory page ``docs/theory/privacy.md`` for the split.
DEFAULT_SIZE_SHARE = 0.05

#: The share of a budget spent on a size estimate (0: none).
_SHARE = Interval(Real, 0, 1, closed="left")

#: A declared size, or the word asking for an estimate.
_ESTIMATE = Options(ESTIMATE_SIZE)


@dataclass(frozen=True)
class SizePolicy:
    """How a mechanism turns counts into the fractions it releases, without using a private size.

    Under replace-one the size ``n`` is public by the relation's definition, and ``declared``
    and ``share`` stay unset. Under add/remove the answers are divided by a declared public size
    or by a private estimate of the row count (:meth:`parse` builds the policy from a mechanism's
    ``size=`` argument).

    Parameters
    ----------
    neighbouring : Neighbouring or {"replace-one", "add-remove"}
        The neighbouring relation.
    declared : int, optional
        Under add/remove, a size declared public by the user (e.g. a published population
        total): the answers are the counts divided by it, whatever the data's row count is.
    share : float, default 0.0
        Under add/remove with ``size="estimate"``, the share of the privacy budget, in
        ``[0, 1)``, spent on a noisy count of the rows, by which the answers are divided.

    Raises
    ------
    ValueError
        If ``declared`` or ``share`` is given under replace-one, or both are given.

    See Also
    --------
    projmech.noise.calibrate : Splits the budget between the counts and the size estimate.

    Notes
    -----
    How the budget is split with an estimated size is in the theory page *Privacy: definitions,
    sensitivity and calibration* (``docs/theory/privacy.md``).

    Examples
    --------
    >>> import projmech as pm
    >>> policy = pm.SizePolicy.parse("add-remove", "estimate")
    >>> policy.source, policy.share, policy.main_share()
    ('estimated', 0.05, 0.95)
    >>> pm.SizePolicy.parse("add-remove", 48_842).resolve(100, lambda: 0.0)  # declared: not the rows
    48842.0
    >>> pm.SizePolicy.parse("replace-one", None).resolve(100, lambda: 0.0)
    100.0
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

        Parameters
        ----------
        neighbouring : Neighbouring or {"replace-one", "add-remove"}
            The neighbouring relation.
        size : int, "estimate" or None
            ``None`` under replace-one; under add/remove a declared public size ``>= 1`` or
            ``"estimate"``.
        size_share : float, optional
            With ``size="estimate"``, the share of the budget for the estimate, in ``(0, 1)``;
            default :data:`DEFAULT_SIZE_SHARE`.

        Returns
        -------
        SizePolicy
            The policy.

        Raises
        ------
        TypeError
            If ``size`` is a float or a bool, or ``size_share`` is not a real number.
        ValueError
            If ``size`` is given under replace-one or missing under add/remove, is ``0`` or a
            word other than ``"estimate"``; if ``size_share`` is outside ``(0, 1)`` or comes
            without ``size="estimate"``.
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
        """Whether the size is estimated privately (a positive ``share``)."""
        return self.share > 0

    @property
    def source(self) -> str:
        """``"public n"`` (replace-one), ``"declared"`` or ``"estimated"``."""
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            return "public n"
        return "estimated" if self.estimated else "declared"

    def main_share(self) -> float:
        """The share of the budget left for the mechanism itself.

        Returns
        -------
        float
            ``1 - share``.
        """
        return 1.0 - self.share

    def check_dataset_n(self, n: Any, rows: int) -> None:
        """Check an ``n`` passed beside a Dataset of ``rows`` rows.

        Under add/remove it is refused whatever it is: the row count is private, and comparing it
        with a guess would tell whether the guess is right. Under replace-one ``n`` is public and
        must equal ``rows``.

        Parameters
        ----------
        n : int or None
            The size passed by the caller (``None``: nothing to check).
        rows : int
            The data set's row count.

        Raises
        ------
        ValueError
            If ``n`` is given under add/remove, or differs from ``rows`` under replace-one.
        """
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
        """The public size for data of ``rows`` rows.

        Parameters
        ----------
        rows : int
            The data set's row count.
        draw_size_noise : callable
            ``draw_size_noise() -> float``: one draw of the size estimate's noise, called only
            when the size is estimated.

        Returns
        -------
        float
            ``rows`` itself under replace-one, the declared size, or ``max(1, rows + noise)``.

        Raises
        ------
        ValueError
            If ``rows`` is 0 under replace-one (the size divides the counts).
        """
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


#: A share of a budget: more than nothing, at most all of it.
_BUDGET_SHARE = Interval(Real, 0, 1, closed="right")


@overload
def scale_budget(privacy: PureDP, share: float) -> PureDP: ...


@overload
def scale_budget(privacy: ZCDP, share: float) -> ZCDP: ...


@overload
def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP: ...


def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP:
    """A share of a budget that composes additively.

    Pure DP and zCDP budgets add up under composition :cite:p:`DR14,BS16`, so mechanisms run on
    shares that sum to 1 satisfy the whole budget together.

    Parameters
    ----------
    privacy : PureDP or ZCDP
        The whole budget.
    share : float
        The share of it, in ``(0, 1]``.

    Returns
    -------
    PureDP or ZCDP
        ``PureDP(share epsilon)`` or ``ZCDP(share rho)``.

    Raises
    ------
    TypeError
        If ``privacy`` is not a PureDP or ZCDP (an (epsilon, delta) budget does not split
        additively), or ``share`` is not a real number.
    ValueError
        If ``share`` is not in ``(0, 1]``: a share above 1 would spend more than the budget.

    Examples
    --------
    >>> import projmech as pm
    >>> print(pm.privacy.scale_budget(pm.ZCDP(1.0), 0.25), pm.privacy.scale_budget(pm.PureDP(1.0), 0.05))
    0.25-zCDP 0.05-DP
    """
    share = _BUDGET_SHARE.check("share", share)
    if isinstance(privacy, PureDP):
        return PureDP(privacy.epsilon * share)
    if isinstance(privacy, ZCDP):
        return ZCDP(privacy.rho * share)
    raise TypeError(f"privacy: only PureDP and ZCDP budgets split additively, got {type(privacy).__name__}")


@validate_params(sigma=POSITIVE, l2_sensitivity=POSITIVE, epsilon=NONNEGATIVE)
def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """The smallest delta for which the Gaussian mechanism is (epsilon, delta)-DP.

    The exact privacy profile of ``N(0, sigma^2)`` noise on a query of l2 sensitivity ``Delta``
    :cite:p:`BW18`: ``delta = Phi(a) - e^epsilon Phi(b)`` with
    ``a = Delta/(2 sigma) - epsilon sigma/Delta`` and ``b = -Delta/(2 sigma) - epsilon sigma/Delta``,
    ``Phi`` the standard normal distribution function. It is evaluated in log space, so it stays
    accurate when both terms are tiny.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``> 0``.
    l2_sensitivity : float
        ``Delta > 0``, in the units of ``sigma``.
    epsilon : float
        ``>= 0``.

    Returns
    -------
    float
        delta, in ``[0, 1]`` (0 when it is below what float64 resolves).

    See Also
    --------
    gaussian_sigma : Its inverse: the least sigma for a given delta.

    Notes
    -----
    The equation and its log-space evaluation are in the theory page *Privacy: definitions,
    sensitivity and calibration* (``docs/theory/privacy.md``).

    References
    ----------
    :cite:t:`BW18`, Theorem 8 (the analytic Gaussian mechanism).

    Examples
    --------
    >>> import projmech as pm
    >>> round(pm.privacy.gaussian_delta(1.0, 1.0, 1.0), 4)
    0.1269
    >>> sigma = pm.privacy.gaussian_sigma(1.0, pm.ApproxDP(1.0, 1e-6))
    >>> round(pm.privacy.gaussian_delta(sigma, 1.0, 1.0) / 1e-6, 6)
    1.0
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

    The conversion from concentrated to approximate DP of :cite:t:`CKS20`:
    ``delta = inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / alpha *
    (1 - 1/alpha)^(alpha - 1)``, minimized numerically to about 1e-10 relative. It is tighter
    than the classical ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` of :cite:t:`BS16`.

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

    See Also
    --------
    zcdp_for_approx_dp : Its inverse in ``rho``.

    Notes
    -----
    The conversion and how it is minimized are in the theory page *Privacy: definitions,
    sensitivity and calibration* (``docs/theory/privacy.md``).

    References
    ----------
    :cite:t:`CKS20` (the conversion from concentrated DP); :cite:t:`BS16` (zCDP).

    Examples
    --------
    >>> import projmech as pm
    >>> round(pm.privacy.zcdp_delta(0.5, 3.0), 5)
    0.00514
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
    exact :cite:p:`CKS20`, so this gives the least noise that the conversion certifies. The
    result errs only on the safe side: ``zcdp_delta(rho, epsilon) <= delta``.

    Parameters
    ----------
    privacy : ApproxDP
        The target guarantee.

    Returns
    -------
    float
        rho, ``> 0``.

    Raises
    ------
    TypeError
        If ``privacy`` is not an ApproxDP.

    Examples
    --------
    >>> import projmech as pm
    >>> rho = pm.privacy.zcdp_for_approx_dp(pm.ApproxDP(1.0, 1e-6))
    >>> round(rho, 5), pm.privacy.zcdp_delta(rho, 1.0) <= 1e-6
    (0.02436, True)
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

    For ``ZCDP(rho)``, ``sigma = Delta / sqrt(2 rho)``, continuous :cite:p:`BS16` or discrete
    :cite:p:`CKS20`. For ``ApproxDP(epsilon, delta)`` with continuous noise, the least sigma whose
    exact privacy profile (:func:`gaussian_delta`) is at most delta :cite:p:`BW18`, solved to about
    1e-12 relative; with discrete noise, the sigma of the largest rho that :func:`zcdp_delta`
    converts to ``(epsilon, delta)`` (:func:`zcdp_for_approx_dp`; about 7 % more noise at
    ``(1, 1e-6)``).

    Parameters
    ----------
    l2_sensitivity : float
        ``Delta >= 0``, in the units of the query (counts, in the mechanisms); see
        :meth:`Neighbouring.count_sensitivity`.
    privacy : ZCDP or ApproxDP
        The guarantee.
    method : {"analytic", "classical"}, default "analytic"
        ``"classical"`` is the loose ``Delta sqrt(2 ln(1.25/delta)) / epsilon`` of
        :cite:t:`DR14`, Theorem A.1, valid only for ``epsilon < 1`` and continuous noise; kept
        for comparison.
    discrete : bool, default False
        Calibrate the discrete Gaussian ``N_Z(0, sigma^2)`` on integer-valued queries.

    Returns
    -------
    float
        sigma, in the units of ``l2_sensitivity`` (0 for sensitivity 0).

    Raises
    ------
    TypeError
        If ``privacy`` is not a ZCDP or ApproxDP (pure DP needs the Laplace mechanism).
    ValueError
        If sigma overflows (e.g. a sensitivity of 1e300 under ``ZCDP(1e-300)``), or
        ``method="classical"`` is asked with ``epsilon >= 1`` or discrete noise.

    See Also
    --------
    laplace_scale : The Laplace mechanism's scale for pure DP.

    Notes
    -----
    The calibrations are derived in the theory page *Privacy: definitions, sensitivity and
    calibration* (``docs/theory/privacy.md``).

    References
    ----------
    :cite:t:`BW18`, Theorem 8 (analytic calibration); :cite:t:`BS16` (zCDP of the Gaussian);
    :cite:t:`CKS20` (the discrete Gaussian).

    Examples
    --------
    >>> import projmech as pm
    >>> round(pm.privacy.gaussian_sigma(2.0, pm.ZCDP(0.5)), 4)
    2.0
    >>> privacy = pm.ApproxDP(0.5, 1e-6)
    >>> analytic = pm.privacy.gaussian_sigma(1.0, privacy)
    >>> classical = pm.privacy.gaussian_sigma(1.0, privacy, method="classical")
    >>> round(analytic, 3), round(classical, 3)
    (8.058, 10.598)
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
    # brentq's root may sit a rounding step on the unsafe side (a profile a hair above delta);
    # step sigma up until the profile of the sigma returned is at most delta, as
    # zcdp_for_approx_dp steps rho down.
    sigma = sensitivity * math.exp(log_ratio)
    while _log_gaussian_delta(sigma / sensitivity, epsilon) > target or \
            gaussian_delta(sigma, sensitivity, epsilon) > delta:  # the public profile, evaluated its own way
        sigma *= 1.0 + 1e-12
    return _finite_scale(sigma, "epsilon", privacy)


def _finite_scale(scale: float, parameter: str, privacy: Privacy) -> float:
    """``scale``, or a ValueError naming the privacy parameter that made it overflow."""
    if not math.isfinite(scale):
        raise ValueError(f"{parameter}: {privacy} needs noise of infinite scale (the parameter is too small)")
    return scale


@validate_params(l1_sensitivity=NONNEGATIVE)
def laplace_scale(l1_sensitivity: float, privacy: PureDP | float) -> float:
    """Scale of Laplace noise for pure epsilon-DP: ``b = Delta_1 / epsilon``.

    The Laplace mechanism :cite:p:`DMNS06`; the discrete Laplace of the same scale on integer
    queries satisfies the same guarantee.

    Parameters
    ----------
    l1_sensitivity : float
        ``Delta_1 >= 0``, in the units of the query.
    privacy : PureDP or float
        The guarantee, or its epsilon ``> 0``.

    Returns
    -------
    float
        b, in the units of ``l1_sensitivity``.

    Raises
    ------
    TypeError
        If ``privacy`` is a ZCDP or ApproxDP.
    ValueError
        If epsilon is not positive, or so small that the scale overflows.

    Examples
    --------
    >>> import projmech as pm
    >>> pm.privacy.laplace_scale(2.0, pm.PureDP(0.5)), pm.privacy.laplace_scale(1.0, 0.25)
    (4.0, 4.0)
    """
    if isinstance(privacy, (ZCDP, ApproxDP)):
        raise TypeError(f"privacy: the Laplace mechanism needs PureDP, got {type(privacy).__name__}")
    if not isinstance(privacy, PureDP):
        privacy = PureDP(privacy)  # checks epsilon
    return _finite_scale(l1_sensitivity / privacy.epsilon, "epsilon", privacy)
