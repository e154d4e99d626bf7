"""The max-error factorization norm gamma_2: closed forms, published bounds, the SDP as reference,
the dual certificate, Kronecker products, the mechanism's objective and the streaming form."""

import math

import numpy as np
import pytest

import projmech as pm
from projmech.factorization._norm import MAX_OBJECTIVE_ENTRIES, RANGE_MAX_UNIVERSE
from projmech.factorization._range_forms import prefix_form, range_gram, range_squares
from projmech.workloads import identity, identity_total, kron, stack, table_terms, total

SDP = {"method": "sdp", "solver": "CLARABEL"}


def gamma_2(F, **kwargs):
    return pm.factorization_norm(F, objective="max", **kwargs)


def explicit_gamma_2(fact):
    """||R||_{2->inf} ||M||_{1->2} from explicit R = F M^+, independently of the class's code."""
    F = fact.workload.toarray()
    M = fact.strategy.toarray()
    R = F @ np.linalg.pinv(M)
    assert np.allclose(R @ M, F, atol=1e-8)
    return np.linalg.norm(R, axis=1).max() * np.linalg.norm(M, axis=0).max()


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.solver
@pytest.mark.parametrize("method", ["iterative", "sdp"])
def test_identity_gamma_2_is_one(method):
    fact = gamma_2(pm.identity(7), method=method, tol=1e-7)
    assert fact.value == pytest.approx(1.0, rel=1e-6)
    assert fact.lower_bound <= fact.value * (1 + 1e-9)


@pytest.mark.solver
@pytest.mark.parametrize("method", ["iterative", "sdp"])
def test_rank_one_gamma_2_is_product_of_sup_norms(method):
    # gamma_2(u v^T) = ||u||_inf ||v||_inf: measure v^T h once, scale by u.
    rng = np.random.default_rng(3)
    u, v = rng.uniform(0.2, 2.0, 6), rng.uniform(-1.5, 1.5, 5)
    fact = gamma_2(np.outer(u, v), method=method, tol=1e-7)
    assert fact.value == pytest.approx(np.abs(u).max() * np.abs(v).max(), rel=1e-5)


def test_repeated_query_gamma_2_is_one():
    fact = gamma_2(pm.repeated(np.array([1.0, 1.0, 0.0, 1.0]), 5), tol=1e-7)
    assert fact.value == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("m", [4, 16, 64, 256])
def test_prefix_gamma_2_inside_published_bounds(m):
    # Matousek, Nikolov & Talwar's lower bound and Mathias' upper bound on gamma_2(prefix_m).
    fact = gamma_2(pm.prefix(m), tol=1e-6)
    assert (2 + math.log((2 * m + 1) / 3)) / math.pi <= fact.lower_bound
    assert fact.value <= 1 + math.log(m) / math.pi
    assert fact.relative_gap <= 1e-6


# ----------------------------------------------------------------------------- the SDP as reference


@pytest.mark.solver
@pytest.mark.parametrize("make", [
    lambda: pm.prefix(12),
    lambda: pm.all_range(6),
    lambda: np.random.default_rng(0).standard_normal((5, 11)),   # wide: solved transposed
    lambda: np.random.default_rng(1).standard_normal((14, 6)),
    lambda: np.hstack([np.random.default_rng(2).standard_normal((9, 4))] * 2),  # rank 4 of 8 columns
], ids=["prefix", "all_range", "wide", "tall", "rank_deficient"])
def test_iterative_matches_sdp(make):
    F = make()
    fact = gamma_2(F, method="iterative", tol=1e-8, max_iterations=5000)
    reference = gamma_2(F, **SDP, tol=1e-3)
    assert fact.value == pytest.approx(reference.value, rel=1e-5)
    assert fact.value == pytest.approx(explicit_gamma_2(fact), rel=1e-9)
    # Each certificate bounds the other's value: both are lower bounds on the same gamma_2.
    assert fact.lower_bound <= reference.value * (1 + 1e-7)
    assert reference.lower_bound <= fact.value * (1 + 1e-9)


