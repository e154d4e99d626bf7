"""The fixed strategies of the factorization mechanism: identity, total, hierarchical and square root.

Each is an explicit ``l x m`` strategy matrix M for :meth:`Factorization.from_strategy` or the
constructor; the optimal strategy is :func:`~projmech.factorization.factorization_norm`'s.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_positive_int

__all__ = ["identity_strategy", "total_strategy", "hierarchical_strategy", "square_root_strategy"]


def identity_strategy(m: int) -> np.ndarray:
    """The identity strategy ``M = I``: measure every cell (the Gaussian mechanism on the histogram).

    Parameters
    ----------
    m : int
        The universe size, ``>= 1``.

    Returns
    -------
    ndarray, shape (m, m)
        The identity matrix.

    Examples
    --------
    >>> round(pm.Factorization(pm.prefix(16), pm.identity_strategy(16)).gamma, 3)  # sqrt((m + 1) / 2)
    2.915
    """
    return np.eye(check_positive_int("m", m))


def total_strategy(m: int) -> np.ndarray:
    """The total strategy ``M = 1^T``: measure only the number of records, enough for multiples of the total.

    Parameters
    ----------
    m : int
        As for :func:`identity_strategy`.

    Returns
    -------
    ndarray, shape (1, m)
        One row of ones.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> round(pm.Factorization(pm.repeated(np.ones(5), 3), pm.total_strategy(5)).gamma, 6)
    1.0
    """
    return np.ones((1, check_positive_int("m", m)))


def hierarchical_strategy(m: int, branching: int = 2) -> np.ndarray:
    """The hierarchical (``branching``-ary tree) strategy over an ordered universe of size ``m`` :cite:p:`HRMS10`.

    One row per node, the indicator of its interval, from the root ``[0, m)`` down to single cells.
    With ``branching=2`` it is the binary tree mechanism :cite:p:`DNPR10`: ``gamma`` of prefix and
    range workloads grows as ``O(log m)``.

    Parameters
    ----------
    m : int
        The universe size, ``>= 1``.
    branching : int, default 2
        The number of children of each node, ``>= 2``.

    Returns
    -------
    ndarray, shape (l, m)
        One 0/1 row per node, level by level from the root.

    Examples
    --------
    >>> pm.hierarchical_strategy(4)[:3]
    array([[1., 1., 1., 1.],
           [1., 1., 0., 0.],
           [0., 0., 1., 1.]])
    """
    m = check_positive_int("m", m)
    if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)) or branching < 2:
        raise ValueError(f"branching: must be an integer >= 2, got {branching!r}")
    rows = []
    intervals = [(0, m)]
    while intervals:
        children = []
        for low, high in intervals:
            row = np.zeros(m)
            row[low:high] = 1.0
            rows.append(row)
            if high - low > 1:
                edges = np.linspace(low, high, min(branching, high - low) + 1).round().astype(int)
                children += [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
        intervals = children
    return np.vstack(rows)


def square_root_strategy(m: int) -> np.ndarray:
    """The square-root factorization of prefix sums over ``m`` time steps :cite:p:`FHU23`.

    The lower-triangular Toeplitz ``L`` with ``L[i, j] = binom(2t, t) / 4^t`` (``t = i - j``) squares
    to the prefix-sum matrix; as ``M = L`` its reconstruction is ``L`` too, a streaming factorization
    (:doc:`/theory/factorization`).

    Parameters
    ----------
    m : int
        The number of time steps (the universe size), ``>= 1``.

    Returns
    -------
    ndarray, shape (m, m)
        ``L``, lower-triangular.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> L = pm.square_root_strategy(4)
    >>> L[:, 0], bool(np.allclose(L @ L, np.tril(np.ones((4, 4)))))
    (array([1.    , 0.5   , 0.375 , 0.3125]), True)
    """
    m = check_positive_int("m", m)
    # c_t = c_(t-1) (2t - 1) / (2t): a product of ratios below 1, with no overflow for any m.
    coefficients = np.ones(m)
    t = np.arange(1, m)
    coefficients[1:] = np.cumprod((2 * t - 1) / (2 * t))
    index = np.subtract.outer(np.arange(m), np.arange(m))
    return np.where(index >= 0, coefficients[np.clip(index, 0, None)], 0.0)
