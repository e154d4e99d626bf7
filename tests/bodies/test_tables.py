"""The tables body: K_Q of a workload whose tables are disjoint, projected table by table.

Checked against the hull's projection over the whole universe on tiny domains (the same convex
body, so the same point), for its refusals, and end to end on a domain of 2.0e12 cells, where no
universe-sized array may be built."""

from __future__ import annotations

import numpy as np
import pytest

import projmech as pm
from oracles import reference_projection
from projmech.bodies import project_to_tables, table_groups
from projmech.bodies._body import Tables, choose_body
from projmech.workloads import kron, total

DOMAIN = pm.Domain(["a", "b", "c"], [2, 3, 2])


def _workloads():
    return {
        "1-way": pm.marginals(DOMAIN, way=1),
        "0- and 1-way": pm.marginals(DOMAIN, ways=(0, 1)),
        "prefix on b": kron([total(2), pm.prefix(3), total(2)]),
        "a x c table": kron([pm.identity(2), total(3), pm.identity(2)]),
    }


@pytest.mark.solver
@pytest.mark.parametrize("name", list(_workloads()))
def test_the_tables_projection_is_the_hull_projection(name):
    """Same body, same point: against the projection onto the hull over the 12-cell universe (a
    direct CVXPY model, its bound certified by duality)."""
    workload = _workloads()[name]
    rng = np.random.default_rng(3)
    truth = workload.answer(rng.dirichlet(np.ones(DOMAIN.size)))
    y = truth + rng.normal(0.0, 0.3, size=truth.size)
    tables = project_to_tables(workload, y, tol=1e-12)
    _, reference = reference_projection(workload.toarray(), y)
    np.testing.assert_allclose(tables.answers, reference, atol=1e-6)
    assert tables.distance == pytest.approx(np.linalg.norm(reference - y), abs=1e-6)
    assert tables.stats.tolerance_met and tables.stats.gap <= tables.stats.tolerance
    assert tables.witness is None and tables.summary()["body"] == "tables"


def test_overlapping_or_unstructured_tables_are_refused_with_the_reason():
    assert "overlap" in table_groups(pm.marginals(DOMAIN, way=2))
    assert "not a union of tables" in table_groups(pm.Workload(np.ones((2, DOMAIN.size)), domain=DOMAIN))
    with pytest.raises(ValueError, match="^workload: the tables of .* overlap"):
        project_to_tables(pm.marginals(DOMAIN, way=2), np.zeros(16))
    assert Tables().blocker(pm.marginals(DOMAIN, way=2)).startswith("'tables' cannot take it")
    with pytest.raises(ValueError, match="^body: 'tables' cannot take it"):
        choose_body(pm.marginals(DOMAIN, way=2), "tables")


@pytest.mark.solver
def test_a_huge_domain_is_projected_over_its_tables():
    """All 1-way marginals of 10 attributes of 17 values (2.0e12 cells): body 'auto' finds no
    other body (it refused before), the tables body answers consistent, non-negative tables that
    are never farther from the truth than the noisy answers (the truth lies in K_Q)."""
    domain = pm.Domain([f"p{i}" for i in range(10)], [17] * 10)
    data = pm.Dataset(np.random.default_rng(0).integers(0, 17, size=(300, 10)), domain)
    workload = pm.marginals(domain, way=1, implicit=True)
    mechanism = pm.ProjectionMechanism(workload, pm.ZCDP(0.05), noise="continuous")
    assert isinstance(mechanism.body, Tables)
    release = mechanism.release(data, rng=0)
    tables = release.answers.reshape(10, 17)
    np.testing.assert_allclose(tables.sum(axis=1), 1.0, atol=1e-9)
    assert tables.min() >= -1e-12
    truth = workload.answer_data(data)
    assert np.linalg.norm(release.answers - truth) <= np.linalg.norm(release.noisy_answers - truth) + 1e-12
    assert release.summary()["solver"]["body"] == "tables"


