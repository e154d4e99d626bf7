"""Rows from a distribution fitted to tables (maximum entropy, noisy marginals): its cells
rounded to counts, or, held by a junction tree, drawn along it; then, for a marginal workload,
a local search towards its tables."""

from __future__ import annotations

import numpy as np

from ..data import Dataset, Domain
from ..tables import MaximumEntropyResult, NoisyMarginalsResult, maximal_sets
from ..workloads import Workload, identity, kron, stack, table_terms, total
from ._marginal_rows import search_table_rows
from ._result import SyntheticData, _synthetic
from ._tree_sampling import LOCAL_SEARCH_BATCH, LOCAL_SEARCH_PASSES, _draw_conditional
from ._witness import _rounded_cells


def _rows_from_joint(domain: Domain, result: MaximumEntropyResult | NoisyMarginalsResult, n: int,
                     rng: np.random.Generator, workload: Workload) -> SyntheticData:
    """Rows by largest-remainder rounding of ``n p``, then searched towards the workload's
    tables (rounding many cells of less than a row each moves the tables); a distribution held
    by a junction tree is drawn along it (:func:`_rows_from_tree`)."""
    if result.joint is None:
        assert isinstance(result, NoisyMarginalsResult)
        return _rows_from_tree(domain, result, n, rng, workload)
    if result.joint.shape != tuple(domain.sizes) or workload.universe_size != domain.size:
        raise ValueError(f"result: its distribution has shape {result.joint.shape}; the domain's sizes are "
                         f"{list(domain.sizes)} and the workload's universe holds {workload.universe_size} cells")
    weights = result.joint.ravel()
    cells = np.flatnonzero(weights > 0)
    if cells.size == 0:
        raise ValueError("result: its distribution has no positive cell")
    rows = np.column_stack(np.unravel_index(_rounded_cells(cells, weights[cells], n, rng), domain.sizes))
    rows = _searched_towards(result, rows.astype(np.int64), rng, workload)
    data = Dataset(rows, domain)
    return _synthetic(data, 0.0, workload.answer_data(data) - workload.answer(weights), "joint")


def _rows_from_tree(domain: Domain, result: NoisyMarginalsResult, n: int, rng: np.random.Generator,
                    workload: Workload) -> SyntheticData:
    """Rows drawn along the distribution's junction tree (each clique's attributes beyond its
    separator from its conditional, in the tree's order), then searched as in
    :func:`_rows_from_joint`."""
    tree, beliefs = result.tree, result.beliefs
    assert tree is not None and beliefs is not None
    if tree.sizes != tuple(domain.sizes) or workload.universe_size != domain.size:
        raise ValueError(f"result: its junction tree is over sizes {list(tree.sizes)}; the domain's sizes are "
                         f"{list(domain.sizes)} and the workload's universe holds {workload.universe_size} cells")
    terms = _terms_of(workload)  # before any row is drawn
    rows = np.zeros((n, len(domain.sizes)), dtype=np.int64)
    for index in tree.order:
        clique, given = tree.cliques[index], tree.separator[index]
        _draw_conditional(rows, beliefs[index], clique, given, tuple(a for a in clique if a not in given), rng)
    rows = _searched_towards(result, rows, rng, workload)
    data = Dataset(rows, domain)
    answers = np.concatenate([weight * np.ravel(result.marginal(subset)) for subset, weight in terms])
    return _synthetic(data, 0.0, workload.answer_data(data) - answers, "joint")


def _terms_of(workload: Workload) -> list[tuple[tuple[int, ...], float]]:
    """The (table, weight) terms of a marginal workload, refusing any other."""
    terms = table_terms(workload)
    if terms is None or not terms.is_marginal:
        raise ValueError(f"workload: {workload.name} is not a workload of marginal tables; a distribution held by a "
                         "junction tree answers marginal tables only")
    return [(tuple(subset), weight) for subset, weight in terms.terms]


def _searched_towards(result: MaximumEntropyResult | NoisyMarginalsResult, rows: np.ndarray,
                      rng: np.random.Generator, workload: Workload) -> np.ndarray:
    """For a marginal workload, the rows after local search towards the distribution's tables
    of the workload's maximal tables; other workloads' rows unchanged."""
    terms = table_terms(workload)
    if terms is None or not terms.is_marginal:
        return rows
    maximal = sorted(maximal_sets({tuple(subset) for subset in terms.subsets if subset}))
    targets = [result.marginal(t) for t in maximal]
    searched, _ = search_table_rows(maximal, targets, rows, rng, passes=LOCAL_SEARCH_PASSES, batch=LOCAL_SEARCH_BATCH)
    return np.asarray(searched)


def _fitted_tables(domain: Domain, result: MaximumEntropyResult | NoisyMarginalsResult) -> Workload:
    """The marginal workload of the tables a distribution was fitted to: what its rows are
    searched towards and compared on when no workload is given."""
    sizes = tuple(domain.sizes)
    tables = [table for table in result.tables if table]
    if not tables or any(table[-1] >= len(sizes) for table in tables):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} are not tables of the domain's "
                         f"{len(sizes)} attributes; pass workload= (the tables to compare the rows on)")
    parts = [kron([identity(size) if a in table else total(size) for a, size in enumerate(sizes)], domain=domain)
             for table in tables]
    return parts[0] if len(parts) == 1 else stack(parts)
