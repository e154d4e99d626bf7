"""The local polytope of marginal tables (``body="local"``): against a direct CVXPY model, the
hull on acyclic tables, brute-force consistency checks, and the refusals."""

from __future__ import annotations

import dataclasses
import itertools
import tracemalloc

import cvxpy as cp
import numpy as np
import pytest

import projmech as pm
from oracles import clarabel_solve, marginal_matrix, marginal_tables_workload
from projmech.bodies import LocalError, local_tables, project_to_local
from projmech.bodies import _local as local_module
from projmech.bodies import _local_layout as local_layout
from projmech.bodies._body import Local, choose_body
from projmech.tables import is_acyclic
from projmech.workloads import identity, kron, stack, total


def _cvxpy_local(workload, y):
    """The projection onto the local polytope as a CVXPY model written from the definition: one
    non-negative variable per table summing to 1, every two tables agreeing on the marginal of
    their shared attributes, the objective over the workload's own rows (its explicit matrix
    restricted to each term). Returns the optimal value of (1/2)||answers - y||^2."""
    model = local_tables(workload)
    assert not isinstance(model, str)
    tables = [cp.Variable(int(np.prod(shape)), nonneg=True) for shape in model.shapes]
    constraints = [cp.sum(table) == 1 for table in tables]
    for first, second in itertools.combinations(range(len(tables)), 2):
        shared = sorted(set(model.attributes[first]) & set(model.attributes[second]))
        if shared:
            constraints.append(
                marginal_matrix(model.shapes[first], model.attributes[first], shared) @ tables[first]
                == marginal_matrix(model.shapes[second], model.attributes[second], shared) @ tables[second])
    residuals = []
    for table, row, weight in model.terms:
        size = int(np.prod(model.shapes[table]))
        residuals.append(weight * tables[table] - y[row:row + size])
    constant = float(np.sum((y[model.constant_rows] - model.constants) ** 2))
    problem = cp.Problem(cp.Minimize(0.5 * sum(cp.sum_squares(r) for r in residuals) + 0.5 * constant), constraints)
    accuracy = clarabel_solve(problem)
    # The optimum and how far from it Clarabel's value may lie: its reported relative accuracy.
    return problem.value, accuracy * max(problem.value, 1.0)


CASES = {
    "2-way, 3 attributes (cyclic)": (lambda: pm.marginals(pm.Domain(list("abc"), [2, 3, 2]), 2)),
    "1- and 2-way with the total": (lambda: pm.marginals(pm.Domain(list("abcd"), [2, 2, 3, 2]), ways=(0, 1, 2))),
    "3-way, 4 attributes": (lambda: pm.marginals(pm.Domain(list("abcd"), [3, 2, 2, 2]), 3)),
    "weighted chain": (lambda: marginal_tables_workload([2, 3, 2, 2], [(0, 1), (1, 2), (2, 3)], [2.0, 0.5, 1.0])),
    "nested tables": (lambda: marginal_tables_workload([2, 3, 2], [(0, 1, 2), (0, 1), (2,)], [1.0, 3.0, 1.0])),
}


@pytest.mark.solver
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_projection_matches_a_direct_cvxpy_model_and_its_certificate_holds(name):
    workload = CASES[name]()
    rng = np.random.default_rng(len(name))
    dense = workload.toarray()
    y = dense @ rng.dirichlet(np.ones(dense.shape[1])) + rng.normal(0.0, 0.2, workload.num_queries)
    result = project_to_local(workload, y, tol=1e-10)
    value = 0.5 * float(np.sum((result.answers - y) ** 2))
    optimum, room = _cvxpy_local(workload, y)
    assert result.stats.tolerance_met and result.stats.gap <= 1e-10 * max(value, 1.0)
    # The released point is feasible, so it cannot beat the optimum beyond the oracle's accuracy,
    # and its certified gap bounds how far above it lies: never optimistic.
    assert value >= optimum - max(room, 1e-7)
    assert value - optimum <= result.stats.gap + max(room, 1e-7)


