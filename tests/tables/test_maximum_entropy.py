"""The maximum-entropy fit: against CVXPY's entropy maximization, closed forms, and its refusals."""

import cvxpy as cp
import numpy as np
import pytest

import projmech as pm
from oracles import clarabel_solve, point_room
from projmech.solve import Status
from projmech.tables import MAXIMUM_ENTROPY_MAX_CELLS, MaximumEntropyResult, fit_maximum_entropy, total_correlation


def _tables(joint, keys):
    return {key: joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in key)) for key in keys}


@pytest.mark.solver
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_cvxpy_on_a_cycle_of_tables(seed):
    """The three 2-way tables of a random distribution on 2 x 3 x 2 cells (a cycle: no closed
    form): the fit is CVXPY's (CLARABEL) entropy maximizer under the same tables."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(12)).reshape(2, 3, 2)
    keys = [(0, 1), (1, 2), (0, 2)]
    fit = fit_maximum_entropy((2, 3, 2), _tables(truth, keys), tol=1e-10, max_sweeps=5000)
    assert fit.stats.status is Status.OPTIMAL and fit.stats.tolerance_met
    p = cp.Variable(12, nonneg=True)
    constraints = []
    index = np.arange(12).reshape(2, 3, 2)
    for key, table in _tables(truth, keys).items():
        for cell in np.ndindex(table.shape):
            chosen = [slice(None)] * 3
            for axis, value in zip(key, cell):
                chosen[axis] = value
            constraints.append(cp.sum(p[index[tuple(chosen)].ravel()]) == table[cell])
    accuracy = clarabel_solve(cp.Problem(cp.Maximize(cp.sum(cp.entr(p))), constraints))
    # CLARABEL's interior point reaches about 1e-6 on these cells; 1e-5 leaves it room.
    np.testing.assert_allclose(fit.joint.ravel(), p.value, atol=point_room(accuracy, 1e-5))
    # The optimality condition itself, to machine precision: log p is a sum of one function per
    # table (least squares over the tables' indicator features leaves no residual).
    values = np.indices((2, 3, 2)).reshape(3, -1).T  # each cell's values, row-major
    features = np.column_stack([(values[:, list(key)] == np.array(cell)).all(axis=1)
                                for key in keys for cell in np.ndindex(*[(2, 3, 2)[a] for a in key])]).astype(float)

    def residual(joint):
        logs = np.log(joint.ravel())
        return np.max(np.abs(features @ np.linalg.lstsq(features, logs, rcond=None)[0] - logs))

    assert residual(fit.joint) < 1e-8
    assert residual(truth) > 1e-3  # the check's power: the truth has a 3-way interaction
    # Not the truth (which has more dependence than its 2-way tables).
    assert np.abs(fit.joint - truth).sum() > 1e-3


def test_a_chain_is_its_closed_form():
    """Tables (0, 1) and (1, 2): the maximum-entropy distribution is mu_01 mu_12 / mu_1."""
    rng = np.random.default_rng(3)
    truth = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    tables = _tables(truth, [(0, 1), (1, 2)])
    fit = fit_maximum_entropy((2, 3, 4), tables)
    middle = truth.sum(axis=(0, 2))
    expected = tables[(0, 1)][:, :, None] * tables[(1, 2)][None, :, :] / middle[None, :, None]
    np.testing.assert_allclose(fit.joint, expected, atol=1e-12)
    np.testing.assert_allclose(fit.marginal((1,)), middle, atol=1e-12)


def test_zero_cells_stay_zero_and_a_forced_zero_is_approached():
    """A zero in a table zeroes its cells; tables that force more zeros (1-way tables of
    a diagonal distribution with its 2-way table) are met within the tolerance."""
    diagonal = np.diag([0.5, 0.5])
    fit = fit_maximum_entropy((2, 2), {(0, 1): diagonal, (0,): np.array([0.5, 0.5])})
    np.testing.assert_allclose(fit.joint, diagonal, atol=1e-15)
    tables = {(0, 1): np.array([[0.3, 0.0], [0.2, 0.5]]), (1,): np.array([0.5, 0.5])}
    fit = fit_maximum_entropy((2, 2, 2), tables, tol=1e-9)
    assert fit.joint[0, 1].sum() == 0.0 and fit.stats.status is Status.OPTIMAL


def test_tables_no_distribution_has_are_reported_not_met():
    """A frustrated cycle: a = b and b = c with probability 0.9 each, a = c with probability 0.1
    (each pair agrees on its shared attribute, but P(a != c) <= P(a != b) + P(b != c) fails): the
    fit stops at its sweeps with status iteration_limit and its gap (the largest distance over the
    tolerance) above 1."""
    equal, unequal = np.array([[0.45, 0.05], [0.05, 0.45]]), np.array([[0.05, 0.45], [0.45, 0.05]])
    tables = {(0, 1): equal, (1, 2): equal, (0, 2): unequal}
    fit = fit_maximum_entropy((2, 2, 2), tables, tol=1e-6, max_sweeps=20)
    assert fit.stats.status is Status.ITERATION_LIMIT and not fit.stats.tolerance_met
    assert fit.stats.iterations == 20 and fit.stats.gap > 1.0
    assert "iteration_limit" in repr(fit) and isinstance(fit, MaximumEntropyResult)


def test_tables_that_agree_within_their_tolerances_are_fitted():
    """Tables rounded to 5 decimals and renormalized disagree slightly on shared axes: refused
    at the default tolerance (no distribution is within 1e-8 of both), fitted within 1e-2."""
    rng = np.random.default_rng(8)
    truth = rng.dirichlet(np.ones(27)).reshape(3, 3, 3)
    tables = {key: np.round(table, 5) / np.round(table, 5).sum() for key, table in
              _tables(truth, [(0, 1), (1, 2), (0, 2)]).items()}
    with pytest.raises(ValueError, match="more than their tolerances"):
        fit_maximum_entropy((3, 3, 3), tables)
    fit = fit_maximum_entropy((3, 3, 3), tables, tol=1e-2)
    assert fit.stats.tolerance_met


def test_per_table_tolerances():
    """A tolerance per table: the fit stops when each table is within its own."""
    rng = np.random.default_rng(5)
    truth = rng.dirichlet(np.ones(8)).reshape(2, 2, 2)
    tables = _tables(truth, [(0, 1), (1, 2), (0, 2)])
    tolerances = {(0, 1): 1e-3, (1, 2): 1e-9, (0, 2): 1e-3}
    fit = fit_maximum_entropy((2, 2, 2), tables, tol=tolerances)
    for key, table in tables.items():
        assert np.abs(fit.marginal(key) - table).sum() <= tolerances[key]


@pytest.mark.parametrize("sizes, marginals, tol, error, message", [
    ((2, 2), [np.ones(2) / 2], 1e-8, TypeError, "marginals"),
    ((2, 2), {}, 1e-8, ValueError, "marginals"),
    ((), {(0,): np.ones(2) / 2}, 1e-8, ValueError, "sizes"),
    ((2, 0), {(0,): np.ones(2) / 2}, 1e-8, ValueError, "sizes"),
    ((2, 2), {(1, 0): np.ones(4) / 4}, 1e-8, ValueError, "increasing"),
    ((2, 2), {(2,): np.ones(2) / 2}, 1e-8, ValueError, "axes"),
    ((2, 2), {(0,): np.ones(3) / 3}, 1e-8, ValueError, "needs 2 cells"),
    ((2, 2), {(0,): np.array([1.5, -0.5])}, 1e-8, ValueError, "negative"),
    ((2, 2), {(0,): np.array([0.5, np.nan])}, 1e-8, ValueError, "non-finite"),
    ((2, 2), {(0,): np.array([0.5, 0.6])}, 1e-8, ValueError, "sums to"),
    ((2, 2), {(0,): np.ones(2) / 2}, 0.0, ValueError, "tol"),
    ((2, 2), {(0,): np.array([1.0, 0.0]), (0, 1): np.array([[0.0, 0.0], [0.5, 0.5]])}, 1e-8, ValueError,
     "disagree on their shared axes"),
    ((2, 2), {(0,): np.ones(2) / 2}, {(1,): 1e-3}, ValueError, "tol"),
])
def test_refusals_name_the_argument(sizes, marginals, tol, error, message):
    with pytest.raises(error, match=message):
        fit_maximum_entropy(sizes, marginals, tol=tol)


def test_a_universe_above_the_limit_is_refused_before_any_allocation():
    sizes = (MAXIMUM_ENTROPY_MAX_CELLS, 2)
    with pytest.raises(ValueError, match="sizes: the universe holds"):
        fit_maximum_entropy(sizes, {(1,): np.ones(2) / 2})


def test_marginal_refuses_bad_axes():
    fit = fit_maximum_entropy((2, 2), {(0,): np.array([0.3, 0.7])})
    with pytest.raises(ValueError, match="axes"):
        fit.marginal((1, 0))
    # Positions are ints: 0.9 or True is refused, not read as 0 or 1.
    for bad in [(0.9,), (True,)]:
        with pytest.raises(TypeError, match="axes"):
            fit.marginal(bad)
        with pytest.raises(TypeError, match="marginals"):
            fit_maximum_entropy((2, 2), {bad: np.array([0.3, 0.7])})
    assert fit.marginal(()) == pytest.approx(1.0)  # no axes: the total
    np.testing.assert_allclose(fit.marginal((0, 1)), [[0.15, 0.15], [0.35, 0.35]], atol=1e-15)


def test_rows_from_a_distribution_are_its_cells_rounded():
    """synthetic_data rounds the distribution's cells to counts within 1 of n p."""
    domain = pm.Domain(["a", "b"], [2, 3])
    joint = np.array([[0.1, 0.2, 0.05], [0.3, 0.25, 0.1]])
    fit = fit_maximum_entropy((2, 3), {(0, 1): joint})
    workload = pm.marginals(domain, 2)
    rows = pm.synthetic_data(domain, fit, 101, np.random.default_rng(0), workload=workload)
    counts = np.zeros((2, 3))
    np.add.at(counts, (rows.data.records[:, 0], rows.data.records[:, 1]), 1)
    assert counts.sum() == 101 and np.all(np.abs(counts - 101 * joint) < 1.0)
    assert rows.method == "joint" and rows.marginal_max_error < 1.0 / 101
    with pytest.raises(ValueError, match="result"):
        pm.synthetic_data(pm.Domain(["a"], [6]), fit, 10, np.random.default_rng(0),
                          workload=pm.marginals(pm.Domain(["a"], [6]), 1))


