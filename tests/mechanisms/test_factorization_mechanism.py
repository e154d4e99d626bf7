"""The factorization mechanism: calibration, error against its closed form, projection, inputs."""

import math

import numpy as np
import pytest
from scipy import stats

import projmech as pm


def random_histogram(m, seed=0, n=1000):
    """A histogram of ``n`` rows (``n h`` integer counts, as every mechanism requires)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, rng.dirichlet(np.ones(m))) / n


def test_sigma_is_calibrated_to_the_strategy():
    workload = pm.prefix(16)
    fact = pm.factorization_norm(workload, tol=1e-6)
    rho, n = 0.3, 500
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(rho), factorization=fact)
    # Independent, by brute force: the replace-one l2 sensitivity of the counts M c is the largest
    # distance between two columns of M; add/remove, the largest column norm. zCDP:
    # sigma = Delta / sqrt(2 rho).
    strategy = fact.strategy.toarray()
    delta = max(np.linalg.norm(strategy[:, u] - strategy[:, v]) for u in range(16) for v in range(16))
    assert mech.noise_scale(n) == pytest.approx(delta / n / math.sqrt(2 * rho), rel=1e-10)
    # Far below the bound 2 max_j ||M e_j|| for this strategy with negative entries.
    assert strategy.min() < 0 and delta < 0.75 * 2 * np.linalg.norm(strategy, axis=0).max()
    add_remove = pm.FactorizationMechanism(workload, pm.ZCDP(rho), factorization=fact, neighbouring="add-remove",
                                           size=n)
    largest_column = np.linalg.norm(strategy, axis=0).max()
    assert add_remove.noise_scale(n) == pytest.approx(largest_column / n / math.sqrt(2 * rho), rel=1e-10)


def test_empirical_error_matches_expected_error():
    workload = pm.prefix(16)
    mech = pm.FactorizationMechanism(workload, pm.ApproxDP(1.0, 1e-6))
    n = 2000
    h = random_histogram(16, n=n)
    truth = workload.answer(h)
    rng = np.random.default_rng(42)
    squared = np.array([np.mean((mech.release(h, n=n, rng=rng).answers - truth) ** 2) for _ in range(4000)])
    low, high = stats.t.interval(0.999, squared.size - 1, loc=squared.mean(), scale=stats.sem(squared))
    assert low <= mech.expected_error(n) ** 2 <= high
    # and it beats the Gaussian mechanism on the same workload, as gamma predicts
    assert mech.expected_error(n) < pm.GaussianMechanism(workload, pm.ApproxDP(1.0, 1e-6)).expected_error(n)
    assert mech.error_bound(n) == mech.expected_error(n)
    with pytest.raises(ValueError, match="measure: 'mean' has no closed form"):
        mech.expected_error(n, measure="mean")


@pytest.mark.solver
def test_projection_never_increases_the_error():
    workload = pm.prefix(12)
    fact = pm.factorization_norm(workload)
    plain = pm.FactorizationMechanism(workload, pm.ZCDP(0.01), factorization=fact)
    projected = pm.FactorizationMechanism(workload, pm.ZCDP(0.01), factorization=fact, project=True)
    n = 100
    h = random_histogram(12, 3, n)
    truth = workload.answer(h)
    for seed in range(20):
        a, b = plain.release(h, n=n, rng=seed), projected.release(h, n=n, rng=seed)
        np.testing.assert_array_equal(a.noisy_answers, b.noisy_answers)  # the same noise
        assert np.linalg.norm(b.answers - truth) <= np.linalg.norm(a.answers - truth) + 1e-9
        assert b.projection is not None and b.projection.stats.gap <= b.projection.stats.tolerance
        np.testing.assert_allclose(workload.answer(b.witness), b.answers, atol=1e-7)
    assert projected.release(h, n=n, rng=0).mechanism == "factorization+projection"


def test_implicit_workload_releases_like_the_explicit_one():
    explicit, implicit = pm.all_range(48), pm.all_range(48, implicit=True)
    fact = pm.factorization_norm(explicit)
    h = random_histogram(48, 5, 300)
    a = pm.FactorizationMechanism(explicit, pm.ZCDP(1.0), factorization=fact).release(h, n=300, rng=7)
    b = pm.FactorizationMechanism(implicit, pm.ZCDP(1.0),
                                  factorization=pm.factorization_norm(implicit)).release(h, n=300, rng=7)
    # The same Gram matrix gives the same strategy, so the same seed gives the same release.
    assert b.sigma == pytest.approx(a.sigma, rel=1e-12)
    np.testing.assert_allclose(b.answers, a.answers, atol=1e-9)


def test_release_is_reproducible_and_described():
    workload = pm.prefix(8)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1.0))
    h = random_histogram(8, n=50)
    np.testing.assert_array_equal(mech.release(h, n=50, rng=1).answers, mech.release(h, n=50, rng=1).answers)
    summary = mech.release(h, n=50, rng=1).summary()
    assert summary["mechanism"] == "factorization"
    assert summary["factorization"]["gamma"] == pytest.approx(mech.factorization.gamma)


@pytest.mark.solver
@pytest.mark.parametrize("project", [False, True], ids=["plain", "projected"])
def test_summary_reports_the_answers_noise_beside_the_strategys_sigma(project):
    """sigma is the noise of each strategy measurement; the answers carry R Z, whose root mean
    square per answer is sigma ||R||_F / sqrt(k): computed here from R and sigma directly."""
    workload = pm.prefix(8)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(0.5), project=project, noise="continuous")
    n = 80
    release = mech.release(random_histogram(8, n=n), n=n, rng=0)
    summary = release.summary()
    R = np.asarray(mech.factorization.reconstruction)
    sigma = mech.noise.std / n  # per strategy measurement, on the answers' scale
    by_hand = sigma * np.sqrt(np.sum(R**2) / workload.num_queries)
    assert summary["sigma"] == pytest.approx(sigma, rel=1e-12)
    assert summary["answer_sigma_rms"] == pytest.approx(by_hand, rel=1e-10)
    assert release.answer_sigma_rms == summary["answer_sigma_rms"] == mech.error_bound(n)
    assert summary["answer_sigma_rms"] > 1.2 * summary["sigma"]  # not the strategy's sigma
    # ...and empirically: the reconstructed answers' noise has that root mean square.
    if not project:
        h = random_histogram(8, n=n)
        noise = np.array([mech.release(h, n=n, rng=seed).answers - workload.answer(h) for seed in range(2000)])
        assert np.sqrt(np.mean(noise**2)) == pytest.approx(by_hand, rel=0.05)
    assert f"RMS {by_hand:.4g} on the answers" in str(release)
    # Mechanisms whose answers carry the measured noise itself do not add the field.
    gaussian = pm.GaussianMechanism(workload, pm.ZCDP(0.5), noise="continuous").release(
        random_histogram(8, n=n), n=n, rng=0)
    assert "answer_sigma_rms" not in gaussian.summary() and gaussian.answer_sigma_rms == gaussian.sigma


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
    with pytest.raises(ValueError, match="body: 'hull' .*explicit matrix"):
        pm.FactorizationMechanism(pm.prefix(6, implicit=True), pm.ZCDP(1.0), project=True, body="hull")
    with pytest.raises(ValueError, match="body: 'auto' finds no tractable body .*implicit without rmatvec"):
        pm.FactorizationMechanism(pm.prefix(6, implicit=True), pm.ZCDP(1.0), project=True)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1.0))
    with pytest.raises(ValueError, match="n"):
        mech.release(random_histogram(6), n=0)
    with pytest.raises(ValueError, match="factorization: it factorizes prefix"):
        pm.FactorizationMechanism(pm.identity(4), pm.ZCDP(1.0), factorization=pm.factorization_norm(pm.prefix(4)))
    with pytest.raises(ValueError, match="histogram"):
        mech.release(np.full(6, np.nan), n=10)


def test_factors_that_do_not_reproduce_the_workload_are_refused():
    """A Factorization object of the right workload whose factors give other queries: R = 0, or a
    rank-one strategy that cannot span prefix(3)."""
    workload = pm.prefix(3)
    zero = pm.Factorization(workload, np.eye(3), reconstruction=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="factorization: its factors"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=zero)
    rank_one = pm.Factorization(workload, np.ones((1, 3)))
    with pytest.raises(ValueError, match="factorization: its factors"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=rank_one)


@pytest.mark.solver
def test_approximate_factorization_bias_is_bounded():
    # Approximate factorizations (ENU20): with R M = F + E the answers carry E h, and ||E h|| <= ||E||_{1->2}.
    rng = np.random.default_rng(1)
    alpha = 0.1
    F = 1.0 + alpha * rng.choice([-1.0, 1.0], size=(3, 5))
    workload = pm.Workload(F)
    fact = pm.approximate_factorization_norm(workload, alpha)
    mech = pm.FactorizationMechanism(workload, pm.ZCDP(1e14), factorization=fact)  # negligible noise
    for seed in range(10):
        h = random_histogram(5, seed, 100)
        bias = mech.release(h, n=100, rng=seed).answers - workload.answer(h)
        np.testing.assert_allclose(bias, fact.perturbation @ h, atol=1e-6)
        assert np.linalg.norm(bias) <= fact.residual + 1e-6


# --------------------------------------------------------------------------------------------
# The projection's body: chosen as ProjectionMechanism chooses it (issue 31)
# --------------------------------------------------------------------------------------------


def test_projection_takes_the_body_auto_chooses_and_reports_it():
    """2-way marginals of 23 binary attributes: 2^23 elements, above what body="auto" projects
    onto K_Q, so the relaxation L, as for ProjectionMechanism. The release is certified, names the
    body, and carries the very noise of the unprojected mechanism (the projection is
    post-processing: the same sigma, the same noisy answers for the same seed)."""
    d = 23
    domain = pm.Domain([f"x{i}" for i in range(d)], [2] * d)
    workload = pm.marginals(domain, 2, implicit=True)
    plain = pm.FactorizationMechanism(workload, pm.ZCDP(1.0), noise="continuous")
    projected = pm.FactorizationMechanism(workload, pm.ZCDP(1.0), project=True, noise="continuous",
                                          factorization=plain.factorization)
    assert projected.body.name == pm.ProjectionMechanism(workload, pm.ZCDP(1.0)).body.name == "relaxed"
    assert "Relaxation(" in repr(projected)
    data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(500, d)), domain)
    release, unprojected = projected.release(data, rng=3), plain.release(data, rng=3)
    assert release.mechanism == "factorization+projection"
    summary = release.summary()
    assert summary["body"] == "relaxation/sdp+local"
    stats_ = release.projection.stats
    assert str(stats_.status) == "optimal" and stats_.gap <= stats_.tolerance
    assert release.moments is not None and release.witness is None
    np.testing.assert_array_equal(release.noisy_answers, unprojected.noisy_answers)
    assert release.sigma == unprojected.sigma and release.privacy == unprojected.privacy
    # A point of L: every 2-way table of the 253 pairs is a distribution over its 4 cells.
    tables = release.answers.reshape(d * (d - 1) // 2, 4)
    assert tables.min() >= -1e-6
    np.testing.assert_allclose(tables.sum(axis=1), 1.0, atol=1e-6)
    # Never farther from the truth than the noisy answers it projected.
    truth = workload.answer_data(data)
    assert np.linalg.norm(release.answers - truth) <= np.linalg.norm(release.noisy_answers - truth) + 1e-9


def test_body_and_relaxation_options_as_for_the_projection_mechanism():
    workload = pm.prefix(16)
    fact = pm.factorization_norm(workload)
    hull = pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=fact, project=True, body="hull")
    assert hull.body.name == "hull" == pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=fact,
                                                                 project=True).body.name
    domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    relaxed = pm.FactorizationMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), project=True, body="relaxed",
                                        relaxation="local", solver="SCS")
    assert (relaxed.body.name, relaxed.body.relaxation, relaxed.body.solver) == ("relaxed", "local", "SCS")
    assert not pm.FactorizationMechanism.needs_matrix(project=True, body="relaxed", solver="CLARABEL")
    assert pm.FactorizationMechanism.needs_matrix(project=True, body="hull", solver="CLARABEL")
    assert not pm.FactorizationMechanism.needs_matrix(project=False, solver="auto")


@pytest.mark.parametrize("options, message", [
    ({"project": True, "body": "nope"}, "body: expected one of"),
    ({"project": True, "body": "relaxed"}, "body: 'relaxed' needs the workload of all 2-way marginals"),
    ({"project": True, "relaxation": "tight"}, "relaxation: expected one of"),
    ({"project": True, "body": "hull", "solver": "admm"}, "solver: expected 'auto', 'fast'"),
    ({"body": "hull"}, "body: applies only to the projection; pass project=True"),
    ({"body": "nope"}, "body: expected one of"),
    ({"solver": "fast"}, "solver: applies only to the projection"),
    ({"tol": 1e-3}, "tol: applies only to the projection"),
    ({"relaxation": "local"}, "relaxation: applies only to the projection"),
])
def test_projection_options_are_refused_before_the_optimization(monkeypatch, options, message):
    """Every projection option is checked, and one given without project=True refused (not
    ignored), before the strategy is optimized."""
    import projmech.factorization

    def optimization(*args, **kwargs):
        raise AssertionError("the strategy was optimized before the options were checked")

    # Where the mechanism looks it up when it optimizes.
    monkeypatch.setattr(projmech.factorization, "factorization_norm", optimization)
    with pytest.raises(ValueError, match=f"^{message}"):
        pm.FactorizationMechanism(pm.prefix(6), pm.ZCDP(1.0), **options)
