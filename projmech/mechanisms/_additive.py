"""The Gaussian, Laplace, projection and factorization mechanisms (:doc:`/theory/privacy`,
:doc:`/theory/bounds`, :doc:`/theory/factorization`)."""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._threads import one_blas_thread
from ..analysis.bounds import check_measure, gaussian_mechanism_error, projection_error
from ..bodies import (
    BODIES,
    RELAXATIONS,
    Body,
    Hull,
    LocalResult,
    ProjectionResult,
    RelaxationResult,
    TablesResult,
    choose_body,
    local_tables,
    memory_shortfall,
    project_measurements,
)
from ..errors import ArgumentValueError
from ..factorization import Factorization, check_objective, table_measurements
from ..privacy import NOISE_KINDS, ZCDP, ApproxDP, Neighbouring, PureDP
from ..solve import Callback
from ..tables import components_of
from ..validation import FLAG, Options, check_positive_int, format_count, validate_params
from ..workloads import Workload
from ._counting import CountingMechanism, Mechanism, _counts_of
from ._release import Release

__all__ = [
    "Release",
    "Mechanism",
    "CountingMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "ProjectionMechanism",
    "FactorizationMechanism",
]

#: The constructors' declared checks (:func:`~projmech.validation.validate_params`).
_NOISE = Options(*NOISE_KINDS)
_CALIBRATION = Options("analytic", "classical")
_BODY = Options(*BODIES)
_RELAXATION = Options(*RELAXATIONS)
#: What the factorization mechanism's projection measures distance in (:doc:`/guide/factorization`).
METRICS = ("answers", "tables", "precision")
_METRIC = Options(*METRICS)
#: The norm each measurements' metric projects in, for the messages.
_NORMS = {"tables": "tables' norm", "precision": "measurements' noise metric"}


class _GaussianMeasurement(CountingMechanism):
    """The Gaussian family's shared options: the privacy type, ``calibration`` and ``noise``."""

    def _gaussian_options(self, calibration: str, noise: str) -> str:
        """Check the privacy type and ``calibration``, set :attr:`calibration`; return the noise kind."""
        if isinstance(self.privacy, PureDP):
            raise TypeError(f"privacy: {type(self).__name__} needs ZCDP or ApproxDP; use LaplaceMechanism for PureDP")
        if calibration == "classical" and isinstance(self.privacy, ApproxDP) and self.privacy.epsilon >= 1:
            raise ValueError(f"calibration='classical' is valid only for epsilon < 1, got "
                             f"epsilon={self.privacy.epsilon}")
        self.calibration = calibration
        # The classical bound is stated for the continuous Gaussian.
        return "continuous" if calibration == "classical" and noise == "auto" else noise

    def _gaussian_error(self, n: int, measure: Literal["rms", "mean"]) -> float:
        """The exact error of the unprojected noisy answers at public size ``n``."""
        n = check_positive_int("n", n)
        return gaussian_mechanism_error(self._answer_std(n), self.workload.num_queries, measure=measure)


