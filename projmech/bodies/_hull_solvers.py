"""Which solvers project onto K_Q, in which order, and the memory each holds: the projection runs
only those that fit in this machine's memory, judged before anything is allocated."""

from __future__ import annotations

import math
from typing import Any

from ..validation import format_count
from ..workloads import Workload
from ._cost import WorkloadSize, by_estimated_time
from ._memory import memory_limit, memory_shortfall
from ._solvers import installed_solvers

__all__ = ["SOLVERS", "FAST", "MODELLED_SOLVERS", "check_solver", "auto_solver_order", "solver_memory",
           "projection_memory", "memory_blocker", "HULL_BYTES_PER_ELEMENT", "ACTIVE_SET_BYTES_PER_ENTRY",
           "CVXPY_BYTES_PER_ENTRY"]

#: CVXPY solvers ``project_to_hull`` accepts by name.
SOLVERS: tuple[str, ...] = ("CLARABEL", "ECOS", "OSQP", "SCS")

#: The active-set solver on products with F (:mod:`projmech.bodies._active_set`).
FAST = "fast"

#: The CVXPY solvers ``solver="auto"`` orders by :mod:`~projmech.bodies._cost` with ``"fast"``;
#: the others are never faster in ``benchmarks/solvers.py`` and follow them as fallbacks.
MODELLED_SOLVERS: tuple[str, ...] = ("CLARABEL", "SCS")

#: The memory model (:func:`solver_memory`), fitted to the peak resident memory beyond the
#: caller's arrays. Bytes per universe element that every solver holds: the dense witness,
#: gradients and products over the universe (31-36 measured on marginals of 22 binary attributes).
HULL_BYTES_PER_ELEMENT = 48

#: Bytes per entry of the active-set solver's columns: ``k`` answers for each of its at most
#: ``rank(F) + 1`` support elements, with its working copies (37-41 measured).
ACTIVE_SET_BYTES_PER_ENTRY = 48

#: Bytes per stored entry of the explicit matrix that a CVXPY solver holds: CVXPY copies the
#: matrix, and the solver builds its own system from the copy (220-290 measured).
CVXPY_BYTES_PER_ENTRY = 300


def check_solver(solver: Any) -> str:
    """``solver`` as ``project_to_hull`` takes it: ``"auto"``, ``"fast"`` or a name of :data:`SOLVERS`
    (upper-cased); a TypeError or ValueError names ``solver`` otherwise."""
    if not isinstance(solver, str):
        raise TypeError(f"solver: expected a string, got {type(solver).__name__}")
    if solver in ("auto", FAST):
        return solver
    if solver.upper() not in SOLVERS:
        raise ValueError(f"solver: expected 'auto', 'fast' or one of {list(SOLVERS)}, got {solver!r}")
    return solver.upper()


def auto_solver_order(workload: Workload) -> list[str]:
    """The solvers ``solver="auto"`` tries on ``workload``, fastest estimate first, each the fallback
    of the one before."""
    explicit = not workload.is_implicit
    # Only an explicit matrix takes a CVXPY solver: an implicit one needs no lookup (nor CVXPY's import).
    installed = set(installed_solvers()) if explicit else set()
    modelled = ([FAST] if workload.has_adjoint else []) + [name for name in MODELLED_SOLVERS
                                                           if explicit and name in installed]
    order = by_estimated_time(modelled, WorkloadSize.of(workload)) if modelled else []
    return order + [name for name in SOLVERS if explicit and name in installed and name not in order]


def solver_memory(workload: Workload, solver: str) -> float:
    """Bytes that projecting onto ``K_Q`` by one solver holds at its peak, beyond the workload and answers."""
    return _memory_parts(workload, check_solver(solver))[0]


def projection_memory(workload: Workload, solver: str = "auto") -> float:
    """Bytes that ``project_to_hull`` holds at its peak on ``workload`` with ``solver``: for
    ``"auto"`` the least among the solvers of :func:`auto_solver_order` (it runs only those that fit)."""
    return _least_memory(workload, check_solver(solver))[0]


def memory_blocker(workload: Workload, solver: str = "auto") -> str | None:
    """Why projecting onto ``K_Q`` with ``solver`` cannot fit in this machine's memory (a phrase
    that the library and the command line complete with their own remedies), or None if it fits."""
    needed, held = _least_memory(workload, check_solver(solver))
    shortfall = memory_shortfall(needed)
    return None if shortfall is None else f"projecting onto the hull K_Q holds {held}, {shortfall}"


def _fitting(order: list[str], workload: Workload) -> list[str]:
    """The solvers of ``order`` whose :func:`solver_memory` fits in this machine's memory."""
    limit = memory_limit()
    return [name for name in order if limit is None or solver_memory(workload, name) <= limit]


def _least_memory(workload: Workload, solver: str) -> tuple[float, str]:
    """:func:`projection_memory` and what holds it, for a checked ``solver``."""
    if solver != "auto":
        return _memory_parts(workload, solver)
    candidates = [_memory_parts(workload, name) for name in auto_solver_order(workload)]
    # No solver applies: the projection refuses it; the universe's vectors are what it would hold.
    return min(candidates, key=lambda part: part[0], default=_memory_parts(workload, FAST, columns=False))


def _memory_parts(workload: Workload, solver: str, *, columns: bool = True) -> tuple[float, str]:
    """The bytes one solver holds (:func:`solver_memory`) and a phrase naming what holds them."""
    k, m = workload.shape
    universe = f"vectors over the universe of {format_count(m)} elements"
    vectors = _times(HULL_BYTES_PER_ELEMENT, m)
    if solver != FAST:
        stored = workload.kernels.stored_entries()
        matrix = _times(CVXPY_BYTES_PER_ENTRY, stored)
        held = (f"{solver}'s copies of the {format_count(stored)} stored entries of the explicit matrix"
                if matrix >= vectors else universe)
        return vectors + matrix, held
    if not columns:
        return vectors, universe
    support = min(WorkloadSize.of(workload).rank + 1, m)
    active = _times(ACTIVE_SET_BYTES_PER_ENTRY * k, support)
    held = universe if vectors >= active else (
        f"{universe} and up to {format_count(support)} columns of {format_count(k)} answers (its active set)")
    return vectors + active, held


def _times(per: int, count: int) -> float:
    """``per * count`` bytes as a float, ``inf`` beyond floating point (a universe of 2^1100)."""
    try:
        return float(per * count)
    except OverflowError:
        return math.inf
