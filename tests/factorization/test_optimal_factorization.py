"""The optimal factorization norm: closed forms, brute force, the SDP as reference, the dual bound."""

import json
import math
import time

import numpy as np
import pytest
from scipy import optimize

import projmech as pm
from projmech.factorization._mean import approximate_factorization_norm, approximate_lower_bound
from projmech.factorization._norm import ScaledFactorization, factorization_norm
from projmech.solve import Status
from projmech.workloads import kron, range_marginals

# A reference SDP must reach the test's tolerance with margin on any machine and SCS release: SCS
# at its default accuracy (1e-4) certifies a relative gap anywhere from 2e-5 to 5e-3 on all_range(32)
# depending on the release and the CPU. Tiny problems take the interior-point Clarabel (gaps near
# 1e-8); larger ones (Clarabel: 83 s at m = 64) take SCS run to 1e-7, which certified gaps of 2e-8
# (all_range(32), 8 s) and 1e-8 (prefix(64), 2 s) against the 1e-4 the comparisons ask of it.
TIGHT_SCS = {"eps_abs": 1e-7, "eps_rel": 1e-7}
SDP_TINY = {"method": "sdp", "solver": "CLARABEL"}
SDP_TIGHT = {"method": "sdp", "solver_options": TIGHT_SCS}


def method_options(method):
    """The keyword arguments of ``method`` for a tight tolerance (the SDP on Clarabel: tiny m)."""
    return SDP_TINY if method == "sdp" else {"method": method}


def assert_agree_within_certificates(first, second):
    """Two certified factorizations of one workload agree as far as their certificates say: each
    one's dual bound lies below the other's value, and the values differ by no more than the
    larger certified gap allows (both lie in [max lower bound, own gamma])."""
    bound = max(first.lower_bound, second.lower_bound)
    assert bound <= min(first.gamma, second.gamma) * (1 + 1e-9)
    assert abs(first.gamma - second.gamma) <= max(first.gamma, second.gamma) - bound + 1e-12


def gamma_of(F, **kwargs):
    return pm.factorization_norm(F, **kwargs).gamma


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.solver
@pytest.mark.parametrize("method", ["iterative", "sdp"])
def test_repeated_query_gamma_is_one(method):
    # Measure the query once, copy it k times: ||R||_F = sqrt(k), ||M||_{1->2} = 1.
    fact = pm.factorization_norm(pm.repeated(np.array([1.0, 1.0, 0.0, 1.0, 0.0]), 6), tol=1e-7,
                                 **method_options(method))
    assert fact.gamma == pytest.approx(1.0, rel=1e-6)
    assert fact.lower_bound <= fact.gamma * (1 + 1e-9)


@pytest.mark.solver
@pytest.mark.parametrize("method", ["iterative", "sdp"])
def test_identity_workload_gamma_is_one(method):
    fact = pm.factorization_norm(pm.identity(9), tol=1e-7, **method_options(method))
    assert fact.gamma == pytest.approx(1.0, rel=1e-6)


def test_orthogonal_columns_closed_form():
    # F = Q diag(s) with orthonormal Q: gamma^2 = (sum s_i)^2 / (k m) (the singular-value bound
    # is tight: by symmetry the optimal q is proportional to ... any q; check both ways).
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(7, 4)))
    s = np.array([1.0, 1.0, 1.0, 1.0]) * 2.5
    F = Q * s[None, :]
    assert gamma_of(F, tol=1e-9) == pytest.approx(s.sum() / math.sqrt(7 * 4), rel=1e-6)


# ----------------------------------------------------------------------------- brute force


def brute_force_gamma(F):
    """min over correlation matrices X (diag = 1 is optimal: adding diagonal slack to X only
    lowers tr(G X^-1)) of sqrt(tr(G X^-1) / k), by a grid then Nelder-Mead from the best point."""
    k, m = F.shape
    G = F.T @ F
    pairs = list(zip(*np.triu_indices(m, 1)))

    def objective(c):
        X = np.eye(m)
        for value, (i, j) in zip(c, pairs):
            X[i, j] = X[j, i] = value
        eigenvalues = np.linalg.eigvalsh(X)
        if eigenvalues.min() <= 1e-12:
            return np.inf
        return float(np.trace(G @ np.linalg.inv(X)))

    axis = np.linspace(-0.99, 0.99, 67 if m == 3 else 399)
    grid = np.array(np.meshgrid(*[axis] * len(pairs), indexing="ij")).reshape(len(pairs), -1).T
    values = [objective(c) for c in grid]
    start = grid[int(np.argmin(values))]
    best = optimize.minimize(objective, start, method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000})
    return math.sqrt(min(best.fun, min(values)) / k)


