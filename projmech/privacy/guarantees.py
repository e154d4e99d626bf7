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

import functools
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, overload

import numpy as np

from ..errors import ArgumentTypeError, ArgumentValueError
from ..validation import (
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
    "LargeDeltaWarning",
    "LARGE_DELTA",
    "Neighbouring",
    "gaussian_sigma",
    "gaussian_delta",
    "laplace_scale",
    "zcdp_delta",
    "zcdp_for_approx_dp",
    "compose",
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


#: The largest delta accepted without a :class:`LargeDeltaWarning` when an :class:`ApproxDP` is built.
LARGE_DELTA = 1e-3

#: A delta: 1 would allow a total failure of privacy with certainty.
_DELTA = Interval(Real, 0, 1, closed="neither",
                  reason="delta is the probability of a total failure of privacy; at 1 nothing is protected")


class LargeDeltaWarning(UserWarning):
    """An (epsilon, delta) guarantee whose delta protects too little.

    delta is the probability with which the guarantee may fail completely: a mechanism that
    publishes each row outright with probability delta is (0, delta)-DP. With ``n`` rows, a
    delta of ``1/n`` or more therefore allows releasing a whole row (the one drawn at random is
    (0, 1/n)-DP), and the usual advice is delta well below ``1/n``, such as ``1/n^2`` or less.
    :class:`ApproxDP` warns with it when delta exceeds :data:`LARGE_DELTA` (``1e-3``); the
    mechanisms warn with it at release when delta is at least ``1/n`` for a size ``n`` that is
    public (the row count under replace-one, a declared size under add/remove; an estimated size
    is private and is never compared). delta ``>= 1`` is refused outright.

    See Also
    --------
    ApproxDP : The guarantee that warns.
    SizePolicy.check_delta : The warning at release.

    Examples
    --------
    >>> import warnings
    >>> import projmech as pm
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     privacy = pm.ApproxDP(1.0, 0.01)
    >>> [issubclass(w.category, pm.LargeDeltaWarning) for w in caught]
    [True]
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error")  # no warning at a small delta
    ...     privacy = pm.ApproxDP(1.0, 1e-6)
    """


def _large_delta_advice(delta: float, n: float | None = None) -> str:
    """Why a delta is too large and what to choose instead (``n``: a public size, if any)."""
    if n is None:
        advice = "choose delta well below 1/n for the n rows of the data, e.g. 1/n^2 or less"
    else:
        advice = f"choose delta well below 1/n = {1.0 / n:.3g}, e.g. 1/n^2 = {1.0 / n**2:.3g} or less"
    return ("delta is the probability of a total failure of privacy: with n rows, delta >= 1/n allows "
            f"releasing a row outright (publishing one row drawn at random is (0, 1/n)-DP); {advice}")


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
        In ``(0, 1)``; well below ``1/n`` for ``n`` rows (e.g. ``1/n^2``). Above
        :data:`LARGE_DELTA` (``1e-3``) it draws a :class:`LargeDeltaWarning`, and the mechanisms
        warn again at release if it is at least ``1/n`` for a public size ``n``.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``delta`` is not a real number.
    ValueError
        If ``epsilon`` is not positive or ``delta`` is outside ``(0, 1)``.

    Warns
    -----
    LargeDeltaWarning
        If ``delta`` exceeds :data:`LARGE_DELTA`.

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
        object.__setattr__(self, "delta", _DELTA.check("delta", self.delta))
        if self.delta > LARGE_DELTA:
            # stacklevel 3: the caller of the dataclass's __init__, which called this.
            warnings.warn(LargeDeltaWarning(f"delta: {self.delta:g} is above {LARGE_DELTA:g}; "
                                            + _large_delta_advice(self.delta)), stacklevel=3)

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
    projmech.privacy.noise.calibrate : Splits the budget between the counts and the size estimate.

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

    def check_delta(self, privacy: Privacy, rows: int) -> None:
        """Warn when an (epsilon, delta) guarantee's delta is at least ``1/n`` for a public size ``n``.

        ``n`` is the row count under replace-one (public by the relation's definition) and the
        declared size under add/remove. An estimated size is private, and the row count under
        add/remove too: then nothing is compared, so that whether the warning appears tells
        nothing about the data.

        Parameters
        ----------
        privacy : ZCDP, ApproxDP or PureDP
            The guarantee; only an ApproxDP has a delta to check.
        rows : int
            The data's row count, compared under replace-one only.

        Warns
        -----
        LargeDeltaWarning
            If ``delta >= 1/n``: publishing one row drawn at random is ``(0, 1/n)``-DP, so such
            a guarantee allows releasing a row outright.
        """
        if not isinstance(privacy, ApproxDP):
            return
        if self.neighbouring is Neighbouring.REPLACE_ONE:
            n = float(rows)
        elif self.declared is not None:
            n = float(self.declared)
        else:
            return
        if n >= 1 and privacy.delta >= 1.0 / n:
            # stacklevel 3: the caller of the mechanism's release, which called this.
            warnings.warn(LargeDeltaWarning(f"delta: {privacy.delta:g} is at least 1/n for the public size "
                                            f"n = {n:g} ({self.source}); " + _large_delta_advice(privacy.delta, n)),
                          stacklevel=3)

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


def compose(guarantees: Sequence[PureDP | ZCDP]) -> PureDP | ZCDP:
    """Sequential composition of pure DP or zCDP guarantees: epsilons add, rhos add.

    Mechanisms run one after the other on the same data, each chosen after seeing the earlier
    ones' outputs, satisfy the sum :cite:p:`DR14,BS16`; the inverse of :func:`scale_budget`.

    Parameters
    ----------
    guarantees : sequence of PureDP, or sequence of ZCDP
        The guarantees of the mechanisms run, all of one kind, at least one.

    Returns
    -------
    PureDP or ZCDP
        ``PureDP(sum of epsilons)`` or ``ZCDP(sum of rhos)``.

    Raises
    ------
    TypeError
        If ``guarantees`` is not a sequence of PureDP and ZCDP guarantees.
    ValueError
        If it is empty or mixes PureDP and ZCDP (convert one kind first: a PureDP(eps) mechanism
        is ``eps**2 / 2``-zCDP).

    Examples
    --------
    >>> import projmech as pm
    >>> print(pm.privacy.compose([pm.ZCDP(0.25), pm.ZCDP(0.5)]), pm.privacy.compose([pm.PureDP(0.1)] * 3))
    0.75-zCDP 0.3-DP
    """
    if isinstance(guarantees, (str, bytes)) or not isinstance(guarantees, Sequence):
        raise TypeError(f"guarantees: expected a sequence of PureDP or ZCDP, got {type(guarantees).__name__}")
    for guarantee in guarantees:
        if not isinstance(guarantee, (PureDP, ZCDP)):
            raise TypeError(f"guarantees: expected PureDP or ZCDP guarantees, got {type(guarantee).__name__}")
    if not guarantees:
        raise ValueError("guarantees: nothing to compose (an empty sequence)")
    if all(isinstance(guarantee, PureDP) for guarantee in guarantees):
        return PureDP(math.fsum(guarantee.epsilon for guarantee in guarantees if isinstance(guarantee, PureDP)))
    if all(isinstance(guarantee, ZCDP) for guarantee in guarantees):
        return ZCDP(math.fsum(guarantee.rho for guarantee in guarantees if isinstance(guarantee, ZCDP)))
    raise ValueError("guarantees: cannot compose PureDP and ZCDP together; convert the PureDP ones first "
                     "(PureDP(eps) is eps**2 / 2-zCDP)")


@validate_params(sigma=POSITIVE, l2_sensitivity=POSITIVE, epsilon=NONNEGATIVE)
def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """The smallest delta for which the Gaussian mechanism is (epsilon, delta)-DP.

    The exact privacy profile of ``N(0, sigma^2)`` noise on a query of l2 sensitivity ``Delta``
    :cite:p:`BW18`: ``delta = Phi(a) - e^epsilon Phi(b)`` with
    ``a = Delta/(2 sigma) - epsilon sigma/Delta`` and ``b = -Delta/(2 sigma) - epsilon sigma/Delta``,
    ``Phi`` the standard normal distribution function. It is evaluated in log space, so it stays
    accurate when both terms are tiny, and where the two terms nearly cancel (a tiny epsilon with
    a sigma far above ``Delta``, e.g. epsilon = 1e-12 at delta = 1e-100) as the integral of a
    positive function, so it stays accurate there too.

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
    return math.exp(_log_gaussian_delta(sigma / l2_sensitivity, epsilon)[0])


#: float64's unit roundoff, the unit of the error bounds of the profiles below.
_ROUNDOFF = sys.float_info.epsilon / 2

#: ``log`` of about the largest and the smallest normal float64: the range the calibrations
#: search for ``sigma / Delta`` and ``rho`` in.
_LOG_LARGEST, _LOG_SMALLEST = 709.0, -708.0

#: The largest epsilon :func:`zcdp_for_approx_dp` converts: the square root of float64's largest
#: number, since the conversion squares ``rho + epsilon``. (The continuous Gaussian's calibration
#: takes every finite epsilon.)
LARGEST_CONVERTED_EPSILON = math.sqrt(sys.float_info.max)

#: Where ``-log`` of the ratio of the Gaussian profile's two terms falls below this (they agree
#: to within 10 %), their difference is integrated rather than subtracted.
_NEAR_TERMS = 0.1


@functools.cache
def _gauss_legendre() -> tuple[np.ndarray, np.ndarray]:
    """16-point Gauss-Legendre nodes on ``[-1, 1]`` and the logarithms of their weights."""
    nodes, weights = np.polynomial.legendre.leggauss(16)
    return nodes, np.log(weights)


def _log_mills_slope(t: np.ndarray) -> np.ndarray:
    """``log R'(t)`` for ``R = Phi / phi``, the Mills ratio of the lower tail, at ``t <= 1``.

    ``R'(t) = 1 + t R(t) > 0``. From ``t = -3`` up it is computed as written (the cancellation
    costs at most a factor 12 at ``t = -3``); below, where it would cost a factor ``t^2``, from
    Laplace's continued fraction ``R(-x) = 1 / (x + K)``, ``K = 1 / (x + 2 / (x + 3 / (x + ...)))``,
    which gives ``R'(-x) = K / (x + K)`` with no cancellation. ``12 + 640 / x^2`` levels (83 at
    ``x = 3``) are exact to an ulp: measured against mpmath, an ulp needs 54 levels at ``x = 3``,
    35 at 4, 16 at 8 and 9 at 20.
    """
    from scipy import special

    t = np.asarray(t, dtype=float)
    result = np.empty_like(t)
    near = t >= -3.0
    direct = t[near]
    result[near] = np.log1p(direct * math.sqrt(math.pi / 2.0) * special.erfcx(-direct / math.sqrt(2.0)))
    x = -t[~near]
    tail = np.zeros_like(x)
    # The smallest x converges slowest: its depth serves all.
    # 640 / x / x: x^2 overflows beyond x = 1.3e154 (an epsilon of 4e153 reached it).
    smallest = float(x.min()) if x.size else math.inf
    for level in range(12 + math.ceil(640.0 / smallest / smallest) if x.size else 1, 1, -1):
        tail = level / (x + tail)
    k = 1.0 / (x + tail)
    result[~near] = np.log(k) - np.log(x + k)
    return result


def _log_gaussian_delta(ratio: float, epsilon: float) -> tuple[float, float]:
    """``log delta`` of the Gaussian's privacy profile at ``ratio = sigma / Delta`` (it depends on
    sigma and Delta only through it), and a bound on that logarithm's absolute error.

    ``delta = Phi(a) - e^epsilon Phi(b) = phi(a) (R(a) - R(b))`` with ``R = Phi / phi``, because
    ``e^epsilon phi(b) = phi(a)`` (``b^2 - a^2 = 2 epsilon``). Where the terms differ by 10 % or
    more, ``log Phi(a) + log(1 - R(b) / R(a))`` (the ratio from erfcx or log_ndtr, never from two
    numbers of size ``x^2 / 2``: at epsilon = 1e5 that lost every digit). Where they nearly cancel
    (a sigma far above Delta with a tiny epsilon: at epsilon = 1e-12, delta = 1e-100 the
    subtraction was 13 % off, and below epsilon = 1e-300 it returned sigma = 3.6e15 whatever
    delta), ``R(a) - R(b)`` is the integral of ``R' > 0`` over the short interval ``[b, a]``, by
    Gauss-Legendre quadrature: no cancellation at all.

    The error bound counts the rounding of ``a`` and ``b`` (each within a few ulps of ``|b|``: a
    difference of ``Delta / (2 sigma)`` and ``epsilon sigma / Delta``) times the profile's
    derivatives in them (``|a|`` for ``log phi(a)``, at most about 2 for the rest), and the special
    functions' own error (a few hundred ulps of their logarithms at worst, which grow like ``a^2``
    and ``b^2``), with a factor 64 to spare, and divided by ``1 - R(b) / R(a)`` where that
    difference is taken. It is what :func:`gaussian_sigma` adds before comparing with delta.
    """
    from scipy import special  # imported where needed: it costs a tenth of a second at import

    h = 1.0 / ratio if ratio > 0 else math.inf  # Delta / sigma
    centre = -epsilon * ratio  # (a + b) / 2
    if centre == -math.inf or h == 0:  # sigma / Delta beyond float64: delta underflows
        return -math.inf, 0.0
    if h == math.inf:  # sigma / Delta below float64: delta = 1
        return 0.0, 0.0
    a, b = centre + 0.5 * h, centre - 0.5 * h
    error = 64.0 * _ROUNDOFF * (4.0 + a * a + abs(b) * (2.0 + abs(a)))
    if a < 0:
        # log(R(b) / R(a)) from R(x) = sqrt(pi / 2) erfcx(-x / sqrt 2).
        log_ratio = math.log(special.erfcx(-b / math.sqrt(2.0))) - math.log(special.erfcx(-a / math.sqrt(2.0)))
    else:
        log_ratio = epsilon + special.log_ndtr(b) - special.log_ndtr(a)
        error += 64.0 * _ROUNDOFF * b * b  # log_ndtr(b) is about -b^2 / 2, to a few ulps of that
    if log_ratio <= -_NEAR_TERMS:
        gap = -math.expm1(log_ratio)
        value = float(special.log_ndtr(a)) + math.log(gap)
        return value, (0.0 if value == -math.inf else error / gap)
    nodes, log_weights = _gauss_legendre()
    logs = log_weights + _log_mills_slope(centre + 0.5 * h * nodes)
    top = float(logs.max())
    log_difference = math.log(0.5 * h) + top + math.log(float(np.exp(logs - top).sum()))
    return -0.5 * a * a - 0.5 * math.log(2.0 * math.pi) + log_difference, error


def _log_gaussian_delta_bound(ratio: float, epsilon: float) -> float:
    """An upper bound on ``log delta`` of the Gaussian's profile: the value plus its error bound."""
    value, error = _log_gaussian_delta(ratio, epsilon)
    return value if value == -math.inf else min(0.0, value + error)


