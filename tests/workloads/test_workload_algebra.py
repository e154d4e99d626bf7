"""The workload algebra: Kronecker products and stacks against their dense matrices.

Every structured product is checked against ``numpy.kron`` / ``numpy.vstack`` of the blocks'
dense matrices, built here independently (``np.tril``, ``np.eye``, loops over ranges), on
domains small enough to hold them.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

import projmech as pm
from projmech import Dataset, Domain, Workload
from projmech.workloads import (
    Kron,
    Stack,
    all_range,
    identity,
    identity_total,
    kron,
    marginals,
    prefix,
    range_marginals,
    stack,
    total,
)


def dense_prefix(m):
    return np.tril(np.ones((m, m)))


def dense_range(m):
    return np.array([[1.0 if a <= u <= b else 0.0 for u in range(m)] for a in range(m) for b in range(a, m)])


DENSE = {
    "identity": np.eye,
    "total": lambda m: np.ones((1, m)),
    "prefix": dense_prefix,
    "all_range": dense_range,
    "identity_total": lambda m: np.vstack([np.eye(m), np.ones((1, m))]),
}
BUILD = {"identity": identity, "total": total, "prefix": prefix, "all_range": all_range,
         "identity_total": identity_total}


def dense_kron(blocks):
    return functools.reduce(np.kron, blocks)


def histogram_of(records, sizes):
    return np.bincount(np.ravel_multi_index(records.T, sizes), minlength=math.prod(sizes)).astype(float)


CASES = [
    (("prefix", "identity"), (3, 2)),
    (("all_range", "total", "identity_total"), (4, 3, 2)),
    (("identity", "prefix", "all_range"), (2, 5, 3)),
    (("total", "total"), (3, 4)),
    (("identity_total",), (5,)),
]


@pytest.mark.parametrize("names, sizes", CASES)
def test_kron_matches_the_dense_kronecker_product(names, sizes):
    blocks = [DENSE[name](size) for name, size in zip(names, sizes)]
    F = dense_kron(blocks)
    W = kron([BUILD[name](size) for name, size in zip(names, sizes)])
    rng = np.random.default_rng(len(sizes))
    v, u = rng.normal(size=F.shape[1]), rng.normal(size=F.shape[0])
    assert W.shape == F.shape
    np.testing.assert_allclose(W.answer(v), F @ v, atol=1e-12)
    np.testing.assert_allclose(W.rmatvec(u), F.T @ u, atol=1e-12)
    np.testing.assert_allclose(W.gram(), F.T @ F, atol=1e-12)
    np.testing.assert_array_equal(W.toarray(), F)
    index = rng.integers(0, F.shape[1], 7)
    np.testing.assert_array_equal(W.columns(index), F[:, index])
    for ord in (1, 2, math.inf):
        assert W.column_norm(ord) == pytest.approx(np.max(np.linalg.norm(F, ord, axis=0)), rel=1e-14)
    assert W.is_integer and W.is_nonnegative


@pytest.mark.parametrize("names, sizes", CASES)
def test_kron_answers_records_from_their_tables(names, sizes):
    domain = Domain([f"a{i}" for i in range(len(sizes))], sizes)
    rng = np.random.default_rng(7)
    records = np.column_stack([rng.integers(0, size, 101) for size in sizes])
    F = dense_kron([DENSE[name](size) for name, size in zip(names, sizes)])
    W = kron([BUILD[name](size) for name, size in zip(names, sizes)], domain=domain)
    counts = W.answer_counts(Dataset(records, domain))
    np.testing.assert_array_equal(counts, F @ histogram_of(records, sizes))


def test_kron_labels_name_the_attributes():
    domain = Domain(["age", "sex"], [3, 2])
    W = kron([prefix(3), identity(2)], domain=domain)
    assert W.labels[:3] == ("age<=0 & sex=0", "age<=0 & sex=1", "age<=1 & sex=0")
    assert kron([total(3), total(2)]).labels == ("total",)
    assert kron([all_range(2), total(2)]).labels == (
        "0<=x0<=0", "0<=x0<=1", "1<=x0<=1")
    assert kron([identity_total(2), total(2)], domain=Domain(["a", "b"], [2, 2])).labels == ("a=0", "a=1", "total")


def test_stack_of_krons_matches_the_dense_union():
    sizes = (3, 4, 2)
    parts = [("prefix", "identity", "total"), ("identity", "total", "identity"), ("total", "all_range", "total")]
    W = stack([kron([BUILD[name](size) for name, size in zip(names, sizes)]) for names in parts])
    F = np.vstack([dense_kron([DENSE[name](size) for name, size in zip(names, sizes)]) for names in parts])
    rng = np.random.default_rng(3)
    v, u = rng.normal(size=F.shape[1]), rng.normal(size=F.shape[0])
    np.testing.assert_allclose(W.answer(v), F @ v, atol=1e-12)
    np.testing.assert_allclose(W.rmatvec(u), F.T @ u, atol=1e-12)
    np.testing.assert_allclose(W.gram(), F.T @ F, atol=1e-12)
    np.testing.assert_array_equal(W.toarray(), F)
    for ord in (1, 2, math.inf):
        assert W.column_norm(ord) == pytest.approx(np.max(np.linalg.norm(F, ord, axis=0)), rel=1e-14)
    domain = Domain(["a", "b", "c"], sizes)
    records = np.column_stack([np.random.default_rng(1).integers(0, size, 64) for size in sizes])
    W = stack([kron([BUILD[name](size) for name, size in zip(names, sizes)], domain=domain) for names in parts])
    np.testing.assert_array_equal(W.answer_counts(Dataset(records, domain)), F @ histogram_of(records, sizes))


def test_stack_keeps_structure_and_never_densifies_a_large_union():
    """30 attributes of 4 values: 1.2e18 elements. The union of two products is answered from
    the records' tables and normed from the factors, never indexing the universe."""
    sizes = [4] * 30
    domain = Domain([f"a{i}" for i in range(30)], sizes)
    first = kron([prefix(4) if i == 0 else identity(4) if i == 1 else total(4) for i in range(30)], domain=domain)
    second = kron([identity(4) if i in (2, 3) else total(4) for i in range(30)], domain=domain)
    W = stack([first, second])
    assert isinstance(W, Stack) and W.is_implicit and W.universe_size == 4**30
    rng = np.random.default_rng(0)
    records = rng.integers(0, 4, size=(500, 30))
    counts = W.answer_counts(Dataset(records, domain))
    table01 = np.zeros((4, 4))
    np.add.at(table01, (records[:, 0], records[:, 1]), 1)
    table23 = np.zeros((4, 4))
    np.add.at(table23, (records[:, 2], records[:, 3]), 1)
    np.testing.assert_array_equal(counts, np.concatenate([(dense_prefix(4) @ table01).ravel(), table23.ravel()]))
    # Prefix is largest at its first column, identity and total everywhere: one element peaks
    # in both products, ||F||_{1->2}^2 = 4 + 1.
    assert W.column_norm(2) == pytest.approx(math.sqrt(5), rel=1e-15)
    assert "stack of 2" in repr(W)


