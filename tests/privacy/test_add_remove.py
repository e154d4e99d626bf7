"""Add/remove neighbours: nothing released depends on the private row count.

Under add/remove the row count is private. Every mechanism measures counts (whose sensitivity
does not involve it) and divides by a size that is either declared public or estimated privately;
these tests check that the released size, noise scales and summaries are the same for data sets of
different sizes, that the answers are the counts divided by the declared size (computed here by
hand), that the size estimate has the stated distribution, and that no mechanism runs under
add/remove without a size policy.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import projmech as pm
from oracles import marginal_truth
from projmech.privacy import DEFAULT_SIZE_SHARE, SizePolicy

DOMAIN = pm.Domain(["a", "b"], [2, 3])


def data_of(n: int, seed: int = 0) -> pm.Dataset:
    rng = np.random.default_rng(seed)
    return pm.Dataset(np.column_stack([rng.integers(0, s, size=n) for s in DOMAIN.sizes]), DOMAIN)


def counts_by_hand(data: pm.Dataset, labels) -> np.ndarray:
    return marginal_truth(dict(zip(DOMAIN.attributes, data.records.T)), labels, normalize=False)


GAUSSIAN_PRIVACY, PURE_PRIVACY = pm.ZCDP(0.5), pm.PureDP(1.0)


def make_all(size, privacy_gaussian=GAUSSIAN_PRIVACY, privacy_pure=PURE_PRIVACY):
    workload = pm.marginals(DOMAIN, 1)
    kwargs = {"neighbouring": "add-remove", "size": size}
    return {
        "gaussian": pm.GaussianMechanism(workload, privacy_gaussian, **kwargs),
        "laplace": pm.LaplaceMechanism(workload, privacy_pure, **kwargs),
        "projection": pm.ProjectionMechanism(workload, privacy_gaussian, **kwargs),
        "factorization": pm.FactorizationMechanism(workload, privacy_gaussian, **kwargs),
        "offline_pmw": pm.OfflinePMW(workload, privacy_pure, rounds=2, **kwargs),
    }


@pytest.mark.parametrize("name", ["gaussian", "laplace", "projection", "factorization", "offline_pmw"])
def test_declared_size_releases_do_not_depend_on_the_row_count(name):
    """Data sets of 7 and 8 rows: the same size, noise and sensitivity in every release field
    except the answers; the summaries differ only in the solver statistics of the projection."""
    mechanism = make_all(100)[name]
    small, large = data_of(7), pm.Dataset(np.vstack([data_of(7).records, [[1, 2]]]), DOMAIN)
    first, second = mechanism.release(small, rng=1), mechanism.release(large, rng=1)
    for release in (first, second):
        assert release.size == 100 and release.size_source == "declared"
        assert release.size_noise is None
    assert first.noise == second.noise and first.sensitivity == second.sensitivity
    def strip(summary):
        return {key: value for key, value in summary.items() if key not in ("solver", "body")}

    assert strip(first.summary()) == strip(second.summary())
    # No field anywhere in the summary (nested ones included) holds the row count 7 or 8.
    def leaves(value):
        if isinstance(value, dict):
            for item in value.values():
                yield from leaves(item)
        elif isinstance(value, list):
            for item in value:
                yield from leaves(item)
        else:
            yield value
    for release in (first, second):
        summary = json.loads(release.to_json())
        if "solver" in summary:
            del summary["solver"]  # solver statistics depend on the noisy answers, not on n
        assert not any(isinstance(v, (int, float)) and not isinstance(v, bool) and v in (7, 8)
                       for v in leaves(summary))


@pytest.mark.parametrize("name", ["gaussian", "laplace", "projection", "factorization"])
def test_declared_size_answers_are_counts_over_the_declared_size(name):
    """With negligible noise the answers are the true counts divided by the declared size, not by
    the row count (here 7 rows, size 20: answers summing to 7/20 per table)."""
    quiet = make_all(20, pm.ZCDP(1e14), pm.PureDP(1e14))[name]
    data = data_of(7)
    released = quiet.release(data, rng=0)
    expected = counts_by_hand(data, quiet.workload.labels) / 20
    if name == "projection":
        # The answers are projected onto K_Q, whose points are fractions summing to 1 per table:
        # the noisy answers (7/20 per table) are what the counts give.
        np.testing.assert_allclose(released.noisy_answers, expected, atol=1e-9)
        assert released.answers[:2].sum() == pytest.approx(1.0)
    else:
        np.testing.assert_allclose(released.answers, expected, atol=1e-9)


def test_replace_one_divides_by_the_public_n():
    data = data_of(9)
    quiet = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1e14))
    released = quiet.release(data, rng=0)
    assert released.size == 9 and released.size_source == "public n"
    np.testing.assert_allclose(released.answers, counts_by_hand(data, quiet.workload.labels) / 9, atol=1e-12)


@pytest.mark.parametrize("privacy,distribution", [(pm.ZCDP(0.5), "gaussian"), (pm.PureDP(1.0), "laplace")])
def test_estimated_size_has_the_stated_distribution(privacy, distribution):
    workload = pm.marginals(DOMAIN, 1)
    factory = pm.GaussianMechanism if distribution == "gaussian" else pm.LaplaceMechanism
    mechanism = factory(workload, privacy, neighbouring="add-remove", size="estimate", noise="continuous")
    data = data_of(400)
    sizes = np.array([mechanism.release(data, rng=seed).size for seed in range(3000)])
    noise = mechanism.size_noise
    # The size estimate gets DEFAULT_SIZE_SHARE of the budget; its count has sensitivity 1.
    if distribution == "gaussian":
        assert noise.scale == pytest.approx(1 / math.sqrt(2 * DEFAULT_SIZE_SHARE * privacy.rho), rel=1e-12)
        assert stats.kstest((sizes - 400) / noise.scale, "norm").pvalue > 1e-4
    else:
        assert noise.scale == pytest.approx(1 / (DEFAULT_SIZE_SHARE * privacy.epsilon), rel=1e-12)
        assert stats.kstest(sizes - 400, "laplace", args=(0, noise.scale)).pvalue > 1e-4
    # The answers' own noise has the rest of the budget.
    if distribution == "gaussian":
        expected = workload.sensitivity() / math.sqrt(2 * (1 - DEFAULT_SIZE_SHARE) * privacy.rho)
    else:
        expected = workload.column_norm(1) / ((1 - DEFAULT_SIZE_SHARE) * privacy.epsilon)
    assert mechanism.noise.scale == pytest.approx(expected, rel=1e-12)


def test_estimated_size_is_at_least_one():
    mechanism = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1e-4), neighbouring="add-remove",
                                     size="estimate", noise="continuous")
    sizes = [mechanism.release(data_of(1), rng=seed).size for seed in range(200)]
    assert min(sizes) == 1.0 and max(sizes) > 1.0


def test_estimated_size_share():
    mechanism = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(0.5), neighbouring="add-remove",
                                     size="estimate", size_share=0.5)
    assert mechanism.size_noise.scale == pytest.approx(1 / math.sqrt(2 * 0.25), rel=1e-12)
    release = mechanism.release(data_of(30))
    assert release.size_source == "estimated" and release.summary()["size_noise"]["distribution"] == "discrete_gaussian"


INTERACTIVE = {
    "threshold": lambda data, **kw: pm.Threshold(data, threshold=0.5, epsilon=0.5, rng=0, **kw),
    "threshold_k": lambda data, **kw: pm.ThresholdK(data, threshold=0.5, epsilon=0.5, k=2, rng=0, **kw),
    "online_pmw": lambda data, **kw: pm.OnlinePMW(data, alpha=0.25, epsilon=0.5, k=2, rng=0, **kw),
}


@pytest.mark.parametrize("name", list(INTERACTIVE))
def test_interactive_mechanisms_under_add_remove(name):
    data = data_of(50)
    with pytest.raises(ValueError, match="size"):
        INTERACTIVE[name](data, neighbouring="add-remove")
    declared = INTERACTIVE[name](data, neighbouring="add-remove", size=80)
    assert declared.size == 80 and declared.privacy == INTERACTIVE[name](data).privacy
    estimated = INTERACTIVE[name](data, neighbouring="add-remove", size="estimate", size_share=0.2)
    # The estimate takes a fifth of the total guarantee.
    assert estimated.privacy.epsilon == pytest.approx(declared.privacy.epsilon / 0.8, rel=1e-12)
    # The size estimate's Laplace noise takes the fifth: scale 1 / (0.2 * total epsilon).
    assert estimated.size_noise.scale == pytest.approx(1 / (0.2 * estimated.privacy.epsilon), rel=1e-12)


def test_threshold_answers_counts_over_the_declared_size():
    """A query whose count is far above the threshold: the released number is the count over the
    declared size (here 40 of 50 rows, size 200: 0.2), not over the row count (0.8)."""
    data = pm.Dataset(np.array([[0, 0]] * 40 + [[1, 0]] * 10), DOMAIN)
    mechanism = pm.Threshold(data, threshold=0.01, epsilon=1e6, rng=0, neighbouring="add-remove", size=200)
    assert mechanism.answer(lambda x: x["a"] == 0) == pytest.approx(0.2, abs=1e-4)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"neighbouring": "add-remove"}, ValueError, "size: under add-remove"),
    ({"neighbouring": "replace-one", "size": 10}, ValueError, "size: applies to add-remove"),
    ({"neighbouring": "replace-one", "size_share": 0.1}, ValueError, "size_share"),
    ({"neighbouring": "add-remove", "size": 0}, ValueError, "size: must be at least 1"),
    ({"neighbouring": "add-remove", "size": 2.5}, TypeError, "size"),
    ({"neighbouring": "add-remove", "size": True}, TypeError, "size"),
    ({"neighbouring": "add-remove", "size": "guess"}, ValueError, "size"),
    ({"neighbouring": "add-remove", "size": "estimate", "size_share": 1.0}, ValueError, "size_share"),
    ({"neighbouring": "add-remove", "size": "estimate", "size_share": 0.0}, ValueError, "size_share"),
    ({"neighbouring": "add-remove", "size": 100, "size_share": 0.1}, ValueError, "size_share"),
])
@pytest.mark.parametrize("factory", [
    lambda **kw: pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1.0), **kw),
    lambda **kw: pm.LaplaceMechanism(pm.marginals(DOMAIN, 1), pm.PureDP(1.0), **kw),
    lambda **kw: pm.ProjectionMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1.0), **kw),
    lambda **kw: pm.FactorizationMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1.0), **kw),
    lambda **kw: pm.OfflinePMW(pm.marginals(DOMAIN, 1), pm.PureDP(1.0), rounds=2, **kw),
], ids=["gaussian", "laplace", "projection", "factorization", "offline_pmw"])
def test_size_policy_is_validated_at_construction(factory, kwargs, error, match):
    with pytest.raises(error, match=match):
        factory(**kwargs)


def test_size_policy_sources():
    assert SizePolicy.parse("replace-one", None).source == "public n"
    assert SizePolicy.parse("add-remove", 10).source == "declared"
    policy = SizePolicy.parse("add-remove", "estimate")
    assert policy.source == "estimated" and policy.share == DEFAULT_SIZE_SHARE and policy.main_share() == 0.95


def test_histogram_under_add_remove_uses_n_only_for_counts():
    """A histogram's n turns it into counts; the answers are still over the declared size."""
    quiet = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1e14), neighbouring="add-remove", size=10)
    h = np.array([2, 0, 1, 1, 0, 1]) / 5
    released = quiet.release(h, n=5, rng=0)
    expected = pm.marginals(DOMAIN, 1).toarray() @ (5 * h) / 10
    np.testing.assert_allclose(released.answers, expected, atol=1e-9)
    assert released.size == 10