@pytest.mark.solver
@pytest.mark.parametrize("shape, seed", [((2, 2), 0), ((2, 2), 1), ((3, 2), 2), ((3, 3), 3), ((4, 3), 4)])
def test_brute_force_small(shape, seed):
    F = np.random.default_rng(seed).normal(size=shape)
    expected = brute_force_gamma(F)
    assert gamma_of(F, method="iterative", tol=1e-9, max_iterations=2000) == pytest.approx(expected, rel=1e-6)
    assert gamma_of(F, tol=1e-7, **SDP_TINY) == pytest.approx(expected, rel=1e-6)


# ----------------------------------------------------------------------------- iterative vs SDP


def rank_deficient_cases():
    rng = np.random.default_rng(11)
    total_plus = np.vstack([np.ones(10), np.eye(10)[:3]])  # rectangular, rank 4 of 10
    duplicated = rng.normal(size=(6, 4))[:, [0, 1, 1, 2, 3, 3, 0]]  # repeated columns
    wide = rng.integers(0, 2, size=(5, 12)).astype(float)
    tall_low_rank = rng.normal(size=(20, 3)) @ rng.normal(size=(3, 9))
    return {"total+3 identity rows": total_plus, "duplicated columns": duplicated, "wide 5x12": wide,
            "tall rank 3": tall_low_rank}


@pytest.mark.solver
@pytest.mark.parametrize("name", list(rank_deficient_cases()))
def test_rank_deficient_and_rectangular(name):
    F = rank_deficient_cases()[name]
    iterative = pm.factorization_norm(F, method="iterative", tol=1e-6, max_iterations=2000)
    sdp = pm.factorization_norm(F, tol=1e-4, **SDP_TIGHT)
    # Exact factorizations whose value is attained and never below the certified bound.
    assert iterative.residual < 1e-8 and sdp.residual < 1e-6
    assert iterative.gamma >= iterative.lower_bound * (1 - 1e-12)
    assert sdp.gamma >= sdp.lower_bound * (1 - 1e-12)
    assert_agree_within_certificates(iterative, sdp)
    assert iterative.gamma == pytest.approx(sdp.gamma, rel=1e-4)  # both gaps <= 1e-4 on gamma^2
    # The strategy is verified independently: R M = F with R = F M^+.
    R = F @ np.linalg.pinv(iterative.strategy.toarray())
    np.testing.assert_allclose(R @ iterative.strategy.toarray(), F, atol=1e-8)
    assert np.linalg.norm(R) * pm.Factorization(F, iterative.strategy.toarray()).strategy_sensitivity / math.sqrt(
        F.shape[0]) == pytest.approx(iterative.gamma, rel=1e-9)


@pytest.mark.solver
@pytest.mark.parametrize("build", [
    lambda: pm.prefix(64),
    lambda: pm.all_range(32),
    lambda: pm.marginals(pm.Domain(["a", "b", "c", "d", "e"], [2, 2, 2, 2, 2]), 2),
    lambda: pm.marginals(pm.Domain(["a", "b", "c"], [3, 2, 4]), 2),
    lambda: pm.random_queries(30, 40, np.random.default_rng(5)),  # rank 30 of 40
])
def test_iterative_matches_sdp(build):
    workload = build()
    iterative = pm.factorization_norm(workload, method="iterative", tol=1e-7, max_iterations=2000)
    sdp = pm.factorization_norm(workload, tol=1e-4, **SDP_TIGHT)
    assert_agree_within_certificates(iterative, sdp)
    assert iterative.gamma == pytest.approx(sdp.gamma, rel=1e-4)  # both gaps <= 1e-4 on gamma^2


