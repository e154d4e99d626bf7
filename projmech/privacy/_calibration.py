"""Noise calibration: the Gaussian's sigma, the Laplace scale, and zCDP to (epsilon, delta)-DP.

Scales are in the units of the measured values (counts, in the mechanisms); equations and their
numerically safe evaluation: :doc:`/theory/privacy`.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Literal

import numpy as np

from ..errors import ArgumentTypeError, ArgumentValueError
from ..validation import FLAG, NONNEGATIVE, POSITIVE, InstanceOf, Options, validate_params
from ._definitions import ZCDP, ApproxDP, Privacy, PureDP

__all__ = ["gaussian_sigma", "gaussian_delta", "laplace_scale", "zcdp_delta", "zcdp_for_approx_dp"]


@validate_params(sigma=POSITIVE, l2_sensitivity=POSITIVE, epsilon=NONNEGATIVE)
def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """The smallest delta for which the Gaussian mechanism is (epsilon, delta)-DP: its exact profile :cite:p:`BW18`.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation.
    l2_sensitivity : float
        ``Delta``, in the units of ``sigma``.
    epsilon : float
        ``>= 0``.

    Returns
    -------
    float
        delta, in ``[0, 1]``; it falls as sigma grows.

    Examples
    --------
    >>> round(pm.privacy.gaussian_delta(1.0, 1.0, 1.0), 4)
    0.1269
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
    """``log R'(t)`` for the Mills ratio ``R = Phi / phi`` at ``t <= 1`` (:doc:`/theory/privacy`)."""
    from scipy import special

    t = np.asarray(t, dtype=float)
    result = np.empty_like(t)
    near = t >= -3.0
    direct = t[near]
    result[near] = np.log1p(direct * math.sqrt(math.pi / 2.0) * special.erfcx(-direct / math.sqrt(2.0)))
    x = -t[~near]
    tail = np.zeros_like(x)
    # The smallest x converges slowest: its depth serves all.
    # 640 / x / x: x^2 overflows beyond x = 1.3e154.
    smallest = float(x.min()) if x.size else math.inf
    for level in range(12 + math.ceil(640.0 / smallest / smallest) if x.size else 1, 1, -1):
        tail = level / (x + tail)
    k = 1.0 / (x + tail)
    result[~near] = np.log(k) - np.log(x + k)
    return result


def _log_gaussian_delta(ratio: float, epsilon: float) -> tuple[float, float]:
    """``log delta`` of the Gaussian's profile at ``ratio = sigma / Delta`` and a bound on its error."""
    from scipy import special  # imported where needed: it is slow to import

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
    """The delta at which every ``rho``-zCDP mechanism is ``(epsilon, delta)``-DP :cite:p:`CKS20`.

    Tighter than ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` :cite:p:`BS16`.

    Parameters
    ----------
    rho, epsilon : float
        The zCDP budget (``> 0``) and the target epsilon (``>= 0``).

    Returns
    -------
    float

    Examples
    --------
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
    """``log delta`` of :func:`zcdp_delta` at its best ``alpha = 1 + e^t``, and a rounding bound on it."""
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
    """The largest ``rho`` whose zCDP guarantee converts to ``privacy``, erring only on the safe side :cite:p:`CKS20`.

    Parameters
    ----------
    privacy : ApproxDP
        The target guarantee.

    Returns
    -------
    float

    Examples
    --------
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

    ``ZCDP(rho)``: ``Delta / sqrt(2 rho)`` :cite:p:`BS16,CKS20`. ``ApproxDP``: the least sigma whose
    exact profile (:func:`gaussian_delta`), rounding included, is at most delta :cite:p:`BW18`.

    Parameters
    ----------
    l2_sensitivity : float
        ``Delta >= 0``, in the units of the query.
    privacy : ZCDP or ApproxDP
        The guarantee.
    method : {"analytic", "classical"}, default "analytic"
        ``"classical"``: the looser ``Delta sqrt(2 ln(1.25/delta)) / epsilon`` :cite:p:`DR14` (epsilon < 1).
    discrete : bool, default False
        Calibrate the discrete Gaussian, through :func:`zcdp_for_approx_dp`.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.privacy.gaussian_sigma(1.0, pm.ApproxDP(0.5, 1e-6)), 3)
    8.058
    """
    from scipy import optimize

    sensitivity = l2_sensitivity
    if isinstance(privacy, ZCDP):
        # 2 rho overflows above rho = 9e307: sqrt(2) sqrt(rho) there.
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
    """Scale ``b = Delta_1 / epsilon`` of Laplace noise for pure epsilon-DP :cite:p:`DMNS06`, discrete or not.

    Parameters
    ----------
    l1_sensitivity : float
        ``Delta_1 >= 0``, in the units of the query.
    privacy : PureDP or float
        The guarantee, or its epsilon.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.privacy.laplace_scale(2.0, pm.PureDP(0.5)), pm.privacy.laplace_scale(1.0, 0.25)
    (4.0, 4.0)
    """
    if isinstance(privacy, (ZCDP, ApproxDP)):
        raise ArgumentTypeError("privacy", f"the Laplace mechanism needs PureDP, got {type(privacy).__name__}",
                                valid="PureDP")
    if not isinstance(privacy, PureDP):
        privacy = PureDP(privacy)  # checks epsilon
    return _finite_scale(l1_sensitivity / privacy.epsilon, "epsilon", privacy)
