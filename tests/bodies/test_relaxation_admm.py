"""The ADMM projection onto the relaxation L against the CVXPY model and closed forms.

The CVXPY model's optimum is Clarabel's, known to the accuracy its status reports
(``oracles.relaxation_reference``): every comparison with it leaves that much room.
"""

import itertools
import json
import math

import numpy as np
import pytest

import projmech as pm
from oracles import project_simplex, relaxation_reference
from projmech.bodies import MomentEncoding, project_to_relaxation
from projmech.bodies import _relaxation_admm as relaxation_admm
from projmech.bodies._relaxation_admm import (
    _Anderson,
    _ContrastModel,
    _simplex_projection,
    admm_projection,
    one_hot_lift,
)
from projmech.solve import Status

DOMAINS = {
    "binary": pm.Domain(["a", "b", "c", "d", "e"], [2, 2, 2, 2, 2]),
    "categorical": pm.Domain(["a", "b", "c"], [3, 2, 4]),
    "mixed": pm.Domain(["a", "b", "c", "d"], [2, 3, 2, 5]),
}


def _records(domain, n, rng):
    return np.column_stack([rng.integers(0, size, n) for size in domain.sizes])


def _noisy(domain, rng, n=40, sigma=0.05):
    h = pm.histogram(pm.Dataset(_records(domain, n, rng), domain))
    truth = pm.marginals(domain, 2).answer(h)
    return h, truth, truth + rng.normal(0, sigma, truth.size)


