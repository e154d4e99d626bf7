"""Privacy definitions, neighbouring relations and noise calibration.

The analytic Gaussian calibration is checked against an independent implementation, Google's
``dp-accounting`` (a test-only dependency): its privacy-loss-distribution code computes the exact
(epsilon, delta) profile of the Gaussian mechanism and searches for the smallest standard
deviation itself. zCDP is checked in closed form and against dp-accounting's RDP accountant.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
import warnings

import numpy as np
import pytest

import projmech as pm
from projmech.privacy import (
    ZCDP,
    ApproxDP,
    LargeDeltaWarning,
    Neighbouring,
    PureDP,
    SizePolicy,
    gaussian_delta,
    gaussian_sigma,
    laplace_scale,
    zcdp_delta,
    zcdp_for_approx_dp,
)

plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
common = pytest.importorskip("dp_accounting.pld.common")
mp = pytest.importorskip("mpmath")

# The calibration is checked at large deltas too (0.1, 0.5, 0.999), which warn by design; the
# warning itself is tested below, where warnings are recorded whatever this filter says.
pytestmark = pytest.mark.filterwarnings("ignore::projmech.privacy.LargeDeltaWarning")

EPSILONS = [0.01, 0.05, 0.1, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-3, 0.1]
SENSITIVITIES = [0.01, 0.3, 1.0, 10.0]
GRID = list(itertools.product(EPSILONS, DELTAS, SENSITIVITIES))

# dp-accounting's from_privacy_guarantee stops its bisection at an ABSOLUTE tolerance of 1e-7 on
# the standard deviation (common.BinarySearchParameters.tolerance) and returns the upper end.
ORACLE_SEARCH_TOLERANCE = 1e-7


def oracle_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    return plm.GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=sensitivity).get_delta_for_epsilon(epsilon)


def oracle_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    guarantee = common.DifferentialPrivacyParameters(epsilon, delta)
    return plm.GaussianPrivacyLoss.from_privacy_guarantee(guarantee, sensitivity=sensitivity).standard_deviation


# --------------------------------------------------------------------------------------------
# Analytic Gaussian calibration against dp-accounting
# --------------------------------------------------------------------------------------------


def test_analytic_sigma_achieves_exactly_the_target_delta():
    worst = 0.0
    for epsilon, delta, sensitivity in GRID:
        sigma = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta))
        achieved = oracle_delta(sigma, sensitivity, epsilon)
        relative = abs(achieved - delta) / delta
        worst = max(worst, relative)
        assert relative <= 1e-6, (epsilon, delta, sensitivity, sigma, achieved)
    assert worst <= 1e-6


def test_analytic_sigma_is_minimal():
    """Shrinking sigma by one part in a million already breaks the guarantee (oracle's delta)."""
    for epsilon, delta, sensitivity in GRID:
        sigma = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta))
        assert oracle_delta(sigma * (1 - 1e-6), sensitivity, epsilon) > delta, (epsilon, delta, sensitivity)


def test_analytic_sigma_matches_oracle_search_at_unit_scale():
    """The Gaussian profile depends on sigma/Delta only, so compare sigma/Delta, for every
    sensitivity of the grid, with the oracle's search run at a sensitivity large enough that its
    1e-7 absolute bisection tolerance is below 1e-7 relative."""
    for epsilon, delta in itertools.product(EPSILONS, DELTAS):
        ratios = [gaussian_sigma(d, ApproxDP(epsilon, delta)) / d for d in SENSITIVITIES]
        scale = max(1.0, 1.0 / min(ratios))
        theirs = oracle_sigma(epsilon, delta, scale) / scale
        for sensitivity, ours in zip(SENSITIVITIES, ratios):
            assert abs(ours - theirs) / theirs <= 1e-6, (epsilon, delta, sensitivity, ours, theirs)


