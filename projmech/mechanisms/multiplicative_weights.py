"""Multiplicative weights: the MW update and the offline private MW mechanism (MWEM).

The update (:func:`multiplicative_weights_update`) keeps a public distribution ``y`` over the
universe ``D``, starting uniform, whose weights are multiplied by ``e^alpha`` on the elements
that satisfy a predicate when the guess ``q(y)`` was too low (on those that do not when it was
too high), then normalized. Its mistake bound (:func:`mw_update_bound`): with verdicts that are
right and given only when ``|q(x) - q(y)| >= 2 alpha``, at most ``ln|D| / alpha^2`` updates
happen. It drives the interactive mechanism of :cite:t:`HR10` (:mod:`projmech.mechanisms.online_pmw`).

:class:`OfflinePMW` is MWEM :cite:p:`HLM12`, the non-interactive counterpart: the exponential
mechanism picks a badly answered query, a noisy measurement of it drives a multiplicative
weights update. The derivations (the mistake bound, MWEM's budget split and error bound) are in
the theory page *Multiplicative weights* (``docs/theory/multiplicative_weights.md``).

Units: as everywhere in the library, answers are fractions of a public size: ``n`` under
replace-one, a declared or privately estimated size under add/remove
(:class:`~projmech.privacy.guarantees.SizePolicy`). A query row takes values in ``[0, 1]``, so replacing,
adding or removing one row moves its count by at most 1: the noise is calibrated to
sensitivity 1 on counts, and the answers are the counts divided by the public size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._sparse import issparse
from ..data.dataset import MW_MAX_UNIVERSE
from ..privacy.guarantees import ZCDP, Neighbouring, PureDP, compose, gaussian_sigma, laplace_scale, scale_budget
from ..privacy.noise import NOISE_KINDS, Noise, calibrate, choose_discrete, public_size
from ..validation import (
    FLAG,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    InstanceOf,
    Integral,
    Interval,
    Options,
    Real,
    check_query_row,
    check_real_array,
    format_count,
    validate_params,
)
from ..workloads import Workload
from .additive import CountingMechanism, Release
from .selection import exponential_mechanism

__all__ = [
    "MW_MAX_ALPHA",
    "MW_MAX_UNIVERSE",
    "OFFLINE_PMW_MAX_ROUNDS",
    "OFFLINE_PMW_MAX_UPDATES",
    "OfflinePMW",
    "PMWRun",
    "RoundBudget",
    "multiplicative_weights_update",
    "mw_update_bound",
    "offline_pmw_error_bound",
    "offline_pmw_min_n",
]

#: Largest ``alpha`` for which the mistake bound's inequality ``e^a - 1 <= a + a^2`` holds (so
#: ``ln(1 + (e^a - 1) t) <= a t + a^2`` for ``t`` in ``[0, 1]``): the positive root of
#: ``e^x = 1 + x + x^2``, 1.79328..., rounded down.
MW_MAX_ALPHA = 1.79

#: The steps for which the mistake bound (:func:`mw_update_bound`) holds.
_MW_ALPHA = Interval(Real, 0, MW_MAX_ALPHA, closed="right",
                     reason="the mistake bound needs e^alpha - 1 <= alpha + alpha^2")

#: The guarantees OfflinePMW composes over its rounds.
_PRIVACY = InstanceOf(PureDP, ZCDP, what="PureDP (Laplace measurements) or ZCDP (Gaussian)")

#: The most rounds :class:`OfflinePMW` runs. Each round's selection and measurement get
#: ``1/(2T)`` of the budget, so at ``T = 100,000`` under ``PureDP(epsilon)`` the Laplace noise on
#: one measured count has scale ``200,000 / epsilon``: every measurement is noise unless
#: ``epsilon n`` runs to millions. And the rounds alone took about 65 s (0.65 ms per round, one
#: update each, on the 180 2-way marginals of the binary Adult demo data, ``|D| = 1,024``, on a
#: shared 2-core machine), a time that grows with the universe and the workload.
OFFLINE_PMW_MAX_ROUNDS = 10**5

#: The most multiplicative weights updates one :meth:`OfflinePMW.run` applies:
#: ``T + (u - 1) T (T + 1) / 2`` for ``T`` rounds and ``u = updates_per_round`` (each round
#: re-applies every measurement so far ``u - 1`` times). One update took 9.5 us over
#: ``|D| = 1,024`` elements (same machine), so ``10^7`` updates take about 95 s there, in
#: proportion to ``|D|`` beyond; the settings the user guide measures (``T <= 100``, ``u <= 30``)
#: apply at most 146,550.
OFFLINE_PMW_MAX_UPDATES = 10**7

_ROUNDS = Interval(Integral, 1, OFFLINE_PMW_MAX_ROUNDS,
                   reason="each round gets 1/(2 rounds) of the budget: beyond, the noise swamps every "
                          "measurement and a run takes minutes or more")


# ------------------------------------------------------------------------------------------------
# The update
# ------------------------------------------------------------------------------------------------


def _tilt(log_weights: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Normalized log-weights of ``y(r) e^{exponent(r)} / sum``: every MW step in this package.

    Log space keeps thousands of updates exact where multiplying probabilities would underflow
    (``e^{-alpha}`` per step); elements of weight zero (``-inf``) stay zero.
    """
    tilted = log_weights + exponent
    # log-sum-exp shifted by the largest term (finite: some weight is positive), in numpy:
    # SciPy's logsumexp costs about 0.4 ms a call in array-API checks, 20 times the arithmetic,
    # and MWEM with several updates per round makes thousands of calls.
    shift = tilted.max()
    return tilted - (shift + np.log(np.exp(tilted - shift).sum()))