def test_stack_refuses_a_union_whose_largest_columns_differ_on_a_huge_universe():
    # 5^12 = 2.4e8 elements, above the per-column route
    parts = [kron([prefix(5)] + [total(5)] * 11), kron([all_range(5)] + [total(5)] * 11)]
    with pytest.raises(ValueError, match="ord: the largest column norm"):
        stack(parts).column_norm(2)
    # Small enough for the per-column route, the same union gives the exact value.
    small = stack([kron([prefix(5), total(5)]), kron([all_range(5), total(5)])])
    F = np.vstack([np.kron(dense_prefix(5), np.ones((1, 5))), np.kron(dense_range(5), np.ones((1, 5)))])
    assert small.column_norm(2) == pytest.approx(np.max(np.linalg.norm(F, axis=0)), rel=1e-14)


def test_workload_constructor_builds_a_matrix_workload():
    W = Workload([[1.0, 0.0], [1.0, 1.0]])
    assert type(W).__name__ == "MatrixWorkload" and isinstance(W, Workload)
    assert not isinstance(W, Kron)


def brute_marginal_rows(sizes, subset):
    """The rows of the table of ``subset``: one per cell, the indicator of the elements in it."""
    cells = list(itertools.product(*(range(sizes[i]) for i in subset)))
    elements = list(itertools.product(*(range(size) for size in sizes)))
    return np.array([[1.0 if all(x[i] == c for i, c in zip(subset, cell)) else 0.0 for x in elements]
                     for cell in cells]).reshape(len(cells), len(elements))


