"""Projection of measurements in their own metric (generalized least squares over the local
polytope), checked against a direct CVXPY model, the cells' projection and its own warm start."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oracles import clarabel_solve, helmert_contrasts, summing_matrix, universe_least_squares
from projmech.bodies import LocalError, project_measurements
from projmech.tables import KroneckerQuery, Measurement

SIZES = (2, 3, 2, 2)
TABLES = [(0, 1), (1, 2), (2, 3), (0, 3)]  # a cycle: the local polytope is a relaxation


def sparse_truth(rng) -> np.ndarray:
    """A distribution over the universe with most cells empty: the non-negativity binds."""
    weights = np.where(rng.random(math.prod(SIZES)) < 0.3, rng.random(math.prod(SIZES)), 0.0)
    weights[0] += 0.1
    return weights / weights.sum()


def table_of(truth: np.ndarray, attributes) -> np.ndarray:
    axes = tuple(a for a in range(len(SIZES)) if a not in attributes)
    return truth.reshape(SIZES).sum(axis=axes).ravel()


def residual_measurements(seed: int, sigma: float = 0.08) -> list[Measurement]:
    rng = np.random.default_rng(seed)
    truth = sparse_truth(rng)
    subsets = sorted({s for t in TABLES for size in (1, 2) for s in itertools.combinations(t, size)})
    out = []
    for subset in subsets:
        query = KroneckerQuery(tuple(helmert_contrasts(SIZES[a]) for a in subset), 0.5 + rng.random())
        values = query @ table_of(truth, subset) + sigma * rng.standard_normal(query.shape[0])
        out.append(Measurement(subset, values, sigma, query))
    return out


def direct_model(measurements):
    """The generalized least-squares problem over consistent non-negative tables, as CVXPY states it."""
    import cvxpy as cp

    variables = {t: cp.Variable(math.prod(SIZES[a] for a in t), nonneg=True) for t in TABLES}

    def summing(table, kept):
        shape = [SIZES[a] for a in table]
        matrix = np.zeros((math.prod(SIZES[a] for a in kept), math.prod(shape)))
        for column, cell in enumerate(itertools.product(*[range(n) for n in shape])):
            row = np.ravel_multi_index(tuple(cell[table.index(a)] for a in kept), [SIZES[a] for a in kept])
            matrix[row, column] = 1.0
        return matrix

    constraints = [cp.sum(v) == 1 for v in variables.values()]
    for one, two in itertools.combinations(TABLES, 2):
        shared = tuple(sorted(set(one) & set(two)))
        if shared:
            constraints.append(summing(one, shared) @ variables[one] == summing(two, shared) @ variables[two])
    terms = []
    for m in measurements:
        table = next(t for t in TABLES if set(m.attributes) <= set(t))
        terms.append(cp.sum_squares(m.query.toarray() @ (summing(table, m.attributes) @ variables[table]) - m.values)
                     / m.sigma**2)
    problem = cp.Problem(cp.Minimize(0.5 * sum(terms) if terms else 0), constraints)
    return problem, variables


def summed(result, attributes) -> np.ndarray:
    """The table of ``attributes`` summed from the first of the result's tables holding them."""
    table = next(t for t in result.tables if set(attributes) <= set(t))
    return result.marginal(table).sum(axis=tuple(i for i, a in enumerate(table) if a not in attributes))


def objective(result, measurements) -> float:
    """``(1/2) sum ||Q mu_S - y||^2 / sigma^2`` at the projection's tables, computed here."""
    total = 0.0
    for m in measurements:
        table = next(t for t in result.tables if set(m.attributes) <= set(t))
        axes = tuple(i for i, a in enumerate(table) if a not in m.attributes)
        cells = result.marginal(table).sum(axis=axes).ravel()
        total += float(np.sum((m.query @ cells - m.values) ** 2)) / m.sigma**2
    return 0.5 * total


@pytest.mark.solver
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_projection_equals_the_direct_model_and_its_certificate_is_never_optimistic(seed):
    measurements = residual_measurements(seed)
    result = project_measurements(SIZES, measurements, tol=1e-6)
    problem, variables = direct_model(measurements)
    accuracy = clarabel_solve(problem)
    ours, reference = objective(result, measurements), float(problem.value)
    room = accuracy * max(1.0, abs(reference))
    assert ours >= reference - room  # a feasible point: never below the optimum
    assert ours - reference <= result.stats.gap + room  # the certified gap bounds what is left
    assert result.stats.solver == "component-dual" and result.stats.tolerance_met
    assert result.inconsistency <= 1e-9 and result.values.min() >= 0
    # The objective is strongly convex in the components with modulus min w_A >= 0.5^2 / 0.08^2 = 39,
    # so a certified gap of at most 1e-6 x 10 puts every cell within sqrt(2e-5 / 39) = 7e-4.
    for table in TABLES:
        assert np.allclose(result.marginal(table).ravel(), variables[table].value, atol=1e-3)