@pytest.mark.parametrize("sensitivity", [0.01, 10.0])
def test_analytic_sigma_matches_oracle_search_directly(sensitivity):
    """Same comparison at the actual sensitivity. The oracle returns the upper end of a bisection
    with absolute tolerance 1e-7, so agreement is 1e-6 relative up to that absolute slack (it
    matters only when sigma itself is tiny, e.g. Delta = 0.01 and epsilon = 20)."""
    for epsilon, delta in itertools.product([0.01, 0.5, 2.0, 20.0], [1e-12, 1e-3, 0.1]):
        ours = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta))
        theirs = oracle_sigma(epsilon, delta, sensitivity)
        assert abs(ours - theirs) <= 1e-6 * theirs + ORACLE_SEARCH_TOLERANCE, (epsilon, delta)
        # The oracle's answer satisfies the guarantee, and ours is the smallest that does.
        assert ours <= theirs * (1 + 1e-9)


def test_gaussian_delta_matches_oracle_profile():
    for sigma, sensitivity, epsilon in itertools.product([0.05, 0.3, 1.0, 4.0, 30.0], [0.1, 1.0, 7.0],
                                                        [0.01, 0.5, 1.0, 3.0, 10.0]):
        expected = oracle_delta(sigma, sensitivity, epsilon)
        if expected < 1e-250:  # below what either side resolves meaningfully
            continue
        got = gaussian_delta(sigma, sensitivity, epsilon)
        assert got == pytest.approx(expected, rel=1e-6, abs=0), (sigma, sensitivity, epsilon)


def test_gaussian_delta_is_the_inverse_of_gaussian_sigma():
    for epsilon, delta in itertools.product([0.1, 1.0, 8.0], [1e-10, 1e-5, 0.05]):
        sigma = gaussian_sigma(2.5, ApproxDP(epsilon, delta))
        assert gaussian_delta(sigma, 2.5, epsilon) == pytest.approx(delta, rel=1e-9)


def test_sigma_scales_linearly_with_sensitivity():
    privacy = ApproxDP(0.7, 1e-7)
    base = gaussian_sigma(1.0, privacy)
    for sensitivity in [1e-3, 0.2, 3.0, 250.0]:
        assert gaussian_sigma(sensitivity, privacy) == pytest.approx(sensitivity * base, rel=1e-10)


def test_sigma_decreases_with_epsilon_and_delta():
    sigmas_eps = [gaussian_sigma(1.0, ApproxDP(e, 1e-6)) for e in EPSILONS]
    assert all(a > b for a, b in zip(sigmas_eps, sigmas_eps[1:]))
    sigmas_delta = [gaussian_sigma(1.0, ApproxDP(1.0, d)) for d in DELTAS]
    assert all(a > b for a, b in zip(sigmas_delta, sigmas_delta[1:]))


def test_zero_sensitivity_needs_no_noise():
    assert gaussian_sigma(0.0, ApproxDP(1.0, 1e-6)) == 0.0
    assert gaussian_sigma(0.0, ZCDP(0.5)) == 0.0
    assert laplace_scale(0.0, PureDP(1.0)) == 0.0


# --------------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.5, 1.0, 3.0, 100.0])
@pytest.mark.parametrize("sensitivity", [0.02, 1.0, 6.0])
def test_zcdp_sigma_closed_form(rho, sensitivity):
    assert gaussian_sigma(sensitivity, ZCDP(rho)) == pytest.approx(sensitivity / math.sqrt(2 * rho), rel=1e-14)


def test_zcdp_sigma_against_rdp_accountant():
    """N(0, sigma^2) with sensitivity Delta has Renyi divergence alpha Delta^2 / (2 sigma^2) at
    every order alpha: rho-zCDP means exactly rho * alpha (Bun & Steinke 2016)."""
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    rdp = pytest.importorskip("dp_accounting.rdp")
    orders = [1.25, 2.0, 4.0, 16.0, 128.0]
    for rho, sensitivity in itertools.product([0.005, 0.2, 2.0], [0.1, 3.0]):
        sigma = gaussian_sigma(sensitivity, ZCDP(rho))
        accountant = rdp.RdpAccountant(orders=orders)
        accountant.compose(dp_event.GaussianDpEvent(noise_multiplier=sigma / sensitivity))
        np.testing.assert_allclose(np.asarray(accountant.rdp) / np.asarray(orders), rho, rtol=1e-9)


