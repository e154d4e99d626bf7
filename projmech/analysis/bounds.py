"""Error bounds of the Gaussian and projection mechanisms, and the data size each one needs.

Every function takes plain numbers, so a bound can be evaluated with an estimated width
(:func:`projmech.analysis.geometry.gaussian_width`) or a worst-case one over a finite universe (the
``universe_size=`` keyword, or :func:`projmech.analysis.geometry.gaussian_width_bound`). One generic
search, :func:`min_n`, inverts any of them: the smallest data size ``n`` for a target error
``alpha``; :func:`projection_min_n` gives the smallest ``n`` that any of the projection
mechanism's valid bounds certifies, and names the bound. The constants are explicit, not
``O(·)`` summaries. Statements, derivations and constants are in the theory page *Error bounds*
(``docs/theory/bounds.md``); the user guide's *How much data does each mechanism need?*
(``docs/guide/how_much_data.md``) shows them in use.

Error measure
-------------
Each bound bounds the *average error* ``alpha = sqrt(E (1/k) ||M(X) - Q(X)||_2^2)``, the root of
the expected mean squared error over the ``k`` queries. By Jensen's inequality it also bounds
``E[(1/√k) ||M(X) - Q(X)||_2]``, the mean of the per-release RMSE that
:func:`projmech.analysis.evaluation.evaluate` reports (``rmse_mean``).

Noise and data size
-------------------
The bounds take the noise's standard deviation ``sigma`` per answer. For fixed privacy
parameters every Gaussian calibration is proportional to the sensitivity, which is proportional
to ``1/n``, so ``sigma(n) = sigma_times_n / n`` with the constant of :func:`noise_constant`.

The bounds
----------
- :func:`gaussian_mechanism_error`: the Gaussian mechanism's error, ``sigma``, exactly.
- :func:`projection_error`: the projection mechanism's bound :cite:p:`NTZ13`,
  ``sqrt(sigma l*(K) / k)`` with ``l*(K)`` the Gaussian width of the body projected onto.
- :func:`ntz_projection_error`: the weaker form ``sqrt(2 sigma w(C) / k)`` with the width
  ``w(C)`` of the symmetric hull of the columns.
- :func:`projection_min_n`: the smaller ``n`` of the first two, since projection never increases
  the error of the Gaussian answers it starts from.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..privacy.guarantees import ZCDP, ApproxDP, Neighbouring, gaussian_sigma
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
    """Check that ``measure`` is one of :data:`MEASURES`.

    Parameters
    ----------
    measure : object
        The value to check.

    Returns
    -------
    str
        ``measure`` itself.

    Raises
    ------
    ValueError
        If ``measure`` is not ``"rms"`` or ``"mean"``; the message names ``measure``.

    Examples
    --------
    >>> from projmech.analysis.bounds import check_measure
    >>> check_measure("mean")
    'mean'
    >>> check_measure("max")
    Traceback (most recent call last):
    ...
    ValueError: measure: expected one of ('rms', 'mean'), got 'max'
    """
    if measure not in MEASURES:
        raise ValueError(f"measure: expected one of {MEASURES}, got {measure!r}")
    return measure


def _width(k: int, width: Any, universe_size: Any, radius: Any, points_per_element: int) -> float:
    """The width a bound uses: ``width`` as given, or, with ``universe_size``, the finite-set
    bound ``R √(2 ln |S|)`` (:func:`finite_set_width_bound`) for ``|S| = points_per_element *
    universe_size`` points of norm at most ``R`` (``radius``, default ``√k``: the norm of a point of
    ``[0, 1]^k`` or ``[-1, 1]^k``). One point per element for ``K_Q``, two (``±c_j``) for the
    symmetric width of :func:`ntz_projection_error`. Exactly one of ``width`` and
    ``universe_size`` is given; ``radius`` goes with the latter only."""
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
    """Return ``n · sigma(n)``, the Gaussian mechanism's noise constant, the same for every ``n``.

    The mechanisms add noise to counts, calibrated to their l2 sensitivity, and divide by the
    public size ``n``. From the column norm alone the sensitivity is at most
    ``sqrt(2) ||F||_{1->2}`` under replace-one for a workload without negative entries,
    ``2 ||F||_{1->2}`` otherwise, and exactly ``||F||_{1->2}`` under add/remove
    (:meth:`projmech.privacy.guarantees.Neighbouring.count_sensitivity`). Every calibration is proportional
    to the sensitivity, so ``sigma(n) = noise_constant(...) / n``: the ``sigma_times_n`` that
    :func:`min_n` and :func:`projection_min_n` take. Under replace-one the mechanisms use the
    exact largest distance between two columns where they can compute it, which can be smaller
    (``prefix(1024)``: ``sqrt(1023)`` against ``sqrt(2048)``), so this constant is an upper bound
    on theirs; ``n * mechanism.noise_scale(n)`` is a mechanism's own.

    Parameters
    ----------
    privacy : ZCDP or ApproxDP
        The privacy guarantee: ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)``.
    column_norm : float
        ``||F||_{1->2} > 0``, the largest column norm of the workload
        (:meth:`projmech.workloads.Workload.sensitivity`).
    neighbouring : {"replace-one", "add-remove"}
        The neighbouring relation (default replace-one).
    calibration : {"analytic", "classical"}
        As for :func:`projmech.privacy.guarantees.gaussian_sigma`.
    nonnegative : bool
        Whether the workload has no negative entry (:attr:`Workload.is_nonnegative`).
    discrete : bool
        Whether the noise is the discrete Gaussian (the mechanisms' default on integer counts,
        see :mod:`projmech.privacy.noise`).

    Returns
    -------
    float
        ``n sigma(n)``.

    Raises
    ------
    TypeError
        If ``privacy`` is neither ``ZCDP`` nor ``ApproxDP``.
    ValueError
        If ``column_norm`` is not positive and finite, or ``neighbouring`` or ``calibration`` is
        unknown.

    See Also
    --------
    projmech.privacy.guarantees.gaussian_sigma : The calibration itself.

    Notes
    -----
    Under zCDP, ``sigma = Δ / sqrt(2 rho)``; the classical ``(epsilon, delta)`` calibration is
    ``Δ sqrt(2 ln(1.25/delta)) / epsilon`` :cite:p:`DR14`; the analytic one :cite:p:`BW18`
    depends on ``Δ`` and ``sigma`` only through their ratio, so it is proportional to ``Δ`` too.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.analysis.bounds import noise_constant
    >>> noise_constant(pm.ZCDP(0.5), 1.0)  # 2 / sqrt(2 * 0.5): replace-one doubles the sensitivity
    2.0
    >>> noise_constant(pm.ZCDP(0.5), 1.0, neighbouring="add-remove")
    1.0
    >>> round(noise_constant(pm.ApproxDP(1.0, 1e-6), 1.0), 3)
    8.449
    """
    column_norm = check_positive_number("column_norm", column_norm)
    sensitivity = Neighbouring.parse(neighbouring).count_sensitivity(column_norm, 2, nonnegative=nonnegative)
    return gaussian_sigma(sensitivity, privacy, method=calibration, discrete=discrete)


def gaussian_mechanism_error(sigma: float, k: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
    """Return the Gaussian mechanism's error for noise ``N(0, sigma² I_k)``: exact, not a bound.

    With ``measure="rms"`` it is the average error ``sqrt(E (1/k) ||Z||²) = sigma``, the measure
    every other bound here bounds; with ``measure="mean"`` it is ``E[(1/√k) ||Z||] = sigma c_k / √k``
    (:func:`projmech.analysis.evaluation.gaussian_expected_rmse`, ``c_k`` of
    :func:`projmech.analysis.geometry.gaussian_norm_mean`), what :func:`projmech.analysis.evaluation.evaluate`
    averages, at most ``sigma``. Its inverse, ``min_n(gaussian_mechanism_error, alpha,
    sigma_times_n=C, k=k)``, is ``ceil(C / alpha)`` (``"rms"``).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation per answer, ``>= 0``.
    k : int
        The number of queries.
    measure : {"rms", "mean"}
        The error measure (default ``"rms"``).

    Returns
    -------
    float
        The error.

    Raises
    ------
    TypeError
        If ``sigma`` is not a real number or ``k`` not an int.
    ValueError
        If ``sigma`` is negative or not finite, ``k < 1``, or ``measure`` is unknown.

    References
    ----------
    :cite:t:`DR14`, the Gaussian mechanism.

    Examples
    --------
    >>> from projmech.analysis.bounds import gaussian_mechanism_error
    >>> gaussian_mechanism_error(0.02, 180)
    0.02
    >>> round(gaussian_mechanism_error(0.02, 180, measure="mean"), 6)  # slightly less (Jensen)
    0.019972
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    if check_measure(measure) == "rms":
        return sigma
    return gaussian_expected_rmse(sigma, k)