class GaussianMechanism(_GaussianMeasurement):
    """The Gaussian mechanism: ``(F c + Z) / size``, ``Z`` Gaussian.

    Guarantee: ``ZCDP(rho)`` or ``ApproxDP(epsilon, delta)`` under ``neighbouring``, the noise
    calibrated to the counts' l2 sensitivity :cite:p:`BS16,BW18,CKS20` (:doc:`/theory/privacy`).

    Parameters
    ----------
    workload, privacy
        The queries ``F`` and the guarantee (ZCDP or ApproxDP).
    neighbouring : {"replace-one", "add-remove"}
        The relation the guarantee is stated for.
    calibration : {"analytic", "classical"}
        ``"classical"``: ``sqrt(2 ln(1.25/delta))/epsilon`` (epsilon < 1, continuous noise).
    size, size_share
        Under add/remove (required): a declared public size, or ``"estimate"`` and the share spent on it.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: the exact discrete Gaussian for integer entries, numpy's otherwise.

    Examples
    --------
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), pm.Domain(["a", "b"], [2, 2]))
    >>> mechanism = pm.GaussianMechanism(pm.marginals(data.domain, 1), pm.ZCDP(0.5), noise="continuous")
    >>> round(mechanism.sensitivity(), 6), round(mechanism.expected_error(3), 4)
    (2.0, 0.6667)
    >>> mechanism.release(data, rng=np.random.default_rng(0)).answers.round(3)
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
        """The exact expected error of the answers at public size ``n``, a fraction of ``n``.

        Parameters
        ----------
        n, measure
            The public size; ``"rms"`` (``std / n``) or ``"mean"`` (``E[||Z|| / sqrt k] / n``).

        Returns
        -------
        float
        """
        return self._gaussian_error(n, measure)


class LaplaceMechanism(CountingMechanism):
    """The Laplace mechanism :cite:p:`DMNS06`: ``(F c + Lap(b)^k) / size``, ``b = Delta_1 / epsilon``, ``PureDP``.

    Parameters
    ----------
    workload, privacy
        The queries ``F`` and the guarantee (PureDP), under ``neighbouring``.
    neighbouring, size, size_share
        As for :class:`GaussianMechanism`.
    noise : {"auto", "discrete", "continuous"}
        ``"auto"``: the discrete Laplace (same ``b``, same guarantee) for integer entries.

    Examples
    --------
    >>> workload = pm.marginals(pm.Domain(["a", "b"], [2, 2]), 1)
    >>> mechanism = pm.LaplaceMechanism(workload, pm.PureDP(1.0), noise="continuous")
    >>> mechanism.sensitivity(), mechanism.noise.scale, round(mechanism.expected_error(3), 3)
    (4.0, 4.0, 1.886)
    """

    mechanism_name = "laplace"
    # Its l1 sensitivity comes from the workload's column norms and its counts from the records'
    # tables, both without the matrix.
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
        """The exact rms error of the answers at public size ``n``: ``std / n``.

        Parameters
        ----------
        n, measure
            The public size; only ``"rms"`` (``"mean"`` has no closed form for Laplace noise).

        Returns
        -------
        float
        """
        n = _check_rms(n, measure, "measure: 'mean' has no closed form for Laplace noise; 'rms' bounds it from above")
        return self._answer_std(n)


class ProjectionMechanism(_GaussianMeasurement):
    """The projection mechanism :cite:p:`NTZ13`: Gaussian answers projected onto a convex body.

    It releases ``Pi_B(F h + Z)``, the noise and guarantee of :class:`GaussianMechanism`; the
    projection is post-processing, never farther from the truth (:doc:`/theory/projection`).

    Parameters
    ----------
    workload, privacy
        The queries ``F`` and the guarantee (ZCDP or ApproxDP).
    body : {"auto", "hull", "relaxed", "tables", "local"}
        The body (:mod:`projmech.bodies`), refused up front if none fits in memory.
    solver, tol, relaxation
        The projection's solver, its tolerance relative to the noise, the relaxation for ``"relaxed"``.
    neighbouring, calibration, size, size_share, noise
        As for :class:`GaussianMechanism`.

    Examples
    --------
    >>> domain = pm.Domain(["a", "b"], [2, 2])
    >>> data = pm.Dataset(np.array([[0, 1], [1, 1], [1, 0]]), domain)
    >>> mechanism = pm.ProjectionMechanism(pm.marginals(domain, 1), pm.ZCDP(0.5), solver="fast", noise="continuous")
    >>> mechanism.release(data, rng=np.random.default_rng(0)).answers.round(3)
    array([0.419, 0.581, 0.512, 0.488])
    >>> mechanism.body, round(mechanism.error_bound(3), 3)
    (Hull(solver='fast'), 0.626)
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
        """Whether the mechanism needs the explicit matrix: only a named CVXPY solver on the hull does.

        Parameters
        ----------
        body, solver, **options
            As for the constructor (the other options are ignored).

        Returns
        -------
        bool
        """
        return body in ("auto", "hull") and Hull(solver=solver).needs_matrix

    def error_bound(self, n: int, *, measure: Literal["rms", "mean"] = "rms", width: float | None = None) -> float:
        """An upper bound on the expected error at public size ``n``: at most the Gaussian mechanism's :cite:p:`NTZ13`.

        Parameters
        ----------
        n, measure
            The public size (the bound holds when it is the row count) and the error measure.
        width : float, optional
            An upper bound on the Gaussian width ``l*(B)``; default :meth:`Body.width_bound`.

        Returns
        -------
        float
        """
        gaussian = self._gaussian_error(n, measure)
        if width is None:
            width = self.body.width_bound(self.workload)
        if width is None:
            return gaussian
        return min(gaussian, projection_error(self._answer_std(n), self.workload.num_queries, width=width))


