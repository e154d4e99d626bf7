"""Tests of ``project_to_hull``: the Euclidean projection onto K_Q = conv(columns of F).

Every expected value comes from a computation that shares nothing with the library (no CVXPY,
no Frank–Wolfe gap):

* closed forms: a single count query projects to ``clip(y, 0, 1)``; the two threshold queries
  ``x <= 0`` and ``x <= 1`` over {0, 1, 2} (``THRESHOLD_F``) have K_Q = the triangle
  {0 <= a1 <= a2 <= 1}, projected onto exactly by comparing the point, its projections onto the
  three edges and the three vertices;
* brute force over faces (tiny universes): the projection lies in the relative interior of
  conv(F_S) for some affinely independent support S, where it is the projection of y onto
  aff(F_S); enumerating every S, solving that affine least-squares problem and keeping the
  candidates with non-negative coefficients gives a set of points of K_Q containing Pi(y);
* scipy.optimize.nnls on the system augmented with a heavily weighted sum-to-one row (medium
  universes).
"""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

import projmech as pm
from oracles import THRESHOLD_F, brute_force_projection, reference_projection
from projmech.bodies import SOLVERS, ProjectionError, frank_wolfe_gap, project_to_hull
from projmech.bodies import _hull as hull
from projmech.solve import Attempt, SolveError, SolveStats, Status

#: Every solver project_to_hull takes by name: the CVXPY ones and the active-set solver.
ALL_SOLVERS = (*SOLVERS, "fast")

TRIANGLE = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # K_Q: {0 <= a1 <= a2 <= 1}


# --------------------------------------------------------------------------------------------
# Independent oracles
# --------------------------------------------------------------------------------------------


def _segment_projection(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    direction = b - a
    t = float(np.clip((p - a) @ direction / (direction @ direction), 0.0, 1.0))
    return a + t * direction


def triangle_projection(y: np.ndarray) -> tuple[np.ndarray, str]:
    """Exact projection onto {0 <= a1 <= a2 <= 1}, with the region of y it came from."""
    if 0.0 <= y[0] <= y[1] <= 1.0:
        return y.copy(), "interior"
    candidates = [(v.copy(), f"vertex{i}") for i, v in enumerate(TRIANGLE)]
    for i, j in ((0, 1), (1, 2), (0, 2)):
        candidates.append((_segment_projection(y, TRIANGLE[i], TRIANGLE[j]), f"edge{i}{j}"))
    point, _ = min(candidates, key=lambda c: np.linalg.norm(c[0] - y))
    # Name the region by where the projection landed (a clamped edge candidate is a vertex).
    for i, v in enumerate(TRIANGLE):
        if np.linalg.norm(point - v) < 1e-12:
            return point, f"vertex{i}"
    for i, j in ((0, 1), (1, 2), (0, 2)):
        if np.linalg.norm(_segment_projection(point, TRIANGLE[i], TRIANGLE[j]) - point) < 1e-12:
            return point, f"edge{i}{j}"
    raise AssertionError("unreachable: the nearest candidate lies on the boundary")


def nnls_projection(F: np.ndarray, y: np.ndarray, weight: float = 1e4) -> tuple[np.ndarray, float]:
    """Projection via scipy's NNLS with ``sum(w) = 1`` imposed by a heavily weighted extra row."""
    F = np.asarray(F.toarray() if sp.issparse(F) else F, dtype=float)
    k, m = F.shape
    A = np.vstack([F, weight * np.ones((1, m))])
    b = np.concatenate([y, [weight]])
    w, _ = nnls(A, b, maxiter=50 * m)
    assert abs(w.sum() - 1.0) < 1e-6
    w /= w.sum()
    point = F @ w
    return point, float(np.linalg.norm(point - y))


def certified_radius(result: pm.ProjectionResult, F, y: np.ndarray) -> float:
    """``sqrt(2 gap)``, the advertised bound on ``||answers - Pi(y)||``, with the gap widened by its
    floating-point error: ``g.w - min_j g_j`` cancels two numbers of size ``||g||_inf`` and so
    carries an absolute rounding error of a few ulps of ``||g||_inf``."""
    dense = F.toarray() if sp.issparse(F) else np.asarray(F)
    g = dense.T @ (dense @ dense_weights(result) - y)
    return math.sqrt(2.0 * (result.stats.gap + 1e-14 * max(1.0, float(np.abs(g).max()))))


def random_simplex(rng: np.random.Generator, m: int) -> np.ndarray:
    h = rng.exponential(size=m)
    return h / h.sum()


def dense_weights(result: pm.ProjectionResult) -> np.ndarray:
    """The witness as a dense vector (the active-set solver returns a sparse one)."""
    return result.weights.toarray() if sp.issparse(result.weights) else result.weights


def assert_valid_result(result: pm.ProjectionResult, F, y: np.ndarray) -> None:
    """Internal consistency of a result: feasible witness, answers = F w, distance, gap <= tol."""
    w = dense_weights(result)
    np.testing.assert_array_equal(result.support, np.flatnonzero(w > 0))
    assert w.shape == (F.shape[1],)
    assert np.all(w >= 0.0)
    assert abs(w.sum() - 1.0) <= 1e-12
    dense = F.toarray() if sp.issparse(F) else np.asarray(F)
    np.testing.assert_allclose(result.answers, dense @ w, rtol=0, atol=1e-14)
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y), rel=1e-12, abs=1e-15)
    stats = result.stats
    assert 0.0 <= stats.gap <= stats.tolerance and stats.tolerance_met and not stats.relative_gap
    assert stats.status is Status.OPTIMAL
    assert (stats.attempts[-1].solver, stats.attempts[-1].status) == (stats.solver, Status.OPTIMAL)


