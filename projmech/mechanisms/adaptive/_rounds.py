"""The adaptive mechanism's rounds: the one-way tables, then select, measure, estimate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...bodies import LocalResult
from ...privacy import Noise
from .._selection import exponential_mechanism_rho
from ._estimation import Measurement, _Fits, _unchecked_estimates, estimate_tables, table_estimate
from ._run import AdaptiveRound, Progress
from ._schedule import Spending, measurement_rho, round_parameters, round_rho
from ._selection import cells, expected_noise, fitting, select

if TYPE_CHECKING:
    from ._mechanism import AdaptiveProjectionMechanism


@dataclass
class Rounds:
    """The state of one run: the budget spent, the measurements and the latest estimate."""

    mechanism: AdaptiveProjectionMechanism
    counts: dict[tuple[int, ...], np.ndarray]
    size: float
    rng: np.random.Generator
    progress: Progress | None = None
    rounds: list[AdaptiveRound] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    spending: Spending = field(default_factory=Spending)
    #: The estimate from every measurement so far (None before the first).
    latest: LocalResult | None = None

    def record(self, latest: AdaptiveRound) -> None:
        """Charge a round's costs, keep it and report it."""
        self.spending.charge(latest.measurement_rho, latest.selection_rho)
        self.rounds.append(latest)
        if self.progress is not None:
            self.progress(len(self.rounds), latest, min(1.0, self.spending.rho / self.mechanism.rounds_rho))

    def measure(self, table: tuple[int, ...], sigma: float) -> None:
        noise = Noise("gaussian", sigma, self.mechanism.discrete)
        noisy = self.counts[table].ravel() + noise.sample(self.counts[table].size, self.rng)
        self.measurements.append(Measurement(table, noisy / self.size, sigma / self.size))

    def estimate(self) -> LocalResult:
        """The estimate from every measurement so far, warm-started from the previous round's."""
        self.latest = estimate_tables(self.mechanism.sizes, self.measurements, start=self.latest)
        return self.latest

    def go(self) -> LocalResult:
        mechanism = self.mechanism
        sizes, budget, sensitivity = mechanism.sizes, mechanism.rounds_rho, mechanism.table_sensitivity
        sigma, epsilon = round_parameters(sensitivity, mechanism.rounds_for(self.size, budget), budget)
        # The one-way tables first, without selection: 0.9 d / T of the budget (T the run's notional rounds).
        for a in mechanism.attributes:
            self.measure((a,), sigma)
            self.record(AdaptiveRound((a,), 0.0, measurement_rho(sensitivity, sigma), sigma, False))
        estimate = self.estimate()
        # The candidates' fitting structure, kept across rounds (those over max_cells are never chosen).
        cells_of = {c: cells(c, sizes) for c in mechanism.candidates}
        fits = _Fits(sizes)
        fits.register(c for c, count in cells_of.items() if count <= mechanism.max_cells)
        final = False
        while not final and budget - self.spending.rho > 0.0:
            used = self.spending.rho
            cost = round_rho(sensitivity, sigma, epsilon)
            if budget - used < 2.0 * cost:  # the last round takes exactly what is left
                # A hair below what is left, so that rounding never spends more than the budget.
                sigma, epsilon = round_parameters(sensitivity, 1, (budget - used) * (1.0 - 1e-9))
                final = True
            # AIM's size rule, on the share of max_cells the budget spent by the end of this round
            # allows; re-measured tables count once.
            allowed = mechanism.max_cells * min(1.0, (used + cost if not final else budget) / budget)
            choices = fitting(cells_of, sizes, {m.attributes for m in self.measurements}, allowed)
            before = _unchecked_estimates(estimate, choices, sizes, fits)
            chosen = select(choices, mechanism.weights, self.counts, self.size, before, sigma, epsilon,
                            mechanism.score_sensitivity, self.rng)
            self.measure(chosen, sigma)
            estimate = self.estimate()
            # AIM's annealing: the noise halves when the new measurement moved the estimate of its
            # table by less than the noise it carries (a function of noisy quantities only).
            moved = self.size * np.abs(table_estimate(estimate, chosen, sizes) - before[chosen]).sum()
            anneal = bool(not final and moved <= expected_noise(sigma, before[chosen].size))
            self.record(AdaptiveRound(chosen, exponential_mechanism_rho(epsilon), measurement_rho(sensitivity, sigma),
                                      sigma, anneal))
            if anneal:
                sigma, epsilon = sigma / 2.0, epsilon * 2.0
        # The released estimate starts cold, so that the published measurements alone reproduce it.
        return estimate_tables(sizes, self.measurements)

