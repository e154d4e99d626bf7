"""The optimal strategy's measurements projected in two metrics, beside the projected cells.

For each table and seed, at ``(epsilon, 1e-9)``-DP with continuous noise (so that a seed fixes the
draw), all k-way marginals released four ways:

* ``cells+projection``: the Gaussian mechanism on the tables' cells, projected onto the body
  ``body="auto"`` picks (:class:`projmech.ProjectionMechanism`; the exact hull ``K_Q`` where the
  universe is small, else the local polytope; the ``body`` column names it);
* ``cells+local``: the same onto the local polytope (the body of the rows below);
* ``strategy``: the optimal residual strategy's least-squares answers, unprojected
  (:class:`projmech.FactorizationMechanism`);
* ``strategy+projection``: those answers projected onto the ``auto`` body in the workload's norm
  (``FactorizationMechanism(project=True)``), where that body is the hull;
* ``strategy+tables``: its measurements (``Release.measurements``) projected in the tables' norm
  (:func:`projmech.bodies.project_measurements`, ``metric="tables"``);
* ``strategy+precision``: the same measurements projected in their own noise metric (generalized
  least squares, ``metric="precision"``).

Per row: RMSE over the workload's answers, seconds, and the projection's iterations and status.
Tables: Adult's 10 attributes of at most 42 values (3-way and 2-way), 7 of Adult's smaller
attributes (3-way), a generated binary table of 14 attributes and 20,000 rows with correlated
columns (3-way), and the four public tables of ``benchmarks/data`` (3-way), never tuned on. Usage::

    .venv/bin/python benchmarks/weighted_projection.py                 # 3 seeds, every table
    .venv/bin/python benchmarks/weighted_projection.py --tables "adult10 3-way" --seeds 1
    .venv/bin/python benchmarks/weighted_projection.py --smoke         # does it run (seconds)

Writes ``results/weighted_projection.csv`` and prints a table of mean RMSE per table.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import _common as bench
import numpy as np
import pandas as pd
from _public_tables import PUBLIC_TABLES, public_table

import projmech as pm

ADULT10 = ("age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
           "native-country", "income>50K")
ADULT7 = ("workclass", "marital-status", "relationship", "race", "sex", "income>50K", "education-num")
TABLES = ("adult10 3-way", "adult10 2-way", "adult7 3-way", "binary14 3-way",
          *(f"{name} 3-way" for name in PUBLIC_TABLES))
ROWS = ("cells+projection", "cells+local", "strategy", "strategy+projection", "strategy+tables",
        "strategy+precision")


def binary_table(attributes: int, rows: int, seed: int = 0) -> pm.Dataset:
    """Binary columns thresholding three shared Gaussian factors plus noise: correlated, dense."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((rows, 3)) @ rng.standard_normal((3, attributes))
    records = (latent + rng.standard_normal((rows, attributes)) > 0.3).astype(np.int64)
    return pm.Dataset(records, pm.Domain([f"b{i}" for i in range(attributes)], [2] * attributes))


def setting(name: str, smoke: bool) -> tuple[pm.Dataset, int]:
    """The data and the marginals' order of a table of the benchmark."""
    way = int(name.split()[-1][0])
    if name.startswith("binary"):
        return binary_table(6 if smoke else 14, 2000 if smoke else 20_000), way
    if name.split()[0] in PUBLIC_TABLES:
        data = public_table(name.split()[0])
        if smoke:
            data = public_table(name.split()[0], data.domain.attributes[:4]).subsample(3000, np.random.default_rng(0))
        return data, way
    attributes = ADULT10 if name.startswith("adult10") else ADULT7
    data = pm.datasets.adult(attributes=list(attributes[-4:] if smoke else attributes))
    return (data.subsample(3000, np.random.default_rng(0)) if smoke else data), way


def rmse_of_tables(result: Any, data: pm.Dataset, tables: list[tuple[int, ...]]) -> float:
    """RMSE over every cell of the tables, from the counted true tables."""
    errors = [result.marginal(t).ravel() - data.table(t).ravel() / data.n for t in tables]
    return float(np.sqrt(np.mean(np.concatenate(errors) ** 2)))


