"""The audits of the library's own mechanisms (projmech.audit.self_audit), and the regression they guard.

The default run holds a small slice: the Laplace mechanism (fast, and where an audit has most
power) under both relations with and without a planted bug, and the add/remove defect the first
audit found (answers divided by the true row count), reproduced here and caught. The slow tests
audit every mechanism under both relations, and detect the planted 2x bug in every mechanism
(see DETECTABLE for where it can be detected at all).
"""

from __future__ import annotations

import numpy as np
import pytest

import projmech as pm
from projmech.audit import audit
from projmech.audit.self_audit import MECHANISMS, audit_cases, bug_factor, run_audits
from projmech.cli.commands import main


def test_laplace_passes_under_both_relations():
    results = run_audits(audit_cases(["laplace"]), releases=4000, confidence=0.99, rng=0)
    for result in results:
        assert result.passed, result.summary()
        assert result.epsilon_lower_bound <= 1.0


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
def test_planted_bug_in_laplace_is_detected(neighbouring):
    """Halving the noise makes the true epsilon 2 where 1 is claimed: 10,000 releases find a bound
    above 1 (measured 1.78-1.80 at 4,000)."""
    (case,) = audit_cases(["laplace"], [neighbouring], planted_bug=True)
    result = case.run(releases=10_000, confidence=0.99, rng=1)
    assert result.epsilon_lower_bound > 1.0 and result.passed is False, result.summary()


def test_dividing_by_the_true_row_count_is_caught():
    """The defect of the first audit: under add/remove the answers were divided by the *true* row
    count. Identity queries on two cells, counts (100, 0) against (100, 1) with one row added:
    the added row moves both fractions, (1, 0) to (100/101, 1/101), each by about one Laplace
    scale 1/(epsilon n): the real epsilon on this pair is about 2 where 1 was claimed. The audit
    finds more than 1.5; projmech's Laplace mechanism with a declared size passes the same pair."""
    epsilon = 1.0

    def old_mechanism(counts, rng, size):  # vectorized: counts -> (size, 2) released fractions
        counts = np.asarray(counts, dtype=float)
        n = counts.sum()
        return counts / n + rng.laplace(0.0, 1.0 / (epsilon * n), size=(size, 2))

    result = audit(old_mechanism, ((100, 0), (100, 1)), releases=100_000, batch=100_000, rng=2,
                   claimed_epsilon=epsilon, confidence=0.99)
    assert result.epsilon_lower_bound > 1.5 and result.passed is False, result.summary()

    domain = pm.Domain(["x"], [2])
    first = pm.Dataset(np.zeros((100, 1), dtype=np.int64), domain)
    second = pm.Dataset(np.vstack([np.zeros((100, 1), dtype=np.int64), [[1]]]), domain)
    mechanism = pm.LaplaceMechanism(pm.identity(2), pm.PureDP(epsilon), neighbouring="add-remove", size=100)
    fixed = audit(lambda data, rng: mechanism.release(data, rng=rng).answers, (first, second),
                  releases=20_000, rng=3, claimed_epsilon=epsilon, confidence=0.99)
    assert fixed.passed, fixed.summary()


@pytest.mark.parametrize("mechanism", ["threshold", "online_pmw"])
def test_interactive_cases_audit_the_default_exact_discrete_noise(mechanism):
    """The sparse-vector mechanisms' default is now OpenDP's discrete Laplace, and their cases
    audit it: under replace-one the public size is 1, so every released number is an integer
    count; with noise="continuous" they are not. A short audit of the default passes."""
    (case,) = audit_cases([mechanism], ["replace-one"])
    numbers = [entry for seed in range(100) for entry in case.release(case.pair[0], np.random.default_rng(seed))[0]
               if entry is not pm.BOTTOM]
    assert len(numbers) > 20 and all(float(entry).is_integer() for entry in numbers)
    (continuous,) = audit_cases([mechanism], ["replace-one"], noise="continuous")
    numbers = [entry for seed in range(100)
               for entry in continuous.release(continuous.pair[0], np.random.default_rng(seed))[0]
               if entry is not pm.BOTTOM]
    assert numbers and not any(float(entry).is_integer() for entry in numbers)
    result = case.run(releases=2000, rng=0)
    assert result.passed, result.summary()


