"""Synthetic rows from objects that know their tables: a mechanism's Release, an adaptive run, and
results that hold their own tables (local, tables, fitted distributions), with no ``workload=``;
and the refusals (another workload, an object with nothing to draw from). Rows' tables are
counted one row at a time and compared with the tables they came from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import projmech as pm
from oracles import marginal_tables_workload
from projmech.tables import fit_maximum_entropy, fit_noisy_marginals

DOMAIN = pm.Domain(["a", "b", "c"], [2, 3, 2])


def _data(n: int = 600, seed: int = 0) -> pm.Dataset:
    """Rows with dependent attributes (b follows a, c follows b), so the tables are not uniform."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.minimum(a + rng.integers(0, 2, n), 2)
    c = (b + (rng.random(n) < 0.2)) % 2
    return pm.Dataset(np.column_stack([a, b, c]), DOMAIN)


def _table(rows: np.ndarray, sizes, attributes) -> np.ndarray:
    """The normalized table of ``rows`` on ``attributes``, counted one row at a time."""
    table = np.zeros([sizes[a] for a in attributes])
    for row in rows:
        table[tuple(row[list(attributes)])] += 1
    return table / len(rows)


def _marginal_answers(rows: np.ndarray, sizes, way: int) -> np.ndarray:
    """All ``way``-way tables of the rows in :func:`projmech.marginals`' order (subsets in
    lexicographic order, cells row-major), counted one row at a time."""
    return np.concatenate([_table(rows, sizes, subset).ravel()
                           for subset in itertools.combinations(range(len(sizes)), way)])


def _same_rows(one: pm.SyntheticData, other: pm.SyntheticData) -> None:
    np.testing.assert_array_equal(one.data.records, other.data.records)
    assert (one.method, one.marginal_rmse, one.marginal_max_error) == (
        other.method, pytest.approx(other.marginal_rmse, abs=1e-15), pytest.approx(other.marginal_max_error, abs=1e-15))


@pytest.mark.parametrize("body", ["hull", "local"])
def test_a_projection_mechanisms_release_draws_rows_from_its_projection_and_workload(body):
    """The release gives the rows the bare projection gives with its workload, and the rows' own
    2-way tables are the released ones up to the rounding of counts: within 2/n per cell of the
    hull's witness (a cell sums two universe elements, each within one row), within a few rows
    per cell of the chain's tables (acyclic, drawn along the junction tree)."""
    workload = pm.marginals(DOMAIN, 2) if body == "hull" else marginal_tables_workload(DOMAIN.sizes, [(0, 1), (1, 2)])
    data = _data()
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), body=body, noise="continuous").release(data, rng=1)
    n = 500
    rows = pm.synthetic_data(DOMAIN, release, n, np.random.default_rng(2))
    _same_rows(rows, pm.synthetic_data(DOMAIN, release.projection, n, np.random.default_rng(2), workload=workload))
    if body == "hull":
        counted = _marginal_answers(rows.data.records, DOMAIN.sizes, 2)
        bound = 2 / n
    else:
        counted = np.concatenate([_table(rows.data.records, DOMAIN.sizes, t).ravel() for t in [(0, 1), (1, 2)]])
        bound = 4 / n  # the root within 1 row, the child within 1 plus its separator's (b: 3 cells of a) error
    assert np.max(np.abs(counted - release.answers)) <= bound + 1e-12
    assert rows.marginal_max_error == pytest.approx(np.max(np.abs(counted - release.answers)), abs=1e-12)


def test_a_tables_release_and_its_bare_result_answer_the_rows_through_their_own_queries():
    """One-way marginals projected table by table: each table's counts within 1 of n w, so the
    rows' 1-way answers (counted row by row) within 1/n of the released ones, with or without the
    workload."""
    workload = pm.marginals(DOMAIN, 1)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), body="tables", noise="continuous").release(_data(), rng=3)
    rows = pm.synthetic_data(DOMAIN, release, 400, np.random.default_rng(4))
    _same_rows(rows, pm.synthetic_data(DOMAIN, release.projection, 400, np.random.default_rng(4)))
    counted = _marginal_answers(rows.data.records, DOMAIN.sizes, 1)
    assert np.max(np.abs(counted - release.answers)) <= 1 / 400 + 1e-12
    assert rows.marginal_max_error == pytest.approx(np.max(np.abs(counted - release.answers)), abs=1e-12)


