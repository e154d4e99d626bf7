"""The worked examples of the workload builders' documentation, checked in full here (the
docstrings keep a short one each)."""

import numpy as np
import pytest
import scipy.sparse as sp

import projmech as pm
from projmech.errors import ArgumentValueError
from projmech.workloads import (
    ImplicitWorkload,
    Kron,
    MatrixWorkload,
    Stack,
    all_range,
    as_query_matrix,
    column_norm,
    identity,
    identity_total,
    kron,
    prefix,
    random_queries,
    repeated,
    stack,
    total,
)


def test_builders_labels_and_answers():
    assert identity(3).is_sparse
    np.testing.assert_array_equal(identity_total(2).toarray(), [[1, 0], [0, 1], [1, 1]])
    W = prefix(3)
    assert W.labels == ("x<=0", "x<=1", "x<=2")
    np.testing.assert_array_equal(W.gram(), [[3, 2, 1], [2, 2, 1], [1, 1, 1]])
    assert all_range(3).labels[:3] == ("0<=x<=0", "0<=x<=1", "0<=x<=2")
    assert repeated([1, 0, 1], k=2).labels == ("copy0", "copy1")
    drawn = random_queries(3, 5, np.random.default_rng(0))
    assert drawn.labels == ("random0", "random1", "random2") and drawn.is_integer
    assert stack([total(3), identity(3), prefix(3)]).labels[:4] == ("total", "x=0", "x=1", "x=2")
    assert MatrixWorkload(np.eye(3)).is_sparse is False


def test_kron_labels_and_gram():
    W = kron([prefix(3), identity(2)])
    assert W.labels[:2] == ("x0<=0 & x1=0", "x0<=0 & x1=1")
    gram = W.kronecker_gram()
    assert np.allclose(gram.toarray(), W.gram())


def test_implicit_prefix_sums():
    cells = np.arange(4)
    P = ImplicitWorkload((4, 4), np.cumsum, lambda: (4 - np.maximum.outer(cells, cells)).astype(float),
                         name="prefix sums", integer=True, nonnegative=True)
    assert P.sensitivity() == 2.0 and not P.has_adjoint


def test_kernels_and_query_matrix_checks():
    np.testing.assert_array_equal(prefix(3).kernels.matvec(np.array([1.0, 2.0, 3.0])), [1.0, 3.0, 6.0])
    with pytest.raises(ArgumentValueError, match="^F: "):
        as_query_matrix([[1, float("nan")]])


def test_predicates_matrix():
    domain = pm.Domain(["a", "b"], [2, 3])
    W = pm.workloads.from_predicates(domain, {"a=1": lambda x: x["a"] == 1, "b>=1": lambda x: x["b"] >= 1})
    np.testing.assert_array_equal(W.toarray(), [[0, 0, 0, 1, 1, 1], [0, 1, 1, 0, 1, 1]])


def test_the_fuller_outputs_of_the_builders_examples():
    """The cases the builders' documentation examples showed beside the one they keep."""
    W = identity(3)
    assert W.labels == ("x=0", "x=1", "x=2")
    np.testing.assert_array_equal(W.answer([0.2, 0.3, 0.5]), [0.2, 0.3, 0.5])
    assert total(3).labels == ("total",)
    assert kron([total(2), identity(3)]).labels == ("x1=0", "x1=1", "x1=2")  # the first attribute summed out
    assert identity_total(2).labels == ("x=0", "x=1", "total")
    assert prefix(10**6, implicit=True).shape == (1000000, 1000000)
    assert all_range(3).shape == (6, 3) and all_range(4096, implicit=True).num_queries == 8390656
    np.testing.assert_array_equal(repeated([1, 0, 1], k=2).toarray(), [[1, 0, 1], [1, 0, 1]])
    assert as_query_matrix(sp.eye(2)).format == "csr"
    A = np.array([[3.0, 1.0], [4.0, 1.0]])
    assert (column_norm(A), column_norm(A, ord=1), column_norm(A, ord=np.inf)) == (5.0, 7.0, 4.0)
    points = MatrixWorkload(sp.eye(3, format="csr"), name="points")
    np.testing.assert_array_equal(points.answer([0.2, 0.3, 0.5]), [0.2, 0.3, 0.5])


def test_the_fuller_outputs_of_the_structured_examples():
    W = kron([prefix(3), identity(2)], domain=pm.Domain(["age", "sex"], [3, 2]))
    assert W.shape == (6, 6)
    np.testing.assert_array_equal(W.toarray(), np.kron(prefix(3).toarray(), identity(2).toarray()))
    np.testing.assert_array_equal(W.answer_counts(pm.Dataset(np.array([[0, 1], [1, 0], [2, 1]]), W.domain)),
                                  [0, 1, 1, 1, 1, 2])
    assert [factor.name for factor in Kron([prefix(3), identity(2)]).factors] == ["prefix(3)", "identity(2)"]
    assert len(Stack([total(3), prefix(3)]).parts) == 2
    union = stack([total(3), identity(3), prefix(3)])
    assert union.shape == (7, 3)
    np.testing.assert_allclose(union.answer([0.2, 0.3, 0.5]), [1.0, 0.2, 0.3, 0.5, 0.2, 0.5, 1.0])
    assert round(union.sensitivity(), 3) == 2.236  # sqrt(1 + 1 + 3), at the first element
    gram = kron([prefix(3), identity(2)]).kronecker_gram()
    assert gram.sizes == (3, 2) and len(gram.terms) == 1
    np.testing.assert_array_equal(gram.matvec(np.ones(6)), [6, 6, 5, 5, 3, 3])
    kernels = pm.identity(2).kernels
    np.testing.assert_array_equal(kernels.rmatvec(np.array([1.0, 2.0])), [1.0, 2.0])
    cells = np.arange(4)
    P = ImplicitWorkload((4, 4), np.cumsum, lambda: (4 - np.maximum.outer(cells, cells)).astype(float),
                         name="prefix sums", integer=True, nonnegative=True)
    np.testing.assert_allclose(P.answer([0.1, 0.2, 0.3, 0.4]), [0.1, 0.3, 0.6, 1.0])
    domain = pm.Domain(["a", "b"], [2, 3])
    W = pm.workloads.from_predicates(domain, {"a=1": lambda x: x["a"] == 1, "b>=1": lambda x: x["b"] >= 1})
    np.testing.assert_allclose(W.answer_data(pm.Dataset(np.array([[0, 0], [0, 2], [1, 2], [1, 1]]), domain)),
                               [0.5, 0.75])


def test_the_fuller_outputs_of_the_workload_examples():
    W = pm.Workload([[1, 1, 0], [0, 1, 1]], ["left", "right"])
    assert W.shape == (2, 3) and W.labels == ("left", "right")
    data = pm.Dataset(np.array([[0], [1], [1], [2]]), pm.Domain(["x"], [3]))
    np.testing.assert_array_equal(W.answer_counts(data), [3.0, 3.0])
    np.testing.assert_array_equal(W.answer_data(data), [0.75, 0.75])
    assert (W.sensitivity(), W.is_integer, W.is_nonnegative) == (1.4142135623730951, True, True)
    P = pm.Workload.implicit((3, 3), np.cumsum, lambda: np.array([[3., 2, 1], [2, 2, 1], [1, 1, 1]]))
    assert P.is_implicit
    np.testing.assert_allclose(P.answer([0.5, 0.25, 0.25]), [0.5, 0.75, 1.0])

