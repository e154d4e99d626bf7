"""No false certificate, ever: what the projection, relaxation and factorization solvers return
passes an independent check, and a result that fails the library's final check is rejected,
never returned.

Expected values come from computations that share nothing with the library:

* closed forms: the projection onto ``c * simplex`` (``F = c I``) by sorting (Held, Wolfe &
  Crowder 1974), onto an interval (``k = 1``), onto a point (``m = 1``, ``F = 0``);
* brute force over faces on tiny universes (``brute_force_projection`` of ``oracles``:
  affine least squares on every affinely independent support);
* for 2-way marginals of 10 attributes, a direct CVXPY model solved tightly by Clarabel at scale
  1, scaled (the projection is positively homogeneous: ``Pi_{cK}(c y) = c Pi_K(y)``);
* ``gamma(c I) = c`` and ``R = F M^+`` by numpy for factorizations.

Every returned witness is checked here, not by the library: ``w >= 0``, ``sum(w) = 1``,
``answers = F w``, and ``||answers - Pi(y)|| <= sqrt(2 gap)`` plus rounding (strong convexity:
the certified gap bounds the distance to the exact projection).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

import projmech as pm
from oracles import THRESHOLD_F, brute_force_projection, reference_projection
from oracles import project_simplex as simplex_projection
from projmech.bodies import ProjectionError, RelaxationError, project_to_hull, project_to_relaxation
from projmech.bodies import _hull as hull
from projmech.bodies import _relaxation_admm as relaxation_admm
from projmech.bodies._active_set import ActiveSetOutcome
from projmech.factorization import _norm as optimal_factorization
from projmech.solve import Status

#: Every solver project_to_hull takes by name, and "auto".
SOLVERS = ("fast", "CLARABEL", "ECOS", "OSQP", "SCS", "auto")

#: Scales of the workload and the point, from far below 1 to far above.
SCALES = (1e-6, 1e-3, 1.0, 1e4, 1e8)

#: Relative rounding allowed on top of ``sqrt(2 gap)``: the gap ``w.(g - min g)`` is rounded to a
#: few ulps of ``||g||_inf``, about ``eps * scale^2``, whose square root is ``1e-8 * scale``.
ROUNDING = 1e-7


# --------------------------------------------------------------------------------------------
# Independent oracles and the independent check
# --------------------------------------------------------------------------------------------


def check_certified(result: pm.ProjectionResult, F: np.ndarray, y: np.ndarray, reference: np.ndarray,
                    accuracy: float = 0.0) -> None:
    """The independent check of a returned projection: a feasible witness reproducing the answers,
    within ``sqrt(2 gap)`` (plus rounding and the reference's own ``accuracy``) of the projection."""
    w = result.weights.toarray() if sp.issparse(result.weights) else np.asarray(result.weights)
    scale = max(float(np.abs(F).max()), float(np.abs(y).max()), float(np.abs(reference).max()))
    assert w.shape == (F.shape[1],)
    assert np.all(w >= 0.0)
    assert abs(w.sum() - 1.0) <= 1e-12
    np.testing.assert_allclose(result.answers, F @ w, rtol=0, atol=1e-12 * float(np.abs(F).max()))
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y), rel=1e-9, abs=1e-300)
    assert 0.0 <= result.stats.gap <= result.stats.tolerance and result.stats.tolerance_met
    error = float(np.linalg.norm(result.answers - reference))
    assert error <= math.sqrt(2.0 * result.stats.gap) + ROUNDING * scale + accuracy, (error, result.stats.gap, scale)


def project_or_report(F: np.ndarray, y: np.ndarray, solver: str, **kwargs) -> pm.ProjectionResult | None:
    """The result, or None after checking that a ProjectionError reports every attempt as failed."""
    try:
        return project_to_hull(F, y, solver=solver, **kwargs)
    except ProjectionError as error:
        assert error.attempts and all(attempt.status is not Status.OPTIMAL for attempt in error.attempts)
        return None


