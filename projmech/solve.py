"""The contract every optimizer keeps: one status vocabulary, one statistics record, one error,
one way to try solvers in order, one progress callback (``callback(iteration, gap)``).

Each optimizer's result has ``.stats``, a :class:`SolveStats`, and it raises a subclass of
:class:`SolveError` carrying the attempts and the best point found. A leaf module.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, ParamSpec, TypeVar, overload

# The contract a user reads: statuses, statistics, attempts, errors, the callback and its bar.
# The plumbing the optimizers share (Outcome, solve_in_order, status_from_cvxpy, check_callback)
# is importable from here by the library's folders, but is no public API.
__all__ = [
    "Attempt",
    "Callback",
    "ProgressBar",
    "SolveError",
    "SolveResult",
    "SolveStats",
    "Status",
]

#: ``callback(iteration, gap)``: called by iterative solvers after each iteration with the
#: certified gap reached so far (relative or absolute as the result's ``stats.relative_gap`` says).
Callback = Callable[[int, float], None]

Point = TypeVar("Point")
Result = TypeVar("Result")
Solved = TypeVar("Solved", bound="SolveResult")
Arguments = ParamSpec("Arguments")


def check_callback(callback: Any) -> Callback | None:
    """Check an optimizer's ``callback`` (None or ``callback(iteration, gap)``) before any solve.

    >>> pm.solve.check_callback("progress")
    Traceback (most recent call last):
    ...
    TypeError: callback: expected callback(iteration, gap) or None, got 'progress'
    """
    if callback is not None and not callable(callback):
        raise TypeError(f"callback: expected callback(iteration, gap) or None, got {callback!r}")
    return callback


# The signature numpydoc sees is Enum's functional API (value, names, module, ...): Status("optimal")
# only looks a member up, so there is no parameter to document.
class Status(str, Enum):  # numpydoc ignore=PR01
    """How a solve ended; a ``str``, so it compares equal to and serializes as its value.

    Examples
    --------
    >>> pm.solve.Status("optimal") is pm.solve.Status.OPTIMAL, pm.solve.Status.ITERATION_LIMIT == "iteration_limit"
    (True, True)
    """

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
    """Map a CVXPY status to a :class:`Status`, ``SOLVER_ERROR`` if unknown; ``"optimal"`` is still checked.

    >>> pm.solve.status_from_cvxpy("infeasible_inaccurate")
    <Status.INFEASIBLE: 'infeasible'>
    """
    return _CVXPY_STATUS.get(str(status), Status.SOLVER_ERROR)


@dataclass(frozen=True)
class Attempt:
    """One solver tried, and how it ended.

    Parameters
    ----------
    solver : str
        The solver's name (``"iterative"``, ``"sdp/SCS"``, ...).
    status : Status
        How the attempt ended.
    detail : str, default ""
        A line of detail: the gap it reached, the check it failed.
    seconds : float, default 0.0
        Its wall-clock seconds.

    Examples
    --------
    >>> print(pm.solve.Attempt("iterative", pm.solve.Status.ITERATION_LIMIT, "gap 2.1e-02", 0.4))
    iterative: iteration_limit, gap 2.1e-02
    """

    solver: str
    status: Status
    detail: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        detail = f", {self.detail}" if self.detail else ""
        return f"{self.solver}: {self.status.value}{detail}"


@dataclass(frozen=True)
class SolveStats:
    """What one solve did: the same record for every optimizer (after CVXPY's ``SolverStats``).

    Parameters
    ----------
    solver, status : str, Status
        The solver whose point was returned, and how the accepted (or best) attempt ended.
    solve_time, total_time : float, float or None
        Seconds of the accepted attempt, its final check included; of the whole call, where measured.
    iterations : int or None, optional
        Iterations of an iterative solver.
    gap, tolerance : float or None, optional
        The certified suboptimality (None without a certificate); the gap the point had to reach.
    relative_gap, tolerance_met : bool, default False
        Whether ``gap`` is relative to the objective; whether ``gap <= tolerance`` and every check held.
    attempts : tuple of Attempt, default ()
        Every solver tried, in order, the accepted one last.
    blas_threads : int or None, optional
        The BLAS threads the solver's dense kernels were held to.

    Examples
    --------
    >>> stats = pm.factorization_norm(pm.prefix(16)).stats
    >>> stats.solver, stats.status, stats.tolerance_met
    ('iterative', <Status.OPTIMAL: 'optimal'>, True)
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
    total_time: float | None = None

    @classmethod
    def from_attempt(cls, attempt: Attempt, attempts: Iterable[Attempt], *, iterations: int | None = None,
                     gap: float | None = None, relative_gap: bool = False,
                     tolerance: float | None = None, blas_threads: int | None = None,
                     total_time: float | None = None) -> SolveStats:
        """The statistics of the point one attempt produced, ``solve_time`` its seconds.

        Parameters
        ----------
        attempt, attempts : Attempt, iterable of Attempt
            The attempt whose point is reported, and every attempt in order.
        iterations, gap, relative_gap, tolerance, blas_threads, total_time
            As the fields of :class:`SolveStats`; ``tolerance_met`` is optimal with ``gap <= tolerance``.

        Returns
        -------
        SolveStats
        """
        met = attempt.status is Status.OPTIMAL and gap is not None and tolerance is not None and gap <= tolerance
        return cls(solver=attempt.solver, status=attempt.status, solve_time=attempt.seconds,
                   iterations=None if iterations is None else int(iterations),
                   gap=None if gap is None else float(gap), relative_gap=relative_gap,
                   tolerance=None if tolerance is None else float(tolerance), tolerance_met=bool(met),
                   attempts=tuple(attempts), blas_threads=blas_threads, total_time=total_time)

    def summary(self) -> dict[str, Any]:
        """The statistics as plain JSON-serializable values.

        Returns
        -------
        dict
            One entry per field; times in seconds (``solve_time_s``, ``total_time_s``), the status and
            each attempt as strings.
        """
        return {
            "solver": self.solver,
            "status": self.status.value,
            "solve_time_s": self.solve_time,
            "total_time_s": self.total_time,
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
        seconds = f"{self.solve_time:.3g} s" if self.total_time is None else \
            f"{self.total_time:.3g} s ({self.solve_time:.3g} s in the accepted attempt)"
        return f"{self.solver} {self.status.value}: {gap}{iterations}, {seconds}{threads}"


class SolveResult:
    """The base of every optimizer's result: its :class:`SolveStats` as ``stats``.

    ``repr`` and ``str`` come from the result's ``_description()``, never from its arrays.

    Examples
    --------
    >>> print(repr(pm.factorization_norm(pm.prefix(8))))
    <DenseFactorization R M = F of prefix(8): strategy 8x8; iterative optimal: relative gap ...>
    """

    stats: SolveStats

    def _description(self) -> str:
        raise NotImplementedError

    def _with_stats(self: Solved, stats: SolveStats) -> Solved:
        """The same result with other ``stats``: a shallow copy sharing its arrays."""
        twin = copy.copy(self)
        object.__setattr__(twin, "stats", stats)  # results that are frozen dataclasses too
        return twin

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._description()}; {self.stats}>"

    def __str__(self) -> str:
        return f"{type(self).__name__} {self._description()}\n  {self.stats}"


class SolveError(RuntimeError):
    """No solver produced a point that passed the checks; each optimizer raises its own subclass.

    Parameters
    ----------
    message : str
        What failed; the attempts are appended to it.
    attempts : iterable of Attempt, default ()
        Every solver tried, in order, with how it ended.
    best : object, optional
        The best point that passed the final feasibility check but not the tolerance.

    Examples
    --------
    >>> attempt = pm.solve.Attempt("admm", pm.solve.Status.ITERATION_LIMIT, "gap 3.0e-02")
    >>> print(pm.solve.SolveError("no solver converged", [attempt]))
    no solver converged (admm: iteration_limit, gap 3.0e-02)
    """

    def __init__(self, message: str, attempts: Iterable[Attempt] = (), best: Any = None) -> None:
        self.attempts = tuple(attempts)
        self.best = best
        details = "; ".join(str(attempt) for attempt in self.attempts)
        super().__init__(f"{message} ({details})" if details else message)


@dataclass(frozen=True)
class Outcome(Generic[Point]):
    """One attempt's result: ``OPTIMAL`` accepts ``point``; the least ``score`` rejected is the error's ``best``."""

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
    """Run ``plan``'s ``(solver name, run)`` pairs in order until one's :class:`Outcome` is ``OPTIMAL``.

    Returns the point (or ``finish(point, attempt, attempts)``), every timed :class:`Attempt` and the
    accepted one's seconds; raises ``error(message, attempts, best)`` when none is accepted.

    >>> from projmech.solve import Outcome, SolveError, Status, solve_in_order
    >>> plan = [("rough", lambda: Outcome(Status.ITERATION_LIMIT, "x0", "gap 0.1", score=0.1)),
    ...         ("exact", lambda: Outcome(Status.OPTIMAL, "x1", "gap 0"))]
    >>> point, attempts, seconds = solve_in_order(plan, SolveError, "no solver converged")
    >>> point, [str(attempt) for attempt in attempts]
    ('x1', ['rough: iteration_limit, gap 0.1', 'exact: optimal, gap 0'])
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
    """A ``callback(iteration, gap)`` that draws a tqdm progress bar; a context manager that closes it.

    Parameters
    ----------
    description : str
        The bar's label.
    total : int, optional
        The number of iterations the bar spans (the solver's iteration limit).

    Examples
    --------
    >>> with pm.solve.ProgressBar("gamma(prefix)", total=200) as bar:  # drawn on stderr
    ...     fact = pm.factorization_norm(pm.prefix(32), method="iterative", callback=bar)
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


def record_total_time(solve: Callable[Arguments, Solved]) -> Callable[Arguments, Solved]:
    """Wrap an optimizer so that its result's (or its error's ``best``'s) ``stats.total_time`` is the whole call's."""
    @functools.wraps(solve)
    def timed(*args: Arguments.args, **kwargs: Arguments.kwargs) -> Solved:
        start = time.perf_counter()
        try:
            result = solve(*args, **kwargs)
        except SolveError as failure:
            if isinstance(failure.best, SolveResult):
                failure.best = _with_total_time(failure.best, start)
            raise
        return _with_total_time(result, start)

    return timed


def _with_total_time(result: Solved, start: float) -> Solved:
    return result._with_stats(dataclasses.replace(result.stats, total_time=time.perf_counter() - start))
