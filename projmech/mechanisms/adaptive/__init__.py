"""Select, measure, project: an adaptive mechanism for marginal workloads.

:class:`AdaptiveProjectionMechanism` releases a workload of marginal tables by rounds, in the
select–measure–generate family of MWEM :cite:p:`HLM12` and AIM :cite:p:`MMSM22`. Each round

1. **selects** the candidate table whose current estimate looks worst for the noise a
   measurement would add, by the exponential mechanism (:mod:`projmech.mechanisms.selection`);
2. **measures** it with Gaussian noise (discrete on the counts by default);
3. **projects** every measurement so far onto the local polytope of the measured tables
   (:func:`~projmech.bodies.project_to_local`, weighted by each measurement's precision): the
   estimate the next round scores against. A candidate no measured table contains is estimated
   by the maximum-entropy table agreeing with the estimate on its measured sub-tables
   (iterative proportional fitting on the candidate's own cells).

The released answers come from the final estimate, one of three:

- ``estimator="regularized"`` (the default where the measured tables hold at most
  :data:`JOINT_AUTO_MAX_MEASURED` cells and either the universe of the attributes read at most
  :data:`JOINT_AUTO_MAX_CELLS` or a junction tree of the measured tables at most
  :data:`TREE_AUTO_MAX_CELLS`): one distribution fitted to the measurements
  (:func:`estimate_regularized_joint`), by entropic mirror descent from the uniform
  distribution stopped where Stein's unbiased estimate of its error on the measured tables is
  least (:func:`~projmech.tables.fit_noisy_marginals`), over the universe or held by the
  junction tree (:class:`~projmech.tables.JunctionTree`). Every workload table is read from it:
  an unmeasured table carries the dependence its measured neighbours imply along chains of
  them, as AIM's graphical model does, and the measured ones are not fitted to their noise.
- ``estimator="joint"``: the measurements projected onto the marginal polytope itself
  (:func:`~projmech.bodies.project_to_hull`, certified), then the maximum-entropy distribution
  with the projection's measured tables (:func:`estimate_joint`); small universes only.
- ``estimator="tables"`` (the default beyond those sizes): the local projection's tables, an
  unmeasured table fitted to its measured parts as in the rounds but starting from the
  decomposable model of an acyclic set of the projected tables, which carries the dependence
  that chains of measured tables imply (the rounds start from the uniform table).

On Adult's 7 attributes (all 3-way tables, 5 seeds, AIM's error metric) the tables estimate
gives 0.0733, 0.0220 and 0.0051 at epsilon 0.1, 1 and 10, the certified joint 0.0727, 0.0217
and 0.0048, the regularized joint 0.0718, 0.0191 and 0.0040 (``benchmarks/README.md``), in 1.5,
4.7 and 26 s (mean); AIM's reference implementation, run beside it, took 90 s at epsilon 0.1 and
277 s at 10. On 10 of Adult's attributes (1.5 10^10 cells) the regularized joint on the
junction tree gave 0.0827 at epsilon 1 (5 seeds; the tables 0.0947) in 104 s, where AIM's model
gave 0.0894 (seeds 0-1) in 1,870-2,118 s; at epsilon 10, where that tree is too large, the
tables gave 0.0428 in 20 s.

Measurements are data (:class:`Measurement`) and the estimator is separate
(:func:`estimate_tables`, :func:`table_estimate`): every estimate is a function of the
published measurements alone, which the tests recompute.

**Privacy**: zCDP, composed exactly over the rounds (:attr:`AdaptiveRun.rounds` lists each
round's selection and measurement cost; they sum to at most the budget, the last round taking
exactly what is left). Under ``ApproxDP(epsilon, delta)`` the budget is the largest ``rho``
whose zCDP guarantee converts to it (:func:`~projmech.privacy.guarantees.zcdp_for_approx_dp`).
A table of counts has l2 sensitivity 1 under add/remove and ``sqrt(2)`` under replace-one; a
score, an l1 error of counts, moves by 1 or 2 times the candidate's weight.

The schedule follows AIM's published design: ``16 d`` notional rounds set the first noise (nine
tenths of a round's budget to the measurement, one tenth to the selection), all one-way tables
are measured first, candidates are bounded in cells by the share of the budget spent, and the
noise halves when a measurement no longer moves the estimate by more than its own expected
noise.
"""

from __future__ import annotations

import itertools
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...bodies.hull import ProjectionError
from ...bodies.local import LocalResult
from ...data.dataset import Dataset
from ...errors import ArgumentValueError
from ...privacy.guarantees import ZCDP, ApproxDP, Neighbouring, Privacy, zcdp_for_approx_dp
from ...privacy.noise import NOISE_KINDS, Noise, calibrate, choose_discrete, public_size
from ...solve import Status
from ...synthetic.rounding import check_rows_fit, synthetic_data
from ...tables.junction_tree import JunctionTree, TreeTooLargeError
from ...tables.maximum_entropy import (
    MAXIMUM_ENTROPY_MAX_CELLS,
    MaximumEntropyResult,
)
from ...tables.noisy_marginals import NoisyMarginalsResult
from ...validation import (
    OPEN_UNIT,
    POSITIVE_INT,
    SEED,
    InstanceOf,
    IsCallable,
    Options,
    OrNone,
    check_positions,
    validate_params,
)
from ...workloads import Workload, marginals
from ...workloads.marginal_tables import table_terms
from ..additive import CountingMechanism, Release
from ..budget import _caller_level, budget_message
from ..intervals import ConfidenceIntervals
from ..selection import exponential_mechanism, exponential_mechanism_rho
from .estimation import (
    DecomposableModel,
    JointEstimate,
    Measurement,
    _on_own_axes,
    estimate_joint,
    estimate_regularized_joint,
    estimate_tables,
    measured_workload,
    table_estimate,
)

