"""Projection onto the moment relaxation L of 2-way marginals, against the exact hull on small d."""

import re
import warnings

import numpy as np
import pytest

import projmech as pm
from oracles import unless_inaccurate
from projmech.bodies import RELAXATIONS, MomentEncoding, NegativeCellsWarning, RelaxationError, project_to_relaxation
from projmech.bodies._relaxation_projection import ADMM_FEASIBILITY_TOL, CVXPY_FEASIBILITY_TOL

BINARY = pm.Domain(["a", "b", "c", "d"], [2, 2, 2, 2])
CATEGORICAL = pm.Domain(["a", "b", "c"], [3, 2, 4])


def noisy_solver_test(test):
    """Mark ``test`` as a solver test on noisy answers, where "sdp" alone may leave negative cells
    (its NegativeCellsWarning is ignored)."""
    return pytest.mark.solver(pytest.mark.filterwarnings("ignore::projmech.bodies.NegativeCellsWarning")(test))


def random_histogram(domain, seed, concentration=0.3, support=None):
    rng = np.random.default_rng(seed)
    h = rng.dirichlet(np.full(domain.size, concentration))
    if support is not None:  # a small-n data set: few distinct rows
        keep = rng.choice(domain.size, size=support, replace=False)
        mask = np.zeros(domain.size, dtype=bool)
        mask[keep] = True
        h = np.where(mask, h, 0.0)
        h /= h.sum()
    return h


@pytest.mark.parametrize("domain", [BINARY, CATEGORICAL, pm.Domain(["x", "y"], [2, 5])])
@pytest.mark.parametrize("encoding", ["auto", "one-hot"])
def test_encoding_reproduces_the_marginal_workload(domain, encoding):
    model = MomentEncoding.of(domain, encoding)
    workload = pm.marginals(domain, 2)
    assert model.num_queries == workload.num_queries
    for seed in range(3):
        h = random_histogram(domain, seed)
        np.testing.assert_allclose(model.answers(model.moments_of(h)), workload.answer(h), atol=1e-14)


@pytest.mark.solver
@pytest.mark.parametrize("domain", [BINARY, CATEGORICAL])
@pytest.mark.parametrize("relaxation", RELAXATIONS)
@pytest.mark.parametrize("support", [None, 3])
def test_true_answers_are_fixed_points(domain, relaxation, support):
    # K_Q ⊆ L: the exact marginals of any data set (dense, or a few distinct rows) stay put.
    workload = pm.marginals(domain, 2)
    for seed in range(2):
        truth = workload.answer(random_histogram(domain, seed, support=support))
        result = unless_inaccurate(project_to_relaxation, domain, truth, relaxation=relaxation, solver="CLARABEL")
        assert result.distance < 1e-6
        assert result.constraint_violation < 1e-7


@noisy_solver_test
@pytest.mark.parametrize("d", [3, 5])
def test_distance_to_relaxation_never_exceeds_distance_to_hull(d):
    domain = pm.Domain([f"x{i}" for i in range(d)], [2] * d)
    workload = pm.marginals(domain, 2)
    rng = np.random.default_rng(d)
    for trial in range(4):
        y = workload.answer(random_histogram(domain, trial)) + rng.normal(0, 0.15, workload.num_queries)
        hull = pm.project_to_hull(workload, y).distance
        distances = {r: unless_inaccurate(project_to_relaxation, domain, y, relaxation=r, solver="CLARABEL").distance
                     for r in RELAXATIONS}
        for relaxation, distance in distances.items():
            assert distance <= hull + 1e-6, relaxation
        # sdp+local is the intersection, so the farthest of the three
        assert distances["sdp+local"] >= max(distances["sdp"], distances["local"]) - 1e-6


