"""Tests of projmech.audit._auditor: Clopper–Pearson intervals, validity (the lower bound holds) and power
(planted bugs are found) on mechanisms with known privacy, and argument validation.

Mechanisms are written here from scratch (numpy only; nothing from the rest of projmech), as a
user of the auditor would; the Gaussian calibration is the Balle & Wang (2018) condition, written
out with scipy.stats.norm.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from projmech.audit import (
    AuditError,
    AuditResult,
    Counts,
    Event,
    audit,
    audit_delta,
    clopper_pearson,
    format_audit_table,
)

# --------------------------------------------------------------------------------------------- #
# Toy mechanisms                                                                                #
# --------------------------------------------------------------------------------------------- #


def randomized_response(epsilon: float):
    """A bit kept with probability e^eps / (1 + e^eps): exactly eps-DP (vectorized)."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def mechanism(bit, rng, size):
        return np.where(rng.random(size) < keep, bit, 1 - bit)

    return mechanism


def laplace_count(epsilon: float):
    """count + Laplace(1 / eps): eps-DP on counts differing by 1 (vectorized)."""
    def mechanism(count, rng, size):
        return count + rng.laplace(0.0, 1.0 / epsilon, size)

    return mechanism


def gaussian_count(sigma: float):
    def mechanism(count, rng, size):
        return count + rng.normal(0.0, sigma, size)

    return mechanism


def balle_wang_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    return float(stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b))


def balle_wang_sigma(epsilon: float, delta: float) -> float:
    return optimize.brentq(lambda s: balle_wang_delta(s, epsilon) - delta, 1e-3, 1e3, xtol=1e-13)


# --------------------------------------------------------------------------------------------- #
# Clopper–Pearson                                                                               #
# --------------------------------------------------------------------------------------------- #


