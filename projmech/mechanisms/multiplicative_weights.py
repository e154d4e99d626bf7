"""Multiplicative weights: the MW update, its mistake bound, and MWEM (:class:`OfflinePMW`)
(:doc:`/theory/multiplicative_weights`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._sparse import issparse
from ..data import MW_MAX_UNIVERSE
from ..privacy import (
    NOISE_KINDS,
    ZCDP,
    Neighbouring,
    Noise,
    PureDP,
    calibrate,
    choose_discrete,
    compose,
    public_size,
    scale_budget,
)
from ..validation import (
    FLAG,
    POSITIVE,
    POSITIVE_INT,
    SEED,
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
from ._counting import CountingMechanism
from ._mwem_bounds import (
    _PRIVACY,
    RoundBudget,
    _measurement_scale,
    _round_budget,
    offline_pmw_error_bound,
    offline_pmw_min_n,
)
from ._release import Release
from ._selection import exponential_mechanism

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

#: The most rounds :class:`OfflinePMW` runs: each step gets ``1/(2T)`` of the budget, so beyond
#: this every measurement is noise unless ``epsilon n`` runs to millions, and a run takes minutes.
OFFLINE_PMW_MAX_ROUNDS = 10**5

#: The most multiplicative weights updates one :meth:`OfflinePMW.run` applies,
#: ``T + (u - 1) T (T + 1) / 2`` for ``T`` rounds and ``u = updates_per_round``: a run of minutes.
OFFLINE_PMW_MAX_UPDATES = 10**7

_ROUNDS = Interval(Integral, 1, OFFLINE_PMW_MAX_ROUNDS,
                   reason="each round gets 1/(2 rounds) of the budget: beyond, the noise swamps every "
                          "measurement and a run takes minutes or more")


# ------------------------------------------------------------------------------------------------
# The update
# ------------------------------------------------------------------------------------------------


def _tilt(log_weights: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Normalized log-weights of ``y e^exponent`` (log space stays exact over thousands of updates)."""
    tilted = log_weights + exponent
    # log-sum-exp shifted by the largest term (finite: some weight is positive), in numpy: SciPy's
    # logsumexp spends far more on array-API checks than on the arithmetic, called thousands of times.
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
    """One multiplicative weights step :cite:p:`HR10`: ``y e^{alpha q}`` if too low, ``y e^{alpha (1 - q)}`` if high.

    Parameters
    ----------
    distribution, query_row : array_like, shape (m,)
        The current distribution ``y``, and the query's value ``q(r) ∈ [0, 1]`` on each element.
    too_low, alpha
        The verdict (True: "too low"), and the step (the mistake bound needs ``alpha <= MW_MAX_ALPHA``).

    Returns
    -------
    numpy.ndarray, shape (m,)

    Examples
    --------
    >>> from projmech.mechanisms.multiplicative_weights import multiplicative_weights_update
    >>> multiplicative_weights_update(np.full(4, 0.25), [1, 1, 0, 0], too_low=True, alpha=0.5).round(3)
    array([0.311, 0.311, 0.189, 0.189])
    """
    log_y = _log_distribution(distribution)
    row = check_query_row("query_row", query_row, log_y.size)
    return np.exp(_mw_log_step(log_y, row, too_low, alpha))


def _mw_log_step(log_y: np.ndarray, row: np.ndarray, too_low: bool, alpha: float) -> np.ndarray:
    """The MW step on log-weights."""
    return _tilt(log_y, alpha * row if too_low else alpha * (1.0 - row))


@validate_params(universe_size=POSITIVE_INT, alpha=_MW_ALPHA)
def mw_update_bound(universe_size: int, alpha: float) -> int:
    """The mistake bound of multiplicative weights: at most ``floor(ln|D| / alpha^2)`` updates :cite:p:`HR10`.

    It holds for right verdicts given only when ``|q(x) - q(y)| >= 2 alpha`` (:doc:`/theory/multiplicative_weights`).

    Parameters
    ----------
    universe_size, alpha
        ``|D|``, and the update step (``0 < alpha <= MW_MAX_ALPHA``).

    Returns
    -------
    int

    Examples
    --------
    >>> pm.mechanisms.multiplicative_weights.mw_update_bound(1024, 0.1)
    693
    """
    # In exact rationals: alpha^2 underflows to 0 below alpha = 1e-162, and the quotient passes
    # float's range before that, where the bound is still an int.
    return math.floor(Fraction(math.log(universe_size)) / Fraction(alpha) ** 2)


