"""The resolvent method for prefix and all-range workloads: against the dense methods, its
ingredients against dense linear algebra, and its factorization's strategy and reconstruction
against explicit matrices."""

import math

import numpy as np
import pytest
import scipy.linalg as sl

import projmech as pm
from projmech.factorization._norm import RESOLVENT_MIN_UNIVERSE
from projmech.factorization._resolvent import (
    ResolventFactorization,
    _bands,
    _inverse_diagonals,
    _ldl,
    _RationalInverse,
    certified_trace_inverse_sqrt,
    quadrature,
    structure_of,
)


def tridiagonal(diagonal, off):
    return np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)


def random_tridiagonal(m, seed):
    # D^-1/2 T0 D^-1/2 for the prefix sums' T0 and random weights: what the ascent meets.
    q = np.random.default_rng(seed).dirichlet(np.full(m, 2.0))
    diagonal = np.full(m, 2.0)
    diagonal[0] = 1.0
    return diagonal / q, -1.0 / np.sqrt(q[:-1] * q[1:])


# ----------------------------------------------------------------------------- the ingredients


def test_closed_form_inverses_are_the_inverses():
    for workload in (pm.prefix(9), pm.all_range(9)):
        structure = structure_of(workload)
        assert np.allclose(tridiagonal(*structure.gram_inverse) @ workload.gram(), np.eye(9), atol=1e-12)
    main, sub = structure_of(pm.prefix(9)).inverse
    inverse = np.diag(main) + np.diag(sub, -1)
    assert np.allclose(inverse @ pm.prefix(9).toarray(), np.eye(9), atol=1e-12)
    assert structure_of(pm.all_range(9)).inverse is None and structure_of(pm.identity(9)) is None


def test_quadrature_approximates_inverse_square_root():
    shifts, weights = quadrature(1e-6, 1e6, accuracy=1e-9)
    assert np.all(weights > 0) and np.all(shifts > 0)
    x = np.logspace(-6, 6, 400)
    approximation = np.sum(weights / (x[:, None] + shifts), axis=1)
    assert np.abs(approximation * np.sqrt(x) - 1).max() <= 1e-9


def test_inverse_diagonals_match_dense_inverse():
    diagonal, off = random_tridiagonal(40, seed=0)
    shifts = np.array([0.0, 1e-3, 10.0])
    diagonals = _inverse_diagonals(*_ldl(diagonal, off, shifts))
    for column, shift in enumerate(shifts):
        dense = np.linalg.inv(tridiagonal(diagonal + shift, off))
        assert np.allclose(diagonals[:, column], np.diag(dense), rtol=1e-10)


def test_rational_inverse_partial_fractions():
    shifts, weights = quadrature(1e-3, 1e3, accuracy=1e-6)
    rational = _RationalInverse(shifts, weights)
    assert np.all(rational.residues > 0) and rational.at_zero > 0 and rational.constant > 0
    x = np.logspace(-3, 3, 200)
    direct = 1.0 / (x * np.sum(weights / (x[:, None] + shifts), axis=1))
    assert np.allclose(rational(x), direct, rtol=1e-12)
    diagonal, off = random_tridiagonal(30, seed=1)
    T = tridiagonal(diagonal, off)
    values, vectors = np.linalg.eigh(T)
    r_of_T = vectors @ np.diag(np.sum(weights / (values[:, None] + shifts), axis=1)) @ vectors.T
    k_of_T = vectors @ np.diag(rational(values)) @ vectors.T
    assert np.allclose(rational.diagonal(diagonal, off), np.diag(k_of_T), rtol=1e-9)
    v = np.random.default_rng(2).standard_normal(30)
    assert np.allclose(rational.inverse_apply(diagonal, off, v), np.linalg.solve(r_of_T, v), rtol=1e-9, atol=1e-12)


def test_certified_trace_is_below_and_close_to_dense():
    for seed in range(3):
        diagonal, off = random_tridiagonal(300, seed)
        exact = np.sum(np.linalg.eigvalsh(np.linalg.inv(tridiagonal(diagonal, off))).clip(0) ** 0.5)
        certified = certified_trace_inverse_sqrt(diagonal, off)
        assert certified <= exact * (1 + 1e-12)
        assert certified == pytest.approx(exact, rel=1e-10)


