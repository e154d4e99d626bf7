"""Error bounds of the Gaussian and projection mechanisms, and the data size each one needs.

Arguments: ``sigma`` is the noise's standard deviation per answer, ``k`` the number of queries,
``width`` the body's width, or ``universe_size`` for the worst case over that many points of norm at
most ``radius`` (default ``√k``). :func:`min_n` inverts any bound. Proofs: :doc:`/theory/bounds`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..privacy import ZCDP, ApproxDP, Neighbouring, gaussian_sigma
from ..validation import check_nonnegative_number, check_positive_int, check_positive_number
from .evaluation import gaussian_expected_rmse
from .geometry import finite_set_width_bound

__all__ = [
    "MEASURES",
    "MinimumSize",
    "check_measure",
    "noise_constant",
    "gaussian_mechanism_error",
    "projection_error",
    "ntz_projection_error",
    "min_n",
    "projection_min_n",
]

#: Error measures of :func:`gaussian_mechanism_error`: ``"rms"`` is
#: ``sqrt(E (1/k) ||error||²)``, the average error every bound here bounds, ``"mean"`` is
#: ``E (1/√k) ||error||``.
MEASURES = ("rms", "mean")

#: Where :func:`min_n` gives up: the largest power of two that is a float. Beyond it
#: ``sigma_times_n / n`` cannot be computed (and no data set is that large).
_LARGEST_N = 2**1023


def check_measure(measure: Any) -> str:
    """Return ``measure`` if it is one of :data:`MEASURES`; raise otherwise.

    Parameters
    ----------
    measure : object
        The value to check.

    Returns
    -------
    str

    Examples
    --------
    >>> pm.analysis.check_measure("mean")
    'mean'
    """
    if measure not in MEASURES:
        raise ValueError(f"measure: expected one of {MEASURES}, got {measure!r}")
    return measure


def _width(k: int, width: Any, universe_size: Any, radius: Any, points_per_element: int) -> float:
    """The width a bound uses: ``width``, or the finite-set bound over ``points_per_element * universe_size`` points."""
    if universe_size is None:
        if width is None:
            raise TypeError("width: give the width, or universe_size= for the worst case over a finite universe")
        if radius is not None:
            raise TypeError("radius: goes with universe_size= (the worst case), not with a given width")
        return check_nonnegative_number("width", width)
    if width is not None:
        raise TypeError("width: give either width or universe_size= (the worst case), not both")
    universe_size = check_positive_int("universe_size", universe_size)
    radius = math.sqrt(k) if radius is None else check_nonnegative_number("radius", radius)
    return finite_set_width_bound(points_per_element * universe_size, radius)


def _projection_bound(factor: float, points_per_element: int, sigma: Any, k: Any, width: Any, universe_size: Any,
                      radius: Any) -> float:
    """``sqrt(factor sigma width / k)``, the form of both projection bounds."""
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    width = _width(k, width, universe_size, radius, points_per_element)
    return math.sqrt(factor * sigma * width / k)


def noise_constant(
    privacy: ZCDP | ApproxDP,
    column_norm: float,
    *,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    calibration: Literal["analytic", "classical"] = "analytic",
    nonnegative: bool = False,
    discrete: bool = False,
) -> float:
    """Return ``n · sigma(n)``, the Gaussian mechanism's noise constant from the column norm.

    Parameters
    ----------
    privacy, column_norm
        The guarantee, and ``||F||_{1->2} > 0`` (:meth:`projmech.workloads.Workload.sensitivity`).
    neighbouring, calibration, nonnegative, discrete
        The relation, and the options of :func:`projmech.privacy.gaussian_sigma`.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.analysis.noise_constant(pm.ZCDP(0.5), 1.0)
    2.0
    """
    column_norm = check_positive_number("column_norm", column_norm)
    sensitivity = Neighbouring.parse(neighbouring).count_sensitivity(column_norm, 2, nonnegative=nonnegative)
    return gaussian_sigma(sensitivity, privacy, method=calibration, discrete=discrete)


def gaussian_mechanism_error(sigma: float, k: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
    """Return the Gaussian mechanism's exact error for noise ``N(0, sigma² I_k)``.

    Parameters
    ----------
    sigma, k, measure
        See the module's arguments; ``measure`` is ``"rms"`` (the result is ``sigma``) or ``"mean"``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.gaussian_mechanism_error(0.02, 180, measure="mean"), 6)
    0.019972
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    if check_measure(measure) == "rms":
        return sigma
    return gaussian_expected_rmse(sigma, k)