def scaled_marginals() -> tuple[np.ndarray, np.ndarray]:
    """2-way marginals of 3 binary attributes (12 x 8) and a noisy point near their hull."""
    domain = pm.Domain(["a", "b", "c"], [2, 2, 2])
    F = pm.marginals(domain, 2).toarray()
    rng = np.random.default_rng(0)
    return F, F @ rng.dirichlet(np.ones(8)) + rng.normal(0.0, 0.1, F.shape[0])


# --------------------------------------------------------------------------------------------
# The audit's instances
# --------------------------------------------------------------------------------------------


def test_the_audits_instance_is_projected_not_emptied():
    """``F = 1e4 I``, ``y = (3000, 0)``: the active-set solver returned an empty witness
    (answers 0, weights summing to 0) as optimal with gap 0. The projection onto the segment
    from (1e4, 0) to (0, 1e4) is (6500, 3500)."""
    F = np.array([[1e4, 0.0], [0.0, 1e4]])
    y = np.array([3000.0, 0.0])
    result = project_to_hull(F, y, solver="fast")
    check_certified(result, F, y, np.array([6500.0, 3500.0]))
    np.testing.assert_allclose(result.answers, [6500.0, 3500.0], rtol=1e-12)


def test_projection_mechanism_on_a_scaled_identity():
    """Through ProjectionMechanism with defaults (auto: the solvers in the order of their estimated time)."""
    m, c = 1024, 1e4
    workload = pm.Workload(c * np.eye(m))
    rng = np.random.default_rng(1)
    h = rng.multinomial(1000, rng.dirichlet(np.ones(m))) / 1000
    release = pm.ProjectionMechanism(workload, pm.ApproxDP(1.0, 1e-6)).release(h, n=1000, rng=rng)
    result = release.projection
    assert result.stats.solver == "fast"
    y = release.noisy_answers
    check_certified(result, workload.matrix, y, c * simplex_projection(y / c))


@pytest.mark.solver
def test_projection_mechanism_on_scaled_marginals():
    """2-way marginals of 10 binary attributes scaled by 3000 (the audit's second instance)."""
    c = 3000.0
    domain = pm.Domain([f"x{i}" for i in range(10)], [2] * 10)
    F = pm.marginals(domain, 2).toarray()
    rng = np.random.default_rng(2)
    data = pm.Dataset(rng.integers(0, 2, size=(500, 10)), domain)
    mechanism = pm.ProjectionMechanism(pm.Workload(c * F), pm.ApproxDP(1.0, 1e-6))
    release = mechanism.release(data, rng=np.random.default_rng(3))
    y = release.noisy_answers
    # Clarabel's reference is accurate to about 1e-6 relative at scale 1.
    check_certified(release.projection, c * F, y, c * reference_projection(F, y / c)[1], accuracy=1e-5 * c)


# --------------------------------------------------------------------------------------------
# Scaled workloads: c I and c (2-way marginals), every solver
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", SCALES)
def test_fast_solver_is_scale_invariant_on_scaled_identity(c):
    """With the tolerance tied to the scale (``noise_scale = 0.1 c``), the active-set solver
    certifies every scale, and its answers are the closed-form projection."""
    rng = np.random.default_rng(4)
    y0 = rng.normal(0.2, 0.5, 6)
    F, y = c * np.eye(6), c * y0
    result = project_to_hull(F, y, solver="fast", noise_scale=0.1 * c, tol=1e-10)
    check_certified(result, F, y, c * simplex_projection(y0))


@pytest.mark.parametrize("c", SCALES)
def test_fast_solver_is_scale_invariant_on_scaled_marginals(c):
    F0, y0 = scaled_marginals()
    reference, _, _ = brute_force_projection(c * F0, c * y0)
    result = project_to_hull(c * F0, c * y0, solver="fast", noise_scale=0.1 * c, tol=1e-10)
    check_certified(result, c * F0, c * y0, reference)