# --------------------------------------------------------------------------------------------
# The oracles themselves
# --------------------------------------------------------------------------------------------


@pytest.mark.solver
def test_oracles_agree_with_each_other_and_the_closed_form():
    rng = np.random.default_rng(0)
    for _ in range(40):
        y = rng.uniform(-2.0, 3.0, size=2)
        expected, _ = triangle_projection(y)
        point, weights, distance = brute_force_projection(THRESHOLD_F, y)
        np.testing.assert_allclose(point, expected, atol=1e-12)
        np.testing.assert_allclose(THRESHOLD_F @ weights, point, atol=1e-12)
        np.testing.assert_allclose(nnls_projection(THRESHOLD_F, y)[0], expected, atol=1e-6)
    for _ in range(20):
        F = rng.integers(0, 2, size=(3, 5)).astype(float)
        y = rng.normal(0.5, 1.0, size=3)
        point, _, distance = brute_force_projection(F, y)
        other, other_distance = nnls_projection(F, y)
        np.testing.assert_allclose(other, point, atol=1e-6)
        assert other_distance == pytest.approx(distance, abs=1e-6)


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", [[1.0, 0.0], [0.0, 1.0, 1.0]])
def test_single_count_query_is_clipping(row):
    F = np.array([row])
    for value in [-3.0, -0.2, 0.0, 0.3, 0.75, 1.0, 1.4, 17.0]:
        result = project_to_hull(F, [value])
        assert result.answers[0] == pytest.approx(min(max(value, 0.0), 1.0), abs=1e-6)
        assert result.distance == pytest.approx(abs(value - min(max(value, 0.0), 1.0)), abs=1e-6)
        assert_valid_result(result, F, np.array([value]))
        if value > 1:  # all mass on the columns that answer 1
            assert result.weights[F[0] == 0].sum() <= 1e-6


def test_two_threshold_queries_project_onto_the_triangle():
    """Two threshold queries: K_Q is the triangle {0 <= a1 <= a2 <= 1}; every region of the plane."""
    rng = np.random.default_rng(1)
    points = list(rng.uniform(-1.5, 2.5, size=(150, 2)))
    points += [
        np.array(p)
        for p in [(0.2, 0.6), (-1, -2), (-0.5, 0.5), (-1, 3), (0.5, 3), (3, 3), (1.5, 0.2), (0.7, 0.1), (2, -1)]
    ]
    regions = set()
    for y in points:
        expected, region = triangle_projection(y)
        regions.add(region)
        result = project_to_hull(THRESHOLD_F, y)
        np.testing.assert_allclose(result.answers, expected, atol=1e-6)
        assert result.distance == pytest.approx(np.linalg.norm(expected - y), abs=1e-6)
        assert_valid_result(result, THRESHOLD_F, y)
    assert regions == {"interior", "edge01", "edge12", "edge02", "vertex0", "vertex1", "vertex2"}


def test_threshold_example_via_prefix_workload():
    F = pm.prefix(3).matrix[:2]
    np.testing.assert_array_equal(F, THRESHOLD_F)
    y = np.array([0.9, 0.1])  # violates a1 <= a2: projects onto the edge a1 = a2
    result = project_to_hull(F, y)
    np.testing.assert_allclose(result.answers, [0.5, 0.5], atol=1e-6)


