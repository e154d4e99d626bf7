"""The active-set projection onto K_Q (``project_to_hull(..., solver="fast")``).

References shared nothing with the solver: a direct CVXPY formulation solved by Clarabel with
tight settings (its optimum, minus its own duality gap, is the reference objective), scipy's
NNLS, and closed forms for the rank and the noise-tied tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import projmech as pm
from oracles import reference_projection
from projmech.bodies import NOISE_TOL, ProjectionError, project_to_hull
from projmech.bodies._active_set import active_set_projection
from projmech.solve import SolveError, Status


def random_instance(k, m, seed, noise=0.3):
    rng = np.random.default_rng(seed)
    workload = pm.random_queries(k, m, rng)
    y = workload.answer(rng.dirichlet(np.ones(m))) + rng.normal(0.0, noise, size=k)
    return workload, y


def marginal_instance(sizes, seed, noise=0.02, implicit=False, way=2):
    rng = np.random.default_rng(seed)
    domain = pm.Domain([f"x{i}" for i in range(len(sizes))], sizes)
    workload = pm.marginals(domain, way, implicit=implicit)
    h = rng.dirichlet(np.full(domain.size, 0.2))
    y = pm.marginals(domain, way).answer(h) + rng.normal(0.0, noise, size=workload.num_queries)
    return workload, y


def kron_instance(seed, noise=0.02):
    rng = np.random.default_rng(seed)
    workload = pm.workloads.kron([pm.workloads.prefix(12), pm.workloads.identity_total(10)])
    h = rng.dirichlet(np.full(workload.universe_size, 0.3))
    return workload, workload.answer(h) + rng.normal(0.0, noise, size=workload.num_queries)


INSTANCES = {
    "random 8x40": lambda: random_instance(8, 40, 1),
    "random 30x500": lambda: random_instance(30, 500, 2, noise=0.05),
    "random 60x4096": lambda: random_instance(60, 4096, 3, noise=0.05),
    "marginals 2^8": lambda: marginal_instance([2] * 8, 4),
    "marginals 2^12": lambda: marginal_instance([2] * 12, 5, noise=0.01),
    "marginals 3x4x2x5x3": lambda: marginal_instance([3, 4, 2, 5, 3], 6),
    # Categorical 3-way tables: a corral of hundreds of points, its factor updated many times.
    "3-way marginals 2x2x4x5x6": lambda: marginal_instance([2, 2, 4, 5, 6], 7, noise=0.005, way=3),
    # A Kronecker product: its columns' inner products factor by factor.
    "prefix x identity 12x10": lambda: kron_instance(8),
}


@pytest.mark.solver
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_objective_matches_cvxpy(name):
    workload, y = INSTANCES[name]()
    lower, reference = reference_projection(workload.matrix, y)
    result = project_to_hull(workload, y, solver="fast", tol=1e-9)
    assert result.stats.solver == "fast" and result.stats.status is Status.OPTIMAL
    # Within 1e-6 relative of the reference optimum, and within the result's own gap.
    assert result.objective - lower <= max(1e-6 * lower, result.stats.gap + 1e-11)
    assert result.objective >= lower - 1e-10
    # The answers are within sqrt(2 gap) of the projection (plus the reference's own accuracy).
    assert np.linalg.norm(result.answers - reference) <= math.sqrt(2 * result.stats.gap) + 1e-5


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_witness_is_sparse_feasible_and_reproduces_the_answers(name):
    workload, y = INSTANCES[name]()
    result = project_to_hull(workload, y, solver="fast")
    assert sp.issparse(result.weights) and result.weights.shape == (workload.universe_size,)
    support = result.support
    values = result.weights.toarray()[support]
    assert np.all(values > 0) and values.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(result.answers, workload.columns(support) @ values, atol=1e-13)
    dense = workload.toarray()
    # Wolfe's corral is affinely independent: at most rank(F) + 1 elements.
    assert support.size <= np.linalg.matrix_rank(dense) + 1
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y), rel=1e-12)
    assert result.stats.iterations >= 1 and result.summary()["support_size"] == support.size


@pytest.mark.solver
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_certificate_never_claims_a_gap_smaller_than_the_true_one(name):
    """Early stops included: after 1, 2, 3 outer iterations the reported gap still bounds the
    true suboptimality against the CVXPY optimum."""
    workload, y = INSTANCES[name]()
    lower, _ = reference_projection(workload.matrix, y)
    for iterations in (1, 2, 3, 500):
        outcome = active_set_projection(workload, y, lambda f: 1e-12 * max(f, 1e-6), max_iterations=iterations,
                                        batch=4)
        assert outcome.objective - lower <= outcome.gap + 1e-11
        if not outcome.converged and iterations < 500:
            assert outcome.iterations == iterations
    # Unlimited, it reaches the tolerance or stops at rounding (no element left to improve with).
    assert outcome.converged or outcome.gap <= 1e-11


def test_an_unconverged_solve_is_reported_not_returned():
    """One outer iteration cannot reach tol = 1e-300: a SolveError whose only attempt is the
    iteration limit, with the feasible witness reached attached as ``best`` and its gap
    recomputed here by numpy."""
    workload, y = INSTANCES["marginals 2^12"]()
    with pytest.raises(ProjectionError, match=r"fast: iteration_limit, stopped after 1 iterations, "
                                              r"certified gap \S+ > \S+") as info:
        project_to_hull(workload, y, solver="fast", tol=1e-300, max_iterations=1)
    error = info.value
    assert isinstance(error, SolveError)
    assert [(a.solver, a.status) for a in error.attempts] == [("fast", Status.ITERATION_LIMIT)]
    best = error.best
    assert isinstance(best, pm.ProjectionResult)
    assert best.stats.status is Status.ITERATION_LIMIT and not best.stats.tolerance_met
    assert best.stats.iterations == 1 and best.stats.attempts == error.attempts
    F = workload.toarray()
    w = best.weights.toarray()
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(best.answers, F @ w, atol=1e-12)
    g = F.T @ (F @ w - y)
    assert best.stats.gap == pytest.approx(float(w @ g - g.min()), rel=1e-9)
    assert best.stats.gap > best.stats.tolerance


@pytest.mark.solver
def test_implicit_and_explicit_marginals_give_the_same_projection():
    explicit, y = marginal_instance([2, 3, 2, 2, 3, 2], 7)
    implicit, _ = marginal_instance([2, 3, 2, 2, 3, 2], 7, implicit=True)
    a = project_to_hull(explicit, y, solver="fast", tol=1e-10)
    b = project_to_hull(implicit, y, solver="fast", tol=1e-10)
    assert np.linalg.norm(a.answers - b.answers) <= math.sqrt(2 * a.stats.gap) + math.sqrt(2 * b.stats.gap) + 1e-12
    lower, _ = reference_projection(explicit.matrix, y)
    assert b.objective - lower <= b.stats.gap + 1e-11


@pytest.mark.solver
def test_noise_tied_default_tolerance():
    """With the noise level given, tol defaults to 1e-4 relative to (k/2) sigma^2, and the answers
    land within 0.01 sigma RMS of the exact projection."""
    sigma = 0.02
    workload, y = marginal_instance([2] * 10, 8, noise=sigma)
    k = workload.num_queries
    _, reference = reference_projection(workload.matrix, y)
    result = project_to_hull(workload, y, solver="fast", noise_scale=sigma)
    assert result.stats.tolerance == pytest.approx(NOISE_TOL * max(result.objective - result.stats.gap,
                                                                   0.5 * k * sigma**2))
    assert result.stats.gap <= result.stats.tolerance
    assert np.sqrt(np.mean((result.answers - reference) ** 2)) <= 0.01 * sigma + 1e-6
    # The same rule holds for a CVXPY solver.
    cvxpy_result = project_to_hull(workload, y, solver="CLARABEL", noise_scale=sigma)
    assert cvxpy_result.stats.tolerance == pytest.approx(
        NOISE_TOL * max(cvxpy_result.objective - cvxpy_result.stats.gap, 0.5 * k * sigma**2))


def test_warm_start_from_a_previous_solution():
    rng = np.random.default_rng(9)
    workload, y = marginal_instance([2] * 12, 9, noise=0.01, implicit=True)
    first = project_to_hull(workload, y, solver="fast", tol=1e-9)
    nearby = y + rng.normal(0.0, 1e-4, size=y.size)
    cold = project_to_hull(workload, nearby, solver="fast", tol=1e-9)
    warm = project_to_hull(workload, nearby, solver="fast", tol=1e-9, warm_start=first)
    assert warm.stats.iterations <= cold.stats.iterations
    assert abs(warm.objective - cold.objective) <= warm.stats.gap + cold.stats.gap + 1e-12
    # A dense weight vector works too (normalized here), and so does the exact solution itself.
    dense = first.weights.toarray() * 3.0
    again = project_to_hull(workload, y, solver="fast", tol=1e-9, warm_start=dense)
    assert again.stats.iterations == 1
    assert again.objective == pytest.approx(first.objective, rel=1e-9)


def test_auto_picks_the_fast_solver_for_large_and_implicit_workloads():
    # Measured (benchmarks/solvers.py --parts auto): at m = 2^14 fast 0.2 s, SCS 6 s, Clarabel 19 s.
    workload, y = marginal_instance([2] * 14, 10)
    assert project_to_hull(workload, y).stats.solver == "fast"
    implicit, y_implicit = marginal_instance([2] * 6, 10, implicit=True)
    assert project_to_hull(implicit, y_implicit).stats.solver == "fast"  # no matrix for CVXPY


def test_callback_follows_the_outer_iterations():
    """``callback(iteration, gap)`` once per outer iteration, iterations 1, 2, ..., the last
    gap the certified one (recomputed by the final check, so equal up to rounding)."""
    workload, y = marginal_instance([2] * 8, 11)
    calls = []
    result = project_to_hull(workload, y, solver="fast", tol=1e-12, callback=lambda i, gap: calls.append((i, gap)))
    assert [i for i, _ in calls] == list(range(1, result.stats.iterations + 1))
    assert calls[-1][1] == pytest.approx(result.stats.gap, rel=1e-6, abs=1e-15)
    assert all(gap >= 0 for _, gap in calls)


def test_progress_bar_reports_the_gap(capsys):
    workload, y = marginal_instance([2] * 8, 11)
    with pm.ProgressBar("projection onto K_Q", total=500) as bar:
        project_to_hull(workload, y, solver="fast", callback=bar)
    assert "projection onto K_Q" in capsys.readouterr().err


def test_options_are_keyword_only():
    workload, y = marginal_instance([2] * 5, 12)
    with pytest.raises(TypeError):
        project_to_hull(workload, y, "fast")
    with pytest.raises(TypeError):
        active_set_projection(workload, y, lambda f: 1e-9, None)


def test_bad_arguments_raise_before_solving():
    workload, y = marginal_instance([2] * 5, 12)
    implicit, _ = marginal_instance([2] * 5, 12, implicit=True)
    m = workload.universe_size
    cases = [
        (dict(F=pm.all_range(8, implicit=True), y=np.zeros(36), solver="fast"), ValueError, "rmatvec and columns"),
        (dict(F=implicit, y=y, solver="CLARABEL"), ValueError, "needs the explicit matrix"),
        (dict(F=workload, y=y, solver="fast", noise_scale=0.0), ValueError, "noise_scale"),
        (dict(F=workload, y=y, solver="fast", noise_scale=float("nan")), ValueError, "noise_scale"),
        (dict(F=workload, y=y, solver="fast", max_iterations=0), ValueError, "max_iterations"),
        (dict(F=workload, y=y, solver="fast", callback="yes"), TypeError, "callback"),
        (dict(F=workload, y=y, solver="fast", max_iterations=2.0), TypeError, "max_iterations"),
        (dict(F=workload, y=y, solver="fast", solver_options={"max_iter": 3}), ValueError, "solver_options"),
        (dict(F=workload, y=y, solver="SCS", warm_start=np.ones(m)), ValueError, "warm_start: only the 'fast'"),
        (dict(F=workload, y=y, solver="fast", warm_start=np.ones(m + 1)), ValueError, "warm_start: expected"),
        (dict(F=workload, y=y, solver="fast", warm_start=-np.ones(m)), ValueError, "non-negative"),
        (dict(F=workload, y=y, solver="fast", warm_start=np.zeros(m)), ValueError, "no positive mass"),
        (dict(F=workload, y=y, solver="quick"), ValueError, "solver: expected 'auto', 'fast'"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            project_to_hull(**kwargs)


def test_projection_mechanism_on_implicit_marginals_uses_the_noise_level():
    rng = np.random.default_rng(13)
    d, n = 12, 5000
    domain = pm.Domain([f"x{i}" for i in range(d)], [2] * d)
    data = pm.Dataset((rng.random((n, d)) < rng.uniform(0.2, 0.8, d)).astype(np.int64), domain)
    workload = pm.marginals(domain, 2, implicit=True)
    privacy = pm.ApproxDP(1.0, 1e-6)
    # Continuous noise: the same seed gives both mechanisms the same draws.
    projected = pm.ProjectionMechanism(workload, privacy, body="hull", noise="continuous").release(
        data, rng=np.random.default_rng(1))
    gaussian = pm.GaussianMechanism(workload, privacy, noise="continuous").release(data, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(projected.noisy_answers, gaussian.noisy_answers)
    result = projected.projection
    assert result.stats.solver == "fast"
    sigma = projected.sigma
    assert result.stats.tolerance == pytest.approx(NOISE_TOL * max(result.objective - result.stats.gap,
                                                                   0.5 * workload.num_queries * sigma**2))
    truth = workload.answer_data(data)
    assert np.linalg.norm(projected.answers - truth) <= np.linalg.norm(gaussian.answers - truth)


@pytest.mark.solver
def test_a_user_built_implicit_workload_with_an_adjoint():
    """Workload.implicit with rmatvec and columns is all the fast solver needs."""
    workload, y = random_instance(12, 300, 14, noise=0.1)
    F = workload.toarray()
    implicit = pm.Workload.implicit(F.shape, lambda v: F @ v, lambda: F.T @ F,
                                    rmatvec=lambda u: F.T @ u, columns=lambda index: F[:, index])
    assert implicit.is_implicit and implicit.has_adjoint
    result = project_to_hull(implicit, y)  # auto: the only applicable solver
    assert result.stats.solver == "fast" and [a.solver for a in result.stats.attempts] == ["fast"]
    lower, reference = reference_projection(F, y)
    assert result.objective - lower <= result.stats.gap + 1e-11
    np.testing.assert_allclose(result.answers, reference, atol=1e-5)


@pytest.mark.solver
@pytest.mark.parametrize("c", [1e-6, 1.0, 1e4, 1e8])
def test_scaled_columns_keep_a_nonempty_corral_and_the_same_steps(c):
    """``c F``, ``c y`` for columns of norm up to 1e8: the KKT solves of Wolfe's method must not
    turn ill-conditioned (at c = 1e4 the unscaled system ``[[1e8, 1], [1, 0]]`` was declared
    singular and the only corral point dropped, leaving an empty witness with gap 0). The
    projection is the same at every scale, scaled by c (the witness need not be: F has
    duplicate columns, and rounding breaks the tie differently at each c)."""
    workload, y = random_instance(8, 40, 15)
    F = workload.toarray()
    unit = active_set_projection(workload, y, lambda f: 1e-12 * max(f, 1e-6))
    scaled = active_set_projection(pm.Workload(c * F), c * y, lambda f: 1e-12 * c**2 * max(f / c**2, 1e-6))
    assert scaled.converged and scaled.support.size >= 1
    assert np.all(scaled.weights > 0) and scaled.weights.sum() == pytest.approx(1.0, abs=1e-13)
    np.testing.assert_allclose(scaled.answers, c * F[:, scaled.support] @ scaled.weights, rtol=1e-12, atol=0)
    np.testing.assert_allclose(scaled.answers / c, unit.answers, rtol=0, atol=1e-9)
    lower, reference = reference_projection(F, y)
    assert scaled.objective / c**2 - lower <= scaled.gap / c**2 + 1e-11
    np.testing.assert_allclose(scaled.answers / c, reference, atol=1e-5)


def test_the_solver_runs_on_one_blas_thread_whatever_the_caller_allows():
    """Its dense kernels are small triangular solves: held to one thread, reported in the
    statistics, and the same witness comes out when the caller allows two."""
    from threadpoolctl import threadpool_limits

    workload, y = INSTANCES["3-way marginals 2x2x4x5x6"]()
    with threadpool_limits(limits=1, user_api="blas"):
        one = project_to_hull(workload, y, solver="fast")
    with threadpool_limits(limits=2, user_api="blas"):
        two = project_to_hull(workload, y, solver="fast")
    assert one.stats.blas_threads == two.stats.blas_threads == 1
    assert "1 BLAS thread" in str(one.stats) and one.stats.summary()["blas_threads"] == 1
    np.testing.assert_array_equal(one.support, two.support)
    np.testing.assert_array_equal(one.weights.toarray(), two.weights.toarray())


def _reviewed_instance(seed):
    """Instances on which earlier versions of the block Wolfe method stopped far from the
    optimum: a newcomer dropped at once and offered again (seed 168), and a point affinely
    dependent by rounding let into the factor (seed 394)."""
    rng = np.random.default_rng(seed)
    if seed == 394:
        k, m = int(rng.integers(10, 60)), int(rng.integers(100, 2000))
        workload = pm.random_queries(k, m, rng)
        y = workload.answer(rng.dirichlet(np.ones(m))) + rng.normal(0, [0, 0.01, 0.3][rng.integers(3)], k)
        return workload, y
    k = int(rng.integers(2, 25))
    m = int(rng.integers(k + 1, 300))
    F = rng.normal(size=(k, m)) if rng.random() < 0.5 else (rng.random((k, m)) < 0.3).astype(float)
    if rng.random() < 0.3:
        F = np.column_stack([F, F[:, :5]])
    if rng.random() < 0.3:
        F = np.vstack([F, F[:2]])
    y = F @ rng.dirichlet(np.ones(F.shape[1]) * 0.3) + rng.normal(0, [0.0, 1e-3, 0.3, 3.0][rng.integers(4)], F.shape[0])
    return pm.Workload(F), y


@pytest.mark.solver
@pytest.mark.parametrize("seed", [168, 394])
def test_block_entries_reach_the_optimum_on_reviewed_instances(seed):
    workload, y = _reviewed_instance(seed)
    result = project_to_hull(workload, y, solver="fast", tol=1e-9)
    lower, _ = reference_projection(workload.matrix, y)
    assert result.stats.tolerance_met
    assert result.objective - lower <= result.stats.gap + 1e-10


@pytest.mark.solver
def test_the_final_check_reads_the_witness_columns_sparse(monkeypatch):
    """The check of a fast solution reads the support's columns as sparse ones: dense, a large
    support of a large table was refused (2-way marginals of two 300-value attributes: 4,034
    columns of k = 90,000, 3.6e8 entries). Here the cap on dense entries is lowered to 1,000."""
    import projmech.workloads._base as base

    monkeypatch.setattr(base, "DEFAULT_MAX_ENTRIES", 1000)
    domain = pm.Domain(["a", "b"], [6, 7])
    workload = pm.marginals(domain, 2, implicit=True)
    rng = np.random.default_rng(5)
    y = workload.answer(rng.dirichlet(np.ones(42))) + rng.normal(0, 0.01, size=workload.num_queries)
    with pytest.raises(ValueError, match="DEFAULT_MAX_ENTRIES"):
        workload.columns(np.arange(42))  # the dense read the check no longer makes
    result = project_to_hull(workload, y, solver="fast", noise_scale=0.01)
    assert result.stats.tolerance_met and result.support.size * workload.num_queries > 1000
    _, reference = reference_projection(pm.marginals(domain, 2).matrix, y)
    np.testing.assert_allclose(result.answers, reference, atol=1e-4)