def test_a_relaxed_release_draws_rows_from_its_moments_without_a_workload():
    domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    data = pm.Dataset(np.random.default_rng(5).integers(0, 2, size=(400, 3)), domain)
    workload = pm.marginals(domain, 2)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), body="relaxed", noise="continuous").release(data, rng=6)
    rows = pm.synthetic_data(domain, release, 400, np.random.default_rng(7))
    _same_rows(rows, pm.synthetic_data(domain, release.projection, 400, np.random.default_rng(7)))
    # The workload it answered, given again (another object of the same tables), is accepted.
    again = pm.synthetic_data(domain, release, 400, np.random.default_rng(7), workload=pm.marginals(domain, 2))
    _same_rows(rows, again)


@pytest.mark.parametrize("estimator", ["regularized", "tables"])
def test_an_adaptive_run_draws_the_rows_synthesize_draws(estimator):
    """synthetic_data(run) is synthesize's step: the same rows from the same seed. The rows' 2-way
    tables, counted row by row, are near the run's released tables (sampling of 600 rows and the
    estimate's own inconsistency: within 0.05 a cell)."""
    data = _data()
    mechanism = pm.AdaptiveProjectionMechanism(pm.marginals(DOMAIN, 2), pm.ZCDP(4.0), noise="continuous",
                                               estimator=estimator)
    synthesis = mechanism.synthesize(data, 600, rng=0)
    rng = np.random.default_rng(0)
    run = mechanism.run(data, rng=rng)
    rows = pm.synthetic_data(DOMAIN, run, 600, rng)
    np.testing.assert_array_equal(rows.data.records, synthesis.data.records)
    counted = _marginal_answers(rows.data.records, DOMAIN.sizes, 2)
    np.testing.assert_allclose(counted, run.release.answers, atol=0.05)
    estimate, _, _ = run.row_source()
    assert isinstance(estimate, pm.bodies.LocalResult if estimator == "tables" else pm.tables.NoisyMarginalsResult)


@pytest.mark.parametrize("fit", ["maximum_entropy", "noisy_marginals"])
def test_a_fitted_distribution_without_a_workload_is_compared_on_its_own_tables(fit):
    """Left out, the workload is the tables the distribution was fitted to: the rows' error is the
    distance of their tables (counted row by row) from the distribution's."""
    truth = _data()
    tables = [(0, 1), (1, 2)]
    targets = {t: _table(truth.records, DOMAIN.sizes, t) for t in tables}
    result = (fit_maximum_entropy(DOMAIN.sizes, targets) if fit == "maximum_entropy"
              else fit_noisy_marginals(DOMAIN.sizes, targets, 0.01, rng=0))
    rows = pm.synthetic_data(DOMAIN, result, 500, np.random.default_rng(8))
    difference = np.concatenate([(_table(rows.data.records, DOMAIN.sizes, t) - result.marginal(t)).ravel()
                                 for t in tables])
    assert rows.method == "joint"
    assert rows.marginal_max_error == pytest.approx(np.max(np.abs(difference)), abs=1e-12)
    assert rows.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference**2)), abs=1e-12)
    assert rows.marginal_max_error <= 4 / 500  # rounding of cells of under a row each, then the search


def test_an_explicit_workload_must_be_the_objects_own():
    data = _data()
    workload = pm.marginals(DOMAIN, 2)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), solver="fast", noise="continuous").release(data, rng=1)
    rng = np.random.default_rng(0)
    # The same tables built again: accepted, the same rows.
    _same_rows(pm.synthetic_data(DOMAIN, release, 50, np.random.default_rng(1), workload=pm.marginals(DOMAIN, 2)),
               pm.synthetic_data(DOMAIN, release, 50, np.random.default_rng(1)))
    with pytest.raises(ValueError, match=r"^workload: .* is not the workload of this Release"):
        pm.synthetic_data(DOMAIN, release, 10, rng, workload=pm.marginals(DOMAIN, 1))
    # One shape, other tables: the three 2-way tables against a stack of other tables of 16 cells.
    other = marginal_tables_workload(DOMAIN.sizes, [(0, 1), (1, 2), (0,), (2,)])
    assert other.shape == workload.shape
    with pytest.raises(ValueError, match=r"^workload: .* is not the workload of this Release"):
        pm.synthetic_data(DOMAIN, release, 10, rng, workload=other)
    run = pm.AdaptiveProjectionMechanism(workload, pm.ZCDP(1.0), noise="continuous").run(data, rng=0)
    with pytest.raises(ValueError, match=r"^workload: .* is not the workload of this AdaptiveRun"):
        pm.synthetic_data(DOMAIN, run, 10, rng, workload=pm.marginals(DOMAIN, 1))


