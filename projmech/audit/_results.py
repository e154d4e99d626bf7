"""Audit results: Clopper–Pearson bounds, the test events and what an audit reports."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from ..validation import NONNEGATIVE, OPEN_UNIT, POSITIVE_INT, Integral, Interval, Real, validate_params

__all__ = ["AuditResult", "Counts", "Event", "EventEstimate", "clopper_pearson", "format_audit_table"]


def _lower_bound(successes: Any, trials: int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound at level ``1 - alpha`` (vectorized; real counts allowed)."""
    from scipy import stats  # imported where needed: SciPy's statistics are slow to import

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
    """The exact two-sided confidence interval of a binomial proportion :cite:p:`CP34`: 0 at no success, 1 at all.

    Parameters
    ----------
    successes, trials, confidence
        At most ``trials`` successes of at least one trial; the coverage in ``(0, 1)``, each end alone
        a one-sided bound at ``(1 + confidence) / 2``.

    Returns
    -------
    (lower, upper) : tuple of float

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


def _format_value(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class Event:
    """A test event on the statistic ``s``: ``{s > threshold}``, ``{s < threshold}`` or ``{s in values}``.

    Parameters
    ----------
    kind, threshold, values
        ``"greater"``, ``"less"`` or ``"in"``; the threshold of the first two; the values of the last.

    Examples
    --------
    >>> pm.audit.Event("greater", 0.5).contains(np.array([0.2, 0.7]))
    array([False,  True])
    >>> print(pm.audit.Event("greater", 0.5), "|", pm.audit.Event("in", values=(0.0, 2.0)))
    statistic > 0.5 | statistic in {0, 2}
    """

    kind: Literal["greater", "less", "in"]
    threshold: float | None = None
    values: tuple[float, ...] = ()

    def contains(self, statistics: np.ndarray) -> np.ndarray:
        """Which statistics lie in the event.

        Parameters
        ----------
        statistics
            Values of the statistic.

        Returns
        -------
        numpy.ndarray of bool
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
    """Counts of an event on the estimation half, under the ``p`` and the ``q`` data set, of ``trials`` each.

    Parameters
    ----------
    p_successes, q_successes, trials
        Releases on the favoured data set, and on the other, in the event; releases per data set.

    Examples
    --------
    >>> pm.audit.Counts(750, 250, 1000).trials
    1000
    """

    p_successes: int
    q_successes: int
    trials: int


@dataclass(frozen=True)
class EventEstimate:
    """One evaluated event of an audit, with its one-sided Clopper–Pearson bounds on ``p`` and ``q``.

    Parameters
    ----------
    pair, favoured
        The pair's index, and the data set (0 the data, 1 its neighbour) whose probability is ``p``.
    event, counts
        The event chosen on the selection half, and its counts on the estimation half.
    p_lower, q_upper
        The bounds, each at level ``1 - alpha / (4 m)`` for ``m`` pairs.

    Examples
    --------
    >>> p_lower, q_upper = clopper_pearson(750, 1000, 0.98)[0], clopper_pearson(250, 1000, 0.98)[1]
    >>> estimate = EventEstimate(0, 0, Event("greater", 0.5), Counts(750, 250, 1000), p_lower, q_upper)
    >>> round(estimate.lower_bound_on_epsilon(), 3), round(estimate.lower_bound_on_delta(0.5), 3)
    (0.928, 0.25)
    """

    pair: int
    favoured: int
    event: Event
    counts: Counts
    p_lower: float
    q_upper: float

    def lower_bound_on_epsilon(self, delta: float = 0.0) -> float:
        """The event's bound on epsilon: ``max(0, ln((p_lower - delta) / q_upper))``.

        Parameters
        ----------
        delta
            In ``[0, 1)``.

        Returns
        -------
        float
        """
        if self.p_lower <= delta:
            return 0.0
        return max(0.0, math.log((self.p_lower - delta) / self.q_upper))

    def lower_bound_on_delta(self, epsilon: float) -> float:
        """The event's bound on delta: ``max(0, p_lower - exp(epsilon) q_upper)``.

        Parameters
        ----------
        epsilon
            At least 0.

        Returns
        -------
        float
        """
        return max(0.0, self.p_lower - math.exp(epsilon) * self.q_upper)

    def describe(self) -> str:
        """The event and its direction, e.g. ``"statistic > 0.731, p on data, q on neighbour (pair 0)"``.

        Returns
        -------
        str
        """
        p_side, q_side = ("data", "neighbour") if self.favoured == 0 else ("neighbour", "data")
        return f"{self.event}, p on {p_side}, q on {q_side} (pair {self.pair})"


