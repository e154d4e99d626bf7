"""The threshold mechanism Thr_t (AboveThreshold, Dwork & Roth 2014, §3.6) and its k-fold product.

Probabilities are computed independently of the code under test: the Laplace CDF from scipy, the
discrete Laplace's from its closed-form pmf, and the mechanism's halting probability by numerical
integration (continuous noise) or summation (discrete noise) over the noisy threshold. The
privacy test estimates an event's probability on two neighbouring data sets and checks the
per-copy guarantee ``p(x) <= e^{4 epsilon} p(x')`` with Clopper–Pearson margins; the same check is shown to reject
a variant without noise on the threshold.

The default noise is OpenDP's exact discrete Laplace, which no seed drives: the tests of it are
statistical, at thresholds a correct mechanism misses with probability below 1e-9, and the tests
that replay seeded draws ask for ``noise="continuous"``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from oracles import chi_square_pvalue, discrete_difference_tail, discrete_laplace_pmf, laplace_difference_tail
from projmech.data import Dataset, Domain
from projmech.mechanisms import BOTTOM, MechanismHalted, Threshold, ThresholdK
from projmech.privacy import Neighbouring, Noise, PureDP

LOW = np.array([1.0, 0.0])  # the count of element 0
ALL = np.array([1.0, 1.0])  # always 1


def clopper_pearson(hits: int, runs: int, alpha: float) -> tuple[float, float]:
    """One-sided ``1 - alpha`` lower and upper confidence bounds for a binomial proportion."""
    low = stats.beta.ppf(alpha, hits, runs - hits + 1) if hits > 0 else 0.0
    high = stats.beta.ppf(1 - alpha, hits + 1, runs - hits) if hits < runs else 1.0
    return float(low), float(high)


def dp_refuted(hits_x: int, hits_y: int, runs: int, factor: float, alpha: float = 1e-6) -> bool:
    """True when the data refute ``p(x) <= factor * p(x')`` at confidence ``1 - 2 alpha``."""
    low_x, _ = clopper_pearson(hits_x, runs, alpha)
    _, high_y = clopper_pearson(hits_y, runs, alpha)
    return low_x > factor * high_y


# --------------------------------------------------------------------------------------------
# Halting, counts, transcript
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 5])
def test_threshold_k_halts_after_exactly_k_numerical_answers(k):
    h = np.array([0.0, 1.0])  # LOW answers 0, ALL answers 1
    mechanism = ThresholdK(h, threshold=0.5, epsilon=1.0, k=k, n=1000, rng=np.random.default_rng(k))
    assert mechanism.privacy == PureDP(4 * k * 1.0)
    numbers = 0
    for step in range(3 * k):
        query = ALL if step % 3 == 2 else LOW  # two far below, one far above, repeated
        assert mechanism.remaining == k - numbers and not mechanism.halted
        out = mechanism.answer(query)
        if out is BOTTOM:
            assert query is LOW
        else:
            assert query is ALL and abs(out - 1.0) < 30 * mechanism.scale
            numbers += 1
        assert mechanism.answered == numbers
    assert numbers == k and mechanism.halted and mechanism.remaining == 0
    with pytest.raises(MechanismHalted):
        mechanism.answer(LOW)
    with pytest.raises(MechanismHalted):
        mechanism.answer(ALL)
    transcript = mechanism.transcript
    assert len(transcript) == 3 * k  # the refused queries are not part of it
    assert sum(entry is not BOTTOM for entry in transcript) == k
    assert all(entry is BOTTOM or isinstance(entry, float) for entry in transcript)


def test_threshold_is_the_one_fold_product():
    mechanism = Threshold(np.array([0.0, 1.0]), threshold=0.5, epsilon=0.7, n=1000, rng=3, noise="continuous")
    assert mechanism.k == 1 and mechanism.privacy == PureDP(4 * 0.7)
    assert mechanism.answer(LOW) is BOTTOM
    value = mechanism.answer(ALL)
    assert isinstance(value, float) and mechanism.halted and mechanism.answered == 1
    with pytest.raises(MechanismHalted, match="halted"):
        mechanism.answer(LOW)
    # Same draws as ThresholdK with k = 1.
    twin = ThresholdK(np.array([0.0, 1.0]), threshold=0.5, epsilon=0.7, k=1, n=1000, rng=3, noise="continuous")
    assert twin.answer(LOW) is BOTTOM and twin.answer(ALL) == value


