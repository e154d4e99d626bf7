"""The local projection's kernels against independent computations: the simplex projection against
a sort, the consistent tables against a weighted least-squares solve of their constraints, and the
released point against the plain mix with the uniform tables."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import projmech as pm
from oracles import marginal_matrix
from projmech.bodies import _local as local_module
from projmech.bodies import _local_sparse as local_sparse
from projmech.bodies import local_tables


def _sorted_simplex(values):
    """The Euclidean projection onto the simplex by sorting (Held, Wolfe and Crowder)."""
    ordered = np.sort(values)[::-1]
    sums = np.cumsum(ordered) - 1.0
    rank = np.flatnonzero(ordered - sums / np.arange(1, values.size + 1) > 0)[-1]
    return np.maximum(values - sums[rank] / (rank + 1), 0.0)


def _weighted_consistent(model, values, metric, total):
    """``min sum_T metric_T ||x_T - values_T||^2`` over tables agreeing on every shared marginal and
    each summing to ``total``, from the constraints' normal equations (least squares)."""
    blocks = []
    starts = model.starts
    for first, second in itertools.combinations(range(len(model.attributes)), 2):
        shared = sorted(set(model.attributes[first]) & set(model.attributes[second]))
        if shared:
            row = np.zeros((int(np.prod([model.shapes[first][model.attributes[first].index(a)] for a in shared])),
                            model.cells))
            row[:, starts[first]:starts[first + 1]] = marginal_matrix(model.shapes[first], model.attributes[first],
                                                                       shared)
            row[:, starts[second]:starts[second + 1]] = -marginal_matrix(model.shapes[second],
                                                                          model.attributes[second], shared)
            blocks.append(row)
    sums = np.zeros((len(model.attributes), model.cells))
    for index in range(len(model.attributes)):
        sums[index, starts[index]:starts[index + 1]] = 1.0
    constraints = np.vstack(blocks + [sums])
    target = np.concatenate([np.zeros(sum(len(b) for b in blocks)), np.full(len(model.attributes), total)])
    inverse = 1.0 / np.repeat(metric, np.diff(starts))
    multipliers = np.linalg.lstsq((constraints * inverse) @ constraints.T, constraints @ values - target, rcond=None)[0]
    return values - inverse * (constraints.T @ multipliers)


@pytest.mark.parametrize("size", [1, 2, 7, 300, 5000])
def test_the_table_by_table_simplex_projection_is_the_sorted_one_from_any_start(size):
    rng = np.random.default_rng(size)
    for values in (rng.normal(0, 1, size), rng.normal(0, 1e-3, size), np.round(rng.normal(0, 1, size), 1),
                   rng.exponential(1.0, size) / size):
        expected = _sorted_simplex(values)
        # Below, at and above the cells (a start above them all restarts from the mean's threshold).
        for start in (None, -10.0, float(np.mean(values)), float(values.max()), float(values.max()) + 5.0, 0.0):
            out = np.empty(size)
            threshold = local_module._simplex_threshold(values, out, start)
            np.testing.assert_allclose(out, expected, atol=1e-13)
            np.testing.assert_allclose(out, np.maximum(values - threshold, 0.0), atol=1e-13)


@pytest.mark.parametrize("large", [0, 10**9])
def test_both_ways_of_projecting_every_table_onto_its_simplex_agree_with_a_sort(monkeypatch, large):
    monkeypatch.setattr(local_module, "_LARGE_TABLES", large)  # 0: table by table; 10**9: all at once
    workload = pm.marginals(pm.Domain(list("abcde"), [3, 4, 2, 5, 3]), 3)
    model = local_tables(workload)
    rng = np.random.default_rng(1)
    problem = local_module._Problem(model, rng.normal(0.02, 0.1, workload.num_queries))
    for _ in range(3):  # warm-started after the first
        values = rng.normal(0.01, 0.05, model.cells)
        projected = problem.simplex(values, np.empty(model.cells))
        for index in range(len(model.attributes)):
            np.testing.assert_allclose(model.table(projected, index).ravel(),
                                       _sorted_simplex(model.table(values, index).ravel()), atol=1e-13)


@pytest.mark.parametrize(("small", "sparse", "sizes"), [(4096, False, [3, 2, 4, 2]), (0, False, [3, 2, 4, 2]),
                                                       (4096, True, [3, 2, 4, 2]), (4096, True, [3, 1, 4, 2, 2])])
def test_the_consistent_tables_are_the_weighted_least_squares_projection(monkeypatch, small, sparse, sizes):
    monkeypatch.setattr(local_module, "_SMALL", small)  # 0: every marginal summed as a product with ones
    # As sparse products (for many small tables), or table by table.
    monkeypatch.setattr(local_sparse, "SPARSE_MIN_TABLES", 1 if sparse else 10**9)
    workload = pm.marginals(pm.Domain(list("abcde")[:len(sizes)], sizes), ways=(1, 2, 3))
    model = local_tables(workload)
    rng = np.random.default_rng(2)
    problem = local_module._Problem(model, rng.normal(0, 1, workload.num_queries), sparse=True)
    values = rng.normal(0, 1, model.cells)
    metric = rng.uniform(0.5, 3.0, len(model.attributes))
    for total in (0.0, 1.0):
        np.testing.assert_allclose(problem.consistent(values, metric, total),
                                   _weighted_consistent(model, values, metric, total), atol=1e-12)
    unit = np.ones(len(model.attributes))
    np.testing.assert_allclose(problem.orthogonal(values), values - _weighted_consistent(model, values, unit, 0.0),
                               atol=1e-12)
    assert isinstance(problem._sparse, local_sparse.SparseConsistency) is sparse
    in_place = values.copy()  # out may be the values themselves
    np.testing.assert_allclose(problem.consistent(in_place, metric, 1.0, in_place),
                               _weighted_consistent(model, values, metric, 1.0), atol=1e-12)


