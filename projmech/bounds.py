"""Error bounds of the Gaussian and projection mechanisms, and the data size each one needs.

Every function takes plain numbers, so a bound can be evaluated with an estimated width
(:func:`projmech.geometry.gaussian_width`) or a worst-case one over a finite universe (the
``universe_size=`` keyword, or :func:`projmech.geometry.gaussian_width_bound`), and one generic
search, :func:`min_n`, inverts any of them: the smallest data size ``n`` for a target error
``alpha``. The inequalities are the explicit ones of the proofs in the seeds, not their
``≪`` / ``O(·)`` summaries.

Error measure
-------------
The bounds bound the seed's *average error* (seed 000, Definition 3; seed 001, eq. 5),
``alpha = sqrt(E (1/k) ||M(X) - Q(X)||_2^2)``, the root of the expected mean squared error over
the ``k`` queries. By Jensen's inequality this also bounds ``E[(1/√k) ||M(X) - Q(X)||_2]``, the
mean of the per-release RMSE that :func:`projmech.evaluation.evaluate` reports (``rmse_mean``)
and the quantity on the left of seed 001, eq. (51). For the Gaussian mechanism both are known
exactly; :func:`gaussian_mechanism_error` gives either (``measure``).

Noise and data size
-------------------
The bounds take the noise's standard deviation ``sigma`` (e.g.
:meth:`projmech.mechanisms.GaussianMechanism.noise_scale`). The inverse needs ``sigma`` as a
function of ``n``: it is calibrated to the l2 sensitivity ``(2/n) ||F||_{1->2}`` (seed 001,
eq. 16; ``(1/n) ||F||_{1->2}`` for add/remove neighbours), and for fixed privacy parameters every
calibration of :func:`projmech.privacy.gaussian_sigma` is proportional to the sensitivity (for
zCDP and the classical bound by formula; for the analytic (epsilon, delta) calibration because
the privacy profile depends on ``sigma`` and the sensitivity only through their ratio, Balle &
Wang 2018, Theorem 8). So ``sigma(n) = sigma_times_n / n`` with the constant
``sigma_times_n = n sigma(n)`` of :func:`noise_constant`, and
``min_n(bound, alpha, sigma_times_n=..., k=..., ...)`` returns the smallest integer ``n >= 1`` at
which the bound, evaluated at ``sigma_times_n / n``, is at most ``alpha``.

The bounds
----------
=====================================================  ==========================================
:func:`gaussian_mechanism_error`                       ``alpha = sigma`` exactly (``"rms"``), or
                                                       ``E[(1/√k)||Z||] = sigma c_k / √k``
                                                       (``measure="mean"``)
:func:`projection_error` ``(width=l*)``                seed 000, Theorem 8 (proof, §3):
                                                       ``E (1/k)||Ŷ - y||² <= sigma l*(K_Q) / k``
:func:`projection_error` ``(universe_size=|X|)``       the same with ``l*(K_Q) <= R √(2 ln |X|)``,
                                                       ``R = √k`` by default (seed 000,
                                                       Theorem 4 and its proof)
:func:`ntz_projection_error` ``(width=w_±)``           seed 001, Theorem 3.1 (proof, eqs. 45–51):
                                                       ``E (1/k)||ã - a||² <= 2 sigma w_±(C) / k``
:func:`ntz_projection_error` ``(universe_size=m)``     the same with ``w_±(C) <= R √(2 ln (2m))``
=====================================================  ==========================================

Each returns the bound on ``alpha`` (the square root of the mean-squared bound), and
:func:`min_n` is the inverse of each. Seed 001's Theorem 3.1 and seed 000's Theorem 8 analyse the
same mechanism; Theorem 8's inequality is the sharper (``l*(K_Q) <= w_±(C)``, and no factor 2),
and Theorem 3.1's is kept as the seed states it. Neither takes into account that projection never
increases the error (seed 001, eq. 43), so ``min(sigma, bound)`` bounds ``alpha`` as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from .evaluation import gaussian_expected_rmse
from .geometry import finite_set_width_bound
from .privacy import ApproxDP, Neighbouring, ZCDP, gaussian_sigma
from .validation import check_nonnegative_number, check_positive_int, check_positive_number

__all__ = [
    "MEASURES",
    "check_measure",
    "noise_constant",
    "gaussian_mechanism_error",
    "projection_error",
    "ntz_projection_error",
    "min_n",
]

#: Error measures of :func:`gaussian_mechanism_error`: ``"rms"`` is
#: ``sqrt(E (1/k) ||error||²)`` (seed 000, Definition 3), ``"mean"`` is ``E (1/√k) ||error||``.
MEASURES = ("rms", "mean")

#: Where :func:`min_n` gives up: the largest power of two that is a float. Beyond it
#: ``sigma_times_n / n`` cannot be computed (and no data set is that large).
_LARGEST_N = 2**1023


def check_measure(measure: Any) -> str:
    """``measure`` if it is one of :data:`MEASURES`, else a ValueError naming it."""
    if measure not in MEASURES:
        raise ValueError(f"measure: expected one of {MEASURES}, got {measure!r}")
    return measure


def _width(k: int, width: Any, universe_size: Any, radius: Any, points_per_element: int) -> float:
    """The width a bound uses: ``width`` as given, or, with ``universe_size``, the finite-class
    bound ``R √(2 ln |S|)`` (:func:`finite_set_width_bound`) for ``|S| = points_per_element *
    universe_size`` points of norm at most ``R`` (``radius``, default ``√k``: the norm of a point of
    ``[0, 1]^k`` or ``[-1, 1]^k``; seed 000, proof of Theorem 4, fact 1; seed 001, Theorem 3.1's
    hypothesis). 1 point per element for ``K_Q``, 2 (``±c_j``) for the symmetric width of
    Theorem 3.1. Exactly one of ``width`` and ``universe_size`` is given; ``radius`` goes with the
    latter only."""
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


def noise_constant(
    privacy: ZCDP | ApproxDP,
    column_norm: float,
    *,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    calibration: Literal["analytic", "classical"] = "analytic",
    nonnegative: bool = False,
    discrete: bool = False,
) -> float:
    """``n · sigma(n)``, the same for every public size ``n``: the Gaussian mechanism's noise on counts.

    The mechanisms add noise to counts, calibrated to their sensitivity
    (:meth:`projmech.privacy.Neighbouring.count_sensitivity`: ``sqrt(2) ||F||_{1->2}`` under
    replace-one for a workload without negative entries, ``2 ||F||_{1->2}`` otherwise,
    ``||F||_{1->2}`` under add/remove), and divide by the public size ``n``, so
    ``sigma(n) = noise_constant(...) / n`` exactly as
    :meth:`projmech.mechanisms.GaussianMechanism.noise_scale` computes it; this is the
    ``sigma_times_n`` that :func:`min_n` takes.

    Parameters
    ----------
    privacy : ZCDP or ApproxDP
    column_norm : float
        ``||F||_{1->2}``, the largest column norm of the workload (:meth:`Workload.sensitivity`).
    neighbouring : {"replace-one", "add-remove"}
    calibration : {"analytic", "classical"}
        As for :func:`projmech.privacy.gaussian_sigma`.
    nonnegative : bool
        The workload has no negative entry (:attr:`Workload.is_nonnegative`).
    discrete : bool
        The discrete Gaussian (the mechanisms' default on integer counts, see
        :mod:`projmech.noise`).

    Returns
    -------
    float
    """
    column_norm = check_positive_number("column_norm", column_norm)
    sensitivity = Neighbouring.parse(neighbouring).count_sensitivity(column_norm, 2, nonnegative=nonnegative)
    return gaussian_sigma(sensitivity, privacy, method=calibration, discrete=discrete)


def gaussian_mechanism_error(sigma: float, k: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
    """The error of the Gaussian mechanism ``F h + Z``, ``Z ~ N(0, sigma² I_k)``: exact, not a bound.

    - ``measure="rms"``: the average error of seed 000, Definition 3,
      ``sqrt(E (1/k) ||Z||²) = sigma``, the measure every other function here bounds;
    - ``measure="mean"``: ``E[(1/√k) ||Z||] = sigma c_k / √k``
      (:func:`projmech.evaluation.gaussian_expected_rmse`), the left side of seed 001, eq. (17),
      and what :func:`projmech.evaluation.evaluate` averages; at most ``sigma`` by Jensen.

    Its inverse, ``min_n(gaussian_mechanism_error, alpha, sigma_times_n=..., k=...)``, is
    ``n >= sigma_times_n / alpha`` (``"rms"``) or ``n >= sigma_times_n c_k / (√k alpha)``
    (``"mean"``). (Seed 000, §1 states ``n ≫ √(k log k) √(log 1/δ) / (α ε)`` for the worst
    query's error; the average error needs no ``√(log k)``.)

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``>= 0``.
    k : int
        The number of queries.
    measure : {"rms", "mean"}

    Returns
    -------
    float
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    if check_measure(measure) == "rms":
        return sigma
    return gaussian_expected_rmse(sigma, k)


def projection_error(sigma: float, k: int, *, width: float | None = None, universe_size: int | None = None,
                     radius: float | None = None) -> float:
    """Seed 000, Theorem 8: the projection mechanism's average error is at most ``√(sigma l*(K) / k)``.

    The proof (seed 000, §3) shows, for ``Ŷ`` the projection of ``Ỹ = y + Z``, ``Z = sigma G``,
    onto a convex ``K`` containing the true answers ``y``: ``||Ŷ - y||² <= <Ŷ - y, Z>`` (the angle at
    ``Ŷ`` is obtuse), and then, since ``E <y, Z> = 0`` and ``<Ŷ, G> <= h_K(G)``,

        ``E (1/k) ||Ŷ - y||² <= (1/k) E <Ŷ, Z> = (sigma/k) E <Ŷ, G> <= sigma l*(K) / k``.

    (The seed writes the factor ``sigma / k`` as ``1 / (√k n √ρ)``, with its ``sigma = √k / (n √ρ)``;
    the argument holds for any ``sigma``.) The width is that of ``K`` itself, not of ``K - K``, and
    ``K`` may be any convex body containing ``K_Q`` onto which one projects (e.g. the relaxation
    ``L``), with ``l*(L)``. Returned: the square root, the bound on the average error
    (Definition 3). In mean-width form ``l*(K) = c_k M*(K)``
    (:func:`projmech.geometry.gaussian_width_from_mean`).

    **Worst case** (``universe_size=`` instead of ``width=``): seed 000, Theorem 4, explicit. Its
    proof bounds ``l*(K_Q) <= (1/λ) ln |X| + λ R² / 2`` for every ``λ > 0``
    (:func:`projmech.geometry.finite_set_width_bound`), at best ``R √(2 ln |X|)``, where ``R``
    bounds the norms of the columns; for queries with values in ``[0, 1]``, ``R = √k`` and
    ``l*(K_Q) <= √(2 k ln |X|)``. Hence

        ``E (1/k) ||Ŷ - y||² <= sigma R √(2 ln |X|) / k``  (``<= sigma √(2 ln |X| / k)`` for ``R = √k``).

    Inverse: ``min_n(projection_error, alpha, sigma_times_n=..., k=..., width=...)`` is the
    smallest ``n`` with ``n >= sigma_times_n l*(K) / (k alpha²)``, the explicit form of Theorem 8's
    ``n ≫ l*(K_Q) √(log 1/δ) / (√k α² ε)`` (there ``sigma_times_n = √(k/ρ)``); with
    ``universe_size=`` it is Theorem 4's ``n ≫ √(log |X|) √(log 1/δ) / (α² ε)`` with its constant.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation per query, ``>= 0``.
    k : int
        The number of queries (the dimension of ``K``).
    width : float, optional
        ``l*(K) >= 0``: an estimate (:func:`projmech.geometry.gaussian_width`) or an upper bound
        (:func:`projmech.geometry.gaussian_width_bound`). Give this or ``universe_size``.
    universe_size : int, optional
        The worst case instead: ``|X|``, or the number ``m`` of distinct columns of ``F``.
    radius : float, optional
        With ``universe_size``: ``R >= ||F||_{1->2}``; default ``√k``.
        :func:`projmech.geometry.gaussian_width_bound` is this width with ``R = ||F||_{1->2}``.

    Returns
    -------
    float

    Examples
    --------
    >>> from projmech.bounds import projection_error, min_n
    >>> round(projection_error(0.01, 180, width=16.5), 6)           # sqrt(0.01 * 16.5 / 180)
    0.030277
    >>> round(projection_error(0.7, 12, universe_size=4096), 6)     # sqrt(0.7 sqrt(2 ln 4096 / 12))
    0.907847
    >>> min_n(projection_error, 0.05, sigma_times_n=10.0, k=180, width=16.5)  # 10 * 16.5 / (180 * 0.05**2)
    367
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    width = _width(k, width, universe_size, radius, 1)
    return math.sqrt(sigma * width / k)


def ntz_projection_error(sigma: float, k: int, *, width: float | None = None, universe_size: int | None = None,
                         radius: float | None = None) -> float:
    """Seed 001, Theorem 3.1 ([NTZ13]), explicit: average error at most ``√(2 sigma w_±(C) / k)``.

    The proof projects ``â = a + Z``, ``Z ~ N(0, sigma² I_k)``, onto ``C = conv(columns c_j of F)``
    and shows, for ``ã = Π_C(â)``, eqs. (45)–(50),

        ``||ã - a||² <= <ã - a, â - a> <= |<ã, Z>| + |<a, Z>| <= 2 max_{v in C} |<v, Z>|``,

    so, with ``max_{v in C} |<v, Z>| = sigma max_j |<c_j, G>|`` (eq. 53, ``G`` standard),

        ``E (1/k) ||ã - a||² <= 2 sigma w_±(C) / k``,  ``w_±(C) = E max_j |<c_j, G>|``;

    eq. (51) then takes the square root (Jensen) for ``E (1/√k) ||ã - a||``. The first line
    already bounds the average error of seed 000, Definition 3, which is what is returned. The
    theorem's hypothesis (entries of F in ``[-1, 1]``) is used only in the worst-case bound on
    ``w_±``.

    ``width`` here is ``w_±(C)``, the Gaussian width of the symmetric hull ``conv(±c_j)``; it is at
    least ``l*(C)`` (so :func:`projection_error` is always the smaller bound) and, unlike ``l*``,
    depends on where ``C`` lies relative to the origin. Estimate it with
    ``gaussian_width(lambda G: np.maximum(support_function(F, G), support_function(F, -G)), k, s, rng)``
    (``max_j |<c_j, g>| = max(h_C(g), h_C(-g))``).

    **Worst case** (``universe_size=`` instead of ``width=``): eq. (55) bounds
    ``E max_j |<c_j, Z>|`` by ``O(sigma k^{1/2} log^{1/2} m)`` ("tails of Gaussian random variables
    and a union bound"). The explicit constant used here is the finite-class bound of seed 000
    (proof of Theorem 4; :func:`projmech.geometry.finite_set_width_bound`) applied to the ``2m``
    points ``±c_j``, each of norm at most ``R``: ``w_±(C) <= R √(2 ln (2m))``. So

        ``E (1/k) ||ã - a||² <= 2 sigma R √(2 ln (2m)) / k``.

    Under the theorem's hypothesis (entries in ``[-1, 1]``, so ``R <= √k``) and with
    ``sigma = c_{ε,δ} (2/n) √k`` this is ``4 √2 c_{ε,δ} √(ln 2m) / n``, and its root is the stated
    ``O((c_{ε,δ} log^{1/2} m / n)^{1/2})``. (Seed 001's eq. (44) writes ``sigma² = c² k / n²``,
    without the factor 2 of the sensitivity, eq. (4); ``sigma`` here is the actual noise.)

    Inverse: ``min_n(ntz_projection_error, alpha, sigma_times_n=..., k=..., width=...)``, the
    smallest ``n >= 2 sigma_times_n w_±(C) / (k alpha²)``.

    Parameters
    ----------
    sigma : float
        ``>= 0``.
    k : int
    width : float, optional
        ``w_±(C) = E max_j |<c_j, G>| >= 0``. Give this or ``universe_size``.
    universe_size : int, optional
        The worst case instead: ``m``, the number of columns of ``F``.
    radius : float, optional
        With ``universe_size``: ``R >= ||F||_{1->2}``; default ``√k``.

    Returns
    -------
    float
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    width = _width(k, width, universe_size, radius, 2)
    return math.sqrt(2.0 * sigma * width / k)


def min_n(error: Callable[..., float], alpha: float, *, sigma_times_n: float | None = None,
          **arguments: Any) -> int:
    """The smallest integer ``n >= 1`` at which a bound that decreases in ``n`` is at most ``alpha``.

    With ``sigma_times_n``, ``error`` is a bound of this module, which takes the noise ``sigma``
    first, and is evaluated as ``error(sigma_times_n / n, **arguments)``: the noise of a Gaussian
    calibration at public size ``n`` (:func:`noise_constant`). Without it, ``error(n, **arguments)``
    is a bound stated in ``n`` itself (e.g.
    :func:`projmech.multiplicative_weights.offline_pmw_error_bound`).

    The search doubles ``n`` until the bound is met and then bisects, so the answer is exactly
    consistent with the forward bound as computed in floating point: ``error`` at ``n`` is at most
    ``alpha`` and at ``n - 1`` above it. It needs only that ``error`` does not increase with ``n``,
    which holds for every bound here (each is increasing in ``sigma``); it takes about
    ``2 log2(n)`` evaluations.

    Parameters
    ----------
    error : callable
        :func:`gaussian_mechanism_error`, :func:`projection_error`, :func:`ntz_projection_error`,
        or any bound non-increasing in ``n``.
    alpha : float
        Target error, ``> 0``.
    sigma_times_n : float, optional
        ``n sigma(n) >= 0``, from :func:`noise_constant` (or ``n * mechanism.noise_scale(n)``).
    **arguments
        The bound's other arguments, by name: ``k`` and its options (``measure``, ``width``,
        ``universe_size``, ``radius``); they are checked by the bound itself.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``alpha`` is so small that the data size it needs overflows a float (``n > 2^1023``),
        or an argument is invalid.

    Examples
    --------
    >>> from projmech.bounds import gaussian_mechanism_error, min_n
    >>> min_n(gaussian_mechanism_error, 0.013, sigma_times_n=12.5, k=30)  # ceil(12.5 / 0.013)
    962
    >>> min_n(lambda n: 1 / n, 0.01)  # a bound stated in n
    100
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