def test_far_below_is_bottom_and_far_above_is_close():
    # b = 1/(epsilon n) = 0.002; 0.5 is 250 scales from the answers, so a wrong verdict has
    # probability below e^{-100} per query.
    rng = np.random.default_rng(0)
    h = np.array([0.0, 1.0])
    for _ in range(300):
        mechanism = Threshold(h, threshold=0.5, epsilon=1.0, n=500, rng=rng)
        assert all(mechanism.answer(LOW) is BOTTOM for _ in range(20))
        value = mechanism.answer(ALL)
        assert value is not BOTTOM and abs(value - 1.0) < 20 * mechanism.scale


def test_noise_scale_and_released_values_are_laplace():
    n, epsilon, runs = 40, 0.8, 3000
    b = 1.0 / (epsilon * n)
    h = np.array([0.25, 0.75])
    rng = np.random.default_rng(11)
    errors = []
    for _ in range(runs):
        # Far below: always above.
        mechanism = Threshold(h, threshold=-1.0, epsilon=epsilon, n=n, rng=rng, noise="continuous")
        assert mechanism.scale == pytest.approx(b, rel=1e-12)
        errors.append(mechanism.answer(LOW) - 0.25)
    assert stats.kstest(np.array(errors) / b, "laplace").pvalue > 1e-4


@pytest.mark.parametrize("distance_in_scales", [0.0, 1.0, 3.0])
def test_first_comparison_has_the_documented_distribution(distance_in_scales):
    """``Pr[q(x) + N_1 >= t + N] = Pr[N_1 - N >= t - q(x)]``, two independent Lap(b)."""
    n, epsilon, runs = 50, 1.0, 6000
    b = 1.0 / (epsilon * n)
    value = 0.4
    threshold = value - distance_in_scales * b  # the answer lies above t by that many scales
    rng = np.random.default_rng(int(distance_in_scales * 10))
    above = sum(
        Threshold(np.array([value, 1 - value]), threshold, epsilon, n=n, rng=rng, noise="continuous").answer(LOW)
        is not BOTTOM
        for _ in range(runs)
    )
    expected = 1.0 - laplace_difference_tail(distance_in_scales * b, b)
    assert stats.binomtest(above, runs, expected).pvalue > 1e-5, (above / runs, expected)


# --------------------------------------------------------------------------------------------
# Privacy: 4 epsilon per copy, on a pair of neighbouring data sets
# --------------------------------------------------------------------------------------------

# Ten rows, universe {0, 1}: x has 3 rows at element 0, its neighbour x' has 4 (one row
# replaced). Ten queries LOW (0.3 on x, 0.4 on x') then ALL (1.0 on both), threshold 0.4,
# epsilon 0.5 (b = 0.2 = two counts). Event: the first number comes at the 11th query.
N_ROWS, EPSILON, THRESHOLD, REPEATS, RUNS = 10, 0.5, 0.4, 10, 50_000
H_X = np.array([0.3, 0.7])
H_NEIGHBOUR = np.array([0.4, 0.6])


def laplace_cdf(z: float, b: float) -> float:
    return float(stats.laplace.cdf(z, scale=b))


def exact_event_probability(low_value: float, noisy_threshold: bool) -> float:
    """``Pr[⊥ on the 10 LOW queries, a number on ALL]``, integrating over ``T = t + Lap(b)``."""
    b = 1.0 / (EPSILON * N_ROWS)

    def given(tau: float) -> float:
        return laplace_cdf(tau - low_value, b) ** REPEATS * (1.0 - laplace_cdf(tau - 1.0, b))

    if not noisy_threshold:
        return given(THRESHOLD)
    density = lambda tau: float(stats.laplace.pdf(tau - THRESHOLD, scale=b)) * given(tau)  # noqa: E731
    return integrate.quad(density, THRESHOLD - 60 * b, THRESHOLD + 60 * b, points=[THRESHOLD, low_value],
                          limit=400)[0]