__all__ = ["AdaptiveProjectionMechanism", "AdaptiveRound", "AdaptiveRun", "DecomposableModel", "JointEstimate",
           "Measurement", "Synthesis",
           "estimate_joint", "estimate_regularized_joint", "estimate_tables", "measured_workload", "synthesize",
           "table_estimate",
           "ADAPTIVE_MAX_CELLS", "ESTIMATORS", "JOINT_AUTO_MAX_CELLS", "JOINT_AUTO_MAX_MEASURED", "TREE_AUTO_MAX_CELLS",
           "JointEstimateWarning"]

#: Default bound on the cells of the measured tables together (and of any one candidate): the
#: local polytope holds about 400 bytes a cell at its peak, so 10^6 cells is about 400 MB.
ADAPTIVE_MAX_CELLS = 10**6

#: Share of a round's budget spent on the measurement (the rest selects), as in AIM.
_MEASUREMENT_SHARE = 0.9

#: Notional rounds per attribute that set the first round's noise by default, as in AIM.
_ROUNDS_PER_ATTRIBUTE = 16


#: The final estimators: one distribution over the universe (fitted to the measurements and
#: stopped early, or the certified projection's maximum-entropy fit), or the measured tables
#: completed.
ESTIMATORS = ("auto", "regularized", "joint", "tables")

#: The largest universe on which ``estimator="auto"`` takes the regularized joint. Its cost
#: grows with the cells times the iterations, which grow with the measurements' precision:
#: 0.6-30 s on the 121k cells of Adult's 7 attributes at epsilon 0.1-10; the certified joint took 563 s
#: and 2.2 GB on a 4 M-cell universe of 2-way tables (a review's measurement; the local
#: estimate there took 2.4 s).
JOINT_AUTO_MAX_CELLS = 250_000

#: The most measured cells for which ``estimator="auto"`` takes the regularized joint: many
#: measured cells come with precise measurements, whose path is long and on which the tables
#: estimate is as good. Adult's 7 attributes at epsilon 10 measure about 8,300 cells (the
#: run with the regularized joint 27-38 s, 22 % below the tables' error). On 6 attributes of 7-8 values (a
#: chain, all 3-way tables, 229k cells), at rho = 1 and n = 10^5 the run measured 12,702 cells
#: and the regularized joint took 11 s for 0.0072 against the tables' 2.6 s for 0.0086; at
#: rho = 10 and n = 2 10^5 it measured 17,959 cells and took 100 s (10,992 iterations) for the
#: tables' error (0.0014, 7 s).
JOINT_AUTO_MAX_MEASURED = 15_000

#: The largest junction tree of the measured tables (its cliques' cells together) on which
#: ``estimator="auto"`` takes the regularized joint beyond :data:`JOINT_AUTO_MAX_CELLS`. On 10 of
#: Adult's attributes (1.5 10^10 cells) the measurements at epsilon 1 made a tree of 493k cells
#: (seed 0), fitted in 65-187 s (550-779 iterations, 5 seeds) to 0.0827 against the tables'
#: 0.0947 (0.0991 completed from uniform); at epsilon 10 they made one of 334 M cells, which no
#: fit holds (``benchmarks/README.md``).
TREE_AUTO_MAX_CELLS = 10**6


class JointEstimateWarning(UserWarning):
    """The adaptive mechanism's joint estimate stopped short of its stopping rule or certificate.

    :class:`AdaptiveProjectionMechanism` warns with it when the regularized joint's path
    reached its iteration limit with its estimated risk still falling, when the projection onto
    the marginal polytope or the maximum-entropy fit ended above its tolerance (their statistics
    are in :attr:`AdaptiveRun.joint` and in the release's summary, ``estimate``), or when the
    projection found no point at all and the answers were read from the local projection's
    tables instead.

    Examples
    --------
    Turned into an error, it stops a run whose joint estimate is not certified:

    >>> import warnings
    >>> from projmech.mechanisms.adaptive import JointEstimateWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", JointEstimateWarning)
    ...     issubclass(JointEstimateWarning, UserWarning)
    True
    """


_PRIVACY = InstanceOf(ZCDP, ApproxDP, what="ZCDP or ApproxDP (Gaussian measurements)")

#: A run's progress callback: ``progress(number, latest, spent)`` after every round.
Progress = Callable[[int, "AdaptiveRound", float], None]