def test_marginals_of_several_ways_match_brute_force():
    sizes = (2, 3, 2)
    domain = Domain(["a", "b", "c"], sizes)
    W = marginals(domain, ways=(0, 1, 2))
    F = np.vstack([brute_marginal_rows(sizes, subset) for way in (0, 1, 2)
                   for subset in itertools.combinations(range(3), way)])
    np.testing.assert_array_equal(W.toarray(), F)
    assert W.labels[0] == "total" and W.labels[1:3] == ("a=0", "a=1")
    records = np.column_stack([np.random.default_rng(2).integers(0, size, 40) for size in sizes])
    np.testing.assert_array_equal(W.answer_counts(Dataset(records, domain)), F @ histogram_of(records, sizes))
    assert W.column_norm(2) == pytest.approx(np.max(np.linalg.norm(F, axis=0)), rel=1e-15)


def test_marginals_way_and_ways_are_exclusive():
    domain = Domain(["a", "b"], [2, 2])
    with pytest.raises(TypeError, match="exactly one of way"):
        marginals(domain)
    with pytest.raises(TypeError, match="exactly one of way"):
        marginals(domain, 1, ways=(1,))
    with pytest.raises(ValueError, match="ways"):
        marginals(domain, ways=(2, 1))
    with pytest.raises(ValueError, match="ways"):
        marginals(domain, ways=(3,))
    with pytest.raises(TypeError, match="ways"):
        marginals(domain, ways=(1.0,))


def test_marginal_parts_are_the_kronecker_products_of_identity_and_total():
    domain = Domain(["a", "b", "c"], (2, 3, 2))
    W = marginals(domain, 2)
    parts = W.parts
    assert len(parts) == 3
    np.testing.assert_array_equal(np.vstack([part.toarray() for part in parts]), W.toarray())
    assert sum((part.labels for part in parts), ()) == W.labels


def test_range_marginals_match_brute_force():
    sizes = (4, 2, 3)
    domain = Domain(["age", "sex", "hours"], sizes)
    W = range_marginals(domain, 2, {"age": "prefix", "hours": "all_range"})
    blocks_in = [dense_prefix(4), np.eye(2), dense_range(3)]
    blocks_out = [np.ones((1, size)) for size in sizes]
    F = np.vstack([dense_kron([blocks_in[i] if i in subset else blocks_out[i] for i in range(3)])
                   for subset in itertools.combinations(range(3), 2)])
    assert W.is_implicit
    rng = np.random.default_rng(4)
    v = rng.normal(size=F.shape[1])
    np.testing.assert_allclose(W.answer(v), F @ v, atol=1e-12)
    np.testing.assert_allclose(W.gram(), F.T @ F, atol=1e-12)
    assert W.column_norm(2) == pytest.approx(np.max(np.linalg.norm(F, axis=0)), rel=1e-14)
    records = np.column_stack([rng.integers(0, size, 77) for size in sizes])
    np.testing.assert_array_equal(W.answer_counts(Dataset(records, domain)), F @ histogram_of(records, sizes))
    assert W.labels[0] == "age<=0 & sex=0"
    assert W.labels[-1] == "sex=1 & 2<=hours<=2" and "age<=3 & 0<=hours<=2" in W.labels


