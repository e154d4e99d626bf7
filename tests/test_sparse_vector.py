"""The threshold mechanism Thr_t (AboveThreshold, Dwork & Roth 2014, §3.6) and its k-fold product.

Probabilities are computed independently of the code under test: the Laplace CDF from scipy and
the mechanism's halting probability by numerical integration over the noisy threshold. The
privacy test estimates an event's probability on two neighbouring data sets and checks the
per-copy guarantee ``p(x) <= e^{4 epsilon} p(x')`` with Clopper–Pearson margins; the same check is shown to reject
a variant without noise on the threshold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from projmech.data import Dataset
from projmech.domain import Domain
from projmech.privacy import Neighbouring, PureDP
from projmech.sparse_vector import BOTTOM, MechanismHalted, Threshold, ThresholdK

from conftest import laplace_difference_tail

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
    mechanism = Threshold(np.array([0.0, 1.0]), threshold=0.5, epsilon=0.7, n=1000, rng=3)
    assert mechanism.k == 1 and mechanism.privacy == PureDP(4 * 0.7)
    assert mechanism.answer(LOW) is BOTTOM
    value = mechanism.answer(ALL)
    assert isinstance(value, float) and mechanism.halted and mechanism.answered == 1
    with pytest.raises(MechanismHalted, match="halted"):
        mechanism.answer(LOW)
    # Same draws as ThresholdK with k = 1.
    twin = ThresholdK(np.array([0.0, 1.0]), threshold=0.5, epsilon=0.7, k=1, n=1000, rng=3)
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
        mechanism = Threshold(h, threshold=-1.0, epsilon=epsilon, n=n, rng=rng)  # far below: always above
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
        Threshold(np.array([value, 1 - value]), threshold, epsilon, n=n, rng=rng).answer(LOW) is not BOTTOM
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


def simulate_event(h: np.ndarray, runs: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        mechanism = Threshold(h, THRESHOLD, EPSILON, n=N_ROWS, rng=rng, neighbouring="replace-one")
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
    by_predicate = ThresholdK(data, 0.2, 2.0, k=3, rng=5)
    by_row = ThresholdK(data, 0.2, 2.0, k=3, rng=5)
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
    seen, pending, external = set(), ["sparse_vector"], set()
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
    assert not seen & {"mechanisms", "bodies", "multiplicative_weights"}, sorted(seen)