@pytest.mark.solver
def test_certificate_never_above_gamma_2_at_any_weights():
    rng = np.random.default_rng(4)
    F = rng.standard_normal((8, 6))
    value = gamma_2(F, **SDP).value
    for _ in range(30):
        p, q = rng.dirichlet(np.full(8, 0.3)), rng.dirichlet(np.full(6, 0.3))
        assert pm.factorization_lower_bound(F, q, query_weights=p) <= value * (1 + 1e-6)
    # Uniform query weights give the mean bound again, and gamma_2 >= gamma.
    uniform = pm.factorization_lower_bound(F, np.full(6, 1 / 6), query_weights=np.full(8, 1 / 8))
    assert uniform == pytest.approx(pm.factorization_lower_bound(F), rel=1e-10)
    assert pm.factorization_norm(F, tol=1e-6).gamma <= value * (1 + 1e-6)


def test_gamma_2_at_least_gamma_and_each_optimum_wins_its_own_norm():
    F = pm.prefix(32)
    mean, worst = pm.factorization_norm(F, tol=1e-7), gamma_2(F, tol=1e-7)
    assert worst.gamma_2 <= mean.gamma_2 * (1 + 1e-6)
    assert mean.gamma <= worst.gamma * (1 + 1e-6)
    assert mean.gamma <= worst.gamma_2


# ----------------------------------------------------------------------------- structure


def test_kron_gamma_2_is_product_and_matches_dense():
    F = kron([pm.prefix(4), pm.all_range(3)])
    structured = gamma_2(F, tol=1e-8)
    assert structured.stats.solver == "kron"
    assert structured.objective == "max"
    dense = gamma_2(F.toarray(), method="iterative", tol=1e-8, max_iterations=5000)
    assert structured.value == pytest.approx(dense.value, rel=1e-6)
    assert structured.value == pytest.approx(explicit_gamma_2(structured), rel=1e-9)
    parts = [gamma_2(factor, tol=1e-9).value for factor in F.factors]
    assert structured.value == pytest.approx(math.prod(parts), rel=1e-6)


def test_query_norms_match_explicit_reconstruction():
    domain = pm.Domain(["a", "b", "c"], [3, 2, 4])
    for fact in (pm.factorization_norm(pm.prefix(9)), pm.factorization_norm(kron([pm.prefix(3), pm.identity(4)])),
                 pm.factorization_norm(pm.marginals(domain, 2))):
        F = fact.workload.toarray()
        R = np.stack([fact.reconstruct(unit) for unit in np.eye(fact.num_measurements)], axis=1)
        assert np.allclose(R @ fact.strategy.toarray(), F, atol=1e-8)
        assert np.allclose(fact.query_norms, np.linalg.norm(R, axis=1), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- all ranges


def test_range_gram_and_quadratic_forms_match_the_explicit_matrix():
    rng = np.random.default_rng(5)
    F = pm.all_range(7).toarray()
    weights = rng.random(F.shape[0])
    assert np.allclose(range_gram(weights, 7), F.T @ (weights[:, None] * F), rtol=1e-14, atol=0)
    inner = rng.standard_normal((7, 7))
    inner = inner + inner.T
    assert np.allclose(range_squares(prefix_form(inner)), np.einsum("ij,jk,ik->i", F, inner, F), atol=1e-12)


def test_all_range_gram_method_matches_the_explicit_matrix():
    # The all-range workload goes to the m x m Gram form; the same matrix without the declared
    # structure to the SVD of the k x m matrix. Same gamma_2, and each bound below the other's value.
    ranges = pm.all_range(16)
    structured = gamma_2(ranges, tol=1e-8, max_iterations=5000)
    dense = gamma_2(pm.Workload(ranges.toarray()), method="iterative", tol=1e-8, max_iterations=5000)
    assert structured.value == pytest.approx(dense.value, rel=1e-6)
    assert structured.value == pytest.approx(explicit_gamma_2(structured), rel=1e-9)
    assert structured.lower_bound <= dense.value * (1 + 1e-9)
    assert dense.lower_bound <= structured.value * (1 + 1e-9)
    assert gamma_2(ranges, method="structured", tol=1e-6).relative_gap <= 1e-6


def test_all_range_gram_method_at_the_smallest_sizes():
    # One cell: gamma_2 = 1. Two cells, ranges [0], [1], [0, 1]: 2 / sqrt(3) (the SDP's value).
    assert gamma_2(pm.all_range(1), tol=1e-9).value == pytest.approx(1.0, rel=1e-9)
    pair = gamma_2(pm.all_range(2), tol=1e-9, max_iterations=5000)
    assert pair.stats.solver == "range-gram"
    assert pair.lower_bound <= 2 / math.sqrt(3) <= pair.value <= 2 / math.sqrt(3) * (1 + 1e-9)
    with pytest.raises(ValueError, match="method: 'sdp' works on the explicit"):
        gamma_2(pm.all_range(400, implicit=True), method="sdp")


def test_all_range_query_norms_from_prefix_forms_match_explicit_reconstruction():
    rng = np.random.default_rng(6)
    workload = pm.all_range(9)
    strategy = rng.standard_normal((12, 9))
    fact = pm.Factorization(workload, strategy)
    explicit = np.linalg.norm(workload.toarray() @ np.linalg.pinv(strategy), axis=1)
    assert np.all(fact.query_norms >= explicit)  # the rounding slack lifts them
    assert np.allclose(fact.query_norms, explicit, rtol=1e-10, atol=0)


def test_all_range_beyond_the_explicit_matrix_limit():
    # 80,200 x 400: above MAX_OBJECTIVE_ENTRIES, refused before the Gram form.
    ranges = pm.all_range(400, implicit=True)
    assert ranges.num_queries * ranges.universe_size > MAX_OBJECTIVE_ENTRIES
    fact = gamma_2(ranges)
    assert fact.relative_gap <= 1e-3 and fact.lower_bound <= fact.value
    # Every prefix sum is a range, so gamma_2 of the ranges is at least the prefix sums'.
    assert fact.value >= gamma_2(pm.prefix(400)).lower_bound
    assert fact.value <= 2 * gamma_2(pm.prefix(400)).value  # a range is a difference of two


@pytest.mark.slow
def test_all_range_1024_certified():
    fact = gamma_2(pm.all_range(1024, implicit=True))
    assert fact.relative_gap <= 1e-3 and fact.value >= gamma_2(pm.prefix(1024, implicit=True)).lower_bound


# ----------------------------------------------------------------------------- marginals


@pytest.mark.parametrize("ways", [(2,), (0, 1, 2)], ids=["2-way", "0-1-2-way"])
def test_marginal_gamma_2_matches_the_explicit_matrix(ways):
    workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 4]), ways=ways)
    structured = gamma_2(workload, tol=1e-9, max_iterations=5000)
    assert type(structured).__name__ == "ResidualFactorization" and structured.stats.solver == "residual"
    dense = gamma_2(workload.toarray(), method="iterative", tol=1e-9, max_iterations=20000)
    assert structured.value == pytest.approx(dense.value, rel=1e-8)
    assert structured.value == pytest.approx(explicit_gamma_2(structured), rel=1e-12)
    assert structured.lower_bound <= dense.value and dense.lower_bound <= structured.value