@pytest.mark.parametrize("factory", [
    lambda: pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1.0), neighbouring="add-remove", size=10),
    lambda: pm.OfflinePMW(pm.marginals(DOMAIN, 1), pm.PureDP(1.0), rounds=2, neighbouring="add-remove", size=10),
], ids=["gaussian", "offline_pmw"])
def test_n_beside_a_dataset_is_refused_under_add_remove_before_reading_it(factory):
    """Comparing a given n with the private row count would reveal whether the guess is right:
    refused whatever n is, with a message that does not hold the row count."""
    data = data_of(37)
    for guess in (36, 37):
        with pytest.raises(ValueError, match="n: under add-remove") as error:
            factory().release(data, n=guess, rng=0)
        assert "37 rows" not in str(error.value)
    with pytest.raises(ValueError, match="n: under add-remove"):
        pm.Threshold(data, threshold=0.5, epsilon=1.0, n=37, neighbouring="add-remove", size=10)


def test_empty_data_under_add_remove():
    """No rows: the neighbour of every one-row data set, released with a declared size; under
    replace-one refused (n is public and divides the counts)."""
    empty = pm.Dataset(np.zeros((0, 2), dtype=np.int64), DOMAIN)
    quiet = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1e14), neighbouring="add-remove", size=10)
    np.testing.assert_allclose(quiet.release(empty, rng=0).answers, 0.0, atol=1e-9)
    estimated = pm.LaplaceMechanism(pm.marginals(DOMAIN, 1), pm.PureDP(1.0), neighbouring="add-remove", size="estimate")
    assert estimated.release(empty).size >= 1.0
    with pytest.raises(ValueError, match="no rows"):
        pm.GaussianMechanism(pm.marginals(DOMAIN, 1), pm.ZCDP(1.0)).release(empty)


