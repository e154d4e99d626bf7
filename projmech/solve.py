"""The contract every optimizer in projmech keeps: one status vocabulary, one statistics record,
one error, one way to try solvers in order, one progress callback.

Projection onto the hull K_Q (:func:`~projmech.bodies.hull.project_to_hull`), onto the
relaxation L (:func:`~projmech.bodies.relaxation.project_to_relaxation`) and the optimal
factorization (:func:`~projmech.optimal_factorization.factorization_norm`) each return a result
whose ``.stats`` is a :class:`SolveStats`, raise a subclass of :class:`SolveError` carrying the
attempts and the best point found, and take ``callback(iteration, gap)``. A leaf module: it
imports nothing from projmech, and tqdm only when a progress bar is asked for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar, overload

__all__ = [
    "Attempt",
    "Callback",
    "Outcome",
    "ProgressBar",
    "SolveError",
    "SolveResult",
    "SolveStats",
    "Status",
    "check_callback",
    "solve_in_order",
    "status_from_cvxpy",
]

#: ``callback(iteration, gap)``: called by iterative solvers after each iteration with the
#: certified gap reached so far (relative or absolute as the result's ``stats.relative_gap`` says).
Callback = Callable[[int, float], None]

Point = TypeVar("Point")
Result = TypeVar("Result")


def check_callback(callback: Any) -> Callback | None:
    """``callback`` if it is None or callable, else a TypeError (checked before any solve)."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback: expected callback(iteration, gap) or None, got {callback!r}")
    return callback


class Status(str, Enum):
    """How a solve ended. A str, so it compares equal to and serializes as its value."""

    #: Solved: the solver's stopping rule was met and projmech's final check of the point passed
    #: (whether a gap was certified is ``SolveStats.tolerance_met``).
    OPTIMAL = "optimal"
    #: The backend's own word for a solution it is unsure of; never accepted without a certificate.
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    #: Stopped at its iteration (or time) limit before the certificate was reached.
    ITERATION_LIMIT = "iteration_limit"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    #: The backend raised or returned no point.
    SOLVER_ERROR = "solver_error"
    #: The backend reported success, but its point failed projmech's own final check.
    REJECTED = "rejected"
    #: No optimization took place (a factorization from a given strategy).
    GIVEN = "given"

    def __str__(self) -> str:
        return self.value


# CVXPY's status strings (cvxpy.settings), mapped once. Its "_inaccurate" variants of infeasible
# and unbounded say the same as the accurate ones for our purpose: there is no point to use.
_CVXPY_STATUS = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.OPTIMAL_INACCURATE,
    "infeasible": Status.INFEASIBLE,
    "infeasible_inaccurate": Status.INFEASIBLE,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.UNBOUNDED,
    "user_limit": Status.ITERATION_LIMIT,
    "solver_error": Status.SOLVER_ERROR,
}


def status_from_cvxpy(status: Any) -> Status:
    """Map a CVXPY status string to :class:`Status` (a backend's ``"optimal"`` is a claim: the
    caller still runs its final check, and reports :attr:`Status.REJECTED` if it fails).
    Unknown strings (a CVXPY release adding one) are :attr:`Status.SOLVER_ERROR`."""
    return _CVXPY_STATUS.get(str(status), Status.SOLVER_ERROR)


@dataclass(frozen=True)
class Attempt:
    """One solver tried: its name, how it ended, a line of detail (the gap it reached, the check
    it failed) and its wall-clock seconds."""

    solver: str
    status: Status
    detail: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        detail = f", {self.detail}" if self.detail else ""
        return f"{self.solver}: {self.status.value}{detail}"


