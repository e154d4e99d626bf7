"""Noise distributions: calibration against OpenDP's own accountant, distributions against their
exact probability mass functions written out here, and the choice of discrete or continuous noise.

OpenDP is the sampler of the discrete noise, but its *accountant* (``map`` of a measurement, the
privacy profile of ``make_zCDP_to_approxDP``) is independent of projmech's calibration code, which
is what these tests check.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from scipy import stats

from projmech.mechanisms import GaussianMechanism, LaplaceMechanism
from projmech.privacy import (
    NOISE_KINDS,
    ZCDP,
    ApproxDP,
    LargeDeltaWarning,
    Noise,
    PureDP,
    SizePolicy,
    calibrate,
    choose_discrete,
    gaussian_sigma,
    laplace_scale,
    zcdp_delta,
    zcdp_for_approx_dp,
)
from projmech.privacy import _noise as noise_module
from projmech.workloads import Workload, identity

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

INTEGER_VECTORS = dp.vector_domain(dp.atom_domain(T="i64"))


def opendp_gaussian(scale: float):
    return dp.m.make_gaussian(INTEGER_VECTORS, dp.l2_distance(T="f64"), scale=scale)


def opendp_laplace(scale: float):
    return dp.m.make_laplace(INTEGER_VECTORS, dp.l1_distance(T="i64"), scale=scale)


# --- calibration against OpenDP's accountant ---------------------------------------------------

@pytest.mark.parametrize("rho", [1e-4, 0.01, 1 / 32, 0.5, 2.0, 30.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 1.0, 3.0, 10.0])
def test_zcdp_delta_matches_opendp_conversion(rho, epsilon):
    sigma = 1.0 / math.sqrt(2.0 * rho)  # rho-zCDP at sensitivity 1 in OpenDP's accounting
    profile = dp.c.make_zCDP_to_approxDP(opendp_gaussian(sigma)).map(1.0)
    expected = profile.delta(epsilon)
    assert zcdp_delta(rho, epsilon) == pytest.approx(expected, rel=1e-7, abs=1e-300)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", LargeDeltaWarning)  # a large delta is calibrated too, by design
    LARGE_DELTA_PRIVACY = ApproxDP(0.01, 0.5)


@pytest.mark.parametrize("privacy", [ApproxDP(1.0, 1e-6), ApproxDP(0.1, 1e-9), ApproxDP(5.0, 1e-3),
                                     ApproxDP(50.0, 1e-6), ApproxDP(1e5, 1e-6), LARGE_DELTA_PRIVACY])
@pytest.mark.parametrize("sensitivity", [1.0, math.sqrt(190.0)])
def test_discrete_gaussian_approx_dp_calibration_is_tight_by_opendp(privacy, sensitivity):
    """OpenDP's accountant, at the sigma projmech calibrates, gives delta <= the target; at a
    sigma 1e-6 smaller it does not: the calibration is the least noise the conversion certifies."""
    sigma = gaussian_sigma(sensitivity, privacy, discrete=True)

    def delta_at(scale: float) -> float:
        return dp.c.make_zCDP_to_approxDP(opendp_gaussian(scale)).map(sensitivity).delta(privacy.epsilon)

    assert delta_at(sigma) <= privacy.delta * (1 + 1e-9)
    assert delta_at(sigma * (1 - 1e-6)) > privacy.delta


@pytest.mark.parametrize("rho", [1e-3, 0.5, 8.0])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0, math.sqrt(45.0)])
def test_discrete_gaussian_zcdp_calibration_by_opendp(rho, sensitivity):
    sigma = gaussian_sigma(sensitivity, ZCDP(rho), discrete=True)
    assert opendp_gaussian(sigma).map(sensitivity) == pytest.approx(rho, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 7.5])
@pytest.mark.parametrize("sensitivity", [1, 3, 90])
def test_discrete_laplace_pure_dp_calibration_by_opendp(epsilon, sensitivity):
    scale = laplace_scale(sensitivity, PureDP(epsilon))
    assert opendp_laplace(scale).map(sensitivity) == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.filterwarnings("ignore::projmech.privacy.LargeDeltaWarning")  # delta = 0.01, by design
def test_zcdp_for_approx_dp_inverts_zcdp_delta():
    for privacy in (ApproxDP(1.0, 1e-6), ApproxDP(0.3, 1e-10), ApproxDP(8.0, 0.01)):
        rho = zcdp_for_approx_dp(privacy)
        assert zcdp_delta(rho, privacy.epsilon) <= privacy.delta
        assert zcdp_delta(rho * (1 + 1e-8), privacy.epsilon) > privacy.delta


def test_discrete_costs_a_few_percent_more_noise_than_analytic_continuous():
    """The conversion from zCDP is not the discrete Gaussian's exact profile: at (1, 1e-6) it
    needs 7.25 % more noise than the analytic continuous Gaussian (the figure the README
    states)."""
    privacy = ApproxDP(1.0, 1e-6)
    ratio = gaussian_sigma(1.0, privacy, discrete=True) / gaussian_sigma(1.0, privacy)
    assert 1.07 < ratio < 1.075


# --- the split of the budget with a size estimate -----------------------------------------------

@pytest.mark.parametrize("privacy", [ZCDP(0.5), ApproxDP(1.0, 1e-6), PureDP(2.0)])
@pytest.mark.parametrize("discrete", [False, True])
def test_calibrate_splits_the_budget_exactly(privacy, discrete):
    policy = SizePolicy.parse("add-remove", "estimate", size_share=0.2)
    sensitivity = 3.0
    main, size = calibrate(privacy, sensitivity, policy, discrete)
    assert size is not None and main.discrete == size.discrete == discrete
    if isinstance(privacy, PureDP):
        # The epsilons of the two Laplace measurements add up to the budget (OpenDP's map for
        # each discrete one; the definition b = Delta/epsilon for the continuous ones).
        if discrete:
            spent = opendp_laplace(main.scale).map(3) + opendp_laplace(size.scale).map(1)
        else:
            spent = sensitivity / main.scale + 1.0 / size.scale
        assert spent == pytest.approx(privacy.epsilon, rel=1e-12)
        return
    if discrete:
        # OpenDP's accountant: the two discrete Gaussians' rhos add up (zCDP composition) to a
        # rho that is, or converts to, the budget.
        rho = opendp_gaussian(main.scale).map(sensitivity) + opendp_gaussian(size.scale).map(1.0)
        if isinstance(privacy, ZCDP):
            assert rho == pytest.approx(privacy.rho, rel=1e-12)
        else:
            assert rho == pytest.approx(zcdp_for_approx_dp(privacy), rel=1e-12)
            sigma = 1.0 / math.sqrt(2.0 * rho)
            delta = dp.c.make_zCDP_to_approxDP(opendp_gaussian(sigma)).map(1.0).delta(privacy.epsilon)
            assert delta <= privacy.delta * (1 + 1e-9)
        return
    # Continuous: the joint Gaussian measurement whitened by its two scales has sensitivity
    # sqrt((Delta/sigma_1)^2 + (1/sigma_0)^2); its delta at epsilon, by the Balle-Wang formula
    # written out here with scipy, is the budget's.
    whitened = math.sqrt((sensitivity / main.scale) ** 2 + (1.0 / size.scale) ** 2)
    if isinstance(privacy, ZCDP):
        assert whitened**2 / 2 == pytest.approx(privacy.rho, rel=1e-12)
    else:
        eps = privacy.epsilon
        delta = (stats.norm.cdf(whitened / 2 - eps / whitened)
                 - math.exp(eps) * stats.norm.cdf(-whitened / 2 - eps / whitened))
        assert delta == pytest.approx(privacy.delta, rel=1e-6)


def test_calibrate_without_estimate_spends_everything_on_the_measurement():
    main, size = calibrate(ZCDP(0.5), 2.0, SizePolicy.parse("replace-one", None), False)
    assert size is None and main.scale == pytest.approx(2.0, rel=1e-15)


# --- the distributions ----------------------------------------------------------------------------

# OpenDP's draws cannot be seeded, so a test of their distribution is a random event: each
# rejects only at p < 1e-9 (a false alarm once in 10^9 runs), with draws enough that a planted
# scale 10 % off is rejected at that threshold (the power, in the same test, from the same draws).
DRAWS = 40_000
P_REJECT = 1e-9
PLANTED = 1.1


def _exact_pmf(distribution: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """The closed-form pmf on -T..T, T = 60 scales + 5 (beyond, mass below 1e-26):
    exp(-x^2 / (2 sigma^2)) normalised by their (pairwise) sum, or
    (1 - q) / (1 + q) q^|x|, q = exp(-1/b)."""
    bound = int(math.ceil(60 * scale)) + 5
    support = np.arange(-bound, bound + 1)
    if distribution == "gaussian":
        weights = np.exp(-(support.astype(float) ** 2) / (2.0 * scale**2))
        return support, weights / weights.sum()
    q = math.exp(-1.0 / scale)
    return support, (1 - q) / (1 + q) * np.exp(-np.abs(support) / scale)


def _binned_p_value(draws: np.ndarray, distribution: str, scale: float, cells: int = 40) -> float:
    """Pearson's test of integer draws against the exact pmf, in ``cells`` cells of about equal
    probability (consecutive integers; the two outer cells take the tails)."""
    support, pmf = _exact_pmf(distribution, scale)
    cdf = np.cumsum(pmf)
    # The last integer of each cell: where the cdf first reaches i / cells.
    ends = np.unique(support[np.minimum(np.searchsorted(cdf, np.arange(1, cells) / cells), support.size - 1)])
    cuts = np.concatenate([[0], np.searchsorted(support, ends, side="right"), [support.size]])
    probabilities = np.array([pmf[start:stop].sum() for start, stop in zip(cuts[:-1], cuts[1:])])
    observed = np.bincount(np.searchsorted(ends, draws, side="left"), minlength=ends.size + 1)
    return float(stats.chisquare(observed, probabilities / probabilities.sum() * draws.size).pvalue)


SCALES = [("gaussian", 0.6), ("gaussian", 1.0), ("gaussian", 2.5), ("gaussian", 11.0), ("gaussian", 1e4),
          ("laplace", 0.4), ("laplace", 1.0), ("laplace", 3.0), ("laplace", 1e4)]


@pytest.mark.parametrize("distribution,scale", SCALES)
def test_discrete_draws_follow_the_exact_pmf(distribution, scale):
    """Draws through the pool (a refill of 40,000 draws, in blocks over the sampler threads)
    against the closed-form pmf; the same draws reject the pmf of a scale 10 % larger."""
    draws = Noise(distribution, scale, discrete=True).sample(DRAWS, np.random.default_rng(0))
    assert draws.shape == (DRAWS,) and np.all(draws == np.round(draws))
    p_value = _binned_p_value(draws, distribution, scale)
    # OpenDP's draws cannot be seeded: on a failure, the counts near 0 are the only record of them
    # (the sigma = 0.6 case failed twice in full-suite runs on a busy machine, p = 6e-8 and 3e-15,
    # and never alone).
    values, counts = np.unique(draws[np.abs(draws) <= 3 * scale + 3], return_counts=True)
    assert p_value > P_REJECT, (p_value, dict(zip(values.astype(int).tolist(), counts.tolist())))
    assert _binned_p_value(draws, distribution, PLANTED * scale) < P_REJECT


def test_chi_square_check_has_power():
    """The binned test rejects draws of twice the scale."""
    draws = Noise("gaussian", 5.0, discrete=True).sample(20_000, None)
    assert _binned_p_value(draws, "gaussian", 2.5) < 1e-100


@pytest.mark.parametrize("distribution,scale", [("gaussian", 0.5), ("gaussian", 1.7), ("gaussian", 40.0),
                                                ("laplace", 0.3), ("laplace", 5.0)])
def test_discrete_std_against_the_pmf(distribution, scale):
    support = np.arange(-20_000, 20_001)
    if distribution == "gaussian":
        weights = np.exp(-(support.astype(float) ** 2) / (2 * scale**2))
    else:
        weights = np.exp(-np.abs(support) / scale)
    pmf = weights / weights.sum()
    expected = math.sqrt(float(pmf @ support.astype(float) ** 2))
    assert Noise(distribution, scale, discrete=True).std == pytest.approx(expected, rel=1e-10)


def test_continuous_noise_is_reproducible_from_the_generator_and_discrete_is_not_seeded():
    noise = Noise("gaussian", 2.0, discrete=False)
    first = noise.sample(5, np.random.default_rng(3))
    assert np.array_equal(first, noise.sample(5, np.random.default_rng(3)))
    assert np.array_equal(first, np.random.default_rng(3).normal(0.0, 2.0, size=5))
    discrete = Noise("gaussian", 50.0, discrete=True)
    # 40 draws of sigma 50 coincide with probability far below 1e-40: they come from OpenDP's
    # generator, not from the seeded one.
    assert not np.array_equal(discrete.sample(40, np.random.default_rng(3)), discrete.sample(40,
                                                                                             np.random.default_rng(3)))
    assert Noise("laplace", 1.0, True).summary()["sampler"].startswith("opendp")


# --- choices and validation ----------------------------------------------------------------------

def test_choose_discrete():
    assert choose_discrete("auto", True) and not choose_discrete("auto", False)
    assert choose_discrete("discrete", True) and not choose_discrete("continuous", True)
    with pytest.raises(ValueError, match="noise: 'discrete' noise needs integer"):
        choose_discrete("discrete", False)
    with pytest.raises(ValueError, match="noise: expected one of"):
        choose_discrete("exact", True)
    assert NOISE_KINDS == ("auto", "discrete", "continuous")


@pytest.mark.parametrize("kwargs,error,match", [
    ({"distribution": "cauchy", "scale": 1.0, "discrete": False}, ValueError, "distribution"),
    ({"distribution": "gaussian", "scale": -1.0, "discrete": False}, ValueError, "scale"),
    ({"distribution": "gaussian", "scale": math.inf, "discrete": False}, ValueError, "scale"),
    ({"distribution": "gaussian", "scale": "1", "discrete": False}, TypeError, "scale"),
    ({"distribution": "gaussian", "scale": 1.0, "discrete": 1}, TypeError, "discrete"),
    ({"distribution": "gaussian", "scale": True, "discrete": False}, TypeError, "scale"),
    ({"distribution": 1, "scale": 1.0, "discrete": False}, TypeError, "distribution"),
])
def test_noise_validation(kwargs, error, match):
    with pytest.raises(error, match=f"^{match}: "):
        Noise(**kwargs)


def test_noise_kind_of_the_wrong_type_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="^noise: expected one of"):
        choose_discrete(None, True)
    with pytest.raises(TypeError, match="^strategy_noise: expected one of"):
        choose_discrete(1, True, name="strategy_noise")


def test_noise_options_are_keyword_only():
    policy = SizePolicy.parse("replace-one", None)
    with pytest.raises(TypeError, match="positional"):
        calibrate(ZCDP(0.5), 1.0, policy, False, "analytic")
    with pytest.raises(TypeError, match="positional"):
        choose_discrete("auto", True, "noise")
    noise, _ = calibrate(ApproxDP(0.5, 1e-6), 1.0, policy, False, calibration="classical")
    assert noise.scale == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5)  # Dwork & Roth, Thm A.1


# --- scales the samplers cannot draw as stated -------------------------------------------------

# The documented limits, written out: a draw may fall 40 sigma (Gaussian) or 800 b (Laplace) from
# 0, and must then stay below 2^52 (discrete: int64 draws added to float64 counts, exact below
# 2^53) or 2^1000 (continuous: 2^24 below float64's largest number).
DISCRETE_SIGMA_LIMIT, DISCRETE_B_LIMIT = 2.0**52 / 40, 2.0**52 / 800
CONTINUOUS_SIGMA_LIMIT, CONTINUOUS_B_LIMIT = 2.0**1000 / 40, 2.0**1000 / 800


def smallest_budget_in(error: pytest.ExceptionInfo, name: str) -> float:
    match = re.search(rf"a budget of at least {name} = ([0-9.e+-]+)", str(error.value))
    assert match is not None, str(error.value)
    return float(match.group(1))


@pytest.mark.parametrize("rho", [1e-40, 1e-300])
def test_discrete_gaussian_beyond_its_sampler_is_refused_with_the_smallest_budget(rho):
    """ZCDP(1e-40) (sigma = 1e20 counts here) and ZCDP(1e-300) released exactly +-2^63 / n, the
    int64 sampler saturated, while the summary stated sigma = 1e20 or 1e150. identity(2) under
    replace-one has l2 sensitivity sqrt(2), so sigma = 1 / sqrt(rho), and the least rho that fits
    is 1 / DISCRETE_SIGMA_LIMIT^2."""
    with pytest.raises(ValueError,
                       match=r"^privacy: at .*discrete_gaussian noise of scale .*use noise='continuous' or") as error:
        GaussianMechanism(identity(2), ZCDP(rho))
    smallest, least = smallest_budget_in(error, "rho"), 1.0 / DISCRETE_SIGMA_LIMIT**2
    assert least <= smallest <= 1.01 * least
    assert GaussianMechanism(identity(2), ZCDP(smallest)).noise.scale <= DISCRETE_SIGMA_LIMIT
    continuous = GaussianMechanism(identity(2), ZCDP(rho), noise="continuous")
    assert continuous.noise.scale == pytest.approx(1.0 / math.sqrt(rho), rel=1e-12)


def test_discrete_laplace_beyond_its_sampler_is_refused_with_the_smallest_budget():
    # l1 sensitivity 2 under replace-one: b = 2 / epsilon; the least epsilon is 2 / DISCRETE_B_LIMIT.
    with pytest.raises(ValueError,
                       match=r"^privacy: at 1e-20-DP, discrete_laplace noise of scale 2e\+20 is above") as error:
        LaplaceMechanism(identity(2), PureDP(1e-20))
    smallest, least = smallest_budget_in(error, "epsilon"), 2.0 / DISCRETE_B_LIMIT
    assert least <= smallest <= 1.01 * least
    assert LaplaceMechanism(identity(2), PureDP(smallest)).noise.scale <= DISCRETE_B_LIMIT


def test_continuous_noise_that_would_overflow_is_refused():
    """sigma = sqrt(2) 1e299 / sqrt(0.02) = 1e300 was accepted, and its draws overflowed to inf."""
    with pytest.raises(ValueError, match=r"^privacy: at 0.01-zCDP, gaussian noise of scale 1e\+300 is above") as error:
        GaussianMechanism(Workload(1e299 * np.eye(2)), ZCDP(0.01), noise="continuous")
    smallest = smallest_budget_in(error, "rho")
    assert (1e299 / CONTINUOUS_SIGMA_LIMIT) ** 2 <= smallest  # Delta^2 / (2 sigma^2), Delta = sqrt(2) 1e299
    mechanism = GaussianMechanism(Workload(1e299 * np.eye(2)), ZCDP(smallest), noise="continuous")
    assert np.all(np.isfinite(mechanism.release(np.array([0.5, 0.5]), n=2, rng=0).answers))
    with pytest.raises(ValueError, match=r"^privacy: at 1e-300-DP, laplace noise of scale 2e\+300 is above"):
        LaplaceMechanism(identity(2), PureDP(1e-300), noise="continuous")
    # And noise too small to be represented: sigma = 1e-315, subnormal.
    with pytest.raises(ValueError, match=r"^privacy: .*below float64's smallest normal number.*use a smaller budget"):
        GaussianMechanism(Workload(1e-300 * np.eye(2)), ZCDP(1e30), noise="continuous")


@pytest.mark.parametrize("distribution, scale, discrete", [
    ("gaussian", 1e20, True), ("gaussian", DISCRETE_SIGMA_LIMIT * 1.001, True), ("laplace", 1e16, True),
    ("gaussian", 1e300, False), ("laplace", 1e299, False), ("gaussian", 1e-310, False),
])
def test_noise_the_sampler_cannot_draw_as_stated_is_refused_naming_scale(distribution, scale, discrete):
    with pytest.raises(ValueError, match="^scale: "):
        Noise(distribution, scale, discrete)


@pytest.mark.parametrize("distribution, scale", [("gaussian", DISCRETE_SIGMA_LIMIT), ("laplace", DISCRETE_B_LIMIT)])
def test_discrete_draws_at_the_largest_scale_are_exact_and_unclipped(distribution, scale):
    """At the largest scale allowed the draws are integers far inside int64 (none saturated at
    +-2^63), stay exact when added to a count, and have the stated standard deviation (sigma, or
    sqrt(2) b to 1e-25 relative at this b): 16384 draws give it to 6 % (5 to 7 standard errors)."""
    noise = Noise(distribution, scale, discrete=True)
    draws = noise.sample(16384, np.random.default_rng(0))
    assert np.all(np.abs(draws) < 2.0**52) and np.all(draws == np.round(draws))
    assert np.array_equal((draws + 12345.0) - 12345.0, draws)
    expected = scale if distribution == "gaussian" else math.sqrt(2.0) * scale
    assert noise.std == pytest.approx(expected, rel=1e-9)
    assert abs(float(np.sqrt(np.mean(draws**2))) / expected - 1) < 0.06


# --- the pool of discrete draws hands every draw out once ---------------------------------------

def test_discrete_draws_are_not_shared_with_a_forked_child():
    noise = Noise("gaussian", 1e6, discrete=True)
    noise.sample(3, None)  # fills the pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its draws go to the parent through the pipe
        os.close(read)
        os.write(write, noise.sample(5, None).astype(np.int64).tobytes())
        os._exit(0)
    os.close(write)
    child = np.frombuffer(os.read(read, 40), dtype=np.int64)
    os.waitpid(pid, 0)
    parent = noise.sample(5, None).astype(np.int64)
    # Draws of sigma 1e6 coincide with probability about 1e-7 each: equal vectors mean shared noise.
    assert child.size == 5 and not np.any(child == parent)


#: A fresh interpreter (the first discrete draw of its process) in which a thread makes that first
#: draw while the main thread forks after DELAY seconds; the child draws with an alarm of 20 s
#: and exits 0 if it got its draws. A lock held across the fork by the drawing thread (an import
#: lock, OpenDP's) would leave the child waiting for it forever, killed by the alarm (-14).
_FORK_DURING_FIRST_DRAW = """
import os, signal, sys, threading, time
from projmech.privacy._noise import Noise
noise = Noise(sys.argv[2], 10.0, discrete=True)
thread = threading.Thread(target=noise.sample, args=(3, None))
thread.start()
time.sleep(float(sys.argv[1]))
pid = os.fork()
if pid == 0:
    signal.alarm(20)
    os._exit(0 if noise.sample(2, None).size == 2 else 3)
