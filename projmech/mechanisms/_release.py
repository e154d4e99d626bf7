"""The release: privately released answers, what interprets them, and their confidence intervals
(derived in the user guide's *Confidence intervals*)."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from .._sparse import issparse
from ..bodies import LocalResult, ProjectionResult, RelaxationResult, TablesResult
from ..factorization import Factorization, table_measurements
from ..privacy import Neighbouring, Noise, Privacy
from ..tables import Measurement
from ..validation import OPEN_UNIT
from ..workloads import Workload

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp

    from .adaptive import AdaptiveRound

__all__ = ["Release", "ConfidenceIntervals", "confidence_intervals"]

#: A JSON value: what a release's ``estimate`` summary holds (solver statistics, risks, names).
JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"


@dataclass(frozen=True, eq=False, repr=False)
class Release:
    """Privately released answers and everything needed to interpret them.

    Every field is a function of the noisy measurements and public parameters only, never of the
    true answers, the histogram or a private row count. Made by the mechanisms' ``release``.

    Parameters
    ----------
    answers, noisy_answers, label_source, mechanism
        The answers (fractions of ``size``), the noisy ones before any projection, a callable giving
        the labels, the mechanism's name.
    privacy, neighbouring, size, size_source, noise, sensitivity, size_noise
        The guarantee (all shares included), its relation, the public size and its source, the noise
        on each measured count, their sensitivity, the size estimate's noise.
    projection, factorization, workload, answer_sigma_rms, rounds, estimate, measured
        What a mechanism adds (else None): the projection's result, the strategy, the workload, the
        answers' noise RMS, the adaptive rounds and estimate, the noisy measured answers.
    metric : str
        What the projection measured distance in: ``"answers"``, or the factorization mechanism's
        ``"tables"`` or ``"precision"`` (its measurements projected).

    Examples
    --------
    >>> data = pm.Dataset(np.array([[0], [1], [1]]), pm.Domain(["a"], [2]))
    >>> release = pm.GaussianMechanism(pm.marginals(data.domain, 1), pm.ZCDP(0.5)).release(data, rng=0)
    >>> release.labels, release.size, release.size_source, release.summary()["guarantee"]
    (('a=0', 'a=1'), 3.0, 'public n', '0.5-zCDP')
    """

    answers: np.ndarray
    noisy_answers: np.ndarray
    label_source: Callable[[], tuple[str, ...]]
    mechanism: str
    privacy: Privacy
    neighbouring: Neighbouring
    size: float
    size_source: str
    noise: Noise
    sensitivity: float
    size_noise: Noise | None = None
    projection: ProjectionResult | RelaxationResult | TablesResult | LocalResult | None = None
    factorization: Factorization | None = None
    answer_sigma_rms: float | None = None
    workload: Workload | None = None
    rounds: tuple[AdaptiveRound, ...] | None = None
    estimate: dict[str, JSON] | None = None
    measured: np.ndarray | None = None
    metric: str = "answers"

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """One label per query, built from ``label_source`` on first access."""
        return self.label_source()

    @property
    def scale(self) -> float:
        """The noise's scale (sigma or b) on the released fractions: ``noise.scale / size``."""
        return self.noise.scale / self.size

    @property
    def sigma(self) -> float:
        """The noise's standard deviation on each measured count, over ``size`` (a factorization's strategy's)."""
        return self.noise.std / self.size

    @property
    def witness(self) -> np.ndarray | sp.csr_array | None:
        """A distribution ``w`` with ``F @ witness == answers`` (projection onto ``K_Q`` only)."""
        return None if self.projection is None else self.projection.witness

    @property
    def moments(self) -> np.ndarray | None:
        """The moment matrix ``[[1, mu^T], [mu, P]]`` whose image the answers are (relaxation L only)."""
        return None if self.projection is None else self.projection.moments

    @property
    def counts(self) -> np.ndarray:
        """The released answers as counts, ``size * answers``."""
        return self.size * self.answers

    def measurements(self) -> tuple[Measurement, ...] | None:
        """The noisy measurements as data (values over ``size``, deviation :attr:`sigma`), one per table
        read, each query kept as its Kronecker factors.

        Returns
        -------
        tuple of Measurement or None
            None for Laplace or zero noise, or no fixed measured queries with table structure.
        """
        if (self.measured is None or self.noise.distribution != "gaussian" or self.workload is None
                or not self.sigma > 0):
            return None
        queries = self.workload if self.factorization is None else self.factorization.strategy
        return table_measurements(queries, self.measured, self.sigma)

    def row_source(self) -> tuple[ProjectionResult | RelaxationResult | TablesResult | LocalResult, Workload | None,
                                  Workload]:
        """What :func:`~projmech.synthetic.synthetic_data` draws this release's rows from.

        Returns
        -------
        projection, drawing, answered
            The projection, the workload to draw and check rows with (None for L and for the tables
            of ``metric="tables"``, which check their rows themselves), the workload answered;
            a ValueError without a projection or for the adaptive mechanism (its run holds the estimate).
        """
        if self.rounds is not None:
            raise ValueError("an adaptive release's rows come from its run's estimate: pass the AdaptiveRun "
                             "(mechanism.run(data)), or call projmech.synthesize / mechanism.synthesize")
        if self.projection is None or self.workload is None:
            raise ValueError(f"a {self.mechanism} release holds no projection to draw rows from; for rows call "
                             "projmech.synthesize, or release with ProjectionMechanism")
        drawing: Workload | None = self.workload
        if self.metric == "precision":  # its answers are the measurements', in their noise units
            raise ValueError("this release projected the strategy's measurements in their noise metric "
                             "(metric='precision'), whose answers are the measurements' and not the rows'; "
                             "release with metric='tables' or 'answers', or call projmech.synthesize")
        if self.metric == "tables":  # its own (maximal) tables, whose rows it draws and checks by itself
            drawing = None
        if isinstance(self.projection, RelaxationResult):
            drawing = None
        return self.projection, drawing, self.workload

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """Per-query confidence intervals for the true answers (see :func:`confidence_intervals`).

        Parameters
        ----------
        level : float
            In ``(0, 1)``.

        Returns
        -------
        ConfidenceIntervals
        """
        return confidence_intervals(self, level)

    def to_frame(self) -> pd.DataFrame:
        """The answers as a table: columns ``query`` (the label), ``answer`` and ``noisy_answer``.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd  # only here: a release needs no pandas until it becomes a frame

        return pd.DataFrame({"query": list(self.labels), "answer": self.answers, "noisy_answer": self.noisy_answers})

    def summary(self) -> dict[str, Any]:
        """A JSON-serializable description: guarantee, relation, size, noise, solver statistics.

        Returns
        -------
        dict
        """
        summary: dict[str, Any] = {
            "mechanism": self.mechanism,
            "guarantee": str(self.privacy),
            "privacy": {"type": type(self.privacy).__name__, **vars(self.privacy)},
            "neighbouring": self.neighbouring.value,
            "size": self.size,
            "size_source": self.size_source,
            "num_queries": len(self.answers),
            "noise": self.noise.summary(),
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
        }
        if self.size_noise is not None:
            summary["size_noise"] = self.size_noise.summary()
        if self.projection is not None:
            summary["solver"] = self.projection.summary()
            summary["body"] = summary["solver"]["body"]
            if self.metric != "answers":
                summary["metric"] = self.metric
        if self.factorization is not None:
            summary["factorization"] = self.factorization.summary()
            summary["answer_sigma_rms"] = self.answer_sigma_rms
        if self.rounds is not None:
            summary["rounds"] = [{"attributes": list(r.attributes), "sigma": r.sigma, "selection_rho": r.selection_rho,
                                  "measurement_rho": r.measurement_rho, "annealed": r.annealed} for r in self.rounds]
        if self.estimate is not None:
            summary["estimate"] = copy.deepcopy(self.estimate)  # the release stays as it was
        return summary

    def to_json(self) -> str:
        """The :meth:`summary` as indented JSON text.

        Returns
        -------
        str
        """
        return json.dumps(self.summary(), indent=2)

    def __repr__(self) -> str:
        projected = "" if self.projection is None else f", projected: {self.projection.stats}"
        return (f"Release({self.mechanism}, {len(self.answers):,} answers, {self.privacy}, "
                f"{self.neighbouring.value}, size {self.size:g} ({self.size_source}), "
                f"{self.noise.name} std {self.noise.std:.4g}{projected})")

    def _answer_noise(self) -> str:
        """The answers' noise in words."""
        if self.factorization is not None and self.answer_sigma_rms is not None:
            return f"{self.sigma:.4g} per measurement, RMS {self.answer_sigma_rms:.4g} on the answers"
        return f"{self.sigma:.4g} on the answers"

    def __str__(self) -> str:
        lines = [
            f"{self.mechanism} release of {len(self.answers):,} answers",
            f"  guarantee   {self.privacy}, {self.neighbouring.value} neighbours",
            f"  size        {self.size:g} ({self.size_source})",
            f"  noise       {self.noise.name}, std {self.noise.std:.4g} per measured count "
            f"(sensitivity {self.sensitivity:.4g}); {self._answer_noise()}",
        ]
        if self.factorization is not None:
            lines.append(f"  strategy    {self.factorization}")
        if self.projection is not None:
            lines.append(f"  projection  {self.projection.summary().get('body', 'hull')}: {self.projection.stats}")
        if self.estimate is not None:
            lines.append(f"  estimate    {self.estimate['estimator']}" + "".join(
                f"; {part} {_status(self.estimate[part])}" for part in ("projection", "fit") if part in self.estimate))
        preview = ", ".join(f"{label}={answer:.4g}" for label, answer in zip(self.labels[:3], self.answers[:3]))
        lines.append(f"  answers     {preview}{', ...' if len(self.answers) > 3 else ''}")
        return "\n".join(lines)