def test_range_marginals_refuse_bad_ranges():
    domain = Domain(["age", "sex"], (4, 2))
    with pytest.raises(ValueError, match="ranges"):
        range_marginals(domain, 1, {"age": "suffix"})
    with pytest.raises(ValueError, match="nope"):
        range_marginals(domain, 1, {"nope": "prefix"})
    with pytest.raises(TypeError, match="ranges"):
        range_marginals(domain, 1, ["age"])


def test_kron_refuses_a_domain_of_other_sizes_and_bad_factors():
    with pytest.raises(ValueError, match="domain"):
        kron([identity(2), identity(3)], domain=Domain(["a", "b"], [3, 2]))
    with pytest.raises(TypeError, match="factors"):
        kron([identity(2), np.eye(2)])
    with pytest.raises(ValueError, match="factors"):
        kron([])
    with pytest.raises(ValueError, match="implicit"):
        kron([prefix(4, implicit=True), identity(2)], implicit=False)


def test_implicit_factors_make_an_implicit_product_that_still_answers():
    W = kron([prefix(5, implicit=True), identity(3)])
    F = np.kron(dense_prefix(5), np.eye(3))
    assert W.is_implicit
    v = np.random.default_rng(0).normal(size=15)
    np.testing.assert_allclose(W.answer(v), F @ v, atol=1e-12)
    with pytest.raises(ValueError, match="implicit"):
        _ = W.matrix


def test_top_level_names_reach_the_algebra():
    assert pm.workloads.kron is kron and pm.workloads.range_marginals is range_marginals


def _check_kronecker_gram(W, F, expected_terms):
    """The sum-of-Kronecker form against ``F^T F`` of the dense ``F`` built in the test."""
    gram = W.kronecker_gram()
    assert len(gram.terms) == expected_terms
    G = F.T @ F
    np.testing.assert_allclose(gram.toarray(), G, atol=1e-12)
    v = np.random.default_rng(5).normal(size=F.shape[1])
    np.testing.assert_allclose(gram @ v, G @ v, atol=1e-10)
    np.testing.assert_allclose(gram.aslinearoperator().matvec(v), G @ v, atol=1e-10)
    np.testing.assert_allclose(gram.diagonal(), np.sum(F**2, axis=0), atol=1e-12)
    assert gram.trace() == pytest.approx(np.sum(F**2), rel=1e-13)


def test_kronecker_gram_of_products_stacks_and_marginals_is_the_dense_gram():
    sizes = (3, 4, 2)
    parts = [("prefix", "identity", "total"), ("identity", "total", "identity"), ("total", "all_range", "total")]
    krons = [kron([BUILD[name](size) for name, size in zip(names, sizes)]) for names in parts]
    denses = [dense_kron([DENSE[name](size) for name, size in zip(names, sizes)]) for names in parts]
    _check_kronecker_gram(krons[0], denses[0], 1)
    _check_kronecker_gram(stack(krons), np.vstack(denses), 3)
    assert stack(krons).kronecker_gram().sizes == sizes  # per attribute, never the universe
    domain = Domain(["a", "b", "c"], sizes)
    F = np.vstack([brute_marginal_rows(sizes, subset) for way in (1, 2) for subset in itertools.combinations(range(3),
                                                                                                             way)])
    _check_kronecker_gram(marginals(domain, ways=(1, 2)), F, 6)
    # A Kronecker product of a union expands: (A;B) ⊗ C has the terms A^TA⊗C^TC + B^TB⊗C^TC.
    union = stack([prefix(3), total(3)])
    _check_kronecker_gram(kron([union, identity(2)]),
                          np.kron(np.vstack([dense_prefix(3), np.ones((1, 3))]), np.eye(2)), 2)
    # Parts over different attribute splits: one dense term.
    _check_kronecker_gram(stack([kron([prefix(2), identity(3)]), Workload(np.eye(6))]),
                          np.vstack([np.kron(dense_prefix(2), np.eye(3)), np.eye(6)]), 1)


