"""Statistical privacy auditing: lower bounds on the epsilon and delta of any mechanism from samples.

A leaf module (numpy, scipy and the leaf :mod:`projmech.validation` only), so that mechanisms of any
origin can be audited: a mechanism is any callable ``mechanism(data, rng) -> output`` that draws
all its randomness from the generator it is given.

A mechanism is (epsilon, delta)-DP only if ``p <= exp(epsilon) q + delta`` for every pair of
neighbouring data sets ``(D, D')`` and every event ``E``, where ``p = Pr[M(D) in E]`` and
``q = Pr[M(D') in E]``. The auditor, in the way of :cite:t:`DWWZK18` and :cite:t:`JUO20`, draws
``releases`` outputs of ``M(D)`` and of ``M(D')`` for each given pair, maps every output to a
number (the *statistic*), chooses one event per pair and direction on a *selection half* of the
releases, and bounds its probabilities on the other, *estimation* half by one-sided
Clopper–Pearson bounds :cite:p:`CP34`: ``p_lower <= p`` and ``q_upper >= q``. It reports

    epsilon >= ln((p_lower - delta) / q_upper)        and        delta(epsilon) >= p_lower - exp(epsilon) q_upper

(clipped at 0). With probability at least ``confidence``, every reported bound holds at once,
provided the releases are independent and identically distributed given the data: every release
gets its own child generator, so the mechanism must only keep no state between calls.

An audit is a *lower* bound from finitely many pairs and one family of events of one statistic:
passing is evidence, not proof; failing proves a violation at the stated confidence. With ``n``
estimation releases the bound cannot exceed about ``ln(n)``, and deltas much below ``1/n`` are
invisible.

The events, the confidence split and the proof of the guarantee are in the theory page *Privacy:
definitions, sensitivity and calibration* (``docs/theory/privacy.md``, section *Auditing*); the
user guide *Auditing a mechanism* (``docs/guide/audit.md``) shows how to use it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

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
    Real,
    validate_params,
)

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

# Non-vectorized mechanisms: child generators are spawned this many at a time.
_SPAWN_CHUNK = 1024


class AuditError(RuntimeError):
    """The audited mechanism or statistic raised; the message names the pair and the release.

    The original exception is chained as ``__cause__``.

    Examples
    --------
    >>> import projmech as pm
    >>> def broken(data, rng):
    ...     raise ZeroDivisionError("oops")
    >>> try:
    ...     pm.audit.audit(broken, (0, 1), releases=10, rng=0)
    ... except pm.audit.AuditError as error:
    ...     print(error)
    mechanism: raised ZeroDivisionError: oops (pair 0, data, release 0)
    """


# --------------------------------------------------------------------------------------------- #
# Clopper–Pearson                                                                               #
# --------------------------------------------------------------------------------------------- #


def _lower_bound(successes: Any, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound at level ``1 - alpha`` (vectorized; real counts allowed)."""
    from scipy import stats  # imported where needed: half a second at import

    k = np.atleast_1d(np.asarray(successes, dtype=float))
    out = np.zeros_like(k)
    positive = k > 0
    kp = k[positive]
    out[positive] = stats.beta.ppf(alpha, kp, trials - kp + 1)
    return out