# --------------------------------------------------------------------------------------------
# Classical calibration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.1])
def test_classical_formula_and_looser_than_analytic(epsilon, delta):
    sensitivity = 0.37
    classical = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta), method="classical")
    assert classical == pytest.approx(sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon, rel=1e-14)
    analytic = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta))
    assert classical >= analytic
    # And the classical sigma really is (epsilon, delta)-DP according to the oracle.
    assert oracle_delta(classical, sensitivity, epsilon) <= delta


@pytest.mark.parametrize("epsilon", [1.0, 1.5, 10.0])
def test_classical_refuses_epsilon_at_least_one(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_sigma(1.0, ApproxDP(epsilon, 1e-6), method="classical")


def test_classical_with_zcdp_is_the_zcdp_formula():
    assert gaussian_sigma(2.0, ZCDP(0.5), method="classical") == pytest.approx(2.0)


def test_unknown_method_rejected():
    with pytest.raises(ValueError, match="method"):
        gaussian_sigma(1.0, ApproxDP(0.5, 1e-6), method="exact")


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 7.0])
@pytest.mark.parametrize("sensitivity", [0.02, 1.0, 12.0])
def test_laplace_scale_formula(epsilon, sensitivity):
    assert laplace_scale(sensitivity, PureDP(epsilon)) == pytest.approx(sensitivity / epsilon, rel=1e-15)
    assert laplace_scale(sensitivity, epsilon) == pytest.approx(sensitivity / epsilon, rel=1e-15)


@pytest.mark.parametrize("epsilon, sensitivity", [(0.1, 1.0), (1.0, 0.5), (5.0, 3.0)])
def test_laplace_scale_is_tight_against_oracle(epsilon, sensitivity):
    """With b = Delta/epsilon the oracle's delta at epsilon is 0; any smaller b is not epsilon-DP."""
    b = laplace_scale(sensitivity, PureDP(epsilon))
    assert plm.LaplacePrivacyLoss(parameter=b, sensitivity=sensitivity).get_delta_for_epsilon(epsilon) <= 1e-12
    smaller = plm.LaplacePrivacyLoss(parameter=b * (1 - 1e-4), sensitivity=sensitivity)
    assert smaller.get_delta_for_epsilon(epsilon) > 1e-8


def test_laplace_rejects_non_pure_guarantees():
    with pytest.raises(TypeError, match="PureDP"):
        laplace_scale(1.0, ApproxDP(1.0, 1e-6))
    with pytest.raises(TypeError, match="PureDP"):
        laplace_scale(1.0, ZCDP(1.0))


@pytest.mark.parametrize("bad", [-1.0, -1e-12, float("nan"), float("inf")])
def test_laplace_rejects_bad_sensitivity(bad):
    with pytest.raises(ValueError, match="l1_sensitivity"):
        laplace_scale(bad, PureDP(1.0))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_laplace_rejects_bad_float_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1.0, bad)


# --------------------------------------------------------------------------------------------
# Validation of the guarantees
# --------------------------------------------------------------------------------------------

BAD_POSITIVE = [0, 0.0, -1.0, -1e-300, float("nan"), float("inf"), float("-inf")]


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_zcdp_rejects_bad_rho(bad):
    with pytest.raises(ValueError, match="rho"):
        ZCDP(bad)


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_approxdp_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        ApproxDP(bad, 1e-6)


@pytest.mark.parametrize("bad", BAD_POSITIVE + [1, 1.0, 1.5, 100.0])
def test_approxdp_rejects_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(1.0, bad)


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_puredp_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        PureDP(bad)


@pytest.mark.parametrize("bad", ["1.0", None, [1.0], True, 1 + 0j])
def test_guarantees_reject_non_numbers(bad):
    with pytest.raises(TypeError, match="rho"):
        ZCDP(bad)
    with pytest.raises(TypeError, match="epsilon"):
        ApproxDP(bad, 1e-6)
    with pytest.raises(TypeError, match="delta"):
        ApproxDP(1.0, bad)
    with pytest.raises(TypeError, match="epsilon"):
        PureDP(bad)


def test_guarantees_accept_numpy_and_int_and_store_floats():
    privacy = ApproxDP(np.float32(0.5), np.float64(1e-6))
    assert type(privacy.epsilon) is float and privacy.epsilon == 0.5
    assert type(privacy.delta) is float and privacy.delta == 1e-6
    assert ZCDP(np.int64(2)).rho == 2.0 and type(ZCDP(2).rho) is float
    assert PureDP(3).epsilon == 3.0


