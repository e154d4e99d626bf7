"""Error measures and repeated trials with confidence intervals.

A release's average error is its root-mean-square error over the ``k`` queries, the measure the
bounds are stated in :cite:p:`NTZ13,ENU20` (:doc:`/theory/bounds`). ``estimate`` and ``truth``
are the released and the true answers, shape ``(k,)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..data import Dataset, resolve_rows
from ..validation import (
    GENERATOR,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE_INT,
    Integral,
    Interval,
    IsCallable,
    OrNone,
    check_real_array,
    validate_params,
)
from .geometry import gaussian_norm_mean, t_quantile

__all__ = ["rmse", "max_error", "gaussian_expected_rmse", "TrialSummary", "evaluate", "mean_confidence_interval"]


def _pair(estimate: Any, truth: Any) -> tuple[np.ndarray, np.ndarray]:
    a = check_real_array("estimate", estimate, finite=False)
    b = check_real_array("truth", truth, finite=False)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"estimate and truth: expected equal 1-d shapes, got {a.shape} and {b.shape}")
    return a, b


def rmse(estimate: Any, truth: Any) -> float:
    """The root-mean-square error ``(1/sqrt k) ||estimate - truth||_2`` of ``k`` answers.

    Parameters
    ----------
    estimate, truth
        See the module docstring.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.rmse([0.5, 0.25, 0.0, 1.0], [0.5, 0.25, 1.0, 0.0])  # sqrt(2 / 4)
    0.7071067811865476
    """
    a, b = _pair(estimate, truth)
    return float(np.linalg.norm(a - b) / math.sqrt(a.size))


def max_error(estimate: Any, truth: Any) -> float:
    """The worst query's error ``||estimate - truth||_inf``.

    Parameters
    ----------
    estimate, truth : array_like
        As for :func:`rmse`.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.max_error([0.5, 0.2, 0.0], [0.5, 0.25, 0.1])
    0.1
    """
    a, b = _pair(estimate, truth)
    return float(np.abs(a - b).max())


@validate_params(sigma=NONNEGATIVE, k=POSITIVE_INT)
def gaussian_expected_rmse(sigma: float, k: int) -> float:
    """The exact expected RMSE ``sigma c_k / sqrt k`` of ``N(0, sigma² I_k)`` noise.

    Parameters
    ----------
    sigma, k
        The standard deviation ``>= 0`` and ``k``; ``c_k`` is :func:`~projmech.analysis.geometry.gaussian_norm_mean`.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.gaussian_expected_rmse(1.0, 1), 4)  # E|Z| = sqrt(2 / pi)
    0.7979
    """
    c_k = gaussian_norm_mean(k)
    return sigma * c_k / math.sqrt(k)


@validate_params(confidence=OPEN_UNIT)
def mean_confidence_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """The sample mean with a Student-t interval ``mean -+ t_{t-1} s / sqrt(t)``.

    Parameters
    ----------
    values, confidence
        At least two observations; the level, in ``(0, 1)``.

    Returns
    -------
    mean, low, high : float

    Examples
    --------
    >>> [round(value, 3) for value in pm.analysis.mean_confidence_interval([1.0, 2.0, 3.0, 4.0])]
    [2.5, 0.446, 4.554]
    """
    sample = check_real_array("values", values, finite=False)
    if sample.ndim != 1 or sample.size < 2:
        raise ValueError(f"values: need at least 2 values for an interval, got {sample.size}")
    mean = float(sample.mean())
    half = t_quantile(sample.size, confidence) * float(sample.std(ddof=1)) / math.sqrt(sample.size)
    return mean, mean - half, mean + half


class _Mechanism(Protocol):
    workload: Any

    def release(self, data_or_histogram: Any, n: int | None = None, *, rng: Any = None) -> Any: ...


@dataclass(frozen=True)
class TrialSummary:
    """The error of a mechanism over repeated independent releases, from :func:`evaluate`.

    Parameters
    ----------
    mechanism, trials, n, confidence
        The mechanism's name; the numbers of releases and of records; the intervals' level.
    rmse_mean, rmse_low, rmse_high, max_error_mean, time_mean, rmse_values
        Mean RMSE and its interval; mean worst error; mean seconds; each release's RMSE.

    Examples
    --------
    >>> gaussian = pm.GaussianMechanism(pm.identity(4), pm.ZCDP(1.0), noise="continuous")
    >>> pm.evaluate(gaussian, np.full(4, 0.25), trials=5, rng=np.random.default_rng(1), n=100).trials
    5
    """

    mechanism: str
    trials: int
    n: int
    rmse_mean: float
    rmse_low: float
    rmse_high: float
    max_error_mean: float
    time_mean: float
    confidence: float
    rmse_values: np.ndarray

    def row(self) -> dict[str, Any]:
        """The summary as one table row, without the per-trial values.

        Returns
        -------
        dict
        """
        return {
            "mechanism": self.mechanism,
            "n": self.n,
            "trials": self.trials,
            "rmse_mean": self.rmse_mean,
            "rmse_ci_low": self.rmse_low,
            "rmse_ci_high": self.rmse_high,
            "max_error_mean": self.max_error_mean,
            "time_mean_s": self.time_mean,
        }


@validate_params(trials=Interval(Integral, 2, None, reason="a confidence interval"),
                 rng=GENERATOR, confidence=OPEN_UNIT,
                 progress=OrNone(IsCallable()))
def evaluate(
    mechanism: _Mechanism,
    data: Dataset | np.ndarray,
    trials: int,
    rng: np.random.Generator,
    *,
    n: int | None = None,
    confidence: float = 0.95,
    progress: Any = None,
) -> TrialSummary:
    """Run ``trials`` independent releases and summarize their error against the true answers.

    Parameters
    ----------
    mechanism
        Any object with ``workload`` and ``release(data, n, rng=rng)``.
    data, n
        A Dataset (answers counted from its records), or a normalized histogram and its record count.
    trials, rng, confidence, progress
        At least 2 releases; all their noise; the interval's level; called after each (e.g. ``tqdm.update``).

    Returns
    -------
    TrialSummary

    Examples
    --------
    >>> mechanism = pm.GaussianMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    >>> round(pm.evaluate(mechanism, np.full(8, 1 / 8), 20, np.random.default_rng(0), n=1000).rmse_mean, 5)
    0.00251
    """
    resolved, size = resolve_rows(data, n, universe_size=mechanism.workload.universe_size)
    if isinstance(resolved, Dataset):
        # Counted from the records: no histogram over a universe that may not fit in memory.
        # The mechanism gets the Dataset too.
        truth = mechanism.workload.answer_data(resolved)

        def release() -> Any:
            return mechanism.release(resolved, rng=rng)
    else:
        truth = mechanism.workload.answer(resolved) / size

        def release() -> Any:
            return mechanism.release(data, n=size, rng=rng)
    errors, worst, times = [], [], []
    for _ in range(trials):
        start = time.perf_counter()
        released = release()
        times.append(time.perf_counter() - start)
        errors.append(rmse(released.answers, truth))
        worst.append(max_error(released.answers, truth))
        if progress is not None:
            progress()
    mean, low, high = mean_confidence_interval(errors, confidence)
    return TrialSummary(
        mechanism=getattr(mechanism, "mechanism_name", type(mechanism).__name__),
        trials=int(trials),
        n=int(size),
        rmse_mean=mean,
        rmse_low=low,
        rmse_high=high,
        max_error_mean=float(np.mean(worst)),
        time_mean=float(np.mean(times)),
        confidence=confidence,
        rmse_values=np.asarray(errors),
    )
