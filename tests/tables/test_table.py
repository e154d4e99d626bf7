"""The table type and the operations on families of tables: sums and broadcasts against numpy,
maximal sets and acyclicity against brute force, the junction order's running intersection."""

import itertools

import numpy as np
import pytest

from projmech.tables import Table, expand_table, is_acyclic, junction_order, maximal_sets, project_table


def test_project_and_expand_are_numpy_sums_and_broadcasts():
    rng = np.random.default_rng(0)
    values = rng.random((2, 3, 4))
    table = Table((1, 3, 4), values)
    np.testing.assert_array_equal(table.project((1, 4)).values, values.sum(axis=1))
    assert table.project((1, 3, 4)).values is values
    assert table.project((3,)).attributes == (3,)
    assert np.isclose(table.total, values.sum()) and np.isclose(table.normalize().total, 1.0)
    expanded = table.project((3,)).expand((0, 3, 4))
    assert expanded.shape == (1, 3, 1)
    assert table.project((3,)).expand((3, 4), sizes=(9, 9, 9, 3, 4)).shape == (3, 4)
    np.testing.assert_array_equal(project_table(values, (1, 3, 4), ()), values.sum())
    np.testing.assert_array_equal(expand_table(values.sum(axis=(0, 2)), (3,), (1, 3, 4))[0, :, 0],
                                  values.sum(axis=(0, 2)))


def test_a_table_refuses_attributes_it_has_not():
    table = Table((0, 2), np.ones((2, 2)))
    with pytest.raises(ValueError, match="not all among"):
        table.project((1,))
    with pytest.raises(ValueError, match="do not hold"):
        table.expand((0, 1))
    with pytest.raises(ValueError, match="one per attribute"):
        Table((0,), np.ones((2, 2)))


def test_maximal_sets_keep_the_family_order_and_drop_only_strict_subsets():
    family = [(0,), (1, 2), (0, 1), (2,), (1, 2), (3,)]
    assert maximal_sets(family) == [(1, 2), (0, 1), (1, 2), (3,)]
    assert maximal_sets([frozenset({0, 1}), frozenset({1})]) == [frozenset({0, 1})]
    assert maximal_sets([]) == []


def _acyclic_by_running_intersection(tables):
    """Brute force: some order of the maximal tables has the running intersection property."""
    maximal = [set(t) for t in dict.fromkeys(maximal_sets(tables))]
    for order in itertools.permutations(maximal):
        if all(any(order[i] & set().union(*order[:i]) <= order[j] for j in range(i)) or
               not order[i] & set().union(*order[:i]) for i in range(1, len(order))):
            return True
    return len(maximal) <= 1


@pytest.mark.parametrize("seed", range(30))
def test_acyclicity_is_the_running_intersection_of_some_order(seed):
    rng = np.random.default_rng(seed)
    tables = [tuple(sorted(rng.choice(5, size=rng.integers(1, 4), replace=False).tolist()))
              for _ in range(rng.integers(1, 5))]
    assert is_acyclic(tables) is _acyclic_by_running_intersection(tables)


def test_the_junction_order_of_an_acyclic_set_has_the_running_intersection_property():
    tables = [(0,), (0, 1), (1, 2), (2, 3), (1, 4), (5,)]
    order = junction_order(tables, (2, 3, 4, 2, 2, 3))
    assert order[0] == (1, 2) and set(order) == {(0, 1), (1, 2), (2, 3), (1, 4), (5,)}
    for position, table in enumerate(order[1:], 1):
        seen = set().union(*order[:position])
        shared = set(table) & seen
        assert not shared or any(shared <= set(before) for before in order[:position])


def _acyclic_by_spanning_tree(tables):
    """A join tree exists iff a maximum-weight spanning forest of the distinct maximal tables, each
    two joined by the size of their intersection, weighs sum |T| - |union of T| (Kruskal)."""
    maximal = [set(t) for t in dict.fromkeys(tuple(sorted(t)) for t in maximal_sets(tables))]
    parent = list(range(len(maximal)))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    weight = 0
    for size, i, j in sorted(((len(maximal[i] & maximal[j]), i, j)
                              for i, j in itertools.combinations(range(len(maximal)), 2)), reverse=True):
        if size and root(i) != root(j):
            parent[root(i)] = root(j)
            weight += size
    return weight == sum(map(len, maximal)) - len(set().union(*maximal))


@pytest.mark.parametrize("seed", range(40))
def test_acyclicity_of_many_tables_is_the_weight_of_a_spanning_tree(seed):
    rng = np.random.default_rng(seed)
    attributes = int(rng.integers(4, 12))
    tables = [tuple(sorted(rng.choice(attributes, size=rng.integers(1, 4), replace=False).tolist()))
              for _ in range(rng.integers(2, 16))]
    tables += tables[: int(rng.integers(0, 3))]  # repeated tables too
    assert is_acyclic(tables) is _acyclic_by_spanning_tree(tables)
