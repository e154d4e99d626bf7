"""Products with marginal workloads without F: ``projmech.data._tables`` and ``Workload.matvec``,
``rmatvec``, ``columns``, ``as_linear_operator``.

The reference is the explicit sparse matrix of ``marginals(domain, way)``, which is built by
indexing (one nonzero per element and table), not by the operators; products must agree with it
to machine precision. A second, fully independent check builds F column by column from the
definition of a marginal cell (the element's values on the subset, with a label lookup).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import projmech as pm
from oracles import brute_marginals
from projmech.data._tables import (
    marginal_cells,
    marginal_columns,
    marginal_matvec,
    marginal_rmatvec,
    marginal_rows,
    pair_cells,
)

DOMAINS = {
    "binary5": [2, 2, 2, 2, 2],
    "mixed": [3, 1, 2, 4],
    "categorical": [2, 3, 2, 5, 2],
    "two": [4, 3],
    "single": [5],
}


def domain_of(sizes):
    return pm.Domain([f"a{i}" for i in range(len(sizes))], sizes)


def definition_matrix(sizes, way) -> np.ndarray:
    """F from the definition (oracles' brute_marginals, without the labels)."""
    return brute_marginals(range(len(sizes)), sizes, way)[0]


@pytest.mark.parametrize(
    "name, way", [(name, way) for name in sorted(DOMAINS) for way in (1, 2, 3) if way <= len(DOMAINS[name])]
)
def test_implicit_and_explicit_products_agree_to_machine_precision(name, way):
    sizes = DOMAINS[name]
    rng = np.random.default_rng([way, len(sizes)])
    domain = domain_of(sizes)
    explicit = pm.marginals(domain, way)
    implicit = pm.marginals(domain, way, implicit=True)
    F = definition_matrix(sizes, way)
    np.testing.assert_array_equal(explicit.toarray(), F)
    w = rng.random(domain.size)
    u = rng.standard_normal(explicit.num_queries)
    indices = rng.integers(0, domain.size, size=9)
    for workload in (explicit, implicit):
        np.testing.assert_allclose(workload.matvec(w), F @ w, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(workload.rmatvec(u), F.T @ u, rtol=1e-14, atol=1e-13)
        np.testing.assert_array_equal(workload.columns(indices), F[:, indices])
        assert workload.has_adjoint


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=2, max_size=6), seed=st.integers(0, 2**16))
def test_two_way_split_recursion_matches_the_matrix(sizes, seed):
    """The 2-way fast path (half-split recursion) against the sparse matrix, any sizes."""
    rng = np.random.default_rng(seed)
    F = pm.marginals(domain_of(sizes), 2).toarray()
    w = rng.standard_normal(F.shape[1])
    u = rng.standard_normal(F.shape[0])
    np.testing.assert_allclose(marginal_matvec(w, sizes, 2), F @ w, atol=1e-12)
    np.testing.assert_allclose(marginal_rmatvec(u, sizes, 2), F.T @ u, atol=1e-12)
    indices = rng.integers(0, F.shape[1], size=5)
    np.testing.assert_array_equal(marginal_columns(indices, sizes, 2, F.shape[0]), F[:, indices])


def test_linear_operator_is_an_adjoint_pair():
    rng = np.random.default_rng(7)
    domain = domain_of([2, 3, 2, 2, 3, 2])
    operator = pm.marginals(domain, 2, implicit=True).as_linear_operator()
    assert operator.shape == (pm.marginals(domain, 2).num_queries, domain.size)
    v = rng.standard_normal(domain.size)
    u = rng.standard_normal(operator.shape[0])
    assert (operator @ v) @ u == pytest.approx(v @ (operator.T @ u), rel=1e-13)
    explicit = pm.marginals(domain, 2)
    np.testing.assert_allclose(operator @ v, explicit.matrix @ v, atol=1e-13)
    np.testing.assert_allclose(operator.rmatvec(u), explicit.matrix.T @ u, atol=1e-13)


def test_explicit_workloads_offer_products_and_columns():
    rng = np.random.default_rng(8)
    dense = pm.random_queries(6, 15, rng)
    sparse = pm.Workload(sp.csr_array(dense.matrix))
    u = rng.standard_normal(6)
    indices = np.array([3, 0, 14, 3])
    for workload in (dense, sparse):
        np.testing.assert_array_equal(workload.rmatvec(u), dense.matrix.T @ u)
        np.testing.assert_array_equal(workload.columns(indices), dense.matrix[:, indices])
        np.testing.assert_array_equal(workload.matvec(np.eye(15)[2]), dense.matrix[:, 2])


def test_twenty_attributes_without_the_matrix():
    """2^20 elements, 2-way: the explicit F would hold 2e8 nonzeros; the products stay O(m).
    Checked on point masses, whose images are known in closed form."""
    d = 20
    sizes = [2] * d
    domain = domain_of(sizes)
    workload = pm.marginals(domain, 2, implicit=True)
    element = int(np.ravel_multi_index(tuple([1, 0] * 10), sizes))
    point = np.zeros(domain.size)
    point[element] = 1.0
    column = workload.matvec(point)
    np.testing.assert_array_equal(column, workload.columns(np.array([element]))[:, 0])
    assert column.sum() == 190  # one cell per table
    # F.T @ column counts, for every element, the tables on which it agrees with `element`:
    # C(a, 2) for a attributes in agreement.
    agreement = workload.rmatvec(column)
    codes = np.unravel_index(np.arange(domain.size), sizes)
    agree = sum((code == value).astype(int) for code, value in zip(codes, [1, 0] * 10))
    np.testing.assert_array_equal(agreement, agree * (agree - 1) / 2)


