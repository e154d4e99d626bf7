"""The factorization mechanism's projection of its measurements in their own metric (``metric=``):
the answers read off the projected tables, against a direct CVXPY model; the refusals; the default."""

import itertools
import json
import math

import numpy as np
import pytest

import projmech as pm
from oracles import clarabel_solve, marginal_matrix, point_room, summing_matrix, universe_least_squares

SIZES = (2, 3, 2)
DOMAIN = pm.Domain(["a", "b", "c"], list(SIZES))
PAIRS = list(itertools.combinations(range(3), 2))


def skewed_data(rows=80, seed=0):
    """Few rows, most on a few cells: under strong noise the least-squares tables have negative cells."""
    rng = np.random.default_rng(seed)
    universe = math.prod(SIZES)
    cells = rng.choice(universe, size=rows, p=rng.dirichlet(np.full(universe, 0.3)))
    return pm.Dataset(np.column_stack(np.unravel_index(cells, SIZES)), DOMAIN)


def dense_query(measurement):
    """The measurement's query as a matrix over its table's cells."""
    cells = math.prod(SIZES[a] for a in measurement.attributes)
    return np.eye(cells) if measurement.query is None else measurement.query.toarray()


def reference_tables(measurements, metric):
    """The 2-way tables on the local polytope nearest the measurements, by Clarabel on a direct model:
    ``sum_i ||Q_i mu_{S_i} - y_i||^2 / sigma_i^2`` (``"precision"``) or, from the least-squares
    tables over the universe, ``sum_T ||mu_T - mu~_T||^2`` (``"tables"``); the accuracy Clarabel's
    status vouches for."""
    import cvxpy as cp

    tables = {pair: cp.Variable(SIZES[pair[0]] * SIZES[pair[1]], nonneg=True) for pair in PAIRS}
    constraints = [cp.sum(tables[PAIRS[0]]) == 1]
    for first, second in itertools.combinations(PAIRS, 2):
        (shared,) = set(first) & set(second)
        shape = [SIZES[a] for a in first], [SIZES[a] for a in second]
        constraints.append(marginal_matrix(shape[0], list(first), [shared]) @ tables[first]
                           == marginal_matrix(shape[1], list(second), [shared]) @ tables[second])

    def read(attributes):
        """The tables' marginal on ``attributes`` (a 2-way table holding them, summed)."""
        holder = next(pair for pair in PAIRS if set(attributes) <= set(pair))
        return marginal_matrix([SIZES[a] for a in holder], list(holder), list(attributes)) @ tables[holder]

    if metric == "precision":
        objective = sum(cp.sum_squares(dense_query(m) @ read(m.attributes) - m.values) / m.sigma**2
                        for m in measurements)
    else:
        estimate = universe_least_squares(measurements, SIZES)
        objective = sum(cp.sum_squares(tables[pair] - summing_matrix(pair, SIZES) @ estimate) for pair in PAIRS)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    accuracy = clarabel_solve(problem)
    return {pair: np.asarray(tables[pair].value) for pair in PAIRS}, accuracy


@pytest.mark.solver
@pytest.mark.parametrize("metric", ["tables", "precision"])
def test_answers_are_the_tables_projected_in_the_measurements_metric(metric):
    """The released answers are the workload's on the tables project_measurements finds from the
    release's own measurements (Release.measurements, another path than the mechanism's), and those
    tables are a direct CVXPY model's optimum: generalized least squares, or the least-squares tables
    projected in their norm, over the local polytope."""
    workload = pm.marginals(DOMAIN, 2)
    data = skewed_data()
    mechanism = pm.FactorizationMechanism(workload, pm.ZCDP(0.05), project=True, metric=metric, tol=1e-7,
                                          noise="continuous")
    assert mechanism.body.name == "local" and mechanism.metric == metric
    release = mechanism.release(data, rng=7)
    # The noise is strong enough for the projection to matter: the unprojected answers have
    # negative cells, the released ones do not.
    assert release.noisy_answers.min() < -0.01 and release.answers.min() >= -1e-12
    measurements = release.measurements()
    direct = pm.bodies.project_measurements(SIZES, measurements, metric=metric, tol=1e-7)
    expected = np.concatenate([direct.marginal(pair).ravel() for pair in PAIRS])
    np.testing.assert_allclose(release.answers, expected, rtol=0, atol=1e-12)
    assert isinstance(release.projection, pm.bodies.LocalResult)
    stats = release.projection.stats
    assert str(stats.status) == "optimal" and stats.gap <= stats.tolerance and stats.tolerance_met is True
    assert json.loads(json.dumps(release.summary()))["body"] == "local"
    # The CVXPY model's optimum, within what Clarabel's status vouches for: its points were
    # measured within 9e-8 of ours where it meets its tolerances, on 12 seeds and both metrics
    # (1e-6 leaves a margin of 10; the projection moves the answers by about 1e-2), else the
    # strong-convexity bound. tol=1e-7 is certified on all of them (1e-9 was not on two).
    reference, accuracy = reference_tables(measurements, metric)
    room = point_room(accuracy, 1e-6)
    for pair in PAIRS:
        np.testing.assert_allclose(release.projection.marginal(pair).ravel(), reference[pair], rtol=0, atol=room)
    # Post-processing: the very noise and noisy answers of the unprojected mechanism.
    plain = pm.FactorizationMechanism(workload, pm.ZCDP(0.05), factorization=mechanism.factorization,
                                      noise="continuous").release(data, rng=7)
    np.testing.assert_array_equal(release.noisy_answers, plain.noisy_answers)
    assert release.sigma == plain.sigma