@pytest.mark.solver
def test_marginal_gamma_2_of_weighted_and_degenerate_tables_matches_the_explicit_matrix():
    # Weights 3, 1, -2 and a zero-weight table (no dual weight: tol 1e-10 is reachable), a
    # size-1 attribute, tables of one size that are not interchangeable.
    domain = pm.Domain(["a", "b", "c", "d"], [3, 4, 1, 2])
    sizes = domain.sizes

    def identity_or_total(sizes, inside, weight):
        # The weight on the table's first attribute of more than one value; identity elsewhere in it.
        first = min(i for i in inside if sizes[i] > 1)
        return kron([(pm.Workload(weight * np.eye(n)) if i == first else identity(n)) if i in inside else total(n)
                     for i, n in enumerate(sizes)], domain=domain)

    workload = stack([identity_or_total(sizes, {0, 2}, 3.0), identity_or_total(sizes, {0, 1}, 1.0),
                      identity_or_total(sizes, {1, 3}, -2.0), identity_or_total(sizes, {3}, 0.0)])
    assert table_terms(workload).weights == (3.0, 1.0, -2.0, 0.0)
    structured = gamma_2(workload, tol=1e-10, max_iterations=5000)
    assert structured.stats.solver == "residual"
    dense = gamma_2(workload.toarray(), method="iterative", tol=1e-8, max_iterations=50000)
    assert structured.value == pytest.approx(dense.value, rel=1e-8)
    assert structured.lower_bound <= dense.value and dense.lower_bound <= structured.value
    assert structured.value == pytest.approx(explicit_gamma_2(structured), rel=1e-12)
    chain = pm.marginals(pm.Domain(list("abcd"), [2, 2, 2, 2]), 2)
    chain = stack([kron([identity(2) if i in pair else total(2) for i in range(4)], domain=chain.domain)
                   for pair in ({0, 1}, {1, 2}, {2, 3})])
    worst, mean = gamma_2(chain, tol=1e-10), pm.factorization_norm(chain, tol=1e-10)
    assert worst.value == pytest.approx(1.38266, abs=1e-5) and mean.gamma_2 == pytest.approx(1.40091, abs=1e-5)
    assert worst.value == pytest.approx(gamma_2(chain.toarray(), **SDP, tol=1e-3).value, rel=1e-5)
    zero = stack([identity_or_total(sizes, {0}, 0.0), identity_or_total(sizes, {1}, 0.0)])
    with pytest.raises(ValueError, match="workload: F is zero"):
        gamma_2(zero)


