"""The noisy-marginals fit: its tree of sums against direct sums, its path's limit against CVXPY
and a closed form, its risk estimate against the true risk over many draws, and its refusals."""

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest

import projmech as pm
from oracles import clarabel_solve, point_room
from projmech.solve import Status
from projmech.tables import MAXIMUM_ENTROPY_MAX_CELLS, NoisyMarginalsResult, fit_noisy_marginals
from projmech.tables._noisy_marginals import _MarginalTree, _model
from projmech.tables._noisy_marginals import _path as _model_path


def _path(sizes, targets, sigmas, rng):
    """The dense path as (iteration, distribution, chi2, divergence estimate)."""
    for iteration, iterate, degrees in _model_path(_model(sizes, tuple(targets), "dense"), targets, sigmas, rng):
        yield iteration, iterate.state.joint, 2.0 * iterate.loss, degrees


def _marginal(joint, axes):
    return joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in axes))


def test_the_tree_of_sums_is_the_direct_sums_and_its_adjoint_their_transpose():
    rng = np.random.default_rng(0)
    sizes = (2, 5, 3, 4, 2)
    tables = [(0, 1, 2), (1, 3), (0,), (2, 3, 4), (0, 1, 2, 3, 4), (), (4,), (1, 2, 3)]
    tree = _MarginalTree(sizes, tuple(tables))
    joint = rng.random(sizes)
    values = tree.marginals(joint)
    for axes in tables:
        np.testing.assert_allclose(values[axes], _marginal(joint, axes), rtol=1e-13)
    residuals = {axes: rng.standard_normal(np.shape(values[axes])) for axes in tables}
    direct = sum(np.broadcast_to(np.reshape(r, [sizes[a] if a in axes else 1 for a in range(5)]), sizes)
                 for axes, r in residuals.items())
    adjoint = tree.adjoint(residuals)
    np.testing.assert_allclose(adjoint, direct, rtol=1e-12)
    # <A p, r> = <p, A^T r>.
    left = sum(float((_marginal(joint, axes) * r).sum()) for axes, r in residuals.items())
    assert float((joint * adjoint).sum()) == pytest.approx(left, rel=1e-12)
    # The universe is passed over once per distinct first-dropped attribute: each table's
    # largest missing attribute (the first position among equal sizes).
    first = {max((a for a in range(5) if a not in axes), key=lambda a: (sizes[a], -a))
             for axes in tables if len(axes) < 5}
    assert first == {3, 2, 1, 0}
    assert sorted(node for node, (parent, _) in tree.parent.items() if parent == tree.root) == sorted(
        tuple(a for a in range(5) if a != dropped) for dropped in first)


def test_a_full_table_path_converges_to_its_closed_form():
    """One table on every axis: the least-squares point is the Euclidean projection of the
    measurement onto the simplex (sort-based closed form)."""
    rng = np.random.default_rng(1)
    truth = rng.dirichlet(np.full(6, 3.0))
    noisy = truth + rng.normal(0, 0.05, 6)
    ordered = np.sort(noisy)[::-1]
    cumulative = np.cumsum(ordered) - 1.0
    count = np.max(np.flatnonzero(ordered - cumulative / np.arange(1, 7) > 0)) + 1
    expected = np.maximum(noisy - cumulative[count - 1] / count, 0.0)
    joint = next(joint for iteration, joint, _, _ in _path((2, 3), {(0, 1): noisy.reshape(2, 3)}, {(0, 1): 0.05},
                                                           np.random.default_rng(0)) if iteration == 20000)
    # The zero cells are approached sublinearly by a multiplicative path: 1e-4 after 20,000.
    np.testing.assert_allclose(joint.ravel(), expected, atol=1e-4)


