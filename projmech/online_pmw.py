"""The Hardt–Rothblum interactive mechanism: online private multiplicative weights (seed 004, §4).

Hardt & Rothblum, "A multiplicative weights mechanism for privacy-preserving data analysis",
FOCS 2010; here in the form of seed 004 (Dwork & Roth 2014, ch. 4, and Ullman's lecture notes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import MW_MAX_UNIVERSE
from .multiplicative_weights import _mw_log_step, mw_update_bound
from .privacy import Neighbouring
from .sparse_vector import _SPARSE_VECTOR_PARAMETERS, BOTTOM, MechanismHalted, Query, _SparseVectorMechanism
from .validation import POSITIVE, POSITIVE_INT, Interval, OrNone, Real, validate_params

__all__ = ["OnlinePMW", "OnlineAccuracy", "online_pmw_accuracy", "ONLINE_MAX_ALPHA"]

#: Largest ``alpha`` accepted: beyond 1/2 the update band ``2 alpha`` exceeds the range [0, 1] of
#: averaging queries (no update is ever warranted) and the promised error ``4 alpha`` exceeds 2.
ONLINE_MAX_ALPHA = 0.5

_ALPHA = Interval(Real, 0, ONLINE_MAX_ALPHA, closed="right", reason="the update band 2 alpha must fit in [0, 1]")


@dataclass(frozen=True)
class OnlineAccuracy:
    """What :class:`OnlinePMW` promises (see :func:`online_pmw_accuracy`).

    Attributes
    ----------
    error : float
        Every answer given is within ``error`` of the truth (a fraction of ``n``)...
    failure_probability : float
        ...except with probability at most this (capped at 1).
    """

    error: float
    failure_probability: float


@validate_params(alpha=_ALPHA, epsilon=POSITIVE, n=POSITIVE, num_queries=POSITIVE_INT, k=POSITIVE_INT)
def online_pmw_accuracy(alpha: float, epsilon: float, n: float, num_queries: int, k: int) -> OnlineAccuracy:
    """Accuracy of :class:`OnlinePMW` over ``num_queries`` (adaptively chosen) queries.

    ``n`` is the public size the answers are fractions of; the statement is about the data's
    fractions ``q(x)`` when that size is the row count (replace-one, or a declared size equal to
    it). With another size the mechanism answers ``(rows / size) q(x)``, which need not be a
    distribution's answer, and Theorem 3's bound on the number of updates no longer applies.

    **Statement.** With ``b = 1/(epsilon n)`` and ``Q = num_queries``, ``K = min(Q, k)``: except
    with probability at most

    ``(Q + K) exp(-alpha epsilon n / 2) + K exp(-2 alpha epsilon n)``,

    every answer is within ``4 alpha`` of the truth (the numerical ones within ``2 alpha``), and
    at most ``floor(ln|D| / alpha^2)`` updates happen, so with ``k`` above that (the default)
    the mechanism never halts.

    **Proof.** ``Pr[|Lap(b)| >= s] = exp(-s/b) = exp(-s epsilon n)``. Let G be the event that
    each noisy threshold and each comparison noise used is below ``alpha/2`` in absolute value
    (at most ``K`` thresholds, ``Q`` comparisons: probability ``exp(-alpha epsilon n / 2)``
    each) and each release noise is below ``2 alpha`` (at most ``K``:
    ``exp(-2 alpha epsilon n)`` each); the union bound gives the failure probability above.
    On G, with ``a = q(y)`` the public estimate and ``T = 3 alpha + N``:

    - ⊥ means ``|q(x) - a| + N_i < T``, so ``|q(x) - a| < 3 alpha + |N| + |N_i| < 4 alpha``;
      the answer ``a`` is within ``4 alpha``.
    - A number means ``|q(x) - a| >= T - N_i > 2 alpha``; the answer ``q(x) + N'`` is within
      ``2 alpha``, and since ``|N'| < 2 alpha < |q(x) - a|`` the update direction (the sign of
      ``q(x) + N' - a``) is the exact checker's. So G turns the noisy checker into one whose
      verdicts are right and given only when ``|q(x) - q(y)| >= 2 alpha``: seed 004's Theorem 3
      applies, at most ``floor(ln|D| / alpha^2)`` updates.

    Returns
    -------
    OnlineAccuracy
    """
    copies = min(num_queries, k)
    rate = alpha * epsilon * n
    failure = (num_queries + copies) * math.exp(-rate / 2.0) + copies * math.exp(-2.0 * rate)
    return OnlineAccuracy(error=4.0 * alpha, failure_probability=min(1.0, failure))


class OnlinePMW(_SparseVectorMechanism):
    """The Hardt–Rothblum mechanism (seed 004, §4): interactive private multiplicative weights.

    Components, as in the seed's diagram:

    - **MW** (public, seed 004 §3): a distribution ``y`` over the universe, uniform at first;
      its guess for query ``q`` is ``a = q(y)``. Anyone can maintain it from the queries and the
      transcript (:attr:`public_distribution`).
    - **Noisy estimate checker and Apx** (private): the threshold mechanism of seed 004 §1
      applied to the queries ``|q(x) - a|`` with threshold ``t = 3 alpha``: each copy draws
      ``T = 3 alpha + N``; a query is "correct" when ``|q(x) - a| + N_i < T``, and the answer is
      then ⊥; otherwise the copy releases ``q(x) + N'_i`` and halts. All draws are Laplace of
      scale ``b = 1/epsilon`` on counts (the seed's ``Lap(1/epsilon)``); the comparison and
      the release run on counts (``q(x) N``, ``a N``, threshold ``3 alpha N`` for the public
      size ``N``), and the released number is divided by ``N``.
      ``Apx^k`` restarts a fresh copy after each numerical answer and halts after ``k``.
    - After a numerical answer ``v`` the public MW step (:func:`multiplicative_weights_update`)
      is taken with step ``alpha``: "too low" if ``v > a``, "too high" otherwise.

    :meth:`answer` returns ``a`` after ⊥ and ``v`` otherwise; after ``k`` updates it raises
    :class:`MechanismHalted`.

    **Departure from the notes.** The seed's checker ``N(x)`` compares ``q(x) + N/n`` with the
    band ``a ± 3 alpha`` against a fixed threshold, and its ``Apx`` draws a noisy threshold
    ``T = t + N`` that it never uses. As written, every ⊥ would then cost privacy (each
    comparison is a fresh Laplace test of the data), and Theorem 5 could not hold. The
    construction here is the one the seed's Theorem 5 is about (Hardt–Rothblum via the sparse
    vector technique, Dwork & Roth 2014, §4.2): the noisy threshold is used, the comparison is
    of the distance ``|q(x) - a|``, and the direction of the update is read off the released
    number (post-processing).

    **Privacy: PureDP(4 k epsilon)** (:attr:`privacy`), w.r.t. either neighbouring relation
    (under add/remove the public size is declared or estimated first; an estimate's share is
    added, see :attr:`privacy`).
    *Per copy of Apx, 4 epsilon* (the analogue of Lemma 1): fix the inquirer (w.l.o.g.
    deterministic). ``y`` and hence every ``a_i`` are functions of the past transcript, so the
    compared values ``f_i(x) = |q_i(x) - a_i|`` are, for each fixed past, ``1``-Lipschitz in
    counts (``|q_i(x) - q_i(x')| <= 1/n`` for rows in ``[0, 1]`` and ``||a| - |b|| <= |a - b|``),
    as is their running maximum ``m(x)``, and the released ``q_h(x)`` is ``1``-Lipschitz too.
    Lemma 1's proof uses nothing else: halting at ``h`` with answer ``v`` has density
    ``E[Pr[T > m(x), N_h >= T - f_h(x)] * p_b(v - q_h(x))]``; the first factor changes by at
    most ``e^{3 epsilon}`` (shift ``T`` by one count), the second by ``e^epsilon``.
    *Over k copies, 4 k epsilon* by Theorem 2 (the k-fold product). The MW component and the
    answers ``a`` are post-processing. With the seed's ``Lap(epsilon n)`` reading (noise of
    scale ``epsilon`` on averages) this is Theorem 5's ``O(k/(epsilon n))``, constant 4.

    **Accuracy**: :func:`online_pmw_accuracy` (every answer within ``4 alpha`` except with an
    explicit probability). **k**: by default ``floor(ln|D| / alpha^2) + 1``. The seed sets
    ``k = ln|D| / epsilon^2``; the ``epsilon`` there is a typo for ``alpha``: ``k`` counts MW
    updates, which Theorem 3 bounds by ``ln|D| / alpha^2`` whenever the checker is right (the
    accuracy event), so one more than that means the mechanism never halts on that event
    (``k`` is an integer; ``ln|D| / alpha^2`` is not).

    Parameters
    ----------
    data_or_histogram : Dataset or array_like of shape (m,)
        The private data; a histogram must be normalized and needs ``n``.
    alpha : float
        The MW step and the checker's band ``3 alpha``, ``0 < alpha <= 1/2``.
    epsilon : float
        The noise parameter: Laplace scale ``1/epsilon`` on counts (``1/(epsilon size)`` on the
        answers). The guarantee is ``4 k epsilon``.
    k : int, optional
        Number of updates (numerical answers) before halting; default above.
    n : int, optional
        The data's row count; taken from a Dataset (private under add/remove: never released).
    rng : numpy.random.Generator, int or None
        Source of all randomness (``None``: fresh OS entropy, never global state).
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_universe : int
        Larger universes are refused (dense vectors over it are held).
    size, size_share
        As for :class:`~projmech.sparse_vector.ThresholdK`.

    The noise is continuous: the compared distance ``|q(x) N - a N|`` is not an integer, so
    discrete noise would publish its fractional part.
    """

    @validate_params(alpha=_ALPHA, k=OrNone(POSITIVE_INT), **_SPARSE_VECTOR_PARAMETERS)
    def __init__(self, data_or_histogram: Any, alpha: float, epsilon: float, *, k: int | None = None,
                 n: int | None = None, rng: np.random.Generator | int | None = None,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 max_universe: int = MW_MAX_UNIVERSE, size: int | str | None = None,
                 size_share: float | None = None) -> None:
        self.alpha = alpha
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        self._start(data_or_histogram, epsilon, k, n, rng, neighbouring, max_universe, 3.0 * self.alpha,
                    size, size_share, "continuous", default_k=lambda m: mw_update_bound(m, self.alpha) + 1)
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
        """:func:`online_pmw_accuracy` for this mechanism's parameters."""
        return online_pmw_accuracy(self.alpha, self.epsilon, self.size, num_queries, self.k)

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
            noisy answer (recorded), after which ``y`` is updated.

        Raises
        ------
        MechanismHalted
            After ``k`` updates.
        ValueError, TypeError
            On an invalid query (checked before any noise is drawn).
        """
        if self.halted:
            raise MechanismHalted(f"the mechanism halted after its k={self.k} updates")
        row = self._data.row(query)
        estimate = float(row @ np.exp(self._log_y))
        count = self._data.count(row)
        released_count = self._engine.step(abs(count - estimate * self.size), count)
        if released_count is None:
            self._transcript.append(BOTTOM)
            return estimate
        released = released_count / self.size
        self._transcript.append(released)
        # The public MW step; the direction is read off the released number (post-processing).
        self._log_y = _mw_log_step(self._log_y, row, released > estimate, self.alpha)
        return released

    def __repr__(self) -> str:
        return (f"OnlinePMW(alpha={self.alpha:g}, epsilon={self.epsilon:g}, k={self.k}, size={self.size:g}, "
                f"updates={self.updates})")