def test_marginal_gamma_2_at_scale_beats_the_mean_optimum_on_the_worst_query():
    sizes = [2, 3, 5, 7, 10, 16, 20, 30, 42, 50]
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(10)], sizes), ways=(1, 2, 3), implicit=True)
    worst = gamma_2(workload, tol=1e-6)
    mean = pm.factorization_norm(workload)
    assert worst.relative_gap <= 1e-6
    # The mean-optimal strategy is a feasible factorization: its worst query is an upper bound
    # on gamma_2, and gamma_2 >= gamma.
    assert worst.lower_bound <= mean.gamma_2 and mean.lower_bound <= worst.value
    assert worst.value < 0.25 * mean.gamma_2  # 9.41 against 46.5 here


def test_residual_query_norms_match_explicit_reconstruction():
    from projmech.workloads import range_marginals

    domain = pm.Domain(["a", "b", "c"], [4, 2, 3])
    for fact in (pm.factorization_norm(pm.marginals(domain, ways=(0, 1, 2))),
                 gamma_2(pm.marginals(domain, 2)),
                 pm.factorization_norm(range_marginals(domain, 2, {"a": "prefix", "c": "all_range"}, implicit=False),
                                       method="structured")):
        F = fact.workload.toarray()
        R = np.stack([fact.reconstruct(unit) for unit in np.eye(fact.num_measurements)], axis=1)
        assert np.allclose(R @ fact.strategy.toarray(), F, atol=1e-10)
        assert np.allclose(fact.query_norms, np.linalg.norm(R, axis=1), rtol=1e-12, atol=1e-14)


def test_residual_factorization_refuses_foreign_coefficients():
    from projmech.factorization._residual import AttributeBasis, helmert
    from projmech.factorization._structured import ResidualFactorization
    from projmech.workloads import table_terms

    workload = pm.marginals(pm.Domain(["a", "b"], [2, 3]), 1)
    bases = [AttributeBasis(np.eye(n), helmert(n)) for n in (2, 3)]
    with pytest.raises(ValueError, match="coefficients: expected the measured subsets"):
        ResidualFactorization(workload, table_terms(workload), bases, lower_bound=0.0, coefficients={(0,): 1.0})


# ----------------------------------------------------------------------------- refusals


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="objective"):
        pm.factorization_norm(pm.prefix(4), objective="worst")
    with pytest.raises(ValueError, match="structured.*objective='max'.*Kronecker product, a marginal workload.*prefix "
                                         "sums or all ranges"):
        pm.factorization_norm(np.random.default_rng(0).standard_normal((5, 4)), objective="max", method="structured")
    big = identity_total(4500)
    assert big.num_queries * big.universe_size > MAX_OBJECTIVE_ENTRIES
    with pytest.raises(ValueError, match="objective: 'max' works on the explicit"):
        pm.factorization_norm(big, objective="max")
    with pytest.raises(ValueError, match=f"objective: 'max' of all_range.*above {RANGE_MAX_UNIVERSE:,} cells"):
        pm.factorization_norm(pm.all_range(RANGE_MAX_UNIVERSE + 1, implicit=True), objective="max")
    with pytest.raises(ValueError, match="query_weights: expected shape"):
        pm.factorization_lower_bound(pm.prefix(4), query_weights=np.ones(3))
    with pytest.raises(ValueError, match="factors: optimized for different objectives"):
        from projmech.factorization._structured import KronFactorization
        KronFactorization(kron([pm.prefix(2), pm.prefix(3)]),
                          [pm.factorization_norm(pm.prefix(2)), gamma_2(pm.prefix(3))])


