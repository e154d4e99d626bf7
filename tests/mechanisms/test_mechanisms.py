"""Gaussian, Laplace and projection mechanisms.

Every expected noise scale is recomputed here from the definitions (the sensitivity of the counts:
``sqrt(2)`` (l2, a workload without negative entries) or ``2`` (l1) times the largest column norm
under replace-one, once it under add/remove; then ``Delta/sqrt(2 rho)``, the dp-accounting oracle
for (epsilon, delta), or ``Delta_1/epsilon``; divided by the public size), and the noise is checked
statistically over seeded repeated releases. True answers are computed by hand with numpy, never
by the code under test.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import oracles
import projmech as pm
from oracles import F_SMALL, H_SMALL, TRUTH_SMALL, oracle_sigma
from projmech.data import Dataset, Domain
from projmech.factorization import Factorization
from projmech.mechanisms import (
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
    Release,
)
from projmech.privacy import ZCDP, ApproxDP, Neighbouring, PureDP
from projmech.validation import as_generator
from projmech.workloads import Workload, identity, kron, marginals, stack

# F_SMALL (from oracles) has l2 column norms sqrt(2), sqrt(5), sqrt(0.5), sqrt(0.14) and l1 column
# norms 2, 3, 1, 0.6, so only the largest column sets the sensitivity.
N_SMALL = 50
MAX_L2 = math.sqrt(5.0)
MAX_L1 = 3.0
# The l2 sensitivity of the counts: under replace-one the largest distance between two columns,
# here columns 0 and 1, (1, 0, 1) - (0, 2, 1) = (1, -2, 0) of norm sqrt(5), found by brute force;
# under add/remove the largest column norm, sqrt(5) too. Written as factors of MAX_L2 = sqrt(5).
MAX_PAIR = max(np.linalg.norm(F_SMALL[:, u] - F_SMALL[:, v]) for u in range(4) for v in range(4))
FACTOR = {"replace-one": MAX_PAIR / MAX_L2, "add-remove": 1.0}
L1_FACTOR = {"replace-one": 2.0, "add-remove": 1.0}
# Under add/remove the size is declared: the histogram's own n, so the answers are F h.
SIZE = {"replace-one": {}, "add-remove": {"size": N_SMALL}}

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])
TRIALS = 4000


def small_workload() -> Workload:
    return Workload(F_SMALL)


def expected_sigma(privacy, neighbouring: str, n: int, column_norm: float) -> float:
    sensitivity = FACTOR[neighbouring] * column_norm / n
    if isinstance(privacy, ZCDP):
        return sensitivity / math.sqrt(2 * privacy.rho)
    return oracle_sigma(privacy.epsilon, privacy.delta, sensitivity)


def repeated_noise(mechanism, histogram, n, trials=TRIALS, seed=0) -> tuple[np.ndarray, list[Release]]:
    rng = np.random.default_rng(seed)
    releases = [mechanism.release(histogram, n=n, rng=rng) for _ in range(trials)]
    return np.array([r.answers for r in releases]) - TRUTH_SMALL, releases


def sample_dataset(n: int, seed: int) -> tuple[Dataset, np.ndarray]:
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.integers(0, s, size=n) for s in DOMAIN.sizes])
    return Dataset(records, DOMAIN), records


def histogram_by_hand(records: np.ndarray) -> np.ndarray:
    # Row-major universe index for sizes (2, 3, 2): a*6 + b*2 + c.
    index = records[:, 0] * 6 + records[:, 1] * 2 + records[:, 2]
    return np.bincount(index, minlength=12) / len(records)


def marginal_truth(records: np.ndarray, labels) -> np.ndarray:
    """Fraction of rows matching each label "x=i & y=j", evaluated row by row."""
    return oracles.marginal_truth(dict(zip(DOMAIN.attributes, records.T)), labels)


# --------------------------------------------------------------------------------------------
# Noise distribution
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
@pytest.mark.parametrize("privacy", [ZCDP(0.5), ApproxDP(1.0, 1e-6)], ids=["zcdp", "approx"])
def test_gaussian_noise_has_the_calibrated_std(neighbouring, privacy):
    mechanism = GaussianMechanism(small_workload(), privacy, neighbouring=neighbouring, **SIZE[neighbouring])
    sigma = expected_sigma(privacy, neighbouring, N_SMALL, MAX_L2)
    assert mechanism.sensitivity() == pytest.approx(FACTOR[neighbouring] * MAX_L2, rel=1e-12)
    assert mechanism.noise_scale(N_SMALL) == pytest.approx(sigma, rel=1e-6)

    noise, releases = repeated_noise(mechanism, H_SMALL, N_SMALL)
    assert releases[0].scale == pytest.approx(sigma, rel=1e-6)
    assert releases[0].sigma == pytest.approx(sigma, rel=1e-6)
    assert releases[0].sensitivity == pytest.approx(FACTOR[neighbouring] * MAX_L2, rel=1e-12)
    # F_SMALL has fractional entries: its counts are not integers, so the noise is continuous.
    assert releases[0].noise.name == "gaussian" and releases[0].size == N_SMALL

    # sum(noise^2)/sigma^2 ~ chi-square with TRIALS*k degrees of freedom (the mean is known).
    dof = noise.size
    statistic = float((noise**2).sum() / sigma**2)
    assert stats.chi2.ppf(1e-5, dof) < statistic < stats.chi2.isf(1e-5, dof), statistic / dof
    # Centred, uncorrelated across queries, and normal.
    assert np.all(np.abs(noise.mean(axis=0)) < 5 * sigma / math.sqrt(TRIALS))
    correlation = np.corrcoef(noise.T)
    assert np.all(np.abs(correlation[np.triu_indices(3, 1)]) < 5 / math.sqrt(TRIALS))
    assert stats.kstest(noise.ravel() / sigma, "norm").pvalue > 1e-4


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
def test_laplace_noise_has_the_calibrated_scale(neighbouring):
    epsilon = 0.8
    mechanism = LaplaceMechanism(small_workload(), PureDP(epsilon), neighbouring=neighbouring, **SIZE[neighbouring])
    b = L1_FACTOR[neighbouring] * MAX_L1 / N_SMALL / epsilon
    assert mechanism.noise_scale(N_SMALL) == pytest.approx(b, rel=1e-12)

    noise, releases = repeated_noise(mechanism, H_SMALL, N_SMALL, seed=1)
    assert releases[0].scale == pytest.approx(b, rel=1e-12)
    assert releases[0].sensitivity == pytest.approx(L1_FACTOR[neighbouring] * MAX_L1, rel=1e-12)
    assert releases[0].noise.name == "laplace"
    assert releases[0].sigma == pytest.approx(math.sqrt(2) * b, rel=1e-12)

    # E|X| = b and Var|X| = b^2 for Laplace(b): the mean absolute deviation is within 5 SE of b.
    mad = float(np.abs(noise).mean())
    assert abs(mad - b) < 5 * b / math.sqrt(noise.size), mad / b
    # The standard deviation is sqrt(2) b (Var(X^2) = 20 b^4 gives the bound).
    mean_square = float((noise**2).mean())
    assert abs(mean_square - 2 * b**2) < 5 * math.sqrt(20) * b**2 / math.sqrt(noise.size)
    assert stats.kstest(noise.ravel(), "laplace", args=(0.0, b)).pvalue > 1e-4
    # A Gaussian of the same std would be rejected by the same test.
    gaussian = np.random.default_rng(5).normal(0, math.sqrt(2) * b, size=noise.size)
    assert stats.kstest(gaussian, "laplace", args=(0.0, b)).pvalue < 1e-4


def test_classical_calibration_scale():
    epsilon, delta = 0.5, 1e-5
    mechanism = GaussianMechanism(small_workload(), ApproxDP(epsilon, delta), calibration="classical")
    sensitivity = MAX_PAIR / N_SMALL
    expected = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    assert mechanism.noise_scale(N_SMALL) == pytest.approx(expected, rel=1e-12)
    release = mechanism.release(H_SMALL, n=N_SMALL, rng=0)
    assert release.scale == pytest.approx(expected, rel=1e-12)
    projection = ProjectionMechanism(small_workload(), ApproxDP(epsilon, delta), calibration="classical")
    assert projection.noise_scale(N_SMALL) == pytest.approx(expected, rel=1e-12)


def test_default_neighbouring_is_replace_one():
    for mechanism in (GaussianMechanism(small_workload(), ZCDP(1.0)), LaplaceMechanism(small_workload(), PureDP(1.0)),
                      ProjectionMechanism(small_workload(), ZCDP(1.0))):
        assert mechanism.neighbouring is Neighbouring.REPLACE_ONE
    assert GaussianMechanism(small_workload(), ZCDP(1.0), neighbouring=Neighbouring.ADD_REMOVE,
                             size=10).sensitivity() == pytest.approx(MAX_L2)


# --------------------------------------------------------------------------------------------
# Randomness
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: GaussianMechanism(small_workload(), ApproxDP(1.0, 1e-6)),
    lambda: LaplaceMechanism(small_workload(), PureDP(1.0)),
    lambda: ProjectionMechanism(small_workload(), ApproxDP(1.0, 1e-6)),
], ids=["gaussian", "laplace", "projection"])
def test_seeding(make):
    mechanism = make()
    first = mechanism.release(H_SMALL, n=N_SMALL, rng=123)
    again = mechanism.release(H_SMALL, n=N_SMALL, rng=123)
    np.testing.assert_array_equal(first.answers, again.answers)
    np.testing.assert_array_equal(first.noisy_answers, again.noisy_answers)
    from_generator = mechanism.release(H_SMALL, n=N_SMALL, rng=np.random.default_rng(123))
    np.testing.assert_array_equal(first.noisy_answers, from_generator.noisy_answers)
    other = mechanism.release(H_SMALL, n=N_SMALL, rng=124)
    assert not np.any(first.noisy_answers == other.noisy_answers)
    # A shared generator advances: two releases from it differ.
    generator = np.random.default_rng(7)
    a = mechanism.release(H_SMALL, n=N_SMALL, rng=generator)
    b = mechanism.release(H_SMALL, n=N_SMALL, rng=generator)
    assert not np.any(a.noisy_answers == b.noisy_answers)
    # rng=None draws fresh entropy.
    fresh1 = mechanism.release(H_SMALL, n=N_SMALL)
    fresh2 = mechanism.release(H_SMALL, n=N_SMALL, rng=None)
    assert fresh1.answers.shape == (3,) and np.all(np.isfinite(fresh1.answers))
    assert not np.any(fresh1.noisy_answers == fresh2.noisy_answers)


@pytest.mark.parametrize("bad", [np.random.RandomState(0), "0", 1.5, True, [0]])
def test_rng_refuses_non_generators(bad):
    mechanism = GaussianMechanism(small_workload(), ZCDP(1.0))
    with pytest.raises(TypeError, match="rng"):
        mechanism.release(H_SMALL, n=N_SMALL, rng=bad)
    with pytest.raises(TypeError, match="rng"):
        as_generator(bad)


def test_as_generator():
    generator = np.random.default_rng(3)
    assert as_generator(generator) is generator
    np.testing.assert_array_equal(as_generator(9).random(4), np.random.default_rng(9).random(4))
    np.testing.assert_array_equal(as_generator(np.int64(9)).random(4), np.random.default_rng(9).random(4))
    assert isinstance(as_generator(None), np.random.Generator)


def test_global_numpy_state_is_not_used():
    mechanism = GaussianMechanism(small_workload(), ZCDP(1.0))
    np.random.seed(0)
    before = np.random.get_state()[1].copy()
    mechanism.release(H_SMALL, n=N_SMALL, rng=1)
    mechanism.release(H_SMALL, n=N_SMALL)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


# --------------------------------------------------------------------------------------------
# What a release carries
# --------------------------------------------------------------------------------------------

DOCUMENTED_FIELDS = ["answers", "noisy_answers", "label_source", "mechanism", "privacy", "neighbouring", "size",
                     "size_source", "noise", "sensitivity", "size_noise", "projection", "factorization",
                     "answer_sigma_rms", "workload", "rounds", "estimate", "measured", "metric"]


@pytest.mark.solver
@pytest.mark.parametrize("kind", ["gaussian", "laplace", "projection", "factorization", "adaptive_projection"])
def test_release_never_carries_truth(kind):
    data, records = sample_dataset(30, seed=2)
    h = histogram_by_hand(records)
    workload = marginals(DOMAIN, 2)
    truth = marginal_truth(records, workload.labels)
    mechanism = {
        "gaussian": lambda: GaussianMechanism(workload, ApproxDP(1.0, 1e-6)),
        "laplace": lambda: LaplaceMechanism(workload, PureDP(1.0)),
        "projection": lambda: ProjectionMechanism(workload, ApproxDP(1.0, 1e-6)),
        "factorization": lambda: FactorizationMechanism(workload, ApproxDP(1.0, 1e-6)),
        "adaptive_projection": lambda: pm.AdaptiveProjectionMechanism(workload, ApproxDP(1.0, 1e-6)),
    }[kind]()
    release = mechanism.release(data, rng=11)

    assert [f.name for f in dataclasses.fields(Release)] == DOCUMENTED_FIELDS
    assert sorted(vars(release)) == sorted(DOCUMENTED_FIELDS)  # nothing attached on the side
    values = [getattr(release, name) for name in DOCUMENTED_FIELDS]
    if release.projection is not None:
        values += [getattr(release.projection, f.name) for f in dataclasses.fields(release.projection)]
    for value in values:
        if isinstance(value, np.ndarray):
            if value.shape == truth.shape:
                assert not np.allclose(value, truth, atol=1e-3)
            if value.shape == h.shape:
                assert not np.allclose(value, h, atol=1e-3)
    assert release.labels == workload.labels  # built from the workload, on first access
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.answers = truth  # type: ignore[misc]
    assert release.labels == workload.labels
    assert release.mechanism == kind


@pytest.mark.solver
def test_release_summary_is_json_and_states_the_guarantee():
    data, _ = sample_dataset(40, seed=3)
    workload = marginals(DOMAIN, 2)
    cases = [
        (GaussianMechanism(workload, ApproxDP(0.5, 1e-7)), "(0.5, 1e-07)-DP",
         {"type": "ApproxDP", "epsilon": 0.5, "delta": 1e-7}, "replace-one"),
        (GaussianMechanism(workload, ZCDP(0.25), neighbouring="add-remove", size=40), "0.25-zCDP",
         {"type": "ZCDP", "rho": 0.25}, "add-remove"),
        (LaplaceMechanism(workload, PureDP(2.0)), "2-DP", {"type": "PureDP", "epsilon": 2.0}, "replace-one"),
        (ProjectionMechanism(workload, ApproxDP(1.0, 1e-6), neighbouring="add-remove", size=40), "(1, 1e-06)-DP",
         {"type": "ApproxDP", "epsilon": 1.0, "delta": 1e-6}, "add-remove"),
    ]
    k = 2 * 3 + 2 * 2 + 3 * 2
    for mechanism, guarantee, privacy, neighbouring in cases:
        release = mechanism.release(data, rng=0)
        summary = release.summary()
        parsed = json.loads(json.dumps(summary))
        assert parsed == json.loads(release.to_json())
        assert parsed["guarantee"] == guarantee
        assert parsed["privacy"] == privacy
        assert parsed["neighbouring"] == neighbouring
        assert parsed["size"] == 40 and parsed["num_queries"] == k
        assert parsed["size_source"] == ("declared" if neighbouring == "add-remove" else "public n")
        assert parsed["mechanism"] == mechanism.mechanism_name
        # Marginal counts are integers: exact discrete noise by default.
        assert parsed["noise"]["distribution"] == "discrete_" + ("laplace" if guarantee == "2-DP" else "gaussian")
        assert parsed["noise"]["scale"] == pytest.approx(release.noise.scale)
        assert parsed["sigma"] == pytest.approx(release.noise.std / 40)
        if isinstance(mechanism, ProjectionMechanism):
            solver = parsed["solver"]
            assert solver["solver"] in {"CLARABEL", "ECOS", "OSQP", "SCS"}
            assert solver["status"].startswith("optimal")
            assert 0 <= solver["gap"] <= solver["tolerance"]
            assert solver["distance"] == pytest.approx(np.linalg.norm(release.answers - release.noisy_answers))
        else:
            assert "solver" not in parsed
        frame = release.to_frame()
        assert list(frame["query"]) == list(workload.labels)
        np.testing.assert_array_equal(frame["answer"].to_numpy(), release.answers)
        np.testing.assert_allclose(release.counts, 40 * release.answers)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def test_dataset_sparse_and_dense_histograms_give_the_same_release():
    data, records = sample_dataset(57, seed=4)
    h = histogram_by_hand(records)
    mechanism = GaussianMechanism(marginals(DOMAIN, 2), ZCDP(1.0), noise="continuous")  # seeded noise
    from_data = mechanism.release(data, rng=5)
    from_dense = mechanism.release(h, n=57, rng=5)
    from_list = mechanism.release(list(h), n=57, rng=5)
    from_sparse = mechanism.release(sp.csr_array(h.reshape(1, -1)), n=57, rng=5)
    assert from_data.size == 57
    for other in (from_dense, from_list, from_sparse):
        np.testing.assert_allclose(other.answers, from_data.answers, rtol=0, atol=1e-14)
    # With negligible noise the release is the truth, computed here row by row.
    quiet = GaussianMechanism(marginals(DOMAIN, 2), ZCDP(1e14)).release(data, rng=5)
    np.testing.assert_allclose(quiet.answers, marginal_truth(records, mechanism.workload.labels), atol=1e-6)


def test_release_does_not_modify_the_histogram():
    h = H_SMALL.copy()
    ProjectionMechanism(small_workload(), ZCDP(1.0)).release(h, n=N_SMALL, rng=0)
    np.testing.assert_array_equal(h, H_SMALL)


@pytest.mark.parametrize("mechanism_factory", [
    lambda w: GaussianMechanism(w, ZCDP(1.0)),
    lambda w: LaplaceMechanism(w, PureDP(1.0)),
    lambda w: ProjectionMechanism(w, ZCDP(1.0)),
], ids=["gaussian", "laplace", "projection"])
@pytest.mark.parametrize("histogram, n, match", [
    (H_SMALL * 2, N_SMALL, "normalized"),
    (H_SMALL * 0.999, N_SMALL, "normalized"),
    (np.array([0.5, 0.6, -0.1, 0.0]), N_SMALL, "negative"),
    (np.array([0.5, np.nan, 0.5, 0.0]), N_SMALL, "NaN"),
    (np.array([0.5, np.inf, 0.5, 0.0]), N_SMALL, "infinite"),
    (np.array([0.5, 0.5, 0.0]), N_SMALL, "histogram"),
    (np.full((2, 2), 0.25), N_SMALL, "histogram"),  # a matrix is not a histogram
    (np.array([0.3, 0.3, 0.4, 0.0]), 7, "n"),  # 7 h is not a vector of counts
    (H_SMALL, None, "n"),
    (H_SMALL, 0, "n"),
    (H_SMALL, -5, "n"),
    (H_SMALL, 2.5, "n"),
    (H_SMALL, True, "n"),
])
def test_bad_histograms(mechanism_factory, histogram, n, match):
    mechanism = mechanism_factory(small_workload())
    with pytest.raises((ValueError, TypeError), match=match):
        mechanism.release(histogram, n=n, rng=0)


def test_bad_datasets():
    data, _ = sample_dataset(20, seed=6)
    mechanism = GaussianMechanism(marginals(DOMAIN, 2), ZCDP(1.0))
    with pytest.raises(ValueError, match="n: given 19"):
        mechanism.release(data, n=19, rng=0)
    assert mechanism.release(data, n=20, rng=0).size == 20  # a matching n is fine

    renamed = Dataset(data.records, Domain(["x", "b", "c"], [2, 3, 2]))
    with pytest.raises(ValueError, match="domain"):
        mechanism.release(renamed, rng=0)
    resized = Dataset(data.records, Domain(["a", "b", "c"], [2, 3, 3]))
    with pytest.raises(ValueError, match="domain"):
        mechanism.release(resized, rng=0)
    # A workload without a domain still checks the universe size.
    with pytest.raises(ValueError, match="universe"):
        GaussianMechanism(identity(13), ZCDP(1.0)).release(data, rng=0)


def test_bad_constructor_arguments():
    workload = small_workload()
    with pytest.raises(TypeError, match="PureDP|LaplaceMechanism"):
        GaussianMechanism(workload, PureDP(1.0))
    with pytest.raises(TypeError, match="PureDP|LaplaceMechanism"):
        ProjectionMechanism(workload, PureDP(1.0))
    with pytest.raises(TypeError, match="PureDP"):
        LaplaceMechanism(workload, ApproxDP(1.0, 1e-6))
    with pytest.raises(TypeError, match="PureDP"):
        LaplaceMechanism(workload, ZCDP(1.0))
    for factory in (lambda **kw: GaussianMechanism(workload, ZCDP(1.0), **kw),
                    lambda **kw: LaplaceMechanism(workload, PureDP(1.0), **kw),
                    lambda **kw: ProjectionMechanism(workload, ZCDP(1.0), **kw)):
        with pytest.raises(ValueError, match="neighbouring"):
            factory(neighbouring="foo")
    with pytest.raises(TypeError, match="workload"):
        GaussianMechanism(F_SMALL, ZCDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="privacy"):
        GaussianMechanism(workload, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="calibration"):
        GaussianMechanism(workload, ApproxDP(0.5, 1e-6), calibration="tight")
    with pytest.raises(ValueError, match="epsilon"):
        GaussianMechanism(workload, ApproxDP(1.0, 1e-6), calibration="classical")
    with pytest.raises(ValueError, match="epsilon"):
        ProjectionMechanism(workload, ApproxDP(2.0, 1e-6), calibration="classical")
    # Checked at construction, before any data is touched.
    with pytest.raises(TypeError, match="positional"):  # options are keyword-only
        ProjectionMechanism(workload, ZCDP(1.0), "add-remove")
    with pytest.raises(ValueError, match="tol"):
        ProjectionMechanism(workload, ZCDP(1.0), tol=-1.0)
    with pytest.raises(ValueError, match="noise"):
        GaussianMechanism(workload, ZCDP(1.0), noise="discrete")  # F_SMALL's counts are not integers
    with pytest.raises(ValueError, match="noise"):
        GaussianMechanism(workload, ZCDP(1.0), noise="exact")


# --------------------------------------------------------------------------------------------
# Projection mechanism
# --------------------------------------------------------------------------------------------


def independent_fw_gap(F: np.ndarray, y: np.ndarray, p: np.ndarray) -> float:
    """max over vertices v = F e_j of <p - y, p - v>: bounds the suboptimality of p in K_Q."""
    return float(np.max((p - y) @ (p[:, None] - F)))


@pytest.mark.solver
def test_projection_is_a_certified_projection_that_never_hurts():
    data, records = sample_dataset(25, seed=8)
    workload = marginals(DOMAIN, 2)
    F = workload.toarray()
    truth = marginal_truth(records, workload.labels)
    privacy = ApproxDP(1.0, 1e-6)
    # Continuous noise, so that the same seed gives both mechanisms the same draws.
    projection = ProjectionMechanism(workload, privacy, noise="continuous")
    gaussian = GaussianMechanism(workload, privacy, noise="continuous")
    sizes = [2 * 3, 2 * 2, 3 * 2]
    improvements = []
    for seed in range(30):
        released = projection.release(data, rng=seed)
        plain = gaussian.release(data, rng=seed)
        # Same noise as the Gaussian mechanism with the same seed.
        np.testing.assert_array_equal(released.noisy_answers, plain.answers)
        assert released.scale == plain.scale

        # The answers lie in K_Q: a witness distribution reproduces them.
        w = released.witness
        assert w.shape == (12,)
        assert np.all(w >= 0)
        assert abs(w.sum() - 1) <= 1e-12
        np.testing.assert_allclose(F @ w, released.answers, rtol=0, atol=1e-9)
        # Marginal tables of a distribution: non-negative, each table sums to 1.
        assert np.all(released.answers >= -1e-12)
        offsets = np.cumsum([0] + sizes)
        for start, stop in zip(offsets[:-1], offsets[1:]):
            assert released.answers[start:stop].sum() == pytest.approx(1.0, abs=1e-9)

        # Optimality, certified independently: <p - y, p - v> <= gap for every vertex v.
        y, p = released.noisy_answers, released.answers
        gap = independent_fw_gap(F, y, p)
        assert gap <= 1e-8 * max(1.0, 0.5 * np.sum((p - y) ** 2))
        # Hence ||p - x||^2 <= ||y - x||^2 - ||y - p||^2 + 2 gap for the truth x in K_Q.
        gaussian_error = np.linalg.norm(y - truth)
        projection_error = np.linalg.norm(p - truth)
        assert projection_error**2 <= gaussian_error**2 - np.sum((y - p) ** 2) + 2 * gap + 1e-12
        assert projection_error <= gaussian_error
        improvements.append(gaussian_error / projection_error)
    # At n = 25 the noise is far outside K_Q; projecting helps a lot, not by rounding luck.
    assert np.median(improvements) > 1.5


@pytest.mark.solver
def test_projection_of_a_point_inside_the_hull_is_itself():
    """With negligible noise the noisy answers are (almost) the truth, a point of K_Q."""
    data, records = sample_dataset(200, seed=9)
    workload = marginals(DOMAIN, 2)
    released = ProjectionMechanism(workload, ZCDP(1e12)).release(data, rng=0)
    truth = marginal_truth(records, workload.labels)
    np.testing.assert_allclose(released.answers, truth, atol=1e-6)
    np.testing.assert_allclose(released.noisy_answers, truth, atol=1e-6)


@pytest.mark.solver
def test_projection_solver_choice_and_error_type():
    mechanism = ProjectionMechanism(small_workload(), ZCDP(1.0), solver="ECOS")
    release = mechanism.release(H_SMALL, n=N_SMALL, rng=0)
    assert release.projection.stats.solver == "ECOS"
    with pytest.raises(ValueError, match="solver"):
        ProjectionMechanism(small_workload(), ZCDP(1.0), solver="GUROBI-9000").release(H_SMALL, n=N_SMALL, rng=0)


# --------------------------------------------------------------------------------------------
# Expected error
# --------------------------------------------------------------------------------------------


def closed_form_expected_rmse(sigma: float, k: int) -> float:
    return sigma * math.sqrt(2) * math.gamma((k + 1) / 2) / math.gamma(k / 2) / math.sqrt(k)


@pytest.mark.parametrize("privacy", [ZCDP(0.3), ApproxDP(0.7, 1e-8)], ids=["zcdp", "approx"])
def test_expected_error_against_closed_form_and_monte_carlo(privacy):
    workload = small_workload()
    mechanism = GaussianMechanism(workload, privacy, neighbouring="add-remove", size=N_SMALL)
    sigma = expected_sigma(privacy, "add-remove", N_SMALL, MAX_L2)
    assert mechanism.expected_error(N_SMALL) == pytest.approx(sigma, rel=1e-6)  # rms: sqrt(E ||Z||^2 / k)
    expected = mechanism.expected_error(N_SMALL, measure="mean")
    assert expected == pytest.approx(closed_form_expected_rmse(sigma, 3), rel=1e-6)

    rng = np.random.default_rng(21)
    errors = np.array([
        np.sqrt(np.mean((mechanism.release(H_SMALL, n=N_SMALL, rng=rng).answers - TRUTH_SMALL) ** 2))
        for _ in range(3000)
    ])
    low, high = stats.t.interval(0.99, errors.size - 1, loc=errors.mean(), scale=stats.sem(errors))
    assert low <= expected <= high, (low, expected, high)
    # The expectation of the RMSE is below sigma (Jensen), and the Monte Carlo sees that too.
    assert expected < sigma and high < sigma
    squared = np.array([np.mean((mechanism.release(H_SMALL, n=N_SMALL, rng=rng).answers - TRUTH_SMALL) ** 2)
                        for _ in range(3000)])
    low, high = stats.t.interval(0.99, squared.size - 1, loc=squared.mean(), scale=stats.sem(squared))
    assert low <= mechanism.expected_error(N_SMALL) ** 2 <= high


def test_expected_error_on_marginals_tracks_n():
    workload = marginals(DOMAIN, 2)  # ||F||_{1->2} = sqrt(C(3, 2)) = sqrt(3), k = 16
    mechanism = GaussianMechanism(workload, ZCDP(0.5))
    for n in (10, 100, 1000):
        # Replace-one counts of a non-negative workload: sensitivity sqrt(2) ||F||_{1->2}.
        sigma = math.sqrt(2) * math.sqrt(3) / n / math.sqrt(2 * 0.5)
        assert mechanism.expected_error(n, measure="mean") == pytest.approx(closed_form_expected_rmse(sigma, 16),
                                                                            rel=1e-12)
        assert mechanism.expected_error(n) == pytest.approx(sigma, rel=1e-12)
    with pytest.raises(ValueError, match="measure"):
        mechanism.expected_error(10, measure="max")
    with pytest.raises(TypeError, match="positional"):
        mechanism.expected_error(10, "mean")


# --------------------------------------------------------------------------------------------
# Sensitivity of workloads far from unit scale
# --------------------------------------------------------------------------------------------

# A unit-scale workload; the workloads below are it times a scale v, so their sensitivities are
# v times its own, found here by brute force over columns and pairs of columns.
G_UNIT = np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 0.5]])


def brute_l2_sensitivity(matrix: np.ndarray, relation: str) -> float:
    columns = range(matrix.shape[1])
    if relation == "add-remove":
        return max(np.linalg.norm(matrix[:, u]) for u in columns)
    return max(np.linalg.norm(matrix[:, u] - matrix[:, v]) for u in columns for v in columns)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 1e200])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_sensitivity_of_a_workload_far_from_unit_scale(scale, sparse, relation):
    """Norms and column distances are computed scale-safely: at 1e-200 the squares underflowed and
    the sensitivity, and so the noise, was 0 (at 1e-160 slightly low, 9.99994e-161 for 1e-160);
    at 1e200 they overflowed to inf and the mechanism was refused."""
    matrix = scale * G_UNIT
    workload = Workload(sp.csr_array(matrix) if sparse else matrix)
    size = {"size": 10} if relation == "add-remove" else {}
    gaussian = GaussianMechanism(workload, ZCDP(0.5), neighbouring=relation, noise="continuous", **size)
    expected = scale * brute_l2_sensitivity(G_UNIT, relation)
    assert gaussian.sensitivity() == pytest.approx(expected, rel=1e-12, abs=0)
    assert gaussian.noise.scale == pytest.approx(expected, rel=1e-12, abs=0)  # Delta / sqrt(2 rho), rho = 1/2
    # l1 (Laplace): the largest column's l1 norm, 2 v, doubled under replace-one.
    laplace = LaplaceMechanism(workload, PureDP(1.0), neighbouring=relation, noise="continuous", **size)
    assert laplace.sensitivity() == pytest.approx(L1_FACTOR[relation] * 2.0 * scale, rel=1e-12, abs=0)
    # The factorization mechanism measures a strategy: here v I, reconstructed by G_UNIT.
    factorization = FactorizationMechanism(workload, ZCDP(0.5), factorization=Factorization(workload,
                                                                                            scale * np.eye(3), G_UNIT),
                                           neighbouring=relation, noise="continuous", **size)
    expected = scale * (math.sqrt(2.0) if relation == "replace-one" else 1.0)
    assert factorization.sensitivity() == pytest.approx(expected, rel=1e-12, abs=0)
    assert factorization.noise.scale == pytest.approx(expected, rel=1e-12, abs=0)


def test_the_audited_tiny_workload_is_released_with_noise():
    """The audit's case: F = [[1e-200, 0]] released 1e-200 on [[0]] and 0 on [[1]], exactly."""
    domain = Domain(["a"], [2])
    workload = Workload(np.array([[1e-200, 0.0]]), domain=domain)
    for relation, size in (("replace-one", {}), ("add-remove", {"size": 1})):
        mechanism = GaussianMechanism(workload, ZCDP(0.5), neighbouring=relation, **size)
        assert mechanism.sensitivity() == pytest.approx(1e-200, rel=1e-12, abs=0)  # |1e-200 - 0|, and ||F||_{1->2}
        assert mechanism.noise.scale == pytest.approx(1e-200, rel=1e-12, abs=0)
        for row, truth in ((0, 1e-200), (1, 0.0)):
            answers = mechanism.release(Dataset(np.array([[row]]), domain), rng=row).answers
            assert answers[0] != truth and abs(answers[0] - truth) < 10e-200