# --------------------------------------------------------------------------------------------
# Independent formulations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_on_tiny_universes(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(2, 6))
    k = int(rng.integers(1, 5))
    F = rng.integers(0, 2, size=(k, m)).astype(float)
    if seed % 3 == 0:
        F[:, 0] = F[:, 1]  # duplicate columns: the witness is not unique, the projection is
    y = rng.normal(0.5, 1.0, size=k)
    point, _, distance = brute_force_projection(F, y)
    assert_both_solvers_reach(F, y, point, distance)


@pytest.mark.solver
@pytest.mark.parametrize("seed", range(4))
def test_matches_nnls_on_real_valued_queries(seed):
    rng = np.random.default_rng(200 + seed)
    k, m = 7, 25
    F = rng.uniform(-1.0, 2.0, size=(k, m))
    y = F @ random_simplex(rng, m) + rng.normal(0.0, 0.8, size=k)
    expected, distance = nnls_projection(F, y)
    assert_both_solvers_reach(F, y, expected, distance)


def assert_both_solvers_reach(F, y, point, distance):
    """"auto" and "fast" both return ``point``, at ``distance`` from ``y``, with a valid certificate."""
    for solver in ("auto", "fast"):
        result = project_to_hull(F, y, solver=solver)
        np.testing.assert_allclose(result.answers, point, atol=1e-6)
        assert result.distance == pytest.approx(distance, abs=1e-6)
        assert_valid_result(result, F, y)


@pytest.mark.solver
def test_dense_sparse_and_workload_inputs_agree():
    rng = np.random.default_rng(3)
    workload = pm.random_queries(5, 10, rng)
    y = rng.normal(0.5, 1.0, size=5)
    dense = project_to_hull(workload.matrix, y)
    from_workload = project_to_hull(workload, y)
    sparse = project_to_hull(sp.csr_array(workload.matrix), y)
    oracle, _ = nnls_projection(workload.matrix, y)
    for result in (dense, from_workload, sparse):
        np.testing.assert_allclose(result.answers, oracle, atol=1e-6)
    assert_valid_result(sparse, sp.csr_array(workload.matrix), y)


# --------------------------------------------------------------------------------------------
# Every solver by name
# --------------------------------------------------------------------------------------------


def _random_instance():
    rng = np.random.default_rng(4)
    F = pm.random_queries(6, 12, rng).matrix
    y = F @ random_simplex(rng, 12) + rng.normal(0.0, 0.5, size=6)
    return F, y


def _marginal_instance():
    rng = np.random.default_rng(5)
    domain = pm.Domain(["a", "b", "c", "d"], [2, 2, 2, 2])
    workload = pm.marginals(domain, 2)
    F = workload.matrix  # sparse
    y = workload.answer(random_simplex(rng, 16)) + rng.normal(0.0, 0.15, size=workload.num_queries)
    return F, y


INSTANCES = {"random": _random_instance, "marginals": _marginal_instance}


@pytest.mark.solver
@pytest.mark.parametrize("instance", sorted(INSTANCES))
def test_every_solver_by_name_gives_the_projection(instance):
    F, y = INSTANCES[instance]()
    expected, distance = nnls_projection(F, y)
    answers = {}
    for name in ALL_SOLVERS:
        try:
            result = project_to_hull(F, y, solver=name)
        except ProjectionError as error:
            # Only ECOS may miss the default tolerance, and only by its certificate, not by a
            # failed solve; it must then pass at a looser one.
            assert name == "ECOS", f"{name} failed: {error}"
            assert len(error.attempts) == 1
            attempt = error.attempts[0]
            assert (attempt.solver, attempt.status) == ("ECOS", Status.REJECTED)
            match = re.fullmatch(r"(backend status optimal_inaccurate, )?certified gap (\S+) > (\S+)", attempt.detail)
            assert match, attempt.detail
            assert float(match.group(2)) > float(match.group(3))
            # the rejected witness was feasible: it is the error's best, with its gap
            assert error.best is not None and error.best.stats.status is Status.REJECTED
            assert error.best.stats.gap == pytest.approx(float(match.group(2)), rel=1e-2)
            result = project_to_hull(F, y, solver=name, tol=1e-6)
        assert result.stats.solver == name
        assert [attempt.solver for attempt in result.stats.attempts] == [name]
        assert_valid_result(result, F, y)
        answers[name] = result.answers
        np.testing.assert_allclose(result.answers, expected, atol=1e-5, err_msg=name)
        assert result.distance == pytest.approx(distance, abs=1e-5)
    for a, b in itertools.combinations(ALL_SOLVERS, 2):
        np.testing.assert_allclose(answers[a], answers[b], atol=1e-5, err_msg=f"{a} vs {b}")


# --------------------------------------------------------------------------------------------
# Certificate
# --------------------------------------------------------------------------------------------


