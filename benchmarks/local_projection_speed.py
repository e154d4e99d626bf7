"""The local-polytope projection's cost per iteration, against one pass over the tables' cells.

All 3-way marginals at ``(1, 1e-9)``-DP with continuous noise (seed 0), projected onto the local
polytope of their tables by :func:`projmech.bodies.project_to_local` (the noisy cells, ``identity``)
or :func:`projmech.bodies.project_measurements` with ``metric="tables"`` (the optimal residual
strategy's measurements, ``strategy``). Rows:

* ``adult10 identity``, ``adult10 strategy``: Adult's 10 attributes of at most 85 values (443,862 cells);
* ``10x17 strategy``: 10 attributes of 17 values, 10,000 uniform rows (589,560 cells);
* ``adult14 strategy``: all 14 of Adult's attributes (20,894,536 cells, about 6 GB at the peak; not
  run by default; ``--max-iterations`` caps it);
* ``code500 identity``, ``code500 strategy``: a code column of 500 values and 8 attributes of 8-60
  values, 135,727 rows from a chain of Dirichlet(0.5) tables (10,347,020 cells; not run by default).

Per row: the projection's seconds (its setup included), L-BFGS iterations, milliseconds per
iteration and that as a multiple of one pass over the cells (copying them into an allocated
array), the certificate's gap and tolerance, the released tables' RMSE beside the unprojected
answers' (RMSE over the cells of the 3-way tables), inconsistency and smallest cell. Usage::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/local_projection_speed.py
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/local_projection_speed.py --rows "adult14 strategy" \\
        --max-iterations 200
    .venv/bin/python benchmarks/local_projection_speed.py --smoke        # does it run (seconds)

Writes ``results/local_projection_speed.csv``.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm

ADULT10 = ("age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
           "native-country", "income>50K")
ROWS = ("adult10 identity", "adult10 strategy", "10x17 strategy", "adult14 strategy", "code500 identity",
        "code500 strategy")
#: The code500 rows' attribute sizes: one column of 500 values (a name or code) and 8 others.
CODE500 = (500, 60, 40, 30, 25, 20, 16, 12, 10)
DEFAULT_ROWS = ROWS[:3]


def data_of(row: str, smoke: bool) -> pm.Dataset:
    """The table of a row (a few attributes on a few rows for a smoke run)."""
    if row.startswith("10x17"):
        values, attributes, rows = (5, 3, 500) if smoke else (17, 10, 10_000)
        domain = pm.Domain([f"p{i}" for i in range(attributes)], [values] * attributes)
        return pm.Dataset(np.random.default_rng(0).integers(0, values, size=(rows, attributes)), domain)
    if row.startswith("code500"):
        sizes, rows = ((50, 6, 4, 3), 2000) if smoke else (CODE500, 135_727)
        domain = pm.Domain([f"c{i}" for i in range(len(sizes))], list(sizes))
        return pm.Dataset(bench.chain_records(sizes, rows, np.random.default_rng(0)), domain)
    if smoke:
        return pm.datasets.adult(attributes=list(ADULT10[-4:])).subsample(3000, np.random.default_rng(0))
    return pm.datasets.adult(attributes=list(ADULT10)) if row.startswith("adult10") else pm.datasets.adult()


def one_pass(cells: int) -> float:
    """Seconds to copy ``cells`` doubles into an allocated array (the best of five)."""
    source, target = np.random.default_rng(0).random(cells), np.empty(cells)
    best = np.inf
    for _ in range(5):
        began = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - began)
    return best


def run(row: str, smoke: bool, max_iterations: int) -> dict[str, Any]:
    data = data_of(row, smoke)
    workload = pm.marginals(data.domain, way=3, implicit=True)
    privacy = pm.ApproxDP(1.0, 1e-9)
    truth = workload.answer_data(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.BudgetWarning)
        if row.endswith("identity"):
            mechanism = pm.ProjectionMechanism(workload, privacy, body="local", noise="continuous")
            std = mechanism.noise.std / data.n
            noisy = truth + np.random.default_rng(0).normal(0.0, std, truth.size)
            measured_seconds = 0.0

            def project() -> Any:
                return pm.bodies.project_to_local(workload, noisy, noise_scale=std, max_iterations=max_iterations)
        else:
            began = time.perf_counter()
            strategy = pm.FactorizationMechanism(workload, privacy, noise="continuous").release(data, rng=0)
            measured_seconds = time.perf_counter() - began
            noisy = strategy.answers
            measurements = strategy.measurements()
            del strategy

            def project() -> Any:
                return pm.bodies.project_measurements(data.domain.sizes, measurements, metric="tables",
                                                      max_iterations=max_iterations)
    unprojected = float(np.sqrt(np.mean((noisy - truth) ** 2)))
    began = time.perf_counter()
    try:
        result = project()
    except pm.bodies.LocalError as error:
        result = error.best
    seconds = time.perf_counter() - began
    errors = [result.marginal(t).ravel() - data.table(t).ravel() / data.n for t in result.tables]
    cells = result.values.size
    iterations = result.stats.iterations
    per_iteration = seconds / max(iterations, 1)
    copy = one_pass(cells)
    return {"row": row, "cells": cells, "measured_s": measured_seconds, "seconds": seconds,
            "iterations": iterations, "ms_per_iteration": 1e3 * per_iteration, "pass_ms": 1e3 * copy,
            "passes_per_iteration": per_iteration / copy, "gap": result.stats.gap,
            "tolerance": result.stats.tolerance, "status": result.stats.status.value,
            "rmse": float(np.sqrt(np.mean(np.concatenate(errors) ** 2))), "unprojected_rmse": unprojected,
            "inconsistency": result.inconsistency, "min_cell": float(result.values.min()),
            "peak_mb": bench.peak_memory_mb()}


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--rows", type=bench.name_list, default=list(DEFAULT_ROWS),
                        help=f"rows (default {', '.join(DEFAULT_ROWS)}; also: {', '.join(ROWS[3:])})")
    parser.add_argument("--max-iterations", type=int, default=5000, help="L-BFGS iterations at most (default 5000)")
    parser.add_argument("--out", default=str(bench.RESULTS / "local_projection_speed.csv"), help="CSV file written")
    bench.add_smoke_option(parser, "4 of Adult's attributes on 3,000 rows, 3 attributes of 5 values on 500, "
                                   "4 of 3-50 values on 2,000")
    args = parser.parse_args(argv)
    refused = bench.unknown_names("--rows", args.rows, ROWS)
    if refused is not None:
        return refused
    if args.smoke:
        args.rows, args.out = [*DEFAULT_ROWS, "code500 strategy"], bench.smoke_path(args.out)
    records = []
    for row in args.rows:
        record = run(row, args.smoke, args.max_iterations)
        records.append(record)
        print(f"{row}: {record['cells']:,} cells, {record['seconds']:.1f} s, {record['iterations']} iterations, "
              f"{record['ms_per_iteration']:.1f} ms each = {record['passes_per_iteration']:.0f} passes; "
              f"gap {record['gap']:.3g} (tolerance {record['tolerance']:.3g}, {record['status']}); RMSE "
              f"{record['rmse']:.4e} (unprojected {record['unprojected_rmse']:.4e})", flush=True)
    frame = pd.DataFrame(records)
    print(f"\nwrote {bench.write_csv(frame, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