@pytest.mark.parametrize("trials", [1, 7, 50, 1000])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.99, 0.999999])
def test_clopper_pearson_matches_scipy_binomtest(trials, confidence):
    for successes in sorted({0, 1, trials // 3, trials // 2, trials - 1, trials}):
        lower, upper = clopper_pearson(successes, trials, confidence)
        interval = stats.binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="exact")
        # binomtest finds the ends by root finding (tolerance about 1e-12 on the probability scale)
        assert lower == pytest.approx(interval.low, abs=1e-9)
        assert upper == pytest.approx(interval.high, abs=1e-9)
        assert 0.0 <= lower <= successes / trials <= upper <= 1.0


def test_clopper_pearson_is_exact_at_the_ends():
    assert clopper_pearson(0, 20, 0.95)[0] == 0.0
    assert clopper_pearson(20, 20, 0.95)[1] == 1.0
    # (alpha / 2)^(1/n) and 1 - (alpha / 2)^(1/n) in closed form
    assert clopper_pearson(0, 20, 0.95)[1] == pytest.approx(1 - 0.025 ** (1 / 20), rel=1e-12)
    assert clopper_pearson(20, 20, 0.95)[0] == pytest.approx(0.025 ** (1 / 20), rel=1e-12)


@pytest.mark.parametrize("trials,confidence", [(10, 0.9), (40, 0.95), (200, 0.8)])
def test_clopper_pearson_exact_coverage_is_at_least_nominal(trials, confidence):
    """Coverage computed exactly from the binomial pmf, on a grid of true proportions."""
    intervals = np.array([clopper_pearson(k, trials, confidence) for k in range(trials + 1)])
    for p in np.linspace(0.001, 0.999, 97):
        pmf = stats.binom.pmf(np.arange(trials + 1), trials, p)
        covered = (intervals[:, 0] <= p) & (p <= intervals[:, 1])
        assert pmf[covered].sum() >= confidence - 1e-12


def test_clopper_pearson_simulated_coverage():
    rng = np.random.default_rng(0)
    trials, p, confidence, runs = 40, 0.2, 0.9, 4000
    intervals = {k: clopper_pearson(k, trials, confidence) for k in range(trials + 1)}
    draws = rng.binomial(trials, p, size=runs)
    coverage = np.mean([intervals[k][0] <= p <= intervals[k][1] for k in draws])
    assert coverage >= confidence - 3 * math.sqrt(confidence * (1 - confidence) / runs)


# --------------------------------------------------------------------------------------------- #
# Validity and power on mechanisms of known privacy                                            #
# --------------------------------------------------------------------------------------------- #


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_randomized_response_bound_holds_across_seeds(epsilon):
    """At confidence 0.9, at most 10 % of runs may exceed the true eps; 6 of 20 has probability < 1 %."""
    mechanism = randomized_response(epsilon)
    bounds = [audit(mechanism, (0, 1), releases=20_000, batch=20_000, confidence=0.9, rng=seed).epsilon_lower_bound
              for seed in range(20)]
    assert sum(bound > epsilon for bound in bounds) <= 5
    assert min(bounds) > 0.8 * epsilon  # and every run finds most of it


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_randomized_response_bound_is_close_with_enough_releases(epsilon):
    result = audit(randomized_response(epsilon), (0, 1), releases=200_000, batch=100_000,
                   claimed_epsilon=epsilon, rng=7)
    assert 0.95 * epsilon <= result.epsilon_lower_bound <= epsilon  # 0.97 to 0.998 over 20 seeds
    assert result.passed is True
    assert result.counts.trials == 100_000
    assert result.p_lower <= result.counts.p_successes / 100_000
    assert result.q_upper >= result.counts.q_successes / 100_000


def test_null_mechanism_rarely_gives_a_positive_bound():
    """Output independent of the data (eps = 0): a positive bound is a failure, allowed at rate 1 - confidence."""
    def noise(data, rng, size):
        return rng.normal(0.0, 1.0, size)

    bounds = [audit(noise, (0, 1), releases=2_000, batch=2_000, confidence=0.5, rng=seed).epsilon_lower_bound
              for seed in range(60)]
    # at most 50 % allowed; Bonferroni and Clopper–Pearson make the true rate far smaller
    assert sum(bound > 0 for bound in bounds) <= 30


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_laplace_count_passes_and_planted_bug_is_detected(epsilon):
    correct = audit(laplace_count(epsilon), (0, 1), releases=200_000, batch=100_000,
                    claimed_epsilon=epsilon, rng=11)
    assert correct.epsilon_lower_bound <= epsilon
    assert correct.epsilon_lower_bound >= 0.85 * epsilon  # 0.90 to 0.99 over 20 seeds
    assert correct.passed is True

    buggy = audit(laplace_count(2 * epsilon), (0, 1), releases=200_000, batch=100_000,  # scale halved
                  claimed_epsilon=epsilon, rng=11)
    assert buggy.epsilon_lower_bound > 1.5 * epsilon  # 1.91 to 1.99 over 20 seeds
    assert buggy.epsilon_lower_bound <= 2 * epsilon
    assert buggy.passed is False
    assert "FAILED" in buggy.summary()


def test_gaussian_with_analytic_calibration_passes_and_halved_sigma_is_detected():
    epsilon, delta = 1.0, 1e-5
    sigma = balle_wang_sigma(epsilon, delta)
    assert balle_wang_delta(sigma, epsilon) == pytest.approx(delta, rel=1e-8)

    correct = audit(gaussian_count(sigma), (0, 1), releases=200_000, batch=100_000, delta=delta,
                    claimed_epsilon=epsilon, rng=5)
    assert correct.epsilon_lower_bound <= epsilon
    assert correct.passed is True

    buggy = audit(gaussian_count(sigma / 2), (0, 1), releases=200_000, batch=100_000, delta=delta,
                  claimed_epsilon=epsilon, rng=5)
    assert buggy.epsilon_lower_bound > 1.1 * epsilon  # 1.19 to 1.39 over 20 seeds (true: 2.16)
    assert buggy.passed is False
    # the equivalent statement on delta
    assert buggy.delta_lower_bound > delta


def test_audit_delta_on_gaussian_is_below_and_near_the_exact_delta():
    sigma, epsilon = 1.0, 1.0
    exact = balle_wang_delta(sigma, epsilon)  # 0.1269
    result = audit_delta(gaussian_count(sigma), [(0, 1), (1, 0)], epsilon=epsilon, releases=200_000,
                         batch=100_000, claimed_delta=exact, rng=3)
    assert result.target == "delta"
    assert 0.85 * exact <= result.delta_lower_bound <= exact  # 0.90 to 0.97 over 20 seeds
    assert result.passed is True
    assert result.lower_bound_on_delta(epsilon) == result.delta_lower_bound
    # valid for every epsilon at once: check a few against the exact curve
    for other in (0.0, 0.5, 2.0):
        assert result.lower_bound_on_delta(other) <= balle_wang_delta(sigma, other)

    failing = audit_delta(gaussian_count(sigma), (0, 1), epsilon=epsilon, releases=200_000, batch=100_000,
                          claimed_delta=exact / 2, rng=3)
    assert failing.passed is False


def test_vector_output_is_projected_on_the_mean_difference():
    """Laplace(1) on each of 3 coordinates, data differing by (1, 0, 1): eps = 2 (L1 sensitivity 2)."""
    shift = np.array([1.0, 0.0, 1.0])

    def vector_laplace(data, rng, size):
        return data * shift + rng.laplace(0.0, 1.0, (size, 3))

    result = audit(vector_laplace, (0, 1), releases=100_000, batch=50_000, claimed_epsilon=2.0, rng=4)
    assert 1.0 < result.epsilon_lower_bound <= 2.0
    assert result.passed is True


# --------------------------------------------------------------------------------------------- #
# A user's own mechanism: one release at a time, a transcript mapped to a number                #
# --------------------------------------------------------------------------------------------- #

BOTTOM = "⊥"


def threshold_then_count(leak: bool):
    """Answer ⊥ if a noisy count is below 0.5, else a fresh noisy count: (0.5 + 0.5)-DP by composition.

    With ``leak`` the count itself is released when above: not private at all.
    """
    def mechanism(count, rng):
        if count + rng.laplace(0.0, 2.0) < 0.5:
            return (BOTTOM,)
        return ("above", count if leak else count + rng.laplace(0.0, 2.0))

    return mechanism


def transcript_statistic(transcript):
    return -math.inf if transcript[0] == BOTTOM else transcript[1]


def test_users_mechanism_with_transcript_statistic():
    pairs = [(0, 1), (1, 0)]
    correct = audit(threshold_then_count(leak=False), pairs, releases=10_000, statistic=transcript_statistic,
                    claimed_epsilon=1.0, rng=8, name="threshold")
    assert 0.0 < correct.epsilon_lower_bound <= 1.0
    assert correct.passed is True
    assert correct.name == "threshold"
    assert len(correct.pair_epsilon_lower_bounds) == 2
    assert max(correct.pair_epsilon_lower_bounds) == correct.epsilon_lower_bound

    leaky = audit(threshold_then_count(leak=True), pairs, releases=2_000, statistic=transcript_statistic,
                  claimed_epsilon=1.0, rng=8)
    assert leaky.epsilon_lower_bound > 3.0
    assert leaky.passed is False
    assert leaky.counts.q_successes == 0  # the event: the exact count of the other data set


def test_scalar_outputs_one_release_at_a_time_without_statistic():
    def laplace(count, rng):
        return count + rng.laplace(0.0, 1.0)

    result = audit(laplace, (0, 1), releases=5_000, claimed_epsilon=1.0, rng=2)
    assert 0.5 < result.epsilon_lower_bound <= 1.0


# --------------------------------------------------------------------------------------------- #
# Results, pairs, events, reports                                                               #
# --------------------------------------------------------------------------------------------- #


def test_best_pair_and_every_pairs_own_bound():
    mechanism = randomized_response(1.0)
    result = audit(mechanism, [(0, 0), (0, 1)], releases=20_000, batch=20_000, rng=1)
    first, second = result.pair_epsilon_lower_bounds
    assert first == 0.0  # identical data sets: no evidence
    assert second == result.epsilon_lower_bound > 0.8
    assert result.pairs == 2
    assert len(result.estimates) == 4
    assert result.per_pair[1].pair == 1
    assert "pair 1" in result.event


def test_confidence_split_over_pairs_makes_each_bound_more_conservative():
    mechanism = randomized_response(1.0)
    # the same samples for pair 0 (same seed, pair 0 sampled first); with two pairs, each bound at alpha / 8
    one = audit(mechanism, (0, 1), releases=20_000, batch=20_000, rng=3)
    two = audit(mechanism, [(0, 1), (0, 1)], releases=20_000, batch=20_000, rng=3)
    assert two.estimates[0].counts == one.estimates[0].counts
    assert two.estimates[0].p_lower < one.estimates[0].p_lower
    assert two.estimates[0].q_upper > one.estimates[0].q_upper


def test_passed_is_equivalent_to_the_delta_bound_at_the_claimed_epsilon():
    sigma = balle_wang_sigma(1.0, 1e-3)
    for scale in (1.0, 0.5):
        result = audit(gaussian_count(scale * sigma), (0, 1), releases=50_000, batch=50_000, delta=1e-3,
                       claimed_epsilon=1.0, rng=9)
        assert result.passed == (result.delta_lower_bound <= 1e-3)


def test_no_claim_gives_no_verdict():
    result = audit(laplace_count(1.0), (0, 1), releases=2_000, batch=2_000, rng=1)
    assert result.passed is None
    assert result.delta_lower_bound is None
    assert "no claim" in str(result)
    no_delta = audit_delta(laplace_count(1.0), (0, 1), epsilon=1.0, releases=2_000, batch=2_000, rng=1)
    assert no_delta.passed is None


def test_bounds_are_finite_and_never_negative():
    def constant(data, rng, size):
        return np.full(size, float(data))

    result = audit(constant, (0, 1), releases=1_000, batch=1_000, rng=1)
    assert math.isfinite(result.epsilon_lower_bound)
    # all 500 estimation releases in the event under one data set, none under the other
    alpha = (1 - 0.99) / 4
    exact = math.log(alpha ** (1 / 500) / (1 - alpha ** (1 / 500)))  # about ln(n / ln(1 / alpha))
    assert result.epsilon_lower_bound == pytest.approx(exact, rel=1e-9)
    assert result.counts.q_successes == 0 and result.q_upper > 0
    same = audit(constant, (0, 0), releases=1_000, batch=1_000, rng=1)
    assert same.epsilon_lower_bound == 0.0
    assert same.lower_bound_on_delta(0.0) == 0.0


def test_selection_fraction_sets_the_estimation_half():
    result = audit(laplace_count(1.0), (0, 1), releases=1_000, batch=1_000, selection_fraction=0.3, rng=1)
    assert result.selection_releases == 300
    assert result.counts.trials == 700
    tiny = audit(laplace_count(1.0), (0, 1), releases=2, batch=1, rng=1)
    assert tiny.selection_releases == 1 and tiny.counts.trials == 1


def test_events():
    values = np.array([-math.inf, -1.0, 0.0, 2.0, math.inf])
    assert Event("greater", 0.0).contains(values).tolist() == [False, False, False, True, True]
    assert Event("less", 0.0).contains(values).tolist() == [True, True, False, False, False]
    assert Event("in", values=(-1.0, 2.0)).contains(values).tolist() == [False, True, False, True, False]
    assert str(Event("greater", 0.731)) == "statistic > 0.731"
    assert str(Event("in", values=(1.0,))) == "statistic = 1"
    assert str(Event("in", values=(0.0, 1.0))) == "statistic in {0, 1}"


def test_as_row_and_table():
    results = [
        audit(laplace_count(1.0), (0, 1), releases=5_000, batch=5_000, claimed_epsilon=1.0, rng=1, name="laplace"),
        audit(laplace_count(2.0), (0, 1), releases=5_000, batch=5_000, claimed_epsilon=1.0, rng=1, name="buggy"),
        audit_delta(gaussian_count(1.0), (0, 1), epsilon=1.0, releases=5_000, batch=5_000, rng=1),
    ]
    row = results[0].as_row()
    assert set(row) >= {"mechanism", "claimed_epsilon", "claimed_delta", "epsilon_lower_bound",
                        "delta_lower_bound", "confidence", "releases", "pairs", "passed", "event",
                        "p_lower", "q_upper"}
    for value in row.values():
        assert value is None or type(value) in (str, int, float, bool)
    assert row["mechanism"] == "laplace" and row["passed"] is True and row["releases"] == 5_000

    table = format_audit_table(results)
    lines = table.splitlines()
    assert len(lines) == 2 + len(results)
    assert lines[0].startswith("mechanism")
    assert "passed" in lines[2] and "FAILED" in lines[3]
    assert f"{results[1].epsilon_lower_bound:.4f}" in lines[3]
    assert "mechanism" in format_audit_table([])  # header only


def test_summary_is_one_line_with_the_claim_and_the_bound():
    result = audit(laplace_count(1.0), (0, 1), releases=5_000, batch=5_000, claimed_epsilon=1.0,
                   confidence=0.95, rng=1, name="laplace")
    text = result.summary()
    assert "\n" not in text and str(result) == text
    assert "laplace" in text and "claimed epsilon 1" in text and "0.95" in text and "5,000" in text
    assert f"{result.epsilon_lower_bound:.4f}" in text


def test_same_seed_same_result():
    def run(seed):
        return audit(threshold_then_count(leak=False), [(0, 1), (1, 0)], releases=2_000,
                     statistic=transcript_statistic, rng=seed)

    assert run(5) == run(5)
    assert run(5).as_row() == run(5).as_row()
    assert run(5).estimates != run(6).estimates
    batched = [audit(laplace_count(1.0), (0, 1), releases=3_000, batch=1_000, rng=np.random.default_rng(4))
               for _ in range(2)]
    assert batched[0] == batched[1]


def test_each_release_gets_a_fresh_generator():
    seen = []

    def mechanism(data, rng):
        seen.append(rng)
        return float(rng.random())

    audit(mechanism, (0, 1), releases=10, rng=0)
    assert len(seen) == 20 and len({id(g) for g in seen}) == 20


# --------------------------------------------------------------------------------------------- #
# Validation                                                                                    #
# --------------------------------------------------------------------------------------------- #


def _laplace(count, rng):
    return count + rng.laplace()


@pytest.mark.parametrize("kwargs,error,name", [
    ({"mechanism": 3}, TypeError, "mechanism"),
    ({"pairs": 3}, TypeError, "pairs"),
    ({"pairs": (0, 1, 2)}, ValueError, "pairs"),
    ({"pairs": []}, ValueError, "pairs"),
    ({"pairs": [(0, 1), 2]}, TypeError, "pairs"),
    ({"pairs": [(0, 1), (0, 1, 2)]}, ValueError, "pairs"),
    ({"releases": 1}, ValueError, "releases: must be at least 2, got 1"),
    ({"releases": 10.0}, TypeError, "releases"),
    ({"releases": True}, TypeError, "releases"),
    ({"confidence": 0.0}, ValueError, "confidence: must lie in (0, 1)"),
    ({"confidence": 1.0}, ValueError, "confidence: must lie in (0, 1)"),
    ({"confidence": math.nan}, ValueError, "confidence"),
    ({"confidence": "0.9"}, TypeError, "confidence"),
    ({"statistic": 3}, TypeError, "statistic"),
    ({"delta": -0.1}, ValueError, "delta"),
    ({"delta": 1.0}, ValueError, "delta"),
    ({"delta": None}, TypeError, "delta"),
    ({"claimed_epsilon": -1.0}, ValueError, "claimed_epsilon"),
    ({"claimed_epsilon": math.inf}, ValueError, "claimed_epsilon"),
    ({"claimed_epsilon": "1"}, TypeError, "claimed_epsilon"),
    ({"rng": "seed"}, TypeError, "rng"),
    ({"rng": 1.5}, TypeError, "rng"),
    ({"selection_fraction": 0.0}, ValueError, "selection_fraction"),
    ({"selection_fraction": 1.0}, ValueError, "selection_fraction"),
    ({"batch": 0}, ValueError, "batch"),
    ({"batch": 2.0}, TypeError, "batch"),
    ({"batch": True}, TypeError, "batch"),
    ({"name": 3}, TypeError, "name"),
])
def test_audit_argument_validation(kwargs, error, name):
    arguments = {"mechanism": _laplace, "pairs": (0, 1), "releases": 10, "rng": 0, **kwargs}
    mechanism, pairs = arguments.pop("mechanism"), arguments.pop("pairs")
    with pytest.raises(error) as raised:
        audit(mechanism, pairs, **arguments)
    assert name in str(raised.value)
    assert str(raised.value).startswith(name.split(":")[0] + ":")


@pytest.mark.parametrize("kwargs,error,name", [
    ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": math.nan}, ValueError, "epsilon"),
    ({"epsilon": None}, TypeError, "epsilon"),
    ({"claimed_delta": 1.5}, ValueError, "claimed_delta"),
    ({"claimed_delta": "0"}, TypeError, "claimed_delta"),
    ({"releases": 0}, ValueError, "releases"),
])
def test_audit_delta_argument_validation(kwargs, error, name):
    arguments = {"epsilon": 1.0, "releases": 10, "rng": 0, **kwargs}
    with pytest.raises(error, match=f"^{name}:"):
        audit_delta(_laplace, (0, 1), **arguments)


@pytest.mark.parametrize("args,error,name", [
    ((11, 10, 0.9), ValueError, "successes"),
    ((-1, 10, 0.9), ValueError, "successes"),
    ((1.5, 10, 0.9), TypeError, "successes"),
    ((0, 0, 0.9), ValueError, "trials"),
    ((0, 10.0, 0.9), TypeError, "trials"),
    ((0, 10, 1.0), ValueError, "confidence"),
    ((0, 10, None), TypeError, "confidence"),
])
def test_clopper_pearson_argument_validation(args, error, name):
    with pytest.raises(error, match=f"^{name}:"):
        clopper_pearson(*args)


def test_result_method_validation():
    result = audit(_laplace, (0, 1), releases=10, rng=0)
    with pytest.raises(ValueError, match="^epsilon:"):
        result.lower_bound_on_delta(-1.0)
    with pytest.raises(ValueError, match="^delta:"):
        result.lower_bound_on_epsilon(2.0)
    with pytest.raises(TypeError, match="^results:"):
        format_audit_table(result)
    with pytest.raises(TypeError, match="^results:"):
        format_audit_table([result, "x"])


def test_mechanism_that_raises_is_reported_with_pair_and_release():
    calls = {"count": 0}

    def flaky(data, rng):
        if data == "bad":
            calls["count"] += 1
            if calls["count"] == 4:
                raise KeyError("boom")
        return 0.0

    with pytest.raises(AuditError, match=r"^mechanism: raised KeyError: 'boom' \(pair 1, neighbour, release 3\)"):
        audit(flaky, [(0, 1), (0, "bad")], releases=10, rng=0)


def test_batched_mechanism_that_raises_is_reported_with_the_releases():
    def broken(data, rng, size):
        raise ValueError("nope")

    with pytest.raises(AuditError, match=r"pair 0, data, releases 0 to 4"):
        audit(broken, (0, 1), releases=10, batch=5, rng=0)


def test_statistic_that_raises_is_reported():
    with pytest.raises(AuditError, match=r"^statistic: raised TypeError.*\(pair 0, data, release 0\)"):
        audit(_laplace, (0, 1), releases=10, statistic=lambda output: output[3], rng=0)


@pytest.mark.parametrize("mechanism,statistic,batch,error,name", [
    (lambda data, rng: "text", None, None, TypeError, "mechanism"),
    (lambda data, rng: np.zeros((2, 2)), None, None, TypeError, "mechanism"),
    (lambda data, rng: np.zeros(2 + int(rng.integers(2))), None, None, ValueError, "mechanism"),
    (lambda data, rng: (1.0, 2.0), lambda output: "a", None, TypeError, "statistic"),
    (lambda data, rng: (1.0, 2.0), lambda output: [1.0, 2.0], None, TypeError, "statistic"),
    (lambda data, rng: 1.0, lambda output: math.nan, None, ValueError, "statistic"),
    (lambda data, rng: math.nan, None, None, ValueError, "mechanism"),
    (lambda data, rng: np.array([1.0, math.inf]), None, None, ValueError, "mechanism"),
    (lambda data, rng, size: np.zeros(size + 1), None, 5, ValueError, "mechanism"),
    (lambda data, rng, size: np.zeros((size, 2, 2)), None, 5, ValueError, "mechanism"),
    (lambda data, rng, size: np.zeros(size), lambda outputs: outputs[:1], 5, ValueError, "statistic"),
])
def test_invalid_outputs_name_the_culprit(mechanism, statistic, batch, error, name):
    with pytest.raises(error, match=f"^{name}:"):
        audit(mechanism, (0, 1), releases=10, statistic=statistic, batch=batch, rng=0)


def test_counts_and_event_types():
    result = audit(randomized_response(1.0), (0, 1), releases=1_000, batch=1_000, rng=0)
    assert isinstance(result, AuditResult)
    assert isinstance(result.counts, Counts)
    assert isinstance(result.best.event, Event)
    assert all(isinstance(value, int) for value in result.counts)


# --------------------------------------------------------------------------------------------- #
# Heavier checks (pytest -m slow)                                                               #
# --------------------------------------------------------------------------------------------- #


@pytest.mark.slow
def test_validity_rate_over_many_seeds_slow():
    """Laplace eps = 1 at confidence 0.8, 200 runs: the bound exceeds eps in at most 20 % (+ 3 sd) of runs."""
    mechanism = laplace_count(1.0)
    bounds = np.array([audit(mechanism, [(0, 1), (1, 0)], releases=20_000, batch=20_000, confidence=0.8,
                             rng=seed).epsilon_lower_bound for seed in range(200)])
    assert np.mean(bounds > 1.0) <= 0.2 + 3 * math.sqrt(0.2 * 0.8 / 200)


@pytest.mark.slow
def test_gaussian_power_with_a_million_releases_slow():
    epsilon, delta = 1.0, 1e-5
    sigma = balle_wang_sigma(epsilon, delta)
    correct = audit(gaussian_count(sigma), (0, 1), releases=1_000_000, batch=500_000, delta=delta, rng=1)
    buggy = audit(gaussian_count(sigma / 2), (0, 1), releases=1_000_000, batch=500_000, delta=delta, rng=1)
    assert correct.epsilon_lower_bound <= epsilon < 1.3 * epsilon < buggy.epsilon_lower_bound