@dataclass(frozen=True)
class AdaptiveRound:
    """What one round spent.

    Parameters
    ----------
    attributes : tuple of int
        The table it measured.
    selection_rho : float
        The zCDP cost of its selection (0 for the first rounds, which measure the one-way tables
        without selecting).
    measurement_rho : float
        The zCDP cost of its measurement.
    sigma : float
        The noise's standard deviation on the counts.
    annealed : bool
        Whether the noise halved after it.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 3])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(300, 2)), domain)
    >>> run = pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), noise="continuous").run(data, rng=0)
    >>> first = run.rounds[0]
    >>> first.attributes, first.selection_rho
    ((0,), 0.0)
    """

    attributes: tuple[int, ...]
    selection_rho: float
    measurement_rho: float
    sigma: float
    annealed: bool


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    """One run of :class:`AdaptiveProjectionMechanism`.

    Parameters
    ----------
    release : Release
        The workload's answers: the final estimate's tables (``answers == noisy_answers``: the
        workload is never measured as a whole).
    rounds : tuple of AdaptiveRound
        Every round, in order.
    measurements : tuple of Measurement
        Every noisy table, in order (one per round).
    estimate : LocalResult
        The projection of all measurements onto the local polytope of the measured tables (the
        last round's estimate).
    privacy_spent : ZCDP
        The rounds' costs composed (and the size estimate's, if any).
    joint : JointEstimate or None
        With the regularized or the joint estimator, the distribution the answers are read from.
    decomposable : DecomposableModel or None
        With the tables estimate, the model its completions start from (built from ``estimate``
        when not given).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(500, 3)), domain)
    >>> run = pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), noise="continuous").run(data, rng=0)
    >>> len(run.rounds) == len(run.measurements), run.joint is not None
    (True, True)
    >>> run.table((0, 1)).shape
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
        """The released estimate of a table.

        Parameters
        ----------
        attributes : tuple of int
            Increasing domain positions.

        Returns
        -------
        numpy.ndarray
            The joint's table, or :func:`table_estimate` of the local projection's (with
            ``estimator="tables"``; one that no measured table contains started from the
            decomposable model of an acyclic set of them), of shape ``[sizes[a] for a in
            attributes]``.
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
        """What :func:`~projmech.synthetic.synthetic_data` draws this run's rows from: the joint
        estimate where it covers every attribute of the domain (its cells rounded to counts, or,
        held by a junction tree, drawn along it), else the local projection of the measured
        tables (drawn along a spanning tree of them); then a local search towards the tables.

        Returns
        -------
        estimate : LocalResult, MaximumEntropyResult or NoisyMarginalsResult
            The joint's distribution, or the local projection.
        drawing : Workload
            The workload to draw and check the rows with: the run's, or for the local projection
            the measured tables (:func:`measured_workload`).
        answered : Workload
            The run's workload.

        Examples
        --------
        >>> import numpy as np, projmech as pm
        >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
        >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(500, 3)), domain)
        >>> mechanism = pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), noise="continuous")
        >>> estimate, drawing, answered = mechanism.run(data, rng=0).row_source()
        >>> type(estimate).__name__, drawing is answered is mechanism.workload
        ('NoisyMarginalsResult', True)
        """
        workload = self.release.workload
        assert workload is not None and workload.domain is not None  # the mechanism's own workload
        sizes = tuple(workload.domain.sizes)
        if self.joint is not None and len(self.joint.attributes) == len(sizes):
            return self.joint.fit, workload, workload
        measured, _ = measured_workload(sizes, self.measurements)
        return self.estimate, measured, workload

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """Simultaneous confidence intervals for the workload's true answers (the true counts
        over the release's size), from the noisy measurements alone.

        Each round's noise is fresh given what came before, so its cells leave their
        half-widths with a probability set in advance: round ``r`` gets ``(1 - level) 6 /
        (pi^2 r^2)`` (these sum to ``1 - level`` however many rounds run), split evenly over its
        cells (Bonferroni). With probability at least ``level`` every measured cell is within its
        half-width at once; then a query's table, summed from any measured table containing it,
        lies within the sum of the half-widths (the tightest such interval is kept), and a cell
        of a table no measurement contains is at most the cell of its largest measured part (a
        marginal of it) and at least 0. Discrete noise: half-widths from its quantiles (half a
        count more, as :meth:`Release.confidence_intervals` does). The released answers, a
        projection, need not lie inside: these intervals are about the truth.

        Parameters
        ----------
        level : float, default 0.95
            The simultaneous coverage, in ``(0, 1)``.

        Returns
        -------
        ConfidenceIntervals
            One interval per query of the workload, ``simultaneous=True``, ``exact=False``.

        Raises
        ------
        TypeError, ValueError
            If ``level`` is not a number in ``(0, 1)``.
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
    """Bounds on every cell of the true table on ``attributes`` (fractions of the size), given
    that every measured cell is within its half-width (see :meth:`AdaptiveRun.confidence_intervals`)."""
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


class AdaptiveProjectionMechanism(CountingMechanism):
    """Select, measure, project: release a marginal workload by adaptive rounds (see the module).

    Parameters
    ----------
    workload : Workload
        A workload of marginal tables (:func:`~projmech.workloads.marginals`, or a stack of
        Kronecker products of identities and totals), over a domain.
    privacy : ZCDP or ApproxDP
        The whole budget.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_cells : int, default ADAPTIVE_MAX_CELLS
        The most cells the distinct measured tables may hold together: a candidate fits when
        they hold, with it, at most the share of ``max_cells`` that the budget spent by the end
        of its round allows (AIM's rule); one inside a measured table always fits; a table that
        never fits is estimated from its measured parts. Candidates are
        weighted by the attributes they share with the workload's tables, whatever the tables'
        own weights.
    size : int or "estimate", optional
        Under add/remove, as for :class:`~projmech.mechanisms.additive.GaussianMechanism`.
    size_share : float, optional
        With ``size="estimate"``, the share of the budget spent on the size.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"`` and ``"discrete"``: the discrete Gaussian on the counts; ``"continuous"``:
        numpy's Gaussian (reproducible from ``rng``).
    rounds : int, optional
        The notional rounds over which the first rounds' noise splits the budget (AIM's
        ``rounds``): 16 per attribute the workload reads by default. Fewer rounds measure less
        noisily and adapt less; at least ``0.9 d + 1`` for ``d`` attributes (the one-way tables
        come first, nine tenths of a round each).
    estimator : {"auto", "regularized", "joint", "tables"}, default "auto"
        The final estimate the answers are read from: ``"regularized"``, one distribution
        fitted to the measurements and stopped early (:func:`estimate_regularized_joint`; its
        perturbation drawn from ``rng`` after the rounds), over the universe of the attributes
        read where it holds at most :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells,
        else held by a junction tree of the measured tables (one too large to hold falls back to
        the tables, with a :class:`JointEstimateWarning`); ``"joint"``, the maximum-entropy
        distribution with the certified projection's tables (:func:`estimate_joint`; at most
        :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells); ``"tables"``, the local
        projection's tables, an unmeasured table fitted to its measured parts
        (:func:`table_estimate`) from the decomposable model of an acyclic set of the projected
        tables; ``"auto"``, the regularized joint where the measured tables,
        at the end of the run, hold at most :data:`JOINT_AUTO_MAX_MEASURED` cells and either the
        universe holds at most :data:`JOINT_AUTO_MAX_CELLS` cells (dense) or the measured
        tables' junction tree at most :data:`TREE_AUTO_MAX_CELLS` (functions of the published
        measurements' shapes; the release's summary says which was used), else the tables. A
        joint estimate that stops short of its rule or tolerances is still used, with a
        :class:`JointEstimateWarning`.

    Raises
    ------
    TypeError
        If ``privacy`` is not ZCDP or ApproxDP.
    ValueError
        If the workload is not made of marginal tables, or every attribute it reads has a
        single value, or none of its tables fits in ``max_cells`` beside the one-way tables, or
        the budget is too small for the discrete sampler, or ``rounds`` is below ``0.9 d + 1``, or
        ``estimator="joint"`` on a universe above :data:`~projmech.tables.MAXIMUM_ENTROPY_MAX_CELLS` cells.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    >>> rng = np.random.default_rng(0)
    >>> data = pm.Dataset(rng.integers(0, 2, size=(500, 3)), domain)
    >>> mechanism = pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), noise="continuous")
    >>> run = mechanism.run(data, rng=0)
    >>> bool(run.privacy_spent.rho <= 1.0), run.release.answers.shape
    (True, (16,))
    """

    mechanism_name = "adaptive_projection"
    _needs_matrix = False
    privacy: ZCDP | ApproxDP

    @validate_params(privacy=_PRIVACY, max_cells=POSITIVE_INT, noise=Options(*NOISE_KINDS),
                     rounds=OrNone(POSITIVE_INT), estimator=Options(*ESTIMATORS))
    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, *,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE, max_cells: int = ADAPTIVE_MAX_CELLS,
                 size: int | str | None = None, size_share: float | None = None, noise: str = "auto",
                 rounds: int | None = None, estimator: str = "auto") -> None:
        super().__init__(workload, privacy, neighbouring, size, size_share)
        terms = table_terms(workload)
        if terms is None or not terms.is_marginal or workload.domain is None:
            raise ArgumentValueError("workload", f"{workload.name} is not a workload of marginal tables over a domain "
                                     "(build one with pm.marginals(domain, way))")
        self.sizes = tuple(int(s) for s in terms.sizes)
        tables = sorted({subset for subset in terms.subsets if subset}, key=lambda s: (len(s), s))
        if not tables:
            raise ArgumentValueError("workload", "it reads no attribute (only totals): nothing to measure")
        if all(self.sizes[a] == 1 for table in tables for a in table):
            # Every table it reads has one cell, the total: nothing a measurement could tell.
            raise ArgumentValueError("workload", "every attribute it reads has a single value, so each of its "
                                     "tables is the total alone: nothing to measure")
        # A table that can never fit beside the one-way tables is never measured (its estimate
        # comes from its measured parts, as AIM's model gives it); a workload none of whose
        # tables fits would be released from one-way tables alone: refused.
        smallest = min(tables, key=lambda t: math.prod(self.sizes[a] for a in t))
        cells = math.prod(self.sizes[a] for a in smallest)
        one_way = sum(self.sizes[a] for a in {a for table in tables for a in table})
        if len(smallest) > 1 and cells + one_way > max_cells:
            raise ArgumentValueError("max_cells", f"the workload's smallest table, on attributes {list(smallest)}, "
                                     f"holds {cells:,} cells, which with the {one_way:,} cells of the one-way tables "
                                     f"measured first is above max_cells={max_cells:,}: no table of the workload could "
                                     "ever be measured", valid=f"at least {cells + one_way:,}")
        self.tables = tuple(tables)
        self.max_cells = max_cells
        self.candidates, self.weights = _candidates(self.tables)
        self.discrete = choose_discrete(noise, True)
        self.rho = privacy.rho if isinstance(privacy, ZCDP) else zcdp_for_approx_dp(privacy)
        # The size estimate, if any, takes its share of the budget; the rounds get the rest.
        self.rounds_rho = self.rho * self.size_policy.main_share()
        self.size_noise = calibrate(ZCDP(self.rho), 1.0, self.size_policy, self.discrete)[1]
        # l2 sensitivity of a table of counts, l1 of its counts (what a score reads).
        replace = self.size_policy.neighbouring is Neighbouring.REPLACE_ONE
        self.table_sensitivity = math.sqrt(2.0) if replace else 1.0
        self.score_sensitivity = 2.0 if replace else 1.0
        _check_weighable(self.rho, self.size_policy.main_share(), self.table_sensitivity)
        self.attributes = tuple(sorted({a for table in self.tables for a in table}))
        # The one-way tables take nine tenths of a round each before any selection, and the
        # round after them at least a full round's share, so that no round's noise is above the
        # first rounds' (stated, and checked against the sampler below): 0.9 d + 1 rounds at least
        # (a review found rounds = d drawing the last round's noise 1.6 times the stated one).
        least = math.ceil((9 * len(self.attributes) + 10) / 10)
        if rounds is not None and rounds < least:
            raise ArgumentValueError("rounds", f"must be at least {least} for the {len(self.attributes)} attributes "
                                     "the workload reads (their one-way tables come first, nine tenths of a round "
                                     f"each, and at least one round after them), got {rounds}",
                                     valid=f"at least {least}")
        self.notional_rounds = _ROUNDS_PER_ATTRIBUTE * len(self.attributes) if rounds is None else rounds
        # The first rounds' noise, public: what the release states (later rounds' are listed).
        # The largest any round draws (the noise only halves, and the last round takes at least
        # a quarter of a round's budget): refused here if its sampler cannot draw it as stated.
        first = _schedule(self.table_sensitivity, self.notional_rounds, self.rounds_rho)[0]
        try:
            self.noise = Noise("gaussian", first, self.discrete)
        except ValueError as error:
            raise ArgumentValueError("privacy", f"the budget is too small for the first rounds' noise ({error})",
                                     part="rho" if isinstance(privacy, ZCDP) else "epsilon",
                                     alternatives=[("noise", "continuous")], remedies=["a larger budget"]) from None
        self._sensitivity = self.table_sensitivity
        self._universe = math.prod(self.sizes[a] for a in self.attributes)
        if estimator == "joint" and self._universe > MAXIMUM_ENTROPY_MAX_CELLS:
            raise ArgumentValueError("estimator", f"'joint' projects onto the marginal polytope over the "
                                     f"{self._universe:,} cells of the attributes the workload reads, above "
                                     f"MAXIMUM_ENTROPY_MAX_CELLS={MAXIMUM_ENTROPY_MAX_CELLS:,}; use 'regularized', "
                                     "'tables' or 'auto'")
        #: The estimator asked for: ``"regularized"``, ``"joint"``, ``"tables"`` or ``"auto"``
        #: (each run then decides by the tables it measured, public).
        self.estimator = estimator

    @property
    def privacy_spent(self) -> ZCDP:
        """The budget this mechanism spends by design (a run's :attr:`AdaptiveRun.privacy_spent`
        recomposes what it drew)."""
        return ZCDP(self.rho)

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Run the rounds and release the workload's answers (see :meth:`run`).

        Parameters
        ----------
        data_or_histogram : Dataset
            The data.
        n : int, optional
            Not taken with a Dataset.
        rng : numpy.random.Generator, int or None
            Source of the selections and of continuous noise.

        Returns
        -------
        Release
            The run's release.
        """
        return self.run(data_or_histogram, n=n, rng=rng).release

    @validate_params(rng=SEED, progress=OrNone(IsCallable()))
    def run(self, data_or_histogram: Any, n: int | None = None, *,
            rng: np.random.Generator | int | None = None, progress: Progress | None = None) -> AdaptiveRun:
        """Run the select–measure–project rounds on a :class:`~projmech.data.dataset.Dataset`.

        Parameters
        ----------
        data_or_histogram : Dataset
            The data (a histogram over the universe is refused: the tables are counted from
            the records).
        n : int, optional
            Not taken with a Dataset (its row count is its own).
        rng : numpy.random.Generator, int or None
            Source of the selections and of continuous noise.
        progress : callable, optional
            Called after every round as ``progress(number, latest, spent)``: the round's number
            (from 1), its :class:`AdaptiveRound`, and the share of the rounds' budget spent so
            far. It sees only what the run publishes.

        Returns
        -------
        AdaptiveRun
            The release, the rounds, the measurements and the final estimate.

        Warns
        -----
        BudgetWarning
            Before anything is spent, if the first rounds' noise is above the mean count of a
            cell of the typical 2-way table (:class:`~projmech.mechanisms.budget.BudgetWarning`,
            which names the least budget at which it is not); shown to the curator, not released.
        """
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        if not isinstance(data_or_histogram, Dataset):
            raise TypeError(f"data_or_histogram: expected a Dataset (the tables are counted from its records), got "
                            f"{type(data_or_histogram).__name__}")
        data, rows = self._rows(data_or_histogram, n)
        self.size_policy.check_delta(self.privacy, rows)
        self._check_budget(rows)
        size = public_size(self.size_policy, rows, self.size_noise, rng)
        counts = {table: np.asarray(data.table(list(table)), dtype=float) for table in self.candidates}
        run = _Rounds(self, counts, size, rng, progress)
        estimate = run.go()
        joint: JointEstimate | None
        fallback: str | None
        if self.estimator == "regularized" or (self.estimator == "auto" and self._auto_regularized(run.measurements)):
            joint, fallback = self._regularized(run.measurements, rng)
        elif self.estimator == "joint":
            joint, fallback = self._joint(run.measurements)
        else:
            joint, fallback = None, None
        decomposable = DecomposableModel(estimate, self.sizes) if joint is None else None
        answers = self._answers(estimate, joint, decomposable)
        summary: dict[str, Any] = {"requested": self.estimator, "estimator": "tables"}
        if joint is not None and joint.projection is None:
            assert isinstance(joint.fit, NoisyMarginalsResult)
            summary = {"requested": self.estimator, "estimator": "regularized", "fit": joint.fit.stats.summary(),
                       "risk": joint.fit.risk, "iterations_run": joint.fit.iterations_run,
                       "model": "dense" if joint.fit.tree is None else "junction_tree",
                       "cells": joint.fit.cells}
        elif joint is not None:
            assert joint.projection is not None
            summary = {"requested": self.estimator, "estimator": "joint",
                       "projection": joint.projection.stats.summary(), "fit": joint.fit.stats.summary()}
        if fallback is not None:
            summary["fallback"] = fallback
        # The release's projection is the one its answers come from: the local one for the
        # tables (the joint's solvers are in ``estimate``).
        release = self._release(answers, answers, size, projection=estimate if joint is None else None,
                                rounds=tuple(run.rounds), estimate=summary)
        spent = sum(r.selection_rho + r.measurement_rho for r in run.rounds)
        if self.size_policy.estimated:
            spent += self.rho * self.size_policy.share
        return AdaptiveRun(release, tuple(run.rounds), tuple(run.measurements), estimate, ZCDP(spent), joint,
                           decomposable)

    @validate_params(rng=SEED, progress=OrNone(IsCallable()))
    def synthesize(self, data: Dataset, rows: int | None = None, *, rng: np.random.Generator | int | None = None,
                   progress: Progress | None = None) -> Synthesis:
        """Run, then draw synthetic rows from the estimate (:func:`~projmech.synthetic.synthetic_data`):
        when the joint covers every attribute of the domain, its cells rounded to counts (or,
        held by a junction tree, drawn along it), else along a spanning tree of the measured
        tables; then a local search towards the tables.

        The rows are post-processing of the release: the same guarantee.

        Parameters
        ----------
        data : Dataset
            The private data.
        rows : int, optional
            How many rows; default the release's public size (with ``size="estimate"``, the
            private estimate of the row count, rounded).
        rng : numpy.random.Generator, int or None
            Source of the selections, of continuous noise and of the rows.
        progress : callable, optional
            As for :meth:`run`.

        Returns
        -------
        Synthesis
            The rows, the run, and the rows' distance to the released answers.
        """
        assert isinstance(rng, np.random.Generator)  # made one by validate_params(rng=SEED)
        if not isinstance(data, Dataset):
            raise TypeError(f"data: expected a Dataset, got {type(data).__name__}")
        # Before any budget is spent: the rows asked for, or the public size drawn by default (the
        # declared one under add/remove, the row count under replace-one).
        if rows is not None:
            rows = int(POSITIVE_INT.check("rows", rows))
            check_rows_fit(rows, data.domain, "rows")
        elif self.size_policy.declared is not None:
            check_rows_fit(self.size_policy.declared, data.domain, "size")
        run = self.run(data, rng=rng, progress=progress)
        count = rows if rows is not None else max(1, int(round(run.release.size)))
        drawn = synthetic_data(data.domain, run, count, rng).data  # as AdaptiveRun.row_source says
        difference = self.workload.answer_data(drawn) - run.release.answers
        return Synthesis(drawn, run, float(np.sqrt(np.mean(difference**2))), float(np.max(np.abs(difference))))

    def _budget_message(self, rows: int) -> str | None:
        """The :class:`~projmech.mechanisms.budget.BudgetWarning` when the first rounds' sigma is
        above the mean count of a cell in at least half of the 2-way tables of the attributes the
        workload's tables read together (of its one-way tables, if it has no larger one): after
        the one-way tables the rounds measure tables of two attributes or more, at that sigma
        until it anneals, and the smallest are those pairs."""
        def noise_at(privacy: Privacy) -> float:
            assert isinstance(privacy, (ZCDP, ApproxDP))  # the budget's own kind
            rho = privacy.rho if isinstance(privacy, ZCDP) else zcdp_for_approx_dp(privacy)
            return _schedule(self.table_sensitivity, self.notional_rounds, rho * self.size_policy.main_share())[0]

        pairs = {pair for table in self.tables for pair in itertools.combinations(table, 2)}
        shares = [1.0 / math.prod(self.sizes[a] for a in table) for table in sorted(pairs) or self.tables]
        return budget_message(self.privacy, self.noise.scale, noise_at, shares, self.size_policy, rows,
                              noise_name=f"the first rounds' noise on each measured count ({self.notional_rounds} "
                              "notional rounds)", tables_name="2-way tables of attributes the workload reads "
                              "together" if pairs else "one-way tables of the workload")

    def _joint(self, measurements: list[Measurement]) -> tuple[JointEstimate | None, str | None]:
        """The joint estimate, warning when one of its solvers stopped short of its tolerance;
        None (the tables estimate, with a warning) and the reason when the projection found no
        point at all."""
        try:
            joint = estimate_joint(self.sizes, measurements)
        except ProjectionError as error:
            reason = f"the joint estimate's projection failed ({error})"
            warnings.warn(f"{reason}; the answers are read from the local projection's tables instead "
                          "(estimator='tables')", JointEstimateWarning, stacklevel=_caller_level())
            return None, reason
        assert joint.projection is not None
        short = [f"its {name} stopped with status {stats.status.value}, gap {stats.gap:.3g} against its tolerance "
                 f"{stats.tolerance:.3g}" for name, stats in (("projection", joint.projection.stats),
                                                             ("fit", joint.fit.stats)) if not stats.tolerance_met]
        if short:
            warnings.warn(f"the joint estimate is not certified: {'; '.join(short)}. The answers are read from it "
                          "(run.joint and the release's summary say so); estimator='tables' reads the local "
                          "projection's tables instead", JointEstimateWarning, stacklevel=_caller_level())
        return joint, None

    def _auto_regularized(self, measurements: list[Measurement]) -> bool:
        """Whether ``estimator="auto"`` takes the regularized joint for these measurements (their
        shapes only: public): at most :data:`JOINT_AUTO_MAX_MEASURED` measured cells, and a
        universe of at most :data:`JOINT_AUTO_MAX_CELLS` cells or a junction tree of the measured
        tables of at most :data:`TREE_AUTO_MAX_CELLS`."""
        if sum(m.values.size for m in measurements) > JOINT_AUTO_MAX_MEASURED:
            return False
        if self._universe <= JOINT_AUTO_MAX_CELLS:
            return True
        # The tree the fit would build: over the measured attributes, renumbered.
        _, sizes, on_axes = _on_own_axes(self.sizes, measurements, dense=False)
        return JunctionTree(sizes, sorted({m.attributes for m in on_axes})).cells <= TREE_AUTO_MAX_CELLS

    def _regularized(self, measurements: list[Measurement], rng: np.random.Generator
                     ) -> tuple[JointEstimate | None, str | None]:
        """The regularized joint estimate, warning when its path reached the iteration limit
        with its estimated risk still falling; None (the tables estimate, with a warning) and the
        reason when the junction tree of the measured tables is too large to hold."""
        model = "dense" if self._universe <= (JOINT_AUTO_MAX_CELLS if self.estimator == "auto"
                                             else MAXIMUM_ENTROPY_MAX_CELLS) else "junction_tree"
        try:
            joint = estimate_regularized_joint(self.sizes, measurements, rng=rng, model=model)
        except TreeTooLargeError as error:
            reason = f"the regularized joint cannot be held ({error})"
            warnings.warn(f"{reason}; the answers are read from the local projection's tables instead "
                          "(estimator='tables')", JointEstimateWarning, stacklevel=_caller_level())
            return None, reason
        if joint.fit.stats.status is not Status.OPTIMAL:
            assert isinstance(joint.fit, NoisyMarginalsResult)
            warnings.warn(f"the regularized joint estimate stopped at its iteration limit "
                          f"({joint.fit.iterations_run:,}) with its estimated risk still falling: the answers are "
                          "read from its least-risk iterate (run.joint and the release's summary say so); "
                          "estimator='tables' reads the local projection's tables instead",
                          JointEstimateWarning, stacklevel=_caller_level())
        return joint, None

    def _answers(self, estimate: LocalResult, joint: JointEstimate | None,
                 decomposable: DecomposableModel | None) -> np.ndarray:
        """The workload's answers from the final estimate's tables, term by term."""
        terms = table_terms(self.workload)
        assert terms is not None
        parts = []
        for subset, weight in terms.terms:
            if not subset:
                table = np.ones(())
            elif joint is not None:
                table = joint.table(tuple(subset))
            else:
                assert decomposable is not None
                table = decomposable.complete(tuple(subset))
            parts.append(weight * np.ravel(table))
        return np.concatenate(parts)

    def _repr_extra(self) -> str:
        return f", max_cells={self.max_cells:,}, estimator={self.estimator!r}"


