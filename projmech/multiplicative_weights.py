"""Multiplicative weights: the seed's MW update and the offline private MW mechanism (MWEM).

The update is the multiplicative weights algorithm ``MW^C`` of seed 004 (§3): a public
distribution ``y`` over the universe ``D``, starting uniform, whose weights are multiplied by
``e^alpha`` on the elements that satisfy a predicate when the guess ``q(y)`` was too low (on those
that do not when it was too high), then normalized. Theorem 3 of seed 004: with the exact checker
``E(x)`` (band ``2 alpha``) and ``alpha <= 1.79``, at most ``ln|D| / alpha^2`` updates happen,
because each one lowers ``Div(x || y)`` by at least ``alpha^2`` and it starts at most ``ln|D|``.

:class:`OfflinePMW` is MWEM (Hardt, Ligett & McSherry, "A simple and practical algorithm for
differentially private data release", NeurIPS 2012), the non-interactive counterpart of the
Hardt–Rothblum mechanism (:mod:`projmech.online_pmw`): the exponential mechanism picks a badly
answered query, a noisy measurement of it drives a multiplicative weights update.

Units: as everywhere in the library, answers are fractions of a public size (averaging queries,
seed 004 §2): ``n`` under replace-one, a declared or privately estimated size under add/remove
(:class:`~projmech.privacy.SizePolicy`). A query row takes values in ``[0, 1]``, so replacing,
adding or removing one row moves its count by at most 1: the noise is the seed's
``Lap(1/epsilon)`` on counts, and the answers are the counts divided by the public size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._sparse import issparse
from .data import MW_MAX_UNIVERSE
from .mechanisms import Release, _CountingMechanism
from .noise import NOISE_KINDS, Noise, calibrate, choose_discrete
from .privacy import Neighbouring, PureDP, ZCDP, gaussian_sigma, laplace_scale, scale_budget
from .validation import (
    FLAG,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    InstanceOf,
    Interval,
    Options,
    Real,
    check_query_row,
    check_real_array,
    validate_params,
)
from .workloads import Workload

__all__ = [
    "MW_MAX_ALPHA",
    "MW_MAX_UNIVERSE",
    "OfflinePMW",
    "PMWRun",
    "RoundBudget",
    "multiplicative_weights_update",
    "mw_update_bound",
    "offline_pmw_error_bound",
    "offline_pmw_min_n",
]

#: Largest ``alpha`` for which seed 004's Lemma 4 (``ln(1 + (e^a - 1) t) <= a t + a^2``) holds:
#: the positive root of ``e^x = 1 + x + x^2``, 1.79328..., rounded down as in the seed.
MW_MAX_ALPHA = 1.79

#: The steps for which Theorem 3's update count holds.
_MW_ALPHA = Interval(Real, 0, MW_MAX_ALPHA, closed="right", reason="seed 004, Lemma 4")

#: The guarantees OfflinePMW composes over its rounds.
_PRIVACY = InstanceOf(PureDP, ZCDP, what="PureDP (Laplace measurements) or ZCDP (Gaussian)")


# ------------------------------------------------------------------------------------------------
# The update
# ------------------------------------------------------------------------------------------------


def _tilt(log_weights: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Normalized log-weights of ``y(r) e^{exponent(r)} / sum``: every MW step in this package.

    Log space keeps thousands of updates exact where multiplying probabilities would underflow
    (``e^{-alpha}`` per step); elements of weight zero (``-inf``) stay zero.
    """
    from scipy import special  # imported where needed: a tenth of a second at import

    tilted = log_weights + exponent
    return tilted - special.logsumexp(tilted)


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
    """One step of seed 004's multiplicative weights algorithm ``MW^C`` (§3).

    If the guess ``q(y)`` was **too low**, every ``y(r)`` is multiplied by ``e^{alpha q(r)}`` (by
    ``e^alpha`` where the predicate holds); if **too high**, by ``e^{alpha (1 - q(r))}`` (by
    ``e^alpha`` where it does not hold); then ``y`` is normalized. For a 0/1 predicate this is the
    seed's rule verbatim; for a ``[0, 1]``-valued row it is the standard generalization,
    ``y(r) ∝ y(r) e^{±alpha q(r)}`` (the factors ``e^{alpha (1 - q)}`` and ``e^{-alpha q}``
    differ by the constant ``e^alpha``, which normalization removes). Theorem 3 survives the
    generalization: its only use of ``P(r) ∈ {0, 1}`` is ``e^{alpha P} = 1 + (e^alpha - 1) P``,
    and for ``q ∈ [0, 1]`` convexity gives ``e^{alpha q} <= 1 + (e^alpha - 1) q``, the direction
    the proof needs.

    Computed in log space (see :func:`_tilt`), so it stays exact over thousands of updates.

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
        The step, ``alpha > 0``. Theorem 3's update count needs ``alpha <= 1.79``
        (:data:`MW_MAX_ALPHA`); the step itself is defined for every positive ``alpha``.

    Returns
    -------
    numpy.ndarray, shape (m,)
        The updated, normalized distribution ``y'``.
    """
    log_y = _log_distribution(distribution)
    row = check_query_row("query_row", query_row, log_y.size)
    return np.exp(_mw_log_step(log_y, row, too_low, alpha))


