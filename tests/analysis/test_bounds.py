"""Error bounds and their inverses: closed forms, simulations of the mechanisms with exact
projections written here (clipping, sorting), the proofs' pathwise inequalities, round trips."""

import dataclasses
import math

import numpy as np
import pytest
from scipy import integrate, stats

import projmech as pm
from oracles import cube_vertices, expected_max_of_gaussians, project_simplex
from projmech.analysis import bounds
from projmech.analysis.bounds import (
    MinimumSize,
    check_measure,
    gaussian_mechanism_error,
    min_n,
    noise_constant,
    ntz_projection_error,
    projection_error,
    projection_min_n,
)
from projmech.analysis.evaluation import evaluate, gaussian_expected_rmse
from projmech.analysis.geometry import gaussian_width_bound
from projmech.privacy import gaussian_sigma

# --- references computed here, independently of the library ----------------------------------


def expected_max_abs(k):
    """E max_i |g_i| = ∫_0^∞ P(max |g_i| > t) dt = ∫_0^∞ 1 - (2Φ(t) - 1)^k dt."""
    value, _ = integrate.quad(lambda t: 1 - (2 * stats.norm.cdf(t) - 1) ** k, 0, np.inf, epsabs=1e-12)
    return value


def project_cube(X):
    return np.clip(X, 0.0, 1.0)


def project_segment(X):
    """Onto [0, e_1]: clip the first coordinate, zero the others."""
    P = np.zeros_like(X)
    P[:, 0] = np.clip(X[:, 0], 0.0, 1.0)
    return P


# body: (vertices as columns of F, projection, l*(K), w_±(K) = E max_j |<c_j, G>| or None)
BODIES = {
    "segment": (lambda k: np.column_stack([np.zeros(k), np.eye(k)[0]]), project_segment,
                lambda k: 1 / math.sqrt(2 * math.pi), lambda k: math.sqrt(2 / math.pi)),
    "cube": (cube_vertices, project_cube, lambda k: k / math.sqrt(2 * math.pi), None),
    "simplex": (np.eye, project_simplex, expected_max_of_gaussians, expected_max_abs),
}


def test_simplex_projection_reference_is_right():
    # p is the projection iff p is in the simplex and <x - p, v - p> <= 0 at every vertex v
    rng = np.random.default_rng(0)
    X = rng.normal(0.2, 1.0, (500, 6))
    P = project_simplex(X)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1)
    residual = X - P
    assert np.all(residual - (residual * P).sum(axis=1, keepdims=True) <= 1e-12)  # <x-p, e_i - p>
    inside = rng.dirichlet(np.ones(6), 20)
    np.testing.assert_allclose(project_simplex(inside), inside, atol=1e-15)


def test_references_against_brute_force():
    rng = np.random.default_rng(1)
    G = rng.standard_normal((200_000, 5))
    for value, reference in ((G.max(axis=1), expected_max_of_gaussians(5)),
                             (np.abs(G).max(axis=1), expected_max_abs(5))):
        assert abs(value.mean() - reference) < 4 * value.std() / math.sqrt(value.size)


# --- the noise: sigma(n) = sigma_times_n / n --------------------------------------------------

@pytest.mark.parametrize("privacy", [pm.ZCDP(0.5), pm.ApproxDP(1.0, 1e-6), pm.ApproxDP(0.2, 1e-9),
                                     pm.ApproxDP(8.0, 1e-3)])
def test_sigma_is_proportional_to_the_sensitivity(privacy):
    reference = gaussian_sigma(1.0, privacy)
    for factor in (1e-4, 0.37, 2.0, 3e5):
        assert gaussian_sigma(factor, privacy) == pytest.approx(factor * reference, rel=1e-13)


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
@pytest.mark.parametrize("privacy,calibration", [(pm.ZCDP(0.3), "analytic"), (pm.ApproxDP(1.0, 1e-5), "analytic"),
                                                 (pm.ApproxDP(0.5, 1e-5), "classical")])