@pytest.mark.solver
@pytest.mark.slow
def test_iterative_matches_sdp_m128():
    iterative = pm.factorization_norm(pm.prefix(128), method="iterative", tol=1e-7, max_iterations=2000)
    sdp = pm.factorization_norm(pm.prefix(128), tol=1e-4, **SDP_TIGHT)
    assert_agree_within_certificates(iterative, sdp)
    assert iterative.gamma == pytest.approx(sdp.gamma, rel=1e-4)  # both gaps <= 1e-4 on gamma^2


def test_optimal_beats_fixed_strategies():
    m = 32
    optimal = pm.factorization_norm(pm.prefix(m), tol=1e-6).gamma
    for strategy in (pm.identity_strategy(m), pm.hierarchical_strategy(m, 2), pm.hierarchical_strategy(m, 4)):
        assert optimal <= pm.Factorization.from_strategy(pm.prefix(m), strategy).gamma


def test_certified_gap_is_reported_and_met():
    fact = pm.factorization_norm(pm.prefix(100), tol=1e-3)
    stats = fact.stats
    assert stats.status is Status.OPTIMAL and stats.tolerance_met and stats.relative_gap
    assert stats.solver == "iterative" and stats.tolerance == 1e-3 and stats.iterations >= 1
    assert [(a.solver, a.status) for a in stats.attempts] == [("iterative", Status.OPTIMAL)]
    assert 0 <= fact.relative_gap <= 1e-3 and stats.gap == fact.relative_gap
    # gamma and the bound recomputed here from the factors and the dual weights' definition
    F = pm.prefix(100).toarray()
    M = fact.strategy.toarray()
    R = F @ np.linalg.pinv(M)
    gamma = np.linalg.norm(R) * np.sqrt((M**2).sum(axis=0)).max() / math.sqrt(100)
    assert stats.gap == pytest.approx(gamma**2 / fact.lower_bound**2 - 1, rel=1e-6, abs=1e-9)


@pytest.mark.solver
def test_sdp_after_an_uncertified_iterative_attempt_records_both_in_order():
    """"auto" on m <= 64: the iterative method stopped at 2 evaluations, then the SDP; both are
    attempts, the accepted SDP last, and its gap is the certified one."""
    fact = pm.factorization_norm(pm.prefix(8), tol=1e-2, max_iterations=1, solver_options=TIGHT_SCS)
    first, last = fact.stats.attempts
    assert (first.solver, first.status) == ("iterative", Status.ITERATION_LIMIT)
    assert (last.solver, last.status) == ("sdp/SCS", Status.OPTIMAL)
    assert fact.stats.solver == "sdp/SCS" and fact.stats.iterations is None
    assert fact.stats.gap == fact.relative_gap <= 1e-2
    assert fact.stats.solve_time == last.seconds
    assert fact.stats.total_time >= first.seconds + last.seconds  # the rejected attempt counts too


def test_callback_gets_increasing_iterations():
    calls = []
    fact = pm.factorization_norm(pm.prefix(64), method="iterative", tol=1e-6, max_iterations=500,
                                 callback=lambda i, gap: calls.append((i, gap)))
    iterations = [i for i, _ in calls]
    assert iterations == sorted(iterations) and len(set(iterations)) == len(iterations)
    assert iterations[-1] == fact.stats.iterations
    gaps = [gap for _, gap in calls]
    assert gaps == sorted(gaps, reverse=True)  # the best gap so far
    assert gaps[-1] <= 1e-6


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        pm.factorization_norm(pm.prefix(4), "iterative")
    with pytest.raises(TypeError):
        pm.approximate_factorization_norm(pm.prefix(4), 0.1, "SCS")
    with pytest.raises(TypeError, match="callback"):
        pm.factorization_norm(pm.prefix(4), callback=True)


def test_summary_is_a_json_dict_and_repr_is_short():
    fact = pm.factorization_norm(pm.prefix(16))
    summary = json.loads(json.dumps(fact.summary()))
    assert summary["gamma"] == pytest.approx(fact.gamma) and summary["status"] == "optimal"
    assert summary.items() >= fact.stats.summary().items()
    assert "\n" not in repr(fact) and len(repr(fact)) < 300
    assert "gamma" in str(fact) and "iterative optimal" in str(fact)
    given = pm.Factorization.from_strategy(pm.prefix(16), pm.identity_strategy(16))
    assert given.stats.status is Status.GIVEN and given.stats.solver == "given"
    assert given.summary()["status"] == "given" and given.summary()["gap"] is None


