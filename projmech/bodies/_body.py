"""The bodies noisy answers are projected onto, behind one protocol (:class:`Body`), and the choice
among them: :func:`choose_body` is the one place that picks one, and refuses, before any solver
runs, a body whose projection would not fit in memory."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol, TypeVar

import numpy as np

from ..solve import Callback, ProgressBar
from ..validation import check_positive_number, format_count
from ..workloads import Workload
from . import _hull as hull
from . import _relaxation as relaxation_module
from ._cost import WorkloadSize, prefers_relaxation
from ._hull import ProjectionResult, project_to_hull
from ._local import LOCAL_BYTES_PER_CELL, LocalResult, local_tables, project_to_local
from ._memory import memory_shortfall
from ._relaxation import MomentEncoding, RelaxationResult, check_relaxation, project_to_relaxation
from ._tables import DENSE_TABLE_ENTRIES, TablesResult, project_to_tables, table_groups

__all__ = ["BODIES", "HULL_MAX_UNIVERSE", "PROGRESS_DELAY", "Body", "Hull", "Relaxation", "Tables", "Local",
           "ProjectionProgress", "choose_body", "BodyFit", "body_fit", "body_solvers"]

_Result = TypeVar("_Result")

#: What ``body=`` accepts (``"auto"`` picks one of the others, :func:`choose_body`).
BODIES = ("auto", "hull", "relaxed", "tables", "local")

#: Largest universe for which ``body="auto"`` may project onto ``K_Q`` itself, by the active-set
#: solver, whose gradients over the universe take O(m) memory (its times: benchmarks/README.md).
#: Below it the cost model decides between the bodies (:func:`choose_body`).
HULL_MAX_UNIVERSE = 2**22

#: The memory model of the relaxation L (:meth:`Relaxation.memory`), in bytes per entry of its
#: ``(D+1) x (D+1)`` moment matrix, from the peak resident memory measured: the ADMM holds a few
#: moment matrices, their eigendecompositions and the cells (240-540 measured, binary and
#: one-hot domains, D = 200 to 800); a CVXPY solver, ``local``'s linear program (1,600-2,900,
#: Clarabel and SCS, D = 100 and 150) or, per entry and per unit of ``D + 1``, a semidefinite
#: relaxation's cone program (about 1,100, Clarabel, D = 40 and 60; SCS far less).
RELAXATION_ADMM_BYTES = 600
RELAXATION_LOCAL_BYTES = 4000
RELAXATION_CONE_BYTES = 1500

#: Seconds a projection runs before it shows its progress (on a terminal only): shorter ones
#: stay silent (:class:`ProjectionProgress`).
PROGRESS_DELAY = 5.0


class Body(Protocol):
    """A convex body containing the true answers of every data set, to project noisy answers onto."""

    #: ``"hull"``, ``"relaxed"``, ``"tables"`` or ``"local"`` (the ``body=`` option that names it).
    name: str

    @property
    def needs_matrix(self) -> bool:
        """Whether projecting needs the workload's explicit matrix (an implicit workload will not do)."""

    def blocker(self, workload: Workload) -> str | None:
        """Why this body cannot take ``workload`` (a phrase completing "body ..."), or None."""

    def memory(self, workload: Workload) -> float:
        """Bytes projecting ``workload``'s answers onto this body holds at its peak (for a
        workload the body takes)."""

    def memory_blocker(self, workload: Workload) -> str | None:
        """Why projecting ``workload``'s answers onto this body cannot fit in this machine's
        memory (a phrase naming no argument), or None."""

    def width_bound(self, workload: Workload) -> float | None:
        """A certified upper bound on the body's Gaussian width ``l*``, or None if it has none."""

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None,
                callback: Callback | None = None) -> ProjectionResult | RelaxationResult | TablesResult | LocalResult:
        """The certified projection of ``y`` (noise of standard deviation ``noise_scale`` per
        answer), reporting ``callback(iteration, gap)`` as its solver goes."""