def test_the_constraints_bind_in_these_cases():
    # Without the projection some cells are negative: the tests above check more than least squares.
    from projmech.tables import components_of

    parts = components_of(SIZES, residual_measurements(0))
    assert min(parts.table(t).min() for t in TABLES) < -0.01


def test_cells_given_as_queries_project_as_the_cells_do():
    """One objective, two solvers: identity measurements written as Kronecker queries of identity
    factors go through the components' dual; as cells, through the consistency multipliers."""
    rng = np.random.default_rng(5)
    truth = sparse_truth(rng)
    cells = [Measurement(t, table_of(truth, t) + 0.05 * rng.standard_normal(math.prod(SIZES[a] for a in t)),
                         0.05 * (1 + i)) for i, t in enumerate(TABLES)]
    queries = [Measurement(m.attributes, m.values, m.sigma,
                           KroneckerQuery(tuple(np.eye(SIZES[a]) for a in m.attributes))) for m in cells]
    # Certified within 1e-7 x ~10 of the optimum, in components of precision at least
    # 1 / (0.2^2 x 3) = 8.3: each within sqrt(2e-6 / 8.3) = 5e-4 of it.
    one = project_measurements(SIZES, cells, tol=1e-7)
    two = project_measurements(SIZES, queries, tol=1e-7)
    assert one.stats.solver != two.stats.solver == "component-dual"
    for table in TABLES:
        assert np.allclose(one.marginal(table), two.marginal(table), atol=1e-3)


@pytest.mark.solver
def test_the_tables_metric_projects_the_least_squares_tables_in_their_own_norm():
    """The oracle: least squares over the universe, summed onto the tables, projected onto the local
    polytope by a CVXPY model of the Euclidean distance."""
    import cvxpy as cp

    measurements = residual_measurements(1)
    x = universe_least_squares(measurements, SIZES)
    estimate = {t: summing_matrix(t, SIZES) @ x for t in TABLES}
    problem, variables = direct_model([])
    problem = cp.Problem(cp.Minimize(0.5 * sum(cp.sum_squares(variables[t] - estimate[t]) for t in TABLES)),
                         problem.constraints)
    accuracy = clarabel_solve(problem)
    result = project_measurements(SIZES, measurements, metric="tables", tol=1e-8)
    ours = 0.5 * sum(float(np.sum((result.marginal(t).ravel() - estimate[t]) ** 2)) for t in TABLES)
    assert abs(ours - float(problem.value)) <= accuracy * max(1.0, float(problem.value)) + 1e-9
    for table in TABLES:
        assert np.allclose(result.marginal(table).ravel(), variables[table].value, atol=2e-4)


def test_with_equal_noise_on_the_maximal_tables_both_metrics_agree():
    rng = np.random.default_rng(6)
    truth = sparse_truth(rng)
    cells = [Measurement(t, table_of(truth, t) + 0.05 * rng.standard_normal(math.prod(SIZES[a] for a in t)), 0.05)
             for t in TABLES]
    one = project_measurements(SIZES, cells, tol=1e-10)
    two = project_measurements(SIZES, cells, metric="tables", tol=1e-10)
    for table in TABLES:
        assert np.allclose(one.marginal(table), two.marginal(table), atol=1e-6)


def test_a_warm_start_changes_the_work_not_the_answer():
    measurements = residual_measurements(2)
    cold = project_measurements(SIZES, measurements, tol=1e-6)
    warm = project_measurements(SIZES, measurements, tol=1e-6, start=cold)
    assert warm.stats.iterations <= cold.stats.iterations
    for table in TABLES:
        assert np.allclose(cold.marginal(table), warm.marginal(table), atol=2e-3)


def test_a_start_from_fewer_measurements_gives_the_cold_answer():
    measurements = residual_measurements(3)
    fewer = [m for m in measurements if m.attributes not in ((2, 3), (0, 3))]  # the tables (0, 1), (1, 2) only
    earlier = project_measurements(SIZES, fewer, tol=1e-6)
    cold = project_measurements(SIZES, measurements, tol=1e-6)
    warm = project_measurements(SIZES, measurements, tol=1e-6, start=earlier)
    for table in TABLES:  # both within 7e-4 of the optimum (see above)
        assert np.allclose(cold.marginal(table), warm.marginal(table), atol=2e-3)