def test_the_same_tables_over_a_large_attribute_are_compared_without_their_dense_blocks():
    """An attribute of 12,000 values: its identity block was compared as a dense 12,000 x 12,000
    matrix, refused for memory, so the caller's own workload built again was refused."""
    domain = pm.Domain(["a", "b"], [12_000, 3])
    rng = np.random.default_rng(0)
    data = pm.Dataset(np.column_stack([rng.integers(0, 12_000, 500), rng.integers(0, 3, 500)]), domain)
    release = pm.ProjectionMechanism(pm.marginals(domain, 1), pm.ZCDP(1.0), body="tables",
                                     noise="continuous").release(data, rng=0)
    _same_rows(pm.synthetic_data(domain, release, 40, np.random.default_rng(3), workload=pm.marginals(domain, 1)),
               pm.synthetic_data(domain, release, 40, np.random.default_rng(3)))


def test_workloads_without_tables_are_compared_by_their_answers():
    """Two explicit matrices of one shape: the same entries in another object are accepted, other
    entries refused."""
    matrix = np.random.default_rng(9).random((5, DOMAIN.size))
    workload = pm.Workload(matrix, domain=DOMAIN)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), body="hull", solver="fast",
                                     noise="continuous").release(_data(), rng=1)
    _same_rows(pm.synthetic_data(DOMAIN, release, 60, np.random.default_rng(2),
                                 workload=pm.Workload(matrix.copy(), domain=DOMAIN)),
               pm.synthetic_data(DOMAIN, release, 60, np.random.default_rng(2)))
    changed = matrix.copy()
    changed[2, 3] += 0.5
    with pytest.raises(ValueError, match=r"^workload: .* is not the workload of this Release"):
        pm.synthetic_data(DOMAIN, release, 10, np.random.default_rng(0), workload=pm.Workload(changed, domain=DOMAIN))


def test_objects_that_do_not_know_what_to_draw_from_are_refused_saying_what_to_pass():
    data = _data()
    workload = pm.marginals(DOMAIN, 2)
    rng = np.random.default_rng(0)
    projection = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), solver="fast",
                                        noise="continuous").release(data, rng=1).projection
    with pytest.raises(ValueError, match=r"^workload: required for a ProjectionResult.*pass workload="):
        pm.synthetic_data(DOMAIN, projection, 10, rng)
    gaussian = pm.GaussianMechanism(workload, pm.ZCDP(2.0), noise="continuous").release(data, rng=1)
    with pytest.raises(ValueError, match=r"^result: a gaussian release holds no projection.*projmech.synthesize"):
        pm.synthetic_data(DOMAIN, gaussian, 10, rng)
    adaptive = pm.AdaptiveProjectionMechanism(workload, pm.ZCDP(1.0), noise="continuous").release(data, rng=0)
    with pytest.raises(ValueError, match=r"^result: an adaptive release's rows come from its run.*AdaptiveRun"):
        pm.synthetic_data(DOMAIN, adaptive, 10, rng)
    release = pm.ProjectionMechanism(workload, pm.ZCDP(2.0), solver="fast", noise="continuous").release(data, rng=1)
    with pytest.raises(ValueError, match=r"^domain: "):
        pm.synthetic_data(pm.Domain(["x", "y", "z"], [2, 3, 2]), release, 10, rng)
    with pytest.raises(TypeError, match=r"^result: expected .* a mechanism's Release or an AdaptiveRun, got str"):
        pm.synthetic_data(DOMAIN, "release", 10, rng)
    with pytest.raises(TypeError, match=r"^workload: expected a Workload"):
        pm.synthetic_data(DOMAIN, release, 10, rng, workload="marginals:2")
    binary = pm.Domain(["a", "b"], [2, 2])
    relaxed = pm.project_to_relaxation(binary, np.full(4, 0.25))
    with pytest.raises(ValueError, match=r"^workload: a projection onto L .* leave workload out"):
        pm.synthetic_data(binary, relaxed, 10, rng, workload=pm.marginals(binary, 2))
