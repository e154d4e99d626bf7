"""Rows from overlapping tables drawn along a tree of them: each table's new attributes from its
conditional on those already drawn, rounded to counts; on cyclic tables then a local search
towards the tables (:func:`~projmech.synthetic._marginal_rows.search_table_rows`). How and why:
:doc:`/guide/synthetic_rows` (section *How the rows are drawn*)."""

from __future__ import annotations

import math

import numpy as np

from ..bodies import LocalResult, local_tables
from ..data import Dataset, Domain
from ..tables import junction_order, maximal_sets
from ..workloads import Workload
from ._marginal_rows import search_table_rows
from ._result import SyntheticData, _synthetic

#: Most passes and first batch of the local search after the tree sampling of cyclic tables.
LOCAL_SEARCH_PASSES = 20
LOCAL_SEARCH_BATCH = 128


def _rows_from_local(domain: Domain, result: LocalResult, n: int, rng: np.random.Generator,
                     workload: Workload | None) -> SyntheticData:
    """Rows from a projection onto the local polytope: the maximal tables drawn in
    :func:`~projmech.tables.junction_order`, then, on cyclic tables, searched towards them. Without
    ``workload``, answered through the result's own terms."""
    tables = {attributes: result.marginal(attributes) for attributes in result.tables}
    if any(attributes[-1] >= len(domain) or table.shape != tuple(domain.sizes[a] for a in attributes)
           for attributes, table in tables.items()):
        raise ValueError(f"result: its tables {[list(t) for t in result.tables]} of shapes "
                         f"{[list(table.shape) for table in tables.values()]} do not match the domain's sizes "
                         f"{list(domain.sizes)}")
    if workload is not None:
        _check_local_workload(domain, result, workload)
    # An attribute no table reads takes uniform values: no answer depends on it.
    rows = rng.integers(0, np.asarray(domain.sizes), size=(n, len(domain.sizes)), dtype=np.int64)
    drawn: set[int] = set()
    for clique in junction_order(list(tables), domain.sizes):
        # On a junction tree the attributes drawn before that a clique reads are its separator
        # with its parent; on the tree of a cyclic set they may be more, or all of its own.
        given = tuple(a for a in clique if a in drawn)
        new = tuple(a for a in clique if a not in drawn)
        if new:
            _draw_conditional(rows, tables[clique], clique, given, new, rng)
            drawn.update(new)
    if not result.exact:
        # Cyclic tables: the tree matches only its own tables; the search brings all of them
        # towards the projected tables.
        maximal = maximal_sets(tables)
        rows, _ = search_table_rows(maximal, [tables[t] for t in maximal], rows, rng, passes=LOCAL_SEARCH_PASSES,
                                    batch=LOCAL_SEARCH_BATCH)
    data = Dataset(rows, domain)
    if workload is not None:
        return _synthetic(data, 0.0, workload.answer_data(data) - result.answers, "local")
    # The rows' own tables, laid out as the result's values, read through its terms.
    counts = [np.bincount(np.ravel_multi_index(tuple(rows[:, list(t)].T), tables[t].shape),
                          minlength=tables[t].size) / n for t in result.tables]
    answers = result._model.answers(np.concatenate(counts), result.answers.size)
    return _synthetic(data, 0.0, answers - result.answers, "local")


def _check_local_workload(domain: Domain, result: LocalResult, workload: Workload) -> None:
    """Refuse a workload other than the one ``result`` projected: other tables, or the same
    tables read through other terms (weights or order)."""
    model = local_tables(workload)
    if isinstance(model, str) or model.attributes != result.tables or result.answers.shape != (
            workload.num_queries,) or workload.universe_size != domain.size or (
            workload.domain is not None and workload.domain != domain):
        raise ValueError(f"workload: {workload.name} is not the workload this result projected over the tables "
                         f"{[list(table) for table in result.tables]} of this domain; pass the projected workload")
    recomputed = model.answers(result.values, workload.num_queries)
    scale = 1.0 + float(np.max(np.abs(result.answers), initial=0.0))
    if not np.allclose(recomputed, result.answers, rtol=0.0, atol=1e-8 * scale):
        raise ValueError(f"workload: {workload.name} is not the workload this result projected (its terms over "
                         "the result's tables give other answers); pass the projected workload")


def _draw_conditional(rows: np.ndarray, table: np.ndarray, clique: tuple[int, ...], given: tuple[int, ...],
                      new: tuple[int, ...], rng: np.random.Generator) -> None:
    """Set the ``new`` attributes of ``rows`` in place: the ``m_s`` rows with ``x_given = s``
    take the cells of ``table``'s conditional given ``s``, rounded to counts within 1 of
    ``m_s mu(. | s)`` (largest remainders, ties in random order), in random order."""
    axes = [clique.index(a) for a in given] + [clique.index(a) for a in new]
    given_sizes = [table.shape[clique.index(a)] for a in given]
    # Contiguous, so that the counts' flat view below is the counts (a transposed layout would
    # make ``reshape`` a copy).
    joint = np.ascontiguousarray(table.transpose(axes)).reshape(math.prod(given_sizes), -1)
    conditions, values = joint.shape
    mass = joint.sum(axis=1)
    # A condition of no mass that rows have (a 1e-17 cell of another table, or inconsistent
    # cyclic tables) takes the new attributes' marginal: this table's other conditions stay exact.
    fallback = joint.sum(axis=0)
    conditional = np.where(mass[:, None] > 0, joint / np.where(mass > 0, mass, 1.0)[:, None], fallback / fallback.sum())
    conditional /= conditional.sum(axis=1, keepdims=True)
    condition = (np.ravel_multi_index(tuple(rows[:, list(given)].T), given_sizes) if given
                 else np.zeros(rows.shape[0], dtype=np.int64))
    members = np.bincount(condition, minlength=conditions)
    scaled = members[:, None] * conditional
    counts = np.floor(scaled).astype(np.int64, order="C")
    left = members - counts.sum(axis=1)
    # Largest remainders within each condition: sorted by condition, then remainder (largest
    # first), then a random key; the first ``left[s]`` of condition s get one more.
    remainders = (scaled - counts).ravel()
    group = np.repeat(np.arange(conditions), values)
    order = np.lexsort((rng.random(remainders.size), -remainders, group))
    rank = np.arange(remainders.size) - group[order] * values
    flat = counts.reshape(-1)
    flat[order[rank < left[group[order]]]] += 1
    # Both sides ordered by condition: the rows of s (in random order) meet the cells of s.
    cells = np.repeat(np.tile(np.arange(values), conditions), flat)
    targets = np.lexsort((rng.random(condition.size), condition))
    for attribute, column in zip(new, np.unravel_index(cells, [table.shape[clique.index(a)] for a in new])):
        rows[targets, attribute] = column