@pytest.mark.solver
def test_synthetic_rows_from_disjoint_tables_keep_each_table_to_the_rounding():
    """Rows from the tables body: each table's counts within 1 of n w (as a K_Q witness is
    rounded), so the rows' 1-way answers are within 1/n of the projected ones, on 2.0e12 cells;
    an attribute no query reads (prefix on one attribute) takes uniform values."""
    domain = pm.Domain([f"p{i}" for i in range(10)], [17] * 10)
    data = pm.Dataset(np.random.default_rng(1).integers(0, 17, size=(400, 10)), domain)
    workload = pm.marginals(domain, way=1, implicit=True)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(0.05), noise="continuous").release(data, rng=2)
    rows = pm.synthetic_data(domain, release.projection, 1000, np.random.default_rng(3), workload=workload)
    assert rows.method == "tables" and rows.data.n == 1000
    assert rows.marginal_max_error <= 1 / 1000 + 1e-12
    np.testing.assert_allclose(workload.answer_data(rows.data), release.answers, atol=1 / 1000 + 1e-12)
    prefix = kron([pm.prefix(17)] + [total(17)] * 9)
    projected = pm.ProjectionMechanism(prefix, pm.ZCDP(0.05), noise="continuous").release(data, rng=2).projection
    drawn = pm.synthetic_data(domain, projected, 2000, np.random.default_rng(4), workload=prefix)
    assert drawn.marginal_max_error <= 1 / 2000 + 1e-12
    assert len(np.unique(drawn.data.records[:, 5])) == 17  # unread: uniform over its 17 values
    # Without the workload: the result's own queries over its tables answer the same rows.
    own = pm.synthetic_data(domain, projected, 2000, np.random.default_rng(4))
    np.testing.assert_array_equal(own.data.records, drawn.data.records)
    assert own.marginal_max_error == pytest.approx(drawn.marginal_max_error, abs=1e-15)
    with pytest.raises(ValueError, match="^workload: .* is not the workload this result projected"):
        pm.synthetic_data(domain, projected, 10, np.random.default_rng(0), workload=workload)


@pytest.mark.solver
def test_synthetic_rows_refuse_another_workload_of_the_same_tables():
    """prefix and identity on one attribute have the same table and 17 queries each: the witness's
    answers tell them apart."""
    domain = pm.Domain([f"p{i}" for i in range(3)], [17] * 3)
    data = pm.Dataset(np.random.default_rng(1).integers(0, 17, size=(200, 3)), domain)
    prefix = kron([pm.prefix(17), total(17), total(17)])
    result = project_to_tables(prefix, prefix.answer_data(data) + 0.01)
    with pytest.raises(ValueError, match="its tables' witnesses give other answers"):
        pm.synthetic_data(domain, result, 10, np.random.default_rng(0), workload=kron([pm.identity(17), total(17),
                                                                                       total(17)]))


def test_table_matrices_are_sparse_built_once_and_sized_before_they_are_built():
    """The full table of 2048 x 1024 cells: its query matrix stores 2^21 entries (sparse; dense it
    would hold 2^42), counted from the blocks before anything is built, built once and shared by
    the body's memory model and projection; an implicit block without columns is a reason, not a
    crash."""
    workload = kron([pm.identity(2048), pm.identity(1024)])
    groups = table_groups(workload)
    assert groups.stored_entries == (2**21,) and table_groups(workload) is groups
    matrix = groups.matrix(0)
    assert matrix.nnz == 2**21 and groups.matrix(0) is matrix  # above DENSE_TABLE_ENTRIES: sparse
    assert isinstance(table_groups(pm.marginals(DOMAIN, way=1)).matrix(1), np.ndarray)  # 3 x 3: dense
    implicit = kron([pm.Workload.implicit((3, 3), np.cumsum, lambda: np.eye(3)), total(2)])
    assert table_groups(implicit) == "the block workload of attribute 0 is implicit without columns"