def projection_error(sigma: float, k: int, *, width: float | None = None, universe_size: int | None = None,
                     radius: float | None = None) -> float:
    """Bound the projection mechanism's average error by ``sqrt(sigma l*(K) / k)``.

    The projection mechanism adds ``N(0, sigma² I_k)`` noise to the true answers ``y`` and
    projects onto a convex body ``K`` that contains them (``K_Q``, or a relaxation ``L ⊇ K_Q``);
    its average error satisfies ``E (1/k) ||Ŷ - y||² <= sigma l*(K) / k`` :cite:p:`NTZ13`, with
    ``l*(K)`` the Gaussian width of ``K``. The square root of that is returned.

    With ``universe_size=|X|`` instead of ``width=``, ``l*(K_Q)`` is replaced by its worst case
    over ``|X|`` points of norm at most ``R``, ``R sqrt(2 ln |X|)``
    (:func:`projmech.analysis.geometry.finite_set_width_bound`); with ``R = √k`` (queries with values in
    ``[0, 1]``) the bound is ``(sigma sqrt(2 ln |X| / k))^(1/2)``. The inverse
    ``min_n(projection_error, alpha, sigma_times_n=C, k=k, width=w)`` is
    ``ceil(C w / (k alpha²))``; :func:`projection_min_n` also takes the Gaussian bound into
    account. The derivation is in the theory page *Error bounds* (``docs/theory/bounds.md``).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation per answer, ``>= 0``.
    k : int
        The number of queries (the dimension of ``K``).
    width : float, optional
        ``l*(K) >= 0``: an estimate (:func:`projmech.analysis.geometry.gaussian_width`) or an upper bound
        (:func:`projmech.analysis.geometry.gaussian_width_bound`). Give this or ``universe_size``.
    universe_size : int, optional
        The worst case instead: ``|X|``, or the number ``m`` of distinct columns of ``F``.
    radius : float, optional
        With ``universe_size``: ``R >= ||F||_{1->2}``; default ``√k``.
        :func:`projmech.analysis.geometry.gaussian_width_bound` is this width with ``R = ||F||_{1->2}``.

    Returns
    -------
    float
        The bound on ``sqrt(E (1/k) ||Ŷ - y||²)``.

    Raises
    ------
    TypeError
        If neither or both of ``width`` and ``universe_size`` are given, ``radius`` is given
        with ``width``, or an argument has the wrong type.
    ValueError
        If ``sigma``, ``width`` or ``radius`` is negative or not finite, or ``k`` or
        ``universe_size`` is below 1.

    See Also
    --------
    projection_min_n : The smallest ``n`` for a target error, with the Gaussian bound as well.
    projmech.mechanisms.additive.ProjectionMechanism.error_bound : This bound for a mechanism.

    References
    ----------
    :cite:t:`NTZ13`, the projection mechanism and its error in terms of the Gaussian width.

    Examples
    --------
    >>> from projmech.analysis.bounds import projection_error, min_n
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
    """Bound the projection mechanism's average error by ``sqrt(2 sigma w(C) / k)``.

    A weaker form of :func:`projection_error`, for the projection onto ``C = conv(columns c_j of
    F)``: ``E (1/k) ||ã - a||² <= 2 sigma w(C) / k`` with ``w(C) = E max_j |<c_j, G>|``, the
    Gaussian width of the symmetric hull ``conv(±c_j)``. It follows from the same argument as
    :func:`projection_error` :cite:p:`NTZ13`, bounded less tightly (absolute values and a factor
    2); since ``w(C) >= l*(C)``, :func:`projection_error` is always at least ``sqrt(2)`` times
    smaller. It is kept to compare with statements of this form.

    With ``universe_size=m`` instead of ``width=``, ``w(C)`` is replaced by its worst case over the
    ``2m`` points ``±c_j`` of norm at most ``R``, ``R sqrt(2 ln (2m))``. The derivation is in the
    theory page *Error bounds* (``docs/theory/bounds.md``).

    Parameters
    ----------
    sigma : float
        The noise's standard deviation per answer, ``>= 0``.
    k : int
        The number of queries.
    width : float, optional
        ``w(C) = E max_j |<c_j, G>| >= 0``. Give this or ``universe_size``.
    universe_size : int, optional
        The worst case instead: ``m``, the number of columns of ``F``.
    radius : float, optional
        With ``universe_size``: ``R >= ||F||_{1->2}``; default ``√k``.

    Returns
    -------
    float
        The bound on ``sqrt(E (1/k) ||ã - a||²)``.

    Raises
    ------
    TypeError
        If neither or both of ``width`` and ``universe_size`` are given, ``radius`` is given
        with ``width``, or an argument has the wrong type.
    ValueError
        If ``sigma``, ``width`` or ``radius`` is negative or not finite, or ``k`` or
        ``universe_size`` is below 1.

    References
    ----------
    :cite:t:`NTZ13`, the projection mechanism's error.

    Examples
    --------
    >>> from projmech.analysis.bounds import ntz_projection_error, projection_error
    >>> round(ntz_projection_error(0.01, 180, width=20.0), 6)   # sqrt(2 * 0.01 * 20 / 180)
    0.04714
    >>> ntz_projection_error(0.7, 12, universe_size=4096) > projection_error(0.7, 12, universe_size=4096)
    True
    """
    sigma = check_nonnegative_number("sigma", sigma)
    k = check_positive_int("k", k)
    width = _width(k, width, universe_size, radius, 2)
    return math.sqrt(2.0 * sigma * width / k)


def min_n(error: Callable[..., float], alpha: float, *, sigma_times_n: float | None = None,
          **arguments: Any) -> int:
    """Return the smallest ``n >= 1`` at which a bound that decreases in ``n`` is at most ``alpha``.

    With ``sigma_times_n``, ``error`` is a bound of this module, which takes the noise ``sigma``
    first, and is evaluated as ``error(sigma_times_n / n, **arguments)``: the noise of a Gaussian
    calibration at public size ``n`` (:func:`noise_constant`). Without it, ``error(n, **arguments)``
    is a bound stated in ``n`` itself (e.g.
    :func:`projmech.mechanisms.multiplicative_weights.offline_pmw_error_bound`).

    The search doubles ``n`` until the bound is met and then bisects, so the answer is exactly
    consistent with the forward bound as computed in floating point: ``error`` at ``n`` is at most
    ``alpha`` and at ``n - 1`` above it. It needs only that ``error`` does not increase with ``n``,
    and takes about ``2 log2(n)`` evaluations.

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
        The smallest ``n``.

    Raises
    ------
    TypeError
        If ``error`` is not callable.
    ValueError
        If ``alpha`` is so small that the data size it needs overflows a float (``n > 2^1023``),
        or an argument is invalid.

    See Also
    --------
    projection_min_n : The smallest ``n`` for the projection mechanism, from its best bound.

    Examples
    --------
    >>> from projmech.analysis.bounds import gaussian_mechanism_error, min_n
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


