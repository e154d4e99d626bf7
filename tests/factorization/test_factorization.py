"""Factorization values and fixed strategies, against closed forms and hand-built matrices."""

import math

import numpy as np
import pytest

import projmech as pm
from projmech.factorization._base import Factorization, hierarchical_strategy, identity_strategy, total_strategy


def test_repeated_query_has_gamma_one():
    # Measure the query once, copy it k times: ||R||_F = sqrt(k), ||M|| = 1.
    query = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    fact = Factorization.from_strategy(pm.repeated(query, 4), query[None, :])
    assert fact.gamma == pytest.approx(1.0, rel=1e-12)
    assert fact.residual < 1e-12
    np.testing.assert_allclose(fact.reconstruction, np.ones((4, 1)), atol=1e-12)


def test_total_strategy_answers_repeated_total():
    fact = Factorization.from_strategy(pm.repeated(np.ones(6), 9), total_strategy(6))
    assert fact.gamma == pytest.approx(1.0, rel=1e-12)


def test_identity_workload_identity_strategy_gamma_one():
    fact = Factorization.from_strategy(pm.identity(7), identity_strategy(7))
    assert fact.gamma == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("m", [1, 2, 5, 16])
def test_prefix_with_identity_strategy_closed_form(m):
    # R = F, ||F||_F^2 = m(m+1)/2, ||I||_{1->2} = 1, so gamma = sqrt((m+1)/2).
    fact = Factorization.from_strategy(pm.prefix(m), identity_strategy(m))
    assert fact.gamma == pytest.approx(math.sqrt((m + 1) / 2), rel=1e-12)