def _log_distribution(distribution: Any, name: str = "distribution") -> np.ndarray:
    """Validated log of a probability vector (zeros become ``-inf``)."""
    y = check_real_array(name, distribution, finite=False)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-d probability vector, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    if y.min() < 0:
        raise ValueError(f"{name}: has negative entries")
    if abs(y.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name}: must sum to 1, got {y.sum():.12g}")
    with np.errstate(divide="ignore"):
        return np.log(y)


@validate_params(too_low=FLAG, alpha=POSITIVE)
def multiplicative_weights_update(distribution: Any, query_row: Any, too_low: bool, alpha: float) -> np.ndarray:
    """One step of the multiplicative weights update.

    If the guess ``q(y)`` was **too low**, every ``y(r)`` is multiplied by ``e^{alpha q(r)}`` (by
    ``e^alpha`` where the predicate holds); if **too high**, by ``e^{alpha (1 - q(r))}`` (by
    ``e^alpha`` where it does not hold); then ``y`` is normalized. For a ``[0, 1]``-valued row
    this is ``y(r) ∝ y(r) e^{±alpha q(r)}`` (the factors ``e^{alpha (1 - q)}`` and
    ``e^{-alpha q}`` differ by the constant ``e^alpha``, which normalization removes), and the
    mistake bound (:func:`mw_update_bound`) holds for such rows as for predicates. This is the
    update of the private multiplicative weights mechanism :cite:p:`HR10` (:cite:t:`DR14`, §4.2);
    the theory page *Multiplicative weights* (``docs/theory/multiplicative_weights.md``) derives
    its mistake bound.

    Computed in log space, so it stays exact over thousands of updates.

    Parameters
    ----------
    distribution : array_like, shape (m,)
        The current distribution ``y`` (non-negative, sums to 1).
    query_row : array_like, shape (m,)
        The query's value ``q(r) ∈ [0, 1]`` on each universe element.
    too_low : bool
        The checker's verdict: ``True`` for "too low", ``False`` for "too high" (a "correct"
        verdict means no update; do not call this).
    alpha : float
        The step, ``alpha > 0``. The mistake bound needs ``alpha <= 1.79``
        (:data:`MW_MAX_ALPHA`); the step itself is defined for every positive ``alpha``.

    Returns
    -------
    numpy.ndarray, shape (m,)
        The updated, normalized distribution ``y'``.

    Raises
    ------
    ValueError
        If ``distribution`` is not a probability vector, ``query_row`` has the wrong length or
        values outside ``[0, 1]``, or ``alpha`` is not positive.
    TypeError
        If ``too_low`` is not a bool or ``alpha`` not a number.

    Examples
    --------
    The guess ``q(y) = 0.5`` for the predicate "element 0 or 1" was too low: the weight moves
    onto its two elements, by ``e^alpha`` each.

    >>> import numpy as np
    >>> from projmech.mechanisms.multiplicative_weights import multiplicative_weights_update
    >>> y = multiplicative_weights_update(np.full(4, 0.25), [1, 1, 0, 0], too_low=True, alpha=0.5)
    >>> y.round(3)
    array([0.311, 0.311, 0.189, 0.189])
    >>> bool(np.isclose(y[0] / y[2], np.exp(0.5)))
    True
    """
    log_y = _log_distribution(distribution)
    row = check_query_row("query_row", query_row, log_y.size)
    return np.exp(_mw_log_step(log_y, row, too_low, alpha))