def test_lower_order_and_total_queries_are_read_off_the_tables():
    """Marginals of orders 0 to 2 read through the workload's own terms: the total is 1, each
    1-way table the sum of a 2-way one."""
    workload = pm.marginals(DOMAIN, ways=(0, 1, 2))
    release = pm.FactorizationMechanism(workload, pm.ZCDP(0.05), project=True, metric="tables",
                                        noise="continuous").release(skewed_data(), rng=1)
    labels = list(workload.labels)
    result = release.projection
    assert release.answers[0] == 1.0
    for attribute, name in enumerate("abc"):
        rows = [index for index, label in enumerate(labels) if label.startswith(f"{name}=") and "&" not in label]
        pair = next(p for p in result.tables if attribute in p)
        summed = result.marginal(pair).sum(axis=1 - pair.index(attribute))
        np.testing.assert_allclose(release.answers[rows], summed, rtol=0, atol=1e-12)


def test_a_projection_stopped_short_raises_with_its_best_point():
    """A tolerance no solver reaches: the release is refused with the certified best point, as the
    answers' projection refuses (LocalError), never passed off."""
    mechanism = pm.FactorizationMechanism(pm.marginals(DOMAIN, 2), pm.ZCDP(0.05), project=True,
                                          metric="precision", tol=1e-30, noise="continuous")
    with pytest.raises(pm.bodies.LocalError, match="above its tolerance") as raised:
        mechanism.release(skewed_data(), rng=2)
    best = raised.value.best
    assert best is not None and best.stats.gap > best.stats.tolerance


def test_the_default_is_the_answers_projection():
    """``metric="answers"`` is the default and today's projection, onto the body "auto" picks."""
    workload = pm.marginals(DOMAIN, 2)
    fact = pm.factorization_norm(workload)
    default = pm.FactorizationMechanism(workload, pm.ZCDP(0.05), factorization=fact, project=True,
                                        noise="continuous")
    explicit = pm.FactorizationMechanism(workload, pm.ZCDP(0.05), factorization=fact, project=True,
                                         metric="answers", noise="continuous")
    assert default.metric == explicit.metric == "answers"
    assert default.body.name == pm.ProjectionMechanism(workload, pm.ZCDP(0.05)).body.name == "hull"
    data = skewed_data()
    first, second = default.release(data, rng=3), explicit.release(data, rng=3)
    np.testing.assert_array_equal(first.answers, second.answers)
    assert isinstance(first.projection, pm.bodies.ProjectionResult)
    assert "metric" not in repr(default) and "metric='tables'" in repr(
        pm.FactorizationMechanism(workload, pm.ZCDP(0.05), factorization=fact, project=True, metric="tables"))
    assert not pm.FactorizationMechanism.needs_matrix(project=True, body="hull", solver="CLARABEL", metric="tables")


@pytest.mark.parametrize("metric", ["tables", "precision"])
def test_no_error_bound_in_another_norm(metric):
    """The measurements' projections are never worse in their own norm, not the answers': the
    unprojected answers' error is no bound on theirs, and is not passed off as one."""
    mechanism = pm.FactorizationMechanism(pm.marginals(DOMAIN, 2), pm.ZCDP(0.05), project=True, metric=metric)
    with pytest.raises(ValueError, match=f"^error_bound: metric={metric!r} projects in the"):
        mechanism.error_bound(100)


