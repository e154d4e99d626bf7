"""Noise distributions and their samplers, each Gaussian or Laplace, continuous or discrete.

Continuous noise comes from numpy's samplers, reproducible from the caller's Generator but open to
floating-point attacks :cite:p:`Mir12`. Discrete noise (the discrete Gaussian :cite:p:`CKS20`,
the discrete Laplace) is drawn exactly by OpenDP from its own secure generator: integer noise on
integer values has no low-order bits to attack, but is not reproducible from a seed.
``noise="auto"`` chooses discrete noise wherever the values are integers (:func:`choose_discrete`).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

# OpenDP's core modules, imported with this module rather than at the first draw: an
# import in progress on another thread while the process forks would leave the child holding its
# import locks for a thread it does not have (see _pool_lock).
import opendp.domains
import opendp.measurements
import opendp.metrics
import opendp.mod

from ..errors import ArgumentValueError
from ..validation import FLAG, NONNEGATIVE, OPEN_UNIT, POSITIVE, Options, validate_params
from ._calibration import gaussian_sigma, laplace_scale
from ._definitions import ZCDP, ApproxDP, Privacy, PureDP, scale_budget
from ._neighbouring import SizePolicy

__all__ = ["Noise", "NOISE_KINDS", "calibrate", "choose_discrete", "discrete_gaussian_pmf",
           "discrete_laplace_pmf", "public_size"]

#: The ``noise=`` choices of the mechanisms.
NOISE_KINDS = ("auto", "discrete", "continuous")

Distribution = Literal["gaussian", "laplace"]

_NOISE_KIND = Options(*NOISE_KINDS)

#: How far out a draw may fall, in scales: 40 standard deviations of the (discrete) Gaussian, 800
#: scales b of the (discrete) Laplace. Each tail beyond has probability below exp(-800) ~ 1e-348
#: per draw (the Gaussian's is below 2 exp(-40^2 / 2)), so that even 2^64 draws, far more than
#: any use makes, reach it with probability below 1e-328: never, in any meaningful sense. The same
#: truncation as discrete_gaussian_pmf and discrete_laplace_pmf.
_TAIL = {"gaussian": 40.0, "laplace": 800.0}

#: Where the tail of a discrete draw may reach. OpenDP draws int64 noise and saturates at
#: +-2^63, and the draws are then added to float64 counts, whose integers are exact only up to
#: 2^53 in magnitude. Below 2^52, the noise is never clipped and the noisy counts stay exact
#: integers for counts up to 2^52 too: what is stated is what is drawn.
_DISCRETE_REACH = 2.0**52

#: Where the tail of a continuous draw may reach: 2^24 below float64's largest number (2^1024),
#: room for the counts added to the noise and for a reconstruction's sums of noisy measurements
#: to stay finite.
_CONTINUOUS_REACH = 2.0**1000


def largest_scale(distribution: Distribution, discrete: bool) -> float:
    """The largest scale whose draws, up to ``_TAIL`` scales out, are represented exactly."""
    return (_DISCRETE_REACH if discrete else _CONTINUOUS_REACH) / _TAIL[distribution]


def _scale_problem(distribution: Distribution, scale: float, discrete: bool) -> str | None:
    """Why noise of this scale cannot be drawn as stated, or None if it can."""
    limit = largest_scale(distribution, discrete)
    name = f"discrete_{distribution}" if discrete else distribution
    if scale > limit:
        sampler = ("the exact integer sampler (int64 draws added to float64 counts, exact below 2^53)" if discrete
                   else "numpy's floating-point sampler (its draws would overflow float64)")
        return f"{name} noise of scale {scale:.3g} is above {limit:.3g}, the largest that {sampler} draws as stated"
    if not discrete and 0 < scale < sys.float_info.min:
        return (f"{name} noise of scale {scale:.3g} is below float64's smallest normal number "
                f"({sys.float_info.min:.3g}): its draws would be rounded to a coarse grid")
    return None


@dataclass(frozen=True)
class Noise:
    """I.i.d. noise of one distribution, scale and family, added coordinate-wise.

    A scale beyond what the sampler draws as stated is refused.

    Parameters
    ----------
    distribution : {"gaussian", "laplace"}
        The distribution.
    scale : float
        ``sigma`` of the Gaussian, ``b`` of the Laplace, in the units of the values; 0 is no noise.
    discrete : bool
        Integer noise from OpenDP (exact, not seedable) rather than numpy floats.

    Examples
    --------
    >>> pm.Noise("gaussian", 2.0, discrete=False).sample(3, np.random.default_rng(0)).round(3)
    array([ 0.251, -0.264,  1.281])
    """

    distribution: Distribution
    scale: float
    discrete: bool

    def __post_init__(self) -> None:
        Options("gaussian", "laplace").check("distribution", self.distribution)
        object.__setattr__(self, "discrete", FLAG.check("discrete", self.discrete))
        # Scale 0 is no noise: what a query of sensitivity 0 (e.g. the total under replace-one)
        # needs.
        object.__setattr__(self, "scale", NONNEGATIVE.check("scale", self.scale))
        # What is stated must be what is drawn (the mechanisms refuse such budgets earlier, in
        # calibrate, naming them; this guards every other maker of noise).
        problem = _scale_problem(self.distribution, self.scale, self.discrete)
        if problem is not None:
            raise ValueError(f"scale: {problem}")

    @property
    def name(self) -> str:
        """``"gaussian"``, ``"laplace"``, ``"discrete_gaussian"`` or ``"discrete_laplace"``."""
        return f"discrete_{self.distribution}" if self.discrete else self.distribution

    @property
    def std(self) -> float:
        """The standard deviation of one draw (for the discrete Gaussian slightly below sigma)."""
        if not self.discrete or self.scale == 0:
            return self.scale if self.distribution == "gaussian" else math.sqrt(2.0) * self.scale
        if self.distribution == "laplace":
            # Var = 2 q / (1 - q)^2 with q = exp(-1/b) (a difference of two geometric variables);
            # 1 - q by expm1, accurate at large b.
            q = math.exp(-1.0 / self.scale)
            return math.sqrt(2.0 * q) / -math.expm1(-1.0 / self.scale)
        if self.scale >= 3.0:
            # Var N_Z(0, sigma^2) differs from sigma^2 by a term of order exp(-2 pi^2 sigma^2)
            # (Poisson summation; Canonne, Kamath & Steinke 2020), below 1e-70 relative here.
            return self.scale
        support, pmf = discrete_gaussian_pmf(self.scale)
        return math.sqrt(float(pmf @ support.astype(float) ** 2))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Independent draws of the noise, as floats (integers for discrete noise).

        Parameters
        ----------
        size : int
            The number of draws.
        rng : numpy.random.Generator
            Drives continuous noise only; discrete noise comes from OpenDP's own generator.

        Returns
        -------
        numpy.ndarray
        """
        if self.scale == 0:
            return np.zeros(size)
        if self.discrete:
            return _opendp_sample(self.distribution, self.scale, size)
        if self.distribution == "gaussian":
            return rng.normal(0.0, self.scale, size=size)
        return rng.laplace(0.0, self.scale, size=size)

    def half_width(self, level: float) -> float:
        """The smallest ``t`` with ``P(|X| <= t) >= level`` for one draw ``X`` (never too narrow for discrete noise).

        Time and memory do not grow with the scale (:doc:`/theory/privacy`).

        Parameters
        ----------
        level : float
            The probability, in ``(0, 1)``.

        Returns
        -------
        float

        Examples
        --------
        >>> round(pm.Noise("gaussian", 2.0, discrete=False).half_width(0.95), 4)
        3.9199
        """
        level = float(OPEN_UNIT.check("level", level))
        if self.scale == 0:
            return 0.0
        if not self.discrete:
            if self.distribution == "laplace":
                return self.scale * math.log(1.0 / (1.0 - level))
            from scipy import special  # imported where needed: it is slow to import

            return self.scale * math.sqrt(2.0) * float(special.erfinv(level))
        if self.distribution == "laplace":
            return float(_least_covering(lambda t: _discrete_laplace_tail_bound(self.scale, t), level,
                                         math.ceil(_TAIL["laplace"] * self.scale) + 1))
        if self.scale > _TABLE_SIGMA:
            return float(_least_covering(lambda t: _discrete_gaussian_tail_bound(self.scale, t), level,
                                         math.ceil(_TAIL["gaussian"] * self.scale) + 1))
        support, pmf = discrete_gaussian_pmf(self.scale)
        # tails[t] = P(|X| > t) = 2 (pmf[t + 1] + ... + pmf[T]) by symmetry, for t = 0..T (the
        # last 0), summed from the far end, the smallest terms first: each tail is then accurate
        # to a relative (T + 64) * eps, the bound on the rounding of a sum of T positive terms,
        # added to the slack (a sum from the centre, 1 - tail, would round near level 1).
        positive = pmf[support > 0]
        tails = np.append(2.0 * np.cumsum(positive[::-1])[::-1], 0.0)
        slack = _ROUNDING_SLACK + (tails.size + 64) * np.finfo(float).eps
        return float(np.argmax(tails * (1.0 + slack) <= 1.0 - level))

    def summary(self) -> dict[str, Any]:
        """Plain values for a release summary.

        Returns
        -------
        dict
            ``distribution`` (:attr:`name`), ``scale``, ``std`` and ``sampler``.
        """
        return {
            "distribution": self.name,
            "scale": self.scale,
            "std": self.std,
            "sampler": "opendp (OS entropy, exact)" if self.discrete else "numpy (explicit Generator)",
        }


