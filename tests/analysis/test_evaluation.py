"""Error measures, the closed-form Gaussian expected RMSE, confidence intervals and evaluate()."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from oracles import F_SMALL, H_SMALL, TRUTH_SMALL
from projmech.analysis.evaluation import (
    TrialSummary,
    evaluate,
    gaussian_expected_rmse,
    max_error,
    mean_confidence_interval,
    rmse,
)
from projmech.data import Dataset, Domain
from projmech.mechanisms import GaussianMechanism, LaplaceMechanism, ProjectionMechanism
from projmech.privacy import ZCDP, ApproxDP, PureDP
from projmech.workloads import Workload, marginals, prefix

# --------------------------------------------------------------------------------------------
# rmse and max_error
# --------------------------------------------------------------------------------------------


def test_rmse_and_max_error_by_hand():
    estimate = [1.0, 2.0, 3.0, 4.0]
    truth = [1.5, 2.0, 1.0, 4.0]
    # Differences -0.5, 0, 2, 0: squares sum to 4.25 over k = 4.
    assert rmse(estimate, truth) == pytest.approx(math.sqrt(4.25 / 4), rel=1e-15)
    assert max_error(estimate, truth) == 2.0
    assert rmse(truth, estimate) == rmse(estimate, truth)


def test_rmse_and_max_error_against_numpy_on_random_vectors():
    rng = np.random.default_rng(0)
    for k in (1, 2, 17, 1000):
        a, b = rng.normal(size=k), rng.normal(size=k)
        assert rmse(a, b) == pytest.approx(np.sqrt(np.mean((a - b) ** 2)), rel=1e-12)
        assert max_error(a, b) == pytest.approx(np.max(np.abs(a - b)), rel=1e-15)
        assert isinstance(rmse(a, b), float) and isinstance(max_error(a, b), float)
    assert rmse([3.0], [3.0]) == 0.0 and max_error([3.0], [3.0]) == 0.0


@pytest.mark.parametrize("a, b", [
    (np.zeros(3), np.zeros(4)),
    (np.zeros((2, 2)), np.zeros((2, 2))),
    (np.zeros(0), np.zeros(0)),
    (np.zeros(3), np.zeros((3, 1))),
    (5.0, 5.0),
])
def test_rmse_and_max_error_reject_bad_shapes(a, b):
    with pytest.raises(ValueError, match="shape"):
        rmse(a, b)
    with pytest.raises(ValueError, match="shape"):
        max_error(a, b)


# --------------------------------------------------------------------------------------------
# gaussian_expected_rmse
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", list(range(1, 41)) + [75, 150, 300])
def test_gaussian_expected_rmse_closed_form(k):
    sigma = 0.37
    expected = sigma * math.sqrt(2) * math.gamma((k + 1) / 2) / math.gamma(k / 2) / math.sqrt(k)
    assert gaussian_expected_rmse(sigma, k) == pytest.approx(expected, rel=1e-12)


def test_gaussian_expected_rmse_known_small_cases():
    # k = 1: E|Z| = sigma sqrt(2/pi).  k = 2: Rayleigh mean sigma sqrt(pi/2), divided by sqrt(2).
    assert gaussian_expected_rmse(2.0, 1) == pytest.approx(2.0 * math.sqrt(2 / math.pi), rel=1e-14)
    assert gaussian_expected_rmse(2.0, 2) == pytest.approx(2.0 * math.sqrt(math.pi) / 2, rel=1e-14)
    assert gaussian_expected_rmse(0.0, 5) == 0.0


LARGE_K = [1000, 12345, 10**5, 10**6, 10**8, 10**9, 10**12]


def asymptotic_ratio(k: int) -> float:
    """c_k / sqrt(k) = 1 - 1/(4k) + 1/(32k^2) + 5/(128k^3) - 21/(2048k^4) + O(k^-5)
    (from Gamma(z + 1/2)/Gamma(z) ~ sqrt(z) (1 - 1/(8z) + 1/(128z^2) + ...), z = k/2); the
    truncation error is below 1e-16 relative for k >= 1000 (checked against mpmath)."""
    return 1 - 1 / (4 * k) + 1 / (32 * k**2) + 5 / (128 * k**3) - 21 / (2048 * k**4)


def test_gaussian_expected_rmse_tends_to_sigma():
    sigma = 1.7
    values = [gaussian_expected_rmse(sigma, k) for k in LARGE_K]
    for k, value in zip(LARGE_K, values):
        assert value / sigma == pytest.approx(asymptotic_ratio(k), rel=1e-10), k
        # Strictly below sigma (Jensen) yet within 1/(4k) of it.
        assert value < sigma and sigma - value <= sigma / (4 * k) * (1 + 1e-6)
    assert all(a < b for a, b in zip(values, values[1:]))
    assert gaussian_expected_rmse(sigma, 10**15) == pytest.approx(sigma, rel=1e-15)


def test_gaussian_expected_rmse_monte_carlo():
    rng = np.random.default_rng(1)
    sigma, k = 0.8, 7
    samples = np.sqrt(np.mean(rng.normal(0, sigma, size=(20000, k)) ** 2, axis=1))
    low, high = stats.t.interval(0.99, samples.size - 1, loc=samples.mean(), scale=stats.sem(samples))
    assert low <= gaussian_expected_rmse(sigma, k) <= high


@pytest.mark.parametrize("sigma, k, error, match", [
    (-1.0, 3, ValueError, "sigma"), (float("nan"), 3, ValueError, "sigma"), (float("inf"), 3, ValueError, "sigma"),
    (True, 3, TypeError, "sigma"), (1.0, 0, ValueError, "k"), (1.0, -2, ValueError, "k"),
    # A count of the wrong type is a TypeError, as everywhere.
    (1.0, 2.5, TypeError, "k"), (1.0, True, TypeError, "k"), (1.0, 3.0, TypeError, "k"),
])
def test_gaussian_expected_rmse_rejects_bad_arguments(sigma, k, error, match):
    with pytest.raises(error, match=f"^{match}: "):
        gaussian_expected_rmse(sigma, k)


def test_gaussian_expected_rmse_accepts_numpy_int():
    assert gaussian_expected_rmse(1.0, np.int64(4)) == pytest.approx(gaussian_expected_rmse(1.0, 4))


# --------------------------------------------------------------------------------------------
# mean_confidence_interval
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("size", [2, 3, 10, 250])
def test_mean_confidence_interval_matches_scipy(confidence, size):
    values = np.random.default_rng(size).gamma(2.0, 1.5, size=size)
    mean, low, high = mean_confidence_interval(values, confidence)
    scipy_low, scipy_high = stats.t.interval(confidence, size - 1, loc=values.mean(), scale=stats.sem(values))
    assert mean == pytest.approx(values.mean(), rel=1e-14)
    assert low == pytest.approx(scipy_low, rel=1e-12)
    assert high == pytest.approx(scipy_high, rel=1e-12)
    assert low < mean < high


def test_mean_confidence_interval_default_is_95_percent():
    values = [1.0, 2.0, 4.0, 8.0]
    scipy_low, scipy_high = stats.t.interval(0.95, 3, loc=np.mean(values), scale=stats.sem(values))
    _, low, high = mean_confidence_interval(values)
    assert (low, high) == (pytest.approx(scipy_low), pytest.approx(scipy_high))


def test_mean_confidence_interval_constant_sample_is_a_point():
    assert mean_confidence_interval([2.5, 2.5, 2.5]) == (2.5, 2.5, 2.5)


@pytest.mark.parametrize("values, confidence, match", [
    ([1.0], 0.95, "values"),
    ([], 0.95, "values"),
    ([[1.0, 2.0], [3.0, 4.0]], 0.95, "values"),
    ([1.0, 2.0], 0.0, "confidence"),
    ([1.0, 2.0], 1.0, "confidence"),
    ([1.0, 2.0], 95, "confidence"),
    ([1.0, 2.0], -0.5, "confidence"),
])
def test_mean_confidence_interval_rejects_bad_arguments(values, confidence, match):
    with pytest.raises(ValueError, match=match):
        mean_confidence_interval(values, confidence)


# --------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------


def test_evaluate_reproduces_a_hand_written_loop():
    mechanism = LaplaceMechanism(Workload(F_SMALL), PureDP(1.0))
    trials = 25
    summary = evaluate(mechanism, H_SMALL, trials, np.random.default_rng(3), n=40, confidence=0.9)

    rng = np.random.default_rng(3)
    answers = [mechanism.release(H_SMALL, n=40, rng=rng).answers for _ in range(trials)]
    errors = np.array([np.sqrt(np.mean((a - TRUTH_SMALL) ** 2)) for a in answers])
    worst = np.array([np.max(np.abs(a - TRUTH_SMALL)) for a in answers])

    assert isinstance(summary, TrialSummary)
    assert summary.trials == trials and summary.n == 40 and summary.confidence == 0.9
    assert summary.mechanism == "laplace"
    np.testing.assert_allclose(summary.rmse_values, errors, rtol=1e-12)
    assert summary.rmse_mean == pytest.approx(errors.mean(), rel=1e-12)
    low, high = stats.t.interval(0.9, trials - 1, loc=errors.mean(), scale=stats.sem(errors))
    assert summary.rmse_low == pytest.approx(low, rel=1e-12)
    assert summary.rmse_high == pytest.approx(high, rel=1e-12)
    assert summary.rmse_low < summary.rmse_mean < summary.rmse_high
    assert summary.max_error_mean == pytest.approx(worst.mean(), rel=1e-12)
    assert summary.time_mean > 0

    row = summary.row()
    assert row["trials"] == trials and row["n"] == 40 and row["mechanism"] == "laplace"
    assert row["rmse_ci_low"] == summary.rmse_low and row["rmse_ci_high"] == summary.rmse_high


def test_evaluate_on_a_dataset_and_with_progress():
    domain = Domain(["a", "b"], [2, 3])
    records = np.array([[0, 0], [0, 1], [1, 2], [1, 2], [0, 2]] * 8)
    data = Dataset(records, domain)
    # Histogram by hand over the row-major universe a*3 + b.
    h = np.bincount(records[:, 0] * 3 + records[:, 1], minlength=6) / len(records)
    # Continuous noise: the same seed then gives both evaluations the same draws.
    mechanism = ProjectionMechanism(marginals(domain, 1), ApproxDP(1.0, 1e-6), noise="continuous")
    calls = []
    from_data = evaluate(mechanism, data, 4, np.random.default_rng(8), progress=lambda: calls.append(1))
    from_histogram = evaluate(mechanism, h, 4, np.random.default_rng(8), n=len(records))
    assert len(calls) == 4
    assert from_data.n == 40 and from_data.trials == 4 and from_data.mechanism == "projection"
    np.testing.assert_allclose(from_data.rmse_values, from_histogram.rmse_values, rtol=1e-9, atol=1e-12)


def test_evaluate_mean_rmse_agrees_with_the_closed_form():
    mechanism = GaussianMechanism(Workload(F_SMALL), ZCDP(0.5))
    summary = evaluate(mechanism, H_SMALL, 400, np.random.default_rng(4), n=30, confidence=0.99)
    # Replace-one: the largest distance between two columns of F_SMALL, by brute force.
    pair = max(np.linalg.norm(F_SMALL[:, u] - F_SMALL[:, v]) for u in range(4) for v in range(4))
    sigma = pair / 30 / math.sqrt(2 * 0.5)
    expected = sigma * math.sqrt(2) * math.gamma(2) / math.gamma(1.5) / math.sqrt(3)
    assert summary.rmse_low <= expected <= summary.rmse_high


@pytest.mark.parametrize("trials, error", [(1, ValueError), (0, ValueError), (-3, ValueError),
                                           (2.0, TypeError), (True, TypeError), ("5", TypeError)])
def test_evaluate_rejects_bad_trials(trials, error):
    mechanism = GaussianMechanism(Workload(F_SMALL), ZCDP(1.0))
    with pytest.raises(error, match="^trials: "):
        evaluate(mechanism, H_SMALL, trials, np.random.default_rng(0), n=10)


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0), "seed"])
def test_evaluate_rejects_non_generators(rng):
    mechanism = GaussianMechanism(Workload(F_SMALL), ZCDP(1.0))
    with pytest.raises(TypeError, match="rng"):
        evaluate(mechanism, H_SMALL, 3, rng, n=10)


def test_evaluate_on_a_dataset_beyond_any_histogram():
    # 2^40 cells: no histogram exists; the truth comes from the records and the mechanism
    # releases on the Dataset itself (implicit workload, projection onto the relaxation L).
    d = 40
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    records = np.random.default_rng(5).integers(0, 2, size=(300, d))
    data = Dataset(records, domain)
    workload = marginals(domain, 2, implicit=True)
    assert not workload.accepts_histograms
    mechanism = ProjectionMechanism(workload, ApproxDP(1.0, 1e-6), body="relaxed", noise="continuous")
    summary = evaluate(mechanism, data, 2, np.random.default_rng(9))

    rng = np.random.default_rng(9)
    truth = workload.answer_data(data)
    expected = [rmse(mechanism.release(data, rng=rng).answers, truth) for _ in range(2)]
    assert summary.n == 300 and summary.trials == 2 and summary.mechanism == "projection"
    np.testing.assert_allclose(summary.rmse_values, expected, rtol=1e-9)
    gaussian = evaluate(GaussianMechanism(workload, ApproxDP(1.0, 1e-6), noise="continuous"), data, 2,
                        np.random.default_rng(9))
    assert np.all(summary.rmse_values <= gaussian.rmse_values + 1e-12)  # same noise, projected
    with pytest.raises(ValueError, match="n: given 299"):
        evaluate(mechanism, data, 2, np.random.default_rng(9), n=299)


def test_evaluate_needs_n_with_a_histogram():
    with pytest.raises(ValueError, match="n: required"):
        evaluate(GaussianMechanism(Workload(F_SMALL), ZCDP(1.0)), H_SMALL, 3, np.random.default_rng(0))


def test_evaluate_checks_everything_before_the_first_release():
    class Counting(GaussianMechanism):
        releases = 0

        def release(self, *args, **kwargs):
            Counting.releases += 1
            return super().release(*args, **kwargs)

    mechanism = Counting(Workload(F_SMALL), ZCDP(1.0))
    rng = np.random.default_rng(0)
    for data, options, error, match in [
            (H_SMALL, {"n": 3}, ValueError, "histogram, n"),  # 3 rows cannot give H_SMALL
            (H_SMALL[:3], {"n": 10}, ValueError, "histogram"),  # not over the workload's universe
            (H_SMALL * 2, {"n": 10}, ValueError, "histogram"),  # not normalized
            (H_SMALL, {"n": 10, "confidence": 1.0}, ValueError, "confidence"),
            (H_SMALL, {"n": 10, "progress": "bar"}, TypeError, "progress")]:
        with pytest.raises(error, match=f"^{match}"):
            evaluate(mechanism, data, 3, rng, **options)
    assert Counting.releases == 0


def test_evaluate_options_are_keyword_only():
    mechanism = GaussianMechanism(Workload(F_SMALL), ZCDP(1.0))
    with pytest.raises(TypeError, match="positional"):
        evaluate(mechanism, H_SMALL, 3, np.random.default_rng(0), 10)


def test_evaluate_summary():
    mechanism = GaussianMechanism(prefix(8), ZCDP(0.5), noise="continuous")
    summary = evaluate(mechanism, np.full(8, 1 / 8), trials=20, rng=np.random.default_rng(0), n=1000)
    assert summary.rmse_low <= summary.rmse_mean <= summary.rmse_high
    assert summary.rmse_values.shape == (20,)
    assert round(mechanism.expected_error(1000, measure="mean"), 5) == 0.00256