@pytest.mark.solver
def test_the_path_converges_to_the_least_squares_point_of_cvxpy():
    """A weighted cycle of 2-way tables with small noise (an interior optimum): the path's
    tables converge to CVXPY's weighted least squares over the simplex."""
    rng = np.random.default_rng(2)
    sizes = (2, 3, 2)
    truth = rng.dirichlet(np.full(12, 5.0)).reshape(sizes)
    sigmas = {(0, 1): 0.004, (1, 2): 0.006, (0, 2): 0.005}
    noisy = {axes: _marginal(truth, axes) + rng.normal(0, s, _marginal(truth, axes).shape)
             for axes, s in sigmas.items()}
    joint = next(joint for iteration, joint, _, _ in _path(sizes, noisy, sigmas, np.random.default_rng(0))
                 if iteration == 3000)
    p = cp.Variable(12, nonneg=True)
    loss = 0
    for axes, table in noisy.items():
        operator = np.zeros((table.size, 12))
        for cell in range(12):
            operator[np.ravel_multi_index(tuple(np.unravel_index(cell, sizes)[a] for a in axes), table.shape),
                     cell] = 1.0
        loss = loss + cp.sum_squares(operator @ p - table.ravel()) / sigmas[axes] ** 2
    accuracy = clarabel_solve(cp.Problem(cp.Minimize(loss), [cp.sum(p) == 1]))
    best = p.value.reshape(sizes)
    for axes in noisy:
        np.testing.assert_allclose(_marginal(joint, axes), _marginal(best, axes), atol=point_room(accuracy, 1e-6))


_SIGMAS = {(0,): 0.05, (1,): 0.08, (0, 1): 0.04, (1, 2): 0.06}


def _risks(iterations, draws, keep_divergence=True, sigmas=_SIGMAS):
    """Stein's estimate minus the true weighted squared error at fixed iterations, over draws:
    mean and standard error."""
    sizes = (3, 4, 2)
    truth = np.random.default_rng(0).dirichlet(np.full(24, 2.0)).reshape(sizes)
    means = {axes: _marginal(truth, axes) for axes in sigmas}
    cells = sum(m.size for m in means.values())
    found = {k: [] for k in iterations}
    for draw in range(draws):
        rng = np.random.default_rng(1000 + draw)
        noisy = {axes: means[axes] + s * rng.standard_normal(means[axes].shape) for axes, s in sigmas.items()}
        for iteration, joint, chi2, degrees in _path(sizes, noisy, sigmas, rng):
            if iteration in found:
                true = sum(float(((_marginal(joint, a) - means[a]) ** 2).sum()) / s**2 for a, s in sigmas.items())
                found[iteration].append(chi2 - cells + (2 * degrees if keep_divergence else 0.0) - true)
            if iteration == max(iterations):
                break
    return {k: (np.mean(v), np.std(v) / math.sqrt(len(v))) for k, v in found.items()}


def test_the_risk_estimate_is_unbiased_and_the_divergence_matters():
    """Over 200 noise draws, Stein's estimate minus the true risk (in noise variances, 27
    measured cells) averages to 0 within 3 standard errors at every stopping iteration
    (measured: -0.23 +- 0.69 at iteration 3, -0.70 +- 0.90 at 30). Without the divergence term
    it is off by -7.2 and -28.9 (the test's power). The path's steps depend on the
    measurements through the backtracking, so the iterate is not everywhere differentiable in
    them; the check shows the estimate unbiased all the same."""
    for k, (mean, error) in _risks((3, 30), 200).items():
        assert abs(mean) < 3 * error + 0.05, (k, mean, error)
    for k, (mean, error) in _risks((3, 30), 200, keep_divergence=False).items():
        assert mean < -5 * error - 3.0, (k, mean, error)


def test_the_risk_estimate_stays_unbiased_with_unequal_noise():
    """One-way tables 40 times more precise than the two-way ones (precisions 1,600 times
    apart): over 100 draws at iterations 30 and 300 the estimate minus the true risk is within 3
    standard errors of 0 (measured: 0.79 +- 1.24 and 0.51 +- 1.15)."""
    sigmas = {(0,): 0.001, (1,): 0.001, (0, 1): 0.04, (1, 2): 0.04}
    for k, (mean, error) in _risks((30, 300), 100, sigmas=sigmas).items():
        assert abs(mean) < 3 * error + 0.05, (k, mean, error)


