"""The junction tree against brute force over small universes."""

import itertools

import numpy as np
import pytest

from projmech.tables import JunctionTree
from projmech.tables import _junction_tree as junction_tree

SIZES = (2, 3, 2, 4, 3, 2)
# A cycle (0-1-2-3-0), a 3-way table, a one-way table and a chord: fill-in is needed.
TABLES = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4, 5), (4,), (1, 5)]


def _broadcast(table, attributes, ndim):
    return table.reshape([table.shape[attributes.index(a)] if a in attributes else 1 for a in range(ndim)])


def _model(seed):
    """Random log-potentials on the tables, the tree's clique potentials, and the brute-force
    distribution over the universe."""
    rng = np.random.default_rng(seed)
    tree = JunctionTree(SIZES, TABLES)
    theta = {t: rng.normal(size=[SIZES[a] for a in t]) for t in TABLES}
    potentials = [np.zeros(tree.shape(i)) for i in range(len(tree.cliques))]
    log_joint = np.zeros(SIZES)
    for table, values in theta.items():
        home = tree.home(table)
        potentials[home] = potentials[home] + values.reshape(
            [SIZES[a] if a in table else 1 for a in tree.cliques[home]])
        log_joint = log_joint + _broadcast(values, table, len(SIZES))
    return tree, potentials, log_joint


def test_the_tree_is_a_junction_tree_of_cliques_covering_every_table():
    tree, _, _ = _model(0)
    assert all(any(set(t) <= set(c) for c in tree.cliques) for t in TABLES)
    assert tree.order[0] == tree.parent.index(None) and sorted(tree.order) == list(range(len(tree.cliques)))
    # Running intersection: an attribute's cliques form a connected subtree (one clique of them
    # has its parent outside them).
    for a in range(len(SIZES)):
        holding = {i for i, c in enumerate(tree.cliques) if a in c}
        assert sum(tree.parent[i] not in holding for i in holding) == 1
    assert tree.cells == sum(int(np.prod([SIZES[a] for a in c])) for c in tree.cliques)


@pytest.mark.parametrize("seed, einsum_limit", [(0, 52), (1, 52), (2, 52), (0, 0)])
def test_calibration_and_every_marginal_match_brute_force(seed, einsum_limit, monkeypatch):
    """Every table, by einsum and (with its limit set to 0) from the leaves up."""
    monkeypatch.setattr(junction_tree, "_EINSUM_MAX_ATTRIBUTES", einsum_limit)
    tree, potentials, log_joint = _model(seed)
    beliefs, log_partition = tree.calibrate(potentials)
    joint = np.exp(log_joint)
    assert log_partition == pytest.approx(np.log(joint.sum()), abs=1e-12)
    joint /= joint.sum()
    for size in range(1, len(SIZES) + 1):
        for attributes in itertools.combinations(range(len(SIZES)), size):
            summed = tuple(a for a in range(len(SIZES)) if a not in attributes)
            np.testing.assert_allclose(tree.marginal(beliefs, attributes), joint.sum(axis=summed), atol=1e-14)


def test_the_least_total_is_the_brute_force_minimum():
    rng = np.random.default_rng(3)
    tree = JunctionTree(SIZES, TABLES)
    for _ in range(5):
        costs = {t: rng.normal(size=[SIZES[a] for a in t]) for t in TABLES}
        total = sum(_broadcast(c, t, len(SIZES)) for t, c in costs.items())
        assert tree.least_total(costs) == pytest.approx(float(total.min()), abs=1e-12)


def test_attributes_no_table_joins_get_their_own_cliques():
    tree = JunctionTree((2, 3, 4), [(0,), (2,)])
    assert sorted(tree.cliques) == [(0,), (1,), (2,)] and tree.cells == 9
    beliefs, _ = tree.calibrate([np.log(np.array([0.2, 0.8])), np.zeros(3), np.zeros(4)])
    np.testing.assert_allclose(tree.marginal(beliefs, (0, 2)), np.outer([0.2, 0.8], np.full(4, 0.25)))


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="tables"):
        JunctionTree((2, 2), [(0, 2)])
    with pytest.raises(ValueError, match="increasing"):
        JunctionTree((2, 2), [(1, 0)])
    with pytest.raises(ValueError, match="inside no clique"):
        JunctionTree((2, 2, 2), [(0, 1), (2,)]).home((0, 2))


def test_a_table_across_a_long_chain_of_more_attributes_than_letters():
    """60 attributes in a chain: the table on its two ends, read through 59 cliques, is the
    product of the chain's conditionals (computed here by hand)."""
    rng = np.random.default_rng(4)
    sizes = (3,) * 60
    pairs = [(a, a + 1) for a in range(59)]
    tree = JunctionTree(sizes, pairs)
    theta = [rng.normal(size=tree.shape(i)) for i in range(len(tree.cliques))]
    beliefs, _ = tree.calibrate(theta)
    tables = {pair: tree.marginal(beliefs, pair) for pair in pairs}
    chain = tables[(0, 1)]
    for a in range(1, 59):
        chain = chain @ (tables[(a, a + 1)] / tables[(a, a + 1)].sum(axis=1, keepdims=True))
    np.testing.assert_allclose(tree.marginal(beliefs, (0, 59)), chain, atol=1e-14)
    np.testing.assert_allclose(tree.marginal(beliefs, (0, 30, 59)).sum(axis=1), chain, atol=1e-14)


def test_a_factor_with_no_mass_calibrates_to_zeros_not_nan():
    tree = JunctionTree((2, 2, 2), [(0, 1), (1, 2)])
    potentials = [np.zeros(tree.shape(i)) for i in range(len(tree.cliques))]
    home = tree.home((1, 2))
    potentials[home][1, :] = -np.inf  # attribute 1 never takes its second value
    with np.errstate(all="raise"):
        beliefs, _ = tree.calibrate(potentials)
    assert all(np.all(np.isfinite(b)) for b in beliefs)
    np.testing.assert_allclose(tree.marginal(beliefs, (1,)), [1.0, 0.0])
    np.testing.assert_allclose(tree.marginal(beliefs, (0, 2)), np.full((2, 2), 0.25))


def test_bad_input_is_refused_naming_the_argument():
    tree = JunctionTree((2, 3), [(0, 1)])
    with pytest.raises(ValueError, match="costs"):
        tree.least_total({(1, 0): np.zeros((3, 2))})  # not increasing: refused, never transposed silently
    with pytest.raises(ValueError, match="costs"):
        tree.least_total({(0, 1): np.zeros((3, 2))})
    with pytest.raises(ValueError, match="attributes"):
        tree.marginal(tree.calibrate([np.zeros((2, 3))])[0], (5,))
    with pytest.raises(ValueError, match="potentials"):
        tree.calibrate([])
    with pytest.raises(ValueError, match="potentials"):
        tree.calibrate([np.zeros((3, 2))])
    with pytest.raises(ValueError, match="sizes"):
        JunctionTree((2, 0), [(0,)])
    with pytest.raises(ValueError, match="sizes"):
        JunctionTree((), [])
    with pytest.raises(TypeError, match="sizes"):
        JunctionTree((2, 2.5), [(0,)])
    with pytest.raises(ValueError, match="tables"):
        JunctionTree((2, 2), [(0, 2)])