class _HullOptions:
    """The hull projection's ``solver`` and ``tol``, which the hull and the tables (a hull per table) share."""

    def __init__(self, *, solver: str = "auto", tol: float | None = None) -> None:
        self.solver = hull.check_solver(solver)
        self.tol = None if tol is None else check_positive_number("tol", tol)

    def _project_by(self, project: Callable[..., _Result], workload: Workload, y: np.ndarray,
                    noise_scale: float | None, callback: Callback | None) -> _Result:
        return project(workload, y, solver=self.solver, tol=self.tol, noise_scale=noise_scale, callback=callback)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(solver={self.solver!r})"


def _memory_blocker(memory: float, holds: str) -> str | None:
    """Why a projection holding ``memory`` bytes does not fit (``holds`` says what it holds), or None."""
    shortfall = memory_shortfall(memory)
    return None if shortfall is None else f"{holds}{shortfall}"


class Hull(_HullOptions):
    """``K_Q = conv(columns of F)``, projected onto by :func:`~projmech.bodies.project_to_hull`,
    with a tolerance tied to the noise the mechanism passes."""

    name = "hull"

    @property
    def needs_matrix(self) -> bool:
        # The active-set solver ("fast", and "auto" on an implicit workload) needs only products.
        return self.solver not in ("auto", hull.FAST)

    def blocker(self, workload: Workload) -> str | None:
        if self.needs_matrix and workload.is_implicit:
            return (f"solver {self.solver!r} needs the explicit matrix of {workload.name}, which is implicit "
                    "(use 'fast')")
        if not workload.has_adjoint:
            return (f"'hull' projects onto K_Q, which needs the explicit matrix of {workload!r} or its rmatvec "
                    "and columns (Workload.implicit); use body='relaxed' for 2-way marginals")
        return None

    def memory(self, workload: Workload) -> float:
        # The model lives beside the solvers it describes.
        return hull.projection_memory(workload, self.solver)

    def memory_blocker(self, workload: Workload) -> str | None:
        return hull.memory_blocker(workload, self.solver)

    def width_bound(self, workload: Workload) -> float | None:
        from ..analysis.geometry import gaussian_width_bound

        return gaussian_width_bound(workload)

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None,
                callback: Callback | None = None) -> ProjectionResult:
        return self._project_by(project_to_hull, workload, y, noise_scale, callback)


class Relaxation:
    """The moment relaxation ``L`` of 2-way marginals (:func:`~projmech.bodies.project_to_relaxation`)."""

    name = "relaxed"
    needs_matrix = False

    def __init__(self, *, relaxation: str = "sdp+local", solver: str = "auto", tol: float | None = None) -> None:
        check_relaxation(relaxation)
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

    def memory(self, workload: Workload) -> float:
        # Polynomial in the attributes (the moment matrix), never the universe: the solver that
        # runs decides the power (RELAXATION_*_BYTES).
        side = float(_moment_side(workload))
        if relaxation_module.check_solver(self.solver, self.relaxation) == "admm":
            return RELAXATION_ADMM_BYTES * side**2
        if self.relaxation == "local":
            return RELAXATION_LOCAL_BYTES * side**2
        return RELAXATION_CONE_BYTES * side**3

    def memory_blocker(self, workload: Workload) -> str | None:
        shortfall = memory_shortfall(self.memory(workload))
        if shortfall is None:
            return None
        side = format_count(_moment_side(workload))
        return f"projecting onto the relaxation L holds moment matrices of {side} x {side} entries, {shortfall}"

    def width_bound(self, workload: Workload) -> float | None:
        return None  # l*(L) >= l*(K_Q); no certified bound on it is known here

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None,
                callback: Callback | None = None) -> RelaxationResult:
        domain = workload.domain
        assert domain is not None, "blocker() refuses a workload without a domain"
        if self.tol is None:
            return project_to_relaxation(domain, y, relaxation=self.relaxation, solver=self.solver, callback=callback)
        return project_to_relaxation(domain, y, relaxation=self.relaxation, solver=self.solver, tol=self.tol,
                                     callback=callback)

    def __repr__(self) -> str:
        return f"Relaxation(relaxation={self.relaxation!r}, solver={self.solver!r})"


