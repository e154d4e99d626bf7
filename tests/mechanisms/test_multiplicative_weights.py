"""Multiplicative weights (the update and its mistake bound) and the offline private MW mechanism (MWEM).

Expected values are computed by hand: the update in linear space from its definition, the
exponential mechanism's selection probabilities as a softmax, noise scales from the split
``epsilon/(2T)`` or ``rho/(2T)``, and the error bound from its formula.
"""

from __future__ import annotations

import inspect
import math
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import special, stats

from projmech.analysis.evaluation import evaluate
from projmech.data import Dataset, Domain, histogram
from projmech.mechanisms import Release
from projmech.mechanisms.multiplicative_weights import (
    MW_MAX_ALPHA,
    OFFLINE_PMW_MAX_ROUNDS,
    OFFLINE_PMW_MAX_UPDATES,
    OfflinePMW,
    PMWRun,
    multiplicative_weights_update,
    mw_update_bound,
    offline_pmw_error_bound,
    offline_pmw_min_n,
)
from projmech.privacy import ZCDP, ApproxDP, Neighbouring, PureDP
from projmech.workloads import Workload, all_range, marginals

# --------------------------------------------------------------------------------------------
# The update
# --------------------------------------------------------------------------------------------


def test_update_is_the_multiplicative_weights_rule():
    rng = np.random.default_rng(0)
    y = rng.dirichlet(np.ones(12))
    y[3] = 0.0
    y /= y.sum()
    predicate = (rng.random(12) < 0.5).astype(float)
    alpha = 0.3
    # Too low: e^alpha where P holds; too high: e^alpha where it does not.
    low = y * np.where(predicate == 1, math.exp(alpha), 1.0)
    high = y * np.where(predicate == 0, math.exp(alpha), 1.0)
    np.testing.assert_allclose(multiplicative_weights_update(y, predicate, True, alpha), low / low.sum(), rtol=1e-12)
    np.testing.assert_allclose(multiplicative_weights_update(y, predicate, False, alpha), high / high.sum(), rtol=1e-12)
    # [0, 1]-valued rows: y e^{+- alpha q}, normalized.
    row = rng.random(12)
    for too_low, sign in ((True, 1.0), (False, -1.0)):
        expected = y * np.exp(sign * alpha * row)
        np.testing.assert_allclose(multiplicative_weights_update(y, row, too_low, alpha), expected / expected.sum(),
                                   rtol=1e-12)
    assert multiplicative_weights_update(y, row, True, alpha)[3] == 0.0


