"""The cost model behind ``body="auto"`` and ``solver="auto"`` (projmech.bodies._cost)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from projmech import Domain, Workload, all_range, identity, marginals, prefix, project_to_hull, random_queries, stack
from projmech.bodies import COST_MODELS, CostModel, PowerLaw, WorkloadSize, choose_body, estimated_seconds
from projmech.bodies import _cost as cost
from projmech.bodies import _hull as hull


def _dense_rank(workload: Workload) -> int:
    return int(np.linalg.matrix_rank(workload.toarray()))


@pytest.mark.parametrize("sizes, ways", [((2, 3, 4), (2,)), ((3, 3, 2, 2), (3,)), ((2, 5, 3), (1, 2)),
                                         ((4, 2, 3), (0, 1)), ((2, 2, 2, 2, 2), (2,))])
def test_the_rank_of_a_marginal_workload_is_that_of_its_matrix(sizes, ways):
    domain = Domain([f"a{i}" for i in range(len(sizes))], sizes)
    workload = marginals(domain, ways=ways)
    size = WorkloadSize.of(workload)
    assert size.rank == _dense_rank(workload)
    # One product touches every stored entry: each element lies in one cell of each table.
    assert size.product_work == sp.csc_array(workload.matrix).nnz
    implicit = WorkloadSize.of(marginals(domain, ways=ways, implicit=True))
    assert (implicit.rank, implicit.product_work) == (size.rank, size.product_work)


def test_other_workloads_are_bounded_by_their_shape():
    rng = np.random.default_rng(0)
    dense = Workload(rng.normal(size=(5, 9)))
    assert WorkloadSize.of(dense) == WorkloadSize(5, 9, 45.0, 5, None)
    tall = prefix(16)
    assert WorkloadSize.of(tall).rank == 16 == _dense_rank(tall)
    queries = random_queries(30, 12, rng)
    size = WorkloadSize.of(queries)
    assert size.rank == 12 and size.product_work == 30 * 12  # stored dense
    sparse = Workload(sp.random(40, 50, density=0.1, random_state=1, format="csr"))
    assert WorkloadSize.of(sparse).product_work == sparse.matrix.nnz
    assert WorkloadSize.of(all_range(8, implicit=True)).product_work == 36 * 8  # k m: no entries stored


def test_the_moment_dimension_is_that_of_the_relaxation():
    binary = marginals(Domain(["a", "b", "c"], [2, 2, 2]), 2)
    categorical = marginals(Domain(["a", "b", "c"], [2, 3, 4]), 2)
    assert WorkloadSize.of(binary).moment_dimension == 3
    assert WorkloadSize.of(categorical).moment_dimension == 9
    assert WorkloadSize.of(marginals(Domain(["a", "b", "c"], [2, 3, 4]), 3)).moment_dimension is None
    assert WorkloadSize.of(identity(8)).moment_dimension is None
    assert estimated_seconds("relaxed", WorkloadSize.of(identity(8))) == math.inf


def test_a_large_closure_is_bounded_not_summed(monkeypatch):
    monkeypatch.setattr(cost, "_MAX_CLOSURE", 4)
    workload = marginals(Domain(["a", "b", "c"], [2, 3, 4]), 2)
    assert WorkloadSize.of(workload).rank == min(workload.shape)


def test_estimates_follow_the_model_and_grow_with_size():
    model = CostModel(0.5, (PowerLaw("rank", 2.0, 1.5), PowerLaw("universe", 1e-3, 1.0)))
    size = WorkloadSize(10, 100, 1e3, 4, None)
    assert model(size) == pytest.approx(0.5 + 2.0 * 4**1.5 + 1e-3 * 100)
    with pytest.raises(ValueError, match="choice: expected one of"):
        estimated_seconds("ECOS", size)
    small, large = WorkloadSize(50, 200, 1e4, 50, 8), WorkloadSize(500, 4096, 1e6, 500, 80)
    for choice in COST_MODELS:
        assert 0 < estimated_seconds(choice, small) < estimated_seconds(choice, large) < math.inf


def test_auto_tries_the_solvers_in_the_order_of_their_estimates(monkeypatch):
    flat = {name: CostModel(seconds, ()) for name, seconds in
            (("fast", 3.0), ("CLARABEL", 1.0), ("SCS", 2.0), ("relaxed", 1.0))}
    monkeypatch.setattr(cost, "COST_MODELS", flat)
    explicit = marginals(Domain(["a", "b"], [2, 3]), 2)
    assert hull.auto_solver_order(explicit) == ["CLARABEL", "SCS", "fast", "ECOS", "OSQP"]
    # An implicit workload has no matrix for CVXPY: the active-set solver alone.
    assert hull.auto_solver_order(marginals(Domain(["a", "b"], [2, 3]), 2, implicit=True)) == ["fast"]
    flat["fast"] = CostModel(0.5, ())
    assert hull.auto_solver_order(explicit)[0] == "fast"
    assert project_to_hull(explicit, explicit.answer(np.full(6, 1 / 6)) + 0.1).stats.solver == "fast"


def test_auto_body_keeps_the_hull_unless_it_is_estimated_much_slower(monkeypatch):
    workload = marginals(Domain(["a", "b", "c"], [2, 3, 4]), 2)
    models = {name: CostModel(1.0, ()) for name in COST_MODELS}
    monkeypatch.setattr(cost, "COST_MODELS", models)
    assert choose_body(workload).name == "hull"
    models["fast"] = models["CLARABEL"] = models["SCS"] = CostModel(cost.HULL_PREFERENCE * 1.01, ())
    assert choose_body(workload).name == "relaxed"
    # A solver that one body alone runs decides; so does a workload that one body alone takes.
    assert choose_body(workload, solver="fast").name == "hull"
    assert choose_body(workload, solver="SCS").name == "hull"
    assert choose_body(workload, solver="admm").name == "relaxed"
    assert choose_body(marginals(Domain(["a", "b", "c"], [2, 3, 4]), 3)).name == "hull"
    assert choose_body(stack([identity(24), identity(24)])).name == "hull"
    # The model covers the ADMM, not the local relaxation's SCS: that keeps the hull.
    assert choose_body(workload, relaxation="local").name == "hull"


def test_the_hull_counts_only_the_solvers_the_workload_allows(monkeypatch):
    """An implicit workload has no matrix for CVXPY: its hull is the active-set solver's time."""
    models = {"fast": CostModel(5.0, ()), "CLARABEL": CostModel(1.0, ()), "SCS": CostModel(1.0, ()),
              "relaxed": CostModel(1.0, ())}
    monkeypatch.setattr(cost, "COST_MODELS", models)
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    assert choose_body(marginals(domain, 2)).name == "hull"
    assert choose_body(marginals(domain, 2, implicit=True)).name == "relaxed"