# ----------------------------------------------------------------------------- against the dense methods


@pytest.mark.parametrize("objective, make", [("mean", pm.prefix), ("max", pm.prefix), ("mean", pm.all_range)],
                         ids=["prefix-mean", "prefix-max", "all_range-mean"])
@pytest.mark.parametrize("m", [16, 200])
def test_resolvent_matches_dense(objective, make, m):
    workload = make(m)
    dense = pm.factorization_norm(workload, objective=objective, method="iterative", tol=1e-8, max_iterations=3000)
    fact = pm.factorization_norm(workload, objective=objective, method="structured", tol=1e-8, max_iterations=3000)
    assert isinstance(fact, ResolventFactorization) and fact.stats.solver == "resolvent"
    assert fact.value == pytest.approx(dense.value, rel=1e-7)
    # Each bound lies below the other's value: both are certificates of the same optimum.
    assert fact.lower_bound <= dense.value * (1 + 1e-9) and dense.lower_bound <= fact.value * (1 + 1e-9)
    assert fact.relative_gap <= 1e-8


@pytest.mark.parametrize("objective, make", [("mean", pm.prefix), ("max", pm.prefix), ("mean", pm.all_range)],
                         ids=["prefix-mean", "prefix-max", "all_range-mean"])
def test_resolvent_factorization_against_explicit_matrices(objective, make):
    m = 24
    workload = make(m)
    fact = pm.factorization_norm(workload, objective=objective, method="structured", tol=1e-6)
    F = workload.toarray()
    M = fact.strategy._matmat(np.eye(m))  # the strategy is implicit: its products with the identity
    R = fact._reconstruct_block(np.eye(fact.num_measurements))
    units = np.eye(fact.num_measurements)[:, ::97]  # the one-vector route agrees with the block route
    assert np.allclose(R[:, ::97], np.stack([fact.reconstruct(unit) for unit in units.T], axis=1), atol=1e-12)
    assert np.allclose(R @ M, F, atol=1e-9)
    assert np.allclose(R, F @ np.linalg.pinv(M), atol=1e-8)  # R = F M^+
    assert np.allclose(fact.strategy.gram(), M.T @ M, atol=1e-12)
    assert np.linalg.norm(M, axis=0).max() == pytest.approx(fact.strategy_sensitivity, rel=1e-12)
    assert np.allclose(fact.query_norms, np.linalg.norm(R, axis=1), rtol=1e-9)
    assert fact.reconstruction_norm == pytest.approx(np.linalg.norm(R), rel=1e-9)
    gamma = np.linalg.norm(R) * np.linalg.norm(M, axis=0).max() / math.sqrt(F.shape[0])
    gamma_2 = np.linalg.norm(R, axis=1).max() * np.linalg.norm(M, axis=0).max()
    assert fact.gamma == pytest.approx(gamma, rel=1e-9) and fact.gamma_2 == pytest.approx(gamma_2, rel=1e-9)
    # Every block of the strategy is lower-triangular: measurement i sees cells <= i.
    for block in np.split(M, M.shape[0] // m):
        assert np.all(np.triu(block, 1) == 0)


def test_auto_uses_resolvent_from_threshold_and_dense_below():
    assert pm.factorization_norm(pm.prefix(64)).stats.solver == "iterative"
    fact = pm.factorization_norm(pm.prefix(RESOLVENT_MIN_UNIVERSE, implicit=True), objective="max")
    assert fact.stats.solver == "resolvent" and fact.relative_gap <= 1e-3
    low = (2 + math.log((2 * RESOLVENT_MIN_UNIVERSE + 1) / 3)) / math.pi
    high = 1 + math.log(RESOLVENT_MIN_UNIVERSE) / math.pi
    assert low <= fact.lower_bound <= fact.gamma_2 <= high


def test_all_range_max_has_no_resolvent_method_but_the_gram_form():
    # No tridiagonal form for the ranges' dual weights: "structured" means the m x m Gram form.
    fact = pm.factorization_norm(pm.all_range(8), objective="max", method="structured")
    assert fact.stats.solver == "range-gram" and type(fact).__name__ == "DenseFactorization"
    assert fact.relative_gap <= 1e-3


def test_mechanism_on_a_resolvent_factorization():
    workload = pm.prefix(32)
    fact = pm.factorization_norm(workload, method="structured")
    mechanism = pm.FactorizationMechanism(workload, pm.ZCDP(0.5), factorization=fact, noise="continuous")
    data = pm.Dataset(np.repeat(np.arange(32), 5)[:, None], pm.Domain(["x"], [32]))
    release = mechanism.release(data, rng=np.random.default_rng(0))
    # The same noise through explicit matrices: y = M c + Z, answers R y / n.
    M = fact.strategy._matmat(np.eye(32))
    R = fact._reconstruct_block(np.eye(fact.num_measurements))
    noise = mechanism.noise.sample(M.shape[0], np.random.default_rng(0))
    counts = np.full(32, 5.0)
    assert np.allclose(release.noisy_answers, R @ (M @ counts + noise) / 160, atol=1e-10)
    intervals = release.confidence_intervals()
    assert intervals.exact and np.allclose(intervals.width, 2 * 1.959963984540054 * release.sigma * fact.query_norms)


@pytest.mark.slow
def test_prefix_at_scale_inside_published_bounds():
    m = 16384
    fact = pm.factorization_norm(pm.prefix(m, implicit=True), objective="max")
    assert fact.relative_gap <= 1e-3
    assert (2 + math.log((2 * m + 1) / 3)) / math.pi <= fact.lower_bound
    assert fact.gamma_2 <= 1 + math.log(m) / math.pi


def test_certificate_and_row_norms_stay_on_their_safe_sides_for_uneven_weights():
    # Weights over twelve orders of magnitude make the factorization of T cancel (a review's
    # counterexample): the bound must still lie below the exact nuclear norm, and the reported
    # row norms above those of R = F M^+ computed densely.
    m = 24
    rng = np.random.default_rng(0)
    workload = pm.prefix(m)
    F = workload.toarray()
    structure = structure_of(workload)
    for _ in range(10):
        p, q = 10 ** rng.uniform(-12, 0, m), 10 ** rng.uniform(-12, 0, m)
        p, q = p / p.sum(), q / q.sum()
        cells, _ = _bands(structure, p, q)
        exact = np.linalg.svd(np.sqrt(p)[:, None] * F * np.sqrt(q)[None, :], compute_uv=False).sum()
        assert certified_trace_inverse_sqrt(*cells) <= exact
    for _ in range(5):
        p, q = 10 ** rng.uniform(-6, 0, m), 10 ** rng.uniform(-6, 0, m)
        fact = ResolventFactorization(workload, structure, q / q.sum(), p / p.sum(), objective="max", lower_bound=0.0)
        R = F @ np.linalg.pinv(fact.strategy._matmat(np.eye(m)))
        assert np.all(fact.query_norms >= np.linalg.norm(R, axis=1))


def test_all_range_row_norms_from_prefix_differences():
    fact = pm.factorization_norm(pm.all_range(20), method="structured")
    R = fact._reconstruct_block(np.eye(fact.num_measurements))
    assert np.allclose(fact.query_norms, np.linalg.norm(R, axis=1), rtol=1e-9)


def test_single_cell_has_no_resolvent_structure():
    assert structure_of(pm.prefix(1)) is None
    assert pm.factorization_norm(pm.prefix(1)).gamma == pytest.approx(1.0)


def test_lower_bound_uses_dpteqr_not_eigvalsh():
    # dpteqr keeps relative accuracy where a standard tridiagonal eigensolver loses it.
    diagonal, off = random_tridiagonal(400, seed=7)
    dense = np.linalg.eigvalsh(np.linalg.inv(tridiagonal(diagonal, off)))
    standard = np.sum(np.sort(sl.eigvalsh_tridiagonal(diagonal, off)) ** -0.5)
    exact = np.sum(dense.clip(0) ** 0.5)
    certified = certified_trace_inverse_sqrt(diagonal, off)
    assert certified <= exact and certified == pytest.approx(exact, rel=1e-9)
    assert standard == pytest.approx(exact, rel=1e-3)
