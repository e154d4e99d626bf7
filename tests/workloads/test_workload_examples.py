"""The worked examples of the workload builders' documentation, checked in full here (the
docstrings keep a short one each)."""

import numpy as np
import pytest

import projmech as pm
from projmech.errors import ArgumentValueError
from projmech.workloads import (
    ImplicitWorkload,
    MatrixWorkload,
    all_range,
    as_query_matrix,
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