@pytest.mark.parametrize("value", [5e-324, 1e-310])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_a_nonzero_workload_whose_sensitivity_is_subnormal_is_refused(value, sparse, relation):
    """Below float64's smallest normal number (2.2e-308) the sensitivity is refused, naming the
    workload, where it came out 0 (no noise at all) before."""
    matrix = np.array([[value, 0.0], [0.0, 0.0]])
    workload = Workload(sp.csr_array(matrix) if sparse else matrix)
    size = {"size": 10} if relation == "add-remove" else {}
    for build in (lambda: GaussianMechanism(workload, ZCDP(0.5), neighbouring=relation, **size),
                  lambda: LaplaceMechanism(workload, PureDP(1.0), neighbouring=relation, **size)):
        with pytest.raises(ValueError, match=r"^workload: .* sensitivity .* below float64's smallest normal"):
            build()


def test_an_all_zero_workload_keeps_sensitivity_zero():
    """Zero queries have zero sensitivity: no noise is needed, and nothing is refused."""
    for workload in (Workload(np.zeros((2, 3))), Workload(sp.csr_array((2, 3)))):
        for relation, size in (("replace-one", {}), ("add-remove", {"size": 5})):
            mechanism = GaussianMechanism(workload, ZCDP(0.5), neighbouring=relation, **size)
            assert mechanism.sensitivity() == 0.0 and mechanism.noise.scale == 0.0
            assert LaplaceMechanism(workload, PureDP(1.0), neighbouring=relation, **size).sensitivity() == 0.0