def test_update_stays_exact_over_many_steps():
    y = np.full(8, 1 / 8)
    predicate = np.array([1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    for _ in range(3000):  # e^{3000} overflows any linear-space product
        y = multiplicative_weights_update(y, predicate, True, 1.0)
    assert np.all(np.isfinite(y)) and y.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(y, [0.5, 0.5, 0, 0, 0, 0, 0, 0], atol=1e-300)


def divergence(x: np.ndarray, y: np.ndarray) -> float:
    support = x > 0
    return float(np.sum(x[support] * np.log(x[support] / y[support])))


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
@pytest.mark.parametrize("universe", [2, 8, 64])
def test_mistake_bound_at_most_ln_d_over_alpha_squared_updates(alpha, universe):
    """MW with the exact checker E(x) (band 2 alpha): random and worst-case predicates."""
    rng = np.random.default_rng(int(alpha * 100) + universe)
    bound = math.log(universe) / alpha**2
    assert mw_update_bound(universe, alpha) == math.floor(bound)
    # Spread-out and concentrated data, and a point mass (the largest divergence from uniform).
    instances = [rng.dirichlet(np.full(universe, c)) for c in (1.0, 0.3, 0.05, 0.05)] + [np.eye(universe)[0]]
    for x in instances:
        pool = (rng.random((300, universe)) < 0.5).astype(float)
        y = np.full(universe, 1.0 / universe)
        updates = 0
        for step in range(100_000):
            # Every third query is the worst predicate, 1[x > y], whose error is the total
            # variation distance; when it is correct every predicate is (max over P of
            # |P(x) - P(y)| is that distance), so the loop may stop.
            worst = step % 3 == 2
            query = (x > y).astype(float) if worst else pool[rng.integers(len(pool))]
            guess, truth = query @ y, query @ x
            if abs(truth - guess) < 2 * alpha:
                if worst:
                    break
                continue
            before = divergence(x, y)
            y = multiplicative_weights_update(y, query, bool(guess <= truth - 2 * alpha), alpha)
            updates += 1
            # The proof's invariant: every update lowers Div(x || y) by at least alpha^2.
            assert divergence(x, y) <= before - alpha**2 + 1e-9
            assert updates <= bound
        else:
            pytest.fail("the exact checker never declared every predicate correct")


@pytest.mark.parametrize(
    "arguments, error, match",
    [
        ((np.array([0.5, 0.6]), np.array([1.0, 0.0]), True, 0.1), ValueError, "distribution: must sum to 1"),
        ((np.array([1.5, -0.5]), np.array([1.0, 0.0]), True, 0.1), ValueError, "distribution: has negative"),
        ((np.array([0.5, 0.5]), np.array([1.0, 0.0, 0.0]), True, 0.1), ValueError, "query_row: expected 2"),
        ((np.array([0.5, 0.5]), np.array([1.2, 0.0]), True, 0.1), ValueError, r"query_row: values must lie in \[0, 1"),
        ((np.array([0.5, 0.5]), np.array([np.nan, 0.0]), True, 0.1), ValueError, "query_row: contains NaN"),
        ((np.array([0.5, 0.5]), np.array([1.0, 0.0]), "low", 0.1), TypeError, "too_low"),
        ((np.array([0.5, 0.5]), np.array([1.0, 0.0]), True, 0.0), ValueError, "alpha"),
        ((np.array([0.5, 0.5]), np.array([1.0, 0.0]), True, float("nan")), ValueError, "alpha"),
    ],
)
def test_update_rejects_bad_input(arguments, error, match):
    with pytest.raises(error, match=match):
        multiplicative_weights_update(*arguments)


def test_update_bound_rejects_alpha_beyond_its_inequality():
    assert mw_update_bound(64, MW_MAX_ALPHA) == math.floor(math.log(64) / 1.79**2)
    with pytest.raises(ValueError, match="alpha"):
        mw_update_bound(64, 1.8)
    with pytest.raises(ValueError, match="universe_size"):
        mw_update_bound(0, 0.1)


def test_update_bound_is_exact_for_a_tiny_alpha():
    """``floor(ln|D| / alpha^2)`` as an int however small alpha is: alpha^2 underflows below
    1e-162 and the quotient overflows a float before (ZeroDivisionError and OverflowError before)."""
    from decimal import Decimal, localcontext

    for alpha in (1e-150, 1e-200, 1e-300):
        with localcontext() as context:
            context.prec = 800
            expected = int(Decimal(math.log(8)) / Decimal(alpha) ** 2)  # exact decimals of the floats
        assert mw_update_bound(8, alpha) == expected
    assert mw_update_bound(8, 0.3) == math.floor(math.log(8) / 0.09)


# --------------------------------------------------------------------------------------------
# OfflinePMW (MWEM)
# --------------------------------------------------------------------------------------------

DOMAIN = Domain(["a", "b", "c", "d"], [2, 2, 2, 2])
WORKLOAD = marginals(DOMAIN, 2)  # 24 counting queries over 16 cells, explicit (sparse)
# A histogram of 20 rows (n H is integer for every n used below, all multiples of 20).
H = np.random.default_rng(1).multinomial(20, np.random.default_rng(1).dirichlet(np.full(16, 0.3))) / 20
TRUTH = WORKLOAD.toarray() @ H


def rmse_by_hand(answers: np.ndarray) -> float:
    return float(np.sqrt(np.mean((answers - TRUTH) ** 2)))


@pytest.mark.parametrize(
    "privacy, rounds",
    [(PureDP(1.3), 7), (PureDP(0.1), 1), (ZCDP(0.4), 5), (ZCDP(2.0), 50)],
    ids=["pure-7", "pure-1", "zcdp-5", "zcdp-50"],
)
def test_privacy_split_composes_to_the_request(privacy, rounds):
    n = 200
    mechanism = OfflinePMW(WORKLOAD, privacy, rounds=rounds, noise="continuous")
    budget = mechanism.round_budget
    if isinstance(privacy, PureDP):
        share = privacy.epsilon / (2 * rounds)
        assert budget.selection == PureDP(share) and budget.measurement == PureDP(share)
        assert budget.selection_epsilon == share
        assert math.fsum([budget.selection.epsilon, budget.measurement.epsilon] * rounds) == pytest.approx(
            privacy.epsilon, rel=1e-14)
        assert mechanism.privacy_spent.epsilon == pytest.approx(privacy.epsilon, rel=1e-14)
        expected_scale, noise = 2 * rounds / (privacy.epsilon * n), "laplace"
    else:
        share = privacy.rho / (2 * rounds)
        assert budget.selection == ZCDP(share) and budget.measurement == ZCDP(share)
        # The exponential mechanism with epsilon_0 is epsilon_0^2/8-zCDP.
        assert budget.selection_epsilon**2 / 8 == pytest.approx(share, rel=1e-14)
        assert mechanism.privacy_spent.rho == pytest.approx(privacy.rho, rel=1e-14)
        expected_scale, noise = math.sqrt(rounds / privacy.rho) / n, "gaussian"
    release = mechanism.release(H, n=n, rng=0)
    assert isinstance(release, Release)
    assert release.mechanism == "offline_pmw" and release.privacy == privacy
    assert release.neighbouring is Neighbouring.REPLACE_ONE and release.size == n and release.noise.name == noise
    assert release.scale == pytest.approx(expected_scale, rel=1e-12)
    assert release.sensitivity == 1.0  # of each measured count
    assert release.labels == WORKLOAD.labels and release.answers.shape == (24,)
    np.testing.assert_array_equal(release.answers, release.noisy_answers)


def test_rmse_decreases_with_n_and_beats_the_uniform_answer():
    mechanism = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=100, updates_per_round=1, noise="continuous")
    means, halves = [], []
    for index, n in enumerate([100, 1000, 100_000]):
        rng = np.random.default_rng(index)
        errors = np.array([rmse_by_hand(mechanism.release(H, n=n, rng=rng).answers) for _ in range(20)])
        half = stats.t.ppf(0.9995, errors.size - 1) * errors.std(ddof=1) / math.sqrt(errors.size)
        means.append(errors.mean())
        halves.append(half)
    # 99.9 % intervals do not overlap: the error decreases with n.
    assert means[0] - halves[0] > means[1] + halves[1]
    assert means[1] - halves[1] > means[2] + halves[2]
    uniform = rmse_by_hand(WORKLOAD.toarray() @ np.full(16, 1 / 16))
    assert means[2] + halves[2] < 0.4 * uniform, (means, uniform)


@pytest.mark.parametrize("privacy", [PureDP(1.0), ZCDP(0.5)], ids=["pure", "zcdp"])
def test_one_round_selects_by_the_exponential_mechanism_and_measures_with_calibrated_noise(privacy):
    n, runs = 40, 3000
    mechanism = OfflinePMW(WORKLOAD, privacy, rounds=1, updates_per_round=1, noise="continuous")
    epsilon_0 = mechanism.round_budget.selection_epsilon
    scores = np.abs(TRUTH - WORKLOAD.toarray() @ np.full(16, 1 / 16))
    probabilities = special.softmax(epsilon_0 * scores / (2 / n))
    rng = np.random.default_rng(7)
    results = [mechanism.run(H, n=n, rng=rng) for _ in range(runs)]
    assert isinstance(results[0], PMWRun) and results[0].distribution.shape == (16,)
    selected = np.array([r.selected[0] for r in results])
    # Chi-square goodness of fit, pooling the rarely picked queries.
    counts = np.bincount(selected, minlength=24)
    expected = probabilities * runs
    common = expected >= 5
    observed, wanted = counts[common], expected[common]
    if not common.all():
        observed, wanted = np.append(observed, counts[~common].sum()), np.append(wanted, expected[~common].sum())
    assert stats.chisquare(observed, wanted).pvalue > 1e-5
    noise = np.array([r.measurements[0] for r in results]) - TRUTH[selected]
    if isinstance(privacy, PureDP):
        b = 1 / ((privacy.epsilon / 2) * n)
        assert stats.kstest(noise / b, "laplace").pvalue > 1e-4
    else:
        sigma = (1 / n) / math.sqrt(2 * privacy.rho / 2)
        assert stats.kstest(noise / sigma, "norm").pvalue > 1e-4
    # The release is the answers on the distribution after the round's MWEM update.
    r = results[0]
    row = WORKLOAD.toarray()[r.selected[0]]
    y = np.full(16, 1 / 16) * np.exp(row * (r.measurements[0] - row @ np.full(16, 1 / 16)) / 2)
    np.testing.assert_allclose(r.distribution, y / y.sum(), rtol=1e-12)
    np.testing.assert_allclose(r.release.answers, WORKLOAD.toarray() @ (y / y.sum()), rtol=1e-12)


def error_bound_by_hand(n, m, k, T, privacy, p):
    eta = p / (2 * T)
    if isinstance(privacy, PureDP):
        epsilon_0 = privacy.epsilon / (2 * T)
        beta = math.log(1 / eta) / (epsilon_0 * n)
    else:
        epsilon_0 = math.sqrt(8 * privacy.rho / (2 * T))
        sigma = (1 / n) / math.sqrt(privacy.rho / T)
        beta = sigma * stats.norm.isf(eta / 2)
    delta = 2 * math.log(k / eta) / (epsilon_0 * n)
    return math.sqrt(4 * math.log(m) / T + beta**2) + delta + 1 / T


@pytest.mark.parametrize("privacy", [PureDP(1.0), ZCDP(0.5)], ids=["pure", "zcdp"])
def test_error_bound_formula_holds_and_inverts(privacy):
    n, rounds, p = 200_000, 100, 0.05
    bound = offline_pmw_error_bound(n, 16, 24, rounds, privacy, failure_probability=p)
    assert bound == pytest.approx(error_bound_by_hand(n, 16, 24, rounds, privacy, p), rel=1e-9)
    mechanism = OfflinePMW(WORKLOAD, privacy, rounds=rounds, updates_per_round=1, noise="continuous")
    assert mechanism.error_bound(n, p) == bound
    runs = 15
    rng = np.random.default_rng(3)
    within = sum(np.max(np.abs(mechanism.release(H, n=n, rng=rng).answers - TRUTH)) <= bound for _ in range(runs))
    assert stats.binomtest(within, runs, 1 - p, alternative="less").pvalue > 1e-6
    # The inverse: the smallest n whose bound reaches alpha.
    alpha = 0.5
    smallest = offline_pmw_min_n(alpha, 16, 24, rounds, privacy, failure_probability=p)
    assert offline_pmw_error_bound(smallest, 16, 24, rounds, privacy, failure_probability=p) <= alpha
    assert offline_pmw_error_bound(smallest - 1, 16, 24, rounds, privacy, failure_probability=p) > alpha
    with pytest.raises(ValueError, match="alpha"):
        offline_pmw_min_n(2 * math.sqrt(math.log(16) / rounds) + 1 / rounds, 16, 24, rounds, privacy,
                          failure_probability=p)


def test_error_bound_reproduces_the_mwem_form_for_eta_one_over_k():
    """With PureDP and eta = 1/k (p = 2T/k): 2 sqrt(ln|D|/T) + 10 T ln k/(eps n) + 1/T bounds it."""
    n, m, k, T, epsilon = 10**6, 1024, 500, 20, 1.0
    bound = offline_pmw_error_bound(n, m, k, T, PureDP(epsilon), failure_probability=2 * T / k)
    mwem_form = 2 * math.sqrt(math.log(m) / T) + 10 * T * math.log(k) / (epsilon * n) + 1 / T
    assert bound <= mwem_form
    assert bound > 2 * math.sqrt(math.log(m) / T)


def test_release_is_deterministic_given_the_seed_and_takes_datasets():
    mechanism = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=8, noise="continuous")
    first = mechanism.release(H, n=500, rng=7)
    second = mechanism.release(H, n=500, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(first.answers, second.answers)
    assert not np.array_equal(first.answers, mechanism.release(H, n=500, rng=8).answers)
    rng = np.random.default_rng(5)
    records = rng.integers(0, 2, size=(500, 4))
    data = Dataset(records, DOMAIN)
    from_data = mechanism.release(data, rng=9)
    from_histogram = mechanism.release(histogram(data), n=500, rng=9)
    np.testing.assert_allclose(from_data.answers, from_histogram.answers, rtol=1e-12)
    # The library's evaluation harness takes it like any mechanism.
    summary = evaluate(mechanism, H, trials=3, rng=np.random.default_rng(0), n=500)
    assert summary.trials == 3 and summary.rmse_mean > 0


def test_implicit_marginals_and_more_updates_per_round():
    implicit = marginals(DOMAIN, 2, implicit=True)
    explicit = OfflinePMW(WORKLOAD, ZCDP(1.0), rounds=5, noise="continuous").release(H, n=1000, rng=4)
    from_implicit = OfflinePMW(implicit, ZCDP(1.0), rounds=5, noise="continuous").release(H, n=1000, rng=4)
    np.testing.assert_allclose(explicit.answers, from_implicit.answers, rtol=1e-10)
    heuristic = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=20, updates_per_round=5, noise="continuous")
    errors = [rmse_by_hand(heuristic.release(H, n=100_000, rng=s).answers) for s in range(3)]
    plain = [rmse_by_hand(OfflinePMW(WORKLOAD, PureDP(1.0), rounds=20, updates_per_round=1, noise="continuous")
                          .release(H, n=100_000, rng=s).answers) for s in range(3)]
    assert max(errors) < min(plain)  # post-processing that uses the measurements harder
    with pytest.raises(ValueError, match="updates_per_round"):
        heuristic.error_bound(1000)


