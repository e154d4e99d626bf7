"""The BudgetWarning: given before anything is spent where the noise swamps the typical table's
counts, not given where it does not, and stating a least budget that the closed-form calibration
confirms (the criterion: ``sigma > n / cells`` in at least half of the tables, see the guide's
page on the adaptive mechanism)."""

import itertools
import math
import pickle
import re
import statistics
import warnings

import numpy as np
import pytest

import projmech as pm
from projmech.mechanisms import BudgetWarning

#: The adaptive mechanism's schedule, as its guide states it: 16 notional rounds per attribute,
#: nine tenths of a round's budget to its measurement.
ROUNDS_PER_ATTRIBUTE, MEASUREMENT_SHARE = 16, 0.9


class _FirstRound(Exception):
    """Raised by a progress callback: the run stops after its first measurement."""


def _stop(number, latest, spent):
    raise _FirstRound


def _budget_warnings(call):
    """The BudgetWarnings that ``call()`` gives (a run stopped at its first round counts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except _FirstRound:
            pass
    return [w for w in caught if issubclass(w.category, BudgetWarning)]


def _stated(message: str, name: str) -> float:
    return float(re.search(rf"; {name} = ([0-9.e+-]+)", message).group(1))


@pytest.fixture(scope="module")
def adult():
    return pm.datasets.adult()


def _pair_cells(sizes) -> int:
    """The typical 2-way table's cells: the upper median over pairs of attributes (at least half
    of the tables are at least as large)."""
    return statistics.median_high([a * b for a, b in itertools.combinations(sizes, 2)])


# --------------------------------------------------------------------------------------------
# When it fires, and that it fires before anything is spent
# --------------------------------------------------------------------------------------------


def test_fires_on_a_few_hundred_rows_at_epsilon_0_1_before_anything_is_spent(adult):
    small = adult.subsample(300, 0)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    rounds = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        with pytest.raises(BudgetWarning) as info:
            pm.synthesize(small, pm.ApproxDP(0.1, 1e-9), rng=rng, progress=lambda *args: rounds.append(args))
    assert rounds == [] and rng.bit_generator.state == state  # no round ran, nothing was drawn
    message = str(info.value)
    assert message.startswith("epsilon: (0.1, 1e-09)-DP leaves the measured counts little signal")
    # 14 attributes: 91 pairs; AIM's 224 notional rounds would draw noise above n / 16, so the
    # schedule takes the fewest, ceil(0.9 * 14 + 1) = 14; n = 300 rows, private under add/remove,
    # so stated to two digits (312 rows would read the same).
    assert "of the 91 2-way tables" in message and "(14 notional rounds)" in message
    assert f"n / cells = about 300 / {_pair_cells(adult.domain.sizes)})" in message
    assert "the row count, private under add-remove neighbours (n = about 300)" in message
    assert "not part of the release" in message and "\n" not in message


def test_does_not_fire_on_adult_at_epsilon_1_or_10_and_fires_at_0_1(adult):
    def first_round(epsilon):
        return _budget_warnings(lambda: pm.synthesize(adult, pm.ApproxDP(epsilon, 1e-9), rng=0, progress=_stop))

    assert first_round(1.0) == [] and first_round(10.0) == []
    fired = first_round(0.1)
    assert len(fired) == 1 and fired[0].filename == __file__  # at the user's call, past projmech's frames
    assert 0.1 < _stated(str(fired[0].message), "epsilon") < 1.0


# --------------------------------------------------------------------------------------------
# The least budget stated, against the calibration in closed form
# --------------------------------------------------------------------------------------------


def _adaptive(data, privacy, **options):
    return pm.AdaptiveProjectionMechanism(pm.marginals(data.domain, 3), privacy, noise="continuous", **options)


def test_the_least_rho_is_the_closed_form_of_the_first_rounds_sigma(adult):
    """Replace-one: sigma^2 = Delta^2 / (2 rho_round), Delta^2 = 2, rho_round = 0.9 rho / (16 d);
    sigma = n / c for the typical pair's c gives rho* = 2 * 16 d c^2 / (2 * 0.9 n^2)."""
    attributes = ["age", "workclass", "education-num", "marital-status", "race", "sex"]
    data = pm.datasets.adult(attributes=attributes).subsample(2000, 1)
    d, n, c = len(attributes), data.n, _pair_cells(data.domain.sizes)
    least = 2.0 * ROUNDS_PER_ATTRIBUTE * d * c**2 / (2.0 * MEASUREMENT_SHARE * n**2)

    def fired(rho):
        return _budget_warnings(lambda: _adaptive(data, pm.ZCDP(rho), neighbouring="replace-one").run(
            data, rng=0, progress=_stop))

    [warning] = fired(least / 10)
    stated = _stated(str(warning.message), "rho")
    assert least <= stated <= least * 1.01  # rounded up to three digits
    assert "public under replace-one neighbours" in str(warning.message)
    assert fired(stated) == [] and len(fired(least * 0.99)) == 1