def test_noise_constant_matches_the_mechanism(privacy, calibration, neighbouring):
    workload = pm.marginals(pm.Domain(["a", "b", "c"], [2, 3, 2]), 2)
    size = {"size": 1000} if neighbouring == "add-remove" else {}
    mechanism = pm.GaussianMechanism(workload, privacy, neighbouring=neighbouring, calibration=calibration, **size)
    # Marginal counts are integers: discrete noise, except under the classical (continuous) bound.
    constant = noise_constant(privacy, workload.sensitivity(), neighbouring=neighbouring, calibration=calibration,
                              nonnegative=True, discrete=calibration == "analytic")
    for n in (1, 7, 1000, 10**7):
        assert mechanism.noise_scale(n) * n == pytest.approx(constant, rel=1e-13)
        assert gaussian_mechanism_error(constant / n, workload.num_queries, measure="mean") == pytest.approx(
            mechanism.expected_error(n, measure="mean"), rel=1e-13)


# --- the Gaussian mechanism -------------------------------------------------------------------

def test_gaussian_mechanism_error_against_simulation():
    k, sigma = 20, 0.3
    Z = np.random.default_rng(2).normal(0, sigma, (50_000, k))
    squared = (Z**2).mean(axis=1)  # (1/k) ||Z||²
    root = np.sqrt(squared)  # (1/√k) ||Z||
    assert gaussian_mechanism_error(sigma, k) == sigma  # "rms": sqrt(E (1/k)||Z||²)
    assert abs(squared.mean() - sigma**2) < 4 * squared.std() / math.sqrt(squared.size)
    mean = gaussian_mechanism_error(sigma, k, measure="mean")
    assert mean == pytest.approx(sigma * pm.geometry.gaussian_norm_mean(k) / math.sqrt(k))
    assert abs(root.mean() - mean) < 4 * root.std() / math.sqrt(root.size)
    assert mean < sigma  # Jensen


@pytest.mark.parametrize("measure", ["rms", "mean"])
def test_min_n_of_the_gaussian_mechanism(measure):
    k, constant = 30, 12.5
    for alpha in (1e-4, 0.013, 0.5, 3.0, 12.5, 100.0):
        n = min_n(gaussian_mechanism_error, alpha, sigma_times_n=constant, k=k, measure=measure)
        assert gaussian_mechanism_error(constant / n, k, measure=measure) <= alpha
        assert n == 1 or gaussian_mechanism_error(constant / (n - 1), k, measure=measure) > alpha
    per_sigma = 1.0 if measure == "rms" else pm.geometry.gaussian_norm_mean(k) / math.sqrt(k)
    assert min_n(gaussian_mechanism_error, 0.013, sigma_times_n=constant, k=k, measure=measure) == math.ceil(
        constant * per_sigma / 0.013)


# --- the projection mechanism: simulations with exact projections -----------------------------

@pytest.mark.parametrize("body,sigma,start", [("segment", 0.5, "vertex"), ("segment", 3.0, "inside"),
                                              ("cube", 0.4, "vertex"), ("cube", 2.0, "inside"),
                                              ("simplex", 0.3, "vertex"), ("simplex", 1.5, "inside")])
def test_projection_bounds_hold_in_simulation(body, sigma, start):
    vertices, project, gaussian_width, symmetric_width = BODIES[body]
    k, trials = 5, 20_000
    F = vertices(k)
    rng = np.random.default_rng(3)
    y = F[:, -1] if start == "vertex" else F @ rng.dirichlet(np.ones(F.shape[1]))
    Z = sigma * rng.standard_normal((trials, k))
    error = project(y + Z) - y
    squared = (error**2).sum(axis=1)
    # the proofs' pathwise inequalities (docs/theory/bounds.md): the obtuse angle at Ŷ, and its symmetric form
    assert np.all(squared <= (error * Z).sum(axis=1) + 1e-12)
    assert np.all(squared <= 2 * np.abs(Z @ F).max(axis=1) + 1e-12)
    # E (1/k)||Ŷ - y||² below the bounds: the 99.9% upper confidence limit of the measured mean
    mean_squared = squared.mean() / k
    upper = mean_squared + 3.3 * squared.std(ddof=1) / k / math.sqrt(trials)
    projection_bound = projection_error(sigma, k, width=gaussian_width(k))
    assert upper < projection_bound**2
    assert projection_bound == pytest.approx(math.sqrt(sigma * gaussian_width(k) / k))
    radius = np.linalg.norm(F, axis=0).max()
    assert projection_error(sigma, k, universe_size=F.shape[1], radius=radius) >= projection_bound
    if symmetric_width is not None:
        symmetric_bound = ntz_projection_error(sigma, k, width=symmetric_width(k))
        assert upper < symmetric_bound**2
        assert symmetric_bound >= math.sqrt(2) * projection_bound  # w_± >= l*, and the factor 2
    # projection never increases the error (non-expansive toward the truth)
    assert np.all(squared <= (Z**2).sum(axis=1) + 1e-12)