def _independent_inconsistency(result, workload):
    """The largest disagreement of two released tables on their shared attributes, or of a table's
    sum from 1, by explicit marginalization matrices."""
    model = local_tables(workload)
    worst = max(abs(result.marginal(table).sum() - 1.0) for table in result.tables)
    for first, second in itertools.combinations(result.tables, 2):
        shared = sorted(set(first) & set(second))
        if shared:
            one = marginal_matrix(model.shapes[model.attributes.index(first)], first,
                                   shared) @ result.marginal(first).ravel()
            two = marginal_matrix(model.shapes[model.attributes.index(second)], second,
                                   shared) @ result.marginal(second).ravel()
            worst = max(worst, float(np.max(np.abs(one - two))))
    return worst


def test_the_released_tables_are_consistent_non_negative_and_give_the_answers():
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(5)], [2, 3, 2, 4, 2]), 3)
    rng = np.random.default_rng(3)
    y = workload.toarray() @ rng.dirichlet(np.ones(workload.universe_size)) + rng.normal(0, 0.05, workload.num_queries)
    result = project_to_local(workload, y, noise_scale=0.05)
    assert result.stats.tolerance_met and not result.exact
    assert _independent_inconsistency(result, workload) <= 1e-12
    assert result.inconsistency <= 1e-12
    assert min(result.marginal(table).min() for table in result.tables) >= 0.0
    rows = np.concatenate([result.marginal(table).ravel() for table in result.tables])
    np.testing.assert_array_equal(result.answers, rows)  # 3-way tables, one term each, in order
    assert result.summary()["body"] == "local" and result.summary()["exact"] is False
    with pytest.raises(ValueError, match="attributes"):
        result.marginal((0, 1))



def test_cells_on_attributes_are_summed_from_the_smallest_table_holding_them():
    workload = marginal_tables_workload([2, 3, 2, 2], [(0, 1, 2), (2, 3), (1, 3)])
    rng = np.random.default_rng(4)
    y = workload.toarray() @ rng.dirichlet(np.ones(workload.universe_size)) + rng.normal(0, 0.05, workload.num_queries)
    result = project_to_local(workload, y, noise_scale=0.05)
    assert sorted(result.tables) == [(0, 1, 2), (1, 3), (2, 3)]
    np.testing.assert_array_equal(result.cells_on([1, 3]), result.marginal((1, 3)))  # the table itself
    np.testing.assert_array_equal(result.cells_on((2,)), result.marginal((2, 3)).sum(axis=1))  # not the 3-way one
    np.testing.assert_array_equal(result.cells_on((1, 2)), result.marginal((0, 1, 2)).sum(axis=0))
    assert result.cells_on(()).sum() == pytest.approx(1.0)
    assert result.cells_on((0, 3)) is None  # no table holds both
    result.cells_on((0, 1, 2))[...] = 7.0  # a copy: the result is unchanged
    assert result.marginal((0, 1, 2)).max() < 1.0
    with pytest.raises(TypeError, match="attributes"):
        result.cells_on(5)
    with pytest.raises(ValueError, match="attributes"):
        result.cells_on((3, 1))


def test_many_small_tables_project_alike_as_sparse_products_or_table_by_table(monkeypatch):
    """Twenty 3-way tables of eight attributes at a noise tolerance: the consistency projection as
    sparse products and table by table give certified points within the gaps of one another."""
    from projmech.bodies import _local_sparse as local_sparse

    sizes = [2, 3, 2, 4, 3, 2, 2, 3]
    tables = list(itertools.combinations(range(8), 3))[::3][:20]
    workload = marginal_tables_workload(sizes, tables)
    rng = np.random.default_rng(6)
    y = workload.toarray() @ rng.dirichlet(np.full(workload.universe_size, 0.3)) + rng.normal(0, 0.01,
                                                                                             workload.num_queries)
    results = {}
    for sparse in (True, False):
        monkeypatch.setattr(local_sparse, "SPARSE_MIN_TABLES", 1 if sparse else 10**9)
        built = []
        monkeypatch.setattr(local_sparse.SparseConsistency, "__init__", _recording(built))
        results[sparse] = project_to_local(workload, y, noise_scale=0.01)
        assert bool(built) is sparse
        assert results[sparse].stats.tolerance_met and results[sparse].inconsistency <= 1e-12
    room = np.sqrt(2 * results[True].stats.gap) + np.sqrt(2 * results[False].stats.gap)
    assert np.linalg.norm(results[True].answers - results[False].answers) <= room + 1e-12