@dataclass
class _Rounds:
    """The state of one run: the budget left, the noise, the measurements and the estimate."""

    mechanism: AdaptiveProjectionMechanism
    counts: dict[tuple[int, ...], np.ndarray]
    size: float
    rng: np.random.Generator
    progress: Progress | None = None
    rounds: list[AdaptiveRound] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)

    def record(self, latest: AdaptiveRound, used: float) -> None:
        self.rounds.append(latest)
        if self.progress is not None:
            self.progress(len(self.rounds), latest, min(1.0, used / self.mechanism.rounds_rho))

    def measure(self, table: tuple[int, ...], sigma: float) -> None:
        noise = Noise("gaussian", sigma, self.mechanism.discrete)
        noisy = self.counts[table].ravel() + noise.sample(self.counts[table].size, self.rng)
        self.measurements.append(Measurement(table, noisy / self.size, sigma / self.size))

    def measurement_rho(self, sigma: float) -> float:
        return self.mechanism.table_sensitivity ** 2 / (2.0 * sigma**2)

    def go(self) -> LocalResult:
        mechanism = self.mechanism
        sizes, budget = mechanism.sizes, mechanism.rounds_rho
        sigma, epsilon = _schedule(mechanism.table_sensitivity, mechanism.notional_rounds, budget)
        used = 0.0
        # The one-way tables first, without selection: 0.9 d / notional_rounds of the budget.
        for a in mechanism.attributes:
            self.measure((a,), sigma)
            cost = self.measurement_rho(sigma)
            used += cost
            self.record(AdaptiveRound((a,), 0.0, cost, sigma, False), used)
        estimate = estimate_tables(sizes, self.measurements)
        final = False
        while not final and budget - used > 0.0:
            round_rho = self.measurement_rho(sigma) + exponential_mechanism_rho(epsilon)
            if budget - used < 2.0 * round_rho:  # the last round takes exactly what is left
                # A hair below what is left, so that rounding never spends more than the budget.
                sigma, epsilon = _schedule(mechanism.table_sensitivity, 1, (budget - used) * (1.0 - 1e-9))
                final = True
            # AIM's size rule: a candidate fits if the measured tables with it hold at most the
            # share of max_cells the budget spent by the end of this round allows; one inside a
            # table already measured always fits (it adds no cell). Re-measured tables count once.
            # A review found the earlier rule (the spend before the round, every re-measurement
            # counted, the smallest candidate as fallback) spending a whole budget on one 1-way table.
            measured = {m.attributes for m in self.measurements}
            measured_cells = sum(math.prod(sizes[a] for a in table) for table in measured)
            allowed = mechanism.max_cells * min(1.0, (used + round_rho if not final else budget) / budget)
            choices = [c for c in mechanism.candidates
                       if any(set(c) <= set(table) for table in measured)
                       or measured_cells + math.prod(sizes[a] for a in c) <= allowed]
            before = {c: table_estimate(estimate, c, sizes) for c in choices}
            scores = np.array([mechanism.weights[c] * (np.abs(self.counts[c] - self.size * before[c]).sum()
                                                       - math.sqrt(2.0 / math.pi) * sigma * before[c].size)
                               for c in choices])
            sensitivity = mechanism.score_sensitivity * max(mechanism.weights[c] for c in choices)
            chosen = choices[exponential_mechanism(scores, epsilon, sensitivity, self.rng)]
            self.measure(chosen, sigma)
            spent = self.measurement_rho(sigma) + exponential_mechanism_rho(epsilon)
            used += spent
            estimate = estimate_tables(sizes, self.measurements)
            # The noise halves when the new measurement moved the estimate of its table by less
            # than the noise it carries (AIM's annealing): a function of noisy quantities only.
            moved = self.size * np.abs(table_estimate(estimate, chosen, sizes) - before[chosen]).sum()
            anneal = bool(not final and moved <= math.sqrt(2.0 / math.pi) * sigma * before[chosen].size)
            self.record(AdaptiveRound(chosen, exponential_mechanism_rho(epsilon), self.measurement_rho(sigma), sigma,
                                      anneal), used)
            if anneal:
                sigma, epsilon = sigma / 2.0, epsilon * 2.0
        return estimate