def _status(stats: JSON) -> JSON:
    """A solver summary's ``status``."""
    return stats["status"] if isinstance(stats, dict) else stats


@dataclass(frozen=True, eq=False)
class ConfidenceIntervals:
    """Confidence intervals ``[lower, upper]`` for the true answers (counts over ``size``) of a release.

    Parameters
    ----------
    lower, upper, level, method
        The intervals' ends, the confidence level, and how they were obtained, in words.
    exact, simultaneous : bool
        Whether each covers with probability exactly ``level`` (else at least); whether all do at once.

    Examples
    --------
    >>> data = pm.Dataset(np.arange(8).repeat(10)[:, None], pm.Domain(["x"], [8]))
    >>> mechanism = pm.GaussianMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    >>> intervals = mechanism.release(data, rng=np.random.default_rng(0)).confidence_intervals(0.95)
    >>> intervals.method, intervals.exact, round(float(intervals.width[0]), 4)
    ('exact: gaussian quantile', True, 0.1296)
    """

    lower: np.ndarray
    upper: np.ndarray
    level: float
    method: str
    exact: bool
    simultaneous: bool

    @property
    def width(self) -> np.ndarray:
        """``upper - lower`` for each query."""
        return self.upper - self.lower

    @property
    def mean_width(self) -> float:
        """The average width over the queries."""
        return float(np.mean(self.width))

    def covers(self, answers: Any) -> np.ndarray:
        """Which intervals contain the given answers: ``lower <= answers <= upper``.

        Parameters
        ----------
        answers : array_like, shape (k,)
            One value per query.

        Returns
        -------
        ndarray of bool, shape (k,)
        """
        values = np.asarray(answers, dtype=float)
        if values.shape != self.lower.shape:
            raise ValueError(f"answers: expected shape {self.lower.shape}, got {values.shape}")
        return (self.lower <= values) & (values <= self.upper)

    def __repr__(self) -> str:
        return (f"ConfidenceIntervals({self.lower.size:,} queries, level {self.level:g}, {self.method}, "
                f"mean width {self.mean_width:.4g})")


