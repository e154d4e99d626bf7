"""Measurements summarized per residual component: precisions and least-squares estimates, checked
against least squares over the universe written from the definition."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oracles import helmert_contrasts, summing_matrix, universe_least_squares
from projmech.tables import Components, KroneckerQuery, Measurement, centered, components_of

SIZES = (2, 3, 2)


def residual_measurements(rng, subsets, sizes=SIZES, sigma=0.05):
    """Helmert contrasts of each subset's table, coefficient 1 + U(0, 1), noisy."""
    truth = rng.dirichlet(np.ones(math.prod(sizes)))
    out = []
    for subset in subsets:
        factors = tuple(helmert_contrasts(sizes[a]) for a in subset)
        query = KroneckerQuery(factors, 1.0 + rng.random())
        values = query @ (summing_matrix(subset, sizes) @ truth) + sigma * rng.standard_normal(query.shape[0])
        out.append(Measurement(subset, values, sigma, query))
    return out


def test_centering_removes_every_lower_component():
    table = np.random.default_rng(0).random((3, 4))
    part = centered(table)
    assert np.allclose(part.sum(axis=0), 0) and np.allclose(part.sum(axis=1), 0)
    assert np.allclose(table - part, table.mean(axis=1, keepdims=True) + table.mean(axis=0, keepdims=True)
                       - table.mean())


@pytest.mark.parametrize("kind", ["identity", "residual", "mixed"])
def test_the_tables_equal_least_squares_over_the_universe(kind):
    rng = np.random.default_rng(1)
    everything = [s for size in (1, 2) for s in itertools.combinations(range(3), size)]
    if kind == "identity":
        truth = rng.dirichlet(np.ones(12))
        tables = [(0, 1), (1, 2), (0, 2), (1,)]
        measurements = [Measurement(t, summing_matrix(t, SIZES) @ truth
                                    + 0.1 * rng.standard_normal(summing_matrix(t, SIZES).shape[0]), 0.1 + 0.1 * i)
                        for i, t in enumerate(tables)]
    elif kind == "residual":
        measurements = residual_measurements(rng, everything)
    else:
        measurements = residual_measurements(rng, [(0,), (1,), (0, 1)]) + [
            Measurement((1, 2), rng.dirichlet(np.ones(6)), 0.2), Measurement((0, 2), rng.dirichlet(np.ones(4)), 0.3)]
    parts = components_of(SIZES, measurements)
    x = universe_least_squares(measurements, SIZES)
    for table in [(0, 1), (1, 2), (0, 2)]:
        assert np.allclose(parts.table(table).ravel(), summing_matrix(table, SIZES) @ x, atol=1e-10), table


def test_a_kronecker_query_and_its_dense_matrix_give_the_same_components():
    rng = np.random.default_rng(2)
    measurements = residual_measurements(rng, [(0,), (1,), (0, 1)])
    dense = [Measurement(m.attributes, m.values, m.sigma, m.query.toarray()) for m in measurements]
    one, two = components_of(SIZES, measurements), components_of(SIZES, dense)
    assert one.precision.keys() == two.precision.keys()
    for subset in one.precision:
        assert one.precision[subset] == pytest.approx(two.precision[subset], rel=1e-12)
        assert np.allclose(one.estimate[subset], two.estimate[subset], atol=1e-12)


def test_a_kronecker_query_applies_as_its_dense_matrix():
    rng = np.random.default_rng(3)
    query = KroneckerQuery((rng.random((2, 3)), rng.random((4, 2))), 1.5)
    cells, answers = rng.random(6), rng.random(8)
    dense = 1.5 * np.kron(query.factors[0], query.factors[1])
    assert np.allclose(query.toarray(), dense)
    assert np.allclose(query @ cells, dense @ cells)
    assert np.allclose(query.transpose_apply(answers), dense.T @ answers)


def test_queries_that_mix_components_are_refused_naming_the_measurement():
    prefix = np.tril(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"position 1, on \(1,\), has a Kronecker factor whose Gram"):
        components_of(SIZES, [Measurement((0,), np.array([0.5, 0.5]), 1.0),
                              Measurement((1,), np.ones(3), 1.0, KroneckerQuery((prefix,)))])
    with pytest.raises(ValueError, match=r"position 0, on \(1,\), has a query whose Gram matrix mixes"):
        components_of(SIZES, [Measurement((1,), np.ones(3), 1.0, prefix)])


def test_a_dense_query_over_too_many_cells_is_refused_before_its_gram_matrix_is_formed():
    from projmech.tables import DENSE_QUERY_MAX_CELLS

    n = DENSE_QUERY_MAX_CELLS + 1
    with pytest.raises(ValueError, match="give it as a KroneckerQuery"):
        components_of((n,), [Measurement((0,), np.zeros(1), 1.0, np.ones((1, n)))])


def test_a_kronecker_query_refuses_a_vector_of_the_wrong_length():
    query = KroneckerQuery((np.eye(2), np.eye(3)))
    with pytest.raises(ValueError, match=r"^cells: expected a vector of 6 cells, got shape \(5,\)"):
        query @ np.zeros(5)
    with pytest.raises(ValueError, match=r"^answers: expected a vector of 6 answers"):
        query.transpose_apply(np.zeros(7))


def test_a_kronecker_query_with_wrong_factors_is_refused():
    with pytest.raises(ValueError, match="one factor per attribute"):
        components_of(SIZES, [Measurement((0, 1), np.zeros(2), 1.0, KroneckerQuery((np.ones((2, 2)),)))])


def test_an_unmeasured_component_is_named():
    parts = components_of(SIZES, residual_measurements(np.random.default_rng(4), [(0, 1)]))
    assert parts.unmeasured((0, 1)) == [(0,), (1,)]
    with pytest.raises(ValueError, match=r"components on \[\(0,\), \(1,\)\] of the table \(0, 1\)"):
        parts.table((0, 1))


def test_no_measurement_is_refused():
    with pytest.raises(ValueError, match="need at least one"):
        components_of(SIZES, [])


def test_precisions_of_cells_add_up_over_the_tables_holding_a_component():
    # Two tables holding attribute 1: its component's precision is the two tables' share, 1/(sigma^2 |T - A|).
    parts = components_of(SIZES, [Measurement((0, 1), np.full(6, 1 / 6), 0.5),
                                  Measurement((1, 2), np.full(6, 1 / 6), 1.0)])
    assert parts.precision[(1,)] == pytest.approx(1 / (0.25 * 2) + 1 / (1.0 * 2))
    assert isinstance(parts, Components) and parts.tables == ((0, 1), (1, 2))
