"""The worked examples of the analysis documentation, checked in full here (the docstrings keep
a short one each)."""

import math

import numpy as np
import pytest

import projmech as pm
from projmech.analysis.bounds import (
    check_measure,
    min_n,
    noise_constant,
    ntz_projection_error,
    projection_error,
    projection_min_n,
)
from projmech.analysis.evaluation import gaussian_expected_rmse
from projmech.analysis.geometry import gaussian_norm_mean, gaussian_width, gaussian_widths, mean_widths


def test_bounds():
    with pytest.raises(ValueError, match=r"measure: expected one of \('rms', 'mean'\), got 'max'"):
        check_measure("max")
    assert round(noise_constant(pm.ApproxDP(1.0, 1e-6), 1.0), 3) == 8.449
    assert min_n(projection_error, 0.05, sigma_times_n=10.0, k=180, width=16.5) == 367
    assert ntz_projection_error(0.7, 12, universe_size=4096) > projection_error(0.7, 12, universe_size=4096)
    assert projection_min_n(0.2, sigma_times_n=10.0, k=180, width=16.5).n == 23
    assert round(gaussian_expected_rmse(1.0, 100), 4) == 0.9975


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
