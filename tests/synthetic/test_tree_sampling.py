"""Synthetic rows from a projection onto the local polytope: junction-tree sampling of the tables,
checked against counts of the rows, the junction-tree distribution over the whole universe, the
running-intersection property of the order the tables are drawn in, and the refusals."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

import projmech as pm
from oracles import marginal_tables_workload
from projmech.bodies import project_to_local
from projmech.synthetic import _tree_sampling as tree_sampling
from projmech.synthetic._marginal_rows import search_table_rows
from projmech.tables import JunctionTree, junction_order


def _release(sizes, subsets, seed, concentration=0.3, noise=0.05):
    """The domain, workload and projection onto the local polytope of noisy answers of a skewed
    distribution (so that the tables are far from independent)."""
    domain = pm.Domain([f"x{i}" for i in range(len(sizes))], sizes)
    workload = marginal_tables_workload(sizes, subsets)
    rng = np.random.default_rng(seed)
    truth = workload.toarray() @ rng.dirichlet(np.full(domain.size, concentration))
    result = project_to_local(workload, truth + rng.normal(0.0, noise, truth.size), tol=1e-10)
    return domain, workload, result


def _counts(rows, sizes, attributes):
    """The table of counts of ``rows`` on ``attributes``, counted one row at a time."""
    table = np.zeros([sizes[a] for a in attributes])
    for row in rows:
        table[tuple(row[list(attributes)])] += 1
    return table


def _conditional_bound(tables, sizes, parent_of, root):
    """A bound on ``|count - n mu|`` per cell of each table drawn along a tree: 1 at the root (its
    cells rounded to within 1 of ``n mu``); for a child, the error on separator value ``s`` of the
    parent (at most its cells with that value times its own bound) passes on scaled by
    ``mu(r | s) <= 1``, plus 1 for rounding the child's counts given ``s``."""
    bound = {root: 1.0}
    pending = [t for t in tables if t != root]
    while pending:
        for child in list(pending):
            parent = parent_of[child]
            if parent in bound:
                separator = set(child) & set(parent)
                per_value = math.prod(sizes[a] for a in parent if a not in separator)
                bound[child] = per_value * bound[parent] + 1.0
                pending.remove(child)
    return bound


CHAIN_SIZES = [2, 3, 2, 3, 2]
CHAIN = [(0, 1, 2), (1, 2, 3), (2, 3, 4)]


def test_rows_from_an_acyclic_chain_reproduce_its_tables_up_to_the_rounding_of_counts():
    """The root (the largest table, (1, 2, 3): 18 cells) has every count within 1 of n mu; each
    child's counts given a separator value s are within 1 of m_s mu(r | s), m_s the rows having
    s; and every table's counts are within the bound this rounding implies along the chain."""
    domain, workload, result = _release(CHAIN_SIZES, CHAIN, seed=1)
    assert result.exact and result.stats.tolerance_met
    n = 20_000
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(2), workload=workload)
    rows = synthetic.data.records
    assert rows.shape == (n, 5) and synthetic.method == "local" and synthetic.repair == 0.0
    counts = {t: _counts(rows, CHAIN_SIZES, t) for t in CHAIN}
    root = (1, 2, 3)
    assert np.all(np.abs(counts[root] - n * result.marginal(root)) <= 1.0 + 1e-9)
    for child, separator_axes in (((0, 1, 2), (1, 2)), ((2, 3, 4), (0, 1))):
        mu = result.marginal(child)
        other = tuple(axis for axis in range(3) if axis not in separator_axes)
        members = counts[child].sum(axis=other, keepdims=True)  # m_s, from the rows themselves
        conditional = mu / mu.sum(axis=other, keepdims=True)
        assert np.all(np.abs(counts[child] - members * conditional) <= 1.0 + 1e-9)
    bound = _conditional_bound(CHAIN, CHAIN_SIZES, {(0, 1, 2): root, (2, 3, 4): root}, root)
    assert bound == {root: 1.0, (0, 1, 2): 4.0, (2, 3, 4): 4.0}
    for table in CHAIN:
        error = np.abs(counts[table] / n - result.marginal(table))
        assert error.max() <= bound[table] / n + 1e-12, table
    # Rounding, not sampling: n = 20,000 draws would be off by ~1/sqrt(n) = 7e-3 somewhere.
    difference = workload.toarray() @ (np.bincount(np.ravel_multi_index(rows.T, domain.sizes),
                                                   minlength=domain.size) / n) - result.answers
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9, abs=1e-15)
    assert synthetic.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference ** 2)), rel=1e-9, abs=1e-15)
    assert synthetic.marginal_max_error <= 4.0 / n + 1e-12


