"""Gaussian (Krivine sine-transform) rounding of binary moment matrices into synthetic rows."""

import numpy as np
import pytest

import projmech as pm
from oracles import unless_inaccurate
from projmech.bodies import MomentEncoding, project_to_hull, project_to_relaxation
from projmech.synthetic import gaussian_rounding, rounding_covariance


def correlated_moments(d=5, rows=400, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((rows, d)) < 0.45).astype(int)
    X[:, 1] = X[:, 0] ^ (rng.random(rows) < 0.15)
    X[:, 2] = 1 - X[:, 0]
    domain = pm.Domain([f"x{i}" for i in range(d)], [2] * d)
    h = np.bincount(np.ravel_multi_index(X.T, domain.sizes), minlength=domain.size) / rows
    return domain, h, MomentEncoding.of(domain).moments_of(h)


def test_rows_reproduce_the_moments_when_no_repair_is_needed():
    domain, h, Y = correlated_moments()
    covariance, repair = rounding_covariance(Y)
    assert repair == 0.0
    np.testing.assert_allclose(np.diag(covariance), 1.0)
    n = 200_000
    rows, reported = gaussian_rounding(Y, n, np.random.default_rng(1))
    assert reported == 0.0 and rows.shape == (n, 5) and set(np.unique(rows)) <= {0, 1}
    second = rows.T.astype(float) @ rows / n
    # each entry is a mean of n Bernoulli draws: 5 standard errors at most 5 * 0.5 / sqrt(n)
    assert np.abs(second - Y[1:, 1:]).max() < 5 * 0.5 / np.sqrt(n)


def test_repair_is_reported_when_the_sine_transform_is_not_psd():
    mu = np.array([0.02, 0.97, 0.5, 0.03])
    Y = np.outer(np.r_[1.0, mu], np.r_[1.0, mu])  # independent bits with extreme means
    Y[1:, 1:][np.diag_indices(4)] = mu
    covariance, repair = rounding_covariance(Y)
    assert repair > 0
    assert np.linalg.eigvalsh(covariance).min() > -1e-12
    np.testing.assert_allclose(np.diag(covariance), 1.0)
    rows, reported = gaussian_rounding(Y, 1000, np.random.default_rng(0))
    assert reported == repair


@pytest.mark.solver
def test_rounding_a_projection_onto_the_relaxation():
    domain, h, _ = correlated_moments(seed=3)
    workload = pm.marginals(domain, 2)
    y = workload.answer(h) + np.random.default_rng(4).normal(0, 0.02, workload.num_queries)
    result = unless_inaccurate(project_to_relaxation, domain, y, solver="CLARABEL")
    rows, repair = gaussian_rounding(result.moments, 100_000, np.random.default_rng(5))
    sample = np.bincount(np.ravel_multi_index(rows.T, domain.sizes), minlength=domain.size) / len(rows)
    gap = np.abs(workload.answer(sample) - result.answers).max()
    assert gap < (0.01 if repair == 0 else 0.05)


def test_reproducible():
    _, _, Y = correlated_moments()
    a, _ = gaussian_rounding(Y, 50, np.random.default_rng(9))
    b, _ = gaussian_rounding(Y, 50, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("moments, match", [
    (np.ones((2, 3)), "square"),
    (np.ones((1, 1)), "square"),
    (np.full((3, 3), np.nan), "NaN"),
    (2 * np.eye(3), r"Y\[0, 0\]"),
])
def test_bad_moments(moments, match):
    with pytest.raises(ValueError, match=match):
        gaussian_rounding(moments, 10, np.random.default_rng(0))


def test_bad_arguments():
    _, _, Y = correlated_moments()
    with pytest.raises(ValueError, match="n"):
        gaussian_rounding(Y, 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        gaussian_rounding(Y, 10, 0)


@pytest.mark.solver
@pytest.mark.parametrize("method", ["gaussian", "search"])
def test_synthetic_data_reports_the_distance_of_its_marginals(method):
    """The reported distance is recomputed independently from the rows' histogram."""
    domain, h, _ = correlated_moments()
    truth = pm.marginals(domain, 2).answer(h)
    noisy = truth + np.random.default_rng(2).normal(0, 0.02, truth.size)
    result = unless_inaccurate(project_to_relaxation, domain, noisy, solver="CLARABEL")
    synthetic = pm.synthetic.synthetic_data(domain, result, 50_000, np.random.default_rng(3), method=method)
    assert synthetic.method == method
    assert synthetic.data.n == 50_000 and synthetic.data.domain == domain
    sample = pm.marginals(domain, 2).answer(pm.histogram(synthetic.data))
    difference = sample - result.answers
    assert synthetic.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference ** 2)), rel=1e-9)
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9)
    if synthetic.repair == 0.0:  # exact in expectation: only sampling error, 5 standard errors
        assert synthetic.marginal_max_error <= 5 * 0.5 / np.sqrt(50_000)