def test_guarantees_are_frozen_and_printable():
    privacy = ApproxDP(1.0, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        privacy.epsilon = 2.0  # type: ignore[misc]
    assert str(privacy) == "(1, 1e-06)-DP"
    assert str(ZCDP(0.25)) == "0.25-zCDP"
    assert str(PureDP(2)) == "2-DP"


def test_gaussian_sigma_rejects_pure_dp():
    with pytest.raises(TypeError, match="PureDP"):
        gaussian_sigma(1.0, PureDP(1.0))
    with pytest.raises(TypeError):
        gaussian_sigma(1.0, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1.0, -1e-9, float("nan"), float("inf")])
def test_gaussian_sigma_rejects_bad_sensitivity(bad):
    with pytest.raises(ValueError, match="l2_sensitivity"):
        gaussian_sigma(bad, ApproxDP(1.0, 1e-6))
    with pytest.raises(ValueError, match="l2_sensitivity"):
        gaussian_sigma(bad, ZCDP(1.0))


# --------------------------------------------------------------------------------------------
# Neighbouring relations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm, n", [(1.0, 1), (3.0, 10), (math.sqrt(45), 48842), (0.5, np.int64(7))])
def test_neighbouring_sensitivity(norm, n):
    assert Neighbouring.REPLACE_ONE.sensitivity(norm, n) == pytest.approx(2 * norm / int(n), rel=1e-15)
    assert Neighbouring.ADD_REMOVE.sensitivity(norm, n) == pytest.approx(norm / int(n), rel=1e-15)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError), (-100, ValueError),
                                        (2.5, TypeError), (10.0, TypeError), (True, TypeError),
                                        ("10", TypeError), (None, TypeError)])
def test_neighbouring_sensitivity_rejects_bad_n(bad, error):
    # A count of the wrong type is a TypeError, a count below 1 a ValueError.
    for relation in Neighbouring:
        with pytest.raises(error, match="^n: "):
            relation.sensitivity(1.0, bad)


def test_neighbouring_parse():
    assert Neighbouring.parse("replace-one") is Neighbouring.REPLACE_ONE
    assert Neighbouring.parse("add-remove") is Neighbouring.ADD_REMOVE
    assert Neighbouring.parse(Neighbouring.ADD_REMOVE) is Neighbouring.ADD_REMOVE
    for bad in ["foo", "replace_one", ""]:
        with pytest.raises(ValueError, match="^neighbouring: expected one of"):
            Neighbouring.parse(bad)
    for bad in [None, 1, True]:
        with pytest.raises(TypeError, match="^neighbouring: expected one of"):
            Neighbouring.parse(bad)


