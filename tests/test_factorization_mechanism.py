"""The factorization mechanism: calibration, error against its closed form, projection, inputs."""

import math

import numpy as np
import pytest
from scipy import stats

import projmech as pm


def random_histogram(m, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(m))


def test_sigma_is_calibrated_to_the_strategy():
    workload = pm.prefix(16)
    fact = pm.factorization_norm(workload, tol=1e-6)
    rho, n = 0.3, 500
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(rho), fact)
    # Independent: replace-one l2 sensitivity (2/n) max_j ||M e_j||, zCDP sigma = Delta / sqrt(2 rho).
    delta = 2.0 / n * np.sqrt((fact.strategy**2).sum(axis=0)).max()
    assert mech.noise_scale(n) == pytest.approx(delta / math.sqrt(2 * rho), rel=1e-12)
    add_remove = pm.FactorizationMechanism(workload, pm.ZCDP(rho), fact, neighbouring="add-remove")
    assert add_remove.noise_scale(n) == pytest.approx(mech.noise_scale(n) / 2, rel=1e-12)


def test_empirical_error_matches_expected_rmse():
    workload = pm.prefix(16)
    mech = pm.FactorizationMechanism(workload, pm.ApproxDP(1.0, 1e-6))
    h, n = random_histogram(16), 2000
    truth = workload.answer(h)
    rng = np.random.default_rng(42)
    squared = np.array([np.mean((mech.release(h, n=n, rng=rng).answers - truth) ** 2) for _ in range(4000)])
    low, high = stats.t.interval(0.999, squared.size - 1, loc=squared.mean(), scale=stats.sem(squared))
    assert low <= mech.expected_rmse(n) ** 2 <= high
    # and it beats the Gaussian mechanism on the same workload, as gamma predicts
    assert mech.expected_rmse(n) < pm.GaussianMechanism(workload, pm.ApproxDP(1.0, 1e-6)).expected_rmse(n)


def test_projection_never_increases_the_error():
    workload = pm.prefix(12)
    fact = pm.factorization_norm(workload)
    plain = pm.FactorizationMechanism(workload, pm.ZCDP(0.01), fact)
    projected = pm.FactorizationMechanism(workload, pm.ZCDP(0.01), fact, project=True)
    h, n = random_histogram(12, 3), 100
    truth = workload.answer(h)
    for seed in range(20):
        a, b = plain.release(h, n=n, rng=seed), projected.release(h, n=n, rng=seed)
        np.testing.assert_array_equal(a.noisy_answers, b.noisy_answers)  # the same noise
        assert np.linalg.norm(b.answers - truth) <= np.linalg.norm(a.answers - truth) + 1e-9
        assert b.projection is not None and b.projection.gap <= b.projection.tolerance
        np.testing.assert_allclose(workload.answer(b.witness), b.answers, atol=1e-7)
    assert projected.release(h, n=n, rng=0).mechanism == "factorization+projection"


def test_implicit_workload_releases_like_the_explicit_one():
    explicit, implicit = pm.all_range(48), pm.all_range(48, implicit=True)
    fact = pm.factorization_norm(explicit)
    h = random_histogram(48, 5)
    a = pm.FactorizationMechanism(explicit, pm.ZCDP(1.0), fact).release(h, n=300, rng=7)
    b = pm.FactorizationMechanism(implicit, pm.ZCDP(1.0), pm.factorization_norm(implicit)).release(h, n=300, rng=7)
    # The same Gram matrix gives the same strategy, so the same seed gives the same release.
    assert b.sigma == pytest.approx(a.sigma, rel=1e-12)
    np.testing.assert_allclose(b.answers, a.answers, atol=1e-9)


def test_release_is_reproducible_and_described():
    workload = pm.prefix(8)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1.0))
    h = random_histogram(8)
    np.testing.assert_array_equal(mech.release(h, n=50, rng=1).answers, mech.release(h, n=50, rng=1).answers)
    summary = mech.release(h, n=50, rng=1).summary()
    assert summary["mechanism"] == "factorization" and "gamma=" in summary["factorization"]


def test_bad_inputs():
    workload = pm.prefix(6)
    with pytest.raises(TypeError, match="factorization"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=np.eye(6))
    with pytest.raises(ValueError, match="factorization"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=pm.factorization_norm(pm.prefix(5)))
    with pytest.raises(TypeError, match="PureDP|privacy"):
        pm.FactorizationMechanism(workload, pm.PureDP(1.0))
    with pytest.raises(TypeError, match="project"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), project="yes")
    with pytest.raises(ValueError, match="project.*implicit"):
        pm.FactorizationMechanism(pm.prefix(6, implicit=True), pm.ZCDP(1.0), project=True)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1.0))
    with pytest.raises(ValueError, match="n"):
        mech.release(random_histogram(6), n=0)
    with pytest.raises(ValueError, match="histogram"):
        mech.release(np.full(6, np.nan), n=10)


def test_approximate_factorization_bias_is_bounded():
    # Seed 001 eq. 32-35: with R M = F + E the answers carry E h, and ||E h|| <= ||E||_{1->2}.
    rng = np.random.default_rng(1)
    alpha = 0.1
    F = 1.0 + alpha * rng.choice([-1.0, 1.0], size=(3, 5))
    workload = pm.Workload(F)
    fact = pm.approximate_factorization_norm(workload, alpha)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1e14), fact)  # negligible noise
    for seed in range(10):
        h = random_histogram(5, seed)
        bias = mech.release(h, n=100, rng=seed).answers - workload.answer(h)
        np.testing.assert_allclose(bias, fact.perturbation @ h, atol=1e-6)
        assert np.linalg.norm(bias) <= fact.residual + 1e-6