def test_the_rows_follow_the_junction_tree_distribution_over_the_universe():
    """A star (0,1), (1,2), (1,3) with a 1-way table (1,) inside it, a table (4,) of its own, and
    an attribute 5 no table reads: over the 144 cells of the universe the rows' frequencies are
    p(x) = mu01 mu12 mu13 / mu1^2 * mu4 / 3, within 5 standard deviations of a draw plus the
    rounding of counts."""
    sizes = [2, 3, 2, 2, 2, 3]
    subsets = [(0, 1), (1, 2), (1, 3), (1,), (4,)]
    domain, workload, result = _release(sizes, subsets, seed=7, concentration=0.2, noise=0.02)
    assert result.exact
    mu01, mu12, mu13, mu1, mu4 = (result.marginal(t) for t in [(0, 1), (1, 2), (1, 3), (1,), (4,)])
    p = np.zeros(sizes)
    for x in itertools.product(*(range(s) for s in sizes)):
        if mu1[x[1]] > 0:
            p[x] = mu01[x[0], x[1]] * mu12[x[1], x[2]] * mu13[x[1], x[3]] / mu1[x[1]] ** 2 * mu4[x[4]] / 3
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    n = 200_000
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(3), workload=workload)
    frequencies = np.bincount(np.ravel_multi_index(synthetic.data.records.T, sizes), minlength=domain.size) / n
    tolerance = 5 * np.sqrt(p.ravel() * (1 - p.ravel()) / n) + 10 / n
    assert np.all(np.abs(frequencies - p.ravel()) <= tolerance)
    # Not vacuous: the attributes are far from independent here, so the product of the 1-way
    # marginals is rejected by the same tolerance.
    independent = np.einsum("a,b,c,d,e,f->abcdef", *(p.sum(axis=tuple(j for j in range(6) if j != i))
                                                      for i in range(6))).ravel()
    assert np.any(np.abs(frequencies - independent) > tolerance)


@pytest.mark.parametrize("subsets", [
    [(0, 1, 2), (1, 2, 3), (2, 3, 4)],
    [(2, 3, 4), (0, 1, 2), (1, 2, 3)],
    [(0, 1), (1, 2), (1, 3), (3, 4), (5,), (5, 6), (1,)],
    [(0, 1, 2, 3), (0, 1, 4), (1, 4, 5), (4, 5, 6), (2, 3, 7), (3, 7, 8)],
])
def test_the_tables_are_drawn_in_an_order_with_the_running_intersection_property(subsets):
    """On acyclic tables every maximal table comes once, and its attributes shared with the
    tables before it lie in one of them (so its conditional given its parent is the right one):
    checked on the order itself, including a chain listed out of order, where a tree through the
    1-attribute edge (0,1,2)-(2,3,4) would break it."""
    tables = {tuple(sorted(t)): np.ones([2] * len(t)) for t in subsets}
    order = junction_order(list(tables), [2] * 9)
    maximal = {t for t in tables if not any(set(t) < set(other) for other in tables)}
    assert len(order) == len(maximal) and set(order) == maximal
    for k, table in enumerate(order):
        seen = set().union(*map(set, order[:k])) if k else set()
        shared = set(table) & seen
        if shared:
            assert any(shared <= set(earlier) for earlier in order[:k]), (table, order)


@pytest.mark.parametrize(("sizes", "subsets"), [
    ([2, 3, 2, 3, 2], [(0, 1, 2), (1, 2, 3), (2, 3, 4)]),
    ([2, 3, 2, 2, 2], [(0, 1), (1, 2), (1, 3), (3, 4)]),
    ([2] * 9, [(0, 1, 2, 3), (0, 1, 4), (1, 4, 5), (4, 5, 6), (2, 3, 7), (3, 7, 8)]),
    ([3, 2, 4, 2, 2], [(0, 1), (1, 2, 3), (3, 4)]),
])
def test_the_order_walks_the_tables_junction_tree_from_the_table_of_most_cells(sizes, subsets):
    """Where the junction tree of the tables (:class:`~projmech.tables.JunctionTree`)
    has the tables themselves as cliques, the rows are drawn along its edges: each table after the
    first joins an earlier one through an edge of that tree. The walk starts at the table of most
    cells (its counts rounded closest), where the tree's own order starts at the clique of most
    attributes; on the chain they differ, so the tree's order would draw other rows. (Elsewhere
    the tree's cliques are not the tables: its elimination adds cliques to cyclic tables, and to
    acyclic ones whose middle attributes are cheap.)"""
    tables = {t: np.ones([sizes[a] for a in t]) for t in subsets}
    order = junction_order(subsets, sizes)
    tree = JunctionTree(sizes, subsets)
    assert sorted(order) == sorted(tree.cliques)
    edges = {frozenset((tree.cliques[child], tree.cliques[parent]))
             for child, parent in enumerate(tree.parent) if parent is not None}
    for k, table in enumerate(order[1:], 1):
        assert any(frozenset((table, earlier)) in edges for earlier in order[:k]), (table, order)
    assert tables[order[0]].size == max(table.size for table in tables.values())
    if subsets[0] == (0, 1, 2):
        assert order[0] == (1, 2, 3) and tree.cliques[tree.order[0]] == (0, 1, 2)