@pytest.mark.solver
@pytest.mark.parametrize("c", SCALES)
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("workload", ["identity", "marginals"])
def test_every_solver_is_certified_or_reports_failure_at_every_scale(workload, solver, c):
    """At the default tolerance: a certified result within its gap of the projection, or a
    ProjectionError (CVXPY solvers stop short on badly scaled problems: reported, not hidden)."""
    if workload == "identity":
        rng = np.random.default_rng(5)
        y0 = rng.normal(0.2, 0.5, 6)
        F0, reference = np.eye(6), simplex_projection(y0)
    else:
        F0, y0 = scaled_marginals()
        reference, _, _ = brute_force_projection(F0, y0)
    result = project_or_report(c * F0, c * y0, solver)
    if solver == "fast":
        assert result is not None  # the active-set solver certifies every scale
    if result is not None:
        check_certified(result, c * F0, c * y0, c * reference)


# --------------------------------------------------------------------------------------------
# Degenerate shapes and positions of y
# --------------------------------------------------------------------------------------------


def _duplicate_columns():
    rng = np.random.default_rng(6)
    A = rng.integers(0, 2, size=(3, 4)).astype(float)
    return np.hstack([A, A[:, :2], A[:, :1]]), rng.normal(0.5, 1.0, 3)


SHAPES = {
    "duplicate columns": _duplicate_columns,
    "k = 1, above": lambda: (np.array([[0.2, 0.9, 0.5, 0.1]]), np.array([1.7])),
    "k = 1, inside": lambda: (np.array([[0.2, 0.9, 0.5, 0.1]]), np.array([0.4])),
    "m = 1": lambda: (np.array([[0.3], [0.7]]), np.array([-2.0, 5.0])),
    "F = 0": lambda: (np.zeros((3, 4)), np.array([0.3, -1.0, 2.0])),
    "y inside": lambda: (THRESHOLD_F, np.array([0.2, 0.7])),
    "y on a face": lambda: (THRESHOLD_F, np.array([0.3, 0.3])),
    "projection on a face": lambda: (THRESHOLD_F, np.array([0.6, 0.2])),
    "y at a vertex": lambda: (THRESHOLD_F, np.array([1.0, 1.0])),
    "projection at a vertex": lambda: (THRESHOLD_F, np.array([1.5, 2.0])),
    "y far outside": lambda: (THRESHOLD_F, np.array([-1e6, 2e6])),
}