def test_sizes_beyond_floating_point_have_no_finite_estimate():
    huge = Domain([f"x{i}" for i in range(1100)], [2] * 1100)  # 2^1100 elements
    size = WorkloadSize.of(marginals(huge, 1, implicit=True))
    assert size.product_work == math.inf and size.rank == 1101
    assert estimated_seconds("fast", size) == math.inf
    wide = WorkloadSize.of(marginals(Domain([f"x{i}" for i in range(900)], [2] * 900), 1, implicit=True))
    assert math.isfinite(wide.product_work) and estimated_seconds("fast", wide) == math.inf
    assert hull.auto_solver_order(marginals(huge, 1, implicit=True)) == ["fast"]


def test_the_fitted_model_picks_as_the_benchmark_measured():
    """The decisions ``benchmarks/solvers.py --parts auto`` measured (second run, the table of
    benchmarks/README.md), by the fitted coefficients: the relaxation where the hull took 10x its
    time, the hull where the relaxation was 14x slower, the active-set solver where CVXPY took
    37x longer or more."""
    categorical = Domain([f"a{i}" for i in range(6)], [2, 2, 4, 5, 16, 32])
    assert choose_body(marginals(categorical, 2, implicit=True)).name == "relaxed"  # hull 1.5 s, L 0.13 s
    binary = Domain([f"x{i}" for i in range(14)], [2] * 14)
    assert choose_body(marginals(binary, 2, implicit=True)).name == "relaxed"  # hull 0.15 s, L 0.015 s
    two = Domain(["a", "b"], [300, 300])
    assert choose_body(marginals(two, 2)).name == "hull"  # Clarabel 1.3 s, L 18 s
    assert hull.auto_solver_order(marginals(two, 2))[0] == "CLARABEL"  # fast 3.0 s
    assert hull.auto_solver_order(marginals(categorical, 3))[0] == "fast"  # fast 0.85 s, SCS 55 s
    assert hull.auto_solver_order(prefix(2048))[0] == "fast"  # fast 0.31 s, CVXPY 11.6 s
