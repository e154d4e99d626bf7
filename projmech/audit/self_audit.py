"""Audits of projmech's own mechanisms: worst-case neighbouring pairs, likelihood-ratio statistics, planted bugs.

Each :class:`AuditCase` is one mechanism under one relation on two tiny neighbouring data sets where
its calibration is tight, with the log-likelihood ratio of everything the release publishes as the
statistic. A planted bug divides every noise scale by :func:`bug_factor`, keeping the claim. Cases and
pairs: :doc:`/theory/privacy` (*Auditing*).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from ..data import Dataset, Domain
from ..factorization import Factorization, factorization_norm
from ..mechanisms import (
    BOTTOM,
    BudgetWarning,
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
    Threshold,
)
from ..mechanisms.adaptive import AdaptiveProjectionMechanism, estimate_tables, table_estimate
from ..mechanisms.multiplicative_weights import OfflinePMW
from ..mechanisms.online_pmw import OnlinePMW
from ..privacy import NOISE_KINDS, ApproxDP, Neighbouring, Noise, PureDP
from ..validation import FLAG, OPEN_UNIT, SEED, Options, validate_params
from ..workloads import Workload, identity, marginals, prefix
from ._auditor import AuditResult, audit

__all__ = ["MECHANISMS", "AuditCase", "audit_cases", "bug_factor", "run_audits"]

#: The mechanisms the suite audits, in the order of the README's table.
MECHANISMS = ("gaussian", "tiny_gaussian", "laplace", "projection", "factorization", "offline_pmw", "threshold",
              "online_pmw", "adaptive")

_MECHANISM = Options(*MECHANISMS)

#: The default claimed delta of the (epsilon, delta) mechanisms audited.
AUDIT_DELTA = 1e-5

#: The delta at which a planted bug in an (epsilon, delta) mechanism is audited by default (the
#: command line's and the benchmark's): an audit resolves epsilon at delta only through events of
#: probability well above delta, so a 2x bug shows at 1e-3 where it hides at 1e-5
#: (benchmarks/README.md).
PLANTED_BUG_DELTA = 1e-3

# Two cells: x = 0 and x = 1. Identity queries make every calibration tight: a column has norm 1
# (add/remove) and two columns differ by a vector of l2 norm sqrt(2), l1 norm 2 (replace-one).
_DOMAIN = Domain(["x"], [2])

#: The entry of the ``"tiny_gaussian"`` case's one query, ``F = [[1e-200, 0]]``: its square
#: underflows to 0 in float64, so a sensitivity computed as a plain sum of squares would be 0 (no
#: noise). The case audits that the noise is calibrated to the true sensitivity, 1e-200.
TINY_ENTRY = 1e-200


@dataclass(frozen=True)
class AuditCase:
    """One mechanism, one neighbouring relation, one pair, one statistic; built by :func:`audit_cases`.

    Parameters
    ----------
    mechanism, neighbouring
        A name from :data:`MECHANISMS`, and the relation.
    claimed_epsilon, claimed_delta
        The guarantee the mechanism states (delta 0 for pure DP).
    pair, release, statistic
        Two neighbouring data sets; ``release(data, rng) -> output``; ``statistic(output) -> float``, the
        log-likelihood ratio of the output, second data set over first (or a monotone proxy).
    bug_factor
        The planted bug's divisor of every noise scale (1: no bug).

    Examples
    --------
    >>> case = audit_cases(["laplace"], ["replace-one"], noise="continuous")[0]
    >>> case.name, case.claimed_epsilon, case.pair[0].n, case.run(releases=500, rng=0).passed
    ('laplace, replace-one', 1.0, 1, True)
    """

    mechanism: str
    neighbouring: str
    claimed_epsilon: float
    claimed_delta: float
    pair: tuple[Dataset, Dataset]
    release: Callable[[Dataset, np.random.Generator], Any]
    statistic: Callable[[Any], float]
    bug_factor: float = 1.0

    @property
    def planted_bug(self) -> bool:
        """Whether the case runs with a planted bug."""
        return self.bug_factor != 1.0

    @property
    def name(self) -> str:
        """The mechanism and relation, e.g. ``"laplace, add-remove, planted 2x bug"``."""
        bug = f", planted {self.bug_factor:g}x bug" if self.planted_bug else ""
        return f"{self.mechanism}, {self.neighbouring}{bug}"

    def run(self, releases: int = 100_000, confidence: float = 0.99, *,
            rng: np.random.Generator | int | None = None) -> AuditResult:
        """Audit this case's epsilon at ``claimed_delta`` against ``claimed_epsilon`` (:func:`projmech.audit.audit`).

        Parameters
        ----------
        releases, confidence, rng
            As in :func:`projmech.audit.audit`.

        Returns
        -------
        AuditResult
        """
        with warnings.catch_warnings():  # one- and two-row data sets: the noise swamps them by design
            warnings.simplefilter("ignore", BudgetWarning)
            return audit(self.release, self.pair, releases=releases, confidence=confidence, statistic=self.statistic,
                         delta=self.claimed_delta, claimed_epsilon=self.claimed_epsilon, rng=rng, name=self.name)


def _data(cells: Sequence[int]) -> Dataset:
    return Dataset(np.asarray(cells, dtype=np.int64).reshape(-1, 1), _DOMAIN)


def _pair(neighbouring: str) -> tuple[Dataset, Dataset]:
    """One row at x = 1, and its neighbour: a row at x = 0 added (add/remove), or the row moved to x = 0."""
    if neighbouring == "add-remove":
        return _data([1]), _data([1, 0])
    return _data([1]), _data([0])


def _counts(data: Dataset) -> np.ndarray:
    return np.bincount(data.records[:, 0], minlength=2).astype(float)


def _log_density(noise: Noise, deviation: np.ndarray) -> np.ndarray:
    """Log density (or pmf) of ``noise`` at ``deviation`` up to a constant; scaled before squaring so that
    scales of 1e-200 do not underflow; no noise is a point mass at 0.
    """
    deviation = np.asarray(deviation, dtype=float)
    if noise.scale == 0:
        return np.where(deviation == 0, 0.0, -np.inf)
    standard = deviation / noise.scale
    if noise.distribution == "gaussian":
        return -0.5 * standard**2
    return -np.abs(standard)


def _count_ratio(noise: Noise, size_noise: Noise | None, first: Dataset, second: Dataset,
                 measure: Callable[[np.ndarray], np.ndarray]) -> Callable[[tuple[np.ndarray, float]], float]:
    """The log-likelihood ratio (second over first) of ``measure(counts) + Z`` and of any noisy size."""
    mean_first, mean_second = measure(_counts(first)), measure(_counts(second))

    def ratio(output: tuple[np.ndarray, float]) -> float:
        measured, size = output
        if noise.scale == 0:
            # No noise: the ratio's limit as the scale tends to 0, +inf or -inf by which mean each
            # measurement is nearer (exact equality would fail on the rounding of answers * size).
            side = np.sign(mean_second - mean_first) * np.sign(measured - (mean_first + mean_second) / 2.0)
            value = float(np.sum(np.where(side > 0, np.inf, np.where(side < 0, -np.inf, 0.0))))
        else:
            value = float(np.sum(_log_density(noise, measured - mean_second)
                                 - _log_density(noise, measured - mean_first)))
        if size_noise is not None:
            value += float(_log_density(size_noise, np.array(size - second.n))
                           - _log_density(size_noise, np.array(size - first.n)))
        return value

    return ratio


@overload
def _shrink(noise: Noise, factor: float) -> Noise: ...


@overload
def _shrink(noise: None, factor: float) -> None: ...


def _shrink(noise: Noise | None, factor: float) -> Noise | None:
    return None if noise is None else dataclasses.replace(noise, scale=noise.scale / factor)


def bug_factor(mechanism: str, neighbouring: str) -> float:
    """Return the divisor of a case's noise that makes a planted bug's true epsilon about twice the claim.

    Parameters
    ----------
    mechanism, neighbouring
        A name from :data:`MECHANISMS`, and the relation; 4 where the pair attains half the claim, else 2.

    Returns
    -------
    float

    Examples
    --------
    >>> bug_factor("laplace", "add-remove"), bug_factor("threshold", "add-remove")
    (2.0, 4.0)
    """
    mechanism = _MECHANISM.check("mechanism", mechanism)
    neighbouring = Neighbouring.parse(neighbouring).value
    if neighbouring == "add-remove" and mechanism in ("offline_pmw", "threshold", "online_pmw"):
        return 4.0
    return 2.0


def _size_arguments(neighbouring: str) -> dict[str, Any]:
    return {"size": "estimate"} if neighbouring == "add-remove" else {}


def _noisy_size(release: Any) -> float:
    """The published (clamped) size; at the pair's sizes 1 and 2 clamping changes the ratio only where
    both sides clamp.
    """
    return float(release.size)


def _additive_case(kind: str, neighbouring: str, factor: float, noise: str, delta: float) -> AuditCase:
    workload = Workload(np.array([[TINY_ENTRY, 0.0]]), name="tiny") if kind == "tiny_gaussian" else identity(2)
    matrix = workload.toarray()
    if kind == "laplace":
        privacy: Any = PureDP(1.0)
        mechanism: Any = LaplaceMechanism(workload, privacy, neighbouring=neighbouring, noise=noise,
                                          **_size_arguments(neighbouring))
    elif kind == "gaussian":
        privacy = ApproxDP(1.0, delta)
        mechanism = GaussianMechanism(workload, privacy, neighbouring=neighbouring, noise=noise,
                                      **_size_arguments(neighbouring))
    elif kind == "tiny_gaussian":
        privacy = ApproxDP(1.0, delta)
        # A count of 1e-200 is no integer: "auto" takes continuous noise, "discrete" is refused.
        mechanism = GaussianMechanism(workload, privacy, neighbouring=neighbouring, noise=noise,
                                      **_size_arguments(neighbouring))
    else:
        privacy = ApproxDP(1.0, delta)
        mechanism = ProjectionMechanism(workload, privacy, solver="fast", neighbouring=neighbouring, noise=noise,
                                        **_size_arguments(neighbouring))
    mechanism.noise, mechanism.size_noise = _shrink(mechanism.noise, factor), _shrink(mechanism.size_noise, factor)
    first, second = _pair(neighbouring)
    ratio = _count_ratio(mechanism.noise, mechanism.size_noise, first, second, lambda counts: matrix @ counts)

    def release(data: Dataset, rng: np.random.Generator) -> Any:
        return mechanism.release(data, rng=rng)

    def statistic(output: Any) -> float:
        # Everything published: the noisy counts (size * noisy answers) and the size estimate.
        return ratio((output.noisy_answers * output.size, _noisy_size(output)))

    return AuditCase(kind, neighbouring, privacy.epsilon, getattr(privacy, "delta", 0.0), (first, second),
                     release, statistic, factor)


def _factorization_case(neighbouring: str, factor: float, noise: str, delta: float) -> AuditCase:
    workload = prefix(2)  # its optimal strategy is not the identity: R and M are both exercised
    factorization: Factorization = factorization_norm(workload)
    privacy = ApproxDP(1.0, delta)
    mechanism = FactorizationMechanism(workload, privacy, factorization=factorization, neighbouring=neighbouring,
                                       noise=noise, **_size_arguments(neighbouring))
    mechanism.noise, mechanism.size_noise = _shrink(mechanism.noise, factor), _shrink(mechanism.size_noise, factor)
    strategy = factorization.strategy.toarray()
    reconstruction = np.column_stack([factorization.reconstruct(unit) for unit in np.eye(strategy.shape[0])])
    first, second = _pair(neighbouring)
    ratio = _count_ratio(mechanism.noise, mechanism.size_noise, first, second, lambda counts: strategy @ counts)

    def release(data: Dataset, rng: np.random.Generator) -> Any:
        return mechanism.release(data, rng=rng)

    def statistic(output: Any) -> float:
        # The measurements M c + Z, recovered from the published answers R (M c + Z) / size.
        measured = np.linalg.lstsq(reconstruction, output.noisy_answers * output.size, rcond=None)[0]
        return ratio((measured, _noisy_size(output)))

    return AuditCase("factorization", neighbouring, 1.0, delta, (first, second), release, statistic, factor)


#: Cells of the universe of the online PMW and threshold cases: the uniform start answers 1/64 to
#: each one-cell query, so moving a row between two cells changes the compared distances by nearly
#: a full count (on two cells both would stay at 1/2 and leak nothing).
_WIDE = 64

#: Cells of the offline PMW case. Its one round selects a query among all cells, and only the two
#: cells the pair changes leak: on 64 cells the selection would pick them 1 time in 32, leaving the
#: audit little to see; on 4 cells, about half the time.
_PMW_CELLS = 4


def _wide_pair(neighbouring: str, cells: int = _WIDE) -> tuple[Dataset, Dataset]:
    """A row at the last cell, and its neighbour: a row added at cell 0, or the row moved there."""
    domain = Domain(["x"], [cells])
    last = np.array([[cells - 1]])
    neighbour = np.array([[cells - 1], [0]]) if neighbouring == "add-remove" else np.array([[0]])
    return Dataset(last, domain), Dataset(neighbour, domain)


def _offline_pmw_case(neighbouring: str, factor: float, noise: str) -> AuditCase:
    privacy = PureDP(1.0)
    mechanism = OfflinePMW(identity(_PMW_CELLS), privacy, rounds=1, neighbouring=neighbouring, noise=noise,
                           **_size_arguments(neighbouring))
    mechanism.noise, mechanism.size_noise = _shrink(mechanism.noise, factor), _shrink(mechanism.size_noise, factor)
    mechanism.round_budget = dataclasses.replace(
        mechanism.round_budget, selection_epsilon=factor * mechanism.round_budget.selection_epsilon)
    first, second = _wide_pair(neighbouring, _PMW_CELLS)
    selection_epsilon = mechanism.round_budget.selection_epsilon

    def counts_of(data: Dataset) -> np.ndarray:
        return np.bincount(data.records[:, 0], minlength=_PMW_CELLS).astype(float)

    def log_likelihood(data: Dataset, selected: int, measurement: float, size: float) -> float:
        counts = counts_of(data)
        scores = np.abs(counts / size - 1.0 / _PMW_CELLS)  # the uniform start answers 1/4 to each query
        logits = selection_epsilon * size / 2.0 * scores
        value = float(logits[selected] - np.logaddexp.reduce(logits))
        value += float(_log_density(mechanism.noise, np.array(measurement * size - counts[selected])))
        if mechanism.size_noise is not None:
            value += float(_log_density(mechanism.size_noise, np.array(size - data.n)))
        return value

    def release(data: Dataset, rng: np.random.Generator) -> Any:
        return mechanism.run(data, rng=rng)

    def statistic(run: Any) -> float:
        # The selected query and its measurement, both published with the run, and the size.
        size, selected, measurement = run.release.size, run.selected[0], float(run.measurements[0])
        return log_likelihood(second, selected, measurement, size) - log_likelihood(first, selected, measurement, size)

    return AuditCase("offline_pmw", neighbouring, 1.0, 0.0, (first, second), release, statistic, factor)


#: Queries on the gaining cell before the query on the losing one (see :func:`_interactive_case`).
_RISING_QUERIES = 6

#: The step between crossing positions in the add/remove statistic of :func:`_interactive_case`,
#: far above any released count (a discrete Laplace count of scale 4 exceeds 10**6 with
#: probability exp(-250000)).
_RANK = 1e6


def _interactive_case(kind: str, neighbouring: str, factor: float, noise: str) -> AuditCase:
    """The sparse-vector mechanisms' worst case, their guarantee's proof read backwards (:doc:`/theory/privacy`)."""
    # The guarantee is PureDP(4 k epsilon) with k = 1: epsilon = 0.25 claims 1-DP. With
    # a size estimate the claim is 4 k epsilon / (1 - size_share).
    epsilon = 0.25
    arguments = _size_arguments(neighbouring)
    noise_epsilon = factor * epsilon
    first, second = _wide_pair(neighbouring)
    rising, falling = np.eye(_WIDE)[0], np.eye(_WIDE)[_WIDE - 1 if neighbouring == "replace-one" else 0]
    queries = [rising] * _RISING_QUERIES + [falling]

    def make(data: Dataset, rng: np.random.Generator) -> Any:
        # The queries are 0/1, so "auto" (the mechanisms' default) draws exact discrete noise.
        if kind == "threshold":
            return Threshold(data, threshold=0.5, epsilon=noise_epsilon, rng=rng, neighbouring=neighbouring,
                             noise=noise, **arguments)
        # Threshold 3 alpha = 0.75 on fractions of the size, as the threshold mechanism's 0.5.
        return OnlinePMW(data, alpha=0.25, epsilon=noise_epsilon, k=1, rng=rng, neighbouring=neighbouring,
                         noise=noise, **arguments)

    claimed = make(first, np.random.default_rng(0)).privacy.epsilon / factor

    def release(data: Dataset, rng: np.random.Generator) -> Any:
        mechanism = make(data, rng)
        for query in queries:
            if mechanism.halted:
                break
            mechanism.answer(query)
        return mechanism.transcript, mechanism.size

    def statistic(output: Any) -> float:
        transcript, size = output  # the size, declared or estimated, is published
        numbers = [i for i, entry in enumerate(transcript) if entry is not BOTTOM]
        if neighbouring == "add-remove":
            # Every count rises by one: the second data set crosses earlier and releases a larger
            # count. Earlier crossings rank higher, the released count (the number times the size)
            # breaks ties, and no crossing at all, which the first data set makes likeliest, ranks
            # lowest. The planted bug's loss is in the top tail: a crossing at the first query
            # with a large count.
            if not numbers:
                return -_RANK
            position = numbers[0]
            return (len(queries) - position) * _RANK + float(transcript[position]) * size
        # The transcript the first data set makes likeliest: every rising query below the
        # threshold, then a number for the falling one, larger numbers likelier still. Any other
        # transcript ranks below it: the earlier it halted, the lower.
        if not numbers:
            return -2.0 * len(queries)
        position = numbers[0]
        if position < len(queries) - 1:
            return -float(len(queries) - position)
        return float(transcript[position]) + 1.0

    return AuditCase(kind, neighbouring, claimed, 0.0, (first, second), release, statistic, factor)


#: The adaptive case's domain: two binary attributes, whose one-way tables and 2-way table are
#: the candidates (weights 1, 1 and 2); its pair moves (or adds) a row at a cell in which both
#: attributes differ, so that every table, the one-way tables measured first and whichever the
#: selection picks, moves by the sensitivity its noise is calibrated to.
_ADAPTIVE_DOMAIN = Domain(["x", "y"], [2, 2])


def _round_estimates(mechanism: AdaptiveProjectionMechanism, run: Any) -> dict[int, list[np.ndarray]]:
    """Each selecting round's estimate of every candidate table, from the measurements published before it."""
    sizes, estimates = mechanism.sizes, {}
    first = next((index for index, spent in enumerate(run.rounds) if spent.selection_rho > 0), len(run.rounds))
    previous = None
    for index in range(first, len(run.rounds)):
        previous = estimate_tables(sizes, run.measurements[:index], start=previous)
        if run.rounds[index].selection_rho > 0:
            estimates[index] = [np.ravel(table_estimate(previous, c, sizes)) for c in mechanism.candidates]
    return estimates