def simulate_event(h: np.ndarray, runs: int, seed: int, noise: str = "continuous") -> int:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        mechanism = Threshold(h, THRESHOLD, EPSILON, n=N_ROWS, rng=rng, neighbouring="replace-one", noise=noise)
        for position in range(REPEATS + 1):
            if mechanism.answer(LOW if position < REPEATS else ALL) is not BOTTOM:
                hits += position == REPEATS
                break
    return hits


def test_four_epsilon_per_copy_holds_statistically_for_neighbouring_data():
    factor = math.exp(4 * EPSILON)
    hits_x = simulate_event(H_X, RUNS, seed=100)
    hits_neighbour = simulate_event(H_NEIGHBOUR, RUNS, seed=200)

    # The simulation matches the exact probability of the mechanism as specified (noisy
    # threshold), computed independently by integration: 0.143 and 0.087.
    for hits, low_value in ((hits_x, 0.3), (hits_neighbour, 0.4)):
        exact = exact_event_probability(low_value, noisy_threshold=True)
        assert stats.binomtest(hits, RUNS, exact).pvalue > 1e-6, (hits / RUNS, exact)

    # 4 epsilon-DP, both directions, with Clopper-Pearson margins (fails with probability < 4e-6
    # for a 4 epsilon-DP mechanism).
    assert not dp_refuted(hits_x, hits_neighbour, RUNS, factor)
    assert not dp_refuted(hits_neighbour, hits_x, RUNS, factor)
    # Not vacuous: the event's probability does depend on the data.
    low_x, _ = clopper_pearson(hits_x, RUNS, 1e-6)
    _, high_neighbour = clopper_pearson(hits_neighbour, RUNS, 1e-6)
    assert low_x > high_neighbour


def test_the_privacy_check_rejects_a_threshold_without_noise():
    """Without noise on the threshold every ⊥ is a fresh test of the data: the 10 ⊥ compound to
    a ratio of about 27 (exact: 0.0266 / 0.00098) > e^2, and the check of the previous test sees it."""
    b = 1.0 / (EPSILON * N_ROWS)
    factor = math.exp(4 * EPSILON)
    exact_x = exact_event_probability(0.3, noisy_threshold=False)
    exact_neighbour = exact_event_probability(0.4, noisy_threshold=False)
    assert exact_x / exact_neighbour > 3 * factor

    def simulate_broken(low_value: float, seed: int) -> int:
        noise = np.random.default_rng(seed).laplace(0.0, b, size=(RUNS, REPEATS + 1))
        below = low_value + noise[:, :REPEATS] < THRESHOLD
        return int(np.sum(below.all(axis=1) & (1.0 + noise[:, REPEATS] >= THRESHOLD)))

    assert dp_refuted(simulate_broken(0.3, 1), simulate_broken(0.4, 2), RUNS, factor)
    # ...while the exact probabilities of the real mechanism respect the 4 epsilon guarantee.
    real = exact_event_probability(0.3, True) / exact_event_probability(0.4, True)
    assert 1 < real <= factor


# --------------------------------------------------------------------------------------------
# Exact discrete noise, the default
# --------------------------------------------------------------------------------------------


def test_default_noise_is_exact_discrete_laplace_on_counts():
    """Every released number is an integer count over the public n (threshold, comparisons and
    release all drawn by OpenDP), the noise is the discrete Laplace of scale 1/epsilon on counts,
    and nothing is drawn from the generator."""
    n, epsilon = 50, 0.5
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    mechanism = ThresholdK(np.array([0.4, 0.6]), threshold=-1.0, epsilon=epsilon, k=18, n=n, rng=rng)
    assert mechanism.noise == Noise("laplace", 1 / epsilon,
                                    discrete=True) and mechanism.noise.name == "discrete_laplace"
    assert mechanism.scale == pytest.approx(1 / (epsilon * n), rel=1e-12)
    for query in [LOW, ALL, np.array([0.0, 1.0])] * 6:
        value = mechanism.answer(query)
        assert value is not BOTTOM and type(value) is float
        assert abs(value * n - round(value * n)) < 1e-9, value  # an integer count over n
    assert mechanism.halted and rng.bit_generator.state == state  # OpenDP drew everything


