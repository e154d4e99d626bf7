"""The bodies noisy answers are projected onto, behind one protocol, and the choice among them.

A :class:`Body` is a convex set that contains every data set's true answers to a workload: the
hull ``K_Q`` (:class:`Hull`) or, for 2-way marginals, the moment relaxation ``L``
(:class:`Relaxation`). Each says whether it can take a workload and why not
(:meth:`Body.blocker`), whether it needs the workload's explicit matrix
(:attr:`Body.needs_matrix`), what it knows of its own Gaussian width (:meth:`Body.width_bound`),
and projects (:meth:`Body.project`), returning a result with ``answers``, ``stats`` and its
certificate (a witness distribution for the hull, a moment matrix for the relaxation). The
mechanisms hold a body and never restate its rules; :func:`choose_body` is the one place that
picks one.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..validation import check_positive_number
from ..workloads import Workload
from . import hull, relaxation as relaxation_module
from .cost import WorkloadSize, prefers_relaxation
from .hull import ProjectionResult, project_to_hull
from .relaxation import RELAXATIONS, MomentEncoding, RelaxationResult, project_to_relaxation

__all__ = ["BODIES", "HULL_MAX_UNIVERSE", "Body", "Hull", "Relaxation", "choose_body"]

#: What ``body=`` accepts (``"auto"`` picks one of the others, :func:`choose_body`).
BODIES = ("auto", "hull", "relaxed")

#: Largest universe for which ``body="auto"`` may project onto ``K_Q`` itself, by the active-set
#: solver, whose gradients over the universe take O(m) memory: 0.64 s for 2-way marginals at
#: m = 2^20 (README, projection benchmark), 1.8 s at m = 2^22 in a single probe. Below it the
#: cost model decides between the bodies (:func:`choose_body`).
HULL_MAX_UNIVERSE = 2**22


class Body(Protocol):
    """A convex body containing the true answers of every data set, to project noisy answers onto."""

    #: ``"hull"`` or ``"relaxed"`` (the ``body=`` option that names it).
    name: str

    @property
    def needs_matrix(self) -> bool:
        """Whether projecting needs the workload's explicit matrix (an implicit workload will not do)."""

    def blocker(self, workload: Workload) -> str | None:
        """Why this body cannot take ``workload`` (a phrase completing "body ..."), or None."""

    def width_bound(self, workload: Workload) -> float | None:
        """A certified upper bound on the body's Gaussian width ``l*``, or None if it has none."""

    def project(self, workload: Workload, y: np.ndarray, *,
                noise_scale: float | None) -> ProjectionResult | RelaxationResult:
        """The certified projection of ``y`` (noise of standard deviation ``noise_scale`` per answer)."""


class Hull:
    """``K_Q = conv(columns of F)``, projected onto by :func:`~projmech.bodies.hull.project_to_hull`.

    ``solver`` and ``tol`` are that function's; the tolerance is tied to the noise
    (``noise_scale``) the mechanism passes, so every mechanism projecting onto the hull uses
    the same rule.
    """

    name = "hull"

    def __init__(self, *, solver: str = "auto", tol: float | None = None) -> None:
        self.solver = hull.check_solver(solver)
        self.tol = None if tol is None else check_positive_number("tol", tol)

    @property
    def needs_matrix(self) -> bool:
        # The active-set solver ("fast", and "auto" on an implicit workload) needs only products.
        return self.solver not in ("auto", hull.FAST)

    def blocker(self, workload: Workload) -> str | None:
        if self.needs_matrix and workload.is_implicit:
            return f"solver {self.solver!r} needs the explicit matrix of {workload.name}, which is implicit (use 'fast')"
        if not workload.has_adjoint:
            return (f"'hull' projects onto K_Q, which needs the explicit matrix of {workload!r} or its rmatvec "
                    "and columns (Workload.implicit); use body='relaxed' for 2-way marginals")
        return None

    def width_bound(self, workload: Workload) -> float | None:
        from ..geometry import gaussian_width_bound

        return gaussian_width_bound(workload)

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None) -> ProjectionResult:
        return project_to_hull(workload, y, solver=self.solver, tol=self.tol, noise_scale=noise_scale)

    def __repr__(self) -> str:
        return f"Hull(solver={self.solver!r})"