thread.join()
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.parametrize("delay, distribution", [(0.0, "gaussian"), (0.05, "laplace"), (0.2, "gaussian")])
def test_a_fork_while_another_thread_makes_the_first_draw_leaves_the_child_able_to_draw(delay, distribution):
    """Before OpenDP was imported with the sampler and a fork waited for the draws in progress, the
    child hung on its first draw at each of these delays."""
    result = subprocess.run([sys.executable, "-c", _FORK_DURING_FIRST_DRAW, str(delay), distribution],
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"], (result.stdout, result.stderr)


def test_a_fork_waits_until_no_other_thread_is_inside_opendp(monkeypatch):
    """A thread's draw is held inside OpenDP for 0.5 s; the main thread forks meanwhile. The fork
    returns only once that draw has left OpenDP, so that the child holds none of the locks OpenDP
    may hold while it samples, and the child can draw at once."""
    monkeypatch.setattr(noise_module, "_pools", {})
    real, inside, left = noise_module._opendp_measurement, threading.Event(), threading.Event()

    def slow(distribution, scale):
        measurement = real(distribution, scale)

        def call(zeros):
            inside.set()
            time.sleep(0.5)
            draws = measurement(zeros)
            left.set()
            return draws

        return call

    monkeypatch.setattr(noise_module, "_opendp_measurement", slow)
    thread = threading.Thread(target=Noise("laplace", 7.0, discrete=True).sample, args=(3, None))
    thread.start()
    assert inside.wait(10.0)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the draw had left OpenDP before the fork
        os._exit(0 if left.is_set() else 1)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    thread.join()
    assert status == 0


#: A draw held inside OpenDP for 1 s (its refill replaced by a slow one), in a fresh interpreter.
_SLOW_DRAWS = """
import os, signal, sys, threading, time
import numpy as np
import projmech.privacy._noise as noise_module

def slow(distribution, scale, size):
    time.sleep(1.0)
    return np.zeros(size)

noise_module._opendp_draws = slow
noise = noise_module.Noise("laplace", 5.0, discrete=True)
"""

_FORK_IN_A_SIGNAL_HANDLER = _SLOW_DRAWS + """
def handler(signum, frame):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    print("forked", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)

signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.2)
noise.sample(3, None)
print("drawn", flush=True)
"""

_CTRL_C_WHILE_A_FORK_WAITS = _SLOW_DRAWS + """
thread = threading.Thread(target=noise.sample, args=(3, None))
thread.start()
time.sleep(0.2)
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
pid = os.fork()
if pid == 0:
    os._exit(0)
print("waited", not thread.is_alive(), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
thread.join()
print("lock free", not noise_module._pool_lock.locked(), flush=True)
"""


def test_a_fork_from_a_signal_handler_during_a_draw_does_not_wait_for_its_own_thread():
    """The handler runs on the thread holding the pool lock: waiting for the lock would never end."""
    result = subprocess.run([sys.executable, "-c", _FORK_IN_A_SIGNAL_HANDLER], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.split() == ["forked", "0", "drawn"], (result.stdout, result.stderr)


def test_a_ctrl_c_while_a_fork_waits_does_not_let_the_fork_through_without_the_lock():
    """The fork still waits for the draw in progress, and the lock is released once, by its holder
    (a fork let through would release it in the parent under the drawing thread)."""
    result = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_A_FORK_WAITS], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.split() == ["waited", "True", "0", "lock", "free", "True"], (result.stdout, result.stderr)
    assert "release unlocked lock" not in result.stderr, result.stderr


def test_discrete_draws_are_not_shared_between_threads():
    noise = Noise("laplace", 1e6, discrete=True)
    noise.sample(4093, None)  # leave 3 draws in the pool: every thread below triggers a refill
    results = []
    threads = [threading.Thread(target=lambda: results.append(noise.sample(10, None))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    draws = np.concatenate(results)
    assert draws.size == 80 and np.unique(draws).size >= 78  # no draw handed to two threads


# --- the sampler threads --------------------------------------------------------------------------

def _sampler_threads_alive() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("projmech-noise")]


@pytest.fixture
def recorded_calls(monkeypatch):
    """Refills on 4 sampler threads in blocks of 256 draws, from empty pools, each call into
    OpenDP recorded as (thread name, draws asked, draws returned). The calling thread's calls wait
    (10 s at most) until a sampler thread has made one: the test sees the threads at work however
    busy the machine (else the caller might take every block before a thread starts)."""
    monkeypatch.setattr(noise_module, "_SAMPLER_THREADS", 4)
    monkeypatch.setattr(noise_module, "_BLOCK", 256)
    monkeypatch.setattr(noise_module, "_pools", {})
    real, caller, started = noise_module._opendp_measurement, threading.current_thread(), threading.Event()
    calls: list[tuple[str, int, np.ndarray]] = []

    def recording(distribution, scale):
        measurement = real(distribution, scale)

        def call(zeros):
            if threading.current_thread() is caller:
                started.wait(10.0)
            else:
                started.set()
            draws = measurement(zeros)
            calls.append((threading.current_thread().name, len(zeros), np.asarray(draws, dtype=float)))
            return draws

        return call

    monkeypatch.setattr(noise_module, "_opendp_measurement", recording)
    return calls


def test_the_default_is_one_sampler_thread_per_usable_core():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert noise_module._SAMPLER_THREADS == cores


def test_a_refill_is_drawn_in_blocks_over_the_sampler_threads_and_each_draw_handed_out_once(recorded_calls):
    noise = Noise("gaussian", 1e6, discrete=True)
    first = noise.sample(4000, None)  # a refill of 4096 draws: 16 blocks of 256
    second = noise.sample(96, None)  # the rest of the pool: no call into OpenDP
    assert sorted(size for _, size, _ in recorded_calls) == [256] * 16
    assert len({name for name, _, _ in recorded_calls}) >= 2  # the caller and a sampler thread at least
    # What was handed out is exactly what OpenDP returned, each draw once.
    returned = np.concatenate([draws for _, _, draws in recorded_calls])
    np.testing.assert_array_equal(np.sort(np.concatenate([first, second])), np.sort(returned))
    # The blocks are independent, not copies of one stream: draws of sigma 1e6 coincide with
    # probability about 3e-7, so two blocks agree at a position or two at most by chance.
    blocks = [draws for _, _, draws in recorded_calls]
    assert max(int(np.sum(a == b)) for i, a in enumerate(blocks) for b in blocks[:i]) <= 2
    assert not _sampler_threads_alive()  # every sampler thread joined before the call returned


@pytest.mark.parametrize("distribution,scale", [("gaussian", 2.5), ("laplace", 3.0)])
def test_draws_over_the_sampler_threads_follow_the_exact_pmf(recorded_calls, distribution, scale):
    """157 blocks of 256 draws over 4 threads, against the closed-form pmf (and the planted
    scale 10 % off, rejected by the same draws)."""
    draws = Noise(distribution, scale, discrete=True).sample(DRAWS, None)
    assert len({name for name, _, _ in recorded_calls}) >= 2
    assert _binned_p_value(draws, distribution, scale) > P_REJECT
    assert _binned_p_value(draws, distribution, PLANTED * scale) < P_REJECT


def test_a_failure_in_a_sampler_thread_reaches_the_caller_and_leaves_the_pool_as_it_was(monkeypatch):
    monkeypatch.setattr(noise_module, "_SAMPLER_THREADS", 2)
    monkeypatch.setattr(noise_module, "_pools", {("laplace", 2.0): np.array([5.0, -1.0])})
    real, caller, failed = noise_module._opendp_measurement, threading.current_thread(), threading.Event()

    def failing(distribution, scale):
        measurement = real(distribution, scale)

        def call(zeros):
            if threading.current_thread() is caller:
                failed.wait(10.0)  # a sampler thread fails first
                return measurement(zeros)
            failed.set()
            raise RuntimeError("no entropy")

        return call

    monkeypatch.setattr(noise_module, "_opendp_measurement", failing)
    with pytest.raises(RuntimeError, match="no entropy"):
        Noise("laplace", 2.0, discrete=True).sample(10_000, None)
    assert not noise_module._pool_lock.locked() and not _sampler_threads_alive()
    np.testing.assert_array_equal(noise_module._pools[("laplace", 2.0)], [5.0, -1.0])  # no partial refill
    monkeypatch.setattr(noise_module, "_opendp_measurement", real)
    assert Noise("laplace", 2.0, discrete=True).sample(3, None)[:2].tolist() == [5.0, -1.0]