def _tree_rows(domain, result, workload, n, seed):
    """The rows the tree sampling draws before the search on cyclic tables (the search switched
    off)."""
    search = tree_sampling.search_table_rows
    tree_sampling.search_table_rows = lambda tables, targets, rows, rng, **_: (rows, [])
    try:
        return pm.synthetic_data(domain, result, n, np.random.default_rng(seed), workload=workload).data.records
    finally:
        tree_sampling.search_table_rows = search


def test_rows_from_cyclic_tables_match_the_tree_and_report_the_rest():
    """All 2-way tables of 4 binary attributes, with the frustrated triangle x0 = x1, x0 = x2,
    x1 != x2 (pairwise consistent, no distribution has it): the tree's rows match the tables it
    draws within the rounding (at least 3, covering every attribute); the search after it
    trades that for a lower total distance to all the tables; the rows are in range, and the
    triangle's tables, which no rows match, are reported by marginal_max_error, recomputed here."""
    sizes = [2, 2, 2, 2]
    domain = pm.Domain(list("abcd"), sizes)
    workload = pm.marginals(domain, 2)
    equal, differ, independent = [0.5, 0, 0, 0.5], [0, 0.5, 0.5, 0], [0.25] * 4
    tables = {(0, 1): equal, (0, 2): equal, (0, 3): independent, (1, 2): differ, (1, 3): independent,
              (2, 3): independent}
    y = np.concatenate([tables[t] for t in itertools.combinations(range(4), 2)])
    result = project_to_local(workload, y, tol=1e-10)
    assert not result.exact and result.distance < 1e-4
    n = 4_000
    tree = _tree_rows(domain, result, workload, n, seed=5)
    errors = {t: np.abs(_counts(tree, sizes, t) - n * result.marginal(t)).max() for t in result.tables}
    # Within the rounding: a root within 1, a child of a 2x2 parent within 2 * 1 + 1.
    matched = [t for t, error in errors.items() if error <= 3.0 + 1e-9]
    assert len(matched) >= 3 and set().union(*map(set, matched)) == {0, 1, 2, 3}
    assert max(errors.values()) / n >= 0.4  # the triangle cannot be matched: 1/2 is off
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(5), workload=workload)
    rows = synthetic.data.records
    assert rows.shape == (n, 4) and rows.min() >= 0 and np.all(rows.max(axis=0) < sizes)

    def distance(rows):
        return sum(float(np.sum((_counts(rows, sizes, t) / n - result.marginal(t)) ** 2)) for t in result.tables)

    assert distance(rows) < distance(tree)
    difference = np.concatenate([_counts(rows, sizes, t).ravel() / n for t in result.tables]) - result.answers
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9)
    assert synthetic.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference ** 2)), rel=1e-9)
    # Any rows miss the triangle: x0 = x1 and x0 = x2 on all rows would force x1 = x2.
    assert synthetic.marginal_max_error >= 0.1
    assert synthetic.method == "local"


def test_the_same_seed_gives_the_same_rows():
    domain, workload, result = _release(CHAIN_SIZES, CHAIN, seed=1)
    one = pm.synthetic_data(domain, result, 500, np.random.default_rng(4), workload=workload)
    again = pm.synthetic_data(domain, result, 500, np.random.default_rng(4), workload=workload)
    other = pm.synthetic_data(domain, result, 500, np.random.default_rng(5), workload=workload)
    np.testing.assert_array_equal(one.data.records, again.data.records)
    assert not np.array_equal(one.data.records, other.data.records)