def test_an_attribute_of_one_value_has_no_component_to_measure():
    """Cells of tables with an attribute of one value, given as cells and as Kronecker queries of
    identity factors (the second goes through the components): the same projection."""
    sizes = (1, 3, 2)
    rng = np.random.default_rng(8)
    truth = rng.dirichlet(np.full(6, 0.3)).reshape(sizes)
    tables = [(0, 1), (1, 2)]
    cells = [Measurement(t, truth.sum(axis=tuple(a for a in range(3) if a not in t)).ravel()
                         + 0.2 * rng.standard_normal(math.prod(sizes[a] for a in t)), 0.2) for t in tables]
    queries = [Measurement(m.attributes, m.values, m.sigma,
                           KroneckerQuery(tuple(np.eye(sizes[a]) for a in m.attributes))) for m in cells]
    # The optimum is a vertex (one cell holds everything): the shrinking toward uniform tables that
    # makes the certificate's point feasible costs about the last negative cell, so the dual's own
    # precision allows a gap of about 1e-8 here, not less.
    one, two = project_measurements(sizes, cells, tol=1e-6), project_measurements(sizes, queries, tol=1e-6)
    for table in tables:
        assert np.allclose(summed(one, table), summed(two, table), atol=1e-3)


def test_a_measured_total_informs_no_table():
    rng = np.random.default_rng(9)
    values = rng.dirichlet(np.ones(6))
    cells = [Measurement((1, 2), values, 0.1, KroneckerQuery((np.eye(3), np.eye(2))))]
    total = Measurement((0,), np.array([1.01]), 0.1, KroneckerQuery((np.ones((1, 2)),)))
    alone, with_total = project_measurements(SIZES, cells), project_measurements(SIZES, [total, *cells])
    assert with_total.tables == alone.tables == ((1, 2),)
    assert np.allclose(alone.marginal((1, 2)), with_total.marginal((1, 2)))
    with pytest.raises(ValueError, match="^measurements: none informs a table beyond its total"):
        project_measurements(SIZES, [total])


@pytest.mark.parametrize("where", ["values", "factor", "scale"])
def test_non_finite_values_or_queries_are_refused(where):
    query = KroneckerQuery((helmert_contrasts(2),), np.nan if where == "scale" else 1.0)
    if where == "factor":
        query = KroneckerQuery((np.array([[np.inf, 0.0]]),))
    values = np.array([np.nan if where == "values" else 0.1])
    with pytest.raises(ValueError, match=r"^measurements: the (values|query) on \(0,\) must (be finite|have finite)"):
        project_measurements(SIZES, [Measurement((0,), values, 0.1, query)])


def test_a_start_of_the_other_kind_is_refused():
    measurements = residual_measurements(2)
    cells = [Measurement(t, np.full(math.prod(SIZES[a] for a in t), 1 / math.prod(SIZES[a] for a in t)), 0.1)
             for t in TABLES]
    of_cells, of_queries = project_measurements(SIZES, cells), project_measurements(SIZES, measurements)
    with pytest.raises(ValueError, match="^start: a projection of cells cannot start one of queries"):
        project_measurements(SIZES, measurements, start=of_cells)
    with pytest.raises(ValueError, match="^start: a projection of queries in their metric cannot start one of cells"):
        project_measurements(SIZES, cells, start=of_queries)
    with pytest.raises(ValueError, match="^start: a projection of queries in their metric cannot start one in the"):
        project_measurements(SIZES, measurements, metric="tables", start=of_queries)


def test_a_projection_stopped_short_is_reported_with_its_best_point():
    with pytest.raises(LocalError, match="stopped after") as caught:
        project_measurements(SIZES, residual_measurements(0), tol=1e-12, max_iterations=1)
    assert caught.value.best is not None and not caught.value.best.stats.tolerance_met


def test_bad_arguments_are_refused_before_any_work():
    measurements = residual_measurements(0)
    with pytest.raises(ValueError, match="^metric: expected 'precision' or 'tables', got 'gls'"):
        project_measurements(SIZES, measurements, metric="gls")
    with pytest.raises(TypeError, match="^measurements: expected a sequence of Measurement"):
        project_measurements(SIZES, [("not", "a", "measurement")])
    with pytest.raises(ValueError, match=r"components on \[\(0,\)\] of the table \(0, 1\) are not measured"):
        project_measurements(SIZES, [m for m in measurements if m.attributes != (0,)])
