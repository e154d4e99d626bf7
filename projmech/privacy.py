"""Privacy definitions, neighbouring relations and noise calibration.

Depends on numpy and scipy only. The Gaussian calibration for (epsilon, delta)-DP is the exact
analytic one of Balle & Wang, "Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising", ICML 2018, Theorem 8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Literal

import numpy as np
from scipy import optimize, special

from .validation import check_positive_number

__all__ = [
    "ZCDP",
    "ApproxDP",
    "PureDP",
    "Privacy",
    "Neighbouring",
    "gaussian_sigma",
    "gaussian_delta",
    "laplace_scale",
]


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated differential privacy (Bun & Steinke, TCC 2016)."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_positive_number("rho", self.rho))

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-differential privacy, ``epsilon > 0`` and ``0 < delta < 1``."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive_number("epsilon", self.epsilon))
        delta = check_positive_number("delta", self.delta)
        if delta >= 1:
            raise ValueError(f"delta: must lie in (0, 1), got {delta}")
        object.__setattr__(self, "delta", delta)

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class PureDP:
    """Pure epsilon-differential privacy."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive_number("epsilon", self.epsilon))

    def __str__(self) -> str:
        return f"{self.epsilon:g}-DP"


Privacy = ZCDP | ApproxDP | PureDP


class Neighbouring(str, Enum):
    """Which data sets count as neighbours; it fixes the sensitivity of normalized answers.

    ``REPLACE_ONE`` (the seeds' default): data sets of the same public size ``n`` differing in
    one row, so ``||h - h'||_1 <= 2/n`` (seed 001, eq. 8) and the answers ``F h`` have
    l_p sensitivity at most ``(2/n) ||F||_{1->p}`` (seed 001, eq. 16).

    ``ADD_REMOVE``: one row added or removed. The answers are the counts ``F c`` divided by the
    public nominal size ``n``; one row moves ``c`` by a unit vector, so the l_p sensitivity is
    ``(1/n) ||F||_{1->p}``.
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    def sensitivity(self, column_norm: float, n: int) -> float:
        """Sensitivity of normalized answers given ``||F||_{1->p}`` and the data size ``n``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: the data set size must be a positive integer, got {n!r}")
        factor = 2.0 if self is Neighbouring.REPLACE_ONE else 1.0
        return factor * float(column_norm) / int(n)

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"neighbouring: expected one of {[v.value for v in cls]}, got {value!r}"
            ) from None


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
    a = 0.5 / ratio - epsilon * ratio
    b = -0.5 / ratio - epsilon * ratio
    log_phi_a = special.log_ndtr(a)
    exponent = epsilon + special.log_ndtr(b) - log_phi_a
    return float(log_phi_a + np.log(-np.expm1(exponent)))


def gaussian_sigma(
    l2_sensitivity: float,
    privacy: ZCDP | ApproxDP,
    method: Literal["analytic", "classical"] = "analytic",
) -> float:
    """Standard deviation of Gaussian noise that makes a query of this l2 sensitivity private.

    Parameters
    ----------
    l2_sensitivity : float
        ``Delta_2 >= 0``; see :meth:`Neighbouring.sensitivity`.
    privacy : ZCDP or ApproxDP
        For ``ZCDP(rho)``: ``sigma = Delta / sqrt(2 rho)`` (Bun & Steinke 2016, Proposition 1.6).
        For ``ApproxDP(epsilon, delta)`` with ``method="analytic"``: the smallest sigma with
        ``gaussian_delta(sigma) <= delta`` (Balle & Wang 2018, Theorem 8, solved to about 1e-12
        relative), exact for the Gaussian mechanism.
    method : {"analytic", "classical"}
        ``"classical"`` is the loose bound ``Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork &
        Roth 2014, Theorem A.1), valid only for ``epsilon < 1``; kept for comparison.

    Returns
    -------
    float
    """
    sensitivity = float(l2_sensitivity)
    if not math.isfinite(sensitivity) or sensitivity < 0:
        raise ValueError(f"l2_sensitivity: must be a finite number >= 0, got {l2_sensitivity}")
    if method not in ("analytic", "classical"):
        raise ValueError(f"method: expected 'analytic' or 'classical', got {method!r}")
    if isinstance(privacy, ZCDP):
        return sensitivity / math.sqrt(2.0 * privacy.rho)
    if not isinstance(privacy, ApproxDP):
        raise TypeError(
            f"privacy: the Gaussian mechanism needs ZCDP or ApproxDP, got {type(privacy).__name__} "
            "(use the Laplace mechanism for pure DP)"
        )
    if sensitivity == 0:
        return 0.0
    epsilon, delta = privacy.epsilon, privacy.delta
    if method == "classical":
        if epsilon >= 1:
            raise ValueError(f"method='classical' is valid only for epsilon < 1, got epsilon={epsilon}")
        return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
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
    return sensitivity * math.exp(log_ratio)


def laplace_scale(l1_sensitivity: float, privacy: PureDP | float) -> float:
    """Scale ``b = Delta_1 / epsilon`` of Laplace noise for pure epsilon-DP (Dwork et al. 2006)."""
    sensitivity = float(l1_sensitivity)
    if not math.isfinite(sensitivity) or sensitivity < 0:
        raise ValueError(f"l1_sensitivity: must be a finite number >= 0, got {l1_sensitivity}")
    if isinstance(privacy, PureDP):
        epsilon = privacy.epsilon
    elif isinstance(privacy, (ZCDP, ApproxDP)):
        raise TypeError(f"privacy: the Laplace mechanism needs PureDP, got {type(privacy).__name__}")
    else:
        epsilon = check_positive_number("epsilon", privacy)
    return sensitivity / epsilon
