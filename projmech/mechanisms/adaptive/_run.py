"""What an adaptive run publishes: its rounds, measurements, estimates and intervals."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...bodies import LocalResult
from ...data import Dataset
from ...privacy import ZCDP, Noise
from ...tables import MaximumEntropyResult, NoisyMarginalsResult
from ...validation import OPEN_UNIT, check_positions
from ...workloads import Workload, table_terms
from .._additive import Release
from .._release import ConfidenceIntervals
from ._estimation import DecomposableModel, JointEstimate, Measurement, measured_workload

#: A run's progress callback: ``progress(number, latest, spent)`` after every round.
Progress = Callable[[int, "AdaptiveRound", float], None]


@dataclass(frozen=True)
class AdaptiveRound:
    """What one round spent (published: the release's summary lists every round).

    Parameters
    ----------
    attributes : tuple of int
        The table it measured.
    selection_rho, measurement_rho : float
        The zCDP costs of its selection (0 for the one-way tables) and measurement.
    sigma : float
        The noise's standard deviation on the counts.
    annealed : bool
        Whether the noise halved after it.

    Examples
    --------
    >>> pm.mechanisms.adaptive.AdaptiveRound((0, 1), 0.01, 0.09, 3.3, False).measurement_rho
    0.09
    """

    attributes: tuple[int, ...]
    selection_rho: float
    measurement_rho: float
    sigma: float
    annealed: bool


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    """One run of :class:`AdaptiveProjectionMechanism`: its release, rounds and estimates.

    Parameters
    ----------
    release : Release
        The answers, read from the final estimate.
    rounds : tuple of AdaptiveRound
        Every round, in order.
    measurements : tuple of Measurement
        Every noisy table, one per round.
    estimate : LocalResult
        All measurements projected onto the local polytope of the measured tables.
    privacy_spent : ZCDP
        The rounds' costs composed (and the size estimate's, if any).
    joint : JointEstimate or None
        With the regularized or the joint estimator, the distribution the answers are read from.
    decomposable : DecomposableModel or None
        With the tables estimate, the model its completions start from.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(500, 3)), domain)
    >>> pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0)).run(data, rng=0).table((0, 1)).shape
    (2, 3)
    """

    release: Release
    rounds: tuple[AdaptiveRound, ...]
    measurements: tuple[Measurement, ...]
    estimate: LocalResult
    privacy_spent: ZCDP
    joint: JointEstimate | None = None
    decomposable: DecomposableModel | None = None

    def table(self, attributes: tuple[int, ...]) -> np.ndarray:
        """The released estimate of a table: the joint's, or the local projection's completed.

        Parameters
        ----------
        attributes : tuple of int
            The table's attributes, increasing positions of the workload's domain.

        Returns
        -------
        numpy.ndarray
        """
        workload = self.release.workload
        assert workload is not None and workload.domain is not None  # the mechanism's own workload
        attributes = check_positions("attributes", attributes, len(workload.domain.sizes), what="domain positions")
        if self.joint is not None:
            return self.joint.table(attributes)
        # A run built by hand may hold no model: it is a function of the estimate.
        model = self.decomposable or DecomposableModel(self.estimate, tuple(workload.domain.sizes))
        return model.complete(attributes)

    def row_source(self) -> tuple[LocalResult | MaximumEntropyResult | NoisyMarginalsResult, Workload, Workload]:
        """What :func:`~projmech.synthetic.synthetic_data` draws this run's rows from.

        Returns
        -------
        estimate : LocalResult, MaximumEntropyResult or NoisyMarginalsResult
            The joint's distribution where it covers every attribute, else the local projection.
        drawing, answered : Workload
            The workload to draw the rows with (the run's or :func:`measured_workload`), and the run's.
        """
        workload = self.release.workload
        assert workload is not None and workload.domain is not None  # the mechanism's own workload
        sizes = tuple(workload.domain.sizes)
        if self.joint is not None and len(self.joint.attributes) == len(sizes):
            return self.joint.fit, workload, workload
        measured, _ = measured_workload(sizes, self.measurements)
        return self.estimate, measured, workload

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """Simultaneous confidence intervals for the workload's true answers, from the measurements alone
        (the released answers need not lie inside: :doc:`/guide/adaptive`).

        Parameters
        ----------
        level : float
            The simultaneous coverage, in ``(0, 1)``.

        Returns
        -------
        ConfidenceIntervals
        """
        level = float(OPEN_UNIT.check("level", level))
        release = self.release
        assert release.workload is not None and release.noise is not None
        terms = table_terms(release.workload)
        assert terms is not None
        sizes = tuple(int(s) for s in terms.sizes)
        # Each measurement's noisy table and its cells' half-width, in fractions of the size.
        measured = []
        for number, (spent, measurement) in enumerate(zip(self.rounds, self.measurements), start=1):
            cells = measurement.values.size
            failure = (1.0 - level) * 6.0 / (math.pi**2 * number**2) / cells
            half = Noise("gaussian", spent.sigma, release.noise.discrete).half_width(1.0 - failure)
            half += 0.5 if release.noise.discrete else 0.0
            table = measurement.values.reshape([sizes[a] for a in measurement.attributes])
            measured.append((measurement.attributes, table, half / release.size))
        lower_parts, upper_parts = [], []
        for subset, weight in terms.terms:
            low, high = _table_interval(tuple(subset), sizes, measured, release.size_source == "public n")
            lower_parts.append(np.ravel(np.minimum(weight * low, weight * high)))
            upper_parts.append(np.ravel(np.maximum(weight * low, weight * high)))
        method = ("simultaneous: every measured cell within its half-width (round r at (1 - level) 6 / (pi^2 r^2), "
                  "Bonferroni over its cells), each query from the measured tables containing it or bounded by its "
                  "measured parts")
        return ConfidenceIntervals(np.concatenate(lower_parts), np.concatenate(upper_parts), level, method,
                                   exact=False, simultaneous=True)


def _table_interval(attributes: tuple[int, ...], sizes: tuple[int, ...],
                    measured: list[tuple[tuple[int, ...], np.ndarray, float]],
                    public_n: bool) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on every cell of the true table (fractions of the size), every measured cell within its half-width."""
    if not attributes and public_n:
        return np.ones(()), np.ones(())  # the total is the public n over itself
    shape = tuple(sizes[a] for a in attributes)
    lower = np.zeros(shape)
    # Under replace-one the size is the row count, so no cell exceeds 1; else no bound a priori.
    upper = np.full(shape, 1.0 if public_n else np.inf)
    for table_attributes, table, half in measured:
        part = tuple(a for a in attributes if a in table_attributes)
        axes = tuple(axis for axis, a in enumerate(table_attributes) if a not in part)
        summed = table.sum(axis=axes) if axes else table
        width = half * (table.size // max(summed.size, 1))
        # The part's cells, laid out along the table's axes (1 where the table has no part).
        shape_part = [sizes[a] if a in part else 1 for a in attributes]
        upper = np.minimum(upper, (summed + width).reshape(shape_part))
        if len(part) == len(attributes):
            lower = np.maximum(lower, (summed - width).reshape(shape_part))
    return lower, np.maximum(upper, lower)


@dataclass(frozen=True, eq=False)
class Synthesis:
    """Synthetic rows from an adaptive release, as :func:`synthesize` returns them.

    Parameters
    ----------
    data : Dataset
        The rows, over the data's domain.
    run : AdaptiveRun
        The release they were drawn from.
    rows_rmse, rows_max_error : float
        RMSE and largest absolute difference of the rows' answers from the released ones.

    Examples
    --------
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(300, 2)), pm.Domain(["a", "b"], [2, 3]))
    >>> pm.synthesize(data, pm.ZCDP(1.0), neighbouring="replace-one", noise="continuous", rng=0).data.n
    300
    """

    data: Dataset
    run: AdaptiveRun
    rows_rmse: float
    rows_max_error: float