def test_discrete_release_noise_is_the_discrete_laplace_of_the_stated_scale():
    """20,000 releases: ``n v - c`` is integer noise whose histogram matches the discrete Laplace
    of scale ``b = 1/epsilon = 2`` counts (a correct sampler fails the test with probability 1e-9);
    the same draws reject the scale 2.4 (epsilon misstated by a sixth)."""
    n, epsilon, releases = 20, 0.5, 20_000
    mechanism = ThresholdK(np.array([0.25, 0.75]), threshold=-5.0, epsilon=epsilon, k=releases, n=n)
    noise = np.array([mechanism.answer(LOW) * n - 5.0 for _ in range(releases)])
    assert np.all(np.abs(noise - np.round(noise)) < 1e-9)
    noise = np.round(noise)
    assert chi_square_pvalue(noise, 1 / epsilon, 10) > 1e-9
    assert chi_square_pvalue(noise, 1.2 / epsilon, 10) < 1e-9


@pytest.mark.parametrize("threshold", [0.5, 0.51, 0.5 + 0.001 / 50, 0.46])
def test_discrete_comparison_against_the_threshold_on_the_count_scale(threshold):
    """``Pr[c + Z_1 >= t N + Z_0] = Pr[Z_1 - Z_0 >= t N - c]`` for two discrete Laplace draws of
    scale ``1/epsilon``: the threshold ``t N`` is on the count scale, an integer (25 counts) or a
    real (25.5, 25.001), and the difference of integers crosses it at ``ceil(t N - c)``."""
    n, epsilon, runs = 50, 1.0, 4000
    h = np.array([0.5, 0.5])  # LOW counts 25
    expected = discrete_difference_tail(threshold * n - 25.0, 1 / epsilon)
    rng = np.random.default_rng(1)  # drives nothing here: the draws are OpenDP's
    above = sum(Threshold(h, threshold, epsilon, n=n, rng=rng).answer(LOW) is not BOTTOM for _ in range(runs))
    # Continuous noise would give 0.5 at the integer threshold (here 0.64) and about 0.5 at
    # 25.001 (here 0.36): 18 standard deviations away.
    assert stats.binomtest(above, runs, expected).pvalue > 1e-9, (above / runs, expected)


def exact_discrete_event_probability(low_count: int) -> float:
    """``Pr[⊥ on the 10 LOW queries, a number on ALL]`` with discrete Laplace noise of scale
    ``b = 1/epsilon`` on counts, summing over the integer threshold noise ``Z_0``: ⊥ is
    ``c + Z < t N + Z_0``, i.e. ``Z <= t N + Z_0 - c - 1`` (all integers)."""
    b = 1.0 / EPSILON
    support, pmf = discrete_laplace_pmf(b, 200)
    cdf = np.cumsum(pmf)

    def below(limit: int) -> float:  # Pr[Z <= limit]
        return float(cdf[limit + 200]) if limit >= -200 else 0.0

    threshold = int(THRESHOLD * N_ROWS)  # 4 counts
    return float(sum(p0 * below(threshold + z0 - low_count - 1) ** REPEATS * (1.0 - below(threshold + z0 - N_ROWS - 1))
                     for z0, p0 in zip(support[20:-20], pmf[20:-20])))