def test_tables_whose_zeros_exclude_every_cell_are_refused():
    """Pairwise consistent tables whose zeros together leave no cell: refused, not an all-zero
    "distribution"."""
    tables = {(0, 1): np.array([[0.5, 0.0], [0.0, 0.5]]), (1, 2): np.array([[0.5, 0.0], [0.0, 0.5]]),
              (0, 2): np.array([[0.0, 0.5], [0.5, 0.0]])}
    with pytest.raises(ValueError, match="no mass on any cell"):
        fit_maximum_entropy((2, 2, 2), tables)


def test_rows_from_a_distribution_are_searched_towards_its_tables():
    """625 cells, 100 rows: most cells hold less than a row, so the rounding alone moves the
    2-way tables; the search after it brings them closer (the objective it minimizes, recomputed
    here from the rows, against the rounding's own rows)."""
    from projmech.synthetic._witness import _rounded_cells

    rng = np.random.default_rng(7)
    truth = rng.dirichlet(np.full(625, 0.3)).reshape(5, 5, 5, 5)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    fit = fit_maximum_entropy((5, 5, 5, 5), _tables(truth, pairs))
    domain = pm.Domain(["a", "b", "c", "d"], [5, 5, 5, 5])

    def objective(records):
        total = 0.0
        for pair in pairs:
            counts = np.zeros((5, 5))
            np.add.at(counts, (records[:, pair[0]], records[:, pair[1]]), 1)
            total += float(np.sum((counts / len(records) - fit.marginal(pair)) ** 2))
        return total

    weights = fit.joint.ravel()
    cells = np.flatnonzero(weights > 0)
    rounded = np.column_stack(np.unravel_index(_rounded_cells(cells, weights[cells], 100, np.random.default_rng(3)),
                                               (5, 5, 5, 5)))
    searched = pm.synthetic_data(domain, fit, 100, np.random.default_rng(3), workload=pm.marginals(domain, 2))
    # Measured: 0.029 of the rounding's objective; asserted below 0.8.
    assert objective(searched.data.records) < 0.8 * objective(rounded)


def test_total_correlation_is_the_entropies_of_the_margins_less_the_joint():
    """Against scipy's entropies: sum of the one-way tables' entropies less the table's (the
    mutual information for two attributes), on random tables with zero cells."""
    from scipy.stats import entropy
    rng = np.random.default_rng(3)
    for shape in [(3, 4), (2, 3, 2)]:
        table = rng.dirichlet(0.3 * np.ones(int(np.prod(shape)))).reshape(shape)
        table[(0,) * len(shape)] = 0.0
        table /= table.sum()
        margins = sum(entropy(table.sum(axis=tuple(b for b in range(len(shape)) if b != a))) for a in range(len(shape)))
        assert abs(total_correlation(table) - (margins - entropy(table.ravel()))) < 1e-12
    assert total_correlation(np.outer([0.2, 0.8], [0.5, 0.25, 0.25])) == pytest.approx(0.0, abs=1e-15)