def _mw_log_step(log_y: np.ndarray, row: np.ndarray, too_low: bool, alpha: float) -> np.ndarray:
    """The MW step on log-weights: too low, ``y e^{alpha q}``; too high, ``y e^{alpha (1 - q)}``."""
    return _tilt(log_y, alpha * row if too_low else alpha * (1.0 - row))


@validate_params(universe_size=POSITIVE_INT, alpha=_MW_ALPHA)
def mw_update_bound(universe_size: int, alpha: float) -> int:
    """The mistake bound of multiplicative weights: at most ``floor(ln|D| / alpha^2)`` updates.

    Valid for ``0 < alpha <= 1.79`` (:data:`MW_MAX_ALPHA`) and any checker whose "too low" /
    "too high" verdicts are right and given only when ``|q(x) - q(y)| >= 2 alpha``: each update
    then lowers the relative entropy ``KL(x || y)`` by at least ``alpha^2``, and it starts at most
    ``ln|D|`` and never goes below 0. This is the bound behind the private multiplicative
    weights mechanism :cite:p:`HR10`; the theory page *Multiplicative weights*
    (``docs/theory/multiplicative_weights.md``) derives it with this constant.

    Parameters
    ----------
    universe_size : int
        ``|D|``, the number of elements of the universe.
    alpha : float
        The update step, ``0 < alpha <= 1.79``.

    Returns
    -------
    int
        The largest number of updates, ``floor(ln|D| / alpha^2)``.

    Raises
    ------
    ValueError
        If ``universe_size`` is not positive or ``alpha`` is not in ``(0, 1.79]``.
    TypeError
        If ``universe_size`` is not an int or ``alpha`` not a number.

    Examples
    --------
    >>> from projmech.mechanisms.multiplicative_weights import mw_update_bound
    >>> mw_update_bound(1024, 0.1)
    693
    """
    # In exact rationals: alpha^2 underflows to 0 below alpha = 1e-162, and the quotient passes
    # float's range before that, where the bound is still an int.
    return math.floor(Fraction(math.log(universe_size)) / Fraction(alpha) ** 2)


# ------------------------------------------------------------------------------------------------
# Offline private multiplicative weights (MWEM)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundBudget:
    """The privacy spent in each round of :class:`OfflinePMW`.

    :class:`OfflinePMW` builds it (its attribute ``round_budget``): the budget is split evenly
    over the ``2T`` steps of its ``T`` rounds, one selection and one measurement each.

    Parameters
    ----------
    selection : PureDP or ZCDP
        Guarantee of the round's exponential mechanism.
    selection_epsilon : float
        Its parameter ``epsilon_0``: query ``i`` is picked with probability proportional to
        ``exp(epsilon_0 s_i / (2 Delta))``, ``Delta = 1/n`` the sensitivity of the score.
    measurement : PureDP or ZCDP
        Guarantee of the round's noisy measurement (Laplace for PureDP, Gaussian for ZCDP).

    Examples
    --------
    ``PureDP(1)`` over 5 rounds: ``1 / 10`` to each selection and each measurement. Under
    ``ZCDP(rho)`` the exponential mechanism's ``epsilon_0`` is ``sqrt(8 rho / (2T))``.

    >>> import projmech as pm
    >>> workload = pm.marginals(pm.Domain(["a", "b"], [2, 2]), 1)
    >>> pm.OfflinePMW(workload, pm.PureDP(1.0), rounds=5).round_budget
    RoundBudget(selection=PureDP(epsilon=0.1), selection_epsilon=0.1, measurement=PureDP(epsilon=0.1))
    >>> round(pm.OfflinePMW(workload, pm.ZCDP(0.5), rounds=5).round_budget.selection_epsilon, 4)
    0.6325
    """

    selection: PureDP | ZCDP
    selection_epsilon: float
    measurement: PureDP | ZCDP


def _round_budget(privacy: PureDP | ZCDP, rounds: int) -> RoundBudget:
    """Split ``privacy`` evenly over ``rounds`` rounds of one selection and one measurement.

    PureDP(eps): ``eps / (2T)`` to each; basic composition sums the ``2T`` epsilons to ``eps``.
    ZCDP(rho): ``rho / (2T)`` to each; the exponential mechanism with parameter ``epsilon_0`` is
    ``epsilon_0``-bounded-range :cite:p:`DR19`, hence ``epsilon_0^2 / 8``-zCDP :cite:p:`CR21`,
    so ``epsilon_0 = sqrt(8 rho / (2T))``; zCDP composes additively :cite:p:`BS16` to ``rho``.
    """
    if isinstance(privacy, PureDP):
        share = privacy.epsilon / (2 * rounds)
        return RoundBudget(PureDP(share), share, PureDP(share))
    share = privacy.rho / (2 * rounds)
    return RoundBudget(ZCDP(share), math.sqrt(8.0 * share), ZCDP(share))


