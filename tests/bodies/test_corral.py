"""The factorized corral of Wolfe's method against fresh solves of its affine problem.

Every check recomputes the corral's affine minimizer independently: the weights ``w`` on the
live points minimizing ``||P w||^2`` subject to ``sum(w) = 1``, from the bordered KKT system of
the live points solved by ``numpy.linalg.solve``.
"""

from __future__ import annotations

import numpy as np
import pytest

from projmech.bodies._corral import GHOSTS_MIN, Corral


def fresh_affine_minimizer(points, live):
    """Least-norm point of the affine hull of ``points[:, live]``, by the KKT system."""
    P = points[:, live]
    s = P.shape[1]
    system = np.block([[P.T @ P, np.ones((s, 1))], [np.ones((1, s)), np.zeros((1, 1))]])
    solution = np.linalg.solve(system, np.append(np.zeros(s), 1.0))
    w = solution[:s]
    return w, float(w @ (P.T @ P) @ w)


def check(corral, points):
    weights, level = corral.affine_minimizer()
    expected, expected_level = fresh_affine_minimizer(points, corral.positions)
    np.testing.assert_allclose(weights, expected, atol=1e-9)
    assert level == pytest.approx(expected_level, rel=1e-8, abs=1e-12)


def make(dimension=40, count=120, seed=0):
    points = np.random.default_rng(seed).normal(size=(dimension, count))
    gram = points.T @ points
    return points, gram


def test_adds_and_removes_match_fresh_solves():
    points, gram = make()
    corral = Corral(gram, float(np.diag(gram).max()), np.arange(5))
    check(corral, points)
    rng = np.random.default_rng(1)
    for _ in range(60):
        live = corral.positions
        if live.size > 3 and rng.random() < 0.4:
            corral.remove(np.array([rng.integers(live.size)]))
        else:
            outside = np.setdiff1d(np.arange(30), live)
            index = corral.add(int(rng.choice(outside)))
            assert index is not None  # 30 points in general position in R^40
        check(corral, points)
    assert corral.ghosts > 0 or corral.size == corral.positions.size


def test_a_ghost_comes_back_where_it_was():
    points, gram = make()
    corral = Corral(gram, 1.0, np.arange(6))
    corral.remove(np.array([2]))
    assert list(corral.positions) == [0, 1, 3, 4, 5] and corral.ghosts == 1
    assert corral.add(2) == 2  # its index in positions, the factor's order
    assert list(corral.positions) == [0, 1, 2, 3, 4, 5] and corral.ghosts == 0
    check(corral, points)


def test_an_affinely_dependent_point_is_refused_until_compaction_frees_it():
    points, _ = make(dimension=10, count=12)
    points = np.column_stack([points, 0.3 * points[:, 0] + 0.7 * points[:, 1]])  # on the hull of 0 and 1
    gram = points.T @ points
    corral = Corral(gram, 1.0, np.array([0, 1, 2]))
    assert corral.add(12) is None
    check(corral, points)  # nothing changed
    # With point 1 a ghost, 12 still depends on the factor's points; compacting frees it.
    corral.remove(np.array([1]))
    assert corral.add(12) is None
    corral.compact()
    assert corral.add(12) is not None
    check(corral, points)


def test_a_dependent_starting_corral_leaves_out_the_dependent_points():
    points, _ = make(dimension=10, count=4)
    points = np.column_stack([points, 0.5 * (points[:, 0] + points[:, 1])])
    gram = points.T @ points
    corral = Corral(gram, 1.0, np.arange(5))
    assert corral.refused == [4]
    assert list(corral.positions) == [0, 1, 2, 3]
    check(corral, points)


def test_compaction_and_growth_keep_the_minimizer():
    points, gram = make(dimension=200, count=190)
    corral = Corral(gram, 1.0, np.arange(2))
    for j in range(2, 150):  # past the initial capacity of 64
        assert corral.add(j) is not None
    corral.remove(np.arange(0, 2 * GHOSTS_MIN + 2, 2))
    assert corral.needs_compaction()
    check(corral, points)
    corral.compact()
    assert corral.ghosts == 0
    check(corral, points)