def test_four_epsilon_per_copy_holds_for_discrete_noise():
    """The previous test's event with the default, discrete noise: the simulation matches the
    exact probabilities, summed over the integer threshold noise (0.138 and 0.083), and the
    4 epsilon guarantee is not refuted."""
    runs = 15_000
    hits_x = simulate_event(H_X, runs, seed=300, noise="auto")
    hits_neighbour = simulate_event(H_NEIGHBOUR, runs, seed=400, noise="auto")
    for hits, low_count in ((hits_x, 3), (hits_neighbour, 4)):
        exact = exact_discrete_event_probability(low_count)
        assert stats.binomtest(hits, runs, exact).pvalue > 1e-9, (hits / runs, exact)
    factor = math.exp(4 * EPSILON)
    assert not dp_refuted(hits_x, hits_neighbour, runs, factor)
    assert not dp_refuted(hits_neighbour, hits_x, runs, factor)
    ratio = exact_discrete_event_probability(3) / exact_discrete_event_probability(4)
    assert 1 < ratio <= factor


def test_fractional_queries_take_continuous_release_noise_or_are_refused():
    """A query with fractional values has a fractional count (4.25 here): under "auto" its
    comparison still takes OpenDP's integer noise, and its release, only, numpy's continuous
    Laplace of the same scale from the generator; "discrete" refuses it before any draw, and
    "continuous" draws everything from the generator."""
    n, epsilon = 10, 0.5
    h, row = np.array([0.3, 0.7]), np.array([0.25, 0.5])  # count 0.25 * 3 + 0.5 * 7 = 4.25
    rng, replay = np.random.default_rng(5), np.random.default_rng(5)
    # A threshold 1,000 below every count: at noise scales of tens, no comparison falls under it (p < 1e-20).
    mechanism = ThresholdK(h, threshold=-1000.0, epsilon=epsilon, k=2, n=n, rng=rng)
    value = mechanism.answer(row)
    assert value * n == pytest.approx(4.25 + replay.laplace(0.0, 1 / epsilon), abs=1e-9)
    assert rng.bit_generator.state == replay.bit_generator.state  # one draw: the release
    whole = mechanism.answer(LOW)  # a 0/1 query again: integer noise, nothing from the generator
    assert abs(whole * n - round(whole * n)) < 1e-9 and rng.bit_generator.state == replay.bit_generator.state

    rng = np.random.default_rng(5)
    strict = ThresholdK(h, threshold=-1000.0, epsilon=epsilon, k=2, n=n, rng=rng, noise="discrete")
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="^query: noise='discrete' needs 0/1 queries"):
        strict.answer(row)
    assert strict.transcript == () and rng.bit_generator.state == state
    assert strict.answer(LOW) is not BOTTOM

    continuous = ThresholdK(h, threshold=-1.0, epsilon=epsilon, k=2, n=n, rng=7, noise="continuous")
    again = ThresholdK(h, threshold=-1.0, epsilon=epsilon, k=2, n=n, rng=7, noise="continuous")
    assert not continuous.noise.discrete
    assert [continuous.answer(row), continuous.answer(LOW)] == [again.answer(row), again.answer(LOW)]


def test_seeded_continuous_noise_reproduces_and_discrete_noise_does_not_depend_on_the_seed():
    """``noise="continuous"``: the same seed, the same transcript. The default draws from OpenDP
    (a cryptographically secure generator no seed drives), so the generator is left untouched."""
    h, queries = np.array([0.2, 0.8]), [LOW, ALL, LOW, ALL, LOW, ALL]  # 30 scales below, 30 above

    def session(noise: str, rng: np.random.Generator) -> tuple:
        mechanism = ThresholdK(h, threshold=0.5, epsilon=1.0, k=3, n=100, rng=rng, noise=noise)
        return tuple(mechanism.answer(query) for query in queries)

    assert session("continuous", np.random.default_rng(7)) == session("continuous", np.random.default_rng(7))
    rng = np.random.default_rng(7)
    state = rng.bit_generator.state
    transcript = session("auto", rng)
    assert rng.bit_generator.state == state and sum(entry is not BOTTOM for entry in transcript) == 3


