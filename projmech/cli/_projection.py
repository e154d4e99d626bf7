"""``--body``, ``--relaxation`` and ``--solver``: the projection a release asks for, and its refusals
in the command's words, from what the library says of each body (:func:`~projmech.bodies._body.body_fit`)."""

from __future__ import annotations

import argparse
from typing import NamedTuple

from ..bodies import HULL_MAX_UNIVERSE, RELAXATIONS, BodyFit, body_fit, body_solvers, choose_body
from ..validation import format_count
from ..workloads import Workload

__all__ = ["Projection", "projection_flags", "check_body", "solver_help"]

#: What the refusals suggest instead of a projection.
UNPROJECTED = "--mechanism gaussian or factorization (answers without projection)"


class Projection(NamedTuple):
    """What ``--body``, ``--relaxation`` and ``--solver`` ask of a mechanism that projects."""

    body: str  # "auto", "hull", "relaxed", "tables" or "local", as ProjectionMechanism's body takes it
    solver: str
    relaxation: str
    flag: str  # the flag(s) that chose the body, which its errors name


def _canonical_solver(solver: str) -> str:
    """The library's spelling of a solver given in any case."""
    return next((name for name in body_solvers("auto") if name.lower() == solver.lower()), solver.upper())


def projection_flags(args: argparse.Namespace) -> Projection | None:
    """``--body``, ``--relaxation`` and ``--solver``, refused where the mechanism does not project
    (``None`` then) or the body does not take the solver. ``--relaxation`` without ``--body``
    projects onto L, and with ``--body auto`` a solver that only one body runs picks that body."""
    projects_onto = ("projection", "factorization+projection")
    for flag, value in (("--body", args.body), ("--relaxation", args.relaxation), ("--solver", args.solver)):
        if value is not None and args.mechanism not in projects_onto:
            raise ValueError(f"{flag}: applies only to --mechanism {' or '.join(projects_onto)}, not {args.mechanism}")
    if args.mechanism not in projects_onto:
        return None
    relaxation = args.relaxation or RELAXATIONS[0]
    if args.body == "hull" and args.relaxation is not None:
        raise ValueError("--relaxation: applies only with --body relaxed or auto, not hull")
    elif args.body is not None:
        body, flag = args.body, f"--body {args.body}"
    elif args.relaxation is not None:
        body, flag = "relaxed", f"--relaxation {args.relaxation}"
    else:
        body, flag = "auto", "--body auto"
    solver = "auto" if args.solver is None else _canonical_solver(args.solver)
    if body in ("tables", "local") and args.relaxation is not None:
        raise ValueError(f"--relaxation: applies only with --body relaxed or auto, not {body}")
    accepted = body_solvers(body, relaxation)
    if solver not in accepted:
        onto = {"hull": "the hull K_Q", "relaxed": f"the relaxation L ({relaxation})",
                "tables": "K_Q of disjoint tables, table by table",
                "local": "the local polytope of the tables (its own dual L-BFGS)",
                "auto": f"the hull K_Q or the relaxation L ({relaxation})"}[body]
        raise ValueError(f"--solver: {flag} projects onto {onto}, which takes {', '.join(accepted)}; "
                         f"got {args.solver!r}")
    takers = [name for name in ("hull", "relaxed") if solver in body_solvers(name, relaxation)]
    if body == "auto" and len(takers) == 1:
        # A solver only one body runs picks it, as for the library's body "auto"; errors then
        # speak of that body.
        body, flag = takers[0], f"--solver {solver}"
    return Projection(body, solver, relaxation, flag)


