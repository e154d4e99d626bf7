"""Command line: ``projmech release`` on a CSV file, ``projmech demo`` on the embedded Adult data."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import datasets, workloads
from .data import Dataset
from .domain import Domain
from .experiments import error_vs_n, format_table, plot_error_vs_n
from .bodies.relaxation import RELAXATIONS
from .mechanisms import (
    BODIES,
    HULL_MAX_UNIVERSE,
    FactorizationMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ProjectionMechanism,
)
from .privacy import ApproxDP, PureDP, ZCDP
from .workloads import Workload

__all__ = ["main", "parse_workload"]


def parse_workload(spec: str, domain: Domain, implicit: bool = False) -> Workload:
    """``marginals:W``, ``identity``, ``prefix`` or ``all_range`` over ``domain``'s universe
    (``prefix`` and ``all_range`` order the universe row-major). ``implicit``: build the
    marginals without their matrix (:func:`~projmech.workloads.marginals`); the other
    workloads have no implicit form here."""
    name, _, argument = spec.partition(":")
    if name == "marginals":
        try:
            way = int(argument)
        except ValueError:
            raise ValueError(f"--workload: expected marginals:WAY with an integer WAY, got {spec!r}") from None
        return workloads.marginals(domain, way, implicit=implicit)
    if implicit:
        raise ValueError(f"--workload: only marginals:WAY can be built implicitly, got {spec!r}")
    if argument:
        raise ValueError(f"--workload: {name!r} takes no argument, got {spec!r}")
    builders = {"identity": workloads.identity, "prefix": workloads.prefix, "all_range": workloads.all_range}
    if name not in builders:
        raise ValueError(f"--workload: expected marginals:WAY, identity, prefix or all_range, got {spec!r}")
    built = builders[name](domain.size)
    return Workload(built.matrix, built.labels, domain=domain, name=built.name)


def _privacy(args: argparse.Namespace, mechanism: str) -> ZCDP | ApproxDP | PureDP:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise ValueError("--rho: give either --rho or --epsilon/--delta, not both")
        return ZCDP(args.rho)
    if args.epsilon is None:
        raise ValueError("--epsilon: required (or --rho for zCDP)")
    if mechanism == "laplace":
        if args.delta is not None:
            raise ValueError("--delta: the Laplace mechanism is pure epsilon-DP; omit --delta")
        return PureDP(args.epsilon)
    if args.delta is None:
        raise ValueError("--delta: required for the Gaussian, projection and factorization mechanisms (or use --rho)")
    return ApproxDP(args.epsilon, args.delta)


def _body(args: argparse.Namespace) -> str | None:
    """The projection mechanism's ``body`` (``None`` for the other mechanisms)."""
    if args.mechanism != "projection":
        for flag, value in (("--body", args.body), ("--relaxation", args.relaxation)):
            if value is not None:
                raise ValueError(f"{flag}: applies only to --mechanism projection, not {args.mechanism}")
        return None
    if args.body == "hull" and args.relaxation is not None:
        raise ValueError("--relaxation: applies only with --body relaxed or auto, not hull")
    return args.body or "auto"