class FactorizationMechanism(_GaussianMeasurement):
    """The factorization (matrix) mechanism :cite:p:`LHRMM10`, optionally followed by projection.

    For ``R M = F`` it releases ``R (M c + Z) / size``, ``Z`` calibrated to the strategy ``M`` as in
    :class:`GaussianMechanism` (same guarantee; ``R`` is post-processing). The default strategy, optimal in
    the factorization norm :cite:p:`ENU20`, depends only on the workload (:doc:`/theory/factorization`).

    Parameters
    ----------
    workload, privacy
        The queries ``F`` and the guarantee (ZCDP or ApproxDP).
    factorization : Factorization, optional
        Default :func:`~projmech.factorization.factorization_norm`; an approximate one adds a bias.
    objective : {"mean", "max"}, optional
        What the default factorization minimizes (RMS or worst query error).
    project, body, solver, tol, relaxation
        Whether to project as :class:`ProjectionMechanism` does, and its options.
    metric : {"answers", "tables", "precision"}
        What the projection measures distance in. ``"answers"``: the answers ``R y`` onto ``body`` in the
        workload's norm (never farther from the true answers). ``"tables"``, ``"precision"``: the
        strategy's measurements of a marginal workload's tables onto the local polytope (``body``
        ``"auto"`` or ``"local"``), in the tables' norm or the noise's own (generalized least squares),
        by :func:`~projmech.bodies.project_measurements`; the answers are the workload's on the
        projected tables. Either is post-processing of the noisy measurements: same guarantee.
    neighbouring, calibration, size, size_share, noise
        As for :class:`GaussianMechanism` (``"auto"`` noise looks at the strategy's entries).

    Examples
    --------
    >>> data = pm.Dataset(np.arange(8).repeat(10)[:, None], pm.Domain(["x"], [8]))
    >>> mechanism = pm.FactorizationMechanism(pm.prefix(8), pm.ZCDP(0.5), noise="continuous")
    >>> release = mechanism.release(data, rng=np.random.default_rng(0))
    >>> round(release.sigma, 4), round(release.answer_sigma_rms, 4), round(mechanism.expected_error(80), 4)
    (0.017, 0.0254, 0.0254)
    >>> tables = pm.FactorizationMechanism(pm.marginals(pm.Domain(["a", "b"], [2, 3]), 2), pm.ZCDP(0.5),
    ...                                    project=True, metric="precision")
    >>> tables.body, tables.metric
    (Local(), 'precision')
    """

    mechanism_name = "factorization"
    #: Always set by the constructor.
    factorization: Factorization

    @validate_params(project=FLAG, metric=_METRIC, body=_BODY, relaxation=_RELAXATION, calibration=_CALIBRATION,
                     noise=_NOISE)
    def __init__(self, workload: Workload, privacy: ZCDP | ApproxDP, *,
                 factorization: Factorization | None = None, objective: str | None = None, project: bool = False,
                 metric: Literal["answers", "tables", "precision"] = "answers",
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
            chosen: Body | None = (choose_body(workload, body, solver=solver, tol=tol, relaxation=relaxation)
                                   if metric == "answers" else _measurement_body(workload, metric, body, solver, tol,
                                                                                 relaxation))
        else:
            _refuse_projection_options(body=body, solver=solver, tol=tol, relaxation=relaxation, metric=metric)
            chosen = None
        if factorization is not None and metric != "answers":
            _check_measures_tables(factorization, workload, metric)
        noise = self._gaussian_options(calibration, noise)
        # Every argument is valid: only now the (possibly long) optimization.
        if factorization is None:
            from ..factorization import factorization_norm

            # The measurements' metrics need the structured strategy, whose blocks measure tables;
            # a marginal workload (checked above) always has one.
            factorization = factorization_norm(workload, objective=objective or "mean",
                                               method="auto" if metric == "answers" else "structured")
            if metric != "answers":
                _check_measures_tables(factorization, workload, metric)
        else:
            _check_factorizes(factorization, workload)
        self.factorization = factorization
        self.project = project
        self.metric = metric
        # The projection's tolerance, relative to the noise as for every body (the local body checked it).
        self._measurement_tol = tol
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

    def _project(self, noisy: np.ndarray, measured: np.ndarray, size: float, callback: Callback
                 ) -> tuple[np.ndarray, ProjectionResult | RelaxationResult | TablesResult | LocalResult]:
        if self.metric == "answers":
            return super()._project(noisy, measured, size, callback)
        # The measurements as Release.measurements() gives them: values over size, deviation sigma
        # (positive: the structured strategies' entries are not integers, so their noise is
        # continuous). A LocalError propagates, as project_to_local's does from the answers'.
        measurements = table_measurements(self.factorization.strategy, measured, self.noise.std / size)
        assert measurements is not None, "the constructor checked that the strategy measures tables"
        result = project_measurements(self._sizes(), measurements, metric=self.metric, tol=self._measurement_tol,
                                      callback=callback)
        return _answers_of_tables(self.workload, self._sizes(), result), result

    def _sizes(self) -> tuple[int, ...]:
        """The domain's attribute sizes (a marginal workload's, checked by the constructor)."""
        domain = self.workload.domain
        assert domain is not None, "the constructor checked that the workload has marginal tables"
        return tuple(domain.sizes)

    @classmethod
    def needs_matrix(cls, *, project: bool = False, body: str = "auto", solver: str = "auto",
                     metric: str = "answers", **options: Any) -> bool:
        """Whether the mechanism needs the explicit matrix: only its projection of the answers may.

        Parameters
        ----------
        project, body, solver, metric, **options
            As for the constructor.

        Returns
        -------
        bool
        """
        return project and metric == "answers" and ProjectionMechanism.needs_matrix(body=body, solver=solver)

    def _kernel_threads(self) -> AbstractContextManager[Any]:
        # The strategy's counts and R y are dense products whose sums OpenBLAS splits differently
        # with 1 and 2 threads: on one thread, the same seed gives the same answers anywhere.
        return one_blas_thread()

    def _answer_std(self, n: float) -> float:
        # The answers' noise R Z is correlated: its root mean square per answer. The one formula
        # behind expected_error, error_bound, the projection's tolerance and answer_sigma_rms.
        return self.noise.std / n * self.factorization.reconstruction_norm / math.sqrt(self.workload.num_queries)

    def expected_error(self, n: int, *, measure: Literal["rms"] = "rms") -> float:
        """The exact rms error of the unprojected answers at public size ``n``: ``std ||R||_F / (n sqrt(k))``.

        Parameters
        ----------
        n, measure
            As for :meth:`LaplaceMechanism.expected_error`.

        Returns
        -------
        float
        """
        n = _check_rms(n, measure, "measure: 'mean' has no closed form for the correlated noise R Z; 'rms' bounds it")
        if self.project:
            raise ValueError("expected_error: the projected answers have no closed-form error; use error_bound(n)")
        return self._answer_std(n)

    def error_bound(self, n: int, *, measure: Literal["rms", "mean"] = "rms") -> float:
        """An upper bound on the expected error at public size ``n``: the unprojected answers' rms error.

        Refused for ``metric="tables"`` or ``"precision"``: those projections are never farther from
        the truth in another norm than the answers', so the unprojected error bounds nothing.

        Parameters
        ----------
        n, measure
            The public size, and the error measure (the rms bounds the mean).

        Returns
        -------
        float
        """
        check_measure(measure)
        n = check_positive_int("n", n)
        if self.metric != "answers":
            raise ValueError(f"error_bound: metric={self.metric!r} projects in the {_NORMS[self.metric]}, not the "
                             "answers': their unprojected rms error bounds nothing; use metric='answers' for the bound")
        return self._answer_std(n)

    def _repr_extra(self) -> str:
        strategy = self.factorization.strategy
        shape = f"{format_count(strategy.num_queries)}x{format_count(strategy.universe_size)}"
        metric = "" if self.metric == "answers" else f", metric={self.metric!r}"
        return f", strategy {shape}{super()._repr_extra()}{metric}"


def _check_rms(n: int, measure: str, refusal: str) -> int:
    """``n`` checked positive; a ValueError with ``refusal`` unless ``measure`` is ``"rms"``."""
    n = check_positive_int("n", n)
    if check_measure(measure) != "rms":
        raise ValueError(refusal)
    return n


def _refuse_projection_options(*, body: str, solver: str, tol: float | None, relaxation: str,
                               metric: str = "answers") -> None:
    """A ValueError naming the first projection option given to a mechanism that does not project."""
    given = {"metric": metric != "answers", "body": body != "auto", "solver": solver != "auto", "tol": tol is not None,
             "relaxation": relaxation != "sdp+local"}
    for name, is_given in given.items():
        if is_given:
            raise ValueError(f"{name}: applies only to the projection; pass project=True, or omit {name}")


def _measurement_body(workload: Workload, metric: str, body: str, solver: str, tol: float | None,
                      relaxation: str) -> Body:
    """The local polytope, the one body the measurements' metrics project onto (a ValueError naming
    ``metric`` for another body or a workload without marginal tables)."""
    if body not in ("auto", "local"):
        raise ArgumentValueError("metric", f"{metric!r} projects the strategy's measurements onto the local polytope, "
                                 f"which body {body!r} is not", alternatives=[("body", "local"), ("metric", "answers")])
    model = local_tables(workload)
    if isinstance(model, str):
        raise ArgumentValueError("metric", f"{metric!r} projects measurements of a marginal workload's tables, but "
                                 f"{model}", alternatives=[("metric", "answers")])
    if not model.attributes:
        raise ArgumentValueError("metric", f"{metric!r} projects measurements of a marginal workload's tables, but "
                                 f"{workload.name} reads no attribute (its answers are totals)",
                                 alternatives=[("metric", "answers")])
    return choose_body(workload, "local", solver=solver, tol=tol, relaxation=relaxation)


def _check_measures_tables(factorization: Factorization, workload: Workload, metric: str) -> None:
    """A ValueError naming ``metric`` unless the strategy measures tables in blocks the measurements'
    projection takes (:func:`~projmech.tables.components_of`), covering each of the workload's tables."""
    strategy = factorization.strategy
    # The queries' structure alone decides; their values do not matter.
    measurements = table_measurements(strategy, np.zeros(strategy.num_queries), 1.0)
    domain = workload.domain
    structured = "the structured strategy of a marginal workload (factorization_norm's residual or Kronecker one)"
    if measurements is None or domain is None:
        raise ArgumentValueError("metric", f"{metric!r} projects measurements of tables, but the strategy "
                                 f"({strategy.name}) is a matrix over the universe", remedies=[structured],
                                 alternatives=[("metric", "answers")])
    sizes = tuple(domain.sizes)
    try:
        components_of(sizes, measurements)
    except ValueError as error:
        raise ArgumentValueError("metric", f"{metric!r} cannot project the strategy's measurements: {error}",
                                 remedies=[structured], alternatives=[("metric", "answers")]) from None
    measured = [set(measurement.attributes) for measurement in measurements]
    model = local_tables(workload)
    for table in [] if isinstance(model, str) else model.attributes:
        varying = {a for a in table if sizes[a] > 1}
        if not any(varying <= attributes for attributes in measured):
            raise ArgumentValueError("metric", f"{metric!r} reads the workload's table on attributes {list(table)} off "
                                     "the projected tables, but no measurement reads them together",
                                     remedies=[structured], alternatives=[("metric", "answers")])


def _answers_of_tables(workload: Workload, sizes: tuple[int, ...], result: LocalResult) -> np.ndarray:
    """The workload's answers on the projected tables: each of its tables summed from the smallest
    projected one holding its attributes (an attribute of one value adds an axis of one cell)."""
    model = local_tables(workload)
    assert not isinstance(model, str), "the constructor checked that the workload has marginal tables"
    values = []
    for table in model.attributes:
        cells = result.cells_on(a for a in table if sizes[a] > 1)
        if cells is None:
            raise ValueError(f"metric: the projected tables {[list(t) for t in result.tables]} hold no table "
                             f"on the workload's attributes {list(table)}")
        values.append(cells.ravel())
    return model.answers(np.concatenate(values), workload.num_queries)


#: Bytes per universe element of one probe of :func:`_check_factorizes`: the vector, and the
#: temporaries of the two workloads' products with it.
_PROBE_BYTES_PER_ELEMENT = 32


def _check_factorizes(factorization: Factorization, workload: Workload) -> None:
    """A ValueError unless ``factorization`` factorizes ``workload``."""
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