# ----------------------------------------------------------------------------- timing


def _timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


@pytest.mark.parametrize("build, method", [
    (lambda: pm.prefix(128), "iterative"),
    (lambda: kron([pm.prefix(256), pm.all_range(128)]), "kron"),
    (lambda: range_marginals(pm.Domain(["a", "b", "c", "d"], [64, 32, 8, 8]), 2,
                             {"a": "prefix", "b": "all_range"}), "range-residual"),
], ids=["iterative", "kron", "range-residual"])
def test_total_time_is_the_wall_time_of_the_whole_call(build, method):
    """What a user measures around the call is what ``stats.total_time`` reports: within 10 %
    (or 5 ms on a short call; the difference is a function call and a copy), never above."""
    workload = build()
    fact, wall = _timed(lambda: factorization_norm(workload))
    stats = fact.stats
    assert stats.solver == method
    assert sum(attempt.seconds for attempt in stats.attempts) <= stats.total_time <= wall
    assert stats.solve_time <= stats.total_time
    assert wall - stats.total_time <= max(0.1 * wall, 0.005)
    assert "s in the accepted attempt" in str(stats) and stats.summary()["total_time_s"] == stats.total_time


def test_total_time_counts_the_preparation_before_the_first_attempt(monkeypatch):
    """The Gram matrix is built before any attempt starts: outside ``solve_time``, inside
    ``total_time``."""
    workload = pm.prefix(32)
    gram = workload.gram

    def slow_gram():
        time.sleep(0.2)
        return gram()

    monkeypatch.setattr(workload, "gram", slow_gram)
    fact, wall = _timed(lambda: factorization_norm(workload, method="iterative"))
    assert fact.stats.total_time - fact.stats.solve_time >= 0.2
    assert fact.stats.total_time <= wall


@pytest.mark.solver
def test_approximate_total_time_is_the_wall_time_of_the_whole_call():
    fact, wall = _timed(lambda: approximate_factorization_norm(pm.prefix(4), 0.1))
    stats = fact.stats
    assert stats.solve_time <= stats.total_time <= wall
    assert wall - stats.total_time <= max(0.1 * wall, 0.005)


def test_a_given_strategy_has_no_time():
    stats = pm.Factorization(pm.prefix(4), pm.identity_strategy(4)).stats
    assert stats.total_time is None and str(stats) == "given: no solve"


# ----------------------------------------------------------------------------- the dual bound


def test_uniform_bound_is_singular_value_bound():
    F = np.random.default_rng(7).normal(size=(6, 9))
    nuclear = np.linalg.svd(F, compute_uv=False).sum()
    assert pm.factorization_lower_bound(F) == pytest.approx(nuclear / math.sqrt(6 * 9), rel=1e-10)