def _recording(built):
    """SparseConsistency's constructor, noting each call in ``built``."""
    from projmech.bodies import _local_sparse as local_sparse

    original = local_sparse.SparseConsistency.__init__

    def init(self, model):
        built.append(model)
        original(self, model)

    return init

ACYCLIC = {
    "chain of 3-way tables": ([2, 2, 3, 2, 2], [(0, 1, 2), (1, 2, 3), (2, 3, 4)]),
    "star": ([3, 2, 2, 2], [(0, 1), (0, 2), (0, 3)]),
    "nested with a 1-way table": ([2, 3, 2], [(0, 1, 2), (1,)]),
}


@pytest.mark.solver
@pytest.mark.parametrize("name", sorted(ACYCLIC))
def test_on_acyclic_tables_the_projection_is_the_hull_projection(name):
    sizes, subsets = ACYCLIC[name]
    workload = marginal_tables_workload(sizes, subsets)
    rng = np.random.default_rng(len(name))
    y = workload.toarray() @ rng.dirichlet(np.ones(workload.universe_size)) + rng.normal(0, 0.2, workload.num_queries)
    result = project_to_local(workload, y, tol=1e-11)
    hull = pm.bodies.project_to_hull(workload, y, tol=1e-11)
    assert result.exact
    # Both certified: each is within sqrt(2 gap) of the one projection onto K_Q.
    bound = np.sqrt(2 * result.stats.gap) + np.sqrt(2 * hull.stats.gap) + 1e-9
    assert np.linalg.norm(result.answers - hull.answers) <= bound
    assert bound < 1e-4


@pytest.mark.solver
def test_on_cyclic_tables_the_local_polytope_is_a_strict_relaxation():
    # Three pairwise-consistent 2-way tables no distribution has: x = y, x = z, y != z.
    workload = pm.marginals(pm.Domain(list("abc"), [2, 2, 2]), 2)
    y = np.array([0.5, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0, 0.5, 0.5, 0])
    result = project_to_local(workload, y, tol=1e-10)
    hull = pm.bodies.project_to_hull(workload, y, tol=1e-10)
    assert not result.exact
    assert result.distance <= 1e-5  # the point is in the local polytope
    assert hull.distance > 0.4  # and far from K_Q (1/sqrt(3) by symmetry; 0.577 measured)


@pytest.mark.parametrize("subsets, acyclic", [
    ([(0, 1, 2), (1, 2, 3), (2, 3, 4)], True),
    ([(0, 1), (1, 2), (0, 2)], False),
    ([(0, 1), (1, 2), (2, 3), (0, 3)], False),
    ([(0, 1), (0, 2), (0, 3)], True),
    ([(0,), (1,), (2,)], True),
    ([(0, 1, 2), (0, 1), (2,)], True),
    ([(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)], False),
    ([(0, 1, 2), (0, 1), (1, 2), (0, 2)], True),  # the 2-way tables lie inside the 3-way one
])
def test_acyclicity_follows_the_graham_reduction(subsets, acyclic):
    assert is_acyclic(subsets) is acyclic


def test_workloads_without_marginal_tables_are_refused_with_the_reason():
    domain = pm.Domain(["a", "b", "c"], [4, 3, 2])
    ranged = pm.workloads.range_marginals(domain, 2, {"a": "prefix"})
    assert "not all identities" in local_tables(ranged)
    assert "not a union of tables" in local_tables(pm.Workload(np.eye(4)))
    with pytest.raises(ValueError, match="body: 'local' cannot take it"):
        choose_body(ranged, "local")
    with pytest.raises(ValueError, match="workload:"):
        project_to_local(pm.Workload(np.eye(4)), np.zeros(4))
    workload = pm.marginals(domain, 2)
    with pytest.raises(ValueError, match="y"):
        project_to_local(workload, np.zeros(3))
    with pytest.raises(ValueError, match="tol"):
        project_to_local(workload, np.zeros(workload.num_queries), tol=0.0)
    with pytest.raises(ValueError, match="solver"):
        Local(solver="SCS")


def test_too_many_cells_are_refused_before_anything_is_built(monkeypatch):
    monkeypatch.setattr(local_layout, "LOCAL_MAX_CELLS", 100)
    workload = pm.marginals(pm.Domain(["a", "b", "c"], [5, 5, 5]), 2)  # 75 cells: taken
    assert not isinstance(local_tables(workload), str)
    workload = pm.marginals(pm.Domain(["a", "b", "c", "d"], [5, 5, 5, 5]), 2)  # 150 cells
    assert "LOCAL_MAX_CELLS" in local_tables(workload)


