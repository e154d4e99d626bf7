"""Statistical privacy auditing: lower bounds on the epsilon and delta of any mechanism from samples.

A mechanism is any callable ``mechanism(data, rng) -> output`` drawing all its randomness from ``rng``;
the auditor needs only numpy, scipy and :mod:`projmech.validation`, so it audits mechanisms of any origin.
Events are chosen on a selection half and bounded by Clopper–Pearson :cite:p:`CP34` on the other, as in
:cite:t:`DWWZK18` and :cite:t:`JUO20`. A passed audit is evidence, a failed one proof: :doc:`/theory/privacy`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ..validation import (
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE_INT,
    SEED,
    Constraint,
    InstanceOf,
    Integral,
    Interval,
    IsCallable,
    OrNone,
    validate_params,
)
from ._results import (
    _DELTA,
    AuditResult,
    Counts,
    Event,
    EventEstimate,
    _lower_bound,
    _upper_bound,
    clopper_pearson,
    format_audit_table,
)
from ._sampling import AuditError, _check_values, _sample, _where

__all__ = [
    "DISCRETE_VALUES",
    "AuditError",
    "AuditResult",
    "Counts",
    "Event",
    "EventEstimate",
    "audit",
    "audit_delta",
    "clopper_pearson",
    "format_audit_table",
]

#: A statistic with at most this many distinct values on the selection half is treated as discrete.
DISCRETE_VALUES = 32

# Candidate thresholds: this many order statistics spaced geometrically in each tail of the pooled
# selection sample, and this many spaced linearly over its whole range.
_TAIL_THRESHOLDS = 80
_LINEAR_THRESHOLDS = 101


def _between(low: float, high: float) -> float:
    """A number strictly between two consecutive distinct values (either possibly infinite)."""
    if math.isfinite(low) and math.isfinite(high):
        middle = low / 2.0 + high / 2.0
        return middle if low < middle < high else high
    if math.isfinite(high):
        return high - 1.0
    if math.isfinite(low):
        return low + 1.0
    return 0.0


def _candidates(x: np.ndarray, y: np.ndarray) -> tuple[list[Event], np.ndarray, np.ndarray]:
    """Candidate events and their counts among the selection statistics ``x`` and ``y``."""
    pooled = np.sort(np.concatenate([x, y]))
    distinct = np.unique(pooled)
    if distinct.size <= DISCRETE_VALUES:
        return _discrete_candidates(x, y, distinct)

    size = pooled.size
    tail = np.unique(np.round(np.geomspace(1, size / 2, _TAIL_THRESHOLDS)).astype(int)) - 1
    linear = np.round(np.linspace(0, size - 1, _LINEAR_THRESHOLDS)).astype(int)
    ranks = np.unique(np.concatenate([tail, size - 1 - tail, linear]))
    thresholds = np.unique(pooled[ranks])
    xs, ys = np.sort(x), np.sort(y)
    events = [Event("greater", float(t)) for t in thresholds] + [Event("less", float(t)) for t in thresholds]
    counts_x = np.concatenate([x.size - np.searchsorted(xs, thresholds, "right"),
                               np.searchsorted(xs, thresholds, "left")])
    counts_y = np.concatenate([y.size - np.searchsorted(ys, thresholds, "right"),
                               np.searchsorted(ys, thresholds, "left")])
    return events, counts_x, counts_y


def _discrete_candidates(x: np.ndarray, y: np.ndarray,
                         distinct: np.ndarray) -> tuple[list[Event], np.ndarray, np.ndarray]:
    """The events of a discrete statistic: single values, thresholds, and value sets ranked by likelihood ratio."""
    per_x = np.array([np.count_nonzero(x == v) for v in distinct])
    per_y = np.array([np.count_nonzero(y == v) for v in distinct])
    k = distinct.size
    sets: list[np.ndarray] = [np.eye(k, dtype=bool)[i] for i in range(k)]  # {s = v}
    events: list[Event] = [Event("in", values=(float(v),)) for v in distinct]
    for i in range(k - 1):
        t = _between(float(distinct[i]), float(distinct[i + 1]))
        below = np.arange(k) <= i
        events += [Event("greater", t), Event("less", t)]
        sets += [~below, below]
    # Sets of values ranked by their smoothed likelihood ratio: the optimal events for delta.
    order = np.argsort(-np.log((per_x + 0.5) / (per_y + 0.5)), kind="stable")
    for j in range(1, k - 1):  # sets of 2 to k - 1 values (single values are above; all k is no test)
        for chosen in (order[: j + 1], order[k - 1 - j:]):
            member = np.zeros(k, dtype=bool)
            member[chosen] = True
            sets.append(member)
            events.append(Event("in", values=tuple(float(v) for v in distinct[member])))
    matrix = np.array(sets)
    return events, matrix @ per_x, matrix @ per_y


def _scores(counts_p: np.ndarray, counts_q: np.ndarray, selection: int, estimation: int, alpha: float,
            target: str, claimed_epsilon: float | None, claimed_delta: float) -> np.ndarray:
    """Each candidate's predicted bound: its selection frequencies taken as counts on the estimation half."""
    scale = estimation / selection
    p_lower = _lower_bound(counts_p * scale, estimation, alpha)
    q_upper = _upper_bound(counts_q * scale, estimation, alpha)
    if target == "delta":
        assert claimed_epsilon is not None, "audit_delta passes its epsilon"
        return p_lower - math.exp(claimed_epsilon) * q_upper
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_lower > claimed_delta, np.log((p_lower - claimed_delta) / q_upper), -np.inf)