def test_products_validate_their_arguments():
    workload = pm.marginals(domain_of([2, 3]), 2, implicit=True)
    with pytest.raises(ValueError, match="values: expected shape"):
        workload.rmatvec(np.ones(5))
    with pytest.raises(ValueError, match="values: contains NaN"):
        workload.rmatvec(np.full(6, np.nan))
    with pytest.raises(TypeError, match="indices"):
        workload.columns(np.array([0.5]))
    with pytest.raises(ValueError, match=r"indices: must lie in \[0, 6\)"):
        workload.columns(np.array([6]))
    with pytest.raises(ValueError, match="histogram: expected shape"):
        workload.matvec(np.ones(5))
    no_adjoint = pm.all_range(8, implicit=True)
    assert not no_adjoint.has_adjoint
    for call in (lambda: no_adjoint.rmatvec(np.ones(36)), lambda: no_adjoint.columns(np.array([0])),
                 no_adjoint.as_linear_operator):
        with pytest.raises(ValueError, match="rmatvec/columns"):
            call()
    with pytest.raises(TypeError, match="rmatvec: expected a callable"):
        pm.Workload.implicit((2, 3), lambda v: v[:2], lambda: np.eye(3), rmatvec=1)


# ----------------------------------------------------------------------------- routes and arguments


def test_pair_route_only_where_its_matrices_are_small():
    from projmech.data._tables import _pair_route_fits

    assert _pair_route_fits([2] * 20)  # 40-square blocks for a million elements
    assert _pair_route_fits([4, 3])
    assert not _pair_route_fits([2000, 2000])  # a 4000-square block matrix for 4e6 elements
    assert not _pair_route_fits([5])


@pytest.mark.parametrize("name", sorted(name for name, sizes in DOMAINS.items() if len(sizes) >= 2))
def test_general_route_equals_the_pair_route(name, monkeypatch):
    sizes = DOMAINS[name]
    rng = np.random.default_rng(len(sizes))
    m = int(np.prod(sizes))
    w = rng.random(m)
    u = rng.standard_normal(marginal_cells(sizes, 2))
    pair = marginal_matvec(w, sizes, 2), marginal_rmatvec(u, sizes, 2)
    monkeypatch.setattr("projmech.data._tables._pair_route_fits", lambda sizes: False)
    general = marginal_matvec(w, sizes, 2), marginal_rmatvec(u, sizes, 2)
    F = definition_matrix(sizes, 2)
    for got, expected in zip(pair + general, (F @ w, F.T @ u) * 2):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-12)


def test_two_large_attributes_take_the_general_route():
    """On two attributes F is the identity (one table, whose cells are the elements); the pair
    route would have built a 4000-square block matrix and 2000 x 2000 one-hot encodings."""
    sizes = [2000, 2000]
    workload = pm.marginals(domain_of(sizes), 2, implicit=True)
    w = np.random.default_rng(0).random(4 * 10**6)
    np.testing.assert_array_equal(workload.matvec(w), w)
    np.testing.assert_array_equal(workload.rmatvec(w), w)


def test_public_operators_equal_the_workload_products():
    sizes, way = [2, 3, 4], 2
    workload = pm.marginals(domain_of(sizes), way, implicit=True)
    rng = np.random.default_rng(1)
    w, u, indices = rng.random(24), rng.standard_normal(workload.num_queries), np.array([0, 5, 23])
    assert marginal_cells(sizes, way) == workload.num_queries == 26
    np.testing.assert_array_equal(marginal_matvec(w, sizes, way), workload.matvec(w))
    np.testing.assert_array_equal(marginal_rmatvec(u, sizes, way), workload.rmatvec(u))
    np.testing.assert_array_equal(marginal_columns(indices, sizes, way, 26), workload.columns(indices))
    codes = np.unravel_index(indices, sizes)
    # Each column has one 1 per table, at the row of the element's cell; tables in row order.
    cells = np.array([np.flatnonzero(column) for column in workload.columns(indices).T]).T
    np.testing.assert_array_equal(marginal_rows(codes, sizes, way), cells)


def test_operators_refuse_outputs_above_max_entries():
    with pytest.raises(ValueError, match=r"^sizes: F.T @ values over the universe of sizes \[1000, 1000, 1000\]"):
        marginal_rmatvec(np.ones(3000), [1000] * 3, 1)
    with pytest.raises(ValueError, match="^indices: the 4 columns"):
        marginal_columns(np.arange(4), [10**6, 10**6], 2, 10**12)
    with pytest.raises(ValueError, match="^sizes: the 2-way tables"):
        pair_cells([10**6] * 3)
    with pytest.raises(ValueError, match="^codes: "):
        marginal_rows([np.arange(3)] * 3, [3] * 3, 2, max_entries=8)  # 3 tables x 3 elements
    assert marginal_rows([np.arange(3)] * 3, [3] * 3, 2, max_entries=9).shape == (3, 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda: marginal_matvec(np.ones(6), [2, 3], 1, 100),
        lambda: marginal_rmatvec(np.ones(5), [2, 3], 1, 100),
        lambda: marginal_columns([0], [2, 3], 1, 5, 100),
        lambda: marginal_rows([np.array([0]), np.array([1])], [2, 3], 1, 100),
        lambda: pair_cells([2, 3], 100),
    ],
)
def test_operator_caps_are_keyword_only(call):
    with pytest.raises(TypeError, match="positional"):
        call()


def test_operator_counts_follow_one_rule():
    with pytest.raises(TypeError, match="^num_queries: expected an int"):
        marginal_columns([0], [2, 3], 1, 5.0)
    with pytest.raises(TypeError, match="^max_entries: expected an int"):
        marginal_matvec(np.ones(6), [2, 3], 1, max_entries=True)
    with pytest.raises(ValueError, match="^max_entries: must be at least 1"):
        pair_cells([2, 3], max_entries=0)
