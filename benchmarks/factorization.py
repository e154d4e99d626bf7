"""Benchmark the factorization norm optimizer ``factorization_norm`` against fixed strategies.

Three families of workloads, all given to the optimizer through their Gram matrix ``F^T F``:

* ``prefix``: ``prefix(m, implicit=True)``, the ``m`` threshold queries;
* ``all_range``: ``all_range(m, implicit=True)``, all ``m(m+1)/2`` range queries (8.4 million at
  ``m = 4096``; the ``k x m`` matrix is never built);
* ``marginals d=D``: all 2-way marginals over ``D`` binary attributes (``k = 4 C(D, 2)``,
  ``m = 2^D``).

For each problem, ``factorization_norm(F, method=...)`` is run with ``method="iterative"`` and, where
``m <= --sdp-max``, with ``method="sdp"`` (``--solver``, SCS by default as in the library), at relative gap
``--tol``. Per run: ``gamma``, the certified ``lower_bound``, the ``relative_gap`` on ``gamma^2``,
the ``residual`` ``||R M - F||_{1->2}``, the iterations, the status and the wall time of the whole
call (the Gram matrix included). A run that certifies nothing (``FactorizationError``) is a row with
status ``failed: <reason>`` and the numbers of the best factorization it found, if any.

The fixed strategies, through ``Factorization.from_strategy``: the identity (every problem) and the
binary tree ``hierarchical_strategy(m, 2)`` (prefix and all-range). They carry no lower bound of
their own: their ``lower_bound`` column holds the largest one the optimizer found on that problem
(valid even from a run that missed ``--tol``), and ``ratio`` is ``gamma / gamma_opt``, ``gamma_opt``
being the smallest ``gamma`` the optimizer reached on that problem (so ``ratio`` is also ``>= 1``
up to the gap for the optimizer's own rows).

Checks, printed: the targets prefix ``m = 1024`` at gap ``<= 1e-3`` within 5 s and prefix
``m = 4096`` at gap ``<= 1e-3`` within 60 s (iterative method, wall time; only for sizes in the run),
and that no certified lower bound exceeds its ``gamma`` (by more than ``1e-9`` relative). Exit code
1 if a certificate is broken; the targets are for the record only.

Run from the repository root: ``.venv/bin/python benchmarks/factorization.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

from projmech import (
    Factorization,
    FactorizationError,
    Workload,
    all_range,
    factorization_norm,
    hierarchical_strategy,
    identity_strategy,
    marginals,
    prefix,
)

DEFAULT_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096)
DEFAULT_DIMS: tuple[int, ...] = (4, 6, 8)
QUICK_SIZES: tuple[int, ...] = (64, 256)
QUICK_DIMS: tuple[int, ...] = (4, 6)
#: A lower bound above ``gamma * (1 + CERTIFICATE_RTOL)`` is a broken certificate.
CERTIFICATE_RTOL = 1e-9
#: (family, m, relative gap, seconds): the optimizer's targets on prefix workloads.
TARGETS: tuple[tuple[str, int, float, float], ...] = (("prefix", 1024, 1e-3, 5.0), ("prefix", 4096, 1e-3, 60.0))
#: Rows of the optimizer (the others are fixed strategies).
OPTIMIZED = "optimized"
#: Column order of the CSV.
COLUMNS: tuple[str, ...] = ("problem", "family", "k", "m", "method", "kind", "status", "certified", "gamma",
                            "lower_bound", "relative_gap", "residual", "ratio", "iterations", "time_s", "solve_time_s")


@dataclass(frozen=True)
class Problem:
    """One workload to factorize and the fixed strategies to compare with."""

    name: str
    family: str
    workload: Workload
    strategies: dict[str, Callable[[int], np.ndarray]]


def problems(sizes: Sequence[int], dims: Sequence[int]) -> Iterator[Problem]:
    """Prefix then all-range workloads of each size, then 2-way marginals, built lazily."""
    interval_strategies = {"identity": identity_strategy,
                           "binary tree": lambda m: hierarchical_strategy(m, branching=2)}
    for family, build in (("prefix", prefix), ("all_range", all_range)):
        for m in sizes:
            yield Problem(f"{family} m={m}", family, build(m, implicit=True), interval_strategies)
    for d in dims:
        domain = bench.binary_domain(d)
        yield Problem(f"marginals d={d}", "marginals", marginals(domain, 2), {"identity": identity_strategy})


def _base_row(problem: Problem, method: str, kind: str) -> dict[str, Any]:
    k, m = problem.workload.shape
    return {"problem": problem.name, "family": problem.family, "k": k, "m": m, "method": method, "kind": kind}


def _measures(fact: Factorization | None) -> dict[str, Any]:
    """The numbers of one factorization (NaN where there is none)."""
    if fact is None:
        return {"gamma": math.nan, "lower_bound": math.nan, "relative_gap": math.nan, "residual": math.nan,
                "iterations": 0, "solve_time_s": math.nan}
    gap = fact.relative_gap
    iterations = fact.stats.iterations
    return {"gamma": fact.gamma, "lower_bound": math.nan if fact.lower_bound is None else fact.lower_bound,
            "relative_gap": math.nan if gap is None else gap, "residual": fact.residual,
            "iterations": 0 if iterations is None else iterations, "solve_time_s": fact.stats.solve_time}


def optimize(problem: Problem, method: str, tol: float, max_iterations: int, solver: str) -> dict[str, Any]:
    """One ``factorization_norm`` call, timed as a whole (Gram matrix included); one result row."""
    label = f"sdp/{solver}" if method == "sdp" else method
    row = _base_row(problem, label, OPTIMIZED)
    timer = bench.Timer()
    try:
        fact: Factorization | None = factorization_norm(problem.workload, method=method, tol=tol,
                                                        max_iterations=max_iterations, solver=solver)
        status, certified = fact.stats.status.value, True
    except FactorizationError as error:
        fact, certified = error.best, False
        status = f"failed: {error.attempts[-1] if error.attempts else error}"
    row["time_s"] = timer.seconds
    return {**row, **_measures(fact), "status": status, "certified": certified}


def fixed(problem: Problem, name: str, strategy: Callable[[int], np.ndarray]) -> dict[str, Any]:
    """``gamma`` of a fixed strategy (``R = F M^+``); the time covers building M and computing gamma."""
    row = _base_row(problem, name, "fixed")
    timer = bench.Timer()
    try:
        fact = Factorization.from_strategy(problem.workload, strategy(problem.workload.universe_size))
        row.update(_measures(fact), status="given")
    except ValueError as error:
        row.update(_measures(None), status=f"failed: {error}")
    row["time_s"] = timer.seconds
    return {**row, "certified": False}


def add_ratios(results: pd.DataFrame) -> pd.DataFrame:
    """Column ``ratio = gamma / gamma_opt`` per problem, ``gamma_opt`` the smallest optimizer gamma;
    the fixed strategies' ``lower_bound`` becomes the problem's largest optimizer lower bound."""
    optimized = results["kind"] == OPTIMIZED
    by_problem = results[optimized].groupby("problem", sort=False)
    best_gamma = results["problem"].map(by_problem["gamma"].min())
    best_bound = results["problem"].map(by_problem["lower_bound"].max())
    results["ratio"] = results["gamma"] / best_gamma
    results.loc[~optimized, "lower_bound"] = best_bound[~optimized]
    return results


def broken_certificates(results: pd.DataFrame) -> pd.DataFrame:
    """Certified rows whose lower bound exceeds gamma by more than ``CERTIFICATE_RTOL`` relative."""
    certified = results[results["certified"]]
    return certified[certified["lower_bound"] > certified["gamma"] * (1 + CERTIFICATE_RTOL)]


def target_checks(results: pd.DataFrame) -> list[str]:
    """One ``PASS``/``FAIL`` line per target whose problem is in the run (the iterative row)."""
    lines = []
    for family, m, gap, seconds in TARGETS:
        match = results[(results["family"] == family) & (results["m"] == m) & (results["method"] == "iterative")]
        if match.empty:
            continue
        row = match.iloc[0]
        passed = bool(row["relative_gap"] <= gap and row["time_s"] <= seconds)
        lines.append(f"target {family} m={m}: gap <= {gap:g} in <= {seconds:g} s: {'PASS' if passed else 'FAIL'} "
                     f"(gap {row['relative_gap']:.2e}, {row['time_s']:.2f} s, {row['status']})")
    return lines


def format_results(results: pd.DataFrame) -> str:
    """A fixed-width plain-text table of the benchmark rows."""
    return bench.column_table(results.itertuples(index=False), [
        ("problem", "<16", "problem"), ("k", ">9", "k"), ("m", ">5", "m"), ("method", "<13", "method"),
        ("gamma", "10.5f", "gamma"), ("lower bnd", "10.5f", "lower_bound"), ("gap", "8.1e", "relative_gap"),
        ("residual", "8.1e", "residual"), ("iters", ">5", iterations_cell), ("time s", "8.3f", "time_s"),
        ("ratio", "7.3f", "ratio")])


def iterations_cell(row: Any) -> str:
    """The iterative method's iteration count; ``-`` for the other methods and the baselines."""
    return str(row.iterations) if row.kind == OPTIMIZED and row.method == "iterative" else "-"


