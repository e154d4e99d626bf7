"""Mechanisms: a calibrated measurement of counts, divided by a public size, and optionally a
body to project onto.

Every mechanism is the same two parts. The *measurement*: the counts of a measured matrix (the
workload F, or a factorization's strategy M, whose measurements are then reconstructed as
``R (M c + Z)``) plus noise calibrated to their sensitivity (:class:`~projmech.workloads.Workload`,
:mod:`projmech.privacy.noise`, :mod:`projmech.privacy.guarantees`), divided by the public size of
:class:`~projmech.privacy.guarantees.SizePolicy`. The *body* (:mod:`projmech.bodies.body`), if any, projects
those noisy answers: post-processing, under one tolerance rule tied to the answers' noise. A
:class:`Release` holds what may be published: never the true answers, the histogram, or a row
count the guarantee does not make public.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp

from .._threads import one_blas_thread
from ..analysis.bounds import check_measure, gaussian_mechanism_error, projection_error
from ..bodies.body import BODIES, Body, Hull, ProjectionProgress, choose_body
from ..bodies.hull import ProjectionResult
from ..bodies.local import LocalResult
from ..bodies.memory import memory_shortfall
from ..bodies.relaxation import RELAXATIONS, RelaxationResult
from ..bodies.tables import TablesResult
from ..data.dataset import Dataset, resolve_rows
from ..factorization.base import Factorization, check_objective
from ..privacy.guarantees import ZCDP, ApproxDP, Neighbouring, Privacy, PureDP, SizePolicy
from ..privacy.noise import NOISE_KINDS, Noise, calibrate, choose_discrete, public_size
from ..validation import FLAG, Options, as_generator, check_positive_int, format_count, validate_params
from ..workloads import Workload
from .budget import budget_message, table_shares, warn_budget
from .intervals import ConfidenceIntervals, confidence_intervals

#: The BudgetWarning's messages of each live mechanism, by row count and noise (see
#: CountingMechanism._check_budget): kept outside the mechanisms, since the row count may be private.
_BUDGET_MESSAGES: weakref.WeakKeyDictionary[Any, dict[tuple[int, Noise], str | None]] = weakref.WeakKeyDictionary()

__all__ = [
    "Release",
    "Mechanism",
    "CountingMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ProjectionMechanism",
    "FactorizationMechanism",
]

@dataclass(frozen=True, eq=False, repr=False)
class Release:
    """Privately released answers and everything needed to interpret them.

    Every field is a function of the noisy measurements and public parameters only: never of the
    true answers, the histogram or (under add/remove neighbours) the true row count. Releases are
    made by the mechanisms' ``release`` methods, not by hand.

    Parameters
    ----------
    answers : ndarray, shape (k,)
        The released answers, as fractions of ``size``.
    noisy_answers : ndarray, shape (k,)
        The noisy answers before any post-processing (equal to ``answers`` without projection).
    label_source : callable
        Returns one label per query; called on first access to :attr:`labels` (a release of 21
        million marginal cells need not hold 21 million strings until someone reads them).
    mechanism : str
        The mechanism's name (``"gaussian"``, ``"factorization+projection"``, ...).
    privacy : ZCDP, ApproxDP or PureDP
        The guarantee the release satisfies (the size estimate's share included).
    neighbouring : Neighbouring
        The neighbouring relation the guarantee is stated for.
    size : float
        The public size the answers are fractions of: the row count ``n`` under replace-one
        (public by that relation's definition); under add/remove the declared size, or the
        private estimate (at least 1).
    size_source : {"public n", "declared", "estimated"}
        Where ``size`` comes from.
    noise : Noise
        The noise added to each measured count (the answers themselves, or the strategy's
        measurements ``M c`` for the factorization mechanism, whose answers carry the correlated
        noise ``R Z``): distribution, scale in counts, discrete or continuous.
    sensitivity : float
        The l2 (Gaussian) or l1 (Laplace) sensitivity of the measured counts.
    size_noise : Noise or None
        The noise of the size estimate (``size_source == "estimated"``).
    projection : ProjectionResult, RelaxationResult or None
        Solver statistics, for projection mechanisms: onto ``K_Q`` (with the witness
        distribution) or onto the relaxation L of 2-way marginals (with the moment matrix).
    factorization : Factorization or None
        The strategy and reconstruction, for the factorization mechanism.
    answer_sigma_rms : float or None
        The noise on the answers before any projection, as a fraction of ``size``: the root
        mean square over the ``k`` answers of each answer's standard deviation. For the
        factorization mechanism ``sigma ||R||_F / sqrt(k)``, the strategy's ``sigma`` (:attr:`sigma`)
        spread by the reconstruction ``R``; for the Gaussian, Laplace and projection mechanisms
        it equals :attr:`sigma`; ``None`` where the answers carry no per-answer noise (MWEM).
    workload : Workload or None
        The workload answered (public), for the intervals of projected answers.
    rounds : tuple of AdaptiveRound or None
        For the adaptive mechanism (:mod:`projmech.mechanisms.adaptive`), each round's table,
        noise and zCDP cost; ``noise`` is then the first round's, the largest.
    estimate : dict or None
        For the adaptive mechanism, the estimate the answers were read from: ``estimator``
        (``"regularized"``, ``"joint"`` or ``"tables"``); for the regularized joint its fit's
        statistics (``fit``), estimated risk per measured cell (``risk``) and iterations run
        (``iterations_run``); for the joint its projection's and its fit's statistics
        (``projection``, ``fit``: status, gap, tolerance).

    See Also
    --------
    GaussianMechanism.release : How a release is made (every mechanism has ``release``).

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.GaussianMechanism(pm.marginals(domain, 1), pm.ZCDP(0.5), noise="continuous")
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> release.labels
    ('a=0', 'a=1', 'b=0', 'b=1')
    >>> release.answers.round(3)
    array([0.417, 0.579, 0.76 , 0.737])
    >>> release.size, release.size_source, round(release.sigma, 4)
    (3.0, 'public n', 0.6667)
    >>> release.summary()["guarantee"]
    '0.5-zCDP'
    """

    answers: np.ndarray
    noisy_answers: np.ndarray
    label_source: Callable[[], tuple[str, ...]]
    mechanism: str
    privacy: Privacy
    neighbouring: Neighbouring
    size: float
    size_source: str
    noise: Noise
    sensitivity: float
    size_noise: Noise | None = None
    projection: ProjectionResult | RelaxationResult | TablesResult | LocalResult | None = None
    factorization: Factorization | None = None
    answer_sigma_rms: float | None = None
    workload: Workload | None = None
    rounds: tuple[Any, ...] | None = None
    estimate: dict[str, Any] | None = None

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """One label per query, built from ``label_source`` on first access."""
        return self.label_source()

    @property
    def scale(self) -> float:
        """The noise's scale (sigma or b) on the released fractions: ``noise.scale / size``."""
        return self.noise.scale / self.size

    @property
    def sigma(self) -> float:
        """The standard deviation of the noise on each measured count, over ``size``.

        For the Gaussian, Laplace and projection mechanisms, the noise of each (unprojected)
        answer; for the factorization mechanism, of each measurement of the strategy: the
        answers' noise is :attr:`answer_sigma_rms`.
        """
        return self.noise.std / self.size

    @property
    def witness(self) -> np.ndarray | sp.csr_array | None:
        """A distribution ``w`` over the universe with ``F @ witness == answers``, if any.

        Set by projection onto ``K_Q`` only; a point of the relaxation L need not have one.
        """
        return None if self.projection is None else self.projection.witness

    @property
    def moments(self) -> np.ndarray | None:
        """The moment matrix ``[[1, mu^T], [mu, P]]`` whose image the answers are, if any.

        Set by projection onto the relaxation L only.
        """
        return None if self.projection is None else self.projection.moments

    @property
    def counts(self) -> np.ndarray:
        """The released answers as counts, ``size * answers``."""
        return self.size * self.answers

    def row_source(self) -> tuple[ProjectionResult | RelaxationResult | TablesResult | LocalResult, Workload | None,
                                  Workload]:
        """What :func:`~projmech.synthetic.synthetic_data` draws this release's rows from.

        Returns
        -------
        projection : ProjectionResult, RelaxationResult, TablesResult or LocalResult
            The release's projection.
        drawing : Workload or None
            The workload to draw and check the rows with: the workload answered, None for a
            projection onto L (whose answers are the domain's 2-way marginals).
        answered : Workload
            The workload answered.

        Raises
        ------
        ValueError
            If the release holds no projection (an unprojected mechanism's), or is the adaptive
            mechanism's (its run knows its estimate; pass the run, or call
            :func:`~projmech.synthesize`).

        Examples
        --------
        >>> import numpy as np, projmech as pm
        >>> domain = pm.Domain(["a", "b"], [2, 2])
        >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
        >>> workload = pm.marginals(domain, 1)
        >>> mechanism = pm.ProjectionMechanism(workload, pm.ZCDP(0.5), solver="fast", noise="continuous")
        >>> projection, drawing, answered = mechanism.release(data, rng=np.random.default_rng(0)).row_source()
        >>> type(projection).__name__, drawing is workload, answered is workload
        ('ProjectionResult', True, True)
        """
        if self.rounds is not None:
            raise ValueError("an adaptive release's rows come from its run's estimate: pass the AdaptiveRun "
                             "(mechanism.run(data)), or call projmech.synthesize / mechanism.synthesize")
        if self.projection is None or self.workload is None:
            raise ValueError(f"a {self.mechanism} release holds no projection to draw rows from; for rows call "
                             "projmech.synthesize, or release with ProjectionMechanism")
        drawing = None if isinstance(self.projection, RelaxationResult) else self.workload
        return self.projection, drawing, self.workload

    def confidence_intervals(self, level: float = 0.95) -> ConfidenceIntervals:
        """Per-query confidence intervals for the true answers, with the method named.

        Exact for the unprojected answers of the Gaussian, Laplace and factorization mechanisms
        with continuous noise (each interval covers its true answer with probability ``level``;
        for the factorization mechanism each query's variance comes from R); at least ``level``
        with discrete noise; for projected answers, simultaneous intervals of the noisy answers
        (Bonferroni), clipped to each query's range over ``K_Q`` when the size is the public row
        count: valid, wider. The true answers are the true counts over :attr:`size`.

        Parameters
        ----------
        level : float, default 0.95
            The confidence level, in ``(0, 1)``.

        Returns
        -------
        ConfidenceIntervals
            ``lower``, ``upper``, ``method``, whether ``exact`` and ``simultaneous``.

        Raises
        ------
        TypeError
            If ``level`` is not a number.
        ValueError
            If ``level`` is not in ``(0, 1)``, or the release has no per-answer noise (MWEM).
        """
        return confidence_intervals(self, level)

    def to_frame(self) -> pd.DataFrame:
        """The answers as a table, one row per query.

        Returns
        -------
        pandas.DataFrame
            Columns ``query`` (the label), ``answer`` and ``noisy_answer``.
        """
        import pandas as pd  # only here: a release needs no pandas until it becomes a frame

        return pd.DataFrame({"query": list(self.labels), "answer": self.answers, "noisy_answer": self.noisy_answers})

    def summary(self) -> dict[str, Any]:
        """A JSON-serializable description: guarantee, relation, size, noise, solver statistics.

        Returns
        -------
        dict
            ``mechanism``, ``guarantee`` (as text), ``privacy`` (its parameters),
            ``neighbouring``, ``size``, ``size_source``, ``num_queries``, ``noise``,
            ``sensitivity`` and ``sigma`` (:attr:`sigma`); ``size_noise`` with a size estimate;
            ``solver`` and ``body`` after a projection; for the factorization mechanism
            ``factorization`` and ``answer_sigma_rms`` (:attr:`answer_sigma_rms`: the answers'
            noise, where ``sigma`` is the strategy's); for the adaptive mechanism ``rounds`` and
            ``estimate``.
        """
        summary: dict[str, Any] = {
            "mechanism": self.mechanism,
            "guarantee": str(self.privacy),
            "privacy": {"type": type(self.privacy).__name__, **vars(self.privacy)},
            "neighbouring": self.neighbouring.value,
            "size": self.size,
            "size_source": self.size_source,
            "num_queries": len(self.answers),
            "noise": self.noise.summary(),
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
        }
        if self.size_noise is not None:
            summary["size_noise"] = self.size_noise.summary()
        if self.projection is not None:
            summary["solver"] = self.projection.summary()
            summary["body"] = summary["solver"]["body"]
        if self.factorization is not None:
            summary["factorization"] = self.factorization.summary()
            summary["answer_sigma_rms"] = self.answer_sigma_rms
        if self.rounds is not None:
            summary["rounds"] = [{"attributes": list(r.attributes), "sigma": r.sigma, "selection_rho": r.selection_rho,
                                  "measurement_rho": r.measurement_rho, "annealed": r.annealed} for r in self.rounds]
        if self.estimate is not None:
            summary["estimate"] = copy.deepcopy(self.estimate)  # the release stays as it was
        return summary

    def to_json(self) -> str:
        """The :meth:`summary` as indented JSON text.

        Returns
        -------
        str
            ``json.dumps(summary(), indent=2)``.
        """
        return json.dumps(self.summary(), indent=2)

    def __repr__(self) -> str:
        projected = "" if self.projection is None else f", projected: {self.projection.stats}"
        return (f"Release({self.mechanism}, {len(self.answers):,} answers, {self.privacy}, "
                f"{self.neighbouring.value}, size {self.size:g} ({self.size_source}), "
                f"{self.noise.name} std {self.noise.std:.4g}{projected})")

    def _answer_noise(self) -> str:
        """The answers' noise in words: the correlated noise ``R Z`` of a factorization is not
        the strategy's ``sigma``."""
        if self.factorization is not None and self.answer_sigma_rms is not None:
            return f"{self.sigma:.4g} per measurement, RMS {self.answer_sigma_rms:.4g} on the answers"
        return f"{self.sigma:.4g} on the answers"

    def __str__(self) -> str:
        lines = [
            f"{self.mechanism} release of {len(self.answers):,} answers",
            f"  guarantee   {self.privacy}, {self.neighbouring.value} neighbours",
            f"  size        {self.size:g} ({self.size_source})",
            f"  noise       {self.noise.name}, std {self.noise.std:.4g} per measured count "
            f"(sensitivity {self.sensitivity:.4g}); {self._answer_noise()}",
        ]
        if self.factorization is not None:
            lines.append(f"  strategy    {self.factorization}")
        if self.projection is not None:
            lines.append(f"  projection  {self.projection.summary().get('body', 'hull')}: {self.projection.stats}")
        if self.estimate is not None:
            lines.append(f"  estimate    {self.estimate['estimator']}" + "".join(
                f"; {part} {self.estimate[part]['status']}" for part in ("projection", "fit") if part in self.estimate))
        preview = ", ".join(f"{label}={answer:.4g}" for label, answer in zip(self.labels[:3], self.answers[:3]))
        lines.append(f"  answers     {preview}{', ...' if len(self.answers) > 3 else ''}")
        return "\n".join(lines)


#: The constructors' declared checks (:func:`~projmech.validation.validate_params`).
_NOISE = Options(*NOISE_KINDS)
_CALIBRATION = Options("analytic", "classical")
_BODY = Options(*BODIES)
_RELAXATION = Options(*RELAXATIONS)


@runtime_checkable
class Mechanism(Protocol):
    """What every non-interactive mechanism offers, whatever it measures: its workload, its
    guarantee and the relation it is stated for, how it resolves the public size, and one
    ``release`` signature.

    :class:`GaussianMechanism`, :class:`LaplaceMechanism`, :class:`ProjectionMechanism`,
    :class:`FactorizationMechanism` and
    :class:`~projmech.mechanisms.multiplicative_weights.OfflinePMW` follow it (all through
    :class:`CountingMechanism`); code that takes "a mechanism" can type it with this protocol.
    The interactive mechanisms (:class:`~projmech.mechanisms.sparse_vector.Threshold`,
    :class:`~projmech.mechanisms.online_pmw.OnlinePMW`) answer queries one at a time instead.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is followed, never built.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.mechanisms import Mechanism
    >>> isinstance(pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1.0)), Mechanism)
    True
    """

    # Read-only members: a mechanism may narrow their types (OfflinePMW's privacy is PureDP or ZCDP).
    @property
    def workload(self) -> Workload:
        """The queries the mechanism answers."""
        ...

    @property
    def privacy(self) -> Privacy:
        """The guarantee of one release."""
        ...

    @property
    def neighbouring(self) -> Neighbouring:
        """The neighbouring relation the guarantee is stated for."""
        ...

    @property
    def size_policy(self) -> SizePolicy:
        """How the public size is resolved (:func:`~projmech.privacy.noise.public_size`)."""
        ...

    def release(self, data_or_histogram: Any, n: int | None = None, *,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the workload's answers on a data set (see each mechanism).

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            The private data, or a normalized histogram with ``n``.
        n : int, optional
            The row count of a histogram.
        rng : numpy.random.Generator, int or None
            The source of continuous noise.

        Returns
        -------
        Release
            The released answers and what was drawn.
        """
        ...


class CountingMechanism:
    """What every non-interactive mechanism shares: it measures counts, never fractions, and
    optionally projects.

    The true counts (``F c``, or a strategy's ``M c``) have a sensitivity that does not depend
    on the row count; the noise is calibrated to it (:func:`projmech.privacy.noise.calibrate`), and the
    answers are divided by the public size of :class:`~projmech.privacy.guarantees.SizePolicy`: the public
    ``n`` under replace-one, a declared size or a private estimate under add/remove. So no
    released number, noise scale or summary depends on the row count unless it is public. A
    mechanism with a :attr:`body` then projects the noisy answers onto it.

    The base class of :class:`GaussianMechanism`, :class:`LaplaceMechanism`,
    :class:`ProjectionMechanism`, :class:`FactorizationMechanism` and
    :class:`~projmech.mechanisms.multiplicative_weights.OfflinePMW`; not built directly.

    Parameters
    ----------
    workload : Workload
        The queries.
    privacy : ZCDP, ApproxDP or PureDP
        The guarantee.
    neighbouring : {"replace-one", "add-remove"} or Neighbouring
        The relation the guarantee is stated for.
    size : int or "estimate", optional
        Under add/remove, the declared public size or ``"estimate"`` (:class:`SizePolicy`).
    size_share : float, optional
        With ``size="estimate"``, the share of the guarantee spent on the size estimate.

    Examples
    --------
    >>> import projmech as pm
    >>> from projmech.mechanisms import CountingMechanism
    >>> isinstance(pm.GaussianMechanism(pm.identity(2), pm.ZCDP(1.0)), CountingMechanism)
    True
    """

    mechanism_name = "counting"
    #: Whether the mechanism needs the workload's explicit matrix (see :meth:`needs_matrix`).
    _needs_matrix = True
    #: The body the noisy answers are projected onto, if any.
    body: Body | None = None
    #: The factorization whose strategy is measured, if any (else the workload itself is).
    factorization: Factorization | None = None

    def __init__(self, workload: Workload, privacy: Privacy, neighbouring: Neighbouring | str,
                 size: int | str | None, size_share: float | None) -> None:
        if not isinstance(workload, Workload):
            raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
        if not isinstance(privacy, (ZCDP, ApproxDP, PureDP)):
            raise TypeError(f"privacy: expected ZCDP, ApproxDP or PureDP, got {type(privacy).__name__}")
        self.workload = workload
        self.privacy = privacy
        self.size_policy = SizePolicy.parse(neighbouring, size, size_share=size_share)
        self.neighbouring = self.size_policy.neighbouring

    @classmethod
    def needs_matrix(cls, **options: Any) -> bool:
        """Whether this mechanism, with these constructor options, needs the workload's explicit matrix.

        A caller such as the CLI builds an implicit workload otherwise.

        Parameters
        ----------
        **options
            The constructor's keyword options; the Gaussian and Laplace mechanisms' answer does
            not depend on them.

        Returns
        -------
        bool
            True when the explicit matrix is needed.
        """
        return cls._needs_matrix

    def _calibrate(self, sensitivity: float, integer_valued: bool, noise: str, calibration: str = "analytic") -> None:
        """Set :attr:`noise` (and the size estimate's) for measured counts of this sensitivity."""
        self._sensitivity = sensitivity
        self._calibration = calibration
        discrete = choose_discrete(noise, integer_valued)
        self.noise, self.size_noise = calibrate(self.privacy, sensitivity, self.size_policy, discrete,
                                                calibration=calibration)

    def sensitivity(self) -> float:
        """The sensitivity of the measured counts (l2 for Gaussian noise, l1 for Laplace).

        Returns
        -------
        float
            The largest change of the measured counts between neighbouring data sets.
        """
        return self._sensitivity

    def noise_scale(self, n: int) -> float:
        """The noise's scale on the answers of a data set of public size ``n``.

        A planning figure: the noise itself is added to counts, and the answers are the counts
        divided by ``n``.

        Parameters
        ----------
        n : int
            The public size.

        Returns
        -------
        float
            ``noise.scale / n``.

        Raises
        ------
        ValueError
            If ``n`` is not a positive integer.
        """
        return self.noise.scale / check_positive_int("n", n)

    def _answer_std(self, n: float) -> float:
        """The standard deviation of the noisy answers' error per answer (root mean square over
        the answers) at public size ``n``, before any projection."""
        return self.noise.std / n

    def _rows(self, data: Any, n: int | None) -> tuple[Any, int]:
        """The data (a Dataset, or the histogram of counts ``n h``, exact integers) and its row
        count.

        The row count is used only to count and to draw the size estimate; under add/remove it
        is never released, and ``n`` beside a Dataset is refused before the data is read.
        """
        if not isinstance(data, Dataset) and not self.workload.accepts_histograms:
            raise ValueError(
                f"data_or_histogram: {self.workload!r} is implicit over a universe too large for a "
                "histogram; pass the Dataset, whose records it answers directly"
            )
        resolved, rows = resolve_rows(data, n, policy=self.size_policy,
                                      universe_size=None if isinstance(data, Dataset) else self.workload.universe_size)
        if isinstance(resolved, Dataset):
            self.workload.check_data(resolved)
        return resolved, rows

    def _counts(self, data: Any) -> np.ndarray:
        """The workload's true counts ``F c`` of what :meth:`_rows` returned."""
        return _counts_of(self.workload, data)

    def _measured_counts(self, data: Any) -> np.ndarray:
        """The true counts of the measured matrix (the workload's own by default)."""
        return self._counts(data)

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        """The workload's noisy counts from the noisy measurements (the same by default)."""
        return measurements

    def _kernel_threads(self) -> AbstractContextManager[Any]:
        """The BLAS threads of measurement and reconstruction: as the environment sets them, except
        where dense products sum many terms (see :class:`FactorizationMechanism`)."""
        return contextlib.nullcontext()

    def release(self, data_or_histogram: Any, n: int | None = None,
                rng: np.random.Generator | int | None = None) -> Release:
        """Release the workload's answers on a :class:`Dataset` or a normalized histogram.

        Measures the counts with calibrated noise, divides them by the public size
        (:class:`~projmech.privacy.guarantees.SizePolicy`) and, for a mechanism with a :attr:`body`,
        projects them onto it (post-processing).

        Parameters
        ----------
        data_or_histogram : Dataset or array_like of shape (m,)
            A Dataset's true counts come from its records (:meth:`Workload.answer_counts`). A
            histogram must be normalized (non-negative, sums to 1) and needs ``n``, with ``n h``
            a vector of integer counts (only where the workload can answer one,
            :attr:`Workload.accepts_histograms`).
        n : int, optional
            The data's row count; taken from a Dataset. Under add/remove it is private: it
            only turns a histogram into counts (and is never released).
        rng : numpy.random.Generator, int or None
            Source of the continuous noise and of everything else random here. ``None`` draws
            fresh OS entropy (never global state). Discrete noise is drawn by OpenDP from its own
            cryptographically secure generator (see :mod:`projmech.privacy.noise`).

        Returns
        -------
        Release
            The answers, the noisy answers before any projection, and what is needed to
            interpret them.

        Warns
        -----
        LargeDeltaWarning
            Under ``ApproxDP``, if delta is at least ``1/n`` for the public size ``n`` (the row
            count under replace-one, a declared size under add/remove): such a delta allows
            releasing a row outright (:meth:`~projmech.privacy.guarantees.SizePolicy.check_delta`).
        BudgetWarning
            Before anything is spent, if the noise on a count is above the mean count of a cell
            in at least half of the workload's tables (:class:`~projmech.mechanisms.budget.BudgetWarning`,
            which names the least budget at which it is not); shown to the curator, not released.

        Notes
        -----
        The noisy answers are fractions of the public size, so the body projected onto is
        ``K_Q`` (or L) scaled to that size: under add/remove with a declared or estimated size
        that differs from the row count, the true answers lie in ``(n / size) K_Q`` and the
        projection is post-processing of the noisy answers all the same.
        """
        generator = as_generator(rng)
        data, rows = self._rows(data_or_histogram, n)
        # A delta of 1/n or more for a public n warns (LargeDeltaWarning); a private n is never compared.
        self.size_policy.check_delta(self.privacy, rows)
        self._check_budget(rows)
        with self._kernel_threads():
            measured = self._measured_counts(data)
            measurements = measured + self.noise.sample(measured.size, generator)
            size = public_size(self.size_policy, rows, self.size_noise, generator)
            noisy = self._reconstruct(measurements) / size
        std = self._answer_std(size)
        if self.body is None:
            return self._release(noisy, noisy, size, answer_sigma_rms=std)
        # One tolerance rule for every projection: relative to the answers' own noise. A
        # discrete Gaussian far below one count is the constant 0: then there is no noise level
        # for the tolerance to refer to, and the body's absolute default applies. A projection
        # that runs for seconds shows its progress on a terminal (nowhere else).
        with ProjectionProgress(f"projecting onto {self.body.name}") as progress:
            result = self.body.project(self.workload, noisy, noise_scale=std if std > 0 else None, callback=progress)
        return self._release(result.answers, noisy, size, projection=result, answer_sigma_rms=std)

    def _check_budget(self, rows: int) -> None:
        """Warn (:class:`~projmech.mechanisms.budget.BudgetWarning`) before anything is spent when
        the answers' noise is above the mean count of a cell in at least half of the tables
        (worked out once for each row count and noise and kept beside this object for its
        lifetime, not in it, so that neither a copy nor a pickle of the mechanism carries a private
        row count: repeated releases, as an audit makes, warn alike at no cost)."""
        messages = _BUDGET_MESSAGES.setdefault(self, {})
        key = (rows, self.noise)
        if key not in messages:
            messages[key] = self._budget_message(rows)
        warn_budget(messages[key])

    def _budget_message(self, rows: int) -> str | None:
        shares = table_shares(self.workload)
        if shares is None or self.noise.std == 0:
            return None
        ratio = self._answer_std(1.0) / self.noise.std  # the answers' noise per unit of the counts'

        def noise_at(privacy: Privacy) -> float:
            noise = calibrate(privacy, self._sensitivity, self.size_policy, self.noise.discrete,
                              calibration=self._calibration)[0]
            return noise.std * ratio

        what = "the noise on each answer's count" if ratio == 1.0 else "the answers' noise per count (RMS)"
        return budget_message(self.privacy, self._answer_std(1.0), noise_at, shares[0], self.size_policy, rows,
                              noise_name=what, queries=shares[1],
                              tables_name="queries of the workload" if shares[1] else "tables of the workload")

    def _release(self, answers: np.ndarray, noisy: np.ndarray, size: float,
                 projection: ProjectionResult | RelaxationResult | TablesResult | LocalResult | None = None,
                 answer_sigma_rms: float | None = None, rounds: tuple[Any, ...] | None = None,
                 estimate: dict[str, Any] | None = None) -> Release:
        return Release(
            answers=answers,
            noisy_answers=noisy,
            label_source=functools.partial(getattr, self.workload, "labels"),
            mechanism=self.mechanism_name,
            privacy=self.privacy,
            neighbouring=self.neighbouring,
            size=size,
            size_source=self.size_policy.source,
            noise=self.noise,
            sensitivity=self._sensitivity,
            size_noise=self.size_noise,
            projection=projection,
            factorization=self.factorization,
            answer_sigma_rms=answer_sigma_rms,
            workload=self.workload,
            rounds=rounds,
            estimate=estimate,
        )

    def _size_repr(self) -> str:
        policy = self.size_policy
        if policy.neighbouring is Neighbouring.REPLACE_ONE:
            return policy.neighbouring.value
        size = policy.declared if policy.declared is not None else f"estimate, share {policy.share:g}"
        return f"{policy.neighbouring.value}, size={size}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.workload!r}, {self.privacy}, {self._size_repr()}, "
                f"{self.noise.name}{self._repr_extra()})")

    def _repr_extra(self) -> str:
        """What the repr adds after the noise: the body, and what a subclass measures."""
        return "" if self.body is None else f", body={self.body!r}"


class _GaussianMeasurement(CountingMechanism):
    """The Gaussian family's shared options: the privacy type, ``calibration`` and ``noise``."""

    def _gaussian_options(self, calibration: str, noise: str) -> str:
        """Check the Gaussian family's privacy type, ``calibration`` and ``noise`` (before any
        work), set :attr:`calibration`, and return the noise kind to calibrate."""
        if isinstance(self.privacy, PureDP):
            raise TypeError(f"privacy: {type(self).__name__} needs ZCDP or ApproxDP; use LaplaceMechanism for PureDP")
        if calibration == "classical" and isinstance(self.privacy, ApproxDP) and self.privacy.epsilon >= 1:
            raise ValueError(f"calibration='classical' is valid only for epsilon < 1, got "
                             f"epsilon={self.privacy.epsilon}")
        self.calibration = calibration
        # The classical bound is stated for the continuous Gaussian.
        return "continuous" if calibration == "classical" and noise == "auto" else noise

    def _gaussian_error(self, n: int, measure: Literal["rms", "mean"]) -> float:
        """The exact error of the unprojected noisy answers ``F h + Z`` at public size ``n``."""
        n = check_positive_int("n", n)
        return gaussian_mechanism_error(self._answer_std(n), self.workload.num_queries, measure=measure)


class GaussianMechanism(_GaussianMeasurement):
    """The Gaussian mechanism: ``(F c + Z) / size``, ``Z`` Gaussian.

    Guarantee: the given ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)`` with respect to the given
    neighbouring relation (default replace-one). The noise is on the counts ``F c``, calibrated to
    their l2 sensitivity (:meth:`Workload.count_sensitivity`: under replace-one the largest
    distance between two columns of F, exact up to :data:`~projmech.workloads.PAIRWISE_UNIVERSE`
    elements, else ``sqrt(2) ||F||_{1->2}`` for a workload without negative entries and
    ``2 ||F||_{1->2}`` otherwise; ``||F||_{1->2}`` under add/remove) by
    :func:`~projmech.privacy.noise.calibrate`: ``Delta / sqrt(2 rho)`` for zCDP :cite:p:`BS16`, the
    exact analytic calibration of :cite:t:`BW18` for (epsilon, delta) with continuous noise, and
    the discrete Gaussian's zCDP :cite:p:`CKS20` converted by
    :func:`~projmech.privacy.guarantees.zcdp_delta` for (epsilon, delta) with discrete noise. The answers
    are the noisy counts divided by the public size (:class:`~projmech.privacy.guarantees.SizePolicy`).
    The calibration is derived in the theory page *Privacy* (``docs/theory/privacy.md``).

    Parameters
    ----------
    workload : Workload
        The queries ``F``.
    privacy : ZCDP or ApproxDP
        The guarantee (use :class:`LaplaceMechanism` for ``PureDP``).
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    calibration : {"analytic", "classical"}
        ``"classical"`` uses the loose ``sqrt(2 ln(1.25/delta))/epsilon`` bound (epsilon < 1,
        continuous noise only).
    size : int or "estimate", optional
        Required under add/remove (the row count is private there): a size declared public, by
        which the counts are divided, or ``"estimate"``: a noisy row count from ``size_share``
        of the budget. Refused under replace-one, where ``n`` is public.
    size_share : float, optional
        With ``size="estimate"``, the share of the budget spent on the size; default
        :data:`~projmech.privacy.guarantees.DEFAULT_SIZE_SHARE` (0.05).
    noise : {"auto", "discrete", "continuous"}
        ``"auto"`` (default): the exact discrete Gaussian when the workload's entries are
        integers (then the counts are), numpy's continuous Gaussian otherwise (see
        :mod:`projmech.privacy.noise`).

    Raises
    ------
    TypeError
        If ``workload`` is not a Workload or ``privacy`` is not ZCDP or ApproxDP.
    ValueError
        If ``calibration``, ``noise``, ``neighbouring``, ``size`` or ``size_share`` is invalid.

    See Also
    --------
    ProjectionMechanism : The same noise, then projected (never less accurate).
    FactorizationMechanism : Measures a strategy instead of the workload itself.

    Examples
    --------
    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.GaussianMechanism(pm.marginals(domain, 1), pm.ZCDP(0.5), noise="continuous")
    >>> round(mechanism.sensitivity(), 6), round(mechanism.expected_error(3), 4)
    (2.0, 0.6667)
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> release.answers.round(3)
    array([0.417, 0.579, 0.76 , 0.737])
    """

    mechanism_name = "gaussian"
    _needs_matrix = False

    @validate_params(calibration=_CALIBRATION, noise=_NOISE)
    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, *,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 calibration: Literal["analytic", "classical"] = "analytic",
                 size: int | str | None = None, size_share: float | None = None,
                 noise: str = "auto") -> None:
        super().__init__(workload, privacy, neighbouring, size, size_share)
        noise = self._gaussian_options(calibration, noise)
        self._calibrate(workload.count_sensitivity(self.neighbouring, 2), workload.is_integer, noise, calibration)

    def expected_error(self, n: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
        """The expected error of the answers at public size ``n``, exact (not a bound).

        Parameters
        ----------
        n : int
            The public size.
        measure : {"rms", "mean"}
            ``"rms"``: ``sqrt(E (1/k) ||Z||^2) / n = std / n``; ``"mean"``:
            ``E[(1/sqrt k) ||Z||] / n`` (:func:`projmech.analysis.bounds.gaussian_mechanism_error`).

        Returns
        -------
        float
            The error, a fraction of ``n``. For discrete noise, the same formulas with its
            exact standard deviation (:attr:`Noise.std`): ``"rms"`` stays exact; ``"mean"``
            treats the noise as Gaussian, off by up to 9 % for a single query at sigma = 1 and
            below 1 % from sigma = 3 on.
        """
        return self._gaussian_error(n, measure)


class LaplaceMechanism(CountingMechanism):
    """The Laplace mechanism: ``(F c + Lap(b)^k) / size`` with ``b = Delta_1 / epsilon``.

    Guarantee: ``PureDP(epsilon)`` w.r.t. the given neighbouring relation :cite:p:`DMNS06`, with
    the l1 sensitivity of the counts ``2 ||F||_{1->1}`` (replace-one) or ``||F||_{1->1}``
    (add/remove); the discrete Laplace on integer counts has the same guarantee with the same
    ``b``. The answers are the noisy counts divided by the public size.

    Parameters
    ----------
    workload : Workload
        The queries ``F``.
    privacy : PureDP
        The guarantee.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    size : int or "estimate", optional
        As for :class:`GaussianMechanism`.
    size_share : float, optional
        As for :class:`GaussianMechanism`.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"`` (default): the discrete Laplace when the workload's entries are integers,
        the continuous Laplace otherwise.

    Raises
    ------
    TypeError
        If ``workload`` is not a Workload or ``privacy`` is not PureDP.
    ValueError
        If ``noise``, ``neighbouring``, ``size`` or ``size_share`` is invalid.

    See Also
    --------
    GaussianMechanism : Gaussian noise, for zCDP or (epsilon, delta); less error on many queries.

    Examples
    --------
    The four 1-way marginal cells of two attributes have l1 sensitivity 4 under replace-one
    (one row moves one count down and one up in each marginal): ``b = 4`` counts at ``epsilon = 1``.

    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.LaplaceMechanism(pm.marginals(domain, 1), pm.PureDP(1.0), noise="continuous")
    >>> mechanism.sensitivity(), mechanism.noise.scale
    (4.0, 4.0)
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> release.answers.shape, round(mechanism.expected_error(3), 3)
    ((4,), 1.886)
    """

    mechanism_name = "laplace"
    # Its l1 sensitivity comes from the workload's column norms and its counts from the records'
    # tables, both without the matrix (implicit marginals of 20 attributes: 0.5 s).
    _needs_matrix = False

    @validate_params(noise=_NOISE)
    def __init__(self, workload: Workload, privacy: PureDP, *,
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 size: int | str | None = None, size_share: float | None = None,
                 noise: str = "auto") -> None:
        super().__init__(workload, privacy, neighbouring, size, size_share)
        if not isinstance(privacy, PureDP):
            raise TypeError(f"privacy: the Laplace mechanism needs PureDP, got {type(privacy).__name__}")
        self._calibrate(workload.count_sensitivity(self.neighbouring, 1), workload.is_integer, noise)

    def expected_error(self, n: int, *, measure: Literal["rms"] = "rms") -> float:
        """The expected root mean square error of the answers at public size ``n``, exact.

        Parameters
        ----------
        n : int
            The public size.
        measure : {"rms"}
            Only ``"rms"``: ``"mean"`` has no closed form for Laplace noise and is refused (the
            rms figure bounds it, by Jensen).

        Returns
        -------
        float
            ``sqrt(E (1/k) ||noise||^2) / n = std / n`` (``sqrt(2) b / n`` for the continuous
            Laplace).

        Raises
        ------
        ValueError
            For ``measure="mean"``, or ``n`` not positive.
        """
        n = check_positive_int("n", n)
        if check_measure(measure) != "rms":
            raise ValueError("measure: 'mean' has no closed form for Laplace noise; 'rms' bounds it from above")
        return self._answer_std(n)


class ProjectionMechanism(_GaussianMeasurement):
    """The projection mechanism: Gaussian answers projected onto a convex body.

    The projection mechanism of :cite:t:`NTZ13`. It releases ``Pi_B(F h + Z)``: Gaussian noise calibrated exactly as in
    :class:`GaussianMechanism` (the same ``sigma``, the same draws for the same ``rng``), then
    the Euclidean projection onto a convex body ``B`` that contains the true answers:

    - ``body="hull"``: ``B = K_Q = conv(columns of F)``, by
      :func:`~projmech.bodies.hull.project_to_hull` (certified to ``tol``, relative to the noise
      level). Needs the explicit matrix, or an implicit workload with ``rmatvec`` and
      ``columns`` (``marginals(domain, way, implicit=True)`` has them) for the active-set
      solver, whose memory is O(m). (:class:`~projmech.bodies.body.Hull`.)
    - ``body="relaxed"``: for all 2-way marginals of a domain (``workload.marginal_way == 2``),
      ``B = L``, the moment relaxation of :func:`~projmech.bodies.relaxation.project_to_relaxation`
      (``relaxation`` picks its constraints), whose size is polynomial in the number of
      attributes: the universe is never materialized, so ``d = 150`` binary attributes
      (``2^150`` elements; use ``marginals(domain, 2, implicit=True)``) work. A Dataset's true
      answers are counted from its records. (:class:`~projmech.bodies.body.Relaxation`.)
    - ``body="tables"``: ``K_Q`` of a workload whose tables are disjoint (all 1-way marginals, a
      query on one attribute), projected onto table by table. (:class:`~projmech.bodies.body.Tables`.)
    - ``body="local"``: for marginal tables of any order, their local polytope (consistent,
      non-negative tables), over the tables' cells: ``K_Q`` itself where the tables are acyclic
      (a chain), a relaxation elsewhere (all 3-way tables). (:class:`~projmech.bodies.body.Local`.)
    - ``body="auto"`` (default): decided from the workload alone by
      :func:`~projmech.bodies.body.choose_body`: the hull for a workload with products both ways
      over at most :data:`~projmech.bodies.body.HULL_MAX_UNIVERSE` elements (2^22), unless it
      is 2-way marginals and the cost model (:mod:`projmech.bodies.cost`) estimates the hull
      more than ``HULL_PREFERENCE`` (2) times slower than the relaxation; the relaxation for 2-way
      marginal workloads beyond; then disjoint tables, then the local polytope of marginal
      tables; a ``ValueError`` for any other workload: pass ``body="hull"``
      to project onto ``K_Q`` regardless, or use :class:`GaussianMechanism`.

    Guarantee: the projection is post-processing, so the release satisfies the Gaussian
    mechanism's guarantee. Since ``B`` is convex and contains the true answers, the error never
    exceeds the Gaussian mechanism's on the same noise, and it obeys the projection mechanism's
    error bound :cite:p:`NTZ13`, ``E (1/k) ||Y_hat - y||^2 <= sigma l*(B) / k`` with ``l*(B)``
    the Gaussian width of ``B`` — both when the public size is the row count (replace-one, or a
    declared size equal to it); with another size the answers aim at ``(n / size) F h``, which
    ``B`` need not contain. For the relaxation, ``l*(L)`` takes the place of ``l*(K_Q)``: the
    proof needs only that the body is convex and contains the true answers, and ``K_Q ⊆ L``
    (every data set's exact marginals are points of L) :cite:p:`DNT15`; the price of the
    relaxation is ``l*(L) / l*(K_Q) >= 1``. Both results are derived in the theory page *Error
    bounds* (``docs/theory/bounds.md``). The projected answers have no closed-form error:
    :meth:`error_bound` gives an upper bound (there is no ``expected_error``).

    Parameters
    ----------
    workload : Workload
        The queries ``F``.
    privacy : ZCDP or ApproxDP
        The guarantee, as for :class:`GaussianMechanism`.
    body : {"auto", "hull", "relaxed", "tables", "local"}
        The body projected onto (above, :func:`~projmech.bodies.body.choose_body`);
        :attr:`body` holds the one chosen.
    solver : str
        Passed to the projection: :func:`project_to_hull` ("auto", "fast", "CLARABEL", "ECOS",
        "OSQP", "SCS") or :func:`project_to_relaxation` ("auto", "admm", or a CVXPY solver that
        handles semidefinite cones, e.g. "CLARABEL").
    tol : float, optional
        The certified tolerance of the projection: for the hull relative to ``(k/2) sigma^2``,
        ``1e-4`` by default, which keeps the answers within ``0.01 sigma`` RMS of the exact
        projection when the noisy answers are within ``sigma sqrt(k)`` of ``K_Q`` (see
        :func:`project_to_hull`); for the relaxation the ADMM's relative gap,
        ``1e-4`` by default (see :func:`project_to_relaxation`; CVXPY solvers use their own
        tolerances).
    relaxation : {"sdp+local", "sdp", "local"}
        The relaxation L, for ``body="relaxed"`` (see :func:`project_to_relaxation`).
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    calibration : {"analytic", "classical"}
        As for :class:`GaussianMechanism`.
    size : int or "estimate", optional
        As for :class:`GaussianMechanism`.
    size_share : float, optional
        As for :class:`GaussianMechanism`.
    noise : {"auto", "discrete", "continuous"}
        As for :class:`GaussianMechanism`.

    Raises
    ------
    TypeError
        If ``workload`` is not a Workload or ``privacy`` is not ZCDP or ApproxDP.
    ValueError
        If ``body="auto"`` finds no body for the workload, an option is invalid, or projecting
        onto the body would hold more memory than this machine has available (the message,
        naming ``workload``, says how much and what to use instead); before any solver runs.

    See Also
    --------
    GaussianMechanism : The same noise without the projection.
    projmech.analysis.bounds.projection_error : The error bound.

    Examples
    --------
    The projected answers are consistent: each marginal's cells are non-negative and sum to 1.
    (``solver="fast"`` is the active-set solver that ``"auto"`` picks here.)

    >>> import numpy as np, projmech as pm
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> workload = pm.marginals(domain, 1)
    >>> mechanism = pm.ProjectionMechanism(workload, pm.ZCDP(0.5), solver="fast", noise="continuous")
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> release.noisy_answers.round(3)
    array([0.417, 0.579, 0.76 , 0.737])
    >>> release.answers.round(3)
    array([0.419, 0.581, 0.512, 0.488])
    >>> mechanism.body, round(mechanism.error_bound(3), 3), round(release.sigma, 3)
    (Hull(solver='fast'), 0.626, 0.667)
    """

    mechanism_name = "projection"
    #: Always set by the constructor.
    body: Body

    @validate_params(body=_BODY, relaxation=_RELAXATION, calibration=_CALIBRATION, noise=_NOISE)
    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, *,
                 body: Literal["auto", "hull", "relaxed", "tables", "local"] = "auto", solver: str = "auto",
                 tol: float | None = None, relaxation: str = "sdp+local",
                 neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 calibration: Literal["analytic", "classical"] = "analytic",
                 size: int | str | None = None, size_share: float | None = None,
                 noise: str = "auto") -> None:
        super().__init__(workload, privacy, neighbouring, size, size_share)
        self.body = choose_body(workload, body, solver=solver, tol=tol, relaxation=relaxation)
        noise = self._gaussian_options(calibration, noise)
        self._calibrate(workload.count_sensitivity(self.neighbouring, 2), workload.is_integer, noise, calibration)

    @classmethod
    def needs_matrix(cls, *, body: str = "auto", solver: str = "auto", **options: Any) -> bool:
        """Whether the mechanism, with these options, needs the workload's explicit matrix.

        A named CVXPY solver builds the problem over the hull's explicit matrix; the active-set
        solver and the relaxation need products only.

        Parameters
        ----------
        body : {"auto", "hull", "relaxed", "tables", "local"}
            As for the constructor.
        solver : str
            As for the constructor.
        **options
            The constructor's other options, which do not matter here.

        Returns
        -------
        bool
            ``True`` when a caller (such as the CLI) must build the workload explicitly.
        """
        return body in ("auto", "hull") and Hull(solver=solver).needs_matrix

    def error_bound(self, n: int, *, measure: Literal["rms", "mean"] = "rms", width: float | None = None) -> float:
        """An upper bound on the expected error of the projected answers at public size ``n``.

        The smaller of the Gaussian mechanism's exact error on the same noise (projection onto a
        convex body containing the true answers never increases the distance to them) and the
        projection mechanism's bound ``sqrt(sigma l*(B) / k)`` :cite:p:`NTZ13`
        (:func:`projmech.analysis.bounds.projection_error`), with ``l*(B)`` the body's Gaussian width.
        Both are derived in the theory page *Error bounds* (``docs/theory/bounds.md``). Valid
        when the public size is the row count (replace-one, or a declared size equal to it),
        where the body contains the true answers.

        Parameters
        ----------
        n : int
            The public size.
        measure : {"rms", "mean"}
            The error measure; for ``"mean"`` the rms bound applies by Jensen.
        width : float, optional
            An upper bound on ``l*(B)``; default the body's certified bound
            (:meth:`Body.width_bound`: the finite-class bound for the hull; none for the
            relaxation, which then has the Gaussian figure alone).

        Returns
        -------
        float
            The bound, a fraction of ``n``.
        """
        gaussian = self._gaussian_error(n, measure)
        if width is None:
            width = self.body.width_bound(self.workload)
        if width is None:
            return gaussian
        return min(gaussian, projection_error(self._answer_std(n), self.workload.num_queries, width=width))


class FactorizationMechanism(_GaussianMeasurement):
    """The factorization (matrix) mechanism, optionally followed by projection.

    The matrix mechanism :cite:p:`LHRMM10`, with the factorization-norm optimal strategy of
    :cite:t:`ENU20` by default. For a factorization ``R M = F`` it measures ``M h + Z`` with
    ``Z ~ N(0, sigma^2 I)`` and releases ``R (M h + Z) = F h + R Z``. Guarantee: the given
    ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)`` w.r.t. the given neighbouring relation,
    because ``sigma`` is calibrated exactly as in :class:`GaussianMechanism` but to the l2
    sensitivity of the strategy's counts ``M c`` (:meth:`Workload.count_sensitivity` of M:
    under replace-one the largest distance between two columns of M; under add/remove
    ``||M||_{1->2}``), and ``R`` is post-processing; the answers are ``R (M c + Z) / size``.

    The answers' noise ``R Z`` is correlated and differs from the strategy's ``sigma``: its root
    mean square per answer is ``sigma ||R||_F / sqrt(k)`` (over the size), the exact rms error
    of an exact factorization (:meth:`expected_error`), which a release reports as
    ``answer_sigma_rms`` beside the strategy's ``sigma``. An approximate factorization adds its
    bias ``E h``, which neither figure counts.

    With ``project=True`` the reconstructed answers are then projected onto a convex body that
    contains the true answers, chosen as :class:`ProjectionMechanism` chooses it (``body``,
    :func:`~projmech.bodies.body.choose_body`): the hull ``K_Q``, or for all 2-way marginals of
    a domain the relaxation ``L``; ``"auto"`` decides from the workload alone, within the
    hull's universe limit and this machine's memory. Post-processing again, so the same
    guarantee, and the error never exceeds the unprojected one on the same noise. The projection
    is the same step as :class:`ProjectionMechanism`'s, with the same tolerance rule, relative
    to the answers' noise (here the root mean square of ``R Z`` per answer), and the release
    reports it (``Release.projection``: the body, the solver and its certificate). The error,
    the approximate factorizations and the projection are derived in the theory page *The
    factorization mechanism and γ(F)* (``docs/theory/factorization.md``).

    The factorization depends only on the public workload, never on the data.

    Parameters
    ----------
    workload : Workload
        The queries ``F``.
    privacy : ZCDP or ApproxDP
        The guarantee, as for :class:`GaussianMechanism`.
    factorization : Factorization, optional
        An exact factorization of ``workload``; default the optimal one for ``objective``,
        :func:`~projmech.factorization.norm.factorization_norm` (``workload``,
        ``objective=objective``) with its other defaults. An approximate factorization
        (``R M = F + E``) is accepted; its answers carry the bias ``E h`` (at most
        ``||E||_{1->2}`` per query in l2).
    objective : {"mean", "max"}, optional
        What the default factorization minimizes: ``"mean"`` (the default), the root-mean-square
        error ``gamma``; ``"max"``, the worst query's error ``gamma_2``. With a given
        ``factorization`` it must be omitted or match the factorization's own.
    project : bool
        Project the reconstructed answers onto ``body``.
    body : {"auto", "hull", "relaxed", "tables", "local"}
        The body projected onto, as for :class:`ProjectionMechanism`; :attr:`body` holds the
        one chosen. Only with ``project=True``.
    solver : str
        For the projection, as for :class:`ProjectionMechanism`. Only with ``project=True``.
    tol : float, optional
        For the projection, as for :class:`ProjectionMechanism`. Only with ``project=True``.
    relaxation : {"sdp+local", "sdp", "local"}
        The relaxation L, for ``body="relaxed"``, as for :class:`ProjectionMechanism`. Only
        with ``project=True``.
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    calibration : {"analytic", "classical"}
        As for :class:`GaussianMechanism`.
    size : int or "estimate", optional
        As for :class:`GaussianMechanism`.
    size_share : float, optional
        As for :class:`GaussianMechanism`.
    noise : {"auto", "discrete", "continuous"}
        As for :class:`GaussianMechanism` (``"auto"`` decides from the strategy's entries).

    Raises
    ------
    TypeError
        If ``workload``, ``privacy``, ``factorization`` or ``project`` has the wrong type.
    ValueError
        If ``factorization`` does not factorize ``workload``, ``objective`` contradicts it, an
        option is invalid, a projection option is given without ``project=True``, or no body
        takes the workload within this machine's memory (all before the strategy is optimized).

    See Also
    --------
    projmech.factorization.norm.factorization_norm : The default strategy.
    GaussianMechanism : The identity strategy's mechanism.

    Examples
    --------
    The 8 prefix queries of an ordered attribute. The strategy's measurements carry
    ``sigma = 0.017`` (fractions of 80 rows); the answers, sums of measurements, carry more:
    ``sigma ||R||_F / sqrt(k) = 0.0254`` RMS.

    >>> import numpy as np, projmech as pm
    >>> data = pm.Dataset(np.arange(8).repeat(10)[:, None], pm.Domain(["x"], [8]))
    >>> mechanism = pm.FactorizationMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> round(release.sigma, 4), round(release.answer_sigma_rms, 4), round(mechanism.expected_error(80), 4)
    (0.017, 0.0254, 0.0254)
    >>> release.answers[:3].round(3)
    array([0.125, 0.246, 0.363])
    """

    mechanism_name = "factorization"
    #: Always set by the constructor.
    factorization: Factorization

    @validate_params(project=FLAG, body=_BODY, relaxation=_RELAXATION, calibration=_CALIBRATION, noise=_NOISE)
    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, *,
                 factorization: Factorization | None = None, objective: str | None = None, project: bool = False,
                 body: Literal["auto", "hull", "relaxed", "tables", "local"] = "auto", solver: str = "auto",
                 tol: float | None = None,
                 relaxation: str = "sdp+local", neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
                 calibration: Literal["analytic", "classical"] = "analytic",
                 size: int | str | None = None, size_share: float | None = None,
                 noise: str = "auto") -> None:
        super().__init__(workload, privacy, neighbouring, size, size_share)
        if factorization is not None and not isinstance(factorization, Factorization):
            raise TypeError(f"factorization: expected a Factorization, got {type(factorization).__name__}")
        if objective is not None:
            check_objective(objective)
            if factorization is not None and factorization.objective != objective:
                raise ValueError(f"objective: {objective!r} differs from the given factorization's "
                                 f"{factorization.objective!r}; omit it, or omit the factorization")
        if project:
            # The body, like ProjectionMechanism's, before the (possibly long) optimization: a
            # workload no body takes, or whose projection would not fit in memory, is refused now.
            chosen: Body | None = choose_body(workload, body, solver=solver, tol=tol, relaxation=relaxation)
        else:
            _refuse_projection_options(body=body, solver=solver, tol=tol, relaxation=relaxation)
            chosen = None
        noise = self._gaussian_options(calibration, noise)
        # Every argument is valid: only now the (possibly long) optimization.
        if factorization is None:
            from ..factorization.norm import factorization_norm

            factorization = factorization_norm(workload, objective=objective or "mean")
        else:
            _check_factorizes(factorization, workload)
        self.factorization = factorization
        self.project = project
        self.body = chosen
        if project:
            self.mechanism_name = "factorization+projection"
        # The measured queries are the strategy M, not F: its sensitivity, and whether its counts
        # are integers (then discrete noise applies), decide the noise.
        strategy = factorization.strategy
        self._calibrate(strategy.count_sensitivity(self.neighbouring, 2), strategy.is_integer, noise, calibration)

    def _measured_counts(self, data: Any) -> np.ndarray:
        # The strategy's counts from the records (table by table for a structured strategy).
        return _counts_of(self.factorization.strategy, data)

    def _reconstruct(self, measurements: np.ndarray) -> np.ndarray:
        return self.factorization.reconstruct(measurements)

    @classmethod
    def needs_matrix(cls, *, project: bool = False, body: str = "auto", solver: str = "auto",
                     **options: Any) -> bool:
        """Whether the mechanism, with these options, needs the workload's explicit matrix.

        The optimizer sees the workload through its structure or its Gram matrix; only the
        projection does, where :meth:`ProjectionMechanism.needs_matrix` does (a named CVXPY
        solver on the hull).

        Parameters
        ----------
        project : bool
            As for the constructor.
        body : {"auto", "hull", "relaxed", "tables", "local"}
            As for the constructor.
        solver : str
            As for the constructor.
        **options
            The constructor's other options, which do not matter here.

        Returns
        -------
        bool
            ``True`` when a caller (such as the CLI) must build the workload explicitly.
        """
        return project and ProjectionMechanism.needs_matrix(body=body, solver=solver)

    def _kernel_threads(self) -> AbstractContextManager[Any]:
        # The strategy's counts and R y are dense products whose sums OpenBLAS splits differently
        # with 1 and 2 threads: on one thread, the same seed gives the same answers anywhere.
        return one_blas_thread()

    def _answer_std(self, n: float) -> float:
        # The answers' noise R Z is correlated: its root mean square per answer. The one formula
        # behind expected_error, error_bound, the projection's tolerance and answer_sigma_rms.
        return self.noise.std / n * self.factorization.reconstruction_norm / math.sqrt(self.workload.num_queries)

    def expected_error(self, n: int, *, measure: Literal["rms"] = "rms") -> float:
        """The exact rms error of the reconstructed answers at public size ``n``.

        ``sqrt(E (1/k) ||R Z||^2) / n = std ||R||_F / (n sqrt(k))``, for ``project=False`` and an
        exact factorization (an approximate one adds its bias ``E h``, not counted here).

        Parameters
        ----------
        n : int
            The public size.
        measure : {"rms"}
            Only ``"rms"``: ``"mean"`` has no closed form for correlated noise (the rms figure
            bounds it, by Jensen).

        Returns
        -------
        float
            The error, a fraction of ``n``.

        Raises
        ------
        ValueError
            With ``project=True`` (the projected answers have no closed form; see
            :meth:`error_bound`), for ``measure="mean"``, or ``n`` not positive.
        """
        n = check_positive_int("n", n)
        if check_measure(measure) != "rms":
            raise ValueError("measure: 'mean' has no closed form for the correlated noise R Z; 'rms' bounds it")
        if self.project:
            raise ValueError("expected_error: the projected answers have no closed-form error; use error_bound(n)")
        return self._answer_std(n)

    def error_bound(self, n: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
        """An upper bound on the expected error at public size ``n``.

        The reconstructed answers' exact rms error, ``std ||R||_F / (n sqrt(k))``, which
        projection can only lower and which bounds the ``"mean"`` measure by Jensen. Valid when
        the public size is the row count and the factorization is exact (an approximate one adds
        its bias ``E h``).

        Parameters
        ----------
        n : int
            The public size.
        measure : {"rms", "mean"}
            The error measure.

        Returns
        -------
        float
            The bound, a fraction of ``n``.
        """
        check_measure(measure)
        return self._answer_std(check_positive_int("n", n))

    def _repr_extra(self) -> str:
        strategy = self.factorization.strategy
        shape = f"{format_count(strategy.num_queries)}x{format_count(strategy.universe_size)}"
        return f", strategy {shape}{super()._repr_extra()}"


def _refuse_projection_options(*, body: str, solver: str, tol: float | None, relaxation: str) -> None:
    """A ValueError naming the first projection option given to a mechanism that does not project
    (``project=False``), which would otherwise be ignored; the constructor checked ``body``."""
    given = {"body": body != "auto", "solver": solver != "auto", "tol": tol is not None,
             "relaxation": relaxation != "sdp+local"}
    for name, is_given in given.items():
        if is_given:
            raise ValueError(f"{name}: applies only to the projection; pass project=True, or omit {name}")


def _counts_of(workload: Workload, data: Any) -> np.ndarray:
    """``workload``'s true counts on a Dataset's records, or on a vector of counts."""
    if isinstance(data, Dataset):
        return workload.answer_counts(data)
    return workload.answer(data)


#: Bytes per universe element of one probe of :func:`_check_factorizes`: the vector, and the
#: temporaries of the two workloads' products with it.
_PROBE_BYTES_PER_ELEMENT = 32


def _check_factorizes(factorization: Factorization, workload: Workload) -> None:
    """A ValueError unless ``factorization`` is one of ``workload`` (the same queries, not only
    the same shape, and factors that reproduce them): otherwise the mechanism would release
    answers to another workload."""
    if factorization.workload.shape != workload.shape:
        raise ValueError(
            f"factorization: it factorizes a {factorization.workload.shape} workload, not {workload.shape}"
        )
    if factorization.workload is workload:
        agree = True
    elif workload.is_implicit or factorization.workload.is_implicit:
        # Equal workloads agree on every vector; products on a few fixed (public) random vectors
        # tell different ones apart with probability 1. Each probe is a vector over the
        # universe, drawn one at a time: refused up front where one does not fit.
        m = workload.universe_size
        too_large = memory_shortfall(_PROBE_BYTES_PER_ELEMENT * float(m))
        if too_large is not None:
            raise ValueError(
                f"factorization: checking that it factorizes {workload.name} takes products with vectors over the "
                f"universe of {format_count(m)} elements, {too_large}; pass the factorization built for this very "
                "workload object (factorization_norm(workload)), which needs no check, or omit it"
            )
        probes = np.random.default_rng(0)
        agree = all(np.allclose(workload.matvec(v), factorization.workload.matvec(v), rtol=1e-9, atol=1e-12)
                    for v in (probes.standard_normal(m) for _ in range(4)))
    else:
        ours, theirs = workload.toarray(), factorization.workload.toarray()
        agree = bool(np.allclose(ours, theirs, rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(ours).max()))))
    if not agree:
        raise ValueError(
            f"factorization: it factorizes {factorization.workload.name}, whose queries differ from "
            f"those of {workload.name} (same shape, different matrix)"
        )
    # The factors themselves: R M must reproduce F (or F + E for a declared approximation E),
    # else the mechanism would release answers to other queries.
    defect = factorization.defect()
    if defect is not None:
        raise ValueError(f"factorization: its factors do not factorize {workload.name}: {defect}")


if TYPE_CHECKING:  # the type checker proves that each mechanism follows the protocol
    _FOLLOW_THE_PROTOCOL: tuple[type[Mechanism], ...] = (GaussianMechanism, LaplaceMechanism, ProjectionMechanism,
                                                         FactorizationMechanism)