def _mw_log_step(log_y: np.ndarray, row: np.ndarray, too_low: bool, alpha: float) -> np.ndarray:
    """The seed's step on log-weights: too low, ``y e^{alpha q}``; too high, ``y e^{alpha (1 - q)}``."""
    return _tilt(log_y, alpha * row if too_low else alpha * (1.0 - row))


@validate_params(universe_size=POSITIVE_INT, alpha=_MW_ALPHA)
def mw_update_bound(universe_size: int, alpha: float) -> int:
    """Seed 004, Theorem 3: ``MW^{E(x)}`` makes at most ``floor(ln|D| / alpha^2)`` updates.

    Valid for ``0 < alpha <= 1.79`` (:data:`MW_MAX_ALPHA`, Lemma 4) and any checker whose
    "too low"/"too high" verdicts are right and given only when ``|q(x) - q(y)| >= 2 alpha``
    (each update then lowers ``Div(x || y)`` by at least ``alpha^2``; it starts at most
    ``ln|D|`` and never goes below 0).
    """
    return math.floor(math.log(universe_size) / alpha**2)


# ------------------------------------------------------------------------------------------------
# Offline private multiplicative weights (MWEM)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundBudget:
    """The privacy spent in each round of :class:`OfflinePMW`.

    Attributes
    ----------
    selection : PureDP or ZCDP
        Guarantee of the round's exponential mechanism.
    selection_epsilon : float
        Its parameter ``epsilon_0``: query ``i`` is picked with probability proportional to
        ``exp(epsilon_0 s_i / (2 Delta))``, ``Delta = 1/n`` the sensitivity of the score.
    measurement : PureDP or ZCDP
        Guarantee of the round's noisy measurement (Laplace for PureDP, Gaussian for ZCDP).
    """

    selection: PureDP | ZCDP
    selection_epsilon: float
    measurement: PureDP | ZCDP


def _round_budget(privacy: PureDP | ZCDP, rounds: int) -> RoundBudget:
    """Split ``privacy`` evenly over ``rounds`` rounds of one selection and one measurement.

    PureDP(eps): ``eps / (2T)`` to each; basic composition sums the ``2T`` epsilons to ``eps``.
    ZCDP(rho): ``rho / (2T)`` to each; the exponential mechanism with parameter ``epsilon_0`` is
    ``epsilon_0``-bounded-range (Durfee & Rogers 2019), hence ``epsilon_0^2 / 8``-zCDP (Cesar &
    Rogers 2021), so ``epsilon_0 = sqrt(8 rho / (2T))``; zCDP composes additively (Bun & Steinke
    2016, Lemma 2.3) to ``rho``.
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

    Everything here is a function of the selections and noisy measurements only, hence as
    private as the release (post-processing).

    Attributes
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
    """

    release: Release
    distribution: np.ndarray
    selected: tuple[int, ...]
    measurements: np.ndarray