def _transcript_log_likelihood(mechanism: AdaptiveProjectionMechanism, data: Dataset, run: Any,
                               estimates: dict[int, list[np.ndarray]]) -> tuple[list[float], float]:
    """The log-likelihood of an adaptive run's transcript on ``data``: each selection's log-probability,
    and the log-density of every noisy table and of the size estimate (up to constants).
    """
    candidates, sizes = mechanism.candidates, mechanism.sizes
    weights = np.array([mechanism.weights[c] for c in candidates])
    cells = np.array([math.prod(sizes[a] for a in c) for c in candidates])
    counts = {c: np.asarray(data.table(list(c)), dtype=float).ravel() for c in candidates}
    size = run.release.size
    selections, density = [], 0.0
    for index, (spent, measured) in enumerate(zip(run.rounds, run.measurements)):
        if spent.selection_rho > 0:
            errors = np.array([np.abs(counts[c] - size * table).sum()
                               for c, table in zip(candidates, estimates[index])])
            scores = weights * (errors - math.sqrt(2.0 / math.pi) * spent.sigma * cells)
            logits = math.sqrt(8.0 * spent.selection_rho) * scores / (2.0 * mechanism.score_sensitivity * weights.max())
            selections.append(float(logits[candidates.index(spent.attributes)] - np.logaddexp.reduce(logits)))
        round_noise = dataclasses.replace(mechanism.noise, scale=spent.sigma)
        density += float(np.sum(_log_density(round_noise, measured.values * size - counts[spent.attributes])))
    if mechanism.size_noise is not None:
        density += float(_log_density(mechanism.size_noise, np.array(_noisy_size(run.release) - data.n)))
    return selections, density