@pytest.mark.parametrize("name, tables, scale", [
    ("zero", {(0,): np.zeros(4)}, 0.01),
    ("uniform", {(0,): np.full(4, 0.25)}, 0.01),
    ("uniform and unequal", {(0,): np.full(4, 0.25), (0, 1): np.full((4, 3), 1 / 12)}, 0.01),
    ("zero, precise", {(0,): np.zeros(4)}, 1e-6),
    ("counts for fractions", {(0,): np.array([400.0, 300, 200, 100]), (0, 1): np.full((4, 3), 1000 / 12)}, 1e-3),
])
def test_degenerate_measurements_keep_the_divergence_within_its_range(name, tables, scale):
    """Measurements the uniform distribution fits best (or exactly), or far from any
    distribution's tables: the main path's gradient vanishes, or most of the loss is a residual
    no step removes; the perturbed path must stay stable all the same. The divergence of a fit to
    N cells lies in [0, N] up to its Monte-Carlo noise. (With the steps checked on the main path
    alone, the third case's divergence was 11.0 of 16 cells at iteration 10 and not a number by
    100; with the test read as a difference of losses, the last two ranged over [-22.7, 24.7] and
    [-82.3, 83.4], the loss's rounding passing every step.)"""
    sigmas = {axes: scale if len(axes) == 1 else scale / 100 for axes in tables}
    cells = sum(np.size(t) for t in tables.values())
    for iteration, _, chi2, degrees in _path((4, 3), tables, sigmas, np.random.default_rng(0)):
        assert np.isfinite(chi2) and -0.5 <= degrees <= cells + 0.5, (iteration, degrees)
        if iteration == 300:
            break
    fit = fit_noisy_marginals((4, 3), tables, sigmas, rng=0)
    assert np.isfinite(fit.risk) and np.all(np.isfinite(fit.joint))


def test_very_noisy_measurements_neither_overflow_nor_leave_uniform_for_noise():
    """sigma 50 on tables of fractions: the first step (1 over the summed precisions) is huge;
    the steps are taken in logarithms, so nothing overflows (projmech's RuntimeWarnings are
    errors under the test configuration), and the estimate keeps the uniform distribution."""
    tables = {(0,): np.array([0.4, 0.3, 0.2, 0.1]), (0, 1): np.full(12, 1 / 12)}
    fit = fit_noisy_marginals((4, 3), tables, 50.0, rng=0)
    assert fit.stats.iterations == 0 and fit.stats.status is Status.OPTIMAL
    np.testing.assert_allclose(fit.joint, np.full((4, 3), 1 / 12), rtol=1e-12)


def test_the_fit_returns_the_path_iterate_of_least_estimated_risk():
    rng = np.random.default_rng(3)
    sizes = (3, 4, 2)
    truth = rng.dirichlet(np.full(24, 1.0)).reshape(sizes)
    sigmas = {(0, 1): 0.03, (1, 2): 0.03, (0,): 0.02}
    noisy = {axes: _marginal(truth, axes) + rng.normal(0, s, _marginal(truth, axes).shape)
             for axes, s in sigmas.items()}
    fit = fit_noisy_marginals(sizes, noisy, sigmas, rng=5)
    assert isinstance(fit, NoisyMarginalsResult) and fit.stats.status is Status.OPTIMAL
    assert fit.stats.gap is None and not fit.stats.tolerance_met  # no certificate is claimed
    cells = sum(t.size for t in noisy.values())
    risks, iterates = [], []
    for iteration, joint, chi2, degrees in _path(sizes, noisy, sigmas, np.random.default_rng(5)):
        assert iteration == len(risks)  # from 0, the uniform distribution
        risks.append((chi2 - cells + 2 * degrees) / cells)
        iterates.append(joint)
        if iteration == fit.iterations_run:
            break
    np.testing.assert_array_equal(iterates[0], np.full(sizes, 1 / 24))
    chosen = int(np.argmin(risks))
    assert fit.stats.iterations == chosen and fit.risk == pytest.approx(risks[chosen], rel=1e-12)
    # The rule: the path stops a quarter (plus 50) past the last fall of more than 0.01 a cell.
    anchor, anchored = math.inf, 0
    for iteration, risk in enumerate(risks):
        if risk < anchor - 0.01:
            anchor, anchored = risk, iteration
    assert fit.iterations_run == math.ceil(1.25 * anchored + 50) and 0 < anchored <= chosen
    np.testing.assert_array_equal(fit.joint, iterates[chosen])
    assert fit.chi2 * cells + 2 * fit.degrees_of_freedom * cells - cells == pytest.approx(fit.risk * cells)
    # Reproducible from its generator.
    np.testing.assert_array_equal(fit_noisy_marginals(sizes, noisy, sigmas, rng=5).joint, fit.joint)
    assert fit.joint.min() >= 0 and fit.joint.sum() == pytest.approx(1.0, abs=1e-12)
    assert fit.marginal(()) == pytest.approx(1.0)


