"""Benchmark the CVXPY solvers behind ``project_to_hull`` on noisy answers.

Two families of projection problems, each solved by every requested solver on the same noisy
point ``y``:

* ``marginals d=D``: all 2-way marginals over ``D`` binary attributes (``k = 2 C(D, 2)``,
  ``m = 2^D``), true answers from a synthetic data set of ``--rows`` rows over ``{0,1}^D``
  (independent attributes with seeded random biases), plus Gaussian noise calibrated for
  ``ApproxDP(--epsilon, --delta)`` at that ``n`` (replace-one neighbours);
* ``random KxM``: ``random_queries(K, M)`` (0/1 entries) on a random histogram of ``--rows``
  rows over ``M`` cells, with Gaussian noise calibrated the same way.

Per solver: median wall time over ``--repeats`` runs (``solve_time``: model building and solve,
as reported by ``project_to_hull``; ``total``: the whole call, certification included), the
projected distance, the certified Frank–Wolfe gap, the raw feasibility error of the solver's own
output, and the objective's relative difference to the best objective reached on that problem.
A solver that yields no certified projection is a row with status ``failed: <reason>``.

Run from the repository root: ``.venv/bin/python benchmarks/solvers.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cvxpy as cp
import numpy as np
import pandas as pd

from projmech import (
    ApproxDP,
    Dataset,
    Domain,
    GaussianMechanism,
    ProjectionError,
    Workload,
    histogram,
    marginals,
    project_to_hull,
    random_queries,
)
from projmech.bodies.hull import SOLVERS
from projmech.experiments import format_number

DEFAULT_DIMS: tuple[int, ...] = (6, 8, 10, 12)
DEFAULT_RANDOM: tuple[tuple[int, int], ...] = ((50, 200), (200, 2000), (500, 4000))
QUICK_DIMS: tuple[int, ...] = (6, 8)
QUICK_RANDOM: tuple[tuple[int, int], ...] = ((50, 200),)
#: Objectives below this count as 0 in the relative difference (the noisy point is inside K_Q).
OBJECTIVE_FLOOR = 1e-12


@dataclass(frozen=True)
class Problem:
    """One projection instance: a workload, the noisy point and how it was made."""

    name: str
    workload: Workload
    noisy: np.ndarray
    n: int
    sigma: float


def _noisy_answers(workload: Workload, h: np.ndarray, n: int, privacy: ApproxDP,
                   rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Noisy answers and sigma of one Gaussian-mechanism release on the normalized histogram ``h``
    of ``n`` rows (calibration from the library: replace-one neighbours)."""
    release = GaussianMechanism(workload, privacy).release(h, n=n, rng=rng)
    return release.noisy_answers, release.sigma


def marginal_problem(d: int, rows: int, privacy: ApproxDP, seed: int) -> Problem:
    """Noisy 2-way marginals of a synthetic ``rows``-row data set over ``{0,1}^d``."""
    rng = np.random.default_rng([seed, 0, d])
    domain = Domain([f"x{i}" for i in range(d)], [2] * d)
    biases = rng.uniform(0.1, 0.9, size=d)
    data = Dataset((rng.random((rows, d)) < biases).astype(np.int64), domain)
    workload = marginals(domain, 2)
    noisy, sigma = _noisy_answers(workload, histogram(data), rows, privacy, rng)
    return Problem(f"marginals d={d}", workload, noisy, rows, sigma)


def random_problem(k: int, m: int, rows: int, privacy: ApproxDP, seed: int) -> Problem:
    """Noisy answers of ``k`` random 0/1 queries on a random ``rows``-row histogram over ``m`` cells."""
    rng = np.random.default_rng([seed, 1, k, m])
    workload = random_queries(k, m, rng)
    counts = rng.multinomial(rows, rng.dirichlet(np.ones(m)))
    noisy, sigma = _noisy_answers(workload, counts / rows, rows, privacy, rng)
    return Problem(f"random {k}x{m}", workload, noisy, rows, sigma)


def problems(dims: Sequence[int], shapes: Sequence[tuple[int, int]], rows: int, privacy: ApproxDP,
             seed: int) -> Iterator[Problem]:
    """The marginal problems, then the random-workload ones, built lazily (one in memory at a time)."""
    for d in dims:
        yield marginal_problem(d, rows, privacy, seed)
    for k, m in shapes:
        yield random_problem(k, m, rows, privacy, seed)


def _failure_reason(error: ProjectionError, solver: str) -> str:
    outcomes = [outcome for name, outcome in error.attempts if name == solver]
    return outcomes[-1] if outcomes else str(error)