@noisy_solver_test
@pytest.mark.parametrize("relaxation", RELAXATIONS)
def test_result_satisfies_the_constraints(relaxation):
    rng = np.random.default_rng(7)
    workload = pm.marginals(CATEGORICAL, 2)
    y = rng.uniform(-0.2, 0.6, workload.num_queries)
    result = project_to_relaxation(CATEGORICAL, y, relaxation=relaxation)
    Y = result.moments
    assert result.constraint_violation < 1e-4  # SCS, default accuracy
    assert Y[0, 0] == pytest.approx(1.0, abs=1e-4)
    np.testing.assert_allclose(np.diag(Y)[1:], Y[0, 1:], atol=1e-4)
    if "sdp" in relaxation:
        assert np.linalg.eigvalsh(Y).min() > -1e-4
    if "local" in relaxation:
        assert result.answers.min() > -1e-4
    np.testing.assert_allclose(result.answers, MomentEncoding.of(CATEGORICAL).answers(Y), atol=1e-12)
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y))


@noisy_solver_test
@pytest.mark.parametrize("relaxation", RELAXATIONS)
def test_binary_and_one_hot_encodings_agree(relaxation):
    rng = np.random.default_rng(3)
    workload = pm.marginals(BINARY, 2)
    y = workload.answer(random_histogram(BINARY, 1)) + rng.normal(0, 0.2, workload.num_queries)
    binary, one_hot = (unless_inaccurate(project_to_relaxation, BINARY, y, relaxation=relaxation, solver="CLARABEL",
                                         encoding=encoding) for encoding in ("binary", "one-hot"))
    assert binary.distance == pytest.approx(one_hot.distance, rel=1e-6)
    # The projection is unique; answers agree to sqrt(2 * distance * solver tolerance).
    np.testing.assert_allclose(binary.answers, one_hot.answers, atol=1e-4)


@pytest.mark.solver
def test_sdp_alone_admits_a_negative_cell():
    # In ±1 form m_i = m_j = C_ij = -1/2 is PSD; in 0/1 form mu = 1/4, P_ij = -1/8: cell (1,1) < 0.
    domain = pm.Domain(["a", "b"], [2, 2])
    moments = np.array([[1.0, 0.25, 0.25], [0.25, 0.25, -0.125], [0.25, -0.125, 0.25]])
    assert np.linalg.eigvalsh(moments).min() > -1e-15  # PSD (singular: on the boundary)
    y = MomentEncoding.of(domain).answers(moments)
    assert y[-1] == pytest.approx(-0.125)
    with pytest.warns(NegativeCellsWarning, match=r"1 of 4 projected cells are negative \(minimum -0\.125\)"):
        assert unless_inaccurate(project_to_relaxation, domain, y, relaxation="sdp", solver="CLARABEL").distance < 1e-6
    projection = unless_inaccurate(project_to_relaxation, domain, y, relaxation="sdp+local", solver="CLARABEL")
    assert projection.distance > 0.05


def small_data_answers(seed):
    """Noisy 2-way marginals of a data set with 3 distinct rows: most true cells are 0, so the
    noise pushes many below 0, and the SDP alone keeps some of them there."""
    workload = pm.marginals(BINARY, 2)
    noise = np.random.default_rng(seed).normal(0, 0.05, workload.num_queries)
    return workload.answer(random_histogram(BINARY, seed, support=3)) + noise


NEGATIVE = re.compile(r"(\d+) of (\d+) projected cells are negative \(minimum (\S+)\): relaxation='sdp' .*"
                      r"relaxation='sdp\+local' \(command line: --relaxation sdp\+local\) keeps every cell nonnegative")


@pytest.mark.solver
@pytest.mark.parametrize("solver, tolerance", [("admm", ADMM_FEASIBILITY_TOL), ("CLARABEL", CVXPY_FEASIBILITY_TOL)])
def test_sdp_alone_warns_of_its_negative_cells(solver, tolerance):
    y = small_data_answers(2)
    with pytest.warns(NegativeCellsWarning) as caught:
        result = project_to_relaxation(BINARY, y, relaxation="sdp", solver=solver)
    assert len(caught) == 1 and caught[0].filename == __file__  # points at the caller
    count, total, minimum = NEGATIVE.fullmatch(str(caught[0].message)).groups()
    negative = result.answers < -tolerance
    assert int(count) == np.count_nonzero(negative) >= 2 and int(total) == y.size
    assert float(minimum) == pytest.approx(result.answers.min(), rel=1e-2)
    assert result.answers.min() < -0.005  # measured -0.0093, 3 cells: far beyond any solver tolerance