def projection_error(sigma: float, k: int, *, width: float | None = None, universe_size: int | None = None,
                     radius: float | None = None) -> float:
    """Bound the projection mechanism's RMSE ``sqrt(E (1/k) ||Ŷ - y||²)`` by ``sqrt(sigma l*(K) / k)`` :cite:p:`NTZ13`.

    Parameters
    ----------
    sigma, k, width, universe_size, radius
        As in the module docstring; ``width`` is ``l*(K)``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.projection_error(0.01, 180, width=16.5), 6)  # sqrt(0.01 * 16.5 / 180)
    0.030277
    """
    return _projection_bound(1.0, 1, sigma, k, width, universe_size, radius)


def ntz_projection_error(sigma: float, k: int, *, width: float | None = None, universe_size: int | None = None,
                         radius: float | None = None) -> float:
    """Bound the projection mechanism's average error by the weaker ``sqrt(2 sigma w(C) / k)``.

    Parameters
    ----------
    sigma, k, width, universe_size, radius
        As for :func:`projection_error`, ``width`` being ``w(C) = E max_j |<c_j, G>|``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.ntz_projection_error(0.01, 180, width=20.0), 6)  # sqrt(2 * 0.01 * 20 / 180)
    0.04714
    """
    return _projection_bound(2.0, 2, sigma, k, width, universe_size, radius)


def min_n(error: Callable[..., float], alpha: float, *, sigma_times_n: float | None = None,
          **arguments: Any) -> int:
    """Return the smallest ``n >= 1`` at which a bound non-increasing in ``n`` is at most ``alpha``.

    The bound is ``error(sigma_times_n / n, **arguments)`` given ``sigma_times_n``, else ``error(n, **arguments)``.

    Parameters
    ----------
    error, alpha, sigma_times_n
        The bound; the target error ``> 0``; ``n · sigma(n)``.
    **arguments
        The bound's other arguments, by name.

    Returns
    -------
    int

    Examples
    --------
    >>> pm.analysis.min_n(pm.analysis.gaussian_mechanism_error, 0.013, sigma_times_n=12.5, k=30)
    962
    """
    if not callable(error):
        raise TypeError(f"error: expected a callable bound, got {error!r}")
    alpha = check_positive_number("alpha", alpha)
    if sigma_times_n is None:
        def error_at(n: int) -> float:
            return error(n, **arguments)
    else:
        sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)

        def error_at(n: int) -> float:
            return error(sigma_times_n / n, **arguments)

    low, high = 0, 1  # error_at(low) > alpha (or low = 0), error_at(high) <= alpha
    while error_at(high) > alpha:
        if high >= _LARGEST_N:
            raise ValueError(f"alpha: {alpha:g} is too small: the data size it needs overflows a float")
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if error_at(middle) <= alpha:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class MinimumSize:
    """The smallest data size ``n`` that meets a target error, and the bound that certifies it.

    Parameters
    ----------
    n, bound
        The size, and which bound: :func:`projection_error` or :func:`gaussian_mechanism_error`.

    Examples
    --------
    >>> pm.analysis.MinimumSize(23, "projection").n
    23
    """

    n: int
    bound: Literal["projection", "gaussian"]


def projection_min_n(alpha: float, *, sigma_times_n: float, k: int, width: float | None = None,
                     universe_size: int | None = None, radius: float | None = None,
                     measure: Literal["rms", "mean"] = "rms") -> MinimumSize:
    """Return the least ``n`` at which :func:`projection_error` or the Gaussian error (wins ties) is at most ``alpha``.

    Parameters
    ----------
    alpha, sigma_times_n, k, width, universe_size, radius, measure
        As for :func:`min_n` (``sigma_times_n`` from :func:`noise_constant`) and the bounds.

    Returns
    -------
    MinimumSize

    Examples
    --------
    >>> pm.analysis.projection_min_n(0.05, sigma_times_n=10.0, k=180, width=16.5)  # ceil(10 / 0.05)
    MinimumSize(n=200, bound='gaussian')
    """
    sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)
    check_measure(measure)
    projection = min_n(projection_error, alpha, sigma_times_n=sigma_times_n, k=k, width=width,
                       universe_size=universe_size, radius=radius)
    gaussian = min_n(gaussian_mechanism_error, alpha, sigma_times_n=sigma_times_n, k=k, measure=measure)
    if projection < gaussian:
        return MinimumSize(projection, "projection")
    return MinimumSize(gaussian, "gaussian")
