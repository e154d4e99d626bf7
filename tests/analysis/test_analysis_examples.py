"""The worked examples of the analysis documentation, checked in full here (the docstrings keep
a short one each)."""

import math

import numpy as np
import pytest

import projmech as pm
from projmech.analysis.bounds import (
    MinimumSize,
    check_measure,
    gaussian_mechanism_error,
    min_n,
    noise_constant,
    ntz_projection_error,
    projection_error,
    projection_min_n,
)
from projmech.analysis.evaluation import gaussian_expected_rmse
from projmech.analysis.geometry import (
    compare_widths,
    finite_set_width_bound,
    gaussian_norm_mean,
    gaussian_width,
    gaussian_widths,
    mean_width,
    mean_width_from_gaussian,
    mean_widths,
    support_function,
)


def test_bounds():
    with pytest.raises(ValueError, match=r"measure: expected one of \('rms', 'mean'\), got 'max'"):
        check_measure("max")
    assert round(noise_constant(pm.ApproxDP(1.0, 1e-6), 1.0), 3) == 8.449
    assert min_n(projection_error, 0.05, sigma_times_n=10.0, k=180, width=16.5) == 367
    assert ntz_projection_error(0.7, 12, universe_size=4096) > projection_error(0.7, 12, universe_size=4096)
    assert projection_min_n(0.2, sigma_times_n=10.0, k=180, width=16.5).n == 23
    assert round(gaussian_expected_rmse(1.0, 100), 4) == 0.9975
    assert noise_constant(pm.ZCDP(0.5), 1.0, neighbouring="add-remove") == 1.0
    assert gaussian_mechanism_error(0.02, 180) == 0.02
    assert round(projection_error(0.7, 12, universe_size=4096), 6) == 0.907847
    assert min_n(lambda n: 1 / n, 0.01) == 100
    assert projection_min_n(0.2, sigma_times_n=10.0, k=180, universe_size=1024,
                            radius=45 ** 0.5) == MinimumSize(35, "projection")


def test_evaluate_summary():
    mechanism = pm.GaussianMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    summary = pm.evaluate(mechanism, np.full(8, 1 / 8), trials=20, rng=np.random.default_rng(0), n=1000)
    assert summary.rmse_low <= summary.rmse_mean <= summary.rmse_high
    assert summary.rmse_values.shape == (20,)
    assert round(mechanism.expected_error(1000, measure="mean"), 5) == 0.00256


def test_widths():
    assert round(gaussian_norm_mean(1), 6) == round(math.sqrt(2 / math.pi), 6)
    assert gaussian_width(np.eye(5), 5, 4000, np.random.default_rng(0)).samples == 4000
    cube = lambda G: np.maximum(G, 0).sum(axis=1)  # noqa: E731
    widths = gaussian_widths({"cube": cube, "simplex": np.eye(5)}, 5, 4000, np.random.default_rng(0))
    assert widths["cube"].draws == widths["simplex"].draws
    means = mean_widths({"cube": cube, "simplex": np.eye(5)}, 5, 4000, np.random.default_rng(0))
    assert {name: round(width.estimate, 2) for name, width in means.items()} == {"cube": 0.95, "simplex": 0.55}
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(10)], [2] * 10), 2)
    assert gaussian_width(workload, workload.num_queries, 1000, np.random.default_rng(0)).high < 24.98
    assert round(gaussian_width(workload, workload.num_queries, 1000, np.random.default_rng(0)).estimate, 1) == 16.5
    assert {name: round(width.estimate, 2) for name, width in widths.items()} == {"cube": 2.01, "simplex": 1.16}
    assert widths["simplex"].low <= 1.163 <= widths["simplex"].high
    comparison = compare_widths(widths["cube"], widths["simplex"])
    assert round(comparison.ratio, 2) == 1.72 and round(comparison.ratio_high - comparison.ratio_low, 2) == 0.04
    assert comparison.ratio_low <= 1.715 <= comparison.ratio_high
    segment = mean_width(lambda U: np.maximum(U[:, 0], 0), 3, 4000, np.random.default_rng(0))
    assert segment.low <= 0.25 <= segment.high  # the segment [0, e_1] in R^3
    assert round(mean_width_from_gaussian(5 / math.sqrt(2 * math.pi), 5), 6) == 0.9375  # the cube [0, 1]^5
    assert round(gaussian_norm_mean(10**6), 4) == 999.9998
    assert round(finite_set_width_bound(1024, math.sqrt(45)), 3) == 24.977 and finite_set_width_bound(1, 3.0) == 0.0
    F = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(support_function(F, [[-1.0, -1.0], [3.0, 1.0]]), [0.0, 3.0])