@pytest.mark.parametrize("size", [2, 4])
def test_the_least_rho_of_small_tables_is_at_the_fewest_rounds(size):
    """Pairs of 4 or 16 cells (c <= 16): below the budget at which 16 d rounds' noise reaches n / 16 the
    schedule takes fewer rounds, whose noise stays at most n / 16 <= n / c, so the noise first reaches
    n / c at the fewest rounds, ceil(0.9 d + 1): rho* = 2 T c^2 / (2 * 0.9 n^2)."""
    domain = pm.Domain([f"a{i}" for i in range(6)], [size] * 6)
    data = pm.Dataset(np.random.default_rng(3).integers(0, size, size=(2000, 6)), domain)
    d, n, c = 6, data.n, _pair_cells(domain.sizes)
    fewest = math.ceil(0.9 * d + 1)
    least = 2.0 * fewest * c**2 / (2.0 * MEASUREMENT_SHARE * n**2)

    def fired(rho):
        return _budget_warnings(lambda: _adaptive(data, pm.ZCDP(rho), neighbouring="replace-one").run(
            data, rng=0, progress=_stop))

    [warning] = fired(least / 10)
    stated = _stated(str(warning.message), "rho")
    assert c == size**2 and least <= stated <= least * 1.01
    assert fired(stated) == [] and len(fired(least * 0.99)) == 1
    assert least < ROUNDS_PER_ATTRIBUTE * d * c**2 / (MEASUREMENT_SHARE * n**2) / 10  # far below AIM's rounds' rho*


def test_the_least_epsilon_meets_the_criterion_by_the_calibration_by_hand(adult):
    """Add/remove with the size estimated: Delta = 1 and the rounds get (1 - 0.05) of rho, the rho
    of (epsilon, delta) by the zCDP conversion."""
    attributes = ["workclass", "education-num", "marital-status", "relationship", "race", "sex", "income>50K"]
    data = pm.datasets.adult(attributes=attributes).subsample(3000, 2)
    d, n, c = len(attributes), data.n, _pair_cells(data.domain.sizes)
    delta = 1e-9

    def sigma(epsilon):
        rho = pm.privacy.zcdp_for_approx_dp(pm.ApproxDP(epsilon, delta)) * (1.0 - 0.05)
        return math.sqrt(ROUNDS_PER_ATTRIBUTE * d / (2.0 * MEASUREMENT_SHARE * rho))

    mechanism = _adaptive(data, pm.ApproxDP(0.05, delta), neighbouring="add-remove", size="estimate")
    assert mechanism.noise.scale == pytest.approx(sigma(0.05), rel=1e-12)
    [warning] = _budget_warnings(lambda: mechanism.run(data, rng=0, progress=_stop))
    stated = _stated(str(warning.message), "epsilon")
    assert f"(at delta {delta:g})" in str(warning.message)
    assert sigma(stated) <= n / c < sigma(stated * 0.99)


@pytest.mark.parametrize("neighbouring, delta2", [("replace-one", 2.0), ("add-remove", 1.0)])
def test_the_gaussian_mechanisms_least_rho_is_the_closed_form(neighbouring, delta2):
    """T tables of 2-way marginals: a row moves one cell of each, so Delta^2 = 2 T (replace-one) or
    T (add/remove); sigma = Delta / sqrt(2 rho) = n / c gives rho* = Delta^2 c^2 / (2 n^2)."""
    domain = pm.Domain(["a", "b", "c", "d"], [2, 3, 4, 5])
    data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(200, 4)), domain)
    workload = pm.marginals(domain, 2)
    tables, c = 6, _pair_cells(domain.sizes)  # pairs' cells 6, 8, 10, 12, 15, 20: the upper median 12
    least = delta2 * tables * c**2 / (2.0 * data.n**2)
    size = {"size": 200} if neighbouring == "add-remove" else {}

    def fired(rho):
        mechanism = pm.GaussianMechanism(workload, pm.ZCDP(rho), neighbouring=neighbouring, noise="continuous", **size)
        return _budget_warnings(lambda: mechanism.release(data, rng=0))

    [warning] = fired(least / 4)
    stated = _stated(str(warning.message), "rho")
    assert least <= stated <= least * 1.01
    # At rho* / 4 sigma is twice the typical table's mean count: every table above 6 cells is swamped.
    assert "in 5 of the 6 tables of the workload" in str(warning.message)
    assert fired(stated) == [] and len(fired(least * 0.99)) == 1