@dataclass(frozen=True)
class MinimumSize:
    """The smallest data size that meets a target error, and the bound that certifies it.

    Returned by :func:`projection_min_n`. Read ``size.n`` for the number of rows; ``size.bound``
    says which valid bound gave it.

    Parameters
    ----------
    n : int
        The smallest public size ``n >= 1`` at which ``bound`` is at most the target error.
    bound : {"projection", "gaussian"}
        ``"projection"``: the projection mechanism's own bound (:func:`projection_error`);
        ``"gaussian"``: the Gaussian mechanism's error (:func:`gaussian_mechanism_error`), which
        bounds the projection mechanism's too, since projection never moves the noisy answers
        away from the true ones.

    See Also
    --------
    projection_min_n : Computes it.

    Examples
    --------
    >>> from projmech.analysis.bounds import projection_min_n
    >>> size = projection_min_n(0.2, sigma_times_n=10.0, k=180, width=16.5)
    >>> size
    MinimumSize(n=23, bound='projection')
    >>> size.n
    23
    """

    n: int
    bound: Literal["projection", "gaussian"]


def projection_min_n(alpha: float, *, sigma_times_n: float, k: int, width: float | None = None,
                     universe_size: int | None = None, radius: float | None = None,
                     measure: Literal["rms", "mean"] = "rms") -> MinimumSize:
    """Return the smallest data size at which the projection mechanism's error is provably at most ``alpha``.

    Two bounds hold for the projection mechanism, and the smaller ``n`` of the two is returned
    with the name of the bound that gave it:

    - ``"projection"``: its own bound, :func:`projection_error` :cite:p:`NTZ13`,
      ``sqrt(sigma l*(K) / k)``, which needs ``n >= sigma_times_n l*(K) / (k alpha²)``;
    - ``"gaussian"``: the error of the Gaussian answers it starts from,
      :func:`gaussian_mechanism_error`, which needs ``n >= sigma_times_n / alpha`` (``"rms"``).
      Projecting onto a convex body that contains the true answers never increases the distance
      to them, so this bounds the projected answers' error too.

    The projection bound gives the smaller ``n`` exactly when ``alpha > l*(K) / k`` (for
    ``"rms"``): for loose targets on workloads of small width. On a tie the Gaussian bound is
    named. The derivation is in the theory page *Error bounds* (``docs/theory/bounds.md``).

    Parameters
    ----------
    alpha : float
        Target error, ``> 0``.
    sigma_times_n : float
        ``n sigma(n) >= 0``, from :func:`noise_constant` (or ``n * mechanism.noise_scale(n)``).
    k : int
        The number of queries.
    width : float, optional
        ``l*(K) >= 0``, the Gaussian width of the body projected onto, as for
        :func:`projection_error`. Give this or ``universe_size``.
    universe_size : int, optional
        The worst case instead: ``|X|``, or the number of distinct columns of ``F``.
    radius : float, optional
        With ``universe_size``: ``R >= ||F||_{1->2}``; default ``√k``.
    measure : {"rms", "mean"}
        The error measure the target is in (default ``"rms"``). For ``"mean"`` the Gaussian
        error is ``E (1/√k) ||Z||``, which bounds the projected answers' mean RMSE pathwise, and
        the projection bound holds by Jensen's inequality.

    Returns
    -------
    MinimumSize
        ``n``, and ``bound``, ``"projection"`` or ``"gaussian"``.

    Raises
    ------
    TypeError
        If neither or both of ``width`` and ``universe_size`` are given, or an argument has the
        wrong type.
    ValueError
        If ``alpha`` is not positive, or needs more than ``2^1023`` rows; if ``sigma_times_n``,
        ``width`` or ``radius`` is negative or not finite; if ``k`` or ``universe_size`` is
        below 1; or if ``measure`` is unknown.

    See Also
    --------
    min_n : The smallest ``n`` for any one bound.
    projmech.mechanisms.additive.ProjectionMechanism.error_bound : The same minimum of the two, forward.

    References
    ----------
    :cite:t:`NTZ13`, the projection mechanism's error; :cite:t:`DR14`, the Gaussian mechanism.

    Examples
    --------
    A workload of ``k = 180`` queries whose body has Gaussian width 16.5, so the bounds cross at
    ``alpha = 16.5 / 180 ≈ 0.092``:

    >>> from projmech.analysis.bounds import projection_min_n
    >>> projection_min_n(0.05, sigma_times_n=10.0, k=180, width=16.5)   # ceil(10 / 0.05)
    MinimumSize(n=200, bound='gaussian')
    >>> projection_min_n(0.2, sigma_times_n=10.0, k=180, width=16.5)    # ceil(10 * 16.5 / (180 * 0.2**2))
    MinimumSize(n=23, bound='projection')

    Without a width estimate, the worst case over the ``2^10`` rows of 10 binary attributes, with
    the column norm ``sqrt(45)`` of their 2-way marginals:

    >>> projection_min_n(0.2, sigma_times_n=10.0, k=180, universe_size=1024, radius=45 ** 0.5)
    MinimumSize(n=35, bound='projection')
    """
    sigma_times_n = check_nonnegative_number("sigma_times_n", sigma_times_n)
    check_measure(measure)
    projection = min_n(projection_error, alpha, sigma_times_n=sigma_times_n, k=k, width=width,
                       universe_size=universe_size, radius=radius)
    gaussian = min_n(gaussian_mechanism_error, alpha, sigma_times_n=sigma_times_n, k=k, measure=measure)
    if projection < gaussian:
        return MinimumSize(projection, "projection")
    return MinimumSize(gaussian, "gaussian")