@validate_params(rho=POSITIVE, epsilon=NONNEGATIVE)
def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta at which every ``rho``-zCDP mechanism is ``(epsilon, delta)``-DP.

    The conversion from concentrated to approximate DP of :cite:t:`CKS20`:
    ``delta = inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / alpha *
    (1 - 1/alpha)^(alpha - 1)``, at the one alpha where the exponent's derivative
    ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)`` vanishes (it increases in alpha), found to
    rounding. It is tighter than the classical ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` of
    :cite:t:`BS16`.

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
    return math.exp(_log_zcdp_delta(rho, epsilon)[0])


#: The largest ``log(alpha - 1)`` the conversion tries: alpha = 1 + e^700 is as good as any
#: larger one wherever float64 can tell (a larger optimum needs epsilon / rho above 1e304).
_LOG_ALPHA_CAP = 700.0


def _log1p_exp_minus(t: float) -> float:
    """``log(1 + e^-t)`` without overflow or cancellation, for any t."""
    return math.log1p(math.exp(-t)) if t > 0 else -t + math.log1p(math.exp(t))


def _log_zcdp_delta(rho: float, epsilon: float) -> tuple[float, float]:
    """``log delta`` of the conversion of :func:`zcdp_delta`, and a bound on its absolute error.

    With ``alpha = 1 + e^t``: ``log delta(t) = e^t ((1 + e^t) rho - epsilon) - log alpha -
    e^t log(1 + e^-t)`` (``(alpha - 1) log(1 - 1/alpha)`` written without the cancellation of
    ``t - log alpha``, which cost a tenth of its value at t = 30). Every t gives a valid bound
    (the conversion holds at every alpha), so the root finder's tolerance costs tightness only;
    the error bound is rounding: a few ulps of the terms' magnitudes, with a factor 16 to spare.
    """
    from scipy import optimize

    def slope(t: float) -> float:
        # The derivative of log delta in alpha: increasing in t, from -inf to +inf.
        return (1.0 + 2.0 * math.exp(min(t, _LOG_ALPHA_CAP))) * rho - epsilon - _log1p_exp_minus(t)

    def terms(t: float) -> tuple[float, float, float, float]:
        excess = math.exp(t)
        log_alpha = math.log1p(excess) if t <= 0 else t + _log1p_exp_minus(t)
        return excess * ((1.0 + excess) * rho), -excess * epsilon, -log_alpha, -excess * _log1p_exp_minus(t)

    # The root is near alpha ~ ((rho + epsilon) + sqrt((rho + epsilon)^2 + 8 rho)) / (4 rho), the
    # stationary point of the expansion log(1 - 1/alpha) ~ -1/alpha - 1/(2 alpha^2); bracket it.
    total = rho + epsilon
    guess = (total + math.sqrt(total * total + 8.0 * rho)) / (4.0 * rho) - 1.0
    centre = min(math.log(guess), _LOG_ALPHA_CAP) if guess > 0 else -1.0
    lower, upper, step = centre - 1.0, min(centre + 1.0, _LOG_ALPHA_CAP), 1.0
    while slope(lower) > 0:
        lower, step = lower - step, 2.0 * step
    step = 1.0
    while slope(upper) < 0 and upper < _LOG_ALPHA_CAP:
        upper, step = min(upper + step, _LOG_ALPHA_CAP), 2.0 * step
    best = upper if slope(upper) <= 0 else optimize.brentq(slope, lower, upper, xtol=1e-12, rtol=1e-15)
    parts = terms(best)
    if math.inf in parts and -math.inf in parts:  # both the rho and the epsilon terms overflowed
        return 0.0, 0.0
    value = math.fsum(parts)
    if value == -math.inf:  # the epsilon term alone overflowed: delta underflows
        return value, 0.0
    if value >= 0 or math.isnan(value):  # delta >= 1 (or a term overflowed to infinity): nothing certified
        return 0.0, 0.0
    return value, 16.0 * _ROUNDOFF * (1.0 + sum(abs(part) for part in parts))


def _log_zcdp_delta_bound(rho: float, epsilon: float) -> float:
    """An upper bound on ``log delta`` of :func:`zcdp_delta`: the value plus its error bound."""
    value, error = _log_zcdp_delta(rho, epsilon)
    return min(0.0, value + error)


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
    ValueError
        If epsilon and delta are so small that rho would be below float64's normal range
        (``e^-708``; delta = 1e-300 at a tiny epsilon needs about 1e-600).

    Examples
    --------
    >>> import projmech as pm
    >>> rho = pm.privacy.zcdp_for_approx_dp(pm.ApproxDP(1.0, 1e-6))
    >>> round(rho, 5), pm.privacy.zcdp_delta(rho, 1.0) <= 1e-6
    (0.02436, True)
    """
    from scipy import optimize

    target, epsilon = math.log(privacy.delta), privacy.epsilon
    if epsilon > LARGEST_CONVERTED_EPSILON:
        valid = f"at most {LARGEST_CONVERTED_EPSILON:.4g}"
        raise ArgumentValueError(
            "privacy", f"{privacy}: an epsilon of {epsilon:g} is beyond what the conversion from zCDP can take: "
            f"it squares rho + epsilon, which overflows float64 above epsilon = {LARGEST_CONVERTED_EPSILON:.4g} "
            "(the square root of float64's largest number); epsilon must be " + valid, part="epsilon", valid=valid)

    def excess(log_rho: float) -> float:
        return _log_zcdp_delta_bound(math.exp(log_rho), epsilon) - target

    # log delta increases in rho; bracket the root in log rho (by growing steps), then solve.
    lower, upper, step = -1.0, 1.0, 1.0
    while excess(lower) > 0:
        if lower <= _LOG_SMALLEST:
            # (A ZeroDivisionError here before: rho underflowed to 0.)
            raise ArgumentValueError(
                "privacy", f"{privacy} is too small to calibrate the discrete Gaussian: its zCDP conversion needs "
                f"rho below e^{_LOG_SMALLEST:g}, about float64's smallest normal number (sigma above 1e153 times the "
                "sensitivity)", part="epsilon", remedies=["a larger epsilon or delta"])
        lower, step = max(lower - step, _LOG_SMALLEST), 2.0 * step
    step = 1.0
    while excess(upper) < 0 and upper < _LOG_LARGEST:
        upper, step = min(upper + step, _LOG_LARGEST), 2.0 * step
    if excess(upper) <= 0:  # even rho = e^709 converts within delta: no larger rho is needed
        return math.exp(upper)
    log_rho = optimize.brentq(excess, lower, upper, xtol=1e-13, rtol=1e-15)
    # brentq's root may sit a rounding step on the wrong side; step down (by growing steps) until
    # the bound, the value plus its rounding error, is within delta.
    rho, step = math.exp(log_rho), 1e-12
    while _log_zcdp_delta_bound(rho, epsilon) > target:
        rho, step = rho * (1.0 - step), min(2.0 * step, 0.5)
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
    1e-12 relative, with the profile's rounding error added before comparing: the delta achieved never exceeds
    the delta claimed, at any epsilon and delta float64 holds; with discrete noise, the sigma of the largest
    rho that :func:`zcdp_delta` converts to ``(epsilon, delta)`` (:func:`zcdp_for_approx_dp`; about 7 % more
    noise at ``(1, 1e-6)``).

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
        If sigma overflows (e.g. a sensitivity of 1e300 under ``ZCDP(1e-300)``), epsilon and
        delta are too small to calibrate (a sigma beyond float64's range, or for discrete noise a
        rho below it), or ``method="classical"`` is asked with ``epsilon >= 1`` or discrete
        noise. Each names ``privacy`` (or ``method``).

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
        # 2 rho overflows above rho = 9e307 (sigma came out 0): sqrt(2) sqrt(rho) there.
        twice = 2.0 * privacy.rho
        root = math.sqrt(twice) if math.isfinite(twice) else math.sqrt(2.0) * math.sqrt(privacy.rho)
        return _finite_scale(sensitivity / root, "rho", privacy)
    if not isinstance(privacy, ApproxDP):
        raise ArgumentTypeError(
            "privacy", f"the Gaussian mechanism needs ZCDP or ApproxDP, got {type(privacy).__name__} "
            "(use the Laplace mechanism for pure DP)", valid="ZCDP or ApproxDP")
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

    def excess(log_ratio: float) -> float:
        # The bound on log delta (value plus rounding error) over the target; kept finite, for brentq.
        return max(_log_gaussian_delta_bound(math.exp(log_ratio), epsilon), -2.0 * _LOG_LARGEST) - target

    # The bound decreases in ratio = sigma / Delta; bracket the root in log ratio (by growing
    # steps), then solve. Toward ratio 0 the profile tends to 1, above any delta: the first loop ends.
    lower, upper, step = -1.0, 1.0, 1.0
    while excess(lower) < 0:
        lower, step = lower - step, 2.0 * step
    step = 1.0
    while excess(upper) > 0:
        if upper >= _LOG_LARGEST:
            raise ArgumentValueError(
                "privacy", f"{privacy} is too small to calibrate: the Gaussian needs sigma above e^{_LOG_LARGEST:g} "
                "(8e307) times the sensitivity, beyond float64", part="epsilon",
                remedies=["a larger epsilon or delta"])
        upper, step = min(upper + step, _LOG_LARGEST), 2.0 * step
    log_ratio = optimize.brentq(excess, lower, upper, xtol=1e-14, rtol=1e-15)
    # brentq's root may sit a rounding step on the unsafe side; step sigma up (by growing steps)
    # until the bound on the profile of the sigma returned, computed from sigma and Delta, is at
    # most delta: what is claimed is then at least what is achieved, whatever the rounding.
    sigma, step = sensitivity * math.exp(log_ratio), 1e-12
    while math.isfinite(sigma) and _log_gaussian_delta_bound(sigma / sensitivity, epsilon) > target:
        sigma, step = sigma * (1.0 + step), 2.0 * step
    return _finite_scale(sigma, "epsilon", privacy)


def _finite_scale(scale: float, parameter: str, privacy: Privacy) -> float:
    """``scale``, or a ValueError naming the privacy parameter that made it overflow."""
    if not math.isfinite(scale):
        raise ArgumentValueError("privacy", f"{privacy} needs noise of infinite scale ({parameter} is too small)",
                                 part=parameter)
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
        raise ArgumentTypeError("privacy", f"the Laplace mechanism needs PureDP, got {type(privacy).__name__}",
                                valid="PureDP")
    if not isinstance(privacy, PureDP):
        privacy = PureDP(privacy)  # checks epsilon
    return _finite_scale(l1_sensitivity / privacy.epsilon, "epsilon", privacy)
