"""The adaptive mechanism's rounds, each estimate started cold or from the round before.

Runs :class:`projmech.AdaptiveProjectionMechanism` on the embedded Adult data (all 3-way marginals,
``(epsilon, 1e-9)``-DP, continuous noise so that a seed fixes the run), then replays its rounds'
estimates on the run's own measurements: for every prefix the rounds estimated from, the local
projection (:func:`projmech.mechanisms.adaptive.estimate_tables`) cold and started from the previous
prefix's estimate, as the rounds do. Per (epsilon, seed): the rounds, the mean seconds and L-BFGS
iterations of an estimate cold and warm, the largest difference between the two estimates' tables,
and the run's own seconds per round (its estimates warm). Usage::

    .venv/bin/python benchmarks/adaptive_warm_start.py --epsilons 1,10 --seeds 3
    .venv/bin/python benchmarks/adaptive_warm_start.py --smoke   # does it run (seconds)

Writes ``results/adaptive_warm_start.csv`` and prints a table.
"""

from __future__ import annotations

import sys
import time
import warnings

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm
from projmech.mechanisms.adaptive import estimate_tables

ATTRIBUTES = ["workclass", "education-num", "marital-status", "relationship", "race", "sex", "income>50K"]


def replay(epsilon: float, seed: int, attributes: list[str]) -> dict[str, float]:
    """One run and its rounds' estimates replayed cold and warm."""
    data = pm.datasets.adult(attributes=attributes)
    mechanism = pm.AdaptiveProjectionMechanism(pm.marginals(data.domain, 3, implicit=True), pm.ApproxDP(epsilon, 1e-9),
                                               noise="continuous")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.BudgetWarning)
        start = time.perf_counter()
        run = mechanism.run(data, rng=seed)
        seconds = time.perf_counter() - start
    sizes, measurements = data.domain.sizes, run.measurements
    first = sum(1 for spent in run.rounds if spent.selection_rho == 0)  # the one-way tables, unselected
    cold_s, warm_s, cold_it, warm_it, gap = [], [], [], [], 0.0
    previous = None
    for k in range(first, len(measurements) + 1):
        began = time.perf_counter()
        cold = estimate_tables(sizes, measurements[:k])
        cold_s.append(time.perf_counter() - began)
        began = time.perf_counter()
        warm = estimate_tables(sizes, measurements[:k], start=previous)
        warm_s.append(time.perf_counter() - began)
        cold_it.append(cold.stats.iterations)
        warm_it.append(warm.stats.iterations)
        gap = max(gap, float(np.max(np.abs(cold.values - warm.values))))
        previous = warm
    return {"epsilon": epsilon, "seed": seed, "rounds": len(run.rounds), "estimates": len(cold_s),
            "cold_seconds": float(np.mean(cold_s)), "warm_seconds": float(np.mean(warm_s)),
            "cold_iterations": float(np.mean(cold_it)), "warm_iterations": float(np.mean(warm_it)),
            "max_table_difference": gap, "run_seconds_per_round": seconds / len(run.rounds)}


def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--epsilons", type=bench.float_list, default=[1.0, 10.0], help="epsilons (default 1,10)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. seeds-1 (default 3)")
    parser.add_argument("--attributes", type=bench.name_list, default=ATTRIBUTES, help="Adult's attributes (default 7)")
    parser.add_argument("--out", default=str(bench.RESULTS / "adaptive_warm_start.csv"), help="CSV file written")
    bench.add_smoke_option(parser, "epsilon 1, one seed, 4 attributes")
    args = parser.parse_args(argv)
    if args.smoke:
        args.epsilons, args.seeds, args.attributes = [1.0], 1, ATTRIBUTES[:4]
        args.out = bench.smoke_path(args.out)
    rows = []
    for epsilon in args.epsilons:
        for seed in range(args.seeds):
            rows.append(replay(epsilon, seed, args.attributes))
            row = rows[-1]
            print(f"epsilon {epsilon:g} seed {seed}: {row['rounds']} rounds; an estimate cold "
                  f"{row['cold_seconds']:.3f} s ({row['cold_iterations']:.1f} iterations), warm "
                  f"{row['warm_seconds']:.3f} s ({row['warm_iterations']:.1f}); tables differ by at most "
                  f"{row['max_table_difference']:.1e}", flush=True)
    frame = pd.DataFrame(rows)
    means = frame.groupby("epsilon", sort=False).mean(numeric_only=True)
    print()
    print(bench.markdown(["epsilon", "rounds", "estimate s, cold", "estimate s, warm", "iterations, cold",
                          "iterations, warm", "largest table difference", "run s per round"],
                         [[f"{epsilon:g}", f"{row.rounds:.1f}", f"{row.cold_seconds:.3f}", f"{row.warm_seconds:.3f}",
                           f"{row.cold_iterations:.1f}", f"{row.warm_iterations:.1f}",
                           f"{row.max_table_difference:.1e}", f"{row.run_seconds_per_round:.3f}"]
                          for epsilon, row in means.iterrows()]))
    print(f"\nwrote {bench.write_csv(frame, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