#: Closed forms, independent of the brute force (which is checked against them).
CLOSED_FORMS = {
    "k = 1, above": [0.9],
    "k = 1, inside": [0.4],
    "m = 1": [0.3, 0.7],
    "F = 0": [0.0, 0.0, 0.0],
    "y inside": [0.2, 0.7],
    "y on a face": [0.3, 0.3],
    "projection on a face": [0.4, 0.4],
    "y at a vertex": [1.0, 1.0],
    "projection at a vertex": [1.0, 1.0],
    "y far outside": [0.0, 1.0],  # the vertex (0, 1) of the triangle {0 <= a1 <= a2 <= 1}
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_brute_force_oracle_matches_the_closed_forms(name):
    F, y = SHAPES[name]()
    point, _, _ = brute_force_projection(F, y)
    np.testing.assert_allclose(point, CLOSED_FORMS[name], atol=1e-12 * max(1.0, np.abs(y).max()))


@pytest.mark.solver
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_degenerate_shapes_are_certified_or_reported(name, solver):
    F, y = SHAPES[name]()
    reference, _, _ = brute_force_projection(F, y)
    result = project_or_report(F, y, solver)
    if solver == "fast":
        assert result is not None, name
    if result is not None:
        check_certified(result, F, y, reference)


# --------------------------------------------------------------------------------------------
# The final check rejects bad results, whatever solver produced them
# --------------------------------------------------------------------------------------------


def _fake_active_set(support, weights, answers, gap=0.0):
    """An active-set solver that claims convergence with the given witness."""
    def solve(workload, y, threshold, **kwargs):
        return ActiveSetOutcome(
            support=np.asarray(support, dtype=np.int64), weights=np.asarray(weights, dtype=float),
            answers=np.asarray(answers, dtype=float), objective=0.0, gap=gap, threshold=1.0, converged=True,
            iterations=1, elapsed=0.0)

    return solve


BAD_WITNESSES = {
    # The audit's empty witness: no weights, answers 0, gap 0.
    "empty": (([], [], [0.0, 0.0]), "witness sums to 0"),
    "sum below 1": (([0, 1], [0.3, 0.3], [0.3, 0.6]), "witness sums to"),
    "negative weight": (([0, 1], [1.5, -0.5], [1.5, 1.0]), "negative weight"),
    "answers not F w": (([0, 1], [0.5, 0.5], [0.2, 0.2]), "reported answers differ from F w"),
    "suboptimal": (([2], [1.0], [0.0, 0.0]), "certified gap"),
}


@pytest.mark.parametrize("name", sorted(BAD_WITNESSES))
def test_a_bad_fast_result_is_rejected(monkeypatch, name):
    (support, weights, answers), reason = BAD_WITNESSES[name]
    monkeypatch.setattr(hull, "active_set_projection", _fake_active_set(support, weights, answers))
    with pytest.raises(ProjectionError) as info:
        project_to_hull(THRESHOLD_F, np.array([0.9, 1.0]), solver="fast")
    assert len(info.value.attempts) == 1
    attempt = info.value.attempts[0]
    assert (attempt.solver, attempt.status) == ("fast", Status.REJECTED) and reason in attempt.detail


@pytest.mark.solver
def test_auto_falls_back_when_the_fast_result_fails_the_check(monkeypatch):
    """The rejected witness is recorded as a failed attempt and the next solver is tried."""
    monkeypatch.setattr(hull, "active_set_projection", _fake_active_set([], [], [0.0, 0.0]))
    monkeypatch.setattr(hull, "auto_solver_order", lambda workload: ["fast", "CLARABEL", "SCS"])
    F = np.array([[1e4, 0.0], [0.0, 1e4]])
    y = np.array([3000.0, 0.0])
    result = project_to_hull(F, y)
    first, last = result.stats.attempts[0], result.stats.attempts[-1]
    assert (first.solver, first.status) == ("fast", Status.REJECTED) and "witness sums to 0" in first.detail
    assert (last.solver, last.status) == (result.stats.solver, Status.OPTIMAL) and last.solver != "fast"
    check_certified(result, F, y, np.array([6500.0, 3500.0]))


def test_a_bad_cvxpy_result_is_rejected_by_the_same_check(monkeypatch):
    """A CVXPY solver's witness goes through the same final check: the vertex (0, 0) claimed
    optimal for y = (0.9, 1.0) (projection (0.9, 1.0) itself) is rejected on its gap."""
    monkeypatch.setattr(hull, "_solve_once", lambda F, y, solver, options: (np.array([0.0, 0.0, 1.0]), "optimal"))
    with pytest.raises(ProjectionError) as info:
        project_to_hull(THRESHOLD_F, np.array([0.9, 1.0]), solver="SCS")
    assert [(a.solver, a.status) for a in info.value.attempts] == [("SCS", Status.REJECTED)]
    assert "certified gap" in info.value.attempts[0].detail
    # a feasible witness, only suboptimal: it is the error's best, its gap recomputed by numpy
    best = info.value.best
    w = best.weights
    g = THRESHOLD_F.T @ (THRESHOLD_F @ w - np.array([0.9, 1.0]))
    assert best.stats.status is Status.REJECTED and best.stats.gap == pytest.approx(float(w @ g - g.min()))


# --------------------------------------------------------------------------------------------
# Relaxation: the final check of project_to_relaxation
# --------------------------------------------------------------------------------------------


BINARY = pm.Domain(["a", "b", "c", "d"], [2, 2, 2, 2])


def _noisy_marginals(seed: int, sigma: float = 0.05) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 2, size=(50, 4))
    return pm.marginals(BINARY, 2).answer_data(pm.Dataset(rows, BINARY)) + rng.normal(0.0, sigma, 24)