class Tables(_HullOptions):
    """``K_Q`` of a workload whose tables are disjoint, projected onto table by table over their
    cells (:func:`~projmech.bodies.project_to_tables`)."""

    name = "tables"
    needs_matrix = False

    def blocker(self, workload: Workload) -> str | None:
        groups = table_groups(workload)
        return f"'tables' cannot take it: {groups}" if isinstance(groups, str) else None

    def memory(self, workload: Workload) -> float:
        groups = table_groups(workload)
        if isinstance(groups, str):
            return 0.0
        # Each table's query matrix, held for the release (a small one dense, 8 bytes an entry;
        # else sparse, 8 bytes of value and 4 of index a stored entry), and the hull's projection
        # over one table's cells at a time.
        matrices = 0.0
        for rows, attributes, stored in zip(groups.rows, groups.attributes, groups.stored_entries):
            entries = rows.size * math.prod(groups.sizes[a] for a in attributes)
            matrices += 8.0 * entries if entries <= DENSE_TABLE_ENTRIES else 12.0 * stored
        largest = max((hull.projection_memory(Workload(groups.matrix(group)), self.solver)
                       for group in range(len(groups.attributes))), default=0.0)
        return matrices + largest

    def memory_blocker(self, workload: Workload) -> str | None:
        return _memory_blocker(self.memory(workload), "projecting onto its tables holds their query matrices, ")

    def width_bound(self, workload: Workload) -> float | None:
        return None

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None,
                callback: Callback | None = None) -> TablesResult:
        return self._project_by(project_to_tables, workload, y, noise_scale, callback)


class Local:
    """The local polytope of a marginal workload's tables (:func:`~projmech.bodies.project_to_local`):
    ``K_Q`` itself where the tables are acyclic, a relaxation elsewhere."""

    name = "local"
    needs_matrix = False

    def __init__(self, *, solver: str = "auto", tol: float | None = None) -> None:
        if solver != "auto":
            raise ValueError(f"solver: body 'local' runs its own dual L-BFGS; expected 'auto', got {solver!r}")
        self.solver = solver
        self.tol = None if tol is None else check_positive_number("tol", tol)

    def blocker(self, workload: Workload) -> str | None:
        model = local_tables(workload)
        return f"'local' cannot take it: {model}" if isinstance(model, str) else None

    def memory(self, workload: Workload) -> float:
        model = local_tables(workload)
        # The dual L-BFGS's vectors over the tables' cells (LOCAL_BYTES_PER_CELL), and the answers.
        return 0.0 if isinstance(model, str) else LOCAL_BYTES_PER_CELL * model.cells + 24.0 * workload.num_queries

    def memory_blocker(self, workload: Workload) -> str | None:
        return _memory_blocker(self.memory(workload), "projecting onto the local polytope of its tables ")

    def width_bound(self, workload: Workload) -> float | None:
        return None

    def project(self, workload: Workload, y: np.ndarray, *, noise_scale: float | None,
                callback: Callback | None = None) -> LocalResult:
        return project_to_local(workload, y, tol=self.tol, noise_scale=noise_scale, callback=callback)

    def __repr__(self) -> str:
        return "Local()"


def _moment_side(workload: Workload) -> int:
    """``D + 1``, the side of the moment matrix of the relaxation of ``workload``'s domain."""
    domain = workload.domain
    assert domain is not None, "blocker() refuses a workload without a domain"
    return relaxation_module.moment_dimension(domain.sizes) + 1


