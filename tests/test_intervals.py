"""Per-query confidence intervals: the noise's quantiles against scipy, coverage by simulation
(exact intervals inside [94 %, 96 %], bounds at least 95 %), the methods named, refusals."""

import math

import numpy as np
import pytest
from scipy import stats

import projmech as pm
from projmech.noise import discrete_gaussian_pmf, discrete_laplace_pmf

LEVEL = 0.95


# ----------------------------------------------------------------------------- quantiles


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.999])
def test_continuous_half_widths_match_scipy(level):
    assert pm.Noise("gaussian", 2.5, discrete=False).half_width(level) == pytest.approx(
        stats.norm.ppf((1 + level) / 2, scale=2.5), rel=1e-12)
    assert pm.Noise("laplace", 1.7, discrete=False).half_width(level) == pytest.approx(
        stats.laplace.ppf((1 + level) / 2, scale=1.7), rel=1e-12)


@pytest.mark.parametrize("distribution, scale", [("gaussian", 0.4), ("gaussian", 3.3), ("laplace", 0.8),
                                                  ("laplace", 5.0)])
@pytest.mark.parametrize("level", [0.5, 0.95, 0.999])
def test_discrete_half_width_is_the_least_integer_reaching_the_level(distribution, scale, level):
    support, pmf = (discrete_gaussian_pmf if distribution == "gaussian" else discrete_laplace_pmf)(scale)
    t = pm.Noise(distribution, scale, discrete=True).half_width(level)
    assert t == int(t)
    inside = lambda width: pmf[np.abs(support) <= width].sum()  # noqa: E731 - brute force over the support
    assert inside(t) >= level - 1e-12
    assert t == 0 or inside(t - 1) < level


def test_no_noise_has_zero_width():
    assert pm.Noise("gaussian", 0.0, discrete=False).half_width(0.9) == 0.0


# ----------------------------------------------------------------------------- coverage


def _data(m=24, n=400, seed=0):
    rng = np.random.default_rng(seed)
    domain = pm.Domain(["x"], [m])
    records = rng.integers(0, m, size=(n, 1))
    return pm.Dataset(records, domain), np.bincount(records[:, 0], minlength=m) / n


def _coverage(mechanism, data, truth, seeds, level=LEVEL):
    per_query, together, widths, intervals = [], [], [], None
    for seed in range(seeds):
        intervals = mechanism.release(data, rng=np.random.default_rng(seed)).confidence_intervals(level)
        covered = intervals.covers(truth)
        per_query.append(covered.mean())
        together.append(covered.all())
        widths.append(intervals.mean_width)
    return float(np.mean(per_query)), float(np.mean(together)), float(np.mean(widths)), intervals


def _exact_mechanisms(F):
    return {
        "gaussian": pm.GaussianMechanism(F, pm.ZCDP(0.5), noise="continuous"),
        "laplace": pm.LaplaceMechanism(F, pm.PureDP(1.0), noise="continuous"),
        "factorization": pm.FactorizationMechanism(F, pm.ZCDP(0.5), noise="continuous"),
        "factorization max": pm.FactorizationMechanism(F, pm.ZCDP(0.5), noise="continuous", objective="max"),
    }


def _bound_mechanisms(F, m):
    return {
        "discrete gaussian": pm.GaussianMechanism(F, pm.ZCDP(0.5), noise="discrete"),
        "discrete laplace": pm.LaplaceMechanism(F, pm.PureDP(1.0), noise="discrete"),
        "factorization discrete": pm.FactorizationMechanism(
            F, pm.ZCDP(0.5), noise="discrete", factorization=pm.Factorization(F, pm.hierarchical_strategy(m))),
        "projection": pm.ProjectionMechanism(F, pm.ZCDP(0.5), noise="continuous"),
        "factorization+projection": pm.FactorizationMechanism(F, pm.ZCDP(0.5), noise="continuous", project=True),
    }


@pytest.mark.parametrize("name", ["gaussian", "laplace", "factorization", "factorization max"])
def test_exact_intervals_cover_at_the_level(name):
    # 1000 seeds x 24 prefix queries: the exact intervals' coverage must lie in [94 %, 96 %]. The
    # queries' noise is correlated (prefix sums share terms), so 200 seeds leave a standard error
    # of about 0.8 %: 1000 bring it to about 0.35 %.
    data, h = _data()
    F = pm.prefix(24)
    mechanism = _exact_mechanisms(F)[name]
    coverage, _, width, intervals = _coverage(mechanism, data, F.answer(h), seeds=1000)
    assert intervals.exact and not intervals.simultaneous and intervals.method.startswith("exact")
    assert 0.94 <= coverage <= 0.96, (name, coverage, width)


@pytest.mark.parametrize("name", ["discrete gaussian", "discrete laplace", "factorization discrete", "projection",
                                  "factorization+projection"])
def test_bounds_cover_at_least_the_level(name):
    data, h = _data(m=16)
    F = pm.prefix(16)
    mechanism = _bound_mechanisms(F, 16)[name]
    coverage, together, _, intervals = _coverage(mechanism, data, F.answer(h), seeds=200)
    assert not intervals.exact
    if name.startswith("discrete"):
        # Integer noise from OpenDP's own generator (no seed): the coverage is a random estimate
        # of the exact probability of |X| <= t, which is at least the level (and close to it).
        support, pmf = (discrete_gaussian_pmf if "gaussian" in name else discrete_laplace_pmf)(mechanism.noise.scale)
        nominal = pmf[np.abs(support) <= mechanism.noise.half_width(LEVEL)].sum()
        assert nominal >= LEVEL
        assert abs(coverage - nominal) <= 4 * math.sqrt(nominal * (1 - nominal) / (200 * 16))
    else:
        assert coverage >= LEVEL
    if intervals.simultaneous:
        assert together >= LEVEL
        assert intervals.method.startswith("bonferroni") and "clipped" in intervals.method


