"""Workload matrices against brute-force constructions over tiny universes."""

import itertools
import json
import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import projmech as pm
from oracles import brute_marginals
from projmech import Dataset, Domain, Workload, histogram
from projmech.workloads import DEFAULT_MAX_ENTRIES


def universe(sizes):
    """All universe elements in row-major order (last attribute fastest)."""
    return list(itertools.product(*(range(s) for s in sizes)))


def brute_column_norm(matrix, p):
    matrix = np.asarray(matrix, dtype=float)
    best = 0.0
    for j in range(matrix.shape[1]):
        column = [abs(float(x)) for x in matrix[:, j]]
        if p == 2:
            value = math.hypot(*column)  # scaled: no underflow of tiny entries (1.4e-271 squared is 0)
        elif p == 1:
            value = sum(column)
        else:
            value = max(column)
        best = max(best, value)
    return best


# ----------------------------------------------------------------------------- Workload


def test_workload_basics_and_default_labels():
    F = [[1, 0, 0.5], [0, 1, 1]]
    w = Workload(F)
    assert w.shape == (2, 3)
    assert w.num_queries == 2 and w.universe_size == 3
    assert w.labels == ("q0", "q1")
    assert not w.is_sparse
    copy = w.toarray()
    copy[0, 0] = 7
    assert w.matrix[0, 0] == 1  # toarray is a copy
    np.testing.assert_array_equal(w.matrix, np.array(F, dtype=float))


def test_workload_keeps_sparse_as_csr():
    F = sp.coo_array(([1.0, 2.0], ([0, 1], [2, 0])), shape=(2, 3))
    w = Workload(F, labels=["x", "y"])
    assert w.is_sparse
    assert w.matrix.format == "csr"
    np.testing.assert_array_equal(w.toarray(), [[0, 0, 1], [2, 0, 0]])
    assert w.labels == ("x", "y")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_workload_rejects_non_finite(bad):
    F = np.ones((2, 3))
    F[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        Workload(F)
    with pytest.raises(ValueError, match="NaN or infinite"):
        Workload(sp.csr_array(F))


def test_workload_rejects_wrong_label_count():
    with pytest.raises(ValueError, match="expected 2 labels.*got 3"):
        Workload(np.ones((2, 3)), labels=["a", "b", "c"])
    with pytest.raises(ValueError, match="expected 2 labels.*got 1"):
        Workload(np.ones((2, 3)), labels=["a"])


def test_workload_domain_checks():
    d = Domain(["a", "b"], [2, 3])
    assert Workload(np.ones((1, 6)), domain=d).domain == d
    with pytest.raises(ValueError, match="6 elements but the workload has 5 columns"):
        Workload(np.ones((1, 5)), domain=d)
    with pytest.raises(TypeError, match="Domain"):
        Workload(np.ones((1, 6)), domain={"a": 2, "b": 3})


@pytest.mark.parametrize("shape", [(3,), (1, 2, 3), (0, 3), (3, 0)])
def test_workload_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match="matrix"):
        Workload(np.ones(shape))


# ----------------------------------------------------------------------------- answer


def test_answer_matches_manual_dot_products():
    rng = np.random.default_rng(1)
    F = rng.random((4, 7))
    h = rng.random(7)
    manual = [sum(F[i, u] * h[u] for u in range(7)) for i in range(4)]
    for w in (Workload(F), Workload(sp.csr_array(F))):
        np.testing.assert_allclose(w.answer(h), manual, rtol=1e-12)
        assert w.answer(h).shape == (4,)


@pytest.mark.parametrize("sparse_F", [False, True])
def test_answer_accepts_sparse_histogram(sparse_F):
    rng = np.random.default_rng(2)
    F = rng.random((3, 6))
    w = Workload(sp.csr_array(F) if sparse_F else F)
    h = np.array([0.0, 0.25, 0.0, 0.0, 0.75, 0.0])
    expected = [0.25 * F[i, 1] + 0.75 * F[i, 4] for i in range(3)]
    row = sp.csr_array(h.reshape(1, 6))
    col = sp.csc_array(h.reshape(6, 1))
    flat = sp.csr_array(h)  # 1-d, as a projection's witness comes
    assert flat.shape == (6,)
    for hs in (row, col, flat):
        out = w.answer(hs)
        assert isinstance(out, np.ndarray) and out.shape == (3,)
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_answer_rejects_wrong_length_and_nan():
    w = Workload(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"expected shape \(4,\)"):
        w.answer(np.ones(3))
    with pytest.raises(ValueError, match=r"expected shape \(4,\)"):
        w.answer(np.ones((4, 1)))
    with pytest.raises(ValueError, match="NaN"):
        w.answer(np.array([0.5, np.nan, 0.5, 0.0]))
    with pytest.raises(ValueError, match="NaN or infinite"):
        w.answer(np.array([0.5, np.inf, 0.5, 0.0]))
    with pytest.raises(ValueError, match="expected 4 entries"):
        w.answer(sp.csr_array(np.ones((1, 5))))
    with pytest.raises(ValueError, match="expected 4 entries"):
        w.answer(sp.csr_array(np.ones((2, 2))))
    with pytest.raises(ValueError, match="NaN"):
        w.answer(sp.csr_array(np.array([[0.0, np.nan, 0.0, 1.0]])))


# ----------------------------------------------------------------------------- column norms


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda k: st.integers(1, 6).flatmap(
            lambda m: st.lists(
                st.floats(-5, 5, allow_nan=False, allow_infinity=False), min_size=k * m, max_size=k * m
            ).map(lambda v: np.array(v).reshape(k, m))
        )
    )
)
def test_column_norms_match_brute_force(F):
    for w in (Workload(F), Workload(sp.csr_array(F))):
        assert w.sensitivity() == pytest.approx(brute_column_norm(F, 2), rel=1e-12, abs=1e-300)
        assert w.column_norm(2) == pytest.approx(brute_column_norm(F, 2), rel=1e-12, abs=1e-300)
        assert w.column_norm(1) == pytest.approx(brute_column_norm(F, 1), rel=1e-12, abs=1e-300)
        assert w.column_norm(np.inf) == pytest.approx(brute_column_norm(F, np.inf), rel=1e-12, abs=1e-300)