def test_an_unfinished_projection_is_reported_never_returned():
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(5)], [3] * 5), 3)
    rng = np.random.default_rng(0)
    y = rng.normal(0, 0.3, workload.num_queries)
    with pytest.raises(LocalError, match="stopped after 1 iterations") as caught:
        project_to_local(workload, y, tol=1e-12, max_iterations=1)
    best = caught.value.best
    assert best.stats.status == pm.Status.ITERATION_LIMIT and not best.stats.tolerance_met
    assert best.inconsistency <= 1e-12  # the best point is feasible, only not certified


def test_auto_takes_the_local_polytope_where_no_other_body_fits_and_allocates_nothing_of_the_universe():
    # 12 attributes of 10 values: 10^12 elements; all 3-way tables, 220 of 1,000 cells.
    domain = pm.Domain([f"x{i}" for i in range(12)], [10] * 12)
    workload = pm.marginals(domain, 3, implicit=True)
    assert isinstance(choose_body(workload), Local)
    data = pm.Dataset(np.random.default_rng(0).integers(0, 10, size=(2_000, 12)), domain)
    mechanism = pm.ProjectionMechanism(workload, pm.ZCDP(1.0), noise="continuous")
    tracemalloc.start()
    release = mechanism.release(data, rng=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200e6  # the tables hold 220,000 cells; a universe-sized vector would be 8 TB
    assert release.projection.stats.tolerance_met and release.summary()["body"] == "local"
    truth = workload.answer_data(data)
    assert np.linalg.norm(release.answers - truth) < np.linalg.norm(release.noisy_answers - truth)


def test_the_memory_model_refuses_before_anything_is_allocated(monkeypatch):
    import projmech.bodies._memory as memory

    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(12)], [10] * 12), 3, implicit=True)
    model = local_tables(workload)
    needed = Local().memory(workload)
    assert needed == local_module.LOCAL_BYTES_PER_CELL * model.cells + 24.0 * workload.num_queries
    monkeypatch.setattr(memory, "available_memory", lambda: int(needed / memory.MEMORY_FRACTION) + 1_000_000)
    assert Local().memory_blocker(workload) is None
    monkeypatch.setattr(memory, "available_memory", lambda: int(needed / memory.MEMORY_FRACTION) - 1_000_000)
    assert "local polytope" in Local().memory_blocker(workload)
    with pytest.raises(ValueError, match="^body: 'auto' finds no tractable body"):
        choose_body(workload)


NOISY = {
    "2-way with a constant attribute, noise 50": (pm.marginals(pm.Domain(list("abc"), [2, 1, 3]), 2), 50.0, 0),
    "2-way, noise 50": (pm.marginals(pm.Domain(list("abcd"), [2, 2, 3, 2]), 2), 50.0, 0),
    "2-way with two constant attributes, noise 5": (pm.marginals(pm.Domain(list("abcd"), [2, 1, 3, 1]), 2), 5.0, 4),
    "0- to 2-way on 6 attributes, noise 20": (
        pm.marginals(pm.Domain([f"x{i}" for i in range(6)], [3, 2, 2, 5, 2, 3]), ways=(0, 1, 2)), 20.0, 2),
}


@pytest.mark.solver
@pytest.mark.parametrize("name", sorted(NOISY))
def test_answers_far_from_every_table_are_projected_and_certified(name):
    # Each of these stopped with LocalError before the L-BFGS guards: a curvature pair made of
    # rounding (a step of 1e17), a line search that gave up for good, and a linear piece of the
    # dual crawled at the shortest step.
    workload, sigma, seed = NOISY[name]
    y = np.random.default_rng(seed).normal(0.0, sigma, workload.num_queries)
    result = project_to_local(workload, y, noise_scale=sigma)
    assert result.stats.tolerance_met and result.inconsistency <= 1e-12
    value = 0.5 * float(np.sum((result.answers - y) ** 2))
    optimum, room = _cvxpy_local(workload, y)
    assert value - result.stats.gap <= optimum * (1 + 1e-7) + max(room, 1e-7)


