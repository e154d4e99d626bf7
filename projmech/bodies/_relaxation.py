"""The relaxation L of 2-way marginals (:doc:`/theory/relaxation`): its public names, and its
support function, from which L's Gaussian width is estimated."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data import Domain
from ..validation import check_real_array
from ._relaxation_model import (
    RELAXATIONS,
    MomentEncoding,
    RelaxationError,
    _cvxpy_body,
    _violation,
    check_relaxation,
    moment_dimension,
)
from ._relaxation_projection import SOLVERS, NegativeCellsWarning, RelaxationResult, check_solver, project_to_relaxation
from ._solvers import installed_solvers

if TYPE_CHECKING:
    from ._relaxation_model import _CvxpyBody

__all__ = ["RELAXATIONS", "RelaxationResult", "RelaxationError", "RelaxationSupport", "NegativeCellsWarning",
           "project_to_relaxation", "relaxation_support", "MomentEncoding", "moment_dimension", "check_solver",
           "check_relaxation", "SOLVERS"]

@dataclass(frozen=True)
class RelaxationSupport:
    """The support function ``h_L(g) = max {<g, cells(Y)> : Y in L}`` in many directions.

    Over Gaussian directions, the mean of ``upper_bounds`` bounds the width ``l*(L) >= l*(K_Q)``.

    Parameters
    ----------
    values : ndarray, shape (s,)
        ``<g, cells(Y_g)>`` at the solver's maximizer ``Y_g``, one per direction.
    upper_bounds : ndarray, shape (s,)
        Certified ``h_L(g) <= upper_bounds`` by weak duality, whatever the solver's accuracy.
    relaxation : str
        The constraints of L, one of :data:`RELAXATIONS`.
    solver : str
        The CVXPY solver.
    encoding : str
        ``"binary"`` or ``"one-hot"``.
    max_violation : float
        The largest constraint violation of any maximizer.
    max_gap : float
        ``max(upper_bounds - values)``.
    retries : int
        Directions solved a second time after a non-optimal status.
    solve_time : float
        Seconds for all directions, model building included.
    moments : ndarray, shape (s, D+1, D+1), or None
        The maximizers (``return_moments=True``).

    Examples
    --------
    >>> support = pm.bodies.relaxation_support(pm.Domain(["a", "b", "c"], [2, 2, 2]), np.ones(12))
    >>> round(float(support.values[0]), 6), bool(support.upper_bounds[0] >= support.values[0])
    (3.0, True)
    """

    values: np.ndarray
    upper_bounds: np.ndarray
    relaxation: str
    solver: str
    encoding: str
    max_violation: float
    max_gap: float
    retries: int
    solve_time: float
    moments: np.ndarray | None = None


def _support_upper_bound(encoding: MomentEncoding, relaxation: str, body: _CvxpyBody,
                         objective: np.ndarray) -> float:
    """A certified upper bound on ``max {<objective, vec Y> : Y in L}`` by weak duality (any multipliers)."""
    lam = body.equality.dual_value
    if lam is None or (body.local is not None and body.local.dual_value is None):
        raise RelaxationError("the solver returned no multipliers: the support value cannot be certified")
    residual = objective - body.equalities.T @ np.asarray(lam, dtype=float)
    if body.local is not None:
        residual = residual + encoding.cells.T @ np.maximum(np.asarray(body.local.dual_value, dtype=float), 0.0)
    Z = residual.reshape(encoding.size, encoding.size)
    Z = (Z + Z.T) / 2
    slack = []
    if "sdp" in relaxation:
        trace = 1.0 + len(encoding.domain.sizes)
        slack.append(max(float(np.linalg.eigvalsh(Z).max()), 0.0) * trace)
        slack.append(float(np.abs(Z).sum()))
    if "local" in relaxation:
        slack.append(float(np.maximum(Z, 0.0).sum()))
    return float(body.rhs @ lam) + min(slack)


#: Clarabel's options for :func:`relaxation_support` when none are given: at Clarabel's default
#: tolerances (1e-8) many of these degenerate problems stall just above them and end
#: ``optimal_inaccurate``; at 1e-7 very few do, and the values stay certified by their bounds.
SUPPORT_CLARABEL_OPTIONS: MappingProxyType[str, Any] = MappingProxyType(
    {"tol_feas": 1e-7, "tol_gap_abs": 1e-7, "tol_gap_rel": 1e-7})
#: Clarabel's options for the one re-solve of a direction whose first solve was not optimal.
SUPPORT_CLARABEL_RETRY_OPTIONS: MappingProxyType[str, Any] = MappingProxyType(
    {"tol_feas": 1e-6, "tol_gap_abs": 1e-6, "tol_gap_rel": 1e-6})


def relaxation_support(
    domain: Domain,
    directions: Any,
    *,
    relaxation: str = "sdp+local",
    solver: str = "CLARABEL",
    solver_options: dict[str, Any] | None = None,
    encoding: str = "auto",
    return_moments: bool = False,
    retry: bool = True,
    retry_options: dict[str, Any] | None = None,
) -> RelaxationSupport:
    """The support function ``h_L(g)`` of the relaxation L, for each row ``g`` of ``directions``.

    Each value comes with a certified upper bound (:doc:`/theory/relaxation`).

    Parameters
    ----------
    domain : Domain
        At least 2 attributes, each with at least 2 values.
    directions : array_like, shape (s, k) or (k,)
        Directions in the answer space of ``marginals(domain, 2)``.
    relaxation : {"sdp+local", "sdp", "local"}
        The constraints of L.
    solver : str
        An installed CVXPY solver; a first-order one (SCS) can be off by its tolerance either way.
    solver_options : dict, optional
        The solver's options (default: ``SUPPORT_CLARABEL_OPTIONS`` for Clarabel).
    encoding : {"auto", "binary", "one-hot"}
        Of the moment matrices; ``"auto"`` is binary when every attribute has 2 values.
    return_moments : bool
        Keep each direction's maximizer in :attr:`RelaxationSupport.moments`.
    retry : bool
        Solve a direction once more, with ``retry_options``, when its status is not ``optimal``.
    retry_options : dict, optional
        The retry's options (default: ``SUPPORT_CLARABEL_RETRY_OPTIONS`` for Clarabel, else ``solver_options``).

    Returns
    -------
    RelaxationSupport

    Raises
    ------
    RelaxationError
        If the solver fails or is not ``optimal`` for a direction (after the retry, if any).

    Examples
    --------
    >>> g = np.eye(12)[3]  # the (1, 1) cell of the first table
    >>> support = pm.bodies.relaxation_support(pm.Domain(["a", "b", "c"], [2, 2, 2]), g)
    >>> round(float(support.values[0]), 6), support.retries
    (1.0, 0)
    """
    import cvxpy as cp

    check_relaxation(relaxation)
    if not isinstance(solver, str) or solver.upper() not in installed_solvers():
        raise ValueError(f"solver: expected an installed CVXPY solver {list(installed_solvers())}, got {solver!r}")
    model = MomentEncoding.of(domain, encoding)
    G = check_real_array("directions", directions, finite=False)
    if G.ndim == 1:  # one direction
        G = G[None, :]
    if G.ndim != 2 or G.shape[1] != model.num_queries or G.shape[0] == 0:
        raise ValueError(f"directions: expected shape (s, {model.num_queries}) or ({model.num_queries},) "
                         f"(the 2-way marginals of the domain), got {np.shape(directions)}")
    if not np.all(np.isfinite(G)):
        raise ValueError("directions: contains NaN or infinite entries")
    clarabel = solver.upper() == "CLARABEL"
    first_options: Mapping[str, Any] = solver_options if solver_options is not None else (
        SUPPORT_CLARABEL_OPTIONS if clarabel else {})
    second_options: Mapping[str, Any] = retry_options if retry_options is not None else (
        SUPPORT_CLARABEL_RETRY_OPTIONS if clarabel else first_options)
    start = time.perf_counter()
    body = _cvxpy_body(model, relaxation)
    direction = cp.Parameter(model.num_queries)
    problem = cp.Problem(cp.Maximize(direction @ body.answers), body.constraints)
    values = np.empty(G.shape[0])
    bounds = np.empty(G.shape[0])
    maximizers = np.empty((G.shape[0], model.size, model.size)) if return_moments else None
    violation = 0.0
    retries = 0

    def solve(index: int, options: Mapping[str, Any]) -> bool:
        # warm_start=False: a fresh solver each time, so no setting of a retry lingers in CVXPY's
        # cached solver. Its "may be inaccurate" warning is dropped: the status is checked here.
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=solver.upper(), warm_start=False, **options)
        except cp.error.SolverError as error:
            raise RelaxationError(f"{solver} failed on the support of the relaxation (direction {index}): "
                                  f"{error}") from error
        return problem.status == cp.OPTIMAL and body.moments.value is not None

    for index, g in enumerate(G):
        direction.value = g
        optimal = solve(index, first_options)
        if not optimal and retry:
            retries += 1
            first = problem.status
            optimal = solve(index, second_options)
            if not optimal:
                raise RelaxationError(f"{solver} returned status {first}, then {problem.status} with the retry "
                                      f"options, on the support of the relaxation (direction {index}; not optimal)")
        if not optimal:
            raise RelaxationError(f"{solver} returned status {problem.status} on the support of the relaxation "
                                  f"(direction {index}; not optimal; retry=True solves it once more)")
        moments = (body.moments.value + body.moments.value.T) / 2
        values[index] = float(g @ model.answers(moments))
        bounds[index] = _support_upper_bound(model, relaxation, body, model.cells.T @ g)
        violation = max(violation, _violation(model, moments, relaxation, body.equalities, body.rhs))
        if maximizers is not None:
            maximizers[index] = moments
    return RelaxationSupport(
        values=values,
        upper_bounds=bounds,
        relaxation=relaxation,
        solver=solver,
        encoding="binary" if model.binary else "one-hot",
        max_violation=violation,
        max_gap=float(np.max(bounds - values)),
        retries=retries,
        solve_time=time.perf_counter() - start,
        moments=maximizers,
    )