def choose_discrete(noise: str, integer_valued: bool, *, name: str = "noise") -> bool:
    """Whether a mechanism measuring values that are (or are not) integers uses discrete noise.

    Parameters
    ----------
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: discrete exactly for integers; ``"discrete"`` refuses fractions (integer noise would publish them).
    integer_valued : bool
        Whether the measured values are integers.
    name : str, default "noise"
        The argument's name in error messages.

    Returns
    -------
    bool

    Examples
    --------
    >>> pm.privacy.choose_discrete("auto", True), pm.privacy.choose_discrete("auto", False)
    (True, False)
    """
    noise = _NOISE_KIND.check(name, noise)
    if noise == "discrete" and not integer_valued:
        raise ValueError(
            f"{name}: 'discrete' noise needs integer-valued measurements, but the measured matrix has "
            "non-integer entries (use noise='continuous')"
        )
    return noise == "discrete" or (noise == "auto" and integer_valued)


def calibrate(privacy: Privacy, sensitivity: float, policy: SizePolicy, discrete: bool, *,
              calibration: str = "analytic") -> tuple[Noise, Noise | None]:
    """The noise of a measurement of this sensitivity, and of the size estimate if the policy asks.

    Gaussian for ``ZCDP``/``ApproxDP`` (l2 sensitivity), Laplace for ``PureDP`` (l1); a size estimate
    takes ``policy.share`` and both together spend exactly the budget (:doc:`/theory/privacy`). A
    budget whose noise cannot be drawn as stated is refused.

    Parameters
    ----------
    privacy : ZCDP, ApproxDP or PureDP
        The whole budget.
    sensitivity : float
        The measurement's sensitivity, in counts.
    policy : SizePolicy
        Whether (and with which share) the size is estimated.
    discrete : bool
        Calibrate discrete noise.
    calibration : {"analytic", "classical"}, default "analytic"
        As ``method`` of :func:`~projmech.privacy.gaussian_sigma`.

    Returns
    -------
    (Noise, Noise or None)
        The measurement's noise and the size estimate's.

    Examples
    --------
    >>> policy = pm.SizePolicy.parse("add-remove", "estimate")
    >>> noise, size_noise = pm.privacy.calibrate(pm.ZCDP(0.5), 1.0, policy, False)
    >>> round(noise.scale, 4), round(size_noise.scale, 4)
    (1.026, 4.4721)
    """
    shares = [policy.main_share()] + ([policy.share] if policy.estimated else [])
    if isinstance(privacy, PureDP):
        scales = [laplace_scale(sensitivity, scale_budget(privacy, shares[0]))] + \
                 [laplace_scale(1.0, scale_budget(privacy, share)) for share in shares[1:]]
        distribution: Distribution = "laplace"
    elif isinstance(privacy, (ZCDP, ApproxDP)):
        ratio = gaussian_sigma(1.0, privacy, method=calibration, discrete=discrete)  # type: ignore[arg-type]
        scales = [ratio * sensitivity / math.sqrt(shares[0])] + [ratio / math.sqrt(share) for share in shares[1:]]
        distribution = "gaussian"
    else:
        raise TypeError(f"privacy: expected ZCDP, ApproxDP or PureDP, got {type(privacy).__name__}")
    _check_scales(privacy, distribution, max(scales), discrete)
    noises = [Noise(distribution, scale, discrete) for scale in scales]
    return noises[0], (noises[1] if policy.estimated else None)


