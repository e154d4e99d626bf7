"""A release's noisy measurements as data (Release.measurements), checked against independent computations:
the true tables counted from the records, the noise's distribution, and the least-squares answers."""

import functools

import numpy as np
import pytest

import projmech as pm
from projmech.tables import Measurement
from projmech.workloads import identity, kron, prefix, total

DOMAIN = pm.Domain(["a", "b", "c"], [2, 3, 4])
N = 500


@functools.cache
def dataset():
    rng = np.random.default_rng(7)
    return pm.Dataset(rng.integers(0, DOMAIN.sizes, size=(N, len(DOMAIN))), DOMAIN)


def workloads():
    return {
        "marginals": pm.marginals(DOMAIN, 2),
        "marginals with total": pm.marginals(DOMAIN, ways=(0, 1)),
        "range marginals": pm.workloads.range_marginals(DOMAIN, 2, {"a": "prefix", "c": "all_range"}),
        "kron with a total": kron([identity(2), total(3), prefix(4)], domain=DOMAIN),
    }


@functools.cache
def mechanism(name, rho):
    workload = workloads()[name]
    # The structured strategy even where a dense one would be chosen on so small a universe.
    factorization = pm.factorization_norm(workload, method="structured")
    return pm.FactorizationMechanism(workload, pm.ZCDP(rho), factorization=factorization, noise="continuous")


def truth(measurement):
    """The measured queries' true answers, from the table counted from the records."""
    table = dataset().table(measurement.attributes).ravel() / N
    return table if measurement.query is None else measurement.query @ table


def on_universe(measurement):
    """The measurement's query as a matrix over the universe: the unread attributes summed out."""
    marginalize = functools.reduce(np.kron, [np.eye(n) if i in measurement.attributes else np.ones((1, n))
                                             for i, n in enumerate(DOMAIN.sizes)])
    return marginalize if measurement.query is None else measurement.query.toarray() @ marginalize


@pytest.mark.parametrize("name", list(workloads()))
def test_without_noise_the_values_are_the_queries_on_the_true_tables(name):
    release = mechanism(name, 1e16).release(dataset(), rng=0)
    measurements = release.measurements()
    assert measurements and all(isinstance(m, Measurement) for m in measurements)
    for m in measurements:
        m.check(DOMAIN.sizes)
        assert m.sigma == release.sigma < 1e-10
        np.testing.assert_allclose(m.values, truth(m), rtol=0, atol=1e-9)
    # Every measured number, once: the blocks partition the strategy's rows.
    assert sum(m.values.size for m in measurements) == release.factorization.strategy.num_queries


def test_a_kronecker_block_reads_only_the_attributes_its_factors_do_not_sum_out():
    (measurement,) = mechanism("kron with a total", 1.0).release(dataset(), rng=0).measurements()
    assert measurement.attributes == (0, 2) and measurement.query.shape == (8, 8)


@pytest.mark.parametrize("name", ["marginals", "range marginals", "kron with a total"])
def test_sigma_is_the_standard_deviation_of_each_value(name):
    mech = mechanism(name, 1.0)
    residuals, sigmas = [], []
    for seed in range(150):
        for m in mech.release(dataset(), rng=seed).measurements():
            residuals.append(m.values - truth(m))
            sigmas.append(np.full(m.values.size, m.sigma))
    residual, sigma = np.concatenate(residuals), np.concatenate(sigmas)
    assert residual.size >= 1000

    def standardized_moments(scale):
        z = residual / (scale * sigma)
        return abs(z.mean()), z.var()

    # About 1,200 to 2,700 draws: the mean's standard error is under 0.03, the variance's under 0.05.
    mean, variance = standardized_moments(1.0)
    assert mean < 0.15 and abs(variance - 1.0) < 0.25
    # A sigma off by a factor 2 either way fails the same check.
    for wrong in (0.5, 2.0):
        assert abs(standardized_moments(wrong)[1] - 1.0) > 0.5


@pytest.mark.parametrize("name", list(workloads()))
def test_the_measurements_determine_the_reconstructed_answers(name):
    release = mechanism(name, 1.0).release(dataset(), rng=3)
    measurements = release.measurements()
    queries = np.vstack([on_universe(m) for m in measurements])
    values = np.concatenate([m.values for m in measurements])
    # Equal noise on every value: the least-squares histogram, then the workload's answers on it.
    histogram = np.linalg.lstsq(queries, values, rcond=None)[0]
    answers = workloads()[name].answer(histogram)
    np.testing.assert_allclose(release.noisy_answers, answers, rtol=0, atol=1e-9)
    assert np.abs(release.noisy_answers - workloads()[name].answer_counts(dataset()) / N).max() > 1e-4


def test_the_gaussian_mechanism_measures_each_marginal_s_cells():
    workload = pm.marginals(DOMAIN, ways=(0, 2))
    release = pm.GaussianMechanism(workload, pm.ZCDP(1e16), noise="continuous").release(dataset(), rng=0)
    measurements = release.measurements()
    assert [m.attributes for m in measurements] == [(0,), (0, 1), (0, 2), (1, 2)]
    total, *tables = measurements
    assert total.query.toarray().tolist() == [[1.0, 1.0]]  # the total reads the first attribute's table
    assert all(m.query is None and m.sigma == release.sigma for m in tables)
    for m in measurements:
        np.testing.assert_allclose(m.values, truth(m), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(np.concatenate([m.values for m in measurements]), release.noisy_answers)


def test_no_measurements_without_table_structure_or_gaussian_noise():
    histogram = np.full(4, 0.25)
    dense = pm.FactorizationMechanism(pm.prefix(4), pm.ZCDP(1.0), noise="continuous")
    assert dense.release(histogram, 100, rng=0).measurements() is None
    laplace = pm.LaplaceMechanism(pm.marginals(DOMAIN, 1), pm.PureDP(1.0), noise="continuous")
    assert laplace.release(dataset(), rng=0).measurements() is None


def test_a_strategy_block_stays_factored_however_large_its_table():
    """A residual block on three attributes of 60 values: a dense query would hold 59^3 x 60^3, about
    4e10 entries; the measurement holds its three 59 x 60 Helmert factors."""
    domain = pm.Domain(["x", "y", "z"], [60, 60, 60])
    records = np.random.default_rng(0).integers(0, 60, size=(200, 3))
    workload = pm.marginals(domain, 3, implicit=True)
    release = pm.FactorizationMechanism(workload, pm.ZCDP(1.0), noise="continuous").release(
        pm.Dataset(records, domain), rng=0)
    (block,) = [m for m in release.measurements() if m.attributes == (0, 1, 2)]
    assert block.query.shape == (59**3, 60**3)
    assert [f.shape for f in block.query.factors] == [(59, 60)] * 3
    gram = block.query.factors[0] @ block.query.factors[0].T
    np.testing.assert_allclose(gram, np.eye(59), atol=1e-12)  # orthonormal contrasts