def test_weighted_bound_matches_nuclear_norm():
    rng = np.random.default_rng(8)
    F = rng.normal(size=(5, 7))
    q = rng.dirichlet(np.ones(7))
    nuclear = np.linalg.svd(F * np.sqrt(q)[None, :], compute_uv=False).sum()
    assert pm.factorization_lower_bound(F, q) == pytest.approx(nuclear / math.sqrt(5), rel=1e-10)
    # Weights are normalized: scaling them changes nothing.
    assert pm.factorization_lower_bound(F, 3 * q) == pytest.approx(pm.factorization_lower_bound(F, q), rel=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_bound_never_exceeds_any_factorization(seed):
    rng = np.random.default_rng(seed)
    k, m = rng.integers(2, 8, size=2)
    F = rng.normal(size=(k, m)) * (rng.random((k, m)) < 0.7)
    if not F.any():
        F[0, 0] = 1.0
    q = rng.dirichlet(np.ones(m) * rng.uniform(0.1, 3))
    bound = pm.factorization_lower_bound(F, q)
    # Any exact factorization's gamma is an upper bound on gamma(F): the trivial one (M = I)
    # and a random invertible strategy.
    for strategy in (np.eye(m), rng.normal(size=(m, m))):
        assert bound <= pm.Factorization.from_strategy(F, strategy).gamma * (1 + 1e-12)
    assert bound <= pm.factorization_norm(F, tol=1e-6, max_iterations=2000).gamma * (1 + 1e-12)


def test_bound_is_tight_at_the_optimal_weights():
    fact = pm.factorization_norm(pm.prefix(20), tol=1e-9, max_iterations=2000)
    assert fact.lower_bound == pytest.approx(fact.gamma, rel=1e-8)


# ----------------------------------------------------------------------------- implicit workloads


def test_implicit_workload_gives_same_factorization():
    explicit = pm.factorization_norm(pm.all_range(40), tol=1e-6)
    implicit = pm.factorization_norm(pm.all_range(40, implicit=True), tol=1e-6)
    assert implicit.gamma == pytest.approx(explicit.gamma, rel=1e-10)
    assert implicit.residual < 1e-6
    y = np.random.default_rng(0).normal(size=implicit.strategy.num_queries)
    np.testing.assert_allclose(implicit.reconstruct(y), explicit.reconstruct(y), atol=1e-9)
    with pytest.raises(ValueError, match="implicit"):
        _ = implicit.reconstruction


# ----------------------------------------------------------------------------- approximate


@pytest.mark.solver
def test_approximate_alpha_zero_is_exact():
    exact = pm.factorization_norm(pm.prefix(6), tol=1e-8).gamma
    approximate = pm.approximate_factorization_norm(pm.prefix(6), 0.0)
    assert approximate.gamma == pytest.approx(exact, rel=1e-5)
    assert approximate.residual < 1e-6


@pytest.mark.solver
def test_approximate_near_an_all_ones_workload():
    # Entries 1 +- alpha are within alpha of the all-ones matrix, which has gamma 1, so
    # gamma_alpha <= 1.
    rng = np.random.default_rng(1)
    alpha = 0.1
    F = 1.0 + alpha * rng.choice([-1.0, 1.0], size=(3, 5))
    assert pm.factorization_norm(F, tol=1e-6).gamma > 1.05
    fact = pm.approximate_factorization_norm(F, alpha)
    assert fact.gamma <= 1.0 + 1e-5
    assert fact.residual <= alpha * math.sqrt(3) * (1 + 1e-4)
    assert fact.lower_bound <= fact.gamma
    np.testing.assert_allclose(fact.reconstruction @ fact.strategy.toarray(), F + fact.perturbation, atol=1e-9)


@pytest.mark.solver
def test_approximate_is_monotone_in_alpha_and_bounded():
    F = pm.prefix(5).toarray()
    previous = math.inf
    for alpha in (0.0, 0.05, 0.2, 0.5):
        fact = pm.approximate_factorization_norm(F, alpha)
        assert fact.gamma <= previous * (1 + 1e-5)
        assert fact.lower_bound <= fact.gamma * (1 + 1e-6)
        if alpha == 0:
            assert fact.relative_gap < 1e-4  # the bound is the exact dual bound there
        assert fact.residual <= alpha * math.sqrt(5) * (1 + 1e-4) + 1e-7
        previous = fact.gamma


def test_approximate_lower_bound_against_brute_perturbations():
    # The bound holds against every feasible E, so against random ones scaled to the limit.
    rng = np.random.default_rng(4)
    F = rng.normal(size=(4, 5))
    alpha = 0.3
    q = rng.dirichlet(np.ones(5))
    bound = approximate_lower_bound(F, alpha, q)
    for _ in range(20):
        E = rng.normal(size=F.shape)
        E *= alpha * 2.0 / np.linalg.norm(E, axis=0)[None, :]
        assert bound <= pm.factorization_norm(F + E, tol=1e-6, max_iterations=2000).gamma * (1 + 1e-9)


# ----------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("bad", [np.array([[1.0, np.nan]]), np.array([[np.inf, 1.0]])])
def test_non_finite_workload_rejected(bad):
    with pytest.raises(ValueError, match="NaN or infinite"):
        pm.factorization_norm(bad)
    with pytest.raises(ValueError, match="NaN or infinite"):
        pm.approximate_factorization_norm(bad, 0.1)


@pytest.mark.parametrize("alpha, error", [(-0.1, ValueError), (float("nan"), ValueError),
                                          (float("inf"), ValueError), ("0.1", TypeError), (True, TypeError)])
def test_bad_alpha(alpha, error):
    with pytest.raises(error, match="alpha"):
        pm.approximate_factorization_norm(pm.prefix(3), alpha)


@pytest.mark.parametrize("kwargs, error", [
    ({"method": "newton"}, ValueError),
    ({"tol": 0.0}, ValueError),
    ({"tol": -1e-3}, ValueError),
    ({"tol": float("nan")}, ValueError),
    ({"max_iterations": 0}, ValueError),
    # A wrong type is a TypeError, as everywhere (OfflinePMW's rounds=2.0 too); these were
    # ValueErrors before the checks became declarative.
    ({"max_iterations": 2.5}, TypeError),
    ({"max_iterations": 2.0}, TypeError),
    ({"tol": "a"}, TypeError),
    ({"objective": 1}, TypeError),
])
def test_bad_options(kwargs, error):
    (name,) = kwargs
    with pytest.raises(error, match=f"^{name}: "):
        pm.factorization_norm(pm.prefix(4), **kwargs)


def test_zero_workload_rejected():
    with pytest.raises(ValueError, match="zero"):
        pm.factorization_norm(np.zeros((3, 4)))


# ----------------------------------------------------------------------------- extreme scales


@pytest.mark.parametrize("c", [1e-200, -1e-200, 1e-300, 1e200, 1e300])
@pytest.mark.parametrize("objective", ["mean", "max"])
def test_a_workload_of_extreme_scale_has_c_times_the_norm_of_its_unit_form(c, objective):
    """gamma(c F) = |c| gamma(F): 1e-200 prefix(8) was refused as "F is zero" (its Gram matrix
    underflows to 0) and 1e300 prefix(8) as "not finite"; factorized divided by a power of two,
    the norm, the bound and every answer are |c| (or c) times those of prefix(8), the strategy
    and the relative gap the same, and R M = F holds."""
    unit = pm.factorization_norm(pm.prefix(8), objective=objective)
    fact = pm.factorization_norm(c * pm.prefix(8).toarray(), objective=objective)
    assert isinstance(fact, ScaledFactorization) and fact.defect() is None
    assert fact.value == pytest.approx(abs(c) * unit.value, rel=1e-12)
    assert fact.lower_bound == pytest.approx(abs(c) * unit.lower_bound, rel=1e-12)
    assert fact.lower_bound <= fact.value and fact.relative_gap == pytest.approx(unit.relative_gap, rel=1e-9)
    assert fact.residual <= 1e-12 * abs(c)
    np.testing.assert_allclose(fact.strategy.toarray(), unit.strategy.toarray(), rtol=0, atol=1e-12)
    x = np.arange(1.0, 9.0)
    np.testing.assert_allclose(fact.reconstruct(fact.strategy.answer(x)), c * pm.prefix(8).answer(x), rtol=1e-12)
    np.testing.assert_allclose(fact.query_norms, abs(c) * unit.query_norms, rtol=1e-12)
    assert pm.factorization_lower_bound(c * pm.prefix(8).toarray()) == pytest.approx(
        abs(c) * pm.factorization_lower_bound(pm.prefix(8)), rel=1e-12)


def test_a_kronecker_factor_of_extreme_scale_is_scaled_too():
    """Each factor is scaled (a factor of 1e-200 made the product's relative gap 0 / 0)."""
    unit = pm.factorization_norm(kron([pm.identity(3), pm.prefix(4)]))
    fact = pm.factorization_norm(kron([pm.Workload(1e-200 * np.eye(3)), pm.prefix(4)]))
    assert fact.defect() is None and fact.gamma == pytest.approx(1e-200 * unit.gamma, rel=1e-12)
    assert fact.relative_gap == pytest.approx(unit.relative_gap, rel=1e-6)
    # Factors scaled in opposite directions: the product is of unit scale again.
    balanced = pm.factorization_norm(kron([pm.Workload(1e-200 * np.eye(3)),
                                           pm.Workload(1e200 * pm.prefix(4).toarray())]))
    assert balanced.gamma == pytest.approx(unit.gamma, rel=1e-12)


@pytest.mark.parametrize("build, match", [
    (lambda: 5e-324 * pm.prefix(8).toarray(),
     r"largest entry magnitude, 4.94e-324, is below float64's smallest normal"),
    (lambda: kron([pm.Workload(1e-200 * np.eye(3)), pm.Workload(1e-200 * pm.prefix(4).toarray())]),
     r"largest entry magnitude, about 2\^-1330, is below float64's smallest normal"),
    (lambda: kron([pm.Workload(1e200 * np.eye(3)), pm.Workload(1e200 * pm.prefix(4).toarray())]),
     r"largest entry magnitude, about 2\^1328, is beyond float64's range"),
])
def test_a_workload_beyond_float64s_normal_range_is_refused_saying_so(build, match):
    with pytest.raises(ValueError, match=f"^workload: its {match}"):
        pm.factorization_norm(build())


@pytest.mark.parametrize("weights, match", [(np.ones(3), "shape"), (-np.ones(4), "nonnegative"),
                                            (np.zeros(4), "positive sum"), (np.array([1, np.nan, 1, 1]), "finite")])
def test_bad_weights(weights, match):
    with pytest.raises(ValueError, match=match):
        pm.factorization_lower_bound(pm.prefix(4), weights)


def test_uncertified_result_is_an_error_with_the_best_attached():
    with pytest.raises(pm.FactorizationError, match="no method certified") as info:
        pm.factorization_norm(pm.prefix(50), method="iterative", tol=1e-12, max_iterations=2)
    error = info.value
    assert isinstance(error, pm.SolveError)
    assert [(a.solver, a.status) for a in error.attempts] == [("iterative", Status.ITERATION_LIMIT)]
    best = error.best
    assert best is not None and best.stats.status is Status.ITERATION_LIMIT and not best.stats.tolerance_met
    assert best.stats.attempts == error.attempts and best.stats.iterations == 2
    assert best.relative_gap > 1e-12 and best.stats.gap == best.relative_gap
    assert best.gamma >= best.lower_bound
    assert best.stats.total_time >= best.stats.solve_time


def test_approximate_refuses_large_explicit_problems():
    with pytest.raises(ValueError, match="max_entries"):
        pm.approximate_factorization_norm(pm.prefix(200), 0.1)


# ----------------------------------------------------------------------------- the tridiagonal fast path


@pytest.mark.parametrize("build, tridiagonal", [
    (lambda: pm.prefix(300), True),
    (lambda: pm.all_range(200, implicit=True), True),
    (lambda: pm.random_queries(60, 50, np.random.default_rng(2)), False),
    (lambda: pm.stack([pm.prefix(40), pm.identity(40)]), False),
])
def test_tridiagonal_inverse_detection_and_agreement(build, tridiagonal):
    from projmech.factorization._mean import _RowSpaceDual, _tridiagonal_inverse

    gram = build().gram()
    dual = _RowSpaceDual(gram)
    assert (dual.inverse_bands is not None) == tridiagonal
    if tridiagonal:
        bands, off_bands = dual.inverse_bands
        T = np.diag(bands) + np.diag(off_bands, 1) + np.diag(off_bands, -1)
        np.testing.assert_allclose(T, np.linalg.inv(gram), atol=1e-8 * np.abs(T).max())
        # The same step as the dense eigendecomposition.
        q = np.random.default_rng(0).dirichlet(np.ones(gram.shape[0]))
        fast = dual.step(q)
        dual.inverse_bands = None
        dense = dual.step(q)
        assert fast[0] == pytest.approx(dense[0], rel=1e-9)
        np.testing.assert_allclose(fast[1], dense[1], rtol=1e-7)
    assert _tridiagonal_inverse(np.eye(3), np.eye(3)) is None  # too small to bother


def test_the_strategy_does_not_depend_on_the_blas_thread_count():
    """The dense iterative method on prefix(512): with the default BLAS threads, 1 and 2 threads
    gave strategies 3.5e-7 apart; on one pinned thread they are bit-identical."""
    import os
    import subprocess
    import sys

    script = ("import hashlib, numpy as np, projmech as pm\n"
              "fact = pm.factorization_norm(pm.prefix(512), method='iterative')\n"
              "print(hashlib.sha256(np.ascontiguousarray(fact.strategy.gram()).tobytes()).hexdigest())\n")
    digests = set()
    for threads in ("1", "2"):
        environment = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads,
                       "MKL_NUM_THREADS": threads}
        done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                              check=True, timeout=300)
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_choose_method_follows_the_structure_then_the_objective():
    """One chooser, as for bodies: the structure first, the resolvent at scale, the dense method
    below it, the max objective's own method; each refusal says why, before anything is solved."""
    from projmech.factorization._norm import (
        DENSE,
        MAX_OBJECTIVE,
        RESOLVENT,
        RESOLVENT_MIN_UNIVERSE,
        STRUCTURED,
        Request,
        choose_method,
    )

    def request(objective="mean", method="auto"):
        return Request(objective, method, 1e-3, 200, "SCS", None, None)

    domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    assert choose_method(pm.marginals(domain, way=2), request()) is STRUCTURED
    assert choose_method(pm.prefix(RESOLVENT_MIN_UNIVERSE), request()) is RESOLVENT
    assert choose_method(pm.prefix(8), request()) is DENSE  # below the resolvent's size: dense
    assert choose_method(pm.prefix(8), request(method="structured")) is RESOLVENT  # asked by name: any size
    assert choose_method(pm.random_queries(5, 6, rng=np.random.default_rng(0)), request("max")) is MAX_OBJECTIVE
    assert STRUCTURED.blocker(pm.random_queries(5, 6, rng=np.random.default_rng(0)), request()) == (
        "it is neither a Kronecker product nor a union of tables")
    assert RESOLVENT.blocker(pm.identity(600), request()) is not None
    assert DENSE.blocker(pm.prefix(8), request("max")) == "it serves the 'mean' objective only"
    with pytest.raises(ValueError, match="^method: 'structured' with objective='mean' needs a Kronecker product"):
        choose_method(pm.random_queries(5, 6, rng=np.random.default_rng(0)), request(method="structured"))
    # The chosen method's attempts name themselves in the statistics.
    fact = pm.factorization_norm(pm.marginals(domain, way=2))
    assert fact.stats.solver == "residual"