# --------------------------------------------------------------------------------------------
# Argument checks: one rule for the same mistake, options by keyword
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, named",
    [
        (lambda: SizePolicy.parse("add-remove", 2.0), TypeError, "size"),
        (lambda: SizePolicy.parse("add-remove", True), TypeError, "size"),
        (lambda: SizePolicy.parse("add-remove", 0), ValueError, "size"),
        (lambda: SizePolicy.parse("add-remove", "guess"), ValueError, "size"),
        (lambda: SizePolicy.parse("add-remove", "estimate", size_share=1.0), ValueError, "size_share"),
        (lambda: SizePolicy.parse("add-remove", "estimate", size_share="half"), TypeError, "size_share"),
        (lambda: SizePolicy.parse(3, None), TypeError, "neighbouring"),
        (lambda: SizePolicy.parse("replace-one", None).check_dataset_n(2.0, 2), TypeError, "n"),
        (lambda: SizePolicy.parse("replace-one", None).check_dataset_n(3, 2), ValueError, "n"),
        (lambda: gaussian_delta(0.0, 1.0, 1.0), ValueError, "sigma"),
        (lambda: gaussian_delta(1.0, -1.0, 1.0), ValueError, "l2_sensitivity"),
        (lambda: gaussian_delta(1.0, 1.0, True), TypeError, "epsilon"),
        (lambda: gaussian_sigma(1.0, ZCDP(1.0), method="exact"), ValueError, "method"),
        (lambda: gaussian_sigma(1.0, ZCDP(1.0), discrete=1), TypeError, "discrete"),
        (lambda: gaussian_sigma(True, ZCDP(1.0)), TypeError, "l2_sensitivity"),
        (lambda: zcdp_for_approx_dp(ZCDP(1.0)), TypeError, "privacy"),
        (lambda: ApproxDP(1.0, 0.0), ValueError, "delta"),
        (lambda: ApproxDP(1.0, 1), ValueError, "delta"),
        (lambda: PureDP(True), TypeError, "epsilon"),
        (lambda: ZCDP("1"), TypeError, "rho"),
        (lambda: laplace_scale(1.0, "1"), TypeError, "epsilon"),
        (lambda: Neighbouring.REPLACE_ONE.count_sensitivity(1.0, 3), ValueError, "ord"),
        (lambda: Neighbouring.REPLACE_ONE.count_sensitivity(1.0, True), TypeError, "ord"),
        (lambda: Neighbouring.REPLACE_ONE.count_sensitivity(1.0, nonnegative="yes"), TypeError, "nonnegative"),
    ],
)
def test_privacy_arguments_are_checked_by_one_rule(call, error, named):
    with pytest.raises(error, match=f"^{named}: "):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: gaussian_sigma(1.0, ZCDP(1.0), "analytic"),
        lambda: SizePolicy.parse("add-remove", "estimate", 0.1),
        lambda: Neighbouring.REPLACE_ONE.count_sensitivity(1.0, 2, True),
        lambda: Neighbouring.REPLACE_ONE.sensitivity(1.0, 10, 2),
    ],
)
def test_privacy_options_are_keyword_only(call):
    with pytest.raises(TypeError, match="positional"):
        call()


def test_privacy_options_by_keyword_give_the_documented_values():
    assert gaussian_sigma(1.0, ZCDP(0.5), method="analytic", discrete=False) == 1.0  # 1 / sqrt(2 rho)
    assert SizePolicy.parse("add-remove", "estimate", size_share=0.1).share == 0.1
    assert Neighbouring.REPLACE_ONE.count_sensitivity(2.0, 2, nonnegative=True) == pytest.approx(2.0 * math.sqrt(2))
    assert Neighbouring.ADD_REMOVE.sensitivity(3.0, 10, ord=1) == pytest.approx(0.3)


def test_size_policy_built_directly_is_checked_in_its_constructor():
    assert SizePolicy("add-remove", declared=np.int64(100)).declared == 100
    assert SizePolicy(Neighbouring.ADD_REMOVE, share=0.1).estimated
    for arguments, error, named in [
            ({"neighbouring": "swap"}, ValueError, "neighbouring"),
            ({"neighbouring": "add-remove", "declared": 10.0}, TypeError, "declared"),
            ({"neighbouring": "add-remove", "declared": 0}, ValueError, "declared"),
            ({"neighbouring": "add-remove", "share": 1.0}, ValueError, "share"),
            ({"neighbouring": "add-remove", "share": True}, TypeError, "share"),
            ({"neighbouring": "replace-one", "declared": 10}, ValueError, "declared"),
            ({"neighbouring": "add-remove", "declared": 10, "share": 0.1}, ValueError, "declared")]:
        with pytest.raises(error, match=f"^{named}"):
            SizePolicy(**arguments)


def test_analytic_sigma_errs_only_on_the_safe_side():
    """The root finder's last rounding step never leaves the privacy profile above delta (it did by
    up to 6e-13 relative in 37 of 66 cases before sigma was stepped up)."""
    for epsilon in np.geomspace(0.01, 20, 9):
        for delta in np.geomspace(1e-12, 1e-2, 5):
            for sensitivity in (1.0, math.sqrt(2.0), 3.7):
                sigma = gaussian_sigma(sensitivity, ApproxDP(float(epsilon), float(delta)))
                assert gaussian_delta(sigma, sensitivity, float(epsilon)) <= delta
                # and only a hair above the least safe sigma
                assert gaussian_delta(sigma * (1 - 1e-9), sensitivity, float(epsilon)) > delta