@pytest.mark.solver
@pytest.mark.parametrize("seed", range(6))
def test_certificate_never_claims_less_than_the_truth(seed):
    rng = np.random.default_rng(300 + seed)
    F = rng.integers(0, 2, size=(4, 6)).astype(float)
    y = rng.normal(0.5, 1.5, size=4)
    point, _, true_distance = brute_force_projection(F, y)
    # The tight default and a deliberately sloppy solve, so the inequality is not vacuous.
    for solver, tol, options in [("auto", 1e-8, None), ("fast", 1e-8, None),
                                 ("SCS", 1e-2, {"eps_abs": 1e-3, "eps_rel": 1e-3})]:
        result = project_to_hull(F, y, solver=solver, tol=tol, solver_options=options)
        assert_valid_result(result, F, y)
        suboptimality = 0.5 * result.distance**2 - 0.5 * true_distance**2
        assert suboptimality <= result.stats.gap + 1e-13
        # and the advertised consequence: ||answers - Pi(y)|| <= sqrt(2 gap)
        assert np.linalg.norm(result.answers - point) <= certified_radius(result, F, y)


@pytest.mark.solver
@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_certificate_at_a_degenerate_vertex(solver):
    """y = (-2, 0) projects onto the vertex (1, 0) of the segment K_Q = [(1, 0), (1, 1)], with
    y - Pi(y) orthogonal to the segment. Interior-point solvers stop a little inside it (Clarabel:
    about 1.5e-6 away with a gap of 2e-12): the answers are only as accurate as
    ||answers - Pi(y)|| <= sqrt(2 gap) guarantees, and that guarantee must hold. (SCS stops 6e-10
    away, where the true gap, 4e-19, is below the rounding error of computing it: it reports 0.)"""
    F = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    y = np.array([-2.0, 0.0])
    point, _, distance = brute_force_projection(F, y)
    np.testing.assert_allclose(point, [1.0, 0.0], atol=1e-15)
    result = project_to_hull(F, y, solver=solver)
    assert_valid_result(result, F, y)
    assert np.linalg.norm(result.answers - point) <= certified_radius(result, F, y)
    assert 0.5 * result.distance**2 - 0.5 * distance**2 <= result.stats.gap + 1e-13
    np.testing.assert_allclose(result.answers, point, atol=1e-5)