def test_the_laplace_mechanisms_least_epsilon_is_the_closed_form():
    """Replace-one moves two counts of each of the T tables: Delta_1 = 2 T, std sqrt(2) Delta_1 / epsilon."""
    domain = pm.Domain(["a", "b", "c"], [4, 4, 4])
    data = pm.Dataset(np.random.default_rng(1).integers(0, 4, size=(500, 3)), domain)
    workload = pm.marginals(domain, 2)
    least = math.sqrt(2.0) * 2 * 3 / (data.n / 16)

    def fired(epsilon):
        mechanism = pm.LaplaceMechanism(workload, pm.PureDP(epsilon), noise="continuous")
        return _budget_warnings(lambda: mechanism.release(data, rng=0))

    [warning] = fired(least / 3)
    stated = _stated(str(warning.message), "epsilon")
    assert least <= stated <= least * 1.01
    assert fired(stated) == [] and len(fired(least * 0.99)) == 1


def test_a_workload_of_queries_compares_their_counts_on_uniform_data():
    """Prefix queries over 10 values answer 1/10 .. 10/10 of uniform data: the lower median 5/10."""
    workload = pm.prefix(10)
    histogram = np.eye(10)[0]  # 40 rows at the first value
    sigma = 40 * 0.5 * 1.01  # just above the typical query's count, 20
    rho = workload.count_sensitivity("replace-one") ** 2 / (2 * sigma**2)
    [warning] = _budget_warnings(lambda: pm.GaussianMechanism(workload, pm.ZCDP(rho), noise="continuous").release(
        histogram, n=40, rng=0))
    assert "in 5 of the 10 queries of the workload" in str(warning.message)


# --------------------------------------------------------------------------------------------
# Privacy: what it reads, and that nothing released depends on it
# --------------------------------------------------------------------------------------------


def test_nothing_released_depends_on_it():
    domain = pm.Domain(["a", "b", "c"], [4, 4, 4])
    data = pm.Dataset(np.random.default_rng(0).integers(0, 4, size=(100, 3)), domain)
    mechanism = pm.GaussianMechanism(pm.marginals(domain, 3), pm.ZCDP(0.01), noise="continuous")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetWarning)
        quiet = mechanism.release(data, rng=5)
    assert len(_budget_warnings(lambda: mechanism.release(data, rng=5))) == 1
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        warned = mechanism.release(data, rng=5)
    assert np.array_equal(quiet.answers, warned.answers) and quiet.to_json() == warned.to_json()
    assert "BudgetWarning" not in warned.to_json() and "signal" not in warned.to_json()


def test_a_declared_size_is_read_instead_of_the_private_row_count():
    """Under add/remove with a declared size the warning is a function of public values alone:
    the same for 50 rows as for 5,000."""
    domain = pm.Domain(["a", "b"], [5, 5])
    generator = np.random.default_rng(3)
    few, many = (pm.Dataset(generator.integers(0, 5, size=(rows, 2)), domain) for rows in (50, 5000))
    mechanism = pm.GaussianMechanism(pm.marginals(domain, 2), pm.ZCDP(0.02), neighbouring="add-remove", size=100,
                                     noise="continuous")
    messages = [[str(w.message) for w in _budget_warnings(lambda data=data: mechanism.release(data, rng=0))]
                for data in (few, many)]
    assert messages[0] == messages[1] and len(messages[0]) == 1
    assert "reads the declared size (n = 100)" in messages[0][0]


def test_the_mechanism_carries_no_row_count_after_warning():
    """The messages are kept beside the mechanism, not in it: its pickle is the same before and
    after a release whose warning read the private row count."""
    domain = pm.Domain(["a", "b"], [5, 5])
    data = pm.Dataset(np.random.default_rng(4).integers(0, 5, size=(37, 2)), domain)
    mechanism = pm.GaussianMechanism(pm.marginals(domain, 2), pm.ZCDP(0.01), neighbouring="add-remove",
                                     size="estimate", noise="continuous")
    before = pickle.dumps(mechanism)
    assert len(_budget_warnings(lambda: mechanism.release(data, rng=0))) == 1
    assert pickle.dumps(mechanism) == before


def test_a_budget_warning_raised_as_an_error_keeps_neither_the_mechanism_nor_the_data_alive():
    """The mechanisms keep the warning they computed (by row count) beside them; warned as an
    error, a kept instance would carry the traceback, whose frames hold the mechanism and the data."""
    import gc
    import weakref

    domain = pm.Domain(["a", "b", "c"], [4, 4, 4])
    data = pm.Dataset(np.random.default_rng(0).integers(0, 4, size=(100, 3)), domain)
    mechanism = pm.GaussianMechanism(pm.marginals(domain, 3), pm.ZCDP(0.01), noise="continuous")
    alive = weakref.ref(mechanism), weakref.ref(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        for _ in range(3):
            with pytest.raises(BudgetWarning):
                mechanism.release(data, rng=0)
    del mechanism, data
    gc.collect()
    assert [ref() for ref in alive] == [None, None]
