"""Support functions and Gaussian and mean widths of the bodies noisy answers are projected onto.

The projection mechanism's error grows with the Gaussian width of its body :cite:p:`NTZ13`.
Arguments: ``workload_or_matrix`` is a workload or its ``(k, m)`` matrix, whose columns span
``K_Q``; ``k`` or ``dimension`` is the number of queries. Proofs and estimators: :doc:`/theory/geometry`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np
import scipy.sparse as sp

from .._sparse import issparse
from ..validation import (
    GENERATOR,
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE_INT,
    Constraint,
    InstanceOf,
    Integral,
    Interval,
    OrNone,
    Real,
    check_real_array,
    validate_params,
)
from ..workloads import Workload, as_query_matrix, column_norm

__all__ = [
    "Support",
    "WidthEstimate",
    "WidthComparison",
    "support_function",
    "finite_set_width_bound",
    "gaussian_width_bound",
    "gaussian_norm_mean",
    "gaussian_width",
    "mean_width",
    "gaussian_width_from_mean",
    "mean_width_from_gaussian",
    "compare_widths",
]

#: A support function evaluated on many directions: an ``(s, k)`` array to ``s`` values.
Support = Callable[[np.ndarray], np.ndarray]

#: Which width an estimate is of: ``l*`` (Gaussian directions) or ``M*`` (uniform unit directions).
_WidthKind = Literal["gaussian", "mean"]

#: Entries of the ``directions x columns`` block formed at once by :func:`support_function`.
DEFAULT_BLOCK_ENTRIES = 2**22

#: Below this ``z = k/2`` the ratio ``Γ(z + 1/2) / Γ(z)`` is a quotient of ``math.gamma`` values
#: (each correct to a few ulps; ``Γ`` overflows beyond ``z ≈ 171``); above it, the asymptotic series.
_DIRECT_GAMMA_MAX_Z = 150.0
#: ``ln(Γ(z + 1/2) / Γ(z)) ~ (1/2) ln z + Σ_j a_j z^{-(2j+1)}``, ``a_j`` for ``j = 0..3``: DLMF 5.11.8
#: for ``ln Γ(z + 1/2) - ln Γ(z)``, whose ``n``-th coefficient is ``(2^{-n} - 2) B_{n+1} / (n (n+1))``
#: (``n`` odd; ``B`` the Bernoulli numbers). At ``z >= 150`` the first omitted term is below 1e-22.
_HALF_GAMMA_RATIO_SERIES = (-1 / 8, 1 / 192, -1 / 640, 17 / 14336)


def _query_matrix(workload_or_matrix: Any) -> np.ndarray | sp.csc_array:
    """F as a dense array or a CSC array (column blocks are cheap to slice)."""
    if isinstance(workload_or_matrix, Workload):
        matrix = workload_or_matrix.matrix  # raises for an implicit workload
    else:
        matrix = as_query_matrix(workload_or_matrix, "workload_or_matrix")
    return sp.csc_array(matrix) if issparse(matrix) else np.asarray(matrix, dtype=float)


def _directions(directions: Any, k: int) -> tuple[np.ndarray, bool]:
    G = check_real_array("directions", directions, finite=False)
    single = G.ndim == 1
    if single:
        G = G[None, :]
    if G.ndim != 2 or G.shape[1] != k or G.shape[0] == 0:
        raise ValueError(f"directions: expected shape (s, {k}) or ({k},) (one entry per query), "
                         f"got {np.shape(directions)}")
    if not np.all(np.isfinite(G)):
        raise ValueError("directions: contains NaN or infinite entries")
    return G, single


@validate_params(block_entries=POSITIVE_INT)
def support_function(workload_or_matrix: Any, directions: Any, *,
                     block_entries: int = DEFAULT_BLOCK_ENTRIES) -> np.ndarray | float:
    """Evaluate the support function of ``K_Q = conv(columns of F)``: ``h(g) = max_u <g, F[:, u]>``.

    Parameters
    ----------
    workload_or_matrix, directions, block_entries
        An explicit workload; one direction per row (a float back for a 1-d one); the largest block at once.

    Returns
    -------
    ndarray, shape (s,), or float

    Examples
    --------
    >>> pm.analysis.support_function(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), [1.0, 2.0])
    2.0
    """
    F = _query_matrix(workload_or_matrix)
    k, m = F.shape
    G, single = _directions(directions, k)
    block = max(1, block_entries // G.shape[0])
    best = np.full(G.shape[0], -np.inf)
    for start in range(0, m, block):
        columns = F[:, start:start + block]
        products = (columns.T @ G.T).T if issparse(columns) else G @ columns
        best = np.maximum(best, np.asarray(products).max(axis=1))
    return float(best[0]) if single else best


@validate_params(num_points=POSITIVE_INT, radius=NONNEGATIVE)
def finite_set_width_bound(num_points: int, radius: float) -> float:
    """Bound the Gaussian width of a finite set: ``l*(conv S) <= R sqrt(2 ln |S|)`` :cite:p:`Ver18`.

    Parameters
    ----------
    num_points, radius
        ``|S|``, and ``R >= max_{y in S} ||y||_2`` (0 allowed).

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.finite_set_width_bound(1024, 2.0), 3)
    7.447
    """
    return math.sqrt(2.0 * math.log(num_points)) * radius


def gaussian_width_bound(workload_or_matrix: Any) -> float:
    """Bound the Gaussian width of ``K_Q``: ``l*(K_Q) <= sqrt(2 ln m) max_u ||F[:, u]||_2``.

    Parameters
    ----------
    workload_or_matrix
        Implicit workloads too.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.gaussian_width_bound(pm.marginals(pm.Domain(["a", "b", "c"], [2, 2, 2]), 2)), 3)
    3.532
    """
    if isinstance(workload_or_matrix, Workload):
        radius, m = workload_or_matrix.column_norm(2), workload_or_matrix.universe_size
    else:
        F = as_query_matrix(workload_or_matrix, "workload_or_matrix")
        radius, m = column_norm(F, 2), F.shape[1]
    return finite_set_width_bound(m, radius)


@validate_params(k=POSITIVE_INT)
def gaussian_norm_mean(k: int) -> float:
    """Return ``c_k = E ||G||_2`` for ``G ~ N(0, I_k)``, to a few ulps: ``l*(K) = c_k M*(K)``.

    Parameters
    ----------
    k
        The dimension, at least 1.

    Returns
    -------
    float

    Examples
    --------
    >>> round(pm.analysis.gaussian_norm_mean(1), 6)
    0.797885
    """
    z = k / 2
    if z <= _DIRECT_GAMMA_MAX_Z:
        ratio = math.gamma(z + 0.5) / math.gamma(z)
    else:
        inverse = 1.0 / z
        correction = sum(a * inverse ** (2 * j + 1) for j, a in enumerate(_HALF_GAMMA_RATIO_SERIES))
        ratio = math.sqrt(z) * math.exp(correction)
    return math.sqrt(2.0) * ratio


@dataclass(frozen=True)
class WidthEstimate:
    """A Monte Carlo estimate of the Gaussian width ``l*(K)`` or the mean width ``M*(K)``.

    Parameters
    ----------
    estimate, standard_error, low, high, samples, confidence
        The sample mean of ``h_K``, its standard error, Student-t interval, draws and level.
    values, draws, kind
        The per-draw values; a digest equal for estimates on the same draws; ``"gaussian"`` or ``"mean"``.

    Examples
    --------
    >>> round(pm.analysis.gaussian_width(np.eye(5), 5, 4000, np.random.default_rng(0)).estimate, 3)
    1.164
    """

    estimate: float
    standard_error: float
    low: float
    high: float
    samples: int
    confidence: float
    values: np.ndarray
    draws: str
    kind: _WidthKind = "gaussian"

    @property
    def half_width(self) -> float:
        """Half the length of the confidence interval."""
        return (self.high - self.low) / 2

    def summary(self) -> dict[str, Any]:
        """Return the estimate as one row of a results table.

        Returns
        -------
        dict of str to object
        """
        return {"width": self.kind, "estimate": self.estimate, "standard_error": self.standard_error,
                "ci_low": self.low, "ci_high": self.high, "samples": self.samples, "confidence": self.confidence}


@dataclass(frozen=True)
class WidthComparison:
    """Paired ratio and difference of two widths estimated on the same draws (:func:`compare_widths`).

    Parameters
    ----------
    ratio, ratio_standard_error, ratio_low, ratio_high, difference, difference_standard_error
        Each quantity, its standard error and its confidence interval.
    difference_low, difference_high, correlation, samples, confidence
        The difference's interval; the paired values' correlation; the draws and level.

    Examples
    --------
    >>> same = pm.analysis.gaussian_width({"a": np.eye(3), "b": np.eye(3)}, 3, 10, np.random.default_rng(0))
    >>> pm.analysis.compare_widths(same["a"], same["b"]).difference
    0.0
    """

    ratio: float
    ratio_standard_error: float
    ratio_low: float
    ratio_high: float
    difference: float
    difference_standard_error: float
    difference_low: float
    difference_high: float
    correlation: float
    samples: int
    confidence: float

    def summary(self) -> dict[str, Any]:
        """Return the comparison as one row of a results table.

        Returns
        -------
        dict of str to object
        """
        return {"ratio": self.ratio, "ratio_ci_low": self.ratio_low, "ratio_ci_high": self.ratio_high,
                "difference": self.difference, "difference_ci_low": self.difference_low,
                "difference_ci_high": self.difference_high, "correlation": self.correlation,
                "samples": self.samples, "confidence": self.confidence}


def t_quantile(samples: int, confidence: float) -> float:
    """The two-sided Student-t quantile at level ``confidence`` for ``samples`` values."""
    from scipy import stats  # imported where needed: half a second at import

    return float(stats.t.ppf(0.5 + confidence / 2, samples - 1))


def _estimate(values: np.ndarray, confidence: float, draws: str, kind: _WidthKind) -> WidthEstimate:
    samples = values.size
    mean = float(values.mean())
    error = float(values.std(ddof=1) / math.sqrt(samples))
    half = t_quantile(samples, confidence) * error
    return WidthEstimate(estimate=mean, standard_error=error, low=mean - half, high=mean + half,
                         samples=samples, confidence=confidence, values=values, draws=draws, kind=kind)


def _as_support(name: str, body: Any, dimension: int) -> Support:
    """A support function: ``body`` itself if callable, else that of ``K_Q`` for a workload/matrix."""
    if callable(body):
        return body
    if isinstance(body, (Workload, np.ndarray, list, tuple)) or issparse(body):
        try:
            F = _query_matrix(body)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
        if F.shape[0] != dimension:
            raise ValueError(f"{name}: K_Q lives in R^{F.shape[0]} (one coordinate per query), "
                             f"but dimension is {dimension}")
        # An array for the (samples, k) directions it is called with.
        return lambda G: cast(np.ndarray, support_function(F, G))
    raise TypeError(f"{name}: expected a callable (directions -> values), a Workload or a query matrix, "
                    f"got {type(body).__name__}")


#: The arguments of the two Monte Carlo width estimators (at least 2 samples for an interval).
_WIDTH_PARAMETERS: dict[str, Constraint] = dict(
    dimension=POSITIVE_INT,
    samples=Interval(Integral, 2, None, reason="a confidence interval"),
    rng=GENERATOR,
    confidence=OPEN_UNIT,
)


def _sample_widths(bodies: Any, dimension: int, samples: int, rng: np.random.Generator, confidence: float,
                   kind: _WidthKind) -> WidthEstimate | dict[str, WidthEstimate]:
    """The Monte Carlo estimate of one body's width, or of every width in a mapping on one set of draws."""
    single = not isinstance(bodies, Mapping)
    if not single and not bodies:
        raise ValueError("bodies: expected one body or a non-empty mapping of names to bodies")
    named = {"": bodies} if single else bodies
    labels = {name: "bodies" if single else f"bodies[{name!r}]" for name in named}
    functions = {name: _as_support(labels[name], body, dimension) for name, body in named.items()}
    G = rng.standard_normal((samples, dimension))
    draws = hashlib.sha256(np.asarray(G.shape).tobytes() + G.tobytes()).hexdigest()[:16]
    # G / ||G|| is uniform on the sphere (the Gaussian is rotation invariant); a zero row has
    # probability 0. Evaluating h on unit vectors, rather than dividing h(G) by ||G||, keeps the
    # estimator the definition even for a support callable that is only approximately homogeneous.
    directions = G if kind == "gaussian" else G / np.linalg.norm(G, axis=1, keepdims=True)
    estimates = {}
    for name, support in functions.items():
        values = np.asarray(support(directions), dtype=float)
        if values.shape != (samples,):
            raise ValueError(f"{labels[name]}: returned shape {values.shape} for {samples} directions, "
                             f"expected ({samples},)")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{labels[name]}: returned NaN or infinite values")
        estimates[name] = _estimate(values.copy(), confidence, draws, kind)
    return estimates[""] if single else estimates