def public_size(policy: SizePolicy, rows: int, size_noise: Noise | None, rng: np.random.Generator) -> float:
    """The public size a mechanism divides its counts by: :meth:`SizePolicy.resolve`, drawing the estimate's noise.

    Parameters
    ----------
    policy : SizePolicy
        The mechanism's size policy.
    rows : int
        The data set's row count (private under add/remove).
    size_noise : Noise or None
        The size estimate's noise, from :func:`calibrate`.
    rng : numpy.random.Generator
        Source of continuous noise.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.privacy.public_size(pm.SizePolicy.parse("add-remove", 500), 3, None, np.random.default_rng(0))
    500.0
    """
    def draw_size_noise() -> float:
        # Drawn only for an estimated size, which calibrate gave its noise.
        if size_noise is None:
            raise ValueError("size_noise: an estimated size needs the noise calibrate gave it, got None")
        return float(size_noise.sample(1, rng)[0])

    return policy.resolve(rows, draw_size_noise)


def _check_scales(privacy: Privacy, distribution: Distribution, scale: float, discrete: bool) -> None:
    """Refuse a budget whose largest scale cannot be drawn as stated, naming the budget that would fit."""
    problem = _scale_problem(distribution, scale, discrete)
    if problem is None:
        return
    ratio = scale / largest_scale(distribution, discrete)
    part = "rho" if isinstance(privacy, ZCDP) else "epsilon"
    alternatives = [("noise", "continuous")] if discrete and ratio > 1 else []
    remedies, valid = [], None
    if ratio < 1:  # the scale is too small: a larger budget cannot help
        remedies.append("a smaller budget, or the workload scaled up (multiply F by c > 1, divide the answers by c)")
    else:
        # A hair above the least budget, against the rounding of the product.
        needed = ((1.0 + 1e-9) * privacy.rho * ratio * ratio if isinstance(privacy, ZCDP)
                  else (1.0 + 1e-9) * privacy.epsilon * ratio if isinstance(privacy, PureDP) else None)
        if needed is None:
            remedies.append("a larger epsilon or delta")
        elif math.isfinite(needed):
            valid = f"at least {_rounded_up(needed)}"
            remedies.append(f"a budget of at least {part} = {_rounded_up(needed)}")
        else:
            remedies.append("the workload scaled down (multiply F by c < 1, divide the answers by c)")
    raise ArgumentValueError("privacy", f"at {privacy}, {problem}", part=part, valid=valid, alternatives=alternatives,
                             remedies=remedies)