@pytest.mark.parametrize("distribution", ["gaussian", "laplace"])
def test_discrete_intervals_cover_exactly_the_integer_errors_within_the_quantile(distribution):
    # The error on the counts is an integer; an interval must cover exactly when |error| <= t,
    # also at |error| == t, where rounding in (count + noise) / n must not push the truth out.
    data, h = _data(m=16, n=300)
    F = pm.prefix(16)
    mechanism = (pm.GaussianMechanism(F, pm.ZCDP(0.5), noise="discrete") if distribution == "gaussian"
                 else pm.LaplaceMechanism(F, pm.PureDP(1.0), noise="discrete"))
    t = mechanism.noise.half_width(LEVEL)
    truth = F.answer(h)
    at_the_end = 0
    for seed in range(300):
        release = mechanism.release(data, rng=np.random.default_rng(seed))
        errors = np.round((release.noisy_answers - truth) * release.size)
        at_the_end += int(np.sum(np.abs(errors) == t))
        np.testing.assert_array_equal(release.confidence_intervals(LEVEL).covers(truth), np.abs(errors) <= t)
    assert at_the_end > 0  # the boundary case did occur


def test_factorization_widths_follow_each_query_norm():
    data, _ = _data()
    F = pm.prefix(24)
    mechanism = pm.FactorizationMechanism(F, pm.ZCDP(0.5), noise="continuous")
    release = mechanism.release(data, rng=np.random.default_rng(0))
    intervals = release.confidence_intervals(0.9)
    R = np.stack([mechanism.factorization.reconstruct(unit) for unit in np.eye(mechanism.factorization.num_measurements)],
                 axis=1)
    expected = 2 * stats.norm.ppf(0.95) * release.sigma * np.linalg.norm(R, axis=1)
    assert np.allclose(intervals.width, expected, rtol=1e-9)
    # Their root mean square half-width over 1.645 is the release's answer_sigma_rms.
    assert math.sqrt(np.mean((intervals.width / 2) ** 2)) / stats.norm.ppf(0.95) == pytest.approx(
        release.answer_sigma_rms, rel=1e-9)


def test_projected_intervals_stay_inside_query_ranges():
    data, _ = _data(m=16)
    release = pm.ProjectionMechanism(pm.prefix(16), pm.ZCDP(0.01), noise="continuous").release(
        data, rng=np.random.default_rng(1))
    intervals = release.confidence_intervals()
    assert np.all(intervals.lower >= 0) and np.all(intervals.upper <= 1) and np.all(intervals.lower <= intervals.upper)


def test_add_remove_declared_size_is_not_clipped():
    data, _ = _data(m=16)
    release = pm.ProjectionMechanism(pm.prefix(16), pm.ZCDP(0.5), noise="continuous", neighbouring="add-remove",
                                     size=300).release(data, rng=np.random.default_rng(1))
    intervals = release.confidence_intervals()
    assert "clipped" not in intervals.method and intervals.simultaneous


# ----------------------------------------------------------------------------- refusals


def test_refusals():
    data, _ = _data(m=8, n=100)
    release = pm.GaussianMechanism(pm.prefix(8), pm.ZCDP(0.5)).release(data, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="level: must lie in"):
        release.confidence_intervals(1.5)
    with pytest.raises(TypeError, match="level"):
        release.confidence_intervals("0.95")
    with pytest.raises(ValueError, match="answers: expected shape"):
        release.confidence_intervals().covers(np.zeros(3))
    mwem = pm.OfflinePMW(pm.prefix(8), pm.PureDP(1.0), rounds=2).release(data, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="no per-answer noise"):
        mwem.confidence_intervals()


# ----------------------------------------------------------------------------- long version


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gaussian", "laplace", "factorization", "factorization max"])
def test_exact_coverage_long(name):
    data, h = _data(m=48, n=1000, seed=5)
    F = pm.prefix(48)
    coverage, _, _, _ = _coverage(_exact_mechanisms(F)[name], data, F.answer(h), seeds=2000)
    assert 0.945 <= coverage <= 0.955, (name, coverage)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["discrete gaussian", "discrete laplace", "factorization discrete", "projection",
                                  "factorization+projection"])
def test_bound_coverage_long(name):
    data, h = _data(m=32, n=1000, seed=6)
    F = pm.prefix(32)
    mechanism = _bound_mechanisms(F, 32)[name]
    coverage, together, _, intervals = _coverage(mechanism, data, F.answer(h), seeds=1000)
    if name.startswith("discrete"):  # a random estimate of an exact probability >= LEVEL (see above)
        support, pmf = (discrete_gaussian_pmf if "gaussian" in name else discrete_laplace_pmf)(mechanism.noise.scale)
        nominal = pmf[np.abs(support) <= mechanism.noise.half_width(LEVEL)].sum()
        assert nominal >= LEVEL and abs(coverage - nominal) <= 4 * math.sqrt(nominal * (1 - nominal) / (1000 * 32))
    else:
        assert coverage >= LEVEL
    if intervals.simultaneous:
        assert together >= LEVEL