@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_structured_workloads_far_from_unit_scale(relation):
    """Stacks and Kronecker products combine their parts' norms and Gram matrices scale-safely
    (each part 1e-200 I: their squares underflowed to a sensitivity of 0)."""
    tiny = Workload(1e-200 * np.eye(2))
    for structured, unit in ((stack([tiny, tiny]), np.vstack([np.eye(2), np.eye(2)])),
                             (kron([tiny, identity(2)]), np.kron(np.eye(2), np.eye(2))),
                             (stack([tiny, Workload(1e-250 * np.ones((1, 2)))]), np.vstack([np.eye(2),
                                                                                            1e-50 * np.ones((1, 2))]))):
        expected = 1e-200 * brute_l2_sensitivity(unit, relation)
        assert structured.count_sensitivity(relation, 2) == pytest.approx(expected, rel=1e-12, abs=0)


# --------------------------------------------------------------------------------------------
# Memory: a projection this machine cannot hold is refused at construction (issue 31)
# --------------------------------------------------------------------------------------------

#: 10 attributes of 17 values: a universe of 17^10 = 2,015,993,900,449 cells, whose vectors
#: alone (8 bytes per cell) would take 14.7 TiB.
HUGE_DOMAIN = Domain([f"p{i}" for i in range(10)], [17] * 10)


