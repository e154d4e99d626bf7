"""Error bounds of the Gaussian and projection mechanisms, and the data size each one needs.

Every function takes plain numbers, so a bound can be evaluated with an estimated width
(:func:`projmech.geometry.gaussian_width`) or a worst-case one
(:func:`projmech.geometry.gaussian_width_bound`), and each bound comes with the inverse that
gives the smallest data size ``n`` for a target error ``alpha``. The inequalities are the explicit
ones of the proofs in the seeds, not their ``≪`` / ``O(·)`` summaries.

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
The forward bounds take the noise's standard deviation ``sigma`` (e.g.
:meth:`projmech.mechanisms.GaussianMechanism.noise_scale`). The inverses need ``sigma`` as a
function of ``n``: it is calibrated to the l2 sensitivity ``(2/n) ||F||_{1->2}`` (seed 001,
eq. 16; ``(1/n) ||F||_{1->2}`` for add/remove neighbours), and for fixed privacy parameters every
calibration of :func:`projmech.privacy.gaussian_sigma` is proportional to the sensitivity (for
zCDP and the classical bound by formula; for the analytic (epsilon, delta) calibration because
the privacy profile depends on ``sigma`` and the sensitivity only through their ratio, Balle &
Wang 2018, Theorem 8). So ``sigma(n) = sigma_times_n / n`` with the constant
``sigma_times_n = n sigma(n)`` of :func:`noise_constant`, and each inverse returns the smallest
integer ``n >= 1`` at which its forward bound, evaluated at ``sigma_times_n / n``, is at most
``alpha``.

The bounds
----------
========================================  =====================================================
:func:`gaussian_mechanism_error`          ``alpha = sigma`` exactly (``measure="rms"``), or
                                          ``E[(1/√k)||Z||] = sigma c_k / √k`` (``"mean"``)
:func:`projection_error`                  seed 000, Theorem 8 (proof, §3):
                                          ``E (1/k)||Ŷ - y||² <= sigma l*(K_Q) / k``
:func:`projection_error_worst_case`       the same with ``l*(K_Q) <= R √(2 ln |X|)``, ``R = √k``
                                          by default (seed 000, Theorem 4 and its proof)
:func:`ntz_projection_error`              seed 001, Theorem 3.1 (proof, eqs. 45–51):
                                          ``E (1/k)||ã - a||² <= 2 sigma w_±(C) / k``
:func:`ntz_projection_error_worst_case`   the same with ``w_±(C) <= R √(2 ln (2m))``
========================================  =====================================================

Each ``*_error`` returns the bound on ``alpha`` (the square root of the mean-squared bound); each
``*_min_n`` is its inverse. Seed 001's Theorem 3.1 and seed 000's Theorem 8 analyse the same
mechanism; Theorem 8's inequality is the sharper (``l*(K_Q) <= w_±(C)``, and no factor 2), and
Theorem 3.1's is kept as the seed states it. Neither takes into account that projection never
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
    "noise_constant",
    "gaussian_mechanism_error",
    "gaussian_mechanism_min_n",
    "projection_error",
    "projection_min_n",
    "projection_error_worst_case",
    "projection_worst_case_min_n",
    "ntz_projection_error",
    "ntz_projection_min_n",
    "ntz_projection_error_worst_case",
    "ntz_projection_worst_case_min_n",
]

#: Error measures of :func:`gaussian_mechanism_error`: ``"rms"`` is
#: ``sqrt(E (1/k) ||error||²)`` (seed 000, Definition 3), ``"mean"`` is ``E (1/√k) ||error||``.
MEASURES = ("rms", "mean")

#: Steps by which :func:`_smallest_n` may move from the closed-form solution: only rounding can
#: separate them, so one step is the most ever needed; beyond ``2^53`` consecutive integers are no
#: longer distinct as floats and more steps would change nothing.
_ROUNDING_STEPS = 4


def _check_measure(measure: Any) -> str:
    if measure not in MEASURES:
        raise ValueError(f"measure: expected one of {MEASURES}, got {measure!r}")
    return measure


def _universe_radius(k: int, radius: float | None) -> float:
    """``R``, defaulting to ``√k``: the norm of a point of ``[0, 1]^k`` or ``[-1, 1]^k`` (seed 000,
    proof of Theorem 4, fact 1; seed 001, Theorem 3.1's hypothesis)."""
    return math.sqrt(k) if radius is None else check_nonnegative_number("radius", radius)


def _finite_class_width(k: Any, universe_size: Any, radius: float | None, points_per_element: int) -> float:
    """The finite-class width bound ``R √(2 ln |S|)`` (:func:`finite_set_width_bound`) for
    ``|S| = points_per_element * universe_size`` points of norm at most ``R`` (default ``√k``):
    1 point per element for ``K_Q``, 2 (``±c_j``) for the symmetric width of Theorem 3.1."""
    k = check_positive_int("k", k)
    universe_size = check_positive_int("universe_size", universe_size)
    return finite_set_width_bound(points_per_element * universe_size, _universe_radius(k, radius))


def _smallest_n(error_at: Callable[[int], float], alpha: float, estimate: float) -> int:
    """The smallest integer ``n >= 1`` with ``error_at(n) <= alpha``, for a non-increasing ``error_at``.

    ``estimate`` is the real solution of ``error_at(n) = alpha`` from the closed form (computed by
    divisions, which give ``inf`` rather than raise when ``alpha`` is tiny); its ceiling is the
    answer but for rounding, which the final steps correct, so that the result is exactly
    consistent with the forward bound.
    """
    if not math.isfinite(estimate):
        raise ValueError(f"alpha: {alpha:g} is too small: the data size it needs overflows a float")
    n = max(1, math.ceil(estimate))
    for _ in range(_ROUNDING_STEPS):
        if error_at(n) <= alpha:
            break
        n += 1
    for _ in range(_ROUNDING_STEPS):
        if n == 1 or error_at(n - 1) > alpha:
            break
        n -= 1
    return n


def noise_constant(
    privacy: ZCDP | ApproxDP,
    column_norm: float,
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
    ``sigma_times_n`` the ``*_min_n`` functions take.

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


def gaussian_mechanism_error(sigma: float, k: int, measure: Literal["rms", "mean"] = "rms") -> float:
    """The error of the Gaussian mechanism ``F h + Z``, ``Z ~ N(0, sigma² I_k)``: exact, not a bound.

    - ``measure="rms"``: the average error of seed 000, Definition 3,
      ``sqrt(E (1/k) ||Z||²) = sigma``, the measure every other function here bounds;
    - ``measure="mean"``: ``E[(1/√k) ||Z||] = sigma c_k / √k``
      (:func:`projmech.evaluation.gaussian_expected_rmse`), the left side of seed 001, eq. (17),
      and what :func:`projmech.evaluation.evaluate` averages; at most ``sigma`` by Jensen.

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
    if _check_measure(measure) == "rms":
        return sigma
    return gaussian_expected_rmse(sigma, k)


def gaussian_mechanism_min_n(alpha: float, sigma_times_n: float, k: int,
                             measure: Literal["rms", "mean"] = "rms") -> int:
    """The smallest ``n`` at which the Gaussian mechanism's error is at most ``alpha``.

    The inverse of :func:`gaussian_mechanism_error` with ``sigma = sigma_times_n / n``:
    ``n >= sigma_times_n / alpha`` (``"rms"``) or ``n >= sigma_times_n c_k / (√k alpha)``
    (``"mean"``). (Seed 000, §1 states ``n ≫ √(k log k) √(log 1/δ) / (α ε)`` for the worst
    query's error; the average error needs no ``√(log k)``.)

    Parameters
    ----------
    alpha : float
        Target error, ``> 0``.
    sigma_times_n : float
        ``n sigma(n)``, from :func:`noise_constant` (or ``n * mechanism.noise_scale(n)``).
    k : int
    measure : {"rms", "mean"}

    Returns
    -------
    int
    """
    alpha = check_positive_number("alpha", alpha)
    sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)
    k = check_positive_int("k", k)
    measure = _check_measure(measure)
    per_unit_sigma = gaussian_mechanism_error(1.0, k, measure)  # the error is linear in sigma
    return _smallest_n(lambda n: gaussian_mechanism_error(sigma_times_n / n, k, measure), alpha,
                       sigma_times_n * per_unit_sigma / alpha)


def projection_error(sigma: float, k: int, width: float) -> float:
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

    Parameters
    ----------
    sigma : float
        The noise's standard deviation per query, ``>= 0``.
    k : int
        The number of queries (the dimension of ``K``).
    width : float
        ``l*(K) >= 0``: an estimate (:func:`projmech.geometry.gaussian_width`) or an upper bound
        (:func:`projmech.geometry.gaussian_width_bound`, or see
        :func:`projection_error_worst_case`).

    Returns
    -------
    float
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    width = check_nonnegative_number("width", width)
    return math.sqrt(sigma * width / k)


def projection_min_n(alpha: float, sigma_times_n: float, k: int, width: float) -> int:
    """The smallest ``n`` at which :func:`projection_error` is at most ``alpha``.

    ``sigma_times_n l*(K) / (n k) <= alpha²``, i.e. ``n >= sigma_times_n l*(K) / (k alpha²)``: the
    explicit form of seed 000, Theorem 8's ``n ≫ l*(K_Q) √(log 1/δ) / (√k α² ε)`` (there
    ``sigma_times_n = √(k/ρ)``).

    Parameters
    ----------
    alpha : float
        Target average error, ``> 0``.
    sigma_times_n : float
        ``n sigma(n)``, from :func:`noise_constant`.
    k : int
    width : float
        ``l*(K) >= 0``.

    Returns
    -------
    int
    """
    alpha = check_positive_number("alpha", alpha)
    sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)
    k = check_positive_int("k", k)
    width = check_nonnegative_number("width", width)
    return _smallest_n(lambda n: projection_error(sigma_times_n / n, k, width), alpha,
                       sigma_times_n * width / k / alpha / alpha)


def projection_error_worst_case(sigma: float, k: int, universe_size: int, radius: float | None = None) -> float:
    """Seed 000, Theorem 4 (explicit): :func:`projection_error` with ``l*(K_Q) <= R √(2 ln |X|)``.

    The proof of Theorem 4 bounds ``l*(K_Q) <= (1/λ) ln |X| + λ R² / 2`` for every ``λ > 0``
    (:func:`projmech.geometry.finite_set_width_bound`), at best ``R √(2 ln |X|)``, where ``R``
    bounds the norms of the columns; for queries with values in ``[0, 1]``, ``R = √k`` and
    ``l*(K_Q) <= √(2 k ln |X|)``. Hence

        ``E (1/k) ||Ŷ - y||² <= sigma R √(2 ln |X|) / k``  (``<= sigma √(2 ln |X| / k)`` for ``R = √k``).

    Parameters
    ----------
    sigma : float
        ``>= 0``.
    k : int
    universe_size : int
        ``|X|``, or the number ``m`` of distinct columns of ``F``.
    radius : float, optional
        ``R >= ||F||_{1->2}``; default ``√k``. :func:`projmech.geometry.gaussian_width_bound` is
        this width with ``R = ||F||_{1->2}``.

    Returns
    -------
    float
    """
    return projection_error(sigma, k, _finite_class_width(k, universe_size, radius, 1))


def projection_worst_case_min_n(alpha: float, sigma_times_n: float, k: int, universe_size: int,
                                radius: float | None = None) -> int:
    """The smallest ``n`` at which :func:`projection_error_worst_case` is at most ``alpha``.

    ``n >= sigma_times_n R √(2 ln |X|) / (k alpha²)``: seed 000, Theorem 4's
    ``n ≫ √(log |X|) √(log 1/δ) / (α² ε)`` with its constant (``R = √k``, ``sigma_times_n = √(k/ρ)``).

    Parameters
    ----------
    alpha : float
    sigma_times_n : float
        ``n sigma(n)``, from :func:`noise_constant`.
    k : int
    universe_size : int
    radius : float, optional
        Default ``√k``.

    Returns
    -------
    int
    """
    return projection_min_n(alpha, sigma_times_n, k, _finite_class_width(k, universe_size, radius, 1))


def ntz_projection_error(sigma: float, k: int, symmetric_width: float) -> float:
    """Seed 001, Theorem 3.1 ([NTZ13]), explicit: average error at most ``√(2 sigma w_±(C) / k)``.

    The proof projects ``â = a + Z``, ``Z ~ N(0, sigma² I_k)``, onto ``C = conv(columns c_j of F)``
    and shows, for ``ã = Π_C(â)``, eqs. (45)–(50),

        ``||ã - a||² <= <ã - a, â - a> <= |<ã, Z>| + |<a, Z>| <= 2 max_{v in C} |<v, Z>|``,

    so, with ``max_{v in C} |<v, Z>| = sigma max_j |<c_j, G>|`` (eq. 53, ``G`` standard),

        ``E (1/k) ||ã - a||² <= 2 sigma w_±(C) / k``,  ``w_±(C) = E max_j |<c_j, G>|``;

    eq. (51) then takes the square root (Jensen) for ``E (1/√k) ||ã - a||``. The first line
    already bounds the average error of seed 000, Definition 3, which is what is returned. The
    theorem's hypothesis (entries of F in ``[-1, 1]``) is used only in the worst-case bound on
    ``w_±`` (:func:`ntz_projection_error_worst_case`).

    ``w_±(C)`` is the Gaussian width of the symmetric hull ``conv(±c_j)``; it is at least
    ``l*(C)`` (so :func:`projection_error` is always the smaller bound) and, unlike ``l*``,
    depends on where ``C`` lies relative to the origin. Estimate it with
    ``gaussian_width(lambda G: np.maximum(support_function(F, G), support_function(F, -G)), k, s, rng)``
    (``max_j |<c_j, g>| = max(h_C(g), h_C(-g))``).

    Parameters
    ----------
    sigma : float
        ``>= 0``.
    k : int
    symmetric_width : float
        ``w_±(C) = E max_j |<c_j, G>| >= 0``.

    Returns
    -------
    float
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    symmetric_width = check_nonnegative_number("symmetric_width", symmetric_width)
    return math.sqrt(2.0 * sigma * symmetric_width / k)


def ntz_projection_min_n(alpha: float, sigma_times_n: float, k: int, symmetric_width: float) -> int:
    """The smallest ``n`` at which :func:`ntz_projection_error` is at most ``alpha``:
    ``n >= 2 sigma_times_n w_±(C) / (k alpha²)``.

    Parameters
    ----------
    alpha : float
    sigma_times_n : float
        ``n sigma(n)``, from :func:`noise_constant`.
    k : int
    symmetric_width : float

    Returns
    -------
    int
    """
    alpha = check_positive_number("alpha", alpha)
    sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)
    k = check_positive_int("k", k)
    symmetric_width = check_nonnegative_number("symmetric_width", symmetric_width)
    return _smallest_n(lambda n: ntz_projection_error(sigma_times_n / n, k, symmetric_width), alpha,
                       2.0 * sigma_times_n * symmetric_width / k / alpha / alpha)


def ntz_projection_error_worst_case(sigma: float, k: int, universe_size: int,
                                    radius: float | None = None) -> float:
    """Seed 001, Theorem 3.1 with eq. (55) made explicit: ``w_±(C) <= R √(2 ln (2m))``.

    Eq. (55) bounds ``E max_j |<c_j, Z>|`` by ``O(sigma k^{1/2} log^{1/2} m)`` ("tails of Gaussian
    random variables and a union bound"). The explicit constant used here is the finite-class bound
    of seed 000 (proof of Theorem 4; :func:`projmech.geometry.finite_set_width_bound`) applied to
    the ``2m`` points ``±c_j``, each of norm at most ``R``: ``w_±(C) <= R √(2 ln (2m))``. So

        ``E (1/k) ||ã - a||² <= 2 sigma R √(2 ln (2m)) / k``.

    Under the theorem's hypothesis (entries in ``[-1, 1]``, so ``R <= √k``) and with
    ``sigma = c_{ε,δ} (2/n) √k`` this is ``4 √2 c_{ε,δ} √(ln 2m) / n``, and its root is the stated
    ``O((c_{ε,δ} log^{1/2} m / n)^{1/2})``. (Seed 001's eq. (44) writes ``sigma² = c² k / n²``,
    without the factor 2 of the sensitivity, eq. (4); ``sigma`` here is the actual noise.)

    Parameters
    ----------
    sigma : float
    k : int
    universe_size : int
        ``m``, the number of columns of ``F``.
    radius : float, optional
        ``R >= ||F||_{1->2}``; default ``√k``.

    Returns
    -------
    float
    """
    return ntz_projection_error(sigma, k, _finite_class_width(k, universe_size, radius, 2))


def ntz_projection_worst_case_min_n(alpha: float, sigma_times_n: float, k: int, universe_size: int,
                                    radius: float | None = None) -> int:
    """The smallest ``n`` at which :func:`ntz_projection_error_worst_case` is at most ``alpha``:
    ``n >= 2 sigma_times_n R √(2 ln (2m)) / (k alpha²)``.

    Parameters
    ----------
    alpha : float
    sigma_times_n : float
        ``n sigma(n)``, from :func:`noise_constant`.
    k : int
    universe_size : int
    radius : float, optional
        Default ``√k``.

    Returns
    -------
    int
    """
    return ntz_projection_min_n(alpha, sigma_times_n, k, _finite_class_width(k, universe_size, radius, 2))