def test_a_budget_share_lies_in_the_unit_interval():
    from projmech.privacy import scale_budget

    assert scale_budget(ZCDP(1.0), 1.0) == ZCDP(1.0)
    for share in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"^share: must lie in \(0, 1\]"):
            scale_budget(ZCDP(1.0), share)
    with pytest.raises(TypeError, match="^share"):
        scale_budget(PureDP(1.0), "half")


# --------------------------------------------------------------------------------------------
# Calibration at the extremes, against arbitrary precision (mpmath)
# --------------------------------------------------------------------------------------------


def mp_gaussian_delta(sigma: float, sensitivity: float, epsilon: float):
    """``Phi(a) - e^epsilon Phi(b)`` for the exact sigma / Delta of the floats given, in mpmath,
    the precision doubled until two evaluations agree to 25 digits (the two terms can agree to
    600 digits: epsilon = 1e-300 with sigma = 1e299)."""
    def at(dps: int):
        with mp.workdps(dps):
            h, e = mp.mpf(sensitivity) / mp.mpf(sigma), mp.mpf(epsilon)
            return mp.ncdf(h / 2 - e / h) - mp.exp(e) * mp.ncdf(-h / 2 - e / h)

    dps, previous = 40, at(40)
    while True:
        dps *= 2
        current = at(dps)
        if current != 0 and abs(current - previous) <= abs(current) * mp.mpf(10) ** -25:
            return current
        assert dps < 10_000, (sigma, sensitivity, epsilon)
        previous = current


def mp_zcdp_delta(rho: float, epsilon: float):
    """The conversion of Canonne, Kamath & Steinke (2020) from rho-zCDP to (epsilon, delta):
    ``inf over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon) - log alpha + (alpha - 1)
    log(1 - 1/alpha))``, in mpmath, at the alpha where the derivative
    ``(2 alpha - 1) rho - epsilon + log(1 - 1/alpha)`` (increasing in alpha) vanishes, found by
    bisection in ``log(alpha - 1)``."""
    with mp.workdps(60):
        rho, epsilon = mp.mpf(rho), mp.mpf(epsilon)

        def slope(t):
            alpha = 1 + mp.exp(t)
            return (2 * alpha - 1) * rho - epsilon + mp.log1p(-1 / alpha)

        low, high = mp.mpf(-50), mp.mpf(50)
        while slope(low) > 0:
            low *= 2
        while slope(high) < 0:
            high *= 2
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (low, middle) if slope(middle) > 0 else (middle, high)
        alpha = 1 + mp.exp(low)
        return mp.exp((alpha - 1) * (alpha * rho - epsilon) - mp.log(alpha) + (alpha - 1) * mp.log1p(-1 / alpha))


EXTREME_EPSILONS = [5e-324, 1e-300, 1e-100, 1e-12, 1e-3, 1.0, 30.0, 1e3, 1e5, 1e10]
EXTREME_DELTAS = [1e-300, 1e-100, 1e-12, 1e-6, 0.3]


@pytest.mark.parametrize("epsilon", EXTREME_EPSILONS)
def test_analytic_calibration_at_the_extremes_never_exceeds_delta(epsilon):
    """At every (epsilon, delta) of a grid from 5e-324 to 1e10 and from 1e-300 to 0.3, the delta
    the returned sigma achieves (by mpmath) is at most the delta claimed, and within 1e-5 of it
    (the rounding allowance the calibration adds grows with epsilon: 3e-6 at 1e10). Before, every
    epsilon <= 1e-300 got sigma = 3.6e15 whatever delta (achieved 1.1e-16 at a claimed 1e-300),
    and (1e-12, 1e-100) achieved 1.129e-100."""
    for delta, sensitivity in itertools.product(EXTREME_DELTAS, [1.0, 3.7]):
        sigma = gaussian_sigma(sensitivity, ApproxDP(epsilon, delta))
        achieved = mp_gaussian_delta(sigma, sensitivity, epsilon)
        assert achieved <= delta, (epsilon, delta, sensitivity, sigma, float(achieved / delta))
        assert achieved >= delta * (1 - 1e-5), (epsilon, delta, sensitivity, sigma, float(achieved / delta))