@pytest.mark.parametrize("make", [
    lambda w: ProjectionMechanism(w, ZCDP(0.5), body="hull"),
    lambda w: ProjectionMechanism(w, ZCDP(0.5), body="hull", solver="fast"),
    lambda w: FactorizationMechanism(w, ZCDP(0.5), project=True, body="hull"),
], ids=["projection", "projection-fast", "factorization+projection"])
def test_a_hull_over_a_huge_universe_is_refused_at_once(make):
    """A ValueError naming the workload, with its size and remedies, within a second: not numpy's
    MemoryError from the first release (nor a real allocation of tens of GiB)."""
    import re
    import time

    workload = marginals(HUGE_DOMAIN, 1, implicit=True)
    start = time.perf_counter()
    with pytest.raises(ValueError) as error:
        make(workload)
    assert time.perf_counter() - start < 5
    message = str(error.value)
    assert message.startswith("workload: projecting onto the hull K_Q holds vectors over the universe of "
                              "2,015,993,900,449 elements, about ")
    # 48 bytes per cell at least: beyond any machine's memory, in TiB.
    assert re.search(r"about (\d+(\.\d+)?) TiB, more than the ", message)
    assert float(re.search(r"about (\d+(\.\d+)?) TiB", message).group(1)) >= 48 * 17**10 / 2**40 * 0.999
    assert "fewer or coarser attributes" in message and "without projection" in message