def _noise_half_widths(release: Release, level: float) -> tuple[np.ndarray, str, bool]:
    """Each noisy answer's half-width in counts at ``level``, the method and whether exact."""
    noise = release.noise
    k = len(release.answers)
    if release.factorization is None:
        if noise.discrete:
            # Integer noise on integer counts: every half-width in [t, t + 1) covers the same
            # counts. t + 1/2 keeps a truth at distance exactly t inside after the division by
            # the size rounds (at t itself, a tenth of the ends' mass fell out to rounding).
            half = np.full(k, noise.half_width(level) + 0.5 if noise.scale > 0 else 0.0)
            return half, f"{noise.name} quantile (coverage at least the level: integer noise)", False
        return np.full(k, noise.half_width(level)), f"exact: {noise.name} quantile", True
    norms = release.factorization.query_norms
    if not noise.discrete:
        # r_i^T Z ~ N(0, sigma^2 ||r_i||^2) exactly.
        return (Noise("gaussian", 1.0, discrete=False).half_width(level) * noise.std * norms,
                "exact: gaussian, each query's variance from R", True)
    # A sum of discrete Gaussians is not one; but N_Z(0, sigma^2) is sigma-sub-Gaussian (CKS20),
    # so P(|r^T Z| > t) <= 2 exp(-t^2 / (2 sigma^2 ||r||^2)).
    return (noise.scale * norms * math.sqrt(2.0 * math.log(2.0 / (1.0 - level))),
            "sub-gaussian bound: discrete gaussian noise, each query's variance from R", False)