def _project(sample_x: np.ndarray, sample_y: np.ndarray, selection: int) -> tuple[np.ndarray, np.ndarray]:
    """Vector outputs projected on the mean difference of the selection halves (scalars unchanged)."""
    if sample_x.ndim == 1:
        return sample_x, sample_y
    if sample_x.shape[1:] != sample_y.shape[1:]:
        raise ValueError(f"mechanism: outputs on the data ({sample_x.shape[1:]}) and on the neighbour "
                         f"({sample_y.shape[1:]}) have different shapes")
    direction = sample_x[:selection].mean(axis=0) - sample_y[:selection].mean(axis=0)
    norm = float(np.linalg.norm(direction))
    if norm > 0:
        direction = direction / norm
    else:
        direction = np.zeros(sample_x.shape[1])
        direction[0] = 1.0
    return sample_x @ direction, sample_y @ direction


def _check_pairs(pairs: Any) -> list[tuple[Any, Any]]:
    """The pairs as a list of ``(data, neighbour)``, from one tuple or a list of pairs."""
    if isinstance(pairs, tuple):
        if len(pairs) != 2:
            raise ValueError(f"pairs: a tuple is one pair (data, neighbour) and must have 2 items, got {len(pairs)}")
        return [pairs]
    if isinstance(pairs, list):
        if not pairs:
            raise ValueError("pairs: the list is empty; give at least one pair (data, neighbour)")
        checked = []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)):
                raise TypeError(f"pairs: item {i} is a {type(pair).__name__}, not a pair (data, neighbour)")
            if len(pair) != 2:
                raise ValueError(f"pairs: item {i} has {len(pair)} items, not 2 (data, neighbour)")
            checked.append((pair[0], pair[1]))
        return checked
    raise TypeError(f"pairs: expected a tuple (data, neighbour) or a list of such pairs, got {type(pairs).__name__}")


#: The arguments :func:`audit` and :func:`audit_delta` share, checked before any release.
_AUDIT_PARAMETERS: dict[str, Constraint] = dict(
    mechanism=IsCallable("a callable (data, rng) -> output"),
    releases=Interval(Integral, 2, None),
    confidence=OPEN_UNIT,
    statistic=OrNone(IsCallable("a callable output -> number, or None")),
    rng=SEED,
    selection_fraction=OPEN_UNIT,
    batch=OrNone(POSITIVE_INT),
    name=OrNone(InstanceOf(str, what="a str or None")),
)


def _run(mechanism: Any, pairs: Any, *, target: Literal["epsilon", "delta"], releases: int, confidence: float,
         statistic: Any, claimed_epsilon: float | None, claimed_delta: float | None, rng: np.random.Generator,
         selection_fraction: float, batch: int | None, name: str | None) -> AuditResult:
    """The audit, on arguments :func:`audit` or :func:`audit_delta` checked."""
    checked_pairs = _check_pairs(pairs)
    if name is None:
        name = getattr(mechanism, "__name__", None) or type(mechanism).__name__
    generator = rng

    selection = min(releases - 1, max(1, round(selection_fraction * releases)))
    estimation = releases - selection
    # Bonferroni: 2 events per pair, each with a lower bound on p and an upper bound on q.
    alpha = (1.0 - confidence) / (4 * len(checked_pairs))
    delta_for_score = claimed_delta or 0.0

    estimates: list[EventEstimate] = []
    for index, (data, neighbour) in enumerate(checked_pairs):
        samples = []
        for which, dataset in enumerate((data, neighbour)):
            values = _sample(mechanism, dataset, releases, generator, statistic, batch, index, which)
            _check_values(values, _where(index, which), statistic is not None)
            samples.append(values)
        x, y = _project(samples[0], samples[1], selection)
        events, counts_x, counts_y = _candidates(x[:selection], y[:selection])
        x_est, y_est = x[selection:], y[selection:]
        for favoured, (counts_p, counts_q, p_est, q_est) in enumerate(
                [(counts_x, counts_y, x_est, y_est), (counts_y, counts_x, y_est, x_est)]):
            scores = _scores(counts_p, counts_q, selection, estimation, alpha, target, claimed_epsilon, delta_for_score)
            event = events[int(np.argmax(scores))]
            k_p = int(np.count_nonzero(event.contains(p_est)))
            k_q = int(np.count_nonzero(event.contains(q_est)))
            estimates.append(EventEstimate(
                pair=index, favoured=favoured, event=event, counts=Counts(k_p, k_q, estimation),
                p_lower=float(_lower_bound(k_p, estimation, alpha)[0]),
                q_upper=float(_upper_bound(k_q, estimation, alpha)[0])))
    return AuditResult(name=name, target=target, estimates=tuple(estimates), confidence=confidence,
                       releases=releases, selection_releases=selection,
                       claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta)