#: The most rows whose counts float64 holds exactly (2^53): what bounds a measurement's counts,
#: whatever the data, in :func:`largest_rounds_rho`.
_EXACT_ROWS = 2.0**53


def largest_rounds_rho(sensitivity: float) -> float:
    """The largest budget of the rounds whose measurements, each weighted by its precision, stay
    within float64 for every data set of up to 2^53 rows (the most whose counts float64 holds
    exactly).

    A round measuring a table with noise ``sigma`` costs ``Delta^2 / (2 sigma^2)`` of the budget
    ``rho``, so ``sum 1 / sigma_i^2 <= 2 rho / Delta^2`` over the rounds. The projection weighs a
    table's noisy counts ``c + z`` by ``1 / sigma``; with ``sum c = n`` and ``|z| <= 40 sigma``, the
    squared norm of all of them is at most ``2 n^2 sum 1 / sigma_i^2 + 3200 cells <= 4 n^2 rho /
    Delta^2 + 3200 cells``. Kept below half of float64's largest number (the rest for the cells'
    term): ``rho <= Delta^2 max / (8 n^2)``, about 5e275 under replace-one.
    """
    return sensitivity**2 * sys.float_info.max / (8.0 * _EXACT_ROWS**2)


def _check_weighable(rho: float, share: float, sensitivity: float) -> None:
    """Refuse, naming ``privacy``, a ``rho`` whose rounds (``share`` of it) are beyond
    :func:`largest_rounds_rho`: their noise is so small that the projection's weighted measurements
    overflow (at ZCDP(1e308) they did, refused inside as a projection's ``y``). Only a ZCDP budget
    reaches it: an (epsilon, delta) one converts to a rho of at most about 1.3e154
    (:data:`~projmech.privacy.guarantees.LARGEST_CONVERTED_EPSILON`)."""
    largest = largest_rounds_rho(sensitivity) / share
    if rho > largest:
        valid = f"at most {largest:.3g}"
        raise ArgumentValueError("privacy", f"rho = {rho:g} is above {largest:.3g}, the largest whose rounds' "
                                 "noise keeps the measurements, weighted by their precision, within float64 for every "
                                 f"data set of up to 2^53 rows; rho must be {valid}", part="rho", valid=valid)


