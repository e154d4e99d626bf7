"""The Hardt–Rothblum mechanism (interactive private multiplicative weights): OnlinePMW.

Reference values are computed here: true answers with numpy, the checker's probabilities from
the distribution of a difference of two Laplace (or discrete Laplace) variables, the accuracy
bound from its formula, and the public distribution by replaying the transcript with the public
MW step.

The default noise is OpenDP's exact discrete Laplace, which no seed drives: the tests that replay
seeded draws ask for ``noise="continuous"``, and the tests of the default are statistical.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from oracles import chi_square_pvalue, discrete_difference_tail, discrete_laplace_pmf, laplace_difference_tail
from projmech.data import Dataset, Domain, histogram
from projmech.mechanisms import BOTTOM, MechanismHalted
from projmech.mechanisms.multiplicative_weights import multiplicative_weights_update
from projmech.mechanisms.online_pmw import OnlineAccuracy, OnlinePMW, online_pmw_accuracy
from projmech.privacy import PureDP

# --------------------------------------------------------------------------------------------
# Accuracy on adaptive queries
# --------------------------------------------------------------------------------------------

M, N, ALPHA, EPSILON, QUERIES, RUNS = 32, 300, 0.05, 1.0, 100, 200


def skewed_histogram(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    records = rng.choice(M, size=N, p=rng.dirichlet(np.full(M, 0.2)))
    return np.bincount(records, minlength=M) / N


def ask_adaptively(mechanism: OnlinePMW, pool: np.ndarray, count: int) -> list[tuple[np.ndarray, float]]:
    """A deterministic inquirer whose next query depends on the previous answers and on the
    public distribution."""
    asked, previous = [], 0.5
    for step in range(count):
        if step % 4 == 3:
            row = (mechanism.public_distribution > 1 / M).astype(float)  # where y is heavy
        else:
            row = pool[int(abs(previous) * 1e6) % len(pool)]
        previous = mechanism.answer(row)
        asked.append((row, previous))
    return asked


@pytest.mark.parametrize("noise", ["continuous", "auto"])
def test_adaptive_answers_are_within_the_promised_error_with_the_stated_probability(noise):
    pool = (np.random.default_rng(0).random((64, M)) < 0.5).astype(float)
    b = 1 / (EPSILON * N)
    promise = online_pmw_accuracy(ALPHA, EPSILON, N, QUERIES, math.floor(math.log(M) / ALPHA**2) + 1, noise=noise)
    assert promise.error == 4 * ALPHA and 0 < promise.failure_probability < 0.2
    rng = np.random.default_rng(1)
    successes, released_noise, update_counts = 0, [], []
    for run in range(RUNS):
        h = skewed_histogram(run)
        mechanism = OnlinePMW(h, ALPHA, EPSILON, n=N, rng=rng, noise=noise)
        assert mechanism.accuracy(QUERIES) == promise
        asked = ask_adaptively(mechanism, pool, QUERIES)
        errors = np.array([answer - row @ h for row, answer in asked])
        successes += bool(np.all(np.abs(errors) < promise.error))
        # The noise of each released number, as recorded (before the clipping of the answer).
        released_noise.extend(entry - row @ h for (row, _), entry in zip(asked, mechanism.transcript)
                              if entry is not BOTTOM)
        update_counts.append(mechanism.updates)
        assert not mechanism.halted
    # One-sided binomial test of "success probability >= 1 - failure_probability".
    assert stats.binomtest(successes, RUNS, 1 - promise.failure_probability, alternative="less").pvalue > 1e-6
    # The numerical answers carry Lap(1/(epsilon n)) noise, independent of the decision to release:
    # continuous, or (the default) integer noise on the count, discrete Laplace of scale 1/epsilon.
    assert len(released_noise) > 500
    if noise == "continuous":
        assert stats.kstest(np.array(released_noise) / b, "laplace").pvalue > 1e-4
    else:
        counts_noise = np.array(released_noise) * N
        assert np.all(np.abs(counts_noise - np.round(counts_noise)) < 1e-9)
        assert chi_square_pvalue(np.round(counts_noise), 1 / EPSILON, 3) > 1e-9
    # Updates happened, and never more than the mistake bound ln|D| / alpha^2 allows.
    assert np.mean(update_counts) > 10 and max(update_counts) <= math.log(M) / ALPHA**2


def test_accuracy_formula():
    alpha, epsilon, n, queries, k = 0.1, 0.5, 400, 1000, 50
    rate = alpha * epsilon * n
    expected = (queries + k) * math.exp(-rate / 2) + k * math.exp(-2 * rate)
    assert online_pmw_accuracy(alpha, epsilon, n, queries, k, noise="continuous") == \
        OnlineAccuracy(4 * alpha, pytest.approx(expected))
    # K = min(Q, k): fewer queries than copies.
    few = online_pmw_accuracy(alpha, epsilon, n, 10, k, noise="continuous")
    assert few.failure_probability == pytest.approx(20 * math.exp(-rate / 2) + 10 * math.exp(-2 * rate))
    assert online_pmw_accuracy(alpha, epsilon, 10, queries, k).failure_probability == 1.0  # capped
    for arguments, match in [((0.0, 1.0, 10, 5, 5), "alpha"), ((0.6, 1.0, 10, 5, 5), "alpha"),
                             ((0.1, -1.0, 10, 5, 5), "epsilon"), ((0.1, 1.0, 0, 5, 5), "n"),
                             ((0.1, 1.0, 10, 0, 5), "num_queries"), ((0.1, 1.0, 10, 5, 0), "k")]:
        with pytest.raises(ValueError, match=match):
            online_pmw_accuracy(*arguments)
    with pytest.raises(ValueError, match="^noise: "):
        online_pmw_accuracy(alpha, epsilon, n, queries, k, noise="exact")


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_accuracy_with_discrete_noise_bounds_the_discrete_laplace_tails(epsilon):
    """With discrete noise (the default) each draw's tail ``P(|Z| >= s)``, ``s`` in counts, is
    bounded by ``c e^{-s epsilon}``, ``c = 2 / (1 + e^{-epsilon})``, tightly at integer ``s``
    (the pmf's sums, computed here); the promise carries the factor ``c``, and covers the
    continuous tails too (``c >= 1``)."""
    b = 1 / epsilon
    support, pmf = discrete_laplace_pmf(b, int(80 * b) + 10)
    factor = 2 / (1 + math.exp(-epsilon))
    for s in [0.3, 1.0, 2.5, 4.0, 7.2, 10.0]:
        tail = float(pmf[np.abs(support) >= s].sum())
        assert tail <= factor * math.exp(-s * epsilon) * (1 + 1e-12)
        if float(s).is_integer():
            assert tail == pytest.approx(factor * math.exp(-s * epsilon), rel=1e-9)
    alpha, n, queries, k = 0.1, 400, 1000, 50
    continuous = online_pmw_accuracy(alpha, epsilon, n, queries, k, noise="continuous").failure_probability
    for noise in ("auto", "discrete"):
        promise = online_pmw_accuracy(alpha, epsilon, n, queries, k, noise=noise)
        assert promise.failure_probability == pytest.approx(min(1.0, factor * continuous), rel=1e-12)
    # The mechanism's own promise uses its noise.
    h = np.array([0.25, 0.75])
    assert OnlinePMW(h, alpha, epsilon, n=n, k=k).accuracy(queries) == online_pmw_accuracy(
        alpha, epsilon, n, queries, k, noise="auto")
    assert OnlinePMW(h, alpha, epsilon, n=n, k=k, noise="continuous").accuracy(queries).failure_probability == \
        continuous


# --------------------------------------------------------------------------------------------
# The checker, the update, halting
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mass, expected_kind", [(0.8, "half"), (0.2, "half"), (0.79, "tail"), (0.81, "body")])
def test_first_check_has_the_documented_distribution(mass, expected_kind):
    """A number iff ``|q(x) - q(y)| + N_i >= 3 alpha + N``: with ``y`` uniform over two elements
    and ``q = [1, 0]``, the distance is ``|mass - 0.5|``; b = 0.01."""
    alpha, n, epsilon, runs = 0.1, 100, 1.0, 4000
    b = 1 / (epsilon * n)
    z = abs(abs(mass - 0.5) - 3 * alpha)
    expected = {"half": 0.5, "tail": laplace_difference_tail(z, b), "body": 1 - laplace_difference_tail(z, b)}[
        expected_kind]
    rng = np.random.default_rng(int(mass * 100))
    numbers = 0
    for _ in range(runs):
        mechanism = OnlinePMW(np.array([mass, 1 - mass]), alpha, epsilon, n=n, rng=rng, noise="continuous")
        answer = mechanism.answer(np.array([1.0, 0.0]))
        if mechanism.transcript[0] is BOTTOM:
            assert answer == 0.5  # the public estimate q(y)
        else:
            numbers += 1
    assert stats.binomtest(numbers, runs, expected).pvalue > 1e-5, (numbers / runs, expected)


@pytest.mark.parametrize("count, expected_at_least", [(63, 1), (64, 0), (3, 0)])
def test_default_first_check_is_discrete_on_a_real_distance(count, expected_at_least):
    """The default noise is integer, the compared distance is not: with ``y`` uniform over three
    elements and ``q = [1, 0, 0]`` the estimate is a third, so ``|c - N/3|`` with ``N = 100`` is
    29.67, 30.67 or 30.33 counts against the threshold ``3 alpha N = 30``. A number iff
    ``Z_i - Z >= 30 - |c - N/3|``, two discrete Laplace of scale ``1/epsilon``, i.e. iff the
    integer ``Z_i - Z`` is at least 1 or 0; and a released number is an integer count over N."""
    alpha, n, epsilon, runs = 0.1, 100, 1.0, 4000
    h = np.array([count, n - count, 0]) / n
    distance = abs(count - n / 3)
    assert math.ceil(3 * alpha * n - distance - 1e-9) == expected_at_least
    expected = discrete_difference_tail(expected_at_least, 1 / epsilon)
    rng = np.random.default_rng(count)  # drives nothing here: the draws are OpenDP's
    numbers = 0
    for _ in range(runs):
        mechanism = OnlinePMW(h, alpha, epsilon, n=n, rng=rng)
        answer = mechanism.answer(np.array([1.0, 0.0, 0.0]))
        if mechanism.transcript[0] is BOTTOM:
            assert answer == pytest.approx(1 / 3, abs=1e-12)
        else:
            numbers += 1
            released = mechanism.transcript[0] * n
            assert abs(released - round(released)) < 1e-9
    # Continuous noise would give 0.42 (at 29.67) and 0.66 (at 30.67) where these give 0.36 and 0.64.
    assert stats.binomtest(numbers, runs, expected).pvalue > 1e-9, (numbers / runs, expected)


def test_noise_options_fractional_queries_and_copies():
    """"auto" releases a fractional query's count with continuous noise (the only draw from the
    generator) and a 0/1 query's with integer noise; "discrete" refuses a fractional query before
    any draw. A tiny alpha whose default k makes the guarantee overflow is refused naming alpha (it
    raised ZeroDivisionError), an explicit such k naming k; a huge k costs no work."""
    # Count 42.5 against the estimate 0.375 * 100: 5 counts apart, above the threshold 3 alpha N
    # = 3 by 40 noise scales (b = 1/20), so the answer is a number.
    h, n, epsilon = np.array([0.3, 0.7]), 100, 20.0
    row = np.array([0.25, 0.5])
    rng, replay = np.random.default_rng(3), np.random.default_rng(3)
    mechanism = OnlinePMW(h, 0.01, epsilon, n=n, k=3, rng=rng)
    assert mechanism.noise.name == "discrete_laplace"
    mechanism.answer(row)
    assert mechanism.transcript[0] * n == pytest.approx(42.5 + replay.laplace(0.0, 1 / epsilon), abs=1e-9)
    assert rng.bit_generator.state == replay.bit_generator.state  # the release's draw, only
    mechanism.answer(np.array([0.0, 1.0]))  # 0/1: nothing from the generator
    assert rng.bit_generator.state == replay.bit_generator.state
    strict = OnlinePMW(h, 0.01, epsilon, n=n, k=3, rng=rng, noise="discrete")
    with pytest.raises(ValueError, match="^query: noise='discrete' needs 0/1 queries"):
        strict.answer(row)
    assert strict.transcript == () and rng.bit_generator.state == replay.bit_generator.state

    with pytest.raises(ValueError, match="^alpha: the default k = .* overflow"):
        OnlinePMW(h, 1e-300, epsilon, n=n)
    with pytest.raises(ValueError, match="^k: "):
        OnlinePMW(h, 0.1, 1e10, n=n, k=10**300)
    assert OnlinePMW(h, 0.1, epsilon, n=n, k=10**9).remaining == 10**9


@pytest.mark.parametrize("query", ["element", "complement"])
def test_updates_move_y_towards_the_data_and_stop(query):
    """Too low (q = e_0) and too high (q = 1 - e_0) on a point mass at element 0: y(0) rises,
    the verdicts become ⊥, and fewer than ln|D|/alpha^2 updates happen."""
    m, alpha = 16, 0.1
    h = np.eye(m)[0]
    row = h if query == "element" else 1 - h
    mechanism = OnlinePMW(h, alpha, 1.0, n=10_000, rng=0)
    answers = [mechanism.answer(row) for _ in range(300)]
    assert mechanism.updates <= math.log(m) / alpha**2
    assert all(entry is BOTTOM for entry in mechanism.transcript[-100:])
    assert mechanism.public_distribution[0] > 1 - 4 * alpha
    assert abs(answers[-1] - row @ h) < 4 * alpha


def test_halts_after_k_updates():
    m = 8
    h = np.eye(m)[0]
    mechanism = OnlinePMW(h, 0.1, 1.0, k=3, n=1000, rng=2)
    assert mechanism.k == 3 and mechanism.privacy == PureDP(4 * 3 * 1.0)
    # q(x) = 1 but q(y) <= 1/8 * e^{0.3} / (...) stays far below: every query is an update.
    for step in range(3):
        assert mechanism.remaining == 3 - step and not mechanism.halted
        mechanism.answer(h)
    assert mechanism.updates == 3 and mechanism.halted and mechanism.remaining == 0
    assert all(isinstance(entry, float) for entry in mechanism.transcript)
    with pytest.raises(MechanismHalted, match="k=3"):
        mechanism.answer(h)
    assert len(mechanism.transcript) == 3


def test_default_k_and_privacy():
    for m, alpha, epsilon in [(32, 0.05, 1.0), (2, 0.5, 0.3), (1000, 0.2, 0.01)]:
        mechanism = OnlinePMW(np.full(m, 1 / m), alpha, epsilon, n=10 * m, rng=0)
        k = math.floor(math.log(m) / alpha**2) + 1
        assert mechanism.k == k
        assert mechanism.privacy == PureDP(4 * k * epsilon)
        # Laplace of scale 1/epsilon on counts, divided by the public n: 1/(epsilon n) on answers.
        assert mechanism.noise.scale == pytest.approx(1 / epsilon, rel=1e-12) and mechanism.size == 10 * m


# --------------------------------------------------------------------------------------------
# Transcript and public state
# --------------------------------------------------------------------------------------------


def test_transcript_holds_only_bottoms_and_numbers_and_y_is_public():
    h = skewed_histogram(7)
    pool = (np.random.default_rng(3).random((64, M)) < 0.5).astype(float)
    # Continuous noise: a released number is then never the private value (a discrete draw is 0
    # with probability 0.46 here).
    mechanism = OnlinePMW(h, ALPHA, EPSILON, n=N, rng=5, noise="continuous")
    asked = ask_adaptively(mechanism, pool, 80)
    transcript = mechanism.transcript
    assert len(transcript) == 80
    assert all(entry is BOTTOM or type(entry) is float for entry in transcript)
    assert 0 < sum(entry is not BOTTOM for entry in transcript) < 80
    # Replay from public information only: the queries and the transcript.
    y = np.full(M, 1 / M)
    for (row, answer), entry in zip(asked, transcript):
        estimate = row @ y
        if entry is BOTTOM:
            assert answer == pytest.approx(estimate, abs=1e-12)
        else:
            # A noisy number, never the private value, returned clipped to [0, 1].
            assert answer == min(1.0, max(0.0, entry)) and entry != row @ h
            y = multiplicative_weights_update(y, row, bool(entry > estimate), ALPHA)
    np.testing.assert_allclose(mechanism.public_distribution, y, rtol=1e-9, atol=1e-15)
    assert not mechanism.public_distribution.flags.writeable
    # No public attribute is the private histogram.
    for name in dir(mechanism):
        value = getattr(mechanism, name) if not name.startswith("_") else None
        if isinstance(value, np.ndarray):
            assert not np.allclose(value, h)


def test_answers_are_clipped_to_the_unit_interval_after_the_sparse_vector_test():
    """Noisy numbers far outside [0, 1] (b = 0.5 on fractions) come back clipped, while the
    comparisons, the released numbers (the transcript) and the MW update directions are those of
    an independent replay of the unclipped mechanism with the same draws: clipping is applied to
    what is returned only, after the privacy-relevant test."""
    h, n, epsilon, alpha = np.array([0.9, 0.1]), 10, 0.2, 0.1
    b = 1 / epsilon  # on counts
    rows = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 1.0])]
    mechanism = OnlinePMW(h, alpha, epsilon, n=n, rng=np.random.default_rng(11), noise="continuous")
    draws = np.random.default_rng(11)  # the replay draws the same Laplace variables in the same order

    def laplace() -> float:
        return float(draws.laplace(0.0, b, size=1)[0])

    y, threshold = np.full(2, 0.5), 3 * alpha * n + laplace()
    outside = 0
    for step in range(60):
        row = rows[step % 3]
        estimate, count = row @ y, row @ h * n
        answer = mechanism.answer(row)
        assert 0.0 <= answer <= 1.0
        if abs(count - estimate * n) + laplace() < threshold:
            assert mechanism.transcript[-1] is BOTTOM and answer == pytest.approx(estimate, abs=1e-12)
            continue
        released = (count + laplace()) / n
        assert mechanism.transcript[-1] == pytest.approx(released, abs=1e-12)  # recorded unclipped
        assert answer == pytest.approx(min(1.0, max(0.0, released)), abs=1e-12)
        outside += not 0 <= released <= 1
        y = multiplicative_weights_update(y, row, bool(released > estimate), alpha)
        threshold = 3 * alpha * n + laplace()
    assert outside >= 5  # clipping did happen
    np.testing.assert_allclose(mechanism.public_distribution, y, rtol=1e-9)


def test_predicates_on_a_dataset():
    domain = Domain(["age", "sex"], [4, 2])
    records = np.random.default_rng(0).integers(0, [4, 2], size=(200, 2))
    data = Dataset(records, domain)
    by_predicate = OnlinePMW(data, 0.1, 1.0, rng=8, noise="continuous")
    by_row = OnlinePMW(histogram(data), 0.1, 1.0, n=200, rng=8, noise="continuous")
    predicate = lambda x: (x["age"] >= 2) & (x["sex"] == 0)  # noqa: E731
    row = np.array([0, 0, 0, 0, 1, 0, 1, 0], dtype=float)  # index = age * 2 + sex
    for _ in range(5):
        assert by_predicate.answer(predicate) == by_row.answer(row)
    assert by_predicate.transcript == by_row.transcript and by_predicate.n == 200


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"alpha": 0.0}, ValueError, "alpha"),
        ({"alpha": 0.6}, ValueError, "alpha"),
        ({"alpha": float("nan")}, ValueError, "alpha"),
        ({"alpha": "0.1"}, TypeError, "alpha"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -2.0}, ValueError, "epsilon"),
        ({"k": 0}, ValueError, "k"),
        ({"k": -3}, ValueError, "k"),
        ({"k": 2.5}, TypeError, "k"),
        ({"rng": np.random.RandomState(0)}, TypeError, "rng"),
        ({"n": None}, ValueError, "n"),
        ({"neighbouring": "nope"}, ValueError, "neighbouring"),
        ({"data_or_histogram": np.array([0.2, 0.2])}, ValueError, "histogram"),
        ({"max_universe": 1}, ValueError, "max_universe"),
        ({"noise": "exact"}, ValueError, "noise"),
        ({"noise": None}, TypeError, "noise"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs, error, match):
    arguments = {"data_or_histogram": np.array([0.3, 0.7]), "alpha": 0.1, "epsilon": 1.0, "n": 10}
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        OnlinePMW(**arguments)


@pytest.mark.parametrize(
    "query, error, match",
    [
        (np.ones(3), ValueError, "query: expected 2 values"),
        (np.array([0.5, 1.5]), ValueError, r"query: values must lie in \[0, 1\]"),
        (np.array([np.inf, 0.0]), ValueError, "query: contains NaN or infinite"),
        (lambda x: x, TypeError, "query: a predicate needs the data as a Dataset"),
    ],
)
def test_bad_queries_raise_before_any_noise(query, error, match):
    rng = np.random.default_rng(0)
    mechanism = OnlinePMW(np.array([0.3, 0.7]), 0.1, 1.0, n=10, rng=rng)
    state = rng.bit_generator.state
    with pytest.raises(error, match=match):
        mechanism.answer(query)
    assert rng.bit_generator.state == state and mechanism.transcript == ()


def test_constructor_checks_every_option_before_the_data_is_read():
    class Unreadable:
        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    for kwargs, error, match in [({"alpha": 0.6}, ValueError, "alpha"), ({"alpha": True}, TypeError, "alpha"),
                                 ({"k": 2.0}, TypeError, "k"), ({"max_universe": 0}, ValueError, "max_universe"),
                                 ({"rng": -1}, ValueError, "rng"), ({"size": 10}, ValueError, "size")]:
        arguments = {"alpha": 0.1, "epsilon": 1.0, "n": 10, **kwargs}
        with pytest.raises(error, match=f"^{match}: "):
            OnlinePMW(Unreadable(), **arguments)


def test_options_are_keyword_only_and_accuracy_checks_its_counts():
    with pytest.raises(TypeError, match="positional"):
        OnlinePMW(np.array([0.3, 0.7]), 0.1, 1.0, 5)
    with pytest.raises(TypeError, match="^num_queries: expected an int"):
        online_pmw_accuracy(0.1, 1.0, 100, 10.0, 3)
    with pytest.raises(ValueError, match=r"^alpha: must lie in \(0, 0.5\] \(the update band"):
        online_pmw_accuracy(0.75, 1.0, 100, 10, 3)
