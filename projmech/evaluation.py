"""Error measures and repeated trials with confidence intervals.

The seeds' average error is the root mean squared error over the ``k`` queries,
``(1/sqrt k) ||a - a*||_2`` (seed 001, eq. 5; seed 000, Definition 3).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .data import Dataset, resolve_rows
from .geometry import gaussian_norm_mean, t_quantile
from .validation import (
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

__all__ = ["rmse", "max_error", "gaussian_expected_rmse", "TrialSummary", "evaluate", "mean_confidence_interval"]


def _pair(estimate: Any, truth: Any) -> tuple[np.ndarray, np.ndarray]:
    a = check_real_array("estimate", estimate, finite=False)
    b = check_real_array("truth", truth, finite=False)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"estimate and truth: expected equal 1-d shapes, got {a.shape} and {b.shape}")
    return a, b


def rmse(estimate: Any, truth: Any) -> float:
    """``(1/sqrt k) ||estimate - truth||_2`` (seed 001, eq. 5)."""
    a, b = _pair(estimate, truth)
    return float(np.linalg.norm(a - b) / math.sqrt(a.size))


def max_error(estimate: Any, truth: Any) -> float:
    """``||estimate - truth||_inf``, the worst query's error."""
    a, b = _pair(estimate, truth)
    return float(np.abs(a - b).max())


@validate_params(sigma=NONNEGATIVE, k=POSITIVE_INT)
def gaussian_expected_rmse(sigma: float, k: int) -> float:
    """Exact ``E[(1/sqrt k) ||Z||_2]`` for ``Z ~ N(0, sigma^2 I_k)``.

    ``E||G||_2 = c_k = sqrt(2) Gamma((k+1)/2) / Gamma(k/2)`` for a standard Gaussian ``G`` in
    ``R^k`` (seed 000, §2.3; :func:`projmech.geometry.gaussian_norm_mean`), so the expectation is
    ``sigma c_k / sqrt k``, slightly below ``sigma``, the root of the mean squared error.
    """
    c_k = gaussian_norm_mean(k)
    return sigma * c_k / math.sqrt(k)


@validate_params(confidence=OPEN_UNIT)
def mean_confidence_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Sample mean with a Student-t confidence interval: ``(mean, low, high)``."""
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
    """Error of a mechanism over repeated independent releases."""

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
    mechanism : object with ``workload`` and ``release(data, n, rng=rng)``
    data : Dataset or normalized histogram (then ``n`` is required)
        A Dataset's true answers are counted from its records (``workload.answer_data``) and the
        mechanism releases on the Dataset itself, so universes too large for a histogram (an
        implicit 2-way marginal workload over categorical Adult or 150 binary attributes) work.
        A histogram is checked (:func:`projmech.data.resolve_rows`) before the first trial; its
        true answers are those of its counts ``n h``, divided by ``n``.
    trials : int, at least 2
    rng : numpy.random.Generator
    progress : callable, optional
        Called once per finished trial (e.g. a ``tqdm`` instance's ``update``).
    """
    resolved, size = resolve_rows(data, n, universe_size=mechanism.workload.universe_size)
    if isinstance(resolved, Dataset):
        # Counted from the records: no histogram over the universe, which for categorical Adult
        # or 150 binary attributes could not be materialized. The mechanism gets the Dataset too.
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
