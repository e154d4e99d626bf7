"""The worked examples of the factorizations' documentation, checked in full here (the
docstrings keep a short one each)."""

import numpy as np

import projmech as pm
from projmech.factorization import check_objective


def test_fixed_strategies():
    assert check_objective("max") == "max"
    tree = pm.Factorization(pm.prefix(16), pm.hierarchical_strategy(16))
    assert tree.lower_bound is None
    np.testing.assert_array_equal(pm.hierarchical_strategy(4)[3:], np.eye(4))
    assert round(pm.Factorization(pm.prefix(1024), pm.square_root_strategy(1024)).gamma, 3) == 3.11


def test_streaming_form_is_lower_triangular():
    fact = pm.factorization_norm(pm.prefix(8)).lower_triangular()
    assert np.allclose(np.triu(fact.reconstruction, 1), 0, atol=1e-12)


def test_bounds_and_statistics_of_the_optimum():
    F = pm.prefix(16)
    fact = pm.factorization_norm(F)
    assert pm.factorization_lower_bound(F) <= fact.lower_bound <= fact.gamma
    assert fact.stats.solve_time <= fact.stats.total_time
    worst = pm.factorization_norm(F, objective="max")
    assert (round(worst.lower_bound, 4), round(worst.gamma_2, 4)) == (1.7045, 1.7045)
    assert pm.factorization_norm(pm.prefix(64), objective="max").relative_gap <= 1e-3
    assert round(pm.factorization_norm(pm.prefix(4)).gamma, 2) == 1.31


def test_scaled_factorization_keeps_the_bound_and_gap():
    tiny = pm.factorization_norm(1e-200 * pm.prefix(8).toarray())
    unit = pm.factorization_norm(pm.prefix(8))
    assert round(tiny.lower_bound / 1e-200, 4) == 1.4944
    assert round(tiny.relative_gap, 6) == round(unit.relative_gap, 6)