def check_relaxation_point(result, y: np.ndarray) -> None:
    """Independent check of a point of L (binary encoding): ``Y_00 = 1``, ``diag(P) = mu``, ``Y``
    PSD and symmetric, every cell of every 2 x 2 table (by its closed form) nonnegative and equal
    to the answers, and the distance."""
    Y = result.moments
    mu, P = Y[0, 1:], Y[1:, 1:]
    assert Y[0, 0] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(np.diag(P), mu, atol=1e-9)
    np.testing.assert_allclose(Y, Y.T, atol=1e-12)
    assert np.linalg.eigvalsh(Y).min() >= -1e-9
    cells = []
    for i in range(4):
        for j in range(i + 1, 4):
            cells += [1 - mu[i] - mu[j] + P[i, j], mu[j] - P[i, j], mu[i] - P[i, j], P[i, j]]
    np.testing.assert_allclose(result.answers, cells, atol=1e-9)
    assert min(cells) >= -1e-9
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y), rel=1e-12)


@pytest.mark.solver
@pytest.mark.parametrize("solver", ["admm", "CLARABEL"])
def test_relaxation_results_pass_the_independent_check(solver):
    y = _noisy_marginals(7)
    result = project_to_relaxation(BINARY, y, solver=solver)
    check_relaxation_point(result, y)


def _fake_admm(change):
    """The real ADMM, with its output altered by ``change(solution) -> solution``."""
    real = relaxation_admm.admm_projection

    def solve(*args, **kwargs):
        return change(real(*args, **kwargs))

    return solve


def _replace(solution, **fields):
    values = {name: getattr(solution, name) for name in solution.__dataclass_fields__}
    values.update(fields)
    return relaxation_admm.AdmmProjection(**values)


BAD_ADMM = {
    "answers off the moments": (lambda s: _replace(s, answers=s.answers + 1e-3), "answers differ"),
    "bound above the objective": (lambda s: _replace(s, lower_bound=s.objective * 1.01 + 1e-3),
                                  "recomputed relative gap"),
}


@pytest.mark.parametrize("name", sorted(BAD_ADMM))
def test_a_bad_admm_result_is_rejected(monkeypatch, name):
    change, reason = BAD_ADMM[name]
    monkeypatch.setattr(relaxation_admm, "admm_projection", _fake_admm(change))
    with pytest.raises(RelaxationError, match="final check") as info:
        project_to_relaxation(BINARY, _noisy_marginals(8, sigma=0.2), solver="admm")
    assert reason in str(info.value)


def test_infeasible_admm_moments_are_rejected(monkeypatch):
    """Moments consistent with the answers but outside L (a cell below 0, Y not PSD): the
    answers and moments of the independent uniform point pushed past a vertex of L."""
    def outside(solution):
        Y = solution.contrast_moments.copy()
        Y[1, 2] = Y[2, 1] = 2.0  # |corr| > 1: Y is not PSD
        model = relaxation_admm._ContrastModel(BINARY, local=True)
        m = Y[0, 1:]
        cross = [Y.reshape(-1)[group.block] for group in model.groups]
        return _replace(solution, contrast_moments=model.moments(m, cross), answers=model.cells(m, cross))

    monkeypatch.setattr(relaxation_admm, "admm_projection", _fake_admm(outside))
    with pytest.raises(RelaxationError, match="constraint violation") as info:
        project_to_relaxation(BINARY, _noisy_marginals(9), solver="admm")
    (attempt,) = info.value.attempts
    assert attempt.status is Status.REJECTED
    assert float(re.search(r"constraint violation (\S+) >", attempt.detail).group(1)) > 1e-3
    assert info.value.best is None  # an infeasible point is no candidate