def test_column_norm_sees_negative_entries_and_rejects_bad_ord():
    F = np.array([[-3.0, 1.0], [-4.0, 1.0]])
    w = Workload(F)
    assert w.sensitivity() == pytest.approx(5.0)
    assert w.column_norm(1) == pytest.approx(7.0)
    assert w.column_norm(np.inf) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="ord"):
        w.column_norm(3)


# ----------------------------------------------------------------------------- simple builders


@pytest.mark.parametrize("m", [1, 2, 5, 9])
def test_identity(m):
    w = pm.identity(m)
    expected = [[1.0 if i == u else 0.0 for u in range(m)] for i in range(m)]
    np.testing.assert_array_equal(w.toarray(), expected)
    assert w.labels == tuple(f"x={u}" for u in range(m))
    assert w.sensitivity() == 1.0


@pytest.mark.parametrize("m", [1, 2, 3, 7])
def test_prefix(m):
    w = pm.prefix(m)
    expected = [[1.0 if u <= t else 0.0 for u in range(m)] for t in range(m)]
    np.testing.assert_array_equal(w.toarray(), expected)
    assert w.labels == tuple(f"x<={t}" for t in range(m))
    # column u is in the m - u queries t >= u: largest is u = 0
    assert w.sensitivity() == pytest.approx(math.sqrt(m))


def test_prefix_answers_are_cdf():
    h = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(pm.prefix(4).answer(h), [0.1, 0.3, 0.6, 1.0])


@pytest.mark.parametrize("m", [1, 2, 4, 6])
def test_all_range(m):
    w = pm.all_range(m)
    rows, labels = [], []
    for a in range(m):
        for b in range(a, m):
            rows.append([1.0 if a <= u <= b else 0.0 for u in range(m)])
            labels.append(f"{a}<=x<={b}")
    assert w.num_queries == m * (m + 1) // 2 == len(rows)
    np.testing.assert_array_equal(w.toarray(), rows)
    assert w.labels == tuple(labels)
    assert w.sensitivity() == pytest.approx(brute_column_norm(rows, 2))
    # closed form: element u lies in (u + 1) * (m - u) ranges
    assert w.sensitivity() == pytest.approx(math.sqrt(max((u + 1) * (m - u) for u in range(m))))


def test_repeated():
    q = [0.0, 1.0, 0.5]
    w = pm.repeated(q, 4)
    np.testing.assert_array_equal(w.toarray(), [q] * 4)
    assert w.labels == ("copy0", "copy1", "copy2", "copy3")
    assert w.sensitivity() == pytest.approx(math.sqrt(4) * 1.0)
    single = Workload([q], labels=["mine"])
    np.testing.assert_array_equal(pm.repeated(single, 2).toarray(), [q, q])
    with pytest.raises(ValueError, match="single query"):
        pm.repeated(Workload([q, q]), 3)


@pytest.mark.parametrize("builder", [pm.identity, pm.prefix, pm.all_range])
def test_size_argument_checked(builder):
    with pytest.raises(ValueError, match="at least 1"):
        builder(0)
    with pytest.raises(TypeError, match="int"):
        builder(3.0)
    with pytest.raises(TypeError, match="int"):
        builder(True)


def test_repeated_k_checked():
    with pytest.raises(ValueError, match="k"):
        pm.repeated([1.0], 0)
    with pytest.raises(TypeError, match="k"):
        pm.repeated([1.0], 2.5)


# ----------------------------------------------------------------------------- marginals


@pytest.mark.parametrize("way", [1, 2, 3])
def test_marginals_non_binary_brute_force(way):
    names, sizes = ["a", "b", "c"], [2, 3, 4]
    d = Domain(names, sizes)
    w = pm.marginals(d, way)
    rows, labels = brute_marginals(names, sizes, way)
    assert w.is_sparse
    assert w.shape == rows.shape
    np.testing.assert_array_equal(w.toarray(), rows)
    assert w.labels == tuple(labels)
    assert w.domain == d
    assert w.sensitivity() == pytest.approx(math.sqrt(math.comb(3, way)))
    assert w.sensitivity() == pytest.approx(brute_column_norm(rows, 2))


def test_marginals_row_ordering_explicit():
    d = Domain(["a", "b", "c"], [2, 3, 4])
    w = pm.marginals(d, 2)
    # subsets (a,b): 6 cells, (a,c): 8 cells, (b,c): 12 cells
    assert w.num_queries == 26
    assert w.labels[0] == "a=0 & b=0"
    assert w.labels[1] == "a=0 & b=1"
    assert w.labels[3] == "a=1 & b=0"
    assert w.labels[5] == "a=1 & b=2"
    assert w.labels[6] == "a=0 & c=0"
    assert w.labels[13] == "a=1 & c=3"
    assert w.labels[14] == "b=0 & c=0"
    assert w.labels[25] == "b=2 & c=3"
    F = w.toarray()
    # universe element (1, 2, 3) is index 23: it lies in cells 5, 13, 25
    assert np.flatnonzero(F[:, 23]).tolist() == [5, 13, 25]
    # universe element (0, 1, 2) is index 6: cells a=0&b=1 (1), a=0&c=2 (8), b=1&c=2 (14+6=20)
    assert np.flatnonzero(F[:, 6]).tolist() == [1, 8, 20]


def test_marginals_with_size_one_attribute():
    names, sizes = ["a", "b", "c"], [3, 1, 2]
    w = pm.marginals(Domain(names, sizes), 2)
    rows, labels = brute_marginals(names, sizes, 2)
    np.testing.assert_array_equal(w.toarray(), rows)
    assert w.labels == tuple(labels)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_marginals_binary_count(d):
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    for way in range(1, d + 1):
        w = pm.marginals(domain, way)
        assert w.num_queries == math.comb(d, way) * 2**way
        assert w.sensitivity() == pytest.approx(math.sqrt(math.comb(d, way)))
        # each column has exactly C(d, way) ones, one per table
        np.testing.assert_array_equal(w.toarray().sum(axis=0), math.comb(d, way))


def test_marginals_argument_checks():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="at most the number of attributes"):
        pm.marginals(d, 3)
    with pytest.raises(ValueError, match="at least 1"):
        pm.marginals(d, 0)
    with pytest.raises(TypeError, match="Domain"):
        pm.marginals({"a": 2}, 1)