def test_kronecker_gram_of_a_huge_union_stays_per_attribute():
    domain = Domain([f"a{i}" for i in range(40)], [5] * 40)
    gram = marginals(domain, 2, implicit=True).kronecker_gram()
    assert gram.sizes == (5,) * 40 and len(gram.terms) == math.comb(40, 2)
    # Every element lies in one cell of each of the C(40, 2) tables.
    assert gram.trace() == pytest.approx(math.comb(40, 2) * 5**40, rel=1e-12)
    with pytest.raises(ValueError, match="max_entries: a dense Gram matrix"):
        gram.toarray()
    with pytest.raises(ValueError, match="terms: every term"):
        pm.workloads.KroneckerGram([(1.0, [np.eye(2)]), (1.0, [np.eye(3)])])
    with pytest.raises(ValueError, match="factor sizes differ"):
        gram + pm.workloads.KroneckerGram([(1.0, [np.eye(2)])])


@pytest.mark.parametrize("build", [
    lambda domain: marginals(domain, 2),
    lambda domain: marginals(domain, ways=(0, 1, 3)),
    lambda domain: kron([prefix(3), identity_total(2), all_range(4)], domain=domain),
    lambda domain: range_marginals(domain, 2, {"a": "prefix", "c": "all_range"}),
    lambda domain: Workload(np.random.default_rng(1).normal(size=(7, 24))),
    # A weighted identity and a constant total (one comparison of values) beside a diagonal
    # whose entries differ (gathered); a permutation and a Hadamard block (Gram 2 I: compared,
    # not gathered): each branch of the Kronecker Gram.
    lambda domain: kron([Workload(0.5 * np.eye(3)), Workload(np.diag([1.0, 2.0])),
                         Workload(np.ones((2, 4)) * 3.0)], domain=domain),
    lambda domain: kron([Workload(np.eye(3)[[2, 0, 1]]), Workload(np.array([[1.0, 1.0], [1.0, -1.0]])),
                         Workload(2.0 * np.eye(4))], domain=domain),
])
def test_column_gram_is_the_inner_products_of_the_dense_columns(build):
    domain = Domain(["a", "b", "c"], (3, 2, 4))
    W = build(domain)
    F = W.toarray() if not W.is_implicit else np.column_stack([W.answer(e) for e in np.eye(24)])
    rng = np.random.default_rng(0)
    left, right = rng.integers(0, 24, 9).astype(np.int64), rng.integers(0, 24, 5).astype(np.int64)
    np.testing.assert_allclose(W._column_gram(left, right), F[:, left].T @ F[:, right], atol=1e-12)


@pytest.mark.parametrize("build", [
    lambda domain: marginals(domain, 2),
    lambda domain: marginals(domain, ways=(0, 1, 3)),
    lambda domain: kron([prefix(3), identity_total(2), all_range(4)], domain=domain),
    lambda domain: Workload(np.random.default_rng(1).normal(size=(7, 24))),
    lambda domain: Workload(sp.random(7, 24, density=0.3, random_state=1, format="csr")),
])
def test_sparse_columns_are_the_dense_columns(build):
    W = build(Domain(["a", "b", "c"], (3, 2, 4)))
    F = W.toarray()
    index = np.array([5, 0, 23, 5, 11], dtype=np.int64)
    columns = W._sparse_columns(index)
    assert isinstance(columns, sp.csc_array)
    np.testing.assert_array_equal(columns.toarray(), F[:, index])
