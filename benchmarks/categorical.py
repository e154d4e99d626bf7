"""Projection onto K_Q on categorical marginals: the active-set solver beside CVXPY's solvers.

The table of issue 15: six attributes of sizes (2, 2, 4, 5, 16, 32) (m = 40,960 cells), all
2-way marginals (k = 1,196, rank 962) and all 3-way marginals (k = 9,652, rank 6,420). The
records are ``--rows`` draws (default 20,000) from a fixed chain-shaped Bayesian network (each
attribute drawn given the previous one from Dirichlet(0.5) tables, seed 0). The noisy answers
are the true marginals plus Gaussian noise at the sigma of the Gaussian mechanism at
(1, 1e-6)-DP, drawn once with numpy (seed 1) in this process and given to every solver: the
mechanism's exact discrete noise has no seed, and the solvers must see the same answers.

Each row runs ``project_to_hull(..., noise_scale=sigma)`` (the mechanism's default tolerance,
1e-4 relative to ``(k/2) sigma^2``), after a warm-up on a 24-cell table (so that the time is a
release's, not the imports'), in a fresh process with ``OPENBLAS_NUM_THREADS =
OMP_NUM_THREADS = MKL_NUM_THREADS`` set to each of ``--threads``. Per row: seconds, the
certified Frank–Wolfe gap and its tolerance, the objective, the support size, the BLAS threads
the solver reports holding itself to, peak memory, and a hash of the projected answers (the
active-set solver's are the same for 1 and 2 threads).

Writes ``results/categorical.csv``. Run from the repository root:
``.venv/bin/python benchmarks/categorical.py [--quick | --smoke]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

SIZES = (2, 2, 4, 5, 16, 32)
#: A smoke run's attribute sizes (and 500 records, 2-way, 1 thread).
SMOKE_SIZES = (2, 3, 4)
METHODS = ("fast", "SCS", "CLARABEL")
#: CVXPY's interior point needs ~m^2 memory here; it runs on the 2-way rows only.
CLARABEL_WAYS = (2,)


def noisy_answers(way: int, rows: int, sizes: Sequence[int] = SIZES) -> tuple[np.ndarray, float]:
    """The answers every solver projects, and their noise level."""
    import projmech as pm

    domain = pm.Domain([f"a{i}" for i in range(len(sizes))], sizes)
    data = pm.Dataset(bench.chain_records(sizes, rows, np.random.default_rng(0)), domain)
    workload = pm.marginals(domain, way, implicit=True)
    sigma = pm.GaussianMechanism(workload, pm.ApproxDP(1.0, 1e-6)).noise_scale(rows)
    truth = workload.answer_data(data)
    return truth + np.random.default_rng(1).normal(0.0, sigma, size=truth.size), sigma


def job(way: int, method: str, path: str, sigma: float, sizes: Sequence[int] = SIZES) -> dict[str, Any]:
    import projmech as pm

    domain = pm.Domain([f"a{i}" for i in range(len(sizes))], sizes)
    workload = pm.marginals(domain, way, implicit=method == "fast")
    y = np.load(path)
    # A warm-up on a small table first, so that the row times a release, not the imports.
    small = pm.marginals(pm.Domain(["a", "b", "c"], (2, 3, 4)), way, implicit=method == "fast")
    pm.project_to_hull(small, small.answer(np.full(24, 1 / 24)) + 0.01, solver=method, noise_scale=0.01)
    with bench.Timer() as timer:
        result = pm.project_to_hull(workload, y, solver=method, noise_scale=sigma)
    return {"seconds": timer.seconds, "gap": result.stats.gap, "tolerance": result.stats.tolerance,
            "certified": result.stats.tolerance_met, "objective": result.objective,
            "support": int(result.support.size), "blas_threads": getattr(result.stats, "blas_threads", None),
            "peak_mb": bench.peak_memory_mb(), "answers_hash": bench.answers_digest(result.answers)}


def format_rows(results: pd.DataFrame) -> str:
    lines = [f"{row.way:>3} {row.method:<9} {row.threads:>2} {bench.cell(getattr(row, 'seconds', None), '8.2f'):>8} "
             f"{bench.cell(getattr(row, 'gap', None), '9.2e'):>9}"
             f" {bench.cell(getattr(row, 'tolerance', None), '9.2e'):>9} "
             f"{bench.cell(getattr(row, 'objective', None), '12.6e'):>12}"
             f" {bench.cell(getattr(row, 'support', None), '6.0f'):>6} "
             f"{bench.cell(getattr(row, 'peak_mb', None), '7.0f'):>7}  {row.status}" for row in results.itertuples()]
    header = (f"{'way':>3} {'method':<9} {'th':>2} {'seconds':>8} {'gap':>9} {'tol':>9} {'objective':>12} "
              f"{'supp':>6} {'peak MB':>7}  status")
    return bench.ruled(header, lines)


def build_parser() -> Any:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--ways", type=bench.int_list, default=[2, 3], help="marginal sizes (default 2,3)")
    parser.add_argument("--methods", type=bench.name_list, default=list(METHODS), help=", ".join(METHODS))
    parser.add_argument("--rows", type=int, default=20_000, help="records drawn (default 20,000)")
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2], help="BLAS thread counts (default 1,2)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a row is killed")
    parser.add_argument("--quick", action="store_true", help="2-way, the active-set solver, 1 thread")
    parser.add_argument("--out", default="results/categorical.csv")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    bench.add_smoke_option(parser, f"attributes of sizes {SMOKE_SIZES}, 500 records, 2-way, every method, 1 thread")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        way, method, path, sigma, sizes = json.loads(args.worker)
        print(json.dumps(job(way, method, path, sigma, sizes)))
        return 0
    ways, methods, threads = ([2], ["fast"], [1]) if args.quick else (args.ways, args.methods, args.threads)
    sizes = SIZES
    if args.smoke:
        ways, methods, threads, sizes = [2], list(METHODS), [1], SMOKE_SIZES
        args.rows, args.out = 500, bench.smoke_path(args.out)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for way in ways:
            y, sigma = noisy_answers(way, args.rows, sizes)
            path = os.path.join(folder, f"answers{way}.npy")
            np.save(path, y)
            for method in methods:
                if method == "CLARABEL" and way not in CLARABEL_WAYS:
                    continue
                for count in threads:
                    row = {"way": way, "method": method, "threads": count,
                           **bench.run_in_process(__file__, [way, method, path, sigma, sizes], count, args.timeout)}
                    results.append({"rows": args.rows, "sigma": sigma, **row})
                    print(f"  way={way} {method} threads={count}: {row.get('seconds', '')} {row['status']}", flush=True)
    frame = pd.DataFrame(results)
    print(format_rows(frame))
    for way in ways:
        fast = frame[(frame.way == way) & (frame.method == "fast") & (frame.status == "ok")]
        if len(fast) > 1:
            same = fast.answers_hash.nunique() == 1
            print(f"{way}-way, fast: {'the same' if same else 'DIFFERENT'} answers with "
                  f"{', '.join(map(str, fast.threads))} BLAS threads")
        scs = frame[(frame.way == way) & (frame.method == "SCS") & (frame.status == "ok")]
        if len(fast) and len(scs):
            print(f"{way}-way: SCS / fast time ratio {scs.seconds.min() / fast.seconds.max():.1f}x "
                  "(fastest SCS row over slowest fast row)")
    path = bench.write_csv(frame, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