@pytest.mark.parametrize("way", [1, 2, 3])
def test_marginal_answers_equal_pandas_groupby(way):
    names, sizes = ["p", "q", "r", "s"], [2, 3, 4, 2]
    rng = np.random.default_rng(7)
    n = 301
    frame = pd.DataFrame({a: rng.integers(0, s, n) for a, s in zip(names, sizes)})
    domain = Domain(names, sizes)
    expected = []
    for subset in itertools.combinations(names, way):
        counts = frame.groupby(list(subset)).size()
        full_index = pd.MultiIndex.from_product([range(domain[a]) for a in subset], names=list(subset))
        counts = counts.reindex(full_index, fill_value=0) if way > 1 else counts.reindex(range(domain[subset[0]]),
                                                                                         fill_value=0)
        expected.extend((counts.to_numpy() / n).tolist())
    w = pm.marginals(domain, way)
    ds = Dataset.from_dataframe(frame, domain)
    np.testing.assert_allclose(w.answer(histogram(ds)), expected, rtol=0, atol=1e-14)
    np.testing.assert_allclose(w.answer(histogram(ds, sparse=True)), expected, rtol=0, atol=1e-14)
    # every table sums to one
    assert sum(expected) == pytest.approx(math.comb(4, way))


def test_marginal_answers_pandas_crosstab_two_way():
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 97), "b": rng.integers(0, 4, 97)})
    domain = Domain(["a", "b"], [3, 4])
    table = pd.crosstab(frame["a"], frame["b"], normalize=True).reindex(
        index=range(3), columns=range(4), fill_value=0
    )
    answers = pm.marginals(domain, 2).answer(histogram(frame, domain))
    np.testing.assert_allclose(answers, table.to_numpy().ravel(), atol=1e-14)


# ----------------------------------------------------------------------------- max_entries


def test_all_range_refused_before_allocation():
    # the dense matrix would take ~500 GB; a ValueError (not MemoryError) from the cap
    with pytest.raises(ValueError, match=r"all_range.*5,000.*max_entries") as info:
        pm.all_range(5000)
    assert "6.251e+10" in str(info.value)


def test_marginals_on_full_adult_domain_refused():
    sizes = json.loads(resources.files("projmech.datasets").joinpath("adult-domain.json").read_text(encoding="utf-8"))
    domain = Domain.from_dict(sizes)
    assert len(domain) == 14
    m = math.prod(domain.sizes)
    for way in (1, 2):
        with pytest.raises(ValueError, match=rf"marginals\(way={way}\).*max_entries") as info:
            pm.marginals(domain, way)
        assert f"m={m:,}" in str(info.value)


@pytest.mark.parametrize(
    "build, stored",
    [
        (lambda cap: pm.identity(10, max_entries=cap), 10),
        (lambda cap: pm.prefix(10, max_entries=cap), 100),
        (lambda cap: pm.all_range(4, max_entries=cap), 40),
        (lambda cap: pm.repeated(np.ones(5), 3, max_entries=cap), 15),
        (lambda cap: pm.marginals(Domain(["a", "b", "c"], [2, 3, 4]), 2, max_entries=cap), 72),
        (lambda cap: pm.from_predicates(Domain(["a"], [6]), [lambda x: x["a"] > 2] * 2, max_entries=cap), 12),
        (lambda cap: pm.random_queries(3, 7, np.random.default_rng(0), max_entries=cap), 21),
    ],
)
def test_max_entries_boundary(build, stored):
    assert build(stored) is not None
    with pytest.raises(ValueError, match="max_entries"):
        build(stored - 1)


def test_default_max_entries():
    assert DEFAULT_MAX_ENTRIES == 10**8


# ----------------------------------------------------------------------------- from_predicates


def test_from_predicates_matches_manual_evaluation():
    names, sizes = ["age", "sex", "zip"], [4, 2, 3]
    d = Domain(names, sizes)
    predicates = {
        "old men": lambda x: (x["age"] >= 2) & (x["sex"] == 1),
        "zip half": lambda x: 0.5 * (x["zip"] == 2),
        "young or zip0": lambda x: (x["age"] < 1) | (x["zip"] == 0),
        "all": lambda x: 1,
    }
    manual = {
        "old men": lambda age, sex, zip_: float(age >= 2 and sex == 1),
        "zip half": lambda age, sex, zip_: 0.5 if zip_ == 2 else 0.0,
        "young or zip0": lambda age, sex, zip_: float(age < 1 or zip_ == 0),
        "all": lambda age, sex, zip_: 1.0,
    }
    w = pm.from_predicates(d, predicates)
    expected = [[manual[label](*u) for u in universe(sizes)] for label in predicates]
    np.testing.assert_array_equal(w.toarray(), expected)
    assert w.labels == tuple(predicates)
    assert w.domain == d


def test_from_predicates_sequence_labels():
    d = Domain(["a"], [3])
    w = pm.from_predicates(d, [lambda x: x["a"] == 0, lambda x: x["a"] != 0])
    assert w.labels == ("q0", "q1")
    np.testing.assert_array_equal(w.toarray(), [[1, 0, 0], [0, 1, 1]])


@pytest.mark.parametrize(
    "fn",
    [lambda x: x["a"] * 1.0, lambda x: -1.0 * (x["a"] == 0), lambda x: 2],
    ids=["above-one", "negative", "scalar"],
)
def test_from_predicates_outside_unit_interval(fn):
    d = Domain(["a"], [3])
    with pytest.raises(ValueError, match=r"'bad one'.*outside \[0, 1\]"):
        pm.from_predicates(d, {"fine": lambda x: x["a"] == 1, "bad one": fn})


def test_from_predicates_nan():
    d = Domain(["a"], [3])
    with pytest.raises(ValueError, match="'holey'.*NaN"):
        pm.from_predicates(d, {"holey": lambda x: np.where(x["a"] == 1, np.nan, 0.0)})
    with pytest.raises(ValueError, match="'q1'.*NaN"):
        pm.from_predicates(d, [lambda x: x["a"] == 1, lambda x: np.inf])