def test_body_auto_finds_no_body_over_a_huge_universe_at_once():
    """The default body refuses overlapping tables read through prefix queries over the huge
    domain (the hull is out, the relaxation holds 2-way marginals only, the tables overlap and the
    local polytope takes identity blocks only) in the constructor, for both projecting mechanisms;
    its 1-way marginals, disjoint tables, go to the tables body and its 3-way marginals to their
    local polytope."""
    import time

    from projmech.workloads import range_marginals

    assert ProjectionMechanism(marginals(HUGE_DOMAIN, 1, implicit=True), ZCDP(0.5)).body.name == "tables"
    assert ProjectionMechanism(marginals(HUGE_DOMAIN, 3, implicit=True), ZCDP(0.5)).body.name == "local"
    workload = range_marginals(HUGE_DOMAIN, 2, {"p0": "prefix"})
    for make in (lambda: ProjectionMechanism(workload, ZCDP(0.5)),
                 lambda: FactorizationMechanism(workload, ZCDP(0.5), project=True)):
        start = time.perf_counter()
        with pytest.raises(ValueError, match="body: 'auto' finds no tractable body.*'local' cannot take it"):
            make()
        assert time.perf_counter() - start < 5
    # The 2-way marginals of the same domain have a body that fits: the relaxation, whose size
    # grows with the attributes (a 171 x 171 moment matrix here), not with the universe.
    two_way = marginals(HUGE_DOMAIN, 2, implicit=True)
    assert ProjectionMechanism(two_way, ZCDP(0.5)).body.name == "relaxed"
    with pytest.raises(ValueError, match="^workload: .* use body='relaxed'"):
        ProjectionMechanism(two_way, ZCDP(0.5), body="hull")