@validate_params(**_WIDTH_PARAMETERS)
def gaussian_width(bodies: Any, dimension: int, samples: int, rng: np.random.Generator, *,
                   confidence: float = 0.95) -> WidthEstimate | dict[str, WidthEstimate]:
    """Estimate the Gaussian width ``l*(K) = E h_K(G)`` of one body, or of several on common (paired) draws.

    Parameters
    ----------
    bodies
        A body, or a mapping of names to bodies: a callable from ``(samples, dimension)`` directions to
        ``samples`` values of ``h_K``, or a workload or matrix for ``K_Q``.
    dimension, samples, rng, confidence
        ``k``; at least 2 draws; the only randomness; the intervals' level.

    Returns
    -------
    WidthEstimate, or dict of str to WidthEstimate

    Examples
    --------
    >>> round(pm.analysis.gaussian_width(np.eye(5), 5, 4000, np.random.default_rng(0)).estimate, 2)
    1.16
    """
    return _sample_widths(bodies, dimension, samples, rng, confidence, "gaussian")


@validate_params(**_WIDTH_PARAMETERS)
def mean_width(bodies: Any, dimension: int, samples: int, rng: np.random.Generator, *,
               confidence: float = 0.95) -> WidthEstimate | dict[str, WidthEstimate]:
    """Estimate the mean width ``M*(K) = E h_K(U)``, ``U`` uniform on the sphere, of one body or several.

    Parameters
    ----------
    bodies, dimension, samples, rng, confidence
        As in :func:`gaussian_width`.

    Returns
    -------
    WidthEstimate, or dict of str to WidthEstimate

    Examples
    --------
    >>> round(pm.analysis.mean_width({"s": np.eye(5)}, 5, 4000, np.random.default_rng(0))["s"].estimate, 2)
    0.55
    """
    return _sample_widths(bodies, dimension, samples, rng, confidence, "mean")