def test_an_iteration_limit_reached_before_the_rule_is_reported():
    rng = np.random.default_rng(4)
    truth = rng.dirichlet(np.ones(12)).reshape(3, 4)
    noisy = {(0, 1): truth + rng.normal(0, 0.001, (3, 4))}  # precise: the least risk comes late
    fit = fit_noisy_marginals((3, 4), noisy, 0.001, rng=0, max_iterations=3)
    assert fit.stats.status is Status.ITERATION_LIMIT and fit.iterations_run == 3
    assert "still falling" in str(fit.stats.attempts[0])


def test_the_fit_is_closer_to_the_truth_than_the_measurements():
    """A chain over 4 attributes of 4 values, its 2-way tables and 1-way tables measured (sigma
    0.01 a cell) over 20 draws: the fit's tables are nearer the truth in l1 than the
    measurements themselves (measured: 0.70 of their error on average, 0.85 at worst; asserted below 0.8)."""
    sizes = (4, 4, 4, 4)
    rng = np.random.default_rng(6)
    start, *steps = [rng.dirichlet(np.ones(4))] + [rng.dirichlet(np.full(4, 0.5), size=4) for _ in range(3)]
    truth = np.einsum("a,ab,bc,cd->abcd", start, *steps)
    tables = [(0, 1), (1, 2), (2, 3), (0,), (3,)]
    ratios = []
    for draw in range(20):
        noise = np.random.default_rng(100 + draw)
        noisy = {axes: _marginal(truth, axes) + noise.normal(0, 0.01, _marginal(truth, axes).shape)
                 for axes in tables}
        fit = fit_noisy_marginals(sizes, noisy, 0.01, rng=draw)
        fitted = sum(np.abs(fit.marginal(a) - _marginal(truth, a)).sum() for a in tables)
        measured = sum(np.abs(noisy[a] - _marginal(truth, a)).sum() for a in tables)
        ratios.append(fitted / measured)
    assert np.mean(ratios) < 0.8, np.mean(ratios)


def test_rows_are_drawn_from_the_fit():
    domain = pm.Domain(["a", "b"], [2, 3])
    noisy = np.array([[0.1, 0.2, 0.05], [0.3, 0.25, 0.1]]) + 0.001
    fit = fit_noisy_marginals((2, 3), {(0, 1): noisy}, 0.01, rng=0)
    rows = pm.synthetic_data(domain, fit, 200, np.random.default_rng(0), workload=pm.marginals(domain, 2))
    counts = np.zeros((2, 3))
    np.add.at(counts, (rows.data.records[:, 0], rows.data.records[:, 1]), 1)
    assert counts.sum() == 200 and np.all(np.abs(counts - 200 * fit.joint) < 1.0) and rows.method == "joint"


@pytest.mark.parametrize("sizes, marginals, sigma, error, message", [
    ((2, 2), [np.ones(2) / 2], 0.1, TypeError, "marginals"),
    ((2, 2), {}, 0.1, ValueError, "marginals"),
    ((), {(0,): np.ones(2) / 2}, 0.1, ValueError, "sizes"),
    ((2, 0), {(0,): np.ones(2) / 2}, 0.1, ValueError, "sizes"),
    ((2, 2), {(1, 0): np.ones(4) / 4}, 0.1, ValueError, "increasing"),
    ((2, 2), {(2,): np.ones(2) / 2}, 0.1, ValueError, "axes"),
    ((2, 2), {(0.9,): np.ones(2) / 2}, 0.1, TypeError, "marginals"),
    ((2, 2), {(0,): np.ones(3) / 3}, 0.1, ValueError, "needs 2 cells"),
    ((2, 3), {(0, 1): np.ones((3, 2)) / 6}, 0.1, ValueError, "has shape"),
    ((2, 2), {(0,): np.array([0.5, np.inf])}, 0.1, ValueError, "non-finite"),
    ((2, 2), {(0,): np.ones(2) / 2}, 0.0, ValueError, "sigma"),
    ((2, 2), {(0,): np.ones(2) / 2}, "0.1", TypeError, "sigma"),
    ((2, 2), {(0,): np.ones(2) / 2}, {(1,): 0.1}, ValueError, "sigma: its keys"),
    ((2, 2), {(0,): np.ones(2) / 2}, {(0,): -1.0}, ValueError, "sigma"),
    ((MAXIMUM_ENTROPY_MAX_CELLS, 2), {(1,): np.ones(2) / 2}, 0.1, ValueError, "junction tree of their tables holds"),
])
def test_refusals_name_the_argument(sizes, marginals, sigma, error, message):
    with pytest.raises(error, match=message):
        fit_noisy_marginals(sizes, marginals, sigma)