@pytest.mark.parametrize("workload, options, message", [
    ("marginals", {"metric": "nope", "project": True}, "metric: expected one of"),
    ("marginals", {"metric": "tables"}, "metric: applies only to the projection; pass project=True"),
    ("marginals", {"metric": "precision", "project": True, "body": "hull"},
     "metric: 'precision' projects the strategy's measurements onto the local polytope, which body 'hull' is not; "
     "use body='local' or metric='answers'"),
    ("marginals", {"metric": "tables", "project": True, "body": "relaxed"},
     "metric: 'tables' projects the strategy's measurements onto the local polytope, which body 'relaxed' is not"),
    ("prefix", {"metric": "tables", "project": True}, "metric: 'tables' projects measurements of a marginal"),
    ("marginals", {"metric": "tables", "project": True, "solver": "fast"}, "solver: body 'local' runs its own"),
    ("totals", {"metric": "tables", "project": True},
     r"metric: 'tables' projects measurements of a marginal workload's tables, but marginals\(ways=\(0,\)\) reads "
     "no attribute"),
])
def test_bad_metrics_are_refused_before_the_optimization(monkeypatch, workload, options, message):
    import projmech.factorization

    def optimization(*args, **kwargs):
        raise AssertionError("the strategy was optimized before the options were checked")

    monkeypatch.setattr(projmech.factorization, "factorization_norm", optimization)
    queries = {"marginals": pm.marginals(DOMAIN, 2), "prefix": pm.prefix(6),
               "totals": pm.marginals(DOMAIN, ways=(0,))}[workload]
    with pytest.raises(ValueError, match=f"^{message}"):
        pm.FactorizationMechanism(queries, pm.ZCDP(1.0), **options)


def test_a_strategy_that_measures_no_tables_is_refused():
    """A dense strategy over the universe (the iterative method's) has no measurements of tables."""
    workload = pm.marginals(DOMAIN, 2)
    dense = pm.factorization_norm(workload, method="iterative")
    with pytest.raises(ValueError, match="^metric: 'tables' projects measurements of tables, but the strategy"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=dense, project=True, metric="tables")
    # Without project=True, that is what is said first.
    with pytest.raises(ValueError, match="^metric: applies only to the projection"):
        pm.FactorizationMechanism(workload, pm.ZCDP(1.0), factorization=dense, metric="tables")


def test_rows_come_from_the_projected_tables_in_their_norm_and_are_refused_in_the_noise_metric():
    """Synthetic rows of a metric='tables' release are drawn from its projected (maximal) tables and
    checked against them, even where the workload also asks lower-order tables; a 'precision'
    release's answers are the measurements', which rows do not answer: refused, naming the way out."""
    data = skewed_data(rows=400)
    workload = pm.marginals(DOMAIN, ways=(1, 2))
    release = pm.FactorizationMechanism(workload, pm.ZCDP(4.0), project=True, metric="tables",
                                        noise="continuous").release(data, rng=np.random.default_rng(0))
    rows = pm.synthetic.synthetic_data(DOMAIN, release, 400, np.random.default_rng(1))
    for pair in PAIRS:  # the rows' 2-way tables, counted here, against the projected tables
        counts = np.zeros((SIZES[pair[0]], SIZES[pair[1]]))
        np.add.at(counts, (rows.data.records[:, pair[0]], rows.data.records[:, pair[1]]), 1.0)
        assert np.abs(counts / 400 - release.projection.marginal(pair)).max() <= 2.0 / 400
    precision = pm.FactorizationMechanism(workload, pm.ZCDP(4.0), project=True, metric="precision",
                                          noise="continuous").release(data, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="metric='tables' or 'answers'"):
        pm.synthetic.synthetic_data(DOMAIN, precision, 400, np.random.default_rng(1))
    # Where the measurements are as many as the workload's answers (two attributes, 2-way), too.
    pair = pm.Domain(["a", "b"], [2, 3])
    few = pm.Dataset(np.random.default_rng(2).integers(0, [2, 3], size=(50, 2)), pair)
    release = pm.FactorizationMechanism(pm.marginals(pair, 2), pm.ZCDP(4.0), project=True, metric="precision",
                                        noise="continuous").release(few, rng=np.random.default_rng(0))
    assert release.projection.answers.size == release.answers.size and release.summary()["metric"] == "precision"
    with pytest.raises(ValueError, match="metric='tables' or 'answers'"):
        pm.synthetic.synthetic_data(pair, release, 50, np.random.default_rng(1))