def run(name: str, seed: int, epsilon: float, smoke: bool) -> list[dict[str, Any]]:
    data, way = setting(name, smoke)
    workload = pm.marginals(data.domain, way=way, implicit=True)
    privacy = pm.ApproxDP(epsilon, 1e-9)
    truth = workload.answer_data(data)
    out: list[dict[str, Any]] = []
    body = ""

    def record(row: str, answers: np.ndarray | None, seconds: float, stats: Any = None, error: float | None = None
               ) -> None:
        rmse = error if error is not None else float(np.sqrt(np.mean((answers - truth) ** 2)))
        out.append({"table": name, "body": body, "seed": seed, "epsilon": epsilon, "row": row, "rmse": rmse,
                    "seconds": seconds,
                    "iterations": getattr(stats, "iterations", None),
                    "status": getattr(getattr(stats, "status", None), "value", "") if stats else ""})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.BudgetWarning)
        mechanism = pm.ProjectionMechanism(workload, privacy, noise="continuous")
        body = mechanism.body.name
        began = time.perf_counter()
        cells = mechanism.release(data, rng=seed)
        record("cells+projection", cells.answers, time.perf_counter() - began, cells.projection.stats)
        if body != "local":
            began = time.perf_counter()
            local = pm.ProjectionMechanism(workload, privacy, body="local", noise="continuous").release(data, rng=seed)
            record("cells+local", local.answers, time.perf_counter() - began, local.projection.stats)
            began = time.perf_counter()
            projected = pm.FactorizationMechanism(workload, privacy, project=True, noise="continuous").release(
                data, rng=seed)
            record("strategy+projection", projected.answers, time.perf_counter() - began, projected.projection.stats)
        began = time.perf_counter()
        strategy = pm.FactorizationMechanism(workload, privacy, noise="continuous").release(data, rng=seed)
        record("strategy", strategy.answers, time.perf_counter() - began)
    measurements = strategy.measurements()
    tables = sorted({tuple(t) for t in pm.tables.maximal_sets(m.attributes for m in measurements)})
    for metric in ("tables", "precision"):
        began = time.perf_counter()
        try:
            result = pm.bodies.project_measurements(data.domain.sizes, measurements, metric=metric)
        except pm.bodies.LocalError as error:
            result = error.best
        record(f"strategy+{metric}", None, time.perf_counter() - began, result.stats,
               rmse_of_tables(result, data, tables))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--tables", type=bench.name_list, default=list(TABLES),
                        help=f"tables (default all: {', '.join(TABLES)})")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. seeds-1 (default 3)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon at delta 1e-9 (default 1)")
    parser.add_argument("--out", default=str(bench.RESULTS / "weighted_projection.csv"), help="CSV file written")
    bench.add_smoke_option(parser, "one seed; 4 of Adult's attributes and of the first public table on 3,000 rows, "
                                  "6 binary attributes on 2,000")
    args = parser.parse_args(argv)
    refused = bench.unknown_names("--tables", args.tables, TABLES)
    if refused is not None:
        return refused
    if args.smoke:
        args.seeds, args.tables = 1, ["adult10 3-way", "binary14 3-way", f"{PUBLIC_TABLES[0]} 3-way"]
        args.out = bench.smoke_path(args.out)
    records = []
    for name in args.tables:
        for seed in range(args.seeds):
            rows = run(name, seed, args.epsilon, args.smoke)
            records += rows
            print(f"{name}, seed {seed}: " + "; ".join(f"{r['row']} {r['rmse']:.4e} ({r['seconds']:.1f} s"
                                                       f"{', ' + r['status'] if r['status'] else ''})" for r in rows),
                  flush=True)
    frame = pd.DataFrame(records)
    means = frame.groupby(["table", "row"], sort=False)["rmse"].mean()
    lines = []
    for name in args.tables:
        body = frame[frame.table == name]["body"].iloc[0]
        lines.append([name, body, *(f"{means[(name, row)]:.4e}" if (name, row) in means else "as above"
                                    for row in ROWS)])
    print()
    print(bench.markdown(["table", "auto body", *ROWS], lines, ["---", "---", *["---:"] * len(ROWS)]))
    print(f"\n(mean RMSE over {args.seeds} seed(s); 'as above' where the auto body is the local polytope)")
    print(f"wrote {bench.write_csv(frame, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