def _measurement_scale(budget: RoundBudget, discrete: bool = False) -> float:
    """Laplace scale ``b = 1/epsilon_0`` or Gaussian ``sigma = 1/sqrt(2 rho_0)`` of one measured
    count (sensitivity 1)."""
    if isinstance(budget.measurement, PureDP):
        return laplace_scale(1.0, budget.measurement)
    return gaussian_sigma(1.0, budget.measurement, discrete=discrete)


@dataclass(frozen=True, eq=False)
class PMWRun:
    """One run of :class:`OfflinePMW`: the release and the public by-products behind it.

    Returned by :meth:`OfflinePMW.run`. Everything here is a function of the selections and
    noisy measurements only, hence as private as the release (post-processing).

    Parameters
    ----------
    release : Release
        The workload's answers on ``distribution``.
    distribution : ndarray, shape (m,)
        The synthetic distribution over the universe: the average of the ``T`` distributions
        after each round's update, as in MWEM.
    selected : tuple of int
        The query picked in each round.
    measurements : ndarray, shape (T,)
        The noisy answer measured in each round (a fraction of ``n``).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.OfflinePMW(pm.marginals(domain, 1), pm.PureDP(1.0), rounds=3, noise="continuous")
    >>> run = mechanism.run(data, rng=np.random.default_rng(0))
    >>> len(run.selected), run.measurements.shape, run.distribution.shape
    (3, (3,), (4,))
    >>> bool(np.isclose(run.distribution.sum(), 1.0))
    True
    """

    release: Release
    distribution: np.ndarray
    selected: tuple[int, ...]
    measurements: np.ndarray