def test_from_predicates_other_errors():
    d = Domain(["a"], [3])
    with pytest.raises(ValueError, match="at least one"):
        pm.from_predicates(d, {})
    with pytest.raises(TypeError, match="'p'.*not callable"):
        pm.from_predicates(d, {"p": 1})
    with pytest.raises(ValueError):
        pm.from_predicates(d, [lambda x: np.ones(4)])
    with pytest.raises(TypeError, match="Domain"):
        pm.from_predicates({"a": 3}, [lambda x: 1])


# ----------------------------------------------------------------------------- random_queries


def test_random_queries_seeded():
    a = pm.random_queries(20, 30, np.random.default_rng(123))
    b = pm.random_queries(20, 30, np.random.default_rng(123))
    c = pm.random_queries(20, 30, np.random.default_rng(124))
    assert a.shape == (20, 30)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert not np.array_equal(a.matrix, c.matrix)
    assert set(np.unique(a.matrix).tolist()) == {0.0, 1.0}
    assert 0.35 < a.matrix.mean() < 0.65
    assert a.labels == tuple(f"random{i}" for i in range(20))


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_random_queries_requires_generator(rng):
    with pytest.raises(TypeError, match="Generator"):
        pm.random_queries(2, 3, rng)


# ----------------------------------------------------------------------------- stack


def test_stack_dense():
    w1 = Workload([[1, 0, 0]], labels=["a"])
    w2 = Workload([[0, 1, 1], [1, 1, 1]], labels=["b", "c"])
    s = pm.stack([w1, w2])
    assert not s.is_sparse
    np.testing.assert_array_equal(s.toarray(), [[1, 0, 0], [0, 1, 1], [1, 1, 1]])
    assert s.labels == ("a", "b", "c")


def test_stack_mixed_sparse_and_domain():
    d = Domain(["a", "b"], [2, 2])
    m1 = pm.marginals(d, 1)
    p = pm.prefix(4)
    s = pm.stack([m1, p, pm.identity(4)])
    assert s.is_sparse
    expected = np.vstack([brute_marginals(["a", "b"], [2, 2], 1)[0], np.tril(np.ones((4, 4))), np.eye(4)])
    np.testing.assert_array_equal(s.toarray(), expected)
    assert s.labels == m1.labels + p.labels + tuple(f"x={u}" for u in range(4))
    assert s.domain is None  # the builders without a domain differ from d
    both = pm.stack([m1, pm.marginals(d, 2)])
    assert both.domain == d
    assert both.num_queries == 4 + 4


def test_stack_errors():
    with pytest.raises(ValueError, match=r"universe sizes differ \(3 vs 4\)"):
        pm.stack([Workload(np.ones((1, 3))), Workload(np.ones((1, 4)))])
    with pytest.raises(ValueError, match="at least one"):
        pm.stack([])
    with pytest.raises(TypeError, match="Workload"):
        pm.stack([Workload(np.ones((1, 3))), np.ones((1, 3))])


def test_from_predicates_wrong_shape_names_the_predicate():
    domain = pm.Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="'bad'.*shape"):
        pm.from_predicates(domain, {"ok": lambda x: x["a"] == 1, "bad": lambda x: np.ones(4)})


# ----------------------------------------------------------------------------- Gram matrices, implicit workloads


@pytest.mark.parametrize("build", [
    lambda: pm.prefix(9),
    lambda: pm.all_range(7),
    lambda: pm.marginals(Domain(["a", "b", "c", "d"], [2, 2, 2, 2]), 2),
    lambda: pm.marginals(Domain(["a", "b", "c"], [3, 2, 4]), 2),
    lambda: pm.marginals(Domain(["a", "b", "c"], [3, 2, 4]), 3),
    lambda: pm.random_queries(5, 8, np.random.default_rng(0)),
    lambda: pm.identity(5),
])
def test_gram_matches_explicit_product(build):
    workload = build()
    F = workload.toarray()
    np.testing.assert_array_equal(workload.gram(), F.T @ F)


def test_gram_refuses_huge_universes():
    with pytest.raises(ValueError, match="gram.*max_entries"):
        pm.prefix(50).gram(max_entries=2000)


@pytest.mark.parametrize("m", [1, 5, 17])
def test_implicit_answers_equal_explicit(m):
    h = np.random.default_rng(m).dirichlet(np.ones(m))
    for build in (pm.prefix, pm.all_range):
        explicit, implicit = build(m), build(m, implicit=True)
        assert implicit.shape == explicit.shape and implicit.is_implicit and not explicit.is_implicit
        np.testing.assert_allclose(implicit.answer(h), explicit.answer(h), atol=1e-15)
        np.testing.assert_allclose(implicit.answer(sp.csr_array(h[None, :])), explicit.answer(h), atol=1e-15)
        np.testing.assert_array_equal(implicit.gram(), explicit.gram())
        assert implicit.column_norm(2) == pytest.approx(explicit.column_norm(2), rel=1e-15)


def test_implicit_all_range_is_large_but_cheap():
    workload = pm.all_range(4096, implicit=True)
    assert workload.num_queries == 4096 * 4097 // 2
    assert "implicit" in repr(workload)
    with pytest.raises(ValueError, match="implicit"):
        _ = workload.matrix
    with pytest.raises(ValueError, match="implicit"):
        workload.toarray()
    with pytest.raises(ValueError, match="ord"):
        workload.column_norm(1)


def test_implicit_constructor_validation():
    with pytest.raises(TypeError, match="matvec"):
        Workload.implicit((2, 3), matvec=None, gram=lambda: np.eye(3))
    with pytest.raises(TypeError, match="gram"):
        Workload.implicit((2, 3), matvec=np.cumsum, gram=np.eye(3))
    with pytest.raises(ValueError, match="shape"):
        Workload.implicit((0, 3), matvec=np.cumsum, gram=lambda: np.eye(3))
    wrong = Workload.implicit((2, 3), matvec=np.cumsum, gram=lambda: np.eye(2))
    with pytest.raises(ValueError, match="gram.*shape"):
        wrong.gram()
    with pytest.raises(ValueError, match="labels"):
        Workload.implicit((2, 3), matvec=np.cumsum, gram=lambda: np.eye(3), labels=["a"])


# ----------------------------------------------------------------------------- implicit marginals, answers from records


MARGINAL_DOMAINS = [
    (["a", "b", "c"], [2, 3, 4]),
    (["p", "q", "r", "s", "t"], [2, 2, 2, 2, 2]),
    (["a", "b", "c"], [3, 1, 2]),  # a size-1 attribute: one cell per table it enters
    (["x", "y"], [5, 2]),
]