def test_the_memory_model_decides_against_the_available_memory(monkeypatch):
    """With the memory available set by hand, the hull of 2-way marginals of 12 binary attributes
    fits or not by the model's own figures (48 bytes per universe element, 48 per entry of the
    active set's k x (rank + 1) columns), and body="auto" falls back to the relaxation."""
    import projmech.bodies._memory as memory
    from projmech.bodies import _hull as hull

    workload = marginals(Domain([f"x{i}" for i in range(12)], [2] * 12), 2, implicit=True)
    k, m = workload.shape  # 264 x 4096; rank 1 + 12 + 66 = 79
    needed = 48 * m + 48 * k * (1 + 12 + 66 + 1)
    assert hull.projection_memory(workload) == needed
    monkeypatch.setattr(memory, "available_memory", lambda: int(needed / memory.MEMORY_FRACTION) + 1)
    assert ProjectionMechanism(workload, ZCDP(0.5), body="hull").body.name == "hull"
    monkeypatch.setattr(memory, "available_memory", lambda: int(needed / memory.MEMORY_FRACTION) - 1)
    with pytest.raises(ValueError, match=r"^workload: projecting onto the hull K_Q holds vectors over the "
                                         r"universe of 4,096 elements and up to 80 columns of 264 answers .*; "
                                         r"use body='relaxed'"):
        ProjectionMechanism(workload, ZCDP(0.5), body="hull")
    assert ProjectionMechanism(workload, ZCDP(0.5)).body.name == "relaxed"
    mechanism = FactorizationMechanism(workload, ZCDP(0.5), project=True)
    assert mechanism.body.name == "relaxed"
    # Unknown memory (no psutil, no sysconf) refuses nothing.
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    assert ProjectionMechanism(workload, ZCDP(0.5), body="hull").body.name == "hull"


