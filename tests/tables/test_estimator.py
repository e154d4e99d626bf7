"""The estimator protocol: each estimator implements it, and a warm start gives the cold start's
answer (from the answer itself at once, from a previous round's to its tolerance)."""

import cvxpy as cp
import numpy as np
import pytest

from oracles import clarabel_solve
from projmech.bodies import LocalProjection, LocalResult, project_measurements
from projmech.solve import Status
from projmech.tables import (
    Estimator,
    MaximumEntropy,
    Measurement,
    NoisyMarginals,
    TableModel,
    fit_maximum_entropy,
    fit_noisy_marginals,
)

SIZES = (3, 2, 4, 2)
ROUNDS = [(0,), (1,), (2,), (3,), (0, 1), (1, 2), (2, 3), (0, 1)]


def _marginal(joint, axes):
    return joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in axes))


def _measurements(seed, noise=0.02):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(int(np.prod(SIZES)))).reshape(SIZES)
    return [Measurement(t, (_marginal(truth, t) + rng.normal(0, noise, _marginal(truth, t).shape)).ravel(),
                        noise * (1 + i % 2)) for i, t in enumerate(ROUNDS)], truth


@pytest.mark.parametrize("estimator", [MaximumEntropy(SIZES), NoisyMarginals(SIZES), LocalProjection(SIZES)])
def test_every_estimator_follows_the_protocol(estimator):
    assert isinstance(estimator, Estimator)
    _, truth = _measurements(0)
    exact = [Measurement(t, _marginal(truth, t).ravel(), 0.01) for t in [(0, 1), (1, 2)]]
    model = estimator.estimate(exact)
    assert isinstance(model, TableModel) and set(model.tables) == {(0, 1), (1, 2)}
    assert model.stats.status == Status.OPTIMAL
    np.testing.assert_allclose(model.marginal((0, 1)), _marginal(truth, (0, 1)), atol=0.05)


def _hull_tables(measurements):
    """The precision-weighted projection onto the marginal polytope by CVXPY over the universe
    (the measured tables are acyclic: the local polytope is the marginal polytope)."""
    p = cp.Variable(int(np.prod(SIZES)), nonneg=True)
    index = np.arange(p.size).reshape(SIZES)
    loss = 0
    for m in measurements:
        rows = np.zeros((m.values.size, p.size))
        cells = np.ravel_multi_index(tuple(np.unravel_index(index.ravel(), SIZES)[a] for a in m.attributes),
                                     [SIZES[a] for a in m.attributes])
        rows[cells, np.arange(p.size)] = 1.0
        loss = loss + cp.sum_squares(rows @ p - m.values) / m.sigma**2
    clarabel_solve(cp.Problem(cp.Minimize(loss), [cp.sum(p) == 1]))
    return p.value.reshape(SIZES)


@pytest.mark.parametrize("seed", range(3))
def test_the_local_projection_warm_started_from_a_previous_round_is_the_cold_one(seed):
    measurements, _ = _measurements(seed)
    previous = project_measurements(SIZES, measurements[:-2])
    cold = project_measurements(SIZES, measurements)
    warm = project_measurements(SIZES, measurements, start=previous)
    reference = _hull_tables(measurements)
    for table in cold.tables:
        np.testing.assert_allclose(warm.marginal(table), cold.marginal(table), atol=2e-3)
        np.testing.assert_allclose(cold.marginal(table), _marginal(reference, table), atol=2e-3)
    again = project_measurements(SIZES, measurements, start=cold)
    assert again.stats.iterations == 0
    np.testing.assert_allclose(again.values, cold.values, atol=1e-12)


