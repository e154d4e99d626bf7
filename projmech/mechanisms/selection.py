"""Private selection: the exponential mechanism, shared by the adaptive mechanisms.

The exponential mechanism :cite:p:`MT07` picks index ``i`` with probability proportional to
``exp(epsilon s_i / (2 Delta))`` for scores ``s`` of sensitivity ``Delta`` (each score moves by
at most ``Delta`` between neighbouring data sets). It is ``epsilon``-DP and, being
``epsilon``-bounded-range :cite:p:`DR19`, ``epsilon^2 / 8``-zCDP :cite:p:`CR21`: the cost the
adaptive mechanisms compose.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exponential_mechanism", "exponential_mechanism_rho"]


def exponential_mechanism(scores: np.ndarray, epsilon: float, sensitivity: float, rng: np.random.Generator) -> int:
    """Draw an index with probability proportional to ``exp(epsilon scores / (2 sensitivity))``.

    Drawn as the arg max of the scaled scores plus independent standard Gumbel noise (the
    Gumbel-max identity), so that no exponential overflows when ``epsilon`` times the scores
    runs to thousands. In exact arithmetic the draw has exactly the exponential mechanism's
    distribution; in floating point it is not an exact sampler (floating-point exponential
    mechanisms have been attacked, Ilvento, CCS 2020): a limitation the user guide states.

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
    >>> import numpy as np
    >>> from projmech.mechanisms.selection import exponential_mechanism
    >>> exponential_mechanism(np.array([0.0, 100.0]), 1.0, 1.0, np.random.default_rng(0))
    1
    """
    factor = epsilon / (2.0 * sensitivity)
    return int(np.argmax(factor * scores + rng.gumbel(size=scores.size)))


def exponential_mechanism_rho(epsilon: float) -> float:
    """The zCDP parameter of the exponential mechanism with parameter ``epsilon``: ``epsilon^2 / 8``
    (bounded range, :cite:p:`CR21`).

    Examples
    --------
    >>> from projmech.mechanisms.selection import exponential_mechanism_rho
    >>> exponential_mechanism_rho(2.0)
    0.5
    """
    return epsilon * epsilon / 8.0