@validate_params(delta=_DELTA, claimed_epsilon=OrNone(NONNEGATIVE), **_AUDIT_PARAMETERS)
def audit(
    mechanism: Callable[..., Any],
    pairs: tuple[Any, Any] | list[tuple[Any, Any]],
    *,
    releases: int = 100_000,
    confidence: float = 0.99,
    statistic: Callable[[Any], Any] | None = None,
    delta: float = 0.0,
    claimed_epsilon: float | None = None,
    rng: np.random.Generator | int | None = None,
    selection_fraction: float = 0.5,
    batch: int | None = None,
    name: str | None = None,
) -> AuditResult:
    """A statistically valid lower bound on the epsilon of ``mechanism`` at ``delta``.

    With probability at least ``confidence`` it is at most the smallest epsilon for which the
    mechanism is (epsilon, delta)-DP on these pairs (:doc:`/theory/privacy`, *Auditing*).

    Parameters
    ----------
    mechanism
        ``mechanism(data, rng) -> output``, all randomness from ``rng``, no state between calls;
        with ``batch``, ``mechanism(data, rng, size)`` returns ``size`` outputs.
    pairs
        One pair ``(data, neighbour)``, or a list of pairs.
    releases, confidence
        Releases per data set per pair, both halves together; the probability that every bound holds.
    statistic
        ``statistic(output) -> number``; default the output, or a vector's projection on the mean
        difference of the selection halves.
    delta, claimed_epsilon
        The claim, ``delta`` in ``[0, 1)``; the audit passes when the bound is at most ``claimed_epsilon``.
    rng, selection_fraction, batch, name
        The only randomness; the share of releases that chooses the events; most outputs per call; report name.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import math  # randomized response on one bit is exactly ln(3)-DP
    >>> def randomized_response(bit, rng, size):
    ...     return np.where(rng.random(size) < 0.75, bit, 1 - bit)
    >>> result = audit(randomized_response, (0, 1), releases=200_000, batch=100_000,
    ...                claimed_epsilon=math.log(3), rng=1)
    >>> 0.9 < result.epsilon_lower_bound <= math.log(3), result.passed
    (True, True)
    """
    assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
    return _run(mechanism, pairs, target="epsilon", releases=releases, confidence=confidence, statistic=statistic,
                claimed_epsilon=claimed_epsilon, claimed_delta=delta, rng=rng,
                selection_fraction=selection_fraction, batch=batch, name=name)


@validate_params(epsilon=NONNEGATIVE, claimed_delta=OrNone(_DELTA), **_AUDIT_PARAMETERS)
def audit_delta(mechanism: Callable[..., Any], pairs: tuple[Any, Any] | list[tuple[Any, Any]], epsilon: float, *,
                releases: int = 100_000, confidence: float = 0.99, statistic: Callable[[Any], Any] | None = None,
                claimed_delta: float | None = None, rng: np.random.Generator | int | None = None,
                selection_fraction: float = 0.5, batch: int | None = None, name: str | None = None) -> AuditResult:
    """A statistically valid lower bound on the delta of ``mechanism`` at ``epsilon`` (``target == "delta"``).

    As :func:`audit`, with events chosen to maximize ``p_lower - exp(epsilon) q_upper``.

    Parameters
    ----------
    epsilon, claimed_delta
        The epsilon ``>= 0`` delta is bounded at, and the claimed delta there.
    mechanism, pairs, releases, confidence, statistic, rng, selection_fraction, batch, name
        As in :func:`audit`.

    Returns
    -------
    AuditResult
        Its ``claimed_epsilon`` is ``epsilon``.

    Examples
    --------
    >>> def gaussian_count(count, rng, size):
    ...     return count + rng.normal(0.0, 1.0, size)
    >>> result = audit_delta(gaussian_count, (0, 1), epsilon=1.0, releases=200_000, batch=100_000, rng=3)
    >>> 0.0 <= result.delta_lower_bound <= 0.127  # the exact delta(1) of sigma = 1 is 0.1269
    True
    """
    assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
    return _run(mechanism, pairs, target="delta", releases=releases, confidence=confidence, statistic=statistic,
                claimed_epsilon=epsilon, claimed_delta=claimed_delta, rng=rng,
                selection_fraction=selection_fraction, batch=batch, name=name)
