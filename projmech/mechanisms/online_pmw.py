"""Interactive private multiplicative weights (Hardt–Rothblum) :cite:p:`HR10`: :doc:`/theory/online_pmw`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data import MW_MAX_UNIVERSE
from ..privacy import NOISE_KINDS, Neighbouring
from ..validation import POSITIVE, POSITIVE_INT, Interval, Options, OrNone, Real, validate_params
from ._mwem_bounds import _laplace_tail_factor
from ._sparse_vector import _SPARSE_VECTOR_PARAMETERS, BOTTOM, MechanismHalted, Query, _SparseVectorMechanism
from .multiplicative_weights import _mw_log_step, mw_update_bound

__all__ = ["OnlinePMW", "OnlineAccuracy", "online_pmw_accuracy", "ONLINE_MAX_ALPHA"]

#: Largest ``alpha`` accepted: beyond 1/2 the update band ``2 alpha`` exceeds the range [0, 1] of
#: averaging queries (no update is ever warranted) and the promised error ``4 alpha`` exceeds 2.
ONLINE_MAX_ALPHA = 0.5

_ALPHA = Interval(Real, 0, ONLINE_MAX_ALPHA, closed="right", reason="the update band 2 alpha must fit in [0, 1]")


@dataclass(frozen=True)
class OnlineAccuracy:
    """What :class:`OnlinePMW` promises: every answer within ``error`` of the truth but with ``failure_probability``.

    Parameters
    ----------
    error, failure_probability : float
        The bound (a fraction of ``n``), and the probability it fails (capped at 1).

    Examples
    --------
    >>> promise = pm.mechanisms.online_pmw.online_pmw_accuracy(0.05, 1.0, 2000, 100, 20)
    >>> promise.error, promise.failure_probability < 1e-19
    (0.2, True)
    """

    error: float
    failure_probability: float


@validate_params(alpha=_ALPHA, epsilon=POSITIVE, n=POSITIVE, num_queries=POSITIVE_INT, k=POSITIVE_INT,
                 noise=Options(*NOISE_KINDS))
def online_pmw_accuracy(alpha: float, epsilon: float, n: float, num_queries: int, k: int, *,
                        noise: str = "auto") -> OnlineAccuracy:
    """Accuracy of :class:`OnlinePMW` over ``num_queries`` adaptively chosen queries (:doc:`/theory/online_pmw`).

    Parameters
    ----------
    alpha, epsilon, k, noise
        The mechanism's (see :class:`OnlinePMW`).
    n, num_queries
        The public size and the number of queries asked.

    Returns
    -------
    OnlineAccuracy
        ``4 alpha``, and the probability it fails, capped at 1.

    Examples
    --------
    >>> from projmech.mechanisms.online_pmw import online_pmw_accuracy
    >>> online_pmw_accuracy(0.05, 1.0, 100, 100, 20).failure_probability
    1.0
    >>> round(online_pmw_accuracy(0.05, 1.0, 2000, 100, 20).failure_probability
    ...       / online_pmw_accuracy(0.05, 1.0, 2000, 100, 20, noise="continuous").failure_probability, 3)
    1.462
    """
    copies = min(num_queries, k)
    rate = alpha * epsilon * n
    # Every draw has scale 1/epsilon on counts, hence one tail factor for all of them.
    factor = _laplace_tail_factor(1.0 / epsilon, noise != "continuous")
    failure = factor * ((num_queries + copies) * math.exp(-rate / 2.0) + copies * math.exp(-2.0 * rate))
    return OnlineAccuracy(error=4.0 * alpha, failure_probability=min(1.0, failure))


class OnlinePMW(_SparseVectorMechanism):
    """The Hardt–Rothblum mechanism :cite:p:`HR10,DR14`: interactive private multiplicative weights.

    A public distribution answers each query unless a sparse-vector test finds it too far off; then a
    noisy answer is released and the distribution updated, up to ``k`` times. Guarantee
    ``PureDP(4 k epsilon)`` under ``neighbouring``; accuracy :func:`online_pmw_accuracy` (:doc:`/theory/online_pmw`).

    Parameters
    ----------
    data_or_histogram, n
        The private data (a normalized histogram needs its row count ``n``).
    alpha, epsilon
        The MW step (``<= 1/2``) and the Laplace scale ``1/epsilon`` on counts.
    k : int, optional
        Updates before halting; default ``mw_update_bound + 1``, not reached where the accuracy holds.
    rng, neighbouring, max_universe, size, size_share, noise
        As for :class:`~projmech.mechanisms.ThresholdK`.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.repeat([[1, 0], [0, 1], [1, 1]], [10000, 5000, 5000], axis=0), domain)
    >>> mechanism = pm.OnlinePMW(data, alpha=0.05, epsilon=0.05, k=5)
    >>> print(mechanism.privacy, mechanism.noise.name)
    1-DP discrete_laplace
    >>> mechanism.answer(lambda x: x["b"] == 1)  # truth 0.5; the uniform guess is 0.5: free
    0.5
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # truth 0.75: a noisy count and an update
    >>> abs(answer - 0.75) < 0.02, mechanism.transcript[0], mechanism.updates
    (True, ⊥, 1)
    """

    @validate_params(alpha=_ALPHA, k=OrNone(POSITIVE_INT), **_SPARSE_VECTOR_PARAMETERS)
    def __init__(self, data_or_histogram: Any, alpha: float, epsilon: float, *, k: int | None = None,
                 n: int | None = None, rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        self.alpha = alpha
        self._start(data_or_histogram, epsilon, k, n, rng, neighbouring, max_universe, 3.0 * self.alpha,
                    size, size_share, noise, default_k=lambda m: mw_update_bound(m, self.alpha) + 1,
                    default_k_source="alpha")
        self._log_y = np.full(self.universe_size, -math.log(self.universe_size))

    @property
    def updates(self) -> int:
        """MW updates (numerical answers) so far."""
        return self._engine.halts

    @property
    def public_distribution(self) -> np.ndarray:
        """The MW distribution ``y``, a read-only copy: public (a function of the queries and transcript)."""
        y = np.exp(self._log_y)
        y.flags.writeable = False
        return y

    def accuracy(self, num_queries: int) -> OnlineAccuracy:
        """:func:`online_pmw_accuracy` for this mechanism's parameters and ``num_queries`` queries to be asked.

        Parameters
        ----------
        num_queries : int
            ``Q``.

        Returns
        -------
        OnlineAccuracy
        """
        return online_pmw_accuracy(self.alpha, self.epsilon, self.size, num_queries, self.k, noise=self._noise_option)

    def answer(self, query: Query) -> float:
        """Answer one averaging query: ``q(y)`` if the checker finds it close, else a noisy ``q(x)`` and an update.

        Parameters
        ----------
        query : array_like of shape (m,) or callable
            Its value in ``[0, 1]`` on each universe element, or a predicate on a Dataset's attributes.

        Returns
        -------
        float
            The answer clipped to ``[0, 1]`` (post-processing); a MechanismHalted after ``k`` updates.
        """
        if self.halted:
            raise MechanismHalted(f"the mechanism halted after its k={self.k} updates")
        row = self._data.row(query)
        release_noise = self._release_noise(row)
        estimate = float(row @ np.exp(self._log_y))
        count = self._data.count(row)
        released_count = self._engine.step(abs(count - estimate * self.size), count, release_noise)
        if released_count is None:
            self._transcript.append(BOTTOM)
            return _clip_to_unit(estimate)  # in [0, 1] already, up to rounding
        released = released_count / self.size
        self._transcript.append(released)
        # The public MW step; the direction is read off the released number (post-processing),
        # unclipped: the accuracy proof compares q(x) + N' with q(y), and a number clipped to 1
        # would tie with an estimate of 1.
        self._log_y = _mw_log_step(self._log_y, row, released > estimate, self.alpha)
        return _clip_to_unit(released)

    def __repr__(self) -> str:
        return (f"OnlinePMW(alpha={self.alpha:g}, epsilon={self.epsilon:g}, k={self.k}, size={self.size:g}, "
                f"updates={self.updates})")


def _clip_to_unit(answer: float) -> float:
    """``answer`` clipped to ``[0, 1]``: post-processing."""
    return min(1.0, max(0.0, answer))