def test_default_updates_per_round_is_the_documented_value():
    """10 updates per round: the value the guide's measurement chose and the docstring states."""
    default = inspect.signature(OfflinePMW).parameters["updates_per_round"].default
    assert default == 10 == OfflinePMW(WORKLOAD, PureDP(1.0), rounds=3).updates_per_round
    guide = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "multiplicative_weights.md").read_text()
    assert f"default `updates_per_round={default}`" in guide
    assert f"Default {default} (chosen in the user guide" in OfflinePMW.__doc__


def test_default_beats_one_update_per_round_at_the_same_privacy():
    """The extra updates reuse the noisy measurements (post-processing): the same guarantee and
    noise, a smaller error. Seeded, continuous noise: deterministic."""
    default = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=10, noise="continuous")
    single = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=10, updates_per_round=1, noise="continuous")
    assert default.privacy_spent == single.privacy_spent and default.noise == single.noise
    errors = {name: np.mean([rmse_by_hand(mechanism.release(H, n=10_000, rng=seed).answers) for seed in range(5)])
              for name, mechanism in (("default", default), ("single", single))}
    assert errors["default"] < 0.7 * errors["single"], errors


def test_discrete_noise_is_the_default_for_counting_queries():
    """0/1 rows count integers: OpenDP's discrete Laplace (pure DP) or Gaussian (zCDP), calibrated
    to the same per-measurement budget; its error bound uses the discrete tails."""
    pure = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=4, updates_per_round=1)
    assert pure.noise.name == "discrete_laplace" and pure.noise.scale == pytest.approx(8.0, rel=1e-12)
    zcdp = OfflinePMW(WORKLOAD, ZCDP(0.5), rounds=4)
    # rho / (2T) = 1/16 per measurement: sigma = 1 / sqrt(2 / 16).
    assert zcdp.noise.name == "discrete_gaussian" and zcdp.noise.scale == pytest.approx(math.sqrt(8), rel=1e-12)
    run = pure.run(H, n=200, rng=0)
    assert np.allclose(run.measurements * 200, np.round(run.measurements * 200))  # integer counts
    # Discrete tails are heavier than the continuous ones the bound otherwise uses.
    continuous = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=4, updates_per_round=1, noise="continuous")
    assert pure.error_bound(10_000) > continuous.error_bound(10_000)
    with pytest.raises(ValueError, match="noise"):
        OfflinePMW(Workload(0.5 * np.eye(4)), PureDP(1.0), 4, noise="discrete")