def _rounded_up(value: float) -> str:
    """``value`` to 3 significant digits, rounded up: a smallest budget shown must suffice."""
    shown = f"{value:.3g}"
    if float(shown) < value:
        unit = 10.0 ** (math.floor(math.log10(value)) - 2)
        shown = f"{(math.floor(value / unit) + 1) * unit:.3g}"
    return shown


#: Up to this sigma the discrete Gaussian's half-width sums its table of probabilities
#: (:func:`discrete_gaussian_pmf`, 80 sigma + 3 entries: 80,003 at most); above, it bounds the
#: tail in closed form (:func:`_discrete_gaussian_tail_bound`), so that memory does not grow
#: with sigma. The discrete Laplace's tail has its closed form at every scale.
_TABLE_SIGMA = 1000.0

#: Relative slack on a tail computed in floating point: erf, erfc and exp err by a few units in
#: the 16th digit (scipy's by at most about 1e-14 relative), far below it. A tail bound is
#: inflated by it before it is compared with ``1 - level``, so that rounding never makes a
#: width narrower than the true one.
_ROUNDING_SLACK = 1e-12


def _least_covering(tail_bound: Callable[[int], float], level: float, high: int) -> int:
    """The least ``t`` in ``[0, high]`` whose inflated tail bound is at most ``1 - level``, by bisection."""
    def covered(t: int) -> bool:
        return tail_bound(t) * (1.0 + _ROUNDING_SLACK) <= 1.0 - level

    low = -1  # covers nothing
    while high - low > 1:
        middle = (low + high) // 2
        if covered(middle):
            high = middle
        else:
            low = middle
    return high


def _discrete_laplace_tail_bound(scale: float, t: int) -> float:
    """``P(|X| > t) = 2 q^(t+1) / (1 + q)``, ``q = exp(-1/b)``, for the discrete Laplace of scale ``b``."""
    return 2.0 * math.exp(-(t + 1) / scale) / (1.0 + math.exp(-1.0 / scale))