def _release(args: argparse.Namespace) -> int:
    dataset = Dataset.from_csv(args.data, args.domain)
    body = _body(args)
    # Marginals are built without their k x m matrix wherever the mechanism never needs it: the
    # Gaussian mechanism, projection onto L (true answers counted from the records) and
    # projection onto K_Q by the active-set solver (products with F only). CVXPY solvers, the
    # Laplace and the factorization mechanisms need the matrix.
    implicit = args.workload.startswith("marginals:") and (
        args.mechanism == "gaussian"
        or (args.mechanism == "projection" and (body == "relaxed" or args.solver.lower() in ("auto", "fast")))
    )
    workload = parse_workload(args.workload, dataset.domain, implicit=implicit)
    privacy = _privacy(args, args.mechanism)
    if args.mechanism == "gaussian":
        mechanism = GaussianMechanism(workload, privacy, neighbouring=args.neighbouring)
    elif args.mechanism == "laplace":
        mechanism = LaplaceMechanism(workload, privacy, neighbouring=args.neighbouring)
    elif args.mechanism.startswith("factorization"):
        mechanism = FactorizationMechanism(workload, privacy, project=args.mechanism == "factorization+projection",
                                           neighbouring=args.neighbouring, solver=args.solver)
    else:
        relaxation = {} if args.relaxation is None else {"relaxation": args.relaxation}
        mechanism = ProjectionMechanism(workload, privacy, solver=args.solver, neighbouring=args.neighbouring,
                                        body=body, **relaxation)
    released = mechanism.release(dataset, rng=np.random.default_rng(args.seed))
    out = Path(args.out)
    released.to_frame()[["query", "answer"]].to_csv(out, index=False)
    summary_path = Path(args.summary) if args.summary else out.with_suffix(".json")
    summary_path.write_text(released.to_json() + "\n", encoding="utf-8")
    projected = f", projected onto {released.summary()['body']}" if released.projection is not None else ""
    print(f"released {len(released.answers)} answers with {released.privacy} ({released.neighbouring.value} "
          f"neighbours), sigma={released.sigma:.3g}{projected}: {out}; summary: {summary_path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    data = datasets.adult(binary=True, attributes=datasets.ADULT_DEMO_ATTRIBUTES)
    workload = workloads.marginals(data.domain, 2)
    privacy = ApproxDP(args.epsilon, args.delta)
    mechanisms = {
        "gaussian": GaussianMechanism(workload, privacy),
        "projection": ProjectionMechanism(workload, privacy),
    }
    sizes = [s for s in (100, 300, 1000, 3000, 10000, data.n) if s <= data.n]
    print(f"projmech demo: Adult, {len(data.domain)} binary attributes, {workload.num_queries} two-way "
          f"marginal cells, {privacy}, replace-one neighbours, {args.trials} trials per n")
    results = error_vs_n(data, mechanisms, sizes, args.trials, np.random.default_rng(args.seed))
    print(format_table(results))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results.to_csv(out_dir / "error_vs_n.csv", index=False)
    expected = [mechanisms["gaussian"].expected_rmse(n) for n in sizes]
    plot_error_vs_n(results, str(out_dir / "error_vs_n.png"),
                    f"Adult 2-way marginals, {privacy}", bounds={"Gaussian E[RMSE] (closed form)": (sizes, expected)})
    print(f"wrote {out_dir / 'error_vs_n.csv'} and {out_dir / 'error_vs_n.png'} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="projmech", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser("release", help="privately release a workload's answers on a CSV data set")
    release.add_argument("--data", required=True, help="CSV file with a header row of attribute names")
    release.add_argument("--domain", required=True, help='JSON file {"attribute": size, ...}')
    release.add_argument("--workload", default="marginals:2", help="marginals:WAY, identity, prefix or all_range")
    release.add_argument("--mechanism", default="projection",
                         choices=["gaussian", "laplace", "projection", "factorization", "factorization+projection"])
    release.add_argument("--epsilon", type=float)
    release.add_argument("--delta", type=float)
    release.add_argument("--rho", type=float, help="zCDP parameter, instead of --epsilon/--delta")
    release.add_argument("--neighbouring", choices=["replace-one", "add-remove"], default="replace-one")
    release.add_argument("--solver", default="auto", help="auto, fast (the active-set solver for K_Q), CLARABEL, ECOS, OSQP or SCS")
    release.add_argument("--body", choices=BODIES, default=None,
                         help="projection mechanism: the hull K_Q, the relaxation L of 2-way marginals, or auto "
                              f"(the hull up to {HULL_MAX_UNIVERSE} universe elements, L beyond; default)")
    release.add_argument("--relaxation", choices=RELAXATIONS, default=None,
                         help="projection onto L: its constraints (default: ProjectionMechanism's, sdp+local)")
    release.add_argument("--seed", type=int, default=None, help="seed of the noise (default: fresh OS entropy)")
    release.add_argument("--out", required=True, help="CSV of query labels and released answers")
    release.add_argument("--summary", help="JSON summary path (default: --out with .json)")
    release.set_defaults(handler=_release)

    demo = commands.add_parser("demo", help="Gaussian vs projection on the embedded binarized Adult data")
    demo.add_argument("--trials", type=int, default=20)
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--delta", type=float, default=1e-6)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out-dir", default="demo_output")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"projmech {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