def test_the_local_projection_refuses_what_it_cannot_start_from_or_measure():
    measurements, _ = _measurements(0)
    with pytest.raises(TypeError, match="start"):
        project_measurements(SIZES, measurements, start="previous")
    # A query that reads only the table's total leaves its other components undetermined.
    query = Measurement((0,), np.zeros(2), 0.1, query=np.ones((2, 3)))
    with pytest.raises(ValueError, match="^measurements: none informs a table beyond its total"):
        project_measurements(SIZES, [query])
    assert isinstance(LocalProjection(SIZES).estimate(measurements), LocalResult)


def test_maximum_entropy_warm_started_from_a_fit_to_fewer_tables_is_the_cold_fit():
    _, truth = _measurements(1)
    tables = {t: _marginal(truth, t) for t in [(0, 1), (1, 2), (2, 3), (0, 3)]}
    previous = fit_maximum_entropy(SIZES, dict(list(tables.items())[:2]), tol=1e-10)
    cold = fit_maximum_entropy(SIZES, tables, tol=1e-10, max_sweeps=5000)
    warm = fit_maximum_entropy(SIZES, tables, tol=1e-10, max_sweeps=5000, start=previous.joint)
    np.testing.assert_allclose(warm.joint, cold.joint, atol=1e-8)
    again = MaximumEntropy(SIZES, tol=1e-10).estimate([Measurement(t, v.ravel(), 1.0) for t, v in tables.items()],
                                                      start=cold)
    assert again.stats.iterations == 1
    np.testing.assert_allclose(again.joint, cold.joint, atol=1e-12)
    with pytest.raises(ValueError, match="start"):
        fit_maximum_entropy(SIZES, tables, start=np.ones(3))


@pytest.mark.parametrize("model", ["dense", "junction_tree"])
def test_noisy_marginals_to_the_gap_warm_started_is_the_cold_fit(model):
    measurements, _ = _measurements(2, noise=0.05)
    estimator = NoisyMarginals(SIZES, model=model, stop="gap", tol=1e-5)
    previous = estimator.estimate(measurements[:-2])
    cold = estimator.estimate(measurements)
    warm = estimator.estimate(measurements, start=previous)
    assert cold.stats.status == warm.stats.status == Status.OPTIMAL
    for table in [(0, 1), (1, 2), (2, 3)]:
        np.testing.assert_allclose(warm.marginal(table), cold.marginal(table), atol=5e-3)
    again = estimator.estimate(measurements, start=cold)
    assert again.stats.iterations == 0
    np.testing.assert_allclose(again.marginal((1, 2)), cold.marginal((1, 2)), atol=1e-9)


def test_noisy_marginals_refuse_a_warm_start_on_the_risk_path():
    measurements, _ = _measurements(0)
    with pytest.raises(ValueError, match="start"):
        NoisyMarginals(SIZES).estimate(measurements, start=NoisyMarginals(SIZES, rng=0).estimate(measurements))
    with pytest.raises(TypeError, match="start"):
        fit_noisy_marginals(SIZES, {(0,): np.ones(3) / 3}, 0.1, stop="gap", start=np.ones(SIZES))


@pytest.mark.parametrize("sizes", [SIZES, (3, 1, 4, 2)])
def test_measurements_projected_directly_are_their_weighted_workload_projected(sizes):
    """The layout from the measurements is the one the measured workload decomposes into: the
    same answers, tables and iterations, bit for bit (an attribute of one value joins every table
    in both)."""
    from projmech.bodies import project_to_local
    from projmech.mechanisms.adaptive import measured_workload

    rng = np.random.default_rng(4)
    measurements = [Measurement(t, rng.dirichlet(np.ones(int(np.prod([sizes[a] for a in t])))), 0.05 * (1 + i % 3))
                    for i, t in enumerate(ROUNDS)]
    workload, y = measured_workload(sizes, measurements)
    through = project_to_local(workload, y, noise_scale=1.0)
    direct = project_measurements(sizes, measurements)
    assert direct.tables == through.tables and direct.stats.iterations == through.stats.iterations
    np.testing.assert_array_equal(direct.values, through.values)
    np.testing.assert_array_equal(direct.answers, through.answers)