def test_without_its_workload_a_local_result_gives_the_same_rows_and_errors():
    """The result knows its tables and terms: left out, the workload changes nothing."""
    domain, workload, result = _release(CHAIN_SIZES, CHAIN, seed=1)
    given = pm.synthetic_data(domain, result, 300, np.random.default_rng(7), workload=workload)
    own = pm.synthetic_data(domain, result, 300, np.random.default_rng(7))
    np.testing.assert_array_equal(own.data.records, given.data.records)
    assert (own.marginal_rmse, own.marginal_max_error) == pytest.approx((given.marginal_rmse,
                                                                         given.marginal_max_error), abs=1e-15)


def test_another_workload_and_bad_arguments_are_refused():
    domain, workload, result = _release(CHAIN_SIZES, CHAIN, seed=1)
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="^workload"):
        pm.synthetic_data(domain, result, 10, rng, workload="chain")
    # Other tables: the 3-way marginals of the domain.
    with pytest.raises(ValueError, match="^workload: .* is not the workload this result projected over the tables"):
        pm.synthetic_data(domain, result, 10, rng, workload=pm.marginals(domain, 3))
    # The same tables, another weight: only the answers tell them apart.
    reweighted = marginal_tables_workload(CHAIN_SIZES, CHAIN, [1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="^workload: .* is not the workload this result projected .*other answers"):
        pm.synthetic_data(domain, result, 10, rng, workload=reweighted)
    with pytest.raises(ValueError, match="^result: its tables"):
        pm.synthetic_data(pm.Domain(list("abcde"), [2, 3, 2, 2, 2]), result, 10, rng, workload=workload)
    with pytest.raises(ValueError, match="^n"):
        pm.synthetic_data(domain, result, 0, rng, workload=workload)
    with pytest.raises(ValueError, match=r"^n: 1,000,000,000,000 rows"):
        pm.synthetic_data(domain, result, 10**12, rng, workload=workload)
    with pytest.raises(ValueError, match="^method"):
        pm.synthetic_data(domain, result, 10, rng, workload=workload, method="search")
    with pytest.raises(TypeError, match="rng"):
        pm.synthetic_data(domain, result, 10, 0, workload=workload)


def test_fifty_thousand_rows_of_a_long_chain_take_well_under_a_few_seconds():
    """A chain of 8 tables of 3 attributes of up to 21 values (9,261 cells each): each table's
    counts stay within the rounding bound of the chain, and the drawing is vectorized."""
    sizes = [21, 20, 21, 19, 21, 20, 21, 19, 21, 20]
    subsets = [(i, i + 1, i + 2) for i in range(8)]
    domain = pm.Domain([f"x{i}" for i in range(10)], sizes)
    workload = marginal_tables_workload(sizes, subsets)
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.dirichlet(np.full(math.prod(sizes[a] for a in t), 0.5)) for t in subsets])
    result = project_to_local(workload, y, noise_scale=0.01)
    assert result.exact
    start = time.perf_counter()
    synthetic = pm.synthetic_data(domain, result, 50_000, np.random.default_rng(1), workload=workload)
    assert time.perf_counter() - start < 5.0
    assert synthetic.data.records.shape == (50_000, 10)


CYCLIC_SIZES = [2, 3, 4, 2, 3]
CYCLIC = list(itertools.combinations(range(5), 3))




def _objective(rows, tables, targets):
    n = rows.shape[0]
    return sum(float(np.sum((_counts(rows, CYCLIC_SIZES, t) / n - target) ** 2))
               for t, target in zip(tables, targets))