def check_body(workload: Workload, spec: str, projection: Projection) -> None:
    """Refuse, in the command's words, a projection no body takes or this machine's memory cannot
    hold (before any long computation): the verdict is :func:`~projmech.bodies._body.choose_body`'s,
    the reasons each body's (:func:`~projmech.bodies._body.body_fit`)."""
    def fit(body: str) -> BodyFit:
        return body_fit(workload, body, solver=projection.solver, relaxation=projection.relaxation)

    hull, relaxed = fit("hull"), fit("relaxed")
    hull_fits = workload.has_adjoint and hull.memory is None
    relaxed_fits = relaxed.blocker is None and relaxed.memory is None
    if projection.body == "hull" and hull.memory is not None:
        alternative = ", or --body relaxed (the relaxation L)" if relaxed_fits else ""
        raise ValueError(f"{projection.flag}: {hull.memory}; use {UNPROJECTED}{alternative}")
    if projection.body == "relaxed" and relaxed.memory is not None:
        raise ValueError(f"{projection.flag}: {relaxed.memory}; use {UNPROJECTED}")
    try:
        choose_body(workload, projection.body, solver=projection.solver, relaxation=projection.relaxation)
    except ValueError:  # the flags were checked above: what is left is a body that cannot take the workload
        pass
    else:
        return
    if projection.body == "relaxed":
        instead = {"--solver": "--solver auto or fast", "--relaxation": "--body hull without --relaxation"}.get(
            projection.flag.split()[0], "--body hull") + " (the hull K_Q), or "
        raise ValueError(f"{projection.flag}: the relaxation L holds only all 2-way marginals of a domain "
                         f"(--workload marginals:2), not {spec}; use {instead if hull_fits else ''}{UNPROJECTED}")
    if projection.body == "auto":
        _refuse_auto(workload, spec, hull, relaxed, fit("tables"), fit("local"), projection.solver, hull_fits)
    if projection.body in ("tables", "local"):
        chosen = fit(projection.body)
        if chosen.blocker is None:
            raise ValueError(f"{projection.flag}: {chosen.memory}; use {UNPROJECTED}")
        if projection.body == "tables":
            other = ", or --body local (overlapping marginal tables)" if fit("local").blocker is None else ""
            raise ValueError(f"{projection.flag}: takes only disjoint tables (--workload marginals:1, identity or "
                             f"prefix:ATTR), not {spec}; use {UNPROJECTED}{other}")
        raise ValueError(f"{projection.flag}: takes only marginal tables (--workload marginals:WAY or "
                         f"marginals:LOW-HIGH), not {spec}; use {UNPROJECTED}")
    raise ValueError(f"{projection.flag}: the hull K_Q cannot take {spec}; use {UNPROJECTED}")


def _refuse_auto(workload: Workload, spec: str, hull: BodyFit, relaxed: BodyFit,
                 tables: BodyFit, local: BodyFit, solver: str, hull_fits: bool) -> None:
    """``--body auto``'s refusal: why each body is out."""
    regardless = ", or --body hull to project onto the hull K_Q regardless" if hull_fits else ""
    hull_out = (f"the hull K_Q is chosen only up to {HULL_MAX_UNIVERSE:,} universe elements (--domain "
                f"has {format_count(workload.universe_size)})" if hull.above_limit or hull.memory is None
                else hull.memory)
    relaxed_out = ("the relaxation L holds only --workload marginals:2" if relaxed.blocker is not None
                   else relaxed.memory)
    tables_out = (f"the tables body takes only disjoint tables (--workload marginals:1, identity or prefix:ATTR), "
                  f"not {spec}" if tables.blocker is not None else tables.memory)
    local_out = (f"the local body takes only marginal tables (--workload marginals:WAY), not {spec}"
                 if local.blocker is not None else local.memory)
    if local_out is None:
        local_out = f"the local body runs only --solver auto, not {solver}"
    raise ValueError(f"--body auto: no body to project {spec} onto: {hull_out}, {relaxed_out}, {tables_out}, "
                     f"and {local_out}; use {UNPROJECTED}{regardless}")


def solver_help() -> str:
    """``--solver``'s help, listing each body's solvers as the library gives them."""
    hull, sdp, local = body_solvers("hull"), body_solvers("relaxed", "sdp+local"), body_solvers("relaxed", "local")
    assert body_solvers("relaxed", "sdp") == sdp
    return (f"the projection's solver (--mechanism projection or factorization+projection; any case): onto the "
            f"hull K_Q (--body hull, factorization+projection) one of {', '.join(hull)} (fast: the active-set "
            f"solver, which needs no matrix; the others are CVXPY's, on the workload's explicit matrix); onto the "
            f"relaxation L (--body relaxed) one of {', '.join(sdp)}, or with --relaxation local one of "
            f"{', '.join(local)}; --body auto (default) takes all of these, and a solver only one body runs "
            "picks that body (with the default relaxation: fast, ECOS and OSQP pick K_Q, admm picks L). "
            "Default: auto")