def test_frank_wolfe_gap_bounds_suboptimality_of_any_simplex_point():
    rng = np.random.default_rng(7)
    for _ in range(30):
        F = rng.integers(0, 2, size=(3, 5)).astype(float)
        y = rng.normal(0.5, 1.0, size=3)
        point, w_star, distance = brute_force_projection(F, y)
        w = random_simplex(rng, 5)
        suboptimality = 0.5 * np.linalg.norm(F @ w - y) ** 2 - 0.5 * distance**2
        gap = frank_wolfe_gap(F, y, w)
        assert gap >= suboptimality - 1e-12
        # independent evaluation: g.w - min_j g_j with g = F^T (F w - y)
        g = F.T @ (F @ w - y)
        assert gap == pytest.approx(max(g @ w - g.min(), 0.0), abs=1e-12)
        assert frank_wolfe_gap(F, y, w_star) <= 1e-10
        assert frank_wolfe_gap(sp.csr_array(F), y, w) == pytest.approx(gap, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Geometry (hypothesis)
# --------------------------------------------------------------------------------------------


@st.composite
def instances(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    k = draw(st.integers(1, 5))
    m = draw(st.integers(1, 8))
    F = rng.integers(0, 2, size=(k, m)).astype(float)
    a = F @ random_simplex(rng, m)  # a point of K_Q: the "true answers"
    y = np.array(draw(st.lists(st.floats(-3.0, 4.0), min_size=k, max_size=k)))
    return F, a, y


@pytest.mark.solver
@settings(max_examples=30, deadline=None)
@given(instances())
def test_projection_never_increases_the_error(instance):
    """Projection onto a convex set never moves away from its points (NTZ13):
    ||Pi(y) - a|| <= ||y - a|| for every a in K_Q and every y."""
    F, a, y = instance
    result = project_to_hull(F, y)
    assert np.linalg.norm(result.answers - a) <= np.linalg.norm(y - a) + 1e-7


@pytest.mark.solver
@settings(max_examples=30, deadline=None)
@given(instances())
def test_obtuse_angle_at_the_projection(instance):
    """The obtuse angle at the projection (the first step of NTZ13's error bound):
    <Y_hat - a, Y_hat - Y_tilde> <= 0 for a in K_Q."""
    F, a, y = instance
    y_hat = project_to_hull(F, y).answers
    assert (y_hat - a) @ (y_hat - y) <= 1e-7


@pytest.mark.solver
@settings(max_examples=30, deadline=None)
@given(instances())
def test_points_of_the_hull_are_fixed_points(instance):
    F, a, _ = instance
    result = project_to_hull(F, a)
    assert result.distance <= 1e-6
    np.testing.assert_allclose(result.answers, a, atol=1e-6)


@pytest.mark.solver
@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_reported_gap_is_the_gap_of_the_returned_witness(solver):
    """The certificate is recomputed from the returned witness, whatever the solver: the gap
    ``w.g - min g`` with ``g = F^T (F w - y)`` computed here by numpy over the whole universe."""
    rng = np.random.default_rng(21)
    F = pm.random_queries(5, 30, rng).toarray()
    y = F @ random_simplex(rng, 30) + rng.normal(0.0, 0.3, 5)
    result = project_to_hull(F, y, solver=solver, tol=1e-6)
    w = dense_weights(result)
    g = F.T @ (F @ w - y)
    assert result.stats.gap == pytest.approx(float(w @ g - g.min()), rel=1e-6, abs=1e-13 * np.abs(g).max())
    assert result.stats.tolerance == pytest.approx(
        1e-6 * max(0.5 * float(np.sum((F @ w - y) ** 2)) - result.stats.gap, 1.0))
    assert_valid_result(result, F, y)


# --------------------------------------------------------------------------------------------
# Failure reporting
# --------------------------------------------------------------------------------------------


def assert_reports_the_backend_failure(attempt):
    """A solver stopped after an iteration or two reports it, never as a solution: as its backend's
    status (seen with OSQP 1.1.3 and ECOS 2.0.14) or as CVXPY's SolverError (OSQP 1.0.0 and
    ECOS 2.0.12, the oldest the ranges allow)."""
    if attempt.status is Status.SOLVER_ERROR:
        assert attempt.detail.startswith(f"Solver '{attempt.solver}' failed"), attempt
    else:
        assert attempt.detail.startswith("backend status "), attempt


@pytest.mark.solver
@pytest.mark.parametrize(
    "solver, options", [("OSQP", {"max_iter": 1}), ("SCS", {"max_iters": 2}), ("CLARABEL", {"max_iter": 1})]
)
def test_named_solver_failure_raises_with_its_status(solver, options):
    rng = np.random.default_rng(8)
    F = pm.random_queries(6, 12, rng).matrix
    y = rng.normal(0.5, 1.0, size=6)
    with pytest.raises(ProjectionError) as info:
        project_to_hull(F, y, solver=solver, solver_options=options)
    attempts = info.value.attempts
    assert len(attempts) == 1
    assert attempts[0].solver == solver and attempts[0].status is not Status.OPTIMAL
    assert_reports_the_backend_failure(attempts[0])
    assert isinstance(info.value, SolveError) and str(attempts[0]) in str(info.value)


@pytest.mark.solver
def test_auto_falls_back_to_the_next_solver(monkeypatch):
    rng = np.random.default_rng(9)
    F = rng.integers(0, 2, size=(4, 6)).astype(float)
    y = rng.normal(0.5, 1.0, size=4)
    point, _, _ = brute_force_projection(F, y)
    options = {name: dict(values) for name, values in hull._SOLVER_OPTIONS.items()}
    options["OSQP"]["max_iter"] = 1
    monkeypatch.setattr(hull, "_SOLVER_OPTIONS", options)
    monkeypatch.setattr(hull, "auto_solver_order", lambda workload: ["OSQP", "CLARABEL"])
    result = project_to_hull(F, y)
    first, accepted = result.stats.attempts
    assert first.solver == "OSQP" and first.status is not Status.OPTIMAL
    assert_reports_the_backend_failure(first)
    assert (accepted.solver, accepted.status) == ("CLARABEL", Status.OPTIMAL)
    assert result.stats.solver == "CLARABEL" and result.stats.solve_time == accepted.seconds
    np.testing.assert_allclose(result.answers, point, atol=1e-6)
    assert result.summary()["attempts"] == [str(a) for a in result.stats.attempts]


@pytest.mark.solver
@pytest.mark.parametrize("m", [6, 2048])
def test_auto_raises_when_every_solver_fails(monkeypatch, m):
    """"auto" tries every solver, in the order of auto_solver_order (the modelled ones by their
    estimated time, then ECOS and OSQP), and reports all."""
    from projmech.bodies import _cost as cost

    # Flat estimates, different at each size, fix the order independently of the fitted ones.
    seconds = {6: (3.0, 1.0, 2.0), 2048: (1.0, 3.0, 2.0)}[m]
    monkeypatch.setattr(cost, "COST_MODELS", {name: cost.CostModel(value, ()) for name, value in
                                              zip(("fast", "CLARABEL", "SCS"),
                                                  seconds)} | {"relaxed": cost.CostModel(1.0, ())})
    documented_order = {6: ["CLARABEL", "SCS", "fast", "ECOS", "OSQP"], 2048: ["fast", "SCS", "CLARABEL", "ECOS",
                                                                               "OSQP"]}[m]
    rng = np.random.default_rng(10)
    F = rng.integers(0, 2, size=(4, m)).astype(float)
    y = rng.normal(0.5, 1.0, size=4)
    crippled = {"CLARABEL": {"max_iter": 1}, "ECOS": {"max_iters": 1}, "OSQP": {"max_iter": 1}, "SCS": {"max_iters": 2}}
    monkeypatch.setattr(hull, "_SOLVER_OPTIONS", crippled)
    with pytest.raises(ProjectionError) as info:
        # No floating-point gap meets 1e-300 (the optimum here is on an edge, its weights
        # irrational): the active-set solver stops unconverged too, first or last.
        project_to_hull(F, y, tol=1e-300, max_iterations=1)
    attempts = info.value.attempts
    assert [attempt.solver for attempt in attempts] == documented_order
    for attempt in attempts:
        if attempt.solver == "fast":
            assert attempt.status is Status.ITERATION_LIMIT and attempt.detail.startswith("stopped after 1 iterations")
        else:
            assert attempt.status is not Status.OPTIMAL, attempt
            assert_reports_the_backend_failure(attempt)


# --------------------------------------------------------------------------------------------
# The solver's raw output is cleaned and never trusted (fake solvers)
# --------------------------------------------------------------------------------------------


def _fake_solver(raw, status="optimal"):
    def solve(F, y, solver, options):
        return (None if raw is None else np.array(raw, dtype=float)), status

    return solve


def test_slightly_infeasible_raw_output_is_cleaned(monkeypatch):
    y = np.array([0.9, 0.1])  # projects to (0.5, 0.5): w* = (1/2, 0, 1/2) on F's columns
    raw = np.array([0.5 + 3e-9, -2e-9, 0.5 + 1e-9])
    monkeypatch.setattr(hull, "_solve_once", _fake_solver(raw))
    result = project_to_hull(THRESHOLD_F, y, solver="CLARABEL", tol=1e-6)
    assert np.all(result.weights >= 0.0)
    assert abs(result.weights.sum() - 1.0) <= 1e-12
    clipped = np.clip(raw, 0.0, None)
    np.testing.assert_allclose(result.weights, clipped / clipped.sum(), rtol=0, atol=1e-15)
    assert result.raw_feasibility_error == pytest.approx(max(2e-9, abs(raw.sum() - 1.0)), rel=1e-6)
    np.testing.assert_allclose(result.answers, [0.5, 0.5], atol=1e-8)
    assert result.stats.status is Status.OPTIMAL
    assert [(a.solver, a.status) for a in result.stats.attempts] == [("CLARABEL", Status.OPTIMAL)]


@pytest.mark.parametrize(
    "raw, status, reason",
    [
        ([1.0, 0.0, 0.0], "optimal", "certified gap"),  # feasible but far from optimal
        ([0.5, 0.0, 0.5], "infeasible", "status infeasible"),  # optimal point, bad status
        ([np.nan, 0.5, 0.5], "optimal", "non-finite"),
        ([-1.0, -1.0, 0.0], "optimal", "no positive mass"),
        (None, "optimal", "status optimal"),
    ],
)
def test_untrustworthy_raw_output_is_rejected(monkeypatch, raw, status, reason):
    monkeypatch.setattr(hull, "_solve_once", _fake_solver(raw, status))
    with pytest.raises(ProjectionError) as info:
        project_to_hull(THRESHOLD_F, np.array([0.9, 0.1]), solver="OSQP")
    assert len(info.value.attempts) == 1
    assert info.value.attempts[0].solver == "OSQP" and info.value.attempts[0].status is not Status.OPTIMAL
    assert reason in info.value.attempts[0].detail


# --------------------------------------------------------------------------------------------
# Bad inputs: rejected before any solve
# --------------------------------------------------------------------------------------------


def _no_solve(*args, **kwargs):
    raise AssertionError("a solver was called on invalid input")


F_OK = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
Y_OK = np.array([0.3, 0.4])


@pytest.mark.parametrize(
    "F, y, kwargs",
    [
        (F_OK, [0.3, 0.4, 0.5], {}),  # y too long
        (F_OK, [0.3], {}),  # y too short
        (F_OK, [[0.3], [0.4]], {}),  # y 2-d
        (F_OK, [np.nan, 0.4], {}),
        (F_OK, [np.inf, 0.4], {}),
        (F_OK, [0.3, -np.inf], {}),
        (np.array([[1.0, np.nan, 0.0], [0.0, 1.0, 1.0]]), Y_OK, {}),
        (np.array([[1.0, np.inf, 0.0], [0.0, 1.0, 1.0]]), Y_OK, {}),
        (sp.csr_array(np.array([[1.0, np.nan, 0.0], [0.0, 1.0, 1.0]])), Y_OK, {}),
        (np.array([1.0, 0.0, 1.0]), [0.3], {}),  # F 1-d
        (np.zeros((2, 0)), Y_OK, {}),  # F empty
        (F_OK, Y_OK, {"tol": 0.0}),
        (F_OK, Y_OK, {"tol": -1e-8}),
        (F_OK, Y_OK, {"tol": float("nan")}),
        (F_OK, Y_OK, {"tol": float("inf")}),
        (F_OK, Y_OK, {"solver": "GUROBI"}),
        (F_OK, Y_OK, {"solver": ""}),
    ],
)
def test_bad_inputs_raise_value_error_before_solving(monkeypatch, F, y, kwargs):
    monkeypatch.setattr(hull, "_solve_once", _no_solve)
    with pytest.raises(ValueError):
        project_to_hull(F, y, **kwargs)


def test_tol_must_be_a_real_number():
    F = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="tol"):
        project_to_hull(F, np.array([0.2, 0.3]), tol=True)
    result = project_to_hull(F, np.array([0.2, 0.3]), tol=np.float32(1e-6))
    assert np.allclose(result.answers, [0.45, 0.55], atol=1e-6)


@pytest.mark.solver
def test_auto_solver_options_are_keyed_by_solver(monkeypatch):
    monkeypatch.setattr(hull, "auto_solver_order", lambda workload: ["CLARABEL", "SCS", "fast"])
    F = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    y = np.array([0.9, 0.8])
    with pytest.raises(ValueError, match="keyed by solver name"):
        project_to_hull(F, y, solver="auto", solver_options={"max_iter": 5})
    # Clarabel crippled to one iteration is rejected, and auto moves on to the next solver.
    result = project_to_hull(F, y, solver="auto", solver_options={"CLARABEL": {"max_iter": 1}})
    first, last = result.stats.attempts[0], result.stats.attempts[-1]
    assert first.solver == "CLARABEL" and first.status is not Status.OPTIMAL
    assert last.status is Status.OPTIMAL and result.stats.solver == last.solver != "CLARABEL"


def test_gap_keeps_precision_for_accurate_solutions():
    # At an exact optimum the gap is exactly zero in real arithmetic; the computation must not
    # manufacture a gap out of cancellation between two large numbers.
    F = np.array([[1e6, 0.0], [0.0, 1e6]])
    y = np.array([2e6, 0.0])
    gap = frank_wolfe_gap(F, y, np.array([1.0, 0.0]))
    assert 0.0 <= gap <= 1e-3


@pytest.mark.solver
def test_auto_falls_back_to_the_active_set_on_badly_scaled_small_problems():
    """Columns of norm 1e8 on 8 cells: the CVXPY solvers fail the certificate, the active-set
    solver (tried last below 1024 cells) certifies it; the reference is the scale-free problem
    (a direct CVXPY model, its bound certified by duality)."""
    rng = np.random.default_rng(3)
    F = rng.integers(0, 2, size=(4, 8)).astype(float)
    y = rng.normal(0.5, 1.0, size=4)
    scaled = project_to_hull(1e8 * F, 1e8 * y)
    _, reference = reference_projection(F, y)
    np.testing.assert_allclose(scaled.answers / 1e8, reference, atol=1e-6)
    assert (scaled.stats.attempts[-1].solver, scaled.stats.attempts[-1].status) == (scaled.stats.solver, Status.OPTIMAL)


# --------------------------------------------------------------------------------------------
# The result's contract: statistics, summary, repr; keyword-only options
# --------------------------------------------------------------------------------------------


@pytest.mark.solver
def test_summary_holds_the_stats_and_is_json():
    F, y = _random_instance()
    result = project_to_hull(F, y, solver="CLARABEL")
    summary = json.loads(json.dumps(result.summary()))
    assert summary.items() >= result.stats.summary().items()
    assert summary["body"] == "hull" and summary["relative_gap"] is False
    assert summary["support_size"] == np.count_nonzero(dense_weights(result))
    assert summary["distance"] == pytest.approx(np.linalg.norm(result.answers - y))


def test_repr_stays_short_with_a_large_witness():
    """A witness of a million weights is never printed: one line, a few hundred characters."""
    m = 10**6
    weights = np.full(m, 1.0 / m)
    stats = SolveStats("fast", Status.OPTIMAL, 0.5, iterations=3, gap=1e-9, tolerance=1e-8, tolerance_met=True,
                       attempts=(Attempt("fast", Status.OPTIMAL, "certified gap 1.00e-09 <= 1.00e-08", 0.5),))
    result = pm.ProjectionResult(answers=np.zeros(40), weights=weights, distance=0.25, raw_feasibility_error=0.0,
                                 stats=stats)
    text = repr(result)
    assert "\n" not in text and len(text) < 300
    assert "1,000,000" in text and "fast optimal" in text
    assert len(str(result)) < 400 and str(result).count("\n") <= 2


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        project_to_hull(F_OK, Y_OK, "CLARABEL")
    with pytest.raises(TypeError):
        project_to_hull(F_OK, Y_OK, solver="CLARABEL", tol=None, solver_options=None, bogus=1)


def test_solver_options_defaults_are_read_only():
    """The module's tight defaults are copied into each solve, never handed out to be changed."""
    with pytest.raises(TypeError):
        hull._SOLVER_OPTIONS["SCS"]["max_iters"] = 1
    with pytest.raises(TypeError):
        hull._SOLVER_OPTIONS["SCS"] = {}


# --------------------------------------------------------------------------------------------
# Memory: a projection that cannot fit is refused before anything is allocated (issue 31)
# --------------------------------------------------------------------------------------------


def test_a_universe_beyond_memory_is_refused_before_any_allocation():
    """1-way marginals of 10 attributes of 17 values: 17^10 = 2.0e12 elements, whose gradient
    alone would take 14.7 TiB. A ValueError naming F, within a second (numpy's MemoryError before)."""
    import time

    domain = pm.Domain([f"p{i}" for i in range(10)], [17] * 10)
    workload = pm.marginals(domain, 1, implicit=True)
    y = np.full(workload.num_queries, 1 / 17)
    for solver in ("auto", "fast"):
        start = time.perf_counter()
        with pytest.raises(ValueError, match=r"^F: projecting onto the hull K_Q holds vectors over the universe of "
                                             r"2,015,993,900,449 elements, about [\d.]+ TiB, more than the"):
            pm.project_to_hull(workload, y, solver=solver)
        assert time.perf_counter() - start < 5


def test_solvers_that_do_not_fit_are_refused_or_left_out(monkeypatch):
    """With memory for the active-set solver only (by the model's figures), a CVXPY solver named is
    refused, naming what it would hold, and solver="auto" runs the active-set solver."""
    import projmech.bodies._memory as memory

    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(8)], [2] * 8), 2)  # 112 x 256, 28 entries a column
    k, m = workload.shape
    fast = 48 * m + 48 * k * (1 + 8 + 28 + 1)  # rank 1 + 8 + 28
    cvxpy = 48 * m + 300 * 28 * m
    assert hull.solver_memory(workload, "fast") == fast and hull.solver_memory(workload, "CLARABEL") == cvxpy
    assert fast < cvxpy
    monkeypatch.setattr(memory, "available_memory", lambda: int(fast / memory.MEMORY_FRACTION) + 1)
    with pytest.raises(ValueError, match=r"^F: projecting onto the hull K_Q holds CLARABEL's copies of the 7,168 "
                                         r"stored entries of the explicit matrix, about .*; use .*solver='auto'"):
        pm.project_to_hull(workload, workload.answer(np.full(m, 1 / m)), solver="CLARABEL")
    y = workload.answer(np.full(m, 1 / m)) + 0.01
    result = pm.project_to_hull(workload, y, noise_scale=0.01)
    assert [attempt.solver for attempt in result.stats.attempts] == ["fast"]
    # Where the active-set solver fails, the CVXPY fallbacks, all applicable, are left out for
    # their memory alone: no MemoryError, the failure with the one attempt that could run.
    assert hull.auto_solver_order(workload) == ["fast", "CLARABEL", "SCS", "ECOS", "OSQP"]
    monkeypatch.setattr(hull, "_solve_fast", lambda *args: hull.Outcome(Status.SOLVER_ERROR, detail="planted"))
    with pytest.raises(ProjectionError) as error:
        pm.project_to_hull(workload, y, noise_scale=0.01)
    assert [attempt.solver for attempt in error.value.attempts] == ["fast"]