def naive_count_sensitivity(self, neighbouring, ord=2):
    """The sensitivity as computed before issue 31 (item 1): the square root of a sum of squares of
    the entries, unscaled (0 for entries of 1e-200, whose squares underflow), and no refusal of a
    sensitivity of 0 for a workload that is not zero."""
    matrix = self.toarray()
    norm = float(np.sqrt((matrix * matrix).sum(axis=0)).max()) if ord == 2 else float(np.abs(matrix).sum(axis=0).max())
    return pm.Neighbouring.parse(neighbouring).count_sensitivity(norm, ord, nonnegative=bool((matrix >= 0).all()))


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
def test_the_tiny_workload_passes_and_its_planted_bug_is_detected(neighbouring):
    """The Gaussian mechanism on F = [[1e-200, 0]] (issue 31, item 1): continuous noise of scale
    about 4e-200 on counts, on a pair that moves the count by exactly 1e-200. Its audit passes,
    and with the noise halved (delta = 1e-3) 20,000 releases find a bound above the claim
    (measured 1.49 under replace-one, 1.35 under add/remove, with another seed): the statistic
    resolves deviations of 1e-200, whose squares underflow (unscaled, it was 0 / 0)."""
    (case,) = audit_cases(["tiny_gaussian"], [neighbouring])
    # The noise is 1e-200 times that of the same mechanism on the unit query [[1, 0]].
    size = {"size": "estimate"} if neighbouring == "add-remove" else {}
    unit = pm.GaussianMechanism(pm.Workload(np.array([[1.0, 0.0]])), pm.ApproxDP(1.0, 1e-5), neighbouring=neighbouring,
                                noise="continuous", **size)
    released = case.release(case.pair[0], np.random.default_rng(0))
    assert released.noise.scale == pytest.approx(1e-200 * unit.noise.scale, rel=1e-9)
    result = case.run(releases=4000, rng=0)
    assert result.passed and result.epsilon_lower_bound <= 1.0, result.summary()
    (planted,) = audit_cases(["tiny_gaussian"], [neighbouring], planted_bug=True, delta=1e-3)
    result = planted.run(releases=20_000, rng=1)
    assert result.epsilon_lower_bound > 1.0 and result.passed is False, result.summary()


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove"])
def test_the_tiny_case_catches_a_naive_sensitivity(neighbouring, monkeypatch):
    """The regression the tiny case guards: with the sensitivity computed naively the workload's
    sensitivity is 0, the mechanism adds no noise, and a short audit proves epsilon far above the
    claim of 1 (the statistic is then the ratio's limit, +-inf)."""
    monkeypatch.setattr(pm.workloads.Workload, "count_sensitivity", naive_count_sensitivity)
    (case,) = audit_cases(["tiny_gaussian"], [neighbouring])
    first, second = case.pair
    released = case.release(first, np.random.default_rng(0))
    assert released.noise.scale == 0.0  # the regression: no noise at all
    assert {case.statistic(case.release(first, np.random.default_rng(seed))) for seed in range(5)} == {-np.inf}
    assert {case.statistic(case.release(second, np.random.default_rng(seed))) for seed in range(5)} == {np.inf}
    result = case.run(releases=2000, rng=0)
    assert result.epsilon_lower_bound > 5.0 and result.passed is False, result.summary()


def test_the_tiny_case_takes_continuous_noise_and_refuses_discrete():
    """Its count, 1e-200, is no integer: "auto" (the default) audits continuous noise, and
    "discrete" is refused in the mechanism's words, as the discrete Gaussian cannot hold it."""
    (tiny,) = audit_cases(["tiny_gaussian"], ["replace-one"])
    assert not tiny.release(tiny.pair[0], np.random.default_rng(0)).noise.discrete
    with pytest.raises(ValueError, match="^noise: 'discrete' noise needs integer-valued measurements"):
        audit_cases(["tiny_gaussian"], ["replace-one"], noise="discrete")


def test_cases_cover_every_mechanism_and_relation():
    cases = audit_cases()
    assert [(c.mechanism, c.neighbouring) for c in cases] == [
        (name, relation) for name in MECHANISMS for relation in ("replace-one", "add-remove")]
    for case in cases:
        first, second = case.pair
        assert case.claimed_epsilon > 0 and first.domain == second.domain
        # Neighbours: one row replaced (same size) or one row added.
        assert second.n - first.n == (1 if case.neighbouring == "add-remove" else 0)
        assert not case.planted_bug
    # Under add/remove the cases estimate the size privately: the estimate is audited too.
    gaussian = [c for c in cases if c.mechanism == "gaussian" and c.neighbouring == "add-remove"][0]
    assert gaussian.release(gaussian.pair[0], np.random.default_rng(0)).size_source == "estimated"