class OfflinePMW(_CountingMechanism):
    """MWEM (Hardt, Ligett & McSherry 2012): private multiplicative weights over a workload.

    Starting from the uniform distribution ``y_0`` over the universe, each of ``T`` rounds

    1. **selects** a badly answered query by the exponential mechanism: query ``i`` with
       probability proportional to ``exp(epsilon_0 s_i / (2 Delta))``, score
       ``s_i = |q_i(x) - q_i(y)|`` (fractions of the public size ``N``), ``Delta = 1/N`` its
       sensitivity;
    2. **measures** it: ``m = (c_i + noise) / N`` for the count ``c_i = N q_i(x)``, Laplace of
       scale ``b = 1/epsilon_m`` under PureDP, Gaussian of ``sigma = 1/sqrt(2 rho_m)`` under
       ZCDP (discrete when the rows are 0/1, so the counts are integers);
    3. **updates** ``y(r) ∝ y(r) exp(q_i(r) (m - q_i(y)) / 2)`` (MWEM's rule; with counts it
       reads ``exp(q(r)(m - q(A))/(2n))``), in log space.

    The released answers are those of the average of ``y_1, ..., y_T`` (MWEM's output);
    :meth:`run` also returns that distribution, the selections and the measurements.

    Privacy (the guarantee given, w.r.t. either neighbouring relation): every query row lies in
    ``[0, 1]`` (checked), so one row replaced, added or removed moves every count by at most 1
    and the score and the measured fraction by at most ``1/N`` for the public size ``N``
    (``n`` under replace-one; under add/remove a declared size, or an estimate from
    ``size_share`` of the budget, released first, on which the rounds then condition); ``y`` is
    public in each round. Each round is one exponential mechanism and one measurement with the
    budgets of :attr:`round_budget` (the budget left after the size estimate), composed over the
    ``T`` adaptive rounds:

    - ``PureDP(eps)``: ``eps/(2T)`` to each; the exponential mechanism is ``epsilon_0``-DP
      (McSherry & Talwar 2007), the Laplace measurement ``eps/(2T)``-DP; basic composition gives
      ``2T * eps/(2T) = eps``.
    - ``ZCDP(rho)``: ``rho/(2T)`` to each; the exponential mechanism with
      ``epsilon_0 = sqrt(8 rho/(2T))`` is ``epsilon_0``-bounded-range, hence
      ``epsilon_0^2/8 = rho/(2T)``-zCDP (Cesar & Rogers 2021); the Gaussian measurement with
      ``sigma = Delta/sqrt(2 rho/(2T))`` is ``rho/(2T)``-zCDP (Bun & Steinke 2016, Prop. 1.6);
      zCDP composes additively to ``rho``.

    :attr:`privacy_spent` recomposes the per-round guarantees and the size estimate's; it
    equals ``privacy``.

    Accuracy: :func:`offline_pmw_error_bound` (proved there, for ``updates_per_round=1``).

    Parameters
    ----------
    workload : Workload
        Rows with entries in ``[0, 1]``: an explicit matrix (checked), or the implicit
        :func:`~projmech.workloads.marginals` (0/1 by construction). Other implicit workloads are
        refused, since their rows cannot be checked.
    privacy : PureDP or ZCDP
    rounds : int
        ``T``, the number of select-measure-update rounds.
    neighbouring : {"replace-one", "add-remove"}
    updates_per_round : int
        ``1`` (default) is MWEM as analysed. ``u > 1`` also re-applies the update for every
        measurement so far ``u - 1`` times per round, the practical heuristic of Hardt, Ligett
        & McSherry's experiments: post-processing, so the same privacy, but
        :func:`offline_pmw_error_bound` no longer applies.
    max_universe : int
        Larger universes are refused (the mechanism holds dense vectors over it).
    size, size_share, noise
        As for :class:`~projmech.mechanisms.GaussianMechanism` (``noise="auto"``: discrete for
        0/1 rows).
    """

    mechanism_name = "offline_pmw"
    #: Checked by the constructor: MWEM's budget composes additively.
    privacy: PureDP | ZCDP

    @validate_params(privacy=_PRIVACY, rounds=POSITIVE_INT, updates_per_round=POSITIVE_INT,
                     max_universe=POSITIVE_INT, noise=Options(*NOISE_KINDS))
    def __init__(self, workload: Workload, privacy: PureDP | ZCDP, rounds: int, *,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 updates_per_round: int = 1, max_universe: int = MW_MAX_UNIVERSE,
                 size: int | str | None = None, size_share: float | None = None, noise: str = "auto") -> None:
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
        """The composition of the ``T`` rounds' :attr:`round_budget` and the size estimate's
        share (equals :attr:`privacy`)."""
        parts = [self.round_budget.selection, self.round_budget.measurement] * self.rounds
        if self.size_policy.estimated:
            parts.append(scale_budget(self.privacy, self.size_policy.share))
        return _compose(parts)

    def error_bound(self, n: int, failure_probability: float = 0.05) -> float:
        """:func:`offline_pmw_error_bound` for this mechanism's workload, budget and rounds."""
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

        Parameters are those of :meth:`run`; the returned :class:`Release` has
        ``answers == noisy_answers`` (MWEM measures only the ``T`` selected queries, so there
        are no per-query noisy answers), ``scale`` and ``sensitivity`` of one measurement.
        """
        return self.run(data_or_histogram, n=n, rng=rng).release

    @validate_params(rng=SEED)
    def run(self, data_or_histogram: Any, n: int | None = None, *,
            rng: np.random.Generator | int | None = None) -> PMWRun:
        """Run MWEM on a :class:`~projmech.data.Dataset` or a normalized histogram.

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            A histogram must be normalized and needs ``n``, with ``n h`` integer counts.
        n : int, optional
            The data's row count; taken from a Dataset (private under add/remove: never
            released, see :class:`~projmech.privacy.SizePolicy`).
        rng : numpy.random.Generator, int or None
            Source of the selections and of continuous noise (``None``: fresh OS entropy, never
            global state); discrete noise comes from OpenDP's own generator.

        Returns
        -------
        PMWRun
        """
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        generator = rng
        data, rows = self._rows(data_or_histogram, n)
        counts = self._counts(data)
        size = self._public_size(rows, generator)
        truth = counts / size
        # exp(epsilon_0 s / (2 Delta)) with Delta = 1/size.
        selection_factor = self.round_budget.selection_epsilon * size / 2.0
        m = self.workload.universe_size
        log_y = np.full(m, -math.log(m))
        y = np.exp(log_y)
        total = np.zeros(m)
        selected: list[int] = []
        measurements: list[float] = []
        selected_rows: list[np.ndarray] = []
        for _ in range(self.rounds):
            # The unchecked product: y is this loop's own distribution, not a caller's argument.
            scores = np.abs(truth - self.workload._matvec(y))
            # Gumbel-max: argmax(logits + Gumbel noise) is an exact draw from softmax(logits),
            # with no exponentials to overflow for large n.
            index = int(np.argmax(selection_factor * scores + generator.gumbel(size=scores.size)))
            measurement = float(counts[index] + self.noise.sample(1, generator)[0]) / size
            row = self._row(index)
            selected.append(index)
            measurements.append(measurement)
            selected_rows.append(row)
            log_y = _mwem_step(log_y, row, measurement)
            for _ in range(self.updates_per_round - 1):
                for past_row, past_measurement in zip(selected_rows, measurements):
                    log_y = _mwem_step(log_y, past_row, past_measurement)
            y = np.exp(log_y)
            total += y
        distribution = total / self.rounds
        answers = self.workload._matvec(distribution)
        release = self._release(answers, answers, size)
        return PMWRun(release, distribution, tuple(selected), np.array(measurements))

    def _row(self, index: int) -> np.ndarray:
        """Query ``index``'s row ``F[index, :]`` (``F.T e_i``, which implicit marginals offer too)."""
        unit = np.zeros(self.workload.num_queries)
        unit[index] = 1.0
        return self.workload._rmatvec(unit)

    def __repr__(self) -> str:
        return (f"OfflinePMW({self.workload!r}, {self.privacy}, rounds={self.rounds}, "
                f"{self._size_repr()}, {self.noise.name})")


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


