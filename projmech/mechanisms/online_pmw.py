"""Interactive private multiplicative weights: the Hardt–Rothblum mechanism.

:class:`OnlinePMW` is the online private multiplicative weights mechanism of :cite:t:`HR10`, in
the form of :cite:t:`DR14` (§4.2): a public multiplicative weights distribution answers each
query, and a sparse-vector test (:mod:`projmech.mechanisms.sparse_vector`) decides, privately, when its
answer is too far from the data's and a noisy answer must be released and the distribution
updated. Its privacy cost grows with the number of updates, which the multiplicative weights
mistake bound caps, not with the number of queries. The privacy accounting, the mistake bound
and the accuracy statement are derived in the theory page *Online private multiplicative
weights* (``docs/theory/online_pmw.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.dataset import MW_MAX_UNIVERSE
from ..privacy.guarantees import Neighbouring
from ..privacy.noise import NOISE_KINDS
from ..validation import POSITIVE, POSITIVE_INT, Interval, Options, OrNone, Real, validate_params
from .multiplicative_weights import _laplace_tail_factor, _mw_log_step, mw_update_bound
from .sparse_vector import _SPARSE_VECTOR_PARAMETERS, BOTTOM, MechanismHalted, Query, _SparseVectorMechanism

__all__ = ["OnlinePMW", "OnlineAccuracy", "online_pmw_accuracy", "ONLINE_MAX_ALPHA"]

#: Largest ``alpha`` accepted: beyond 1/2 the update band ``2 alpha`` exceeds the range [0, 1] of
#: averaging queries (no update is ever warranted) and the promised error ``4 alpha`` exceeds 2.
ONLINE_MAX_ALPHA = 0.5

_ALPHA = Interval(Real, 0, ONLINE_MAX_ALPHA, closed="right", reason="the update band 2 alpha must fit in [0, 1]")


@dataclass(frozen=True)
class OnlineAccuracy:
    """What :class:`OnlinePMW` promises: an error bound and the probability it fails.

    Returned by :func:`online_pmw_accuracy` and :meth:`OnlinePMW.accuracy`.

    Parameters
    ----------
    error : float
        Every answer given is within ``error`` of the truth (a fraction of ``n``)...
    failure_probability : float
        ...except with probability at most this (capped at 1).

    Examples
    --------
    >>> from projmech.mechanisms.online_pmw import OnlineAccuracy, online_pmw_accuracy
    >>> promise = online_pmw_accuracy(0.05, 1.0, 2000, 100, 20)
    >>> promise.error, promise.failure_probability < 1e-19
    (0.2, True)
    """

    error: float
    failure_probability: float


@validate_params(alpha=_ALPHA, epsilon=POSITIVE, n=POSITIVE, num_queries=POSITIVE_INT, k=POSITIVE_INT,
                 noise=Options(*NOISE_KINDS))
def online_pmw_accuracy(alpha: float, epsilon: float, n: float, num_queries: int, k: int, *,
                        noise: str = "auto") -> OnlineAccuracy:
    """Accuracy of :class:`OnlinePMW` over ``num_queries`` adaptively chosen queries.

    With ``Q = num_queries`` and ``K = min(Q, k)``: except with probability at most

    ``c ((Q + K) exp(-alpha epsilon n / 2) + K exp(-2 alpha epsilon n))``,

    every answer is within ``4 alpha`` of the truth (the numerical ones within ``2 alpha``), and
    at most ``floor(ln|D| / alpha^2)`` updates happen
    (:func:`~projmech.mechanisms.multiplicative_weights.mw_update_bound`), so with ``k`` above that (the
    default) the mechanism never halts. This is the accuracy
    statement of :cite:t:`HR10` with explicit constants; the proof (a union bound over the
    Laplace draws, on whose complement the noisy checker is the exact one the mistake bound needs)
    is in the theory page *Online private multiplicative weights* (``docs/theory/online_pmw.md``).
    It bounds each draw's tail ``P(|Z| >= s)`` by ``c exp(-s epsilon)`` (``s`` in counts):
    ``c = 1`` for the continuous Laplace (``noise="continuous"``, equality), and
    ``c = 2 / (1 + e^{-epsilon})`` when draws may be discrete (``"auto"`` or ``"discrete"``): the
    discrete Laplace's tail is ``2 q^{ceil(s)} / (1 + q)`` with ``q = e^{-epsilon}``, and
    ``c >= 1`` covers the continuous draws ``"auto"`` takes for fractional queries too.

    Parameters
    ----------
    alpha : float
        The mechanism's step and band, ``0 < alpha <= 1/2`` (:data:`ONLINE_MAX_ALPHA`).
    epsilon : float
        The mechanism's noise parameter: Laplace scale ``1/epsilon`` on counts.
    n : float
        The public size the answers are fractions of. The statement is about the data's
        fractions ``q(x)`` when that size is the row count (replace-one, or a declared size equal
        to it); with another size the mechanism answers ``(rows / size) q(x)``, which need not be
        a distribution's answer, and the bound on the number of updates no longer applies.
    num_queries : int
        ``Q``, the number of queries asked.
    k : int
        The mechanism's number of copies (updates before it halts).
    noise : {"auto", "discrete", "continuous"}, default "auto"
        The mechanism's noise (:class:`OnlinePMW`'s default is ``"auto"``).

    Returns
    -------
    OnlineAccuracy
        ``error = 4 alpha`` and the failure probability above, capped at 1.

    Raises
    ------
    ValueError
        If ``alpha`` is not in ``(0, 1/2]``, ``epsilon``, ``n``, ``num_queries`` or ``k`` is
        not positive, or ``noise`` is no choice.
    TypeError
        If ``num_queries`` or ``k`` is not an int, or an argument is not a number.

    See Also
    --------
    OnlinePMW.accuracy : The same for a mechanism's own parameters.

    References
    ----------
    :cite:t:`HR10`, the accuracy of the private multiplicative weights mechanism;
    :cite:t:`DR14`, §4.2.

    Examples
    --------
    At ``alpha = 0.05``, ``epsilon = 1`` and ``n = 2000``, 100 queries are all answered within
    ``0.2`` except with negligible probability; at ``n = 100`` the promise is void. Discrete
    noise's tails cost the factor ``c = 2 / (1 + e^{-1}) = 1.46`` here.

    >>> from projmech.mechanisms.online_pmw import online_pmw_accuracy
    >>> online_pmw_accuracy(0.05, 1.0, 2000, 100, 20).failure_probability < 1e-19
    True
    >>> online_pmw_accuracy(0.05, 1.0, 100, 100, 20).failure_probability
    1.0
    >>> discrete = online_pmw_accuracy(0.05, 1.0, 2000, 100, 20).failure_probability
    >>> round(discrete / online_pmw_accuracy(0.05, 1.0, 2000, 100, 20, noise="continuous").failure_probability, 3)
    1.462
    """
    copies = min(num_queries, k)
    rate = alpha * epsilon * n
    # Every draw has scale 1/epsilon on counts, hence one tail factor for all of them.
    factor = _laplace_tail_factor(1.0 / epsilon, noise != "continuous")
    failure = factor * ((num_queries + copies) * math.exp(-rate / 2.0) + copies * math.exp(-2.0 * rate))
    return OnlineAccuracy(error=4.0 * alpha, failure_probability=min(1.0, failure))


class OnlinePMW(_SparseVectorMechanism):
    """The Hardt–Rothblum mechanism: interactive private multiplicative weights.

    The online private multiplicative weights mechanism of :cite:t:`HR10`, as presented by
    :cite:t:`DR14` (§4.2). Its components:

    - **MW** (public): a distribution ``y`` over the universe, uniform at first; its guess for
      query ``q`` is ``a = q(y)``. Anyone can maintain it from the queries and the transcript
      (:attr:`public_distribution`).
    - **Sparse-vector checker** (private): the threshold mechanism
      (:class:`~projmech.mechanisms.sparse_vector.ThresholdK`) applied to the distances ``|q(x) - a|``
      with threshold ``t = 3 alpha``: each copy draws ``T = 3 alpha + N``; a query is "correct"
      when ``|q(x) - a| + N_i < T``, and the answer is then ⊥; otherwise the copy releases
      ``q(x) + N'_i`` and halts, and a fresh copy starts, ``k`` copies in all. All draws are
      Laplace of scale ``b = 1/epsilon`` on counts; the comparison and the release run on
      counts (``q(x) N``, ``a N``, threshold ``3 alpha N`` for the public size ``N``), and the
      released number is divided by ``N``.
    - **Noise** (``noise="auto"``, the default): OpenDP's exact discrete Laplace
      (:mod:`projmech.privacy.noise`) for the thresholds, the comparisons and the release of a 0/1
      query (a predicate), whose count ``q(x) N`` is an integer: the released number is
      ``(q(x) N + Z) / N`` with ``Z`` an integer, as the counting mechanisms of
      :mod:`projmech.mechanisms.additive` release their counts over the public size. The compared
      distance ``|q(x) N - a N|`` is not an integer (``a`` comes from the public distribution),
      and need not be: only whether it crosses the noisy threshold is published. A query with
      fractional values has a fractional count, whose release takes numpy's continuous Laplace
      of the same scale (integer noise would publish its fractional part); ``noise="discrete"``
      refuses such queries, ``noise="continuous"`` takes numpy's Laplace for every draw
      (reproducible from ``rng``, open to the floating-point attacks of :cite:t:`Mir12`).
    - After a numerical answer ``v`` the public MW step
      (:func:`~projmech.mechanisms.multiplicative_weights.multiplicative_weights_update`) is taken with step
      ``alpha``: "too low" if ``v > a``, "too high" otherwise.

    :meth:`answer` returns ``a`` after ⊥ and ``v`` otherwise, clipped to ``[0, 1]``; after ``k``
    updates it raises :class:`~projmech.mechanisms.sparse_vector.MechanismHalted`.

    **Privacy**: ``PureDP(4 k epsilon)`` (:attr:`privacy`), w.r.t. either neighbouring relation,
    with either noise. Given the past transcript, the compared distances and the released value
    are 1-Lipschitz in counts, so each copy of the checker is ``4 epsilon``-DP as the threshold
    mechanism is (:class:`~projmech.mechanisms.sparse_vector.ThresholdK`: the proof shifts the discrete
    draws by whole counts, which keeps them on the integers, and the released count is an
    integer), and the ``k`` copies compose; the MW component, the answers ``a`` and the clipping
    are post-processing. Under add/remove the public size is declared or estimated first; an
    estimate's share is added (see :attr:`privacy`).

    **Accuracy**: :func:`online_pmw_accuracy` (every answer within ``4 alpha`` except with an
    explicit probability, with the discrete Laplace's tails under the default noise). **k**: by
    default ``floor(ln|D| / alpha^2) + 1``, one more than the
    mistake bound of multiplicative weights (:func:`~projmech.mechanisms.multiplicative_weights.mw_update_bound`),
    so that the mechanism never halts on the event where the accuracy statement holds.

    The derivations of these three statements are in the theory page *Online private
    multiplicative weights* (``docs/theory/online_pmw.md``).

    Parameters
    ----------
    data_or_histogram : Dataset or array_like of shape (m,)
        The private data; a histogram must be normalized and needs ``n``.
    alpha : float
        The MW step and the checker's band ``3 alpha``, ``0 < alpha <= 1/2``.
    epsilon : float
        The noise parameter: Laplace scale ``1/epsilon`` on counts (``1/(epsilon size)`` on the
        answers). The guarantee is ``4 k epsilon``: for a target ``PureDP(eps)`` pass
        ``epsilon = eps / (4 k)``.
    k : int, optional
        Number of updates (numerical answers) before halting; default above. Its guarantee
        ``4 k epsilon`` must be a finite float.
    n : int, optional
        The data's row count; taken from a Dataset (private under add/remove: never released).
    rng : numpy.random.Generator, int or None
        Source of the continuous noise (``None``: fresh OS entropy, never global state). The
        discrete draws come from OpenDP's own cryptographically secure generator, which no seed
        drives: with the default noise a session cannot be reproduced.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_universe : int
        Larger universes are refused (dense vectors over it are held).
    size : int or "estimate", optional
        Under add/remove, as for :class:`~projmech.mechanisms.sparse_vector.ThresholdK`.
    size_share : float, optional
        As for :class:`~projmech.mechanisms.sparse_vector.ThresholdK`.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"`` (default): exact discrete Laplace everywhere but the release of a query with
        fractional values (continuous Laplace). ``"discrete"``: the same, refusing fractional
        queries. ``"continuous"``: numpy's Laplace throughout, reproducible from ``rng``.

    Raises
    ------
    ValueError
        If ``alpha`` is not in ``(0, 1/2]``, ``epsilon`` or ``k`` is not positive, ``noise`` is
        no choice, ``k`` copies (or the default of a tiny ``alpha``) make the guarantee
        overflow, or the data is not a Dataset or a normalized histogram.
    TypeError
        If an argument has the wrong type, or an option is passed by position.

    See Also
    --------
    projmech.mechanisms.multiplicative_weights.OfflinePMW : The non-interactive counterpart (MWEM).
    projmech.mechanisms.sparse_vector.ThresholdK : The sparse-vector test it is built on.

    Examples
    --------
    At most ``k = 5`` updates at ``epsilon = 0.05`` each cost ``PureDP(4 * 5 * 0.05)``. A query
    the public distribution answers well costs nothing (⊥ in the transcript); one it answers
    badly gets a noisy answer, an integer count over the 20,000 rows, and an update.

    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.repeat([[1, 0], [0, 1], [1, 1]], [10000, 5000, 5000], axis=0), domain)
    >>> mechanism = pm.OnlinePMW(data, alpha=0.05, epsilon=0.05, k=5)
    >>> print(mechanism.privacy, mechanism.noise.name)
    1-DP discrete_laplace
    >>> mechanism.answer(lambda x: x["b"] == 1)  # truth 0.5; the uniform guess is 0.5
    0.5
    >>> answer = mechanism.answer(lambda x: x["a"] == 1)  # truth 0.75; the guess was 0.5
    >>> abs(answer - 0.75) < 0.02, round(mechanism.transcript[1] * 20000, 9).is_integer()
    (True, True)
    >>> mechanism.transcript[0], mechanism.updates, mechanism.accuracy(100).error
    (⊥, 1, 0.2)

    With ``noise="continuous"`` a seed reproduces the session:

    >>> seeded = pm.OnlinePMW(data, alpha=0.05, epsilon=0.05, k=5, rng=np.random.default_rng(0), noise="continuous")
    >>> seeded.answer(lambda x: x["b"] == 1), round(seeded.answer(lambda x: x["a"] == 1), 3)
    (0.5, 0.747)
    """

    @validate_params(alpha=_ALPHA, k=OrNone(POSITIVE_INT), **_SPARSE_VECTOR_PARAMETERS)
    def __init__(self, data_or_histogram: Any, alpha: float, epsilon: float, *, k: int | None = None,
                 n: int | None = None, rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None, noise: str = "auto") -> None:
        self.alpha = alpha
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
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
        """The MW distribution ``y`` (a read-only copy): public, a function of the queries and
        the transcript alone."""
        y = np.exp(self._log_y)
        y.flags.writeable = False
        return y

    def accuracy(self, num_queries: int) -> OnlineAccuracy:
        """What the mechanism promises over ``num_queries`` queries.

        Parameters
        ----------
        num_queries : int
            The number of queries to be asked.

        Returns
        -------
        OnlineAccuracy
            :func:`online_pmw_accuracy` for this mechanism's ``alpha``, ``epsilon``, public size,
            ``k`` and noise.
        """
        return online_pmw_accuracy(self.alpha, self.epsilon, self.size, num_queries, self.k, noise=self._noise_option)

    def answer(self, query: Query) -> float:
        """Answer one averaging query: the public estimate ``q(y)`` or a noisy ``q(x)``.

        Parameters
        ----------
        query : array_like of shape (m,) or callable
            Its value on each universe element, in ``[0, 1]``; or, when the data is a Dataset, a
            vectorized predicate as in :func:`~projmech.workloads.from_predicates`.

        Returns
        -------
        float
            ``q(y)`` when the checker finds it correct (the transcript records ⊥), else the
            noisy answer (the transcript records it as released), after which ``y`` is updated;
            in both cases clipped to ``[0, 1]``, the range of every averaging query. The
            clipping is post-processing, so it costs no privacy, and it can only bring an
            answer closer to the truth.

        Raises
        ------
        MechanismHalted
            After ``k`` updates.
        ValueError, TypeError
            On an invalid query, or one with fractional values under ``noise="discrete"``
            (checked before any noise is drawn).
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
    """``answer`` clipped to ``[0, 1]``, where every averaging query's answer lies.

    Post-processing of a released number (no privacy cost), and never farther from a truth in
    ``[0, 1]``: Laplace noise alone can take a fraction below 0 or above 1.
    """
    return min(1.0, max(0.0, answer))