@pytest.mark.solver
@pytest.mark.parametrize("row", [[1.0] * 17, [0.5, -2.0, 1.0], [0.0, 3.0, 3.0, -1.0]])
def test_a_single_query_is_its_own_optimal_strategy(row):
    """gamma of one query q is max |q_j| (closed form: R = [1], M = q; the dual bound at e_j of its
    largest entry equals it), and the SDP agrees within both certificates."""
    workload = pm.Workload(np.array([row]))
    fact = pm.factorization_norm(workload)
    assert fact.stats.solver == "single-query"
    assert fact.gamma == pytest.approx(max(abs(v) for v in row), rel=1e-12)
    assert fact.lower_bound == pytest.approx(fact.gamma, rel=1e-12) and fact.lower_bound <= fact.gamma * (1 + 1e-12)
    np.testing.assert_array_equal(fact.strategy.toarray(), np.array([row]))  # exact entries, not an optimum's
    sdp = pm.factorization_norm(workload, method="sdp", solver="CLARABEL")
    assert sdp.lower_bound <= fact.gamma * (1 + 1e-9) and fact.lower_bound <= sdp.gamma * (1 + 1e-9)


def test_a_prefix_on_one_attribute_of_a_huge_domain_is_measured_from_its_table():
    """prefix on one attribute of 10 x 17 values (2.0e12 cells): the strategy's total factors are
    exact constant rows, so the measured counts come from that attribute's 17-cell table (they
    were refused as a 2.0e12-entry table), equal to the strategy applied to numpy's bincount."""
    from projmech.workloads import kron, total

    domain = pm.Domain([f"p{i}" for i in range(10)], [17] * 10)
    records = np.random.default_rng(0).integers(0, 17, size=(500, 10))
    data = pm.Dataset(records, domain)
    workload = kron([pm.prefix(17)] + [total(17)] * 9)
    mechanism = pm.FactorizationMechanism(workload, pm.ZCDP(1.0), noise="continuous")
    strategy = mechanism.factorization.strategy
    assert all(np.array_equal(factor.toarray(), np.ones((1, 17))) for factor in strategy.factors[1:])
    counts = np.bincount(records[:, 0], minlength=17).astype(float)
    expected = strategy.factors[0].toarray() @ counts
    np.testing.assert_allclose(mechanism._measured_counts(data), expected, rtol=1e-12)
    release = mechanism.release(data, rng=0)
    assert release.answers.shape == (17,) and np.all(np.isfinite(release.answers))