@pytest.mark.parametrize(
    "arguments, error, match",
    [
        ((WORKLOAD, ApproxDP(1.0, 1e-6), 5), TypeError, "privacy"),
        ((WORKLOAD, 1.0, 5), TypeError, "privacy"),
        ((np.eye(3), PureDP(1.0), 5), TypeError, "workload"),
        ((WORKLOAD, PureDP(1.0), 0), ValueError, "rounds"),
        ((WORKLOAD, PureDP(1.0), 2.5), TypeError, "rounds"),
        ((Workload(2 * np.eye(4)), PureDP(1.0), 5), ValueError, r"workload: entries must lie in \[0, 1\]"),
        ((Workload(sp.csr_array(-np.eye(4))), PureDP(1.0), 5), ValueError, r"\[0, 1\]"),
        ((all_range(8, implicit=True), PureDP(1.0), 5), ValueError, "implicit"),
    ],
)
def test_bad_constructor_arguments_raise(arguments, error, match):
    with pytest.raises(error, match=match):
        OfflinePMW(*arguments)


def test_bad_options_and_release_inputs_raise_before_any_randomness():
    with pytest.raises(ValueError, match="updates_per_round"):
        OfflinePMW(WORKLOAD, PureDP(1.0), 5, updates_per_round=0)
    with pytest.raises(ValueError, match="max_universe"):
        OfflinePMW(WORKLOAD, PureDP(1.0), 5, max_universe=8)
    with pytest.raises(ValueError, match="neighbouring"):
        OfflinePMW(WORKLOAD, PureDP(1.0), 5, neighbouring="swap")
    mechanism = OfflinePMW(WORKLOAD, PureDP(1.0), rounds=5)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for data, n, match in [(H, None, "n: required"), (H, 0, "n:"), (H[:8], 100, "histogram"),
                           (H * 2, 100, "histogram: must be normalized")]:
        with pytest.raises(ValueError, match=match):
            mechanism.release(data, n=n, rng=rng)
    assert rng.bit_generator.state == state
    with pytest.raises(TypeError, match="rng"):
        mechanism.release(H, n=100, rng=np.random.RandomState(0))
    for arguments, options, error, match in [
            ((0, 16, 24, 5, PureDP(1.0)), {}, ValueError, "n"),
            ((10.0, 16, 24, 5, PureDP(1.0)), {}, TypeError, "n"),
            ((10, 16, 24, 5, PureDP(1.0)), {"failure_probability": 1.0}, ValueError, "failure_probability"),
            ((10, 16, 24, 5, PureDP(1.0)), {"discrete": 0}, TypeError, "discrete"),
            ((10, 16, 24, 5, ApproxDP(1.0, 1e-5)), {}, TypeError, "privacy")]:
        with pytest.raises(error, match=f"^{match}: "):
            offline_pmw_error_bound(*arguments, **options)