def test_projection_bound_is_nearly_tight_for_the_segment():
    # at the vertex 0 of [0, e_1] with small sigma, E||Ŷ - y||² = sigma² E[(g⁺)²] = sigma²/2
    # (up to clipping at 1) against sigma l* = sigma/√(2π): the ratio is sigma √(π/2), so the
    # bound's first power of sigma is the right order for sigma near 1
    sigma, k = 0.8, 3
    Z = sigma * np.random.default_rng(4).standard_normal((40_000, k))
    squared = (project_segment(Z) ** 2).sum(axis=1) / k
    assert 0.5 * projection_error(sigma, k, width=1 / math.sqrt(2 * math.pi)) ** 2 < squared.mean()


def test_projection_mechanism_meets_projection_bound():
    # end to end: the library's projection onto K_Q of a random workload, sigma from its calibration
    rng = np.random.default_rng(5)
    F = rng.uniform(0, 1, (4, 6))
    width_draws = (rng.standard_normal((200_000, 4)) @ F).max(axis=1)  # l*(K_Q) by brute force
    width = width_draws.mean() + 4 * width_draws.std() / math.sqrt(width_draws.size)
    mechanism = pm.ProjectionMechanism(pm.Workload(F), pm.ZCDP(0.5), body="hull")
    n = 5
    summary = evaluate(mechanism, rng.multinomial(n, rng.dirichlet(np.ones(6))) / n, 200, rng, n=n)
    squared = summary.rmse_values**2  # (1/k) ||Ŷ - y||² per release
    upper = squared.mean() + 3.3 * squared.std(ddof=1) / math.sqrt(squared.size)
    assert upper < projection_error(mechanism.noise_scale(n), 4, width=width) ** 2
    assert summary.rmse_high < projection_error(mechanism.noise_scale(n), 4, width=width)  # mean RMSE, via Jensen


@pytest.mark.solver
@pytest.mark.slow
def test_projection_bounds_hold_for_a_random_polytope_cvxpy():
    # a generic K_Q (random columns in [0, 1]^3), projected by CVXPY over the weights of the columns
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(6)
    k, m, sigma, trials = 3, 5, 0.4, 400
    F = rng.uniform(0, 1, (k, m))
    G = rng.standard_normal((400_000, k))
    width = (G @ F).max(axis=1).mean() + 0.01
    symmetric = np.abs(G @ F).max(axis=1).mean() + 0.01
    y = F @ rng.dirichlet(np.ones(m))
    weights, target = cp.Variable(m, nonneg=True), cp.Parameter(k)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(F @ weights - target)), [cp.sum(weights) == 1])
    squared = []
    for z in sigma * rng.standard_normal((trials, k)):
        target.value = y + z
        problem.solve(solver="CLARABEL")
        squared.append(np.sum((F @ weights.value - y) ** 2) / k)
    squared = np.array(squared)
    upper = squared.mean() + 3.3 * squared.std(ddof=1) / math.sqrt(trials)
    assert upper < projection_error(sigma, k, width=width) ** 2 < ntz_projection_error(sigma, k, width=symmetric) ** 2


# --- worst-case versions: closed forms -------------------------------------------------------