def test_refusals_of_the_options_and_of_marginal():
    table = {(0,): np.array([0.4, 0.6])}
    with pytest.raises(ValueError, match="max_iterations"):
        fit_noisy_marginals((2, 2), table, 0.1, max_iterations=0)
    with pytest.raises(TypeError, match="rng"):
        fit_noisy_marginals((2, 2), table, 0.1, rng="seed")
    fit = fit_noisy_marginals((2, 2), table, 0.1, rng=0)
    with pytest.raises(ValueError, match="axes"):
        fit.marginal((1, 0))
    with pytest.raises(TypeError, match="axes"):
        fit.marginal((True,))


def _cycle(seed, sigma=0.01, concentration=2.0):
    """Noisy tables of a cycle with a chord's worth of fill-in on four attributes."""
    rng = np.random.default_rng(seed)
    sizes = (2, 3, 2, 3)
    truth = rng.dirichlet(np.full(36, concentration)).reshape(sizes)
    tables = [(0, 1), (1, 2), (2, 3), (0, 3), (1,)]
    sigmas = {t: sigma * (1 + i / 4) for i, t in enumerate(tables)}
    noisy = {t: _marginal(truth, t) + rng.normal(0, sigmas[t], _marginal(truth, t).shape) for t in tables}
    return sizes, noisy, sigmas


def test_the_junction_tree_path_is_the_dense_path():
    """Every iterate is a log-linear model on the measured tables, so the tree holds it exactly:
    the two paths take the same steps and give the same tables, losses and divergences."""
    sizes, noisy, sigmas = _cycle(4)
    dense = _model_path(_model(sizes, tuple(noisy), "dense"), noisy, sigmas, np.random.default_rng(7))
    tree = _model_path(_model(sizes, tuple(noisy), "junction_tree"), noisy, sigmas, np.random.default_rng(7))
    for (iteration, one, one_df), (_, other, other_df) in zip(dense, tree):
        assert one.loss == pytest.approx(other.loss, rel=1e-9, abs=1e-12)
        assert one_df == pytest.approx(other_df, rel=1e-6, abs=1e-9)
        for axes in noisy:
            np.testing.assert_allclose(one.fitted[axes], other.fitted[axes], rtol=0, atol=1e-7)
        if iteration == 200:
            break
    fits = [fit_noisy_marginals(sizes, noisy, sigmas, rng=3, model=model) for model in ("dense", "junction_tree")]
    assert fits[0].stats.iterations == fits[1].stats.iterations and fits[1].joint is None
    for axes in [(0, 2), (1, 3), (0, 1, 2, 3)]:
        np.testing.assert_allclose(fits[0].marginal(axes), fits[1].marginal(axes), atol=1e-10)


@pytest.mark.solver
@pytest.mark.parametrize("model", ["dense", "junction_tree"])
def test_stopping_at_the_gap_reaches_the_least_squares_point_of_cvxpy(model):
    """``stop="gap"`` certifies its iterate near the weighted least-squares point of the
    marginal polytope, solved independently by CVXPY over the universe; the certified gap
    bounds the loss's true excess. Near the optimum the divergence of a short step falls to
    rounding and the acceptance test halves it: on this cycle the tree's path stalled at a gap
    of 5.4e-4 (the dense path went on to 1e-7), within this tolerance (1.5e-3)."""
    sizes, noisy, sigmas = _cycle(5, sigma=0.004, concentration=20.0)
    fit = fit_noisy_marginals(sizes, noisy, sigmas, model=model, stop="gap", tol=1e-4)
    assert fit.stats.status is Status.OPTIMAL and fit.risk is None and fit.stats.gap <= fit.stats.tolerance
    cells = int(np.prod(sizes))
    p = cp.Variable(cells, nonneg=True)
    loss = 0
    for axes, table in noisy.items():
        operator = np.zeros((table.size, cells))
        for cell in range(cells):
            operator[np.ravel_multi_index(tuple(np.unravel_index(cell, sizes)[a] for a in axes), table.shape),
                     cell] = 1.0
        loss = loss + 0.5 * cp.sum_squares(operator @ p - table.ravel()) / sigmas[axes] ** 2
    problem = cp.Problem(cp.Minimize(loss), [cp.sum(p) == 1])
    room = max(clarabel_solve(problem) * problem.value, 1e-6)
    fitted_loss = sum(0.5 * float(((fit.marginal(axes) - table) ** 2).sum()) / sigmas[axes] ** 2
                      for axes, table in noisy.items())
    assert problem.value - room <= fitted_loss <= problem.value + fit.stats.gap + room
    for axes in noisy:
        np.testing.assert_allclose(fit.marginal(axes), _marginal(p.value.reshape(sizes), axes), atol=2e-3)


