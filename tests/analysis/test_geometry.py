"""Support functions and Gaussian widths, against brute force and closed forms."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate

import projmech as pm
from oracles import cube_vertices, expected_max_of_gaussians, point_room, relaxation_reference
from projmech.analysis.geometry import (
    compare_widths,
    finite_set_width_bound,
    gaussian_norm_mean,
    gaussian_width,
    gaussian_width_bound,
    gaussian_width_from_mean,
    mean_width,
    mean_width_from_gaussian,
    support_function,
)
from projmech.bodies import RELAXATIONS, MomentEncoding, RelaxationError, relaxation_support


def brute_force_support(F, g):
    """max over the columns of F of <g, column>, one column at a time."""
    return max(sum(g[i] * F[i, u] for i in range(F.shape[0])) for u in range(F.shape[1]))


def binary_domain(d):
    return pm.Domain([f"x{i}" for i in range(d)], [2] * d)


# --- the support function of K_Q -------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_support_function_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    F = rng.uniform(-1, 1, (4, 9)) * (rng.random((4, 9)) < 0.7)
    G = rng.standard_normal((6, 4))
    expected = np.array([brute_force_support(F, g) for g in G])
    np.testing.assert_allclose(support_function(F, G), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(support_function(sp.csr_array(F), G), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(support_function(pm.Workload(F), G), expected, rtol=0, atol=1e-12)
    # column blocks of one column (block_entries below the number of directions) and of two
    np.testing.assert_allclose(support_function(F, G, block_entries=1), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(support_function(sp.csr_array(F), G, block_entries=12), expected, rtol=0,
                               atol=1e-12)
    assert support_function(F, G[2]) == pytest.approx(expected[2], abs=1e-12)


def test_support_function_of_marginals_matches_brute_force():
    workload = pm.marginals(binary_domain(4), 2)
    F = workload.toarray()
    G = np.random.default_rng(1).standard_normal((5, workload.num_queries))
    np.testing.assert_allclose(support_function(workload, G), [brute_force_support(F, g) for g in G], atol=1e-12)


def test_support_function_bad_inputs():
    F = np.eye(3)
    with pytest.raises(ValueError, match="directions: expected shape"):
        support_function(F, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="directions: expected shape"):
        support_function(F, np.zeros((0, 3)))
    with pytest.raises(ValueError, match="directions: contains NaN"):
        support_function(F, np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="workload_or_matrix: contains NaN"):
        support_function(np.array([[1.0, np.nan]]), np.ones(1))
    with pytest.raises(ValueError, match="implicit"):
        support_function(pm.prefix(8, implicit=True), np.ones(8))
    with pytest.raises(ValueError, match="block_entries"):
        support_function(F, np.ones(3), block_entries=0)


# --- Gaussian widths against closed forms ----------------------------------------------------

def test_width_of_the_cube():
    # h(g) = sum_i max(g_i, 0), so l*([0,1]^k) = k E[g^+] = k / sqrt(2 pi)
    k = 5
    vertices = cube_vertices(k)
    estimate = gaussian_width(lambda G: support_function(vertices, G), k, 20_000, np.random.default_rng(0),
                              confidence=0.99)
    exact = k / math.sqrt(2 * math.pi)
    assert estimate.low <= exact <= estimate.high
    assert estimate.half_width < 0.02 * exact  # precise enough to notice a wrong closed form
    assert estimate.samples == 20_000 and estimate.confidence == 0.99


def test_width_of_a_segment():
    # [-a, a] u = conv{-a u, a u}: h(g) = a |<g, u>|, <g, u> ~ N(0, |u|^2), E|N(0, s^2)| = s sqrt(2/pi)
    a, u = 1.5, np.array([0.3, -2.0, 1.0, 0.5])
    segment = np.column_stack([-a * u, a * u])
    estimate = gaussian_width(lambda G: support_function(segment, G), 4, 20_000, np.random.default_rng(1),
                              confidence=0.99)
    exact = a * np.linalg.norm(u) * math.sqrt(2 / math.pi)
    assert estimate.low <= exact <= estimate.high
    assert estimate.half_width < 0.03 * exact


def test_width_of_the_simplex():
    k = 8
    estimate = gaussian_width(lambda G: support_function(np.eye(k), G), k, 20_000, np.random.default_rng(2),
                              confidence=0.99)
    exact = expected_max_of_gaussians(k)
    assert exact == pytest.approx(1.4236003, abs=1e-6)  # tabulated E max of 8 standard normals
    assert estimate.low <= exact <= estimate.high
    assert estimate.half_width < 0.02 * exact


def test_width_interval_covers_at_its_level():
    # 400 independent 95% intervals for l*([0,1]^3): the count that cover is Binomial(400, 0.95)
    k, exact = 3, 3 / math.sqrt(2 * math.pi)
    vertices = cube_vertices(k)
    rng = np.random.default_rng(3)
    covered = sum(
        est.low <= exact <= est.high
        for est in (gaussian_width(lambda G: support_function(vertices, G), k, 100, rng) for _ in range(400))
    )
    assert 365 <= covered <= 395  # about 0.95 * 400 = 380 ± 3.5 sd


def test_paired_comparison_of_a_segment_and_the_cube():
    k = 4
    vertices, segment = cube_vertices(k), np.column_stack([-np.eye(k)[0], np.eye(k)[0]])
    widths = gaussian_width({"segment": lambda G: support_function(segment, G),
                              "cube": lambda G: support_function(vertices, G)}, k, 20_000, np.random.default_rng(4),
                             confidence=0.99)
    seg, cube = widths["segment"], widths["cube"]
    exact_segment, exact_cube = math.sqrt(2 / math.pi), k / math.sqrt(2 * math.pi)
    comparison = compare_widths(seg, cube)
    assert comparison.ratio_low <= exact_segment / exact_cube <= comparison.ratio_high  # = 2 / k
    assert comparison.difference_low <= exact_segment - exact_cube <= comparison.difference_high
    # corr(|g_1|, sum_i g_i^+) = (1/2 - 1/pi) / sqrt((1 - 2/pi) k (1/2 - 1/(2 pi))) = 0.258 for k = 4;
    # the sample correlation's standard error is about (1 - rho^2) / sqrt(n) = 0.007
    exact_correlation = (1 / 2 - 1 / math.pi) / math.sqrt((1 - 2 / math.pi) * k * (1 / 2 - 1 / (2 * math.pi)))
    assert comparison.correlation == pytest.approx(exact_correlation, abs=0.025)
    # pairing removes the shared variance: tighter than two independent intervals combined
    assert comparison.difference_standard_error < math.hypot(seg.standard_error, cube.standard_error)
    assert comparison.confidence == 0.99 and comparison.samples == 20_000


def test_ratio_interval_covers_at_its_level():
    # delta-method interval for l*(simplex) / l*(cube) over 300 independent pairs of estimates
    k = 4
    exact = expected_max_of_gaussians(k) / (k / math.sqrt(2 * math.pi))
    vertices = cube_vertices(k)
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(300):
        widths = gaussian_width({"simplex": lambda G: support_function(np.eye(k), G),
                                  "cube": lambda G: support_function(vertices, G)}, k, 200, rng)
        comparison = compare_widths(widths["simplex"], widths["cube"])
        covered += comparison.ratio_low <= exact <= comparison.ratio_high
    assert 272 <= covered <= 297  # Binomial(300, 0.95): 285 ± 3.4 sd


def test_gaussian_width_bound_is_the_finite_set_bound_of_the_columns():
    # the finite-set bound (docs/theory/geometry.md): l*(K_Q) <= sqrt(2 ln m) max column norm <= sqrt(2 k ln m)
    k = 5
    vertices = cube_vertices(k)
    assert gaussian_width_bound(vertices) == pytest.approx(math.sqrt(2 * math.log(2**k)) * math.sqrt(k))
    assert gaussian_width_bound(vertices) > k / math.sqrt(2 * math.pi)
    d = 6
    workload = pm.marginals(binary_domain(d), 2)  # each column has C(d, 2) ones: norm sqrt(k / 4)
    expected = math.sqrt(2 * d * math.log(2)) * math.sqrt(math.comb(d, 2))
    assert gaussian_width_bound(workload) == pytest.approx(expected)
    assert gaussian_width_bound(workload.matrix) == pytest.approx(expected)
    assert gaussian_width_bound(workload) == pytest.approx(math.sqrt(2 * workload.num_queries * d * math.log(2)) / 2)


def test_width_bad_inputs():
    support = lambda G: np.abs(G).sum(axis=1)  # noqa: E731
    rng = np.random.default_rng(0)
    for samples in (0, -3):
        with pytest.raises(ValueError, match="samples"):
            gaussian_width(support, 3, samples, rng)
    with pytest.raises(ValueError, match="^samples: must be at least 2 \\(a confidence interval\\)"):
        gaussian_width(support, 3, 1, rng)
    with pytest.raises(TypeError, match="samples"):
        gaussian_width(support, 3, 2.5, rng)
    with pytest.raises(ValueError, match="dimension"):
        gaussian_width(support, 0, 10, rng)
    with pytest.raises(TypeError, match="rng"):
        gaussian_width(support, 3, 10, None)
    with pytest.raises(TypeError, match="rng"):
        gaussian_width(support, 3, 10, np.random.RandomState(0))
    with pytest.raises(ValueError, match="confidence"):
        gaussian_width(support, 3, 10, rng, confidence=1.5)
    with pytest.raises(TypeError, match="bodies"):
        gaussian_width("cube", 3, 10, rng)
    with pytest.raises(ValueError, match=r"K_Q lives in R\^4.*dimension is 3"):
        gaussian_width(np.ones((4, 2)), 3, 10, rng)  # a matrix stands for K_Q: one row per coordinate
    with pytest.raises(ValueError, match="implicit"):
        gaussian_width(pm.prefix(3, implicit=True), 3, 10, rng)
    with pytest.raises(ValueError, match="returned shape"):
        gaussian_width(lambda G: G, 3, 10, rng)
    with pytest.raises(ValueError, match="NaN"):
        gaussian_width(lambda G: np.full(len(G), np.nan), 3, 10, rng)
    with pytest.raises(ValueError, match="bodies"):
        gaussian_width({}, 3, 10, rng)


def test_compare_widths_needs_the_same_draws():
    support = lambda G: np.abs(G).sum(axis=1)  # noqa: E731
    first = gaussian_width(support, 3, 50, np.random.default_rng(0))
    second = gaussian_width(support, 3, 50, np.random.default_rng(1))
    with pytest.raises(ValueError, match="same Gaussian directions"):
        compare_widths(first, second)
    with pytest.raises(TypeError, match="numerator"):
        compare_widths(1.0, second)
    zero = gaussian_width({"a": support, "zero": lambda G: np.zeros(len(G))}, 3, 50, np.random.default_rng(0))
    with pytest.raises(ValueError, match="denominator"):
        compare_widths(zero["a"], zero["zero"])
    same = compare_widths(first, first)
    assert same.ratio == 1.0 and same.difference == 0.0 and same.ratio_standard_error == 0.0


# --- c_k = E||G|| and mean widths ------------------------------------------------------------

def sphere_coordinate_abs_mean(k):
    """E|u_1| for u uniform on the sphere of R^k (k >= 2), from the density of u_1,
    proportional to (1 - t^2)^((k-3)/2) on [-1, 1]; by quadrature, no gamma functions."""
    beta = (k - 3) / 2
    # (1 - t^2)^beta = (1 + t)^beta (1 - t)^beta; the end-point singularity at t = 1 (k = 2) goes
    # into quad's algebraic weight (1 - t)^beta, handled exactly
    numerator, _ = integrate.quad(lambda t: t * (1 + t) ** beta, 0, 1, weight="alg", wvar=(0, beta))
    denominator, _ = integrate.quad(lambda t: (1 + t) ** beta, 0, 1, weight="alg", wvar=(0, beta))
    return numerator / denominator


def uniform_on_sphere(rng, samples, k):
    G = rng.standard_normal((samples, k))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def test_gaussian_norm_mean_closed_forms():
    assert gaussian_norm_mean(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-15)  # E|g|
    assert gaussian_norm_mean(2) == pytest.approx(math.sqrt(math.pi / 2), rel=1e-15)  # Rayleigh mean
    assert gaussian_norm_mean(3) == pytest.approx(2 * math.sqrt(2 / math.pi), rel=1e-15)  # Maxwell mean
    assert gaussian_norm_mean(np.int64(4)) == pytest.approx(3 * math.sqrt(math.pi / 2) / 2, rel=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 50, 299, 300, 301, 302, 10**3, 10**5, 10**7, 10**9])
def test_gaussian_norm_mean_identities(k):
    # Γ(z+1) = z Γ(z) gives c_k c_{k+1} = k exactly, across the switch to the series at k = 300;
    # Jensen (E||G|| <= √E||G||²) and Gautschi's inequality give k/√(k+1) <= c_k <= √k.
    c = gaussian_norm_mean(k)
    assert c * gaussian_norm_mean(k + 1) == pytest.approx(k, rel=4e-16 * 4)
    assert k / math.sqrt(k + 1) <= c <= math.sqrt(k)
    if k >= 50:  # c_k = √k (1 - 1/(4k) + 1/(32k²) + O(k^-3))
        assert c == pytest.approx(math.sqrt(k) * (1 - 1 / (4 * k)), rel=1 / (16 * k**2) + 1e-15)


@pytest.mark.parametrize("k", [1, 2, 7, 299, 301, 1000, 14924, 10**7, 10**9])
def test_gaussian_norm_mean_against_high_precision(k):
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        exact = mpmath.sqrt(2) * mpmath.gamma(mpmath.mpf(k + 1) / 2) / mpmath.gamma(mpmath.mpf(k) / 2)
        assert abs(float((gaussian_norm_mean(k) - exact) / exact)) < 2e-15


@pytest.mark.parametrize("k", [1, 5, 40])
def test_gaussian_norm_mean_against_monte_carlo(k):
    norms = np.linalg.norm(np.random.default_rng(k).standard_normal((100_000, k)), axis=1)
    mean, error = norms.mean(), norms.std(ddof=1) / math.sqrt(norms.size)
    assert abs(gaussian_norm_mean(k) - mean) < 4 * error
    assert error < 0.005 * mean


def test_gaussian_norm_mean_bad_inputs():
    for k in (0, -1):
        with pytest.raises(ValueError, match="k"):
            gaussian_norm_mean(k)
    for k in (2.0, True, "3"):
        with pytest.raises(TypeError, match="k"):
            gaussian_norm_mean(k)


def test_sphere_coordinate_reference_is_right():
    # the quadrature reference used below, against E|u_1| = c_k^{-1} E|g_1| (no shared code)
    for k in (2, 3, 10):
        assert sphere_coordinate_abs_mean(k) == pytest.approx(math.sqrt(2 / math.pi) / gaussian_norm_mean(k),
                                                              rel=1e-9)
    assert sphere_coordinate_abs_mean(3) == pytest.approx(0.5, rel=1e-12)  # u_1 uniform on [-1, 1]


# Closed forms for l*, h on a unit vector, and M* from the sphere density (independent of c_k):
# segment [0, e_1]: h(u) = u_1^+, M* = E|u_1| / 2; cube [0, 1]^k: h(u) = sum u_i^+, M* = k E|u_1| / 2;
# simplex conv(e_i): h(u) = max u_i, l* = E max g_i (quadrature) and M* = l* / c_k.
BODIES = {
    "segment": (lambda k: np.column_stack([np.zeros(k), np.eye(k)[0]]),
                lambda U: np.maximum(U[:, 0], 0), lambda k: 1 / math.sqrt(2 * math.pi),
                lambda k: sphere_coordinate_abs_mean(k) / 2),
    "cube": (cube_vertices, lambda U: np.maximum(U, 0).sum(axis=1), lambda k: k / math.sqrt(2 * math.pi),
             lambda k: k * sphere_coordinate_abs_mean(k) / 2),
    "simplex": (np.eye, lambda U: U.max(axis=1), expected_max_of_gaussians,
                lambda k: expected_max_of_gaussians(k) / gaussian_norm_mean(k)),
}


@pytest.mark.parametrize("body", sorted(BODIES))
def test_mean_width_closed_forms_and_direct_sphere_sampling(body):
    vertices, unit_support, gaussian_exact, mean_exact = BODIES[body]
    k = 6
    exact = mean_exact(k)
    # M* = l* / c_k: the relation between the two closed forms
    assert exact == pytest.approx(gaussian_exact(k) / gaussian_norm_mean(k), rel=1e-9)
    estimate = mean_width(vertices(k), k, 20_000, np.random.default_rng(10), confidence=0.99)
    assert estimate.kind == "mean" and estimate.summary()["width"] == "mean"
    assert estimate.low <= exact <= estimate.high
    assert estimate.half_width < 0.03 * exact
    # direct sampling here: h on uniform unit vectors by the closed-form support, other draws
    direct = unit_support(uniform_on_sphere(np.random.default_rng(11), 20_000, k))
    assert abs(direct.mean() - exact) < 4 * direct.std(ddof=1) / math.sqrt(direct.size)
    assert abs(direct.mean() - estimate.estimate) < 4 * math.hypot(direct.std(ddof=1) / math.sqrt(direct.size),
                                                                    estimate.standard_error)


def test_mean_width_interval_covers_at_its_level():
    k = 3
    exact = k * sphere_coordinate_abs_mean(k) / 2  # cube: 3/4
    assert exact == pytest.approx(0.75, rel=1e-12)
    rng = np.random.default_rng(12)
    estimates = (mean_width(cube_vertices(k), k, 100, rng) for _ in range(400))
    covered = sum(est.low <= exact <= est.high for est in estimates)
    assert 365 <= covered <= 395  # Binomial(400, 0.95): 380 ± 3.5 sd


def test_mean_and_gaussian_widths_share_the_draws():
    # same rng state: the same Gaussian g_i, u_i = g_i / ||g_i||, and h(g_i) = ||g_i|| h(u_i)
    k, samples = 5, 50
    F = np.random.default_rng(13).uniform(-1, 1, (k, 7))
    gaussian = gaussian_width(F, k, samples, np.random.default_rng(14))
    mean = mean_width(F, k, samples, np.random.default_rng(14))
    norms = np.linalg.norm(np.random.default_rng(14).standard_normal((samples, k)), axis=1)
    assert gaussian.draws == mean.draws and gaussian.kind == "gaussian"
    np.testing.assert_allclose(gaussian.values, norms * mean.values, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="gaussian width and a mean width"):
        compare_widths(gaussian, mean)
    # a matrix, a Workload and a callable describe the same K_Q
    by_callable = mean_width(lambda U: support_function(F, U), k, samples, np.random.default_rng(14))
    by_workload = mean_width({"F": pm.Workload(F)}, k, samples, np.random.default_rng(14))["F"]
    np.testing.assert_array_equal(by_callable.values, mean.values)
    np.testing.assert_array_equal(by_workload.values, mean.values)


def test_paired_mean_width():
    # M*(segment) / M*(cube) = 1 / k, like the Gaussian widths' ratio
    k = 4
    widths = mean_width({"segment": BODIES["segment"][0](k), "cube": cube_vertices(k)}, k, 20_000,
                         np.random.default_rng(15), confidence=0.99)
    comparison = compare_widths(widths["segment"], widths["cube"])
    assert comparison.ratio_low <= 1 / k <= comparison.ratio_high


def test_width_conversions():
    k = 6
    c = gaussian_norm_mean(k)
    assert gaussian_width_from_mean(2.0, k) == pytest.approx(2.0 * c)
    assert mean_width_from_gaussian(gaussian_width_from_mean(1.7, k), k) == pytest.approx(1.7, rel=1e-15)
    assert gaussian_width_from_mean(0, k) == 0.0
    # an estimate of M*(cube) converted to l*: interval scaled with it, covering k / √(2π)
    estimate = mean_width(cube_vertices(k), k, 20_000, np.random.default_rng(16), confidence=0.99)
    converted = gaussian_width_from_mean(estimate, k)
    assert converted.kind == "gaussian" and converted.draws == estimate.draws
    assert converted.low <= k / math.sqrt(2 * math.pi) <= converted.high
    assert converted.estimate == pytest.approx(c * estimate.estimate)
    assert converted.half_width == pytest.approx(c * estimate.half_width)
    np.testing.assert_allclose(converted.values, c * estimate.values)
    back = mean_width_from_gaussian(converted, k)
    assert back.kind == "mean" and back.estimate == pytest.approx(estimate.estimate, rel=1e-15)
    with pytest.raises(ValueError, match="mean_width: expected an estimate of the mean width"):
        gaussian_width_from_mean(converted, k)
    with pytest.raises(ValueError, match="gaussian_width: expected an estimate of the gaussian width"):
        mean_width_from_gaussian(estimate, k)
    with pytest.raises(TypeError, match="mean_width"):
        gaussian_width_from_mean("1.0", k)
    with pytest.raises(ValueError, match="^gaussian_width: must be a finite number"):
        mean_width_from_gaussian(math.inf, k)
    with pytest.raises(ValueError, match="k"):
        mean_width_from_gaussian(1.0, 0)


def test_mean_width_bad_inputs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^samples: must be at least 2 \\(a confidence interval\\)"):
        mean_width(np.eye(3), 3, 1, rng)
    with pytest.raises(TypeError, match="rng"):
        mean_width(np.eye(3), 3, 10, 0)
    with pytest.raises(ValueError, match="dimension is 4"):
        mean_width(np.eye(3), 4, 10, rng)
    with pytest.raises(TypeError, match=r"bodies\['a'\]"):
        mean_width({"a": 3.0}, 3, 10, rng)
    with pytest.raises(ValueError, match="bodies"):
        mean_width({}, 3, 10, rng)


def test_finite_set_width_bound():
    assert finite_set_width_bound(1, 5.0) == 0.0  # one point: l* = E <p, G> = 0
    assert finite_set_width_bound(8, 2.0) == pytest.approx(2.0 * math.sqrt(2 * math.log(8)))
    # it bounds the simplex: 8 points of norm 1
    assert finite_set_width_bound(8, 1.0) > expected_max_of_gaussians(8)
    with pytest.raises(ValueError, match="num_points"):
        finite_set_width_bound(0, 1.0)
    with pytest.raises(ValueError, match="radius"):
        finite_set_width_bound(3, -1.0)
    with pytest.raises(TypeError, match="radius"):
        finite_set_width_bound(3, None)


# --- the support function of the relaxation L ------------------------------------------------

@pytest.mark.solver
@pytest.mark.parametrize("d", [3, 4])
def test_relaxation_support_dominates_the_hull(d):
    # K_Q ⊆ L: h_L(g) >= h_{K_Q}(g), the latter by brute force over the 2^d columns
    domain = binary_domain(d)
    F = pm.marginals(domain, 2).toarray()
    G = np.random.default_rng(d).standard_normal((8, F.shape[0]))
    hull = np.array([brute_force_support(F, g) for g in G])
    supports = {r: relaxation_support(domain, G, relaxation=r) for r in RELAXATIONS}
    for relaxation, result in supports.items():
        assert np.all(result.values >= hull - 1e-6), relaxation
        assert np.all(result.upper_bounds >= hull - 1e-12), relaxation  # certified: no solver tolerance
        assert np.all(result.upper_bounds >= result.values - 1e-6)
        assert result.max_gap < 1e-4 and result.max_violation < 1e-6
    # sdp+local is the intersection of the other two: its support is below both
    assert np.all(supports["sdp+local"].values <= supports["sdp"].values + 1e-6)
    assert np.all(supports["sdp+local"].values <= supports["local"].values + 1e-6)


@pytest.mark.solver
def test_relaxation_support_equals_the_hull_for_two_attributes():
    # d = 2: the local polytope of the one pair is the set of 2x2 probability tables, i.e. K_Q
    domain = binary_domain(2)
    F = pm.marginals(domain, 2).toarray()
    G = np.random.default_rng(0).standard_normal((10, 4))
    hull = np.array([brute_force_support(F, g) for g in G])
    for relaxation in ("sdp+local", "local"):
        np.testing.assert_allclose(relaxation_support(domain, G, relaxation=relaxation).values, hull, atol=1e-6)
    # the SDP alone reaches a (1,1) cell of -1/8 (in ±1 form: 1 + 2m + c >= -1/2 when X ⪰ 0)
    down = -np.eye(4)[3]
    assert relaxation_support(domain, down, relaxation="sdp").values[0] == pytest.approx(1 / 8, abs=1e-6)
    assert relaxation_support(domain, down, relaxation="sdp+local").values[0] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.solver
def test_relaxation_support_is_attained_at_a_point_of_L():
    domain = binary_domain(4)
    model = MomentEncoding.of(domain)
    G = np.random.default_rng(7).standard_normal((5, model.num_queries))
    for relaxation in RELAXATIONS:
        result = relaxation_support(domain, G, relaxation=relaxation, return_moments=True)
        for g, value, Y in zip(G, result.values, result.moments):
            assert Y[0, 0] == pytest.approx(1.0, abs=1e-6)
            np.testing.assert_allclose(np.diag(Y)[1:], Y[0, 1:], atol=1e-6)
            np.testing.assert_allclose(Y, Y.T, atol=0)
            if "sdp" in relaxation:
                assert np.linalg.eigvalsh(Y).min() > -1e-6
            if "local" in relaxation:
                assert model.answers(Y).min() > -1e-6
            assert g @ model.answers(Y) == pytest.approx(value, abs=1e-12)


@pytest.mark.solver
def test_local_support_is_at_least_the_explicit_point():
    # m = 0, C_ij = sign(alpha_ij) satisfies the local constraints; in ±1 form a cell is
    # (1 + a m_i + b m_j + ab C_ij)/4, so that point's value is sum(g)/4 + sum_ij |alpha_ij|,
    # alpha_ij = sum_ab ab g_ij,ab / 4 (cells of a pair ordered (0,0), (0,1), (1,0), (1,1))
    domain = binary_domain(5)
    G = np.random.default_rng(8).standard_normal((6, 40))
    signs = np.array([1.0, -1.0, -1.0, 1.0])
    explicit = G.sum(axis=1) / 4 + np.abs(G.reshape(6, 10, 4) @ signs / 4).sum(axis=1)
    values = relaxation_support(domain, G, relaxation="local").values
    assert np.all(values >= explicit - 1e-6)


# The sdp relaxation may release negative cells here; NegativeCellsWarning says so, by design.
@pytest.mark.solver
@pytest.mark.filterwarnings("ignore::projmech.bodies.NegativeCellsWarning")
def test_support_and_projection_describe_the_same_body():
    # projection p of y onto L maximizes <y - p, x> over L: h_L(y - p) = <y - p, p>
    domain = binary_domain(4)
    workload = pm.marginals(domain, 2)
    rng = np.random.default_rng(9)
    y = workload.answer(rng.dirichlet(np.ones(16))) + rng.normal(0, 0.3, workload.num_queries)
    for relaxation in RELAXATIONS:
        p, _, accuracy = relaxation_reference(domain, y, relaxation)
        h = relaxation_support(domain, y - p, relaxation=relaxation).values[0]
        # equal up to the projection's accuracy (first order in it: about 1e-5 here, where Clarabel
        # meets its tolerances); a different body would differ by the order of |y - p| * its
        # distance to L
        room = point_room(accuracy, 1e-4 / np.linalg.norm(y)) * np.linalg.norm(y)
        assert h == pytest.approx((y - p) @ p, abs=room), relaxation
        assert np.linalg.norm(y - p) > 0.5


@pytest.mark.solver
def test_relaxation_support_one_hot():
    domain = pm.Domain(["a", "b", "c"], [3, 2, 2])
    F = pm.marginals(domain, 2).toarray()
    G = np.random.default_rng(10).standard_normal((4, F.shape[0]))
    result = relaxation_support(domain, G)
    assert result.encoding == "one-hot"
    assert np.all(result.upper_bounds >= [brute_force_support(F, g) for g in G])
    assert np.all(result.values >= [brute_force_support(F, g) - 1e-6 for g in G])


def test_relaxation_support_bad_inputs():
    domain = binary_domain(3)
    with pytest.raises(ValueError, match="directions: expected shape"):
        relaxation_support(domain, np.zeros(5))
    with pytest.raises(ValueError, match="directions: contains NaN"):
        relaxation_support(domain, np.full(12, np.nan))
    with pytest.raises(ValueError, match="relaxation"):
        relaxation_support(domain, np.zeros(12), relaxation="lasserre")
    with pytest.raises(ValueError, match="solver"):
        relaxation_support(domain, np.zeros(12), solver="GUROBI-ish")
    with pytest.raises(ValueError, match="fewer than 2 values"):
        relaxation_support(pm.Domain(["a", "b"], [2, 1]), np.zeros(2))


@pytest.mark.solver
def test_relaxation_support_refuses_an_inaccurate_solve():
    with pytest.raises(RelaxationError, match="not optimal|failed"):
        relaxation_support(binary_domain(3), np.ones(12), solver="SCS", solver_options={"max_iters": 2},
                           retry_options={"max_iters": 2})


@pytest.mark.solver
def test_relaxation_support_retries_a_non_optimal_solve_once_and_reports_it():
    domain = binary_domain(3)
    G = np.random.default_rng(11).standard_normal((3, 12))
    reference = relaxation_support(domain, G)
    assert reference.retries == 0
    # two interior-point iterations cannot reach optimality: every direction is solved again
    retried = relaxation_support(domain, G, solver_options={"max_iter": 2})
    assert retried.retries == 3
    np.testing.assert_allclose(retried.values, reference.values, atol=1e-5)  # retry tolerance 1e-6
    assert np.all(retried.upper_bounds >= retried.values - 1e-6)
    with pytest.raises(RelaxationError, match="user_limit.*not optimal"):
        relaxation_support(domain, G, solver_options={"max_iter": 2}, retry=False)
    with pytest.raises(RelaxationError, match="then user_limit with the retry options"):
        relaxation_support(domain, G, solver_options={"max_iter": 2}, retry_options={"max_iter": 1})


def test_width_options_are_keyword_only():
    rng = np.random.default_rng(0)
    support = lambda G: np.abs(G).sum(axis=1)  # noqa: E731
    for estimator in (gaussian_width, mean_width):
        with pytest.raises(TypeError, match="positional"):
            estimator(support, 3, 10, rng, 0.9)
    estimate = gaussian_width(support, 3, 10, rng, confidence=0.9)
    with pytest.raises(TypeError, match="positional"):
        compare_widths(estimate, estimate, 0.9)
    with pytest.raises(TypeError, match="positional"):
        support_function(np.eye(2), np.ones(2), 100)
    with pytest.raises(TypeError, match="^confidence: expected a number"):
        compare_widths(estimate, estimate, confidence="0.9")
    with pytest.raises(TypeError, match="^block_entries: expected an int"):
        support_function(np.eye(2), np.ones(2), block_entries=1e6)


def test_one_body_width_errors_name_its_argument():
    """Given one body, the estimators' errors name ``bodies`` (not an entry of a mapping)."""
    workload = pm.marginals(pm.Domain(["a", "b"], [2, 2]), way=1)
    for estimator in (pm.geometry.gaussian_width, pm.geometry.mean_width):
        with pytest.raises(ValueError, match=r"^bodies: K_Q lives in R\^4 .* but dimension is 3"):
            estimator(workload, 3, 10, np.random.default_rng(0))
        with pytest.raises(ValueError, match=r"^bodies: returned NaN"):
            estimator(lambda G: np.full(len(G), np.nan), 3, 10, np.random.default_rng(0))