def test_offline_pmw_checks_every_option_at_construction():
    for kwargs, error, match in [({"rounds": 2.0}, TypeError, "rounds"), ({"rounds": 0}, ValueError, "rounds"),
                                 ({"updates_per_round": True}, TypeError, "updates_per_round"),
                                 ({"max_universe": 1.5}, TypeError, "max_universe"),
                                 ({"noise": "exact"}, ValueError, "noise"), ({"noise": 1}, TypeError, "noise"),
                                 ({"privacy": ApproxDP(1.0, 1e-6)}, TypeError, "privacy")]:
        arguments = {"privacy": PureDP(1.0), "rounds": 5, **kwargs}
        with pytest.raises(error, match=f"^{match}: "):
            OfflinePMW(WORKLOAD, **arguments)


def test_rounds_and_updates_are_bounded_before_any_work():
    """``rounds=10**9`` hung (a billion rounds of exponential mechanism and update); now it is
    refused at construction with the reason, as is a run whose re-applied updates
    (``T + (u - 1) T (T + 1) / 2``) would exceed OFFLINE_PMW_MAX_UPDATES, naming
    updates_per_round; the largest accepted settings construct at once."""
    with pytest.raises(ValueError, match=r"^rounds: must lie in \[1, 100000\] \(each round gets 1/\(2 rounds\)"):
        OfflinePMW(WORKLOAD, PureDP(1.0), rounds=10**9)
    with pytest.raises(ValueError, match="^rounds: "):
        OfflinePMW(WORKLOAD, PureDP(1.0), rounds=OFFLINE_PMW_MAX_ROUNDS + 1, updates_per_round=1)
    with pytest.raises(ValueError, match="^updates_per_round: 10 per round over 100,000 rounds apply 45,000,550,000"):
        OfflinePMW(WORKLOAD, PureDP(1.0), rounds=OFFLINE_PMW_MAX_ROUNDS)
    with pytest.raises(ValueError, match="^updates_per_round: .* above OFFLINE_PMW_MAX_UPDATES"):
        OfflinePMW(WORKLOAD, ZCDP(1.0), rounds=5, updates_per_round=10**9)
    assert OfflinePMW(WORKLOAD, PureDP(1.0), rounds=OFFLINE_PMW_MAX_ROUNDS, updates_per_round=1).rounds == 10**5
    # The largest T at u = 10 with T + 9 T (T + 1) / 2 <= 10^7: 1,490.
    largest = max(t for t in range(1, 2000) if t + 9 * t * (t + 1) // 2 <= OFFLINE_PMW_MAX_UPDATES)
    assert largest == 1490 and OfflinePMW(WORKLOAD, PureDP(1.0), rounds=largest).rounds == largest
    with pytest.raises(ValueError, match="^updates_per_round: "):
        OfflinePMW(WORKLOAD, PureDP(1.0), rounds=largest + 1)


def test_offline_pmw_options_are_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        OfflinePMW(WORKLOAD, PureDP(1.0), 5, "replace-one")
    mechanism = OfflinePMW(WORKLOAD, PureDP(1.0), 5)
    with pytest.raises(TypeError, match="positional"):
        mechanism.release(H, 20, 0)
    with pytest.raises(TypeError, match="positional"):
        offline_pmw_min_n(0.9, 16, 24, 5, PureDP(1.0), 0.05)


def test_mw_step_arguments_follow_one_rule():
    uniform, row = np.full(4, 0.25), np.array([1.0, 0.0, 1.0, 0.0])
    with pytest.raises(TypeError, match="^too_low: expected True or False"):
        multiplicative_weights_update(uniform, row, 1, 0.1)
    with pytest.raises(TypeError, match="^alpha: expected a number"):
        multiplicative_weights_update(uniform, row, True, "0.1")
    with pytest.raises(ValueError, match=r"^alpha: must lie in \(0, 1.79\] \(the mistake bound needs"):
        mw_update_bound(16, 2.0)
    with pytest.raises(TypeError, match="^universe_size: expected an int"):
        mw_update_bound(16.0, 0.5)