def _discrete_gaussian_tail_bound(sigma: float, t: int) -> float:
    """An upper bound on ``P(|X| > t)`` for ``X ~ N_Z(0, sigma^2)``, ``sigma >= 1`` (:doc:`/theory/privacy`)."""
    from scipy import special  # imported where needed: it is slow to import

    root = sigma * math.sqrt(2.0)

    def share(x: float) -> float:  # g(x): one term over the lower bound of Z
        return math.sqrt(2.0 / math.pi) / sigma * math.exp(-(x / root) ** 2)

    a = t + 1
    if a - 0.5 >= sigma:
        return float(special.erfc((a - 0.5) / root))
    knee = math.floor(sigma)
    if a > knee:
        return share(a) + float(special.erfc((a + 0.5) / root))
    return (float(special.erf(knee / root) - special.erf(a / root)) + (share(a) + share(knee)) / 2.0
            + share(knee + 1) + float(special.erfc((knee + 1.5) / root)))


@validate_params(sigma=POSITIVE, tail=POSITIVE)
def discrete_gaussian_pmf(sigma: float, tail: float = 40.0) -> tuple[np.ndarray, np.ndarray]:
    """The support ``-T..T`` and probabilities of the discrete Gaussian ``N_Z(0, sigma^2)``, ``T = ceil(tail sigma)+1``.

    Parameters
    ----------
    sigma : float
        The scale, ``> 0``.
    tail : float, default 40.0
        The truncation, in sigmas (the mass beyond is below ``exp(-tail^2 / 2)``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)

    Examples
    --------
    >>> support, pmf = pm.privacy.discrete_gaussian_pmf(1.0)
    >>> int(support[-1]), round(float(pmf[support == 0][0]), 4)
    (41, 0.3989)
    """
    return _truncated_pmf(sigma, tail, lambda support: np.exp(-(support.astype(float) ** 2) / (2.0 * sigma**2)))


@validate_params(scale=POSITIVE, tail=POSITIVE)
def discrete_laplace_pmf(scale: float, tail: float = 800.0) -> tuple[np.ndarray, np.ndarray]:
    """The support ``-T..T`` and probabilities of the discrete Laplace of scale ``b``, ``T = ceil(tail b) + 1``.

    Parameters
    ----------
    scale, tail : float
        ``b > 0``, and the truncation in multiples of ``b``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The support, and probabilities proportional to ``exp(-|k| / b)`` summing to 1.

    Examples
    --------
    >>> support, pmf = pm.privacy.discrete_laplace_pmf(1.0)
    >>> round(float(pmf[support == 0][0]), 4)
    0.4621
    """
    return _truncated_pmf(scale, tail, lambda support: np.exp(-np.abs(support) / scale))