def _likelihood_ratio_means(case, releases: int, seed: int) -> tuple[float, float, float, float]:
    """E_first[exp(L)] and E_second[exp(-L)] with their standard errors: both are 1 exactly when
    the statistic L is the log-likelihood ratio of what the release publishes."""
    rng = np.random.default_rng(seed)
    first = np.exp([case.statistic(case.release(case.pair[0], rng)) for _ in range(releases)])
    second = np.exp([-case.statistic(case.release(case.pair[1], rng)) for _ in range(releases)])
    return (first.mean(), first.std() / np.sqrt(releases), second.mean(), second.std() / np.sqrt(releases))


@pytest.mark.parametrize("planted_bug", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_adaptive_statistic_is_the_likelihood_ratio_of_the_whole_transcript(planted_bug):
    """A mis-modelled noisy table (a round's sigma, the counts) would move the means from 1. The
    selection's part is too small here to move them (a review: at most 0.055 against a standard
    deviation of 0.25, so a selection scale x2 left them within their errors); the next test
    checks it exactly. Replace-one only: under add/remove the published size is clamped at 1,
    which the statistic reads as a density (as every case's does), a bias of about 2 % here."""
    (case,) = audit_cases(["adaptive"], ["replace-one"], noise="continuous", planted_bug=planted_bug)
    mean_first, error_first, mean_second, error_second = _likelihood_ratio_means(case, 300, seed=1)
    assert abs(mean_first - 1.0) < 5 * error_first and abs(mean_second - 1.0) < 5 * error_second
    # The transcript has selecting rounds, which the statistic prices.
    run = case.release(case.pair[0], np.random.default_rng(2))
    assert any(r.selection_rho > 0 for r in run.rounds)


@pytest.mark.parametrize("neighbouring, planted_bug", [("replace-one", False), ("add-remove", True)])
def test_the_adaptive_statistic_prices_each_selection_as_the_mechanism_draws_it(monkeypatch, neighbouring,
                                                                                planted_bug):
    """The selection probabilities the statistic recomputes from the published transcript are
    those of the exponential mechanism the run actually called (its scores, epsilon and
    sensitivity, recorded by a spy), round by round."""
    from projmech.audit import self_audit
    from projmech.mechanisms import adaptive

    drawn = []
    original = adaptive._selection.exponential_mechanism

    def spy(scores, epsilon, sensitivity, rng):
        chosen = original(scores, epsilon, sensitivity, rng)
        logits = epsilon * np.asarray(scores) / (2.0 * sensitivity)
        drawn.append(float(logits[chosen] - np.logaddexp.reduce(logits)))
        return chosen

    monkeypatch.setattr(adaptive._selection, "exponential_mechanism", spy)
    factor = bug_factor("adaptive", neighbouring) if planted_bug else 1.0
    mechanism = self_audit._adaptive_mechanism(neighbouring, factor, "continuous", 1e-5)
    (case,) = audit_cases(["adaptive"], [neighbouring], noise="continuous", planted_bug=planted_bug)
    rng = np.random.default_rng(6)
    checked = 0
    for _ in range(10):
        drawn.clear()
        run = mechanism.run(case.pair[0], rng=rng)
        selections, _ = self_audit._transcript_log_likelihood(mechanism, case.pair[0], run,
                                                              self_audit._round_estimates(mechanism, run))
        np.testing.assert_allclose(selections, drawn, rtol=1e-9, atol=1e-12)
        checked += len(drawn)
    assert checked >= 10


def test_the_adaptive_case_plants_its_bug_in_the_noise_and_the_selection_not_the_schedule():
    (correct,) = audit_cases(["adaptive"], ["replace-one"], noise="continuous")
    (buggy,) = audit_cases(["adaptive"], ["replace-one"], noise="continuous", planted_bug=True)
    assert buggy.name == "adaptive, replace-one, planted 2x bug" and buggy.claimed_epsilon == correct.claimed_epsilon
    first = correct.release(correct.pair[0], np.random.default_rng(3)).rounds
    second = buggy.release(buggy.pair[0], np.random.default_rng(3)).rounds
    # The stated costs of the one-way rounds are the same; their noise is halved.
    for right, wrong in zip(first[:2], second[:2]):
        assert wrong.measurement_rho == pytest.approx(right.measurement_rho, rel=1e-12)
        assert wrong.sigma == pytest.approx(right.sigma / 2.0, rel=1e-12)


@pytest.mark.parametrize("arguments, error, match", [
    ({"mechanisms": ["gaussian", "exponential"]}, ValueError, "mechanisms"),
    ({"mechanisms": "gaussian"}, TypeError, "mechanisms"),  # a str is no sequence of names
    ({"mechanisms": [3]}, TypeError, "mechanisms"),
    ({"neighbourings": ["swap"]}, ValueError, "neighbouring"),
    ({"planted_bug": 1}, TypeError, "planted_bug"),
    ({"noise": "exact"}, ValueError, "noise"),
    ({"delta": 0.0}, ValueError, "delta"),
    ({"delta": "1e-5"}, TypeError, "delta"),
])
def test_audit_cases_validation(arguments, error, match):
    with pytest.raises(error, match=f"^{match}: "):
        audit_cases(**arguments)


def test_audit_options_are_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        audit_cases(["laplace"], ["replace-one"], True)
    (case,) = audit_cases(["laplace"], ["replace-one"])
    with pytest.raises(TypeError, match="positional"):
        run_audits([case], 100, 0.99)
    with pytest.raises(TypeError, match="positional"):
        case.run(100, 0.99, 0)
    with pytest.raises(ValueError, match="^rng: "):
        run_audits([case], 100, rng=-1)


def test_audit_command(tmp_path, capsys):
    out = tmp_path / "audit.csv"
    assert main(["audit", "--mechanism", "laplace", "--releases", "2000", "--seed", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "laplace, replace-one" in printed and "laplace, add-remove" in printed and "none" in printed
    assert out.read_text().startswith("mechanism,")
    assert main(["audit", "--mechanism", "laplace", "--releases", "2000", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["audit", "--releases", "1"]) == 2
    assert "--releases" in capsys.readouterr().err


# --- the whole suite (slow: about 0.3 ms per release, 200,000 releases per case) -----------------

#: Releases per data set of the slow audits: 100,000, but 20,000 for the adaptive mechanism, whose
#: release runs its rounds of projections and whose statistic recomputes them (about 13 ms a
#: release: 20,000 take about 9 minutes a case; its planted bug showed at 1.28 and 1.06 there).
SLOW_RELEASES = {"adaptive": 20_000}


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_mechanism_passes_its_audit(mechanism):
    releases = SLOW_RELEASES.get(mechanism, 100_000)
    for result in run_audits(audit_cases([mechanism]), releases=releases, confidence=0.99, rng=4):
        assert result.passed, result.summary()


#: Where the planted bug is detected: everywhere, with each case's bug factor (2, or 4 where the
#: pair attains only half the claim: the sparse-vector mechanisms and offline PMW under add/remove).
DETECTABLE = [(name, relation) for name in MECHANISMS for relation in ("replace-one", "add-remove")]


def test_a_planted_bug_of_factor_2_hides_in_the_loose_add_remove_claims():
    """Why those cases take a factor of 4: at 2, the sparse-vector mechanisms' bug stays under its
    claim under add/remove (measured 0.63 and 0.58 at 20,000 releases against 1.05), at 4 it is
    caught (1.35, 1.33); the factor is in the case's name."""
    assert bug_factor("threshold", "add-remove") == 4.0 and bug_factor("threshold", "replace-one") == 2.0
    (case,) = audit_cases(["threshold"], ["add-remove"], planted_bug=True, noise="continuous")
    assert case.name == "threshold, add-remove, planted 4x bug"
    result = case.run(releases=20_000, confidence=0.99, rng=5)
    assert result.epsilon_lower_bound > result.claimed_epsilon, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, neighbouring", DETECTABLE)
def test_every_planted_bug_is_detected(mechanism, neighbouring):
    # The (epsilon, delta) mechanisms at delta = 1e-3: 100,000 releases resolve its tails.
    (case,) = audit_cases([mechanism], [neighbouring], planted_bug=True, delta=1e-3)
    result = case.run(releases=SLOW_RELEASES.get(mechanism, 100_000), confidence=0.99, rng=5)
    assert result.epsilon_lower_bound > result.claimed_epsilon, result.summary()