@dataclass(frozen=True)
class SolveStats:
    """What one solve did, the same record for every optimizer (after CVXPY's ``SolverStats``).

    Attributes
    ----------
    solver : str
        The solver whose point was returned (``"fast"``, ``"admm"``, ``"iterative"``, a CVXPY
        solver name...).
    status : Status
    solve_time : float
        Wall-clock seconds of the accepted attempt, model building and the final check included.
    iterations : int or None
        Iterations of an iterative solver; None for a CVXPY backend.
    gap : float or None
        The certified suboptimality of the returned point (None where there is no certificate).
    relative_gap : bool
        Whether ``gap`` is relative to the objective (relaxation, factorization) or absolute
        (the hull's Frank–Wolfe gap).
    tolerance : float or None
        The gap the point had to reach.
    tolerance_met : bool
        Whether ``gap <= tolerance`` (and every other check) held.
    attempts : tuple of Attempt
        Every solver tried, in order, the accepted one last.
    blas_threads : int or None
        The BLAS threads the solver's dense kernels were held to (so that its time and its
        point do not depend on the machine's default); None where the solver does not set it.
    """

    solver: str
    status: Status
    solve_time: float
    iterations: int | None = None
    gap: float | None = None
    relative_gap: bool = False
    tolerance: float | None = None
    tolerance_met: bool = False
    attempts: tuple[Attempt, ...] = field(default=())
    blas_threads: int | None = None

    @classmethod
    def from_attempt(cls, attempt: Attempt, attempts: Iterable[Attempt], *, iterations: int | None = None,
                     gap: float | None = None, relative_gap: bool = False,
                     tolerance: float | None = None, blas_threads: int | None = None) -> SolveStats:
        """The statistics of the point ``attempt`` produced: its solver, status and seconds, with
        every attempt. ``tolerance_met`` holds when the attempt was accepted with a certified
        ``gap <= tolerance``."""
        met = attempt.status is Status.OPTIMAL and gap is not None and tolerance is not None and gap <= tolerance
        return cls(solver=attempt.solver, status=attempt.status, solve_time=attempt.seconds,
                   iterations=None if iterations is None else int(iterations),
                   gap=None if gap is None else float(gap), relative_gap=relative_gap,
                   tolerance=None if tolerance is None else float(tolerance), tolerance_met=bool(met),
                   attempts=tuple(attempts), blas_threads=blas_threads)

    def summary(self) -> dict[str, Any]:
        """Plain JSON-serializable values."""
        return {
            "solver": self.solver,
            "status": self.status.value,
            "solve_time_s": self.solve_time,
            "iterations": self.iterations,
            "gap": self.gap,
            "relative_gap": self.relative_gap,
            "tolerance": self.tolerance,
            "tolerance_met": self.tolerance_met,
            "attempts": [str(attempt) for attempt in self.attempts],
            "blas_threads": self.blas_threads,
        }

    def __str__(self) -> str:
        if self.status is Status.GIVEN:
            return f"{self.solver}: no solve"
        gap = "no certificate" if self.gap is None else \
            f"{'relative ' if self.relative_gap else ''}gap {self.gap:.2e}" + \
            ("" if self.tolerance is None else f" (tol {self.tolerance:.1e})")
        iterations = "" if self.iterations is None else f", {self.iterations} iterations"
        threads = "" if self.blas_threads is None else \
            f", {self.blas_threads} BLAS thread{'s' if self.blas_threads != 1 else ''}"
        return f"{self.solver} {self.status.value}: {gap}{iterations}, {self.solve_time:.3g} s{threads}"


class SolveResult:
    """What every optimizer's result shares: its :class:`SolveStats` as ``stats``, and a short
    ``repr`` (one line) and ``str`` (that line and the statistics) built from the result's own
    ``_description()``, never from its arrays (a witness may have millions of entries)."""

    stats: SolveStats

    def _description(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._description()}; {self.stats}>"

    def __str__(self) -> str:
        return f"{type(self).__name__} {self._description()}\n  {self.stats}"


class SolveError(RuntimeError):
    """No solver produced a point that passed the checks.

    Attributes
    ----------
    attempts : tuple of Attempt
        Every solver tried, in order, with how it ended.
    best : object or None
        The best point found that passed the final feasibility check but not the tolerance (a
        result of the optimizer's own type), or None.
    """

    def __init__(self, message: str, attempts: Iterable[Attempt] = (), best: Any = None) -> None:
        self.attempts = tuple(attempts)
        self.best = best
        details = "; ".join(str(attempt) for attempt in self.attempts)
        super().__init__(f"{message} ({details})" if details else message)