def test_the_released_point_is_consistent_non_negative_and_no_worse_than_the_plain_mix():
    workload = pm.marginals(pm.Domain(list("abcde"), [3, 4, 2, 5, 3]), 3)
    model = local_tables(workload)
    rng = np.random.default_rng(3)
    problem = local_module._Problem(model, rng.normal(0.02, 0.1, workload.num_queries))
    tables = problem.simplex(rng.normal(0.0, 0.05, model.cells))
    released, value = local_module._released(problem, tables)
    assert model.inconsistency(released) <= 1e-12 and released.min() >= 0.0
    assert value == problem.objective(released)
    # The plain mix, from the independent projection onto consistent tables.
    consistent = _weighted_consistent(model, tables, problem.weight, 1.0)
    negative = consistent < 0
    assert negative.any()
    share = np.max(-consistent[negative] / (problem.uniform[negative] - consistent[negative]))
    plain = np.maximum((1 - share) * consistent + share * problem.uniform, 0.0)
    assert value <= problem.objective(plain) * (1 + 1e-12)


def test_certificates_are_spaced_by_half_the_predicted_iterations_within_bounds():
    from projmech.bodies._certificates import next_certificate
    from projmech.bodies._local import _CHECK_EVERY, _CHECK_MOST

    def _spacing(checks, target):
        return next_certificate(checks, target, _CHECK_EVERY, _CHECK_MOST)

    # A tenfold fall in 10 iterations: 1e-4 is 30 iterations from 0.1, so the next check is in 15.
    assert _spacing([(0, 1.0), (10, 0.1)], 1e-4) == 15
    assert _spacing([(0, 1.0), (10, 0.1)], 1e-12) == _CHECK_MOST  # 110 predicted
    assert _spacing([(0, 1.0), (10, 0.1)], 0.05) == _CHECK_EVERY  # 3 predicted
    assert _spacing([(0, 1.0)], 1e-4) == _CHECK_EVERY  # no fall measured yet
    assert _spacing([(0, 0.1), (10, 0.1)], 1e-4) == _CHECK_EVERY  # not falling
    assert _spacing([(0, 1.0), (10, 0.1)], 0.2) == _CHECK_EVERY  # already below the target


@pytest.mark.parametrize("start", [-1e9, -1e6, -0.01, None])
def test_simplex_threshold_sums_to_one_from_a_start_far_to_the_left(start):
    """Every cell kept: the early exit's threshold carries the rounding of a start far away unless
    it is corrected (a start of -1e9 left a sum off by 7e-5)."""
    values = 0.001 + 1e-6 * np.random.default_rng(0).normal(size=1000)
    out = np.empty_like(values)
    local_module._simplex_threshold(values, out, start)
    assert abs(out.sum() - 1.0) <= 1e-13 and out.min() >= 0
    np.testing.assert_allclose(out, values - (values.sum() - 1.0) / values.size, atol=1e-15)


def test_lbfgs_pairs_keep_their_gram_matrix_and_give_the_two_loop_directions(monkeypatch):
    """The compact form's directions against the textbook two-loop recursion :cite:p:`NW06`
    (algorithm 7.4), and its incrementally kept Gram matrix against the rows' own products, along
    L-BFGS on a quadratic of condition 1e4."""
    worst = {"gram": 0.0, "direction": 0.0}

    class Checked(local_module._Pairs):
        def direction(self, gradient, curvature, out):
            for slot in set(range(self.slots)) - set(self.order):  # rows the direction must not read
                self.rows[[slot, self.slots + slot]] = np.nan
            result = super().direction(gradient, curvature, out)
            assert np.isfinite(result).all()
            if self.order:
                rows = [row for slot in self.order for row in (slot, self.slots + slot)]
                products = self.rows[rows] @ self.rows[rows].T
                worst["gram"] = max(worst["gram"], float(np.abs(self.gram[np.ix_(rows, rows)] - products).max()
                                                         / np.abs(products).max()))
                changes = [self.rows[slot] for slot in self.order]
                differences = [self.rows[self.slots + slot] for slot in self.order]
                q, alphas = gradient.copy(), []
                for s, y in reversed(list(zip(changes, differences))):
                    alphas.append((s @ q) / (s @ y))
                    q -= alphas[-1] * y
                q *= (changes[-1] @ differences[-1]) / (differences[-1] @ differences[-1])
                for (s, y), alpha in zip(zip(changes, differences), reversed(alphas)):
                    q += (alpha - (y @ q) / (s @ y)) * s
                worst["direction"] = max(worst["direction"], float(np.abs(result + q).max() / np.abs(q).max()))
            return result

    monkeypatch.setattr(local_module, "_Pairs", Checked)
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(200, 200)))
    hessian = basis @ np.diag(np.logspace(0, 4, 200)) @ basis.T
    linear = rng.normal(size=200)

    def quadratic(point, out):
        np.dot(hessian, point, out=out)
        value = 0.5 * point @ out - linear @ point
        out -= linear
        return value, out

    point = local_module._lbfgs(quadratic, np.zeros(200), 400, lambda iteration, point: False, 1.0)
    assert worst["gram"] <= 1e-12 and worst["direction"] <= 1e-10
    assert np.linalg.norm(hessian @ point - linear) <= 0.02 * np.linalg.norm(linear)  # 1/190 measured