_Width = TypeVar("_Width", float, WidthEstimate)


def _scale_width(width: Any, factor: float, source: _WidthKind, target: _WidthKind, name: str) -> Any:
    if isinstance(width, WidthEstimate):
        if width.kind != source:
            raise ValueError(f"{name}: expected an estimate of the {source} width, got one of the {width.kind} width")
        # A constant factor scales the mean, its standard error and the interval alike.
        return dataclasses.replace(width, estimate=width.estimate * factor,
                                   standard_error=width.standard_error * factor, low=width.low * factor,
                                   high=width.high * factor, values=width.values * factor, kind=target)
    return Interval(Real, None, None).check(name, width) * factor


def gaussian_width_from_mean(mean_width: _Width, k: int) -> _Width:
    """Convert a mean width to a Gaussian width: ``l*(K) = c_k M*(K)`` (:func:`gaussian_norm_mean`).

    Parameters
    ----------
    mean_width, k
        ``M*(K)`` (an estimate of ``kind="mean"`` has its interval scaled too), and the dimension.

    Returns
    -------
    float or WidthEstimate

    Examples
    --------
    >>> round(pm.analysis.gaussian_width_from_mean(1.0, 2), 6)  # c_2 = sqrt(π/2)
    1.253314
    """
    return _scale_width(mean_width, gaussian_norm_mean(k), "mean", "gaussian", "mean_width")