def test_iteration_limit_reports_best_with_valid_bound():
    with pytest.raises(pm.FactorizationError) as error:
        gamma_2(pm.prefix(64), method="iterative", tol=1e-12, max_iterations=3)
    best = error.value.best
    assert best.objective == "max" and best.lower_bound <= best.value


# ----------------------------------------------------------------------------- mechanism


def test_mechanism_objective():
    F = pm.prefix(32)
    worst = pm.FactorizationMechanism(F, pm.ZCDP(0.5), objective="max", noise="continuous")
    mean = pm.FactorizationMechanism(F, pm.ZCDP(0.5), noise="continuous")
    assert worst.factorization.objective == "max" and mean.factorization.objective == "mean"
    # The worst query's noise is smaller under the max objective, the average larger.
    assert worst.factorization.gamma_2 < mean.factorization.gamma_2
    assert worst.factorization.gamma > mean.factorization.gamma
    with pytest.raises(ValueError, match="objective: 'max' differs from the given factorization's 'mean'"):
        pm.FactorizationMechanism(F, pm.ZCDP(0.5), factorization=mean.factorization, objective="max")
    with pytest.raises(ValueError, match="objective"):
        pm.FactorizationMechanism(F, pm.ZCDP(0.5), objective="median")


# ----------------------------------------------------------------------------- streaming form


@pytest.mark.parametrize("objective", ["mean", "max"])
def test_lower_triangular_form_keeps_norms_and_is_triangular(objective):
    F = pm.prefix(40)
    fact = pm.factorization_norm(F, objective=objective, tol=1e-6)
    streaming = fact.lower_triangular()
    M = streaming.strategy_matrix
    assert np.all(np.triu(M, 1) == 0)
    R = streaming.reconstruction
    assert np.abs(np.triu(R, 1)).max() <= 1e-10 * np.abs(R).max()
    assert np.allclose(R @ M, F.toarray(), atol=1e-9)
    assert np.allclose(M.T @ M, fact.strategy_matrix.T @ fact.strategy_matrix, atol=1e-10)
    assert streaming.gamma == pytest.approx(fact.gamma, rel=1e-9)
    assert streaming.gamma_2 == pytest.approx(fact.gamma_2, rel=1e-9)
    assert streaming.lower_bound == fact.lower_bound and streaming.defect() is None


def test_lower_triangular_refuses_rank_deficient_strategy():
    fact = pm.factorization_norm(pm.repeated(np.array([1.0, 1.0, 0.0]), 3))
    with pytest.raises(ValueError, match="lower_triangular: the strategy Gram matrix"):
        fact.lower_triangular()


def test_square_root_baseline_is_above_the_optimum():
    m = 64
    optimum = gamma_2(pm.prefix(m), tol=1e-6)
    baseline = pm.Factorization(pm.prefix(m), pm.square_root_strategy(m))
    assert optimum.lower_bound <= baseline.gamma_2
    assert baseline.gamma_2 <= 1 + (1 + math.log(m - 1)) / math.pi


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
@pytest.mark.parametrize("make, method", [
    (lambda: pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 4]), ways=(0, 1, 2)), "auto"),
    (lambda: pm.all_range(12), "auto"),
    (lambda: pm.prefix(24), "structured"),   # the resolvent strategy
], ids=["marginals", "all_range", "prefix-resolvent"])
def test_mechanism_calibrates_to_the_max_strategy_exact_sensitivity(make, method, neighbouring):
    # The noise must cover the strategy actually measured (the residual strategy with the max
    # objective's coefficients; the Gram form's M; the resolvent blocks): its largest column
    # distance (replace-one) or column norm (add/remove), computed here from the explicit M.
    workload = make()
    fact = gamma_2(workload, method=method)
    M = fact.strategy._matmat(np.eye(workload.universe_size))
    m = M.shape[1]
    if neighbouring == "replace-one":
        expected = max(np.linalg.norm(M[:, u] - M[:, v]) for u in range(m) for v in range(u))
        mechanism = pm.FactorizationMechanism(workload, pm.ZCDP(0.5), factorization=fact)
    else:
        expected = np.linalg.norm(M, axis=0).max()
        mechanism = pm.FactorizationMechanism(workload, pm.ZCDP(0.5), factorization=fact, neighbouring="add-remove",
                                              size=100)
    assert mechanism.sensitivity() == pytest.approx(expected, rel=1e-9)
    assert pm.FactorizationMechanism(workload, pm.ZCDP(0.5), objective="max").factorization.objective == "max"