@pytest.mark.solver
def test_the_lower_bound_is_never_optimistic_even_for_multipliers_rounding_cannot_hold():
    workload = pm.marginals(pm.Domain(list("abcd"), [2, 3, 2, 2]), 2)
    rng = np.random.default_rng(5)
    y = workload.toarray() @ rng.dirichlet(np.ones(workload.universe_size)) + rng.normal(0, 0.3, workload.num_queries)
    optimum, room = _cvxpy_local(workload, y)
    model = local_tables(workload)
    problem = local_module._Problem(model, y)
    for size in (1e10, 1e12, 1e14, 1e16):
        for _ in range(8):
            multipliers = rng.normal(0, 1.0, model.cells)
            along = problem.consistent(rng.normal(0, size, model.cells), np.ones(len(model.attributes)), 0.0)
            assert problem.lower_bound(multipliers + along) <= optimum + room


def test_degenerate_inputs_are_refused_with_the_reason():
    domain = pm.Domain(list("abc"), [2, 3, 2])
    zero = stack([kron([pm.Workload(0 * np.eye(2)), identity(3), total(2)]), pm.marginals(domain, 1)])
    assert "all have weight 0" in local_tables(zero)
    workload = pm.marginals(domain, 2)
    with pytest.raises(ValueError, match="^y: its squared norm overflows"):
        project_to_local(workload, np.full(workload.num_queries, 1e200))


#: Ten weighted measurements (sizes, attributes, sigma, values as float.hex) of an adaptive run
#: on which the dual L-BFGS's line search ping-ponged forever between two step lengths.
_PING_PONG = ((2, 3, 2, 3, 2, 2, 3), 0.03718489006818113, [
    ((0,), ['0x1.ee99ce4ca87ddp-2', '0x1.08940718670acp-1']),
    ((1,), ['0x1.d57bf7c87d955p-2', '0x1.e801468d175d3p-2', '0x1.29f9a8f2deb9cp-4']),
    ((2,), ['0x1.158fc653cb30ep-1', '0x1.0a262a6f6acfcp-1']),
    ((3,), ['0x1.04e3cb6a8a50ep-1', '0x1.9ee393f4005dap-2', '0x1.834ec71349f5ep-5']),
    ((4,), ['0x1.0e3ee559a3dccp-1', '0x1.cd597e42eef2bp-2']),
    ((5,), ['0x1.d5352c63a67c7p-2', '0x1.c9ee2a34a4661p-2']),
    ((6,), ['0x1.bbbcda6768e61p-2', '0x1.9289de6152e60p-2', '0x1.46b44c59aa8c9p-4']),
    ((2, 3), ['0x1.a48418057673ap-2', '0x1.cd00e2922dc80p-4', '0x1.ef2c70768a6c6p-4', '0x1.e765d3d2671dbp-4',
              '0x1.b00713321cffcp-2', '0x1.e86d69b10d535p-5']),
    ((0, 2), ['0x1.a7b3409b28908p-2', '0x1.9e573f2c753cfp-4', '0x1.cb0243f4df099p-3', '0x1.841b36efd6ac5p-2']),
    ((4, 5), ['0x1.f6d18f016e511p-2', '0x1.afc291dae0a00p-5', '0x1.272c1cdad39d2p-4', '0x1.8342f0e3ffa6cp-2']),
]
)