def _truncated_pmf(scale: float, tail: float,
                   weight: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The integers within ``tail`` scales (plus one) and their ``weight``, normalized to sum to 1."""
    bound = int(math.ceil(tail * scale)) + 1
    support = np.arange(-bound, bound + 1)
    weights = weight(support)
    return support, weights / weights.sum()


@functools.lru_cache(maxsize=64)
def _opendp_measurement(distribution: str, scale: float) -> Any:
    """OpenDP's exact sampler for integer vectors, built once per distribution and scale."""
    # OpenDP gates its noise constructors behind this flag; it only adds to the enabled set.
    opendp.mod.enable_features("contrib")
    domain = opendp.domains.vector_domain(opendp.domains.atom_domain(T="i64"))
    if distribution == "gaussian":
        return opendp.measurements.make_gaussian(domain, opendp.metrics.l2_distance(T="f64"), scale=float(scale))
    return opendp.measurements.make_laplace(domain, opendp.metrics.l1_distance(T="i64"), scale=float(scale))


#: Discrete draws are fetched from OpenDP this many at a time (or more when one call needs more):
#: a call into OpenDP has a fixed cost whatever its size, and each draw a cost of its own, most of
#: it in OpenDP's secure generator (timings: benchmarks/README.md).
_POOL_CHUNK = 4096


def _usable_cores() -> int:
    """The cores this process may run on (its affinity where the system says, else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity off Linux
        return max(1, os.cpu_count() or 1)


#: Sampler threads per refill: one per usable core. OpenDP samples with the GIL released (ctypes
#: calls into its library), so the threads' calls proceed in parallel, and the draws of
#: independent calls are i.i.d. like those of one call. Only wall-clock time changes; no draw
#: depends on the thread count, since no seed drives them. 1: a single OpenDP call per refill.
_SAMPLER_THREADS = _usable_cores()

#: A refill is sampled in blocks of this many draws (long against the cost of a call into
#: OpenDP), which the sampler threads take in turn until none is left: on a shared machine, a
#: thread that the system holds back delays the refill by one block at most.
_BLOCK = 2048

#: Unused i.i.d. draws per (distribution, scale). Every draw is handed out exactly once: the lock
#: covers taking and refilling (OpenDP releases the GIL while it samples, so two threads could
#: otherwise take the same draws; the sampler threads of a refill only return fresh draws to the
#: caller that holds the lock), and a forked child starts with no pool (else parent and child
#: would publish the same noise, whose difference reveals the difference of the true counts).
#: The sampler threads are started per refill and joined before it returns: no thread outlives
#: a call, so none is left for a fork to lose.
#:
#: The lock also covers every call into OpenDP (building a measurement and every draw), and a
#: fork waits for it (``_hold_for_fork``): no other thread is inside OpenDP's library or its
#: generator when the process is copied, since a lock such a thread held (OpenSSL's, say) would
#: stay held in the child by a thread that does not exist there, and the child's first draw would
#: wait for it forever. The fork handlers of other libraries run before this one when registered
#: later (logging's takes its module lock), so the section under the lock calls only OpenDP's core
#: modules and numpy, which take no such lock; that is also why OpenDP is imported above and not
#: lazily under the lock (its full import calls logging).
#:
#: A fork from a signal handler on the thread that holds the lock (signal handlers run on the main
#: thread, between its bytecodes) does not wait for it: that thread cannot release it until the
#: handler returns. A Ctrl-C while a fork waits does not end the wait: CPython ignores exceptions
#: in fork handlers, so the fork would go ahead without the lock (and the parent release it under
#: the thread that holds it); it is lost, as any exception in a fork handler is.
_pools: dict[tuple[str, float], np.ndarray] = {}
_pool_lock = threading.Lock()
_pool_owner: int | None = None


def _hold_for_fork() -> None:
    if _pool_owner == threading.get_ident():
        return
    while True:
        try:
            _pool_lock.acquire()
        except KeyboardInterrupt:
            continue
        return


def _release_after_fork() -> None:
    if _pool_owner != threading.get_ident():  # the lock was taken by _hold_for_fork
        _pool_lock.release()


def _forget_pools() -> None:
    global _pool_lock, _pool_owner
    _pools.clear()
    _pool_lock, _pool_owner = threading.Lock(), None


os.register_at_fork(before=_hold_for_fork, after_in_parent=_release_after_fork, after_in_child=_forget_pools)


def _opendp_draws(distribution: str, scale: float, size: int) -> np.ndarray:
    """``size`` fresh draws from OpenDP in blocks, on up to ``_SAMPLER_THREADS`` threads joined before it returns."""
    measurement = _opendp_measurement(distribution, float(scale))

    def draw(count: int) -> np.ndarray:
        return np.asarray(measurement([0] * count), dtype=np.int64)

    blocks = [min(_BLOCK, size - start) for start in range(0, size, _BLOCK)]
    workers = min(_SAMPLER_THREADS, len(blocks))
    if workers <= 1:
        return draw(size).astype(float)
    results: list[np.ndarray | None] = [None] * len(blocks)
    errors: list[Exception] = []
    remaining = iter(range(len(blocks)))
    taking = threading.Lock()

    def work() -> None:
        while not errors:
            with taking:
                index = next(remaining, None)
            if index is None:
                return
            try:
                results[index] = draw(blocks[index])
            except Exception as error:  # re-raised in the caller, below
                errors.append(error)

    threads = [threading.Thread(target=work, name=f"projmech-noise-{i}", daemon=True) for i in range(1, workers)]
    for thread in threads:
        thread.start()
    work()  # the caller samples blocks too
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return np.concatenate([block for block in results if block is not None]).astype(float)


def _opendp_sample(distribution: str, scale: float, size: int) -> np.ndarray:
    """``size`` draws from OpenDP, served from a pool refilled in chunks (each call has a fixed cost)."""
    if size == 0:
        return np.zeros(0)
    global _pool_owner
    key = (distribution, float(scale))
    with _pool_lock:
        _pool_owner = threading.get_ident()
        try:
            pool = _pools.get(key, np.zeros(0))
            if pool.size < size:
                fresh = _opendp_draws(distribution, float(scale), max(_POOL_CHUNK, size - pool.size))
                pool = np.concatenate([pool, fresh])
            _pools[key] = pool[size:]
            return pool[:size].copy()
        finally:
            _pool_owner = None