def test_binary_tree_matches_hand_built_matrix():
    expected = np.array(
        [
            [1, 1, 1, 1],
            [1, 1, 0, 0],
            [0, 0, 1, 1],
            [1, 0, 0, 0],
            [0, 1, 0, 0],
            [0, 0, 1, 0],
            [0, 0, 0, 1],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(hierarchical_strategy(4, 2), expected)


@pytest.mark.parametrize("m,branching", [(8, 2), (9, 3), (10, 2), (7, 4), (1, 2)])
def test_hierarchical_levels_partition_the_universe(m, branching):
    M = hierarchical_strategy(m, branching)
    assert set(np.unique(M)) <= {0.0, 1.0}
    # every column is covered once per level of its root-to-leaf path, and every leaf is a row
    leaves = M[M.sum(axis=1) == 1]
    np.testing.assert_array_equal(np.sort(leaves.argmax(axis=1)), np.arange(m))
    # each row is one contiguous interval
    for row in M:
        ones = np.flatnonzero(row)
        assert ones[-1] - ones[0] + 1 == ones.size
    if m == 9 and branching == 3:
        assert M.shape[0] == 1 + 3 + 9


def test_tree_reconstruction_matches_independent_least_squares():
    F = pm.prefix(8).toarray()
    M = hierarchical_strategy(8, 2)
    fact = Factorization.from_strategy(F, M)
    # minimum-norm R with R M = F, by lstsq on the transposed system
    R = np.linalg.lstsq(M.T, F.T, rcond=None)[0].T
    np.testing.assert_allclose(R @ M, F, atol=1e-10)
    gamma = np.linalg.norm(R) * np.sqrt((M**2).sum(axis=0)).max() / math.sqrt(F.shape[0])
    assert fact.gamma == pytest.approx(gamma, rel=1e-10)
    assert fact.gamma < Factorization.from_strategy(F, identity_strategy(8)).gamma


@pytest.mark.parametrize("c", [1e-9, 1.0, 1e6])
def test_strategy_outside_row_space_is_refused(c):
    # At c = 1e-9, ||F M^+ M - F|| is about 1e-9: the whole of F, yet below an absolute
    # tolerance of 1e-7; the tolerance is relative to ||F||_{1->2}.
    with pytest.raises(ValueError, match="row space"):
        Factorization.from_strategy(c * pm.prefix(4).toarray(), total_strategy(4))


@pytest.mark.parametrize("c", [1e-9, 1.0, 1e6])
def test_a_scaled_workload_in_the_row_space_is_accepted(c):
    F = c * pm.prefix(8).toarray()
    fact = Factorization.from_strategy(F, hierarchical_strategy(8, 2))
    assert fact.defect() is None
    R = F @ np.linalg.pinv(hierarchical_strategy(8, 2))  # independent reconstruction
    assert fact.gamma == pytest.approx(np.linalg.norm(R) * 2.0 / math.sqrt(8), rel=1e-9)  # ||tree||_1->2 = 2


@pytest.mark.parametrize(
    "strategy, match",
    [
        (np.array([[1.0, np.nan]]), "NaN"),
        (np.ones((2, 3)), "columns"),
        (np.ones(2), "2-d"),
    ],
)
def test_bad_strategies(strategy, match):
    with pytest.raises(ValueError, match=match):
        Factorization.from_strategy(np.eye(2), strategy)


@pytest.mark.parametrize("branching", [1, 0, 2.5, True])
def test_bad_branching(branching):
    with pytest.raises(ValueError, match="branching"):
        hierarchical_strategy(4, branching)


def test_expected_error_matches_monte_carlo():
    F = pm.prefix(8).toarray()
    M = hierarchical_strategy(8, 2)
    fact = Factorization.from_strategy(F, M)
    n, rho = 500, 0.5
    # Independent calibration: the replace-one sensitivity of the counts M c is the largest
    # distance between two columns of M (brute force), zCDP sigma = Delta/sqrt(2 rho), over n. The
    # tree's entries are integers, so the noise is the discrete Gaussian, whose standard deviation
    # at sigma = 2.45 equals sigma to within exp(-2 pi^2 sigma^2) ~ 1e-51.
    pair = max(np.linalg.norm(M[:, u] - M[:, v]) for u in range(8) for v in range(8))
    sigma = pair / n / math.sqrt(2 * rho)
    rng = np.random.default_rng(0)
    trials = 20000
    noise = rng.normal(0.0, sigma, size=(trials, M.shape[0])) @ fact.reconstruction.T
    mean_square = (noise**2).mean(axis=1)
    estimate = mean_square.mean()
    half = 3.3 * mean_square.std(ddof=1) / math.sqrt(trials)  # ~99.9% normal interval
    mechanism = pm.FactorizationMechanism(pm.Workload(F), pm.ZCDP(rho), factorization=fact)
    expected = mechanism.expected_error(n)
    assert abs(estimate - expected**2) <= half
    # Add/remove: the largest column norm instead of the largest distance.
    largest = np.sqrt((M**2).sum(axis=0)).max()
    add_remove = pm.FactorizationMechanism(pm.Workload(F), pm.ZCDP(rho), factorization=fact,
                                           neighbouring="add-remove", size=n)
    assert add_remove.expected_error(n) == pytest.approx(expected * largest / pair, rel=1e-9)


# --- the square-root factorization of prefix sums (Fichtenberger, Henzinger & Upadhyay) ---------


@pytest.mark.parametrize("m", [1, 2, 7, 64, 513])
def test_square_root_strategy_squares_to_prefix_sums_and_streams(m):
    L = pm.square_root_strategy(m)
    # Coefficients from the closed form, in exact integers, independent of the code's recurrence.
    expected = [math.comb(2 * t, t) / 4 ** t for t in range(min(m, 60))]
    np.testing.assert_allclose(L[: len(expected), 0], expected, rtol=1e-14)
    np.testing.assert_allclose(L @ L, np.tril(np.ones((m, m))), atol=1e-12)  # prefix sums
    assert np.array_equal(L, np.tril(L))  # lower-triangular: a streaming strategy
    assert all(np.allclose(np.diag(L, -t), L[t, 0]) for t in range(m))  # Toeplitz
    fact = pm.Factorization(pm.prefix(m), L)
    assert fact.residual < 1e-9
    # R = prefix L^{-1} = L: the worst query's row norm and the strategy's sensitivity are both
    # sqrt(sum c_t^2), and gamma is never below the certified optimum.
    column = (L[:, 0] ** 2).sum()
    np.testing.assert_allclose(fact.strategy_sensitivity ** 2, column, rtol=1e-12)
    np.testing.assert_allclose(fact.reconstruction_norm ** 2, (L ** 2).sum(), rtol=1e-9)
    if m >= 2:
        assert column <= 1 + (1 + np.log(m - 1)) / np.pi
    if m >= 64:
        assert fact.gamma >= pm.factorization_norm(pm.prefix(m)).lower_bound


def test_square_root_strategy_checks_m():
    for bad in (0, -3):
        with pytest.raises(ValueError, match="^m"):
            pm.square_root_strategy(bad)
    with pytest.raises(TypeError, match="^m"):
        pm.square_root_strategy(2.5)
