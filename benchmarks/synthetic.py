"""The relaxation L and synthetic records on categorical data, beside Private-PGM (issue 15).

Rows (``--jobs``, default all):

``adult``
    Full categorical Adult (14 attributes, all 2-way marginals: 148,137 cells, 48,842 records).
    Noisy answers: the true marginals plus numpy Gaussian noise at the sigma of the Gaussian
    mechanism at (1, 1e-6)-DP, replace-one (seed ``--seed``; the same draws in every process).
    Ours: ``project_to_relaxation(domain, y)`` (sdp+local, certified ADMM, default tolerance
    1e-4), then ``synthetic_data(domain, projection, n, rng)`` (48,842 rows by tree + search).
``adult-pgm``
    Private-PGM (mbi, ``pip install -e '.[benchmarks]'``) on the same noisy answers: its
    approximate estimator (``ApproxMirrorDescent``, ``--pgm-iters`` steps; the exact one would
    need the whole 6.4e17-cell universe), as in ``benchmarks/relaxation.py``. It has no sampler,
    so no records (reported).
``binary`` and ``binary-pgm``
    Binarized Adult (14 binary attributes, 364 cells), the same way; ours draws rows both by the
    search and by Gaussian rounding; Private-PGM runs its exact ``MirrorDescent`` and draws
    records with ``synthetic_data``.
``grid``
    20 attributes x 10 values (10^20 cells, 19,000 2-way cells), 50,000 rows of a latent-factor
    model binned at deciles, noise at the same guarantee: time of ``project_to_relaxation``.

Our rows run in fresh processes with ``--threads`` BLAS threads each (default 1 and 2);
Private-PGM (JAX) once, with 2. Per row: seconds, ADMM iterations and certified gap, RMSE of
the released answers against the truth, and for records the RMSE of their own 2-way marginals
against the truth and its ratio to the released answers' (the issue's bar: 1.5).

Writes ``results/synthetic.csv``. Run from the repository root:
``.venv/bin/python benchmarks/synthetic.py [--jobs adult,grid] [--threads 1,2] [--smoke]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

JOBS = ("adult", "adult-pgm", "binary", "binary-pgm", "grid")
#: A smoke run's jobs (``adult-pgm`` is ``binary-pgm``'s code on a small domain) and data: Adult's
#: attributes below, 2,000 of its rows, and a grid of 4 attributes x 3 values, 500 rows.
SMOKE_JOBS = ("adult", "binary", "binary-pgm", "grid")
SMOKE_ATTRIBUTES = ("workclass", "race", "sex", "income>50K")


def noisy(key: str, seed: int, smoke: bool = False) -> tuple[Any, np.ndarray, np.ndarray, float]:
    """The data, the true 2-way marginals, the noisy ones every method sees, and sigma."""
    import projmech as pm

    if key == "grid":
        rng = np.random.default_rng([seed, 20])
        d, size, rows = (4, 3, 500) if smoke else (20, 10, 50_000)
        latent = rng.normal(size=(rows, 3)) @ rng.normal(0, 0.8, size=(3, d)) + rng.normal(size=(rows, d))
        cuts = np.quantile(latent, np.linspace(0, 1, size + 1)[1:-1], axis=0)
        records = np.column_stack([np.searchsorted(cuts[:, j], latent[:, j]) for j in range(d)])
        data = pm.Dataset(records, pm.Domain([f"a{j}" for j in range(d)], [size] * d))
    else:
        data = pm.datasets.adult(binary=key == "binary", attributes=SMOKE_ATTRIBUTES if smoke else None)
        data = data.subsample(2000, np.random.default_rng(seed)) if smoke else data
    workload = pm.marginals(data.domain, 2, implicit=True)
    truth = workload.answer_data(data)
    sigma = pm.GaussianMechanism(workload, pm.ApproxDP(1.0, 1e-6)).noise_scale(data.n)
    y = truth + np.random.default_rng([seed, 1]).normal(0.0, sigma, truth.size)
    return data, truth, y, sigma


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


def ours(key: str, seed: int, smoke: bool = False) -> dict[str, Any]:
    import projmech as pm

    data, truth, y, _ = noisy(key, seed, smoke)
    start = time.perf_counter()
    projection = pm.project_to_relaxation(data.domain, y)
    seconds = time.perf_counter() - start
    row = {"seconds": seconds, "iterations": projection.stats.iterations, "gap": projection.stats.gap,
           "rmse": rmse(projection.answers, truth), "noisy_rmse": rmse(y, truth),
           "blas_threads_reported": projection.stats.blas_threads}
    if key == "grid":
        return row
    workload = pm.marginals(data.domain, 2, implicit=True)
    prefixes = {"search": "rows", "gaussian": "gaussian"} if key == "binary" else {"search": "rows"}
    for method, prefix in prefixes.items():
        start = time.perf_counter()
        synthetic = pm.synthetic_data(data.domain, projection, data.n, np.random.default_rng([seed, 2]), method=method)
        row[f"{prefix}_seconds"] = time.perf_counter() - start
        row[f"{prefix}_rmse"] = rmse(workload.answer_data(synthetic.data), truth)
    return row


def private_pgm(key: str, seed: int, iters: int, smoke: bool = False) -> dict[str, Any]:
    import mbi
    from relaxation import PrivatePGM, check_mbi_layout

    check_mbi_layout(mbi)
    data, truth, y, sigma = noisy(key, seed, smoke)
    pgm = PrivatePGM(mbi, data.domain, iters, exact_max=2 ** 16, oracle_iters=1)
    pgm.estimate(y, sigma, data.n)  # JAX compiles on the first call: time the second
    outcome = pgm.estimate(y, sigma, data.n)
    row = {"seconds": outcome.time_s, "iterations": iters, "rmse": rmse(outcome.answers, truth),
           "noisy_rmse": rmse(y, truth), "estimator": outcome.info}
    if pgm.exact:
        from mbi import estimation

        model = estimation.MirrorDescent().estimate(pgm.mbi_domain, pgm.measurements(y, sigma, data.n),
                                                    known_total=float(data.n), iters=iters)
        start = time.perf_counter()
        columns = model.synthetic_data(rows=data.n).to_dict()
        records = np.column_stack([np.asarray(columns[name]) for name in data.domain.attributes])
        import projmech as pm

        rows = pm.Dataset(records.astype(np.int64), data.domain)
        row["rows_seconds"] = time.perf_counter() - start
        row["rows_rmse"] = rmse(pm.marginals(data.domain, 2, implicit=True).answer_data(rows), truth)
    return row


def job(name: str, seed: int, iters: int, smoke: bool = False) -> dict[str, Any]:
    return private_pgm(name[:-4], seed, iters, smoke) if name.endswith("-pgm") else ours(name, seed, smoke)


def format_rows(frame: pd.DataFrame) -> str:
    """One line per row; records' RMSE (ours by the search, Private-PGM's sampler) and Gaussian
    rounding's, each with its ratio to the released answers' RMSE."""
    columns = ["seconds", "iterations", "gap", "noisy_rmse", "rmse", "rows_rmse", "rows_seconds", "gaussian_rmse"]
    table = frame.reindex(columns=["job", "threads", "status", *columns])
    table["rows_ratio"] = table.rows_rmse / table.rmse
    table["gaussian_ratio"] = table.gaussian_rmse / table.rmse
    header = (f"{'job':<11} {'thr':>3} {'seconds':>8} {'iters':>6} {'gap':>8} {'noisy':>9} {'released':>9} "
              f"{'rows':>9} {'ratio':>6} {'rows s':>7} {'gaussian':>9} {'ratio':>6}")
    lines = [
        f"{row.job:<11} {row.threads:>3} {bench.cell(row.seconds, '8.2f'):>8} {bench.cell(row.iterations, '6.0f'):>6} "
        f"{bench.cell(row.gap, '8.1e'):>8} {bench.cell(row.noisy_rmse, '9.6f'):>9} {bench.cell(row.rmse, '9.6f'):>9} "
        f"{bench.cell(row.rows_rmse, '9.6f'):>9} {bench.cell(row.rows_ratio, '6.2f'):>6}"
        f" {bench.cell(row.rows_seconds, '7.2f'):>7} "
        f"{bench.cell(row.gaussian_rmse, '9.6f'):>9} {bench.cell(row.gaussian_ratio, '6.2f'):>6}"
        + ("" if row.status == "ok" else f"  {row.status}")
        for row in table.itertuples()
    ]
    return bench.ruled(header, lines)


def build_parser() -> Any:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--jobs", type=bench.name_list, default=list(JOBS), help=", ".join(JOBS))
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2],
                        help="BLAS thread counts for ours (default 1,2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pgm-iters", type=int, default=1000, help="Private-PGM steps (default 1000)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a row is killed")
    parser.add_argument("--out", default="results/synthetic.csv")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    bench.add_smoke_option(parser, f"jobs {', '.join(SMOKE_JOBS)} on Adult's {', '.join(SMOKE_ATTRIBUTES)} "
                                   "and a grid of 4 x 3 values; 1 thread; 20 Private-PGM steps")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        name, seed, iters, smoke = json.loads(args.worker)
        print(json.dumps(job(name, seed, iters, smoke)))
        return 0
    if args.smoke:
        args.jobs, args.threads, args.pgm_iters, args.out = list(SMOKE_JOBS), [1], 20, bench.smoke_path(args.out)
    unknown = [name for name in args.jobs if name not in JOBS]
    if unknown:
        print(f"--jobs: unknown {unknown}; expected among {', '.join(JOBS)}", file=sys.stderr)
        return 2
    results = []
    for name in args.jobs:
        why = bench.not_installed("mbi", "jax") if name.endswith("-pgm") else None
        if why:
            print(f"  {name}: skipped: {why}", flush=True)
            results.append({"job": name, "threads": 2, "status": f"skipped: {why}"})
            continue
        for count in ([2] if name.endswith("-pgm") else args.threads):
            row = {"job": name, "threads": count,
                   **bench.run_in_process(__file__, [name, args.seed, args.pgm_iters, args.smoke], count, args.timeout)}
            results.append(row)
            print(f"  {name} threads={count}: {row.get('seconds', '')} {row['status']}", flush=True)
    frame = pd.DataFrame(results)
    print(format_rows(frame))
    print(f"wrote {bench.write_csv(frame, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