def choose_body(workload: Workload, body: str = "auto", *, solver: str = "auto", tol: float | None = None,
                relaxation: str = "sdp+local") -> Hull | Relaxation | Tables | Local:
    """The body to project ``workload``'s answers onto; a ValueError naming ``body`` if none fits.

    ``"auto"`` decides from the workload alone (never the data: the body decides which point is
    released): the one body that takes it or runs ``solver``; where hull and relaxation both do,
    the hull unless the cost model estimates it :data:`~projmech.bodies._cost.HULL_PREFERENCE`
    times slower; where neither does, disjoint tables, else the local polytope. A body whose
    projection would not fit in memory is refused here, before any solver runs
    (:doc:`/guide/projection`).
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload: expected a Workload, got {type(workload).__name__}")
    if body not in BODIES:
        raise ValueError(f"body: expected one of {BODIES}, got {body!r}")
    check_relaxation(relaxation)
    if body == "auto":
        body = _auto_body(workload, solver, relaxation)
    chosen: Hull | Relaxation | Tables | Local
    if body == "hull":
        chosen = Hull(solver=solver, tol=tol)
    elif body == "tables":
        chosen = Tables(solver=solver, tol=tol)
    elif body == "local":
        chosen = Local(solver=solver, tol=tol)
    else:
        chosen = Relaxation(relaxation=relaxation, solver=solver, tol=tol)
    blocker = chosen.blocker(workload)
    if blocker is not None:
        raise ValueError(f"body: {blocker}")
    too_large = chosen.memory_blocker(workload)
    if too_large is not None:
        raise ValueError(f"workload: {too_large}; use {_memory_remedies(workload, chosen, relaxation)}")
    return chosen


def _memory_remedies(workload: Workload, chosen: Hull | Relaxation | Tables | Local, relaxation: str) -> str:
    """What to use instead of a body whose projection does not fit in memory, for :func:`choose_body`."""
    remedies = []
    if isinstance(chosen, Hull):
        if chosen.solver != "auto" and Hull().memory_blocker(workload) is None:
            remedies.append("solver='auto' (which runs only the solvers that fit)")
        if _relaxation_fits(workload, Relaxation(relaxation=relaxation)):
            remedies.append("body='relaxed' (the relaxation L, whose size does not grow with the universe)")
    elif _hull_fits(workload, "auto", limit=False):
        remedies.append("body='hull' (the hull K_Q)")
    remedies += ["fewer or coarser attributes",
                 "answers without projection (GaussianMechanism, or FactorizationMechanism with project=False)"]
    return ", ".join(remedies[:-1]) + ", or " + remedies[-1]


def _hull_fits(workload: Workload, solver: str, *, limit: bool = True) -> bool:
    """Whether the hull takes ``workload`` (within :data:`HULL_MAX_UNIVERSE` where ``limit``) and its
    projection with ``solver`` fits in memory."""
    if not workload.has_adjoint or (limit and workload.universe_size > HULL_MAX_UNIVERSE):
        return False
    candidate = Hull(solver=solver if _hull_runs(solver) else "auto")
    # A solver the workload does not allow (a CVXPY one on an implicit workload) is refused by
    # the hull's blocker once chosen, in its own words, not here as a matter of memory.
    return candidate.blocker(workload) is not None or candidate.memory_blocker(workload) is None


def _hull_runs(solver: str) -> bool:
    try:
        hull.check_solver(solver)
    except ValueError:
        return False
    return True


def _relaxation_fits(workload: Workload, candidate: Relaxation) -> bool:
    return candidate.blocker(workload) is None and candidate.memory_blocker(workload) is None


def _relaxation_for(solver: str, relaxation: str) -> Relaxation:
    """The relaxation ``body="auto"`` would run: with ``solver`` where it runs it, else its own."""
    try:
        return Relaxation(relaxation=relaxation, solver=solver)
    except ValueError:
        return Relaxation(relaxation=relaxation)


def _auto_body(workload: Workload, solver: str, relaxation: str) -> str:
    """``"hull"``, ``"relaxed"``, ``"tables"`` or ``"local"`` for ``body="auto"``, by the rule of
    :func:`choose_body`."""
    hull_fits = _hull_fits(workload, solver)
    relaxed = _relaxation_for(solver, relaxation)
    relaxed_blocker = relaxed.blocker(workload)
    if relaxed_blocker is None:
        relaxed_blocker = relaxed.memory_blocker(workload)
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
    if not workload.has_adjoint:
        why = "it is implicit without rmatvec/columns"
    elif workload.universe_size > HULL_MAX_UNIVERSE:
        why = (f"its universe of {format_count(workload.universe_size)} elements is above HULL_MAX_UNIVERSE = "
               f"{HULL_MAX_UNIVERSE:,}")
    else:
        why = str(Hull(solver=solver if _hull_runs(solver) else "auto").memory_blocker(workload))
    # Disjoint tables are K_Q itself over their cells: taken where the hull and L are out.
    tables = Tables(solver=solver if _hull_runs(solver) else "auto")
    if tables.blocker(workload) is None and tables.memory_blocker(workload) is None:
        return "tables"
    # Overlapping marginal tables: their local polytope, K_Q itself where they are acyclic.
    local = Local()
    if solver == "auto" and local.blocker(workload) is None and local.memory_blocker(workload) is None:
        return "local"
    # body="hull" goes beyond HULL_MAX_UNIVERSE, never beyond the memory: suggested only where it fits.
    regardless = (", or pass body='hull' to project onto K_Q regardless of HULL_MAX_UNIVERSE"
                  if _hull_fits(workload, solver, limit=False) else "")
    raise ValueError(
        f"body: 'auto' finds no tractable body for {workload!r}: the hull K_Q is out ({why}), "
        f"{relaxed_blocker}, {tables.blocker(workload) or tables.memory_blocker(workload)}, and "
        f"{local.blocker(workload) or local.memory_blocker(workload) or 'body local runs only solver auto'}. "
        "Use answers without projection (GaussianMechanism, or FactorizationMechanism with "
        f"project=False){regardless}"
    )


def body_solvers(body: str, relaxation: str = "sdp+local") -> tuple[str, ...]:
    """The values of ``solver=`` that ``body`` runs (``"auto"`` first; for ``"auto"``, both bodies').

    >>> body_solvers("relaxed", "local"), body_solvers("local")
    (('auto', 'CLARABEL', 'ECOS', 'SCS'), ('auto',))
    """
    if body in ("hull", "tables"):
        return ("auto", hull.FAST, *hull.SOLVERS)
    if body == "relaxed":
        return ("auto", *relaxation_module.SOLVERS[relaxation])
    if body == "auto":
        return tuple(dict.fromkeys(body_solvers("hull") + body_solvers("relaxed", relaxation)))
    return ("auto",)  # local: its own dual L-BFGS


class BodyFit(NamedTuple):
    """How one body fits a workload, for callers that explain :func:`choose_body`'s verdict."""

    body: Hull | Relaxation | Tables | Local  # with the solver asked for where it runs it, else its own
    blocker: str | None  # why it cannot take the workload (Body.blocker)
    memory: str | None  # why its projection would not fit in memory (Body.memory_blocker), where measurable
    above_limit: bool  # the hull above HULL_MAX_UNIVERSE, beyond which body="auto" does not choose it


def body_fit(workload: Workload, body: str, *, solver: str = "auto", relaxation: str = "sdp+local") -> BodyFit:
    """Whether ``body`` (``"hull"``, ``"relaxed"``, ``"tables"`` or ``"local"``) takes ``workload``
    with ``solver``, and each reason it does not, by the rules :func:`choose_body` applies."""
    own = solver if solver in body_solvers(body, relaxation) else "auto"
    chosen: Hull | Relaxation | Tables | Local
    if body == "hull":
        chosen = Hull(solver=own)
    elif body == "relaxed":
        chosen = _relaxation_for(own, relaxation)
    elif body == "tables":
        chosen = Tables(solver=own)
    else:
        chosen = Local()
    blocker = chosen.blocker(workload)
    # The hull's memory is known wherever it has products both ways, its explicit matrix built or not.
    measurable = blocker is None or (isinstance(chosen, Hull) and workload.has_adjoint)
    memory = chosen.memory_blocker(workload) if measurable else None
    return BodyFit(chosen, blocker, memory, body == "hull" and workload.universe_size > HULL_MAX_UNIVERSE)


class ProjectionProgress:
    """A ``callback(iteration, gap)`` that shows a projection's progress where it is slow.

    Silent for the first ``delay`` seconds and wherever standard error is not a terminal; a context
    manager, so that a bar it opened is closed however the solve ends.
    """

    def __init__(self, description: str, *, delay: float | None = None) -> None:
        self.description = description
        self.delay = PROGRESS_DELAY if delay is None else delay
        self._start = time.perf_counter()
        self._bar: ProgressBar | None = None

    def __enter__(self) -> ProjectionProgress:
        self._start = time.perf_counter()
        return self

    def __call__(self, iteration: int, gap: float) -> None:
        if self._bar is None:
            if time.perf_counter() - self._start < self.delay or not _on_terminal():
                return
            self._bar = ProgressBar(self.description).__enter__()
        self._bar(iteration, gap)

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc_info)
            self._bar = None


def _on_terminal() -> bool:
    """Whether standard error is a terminal, where a progress bar belongs."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a replaced stream without isatty, or a closed one
        return False
