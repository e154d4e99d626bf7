"""ProjectionMechanism onto the relaxation L of 2-way marginals (``body="relaxed"``) and the
choice of body (``body="auto"``).

True answers are counted pair by pair from the records here, never by the code under test; the
noise is checked to be the Gaussian mechanism's, draw for draw.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from projmech.bodies import HULL_MAX_UNIVERSE, RelaxationResult
from projmech.data import Dataset, Domain
from projmech.mechanisms import GaussianMechanism, ProjectionMechanism
from projmech.privacy import ZCDP, ApproxDP
from projmech.workloads import Workload, all_range, identity, marginals


def binary_data(d: int, n: int, seed: int) -> Dataset:
    """Rows over {0,1}^d with skewed, correlated attributes (so the noisy point leaves L)."""
    rng = np.random.default_rng(seed)
    latent = rng.random(n)[:, None]
    records = (rng.random((n, d)) < 0.2 + 0.6 * latent * rng.random(d)).astype(int)
    return Dataset(records, Domain([f"x{i}" for i in range(d)], [2] * d))


def pair_truth(data: Dataset) -> np.ndarray:
    """Every 2-way table, pairs lexicographic, cells row-major, by direct counting."""
    sizes, records = data.domain.sizes, data.records
    return np.concatenate([
        np.bincount(records[:, a] * sizes[b] + records[:, b], minlength=sizes[a] * sizes[b]) / data.n
        for a, b in itertools.combinations(range(len(sizes)), 2)
    ])


def table_sums(answers: np.ndarray, sizes) -> np.ndarray:
    cells = [sizes[a] * sizes[b] for a, b in itertools.combinations(range(len(sizes)), 2)]
    return np.add.reduceat(answers, np.concatenate([[0], np.cumsum(cells)[:-1]]))


def test_relaxed_release_on_a_dataset_and_on_its_histogram():
    data = binary_data(5, 40, seed=1)
    workload = marginals(data.domain, 2)
    mechanism = ProjectionMechanism(workload, ZCDP(0.5), body="relaxed", noise="continuous")  # seeded draws
    assert mechanism.body.name == "relaxed" and mechanism.body.relaxation == "sdp+local"
    from_data = mechanism.release(data, rng=3)
    counts = np.zeros(data.domain.size)
    np.add.at(counts, data.records @ (2 ** np.arange(4, -1, -1)), 1.0)  # row-major index over {0,1}^5
    from_histogram = mechanism.release(counts / data.n, n=data.n, rng=3)
    np.testing.assert_allclose(from_histogram.noisy_answers, from_data.noisy_answers, rtol=0, atol=1e-15)
    # The same problem up to rounding in the input; SCS (the default) solves it to about 1e-7.
    np.testing.assert_allclose(from_histogram.answers, from_data.answers, rtol=0, atol=1e-6)

    assert isinstance(from_data.projection, RelaxationResult)
    assert from_data.witness is None
    assert from_data.moments.shape == (6, 6)
    assert from_data.answers.shape == (workload.num_queries,)
    summary = json.loads(from_data.to_json())
    assert summary["body"] == "relaxation/sdp+local" and summary["solver"]["status"] == "optimal"
    assert summary["mechanism"] == "projection"
    # Points of L with the local constraints: every table is a distribution, up to the solver's accuracy.
    np.testing.assert_allclose(table_sums(from_data.answers, data.domain.sizes), 1.0, atol=1e-5)
    assert from_data.answers.min() >= -1e-5


# At n = 30 the SDP relaxation without local constraints releases negative cells and says so.
@pytest.mark.solver
@pytest.mark.filterwarnings("ignore::projmech.bodies.NegativeCellsWarning")
@pytest.mark.parametrize("relaxation", ["sdp+local", "sdp", "local"])
def test_relaxed_noise_is_the_gaussian_mechanisms_and_projection_never_hurts(relaxation):
    data = binary_data(6, 30, seed=2)  # n = 30: the noise is large and leaves L
    workload = marginals(data.domain, 2)
    truth = pair_truth(data)
    privacy = ApproxDP(1.0, 1e-6)
    relaxed = ProjectionMechanism(workload, privacy, body="relaxed", relaxation=relaxation, noise="continuous")
    gaussian = GaussianMechanism(workload, privacy, noise="continuous")  # the same draws for a seed
    improvements = []
    for seed in range(6):
        released, plain = relaxed.release(data, rng=seed), gaussian.release(data, rng=seed)
        np.testing.assert_array_equal(released.noisy_answers, plain.answers)
        assert released.scale == plain.scale and released.sensitivity == plain.sensitivity
        noisy_error = np.linalg.norm(released.noisy_answers - truth)
        projected_error = np.linalg.norm(released.answers - truth)
        # The truth lies in L, a convex set: projecting onto it cannot move away from the truth.
        assert projected_error <= noisy_error + 1e-6
        improvements.append(noisy_error / projected_error)
    assert np.median(improvements) > 1.5


def test_relaxed_release_on_categorical_marginals():
    rng = np.random.default_rng(4)
    domain = Domain(["a", "b", "c"], [2, 3, 4])
    data = Dataset(np.column_stack([rng.integers(0, s, 25) for s in domain.sizes]), domain)
    workload = marginals(domain, 2)
    released = ProjectionMechanism(workload, ZCDP(1.0), body="relaxed", noise="continuous").release(data, rng=0)
    plain = GaussianMechanism(workload, ZCDP(1.0), noise="continuous").release(data, rng=0)
    np.testing.assert_array_equal(released.noisy_answers, plain.answers)
    truth = pair_truth(data)
    assert np.linalg.norm(released.answers - truth) <= np.linalg.norm(released.noisy_answers - truth) + 1e-6
    assert released.moments.shape == (1 + 2 + 3 + 4, 1 + 2 + 3 + 4)  # one-hot encoding


def test_auto_body():
    small = binary_data(5, 20, seed=5)
    assert ProjectionMechanism(marginals(small.domain, 2), ZCDP(1.0)).body.name == "hull"
    assert ProjectionMechanism(identity(64), ZCDP(1.0)).body.name == "hull"
    # Up to HULL_MAX_UNIVERSE, a workload L cannot take goes to the hull, implicit ones included;
    # 2-way marginals go where the cost model sends them (tests/bodies/test_cost.py): on 13 binary
    # attributes to L (measured at d = 14: hull 0.19 s, L 0.015 s); 2-way marginals beyond, to L.
    thirteen = Domain([f"x{i}" for i in range(13)], [2] * 13)
    for workload in (marginals(thirteen, 3), marginals(thirteen, 3, implicit=True)):
        assert ProjectionMechanism(workload, ZCDP(1.0)).body.name == "hull"
    for workload in (marginals(thirteen, 2), marginals(thirteen, 2, implicit=True)):
        assert ProjectionMechanism(workload, ZCDP(1.0)).body.name == "relaxed"
        assert ProjectionMechanism(workload, ZCDP(1.0), solver="fast").body.name == "hull"
    twenty_three = Domain([f"x{i}" for i in range(23)], [2] * 23)
    assert 2**23 > HULL_MAX_UNIVERSE
    assert ProjectionMechanism(marginals(twenty_three, 2, implicit=True), ZCDP(1.0)).body.name == "relaxed"
    forty = Domain([f"x{i}" for i in range(40)], [2] * 40)
    assert ProjectionMechanism(marginals(forty, 2, implicit=True), ZCDP(1.0)).body.name == "relaxed"
    # Beyond the hull, disjoint tables (all 1-way marginals) go to the tables body, K_Q over the
    # tables' cells, and other marginal tables to their local polytope; anything else that the
    # hull cannot take is refused, naming body.
    assert ProjectionMechanism(marginals(forty, 1, implicit=True), ZCDP(1.0)).body.name == "tables"
    assert ProjectionMechanism(marginals(twenty_three, 3, implicit=True), ZCDP(1.0)).body.name == "local"
    with pytest.raises(ValueError, match="body: 'auto'"):
        ProjectionMechanism(all_range(64, implicit=True), ZCDP(1.0))
    # An explicit request for the hull is honoured whatever the universe size.
    assert ProjectionMechanism(marginals(twenty_three, 2, implicit=True), ZCDP(1.0), body="hull").body.name == "hull"


def test_auto_relaxed_end_to_end_on_40_binary_attributes():
    data = binary_data(40, 2000, seed=6)  # universe 2^40: never materialized
    workload = marginals(data.domain, 2, implicit=True)
    privacy = ApproxDP(1.0, 1e-6)
    mechanism = ProjectionMechanism(workload, privacy, noise="continuous")
    assert mechanism.body.name == "relaxed"
    # The sensitivity of the counts is the closed form sqrt(C(40, 2)) times sqrt(2) (replace-one,
    # entries 0/1: two rows that differ in every attribute differ in every table).
    assert mechanism.sensitivity() == pytest.approx(math.sqrt(2) * math.sqrt(math.comb(40, 2)), rel=1e-15)
    released = mechanism.release(data, rng=np.random.default_rng(7))
    plain = GaussianMechanism(workload, privacy, noise="continuous").release(data, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(released.noisy_answers, plain.answers)
    truth = pair_truth(data)
    assert released.answers.shape == (4 * math.comb(40, 2),)
    assert np.linalg.norm(released.answers - truth) < np.linalg.norm(released.noisy_answers - truth)
    assert released.projection.constraint_violation < 1e-4  # SCS's default accuracy
    assert len(released.labels) == released.answers.size
    # A histogram over 2^40 elements cannot be given: the records are needed.
    with pytest.raises(ValueError, match="pass the Dataset"):
        mechanism.release(np.ones(3) / 3, n=3, rng=0)


def test_gaussian_mechanism_on_150_attributes_answers_the_records():
    data = binary_data(150, 60, seed=8)
    workload = marginals(data.domain, 2, implicit=True)
    quiet = GaussianMechanism(workload, ZCDP(1e14)).release(data, rng=0)
    np.testing.assert_allclose(quiet.answers, pair_truth(data), rtol=0, atol=1e-5)


def test_bad_body_and_relaxation_arguments():
    data = binary_data(4, 10, seed=9)
    two_way = marginals(data.domain, 2)
    with pytest.raises(ValueError, match="body"):
        ProjectionMechanism(two_way, ZCDP(1.0), body="ellipsoid")
    with pytest.raises(ValueError, match="relaxation"):
        ProjectionMechanism(two_way, ZCDP(1.0), body="relaxed", relaxation="sdp-only")
    with pytest.raises(ValueError, match="relaxation"):
        ProjectionMechanism(two_way, ZCDP(1.0), relaxation="lp")
    for workload in (identity(16), marginals(data.domain, 1), marginals(data.domain, 3),
                     Workload(two_way.matrix, labels=two_way.labels, domain=data.domain)):
        with pytest.raises(ValueError, match="body: 'relaxed'.*2-way marginals"):
            ProjectionMechanism(workload, ZCDP(1.0), body="relaxed")
    with pytest.raises(ValueError, match=r"body: 'relaxed'.*\['b'\]"):
        ProjectionMechanism(marginals(Domain(["a", "b", "c"], [2, 1, 3]), 2), ZCDP(1.0), body="relaxed")
    with pytest.raises(ValueError, match="body: 'hull'.*explicit matrix.*rmatvec"):
        ProjectionMechanism(all_range(64, implicit=True), ZCDP(1.0), body="hull")


def test_relaxed_release_checks_the_data():
    data = binary_data(4, 10, seed=10)
    mechanism = ProjectionMechanism(marginals(data.domain, 2, implicit=True), ZCDP(1.0), body="relaxed")
    with pytest.raises(ValueError, match="n: given 9"):
        mechanism.release(data, n=9, rng=0)
    other = Dataset(data.records, Domain(["a", "b", "c", "d"], [2, 2, 2, 2]))
    with pytest.raises(ValueError, match="domain"):
        mechanism.release(other, rng=0)
    with pytest.raises(ValueError, match="normalized"):
        mechanism.release(np.full(16, 0.5), n=10, rng=0)  # a small universe: histograms are accepted


@pytest.mark.slow
def test_relaxed_release_on_150_binary_attributes():
    data = binary_data(150, 5000, seed=11)
    workload = marginals(data.domain, 2, implicit=True)
    released = ProjectionMechanism(workload, ApproxDP(1.0, 1e-6)).release(data, rng=0)
    truth = pair_truth(data)
    assert np.linalg.norm(released.answers - truth) < np.linalg.norm(released.noisy_answers - truth)
    assert released.projection.constraint_violation < 1e-4  # SCS's default accuracy


# --------------------------------------------------------------------------------------------
# The Body protocol and choose_body: the bodies state their own rules
# --------------------------------------------------------------------------------------------


def test_bodies_state_what_they_need_and_take():
    from projmech.bodies._body import Hull, Relaxation, choose_body

    domain = Domain(["a", "b", "c"], [2, 3, 2])
    explicit, implicit = marginals(domain, 2), marginals(domain, 2, implicit=True)
    assert not Hull().needs_matrix and not Hull(solver="fast").needs_matrix and Hull(solver="SCS").needs_matrix
    assert not Relaxation().needs_matrix
    assert Hull().blocker(explicit) is None and Hull().blocker(implicit) is None
    assert "explicit matrix" in Hull(solver="CLARABEL").blocker(implicit)
    assert Relaxation().blocker(explicit) is None
    assert "2-way marginals" in Relaxation().blocker(identity(8))
    # The relaxation's own rule on the domain (MomentEncoding), not a restatement of it.
    assert "fewer than 2 values" in Relaxation().blocker(marginals(Domain(["a", "b"], [2, 1]), 2))
    assert choose_body(explicit).name == "hull" and choose_body(explicit, "relaxed").name == "relaxed"
    with pytest.raises(ValueError, match="body: solver 'CLARABEL' needs the explicit matrix"):
        choose_body(implicit, "hull", solver="CLARABEL")
    with pytest.raises(ValueError, match="solver: the relaxation 'sdp.local' is solved by 'auto' or one of"):
        choose_body(explicit, "relaxed", solver="fast")
    with pytest.raises(ValueError, match="tol: the relaxation's relative gap"):
        Relaxation(tol=2.0)
    with pytest.raises(ValueError, match="tol"):
        Hull(tol=0.0)
    with pytest.raises(TypeError, match="positional"):
        Hull("fast")
    # The bodies check solvers by the projections' own rules, so what they accept the projection runs:
    # a spelling project_to_hull refuses, or ADMM on the local relaxation, fails at construction.
    with pytest.raises(ValueError, match="solver: expected 'auto', 'fast'"):
        Hull(solver="FAST")
    with pytest.raises(ValueError, match="'admm' projects onto the semidefinite relaxations"):
        Relaxation(relaxation="local", solver="admm")
    assert Hull(solver="scs").solver == "SCS"


def test_mechanisms_say_whether_they_need_the_matrix():
    from projmech import FactorizationMechanism, LaplaceMechanism

    assert not GaussianMechanism.needs_matrix(noise="auto")
    assert not LaplaceMechanism.needs_matrix() and FactorizationMechanism.needs_matrix(project=True, solver="ECOS")
    # The optimizer needs structure or the Gram matrix only; the active-set projection, products.
    assert not FactorizationMechanism.needs_matrix() and not FactorizationMechanism.needs_matrix(project=True)
    assert not ProjectionMechanism.needs_matrix(body="auto", solver="auto")
    assert not ProjectionMechanism.needs_matrix(body="relaxed", solver="SCS")
    assert ProjectionMechanism.needs_matrix(body="hull", solver="ECOS")


def test_laplace_calibrates_from_an_implicit_workload_as_from_its_matrix():
    """The Laplace mechanism's l1 sensitivity without the matrix equals the largest column l1 norm of
    the matrix itself (add/remove), and releases as many answers."""
    from projmech import LaplaceMechanism, PureDP

    data = binary_data(5, 40, seed=3)
    implicit = marginals(data.domain, 3, implicit=True)
    matrix = marginals(data.domain, 3).matrix
    dense = matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)
    mechanism = LaplaceMechanism(implicit, PureDP(1.0), neighbouring="add-remove", size=40)
    assert mechanism.sensitivity() == np.abs(dense).sum(axis=0).max()
    assert mechanism.release(data, rng=0).answers.shape == (dense.shape[0],)


@pytest.mark.solver
def test_projection_error_bound_holds_and_is_not_the_gaussian_figure():
    """error_bound: min(Gaussian exact rms, the projection mechanism's bound (NTZ13) with the finite-class width bound),
    checked against an independent computation of both and against Monte Carlo."""
    from projmech.analysis.geometry import gaussian_width_bound
    from projmech.workloads import prefix

    workload = prefix(32)
    # Small n, large noise: where the theorem's sqrt(sigma l*/k) is below sigma (sigma > l*/k).
    n, privacy = 10, ZCDP(0.05)
    mechanism = ProjectionMechanism(workload, privacy, noise="continuous")
    gaussian = GaussianMechanism(workload, privacy, noise="continuous")
    sigma = gaussian.expected_error(n)
    F = workload.toarray()
    width = np.sqrt(2 * np.log(32)) * np.linalg.norm(F, axis=0).max()
    assert gaussian_width_bound(workload) == pytest.approx(width, rel=1e-12)
    expected = min(sigma, np.sqrt(sigma * width / 32))
    assert mechanism.error_bound(n) == pytest.approx(expected, rel=1e-12)
    assert mechanism.error_bound(n) < sigma  # the theorem, not the Gaussian figure
    assert not hasattr(mechanism, "expected_error")
    rng = np.random.default_rng(5)
    h = rng.multinomial(n, np.ones(32) / 32) / n
    truth = workload.answer(h)
    squared = [np.mean((mechanism.release(h, n=n, rng=rng).answers - truth) ** 2) for _ in range(200)]
    assert np.sqrt(np.mean(squared)) < mechanism.error_bound(n)


@pytest.mark.solver
def test_projection_step_and_tolerance_are_shared_with_the_factorization():
    """ProjectionMechanism and FactorizationMechanism(project=True) project through one body and
    one tolerance rule, relative to the answers' noise: the threshold the gap met scales with it."""
    import projmech as pm

    workload = pm.prefix(16)
    rng = np.random.default_rng(0)
    h = rng.multinomial(100, np.ones(16) / 16) / 100
    fact = pm.FactorizationMechanism(workload, ZCDP(0.5), project=True, noise="continuous")
    proj = ProjectionMechanism(workload, ZCDP(0.5), body="hull", noise="continuous")
    assert type(fact.body) is type(proj.body)
    # The noise per answer each passes: the Gaussian's sigma, the rms of R Z for the factorization.
    noise = {fact: fact.error_bound(100),
             proj: GaussianMechanism(workload, ZCDP(0.5), noise="continuous").expected_error(100)}
    for mechanism, noise_rms in noise.items():
        release = mechanism.release(h, n=100, rng=1)
        # The hull's rule: gap <= 1e-4 * max(objective lower bound, (k/2) noise^2).
        floor = 1e-4 * 0.5 * 16 * noise_rms**2
        assert release.projection.stats.tolerance >= floor * (1 - 1e-12)
        np.testing.assert_allclose(workload.answer(release.witness), release.answers, atol=1e-9)


def test_release_repr_is_short_and_str_readable():
    domain = Domain([f"x{i}" for i in range(12)], [2] * 12)
    data = Dataset(np.random.default_rng(0).integers(0, 2, size=(500, 12)), domain)
    release = ProjectionMechanism(marginals(domain, 2, implicit=True), ZCDP(1.0)).release(data, rng=0)
    assert len(repr(release)) < 300 and "\n" not in repr(release)
    text = str(release)
    assert "projection release of 264 answers" in text and "guarantee" in text and len(text) < 1000