def test_projection_bound_worst_case():
    # l*(K_Q) <= √(2 k ln |X|) for queries in [0, 1]: E (1/k)||·||² <= sigma √(2 ln|X| / k)
    sigma, k, universe = 0.7, 12, 4096
    assert projection_error(sigma, k, universe_size=universe) ** 2 == pytest.approx(
        sigma * math.sqrt(2 * math.log(universe) / k))
    assert projection_error(sigma, k, universe_size=universe, radius=2.0) ** 2 == pytest.approx(
        sigma * 2.0 * math.sqrt(2 * math.log(universe)) / k)
    # with R = ||F||_{1->2} it is gaussian_width_bound of the workload
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(5)], [2] * 5), 2)
    k, m = workload.shape
    assert projection_error(sigma, k, universe_size=m, radius=workload.sensitivity()) == pytest.approx(
        projection_error(sigma, k, width=gaussian_width_bound(workload)))
    # in zCDP units: sigma_times_n = √(k/ρ) gives n >= √(2 ln|X|) / (α² √ρ)
    rho, alpha = 0.1, 0.05
    n = min_n(projection_error, alpha, sigma_times_n=math.sqrt(k / rho), k=k, universe_size=universe)
    assert n == math.ceil(math.sqrt(2 * math.log(universe)) / (alpha**2 * math.sqrt(rho)))
    # a single point (|X| = 1) has width 0: no error, any n
    assert projection_error(sigma, k, universe_size=1) == 0.0
    assert min_n(projection_error, 1e-9, sigma_times_n=100.0, k=k, universe_size=1) == 1


def test_symmetric_bound_worst_case_matches_the_stated_rate():
    # entries in [-1, 1], R = √k, sigma = c (2/n) √k: bound² = 4√2 c √(ln 2m) / n
    c, k, m, n = 3.0, 40, 2**20, 5000
    sigma = c * 2 * math.sqrt(k) / n
    bound = ntz_projection_error(sigma, k, universe_size=m)
    assert bound**2 == pytest.approx(4 * math.sqrt(2) * c * math.sqrt(math.log(2 * m)) / n)
    # the 2m points ±c_j of norm R bound w_± by R √(2 ln 2m)
    assert bound == pytest.approx(ntz_projection_error(sigma, k, width=math.sqrt(k) * math.sqrt(2 * math.log(2 * m))))
    # the same instance is at least √2 times projection_error's
    assert bound > math.sqrt(2) * projection_error(sigma, k, universe_size=m)
    # independent of k: the rate O((c log^{1/2} m / n)^{1/2})
    assert ntz_projection_error(c * 2 * math.sqrt(7) / n, 7, universe_size=m) == pytest.approx(bound)
    # n for a target: 2 sigma_times_n √k √(2 ln 2m) / (k α²)
    alpha = 0.1
    assert min_n(ntz_projection_error, alpha, sigma_times_n=c * 2 * math.sqrt(k), k=k, universe_size=m) == math.ceil(
        4 * math.sqrt(2) * c * math.sqrt(math.log(2 * m)) / alpha**2)


# --- inverses and monotonicity -----------------------------------------------------------------

# (bound, its options): min_n(bound, alpha, sigma_times_n=c, k=k, **options) inverts bound(c / n, k, **options)
INVERSES = [
    (projection_error, {"width": 3.7}),
    (projection_error, {"universe_size": 1000}),
    (ntz_projection_error, {"width": 5.1}),
    (ntz_projection_error, {"universe_size": 1000, "radius": 2.5}),
    (gaussian_mechanism_error, {"measure": "mean"}),
]


def forward_and_inverse(index):
    bound, options = INVERSES[index]
    return (lambda s, k: bound(s, k, **options),
            lambda a, c, k: min_n(bound, a, sigma_times_n=c, k=k, **options))


@pytest.mark.parametrize("index", range(len(INVERSES)))
def test_inverse_round_trip(index):
    forward, inverse = forward_and_inverse(index)
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(1, 500))
        constant = float(10 ** rng.uniform(-2, 3))
        alpha = float(10 ** rng.uniform(-3, 1))
        n = inverse(alpha, constant, k)
        assert isinstance(n, int) and n >= 1
        assert forward(constant / n, k) <= alpha
        assert n == 1 or forward(constant / (n - 1), k) > alpha
    # the target attained exactly at an integer n: that n (not n + 1)
    k, constant = 9, 2.0
    alpha = forward(constant / 64, k)
    assert inverse(alpha, constant, k) == 64


@pytest.mark.parametrize("index", range(len(INVERSES)))
def test_bounds_decrease_in_n_and_n_decreases_in_alpha(index):
    forward, inverse = forward_and_inverse(index)
    k, constant = 16, 7.5
    values = [forward(constant / n, k) for n in range(1, 2000)]
    assert np.all(np.diff(values) < 0)
    sizes = [inverse(alpha, constant, k) for alpha in np.geomspace(1e-3, 10, 60)]
    assert np.all(np.diff(sizes) <= 0)


