"""The adaptive mechanism's budget schedule, AIM's :cite:p:`MMSM22`: each round's noise and costs, composed."""

from __future__ import annotations

import math
import sys

from ...errors import ArgumentValueError
from ...privacy import ZCDP, compose
from .._selection import exponential_mechanism_rho

#: Share of a round's budget spent on the measurement (the rest selects), as in AIM.
MEASUREMENT_SHARE = 0.9

#: Notional rounds per attribute that set the first round's noise by default, as in AIM.
ROUNDS_PER_ATTRIBUTE = 16

#: By default the first rounds' noise is at most the public size over this: where AIM's rounds
#: would draw more (few rows, a small budget), a run takes fewer notional rounds, down to the
#: fewest, so that the one-way tables measured first carry signal (benchmarks/README.md, *The
#: schedule on small tables*).
ROWS_PER_NOISE = 16

#: The most rows whose counts float64 holds exactly (2^53): what bounds a measurement's counts,
#: whatever the data, in :func:`largest_rounds_rho`.
_EXACT_ROWS = 2.0**53


def round_parameters(sensitivity: float, rounds: int, budget: float) -> tuple[float, float]:
    """A round's noise ``sigma`` and selection ``epsilon`` when ``budget`` is split over ``rounds`` rounds."""
    sigma = sensitivity * math.sqrt(rounds / (2.0 * MEASUREMENT_SHARE * budget))
    return sigma, math.sqrt(8.0 * (1.0 - MEASUREMENT_SHARE) * budget / rounds)


def scheduled_rounds(most: int, least: int, sensitivity: float, budget: float, size: float) -> int:
    """A run's notional rounds: ``most`` (AIM's), or fewer, never under ``least``, where the first rounds'
    noise would be above ``size / ROWS_PER_NOISE`` (``size`` the public size: a function of public or
    released quantities only)."""
    sigma = round_parameters(sensitivity, most, budget)[0]
    wanted = most * (max(size, 0.0) / (ROWS_PER_NOISE * sigma)) ** 2  # the noise scales as sqrt(rounds)
    return int(min(most, max(least, math.floor(wanted))))


def measurement_rho(sensitivity: float, sigma: float) -> float:
    """The zCDP cost of a Gaussian measurement of a table of l2 sensitivity ``sensitivity``."""
    return sensitivity**2 / (2.0 * sigma**2)


def round_rho(sensitivity: float, sigma: float, epsilon: float) -> float:
    """The zCDP cost of a selecting round: its measurement and its exponential mechanism composed."""
    return _composed(measurement_rho(sensitivity, sigma), exponential_mechanism_rho(epsilon)).rho


def _composed(*costs: float) -> ZCDP:
    """One round's zCDP costs composed (a zero cost, a round without selection, adds nothing)."""
    composed = compose([ZCDP(cost) for cost in costs if cost > 0.0])
    assert isinstance(composed, ZCDP)  # zCDP guarantees compose to one
    return composed


class Spending:
    """The zCDP the rounds have spent, composed round by round by :func:`~projmech.privacy.compose`."""

    def __init__(self) -> None:
        self.spent: ZCDP | None = None

    @property
    def rho(self) -> float:
        """The rho spent so far (0 before the first round)."""
        return 0.0 if self.spent is None else self.spent.rho

    def charge(self, *costs: float) -> None:
        """Compose one round's costs with the rounds before it."""
        composed = _composed(*costs)
        total = composed if self.spent is None else compose([self.spent, composed])
        assert isinstance(total, ZCDP)
        self.spent = total

    def total(self, size_rho: float | None) -> ZCDP:
        """The rounds' zCDP composed with the size estimate's (``size_rho``), if any."""
        assert self.spent is not None  # a run measures every one-way table first
        if size_rho is None:
            return self.spent
        total = compose([self.spent, ZCDP(size_rho)])
        assert isinstance(total, ZCDP)
        return total


def least_rounds(attributes: int) -> int:
    """The fewest notional rounds for ``attributes`` one-way tables and one full round after them."""
    return math.ceil((9 * attributes + 10) / 10)


def largest_rounds_rho(sensitivity: float) -> float:
    """The largest budget of the rounds whose precision-weighted measurements stay within float64 for up
    to 2^53 rows: ``Delta^2 max / (8 n^2)`` (:doc:`/guide/adaptive`).
    """
    return sensitivity**2 * sys.float_info.max / (8.0 * _EXACT_ROWS**2)


def check_weighable(rho: float, share: float, sensitivity: float) -> None:
    """Refuse, naming ``privacy``, a ``rho`` whose rounds (``share`` of it) are beyond :func:`largest_rounds_rho`."""
    largest = largest_rounds_rho(sensitivity) / share
    if rho > largest:
        valid = f"at most {largest:.3g}"
        raise ArgumentValueError("privacy", f"rho = {rho:g} is above {largest:.3g}, the largest whose rounds' "
                                 "noise keeps the measurements, weighted by their precision, within float64 for every "
                                 f"data set of up to 2^53 rows; rho must be {valid}", part="rho", valid=valid)