def _compose(guarantees: list[PureDP | ZCDP]) -> PureDP | ZCDP:
    """Sequential composition: epsilons add (pure DP), rhos add (zCDP, Bun & Steinke 2016)."""
    pure = [g for g in guarantees if isinstance(g, PureDP)]
    if len(pure) == len(guarantees):
        return PureDP(math.fsum(g.epsilon for g in pure))
    concentrated = [g for g in guarantees if isinstance(g, ZCDP)]
    if len(concentrated) == len(guarantees):
        return ZCDP(math.fsum(g.rho for g in concentrated))
    raise TypeError("guarantees: cannot compose a mix of PureDP and ZCDP here")


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
      ``b ln(2 / ((1 + q) eta))`` with ``q = e^{-1/b}`` (the discrete Laplace's two-sided tail
      ``Pr[|X| >= t] = 2 q^t / (1 + q)``) and ``sigma sqrt(2 ln(2/eta))`` (the discrete Gaussian
      is ``sigma^2``-subgaussian, Canonne, Kamath & Steinke 2020), with ``b`` and ``sigma`` in
      counts and ``beta`` divided by ``n``.

    All in fractions of ``n``, the public size, and about the data's fractions when that size is
    the row count (replace-one, or a declared size equal to it): with another size the counts
    over the size are no distribution, and the potential argument below does not apply. Proof
    (the MWEM argument with explicit constants):

    1. *Selection.* ``Pr[s_selected <= max_i s_i - c] <= k exp(-epsilon_0 c / (2 Delta))``
       (every bad query has at most that weight relative to the best), ``= eta`` at
       ``c = delta`` with ``Delta = 1/n``. So in round ``t``, with ``d_t = q_t(x) - q_t(y_{t-1})``,
       ``err(y_{t-1}) := max_q |q(x) - q(y_{t-1})| <= |d_t| + delta``.
    2. *Measurement.* ``Pr[|N_t| > beta] = eta`` (exact Laplace/Gaussian tails).
    3. *Potential.* With ``Psi_t = Div(x || y_t)`` and step ``lambda = (d_t + N_t)/2``:
       ``Psi_{t-1} - Psi_t = lambda q_t(x) - ln E_{y_{t-1}} e^{lambda q_t}
       >= lambda d_t - lambda^2 / 8`` (Hoeffding's lemma for ``q_t ∈ [0, 1]``, any real
       ``lambda``) ``= (15 d^2 + 14 d N - N^2)/32 >= (d_t^2 - N_t^2)/4`` (the difference is
       ``7 (d + N)^2 / 32``). Summing, with ``Psi_0 <= ln|D|`` (seed 004, Fact 2) and
       ``Psi_T >= 0`` (Fact 1): ``sum d_t^2 <= 4 ln|D| + sum N_t^2``.
    4. *Average.* By Cauchy–Schwarz ``(1/T) sum |d_t| <= sqrt(4 ln|D|/T + beta^2)``, so
       ``(1/T) sum_{t=1..T} err(y_{t-1}) <= sqrt(4 ln|D|/T + beta^2) + delta``. The release
       averages ``y_1..y_T``, whose error is at most the mean of theirs, which differs from the
       mean over ``y_0..y_{T-1}`` by ``(err(y_T) - err(y_0))/T <= 1/T``.
    5. A union bound over the ``2T`` events of steps 1 and 2 gives ``1 - 2T eta = 1 - p``.

    Hardt, Ligett & McSherry's Theorem 2.2 is usually quoted as ``2n sqrt(log|D|/T) +
    10 T log|Q| / epsilon`` (counts) with probability ``1 - 2T/|Q|^c``. We could not check the
    paper's exact statement here; this function implements the bound proved above instead. For
    PureDP with ``eta = 1/k`` it reads ``<= 2 sqrt(ln|D|/T) + 10 T ln k/(epsilon n) + 1/T``
    (``delta + beta = (2T/(epsilon n))(4 ln k + ln k)`` and ``sqrt(a + b^2) <= sqrt(a) + b``),
    that form plus the ``1/T`` of averaging ``y_1..y_T``.

    Returns
    -------
    float
        The bound (it may exceed 1, the trivial bound for averaging queries).
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
        beta = scale * (math.log(2.0 / ((1.0 + math.exp(-1.0 / scale)) * eta)) if discrete else math.log(1.0 / eta))
    elif discrete:
        beta = scale * math.sqrt(2.0 * math.log(2.0 / eta))
    else:
        beta = scale * math.sqrt(2.0) * float(special.erfcinv(eta))
    beta /= n
    return math.sqrt(4.0 * math.log(universe_size) / rounds + beta**2) + delta + 1.0 / rounds


@validate_params(alpha=POSITIVE, universe_size=POSITIVE_INT, num_queries=POSITIVE_INT, rounds=POSITIVE_INT,
                 privacy=_PRIVACY, failure_probability=OPEN_UNIT)
def offline_pmw_min_n(alpha: float, universe_size: int, num_queries: int, rounds: int,
                      privacy: PureDP | ZCDP, *, failure_probability: float = 0.05) -> int:
    """The smallest ``n`` for which :func:`offline_pmw_error_bound` is at most ``alpha``.

    The bound decreases in ``n`` (its noise terms are proportional to ``1/n``) towards
    ``2 sqrt(ln|D|/T) + 1/T``, which no data size beats; a target at or below it raises
    ``ValueError`` (more rounds lower it).
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

    from .bounds import min_n

    return min_n(bound, alpha)