@dataclass(frozen=True)
class Outcome(Generic[Point]):
    """What one attempt of :func:`solve_in_order` produced.

    ``status`` is :attr:`Status.OPTIMAL` for a point to return; any other status rejects the
    attempt, keeping ``point`` (if any) as a candidate for the error's ``best``, the one with the
    smallest ``score`` (e.g. its gap).
    """

    status: Status
    point: Point | None = None
    detail: str = ""
    score: float = math.inf


@overload
def solve_in_order(plan: Iterable[tuple[str, Callable[[], Outcome[Point]]]], error: type[SolveError],
                   message: str, finish: None = None) -> tuple[Point, tuple[Attempt, ...], float]: ...


@overload
def solve_in_order(plan: Iterable[tuple[str, Callable[[], Outcome[Point]]]], error: type[SolveError],
                   message: str, finish: Callable[[Point, Attempt, tuple[Attempt, ...]], Result],
                   ) -> tuple[Result, tuple[Attempt, ...], float]: ...


def solve_in_order(plan: Iterable[tuple[str, Callable[[], Outcome[Point]]]], error: type[SolveError],
                   message: str, finish: Callable[[Point, Attempt, tuple[Attempt, ...]], Result] | None = None,
                   ) -> tuple[Point | Result, tuple[Attempt, ...], float]:
    """Run the attempts of ``plan`` in order until one is :attr:`Status.OPTIMAL`.

    Returns the accepted point, every attempt (the accepted one last) and the accepted attempt's
    seconds. With ``finish``, the point returned, and the error's ``best``, is
    ``finish(point, its attempt, every attempt)``: the one place where the caller builds its
    result, with its :class:`SolveStats` (see :meth:`SolveStats.from_attempt`).
    An attempt that raises ``error`` (or any :class:`SolveError`) is recorded with its own
    attempts, and its ``best`` (taken as it is) kept as a candidate. When none is accepted,
    raises ``error`` with ``message``, the attempts and the best candidate.
    """
    attempts: list[Attempt] = []
    best: tuple[float, Any, Attempt | None] | None = None
    for solver, run in plan:
        start = time.perf_counter()
        try:
            outcome = run()
        except SolveError as failure:
            attempts.extend(failure.attempts or (Attempt(solver, Status.SOLVER_ERROR, str(failure)),))
            if failure.best is not None and best is None:
                best = (math.inf, failure.best, None)
            continue
        seconds = time.perf_counter() - start
        attempt = Attempt(solver, outcome.status, outcome.detail, seconds)
        attempts.append(attempt)
        if outcome.status is Status.OPTIMAL:
            point = outcome.point
            assert point is not None, "an optimal outcome carries its point"
            done = tuple(attempts)
            return (point if finish is None else finish(point, attempt, done)), done, seconds
        if outcome.point is not None and (best is None or outcome.score < best[0]):
            best = (outcome.score, outcome.point, attempt)
    if best is not None and finish is not None and best[2] is not None:
        best = (best[0], finish(best[1], best[2], tuple(attempts)), best[2])
    raise error(message, attempts, None if best is None else best[1])


class ProgressBar:
    """A ``callback(iteration, gap)`` that draws a tqdm progress bar; the one adapter from the
    solvers' callbacks to a display.

    Use it as a context manager, so that the bar is closed however the solve ends::

        with ProgressBar("projection onto K_Q", total=500) as bar:
            project_to_hull(F, y, callback=bar)
    """

    def __init__(self, description: str, total: int | None = None) -> None:
        self.description = description
        self.total = total
        self._bar: Any = None

    def __enter__(self) -> ProgressBar:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=self.total, desc=self.description, unit="it", leave=False)
        return self

    def __call__(self, iteration: int, gap: float) -> None:
        if self._bar is None:
            raise RuntimeError("ProgressBar: use it in a with block (it opens the bar there)")
        self._bar.update(max(0, iteration - self._bar.n))
        self._bar.set_postfix(gap=f"{gap:.1e}")

    def __exit__(self, *exc_info: object) -> None:
        self._bar.close()
        self._bar = None
