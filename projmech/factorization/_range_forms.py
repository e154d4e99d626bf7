"""The all-range workload's weighted Gram matrix and quadratic forms in ``O(m^2)``.

A range is the difference of two of the ``m + 1`` prefix sums, so the sums over all ranges reduce
to cumulative sums of ``m x m`` arrays, never the ``k x m`` matrix; weights and forms are in the
query order ``np.triu_indices(m)`` (:doc:`/theory/factorization`, §9).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__: list[str] = []  # used by the factorizations


def is_all_range(workload: Any) -> bool:
    """Whether the workload declares itself the all-range workload (built by
    :func:`~projmech.workloads.all_range`, queries in ``np.triu_indices`` order)."""
    declared = getattr(workload, "_tridiagonal_inverse", None)
    return declared is not None and bool(declared().get("ranges", False))


def range_gram(weights: np.ndarray, m: int) -> np.ndarray:
    """``F^T diag(p) F`` for the all-range workload and nonnegative query weights ``p``, by two cumulative
    sums of nonnegative terms (relative error at most ``2 m eps``).
    """
    upper = np.zeros((m, m))
    upper[np.triu_indices(m)] = weights
    # covering[i, j] = sum of p[a, b] over a <= i and b >= j: for i <= j, the ranges holding both.
    covering = upper.cumsum(axis=0)[:, ::-1].cumsum(axis=1)[:, ::-1]
    gram = np.triu(covering)
    return gram + np.triu(gram, 1).T


def prefix_form(inner: np.ndarray) -> np.ndarray:
    """``K = P Y P^T`` for an ``m x m`` matrix Y: ``K[t, s]`` sums ``Y[i, j]`` over ``i < t``,
    ``j < s`` (``(m + 1) x (m + 1)``)."""
    m = inner.shape[0]
    form = np.zeros((m + 1, m + 1))
    form[1:, 1:] = inner.cumsum(axis=0).cumsum(axis=1)
    return form


def range_squares(form: np.ndarray) -> np.ndarray:
    """``f^T Y f`` for every range, in query order, from the prefix sums' form ``K = P Y P^T``
    (:func:`prefix_form`): ``K[b+1, b+1] + K[a, a] - 2 K[a, b+1]``."""
    m = form.shape[0] - 1
    diagonal = np.diag(form)
    squares = diagonal[None, 1:] + diagonal[:-1, None] - 2.0 * form[:-1, 1:]
    return squares[np.triu_indices(m)]


def range_squares_slack(factor: np.ndarray) -> float:
    """A first-order bound, the same for every range, on the rounding of
    :func:`range_squares` ``(prefix_form(W W^T))`` for an ``m x l`` factor W.
    """
    m, ell = factor.shape
    total = float(np.sum(np.abs(factor).sum(axis=0) ** 2))
    return 4 * (ell + 2 * m + 1) * np.finfo(float).eps * total