class OfflinePMW(CountingMechanism):
    """MWEM: private multiplicative weights over a workload.

    The MWEM algorithm of :cite:t:`HLM12`. Starting from the uniform distribution ``y_0`` over
    the universe, each of ``T`` rounds

    1. **selects** a badly answered query by the exponential mechanism: query ``i`` with
       probability proportional to ``exp(epsilon_0 s_i / (2 Delta))``, score
       ``s_i = |q_i(x) - q_i(y)|`` (fractions of the public size ``N``), ``Delta = 1/N`` its
       sensitivity;
    2. **measures** it: ``m = (c_i + noise) / N`` for the count ``c_i = N q_i(x)``, Laplace of
       scale ``b = 1/epsilon_m`` under PureDP, Gaussian of ``sigma = 1/sqrt(2 rho_m)`` under
       ZCDP (discrete when the rows are 0/1, so the counts are integers);
    3. **updates** ``y(r) ∝ y(r) exp(q_i(r) (m - q_i(y)) / 2)`` (MWEM's rule), in log space;
       with ``updates_per_round = u > 1`` it then re-applies the update for every measurement
       so far ``u - 1`` more times.

    The released answers are those of the average of ``y_1, ..., y_T`` (MWEM's output);
    :meth:`run` also returns that distribution, the selections and the measurements.

    **Privacy**: the guarantee given, w.r.t. either neighbouring relation. Every query row lies
    in ``[0, 1]`` (checked), so one row replaced, added or removed moves the score and the
    measured fraction by at most ``1/N``; ``y`` is public in each round. Each round is one
    exponential mechanism and one measurement with the budgets of ``round_budget``
    (:class:`RoundBudget`; the budget left after a size estimate), ``1/(2T)`` of the total to
    each, composed over the ``T`` adaptive rounds: basic composition under ``PureDP``; under
    ``ZCDP`` the exponential mechanism is ``epsilon_0``-bounded-range :cite:p:`DR19`, hence
    ``epsilon_0^2/8``-zCDP :cite:p:`CR21`, and zCDP composes additively :cite:p:`BS16`.
    :attr:`privacy_spent` recomposes the per-round guarantees and the size estimate's; it
    equals ``privacy``. The extra updates of ``updates_per_round > 1`` use only the public rows
    and the noisy measurements already taken, so they are post-processing: the same guarantee.

    **Accuracy**: :func:`offline_pmw_error_bound`, a bound on the largest error proved for
    ``updates_per_round=1``. The default ``updates_per_round=10`` has no proved bound but a
    much smaller error in practice: on the 2-way marginals of the binary Adult demo data at
    ``PureDP(1)`` with ``T = 30`` rounds, RMSE 0.020 against 0.086 with one update per round
    (the measurement is in the user guide page *Multiplicative weights*,
    ``docs/guide/multiplicative_weights.md``). The derivations are in the theory page
    *Multiplicative weights* (``docs/theory/multiplicative_weights.md``).

    Parameters
    ----------
    workload : Workload
        Rows with entries in ``[0, 1]``: an explicit matrix (checked), or the implicit
        :func:`~projmech.workloads.marginals` (0/1 by construction). Other implicit workloads are
        refused, since their rows cannot be checked.
    privacy : PureDP or ZCDP
        The total guarantee, split evenly over the ``2T`` selections and measurements.
    rounds : int
        ``T``, the number of select-measure-update rounds, at most
        :data:`OFFLINE_PMW_MAX_ROUNDS` (100,000: each round gets ``1/(2T)`` of the budget).
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    updates_per_round : int
        ``u``: each round applies its own update, then re-applies the update of every
        measurement so far ``u - 1`` times, the practical improvement of :cite:t:`HLM12`'s
        experiments. Default 10 (chosen by the measurement above); ``1`` is MWEM as analysed,
        the only setting :meth:`error_bound` accepts. The running time grows as ``T^2 u``: a run
        applies ``T + (u - 1) T (T + 1) / 2`` updates, at most :data:`OFFLINE_PMW_MAX_UPDATES`
        (``10^7``).
    max_universe : int
        Larger universes are refused (the mechanism holds dense vectors over it).
    size : int or "estimate", optional
        Under add/remove, as for :class:`~projmech.mechanisms.additive.GaussianMechanism`.
    size_share : float, optional
        With ``size="estimate"``, the share of the budget spent on the size.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: discrete noise for 0/1 rows (integer counts), continuous otherwise.

    Raises
    ------
    ValueError
        If ``rounds``, ``updates_per_round`` or ``max_universe`` is not positive, ``rounds``
        exceeds :data:`OFFLINE_PMW_MAX_ROUNDS` or the updates of a run
        :data:`OFFLINE_PMW_MAX_UPDATES`, the universe exceeds ``max_universe``, or a workload
        entry lies outside ``[0, 1]``.
    TypeError
        If ``privacy`` is not PureDP or ZCDP, or an option is passed by position.

    See Also
    --------
    projmech.mechanisms.online_pmw.OnlinePMW : The interactive counterpart.
    offline_pmw_error_bound : The accuracy bound for ``updates_per_round=1``.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.OfflinePMW(pm.marginals(domain, 1), pm.PureDP(1.0), rounds=3)
    >>> mechanism.updates_per_round, mechanism.privacy_spent == pm.PureDP(1.0)
    (10, True)
    >>> release = mechanism.release(data)
    >>> release.answers.shape, bool(np.all((release.answers >= 0) & (release.answers <= 1)))
    ((4,), True)
    """

    mechanism_name = "offline_pmw"
    #: Checked by the constructor: MWEM's budget composes additively.
    privacy: PureDP | ZCDP

    @validate_params(privacy=_PRIVACY, rounds=_ROUNDS, updates_per_round=POSITIVE_INT,
                     max_universe=POSITIVE_INT, noise=Options(*NOISE_KINDS))
    def __init__(self, workload: Workload, privacy: PureDP | ZCDP, rounds: int, *,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 updates_per_round: int = 10, max_universe: int = MW_MAX_UNIVERSE,
                 size: int | str | None = None, size_share: float | None = None, noise: str = "auto") -> None:
        updates = _mw_updates(rounds, updates_per_round)
        if updates > OFFLINE_PMW_MAX_UPDATES:
            raise ValueError(
                f"updates_per_round: {updates_per_round} per round over {format_count(rounds)} rounds apply "
                f"{format_count(updates)} multiplicative weights updates (rounds + (u - 1) rounds (rounds + 1) / 2), "
                f"above OFFLINE_PMW_MAX_UPDATES={format_count(OFFLINE_PMW_MAX_UPDATES)} (about 95 s over 1,024 "
                "elements, longer over more); lower updates_per_round (1 is MWEM as analysed) or rounds"
            )
        super().__init__(workload, privacy, neighbouring, size, size_share)
        self.rounds = rounds
        self.updates_per_round = updates_per_round
        m = workload.universe_size
        if m > max_universe:
            raise ValueError(
                f"workload: its universe has {m:,} elements, above max_universe={max_universe:,}; "
                "OfflinePMW holds a dense distribution over it"
            )
        _check_unit_rows(workload)
        discrete = choose_discrete(noise, workload.is_integer)
        share = self.size_policy.main_share()
        self._rounds_privacy = scale_budget(privacy, share)
        self.round_budget = _round_budget(self._rounds_privacy, self.rounds)
        # Each measurement is one count of sensitivity 1; the size estimate, if any, is calibrated
        # by the same rule as every mechanism's.
        self.noise = Noise("laplace" if isinstance(privacy, PureDP) else "gaussian",
                           _measurement_scale(self.round_budget, discrete), discrete)
        self.size_noise = calibrate(privacy, 1.0, self.size_policy, discrete)[1]
        self._sensitivity = 1.0

    @property
    def privacy_spent(self) -> PureDP | ZCDP:
        """The composition of the rounds' budgets and the size estimate's share (equals ``privacy``)."""
        parts = [self.round_budget.selection, self.round_budget.measurement] * self.rounds
        if self.size_policy.estimated:
            parts.append(scale_budget(self.privacy, self.size_policy.share))
        return compose(parts)

    def error_bound(self, n: int, failure_probability: float = 0.05) -> float:
        """A bound on the largest error, :func:`offline_pmw_error_bound`, for this mechanism.

        Parameters
        ----------
        n : int
            The public size.
        failure_probability : float
            The probability with which the bound may fail.

        Returns
        -------
        float
            :func:`offline_pmw_error_bound` for this mechanism's workload, budget and rounds.

        Raises
        ------
        ValueError
            With ``updates_per_round`` other than 1, for which no bound is proved.
        """
        if self.updates_per_round != 1:
            raise ValueError("updates_per_round: the error bound is proved for 1 update per round only")
        return offline_pmw_error_bound(n, self.workload.universe_size, self.workload.num_queries,
                                       self.rounds, self._rounds_privacy, failure_probability=failure_probability,
                                       discrete=self.noise.discrete)

    # rng is keyword-only, as every option of OfflinePMW is (by design, and tested); the other
    # mechanisms also take it by position, hence an override the checker calls incompatible.
    def release(self, data_or_histogram: Any, n: int | None = None, *,  # type: ignore[override]
                rng: np.random.Generator | int | None = None) -> Release:
        """Run MWEM and release the workload's answers on its synthetic distribution.

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            As for :meth:`run`.
        n : int, optional
            As for :meth:`run`.
        rng : numpy.random.Generator, int or None
            As for :meth:`run`.

        Returns
        -------
        Release
            The answers, with ``answers == noisy_answers`` (MWEM measures only the ``T``
            selected queries, so there are no per-query noisy answers), and ``scale`` and
            ``sensitivity`` of one measurement.
        """
        return self.run(data_or_histogram, n=n, rng=rng).release

    @validate_params(rng=SEED)
    def run(self, data_or_histogram: Any, n: int | None = None, *,
            rng: np.random.Generator | int | None = None) -> PMWRun:
        """Run MWEM on a :class:`~projmech.data.dataset.Dataset` or a normalized histogram.

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            A histogram must be normalized and needs ``n``, with ``n h`` integer counts.
        n : int, optional
            The data's row count; taken from a Dataset (private under add/remove: never
            released, see :class:`~projmech.privacy.guarantees.SizePolicy`).
        rng : numpy.random.Generator, int or None
            Source of the selections and of continuous noise (``None``: fresh OS entropy, never
            global state); discrete noise comes from OpenDP's own generator.

        Returns
        -------
        PMWRun
            The release, the synthetic distribution, the selected queries and the noisy
            measurements.
        """
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        generator = rng
        data, rows = self._rows(data_or_histogram, n)
        counts = self._counts(data)
        size = public_size(self.size_policy, rows, self.size_noise, generator)
        truth = counts / size
        m = self.workload.universe_size
        log_y = np.full(m, -math.log(m))
        y = np.exp(log_y)
        total = np.zeros(m)
        selected: list[int] = []
        measurements: list[float] = []
        selected_rows: list[np.ndarray] = []
        for _ in range(self.rounds):
            # The unchecked product: y is this loop's own distribution, not a caller's argument.
            scores = np.abs(truth - self.workload.kernels.matvec(y))
            index = exponential_mechanism(scores, self.round_budget.selection_epsilon, 1.0 / size, generator)
            measurement = float(counts[index] + self.noise.sample(1, generator)[0]) / size
            row = self._row(index)
            selected.append(index)
            measurements.append(measurement)
            selected_rows.append(row)
            log_y = _mwem_step(log_y, row, measurement)
            # More updates from the same public rows and noisy measurements: post-processing.
            for _ in range(self.updates_per_round - 1):
                for past_row, past_measurement in zip(selected_rows, measurements):
                    log_y = _mwem_step(log_y, past_row, past_measurement)
            y = np.exp(log_y)
            total += y
        distribution = total / self.rounds
        answers = self.workload.kernels.matvec(distribution)
        release = self._release(answers, answers, size)
        return PMWRun(release, distribution, tuple(selected), np.array(measurements))

    def _row(self, index: int) -> np.ndarray:
        """Query ``index``'s row ``F[index, :]`` (``F.T e_i``, which implicit marginals offer too)."""
        unit = np.zeros(self.workload.num_queries)
        unit[index] = 1.0
        return self.workload.kernels.rmatvec(unit)

    def __repr__(self) -> str:
        return (f"OfflinePMW({self.workload!r}, {self.privacy}, rounds={self.rounds}, "
                f"{self._size_repr()}, {self.noise.name})")