@pytest.mark.solver
def test_a_cvxpy_point_above_the_feasibility_tolerance_is_rejected():
    """SCS at a loose accuracy (1e-3) reports "optimal" for a point that violates L's constraints
    by more than the default 1e-4: refused, not returned. The same point is returned when the
    caller accepts that violation, and it is reported."""
    y = _noisy_marginals(10, sigma=0.3)
    loose = {"eps_abs": 1e-3, "eps_rel": 1e-3}
    with pytest.raises(RelaxationError, match=r"reported optimal, but .* constraint violation \S+ > feasibility_tol"):
        project_to_relaxation(BINARY, y, relaxation="local", solver="SCS", solver_options=loose)
    result = project_to_relaxation(BINARY, y, relaxation="local", solver="SCS", solver_options=loose,
                                   feasibility_tol=1e-1)
    Y = result.moments  # binary encoding: Y_00 = 1, diag(P) = mu, every cell >= 0
    violation = max(abs(Y[0, 0] - 1.0), float(np.abs(np.diag(Y)[1:] - Y[0, 1:]).max()), -float(result.answers.min()))
    assert 1e-4 < violation <= 1e-1
    assert result.constraint_violation == pytest.approx(violation, rel=1e-9)


def test_feasibility_tol_is_validated():
    with pytest.raises(ValueError, match="feasibility_tol"):
        project_to_relaxation(BINARY, _noisy_marginals(11), feasibility_tol=0.0)
    with pytest.raises(TypeError, match="feasibility_tol"):
        project_to_relaxation(BINARY, _noisy_marginals(11), feasibility_tol="tight")


# --------------------------------------------------------------------------------------------
# Factorizations: the final check of factorization_norm
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", SCALES)
def test_factorization_of_a_scaled_identity(c):
    """``gamma(c I) = c`` (``R = c I``, ``M = I``; the bound ``||F||_* / sqrt(k m)`` is ``c``), with
    ``R M = F`` checked here by numpy at the workload's own scale."""
    m = 8
    F = c * np.eye(m)
    fact = pm.factorization_norm(F)
    M = fact.strategy.toarray()
    R = F @ np.linalg.pinv(M)
    assert np.abs(R @ M - F).max() <= 1e-9 * c
    gamma = np.linalg.norm(R) * np.sqrt((M ** 2).sum(axis=0)).max() / math.sqrt(m)
    assert gamma == pytest.approx(c, rel=1e-6)
    assert fact.gamma == pytest.approx(gamma, rel=1e-9)
    assert fact.lower_bound <= fact.gamma * (1 + 1e-12)
    assert fact.lower_bound == pytest.approx(c, rel=1e-6)


def _fake_iterative(strategy_of, lower_bound_of):
    def solve(workload, gram, tol, max_iterations, callback):
        fact = pm.Factorization(workload, strategy_of(workload), lower_bound=lower_bound_of(workload), gram=gram)
        return fact, 1, False

    return solve


def test_a_lower_bound_above_gamma_is_rejected(monkeypatch):
    """A bound above the factorization's own gamma would give a negative "certified" gap."""
    monkeypatch.setattr(optimal_factorization, "_solve_iterative",
                        _fake_iterative(lambda w: np.eye(4), lambda w: 2.0))  # gamma(I_4) = 1
    with pytest.raises(optimal_factorization.FactorizationError) as info:
        pm.factorization_norm(np.eye(4), method="iterative")
    assert "lower bound 2 exceeds gamma 1" in info.value.attempts[0].detail
    assert info.value.attempts[0].status is Status.REJECTED
    assert info.value.best is None


def test_a_residual_small_only_in_absolute_terms_is_rejected(monkeypatch):
    """``F = 1e-9 * prefix(4)`` and ``M = 1^T``: ``||R M - F||`` is about 1e-9, below the old
    absolute tolerance ``1e-6 * max(1, ||F||)``, but the whole of F; relative to F it is rejected."""
    F = 1e-9 * pm.prefix(4).toarray()
    monkeypatch.setattr(optimal_factorization, "_solve_iterative",
                        _fake_iterative(lambda w: np.ones((1, 4)), lambda w: 0.0))
    with pytest.raises(optimal_factorization.FactorizationError) as info:
        pm.factorization_norm(F, method="iterative")
    assert "||R M - F||_1->2" in info.value.attempts[0].detail