def mean_width_from_gaussian(gaussian_width: _Width, k: int) -> _Width:
    """Convert a Gaussian width to a mean width: ``M*(K) = l*(K) / c_k``.

    Parameters
    ----------
    gaussian_width, k
        The inverse of :func:`gaussian_width_from_mean`'s arguments.

    Returns
    -------
    float or WidthEstimate

    Examples
    --------
    >>> round(pm.analysis.mean_width_from_gaussian(1.253314, 2), 6)
    1.0
    """
    return _scale_width(gaussian_width, 1.0 / gaussian_norm_mean(k), "gaussian", "mean", "gaussian_width")


@validate_params(numerator=InstanceOf(WidthEstimate), denominator=InstanceOf(WidthEstimate),
                 confidence=OrNone(OPEN_UNIT))
def compare_widths(numerator: WidthEstimate, denominator: WidthEstimate, *,
                   confidence: float | None = None) -> WidthComparison:
    """Compare two widths estimated on the same draws: their paired ratio and difference.

    Parameters
    ----------
    numerator, denominator, confidence
        From one :func:`gaussian_width` or :func:`mean_width` call on a mapping; default their level.

    Returns
    -------
    WidthComparison

    Examples
    --------
    >>> widths = pm.analysis.gaussian_width({"a": np.eye(5), "b": 2 * np.eye(5)}, 5, 100, np.random.default_rng(0))
    >>> pm.analysis.compare_widths(widths["b"], widths["a"]).ratio
    2.0
    """
    if numerator.draws != denominator.draws or numerator.samples != denominator.samples:
        raise ValueError("numerator, denominator: not estimated on the same Gaussian directions "
                         "(estimate both in one gaussian_width call, on a mapping of bodies)")
    if numerator.kind != denominator.kind:
        raise ValueError(f"numerator, denominator: a {numerator.kind} width and a {denominator.kind} width; "
                         "convert one first (gaussian_width_from_mean, mean_width_from_gaussian)")
    if not denominator.estimate > 0:
        raise ValueError(f"denominator: its width estimate {denominator.estimate:g} is not positive; "
                         "the ratio is undefined")
    confidence = numerator.confidence if confidence is None else confidence
    a, b = numerator.values, denominator.values
    n = a.size
    quantile = t_quantile(n, confidence)
    ratio = numerator.estimate / denominator.estimate
    ratio_error = float(((a - ratio * b) / denominator.estimate).std(ddof=1) / math.sqrt(n))
    difference = a - b
    difference_mean = float(difference.mean())
    difference_error = float(difference.std(ddof=1) / math.sqrt(n))
    spread = a.std() * b.std()
    correlation = float(np.mean((a - a.mean()) * (b - b.mean())) / spread) if spread > 0 else math.nan
    return WidthComparison(
        ratio=ratio,
        ratio_standard_error=ratio_error,
        ratio_low=ratio - quantile * ratio_error,
        ratio_high=ratio + quantile * ratio_error,
        difference=difference_mean,
        difference_standard_error=difference_error,
        difference_low=difference_mean - quantile * difference_error,
        difference_high=difference_mean + quantile * difference_error,
        correlation=correlation,
        samples=n,
        confidence=confidence,
    )