def test_any_k_is_taken_without_work_but_an_overflowing_guarantee_is_refused():
    """No loop runs over k (the inquirer's queries drive the copies): a billion copies cost
    nothing until used. A k whose guarantee 4 k epsilon overflows a float is refused, naming k,
    before the data is read; so is an epsilon whose noise cannot be drawn, naming epsilon."""
    mechanism = ThresholdK(np.array([0.3, 0.7]), 0.5, 1.0, k=10**9, n=10)
    assert mechanism.remaining == 10**9 and mechanism.privacy == PureDP(4e9)

    class Unreadable:
        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    for k, epsilon in [(10**308, 1.0), (10**300, 1e10)]:
        with pytest.raises(ValueError, match="^k: k = .* copies make the guarantee 4 k epsilon overflow"):
            ThresholdK(Unreadable(), 0.5, epsilon, k=k, n=10)
    # An epsilon whose exact noise (scale 1/epsilon = 1e14 counts) the integer sampler cannot draw
    # as stated (projmech.privacy._noise refuses it) is refused naming epsilon, before the data is read;
    # continuous noise has room for it.
    with pytest.raises(ValueError, match="^epsilon: 1e-14 sets noise that cannot be drawn as stated"):
        ThresholdK(Unreadable(), 0.5, 1e-14, k=1, n=10)
    assert ThresholdK(np.array([0.3, 0.7]), 0.5, 1e-14, k=1, n=10, noise="continuous").noise.scale == 1e14


# --------------------------------------------------------------------------------------------
# Queries given as predicates, private state
# --------------------------------------------------------------------------------------------

DOMAIN = Domain(["age", "sex"], [3, 2])


def small_dataset() -> Dataset:
    records = np.array([[0, 0], [1, 1], [2, 1], [2, 0], [1, 1], [0, 1], [2, 1], [1, 0]])
    return Dataset(records, DOMAIN)


def test_predicate_queries_match_their_rows():
    data = small_dataset()
    predicate = lambda x: (x["age"] >= 1) & (x["sex"] == 1)  # noqa: E731
    # Row-major universe: index = age * 2 + sex.
    row = np.array([0, 0, 0, 1, 0, 1], dtype=float)
    by_predicate = ThresholdK(data, 0.2, 2.0, k=3, rng=5, noise="continuous")
    by_row = ThresholdK(data, 0.2, 2.0, k=3, rng=5, noise="continuous")
    for _ in range(3):
        assert by_predicate.answer(predicate) == by_row.answer(row)
    assert by_predicate.transcript == by_row.transcript


def test_private_state_is_not_exposed():
    mechanism = ThresholdK(np.array([0.3, 0.7]), 0.5, 1.0, k=2, n=100, rng=0)
    mechanism.answer(LOW)
    noisy_threshold = mechanism._engine._noisy_threshold
    public = [getattr(mechanism, name) for name in dir(mechanism) if not name.startswith("_")]
    for value in public:
        if callable(value):
            continue
        assert not (isinstance(value, float) and value == noisy_threshold)
        assert not isinstance(value, np.ndarray)  # neither the histogram nor anything over it
    assert all(entry is BOTTOM or type(entry) is float for entry in mechanism.transcript)
    assert repr(BOTTOM) == str(BOTTOM) == "⊥"


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": "1"}, TypeError, "epsilon"),
        ({"threshold": float("nan")}, ValueError, "threshold"),
        ({"threshold": None}, TypeError, "threshold"),
        ({"k": 0}, ValueError, "k"),
        ({"k": 2.5}, TypeError, "k"),
        ({"rng": np.random.RandomState(0)}, TypeError, "rng"),
        ({"rng": 1.5}, TypeError, "rng"),
        ({"n": None}, ValueError, "n"),
        ({"n": 0}, ValueError, "n"),
        ({"neighbouring": "swap"}, ValueError, "neighbouring"),
        ({"data_or_histogram": np.array([0.5, 0.6])}, ValueError, "histogram"),
        ({"data_or_histogram": np.array([1.5, -0.5])}, ValueError, "histogram"),
        ({"max_universe": 1}, ValueError, "max_universe"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs, error, match):
    arguments = {"data_or_histogram": np.array([0.3, 0.7]), "threshold": 0.5, "epsilon": 1.0, "k": 2, "n": 10}
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        ThresholdK(**arguments)