def build_parser() -> argparse.ArgumentParser:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--sizes", type=bench.int_list, default=None,
                        help="comma-separated universe sizes m of prefix and all-range (default "
                             + ",".join(map(str, DEFAULT_SIZES)) + "; empty string: none)")
    parser.add_argument("--dims", type=bench.int_list, default=None,
                        help="comma-separated numbers d of binary attributes for 2-way marginals (default "
                             + ",".join(map(str, DEFAULT_DIMS)) + "; empty string: none)")
    parser.add_argument("--sdp-max", type=int, default=64,
                        help="run the SDP only where m <= this (default 64; the SDP grows fast in m)")
    parser.add_argument("--solver", default="SCS", help="CVXPY solver of the SDP (default SCS)")
    parser.add_argument("--tol", type=float, default=1e-3, help="target relative gap on gamma^2 (default 1e-3)")
    parser.add_argument("--max-iterations", type=int, default=200,
                        help="iteration limit of the iterative method (default 200)")
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {','.join(map(str, QUICK_SIZES))} and dims {','.join(map(str, QUICK_DIMS))}")
    parser.add_argument("--out", default="results/factorization.csv",
                        help="CSV output (default results/factorization.csv)")
    bench.add_smoke_option(parser, "m = 16, d = 3 (the SDP on both)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.sizes, args.dims, args.out = [16], [3], bench.smoke_path(args.out)
    sizes = args.sizes if args.sizes is not None else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    dims = args.dims if args.dims is not None else list(QUICK_DIMS if args.quick else DEFAULT_DIMS)
    if any(m < 1 for m in sizes) or any(d < 2 for d in dims):
        return bench.usage_error("--sizes must be >= 1 and --dims >= 2")
    if not (math.isfinite(args.tol) and args.tol > 0) or args.max_iterations < 1:
        return bench.usage_error("--tol must be > 0 and --max-iterations >= 1")

    print(f"factorization benchmark: tol={args.tol:g}, iterative (max {args.max_iterations} iterations), "
          f"sdp/{args.solver} where m <= {args.sdp_max}", flush=True)
    rows: list[dict[str, Any]] = []

    def record(row: dict[str, Any]) -> None:
        rows.append(row)
        print(f"  {row['problem']:<16} {row['method']:<13} {row['time_s']:8.3f} s  {row['status']}", flush=True)

    timer = bench.Timer()
    for problem in problems(sizes, dims):
        record(optimize(problem, "iterative", args.tol, args.max_iterations, args.solver))
        if problem.workload.universe_size <= args.sdp_max:
            record(optimize(problem, "sdp", args.tol, args.max_iterations, args.solver))
        for name, strategy in problem.strategies.items():
            record(fixed(problem, name, strategy))
    results = add_ratios(pd.DataFrame(rows))[list(COLUMNS)]
    print()
    print(format_results(results))

    print()
    for line in target_checks(results):
        print(line)
    broken = broken_certificates(results)
    certified = int(results["certified"].sum())
    if broken.empty:
        print(f"certificates: every certified lower bound (of {certified}) is <= its gamma")
    else:
        for row in broken.itertuples(index=False):
            print(f"BROKEN certificate: {row.problem} {row.method}: lower bound {row.lower_bound:.10g} > "
                  f"gamma {row.gamma:.10g}")

    out = bench.write_csv(results, args.out)
    print(f"\nwrote {out} in {timer.seconds:.1f} s")
    return 1 if not broken.empty else 0


if __name__ == "__main__":
    sys.exit(main())