def marginal_cases():
    return [(names, sizes, way) for names, sizes in MARGINAL_DOMAINS for way in (1, 2, 3) if way <= len(sizes)]


def records_histogram(records, sizes):
    """The normalized histogram of integer rows, by row-major index arithmetic."""
    index = np.zeros(len(records), dtype=np.int64)
    for column, size in zip(np.asarray(records).T, sizes):
        index = index * size + column
    return np.bincount(index, minlength=math.prod(sizes)) / len(records)


@pytest.mark.parametrize("names, sizes, way", marginal_cases())
def test_implicit_marginals_equal_explicit(names, sizes, way):
    domain = Domain(names, sizes)
    explicit, implicit = pm.marginals(domain, way), pm.marginals(domain, way, implicit=True)
    rows, labels = brute_marginals(names, sizes, way)
    assert implicit.is_implicit and not explicit.is_implicit
    assert implicit.shape == explicit.shape == rows.shape
    assert implicit.domain == domain
    assert implicit.marginal_way == explicit.marginal_way == way
    assert implicit.labels == explicit.labels == tuple(labels)
    for seed in range(3):
        h = np.random.default_rng(seed).dirichlet(np.ones(domain.size))
        np.testing.assert_allclose(implicit.answer(h), rows @ h, rtol=0, atol=1e-15)
        np.testing.assert_allclose(implicit.answer(sp.csr_array(h[None, :])), rows @ h, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(implicit.gram(), rows.T @ rows)
    assert implicit.sensitivity() == pytest.approx(brute_column_norm(rows, 2), rel=1e-15)
    assert implicit.sensitivity() == pytest.approx(explicit.sensitivity(), rel=1e-15)


@pytest.mark.parametrize("names, sizes, way", marginal_cases())
def test_answer_data_equals_the_matrix_times_the_histogram(names, sizes, way, monkeypatch):
    domain = Domain(names, sizes)
    rng = np.random.default_rng(len(sizes) + way)
    records = np.column_stack([rng.integers(0, size, 203) for size in sizes])
    data = Dataset(records, domain)
    rows, _ = brute_marginals(names, sizes, way)
    expected = rows @ records_histogram(records, sizes)
    for workload in (pm.marginals(domain, way), pm.marginals(domain, way, implicit=True)):
        np.testing.assert_allclose(workload.answer_data(data), expected, rtol=0, atol=1e-14)
    # Rows are counted in blocks; blocks of a few rows must add up to the same tables.
    monkeypatch.setattr("projmech.data._counting.BLOCK_ENTRIES", 16)
    np.testing.assert_allclose(pm.marginals(domain, way).answer_data(data), expected, rtol=0, atol=1e-14)


def test_answer_data_of_other_workloads_uses_the_histogram():
    names, sizes = ["age", "sex"], [4, 2]
    domain = Domain(names, sizes)
    records = np.random.default_rng(3).integers(0, 2, size=(50, 2)) * [2, 1]
    data = Dataset(records, domain)
    h = records_histogram(records, sizes)
    workload = pm.from_predicates(domain, {"old": lambda x: x["age"] >= 2, "half": lambda x: 0.5 * (x["sex"] == 1)})
    np.testing.assert_allclose(workload.answer_data(data), [(records[:, 0] >= 2).mean(), 0.5 * records[:, 1].mean()],
                               atol=1e-15)
    # Without a domain the universe size alone has to match.
    np.testing.assert_allclose(pm.prefix(8).answer_data(data), np.cumsum(h), atol=1e-15)
    np.testing.assert_allclose(pm.prefix(8, implicit=True).answer_data(data), np.cumsum(h), atol=1e-15)


def test_answer_data_checks_the_data():
    domain = Domain(["a", "b"], [2, 3])
    data = Dataset([[0, 1], [1, 2]], domain)
    with pytest.raises(TypeError, match="data"):
        pm.marginals(domain, 2).answer_data(np.array([[0, 1]]))
    with pytest.raises(ValueError, match="domain"):
        pm.marginals(Domain(["a", "c"], [2, 3]), 2).answer_data(data)
    with pytest.raises(ValueError, match="universe has 6 elements, the workload 7"):
        pm.prefix(7).answer_data(data)


def test_marginal_way_is_known_only_for_marginals():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    assert pm.marginals(domain, 1).marginal_way == 1
    assert pm.marginals(domain, 3, implicit=True).marginal_way == 3
    two = pm.marginals(domain, 2)
    for other in (pm.stack([two]), Workload(two.matrix, domain=domain), pm.identity(12), pm.prefix(5, implicit=True)):
        assert other.marginal_way is None
    with pytest.raises(AttributeError):
        two.marginal_way = 1  # read-only


def test_implicit_marginals_over_150_binary_attributes():
    d = 150
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    workload = pm.marginals(domain, 2, implicit=True)  # the universe has 2^150 elements
    assert workload.shape == (4 * math.comb(d, 2), 2**d)
    assert workload.sensitivity() == math.sqrt(math.comb(d, 2))
    assert not workload.accepts_histograms
    with pytest.raises(ValueError, match=r"1\.427e\+45.*answer_data"):
        workload.answer(np.zeros(3))
    with pytest.raises(ValueError, match="gram.*max_entries"):
        workload.gram()
    labels = workload.labels
    assert len(labels) == workload.num_queries
    assert labels[:5] == ("x0=0 & x1=0", "x0=0 & x1=1", "x0=1 & x1=0", "x0=1 & x1=1", "x0=0 & x2=0")
    assert labels[-1] == "x148=1 & x149=1"
    # Answers from records, against a pair-by-pair count.
    records = np.random.default_rng(0).integers(0, 2, size=(40, d))
    expected = np.concatenate([
        np.bincount(2 * records[:, i] + records[:, j], minlength=4) / 40
        for i, j in itertools.combinations(range(d), 2)
    ])
    np.testing.assert_array_equal(workload.answer_data(Dataset(records, domain)), expected)


def test_explicit_marginals_suggest_implicit():
    domain = Domain([f"x{i}" for i in range(40)], [2] * 40)
    with pytest.raises(ValueError, match=r"marginals\(way=2\).*max_entries.*implicit=True"):
        pm.marginals(domain, 2)
    with pytest.raises(ValueError, match="implicit=True"):
        pm.prefix(20_000)


def test_implicit_marginals_and_constructor_arguments_checked():
    domain = Domain(["a", "b"], [2, 3])
    with pytest.raises(TypeError, match="implicit"):
        pm.marginals(domain, 2, implicit="yes")
    with pytest.raises(ValueError, match="way"):
        pm.marginals(domain, 3, implicit=True)
    with pytest.raises(ValueError, match="column_norm"):
        Workload.implicit((2, 3), np.cumsum, lambda: np.eye(3), column_norm=-1.0)
    with pytest.raises(ValueError, match="column_norm"):
        Workload.implicit((2, 3), np.cumsum, lambda: np.eye(3), column_norm=float("nan"))
    with pytest.raises(TypeError, match="column_norm"):
        Workload.implicit((2, 3), np.cumsum, lambda: np.eye(3), column_norm="1")
    lazy = Workload.implicit((2, 3), np.cumsum, lambda: np.eye(3), labels=lambda: ["only one"])
    with pytest.raises(ValueError, match="labels"):
        _ = lazy.labels
    closed = Workload.implicit((3, 3), np.cumsum, lambda: np.zeros((3, 3)), column_norm=2.5)
    assert closed.sensitivity() == 2.5  # the closed form, not the (here deliberately wrong) Gram diagonal


# ----------------------------------------------------------------------------- bad arguments
# (the full catalogue of refusals is tests/contract/test_bad_inputs.py; here the behaviours around it)


def test_predicate_reading_an_unknown_attribute_names_it_and_lists_the_domain():
    domain = Domain(["age", "sex"], [3, 2])
    with pytest.raises(ValueError) as info:
        pm.from_predicates(domain, {"old": lambda x: x["age"] >= 2, "q": lambda x: x["nope"] == 1})
    message = str(info.value)
    assert message.startswith("predicates: 'q' reads an attribute the domain does not have")
    assert "'nope'" in message and "['age', 'sex']" in message


def test_predicate_errors_are_chained():
    with pytest.raises(ValueError, match="^predicates: 'q' raised ZeroDivisionError") as info:
        pm.from_predicates(Domain(["a"], [2]), {"q": lambda x: 1 // 0})
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_predicates_get_read_only_codes_built_on_demand():
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    seen = {}

    def spy(x):
        seen["attributes"] = list(x)
        seen["built"] = dict(x._arrays)
        return x["b"] == 1

    workload = pm.from_predicates(domain, {"b1": spy})
    assert seen == {"attributes": ["a", "b", "c"], "built": {}}  # nothing built before it was read
    np.testing.assert_array_equal(workload.toarray()[0], np.unravel_index(np.arange(24), (2, 3, 4))[1] == 1)

    def mutate(x):
        x["a"][0] = 1  # would corrupt the codes every later predicate sees
        return 1

    with pytest.raises(ValueError, match="^predicates: 'bad' raised ValueError: assignment destination is read-only"):
        pm.from_predicates(domain, {"b1": spy, "bad": mutate})


def test_predicate_returning_a_scalar_is_a_constant_query_but_one_entry_is_refused():
    domain = Domain(["a"], [3])
    np.testing.assert_array_equal(pm.from_predicates(domain, [lambda x: 0.5]).toarray(), [[0.5] * 3])
    with pytest.raises(ValueError, match=r"'q0' returned shape \(1,\)"):
        pm.from_predicates(domain, [lambda x: np.ones(1)])


def test_from_predicates_caps_the_codes_it_builds():
    domain = Domain([f"x{i}" for i in range(8)], [4] * 8)  # 65,536 elements, 8 attributes
    two = pm.from_predicates(domain, [lambda x: (x["x0"] == 1) & (x["x7"] == 2)], max_entries=2**17)
    assert two.toarray().sum() == 4**6
    with pytest.raises(ValueError,
                       match=r"^predicates: 'q0' raised ArgumentValueError: domain: the codes of 3 attributes"):
        pm.from_predicates(domain, [lambda x: (x["x0"] == 1) & (x["x1"] == 2) & (x["x2"] == 3)], max_entries=2**17)


def test_repeated_takes_one_row():
    np.testing.assert_array_equal(pm.repeated([[1, 0, 1]], 2).toarray(), [[1, 0, 1]] * 2)
    np.testing.assert_array_equal(pm.repeated(sp.csr_array(np.array([[0, 1.0]])), 2).toarray(), [[0, 1]] * 2)
    with pytest.raises(ValueError, match=r"^query: expected one non-empty row of m values, got shape \(2, 2\)"):
        pm.repeated(np.eye(2), 3)  # ravel() would have made it one query over 4 elements


def test_stack_refuses_different_domains_of_one_size():
    with pytest.raises(ValueError, match="^workloads: their domains differ"):
        pm.stack([pm.marginals(Domain(["a", "b"], [2, 3]), 1), pm.marginals(Domain(["x"], [6]), 1)])
    with pytest.raises(TypeError, match="single Workload"):
        pm.stack(pm.identity(3))


def test_labels_must_be_str():
    with pytest.raises(TypeError, match="^labels: expected a sequence of 2 str, got a str"):
        Workload(np.eye(2), labels="ab")
    with pytest.raises(TypeError, match="^labels: every label must be a str, got 1"):
        Workload(np.eye(2), labels=[1, 2])


def test_implicit_products_refuse_outputs_above_the_cap():
    with pytest.raises(ValueError, match=r"^labels: the labels of all_range\(1000000\).*DEFAULT_MAX_ENTRIES"):
        _ = pm.all_range(10**6, implicit=True).labels
    with pytest.raises(ValueError, match=r"^histogram: the answers of all_range\(20000\)"):
        pm.all_range(20_000, implicit=True).answer(np.ones(20_000))
    with pytest.raises(ValueError, match="^indices: "):
        pm.marginals(Domain(["a", "b"], [10**6, 10**6]), 2, implicit=True).columns(np.arange(4))
    with pytest.raises(ValueError, match=r"^max_entries: the dense matrix of identity\(100000\)"):
        pm.identity(10**5).toarray()
    assert pm.identity(3).toarray(max_entries=9).shape == (3, 3)


def test_implicit_callback_output_is_checked():
    wrong = Workload.implicit((2, 3), lambda v: v, lambda: np.eye(3))
    with pytest.raises(ValueError, match=r"^matvec of workload: returned 3 entries, expected 2"):
        wrong.answer(np.ones(3))


def test_complex_inputs_are_refused_not_truncated():
    import warnings

    w = Workload(np.ones((2, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call, name in [
            (lambda: Workload(np.eye(2) * 1j), "matrix"),
            (lambda: Workload(np.eye(2) + 0j), "matrix"),
            (lambda: w.answer(np.ones(3) + 0j), "histogram"),
            (lambda: w.answer(sp.csr_array(np.ones((1, 3)) * 1j)), "histogram"),
            (lambda: w.rmatvec(np.ones(2) * 1j), "values"),
        ]:
            with pytest.raises(TypeError, match=f"^{name}: expected real numbers"):
                call()


def test_few_large_attributes_count_without_the_pair_matrices(monkeypatch):
    """sum(sizes)^2 = 1.6e7 is above 4 k = 1.2e7: the 2-way tables are counted cell by cell."""
    domain = Domain(["a", "b"], [3000, 1000])
    rng = np.random.default_rng(0)
    records = np.column_stack([rng.integers(0, 3000, 500), rng.integers(0, 1000, 500)])

    def refuse(*args):
        raise AssertionError("the pair route was taken")

    monkeypatch.setattr("projmech.data._counting.pair_counts", refuse)
    answers = pm.marginals(domain, 2, implicit=True).answer_data(Dataset(records, domain))
    expected = np.bincount(records[:, 0] * 1000 + records[:, 1], minlength=3 * 10**6) / 500
    np.testing.assert_array_equal(answers, expected)


def test_answer_data_refuses_more_counts_than_the_cap():
    domain = Domain(["a", "b"], [10**5, 10**5])
    with pytest.raises(ValueError, match=r"^data: the 2-way marginal counts \(k=10,000,000,000\)"):
        pm.marginals(domain, 2, implicit=True).answer_data(Dataset([[0, 0]], domain))


# --- the largest distance between two columns (the replace-one sensitivity of the counts) ------

@pytest.mark.parametrize("k,m", [(3, 1), (4, 2), (5, 17), (7, 300)])
def test_max_column_distance_against_brute_force(k, m):
    from projmech.workloads import max_column_distance

    rng = np.random.default_rng(k * m)
    A = rng.standard_normal((k, m))
    expected = max((np.linalg.norm(A[:, u] - A[:, v]) for u in range(m) for v in range(m) if u != v), default=0.0)
    got = max_column_distance(A.T @ A, k)
    assert got >= expected  # an upper bound whatever the rounding...
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-6)  # ...tight to it


def test_column_distance_of_builders():
    # Marginals: two rows differing in every attribute differ in every table, sqrt(2 * tables).
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    assert pm.marginals(domain, 2).column_distance() == pytest.approx(math.sqrt(2 * 3), rel=1e-12)
    assert pm.marginals(domain, 2, implicit=True).column_distance() == pytest.approx(math.sqrt(6), rel=1e-12)
    assert pm.identity(5).column_distance() == pytest.approx(math.sqrt(2), rel=1e-12)
    # Prefix: columns 0 and m-1 differ in the first m-1 queries.
    assert pm.prefix(9).column_distance() == pytest.approx(math.sqrt(8), rel=1e-12)
    # The total: the same in every column, distance 0 up to the rounding margin.
    assert 0.0 <= pm.repeated(np.ones(4), 3).column_distance() <= 1e-6
    big = Domain([f"x{i}" for i in range(13)], [2] * 13)
    assert pm.marginals(big, 2, implicit=True).column_distance() is None  # 8192 > PAIRWISE_UNIVERSE


def test_column_distance_survives_cancellation_and_ignores_a_given_gram():
    """||F_u - F_v||^2 = G_uu + G_vv - 2 G_uv cancels: columns of norm 3e8 a distance 1 apart give
    0 in float64. The result must stay an upper bound; and a gram= closed form that contradicts
    the explicit matrix must not lower it (the matrix is used)."""
    F = np.array([[1e8, 1e8 + 1], [3e8, 3e8]])
    assert Workload(F).column_distance() >= 1.0
    lying = Workload(np.eye(3), gram=lambda: np.ones((3, 3)))
    assert lying.column_distance() == pytest.approx(math.sqrt(2), rel=1e-12)
    assert lying.count_sensitivity("replace-one") == pytest.approx(math.sqrt(2), rel=1e-12)


# ----------------------------------------------------------------------------- argument rules


DOMAIN_23 = Domain(["a", "b"], [2, 3])


@pytest.mark.parametrize(
    "call",
    [
        lambda: pm.identity(3, 100),
        lambda: pm.prefix(3, 100),
        lambda: pm.all_range(3, 100, False),
        lambda: pm.repeated([1, 0], 2, 100),
        lambda: pm.marginals(DOMAIN_23, 1, 100),
        lambda: pm.from_predicates(DOMAIN_23, [lambda x: 1], 100),
        lambda: pm.random_queries(2, 3, np.random.default_rng(0), 100),
        lambda: Workload(np.eye(2), None, None),
        lambda: Workload.implicit((2, 2), lambda v: v, lambda: np.eye(2), None),
        lambda: pm.workloads.as_query_matrix(np.eye(2), "F", True),
    ],
)
def test_builder_options_are_keyword_only(call):
    with pytest.raises(TypeError, match="positional"):
        call()


@pytest.mark.parametrize(
    "call, error, named",
    [
        # A float or a bool where a count goes is a TypeError, whatever the builder...
        (lambda: pm.identity(3.0), TypeError, "m"),
        (lambda: pm.prefix(True), TypeError, "m"),
        (lambda: pm.repeated([1, 0], 2.0), TypeError, "k"),
        (lambda: pm.marginals(DOMAIN_23, 1.0), TypeError, "way"),
        (lambda: pm.marginals(DOMAIN_23, 1, max_entries=1e9), TypeError, "max_entries"),
        (lambda: Workload.implicit((2.0, 2), lambda v: v, lambda: np.eye(2)), TypeError, "shape[0]"),
        (lambda: pm.identity(3).gram(max_entries=True), TypeError, "max_entries"),
        (lambda: pm.identity(3).toarray(1e9), TypeError, "max_entries"),
        # ...and 0 where a positive count goes a ValueError.
        (lambda: pm.identity(0), ValueError, "m"),
        (lambda: pm.marginals(DOMAIN_23, 0), ValueError, "way"),
        (lambda: pm.identity(3).gram(max_entries=0), ValueError, "max_entries"),
        (lambda: Workload.implicit((2, 0), lambda v: v, lambda: np.eye(2)), ValueError, "shape[1]"),
        # A bad number is a ValueError, a non-number a TypeError, for every real parameter.
        (lambda: Workload.implicit((2, 2), lambda v: v, lambda: np.eye(2), column_norm=0.0), ValueError,
         "column_norm"),
        (lambda: Workload.implicit((2, 2), lambda v: v, lambda: np.eye(2), column_norm=True), TypeError,
         "column_norm"),
        (lambda: Workload.implicit((2, 2), lambda v: v, lambda: np.eye(2), integer=1), TypeError, "integer"),
        (lambda: Workload(np.eye(2), name=3), TypeError, "name"),
        (lambda: Workload(np.eye(2), gram=np.eye(2)), TypeError, "gram"),
        (lambda: pm.identity(3).column_norm(3), ValueError, "ord"),
        (lambda: pm.identity(3).column_norm(True), TypeError, "ord"),
        (lambda: pm.workloads.column_norm(np.eye(2), "2"), TypeError, "ord"),
    ],
)
def test_workload_arguments_follow_one_rule(call, error, named):
    with pytest.raises(error, match=f"^{named}: ".replace("[", r"\[").replace("]", r"\]")):
        call()


def test_kernels_compute_the_public_products_without_checking():
    """The unchecked kernels give the same products as the public methods, for explicit and
    implicit workloads (what the solvers' inner loops call)."""
    rng = np.random.default_rng(1)
    explicit = pm.marginals(DOMAIN_23, 2)
    implicit = pm.marginals(DOMAIN_23, 2, implicit=True)
    dense = explicit.toarray()
    vector, values = rng.random(6), rng.random(explicit.num_queries)
    index = np.array([4, 0, 5], dtype=np.int64)
    for workload in (explicit, implicit, Workload(dense)):
        np.testing.assert_allclose(workload._matvec(vector), dense @ vector, rtol=1e-13)
        np.testing.assert_allclose(workload._rmatvec(values), dense.T @ values, rtol=1e-13)
        np.testing.assert_array_equal(workload._columns(index), dense[:, index])
        np.testing.assert_array_equal(workload._matvec(vector), workload.matvec(vector))
        np.testing.assert_array_equal(workload._rmatvec(values), workload.rmatvec(values))
        np.testing.assert_array_equal(workload._columns(index), workload.columns(index))


def test_public_products_check_their_argument_and_kernels_do_not():
    workload = pm.identity(3)
    with pytest.raises(ValueError, match="^values: "):
        workload.rmatvec([1.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="^histogram: "):
        workload.matvec([1.0, 2.0])
    # The kernel trusts its caller: NaN goes through as arithmetic does.
    assert np.isnan(workload._rmatvec(np.array([1.0, np.nan, 0.0]))[1])


def test_prefix_and_ranges_need_an_order_on_categories():
    """A prefix over a category list compares labels by the order the file listed them: refused
    unless the categories are declared ordered; identity and totals need no order."""
    unordered = pm.Domain.from_dict({"species": ["Adelie", "Chinstrap", "Gentoo"], "x": 3})
    ordered = pm.Domain.from_dict({"species": {"categories": ["Adelie", "Chinstrap", "Gentoo"], "ordered": True},
                                   "x": 3})
    for factor in (pm.workloads.prefix(3), pm.workloads.all_range(3)):
        with pytest.raises(ValueError, match=r"^factors: .* on 'species' compares its values by order"):
            pm.workloads.Kron([factor, pm.workloads.identity(3)], domain=unordered)
        assert pm.workloads.Kron([factor, pm.workloads.identity(3)],
                                 domain=ordered).num_queries == factor.num_queries * 3
    assert pm.workloads.Kron([pm.workloads.identity(3), pm.workloads.prefix(3)], domain=unordered).shape == (9, 9)


@pytest.mark.parametrize("size", [3, 85, 100])
@pytest.mark.parametrize("weight", [0.7, 1 / 0.0371, 1.0])
def test_a_weighted_identity_block_is_a_weighted_table(size, weight):
    """``c I`` inside a Kronecker product keeps its attribute with weight ``c``, dense or sparse,
    whatever the rounding of sums of its entries (0.7 I of size 85 was read as a general block,
    its off-diagonal sum rounding to a nonzero)."""
    from projmech.workloads import table_terms

    for block in (pm.Workload(weight * np.eye(size)), pm.Workload(sp.csr_array(weight * np.eye(size)))):
        terms = table_terms(pm.workloads.kron([block, pm.workloads.total(2)]))
        assert terms is not None and terms.is_marginal and terms.terms == [((0,), weight)]
    almost = np.eye(4)
    almost[0, 1] = 1e-300
    assert pm.Workload(almost)._scaled_identity() is None


def test_a_weighted_one_value_factor_is_a_weighted_identity():
    """A 1x1 factor is a total and a scaled identity at once: read as the identity, its entry a
    weight, so that tables weighted differently on a one-value attribute are one union of
    tables (the adaptive mechanism's measured tables were refused on such a domain)."""
    from projmech.workloads import table_terms

    w = pm.workloads
    union = w.stack([w.kron([pm.Workload(2.0 * np.eye(1)), w.total(3)]),
                     w.kron([pm.Workload(0.5 * np.eye(1)), pm.Workload(np.eye(3))]),
                     w.kron([w.total(1), pm.Workload(4.0 * np.eye(3))])])
    terms = table_terms(union)
    assert terms is not None and terms.is_marginal
    assert terms.terms == [((0,), 2.0), ((0, 1), 0.5), ((0, 1), 4.0)]
    # The terms' rows are the union's own rows.
    rows = np.vstack([weight * np.kron(np.eye(1), np.eye(3) if 1 in subset else np.ones((1, 3)))
                      for subset, weight in terms.terms])
    np.testing.assert_array_equal(rows, union.toarray())
