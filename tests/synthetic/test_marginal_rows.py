"""Synthetic rows from released 2-way tables: the Chow–Liu start, the local search, and
``synthetic_data`` from a projection onto L over a categorical domain."""

import itertools

import numpy as np
import pytest

import projmech as pm
from projmech.bodies import project_to_relaxation
from projmech.synthetic._marginal_rows import pair_tables, search_rows, tree_rows

SIZES = (3, 4, 2, 5)


def brute_tables(rows, sizes):
    """Every 2-way table of the rows, by counting row by row (independent of the package)."""
    tables = {}
    for a, b in itertools.combinations(range(len(sizes)), 2):
        table = np.zeros((sizes[a], sizes[b]))
        for row in rows:
            table[row[a], row[b]] += 1
        tables[a, b] = table / len(rows)
    return tables


def objective(rows, sizes, answers):
    domain = pm.Domain([f"x{i}" for i in range(len(sizes))], sizes)
    released = pair_tables(domain, answers)
    return sum(np.sum((table - released[key]) ** 2) for key, table in brute_tables(rows, sizes).items())


def correlated_rows(n, seed, sizes=SIZES):
    """Rows with dependence off any tree: x3 depends on x0 and x2 jointly."""
    rng = np.random.default_rng(seed)
    x0 = rng.integers(0, sizes[0], n)
    x1 = (x0 + rng.integers(0, 2, n)) % sizes[1]
    x2 = rng.integers(0, sizes[2], n)
    x3 = np.where(rng.random(n) < 0.8, (x0 + 2 * x2) % sizes[3], rng.integers(0, sizes[3], n))
    return np.column_stack([x0, x1, x2, x3])


def domain_of(sizes=SIZES):
    return pm.Domain([f"x{i}" for i in range(len(sizes))], sizes)


def test_pair_tables_follow_the_layout_of_two_way_marginals():
    domain = domain_of()
    rows = correlated_rows(500, 0)
    answers = pm.marginals(domain, 2).answer_data(pm.Dataset(rows, domain))
    tables = pair_tables(domain, answers)
    for key, table in brute_tables(rows, SIZES).items():
        np.testing.assert_allclose(tables[key], table, atol=1e-12)
    with pytest.raises(ValueError, match="answers: expected"):
        pair_tables(domain, answers[:-1])


def test_tree_rows_reproduce_a_chain_distribution():
    """The exact tables of a Markov chain x0 -> x1 -> x2: its Chow–Liu tree is the chain, so the
    rows' every table matches within sampling error (5 standard errors)."""
    sizes = (3, 4, 2)
    domain = domain_of(sizes)
    start = np.array([0.5, 0.3, 0.2])
    step1 = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.05, 0.05, 0.1, 0.8]])
    step2 = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.15, 0.85]])
    joint = start[:, None, None] * step1[:, :, None] * step2[None, :, :]
    answers = pm.marginals(domain, 2).answer(joint.ravel())
    n = 40_000
    rows = tree_rows(domain, answers, n, np.random.default_rng(1))
    assert rows.shape == (n, 3) and rows.dtype == np.int64
    released = pair_tables(domain, answers)
    for key, table in brute_tables(rows, sizes).items():
        standard_error = np.sqrt(released[key] * (1 - released[key]) / n)
        assert np.all(np.abs(table - released[key]) <= 5 * standard_error + 1e-12)


def test_tree_rows_never_draw_values_of_mass_zero():
    domain = domain_of((3, 3))
    table = np.array([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.0]])
    rows = tree_rows(domain, table.ravel(), 5000, np.random.default_rng(0))
    assert set(map(tuple, rows.tolist())) == {(0, 0), (1, 1)}


def test_search_lowers_the_objective_and_returns_the_best_rows():
    """From the tree's rows, the search fits tables the tree cannot (x3 depends on x0 and x2
    jointly); the returned rows' objective, recomputed by brute force, is the least reported."""
    domain = domain_of()
    truth_rows = correlated_rows(3000, 2)
    answers = pm.marginals(domain, 2).answer_data(pm.Dataset(truth_rows, domain))
    rng = np.random.default_rng(3)
    start = tree_rows(domain, answers, 3000, rng)
    rows, history = search_rows(domain, answers, start, rng)
    assert history[0] == pytest.approx(objective(start, SIZES, answers), rel=1e-9)
    assert objective(rows, SIZES, answers) == pytest.approx(min(history), rel=1e-6)
    assert min(history) < 0.05 * history[0]
    assert 2 <= len(history) <= 1 + 6
    assert rows.shape == start.shape and np.all((rows >= 0) & (rows < np.array(SIZES)))


def test_search_is_reproducible_from_its_generator():
    domain = domain_of()
    answers = pm.marginals(domain, 2).answer_data(pm.Dataset(correlated_rows(1000, 4), domain))
    start = tree_rows(domain, answers, 1000, np.random.default_rng(0))
    one, _ = search_rows(domain, answers, start, np.random.default_rng(7))
    again, _ = search_rows(domain, answers, start, np.random.default_rng(7))
    np.testing.assert_array_equal(one, again)


def test_synthetic_rows_from_a_categorical_relaxation():
    """Rows from the projection of noisy categorical marginals onto L: their own marginals,
    recomputed from the rows, are as reported, and no farther from the truth than 1.5x the
    projected answers are (the issue's bar; measured 0.86x on categorical Adult)."""
    domain = domain_of()
    n = 20_000
    truth_rows = correlated_rows(n, 5)
    truth = pm.marginals(domain, 2).answer_data(pm.Dataset(truth_rows, domain))
    noisy = truth + np.random.default_rng(6).normal(0, 0.01, truth.size)
    result = project_to_relaxation(domain, noisy)
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(7))
    assert synthetic.method == "search" and synthetic.repair == 0.0
    rows = synthetic.data.records
    assert rows.shape == (n, 4) and synthetic.data.domain == domain
    ours = np.concatenate([table.ravel() for table in brute_tables(rows, SIZES).values()])
    difference = ours - result.answers
    assert synthetic.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference ** 2)), rel=1e-9)
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9)
    released_error = np.sqrt(np.mean((result.answers - truth) ** 2))
    assert np.sqrt(np.mean((ours - truth) ** 2)) <= 1.5 * released_error


@pytest.mark.solver
def test_method_is_for_relaxations_only():
    domain = domain_of((2, 3))
    workload = pm.marginals(domain, 2)
    result = pm.bodies.project_to_hull(workload, workload.answer(np.full(6, 1 / 6)))
    with pytest.raises(ValueError, match="method: 'search' draws rows from a projection onto L"):
        pm.synthetic_data(domain, result, 10, np.random.default_rng(0), workload=workload, method="search")