def test_inverse_of_a_tiny_alpha():
    with pytest.raises(ValueError, match="alpha.*overflows"):
        min_n(projection_error, 1e-300, sigma_times_n=10.0, k=5, width=2.0)
    assert min_n(projection_error, 1e-6, sigma_times_n=0.0, k=5, width=2.0) == 1  # no noise
    assert min_n(projection_error, 1e-6, sigma_times_n=10.0, k=5, width=0.0) == 1  # a single point
    huge = min_n(projection_error, 1e-7, sigma_times_n=10.0, k=5, width=2.0)  # 4e14 < 2^53: n - 1 still distinct
    assert projection_error(10.0 / huge, 5, width=2.0) <= 1e-7 < projection_error(10.0 / (huge - 1), 5, width=2.0)


# --- projection_min_n: the smaller n of the two valid bounds ------------------------------------

def closed_form_sizes(alpha, constant, k, width):
    """n for sqrt(sigma l* / k) <= alpha and for sigma <= alpha, sigma = constant / n, in closed form."""
    return math.ceil(constant * width / (k * alpha**2)), math.ceil(constant / alpha)


@pytest.mark.parametrize("alpha,winner", [(0.013, "gaussian"), (0.05, "gaussian"), (0.13, "projection"),
                                          (0.3, "projection")])
def test_projection_min_n_is_the_smaller_of_the_two_bounds(alpha, winner):
    # the bounds cross at alpha = l*/k = 16.5/180 ≈ 0.092: below it the Gaussian bound needs less data
    constant, k, width = 10.0, 180, 16.5
    projection, gaussian = closed_form_sizes(alpha, constant, k, width)
    size = projection_min_n(alpha, sigma_times_n=constant, k=k, width=width)
    assert size == MinimumSize(n=min(projection, gaussian), bound=winner)
    assert isinstance(size.n, int)
    assert (projection < gaussian) == (winner == "projection")
    # never more than either bound alone asks for
    assert size.n <= min_n(projection_error, alpha, sigma_times_n=constant, k=k, width=width)
    assert size.n <= min_n(gaussian_mechanism_error, alpha, sigma_times_n=constant, k=k)


def test_projection_min_n_on_random_instances():
    rng = np.random.default_rng(8)
    winners = set()
    for _ in range(300):
        k = int(rng.integers(1, 500))
        constant = float(10 ** rng.uniform(-2, 3))
        width = float(rng.uniform(0, 1) * math.sqrt(2 * k * math.log(1000)))
        alpha = float(10 ** rng.uniform(-3, 0))
        projection, gaussian = closed_form_sizes(alpha, constant, k, width)
        if abs(constant * width / (k * alpha**2) - round(constant * width / (k * alpha**2))) < 1e-6 or \
                abs(constant / alpha - round(constant / alpha)) < 1e-6:
            continue  # at an exact integer the closed form's ceil is at the mercy of rounding
        size = projection_min_n(alpha, sigma_times_n=constant, k=k, width=width)
        assert size.n == min(projection, gaussian)
        assert size.bound == ("projection" if projection < gaussian else "gaussian")
        winners.add(size.bound)
    assert winners == {"projection", "gaussian"}


def test_projection_min_n_worst_case_and_mean():
    constant, k, m, radius = 10.0, 180, 1024, math.sqrt(45)  # 2-way marginals of 10 binary attributes
    worst = radius * math.sqrt(2 * math.log(m))
    for alpha in (0.05, 0.2):
        projection, gaussian = closed_form_sizes(alpha, constant, k, worst)
        assert projection_min_n(alpha, sigma_times_n=constant, k=k, universe_size=m, radius=radius).n == min(
            projection, gaussian)
    # "mean": the Gaussian mechanism's E (1/√k)||Z|| = sigma c_k / √k, a little below sigma
    alpha = 0.05
    mean_gaussian = math.ceil(constant * pm.geometry.gaussian_norm_mean(k) / (math.sqrt(k) * alpha))
    assert projection_min_n(alpha, sigma_times_n=constant, k=k, width=16.5, measure="mean") == MinimumSize(
        mean_gaussian, "gaussian")
    assert mean_gaussian <= projection_min_n(alpha, sigma_times_n=constant, k=k, width=16.5).n
    # no noise, or a body that is a single point: any n
    assert projection_min_n(0.01, sigma_times_n=0.0, k=k, width=16.5).n == 1
    assert projection_min_n(0.01, sigma_times_n=constant, k=k, width=0.0) == MinimumSize(1, "projection")