def test_line_search_never_ping_pongs_between_two_lengths():
    """After a halving the search no longer doubles: the case above used to loop forever at
    iteration 9 (a slope of -1e-26, Armijo's test decided by rounding); it now certifies in
    about 10 iterations. An alarm turns a regression into a failure instead of a hang."""
    import signal

    sizes, sigma, tables = _PING_PONG
    weight = 1.0 / sigma
    blocks, targets = [], []
    for attributes, values in tables:
        factors = [pm.Workload(weight * np.eye(size)) if a == attributes[0] else
                   (pm.Workload(np.eye(size)) if a in attributes else pm.workloads.total(size))
                   for a, size in enumerate(sizes)]
        blocks.append(pm.workloads.kron(factors))
        targets.append(weight * np.array([float.fromhex(v) for v in values]))

    def hang(signum, frame):
        raise TimeoutError("the dual L-BFGS did not finish in 30 s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(30)
    try:
        result = project_to_local(pm.stack(blocks), np.concatenate(targets), noise_scale=1.0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert result.stats.tolerance_met and result.stats.iterations <= 100


def _consistent_directions(model):
    """An orthonormal basis of the consistent tables summing to 0 (every two tables agreeing on
    their shared attributes), from explicit marginalization matrices."""
    starts = np.concatenate([[0], np.cumsum([int(np.prod(shape)) for shape in model.shapes])])
    rows = []
    for index in range(len(model.shapes)):
        row = np.zeros(starts[-1])
        row[starts[index]:starts[index + 1]] = 1.0
        rows.append(row[None, :])
    for first, second in itertools.combinations(range(len(model.shapes)), 2):
        shared = sorted(set(model.attributes[first]) & set(model.attributes[second]))
        if shared:
            one = marginal_matrix(model.shapes[first], model.attributes[first], shared)
            two = marginal_matrix(model.shapes[second], model.attributes[second], shared)
            block = np.zeros((one.shape[0], starts[-1]))
            block[:, starts[first]:starts[first + 1]] = one
            block[:, starts[second]:starts[second + 1]] = -two
            rows.append(block)
    constraints = np.vstack(rows)
    _, singular, right = np.linalg.svd(constraints)
    rank = int(np.sum(singular > 1e-10 * singular[0]))
    return right[rank:].T


@pytest.mark.solver
def test_a_start_with_a_part_along_the_consistent_tables_is_projected_before_the_dual_iterations():
    """The dual's function is evaluated at its multipliers as they are, so they must have no part
    along the consistent directions (the gradients have none): a start's multipliers with such a
    part (here planted) are projected first, and the result still matches CVXPY."""
    rng = np.random.default_rng(5)
    workload = pm.marginals(pm.Domain(list("abcd"), [3, 2, 2, 2]), 3)
    y = workload.toarray() @ rng.dirichlet(np.ones(24)) + rng.normal(0, 0.2, workload.num_queries)
    model = local_tables(workload)
    basis = _consistent_directions(model)
    earlier = project_to_local(workload, y + rng.normal(0, 0.05, y.size), tol=1e-10)
    assert np.linalg.norm(basis.T @ earlier.multipliers) <= 1e-10 * np.linalg.norm(earlier.multipliers)
    planted = dataclasses.replace(earlier, multipliers=earlier.multipliers + basis @ rng.normal(0, 1.0, basis.shape[1]))
    result = project_to_local(workload, y, tol=1e-8, start=planted)  # a tolerance of the unprojected evaluations
    assert np.linalg.norm(basis.T @ result.multipliers) <= 1e-10 * np.linalg.norm(result.multipliers)
    optimum, room = _cvxpy_local(workload, y)
    value = 0.5 * float(np.sum((result.answers - y) ** 2))
    assert result.stats.tolerance_met and abs(value - optimum) <= result.stats.gap + max(room, 1e-7)


def test_the_shared_sets_are_those_two_tables_hold():
    """The layout's shared sets, and those inside each table's plan, against their definition: every
    subset of the attributes counted over the tables by brute force, on random families: many small
    tables (the subsets counted) and one wide table beside many one-way ones (the pairs'
    intersections taken)."""
    rng = np.random.default_rng(6)
    families = [[tuple(sorted(rng.choice(9, size=int(rng.integers(1, 4)), replace=False).tolist()))
                 for _ in range(int(rng.integers(2, 30)))] for _ in range(30)]
    families += [[tuple(range(12))] + [(a,) for a in range(12)], [tuple(range(10)), tuple(range(5, 15)), (3,)]]
    counted = 0
    for tables in families:
        tables = sorted(set(tables))
        universe = sorted({a for table in tables for a in table})
        expected = {subset for size in range(1, len(universe) + 1) for subset in itertools.combinations(universe, size)
                    if sum(set(subset) <= set(table) for table in tables) > 1}
        assert local_layout._shared_sets(tables) == expected, tables
        for table in tables:  # each table's plan takes the shared sets inside it, looked up or scanned
            plan = local_layout._TablePlan.of(table, (2,) * len(table), expected)
            assert set(plan.subsets) == {subset for subset in expected if set(subset) <= set(table)}
        held = {a: sum(a in table for table in tables) for a in universe}
        counted += sum(2 ** sum(held[a] > 1 for a in table) for table in tables) <= len(tables) ** 2
    assert 0 < counted < len(families)  # both ways taken