@pytest.mark.parametrize(
    "query, error, match",
    [
        (np.array([1.0, 0.0, 0.0]), ValueError, "query: expected 2 values"),
        (np.array([1.5, 0.0]), ValueError, r"query: values must lie in \[0, 1\]"),
        (np.array([-0.1, 0.0]), ValueError, r"query: values must lie in \[0, 1\]"),
        (np.array([np.nan, 0.0]), ValueError, "query: contains NaN"),
        ("abc", TypeError, "query"),
        (lambda x: x, TypeError, "query: a predicate needs the data as a Dataset"),
    ],
)
def test_bad_queries_raise_before_any_noise(query, error, match):
    rng = np.random.default_rng(0)
    mechanism = ThresholdK(np.array([0.3, 0.7]), 0.5, 1.0, k=2, n=10, rng=rng)
    state = rng.bit_generator.state
    with pytest.raises(error, match=match):
        mechanism.answer(query)
    assert rng.bit_generator.state == state and mechanism.transcript == ()


def test_bad_predicates_raise_naming_the_query():
    mechanism = ThresholdK(small_dataset(), 0.5, 1.0, k=1, rng=0)
    with pytest.raises(ValueError, match="query: invalid predicate"):
        mechanism.answer(lambda x: 2.0 * (x["age"] >= 0))
    assert mechanism.neighbouring is Neighbouring.REPLACE_ONE and mechanism.n == 8


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"noise": "exact"}, ValueError, "noise"),
        ({"noise": None}, TypeError, "noise"),
        ({"max_universe": 2.0}, TypeError, "max_universe"),
        ({"rng": True}, TypeError, "rng"),
        ({"size": 5}, ValueError, "size"),  # replace-one: n is public, a size is refused
    ],
)
def test_constructor_refuses_bad_options_before_the_data_is_read(kwargs, error, match):
    class Unreadable:
        """Data whose first use would raise: the constructor must fail before touching it."""

        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    for make in (lambda **extra: ThresholdK(Unreadable(), 0.5, 1.0, 2, n=10, **extra),
                 lambda **extra: Threshold(Unreadable(), 0.5, 1.0, n=10, **extra)):
        with pytest.raises(error, match=f"^{match}: "):
            make(**kwargs)


def test_options_are_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        ThresholdK(np.array([0.3, 0.7]), 0.5, 1.0, 2, 10)
    with pytest.raises(TypeError, match="positional"):
        Threshold(np.array([0.3, 0.7]), 0.5, 1.0, 10)
    assert Threshold(np.array([0.3, 0.7]), 0.5, 1.0, n=10, rng=0).n == 10


def test_sparse_vector_imports_no_solver():
    """The interactive mechanisms need numpy and the data layer, never CVXPY or a mechanism
    module: the modules sparse_vector imports, transitively within projmech, are listed."""
    import ast
    from pathlib import Path

    import projmech

    root = Path(projmech.__file__).parent
    seen, pending, external = set(), ["mechanisms._sparse_vector"], set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        path = root / (module.replace(".", "/") + ".py")
        package = module.split(".")[:-1]
        if not path.exists():
            path = root / module.replace(".", "/") / "__init__.py"
            package = module.split(".")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                base = package[:len(package) - (node.level - 1)]
                if node.module:
                    pending.append(".".join([*base, node.module]))
                else:
                    pending.extend(".".join([*base, alias.name]) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                external.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                external |= {alias.name.split(".")[0] for alias in node.names}
    assert "cvxpy" not in external
    assert not seen & {"mechanisms._additive", "bodies", "mechanisms.multiplicative_weights"}, sorted(seen)
    # Run, through its package's __init__: still no solver.
    import subprocess
    import sys

    code = "import sys, projmech.mechanisms._sparse_vector; assert 'cvxpy' not in sys.modules, 'cvxpy'"
    subprocess.run([sys.executable, "-c", code], check=True)