class Relaxation:
    """The moment relaxation ``L`` of 2-way marginals, projected onto by
    :func:`~projmech.bodies.relaxation.project_to_relaxation` (its tolerance is a relative gap,
    which needs no noise level)."""

    name = "relaxed"
    needs_matrix = False

    def __init__(self, *, relaxation: str = "sdp+local", solver: str = "auto", tol: float | None = None) -> None:
        if relaxation not in RELAXATIONS:
            raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")
        relaxation_module.check_solver(solver, relaxation)
        if tol is not None and not check_positive_number("tol", tol) < 1:
            raise ValueError(f"tol: the relaxation's relative gap must lie in (0, 1), got {tol!r}")
        self.relaxation = relaxation
        self.solver = solver
        self.tol = tol

    def blocker(self, workload: Workload) -> str | None:
        if workload.marginal_way != 2 or workload.domain is None:
            return (f"'relaxed' needs the workload of all 2-way marginals of a domain (marginals(domain, 2)); "
                    f"{workload.name} is not")
        try:  # the relaxation's own requirements on the domain, stated once, in MomentEncoding
            MomentEncoding.of(workload.domain)
        except ValueError as error:
            return f"'relaxed' cannot take {workload.name}: {error}"
        return None

    def width_bound(self, workload: Workload) -> float | None:
        return None  # l*(L) >= l*(K_Q); no certified bound on it is known here

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None) -> RelaxationResult:
        domain = workload.domain
        assert domain is not None, "blocker() refuses a workload without a domain"
        if self.tol is None:
            return project_to_relaxation(domain, y, relaxation=self.relaxation, solver=self.solver)
        return project_to_relaxation(domain, y, relaxation=self.relaxation, solver=self.solver, tol=self.tol)

    def __repr__(self) -> str:
        return f"Relaxation(relaxation={self.relaxation!r}, solver={self.solver!r})"


def choose_body(workload: Workload, body: str = "auto", *, solver: str = "auto", tol: float | None = None,
                relaxation: str = "sdp+local") -> Hull | Relaxation:
    """The body to project ``workload``'s answers onto; a ValueError naming ``body`` if none fits.

    ``"hull"`` and ``"relaxed"`` name one. ``"auto"`` decides from the workload alone (never the
    data, since the body decides which point is released):

    - a workload only one body takes gets it: the hull needs products both ways and at most
      :data:`HULL_MAX_UNIVERSE` elements (its memory is O(m)); the relaxation, all 2-way
      marginals of a domain; any other workload is refused;
    - a solver that only one body runs picks it (``"fast"`` the hull, ``"admm"`` the relaxation;
      a CVXPY name, the hull, which runs it on the explicit matrix);
    - with ``solver="auto"``, where both bodies apply, the hull unless the cost model estimates
      its fastest solver more than :data:`~projmech.bodies.cost.HULL_PREFERENCE` times slower
      than the relaxation's ADMM (:func:`~projmech.bodies.cost.prefers_relaxation`); the
      solvers counted are those the workload allows (the CVXPY ones need its explicit matrix,
      so an implicit workload's hull is the active-set solver's). ``relaxation="local"``,
      which the ADMM does not solve and the model does not cover, keeps the hull.

    ``solver`` and ``tol`` go to the chosen body's projection; ``relaxation`` picks L's constraints.
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
    if body not in BODIES:
        raise ValueError(f"body: expected one of {BODIES}, got {body!r}")
    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation: expected one of {RELAXATIONS}, got {relaxation!r}")
    if body == "auto":
        body = _auto_body(workload, solver, relaxation)
    chosen: Hull | Relaxation = (Hull(solver=solver, tol=tol) if body == "hull"
                                 else Relaxation(relaxation=relaxation, solver=solver, tol=tol))
    blocker = chosen.blocker(workload)
    if blocker is not None:
        raise ValueError(f"body: {blocker}")
    return chosen


def _auto_body(workload: Workload, solver: str, relaxation: str) -> str:
    """``"hull"`` or ``"relaxed"`` for ``body="auto"``, by the rule of :func:`choose_body`."""
    hull_fits = workload.has_adjoint and workload.universe_size <= HULL_MAX_UNIVERSE
    relaxed_blocker = Relaxation().blocker(workload)
    if hull_fits and relaxed_blocker is None:
        if solver == "admm":
            return "relaxed"
        if solver != "auto" or relaxation == "local":
            return "hull"
        sizes = WorkloadSize.of(workload)
        return "relaxed" if prefers_relaxation(sizes, hull.auto_solver_order(workload)) else "hull"
    if hull_fits:
        return "hull"
    if relaxed_blocker is None:
        return "relaxed"
    why = ("it is implicit without rmatvec/columns" if not workload.has_adjoint else
           f"its universe of {workload.universe_size:,} elements is above HULL_MAX_UNIVERSE = {HULL_MAX_UNIVERSE:,}")
    raise ValueError(
        f"body: 'auto' finds no tractable body for {workload!r}: the hull K_Q is out ({why}), and "
        f"{relaxed_blocker}. Use GaussianMechanism, or pass body='hull' for a workload with rmatvec and "
        "columns to project onto K_Q regardless of its size"
    )