def _objective(target: str, claimed_epsilon: float | None,
               claimed_delta: float | None) -> Callable[[EventEstimate], float]:
    """The bound an event is chosen for: on epsilon at the claimed delta, or on delta at the claimed epsilon."""
    if target == "epsilon":
        delta = claimed_delta or 0.0
        return lambda estimate: estimate.lower_bound_on_epsilon(delta)
    assert claimed_epsilon is not None
    return lambda estimate: estimate.lower_bound_on_delta(claimed_epsilon)


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit` or :func:`audit_delta`: its bounds hold at once with probability ``confidence``.

    Parameters
    ----------
    name, target
        The mechanism's name in reports; ``"epsilon"`` or ``"delta"``, what the events were chosen to bound.
    estimates
        Every evaluated event, two per pair (one per direction), in order.
    confidence, releases, selection_releases
        As in :func:`audit`; the releases per data set that chose the events.
    claimed_epsilon, claimed_delta
        The claim (for :func:`audit_delta`, ``claimed_epsilon`` is the epsilon it bounds delta at).

    Examples
    --------
    >>> def laplace_count(count, rng, size):
    ...     return count + rng.laplace(0.0, 1.0, size)
    >>> result = pm.audit.audit(laplace_count, (0, 1), releases=20_000, batch=20_000, claimed_epsilon=1.0, rng=0)
    >>> round(result.epsilon_lower_bound, 3), result.passed, result.pairs, result.counts
    (0.897, True, 1, Counts(p_successes=4231, q_successes=1565, trials=10000))
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
        """:meth:`EventEstimate.lower_bound_on_epsilon` at ``delta`` in ``[0, 1)``, maximized over the events.

        Parameters
        ----------
        delta
            The delta the bound is at.

        Returns
        -------
        float
        """
        delta = _DELTA.check("delta", delta)
        return max(estimate.lower_bound_on_epsilon(delta) for estimate in self.estimates)

    def lower_bound_on_delta(self, epsilon: float) -> float:
        """:meth:`EventEstimate.lower_bound_on_delta` at ``epsilon``, maximized over the events.

        Parameters
        ----------
        epsilon
            At least 0. The bounds at every epsilon hold at once, so a curve of them holds with
            probability ``confidence`` too.

        Returns
        -------
        float
            0 where no event bounds it.
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
        """Whether the claim survived: the epsilon bound at ``claimed_delta`` is at most ``claimed_epsilon``."""
        if self.claimed_epsilon is None or self.claimed_delta is None:
            return None
        return self.epsilon_lower_bound <= self.claimed_epsilon

    # -- reporting -------------------------------------------------------------------------------

    def summary(self) -> str:
        """The bound, the claim, the confidence, the releases and the verdict, in one line.

        Returns
        -------
        str
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
        """The result as a dict of plain values: the claim, the bounds, the verdict, the best event.

        Returns
        -------
        dict
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
    results
        A sequence of :class:`AuditResult`.

    Returns
    -------
    str

    Examples
    --------
    >>> result = pm.audit.audit(lambda count, rng, size: count + rng.laplace(0.0, 1.0, size), (0, 1),
    ...                         releases=2_000, batch=2_000, claimed_epsilon=1.0, rng=0, name="laplace_count")
    >>> print(pm.audit.format_audit_table([result]))
    mechanism      claimed eps  claimed delta  eps >=  delta >=  confidence  releases  pairs  result  event
    -------------  ...
    laplace_count            1              0  ...  passed  statistic ...
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