def test_the_search_on_cyclic_tables_brings_all_tables_towards_the_projected_ones():
    """All 3-way tables of 5 attributes (cyclic, so the tree matches only its own tables): the
    rows after the search are far closer to the projected tables than the tree's rows, every
    cell within 3 / n (the tree's: 10 times that), and the search's best objective never rises;
    one seed gives the same rows."""
    # Little noise, so that rows can have the projected tables (up to the rounding of counts):
    # with more, the local polytope's point need not be near any distribution's tables.
    domain, workload, result = _release(CYCLIC_SIZES, CYCLIC, seed=11, concentration=0.3, noise=0.001)
    assert not result.exact
    n = 3_000
    targets = [result.marginal(t) for t in CYCLIC]
    tree = _tree_rows(domain, result, workload, n, seed=12)
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(12), workload=workload)
    rows = synthetic.data.records
    assert synthetic.method == "local" and rows.shape == (n, 5)
    before, after = _objective(tree, CYCLIC, targets), _objective(rows, CYCLIC, targets)
    assert after < 0.1 * before, (before, after)
    errors = [np.abs(_counts(rows, CYCLIC_SIZES, t) / n - target).max() for t, target in zip(CYCLIC, targets)]
    assert max(errors) <= 3.0 / n, max(errors)
    assert max(np.abs(_counts(tree, CYCLIC_SIZES, t) / n - target).max() for t, target in zip(CYCLIC, targets)) > 30 / n
    # The reported distance is the rows' own answers against the projected ones.
    difference = np.concatenate([_counts(rows, CYCLIC_SIZES, t).ravel() / n for t in CYCLIC]) - result.answers
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9)
    # The search itself, from the tree's rows: its history starts at their objective, its best
    # values never rise, and it returns the rows of the lowest one.
    best, history = search_table_rows(CYCLIC, targets, tree, np.random.default_rng(0))
    assert history[0] == pytest.approx(before, rel=1e-9)
    assert len(history) >= 2 and np.all(np.diff(np.minimum.accumulate(history)) <= 0)
    assert _objective(best, CYCLIC, targets) == pytest.approx(min(history), rel=1e-9, abs=1e-15)
    again = pm.synthetic_data(domain, result, n, np.random.default_rng(12), workload=workload)
    np.testing.assert_array_equal(rows, again.data.records)
    other = pm.synthetic_data(domain, result, n, np.random.default_rng(13), workload=workload)
    assert not np.array_equal(rows, other.data.records)


def test_the_change_of_objective_of_one_move_is_the_formula():
    """Brute force on a tiny case (tables (0, 1, 2), (1, 3), (1,) and (0, 2, 3), attribute 1
    held by three of them): for every row and new value of attribute 1, the objective after the
    move minus the objective before is 2/n (S[new] - S[old]) + 2 t_a / n^2, S gathered from the
    difference tables as the search gathers it; and a one-row batch search takes exactly the
    moves the formula calls improving."""
    sizes = [2, 3, 2, 2]
    tables = [(0, 1, 2), (1, 3), (1,), (0, 2, 3)]
    rng = np.random.default_rng(3)
    targets = [rng.dirichlet(np.ones(math.prod(sizes[a] for a in t))).reshape([sizes[a] for a in t]) for t in tables]
    n = 7
    rows = np.column_stack([rng.integers(0, s, n) for s in sizes])

    def objective(rows):
        return sum(float(np.sum((_counts(rows, sizes, t) / n - target) ** 2)) for t, target in zip(tables, targets))

    differences = [_counts(rows, sizes, t) / n - target for t, target in zip(tables, targets)]
    a = 1
    holding = [k for k, t in enumerate(tables) if a in t]
    assert len(holding) == 3
    for i in range(n):
        scores = np.zeros(sizes[a])
        for k in holding:
            moved = np.moveaxis(differences[k], tables[k].index(a), 0)
            others = tuple(rows[i, b] for b in tables[k] if b != a)
            scores += moved[(slice(None),) + others]
        for new in range(sizes[a]):
            if new == rows[i, a]:
                continue
            changed = rows.copy()
            changed[i, a] = new
            formula = 2 / n * (scores[new] - scores[rows[i, a]]) + 2 * len(holding) / n ** 2
            assert objective(changed) - objective(rows) == pytest.approx(formula, rel=1e-9, abs=1e-15)
    # The search's objective history is the objective of the rows, recomputed here.
    best, history = search_table_rows(tables, targets, rows, np.random.default_rng(0), passes=1,
                                                      batch=1)
    assert history[0] == pytest.approx(objective(rows), rel=1e-12)
    assert objective(best) == pytest.approx(min(history), rel=1e-9, abs=1e-15)
    assert history[1] <= history[0]


def test_the_search_refuses_targets_that_do_not_fit_themarginal_tables_workload():
    rows = np.zeros((4, 3), dtype=np.int64)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^targets: expected one per table"):
        search_table_rows([(0, 1)], [], rows, rng)
    with pytest.raises(ValueError, match="^targets: the table"):
        search_table_rows([(0, 1)], [np.ones(4) / 4], rows, rng)
    with pytest.raises(ValueError, match="^targets: attribute 1 has"):
        search_table_rows([(0, 1), (1, 2)], [np.ones((2, 2)) / 4, np.ones((3, 2)) / 6], rows, rng)
    with pytest.raises(ValueError, match="^tables: attribute 5"):
        search_table_rows([(0, 5)], [np.ones((2, 2)) / 4], rows, rng)