def test_a_large_universe_is_held_by_its_junction_tree():
    """Twelve attributes of 10 values (10^12 cells) measured along a chain: the tree holds 11
    two-way cliques, and an unmeasured table is read through them exactly (the chain's
    conditional independence: a table on the chain's two ends is the product of the
    conditionals along it, computed here by hand)."""
    sizes = (10,) * 12
    rng = np.random.default_rng(6)
    pairs = [(a, a + 1) for a in range(11)]
    noisy = {pair: rng.dirichlet(np.ones(100)).reshape(10, 10) for pair in pairs}
    fit = fit_noisy_marginals(sizes, noisy, 0.01, rng=0)
    assert fit.joint is None and fit.tree is not None and fit.tree.cells == 1100
    tables = {pair: fit.marginal(pair) for pair in pairs}
    chain = tables[(0, 1)]  # p(x_0, x_a), walked along the chain
    for a in range(1, 11):
        conditional = tables[(a, a + 1)] / tables[(a, a + 1)].sum(axis=1, keepdims=True)
        chain = chain @ conditional
    np.testing.assert_allclose(fit.marginal((0, 11)), chain, atol=1e-12)


def test_refusals_of_the_model_and_the_stop():
    table = {(0,): np.array([0.4, 0.6])}
    with pytest.raises(ValueError, match="model"):
        fit_noisy_marginals((2, 2), table, 0.1, model="sparse")
    with pytest.raises(ValueError, match="stop"):
        fit_noisy_marginals((2, 2), table, 0.1, stop="never")
    with pytest.raises(ValueError, match="tol"):
        fit_noisy_marginals((2, 2), table, 0.1, stop="gap", tol=0.0)
    with pytest.raises(ValueError, match="tol: the gap's tolerance, only with stop='gap'"):
        fit_noisy_marginals((2, 2), table, 0.1, tol=1e-3)
    with pytest.raises(TypeError, match="model"):
        fit_noisy_marginals((2, 2), table, 0.1, model=1)
    with pytest.raises(ValueError, match="sizes: the universe holds"):
        fit_noisy_marginals((MAXIMUM_ENTROPY_MAX_CELLS, 2), {(1,): np.array([0.4, 0.6])}, 0.1, model="dense")


def test_rows_from_a_junction_tree_follow_its_tables():
    """Rows drawn along the tree (each clique's new attributes from its conditional, rounded to
    counts), then searched towards the workload's tables: every 2-way table of the rows within
    a few rows of ``n`` times the tree's, and the summary's RMSE is the rows' distance to the
    tree's answers, recomputed here."""
    sizes, noisy, sigmas = _cycle(8)
    domain = pm.Domain(["a", "b", "c", "d"], list(sizes))
    fit = fit_noisy_marginals(sizes, noisy, sigmas, rng=0, model="junction_tree")
    workload = pm.marginals(domain, 2)
    rows = pm.synthetic_data(domain, fit, 1000, np.random.default_rng(1), workload=workload)
    assert rows.data.n == 1000 and rows.method == "joint"
    answers = []
    for table in itertools.combinations(range(4), 2):
        counts = np.asarray(rows.data.table(list(table)), dtype=float)
        assert np.abs(counts - 1000 * fit.marginal(table)).max() <= 3.0, table
        answers.append(np.ravel(fit.marginal(table)))
    difference = workload.answer_data(rows.data) - np.concatenate(answers)
    assert rows.marginal_rmse == pytest.approx(float(np.sqrt(np.mean(difference**2))), rel=1e-9)