@pytest.mark.parametrize("sigma, sensitivity, epsilon", [
    (1.9628979117860810e13, 1.0, 1e-12),  # the sigma the old calibration gave (1e-12, 1e-100): 1.129e-100
    (3.6e15, 1.0, 1e-300), (4e299, 1.0, 1e-300), (2.5e13, 1.0, 1e-12), (3.6e7, 1.0, 1e-6),
    (1e5, 3.0, 1e-4), (30.0, 1.0, 0.01), (0.9, 1.0, 1e-300), (5.0, 1.0, 0.01), (0.03, 1.0, 1e3),
])
def test_gaussian_delta_where_the_terms_nearly_cancel(sigma, sensitivity, epsilon):
    """The profile against mpmath where Phi(a) and e^epsilon Phi(b) agree to many digits (a sigma
    far above Delta with a tiny epsilon), and at ordinary points: 1e-10 relative."""
    expected = mp_gaussian_delta(sigma, sensitivity, epsilon)
    got = gaussian_delta(sigma, sensitivity, epsilon)
    assert abs(got - expected) <= 1e-10 * expected, (got, float(expected))


@pytest.mark.parametrize("epsilon", [5e-324, 1e-300, 1e-100, 1e-12, 1e-3, 1.0, 30.0, 1e3, 1e5])
def test_discrete_calibration_at_the_extremes_never_exceeds_delta(epsilon):
    """The rho of the discrete Gaussian's calibration converts (by mpmath) to at most the delta
    claimed, and within 1e-6 of it; where the rho needed is below float64's normal range (delta
    = 1e-300 at a tiny epsilon: about (e^0.5 delta)^2 / 2 = 1e-600), a ValueError naming privacy,
    where a bare ZeroDivisionError was raised before."""
    for delta in EXTREME_DELTAS:
        privacy = ApproxDP(epsilon, delta)
        try:
            rho = zcdp_for_approx_dp(privacy)
        except ValueError as error:
            assert str(error).startswith("privacy: ") and "too small to calibrate" in str(error)
            # The refusal is right: even the smallest normal rho converts to more than delta.
            assert mp_zcdp_delta(2.3e-308, epsilon) > delta, (epsilon, delta)
            with pytest.raises(ValueError, match="^privacy: "):
                gaussian_sigma(1.0, privacy, discrete=True)
            continue
        achieved = mp_zcdp_delta(rho, epsilon)
        assert achieved <= delta, (epsilon, delta, rho, float(achieved / delta))
        assert achieved >= delta * (1 - 1e-6), (epsilon, delta, rho, float(achieved / delta))
        # The conversion as the library evaluates it agrees with mpmath's.
        assert zcdp_delta(rho, epsilon) == pytest.approx(float(achieved), rel=1e-9, abs=0)


def test_calibration_beyond_float64_is_refused_naming_privacy():
    # sigma / Delta would be about 0.4 / delta = 8e322: beyond float64.
    with pytest.raises(ValueError, match=r"^privacy: \(4.94066e-324, 4.94066e-324\)-DP is too small"):
        gaussian_sigma(1.0, ApproxDP(5e-324, 5e-324))
    with pytest.raises(ValueError, match=r"^privacy: .*infinite scale \(rho is too small\)"):
        gaussian_sigma(1e300, ZCDP(1e-300))


# --------------------------------------------------------------------------------------------
# A delta that protects nobody
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0.5, 1 - 1e-16, 0.0011])
def test_a_large_delta_warns_at_construction_saying_why_and_what_to_do(delta):
    with pytest.warns(LargeDeltaWarning) as caught:
        privacy = ApproxDP(1.0, delta)
    assert privacy.delta == delta  # a warning, not a refusal
    message = str(caught[0].message)
    assert message.startswith("delta: ") and "total failure of privacy" in message
    assert "releasing a row outright" in message and "1/n^2" in message
    assert caught[0].filename == __file__  # points at the caller, not at the dataclass
    # The argument and its part as data, for a caller that points at what the user gave.
    warning = caught[0].message
    assert (warning.argument, warning.part) == ("privacy", "delta") and message == f"delta: {warning.detail}"
    copy = pickle.loads(pickle.dumps(warning))
    assert type(copy) is LargeDeltaWarning and (copy.part, copy.detail) == (warning.part, warning.detail)
    # warnings.warn(message, category) builds it from the message alone.
    with pytest.warns(LargeDeltaWarning, match="^mine$") as own:
        warnings.warn("mine", LargeDeltaWarning, stacklevel=1)
    assert own[0].message.part is None and str(pickle.loads(pickle.dumps(own[0].message))) == "mine"


