"""Private selection: the exponential mechanism :cite:p:`MT07`, shared by MWEM and the adaptive mechanism.

It picks index ``i`` with probability proportional to ``exp(epsilon s_i / (2 Delta))`` for scores
of sensitivity ``Delta``: ``epsilon``-DP and, being ``epsilon``-bounded-range :cite:p:`DR19`,
``epsilon^2 / 8``-zCDP :cite:p:`CR21`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exponential_mechanism", "exponential_mechanism_rho"]


def exponential_mechanism(scores: np.ndarray, epsilon: float, sensitivity: float, rng: np.random.Generator) -> int:
    """Draw an index with probability proportional to ``exp(epsilon scores / (2 sensitivity))``.

    Drawn as the arg max of the scaled scores plus standard Gumbel noise, so that no exponential
    overflows; exact in exact arithmetic, not in floating point (a limitation the user guide states).

    Parameters
    ----------
    scores : ndarray, shape (r,)
        Finite scores, at least one.
    epsilon : float
        The mechanism's parameter, ``> 0``.
    sensitivity : float
        ``Delta``, ``> 0``.
    rng : numpy.random.Generator
        The source of the Gumbel draws.

    Returns
    -------
    int
        The index drawn.

    Examples
    --------
    >>> from projmech.mechanisms import exponential_mechanism
    >>> exponential_mechanism(np.array([0.0, 100.0]), 1.0, 1.0, np.random.default_rng(0))
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
        Its rho.

    Examples
    --------
    >>> from projmech.mechanisms import exponential_mechanism_rho
    >>> exponential_mechanism_rho(2.0)
    0.5
    """
    return epsilon * epsilon / 8.0