def _upper_bound(successes: Any, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound at level ``1 - alpha`` (vectorized; real counts allowed)."""
    from scipy import stats

    k = np.atleast_1d(np.asarray(successes, dtype=float))
    out = np.ones_like(k)
    below = k < trials
    kb = k[below]
    out[below] = stats.beta.ppf(1.0 - alpha, kb + 1, trials - kb)
    return out


#: A delta: a probability that may be 0, never 1.
_DELTA = Interval(Real, 0, 1, closed="left")


@validate_params(successes=Interval(Integral, 0, None), trials=POSITIVE_INT, confidence=OPEN_UNIT)
def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided confidence interval of a binomial proportion :cite:p:`CP34`.

    Parameters
    ----------
    successes : int
        Number of successes, ``0 <= successes <= trials``.
    trials : int
        Number of independent trials, at least 1.
    confidence : float
        Coverage of the interval, in ``(0, 1)``; each side fails with probability at most
        ``(1 - confidence) / 2``, so the lower (upper) end alone is a one-sided bound at level
        ``(1 + confidence) / 2``.

    Returns
    -------
    (lower, upper) : tuple of float
        Quantiles of beta distributions: ``lower = Beta(k, n - k + 1).ppf(alpha / 2)`` and
        ``upper = Beta(k + 1, n - k).ppf(1 - alpha / 2)``, exactly 0 when ``k = 0`` and exactly 1
        when ``k = n``.

    Raises
    ------
    ValueError
        If ``successes`` exceeds ``trials``, or an argument is out of range.

    References
    ----------
    :cite:t:`CP34`.

    Examples
    --------
    >>> lower, upper = clopper_pearson(0, 10, 0.95)
    >>> lower, round(upper, 4)
    (0.0, 0.3085)
    """
    if successes > trials:
        raise ValueError(f"successes: must be at most trials={trials}, got {successes}")
    alpha = (1.0 - confidence) / 2.0
    return float(_lower_bound(successes, trials, alpha)[0]), float(_upper_bound(successes, trials, alpha)[0])


# --------------------------------------------------------------------------------------------- #
# Events and results                                                                            #
# --------------------------------------------------------------------------------------------- #


def _format_value(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class Event:
    """A test event on the statistic ``s``: ``{s > threshold}``, ``{s < threshold}`` or ``{s in values}``.

    Parameters
    ----------
    kind : {"greater", "less", "in"}
        The event's form.
    threshold : float, optional
        The threshold of a ``"greater"`` or ``"less"`` event.
    values : tuple of float, default ()
        The values of an ``"in"`` event.

    Examples
    --------
    >>> import numpy as np
    >>> from projmech.audit.auditor import Event
    >>> event = Event("greater", 0.5)
    >>> event.contains(np.array([0.2, 0.7]))
    array([False,  True])
    >>> print(event, "|", Event("in", values=(0.0, 2.0)))
    statistic > 0.5 | statistic in {0, 2}
    """

    kind: Literal["greater", "less", "in"]
    threshold: float | None = None
    values: tuple[float, ...] = ()

    def contains(self, statistics: np.ndarray) -> np.ndarray:
        """Which statistics lie in the event.

        Parameters
        ----------
        statistics : array_like of float
            Values of the statistic.

        Returns
        -------
        numpy.ndarray of bool
            One entry per statistic.
        """
        statistics = np.asarray(statistics, dtype=float)
        if self.kind == "greater":
            return statistics > self.threshold
        if self.kind == "less":
            return statistics < self.threshold
        return np.isin(statistics, np.asarray(self.values, dtype=float))

    def __str__(self) -> str:
        if self.kind in ("greater", "less"):
            assert self.threshold is not None, "a greater or less event has a threshold"
            sign = ">" if self.kind == "greater" else "<"
            return f"statistic {sign} {_format_value(self.threshold)}"
        if len(self.values) == 1:
            return f"statistic = {_format_value(self.values[0])}"
        return "statistic in {" + ", ".join(_format_value(v) for v in self.values) + "}"


class Counts(NamedTuple):
    """Counts of an event on the estimation half: under the ``p`` data set, under the ``q`` one, and trials of each.

    Parameters
    ----------
    p_successes : int
        Releases on the data set favoured by the event that fall in it.
    q_successes : int
        Releases on the other data set that fall in it.
    trials : int
        Estimation releases per data set.

    Examples
    --------
    >>> from projmech.audit.auditor import Counts
    >>> counts = Counts(750, 250, 1000)
    >>> counts.p_successes / counts.trials
    0.75
    """

    p_successes: int
    q_successes: int
    trials: int


@dataclass(frozen=True)
class EventEstimate:
    """One evaluated event of an audit, with its Clopper–Pearson bounds.

    Parameters
    ----------
    pair : int
        The index of the pair.
    favoured : {0, 1}
        The data set whose probability of the event is ``p``: 0 the pair's data, 1 its neighbour.
    event : Event
        The event, chosen on the selection half.
    counts : Counts
        Its counts on the estimation half.
    p_lower : float
        One-sided Clopper–Pearson lower bound on ``p`` (at level ``1 - alpha / (4 m)`` in an
        audit of ``m`` pairs, ``alpha = 1 - confidence``).
    q_upper : float
        One-sided Clopper–Pearson upper bound on ``q``, at the same level.

    Examples
    --------
    750 of 1,000 releases on the data and 250 on the neighbour fall in the event; one-sided 99 %
    bounds are the ends of two-sided 98 % intervals:

    >>> from projmech.audit.auditor import Counts, Event, EventEstimate, clopper_pearson
    >>> p_lower = clopper_pearson(750, 1000, 0.98)[0]
    >>> q_upper = clopper_pearson(250, 1000, 0.98)[1]
    >>> estimate = EventEstimate(0, 0, Event("greater", 0.5), Counts(750, 250, 1000), p_lower, q_upper)
    >>> round(estimate.lower_bound_on_epsilon(), 3), round(estimate.lower_bound_on_delta(0.5), 3)
    (0.928, 0.25)
    >>> estimate.describe()
    'statistic > 0.5, p on data, q on neighbour (pair 0)'
    """

    pair: int
    favoured: int
    event: Event
    counts: Counts
    p_lower: float
    q_upper: float

    def lower_bound_on_epsilon(self, delta: float = 0.0) -> float:
        """The bound on epsilon at the given delta: ``max(0, ln((p_lower - delta) / q_upper))``.

        Parameters
        ----------
        delta : float, default 0.0
            The delta, in ``[0, 1)``.

        Returns
        -------
        float
            The lower bound on epsilon, ``>= 0``.
        """
        if self.p_lower <= delta:
            return 0.0
        return max(0.0, math.log((self.p_lower - delta) / self.q_upper))

    def lower_bound_on_delta(self, epsilon: float) -> float:
        """The bound on delta at the given epsilon: ``max(0, p_lower - exp(epsilon) q_upper)``.

        Parameters
        ----------
        epsilon : float
            The epsilon, ``>= 0``.

        Returns
        -------
        float
            The lower bound on delta, ``>= 0``.
        """
        return max(0.0, self.p_lower - math.exp(epsilon) * self.q_upper)

    def describe(self) -> str:
        """The event and its direction.

        Returns
        -------
        str
            E.g. ``"statistic > 0.731, p on data, q on neighbour (pair 0)"``.
        """
        p_side, q_side = ("data", "neighbour") if self.favoured == 0 else ("neighbour", "data")
        return f"{self.event}, p on {p_side}, q on {q_side} (pair {self.pair})"


def _objective(target: str, claimed_epsilon: float | None,
               claimed_delta: float | None) -> Callable[[EventEstimate], float]:
    if target == "epsilon":
        delta = claimed_delta or 0.0
        return lambda estimate: estimate.lower_bound_on_epsilon(delta)
    assert claimed_epsilon is not None
    return lambda estimate: estimate.lower_bound_on_delta(claimed_epsilon)


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit` or :func:`audit_delta`.

    Every bound it reports (the best, each pair's own, ``lower_bound_on_delta`` at any epsilon)
    holds simultaneously with probability at least ``confidence``.

    Parameters
    ----------
    name : str
        The mechanism's name (for tables).
    target : {"epsilon", "delta"}
        What the events were chosen to bound: epsilon at ``claimed_delta`` (:func:`audit`) or
        delta at ``claimed_epsilon`` (:func:`audit_delta`).
    estimates : tuple of EventEstimate
        Every event evaluated on an estimation half: two per pair (one per direction), in order.
    confidence : float
        The probability that every bound holds.
    releases : int
        Releases per data set per pair (selection and estimation halves together).
    selection_releases : int
        Of which used to choose the events.
    claimed_epsilon : float or None
        The epsilon claimed (for :func:`audit_delta`, the epsilon at which delta is bounded).
    claimed_delta : float or None
        The delta claimed; for :func:`audit`, its ``delta`` (0 for pure DP).

    See Also
    --------
    format_audit_table : A table of several results.

    Examples
    --------
    The Laplace mechanism of scale 1 on a count is 1-DP:

    >>> import projmech as pm
    >>> def laplace_count(count, rng, size):
    ...     return count + rng.laplace(0.0, 1.0, size)
    >>> result = pm.audit.audit(laplace_count, (0, 1), releases=20_000, batch=20_000,
    ...                         claimed_epsilon=1.0, rng=0)
    >>> round(result.epsilon_lower_bound, 3), result.passed, result.pairs
    (0.897, True, 1)
    >>> result.event
    'statistic > 1.15023, p on neighbour, q on data (pair 0)'
    >>> result.counts
    Counts(p_successes=4231, q_successes=1565, trials=10000)
    >>> print(result.summary())
    laplace_count: epsilon >= 0.8966 (claimed epsilon 1, delta 0; confidence 0.99; 20,000 releases per data set, 1
    pair): passed
    """

    name: str
    target: Literal["epsilon", "delta"]
    estimates: tuple[EventEstimate, ...]
    confidence: float
    releases: int
    selection_releases: int
    claimed_epsilon: float | None
    claimed_delta: float | None

    # -- the best event ------------------------------------------------------------------------

    @property
    def best(self) -> EventEstimate:
        """The evaluated event with the largest bound on the target (the first one on ties)."""
        score = _objective(self.target, self.claimed_epsilon, self.claimed_delta)
        return max(self.estimates, key=score)

    @property
    def event(self) -> str:
        """Description of the best event and its direction."""
        return self.best.describe()

    @property
    def p_lower(self) -> float:
        """The best event's lower bound on ``p``."""
        return self.best.p_lower

    @property
    def q_upper(self) -> float:
        """The best event's upper bound on ``q``."""
        return self.best.q_upper

    @property
    def counts(self) -> Counts:
        """The best event's counts on the estimation half."""
        return self.best.counts

    # -- bounds ----------------------------------------------------------------------------------

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest bound on epsilon (at ``claimed_delta``, 0 when none) over every evaluated event."""
        return self.lower_bound_on_epsilon(self.claimed_delta or 0.0)

    @property
    def delta_lower_bound(self) -> float | None:
        """The largest bound on delta at ``claimed_epsilon`` over every evaluated event (None without one)."""
        if self.claimed_epsilon is None:
            return None
        return self.lower_bound_on_delta(self.claimed_epsilon)

    def lower_bound_on_epsilon(self, delta: float = 0.0) -> float:
        """The bound on epsilon at ``delta``, the largest over every evaluated event.

        Parameters
        ----------
        delta : float, default 0.0
            The delta, in ``[0, 1)``.

        Returns
        -------
        float
            The lower bound on epsilon, ``>= 0``.
        """
        delta = _DELTA.check("delta", delta)
        return max(estimate.lower_bound_on_epsilon(delta) for estimate in self.estimates)

    def lower_bound_on_delta(self, epsilon: float) -> float:
        """The bound on delta at ``epsilon``, the largest over every evaluated event.

        The bounds at all epsilons hold simultaneously (with the result's confidence).

        Parameters
        ----------
        epsilon : float
            The epsilon, ``>= 0``.

        Returns
        -------
        float
            The lower bound on delta, ``>= 0``.
        """
        epsilon = NONNEGATIVE.check("epsilon", epsilon)
        return max(estimate.lower_bound_on_delta(epsilon) for estimate in self.estimates)

    @property
    def pairs(self) -> int:
        """Number of pairs audited."""
        return len(self.estimates) // 2

    @property
    def per_pair(self) -> tuple[EventEstimate, ...]:
        """For every pair, its better direction's evaluated event."""
        score = _objective(self.target, self.claimed_epsilon, self.claimed_delta)
        return tuple(max(self.estimates[2 * i: 2 * i + 2], key=score) for i in range(self.pairs))

    @property
    def pair_epsilon_lower_bounds(self) -> tuple[float, ...]:
        """Every pair's own bound on epsilon (at ``claimed_delta``)."""
        delta = self.claimed_delta or 0.0
        return tuple(max(e.lower_bound_on_epsilon(delta) for e in self.estimates[2 * i: 2 * i + 2])
                     for i in range(self.pairs))

    @property
    def passed(self) -> bool | None:
        """Whether the claim survived: the epsilon bound (at ``claimed_delta``) is at most ``claimed_epsilon``.

        Equivalently the delta bound at ``claimed_epsilon`` is at most ``claimed_delta``. None when
        the claim is incomplete (no ``claimed_epsilon``, or a delta audit without ``claimed_delta``).
        """
        if self.claimed_epsilon is None or self.claimed_delta is None:
            return None
        return self.epsilon_lower_bound <= self.claimed_epsilon

    # -- reporting -------------------------------------------------------------------------------

    def summary(self) -> str:
        """The bound, the claim, the confidence, the releases and the verdict, in one line.

        Returns
        -------
        str
            E.g. ``"laplace_count: epsilon >= 0.8966 (claimed epsilon 1, ...): passed"``.
        """
        verdict = {True: "passed", False: "FAILED", None: "no claim"}[self.passed]
        sample = f"{self.releases:,} releases per data set, {self.pairs} pair{'s' if self.pairs != 1 else ''}"
        if self.target == "epsilon":
            claim = "none" if self.claimed_epsilon is None else f"{self.claimed_epsilon:g}"
            return (f"{self.name}: epsilon >= {self.epsilon_lower_bound:.4f} (claimed epsilon {claim}, "
                    f"delta {self.claimed_delta:g}; confidence {self.confidence:g}; {sample}): {verdict}")
        claim = "none" if self.claimed_delta is None else f"{self.claimed_delta:g}"
        return (f"{self.name}: delta(epsilon={self.claimed_epsilon:g}) >= {self.delta_lower_bound:.4g} "
                f"(claimed delta {claim}; confidence {self.confidence:g}; {sample}): {verdict}")

    __str__ = summary

    def as_row(self) -> dict[str, Any]:
        """The result as a dict of plain values, e.g. for a table or JSON.

        Returns
        -------
        dict
            str, int, float, bool or None values: the claim, the bounds, the verdict and the best
            event with its bounds and counts.
        """
        best = self.best
        return {
            "mechanism": self.name,
            "target": self.target,
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "delta_lower_bound": self.delta_lower_bound,
            "confidence": self.confidence,
            "releases": self.releases,
            "pairs": self.pairs,
            "passed": self.passed,
            "event": best.describe(),
            "p_lower": best.p_lower,
            "q_upper": best.q_upper,
            "p_successes": best.counts.p_successes,
            "q_successes": best.counts.q_successes,
            "trials": best.counts.trials,
        }


def format_audit_table(results: Sequence[AuditResult]) -> str:
    """A plain-text table of audit results, one row per result (for the command line).

    Parameters
    ----------
    results : sequence of AuditResult
        The results, one row each.

    Returns
    -------
    str
        Columns: mechanism, claimed epsilon and delta, the epsilon lower bound, the delta lower
        bound at the claimed epsilon, confidence, releases per data set, pairs, verdict and the
        best event.

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of AuditResult.

    Examples
    --------
    >>> import projmech as pm
    >>> def laplace_count(count, rng, size):
    ...     return count + rng.laplace(0.0, 1.0, size)
    >>> result = pm.audit.audit(laplace_count, (0, 1), releases=20_000, batch=20_000,
    ...                         claimed_epsilon=1.0, rng=0)
    >>> print(pm.audit.format_audit_table([result]))
    mechanism      claimed eps  claimed delta  eps >=  delta >=  confidence  releases  pairs  result  event
    -------------  ...
    laplace_count            1              0  0.8966         0        0.99    20,000      1  passed  statistic >
    1.15023, ...
    """
    if isinstance(results, AuditResult) or not isinstance(results, Sequence):
        raise TypeError(f"results: expected a sequence of AuditResult, got {type(results).__name__}")
    for i, result in enumerate(results):
        if not isinstance(result, AuditResult):
            raise TypeError(f"results: item {i} is a {type(result).__name__}, not an AuditResult")

    def number(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    header = ["mechanism", "claimed eps", "claimed delta", "eps >=", "delta >=", "confidence",
              "releases", "pairs", "result", "event"]
    rows = []
    for result in results:
        row = result.as_row()
        rows.append([
            row["mechanism"],
            number(row["claimed_epsilon"], "g"),
            number(row["claimed_delta"], "g"),
            f"{row['epsilon_lower_bound']:.4f}",
            number(row["delta_lower_bound"], ".3g"),
            f"{row['confidence']:g}",
            f"{row['releases']:,}",
            str(row["pairs"]),
            {True: "passed", False: "FAILED", None: "-"}[row["passed"]],
            row["event"],
        ])
    widths = [max(len(line[j]) for line in [header, *rows]) for j in range(len(header))]
    numeric = {1, 2, 3, 4, 5, 6, 7}

    def render(line: list[str]) -> str:
        cells = [cell.rjust(w) if j in numeric else cell.ljust(w) for j, (cell, w) in enumerate(zip(line, widths))]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([render(header), rule, *(render(line) for line in rows)])


# --------------------------------------------------------------------------------------------- #
# Sampling                                                                                      #
# --------------------------------------------------------------------------------------------- #


def _children(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` fresh independent child generators of ``rng``."""
    try:
        return rng.spawn(count)
    except (TypeError, AttributeError, ValueError):  # a bit generator without a seed sequence
        seeds = rng.integers(0, 2**63, size=count)
        return [np.random.default_rng(int(seed)) for seed in seeds]


def _is_real_scalar(value: Any) -> bool:
    if isinstance(value, (numbers.Real, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"


def _where(pair: int, which: int) -> str:
    return f"pair {pair}, {'data' if which == 0 else 'neighbour'}"


def _sample(mechanism: Callable[..., Any], data: Any, count: int, rng: np.random.Generator,
            statistic: Callable[[Any], Any] | None, batch: int | None, pair: int, which: int) -> np.ndarray:
    """``count`` releases of ``mechanism(data)`` as statistics (1-d) or, without a statistic, vectors (2-d)."""
    where = _where(pair, which)
    if batch is not None:
        return _sample_batched(mechanism, data, count, rng, statistic, batch, where)

    values: np.ndarray | None = None
    done = 0
    while done < count:
        for child in _children(rng, min(_SPAWN_CHUNK, count - done)):
            try:
                output = mechanism(data, child)
            except Exception as error:
                raise AuditError(f"mechanism: raised {type(error).__name__}: {error} "
                                 f"({where}, release {done})") from error
            if statistic is not None:
                try:
                    value = statistic(output)
                except Exception as error:
                    raise AuditError(f"statistic: raised {type(error).__name__}: {error} "
                                     f"({where}, release {done})") from error
                if not _is_real_scalar(value):
                    raise TypeError(f"statistic: must return a real number, got {type(value).__name__} "
                                    f"({where}, release {done})")
                row = np.asarray(float(value))
            else:
                row = np.asarray(output)
                if row.dtype.kind not in "biuf" or row.ndim > 1:
                    raise TypeError(
                        f"mechanism: output {type(output).__name__} is not a number or a 1-d vector of numbers; "
                        f"pass statistic= to map it to a number ({where}, release {done})")
            if values is None:
                values = np.empty((count, *row.shape), dtype=float)
            elif row.shape != values.shape[1:]:
                raise ValueError(f"mechanism: output of shape {row.shape} differs from the first one's "
                                 f"{values.shape[1:]} ({where}, release {done})")
            values[done] = row
            done += 1
    assert values is not None
    return values


def _sample_batched(mechanism: Callable[..., Any], data: Any, count: int, rng: np.random.Generator,
                    statistic: Callable[[Any], Any] | None, batch: int, where: str) -> np.ndarray:
    pieces: list[np.ndarray] = []
    done = 0
    while done < count:
        size = min(batch, count - done)
        child = _children(rng, 1)[0]
        releases = f"releases {done} to {done + size - 1}"
        try:
            output = mechanism(data, child, size)
        except Exception as error:
            raise AuditError(f"mechanism: raised {type(error).__name__}: {error} ({where}, {releases})") from error
        if statistic is not None:
            try:
                output = statistic(output)
            except Exception as error:
                raise AuditError(f"statistic: raised {type(error).__name__}: {error} ({where}, {releases})") from error
            allowed: tuple[int, ...]
            name, allowed = "statistic", (1,)
        else:
            name, allowed = "mechanism", (1, 2)
        array = np.asarray(output)
        if array.dtype.kind not in "biuf" or array.ndim not in allowed or array.shape[0] != size:
            shape = "(size,)" if allowed == (1,) else "(size,) or (size, d)"
            raise ValueError(f"{name}: with batch, must return an array of numbers of shape {shape} with size={size}, "
                             f"got {type(output).__name__} of shape {np.shape(output)} ({where}, {releases})")
        if pieces and array.shape[1:] != pieces[0].shape[1:]:
            raise ValueError(f"{name}: output of shape {array.shape} differs from the first one's "
                             f"{pieces[0].shape} ({where}, {releases})")
        pieces.append(array.astype(float, copy=False))
        done += size
    return np.concatenate(pieces)


def _check_values(values: np.ndarray, where: str, statistic_given: bool) -> None:
    if values.ndim == 1:
        if np.isnan(values).any():
            name = "statistic" if statistic_given else "mechanism"
            raise ValueError(f"{name}: a release's statistic is nan ({where})")
    elif not np.isfinite(values).all():
        raise ValueError(f"mechanism: a vector output has a nan or infinite entry ({where}); "
                         "pass statistic= to map outputs to numbers")


# --------------------------------------------------------------------------------------------- #
# Event selection                                                                               #
# --------------------------------------------------------------------------------------------- #


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
    """Predicted bound of each candidate: its selection frequencies as counts on the estimation half."""
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


# --------------------------------------------------------------------------------------------- #
# The audit                                                                                     #
# --------------------------------------------------------------------------------------------- #


def _check_pairs(pairs: Any) -> list[tuple[Any, Any]]:
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

    Samples the mechanism on each pair of neighbouring data sets, chooses a test event per pair
    and direction on a selection half and bounds its probabilities on the other half with
    Clopper–Pearson bounds :cite:p:`CP34`. With probability at least ``confidence`` the bound is at
    most the smallest epsilon for which the mechanism is (epsilon, delta)-DP on these pairs.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, rng) -> output``, drawing all its randomness from the
        ``numpy.random.Generator`` ``rng`` (a fresh child generator per release) and keeping no
        state between calls. With ``batch``, ``mechanism(data, rng, size)`` returning ``size``
        outputs at once: an array of shape ``(size,)`` or ``(size, d)``, or anything ``statistic``
        maps to an array of shape ``(size,)``.
    pairs : tuple or list of tuples
        One pair ``(data, neighbour)`` as a tuple, or a list of pairs. The data sets are passed
        to the mechanism untouched. Each pair is audited; the result reports the best bound and
        every pair's own.
    releases : int, default 100_000
        Releases per data set per pair, at least 2, split between event selection and estimation.
    confidence : float, default 0.99
        Probability, in ``(0, 1)``, that every reported bound holds. Split by Bonferroni over
        ``4 m`` one-sided Clopper–Pearson bounds for ``m`` pairs (a lower bound on ``p`` and an upper
        bound on ``q`` for the single event chosen per pair and direction).
    statistic : callable, optional
        ``statistic(output) -> number`` (with ``batch``: ``statistic(outputs) -> array (size,)``).
        Default: the output itself when it is a number; for a vector output, its projection on the
        direction of the mean difference between the two data sets, estimated on the selection half.
        Values may be infinite (e.g. a symbol mapped to ``-inf``), not nan.
    delta : float, default 0.0
        The claimed delta, in ``[0, 1)``: the bound is ``ln((p_lower - delta) / q_upper)``.
    claimed_epsilon : float, optional
        The claimed epsilon, reported beside the bound; the audit passes when the bound is at most it.
    rng : numpy.random.Generator, int or None
        The only source of randomness (a seed makes the audit reproducible).
    selection_fraction : float, default 0.5
        Fraction of the releases, in ``(0, 1)``, used to choose the events.
    batch : int, optional
        When given, the mechanism is vectorized and called with ``size`` at most ``batch``.
    name : str, optional
        Name of the mechanism in reports (default: its ``__name__``).

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound`` (never negative, always finite), ``event``, ``p_lower``,
        ``q_upper``, ``counts``, ``passed``, ``summary()``, and every pair's own bound.

    Raises
    ------
    TypeError, ValueError
        For an invalid argument (the message names it) or an output that is not a number or
        vector of numbers without ``statistic``.
    AuditError
        When the mechanism or the statistic raises (the message names the pair and the release).

    See Also
    --------
    audit_delta : The same audit, bounding delta at a given epsilon.
    projmech.audit.self_audit.audit_cases : Audits of projmech's own mechanisms.

    Notes
    -----
    The procedure and the proof of its guarantee are in the theory page *Privacy: definitions,
    sensitivity and calibration* (``docs/theory/privacy.md``, section *Auditing*).

    References
    ----------
    :cite:t:`DWWZK18` and :cite:t:`JUO20` (statistical auditing); :cite:t:`CP34`.

    Examples
    --------
    Randomized response on one bit is exactly ln(3)-DP:

    >>> import math
    >>> import numpy as np
    >>> def randomized_response(bit, rng, size):
    ...     keep = rng.random(size) < 0.75
    ...     return np.where(keep, bit, 1 - bit)
    >>> result = audit(randomized_response, (0, 1), releases=200_000, batch=100_000,
    ...                claimed_epsilon=math.log(3), rng=1)
    >>> 0.9 < result.epsilon_lower_bound <= math.log(3)
    True
    >>> result.passed
    True

    A mechanism of one's own, one release at a time, with a statistic mapping its transcript
    to a number:

    >>> def noisy_count(count, rng):
    ...     return ("count", count + rng.laplace(0.0, 1.0))
    >>> result = audit(noisy_count, [(0, 1), (1, 0)], releases=2_000, claimed_epsilon=1.0,
    ...                statistic=lambda transcript: transcript[1], rng=2)
    >>> result.passed
    True
    """
    assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
    return _run(mechanism, pairs, target="epsilon", releases=releases, confidence=confidence, statistic=statistic,
                claimed_epsilon=claimed_epsilon, claimed_delta=delta, rng=rng,
                selection_fraction=selection_fraction, batch=batch, name=name)


@validate_params(epsilon=NONNEGATIVE, claimed_delta=OrNone(_DELTA), **_AUDIT_PARAMETERS)
def audit_delta(
    mechanism: Callable[..., Any],
    pairs: tuple[Any, Any] | list[tuple[Any, Any]],
    epsilon: float,
    *,
    releases: int = 100_000,
    confidence: float = 0.99,
    statistic: Callable[[Any], Any] | None = None,
    claimed_delta: float | None = None,
    rng: np.random.Generator | int | None = None,
    selection_fraction: float = 0.5,
    batch: int | None = None,
    name: str | None = None,
) -> AuditResult:
    """A statistically valid lower bound on the delta of ``mechanism`` at ``epsilon``.

    As :func:`audit`, but the events are chosen to maximize ``p_lower - exp(epsilon) q_upper``;
    the result's ``delta_lower_bound`` is the bound (clipped at 0) and it passes when that is at
    most ``claimed_delta``.

    Parameters
    ----------
    epsilon : float
        The epsilon, finite and ``>= 0``, at which delta is bounded.
    claimed_delta : float, optional
        The claimed delta at ``epsilon``, in ``[0, 1)``.
    mechanism, pairs, releases, confidence, statistic, rng, selection_fraction, batch, name
        As in :func:`audit`.

    Returns
    -------
    AuditResult
        With ``target == "delta"``, ``claimed_epsilon == epsilon``.

    Raises
    ------
    TypeError, ValueError
        For an invalid argument (the message names it), as in :func:`audit`.
    AuditError
        When the mechanism or the statistic raises.

    Examples
    --------
    >>> import numpy as np
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