def _schedule(sensitivity: float, rounds: int, budget: float) -> tuple[float, float]:
    """A round's noise ``sigma`` on the counts and selection parameter ``epsilon`` when ``budget``
    is split over ``rounds`` rounds, nine tenths of each to the measurement: ``16 d`` notional
    rounds for the first, one for the last (which takes what is left)."""
    sigma = sensitivity * math.sqrt(rounds / (2.0 * _MEASUREMENT_SHARE * budget))
    return sigma, math.sqrt(8.0 * (1.0 - _MEASUREMENT_SHARE) * budget / rounds)


def _candidates(tables: tuple[tuple[int, ...], ...]
                ) -> tuple[tuple[tuple[int, ...], ...], dict[tuple[int, ...], float]]:
    """The workload's tables and all their non-empty sub-tables, each weighted by how many of the
    workload's attributes it shares with the workload's tables (AIM's weighting: a sub-table
    informs every table that contains part of it)."""
    closure = {subset for table in tables for size in range(1, len(table) + 1)
               for subset in itertools.combinations(table, size)}
    weights = {c: float(sum(len(set(c) & set(t)) for t in tables)) for c in closure}
    return tuple(sorted(closure, key=lambda s: (len(s), s))), weights


@dataclass(frozen=True, eq=False)
class Synthesis:
    """Synthetic rows from an adaptive release, as :func:`synthesize` returns them.

    Parameters
    ----------
    data : Dataset
        The rows, over the data's domain.
    run : AdaptiveRun
        The release they were drawn from (its rounds, measurements and estimate).
    rows_rmse, rows_max_error : float
        RMSE and largest absolute difference between the rows' own answers to the workload
        (fractions of their count) and the released answers.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 3])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(300, 2)), domain)
    >>> synthesis = pm.synthesize(data, pm.ZCDP(1.0), neighbouring="replace-one", noise="continuous", rng=0)
    >>> synthesis.data.n, synthesis.run.joint is not None
    (300, True)
    """

    data: Dataset
    run: AdaptiveRun
    rows_rmse: float
    rows_max_error: float