def _adaptive_mechanism(neighbouring: str, factor: float, noise: str, delta: float) -> AdaptiveProjectionMechanism:
    """The adaptive case's mechanism, with its planted bug if ``factor`` is not 1."""
    # The statistic reads the transcript (the selections, the noisy tables, the size), of which
    # the released answers are a function whichever estimator reads them: the cheaper one serves.
    mechanism = AdaptiveProjectionMechanism(marginals(_ADAPTIVE_DOMAIN, 2), ApproxDP(1.0, delta),
                                            neighbouring=neighbouring, noise=noise, estimator="tables",
                                            **_size_arguments(neighbouring))
    # The planted bug halves (by ``factor``) the sensitivity the noise and the selection are
    # calibrated to while the accounting still charges each round its stated cost: the same
    # schedule, every noise divided by ``factor``, the selection's epsilon multiplied by it.
    mechanism.table_sensitivity /= factor
    mechanism.score_sensitivity /= factor
    mechanism.noise, mechanism.size_noise = _shrink(mechanism.noise, factor), _shrink(mechanism.size_noise, factor)
    return mechanism


def _adaptive_case(neighbouring: str, factor: float, noise: str, delta: float) -> AuditCase:
    """The adaptive mechanism on two binary attributes, its statistic the transcript's log-likelihood ratio."""
    mechanism = _adaptive_mechanism(neighbouring, factor, noise, delta)
    first = Dataset(np.array([[1, 1]]), _ADAPTIVE_DOMAIN)
    second = Dataset(np.array([[1, 1], [0, 0]]) if neighbouring == "add-remove" else np.array([[0, 0]]),
                     _ADAPTIVE_DOMAIN)

    def release(data: Dataset, rng: np.random.Generator) -> Any:
        return mechanism.run(data, rng=rng)

    def statistic(run: Any) -> float:
        estimates = _round_estimates(mechanism, run)
        (selected_second, density_second), (selected_first, density_first) = (
            _transcript_log_likelihood(mechanism, data, run, estimates) for data in (second, first))
        return sum(selected_second) - sum(selected_first) + density_second - density_first

    return AuditCase("adaptive", neighbouring, 1.0, delta, (first, second), release, statistic, factor)