def _bias_bounds(release: Release) -> np.ndarray | None:
    """``max_j |E_ij|`` per query for an approximate factorization ``R M = F + E``, else None."""
    perturbation = getattr(release.factorization, "perturbation", None)
    if perturbation is None:
        return None
    if release.size_source != "public n":
        raise ValueError("confidence_intervals: an approximate factorization's bias E c / size is bounded only when "
                         "the size is the public row count (replace-one neighbours)")
    return np.abs(np.asarray(perturbation)).max(axis=1)


def _query_ranges(release: Release) -> tuple[np.ndarray, np.ndarray] | None:
    """Each query's range over ``K_Q`` when the truth lies in ``K_Q``, else None."""
    workload = release.workload
    if workload is None or workload.is_implicit or release.size_source != "public n":
        return None
    matrix = workload.matrix
    if issparse(matrix):
        # scipy counts the implicit zeros of a row that is not full.
        low, high = matrix.min(axis=1), matrix.max(axis=1)
        return np.asarray(low.toarray() if issparse(low) else low).ravel(), \
            np.asarray(high.toarray() if issparse(high) else high).ravel()
    dense = np.asarray(matrix)
    return dense.min(axis=1), dense.max(axis=1)


def confidence_intervals(release: Release, level: float = 0.95) -> ConfidenceIntervals:
    """The confidence intervals of a release's answers: exact (at least ``level`` for discrete noise)
    or, for projected answers, simultaneous (Bonferroni over the noisy answers).

    Parameters
    ----------
    release, level
        The release (with per-answer noise: not MWEM's, nor the adaptive mechanism's), and the level in ``(0, 1)``.

    Returns
    -------
    ConfidenceIntervals
        With the method in words, and whether they are exact and simultaneous.

    Examples
    --------
    >>> from projmech.mechanisms import confidence_intervals
    >>> data = pm.Dataset(np.arange(8).repeat(10)[:, None], pm.Domain(["x"], [8]))
    >>> mechanism = pm.FactorizationMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    >>> intervals = confidence_intervals(mechanism.release(data, rng=np.random.default_rng(0)), 0.9)
    >>> intervals.exact, int(intervals.covers((np.arange(8) + 1) / 8).sum())
    (True, 8)
    """
    level = float(OPEN_UNIT.check("level", level))
    if release.rounds is not None:
        raise ValueError(f"confidence_intervals: the {release.mechanism} release's answers are estimated from "
                         "adaptively chosen measurements; its run's AdaptiveRun.confidence_intervals(level) gives "
                         "simultaneous intervals from them")
    if release.answer_sigma_rms is None:
        raise ValueError(f"confidence_intervals: the {release.mechanism} release has no per-answer noise "
                         "distribution (its answers come from a synthetic distribution); use the mechanism's "
                         "error_bound")
    k = len(release.answers)
    projected = release.projection is not None
    # Projected answers: every noisy interval at once, by the union bound over the k queries.
    half, method, exact = _noise_half_widths(release, 1.0 - (1.0 - level) / k if projected else level)
    half = half / release.size
    bias = _bias_bounds(release)
    if bias is not None:
        half = half + bias
        method, exact = f"{method}, widened by the bias bound max_j |E_ij|", False
    lower, upper = release.noisy_answers - half, release.noisy_answers + half
    if not projected:
        return ConfidenceIntervals(lower, upper, level, method, exact, simultaneous=k == 1)
    method = f"bonferroni over the {k:,} noisy answers, each from its {method.removeprefix('exact: ')}"
    ranges = _query_ranges(release)
    if ranges is not None:
        # Both ends into the range: an interval wholly outside it becomes the nearest end point
        # (the truth lies in the range, so such an interval had missed it anyway).
        lower, upper = np.clip(lower, *ranges), np.clip(upper, *ranges)
        method += ", clipped to each query's range over K_Q"
    return ConfidenceIntervals(lower, upper, level, method, exact=False, simultaneous=True)
