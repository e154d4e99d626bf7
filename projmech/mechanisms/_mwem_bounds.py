"""MWEM's budget split and the error bound :class:`~projmech.mechanisms.multiplicative_weights.OfflinePMW`
promises (:doc:`/theory/multiplicative_weights`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..privacy import ZCDP, PureDP, gaussian_sigma, laplace_scale
from ..validation import FLAG, OPEN_UNIT, POSITIVE, POSITIVE_INT, InstanceOf, validate_params

__all__ = ["RoundBudget", "offline_pmw_error_bound", "offline_pmw_min_n"]

#: The guarantees OfflinePMW composes over its rounds.
_PRIVACY = InstanceOf(PureDP, ZCDP, what="PureDP (Laplace measurements) or ZCDP (Gaussian)")


@dataclass(frozen=True)
class RoundBudget:
    """The privacy spent in each round of :class:`OfflinePMW`: ``1/(2T)`` of the budget to each step.

    Parameters
    ----------
    selection, selection_epsilon, measurement
        The guarantees of the round's selection (parameter ``epsilon_0``) and of its measurement.

    Examples
    --------
    >>> pm.OfflinePMW(pm.marginals(pm.Domain(["a", "b"], [2, 2]), 1), pm.PureDP(1.0), rounds=5).round_budget
    RoundBudget(selection=PureDP(epsilon=0.1), selection_epsilon=0.1, measurement=PureDP(epsilon=0.1))
    """

    selection: PureDP | ZCDP
    selection_epsilon: float
    measurement: PureDP | ZCDP


def _round_budget(privacy: PureDP | ZCDP, rounds: int) -> RoundBudget:
    """Split ``privacy`` evenly over ``rounds`` selections and measurements."""
    if isinstance(privacy, PureDP):
        share = privacy.epsilon / (2 * rounds)
        return RoundBudget(PureDP(share), share, PureDP(share))
    share = privacy.rho / (2 * rounds)
    return RoundBudget(ZCDP(share), math.sqrt(8.0 * share), ZCDP(share))


def _measurement_scale(budget: RoundBudget, discrete: bool = False) -> float:
    """The Laplace ``b`` or Gaussian ``sigma`` of one measured count (sensitivity 1)."""
    if isinstance(budget.measurement, PureDP):
        return laplace_scale(1.0, budget.measurement)
    return gaussian_sigma(1.0, budget.measurement, discrete=discrete)


@validate_params(n=POSITIVE_INT, universe_size=POSITIVE_INT, num_queries=POSITIVE_INT, rounds=POSITIVE_INT,
                 privacy=_PRIVACY, failure_probability=OPEN_UNIT, discrete=FLAG)
def offline_pmw_error_bound(n: int, universe_size: int, num_queries: int, rounds: int,
                            privacy: PureDP | ZCDP, *, failure_probability: float = 0.05,
                            discrete: bool = False) -> float:
    """A bound on MWEM's largest error (one update per round), holding with probability ``1 - failure_probability``.

    ``sqrt(4 ln|D| / T + beta^2) + delta + 1/T`` :cite:p:`HLM12`, in fractions of ``n`` when it is the row
    count (:doc:`/theory/multiplicative_weights`).

    Parameters
    ----------
    n, universe_size, num_queries, rounds : int
        The public size, ``|D|``, the workload's ``k`` queries and ``T``.
    privacy : PureDP or ZCDP
        The budget of the rounds (after any size estimate's share).
    failure_probability, discrete
        In ``(0, 1)``; whether the measurements carry discrete noise.

    Returns
    -------
    float

    Examples
    --------
    >>> from projmech.mechanisms.multiplicative_weights import offline_pmw_error_bound
    >>> [round(offline_pmw_error_bound(n, 1024, 180, 300, pm.PureDP(1.0)), 3) for n in (10**5, 10**7)]
    [0.488, 0.309]
    """
    return _error_bound(n, universe_size, num_queries, rounds, _round_budget(privacy, rounds),
                        failure_probability, discrete)


def _error_bound(n: float, universe_size: int, num_queries: int, rounds: int, budget: RoundBudget,
                 p: float, discrete: bool = False) -> float:
    from scipy import special

    eta = p / (2 * rounds)
    delta = 2.0 * math.log(num_queries / eta) / (budget.selection_epsilon * n)
    scale = _measurement_scale(budget, discrete)  # in counts
    if isinstance(budget.measurement, PureDP):
        # P(|Z| >= beta) <= c e^{-beta / b} = eta.
        beta = scale * math.log(_laplace_tail_factor(scale, discrete) / eta)
    elif discrete:
        beta = scale * math.sqrt(2.0 * math.log(2.0 / eta))
    else:
        beta = scale * math.sqrt(2.0) * float(special.erfcinv(eta))
    beta /= n
    return math.sqrt(4.0 * math.log(universe_size) / rounds + beta**2) + delta + 1.0 / rounds


def _laplace_tail_factor(scale: float, discrete: bool) -> float:
    """``c`` with ``P(|Z| >= t) <= c e^{-t/b}`` for Laplace of scale ``b``."""
    return 2.0 / (1.0 + math.exp(-1.0 / scale)) if discrete else 1.0


@validate_params(alpha=POSITIVE, universe_size=POSITIVE_INT, num_queries=POSITIVE_INT, rounds=POSITIVE_INT,
                 privacy=_PRIVACY, failure_probability=OPEN_UNIT)
def offline_pmw_min_n(alpha: float, universe_size: int, num_queries: int, rounds: int,
                      privacy: PureDP | ZCDP, *, failure_probability: float = 0.05) -> int:
    """The smallest ``n`` for which :func:`offline_pmw_error_bound` is at most ``alpha``.

    Parameters
    ----------
    alpha : float
        The target error, above the floor ``2 sqrt(ln|D|/T) + 1/T`` (else a ValueError).
    universe_size, num_queries, rounds, privacy, failure_probability
        As for :func:`offline_pmw_error_bound`.

    Returns
    -------
    int

    Examples
    --------
    >>> pm.mechanisms.multiplicative_weights.offline_pmw_min_n(0.5, 1024, 180, 300, pm.PureDP(1.0))
    93713
    """
    p = failure_probability
    floor = 2.0 * math.sqrt(math.log(universe_size) / rounds) + 1.0 / rounds
    if alpha <= floor:
        raise ValueError(
            f"alpha: the bound never goes below 2 sqrt(ln|D|/T) + 1/T = {floor:.4g} for T={rounds} rounds, "
            f"got {alpha:g}; increase rounds"
        )
    budget = _round_budget(privacy, rounds)

    def bound(size: int) -> float:
        return _error_bound(size, universe_size, num_queries, rounds, budget, p)

    from ..analysis.bounds import min_n

    return min_n(bound, alpha)