class _Terminal:
    """A stand-in for standard error on a terminal, keeping what is written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "not a terminal"])
def test_a_slow_projection_shows_progress_on_a_terminal_only(monkeypatch, terminal):
    """A projection past PROGRESS_DELAY (set to 0 here) draws a progress bar where standard error
    is a terminal, and nothing anywhere else."""
    import io
    import sys

    import projmech.bodies._body as body_module

    monkeypatch.setattr(body_module, "PROGRESS_DELAY", 0.0)
    stream = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    data = Dataset(np.random.default_rng(0).integers(0, 2, size=(40, 3)), domain)
    # Solvers that report their iterations: the active-set solver, and the ADMM (every 10th).
    for mechanism in (ProjectionMechanism(marginals(domain, 2), ZCDP(0.05), body="hull", solver="fast",
                                          noise="continuous"),
                      FactorizationMechanism(marginals(domain, 2), ZCDP(0.05), project=True, body="relaxed",
                                             noise="continuous")):
        release = mechanism.release(data, rng=1)
        assert release.projection is not None and release.projection.stats.iterations >= 10 ** (
            mechanism.body.name == "relaxed")
        written = stream.text if terminal else stream.getvalue()
        if terminal:
            assert f"projecting onto {mechanism.body.name}" in written
        else:
            assert written == ""


def test_every_non_interactive_mechanism_follows_the_mechanism_protocol():
    from projmech.mechanisms import CountingMechanism, Mechanism

    workload = pm.identity(4)
    mechanisms = [pm.GaussianMechanism(workload, pm.ZCDP(1.0)), pm.LaplaceMechanism(workload, pm.PureDP(1.0)),
                  pm.ProjectionMechanism(workload, pm.ZCDP(1.0)), pm.FactorizationMechanism(workload, pm.ZCDP(1.0)),
                  pm.OfflinePMW(workload, pm.PureDP(1.0), rounds=1)]
    for mechanism in mechanisms:
        assert isinstance(mechanism, Mechanism) and isinstance(mechanism, CountingMechanism)
    data = pm.Dataset(np.array([[0], [1], [1], [3]]), pm.Domain(["x"], [4]))
    for mechanism in mechanisms:  # one release signature: the generator by keyword
        assert mechanism.release(data, rng=0).answers.shape == (4,)
    assert not isinstance(pm.Threshold(data, threshold=0.5, epsilon=1.0), Mechanism)


def test_the_tables_bodies_never_need_the_explicit_matrix():
    assert ProjectionMechanism.needs_matrix(body="local") is False
    assert ProjectionMechanism.needs_matrix(body="tables", solver="CLARABEL") is False
    assert ProjectionMechanism.needs_matrix(body="hull", solver="CLARABEL") is True
    assert ProjectionMechanism.needs_matrix(body="relaxed", solver="CLARABEL") is False
