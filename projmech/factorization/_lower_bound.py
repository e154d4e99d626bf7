"""The certified lower bound on ``gamma(F)`` or ``gamma_2(F)`` from weights: the dual of the factorization norm."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..workloads import Workload
from ._base import as_workload
from ._maximum import max_lower_bound
from ._mean import _dual_value
from ._scaling import scaled_form

__all__ = ["factorization_lower_bound"]


def _check_weights(weights: Any, m: int, name: str = "weights") -> np.ndarray:
    q = np.asarray(weights, dtype=float)
    if q.shape != (m,):
        raise ValueError(f"{name}: expected shape ({m},), got {q.shape}")
    if not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
        raise ValueError(f"{name}: expected finite, nonnegative weights with a positive sum")
    return q / q.sum()


def factorization_lower_bound(workload: Workload | Any, weights: Any = None, *, query_weights: Any = None) -> float:
    """A certified lower bound on ``gamma(F)``, or on ``gamma_2(F)``, from weights.

    ``gamma(F) >= ||F diag(q)^1/2||_* / sqrt(k)`` for every ``q`` in the simplex, with equality at
    the optimum :cite:p:`ENU20`; with query weights ``p`` too, a bound on ``gamma_2`` :cite:p:`MNT20`.
    Derivations: :doc:`/theory/factorization`.

    Parameters
    ----------
    workload : Workload or array_like, shape (k, m)
        F (its Gram matrix only, without ``query_weights``).
    weights : array_like, shape (m,), optional
        ``q``, on the cells: nonnegative and finite with a positive sum; default uniform.
    query_weights : array_like, shape (k,), optional
        ``p``, on the queries, likewise: the bound is then on ``gamma_2(F)``.

    Returns
    -------
    float
        The bound, rounded down (eigenvalues lowered by their error bound).

    Examples
    --------
    >>> F = pm.prefix(16)
    >>> round(pm.factorization_lower_bound(F), 3)  # the singular-value bound ||F||_* / sqrt(k m)
    1.628
    >>> pm.factorization_lower_bound(F) <= pm.factorization_norm(F).lower_bound
    True
    """
    workload = as_workload(workload)
    k, m = workload.shape
    q = np.full(m, 1.0 / m) if weights is None else _check_weights(weights, m, "weights")
    form = scaled_form(workload)
    if form is not None:
        # The bound is homogeneous: at the same weights, that of F / scale times scale, whose
        # Gram matrix neither underflows to 0 (a bound of 0) nor overflows.
        scale, scaled = form
        return scale * factorization_lower_bound(scaled, q, query_weights=query_weights)
    if query_weights is None:
        return _dual_value(workload.gram(), q) / math.sqrt(k)

    return max_lower_bound(workload.toarray(), _check_weights(query_weights, k, "query_weights"), q)