def test_the_warning_fires_exactly_when_a_cell_is_below_the_tolerance():
    fired = []
    for seed in range(12):
        y = small_data_answers(seed) + np.random.default_rng(100 + seed).normal(0, 0.05, 24) * (seed % 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = project_to_relaxation(BINARY, y, relaxation="sdp")
        warned = any(issubclass(w.category, NegativeCellsWarning) for w in caught)
        assert warned == bool(result.answers.min() < -ADMM_FEASIBILITY_TOL), seed
        fired.append(warned)
    assert any(fired)


@pytest.mark.solver
@pytest.mark.parametrize("relaxation", ["sdp+local", "local"])
def test_the_local_constraints_keep_cells_nonnegative_without_a_warning(relaxation):
    y = small_data_answers(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NegativeCellsWarning)
        result = project_to_relaxation(BINARY, y, relaxation=relaxation)
    assert result.answers.min() >= -(ADMM_FEASIBILITY_TOL if relaxation == "sdp+local" else CVXPY_FEASIBILITY_TOL)


def test_negative_cells_warning_is_a_user_warning():
    # pyproject turns projmech's RuntimeWarnings into errors; this one must stay a warning.
    assert issubclass(NegativeCellsWarning, UserWarning)
    assert not issubclass(NegativeCellsWarning, RuntimeWarning)
    assert "NegativeCellsWarning" in pm.bodies.__all__


@pytest.mark.parametrize("domain, y, match", [
    (BINARY, np.zeros(5), "y: expected 24"),
    (BINARY, np.full(24, np.nan), "NaN"),
    (pm.Domain(["a", "b"], [2, 1]), np.zeros(2), "fewer than 2 values"),
    (pm.Domain(["a"], [3]), np.zeros(3), "at least 2 attributes"),
])
def test_bad_inputs(domain, y, match):
    with pytest.raises(ValueError, match=match):
        project_to_relaxation(domain, y)


@pytest.mark.solver
@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
def test_bad_options():
    y = np.zeros(24)
    with pytest.raises(ValueError, match="relaxation"):
        project_to_relaxation(BINARY, y, relaxation="lasserre")
    with pytest.raises(ValueError, match="encoding"):
        project_to_relaxation(BINARY, y, encoding="gray")
    with pytest.raises(ValueError, match="encoding"):
        project_to_relaxation(CATEGORICAL, np.zeros(26), encoding="binary")
    with pytest.raises(TypeError, match="domain"):
        project_to_relaxation({"a": 2}, y)
    with pytest.raises(RelaxationError):
        project_to_relaxation(BINARY, y, solver="SCS", solver_options={"max_iters": 1})


@pytest.mark.parametrize("relaxation, solver", [("sdp", "ECOS"), ("sdp+local", "OSQP"), ("local", "OSQP")])
def test_a_solver_that_cannot_solve_the_relaxation_is_refused_before_solving(relaxation, solver, monkeypatch):
    """ECOS and OSQP take no semidefinite constraint and OSQP fails on local's problem: the
    library refuses them by name before building a model."""
    from projmech.bodies import _relaxation_projection as relaxation_module

    def model(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(relaxation_module, "_project_by_cvxpy", model)
    domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    y = pm.marginals(domain, way=2).answer(np.full(8, 1 / 8))
    with pytest.raises(ValueError, match=re.escape(f"solver: the relaxation '{relaxation}' is solved by")):
        relaxation_module.project_to_relaxation(domain, y, relaxation=relaxation, solver=solver)
