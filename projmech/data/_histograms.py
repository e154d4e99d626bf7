"""Normalized histograms given by the user in place of a data set: checked to be the counts of ``n`` rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._sparse import issparse
from ..validation import POSITIVE_INT, OrNone, check_real_array, check_real_dtype, first_true, validate_params

__all__ = ["check_normalized_histogram", "histogram_counts", "DEFAULT_MAX_UNIVERSE"]

#: Largest universe for which a dense histogram is materialized (about 800 MB of float64).
DEFAULT_MAX_UNIVERSE = 10**8


@validate_params(size=OrNone(POSITIVE_INT))
def check_normalized_histogram(histogram: Any, n: Any, *, size: int | None = None) -> tuple[np.ndarray, int]:
    """Validate a user-given normalized histogram and its data size ``n``: ``n h`` must be counts.

    Parameters
    ----------
    histogram : array_like or scipy.sparse array
        A vector (or one row or column) of finite, non-negative entries summing to 1.
    n : int
        The number of rows it counts, ``>= 1``.
    size : int, optional
        The number of entries it must have.

    Returns
    -------
    h : numpy.ndarray of float64, shape (m,)
        The histogram, flattened and dense.
    n : int

    Examples
    --------
    >>> pm.data.check_normalized_histogram([0.5, 0.5], 3)
    Traceback (most recent call last):
    ...
    ValueError: histogram, n: n * histogram must be the integer counts of n=3 rows, but cell 0 holds 0.5, ...
    """
    if n is None:
        raise ValueError("n: required when a histogram is passed (it cannot be recovered from h)")
    n = POSITIVE_INT.check("n", n)
    if issparse(histogram):
        # Every sparse format has a dtype; the stubs declare it only on the data-backed ones.
        check_real_dtype("histogram", histogram.dtype)  # type: ignore[attr-defined]
        shape = histogram.shape
    else:
        histogram = check_real_array("histogram", histogram, finite=False)
        shape = histogram.shape
    if len(shape) > 2 or (len(shape) == 2 and 1 not in shape):
        raise ValueError(f"histogram: expected a vector (or a single row or column), got shape {shape}")
    entries = math.prod(shape)
    if size is not None and entries != size:
        raise ValueError(f"histogram: expected {size} entries to match the workload, got {entries}")
    if size is None and entries > DEFAULT_MAX_UNIVERSE:
        # A sparse histogram of a huge universe would be densified below.
        raise ValueError(
            f"histogram: {entries:.3e} entries, above DEFAULT_MAX_UNIVERSE={DEFAULT_MAX_UNIVERSE:.1e}; "
            "a dense histogram would not fit in memory"
        )
    h = (histogram.toarray() if issparse(histogram) else histogram).astype(float).ravel()
    if h.size == 0:
        raise ValueError("histogram: is empty")
    if not np.all(np.isfinite(h)):
        raise ValueError("histogram: contains NaN or infinite entries")
    if h.min() < 0:
        raise ValueError("histogram: has negative entries")
    if abs(h.sum() - 1.0) > 1e-9:
        raise ValueError(f"histogram: must be normalized to sum 1 (got {h.sum():.6g}); pass histogram(data)")
    counts = n * h
    # Tolerance: h = c/n in float64 makes n*h off by at most a few ulps of c.
    fractional = np.abs(counts - np.rint(counts)) > 1e-6 + 1e-9 * counts
    if fractional.any():
        cell = first_true(fractional)
        raise ValueError(
            f"histogram, n: n * histogram must be the integer counts of n={n} rows, but cell {cell} "
            f"holds {h[cell]:.6g}, i.e. {counts[cell]:.6g} rows; pass the n the histogram was computed from"
        )
    return h, n


def histogram_counts(histogram: Any, n: Any, *, size: int | None = None) -> tuple[np.ndarray, int]:
    """The counts ``n h`` of a user-given normalized histogram (:func:`check_normalized_histogram`), as exact integers.

    Parameters
    ----------
    histogram, n, size
        As for :func:`check_normalized_histogram`.

    Returns
    -------
    counts : numpy.ndarray of float64, shape (m,)
    n : int

    Examples
    --------
    >>> pm.data.histogram_counts([0.25, 0.75, 0.0], 4)
    (array([1., 3., 0.]), 4)
    """
    h, n = check_normalized_histogram(histogram, n, size=size)
    return np.rint(n * h), n
