"""Private selection: the exponential mechanism :cite:p:`MT07`, ``epsilon``-DP and ``epsilon^2 / 8``-zCDP
(bounded range :cite:p:`DR19,CR21`), shared by MWEM and the adaptive mechanism."""

from __future__ import annotations

import numpy as np

__all__ = ["exponential_mechanism", "exponential_mechanism_rho"]


def exponential_mechanism(scores: np.ndarray, epsilon: float, sensitivity: float, rng: np.random.Generator) -> int:
    """Draw an index with probability proportional to ``exp(epsilon scores / (2 sensitivity))``.

    Drawn as the arg max of the scaled scores plus Gumbel noise: no exponential overflows, but the
    draw is exact in exact arithmetic only (a limitation the user guide states).

    Parameters
    ----------
    scores : ndarray, shape (r,)
        Finite scores, at least one.
    epsilon, sensitivity, rng
        The parameter and the scores' sensitivity ``Delta`` (both ``> 0``); the source of the draws.

    Returns
    -------
    int

    Examples
    --------
    >>> pm.mechanisms.exponential_mechanism(np.array([0.0, 100.0]), 1.0, 1.0, np.random.default_rng(0))
    1
    """
    factor = epsilon / (2.0 * sensitivity)
    return int(np.argmax(factor * scores + rng.gumbel(size=scores.size)))


def exponential_mechanism_rho(epsilon: float) -> float:
    """The zCDP parameter of the exponential mechanism with parameter ``epsilon``: ``epsilon^2 / 8`` :cite:p:`CR21`.

    Parameters
    ----------
    epsilon : float
        The mechanism's parameter.

    Returns
    -------
    float

    Examples
    --------
    >>> pm.mechanisms.exponential_mechanism_rho(2.0)
    0.5
    """
    return epsilon * epsilon / 8.0