@pytest.mark.solver
def test_synthetic_data_refuses_gaussian_rounding_of_categorical_domains_and_mismatched_results():
    domain, h, _ = correlated_moments()
    truth = pm.marginals(domain, 2).answer(h)
    result = unless_inaccurate(project_to_relaxation, domain, truth, solver="CLARABEL")
    categorical = pm.Domain(["a", "b"], [3, 2])
    with pytest.raises(ValueError, match="method: Gaussian rounding draws binary rows"):
        pm.synthetic.synthetic_data(categorical, result, 10, np.random.default_rng(0), method="gaussian")
    with pytest.raises(ValueError, match="result"):  # the categorical domain's one-hot encoding
        pm.synthetic.synthetic_data(categorical, result, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="method: expected one of"):
        pm.synthetic.synthetic_data(domain, result, 10, np.random.default_rng(0), method="sample")
    with pytest.raises(TypeError, match="method"):
        pm.synthetic.synthetic_data(domain, result, 10, np.random.default_rng(0), method=None)
    other = pm.Domain(["a", "b", "c"], [2, 2, 2])
    with pytest.raises(ValueError, match="result"):
        pm.synthetic.synthetic_data(other, result, 10, np.random.default_rng(0))
    with pytest.raises(TypeError, match="result"):
        pm.synthetic.synthetic_data(domain, "not a result", 10, np.random.default_rng(0))


def categorical_release(n=20_000, seed=5):
    """A categorical table, its 2-way marginals projected onto K_Q from noisy answers."""
    domain = pm.Domain(["a", "b", "c", "d"], [3, 4, 2, 5])
    rng = np.random.default_rng(seed)
    h = rng.dirichlet(np.full(domain.size, 0.3))
    workload = pm.marginals(domain, 2)
    noisy = workload.answer(h) + rng.normal(0, 0.01, workload.num_queries)
    return domain, workload, project_to_hull(workload, noisy, solver="fast")


def test_rows_from_a_hull_witness_round_its_weights_to_counts():
    """Every element's row count is floor or ceil of n w_j, the counts sum to n, and the
    reported distance is recomputed here from the rows by brute-force counting."""
    domain, workload, result = categorical_release()
    n = 20_000
    synthetic = pm.synthetic_data(domain, result, n, np.random.default_rng(3), workload=workload)
    rows = synthetic.data.records
    assert rows.shape == (n, 4) and synthetic.data.domain == domain and synthetic.repair == 0.0
    counts = np.zeros(domain.size)
    for row in rows:  # brute force, independent of the package's counting
        counts[np.ravel_multi_index(tuple(row), domain.sizes)] += 1
    w = result.weights.toarray().ravel()
    assert np.all(np.abs(counts - n * w) < 1.0) and counts.sum() == n
    assert np.all(counts[w == 0] == 0)
    dense = workload.toarray()
    difference = dense @ (counts / n) - result.answers
    assert synthetic.marginal_rmse == pytest.approx(np.sqrt(np.mean(difference ** 2)), rel=1e-9)
    assert synthetic.marginal_max_error == pytest.approx(np.abs(difference).max(), rel=1e-9)
    # Rounding, not sampling: each answer is off by at most (support elements in it) / n.
    assert synthetic.marginal_max_error <= result.support.size / n


def test_rows_from_a_hull_witness_are_shuffled_by_the_generator_and_need_the_workload():
    domain, workload, result = categorical_release()
    one = pm.synthetic_data(domain, result, 1000, np.random.default_rng(0), workload=workload)
    again = pm.synthetic_data(domain, result, 1000, np.random.default_rng(0), workload=workload)
    other = pm.synthetic_data(domain, result, 1000, np.random.default_rng(1), workload=workload)
    np.testing.assert_array_equal(one.data.records, again.data.records)
    assert not np.array_equal(one.data.records, other.data.records)
    with pytest.raises(ValueError, match="workload: required"):
        pm.synthetic_data(domain, result, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="result"):
        pm.synthetic_data(pm.Domain(["a"], [7]), result, 10, np.random.default_rng(0), workload=workload)
    with pytest.raises(TypeError, match="rng"):
        pm.synthetic_data(domain, result, 10, 0, workload=workload)
    with pytest.raises(TypeError, match="workload"):
        pm.synthetic_data(domain, result, 10, np.random.default_rng(0), workload="marginals")


def test_rows_from_a_hull_witness_refuse_another_workload_of_the_same_shape():
    """The 2-way marginals and a reordering of their queries have the same shape; only the
    projected one reproduces the result's answers from its witness."""
    domain, workload, result = categorical_release()
    reordered = pm.Workload(workload.toarray()[::-1], domain=domain, name="reversed marginals")
    assert reordered.shape == workload.shape
    with pytest.raises(ValueError, match=r"^workload: reversed marginals is not the workload this result projected"):
        pm.synthetic_data(domain, result, 100, np.random.default_rng(0), workload=reordered)


def test_more_rows_than_memory_holds_are_refused_naming_n():
    """10^12 rows of 3 attributes would take 22 TiB as int64 (numpy's MemoryError before, asking
    for 7.28 TiB): a ValueError naming n, from either kind of projection, before any row is drawn."""
    import time

    domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    workload = pm.marginals(domain, 2)
    truth = workload.answer(np.full(8, 1 / 8))
    for result, options in ((pm.project_to_hull(workload, truth, solver="fast"), {"workload": workload}),
                            (pm.project_to_relaxation(domain, truth), {})):
        start = time.perf_counter()
        with pytest.raises(ValueError, match=r"^n: 1,000,000,000,000 rows of 3 attributes hold about [\d.]+ TiB, "
                                             r"more than the .*; draw fewer rows"):
            pm.synthetic_data(domain, result, 10**12, np.random.default_rng(0), **options)
        assert time.perf_counter() - start < 5
        # What fits is drawn as before.
        assert len(pm.synthetic_data(domain, result, 100, np.random.default_rng(0), **options).data) == 100