# ------------------------------------------------------------------------------------------------
# Offline private multiplicative weights (MWEM)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PMWRun:
    """One run of :class:`OfflinePMW`: the release and the public by-products behind it.

    Parameters
    ----------
    release, distribution, selected, measurements
        The answers on ``distribution`` (the rounds' average), each round's query and noisy answer.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), pm.Domain(["a", "b"], [2, 2]))
    >>> run = pm.OfflinePMW(pm.marginals(data.domain, 1), pm.PureDP(1.0), rounds=3).run(data, rng=0)
    >>> len(run.selected), run.measurements.shape, run.distribution.shape
    (3, (3,), (4,))
    """

    release: Release
    distribution: np.ndarray
    selected: tuple[int, ...]
    measurements: np.ndarray


class OfflinePMW(CountingMechanism):
    """MWEM :cite:p:`HLM12`: private multiplicative weights over a workload.

    Each of ``T`` rounds selects a badly answered query and measures it with noise, each step with
    ``1/(2T)`` of ``privacy``, under ``neighbouring`` (:class:`RoundBudget`, :doc:`/theory/multiplicative_weights`).

    Parameters
    ----------
    workload : Workload
        Rows with entries in ``[0, 1]``: explicit (checked) or implicit marginals.
    privacy, rounds
        The total guarantee (PureDP or ZCDP) and ``T`` (at most :data:`OFFLINE_PMW_MAX_ROUNDS`).
    updates_per_round : int
        ``u``: each round re-applies every measurement ``u - 1`` more times (post-processing).
        Default 10 (chosen in the user guide); 1 is MWEM as analysed, the only one :meth:`error_bound` takes.
    neighbouring, size, size_share, max_universe
        As for :class:`~projmech.mechanisms.GaussianMechanism`; larger universes are refused.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: discrete noise for 0/1 rows, continuous otherwise.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), pm.Domain(["a", "b"], [2, 2]))
    >>> mechanism = pm.OfflinePMW(pm.marginals(data.domain, 1), pm.PureDP(1.0), rounds=3)
    >>> mechanism.updates_per_round, mechanism.privacy_spent == pm.PureDP(1.0), mechanism.release(data).answers.shape
    (10, True, (4,))
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
        """:func:`offline_pmw_error_bound` for this mechanism (``updates_per_round=1`` only).

        Parameters
        ----------
        n, failure_probability
            The public size, and the probability with which the bound may fail.

        Returns
        -------
        float
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
        """Run MWEM (:meth:`run`, the same arguments) and release the answers on its synthetic distribution.

        Parameters
        ----------
        data_or_histogram, n, rng
            The data (or a histogram and its row count) and the source of randomness.

        Returns
        -------
        Release
            ``answers == noisy_answers``, with one measurement's noise.
        """
        return self.run(data_or_histogram, n=n, rng=rng).release

    @validate_params(rng=SEED)
    def run(self, data_or_histogram: Any, n: int | None = None, *,
            rng: np.random.Generator | int | None = None) -> PMWRun:
        """Run MWEM on a :class:`~projmech.data.Dataset` or a normalized histogram.

        Parameters
        ----------
        data_or_histogram, n
            The data, or a normalized histogram and its row count (private under add/remove, never released).
        rng : numpy.random.Generator, int or None
            The source of the selections and of continuous noise.

        Returns
        -------
        PMWRun
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
        """Query ``index``'s row ``F.T e_i``, which implicit marginals offer too."""
        unit = np.zeros(self.workload.num_queries)
        unit[index] = 1.0
        return self.workload.kernels.rmatvec(unit)

    def __repr__(self) -> str:
        return (f"OfflinePMW({self.workload!r}, {self.privacy}, rounds={self.rounds}, "
                f"{self._size_repr()}, {self.noise.name})")


def _mw_updates(rounds: int, updates_per_round: int) -> int:
    """The updates a run applies: ``T + (u - 1) T (T + 1) / 2``."""
    return rounds + (updates_per_round - 1) * rounds * (rounds + 1) // 2


def _mwem_step(log_y: np.ndarray, row: np.ndarray, measurement: float) -> np.ndarray:
    """MWEM's update ``y ∝ y exp(q (m - q(y)) / 2)`` on log-weights."""
    estimate = float(row @ np.exp(log_y))
    return _tilt(log_y, row * ((measurement - estimate) / 2.0))


def _check_unit_rows(workload: Workload) -> None:
    """Raise unless every entry of ``workload`` lies in ``[0, 1]``."""
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



if TYPE_CHECKING:  # the type checker proves that OfflinePMW follows the mechanisms' protocol
    from ._counting import Mechanism

    _FOLLOWS_THE_PROTOCOL: type[Mechanism] = OfflinePMW