@validate_params(planted_bug=FLAG, noise=Options(*NOISE_KINDS), delta=OPEN_UNIT)
def audit_cases(mechanisms: Sequence[str] = MECHANISMS,
                neighbourings: Sequence[str] = ("replace-one", "add-remove"), *,
                planted_bug: bool = False, noise: str = "auto", delta: float = AUDIT_DELTA) -> list[AuditCase]:
    """The audit cases of the given mechanisms under the given relations, mechanisms first.

    Parameters
    ----------
    mechanisms, neighbourings
        Names from :data:`MECHANISMS` (not a str), and the relations.
    planted_bug
        Divide every noise scale by the case's :func:`bug_factor`, keeping the claim.
    noise
        ``"auto"`` (continuous where counts are fractional, where ``"discrete"`` is refused); only
        continuous noise makes an audit reproducible from a seed.
    delta
        The delta of the (epsilon, delta) mechanisms, which all claim epsilon = 1.

    Returns
    -------
    list of AuditCase

    Examples
    --------
    >>> [case.name for case in audit_cases(["gaussian", "laplace"], ["add-remove"], planted_bug=True)]
    ['gaussian, add-remove, planted 2x bug', 'laplace, add-remove, planted 2x bug']
    """
    if isinstance(mechanisms, str):
        # A str would be read one character at a time.
        raise TypeError(f"mechanisms: expected a sequence of names from {MECHANISMS}, got the str {mechanisms!r}")
    names = [_MECHANISM.check("mechanisms", name) for name in mechanisms]
    relations = [Neighbouring.parse(relation).value for relation in neighbourings]
    cases = []
    for name in names:
        for relation in relations:
            factor = bug_factor(name, relation) if planted_bug else 1.0
            if name in ("gaussian", "tiny_gaussian", "laplace", "projection"):
                cases.append(_additive_case(name, relation, factor, noise, delta))
            elif name == "factorization":
                cases.append(_factorization_case(relation, factor, noise, delta))
            elif name == "offline_pmw":
                cases.append(_offline_pmw_case(relation, factor, noise))
            elif name == "adaptive":
                cases.append(_adaptive_case(relation, factor, noise, delta))
            else:
                cases.append(_interactive_case(name, relation, factor, noise))
    return cases


@validate_params(rng=SEED)
def run_audits(cases: Sequence[AuditCase], releases: int = 100_000, *, confidence: float = 0.99,
               rng: np.random.Generator | int | None = None) -> list[AuditResult]:
    """Run every case with its own child generator of ``rng``; one result per case, in order.

    Parameters
    ----------
    cases
        E.g. from :func:`audit_cases`.
    releases, confidence, rng
        As in :meth:`AuditCase.run`.

    Returns
    -------
    list of AuditResult

    Examples
    --------
    >>> cases = audit_cases(["laplace"], ["replace-one"], noise="continuous")
    >>> [result.passed for result in run_audits(cases, 500, rng=0)]
    [True]
    """
    assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
    return [case.run(releases, confidence, rng=child) for case, child in zip(cases, rng.spawn(len(cases)))]
