"""The privacy guarantees (zCDP, (epsilon, delta)-DP, pure DP) and how budgets split and compose.

Definitions and composition rules: :doc:`/theory/privacy`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, overload

from ..errors import ArgumentWarning
from ..validation import POSITIVE, Interval, Real

__all__ = ["ZCDP", "ApproxDP", "PureDP", "Privacy", "LargeDeltaWarning", "LARGE_DELTA", "scale_budget", "compose"]


class _OneParameter:
    """A guarantee of one positive parameter, printed as ``<value>-<_suffix>``."""

    _parameter: ClassVar[str]
    _suffix: ClassVar[str]

    def __post_init__(self) -> None:
        object.__setattr__(self, self._parameter, POSITIVE.check(self._parameter, getattr(self, self._parameter)))

    def __str__(self) -> str:
        return f"{getattr(self, self._parameter):g}-{self._suffix}"


@dataclass(frozen=True)
class ZCDP(_OneParameter):
    """Rho-zero-concentrated differential privacy :cite:p:`BS16`; rhos add up under composition.

    Parameters
    ----------
    rho : float
        The budget, ``> 0``: the Renyi divergence of each order alpha between the outputs on
        neighbouring data sets is at most ``rho * alpha``.

    Examples
    --------
    >>> print(pm.ZCDP(0.5), pm.privacy.compose([pm.ZCDP(0.5)] * 2))
    0.5-zCDP 1-zCDP
    """

    _parameter = "rho"
    _suffix = "zCDP"

    rho: float


@dataclass(frozen=True)
class PureDP(_OneParameter):
    """Pure epsilon-differential privacy :cite:p:`DMNS06`, the strongest; epsilons add up.

    The Laplace mechanism achieves it (:func:`laplace_scale`); ``PureDP(eps)`` implies
    ``eps**2 / 2``-zCDP.

    Parameters
    ----------
    epsilon : float
        The budget, positive.

    Examples
    --------
    >>> budget = pm.PureDP(1.0)
    >>> print(budget, pm.privacy.laplace_scale(2.0, budget))
    1-DP 2.0
    """

    epsilon: float

    _parameter = "epsilon"
    _suffix = "DP"


#: The largest delta accepted without a :class:`LargeDeltaWarning` when an :class:`ApproxDP` is built.
LARGE_DELTA = 1e-3

#: A delta: 1 would allow a total failure of privacy with certainty.
_DELTA = Interval(Real, 0, 1, closed="neither",
                  reason="delta is the probability of a total failure of privacy; at 1 nothing is protected")


class LargeDeltaWarning(ArgumentWarning):
    """An (epsilon, delta) guarantee whose delta protects too little: with ``n`` rows, ``1/n`` releases a row.

    :class:`ApproxDP` warns above :data:`LARGE_DELTA`, the mechanisms at ``1/n`` for a public ``n``
    (:meth:`SizePolicy.check_delta`); it names ``privacy``'s part ``delta`` as data.

    Parameters
    ----------
    part : str
        ``"delta"``.
    detail : str
        Why, and what to choose instead.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     privacy = pm.ApproxDP(1.0, 0.01)
    >>> [issubclass(w.category, pm.LargeDeltaWarning) for w in caught]
    [True]
    """

    argument = "privacy"


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
    """Approximate (epsilon, delta)-differential privacy :cite:p:`DR14`.

    Parameters
    ----------
    epsilon : float
        ``> 0``.
    delta : float
        In ``(0, 1)``, well below ``1/n`` for ``n`` rows; above :data:`LARGE_DELTA` it warns.

    Examples
    --------
    >>> print(pm.ApproxDP(1.0, 1e-6))
    (1, 1e-06)-DP
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", POSITIVE.check("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _DELTA.check("delta", self.delta))
        if self.delta > LARGE_DELTA:
            # stacklevel 3: the caller of the dataclass's __init__, which called this.
            warnings.warn(LargeDeltaWarning("delta", f"{self.delta:g} is above {LARGE_DELTA:g}; "
                                            + _large_delta_advice(self.delta)), stacklevel=3)

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


Privacy = ZCDP | ApproxDP | PureDP

#: A share of a budget: more than nothing, at most all of it.
_BUDGET_SHARE = Interval(Real, 0, 1, closed="right")


@overload
def scale_budget(privacy: PureDP, share: float) -> PureDP: ...


@overload
def scale_budget(privacy: ZCDP, share: float) -> ZCDP: ...


@overload
def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP: ...


def scale_budget(privacy: PureDP | ZCDP, share: float) -> PureDP | ZCDP:
    """A share of a budget that composes additively (pure DP and zCDP, :cite:p:`DR14,BS16`).

    Parameters
    ----------
    privacy : PureDP or ZCDP
        The whole budget (an (epsilon, delta) budget does not split additively).
    share : float
        The share of it, in ``(0, 1]``.

    Returns
    -------
    PureDP or ZCDP

    Examples
    --------
    >>> print(pm.privacy.scale_budget(pm.ZCDP(1.0), 0.25))
    0.25-zCDP
    """
    share = _BUDGET_SHARE.check("share", share)
    if isinstance(privacy, PureDP):
        return PureDP(privacy.epsilon * share)
    if isinstance(privacy, ZCDP):
        return ZCDP(privacy.rho * share)
    raise TypeError(f"privacy: only PureDP and ZCDP budgets split additively, got {type(privacy).__name__}")


def compose(guarantees: Sequence[PureDP | ZCDP]) -> PureDP | ZCDP:
    """Sequential composition of pure DP or zCDP guarantees, the inverse of :func:`scale_budget`.

    Epsilons add, rhos add :cite:p:`DR14,BS16`; mixing kinds is refused (``PureDP(eps)`` is
    ``eps**2 / 2``-zCDP).

    Parameters
    ----------
    guarantees : sequence of PureDP, or sequence of ZCDP
        The guarantees of the mechanisms run, all of one kind, at least one.

    Returns
    -------
    PureDP or ZCDP

    Examples
    --------
    >>> print(pm.privacy.compose([pm.PureDP(0.1)] * 3))
    0.3-DP
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
