"""The adaptive mechanism: select, measure, project a marginal workload by rounds."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ...data import Dataset
from ...errors import ArgumentValueError
from ...privacy import (
    NOISE_KINDS,
    ZCDP,
    ApproxDP,
    Neighbouring,
    Noise,
    Privacy,
    calibrate,
    choose_discrete,
    public_size,
    zcdp_for_approx_dp,
)
from ...synthetic import check_rows_fit, synthetic_data
from ...validation import POSITIVE_INT, SEED, InstanceOf, IsCallable, Options, OrNone, validate_params
from ...workloads import Workload, table_terms
from .._additive import CountingMechanism, Release
from .._budget import BudgetWarning, budget_warning, size_read
from ._estimation import DecomposableModel, JointEstimate
from ._final import ESTIMATORS, check_estimator, final_joint, summary
from ._rounds import Rounds
from ._run import AdaptiveRun, Progress, Synthesis
from ._schedule import ROUNDS_PER_ATTRIBUTE, check_weighable, least_rounds, round_parameters, scheduled_rounds
from ._selection import candidates

#: Default bound on the cells of the measured tables together (and of any one candidate): the
#: local polytope holds about 400 bytes a cell at its peak, so 10^6 cells is about 400 MB.
ADAPTIVE_MAX_CELLS = 10**6

_PRIVACY = InstanceOf(ZCDP, ApproxDP, what="ZCDP or ApproxDP (Gaussian measurements)")


class AdaptiveProjectionMechanism(CountingMechanism):
    """Select, measure, project: release a marginal workload by adaptive rounds, as AIM :cite:p:`MMSM22` does.

    Its guarantee is the budget in zCDP, composed over the rounds, for the ``neighbouring`` relation;
    the data are private, the workload, domain and budget public (:doc:`/guide/adaptive`).

    Parameters
    ----------
    workload : Workload
        Marginal tables over a domain (:func:`~projmech.workloads.marginals`).
    privacy : ZCDP or ApproxDP
        The whole budget.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    max_cells : int
        The most cells the distinct measured tables may hold together (AIM's size rule).
    size, size_share
        Under add/remove, as for :class:`~projmech.mechanisms.GaussianMechanism`.
    noise : {"auto", "discrete", "continuous"}
        The discrete Gaussian on the counts (``"auto"``, ``"discrete"``) or numpy's (reproducible).
    rounds : int, optional
        The notional rounds setting the first noise (AIM's ``rounds``). Default 16 per attribute as
        AIM, or fewer where their first noise would be above the public size over 16 (few rows or a
        small budget), down to the fewest the one-way tables need.
    estimator : {"auto", "regularized", "joint", "tables"}
        The final estimate (:func:`estimate_regularized_joint`, :func:`estimate_joint`, :func:`table_estimate`).

    Examples
    --------
    >>> domain = pm.Domain(["a", "b", "c"], [2, 3, 2])
    >>> data = pm.Dataset(np.random.default_rng(0).integers(0, 2, size=(500, 3)), domain)
    >>> mechanism = pm.AdaptiveProjectionMechanism(pm.marginals(domain, 2), pm.ZCDP(1.0), noise="continuous")
    >>> mechanism.run(data, rng=0).release.answers.shape
    (16,)
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
        self.tables = _measurable_tables(terms.subsets, self.sizes, max_cells)
        self.max_cells = max_cells
        self.candidates, self.weights = candidates(self.tables)
        self.discrete = choose_discrete(noise, True)
        self.rho = privacy.rho if isinstance(privacy, ZCDP) else zcdp_for_approx_dp(privacy)
        # The size estimate, if any, takes its share of the budget; the rounds get the rest.
        self.rounds_rho = self.rho * self.size_policy.main_share()
        self.size_noise = calibrate(ZCDP(self.rho), 1.0, self.size_policy, self.discrete)[1]
        # l2 sensitivity of a table of counts, l1 of its counts (what a score reads).
        replace = self.size_policy.neighbouring is Neighbouring.REPLACE_ONE
        self.table_sensitivity = math.sqrt(2.0) if replace else 1.0
        self.score_sensitivity = 2.0 if replace else 1.0
        check_weighable(self.rho, self.size_policy.main_share(), self.table_sensitivity)
        self.attributes = tuple(sorted({a for table in self.tables for a in table}))
        # No round's noise above the first rounds' (stated, and checked against the sampler below).
        least = least_rounds(len(self.attributes))
        if rounds is not None and rounds < least:
            raise ArgumentValueError("rounds", f"must be at least {least} for the {len(self.attributes)} attributes "
                                     "the workload reads (their one-way tables come first, nine tenths of a round "
                                     f"each, and at least one round after them), got {rounds}",
                                     valid=f"at least {least}")
        self.notional_rounds = ROUNDS_PER_ATTRIBUTE * len(self.attributes) if rounds is None else rounds
        self.least_rounds, self.scheduled = least, rounds is None
        # The first rounds' noise at the notional rounds, public and the largest any round of any run
        # draws (a run may take fewer rounds, the noise only halves, and the last round takes at
        # least a quarter of a round's budget).
        first = round_parameters(self.table_sensitivity, self.notional_rounds, self.rounds_rho)[0]
        try:
            self.noise = Noise("gaussian", first, self.discrete)
        except ValueError as error:
            raise ArgumentValueError("privacy", f"the budget is too small for the first rounds' noise ({error})",
                                     part="rho" if isinstance(privacy, ZCDP) else "epsilon",
                                     alternatives=[("noise", "continuous")], remedies=["a larger budget"]) from None
        self._sensitivity = self.table_sensitivity
        self._universe = math.prod(self.sizes[a] for a in self.attributes)
        check_estimator(estimator, self._universe)
        #: The estimator asked for: ``"regularized"``, ``"joint"``, ``"tables"`` or ``"auto"``
        #: (each run then decides by the tables it measured, public).
        self.estimator = estimator

    @property
    def privacy_spent(self) -> ZCDP:
        """The budget this mechanism spends by design (a run's recomposes what it drew)."""
        return ZCDP(self.rho)

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Run the rounds and release the workload's answers.

        Parameters
        ----------
        data_or_histogram, n, rng
            As for :meth:`run`.

        Returns
        -------
        Release
        """
        return self.run(data_or_histogram, n=n, rng=rng).release

    @validate_params(rng=SEED, progress=OrNone(IsCallable()))
    def run(self, data_or_histogram: Any, n: int | None = None, *,
            rng: np.random.Generator | int | None = None, progress: Progress | None = None) -> AdaptiveRun:
        """Run the select–measure–project rounds on a :class:`~projmech.data.Dataset`.

        Parameters
        ----------
        data_or_histogram : Dataset
            The data (a histogram is refused).
        n : int, optional
            Not taken with a Dataset.
        rng : numpy.random.Generator, int or None
            Source of the selections and of continuous noise.
        progress : callable, optional
            ``progress(number, latest, spent)`` after every round: its :class:`AdaptiveRound`, the share spent.

        Returns
        -------
        AdaptiveRun
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
        rounds = Rounds(self, counts, size, rng, progress)
        estimate = rounds.go()
        joint, fallback = final_joint(self.estimator, self.sizes, self._universe, rounds.measurements, rng)
        decomposable = DecomposableModel(estimate, self.sizes) if joint is None else None
        answers = self._answers(joint, decomposable)
        # The release's projection is the one its answers come from: the local one for the
        # tables (the joint's solvers are in ``estimate``).
        release = self._release(answers, answers, size, projection=estimate if joint is None else None,
                                rounds=tuple(rounds.rounds), estimate=summary(self.estimator, joint, fallback),
                                noise=Noise("gaussian", rounds.rounds[0].sigma, self.discrete))  # this run's first
        spent = rounds.spending.total(self.rho * self.size_policy.share if self.size_policy.estimated else None)
        return AdaptiveRun(release, tuple(rounds.rounds), tuple(rounds.measurements), estimate, spent, joint,
                           decomposable)

    @validate_params(rng=SEED, progress=OrNone(IsCallable()))
    def synthesize(self, data: Dataset, rows: int | None = None, *, rng: np.random.Generator | int | None = None,
                   progress: Progress | None = None) -> Synthesis:
        """Run, then draw synthetic rows from the estimate: post-processing, the same guarantee.

        Parameters
        ----------
        data : Dataset
            The private data.
        rows : int, optional
            How many rows; default the release's public size (rounded).
        rng, progress
            As for :meth:`run` (``rng`` draws the rows too).

        Returns
        -------
        Synthesis
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

    def _scale_at(self, n: float) -> float:
        """The first rounds' noise over the public size ``n``, at the rounds a run of that size takes
        (a Gaussian's scale is its standard deviation: the answers' too)."""
        return round_parameters(self.table_sensitivity, self.rounds_for(n, self.rounds_rho), self.rounds_rho)[0] / n

    _answer_std = _scale_at

    def _budget_warning(self, rows: int) -> BudgetWarning | None:
        """The first rounds' sigma against the 2-way tables the workload reads together."""
        # The rounds at the size the warning reads: a private row count only to the two digits it
        # states (the scheduled rounds grow as its square).
        read, _, private = size_read(self.size_policy, rows)
        size = float(f"{read:.2g}") if private else read

        def noise_at(privacy: Privacy) -> float:
            assert isinstance(privacy, (ZCDP, ApproxDP))  # the budget's own kind
            rho = privacy.rho if isinstance(privacy, ZCDP) else zcdp_for_approx_dp(privacy)
            return round_parameters(self.table_sensitivity, self.rounds_for(size, rho * self.size_policy.main_share()),
                                    rho * self.size_policy.main_share())[0]

        pairs = {pair for table in self.tables for pair in itertools.combinations(table, 2)}
        shares = [1.0 / math.prod(self.sizes[a] for a in table) for table in sorted(pairs) or self.tables]
        return budget_warning(self.privacy, noise_at(self.privacy), noise_at, shares, self.size_policy, rows,
                              noise_name=f"the first rounds' noise on each measured count "
                              f"({self.rounds_for(size, self.rounds_rho)} "
                              "notional rounds)", tables_name="2-way tables of attributes the workload reads "
                              "together" if pairs else "one-way tables of the workload")

    def _answers(self, joint: JointEstimate | None, decomposable: DecomposableModel | None) -> np.ndarray:
        """The workload's answers from the final estimate's tables, term by term."""
        terms = table_terms(self.workload)
        assert terms is not None
        subsets = [tuple(subset) for subset, _ in terms.terms if subset]
        if joint is not None:
            tables = dict(zip(subsets, (joint.table(subset) for subset in subsets)))
        else:
            assert decomposable is not None
            tables = dict(zip(subsets, decomposable.completions(subsets)))
        return np.concatenate([weight * np.ravel(tables[tuple(subset)] if subset else np.ones(()))
                               for subset, weight in terms.terms])

    def rounds_for(self, size: float, budget: float) -> int:
        """The notional rounds of a run of public size ``size`` on the rounds' ``budget`` (rho).

        Parameters
        ----------
        size : float
            The public size (declared, estimated, or the row count under replace-one).
        budget : float
            The rounds' rho.

        Returns
        -------
        int
        """
        if not self.scheduled:
            return self.notional_rounds
        return scheduled_rounds(self.notional_rounds, self.least_rounds, self.table_sensitivity, budget, size)

    def _repr_extra(self) -> str:
        return f", max_cells={self.max_cells:,}, estimator={self.estimator!r}"


def _measurable_tables(subsets: tuple[tuple[int, ...], ...], sizes: tuple[int, ...],
                       max_cells: int) -> tuple[tuple[int, ...], ...]:
    """The workload's non-empty tables, refusing a workload of which no table can be measured."""
    tables = sorted({subset for subset in subsets if subset}, key=lambda s: (len(s), s))
    if not tables:
        raise ArgumentValueError("workload", "it reads no attribute (only totals): nothing to measure")
    if all(sizes[a] == 1 for table in tables for a in table):
        raise ArgumentValueError("workload", "every attribute it reads has a single value, so each of its "
                                 "tables is the total alone: nothing to measure")
    smallest = min(tables, key=lambda t: math.prod(sizes[a] for a in t))
    cells = math.prod(sizes[a] for a in smallest)
    one_way = sum(sizes[a] for a in {a for table in tables for a in table})
    if len(smallest) > 1 and cells + one_way > max_cells:
        raise ArgumentValueError("max_cells", f"the workload's smallest table, on attributes {list(smallest)}, "
                                 f"holds {cells:,} cells, which with the {one_way:,} cells of the one-way tables "
                                 f"measured first is above max_cells={max_cells:,}: no table of the workload could "
                                 "ever be measured", valid=f"at least {cells + one_way:,}")
    return tuple(tables)
