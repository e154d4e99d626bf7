"""Per-query confidence intervals for released answers, from public quantities only.

Unprojected answers carry one known draw of noise per query (``r_i^T Z`` for a factorization),
so their intervals are exact (at least ``level`` for discrete noise). Projected answers get
simultaneous Bonferroni intervals of the noisy answers, clipped to each query's range over
``K_Q`` when the size is the row count. Derivations: the user guide *Confidence intervals*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._sparse import issparse
from ..privacy.noise import Noise
from ..validation import OPEN_UNIT

if TYPE_CHECKING:
    from .release import Release

__all__ = ["ConfidenceIntervals", "confidence_intervals"]


@dataclass(frozen=True, eq=False)
class ConfidenceIntervals:
    """Confidence intervals ``[lower, upper]`` for the true answers of a release, one per query.

    Made by :meth:`Release.confidence_intervals <projmech.mechanisms.additive.Release.confidence_intervals>`;
    the true answers are the true counts over the release's ``size``.

    Parameters
    ----------
    lower, upper : ndarray, shape (k,)
        The intervals' ends.
    level : float
        The confidence level asked for.
    method : str
        How the intervals were obtained, in words.
    exact : bool
        Whether each interval covers its truth with probability exactly ``level`` (else at least).
    simultaneous : bool
        Whether all ``k`` intervals hold at once with probability at least ``level``.

    Examples
    --------
    >>> import numpy as np, projmech as pm
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
        """Which intervals contain the given answers.

        Parameters
        ----------
        answers : array_like, shape (k,)
            One value per query.

        Returns
        -------
        ndarray of bool, shape (k,)
            ``lower <= answers <= upper``.
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
    """Each query's range over ``K_Q`` (its row's extreme entries) when the truth lies in ``K_Q``, else None."""
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
    """The confidence intervals of a release's answers (see :class:`ConfidenceIntervals`).

    Parameters
    ----------
    release : Release
        The release.
    level : float, default 0.95
        The confidence level, in ``(0, 1)``.

    Returns
    -------
    ConfidenceIntervals
        Exact or at least ``level`` per query, or simultaneous for projected answers.

    Raises
    ------
    ValueError
        If the release has no per-answer noise (MWEM, the adaptive mechanism), or an approximate
        factorization's bias cannot be bounded.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> from projmech.mechanisms.intervals import confidence_intervals
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