def test_a_small_delta_does_not_warn_and_delta_one_is_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ApproxDP(1.0, 1e-3)
        ApproxDP(1.0, 1e-6)
    for bad in (1, 1.0, 1 - 1e-17):  # 1 - 1e-17 rounds to 1.0
        with pytest.raises(ValueError, match=r"^delta: must lie in \(0, 1\) \(delta is the probability of a total "
                                             r"failure"):
            ApproxDP(1.0, bad)


def test_size_policy_check_delta_compares_only_a_public_size():
    def caught(policy, privacy, rows):
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            policy.check_delta(privacy, rows)
        return [record for record in records if issubclass(record.category, LargeDeltaWarning)]

    privacy = ApproxDP(1.0, 1e-3)
    replace_one = SizePolicy("replace-one")
    assert caught(replace_one, privacy, 999) == []
    [warning] = caught(replace_one, privacy, 1000)  # delta = 1/n exactly
    assert "n = 1000 (public n)" in str(warning.message) and "1/n^2 = 1e-06" in str(warning.message)
    assert len(caught(SizePolicy("add-remove", declared=5000), privacy, 3)) == 1  # the declared size, not the rows
    assert caught(SizePolicy("add-remove", declared=10), privacy, 10**6) == []
    assert caught(SizePolicy("add-remove", share=0.05), privacy, 10**6) == []  # estimated: private, never compared
    assert caught(replace_one, ZCDP(0.5), 10**6) == [] and caught(replace_one, PureDP(1.0), 10**6) == []


def test_compose_adds_epsilons_and_rhos_and_refuses_a_mix():
    """Sequential composition by hand: 0.1 + 0.2 + 0.3 and 0.25 + 0.5; the inverse of scale_budget."""
    from projmech.privacy import compose, scale_budget

    assert compose([pm.PureDP(0.1), pm.PureDP(0.2), pm.PureDP(0.3)]).epsilon == pytest.approx(0.6, rel=1e-15)
    assert compose([pm.ZCDP(0.25), pm.ZCDP(0.5)]).rho == 0.75
    parts = [scale_budget(pm.ZCDP(2.0), share) for share in (0.05, 0.45, 0.5)]
    assert compose(parts).rho == pytest.approx(2.0, rel=1e-15)
    with pytest.raises(ValueError, match="^guarantees: cannot compose PureDP and ZCDP"):
        compose([pm.PureDP(1.0), pm.ZCDP(1.0)])
    with pytest.raises(ValueError, match="^guarantees: nothing to compose"):
        compose([])
    with pytest.raises(TypeError, match="^guarantees: expected PureDP or ZCDP guarantees, got ApproxDP"):
        compose([pm.ApproxDP(1.0, 1e-6)])
    with pytest.raises(TypeError, match="^guarantees: expected a sequence"):
        compose(pm.PureDP(1.0))


def test_public_size_is_the_row_count_the_declared_size_or_a_noisy_estimate():
    """Replace-one: the rows; a declared size: itself whatever the rows; an estimate: rows plus
    one draw of its noise, at least 1 (with continuous noise from a seed, the draw is known)."""
    from projmech.privacy import Noise, SizePolicy, public_size

    rng = np.random.default_rng(0)
    assert public_size(SizePolicy.parse("replace-one", None), 7, None, rng) == 7.0
    assert public_size(SizePolicy.parse("add-remove", 100), 7, None, rng) == 100.0
    noise = Noise("laplace", 3.0, False)
    expected = max(1.0, 40 + np.random.default_rng(5).laplace(0.0, 3.0))
    assert public_size(SizePolicy.parse("add-remove", "estimate"), 40, noise, np.random.default_rng(5)) == expected
    with pytest.raises(ValueError, match="^size_noise: an estimated size needs the noise"):
        public_size(SizePolicy.parse("add-remove", "estimate"), 40, None, rng)