def _mw_updates(rounds: int, updates_per_round: int) -> int:
    """The multiplicative weights updates a run applies: one per round, then ``u - 1`` more for
    each measurement so far (``t`` of them in round ``t``)."""
    return rounds + (updates_per_round - 1) * rounds * (rounds + 1) // 2


def _mwem_step(log_y: np.ndarray, row: np.ndarray, measurement: float) -> np.ndarray:
    """MWEM's update ``y ∝ y exp(q (m - q(y)) / 2)`` on log-weights."""
    estimate = float(row @ np.exp(log_y))
    return _tilt(log_y, row * ((measurement - estimate) / 2.0))


def _check_unit_rows(workload: Workload) -> None:
    """Raise unless every entry of ``workload`` lies in ``[0, 1]`` (see :class:`OfflinePMW`)."""
    if workload.is_implicit:
        if workload.marginal_way is None:
            raise ValueError(
                f"workload: {workload.name} is implicit, so its entries cannot be checked to lie in [0, 1]; "
                "build it explicitly (implicit marginals are accepted)"
            )
        return
    matrix = workload.matrix
    values = matrix.data if issparse(matrix) else matrix
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError(
            f"workload: entries must lie in [0, 1] (averaging queries), got [{values.min():g}, {values.max():g}]"
        )