def test_documented_width_examples():
    assert round(gaussian_norm_mean(1), 6) == round(math.sqrt(2 / math.pi), 6)
    assert gaussian_width(np.eye(5), 5, 4000, np.random.default_rng(0)).samples == 4000
    cube = lambda G: np.maximum(G, 0).sum(axis=1)  # noqa: E731
    widths = gaussian_width({"cube": cube, "simplex": np.eye(5)}, 5, 4000, np.random.default_rng(0))
    assert widths["cube"].draws == widths["simplex"].draws
    means = mean_width({"cube": cube, "simplex": np.eye(5)}, 5, 4000, np.random.default_rng(0))
    assert {name: round(width.estimate, 2) for name, width in means.items()} == {"cube": 0.95, "simplex": 0.55}
    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(10)], [2] * 10), 2)
    assert gaussian_width(workload, workload.num_queries, 1000, np.random.default_rng(0)).high < 24.98
    assert round(gaussian_width(workload, workload.num_queries, 1000, np.random.default_rng(0)).estimate, 1) == 16.5
    assert {name: round(width.estimate, 2) for name, width in widths.items()} == {"cube": 2.01, "simplex": 1.16}
    assert widths["simplex"].low <= 1.163 <= widths["simplex"].high
    comparison = compare_widths(widths["cube"], widths["simplex"])
    assert round(comparison.ratio, 2) == 1.72 and round(comparison.ratio_high - comparison.ratio_low, 2) == 0.04
    assert comparison.ratio_low <= 1.715 <= comparison.ratio_high
    segment = mean_width(lambda U: np.maximum(U[:, 0], 0), 3, 4000, np.random.default_rng(0))
    assert segment.low <= 0.25 <= segment.high  # the segment [0, e_1] in R^3
    assert round(mean_width_from_gaussian(5 / math.sqrt(2 * math.pi), 5), 6) == 0.9375  # the cube [0, 1]^5
    assert round(gaussian_norm_mean(10**6), 4) == 999.9998
    assert round(finite_set_width_bound(1024, math.sqrt(45)), 3) == 24.977 and finite_set_width_bound(1, 3.0) == 0.0
    F = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(support_function(F, [[-1.0, -1.0], [3.0, 1.0]]), [0.0, 3.0])