def large_delta_warnings(release) -> list[str]:
    """The LargeDeltaWarning messages that ``release()`` emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release()
    return [str(w.message) for w in caught if issubclass(w.category, pm.LargeDeltaWarning)]


@pytest.mark.parametrize("kind", [pm.GaussianMechanism, pm.ProjectionMechanism, pm.FactorizationMechanism])
def test_a_delta_of_at_least_one_over_a_public_size_warns_at_release(kind):
    """delta >= 1/n allows releasing a row outright. The warning compares delta with a public size
    only: the row count under replace-one, the declared size under add/remove; never the private
    row count under add/remove (whether it warned would tell about it)."""
    workload = pm.marginals(DOMAIN, 1)
    privacy = pm.ApproxDP(1.0, 1e-3)  # the largest delta accepted in silence at construction
    replace_one = kind(workload, privacy)
    assert large_delta_warnings(lambda: replace_one.release(data_of(999))) == []
    [message] = large_delta_warnings(lambda: replace_one.release(data_of(1000)))  # delta = 1/1000
    assert message.startswith("delta: 0.001 is at least 1/n for the public size n = 1000 (public n)")
    assert "total failure of privacy" in message and "1/n^2 = 1e-06" in message
    declared = kind(workload, privacy, neighbouring="add-remove", size=1000)
    assert len(large_delta_warnings(lambda: declared.release(data_of(10)))) == 1  # the declared size counts
    small = kind(workload, privacy, neighbouring="add-remove", size=999)
    assert large_delta_warnings(lambda: small.release(data_of(5000))) == []  # the rows are private
    estimated = kind(workload, privacy, neighbouring="add-remove", size="estimate")
    assert large_delta_warnings(lambda: estimated.release(data_of(5000))) == []


def test_the_audited_large_delta_warns_at_construction_and_at_release():
    """ApproxDP(1, 0.5) on 4 rows was accepted in silence."""
    with pytest.warns(pm.LargeDeltaWarning, match="^delta: 0.5 is above 0.001"):
        privacy = pm.ApproxDP(1.0, 0.5)
    mechanism = pm.GaussianMechanism(pm.marginals(DOMAIN, 1), privacy)
    [message] = large_delta_warnings(lambda: mechanism.release(data_of(4)))
    assert "n = 4" in message and "1/n = 0.25, e.g. 1/n^2 = 0.0625 or less" in message