@validate_params(n=POSITIVE_INT, universe_size=POSITIVE_INT, num_queries=POSITIVE_INT, rounds=POSITIVE_INT,
                 privacy=_PRIVACY, failure_probability=OPEN_UNIT, discrete=FLAG)
def offline_pmw_error_bound(n: int, universe_size: int, num_queries: int, rounds: int,
                            privacy: PureDP | ZCDP, *, failure_probability: float = 0.05,
                            discrete: bool = False) -> float:
    """A bound on MWEM's largest error that holds with probability ``1 - failure_probability``.

    For :class:`OfflinePMW` with ``updates_per_round=1`` over ``k = num_queries`` queries with
    rows in ``[0, 1]``, ``T = rounds`` and ``|D| = universe_size``: with probability at least
    ``1 - p`` (``p = failure_probability``), every query's released answer satisfies

    ``|q(y_bar) - q(x)| <= sqrt(4 ln|D| / T + beta^2) + delta + 1/T``,

    where, with ``eta = p / (2T)`` and ``epsilon_0`` the selection parameter of
    :class:`RoundBudget`,

    - ``delta = (2 / (epsilon_0 n)) ln(k / eta)`` bounds the exponential mechanism's shortfall,
    - ``beta`` bounds each measurement's noise: ``b ln(1/eta)`` for Laplace of scale ``b``,
      ``sigma sqrt(2) erfcinv(eta)`` for Gaussian noise; for discrete noise (``discrete=True``)
      ``b ln(2 / ((1 + q) eta))`` with ``q = e^{-1/b}`` (the discrete Laplace's two-sided tail)
      and ``sigma sqrt(2 ln(2/eta))`` (the discrete Gaussian is ``sigma^2``-subgaussian
      :cite:p:`CKS20`), with ``b`` and ``sigma`` in counts and ``beta`` divided by ``n``.

    All in fractions of ``n``, the public size, and about the data's fractions when that size is
    the row count (replace-one, or a declared size equal to it): with another size the counts
    over the size are no distribution, and the potential argument does not apply. This is MWEM's
    accuracy argument :cite:p:`HLM12` with explicit constants (a relative-entropy potential, the
    exponential mechanism's and the noise's tails, a union bound over the ``2T`` events); the
    derivation is in the theory page *Multiplicative weights*
    (``docs/theory/multiplicative_weights.md``). For PureDP with ``eta = 1/k`` it is at most
    ``2 sqrt(ln|D|/T) + 10 T ln k/(epsilon n) + 1/T``, the form in which MWEM's bound is usually
    quoted (in counts, without the ``1/T`` of averaging ``y_1..y_T``).

    Parameters
    ----------
    n : int
        The public size (the row count under replace-one).
    universe_size : int
        ``|D|``.
    num_queries : int
        ``k``, the number of queries in the workload.
    rounds : int
        ``T``.
    privacy : PureDP or ZCDP
        The budget of the rounds (after any size estimate's share).
    failure_probability : float
        ``p``, in ``(0, 1)``.
    discrete : bool
        Whether the measurements carry discrete noise (their tails differ slightly).

    Returns
    -------
    float
        The bound (it may exceed 1, the trivial bound for averaging queries).

    Raises
    ------
    ValueError
        If ``n``, ``universe_size``, ``num_queries`` or ``rounds`` is not positive, or
        ``failure_probability`` is not in ``(0, 1)``.
    TypeError
        If ``privacy`` is not PureDP or ZCDP, or a count is not an int.

    See Also
    --------
    offline_pmw_min_n : The smallest ``n`` for a target bound.
    OfflinePMW.error_bound : The same for a mechanism's own parameters.

    Examples
    --------
    The 180 2-way marginals of 10 binary attributes (``|D| = 1024``) at ``PureDP(1)`` with
    ``T = 300`` rounds: the bound falls with ``n`` towards ``2 sqrt(ln|D| / T) + 1/T = 0.307``.
    It is a worst case over the queries and far above the errors measured in practice.

    >>> import projmech as pm
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
    """``c`` with ``P(|Z| >= t) <= c e^{-t/b}`` for every ``t > 0``, ``Z`` Laplace of scale ``b``.

    1 for the continuous Laplace (equality). For the discrete Laplace the two-sided tail is
    ``2 q^{ceil(t)} / (1 + q)`` with ``q = e^{-1/b}``, at most ``2 / (1 + q)`` times
    ``e^{-t/b}`` (equality at integer ``t``); since that is at least 1 it bounds a continuous
    draw's tail as well.
    """
    return 2.0 / (1.0 + math.exp(-1.0 / scale)) if discrete else 1.0


@validate_params(alpha=POSITIVE, universe_size=POSITIVE_INT, num_queries=POSITIVE_INT, rounds=POSITIVE_INT,
                 privacy=_PRIVACY, failure_probability=OPEN_UNIT)
def offline_pmw_min_n(alpha: float, universe_size: int, num_queries: int, rounds: int,
                      privacy: PureDP | ZCDP, *, failure_probability: float = 0.05) -> int:
    """The smallest ``n`` for which :func:`offline_pmw_error_bound` is at most ``alpha``.

    The bound decreases in ``n`` (its noise terms are proportional to ``1/n``) towards
    ``2 sqrt(ln|D|/T) + 1/T``, which no data size beats.

    Parameters
    ----------
    alpha : float
        The target error, above ``2 sqrt(ln|D|/T) + 1/T``.
    universe_size : int
        ``|D|``.
    num_queries : int
        ``k``, the number of queries in the workload.
    rounds : int
        ``T``.
    privacy : PureDP or ZCDP
        The budget of the rounds.
    failure_probability : float
        The probability with which the bound may fail, in ``(0, 1)``.

    Returns
    -------
    int
        The smallest public size whose bound is at most ``alpha``.

    Raises
    ------
    ValueError
        If ``alpha`` is at or below ``2 sqrt(ln|D|/T) + 1/T`` (more rounds lower it), or an
        argument is out of range.
    TypeError
        If ``privacy`` is not PureDP or ZCDP, or a count is not an int.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.mechanisms.multiplicative_weights import offline_pmw_error_bound, offline_pmw_min_n
    >>> n = offline_pmw_min_n(0.5, 1024, 180, 300, pm.PureDP(1.0))
    >>> n
    93713
    >>> offline_pmw_error_bound(n, 1024, 180, 300, pm.PureDP(1.0)) <= 0.5
    True
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


if TYPE_CHECKING:  # the type checker proves that OfflinePMW follows the mechanisms' protocol
    from .additive import Mechanism

    _FOLLOWS_THE_PROTOCOL: type[Mechanism] = OfflinePMW