def test_projection_min_n_holds_for_a_simulated_projection():
    # the chosen n is large enough for the projection mechanism: a cube, exact projection by clipping
    k, constant, alpha = 6, 2.0, 0.25
    width = k / math.sqrt(2 * math.pi)  # l*([0, 1]^k)
    for target in (alpha, 1.5):  # once each bound wins: l*/k = 0.40
        size = projection_min_n(target, sigma_times_n=constant, k=k, width=width)
        sigma = constant / size.n
        rng = np.random.default_rng(9)
        y = rng.uniform(0, 1, k)
        Z = sigma * rng.standard_normal((20_000, k))
        squared = ((project_cube(y + Z) - y) ** 2).mean(axis=1)
        assert math.sqrt(squared.mean() + 3.3 * squared.std(ddof=1) / math.sqrt(squared.size)) <= target
    assert {projection_min_n(t, sigma_times_n=constant, k=k, width=width).bound for t in (alpha, 1.5)} == {
        "gaussian", "projection"}


def test_projection_min_n_validation():
    valid = {"sigma_times_n": 20.0, "k": 10, "width": 2.0}
    for argument, value, error in BAD:
        if argument in ("alpha", "sigma_times_n", "k", "width"):
            arguments = {**valid, argument: value} if argument != "alpha" else valid
            alpha = value if argument == "alpha" else 0.1
            with pytest.raises(error, match=argument):
                projection_min_n(alpha, **arguments)
    with pytest.raises(TypeError, match="width"):
        projection_min_n(0.1, sigma_times_n=20.0, k=10)
    with pytest.raises(TypeError, match="sigma_times_n"):
        projection_min_n(0.1, sigma_times_n=None, k=10, width=2.0)
    with pytest.raises(ValueError, match="measure"):
        projection_min_n(0.1, sigma_times_n=20.0, k=10, width=2.0, measure="max")
    with pytest.raises(TypeError):
        projection_min_n(0.1, 20.0, 10, 2.0)  # keyword-only: sigma_times_n and k are easy to swap
    with pytest.raises(dataclasses.FrozenInstanceError):
        projection_min_n(0.1, sigma_times_n=20.0, k=10, width=2.0).n = 3


# --- input validation --------------------------------------------------------------------------

# name: (bound, its options); each is checked as a bound and through min_n
BOUNDS = {
    "gaussian_mechanism_error": (gaussian_mechanism_error, ()),
    "projection_error": (projection_error, ("width",)),
    "projection_error, worst case": (projection_error, ("universe_size", "radius")),
    "ntz_projection_error": (ntz_projection_error, ("width",)),
    "ntz_projection_error, worst case": (ntz_projection_error, ("universe_size", "radius")),
}
VALID = {"sigma": 0.5, "k": 10, "width": 2.0, "universe_size": 64, "radius": 1.5, "alpha": 0.1, "sigma_times_n": 20.0}
# (argument, bad value, exception): every function that takes the argument must raise, naming it
BAD = [
    ("sigma", -0.1, ValueError), ("sigma", math.nan, ValueError), ("sigma", math.inf, ValueError),
    ("sigma", "0.5", TypeError), ("sigma", None, TypeError),
    ("k", 0, ValueError), ("k", 2.5, TypeError), ("k", True, TypeError),
    ("width", -1.0, ValueError), ("width", math.nan, ValueError), ("width", math.inf, ValueError),
    ("universe_size", 0, ValueError), ("universe_size", 64.0, TypeError),
    ("radius", -1.0, ValueError), ("radius", math.nan, ValueError),
    ("alpha", 0.0, ValueError), ("alpha", -0.1, ValueError), ("alpha", math.inf, ValueError), ("alpha", "a", TypeError),
    ("sigma_times_n", -1.0, ValueError), ("sigma_times_n", math.nan, ValueError),
]