def test_compaction_behind_the_first_ghost_keeps_the_leading_points_and_the_minimizer():
    """Ghosts only in the trailing part: compaction refactors the live points after the first
    ghost alone; adds and removes afterwards still match fresh solves."""
    points, gram = make(dimension=200, count=190)
    corral = Corral(gram, 1.0, np.arange(100))
    leading = corral._factor[:60, :60].copy()
    corral.remove(np.arange(60, 100, 3))
    corral.compact()
    assert corral.ghosts == 0 and corral.size == corral.positions.size == 100 - 14
    np.testing.assert_array_equal(corral._factor[:60, :60], leading)
    check(corral, points)
    rng = np.random.default_rng(2)
    for _ in range(30):
        live = corral.positions
        if rng.random() < 0.5:
            corral.remove(np.array([rng.integers(live.size)]))
        else:
            assert corral.add(int(rng.choice(np.setdiff1d(np.arange(150), live)))) is not None
        if corral.ghosts > 3:
            corral.compact()
        check(corral, points)


def test_compaction_with_only_ghosts_behind_the_first_truncates_the_factor():
    points, gram = make()
    corral = Corral(gram, 1.0, np.arange(8))
    corral.remove(np.array([6, 7]))
    corral.compact()
    assert list(corral.positions) == list(range(6)) and corral.size == 6 and corral.ghosts == 0
    check(corral, points)
    assert corral.add(9) == 6
    check(corral, points)


def test_compaction_behind_a_ghost_refuses_what_the_dimension_forbids():
    """Past the affine dimension, the trailing points that compaction would add again are refused."""
    points, _ = make(dimension=6, count=9)
    gram = points.T @ points
    corral = Corral(gram, 1.0, np.arange(7), dimension=7)  # 7 points span R^6 affinely
    corral.remove(np.array([3]))
    corral.compact()
    assert corral.positions.size <= 7 and corral.refused == []
    check(corral, points)
    assert corral.add(8) is not None  # the ghost's slot is free again: 7 points
    check(corral, points)
    assert corral.add(7) is None  # an eighth point is affinely dependent


def test_scaled_points_give_the_same_weights():
    """c P has the affine minimizer of P for every c > 0 (the border scales with the points)."""
    points, gram = make()
    for c in (1e-6, 1.0, 1e4):
        corral = Corral(c**2 * gram, c**2 * float(np.diag(gram).max()), np.arange(10))
        corral.remove(np.array([3]))
        corral.add(20)
        weights, _ = corral.affine_minimizer()
        expected, _ = fresh_affine_minimizer(points, corral.positions)
        np.testing.assert_allclose(weights, expected, atol=1e-8)


def test_a_block_of_points_enters_at_once_and_dependent_ones_are_refused():
    points, _ = make(dimension=30, count=40)
    # 40: on the hull of 0 and 1 (dependent on the factor); 41: on the hull of 25 and 26 (on
    # the block's earlier points).
    points = np.column_stack([points, 0.4 * points[:, 0] + 0.6 * points[:, 1],
                              0.5 * points[:, 25] + 0.5 * points[:, 26]])
    gram = points.T @ points
    corral = Corral(gram, float(np.diag(gram).max()), np.arange(5))
    corral.remove(np.array([1]))  # a ghost in the block's way: it comes back
    refused = corral.add_many(np.array([20, 1, 40, 25, 26, 41, 27]))
    assert sorted(refused.tolist()) == [40, 41]
    assert sorted(corral.positions.tolist()) == [0, 1, 2, 3, 4, 20, 25, 26, 27]
    check(corral, points)


def test_rebase_moves_the_factor_to_a_new_pool():
    points, gram = make()
    corral = Corral(gram, 1.0, np.array([7, 3, 11, 5]))
    corral.remove(np.array([1]))  # point 3 becomes a ghost
    members = corral.members
    assert members.tolist() == [7, 3, 11, 5]
    order = [7, 3, 11, 5, 0, 1]  # the new pool: the factor's points first, then newcomers
    corral.rebase(gram[np.ix_(order, order)], np.arange(4))
    assert corral.positions.tolist() == [0, 2, 3]
    assert corral.add(1) == 1  # the ghost, now at position 1, comes back
    assert corral.add_many(np.array([4, 5])).size == 0
    new_points = points[:, order]
    check(corral, new_points)