def benchmark(problem: Problem, solver: str, repeats: int, tol: float = 1e-8) -> dict[str, Any]:
    """Solve ``problem`` with ``solver`` ``repeats`` times; one result row with median times.

    A solver that fails is not retried (the solvers are deterministic on a fixed input): its
    row carries the time of the failed attempt and ``status = "failed: <reason>"``.
    """
    k, m = problem.workload.shape
    row: dict[str, Any] = {"problem": problem.name, "k": k, "m": m, "n": problem.n, "sigma": problem.sigma,
                           "solver": solver, "status": ""}
    solve_times, total_times = [], []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            result = project_to_hull(problem.workload, problem.noisy, solver=solver, tol=tol)
        except ProjectionError as error:
            total_times = [time.perf_counter() - start]
            solve_times, result = [], None
            row["status"] = f"failed: {_failure_reason(error, solver)}"
            break
        total_times.append(time.perf_counter() - start)
        solve_times.append(result.solve_time)
    row["repeats"] = len(total_times)
    row["solve_time_s"] = statistics.median(solve_times) if solve_times else math.nan
    row["total_time_s"] = statistics.median(total_times)
    if result is None:
        row.update(distance=math.nan, objective=math.nan, gap=math.nan, tolerance=math.nan,
                   raw_feasibility_error=math.nan)
    else:
        row.update(status=result.status, distance=result.distance, objective=result.objective, gap=result.gap,
                   tolerance=result.tolerance, raw_feasibility_error=result.raw_feasibility_error)
    return row


def add_relative_objective(results: pd.DataFrame) -> pd.DataFrame:
    """Column ``objective_rel_diff``: ``(objective - best) / max(best, OBJECTIVE_FLOOR)`` per
    problem, ``best`` being the smallest objective any solver certified on that problem.

    The floor keeps the column meaningful when the noisy point lies inside K_Q (objective ~1e-28).
    """
    best = results.groupby("problem", sort=False)["objective"].transform("min")
    results["objective_rel_diff"] = (results["objective"] - best) / best.clip(lower=OBJECTIVE_FLOOR)
    return results


def format_results(results: pd.DataFrame) -> str:
    """A fixed-width plain-text table of the benchmark rows."""
    header = (f"{'problem':<16} {'k':>5} {'m':>5} {'solver':<9} {'solve s':>9} {'total s':>9} {'distance':>11} "
              f"{'gap':>9} {'raw feas':>9} {'obj rel':>9}  status")
    lines = [header, "-" * len(header)]

    for row in results.itertuples(index=False):
        lines.append(
            f"{row.problem:<16} {row.k:>5} {row.m:>5} {row.solver:<9} {format_number(row.solve_time_s, '9.4f')} "
            f"{format_number(row.total_time_s, '9.4f')} {format_number(row.distance, '11.6g')} {format_number(row.gap, '9.1e')} "
            f"{format_number(row.raw_feasibility_error, '9.1e')} {format_number(row.objective_rel_diff, '9.1e')}  {row.status}"
        )
    return "\n".join(lines)


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _shape_list(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        if part.strip():
            k, _, m = part.lower().partition("x")
            shapes.append((int(k), int(m)))
    return shapes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=_int_list, default=None,
                        help=f"comma-separated numbers of binary attributes (default {','.join(map(str, DEFAULT_DIMS))})")
    parser.add_argument("--random", type=_shape_list, default=None,
                        help="comma-separated KxM random workloads (default "
                             + ",".join(f"{k}x{m}" for k, m in DEFAULT_RANDOM) + "; empty string: none)")
    parser.add_argument("--solvers", type=lambda s: [p.strip().upper() for p in s.split(",") if p.strip()],
                        default=list(SOLVERS), help=f"comma-separated solvers (default {','.join(SOLVERS)})")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per solver, median reported (default 3)")
    parser.add_argument("--rows", type=int, default=1000, help="data set size n (default 1000)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tol", type=float, default=1e-8,
                        help="certification tolerance of project_to_hull (default its own, 1e-8)")
    parser.add_argument("--quick", action="store_true",
                        help=f"dims {','.join(map(str, QUICK_DIMS))}, one small random workload, 1 repeat")
    parser.add_argument("--out", default="results/solvers.csv", help="CSV output (default results/solvers.csv)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    dims = args.dims if args.dims is not None else list(QUICK_DIMS if args.quick else DEFAULT_DIMS)
    shapes = args.random if args.random is not None else list(QUICK_RANDOM if args.quick else DEFAULT_RANDOM)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if repeats < 1:
        print("solvers.py: error: --repeats must be at least 1", file=sys.stderr)
        return 2
    unknown = [s for s in args.solvers if s not in SOLVERS]
    if unknown:
        print(f"solvers.py: error: unknown solvers {unknown}; choose from {list(SOLVERS)}", file=sys.stderr)
        return 2
    installed = set(cp.installed_solvers())
    missing = [s for s in args.solvers if s not in installed]
    if missing:
        print(f"solvers.py: skipping solvers that are not installed: {missing}", file=sys.stderr)
    solvers = [s for s in args.solvers if s in installed]
    if not solvers:
        print("solvers.py: error: no solver left to benchmark", file=sys.stderr)
        return 2
    privacy = ApproxDP(args.epsilon, args.delta)

    print(f"solver benchmark: {privacy}, replace-one, n={args.rows}, tol={args.tol:g}, {repeats} repeat(s), "
          f"solvers {solvers}", flush=True)
    rows = []
    start = time.perf_counter()
    for problem in problems(dims, shapes, args.rows, privacy, args.seed):
        for solver in solvers:
            row = benchmark(problem, solver, repeats, args.tol)
            rows.append(row)
            print(f"  {problem.name:<16} {solver:<9} {row['total_time_s']:8.3f} s  {row['status']}", flush=True)
    results = add_relative_objective(pd.DataFrame(rows))
    print()
    print(format_results(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results.to_csv(out, index=False)
    print(f"\nwrote {out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