@pytest.mark.parametrize("inverse", [False, True], ids=["bound", "min_n"])
@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_input_validation(name, inverse):
    bound, options = BOUNDS[name]
    arguments = {"k", *options} | ({"alpha", "sigma_times_n"} if inverse else {"sigma"})

    def function(**kw):
        chosen = {option: kw[option] for option in options}
        if inverse:
            return min_n(bound, kw["alpha"], sigma_times_n=kw["sigma_times_n"], k=kw["k"], **chosen)
        return bound(kw["sigma"], kw["k"], **chosen)

    assert function(**VALID) > 0
    for argument, value, error in BAD:
        if argument in arguments:
            with pytest.raises(error, match=argument):
                function(**{**VALID, argument: value})


@pytest.mark.parametrize("bound", [projection_error, ntz_projection_error])
def test_a_width_or_a_universe(bound):
    with pytest.raises(TypeError, match="width"):  # neither
        bound(0.5, 10)
    with pytest.raises(TypeError, match="width"):  # both
        bound(0.5, 10, width=2.0, universe_size=64)
    with pytest.raises(TypeError, match="radius"):  # a radius belongs to the worst case
        bound(0.5, 10, width=2.0, radius=1.5)
    with pytest.raises(TypeError):  # options are keyword-only
        bound(0.5, 10, 2.0)


def test_min_n_of_a_bound_stated_in_n():
    # without sigma_times_n the bound is a function of n itself: closed forms
    assert min_n(lambda n: 1 / n, 0.01) == 100
    assert min_n(lambda n: 3.0 / n, 0.7) == 5  # 3/5 <= 0.7 < 3/4
    assert min_n(lambda n, c: c / math.sqrt(n), 0.1, c=2.0) == 400  # options are passed by name
    assert min_n(lambda n: 0.5, 1.0) == 1
    with pytest.raises(ValueError, match="alpha.*overflows"):
        min_n(lambda n: 1.0, 0.5)  # never met
    with pytest.raises(TypeError, match="error"):
        min_n(0.5, 1.0)


def test_validation_of_the_rest():
    with pytest.raises(ValueError, match="measure"):
        gaussian_mechanism_error(0.5, 10, measure="max")
    with pytest.raises(ValueError, match="measure"):
        min_n(gaussian_mechanism_error, 0.1, sigma_times_n=5.0, k=10, measure="RMS")
    with pytest.raises(ValueError, match="column_norm"):
        noise_constant(pm.ZCDP(1.0), 0.0)
    with pytest.raises(TypeError, match="privacy"):
        noise_constant(pm.PureDP(1.0), 1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        noise_constant(pm.ZCDP(1.0), 1.0, neighbouring="swap")
    with pytest.raises(ValueError, match="method"):
        noise_constant(pm.ZCDP(1.0), 1.0, calibration="exact")
    # zero noise and zero widths are allowed: the bound is 0
    assert projection_error(0.0, 3, width=1.0) == 0.0 and ntz_projection_error(1.0, 3, width=0) == 0.0
    assert gaussian_mechanism_error(np.float32(0.5), np.int64(3)) == 0.5
    assert set(bounds.__all__) >= {"noise_constant", "projection_error", "ntz_projection_error", "min_n",
                                   "projection_min_n", "MinimumSize"}


def test_documented_examples():
    with pytest.raises(ValueError, match=r"measure: expected one of \('rms', 'mean'\), got 'max'"):
        check_measure("max")
    assert round(noise_constant(pm.ApproxDP(1.0, 1e-6), 1.0), 3) == 8.449
    assert min_n(projection_error, 0.05, sigma_times_n=10.0, k=180, width=16.5) == 367
    assert ntz_projection_error(0.7, 12, universe_size=4096) > projection_error(0.7, 12, universe_size=4096)
    assert projection_min_n(0.2, sigma_times_n=10.0, k=180, width=16.5).n == 23
    assert round(gaussian_expected_rmse(1.0, 100), 4) == 0.9975
    assert noise_constant(pm.ZCDP(0.5), 1.0, neighbouring="add-remove") == 1.0
    assert gaussian_mechanism_error(0.02, 180) == 0.02
    assert round(projection_error(0.7, 12, universe_size=4096), 6) == 0.907847
    assert min_n(lambda n: 1 / n, 0.01) == 100
    assert projection_min_n(0.2, sigma_times_n=10.0, k=180, universe_size=1024,
                            radius=45 ** 0.5) == MinimumSize(35, "projection")