@validate_params(rng=SEED, progress=OrNone(IsCallable()))
def synthesize(data: Dataset, privacy: ZCDP | ApproxDP, workload: Workload | None = None, *,
               rows: int | None = None, neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
               size: int | str | None = "estimate", size_share: float | None = None, noise: str = "auto",
               rng: np.random.Generator | int | None = None, progress: Progress | None = None) -> Synthesis:
    """Synthetic rows in one call: the adaptive mechanism's release, then rows drawn from its
    estimate (:meth:`AdaptiveProjectionMechanism.synthesize`).

    The rows are post-processing of the release: the same guarantee, for the relation given.

    Parameters
    ----------
    data : Dataset
        The private data.
    privacy : ZCDP or ApproxDP
        The whole budget (no default: the budget is the curator's decision).
    workload : Workload, optional
        Marginal tables to release; default every 3-way table of the data's domain (AIM's
        benchmark workload), or every table of all the attributes if there are fewer than 3.
    rows : int, optional
        How many rows; default the release's public size (under add/remove with
        ``size="estimate"``, the private estimate of the row count, rounded).
    neighbouring : {"add-remove", "replace-one"}, default "add-remove"
        The relation of the guarantee (add/remove: the row count stays private).
    size : int or "estimate", default "estimate"
        Under add/remove, the declared public size or ``"estimate"``; ignored under replace-one.
    size_share : float, optional
        With ``size="estimate"``, the share of the budget spent on the size.
    noise : {"auto", "discrete", "continuous"}
        As for :class:`AdaptiveProjectionMechanism`.
    rng : numpy.random.Generator, int or None
        Source of the selections, of continuous noise and of the rows.
    progress : callable, optional
        Called after every round (see :meth:`AdaptiveProjectionMechanism.run`).

    Returns
    -------
    Synthesis
        The rows, the run, and the rows' distance to the released answers.

    Raises
    ------
    TypeError
        If ``data`` is not a Dataset or ``privacy`` not ZCDP or ApproxDP.
    ValueError
        If ``rows`` is not a positive int, or as :class:`AdaptiveProjectionMechanism` raises.

    Warns
    -----
    BudgetWarning
        Before anything is spent, if the budget leaves the typical 2-way table's counts below
        their noise (see :meth:`AdaptiveProjectionMechanism.run`).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(400, 3)), domain)
    >>> synthesis = pm.synthesize(data, pm.ZCDP(1.0), neighbouring="replace-one", noise="continuous", rng=0)
    >>> len(synthesis.data), synthesis.rows_max_error < 0.05
    (400, True)
    """
    if not isinstance(data, Dataset):
        raise TypeError(f"data: expected a Dataset, got {type(data).__name__}")
    if rows is not None:
        POSITIVE_INT.check("rows", rows)  # before the mechanism is built
    if workload is None:
        workload = marginals(data.domain, min(3, len(data.domain.sizes)), implicit=True)
    if Neighbouring.parse(neighbouring) is Neighbouring.REPLACE_ONE:
        size, size_share = None, None
    mechanism = AdaptiveProjectionMechanism(workload, privacy, neighbouring=neighbouring, size=size,
                                            size_share=size_share, noise=noise)
    return mechanism.synthesize(data, rows, rng=rng, progress=progress)
