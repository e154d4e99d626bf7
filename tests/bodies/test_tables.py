"""The tables body: K_Q of a workload whose tables are disjoint, projected table by table.

Checked against the hull's projection over the whole universe on tiny domains (the same convex
body, so the same point), for its refusals, and end to end on a domain of 2.0e12 cells, where no
universe-sized array may be built."""

from __future__ import annotations

import numpy as np
import pytest

import projmech as pm
from projmech.bodies.body import Tables, choose_body
from projmech.bodies.tables import project_to_tables, table_groups
from projmech.workloads import kron, total

DOMAIN = pm.Domain(["a", "b", "c"], [2, 3, 2])


def _workloads():
    return {
        "1-way": pm.marginals(DOMAIN, way=1),
        "0- and 1-way": pm.marginals(DOMAIN, ways=(0, 1)),
        "prefix on b": kron([total(2), pm.prefix(3), total(2)]),
        "a x c table": kron([pm.identity(2), total(3), pm.identity(2)]),
    }


@pytest.mark.parametrize("name", list(_workloads()))
def test_the_tables_projection_is_the_hull_projection(name):
    """Same body, same point: against project_to_hull over the 12-cell universe, tightly solved."""
    workload = _workloads()[name]
    rng = np.random.default_rng(3)
    truth = workload.answer(rng.dirichlet(np.ones(DOMAIN.size)))
    y = truth + rng.normal(0.0, 0.3, size=truth.size)
    tables = project_to_tables(workload, y, tol=1e-12)
    reference = pm.project_to_hull(workload.toarray(), y, solver="CLARABEL", tol=1e-10)
    np.testing.assert_allclose(tables.answers, reference.answers, atol=1e-6)
    assert tables.distance == pytest.approx(reference.distance, abs=1e-6)
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