def test_simplex_projection_matches_the_closed_form():
    rng = np.random.default_rng(0)
    points = rng.normal(0.2, 0.4, size=(20, 6))
    np.testing.assert_allclose(_simplex_projection(points), project_simplex(points), rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", DOMAINS)
def test_contrast_coordinates_reproduce_marginals_and_moments(name):
    """For a real distribution, the contrast point gives its marginals (independently: F @ h)
    and lifts to its one-hot moment matrix."""
    domain = DOMAINS[name]
    rng = np.random.default_rng(1)
    h = rng.dirichlet(np.ones(domain.size))
    model = _ContrastModel(domain, local=True)
    one_hot = MomentEncoding.of(domain, "one-hot")
    Y = one_hot.moments_of(h)
    lift = one_hot_lift(domain)
    contrast = np.linalg.pinv(lift) @ Y @ np.linalg.pinv(lift).T
    m = contrast[0, 1:]
    cross = [contrast.reshape(-1)[group.block] for group in model.groups]
    assert np.allclose(model.cells(m, cross), pm.marginals(domain, 2).answer(h), atol=1e-12)
    assert np.allclose(model.moments(m, cross), contrast, atol=1e-12)
    assert np.allclose(lift @ model.moments(m, cross) @ lift.T, Y, atol=1e-12)
    assert math.isclose(np.trace(contrast), model.trace, rel_tol=1e-12)


@pytest.mark.parametrize("name", DOMAINS)
def test_adjoints_are_adjoint(name):
    domain = DOMAINS[name]
    rng = np.random.default_rng(2)
    model = _ContrastModel(domain, local=True)
    m = rng.normal(size=model.order - 1)
    cross = [rng.normal(size=g.block.shape) for g in model.groups]
    answers = rng.normal(size=model.num_queries)
    S = rng.normal(size=(model.order, model.order))
    S = S + S.T

    def inner(first, second):
        return first[0] @ second[0] + sum(np.sum(a * b) for a, b in zip(first[1], second[1]))

    zero_m = np.zeros_like(m)
    zero_cross = [np.zeros_like(c) for c in cross]
    linear_cells = model.cells(m, cross) - model.cells(zero_m, zero_cross)
    assert math.isclose(linear_cells @ answers, inner((m, cross), model.cells_adjoint(answers)), rel_tol=1e-10)
    assert math.isclose(np.sum(model.linear_moments(m, cross) * S), inner((m, cross), model.moments_adjoint(S)),
                        rel_tol=1e-10)


# The sdp relaxation may release negative cells here; NegativeCellsWarning says so, by design.
@pytest.mark.solver
@pytest.mark.filterwarnings("ignore::projmech.bodies.NegativeCellsWarning")
@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("relaxation", ["sdp+local", "sdp"])
@pytest.mark.parametrize("accelerated_after", [None, 10])
def test_admm_matches_the_cvxpy_reference_within_its_certificate(name, relaxation, accelerated_after, monkeypatch):
    """Also with Anderson's acceleration from the tenth iteration, where these small problems reach it."""
    if accelerated_after is not None:
        monkeypatch.setattr(relaxation_admm, "ANDERSON_AFTER", accelerated_after)
    domain = DOMAINS[name]
    rng = np.random.default_rng(3)
    for _ in range(3):
        _, _, y = _noisy(domain, rng)
        answers, distance, accuracy = relaxation_reference(domain, y, relaxation)
        optimum = 0.5 * distance ** 2
        room = 1e-7 + 2 * accuracy  # on the squared distance, relative
        result = admm_projection(domain, y, local=relaxation == "sdp+local", tol=1e-7)
        assert result.converged and result.gap <= 1e-7
        # The certificate brackets the independent optimum (up to Clarabel's own accuracy).
        assert result.lower_bound <= optimum * (1 + room) + 1e-12
        assert result.objective >= optimum * (1 - room) - 1e-12
        assert result.objective - optimum <= (1e-7 + room) * optimum + 1e-12
        # Strong convexity: ||x - x*||^2 <= 2 (f(x) - f*). Clarabel's own point is accurate to
        # about 2e-5 where it meets its tolerances, and to sqrt(2 * room) * distance at least.
        bound = math.sqrt(2 * max(result.objective - result.lower_bound, 0.0))
        point_room = 5e-5 if accuracy <= 1e-8 else math.sqrt(2 * room) * distance
        assert np.linalg.norm(result.answers - answers) <= bound + point_room


@pytest.mark.solver
def test_certificate_is_never_optimistic_on_early_stops():
    """Stopped after few iterations, the lower bound still lies below the true optimum and the
    returned point is feasible (its objective above it)."""
    domain = DOMAINS["mixed"]
    rng = np.random.default_rng(4)
    for iterations in (1, 10, 30):
        _, _, y = _noisy(domain, rng, sigma=0.1)
        _, distance, accuracy = relaxation_reference(domain, y)
        optimum = 0.5 * distance ** 2
        result = admm_projection(domain, y, tol=1e-12, max_iterations=iterations, check_every=1)
        assert not result.converged
        assert result.lower_bound <= optimum * (1 + 1e-7 + 2 * accuracy)
        assert result.objective >= optimum * (1 - 1e-7 - 2 * accuracy)


@pytest.mark.parametrize("name", DOMAINS)
def test_returned_point_lies_in_the_relaxation(name):
    """Checked independently in the one-hot encoding of the CVXPY model."""
    domain = DOMAINS[name]
    rng = np.random.default_rng(5)
    _, _, y = _noisy(domain, rng, sigma=0.2)
    result = admm_projection(domain, y, tol=1e-3, max_iterations=5)
    lift = one_hot_lift(domain)
    Y = lift @ result.contrast_moments @ lift.T
    one_hot = MomentEncoding.of(domain, "one-hot")
    assert np.allclose(one_hot.answers(Y), result.answers, atol=1e-12)
    assert result.answers.min() >= -1e-12
    assert np.linalg.eigvalsh(Y).min() >= -1e-10
    assert math.isclose(Y[0, 0], 1.0)
    for a, size in enumerate(domain.sizes):  # rows of one attribute: exclusive, summing to one
        start = 1 + sum(domain.sizes[:a])
        block = Y[start:start + size, start:start + size]
        assert np.allclose(block, np.diag(Y[0, start:start + size]), atol=1e-12)
        assert np.allclose(Y[start:start + size].sum(axis=0), Y[0], atol=1e-12)


@pytest.mark.parametrize("name", DOMAINS)
def test_true_marginals_are_fixed_points(name):
    domain = DOMAINS[name]
    rng = np.random.default_rng(6)
    _, truth, _ = _noisy(domain, rng)
    result = admm_projection(domain, truth, tol=1e-6)
    assert result.converged
    assert np.linalg.norm(result.answers - truth) <= 1e-3 * np.linalg.norm(truth)


def test_local_constraints_bind_where_the_sdp_alone_does_not():
    """The point m_i = m_j = C_ij = -1/2 (±1 form) is in the elliptope but has a (1,1)
    cell of -1/8: "sdp" keeps it, "sdp+local" moves it."""
    domain = pm.Domain(["a", "b"], [2, 2])
    m, c = -0.5, -0.5
    y = np.array([(1 + s * m + t * m + s * t * c) / 4 for s, t in itertools.product((-1, 1), repeat=2)])
    assert y.min() == pytest.approx(-1 / 8)
    assert admm_projection(domain, y, local=False, tol=1e-8).objective <= 1e-12
    assert admm_projection(domain, y, local=True, tol=1e-8).objective > 1e-3


@pytest.mark.solver
@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("encoding", ["auto", "one-hot"])
def test_project_to_relaxation_by_admm_returns_certified_moments(name, encoding):
    domain = DOMAINS[name]
    rng = np.random.default_rng(7)
    _, _, y = _noisy(domain, rng)
    result = project_to_relaxation(domain, y, encoding=encoding, tol=1e-6)
    stats = result.stats
    assert stats.solver == "admm" and stats.status is Status.OPTIMAL and stats.tolerance_met
    assert stats.relative_gap and stats.tolerance == 1e-6
    assert stats.gap <= 1e-6 and stats.iterations >= 1
    assert [(a.solver, a.status) for a in stats.attempts] == [("admm", Status.OPTIMAL)]
    model = MomentEncoding.of(domain, encoding)
    assert result.moments.shape == (model.size, model.size)
    assert np.allclose(model.answers(result.moments), result.answers, atol=1e-12)
    assert result.constraint_violation <= 1e-10
    assert result.distance == pytest.approx(np.linalg.norm(result.answers - y))
    _, distance, accuracy = relaxation_reference(domain, y, encoding=encoding)
    assert result.distance <= distance * (1 + 1e-6 + accuracy) + 1e-9
    assert result.distance ** 2 * (1 - 1e-6) <= distance ** 2 * (1 + 1e-6 + 2 * accuracy) + 1e-9


@pytest.mark.solver
def test_unconverged_admm_raises_with_its_best_point():
    """max_iterations=1: a SolveError with ADMM's one attempt at its iteration limit and the
    feasible point reached as ``best``; its gap is checked against the CVXPY optimum."""
    domain = DOMAINS["mixed"]
    _, _, y = _noisy(domain, np.random.default_rng(8), sigma=0.2)
    with pytest.raises(pm.RelaxationError, match="gap") as error:
        project_to_relaxation(domain, y, tol=1e-12, max_iterations=1)
    assert isinstance(error.value, pm.SolveError)
    assert [(a.solver, a.status) for a in error.value.attempts] == [("admm", Status.ITERATION_LIMIT)]
    best = error.value.best
    assert best is not None and best.stats.status is Status.ITERATION_LIMIT and not best.stats.tolerance_met
    assert best.stats.gap > 1e-12 and best.stats.iterations == 1 and best.stats.relative_gap
    assert best.constraint_violation <= 1e-10
    # The relative gap bounds the suboptimality of the point against the independent optimum
    # (known to Clarabel's reported accuracy).
    _, distance, accuracy = relaxation_reference(domain, y)
    optimum = 0.5 * distance ** 2
    objective = 0.5 * best.distance ** 2
    assert objective - optimum <= best.stats.gap * objective + 2 * accuracy * optimum + 1e-7


def test_callback_gets_increasing_iterations_and_the_final_gap():
    domain = DOMAINS["mixed"]
    _, _, y = _noisy(domain, np.random.default_rng(10))
    calls = []
    result = project_to_relaxation(domain, y, tol=1e-6, callback=lambda i, gap: calls.append((i, gap)))
    iterations = [i for i, _ in calls]
    assert iterations[:2] == [10, 20] and iterations[-1] == result.stats.iterations  # every certificate
    assert all(10 <= b - a <= 40 for a, b in zip(iterations, iterations[1:]))
    assert calls[-1][1] == pytest.approx(result.stats.gap, rel=1e-6, abs=1e-12)
    assert calls[-1][1] <= 1e-6 < calls[0][1]


def test_options_are_keyword_only():
    domain = DOMAINS["binary"]
    y = np.full(pm.marginals(domain, 2).num_queries, 0.25)
    with pytest.raises(TypeError):
        project_to_relaxation(domain, y, "sdp")
    with pytest.raises(TypeError):
        admm_projection(domain, y, True)


@pytest.mark.solver
def test_auto_picks_admm_for_the_semidefinite_relaxations_and_cvxpy_for_local():
    domain = DOMAINS["binary"]
    _, _, y = _noisy(domain, np.random.default_rng(9))
    assert project_to_relaxation(domain, y, relaxation="sdp+local").stats.solver == "admm"
    assert project_to_relaxation(domain, y, relaxation="sdp").stats.solver == "admm"
    local = project_to_relaxation(domain, y, relaxation="local")
    assert local.stats.solver == "SCS" and local.stats.status is Status.OPTIMAL
    # A CVXPY solver certifies no gap: its accuracy is its own status.
    assert local.stats.gap is None and not local.stats.tolerance_met


@pytest.mark.parametrize("kwargs, message", [
    ({"relaxation": "local", "solver": "admm"}, "solver"),
    ({"solver": "admm", "solver_options": {"eps": 1e-3}}, "solver_options"),
    ({"solver": "GUROBI-ish"}, "solver"),
    ({"tol": 0.0}, "tol"),
    ({"tol": 1.5}, "tol"),
    ({"tol": float("nan")}, "tol"),
    ({"max_iterations": 0}, "max_iterations"),
])
def test_bad_solver_arguments_are_refused_before_solving(kwargs, message):
    domain = DOMAINS["binary"]
    y = np.full(pm.marginals(domain, 2).num_queries, 0.25)
    with pytest.raises(ValueError, match=message):
        project_to_relaxation(domain, y, **kwargs)


def test_tol_must_be_a_number():
    domain = DOMAINS["binary"]
    y = np.full(pm.marginals(domain, 2).num_queries, 0.25)
    with pytest.raises(TypeError, match="tol"):
        project_to_relaxation(domain, y, tol="small")


def test_result_summary_holds_the_stats_and_repr_is_short():
    domain = pm.Domain([f"x{i}" for i in range(60)], [2] * 60)  # moments 61 x 61, 7080 answers
    rng = np.random.default_rng(11)
    y = pm.marginals(domain, 2, implicit=True).answer_data(pm.Dataset(rng.integers(0, 2, size=(200, 60)), domain))
    result = project_to_relaxation(domain, y + rng.normal(0, 0.05, y.size))
    summary = json.loads(json.dumps(result.summary()))
    assert summary.items() >= result.stats.summary().items()
    assert summary["body"] == "relaxation/sdp+local" and summary["relative_gap"] is True
    assert summary["constraint_violation"] == result.constraint_violation
    assert "\n" not in repr(result) and len(repr(result)) < 300
    assert "admm optimal" in str(result)


def test_clipped_cells_keep_the_marginals_and_lower_the_mixture_needed():
    """The refit changes the cross moments alone, so every table keeps the 1-way marginals of
    ``m``, and its cells are far less negative; the upper bound takes the better feasible point."""
    from projmech.bodies._relaxation_admm import _clip_cells, _feasible, _mixed, _upper_bound
    domain = DOMAINS["mixed"]
    rng = np.random.default_rng(11)
    _, _, y = _noisy(domain, rng, sigma=0.05)
    model = _ContrastModel(domain, local=True)
    m, cross = model.solve(*model.cells_adjoint(y), ratio=0.0)  # the least-squares fit: negative cells
    before = model.cells(m, cross)
    assert before.min() < -1e-3
    clipped = _clip_cells(model, m, cross)
    after = model.cells(m, clipped)
    assert after.min() > 0.1 * before.min()
    for answers in (before, after):  # 1-way marginals of every table, against the brute-force ones of m
        tables = {}
        offset = 0
        for a, b in itertools.combinations(range(len(domain.sizes)), 2):
            table = answers[offset:offset + domain.sizes[a] * domain.sizes[b]].reshape(domain.sizes[a], domain.sizes[b])
            tables.setdefault(a, []).append(table.sum(axis=1))
            tables.setdefault(b, []).append(table.sum(axis=0))
            offset += table.size
        for sums in tables.values():
            for other in sums[1:]:
                np.testing.assert_allclose(other, sums[0], atol=1e-12)
    assert _feasible(model, m, clipped)[0] < _feasible(model, m, cross)[0]
    best = _upper_bound(model, m, cross, y)[0]
    assert best == min(_mixed(model, m, cross, y)[0], _mixed(model, m, clipped, y)[0])


def test_admm_runs_on_one_blas_thread(monkeypatch):
    """Its eigendecompositions are small: two threads oversubscribe a busy 2-core machine (digits'
    10 x 17 values, 2-way: 8.6 s against 0.42 s, benchmarks/threads.py), so it pins one."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from projmech.bodies import _relaxation_admm as relaxation_admm

    seen = []
    eigh = relaxation_admm.scipy.linalg.eigh

    def counting_eigh(matrix, **options):
        seen.append({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"})
        return eigh(matrix, **options)

    monkeypatch.setattr(relaxation_admm.scipy.linalg, "eigh", counting_eigh)
    domain = DOMAINS["binary"]
    _, _, y = _noisy(domain, np.random.default_rng(4))
    with threadpool_limits(2, user_api="blas"):
        relaxation_admm.admm_projection(domain, y)
    assert seen and all(threads == {1} for threads in seen), seen


def test_anderson_reaches_the_fixed_point_of_a_linear_contraction_far_sooner():
    """On ``x -> M x + b`` in 6 dimensions (contraction 0.95), the extrapolated steps reach the
    solution of ``(I - M) x = b`` within 10 steps (exactly, in exact arithmetic, once the memory
    spans the space); the plain steps are still more than half as far as at the start."""
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    M = basis @ np.diag(np.linspace(-0.5, 0.95, 6)) @ basis.T
    b = rng.normal(size=6)
    fixed = np.linalg.solve(np.eye(6) - M, b)
    anderson, x, plain = _Anderson(), np.zeros(6), np.zeros(6)
    for _ in range(10):
        (x,) = anderson.next((x,), (M @ x + b,))
        plain = M @ plain + b
    assert np.linalg.norm(x - fixed) <= 1e-10 * np.linalg.norm(fixed)
    assert np.linalg.norm(plain - fixed) >= 0.5 * np.linalg.norm(fixed)


def test_anderson_takes_the_plain_step_and_forgets_after_a_residual_far_above_its_smallest():
    anderson = _Anderson()
    anderson.next((np.zeros(3),), (np.ones(3),))
    accelerated = anderson.next((np.ones(3),), (np.full(3, 1.5),))
    assert anderson.count == 1 and not np.allclose(accelerated[0], 1.5)  # extrapolated
    image = np.full(3, 1e3)
    (after,) = anderson.next((np.zeros(3),), (image,))  # a residual 2,000 times the smallest
    assert anderson.count == 0 and np.array_equal(after, image)


def test_anderson_extrapolates_again_after_a_reset():
    """After a reset, residuals of the size that caused it are the new reference: the next steps
    extrapolate again instead of resetting at every call."""
    anderson = _Anderson()
    anderson.next((np.zeros(3),), (np.ones(3),))
    anderson.next((np.ones(3),), (np.full(3, 1.5),))
    anderson.next((np.zeros(3),), (np.full(3, 1e3),))  # reset
    anderson.next((np.full(3, 1e3),), (np.full(3, 1.5e3),))
    assert anderson.count == 1


def test_anderson_updated_gram_matrix_equals_the_recomputed_one():
    """The Gram matrix kept from each call's products (the ring filled, wrapped, then reset) is
    the one recomputed from the kept residual differences."""
    rng = np.random.default_rng(5)
    anderson = _Anderson()
    x = rng.normal(size=40)
    for step in range(25):
        image = 0.9 * x + rng.normal(size=40) * (1e3 if step == 18 else 1.0)  # step 18 resets
        x = anderson.next((x,), (image,))[0]
        kept = slice(anderson.count)
        if anderson.count:
            residuals = anderson.residuals[kept]
            np.testing.assert_allclose(anderson.gram[kept, kept], residuals @ residuals.T, rtol=1e-10,
                                       atol=1e-10 * float(np.trace(residuals @ residuals.T)))
    assert anderson.count == 6  # 25 calls, a reset at the 19th, the next difference at the 20th


def test_certificates_are_spaced_by_half_the_predicted_iterations():
    """Gaps 0.1 then 0.05 twenty iterations apart fall by half every 20: 0.01 is log2(5) * 20 = 46.4
    iterations away, and the next certificate comes after half of them; within 10 to 40."""
    from projmech.bodies._certificates import next_certificate

    def spacing(checks, target, least):
        return next_certificate(checks, target, least, relaxation_admm.CHECK_MOST * least)
    assert spacing([(10, 0.1), (30, 0.05)], 0.01, 10) == round(10 * math.log2(5))
    assert spacing([(10, 0.1), (20, 0.05)], 1e-4, 10) == 40  # far: at most 4 x check_every
    assert spacing([(10, 0.1), (20, 1e-3)], 1e-4, 10) == 10  # near: at least check_every
    assert spacing([(10, 0.1)], 1e-4, 10) == 10 and spacing([(10, 0.1), (20, 0.2)], 1e-4, 10) == 10


@pytest.mark.parametrize("shift", [-1e3, -0.3, -1e-3, 0.0, 1e-3, 0.3, 1e3])
def test_warm_started_simplex_projection_matches_the_closed_form_from_any_start(shift):
    """From thresholds near (Newton's steps) or far (above every cell: a restart; far below: the
    cold projection after the steps) the answer is the sorted closed form's, with its threshold."""
    rng = np.random.default_rng(2)
    points = rng.normal(0.05, 0.1, size=(30, 40))
    exact = project_simplex(points)
    support = exact > 0
    threshold = (np.where(support, points, 0.0).sum(axis=1) - 1.0) / support.sum(axis=1)
    projected, found = relaxation_admm._simplex_from(points, threshold + shift)
    np.testing.assert_allclose(projected, exact, rtol=0, atol=1e-13)
    np.testing.assert_allclose(found, threshold, rtol=0, atol=1e-13)


def test_fixed_map_warm_simplex_changes_nothing_but_time(monkeypatch):
    """The ADMM with its tables' projections warm-started ends where the cold ones lead (same
    iterations, same objective to rounding)."""
    domain = DOMAINS["mixed"]
    _, _, y = _noisy(domain, np.random.default_rng(12), sigma=0.1)
    warm = admm_projection(domain, y, tol=1e-7, max_iterations=2000)
    monkeypatch.setattr(relaxation_admm, "_simplex_from",
                        lambda points, start: (_simplex_projection(points), start))
    cold = admm_projection(domain, y, tol=1e-7, max_iterations=2000)
    assert warm.converged and cold.converged and warm.iterations == cold.iterations
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
